/*
 * vrnic RoCEv2 transport (device core): per-QP requester and responder
 * state, the loopback queue, and what the transport's files share. One
 * role per file, as IBTA divides the work:
 *   vrnic_recv.c        receive: routing, per-packet checks, dispatch
 *   vrnic_req.c         requester: send WQEs to packets
 *   vrnic_comp.c        completer: responses to progress and completions
 *   vrnic_retry.c       requester recovery: timers, go-back-N, holes
 *   vrnic_resp_seq.c    responder: the PSN sequence, held packets
 *   vrnic_resp.c        responder: executing requests
 *   vrnic_resp_queue.c  responder output: ACKs, NAKs, READ responses
 *   vrnic_loop.c        the loopback wire
 *   vrnic_xport.c       QP transport state, addressing, output, the send
 *                       window's lookups, local memory through SGEs
 *
 * Recovery from loss (retransmission, the early retransmit, holding
 * packets past a gap, duplicates, RNR) is described in
 * vrnic's Documentation/reliability.rst; the rules in brief:
 *  - PSNs are 24-bit and wrap; every comparison is a signed 24-bit
 *    difference (vrnic_psn_diff).
 *  - Responder PSN regions relative to the expected PSN e (RC):
 *      psn == e                      in order: executed, then the packets
 *                                    held after it
 *      e < psn <= e + 2^22           a gap: held when within
 *                                    VRNIC_OOO_SLOTS, else dropped; one
 *                                    NAK PSN-sequence-error per gap
 *      e - 2^22 <= psn < e           duplicate: re-ACKed (SEND/WRITE),
 *                                    re-served (READ) or answered from the
 *                                    result cache (atomics), never
 *                                    executed again
 *      anything else                 out of window: dropped and counted
 *    UC: a PSN other than e drops the rest of the current message; the next
 *    FIRST/ONLY packet starts a new one (its PSN becomes e).
 *  - The requester keeps at most VRNIC_TX_WINDOW send WQEs and
 *    vrnic_tx_pkt_window() unacknowledged PSNs in flight and at most
 *    max_rd_atomic (0 counts as 1) READ/atomic requests; FENCE waits for
 *    outstanding READ/atomics; a message that takes a receive WQE waits
 *    for the responder's end-to-end credits (vrnic_tx_credit_ok). A
 *    sequence NAK resends the missing packet alone; timeouts and implied
 *    NAKs go back to the oldest unanswered PSN.
 *  - ACK policy (responder): one ACK per receive batch that held packets
 *    with AckReq (the requester sets it on the last packet of every RC
 *    message and four times per packet window), sent by the queue bottom
 *    half, carrying the MSN and the credit code of the receive WQEs the RQ
 *    holds (0x1F with an SRQ); after an ACK that gave no credits, one more
 *    as soon as receive WQEs are posted (vrnic_resp_rq_posted). Responses
 *    (ACKs, NAKs, READ response streams,
 *    atomic ACKs) leave in request order through a per-QP queue;
 *    consecutive plain ACKs in it coalesce into the newest.
 *  - Received error NAKs: REMOTE_ACCESS / INVALID_REQUEST /
 *    REMOTE_OPERATIONAL complete the WQE with REM_ACCESS_ERR /
 *    REM_INV_REQ_ERR / REM_OP_ERR (earlier WQEs complete successfully
 *    first) and move the QP to ERR, which flushes the rest.
 *
 * Atomicity: every entry into the device core holds the device's lock
 * (vrnic.c), in the main loop or in an IOThread, so the read-modify-write
 * of an atomic (vrnic_resp.c) can never interleave with another atomic on
 * this device, from any QP: that is IB_ATOMIC_HCA.
 *
 * Guest memory is little-endian (the 64-bit value an atomic operates on,
 * and the original value the requester stores).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_XPORT_H
#define HW_VRNIC_XPORT_H

#include "vrnic_core_int.h"
#include "vrnic_pkt.h"

#define VRNIC_TX_WINDOW     32      /* send WQEs in flight per QP */
#define VRNIC_MAX_MSG       (1u << 31)  /* IBTA: the longest message */
#define VRNIC_TX_BUDGET     64      /* packets per QP per bottom-half run */
#define VRNIC_PSN_WINDOW    (1u << 22)
#define VRNIC_WQE_MAX       512     /* largest WQE (shift 9) */
#define VRNIC_MAX_PMTU      4096
/*
 * Largest RoCEv2 frame the transport builds: IPv6, PMTU payload, the
 * biggest header set (RETH + ImmDt), ICRC; rounded up.
 */
