/*
 * vrnic RoCEv2 requester: send WQEs to packets. Responses are taken by the
 * completer (vrnic_comp.c), losses recovered by vrnic_retry.c; rules
 * common to the transport are in vrnic_xport.h.
 *
 * A QP in RTS with posted sends is marked pending (doorbell, or entering
 * RTS); the queue bottom half then runs vrnic_xport_process(), which for
 * each WQE at the send cursor (x->next, sq.ci <= next <= sq.pi):
 *  1. copies the WQE in once (all later decisions use the copy) and checks
 *     it: opcode allowed for the QP type (RC: all, ATOMIC_WRITE and FLUSH
 *     included; UC: SEND, SEND_IMM,
 *     WRITE, WRITE_IMM; UD/GSI: SEND, SEND_IMM; raw packet: SEND of one
 *     Ethernet frame, 14 bytes to the MTU + 18), inline length <=
 *     max_inline, num_sge <= max_send_sge, both within the WQE size, every
 *     non-empty local SGE with vrnic_mr_check (LOCAL_WRITE for READ and
 *     atomic targets), message <= 2^31 (UD: <= one path MTU), atomics need
 *     8 bytes of local SGE. A WQE failing these is a guest error: it
 *     completes (in order) with LOC_QP_OP_ERR / LOC_PROT_ERR / LOC_LEN_ERR
 *     and the QP moves to ERR.
 *  2. on RC, holds a message that takes a receive WQE until the responder's
 *     end-to-end credits allow it (vrnic_tx_credit_ok);
 *  3. assigns PSNs: SEND/WRITE one per packet (path MTU segments, at least
 *     one), READ ceil(len / PMTU) (at least 1), atomic, ATOMIC WRITE, FLUSH
 *     and UD 1.
 *  4. builds the packets with the codec and sends them: FIRST/MIDDLE/LAST
 *     or ONLY, RETH on WRITE FIRST/ONLY and READ, ImmDt/IETH on the last,
 *     SE on the last packet of a solicited SEND/WRITE_IMM, AckReq on the
 *     last packet of every RC request. P_Key 0xFFFF. Source MAC/GID from
 *     the port (av.sgid_index), destination from the QP's AV (RC/UC) or
 *     the WQE's (UD); UDP source port rdma_get_udp_sport(flow label, qpn,
 *     dest qpn). A raw packet QP's frame goes as it is (vrnic_tx_raw).
 *     UD/GSI: DETH with the WQE's Q_Key (MSB set: the QP's) and
 *     source QP (1 for GSI). A frame to the device's own GID goes to the
 *     loopback queue (vrnic_loop.c) instead of the wire. A UD frame to a
 *     multicast GID has DestQP 0xFFFFFF and goes on the wire, and also to
 *     the loopback queue when QPs of this device are attached to the group
 *     (vrnic_mcast.c).
 * At most VRNIC_TX_BUDGET packets per QP per run; more work re-kicks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

typedef enum VrnicTxRes {
    VRNIC_TX_DONE,      /* all packets of the WQE are out */
    VRNIC_TX_MORE,      /* out of budget or loopback space: run again */
    VRNIC_TX_STOP,      /* cannot go on now (window, rd_atomic, fence) */
    VRNIC_TX_FAIL,      /* the WQE failed (marked done with a status) */
    VRNIC_TX_GONE,      /* the QP left RTS (fatal DMA error) */
} VrnicTxRes;

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
        return op <= VRNIC_WQE_OP_FLUSH;
    case VRNIC_QP_TYPE_XRC_INI:
        /* XRC has no FLUSH or ATOMIC WRITE opcode here (vrnic_pkt.c). */
        return op <= VRNIC_WQE_OP_FLUSH && !vrnic_op_is_rd_acked(op);
    case VRNIC_QP_TYPE_UC:
        return op == VRNIC_WQE_OP_SEND || op == VRNIC_WQE_OP_SEND_IMM ||
               op == VRNIC_WQE_OP_RDMA_WRITE ||
               op == VRNIC_WQE_OP_RDMA_WRITE_IMM ||
               vrnic_op_is_local(op);
    case VRNIC_QP_TYPE_RAW_PACKET:
        return op == VRNIC_WQE_OP_SEND;
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

