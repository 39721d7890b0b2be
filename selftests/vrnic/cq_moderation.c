// SPDX-License-Identifier: GPL-2.0
/*
 * CQ event moderation through ibv_modify_cq (provider -> uverbs -> driver
 * -> MODIFY_CQ): an armed CQ's event waits for cq_count completions or
 * cq_period microseconds after the first, whichever comes first. Two RC
 * QPs of one guest talk through the device's loopback; A's signaled RDMA
 * WRITEs to B complete on A's CQ, which has a completion channel.
 */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"
#include "qp.h"

#define BUF	4096

FIXTURE(mod) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	char *buf;
};

FIXTURE_SETUP(mod)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 32, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 12 };
	struct verdict v = { .ok = true };
	struct ibv_ah_attr ah;
	union ibv_gid gid;
	int gidx;

	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	gidx = vrnic_wait_ipv4_gid(self->ctx, now() + 30, &gid);
	ASSERT_LE(0, gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	self->ch = ibv_create_comp_channel(self->ctx);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, self->ch, 0);
	self->bcq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_TRUE(self->pd && self->ch && self->cq && self->bcq);
	ia.send_cq = ia.recv_cq = self->cq;
	self->a = ibv_create_qp(self->pd, &ia);
	ia.send_cq = ia.recv_cq = self->bcq;
	self->b = ibv_create_qp(self->pd, &ia);
	self->buf = aligned_alloc(4096, 2 * BUF);
	self->mr = ibv_reg_mr(self->pd, self->buf, 2 * BUF,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_TRUE(self->a && self->b && self->buf && self->mr);
	roce_ah_attr(&ah, gid.raw, gidx);
	ASSERT_TRUE(qp_to_init(self->a, &v) && qp_to_init(self->b, &v) &&
		    qp_to_rts(self->a, &ah, self->b->qp_num, 200, 100, &k, &v) &&
		    qp_to_rts(self->b, &ah, self->a->qp_num, 100, 200, &k, &v))
		TH_LOG("%s", v.note);
}

FIXTURE_TEARDOWN(mod)
{
	ibv_destroy_qp(self->a);
	ibv_destroy_qp(self->b);
	ibv_dereg_mr(self->mr);
	ibv_destroy_cq(self->cq);
	ibv_destroy_cq(self->bcq);
	ibv_destroy_comp_channel(self->ch);
	vrnic_close(self->ctx, self->pd);
	free(self->buf);
}

static int moderate(struct ibv_cq *cq, uint16_t count, uint16_t period)
{
	struct ibv_modify_cq_attr m = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = count, .cq_period = period },
	};

	return ibv_modify_cq(cq, &m);
}

/* n signaled 64-byte WRITEs from the buffer's first page to its second. */
static int post_writes(FIXTURE_DATA(mod) *self, int n)
{
	struct ibv_sge sge = { (uintptr_t)self->buf, 64, self->mr->lkey };
	struct ibv_send_wr wr[32], *bad;

	for (int i = 0; i < n; i++) {
		wr[i] = (struct ibv_send_wr) {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.wr.rdma = { (uintptr_t)self->buf + BUF,
				     self->mr->rkey },
		};
	}
	return ibv_post_send(self->a, wr, &bad);
}

static int event_within(struct ibv_comp_channel *ch, struct ibv_cq *cq,
			int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) || ev_cq != cq)
		return -1;
	ibv_ack_cq_events(cq, 1);
	return 1;
}

TEST_F(mod, device_advertises_16_bit_count_and_period)
{
	struct ibv_device_attr_ex ax;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &ax));
	EXPECT_EQ(65535, ax.cq_mod_caps.max_cq_count);
	EXPECT_EQ(65535, ax.cq_mod_caps.max_cq_period);
}

/*
 * Count 8, the longest period (65.5 ms): seven completions raise no event,
 * the eighth does. The seven are posted in one chain, so they complete
 * well inside the period even under TCG.
 */
TEST_F(mod, event_waits_for_the_count)
{
	struct ibv_wc wc[8];

	ASSERT_EQ(0, moderate(self->cq, 8, 65535));
	ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, post_writes(self, 7));
	ASSERT_EQ(7, wait_wc(self->cq, wc, 7, 10000));
	for (int i = 0; i < 7; i++)
		ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status);
	EXPECT_EQ(0, event_within(self->ch, self->cq, 0))
		TH_LOG("an event before the 8th completion");
	ASSERT_EQ(0, post_writes(self, 1));
	ASSERT_EQ(1, wait_wc(self->cq, wc, 1, 10000));
	EXPECT_EQ(1, event_within(self->ch, self->cq, 10000));
}

/* Count 0, period 50 ms: one completion's event comes 50 ms after it. */
TEST_F(mod, event_waits_for_the_period)
{
	struct ibv_wc wc;
	double t0;

	ASSERT_EQ(0, moderate(self->cq, 0, 50000));
	ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	t0 = now();
	ASSERT_EQ(0, post_writes(self, 1));
	ASSERT_EQ(1, event_within(self->ch, self->cq, 10000));
	EXPECT_LE(0.050, now() - t0);
	ASSERT_EQ(1, wait_wc(self->cq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* No moderation (the default, and 0/0 again): one event per arm at once. */
TEST_F(mod, without_moderation_every_arm_fires_at_its_first_completion)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, moderate(self->cq, 8, 65535));
	ASSERT_EQ(0, moderate(self->cq, 0, 0));
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
		ASSERT_EQ(0, post_writes(self, 1));
		ASSERT_EQ(1, event_within(self->ch, self->cq, 10000));
		ASSERT_EQ(1, wait_wc(self->cq, &wc, 1, 10000));
	}
}

/* A count with no period is given the longest period by the driver. */
TEST_F(mod, count_without_period_is_accepted)
{
	struct ibv_wc wc[4];

	ASSERT_EQ(0, moderate(self->cq, 4, 0));
	ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, post_writes(self, 4));
	ASSERT_EQ(1, event_within(self->ch, self->cq, 10000));
	ASSERT_EQ(4, wait_wc(self->cq, wc, 4, 10000));
}

TEST_HARNESS_MAIN
