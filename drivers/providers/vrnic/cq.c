// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic completion queues: create/resize/destroy through the kernel,
 * poll and arm without a syscall.
 *
 * Ring (vrnic_hw_defs.h CREATE_CQ): 2^log_depth 32-byte vrnic_cqe (64-byte
 * vrnic_cqe_ts, which add the device clock, in a CQ created for completion
 * timestamps), then the 64-byte vrnic_cq_dbrec, in one page-aligned buffer
 * of ours that the
 * kernel pins. The device writes a CQE body and its info word (phase bit)
 * last; the phase is 1 on the first pass and flips on every wrap, i.e. a
 * CQE at free-running index i is valid when its phase equals
 * !((i >> log_depth) & 1). We write our free-running ci to dbrec.ci after
 * polling so that the device can tell a full CQ from an empty one.
 *
 * A CQE names its QP (qpn) and carries back the wr_id field of the WQE. We
 * put our own index there, not the user's wr_id (qp.c): the SQ/RQ ring
 * position, which also tells how far the queue has been consumed (SQ and
 * RQ complete in order, and an unsignaled send completes silently with the
 * next signaled one), or for an SRQ the slot of its wr_id pool. The
 * receive CQE of an XRC SRQ (VRNIC_CQE_FLAG_XRC) names the SRQ in src_qp,
 * and in qpn an XRC target QP that this process may not know: the SRQ
 * alone owns the WQE.
 *
 * Locking (STYLE 3.4, as efa): poll_cq takes cq->lock for the whole batch;
 * start_poll takes it and releases it only if it fails; next_poll never
 * releases it; end_poll releases it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ccan/minmax.h>
#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"
#include "vrnic.h"

#define VRNIC_WC_EX_FLAGS IBV_WC_STANDARD_FLAGS
/* Either asks for the device clock in every CQE (VRNIC_CQ_FLAG_TIMESTAMP). */
#define VRNIC_WC_EX_TS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
			IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static inline uint32_t vrnic_cq_depth(const struct vrnic_cq *cq)
{
	return 1U << cq->log_depth;
}

static inline struct vrnic_cqe *vrnic_cq_entry(struct vrnic_cq *cq,
					       uint32_t idx)
{
	return (struct vrnic_cqe *)((uint8_t *)cq->ring +
				    ((size_t)vrnic_idx_slot(idx, cq->log_depth) <<
				     cq->cqe_shift));
}

/* Phase check only; the caller orders the rest with a read barrier. */
static inline bool vrnic_cqe_valid(struct vrnic_cq *cq, uint32_t idx)
{
	const struct vrnic_cqe *cqe = vrnic_cq_entry(cq, idx);
	uint32_t info = le32toh(*(const volatile __le32 *)&cqe->info);

	return FIELD_GET(VRNIC_CQE_INFO_PHASE, info) ==
	       vrnic_idx_phase(idx, cq->log_depth);
}

/*
 * Publish ci in the doorbell record. The CQEs up to ci were copied out
 * before this store (udma_to_device_barrier orders them, as mlx5 does
 * before its CQ doorbell record), so the device may reuse their slots.
 */
static void vrnic_cq_publish_ci(struct vrnic_cq *cq)
{
	if (!cq->ci_dirty)
		return;
	udma_to_device_barrier();
	*(volatile __le32 *)&cq->dbrec->ci = htole32(cq->ci);
	cq->ci_dirty = false;
}

/* The hardware's values are libibverbs' (uapi "CQE decoding"). */
static_assert((int)VRNIC_CQE_OP_SEND == (int)IBV_WC_SEND, "");
static_assert((int)VRNIC_CQE_OP_RDMA_WRITE == (int)IBV_WC_RDMA_WRITE, "");
static_assert((int)VRNIC_CQE_OP_RDMA_READ == (int)IBV_WC_RDMA_READ, "");
static_assert((int)VRNIC_CQE_OP_COMP_SWAP == (int)IBV_WC_COMP_SWAP, "");
static_assert((int)VRNIC_CQE_OP_FETCH_ADD == (int)IBV_WC_FETCH_ADD, "");
static_assert((int)VRNIC_CQE_OP_BIND_MW == (int)IBV_WC_BIND_MW, "");
static_assert((int)VRNIC_CQE_OP_LOCAL_INV == (int)IBV_WC_LOCAL_INV, "");
static_assert((int)VRNIC_CQE_OP_FLUSH == (int)IBV_WC_FLUSH, "");
static_assert((int)VRNIC_CQE_OP_ATOMIC_WRITE == (int)IBV_WC_ATOMIC_WRITE, "");
static_assert((int)VRNIC_CQE_OP_RECV == (int)IBV_WC_RECV, "");
static_assert((int)VRNIC_CQE_OP_RECV_RDMA_WITH_IMM ==
	      (int)IBV_WC_RECV_RDMA_WITH_IMM, "");
