/*
 * vrnic RoCEv2 completer: the responses a requester receives (ACK, NAK,
 * READ responses, ATOMIC ACKs) turned into progress and completions.
 *
 * Completion (in SQ order, CQE when signaled or on error): UD/UC when the
 * last packet is sent; RC SEND/WRITE when an ACK covers the last PSN; READ
 * when its last response is placed; atomics when the ATOMIC ACK's original
 * value is stored (little-endian) in the local SGE; ATOMIC WRITE and FLUSH
 * when their empty READ RESPONSE ONLY arrives. Received error NAKs
 * complete the WQE with the matching remote error and move the QP to ERR;
 * PSN-sequence and RNR NAKs, and the implied NAK, start a recovery
 * (vrnic_retry.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

/*
 * Complete, in SQ order, every WQE that is done (or, for RC SEND/WRITE,
 * covered by the newest ACK). An error status completes and moves the QP
 * to ERR, which flushes the rest.
 */
void vrnic_tx_complete(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    bool progress = false;

    while (qp->sq.ci != x->next) {
        VrnicSwqe *s = &x->win[qp->sq.ci % VRNIC_TX_WINDOW];
        struct vrnic_cqe e;
        uint8_t status;

        if (!s->done) {
            if (s->started && s->sent == s->npkts &&
                !vrnic_op_is_rd(s->hdr.opcode) &&
                vrnic_psn_diff(s->last_psn, x->acked_psn) <= 0) {
                s->done = true;
                s->status = VRNIC_WC_SUCCESS;
            } else {
                break;
            }
        }
        if (vrnic_op_is_rd(s->hdr.opcode) && x->rd_out) {
            x->rd_out--;
        }
        trace_vrnic_tx_complete(qpn, qp->sq.ci, le64_to_cpu(s->hdr.wr_id),
                                s->status);
        if ((s->hdr.flags & VRNIC_WQE_FLAG_SIGNALED) ||
            s->status != VRNIC_WC_SUCCESS) {
            memset(&e, 0, sizeof(e));
            e.wr_id = s->hdr.wr_id;
            e.qpn = cpu_to_le32(qpn);
            e.opcode = vrnic_cqe_opcode(s->hdr.opcode);
            e.status = s->status;
            if (e.status == VRNIC_WC_SUCCESS && vrnic_op_is_rd(s->hdr.opcode)) {
                /* The atomics 8; READ, ATOMIC WRITE, FLUSH their length. */
                e.byte_len = cpu_to_le32(vrnic_op_is_atomic(s->hdr.opcode) ?
                                         8 : s->len);
            }
            vrnic_cq_post(core, qp->send_cqn, &e);
        }
        status = s->status;
        s->started = s->done = false;
        qp->sq.ci++;
        progress = true;
        if (status != VRNIC_WC_SUCCESS) {
            vrnic_qp_error(core, qpn);
            return;
        }
    }
    if (progress && qp->sq.ci != qp->sq.pi) {
        vrnic_qp_set_pending(core, qp, true);
    }
}

static uint8_t vrnic_nak_status(uint8_t code)
{
    switch (code) {
    case VRNIC_NAK_REM_ACCESS:
        return VRNIC_WC_REM_ACCESS_ERR;
    case VRNIC_NAK_REM_OP:
        return VRNIC_WC_REM_OP_ERR;
    default:
        return VRNIC_WC_REM_INV_REQ_ERR;
    }
}

/*
 * Everything up to psn is acknowledged (never moves backwards); true
 * when that is news.
 */
static bool vrnic_tx_ack_to(VrnicXport *x, uint32_t psn)
{
    if (vrnic_psn_diff(psn, x->acked_psn) > 0 &&
        vrnic_psn_diff(psn, x->psn) < 0) {
        x->acked_psn = psn;
        return true;
    }
    return false;
}

/*
 * Implied NAK: the responder answers in request order, so the answer to a
 * later request means the oldest unanswered READ/atomic's response stream
 * is over, and what is missing of it was lost. Only requests sent after
 * the READ/atomic's latest request count: once it is asked again, the
 * responder first sends what it still owes for the requests sent before,
 * which says nothing about the new one (if that is lost, the early timer
 * asks once more). A READ's own responses past a missing one do not get
 * here: they are placed (vrnic_tx_rd_place).
 */
