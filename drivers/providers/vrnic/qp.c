// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic queue pairs and shared receive queues: create/modify/query/
 * destroy through the kernel; post_send, post_recv, post_srq_recv and the
 * ibv_wr_* API write WQEs into our own rings and ring the doorbell page,
 * with no syscall.
 *
 * Layout (vrnic_hw_defs.h CREATE_QP): one buffer, SQ ring at offset 0
 * (2^sq_log_depth send WQEs of 2^sq_wqe_shift bytes), RQ ring at rq_offset.
 * A send WQE is the 64-byte vrnic_send_wqe, then for UD the 64-byte address
 * segment (vrnic_av + vrnic_ud_dest), then vrnic_sge[] or inline data. A
 * raw packet QP's send WQE is laid out as RC's, and its data is one whole
 * Ethernet frame ("Raw packet QPs"). An XRC initiator's is RC's too, with
 * the remote XRC SRQ in the header's xrc_srqn ("XRC"); it has no receive
 * side. A receive WQE is the 16-byte vrnic_recv_wqe then vrnic_sge[].
 *
 * Indices are free-running 32-bit counters; the doorbell carries the low 16
 * bits (VRNIC_DB_INDEX_MASK) and every ring holds at most 2^15 WQEs so the
 * device can tell full from empty modulo 2^16. A ring of 2^n WQEs holds 2^n
 * outstanding WQEs: the device is told the producer index, so no slot is
 * sacrificed.
 *
 * The wr_id field of a WQE does not carry the user's wr_id: the device
 * echoes it in the CQE, and we need to know which WQE completed (cq.c).
 * SQ/RQ WQEs carry their ring position (the user's wr_id waits in
 * wq->wrid[]), SRQ WQEs a slot of the SRQ's wr_id pool.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <ccan/minmax.h>
#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"
#include "vrnic.h"

#define VRNIC_SEND_FLAGS_SUPPORTED (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
				    IBV_SEND_INLINE | IBV_SEND_FENCE)

/* A raw packet QP sends Ethernet frames, with SEND only. */
#define VRNIC_SEND_OPS_RAW IBV_QP_EX_WITH_SEND
#define VRNIC_SEND_OPS_UD (VRNIC_SEND_OPS_RAW | IBV_QP_EX_WITH_SEND_WITH_IMM)
/* IBTA defines no UC SEND with Invalidate: RC only, as in the kernel. */
#define VRNIC_SEND_OPS_UC (VRNIC_SEND_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | \
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			   IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)
#define VRNIC_SEND_OPS_RC (VRNIC_SEND_OPS_UC | IBV_QP_EX_WITH_SEND_WITH_INV | \
			   IBV_QP_EX_WITH_RDMA_READ | \
			   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
			   IBV_QP_EX_WITH_ATOMIC_WRITE)
/* The XRC transport has RC's operations but ATOMIC WRITE (and FLUSH). */
#define VRNIC_SEND_OPS_XRC (VRNIC_SEND_OPS_RC & \
			    ~(uint64_t)IBV_QP_EX_WITH_ATOMIC_WRITE)


/*
 * libibverbs 44 (the host's) predates ibv_qp_ex.wr_flush (rdma-core 45):
 * in its struct verbs_qp, comp_mask sits where rdma-core 56's headers put
 * wr_flush, and its ibv_qp_to_qp_ex() tests VERBS_QP_EX there
 * ("testb $0x2,0x160(%rdi)"). Set the flag in both places: a 56 libibverbs
 * reads comp_mask, a 44 one the first word of wr_flush, which we never
 * install (IBV_QP_EX_WITH_FLUSH is refused) and which an application built
 * against 44 cannot call.
 */
static_assert(offsetof(struct ibv_qp_ex, wr_flush) == 352,
	      "verbs_qp.comp_mask of libibverbs 44 must overlay wr_flush");

static void vrnic_qp_mark_ex(struct vrnic_qp *qp)
{
	uint8_t *comp_mask_44 = (uint8_t *)&qp->vqp.qp_ex.wr_flush;
	uint32_t mask;

	qp->vqp.comp_mask |= VERBS_QP_EX;
	memcpy(&mask, comp_mask_44, sizeof(mask));
	mask |= VERBS_QP_EX;
	memcpy(comp_mask_44, &mask, sizeof(mask));
}

static inline void *vrnic_wq_entry(struct vrnic_wq *wq, uint32_t idx)
{
	return (uint8_t *)wq->ring +
	       ((size_t)vrnic_idx_slot(idx, wq->log_depth) << wq->wqe_shift);
}

static inline bool vrnic_wq_full(struct vrnic_wq *wq, uint32_t pi)
{
	return pi - vrnic_load_idx(&wq->ci) >= (1U << wq->log_depth);
}

/*
 * Whether a QP has this queue (vrnic_wq_init gave it a wrid array): an
 * RSS QP and an XRC target have neither, a QP on an SRQ and an XRC
 * initiator no RQ.
 */
static inline bool vrnic_wq_exists(const struct vrnic_wq *wq)
{
	return wq->wrid;
}

static inline void vrnic_set_sge(struct vrnic_sge *sge, uint64_t addr,
				 uint32_t length, uint32_t lkey)
{
	sge->addr = htole64(addr);
	sge->length = htole32(length);
	sge->lkey = htole32(lkey);
}

/*
 * The CQ of a QP's receive side. An XRC initiator has none: the recv_cq a
 * user may still pass was never given to the device (nor is it sent to
 * the kernel), so its send CQ stands in.
 */
static struct vrnic_cq *vrnic_qp_rcq(struct ibv_qp *ibvqp)
{
	if (ibvqp->qp_type == IBV_QPT_XRC_SEND)
		return to_vrnic_cq(ibvqp->send_cq);
	return to_vrnic_cq(ibvqp->recv_cq);
}

/* Both CQs of a QP, in address order (one lock if they are the same CQ). */
static void vrnic_lock_cqs(struct ibv_qp *ibvqp)
{
	struct vrnic_cq *scq = to_vrnic_cq(ibvqp->send_cq);
	struct vrnic_cq *rcq = vrnic_qp_rcq(ibvqp);

	if (scq == rcq) {
		pthread_spin_lock(&scq->lock);
	} else if (scq < rcq) {
		pthread_spin_lock(&scq->lock);
		pthread_spin_lock(&rcq->lock);
	} else {
		pthread_spin_lock(&rcq->lock);
		pthread_spin_lock(&scq->lock);
	}
}

static void vrnic_unlock_cqs(struct ibv_qp *ibvqp)
{
	struct vrnic_cq *scq = to_vrnic_cq(ibvqp->send_cq);
	struct vrnic_cq *rcq = vrnic_qp_rcq(ibvqp);

	if (scq != rcq)
		pthread_spin_unlock(&rcq->lock);
	pthread_spin_unlock(&scq->lock);
}

/* Drop the QP's CQEs from its CQs; both CQ locks held. */
static void vrnic_qp_clean_cqs(struct vrnic_qp *qp)
{
	struct ibv_qp *ibvqp = &qp->vqp.qp;
	struct vrnic_cq *scq = to_vrnic_cq(ibvqp->send_cq);
	struct vrnic_cq *rcq = vrnic_qp_rcq(ibvqp);

	vrnic_cq_clean(rcq, qp->qpn, qp->srq);
	if (scq != rcq)
		vrnic_cq_clean(scq, qp->qpn, NULL);
}

/* ---- sizing ------------------------------------------------------------- */

