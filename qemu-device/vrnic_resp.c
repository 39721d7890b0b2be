/*
 * vrnic RoCEv2 responder: executing the requests that arrive in sequence
 * (RC, UC) and UD datagrams. The PSN check comes first (vrnic_resp_seq.c);
 * answers leave through the responder's output queue (vrnic_resp_queue.c).
 *
 * Per operation:
 *  - SEND: a receive WQE (RQ, or the SRQ) is taken at FIRST/ONLY and held
 *    until LAST; none: RC sends an RNR NAK (timer = min_rnr_timer) and
 *    drops the packet, UC/UD drop it (RX_NO_WQE). Payload is scattered
 *    through the WQE's SGEs (LOCAL_WRITE checked): a key failure completes
 *    the WQE with LOC_PROT_ERR (RC: NAK REMOTE_OPERATIONAL), too much data
 *    with LOC_LEN_ERR (RC: NAK INVALID_REQUEST); either moves the QP to
 *    ERR, except that UD completes LOC_LEN_ERR and stays up. The receive
 *    CQE: RECV, byte_len, imm_data (IMM flag), SOLICITED when the last
 *    packet had SE; UD adds src_qp, GRH flag,
 *    network_hdr_type, and puts the 40-byte GRH area first (byte_len
 *    includes it). SEND with Invalidate: at its LAST/ONLY packet the IETH
 *    R_Key must name a bound type 2 memory window of the QP's PD, bound
 *    through this QP (vrnic_mw.c); it is unbound and the CQE carries the
 *    INV flag and the key. Anything else (an MR, a type 1 window) is NAK
 *    INVALID_REQUEST and the receive WQE completes with REM_INV_REQ_ERR.
 *  - WRITE: RETH checked at FIRST/ONLY against the QP's REMOTE_WRITE right
 *    and with vrnic_rkey_check (an MR or a bound window; REMOTE_WRITE,
 *    whole length) - skipped for a zero-length WRITE (C9-88); a failure
 *    is NAK REMOTE_ACCESS (UC: the
 *    message is dropped). WRITE_IMM consumes a receive WQE at its last
 *    packet and completes RECV_RDMA_WITH_IMM with byte_len = the length.
 *  - READ: QP REMOTE_READ right + vrnic_rkey_check (REMOTE_READ), skipped for
 *    length 0; at most max_dest_rd_atomic (0 counts as 1) READ/atomics
 *    queued, more is NAK INVALID_REQUEST. The response stream (FIRST/
 *    MIDDLE/LAST or ONLY; AETH on all but MIDDLE) leaves from the queue.
 *  - Atomics: 8-byte aligned address (else NAK INVALID_REQUEST), QP
 *    REMOTE_ATOMIC right + vrnic_rkey_check (REMOTE_ATOMIC, 8 bytes);
 *    executed at once (see vrnic_xport.h on atomicity), ATOMIC ACK with the
 *    original value.
 *  - ATOMIC WRITE and FLUSH (IBTA 1.5): take a READ/atomic slot, are
 *    executed at once and answered by an empty READ RESPONSE ONLY
 *    (vrnic_rx_atomic_write, vrnic_rx_flush).
 *  - Payload sizes: FIRST/MIDDLE carry exactly one path MTU, LAST/ONLY at
 *    most one; a WRITE's packets must add up to the RETH length. Violations
 *    and out-of-sequence opcodes are NAK INVALID_REQUEST (RC; UC drops).
 * After sending an error NAK the RC responder moves its QP to ERR.
 *
 * Raw packet QPs have no transport: a frame a flow rule steers to one
 * (vrnic_flow.c) is taken like a UD datagram, whole (vrnic_rx_raw).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

static bool vrnic_rx_get_rwqe(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;

    if (x->have_rwqe) {
        return true;
    }
    if (qp->srqn) {
        VrnicSrq *srq = vrnic_srq_get(core, qp->srqn);

        if (!srq) {
            return false;
        }
        x->rwqe_size = 1u << srq->wq.wqe_shift;
        if (!vrnic_srq_take(core, qp->srqn, x->rwqe, x->rwqe_size)) {
            return false;
        }
        x->rwqe_srq = true;
    } else {
        uint64_t off;

        if (!qp->rq.log_depth || qp->rq.ci == qp->rq.pi) {
            return false;
        }
        x->rwqe_size = 1u << qp->rq.wqe_shift;
        off = qp->rq.offset +
              ((uint64_t)vrnic_idx_slot(qp->rq.ci, qp->rq.log_depth) <<
               qp->rq.wqe_shift);
        if (!vrnic_mem_read_at(core, &qp->mem, off, x->rwqe, x->rwqe_size)) {
            vrnic_qp_fatal(core, qpn, "receive WQE unreadable");
            return false;
        }
        x->rwqe_srq = false;
    }
    x->have_rwqe = true;
    return true;
}

/*
 * Scatter len bytes at message offset off into the held receive WQE: a
 * CQE status, or VRNIC_RX_PAGE_WAIT when an on-demand page it needs is not
 * mapped (nothing is lost: the packet is taken again later).
 */
