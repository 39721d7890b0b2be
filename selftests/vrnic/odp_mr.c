// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging (IBV_ACCESS_ON_DEMAND): MRs that pin nothing, whose
 * pages the device faults in as RDMA reaches them and the kernel takes
 * back when the process changes its memory. Two RC QPs of one guest talk
 * through the device's loopback: "the peer" is QP a, whose RDMA WRITEs and
 * READs reach the ODP MR through the device's responder, exactly as from
 * another node.
 *  - A 256 MiB ODP MR costs no memory: registering it faults nothing in,
 *    three 64 KiB WRITEs fault in their pages and no others (the device's
 *    own translation, debugfs mr_query, has exactly those entries present),
 *    and the data is where the process reads it.
 *  - madvise(MADV_DONTNEED): the pages go (invalidations), the process
 *    reads zeros, and the next WRITE lands in the new pages it then reads.
 *  - munmap: a WRITE into the range fails (REM_ACCESS_ERR), nothing else
 *    is touched; mapped again at the same address, the MR works again.
 *  - mremap away: the data moved with the pages, the old range fails.
 *  - fork: a child shares the pages copy-on-write; a WRITE into the
 *    parent's MR after the fork reaches the parent's pages only, never the
 *    child's copy.
 *  - Concurrency: one thread zaps the even pages of the MR in a loop while
 *    WRITEs fault them in again, and WRITEs and READs of the odd pages run
 *    and are checked.
 *  - Faults and time against a pinned MR: first touch (one fault per
 *    page), warm (none), pinned; the medians are reported, not judged.
 *  - Implicit ODP: one MR over the whole address space serves buffers
 *    mapped anywhere, before and after it was registered; madvise and
 *    munmap work on it as on an explicit one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"
#include "mr_query.h"
#include "qp.h"

#define PG		4096ul
#define SRC_LEN		(1ul << 20)
#define ODP_ACC		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND)

/* Port 1's counter name (rdma statistic), or -1. */
static void fill(char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)(mix(seed + i / 8) >> (i % 8 * 8));
}

FIXTURE(odp) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *src_mr;
	char *src;
	struct ibv_ah_attr ah;
};

static bool pair_up(struct __test_metadata *_metadata,
		    FIXTURE_DATA(odp) *self)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.send_cq = self->cq, .recv_cq = self->cq,
	};
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 1 };
	struct verdict v = { .ok = true };

	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	self->a = ibv_create_qp(self->pd, &ia);
	self->b = ibv_create_qp(self->pd, &ia);
	if (!self->a || !self->b)
		return false;
	if (!(qp_to_init(self->a, &v) && qp_to_init(self->b, &v) &&
	      qp_to_rts(self->a, &self->ah, self->b->qp_num, 200, 100, &k,
			&v) &&
	      qp_to_rts(self->b, &self->ah, self->a->qp_num, 100, 200, &k,
			&v))) {
		TH_LOG("%s", v.note);
		return false;
	}
	return true;
}