static_assert((int)VRNIC_WC_SUCCESS == (int)IBV_WC_SUCCESS, "");
static_assert((int)VRNIC_WC_LOC_LEN_ERR == (int)IBV_WC_LOC_LEN_ERR, "");
static_assert((int)VRNIC_WC_LOC_QP_OP_ERR == (int)IBV_WC_LOC_QP_OP_ERR, "");
static_assert((int)VRNIC_WC_LOC_PROT_ERR == (int)IBV_WC_LOC_PROT_ERR, "");
static_assert((int)VRNIC_WC_WR_FLUSH_ERR == (int)IBV_WC_WR_FLUSH_ERR, "");
static_assert((int)VRNIC_WC_MW_BIND_ERR == (int)IBV_WC_MW_BIND_ERR, "");
static_assert((int)VRNIC_WC_BAD_RESP_ERR == (int)IBV_WC_BAD_RESP_ERR, "");
static_assert((int)VRNIC_WC_LOC_ACCESS_ERR == (int)IBV_WC_LOC_ACCESS_ERR, "");
static_assert((int)VRNIC_WC_REM_INV_REQ_ERR == (int)IBV_WC_REM_INV_REQ_ERR, "");
static_assert((int)VRNIC_WC_REM_ACCESS_ERR == (int)IBV_WC_REM_ACCESS_ERR, "");
static_assert((int)VRNIC_WC_REM_OP_ERR == (int)IBV_WC_REM_OP_ERR, "");
static_assert((int)VRNIC_WC_RETRY_EXC_ERR == (int)IBV_WC_RETRY_EXC_ERR, "");
static_assert((int)VRNIC_WC_RNR_RETRY_EXC_ERR ==
	      (int)IBV_WC_RNR_RETRY_EXC_ERR, "");
static_assert((int)VRNIC_WC_FATAL_ERR == (int)IBV_WC_FATAL_ERR, "");
static_assert((int)VRNIC_WC_GENERAL_ERR == (int)IBV_WC_GENERAL_ERR, "");

static enum ibv_wc_opcode vrnic_to_ibv_wc_opcode(uint8_t opcode)
{
	uint8_t op = vrnic_cqe_wc_opcode(opcode);

	/*
	 * REG_MR is the kernel's only: a user QP's REG_MR WQE fails, and its
	 * error completion is the send queue's generic one.
	 */
	return op == VRNIC_CQE_OP_REG_MR ? IBV_WC_SEND : (enum ibv_wc_opcode)op;
}

/*
 * The sender's QP of a UD receive. An XRC SRQ's CQE carries the srqn
 * there, which is no QP: verbs gets 0 as for the other connected types.
 */
static uint32_t vrnic_cqe_src_qp(const struct vrnic_cqe *cqe)
{
	if (cqe->flags & VRNIC_CQE_FLAG_XRC)
		return 0;
	return le32toh(cqe->src_qp);
}

