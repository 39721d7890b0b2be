// SPDX-License-Identifier: GPL-2.0
/*
 * vrnic objects through the verbs API (provider + driver + device):
 * 1000 QPs/CQs/MRs created and destroyed without leaks, limits enforced
 * exactly (counting the kernel's own objects), QP state rules, flushes on
 * ERR (signaled or not, also for WRs posted in ERR), and CQ events on the
 * completion vector the CQ was bound to.
 */
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"

#define N_OBJ 1000

FIXTURE(obj) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
};

FIXTURE_SETUP(obj)
{
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &self->attr));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(obj)
{
	ibv_dealloc_pd(self->pd);
	ibv_close_device(self->ctx);
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *scq,
			    struct ibv_cq *rcq, int wr)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &ia);
}

TEST_F(obj, churn_1000_cqs_mrs_qps_no_leak)
{
	static struct ibv_cq *cq[N_OBJ];
	static struct ibv_mr *mr[N_OBJ];
	static struct ibv_qp *qp[N_OBJ];
	int base_qp = vrnic_res_count("qp"), base_cq = vrnic_res_count("cq");
	int base_mr = vrnic_res_count("mr");
	char *buf = aligned_alloc(4096, 4096);

	ASSERT_LE(0, base_qp);
	for (int i = 0; i < N_OBJ; i++) {
		cq[i] = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
		ASSERT_NE(NULL, cq[i]) TH_LOG("cq %d: %s", i, strerror(errno));
		mr[i] = ibv_reg_mr(self->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
		ASSERT_NE(NULL, mr[i]) TH_LOG("mr %d: %s", i, strerror(errno));
		qp[i] = rc_qp(self->pd, cq[i], cq[i], 2);
		ASSERT_NE(NULL, qp[i]) TH_LOG("qp %d: %s", i, strerror(errno));
	}
	EXPECT_EQ(base_qp + N_OBJ, vrnic_res_count("qp"));
	EXPECT_EQ(base_cq + N_OBJ, vrnic_res_count("cq"));
	EXPECT_EQ(base_mr + N_OBJ, vrnic_res_count("mr"));
	for (int i = 0; i < N_OBJ; i++) {
		ASSERT_EQ(0, ibv_destroy_qp(qp[i]));
		ASSERT_EQ(0, ibv_dereg_mr(mr[i]));
		ASSERT_EQ(0, ibv_destroy_cq(cq[i]));
	}
	EXPECT_EQ(base_qp, vrnic_res_count("qp"));
	EXPECT_EQ(base_cq, vrnic_res_count("cq"));
	EXPECT_EQ(base_mr, vrnic_res_count("mr"));
	free(buf);
}

/* Live device objects of a type, kernel's included (driver debugfs). */
static int device_objects(const char *type)
{
	char line[128], name[32];
	int n, found = -1;
	FILE *f = popen("cat /sys/kernel/debug/vrnic/*/res_count", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %d", name, &n) == 2 && !strcmp(name, type))
			found = n;
	pclose(f);
	return found;
}

/*
 * Create objects of one type until the device refuses: exactly
 * limit - (objects of that type already live, the kernel's included) must
 * succeed, and the next one fails with ENOMEM.
 */
struct limit_case {
	const char *type;
	int limit;
	void *(*create)(struct ibv_context *ctx, struct ibv_pd *pd, void *aux);
	void (*destroy)(void *obj);
};

static void check_limit(struct __test_metadata *_metadata,
			struct ibv_context *ctx, struct ibv_pd *pd, void *aux,
			const struct limit_case *c)
{
	static void *objs[65536];
	int in_use = device_objects(c->type), n = 0;

	ASSERT_LE(0, in_use) TH_LOG("no debugfs res_count for %s", c->type);
	if (c->limit > 4096)
		SKIP(return, "max %s %d: run with a small -device limit", c->type, c->limit);
	while (n < c->limit + 1) {
		objs[n] = c->create(ctx, pd, aux);
		if (!objs[n])
			break;
		n++;
	}
	EXPECT_EQ(c->limit - in_use, n) TH_LOG("%s: limit %d, %d in use",
					       c->type, c->limit, in_use);
	EXPECT_EQ(ENOMEM, errno);
	while (n--)
		c->destroy(objs[n]);
	EXPECT_EQ(in_use, device_objects(c->type));
}

static void *mk_cq(struct ibv_context *ctx, struct ibv_pd *pd, void *aux)
{
	return ibv_create_cq(ctx, 1, NULL, NULL, 0);
}

static void rm_cq(void *o)
{
	ibv_destroy_cq(o);
}

static void *mk_qp(struct ibv_context *ctx, struct ibv_pd *pd, void *aux)
{
	return rc_qp(pd, aux, aux, 1);
}

static void rm_qp(void *o)
{
	ibv_destroy_qp(o);
}

static void *mk_pd(struct ibv_context *ctx, struct ibv_pd *pd, void *aux)
{
	return ibv_alloc_pd(ctx);
}

static void rm_pd(void *o)
{
	ibv_dealloc_pd(o);
}

static void *mk_mr(struct ibv_context *ctx, struct ibv_pd *pd, void *aux)
{
	return ibv_reg_mr(pd, aux, 4096, IBV_ACCESS_LOCAL_WRITE);
}

static void rm_mr(void *o)
{
	ibv_dereg_mr(o);
}

static void *mk_srq(struct ibv_context *ctx, struct ibv_pd *pd, void *aux)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 2, .max_sge = 1 } };

	return ibv_create_srq(pd, &a);
}

