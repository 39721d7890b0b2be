/*
 * vrnic RoCEv2 requester: send WQEs to packets, and the responses (ACK,
 * NAK, READ responses, atomic ACKs) back to completions. Rules common to
 * the transport are in vrnic_xport.h.
 *
 * A QP in RTS with posted sends is marked pending (doorbell, or entering
 * RTS); the queue bottom half then runs vrnic_xport_process(), which for
 * each WQE at the send cursor (x->next, sq.ci <= next <= sq.pi):
 *  1. copies the WQE in once (all later decisions use the copy) and checks
 *     it: opcode allowed for the QP type (RC: all; UC: SEND, SEND_IMM,
 *     WRITE, WRITE_IMM; UD/GSI: SEND, SEND_IMM), inline length <=
 *     max_inline, num_sge <= max_send_sge, both within the WQE size, every
 *     non-empty local SGE with vrnic_mr_check (LOCAL_WRITE for READ and
 *     atomic targets), message <= 2^31 (UD: <= one path MTU), atomics need
 *     8 bytes of local SGE. A WQE failing these is a guest error: it
 *     completes (in order) with LOC_QP_OP_ERR / LOC_PROT_ERR / LOC_LEN_ERR
 *     and the QP moves to ERR.
 *  2. assigns PSNs: SEND/WRITE one per packet (path MTU segments, at least
 *     one), READ ceil(len / PMTU) (at least 1), atomic and UD 1.
 *  3. builds the packets with the codec and sends them: FIRST/MIDDLE/LAST
 *     or ONLY, RETH on WRITE FIRST/ONLY and READ, ImmDt/IETH on the last,
 *     SE on the last packet of a solicited SEND/WRITE_IMM, AckReq on the
 *     last packet of every RC request. P_Key 0xFFFF. Source MAC/GID from
 *     the port (av.sgid_index), destination from the QP's AV (RC/UC) or
 *     the WQE's (UD); UDP source port rdma_get_udp_sport(flow label, qpn,
 *     dest qpn). UD/GSI: DETH with the WQE's Q_Key (MSB set: the QP's) and
 *     source QP (1 for GSI). A frame to the device's own GID goes to the
 *     loopback queue (vrnic_rx.c) instead of the wire. A UD frame to a
 *     multicast GID has DestQP 0xFFFFFF and goes on the wire, and also to
 *     the loopback queue when QPs of this device are attached to the group
 *     (vrnic_mcast.c).
 * At most VRNIC_TX_BUDGET packets per QP per run; more work re-kicks.
 *
 * Completion (in SQ order, CQE when signaled or on error): UD/UC when the
 * last packet is sent; RC SEND/WRITE when an ACK covers the last PSN; READ
 * when its last response is placed; atomics when the ATOMIC ACK's original
 * value is stored (little-endian) in the local SGE.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

#define VRNIC_PKEY_DEFAULT  0xffff
#define VRNIC_GSI_QKEY      0x80010000u

typedef enum VrnicTxRes {
    VRNIC_TX_DONE,      /* all packets of the WQE are out */
    VRNIC_TX_MORE,      /* out of budget or loopback space: run again */
    VRNIC_TX_STOP,      /* cannot go on now (window, rd_atomic, fence) */
    VRNIC_TX_FAIL,      /* the WQE failed (marked done with a status) */
    VRNIC_TX_GONE,      /* the QP left RTS (fatal DMA error) */
} VrnicTxRes;

/* ---- allocation and state ----------------------------------------------- */

VrnicXport *vrnic_xport_new(VrnicCore *core)
{
    /* max_qp_rd_atom new READ/atomics and as many replays, an ACK or NAK
     * between any two of them (vrnic_resp_ack). */
    uint32_t n = 4 * MAX(core->cfg.max_qp_rd_atom, 1u) + 2;
    VrnicXport *x = g_malloc0(sizeof(*x) + n * sizeof(VrnicResp));

    x->q_size = n;
    x->dev_held = &core->ooo_held;
    return x;
}

void vrnic_xport_free(VrnicQp *qp)
{
    vrnic_rx_held_clear(qp->x);
    g_free(qp->x);
    qp->x = NULL;
}

void vrnic_xport_reset(VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    uint32_t n = x->q_size;
    uint32_t *dev_held = x->dev_held;   /* the device's, not the QP's */

    vrnic_rx_held_clear(x);
    memset(x, 0, sizeof(*x) + n * sizeof(VrnicResp));
    x->q_size = n;
    x->dev_held = dev_held;
}

void vrnic_xport_set_sq_psn(VrnicQp *qp, uint32_t psn)
{
    qp->x->psn = psn & VRNIC_IB_PSN_MASK;
    qp->x->snd_max = qp->x->psn;
    qp->x->acked_psn = vrnic_psn_add(psn, VRNIC_IB_PSN_MASK);   /* psn - 1 */
}

void vrnic_xport_set_rq_psn(VrnicQp *qp, uint32_t psn)
{
    qp->x->epsn = psn & VRNIC_IB_PSN_MASK;
}

void vrnic_xport_err(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;

    if (x->have_rwqe && x->rwqe_srq) {
        struct vrnic_cqe e = {
            .wr_id = x->rhdr.wr_id,
            .qpn = cpu_to_le32(qpn),
            .opcode = VRNIC_CQE_OP_RECV,
            .status = VRNIC_WC_WR_FLUSH_ERR,
        };

        vrnic_cq_post(core, qp->recv_cqn, &e);
    }
    /* The flush that follows completes [sq.ci, sq.pi) and [rq.ci, rq.pi);
     * what the transport held is forgotten. PSNs stay as they were. */
    x->have_rwqe = false;
    x->in_msg = VRNIC_MSG_NONE;
    vrnic_rx_held_clear(x);
    x->hole_mode = x->hole_pending = false;
    x->rd_out = 0;
    x->rd_pending = 0;
    x->rd_new = 0;
    x->q_head = x->q_tail = 0;
    x->rto_due = x->rnr_due = x->early_due = 0;
    x->rtt_timing = false;
    for (unsigned i = 0; i < VRNIC_TX_WINDOW; i++) {
        x->win[i].started = x->win[i].done = false;
    }
}