struct vrnic_qp_sizes {
	uint32_t sq_log_depth;
	uint32_t sq_wqe_shift;
	uint32_t sq_max_sge;
	uint32_t max_inline;
	uint32_t sq_data_off;
	uint32_t rq_log_depth;
	uint32_t rq_wqe_shift;
	uint32_t rq_max_sge;
	size_t rq_offset;
	size_t buf_len;
};

int vrnic_wq_log_depth(uint32_t wr, uint32_t *log_depth)
{
	*log_depth = max_t(uint32_t, 1, vrnic_order(wr));
	return *log_depth > VRNIC_RING_MAX_LOG_DEPTH ? EINVAL : 0;
}

/*
 * Receive WQE size for max_sge SGEs, and how many SGEs that size really
 * holds (reported back to the user).
 */
int vrnic_recv_wqe_shift(struct vrnic_context *ctx, uint32_t max_sge,
			 uint32_t *shift, uint32_t *real_max_sge)
{
	*shift = vrnic_wqe_shift(vrnic_recv_wqe_len(max_sge),
				 VRNIC_RQ_WQE_MIN_SHIFT);
	if (*shift > VRNIC_WQE_MAX_SHIFT)
		return EINVAL;
	*real_max_sge = min_t(uint32_t, ctx->max_sge,
			      vrnic_wqe_sges(*shift,
					     sizeof(struct vrnic_recv_wqe)));
	*real_max_sge = min_t(uint32_t, *real_max_sge, VRNIC_WQE_MAX_SGE);
	return 0;
}

static int vrnic_qp_sizes(struct vrnic_context *ctx,
			  const struct ibv_qp_init_attr_ex *attr,
			  struct vrnic_qp_sizes *s)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	bool ud = attr->qp_type == IBV_QPT_UD;
	uint32_t avail;
	int err;

	if (cap->max_send_wr > ctx->max_qp_wr ||
	    cap->max_send_sge > ctx->max_sge ||
	    cap->max_inline_data > ctx->max_inline_data)
		return EINVAL;
	if (!attr->srq &&
	    (cap->max_recv_wr > ctx->max_qp_wr ||
	     cap->max_recv_sge > ctx->max_sge))
		return EINVAL;

	/* Send: header, UD address segment, then SGEs or inline data. */
	s->sq_data_off = vrnic_send_wqe_hdr_len(ud);
	s->sq_wqe_shift = vrnic_wqe_shift(vrnic_send_wqe_len(ud,
							     cap->max_send_sge,
							     cap->max_inline_data),
					  VRNIC_SQ_WQE_MIN_SHIFT);
	if (s->sq_wqe_shift > VRNIC_WQE_MAX_SHIFT)
		return EINVAL;
	avail = (1U << s->sq_wqe_shift) - s->sq_data_off;
	s->sq_max_sge = min_t(uint32_t, ctx->max_sge,
			      vrnic_wqe_sges(s->sq_wqe_shift, s->sq_data_off));
	s->sq_max_sge = min_t(uint32_t, s->sq_max_sge, VRNIC_WQE_MAX_SGE);
	s->max_inline = min_t(uint32_t, ctx->max_inline_data, avail);
	err = vrnic_wq_log_depth(cap->max_send_wr, &s->sq_log_depth);
	if (err)
		return err;

	s->rq_offset = (size_t)1 << (s->sq_log_depth + s->sq_wqe_shift);
	if (attr->srq || attr->qp_type == IBV_QPT_XRC_SEND) {
		/* No RQ ring: depth 0 and the smallest legal WQE size. */
		s->rq_log_depth = 0;
		s->rq_wqe_shift = VRNIC_RQ_WQE_MIN_SHIFT;
		s->rq_max_sge = 0;
		s->buf_len = s->rq_offset;
		return 0;
	}

	err = vrnic_recv_wqe_shift(ctx, cap->max_recv_sge, &s->rq_wqe_shift,
				   &s->rq_max_sge);
	if (err)
		return err;
	err = vrnic_wq_log_depth(cap->max_recv_wr, &s->rq_log_depth);
	if (err)
		return err;
	s->buf_len = s->rq_offset +
		     ((size_t)1 << (s->rq_log_depth + s->rq_wqe_shift));
	return 0;
}

/* What the user gets back: every value >= what was asked for. */
static void vrnic_qp_fill_cap(const struct vrnic_qp *qp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr = 1U << qp->sq.log_depth;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->max_inline;
	if (vrnic_wq_exists(&qp->rq)) {
		cap->max_recv_wr = 1U << qp->rq.log_depth;
		cap->max_recv_sge = qp->rq.max_sge;
	} else {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
}

int vrnic_wq_init(struct vrnic_wq *wq, void *ring, uint32_t log_depth,
		  uint32_t shift, uint32_t max_sge)
{
	wq->ring = ring;
	wq->log_depth = log_depth;
	wq->wqe_shift = shift;
	wq->max_sge = max_sge;
	wq->pi = 0;
	wq->ci = 0;
	wq->wrid = calloc((size_t)1 << log_depth, sizeof(*wq->wrid));
	if (!wq->wrid)
		return ENOMEM;
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void vrnic_wq_uninit(struct vrnic_wq *wq)
{
	if (!wq->wrid)
		return;
	pthread_spin_destroy(&wq->lock);
	free(wq->wrid);
	wq->wrid = NULL;
}

/* ---- ibv_wr_* (extended send API) ----------------------------------------- */

static bool vrnic_qp_can_send(struct vrnic_qp *qp)
{
	enum ibv_qp_state state = qp->vqp.qp.state;

	/* In ERR/SQE a post succeeds and is flushed by the device. */
	return state != IBV_QPS_RESET && state != IBV_QPS_INIT &&
	       state != IBV_QPS_RTR;
}

static uint8_t vrnic_wqe_flags(struct vrnic_qp *qp, unsigned int send_flags)
{
	uint8_t flags = 0;

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= VRNIC_WQE_FLAG_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		flags |= VRNIC_WQE_FLAG_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= VRNIC_WQE_FLAG_FENCE;
	return flags;
}

/*
 * Start a WQE at the session's producer index: header and UD segment
 * zeroed, ring position in wr_id. The ring position is written straight
 * into the ring: the device reads nothing past the last doorbell, so an
 * aborted session leaves no trace.
 */
static struct vrnic_send_wqe *vrnic_wr_common(struct ibv_qp_ex *ibvqpx,
					      uint8_t opcode)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);
	struct vrnic_send_wqe *wqe;
	uint32_t pi = qp->wr_start_pi;

	qp->wr_cur = NULL;
	if (unlikely(qp->wr_err))
		return NULL;

	if (unlikely(!check_comp_mask(ibvqpx->wr_flags,
				      VRNIC_SEND_FLAGS_SUPPORTED) ||
		     !vrnic_qp_can_send(qp))) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	if (unlikely(vrnic_wq_full(&qp->sq, pi))) {
		qp->wr_err = ENOMEM;
		return NULL;
	}

	wqe = vrnic_wq_entry(&qp->sq, pi);
	memset(wqe, 0, qp->sq_data_off);
	wqe->wr_id = htole64(pi);
	wqe->opcode = opcode;
	wqe->flags = vrnic_wqe_flags(qp, ibvqpx->wr_flags);
	qp->sq.wrid[vrnic_idx_slot(pi, qp->sq.log_depth)] = ibvqpx->wr_id;
	/* IBV_SEND_INLINE in wr_flags is honoured by wr_set_inline_data*. */
	qp->wr_start_pi = pi + 1;
	qp->wr_cur = wqe;
	return wqe;
}

