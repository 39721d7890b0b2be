// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf MRs between the two guests of a pair (tools/vm -n 2
 * --peer-mem 16): for each exporter of dbuf.h - the system dma-heap,
 * udmabuf and the ivshmem BAR ("GPU memory", reached by peer-to-peer DMA) -
 * both nodes register a dma-buf of that exporter (ibv_reg_dmabuf_mr, the MR
 * one page into the buffer, at an I/O virtual address of its own) and the
 * requester (node 0) moves data from its dma-buf to the responder's (node
 * 1) and back:
 *  - RDMA WRITE of 256 KiB + 100 bytes to an odd address: the bytes arrive,
 *    the bytes around them stay;
 *  - RDMA READ of 256 KiB + 100 bytes into the requester's dma-buf;
 *  - a SEND of 5000 bytes into a receive WQE whose buffer is a dma-buf;
 *  - ATOMIC CMP_AND_SWP and FETCH_AND_ADD on a word of the responder's
 *    dma-buf, the original values returned into the requester's.
 * Every byte is checked through the dma-buf's CPU mapping on the side that
 * receives it and, for ivshmem, also through the host's file behind the
 * BAR, which is also where the "GPU" puts the data a READ or WRITE sends.
 *
 * The two nodes walk the cases in step over a TCP connection on the vrnic
 * net_device (port 7473) and swap verdicts, so both print the same TAP
 * line with each side's reasons as comments.
 *
 * With -b, make bench's numbers after each exporter's cases: SECS seconds
 * each of 64 KiB RDMA WRITEs into the responder's dma-buf, of READs out of
 * it, and of both against ordinary memory of the responder, 8 in flight,
 * from ordinary memory of the requester. The requester prints
 *   # BENCH <exporter>|host write|read 65536 <MB/s> MB/s
 * (results, not pass or fail: a stream only fails on an error completion).
 *
 * usage: pair_dmabuf [-n] [-x EXPORTER[,EXPORTER...]] [-b SECS]
 *   -n  no TAP header and plan (the caller prints them)
 *   -x  the exporters (default dma_heap,udmabuf,ivshmem); both nodes must
 *       be given the same list
 *   -b  add the bandwidth case to each exporter (both nodes: the same -b)
 */
#define _GNU_SOURCE
#include "dbuf.h"
#include "pair.h"

#define CTL_PORT	7473
#define DBUF		(1 << 20)		/* each node's dma-buf */
#define MR_OFF		4096			/* where its MR starts */
#define MR_LEN		(DBUF - 2 * 4096)
#define MR_IOVA		0x5a0000001000ull	/* the MR's I/O address */
#define BULK		(256 * 1024 + 100)	/* WRITE and READ */
#define SEND_LEN	5000
#define GUARD		0x5a
#define OP_MS		20000

/* One exporter's end of the connection. */
struct side {
	const char *exporter;
	struct dbuf d;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;	/* the dma-buf MR */
	uint32_t peer_rkey;
	uint64_t seed;		/* the responder's: both sides use it */
};

static void *io_addr(size_t off)
{
	return (void *)(uintptr_t)(MR_IOVA + off);
}

/*
 * len bytes at off of the MR, put there by whoever owns the memory: the
 * host (the "GPU") for the ivshmem BAR, else the CPU through the mapping.
 */
static void put(struct side *s, size_t off, const void *p, size_t len,
		struct verdict *v)
{
	if (s->d.host >= 0) {
		if (!dbuf_host_io(&s->d, MR_OFF + off, (void *)p, len, true))
			fail(v, "writing the host's file behind the BAR failed");
		return;
	}
	dbuf_cpu(&s->d, true, true);
	memcpy(s->d.map + MR_OFF + off, p, len);
	dbuf_cpu(&s->d, false, true);
}