static uint8_t vrnic_rx_scatter(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                uint64_t off, const uint8_t *buf, uint32_t len)
{
    VrnicXport *x = qp->x;
    VrnicSrq *srq = x->rwqe_srq ? vrnic_srq_get(core, qp->srqn) : NULL;
    uint32_t max = srq ? srq->max_sge : qp->max_recv_sge;
    /*
     * A WQE posted to an SRQ names memory of the SRQ's PD (not the QP's,
     * which may differ): its owner posted it under the SRQ's rules.
     */
    uint32_t pdn = srq ? srq->pdn : qp->pdn;
    uint32_t n = x->rhdr.num_sge;

    if (n > max || sizeof(struct vrnic_recv_wqe) +
        n * sizeof(struct vrnic_sge) > x->rwqe_size) {
        VRNIC_GUEST_ERR(core, vrnic_err_wqe, "qpn %u WQE %u: %s", qpn,
                        qp->rq.ci, "receive num_sge");
        return VRNIC_WC_LOC_QP_OP_ERR;
    }
    for (uint32_t i = 0; i < n && len; i++) {
        struct vrnic_sge g;
        uint32_t glen, chunk;
        VrnicMr *mr;

        memcpy(&g, x->rwqe + sizeof(struct vrnic_recv_wqe) + i * sizeof(g),
               sizeof(g));
        glen = le32_to_cpu(g.length);
        if (off >= glen) {
            off -= glen;
            continue;
        }
        chunk = MIN(glen - off, len);
        if (vrnic_mr_check(core, le32_to_cpu(g.lkey), pdn,
                           VRNIC_ACCESS_LOCAL_WRITE, le64_to_cpu(g.addr) + off,
                           chunk, &mr)) {
            return VRNIC_WC_LOC_PROT_ERR;
        }
        switch (vrnic_odp_access(core, qpn, qp, mr, le64_to_cpu(g.addr) + off,
                                 chunk, glen - off, true, true)) {
        case VRNIC_ODP_WAIT:
            return VRNIC_RX_PAGE_WAIT;
        case VRNIC_ODP_FAIL:
            return VRNIC_WC_LOC_PROT_ERR;
        default:
            break;
        }
        if (!vrnic_mr_rw(core, mr, le64_to_cpu(g.addr) + off, (void *)buf,
                         chunk, true)) {
            return VRNIC_WC_LOC_PROT_ERR;
        }
        buf += chunk;
        len -= chunk;
        off = 0;
    }
    return len ? VRNIC_WC_LOC_LEN_ERR : VRNIC_WC_SUCCESS;
}

/* Complete the held receive WQE and release it. */
static void vrnic_rx_complete(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                              struct vrnic_cqe *e)
{
    VrnicXport *x = qp->x;

    e->wr_id = x->rhdr.wr_id;
    e->qpn = cpu_to_le32(qpn);
    trace_vrnic_rx_recv_done(qpn, le64_to_cpu(e->wr_id), e->status,
                             le32_to_cpu(e->byte_len));
    x->have_rwqe = false;
    if (!x->rwqe_srq) {
        qp->rq.ci++;
    }
    vrnic_xrc_cqe(qp, e);
    vrnic_cq_post(core, qp->recv_cqn, e);
}

/*
 * RC: NAK with an error code and move to ERR; the receive WQE held for
 * the message (if any) completes with status. UC: drop the message.
 */
static void vrnic_rx_fail(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                          uint32_t psn, uint8_t nak, uint8_t status,
                          const char *why)
{
    VrnicXport *x = qp->x;

    trace_vrnic_rx_drop(qpn, psn, why);
    if (x->have_rwqe && status != VRNIC_WC_SUCCESS) {
        struct vrnic_cqe e = { .opcode = VRNIC_CQE_OP_RECV, .status = status };

        vrnic_rx_complete(core, qpn, qp, &e);
    }
    x->in_msg = VRNIC_MSG_NONE;
    if (!vrnic_qp_reliable(qp)) {
        core->stats.port[VRNIC_PORT_STAT_RX_BAD_OPCODE]++;
        if (status != VRNIC_WC_SUCCESS) {
            vrnic_qp_error(core, qpn);
        }
        return;
    }
    core->stats.port[VRNIC_PORT_STAT_NAKS_SENT]++;
    vrnic_resp_ack(qp, psn, true, vrnic_nak_syn(nak));
    vrnic_resp_drain(core, qpn, qp);
    vrnic_qp_error(core, qpn);
}

/*
 * The RETH/AtomicETH target: QP right, then the MR of PD pdn (the QP's; an
 * XRC target's, the named SRQ's). Zero length passes.
 */
