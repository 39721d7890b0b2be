// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic receive-side scaling (VRNIC_DEVICE_CAP_RSS): receive work queues
 * (ibv_create_wq), their indirection tables (ibv_create_rwq_ind_table)
 * and the QPs that hash over one (ibv_create_qp_ex with RX_HASH and
 * IND_TABLE). A WQ is a receive-only raw packet QP of the device, its ring
 * in the process's memory as a user QP's; an RSS QP is a device RSS
 * context, which flow rules name like a QP (uapi "Receive-side scaling").
 * The device keeps an RSS context's queues alive; ib_core keeps a table
 * while a QP uses it and a WQ while a table holds it.
 */

#include <rdma/vrnic-abi.h>

#include "vrnic.h"

/* The ABI's key is the device's (vrnic-abi.h cannot include the latter). */
static_assert(sizeof_field(struct vrnic_create_rss_qp_cmd, rx_hash_key) ==
	      VRNIC_RSS_KEY_LEN);

/* The WQ state machine of ib_verbs (ib_wq_state) on the device's QP states. */
static int vrnic_wq_to_qp_states(struct vrnic_dev *vdev, struct vrnic_rwq *wq,
				 enum ib_wq_state cur, enum ib_wq_state next)
{
	struct vrnic_qp_attr hw = { .port = VRNIC_PORT_NUM };
	int err;

	switch (next) {
	case IB_WQS_RESET:
		hw.qp_state = cpu_to_le32(VRNIC_QPS_RESET);
		return vrnic_cmd_modify_qp(vdev->cmdq, wq->qpn,
					   VRNIC_QP_ATTR_STATE, &hw);
	case IB_WQS_ERR:
		if (cur == IB_WQS_RESET)
			return -EINVAL;
		hw.qp_state = cpu_to_le32(VRNIC_QPS_ERR);
		return vrnic_cmd_modify_qp(vdev->cmdq, wq->qpn,
					   VRNIC_QP_ATTR_STATE, &hw);
	case IB_WQS_RDY:
		if (cur == IB_WQS_RDY)
			return 0;
		if (cur != IB_WQS_RESET)
			return -EINVAL;
		/* RESET -> INIT takes the port; INIT -> RTR receives. */
		hw.qp_state = cpu_to_le32(VRNIC_QPS_INIT);
		err = vrnic_cmd_modify_qp(vdev->cmdq, wq->qpn,
					  VRNIC_QP_ATTR_STATE | VRNIC_QP_ATTR_PORT,
					  &hw);
		if (err)
			return err;
		hw.qp_state = cpu_to_le32(VRNIC_QPS_RTR);
		return vrnic_cmd_modify_qp(vdev->cmdq, wq->qpn,
					   VRNIC_QP_ATTR_STATE, &hw);
	default:
		return -EINVAL;
	}
}