#define VRNIC_XPORT_FRAME   (VRNIC_MAX_PMTU + 256)
/* A loopback slot holds either such a frame or a raw packet QP's frame. */
#define VRNIC_LOOP_FRAME    MAX_CONST(VRNIC_XPORT_FRAME, \
                                      VRNIC_MAX_MTU + \
                                      VRNIC_ETH_FRAME_OVERHEAD)
#define VRNIC_LOOP_SLOTS    64      /* loopback frames in flight */
/*
 * The requester's packet window: unacknowledged request PSNs per QP, as
 * many as carry VRNIC_TX_WINDOW_BYTES at the WQE's path MTU, at most
 * VRNIC_TX_PKT_WINDOW (vrnic_tx_pkt_window). A round trip costs the same
 * time at any MTU, so the window is bytes: 256 PSNs at path MTU 1024,
 * 64 at 4096. (A fixed 64 PSNs held path MTU 1024 to 64 KiB per round
 * trip; 256 at 4096 put more in flight than the wire's buffer holds.)
 */
#define VRNIC_TX_WINDOW_BYTES (256 * 1024)
#define VRNIC_TX_PKT_WINDOW 256
/*
 * AckReq is also set on every PSN that is a multiple of a quarter of the
 * packet window, less one (vrnic_tx_ackreq_every): four ACKs are due per
 * window of a long message, so the window reopens long before it closes.
 */
#define VRNIC_TX_ACKREQ_PER_WINDOW 4
/*
 * Early retransmit: the floor of its timeout (the round trip estimate
 * plus four deviations), ns; its ceiling is half the QP's timeout.
 */
#define VRNIC_TX_EARLY_MIN_NS 1000000
/*
 * Early retransmits per stall, each after twice the wait of the one
 * before; then only the QP's timer.
 */
#define VRNIC_TX_EARLY_MAX  4
/*
 * Atomic results kept for replays: as many as max-qp-rd-atom can have
 * unanswered (255), so a lost ATOMIC ACK can always be answered again.
 */
#define VRNIC_ATOMIC_CACHE  256
/*
 * Packets past a gap, at the responder: RC request packets up to
 * VRNIC_OOO_SLOTS PSNs past ePSN are held (a copy each) instead of
 * dropped, and go in as soon as the gap before them closes, so the
 * requester only has to send the missing packet again. The NAK for the
 * gap waits until a packet more than VRNIC_OOO_NAK_AFTER past ePSN
 * arrives or one asks for an answer (AckReq): a packet that is only late
 * (reordered by fewer places) costs nothing. The slots cover the
 * requester's packet window; the device holds at most VRNIC_OOO_DEVICE
 * frames over all QPs (beyond, gap packets are dropped as without). A
 * peer decides what is held, so it is bounded: only a packet whose
 * payload fits the path MTU as IBTA sizes it (FIRST/MIDDLE exactly one,
 * LAST/ONLY at most one) is held, so a frame is at most
 * VRNIC_XPORT_FRAME bytes, VRNIC_OOO_SLOTS per QP; and a held frame
 * whose gap has not closed after VRNIC_OOO_MAX_AGE_NS is dropped
 * (RX_OOO_DROPPED), as are those refused - the requester's recovery
 * resends them.
 */
#define VRNIC_OOO_SLOTS     VRNIC_TX_PKT_WINDOW
#define VRNIC_OOO_NAK_AFTER 8
#define VRNIC_OOO_DEVICE    1024
#define VRNIC_OOO_MAX_AGE_NS 1000000000ll
/*
 * READ responses past a missing one, at the requester: up to this many
 * PSNs past the first missing response are placed (their offset follows
 * from their PSN) and remembered, so the READ is asked again only for
 * what is missing (vrnic_comp.c, vrnic_tx_rd_place).
 */
#define VRNIC_TX_RD_AHEAD   64

/* A request packet held past a PSN gap: the parse result and the frame. */
typedef struct VrnicHeld {
    int64_t since;          /* device clock when it was held */
    VrnicPkt pkt;
    uint8_t frame[];        /* pkt.len bytes */
} VrnicHeld;

