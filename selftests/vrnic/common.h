/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the vrnic verbs selftests: open the vrnic device, find
 * the port's RoCEv2 IPv4 GID, count `rdma res` objects.
 */
#ifndef VRNIC_SELFTEST_COMMON_H
#define VRNIC_SELFTEST_COMMON_H

#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline struct ibv_context *vrnic_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++) {
		if (!strncmp(ibv_get_device_name(list[i]), "vrnic", 5)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	return ctx;
}

/* Number of `rdma res show <type>` entries on the vrnic device. */
static inline int vrnic_res_count(const char *type)
{
	char cmd[128], line[1024];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "rdma res show %s 2>/dev/null", type);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		/* "dev vrnic0 ..." (pd, cq, mr) or "link vrnic0/1 ..." (qp) */
		if (strstr(line, " vrnic"))
			n++;
	return pclose(p) ? -1 : n;
}

/* GID index of the port's RoCEv2 ::ffff:a.b.c.d GID, or -1. */
static inline int vrnic_ipv4_gid_index(struct ibv_context *ctx)
{
	struct ibv_gid_entry e;

	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff)
			return i;
	}
	return -1;
}

#endif
