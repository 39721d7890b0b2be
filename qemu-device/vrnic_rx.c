/*
 * vrnic RoCEv2 receive side: routing frames to the RDMA engine, the
 * loopback wire, and the responder (RC, UC, UD/GSI). Rules common to the
 * transport are in vrnic_xport.h.
 *
 * Routing (vrnic_rx_route, from the Ethernet receive path after the MAC
 * filter, which passes every multicast MAC): an IPv4/IPv6 UDP frame to
 * port 4791 whose destination IP is one of the port's GIDs (::ffff:a.b.c.d
 * for IPv4), or a multicast group with QPs attached (vrnic_mcast.c),
 * belongs to the RDMA engine; everything else stays on the Ethernet RX
 * ring. A packet with DestQP VRNIC_MCAST_QPN goes to every QP attached to
 * its destination group, each checked as below like a DestQP. The codec then
 * parses it (lengths, checksums, opcode, ICRC); a frame it refuses is
 * dropped and counted (RX_ICRC_ERR, RX_MALFORMED port counters) and traced -
 * a bad wire packet is never a guest error.
 *
 * Loopback: a frame the transport addresses to one of the device's own
 * GIDs is not sent on the wire but queued (VRNIC_LOOP_SLOTS frames) and
 * received from the queue bottom half, so a QP can talk to a QP on the same
 * device without re-entering the core. A multicast send with members on
 * this device is queued there too (besides going on the wire). A full
 * queue holds the sender back (nothing is dropped). Each frame keeps the
 * QPN that sent it, so an RC/UC QP takes loopback frames only from the QP
 * it is connected to.
 *
 * Checks on every packet, in order (failures drop + count + trace): QP
 * exists (DestQP; 1 = GSI) and its type fits the opcode's transport
 * (RC, UC, UD for UD and GSI), P_Key is the default (low 15 bits all
 * ones), the QP state (responses: RTS/SQD/SQE; requests: RTR and later),
 * for RC/UC the addresses (source IP = the AV's destination GID,
 * destination IP = the AV's source GID: RX_BAD_ADDR), then for UD the
 * Q_Key (a mismatch is counted in RX_QKEY_MISMATCH, no CQE) and for RC/UC
 * the PSN (vrnic_xport.h) and the opcode sequence.
 *
 * Responder, per operation:
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
 *  - Payload sizes: FIRST/MIDDLE carry exactly one path MTU, LAST/ONLY at
 *    most one; a WRITE's packets must add up to the RETH length. Violations
 *    and out-of-sequence opcodes are NAK INVALID_REQUEST (RC; UC drops).
 * After sending an error NAK the RC responder moves its QP to ERR.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

#define VRNIC_RESP_BUDGET   64      /* response packets per drain */

/* ---- loopback wire ------------------------------------------------------ */

void vrnic_loop_init(VrnicCore *core)
{
    core->loop = g_new0(VrnicLoop, 1);
}

void vrnic_loop_uninit(VrnicCore *core)
{
    g_free(core->loop);
    core->loop = NULL;
}

void vrnic_loop_reset(VrnicCore *core)
{
    core->loop->head = core->loop->tail = 0;
}

bool vrnic_loop_has_room(VrnicCore *core)
{
    return core->loop->tail - core->loop->head < VRNIC_LOOP_SLOTS;
}

void vrnic_loop_put(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                    size_t len)
{
    VrnicLoop *l = core->loop;
    uint32_t slot = l->tail % VRNIC_LOOP_SLOTS;

    assert(vrnic_loop_has_room(core) && len <= VRNIC_XPORT_FRAME);
    memcpy(l->frame[slot], frame, len);
    l->len[slot] = len;
    l->src_qpn[slot] = qpn;
    l->tail++;
    vrnic_core_kick(core, VRNIC_WORK_QUEUES);
}

void vrnic_loop_process(VrnicCore *core)
{
    VrnicLoop *l = core->loop;
    uint8_t frame[VRNIC_XPORT_FRAME];
    unsigned n = 0;

    while (l->head != l->tail && n++ < VRNIC_LOOP_SLOTS) {
        uint32_t slot = l->head % VRNIC_LOOP_SLOTS;
        uint32_t len = l->len[slot];

        /* Dequeue first: handling the frame may queue answers. */
        memcpy(frame, l->frame[slot], len);
        core->rx_loop_src = l->src_qpn[slot];
        l->head++;
        core->stats.port[VRNIC_PORT_STAT_LOOP_PKTS]++;
        vrnic_rx_frame(core, frame, len);
        core->rx_loop_src = 0;
    }
    if (l->head != l->tail) {
        vrnic_core_kick(core, VRNIC_WORK_QUEUES);
    }
}

/* ---- routing -------------------------------------------------------------- */