/* ---- helpers shared with vrnic_rx.c ---------------------------------- */

/* Path MTU in bytes: the QP's (RC/UC), else the largest IB MTU whose
 * packets fit the port's IP MTU (iboe_get_mtu), at least 256. */
uint32_t vrnic_xport_pmtu(const VrnicCore *core, const VrnicQp *qp)
{
    uint32_t pmtu = 4096;

    if (qp->attr.path_mtu >= 1 && qp->attr.path_mtu <= 5) {
        return 128u << qp->attr.path_mtu;
    }
    while (pmtu > 256 && pmtu + 96 > core->mtu) {
        pmtu >>= 1;
    }
    return pmtu;
}

static int vrnic_port_gid_find(const VrnicCore *core, const uint8_t *gid)
{
    for (uint32_t i = 0; i < core->cfg.gid_tbl_len; i++) {
        if (core->gids[i].type && !memcmp(core->gids[i].gid, gid, 16)) {
            return i;
        }
    }
    return -1;
}

/* Addressing for a packet to av; false when the source GID is unusable. */
bool vrnic_xport_addr(VrnicCore *core, const struct vrnic_av *av,
                      uint32_t lqpn, uint32_t rqpn, VrnicPktAddr *a,
                      bool *loop)
{
    uint32_t fl = le32_to_cpu(av->flow_label) & VRNIC_IPV6_FLOW_MASK;

    if (av->sgid_index >= core->cfg.gid_tbl_len ||
        !core->gids[av->sgid_index].type ||
        vrnic_gid_is_ipv4(av->dgid) !=
        vrnic_gid_is_ipv4(core->gids[av->sgid_index].gid)) {
        return false;
    }
    memset(a, 0, sizeof(*a));
    memcpy(a->smac, core->mac, 6);
    memcpy(a->dmac, av->dmac, 6);
    memcpy(a->sgid, core->gids[av->sgid_index].gid, 16);
    memcpy(a->dgid, av->dgid, 16);
    a->traffic_class = av->traffic_class;
    a->hop_limit = av->hop_limit ? av->hop_limit : 64;
    a->flow_label = fl;
    a->udp_sport = vrnic_pkt_udp_sport(fl, lqpn, rqpn);
    a->ip_id = core->ip_id++;
    *loop = vrnic_port_gid_find(core, av->dgid) >= 0;
    return true;
}

bool vrnic_xport_can_send(VrnicCore *core, bool loop)
{
    return loop ? vrnic_loop_has_room(core) : vrnic_wire_can_send(core);
}

void vrnic_xport_output(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                        size_t len, bool loop)
{
    core->stats.port[VRNIC_PORT_STAT_TX_PKTS]++;
    core->stats.port[VRNIC_PORT_STAT_TX_BYTES] += len;
    if (loop) {
        vrnic_loop_put(core, qpn, frame, len);
    } else {
        vrnic_fault_frame(core, VRNIC_FAULT_DIR_TX, frame, len);
    }
}

/* ---- local memory through the WQE's SGEs ------------------------------ */

static uint32_t vrnic_swqe_nsge(const VrnicSwqe *s)
{
    return (s->hdr.flags & VRNIC_WQE_FLAG_INLINE) ? 0 : s->hdr.num_sge;
}

static struct vrnic_sge vrnic_swqe_sge(const VrnicSwqe *s, uint32_t i)
{
    struct vrnic_sge g;

    memcpy(&g, s->raw + s->data_off + i * sizeof(g), sizeof(g));
    return g;
}

/*
 * Copy [off, off + len) of the message from (write = false) or to the
 * local SGEs. The keys were checked when the WQE started; they are looked
 * up again, so an MR deregistered meanwhile fails the access.
 */
static bool vrnic_sge_rw(VrnicCore *core, const VrnicQp *qp,
                         const VrnicSwqe *s, uint64_t off, uint8_t *buf,
                         uint32_t len, bool write)
{
    uint32_t n = vrnic_swqe_nsge(s);

    if (s->hdr.flags & VRNIC_WQE_FLAG_INLINE) {
        memcpy(buf, s->raw + s->data_off + off, len);
        return true;
    }
    for (uint32_t i = 0; i < n && len; i++) {
        struct vrnic_sge g = vrnic_swqe_sge(s, i);
        uint32_t glen = le32_to_cpu(g.length);
        uint32_t chunk;
        VrnicMr *mr;

        if (off >= glen) {
            off -= glen;
            continue;
        }
        chunk = MIN(glen - off, len);
        if (vrnic_mr_check(core, le32_to_cpu(g.lkey), qp->pdn,
                           write ? VRNIC_ACCESS_LOCAL_WRITE : 0,
                           le64_to_cpu(g.addr) + off, chunk, &mr) ||
            !vrnic_mr_rw(core, mr, le64_to_cpu(g.addr) + off, buf, chunk,
                         write)) {
            return false;
        }
        buf += chunk;
        len -= chunk;
        off = 0;
    }
    return len == 0;
}

/* ---- completions --------------------------------------------------------- */

static bool vrnic_op_is_rd(uint8_t op)
{
    return op == VRNIC_WQE_OP_RDMA_READ || op == VRNIC_WQE_OP_ATOMIC_CMP_SWP ||
           op == VRNIC_WQE_OP_ATOMIC_FETCH_ADD;
}

/* ---- recovery: timers, go-back-N ------------------------------------------ */

static void vrnic_tx_complete(VrnicCore *core, uint32_t qpn, VrnicQp *qp);

static int64_t vrnic_now(VrnicCore *core)
{
    return core->ops->clock_ns(core->opaque);
}

/* Local ACK timeout: 4.096 us * 2^timeout; timeout 0 means no timer. */
static int64_t vrnic_tx_rto_ns(const VrnicQp *qp)
{
    return qp->attr.timeout ? 4096ll << MIN(qp->attr.timeout, 31) : 0;
}

