// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand MRs between the two guests of a pair (tools/vm -n 2): the
 * responder (node 1) registers memory without pinning it, and only the
 * requester's RDMA (node 0) ever touches its pages.
 *  - A 256 MiB ODP MR: three 64 KiB WRITEs from the peer fault in their
 *    pages and hardly any others (the responder's RSS), the data is where
 *    the responder's process reads it, and the device counted the faults.
 *  - READs by the peer of a page no one touched (zeros) and of written ones.
 *  - madvise(MADV_DONTNEED) of the written ranges between the peer's
 *    WRITEs: the next WRITEs land in the new pages.
 *  - An implicit ODP MR (the whole address space): the peer WRITEs into two
 *    buffers of the responder mapped far apart, one after the registration.
 * Both nodes print the same TAP lines, each side's reasons as comments.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "pair.h"

#define CTL_PORT	7474
#define BIG		(256ul << 20)
#define CHUNK		(64ul << 10)
#define OP_MS		30000
#define ODP_ACC		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND)

static const size_t at[] = { 0, BIG / 2 + 3 * 4096, BIG - CHUNK };

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	/* responder: the ODP MR over big; requester: a pinned buffer */
	char *big;
	struct ibv_mr *mr;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	uint64_t seed;
};

static void fill(char *p, size_t len, uint64_t seed)
{
	for (size_t k = 0; k < len; k++)
		p[k] = pair_pat(seed, k);
}

static bool is(const char *p, size_t len, uint64_t seed, const char *what,
	       struct verdict *v)
{
	for (size_t k = 0; k < len; k++) {
		uint8_t want = seed ? pair_pat(seed, k) : 0;

		if ((uint8_t)p[k] != want) {
			fail(v, "%s: byte %zu is %#x, want %#x", what, k,
			     (uint8_t)p[k], want);
			return false;
		}
	}
	return true;
}

/* One RDMA op of len bytes between the requester's buffer + loff and raddr. */
static bool rdma(struct side *s, enum ibv_wr_opcode op, size_t loff,
		 uint32_t len, uint64_t raddr, struct verdict *v)
{
	struct ibv_wc wc;

	if (qp_post_one(s->qp, op, s->mr, s->big + loff, len, raddr,
			s->peer_rkey, 0, 1)) {
		fail(v, "ibv_post_send: %s", strerror(errno));
		return false;
	}
	if (wait_wc(s->cq, &wc, 1, OP_MS) != 1) {
		fail(v, "no completion in %d s", OP_MS / 1000);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fail(v, "%s to %#llx: %s", op == IBV_WR_RDMA_READ ? "READ" :
		     "WRITE", (unsigned long long)raddr,
		     ibv_wc_status_str(wc.status));
		return false;
	}
	return true;
}

/*
 * The requester WRITEs the three chunks (data seed0 + i) into the
 * responder's MR; true on the responder once they should be there.
 */
static bool write_chunks(struct pair_ctx *c, struct side *s, uint64_t seed0,
			 struct verdict *v)
{
	if (!pair_step(c, v))
		return false;
	for (int i = 0; i < 3 && !c->server; i++) {
		fill(s->big, CHUNK, seed0 + i);
		if (!rdma(s, IBV_WR_RDMA_WRITE, 0, CHUNK, s->peer_addr + at[i],
			  v))
			break;
	}
	return pair_step(c, v) && c->server;
}

static void check_chunks(struct side *s, uint64_t seed0, const char *what,
			 struct verdict *v)
{
	for (int i = 0; i < 3; i++)
		is(s->big + at[i], CHUNK, seed0 + i, what, v);
}

static void case_sparse_writes(struct pair_ctx *c, struct side *s,
			       struct verdict *v)
{
	long rss0 = vrnic_rss_kib(), f0 = vrnic_port_counter("odp_page_faults");

	if (!write_chunks(c, s, s->seed, v))
		return;
	check_chunks(s, s->seed, "written data", v);
	info(v, "RSS +%ld KiB for 3 x 64 KiB into 256 MiB, %ld faults",
	     vrnic_rss_kib() - rss0, vrnic_port_counter("odp_page_faults") - f0);
	if (vrnic_rss_kib() - rss0 > 16384)
		fail(v, "RSS grew by %ld KiB", vrnic_rss_kib() - rss0);
	if (vrnic_port_counter("odp_page_faults") - f0 < 3)
		fail(v, "fewer than 3 page faults");
}

static void case_reads(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	if (!pair_step(c, v) || c->server)
		return;
	memset(s->big, 0x5a, 2 * CHUNK);
	if (rdma(s, IBV_WR_RDMA_READ, 0, CHUNK, s->peer_addr + BIG / 4, v))
		is(s->big, CHUNK, 0, "a page no one wrote", v);
	if (rdma(s, IBV_WR_RDMA_READ, CHUNK, CHUNK, s->peer_addr + at[1], v))
		is(s->big + CHUNK, CHUNK, s->seed + 1, "written data", v);
}

static void case_zap_between_writes(struct pair_ctx *c, struct side *s,
				    struct verdict *v)
{
	long inv0 = vrnic_port_counter("odp_invalidations");