static unsigned int vrnic_cqe_wc_flags(const struct vrnic_cqe *cqe)
{
	unsigned int flags = 0;

	if (cqe->flags & VRNIC_CQE_FLAG_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (cqe->flags & VRNIC_CQE_FLAG_INV)
		flags |= IBV_WC_WITH_INV;
	if (cqe->flags & VRNIC_CQE_FLAG_GRH)
		flags |= IBV_WC_GRH;
	return flags;
}

/*
 * ConnectX's encoding of a RoCE UD receive's network header in the sl of
 * its completion: bits 2:0 the L3 header (1 IPv6, 2 IPv4), bit 3 a UDP
 * header (RoCEv2).
 */
#define VRNIC_WC_SL_ROCE_UDP	0x8
#define VRNIC_WC_SL_ROCE_IPV6	0x1
#define VRNIC_WC_SL_ROCE_IPV4	0x2

/*
 * The sl of a completion. RoCE has no service level, and ibv_wc has no
 * field for the network header type that IBTA Annex A17 (A17.4.5.1) puts
 * in a UD receive's completion: ConnectX reports it in sl, and UCX's UD
 * transport (1.13, Debian 12's) reads it there to find the destination
 * address in the 40-byte GRH area. With 0 it reads an IPv4 datagram's
 * header as IPv6, finds no address of its own and drops every datagram
 * (UD wireup times out). So UD receives carry it the same way.
 */
static uint8_t vrnic_cqe_sl(const struct vrnic_cqe *cqe)
{
	if (!(cqe->flags & VRNIC_CQE_FLAG_GRH))
		return 0;
	switch (cqe->network_hdr_type) {
	case VRNIC_NET_TYPE_IPV4:
		return VRNIC_WC_SL_ROCE_UDP | VRNIC_WC_SL_ROCE_IPV4;
	case VRNIC_NET_TYPE_IPV6:
		return VRNIC_WC_SL_ROCE_UDP | VRNIC_WC_SL_ROCE_IPV6;
	default:
		return 0;
	}
}

/*
 * Work queue completion: idx must name a WQE in [ci, pi), else the device
 * (or a stale CQE) is lying and nothing is consumed.
 */
static int vrnic_wq_complete(struct vrnic_wq *wq, uint32_t idx,
			     uint64_t *wr_id)
{
	uint32_t pi = vrnic_load_idx(&wq->pi);
	uint32_t ci = wq->ci;

	if (idx - ci >= pi - ci)
		return EINVAL;

	*wr_id = wq->wrid[vrnic_idx_slot(idx, wq->log_depth)];
	/* Everything up to idx is done, signaled or not. */
	vrnic_store_idx(&wq->ci, idx + 1);
	return 0;
}

static int vrnic_srq_complete(struct vrnic_srq *srq, uint32_t idx,
			      uint64_t *wr_id)
{
	int err = 0;

	pthread_spin_lock(&srq->lock);
	if (idx >= (1U << srq->log_depth) || !srq->busy[idx]) {
		err = EINVAL;
	} else {
		*wr_id = srq->wrid[idx];
		srq->busy[idx] = 0;
		srq->free_list[srq->nfree++] = idx;
	}
	pthread_spin_unlock(&srq->lock);
	return err;
}

/*
 * Retire the WQE a CQE completes and find its user's wr_id (uapi "CQE
 * decoding": the queue from the opcode, the slot from wr_id). An XRC
 * receive is found by its SRQ, never by its QP. EINVAL: the CQE names no
 * queue of ours or no outstanding WQE.
 */
static int vrnic_cqe_retire(struct vrnic_context *ctx, struct vrnic_cq *cq,
			    const struct vrnic_cqe *cqe, uint64_t *wr_id)
{
	uint32_t qpn = le32toh(cqe->qpn), srqn = le32toh(cqe->src_qp);
	uint32_t idx = le64toh(cqe->wr_id) & VRNIC_CQE_WR_ID_SLOT_MASK;
	bool recv = vrnic_cqe_is_recv(cqe->opcode);
	struct vrnic_srq *srq = NULL;
	struct vrnic_qp *qp = NULL;
	int err;

	if (cqe->flags & VRNIC_CQE_FLAG_XRC) {
		if (srqn < VRNIC_SRQ_TABLE_SIZE)
			srq = ctx->srq_table[srqn];
		if (!srq) {
			verbs_err(&ctx->ibvctx,
				  "CQ %u: XRC CQE (QP %u) for unknown SRQ %u\n",
				  cq->cqn, qpn, srqn);
			return EINVAL;
		}
		err = recv ? vrnic_srq_complete(srq, idx, wr_id) : EINVAL;
	} else {
		if (qpn < VRNIC_QP_TABLE_SIZE)
			qp = ctx->qp_table[qpn];
		if (!qp) {
			verbs_err(&ctx->ibvctx,
				  "CQ %u: CQE for unknown QP %u\n", cq->cqn,
				  qpn);
			return EINVAL;
		}
		if (!recv)
			err = vrnic_wq_complete(&qp->sq, idx, wr_id);
		else if (qp->srq)
			err = vrnic_srq_complete(qp->srq, idx, wr_id);
		else
			err = vrnic_wq_complete(&qp->rq, idx, wr_id);
	}
	if (err)
		verbs_err(&ctx->ibvctx,
			  "CQ %u: QP %u CQE opcode %#x flags %#x names no outstanding WQE (%u)\n",
			  cq->cqn, qpn, cqe->opcode, cqe->flags, idx);
	return err;
}

/*
 * Take the next CQE that completes a WQE of ours, if any: check the phase,
 * barrier, copy it out, consume it and find the WQE it completes. A CQE
 * that names no queue of ours or no outstanding WQE is consumed (so the CQ
 * cannot wedge) and dropped, as uapi "CQE decoding" says; at most a ring's
 * worth of them per call. Called with cq->lock held.
 */
static int vrnic_poll_one(struct vrnic_cq *cq, struct vrnic_cqe *out,
			  uint64_t *wr_id, enum ibv_wc_status *status)
{
	struct vrnic_context *ctx = to_vrnic_context(cq->vcq.cq.context);
	uint32_t start = cq->ci;

	while (cq->ci - start < vrnic_cq_depth(cq)) {
		if (!vrnic_cqe_valid(cq, cq->ci))
			return ENOENT;
		/* The phase said valid: only now read the rest of the CQE. */
		udma_from_device_barrier();
		memcpy(out, vrnic_cq_entry(cq, cq->ci), sizeof(*out));
		if (cq->flags & VRNIC_CQ_FLAG_TIMESTAMP)
			cq->cur_ts = le64toh(((struct vrnic_cqe_ts *)
					      vrnic_cq_entry(cq, cq->ci))->timestamp);
		cq->ci++;
		cq->ci_dirty = true;

		if (!vrnic_cqe_retire(ctx, cq, out, wr_id)) {
			*status = (enum ibv_wc_status)
				  vrnic_cqe_wc_status(out->status);
			return 0;
		}
	}
	return ENOENT;
}

static void vrnic_fill_wc(const struct vrnic_cqe *cqe, uint64_t wr_id,
			  enum ibv_wc_status status, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = status;
	wc->opcode = vrnic_to_ibv_wc_opcode(cqe->opcode);
	wc->vendor_err = FIELD_GET(VRNIC_CQE_INFO_VENDOR_ERR_MASK,
				   le32toh(cqe->info));
	wc->qp_num = le32toh(cqe->qpn);
	if (status != IBV_WC_SUCCESS)
		return;

	wc->byte_len = le32toh(cqe->byte_len);
	wc->wc_flags = vrnic_cqe_wc_flags(cqe);
	if (cqe->flags & VRNIC_CQE_FLAG_IMM)
		/* Network order in the CQE, network order in ibv_wc. */
		memcpy(&wc->imm_data, &cqe->imm_data, sizeof(wc->imm_data));
	else if (cqe->flags & VRNIC_CQE_FLAG_INV)
		wc->invalidated_rkey = le32toh(cqe->imm_data);
	wc->src_qp = vrnic_cqe_src_qp(cqe);
	wc->sl = vrnic_cqe_sl(cqe);
}

int vrnic_poll_cq(struct ibv_cq *ibvcq, int nwc, struct ibv_wc *wc)
{
	struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
	enum ibv_wc_status status;
	struct vrnic_cqe cqe;
	uint64_t wr_id;
	int i;

	pthread_spin_lock(&cq->lock);
	for (i = 0; i < nwc; i++) {
		if (vrnic_poll_one(cq, &cqe, &wr_id, &status))
			break;
		vrnic_fill_wc(&cqe, wr_id, status, &wc[i]);
	}
	vrnic_cq_publish_ci(cq);
	pthread_spin_unlock(&cq->lock);

	return i;
}

/* ---- extended poll API (ibv_create_cq_ex) --------------------------------- */

static int vrnic_start_poll(struct ibv_cq_ex *ibvcqx,
			    struct ibv_poll_cq_attr *attr)
{
	struct vrnic_cq *cq = to_vrnic_cq_ex(ibvcqx);
	enum ibv_wc_status status;
	int err;

	if (unlikely(attr->comp_mask))
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	err = vrnic_poll_one(cq, &cq->cur, &ibvcqx->wr_id, &status);
	if (err) {
		/* No end_poll follows: publish the CQEs dropped on the way. */
		vrnic_cq_publish_ci(cq);
		pthread_spin_unlock(&cq->lock);
		return err;
	}
	ibvcqx->status = status;
	return 0;
}

static int vrnic_next_poll(struct ibv_cq_ex *ibvcqx)
{
	struct vrnic_cq *cq = to_vrnic_cq_ex(ibvcqx);
	enum ibv_wc_status status;
	int err;

	err = vrnic_poll_one(cq, &cq->cur, &ibvcqx->wr_id, &status);
	if (err)
		return err;
	ibvcqx->status = status;
	return 0;
}

static void vrnic_end_poll(struct ibv_cq_ex *ibvcqx)
{
	struct vrnic_cq *cq = to_vrnic_cq_ex(ibvcqx);

	vrnic_cq_publish_ci(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode vrnic_wc_read_opcode(struct ibv_cq_ex *ibvcqx)
{
	return vrnic_to_ibv_wc_opcode(to_vrnic_cq_ex(ibvcqx)->cur.opcode);
}

static uint32_t vrnic_wc_read_vendor_err(struct ibv_cq_ex *ibvcqx)
{
	return FIELD_GET(VRNIC_CQE_INFO_VENDOR_ERR_MASK,
			 le32toh(to_vrnic_cq_ex(ibvcqx)->cur.info));
}

static unsigned int vrnic_wc_read_wc_flags(struct ibv_cq_ex *ibvcqx)
{
	return vrnic_cqe_wc_flags(&to_vrnic_cq_ex(ibvcqx)->cur);
}

static uint32_t vrnic_wc_read_byte_len(struct ibv_cq_ex *ibvcqx)
{
	return le32toh(to_vrnic_cq_ex(ibvcqx)->cur.byte_len);
}

/*
 * IMM: network order as received. INV: ibv_wc_read_invalidated_rkey()
 * applies be32toh to what we return, so hand back the rkey big-endian.
 */
static __be32 vrnic_wc_read_imm_data(struct ibv_cq_ex *ibvcqx)
{
	const struct vrnic_cqe *cqe = &to_vrnic_cq_ex(ibvcqx)->cur;
	__be32 imm;

	if (cqe->flags & VRNIC_CQE_FLAG_INV)
		return htobe32(le32toh(cqe->imm_data));
	memcpy(&imm, &cqe->imm_data, sizeof(imm));
	return imm;
}

static uint32_t vrnic_wc_read_qp_num(struct ibv_cq_ex *ibvcqx)
{
	return le32toh(to_vrnic_cq_ex(ibvcqx)->cur.qpn);
}

static uint32_t vrnic_wc_read_src_qp(struct ibv_cq_ex *ibvcqx)
{
	return vrnic_cqe_src_qp(&to_vrnic_cq_ex(ibvcqx)->cur);
}

/* RoCE: no LIDs. */
static uint32_t vrnic_wc_read_slid(struct ibv_cq_ex *ibvcqx)
{
	return 0;
}

static uint8_t vrnic_wc_read_sl(struct ibv_cq_ex *ibvcqx)
{
	return vrnic_cqe_sl(&to_vrnic_cq_ex(ibvcqx)->cur);
}

static uint8_t vrnic_wc_read_dlid_path_bits(struct ibv_cq_ex *ibvcqx)
{
	return 0;
}

/*
 * The device clock counts nanoseconds of real time (VRNIC_CLOCK_PAGE): the
 * raw timestamp (hca_core_clock 1 GHz) and the wall clock are one value.
 */
static uint64_t vrnic_wc_read_completion_ts(struct ibv_cq_ex *ibvcqx)
{
	return to_vrnic_cq_ex(ibvcqx)->cur_ts;
}

/* Install only the readers the user asked for (efa_cq_fill_pfns). */
static void vrnic_cq_fill_pfns(struct vrnic_cq *cq,
			       const struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *ibvcqx = &cq->vcq.cq_ex;

	ibvcqx->start_poll = vrnic_start_poll;
	ibvcqx->next_poll = vrnic_next_poll;
	ibvcqx->end_poll = vrnic_end_poll;

	ibvcqx->read_opcode = vrnic_wc_read_opcode;
	ibvcqx->read_vendor_err = vrnic_wc_read_vendor_err;
	ibvcqx->read_wc_flags = vrnic_wc_read_wc_flags;

	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ibvcqx->read_byte_len = vrnic_wc_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		ibvcqx->read_imm_data = vrnic_wc_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ibvcqx->read_qp_num = vrnic_wc_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ibvcqx->read_src_qp = vrnic_wc_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		ibvcqx->read_slid = vrnic_wc_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		ibvcqx->read_sl = vrnic_wc_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ibvcqx->read_dlid_path_bits = vrnic_wc_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		ibvcqx->read_completion_ts = vrnic_wc_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		ibvcqx->read_completion_wallclock_ns =
			vrnic_wc_read_completion_ts;
}

/* ---- control path ------------------------------------------------------- */

/*
 * The CQ holds 2^log_depth CQEs, all usable (the phase bit tells full from
 * empty): the smallest power of two >= cqe, at least 2 (log_depth >= 1).
 */
static int vrnic_cq_log_depth(struct vrnic_context *ctx, int ncqe,
			      uint32_t *log_depth)
{
	if (ncqe < 1 || (uint32_t)ncqe > ctx->max_cqe)
		return EINVAL;
	*log_depth = max_t(uint32_t, 1, vrnic_order(ncqe));
	return 0;
}

static void vrnic_cq_set_buf(struct vrnic_cq *cq, struct vrnic_buf *buf,
			     uint32_t log_depth)
{
	cq->buf = *buf;
	cq->log_depth = log_depth;
	cq->cqe_shift = vrnic_cqe_shift(cq->flags);
	cq->ring = buf->addr;
	cq->dbrec = (struct vrnic_cq_dbrec *)((uint8_t *)buf->addr +
					      vrnic_cq_ring_len(cq->flags,
							       log_depth) -
					      VRNIC_DBREC_SIZE);
	cq->ci = 0;
	cq->ci_dirty = false;
	cq->vcq.cq.cqe = 1 << log_depth;
}

static struct vrnic_cq *vrnic_create_cq_common(struct ibv_context *ibvctx,
					       struct ibv_cq_init_attr_ex *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	struct vrnic_ibv_create_cq_resp resp = {};
	struct vrnic_ibv_create_cq cmd = {};
	struct vrnic_parent_domain *pdom = NULL;
	struct vrnic_buf buf = {};
	struct vrnic_cq *cq;
	uint32_t log_depth;
	int err;

	if (!check_comp_mask(attr->comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS |
						  IBV_CQ_INIT_ATTR_MASK_PD) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     !check_comp_mask(attr->flags, IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    !check_comp_mask(attr->wc_flags, VRNIC_WC_EX_FLAGS |
			     (ctx->clock ? VRNIC_WC_EX_TS : 0))) {
		verbs_debug(&ctx->ibvctx,
			    "create_cq: comp_mask %#x flags %#x wc_flags %#llx not supported\n",
			    attr->comp_mask, attr->flags,
			    (unsigned long long)attr->wc_flags);
		err = EOPNOTSUPP;
		goto err_out;
	}

	err = vrnic_cq_log_depth(ctx, attr->cqe, &log_depth);
	if (err) {
		verbs_debug(&ctx->ibvctx, "create_cq: cqe %u (max %u)\n",
			    attr->cqe, ctx->max_cqe);
		goto err_out;
	}

	/*
	 * The CQ has no PD on the device; a parent domain only supplies the
	 * ring's allocator. It must be one, as mlx5_create_cq() requires.
	 */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		pdom = vrnic_parent_domain_get(ctx, attr->parent_domain);
		if (!pdom) {
			verbs_err(&ctx->ibvctx,
				  "create_cq: IBV_CQ_INIT_ATTR_MASK_PD without a parent domain of this context\n");
			err = EINVAL;
			goto err_out;
		}
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		err = ENOMEM;
		goto err_put_pdom;
	}
	cq->pdom = pdom;
	if (attr->wc_flags & VRNIC_WC_EX_TS)
		cq->flags = VRNIC_CQ_FLAG_TIMESTAMP;

	err = vrnic_buf_alloc(ctx, &buf, vrnic_cq_ring_len(cq->flags, log_depth),
			      pdom, VRNIC_RES_TYPE_CQ);
	if (err)
		goto err_free_cq;

	cmd.buf_addr = (uintptr_t)buf.addr;
	cmd.buf_len = buf.len;
	cmd.log_depth = log_depth;
	cmd.flags = cq->flags;
	err = ibv_cmd_create_cq_ex(ibvctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp), 0);
	if (err) {
		verbs_debug(&ctx->ibvctx, "create_cq: kernel refused: %d\n",
			    err);
		goto err_free_buf;
	}

	if (!resp.cqn || resp.cqn > VRNIC_DB_QN_MASK) {
		verbs_err(&ctx->ibvctx, "create_cq: kernel returned cqn %u\n",
			  resp.cqn);
		err = EPROTO;
		goto err_destroy_cq;
	}

	cq->cqn = resp.cqn;
	vrnic_cq_set_buf(cq, &buf, log_depth);
	vrnic_cq_fill_pfns(cq, attr);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	verbs_debug(&ctx->ibvctx, "CQ %u: %u CQEs\n", cq->cqn,
		    1U << log_depth);
	return cq;

err_destroy_cq:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free_buf:
	vrnic_buf_free(&buf);
err_free_cq:
	free(cq);
err_put_pdom:
	vrnic_parent_domain_put(ctx, pdom);
err_out:
	errno = err;
	return NULL;
}

struct ibv_cq *vrnic_create_cq(struct ibv_context *ibvctx, int ncqe,
			       struct ibv_comp_channel *channel, int vec)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = ncqe,
		.channel = channel,
		.comp_vector = vec,
	};
	struct vrnic_cq *cq;

	/* ncqe is an int: catch negative values before they become huge. */
	if (ncqe < 1) {
		errno = EINVAL;
		return NULL;
	}

	cq = vrnic_create_cq_common(ibvctx, &attr);
	return cq ? &cq->vcq.cq : NULL;
}

