/*
 * vrnic RoCEv2 responder, PSN sequence: which request packet goes in
 * next. In order, it is executed (vrnic_resp.c); past a gap it is held
 * (a copy, VRNIC_OOO_SLOTS per QP) and goes in when the gap closes, with
 * one PSN-sequence NAK per gap; a duplicate is answered again, never
 * executed again (an ACK, a READ served again, an atomic's cached
 * result). The PSN regions and the bounds are in vrnic_xport.h, the
 * reasoning in vrnic's Documentation/reliability.rst.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

static void vrnic_rx_held_free(VrnicXport *x, unsigned i)
{
    if (!x->held[i]) {
        return;
    }
    g_free(x->held[i]);
    x->held[i] = NULL;
    x->nheld--;
    (*x->dev_held)--;
}

void vrnic_rx_held_clear(VrnicXport *x)
{
    for (unsigned i = 0; x && i < VRNIC_OOO_SLOTS; i++) {
        vrnic_rx_held_free(x, i);
    }
}

/*
 * Drop what was held for VRNIC_OOO_MAX_AGE_NS. Every timer of the device
 * ends up here, so the slots are only scanned once something may have
 * aged out (ooo_age_at), not on each retransmit or delay timer.
 */
void vrnic_rx_held_age(VrnicCore *core, int64_t now)
{
    int64_t next = INT64_MAX;
    uint32_t dev_left = core->ooo_held;

    if (!dev_left) {
        return;
    }
    if (now < core->ooo_age_at) {
        /* A firing clears every deadline: this one stays. */
        vrnic_core_timer_arm(core, core->ooo_age_at);
        return;
    }
    for (uint32_t qpn = 1; dev_left && qpn <= core->cfg.max_qp + 1; qpn++) {
        VrnicXport *x = core->obj.qps[qpn].x;
        uint32_t left = x ? x->nheld : 0;

        for (unsigned i = 0; left && i < VRNIC_OOO_SLOTS; i++) {
            VrnicHeld *h = x->held[i];

            if (!h) {
                continue;
            }
            left--;
            dev_left--;
            if (now - h->since >= VRNIC_OOO_MAX_AGE_NS) {
                trace_vrnic_rx_drop(qpn, h->pkt.hdr.bth.psn,
                                    "held past a gap too long");
                core->stats.port[VRNIC_PORT_STAT_RX_OOO_DROPPED]++;
                vrnic_rx_held_free(x, i);
            } else {
                next = MIN(next, h->since + VRNIC_OOO_MAX_AGE_NS);
            }
        }
    }
    core->ooo_age_at = next;
    if (next != INT64_MAX) {
        vrnic_core_timer_arm(core, next);
    }
}

/* The packet at ePSN is held: the gap closed, the held ones go in next. */
bool vrnic_rx_held_next(const VrnicXport *x)
{
    const VrnicHeld *h = x->held[x->epsn % VRNIC_OOO_SLOTS];

    return h && h->pkt.hdr.bth.psn == x->epsn;
}

/*
 * Only what could go in as it is may be held: a payload IBTA allows at
 * this path MTU (a peer must not make the device keep 64 KiB frames).
 */
static bool vrnic_rx_holdable(const VrnicPkt *pkt, uint32_t pmtu)
{
    uint32_t plen = pkt->payload_len;

    if (pkt->len > VRNIC_XPORT_FRAME) {
        return false;
    }
    if (!(pkt->op->flags & VRNIC_OPF_PAYLOAD)) {
        return plen == 0;
    }
    return (pkt->op->flags & VRNIC_OPF_LAST) ? plen <= pmtu : plen == pmtu;
}

/*
 * Keep a copy of a request packet 1 .. VRNIC_OOO_SLOTS PSNs past ePSN;
 * false if that PSN is held already (a duplicate), the packet may not be
 * held (vrnic_rx_holdable) or the device holds VRNIC_OOO_DEVICE frames
 * (then it is dropped like a packet past the slots). Those PSNs have a
 * slot each; what else a slot holds is older than ePSN (its gap closed
 * without it: the requester resent it) and goes.
 */
