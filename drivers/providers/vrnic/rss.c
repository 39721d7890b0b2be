// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic receive-side scaling: receive work queues (ibv_create_wq),
 * indirection tables over them (ibv_create_rwq_ind_table) and the raw
 * packet QPs that hash received frames over a table (ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_RX_HASH and _IND_TABLE), as vrnic_hw_defs.h
 * "Receive-side scaling" defines them. A WQ is a receive-only raw packet
 * QP of the device: its ring is ours and filled by the QP receive path
 * (vrnic_rq_post), and its CQEs are found through qp_table like a QP's.
 * The RSS QP and the table are the kernel's and the device's objects; an
 * RSS QP only takes flow rules (flow.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"
#include "vrnic-abi.h"

/* The verbs hash field bits are the device's (rdma/vrnic-abi.h). */
static_assert(IBV_RX_HASH_SRC_IPV4 == VRNIC_RSS_F_SRC_IPV4, "rx hash bits");
static_assert(IBV_RX_HASH_DST_IPV4 == VRNIC_RSS_F_DST_IPV4, "rx hash bits");
static_assert(IBV_RX_HASH_SRC_IPV6 == VRNIC_RSS_F_SRC_IPV6, "rx hash bits");
static_assert(IBV_RX_HASH_DST_IPV6 == VRNIC_RSS_F_DST_IPV6, "rx hash bits");
static_assert(IBV_RX_HASH_SRC_PORT_TCP == VRNIC_RSS_F_SRC_PORT_TCP,
	      "rx hash bits");
static_assert(IBV_RX_HASH_DST_PORT_TCP == VRNIC_RSS_F_DST_PORT_TCP,
	      "rx hash bits");
static_assert(IBV_RX_HASH_SRC_PORT_UDP == VRNIC_RSS_F_SRC_PORT_UDP,
	      "rx hash bits");
static_assert(IBV_RX_HASH_DST_PORT_UDP == VRNIC_RSS_F_DST_PORT_UDP,
	      "rx hash bits");
static_assert(IBV_RX_HASH_FUNC_TOEPLITZ == VRNIC_RX_HASH_FUNC_TOEPLITZ,
	      "rx hash function");
static_assert(sizeof(((struct vrnic_create_rss_qp_cmd *)0)->rx_hash_key) ==
	      VRNIC_RSS_KEY_LEN, "the ABI's key is the device's");

static int vrnic_post_wq_recv(struct ibv_wq *ibvwq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	struct vrnic_rwq *rwq = to_vrnic_rwq(ibvwq);

	if (ibvwq->state == IBV_WQS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	return vrnic_rq_post(to_vrnic_context(ibvwq->context), &rwq->qp, wr,
			     bad_wr);
}

/* Forget the WQ's CQEs and restart its ring at 0, as the device does. */
static void vrnic_wq_reset(struct vrnic_rwq *rwq)
{
	struct vrnic_cq *cq = to_vrnic_cq(rwq->ibv_wq.cq);
	struct vrnic_wq *rq = &rwq->qp.rq;

	pthread_spin_lock(&cq->lock);
	vrnic_cq_clean(cq, rwq->qp.qpn, NULL);
	pthread_spin_lock(&rq->lock);
	vrnic_store_idx(&rq->pi, 0);
	vrnic_store_idx(&rq->ci, 0);
	pthread_spin_unlock(&rq->lock);
	pthread_spin_unlock(&cq->lock);
}

struct ibv_wq *vrnic_create_wq(struct ibv_context *ibvctx,
			       struct ibv_wq_init_attr *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	struct ib_uverbs_ex_create_wq_resp resp = {};
	struct vrnic_ibv_create_wq cmd = {};
	uint32_t log_depth, shift, max_sge;
	struct vrnic_rwq *rwq;
	struct vrnic_qp *qp;
	int err;

	if (attr->wq_type != IBV_WQT_RQ ||
	    !check_comp_mask(attr->comp_mask, IBV_WQ_INIT_ATTR_FLAGS) ||
	    ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && attr->create_flags)) {
		err = EOPNOTSUPP;
		goto err_out;
	}
	if (attr->max_wr > ctx->max_qp_wr || attr->max_sge > ctx->max_sge) {
		err = EINVAL;
		goto err_out;
	}
	err = vrnic_wq_log_depth(attr->max_wr, &log_depth);
	if (!err)
		err = vrnic_recv_wqe_shift(ctx, attr->max_sge, &shift, &max_sge);
	if (err)
		goto err_out;

	rwq = calloc(1, sizeof(*rwq));
	if (!rwq) {
		err = ENOMEM;
		goto err_out;
	}
	qp = &rwq->qp;
	qp->pdom = vrnic_parent_domain_get(ctx, attr->pd);
	err = vrnic_buf_alloc(ctx, &qp->buf, (size_t)1 << (log_depth + shift),
			      qp->pdom, VRNIC_RES_TYPE_QP);
	if (err)
		goto err_free;
	err = vrnic_wq_init(&qp->rq, qp->buf.addr, log_depth, shift, max_sge);
	if (err)
		goto err_free_buf;

	cmd.buf_addr = (uintptr_t)qp->buf.addr;
	cmd.buf_len = qp->buf.len;
	cmd.log_depth = log_depth;
	cmd.wqe_shift = shift;
	err = ibv_cmd_create_wq(ibvctx, attr, &rwq->ibv_wq, &cmd.ibv_cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->ibvctx, "create_wq: kernel refused: %d\n",
			    err);
		goto err_uninit;
	}
	qp->qpn = rwq->ibv_wq.wq_num;
	err = vrnic_qp_table_add(ctx, qp, "create_wq");
	if (err)
		goto err_destroy;

	rwq->ibv_wq.state = IBV_WQS_RESET;
	rwq->ibv_wq.post_recv = vrnic_post_wq_recv;
	attr->max_wr = 1U << log_depth;
	attr->max_sge = max_sge;
	verbs_debug(&ctx->ibvctx, "WQ %u: %u x %uB\n", qp->qpn, 1U << log_depth,
		    1U << shift);
	return &rwq->ibv_wq;

err_destroy:
	ibv_cmd_destroy_wq(&rwq->ibv_wq);
err_uninit:
	vrnic_wq_uninit(&qp->rq);
err_free_buf:
	vrnic_buf_free(&qp->buf);
err_free:
	vrnic_parent_domain_put(ctx, qp->pdom);
	free(rwq);
err_out:
	errno = err;
	return NULL;
}