struct ibv_cq_ex *vrnic_create_cq_ex(struct ibv_context *ibvctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct vrnic_cq *cq;

	cq = vrnic_create_cq_common(ibvctx, attr);
	return cq ? &cq->vcq.cq_ex : NULL;
}

int vrnic_destroy_cq(struct ibv_cq *ibvcq)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvcq->context);
	struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
	int err;

	/* The device stops all DMA to the ring before this returns. */
	err = ibv_cmd_destroy_cq(ibvcq);
	if (err)
		return err;

	pthread_spin_destroy(&cq->lock);
	vrnic_buf_free(&cq->buf);
	vrnic_parent_domain_put(ctx, cq->pdom);
	free(cq);
	return 0;
}

/* Event moderation is the device's (MODIFY_CQ): the kernel forwards it. */
int vrnic_modify_cq(struct ibv_cq *ibvcq, struct ibv_modify_cq_attr *attr)
{
	struct ibv_modify_cq cmd = {};

	return ibv_cmd_modify_cq(ibvcq, attr, &cmd, sizeof(cmd));
}

/*
 * RESIZE_CQ copies the CQEs between dbrec.ci and the producer to the start
 * of the new ring (new phase) and the consumer continues at ci 0, so the
 * CQ lock is held across the command (as mlx5 does): no poll may run
 * between publishing ci and switching rings.
 */
