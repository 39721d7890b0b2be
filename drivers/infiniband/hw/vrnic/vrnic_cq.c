// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic kernel CQ data path: poll_cq and req_notify_cq. Both run in any
 * context (ib_core pollers, ULPs under spinlocks) and never sleep.
 *
 * A kernel CQ is a coherent ring of 2^log_depth CQEs followed by the doorbell
 * record. A CQE is new when its phase bit equals vrnic_idx_phase(ci);
 * after polling, the consumer index goes to dbrec.ci so the device can tell
 * a full CQ (overrun -> CQ_ERR) from a free slot.
 *
 * The kernel's own WQEs carry their slot index as wr_id; a CQE names its QP
 * (qpn), queue and slot (uapi "CQE decoding"), and the consumer's wr_id
 * comes from the queue's wrid table. QPs are looked up under the CQ lock;
 * destroy_qp (and a move to RESET) erases the QP and rewrites its pending
 * CQEs' qpn to 0 under the same lock (vrnic_cq_clean()), so a stale CQE is
 * skipped, never attributed to a QP that reused the number.
 */

#include <linux/bitfield.h>

#include "vrnic.h"

static struct vrnic_cqe *vrnic_cq_peek(struct vrnic_cq *cq, u32 idx)
{
	struct vrnic_cqe *cqe = &cq->ring[vrnic_idx_slot(idx, cq->log_depth)];
	u32 phase = vrnic_idx_phase(idx, cq->log_depth);
	u32 info;

	/* The device writes the info word (phase) last. */
	info = le32_to_cpu(READ_ONCE(cqe->info));
	if (FIELD_GET(VRNIC_CQE_INFO_PHASE, info) != phase)
		return NULL;
	/* Read the rest only after its phase matched. */
	dma_rmb();
	return cqe;
}

/* The hardware's values are ib_core's (uapi "CQE decoding"). */
static_assert((int)VRNIC_CQE_OP_SEND == (int)IB_WC_SEND);
static_assert((int)VRNIC_CQE_OP_RDMA_WRITE == (int)IB_WC_RDMA_WRITE);
static_assert((int)VRNIC_CQE_OP_RDMA_READ == (int)IB_WC_RDMA_READ);
static_assert((int)VRNIC_CQE_OP_COMP_SWAP == (int)IB_WC_COMP_SWAP);
static_assert((int)VRNIC_CQE_OP_FETCH_ADD == (int)IB_WC_FETCH_ADD);
static_assert((int)VRNIC_CQE_OP_BIND_MW == (int)IB_WC_BIND_MW);
static_assert((int)VRNIC_CQE_OP_LOCAL_INV == (int)IB_WC_LOCAL_INV);
static_assert((int)VRNIC_CQE_OP_FLUSH == (int)IB_WC_FLUSH);
static_assert((int)VRNIC_CQE_OP_ATOMIC_WRITE == (int)IB_WC_ATOMIC_WRITE);
static_assert((int)VRNIC_CQE_OP_RECV == (int)IB_WC_RECV);
static_assert((int)VRNIC_CQE_OP_RECV_RDMA_WITH_IMM == (int)IB_WC_RECV_RDMA_WITH_IMM);
static_assert((int)VRNIC_WC_SUCCESS == (int)IB_WC_SUCCESS);
static_assert((int)VRNIC_WC_LOC_LEN_ERR == (int)IB_WC_LOC_LEN_ERR);
static_assert((int)VRNIC_WC_LOC_QP_OP_ERR == (int)IB_WC_LOC_QP_OP_ERR);
static_assert((int)VRNIC_WC_LOC_PROT_ERR == (int)IB_WC_LOC_PROT_ERR);
static_assert((int)VRNIC_WC_WR_FLUSH_ERR == (int)IB_WC_WR_FLUSH_ERR);
static_assert((int)VRNIC_WC_MW_BIND_ERR == (int)IB_WC_MW_BIND_ERR);
static_assert((int)VRNIC_WC_BAD_RESP_ERR == (int)IB_WC_BAD_RESP_ERR);
static_assert((int)VRNIC_WC_LOC_ACCESS_ERR == (int)IB_WC_LOC_ACCESS_ERR);
static_assert((int)VRNIC_WC_REM_INV_REQ_ERR == (int)IB_WC_REM_INV_REQ_ERR);
static_assert((int)VRNIC_WC_REM_ACCESS_ERR == (int)IB_WC_REM_ACCESS_ERR);
static_assert((int)VRNIC_WC_REM_OP_ERR == (int)IB_WC_REM_OP_ERR);
static_assert((int)VRNIC_WC_RETRY_EXC_ERR == (int)IB_WC_RETRY_EXC_ERR);
static_assert((int)VRNIC_WC_RNR_RETRY_EXC_ERR == (int)IB_WC_RNR_RETRY_EXC_ERR);
static_assert((int)VRNIC_WC_FATAL_ERR == (int)IB_WC_FATAL_ERR);
static_assert((int)VRNIC_WC_GENERAL_ERR == (int)IB_WC_GENERAL_ERR);