static void vrnic_wr_send(struct ibv_qp_ex *ibvqpx)
{
	vrnic_wr_common(ibvqpx, VRNIC_WQE_OP_SEND);
}

static void vrnic_wr_send_imm(struct ibv_qp_ex *ibvqpx, __be32 imm_data)
{
	struct vrnic_send_wqe *wqe;

	wqe = vrnic_wr_common(ibvqpx, VRNIC_WQE_OP_SEND_IMM);
	if (wqe)
		/* imm_data travels in network order. */
		memcpy(&wqe->imm_data, &imm_data, sizeof(wqe->imm_data));
}

/* SEND with Invalidate and LOCAL_INV carry the key in imm_data. */
static void vrnic_wr_inv(struct ibv_qp_ex *ibvqpx, uint8_t opcode,
			 uint32_t invalidate_rkey)
{
	struct vrnic_send_wqe *wqe;

	wqe = vrnic_wr_common(ibvqpx, opcode);
	if (wqe)
		wqe->imm_data = htole32(invalidate_rkey);
}

static void vrnic_wr_send_inv(struct ibv_qp_ex *ibvqpx,
			      uint32_t invalidate_rkey)
{
	vrnic_wr_inv(ibvqpx, VRNIC_WQE_OP_SEND_INV, invalidate_rkey);
}

/* IBV_ACCESS_* a window grants -> VRNIC_ACCESS_*; -1 for anything else. */
static int vrnic_mw_access(unsigned int access)
{
	const unsigned int known = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC;
	int va = 0;

	if (access & ~known)
		return -1;
	if (access & IBV_ACCESS_LOCAL_WRITE)
		va |= VRNIC_ACCESS_LOCAL_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		va |= VRNIC_ACCESS_REMOTE_READ;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		va |= VRNIC_ACCESS_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		va |= VRNIC_ACCESS_REMOTE_ATOMIC;
	return va;
}

/*
 * A BIND_MW WQE over the send WQE the caller started (opcode and flags
 * set): the window's new key, the MR (none for a type 1 unbind) and the
 * range and rights. The device checks the rest when it executes it.
 */
static int vrnic_fill_bind_wqe(struct vrnic_send_wqe *wqe, uint32_t rkey,
			       const struct ibv_mw_bind_info *info)
{
	struct vrnic_bind_mw_wqe *b = (struct vrnic_bind_mw_wqe *)wqe;
	int access = vrnic_mw_access(info->mw_access_flags);

	if (access < 0)
		return EINVAL;
	b->mw_key = htole32(rkey);
	b->mr_key = htole32(info->mr ? info->mr->lkey : 0);
	b->access = htole32(access);
	b->addr = htole64(info->addr);
	b->length = htole64(info->length);
	return 0;
}

static void vrnic_wr_bind_mw(struct ibv_qp_ex *ibvqpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *info)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);
	struct vrnic_send_wqe *wqe;

	wqe = vrnic_wr_common(ibvqpx, VRNIC_WQE_OP_BIND_MW);
	if (wqe && (!mw || vrnic_fill_bind_wqe(wqe, rkey, info)))
		qp->wr_err = EINVAL;
}

static void vrnic_wr_local_inv(struct ibv_qp_ex *ibvqpx,
			       uint32_t invalidate_rkey)
{
	vrnic_wr_inv(ibvqpx, VRNIC_WQE_OP_LOCAL_INV, invalidate_rkey);
}

static void vrnic_wr_rdma(struct ibv_qp_ex *ibvqpx, uint8_t opcode,
			  uint32_t rkey, uint64_t remote_addr,
			  const __be32 *imm_data)
{
	struct vrnic_send_wqe *wqe;

	wqe = vrnic_wr_common(ibvqpx, opcode);
	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	if (imm_data)
		memcpy(&wqe->imm_data, imm_data, sizeof(wqe->imm_data));
}

static void vrnic_wr_rdma_write(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				uint64_t remote_addr)
{
	vrnic_wr_rdma(ibvqpx, VRNIC_WQE_OP_RDMA_WRITE, rkey, remote_addr, NULL);
}

static void vrnic_wr_rdma_write_imm(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	vrnic_wr_rdma(ibvqpx, VRNIC_WQE_OP_RDMA_WRITE_IMM, rkey, remote_addr,
		      &imm_data);
}

static void vrnic_wr_rdma_read(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	vrnic_wr_rdma(ibvqpx, VRNIC_WQE_OP_RDMA_READ, rkey, remote_addr, NULL);
}

/* The original value lands in the (8-byte) local SGE set next. */
static void vrnic_wr_atomic(struct ibv_qp_ex *ibvqpx, uint8_t opcode,
			    uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare_add, uint64_t swap)
{
	struct vrnic_send_wqe *wqe = vrnic_wr_common(ibvqpx, opcode);

	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	wqe->compare_add = htole64(compare_add);
	wqe->swap = htole64(swap);
}

static void vrnic_wr_atomic_cmp_swp(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	vrnic_wr_atomic(ibvqpx, VRNIC_WQE_OP_ATOMIC_CMP_SWP, rkey, remote_addr,
			compare, swap);
}

static void vrnic_wr_atomic_fetch_add(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	vrnic_wr_atomic(ibvqpx, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, rkey,
			remote_addr, add, 0);
}

/*
 * ATOMIC WRITE (IBTA 1.5): the 8 bytes at atomic_wr travel in the WQE, as
 * they are in memory, and land at remote_addr (8-byte aligned) in one
 * store. No SGE: one set after it fails the WQE.
 */
static void vrnic_wr_atomic_write(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	struct vrnic_send_wqe *wqe;

	wqe = vrnic_wr_common(ibvqpx, VRNIC_WQE_OP_ATOMIC_WRITE);
	if (!wqe)
		return;
	wqe->rkey = htole32(rkey);
	wqe->remote_addr = htole64(remote_addr);
	memcpy(&wqe->compare_add, atomic_wr, sizeof(wqe->compare_add));
}

static void vrnic_wr_set_sge_list(struct ibv_qp_ex *ibvqpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);
	struct vrnic_send_wqe *wqe = qp->wr_cur;
	struct vrnic_sge *sge;
	size_t i;

	if (unlikely(qp->wr_err || !wqe))
		return;
	if (unlikely(num_sge > qp->sq.max_sge)) {
		qp->wr_err = EINVAL;
		return;
	}

	sge = (struct vrnic_sge *)((uint8_t *)wqe + qp->sq_data_off);
	for (i = 0; i < num_sge; i++)
		vrnic_set_sge(&sge[i], sg_list[i].addr, sg_list[i].length,
			      sg_list[i].lkey);
	wqe->num_sge = num_sge;
}

static void vrnic_wr_set_sge(struct ibv_qp_ex *ibvqpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	vrnic_wr_set_sge_list(ibvqpx, 1, &sge);
}

static bool vrnic_opcode_allows_inline(uint8_t opcode)
{
	switch (opcode) {
	case VRNIC_WQE_OP_SEND:
	case VRNIC_WQE_OP_SEND_IMM:
	case VRNIC_WQE_OP_SEND_INV:
	case VRNIC_WQE_OP_RDMA_WRITE:
	case VRNIC_WQE_OP_RDMA_WRITE_IMM:
		return true;
	default:
		return false;
	}
}