struct ib_wq *vrnic_create_wq(struct ib_pd *ibpd,
			      struct ib_wq_init_attr *init_attr,
			      struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	const struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	struct vrnic_cmd_qp_params p = {};
	struct vrnic_create_wq_cmd cmd;
	struct vrnic_rwq *wq;
	int err;

	/* User WQs only: ib_uverbs requires CAP_NET_RAW for raw packet QPs. */
	if (!udata || init_attr->wq_type != IB_WQT_RQ ||
	    init_attr->create_flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (init_attr->max_wr > vrnic_max_qp_wr(da) ||
	    init_attr->max_sge > vrnic_max_recv_sge(da))
		return ERR_PTR(-EINVAL);
	err = vrnic_udata_in(&vdev->ibdev, udata, &cmd, sizeof(cmd),
			     offsetofend(typeof(cmd), wqe_shift), "create_wq");
	if (err)
		return ERR_PTR(err);
	if (cmd.comp_mask)
		return ERR_PTR(-EOPNOTSUPP);
	if (cmd.reserved_b0 ||
	    !vrnic_user_rq_ok(da, cmd.log_depth, cmd.wqe_shift,
			      init_attr->max_wr, init_attr->max_sge) ||
	    cmd.buf_len < (1ULL << (cmd.log_depth + cmd.wqe_shift))) {
		ibdev_dbg(&vdev->ibdev,
			  "create_wq: bad ring (%u x 2^%u, buf_len %u)\n",
			  cmd.log_depth, cmd.wqe_shift, cmd.buf_len);
		return ERR_PTR(-EINVAL);
	}

	wq = kzalloc(sizeof(*wq), GFP_KERNEL);
	if (!wq)
		return ERR_PTR(-ENOMEM);
	mutex_init(&wq->state_lock);
	vrnic_odp_faults_init(wq->odp_fault, vdev, &wq->qpn);
	err = vrnic_pin_ring(vdev, &wq->mem, cmd.buf_addr, cmd.buf_len);
	if (err)
		goto err_free;

	p.type = VRNIC_QP_TYPE_RAW_PACKET;	/* sq_log_depth 0: no SQ */
	p.rq_log_depth = cmd.log_depth;
	p.rq_wqe_shift = cmd.wqe_shift;
	p.max_recv_sge = vrnic_rq_wqe_sges(da, cmd.wqe_shift);
	p.pdn = to_vpd(ibpd)->pdn;
	p.send_cqn = to_vcq(init_attr->cq)->cqn;
	p.recv_cqn = p.send_cqn;
	p.uctx = vrnic_uctx(udata);
	p.mem = &wq->mem.desc;
	err = vrnic_cmd_create_qp(vdev->cmdq, &p, &wq->qpn);
	if (err)
		goto err_unpin;
	err = xa_err(xa_store(&vdev->wq_xa, wq->qpn, wq, GFP_KERNEL));
	if (err)
		goto err_destroy;

	wq->ibwq.wq_num = wq->qpn;
	wq->ibwq.state = IB_WQS_RESET;
	/* ib_uverbs leaves these to the driver (its own handler is here). */
	wq->ibwq.event_handler = init_attr->event_handler;
	wq->ibwq.wq_context = init_attr->wq_context;
	/* ib_uverbs reports these back: what the ring holds. */
	init_attr->max_wr = 1U << cmd.log_depth;
	init_attr->max_sge = p.max_recv_sge;
	return &wq->ibwq;

err_destroy:
	vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_QP, wq->qpn);
err_unpin:
	vrnic_mem_uninit(vdev, &wq->mem);
err_free:
	kfree(wq);
	return ERR_PTR(err);
}

int vrnic_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr,
		    u32 attr_mask, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibwq->device);
	struct vrnic_rwq *wq = to_vrwq(ibwq);
	enum ib_wq_state cur;
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "modify_wq");
	if (err)
		return err;
	if (attr_mask & ~(IB_WQ_STATE | IB_WQ_CUR_STATE))
		return -EOPNOTSUPP;
	if (!(attr_mask & IB_WQ_STATE))
		return 0;
	mutex_lock(&wq->state_lock);
	cur = READ_ONCE(ibwq->state);	/* the AEQ handler may set ERR */
	if ((attr_mask & IB_WQ_CUR_STATE) && attr->curr_wq_state != cur) {
		err = -EINVAL;
		goto out;
	}
	err = vrnic_wq_to_qp_states(vdev, wq, cur, attr->wq_state);
	if (err) {
		ibdev_dbg(&vdev->ibdev, "modify_wq %u: %d -> %d refused (%d)\n",
			  wq->qpn, cur, attr->wq_state, err);
		goto out;
	}
	WRITE_ONCE(ibwq->state, attr->wq_state);
out:
	mutex_unlock(&wq->state_lock);
	return err;
}