static enum ib_wc_opcode vrnic_wc_opcode(u8 opcode)
{
	u8 op = vrnic_cqe_wc_opcode(opcode);

	/* REG_MR has no uverbs value, and another one in ib_core. */
	return op == VRNIC_CQE_OP_REG_MR ? IB_WC_REG_MR : (enum ib_wc_opcode)op;
}

/* Is idx one of the outstanding slots [ci, pi) of the queue? */
static bool vrnic_wq_outstanding(u32 idx, u32 ci, u32 pi)
{
	return idx - ci < pi - ci;
}

/* Called with the CQ lock held; returns the consumer's wr_id. */
static int vrnic_cq_take_wrid(struct vrnic_qp *qp, bool recv, u32 idx,
			      u64 *wr_id)
{
	struct vrnic_srq *srq;
	struct vrnic_wq *wq;

	if (recv && qp->ibqp.srq) {
		srq = to_vsrq(qp->ibqp.srq);
		wq = &srq->rq;
		spin_lock(&srq->lock);
		if (!vrnic_wq_outstanding(idx, wq->ci, wq->pi)) {
			spin_unlock(&srq->lock);
			return -EINVAL;
		}
		*wr_id = wq->wrid[vrnic_idx_slot(idx, wq->log_depth)];
		/* Slots complete out of order across CQs: advance past done. */
		__set_bit(vrnic_idx_slot(idx, wq->log_depth), srq->done);
		while (wq->ci != wq->pi &&
		       __test_and_clear_bit(vrnic_idx_slot(wq->ci, wq->log_depth),
					    srq->done))
			wq->ci++;
		spin_unlock(&srq->lock);
		return 0;
	}

	wq = recv ? &qp->rq : &qp->sq;
	if (!vrnic_wq_outstanding(idx, wq->ci, READ_ONCE(wq->pi)))
		return -EINVAL;
	*wr_id = wq->wrid[vrnic_idx_slot(idx, wq->log_depth)];
	/*
	 * In order: this CQE also retires the unsignaled WQEs before it.
	 * Release: the wrid read above happens before the slot is reused.
	 */
	smp_store_release(&wq->ci, idx + 1);
	return 0;
}

/* Decode one CQE; returns 0 if wc was filled, < 0 to skip the CQE. */
static int vrnic_cq_decode(struct vrnic_cq *cq, struct vrnic_cqe *cqe,
			   struct ib_wc *wc)
{
	struct vrnic_dev *vdev = to_vdev(cq->ibcq.device);
	u32 qpn = le32_to_cpu(cqe->qpn);
	u32 idx = le64_to_cpu(cqe->wr_id) & VRNIC_CQE_WR_ID_SLOT_MASK;
	bool recv = vrnic_cqe_is_recv(cqe->opcode);
	struct vrnic_qp *qp;
	u8 flags;