static void vrnic_tx_implied_nak(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 uint32_t answered_psn)
{
    VrnicSwqe *s = vrnic_tx_oldest_rd(qp);
    uint32_t want;

    if (!s || !s->sent) {
        return;
    }
    want = vrnic_tx_rd_psn(core, qp, s);
    if (vrnic_psn_diff(answered_psn, s->last_psn) > 0 &&
        vrnic_psn_diff(answered_psn, s->rd_after) >= 0 &&
        !(qp->x->gbn_valid && qp->x->gbn_psn == want)) {
        core->stats.port[VRNIC_PORT_STAT_IMPLIED_NAKS]++;
        vrnic_tx_retry(core, qpn, qp, want, true, "implied NAK");
    }
}

/*
 * Place a READ response by its PSN, which says where its data goes: the
 * responder sends a READ's responses in order, so one past a missing
 * response means that one was lost, but its own data is good. Responses
 * up to VRNIC_TX_RD_AHEAD PSNs past the first missing one are placed and
 * remembered, so that a READ asked again gets only what is missing
 * (vrnic_tx_rd_ask_end). The opcode is not checked against the position:
 * a resent READ's stream may begin with FIRST (a new stream, IBTA) or
 * MIDDLE/LAST (rdma_rxe continues the old one), and a partial request
 * ends with LAST before the READ does; the length is. Returns why the
 * response is dropped, or NULL; *lost tells that the first missing one is
 * lost: the last response of the latest request came, or the stream went
 * past what can be placed (a long READ: asked again at once then, so that
 * the responder, if it can, restarts the stream there). Both are judged
 * by PSN alone: a late response of an older copy of the stream (reordered,
 * or still streaming when a timer asked again) can ask once more.
 */
static const char *vrnic_tx_rd_place(VrnicCore *core, uint32_t qpn,
                                     VrnicQp *qp, VrnicSwqe *s, uint32_t psn,
                                     uint8_t *data, uint32_t plen,
                                     bool *lost)
{
    uint32_t pmtu = s->pmtu;
    uint32_t idx = vrnic_psn_diff(psn, s->first_psn);
    uint32_t pos = s->rcvd / pmtu;
    uint64_t off = (uint64_t)idx * pmtu;
    uint32_t ahead;

    if (off > s->len || plen != MIN(pmtu, s->len - off)) {
        return "READ response length";
    }
    if (idx < pos) {
        return "READ response placed already";
    }
    ahead = idx - pos;
    if (ahead > VRNIC_TX_RD_AHEAD) {
        /*
         * Once per copy of the stream: the response just past the
         * limit (if that one is lost, the early timer asks).
         */
        *lost = ahead == VRNIC_TX_RD_AHEAD + 1;
        return "READ response too far past a missing one";
    }
    if (ahead && (s->rd_ahead >> (ahead - 1)) & 1) {
        return "READ response placed already";
    }
    /* Its place unmapped (on-demand) since the request left: asked again. */
    switch (vrnic_sge_odp(core, qpn, qp, s, off, plen, true)) {
    case VRNIC_ODP_WAIT:
        return "READ response: its place is not mapped (page fault)";
    case VRNIC_ODP_FAIL:
        s->done = true;
        s->status = VRNIC_WC_LOC_PROT_ERR;
        return NULL;
    default:
        break;
    }
    if (plen && !vrnic_sge_rw(core, qp, s, off, data, plen, true)) {
        s->done = true;
        s->status = VRNIC_WC_LOC_PROT_ERR;
        return NULL;
    }
    if (ahead) {
        s->rd_ahead |= 1ull << (ahead - 1);
    } else {
        /* The first missing one: move on over those placed after it. */
        bool placed = true;

        s->rcvd += plen;
        while (placed && s->rcvd < s->len) {
            placed = s->rd_ahead & 1;
            s->rd_ahead >>= 1;
            if (placed) {
                s->rcvd += MIN(pmtu, s->len - s->rcvd);
            }
        }
        if (s->rcvd == s->len) {
            s->done = true;
            s->status = VRNIC_WC_SUCCESS;
            return NULL;
        }
    }
    *lost = idx == vrnic_read_psns(s->rd_end, pmtu) - 1;
    return NULL;
}