int vrnic_resize_cq(struct ibv_cq *ibvcq, int ncqe)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvcq->context);
	struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
	struct ib_uverbs_resize_cq_resp resp = {};
	struct vrnic_ibv_resize_cq cmd = {};
	struct vrnic_buf buf = {}, old;
	uint32_t log_depth;
	int err;

	err = vrnic_cq_log_depth(ctx, ncqe, &log_depth);
	if (err)
		return err;

	pthread_spin_lock(&cq->lock);
	if (log_depth == cq->log_depth) {
		pthread_spin_unlock(&cq->lock);
		return 0;
	}

	err = vrnic_buf_alloc(ctx, &buf, vrnic_cq_ring_len(cq->flags, log_depth),
			      cq->pdom, VRNIC_RES_TYPE_CQ);
	if (err)
		goto out_unlock;

	vrnic_cq_publish_ci(cq);
	cmd.buf_addr = (uintptr_t)buf.addr;
	cmd.buf_len = buf.len;
	cmd.log_depth = log_depth;
	err = ibv_cmd_resize_cq(ibvcq, ncqe, &cmd.ibv_cmd, sizeof(cmd), &resp,
				sizeof(resp));
	if (err) {
		verbs_debug(&ctx->ibvctx, "CQ %u: resize to %d refused: %d\n",
			    cq->cqn, ncqe, err);
		vrnic_buf_free(&buf);
		goto out_unlock;
	}

	/* The kernel unpinned the old ring: the device is done with it. */
	old = cq->buf;
	vrnic_cq_set_buf(cq, &buf, log_depth);
	vrnic_buf_free(&old);