	if (!qpn)
		return -ENOENT;	/* cleaned: its QP was destroyed or reset */
	qp = xa_load(&vdev->qp_xa, qpn);
	/*
	 * Never a user QP, nor an XRC target (VRNIC_CQE_FLAG_XRC CQEs go to
	 * XRC SRQs' CQs, all user CQs: vrnic_xrc.c) unless the device erred.
	 */
	if (!qp || !qp->kernel) {
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "CQ %u: CQE for unknown qpn %u dropped\n",
				       cq->cqn, qpn);
		return -ENOENT;
	}
	if (vrnic_cq_take_wrid(qp, recv, idx, &wc->wr_id)) {
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "CQ %u: CQE for QP %u %s slot %u, not outstanding; dropped\n",
				       cq->cqn, qpn, recv ? "receive" : "send",
				       idx);
		return -EINVAL;
	}

	flags = cqe->flags;
	/* ib_wc_status values (uapi "CQE decoding"). */
	wc->status = (enum ib_wc_status)vrnic_cqe_wc_status(cqe->status);
	wc->opcode = vrnic_wc_opcode(cqe->opcode);
	wc->vendor_err = FIELD_GET(VRNIC_CQE_INFO_VENDOR_ERR_MASK,
				   le32_to_cpu(cqe->info));
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(cqe->src_qp);
	wc->wc_flags = 0;
	wc->pkey_index = 0;
	wc->port_num = VRNIC_PORT_NUM;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;

	if (flags & VRNIC_CQE_FLAG_IMM) {
		/* The four bytes as received: network order already. */
		wc->ex.imm_data = (__force __be32)cqe->imm_data;
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (flags & VRNIC_CQE_FLAG_INV) {
		wc->ex.invalidate_rkey = le32_to_cpu(cqe->imm_data);
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (flags & VRNIC_CQE_FLAG_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (recv &&
	    (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI)) {
		switch (cqe->network_hdr_type) {
		case VRNIC_NET_TYPE_IPV4:
			wc->network_hdr_type = RDMA_NETWORK_IPV4;
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			break;
		case VRNIC_NET_TYPE_IPV6:
			wc->network_hdr_type = RDMA_NETWORK_IPV6;
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			break;
		default:
			break;
		}
	}
	return 0;
}

static void vrnic_cq_update_dbrec(struct vrnic_cq *cq)
{
	/* Every read of the consumed CQEs completes before the device sees ci. */
	dma_mb();
	WRITE_ONCE(cq->dbrec->ci, cpu_to_le32(cq->ci));
}

int vrnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct vrnic_cq *cq = to_vcq(ibcq);
	struct vrnic_cqe *cqe;
	unsigned long flags;
	int npolled = 0;
	u32 start;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->resizing)
		goto out;

	start = cq->ci;
	/* Bounded by the ring: skipped CQEs cannot keep us here forever. */
	while (npolled < num_entries && cq->ci - start < cq->depth) {
		cqe = vrnic_cq_peek(cq, cq->ci);
		if (!cqe)
			break;
		cq->ci++;
		if (!vrnic_cq_decode(cq, cqe, &wc[npolled]))
			npolled++;
	}
	if (cq->ci != start)
		vrnic_cq_update_dbrec(cq);
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	return npolled;
}

int vrnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vrnic_dev *vdev = to_vdev(ibcq->device);
	struct vrnic_cq *cq = to_vcq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	vrnic_ring_db(vdev, (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		      VRNIC_DB_CQ_ARM_SOLICITED : VRNIC_DB_CQ_ARM_NEXT,
		      cq->cqn, cq->ci);
	/* During a resize the old ring is gone: report, the caller polls. */
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    (cq->resizing || vrnic_cq_peek(cq, cq->ci)))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * Forget the pending CQEs of a QP that is being destroyed or reset (the
 * device writes no more for it): rewrite their qpn to 0, which poll_cq
 * skips. Caller holds cq->lock.
 */
void vrnic_cq_clean(struct vrnic_cq *cq, u32 qpn)
{
	struct vrnic_cqe *cqe;
	u32 i;

	lockdep_assert_held(&cq->lock);
	/* A user CQ is the provider's to poll: nothing of ours is in it. */
	if (!cq->kernel || cq->resizing)
		return;
	for (i = cq->ci; i - cq->ci < cq->depth; i++) {
		cqe = vrnic_cq_peek(cq, i);
		if (!cqe)
			break;
		if (le32_to_cpu(cqe->qpn) == qpn)
			WRITE_ONCE(cqe->qpn, 0);
	}
}