static bool vrnic_rx_hold(VrnicCore *core, VrnicQp *qp, const uint8_t *frame,
                          const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    unsigned i = pkt->hdr.bth.psn % VRNIC_OOO_SLOTS;
    VrnicHeld *h = x->held[i];

    if (h && h->pkt.hdr.bth.psn == pkt->hdr.bth.psn) {
        return false;
    }
    vrnic_rx_held_free(x, i);
    if (!vrnic_rx_holdable(pkt, vrnic_xport_pmtu(core, qp)) ||
        *x->dev_held >= VRNIC_OOO_DEVICE) {
        core->stats.port[VRNIC_PORT_STAT_RX_OOO_DROPPED]++;
        return false;
    }
    h = g_malloc(sizeof(*h) + pkt->len);
    h->since = core->ops->clock_ns(core->opaque);
    h->pkt = *pkt;
    memcpy(h->frame, frame, pkt->len);
    x->held[i] = h;
    x->nheld++;
    (*x->dev_held)++;
    core->ooo_age_at = MIN(core->ooo_age_at,
                           h->since + VRNIC_OOO_MAX_AGE_NS);
    vrnic_core_timer_arm(core, h->since + VRNIC_OOO_MAX_AGE_NS);
    return true;
}

/*
 * The gap before held packets closed: they go in, in PSN order, through
 * the same checks as a packet from the wire (the QP may have failed or
 * stopped meanwhile; then they are dropped like one).
 */
void vrnic_rx_replay_held(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    bool replayed = false, more = false;

    if (x->replaying) {
        return;                 /* the outer call goes on */
    }
    x->replaying = true;
    while (vrnic_rx_held_next(x)) {
        unsigned i = x->epsn % VRNIC_OOO_SLOTS;
        VrnicHeld *h = x->held[i];

        x->held[i] = NULL;
        x->nheld--;
        (*x->dev_held)--;
        vrnic_rx_qp(core, qpn, h->frame, &h->pkt);
        g_free(h);
        replayed = true;
    }
    x->replaying = false;
    if (!replayed || qp->state < VRNIC_QPS_RTR || qp->state > VRNIC_QPS_SQE) {
        return;
    }
    /* A SEND found no receive WQE: the RNR NAK is the answer. */
    if (x->q_tail != x->q_head) {
        const VrnicResp *e = &x->q[(x->q_tail - 1) % x->q_size];

        if (e->kind == VRNIC_RESP_ACK && e->nak &&
            e->syndrome != vrnic_nak_syn(VRNIC_NAK_PSN_SEQ)) {
            vrnic_resp_drain(core, qpn, qp);
            return;
        }
    }
    /*
     * One answer for the hole and everything that went in after it, so the
     * requester learns at once how far it got: a NAK for the next gap when
     * packets past it are held too (it sends only that one again), else an
     * ACK of the last packet in.
     */
    for (unsigned i = 0; i < VRNIC_OOO_SLOTS && !more; i++) {
        more = x->held[i] &&
               vrnic_psn_diff(x->held[i]->pkt.hdr.bth.psn, x->epsn) > 0;
    }
    if (more) {
        x->nak_seq_sent = true;
        x->nak_high = x->epsn;
        core->stats.port[VRNIC_PORT_STAT_NAKS_SENT]++;
        vrnic_resp_ack(qp, x->epsn, true, vrnic_nak_syn(VRNIC_NAK_PSN_SEQ));
    } else {
        vrnic_resp_ack(qp, vrnic_psn_add(x->epsn, VRNIC_IB_PSN_MASK), false, 0);
    }
    vrnic_resp_drain(core, qpn, qp);
}

