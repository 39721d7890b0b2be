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
#include <rdma/uverbs_ioctl.h>
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

static int vrnic_max_srq_wr(const struct vrnic_cmd_dev_attr *da)
{
	return vrnic_pow2_limit(da->max_srq_wr);
}

static int vrnic_max_cqe(const struct vrnic_cmd_dev_attr *da)
{
	return vrnic_pow2_limit(da->max_cqe);
}

/* Every QP type's largest send WQE must hold this many SGEs (UD's). */
static int vrnic_max_send_sge(const struct vrnic_cmd_dev_attr *da)
{
	return min_t(u32, da->max_sge,
		     vrnic_wqe_sges(VRNIC_WQE_MAX_SHIFT,
				    vrnic_send_wqe_hdr_len(true)));
}

static u32 vrnic_max_inline(const struct vrnic_cmd_dev_attr *da)
{
	return min_t(u32, da->max_inline_data,
		     (1U << VRNIC_WQE_MAX_SHIFT) - vrnic_send_wqe_hdr_len(true));
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
	attr->max_qp_wr = vrnic_max_qp_wr(da);
	attr->max_send_sge = vrnic_max_send_sge(da);
	attr->max_recv_sge = vrnic_max_recv_sge(da);
	attr->max_sge_rd = vrnic_max_send_sge(da);
	attr->max_cq = vrnic_attr_int(da->max_cq);
	attr->max_cqe = vrnic_max_cqe(da);
	attr->max_mr = vrnic_attr_int(da->max_mr);
	attr->max_pd = vrnic_attr_int(da->max_pd);
	attr->max_qp_rd_atom = vrnic_attr_int(da->max_qp_rd_atom);
	attr->max_qp_init_rd_atom = vrnic_attr_int(da->max_qp_rd_atom);
	attr->max_res_rd_atom = min_t(u64, (u64)da->max_qp_rd_atom * da->max_qp,
				      INT_MAX);
	attr->max_srq = vrnic_attr_int(da->max_srq);
	attr->max_srq_wr = vrnic_max_srq_wr(da);
	attr->max_srq_sge = vrnic_max_recv_sge(da);
	/* A software address vector: only memory limits the AHs. */
	attr->max_ah = INT_MAX;
	attr->max_pkeys = 1;
	/*
	 * No IBK_LOCAL_DMA_LKEY: ib_core registers a DMA MR per PD
	 * (get_dma_mr) and uses its lkey as pd->local_dma_lkey. Memory
	 * windows of both types and fast-registration MRs (page lists only,
	 * no SG_GAPS) share the MR table.
	 */
	attr->device_cap_flags = IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS;
	attr->max_mw = vrnic_attr_int(da->max_mr);
	attr->max_fast_reg_page_list_len = VRNIC_FRMR_MAX_PAGES;
	attr->cq_caps.max_cq_moderation_count = VRNIC_CQ_MOD_MAX_COUNT;
	attr->cq_caps.max_cq_moderation_period = VRNIC_CQ_MOD_MAX_PERIOD_US;
	/* IBTA 1.5: ATOMIC WRITE, FLUSH (both placement types). */
	if (da->device_caps & VRNIC_DEVICE_CAP_ATOMIC_WRITE)
		attr->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
	if (da->device_caps & VRNIC_DEVICE_CAP_FLUSH)
		attr->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL |
					  IB_DEVICE_FLUSH_PERSISTENT;
	/* Raw packet QPs take their frames through flow rules. */
	if (to_vdev(ibdev)->has_raw)
		attr->device_cap_flags |= IB_DEVICE_MANAGED_FLOW_STEERING;
	/* Receive WQs are receive-only raw packet QPs, in RSS contexts. */
	if (to_vdev(ibdev)->has_rss) {
		attr->max_wq_type_rq = vrnic_attr_int(da->max_qp);
		attr->rss_caps.supported_qpts = BIT(IB_QPT_RAW_PACKET);
		attr->rss_caps.max_rwq_indirection_tables = VRNIC_RSS_MAX;
		attr->rss_caps.max_rwq_indirection_table_size =
			VRNIC_RSS_TABLE_MAX;
	}
	if (to_vdev(ibdev)->has_xrc)
		attr->device_cap_flags |= IB_DEVICE_XRC;
	attr->kernel_cap_flags = 0;
	vrnic_odp_caps(to_vdev(ibdev), attr);
	/* Timestamp CQs count the device clock: ns of real time, 64 bits. */
	if (to_vdev(ibdev)->clock_pa) {
		attr->hca_core_clock = VRNIC_CLOCK_KHZ;
		attr->timestamp_mask = U64_MAX;
	}
	/* The device executes atomics one at a time: atomic to each other. */
	attr->atomic_cap = (da->device_caps & VRNIC_DEVICE_CAP_ATOMIC_HCA) ?
			   IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	attr->max_dm_size = to_vdev(ibdev)->dm_size;
	/* Fixed by the interface (uapi "Multicast groups"). */
	attr->max_mcast_grp = VRNIC_MCAST_MAX_GRP;
	attr->max_mcast_qp_attach = VRNIC_MCAST_MAX_QP_ATTACH;
	attr->max_total_mcast_qp_attach = VRNIC_MCAST_MAX_GRP *
					  VRNIC_MCAST_MAX_QP_ATTACH;
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
	bool link_up, active;
	int err;

	err = vrnic_cmd_query_port(vdev->cmdq, port, &pa);
	if (err)
		return err;

	/* The state ib_core hears about in events, so both agree. */
	active = vrnic_core_port_state(vdev->aux->core, &link_up);

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

	*pkey = VRNIC_PKEY_DEFAULT;
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
		 (u32)FIELD_GET(VRNIC_FW_VERSION_MAJOR_MASK, fw),
		 (u32)FIELD_GET(VRNIC_FW_VERSION_MINOR_MASK, fw),
		 (u32)FIELD_GET(VRNIC_FW_VERSION_SUB_MINOR_MASK, fw));
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

	return vrnic_cmd_add_gid(vdev->cmdq, attr->index, attr->gid.raw,
				 VRNIC_GID_TYPE_ROCE_V2);
}

int vrnic_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrnic_dev *vdev = to_vdev(attr->device);

	return vrnic_cmd_del_gid(vdev->cmdq, attr->index);
}

/*
 * The context's doorbell page: a BAR2 page of its own (page 0 is the
 * kernel's), mapped uncached through an rdma_user_mmap entry so that the
 * core can zap it on disassociate. The page index returns to the pool only
 * in mmap_free, when no mapping of it can remain.
 */
static int vrnic_ucontext_db_init(struct vrnic_dev *vdev,
				  struct vrnic_ucontext *uctx)
{
	struct vrnic_user_mmap_entry *entry;
	int page, err;

	if (vdev->db_num_pages < 2 ||
	    (1UL << vdev->db_page_shift) != PAGE_SIZE)
		return -EOPNOTSUPP;

	page = ida_alloc_range(&vdev->db_ida, 1, vdev->db_num_pages - 1,
			       GFP_KERNEL);
	if (page < 0)
		return page == -ENOSPC ? -ENOMEM : page;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		ida_free(&vdev->db_ida, page);
		return -ENOMEM;
	}
	entry->vdev = vdev;
	entry->type = VRNIC_MMAP_IO_NC;
	entry->db_page = page;
	entry->address = vdev->db_bar_start +
			 ((resource_size_t)page << vdev->db_page_shift);
	err = rdma_user_mmap_entry_insert(&uctx->ibucontext,
					  &entry->rdma_entry, PAGE_SIZE);
	if (err) {
		kfree(entry);
		ida_free(&vdev->db_ida, page);
		return err;
	}
	uctx->db_page = page;
	uctx->db_entry = &entry->rdma_entry;
	return 0;
}

static void vrnic_ucontext_db_uninit(struct vrnic_ucontext *uctx)
{
	/* mmap_free frees the entry and the page once unmapped */
	if (uctx->db_entry)
		rdma_user_mmap_entry_remove(uctx->db_entry);
	uctx->db_entry = NULL;
	if (uctx->clock_entry)
		rdma_user_mmap_entry_remove(uctx->clock_entry);
	uctx->clock_entry = NULL;
}

/*
 * The clock page, for ibv_query_rt_values_ex: every context of a device
 * with one may map it (read-only); a failure only leaves it out.
 */
static void vrnic_ucontext_clock_init(struct vrnic_dev *vdev,
				      struct vrnic_ucontext *uctx)
{
	struct vrnic_user_mmap_entry *entry;

	if (!vdev->clock_pa)
		return;
	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return;
	entry->vdev = vdev;
	entry->type = VRNIC_MMAP_CLOCK;
	entry->address = vdev->clock_pa;
	if (rdma_user_mmap_entry_insert(&uctx->ibucontext, &entry->rdma_entry,
					PAGE_SIZE)) {
		kfree(entry);
		return;
	}
	uctx->clock_entry = &entry->rdma_entry;
}

/* What alloc_ucontext answers, and QUERY_CONTEXT again for an importer. */
static void vrnic_ucontext_resp(struct vrnic_ucontext *uctx,
				struct vrnic_alloc_ucontext_resp *resp)
{
	struct vrnic_dev *vdev = to_vdev(uctx->ibucontext.device);

	memset(resp, 0, sizeof(*resp));
	resp->db_page_shift = vdev->db_page_shift;
	resp->db_page = uctx->db_page;
	if (uctx->db_entry)
		resp->db_mmap_key = rdma_user_mmap_get_offset(uctx->db_entry);
	resp->max_inline_data = vrnic_max_inline(&vdev->dev_attr);
	resp->max_sge = vrnic_max_send_sge(&vdev->dev_attr);
	if (uctx->clock_entry) {
		resp->comp_mask |= VRNIC_ALLOC_UCONTEXT_RESP_CLOCK;
		resp->clock_mmap_key =
			rdma_user_mmap_get_offset(uctx->clock_entry);
	}
}