FIXTURE_SETUP(odp)
{
	struct ibv_device_attr_ex dx;
	union ibv_gid gid;
	int gidx;

	self->a = self->b = NULL;
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	ASSERT_TRUE(dx.odp_caps.general_caps & IBV_ODP_SUPPORT);
	ASSERT_EQ(IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ,
		  dx.odp_caps.per_transport_caps.rc_odp_caps &
		  (IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ));
	gidx = vrnic_wait_ipv4_gid(self->ctx, now() + 30, &gid);
	ASSERT_LE(0, gidx);
	roce_ah_attr(&self->ah, gid.raw, gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_TRUE(self->pd && self->cq);
	ASSERT_TRUE(pair_up(_metadata, self));
	self->src = aligned_alloc(PG, SRC_LEN);
	ASSERT_NE(NULL, self->src);
	self->src_mr = ibv_reg_mr(self->pd, self->src, SRC_LEN,
				  IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->src_mr);
}

FIXTURE_TEARDOWN(odp)
{
	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	if (self->src_mr)
		ibv_dereg_mr(self->src_mr);
	ibv_destroy_cq(self->cq);
	vrnic_close(self->ctx, self->pd);
	free(self->src);
}

/* One RDMA WRITE (or READ) of len bytes between src + soff and raddr. */
static int rdma(FIXTURE_DATA(odp) *self, enum ibv_wr_opcode op, size_t soff,
		uint32_t len, void *raddr, uint32_t rkey)
{
	struct ibv_wc wc;

	if (qp_post_one(self->a, op, self->src_mr, self->src + soff, len,
			(uintptr_t)raddr, rkey, 0, 1))
		return -1;
	if (wait_wc(self->cq, &wc, 1, 20000) != 1)
		return -2;
	return wc.status;
}

/* Entries of the MR's device translation with the present bit. */
static long present_entries(uint32_t key)
{
	struct mr_query q;
	long n = 0;

	if (mr_query(key, &q))
		return -1;
	for (uint64_t i = 0; i < q.npages; i++)
		n += q.page[i] & 1;	/* VRNIC_ODP_PRESENT */
	mr_query_free(&q);
	return n;
}

TEST_F(odp, a_large_mr_faults_in_only_what_rdma_touches)
{
	const size_t len = 256ul << 20, chunk = 64 << 10;
	const size_t at[] = { 0, len / 2 + 3 * PG, len - chunk };
	long rss0, rss1, rss2, f0 = vrnic_port_counter("odp_page_faults");
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct ibv_mr *mr;

	ASSERT_NE(MAP_FAILED, buf);
	rss0 = vrnic_rss_kib();
	mr = ibv_reg_mr(self->pd, buf, len, ODP_ACC);
	ASSERT_NE(NULL, mr) TH_LOG("ibv_reg_mr ODP: %s", strerror(errno));
	rss1 = vrnic_rss_kib();
	EXPECT_GT(4096, rss1 - rss0) TH_LOG("registering took %ld KiB", rss1 - rss0);
	EXPECT_EQ(0, present_entries(mr->lkey));
	for (int i = 0; i < 3; i++) {
		fill(self->src, chunk, 10 + i);
		ASSERT_EQ(IBV_WC_SUCCESS, rdma(self, IBV_WR_RDMA_WRITE, 0, chunk,
					       buf + at[i], mr->rkey));
		EXPECT_EQ(0, memcmp(buf + at[i], self->src, chunk));
	}
	rss2 = vrnic_rss_kib();
	TH_LOG("RSS %ld KiB, +%ld registering, +%ld after 3 x 64 KiB; %ld faults",
	       rss0, rss1 - rss0, rss2 - rss1,
	       vrnic_port_counter("odp_page_faults") - f0);
	EXPECT_GT(16384, rss2 - rss0);
	EXPECT_EQ(3 * chunk / PG, present_entries(mr->lkey));
	EXPECT_LT(f0, vrnic_port_counter("odp_page_faults"));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, len);
}

TEST_F(odp, madvise_dontneed_drops_pages_and_the_next_write_lands)
{
	const size_t len = 1 << 20;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long inv0 = vrnic_port_counter("odp_invalidations");
	struct ibv_mr *mr;

	ASSERT_NE(MAP_FAILED, buf);
	mr = ibv_reg_mr(self->pd, buf, len, ODP_ACC);
	ASSERT_NE(NULL, mr);
	fill(self->src, len, 1);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, buf, mr->rkey));
	EXPECT_EQ(0, memcmp(buf, self->src, len));
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTNEED));
	EXPECT_LT(inv0, vrnic_port_counter("odp_invalidations"));
	EXPECT_EQ(0, present_entries(mr->lkey));
	for (size_t i = 0; i < len; i += PG)
		ASSERT_EQ(0, buf[i]);
	fill(self->src, len, 2);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, buf, mr->rkey));
	EXPECT_EQ(0, memcmp(buf, self->src, len));
	/* And READ serves the new pages. */
	memset(self->src, 0, len);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_READ, 0, len, buf, mr->rkey));
	EXPECT_EQ(0, memcmp(buf, self->src, len));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, len);
}

TEST_F(odp, munmap_fails_access_and_a_new_mapping_works)
{
	const size_t len = 1 << 20;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *again;
	struct ibv_mr *mr;

	ASSERT_NE(MAP_FAILED, buf);
	mr = ibv_reg_mr(self->pd, buf, len, ODP_ACC);
	ASSERT_NE(NULL, mr);
	fill(self->src, 64 << 10, 3);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(self, IBV_WR_RDMA_WRITE, 0, 64 << 10,
				       buf, mr->rkey));
	ASSERT_EQ(0, munmap(buf, len));
	EXPECT_EQ(0, present_entries(mr->lkey));
	/* Nothing is there: the fault cannot be served. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, 4096, buf + PG, mr->rkey));
	/* The same addresses mapped again: the MR serves the new pages. */
	again = mmap(buf, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(buf, again);
	ASSERT_TRUE(pair_up(_metadata, self));
	fill(self->src, 8192, 4);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(self, IBV_WR_RDMA_WRITE, 0, 8192,
				       buf + 5 * PG, mr->rkey));
	EXPECT_EQ(0, memcmp(buf + 5 * PG, self->src, 8192));
	EXPECT_EQ(0, buf[0]);		/* the old data went with the old pages */
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, len);
}