out_unlock:
	pthread_spin_unlock(&cq->lock);
	return err;
}

/*
 * Arm with the consumer index: the device fires at once if CQEs past ci
 * are already written, so nothing is missed between our last poll and the
 * arm. No syscall; ci was published by the poll that advanced it.
 */
int vrnic_req_notify_cq(struct ibv_cq *ibvcq, int solicited_only)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvcq->context);
	struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
	uint32_t ci;

	pthread_spin_lock(&cq->lock);
	ci = cq->ci;
	vrnic_ring_db(ctx, solicited_only ? VRNIC_DB_CQ_ARM_SOLICITED :
					    VRNIC_DB_CQ_ARM_NEXT,
		      cq->cqn, ci);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/*
 * Drop the CQEs of a destroyed (or reset) queue that are still in the ring,
 * so that a queue reusing the number never sees them (mlx4's
 * __mlx4_cq_clean): later CQEs slide towards the producer over the dropped
 * ones, each keeping the phase of the slot it lands in, and ci skips the
 * freed slots. SRQ slots of dropped receive CQEs go back to srq's pool.
 * The dropped CQEs are those of one QP (xrc false, num its qpn) or of one
 * XRC SRQ (xrc true, num its srqn): an XRC receive belongs to its SRQ, not
 * to the target QP it names, which goes without taking them along. Called
 * with cq->lock held, after the device stopped producing CQEs for num.
 */
