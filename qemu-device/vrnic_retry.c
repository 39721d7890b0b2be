/*
 * vrnic RoCEv2 requester recovery: the retransmit, early retransmit and
 * RNR timers, the round-trip estimate, go-back-N, resending only the
 * packet the responder misses (a hole), and the retry budgets. The rules
 * and their reasons are in vrnic's Documentation/reliability.rst.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

/* Local ACK timeout: 4.096 us * 2^timeout; timeout 0 means no timer. */
static int64_t vrnic_tx_rto_ns(const VrnicQp *qp)
{
    return qp->attr.timeout ? 4096ll << MIN(qp->attr.timeout, 31) : 0;
}

/* IBTA 9.7.5.2.8: the RNR NAK timer field, in units of 10 us. */
int64_t vrnic_rnr_ns(uint8_t code)
{
    static const uint32_t t10us[32] = {
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
        384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
        16384, 24576, 32768, 49152,
    };

    return t10us[code & 31] * 10000ll;
}

/*
 * Once the round trip is known, a stall longer than it plus four
 * deviations (at least VRNIC_TX_EARLY_MIN_NS) resends the oldest
 * unanswered packet before the QP's timeout expires; if that is lost too,
 * again after twice the wait, up to VRNIC_TX_EARLY_MAX times per stall
 * (RFC 6298's backoff), each wait at most half the QP's timeout.
 */
static void vrnic_tx_early_arm(VrnicCore *core, VrnicXport *x, int64_t now,
                               int64_t rto)
{
    if (!x->rtt_valid || x->early_count >= VRNIC_TX_EARLY_MAX) {
        return;
    }
    x->early_due = now + MIN(MAX(x->srtt + 4 * x->rttvar,
                                 VRNIC_TX_EARLY_MIN_NS) << x->early_count,
                             rto / 2);
    vrnic_core_timer_arm(core, x->early_due);
}

/*
 * (Re)start the retransmit timer when something is outstanding, and with
 * it the early one (vrnic_tx_early_arm). A lost NAK, a lost resent
 * packet or a lost last packet then costs about a round trip, not the
 * timeout, which only the expiry of the QP's timer counts as a retry.
 */
void vrnic_tx_timer_restart(VrnicCore *core, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    int64_t rto = vrnic_tx_rto_ns(qp), now = vrnic_now(core);

    x->rto_due = x->early_due = 0;
    if (!rto || x->rnr_due || !vrnic_tx_outstanding(qp)) {
        return;
    }
    x->rto_due = now + rto;
    vrnic_core_timer_arm(core, x->rto_due);
    vrnic_tx_early_arm(core, x, now, rto);
}

/* An ACK of the timed packet: a round trip sample (RFC 6298 weights). */
static void vrnic_tx_rtt_sample(VrnicCore *core, VrnicXport *x)
{
    int64_t r;

    if (!x->rtt_timing || vrnic_psn_diff(x->acked_psn, x->rtt_psn) < 0) {
        return;
    }
    r = vrnic_now(core) - x->rtt_sent;
    x->rtt_timing = false;
    if (!x->rtt_valid) {
        x->srtt = r;
        x->rttvar = r / 2;
        x->rtt_valid = true;
    } else {
        int64_t dev = x->srtt > r ? x->srtt - r : r - x->srtt;

        x->rttvar = (3 * x->rttvar + dev) / 4;
        x->srtt = (7 * x->srtt + r) / 8;
    }
}

/* The responder answered something new: the retry budgets start again. */
void vrnic_tx_progress(VrnicCore *core, VrnicQp *qp)
{
    VrnicXport *x = qp->x;

    x->retries = 0;
    x->rnr_retries = 0;
    x->gbn_valid = false;
    x->early_count = 0;
    vrnic_tx_rtt_sample(core, x);
    vrnic_tx_timer_restart(core, qp);
}