bool vrnic_rx_rkey_ok(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                      uint32_t pdn, uint32_t right,
                      uint32_t rkey, uint64_t va, uint64_t len)
{
    if (!len) {
        return true;    /* C9-88: no R_Key check for zero-length */
    }
    if (!vrnic_qp_grants(qp, right)) {
        trace_vrnic_rx_drop(0, 0, "QP lacks the remote right");
        return false;
    }
    return vrnic_rkey_check(core, rkey, qpn, pdn, right, va, len,
                            NULL) == VRNIC_MR_OK;
}

void vrnic_rx_ud(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                 const uint8_t *frame, const VrnicPkt *pkt)
{
    uint8_t grh[VRNIC_GRH_LEN];
    struct vrnic_cqe e = { .opcode = VRNIC_CQE_OP_RECV };
    uint32_t psn = pkt->hdr.bth.psn;

    if (pkt->hdr.deth.qkey != le32_to_cpu(qp->attr.qkey)) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_QKEY_MISMATCH, qpn, psn,
                      "Q_Key mismatch");
        return;
    }
    if (!vrnic_rx_get_rwqe(core, qpn, qp)) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_NO_WQE, qpn, psn,
                      "no receive WQE");
        return;
    }
    vrnic_pkt_grh(frame, pkt, grh);
    e.status = vrnic_rx_scatter(core, qpn, qp, 0, grh, sizeof(grh));
    if (e.status == VRNIC_WC_SUCCESS) {
        e.status = vrnic_rx_scatter(core, qpn, qp, sizeof(grh),
                                    frame + pkt->payload_off,
                                    pkt->payload_len);
    }
    if (e.status == VRNIC_RX_PAGE_WAIT) {
        /* Dropped; the receive WQE stays held for the next datagram. */
        trace_vrnic_rx_drop(qpn, psn, "UD: page fault");
        return;
    }
    e.byte_len = cpu_to_le32(sizeof(grh) + pkt->payload_len);
    e.src_qp = cpu_to_le32(pkt->hdr.deth.sqpn & VRNIC_IB_QPN_MASK);
    e.flags = VRNIC_CQE_FLAG_GRH;
    e.network_hdr_type = pkt->ip_version == 4 ? VRNIC_NET_TYPE_IPV4 :
                                                VRNIC_NET_TYPE_IPV6;
    if (pkt->op->hdrs & VRNIC_HDR_IMM) {
        uint32_t raw = cpu_to_be32(pkt->hdr.imm);

        memcpy(&e.imm_data, &raw, sizeof(raw));
        e.flags |= VRNIC_CQE_FLAG_IMM;
    }
    if (pkt->hdr.bth.se) {
        e.flags |= VRNIC_CQE_FLAG_SOLICITED;
    }
    vrnic_rx_complete(core, qpn, qp, &e);
    if (e.status == VRNIC_WC_LOC_PROT_ERR ||
        e.status == VRNIC_WC_LOC_QP_OP_ERR) {
        vrnic_qp_error(core, qpn);
    }
}

/*
 * A raw packet QP takes a steered frame whole into one receive WQE, in RTR
 * and later states. Like a UD datagram, a frame it cannot take is dropped
 * (counted) and one too long for the WQE completes LOC_LEN_ERR with the QP
 * left up.
 */
void vrnic_rx_raw(VrnicCore *core, uint32_t flow_id, uint32_t qpn,
                  const uint8_t *frame, size_t len)
{
    VrnicQp *qp = vrnic_qp_get(core, qpn);
    struct vrnic_cqe e = { .opcode = VRNIC_CQE_OP_RECV };
    const char *why = NULL;

    if (!qp || qp->type != VRNIC_QP_TYPE_RAW_PACKET) {
        why = "no such raw packet QP";
    } else if (qp->state < VRNIC_QPS_RTR || qp->state == VRNIC_QPS_ERR) {
        why = "QP not ready to receive";
    } else if (!vrnic_rx_get_rwqe(core, qpn, qp)) {
        why = "no receive WQE";
    }
    if (why) {
        core->stats.port[VRNIC_PORT_STAT_FLOW_DROPS]++;
        trace_vrnic_flow_drop(flow_id, qpn, len, why);
        return;
    }
    e.status = vrnic_rx_scatter(core, qpn, qp, 0, frame, len);
    if (e.status == VRNIC_RX_PAGE_WAIT) {
        /* Dropped; the receive WQE stays held for the next frame. */
        core->stats.port[VRNIC_PORT_STAT_FLOW_DROPS]++;
        trace_vrnic_flow_drop(flow_id, qpn, len, "page fault");
        return;
    }
    e.byte_len = cpu_to_le32(len);
    core->stats.port[VRNIC_PORT_STAT_FLOW_RX]++;
    vrnic_rx_complete(core, qpn, qp, &e);
    if (e.status == VRNIC_WC_LOC_PROT_ERR ||
        e.status == VRNIC_WC_LOC_QP_OP_ERR) {
        vrnic_qp_error(core, qpn);
    }
}

