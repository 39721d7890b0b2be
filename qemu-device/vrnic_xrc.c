/*
 * vrnic XRC (VRNIC_DEVICE_CAP_XRC; the rules are in the uapi header,
 * "XRC"): the XRC domains, their ALLOC_XRCD and DEALLOC_XRCD commands,
 * and the SRQ an XRC target's request packet names.
 *
 * The domains are a fixed array in the core (VRNIC_XRCD_MAX): the guest
 * cannot make it grow. A domain belongs to no context, as processes share
 * one; what it guards is that a target QP only reaches the SRQs of its
 * own domain, whoever created them. The target holds no reference on the
 * SRQ of the message in progress: the SRQ may go while a message is half
 * received, so DESTROY_SRQ of an XRC SRQ takes it from every target that
 * uses it (vrnic_xrc_srq_destroyed) before its number can name another.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

void vrnic_xrcd_reset(VrnicCore *core)
{
    memset(core->obj.xrcds, 0, sizeof(core->obj.xrcds));
}

VrnicXrcd *vrnic_xrcd_get(VrnicCore *core, uint32_t xrcdn)
{
    if (xrcdn == 0 || xrcdn > VRNIC_XRCD_MAX ||
        !core->obj.xrcds[xrcdn].live) {
        return NULL;
    }
    return &core->obj.xrcds[xrcdn];
}

uint8_t vrnic_xrcd_alloc(VrnicCore *core,
                         const struct vrnic_aq_alloc_xrcd *c,
                         uint64_t *result)
{
    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    for (uint32_t n = 1; n <= VRNIC_XRCD_MAX; n++) {
        if (!core->obj.xrcds[n].live) {
            core->obj.xrcds[n] = (VrnicXrcd) { .live = true };
            *result = n;
            trace_vrnic_xrcd_alloc(n);
            return VRNIC_AQ_STS_OK;
        }
    }
    return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "XRC domains",
                        VRNIC_XRCD_MAX);
}

uint8_t vrnic_xrcd_dealloc(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t xrcdn = le32_to_cpu(c->handle);
    VrnicXrcd *d = vrnic_xrcd_get(core, xrcdn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!d) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "xrcdn", xrcdn);
    }
    if (d->refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "xrcd in use", d->refs);
    }
    d->live = false;
    trace_vrnic_xrcd_dealloc(xrcdn);
    return VRNIC_AQ_STS_OK;
}

VrnicSrq *vrnic_xrc_srq_of(VrnicCore *core, const VrnicQp *qp,
                           uint32_t srqn)
{
    VrnicSrq *srq = vrnic_srq_get(core, srqn);

    return srq && srq->xrcdn == qp->xrcdn ? srq : NULL;
}

VrnicSrq *vrnic_xrc_srq(VrnicCore *core, VrnicQp *qp, uint32_t srqn,
                        bool first)
{
    VrnicSrq *srq = vrnic_xrc_srq_of(core, qp, srqn);

    /* A held receive WQE completes on its own SRQ's CQ, whatever comes. */
    if (!srq || ((!first || qp->x->have_rwqe) && srqn != qp->srqn)) {
        return NULL;
    }
    /*
     * The message belongs to the SRQ: its receive WQE, its CQ, and the PD
     * its keys must belong to (the target has none of its own).
     */
    qp->srqn = srqn;
    qp->pdn = srq->pdn;
    qp->recv_cqn = srq->cqn;
    return srq;
}

void vrnic_xrc_cqe(const VrnicQp *qp, struct vrnic_cqe *e)
{
    if (qp->type == VRNIC_QP_TYPE_XRC_TGT) {
        e->flags |= VRNIC_CQE_FLAG_XRC;
        e->src_qp = cpu_to_le32(qp->srqn);
    }
}

void vrnic_xrc_srq_destroyed(VrnicCore *core, uint32_t srqn)
{
    for (uint32_t qpn = 2; qpn <= core->cfg.max_qp + 1; qpn++) {
        VrnicQp *qp = &core->obj.qps[qpn];

        VrnicXport *x = qp->x;

        if (!qp->live || qp->type != VRNIC_QP_TYPE_XRC_TGT) {
            continue;
        }
        if (qp->srqn == srqn) {
            /* The held WQE's owner is gone: nothing to complete. */
            x->have_rwqe = false;
            x->in_msg = VRNIC_MSG_NONE;
            qp->srqn = qp->pdn = qp->recv_cqn = 0;
        }
        /*
         * A READ stream still queued under it reads no more: its PD
         * may go next, and its number come back as another's. PD 0
         * names no MR: the stream ends in NAK remote access.
         */
        for (uint32_t i = x->q_head; i != x->q_tail; i++) {
            VrnicResp *e = &x->q[i % x->q_size];

            if (e->kind == VRNIC_RESP_READ && e->srqn == srqn) {
                e->pdn = 0;
            }
        }
    }
}