/* One send WQE in flight (slot = SQ index % VRNIC_TX_WINDOW). */
typedef struct VrnicSwqe {
    union {
        uint8_t raw[VRNIC_WQE_MAX]; /* the validated copy */
        struct vrnic_send_wqe hdr;
    };
    uint32_t len;           /* message length */
    uint32_t pmtu;          /* path MTU it was segmented for, at its start */
    uint32_t data_off;      /* SGEs / inline data in raw */
    uint32_t first_psn;
    uint32_t last_psn;
    uint32_t npkts;         /* request packets (1 for READ/atomic) */
    uint32_t sent;          /* request packets sent */
    uint32_t rcvd;          /* READ: bytes placed from the start on */
    uint64_t rd_ahead;      /* READ: bit i: placed, PSN first missing + i + 1 */
    uint32_t rd_end;        /* READ: where the latest request's data ends */
    uint32_t rd_after;      /* READ/atomic: snd_max when it was (re)sent */
    bool started;
    bool done;              /* ready to complete (with status) */
    uint8_t status;         /* enum vrnic_wc_status */
} VrnicSwqe;

enum {
    VRNIC_RESP_ACK,         /* ACK or NAK: syndrome, psn, msn */
    VRNIC_RESP_READ,        /* READ response stream */
    VRNIC_RESP_ATOMIC,      /* ATOMIC ACKNOWLEDGE */
    VRNIC_RESP_RD_ACK,      /* ATOMIC WRITE, FLUSH: empty READ RESPONSE ONLY */
};

/* One queued responder output. */
typedef struct VrnicResp {
    uint8_t kind;
    uint8_t syndrome;       /* ACK/NAK: the AETH syndrome (credits: at send) */
    bool nak;
    uint32_t psn;
    uint32_t msn;
    uint64_t va;            /* READ */
    uint32_t rkey;
    uint32_t pdn;           /* READ: the PD rkey belongs to (XRC: the SRQ's) */
    uint32_t srqn;          /* XRC target: the SRQ the request named */
    uint32_t len;
    uint32_t off;           /* READ: bytes sent */
    bool replay;            /* READ/ATOMIC/RD_ACK: answers a duplicate */
    uint64_t orig;          /* ATOMIC */
} VrnicResp;

/*
 * An executed atomic, ATOMIC WRITE or FLUSH, kept for a duplicate of it:
 * its answer (kind VRNIC_RESP_ATOMIC with the original value, or
 * VRNIC_RESP_RD_ACK) is sent again, the request never executed twice.
 */
typedef struct VrnicAtomicResult {
    bool valid;
    uint8_t kind;
    uint32_t psn;
    uint64_t orig;
} VrnicAtomicResult;

enum {
    VRNIC_MSG_NONE,
    VRNIC_MSG_SEND,
    VRNIC_MSG_WRITE,
};

/*
 * The path of a QP's packets (vrnic_xport_path): resolved from an AV once,
 * not per packet. An RC/UC QP has one; a UD QP keeps the one of the last
 * AV it sent to. It holds while the AV and the DestQP are the same and
 * the port's MAC and GIDs have not changed (VrnicCore.addr_gen).
 */
typedef struct VrnicPath {
    bool valid;
    uint32_t gen;           /* core->addr_gen when it was resolved */
    struct vrnic_av av;     /* ... from this AV (a copy: the key) */
    uint32_t rqpn;          /* ... to this QP */
    bool loop;              /* the destination GID is one of the port's */
    VrnicPktTmpl tmpl;
} VrnicPath;

/* vrnic_rx_scatter: an on-demand page fault is outstanding (no CQE status) */
#define VRNIC_RX_PAGE_WAIT  0xff

enum {
    VRNIC_ODP_IDLE,         /* no page fault outstanding */
    VRNIC_ODP_QUEUED,       /* raised, waiting for room in the AEQ */
    VRNIC_ODP_POSTED,       /* on the AEQ, waiting for PAGE_FAULT_DONE */
};

/* The page fault of one side of a QP (vrnic_odp.c). */
typedef struct VrnicOdpFault {
    uint8_t state;          /* VRNIC_ODP_* */
    bool failed;            /* answered FAILED: the next check fails */
    bool write;
    uint32_t key;           /* the MR's key */
    uint64_t page;          /* first page not mapped, index in the MR */
    uint32_t npages;
} VrnicOdpFault;