/* Which message a request packet belongs to (VRNIC_MSG_*). */
static uint8_t vrnic_rx_msg_kind(const VrnicOpInfo *oi)
{
    return (oi->flags & VRNIC_OPF_SEND) ? VRNIC_MSG_SEND :
           (oi->flags & VRNIC_OPF_WRITE) ? VRNIC_MSG_WRITE : VRNIC_MSG_NONE;
}

/*
 * The opcode sequence (a message in progress continues with its kind, a
 * new one starts with FIRST/ONLY) and the payload size against the path
 * MTU; false when the packet was refused.
 */
static bool vrnic_rx_op_sequence(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 const VrnicPkt *pkt, uint32_t pmtu)
{
    VrnicXport *x = qp->x;
    const VrnicOpInfo *oi = pkt->op;
    uint32_t psn = pkt->hdr.bth.psn, plen = pkt->payload_len;
    bool rc = vrnic_qp_reliable(qp);
    bool first = oi->flags & VRNIC_OPF_FIRST, last = oi->flags & VRNIC_OPF_LAST;
    uint8_t kind = vrnic_rx_msg_kind(oi);

    if (x->in_msg != VRNIC_MSG_NONE && (first || kind != x->in_msg)) {
        if (!rc && first) {
            x->in_msg = VRNIC_MSG_NONE;     /* UC: a new message starts */
        } else {
            vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                          VRNIC_WC_SUCCESS, "opcode out of sequence");
            return false;
        }
    }
    if (x->in_msg == VRNIC_MSG_NONE && !first && kind != VRNIC_MSG_NONE) {
        if (!rc) {
            vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_OUT_OF_SEQ, qpn, psn,
                          "UC: middle of a dropped message");
            x->epsn = vrnic_psn_add(psn, 1);
            return false;
        }
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ, VRNIC_WC_SUCCESS,
                      "MIDDLE/LAST without FIRST");
        return false;
    }
    if ((oi->flags & VRNIC_OPF_PAYLOAD) &&
        (last ? plen > pmtu : plen != pmtu)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                      VRNIC_WC_SUCCESS, "payload length vs path MTU");
        return false;
    }
    return true;
}

/*
 * No receive WQE for a SEND or WRITE_IMM: RC answers with an RNR NAK, UC
 * drops the packet (and so the message).
 */
static void vrnic_rx_no_rwqe(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                             uint32_t psn)
{
    if (!vrnic_qp_reliable(qp)) {
        qp->x->in_msg = VRNIC_MSG_NONE;
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_NO_WQE, qpn, psn,
                      "no receive WQE");
        return;
    }
    vrnic_resp_rnr_nak(core, qpn, qp, psn, "no receive WQE: RNR NAK");
}

/*
 * An on-demand page the packet needs is not mapped (vrnic_odp.c): RC
 * answers RNR NAK and the requester sends the packet again after its RNR
 * wait; UC drops it, and with it the message. The packet placed nothing
 * for good: a FIRST packet leaves no message in progress, its resend
 * starts it again (with the receive WQE it took, which stays held).
 */
static void vrnic_rx_page_wait(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                               uint32_t psn, bool first)
{
    if (first || !vrnic_qp_reliable(qp)) {
        qp->x->in_msg = VRNIC_MSG_NONE;
    }
    if (!vrnic_qp_reliable(qp)) {
        trace_vrnic_rx_drop(qpn, psn, "UC: page fault");
        return;
    }
    vrnic_resp_rnr_nak(core, qpn, qp, psn, "page fault: RNR NAK");
}

/* ImmDt and SE of a message's last packet, into its receive CQE. */
static void vrnic_rx_cqe_imm_se(const VrnicPkt *pkt, struct vrnic_cqe *e)
{
    if (pkt->op->hdrs & VRNIC_HDR_IMM) {
        uint32_t raw = cpu_to_be32(pkt->hdr.imm);

        memcpy(&e->imm_data, &raw, sizeof(raw));
        e->flags |= VRNIC_CQE_FLAG_IMM;
    }
    if (pkt->hdr.bth.se) {
        e->flags |= VRNIC_CQE_FLAG_SOLICITED;
    }
}