/* Sending again from psn is decided: note it, trace it, kick the QP. */
static void vrnic_tx_resend_from(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 uint32_t psn, const char *why)
{
    VrnicXport *x = qp->x;

    x->gbn_valid = true;
    x->gbn_psn = psn;
    x->gbn_resent = false;
    x->rtt_timing = false;  /* an ACK now may answer either copy */
    trace_vrnic_tx_go_back(qpn, psn, why,
                           qp->attr.retry_cnt - MIN(x->retries,
                                                    qp->attr.retry_cnt));
    vrnic_qp_set_pending(core, qp, true);
}

/*
 * Go-back-N: send again from psn, the oldest PSN the responder has not
 * answered. The WQE holding psn resends from that packet (a READ asks for
 * its missing suffix, an atomic is asked again), every later WQE from its
 * start - unless single: an implied NAK says only that one READ/atomic's
 * answer is missing (the responder went on to later requests), so only it
 * is asked again and later WQEs keep their progress. Going back to the
 * same PSN twice without progress in between is left to the timer (one
 * NAK or implied NAK per loss).
 */
void vrnic_tx_go_back(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                      uint32_t psn, bool single, const char *why)
{
    VrnicXport *x = qp->x;
    bool found = false;
    uint16_t next = x->next, back = next;

    if (x->gbn_valid && x->gbn_psn == psn && !x->gbn_resent) {
        return;
    }
    /*
     * The cursor moves only after the walk: vrnic_tx_slot tells the WQE
     * at the cursor from the oldest one (same slot when the window is
     * full) by x->next.
     */
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (!s || s->done) {
            continue;
        }
        if (!found) {
            if (vrnic_psn_diff(s->last_psn, psn) < 0) {
                continue;
            }
            found = true;
            if (single && i != next) {
                /* Sent again before the cursor moves on (tx_process). */
                s->sent = 0;
                x->resend = true;
                break;
            }
            back = i;
            if (vrnic_op_is_rd(s->hdr.opcode)) {
                s->sent = 0;
            } else {
                s->sent = MAX(0, vrnic_psn_diff(psn, s->first_psn));
            }
        } else if (!single) {
            s->sent = 0;
        }
    }
    if (!found) {
        return;
    }
    x->next = back;
    /*
     * A full go-back resends the hole too; one READ/atomic asked again
     * leaves a SEND/WRITE hole resend as it is.
     */
    if (!single) {
        x->hole_mode = x->hole_pending = false;
    }
    vrnic_tx_resend_from(core, qpn, qp, psn, why);
}

/* Retries used up: the oldest unfinished WQE fails, the QP goes to ERR. */
void vrnic_tx_exhausted(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                        uint8_t status)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && !s->done) {
            core->stats.port[status == VRNIC_WC_RNR_RETRY_EXC_ERR ?
                             VRNIC_PORT_STAT_RNR_RETRY_EXC :
                             VRNIC_PORT_STAT_RETRY_EXC]++;
            trace_vrnic_tx_retry_exceeded(qpn, i, status);
            s->done = true;
            s->status = status;
            if (i == qp->x->next) {
                qp->x->next++;
            }
            break;
        }
    }
}

/*
 * A loss at psn is to be recovered: true if that spends a retry of the
 * budget (retry_cnt; 7 is 7 retries), false if it is a repeat of the last
 * one (once per loss - unless the resent copy went out and was lost too)
 * or the budget is used up (the oldest WQE then fails).
 */
static bool vrnic_tx_spend_retry(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 uint32_t psn)
{
    VrnicXport *x = qp->x;

    if (x->gbn_valid && x->gbn_psn == psn && !x->gbn_resent) {
        return false;
    }
    if (x->retries >= qp->attr.retry_cnt) {
        vrnic_tx_exhausted(core, qpn, qp, VRNIC_WC_RETRY_EXC_ERR);
        return false;
    }
    x->retries++;
    return true;
}

/* A loss the requester learned of (NAK, implied NAK, timeout): go back. */
void vrnic_tx_retry(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                    uint32_t psn, bool single, const char *why)
{
    if (vrnic_tx_spend_retry(core, qpn, qp, psn)) {
        vrnic_tx_go_back(core, qpn, qp, psn, single, why);
    }
}