static void vrnic_wr_set_inline_data_list(struct ibv_qp_ex *ibvqpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);
	struct vrnic_send_wqe *wqe = qp->wr_cur;
	uint8_t *data;
	size_t i, len = 0;

	if (unlikely(qp->wr_err || !wqe))
		return;
	for (i = 0; i < num_buf; i++)
		len += buf_list[i].length;
	if (unlikely(len > qp->max_inline ||
		     !vrnic_opcode_allows_inline(wqe->opcode))) {
		qp->wr_err = EINVAL;
		return;
	}

	data = (uint8_t *)wqe + qp->sq_data_off;
	for (i = 0; i < num_buf; i++) {
		memcpy(data, buf_list[i].addr, buf_list[i].length);
		data += buf_list[i].length;
	}
	wqe->flags |= VRNIC_WQE_FLAG_INLINE;
	wqe->inline_len = htole32(len);
	wqe->num_sge = 0;
}

static void vrnic_wr_set_inline_data(struct ibv_qp_ex *ibvqpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	vrnic_wr_set_inline_data_list(ibvqpx, 1, &buf);
}

static void vrnic_set_ud_seg(struct vrnic_send_wqe *wqe, struct ibv_ah *ibvah,
			     uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vrnic_av *av = (struct vrnic_av *)(wqe + 1);
	struct vrnic_ud_dest *dest = (struct vrnic_ud_dest *)(av + 1);

	memcpy(av, &to_vrnic_ah(ibvah)->av, sizeof(*av));
	dest->dest_qpn = htole32(remote_qpn);
	dest->qkey = htole32(remote_qkey);
}

static void vrnic_wr_set_ud_addr(struct ibv_qp_ex *ibvqpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);

	if (unlikely(qp->wr_err || !qp->wr_cur))
		return;
	if (unlikely(!ah)) {
		qp->wr_err = EINVAL;
		return;
	}
	vrnic_set_ud_seg(qp->wr_cur, ah, remote_qpn, remote_qkey);
}

/*
 * An XRC initiator's WR names the remote XRC SRQ. BIND_MW and LOCAL_INV
 * send nothing and have no such field (a bind WQE has reserved bytes
 * there), so for them it is ignored, as post_send does.
 */
static void vrnic_wr_set_xrc_srqn(struct ibv_qp_ex *ibvqpx,
				  uint32_t remote_srqn)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);
	struct vrnic_send_wqe *wqe = qp->wr_cur;

	if (unlikely(qp->wr_err || !wqe))
		return;
	if (unlikely(remote_srqn & ~VRNIC_XRC_SRQN_MASK)) {
		qp->wr_err = EINVAL;
		return;
	}
	if (wqe->opcode != VRNIC_WQE_OP_BIND_MW &&
	    wqe->opcode != VRNIC_WQE_OP_LOCAL_INV)
		wqe->xrc_srqn = htole32(remote_srqn);
}

/* rxe's flow: wr_start locks and snapshots pi, wr_complete publishes. */
static void vrnic_wr_start(struct ibv_qp_ex *ibvqpx)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_err = 0;
	qp->wr_cur = NULL;
	qp->wr_start_pi = qp->sq.pi;
}

static void vrnic_sq_kick(struct vrnic_qp *qp, uint32_t pi)
{
	struct vrnic_context *ctx = to_vrnic_context(qp->vqp.qp.context);

	/* WQEs (and wrid[]) before pi, pi before the doorbell. */
	udma_to_device_barrier();
	vrnic_store_idx(&qp->sq.pi, pi);
	vrnic_ring_db(ctx, VRNIC_DB_SQ, qp->qpn, pi);
}

