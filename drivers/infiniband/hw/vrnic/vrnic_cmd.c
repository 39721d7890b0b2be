// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic typed admin commands. Each wrapper builds a zeroed command (so every
 * reserved byte is 0, as the device checks), runs it and decodes the answer.
 */

#include <linux/bitfield.h>
#include <linux/etherdevice.h>
#include <linux/string.h>

#include "vrnic_cmd.h"

static_assert(sizeof(struct vrnic_device_attr) <= VRNIC_CMDQ_RESP_SIZE);
static_assert(sizeof(struct vrnic_port_attr) <= VRNIC_CMDQ_RESP_SIZE);
static_assert(sizeof(struct vrnic_gid_entry) <= VRNIC_CMDQ_RESP_SIZE);

static void vrnic_cmd_init(union vrnic_aq_cmd *cmd, enum vrnic_aq_opcode op)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.opcode = cpu_to_le16(op);
}

int vrnic_cmd_query_device(struct vrnic_cmdq *cmdq,
			   struct vrnic_cmd_dev_attr *attr)
{
	struct vrnic_device_attr resp;
	union vrnic_aq_cmd cmd;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_DEVICE);
	cmd.query.index = cpu_to_le32(0);
	err = vrnic_cmdq_exec(cmdq, &cmd, &resp, sizeof(resp), NULL);
	if (err)
		return err;

	attr->fw_version = le64_to_cpu(resp.fw_version);
	/* GUIDs are bytes in network order, exactly what __be64 holds. */
	static_assert(sizeof(attr->node_guid) == sizeof(resp.node_guid));
	static_assert(sizeof(attr->sys_image_guid) ==
		      sizeof(resp.sys_image_guid));
	memcpy(&attr->node_guid, resp.node_guid, sizeof(attr->node_guid));
	memcpy(&attr->sys_image_guid, resp.sys_image_guid,
	       sizeof(attr->sys_image_guid));
	attr->max_mr_size = le64_to_cpu(resp.max_mr_size);
	attr->page_size_cap = le64_to_cpu(resp.page_size_cap);
	attr->vendor_id = le32_to_cpu(resp.vendor_id);
	attr->vendor_part_id = le32_to_cpu(resp.vendor_part_id);
	attr->hw_version = le32_to_cpu(resp.hw_version);
	attr->max_qp = le32_to_cpu(resp.max_qp);
	attr->max_qp_wr = le32_to_cpu(resp.max_qp_wr);
	attr->max_sge = le32_to_cpu(resp.max_sge);
	attr->max_cq = le32_to_cpu(resp.max_cq);
	attr->max_cqe = le32_to_cpu(resp.max_cqe);
	attr->max_mr = le32_to_cpu(resp.max_mr);
	attr->max_pd = le32_to_cpu(resp.max_pd);
	attr->max_qp_rd_atom = le32_to_cpu(resp.max_qp_rd_atom);
	attr->max_srq = le32_to_cpu(resp.max_srq);
	attr->max_srq_wr = le32_to_cpu(resp.max_srq_wr);
	attr->max_inline_data = le32_to_cpu(resp.max_inline_data);
	attr->num_comp_vectors = le32_to_cpu(resp.num_comp_vectors);
	return 0;
}

int vrnic_cmd_query_port(struct vrnic_cmdq *cmdq, u32 port,
			 struct vrnic_cmd_port_attr *attr)
{
	struct vrnic_port_attr resp;
	union vrnic_aq_cmd cmd;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_PORT);
	cmd.query.index = cpu_to_le32(port);
	err = vrnic_cmdq_exec(cmdq, &cmd, &resp, sizeof(resp), NULL);
	if (err)
		return err;

	attr->link_up = le32_to_cpu(resp.flags) & VRNIC_PORT_FLAG_LINK_UP;
	attr->max_mtu = le32_to_cpu(resp.max_mtu);
	attr->mtu = le32_to_cpu(resp.mtu);
	attr->gid_tbl_len = le32_to_cpu(resp.gid_tbl_len);
	attr->pkey_tbl_len = le32_to_cpu(resp.pkey_tbl_len);
	attr->speed_mbps = le32_to_cpu(resp.speed_mbps);
	ether_addr_copy(attr->mac, resp.mac);
	return 0;
}

int vrnic_cmd_set_mac(struct vrnic_cmdq *cmdq, const u8 *mac)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_SET_MAC);
	ether_addr_copy(cmd.set_mac.mac, mac);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_set_mtu(struct vrnic_cmdq *cmdq, u32 mtu)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_SET_MTU);
	cmd.set_mtu.mtu = cpu_to_le32(mtu);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_add_gid(struct vrnic_cmdq *cmdq, u32 index, const u8 *gid,
		      enum vrnic_gid_type type)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ADD_GID);
	cmd.gid.index = cpu_to_le32(index);
	cmd.gid.type = cpu_to_le32(type);
	memcpy(cmd.gid.gid, gid, sizeof(cmd.gid.gid));
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_del_gid(struct vrnic_cmdq *cmdq, u32 index)
{
	union vrnic_aq_cmd cmd;

	/* type and gid stay zero, as DEL_GID requires */
	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_DEL_GID);
	cmd.gid.index = cpu_to_le32(index);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_query_gid(struct vrnic_cmdq *cmdq, u32 index,
			struct vrnic_cmd_gid *entry)
{
	struct vrnic_gid_entry resp;
	union vrnic_aq_cmd cmd;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_GID);
	cmd.query.index = cpu_to_le32(index);
	err = vrnic_cmdq_exec(cmdq, &cmd, &resp, sizeof(resp), NULL);
	if (err)
		return err;

	memcpy(entry->gid, resp.gid, sizeof(entry->gid));
	entry->type = le32_to_cpu(resp.type);
	return 0;
}
