// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic control-path verbs: device and port attributes, the RoCEv2 GID table
 * (kept in the device through ADD_GID/DEL_GID) and user contexts.
 */

#include <linux/bitfield.h>
#include <linux/limits.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/vrnic-abi.h>

#include "vrnic.h"

/* IBTA: the largest message a port can carry (2^31 bytes). */
#define VRNIC_MAX_MSG_SIZE	0x80000000U

/*
 * Copy at most what the user has room for, so the response can grow without
 * breaking older libraries (6.12 has no ib_respond_udata()).
 */
static int vrnic_respond_udata(struct ib_udata *udata, void *resp,
			       size_t len)
{
	return ib_copy_to_udata(udata, resp, min(len, udata->outlen));
}

/* ib_device_attr limits are int: clamp what the device reports. */
static int vrnic_attr_int(u32 val)
{
	return min_t(u32, val, INT_MAX);
}

int vrnic_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		       struct ib_udata *udata)
{
	const struct vrnic_cmd_dev_attr *da = &to_vdev(ibdev)->dev_attr;

	/* No input is defined: anything sent must be zero. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		ibdev_dbg(ibdev, "query_device: non-zero udata input\n");
		return -EINVAL;
	}

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = da->fw_version;
	attr->sys_image_guid = da->sys_image_guid;
	attr->max_mr_size = da->max_mr_size;
	attr->page_size_cap = da->page_size_cap;
	attr->vendor_id = da->vendor_id;
	attr->vendor_part_id = da->vendor_part_id;
	attr->hw_ver = da->hw_version;
	attr->max_qp = vrnic_attr_int(da->max_qp);
	attr->max_qp_wr = vrnic_attr_int(da->max_qp_wr);
	attr->max_send_sge = vrnic_attr_int(da->max_sge);
	attr->max_recv_sge = vrnic_attr_int(da->max_sge);
	attr->max_sge_rd = vrnic_attr_int(da->max_sge);
	attr->max_cq = vrnic_attr_int(da->max_cq);
	attr->max_cqe = vrnic_attr_int(da->max_cqe);
	attr->max_mr = vrnic_attr_int(da->max_mr);
	attr->max_pd = vrnic_attr_int(da->max_pd);
	attr->max_qp_rd_atom = vrnic_attr_int(da->max_qp_rd_atom);
	attr->max_qp_init_rd_atom = vrnic_attr_int(da->max_qp_rd_atom);
	attr->max_res_rd_atom = min_t(u64, (u64)da->max_qp_rd_atom * da->max_qp,
				      INT_MAX);
	attr->max_srq = vrnic_attr_int(da->max_srq);
	attr->max_srq_wr = vrnic_attr_int(da->max_srq_wr);
	attr->max_srq_sge = vrnic_attr_int(da->max_sge);
	attr->max_pkeys = 1;
	attr->atomic_cap = IB_ATOMIC_NONE;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	return 0;
}

/*
 * The IB MTU of a RoCE port is what fits in the IP MTU after the RoCEv2
 * headers. An IP MTU too small for even 256 bytes still reports IB_MTU_256:
 * 0 is not a valid enum ib_mtu.
 */
static enum ib_mtu vrnic_ib_mtu(unsigned int ip_mtu)
{
	enum ib_mtu mtu = iboe_get_mtu(ip_mtu);

	return mtu ? mtu : IB_MTU_256;
}

int vrnic_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *attr)
{
	struct vrnic_dev *vdev = to_vdev(ibdev);
	struct vrnic_cmd_port_attr pa;
	unsigned long flags;
	bool link_up, active;
	int err;

	err = vrnic_cmd_query_port(&vdev->cmdq, port, &pa);
	if (err)
		return err;

	/* The state ib_core hears about in events, so both agree. */
	spin_lock_irqsave(&vdev->event_lock, flags);
	link_up = vdev->link_up;
	active = vdev->port_active;
	spin_unlock_irqrestore(&vdev->event_lock, flags);

	/* ib_core zeroed *attr */
	attr->state = active ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = link_up ? IB_PORT_PHYS_STATE_LINK_UP :
				     IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = vrnic_ib_mtu(pa.max_mtu);
	attr->active_mtu = vrnic_ib_mtu(READ_ONCE(vdev->netdev->mtu));
	attr->gid_tbl_len = pa.gid_tbl_len;
	attr->ip_gids = true;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = VRNIC_MAX_MSG_SIZE;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;

	/* Speed and width from the net_device's ethtool link settings. */
	return ib_get_eth_speed(ibdev, port, &attr->active_speed,
				&attr->active_width);
}

int vrnic_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	/* RoCE: one entry, the default full-membership P_Key. */
	if (index)
		return -EINVAL;

	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