int vrnic_alloc_ucontext(struct ib_ucontext *ibucontext,
			 struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibucontext->device);
	struct vrnic_ucontext *uctx = to_vucontext(ibucontext);
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

	err = vrnic_ucontext_db_init(vdev, uctx);
	if (err)
		return err;
	vrnic_ucontext_clock_init(vdev, uctx);

	vrnic_ucontext_resp(uctx, &resp);
	err = vrnic_respond_udata(udata, &resp, sizeof(resp));
	if (err) {
		vrnic_ucontext_db_uninit(uctx);
		return err;
	}
	atomic_inc(&vdev->res_count[VRNIC_RES_UCTX]);
	return 0;
}

/*
 * ibv_import_device(): another process (or another ibv_context of this
 * one) shares this context through a duplicate of its command fd and
 * needs what alloc_ucontext told the first. An older libvrnic's shorter
 * struct gets its prefix.
 */
int vrnic_query_ucontext(struct ib_ucontext *ibucontext,
			 struct uverbs_attr_bundle *attrs)
{
	struct vrnic_alloc_ucontext_resp resp;

	vrnic_ucontext_resp(to_vucontext(ibucontext), &resp);
	return uverbs_copy_to_struct_or_zero(attrs,
					     VRNIC_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
					     &resp, sizeof(resp));
}

void vrnic_dealloc_ucontext(struct ib_ucontext *ibucontext)
{
	struct vrnic_dev *vdev = to_vdev(ibucontext->device);

	vrnic_ucontext_db_uninit(to_vucontext(ibucontext));
	atomic_dec(&vdev->res_count[VRNIC_RES_UCTX]);
}

/*
 * Lets ib_uverbs tear down contexts of processes still holding the device
 * when it goes away (rmmod, unbind) instead of waiting for them to exit.
 * Nothing of ours needs revoking yet: the core zaps rdma_user_mmap entries.
 */
void vrnic_disassociate_ucontext(struct ib_ucontext *ibucontext)
{
}

/* ---- udata helpers (STYLE 1.7) ---- */

/*
 * Copy a driver command from udata: @min_len bytes are mandatory, bytes past
 * @size must be zero, and the struct is zero-filled first.
 */
int vrnic_udata_in(struct ib_device *ibdev, struct ib_udata *udata,
		   void *cmd, size_t size, size_t min_len, const char *verb)
{
	memset(cmd, 0, size);
	if (udata->inlen < min_len) {
		ibdev_dbg(ibdev, "%s: udata too short (%zu < %zu)\n", verb,
			  udata->inlen, min_len);
		return -EINVAL;
	}
	if (udata->inlen > size &&
	    !ib_is_udata_cleared(udata, size, udata->inlen - size)) {
		ibdev_dbg(ibdev, "%s: unknown non-zero udata fields\n", verb);
		return -EINVAL;
	}
	return ib_copy_from_udata(cmd, udata, min(size, udata->inlen));
}

/* A verb with no driver input: anything sent must be zero. */
int vrnic_udata_no_in(struct ib_device *ibdev, struct ib_udata *udata,
		      const char *verb)
{
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		ibdev_dbg(ibdev, "%s: non-zero udata input\n", verb);
		return -EINVAL;
	}
	return 0;
}

u32 vrnic_uctx(struct ib_udata *udata)
{
	struct vrnic_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct vrnic_ucontext,
					  ibucontext);

	return uctx ? uctx->db_page : 0;
}

/* Pin a user ring (CQ, QP, SRQ) and describe it: page-aligned, writable. */
int vrnic_pin_ring(struct vrnic_dev *vdev, struct vrnic_mem *mem, u64 addr,
		   u64 len)
{
	struct ib_umem *umem;
	int err;

	if (!len || !PAGE_ALIGNED(addr))
		return -EINVAL;
	umem = ib_umem_get(&vdev->ibdev, addr, len, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	err = vrnic_mem_from_umem(vdev, mem, umem, addr);
	if (err)
		ib_umem_release(umem);
	return err;
}

/* ---- mmap ---- */

int vrnic_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct vrnic_user_mmap_entry *entry;
	int err;

	rdma_entry = rdma_user_mmap_entry_get(ibucontext, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = to_vmmap(rdma_entry);

	switch (entry->type) {
	case VRNIC_MMAP_IO_NC:
		err = rdma_user_mmap_io(ibucontext, vma,
					PHYS_PFN(entry->address),
					rdma_entry->npages * PAGE_SIZE,
					pgprot_noncached(vma->vm_page_prot),
					rdma_entry);
		break;
	case VRNIC_MMAP_DM:
		err = rdma_user_mmap_io(ibucontext, vma,
					PHYS_PFN(entry->address),
					rdma_entry->npages * PAGE_SIZE,
					pgprot_writecombine(vma->vm_page_prot),
					rdma_entry);
		break;
	case VRNIC_MMAP_CLOCK:
		/* Read the clock, never write it: not even by mprotect later. */
		if (vma->vm_flags & VM_WRITE) {
			err = -EPERM;
			break;
		}
		vm_flags_clear(vma, VM_MAYWRITE);
		err = rdma_user_mmap_io(ibucontext, vma,
					PHYS_PFN(entry->address), PAGE_SIZE,
					pgprot_noncached(vma->vm_page_prot),
					rdma_entry);
		break;
	default:
		err = -EINVAL;
		break;
	}
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

void vrnic_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct vrnic_user_mmap_entry *entry = to_vmmap(rdma_entry);

	if (entry->type == VRNIC_MMAP_IO_NC)
		ida_free(&entry->vdev->db_ida, entry->db_page);
	else if (entry->type == VRNIC_MMAP_DM)
		vrnic_dm_free_pages(entry->vdev, entry->dm_first,
				    entry->dm_npages);
	kfree(entry);
}

/* ---- PD ---- */

int vrnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct vrnic_pd *pd = to_vpd(ibpd);
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "alloc_pd");
	if (err)
		return err;

	err = vrnic_cmd_alloc_pd(vdev->cmdq, vrnic_uctx(udata), &pd->pdn);
	if (err)
		return err;
	atomic_inc(&vdev->res_count[VRNIC_RES_PD]);
	return 0;
}

int vrnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct vrnic_pd *pd = to_vpd(ibpd);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DEALLOC_PD, pd->pdn);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DEALLOC_PD %u failed (%d)\n", pd->pdn,
				       err);
	atomic_dec(&vdev->res_count[VRNIC_RES_PD]);
	return 0;
}

/* ---- MR ---- */

#define VRNIC_MR_ACCESS_SUPPORTED					\
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |		\
	 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC |		\
	 IB_ACCESS_MW_BIND | IB_ZERO_BASED | IB_ACCESS_HUGETLB |	\
	 IB_ACCESS_ON_DEMAND | IB_ACCESS_FLUSH_GLOBAL |			\
	 IB_ACCESS_FLUSH_PERSISTENT | IB_ACCESS_OPTIONAL)

/* The IB access flags the device enforces, and its bit for each. */
static const struct {
	int ib;
	u32 hw;
} vrnic_access_bits[] = {
	{ IB_ACCESS_LOCAL_WRITE, VRNIC_ACCESS_LOCAL_WRITE },
	{ IB_ACCESS_REMOTE_READ, VRNIC_ACCESS_REMOTE_READ },
	{ IB_ACCESS_REMOTE_WRITE, VRNIC_ACCESS_REMOTE_WRITE },
	{ IB_ACCESS_REMOTE_ATOMIC, VRNIC_ACCESS_REMOTE_ATOMIC },
	{ IB_ACCESS_MW_BIND, VRNIC_ACCESS_MW_BIND },
	{ IB_ACCESS_FLUSH_GLOBAL, VRNIC_ACCESS_FLUSH_GLOBAL },
	{ IB_ACCESS_FLUSH_PERSISTENT, VRNIC_ACCESS_FLUSH_PERSISTENT },
};

int vrnic_access(int ib_access, u32 *access)
{
	int i;

	if (ib_access & ~VRNIC_MR_ACCESS_SUPPORTED)
		return -EOPNOTSUPP;
	/* IBTA: remote write and atomic need local write */
	if ((ib_access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(ib_access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;

	*access = 0;
	for (i = 0; i < ARRAY_SIZE(vrnic_access_bits); i++)
		if (ib_access & vrnic_access_bits[i].ib)
			*access |= vrnic_access_bits[i].hw;
	return 0;
}

/* The IB access flags of the device's VRNIC_ACCESS_* bits. */
static int vrnic_ib_access(u32 access)
{
	int i, ib_access = 0;

	for (i = 0; i < ARRAY_SIZE(vrnic_access_bits); i++)
		if (access & vrnic_access_bits[i].hw)
			ib_access |= vrnic_access_bits[i].ib;
	return ib_access;
}

/*
 * The consumer key byte of a new registration: random, so that a key
 * cannot be guessed from the keys of other registrations (a counter shared
 * by every MR of the device gave one process the next key of another). A
 * key kept after deregistration names an index the device hands out again
 * as late as it can, and then matches with a chance of 1 in 256.
 */
u8 vrnic_new_key_byte(void)
{
	return get_random_u8();
}

/* Re-registration with a new translation: never the byte it had. */
static u8 vrnic_other_key_byte(u32 old_key)
{
	u8 old = FIELD_GET(VRNIC_KEY_BYTE_MASK, old_key);

	return old + 1 + get_random_u32_below(VRNIC_KEY_BYTE_MASK);
}

struct ib_mr *vrnic_get_dma_mr(struct ib_pd *ibpd, int ib_access)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct vrnic_cmd_mr_params p = {};
	struct vrnic_mem_desc desc = {};
	struct vrnic_mr *mr;
	u32 key;
	int err;

	/* The DMA MR is local only: no unsafe global rkey. */
	if (ib_access & ~IB_ACCESS_LOCAL_WRITE)
		return ERR_PTR(-EOPNOTSUPP);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	desc.iova = cpu_to_le64(0);
	desc.length = cpu_to_le64(U64_MAX);
	desc.flags = cpu_to_le32(FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK,
					    ilog2(SZ_4K)));
	p.pdn = to_vpd(ibpd)->pdn;
	p.access = VRNIC_ACCESS_LOCAL_WRITE;
	p.flags = VRNIC_MR_FLAG_DMA;
	p.key_byte = vrnic_new_key_byte();
	p.mem = &desc;
	err = vrnic_cmd_reg_mr(vdev->cmdq, &p, &key);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->access = p.access;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	atomic_inc(&vdev->res_count[VRNIC_RES_MR]);
	return &mr->ibmr;
}

/* What every registration of new memory checks first: udata, access, length. */
static int vrnic_reg_mr_check(struct vrnic_dev *vdev, struct ib_udata *udata,
			      const char *verb, int ib_access, u64 length,
			      u32 *access)
{
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, verb);
	if (err)
		return err;
	err = vrnic_access(ib_access, access);
	if (err)
		return err;
	if (!length || length > vdev->dev_attr.max_mr_size)
		return -EINVAL;
	return 0;
}