static bool vrnic_rx_is_our_gid(const VrnicCore *core, const uint8_t *gid)
{
    for (uint32_t i = 0; i < core->cfg.gid_tbl_len; i++) {
        if (core->gids[i].type && !memcmp(core->gids[i].gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

bool vrnic_rx_route(VrnicCore *core, const uint8_t *frame, size_t len)
{
    static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
    const struct vrnic_udp_hdr *udp;
    size_t ip_off, ip_len, hlen;
    uint8_t gid[16];

    if (!vrnic_icrc_locate(frame, len, &ip_off, &ip_len)) {
        return false;
    }
    if ((frame[ip_off] >> 4) == 4) {
        hlen = (frame[ip_off] & 0xf) * 4;
        memcpy(gid, v4mapped, 12);
        memcpy(gid + 12, frame + ip_off + 16, 4);
    } else {
        hlen = sizeof(struct vrnic_ipv6_hdr);
        memcpy(gid, frame + ip_off + 24, 16);
    }
    if (hlen < 20 || hlen + sizeof(*udp) > ip_len) {
        return false;
    }
    udp = (const void *)(frame + ip_off + hlen);
    /* A multicast group is ours while a QP is attached to it. */
    if (vrnic_be16(udp->dport) != VRNIC_ROCE_UDP_DPORT ||
        !(vrnic_rx_is_our_gid(core, gid) ||
          vrnic_mcast_members(core, gid, NULL))) {
        return false;
    }
    vrnic_fault_frame(core, VRNIC_FAULT_DIR_RX, frame, len);
    return true;
}

/* ---- responder output queue ------------------------------------------ */

/*
 * The QP's remote rights, as they are now: MODIFY_QP may take a right away
 * in the middle of a WRITE or a READ response stream, and the rest of that
 * stream is then refused like a new request would be.
 */
static bool vrnic_qp_grants(const VrnicQp *qp, uint32_t right)
{
    return le32_to_cpu(qp->attr.access) & right;
}


/* IBTA 9.7.5.1 credit codes: the largest code whose count <= n. */
static uint8_t vrnic_credit_code(uint32_t n)
{
    static const uint16_t count[31] = {
        0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
        512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
        24576, 32768,
    };
    uint8_t c = 0;

    while (c < 30 && count[c + 1] <= n) {
        c++;
    }
    return c;
}

static uint8_t vrnic_ack_syndrome(const VrnicQp *qp)
{
    uint32_t credits;

    if (qp->srqn) {
        credits = VRNIC_AETH_CREDITS_INVALID;
    } else if (!qp->rq.log_depth) {
        credits = 0;
    } else {
        credits = vrnic_credit_code((uint16_t)(qp->rq.pi - qp->rq.ci));
    }
    return VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_ACK) | credits;
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

static VrnicResp *vrnic_resp_push(VrnicXport *x)
{
    VrnicResp *e;

    if (x->q_tail - x->q_head >= x->q_size) {
        return NULL;    /* bounded by rd_pending + coalescing */
    }
    e = &x->q[x->q_tail % x->q_size];
    memset(e, 0, sizeof(*e));
    x->q_tail++;
    return e;
}

static uint8_t vrnic_nak_syn(uint8_t code)
{
    return VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_NAK) | code;
}

static bool vrnic_resp_ack(VrnicQp *qp, uint32_t psn, bool nak, uint8_t syn)
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
        e = vrnic_resp_push(x);
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
    uint8_t frame[VRNIC_XPORT_FRAME];
    VrnicPktAddr a;
    size_t off, flen;
    bool loop;

    if (!vrnic_xport_addr(core, &qp->attr.av, qpn,
                          le32_to_cpu(qp->attr.dest_qpn), &a, &loop)) {
        return VRNIC_RESP_OUT_SENT;
    }
    if (!vrnic_xport_can_send(core, loop)) {
        core->ip_id--;
        return VRNIC_RESP_OUT_WAIT;
    }
    h->bth.pkey = 0xffff;
    h->bth.dqpn = le32_to_cpu(qp->attr.dest_qpn) & VRNIC_IB_QPN_MASK;
    off = vrnic_pkt_build_hdrs(frame, sizeof(frame), &a, h, plen);
    if (!off) {
        return VRNIC_RESP_OUT_SENT;
    }
    /* Memory the MR names but the bus refuses (not RAM, unmapped). */
    if (mr && plen && !vrnic_mr_rw(core, mr, va, frame + off, plen, false)) {
        return VRNIC_RESP_OUT_BAD_READ;
    }
    flen = vrnic_pkt_finish(frame, sizeof(frame));
    if (h->bth.opcode == VRNIC_OP(RC, ACK) ||
        h->bth.opcode == VRNIC_OP(RC, ATOMIC_ACK)) {
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
        if (e->kind == VRNIC_RESP_ACK || e->kind == VRNIC_RESP_ATOMIC) {
            h.bth.opcode = e->kind == VRNIC_RESP_ACK ?
                           VRNIC_OP(RC, ACK) : VRNIC_OP(RC, ATOMIC_ACK);
            h.bth.psn = e->psn;
            h.atomic_orig = e->orig;
            if (vrnic_resp_send(core, qpn, qp, &h, 0, NULL, 0) ==
                VRNIC_RESP_OUT_WAIT) {
                vrnic_qp_set_pending(core, qp, true);
                return;
            }
            if (e->kind == VRNIC_RESP_ATOMIC) {
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
                         vrnic_rkey_check(core, e->rkey, qpn, qp->pdn,
                                          VRNIC_ACCESS_REMOTE_READ,
                                          e->va + e->off, plen, &mr))) {
                vrnic_resp_read_fail(core, qpn, qp, &h);
                return;
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
            e->off += plen;
            if (last) {
                vrnic_resp_rd_done(x, e);
                x->q_head++;
            }
        }
    }
}

/* ---- receive WQEs ---------------------------------------------------------- */

/*
 * No receive WQE for an RC SEND/WRITE_IMM: RNR NAK carrying the responder's
 * min_rnr_timer code (the requester's retry comes with the next issue).
 */
static void vrnic_resp_rnr_nak(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                               uint32_t psn)
{
    trace_vrnic_rx_drop(qpn, psn, "no receive WQE: RNR NAK");
    core->stats.port[VRNIC_PORT_STAT_RNR_NAKS_SENT]++;
    core->stats.port[VRNIC_PORT_STAT_NAKS_SENT]++;
    vrnic_resp_ack(qp, psn, true,
                   VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_RNR_NAK) |
                   (qp->attr.min_rnr_timer & 0x1f));
    vrnic_resp_drain(core, qpn, qp);
}

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
        off = qp->rq.offset + ((uint64_t)(qp->rq.ci &
                               ((1u << qp->rq.log_depth) - 1)) <<
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

/* Scatter len bytes at message offset off into the held receive WQE. */
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
                           chunk, &mr) ||
            !vrnic_mr_rw(core, mr, le64_to_cpu(g.addr) + off, (void *)buf,
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
    vrnic_cq_post(core, qp->recv_cqn, e);
}

/* ---- responder ----------------------------------------------------------- */

static void vrnic_rx_drop(VrnicCore *core, uint64_t *counter, uint32_t qpn,
                          uint32_t psn, const char *why)
{
    (*counter)++;
    trace_vrnic_rx_drop(qpn, psn, why);
}

/* RC: NAK with an error code and move to ERR; the receive WQE held for
 * the message (if any) completes with status. UC: drop the message. */
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
    if (qp->type != VRNIC_QP_TYPE_RC) {
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

static void vrnic_rx_ud(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                        const uint8_t *frame, const VrnicPkt *pkt)
{
    uint8_t grh[VRNIC_GRH_LEN];
    struct vrnic_cqe e = { .opcode = VRNIC_CQE_OP_RECV };
    uint32_t psn = pkt->hdr.bth.psn;

    if (pkt->hdr.deth.qkey != le32_to_cpu(qp->attr.qkey)) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_QKEY_MISMATCH], qpn, psn,
                      "Q_Key mismatch");
        return;
    }
    if (!vrnic_rx_get_rwqe(core, qpn, qp)) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_NO_WQE], qpn, psn,
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
    e.byte_len = cpu_to_le32(sizeof(grh) + pkt->payload_len);
    e.src_qp = cpu_to_le32(pkt->hdr.deth.sqpn & VRNIC_IB_QPN_MASK);
    e.flags = VRNIC_CQE_FLAG_GRH;
    e.network_hdr_type = pkt->ip_version == 4 ? VRNIC_NET_TYPE_IPV4 :
                                                VRNIC_NET_TYPE_IPV6;
    if (pkt->op->hdrs & VRNIC_HDR_IMM) {
        uint32_t raw = vrnic_be32(pkt->hdr.imm);

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

/* The RETH/AtomicETH target: QP right, then the MR. Zero length passes. */
static bool vrnic_rx_rkey_ok(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                             uint32_t right,
                             uint32_t rkey, uint64_t va, uint64_t len)
{
    if (!len) {
        return true;    /* C9-88: no R_Key check for zero-length */
    }
    if (!vrnic_qp_grants(qp, right)) {
        trace_vrnic_rx_drop(0, 0, "QP lacks the remote right");
        return false;
    }
    return vrnic_rkey_check(core, rkey, qpn, qp->pdn, right, va, len,
                            NULL) == VRNIC_MR_OK;
}

/* RC/UC PSN check; true when the packet is the expected one. */
/*
 * A duplicate READ whose PSN falls in a response stream still queued
 * replaces that stream: the requester asks again from what it is missing
 * (its va, length and PSN), so the stream restarts there as a new one.
 */
static bool vrnic_resp_restart_read(VrnicXport *x, const VrnicPkt *pkt,
                                    uint32_t pmtu)
{
    uint32_t psn = pkt->hdr.bth.psn;

    for (uint32_t i = x->q_head; i != x->q_tail; i++) {
        VrnicResp *e = &x->q[i % x->q_size];

        if (e->kind == VRNIC_RESP_READ &&
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

/* ---- reordering: packets held past a gap ---------------------------------- */

static void vrnic_rx_held_free(VrnicXport *x, unsigned i)
{
    if (x->held[i]) {
        g_free(x->held[i]);
        x->held[i] = NULL;
        x->nheld--;
        (*x->dev_held)--;
    }
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
static bool vrnic_rx_held_next(const VrnicXport *x)
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

static void vrnic_rx_qp(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                        const VrnicPkt *pkt);

/*
 * The gap before held packets closed: they go in, in PSN order, through
 * the same checks as a packet from the wire (the QP may have failed or
 * stopped meanwhile; then they are dropped like one).
 */
static void vrnic_rx_replay_held(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
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

static bool vrnic_rx_psn(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                         const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    uint32_t psn = pkt->hdr.bth.psn;
    int32_t d = vrnic_psn_diff(psn, x->epsn);
    uint8_t op = pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK;

    if (d == 0) {
        return true;
    }
    if (qp->type == VRNIC_QP_TYPE_UC) {
        if (pkt->op->flags & VRNIC_OPF_FIRST) {
            x->in_msg = VRNIC_MSG_NONE;     /* abandon the partial one */
            x->epsn = psn;
            return true;
        }
        x->in_msg = VRNIC_MSG_NONE;
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ], qpn, psn,
                      "UC PSN gap: rest of the message dropped");
        return false;
    }
    if (d > 0 && d <= (int32_t)VRNIC_PSN_WINDOW) {
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
            vrnic_rx_drop(core,
                          &core->stats.port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ],
                          qpn, psn, "PSN gap");
        }
        /* Only late, perhaps: the NAK waits. */
        if (d <= (int32_t)VRNIC_OOO_NAK_AFTER && !pkt->hdr.bth.ack_req) {
            return false;
        }
        /*
         * One NAK per gap - and one more per resend pass that still leaves
         * it open: a gap PSN more than VRNIC_OOO_NAK_AFTER below the highest
         * seen since the NAK means the requester went back, and its copy
         * of ePSN was lost too (without this NAK that loss would wait for
         * the requester's timer). A smaller step back is reordering on
         * the wire: NAKing it would send the requester back again while
         * its resent copy of ePSN is still on the way, and every such
         * NAK costs it a retry.
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
        return false;
    }
    if (d < 0 && d >= -(int32_t)VRNIC_PSN_WINDOW) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_DUPLICATE], qpn, psn, "duplicate");
        if (op == VRNIC_IB_READ_REQ) {
            /*
             * Served again from memory (never more than the R_Key allows);
             * MSN and ePSN do not move. It replaces a stream still queued
             * for the same request, else takes a READ/atomic slot like a
             * new request (the drain frees it) so the response queue stays
             * bounded; without a free slot the duplicate is dropped and
             * the requester asks again.
             */
            bool ok = pkt->hdr.reth.len <= VRNIC_MAX_MSG &&
                      vrnic_rx_rkey_ok(core, qpn, qp, VRNIC_ACCESS_REMOTE_READ,
                                       pkt->hdr.reth.rkey, pkt->hdr.reth.va,
                                       pkt->hdr.reth.len);
            VrnicResp *e = NULL;

            if (ok && vrnic_resp_restart_read(x, pkt,
                                              vrnic_xport_pmtu(core, qp))) {
                core->stats.port[VRNIC_PORT_STAT_READ_REPLAYS]++;
            } else if (ok &&
                       x->rd_pending < MAX(qp->attr.max_dest_rd_atomic, 1)) {
                e = vrnic_resp_push(x);
            }
            if (e) {
                e->kind = VRNIC_RESP_READ;
                e->psn = psn;
                e->msn = x->msn;
                e->va = pkt->hdr.reth.va;
                e->rkey = pkt->hdr.reth.rkey;
                e->len = pkt->hdr.reth.len;
                e->replay = true;
                x->rd_pending++;
                core->stats.port[VRNIC_PORT_STAT_READ_REPLAYS]++;
            }
        } else if ((pkt->op->flags & VRNIC_OPF_ATOMIC) &&
                   x->rd_pending < MAX(qp->attr.max_dest_rd_atomic, 1)) {
            /* Never executed twice: answered from the result cache (the
             * newest entry with that PSN), or (too old) dropped. */
            for (unsigned n = 1; n <= VRNIC_ATOMIC_CACHE; n++) {
                unsigned i = (x->atomic_next - n) % VRNIC_ATOMIC_CACHE;

                if (x->atomic_cache[i].valid &&
                    x->atomic_cache[i].psn == psn) {
                    VrnicResp *e = vrnic_resp_push(x);

                    if (e) {
                        e->kind = VRNIC_RESP_ATOMIC;
                        e->psn = psn;
                        e->msn = x->msn;
                        e->orig = x->atomic_cache[i].orig;
                        e->replay = true;
                        x->rd_pending++;
                        core->stats.port[VRNIC_PORT_STAT_ATOMIC_REPLAYS]++;
                    }
                    break;
                }
            }
        } else if (!(pkt->op->flags & (VRNIC_OPF_ATOMIC | VRNIC_OPF_READ)) &&
                   (pkt->hdr.bth.ack_req || !x->dup_acked)) {
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
        return false;
    }
    vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_PSN_WINDOW], qpn, psn,
                  "PSN out of window");
    return false;
}

