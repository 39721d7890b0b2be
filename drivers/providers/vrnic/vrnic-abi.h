/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrnic command wrappers: the ibv_cmd header of each verb followed by the
 * vrnic udata payload from the project's uapi/rdma/vrnic-abi.h.
 */
#ifndef __VRNIC_ABI_H__
#define __VRNIC_ABI_H__

#include <infiniband/kern-abi.h>
#include <kernel-abi/vrnic-abi.h>
#include <rdma/vrnic-abi.h>

/*
 * The wrapper names must differ from the uapi struct names:
 * DECLARE_DRV_CMD(x, ...) defines "struct x" and "struct x_resp".
 */
DECLARE_DRV_CMD(vrnic_get_context, IB_USER_VERBS_CMD_GET_CONTEXT,
		vrnic_alloc_ucontext_cmd, vrnic_alloc_ucontext_resp);

#endif /* __VRNIC_ABI_H__ */