int vrnic_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibwq->device);
	struct vrnic_rwq *wq = to_vrwq(ibwq);
	int err;

	/* ib_core holds a WQ while an indirection table names it. */
	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_QP, wq->qpn);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DESTROY_QP %u (WQ) failed (%d)\n",
				       wq->qpn, err);
	xa_erase(&vdev->wq_xa, wq->qpn);
	/* The AEQ handler may have looked it up, and queued a page fault. */
	vrnic_sync_admin_irq(vdev);
	vrnic_odp_faults_cancel(wq->odp_fault);
	vrnic_mem_uninit(vdev, &wq->mem);
	kfree(wq);
	return 0;
}

/*
 * An indirection table is the list of WQs ib_core keeps; the device sees
 * it only when an RSS QP is created over it.
 */
int vrnic_create_rwq_ind_table(struct ib_rwq_ind_table *tbl,
			       struct ib_rwq_ind_table_init_attr *init_attr,
			       struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(tbl->device);
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "create_rwq_ind_table");
	if (err)
		return err;
	if (init_attr->log_ind_tbl_size > VRNIC_RSS_LOG_TABLE_MAX)
		return -EINVAL;
	tbl->ind_tbl_num = atomic_inc_return(&vdev->rwq_ind_tbl_num);
	return 0;
}

int vrnic_destroy_rwq_ind_table(struct ib_rwq_ind_table *tbl)
{
	return 0;
}

/*
 * create_qp with an indirection table: receive only (ib_uverbs refuses
 * receive capacities and an SRQ), no rings, no state to modify. The QP
 * number is the RSS context's, which flow rules on the QP name.
 */
int vrnic_create_rss_qp(struct vrnic_dev *vdev, struct vrnic_qp *qp,
			struct ib_qp_init_attr *init_attr,
			struct ib_udata *udata)
{
	struct ib_rwq_ind_table *tbl = init_attr->rwq_ind_tbl;
	struct vrnic_cmd_rss_params p = {};
	struct vrnic_create_rss_qp_cmd cmd;
	u32 i;
	int err;

	if (!vdev->has_rss || !udata ||
	    init_attr->qp_type != IB_QPT_RAW_PACKET || init_attr->create_flags)
		return -EOPNOTSUPP;
	if (init_attr->cap.max_send_wr || init_attr->send_cq)
		return -EOPNOTSUPP;	/* RSS QPs do not send */
	err = vrnic_udata_in(&vdev->ibdev, udata, &cmd, sizeof(cmd),
			     sizeof(cmd), "create_qp (RSS)");
	if (err)
		return err;
	if (cmd.comp_mask)
		return -EOPNOTSUPP;
	if (memchr_inv(cmd.reserved_90, 0, sizeof(cmd.reserved_90)))
		return -EINVAL;
	if (cmd.rx_hash_function != VRNIC_RX_HASH_FUNC_TOEPLITZ ||
	    cmd.rx_key_len != VRNIC_RSS_KEY_LEN ||
	    !cmd.rx_hash_fields_mask ||
	    (cmd.rx_hash_fields_mask & ~(u64)VRNIC_RSS_F_ALL)) {
		ibdev_dbg(&vdev->ibdev,
			  "create_qp: RSS function %#x, key length %u, fields %#llx not supported\n",
			  cmd.rx_hash_function, cmd.rx_key_len,
			  cmd.rx_hash_fields_mask);
		return -EOPNOTSUPP;
	}
	if (tbl->log_ind_tbl_size > VRNIC_RSS_LOG_TABLE_MAX)
		return -EINVAL;

	p.uctx = vrnic_uctx(udata);
	/* The ABI's fields bits are the device's (rdma/vrnic-abi.h). */
	p.fields = cmd.rx_hash_fields_mask;
	p.log_size = tbl->log_ind_tbl_size;
	p.key = cmd.rx_hash_key;
	for (i = 0; i < (1U << p.log_size); i++)
		p.qpn[i] = to_vrwq(tbl->ind_tbl[i])->qpn;
	err = vrnic_cmd_create_rss(vdev->cmdq, &p, &qp->qpn);
	if (err)
		return err;
	qp->rss = true;
	qp->ibqp.qp_num = qp->qpn;
	memset(&init_attr->cap, 0, sizeof(init_attr->cap));
	return 0;
}
