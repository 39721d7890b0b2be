/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic admin commands of the RDMA function, one wrapper per opcode, run on
 * the admin queue the Ethernet driver owns (vrnic_api.h). Parameters go in
 * as plain arguments, answers come out in CPU-endian result structs.
 */
#ifndef VRNIC_CMD_H
#define VRNIC_CMD_H

#include <linux/if_ether.h>
#include <linux/types.h>

#include "vrnic_cmdq.h"

/* QUERY_DEVICE, decoded from struct vrnic_device_attr. */
struct vrnic_cmd_dev_attr {
	u64 fw_version;
	__be64 node_guid;
	__be64 sys_image_guid;
	u64 max_mr_size;
	u64 page_size_cap;
	u32 vendor_id;
	u32 vendor_part_id;
	u32 hw_version;
	u32 max_qp;
	u32 max_qp_wr;
	u32 max_sge;
	u32 max_cq;
	u32 max_cqe;
	u32 max_mr;
	u32 max_pd;
	u32 max_qp_rd_atom;
	u32 max_srq;
	u32 max_srq_wr;
	u32 max_inline_data;
	u32 num_comp_vectors;
	u32 device_caps;		/* VRNIC_DEVICE_CAP_* */
};

/* QUERY_GID, decoded from struct vrnic_gid_entry. */
struct vrnic_cmd_gid {
	u8 gid[16];
	u32 type;		/* enum vrnic_gid_type, 0 = unused */
};

/*
 * Object commands. Memory descriptors and QP attributes are passed in the
 * device's own (little-endian) layout: the driver builds them once and they
 * are copied into the command unchanged.
 */
struct vrnic_cmd_mr_params {
	u32 handle;		/* REREG_MR: the current key */
	u32 pdn;
	u32 access;		/* VRNIC_ACCESS_* */
	u32 flags;		/* VRNIC_MR_FLAG_* or VRNIC_MR_REREG_* */
	u8 key_byte;
	const struct vrnic_mem_desc *mem;	/* NULL: none (DMA MR, rereg) */
};

struct vrnic_cmd_cq_params {
	u32 eqn;
	u32 log_depth;
	u32 uctx;
	u32 flags;		/* VRNIC_CQ_FLAG_* */
	const struct vrnic_mem_desc *mem;
};

struct vrnic_cmd_qp_params {
	u8 type;		/* enum vrnic_qp_type */
	u8 sq_log_depth;
	u8 rq_log_depth;
	u8 sq_wqe_shift;
	u8 rq_wqe_shift;
	u8 max_send_sge;
	u8 max_recv_sge;
	u32 max_inline;
	u32 pdn;
	u32 send_cqn;
	u32 recv_cqn;
	u32 srqn;
	u32 uctx;
	u32 rq_offset;
	u32 xrcdn;		/* VRNIC_QP_TYPE_XRC_TGT only */
	const struct vrnic_mem_desc *mem;	/* NULL: none (an XRC target) */
};

struct vrnic_cmd_srq_params {
	u32 pdn;
	u32 uctx;
	u32 limit;
	u8 log_depth;
	u8 wqe_shift;
	u8 max_sge;
	u32 xrcdn;		/* an XRC SRQ's domain; 0: a basic SRQ */
	u32 cqn;		/* an XRC SRQ's CQ; 0: a basic SRQ */
	const struct vrnic_mem_desc *mem;
};

/*
 * CREATE_FLOW. The keys are in the device's layout (network byte order),
 * with no value bit outside the mask.
 */
struct vrnic_cmd_flow_params {
	u32 qpn;
	u16 priority;
	u8 flags;		/* VRNIC_FLOW_F_* */
	struct vrnic_flow_key value;
	struct vrnic_flow_key mask;
};

/* CREATE_RSS: 2^log_size receive-only raw packet QPs (uapi "RSS"). */
struct vrnic_cmd_rss_params {
	u32 uctx;
	u16 fields;		/* VRNIC_RSS_F_* */
	u8 log_size;
	const u8 *key;		/* VRNIC_RSS_KEY_LEN bytes */
	u32 qpn[VRNIC_RSS_TABLE_MAX];
};

/* QUERY_MR, decoded from struct vrnic_mr_attr. */
struct vrnic_cmd_mr_attr {
	u64 iova;
	u64 length;
	u32 pdn;
	u32 access;
	u32 flags;
	u32 page_shift;
	u32 npages;
	u32 levels;
};

