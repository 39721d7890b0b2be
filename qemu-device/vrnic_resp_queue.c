/*
 * vrnic RoCEv2 responder output: ACKs, NAKs, READ response streams, ATOMIC
 * ACKs and the empty READ responses that answer ATOMIC WRITE and FLUSH
 * leave in request order through a per-QP queue, drained by
 * the QP's bottom half within a budget. Consecutive plain ACKs coalesce
 * into the newest (vrnic_resp_ack); every ACK carries the MSN and the
 * credit code of the receive WQEs the RQ holds (0x1F with an SRQ). A READ
 * response stream reads its data at the moment each packet leaves, with
 * the R_Key and the QP's right checked again.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

#define VRNIC_RESP_BUDGET   64      /* response packets per drain */

static uint8_t vrnic_ack_syndrome(const VrnicQp *qp)
{
    uint32_t credits;

    if (qp->srqn || qp->type == VRNIC_QP_TYPE_XRC_TGT) {
        credits = VRNIC_AETH_CREDITS_INVALID;
    } else if (!qp->rq.log_depth) {
        credits = 0;
    } else {
        credits = vrnic_aeth_credit_code((uint16_t)(qp->rq.pi - qp->rq.ci));
    }
    return VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_ACK) | credits;
}

/* An AETH left: whether it told the requester there are no credits. */
static void vrnic_resp_credits_sent(VrnicXport *x, const VrnicPktHdrs *h)
{
    x->credits_zero = h->aeth.syndrome ==
                      VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_ACK);
}

/*
 * After an ACK that gave no credits, the requester may be waiting for
 * them (vrnic_tx_credit_ok): when receive WQEs are posted, an ACK of ePSN
 * - 1 (normally the one sent before) goes with the new credit count, a
 * credit update. Not while a PSN-sequence NAK is open (the ACK answering
 * the resend brings the credits) or before the QP receives.
 */
void vrnic_resp_rq_posted(VrnicCore *core, VrnicQp *qp)
{
    VrnicXport *x = qp->x;

    if (!x->credits_zero || x->nak_seq_sent || qp->srqn ||
        qp->state < VRNIC_QPS_RTR || qp->state > VRNIC_QPS_SQD ||
        qp->rq.pi == qp->rq.ci) {
        return;
    }
    if (vrnic_resp_ack(qp, vrnic_psn_add(x->epsn, VRNIC_IB_PSN_MASK), false,
                       0)) {
        x->credits_zero = false;
        core->stats.port[VRNIC_PORT_STAT_CREDIT_ACKS]++;
        vrnic_qp_set_pending(core, qp, true);
    }
}

/* A READ/atomic entry leaves the queue. */
static void vrnic_resp_rd_done(VrnicXport *x, const VrnicResp *e)
{
    if (x->rd_pending) {
        x->rd_pending--;
    }
    if (!e->replay && x->rd_new) {
        x->rd_new--;
    }
}

VrnicResp *vrnic_resp_push(VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    VrnicResp *e;

    if (x->q_tail - x->q_head >= x->q_size) {
        return NULL;    /* bounded by rd_pending + coalescing */
    }
    e = &x->q[x->q_tail % x->q_size];
    memset(e, 0, sizeof(*e));
    e->pdn = qp->pdn;
    if (qp->type == VRNIC_QP_TYPE_XRC_TGT) {
        e->srqn = qp->srqn;
    }
    x->q_tail++;
    return e;
}

bool vrnic_resp_ack(VrnicQp *qp, uint32_t psn, bool nak, uint8_t syn)
{
    VrnicXport *x = qp->x;
    VrnicResp *e = NULL;

    /*
     * An ACK replaces a queued plain ACK, or a PSN-sequence NAK once the gap
     * closed (an in-order packet cleared nak_seq_sent; a duplicate's ACK
     * does not). A PSN-sequence NAK replaces a queued plain ACK or
     * PSN-sequence NAK: it acknowledges everything before its PSN. An RNR
     * or error NAK is never replaced. The queue (vrnic_xport_new) has room
     * for every READ/atomic entry and an ACK/NAK after each; when it is
     * full anyway, vrnic_resp_push refuses and the answer is not sent (the
     * requester's timer covers it): false.
     */
    if (x->q_tail != x->q_head) {
        bool seq = syn == vrnic_nak_syn(VRNIC_NAK_PSN_SEQ);

        e = &x->q[(x->q_tail - 1) % x->q_size];
        if (e->kind != VRNIC_RESP_ACK) {
            e = NULL;
        } else if (e->nak &&
                   e->syndrome != vrnic_nak_syn(VRNIC_NAK_PSN_SEQ)) {
            e = NULL;       /* an error NAK goes out as it is */
        } else if (nak ? !seq : e->nak && x->nak_seq_sent) {
            e = NULL;
        }
    }
    if (!e) {
        e = vrnic_resp_push(qp);
        if (!e) {
            return false;
        }
    }
    e->kind = VRNIC_RESP_ACK;
    e->nak = nak;
    e->syndrome = syn;
    e->psn = psn;
    e->msn = x->msn;
    return true;
}