/* IBTA 9.7.5.2.8: the RNR NAK timer field, in units of 10 us. */
static int64_t vrnic_rnr_ns(uint8_t code)
{
    static const uint32_t t10us[32] = {
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
        384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
        16384, 24576, 32768, 49152,
    };

    return t10us[code & 31] * 10000ll;
}

/*
 * Window slot i (sq.ci <= i <= next) holds a started WQE: every index
 * before next does; next itself only when it has started and is not the
 * slot of WQE next - VRNIC_TX_WINDOW (a full window) or past sq.pi.
 */
static VrnicSwqe *vrnic_tx_slot(VrnicQp *qp, uint16_t i)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = &x->win[i % VRNIC_TX_WINDOW];

    if (i == x->next &&
        (i == qp->sq.pi || (uint16_t)(i - qp->sq.ci) >= VRNIC_TX_WINDOW ||
         !s->started)) {
        return NULL;
    }
    return s;
}

/* Request packets sent and not yet answered (RC). */
static bool vrnic_tx_outstanding(VrnicQp *qp)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && !s->done && s->sent) {
            return true;
        }
    }
    return false;
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
static void vrnic_tx_timer_restart(VrnicCore *core, VrnicQp *qp)
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
static void vrnic_tx_progress(VrnicCore *core, VrnicQp *qp)
{
    VrnicXport *x = qp->x;

    x->retries = 0;
    x->rnr_retries = 0;
    x->gbn_valid = false;
    x->early_count = 0;
    vrnic_tx_rtt_sample(core, x);
    vrnic_tx_timer_restart(core, qp);
}

/* Where a READ/atomic is (re)requested from: READs ask for what is missing. */
static uint32_t vrnic_tx_rd_psn(const VrnicCore *core, const VrnicQp *qp,
                                const VrnicSwqe *s)
{
    if (s->hdr.opcode != VRNIC_WQE_OP_RDMA_READ) {
        return s->first_psn;
    }
    return vrnic_psn_add(s->first_psn, s->rcvd / s->pmtu);
}

/*
 * Where the data a READ (re)request asks for ends: after the last response
 * not placed yet (whether lost or still on its way) - the ones placed at
 * the end need not come again; the whole rest of the READ if it runs past
 * what can be placed.
 */