/*
 * Send again only the packet at psn, with AckReq (vrnic_tx_process), and
 * wait for the answer: the responder holds what came after a gap
 * (vrnic_resp_seq.c), so its answer to the hole says how far it now has
 * everything. An ACK short of what was sent is judged by
 * vrnic_tx_hole_answered: the next packet alone, or go-back-N when the
 * responder had nothing after the hole. A NAK names the next hole. If the
 * resent packet or its answer is lost, the early timer resends it again.
 */
static void vrnic_tx_resend_hole(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 uint32_t psn, const char *why)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = vrnic_tx_find_psn(qp, psn);

    if (!s || s->done || vrnic_psn_diff(psn, x->snd_max) >= 0) {
        return;
    }
    if (!x->hole_mode) {
        x->hole_mode = true;
        x->hole_high = vrnic_psn_add(x->snd_max, VRNIC_IB_PSN_MASK);
    }
    x->hole_pending = true;
    x->hole_psn = psn;
    vrnic_tx_resend_from(core, qpn, qp, psn, why);
}

/*
 * A NAK PSN Sequence Error: the responder misses psn. A SEND/WRITE packet
 * is sent again alone; a lost READ/atomic request goes back (go-back-N):
 * its answer is a response stream, not an ACK that tells how far the
 * responder got.
 */
void vrnic_tx_retry_hole(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                         uint32_t psn)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = vrnic_tx_find_psn(qp, psn);

    /*
     * A copy (duplicated, or late) of a NAK already answered, or one
     * for no packet sent: nothing to resend, no retry spent.
     */
    if (vrnic_psn_diff(psn, x->acked_psn) <= 0 || !s || s->done ||
        vrnic_psn_diff(psn, x->snd_max) >= 0) {
        return;
    }
    if (vrnic_op_is_rd(s->hdr.opcode)) {
        vrnic_tx_retry(core, qpn, qp, psn, false, "NAK sequence error");
    } else if (vrnic_tx_spend_retry(core, qpn, qp, psn)) {
        vrnic_tx_resend_hole(core, qpn, qp, psn,
                             "NAK sequence error: the hole");
    }
}

/*
 * An ACK past the hole: what the responder lacks after it is resent. Only
 * an ACK counts, not a READ response or ATOMIC ACK: a responder that held
 * READ requests after the hole streams their responses before the ACK
 * that ends its replay.
 */
void vrnic_tx_hole_answered(VrnicCore *core, uint32_t qpn,
                            VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    uint32_t next = vrnic_psn_add(x->acked_psn, 1);
    VrnicSwqe *s;

    if (!x->hole_mode || x->hole_pending ||
        vrnic_psn_diff(x->acked_psn, x->hole_psn) < 0) {
        return;
    }
    /*
     * An answer past the hole means the responder held what came after
     * it (one that holds nothing answers the hole alone): from now on new
     * PSNs may go out while a hole is resent (vrnic_tx_send).
     */
    if (vrnic_psn_diff(x->acked_psn, x->hole_psn) > 0) {
        x->peer_holds = true;
    }
    if (vrnic_psn_diff(x->acked_psn, x->hole_high) >= 0) {
        x->hole_mode = false;
        return;
    }
    /*
     * The responder got past the resent packet: it had packets after the
     * hole, and holds none more than VRNIC_OOO_NAK_AFTER past acked_psn
     * (it would NAK the next gap). Most often what follows is still on
     * its way - this ACK answered the late original, or went out before
     * the resend arrived - so only the next packet goes again, as a hole:
     * a duplicate of it is answered at once with how far the responder
     * got. A SEND/WRITE only: a READ's answer is its response stream.
     */
    s = vrnic_tx_find_psn(qp, next);
    if (vrnic_psn_diff(x->acked_psn, x->hole_psn) > 0 && s &&
        !vrnic_op_is_rd(s->hdr.opcode)) {
        vrnic_tx_resend_hole(core, qpn, qp, next, "after the hole: the next");
        return;
    }
    /*
     * Only the resent packet went in: nothing after it is there (a
     * responder that holds nothing past a gap, such as rdma_rxe, or all
     * of it lost). Packets after the answer may still be on the wire if
     * the hole was only late (reordered past the NAK threshold); then
     * some of this resend is duplicates, answered as such.
     */
    x->hole_mode = x->peer_holds = false;
    vrnic_tx_go_back(core, qpn, qp, next, false, "after the hole");
    /* Part of the same loss: a NAK for that PSN is a new one. */
    x->gbn_valid = false;
}