typedef enum VrnicRespOut {
    VRNIC_RESP_OUT_SENT,        /* gone (or can never leave: no source GID) */
    VRNIC_RESP_OUT_WAIT,        /* no room on the wire: try again later */
    VRNIC_RESP_OUT_BAD_READ,    /* READ data unreadable: nothing was sent */
} VrnicRespOut;

/* One responder packet; a READ response carries plen bytes of mr at va. */
static VrnicRespOut vrnic_resp_send(VrnicCore *core, uint32_t qpn,
                                    VrnicQp *qp, VrnicPktHdrs *h,
                                    uint32_t plen, VrnicMr *mr, uint64_t va)
{
    uint8_t frame[VRNIC_XPORT_FRAME] VRNIC_UNINITIALIZED;
    const VrnicPath *path;
    size_t off, flen;
    bool loop;

    /* Built as RC's; an XRC target answers in the XRC class. */
    h->bth.opcode |= vrnic_qp_transport(qp);
    path = vrnic_xport_path(core, qp, qpn, &qp->attr.av,
                            le32_to_cpu(qp->attr.dest_qpn));
    if (!path) {
        return VRNIC_RESP_OUT_SENT;
    }
    loop = path->loop;
    if (!vrnic_xport_can_send(core, loop)) {
        return VRNIC_RESP_OUT_WAIT;
    }
    h->bth.pkey = VRNIC_PKEY_DEFAULT;
    h->bth.dqpn = le32_to_cpu(qp->attr.dest_qpn) & VRNIC_IB_QPN_MASK;
    off = vrnic_pkt_tmpl_build(frame, sizeof(frame), &path->tmpl,
                               core->ip_id++, h, plen);
    if (!off) {
        return VRNIC_RESP_OUT_SENT;
    }
    /* Memory the MR names but the bus refuses (not RAM, unmapped). */
    if (mr && plen && !vrnic_mr_rw(core, mr, va, frame + off, plen, false)) {
        return VRNIC_RESP_OUT_BAD_READ;
    }
    flen = vrnic_pkt_finish(frame, sizeof(frame));
    if ((h->bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) == VRNIC_IB_ACK ||
        (h->bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) == VRNIC_IB_ATOMIC_ACK) {
        trace_vrnic_rx_ack_send(qpn, h->bth.psn, h->aeth.syndrome,
                                h->aeth.msn);
    }
    trace_vrnic_tx_pkt(qpn, h->bth.opcode, h->bth.psn, plen, loop);
    vrnic_xport_output(core, qpn, frame, flen, loop);
    return VRNIC_RESP_OUT_SENT;
}

/*
 * A READ response stream that cannot go on - the MR was deregistered, the
 * QP lost REMOTE_READ, or the bus refused the memory: NAK remote access
 * error at the PSN of the response, and the QP goes to ERR.
 */
static void vrnic_resp_read_fail(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 VrnicPktHdrs *h)
{
    h->bth.opcode = VRNIC_OP(RC, ACK);
    h->aeth.syndrome = VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_NAK) |
                       VRNIC_NAK_REM_ACCESS;
    vrnic_resp_send(core, qpn, qp, h, 0, NULL, 0);
    core->stats.port[VRNIC_PORT_STAT_NAKS_SENT]++;
    vrnic_qp_error(core, qpn);
}

