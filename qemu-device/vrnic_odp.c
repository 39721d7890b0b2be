/*
 * vrnic on-demand paging (ODP): MRs registered with VRNIC_MR_FLAG_ON_DEMAND,
 * whose leaf table entries the driver fills and clears while the MR lives
 * (vrnic_hw_defs.h, "On-demand paging").
 *
 * Every access to an on-demand MR is checked first (vrnic_odp_access):
 * all the pages it needs must be present, and writable for a write. If
 * not, the access waits and the QP raises a page fault: one per QP and
 * side (requester: its send queue; responder: incoming requests), posted
 * on the AEQ as a vrnic_aeqe_page_fault and outstanding until the
 * driver's PAGE_FAULT_DONE. What waiting means is the caller's: the
 * requester stops its send queue before the packet (vrnic_req.c), the
 * responder answers RNR NAK or stops a READ response stream
 * (vrnic_resp.c, vrnic_resp_queue.c), UC and UD drop. PAGE_FAULT_DONE
 * kicks the QP, which checks again; a FAILED answer makes the next check
 * of that side fail the access instead of faulting again.
 *
 * A fault that finds the AEQ full is not lost: it stays queued and goes
 * out when the driver makes room (vrnic_odp_aeq_room, from the AEQ's
 * consumer index write), since the QP would otherwise wait for ever.
 *
 * ODP_INVALIDATE drops the MR's cached translations (a new translation id,
 * vrnic_tlb.c). Commands run under the device's lock like all of its DMA,
 * so once it completes no access can still use an old entry.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

/*
 * Whether [addr, addr + len) of on-demand memory m is mapped for the
 * access; if not, *page is the first page that is not and *npages how
 * many pages from it to the end of [addr, addr + span) (the rest of the
 * message: one fault for all of it, as far as m goes), at most
 * VRNIC_ODP_FAULT_MAX_PAGES. [addr, addr + len) is inside m (the key check
 * came first).
 */
static bool vrnic_odp_mapped(VrnicCore *core, const VrnicMem *m,
                             uint64_t addr, uint64_t len, uint64_t span,
                             bool write, uint64_t *page, uint32_t *npages)
{
    uint64_t need = VRNIC_ODP_PRESENT | (write ? VRNIC_ODP_WRITABLE : 0);
    uint64_t base = m->iova & ~((1ull << m->page_shift) - 1);
    uint64_t off = addr - base;
    uint64_t first = off >> m->page_shift;
    uint64_t last = (off + len - 1) >> m->page_shift;
    uint64_t end = MAX(len, span) - 1 > UINT64_MAX - off ? UINT64_MAX :
                   off + MAX(len, span) - 1;

    end = MIN(end >> m->page_shift, m->npages - 1);
    for (uint64_t idx = first; idx <= last; idx++) {
        uint64_t e;

        if (vrnic_mem_page(core, m, idx, &e) && (e & need) == need) {
            continue;
        }
        /*
         * The cache may hold the entry as it was (read-only, where the
         * driver has made it writable since): only the table can say.
         */
        if (vrnic_mem_walk(core, m, idx, &e) && (e & need) == need) {
            vrnic_tlb_fill(core, m->tlb_id, idx, e);
            continue;
        }
        *page = idx;
        *npages = MIN(end - idx + 1, VRNIC_ODP_FAULT_MAX_PAGES);
        return false;
    }
    return true;
}

/* Post side's fault on the AEQ, or leave it queued when the AEQ is full. */
static void vrnic_odp_post(VrnicCore *core, uint32_t qpn, VrnicOdpFault *f,
                           bool responder)
{
    struct vrnic_aeqe_page_fault e = {
        .event = cpu_to_le32(VRNIC_FIELD_PREP(VRNIC_AEQE_EVENT_MASK,
                                              VRNIC_AEQ_EV_PAGE_FAULT) |
                             VRNIC_FIELD_PREP(VRNIC_PF_QPN_MASK, qpn) |
                             (f->write ? VRNIC_PF_WRITE : 0) |
                             (responder ? VRNIC_PF_RESPONDER : 0)),
        .key = cpu_to_le32(f->key),
        .page_lo = cpu_to_le32((uint32_t)f->page),
    };
    uint32_t owner = VRNIC_FIELD_PREP(VRNIC_PF_PAGE_HI_MASK, f->page >> 32) |
                     VRNIC_FIELD_PREP(VRNIC_PF_NPAGES_MASK, f->npages);

    if (!vrnic_aeq_post_entry(core, &e, owner)) {
        f->state = VRNIC_ODP_QUEUED;
        core->odp_queued = true;
        return;
    }
    f->state = VRNIC_ODP_POSTED;
    trace_vrnic_odp_fault(qpn, responder, f->write, f->key, f->page,
                          f->npages);
}