/* Register pinned memory (user pages or a dma-buf) as an MR; owns @umem. */
static struct ib_mr *vrnic_reg_umem_mr(struct ib_pd *ibpd,
				       struct ib_umem *umem, u64 virt_addr,
				       u32 access)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct vrnic_cmd_mr_params p = {};
	struct vrnic_mr *mr;
	u32 key;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		ib_umem_release(umem);
		return ERR_PTR(-ENOMEM);
	}
	err = vrnic_mem_from_umem(vdev, &mr->mem, umem, virt_addr);
	if (err) {
		ib_umem_release(umem);
		goto err_free_mr;
	}

	p.pdn = to_vpd(ibpd)->pdn;
	p.access = access;
	p.key_byte = vrnic_new_key_byte();
	p.mem = &mr->mem.desc;
	err = vrnic_cmd_reg_mr(vdev->cmdq, &p, &key);
	if (err)
		goto err_mem_uninit;

	mr->access = access;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	atomic_inc(&vdev->res_count[VRNIC_RES_MR]);
	return &mr->ibmr;

err_mem_uninit:
	vrnic_mem_uninit(vdev, &mr->mem);
err_free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *vrnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int ib_access,
				struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct ib_umem *umem;
	u32 access;
	int err;

	/* Implicit ODP: the whole address space, not one MR's length. */
	err = vrnic_reg_mr_check(vdev, udata, "reg_user_mr", ib_access,
				 (ib_access & IB_ACCESS_ON_DEMAND) && !start &&
				 length == U64_MAX ? 1 : length, &access);
	if (err)
		return ERR_PTR(err);
	if (ib_access & IB_ACCESS_ON_DEMAND)
		return vrnic_reg_user_mr_odp(ibpd, start, length, virt_addr,
					     ib_access, access);

	umem = ib_umem_get(&vdev->ibdev, start, length, ib_access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);
	return vrnic_reg_umem_mr(ibpd, umem, virt_addr, access);
}

/*
 * An MR over [offset, offset + length) of a dma-buf: the buffer is attached
 * to the device and pinned for the MR's life (ib_umem_dmabuf_get_pinned),
 * and the DMA addresses its exporter maps for the device become the MR's
 * translation, exactly as pinned user pages would. The exporter may be any
 * dma-buf a device can import: the system dma-heap, udmabuf.
 */
struct ib_mr *vrnic_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 virt_addr, int fd,
				       int ib_access,
				       struct uverbs_attr_bundle *attrs)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct ib_umem_dmabuf *umem_dmabuf;
	u32 access;
	int err;

	err = vrnic_reg_mr_check(vdev, &attrs->driver_udata,
				 "reg_user_mr_dmabuf", ib_access, length,
				 &access);
	if (err)
		return ERR_PTR(err);

	umem_dmabuf = ib_umem_dmabuf_get_pinned(&vdev->ibdev, offset, length,
						fd, ib_access);
	if (IS_ERR(umem_dmabuf))
		return ERR_CAST(umem_dmabuf);
	return vrnic_reg_umem_mr(ibpd, &umem_dmabuf->umem, virt_addr, access);
}

/*
 * In place (the MR keeps its index, returns NULL): the device swaps the
 * translation, PD and/or access atomically. A new translation gets a new
 * key byte, so a peer still holding the old rkey cannot reach the new
 * pages; a change of PD or access only keeps the keys, as consumers expect
 * (rdma-core's test_mr re-registers the access and reuses the rkey it
 * already sent). On failure nothing changes.
 */
struct ib_mr *vrnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 virt_addr, int ib_access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibmr->device);
	struct vrnic_mr *mr = to_vmr(ibmr);
	struct vrnic_cmd_mr_params p = {};
	struct vrnic_mem new_mem = {};
	u32 access = mr->access, key;
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "rereg_user_mr");
	if (err)
		return ERR_PTR(err);
	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	/* An ODP MR's translation is the driver's (vrnic_odp.c), not rereg's. */
	if (mr->odp || ((flags & IB_MR_REREG_ACCESS) &&
			(ib_access & IB_ACCESS_ON_DEMAND)))
		return ERR_PTR(-EOPNOTSUPP);
	if (!flags)
		return NULL;

	if (flags & IB_MR_REREG_ACCESS) {
		err = vrnic_access(ib_access, &access);
		if (err)
			return ERR_PTR(err);
		p.flags |= VRNIC_MR_REREG_ACCESS;
	} else {
		ib_access = vrnic_ib_access(access);
	}

	if (flags & IB_MR_REREG_TRANS) {
		struct ib_umem *umem;

		if (!length || length > vdev->dev_attr.max_mr_size)
			return ERR_PTR(-EINVAL);
		umem = ib_umem_get(&vdev->ibdev, start, length, ib_access);
		if (IS_ERR(umem))
			return ERR_CAST(umem);
		err = vrnic_mem_from_umem(vdev, &new_mem, umem, virt_addr);
		if (err) {
			ib_umem_release(umem);
			return ERR_PTR(err);
		}
		p.flags |= VRNIC_MR_REREG_TRANS;
		p.mem = &new_mem.desc;
	}

	p.handle = ibmr->lkey;
	p.pdn = (flags & IB_MR_REREG_PD) ? to_vpd(ibpd)->pdn :
					    to_vpd(ibmr->pd)->pdn;
	if (flags & IB_MR_REREG_PD)
		p.flags |= VRNIC_MR_REREG_PD;
	p.access = access;
	p.key_byte = (flags & IB_MR_REREG_TRANS) ?
		     vrnic_other_key_byte(ibmr->lkey) :
		     FIELD_GET(VRNIC_KEY_BYTE_MASK, ibmr->lkey);
	err = vrnic_cmd_rereg_mr(vdev->cmdq, &p, &key);
	if (err) {
		vrnic_mem_uninit(vdev, &new_mem);
		return ERR_PTR(err);
	}

	if (flags & IB_MR_REREG_TRANS) {
		/* The device no longer uses the old tables or pages. */
		vrnic_mem_uninit(vdev, &mr->mem);
		mr->mem = new_mem;
	}
	mr->access = access;
	ibmr->lkey = key;
	ibmr->rkey = key;
	return NULL;
}

int vrnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibmr->device);
	struct vrnic_mr *mr = to_vmr(ibmr);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DEREG_MR, ibmr->lkey);
	/*
	 * Memory windows are still bound to it: the device keeps the MR, so
	 * its pages must stay pinned (IBTA: deregistration fails).
	 */
	if (err == -EBUSY)
		return err;
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DEREG_MR %#x failed (%d)\n",
				       ibmr->lkey, err);
	if (mr->odp)
		vrnic_odp_dereg(vdev, mr);
	vrnic_mem_uninit(vdev, &mr->mem);
	vrnic_kbuf_free(vdev, &mr->pbl);
	atomic_dec(&vdev->res_count[VRNIC_RES_MR]);
	kfree(mr);
	return 0;
}

/*
 * An MR over device memory (ibv_reg_dm_mr): zero-based (the core insists)
 * and bounded by the DM allocation (the core checked offset and length
 * against it), so the device gets the BAR5 offset and the length. A
 * zero-length one is valid (as on mlx5): only zero-length accesses pass.
 */
struct ib_mr *vrnic_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct vrnic_cmd_mr_params p = {};
	struct vrnic_mr *mr;
	u32 access, key;
	int err;

	err = vrnic_access(attr->access_flags, &access);
	if (err)
		return ERR_PTR(err);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->mem.desc.iova = cpu_to_le64(0);
	mr->mem.desc.length = cpu_to_le64(attr->length);
	mr->mem.desc.pages[0] = cpu_to_le64(to_vdm(ibdm)->offset +
					    attr->offset);
	p.pdn = to_vpd(ibpd)->pdn;
	p.access = access;
	p.flags = VRNIC_MR_FLAG_DEVICE_MEM;
	p.key_byte = vrnic_new_key_byte();
	p.mem = &mr->mem.desc;
	err = vrnic_cmd_reg_mr(vdev->cmdq, &p, &key);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->access = access;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	atomic_inc(&vdev->res_count[VRNIC_RES_MR]);
	return &mr->ibmr;
}