static void vrnic_rx_rc(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                        const uint8_t *frame, const VrnicPkt *pkt)
{
    VrnicXport *x = qp->x;
    const VrnicOpInfo *oi = pkt->op;
    uint32_t psn = pkt->hdr.bth.psn;
    uint32_t pmtu = vrnic_xport_pmtu(core, qp);
    uint32_t plen = pkt->payload_len;
    const uint8_t *payload = frame + pkt->payload_off;
    bool rc = qp->type == VRNIC_QP_TYPE_RC;
    bool first = oi->flags & VRNIC_OPF_FIRST, last = oi->flags & VRNIC_OPF_LAST;
    uint8_t kind = (oi->flags & VRNIC_OPF_SEND) ? VRNIC_MSG_SEND :
                   (oi->flags & VRNIC_OPF_WRITE) ? VRNIC_MSG_WRITE :
                   VRNIC_MSG_NONE;
    uint8_t sts;

    if (!vrnic_rx_psn(core, qpn, qp, frame, pkt)) {
        return;
    }
    x->nak_seq_sent = false;
    x->dup_acked = false;
    /* Opcode sequence: a message in progress continues with its kind. */
    if (x->in_msg != VRNIC_MSG_NONE && (first || kind != x->in_msg)) {
        if (!rc && first) {
            x->in_msg = VRNIC_MSG_NONE;     /* UC: a new message starts */
        } else {
            vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                          VRNIC_WC_SUCCESS, "opcode out of sequence");
            return;
        }
    }
    if (x->in_msg == VRNIC_MSG_NONE && !first && kind != VRNIC_MSG_NONE) {
        if (!rc) {
            vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ], qpn, psn,
                          "UC: middle of a dropped message");
            x->epsn = vrnic_psn_add(psn, 1);
            return;
        }
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ, VRNIC_WC_SUCCESS,
                      "MIDDLE/LAST without FIRST");
        return;
    }
    if ((oi->flags & VRNIC_OPF_PAYLOAD) &&
        (last ? plen > pmtu : plen != pmtu)) {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                      VRNIC_WC_SUCCESS, "payload length vs path MTU");
        return;
    }

    if (kind == VRNIC_MSG_SEND) {
        if (first) {
            if (!vrnic_rx_get_rwqe(core, qpn, qp)) {
                if (!rc) {
                    vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_NO_WQE], qpn, psn,
                                  "no receive WQE");
                    return;
                }
                vrnic_resp_rnr_nak(core, qpn, qp, psn);
                return;
            }
            x->rcv_off = 0;
            x->in_msg = VRNIC_MSG_SEND;
        }
        /* The offset is 32 bits: a message ends at 2^31 (IBTA). */
        sts = (uint64_t)x->rcv_off + plen > VRNIC_MAX_MSG ?
              VRNIC_WC_LOC_LEN_ERR :
              vrnic_rx_scatter(core, qpn, qp, x->rcv_off, payload, plen);
        if (sts != VRNIC_WC_SUCCESS) {
            vrnic_rx_fail(core, qpn, qp, psn,
                          sts == VRNIC_WC_LOC_LEN_ERR ? VRNIC_NAK_INV_REQ :
                                                        VRNIC_NAK_REM_OP,
                          sts, "receive buffer");
            return;
        }
        x->rcv_off += plen;
        if (last) {
            struct vrnic_cqe e = {
                .opcode = VRNIC_CQE_OP_RECV,
                .byte_len = cpu_to_le32(x->rcv_off),
            };

            if (oi->hdrs & VRNIC_HDR_IMM) {
                uint32_t raw = vrnic_be32(pkt->hdr.imm);

                memcpy(&e.imm_data, &raw, sizeof(raw));
                e.flags |= VRNIC_CQE_FLAG_IMM;
            }
            if (pkt->hdr.bth.se) {
                e.flags |= VRNIC_CQE_FLAG_SOLICITED;
            }
            if (oi->hdrs & VRNIC_HDR_IETH) {
                /* A valid fast-registration MR with a remote right, or a
                 * type 2 window bound through this QP: anything else is
                 * an invalid request, as rdma_rxe treats a user MR. */
                if (!vrnic_key_invalidate(core, qpn, qp->pdn,
                                          pkt->hdr.ieth_rkey, true)) {
                    vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                                  VRNIC_WC_REM_INV_REQ_ERR, "SEND_INV R_Key");
                    return;
                }
                e.imm_data = cpu_to_le32(pkt->hdr.ieth_rkey);
                e.flags |= VRNIC_CQE_FLAG_INV;
            }
            vrnic_rx_complete(core, qpn, qp, &e);
            x->in_msg = VRNIC_MSG_NONE;
            x->msn = vrnic_psn_add(x->msn, 1);
        }
    } else if (kind == VRNIC_MSG_WRITE) {
        VrnicMr *mr;

        if (first) {
            if (pkt->hdr.reth.len > VRNIC_MAX_MSG) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                              VRNIC_WC_SUCCESS, "WRITE longer than 2^31");
                return;
            }
            if (!vrnic_rx_rkey_ok(core, qpn, qp, VRNIC_ACCESS_REMOTE_WRITE,
                                  pkt->hdr.reth.rkey, pkt->hdr.reth.va,
                                  pkt->hdr.reth.len)) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                              VRNIC_WC_SUCCESS, "WRITE R_Key/access/bounds");
                return;
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
            return;
        }
        if ((oi->hdrs & VRNIC_HDR_IMM) && !vrnic_rx_get_rwqe(core, qpn, qp)) {
            if (!rc) {
                x->in_msg = VRNIC_MSG_NONE;
                vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_NO_WQE], qpn, psn,
                              "no receive WQE");
                return;
            }
            vrnic_resp_rnr_nak(core, qpn, qp, psn);
            return;
        }
        if (plen) {
            if (!vrnic_qp_grants(qp, VRNIC_ACCESS_REMOTE_WRITE) ||
                vrnic_rkey_check(core, x->wr_rkey, qpn, qp->pdn,
                                 VRNIC_ACCESS_REMOTE_WRITE,
                                 x->wr_va + x->rcv_off, plen, &mr) ||
                !vrnic_mr_rw(core, mr, x->wr_va + x->rcv_off, (void *)payload,
                             plen, true)) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                              VRNIC_WC_SUCCESS, "WRITE target went away");
                return;
            }
        }
        x->rcv_off += plen;
        if (last) {
            if (oi->hdrs & VRNIC_HDR_IMM) {
                struct vrnic_cqe e = {
                    .opcode = VRNIC_CQE_OP_RECV_RDMA_WITH_IMM,
                    .byte_len = cpu_to_le32(x->wr_len),
                    .flags = VRNIC_CQE_FLAG_IMM,
                };
                uint32_t raw = vrnic_be32(pkt->hdr.imm);

                memcpy(&e.imm_data, &raw, sizeof(raw));
                if (pkt->hdr.bth.se) {
                    e.flags |= VRNIC_CQE_FLAG_SOLICITED;
                }
                vrnic_rx_complete(core, qpn, qp, &e);
            }
            x->in_msg = VRNIC_MSG_NONE;
            x->msn = vrnic_psn_add(x->msn, 1);
        }
    } else if (rc && (oi->flags & (VRNIC_OPF_READ | VRNIC_OPF_ATOMIC))) {
        bool read = oi->flags & VRNIC_OPF_READ;
        VrnicResp *e;

        /* Replays of duplicates do not count: the requester cannot know. */
        if (x->rd_new >= MAX(qp->attr.max_dest_rd_atomic, 1)) {
            vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                          VRNIC_WC_SUCCESS, "too many READ/atomics");
            return;
        }
        if (read) {
            if (pkt->hdr.reth.len > VRNIC_MAX_MSG) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                              VRNIC_WC_SUCCESS, "READ longer than 2^31");
                return;
            }
            if (!vrnic_rx_rkey_ok(core, qpn, qp, VRNIC_ACCESS_REMOTE_READ,
                                  pkt->hdr.reth.rkey, pkt->hdr.reth.va,
                                  pkt->hdr.reth.len)) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                              VRNIC_WC_SUCCESS, "READ R_Key/access/bounds");
                return;
            }
            e = vrnic_resp_push(x);
            if (!e) {
                vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_BAD_STATE],
                              qpn, psn, "response queue full");
                return;
            }
            e->kind = VRNIC_RESP_READ;
            e->va = pkt->hdr.reth.va;
            e->rkey = pkt->hdr.reth.rkey;
            e->len = pkt->hdr.reth.len;
            x->epsn = vrnic_psn_add(psn, vrnic_read_psns(e->len, pmtu));
        } else {
            uint64_t va = pkt->hdr.atomic.va, val;
            VrnicMr *mr;

            if (va & 7) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ,
                              VRNIC_WC_SUCCESS, "atomic not 8-byte aligned");
                return;
            }
            if (!vrnic_rx_rkey_ok(core, qpn, qp, VRNIC_ACCESS_REMOTE_ATOMIC,
                                  pkt->hdr.atomic.rkey, va, 8) ||
                vrnic_rkey_check(core, pkt->hdr.atomic.rkey, qpn, qp->pdn,
                                 VRNIC_ACCESS_REMOTE_ATOMIC, va, 8, &mr) ||
                !vrnic_mr_rw(core, mr, va, &val, 8, false)) {
                vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_REM_ACCESS,
                              VRNIC_WC_SUCCESS, "atomic R_Key/access/bounds");
                return;
            }
            /*
             * The read-modify-write below cannot interleave with another
             * atomic: the core runs single-threaded in the main loop, so
             * this is atomic against every QP of the device (ATOMIC_HCA).
             */
            val = le64_to_cpu(val);
            e = vrnic_resp_push(x);
            if (!e) {
                vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_BAD_STATE],
                              qpn, psn, "response queue full");
                return;
            }
            e->kind = VRNIC_RESP_ATOMIC;
            e->orig = val;
            if ((pkt->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK) ==
                VRNIC_IB_CMP_SWAP) {
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
                return;
            }
            x->atomic_cache[x->atomic_next % VRNIC_ATOMIC_CACHE].valid = true;
            x->atomic_cache[x->atomic_next % VRNIC_ATOMIC_CACHE].psn = psn;
            x->atomic_cache[x->atomic_next % VRNIC_ATOMIC_CACHE].orig =
                e->orig;
            x->atomic_next++;
            x->epsn = vrnic_psn_add(psn, 1);
        }
        x->msn = vrnic_psn_add(x->msn, 1);
        e->psn = psn;
        e->msn = x->msn;
        x->rd_pending++;
        x->rd_new++;
        vrnic_resp_drain(core, qpn, qp);
        return;
    } else {
        vrnic_rx_fail(core, qpn, qp, psn, VRNIC_NAK_INV_REQ, VRNIC_WC_SUCCESS,
                      "opcode not for this QP");
        return;
    }
    x->epsn = vrnic_psn_add(psn, 1);
    /*
     * Held packets going in now or next are answered together when the
     * replay ends (vrnic_rx_replay_held): an ACK queued now would leave
     * ahead of the READ responses the replay queues, and tell the
     * requester that the responder got no further.
     */
    if (rc && pkt->hdr.bth.ack_req && !x->replaying &&
        !vrnic_rx_held_next(x)) {
        vrnic_resp_ack(qp, psn, false, 0);
        vrnic_resp_drain(core, qpn, qp);
    }
}