/*
 * The oldest PSN nothing answered yet: a READ/atomic's (re)request PSN,
 * or the first unacknowledged packet of a SEND/WRITE. An ACK past an
 * unanswered READ does not answer the READ.
 */
static uint32_t vrnic_tx_oldest_psn(VrnicCore *core, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    uint32_t first_unacked = vrnic_psn_add(x->acked_psn, 1);

    for (uint16_t i = qp->sq.ci; i != (uint16_t)(x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (!s || s->done) {
            continue;
        }
        if (vrnic_op_is_rd(s->hdr.opcode)) {
            return vrnic_tx_rd_psn(core, qp, s);
        }
        if (vrnic_psn_diff(s->last_psn, x->acked_psn) > 0) {
            return vrnic_psn_diff(s->first_psn, first_unacked) > 0 ?
                   s->first_psn : first_unacked;
        }
    }
    return first_unacked;
}

void vrnic_xport_timer(VrnicCore *core, int64_t now)
{
    uint32_t last = core->cfg.max_qp + 1;
    int64_t next = INT64_MAX;

    for (uint32_t qpn = 1; qpn <= last; qpn++) {
        VrnicQp *qp = &core->obj.qps[qpn];
        VrnicXport *x = qp->x;

        if (!qp->live || !vrnic_qp_reliable(qp) ||
            (qp->state != VRNIC_QPS_RTS && qp->state != VRNIC_QPS_SQD)) {
            continue;
        }
        if (x->rnr_due && x->rnr_due <= now) {
            x->rnr_due = 0;
            vrnic_qp_set_pending(core, qp, true);
        }
        if (x->probe_due && x->probe_due <= now) {
            /* No credit update came: the limited WQE goes. */
            x->probe_due = 0;
            x->probe_ok = true;
            vrnic_qp_set_pending(core, qp, true);
        }
        if (x->early_due && x->early_due <= now) {
            x->early_due = 0;
            if (!x->rnr_due && vrnic_tx_outstanding(qp)) {
                uint32_t psn = vrnic_tx_oldest_psn(core, qp);
                VrnicSwqe *s = vrnic_tx_find_psn(qp, psn);

                core->stats.port[VRNIC_PORT_STAT_EARLY_RETRANSMITS]++;
                x->early_count++;
                if (s && vrnic_op_is_rd(s->hdr.opcode)) {
                    /* Only that READ/atomic is asked again. */
                    vrnic_tx_go_back(core, qpn, qp, psn, true,
                                     "early retransmit");
                } else {
                    vrnic_tx_resend_hole(core, qpn, qp, psn,
                                         "early retransmit");
                }
                vrnic_tx_early_arm(core, x, now, vrnic_tx_rto_ns(qp));
            }
        }
        if (x->rto_due && x->rto_due <= now) {
            x->rto_due = 0;
            if (vrnic_tx_outstanding(qp)) {
                core->stats.port[VRNIC_PORT_STAT_TIMEOUTS]++;
                x->gbn_valid = false;
                vrnic_tx_retry(core, qpn, qp, vrnic_tx_oldest_psn(core, qp),
                               false, "timeout");
                vrnic_tx_complete(core, qpn, qp);
                if (qp->state == VRNIC_QPS_RTS || qp->state == VRNIC_QPS_SQD) {
                    vrnic_tx_timer_restart(core, qp);
                }
            }
        }
        if (x->rnr_due) {
            next = MIN(next, x->rnr_due);
        }
        if (x->probe_due) {
            next = MIN(next, x->probe_due);
        }
        if (x->rto_due) {
            next = MIN(next, x->rto_due);
        }
        if (x->early_due) {
            next = MIN(next, x->early_due);
        }
    }
    if (next != INT64_MAX) {
        vrnic_core_timer_arm(core, next);
    }
}