int vrnic_modify_wq(struct ibv_wq *ibvwq, struct ibv_wq_attr *attr)
{
	struct ibv_modify_wq cmd = {};
	int err;

	err = ibv_cmd_modify_wq(ibvwq, attr, &cmd, sizeof(cmd));
	if (err) {
		verbs_debug(verbs_get_ctx(ibvwq->context),
			    "WQ %u: modify mask %#x refused: %d\n",
			    ibvwq->wq_num, attr->attr_mask, err);
		return err;
	}
	if ((attr->attr_mask & IBV_WQ_ATTR_STATE) &&
	    attr->wq_state == IBV_WQS_RESET)
		vrnic_wq_reset(to_vrnic_rwq(ibvwq));
	return 0;
}

int vrnic_destroy_wq(struct ibv_wq *ibvwq)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvwq->context);
	struct vrnic_cq *cq = to_vrnic_cq(ibvwq->cq);
	struct vrnic_rwq *rwq = to_vrnic_rwq(ibvwq);
	struct vrnic_qp *qp = &rwq->qp;
	int err;

	/* The device stops all DMA to the ring before this returns. */
	err = ibv_cmd_destroy_wq(ibvwq);
	if (err)
		return err;

	pthread_spin_lock(&cq->lock);
	pthread_mutex_lock(&ctx->qp_table_mutex);
	ctx->qp_table[qp->qpn] = NULL;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	vrnic_cq_clean(cq, qp->qpn, NULL);
	pthread_spin_unlock(&cq->lock);

	vrnic_wq_uninit(&qp->rq);
	vrnic_buf_free(&qp->buf);
	vrnic_parent_domain_put(ctx, qp->pdom);
	free(rwq);
	return 0;
}

struct ibv_rwq_ind_table *
vrnic_create_rwq_ind_table(struct ibv_context *ibvctx,
			   struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *tbl;
	int err;

	if (attr->comp_mask) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->log_ind_tbl_size > VRNIC_RSS_LOG_TABLE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	tbl = calloc(1, sizeof(*tbl));
	if (!tbl) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_rwq_ind_table(ibvctx, attr, tbl, &resp,
					   sizeof(resp));
	if (err) {
		free(tbl);
		errno = err;
		return NULL;
	}
	return tbl;
}

int vrnic_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	int err;

	err = ibv_cmd_destroy_rwq_ind_table(tbl);
	if (err)
		return err;
	free(tbl);
	return 0;
}

static int vrnic_check_rss_attr(const struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;

	if (!check_comp_mask(attr->comp_mask,
			     IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			     IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    attr->qp_type != IBV_QPT_RAW_PACKET ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags))
		return EOPNOTSUPP;
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    h->rx_hash_key_len != VRNIC_RSS_KEY_LEN || !h->rx_hash_key ||
	    !h->rx_hash_fields_mask ||
	    (h->rx_hash_fields_mask & ~(uint64_t)VRNIC_RSS_F_ALL))
		return EOPNOTSUPP;
	/* Receive only, through the table's WQs. */
	if (!attr->rwq_ind_tbl || attr->srq || attr->cap.max_send_wr || attr->cap.max_recv_wr ||
	    attr->cap.max_send_sge || attr->cap.max_recv_sge ||
	    attr->cap.max_inline_data)
		return EINVAL;
	return 0;
}

struct ibv_qp *vrnic_create_rss_qp(struct ibv_context *ibvctx,
				   struct ibv_qp_init_attr_ex *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	struct vrnic_ibv_create_rss_qp_resp resp = {};
	struct vrnic_ibv_create_rss_qp cmd = {};
	struct vrnic_qp *qp;
	int err;

	err = vrnic_check_rss_attr(attr);
	if (err) {
		verbs_debug(&ctx->ibvctx,
			    "create_qp: RSS comp_mask %#x function %#x key %u fields %#llx refused\n",
			    attr->comp_mask, attr->rx_hash_conf.rx_hash_function,
			    attr->rx_hash_conf.rx_hash_key_len,
			    (unsigned long long)
			    attr->rx_hash_conf.rx_hash_fields_mask);
		errno = err;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->rss = true;
	cmd.rx_hash_fields_mask = attr->rx_hash_conf.rx_hash_fields_mask;
	cmd.rx_hash_function = attr->rx_hash_conf.rx_hash_function;
	cmd.rx_key_len = attr->rx_hash_conf.rx_hash_key_len;
	memcpy(cmd.rx_hash_key, attr->rx_hash_conf.rx_hash_key,
	       VRNIC_RSS_KEY_LEN);
	err = ibv_cmd_create_qp_ex2(ibvctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->ibvctx, "create_qp: RSS QP refused: %d\n",
			    err);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = qp->vqp.qp.qp_num;
	verbs_debug(&ctx->ibvctx, "RSS QP %#x over table %u\n", qp->qpn,
		    attr->rwq_ind_tbl->ind_tbl_num);
	return &qp->vqp.qp;
}
