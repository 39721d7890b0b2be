/*
 * vrnic queue pairs and shared receive queues: CREATE/MODIFY/QUERY/DESTROY
 * for both, the IBTA state machine, work queue doorbells and flushing.
 *
 * QPNs: the GSI QP is qpn 1 (type GSI, kernel only, one per device); other
 * QPs get 2 .. max_qp + 1; at most max_qp QPs exist at once, GSI included.
 * A QP's rings live in one translated memory (SQ at offset 0, RQ at
 * rq_offset) of 2^shift-byte WQEs; every WQE is copied in before it is
 * looked at.
 *
 * MODIFY_QP models ib_modify_qp_is_ok() (drivers/infiniband/core/verbs.c,
 * qp_state_table) for RC, UC, UD and GSI: the transition must be valid, every
 * required attribute present and no attribute outside required|optional
 * (BAD_STATE for an invalid transition, BAD_FIELD for a mask that does not
 * fit it). Attributes the device does not implement (alternate path, path
 * migration) are refused as unknown bits. Without VRNIC_QP_ATTR_STATE the
 * target state is the current one; with CUR_STATE, cur_qp_state must equal
 * the device's state and the QP must be in RTR/RTS/SQD/SQE. Values are
 * bounded (port 1, pkey_index 0, path_mtu 1..5, 24-bit PSNs/QPN, timer and
 * retry widths, rd_atomic <= max_qp_rd_atom, sgid_index < gid table).
 *
 * State effects:
 *  - RESET discards every WQE without completions and returns all indices
 *    (producer and device consumer) to 0; the attributes are cleared.
 *  - ERR flushes every outstanding WQE ([ci, pi) of SQ and RQ) as a
 *    VRNIC_WC_WR_FLUSH_ERR CQE, signaled or not (ib_drain_qp depends on it);
 *    send CQEs carry the opcode of the WQE, receive CQEs RECV. WQEs posted
 *    while in ERR are flushed the same way from the queue bottom half. An
 *    SRQ-attached QP entering ERR posts VRNIC_AEQ_EV_QP_LAST_WQE (the SRQ's
 *    own WQEs are not the QP's and are not flushed).
 *  - SQE (entered only by the device, from the transport) flushes the SQ.
 *  - In RTS a doorbell (or entering RTS with sends posted) marks the QP
 *    pending; the queue bottom half runs the transport (vrnic_req.c), which
 *    advances sq.ci as WQEs complete. In INIT/RTR posted sends wait.
 * A WQE that cannot be read (the ring's memory went away) is a device-
 * detected QP error: VRNIC_AEQ_EV_QP_FATAL (once per trip to ERR) and ERR.
 *
 * Doorbells (BAR2, MMIO context, no DMA): the page must be the queue's uctx,
 * the QP not in RESET, the queue must exist and pi must lie in
 * [pi_old, ci + depth]; anything else is a guest error and is ignored.
 *
 * SRQ: MODIFY_SRQ with VRNIC_SRQ_ATTR_LIMIT arms the limit event (limit <=
 * depth; 0 disarms; CREATE_SRQ's limit arms it too). When the receive path
 * takes a WQE (vrnic_srq_take) and fewer than limit remain, the device posts
 * VRNIC_AEQ_EV_SRQ_LIMIT once and disarms.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/* WQEs one flush round completes (per QP, SQ and RQ together). */
#define VRNIC_FLUSH_BUDGET  256
/* DMA transfers the queue bottom half spends on QPs before it yields. */
#define VRNIC_QUEUES_WORK   8192

/* ib_qp_attr_mask bit 2, accepted (and ignored) on RTS -> SQD. */
#define VRNIC_QP_ATTR_EN_SQD_ASYNC_NOTIFY VRNIC_BIT(2)

#define A_STATE     VRNIC_QP_ATTR_STATE
#define A_CUR       VRNIC_QP_ATTR_CUR_STATE
#define A_ACC       VRNIC_QP_ATTR_ACCESS
#define A_PKEY      VRNIC_QP_ATTR_PKEY_INDEX
#define A_PORT      VRNIC_QP_ATTR_PORT
#define A_QKEY      VRNIC_QP_ATTR_QKEY
#define A_AV        VRNIC_QP_ATTR_AV
#define A_MTU       VRNIC_QP_ATTR_PATH_MTU
#define A_TMO       VRNIC_QP_ATTR_TIMEOUT
#define A_RETRY     VRNIC_QP_ATTR_RETRY_CNT
#define A_RNR       VRNIC_QP_ATTR_RNR_RETRY
#define A_RQPSN     VRNIC_QP_ATTR_RQ_PSN
#define A_MAXRD     VRNIC_QP_ATTR_MAX_QP_RD_ATOMIC
#define A_MINRNR    VRNIC_QP_ATTR_MIN_RNR_TIMER
#define A_SQPSN     VRNIC_QP_ATTR_SQ_PSN
#define A_MAXDRD    VRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC
#define A_DQPN      VRNIC_QP_ATTR_DEST_QPN
#define A_SQDN      VRNIC_QP_ATTR_EN_SQD_ASYNC_NOTIFY

#define VRNIC_QP_ATTR_KNOWN \
    (A_STATE | A_CUR | A_ACC | A_PKEY | A_PORT | A_QKEY | A_AV | A_MTU | \
     A_TMO | A_RETRY | A_RNR | A_RQPSN | A_MAXRD | A_MINRNR | A_SQPSN | \
     A_MAXDRD | A_DQPN | A_SQDN)

#define S_RST VRNIC_QPS_RESET
#define S_INIT VRNIC_QPS_INIT
#define S_RTR VRNIC_QPS_RTR
#define S_RTS VRNIC_QPS_RTS
#define S_SQD VRNIC_QPS_SQD
#define S_SQE VRNIC_QPS_SQE
#define S_ERR VRNIC_QPS_ERR
#define T_RC VRNIC_QP_TYPE_RC
#define T_UC VRNIC_QP_TYPE_UC
#define T_UD VRNIC_QP_TYPE_UD
#define T_GSI VRNIC_QP_TYPE_GSI
#define T_RAW VRNIC_QP_TYPE_RAW_PACKET
#define T_INI VRNIC_QP_TYPE_XRC_INI
#define T_TGT VRNIC_QP_TYPE_XRC_TGT

