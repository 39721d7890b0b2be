// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic XRC (VRNIC_DEVICE_CAP_XRC): XRC domains and XRC target QPs (uapi
 * "XRC"). A domain is a device object of no context: ib_uverbs shares one
 * between the processes that open the same file, and keeps its target QPs
 * (ib_xrcd.tgt_qps). XRC SRQs and initiator QPs are made by create_srq and
 * create_qp (vrnic_verbs.c) with the domain's number or no receive side.
 *
 * A target QP is ib_core's "real" QP: ib_core creates it without udata,
 * PD, CQs or SRQ (each request names an XRC SRQ of the domain, whose CQ
 * takes the completion), hands user space a shadow QP and sends modify,
 * query and destroy to the real one. The device gives it no rings, so the
 * driver keeps nothing but its number and state. Its QPN appears in CQEs
 * only on the CQs of XRC SRQs, which are user CQs: create_srq refuses
 * kernel XRC SRQs, and ib_uverbs names the SRQ's CQ from the same
 * context. Kernel poll_cq therefore never looks a target QP up, and
 * destroy_qp unpublishes it without CQ locks (vrnic_qp_forget()).
 */

#include "vrnic.h"

int vrnic_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibxrcd->device);
	struct vrnic_xrcd *xrcd = to_vxrcd(ibxrcd);
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "alloc_xrcd");
	if (err)
		return err;
	err = vrnic_cmd_alloc_xrcd(vdev->cmdq, &xrcd->xrcdn);
	if (err)
		return err;
	atomic_inc(&vdev->res_count[VRNIC_RES_XRCD]);
	return 0;
}

/* ib_core calls this only once no SRQ or target QP uses the domain. */
int vrnic_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibxrcd->device);
	struct vrnic_xrcd *xrcd = to_vxrcd(ibxrcd);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DEALLOC_XRCD,
				xrcd->xrcdn);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DEALLOC_XRCD %u failed (%d)\n",
				       xrcd->xrcdn, err);
	atomic_dec(&vdev->res_count[VRNIC_RES_XRCD]);
	return 0;
}

/*
 * create_qp of an XRC target: CREATE_QP with the domain only (uctx 0, no
 * PD, CQs, SRQ or rings, as the device requires). ib_uverbs passes the
 * user's capacities and, on its ioctl path, may pass an XRC SRQ: neither
 * means anything for a QP without queues, so both are ignored and the
 * capacities granted are 0.
 */
int vrnic_create_xrc_tgt_qp(struct vrnic_dev *vdev, struct vrnic_qp *qp,
			    struct ib_qp_init_attr *init_attr)
{
	struct vrnic_cmd_qp_params p = {};
	int err;

	if (!vdev->has_xrc)
		return -EOPNOTSUPP;
	if (!init_attr->xrcd)
		return -EINVAL;
	if (init_attr->create_flags)
		return -EOPNOTSUPP;

	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	/* Requests it answers may touch on-demand MRs: responder faults. */
	vrnic_odp_faults_init(qp->odp_fault, vdev, &qp->qpn);

	p.type = VRNIC_QP_TYPE_XRC_TGT;
	p.xrcdn = to_vxrcd(init_attr->xrcd)->xrcdn;
	err = vrnic_cmd_create_qp(vdev->cmdq, &p, &qp->qpn);
	if (err)
		return err;
	/* For its async events and page faults. */
	err = xa_err(xa_store(&vdev->qp_xa, qp->qpn, qp, GFP_KERNEL));
	if (err) {
		vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_QP, qp->qpn);
		return err;
	}

	qp->ibqp.qp_num = qp->qpn;
	memset(&init_attr->cap, 0, sizeof(init_attr->cap));
	atomic_inc(&vdev->res_count[VRNIC_RES_QP]);
	return 0;
}