/*
 * Memory windows: the device allocates a key in the MR table; binding is
 * a send WQE (user QPs only: the provider posts it), unbinding a
 * LOCAL_INV or a received SEND with Invalidate (type 2).
 */
int vrnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibmw->device);
	u8 type;
	u32 key;
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "alloc_mw");
	if (err)
		return err;
	switch (ibmw->type) {
	case IB_MW_TYPE_1:
		type = VRNIC_MW_TYPE_1;
		break;
	case IB_MW_TYPE_2:
		type = VRNIC_MW_TYPE_2;
		break;
	default:
		return -EINVAL;
	}
	err = vrnic_cmd_alloc_mw(vdev->cmdq, to_vpd(ibmw->pd)->pdn, type,
				 vrnic_new_key_byte(), &key);
	if (err)
		return err;
	ibmw->rkey = key;
	atomic_inc(&vdev->res_count[VRNIC_RES_MW]);
	return 0;
}

int vrnic_dealloc_mw(struct ib_mw *ibmw)
{
	struct vrnic_dev *vdev = to_vdev(ibmw->device);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DEALLOC_MW, ibmw->rkey);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DEALLOC_MW %#x failed (%d)\n",
				       ibmw->rkey, err);
	atomic_dec(&vdev->res_count[VRNIC_RES_MW]);
	return 0;
}

/* ---- AH: a software address vector, created in atomic context ---- */

static int vrnic_av_from_ah_attr(struct vrnic_dev *vdev, struct vrnic_av *av,
				 const struct rdma_ah_attr *ah_attr)
{
	const struct ib_global_route *grh;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah_attr);
	if (grh->sgid_index >= vdev->port_attr.gid_tbl_len)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	ether_addr_copy(av->dmac, ah_attr->roce.dmac);
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->flow_label = cpu_to_le32(grh->flow_label & IB_GRH_FLOWLABEL_MASK);
	av->traffic_class = grh->traffic_class;
	return 0;
}

int vrnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibah->device);
	struct vrnic_ah *ah = to_vah(ibah);
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "create_ah");
	if (err)
		return err;
	err = vrnic_av_from_ah_attr(vdev, &ah->av, init_attr->ah_attr);
	if (err)
		return err;

	if (udata) {
		struct vrnic_create_ah_resp resp = {};

		/* ib_core resolved it (ib_resolve_eth_dmac) for user AHs. */
		ether_addr_copy(resp.dmac, ah->av.dmac);
		err = vrnic_respond_udata(udata, &resp, sizeof(resp));
		if (err)
			return err;
	}
	atomic_inc(&vdev->res_count[VRNIC_RES_AH]);
	return 0;
}

int vrnic_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&to_vdev(ibah->device)->res_count[VRNIC_RES_AH]);
	return 0;
}

/* ---- CQ ---- */

/* Kernel ring of 2^log_depth CQEs + dbrec, described in @mem. */
static int vrnic_cq_kring_alloc(struct vrnic_dev *vdev, struct vrnic_kbuf *kbuf,
				struct vrnic_mem *mem, u32 log_depth)
{
	int err;

	err = vrnic_kbuf_alloc(vdev, kbuf, vrnic_cq_ring_len(0, log_depth));
	if (err)
		return err;
	err = vrnic_mem_from_kbuf(vdev, mem, kbuf);
	if (err)
		vrnic_kbuf_free(vdev, kbuf);
	return err;
}

static void vrnic_cq_set_kring(struct vrnic_cq *cq, u32 log_depth)
{
	cq->log_depth = log_depth;
	cq->depth = 1U << log_depth;
	cq->ring = cq->kbuf.va;
	cq->dbrec = cq->kbuf.va + ((size_t)VRNIC_CQE_SIZE << log_depth);
	cq->ci = 0;
}

/*
 * Validate a user CQ ring command (create and resize share the layout)
 * for a CQ of these flags.
 */
static int vrnic_cq_user_ring(struct vrnic_dev *vdev, int cqe, u64 comp_mask,
			      u32 flags, u64 buf_addr, u32 buf_len,
			      u32 log_depth, struct vrnic_mem *mem)
{
	u32 max_log = ilog2(vrnic_max_cqe(&vdev->dev_attr));

	if (comp_mask)
		return -EOPNOTSUPP;
	if (log_depth < 1 || log_depth > max_log ||
	    (1U << log_depth) < (u32)cqe ||
	    buf_len < vrnic_cq_ring_len(flags, log_depth)) {
		ibdev_dbg(&vdev->ibdev,
			  "cq: bad ring (log_depth %u, cqe %d, buf_len %u)\n",
			  log_depth, cqe, buf_len);
		return -EINVAL;
	}
	return vrnic_pin_ring(vdev, mem, buf_addr, buf_len);
}

static u32 vrnic_cq_log_depth(int cqe)
{
	return max_t(u32, 1, order_base_2(cqe));
}

int vrnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct vrnic_dev *vdev = to_vdev(ibcq->device);
	struct vrnic_cq *cq = to_vcq(ibcq);
	struct vrnic_cmd_cq_params p = {};
	struct vrnic_create_cq_cmd cmd;
	u32 log_depth;
	int err;

	/* Completion timestamps are for user CQs (ibv_create_cq_ex). */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION ||
	    (attr->flags && (!udata || !vdev->clock_pa)))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > vrnic_max_cqe(&vdev->dev_attr) ||
	    attr->comp_vector >= vdev->num_eqs)
		return -EINVAL;

	spin_lock_init(&cq->lock);
	cq->vector = attr->comp_vector;
	if (udata) {
		err = vrnic_udata_in(&vdev->ibdev, udata, &cmd, sizeof(cmd),
				     offsetofend(typeof(cmd), log_depth),
				     "create_cq");
		if (err)
			return err;
		if ((cmd.flags & ~VRNIC_CQ_FLAG_TIMESTAMP) ||
		    ((cmd.flags & VRNIC_CQ_FLAG_TIMESTAMP) && !vdev->clock_pa)) {
			ibdev_dbg(&vdev->ibdev, "create_cq: flags %#x\n",
				  cmd.flags);
			return -EOPNOTSUPP;
		}
		if (cmd.reserved_e0)
			return -EINVAL;
		cq->flags = cmd.flags;
		err = vrnic_cq_user_ring(vdev, attr->cqe, cmd.comp_mask,
					 cmd.flags, cmd.buf_addr, cmd.buf_len,
					 cmd.log_depth, &cq->mem);
		if (err)
			return err;
		log_depth = cmd.log_depth;
		cq->log_depth = log_depth;
		cq->depth = 1U << log_depth;
	} else {
		log_depth = vrnic_cq_log_depth(attr->cqe);
		err = vrnic_cq_kring_alloc(vdev, &cq->kbuf, &cq->mem,
					   log_depth);
		if (err)
			return err;
		vrnic_cq_set_kring(cq, log_depth);
		cq->kernel = true;
	}

	p.eqn = vdev->eqs[cq->vector].eqn;
	p.log_depth = log_depth;
	p.uctx = vrnic_uctx(udata);
	p.flags = cq->flags;
	p.mem = &cq->mem.desc;
	err = vrnic_cmd_create_cq(vdev->cmdq, &p, &cq->cqn);
	if (err)
		goto err_free_ring;

	if (udata) {
		struct vrnic_create_cq_resp resp = { .cqn = cq->cqn };

		err = vrnic_respond_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_destroy;
	}

	err = xa_err(xa_store(&vdev->cq_xa, cq->cqn, cq, GFP_KERNEL));
	if (err)
		goto err_destroy;

	ibcq->cqe = cq->depth;
	atomic_inc(&vdev->res_count[VRNIC_RES_CQ]);
	return 0;

err_destroy:
	vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_CQ, cq->cqn);
err_free_ring:
	vrnic_mem_uninit(vdev, &cq->mem);
	vrnic_kbuf_free(vdev, &cq->kbuf);
	return err;
}

static int vrnic_resize_kernel_cq(struct vrnic_dev *vdev, struct vrnic_cq *cq,
				  u32 log_depth)
{
	struct vrnic_cmd_cq_params p = {};
	struct vrnic_kbuf kbuf = {}, old_kbuf;
	struct vrnic_mem mem = {}, old_mem;
	unsigned long flags;
	int err;

	err = vrnic_cq_kring_alloc(vdev, &kbuf, &mem, log_depth);
	if (err)
		return err;

	/*
	 * The device copies what lies between dbrec.ci and its producer:
	 * publish ci and keep pollers out until the new ring is in place.
	 */
	spin_lock_irqsave(&cq->lock, flags);
	WRITE_ONCE(cq->dbrec->ci, cpu_to_le32(cq->ci));
	cq->resizing = true;
	spin_unlock_irqrestore(&cq->lock, flags);

	p.eqn = vdev->eqs[cq->vector].eqn;
	p.log_depth = log_depth;
	p.uctx = 0;
	p.mem = &mem.desc;
	err = vrnic_cmd_resize_cq(vdev->cmdq, cq->cqn, &p);

	spin_lock_irqsave(&cq->lock, flags);
	if (!err) {
		old_kbuf = cq->kbuf;
		old_mem = cq->mem;
		cq->kbuf = kbuf;
		cq->mem = mem;
		vrnic_cq_set_kring(cq, log_depth);
		kbuf = old_kbuf;
		mem = old_mem;
	}
	cq->resizing = false;
	spin_unlock_irqrestore(&cq->lock, flags);

	/* The new ring on failure, the old one on success. */
	vrnic_mem_uninit(vdev, &mem);
	vrnic_kbuf_free(vdev, &kbuf);
	return err;
}

