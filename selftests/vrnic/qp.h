/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the verbs selftests do with a QP: give it an SRQ, walk it through
 * its states to RTS towards a RoCEv2 peer, post one-SGE work requests.
 * Failures are noted in the case's verdict rather than ending the test:
 * a case goes on to its other checks (and to its cleanup) and reports
 * everything at the end.
 */
#ifndef VRNIC_SELFTEST_QP_H
#define VRNIC_SELFTEST_QP_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "verdict.h"

/* The Q_Key of every UD QP, so that any two of them can talk. */
#define QKEY		0x11111111u

static inline bool qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *a,
			     int mask, const char *to, struct verdict *v)
{
	int rc = ibv_modify_qp(qp, a, mask);

	if (rc)
		fail(v, "ibv_modify_qp QP %#x to %s: %s", qp->qp_num, to,
		     strerror(rc));
	return !rc;
}

/* The reliable connected side that sends requests: RC, an XRC initiator. */
static inline bool qp_rc_sender(const struct ibv_qp *qp)
{
	return qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_SEND;
}

/* ... and the side that answers them: RC, an XRC target. */
static inline bool qp_rc_responder(const struct ibv_qp *qp)
{
	return qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV;
}

/*
 * RESET -> INIT on port 1. RC, UC and XRC accept every remote access the
 * QP type has, so that the MR (or the window) alone decides what a peer
 * may do; UD gets QKEY.
 */
static inline bool qp_to_init(struct ibv_qp *qp, struct verdict *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (qp_rc_responder(qp))
			a.qp_access_flags |= IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return qp_modify(qp, &a, mask, "INIT", v);
}

/*
 * An SRQ of 16 one-SGE receives for the QP that ia is about to create:
 * the QP's receives come from it, so ia asks for no receive queue.
 */
static inline struct ibv_srq *srq_for_qp(struct ibv_pd *pd,
					 struct ibv_qp_init_attr *ia,
					 struct verdict *v)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);

	if (!srq) {
		fail(v, "ibv_create_srq: %s", strerror(errno));
		return NULL;
	}
	ia->srq = srq;
	ia->cap.max_recv_wr = ia->cap.max_recv_sge = 0;
	return srq;
}

/* The address vector to dgid (16 bytes) from our GID sgid_index: RoCEv2. */
static inline void roce_ah_attr(struct ibv_ah_attr *ah, const uint8_t *dgid,
				int sgid_index)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, dgid, 16);
	ah->grh.sgid_index = sgid_index;
	ah->grh.hop_limit = 64;
	ah->port_num = 1;
}

/* How an RC connection retries; UC and UD have nothing to retry. */
struct rc_knobs {
	uint8_t timeout;	/* local ACK timeout: 4.096 us << timeout */
	uint8_t retry_cnt;	/* retransmissions after a timeout */
	uint8_t rnr_retry;	/* after an RNR NAK (7: without end) */
	uint8_t min_rnr_timer;	/* the wait our RNR NAKs ask the sender for */
};

/*
 * INIT -> RTR -> RTS. RC, UC and XRC connect to QP dqpn behind ah and
 * expect rq_psn first; UD takes its peer from every WR instead. All send
 * from sq_psn, over a path MTU of 1024; RC (and the XRC side concerned)
 * with up to 4 READs and atomics in flight each way and k's retries.
 */
static inline bool qp_to_rts(struct ibv_qp *qp, const struct ibv_ah_attr *ah,
			     uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn,
			     const struct rc_knobs *k, struct verdict *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE;

	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = rq_psn;
		a.ah_attr = *ah;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (qp_rc_responder(qp)) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = k->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (!qp_modify(qp, &a, mask, "RTR", v))
		return false;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp_rc_sender(qp)) {
		a.timeout = k->timeout;
		a.retry_cnt = k->retry_cnt;
		a.rnr_retry = k->rnr_retry;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	} else if (qp_rc_responder(qp)) {
		a.timeout = k->timeout;		/* an XRC target's, unused */
		mask |= IBV_QP_TIMEOUT;
	}
	return qp_modify(qp, &a, mask, "RTS", v);
}

/* The QP's state as the device reports it, or -1. */
static inline int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static inline const char *qp_state_str(int s)
{
	static const char *const name[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};

	return s >= 0 && s <= IBV_QPS_ERR ? name[s] : "?";
}

static inline bool expect_state(struct verdict *v, const char *who,
				struct ibv_qp *qp, int want)
{
	int s = qp_state(qp);

	if (s == want)
		return true;
	fail(v, "%s QP state %s, want %s", who, qp_state_str(s),
	     qp_state_str(want));
	return false;
}

/*
 * One signaled work request of one SGE (len bytes at addr, in mr) to
 * raddr and rkey, through the verbs (the provider's own checks apply).
 * A FETCH_AND_ADD adds add. Returns ibv_post_send's error.
 */
static inline int qp_post_one(struct ibv_qp *qp, enum ibv_wr_opcode op,
			      struct ibv_mr *mr, void *addr, uint32_t len,
			      uint64_t raddr, uint32_t rkey, uint64_t add,
			      uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/* One receive WQE of one SGE (len bytes at addr, in mr). */
static inline int qp_post_recv_one(struct ibv_qp *qp, struct ibv_mr *mr,
				   void *addr, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

#endif
