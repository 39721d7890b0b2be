/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the vrnic verbs selftests: open (and close) the vrnic
 * device, find the port's RoCEv2 IPv4 GID, count `rdma res` objects, wait
 * for completions with a deadline; and the clock and random numbers they
 * use.
 */
#ifndef VRNIC_SELFTEST_COMMON_H
#define VRNIC_SELFTEST_COMMON_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock: deadlines, unaffected by date changes. */
static inline double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static inline uint64_t mix(uint64_t x)		/* splitmix64 */
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * A random number, different per run and per node (PSNs, data seeds); the
 * clock stands in only if getrandom() fails.
 */
static inline uint64_t rand64(void)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = mix((uint64_t)(now() * 1e9) ^ getpid());
	return r;
}

/*
 * The node's RDMA device: the one tools/vm names in VRNIC_IBDEV (vrnic0,
 * or rxe0 on an rdma_rxe node of an interop pair), else the first vrnic.
 */
static inline struct ibv_context *vrnic_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	const char *want = getenv("VRNIC_IBDEV");
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (want && *want ? !strcmp(name, want) :
				    !strncmp(name, "vrnic", 5)) {
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

/* Port 1's counter name (rdma statistic show link vrnic0/1), or -1. */
static inline long vrnic_port_counter(const char *name)
{
	char line[8192], *p, *save;
	long v = -1;
	FILE *f = popen("rdma statistic show link vrnic0/1 2>/dev/null", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		for (p = strtok_r(line, " \n", &save); p;
		     p = strtok_r(NULL, " \n", &save)) {
			if (!strcmp(p, name)) {
				p = strtok_r(NULL, " \n", &save);
				v = p ? atol(p) : -1;
				break;
			}
		}
	}
	pclose(f);
	return v;
}

/* Resident memory of this process, in KiB, or -1. */
static inline long vrnic_rss_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
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

/*
 * vrnic_ipv4_gid_index, waited for until end (a now() time): the GID only
 * appears once the interface has its address, which a guest that has just
 * booted may not have yet. Fills gid; -1 when there is none by then.
 */
static inline int vrnic_wait_ipv4_gid(struct ibv_context *ctx, double end,
				      union ibv_gid *gid)
{
	int i;

	while ((i = vrnic_ipv4_gid_index(ctx)) < 0 && now() < end)
		usleep(200000);
	if (i < 0 || ibv_query_gid(ctx, 1, i, gid))
		return -1;
	return i;
}

/* What vrnic_open and ibv_alloc_pd gave; either may be NULL (setup failed). */
static inline void vrnic_close(struct ibv_context *ctx, struct ibv_pd *pd)
{
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
}

/*
 * Up to n completions from cq within ms; returns how many arrived. After
 * spins empty polls in a row it sleeps between polls, to leave the
 * (emulated) CPU to the device, and asks give_up(arg), when there is one,
 * whether the completions can still come.
 */
static inline int wait_wc_until(struct ibv_cq *cq, struct ibv_wc *wc, int n,
				int ms, int spins, bool (*give_up)(void *arg),
				void *arg)
{
	double end = now() + ms / 1000.0;
	int got = 0, idle = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			break;
		got += r;
		if (r)
			continue;
		if (now() > end)
			break;
		if (++idle > spins) {
			usleep(500);
			if (give_up && give_up(arg))
				break;
		}
	}
	return got;
}

/* Up to n completions from cq within ms; returns how many arrived. */
static inline int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	return wait_wc_until(cq, wc, n, ms, 200, NULL, NULL);
}

#endif