int vrnic_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibcq->device);
	struct vrnic_cq *cq = to_vcq(ibcq);
	struct vrnic_cmd_cq_params p = {};
	struct vrnic_resize_cq_cmd cmd;
	struct vrnic_mem mem = {};
	int err;

	if (cqe < 1 || cqe > vrnic_max_cqe(&vdev->dev_attr))
		return -EINVAL;

	if (!udata) {
		err = vrnic_resize_kernel_cq(vdev, cq, vrnic_cq_log_depth(cqe));
		if (!err)
			ibcq->cqe = cq->depth;
		return err;
	}

	err = vrnic_udata_in(&vdev->ibdev, udata, &cmd, sizeof(cmd),
			     offsetofend(typeof(cmd), log_depth), "resize_cq");
	if (err)
		return err;
	err = vrnic_cq_user_ring(vdev, cqe, cmd.comp_mask, cq->flags,
				 cmd.buf_addr, cmd.buf_len, cmd.log_depth, &mem);
	if (err)
		return err;

	p.eqn = vdev->eqs[cq->vector].eqn;
	p.log_depth = cmd.log_depth;
	p.uctx = vrnic_uctx(udata);
	p.flags = cq->flags;
	p.mem = &mem.desc;
	err = vrnic_cmd_resize_cq(vdev->cmdq, cq->cqn, &p);
	if (err) {
		vrnic_mem_uninit(vdev, &mem);
		return err;
	}
	vrnic_mem_uninit(vdev, &cq->mem);
	cq->mem = mem;
	cq->log_depth = cmd.log_depth;
	cq->depth = 1U << cmd.log_depth;
	ibcq->cqe = cq->depth;
	return 0;
}

/*
 * ibv_modify_cq and ib_core's DIM: events every cq_count completions or
 * cq_period us after the first. The device refuses a count without a
 * period (the tail of a burst would wait for ever): give it the largest.
 */
int vrnic_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct vrnic_dev *vdev = to_vdev(ibcq->device);

	if (cq_count > 1 && !cq_period)
		cq_period = VRNIC_CQ_MOD_MAX_PERIOD_US;
	return vrnic_cmd_modify_cq(vdev->cmdq, to_vcq(ibcq)->cqn, cq_count,
				   cq_period);
}

int vrnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibcq->device);
	struct vrnic_cq *cq = to_vcq(ibcq);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_CQ, cq->cqn);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DESTROY_CQ %u failed (%d)\n", cq->cqn,
				       err);
	/* Only if still ours: the device may have reused the number. */
	xa_cmpxchg(&vdev->cq_xa, cq->cqn, cq, NULL, GFP_KERNEL);
	vrnic_sync_cq_irqs(vdev, cq);
	vrnic_mem_uninit(vdev, &cq->mem);
	vrnic_kbuf_free(vdev, &cq->kbuf);
	atomic_dec(&vdev->res_count[VRNIC_RES_CQ]);
	return 0;
}

/* ---- QP ---- */

static void vrnic_lock_cqs(struct vrnic_cq *a, struct vrnic_cq *b,
			   unsigned long *flags)
	__acquires(&a->lock) __acquires(&b->lock)
{
	if (a == b) {
		spin_lock_irqsave(&a->lock, *flags);
		__acquire(&b->lock);
		return;
	}
	if (a > b)
		swap(a, b);
	spin_lock_irqsave(&a->lock, *flags);
	spin_lock_nested(&b->lock, SINGLE_DEPTH_NESTING);
}

static void vrnic_unlock_cqs(struct vrnic_cq *a, struct vrnic_cq *b,
			     unsigned long *flags)
	__releases(&a->lock) __releases(&b->lock)
{
	if (a == b) {
		__release(&b->lock);
		spin_unlock_irqrestore(&a->lock, *flags);
		return;
	}
	if (a > b)
		swap(a, b);
	spin_unlock(&b->lock);
	spin_unlock_irqrestore(&a->lock, *flags);
}

/*
 * A kernel QP is leaving the device's view (destroy) or going to RESET:
 * drop its pending CQEs and, if @unpublish, its xarray entry, under the
 * locks of its CQs (poll_cq looks QPs up under them); restart its rings.
 */
static void vrnic_qp_forget(struct vrnic_dev *vdev, struct vrnic_qp *qp,
			    bool unpublish)
{
	struct vrnic_cq *scq, *rcq;
	unsigned long flags;

	/* No CQs, no rings, in no kernel CQ (vrnic_xrc.c): only unpublish. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		if (unpublish)
			xa_cmpxchg(&vdev->qp_xa, qp->qpn, qp, NULL, GFP_KERNEL);
		return;
	}
	scq = to_vcq(qp->ibqp.send_cq);
	/* An XRC initiator has no receive side. */
	rcq = qp->ibqp.recv_cq ? to_vcq(qp->ibqp.recv_cq) : scq;
	vrnic_lock_cqs(scq, rcq, &flags);
	if (unpublish)
		xa_cmpxchg(&vdev->qp_xa, qp->qpn, qp, NULL, GFP_ATOMIC);
	vrnic_cq_clean(scq, qp->qpn);
	if (rcq != scq)
		vrnic_cq_clean(rcq, qp->qpn);
	if (qp->kernel) {
		spin_lock(&qp->sq_lock);
		qp->sq.pi = 0;
		qp->sq.ci = 0;
		spin_unlock(&qp->sq_lock);
		spin_lock(&qp->rq_lock);
		qp->rq.pi = 0;
		qp->rq.ci = 0;
		spin_unlock(&qp->rq_lock);
	}
	vrnic_unlock_cqs(scq, rcq, &flags);
}

