// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic kernel QP data path: post_send, post_recv and post_srq_recv write
 * WQEs into the coherent rings (vrnic_hw_defs.h, "Work queue entries") and
 * ring the kernel's doorbell page (BAR2 page 0). They run in any context,
 * never sleep, and on failure point *bad_wr at the WR that failed (the ones
 * before it are posted).
 *
 * A queue is full when pi - ci >= depth. The device flushes WQEs posted in
 * ERR with IB_WC_WR_FLUSH_ERR, so posting in ERR succeeds (ib_drain_qp).
 */

#include <linux/bitfield.h>

#include "vrnic.h"

static bool vrnic_wq_full(struct vrnic_wq *wq)
{
	/* Acquire: pairs with poll_cq's release of the slots below ci. */
	return wq->pi - smp_load_acquire(&wq->ci) >= wq->depth;
}

static int vrnic_wqe_opcode(const struct vrnic_qp *qp,
			    const struct ib_send_wr *wr, u8 *opcode)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	bool ud = type == IB_QPT_UD || type == IB_QPT_GSI;

	switch (wr->opcode) {
	case IB_WR_SEND:
		*opcode = VRNIC_WQE_OP_SEND;
		return 0;
	case IB_WR_SEND_WITH_IMM:
		*opcode = VRNIC_WQE_OP_SEND_IMM;
		return 0;
	default:
		break;
	}
	if (ud)
		return -EINVAL;

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
		*opcode = VRNIC_WQE_OP_RDMA_WRITE;
		return 0;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		*opcode = VRNIC_WQE_OP_RDMA_WRITE_IMM;
		return 0;
	case IB_WR_LOCAL_INV:
	case IB_WR_REG_MR:
		*opcode = wr->opcode == IB_WR_REG_MR ? VRNIC_WQE_OP_REG_MR :
						       VRNIC_WQE_OP_LOCAL_INV;
		return 0;
	default:
		break;
	}
	if (type != IB_QPT_RC)
		return -EINVAL;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_INV:
		*opcode = VRNIC_WQE_OP_SEND_INV;
		return 0;
	case IB_WR_RDMA_READ:
		*opcode = VRNIC_WQE_OP_RDMA_READ;
		return 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*opcode = VRNIC_WQE_OP_ATOMIC_CMP_SWP;
		return 0;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*opcode = VRNIC_WQE_OP_ATOMIC_FETCH_ADD;
		return 0;
	default:
		return -EINVAL;
	}
}

static void vrnic_write_sges(struct vrnic_sge *dst, const struct ib_sge *sg,
			     int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = cpu_to_le64(sg[i].addr);
		dst[i].length = cpu_to_le32(sg[i].length);
		dst[i].lkey = cpu_to_le32(sg[i].lkey);
	}
}

/* Inline data: the SGEs hold kernel virtual addresses (IB_SEND_INLINE). */
static int vrnic_write_inline(struct vrnic_qp *qp, void *dst,
			      const struct ib_send_wr *wr, u32 *len)
{
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sg = &wr->sg_list[i];

		if (sg->length > qp->max_inline - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)sg->addr, sg->length);
		total += sg->length;
	}
	*len = total;
	return 0;
}

/* Build the WQE for @wr in the SQ's next slot. Caller holds sq_lock. */
static int vrnic_build_send_wqe(struct vrnic_qp *qp,
				const struct ib_send_wr *wr)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	void *slot = vrnic_wq_slot(&qp->sq, qp->sq.pi);
	struct vrnic_send_wqe *wqe = slot;
	u32 inline_len = 0;
	u8 opcode, flags = 0;
	int err;

	err = vrnic_wqe_opcode(qp, wr, &opcode);
	if (err)
		return err;

	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= VRNIC_WQE_FLAG_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= VRNIC_WQE_FLAG_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		flags |= VRNIC_WQE_FLAG_FENCE;

	memset(slot, 0, 1U << qp->sq.wqe_shift);
	if (opcode == VRNIC_WQE_OP_REG_MR) {
		err = vrnic_frmr_build_wqe(slot, reg_wr(wr), flags);
		if (!err)
			wqe->wr_id = cpu_to_le64(qp->sq.pi);
		return err;
	}
	if (wr->num_sge < 0 || (!(wr->send_flags & IB_SEND_INLINE) &&
				wr->num_sge > qp->sq.max_sge))
		return -EINVAL;

	if (wr->send_flags & IB_SEND_INLINE) {
		if (opcode == VRNIC_WQE_OP_RDMA_READ)
			return -EINVAL;
		err = vrnic_write_inline(qp, slot + qp->sq_hdr, wr,
					 &inline_len);
		if (err)
			return err;
		flags |= VRNIC_WQE_FLAG_INLINE;
	} else {
		vrnic_write_sges(slot + qp->sq_hdr, wr->sg_list, wr->num_sge);
		wqe->num_sge = wr->num_sge;
	}

	/* The slot index, which the CQE returns (uapi "CQE decoding"). */
	wqe->wr_id = cpu_to_le64(qp->sq.pi);
	wqe->opcode = opcode;
	wqe->flags = flags;
	wqe->inline_len = cpu_to_le32(inline_len);

	switch (opcode) {
	case VRNIC_WQE_OP_SEND_IMM:
	case VRNIC_WQE_OP_RDMA_WRITE_IMM:
		/* Network order as it goes on the wire: copy the bytes. */
		wqe->imm_data = (__force __le32)wr->ex.imm_data;
		break;
	case VRNIC_WQE_OP_SEND_INV:
	case VRNIC_WQE_OP_LOCAL_INV:
		wqe->imm_data = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	default:
		break;
	}

	switch (opcode) {
	case VRNIC_WQE_OP_RDMA_WRITE:
	case VRNIC_WQE_OP_RDMA_WRITE_IMM:
	case VRNIC_WQE_OP_RDMA_READ:
		wqe->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case VRNIC_WQE_OP_ATOMIC_CMP_SWP:
	case VRNIC_WQE_OP_ATOMIC_FETCH_ADD:
		/* The original value lands in the (8-byte) local SGE. */
		wqe->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	default:
		break;
	}

	if (type == IB_QPT_UD || type == IB_QPT_GSI) {
		const struct ib_ud_wr *ud = ud_wr(wr);
		struct vrnic_av *av = slot + sizeof(*wqe);
		struct vrnic_ud_dest *dest = (void *)(av + 1);

		if (!ud->ah)
			return -EINVAL;
		*av = to_vah(ud->ah)->av;
		dest->dest_qpn = cpu_to_le32(ud->remote_qpn);
		/* MSB set (ib_mad's 0x80000000): the device uses the QP's. */
		dest->qkey = cpu_to_le32(ud->remote_qkey);
	}
	return 0;
}

int vrnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_qp *qp = to_vqp(ibqp);
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	u32 start;
	int err = 0;

	/*
	 * Only kernel QPs have rings here: a user QP posts to its own
	 * (libvrnic), an XRC target or RSS QP has none (ib_uverbs' legacy
	 * POST_SEND/POST_RECV still reach these).
	 */
	if (!qp->kernel) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->sq_lock, flags);
	start = qp->sq.pi;
	for (; wr; wr = wr->next) {
		if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
		    state == IB_QPS_RTR) {
			err = -EINVAL;
		} else if (vrnic_wq_full(&qp->sq)) {
			err = -ENOMEM;
		} else {
			err = vrnic_build_send_wqe(qp, wr);
		}
		if (err) {
			*bad_wr = wr;
			break;
		}
		qp->sq.wrid[vrnic_idx_slot(qp->sq.pi, qp->sq.log_depth)] =
			wr->wr_id;
		qp->sq.pi++;
	}
	if (qp->sq.pi != start)
		vrnic_ring_db(vdev, VRNIC_DB_SQ, qp->qpn, qp->sq.pi);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return err;
}

static int vrnic_build_recv_wqe(struct vrnic_wq *wq, const struct ib_recv_wr *wr)
{
	void *slot = vrnic_wq_slot(wq, wq->pi);
	struct vrnic_recv_wqe *wqe = slot;

	if (wr->num_sge < 0 || wr->num_sge > wq->max_sge)
		return -EINVAL;

	memset(slot, 0, 1U << wq->wqe_shift);
	wqe->wr_id = cpu_to_le64(wq->pi);
	wqe->num_sge = wr->num_sge;
	vrnic_write_sges(slot + sizeof(*wqe), wr->sg_list, wr->num_sge);
	return 0;
}

int vrnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_qp *qp = to_vqp(ibqp);
	unsigned long flags;
	u32 start;
	int err = 0;

	if (ibqp->srq || !qp->kernel) {	/* !kernel: see vrnic_post_send */
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	start = qp->rq.pi;
	for (; wr; wr = wr->next) {
		if (READ_ONCE(qp->state) == IB_QPS_RESET)
			err = -EINVAL;
		else if (vrnic_wq_full(&qp->rq))
			err = -ENOMEM;
		else
			err = vrnic_build_recv_wqe(&qp->rq, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
		qp->rq.wrid[vrnic_idx_slot(qp->rq.pi, qp->rq.log_depth)] =
			wr->wr_id;
		qp->rq.pi++;
	}
	if (qp->rq.pi != start)
		vrnic_ring_db(vdev, VRNIC_DB_RQ, qp->qpn, qp->rq.pi);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return err;
}

int vrnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vrnic_dev *vdev = to_vdev(ibsrq->device);
	struct vrnic_srq *srq = to_vsrq(ibsrq);
	struct vrnic_wq *wq = &srq->rq;
	unsigned long flags;
	u32 start;
	int err = 0;

	spin_lock_irqsave(&srq->lock, flags);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		/* ci moves under this lock too (completions out of order) */
		if (wq->pi - wq->ci >= wq->depth)
			err = -ENOMEM;
		else
			err = vrnic_build_recv_wqe(wq, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
		wq->wrid[vrnic_idx_slot(wq->pi, wq->log_depth)] = wr->wr_id;
		wq->pi++;
	}
	if (wq->pi != start)
		vrnic_ring_db(vdev, VRNIC_DB_SRQ, srq->srqn, wq->pi);
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}
