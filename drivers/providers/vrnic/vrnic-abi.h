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
 * Verbs without a vrnic payload (alloc_pd, reg_mr, modify_qp, ...) use the
 * plain ibv_* command structs.
 */
DECLARE_DRV_CMD(vrnic_get_context, IB_USER_VERBS_CMD_GET_CONTEXT,
		vrnic_alloc_ucontext_cmd, vrnic_alloc_ucontext_resp);
/*
 * create_cq goes through ibv_cmd_create_cq_ex for both API generations:
 * libibverbs 44 exports it (ibv_cmd_create_cq_ex2 came later).
 */
DECLARE_DRV_CMD(vrnic_ibv_create_cq, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		vrnic_create_cq_cmd, vrnic_create_cq_resp);
DECLARE_DRV_CMD(vrnic_ibv_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		vrnic_resize_cq_cmd, empty);
DECLARE_DRV_CMD(vrnic_ibv_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		vrnic_create_qp_cmd, vrnic_create_qp_resp);
/*
 * create_srq and create_srq_ex both go through ibv_cmd_create_srq_ex,
 * whose command is the XSRQ one (it has room for every SRQ type); basic
 * and XRC SRQs carry the same ring.
 */
DECLARE_DRV_CMD(vrnic_ibv_create_srq, IB_USER_VERBS_CMD_CREATE_XSRQ,
		vrnic_create_srq_cmd, vrnic_create_srq_resp);
DECLARE_DRV_CMD(vrnic_ibv_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, vrnic_create_ah_resp);
DECLARE_DRV_CMD(vrnic_ibv_create_wq, IB_USER_VERBS_EX_CMD_CREATE_WQ,
		vrnic_create_wq_cmd, empty);
DECLARE_DRV_CMD(vrnic_ibv_create_rss_qp, IB_USER_VERBS_EX_CMD_CREATE_QP,
		vrnic_create_rss_qp_cmd, empty);

#endif /* __VRNIC_ABI_H__ */