static int vrnic_qp_type(enum ib_qp_type type, u8 *vtype)
{
	switch (type) {
	case IB_QPT_RC:
		*vtype = VRNIC_QP_TYPE_RC;
		return 0;
	case IB_QPT_UC:
		*vtype = VRNIC_QP_TYPE_UC;
		return 0;
	case IB_QPT_UD:
		*vtype = VRNIC_QP_TYPE_UD;
		return 0;
	case IB_QPT_GSI:
		*vtype = VRNIC_QP_TYPE_GSI;
		return 0;
	case IB_QPT_RAW_PACKET:
		*vtype = VRNIC_QP_TYPE_RAW_PACKET;
		return 0;
	case IB_QPT_XRC_INI:
		*vtype = VRNIC_QP_TYPE_XRC_INI;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* UD and GSI send WQEs carry the address segment. */
static bool vrnic_qp_is_ud(enum ib_qp_type type)
{
	return type == IB_QPT_UD || type == IB_QPT_GSI;
}

/* Receives go to an SRQ, or (an XRC initiator) there are none: no RQ. */
static bool vrnic_qp_no_rq(const struct ib_qp_init_attr *init_attr)
{
	return init_attr->srq || init_attr->qp_type == IB_QPT_XRC_INI;
}

/* Check the requested capabilities against the device's limits. */
static int vrnic_qp_check_cap(struct vrnic_dev *vdev,
			      const struct ib_qp_init_attr *init_attr)
{
	const struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	const struct ib_qp_cap *cap = &init_attr->cap;

	if (cap->max_send_wr > vrnic_max_qp_wr(da) ||
	    cap->max_send_sge > vrnic_max_send_sge(da) ||
	    cap->max_inline_data > vrnic_max_inline(da))
		return -EINVAL;
	if (!vrnic_qp_no_rq(init_attr) &&
	    (cap->max_recv_wr > vrnic_max_qp_wr(da) ||
	     cap->max_recv_sge > vrnic_max_recv_sge(da)))
		return -EINVAL;
	return 0;
}

/* What a send WQE of 2^shift bytes grants, clamped to the device's limits */
static void vrnic_qp_grant(struct vrnic_dev *vdev, struct vrnic_qp *qp,
			   struct vrnic_cmd_qp_params *p, bool no_rq)
{
	const struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	u32 hdr = vrnic_send_wqe_hdr_len(vrnic_qp_is_ud(qp->ibqp.qp_type));
	u32 sq_room = (1U << p->sq_wqe_shift) - hdr;

	p->max_send_sge = min_t(u32, vrnic_wqe_sges(p->sq_wqe_shift, hdr),
				vrnic_max_send_sge(da));
	p->max_inline = min_t(u32, sq_room, vrnic_max_inline(da));
	qp->cap.max_send_wr = 1U << p->sq_log_depth;
	qp->cap.max_send_sge = p->max_send_sge;
	qp->cap.max_inline_data = p->max_inline;
	if (no_rq) {
		p->max_recv_sge = 0;
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	} else {
		p->max_recv_sge = vrnic_rq_wqe_sges(da, p->rq_wqe_shift);
		qp->cap.max_recv_wr = 1U << p->rq_log_depth;
		qp->cap.max_recv_sge = p->max_recv_sge;
	}
}

static int vrnic_wq_init(struct vrnic_wq *wq, void *buf, u8 log_depth,
			 u8 wqe_shift, u32 max_sge)
{
	wq->buf = buf;
	wq->depth = 1U << log_depth;
	wq->log_depth = log_depth;
	wq->wqe_shift = wqe_shift;
	wq->max_sge = max_sge;
	wq->pi = 0;
	wq->ci = 0;
	wq->wrid = kvcalloc(wq->depth, sizeof(*wq->wrid), GFP_KERNEL);
	return wq->wrid ? 0 : -ENOMEM;
}

static int vrnic_create_kernel_qp(struct vrnic_dev *vdev, struct vrnic_qp *qp,
				  struct ib_qp_init_attr *init_attr,
				  struct vrnic_cmd_qp_params *p)
{
	const struct ib_qp_cap *cap = &init_attr->cap;
	bool no_rq = vrnic_qp_no_rq(init_attr);
	bool ud = vrnic_qp_is_ud(init_attr->qp_type);
	u32 sq_bytes, rq_bytes = 0;
	int err;

	qp->kernel = true;
	qp->sq_hdr = vrnic_send_wqe_hdr_len(ud);
	p->sq_log_depth = max_t(u32, 1, order_base_2(cap->max_send_wr));
	p->sq_wqe_shift = vrnic_wqe_shift(vrnic_send_wqe_len(ud,
							     cap->max_send_sge,
							     cap->max_inline_data),
					  VRNIC_SQ_WQE_MIN_SHIFT);
	if (!no_rq) {
		p->rq_log_depth = max_t(u32, 1,
					order_base_2(cap->max_recv_wr));
		p->rq_wqe_shift =
			vrnic_wqe_shift(vrnic_recv_wqe_len(cap->max_recv_sge),
					VRNIC_RQ_WQE_MIN_SHIFT);
	}
	if (p->sq_wqe_shift > VRNIC_WQE_MAX_SHIFT ||
	    p->rq_wqe_shift > VRNIC_WQE_MAX_SHIFT)
		return -EINVAL;
	vrnic_qp_grant(vdev, qp, p, no_rq);

	sq_bytes = 1U << (p->sq_log_depth + p->sq_wqe_shift);
	if (!no_rq) {
		p->rq_offset = ALIGN(sq_bytes, VRNIC_RING_ALIGN);
		rq_bytes = 1U << (p->rq_log_depth + p->rq_wqe_shift);
	}
	err = vrnic_kbuf_alloc(vdev, &qp->kbuf, sq_bytes + rq_bytes);
	if (err)
		return err;
	err = vrnic_mem_from_kbuf(vdev, &qp->mem, &qp->kbuf);
	if (err)
		goto err_free_kbuf;

	qp->max_inline = p->max_inline;
	qp->sq_sig_all = init_attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	err = vrnic_wq_init(&qp->sq, qp->kbuf.va, p->sq_log_depth,
			    p->sq_wqe_shift, p->max_send_sge);
	if (err)
		goto err_mem_uninit;
	if (!no_rq) {
		err = vrnic_wq_init(&qp->rq, qp->kbuf.va + p->rq_offset,
				    p->rq_log_depth, p->rq_wqe_shift,
				    p->max_recv_sge);
		if (err)
			goto err_free_sq;
	}
	return 0;

err_free_sq:
	kvfree(qp->sq.wrid);
err_mem_uninit:
	vrnic_mem_uninit(vdev, &qp->mem);
err_free_kbuf:
	vrnic_kbuf_free(vdev, &qp->kbuf);
	return err;
}

static int vrnic_create_user_qp(struct vrnic_dev *vdev, struct vrnic_qp *qp,
				struct ib_qp_init_attr *init_attr,
				struct vrnic_cmd_qp_params *p,
				struct ib_udata *udata)
{
	const struct ib_qp_cap *cap = &init_attr->cap;
	u32 max_log = ilog2(vrnic_max_qp_wr(&vdev->dev_attr));
	bool ud = vrnic_qp_is_ud(init_attr->qp_type);
	struct vrnic_create_qp_cmd cmd;
	bool no_rq = vrnic_qp_no_rq(init_attr);
	u64 sq_bytes, end;
	int err;

	err = vrnic_udata_in(&vdev->ibdev, udata, &cmd, sizeof(cmd),
			     offsetofend(typeof(cmd), rq_wqe_shift),
			     "create_qp");
	if (err)
		return err;
	if (cmd.comp_mask)
		return -EOPNOTSUPP;
	if (cmd.reserved_e0)
		return -EINVAL;

	if (cmd.sq_log_depth < 1 || cmd.sq_log_depth > max_log ||
	    (1U << cmd.sq_log_depth) < cap->max_send_wr ||
	    cmd.sq_wqe_shift < VRNIC_SQ_WQE_MIN_SHIFT ||
	    cmd.sq_wqe_shift > VRNIC_WQE_MAX_SHIFT ||
	    (1ULL << cmd.sq_wqe_shift) <
	    vrnic_send_wqe_len(ud, cap->max_send_sge, cap->max_inline_data))
		goto err_inval;
	sq_bytes = 1ULL << (cmd.sq_log_depth + cmd.sq_wqe_shift);
	end = sq_bytes;
	if (no_rq) {
		if (cmd.rq_log_depth)
			goto err_inval;
	} else {
		if (!vrnic_user_rq_ok(&vdev->dev_attr, cmd.rq_log_depth,
				      cmd.rq_wqe_shift, cap->max_recv_wr,
				      cap->max_recv_sge) ||
		    cmd.rq_offset < sq_bytes ||
		    !IS_ALIGNED(cmd.rq_offset, VRNIC_RING_ALIGN))
			goto err_inval;
		end = (u64)cmd.rq_offset +
		      (1ULL << (cmd.rq_log_depth + cmd.rq_wqe_shift));
	}
	if (cmd.buf_len < end)
		goto err_inval;

	p->sq_log_depth = cmd.sq_log_depth;
	p->sq_wqe_shift = cmd.sq_wqe_shift;
	p->rq_log_depth = cmd.rq_log_depth;
	p->rq_wqe_shift = no_rq ? 0 : cmd.rq_wqe_shift;
	p->rq_offset = no_rq ? 0 : cmd.rq_offset;
	vrnic_qp_grant(vdev, qp, p, no_rq);
	return vrnic_pin_ring(vdev, &qp->mem, cmd.buf_addr, cmd.buf_len);

err_inval:
	ibdev_dbg(&vdev->ibdev,
		  "create_qp: bad rings (sq %u/%u, rq %u/%u, rq_offset %u, buf_len %u)\n",
		  cmd.sq_log_depth, cmd.sq_wqe_shift, cmd.rq_log_depth,
		  cmd.rq_wqe_shift, cmd.rq_offset, cmd.buf_len);
	return -EINVAL;
}

static void vrnic_qp_free_rings(struct vrnic_dev *vdev, struct vrnic_qp *qp)
{
	vrnic_mem_uninit(vdev, &qp->mem);
	vrnic_kbuf_free(vdev, &qp->kbuf);
	kvfree(qp->sq.wrid);
	kvfree(qp->rq.wrid);
	qp->sq.wrid = NULL;
	qp->rq.wrid = NULL;
}

int vrnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_qp *qp = to_vqp(ibqp);
	struct vrnic_cmd_qp_params p = {};
	int err;

	if (init_attr->rwq_ind_tbl)
		return vrnic_create_rss_qp(vdev, qp, init_attr, udata);
	if (init_attr->qp_type == IB_QPT_XRC_TGT)
		return vrnic_create_xrc_tgt_qp(vdev, qp, init_attr);
	err = vrnic_qp_type(init_attr->qp_type, &p.type);
	if (err)
		return err;
	if (init_attr->create_flags)
		return -EOPNOTSUPP;
	if (init_attr->qp_type == IB_QPT_GSI && udata)
		return -EINVAL;
	/* User only (ib_uverbs requires CAP_NET_RAW), always with an RQ. */
	if (init_attr->qp_type == IB_QPT_RAW_PACKET) {
		if (!vdev->has_raw || !udata)
			return -EOPNOTSUPP;
		if (init_attr->srq)
			return -EINVAL;
	}
	/*
	 * User only: the kernel's ib_send_wr cannot name the remote XRC SRQ.
	 * No receive side: no receive CQ (ib_uverbs passes none), no SRQ, no
	 * receive capacities.
	 */
	if (init_attr->qp_type == IB_QPT_XRC_INI) {
		if (!vdev->has_xrc || !udata)
			return -EOPNOTSUPP;
		if (init_attr->srq || init_attr->cap.max_recv_wr ||
		    init_attr->cap.max_recv_sge)
			return -EINVAL;
	} else if (!init_attr->recv_cq) {
		return -EINVAL;
	}
	if (!init_attr->send_cq)
		return -EINVAL;
	err = vrnic_qp_check_cap(vdev, init_attr);
	if (err)
		return err;

	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	qp->state = IB_QPS_RESET;
	vrnic_odp_faults_init(qp->odp_fault, vdev, &qp->qpn);

	if (udata)
		err = vrnic_create_user_qp(vdev, qp, init_attr, &p, udata);
	else
		err = vrnic_create_kernel_qp(vdev, qp, init_attr, &p);
	if (err)
		return err;

	p.pdn = to_vpd(ibqp->pd)->pdn;
	p.send_cqn = to_vcq(init_attr->send_cq)->cqn;
	/* None for an XRC initiator: 0, as the device requires. */
	p.recv_cqn = init_attr->recv_cq ? to_vcq(init_attr->recv_cq)->cqn : 0;
	p.srqn = init_attr->srq ? to_vsrq(init_attr->srq)->srqn : 0;
	p.uctx = vrnic_uctx(udata);
	p.mem = &qp->mem.desc;
	err = vrnic_cmd_create_qp(vdev->cmdq, &p, &qp->qpn);
	if (err)
		goto err_free_rings;
	if (init_attr->qp_type == IB_QPT_GSI && qp->qpn != 1)
		ibdev_warn(&vdev->ibdev, "GSI QP got qpn %u, not 1\n",
			   qp->qpn);

	if (udata) {
		struct vrnic_create_qp_resp resp = {
			.qpn = qp->qpn,
			.max_inline = p.max_inline,
		};

		err = vrnic_respond_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_destroy;
	}

	err = xa_err(xa_store(&vdev->qp_xa, qp->qpn, qp, GFP_KERNEL));
	if (err)
		goto err_destroy;

	ibqp->qp_num = qp->qpn;
	init_attr->cap = qp->cap;
	atomic_inc(&vdev->res_count[VRNIC_RES_QP]);
	return 0;

err_destroy:
	vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_QP, qp->qpn);
err_free_rings:
	vrnic_qp_free_rings(vdev, qp);
	return err;
}