/* A SEND packet in sequence; true when it went in. */
static bool vrnic_rx_send(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                          const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    const VrnicOpInfo *oi = pkt->op;
    uint32_t psn = pkt->hdr.bth.psn, plen = pkt->payload_len;
    struct vrnic_cqe e = { .opcode = VRNIC_CQE_OP_RECV };
    uint8_t sts;

    if (oi->flags & VRNIC_OPF_FIRST) {
        if (!vrnic_rx_get_rwqe(core, qpn, qp)) {
            vrnic_rx_no_rwqe(core, qpn, qp, psn);
            return false;
        }
        x->rcv_off = 0;
        x->in_msg = VRNIC_MSG_SEND;
    }
    /* The offset is 32 bits: a message ends at 2^31 (IBTA). */
    sts = (uint64_t)x->rcv_off + plen > VRNIC_MAX_MSG ? VRNIC_WC_LOC_LEN_ERR :
          vrnic_rx_scatter(core, qpn, qp, x->rcv_off,
                           frame + pkt->payload_off, plen);
    if (sts == VRNIC_RX_PAGE_WAIT) {
        vrnic_rx_page_wait(core, qpn, qp, psn, oi->flags & VRNIC_OPF_FIRST);
        return false;
    }
    if (sts != VRNIC_WC_SUCCESS) {
        vrnic_rx_fail(core, qpn, qp, psn,
                      sts == VRNIC_WC_LOC_LEN_ERR ? VRNIC_NAK_INV_REQ :
                                                    VRNIC_NAK_REM_OP,
                      sts, "receive buffer");
        return false;
    }
    x->rcv_off += plen;
    if (!(oi->flags & VRNIC_OPF_LAST)) {
        return true;
    }
    e.byte_len = cpu_to_le32(x->rcv_off);
    vrnic_rx_cqe_imm_se(pkt, &e);
    if (oi->hdrs & VRNIC_HDR_IETH) {
        /*
         * A valid fast-registration MR with a remote right, or a type 2
         * window bound through this QP: anything else is an invalid
         * request, as rdma_rxe treats a user MR.
         */
        if (!vrnic_key_invalidate(core, qpn, qp->pdn, pkt->hdr.ieth_rkey,
                                  true)) {
            vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                          VRNIC_WC_REM_INV_REQ_ERR, "SEND_INV R_Key");
            return false;
        }
        e.imm_data = cpu_to_le32(pkt->hdr.ieth_rkey);
        e.flags |= VRNIC_CQE_FLAG_INV;
    }
    vrnic_rx_complete(core, qpn, qp, &e);
    x->in_msg = VRNIC_MSG_NONE;
    x->msn = vrnic_psn_add(x->msn, 1);
    return true;
}

/*
 * The RETH of a WRITE's first packet or of a READ, for the remote right it
 * needs: at most 2^31 bytes (else NAK INVALID_REQUEST), then the QP's right
 * and the R_Key (else NAK REMOTE_ACCESS). False when refused.
 */
static bool vrnic_rx_reth_ok(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                             const VrnicPkt *pkt, uint32_t right)
{
    bool write = right == VRNIC_ACCESS_REMOTE_WRITE;

    if (pkt->hdr.reth.len > VRNIC_MAX_MSG) {
        vrnic_rx_fail(core, qpn, qp, pkt->hdr.bth.psn, VRNIC_NAK_INV_REQ,
                      VRNIC_WC_SUCCESS, write ? "WRITE longer than 2^31" :
                                                "READ longer than 2^31");
        return false;
    }
    if (!vrnic_rx_rkey_ok(core, qpn, qp, qp->pdn, right,
                          pkt->hdr.reth.rkey, pkt->hdr.reth.va,
                          pkt->hdr.reth.len)) {
        vrnic_rx_fail(core, qpn, qp, pkt->hdr.bth.psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, write ? "WRITE R_Key/access/bounds" :
                                                "READ R_Key/access/bounds");
        return false;
    }
    return true;
}

/* A WRITE packet in sequence; true when it went in. */
static bool vrnic_rx_write(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                           const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    const VrnicOpInfo *oi = pkt->op;
    uint32_t psn = pkt->hdr.bth.psn, plen = pkt->payload_len;
    bool last = oi->flags & VRNIC_OPF_LAST;
    VrnicOdpRes odp;
    VrnicMr *mr;

    if (oi->flags & VRNIC_OPF_FIRST) {
        if (!vrnic_rx_reth_ok(core, qpn, qp, pkt, VRNIC_ACCESS_REMOTE_WRITE)) {
            return false;
        }
        x->wr_va = pkt->hdr.reth.va;
        x->wr_rkey = pkt->hdr.reth.rkey;
        x->wr_len = pkt->hdr.reth.len;
        x->rcv_off = 0;
        x->in_msg = VRNIC_MSG_WRITE;
    }
    if ((uint64_t)x->rcv_off + plen > x->wr_len ||
        (last && x->rcv_off + plen != x->wr_len)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                      VRNIC_WC_SUCCESS, "WRITE length vs RETH");
        return false;
    }
    if ((oi->hdrs & VRNIC_HDR_IMM) && !vrnic_rx_get_rwqe(core, qpn, qp)) {
        vrnic_rx_no_rwqe(core, qpn, qp, psn);
        return false;
    }
    if (plen && (!vrnic_qp_grants(qp, VRNIC_ACCESS_REMOTE_WRITE) ||
                 vrnic_rkey_check(core, x->wr_rkey, qpn, qp->pdn,
                                  VRNIC_ACCESS_REMOTE_WRITE,
                                  x->wr_va + x->rcv_off, plen, &mr))) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "WRITE target went away");
        return false;
    }
    odp = plen ? vrnic_odp_access(core, qpn, qp, mr, x->wr_va + x->rcv_off,
                                  plen, x->wr_len - x->rcv_off, true, true) :
                 VRNIC_ODP_GO;
    if (odp == VRNIC_ODP_WAIT) {
        vrnic_rx_page_wait(core, qpn, qp, psn, oi->flags & VRNIC_OPF_FIRST);
        return false;
    }
    if (plen && (odp == VRNIC_ODP_FAIL ||
                 !vrnic_mr_rw(core, mr, x->wr_va + x->rcv_off,
                              (void *)(frame + pkt->payload_off), plen,
                              true))) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "WRITE target went away");
        return false;
    }
    x->rcv_off += plen;
    if (!last) {
        return true;
    }
    if (oi->hdrs & VRNIC_HDR_IMM) {
        struct vrnic_cqe e = {
            .opcode = VRNIC_CQE_OP_RECV_RDMA_WITH_IMM,
            .byte_len = cpu_to_le32(x->wr_len),
        };

        vrnic_rx_cqe_imm_se(pkt, &e);
        vrnic_rx_complete(core, qpn, qp, &e);
    }
    x->in_msg = VRNIC_MSG_NONE;
    x->msn = vrnic_psn_add(x->msn, 1);
    return true;
}