typedef struct VrnicQpTransition {
    bool valid;
    uint32_t req[T_TGT + 1];
    uint32_t opt[T_TGT + 1];
} VrnicQpTransition;

/*
 * ib_core's qp_state_table restricted to RC/UC/UD/GSI/raw packet/XRC and
 * the attributes the device implements.
 */
static const VrnicQpTransition vrnic_qp_table[S_ERR + 1][S_ERR + 1] = {
    [S_RST] = {
        [S_RST] = { .valid = true },
        [S_INIT] = { .valid = true, .req = {
            [T_UD] = A_PKEY | A_PORT | A_QKEY,
            [T_UC] = A_PKEY | A_PORT | A_ACC,
            [T_RC] = A_PKEY | A_PORT | A_ACC,
            [T_GSI] = A_PKEY | A_QKEY,
            [T_RAW] = A_PORT,
            [T_INI] = A_PKEY | A_PORT | A_ACC,
            [T_TGT] = A_PKEY | A_PORT | A_ACC } },
    },
    [S_INIT] = {
        [S_RST] = { .valid = true },
        [S_ERR] = { .valid = true },
        [S_INIT] = { .valid = true, .opt = {
            [T_UD] = A_PKEY | A_PORT | A_QKEY,
            [T_UC] = A_PKEY | A_PORT | A_ACC,
            [T_RC] = A_PKEY | A_PORT | A_ACC,
            [T_GSI] = A_PKEY | A_QKEY,
            [T_RAW] = A_PORT,
            [T_INI] = A_PKEY | A_PORT | A_ACC,
            [T_TGT] = A_PKEY | A_PORT | A_ACC } },
        [S_RTR] = { .valid = true, .req = {
            [T_UC] = A_AV | A_MTU | A_DQPN | A_RQPSN,
            [T_RC] = A_AV | A_MTU | A_DQPN | A_RQPSN | A_MAXDRD | A_MINRNR,
            [T_INI] = A_AV | A_MTU | A_DQPN | A_RQPSN,
            [T_TGT] = A_AV | A_MTU | A_DQPN | A_RQPSN | A_MAXDRD | A_MINRNR },
            .opt = {
            [T_UD] = A_PKEY | A_QKEY,
            [T_UC] = A_ACC | A_PKEY,
            [T_RC] = A_ACC | A_PKEY,
            [T_GSI] = A_PKEY | A_QKEY,
            [T_INI] = A_ACC | A_PKEY,
            [T_TGT] = A_ACC | A_PKEY } },
    },
    [S_RTR] = {
        [S_RST] = { .valid = true },
        [S_ERR] = { .valid = true },
        [S_RTS] = { .valid = true, .req = {
            [T_UD] = A_SQPSN,
            [T_UC] = A_SQPSN,
            [T_RC] = A_TMO | A_RETRY | A_RNR | A_SQPSN | A_MAXRD,
            [T_GSI] = A_SQPSN,
            [T_INI] = A_TMO | A_RETRY | A_RNR | A_SQPSN | A_MAXRD,
            [T_TGT] = A_TMO | A_SQPSN },
            .opt = {
            [T_UD] = A_CUR | A_QKEY,
            [T_UC] = A_CUR | A_ACC,
            [T_RC] = A_CUR | A_ACC | A_MINRNR,
            [T_GSI] = A_CUR | A_QKEY,
            [T_INI] = A_CUR | A_ACC,
            [T_TGT] = A_CUR | A_ACC | A_MINRNR } },
    },
    [S_RTS] = {
        [S_RST] = { .valid = true },
        [S_ERR] = { .valid = true },
        [S_RTS] = { .valid = true, .opt = {
            [T_UD] = A_CUR | A_QKEY,
            [T_UC] = A_CUR | A_ACC,
            [T_RC] = A_CUR | A_ACC | A_MINRNR,
            [T_GSI] = A_CUR | A_QKEY,
            [T_INI] = A_CUR | A_ACC,
            [T_TGT] = A_CUR | A_ACC | A_MINRNR } },
        [S_SQD] = { .valid = true, .opt = {
            [T_UD] = A_SQDN, [T_UC] = A_SQDN, [T_RC] = A_SQDN, [T_GSI] = A_SQDN,
            [T_INI] = A_SQDN, [T_TGT] = A_SQDN } },
    },
    [S_SQD] = {
        [S_RST] = { .valid = true },
        [S_ERR] = { .valid = true },
        [S_RTS] = { .valid = true, .opt = {
            [T_UD] = A_CUR | A_QKEY,
            [T_UC] = A_CUR | A_ACC,
            [T_RC] = A_CUR | A_ACC | A_MINRNR,
            [T_GSI] = A_CUR | A_QKEY,
            [T_INI] = A_CUR | A_ACC,
            [T_TGT] = A_CUR | A_ACC | A_MINRNR } },
        [S_SQD] = { .valid = true, .opt = {
            [T_UD] = A_PKEY | A_QKEY,
            [T_UC] = A_AV | A_ACC | A_PKEY,
            [T_RC] = A_PORT | A_AV | A_TMO | A_RETRY | A_RNR | A_MAXRD |
                   A_MAXDRD | A_ACC | A_PKEY | A_MINRNR,
            [T_GSI] = A_PKEY | A_QKEY,
            [T_INI] = A_PORT | A_AV | A_TMO | A_RETRY | A_RNR | A_MAXRD |
                    A_ACC | A_PKEY,
            [T_TGT] = A_PORT | A_AV | A_TMO | A_MAXDRD | A_ACC | A_PKEY |
                    A_MINRNR } },
    },
    [S_SQE] = {
        [S_RST] = { .valid = true },
        [S_ERR] = { .valid = true },
        [S_RTS] = { .valid = true, .opt = {
            [T_UD] = A_CUR | A_QKEY,
            [T_UC] = A_CUR | A_ACC,
            [T_GSI] = A_CUR | A_QKEY } },
    },
    [S_ERR] = {
        [S_RST] = { .valid = true },
        [S_ERR] = { .valid = true },
    },
};

static const char *const vrnic_qps_name[] = {
    "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
};

/* ---- helpers ---------------------------------------------------------- */