#define VRNIC_QP_ATTR_SUPPORTED						\
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |		\
	 IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY | IB_QP_AV |	\
	 IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |		\
	 IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |	\
	 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | \
	 IB_QP_DEST_QPN)

/* The device's attribute bits are those of enum ib_qp_attr_mask. */
static_assert(VRNIC_QP_ATTR_STATE == IB_QP_STATE);
static_assert(VRNIC_QP_ATTR_CUR_STATE == IB_QP_CUR_STATE);
static_assert(VRNIC_QP_ATTR_ACCESS == IB_QP_ACCESS_FLAGS);
static_assert(VRNIC_QP_ATTR_PKEY_INDEX == IB_QP_PKEY_INDEX);
static_assert(VRNIC_QP_ATTR_PORT == IB_QP_PORT);
static_assert(VRNIC_QP_ATTR_QKEY == IB_QP_QKEY);
static_assert(VRNIC_QP_ATTR_AV == IB_QP_AV);
static_assert(VRNIC_QP_ATTR_PATH_MTU == IB_QP_PATH_MTU);
static_assert(VRNIC_QP_ATTR_TIMEOUT == IB_QP_TIMEOUT);
static_assert(VRNIC_QP_ATTR_RETRY_CNT == IB_QP_RETRY_CNT);
static_assert(VRNIC_QP_ATTR_RNR_RETRY == IB_QP_RNR_RETRY);
static_assert(VRNIC_QP_ATTR_RQ_PSN == IB_QP_RQ_PSN);
static_assert(VRNIC_QP_ATTR_MAX_QP_RD_ATOMIC == IB_QP_MAX_QP_RD_ATOMIC);
static_assert(VRNIC_QP_ATTR_MIN_RNR_TIMER == IB_QP_MIN_RNR_TIMER);
static_assert(VRNIC_QP_ATTR_SQ_PSN == IB_QP_SQ_PSN);
static_assert(VRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC == IB_QP_MAX_DEST_RD_ATOMIC);
static_assert(VRNIC_QP_ATTR_DEST_QPN == IB_QP_DEST_QPN);
static_assert(VRNIC_QPS_ERR == (int)IB_QPS_ERR);

static int vrnic_qp_attr_to_hw(struct vrnic_dev *vdev,
			       const struct ib_qp_attr *attr, int mask,
			       struct vrnic_qp_attr *hw)
{
	const struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	u32 access;
	int err;

	memset(hw, 0, sizeof(*hw));
	if (mask & IB_QP_STATE)
		hw->qp_state = cpu_to_le32(attr->qp_state);
	if (mask & IB_QP_CUR_STATE)
		hw->cur_qp_state = cpu_to_le32(attr->cur_qp_state);
	if (mask & IB_QP_ACCESS_FLAGS) {
		/* Local write is implied for a QP; MW bind is unsupported. */
		err = vrnic_access(attr->qp_access_flags | IB_ACCESS_LOCAL_WRITE,
				   &access);
		if (err)
			return err;
		hw->access = cpu_to_le32(access & ~VRNIC_ACCESS_LOCAL_WRITE);
	}
	if (mask & IB_QP_PKEY_INDEX) {
		if (attr->pkey_index)
			return -EINVAL;
		hw->pkey_index = cpu_to_le16(0);
	}
	if (mask & IB_QP_PORT) {
		if (attr->port_num != VRNIC_PORT_NUM)
			return -EINVAL;
		hw->port = VRNIC_PORT_NUM;
	}
	if (mask & IB_QP_QKEY)
		hw->qkey = cpu_to_le32(attr->qkey);
	if (mask & IB_QP_AV) {
		err = vrnic_av_from_ah_attr(vdev, &hw->av, &attr->ah_attr);
		if (err)
			return err;
	}
	if (mask & IB_QP_PATH_MTU) {
		if (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096)
			return -EINVAL;
		hw->path_mtu = attr->path_mtu;
	}
	if (mask & IB_QP_TIMEOUT)
		hw->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		hw->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		hw->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		hw->rq_psn = cpu_to_le32(attr->rq_psn & 0xffffff);
	if (mask & IB_QP_SQ_PSN)
		hw->sq_psn = cpu_to_le32(attr->sq_psn & 0xffffff);
	if (mask & IB_QP_MIN_RNR_TIMER)
		hw->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC) {
		if (attr->max_rd_atomic > da->max_qp_rd_atom)
			return -EINVAL;
		hw->max_rd_atomic = attr->max_rd_atomic;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		if (attr->max_dest_rd_atomic > da->max_qp_rd_atom)
			return -EINVAL;
		hw->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	}
	if (mask & IB_QP_DEST_QPN)
		hw->dest_qpn = cpu_to_le32(attr->dest_qp_num & 0xffffff);
	return 0;
}

int vrnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int attr_mask, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_qp *qp = to_vqp(ibqp);
	enum ib_qp_state cur, next;
	struct vrnic_qp_attr hw;
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "modify_qp");
	if (err)
		return err;
	/* An RSS QP receives from creation on: its WQs have the states. */
	if (qp->rss)
		return -EOPNOTSUPP;
	if (attr_mask & ~VRNIC_QP_ATTR_SUPPORTED)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_lock);
	cur = (attr_mask & IB_QP_CUR_STATE) ? attr->cur_qp_state :
					       READ_ONCE(qp->state);
	next = (attr_mask & IB_QP_STATE) ? attr->qp_state : cur;
	/*
	 * ib_core does not check: the driver does, the device again. For a
	 * raw packet QP this leaves STATE and PORT (RESET->INIT) only, all
	 * the device accepts for that type.
	 */
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, attr_mask)) {
		ibdev_dbg(&vdev->ibdev,
			  "modify_qp %u: %d -> %d with mask %#x not allowed\n",
			  qp->qpn, cur, next, attr_mask);
		err = -EINVAL;
		goto out;
	}
	err = vrnic_qp_attr_to_hw(vdev, attr, attr_mask, &hw);
	if (err)
		goto out;

	err = vrnic_cmd_modify_qp(vdev->cmdq, qp->qpn, attr_mask, &hw);
	if (err) {
		if (err == -EBUSY)	/* BAD_STATE: a transition refused */
			err = -EINVAL;
		goto out;
	}

	/* RESET dropped every WQE without completions: restart the rings. */
	if (next == IB_QPS_RESET && cur != IB_QPS_RESET && qp->kernel)
		vrnic_qp_forget(vdev, qp, false);
	WRITE_ONCE(qp->state, next);
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

int vrnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_qp_init_attr *init_attr)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_qp *qp = to_vqp(ibqp);
	struct vrnic_qp_attr hw;
	u32 access;
	int err;

	/*
	 * An RSS QP has no state of its own; it receives from creation on
	 * and never sends: RTR says that (rdma res show queries every QP).
	 */
	if (qp->rss) {
		memset(attr, 0, sizeof(*attr));
		memset(init_attr, 0, sizeof(*init_attr));
		attr->qp_state = IB_QPS_RTR;
		attr->cur_qp_state = IB_QPS_RTR;
		attr->port_num = VRNIC_PORT_NUM;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->rwq_ind_tbl = ibqp->rwq_ind_tbl;
		return 0;
	}
	err = vrnic_cmd_query_qp(vdev->cmdq, qp->qpn, &hw);
	if (err)
		return err;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = le32_to_cpu(hw.qp_state);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = hw.path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(hw.qkey);
	attr->rq_psn = le32_to_cpu(hw.rq_psn);
	attr->sq_psn = le32_to_cpu(hw.sq_psn);
	attr->dest_qp_num = le32_to_cpu(hw.dest_qpn);
	access = le32_to_cpu(hw.access) & ~VRNIC_ACCESS_LOCAL_WRITE;
	attr->qp_access_flags |= vrnic_ib_access(access);
	attr->cap = qp->cap;
	attr->pkey_index = le16_to_cpu(hw.pkey_index);
	attr->port_num = VRNIC_PORT_NUM;
	attr->timeout = hw.timeout;
	attr->retry_cnt = hw.retry_cnt;
	attr->rnr_retry = hw.rnr_retry;
	attr->min_rnr_timer = hw.min_rnr_timer;
	attr->max_rd_atomic = hw.max_rd_atomic;
	attr->max_dest_rd_atomic = hw.max_dest_rd_atomic;
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC ||
	    ibqp->qp_type == IB_QPT_XRC_INI || ibqp->qp_type == IB_QPT_XRC_TGT) {
		union ib_gid dgid;

		memcpy(dgid.raw, hw.av.dgid, sizeof(dgid.raw));
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&attr->ah_attr, VRNIC_PORT_NUM);
		rdma_ah_set_grh(&attr->ah_attr, &dgid,
				le32_to_cpu(hw.av.flow_label),
				hw.av.sgid_index, hw.av.hop_limit,
				hw.av.traffic_class);
		ether_addr_copy(attr->ah_attr.roce.dmac, hw.av.dmac);
	}

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_type = ibqp->qp_type;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = qp->cap;
	init_attr->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
						   IB_SIGNAL_REQ_WR;
	init_attr->port_num = VRNIC_PORT_NUM;
	return 0;
}

int vrnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_qp *qp = to_vqp(ibqp);
	int err;

	if (qp->rss) {
		/* Its flow rules are gone (ib_uverbs destroys them first). */
		err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_RSS,
					qp->qpn);
		if (err)
			ibdev_warn_ratelimited(&vdev->ibdev,
					       "DESTROY_RSS %#x failed (%d)\n",
					       qp->qpn, err);
		return 0;
	}
	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_QP, qp->qpn);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DESTROY_QP %u failed (%d)\n", qp->qpn,
				       err);
	vrnic_qp_forget(vdev, qp, true);
	/* The AEQ handler may have looked it up (rule (b)). */
	vrnic_sync_admin_irq(vdev);
	vrnic_odp_faults_cancel(qp->odp_fault);
	vrnic_qp_free_rings(vdev, qp);
	atomic_dec(&vdev->res_count[VRNIC_RES_QP]);
	return 0;
}