/*
 * ATOMIC WRITE and FLUSH carry their operands in the WQE and use no local
 * memory: no SGE, no inline data. A FLUSH's placement type must ask for
 * global visibility and/or persistence, its selectivity be a range (at
 * most 2^31 bytes) or the whole MR. The message length is the payload: 8
 * bytes for an ATOMIC WRITE, none for a FLUSH. False when the WQE failed.
 */
static bool vrnic_tx_rd_acked_ok(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 VrnicSwqe *s, uint64_t *len)
{
    uint32_t flush = le64_to_cpu(s->hdr.swap);
    uint32_t type = VRNIC_FIELD_GET(VRNIC_FLUSH_TYPE_MASK, flush);

    if (s->hdr.num_sge || (s->hdr.flags & VRNIC_WQE_FLAG_INLINE)) {
        vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                      "ATOMIC WRITE/FLUSH with SGEs or inline data");
        return false;
    }
    if (s->hdr.opcode == VRNIC_WQE_OP_ATOMIC_WRITE) {
        *len = 8;
        return true;
    }
    if (!type || (le64_to_cpu(s->hdr.swap) & ~(uint64_t)VRNIC_FETH_MASK) ||
        (type & ~(VRNIC_FLUSH_TYPE_GLOBAL | VRNIC_FLUSH_TYPE_PERSISTENT)) ||
        VRNIC_FIELD_GET(VRNIC_FLUSH_SEL_MASK, flush) > VRNIC_FLUSH_SEL_MR) {
        vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                      "FLUSH placement type or selectivity");
        return false;
    }
    if (le64_to_cpu(s->hdr.compare_add) > VRNIC_MAX_MSG) {
        vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_LEN_ERR,
                      "FLUSH longer than 2^31");
        return false;
    }
    *len = 0;
    return true;
}

/*
 * The message length of a send WQE's copy: its inline data, or the sum of
 * its SGEs, each checked against its key (LOCAL_WRITE for a READ/atomic
 * target). False when the WQE failed (vrnic_tx_fail).
 */
static bool vrnic_tx_data_len(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                              VrnicSwqe *s, uint32_t size, uint64_t *len)
{
    bool rd = vrnic_op_is_rd(s->hdr.opcode);

    *len = 0;
    if (vrnic_op_is_rd_acked(s->hdr.opcode)) {
        return vrnic_tx_rd_acked_ok(core, qpn, qp, s, len);
    }
    if (s->hdr.flags & VRNIC_WQE_FLAG_INLINE) {
        *len = le32_to_cpu(s->hdr.inline_len);
        if (rd || *len > qp->max_inline || s->data_off + *len > size) {
            vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                          "bad inline data");
            return false;
        }
        return true;
    }
    if (s->hdr.num_sge > qp->max_send_sge ||
        s->data_off + s->hdr.num_sge * sizeof(struct vrnic_sge) > size) {
        vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR, "num_sge");
        return false;
    }
    for (uint32_t i = 0; i < s->hdr.num_sge; i++) {
        struct vrnic_sge g = vrnic_swqe_sge(s, i);
        uint32_t glen = le32_to_cpu(g.length);

        if (glen && vrnic_mr_check(core, le32_to_cpu(g.lkey), qp->pdn,
                                   rd ? VRNIC_ACCESS_LOCAL_WRITE : 0,
                                   le64_to_cpu(g.addr), glen, NULL)) {
            vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_PROT_ERR,
                          "local SGE key/access/bounds");
            return false;
        }
        *len += glen;
    }
    return true;
}

/* A message that takes a receive WQE at the responder. */
static bool vrnic_op_takes_rwqe(uint8_t op)
{
    return op == VRNIC_WQE_OP_SEND || op == VRNIC_WQE_OP_SEND_IMM ||
           op == VRNIC_WQE_OP_SEND_INV || op == VRNIC_WQE_OP_RDMA_WRITE_IMM;
}

/*
 * IBTA end-to-end flow control. RC messages are numbered as they
 * start (SSN, like the responder's MSN, which counts the messages it
 * finished); an ACK's credit count says how many receive WQEs the
 * responder holds for the messages after its MSN, so a message that takes
 * one may start while its SSN <= lsn = MSN + credits (vrnic_tx_credits).
 * A message that takes none moves the limit along with it. One message
 * past the limit may go to learn the credits again (the limited WQE), once
 * everything before it is answered: at once, unless the responder both
 * RNR NAKed this QP and sent credit updates (ACKs that only move the
 * limit, as vrnic's responder does when its RQ is refilled:
 * vrnic_resp_rq_posted); then it waits for an update, or as long as an RNR
 * NAK would make it wait anyway. A responder that gives no credits (0x1F:
 * an SRQ, rdma_rxe) limits nothing. True when the message may start (its
 * SSN is taken).
 */