/* An RNR NAK: wait the responder's min_rnr_timer, then resend from psn. */
static const char *vrnic_tx_rnr_nak(VrnicCore *core, uint32_t qpn,
                                    VrnicQp *qp, uint32_t psn, uint8_t syn)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s;
    int64_t wait;

    core->stats.port[VRNIC_PORT_STAT_RNR_NAKS_RCVD]++;
    if (vrnic_tx_ack_to(x, vrnic_psn_add(psn, VRNIC_IB_PSN_MASK))) {
        vrnic_tx_progress(core, qp);
    }
    s = vrnic_tx_find_psn(qp, psn);
    if (!s || s->done) {
        return "RNR NAK for no request in flight";
    }
    if (x->rnr_due) {
        return NULL;        /* a duplicate or late RNR NAK: already waiting */
    }
    if (qp->attr.rnr_retry != 7 && x->rnr_retries >= qp->attr.rnr_retry) {
        vrnic_tx_exhausted(core, qpn, qp, VRNIC_WC_RNR_RETRY_EXC_ERR);
        return NULL;
    }
    wait = vrnic_rnr_ns(VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn));
    x->peer_rnr_ns = wait;      /* how long a limited WQE waits */
    x->rnr_retries++;
    core->stats.port[VRNIC_PORT_STAT_RNR_RETRIES]++;
    trace_vrnic_tx_rnr_wait(qpn, psn, wait,
                            qp->attr.rnr_retry == 7 ? 7 :
                            qp->attr.rnr_retry - x->rnr_retries);
    x->gbn_valid = false;
    vrnic_tx_go_back(core, qpn, qp, psn, false, "RNR NAK");
    x->rto_due = x->early_due = 0;
    x->rnr_due = vrnic_now(core) + wait;
    vrnic_core_timer_arm(core, x->rnr_due);
    return NULL;
}

/*
 * An error NAK (remote access, invalid request, remote operational): the
 * WQE at psn completes with the matching error; READ/atomics before it
 * that are still unanswered were lost with it.
 */
static const char *vrnic_tx_error_nak(VrnicQp *qp, uint32_t psn, uint8_t syn)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = vrnic_tx_find_psn(qp, psn);

    if (!s) {
        return "NAK for no request in flight";
    }
    vrnic_tx_ack_to(x, vrnic_psn_add(psn, VRNIC_IB_PSN_MASK));
    for (uint16_t i = qp->sq.ci; i != x->next; i++) {
        VrnicSwqe *t = &x->win[i % VRNIC_TX_WINDOW];

        if (t == s) {
            break;
        }
        if (!t->done && vrnic_op_is_rd(t->hdr.opcode)) {
            t->done = true;
            t->status = VRNIC_WC_WR_FLUSH_ERR;
        }
    }
    s->done = true;
    s->status = vrnic_nak_status(VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn));
    return NULL;
}

/* An ACK or NAK; returns why it is dropped, or NULL. */
static const char *vrnic_tx_ack(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    uint8_t syn = pkt->hdr.aeth.syndrome;
    uint8_t type = VRNIC_FIELD_GET(VRNIC_AETH_TYPE_MASK, syn);
    uint8_t code = VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn);

    if (type != VRNIC_AETH_ACK) {
        core->stats.port[VRNIC_PORT_STAT_NAKS_RCVD]++;
    }
    switch (type) {
    case VRNIC_AETH_ACK:
        if (vrnic_tx_ack_to(x, psn)) {
            vrnic_tx_progress(core, qp);
        }
        /* READ responses may have moved acked_psn past the hole. */
        vrnic_tx_hole_answered(core, qpn, qp);
        vrnic_tx_implied_nak(core, qpn, qp, psn);
        return NULL;
    case VRNIC_AETH_RNR_NAK:
        return vrnic_tx_rnr_nak(core, qpn, qp, psn, syn);
    case VRNIC_AETH_NAK:
        if (code != VRNIC_NAK_PSN_SEQ) {
            return vrnic_tx_error_nak(qp, psn, syn);
        }
        /*
         * The responder expects psn (and acknowledges what is before it):
         * resend from there at once.
         */
        core->stats.port[VRNIC_PORT_STAT_SEQ_NAKS_RCVD]++;
        if (vrnic_tx_ack_to(x, vrnic_psn_add(psn, VRNIC_IB_PSN_MASK))) {
            vrnic_tx_progress(core, qp);
        }
        if (vrnic_tx_outstanding(qp)) {
            vrnic_tx_retry_hole(core, qpn, qp, psn);
        }
        return NULL;
    default:
        return "reserved AETH syndrome";
    }
}

