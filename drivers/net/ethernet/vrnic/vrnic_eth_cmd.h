/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic admin commands of the Ethernet function: the port's state, MAC and
 * MTU. The RDMA function's commands are the RDMA driver's own (it submits
 * them through the same admin queue).
 */
#ifndef VRNIC_ETH_CMD_H
#define VRNIC_ETH_CMD_H

#include <linux/if_ether.h>
#include <linux/types.h>

#include "vrnic_cmdq.h"

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

int vrnic_cmd_query_port(struct vrnic_cmdq *cmdq, u32 port,
			 struct vrnic_cmd_port_attr *attr);
int vrnic_cmd_set_mac(struct vrnic_cmdq *cmdq, const u8 *mac);
int vrnic_cmd_set_mtu(struct vrnic_cmdq *cmdq, u32 mtu);

#endif /* VRNIC_ETH_CMD_H */
