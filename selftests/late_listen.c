// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * late_listen.so: an LD_PRELOAD for a test of the harness's pair_run
 * (selftests/rdma_lib.sh). perftest -R connects twice and its server listens
 * for the second connection only after a handshake over the first; this
 * makes that second rdma_listen() late by LATE_LISTEN_MS, once per
 * LATE_LISTEN_ONCE file (created on first use), so the client is rejected
 * as it is when a slow guest loses the race, and pair_run must start both
 * sides again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct rdma_cm_id;

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int (*real_listen)(struct rdma_cm_id *, int);
	static int calls;
	const char *ms = getenv("LATE_LISTEN_MS");
	const char *once = getenv("LATE_LISTEN_ONCE");
	int fd;

	if (!real_listen)
		real_listen = (int (*)(struct rdma_cm_id *, int))
			dlsym(RTLD_NEXT, "rdma_listen");
	if (!real_listen)
		return -1;
	if (++calls == 2 && ms && once) {
		fd = open(once, O_CREAT | O_EXCL | O_WRONLY, 0600);
		if (fd >= 0) {
			close(fd);
			fprintf(stderr, "late_listen: second listen %s ms late\n", ms);
			usleep(atoi(ms) * 1000);
		}
	}
	return real_listen(id, backlog);
}
