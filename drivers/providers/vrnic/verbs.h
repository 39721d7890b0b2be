/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrnic verbs: control path (and, in later issues, the data path).
 */
#ifndef __VRNIC_VERBS_H__
#define __VRNIC_VERBS_H__

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "vrnic.h"

int vrnic_query_device_ctx(struct vrnic_context *ctx);
int vrnic_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int vrnic_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *port_attr);

#endif /* __VRNIC_VERBS_H__ */