static uint32_t vrnic_tx_rd_ask_end(uint32_t pmtu, const VrnicSwqe *s)
{
    uint32_t pos = s->rcvd / pmtu;
    uint32_t past = vrnic_read_psns(s->len, pmtu) - pos - 1;

    if (past > VRNIC_TX_RD_AHEAD) {
        return s->len;
    }
    /* past: PSNs after the first missing one; drop placed ones at the end. */
    while (past && (s->rd_ahead >> (past - 1)) & 1) {
        past--;
    }
    return MIN(s->len, (pos + past + 1) * pmtu);
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
static void vrnic_tx_go_back(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
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
    /* A full go-back resends the hole too; one READ/atomic asked again
     * leaves a SEND/WRITE hole resend as it is. */
    if (!single) {
        x->hole_mode = x->hole_pending = false;
    }
    vrnic_tx_resend_from(core, qpn, qp, psn, why);
}

/* Retries used up: the oldest unfinished WQE fails, the QP goes to ERR. */
static void vrnic_tx_exhausted(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
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
static void vrnic_tx_retry(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                           uint32_t psn, bool single, const char *why)
{
    if (vrnic_tx_spend_retry(core, qpn, qp, psn)) {
        vrnic_tx_go_back(core, qpn, qp, psn, single, why);
    }
}

static VrnicSwqe *vrnic_tx_find_psn(VrnicQp *qp, uint32_t psn);

/*
 * Send again only the packet at psn, with AckReq (vrnic_tx_process), and
 * wait for the answer: the responder holds what came after a gap
 * (vrnic_rx.c), so its answer to the hole says how far it now has
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
static void vrnic_tx_retry_hole(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                uint32_t psn)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = vrnic_tx_find_psn(qp, psn);

    /* A copy (duplicated, or late) of a NAK already answered, or one
     * for no packet sent: nothing to resend, no retry spent. */
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
static void vrnic_tx_hole_answered(VrnicCore *core, uint32_t qpn,
                                   VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    uint32_t next = vrnic_psn_add(x->acked_psn, 1);
    VrnicSwqe *s;

    if (!x->hole_mode || x->hole_pending ||
        vrnic_psn_diff(x->acked_psn, x->hole_psn) < 0) {
        return;
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
    x->hole_mode = false;
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

        if (!qp->live || qp->type != VRNIC_QP_TYPE_RC ||
            (qp->state != VRNIC_QPS_RTS && qp->state != VRNIC_QPS_SQD)) {
            continue;
        }
        if (x->rnr_due && x->rnr_due <= now) {
            x->rnr_due = 0;
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

/* Complete, in SQ order, every WQE that is done (or, for RC SEND/WRITE,
 * covered by the newest ACK). An error status completes and moves the QP
 * to ERR, which flushes the rest. */
static void vrnic_tx_complete(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
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
            if (e.status == VRNIC_WC_SUCCESS &&
                s->hdr.opcode == VRNIC_WQE_OP_RDMA_READ) {
                e.byte_len = cpu_to_le32(s->len);
            } else if (e.status == VRNIC_WC_SUCCESS &&
                       vrnic_op_is_rd(s->hdr.opcode)) {
                e.byte_len = cpu_to_le32(8);
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

/* ---- starting a WQE ------------------------------------------------------ */

/* Operations on the key table, executed as the SQ reaches them. */
static bool vrnic_op_is_local(uint8_t op)
{
    return op == VRNIC_WQE_OP_BIND_MW || op == VRNIC_WQE_OP_LOCAL_INV ||
           op == VRNIC_WQE_OP_REG_MR;
}

static bool vrnic_tx_op_ok(uint8_t type, uint8_t op)
{
    switch (type) {
    case VRNIC_QP_TYPE_RC:
        return op <= VRNIC_WQE_OP_REG_MR;
    case VRNIC_QP_TYPE_UC:
        return op == VRNIC_WQE_OP_SEND || op == VRNIC_WQE_OP_SEND_IMM ||
               op == VRNIC_WQE_OP_RDMA_WRITE ||
               op == VRNIC_WQE_OP_RDMA_WRITE_IMM ||
               vrnic_op_is_local(op);
    default:
        return op == VRNIC_WQE_OP_SEND || op == VRNIC_WQE_OP_SEND_IMM;
    }
}

static bool vrnic_qp_is_ud(const VrnicQp *qp)
{
    return qp->type == VRNIC_QP_TYPE_UD || qp->type == VRNIC_QP_TYPE_GSI;
}

static VrnicTxRes vrnic_tx_fail(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                VrnicSwqe *s, uint8_t status, const char *why)
{
    VRNIC_GUEST_ERR(core, vrnic_err_wqe, "qpn %u WQE %u: %s", qpn,
                    qp->x->next, why);
    s->started = true;
    s->done = true;
    s->status = status;
    s->npkts = s->sent = 0;
    return VRNIC_TX_FAIL;
}

/*
 * BIND_MW, LOCAL_INV and REG_MR change the device's key table as the SQ
 * reaches them and send nothing: done at once (no PSN), they still
 * complete in SQ order behind the WQEs before them.
 */
static VrnicTxRes vrnic_tx_local(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 VrnicSwqe *s)
{
    const char *why;
    uint8_t status;

    if (s->hdr.opcode == VRNIC_WQE_OP_BIND_MW) {
        struct vrnic_bind_mw_wqe w;

        memcpy(&w, s->raw, sizeof(w));
        if (!vrnic_mw_bind(core, qpn, qp, &w, &why)) {
            return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_MW_BIND_ERR, why);
        }
    } else if (s->hdr.opcode == VRNIC_WQE_OP_REG_MR) {
        struct vrnic_reg_mr_wqe w;

        memcpy(&w, s->raw, sizeof(w));
        if (!vrnic_frmr_register(core, qpn, qp, &w, &status, &why)) {
            return vrnic_tx_fail(core, qpn, qp, s, status, why);
        }
    } else if (!vrnic_key_invalidate(core, qpn, qp->pdn,
                                     le32_to_cpu(s->hdr.imm_data), false)) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                             "LOCAL_INV: no fast-registration MR or bound "
                             "type 2 window of the PD");
    }
    s->len = 0;
    s->npkts = 0;
    s->first_psn = qp->x->psn;
    s->last_psn = vrnic_psn_add(qp->x->psn, VRNIC_IB_PSN_MASK);
    s->started = true;
    s->done = true;
    s->status = VRNIC_WC_SUCCESS;
    trace_vrnic_tx_wqe(qpn, qp->x->next, s->hdr.opcode, 0, s->first_psn);
    return VRNIC_TX_DONE;
}

static VrnicTxRes vrnic_tx_start(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 VrnicSwqe *s)
{
    VrnicXport *x = qp->x;
    uint32_t size = 1u << qp->sq.wqe_shift;
    uint64_t off = qp->sq.offset +
                   ((uint64_t)(x->next & ((1u << qp->sq.log_depth) - 1)) <<
                    qp->sq.wqe_shift);
    uint32_t pmtu = vrnic_xport_pmtu(core, qp);
    uint64_t len = 0;
    uint8_t op;
    bool rd;

    if (!vrnic_mem_read_at(core, &qp->mem, off, s->raw, size)) {
        vrnic_qp_fatal(core, qpn, "send WQE unreadable");
        return VRNIC_TX_GONE;
    }
    op = s->hdr.opcode;
    rd = vrnic_op_is_rd(op);
    s->rcvd = s->sent = 0;
    s->rd_ahead = 0;
    s->rd_end = s->len;
    s->data_off = sizeof(struct vrnic_send_wqe) +
                  (vrnic_qp_is_ud(qp) ? VRNIC_UD_SEG_SIZE : 0);
    if (!vrnic_tx_op_ok(qp->type, op)) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                             "opcode not allowed for the QP type");
    }
    /* READ/atomic are bounded by max_rd_atomic and wait for a fence. */
    if (rd && x->rd_out >= MAX(qp->attr.max_rd_atomic, 1)) {
        return VRNIC_TX_STOP;
    }
    if ((s->hdr.flags & VRNIC_WQE_FLAG_FENCE) && x->rd_out) {
        return VRNIC_TX_STOP;
    }
    /*
     * A LOCAL_INV waits for every earlier WQE to be answered: a resend of
     * one of them reads its SGEs again, through keys it may invalidate.
     */
    if (op == VRNIC_WQE_OP_LOCAL_INV && vrnic_tx_outstanding(qp)) {
        return VRNIC_TX_STOP;
    }
    if (vrnic_op_is_local(op)) {
        return vrnic_tx_local(core, qpn, qp, s);
    }
    if (s->hdr.flags & VRNIC_WQE_FLAG_INLINE) {
        len = le32_to_cpu(s->hdr.inline_len);
        if (rd || len > qp->max_inline || s->data_off + len > size) {
            return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                                 "bad inline data");
        }
    } else {
        if (s->hdr.num_sge > qp->max_send_sge ||
            s->data_off + s->hdr.num_sge * sizeof(struct vrnic_sge) > size) {
            return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                                 "num_sge");
        }
        for (uint32_t i = 0; i < s->hdr.num_sge; i++) {
            struct vrnic_sge g = vrnic_swqe_sge(s, i);
            uint32_t glen = le32_to_cpu(g.length);

            if (glen && vrnic_mr_check(core, le32_to_cpu(g.lkey), qp->pdn,
                                       rd ? VRNIC_ACCESS_LOCAL_WRITE : 0,
                                       le64_to_cpu(g.addr), glen, NULL)) {
                return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_PROT_ERR,
                                     "local SGE key/access/bounds");
            }
            len += glen;
        }
    }
    if (len > (1ull << 31) || (vrnic_qp_is_ud(qp) && len > pmtu)) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_LEN_ERR,
                             "message too long");
    }
    if ((op == VRNIC_WQE_OP_ATOMIC_CMP_SWP ||
         op == VRNIC_WQE_OP_ATOMIC_FETCH_ADD) && len < 8) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_LEN_ERR,
                             "atomic needs 8 bytes of local SGE");
    }
    s->len = len;
    s->pmtu = pmtu;
    if (op == VRNIC_WQE_OP_RDMA_READ) {
        s->npkts = 1;
        s->first_psn = x->psn;
        x->psn = vrnic_psn_add(x->psn, vrnic_read_psns(len, pmtu));
    } else {
        s->npkts = rd ? 1 : MAX(1, DIV_ROUND_UP(len, pmtu));
        s->first_psn = x->psn;
        x->psn = vrnic_psn_add(x->psn, s->npkts);
    }
    s->last_psn = vrnic_psn_add(x->psn, VRNIC_IB_PSN_MASK);
    if (rd) {
        x->rd_out++;
    }
    s->started = true;
    s->done = false;
    trace_vrnic_tx_wqe(qpn, x->next, op, s->len, s->first_psn);
    return VRNIC_TX_DONE;
}