static uint32_t vrnic_wq_depth(const VrnicWq *wq)
{
    return 1u << wq->log_depth;
}

static uint64_t vrnic_wq_bytes(uint32_t log_depth, uint32_t shift)
{
    return 1ull << (log_depth + shift);
}

void vrnic_qp_set_pending(VrnicCore *core, VrnicQp *qp, bool on)
{
    if (qp->pending != on) {
        qp->pending = on;
        if (on) {
            core->obj.qps_pending++;
            /* A full wire kicks the queues itself when it drains. */
            if (vrnic_wire_can_send(core)) {
                vrnic_core_kick(core, VRNIC_WORK_QUEUES);
            }
        } else {
            core->obj.qps_pending--;
        }
    }
}

uint8_t vrnic_cqe_opcode(uint8_t wqe_opcode)
{
    switch (wqe_opcode) {
    case VRNIC_WQE_OP_RDMA_WRITE:
    case VRNIC_WQE_OP_RDMA_WRITE_IMM:
        return VRNIC_CQE_OP_RDMA_WRITE;
    case VRNIC_WQE_OP_RDMA_READ:
        return VRNIC_CQE_OP_RDMA_READ;
    case VRNIC_WQE_OP_ATOMIC_CMP_SWP:
        return VRNIC_CQE_OP_COMP_SWAP;
    case VRNIC_WQE_OP_ATOMIC_FETCH_ADD:
        return VRNIC_CQE_OP_FETCH_ADD;
    case VRNIC_WQE_OP_BIND_MW:
        return VRNIC_CQE_OP_BIND_MW;
    case VRNIC_WQE_OP_LOCAL_INV:
        return VRNIC_CQE_OP_LOCAL_INV;
    case VRNIC_WQE_OP_REG_MR:
        return VRNIC_CQE_OP_REG_MR;
    case VRNIC_WQE_OP_ATOMIC_WRITE:
        return VRNIC_CQE_OP_ATOMIC_WRITE;
    case VRNIC_WQE_OP_FLUSH:
        return VRNIC_CQE_OP_FLUSH;
    default:
        /* SEND, SEND_IMM, SEND_INV; garbage flushes as SEND too. */
        return VRNIC_CQE_OP_SEND;
    }
}

static void vrnic_qp_flush_cqe(VrnicCore *core, uint32_t cqn, uint32_t qpn,
                               uint64_t wr_id, uint8_t opcode)
{
    struct vrnic_cqe e = {
        .wr_id = cpu_to_le64(wr_id),
        .qpn = cpu_to_le32(qpn),
        .opcode = opcode,
        .status = VRNIC_WC_WR_FLUSH_ERR,
    };

    /* A stopped CQ drops it; the WQE is consumed either way. */
    vrnic_cq_post(core, cqn, &e);
}

static void vrnic_qp_enter_err(VrnicCore *core, uint32_t qpn, VrnicQp *qp);

void vrnic_qp_fatal(VrnicCore *core, uint32_t qpn, const char *why)
{
    VrnicQp *qp = vrnic_qp_get(core, qpn);

    if (!qp) {
        return;
    }
    VRNIC_GUEST_ERR(core, vrnic_err_qp_fatal, "qpn %u: %s", qpn, why);
    if (!qp->fatal_sent) {
        qp->fatal_sent = true;
        vrnic_aeq_post(core, VRNIC_AEQ_EV_QP_FATAL, qpn);
    }
    if (qp->state != VRNIC_QPS_ERR) {
        vrnic_qp_enter_err(core, qpn, qp);
    }
}

/*
 * Complete WQEs in [ci, pi) of one queue with WR_FLUSH_ERR, at most *budget
 * of them; true when the queue is empty. What is left goes on from the
 * queue bottom half (the QP stays pending), so a deep queue - or a thousand
 * of them - in ERR cannot stall the device in one go.
 */
static bool vrnic_qp_flush_wq(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                              bool send, unsigned *budget)
{
    VrnicWq *wq = send ? &qp->sq : &qp->rq;

    while (wq->log_depth && wq->ci != wq->pi) {
        uint64_t off = wq->offset +
                       ((uint64_t)vrnic_idx_slot(wq->ci, wq->log_depth) <<
                        wq->wqe_shift);

        if (!*budget) {
            return false;
        }
        (*budget)--;
        if (send) {
            struct vrnic_send_wqe w;

            if (!vrnic_mem_read_at(core, &qp->mem, off, &w, sizeof(w))) {
                wq->ci = wq->pi;
                vrnic_qp_fatal(core, qpn, "send WQE unreadable");
                return true;
            }
            trace_vrnic_qp_flush(qpn, "sq", wq->ci, le64_to_cpu(w.wr_id));
            vrnic_qp_flush_cqe(core, qp->send_cqn, qpn, le64_to_cpu(w.wr_id),
                               vrnic_cqe_opcode(w.opcode));
        } else {
            struct vrnic_recv_wqe w;

            if (!vrnic_mem_read_at(core, &qp->mem, off, &w, sizeof(w))) {
                wq->ci = wq->pi;
                vrnic_qp_fatal(core, qpn, "receive WQE unreadable");
                return true;
            }
            trace_vrnic_qp_flush(qpn, "rq", wq->ci, le64_to_cpu(w.wr_id));
            vrnic_qp_flush_cqe(core, qp->recv_cqn, qpn, le64_to_cpu(w.wr_id),
                               VRNIC_CQE_OP_RECV);
        }
        wq->ci++;
    }
    return true;
}

/* One bounded round of flushing (SQ, and RQ unless only_sq); re-pends. */
static void vrnic_qp_flush(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                           bool only_sq)
{
    unsigned budget = VRNIC_FLUSH_BUDGET;
    bool done = vrnic_qp_flush_wq(core, qpn, qp, true, &budget);

    if (!only_sq) {
        done = vrnic_qp_flush_wq(core, qpn, qp, false, &budget) && done;
    }
    if (!done) {
        vrnic_qp_set_pending(core, qp, true);
    }
}

static void vrnic_qp_set_state(uint32_t qpn, VrnicQp *qp, uint8_t state)
{
    trace_vrnic_qp_state(qpn, vrnic_qps_name[qp->state],
                         vrnic_qps_name[state]);
    qp->state = state;
}