/* ---- multicast ---- */

/*
 * ib_attach_mcast checks the QP type and the GID for kernel callers;
 * uverbs passes both through, so check them here before the device does.
 * The LID means nothing on RoCE: the group is the GID alone. The device
 * keeps the table and detaches a QP when it is destroyed.
 */
static int vrnic_mcast(struct ib_qp *ibqp, union ib_gid *gid,
		       enum vrnic_aq_opcode op)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);

	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)gid->raw))
		return -EINVAL;
	return vrnic_cmd_mcast(vdev->cmdq, op, to_vqp(ibqp)->qpn, gid->raw);
}

int vrnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return vrnic_mcast(ibqp, gid, VRNIC_AQ_OP_ATTACH_MCAST);
}

int vrnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return vrnic_mcast(ibqp, gid, VRNIC_AQ_OP_DETACH_MCAST);
}

/* ---- SRQ ---- */

int vrnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		     struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibsrq->device);
	const struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	struct ib_srq_attr *attr = &init_attr->attr;
	struct vrnic_srq *srq = to_vsrq(ibsrq);
	struct vrnic_cmd_srq_params p = {};
	struct vrnic_create_srq_cmd cmd;
	u32 max_log = ilog2(max_t(u32, 2, vrnic_max_srq_wr(da)));
	int err;

	switch (init_attr->srq_type) {
	case IB_SRQT_BASIC:
		break;
	case IB_SRQT_XRC:
		/*
		 * User only: kernel ULPs have no use for XRC, and kernel
		 * poll_cq relies on finding no target QP in its CQs.
		 */
		if (!vdev->has_xrc || !udata)
			return -EOPNOTSUPP;
		p.xrcdn = to_vxrcd(ibsrq->ext.xrc.xrcd)->xrcdn;
		p.cqn = to_vcq(ibsrq->ext.cq)->cqn;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!attr->max_wr || attr->max_wr > vrnic_max_srq_wr(da) ||
	    attr->max_sge > vrnic_max_recv_sge(da) ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;

	spin_lock_init(&srq->lock);
	if (udata) {
		err = vrnic_udata_in(&vdev->ibdev, udata, &cmd, sizeof(cmd),
				     offsetofend(typeof(cmd), wqe_shift),
				     "create_srq");
		if (err)
			return err;
		if (cmd.comp_mask)
			return -EOPNOTSUPP;
		if (cmd.reserved_b0 || cmd.log_depth < 1 ||
		    cmd.log_depth > max_log ||
		    (1U << cmd.log_depth) < attr->max_wr ||
		    cmd.wqe_shift < VRNIC_RQ_WQE_MIN_SHIFT ||
		    cmd.wqe_shift > VRNIC_WQE_MAX_SHIFT ||
		    (1ULL << cmd.wqe_shift) <
		    vrnic_recv_wqe_len(attr->max_sge) ||
		    cmd.buf_len < (1ULL << (cmd.log_depth + cmd.wqe_shift)))
			return -EINVAL;
		p.log_depth = cmd.log_depth;
		p.wqe_shift = cmd.wqe_shift;
		err = vrnic_pin_ring(vdev, &srq->mem, cmd.buf_addr,
				     cmd.buf_len);
		if (err)
			return err;
	} else {
		p.log_depth = max_t(u32, 1, order_base_2(attr->max_wr));
		p.wqe_shift = vrnic_wqe_shift(vrnic_recv_wqe_len(attr->max_sge),
					      VRNIC_RQ_WQE_MIN_SHIFT);
		err = vrnic_kbuf_alloc(vdev, &srq->kbuf,
				       1U << (p.log_depth + p.wqe_shift));
		if (err)
			return err;
		err = vrnic_mem_from_kbuf(vdev, &srq->mem, &srq->kbuf);
		if (err)
			goto err_free_ring;
		srq->kernel = true;
	}
	p.max_sge = vrnic_rq_wqe_sges(da, p.wqe_shift);
	if (srq->kernel) {
		err = vrnic_wq_init(&srq->rq, srq->kbuf.va, p.log_depth,
				    p.wqe_shift, p.max_sge);
		if (err)
			goto err_free_ring;
		srq->done = bitmap_zalloc(srq->rq.depth, GFP_KERNEL);
		if (!srq->done) {
			err = -ENOMEM;
			goto err_free_ring;
		}
	}

	p.pdn = to_vpd(ibsrq->pd)->pdn;
	p.uctx = vrnic_uctx(udata);
	p.limit = attr->srq_limit;
	p.mem = &srq->mem.desc;
	err = vrnic_cmd_create_srq(vdev->cmdq, &p, &srq->srqn);
	if (err)
		goto err_free_ring;
	/* ib_uverbs returns it: the number XRC senders put in their WQEs. */
	if (init_attr->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;

	if (udata) {
		struct vrnic_create_srq_resp resp = { .srqn = srq->srqn };

		err = vrnic_respond_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_destroy;
	}
	err = xa_err(xa_store(&vdev->srq_xa, srq->srqn, srq, GFP_KERNEL));
	if (err)
		goto err_destroy;

	srq->max_wr = 1U << p.log_depth;
	srq->max_sge = p.max_sge;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	atomic_inc(&vdev->res_count[VRNIC_RES_SRQ]);
	return 0;

err_destroy:
	vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_SRQ, srq->srqn);
err_free_ring:
	bitmap_free(srq->done);
	kvfree(srq->rq.wrid);
	vrnic_mem_uninit(vdev, &srq->mem);
	vrnic_kbuf_free(vdev, &srq->kbuf);
	return err;
}

int vrnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask attr_mask, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibsrq->device);
	struct vrnic_srq *srq = to_vsrq(ibsrq);
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "modify_srq");
	if (err)
		return err;
	/* No resizing */
	if (attr_mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (!(attr_mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->max_wr)
		return -EINVAL;
	return vrnic_cmd_modify_srq(vdev->cmdq, srq->srqn,
				    VRNIC_SRQ_ATTR_LIMIT, attr->srq_limit);
}

int vrnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vrnic_dev *vdev = to_vdev(ibsrq->device);
	struct vrnic_srq *srq = to_vsrq(ibsrq);
	struct vrnic_cmd_srq_attr sa;
	int err;

	err = vrnic_cmd_query_srq(vdev->cmdq, srq->srqn, &sa);
	if (err)
		return err;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = sa.limit;
	return 0;
}

int vrnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibsrq->device);
	struct vrnic_srq *srq = to_vsrq(ibsrq);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_SRQ,
				srq->srqn);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DESTROY_SRQ %u failed (%d)\n",
				       srq->srqn, err);
	xa_cmpxchg(&vdev->srq_xa, srq->srqn, srq, NULL, GFP_KERNEL);
	vrnic_sync_admin_irq(vdev);
	bitmap_free(srq->done);
	kvfree(srq->rq.wrid);
	vrnic_mem_uninit(vdev, &srq->mem);
	vrnic_kbuf_free(vdev, &srq->kbuf);
	atomic_dec(&vdev->res_count[VRNIC_RES_SRQ]);
	return 0;
}

/* ---- restrack: `rdma res show ... -dd` ---- */

static int vrnic_res_put(struct sk_buff *msg, const char * const *names,
			 const u32 *vals, unsigned int n)
{
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	unsigned int i;

	if (!table)
		return -EMSGSIZE;
	for (i = 0; i < n; i++) {
		if (rdma_nl_put_driver_u32(msg, names[i], vals[i])) {
			nla_nest_cancel(msg, table);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, table);
	return 0;
}

int vrnic_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	static const char * const names[] = { "cqn", "depth", "vector", "ci" };
	struct vrnic_cq *cq = to_vcq(ibcq);
	u32 vals[] = { cq->cqn, cq->depth, cq->vector, READ_ONCE(cq->ci) };

	return vrnic_res_put(msg, names, vals, cq->kernel ? 4 : 3);
}

int vrnic_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	static const char * const names[] = {
		"sq_depth", "rq_depth", "sq_pi", "sq_ci", "rq_pi", "rq_ci"
	};
	struct vrnic_qp *qp = to_vqp(ibqp);
	u32 vals[] = {
		qp->cap.max_send_wr, qp->cap.max_recv_wr,
		READ_ONCE(qp->sq.pi), READ_ONCE(qp->sq.ci),
		READ_ONCE(qp->rq.pi), READ_ONCE(qp->rq.ci),
	};

	return vrnic_res_put(msg, names, vals, qp->kernel ? 6 : 2);
}

int vrnic_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	static const char * const names[] = { "page_shift", "npages", "levels" };
	struct vrnic_mr *mr = to_vmr(ibmr);
	u32 flags = le32_to_cpu(mr->mem.desc.flags);
	u32 vals[] = {
		FIELD_GET(VRNIC_MEM_PAGE_SHIFT_MASK, flags),
		le32_to_cpu(mr->mem.desc.npages),
		FIELD_GET(VRNIC_MEM_LEVELS_MASK, flags),
	};

	return vrnic_res_put(msg, names, vals, ARRAY_SIZE(vals));
}

int vrnic_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq)
{
	static const char * const names[] = { "srqn", "depth" };
	struct vrnic_srq *srq = to_vsrq(ibsrq);
	u32 vals[] = { srq->srqn, srq->max_wr };

	return vrnic_res_put(msg, names, vals, ARRAY_SIZE(vals));
}