/*
 * An executed atomic, ATOMIC WRITE or FLUSH at psn: its answer is kept for
 * a duplicate (vrnic_rx_dup_atomic), and the next PSN is expected.
 */
static void vrnic_rx_keep_result(VrnicXport *x, uint32_t psn, uint8_t kind,
                                 uint64_t orig)
{
    VrnicAtomicResult *r;

    r = &x->atomic_cache[x->atomic_next++ % VRNIC_ATOMIC_CACHE];
    r->valid = true;
    r->kind = kind;
    r->psn = psn;
    r->orig = orig;
    x->epsn = vrnic_psn_add(psn, 1);
}

/* A queue entry for the answer to a READ or atomic (NULL: queue full). */
static VrnicResp *vrnic_rx_resp_new(VrnicCore *core, uint32_t qpn,
                                    VrnicQp *qp, uint32_t psn, uint8_t kind)
{
    VrnicResp *e = vrnic_resp_push(qp);

    if (!e) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_BAD_STATE, qpn, psn,
                      "response queue full");
        return NULL;
    }
    e->kind = kind;
    return e;
}

/* A READ request: its response stream is queued (NULL: refused). */
static VrnicResp *vrnic_rx_read(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                const VrnicPkt *pkt, uint32_t pmtu)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    VrnicResp *e;

    if (!vrnic_rx_reth_ok(core, qpn, qp, pkt, VRNIC_ACCESS_REMOTE_READ)) {
        return NULL;
    }
    e = vrnic_rx_resp_new(core, qpn, qp, psn, VRNIC_RESP_READ);
    if (!e) {
        return NULL;
    }
    e->va = pkt->hdr.reth.va;
    e->rkey = pkt->hdr.reth.rkey;
    e->len = pkt->hdr.reth.len;
    x->epsn = vrnic_psn_add(psn, vrnic_read_psns(e->len, pmtu));
    return e;
}

/* An atomic request, executed: its ATOMIC ACK is queued (NULL: refused). */
static VrnicResp *vrnic_rx_atomic(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                  const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    uint64_t va = pkt->hdr.atomic.va, val;
    VrnicOdpRes odp;
    VrnicResp *e;
    VrnicMr *mr;

    if (va & 7) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                      VRNIC_WC_SUCCESS, "atomic not 8-byte aligned");
        return NULL;
    }
    if (!vrnic_rx_rkey_ok(core, qpn, qp, qp->pdn,
                          VRNIC_ACCESS_REMOTE_ATOMIC, pkt->hdr.atomic.rkey,
                          va, 8) ||
        vrnic_rkey_check(core, pkt->hdr.atomic.rkey, qpn, qp->pdn,
                         VRNIC_ACCESS_REMOTE_ATOMIC, va, 8, &mr)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "atomic R_Key/access/bounds");
        return NULL;
    }
    odp = vrnic_odp_access(core, qpn, qp, mr, va, 8, 8, true, true);
    if (odp == VRNIC_ODP_WAIT) {
        vrnic_rx_page_wait(core, qpn, qp, psn, true);
        return NULL;
    }
    if (odp == VRNIC_ODP_FAIL || !vrnic_mr_rw(core, mr, va, &val, 8, false)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "atomic R_Key/access/bounds");
        return NULL;
    }
    e = vrnic_rx_resp_new(core, qpn, qp, psn, VRNIC_RESP_ATOMIC);
    if (!e) {
        return NULL;
    }
    /*
     * The read-modify-write cannot interleave with another atomic: every
     * entry into the core holds the device's lock, so this is atomic
     * against every QP of the device (ATOMIC_HCA).
     */
    val = le64_to_cpu(val);
    e->orig = val;
    if ((pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) == VRNIC_IB_CMP_SWAP) {
        if (val == pkt->hdr.atomic.compare) {
            val = pkt->hdr.atomic.swap_add;
        }
    } else {
        val += pkt->hdr.atomic.swap_add;
    }
    val = cpu_to_le64(val);
    if (!vrnic_mr_rw(core, mr, va, &val, 8, true)) {
        x->q_tail--;
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_OP,
                      VRNIC_WC_SUCCESS, "atomic write-back");
        return NULL;
    }
    vrnic_rx_keep_result(x, psn, VRNIC_RESP_ATOMIC, e->orig);
    return e;
}