static bool vrnic_tx_credit_ok(VrnicCore *core, VrnicQp *qp, uint8_t op)
{
    VrnicXport *x = qp->x;
    uint32_t ssn = vrnic_psn_add(x->ssn, 1);

    if (!x->credits_off && !vrnic_op_takes_rwqe(op)) {
        x->lsn = vrnic_psn_add(x->lsn, 1);
    } else if (!x->credits_off && vrnic_psn_diff(ssn, x->lsn) > 0) {
        bool wait = vrnic_tx_outstanding(qp);   /* their ACKs bring credits */

        if (!wait && x->peer_rnr_ns && x->peer_updates && !x->probe_ok) {
            if (!x->probe_due) {
                x->probe_due = vrnic_now(core) + x->peer_rnr_ns;
                vrnic_core_timer_arm(core, x->probe_due);
            }
            wait = true;
        }
        if (wait) {
            if (!x->credit_wait) {
                x->credit_wait = true;
                core->stats.port[VRNIC_PORT_STAT_CREDIT_WAITS]++;
            }
            return false;
        }
    }
    x->credit_wait = x->probe_ok = false;
    x->probe_due = 0;
    x->ssn = ssn;
    return true;
}

static VrnicTxRes vrnic_tx_start(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 VrnicSwqe *s)
{
    VrnicXport *x = qp->x;
    uint32_t size = 1u << qp->sq.wqe_shift;
    uint64_t off = qp->sq.offset +
                   ((uint64_t)vrnic_idx_slot(x->next, qp->sq.log_depth) <<
                    qp->sq.wqe_shift);
    uint32_t pmtu = vrnic_xport_pmtu(core, qp);
    uint64_t len;
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
    if (!vrnic_tx_data_len(core, qpn, qp, s, size, &len)) {
        return VRNIC_TX_FAIL;
    }
    if (len > (1ull << 31) || (vrnic_qp_is_ud(qp) && len > pmtu)) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_LEN_ERR,
                             "message too long");
    }
    if (qp->type == VRNIC_QP_TYPE_RAW_PACKET &&
        (len < VRNIC_ETH_MIN_FRAME || len > vrnic_eth_max_frame(core))) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_LEN_ERR,
                             "not an Ethernet frame of the port's size");
    }
    if ((op == VRNIC_WQE_OP_ATOMIC_CMP_SWP ||
         op == VRNIC_WQE_OP_ATOMIC_FETCH_ADD) && len < 8) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_LEN_ERR,
                             "atomic needs 8 bytes of local SGE");
    }
    if (vrnic_qp_reliable(qp) && !vrnic_tx_credit_ok(core, qp, op)) {
        return VRNIC_TX_STOP;
    }
    s->len = len;
    s->pmtu = pmtu;
    if (op == VRNIC_WQE_OP_RDMA_READ) {
        s->npkts = 1;
        s->first_psn = x->psn;
        x->psn = vrnic_psn_add(x->psn, vrnic_read_psns(len, pmtu));
    } else {
        /* A raw packet QP's frame leaves whole. */
        s->npkts = rd || qp->type == VRNIC_QP_TYPE_RAW_PACKET ? 1 :
                   MAX(1, DIV_ROUND_UP(len, pmtu));
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

static uint8_t vrnic_tx_opcode(const VrnicQp *qp, uint8_t op, bool first,
                               bool last)
{
    uint8_t tr = vrnic_qp_transport(qp);
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
    case VRNIC_WQE_OP_ATOMIC_WRITE:
        o = VRNIC_IB_ATOMIC_WRITE;
        break;
    case VRNIC_WQE_OP_FLUSH:
        o = VRNIC_IB_FLUSH;
        break;
    default:
        o = VRNIC_IB_FETCH_ADD;
        break;
    }
    return tr | o;
}