/* Transport state of one QP (heap, VrnicQp.x); zeroed at RESET. */
typedef struct VrnicXport {
    /* requester */
    uint32_t psn;           /* next PSN to assign */
    uint32_t acked_psn;     /* newest PSN the responder acknowledged */
    uint16_t next;          /* SQ index of the WQE being / to be sent */
    uint32_t rd_out;        /* READ/atomic requests in flight */
    uint32_t snd_max;       /* PSN after the newest request PSN sent */
    uint8_t retries;        /* retransmissions since the last progress */
    uint8_t rnr_retries;    /* RNR retries since the last progress */
    bool gbn_valid;         /* went back to gbn_psn, no progress since */
    bool resend;            /* a WQE before next is to be sent again */
    bool gbn_resent;        /* gbn_psn went out again since the go-back */
    uint32_t gbn_psn;
    int64_t rto_due;        /* retransmit timer (device clock), 0: off */
    int64_t rnr_due;        /* RNR wait: nothing is sent before, 0: none */
    /* Round trip estimate for the early retransmit (vrnic_retry.c). */
    bool rtt_valid;         /* srtt/rttvar hold at least one sample */
    int64_t srtt, rttvar;   /* ns */
    bool rtt_timing;        /* a packet is being timed: */
    int64_t rtt_sent;       /* ... when it left */
    uint32_t rtt_psn;       /* ... its PSN: an ACK of it is a sample */
    int64_t early_due;      /* early retransmit timer, 0: off */
    uint8_t early_count;    /* early retransmits since the last progress */
    /* Resending only the packet the responder misses (vrnic_retry.c). */
    bool hole_mode;         /* waiting for the answer to a hole's resend */
    bool hole_pending;      /* hole_psn is still to be sent again */
    uint32_t hole_psn;
    uint32_t hole_high;     /* the newest PSN sent when the hole was found */
    bool peer_holds;        /* an answer showed packets held past a gap */
    /* End-to-end credits (vrnic_req.c, vrnic_tx_credit_ok). */
    uint32_t ssn;           /* SSN of the newest message started */
    uint32_t lsn;           /* the responder has WQEs up to this SSN */
    bool credits_off;       /* the responder gives no credits (0x1F) */
    bool credit_wait;       /* the message at next waits for credits */
    bool probe_ok;          /* ... and may go now as the limited WQE */
    int64_t probe_due;      /* ... not before (device clock), 0: off */
    int64_t peer_rnr_ns;    /* the wait of the peer's latest RNR NAK */
    bool peer_updates;      /* the peer sent a credit update */
    VrnicSwqe win[VRNIC_TX_WINDOW];
    VrnicPath path;         /* the requester's and the responder's */
    VrnicOdpFault odp_req;  /* the send queue waits for it */
    VrnicOdpFault odp_resp; /* incoming requests wait for it */

    /* responder */
    uint32_t epsn;          /* expected PSN */
    uint32_t msn;
    bool credits_zero;      /* the latest ACK sent gave no credits */
    bool nak_seq_sent;
    uint32_t nak_high;      /* highest gap PSN since that NAK */
    bool dup_acked;         /* a duplicate was answered since ePSN moved */
    VrnicHeld *held[VRNIC_OOO_SLOTS];   /* by PSN % VRNIC_OOO_SLOTS */
    uint32_t nheld;         /* of them not NULL */
    uint32_t *dev_held;     /* the device's count of held frames */
    bool replaying;         /* held packets are going in */
    uint8_t in_msg;         /* VRNIC_MSG_*: message in progress */
    bool have_rwqe;         /* a receive WQE is held for the message */
    bool rwqe_srq;          /* ... taken from the SRQ (else at rq.ci) */
    uint32_t rwqe_size;
    union {
        uint8_t rwqe[VRNIC_WQE_MAX];
        struct vrnic_recv_wqe rhdr;
    };
    uint32_t rcv_off;       /* bytes of the current message placed */
    uint64_t wr_va;         /* current WRITE */
    uint32_t wr_rkey;
    uint32_t wr_len;
    uint32_t rd_pending;    /* READ/atomic entries in the queue */
    uint32_t rd_new;        /* ... of them new requests (not replays) */
    /* Results of the newest atomics, to answer duplicates (replays). */
    VrnicAtomicResult atomic_cache[VRNIC_ATOMIC_CACHE];
    uint32_t atomic_next;
    uint32_t q_head, q_tail, q_size;
    VrnicResp q[];          /* q_size entries */
} VrnicXport;

/*
 * The loopback wire: frames whose destination GID is the device's own, and
 * raw packet QPs' frames a flow rule here takes.
 */