/*
 * An ATOMIC WRITE (IBTA 1.5): exactly 8 bytes to an 8-byte aligned
 * address (else NAK INVALID_REQUEST), which the QP's REMOTE_WRITE right and
 * the R_Key must allow (else NAK REMOTE_ACCESS); stored at once, like an
 * atomic. Its answer, an empty READ RESPONSE ONLY, is queued (NULL:
 * refused).
 */
static VrnicResp *vrnic_rx_atomic_write(VrnicCore *core, uint32_t qpn,
                                        VrnicQp *qp, const uint8_t *frame,
                                        const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    uint64_t va = pkt->hdr.reth.va;
    VrnicOdpRes odp;
    VrnicResp *e;
    VrnicMr *mr;

    if (pkt->hdr.reth.len != 8 || pkt->payload_len != 8 || (va & 7)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ, VRNIC_WC_SUCCESS,
                      "ATOMIC WRITE not 8 bytes, 8-byte aligned");
        return NULL;
    }
    if (!vrnic_qp_grants(qp, VRNIC_ACCESS_REMOTE_WRITE) ||
        vrnic_rkey_check(core, pkt->hdr.reth.rkey, qpn, qp->pdn,
                         VRNIC_ACCESS_REMOTE_WRITE, va, 8, &mr)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "ATOMIC WRITE R_Key/access/bounds");
        return NULL;
    }
    odp = vrnic_odp_access(core, qpn, qp, mr, va, 8, 8, true, true);
    if (odp == VRNIC_ODP_WAIT) {
        vrnic_rx_page_wait(core, qpn, qp, psn, true);
        return NULL;
    }
    e = vrnic_rx_resp_new(core, qpn, qp, psn, VRNIC_RESP_RD_ACK);
    if (!e) {
        return NULL;
    }
    if (odp == VRNIC_ODP_FAIL ||
        !vrnic_mr_rw(core, mr, va, (void *)(frame + pkt->payload_off), 8,
                     true)) {
        x->q_tail--;
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "ATOMIC WRITE target went away");
        return NULL;
    }
    vrnic_rx_keep_result(x, psn, VRNIC_RESP_RD_ACK, 0);
    return e;
}

/*
 * A FLUSH (IBTA 1.5): its placement type must ask for global visibility
 * and/or persistence and nothing else, its selectivity be a range or the
 * whole MR (else NAK INVALID_REQUEST); the QP and the R_Key must grant the
 * matching FLUSH rights and cover the range (for the whole MR, only the
 * key is checked). Everything this device placed is already visible: the
 * device writes guest memory as each request arrives, in order.
 * Persistence asks the host to write guest RAM back to its backing file
 * (VrnicCoreOps.dma_persist). Its answer, an empty READ RESPONSE ONLY, is
 * queued (NULL: refused).
 */
static VrnicResp *vrnic_rx_flush(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                                 const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn, rkey = pkt->hdr.reth.rkey;
    uint32_t type = VRNIC_FIELD_GET(VRNIC_FLUSH_TYPE_MASK, pkt->hdr.feth);
    uint32_t sel = VRNIC_FIELD_GET(VRNIC_FLUSH_SEL_MASK, pkt->hdr.feth);
    uint32_t right = 0;
    uint64_t va = pkt->hdr.reth.va, len = pkt->hdr.reth.len;
    VrnicResp *e;

    if (!type || (type & ~(VRNIC_FLUSH_TYPE_GLOBAL |
                           VRNIC_FLUSH_TYPE_PERSISTENT)) ||
        sel > VRNIC_FLUSH_SEL_MR) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ, VRNIC_WC_SUCCESS,
                      "FLUSH placement type or selectivity");
        return NULL;
    }
    if (type & VRNIC_FLUSH_TYPE_GLOBAL) {
        right |= VRNIC_ACCESS_FLUSH_GLOBAL;
    }
    if (type & VRNIC_FLUSH_TYPE_PERSISTENT) {
        right |= VRNIC_ACCESS_FLUSH_PERSISTENT;
    }
    if (sel == VRNIC_FLUSH_SEL_MR) {
        len = 0;
        if (!vrnic_rkey_start(core, rkey, &va)) {
            va = 0;     /* no such key: the check below refuses it */
        }
    }
    if ((le32_to_cpu(qp->attr.access) & right) != right ||
        vrnic_rkey_check(core, rkey, qpn, qp->pdn, right, va, len, NULL)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS, "FLUSH R_Key/access/bounds");
        return NULL;
    }
    e = vrnic_rx_resp_new(core, qpn, qp, psn, VRNIC_RESP_RD_ACK);
    if (!e) {
        return NULL;
    }
    if (type & VRNIC_FLUSH_TYPE_PERSISTENT) {
        vrnic_dma_persist(core);
    }
    vrnic_rx_keep_result(x, psn, VRNIC_RESP_RD_ACK, 0);
    return e;
}

