// SPDX-License-Identifier: GPL-2.0
/*
 * Create a PD, CQ, MR and QP on the vrnic device, print "ready" and wait
 * (for the kill and rmmod tests). With "probe" as argument, after stdin
 * closes it tries one more verb and prints "after: <errno>".
 */
#include <errno.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	struct ibv_context *ctx = vrnic_open();
	static char buf[4096] __attribute__((aligned(4096)));
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	char c;

	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;
	ia.send_cq = ia.recv_cq = cq;
	qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	if (!qp || !ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE))
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	if (argc > 1 && !strcmp(argv[1], "probe")) {
		errno = 0;
		printf("after: %d\n", ibv_create_cq(ctx, 8, NULL, NULL, 0) ? 0 : errno);
	}
	return 0;
}