/* ---- packets --------------------------------------------------------------- */

static uint8_t vrnic_tx_opcode(const VrnicQp *qp, uint8_t op, bool first,
                               bool last)
{
    uint8_t tr = qp->type == VRNIC_QP_TYPE_RC ? VRNIC_IB_RC :
                 qp->type == VRNIC_QP_TYPE_UC ? VRNIC_IB_UC : VRNIC_IB_UD;
    uint8_t o;

    switch (op) {
    case VRNIC_WQE_OP_SEND:
    case VRNIC_WQE_OP_SEND_IMM:
    case VRNIC_WQE_OP_SEND_INV:
        if (!last) {
            o = first ? VRNIC_IB_SEND_FIRST : VRNIC_IB_SEND_MIDDLE;
        } else if (op == VRNIC_WQE_OP_SEND_IMM) {
            o = first ? VRNIC_IB_SEND_ONLY_IMM : VRNIC_IB_SEND_LAST_IMM;
        } else if (op == VRNIC_WQE_OP_SEND_INV) {
            o = first ? VRNIC_IB_SEND_ONLY_INV : VRNIC_IB_SEND_LAST_INV;
        } else {
            o = first ? VRNIC_IB_SEND_ONLY : VRNIC_IB_SEND_LAST;
        }
        break;
    case VRNIC_WQE_OP_RDMA_WRITE:
    case VRNIC_WQE_OP_RDMA_WRITE_IMM:
        if (!last) {
            o = first ? VRNIC_IB_WRITE_FIRST : VRNIC_IB_WRITE_MIDDLE;
        } else if (op == VRNIC_WQE_OP_RDMA_WRITE_IMM) {
            o = first ? VRNIC_IB_WRITE_ONLY_IMM : VRNIC_IB_WRITE_LAST_IMM;
        } else {
            o = first ? VRNIC_IB_WRITE_ONLY : VRNIC_IB_WRITE_LAST;
        }
        break;
    case VRNIC_WQE_OP_RDMA_READ:
        o = VRNIC_IB_READ_REQ;
        break;
    case VRNIC_WQE_OP_ATOMIC_CMP_SWP:
        o = VRNIC_IB_CMP_SWAP;
        break;
    default:
        o = VRNIC_IB_FETCH_ADD;
        break;
    }
    return tr | o;
}