/*
 * A connected QP talks to one peer: its packets come from the AV's
 * destination GID to the AV's source GID (rxe's check_addr). Anyone else
 * on the wire could otherwise inject UC data without guessing a PSN, RC
 * data by covering the PSN window, or forge ACKs and READ responses.
 */
static bool vrnic_rx_from_peer(const VrnicCore *core, const VrnicQp *qp,
                               const VrnicPkt *pkt)
{
    const struct vrnic_av *av = &qp->attr.av;

    /*
     * On the loopback path the device also knows the sending QP, which an
     * RC/UC header does not carry: only the QP this one is connected to
     * (another process's QP on this host has the same GID as the peer).
     */
    if (core->rx_loop_src && core->rx_loop_src !=
        (le32_to_cpu(qp->attr.dest_qpn) & VRNIC_IB_QPN_MASK)) {
        return false;
    }
    return av->sgid_index < core->cfg.gid_tbl_len &&
           core->gids[av->sgid_index].type &&
           !memcmp(pkt->addr.sgid, av->dgid, 16) &&
           !memcmp(pkt->addr.dgid, core->gids[av->sgid_index].gid, 16);
}

/* Deliver a parsed packet to QP qpn (its DestQP, or a multicast member). */
static void vrnic_rx_qp(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                        const VrnicPkt *pkt)
{
    uint8_t tr = pkt->hdr.bth.opcode & VRNIC_IB_TRANSPORT_MASK;
    uint8_t type;
    VrnicQp *qp;
    bool resp;

    qp = qpn ? vrnic_qp_get(core, qpn) : NULL;
    type = qp ? qp->type : 0;
    if (!qp ||
        (tr == VRNIC_IB_RC && type != VRNIC_QP_TYPE_RC) ||
        (tr == VRNIC_IB_UC && type != VRNIC_QP_TYPE_UC) ||
        (tr == VRNIC_IB_UD && type != VRNIC_QP_TYPE_UD &&
         type != VRNIC_QP_TYPE_GSI) || tr == VRNIC_IB_RD) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_NO_QP], qpn,
                      pkt->hdr.bth.psn, "no QP of that type");
        return;
    }
    if ((pkt->hdr.bth.pkey & 0x7fff) != 0x7fff) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_BAD_PKEY], qpn,
                      pkt->hdr.bth.psn, "P_Key");
        return;
    }
    resp = !(pkt->op->flags & VRNIC_OPF_REQ);    /* ACK, READ/atomic resp */
    if (resp ? (qp->state != VRNIC_QPS_RTS && qp->state != VRNIC_QPS_SQD &&
                qp->state != VRNIC_QPS_SQE) :
               (qp->state < VRNIC_QPS_RTR || qp->state > VRNIC_QPS_SQE)) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_BAD_STATE], qpn,
                      pkt->hdr.bth.psn, "QP state");
        return;
    }
    if ((tr == VRNIC_IB_RC || tr == VRNIC_IB_UC) &&
        !vrnic_rx_from_peer(core, qp, pkt)) {
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_BAD_ADDR],
                      qpn, pkt->hdr.bth.psn, "not from the QP's peer");
        return;
    }
    if (resp) {
        vrnic_tx_response(core, qpn, qp, frame, pkt);
    } else if (tr == VRNIC_IB_UD) {
        vrnic_rx_ud(core, qpn, qp, frame, pkt);
    } else {
        vrnic_rx_rc(core, qpn, qp, frame, pkt);
        if (tr == VRNIC_IB_RC) {
            vrnic_rx_replay_held(core, qpn, qp);
        }
    }
}