TEST_F(odp, mremap_moves_the_data_and_the_old_range_fails)
{
	const size_t len = 1 << 20;
	char *buf = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *to;
	struct ibv_mr *mr;

	ASSERT_NE(MAP_FAILED, buf);
	munmap(buf + len, len);		/* a hole to move into */
	mr = ibv_reg_mr(self->pd, buf, len, ODP_ACC);
	ASSERT_NE(NULL, mr);
	fill(self->src, len, 5);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, buf, mr->rkey));
	to = mremap(buf, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, buf + len);
	ASSERT_EQ(buf + len, to);
	EXPECT_EQ(0, memcmp(to, self->src, len));
	EXPECT_EQ(0, present_entries(mr->lkey));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, 64, buf, mr->rkey));
	EXPECT_EQ(0, memcmp(to, self->src, len));	/* untouched */
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(to, len);
}

TEST_F(odp, after_fork_writes_reach_the_parents_pages_only)
{
	const size_t len = 256 << 10;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *want = malloc(len), verdict = 0;
	int go[2], done[2], status;
	struct ibv_mr *mr;
	pid_t child;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_NE(NULL, want);
	mr = ibv_reg_mr(self->pd, buf, len, ODP_ACC);
	ASSERT_NE(NULL, mr);
	fill(self->src, len, 6);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, buf, mr->rkey));
	/* The pages as they are at the fork, before the WRITE below. */
	memcpy(want, buf, len);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		bool same;
		char c;

		if (read(go[0], &c, 1) != 1)
			_exit(2);
		same = !memcmp(want, buf, len);
		c = same ? 'y' : 'n';
		if (write(done[1], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	fill(self->src, len, 7);
	EXPECT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, buf, mr->rkey));
	EXPECT_EQ(0, memcmp(buf, self->src, len));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(done[0], &verdict, 1));
	EXPECT_EQ('y', verdict) TH_LOG("the child's copy changed");
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, len);
	free(want);
}

struct zapper {
	char *base;		/* the pages it zaps: base + 2k * PG */
	size_t npages;
	atomic_bool stop;
	long rounds;
};

static void *zap(void *arg)
{
	struct zapper *z = arg;

	while (!atomic_load(&z->stop)) {
		for (size_t i = 0; i < z->npages; i += 2)
			madvise(z->base + i * PG, PG, MADV_DONTNEED);
		z->rounds++;
	}
	return NULL;
}

TEST_F(odp, traffic_goes_on_while_other_pages_are_zapped)
{
	const size_t npages = 64, len = npages * PG;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct zapper z = { .base = buf, .npages = npages };
	long inv0 = vrnic_port_counter("odp_invalidations");
	struct ibv_mr *mr;
	pthread_t t;
	int bad = 0;

	ASSERT_NE(MAP_FAILED, buf);
	mr = ibv_reg_mr(self->pd, buf, len, ODP_ACC);
	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, pthread_create(&t, NULL, zap, &z));
	/*
	 * 100 rounds: a WRITE into an even page (it may be zapped any time:
	 * only the status counts), then WRITE and READ back an odd one.
	 */
	for (int r = 0; r < 100 && !bad; r++) {
		size_t pg = 1 + 2 * (r % (npages / 2));

		fill(self->src, PG, 100 + r);
		if (rdma(self, IBV_WR_RDMA_WRITE, 0, PG, buf + (pg - 1) * PG,
			 mr->rkey) != IBV_WC_SUCCESS ||
		    rdma(self, IBV_WR_RDMA_WRITE, 0, PG, buf + pg * PG,
			 mr->rkey) != IBV_WC_SUCCESS ||
		    rdma(self, IBV_WR_RDMA_READ, PG, PG, buf + pg * PG,
			 mr->rkey) != IBV_WC_SUCCESS ||
		    memcmp(self->src, self->src + PG, PG) ||
		    memcmp(self->src, buf + pg * PG, PG)) {
			TH_LOG("round %d, page %zu", r, pg);
			bad++;
		}
	}
	atomic_store(&z.stop, true);
	pthread_join(t, NULL);
	TH_LOG("%ld zap rounds, %ld invalidations", z.rounds,
	       vrnic_port_counter("odp_invalidations") - inv0);
	EXPECT_EQ(0, bad);
	EXPECT_LT(inv0, vrnic_port_counter("odp_invalidations"));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, len);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median microseconds of n one-page WRITEs, page i at buf + i * stride. */