static int vrnic_wr_complete(struct ibv_qp_ex *ibvqpx)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);
	int err = qp->wr_err;

	/* On error nothing of the session reaches the device. */
	if (!err && qp->wr_start_pi != qp->sq.pi)
		vrnic_sq_kick(qp, qp->wr_start_pi);
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void vrnic_wr_abort(struct ibv_qp_ex *ibvqpx)
{
	struct vrnic_qp *qp = to_vrnic_qp_ex(ibvqpx);

	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/* Install only the builders the user asked for (efa_qp_fill_wr_pfns). */
static void vrnic_qp_fill_wr_pfns(struct vrnic_qp *qp,
				  const struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_ex *ibvqpx = &qp->vqp.qp_ex;
	uint64_t ops = attr->send_ops_flags;

	ibvqpx->wr_start = vrnic_wr_start;
	ibvqpx->wr_complete = vrnic_wr_complete;
	ibvqpx->wr_abort = vrnic_wr_abort;

	if (ops & IBV_QP_EX_WITH_SEND)
		ibvqpx->wr_send = vrnic_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ibvqpx->wr_send_imm = vrnic_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		ibvqpx->wr_send_inv = vrnic_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		ibvqpx->wr_rdma_write = vrnic_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ibvqpx->wr_rdma_write_imm = vrnic_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		ibvqpx->wr_rdma_read = vrnic_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ibvqpx->wr_atomic_cmp_swp = vrnic_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ibvqpx->wr_atomic_fetch_add = vrnic_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ibvqpx->wr_atomic_write = vrnic_wr_atomic_write;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		ibvqpx->wr_bind_mw = vrnic_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		ibvqpx->wr_local_inv = vrnic_wr_local_inv;

	ibvqpx->wr_set_sge = vrnic_wr_set_sge;
	ibvqpx->wr_set_sge_list = vrnic_wr_set_sge_list;
	ibvqpx->wr_set_inline_data = vrnic_wr_set_inline_data;
	ibvqpx->wr_set_inline_data_list = vrnic_wr_set_inline_data_list;
	if (attr->qp_type == IBV_QPT_UD)
		ibvqpx->wr_set_ud_addr = vrnic_wr_set_ud_addr;
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		ibvqpx->wr_set_xrc_srqn = vrnic_wr_set_xrc_srqn;
}

/* ---- QP control path ---------------------------------------------------- */

/*
 * Enter qp (a QP's or a WQ's queues) under its number, which the kernel
 * gave: CQEs name only that. Before the queue can own a WQE.
 */
int vrnic_qp_table_add(struct vrnic_context *ctx, struct vrnic_qp *qp,
		       const char *verb)
{
	if (qp->qpn < 2 || qp->qpn > VRNIC_DB_QN_MASK) {
		verbs_err(&ctx->ibvctx, "%s: kernel returned qpn %u\n", verb,
			  qp->qpn);
		return EPROTO;
	}
	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (ctx->qp_table[qp->qpn]) {
		pthread_mutex_unlock(&ctx->qp_table_mutex);
		verbs_err(&ctx->ibvctx, "%s: qpn %u already in use\n", verb,
			  qp->qpn);
		return EPROTO;
	}
	ctx->qp_table[qp->qpn] = qp;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return 0;
}

/*
 * CREATE_QP for qp. ibv_cmd_create_qp_ex (the legacy CREATE_QP command)
 * refuses the CREATE_FLAGS bit even with no flag set, which pyverbs
 * passes: callers have checked that no flag is set, so it is hidden for
 * the call.
 */
int vrnic_cmd_create_qp(struct ibv_context *ibvctx, struct vrnic_qp *qp,
			struct ibv_qp_init_attr_ex *attr,
			struct ibv_create_qp *cmd, size_t cmd_size,
			struct ib_uverbs_create_qp_resp *resp,
			size_t resp_size)
{
	uint32_t comp_mask = attr->comp_mask;
	int err;

	attr->comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	err = ibv_cmd_create_qp_ex(ibvctx, &qp->vqp, attr, cmd, cmd_size, resp,
				   resp_size);
	attr->comp_mask = comp_mask;
	return err;
}

static int vrnic_check_qp_attr(struct vrnic_context *ctx,
			       const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops_supported;

	if (!check_comp_mask(attr->comp_mask,
			     IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if (!attr->send_cq ||
	    (!attr->recv_cq && attr->qp_type != IBV_QPT_XRC_SEND))
		return EINVAL;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
		ops_supported = VRNIC_SEND_OPS_RC;
		break;
	case IBV_QPT_UC:
		ops_supported = VRNIC_SEND_OPS_UC;
		break;
	case IBV_QPT_UD:
		ops_supported = VRNIC_SEND_OPS_UD;
		break;
	case IBV_QPT_RAW_PACKET:
		/* The device steers frames to the QP's own RQ only. */
		if (attr->srq)
			return EINVAL;
		ops_supported = VRNIC_SEND_OPS_RAW;
		break;
	case IBV_QPT_XRC_SEND:
		/*
		 * No receive side: the kernel would zero what is asked
		 * for; refuse it instead, as it cannot be had.
		 */
		if (attr->srq || attr->cap.max_recv_wr ||
		    attr->cap.max_recv_sge)
			return EINVAL;
		ops_supported = VRNIC_SEND_OPS_XRC;
		break;
	default:
		return EOPNOTSUPP;
	}

	/* VRNIC_DEVICE_CAP_ATOMIC_WRITE, as the kernel reports it. */
	if (!ctx->atomic_write)
		ops_supported &= ~(uint64_t)IBV_QP_EX_WITH_ATOMIC_WRITE;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    !check_comp_mask(attr->send_ops_flags, ops_supported))
		return EOPNOTSUPP;
	return 0;
}

static struct ibv_qp *vrnic_create_qp_common(struct ibv_context *ibvctx,
					     struct ibv_qp_init_attr_ex *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	struct vrnic_ibv_create_qp_resp resp = {};
	struct vrnic_ibv_create_qp cmd = {};
	struct ibv_qp_cap user_cap = attr->cap;
	struct vrnic_qp_sizes s;
	struct vrnic_qp *qp;
	uint8_t *ring;
	int err;

	err = vrnic_check_qp_attr(ctx, attr);
	if (err) {
		verbs_debug(&ctx->ibvctx,
			    "create_qp: type %d comp_mask %#x send_ops %#llx refused\n",
			    attr->qp_type, attr->comp_mask,
			    (unsigned long long)attr->send_ops_flags);
		goto err_out;
	}

	err = vrnic_qp_sizes(ctx, attr, &s);
	if (err) {
		verbs_debug(&ctx->ibvctx,
			    "create_qp: caps sw %u ss %u rw %u rs %u inl %u beyond limits\n",
			    user_cap.max_send_wr, user_cap.max_send_sge,
			    user_cap.max_recv_wr, user_cap.max_recv_sge,
			    user_cap.max_inline_data);
		goto err_out;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		err = ENOMEM;
		goto err_out;
	}

	/*
	 * On a parent domain the rings may come from its allocator; the
	 * command carries its handle, which is the protection domain's.
	 */
	qp->pdom = vrnic_parent_domain_get(ctx, attr->pd);
	err = vrnic_buf_alloc(ctx, &qp->buf, s.buf_len, qp->pdom,
			      VRNIC_RES_TYPE_QP);
	if (err)
		goto err_free_qp;
	ring = qp->buf.addr;

	err = vrnic_wq_init(&qp->sq, ring, s.sq_log_depth, s.sq_wqe_shift,
			    s.sq_max_sge);
	if (err)
		goto err_free_buf;
	if (attr->srq) {
		qp->srq = to_vrnic_srq(attr->srq);
	} else if (attr->qp_type != IBV_QPT_XRC_SEND) {
		err = vrnic_wq_init(&qp->rq, ring + s.rq_offset,
				    s.rq_log_depth, s.rq_wqe_shift,
				    s.rq_max_sge);
		if (err)
			goto err_uninit_sq;
	}
	qp->max_inline = s.max_inline;
	qp->sq_data_off = s.sq_data_off;
	qp->sq_sig_all = attr->sq_sig_all;

	cmd.buf_addr = (uintptr_t)qp->buf.addr;
	cmd.buf_len = qp->buf.len;
	cmd.rq_offset = s.rq_offset;
	cmd.sq_log_depth = s.sq_log_depth;
	cmd.rq_log_depth = s.rq_log_depth;
	cmd.sq_wqe_shift = s.sq_wqe_shift;
	cmd.rq_wqe_shift = s.rq_wqe_shift;

	/*
	 * The kernel hands cap to the device (CREATE_QP max_send_sge,
	 * max_recv_sge, max_inline), which enforces them per WQE: tell it
	 * what the rings really hold, the values the user gets back.
	 */
	vrnic_qp_fill_cap(qp, &attr->cap);
	err = vrnic_cmd_create_qp(ibvctx, qp, attr, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->ibvctx, "create_qp: kernel refused: %d\n",
			    err);
		attr->cap = user_cap;
		goto err_uninit_rq;
	}

	qp->qpn = qp->vqp.qp.qp_num;
	/* The device enforces the kernel's max_inline; never promise more. */
	qp->max_inline = min_t(uint32_t, qp->max_inline, resp.max_inline);

	err = vrnic_qp_table_add(ctx, qp, "create_qp");
	if (err)
		goto err_destroy_qp;

	vrnic_qp_fill_cap(qp, &attr->cap);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		vrnic_qp_fill_wr_pfns(qp, attr);
		vrnic_qp_mark_ex(qp);
	}

	verbs_debug(&ctx->ibvctx,
		    "QP %u: type %d SQ %u x %uB RQ %u x %uB inline %u\n",
		    qp->qpn, attr->qp_type, 1U << s.sq_log_depth,
		    1U << s.sq_wqe_shift, attr->cap.max_recv_wr,
		    1U << s.rq_wqe_shift, qp->max_inline);
	return &qp->vqp.qp;

err_destroy_qp:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
	attr->cap = user_cap;
err_uninit_rq:
	vrnic_wq_uninit(&qp->rq);
err_uninit_sq:
	vrnic_wq_uninit(&qp->sq);
err_free_buf:
	vrnic_buf_free(&qp->buf);
err_free_qp:
	vrnic_parent_domain_put(ctx, qp->pdom);
	free(qp);
err_out:
	errno = err;
	return NULL;
}

struct ibv_qp *vrnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;

	qp = vrnic_create_qp_common(pd->context, &attr_ex);
	if (qp)
		memcpy(attr, &attr_ex, sizeof(*attr));
	return qp;
}

struct ibv_qp *vrnic_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	if (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)
		return vrnic_create_rss_qp(ibvctx, attr);
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return vrnic_create_xrc_recv_qp(ibvctx, attr);
	return vrnic_create_qp_common(ibvctx, attr);
}

/*
 * RESET discards every WQE without a completion, on the device and here:
 * both sides restart at index 0, and CQEs already written for the QP are
 * dropped from its CQs.
 */
static void vrnic_qp_reset(struct vrnic_qp *qp)
{
	vrnic_lock_cqs(&qp->vqp.qp);
	vrnic_qp_clean_cqs(qp);
	pthread_spin_lock(&qp->sq.lock);
	vrnic_store_idx(&qp->sq.pi, 0);
	vrnic_store_idx(&qp->sq.ci, 0);
	pthread_spin_unlock(&qp->sq.lock);
	if (vrnic_wq_exists(&qp->rq)) {
		pthread_spin_lock(&qp->rq.lock);
		vrnic_store_idx(&qp->rq.pi, 0);
		vrnic_store_idx(&qp->rq.ci, 0);
		pthread_spin_unlock(&qp->rq.lock);
	}
	vrnic_unlock_cqs(&qp->vqp.qp);
}