/*
 * A READ, atomic, ATOMIC WRITE or FLUSH request in sequence (RC): answered
 * from the queue.
 */
static void vrnic_rx_rd_atomic(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                               const uint8_t *frame, const VrnicPkt *pkt,
                               uint32_t pmtu)
{
    uint8_t op = pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK;
    VrnicXport *x = qp->x;
    VrnicResp *e;

    /* Replays of duplicates do not count: the requester cannot know. */
    if (x->rd_new >= MAX(qp->attr.max_dest_rd_atomic, 1)) {
        vrnic_rx_fail(core, qpn, qp, pkt->hdr.bth.psn, VRNIC_NAK_INV_REQ,
                      VRNIC_WC_SUCCESS, "too many READ/atomics");
        return;
    }
    if (pkt->op->flags & VRNIC_OPF_READ) {
        e = vrnic_rx_read(core, qpn, qp, pkt, pmtu);
    } else if (op == VRNIC_IB_ATOMIC_WRITE) {
        e = vrnic_rx_atomic_write(core, qpn, qp, frame, pkt);
    } else if (op == VRNIC_IB_FLUSH) {
        e = vrnic_rx_flush(core, qpn, qp, pkt);
    } else {
        e = vrnic_rx_atomic(core, qpn, qp, pkt);
    }
    if (!e) {
        return;
    }
    x->msn = vrnic_psn_add(x->msn, 1);
    e->psn = pkt->hdr.bth.psn;
    e->msn = x->msn;
    x->rd_pending++;
    x->rd_new++;
    vrnic_resp_drain(core, qpn, qp);
}

/* An RC/UC request packet: PSN, opcode sequence, then the operation. */
void vrnic_rx_rc(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                 const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    const VrnicOpInfo *oi = pkt->op;
    uint32_t psn = pkt->hdr.bth.psn;
    uint32_t pmtu = vrnic_xport_pmtu(core, qp);
    bool rc = vrnic_qp_reliable(qp);
    bool in;

    if (!vrnic_rx_psn(core, qpn, qp, frame, pkt)) {
        return;
    }
    if (qp->type == VRNIC_QP_TYPE_XRC_TGT &&
        !vrnic_xrc_srq(core, qp, pkt->hdr.xrc_srqn,
                       oi->flags & VRNIC_OPF_FIRST)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                      VRNIC_WC_SUCCESS,
                      "XRCETH: no XRC SRQ of the domain, or another one");
        return;
    }
    x->nak_seq_sent = false;
    x->dup_acked = false;
    if (!vrnic_rx_op_sequence(core, qpn, qp, pkt, pmtu)) {
        return;
    }
    switch (vrnic_rx_msg_kind(oi)) {
    case VRNIC_MSG_SEND:
        in = vrnic_rx_send(core, qpn, qp, frame, pkt);
        break;
    case VRNIC_MSG_WRITE:
        in = vrnic_rx_write(core, qpn, qp, frame, pkt);
        break;
    default:
        if (rc && (oi->flags & (VRNIC_OPF_READ | VRNIC_OPF_ATOMIC |
                                VRNIC_OPF_RD_ACKED))) {
            vrnic_rx_rd_atomic(core, qpn, qp, frame, pkt, pmtu);
        } else {
            vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                          VRNIC_WC_SUCCESS, "opcode not for this QP");
        }
        return;
    }
    if (!in) {
        return;
    }
    x->epsn = vrnic_psn_add(psn, 1);
    /*
     * Held packets going in now or next are answered together when the
     * replay ends (vrnic_rx_replay_held): an ACK queued now would leave
     * ahead of the READ responses the replay queues, and tell the
     * requester that the responder got no further. Otherwise the ACK
     * leaves from the queue bottom half, after the rest of this receive
     * batch: a later ACK queued meanwhile replaces it (vrnic_resp_ack),
     * so a batch of frames is answered once.
     */
    if (rc && pkt->hdr.bth.ack_req && !x->replaying &&
        !vrnic_rx_held_next(x)) {
        vrnic_resp_ack(qp, psn, false, 0);
        vrnic_qp_set_pending(core, qp, true);
    }
}