static VrnicTxRes vrnic_tx_send(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                VrnicSwqe *s, unsigned *budget)
{
    /*
     * Segmented for the path MTU of its start: PSNs and packet count were
     * fixed then. A UD datagram that no longer fits the port (the MTU went
     * down while it waited for the wire) fails as too long; it never goes
     * out cut short.
     */
    uint32_t pmtu = s->pmtu;
    uint8_t op = s->hdr.opcode;
    const struct vrnic_av *av = &qp->attr.av;
    uint32_t dqpn = le32_to_cpu(qp->attr.dest_qpn);
    uint32_t qkey = 0;
    uint8_t frame[VRNIC_XPORT_FRAME];
    VrnicPktAddr a;
    bool loop, mcast = false;
    uint32_t mc_local;

    if (vrnic_qp_is_ud(qp)) {
        struct vrnic_ud_dest d;

        av = (const struct vrnic_av *)(s->raw + sizeof(struct vrnic_send_wqe));
        memcpy(&d, s->raw + sizeof(struct vrnic_send_wqe) +
               sizeof(struct vrnic_av), sizeof(d));
        dqpn = le32_to_cpu(d.dest_qpn) & VRNIC_IB_QPN_MASK;
        qkey = le32_to_cpu(d.qkey);
        if (qkey & 0x80000000u) {
            qkey = le32_to_cpu(qp->attr.qkey);
        }
        /* To a multicast group: DestQP 0xFFFFFF, whatever the WQE says. */
        mcast = vrnic_gid_is_mcast(av->dgid);
        if (mcast) {
            dqpn = VRNIC_MCAST_QPN;
        }
    }
    if (vrnic_qp_is_ud(qp) && !s->sent && s->len > vrnic_xport_pmtu(core, qp)) {
        /* Not a guest error: the driver may lower the MTU at any time. */
        trace_vrnic_tx_drop(qpn, s->first_psn, "datagram longer than the "
                            "port's MTU now");
        s->done = true;
        s->status = VRNIC_WC_LOC_LEN_ERR;
        s->npkts = 0;
        return VRNIC_TX_FAIL;
    }
    while (s->sent < s->npkts) {
        uint32_t off = s->sent * pmtu;
        uint32_t plen = vrnic_op_is_rd(op) ? 0 : MIN(pmtu, s->len - off);
        bool first = s->sent == 0, last = s->sent + 1 == s->npkts;
        bool rc = qp->type == VRNIC_QP_TYPE_RC;
        uint32_t psn = vrnic_op_is_rd(op) ? vrnic_tx_rd_psn(core, qp, s) :
                       vrnic_psn_add(s->first_psn, s->sent);
        VrnicPktHdrs h;
        size_t hoff, flen;

        if (s->done) {
            return VRNIC_TX_DONE;   /* answered while waiting to resend */
        }
        if (rc && !vrnic_op_is_rd(op) &&
            vrnic_psn_diff(psn, qp->x->acked_psn) <= 0) {
            s->sent++;              /* acknowledged meanwhile: not resent */
            continue;
        }
        if (!*budget) {
            return VRNIC_TX_MORE;
        }
        /*
         * Bounded new PSNs in flight: wait for ACKs (they re-kick). A
         * resend (below snd_max) never waits. While a hole is resent, no
         * new PSN goes out either: a responder that holds nothing past a
         * gap (rdma_rxe) would take it for a new gap and NAK again.
         */
        if (rc && vrnic_psn_diff(psn, qp->x->snd_max) >= 0 &&
            (qp->x->hole_mode || vrnic_psn_diff(psn, qp->x->acked_psn) >
                                 (int32_t)VRNIC_TX_PKT_WINDOW)) {
            return VRNIC_TX_STOP;
        }
        if (!vrnic_xport_addr(core, av, qpn, dqpn, &a, &loop)) {
            if (s->sent) {
                /* Half a message is out: a device-level QP error. */
                s->done = true;
                s->status = VRNIC_WC_LOC_QP_OP_ERR;
                return VRNIC_TX_FAIL;
            }
            return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                                 "address vector: bad source GID");
        }
        /*
         * Multicast goes on the wire (a group GID is never one of ours)
         * and, when QPs here are attached to the group, to them as well
         * through the loopback queue: both must have room.
         */
        mc_local = mcast ? vrnic_mcast_members(core, av->dgid, NULL) : 0;
        if (mcast) {
            loop = false;
        }
        if (!vrnic_xport_can_send(core, loop) ||
            (mc_local && !vrnic_xport_can_send(core, true))) {
            core->ip_id--;
            return VRNIC_TX_MORE;
        }
        memset(&h, 0, sizeof(h));
        h.bth.opcode = vrnic_tx_opcode(qp, op, first, last);
        h.bth.pkey = VRNIC_PKEY_DEFAULT;
        h.bth.dqpn = dqpn;
        h.bth.psn = psn;
        /* AckReq on the last packet and every 16th PSN, so a long message
         * gets ACKs before the packet window closes. */
        h.bth.ack_req = rc && (last || (psn % VRNIC_TX_ACKREQ_EVERY) ==
                                       VRNIC_TX_ACKREQ_EVERY - 1 ||
                               (qp->x->hole_pending &&
                                psn == qp->x->hole_psn));
        h.bth.se = last && (s->hdr.flags & VRNIC_WQE_FLAG_SOLICITED) &&
                   (op == VRNIC_WQE_OP_SEND || op == VRNIC_WQE_OP_SEND_IMM ||
                    op == VRNIC_WQE_OP_SEND_INV ||
                    op == VRNIC_WQE_OP_RDMA_WRITE_IMM);
        h.deth.qkey = qkey;
        h.deth.sqpn = qpn;
        h.reth.va = le64_to_cpu(s->hdr.remote_addr);
        h.reth.rkey = le32_to_cpu(s->hdr.rkey);
        h.reth.len = s->len;
        if (op == VRNIC_WQE_OP_RDMA_READ) {
            /* A resent READ asks only for what has not arrived. */
            s->rd_end = vrnic_tx_rd_ask_end(pmtu, s);
            h.reth.va += s->rcvd;
            h.reth.len = s->rd_end - s->rcvd;
        }
        h.atomic.va = h.reth.va;
        h.atomic.rkey = h.reth.rkey;
        if (op == VRNIC_WQE_OP_ATOMIC_CMP_SWP) {
            h.atomic.compare = le64_to_cpu(s->hdr.compare_add);
            h.atomic.swap_add = le64_to_cpu(s->hdr.swap);
        } else {
            h.atomic.swap_add = le64_to_cpu(s->hdr.compare_add);
        }
        h.imm = vrnic_be32(s->hdr.imm_data);    /* wire bytes as stored */
        h.ieth_rkey = le32_to_cpu(s->hdr.imm_data);
        hoff = vrnic_pkt_build_hdrs(frame, sizeof(frame), &a, &h, plen);
        if (!hoff) {
            return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                                 "cannot build the packet");
        }
        if (plen && !vrnic_sge_rw(core, qp, s, off, frame + hoff, plen,
                                  false)) {
            s->done = true;
            s->status = VRNIC_WC_LOC_PROT_ERR;
            return VRNIC_TX_FAIL;
        }
        flen = vrnic_pkt_finish(frame, sizeof(frame));
        if (rc && qp->x->gbn_valid && psn == qp->x->gbn_psn) {
            qp->x->gbn_resent = true;
        }
        if (rc && vrnic_op_is_rd(op)) {
            s->rd_after = qp->x->snd_max;
        }
        trace_vrnic_tx_pkt(qpn, h.bth.opcode, h.bth.psn, plen, loop);
        vrnic_xport_output(core, qpn, frame, flen, loop);
        if (mc_local) {
            trace_vrnic_mcast_loop(qpn, ldq_be_p(av->dgid),
                                   ldq_be_p(av->dgid + 8), mc_local);
            vrnic_loop_put(core, qpn, frame, flen);
        }
        s->sent++;
        (*budget)--;
        if (rc) {
            VrnicXport *x = qp->x;
            uint32_t end = vrnic_op_is_rd(op) ? vrnic_psn_add(s->last_psn, 1) :
                           vrnic_psn_add(psn, 1);

            if (vrnic_psn_diff(psn, x->snd_max) < 0) {
                core->stats.port[VRNIC_PORT_STAT_RETRANSMITS]++;
            } else if (h.bth.ack_req && !x->rtt_timing) {
                x->rtt_timing = true;
                x->rtt_sent = vrnic_now(core);
                x->rtt_psn = psn;   /* a READ: its first response */
            }
            if (vrnic_psn_diff(end, x->snd_max) > 0) {
                x->snd_max = end;
            }
            if (!x->rto_due) {
                vrnic_tx_timer_restart(core, qp);
            }
        }
    }
    return VRNIC_TX_DONE;
}