static void rm_srq(void *o)
{
	ibv_destroy_srq(o);
}

TEST_F(obj, limits_are_exact)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 2, NULL, NULL, 0);
	char *buf = aligned_alloc(4096, 4096);
	const struct limit_case cases[] = {
		{ "pd", self->attr.max_pd, mk_pd, rm_pd },
		{ "cq", self->attr.max_cq, mk_cq, rm_cq },
		{ "qp", self->attr.max_qp, mk_qp, rm_qp },
		{ "mr", self->attr.max_mr, mk_mr, rm_mr },
		{ "srq", self->attr.max_srq, mk_srq, rm_srq },
	};

	ASSERT_NE(NULL, cq);
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_limit(_metadata, self->ctx, self->pd,
			    cases[i].create == mk_mr ? (void *)buf : (void *)cq,
			    &cases[i]);
	ibv_destroy_cq(cq);
	free(buf);
}

TEST_F(obj, bad_verbs_fail_with_errno_and_leave_nothing)
{
	int base = vrnic_res_count("cq");
	struct ibv_cq *cq;

	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq(self->ctx, self->attr.max_cqe + 1, NULL, NULL, 0));
	EXPECT_EQ(EINVAL, errno);
	cq = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	errno = 0;
	EXPECT_EQ(NULL, rc_qp(self->pd, cq, cq, self->attr.max_qp_wr + 1));
	EXPECT_EQ(EINVAL, errno);
	ibv_destroy_cq(cq);
	EXPECT_EQ(base, vrnic_res_count("cq"));
}

/* Move an RC QP RESET -> INIT -> RTR -> RTS towards a made-up peer. */
static int to_rts(struct ibv_context *ctx, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	int gid = vrnic_ipv4_gid_index(ctx);

	if (gid < 0 || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x123;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = gid;
	a.ah_attr.grh.hop_limit = 64;
	/* Ourselves: the kernel resolves the destination MAC of dgid when
	 * moving to RTR, and nobody else is on the wire in this test. */
	ibv_query_gid(ctx, 1, gid, &a.ah_attr.grh.dgid);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			     IBV_QP_MAX_QP_RD_ATOMIC);
}

static int set_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

TEST_F(obj, qp_state_rules)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = rc_qp(self->pd, cq, cq, 4);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	ASSERT_NE(NULL, qp);
	EXPECT_NE(0, set_state(qp, IBV_QPS_RTS));	/* RESET -> RTS */
	EXPECT_NE(0, set_state(qp, IBV_QPS_INIT));	/* missing attrs */
	ASSERT_EQ(0, to_rts(self->ctx, qp));
	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN, &ia));
	EXPECT_EQ(IBV_QPS_RTS, a.qp_state);
	EXPECT_EQ(0x123, a.dest_qp_num);
	EXPECT_NE(0, set_state(qp, IBV_QPS_RTR));	/* RTS -> RTR */
	EXPECT_EQ(0, set_state(qp, IBV_QPS_ERR));
	EXPECT_EQ(0, set_state(qp, IBV_QPS_RESET));
	EXPECT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	EXPECT_EQ(IBV_QPS_RESET, a.qp_state);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	int got = 0;

	for (int t = 0; t < ms && got < n; t += 10) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep(10000);
	}
	return got;
}