static void put_pattern(struct side *s, size_t off, size_t len,
			uint64_t seed, struct verdict *v)
{
	uint8_t *p = malloc(len);

	for (size_t k = 0; p && k < len; k++)
		p[k] = pair_pat(seed, k);
	if (p)
		put(s, off, p, len, v);
	else
		fail(v, "out of memory");
	free(p);
}

static void put_guard(struct side *s, size_t off, size_t len,
		      struct verdict *v)
{
	uint8_t *p = malloc(len);

	if (p) {
		memset(p, GUARD, len);
		put(s, off, p, len, v);
	} else {
		fail(v, "out of memory");
	}
	free(p);
}

/*
 * Whether len bytes at off of the MR are want (seed's pattern when want is
 * NULL), through the CPU mapping and, for the BAR, the host's file.
 */
static bool same(struct side *s, size_t off, size_t len, uint64_t seed,
		 const uint8_t *want, const char *what, struct verdict *v)
{
	uint8_t *host = s->d.host >= 0 ? malloc(len) : NULL;
	bool ok = true;

	if (host && !dbuf_host_io(&s->d, MR_OFF + off, host, len, false)) {
		fail(v, "%s: reading the host's file behind the BAR failed",
		     what);
		ok = false;
	}
	dbuf_cpu(&s->d, true, false);
	for (size_t k = 0; ok && k < len; k++) {
		uint8_t w = want ? want[k] : pair_pat(seed, k);
		uint8_t m = s->d.map[MR_OFF + off + k];

		if (m != w || (host && host[k] != w)) {
			fail(v, "%s: byte %zu is %#x (%s), want %#x", what, k,
			     m != w ? m : host[k],
			     m != w ? "CPU mapping" : "host file", w);
			ok = false;
		}
	}
	dbuf_cpu(&s->d, false, false);
	free(host);
	return ok;
}

static bool guard_intact(struct side *s, size_t off, const char *what,
			 struct verdict *v)
{
	uint8_t g = GUARD;

	return same(s, off, 1, 0, &g, what, v);
}

/* One completion on the side's CQ: its status, or fails the case. */
static bool completes(struct side *s, enum ibv_wc_opcode op, uint32_t len,
		      const char *what, struct verdict *v)
{
	struct ibv_wc wc;

	if (wait_wc(s->cq, &wc, 1, OP_MS) != 1) {
		fail(v, "%s: no completion in %d s", what, OP_MS / 1000);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != op ||
	    (op == IBV_WC_RECV && wc.byte_len != len)) {
		fail(v, "%s: %s, opcode %d, %u bytes", what,
		     ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len);
		return false;
	}
	return true;
}

static int post_atomic(struct side *s, enum ibv_wr_opcode op, size_t loff,
		       uint64_t raddr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { .addr = MR_IOVA + loff, .length = 8,
			       .lkey = s->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = raddr, .rkey = s->peer_rkey,
			       .compare_add = compare_add, .swap = swap },
	}, *bad;

	return ibv_post_send(s->qp, &wr, &bad);
}

/* ---- the cases ------------------------------------------------------------ */

#define W_ROFF	100		/* WRITE: an odd address of the responder's */
#define W_LOFF	(3 * 4096 + 7)
#define R_ROFF	(8192 + 3)
#define R_LOFF	5

static void case_write(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	uint64_t seed = s->seed + 1;

	if (c->server)
		put_guard(s, W_ROFF - 1, BULK + 2, v);
	else
		put_pattern(s, W_LOFF, BULK, seed, v);
	if (!pair_step(c, v))
		return;
	if (!c->server) {
		if (qp_post_one(s->qp, IBV_WR_RDMA_WRITE, s->mr,
				io_addr(W_LOFF), BULK, MR_IOVA + W_ROFF,
				s->peer_rkey, 0, 1))
			fail(v, "ibv_post_send: %s", strerror(errno));
		else
			completes(s, IBV_WC_RDMA_WRITE, 0, "WRITE", v);
	}
	if (!pair_step(c, v) || !c->server)
		return;
	same(s, W_ROFF, BULK, seed, NULL, "written data", v);
	guard_intact(s, W_ROFF - 1, "the byte before", v);
	guard_intact(s, W_ROFF + BULK, "the byte after", v);
}