int vrnic_modify_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct vrnic_qp *qp = to_vrnic_qp(ibvqp);
	struct ibv_modify_qp cmd = {};
	int err;

	/* An RSS QP has no state of its own: its WQs have. */
	if (qp->rss)
		return EOPNOTSUPP;
	err = ibv_cmd_modify_qp(ibvqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err) {
		verbs_debug(verbs_get_ctx(ibvqp->context),
			    "QP %u: modify mask %#x refused: %d\n",
			    ibvqp->qp_num, attr_mask, err);
		return err;
	}

	/* An XRC target has no queues of its own to restart. */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET &&
	    vrnic_wq_exists(&qp->sq))
		vrnic_qp_reset(qp);
	return 0;
}

int vrnic_query_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct vrnic_qp *qp = to_vrnic_qp(ibvqp);
	struct ibv_query_qp cmd = {};
	int err;

	if (qp->rss)
		return EOPNOTSUPP;
	err = ibv_cmd_query_qp(ibvqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (err)
		return err;

	/*
	 * The rings, not the kernel's copy, define the capabilities; an XRC
	 * target has none, and the kernel's say so.
	 */
	if (vrnic_wq_exists(&qp->sq))
		vrnic_qp_fill_cap(qp, &attr->cap);
	init_attr->cap = attr->cap;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int vrnic_destroy_qp(struct ibv_qp *ibvqp)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvqp->context);
	struct vrnic_qp *qp = to_vrnic_qp(ibvqp);
	int err;

	/* The device stops all DMA to the rings before this returns. */
	err = ibv_cmd_destroy_qp(ibvqp);
	if (err)
		return err;
	/*
	 * An RSS QP or an XRC target: no rings, no CQs, not in qp_table. A
	 * target's CQEs are its XRC SRQs' and stay for them.
	 */
	if (!vrnic_wq_exists(&qp->sq)) {
		free(qp);
		return 0;
	}

	vrnic_lock_cqs(ibvqp);
	pthread_mutex_lock(&ctx->qp_table_mutex);
	ctx->qp_table[qp->qpn] = NULL;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	vrnic_qp_clean_cqs(qp);
	vrnic_unlock_cqs(ibvqp);

	vrnic_wq_uninit(&qp->rq);
	vrnic_wq_uninit(&qp->sq);
	vrnic_buf_free(&qp->buf);
	vrnic_parent_domain_put(ctx, qp->pdom);
	free(qp);
	return 0;
}

/* ---- post_send / post_recv ---------------------------------------------- */

/*
 * The WQE opcode of a WR, in tiers: a raw packet QP takes SEND only, UD
 * adds SEND_WITH_IMM, UC the writes and the window opcodes, RC the rest.
 */
static int vrnic_wr_opcode(const struct vrnic_qp *qp, enum ibv_wr_opcode op,
			   uint8_t *opcode)
{
	enum ibv_qp_type type = qp->vqp.qp.qp_type;

	if (op == IBV_WR_SEND) {
		*opcode = VRNIC_WQE_OP_SEND;
		return 0;
	}
	if (type == IBV_QPT_RAW_PACKET)
		return EINVAL;

	if (op == IBV_WR_SEND_WITH_IMM) {
		*opcode = VRNIC_WQE_OP_SEND_IMM;
		return 0;
	}
	if (type == IBV_QPT_UD)
		return EINVAL;

	switch (op) {
	case IBV_WR_RDMA_WRITE:
		*opcode = VRNIC_WQE_OP_RDMA_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*opcode = VRNIC_WQE_OP_RDMA_WRITE_IMM;
		return 0;
	case IBV_WR_BIND_MW:
		*opcode = VRNIC_WQE_OP_BIND_MW;
		return 0;
	case IBV_WR_LOCAL_INV:
		*opcode = VRNIC_WQE_OP_LOCAL_INV;
		return 0;
	default:
		break;
	}
	if (type == IBV_QPT_UC)
		return EINVAL;

	switch (op) {
	case IBV_WR_SEND_WITH_INV:
		*opcode = VRNIC_WQE_OP_SEND_INV;
		return 0;
	case IBV_WR_RDMA_READ:
		*opcode = VRNIC_WQE_OP_RDMA_READ;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*opcode = VRNIC_WQE_OP_ATOMIC_CMP_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*opcode = VRNIC_WQE_OP_ATOMIC_FETCH_ADD;
		return 0;
	default:
		return EINVAL;
	}
}

/* Everything that can be wrong with a WR, checked before it touches the ring. */
static int vrnic_post_send_validate(struct vrnic_qp *qp,
				    const struct ibv_send_wr *wr, uint32_t pi,
				    uint8_t *opcode)
{
	size_t len = 0;
	int err, i;

	err = vrnic_wr_opcode(qp, wr->opcode, opcode);
	if (err)
		return err;
	if (!check_comp_mask(wr->send_flags, VRNIC_SEND_FLAGS_SUPPORTED))
		return EINVAL;
	if (wr->num_sge < 0)
		return EINVAL;
	if (*opcode == VRNIC_WQE_OP_BIND_MW || *opcode == VRNIC_WQE_OP_LOCAL_INV) {
		/* No data: the WQE names keys only. */
		if (wr->send_flags & IBV_SEND_INLINE)
			return EINVAL;
		if (*opcode == VRNIC_WQE_OP_BIND_MW &&
		    (!wr->bind_mw.mw ||
		     vrnic_mw_access(wr->bind_mw.bind_info.mw_access_flags) < 0))
			return EINVAL;
		return vrnic_wq_full(&qp->sq, pi) ? ENOMEM : 0;
	}

	if (wr->send_flags & IBV_SEND_INLINE) {
		if (!vrnic_opcode_allows_inline(*opcode))
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > qp->max_inline)
			return EINVAL;
	} else if ((uint32_t)wr->num_sge > qp->sq.max_sge) {
		return EINVAL;
	}

	if (qp->vqp.qp.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND &&
	    (wr->qp_type.xrc.remote_srqn & ~VRNIC_XRC_SRQN_MASK))
		return EINVAL;
	if (vrnic_wq_full(&qp->sq, pi))
		return ENOMEM;
	return 0;
}