/* Where a WQE's packets go: the QP's peer (RC/UC) or the WQE's (UD). */
typedef struct VrnicTxDest {
    const struct vrnic_av *av;
    uint32_t dqpn;
    uint32_t qkey;          /* UD */
    bool mcast;             /* UD to a multicast group */
} VrnicTxDest;

static void vrnic_tx_dest(const VrnicQp *qp, const VrnicSwqe *s,
                          VrnicTxDest *d)
{
    struct vrnic_ud_dest ud;

    d->av = &qp->attr.av;
    d->dqpn = le32_to_cpu(qp->attr.dest_qpn);
    d->qkey = 0;
    d->mcast = false;
    if (!vrnic_qp_is_ud(qp)) {
        return;
    }
    d->av = (const struct vrnic_av *)(s->raw + sizeof(struct vrnic_send_wqe));
    memcpy(&ud, s->raw + sizeof(struct vrnic_send_wqe) +
           sizeof(struct vrnic_av), sizeof(ud));
    d->dqpn = le32_to_cpu(ud.dest_qpn) & VRNIC_IB_QPN_MASK;
    d->qkey = le32_to_cpu(ud.qkey);
    if (d->qkey & 0x80000000u) {
        d->qkey = le32_to_cpu(qp->attr.qkey);
    }
    /* To a multicast group: DestQP 0xFFFFFF, whatever the WQE says. */
    d->mcast = vrnic_gid_is_mcast(d->av->dgid);
    if (d->mcast) {
        d->dqpn = VRNIC_MCAST_QPN;
    }
}

/* The transport headers of request packet psn of s. */
static void vrnic_tx_hdrs(uint32_t qpn, const VrnicQp *qp, VrnicSwqe *s,
                          const VrnicTxDest *d, uint32_t psn, VrnicPktHdrs *h)
{
    uint8_t op = s->hdr.opcode;
    bool rc = vrnic_qp_reliable(qp);
    bool first = s->sent == 0, last = s->sent + 1 == s->npkts;
    uint32_t every;

    memset(h, 0, sizeof(*h));
    h->bth.opcode = vrnic_tx_opcode(qp, op, first, last);
    h->bth.pkey = VRNIC_PKEY_DEFAULT;
    h->bth.dqpn = d->dqpn;
    h->bth.psn = psn;
    /*
     * AckReq on the last packet and four times per packet window, so a
     * long message gets ACKs before the window closes.
     */
    every = vrnic_tx_ackreq_every(s->pmtu);
    h->bth.ack_req = rc && (last || (psn & (every - 1)) == every - 1 ||
                            (qp->x->hole_pending && psn == qp->x->hole_psn));
    h->bth.se = last && (s->hdr.flags & VRNIC_WQE_FLAG_SOLICITED) &&
                (op == VRNIC_WQE_OP_SEND || op == VRNIC_WQE_OP_SEND_IMM ||
                 op == VRNIC_WQE_OP_SEND_INV ||
                 op == VRNIC_WQE_OP_RDMA_WRITE_IMM);
    h->deth.qkey = d->qkey;
    h->deth.sqpn = qpn;
    h->reth.va = le64_to_cpu(s->hdr.remote_addr);
    h->reth.rkey = le32_to_cpu(s->hdr.rkey);
    h->reth.len = s->len;
    if (op == VRNIC_WQE_OP_RDMA_READ) {
        /* A resent READ asks only for what has not arrived. */
        s->rd_end = vrnic_tx_rd_ask_end(s->pmtu, s);
        h->reth.va += s->rcvd;
        h->reth.len = s->rd_end - s->rcvd;
    }
    if (op == VRNIC_WQE_OP_FLUSH) {
        h->reth.len = le64_to_cpu(s->hdr.compare_add);
        h->feth = le64_to_cpu(s->hdr.swap) & VRNIC_FETH_MASK;
    }
    h->atomic.va = h->reth.va;
    h->atomic.rkey = h->reth.rkey;
    if (op == VRNIC_WQE_OP_ATOMIC_CMP_SWP) {
        h->atomic.compare = le64_to_cpu(s->hdr.compare_add);
        h->atomic.swap_add = le64_to_cpu(s->hdr.swap);
    } else {
        h->atomic.swap_add = le64_to_cpu(s->hdr.compare_add);
    }
    h->imm = be32_to_cpu(s->hdr.imm_data);   /* wire bytes as stored */
    h->ieth_rkey = le32_to_cpu(s->hdr.imm_data);
    h->xrc_srqn = le32_to_cpu(s->hdr.xrc_srqn) & VRNIC_XRC_SRQN_MASK;
}