/*
 * Entering ERR (or ERR -> ERR, which only flushes): LAST_WQE is posted on
 * the way in, once.
 */
static void vrnic_qp_enter_err(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    bool entering = qp->state != VRNIC_QPS_ERR;

    if (entering) {
        vrnic_qp_set_state(qpn, qp, VRNIC_QPS_ERR);
        vrnic_xport_err(core, qpn, qp);
    }
    vrnic_qp_flush(core, qpn, qp, false);
    if (entering && qp->srqn && qp->type != T_TGT) {
        vrnic_aeq_post(core, VRNIC_AEQ_EV_QP_LAST_WQE, qpn);
    }
}

static void vrnic_qp_enter_reset(uint32_t qpn, VrnicQp *qp)
{
    vrnic_qp_set_state(qpn, qp, VRNIC_QPS_RESET);
    vrnic_xport_reset(qp);
    qp->sq.pi = qp->sq.ci = 0;
    qp->rq.pi = qp->rq.ci = 0;
    qp->fatal_sent = false;
    memset(&qp->attr, 0, sizeof(qp->attr));
    if (qp->type == T_TGT) {
        qp->srqn = qp->pdn = qp->recv_cqn = 0;  /* no message, no SRQ */
    }
}

/*
 * Queue bottom half: flush what was posted to QPs in ERR (SQ in SQE), run
 * the transport of the others. Pending QPs are served round robin from
 * where the last run stopped, until VRNIC_QUEUES_WORK DMA transfers were
 * spent; then the rest waits for the next run.
 */
void vrnic_qp_process(VrnicCore *core)
{
    uint32_t n = core->cfg.max_qp + 1;
    uint64_t start = core->dma_ops;

    for (uint32_t i = 0; core->obj.qps_pending && i < n; i++) {
        uint32_t qpn = 1 + (core->obj.qp_cursor + i) % n;
        VrnicQp *qp = &core->obj.qps[qpn];

        if (!qp->live || !qp->pending) {
            continue;
        }
        if (core->dma_ops - start >= VRNIC_QUEUES_WORK) {
            core->obj.qp_cursor = qpn - 1;
            vrnic_core_kick(core, VRNIC_WORK_QUEUES);
            return;
        }
        vrnic_qp_set_pending(core, qp, false);
        if (core->fatal) {
            continue;
        }
        if (qp->state == VRNIC_QPS_ERR) {
            vrnic_qp_flush(core, qpn, qp, false);
        } else if (qp->state == VRNIC_QPS_SQE) {
            vrnic_qp_flush(core, qpn, qp, true);
        } else if (qp->state >= VRNIC_QPS_RTR) {
            vrnic_xport_process(core, qpn, qp);
        }
    }
}

/* A transport error on a QP (remote NAK, local WQE error): ERR + flush. */
void vrnic_qp_error(VrnicCore *core, uint32_t qpn)
{
    VrnicQp *qp = vrnic_qp_get(core, qpn);

    if (qp && qp->state != VRNIC_QPS_ERR) {
        vrnic_qp_enter_err(core, qpn, qp);
    }
}

/* ---- QP commands ------------------------------------------------------ */

static uint8_t vrnic_qp_check_sq(VrnicCore *core,
                                 const struct vrnic_aq_create_qp *c,
                                 uint32_t max_log)
{
    bool ud = c->type == T_UD || c->type == T_GSI;
    uint32_t max_inline = le32_to_cpu(c->max_inline);

    if (c->type == T_RAW && c->sq_log_depth == 0) {
        /* A receive-only raw packet QP (a WQ): no SQ at all. */
        if (c->sq_wqe_shift || c->max_send_sge || max_inline) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "SQ fields without SQ",
                                c->sq_wqe_shift);
        }
        return VRNIC_AQ_STS_OK;
    }
    if (c->sq_log_depth < 1 || c->sq_log_depth > max_log) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "sq_log_depth",
                            c->sq_log_depth);
    }
    if (c->sq_wqe_shift < VRNIC_SQ_WQE_MIN_SHIFT ||
        c->sq_wqe_shift > VRNIC_WQE_MAX_SHIFT) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "sq_wqe_shift",
                            c->sq_wqe_shift);
    }
    if (c->max_send_sge > core->cfg.max_sge ||
        vrnic_send_wqe_len(ud, c->max_send_sge, 0) >
        (1u << c->sq_wqe_shift)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_send_sge",
                            c->max_send_sge);
    }
    if (max_inline > core->cfg.max_inline_data ||
        vrnic_send_wqe_len(ud, 0, max_inline) > (1u << c->sq_wqe_shift)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_inline", max_inline);
    }
    return VRNIC_AQ_STS_OK;
}

static uint8_t vrnic_qp_check_wqes(VrnicCore *core,
                                   const struct vrnic_aq_create_qp *c,
                                   bool has_rq)
{
    uint32_t max_log = MIN(vrnic_max_log(core->cfg.max_qp_wr),
                           VRNIC_RING_MAX_LOG_DEPTH);
    uint8_t sts = vrnic_qp_check_sq(core, c, max_log);

    if (sts) {
        return sts;
    }
    if (!has_rq) {
        if (c->rq_log_depth) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "rq with srq",
                                c->rq_log_depth);
        }
        return VRNIC_AQ_STS_OK;
    }
    if (c->rq_log_depth > max_log) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "rq_log_depth",
                            c->rq_log_depth);
    }
    if (c->rq_log_depth == 0) {
        return VRNIC_AQ_STS_OK;     /* a QP that never receives */
    }
    if (c->rq_wqe_shift < VRNIC_RQ_WQE_MIN_SHIFT ||
        c->rq_wqe_shift > VRNIC_WQE_MAX_SHIFT) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "rq_wqe_shift",
                            c->rq_wqe_shift);
    }
    if (c->max_recv_sge > core->cfg.max_sge ||
        vrnic_recv_wqe_len(c->max_recv_sge) > (1u << c->rq_wqe_shift)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_recv_sge",
                            c->max_recv_sge);
    }
    return VRNIC_AQ_STS_OK;
}

/*
 * A number for a new QP of type: qpn 1 for the GSI QP, else the next free
 * one of 2 .. max_qp + 1; at most max_qp QPs (GSI included) at once.
 */