static void vrnic_build_send_wqe(struct vrnic_qp *qp,
				 const struct ibv_send_wr *wr, uint32_t pi,
				 uint8_t opcode)
{
	struct vrnic_send_wqe *wqe = vrnic_wq_entry(&qp->sq, pi);
	uint8_t *data = (uint8_t *)wqe + qp->sq_data_off;
	uint32_t len = 0;
	int i;

	memset(wqe, 0, qp->sq_data_off);
	wqe->wr_id = htole64(pi);
	wqe->opcode = opcode;
	wqe->flags = vrnic_wqe_flags(qp, wr->send_flags);

	switch (opcode) {
	case VRNIC_WQE_OP_SEND_IMM:
		memcpy(&wqe->imm_data, &wr->imm_data, sizeof(wqe->imm_data));
		break;
	case VRNIC_WQE_OP_SEND_INV:
		wqe->imm_data = htole32(wr->invalidate_rkey);
		break;
	case VRNIC_WQE_OP_LOCAL_INV:
		/* Keys only, no data (num_sge was not checked). */
		wqe->imm_data = htole32(wr->invalidate_rkey);
		qp->sq.wrid[vrnic_idx_slot(pi, qp->sq.log_depth)] = wr->wr_id;
		return;
	case VRNIC_WQE_OP_BIND_MW:
		/* Validated: cannot fail. */
		vrnic_fill_bind_wqe(wqe, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		qp->sq.wrid[vrnic_idx_slot(pi, qp->sq.log_depth)] = wr->wr_id;
		return;
	case VRNIC_WQE_OP_RDMA_WRITE_IMM:
		memcpy(&wqe->imm_data, &wr->imm_data, sizeof(wqe->imm_data));
		/* fall through */
	case VRNIC_WQE_OP_RDMA_WRITE:
	case VRNIC_WQE_OP_RDMA_READ:
		wqe->rkey = htole32(wr->wr.rdma.rkey);
		wqe->remote_addr = htole64(wr->wr.rdma.remote_addr);
		break;
	case VRNIC_WQE_OP_ATOMIC_CMP_SWP:
	case VRNIC_WQE_OP_ATOMIC_FETCH_ADD:
		/* The original value lands in the (8-byte) local SGE. */
		wqe->rkey = htole32(wr->wr.atomic.rkey);
		wqe->remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->swap = htole64(wr->wr.atomic.swap);
		break;
	default:
		break;
	}

	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		vrnic_set_ud_seg(wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
				 wr->wr.ud.remote_qkey);
	else if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND)
		wqe->xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn);

	if (wr->send_flags & IBV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(data + len,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		wqe->flags |= VRNIC_WQE_FLAG_INLINE;
		wqe->inline_len = htole32(len);
	} else {
		struct vrnic_sge *sge = (struct vrnic_sge *)data;

		for (i = 0; i < wr->num_sge; i++)
			vrnic_set_sge(&sge[i], wr->sg_list[i].addr,
				      wr->sg_list[i].length,
				      wr->sg_list[i].lkey);
		wqe->num_sge = wr->num_sge;
	}

	qp->sq.wrid[vrnic_idx_slot(pi, qp->sq.log_depth)] = wr->wr_id;
}

int vrnic_post_send(struct ibv_qp *ibvqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct vrnic_qp *qp = to_vrnic_qp(ibvqp);
	uint32_t pi;
	uint8_t opcode;
	int err = 0;

	/* An RSS QP and an XRC target have no SQ. */
	if (!vrnic_wq_exists(&qp->sq)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq.lock);
	pi = qp->sq.pi;
	if (!vrnic_qp_can_send(qp)) {
		err = EINVAL;
		*bad_wr = wr;
		goto out;
	}

	for (; wr; wr = wr->next) {
		err = vrnic_post_send_validate(qp, wr, pi, &opcode);
		if (err) {
			*bad_wr = wr;
			break;
		}
		vrnic_build_send_wqe(qp, wr, pi, opcode);
		pi++;
	}

	/* One doorbell for the whole list (or the good prefix of it). */
	if (pi != qp->sq.pi)
		vrnic_sq_kick(qp, pi);
out:
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void vrnic_build_recv_wqe(void *slot, const struct ibv_recv_wr *wr,
				 uint64_t tag)
{
	struct vrnic_recv_wqe *wqe = slot;
	struct vrnic_sge *sge = (struct vrnic_sge *)(wqe + 1);
	int i;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(tag);
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		vrnic_set_sge(&sge[i], wr->sg_list[i].addr,
			      wr->sg_list[i].length, wr->sg_list[i].lkey);
}

/*
 * Post receive WRs to qp's own RQ (a QP's, or a WQ's: rss.c); the caller
 * checked that the queue takes them in its state.
 */
int vrnic_rq_post(struct vrnic_context *ctx, struct vrnic_qp *qp,
		  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct vrnic_wq *rq = &qp->rq;
	uint32_t pi;
	int err = 0;

	pthread_spin_lock(&rq->lock);
	pi = rq->pi;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			err = EINVAL;
		} else if (vrnic_wq_full(rq, pi)) {
			err = ENOMEM;
		}
		if (err) {
			*bad_wr = wr;
			break;
		}
		vrnic_build_recv_wqe(vrnic_wq_entry(rq, pi), wr, pi);
		rq->wrid[vrnic_idx_slot(pi, rq->log_depth)] = wr->wr_id;
		pi++;
	}

	if (pi != rq->pi) {
		udma_to_device_barrier();
		vrnic_store_idx(&rq->pi, pi);
		vrnic_ring_db(ctx, VRNIC_DB_RQ, qp->qpn, pi);
	}
	pthread_spin_unlock(&rq->lock);
	return err;
}