void vrnic_resp_drain(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    uint32_t pmtu = vrnic_xport_pmtu(core, qp);
    unsigned budget = VRNIC_RESP_BUDGET;

    while (x->q_head != x->q_tail) {
        VrnicResp *e = &x->q[x->q_head % x->q_size];
        VrnicPktHdrs h;

        if (!budget--) {
            vrnic_qp_set_pending(core, qp, true);
            return;
        }
        memset(&h, 0, sizeof(h));
        h.aeth.msn = e->msn;
        h.aeth.syndrome = e->nak ? e->syndrome : vrnic_ack_syndrome(qp);
        if (e->kind != VRNIC_RESP_READ) {
            h.bth.opcode = e->kind == VRNIC_RESP_ACK ? VRNIC_OP(RC, ACK) :
                           e->kind == VRNIC_RESP_ATOMIC ?
                           VRNIC_OP(RC, ATOMIC_ACK) :
                           VRNIC_OP(RC, READ_RESP_ONLY);
            h.bth.psn = e->psn;
            h.atomic_orig = e->orig;
            if (vrnic_resp_send(core, qpn, qp, &h, 0, NULL, 0) ==
                VRNIC_RESP_OUT_WAIT) {
                vrnic_qp_set_pending(core, qp, true);
                return;
            }
            if (!e->nak) {
                vrnic_resp_credits_sent(x, &h);
            }
            if (e->kind != VRNIC_RESP_ACK) {
                vrnic_resp_rd_done(x, e);
            }
            x->q_head++;
            continue;
        } else {
            uint32_t idx = e->off / pmtu;
            uint32_t plen = MIN(pmtu, e->len - e->off);
            bool first = e->off == 0;
            bool last = e->off + plen == e->len;
            VrnicMr *mr = NULL;
            VrnicRespOut out;

            h.bth.opcode = first && last ? VRNIC_OP(RC, READ_RESP_ONLY) :
                           first ? VRNIC_OP(RC, READ_RESP_FIRST) :
                           last ? VRNIC_OP(RC, READ_RESP_LAST) :
                                  VRNIC_OP(RC, READ_RESP_MIDDLE);
            h.bth.psn = vrnic_psn_add(e->psn, idx);
            if (plen && (!vrnic_qp_grants(qp, VRNIC_ACCESS_REMOTE_READ) ||
                         vrnic_rkey_check(core, e->rkey, qpn, e->pdn,
                                          VRNIC_ACCESS_REMOTE_READ,
                                          e->va + e->off, plen, &mr))) {
                vrnic_resp_read_fail(core, qpn, qp, &h);
                return;
            }
            /* An on-demand page not mapped: the stream waits for it. */
            switch (mr ? vrnic_odp_access(core, qpn, qp, mr, e->va + e->off,
                                          plen, e->len - e->off, false,
                                          true) :
                         VRNIC_ODP_GO) {
            case VRNIC_ODP_WAIT:
                return;     /* PAGE_FAULT_DONE kicks the QP */
            case VRNIC_ODP_FAIL:
                vrnic_resp_read_fail(core, qpn, qp, &h);
                return;
            default:
                break;
            }
            out = vrnic_resp_send(core, qpn, qp, &h, plen, mr, e->va + e->off);
            if (out == VRNIC_RESP_OUT_BAD_READ) {
                vrnic_resp_read_fail(core, qpn, qp, &h);
                return;
            }
            if (out == VRNIC_RESP_OUT_WAIT) {
                vrnic_qp_set_pending(core, qp, true);
                return;
            }
            if (first || last) {
                vrnic_resp_credits_sent(x, &h);     /* it has an AETH */
            }
            e->off += plen;
            if (last) {
                vrnic_resp_rd_done(x, e);
                x->q_head++;
            }
        }
    }
}

/*
 * An RC request that cannot go in yet (why: no receive WQE for a SEND or
 * WRITE_IMM, or an on-demand page fault): RNR NAK carrying the responder's
 * min_rnr_timer code (the requester's retry comes with the next issue).
 */
void vrnic_resp_rnr_nak(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                        uint32_t psn, const char *why)
{
    trace_vrnic_rx_drop(qpn, psn, why);
    core->stats.port[VRNIC_PORT_STAT_RNR_NAKS_SENT]++;
    core->stats.port[VRNIC_PORT_STAT_NAKS_SENT]++;
    vrnic_resp_ack(qp, psn, true,
                   VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_RNR_NAK) |
                   (qp->attr.min_rnr_timer & 0x1f));
    vrnic_resp_drain(core, qpn, qp);
}

/*
 * A duplicate READ whose PSN falls in a response stream still queued
 * (under the same PD: an XRC target's READs each name theirs) replaces
 * that stream: the requester asks again from what it is missing (its va,
 * length and PSN), so the stream restarts there as a new one.
 */
bool vrnic_resp_restart_read(VrnicXport *x, const VrnicPkt *pkt,
                             uint32_t pdn, uint32_t pmtu)
{
    uint32_t psn = pkt->hdr.bth.psn;

    for (uint32_t i = x->q_head; i != x->q_tail; i++) {
        VrnicResp *e = &x->q[i % x->q_size];

        if (e->kind == VRNIC_RESP_READ && e->pdn == pdn &&
            vrnic_psn_diff(psn, e->psn) >= 0 &&
            vrnic_psn_diff(psn, e->psn) <
            (int32_t)vrnic_read_psns(e->len, pmtu)) {
            e->psn = psn;
            e->va = pkt->hdr.reth.va;
            e->rkey = pkt->hdr.reth.rkey;
            e->len = pkt->hdr.reth.len;
            e->off = 0;
            return true;
        }
    }
    return false;
}
