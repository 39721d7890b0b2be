/*
 * vrnic memory windows: ALLOC_MW, DEALLOC_MW, the BIND_MW and LOCAL_INV
 * send WQEs, invalidation by a SEND with Invalidate, and the R_Key check
 * that lets a remote access go through a window.
 *
 * A window is an entry of the MR key table (vrnic_mr.c) with mw set, so
 * MR and window keys never collide and max_mr bounds both. It is only
 * ever an R_Key: vrnic_mr_lookup() and vrnic_mr_check() (L_Keys, MR
 * commands) do not see windows; vrnic_rkey_check() does. A bound window
 * names a range of its parent MR; the parent cannot be deregistered or
 * re-registered while windows are bound to it (mw_refs), so the parent a
 * window names is always live.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/*
 * The rights a window may carry (LOCAL_WRITE is meaningless on it but
 * verbs consumers pass it; it grants nothing remote).
 */
#define VRNIC_MW_ACCESS \
    (VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ | \
     VRNIC_ACCESS_REMOTE_WRITE | VRNIC_ACCESS_REMOTE_ATOMIC)

static VrnicMr *vrnic_mw_by_index(VrnicCore *core, uint32_t key)
{
    VrnicMr *mw = vrnic_key_entry(core, key);

    return mw && mw->mw ? mw : NULL;
}

/* The window this key names now (index and current key byte). */
static VrnicMr *vrnic_mw_lookup(VrnicCore *core, uint32_t key)
{
    VrnicMr *mw = vrnic_mw_by_index(core, key);

    return mw && mw->key_byte == (key & VRNIC_KEY_BYTE_MASK) ? mw : NULL;
}

static void vrnic_mw_unbind(VrnicCore *core, VrnicMr *mw)
{
    if (mw->bound) {
        core->obj.mrs[mw->parent].mw_refs--;
    }
    mw->bound = false;
    mw->mem = (VrnicMem) { 0 };
}

uint8_t vrnic_mw_alloc(VrnicCore *core, const struct vrnic_aq_alloc_mw *c,
                       uint64_t *result)
{
    uint32_t pdn = le32_to_cpu(c->pdn);
    VrnicPd *pd = vrnic_pd_get(core, pdn);
    VrnicMr *mw;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (c->type != VRNIC_MW_TYPE_1 && c->type != VRNIC_MW_TYPE_2) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mw type", c->type);
    }
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    sts = vrnic_key_new(core, pdn, c->key_byte, &mw);
    if (sts) {
        return sts;
    }
    mw->mw = true;
    mw->mw_type = c->type;
    *result = vrnic_mr_key(core, mw);
    trace_vrnic_mw_alloc(*result, pdn, c->type);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_mw_dealloc(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t key = le32_to_cpu(c->handle);
    VrnicMr *mw = vrnic_mw_by_index(core, key);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!mw) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "mw key", key);
    }
    vrnic_mw_unbind(core, mw);
    core->obj.pds[mw->pdn].refs--;
    memset(mw, 0, sizeof(*mw));
    core->obj.n_mrs--;
    trace_vrnic_mw_dealloc(key);
    return VRNIC_AQ_STS_OK;
}

/* BIND_MW from qpn's SQ; false (and why) if refused: MW_BIND_ERR. */
bool vrnic_mw_bind(VrnicCore *core, uint32_t qpn, const VrnicQp *qp,
                   const struct vrnic_bind_mw_wqe *w, const char **why)
{
    uint32_t mw_key = le32_to_cpu(w->mw_key);
    uint32_t access = le32_to_cpu(w->access);
    uint64_t addr = le64_to_cpu(w->addr);
    uint64_t len = le64_to_cpu(w->length);
    VrnicMr *mw = vrnic_mw_by_index(core, mw_key);
    VrnicMr *mr = vrnic_mr_lookup(core, le32_to_cpu(w->mr_key));

    *why = NULL;
    if (!VRNIC_RSVD_ZERO(w->rsvd0) || !VRNIC_RSVD_ZERO(w->rsvd1)) {
        *why = "BIND_MW reserved bytes";
    } else if (!mw) {
        *why = "BIND_MW: no such window";
    } else if (mw->pdn != qp->pdn) {
        *why = "BIND_MW: window of another PD";
    } else if (mw->mw_type == VRNIC_MW_TYPE_2 && mw->bound) {
        *why = "BIND_MW: type 2 window already bound";
    } else if (access & ~VRNIC_MW_ACCESS) {
        *why = "BIND_MW: window rights";
    } else if (mw->mw_type == VRNIC_MW_TYPE_1 && !len) {
        /* Binding a type 1 window with length 0 unbinds it. */
    } else if (!mr || mr->pdn != qp->pdn) {
        *why = "BIND_MW: MR key or PD";
    } else if (mr->mem.dma || mr->mem.devmem ||
               !(mr->access & VRNIC_ACCESS_MW_BIND)) {
        *why = "BIND_MW: MR does not allow binding";
    } else if ((access & (VRNIC_ACCESS_REMOTE_WRITE |
                          VRNIC_ACCESS_REMOTE_ATOMIC)) &&
               !(mr->access & VRNIC_ACCESS_LOCAL_WRITE)) {
        *why = "BIND_MW: remote write through an MR without local write";
    } else if (!vrnic_mem_contains(&mr->mem, addr, len)) {
        *why = "BIND_MW: range outside the MR";
    }
    if (*why) {
        return false;
    }
    vrnic_mw_unbind(core, mw);
    mw->key_byte = mw_key & VRNIC_KEY_BYTE_MASK;
    if (mw->mw_type == VRNIC_MW_TYPE_1 && !len) {
        trace_vrnic_mw_bind(qpn, mw_key, 0, 0, 0, 0);
        return true;
    }
    mw->bound = true;
    mw->parent = mr - core->obj.mrs;
    mw->bound_qpn = qpn;
    mw->access = access;
    mw->mem.iova = addr;
    mw->mem.length = len;
    mr->mw_refs++;
    trace_vrnic_mw_bind(qpn, mw_key, le32_to_cpu(w->mr_key), access, addr,
                        len);
    return true;
}