static uint8_t vrnic_qp_number(VrnicCore *core, uint8_t type, uint32_t *qpn)
{
    VrnicObjects *o = &core->obj;

    if (o->n_qps >= core->cfg.max_qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "max_qp", o->n_qps);
    }
    if (type == T_GSI) {
        if (o->qps[1].live) {
            return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "GSI exists", 1);
        }
        *qpn = 1;
        return VRNIC_AQ_STS_OK;
    }
    *qpn = vrnic_obj_alloc(&o->next_qp, 2, core->cfg.max_qp + 1, o->qps,
                           sizeof(*o->qps));
    if (!*qpn) {
        /* Only when max_qp - 1 QPs plus an absent GSI fill 2..max+1. */
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "qpn", 0);
    }
    return VRNIC_AQ_STS_OK;
}

/*
 * An XRC target has no rings, no PD and no CQs of its own (its messages
 * borrow those of the SRQ they name): everything but the type, the
 * domain and the reserved-to-zero rest must be 0.
 */
static uint8_t vrnic_qp_check_tgt(VrnicCore *core,
                                  const struct vrnic_aq_create_qp *c)
{
    uint32_t xrcdn = le32_to_cpu(c->xrcdn);

    if (c->sq_log_depth || c->rq_log_depth || c->sq_wqe_shift ||
        c->rq_wqe_shift || c->max_send_sge || c->max_recv_sge ||
        c->max_inline || c->pdn || c->send_cqn || c->recv_cqn || c->srqn ||
        c->uctx || c->rq_offset || !VRNIC_RSVD_ZERO(c->mem)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "XRC target with rings or objects", 0);
    }
    if (!vrnic_xrcd_get(core, xrcdn)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "xrcdn", xrcdn);
    }
    return VRNIC_AQ_STS_OK;
}

static uint8_t vrnic_qp_create_tgt(VrnicCore *core,
                                   const struct vrnic_aq_create_qp *c,
                                   uint64_t *result)
{
    VrnicObjects *o = &core->obj;
    uint32_t xrcdn = le32_to_cpu(c->xrcdn);
    uint8_t sts = vrnic_qp_check_tgt(core, c);
    uint32_t qpn;

    if (!sts) {
        sts = vrnic_qp_number(core, c->type, &qpn);
    }
    if (sts) {
        return sts;
    }
    o->qps[qpn] = (VrnicQp) {
        .x = vrnic_xport_new(core),
        .live = true,
        .type = VRNIC_QP_TYPE_XRC_TGT,
        .state = VRNIC_QPS_RESET,
        .xrcdn = xrcdn,
    };
    vrnic_xrcd_get(core, xrcdn)->refs++;
    o->n_qps++;
    *result = qpn;
    trace_vrnic_qp_create(qpn, c->type, 0, 0, 0, 0);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_qp_create(VrnicCore *core, const struct vrnic_aq_create_qp *c,
                        uint64_t *result)
{
    VrnicObjects *o = &core->obj;
    uint32_t pdn = le32_to_cpu(c->pdn);
    uint32_t send_cqn = le32_to_cpu(c->send_cqn);
    uint32_t recv_cqn = le32_to_cpu(c->recv_cqn);
    uint32_t srqn = le32_to_cpu(c->srqn);
    uint32_t uctx = le32_to_cpu(c->uctx);
    uint32_t rq_offset = le32_to_cpu(c->rq_offset);
    VrnicPd *pd = vrnic_pd_get(core, pdn);
    VrnicCq *scq = vrnic_cq_get(core, send_cqn);
    VrnicCq *rcq = vrnic_cq_get(core, recv_cqn);
    VrnicSrq *srq = srqn ? vrnic_srq_get(core, srqn) : NULL;
    bool ini = c->type == T_INI;
    uint64_t sq_bytes;
    uint32_t qpn;
    VrnicMem mem;
    VrnicQp *qp;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || !VRNIC_RSVD_ZERO(c->rsvd2)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (c->type < T_RC || c->type > T_TGT) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "type", c->type);
    }
    if (c->type == T_TGT) {
        return vrnic_qp_create_tgt(core, c, result);
    }
    if (c->xrcdn) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "xrcdn",
                            le32_to_cpu(c->xrcdn));
    }
    /* An XRC initiator only sends: no receive queue, SRQ or CQ. */
    if (ini && (recv_cqn || srqn || c->rq_log_depth)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "XRC initiator with a receive side", recv_cqn);
    }
    if (c->type == T_RAW && srqn) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "raw packet QP with SRQ",
                            srqn);
    }
    if (uctx >= core->cfg.db_pages || (c->type == T_GSI && uctx)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "uctx", uctx);
    }
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    if (!scq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "send_cqn", send_cqn);
    }
    if (!rcq && !ini) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "recv_cqn", recv_cqn);
    }
    if (srqn && !srq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "srqn", srqn);
    }
    if (srq && srq->xrcdn) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "XRC SRQ", srqn);
    }
    /* Everything a QP names belongs to its own context. */
    if (pd->uctx != uctx || scq->uctx != uctx || (rcq && rcq->uctx != uctx) ||
        (srq && srq->uctx != uctx)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "object of another uctx",
                            uctx);
    }
    sts = vrnic_qp_check_wqes(core, c, !srq);
    if (sts) {
        return sts;
    }
    sts = vrnic_mem_parse(core, &c->mem, &mem);
    if (sts) {
        return sts;
    }
    if (mem.iova & (VRNIC_RING_ALIGN - 1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "ring unaligned", mem.iova);
    }
    sq_bytes = c->sq_log_depth ? vrnic_wq_bytes(c->sq_log_depth,
                                                c->sq_wqe_shift) : 0;
    if (sq_bytes > mem.length) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem too short for SQ",
                            mem.length);
    }
    if (!srq && c->rq_log_depth &&
        ((rq_offset & (VRNIC_RING_ALIGN - 1)) || rq_offset < sq_bytes ||
         rq_offset + vrnic_wq_bytes(c->rq_log_depth, c->rq_wqe_shift) >
         mem.length)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "rq_offset", rq_offset);
    }
    sts = vrnic_qp_number(core, c->type, &qpn);
    if (sts) {
        return sts;
    }
    qp = &o->qps[qpn];
    assert(!qp->x);
    *qp = (VrnicQp) {
        .x = vrnic_xport_new(core),
        .live = true,
        .type = c->type,
        .state = VRNIC_QPS_RESET,
        .pdn = pdn,
        .send_cqn = send_cqn,
        .recv_cqn = recv_cqn,
        .srqn = srqn,
        .uctx = uctx,
        .max_send_sge = c->max_send_sge,
        .max_recv_sge = c->max_recv_sge,
        .max_inline = le32_to_cpu(c->max_inline),
        .sq = { .log_depth = c->sq_log_depth, .wqe_shift = c->sq_wqe_shift },
        .mem = mem,
    };
    if (!srq && c->rq_log_depth) {
        qp->rq = (VrnicWq) { .log_depth = c->rq_log_depth,
                             .wqe_shift = c->rq_wqe_shift,
                             .offset = rq_offset };
    }
    pd->refs++;
    scq->refs++;
    if (rcq) {
        rcq->refs++;
    }
    if (srq) {
        srq->refs++;
    }
    o->n_qps++;
    *result = qpn;
    trace_vrnic_qp_create(qpn, c->type, 1u << c->sq_log_depth,
                          c->rq_log_depth ? 1u << c->rq_log_depth : 0, srqn,
                          uctx);
    return VRNIC_AQ_STS_OK;
}