/* An ATOMIC ACK: the original value goes to the local SGE. */
static const char *vrnic_tx_atomic_ack(VrnicCore *core, uint32_t qpn,
                                       VrnicQp *qp, const VrnicPkt *pkt)
{
    uint32_t psn = pkt->hdr.bth.psn;
    VrnicSwqe *s = vrnic_tx_oldest_rd(qp);
    uint64_t orig;

    if (!s || !vrnic_op_is_atomic(s->hdr.opcode) || s->first_psn != psn) {
        vrnic_tx_implied_nak(core, qpn, qp, psn);
        return "ATOMIC ACK matching no atomic";
    }
    /*
     * Its place unmapped (on-demand) since the request left: dropped, the
     * atomic is asked again and answered from the responder's cache.
     */
    if (vrnic_sge_odp(core, qpn, qp, s, 0, 8, true) == VRNIC_ODP_WAIT) {
        return "ATOMIC ACK: its place is not mapped (page fault)";
    }
    orig = cpu_to_le64(pkt->hdr.atomic_orig);
    vrnic_tx_ack_to(qp->x, psn);
    vrnic_tx_progress(core, qp);
    s->done = true;
    s->status = vrnic_sge_rw(core, qp, s, 0, (uint8_t *)&orig, 8, true) ?
                VRNIC_WC_SUCCESS : VRNIC_WC_LOC_PROT_ERR;
    return NULL;
}

/*
 * The answer to an ATOMIC WRITE or a FLUSH (IBTA 1.5): an RDMA READ
 * RESPONSE ONLY with no data at the request's PSN. It completes the
 * request; an older READ/atomic still unanswered was lost (implied NAK).
 */
static const char *vrnic_tx_rd_ack(VrnicCore *core, uint32_t qpn,
                                   VrnicQp *qp, const VrnicPkt *pkt)
{
    uint32_t psn = pkt->hdr.bth.psn;
    VrnicSwqe *s = vrnic_tx_oldest_rd(qp);

    if (!s || !vrnic_op_is_rd_acked(s->hdr.opcode) || s->first_psn != psn ||
        (pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) !=
        VRNIC_IB_READ_RESP_ONLY ||
        pkt->payload_len) {
        vrnic_tx_implied_nak(core, qpn, qp, psn);
        return "READ response matching no ATOMIC WRITE or FLUSH";
    }
    vrnic_tx_ack_to(qp->x, psn);
    vrnic_tx_progress(core, qp);
    s->done = true;
    s->status = VRNIC_WC_SUCCESS;
    return NULL;
}