/*
 * The on-demand pages packet off of s needs (vrnic_odp.c): its payload, or
 * for a READ/atomic request the place of the answer - of a READ the first
 * VRNIC_ODP_FAULT_MAX_PAGES 4 KiB pages of what it asks for, which bounds
 * the check; a response meeting a page it did not cover, or one unmapped
 * since, is dropped and asked again (vrnic_comp.c). STOP while a page
 * fault is outstanding: PAGE_FAULT_DONE kicks the QP.
 */
static VrnicTxRes vrnic_tx_odp(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                               VrnicSwqe *s, uint32_t off, uint32_t plen)
{
    uint8_t op = s->hdr.opcode;
    uint64_t at = off, len = plen;
    bool write = false;

    if ((s->hdr.flags & VRNIC_WQE_FLAG_INLINE) || vrnic_op_is_rd_acked(op)) {
        return VRNIC_TX_DONE;
    }
    if (op == VRNIC_WQE_OP_RDMA_READ) {
        at = s->rcvd;
        len = MIN(s->rd_end - s->rcvd,
                  (uint64_t)VRNIC_ODP_FAULT_MAX_PAGES << 12);
        write = true;
    } else if (vrnic_op_is_rd(op)) {
        at = 0;
        len = 8;
        write = true;
    }
    switch (vrnic_sge_odp(core, qpn, qp, s, at, len, write)) {
    case VRNIC_ODP_GO:
        return VRNIC_TX_DONE;
    case VRNIC_ODP_WAIT:
        return VRNIC_TX_STOP;
    default:
        s->done = true;
        s->status = VRNIC_WC_LOC_PROT_ERR;
        return VRNIC_TX_FAIL;
    }
}

/*
 * Build request packet psn of s (the next one, s->sent) and put it on the
 * wire or the loopback queue. *ack_req tells whether it asks for an ACK.
 */