static void case_read(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	uint64_t seed = s->seed + 2;

	if (c->server)
		put_pattern(s, R_ROFF, BULK, seed, v);
	else
		put_guard(s, R_LOFF - 1, BULK + 2, v);
	if (!pair_step(c, v) || c->server)
		return;
	if (qp_post_one(s->qp, IBV_WR_RDMA_READ, s->mr, io_addr(R_LOFF),
			BULK, MR_IOVA + R_ROFF, s->peer_rkey, 0, 2))
		fail(v, "ibv_post_send: %s", strerror(errno));
	else if (completes(s, IBV_WC_RDMA_READ, 0, "READ", v))
		same(s, R_LOFF, BULK, seed, NULL, "read data", v);
	guard_intact(s, R_LOFF - 1, "the byte before", v);
	guard_intact(s, R_LOFF + BULK, "the byte after", v);
}

static void case_send(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	uint64_t seed = s->seed + 3;

	if (c->server) {
		put_guard(s, 63, SEND_LEN + 2, v);
		if (qp_post_recv_one(s->qp, s->mr, io_addr(64), 8000, 3))
			fail(v, "ibv_post_recv: %s", strerror(errno));
	} else {
		put_pattern(s, 0, SEND_LEN, seed, v);
	}
	if (!pair_step(c, v))
		return;
	if (!c->server) {
		if (qp_post_one(s->qp, IBV_WR_SEND, s->mr, io_addr(0),
				SEND_LEN, 0, 0, 0, 4))
			fail(v, "ibv_post_send: %s", strerror(errno));
		else
			completes(s, IBV_WC_SEND, 0, "SEND", v);
		return;
	}
	if (!completes(s, IBV_WC_RECV, SEND_LEN, "receive", v))
		return;
	same(s, 64, SEND_LEN, seed, NULL, "received data", v);
	guard_intact(s, 63, "the byte before", v);
	guard_intact(s, 64 + SEND_LEN, "the byte after", v);
}

#define A_ROFF	4096		/* the word, 8-byte aligned */

static void case_atomics(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	const uint64_t v0 = mix(s->seed + 4), v1 = mix(s->seed + 5);
	const uint64_t add = 0x100000001ull, ends = v1 + add;
	uint64_t got[2] = { v0, v1 };

	if (c->server)
		put(s, A_ROFF, &v0, 8, v);
	else
		put_guard(s, 0, 16, v);
	if (!pair_step(c, v))
		return;
	if (!c->server) {
		if (post_atomic(s, IBV_WR_ATOMIC_CMP_AND_SWP, 0,
				MR_IOVA + A_ROFF, v0, v1) ||
		    !completes(s, IBV_WC_COMP_SWAP, 0, "CMP_AND_SWP", v))
			fail(v, "CMP_AND_SWP failed");
		else if (post_atomic(s, IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
				     MR_IOVA + A_ROFF, add, 0) ||
			 !completes(s, IBV_WC_FETCH_ADD, 0, "FETCH_AND_ADD", v))
			fail(v, "FETCH_AND_ADD failed");
		else
			same(s, 0, 16, 0, (const uint8_t *)got,
			     "the original values returned", v);
	}
	if (!pair_step(c, v) || !c->server)
		return;
	same(s, A_ROFF, 8, 0, (const uint8_t *)&ends, "the word after", v);
}

#define BW_MSG		65536
#define BW_DEPTH	8		/* the QP's max_send_wr */
#define BW_SLOTS	(MR_LEN / BW_MSG)

static int bench_secs;			/* -b */