/* A READ RESPONSE FIRST/MIDDLE/LAST/ONLY: placed by its PSN. */
static const char *vrnic_tx_read_resp(VrnicCore *core, uint32_t qpn,
                                      VrnicQp *qp, const uint8_t *frame,
                                      const VrnicPkt *pkt)
{
    uint32_t psn = pkt->hdr.bth.psn;
    VrnicSwqe *s = vrnic_tx_find_psn(qp, psn);
    const char *drop;
    bool lost = false;

    if (s && !s->done && vrnic_op_is_rd_acked(s->hdr.opcode)) {
        return vrnic_tx_rd_ack(core, qpn, qp, pkt);
    }
    if (!s || s->done || s->hdr.opcode != VRNIC_WQE_OP_RDMA_READ) {
        vrnic_tx_implied_nak(core, qpn, qp, psn);
        return "READ response matching no READ";
    }
    drop = vrnic_tx_rd_place(core, qpn, qp, s, psn,
                             (uint8_t *)frame + pkt->payload_off,
                             pkt->payload_len, &lost);
    if (!drop) {
        vrnic_tx_implied_nak(core, qpn, qp, psn);
        /* A response answers every PSN up to its own. */
        vrnic_tx_ack_to(qp->x, psn);
        vrnic_tx_progress(core, qp);
    }
    if (lost) {
        vrnic_tx_retry(core, qpn, qp, vrnic_tx_rd_psn(core, qp, s), true,
                       "READ response missing");
    }
    return drop;
}

/*
 * The credits an AETH of the ACK type carries (an ACK, an ATOMIC ACK, a
 * READ response FIRST/LAST/ONLY): the limit moves to MSN + credits, never
 * back (an older ACK may come late). An MSN past the newest message
 * started is a peer's error and moves nothing. An ACK that moves the limit
 * but acknowledges nothing new is a credit update: this responder sends
 * them. 0x1F: the responder gives no credits; the requester stops
 * counting (vrnic_tx_credit_ok).
 */
static void vrnic_tx_credits(VrnicXport *x, const VrnicPkt *pkt)
{
    uint8_t syn = pkt->hdr.aeth.syndrome;
    uint8_t code = VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn);
    uint32_t msn = pkt->hdr.aeth.msn, lsn;

    if (VRNIC_FIELD_GET(VRNIC_AETH_TYPE_MASK, syn) != VRNIC_AETH_ACK) {
        return;
    }
    if (code == VRNIC_AETH_CREDITS_INVALID) {
        x->credits_off = true;
        return;
    }
    lsn = vrnic_psn_add(msn, vrnic_aeth_credit_count(code));
    if (vrnic_psn_diff(msn, x->ssn) <= 0 &&
        vrnic_psn_diff(lsn, x->lsn) > 0) {
        x->lsn = lsn;
        x->probe_due = 0;       /* no need to probe */
        if ((pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) == VRNIC_IB_ACK &&
            vrnic_psn_diff(pkt->hdr.bth.psn, x->acked_psn) <= 0) {
            x->peer_updates = true;
        }
    }
}

void vrnic_tx_response(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                       const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint8_t op = pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK;
    const char *drop;

    if (pkt->op->hdrs & VRNIC_HDR_AETH) {
        trace_vrnic_tx_ack(qpn, pkt->hdr.bth.psn, pkt->hdr.aeth.syndrome,
                           pkt->hdr.aeth.msn);
        vrnic_tx_credits(x, pkt);
    }
    if (op == VRNIC_IB_ACK) {
        drop = vrnic_tx_ack(core, qpn, qp, pkt);
    } else if (op == VRNIC_IB_ATOMIC_ACK) {
        drop = vrnic_tx_atomic_ack(core, qpn, qp, pkt);
    } else {
        drop = vrnic_tx_read_resp(core, qpn, qp, frame, pkt);
    }
    if (drop) {
        core->stats.port[VRNIC_PORT_STAT_RX_RESP_DROP]++;
        trace_vrnic_tx_drop(qpn, pkt->hdr.bth.psn, drop);
        return;
    }
    vrnic_tx_complete(core, qpn, qp);
    /*
     * Everything sent is answered: no timer and no hole is left to wait
     * for. (The progress that answered it restarted the timers while the
     * WQE was still outstanding; left armed, that deadline would time the
     * next message from this one's send, and its first packet would not
     * arm the early timer.)
     */
    if (!vrnic_tx_outstanding(qp)) {
        x->rto_due = x->early_due = 0;
        if (x->hole_mode && !x->hole_pending) {
            x->hole_mode = false;
        }
    }
    if (qp->state == VRNIC_QPS_RTS && x->next != qp->sq.pi) {
        vrnic_qp_set_pending(core, qp, true);
    }
}