int vrnic_post_recv(struct ibv_qp *ibvqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct vrnic_qp *qp = to_vrnic_qp(ibvqp);

	/*
	 * Receives of an SRQ-attached QP go to the SRQ, an RSS QP's to its
	 * WQs, an XRC target's to its XRC SRQs; an XRC initiator receives
	 * nothing; a QP in RESET takes none.
	 */
	if (!vrnic_wq_exists(&qp->rq) || ibvqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	return vrnic_rq_post(to_vrnic_context(ibvqp->context), qp, wr, bad_wr);
}

/* ---- shared receive queues ---------------------------------------------- */

/*
 * Ring positions vs pool slots: the device fetches SRQ WQEs in ring order
 * but they complete in any order (different QPs). With fewer than depth
 * WQEs outstanding (a free pool slot exists), at least one of the last
 * depth ring positions has completed, so every position up to it, and in
 * particular the one at pi - depth, has been fetched: the slot at pi is
 * free and pi stays within depth of the device.
 */
void vrnic_srq_put_slot(struct vrnic_srq *srq, uint32_t idx)
{
	pthread_spin_lock(&srq->lock);
	if (idx < (1U << srq->log_depth) && srq->busy[idx]) {
		srq->busy[idx] = 0;
		srq->free_list[srq->nfree++] = idx;
	}
	pthread_spin_unlock(&srq->lock);
}

static void vrnic_srq_free_mem(struct vrnic_srq *srq)
{
	free(srq->wrid);
	free(srq->busy);
	free(srq->free_list);
	vrnic_buf_free(&srq->buf);
}

/*
 * Enter an XRC SRQ under its number: its receive CQEs name only that
 * (and a target QP). Before the SRQ can own a WQE.
 */
static int vrnic_srq_table_add(struct vrnic_context *ctx,
			       struct vrnic_srq *srq)
{
	int err = 0;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (ctx->srq_table[srq->srqn])
		err = EPROTO;
	else
		ctx->srq_table[srq->srqn] = srq;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	if (err)
		verbs_err(&ctx->ibvctx, "create_srq: srqn %u already in use\n",
			  srq->srqn);
	return err;
}

/*
 * A basic SRQ, or an XRC SRQ (xrc; attr names its XRC domain and CQ): the
 * same ring and pool, created through ibv_cmd_create_srq_ex for both.
 */
static struct ibv_srq *vrnic_srq_create(struct vrnic_context *ctx,
					struct ibv_srq_init_attr_ex *attr,
					bool xrc)
{
	struct vrnic_ibv_create_srq_resp resp = {};
	struct vrnic_ibv_create_srq cmd = {};
	struct ibv_srq_attr user_attr = attr->attr;
	struct vrnic_srq *srq;
	uint32_t depth, i;
	int err;

	if (!attr->attr.max_wr || attr->attr.max_wr > ctx->max_srq_wr ||
	    attr->attr.max_sge > ctx->max_srq_sge ||
	    attr->attr.srq_limit > attr->attr.max_wr) {
		err = EINVAL;
		goto err_out;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		err = ENOMEM;
		goto err_out;
	}

	err = vrnic_wq_log_depth(attr->attr.max_wr, &srq->log_depth);
	if (!err)
		err = vrnic_recv_wqe_shift(ctx, attr->attr.max_sge,
					   &srq->wqe_shift, &srq->max_sge);
	if (err)
		goto err_free_srq;
	srq->max_sge = min_t(uint32_t, srq->max_sge, ctx->max_srq_sge);
	depth = 1U << srq->log_depth;

	srq->pdom = vrnic_parent_domain_get(ctx, attr->pd);
	err = vrnic_buf_alloc(ctx, &srq->buf, (size_t)depth << srq->wqe_shift,
			      srq->pdom, VRNIC_RES_TYPE_SRQ);
	if (err)
		goto err_free_srq;
	srq->ring = srq->buf.addr;
	srq->wrid = calloc(depth, sizeof(*srq->wrid));
	srq->busy = calloc(depth, sizeof(*srq->busy));
	srq->free_list = calloc(depth, sizeof(*srq->free_list));
	if (!srq->wrid || !srq->busy || !srq->free_list) {
		err = ENOMEM;
		goto err_free_mem;
	}
	/* Hand out slot 0 first. */
	for (i = 0; i < depth; i++)
		srq->free_list[i] = depth - 1 - i;
	srq->nfree = depth;

	cmd.buf_addr = (uintptr_t)srq->buf.addr;
	cmd.buf_len = srq->buf.len;
	cmd.log_depth = srq->log_depth;
	cmd.wqe_shift = srq->wqe_shift;

	/* As for QPs: the device learns the ring's real capacity. */
	attr->attr.max_wr = depth;
	attr->attr.max_sge = srq->max_sge;
	err = ibv_cmd_create_srq_ex(&ctx->ibvctx.context, &srq->vsrq, attr,
				    &cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				    sizeof(resp));
	if (err) {
		verbs_debug(&ctx->ibvctx, "create_srq: kernel refused: %d\n",
			    err);
		goto err_free_mem;
	}

	/*
	 * An XRC SRQ's number reaches the user twice, from the kernel
	 * (srq_num, the core's) and from the driver (srqn): they must agree.
	 */
	if (!resp.srqn || resp.srqn > VRNIC_DB_QN_MASK ||
	    (xrc && srq->vsrq.srq_num != resp.srqn)) {
		verbs_err(&ctx->ibvctx,
			  "create_srq: kernel returned srqn %u (srq_num %u)\n",
			  resp.srqn, srq->vsrq.srq_num);
		err = EPROTO;
		goto err_destroy;
	}
	srq->srqn = resp.srqn;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	if (xrc) {
		srq->xrc_cq = to_vrnic_cq(attr->cq);
		err = vrnic_srq_table_add(ctx, srq);
		if (err)
			goto err_destroy_lock;
	}

	/*
	 * ibv_create_srq() fills these itself; ibv_create_srq_ex() calls
	 * create_srq_ex directly, and nothing else would.
	 */
	srq->vsrq.srq.pd = attr->pd;
	srq->vsrq.srq.srq_context = attr->srq_context;
	attr->attr.max_wr = depth;
	attr->attr.max_sge = srq->max_sge;
	return &srq->vsrq.srq;

err_destroy_lock:
	pthread_spin_destroy(&srq->lock);
err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free_mem:
	attr->attr = user_attr;
	vrnic_srq_free_mem(srq);
err_free_srq:
	vrnic_parent_domain_put(ctx, srq->pdom);
	free(srq);
err_out:
	errno = err;
	return NULL;
}

struct ibv_srq *vrnic_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_srq *srq;

	srq = vrnic_srq_create(to_vrnic_context(pd->context), &attr_ex, false);
	if (srq)
		attr->attr = attr_ex.attr;
	return srq;
}

/*
 * ibv_create_srq_ex(): basic SRQs as create_srq, XRC SRQs (an XRC domain
 * and a CQ, which takes their receives). The device has no tag matching.
 */
struct ibv_srq *vrnic_create_srq_ex(struct ibv_context *ibvctx,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	const uint32_t supported = IBV_SRQ_INIT_ATTR_TYPE |
				   IBV_SRQ_INIT_ATTR_PD |
				   IBV_SRQ_INIT_ATTR_XRCD |
				   IBV_SRQ_INIT_ATTR_CQ;
	enum ibv_srq_type type = IBV_SRQT_BASIC;

	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	if (!check_comp_mask(attr->comp_mask, supported) ||
	    (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC)) {
		verbs_debug(&ctx->ibvctx,
			    "create_srq_ex: comp_mask %#x type %d not supported\n",
			    attr->comp_mask, type);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    (type == IBV_SRQT_XRC &&
	     (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	      !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq))) {
		errno = EINVAL;
		return NULL;
	}
	return vrnic_srq_create(ctx, attr, type == IBV_SRQT_XRC);
}

int vrnic_modify_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	/* The device cannot resize an SRQ (no IBV_DEVICE_SRQ_RESIZE). */
	if (attr_mask & IBV_SRQ_MAX_WR)
		return EINVAL;

	return ibv_cmd_modify_srq(ibvsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int vrnic_query_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr)
{
	struct vrnic_srq *srq = to_vrnic_srq(ibvsrq);
	struct ibv_query_srq cmd = {};
	int err;

	err = ibv_cmd_query_srq(ibvsrq, attr, &cmd, sizeof(cmd));
	if (err)
		return err;

	attr->max_wr = 1U << srq->log_depth;
	attr->max_sge = srq->max_sge;
	return 0;
}

int vrnic_destroy_srq(struct ibv_srq *ibvsrq)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvsrq->context);
	struct vrnic_srq *srq = to_vrnic_srq(ibvsrq);
	int err;

	/* BAD_STATE (EBUSY) while QPs still use it; the device keeps DMA off. */
	err = ibv_cmd_destroy_srq(ibvsrq);
	if (err)
		return err;

	/*
	 * Target QPs outlive an XRC SRQ: its unread CQEs go now, under its
	 * CQ's lock, so that no poller finds a freed SRQ through them.
	 */
	if (srq->xrc_cq) {
		pthread_spin_lock(&srq->xrc_cq->lock);
		pthread_mutex_lock(&ctx->qp_table_mutex);
		ctx->srq_table[srq->srqn] = NULL;
		pthread_mutex_unlock(&ctx->qp_table_mutex);
		vrnic_cq_clean_xrc_srq(srq->xrc_cq, srq->srqn);
		pthread_spin_unlock(&srq->xrc_cq->lock);
	}
	pthread_spin_destroy(&srq->lock);
	vrnic_srq_free_mem(srq);
	vrnic_parent_domain_put(ctx, srq->pdom);
	free(srq);
	return 0;
}

int vrnic_post_srq_recv(struct ibv_srq *ibvsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvsrq->context);
	struct vrnic_srq *srq = to_vrnic_srq(ibvsrq);
	uint32_t pi, idx;
	void *slot;
	int err = 0;

	pthread_spin_lock(&srq->lock);
	pi = srq->pi;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge)
			err = EINVAL;
		else if (!srq->nfree)
			err = ENOMEM;
		if (err) {
			*bad_wr = wr;
			break;
		}
		idx = srq->free_list[--srq->nfree];
		srq->busy[idx] = 1;
		srq->wrid[idx] = wr->wr_id;
		slot = (uint8_t *)srq->ring +
		       ((size_t)vrnic_idx_slot(pi, srq->log_depth) <<
			srq->wqe_shift);
		vrnic_build_recv_wqe(slot, wr, idx);
		pi++;
	}

	if (pi != srq->pi) {
		udma_to_device_barrier();
		srq->pi = pi;
		vrnic_ring_db(ctx, VRNIC_DB_SRQ, srq->srqn, pi);
	}
	pthread_spin_unlock(&srq->lock);
	return err;
}
