/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic typed admin commands: one wrapper per opcode. Parameters go in as
 * plain arguments, answers come out in CPU-endian result structs.
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
};

/* QUERY_PORT, decoded from struct vrnic_port_attr. */
struct vrnic_cmd_port_attr {
	bool link_up;
	u32 max_mtu;
	u32 mtu;
	u32 gid_tbl_len;
	u32 pkey_tbl_len;
	u32 speed_mbps;
	u8 mac[ETH_ALEN];
};

/* QUERY_GID, decoded from struct vrnic_gid_entry. */
struct vrnic_cmd_gid {
	u8 gid[16];
	u32 type;		/* enum vrnic_gid_type, 0 = unused */
};

int vrnic_cmd_query_device(struct vrnic_cmdq *cmdq,
			   struct vrnic_cmd_dev_attr *attr);
int vrnic_cmd_query_port(struct vrnic_cmdq *cmdq, u32 port,
			 struct vrnic_cmd_port_attr *attr);
int vrnic_cmd_set_mac(struct vrnic_cmdq *cmdq, const u8 *mac);
int vrnic_cmd_set_mtu(struct vrnic_cmdq *cmdq, u32 mtu);
int vrnic_cmd_add_gid(struct vrnic_cmdq *cmdq, u32 index, const u8 *gid,
		      enum vrnic_gid_type type);
int vrnic_cmd_del_gid(struct vrnic_cmdq *cmdq, u32 index);
int vrnic_cmd_query_gid(struct vrnic_cmdq *cmdq, u32 index,
			struct vrnic_cmd_gid *entry);

#endif /* VRNIC_CMD_H */
