// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic verbs: device and port queries, PD, MR, AH and ring buffers.
 *
 * Every op that returns int returns 0 or a positive errno, as libibverbs
 * expects from providers; the ibv_cmd_* helpers already follow that rule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"
#include "vrnic.h"

/*
 * The kernel passes the device's fw_version through as ib_device_attr.fw_ver.
 * It is printed as major.minor.sub-minor from bits 47:32, 31:16 and 15:0, the
 * split rxe and erdma use (and what vrnic.ko's get_dev_fw_str should print so
 * that ibv_devinfo and sysfs agree).
 */
static void vrnic_format_fw_ver(char *buf, size_t len, uint64_t raw)
{
	snprintf(buf, len, "%u.%u.%u", (unsigned int)((raw >> 32) & 0xffff),
		 (unsigned int)((raw >> 16) & 0xffff),
		 (unsigned int)(raw & 0xffff));
}

int vrnic_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	int err;

	err = ibv_cmd_query_device_any(ibvctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err) {
		verbs_err(verbs_get_ctx(ibvctx),
			  "ibv_cmd_query_device_any failed: %d\n", err);
		return err;
	}

	vrnic_format_fw_ver(attr->orig_attr.fw_ver,
			    sizeof(attr->orig_attr.fw_ver), resp.base.fw_ver);
	return 0;
}

/* Cache the limits the data path checks work requests against. */
int vrnic_query_device_ctx(struct vrnic_context *ctx)
{
	struct ibv_device_attr_ex attr;
	int err;

	err = vrnic_query_device_ex(&ctx->ibvctx.context, NULL, &attr,
				    sizeof(attr));
	if (err)
		return err;

	ctx->max_qp_wr = attr.orig_attr.max_qp_wr;
	ctx->max_sge = attr.orig_attr.max_sge;
	ctx->max_cqe = attr.orig_attr.max_cqe;
	ctx->max_srq_wr = attr.orig_attr.max_srq_wr;
	ctx->max_srq_sge = attr.orig_attr.max_srq_sge;
	verbs_debug(&ctx->ibvctx, "max_qp_wr %u max_sge %u max_cqe %u\n",
		    ctx->max_qp_wr, ctx->max_sge, ctx->max_cqe);
	return 0;
}

/*
 * port_attr is the application's struct, sized by the libibverbs that loaded
 * us (44's ibv_port_attr ends before 56's active_speed_ex), so it is written
 * only by libibverbs' own ibv_cmd_query_port and never touched here.
 */
int vrnic_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *port_attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibvctx, port, port_attr, &cmd, sizeof(cmd));
}

struct ibv_pd *vrnic_alloc_pd(struct ibv_context *ibvctx)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct ibv_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_alloc_pd(ibvctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx), "alloc_pd failed: %d\n",
			    err);
		free(pd);
		errno = err;
		return NULL;
	}
	return pd;
}

int vrnic_dealloc_pd(struct ibv_pd *pd)
{
	int err;

	err = ibv_cmd_dealloc_pd(pd);
	if (err)
		return err;

	free(pd);
	return 0;
}

struct ibv_mr *vrnic_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "reg_mr len %zu access %#x failed: %d\n", len,
			    access, err);
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * The device re-registers in place (REREG_MR keeps the MR index; the key
 * byte may change), so the lkey/rkey the kernel answers with replace ours:
 * ibv_cmd_rereg_mr copies them into vmr->ibv_mr.
 */
int vrnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t len, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};

	return ibv_cmd_rereg_mr(vmr, flags, addr, len, (uintptr_t)addr, access,
				pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
}

int vrnic_dereg_mr(struct verbs_mr *vmr)
{
	int err;

	err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;

	free(vmr);
	return 0;
}

/*
 * An AH is a software address vector (vrnic_hw_defs.h: not a device
 * object). The kernel creates its own copy (ib_cm needs one in atomic
 * context) and answers with the destination MAC it resolved; we keep the
 * vrnic_av that post_send copies into every UD WQE.
 */
struct ibv_ah *vrnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct vrnic_ibv_create_ah_resp resp = {};
	struct vrnic_ah *ah;
	int err;

	/* RoCE has no LIDs: the GRH carries the whole address. */
	if (!attr->is_global) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "create_ah without GRH refused\n");
		errno = EINVAL;
		return NULL;
	}

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "create_ah failed: %d\n", err);
		free(ah);
		errno = err;
		return NULL;
	}

	/* dgid stays in network order, as the wire and the device want it. */
	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	memcpy(ah->av.dmac, resp.dmac, sizeof(ah->av.dmac));
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.flow_label = htole32(attr->grh.flow_label & 0xfffff);
	ah->av.traffic_class = attr->grh.traffic_class;
	return &ah->ibv_ah;
}

int vrnic_destroy_ah(struct ibv_ah *ibvah)
{
	int err;

	err = ibv_cmd_destroy_ah(ibvah);
	if (err)
		return err;

	free(to_vrnic_ah(ibvah));
	return 0;
}

/*
 * Queue rings live in our own memory (uapi/rdma/vrnic-abi.h): page-aligned,
 * whole pages, zeroed (so every CQE starts with phase 0 and the device's
 * first pass writes phase 1) and excluded from fork's copy-on-write, since
 * the kernel pins them for the device (ibv_dontfork_range, as libibverbs
 * does for MRs).
 */
int vrnic_buf_alloc(struct vrnic_context *ctx, struct vrnic_buf *buf,
		    size_t len)
{
	size_t pg_sz = to_vrnic_dev(ctx->ibvctx.context.device)->pg_sz;
	void *addr;
	int err;

	len = align(len, pg_sz);
	err = posix_memalign(&addr, pg_sz, len);
	if (err)
		return err;
	memset(addr, 0, len);

	err = ibv_dontfork_range(addr, len);
	if (err) {
		free(addr);
		return err;
	}

	buf->addr = addr;
	buf->len = len;
	return 0;
}

void vrnic_buf_free(struct vrnic_buf *buf)
{
	if (!buf->addr)
		return;
	ibv_dofork_range(buf->addr, buf->len);
	free(buf->addr);
	buf->addr = NULL;
	buf->len = 0;
}

/* Queues need the doorbell page, which only an interface 1.1 kernel maps. */
int vrnic_check_objects(struct vrnic_context *ctx)
{
	if (ctx->db)
		return 0;

	verbs_err(&ctx->ibvctx,
		  "vrnic.ko offers no doorbell page: CQs, QPs and SRQs need a driver with interface 1.1 objects\n");
	return EOPNOTSUPP;
}