typedef struct VrnicLoop {
    uint32_t head, tail;
    uint32_t len[VRNIC_LOOP_SLOTS];
    uint32_t src_qpn[VRNIC_LOOP_SLOTS];     /* the QP that sent it */
    bool raw[VRNIC_LOOP_SLOTS];             /* for flow steering, not RoCE */
    uint8_t frame[VRNIC_LOOP_SLOTS][VRNIC_LOOP_FRAME];
} VrnicLoop;

/* vrnic_xport.c */
/* gid is in the port's GID table. */
bool vrnic_port_has_gid(VrnicCore *core, const uint8_t *gid);
uint32_t vrnic_xport_pmtu(const VrnicCore *core, const VrnicQp *qp);
/* The path from QP lqpn to rqpn through av; NULL: the source GID is bad. */
const VrnicPath *vrnic_xport_path(VrnicCore *core, VrnicQp *qp,
                                  uint32_t lqpn, const struct vrnic_av *av,
                                  uint32_t rqpn);
/* Room for one more frame (the loopback queue can be full). */
bool vrnic_xport_can_send(VrnicCore *core, bool loop);
void vrnic_xport_output(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                        size_t len, bool loop);
struct vrnic_sge vrnic_swqe_sge(const VrnicSwqe *s, uint32_t i);
bool vrnic_sge_rw(VrnicCore *core, const VrnicQp *qp, const VrnicSwqe *s,
                  uint64_t off, uint8_t *buf, uint32_t len, bool write);
VrnicOdpRes vrnic_sge_odp(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                          const VrnicSwqe *s, uint64_t off, uint32_t len,
                          bool write);
VrnicSwqe *vrnic_tx_slot(VrnicQp *qp, uint16_t i);
bool vrnic_tx_outstanding(VrnicQp *qp);
VrnicSwqe *vrnic_tx_find_psn(VrnicQp *qp, uint32_t psn);
VrnicSwqe *vrnic_tx_oldest_rd(VrnicQp *qp);
uint32_t vrnic_tx_rd_psn(const VrnicCore *core, const VrnicQp *qp,
                         const VrnicSwqe *s);

/* vrnic_comp.c */
/* A response (ACK/NAK, READ response, ATOMIC ACK) for requester qpn. */
void vrnic_tx_response(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                       const uint8_t *frame, const VrnicPkt *pkt);
void vrnic_tx_complete(VrnicCore *core, uint32_t qpn, VrnicQp *qp);

/* vrnic_retry.c */
int64_t vrnic_rnr_ns(uint8_t code);
void vrnic_tx_timer_restart(VrnicCore *core, VrnicQp *qp);
void vrnic_tx_progress(VrnicCore *core, VrnicQp *qp);
void vrnic_tx_go_back(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                      uint32_t psn, bool single, const char *why);
void vrnic_tx_exhausted(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                        uint8_t status);
void vrnic_tx_retry(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                    uint32_t psn, bool single, const char *why);
void vrnic_tx_retry_hole(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                         uint32_t psn);
void vrnic_tx_hole_answered(VrnicCore *core, uint32_t qpn, VrnicQp *qp);

/* vrnic_recv.c */
/* Drop a packet: count it in port counter stat, trace why. */
void vrnic_rx_drop(VrnicCore *core, unsigned stat, uint32_t qpn,
                   uint32_t psn, const char *why);
/* Deliver a parsed packet to QP qpn (its DestQP, or a multicast member). */
void vrnic_rx_qp(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                 const VrnicPkt *pkt);

/* vrnic_resp_seq.c */
/* RC/UC PSN check; true when the packet is the expected one. */
bool vrnic_rx_psn(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                  const uint8_t *frame, const VrnicPkt *pkt);
bool vrnic_rx_held_next(const VrnicXport *x);
void vrnic_rx_replay_held(VrnicCore *core, uint32_t qpn, VrnicQp *qp);
/* Free the packets held past a gap (QP reset or destroy). */
void vrnic_rx_held_clear(VrnicXport *x);

/* vrnic_resp.c */
bool vrnic_rx_rkey_ok(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                      uint32_t pdn, uint32_t right, uint32_t rkey,
                      uint64_t va, uint64_t len);
void vrnic_rx_ud(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                 const uint8_t *frame, const VrnicPkt *pkt);
/* A frame flow rule flow_id steers to raw packet QP qpn (vrnic_flow.c). */
void vrnic_rx_raw(VrnicCore *core, uint32_t flow_id, uint32_t qpn,
                  const uint8_t *frame, size_t len);