static VrnicTxRes vrnic_tx_packet(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                  VrnicSwqe *s, const VrnicTxDest *d,
                                  uint32_t psn, bool *ack_req)
{
    uint8_t op = s->hdr.opcode;
    uint32_t off = s->sent * s->pmtu;
    uint32_t plen = op == VRNIC_WQE_OP_ATOMIC_WRITE ? 8 :
                    vrnic_op_is_rd(op) ? 0 : MIN(s->pmtu, s->len - off);
    uint8_t frame[VRNIC_XPORT_FRAME] VRNIC_UNINITIALIZED;
    const VrnicPath *path;
    uint32_t mc_local;
    VrnicPktHdrs h;
    size_t hoff, flen;
    VrnicTxRes r;
    bool loop;

    path = vrnic_xport_path(core, qp, qpn, d->av, d->dqpn);
    if (!path) {
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
     * Multicast goes on the wire (a group GID is never one of ours) and,
     * when QPs here are attached to the group, to them as well through the
     * loopback queue: both must have room.
     */
    mc_local = d->mcast ? vrnic_mcast_members(core, d->av->dgid, NULL) : 0;
    loop = path->loop && !d->mcast;
    if (!vrnic_xport_can_send(core, loop) ||
        (mc_local && !vrnic_xport_can_send(core, true))) {
        return VRNIC_TX_MORE;
    }
    vrnic_tx_hdrs(qpn, qp, s, d, psn, &h);
    r = vrnic_tx_odp(core, qpn, qp, s, off, plen);
    if (r != VRNIC_TX_DONE) {
        return r;
    }
    hoff = vrnic_pkt_tmpl_build(frame, sizeof(frame), &path->tmpl,
                                core->ip_id++, &h, plen);
    if (!hoff) {
        return vrnic_tx_fail(core, qpn, qp, s, VRNIC_WC_LOC_QP_OP_ERR,
                             "cannot build the packet");
    }
    if (op == VRNIC_WQE_OP_ATOMIC_WRITE) {
        /* The 8 bytes travel as the WQE holds them, in memory order. */
        memcpy(frame + hoff, &s->hdr.compare_add, 8);
    } else if (plen &&
               !vrnic_sge_rw(core, qp, s, off, frame + hoff, plen, false)) {
        s->done = true;
        s->status = VRNIC_WC_LOC_PROT_ERR;
        return VRNIC_TX_FAIL;
    }
    flen = vrnic_pkt_finish(frame, sizeof(frame));
    trace_vrnic_tx_pkt(qpn, h.bth.opcode, h.bth.psn, plen, loop);
    vrnic_xport_output(core, qpn, frame, flen, loop);
    if (mc_local) {
        trace_vrnic_mcast_loop(qpn, ldq_be_p(d->av->dgid),
                               ldq_be_p(d->av->dgid + 8), mc_local);
        vrnic_loop_put(core, qpn, frame, flen, false);
    }
    *ack_req = h.bth.ack_req;
    return VRNIC_TX_DONE;
}

/*
 * An RC request packet of s left (s->sent counts it): a go-back's first
 * resend, retransmit count, round-trip timing, snd_max, the timer.
 */
static void vrnic_tx_rc_sent(VrnicCore *core, VrnicQp *qp, VrnicSwqe *s,
                             uint32_t psn, bool ack_req)
{
    VrnicXport *x = qp->x;
    bool rd = vrnic_op_is_rd(s->hdr.opcode);
    uint32_t end = rd ? vrnic_psn_add(s->last_psn, 1) : vrnic_psn_add(psn, 1);

    if (x->gbn_valid && psn == x->gbn_psn) {
        x->gbn_resent = true;
    }
    if (rd) {
        s->rd_after = x->snd_max;
    }
    if (vrnic_psn_diff(psn, x->snd_max) < 0) {
        core->stats.port[VRNIC_PORT_STAT_RETRANSMITS]++;
    } else if (ack_req && !x->rtt_timing) {
        x->rtt_timing = true;
        x->rtt_sent = vrnic_now(core);
        x->rtt_psn = psn;       /* a READ: its first response */
    }
    if (vrnic_psn_diff(end, x->snd_max) > 0) {
        x->snd_max = end;
    }
    if (!x->rto_due) {
        vrnic_tx_timer_restart(core, qp);
    }
}

/*
 * A started datagram or frame that no longer fits the port (the MTU went
 * down while it waited for the wire) fails as too long; it never goes out
 * cut short. Not a guest error: the driver may lower the MTU at any time.
 */
static VrnicTxRes vrnic_tx_too_long(uint32_t qpn, VrnicSwqe *s,
                                    const char *why)
{
    trace_vrnic_tx_drop(qpn, s->first_psn, why);
    s->done = true;
    s->status = VRNIC_WC_LOC_LEN_ERR;
    s->npkts = 0;
    return VRNIC_TX_FAIL;
}

/*
 * A raw packet QP's frame: on the wire as the WQE holds it and, when a
 * flow rule of another QP here matches it, through the loopback queue to
 * that QP.
 */
static VrnicTxRes vrnic_tx_raw(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                               VrnicSwqe *s, unsigned *budget)
{
    uint8_t frame[VRNIC_LOOP_FRAME] VRNIC_UNINITIALIZED;
    uint32_t flow;
    VrnicTxRes r;

    if (s->len > vrnic_eth_max_frame(core)) {
        return vrnic_tx_too_long(qpn, s, "frame longer than the port's "
                                 "MTU now");
    }
    if (!*budget) {
        return VRNIC_TX_MORE;
    }
    /* Whether it loops back is known only from the frame: room for both. */
    if (!vrnic_xport_can_send(core, false) ||
        !vrnic_xport_can_send(core, true)) {
        return VRNIC_TX_MORE;
    }
    r = vrnic_tx_odp(core, qpn, qp, s, 0, s->len);
    if (r != VRNIC_TX_DONE) {
        return r;
    }
    if (!vrnic_sge_rw(core, qp, s, 0, frame, s->len, false)) {
        s->done = true;
        s->status = VRNIC_WC_LOC_PROT_ERR;
        return VRNIC_TX_FAIL;
    }
    flow = vrnic_flow_lookup(core, frame, s->len, qpn);
    trace_vrnic_raw_tx(qpn, s->len, flow);
    vrnic_wire_send(core, frame, s->len);
    if (flow) {
        vrnic_loop_put(core, qpn, frame, s->len, true);
    }
    s->sent = 1;
    (*budget)--;
    return VRNIC_TX_DONE;
}

/* Send the packets of a started WQE from s->sent, within *budget. */
static VrnicTxRes vrnic_tx_send(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                VrnicSwqe *s, unsigned *budget)
{
    VrnicXport *x = qp->x;
    bool rc = vrnic_qp_reliable(qp);
    bool rd = vrnic_op_is_rd(s->hdr.opcode);
    VrnicTxDest d;

    /*
     * Segmented for the path MTU of its start: PSNs and packet count were
     * fixed then. A UD datagram must still fit (vrnic_tx_too_long).
     */
    if (vrnic_qp_is_ud(qp) && !s->sent && s->len > vrnic_xport_pmtu(core, qp)) {
        return vrnic_tx_too_long(qpn, s, "datagram longer than the port's "
                                 "MTU now");
    }
    if (qp->type == VRNIC_QP_TYPE_RAW_PACKET) {
        return s->sent ? VRNIC_TX_DONE : vrnic_tx_raw(core, qpn, qp, s, budget);
    }
    vrnic_tx_dest(qp, s, &d);
    while (s->sent < s->npkts) {
        uint32_t psn = rd ? vrnic_tx_rd_psn(core, qp, s) :
                       vrnic_psn_add(s->first_psn, s->sent);
        bool ack_req = false;
        VrnicTxRes r;

        if (s->done) {
            return VRNIC_TX_DONE;   /* answered while waiting to resend */
        }
        if (rc && !rd && vrnic_psn_diff(psn, x->acked_psn) <= 0) {
            s->sent++;              /* acknowledged meanwhile: not resent */
            continue;
        }
        if (!*budget) {
            return VRNIC_TX_MORE;
        }
        /*
         * Bounded new PSNs in flight: wait for ACKs (they re-kick). A
         * resend (below snd_max) never waits. While a hole is resent, new
         * PSNs go out only to a responder known to hold what comes after
         * a gap, within the window it holds; one that holds nothing
         * (rdma_rxe) would take them for a new gap and NAK again.
         */
        if (rc && vrnic_psn_diff(psn, x->snd_max) >= 0 &&
            ((x->hole_mode && !x->peer_holds) ||
             vrnic_psn_diff(psn, x->acked_psn) >
             vrnic_tx_pkt_window(s->pmtu))) {
            return VRNIC_TX_STOP;
        }
        r = vrnic_tx_packet(core, qpn, qp, s, &d, psn, &ack_req);
        if (r != VRNIC_TX_DONE) {
            return r;
        }
        s->sent++;
        (*budget)--;
        if (rc) {
            vrnic_tx_rc_sent(core, qp, s, psn, ack_req);
        }
    }
    return VRNIC_TX_DONE;
}

/* The one packet the responder misses, alone; false: stop this run. */
static bool vrnic_tx_send_hole(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = vrnic_tx_find_psn(qp, x->hole_psn);
    unsigned one = 1;
    uint32_t sent;
    VrnicTxRes r;

    /* An ACK past a READ/atomic does not answer it. */
    if (!s || s->done || (!vrnic_op_is_rd(s->hdr.opcode) &&
                          vrnic_psn_diff(x->hole_psn, x->acked_psn) <= 0)) {
        /* Answered before it went out again (it was only late). */
        x->hole_pending = false;
        vrnic_tx_hole_answered(core, qpn, qp);
        return true;
    }
    sent = s->sent;
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
        return false;
    }
    if (one) {
        vrnic_qp_set_pending(core, qp, true);  /* no room yet */
        return false;
    }
    x->hole_pending = false;
    return true;
}

/* Requester: start and send WQEs from x->next. */
static void vrnic_tx_process(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    unsigned budget = VRNIC_TX_BUDGET;

    /*
     * Waiting out an RNR NAK (the timer re-kicks) or a page fault
     * (PAGE_FAULT_DONE does).
     */
    if (x->rnr_due || x->odp_req.state != VRNIC_ODP_IDLE) {
        return;
    }
    if (x->hole_pending && !vrnic_tx_send_hole(core, qpn, qp)) {
        return;
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
            if (!vrnic_qp_reliable(qp)) {
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

void vrnic_xport_process(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    vrnic_resp_drain(core, qpn, qp);
    if (qp->state == VRNIC_QPS_RTS || qp->state == VRNIC_QPS_SQD) {
        vrnic_tx_process(core, qpn, qp);
    }
}
