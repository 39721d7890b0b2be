// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic's own uverbs ioctl attributes and methods (rdma/vrnic-abi.h), the
 * driver namespace of the core's objects:
 *  - DM_ALLOC answers the mmap offset of the allocation;
 *  - QUERY_CONTEXT, PD_QUERY and DM_QUERY let a process that shares a
 *    context through a duplicate of its command fd (ibv_import_device,
 *    ibv_import_pd, ibv_import_dm) learn what the creator was told.
 * Every handle is resolved by the core (UVERBS_ATTR_IDR): a handle that is
 * not a live object of the right type in this file's context fails there.
 */
#define UVERBS_MODULE_NAME vrnic_ib
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/vrnic-abi.h>

#include "vrnic.h"

/* What alloc_ucontext answered (vrnic_query_ucontext). */
#define VRNIC_UCTX_RESP_SPEC \
	UVERBS_ATTR_STRUCT(struct vrnic_alloc_ucontext_resp, max_sge)

ADD_UVERBS_ATTRIBUTES_SIMPLE(vrnic_query_context_attrs, UVERBS_OBJECT_DEVICE,
			     UVERBS_METHOD_QUERY_CONTEXT,
			     UVERBS_ATTR_PTR_OUT(VRNIC_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
						 VRNIC_UCTX_RESP_SPEC,
						 UA_MANDATORY));

static int UVERBS_HANDLER(VRNIC_IB_METHOD_PD_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_pd *ibpd = uverbs_attr_get_obj(attrs,
						 VRNIC_IB_ATTR_QUERY_PD_HANDLE);
	u32 pdn = to_vpd(ibpd)->pdn;

	return uverbs_copy_to(attrs, VRNIC_IB_ATTR_QUERY_PD_RESP_PDN, &pdn,
			      sizeof(pdn));
}

DECLARE_UVERBS_NAMED_METHOD(VRNIC_IB_METHOD_PD_QUERY,
			    UVERBS_ATTR_IDR(VRNIC_IB_ATTR_QUERY_PD_HANDLE,
					    UVERBS_OBJECT_PD,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(VRNIC_IB_ATTR_QUERY_PD_RESP_PDN,
						UVERBS_ATTR_TYPE(u32),
						UA_MANDATORY));

DECLARE_UVERBS_GLOBAL_METHODS(UVERBS_OBJECT_PD,
			      &UVERBS_METHOD(VRNIC_IB_METHOD_PD_QUERY));

static int UVERBS_HANDLER(VRNIC_IB_METHOD_DM_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm = uverbs_attr_get_obj(attrs,
						 VRNIC_IB_ATTR_QUERY_DM_HANDLE);
	u64 offset = rdma_user_mmap_get_offset(to_vdm(ibdm)->entry);
	u64 length = ibdm->length;
	int err;

	err = uverbs_copy_to(attrs, VRNIC_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,
			     &offset, sizeof(offset));
	if (err)
		return err;
	return uverbs_copy_to(attrs, VRNIC_IB_ATTR_QUERY_DM_RESP_LENGTH,
			      &length, sizeof(length));
}

DECLARE_UVERBS_NAMED_METHOD(VRNIC_IB_METHOD_DM_QUERY,
			    UVERBS_ATTR_IDR(VRNIC_IB_ATTR_QUERY_DM_HANDLE,
					    UVERBS_OBJECT_DM,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(VRNIC_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,
						UVERBS_ATTR_TYPE(u64),
						UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(VRNIC_IB_ATTR_QUERY_DM_RESP_LENGTH,
						UVERBS_ATTR_TYPE(u64),
						UA_MANDATORY));

DECLARE_UVERBS_GLOBAL_METHODS(UVERBS_OBJECT_DM,
			      &UVERBS_METHOD(VRNIC_IB_METHOD_DM_QUERY));

ADD_UVERBS_ATTRIBUTES_SIMPLE(vrnic_dm_alloc_attrs, UVERBS_OBJECT_DM,
			     UVERBS_METHOD_DM_ALLOC,
			     UVERBS_ATTR_PTR_OUT(VRNIC_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
						 UVERBS_ATTR_TYPE(u64),
						 UA_MANDATORY));

const struct uapi_definition vrnic_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE,
				&vrnic_query_context_attrs),
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(UVERBS_OBJECT_PD),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &vrnic_dm_alloc_attrs),
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(UVERBS_OBJECT_DM),
	{},
};