/* QUERY_SRQ, decoded from struct vrnic_srq_attr. */
struct vrnic_cmd_srq_attr {
	u32 max_wr;
	u32 max_sge;
	u32 limit;
};

int vrnic_cmd_create_eq(struct vrnic_cmdq *cmdq, dma_addr_t ring,
			u32 log_depth, u32 vector, u32 *eqn);
int vrnic_cmd_destroy(struct vrnic_cmdq *cmdq, enum vrnic_aq_opcode op,
		      u32 handle);
int vrnic_cmd_alloc_pd(struct vrnic_cmdq *cmdq, u32 uctx, u32 *pdn);
int vrnic_cmd_alloc_xrcd(struct vrnic_cmdq *cmdq, u32 *xrcdn);
int vrnic_cmd_alloc_mw(struct vrnic_cmdq *cmdq, u32 pdn, u8 type,
		       u8 key_byte, u32 *key);
int vrnic_cmd_alloc_mr(struct vrnic_cmdq *cmdq, u32 pdn, u32 max_pages,
		       u8 key_byte, u32 *key);
int vrnic_cmd_reg_mr(struct vrnic_cmdq *cmdq,
		     const struct vrnic_cmd_mr_params *p, u32 *key);
int vrnic_cmd_rereg_mr(struct vrnic_cmdq *cmdq,
		       const struct vrnic_cmd_mr_params *p, u32 *key);
int vrnic_cmd_query_mr(struct vrnic_cmdq *cmdq, u32 key, u32 first,
		       u32 count, void *buf, dma_addr_t buf_dma,
		       struct vrnic_cmd_mr_attr *attr, u64 *pages);
int vrnic_cmd_create_cq(struct vrnic_cmdq *cmdq,
			const struct vrnic_cmd_cq_params *p, u32 *cqn);
int vrnic_cmd_resize_cq(struct vrnic_cmdq *cmdq, u32 cqn,
			const struct vrnic_cmd_cq_params *p);
int vrnic_cmd_modify_cq(struct vrnic_cmdq *cmdq, u32 cqn, u16 count,
			u16 period_us);
int vrnic_cmd_page_fault_done(struct vrnic_cmdq *cmdq, u32 qpn,
			      bool responder, u32 status);
int vrnic_cmd_odp_invalidate(struct vrnic_cmdq *cmdq, u32 key, u64 page,
			     u32 npages);
int vrnic_cmd_create_qp(struct vrnic_cmdq *cmdq,
			const struct vrnic_cmd_qp_params *p, u32 *qpn);
int vrnic_cmd_modify_qp(struct vrnic_cmdq *cmdq, u32 qpn, u32 attr_mask,
			const struct vrnic_qp_attr *attr);
int vrnic_cmd_query_qp(struct vrnic_cmdq *cmdq, u32 qpn,
		       struct vrnic_qp_attr *attr);
int vrnic_cmd_create_srq(struct vrnic_cmdq *cmdq,
			 const struct vrnic_cmd_srq_params *p, u32 *srqn);
int vrnic_cmd_modify_srq(struct vrnic_cmdq *cmdq, u32 srqn, u32 attr_mask,
			 u32 limit);
int vrnic_cmd_query_srq(struct vrnic_cmdq *cmdq, u32 srqn,
			struct vrnic_cmd_srq_attr *attr);
int vrnic_cmd_mcast(struct vrnic_cmdq *cmdq, enum vrnic_aq_opcode op,
		    u32 qpn, const u8 *gid);
int vrnic_cmd_create_flow(struct vrnic_cmdq *cmdq,
			  const struct vrnic_cmd_flow_params *p, u32 *id);
int vrnic_cmd_create_rss(struct vrnic_cmdq *cmdq,
			 const struct vrnic_cmd_rss_params *p, u32 *rssn);

int vrnic_cmd_query_device(struct vrnic_cmdq *cmdq,
			   struct vrnic_cmd_dev_attr *attr);
int vrnic_cmd_query_port_stats(struct vrnic_cmdq *cmdq, u32 port,
			       struct vrnic_port_stats *buf,
			       dma_addr_t buf_dma, u64 *values);
int vrnic_cmd_add_gid(struct vrnic_cmdq *cmdq, u32 index, const u8 *gid,
		      enum vrnic_gid_type type);
int vrnic_cmd_del_gid(struct vrnic_cmdq *cmdq, u32 index);
int vrnic_cmd_query_gid(struct vrnic_cmdq *cmdq, u32 index,
			struct vrnic_cmd_gid *entry);

#endif /* VRNIC_CMD_H */
