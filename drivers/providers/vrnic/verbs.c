// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic verbs: device and port queries.
 *
 * Every op that returns int returns 0 or a positive errno, as libibverbs
 * expects from providers; the ibv_cmd_* helpers already follow that rule.
 */
#include <stdio.h>

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