/* Requester: start and send WQEs from x->next. */
static void vrnic_tx_process(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    unsigned budget = VRNIC_TX_BUDGET;

    /* Waiting out an RNR NAK: the timer re-kicks. */
    if (x->rnr_due) {
        return;
    }
    /* The one packet the responder misses, alone. */
    if (x->hole_pending) {
        VrnicSwqe *s = vrnic_tx_find_psn(qp, x->hole_psn);
        unsigned one = 1;

        /* An ACK past a READ/atomic does not answer it. */
        if (s && !s->done && (vrnic_op_is_rd(s->hdr.opcode) ||
                              vrnic_psn_diff(x->hole_psn, x->acked_psn) > 0)) {
            uint32_t sent = s->sent;
            VrnicTxRes r;

            s->sent = vrnic_op_is_rd(s->hdr.opcode) ? 0 :
                      vrnic_psn_diff(x->hole_psn, s->first_psn);
            r = vrnic_tx_send(core, qpn, qp, s, &one);
            s->sent = MAX(sent, s->sent);
            if (r == VRNIC_TX_FAIL || r == VRNIC_TX_GONE) {
                x->hole_pending = x->hole_mode = false;
                /* The WQE at the cursor (not all sent yet) is done too. */
                if (vrnic_tx_slot(qp, x->next) == s) {
                    x->next++;
                }
                vrnic_tx_complete(core, qpn, qp);   /* in order, then ERR */
                return;
            }
            if (one) {
                vrnic_qp_set_pending(core, qp, true);  /* no room yet */
                return;
            }
            x->hole_pending = false;
        } else {
            /* Answered before it went out again (it was only late). */
            x->hole_pending = false;
            vrnic_tx_hole_answered(core, qpn, qp);
        }
    }
    /* READ/atomics behind the cursor asked again (implied NAK). */
    for (uint16_t i = qp->sq.ci; x->resend && i != x->next; i++) {
        VrnicSwqe *s = &x->win[i % VRNIC_TX_WINDOW];
        VrnicTxRes r;

        if (s->done || s->sent == s->npkts) {
            continue;
        }
        r = vrnic_tx_send(core, qpn, qp, s, &budget);
        if (r == VRNIC_TX_MORE) {
            vrnic_qp_set_pending(core, qp, true);
            return;
        }
        if (r != VRNIC_TX_DONE) {
            return;
        }
    }
    x->resend = false;
    while (x->next != qp->sq.pi) {
        VrnicSwqe *s = &x->win[x->next % VRNIC_TX_WINDOW];
        VrnicTxRes r = VRNIC_TX_DONE;

        /*
         * Window full: the slot still holds WQE next - VRNIC_TX_WINDOW,
         * in flight (started, all sent). It is not the WQE at next; wait
         * for completions (they re-kick). The window check comes before
         * looking at the slot's state.
         */
        if ((uint16_t)(x->next - qp->sq.ci) >= VRNIC_TX_WINDOW) {
            return;
        }
        if (!s->started) {
            /* New WQEs start in RTS only; SQD finishes the one in flight. */
            if (qp->state != VRNIC_QPS_RTS) {
                return;
            }
            r = vrnic_tx_start(core, qpn, qp, s);
        }
        if (r == VRNIC_TX_DONE) {
            r = vrnic_tx_send(core, qpn, qp, s, &budget);
        }
        switch (r) {
        case VRNIC_TX_DONE:
            x->next++;
            if (qp->type != VRNIC_QP_TYPE_RC) {
                s->done = true;     /* UD/UC: complete once sent */
                s->status = VRNIC_WC_SUCCESS;
            }
            vrnic_tx_complete(core, qpn, qp);
            if (qp->state != VRNIC_QPS_RTS && qp->state != VRNIC_QPS_SQD) {
                return;
            }
            break;
        case VRNIC_TX_FAIL:
            /* Completes in order, then ERR; nothing after it starts. */
            x->next++;
            vrnic_tx_complete(core, qpn, qp);
            return;
        case VRNIC_TX_MORE:
            vrnic_qp_set_pending(core, qp, true);
            return;
        case VRNIC_TX_STOP:
        case VRNIC_TX_GONE:
            return;
        }
    }
}

/* ---- responses from the responder --------------------------------------- */

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
 * The started WQE whose PSN range holds psn, or NULL. The WQE at next
 * counts: after a go-back it may not be resent yet, and an answer to its
 * earlier transmission is as good as one to the resend.
 */
static VrnicSwqe *vrnic_tx_find_psn(VrnicQp *qp, uint32_t psn)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && vrnic_psn_diff(psn, s->first_psn) >= 0 &&
            vrnic_psn_diff(psn, s->last_psn) <= 0) {
            return s;
        }
    }
    return NULL;
}

/* The oldest READ/atomic not yet answered (the WQE at next included). */
static VrnicSwqe *vrnic_tx_oldest_rd(VrnicQp *qp)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && !s->done && vrnic_op_is_rd(s->hdr.opcode)) {
            return s;
        }
    }
    return NULL;
}