/*
 * A request packet d PSNs past ePSN (RC): held when it may be, and one NAK
 * PSN-sequence error per gap.
 */
static void vrnic_rx_gap(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                         const uint8_t *frame, const VrnicPkt *pkt, int32_t d)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    bool held = false;

    if (d <= (int32_t)VRNIC_OOO_SLOTS) {
        /* Held (a copy once): it goes in when the gap closes. */
        held = vrnic_rx_hold(core, qp, frame, pkt);
        if (held) {
            core->stats.port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ]++;
            core->stats.port[VRNIC_PORT_STAT_RX_OOO_HELD]++;
            trace_vrnic_rx_held(qpn, psn, x->epsn);
        }
    }
    if (!held) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_OUT_OF_SEQ, qpn, psn, "PSN gap");
    }
    /* Only late, perhaps: the NAK waits. */
    if (d <= (int32_t)VRNIC_OOO_NAK_AFTER && !pkt->hdr.bth.ack_req) {
        return;
    }
    /*
     * One NAK per gap - and one more per resend pass that still leaves it
     * open: a gap PSN more than VRNIC_OOO_NAK_AFTER below the highest seen
     * since the NAK means the requester went back, and its copy of ePSN
     * was lost too (without this NAK that loss would wait for the
     * requester's timer). A smaller step back is reordering on the wire:
     * NAKing it would send the requester back again while its resent copy
     * of ePSN is still on the way, and every such NAK costs it a retry.
     */
    if (x->nak_seq_sent &&
        vrnic_psn_diff(x->nak_high, psn) > (int32_t)VRNIC_OOO_NAK_AFTER) {
        x->nak_seq_sent = false;
    }
    if (!x->nak_seq_sent || vrnic_psn_diff(psn, x->nak_high) > 0) {
        x->nak_high = psn;
    }
    if (!x->nak_seq_sent) {
        x->nak_seq_sent = true;
        core->stats.port[VRNIC_PORT_STAT_NAKS_SENT]++;
        vrnic_resp_ack(qp, x->epsn, true, vrnic_nak_syn(VRNIC_NAK_PSN_SEQ));
        vrnic_resp_drain(core, qpn, qp);
    }
}

/*
 * A duplicate READ is served again from memory (never more than the R_Key
 * allows); MSN and ePSN do not move. It replaces a stream still queued for
 * the same request, else takes a READ/atomic slot like a new request (the
 * drain frees it) so the response queue stays bounded; without a free slot
 * the duplicate is dropped and the requester asks again.
 */
static void vrnic_rx_dup_read(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                              const VrnicPkt *pkt, uint32_t pdn)
{
    VrnicXport *x = qp->x;
    VrnicResp *e;

    if (pkt->hdr.reth.len > VRNIC_MAX_MSG ||
        !vrnic_rx_rkey_ok(core, qpn, qp, pdn, VRNIC_ACCESS_REMOTE_READ,
                          pkt->hdr.reth.rkey, pkt->hdr.reth.va,
                          pkt->hdr.reth.len)) {
        return;
    }
    if (vrnic_resp_restart_read(x, pkt, pdn, vrnic_xport_pmtu(core, qp))) {
        core->stats.port[VRNIC_PORT_STAT_READ_REPLAYS]++;
        return;
    }
    if (x->rd_pending >= MAX(qp->attr.max_dest_rd_atomic, 1)) {
        return;
    }
    e = vrnic_resp_push(qp);
    if (e) {
        e->kind = VRNIC_RESP_READ;
        e->psn = pkt->hdr.bth.psn;
        e->msn = x->msn;
        e->va = pkt->hdr.reth.va;
        e->rkey = pkt->hdr.reth.rkey;
        e->len = pkt->hdr.reth.len;
        e->pdn = pdn;
        e->srqn = pkt->hdr.xrc_srqn;
        e->replay = true;
        x->rd_pending++;
        core->stats.port[VRNIC_PORT_STAT_READ_REPLAYS]++;
    }
}