static double write_us(FIXTURE_DATA(odp) *self, char *buf, size_t stride,
		       uint32_t rkey, int n, int *failed)
{
	double *t = calloc(n, sizeof(*t)), med;

	for (int i = 0; i < n; i++) {
		double t0 = now();

		if (rdma(self, IBV_WR_RDMA_WRITE, 0, 64, buf + i * stride, rkey) !=
		    IBV_WC_SUCCESS)
			(*failed)++;
		t[i] = (now() - t0) * 1e6;
	}
	qsort(t, n, sizeof(*t), cmp_double);
	med = t[n / 2];
	free(t);
	return med;
}

TEST_F(odp, faults_and_time_against_a_pinned_mr)
{
	const int n = 64;
	const size_t len = n * PG;
	char *obuf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *pbuf = aligned_alloc(PG, len);
	struct ibv_mr *omr, *pmr;
	double cold, warm, pinned;
	long f0, f1, f2;
	int failed = 0;

	ASSERT_NE(MAP_FAILED, obuf);
	ASSERT_NE(NULL, pbuf);
	omr = ibv_reg_mr(self->pd, obuf, len, ODP_ACC);
	pmr = ibv_reg_mr(self->pd, pbuf, len, ODP_ACC & ~IBV_ACCESS_ON_DEMAND);
	ASSERT_TRUE(omr && pmr);
	f0 = vrnic_port_counter("odp_page_faults");
	cold = write_us(self, obuf, PG, omr->rkey, n, &failed);
	f1 = vrnic_port_counter("odp_page_faults");
	warm = write_us(self, obuf, PG, omr->rkey, n, &failed);
	f2 = vrnic_port_counter("odp_page_faults");
	pinned = write_us(self, pbuf, PG, pmr->rkey, n, &failed);
	TH_LOG("64-byte WRITE, median of %d: first touch %.0f us (%ld faults), "
	       "warm %.0f us (%ld faults), pinned %.0f us", n, cold, f1 - f0,
	       warm, f2 - f1, pinned);
	EXPECT_EQ(0, failed);
	EXPECT_EQ(n, f1 - f0);		/* one per page touched */
	EXPECT_EQ(0, f2 - f1);		/* none once they are mapped */
	EXPECT_EQ(0, vrnic_port_counter("odp_page_faults") - f2);
	EXPECT_EQ(0, ibv_dereg_mr(omr));
	EXPECT_EQ(0, ibv_dereg_mr(pmr));
	munmap(obuf, len);
	free(pbuf);
}

TEST_F(odp, an_implicit_mr_covers_every_buffer)
{
	const size_t len = 1 << 20;
	char *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *b;
	struct ibv_device_attr_ex dx;
	struct ibv_mr *mr;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	ASSERT_TRUE(dx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
	ASSERT_NE(MAP_FAILED, a);
	mr = ibv_reg_mr(self->pd, NULL, SIZE_MAX, ODP_ACC);
	ASSERT_NE(NULL, mr) TH_LOG("implicit ODP MR: %s", strerror(errno));
	/* A buffer mapped after the registration, far from the first. */
	b = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, b);
	fill(self->src, len, 20);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, a, mr->rkey));
	EXPECT_EQ(0, memcmp(a, self->src, len));
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, b, mr->rkey));
	EXPECT_EQ(0, memcmp(b, self->src, len));
	/* READ through it, into a pinned buffer. */
	memset(self->src, 0, len);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_READ, 0, len, b, mr->rkey));
	EXPECT_EQ(0, memcmp(b, self->src, len));
	/* Pages taken back, then written again. */
	ASSERT_EQ(0, madvise(a, len, MADV_DONTNEED));
	EXPECT_EQ(0, a[0]);
	fill(self->src, len, 21);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, len, a, mr->rkey));
	EXPECT_EQ(0, memcmp(a, self->src, len));
	/* Unmapped memory is not the process's: REM_ACCESS_ERR. */
	ASSERT_EQ(0, munmap(b, len));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(self, IBV_WR_RDMA_WRITE, 0, 64, b, mr->rkey));
	EXPECT_EQ(0, memcmp(a, self->src, len));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(a, len);
}

TEST_HARNESS_MAIN
