// SPDX-License-Identifier: GPL-2.0
/*
 * The device clock and completion timestamps:
 *  - ibv_query_device_ex reports hca_core_clock 1 GHz (1000000 kHz) and a
 *    64-bit completion_timestamp_mask;
 *  - ibv_query_rt_values_ex reads the clock (nanoseconds of the host's real
 *    time): it never goes back, moves as time does, and is near the guest's
 *    own CLOCK_REALTIME;
 *  - an extended CQ with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and _WALLCLOCK:
 *    every completion of 32 RDMA WRITEs (two QPs through the device's
 *    loopback) carries a timestamp between the clock read before its WR
 *    was posted and after it was polled, the two readers agree, and they
 *    never go back;
 *  - the clock page this process maps is read-only: mprotect() cannot
 *    make it writable.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "common.h"
#include "qp.h"

#define NS		1000000000ull
#define LEN		4096

/* The device clock through ibv_query_rt_values_ex (raw: ns). */
static uint64_t dev_clock(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(ctx, &v) ||
	    !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	return (uint64_t)v.raw_clock.tv_sec * NS + v.raw_clock.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * NS + t.tv_nsec;
}

FIXTURE(ts) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(ts)
{
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
}

FIXTURE_TEARDOWN(ts)
{
	ibv_close_device(self->ctx);
}

TEST_F(ts, device_reports_a_1ghz_64bit_clock)
{
	struct ibv_device_attr_ex dx;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	EXPECT_EQ(1000000, dx.hca_core_clock);
	EXPECT_EQ(~0ull, dx.completion_timestamp_mask);
}

TEST_F(ts, raw_clock_is_real_time)
{
	uint64_t first = dev_clock(self->ctx), prev = first, cur, guest;
	double t0 = now();

	ASSERT_NE(0, first);
	for (int i = 0; i < 200; i++) {
		cur = dev_clock(self->ctx);
		ASSERT_LE(prev, cur) TH_LOG("read %d went back", i);
		prev = cur;
	}
	usleep(200000);
	cur = dev_clock(self->ctx);
	guest = realtime_ns();
	/* It moved about as the guest's clock did (TCG: generously). */
	EXPECT_GT(cur - first, (uint64_t)((now() - t0) * NS / 4));
	/* And it is the same kind of clock: the guest took its time from it. */
	TH_LOG("device clock - guest CLOCK_REALTIME: %lld ms",
	       (long long)((int64_t)(cur - guest) / 1000000));
	EXPECT_LT(llabs((long long)(cur - guest)), 120ll * NS);
}

TEST_F(ts, completions_carry_the_device_clock)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 64,
		.wc_flags = IBV_WC_STANDARD_FLAGS |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 1 };
	struct ibv_poll_cq_attr pattr = {};
	struct verdict v = { .ok = true };
	uint8_t *src = aligned_alloc(4096, LEN), *dst = aligned_alloc(4096, LEN);
	struct ibv_pd *pd = ibv_alloc_pd(self->ctx);
	struct ibv_mr *smr, *dmr;
	struct ibv_qp *a, *b;
	struct ibv_ah_attr ah;
	struct ibv_cq_ex *cqx;
	union ibv_gid gid;
	uint64_t last = 0;
	int gidx;

	ASSERT_TRUE(src && dst && pd);
	gidx = vrnic_wait_ipv4_gid(self->ctx, now() + 30, &gid);
	ASSERT_LE(0, gidx);
	roce_ah_attr(&ah, gid.raw, gidx);
	cqx = ibv_create_cq_ex(self->ctx, &cattr);
	ASSERT_NE(NULL, cqx) TH_LOG("create_cq_ex with timestamps: %s",
				    strerror(errno));
	ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(cqx);
	a = ibv_create_qp(pd, &ia);
	b = ibv_create_qp(pd, &ia);
	smr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	dmr = ibv_reg_mr(pd, dst, LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE);
	ASSERT_TRUE(a && b && smr && dmr);
	ASSERT_TRUE(qp_to_init(a, &v) && qp_to_init(b, &v) &&
		    qp_to_rts(a, &ah, b->qp_num, 10, 20, &k, &v) &&
		    qp_to_rts(b, &ah, a->qp_num, 20, 10, &k, &v)) TH_LOG("%s",
									 v.note);

	for (int i = 0; i < 32; i++) {
		uint64_t before = dev_clock(self->ctx), after, ts, wall;
		double end = now() + 20;
		int ret;

		ASSERT_EQ(0, qp_post_one(a, IBV_WR_RDMA_WRITE, smr, src, LEN,
					 (uintptr_t)dst, dmr->rkey, 0, i));
		while ((ret = ibv_start_poll(cqx, &pattr)) == ENOENT &&
		       now() < end)
			usleep(100);
		ASSERT_EQ(0, ret) TH_LOG("no completion for WRITE %d", i);
		ASSERT_EQ(IBV_WC_SUCCESS, cqx->status);
		ts = ibv_wc_read_completion_ts(cqx);
		wall = ibv_wc_read_completion_wallclock_ns(cqx);
		ibv_end_poll(cqx);
		after = dev_clock(self->ctx);
		ASSERT_EQ(ts, wall);
		ASSERT_LE(before, ts) TH_LOG("WRITE %d: timestamp before the post",
					     i);
		ASSERT_LE(ts, after) TH_LOG("WRITE %d: timestamp after the poll",
					    i);
		ASSERT_LE(last, ts);
		last = ts;
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	ibv_dealloc_pd(pd);
	free(src);
	free(dst);
}

/* The clock page is this process's one read-only uverbs mapping. */
TEST_F(ts, clock_page_cannot_be_made_writable)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned long lo = 0, hi;
	char line[512], perm[8];
	int found = 0;

	ASSERT_NE(NULL, maps);
	ASSERT_NE(0, dev_clock(self->ctx));	/* mapped and working */
	while (fgets(line, sizeof(line), maps)) {
		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 ||
		    strcmp(perm, "r--s"))
			continue;
		found++;
		errno = 0;
		EXPECT_NE(0, mprotect((void *)lo, hi - lo,
				      PROT_READ | PROT_WRITE));
		EXPECT_EQ(EACCES, errno);
	}
	fclose(maps);
	EXPECT_EQ(1, found);
}

TEST_HARNESS_MAIN