/*
 * Invalidate the type 2 window key names, for qpn of pdn: LOCAL_INV
 * (remote false) or a SEND with Invalidate received on qpn (remote true:
 * the window must have been bound through qpn). False if key names no such
 * bound window.
 */
bool vrnic_mw_invalidate(VrnicCore *core, uint32_t qpn, uint32_t pdn,
                         uint32_t key, bool remote)
{
    VrnicMr *mw = vrnic_mw_lookup(core, key);

    if (!mw || mw->mw_type != VRNIC_MW_TYPE_2 || !mw->bound ||
        mw->pdn != pdn || (remote && mw->bound_qpn != qpn)) {
        trace_vrnic_mw_invalidate(qpn, key, remote, false);
        return false;
    }
    vrnic_mw_unbind(core, mw);
    trace_vrnic_mw_invalidate(qpn, key, remote, true);
    return true;
}

/*
 * qpn is being destroyed: no type 2 window may stay reachable through a
 * QP number that a new QP could get.
 */
void vrnic_mw_qp_destroyed(VrnicCore *core, uint32_t qpn)
{
    for (uint32_t i = 1; i <= core->cfg.max_mr; i++) {
        VrnicMr *mw = &core->obj.mrs[i];

        if (mw->live && mw->mw && mw->bound &&
            mw->mw_type == VRNIC_MW_TYPE_2 && mw->bound_qpn == qpn) {
            vrnic_mw_unbind(core, mw);
        }
    }
}

/*
 * A remote access's R_Key: an MR's (vrnic_mr_check), or a bound window's:
 * live and current key byte, the QP's PD, type 2 bound through this QP,
 * the rights and the range of the window. *out is then the MR to access
 * through (the window's parent) at the same addresses.
 */
bool vrnic_rkey_start(VrnicCore *core, uint32_t rkey, uint64_t *iova)
{
    VrnicMr *mw = vrnic_mw_by_index(core, rkey);
    VrnicMr *mr = mw ? mw : vrnic_mr_lookup(core, rkey);

    if (!mr) {
        return false;
    }
    *iova = mr->mem.iova;
    return true;
}

VrnicMrCheck vrnic_rkey_check(VrnicCore *core, uint32_t rkey, uint32_t qpn,
                              uint32_t pdn, uint32_t access, uint64_t addr,
                              uint64_t len, VrnicMr **out)
{
    VrnicMr *mw = vrnic_mw_by_index(core, rkey);
    VrnicMrCheck r = VRNIC_MR_OK;

    if (!mw) {
        return vrnic_mr_check(core, rkey, pdn, access, addr, len, out);
    }
    if (mw->key_byte != (rkey & VRNIC_KEY_BYTE_MASK) || !mw->bound ||
        (mw->mw_type == VRNIC_MW_TYPE_2 && mw->bound_qpn != qpn)) {
        r = VRNIC_MR_BAD_KEY;
    } else if (mw->pdn != pdn) {
        r = VRNIC_MR_BAD_PD;
    } else if (access & ~mw->access) {
        r = VRNIC_MR_BAD_ACCESS;
    } else if (!vrnic_mem_contains(&mw->mem, addr, len)) {
        r = VRNIC_MR_BAD_BOUNDS;
    }
    trace_vrnic_mr_check(rkey, pdn, access, addr, len, r);
    if (out) {
        *out = r == VRNIC_MR_OK ? &core->obj.mrs[mw->parent] : NULL;
    }
    return r;
}