	if (c->server) {
		for (int i = 0; i < 3; i++)
			if (madvise(s->big + at[i], CHUNK, MADV_DONTNEED))
				fail(v, "madvise: %s", strerror(errno));
		is(s->big + at[0], CHUNK, 0, "a zapped range", v);
		if (vrnic_port_counter("odp_invalidations") == inv0)
			fail(v, "no invalidation");
	}
	if (write_chunks(c, s, s->seed + 10, v))
		check_chunks(s, s->seed + 10, "rewritten data", v);
}

/* The responder's implicit MR, two buffers: the second mapped after it. */
static void case_implicit(struct pair_ctx *c, struct side *s,
			  struct verdict *v)
{
	struct pair_msg me = { .ok = true }, peer;
	char *a = NULL, *b = NULL;
	struct ibv_mr *mr = NULL;
	uint32_t rkey = 0;

	if (c->server) {
		a = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		mr = ibv_reg_mr(c->pd, NULL, SIZE_MAX, ODP_ACC);
		b = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED || b == MAP_FAILED || !mr)
			fail(v, "implicit MR or buffers: %s", strerror(errno));
		else
			me.rkey = mr->rkey;
		me.addr = (uintptr_t)a;
		me.seed = (uintptr_t)b;
		me.ok = v->ok;
	}
	if (!pair_xchg(c, &me, &peer)) {
		fail(v, "control connection lost");
		goto out;
	}
	if (!v->ok || !peer.ok)
		goto out;
	if (!c->server) {
		rkey = s->peer_rkey;
		s->peer_rkey = peer.rkey;
		fill(s->big, CHUNK, s->seed + 20);
		if (rdma(s, IBV_WR_RDMA_WRITE, 0, CHUNK, peer.addr, v)) {
			fill(s->big, CHUNK, s->seed + 21);
			rdma(s, IBV_WR_RDMA_WRITE, 0, CHUNK, peer.seed, v);
		}
		s->peer_rkey = rkey;
	}
	if (pair_step(c, v) && c->server) {
		is(a, CHUNK, s->seed + 20, "the first buffer", v);
		is(b, CHUNK, s->seed + 21, "the second buffer", v);
	}
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (a && a != MAP_FAILED)
		munmap(a, CHUNK);
	if (b && b != MAP_FAILED)
		munmap(b, CHUNK);
}

static const struct {
	const char *name;
	void (*run)(struct pair_ctx *c, struct side *s, struct verdict *v);
} cases[] = {
	{ "ODP: WRITEs from the peer fault in only their pages of 256 MiB",
	  case_sparse_writes },
	{ "ODP: READs by the peer of untouched and of written pages", case_reads },
	{ "ODP: madvise(DONTNEED) between the peer's WRITEs", case_zap_between_writes },
	{ "implicit ODP: the peer WRITEs into buffers mapped anywhere",
	  case_implicit },
};

/* The responder's ODP MR over BIG, or the requester's pinned buffer. */
static bool side_open(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	struct pair_msg me = { .seed = rand64() }, peer;
	size_t len = c->server ? BIG : 2 * CHUNK;

	s->big = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS |
		      (c->server ? MAP_NORESERVE : MAP_POPULATE), -1, 0);
	if (s->big == MAP_FAILED) {
		fail(v, "mmap: %s", strerror(errno));
	} else {
		s->mr = ibv_reg_mr(c->pd, s->big, len,
				   c->server ? ODP_ACC : ODP_ACC &
				   ~IBV_ACCESS_ON_DEMAND);
		if (!s->mr)
			fail(v, "ibv_reg_mr: %s", strerror(errno));
		else
			me.rkey = s->mr->rkey;
		me.addr = (uintptr_t)s->big;
	}
	if (!pair_qp(c, &s->cq, &s->qp, &me, &peer, v))
		return false;
	s->peer_rkey = peer.rkey;
	s->peer_addr = peer.addr;
	s->seed = c->server ? me.seed : peer.seed;
	return true;
}

int main(int argc, char **argv)
{
	struct pair_ctx c = { .sock = -1 };
	struct verdict setup = { .ok = true };
	struct side s = { .big = MAP_FAILED };

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(ARRAY_SIZE(cases));
	if (pair_setup(&c, CTL_PORT, ARRAY_SIZE(cases)))
		side_open(&c, &s, &setup);
	else
		fail(&setup, "no device or no peer");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct verdict v = { .ok = true };

		if (c.sock < 0) {
			ksft_test_result_fail("%s (control connection lost)\n",
					      cases[i].name);
			continue;
		}
		if (setup.ok)
			cases[i].run(&c, &s, &v);
		else
			v = setup;
		pair_finish(&c, cases[i].name, &v);
	}
	if (s.qp)
		ibv_destroy_qp(s.qp);
	if (s.mr)
		ibv_dereg_mr(s.mr);
	if (s.cq)
		ibv_destroy_cq(s.cq);
	if (s.big != MAP_FAILED)
		munmap(s.big, c.server ? BIG : 2 * CHUNK);
	if (c.sock >= 0)
		close(c.sock);
	vrnic_close(c.dev, c.pd);
	ksft_finished();
}
