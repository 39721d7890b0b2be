// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic flow steering: ibv_create_flow() rules that steer received
 * Ethernet frames to a raw packet QP (vrnic_hw_defs.h "Flow steering").
 * The rule is the kernel's object: libibverbs converts the ibv_flow_spec
 * list to the kernel's specs, and vrnic.ko turns them into the device's
 * flow key and refuses what the device cannot match. There is no vendor
 * udata, and nothing of a rule touches the data path.
 */
#include <errno.h>
#include <stdlib.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"

struct ibv_flow *vrnic_create_flow(struct ibv_qp *ibvqp,
				   struct ibv_flow_attr *flow_attr)
{
	struct ibv_flow *flow;
	int err;

	flow = calloc(1, sizeof(*flow));
	if (!flow) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_create_flow(ibvqp, flow, flow_attr, NULL, 0);
	if (err) {
		verbs_debug(verbs_get_ctx(ibvqp->context),
			    "QP %u: create_flow (type %d, %u specs) refused: %d\n",
			    ibvqp->qp_num, flow_attr->type,
			    flow_attr->num_of_specs, err);
		free(flow);
		errno = err;
		return NULL;
	}
	return flow;
}

int vrnic_destroy_flow(struct ibv_flow *flow)
{
	int err;

	err = ibv_cmd_destroy_flow(flow);
	if (err)
		return err;

	free(flow);
	return 0;
}
