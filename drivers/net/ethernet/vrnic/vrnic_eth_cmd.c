// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic admin commands of the Ethernet function. Each wrapper builds a
 * zeroed command (every reserved byte 0, as the device checks), runs it and
 * decodes the answer.
 */

#include <linux/etherdevice.h>
#include <linux/export.h>

#include "vrnic_eth_cmd.h"

static_assert(sizeof(struct vrnic_port_attr) <= VRNIC_CMDQ_RESP_SIZE);

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
EXPORT_SYMBOL_GPL(vrnic_cmd_query_port);

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