/*
 * secs seconds of op (RDMA WRITE or READ) between lbuf (in lmr) and the
 * remote buffer at raddr, BW_DEPTH messages in flight, cycling through
 * BW_SLOTS slots: MB/s, or -1 (and v failed) on an error.
 */
static double stream(struct side *s, enum ibv_wr_opcode op,
		     struct ibv_mr *lmr, char *lbuf, uint64_t raddr,
		     uint32_t rkey, struct verdict *v)
{
	double t0 = now(), end = t0 + bench_secs;
	uint64_t done = 0, posted = 0;
	struct ibv_wc wc[BW_DEPTH];

	while (now() < end || posted > done) {
		while (posted - done < BW_DEPTH && now() < end) {
			size_t off = posted % BW_SLOTS * BW_MSG;

			if (qp_post_one(s->qp, op, lmr, lbuf + off, BW_MSG,
					raddr + off, rkey, 0, posted)) {
				fail(v, "ibv_post_send: %s", strerror(errno));
				end = 0;
				break;
			}
			posted++;
		}
		if (posted == done)
			break;
		int n = wait_wc(s->cq, wc, posted - done, OP_MS);

		if (n <= 0) {
			fail(v, "bandwidth: no completion in %d s", OP_MS / 1000);
			return -1;
		}
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fail(v, "bandwidth: %s",
				     ibv_wc_status_str(wc[i].status));
				return -1;
			}
		done += n;
	}
	return v->ok ? done * BW_MSG / (now() - t0) / 1e6 : -1;
}

/*
 * The responder's dma-buf against its ordinary memory: the responder
 * registers a buffer as large as the dma-buf and sends its address and
 * rkey, then waits while the requester streams into and out of both.
 */
static void case_bandwidth(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ;
	char *buf = aligned_alloc(4096, MR_LEN);
	struct ibv_mr *mr = buf ? ibv_reg_mr(c->pd, buf, MR_LEN, acc) : NULL;
	struct pair_msg me = { .ok = !!mr }, peer;
	const struct {
		const char *target, *op;
		enum ibv_wr_opcode opcode;
		bool dmabuf;
	} runs[] = {
		{ s->exporter, "write", IBV_WR_RDMA_WRITE, true },
		{ "host", "write", IBV_WR_RDMA_WRITE, false },
		{ s->exporter, "read", IBV_WR_RDMA_READ, true },
		{ "host", "read", IBV_WR_RDMA_READ, false },
	};

	if (!mr)
		fail(v, "ibv_reg_mr of %d bytes: %s", MR_LEN, strerror(errno));
	else
		memset(buf, 0, MR_LEN);
	if (mr) {
		me.rkey = mr->rkey;
		me.addr = (uintptr_t)buf;
	}
	if (!pair_xchg(c, &me, &peer)) {
		fail(v, "control connection lost");
	} else if (!c->server && v->ok && peer.ok) {
		for (size_t i = 0; i < ARRAY_SIZE(runs) && v->ok; i++) {
			double mbs = stream(s, runs[i].opcode, mr, buf,
					    runs[i].dmabuf ? MR_IOVA : peer.addr,
					    runs[i].dmabuf ? s->peer_rkey :
							     peer.rkey, v);

			if (mbs >= 0)
				ksft_print_msg("BENCH %s %s %d %.0f MB/s\n",
					       runs[i].target, runs[i].op,
					       BW_MSG, mbs);
		}
	}
	pair_step(c, v);
	if (mr)
		ibv_dereg_mr(mr);
	free(buf);
}

static const struct {
	const char *name;
	void (*run)(struct pair_ctx *c, struct side *s, struct verdict *v);
} cases[] = {
	{ "RDMA WRITE from a dma-buf into the peer's", case_write },
	{ "RDMA READ from the peer's dma-buf into one", case_read },
	{ "SEND from a dma-buf into a receive in the peer's", case_send },
	{ "ATOMIC CMP_AND_SWP and FETCH_AND_ADD on the peer's dma-buf",
	  case_atomics },
	/* Only with -b: the last entry. */
	{ "RDMA WRITE and READ bandwidth, the peer's dma-buf and its memory",
	  case_bandwidth },
};