void vrnic_rx_rc(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                 const uint8_t *frame, const VrnicPkt *pkt);

/* vrnic_resp_queue.c */
VrnicResp *vrnic_resp_push(VrnicQp *qp);
bool vrnic_resp_ack(VrnicQp *qp, uint32_t psn, bool nak, uint8_t syn);
/* Send queued responder output, within a budget; re-kicks when left. */
void vrnic_resp_drain(VrnicCore *core, uint32_t qpn, VrnicQp *qp);
void vrnic_resp_rnr_nak(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                        uint32_t psn, const char *why);
bool vrnic_resp_restart_read(VrnicXport *x, const VrnicPkt *pkt,
                             uint32_t pdn, uint32_t pmtu);

/* vrnic_loop.c */
bool vrnic_loop_has_room(VrnicCore *core);
/*
 * Queue a frame QP qpn sent to this device (the sender is remembered): a
 * RoCEv2 packet, or with raw a raw packet QP's frame for flow steering.
 */
void vrnic_loop_put(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                    size_t len, bool raw);

static inline int64_t vrnic_now(VrnicCore *core)
{
    return core->ops->clock_ns(core->opaque);
}

/* CMP_SWP and FETCH_ADD: answered by an ATOMIC ACKNOWLEDGE. */
static inline bool vrnic_op_is_atomic(uint8_t op)
{
    return op == VRNIC_WQE_OP_ATOMIC_CMP_SWP ||
           op == VRNIC_WQE_OP_ATOMIC_FETCH_ADD;
}

/* ATOMIC WRITE and FLUSH (IBTA 1.5): answered by an empty READ RESPONSE. */
static inline bool vrnic_op_is_rd_acked(uint8_t op)
{
    return op == VRNIC_WQE_OP_ATOMIC_WRITE || op == VRNIC_WQE_OP_FLUSH;
}

/*
 * READ, the atomics, ATOMIC WRITE and FLUSH: answered by a response,
 * bounded by rd_atomic.
 */
static inline bool vrnic_op_is_rd(uint8_t op)
{
    return op == VRNIC_WQE_OP_RDMA_READ || vrnic_op_is_atomic(op) ||
           vrnic_op_is_rd_acked(op);
}

/*
 * The QP's remote rights, as they are now: MODIFY_QP may take a right away
 * in the middle of a WRITE or a READ response stream, and the rest of that
 * stream is then refused like a new request would be.
 */
static inline bool vrnic_qp_grants(const VrnicQp *qp, uint32_t right)
{
    return le32_to_cpu(qp->attr.access) & right;
}

/* RC, or one of XRC's halves: the reliable connected transport. */
static inline bool vrnic_qp_reliable(const VrnicQp *qp)
{
    return qp->type == VRNIC_QP_TYPE_RC ||
           qp->type == VRNIC_QP_TYPE_XRC_INI ||
           qp->type == VRNIC_QP_TYPE_XRC_TGT;
}

/* The transport class (opcode bits 7:5) of the QP's packets. */
static inline uint8_t vrnic_qp_transport(const VrnicQp *qp)
{
    switch (qp->type) {
    case VRNIC_QP_TYPE_RC:
        return VRNIC_IB_RC;
    case VRNIC_QP_TYPE_UC:
        return VRNIC_IB_UC;
    case VRNIC_QP_TYPE_XRC_INI:
    case VRNIC_QP_TYPE_XRC_TGT:
        return VRNIC_IB_XRC;
    default:
        return VRNIC_IB_UD;
    }
}

static inline uint8_t vrnic_nak_syn(uint8_t code)
{
    return VRNIC_FIELD_PREP(VRNIC_AETH_TYPE_MASK, VRNIC_AETH_NAK) | code;
}

static inline int32_t vrnic_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t vrnic_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & VRNIC_IB_PSN_MASK;
}

/* The packet window of a WQE segmented for pmtu (VRNIC_TX_WINDOW_BYTES). */
static inline int32_t vrnic_tx_pkt_window(uint32_t pmtu)
{
    return MIN(VRNIC_TX_PKT_WINDOW, VRNIC_TX_WINDOW_BYTES / MAX(pmtu, 256));
}

/* PSNs between AckReqs of a WQE segmented for pmtu: a power of two. */
static inline uint32_t vrnic_tx_ackreq_every(uint32_t pmtu)
{
    return vrnic_tx_pkt_window(pmtu) / VRNIC_TX_ACKREQ_PER_WINDOW;
}

#endif