void vrnic_rx_frame(VrnicCore *core, const uint8_t *frame, size_t len)
{
    VrnicPkt pkt;
    VrnicPktErr err = vrnic_pkt_parse(frame, len, &pkt);

    if (err != VRNIC_PKT_OK) {
        if (err == VRNIC_PKT_ERR_ICRC) {
            core->stats.port[VRNIC_PORT_STAT_RX_ICRC_ERR]++;
        } else {
            core->stats.port[VRNIC_PORT_STAT_RX_MALFORMED]++;
        }
        trace_vrnic_rx_bad(vrnic_pkt_err_str(err), len);
        return;
    }
    core->stats.port[VRNIC_PORT_STAT_RX_PKTS]++;
    core->stats.port[VRNIC_PORT_STAT_RX_BYTES] += len;
    trace_vrnic_rx_pkt(pkt.hdr.bth.dqpn, pkt.hdr.bth.opcode, pkt.hdr.bth.psn,
                       pkt.payload_len);
    if (pkt.hdr.bth.dqpn == VRNIC_MCAST_QPN) {
        /* Multicast: every QP attached to the destination group, each
         * checked as if it were the DestQP (so only UD QPs take it). */
        uint32_t qpns[VRNIC_MCAST_MAX_QP_ATTACH];
        uint32_t n = vrnic_mcast_members(core, pkt.addr.dgid, qpns);

        if (!n) {
            vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_NO_QP],
                          VRNIC_MCAST_QPN, pkt.hdr.bth.psn,
                          "multicast: no QP attached to the group");
            return;
        }
        trace_vrnic_mcast_rx(ldq_be_p(pkt.addr.dgid),
                             ldq_be_p(pkt.addr.dgid + 8), n);
        for (uint32_t i = 0; i < n; i++) {
            vrnic_rx_qp(core, qpns[i], frame, &pkt);
        }
        return;
    }
    if (vrnic_gid_is_mcast(pkt.addr.dgid)) {
        /* IBTA: a packet to a multicast address carries DestQP 0xFFFFFF. */
        vrnic_rx_drop(core, &core->stats.port[VRNIC_PORT_STAT_RX_NO_QP],
                      pkt.hdr.bth.dqpn, pkt.hdr.bth.psn,
                      "multicast destination with a unicast DestQP");
        return;
    }
    vrnic_rx_qp(core, pkt.hdr.bth.dqpn, frame, &pkt);
}