/* The cases run: the bandwidth one only with -b. */
static size_t ncases(void)
{
	return ARRAY_SIZE(cases) - !bench_secs;
}

/* ---- one exporter --------------------------------------------------------- */

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	dbuf_close(&s->d);
}

/* The dma-buf, its MR and a connected RC QP; the peer's rkey and seed. */
static bool side_open(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct pair_msg me = { .seed = rand64() }, peer;
	int err;

	err = dbuf_open(&s->d, dbuf_exporter(s->exporter), DBUF);
	if (err) {
		fail(v, "%s dma-buf of %d bytes: %s", s->exporter, DBUF,
		     strerror(-err));
	} else {
		s->mr = ibv_reg_dmabuf_mr(c->pd, MR_OFF, MR_LEN, MR_IOVA,
					  s->d.fd, acc);
		if (!s->mr)
			fail(v, "ibv_reg_dmabuf_mr: %s", strerror(errno));
		else
			me.rkey = s->mr->rkey;
	}
	if (!pair_qp(c, &s->cq, &s->qp, &me, &peer, v))
		return false;
	s->peer_rkey = peer.rkey;
	s->seed = c->server ? me.seed : peer.seed;
	return true;
}

static void run_exporter(struct pair_ctx *c, const char *exporter)
{
	struct side s = { .exporter = exporter };
	struct verdict setup = { .ok = true };
	char name[160];

	ksft_print_msg("%s: setting up\n", exporter);
	side_open(c, &s, &setup);
	for (size_t i = 0; i < ncases(); i++) {
		struct verdict v = { .ok = true };

		snprintf(name, sizeof(name), "%s: %s", exporter, cases[i].name);
		if (c->sock < 0) {
			ksft_test_result_fail("%s (control connection lost)\n",
					      name);
			continue;
		}
		if (setup.ok)
			cases[i].run(c, &s, &v);
		else
			v = setup;
		pair_finish(c, name, &v);
	}
	side_close(&s);
}

int main(int argc, char **argv)
{
	char list[128] = "dma_heap,udmabuf,ivshmem", *exp[8], *save;
	struct pair_ctx c = { .sock = -1 };
	unsigned int nexp = 0;
	bool header = true;
	uint64_t fp = 0;
	int opt;

	while ((opt = getopt(argc, argv, "nx:b:")) != -1) {
		if (opt == 'n')
			header = false;
		else if (opt == 'x')
			snprintf(list, sizeof(list), "%s", optarg);
		else if (opt == 'b' && atoi(optarg) > 0 && atoi(optarg) <= 600)
			bench_secs = atoi(optarg);
		else
			ksft_exit_fail_msg("usage: %s [-n] [-x EXPORTER[,EXPORTER...]] [-b SECS]\n",
					   argv[0]);
	}
	fp = bench_secs;
	for (char *e = strtok_r(list, ",", &save); e && nexp < ARRAY_SIZE(exp);
	     e = strtok_r(NULL, ",", &save)) {
		if (!dbuf_exporter(e))
			ksft_exit_fail_msg("-x: no exporter '%s'\n", e);
		exp[nexp++] = e;
		for (const char *p = e; *p; p++)
			fp = mix(fp ^ (uint8_t)*p);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (header) {
		ksft_print_header();
		ksft_set_plan(nexp * ncases());
	} else {
		ksft_plan = nexp * ncases();
	}
	/* Both sides must walk the same list. */
	pair_setup(&c, CTL_PORT, fp);
	for (unsigned int i = 0; i < nexp; i++)
		run_exporter(&c, exp[i]);
	if (c.sock >= 0)
		close(c.sock);
	vrnic_close(c.dev, c.pd);
	ksft_finished();
}