VrnicOdpRes vrnic_odp_access(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                             const VrnicMr *mr, uint64_t addr, uint64_t len,
                             uint64_t span, bool write, bool responder)
{
    VrnicOdpFault *f = responder ? &qp->x->odp_resp : &qp->x->odp_req;
    uint32_t npages;
    uint64_t page;

    if (!mr->mem.odp || !len ||
        vrnic_odp_mapped(core, &mr->mem, addr, len, span, write, &page,
                         &npages)) {
        f->failed = false;
        return VRNIC_ODP_GO;
    }
    if (f->failed) {
        /* The driver said this cannot be mapped: the access fails. */
        f->failed = false;
        return VRNIC_ODP_FAIL;
    }
    core->stats.port[VRNIC_PORT_STAT_PAGE_FAULT_WAITS]++;
    if (f->state == VRNIC_ODP_IDLE) {
        f->key = vrnic_mr_key(core, mr);
        f->page = page;
        f->npages = npages;
        f->write = write;
        core->stats.port[VRNIC_PORT_STAT_PAGE_FAULTS]++;
        vrnic_odp_post(core, qpn, f, responder);
    }
    return VRNIC_ODP_WAIT;
}

void vrnic_odp_aeq_room(VrnicCore *core)
{
    core->odp_queued = false;
    for (uint32_t qpn = 1; qpn <= core->cfg.max_qp + 1; qpn++) {
        VrnicQp *qp = vrnic_qp_get(core, qpn);

        for (int side = 0; qp && side < 2; side++) {
            VrnicOdpFault *f = side ? &qp->x->odp_resp : &qp->x->odp_req;

            if (f->state != VRNIC_ODP_QUEUED) {
                continue;
            }
            vrnic_odp_post(core, qpn, f, side);
            if (f->state == VRNIC_ODP_QUEUED) {
                return;     /* full again: the next CI write goes on */
            }
        }
    }
}

uint8_t vrnic_odp_fault_done(VrnicCore *core,
                             const struct vrnic_aq_page_fault_done *c)
{
    uint32_t qpn = le32_to_cpu(c->qpn);
    uint32_t flags = le32_to_cpu(c->flags);
    uint32_t status = le32_to_cpu(c->status);
    bool responder = flags & VRNIC_PF_RESPONDER;
    VrnicQp *qp;
    VrnicOdpFault *f;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || (flags & ~VRNIC_PF_RESPONDER) ||
        status > VRNIC_PF_DONE_FAILED) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "page fault answer",
                            flags);
    }
    qp = vrnic_qp_get(core, qpn);
    if (!qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", qpn);
    }
    f = responder ? &qp->x->odp_resp : &qp->x->odp_req;
    /* Only a posted fault can be answered: the driver saw it. */
    if (f->state != VRNIC_ODP_POSTED) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "no page fault posted",
                            qpn);
    }
    f->state = VRNIC_ODP_IDLE;
    f->failed = status == VRNIC_PF_DONE_FAILED;
    trace_vrnic_odp_fault_done(qpn, responder, status);
    vrnic_qp_set_pending(core, qp, true);   /* check again */
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_odp_invalidate(VrnicCore *core,
                             const struct vrnic_aq_odp_invalidate *c)
{
    uint32_t key = le32_to_cpu(c->handle);
    uint64_t page = le64_to_cpu(c->page);
    uint32_t npages = le32_to_cpu(c->npages);
    VrnicMr *mr;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    mr = vrnic_mr_lookup(core, key);
    if (!mr) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "key", key);
    }
    if (!mr->mem.odp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "not on-demand", key);
    }
    if (!npages || page >= mr->mem.npages ||
        npages > mr->mem.npages - page) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "page range", page);
    }
    /* Every page of the MR misses from now on, the cleared ones included. */
    mr->mem.tlb_id = vrnic_tlb_new_id(&core->tlb);
    core->stats.port[VRNIC_PORT_STAT_ODP_INVALIDATIONS]++;
    trace_vrnic_odp_invalidate(key, page, npages);
    return VRNIC_AQ_STS_OK;
}