/* Bounds of every attribute present in mask. */
static uint8_t vrnic_qp_check_attr(VrnicCore *core, uint32_t mask,
                                   const struct vrnic_qp_attr *a)
{
    if (!VRNIC_RSVD_ZERO(a->rsvd0) || !VRNIC_RSVD_ZERO(a->av.rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "attr reserved", 0);
    }
    if ((mask & A_ACC) && (le32_to_cpu(a->access) & ~VRNIC_ACCESS_ALL)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "access",
                            le32_to_cpu(a->access));
    }
    if ((mask & A_PKEY) && le16_to_cpu(a->pkey_index) != 0) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "pkey_index",
                            le16_to_cpu(a->pkey_index));
    }
    if ((mask & A_PORT) && a->port != VRNIC_PORT_NUM) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "port", a->port);
    }
    if ((mask & A_AV) &&
        (a->av.sgid_index >= core->cfg.gid_tbl_len ||
         le32_to_cpu(a->av.flow_label) > 0xfffff)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "av", a->av.sgid_index);
    }
    if ((mask & A_MTU) && (a->path_mtu < 1 || a->path_mtu > 5)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "path_mtu", a->path_mtu);
    }
    if ((mask & A_TMO) && a->timeout > 31) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "timeout", a->timeout);
    }
    if ((mask & A_RETRY) && a->retry_cnt > 7) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "retry_cnt", a->retry_cnt);
    }
    if ((mask & A_RNR) && a->rnr_retry > 7) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "rnr_retry", a->rnr_retry);
    }
    if ((mask & A_MINRNR) && a->min_rnr_timer > 31) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "min_rnr_timer",
                            a->min_rnr_timer);
    }
    if ((mask & A_MAXRD) && a->max_rd_atomic > core->cfg.max_qp_rd_atom) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_rd_atomic",
                            a->max_rd_atomic);
    }
    if ((mask & A_MAXDRD) &&
        a->max_dest_rd_atomic > core->cfg.max_qp_rd_atom) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_dest_rd_atomic",
                            a->max_dest_rd_atomic);
    }
    if (((mask & A_RQPSN) && le32_to_cpu(a->rq_psn) > 0xffffff) ||
        ((mask & A_SQPSN) && le32_to_cpu(a->sq_psn) > 0xffffff) ||
        ((mask & A_DQPN) && le32_to_cpu(a->dest_qpn) > 0xffffff)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "24-bit field", mask);
    }
    return VRNIC_AQ_STS_OK;
}

static void vrnic_qp_apply_attr(VrnicQp *qp, uint32_t mask,
                                const struct vrnic_qp_attr *a)
{
    struct vrnic_qp_attr *q = &qp->attr;

    if (mask & A_ACC) {
        q->access = a->access;
    }
    if (mask & A_PKEY) {
        q->pkey_index = a->pkey_index;
    }
    if (mask & A_PORT) {
        q->port = a->port;
    }
    if (mask & A_QKEY) {
        q->qkey = a->qkey;
    }
    if (mask & A_AV) {
        q->av = a->av;
    }
    if (mask & A_MTU) {
        q->path_mtu = a->path_mtu;
    }
    if (mask & A_TMO) {
        q->timeout = a->timeout;
    }
    if (mask & A_RETRY) {
        q->retry_cnt = a->retry_cnt;
    }
    if (mask & A_RNR) {
        q->rnr_retry = a->rnr_retry;
    }
    if (mask & A_RQPSN) {
        q->rq_psn = a->rq_psn;
        vrnic_xport_set_rq_psn(qp, le32_to_cpu(a->rq_psn));
    }
    if (mask & A_MAXRD) {
        q->max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & A_MINRNR) {
        q->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & A_SQPSN) {
        q->sq_psn = a->sq_psn;
        vrnic_xport_set_sq_psn(qp, le32_to_cpu(a->sq_psn));
    }
    if (mask & A_MAXDRD) {
        q->max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & A_DQPN) {
        q->dest_qpn = a->dest_qpn;
    }
}