static void vrnic_cq_drop(struct vrnic_cq *cq, bool xrc, uint32_t num,
			  struct vrnic_srq *srq)
{
	uint32_t depth = vrnic_cq_depth(cq);
	uint32_t prod, nfreed = 0;
	struct vrnic_cqe *cqe, *dest;
	uint32_t phase;
	bool match;

	for (prod = cq->ci; prod - cq->ci < depth; prod++)
		if (!vrnic_cqe_valid(cq, prod))
			break;
	udma_from_device_barrier();

	while (prod != cq->ci) {
		prod--;
		cqe = vrnic_cq_entry(cq, prod);
		match = !!(cqe->flags & VRNIC_CQE_FLAG_XRC) == xrc &&
			le32toh(xrc ? cqe->src_qp : cqe->qpn) == num;
		if (match) {
			if (srq && vrnic_cqe_is_recv(cqe->opcode))
				vrnic_srq_put_slot(srq, le64toh(cqe->wr_id) &
						   VRNIC_CQE_WR_ID_SLOT_MASK);
			nfreed++;
		} else if (nfreed) {
			dest = vrnic_cq_entry(cq, prod + nfreed);
			phase = le32toh(dest->info) & VRNIC_CQE_INFO_PHASE;
			memcpy(dest, cqe, (size_t)1 << cq->cqe_shift);
			dest->info = htole32((le32toh(dest->info) &
					      ~VRNIC_CQE_INFO_PHASE) | phase);
		}
	}

	if (nfreed) {
		cq->ci += nfreed;
		cq->ci_dirty = true;
		vrnic_cq_publish_ci(cq);
	}
}

/* A QP's CQEs (srq: the SRQ its receives took, or NULL). */
void vrnic_cq_clean(struct vrnic_cq *cq, uint32_t qpn, struct vrnic_srq *srq)
{
	vrnic_cq_drop(cq, false, qpn, srq);
}

/*
 * A destroyed XRC SRQ's receive CQEs, whatever target QP they name; its
 * pool goes with it, so no slot is returned.
 */
void vrnic_cq_clean_xrc_srq(struct vrnic_cq *cq, uint32_t srqn)
{
	vrnic_cq_drop(cq, true, srqn, NULL);
}
