// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic XRC (vrnic_hw_defs.h "XRC"): XRC domains (ibv_open_xrcd), XRC
 * target QPs, created (IBV_QPT_XRC_RECV) or opened by number from another
 * process (ibv_open_qp), and the number of an XRC SRQ (ibv_get_srq_num).
 * The domain and the target QP are the kernel's and the device's objects:
 * a target has no rings and no CQs, and takes no posts; what it receives
 * completes on the XRC SRQ the sender names (qp.c creates XRC SRQs and the
 * XRC_SEND initiators, cq.c finds the SRQ of an XRC completion).
 */
#include <errno.h>
#include <stdlib.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"

/* No vendor udata: a domain is a number the kernel keeps. */
struct ibv_xrcd *vrnic_open_xrcd(struct ibv_context *ibvctx,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int err;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_xrcd(ibvctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx),
			    "open_xrcd (fd %d, oflags %#x) refused: %d\n",
			    attr->fd, attr->oflags, err);
		free(xrcd);
		errno = err;
		return NULL;
	}
	return &xrcd->xrcd;
}

int vrnic_close_xrcd(struct ibv_xrcd *ibvxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibvxrcd, struct verbs_xrcd,
					       xrcd);
	int err;

	err = ibv_cmd_close_xrcd(xrcd);
	if (err)
		return err;
	free(xrcd);
	return 0;
}

/*
 * A target QP in the domain attr->xrcd. ib_core creates it without udata
 * (the kernel sees none, so none is sent). The capabilities are ignored,
 * as the kernel ignores them: perftest asks for receive ones.
 */
struct ibv_qp *vrnic_create_xrc_recv_qp(struct ibv_context *ibvctx,
					struct ibv_qp_init_attr_ex *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	struct vrnic_qp *qp;
	int err;

	if (!check_comp_mask(attr->comp_mask,
			     IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		verbs_debug(&ctx->ibvctx,
			    "create_qp: XRC target comp_mask %#x refused\n",
			    attr->comp_mask);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = vrnic_cmd_create_qp(ibvctx, qp, attr, &cmd, sizeof(cmd), &resp,
				  sizeof(resp));
	if (err) {
		verbs_debug(&ctx->ibvctx,
			    "create_qp: XRC target refused: %d\n", err);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = qp->vqp.qp.qp_num;
	verbs_debug(&ctx->ibvctx, "XRC target QP %u\n", qp->qpn);
	return &qp->vqp.qp;
}

/*
 * ibv_open_qp(): this process's handle on a target QP another process (or
 * context) created in a domain both opened. Only targets can be shared,
 * and the provider keeps nothing of one but its number.
 */
struct ibv_qp *vrnic_open_qp(struct ibv_context *ibvctx,
			     struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_open_qp cmd = {};
	struct vrnic_qp *qp;
	int err;

	if (!(attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) ||
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_qp(ibvctx, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx),
			    "open_qp %u refused: %d\n", attr->qp_num, err);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = qp->vqp.qp.qp_num;
	return &qp->vqp.qp;
}

/*
 * What a sender puts in its WRs' remote_srqn: the device's srqn (XRCETH
 * carries it). Any SRQ has one; only an XRC SRQ's is of use to a peer.
 */
int vrnic_get_srq_num(struct ibv_srq *ibvsrq, uint32_t *srq_num)
{
	*srq_num = to_vrnic_srq(ibvsrq)->srqn;
	return 0;
}