uint8_t vrnic_qp_modify(VrnicCore *core, const struct vrnic_aq_modify_qp *c)
{
    uint32_t qpn = le32_to_cpu(c->qpn);
    uint32_t mask = le32_to_cpu(c->attr_mask);
    const struct vrnic_qp_attr *a = &c->attr;
    VrnicQp *qp = vrnic_qp_get(core, qpn);
    const VrnicQpTransition *t;
    uint32_t cur, next, req, opt;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", qpn);
    }
    if (mask & ~VRNIC_QP_ATTR_KNOWN) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "attr_mask", mask);
    }
    cur = qp->state;
    next = (mask & A_STATE) ? le32_to_cpu(a->qp_state) : cur;
    if (next > S_ERR) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "qp_state", next);
    }
    if (mask & A_CUR) {
        if (le32_to_cpu(a->cur_qp_state) != cur) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "cur_qp_state",
                                le32_to_cpu(a->cur_qp_state));
        }
        if (cur != S_RTR && cur != S_RTS && cur != S_SQD && cur != S_SQE) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "CUR_STATE in", cur);
        }
    }
    t = &vrnic_qp_table[cur][next];
    if (!t->valid) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "transition",
                            cur << 8 | next);
    }
    req = t->req[qp->type];
    opt = t->opt[qp->type];
    if ((mask & req) != req || (mask & ~(req | opt | A_STATE))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "attr_mask for transition",
                            mask);
    }
    sts = vrnic_qp_check_attr(core, mask, a);
    if (sts) {
        return sts;
    }
    trace_vrnic_qp_modify(qpn, mask, vrnic_qps_name[cur], vrnic_qps_name[next]);
    vrnic_qp_apply_attr(qp, mask, a);
    if (next == S_RST) {
        vrnic_qp_enter_reset(qpn, qp);
    } else if (next == S_ERR) {
        vrnic_qp_enter_err(core, qpn, qp);
    } else if (next != cur) {
        vrnic_qp_set_state(qpn, qp, next);
        if (next == S_RTS && qp->sq.ci != qp->sq.pi) {
            vrnic_qp_set_pending(core, qp, true);   /* sends posted early */
        }
    }
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_qp_query(VrnicCore *core, const struct vrnic_aq_query *c)
{
    uint32_t qpn = le32_to_cpu(c->index);
    VrnicQp *qp = vrnic_qp_get(core, qpn);
    struct vrnic_qp_attr a;

    if (!qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", qpn);
    }
    a = qp->attr;
    a.qp_state = cpu_to_le32(qp->state);
    a.cur_qp_state = cpu_to_le32(qp->state);
    trace_vrnic_qp_query(qpn, qp->state);
    return vrnic_answer(core, le64_to_cpu(c->resp_addr),
                        le32_to_cpu(c->resp_len), &a, sizeof(a));
}

uint8_t vrnic_qp_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t qpn = le32_to_cpu(c->handle);
    VrnicQp *qp = vrnic_qp_get(core, qpn);
    VrnicObjects *o = &core->obj;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", qpn);
    }
    if (qp->rss_refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "in an RSS context",
                            qp->rss_refs);
    }
    /* No flush CQEs: verbs destroy silently. Pending work dies with it. */
    vrnic_qp_set_pending(core, qp, false);
    if (qp->type == T_TGT) {
        /* Its PD, CQ and SRQ are the message's, never referenced. */
        o->xrcds[qp->xrcdn].refs--;
    } else {
        o->pds[qp->pdn].refs--;
        o->cqs[qp->send_cqn].refs--;
        if (qp->recv_cqn) {
            o->cqs[qp->recv_cqn].refs--;
        }
        if (qp->srqn) {
            o->srqs[qp->srqn].refs--;
        }
    }
    /* Nothing may reach a QP number a new QP could get. */
    vrnic_mw_qp_destroyed(core, qpn);
    vrnic_mcast_qp_destroyed(core, qpn);
    vrnic_flow_qp_destroyed(core, qpn);
    vrnic_xport_free(qp);
    memset(qp, 0, sizeof(*qp));
    o->n_qps--;
    trace_vrnic_qp_destroy(qpn);
    return VRNIC_AQ_STS_OK;
}

/* ---- SRQ commands ----------------------------------------------------- */

uint8_t vrnic_srq_create(VrnicCore *core, const struct vrnic_aq_create_srq *c,
                         uint64_t *result)
{
    VrnicObjects *o = &core->obj;
    uint32_t pdn = le32_to_cpu(c->pdn);
    uint32_t uctx = le32_to_cpu(c->uctx);
    uint32_t limit = le32_to_cpu(c->limit);
    uint32_t max_log = MIN(vrnic_max_log(core->cfg.max_srq_wr),
                           VRNIC_RING_MAX_LOG_DEPTH);
    uint32_t xrcdn = le32_to_cpu(c->xrcdn);
    uint32_t cqn = le32_to_cpu(c->cqn);
    VrnicPd *pd = vrnic_pd_get(core, pdn);
    VrnicXrcd *xrcd = xrcdn ? vrnic_xrcd_get(core, xrcdn) : NULL;
    VrnicCq *cq = xrcdn ? vrnic_cq_get(core, cqn) : NULL;
    uint32_t srqn;
    VrnicMem mem;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || !VRNIC_RSVD_ZERO(c->rsvd1) ||
        c->handle || c->attr_mask) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    if (uctx >= core->cfg.db_pages || pd->uctx != uctx) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "uctx", uctx);
    }
    /* An XRC SRQ completes on a CQ of its own context; a basic one, none. */
    if (xrcdn && !xrcd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "xrcdn", xrcdn);
    }
    if (xrcdn && (!cq || cq->uctx != uctx)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "cqn", cqn);
    }
    if (!xrcdn && cqn) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "cqn of a basic SRQ", cqn);
    }
    if (c->log_depth < 1 || c->log_depth > max_log) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "log_depth", c->log_depth);
    }
    if (c->wqe_shift < VRNIC_RQ_WQE_MIN_SHIFT ||
        c->wqe_shift > VRNIC_WQE_MAX_SHIFT) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "wqe_shift", c->wqe_shift);
    }
    if (c->max_sge > core->cfg.max_sge ||
        vrnic_recv_wqe_len(c->max_sge) > (1u << c->wqe_shift)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "max_sge", c->max_sge);
    }
    if (limit > (1u << c->log_depth)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "limit", limit);
    }
    sts = vrnic_mem_parse(core, &c->mem, &mem);
    if (sts) {
        return sts;
    }
    if ((mem.iova & (VRNIC_RING_ALIGN - 1)) ||
        vrnic_wq_bytes(c->log_depth, c->wqe_shift) > mem.length) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem", mem.length);
    }
    if (o->n_srqs >= core->cfg.max_srq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "max_srq", o->n_srqs);
    }
    srqn = vrnic_obj_alloc(&o->next_srq, 1, core->cfg.max_srq, o->srqs,
                           sizeof(*o->srqs));
    o->srqs[srqn] = (VrnicSrq) {
        .live = true,
        .pdn = pdn,
        .uctx = uctx,
        .max_sge = c->max_sge,
        .limit = limit,
        .xrcdn = xrcdn,
        .cqn = cq ? cqn : 0,
        .wq = { .log_depth = c->log_depth, .wqe_shift = c->wqe_shift },
        .mem = mem,
    };
    pd->refs++;
    if (xrcd) {
        xrcd->refs++;
        cq->refs++;
    }
    o->n_srqs++;
    *result = srqn;
    trace_vrnic_srq_create(srqn, 1u << c->log_depth, uctx, limit);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_srq_modify(VrnicCore *core, const struct vrnic_aq_create_srq *c)
{
    uint32_t srqn = le32_to_cpu(c->handle);
    uint32_t mask = le32_to_cpu(c->attr_mask);
    uint32_t limit = le32_to_cpu(c->limit);
    VrnicSrq *srq = vrnic_srq_get(core, srqn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || !VRNIC_RSVD_ZERO(c->rsvd1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!srq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "srqn", srqn);
    }
    if (mask & ~VRNIC_SRQ_ATTR_LIMIT) {
        /* IB_SRQ_MAX_WR (resize) is not supported. */
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "attr_mask", mask);
    }
    if ((mask & VRNIC_SRQ_ATTR_LIMIT) && limit > vrnic_wq_depth(&srq->wq)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "limit", limit);
    }
    if (mask & VRNIC_SRQ_ATTR_LIMIT) {
        srq->limit = limit;
    }
    trace_vrnic_srq_modify(srqn, mask, srq->limit);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_srq_query(VrnicCore *core, const struct vrnic_aq_query *c)
{
    uint32_t srqn = le32_to_cpu(c->index);
    VrnicSrq *srq = vrnic_srq_get(core, srqn);
    struct vrnic_srq_attr a = {};

    if (!srq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "srqn", srqn);
    }
    a.max_wr = cpu_to_le32(vrnic_wq_depth(&srq->wq));
    a.max_sge = cpu_to_le32(srq->max_sge);
    a.limit = cpu_to_le32(srq->limit);
    return vrnic_answer(core, le64_to_cpu(c->resp_addr),
                        le32_to_cpu(c->resp_len), &a, sizeof(a));
}