/*
 * A duplicate atomic, ATOMIC WRITE or FLUSH is never executed twice:
 * answered from the result cache (the newest entry with that PSN), or (too
 * old) dropped.
 */
static void vrnic_rx_dup_atomic(VrnicCore *core, VrnicQp *qp, uint32_t psn)
{
    VrnicXport *x = qp->x;

    if (x->rd_pending >= MAX(qp->attr.max_dest_rd_atomic, 1)) {
        return;
    }
    for (unsigned n = 1; n <= VRNIC_ATOMIC_CACHE; n++) {
        const VrnicAtomicResult *r =
            &x->atomic_cache[(x->atomic_next - n) % VRNIC_ATOMIC_CACHE];
        VrnicResp *e;

        if (!r->valid || r->psn != psn) {
            continue;
        }
        e = vrnic_resp_push(qp);
        if (e) {
            e->kind = r->kind;
            e->psn = psn;
            e->msn = x->msn;
            e->orig = r->orig;
            e->replay = true;
            x->rd_pending++;
            core->stats.port[VRNIC_PORT_STAT_ATOMIC_REPLAYS]++;
        }
        return;
    }
}

/*
 * A request packet before ePSN (RC): answered again, never executed. An
 * XRC target's duplicate names its SRQ too, which must still be one of
 * the domain's; a READ is then served under that SRQ's PD, not that of
 * the message in progress.
 */
static void vrnic_rx_duplicate(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                               const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    uint32_t pdn = qp->pdn;

    vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_DUPLICATE, qpn, psn, "duplicate");
    if (qp->type == VRNIC_QP_TYPE_XRC_TGT) {
        const VrnicSrq *srq = vrnic_xrc_srq_of(core, qp, pkt->hdr.xrc_srqn);

        if (!srq) {
            return;     /* its SRQ is gone: no answer */
        }
        pdn = srq->pdn;
    }
    if ((pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) == VRNIC_IB_READ_REQ) {
        vrnic_rx_dup_read(core, qpn, qp, pkt, pdn);
    } else if (pkt->op->flags & (VRNIC_OPF_ATOMIC | VRNIC_OPF_RD_ACKED)) {
        vrnic_rx_dup_atomic(core, qp, psn);
    } else if (pkt->hdr.bth.ack_req || !x->dup_acked) {
        /*
         * The first duplicate of a resend pass is answered at once: the
         * requester learns how far this side got and skips the rest.
         * Later ones only when they ask (AckReq), like new packets; an
         * ACK per duplicate doubled the frames of every pass.
         */
        x->dup_acked = vrnic_resp_ack(qp, vrnic_psn_add(x->epsn,
                                                        VRNIC_IB_PSN_MASK),
                                      false, 0);
    }
    vrnic_resp_drain(core, qpn, qp);
}

bool vrnic_rx_psn(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                  const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    int32_t d = vrnic_psn_diff(psn, x->epsn);

    if (d == 0) {
        return true;
    }
    if (qp->type == VRNIC_QP_TYPE_UC) {
        x->in_msg = VRNIC_MSG_NONE;     /* abandon the partial one */
        if (pkt->op->flags & VRNIC_OPF_FIRST) {
            x->epsn = psn;
            return true;
        }
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_OUT_OF_SEQ, qpn, psn,
                      "UC PSN gap: rest of the message dropped");
        return false;
    }
    if (d > 0 && d <= (int32_t)VRNIC_PSN_WINDOW) {
        vrnic_rx_gap(core, qpn, qp, frame, pkt, d);
    } else if (d < 0 && d >= -(int32_t)VRNIC_PSN_WINDOW) {
        vrnic_rx_duplicate(core, qpn, qp, pkt);
    } else {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_PSN_WINDOW, qpn, psn,
                      "PSN out of window");
    }
    return false;
}