/* Everything up to psn is acknowledged (never moves backwards); true
 * when that is news. */
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
static const char *vrnic_tx_rd_place(VrnicCore *core, VrnicQp *qp,
                                     VrnicSwqe *s, uint32_t psn,
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
        /* Once per copy of the stream: the response just past the
         * limit (if that one is lost, the early timer asks). */
        *lost = ahead == VRNIC_TX_RD_AHEAD + 1;
        return "READ response too far past a missing one";
    }
    if (ahead && (s->rd_ahead >> (ahead - 1)) & 1) {
        return "READ response placed already";
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

void vrnic_tx_response(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                       const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    uint8_t op = pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK;
    uint8_t syn = pkt->hdr.aeth.syndrome;
    uint8_t type = VRNIC_FIELD_GET(VRNIC_AETH_TYPE_MASK, syn);
    const char *drop = NULL;
    VrnicSwqe *s;

    if (pkt->op->hdrs & VRNIC_HDR_AETH) {
        trace_vrnic_tx_ack(qpn, psn, syn, pkt->hdr.aeth.msn);
    }
    if (op == VRNIC_IB_ACK) {
        /* Every ACK/NAK acknowledges the PSNs before its own. */
        uint32_t before = vrnic_psn_add(psn, VRNIC_IB_PSN_MASK);

        if (type != VRNIC_AETH_ACK) {
            core->stats.port[VRNIC_PORT_STAT_NAKS_RCVD]++;
        }
        if (type == VRNIC_AETH_ACK) {
            if (vrnic_tx_ack_to(x, psn)) {
                vrnic_tx_progress(core, qp);
            }
            /* READ responses may have moved acked_psn past the hole. */
            vrnic_tx_hole_answered(core, qpn, qp);
            vrnic_tx_implied_nak(core, qpn, qp, psn);
        } else if (type == VRNIC_AETH_RNR_NAK) {
            core->stats.port[VRNIC_PORT_STAT_RNR_NAKS_RCVD]++;
            if (vrnic_tx_ack_to(x, before)) {
                vrnic_tx_progress(core, qp);
            }
            s = vrnic_tx_find_psn(qp, psn);
            if (!s || s->done) {
                drop = "RNR NAK for no request in flight";
            } else if (x->rnr_due) {
                /* A duplicate or late RNR NAK: already waiting. */
            } else if (qp->attr.rnr_retry != 7 &&
                       x->rnr_retries >= qp->attr.rnr_retry) {
                vrnic_tx_exhausted(core, qpn, qp, VRNIC_WC_RNR_RETRY_EXC_ERR);
            } else {
                /* Wait the responder's min_rnr_timer, then resend. */
                int64_t wait = vrnic_rnr_ns(
                    VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn));

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
            }
        } else if (type == VRNIC_AETH_NAK &&
                   VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn) ==
                   VRNIC_NAK_PSN_SEQ) {
            /* The responder expects psn: resend from there at once. */
            core->stats.port[VRNIC_PORT_STAT_SEQ_NAKS_RCVD]++;
            if (vrnic_tx_ack_to(x, before)) {
                vrnic_tx_progress(core, qp);
            }
            if (vrnic_tx_outstanding(qp)) {
                vrnic_tx_retry_hole(core, qpn, qp, psn);
            }
        } else if (type == VRNIC_AETH_NAK) {
            s = vrnic_tx_find_psn(qp, psn);
            if (!s) {
                drop = "NAK for no request in flight";
            } else {
                vrnic_tx_ack_to(x, vrnic_psn_add(psn, VRNIC_IB_PSN_MASK));
                /* Earlier READ/atomics unanswered: lost with the error. */
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
                s->status = vrnic_nak_status(
                    VRNIC_FIELD_GET(VRNIC_AETH_VALUE_MASK, syn));
            }
        } else {
            drop = "reserved AETH syndrome";
        }
    } else if (op == VRNIC_IB_ATOMIC_ACK) {
        s = vrnic_tx_oldest_rd(qp);
        if (!s || s->hdr.opcode == VRNIC_WQE_OP_RDMA_READ ||
            s->first_psn != psn) {
            drop = "ATOMIC ACK matching no atomic";
            vrnic_tx_implied_nak(core, qpn, qp, psn);
        } else {
            uint64_t orig = cpu_to_le64(pkt->hdr.atomic_orig);

            vrnic_tx_ack_to(x, psn);
            vrnic_tx_progress(core, qp);
            s->done = true;
            s->status = vrnic_sge_rw(core, qp, s, 0, (uint8_t *)&orig, 8,
                                     true) ? VRNIC_WC_SUCCESS :
                                             VRNIC_WC_LOC_PROT_ERR;
        }
    } else {
        /* READ RESPONSE FIRST/MIDDLE/LAST/ONLY */
        bool lost = false;

        s = vrnic_tx_find_psn(qp, psn);
        if (!s || s->done || s->hdr.opcode != VRNIC_WQE_OP_RDMA_READ) {
            drop = "READ response matching no READ";
            vrnic_tx_implied_nak(core, qpn, qp, psn);
        } else {
            drop = vrnic_tx_rd_place(core, qp, s, psn,
                                     (uint8_t *)frame + pkt->payload_off,
                                     pkt->payload_len, &lost);
        }
        if (!drop) {
            vrnic_tx_implied_nak(core, qpn, qp, psn);
            /* A response answers every PSN up to its own. */
            vrnic_tx_ack_to(x, psn);
            vrnic_tx_progress(core, qp);
        }
        if (lost) {
            vrnic_tx_retry(core, qpn, qp, vrnic_tx_rd_psn(core, qp, s), true,
                           "READ response missing");
        }
    }
    if (drop) {
        core->stats.port[VRNIC_PORT_STAT_RX_RESP_DROP]++;
        trace_vrnic_tx_drop(qpn, psn, drop);
        return;
    }
    vrnic_tx_complete(core, qpn, qp);
    /* Everything sent is answered: no hole is left to wait for. */
    if (x->hole_mode && !x->hole_pending && !vrnic_tx_outstanding(qp)) {
        x->hole_mode = false;
    }
    if (qp->state == VRNIC_QPS_RTS && x->next != qp->sq.pi) {
        vrnic_qp_set_pending(core, qp, true);
    }
}

/* ---- bottom half -------------------------------------------------------- */

void vrnic_xport_process(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    vrnic_resp_drain(core, qpn, qp);
    if (qp->state == VRNIC_QPS_RTS || qp->state == VRNIC_QPS_SQD) {
        vrnic_tx_process(core, qpn, qp);
    }
}