uint8_t vrnic_srq_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t srqn = le32_to_cpu(c->handle);
    VrnicSrq *srq = vrnic_srq_get(core, srqn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!srq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "srqn", srqn);
    }
    if (srq->refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "srq has QPs", srq->refs);
    }
    core->obj.pds[srq->pdn].refs--;
    if (srq->xrcdn) {
        core->obj.xrcds[srq->xrcdn].refs--;
        core->obj.cqs[srq->cqn].refs--;
        vrnic_xrc_srq_destroyed(core, srqn);
    }
    memset(srq, 0, sizeof(*srq));
    core->obj.n_srqs--;
    trace_vrnic_srq_destroy(srqn);
    return VRNIC_AQ_STS_OK;
}

bool vrnic_srq_take(VrnicCore *core, uint32_t srqn, void *buf, uint32_t len)
{
    VrnicSrq *srq = vrnic_srq_get(core, srqn);
    uint64_t off;

    if (!srq || srq->wq.ci == srq->wq.pi ||
        len > (1u << srq->wq.wqe_shift)) {
        return false;
    }
    off = (uint64_t)vrnic_idx_slot(srq->wq.ci, srq->wq.log_depth) <<
          srq->wq.wqe_shift;
    if (!vrnic_mem_read_at(core, &srq->mem, off, buf, len)) {
        VRNIC_GUEST_ERR(core, vrnic_err_srq, "srqn %u: WQE %u unreadable",
                        srqn, srq->wq.ci);
        return false;
    }
    srq->wq.ci++;
    if (srq->limit && (uint16_t)(srq->wq.pi - srq->wq.ci) < srq->limit) {
        trace_vrnic_srq_limit(srqn, srq->limit);
        srq->limit = 0;
        vrnic_aeq_post(core, VRNIC_AEQ_EV_SRQ_LIMIT, srqn);
    }
    return true;
}

/* ---- doorbells -------------------------------------------------------- */

/* pi may move forward, up to one ring past the device's consumer. */
static bool vrnic_wq_pi_ok(const VrnicWq *wq, uint16_t pi)
{
    return (uint16_t)(pi - wq->pi) <=
           (uint16_t)(wq->ci + vrnic_wq_depth(wq) - wq->pi);
}

void vrnic_wq_db(VrnicCore *core, uint32_t page, uint32_t off, uint32_t qn,
                 uint16_t pi)
{
    const char *why = NULL;
    VrnicWq *wq = NULL;

    if (off == VRNIC_DB_SRQ) {
        VrnicSrq *srq = vrnic_srq_get(core, qn);

        if (!srq || srq->uctx != page) {
            why = "no such SRQ on this page";
        } else if (!vrnic_wq_pi_ok(&srq->wq, pi)) {
            why = "pi out of range";
        } else {
            srq->wq.pi = pi;
            trace_vrnic_db_wq(page, "srq", qn, pi);
            return;
        }
    } else {
        VrnicQp *qp = vrnic_qp_get(core, qn);
        bool send = off == VRNIC_DB_SQ;

        if (qp) {
            wq = send ? &qp->sq : &qp->rq;
        }
        if (!qp || qp->uctx != page) {
            why = "no such QP on this page";
        } else if (qp->state == VRNIC_QPS_RESET) {
            why = "QP in RESET";
        } else if (!wq->log_depth) {
            why = send ? "QP has no SQ" : "QP has no RQ";
        } else if (!vrnic_wq_pi_ok(wq, pi)) {
            why = "pi out of range";
        } else {
            wq->pi = pi;
            trace_vrnic_db_wq(page, send ? "sq" : "rq", qn, pi);
            if (!send && qp->type == VRNIC_QP_TYPE_RC) {
                vrnic_resp_rq_posted(core, qp);
            }
            if (qp->state == VRNIC_QPS_ERR ||
                (send && (qp->state == VRNIC_QPS_SQE ||
                          qp->state == VRNIC_QPS_RTS))) {
                vrnic_qp_set_pending(core, qp, true);
            }
            return;
        }
    }
    core->stats.db_rejected++;
    VRNIC_GUEST_ERR(core, vrnic_err_db_wq, "page %u off 0x%x qn %u pi %u: %s",
                    page, off, qn, pi, why);
}