TEST_F(obj, err_flushes_everything)
{
	struct ibv_cq *scq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = rc_qp(self->pd, scq, rcq, 8);
	char *buf = aligned_alloc(4096, 4096);
	struct ibv_mr *mr = ibv_reg_mr(self->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad_r;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND }, *bad_s;
	struct ibv_wc wc[8];

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, to_rts(self->ctx, qp));
	for (int i = 0; i < 3; i++) {
		rwr.wr_id = 100 + i;
		ASSERT_EQ(0, ibv_post_recv(qp, &rwr, &bad_r));
	}
	swr.wr_id = 200;
	swr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(qp, &swr, &bad_s));
	swr.wr_id = 201;
	swr.send_flags = 0;			/* unsignaled: flushed anyway */
	ASSERT_EQ(0, ibv_post_send(qp, &swr, &bad_s));
	/* No peer exists, so nothing completes before ERR. */
	EXPECT_EQ(0, poll_n(scq, wc, 1, 200));
	ASSERT_EQ(0, set_state(qp, IBV_QPS_ERR));
	ASSERT_EQ(2, poll_n(scq, wc, 2, 5000));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(200 + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
	}
	ASSERT_EQ(3, poll_n(rcq, wc, 3, 5000));
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(100 + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
	}
	/* Posting in ERR succeeds and completes with a flush. */
	swr.wr_id = 300;
	ASSERT_EQ(0, ibv_post_send(qp, &swr, &bad_s));
	rwr.wr_id = 400;
	ASSERT_EQ(0, ibv_post_recv(qp, &rwr, &bad_r));
	ASSERT_EQ(1, poll_n(scq, wc, 1, 5000));
	EXPECT_EQ(300, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	ASSERT_EQ(1, poll_n(rcq, wc, 1, 5000));
	EXPECT_EQ(400, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	EXPECT_EQ(0, poll_n(scq, wc, 1, 100));
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	free(buf);
}

/* Interrupt count of the completion vector's IRQ "vrnic-comp<v>@...". */
static long comp_irqs(int v)
{
	char line[512], want[32];
	long total = -1;
	FILE *f = fopen("/proc/interrupts", "r");

	snprintf(want, sizeof(want), "vrnic-comp%d@", v);
	while (f && fgets(line, sizeof(line), f)) {
		char *p = line;

		if (!strstr(line, want))
			continue;
		total = 0;
		strtol(p, &p, 10);		/* irq number */
		p++;				/* ':' */
		for (;;) {
			char *e;
			long n = strtol(p, &e, 10);

			if (e == p)
				break;
			total += n;
			p = e;
		}
	}
	if (f)
		fclose(f);
	return total;
}

TEST_F(obj, cq_event_on_its_vector)
{
	for (int v = 0; v < self->ctx->num_comp_vectors; v++) {
		struct ibv_comp_channel *ch = ibv_create_comp_channel(self->ctx);
		struct ibv_cq *cq = ibv_create_cq(self->ctx, 8, NULL, ch, v);
		struct ibv_qp *qp = rc_qp(self->pd, cq, cq, 4);
		char *buf = aligned_alloc(4096, 4096);
		struct ibv_mr *mr = ibv_reg_mr(self->pd, buf, 4096,
					       IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = v, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		long before = comp_irqs(v);
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		struct ibv_wc wc;

		ASSERT_NE(NULL, qp);
		ASSERT_LE(0, before) TH_LOG("no vrnic-comp%d IRQ", v);
		ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
		ASSERT_EQ(0, ibv_post_recv(qp, &rwr, &bad));
		ASSERT_EQ(0, ibv_req_notify_cq(cq, 0));
		ASSERT_EQ(0, set_state(qp, IBV_QPS_ERR));	/* flush -> CQE */
		ASSERT_EQ(1, poll(&pfd, 1, 10000)) TH_LOG("no event on vector %d", v);
		ASSERT_EQ(0, ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
		EXPECT_EQ(cq, ev_cq);
		ibv_ack_cq_events(cq, 1);
		EXPECT_EQ(1, ibv_poll_cq(cq, 1, &wc));
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
		EXPECT_LT(before, comp_irqs(v)) TH_LOG("vector %d did not fire", v);
		ibv_destroy_qp(qp);
		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		ibv_destroy_comp_channel(ch);
		free(buf);
	}
}

TEST_HARNESS_MAIN