int vrnic_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable)
{
	struct vrnic_dev *vdev = to_vdev(ibdev);

	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = vdev->port_attr.gid_tbl_len;
	/* RoCEv2 only: RDMA_CORE_PORT_IBA_ROCE would add RoCEv1 GIDs. */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

enum rdma_link_layer vrnic_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/* Same encoding rdma-core uses to print ibv_device_attr.fw_ver. */
void vrnic_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u64 fw = to_vdev(ibdev)->dev_attr.fw_version;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u",
		 (u32)FIELD_GET(GENMASK_ULL(47, 32), fw),
		 (u32)FIELD_GET(GENMASK_ULL(31, 16), fw),
		 (u32)FIELD_GET(GENMASK_ULL(15, 0), fw));
}

/*
 * Called by ib_core's GID cache under its table mutex: sleeping in an admin
 * command is fine. The device's table mirrors ib_core's index for index.
 */
int vrnic_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrnic_dev *vdev = to_vdev(attr->device);

	/* core_cap_flags make ib_core offer RoCEv2 GIDs only. */
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	return vrnic_cmd_add_gid(&vdev->cmdq, attr->index, attr->gid.raw,
				 VRNIC_GID_TYPE_ROCE_V2);
}

int vrnic_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrnic_dev *vdev = to_vdev(attr->device);

	return vrnic_cmd_del_gid(&vdev->cmdq, attr->index);
}

int vrnic_alloc_ucontext(struct ib_ucontext *ibucontext,
			 struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibucontext->device);
	struct vrnic_alloc_ucontext_resp resp = {};
	struct vrnic_alloc_ucontext_cmd cmd = {};
	int err;

	if (udata->inlen < offsetofend(typeof(cmd), comp_mask)) {
		ibdev_dbg(&vdev->ibdev, "alloc_ucontext: udata too short (%zu)\n",
			  udata->inlen);
		return -EINVAL;
	}

	if (udata->inlen > sizeof(cmd) &&
	    !ib_is_udata_cleared(udata, sizeof(cmd),
				 udata->inlen - sizeof(cmd))) {
		ibdev_dbg(&vdev->ibdev,
			  "alloc_ucontext: unknown non-zero udata fields\n");
		return -EINVAL;
	}

	err = ib_copy_from_udata(&cmd, udata, min(sizeof(cmd), udata->inlen));
	if (err)
		return err;

	/* Nothing can be requested yet. */
	if (cmd.comp_mask) {
		ibdev_dbg(&vdev->ibdev,
			  "alloc_ucontext: unsupported comp_mask %#llx\n",
			  cmd.comp_mask);
		return -EOPNOTSUPP;
	}

	resp.comp_mask = 0;
	resp.db_page_shift = vdev->db_page_shift;
	return vrnic_respond_udata(udata, &resp, sizeof(resp));
}

void vrnic_dealloc_ucontext(struct ib_ucontext *ibucontext)
{
}

/*
 * Lets ib_uverbs tear down contexts of processes still holding the device
 * when it goes away (rmmod, unbind) instead of waiting for them to exit.
 * Nothing of ours needs revoking yet: the core zaps rdma_user_mmap entries.
 */
void vrnic_disassociate_ucontext(struct ib_ucontext *ibucontext)
{
}

enum {
	VRNIC_STAT_CMDQ_SUBMITTED,
	VRNIC_STAT_CMDQ_COMPLETED,
	VRNIC_STAT_CMDQ_ERRORS,
	VRNIC_STAT_CMDQ_TIMEOUTS,
};

static const struct rdma_stat_desc vrnic_device_stats_descs[] = {
	[VRNIC_STAT_CMDQ_SUBMITTED].name = "cmdq_submitted",
	[VRNIC_STAT_CMDQ_COMPLETED].name = "cmdq_completed",
	[VRNIC_STAT_CMDQ_ERRORS].name = "cmdq_errors",
	[VRNIC_STAT_CMDQ_TIMEOUTS].name = "cmdq_timeouts",
};

struct rdma_hw_stats *vrnic_alloc_hw_device_stats(struct ib_device *ibdev)
{
	return rdma_alloc_hw_stats_struct(vrnic_device_stats_descs,
					  ARRAY_SIZE(vrnic_device_stats_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int vrnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct vrnic_cmdq_stats *cs = &to_vdev(ibdev)->cmdq.stats;

	/* Only device-wide counters exist (no alloc_hw_port_stats). */
	if (port)
		return 0;

	stats->value[VRNIC_STAT_CMDQ_SUBMITTED] = atomic64_read(&cs->submitted);
	stats->value[VRNIC_STAT_CMDQ_COMPLETED] = atomic64_read(&cs->completed);
	stats->value[VRNIC_STAT_CMDQ_ERRORS] = atomic64_read(&cs->errors);
	stats->value[VRNIC_STAT_CMDQ_TIMEOUTS] = atomic64_read(&cs->timeouts);
	return ARRAY_SIZE(vrnic_device_stats_descs);
}
