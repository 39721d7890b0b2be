/*
 * vrnic fast-registration MRs: ALLOC_MR, the REG_MR send
 * WQE, and invalidation - LOCAL_INV and SEND with Invalidate - of
 * fast-registration MRs and type 2 windows alike (vrnic_hw_defs.h,
 * "Fast-registration MRs").
 *
 * A fast-registration MR is an entry of the MR key table (frmr set) with
 * its own copy of a page list: REG_MR copies the list in once, so the
 * mapping cannot change under the device afterwards whatever the driver
 * does with its buffer, and the copy is bounded by max_pages chosen at
 * ALLOC_MR (at most VRNIC_FRMR_MAX_PAGES). While invalid ("free") the MR
 * has no mapping and vrnic_mr_lookup() does not see it, so its key fails
 * every access, local or remote; only REG_MR, LOCAL_INV and DEREG_MR reach
 * it then.
 *
 * Only the kernel's PDs (uctx 0) hold such MRs: the page list holds bus
 * addresses, as a DMA MR covers all of them, and no process may pick those.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/*
 * The live entry at key's index that is a fast-registration MR, any state
 * and any key byte.
 */
static VrnicMr *vrnic_frmr_by_index(VrnicCore *core, uint32_t key)
{
    VrnicMr *mr = vrnic_key_entry(core, key);

    return mr && mr->frmr ? mr : NULL;
}

uint8_t vrnic_frmr_alloc(VrnicCore *core, const struct vrnic_aq_alloc_mr *c,
                         uint64_t *result)
{
    uint32_t pdn = le32_to_cpu(c->pdn);
    uint32_t max_pages = le32_to_cpu(c->max_pages);
    VrnicPd *pd = vrnic_pd_get(core, pdn);
    VrnicMr *mr;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    if (pd->uctx) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "fast-registration MR on a user PD", pd->uctx);
    }
    if (max_pages == 0 || max_pages > VRNIC_FRMR_MAX_PAGES) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_pages", max_pages);
    }
    sts = vrnic_key_new(core, pdn, c->key_byte, &mr);
    if (sts) {
        return sts;
    }
    mr->frmr = true;
    mr->frmr_max = max_pages;
    mr->frmr_pages = g_new0(uint64_t, max_pages);
    *result = vrnic_mr_key(core, mr);
    trace_vrnic_frmr_alloc(*result, pdn, max_pages);
    return VRNIC_AQ_STS_OK;
}

void vrnic_frmr_free(VrnicMr *mr)
{
    g_free(mr->frmr_pages);
    mr->frmr_pages = NULL;
}

/* Every check of a REG_MR WQE but the page list; NULL if it passes. */
static const char *vrnic_frmr_check(const VrnicCore *core, const VrnicQp *qp,
                                    const VrnicMr *mr,
                                    const struct vrnic_reg_mr_wqe *w,
                                    uint8_t *status)
{
    uint32_t shift = w->page_shift;
    uint32_t npages = le32_to_cpu(w->npages);
    uint64_t iova = le64_to_cpu(w->iova);
    uint64_t length = le64_to_cpu(w->length);
    uint64_t pbl = le64_to_cpu(w->pbl_addr);

    *status = VRNIC_WC_LOC_QP_OP_ERR;
    if (w->rsvd0 || !VRNIC_RSVD_ZERO(w->rsvd1)) {
        return "REG_MR reserved bytes";
    }
    if (core->obj.pds[qp->pdn].uctx) {
        return "REG_MR on a QP of a user PD";
    }
    if (!mr) {
        return "REG_MR: not a fast-registration MR";
    }
    if (mr->pdn != qp->pdn) {
        *status = VRNIC_WC_LOC_PROT_ERR;
        return "REG_MR: MR of another PD";
    }
    if (mr->valid) {
        return "REG_MR: MR already valid";
    }
    if (!vrnic_access_valid(le32_to_cpu(w->access))) {
        return "REG_MR: access rights";
    }
    if (!vrnic_mem_shift_ok(shift)) {
        return "REG_MR: page size";
    }
    if (!vrnic_mem_length_ok(iova, length)) {
        return "REG_MR: length";
    }
    if (npages != vrnic_mem_span(iova, length, shift)) {
        return "REG_MR: npages is not the pages the range touches";
    }
    if (npages > mr->frmr_max) {
        return "REG_MR: page list longer than allocated";
    }
    if (pbl & 7) {
        return "REG_MR: page list unaligned";
    }
    return NULL;
}

/*
 * REG_MR from qpn's SQ. False (with the completion status and why) if
 * refused; the MR then stays invalid. The page list is read into the MR's
 * own copy, which nothing uses while the MR is invalid.
 */
bool vrnic_frmr_register(VrnicCore *core, uint32_t qpn, const VrnicQp *qp,
                         const struct vrnic_reg_mr_wqe *w, uint8_t *status,
                         const char **why)
{
    uint32_t key = le32_to_cpu(w->key);
    VrnicMr *mr = vrnic_frmr_by_index(core, key);
    uint32_t npages = le32_to_cpu(w->npages);
    uint64_t pbl = le64_to_cpu(w->pbl_addr);
    uint64_t align;

    *why = vrnic_frmr_check(core, qp, mr, w, status);
    if (*why) {
        return false;
    }
    align = (1ull << w->page_shift) - 1;    /* 12..30: checked */
    if (!vrnic_dma_read(core, pbl, mr->frmr_pages, npages * 8ull)) {
        *why = "REG_MR: page list unreadable";
        return false;
    }
    for (uint32_t i = 0; i < npages; i++) {
        mr->frmr_pages[i] = le64_to_cpu(mr->frmr_pages[i]);
        if (mr->frmr_pages[i] & align) {
            *why = "REG_MR: page address unaligned";
            return false;
        }
    }
    mr->mem = (VrnicMem) {
        .iova = le64_to_cpu(w->iova),
        .length = le64_to_cpu(w->length),
        .page_shift = w->page_shift,
        .npages = npages,
        .list = mr->frmr_pages,
    };
    mr->access = le32_to_cpu(w->access);
    mr->key_byte = key & VRNIC_KEY_BYTE_MASK;
    mr->valid = true;
    trace_vrnic_frmr_register(qpn, key, mr->access, mr->mem.iova,
                              mr->mem.length, w->page_shift, npages);
    return true;
}

/*
 * Invalidate key for qpn of pdn: a LOCAL_INV (remote false) or a SEND with
 * Invalidate received on qpn (remote true). Windows go to
 * vrnic_mw_invalidate(); a fast-registration MR needs its current key byte,
 * the PD and no bound window, and remotely also to be valid with a remote
 * right. False (nothing changed) for anything else.
 */
bool vrnic_key_invalidate(VrnicCore *core, uint32_t qpn, uint32_t pdn,
                          uint32_t key, bool remote)
{
    VrnicMr *mr = vrnic_frmr_by_index(core, key);
    bool ok;

    if (!mr) {
        return vrnic_mw_invalidate(core, qpn, pdn, key, remote);
    }
    ok = mr->key_byte == (key & VRNIC_KEY_BYTE_MASK) && mr->pdn == pdn &&
         !mr->mw_refs &&
         (!remote || (mr->valid && (mr->access & VRNIC_ACCESS_REMOTE)));
    if (ok) {
        mr->valid = false;
        mr->access = 0;
        mr->mem = (VrnicMem) { 0 };
    }
    trace_vrnic_frmr_invalidate(qpn, key, remote, ok);
    return ok;
}
