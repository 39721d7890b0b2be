// SPDX-License-Identifier: GPL-2.0
/*
 * ATOMIC WRITE (IBTA 1.5) between the two guests of a pair (tools/vm -n 2),
 * vrnic against vrnic or against rdma_rxe in either role (--nic
 * vrnic,rxe: the wire format is rdma_rxe's):
 *  - 64 ATOMIC WRITEs from the requester (node 0, ibv_wr_atomic_write) to
 *    64 words of the responder's MR: each word holds its 8 bytes as the
 *    requester had them in memory, the guard words around them are
 *    untouched, and every completion is IBV_WC_ATOMIC_WRITE;
 *  - 100 ATOMIC WRITEs to one word, pipelined: the last one stays;
 *  - one through a key without REMOTE_WRITE: IBV_WC_REM_ACCESS_ERR, the
 *    word unchanged.
 * Both nodes print the same TAP lines, each side's reasons as comments.
 */
#include "pair.h"

#define CTL_PORT	7475
#define WORDS		64
#define OP_MS		30000
#define GUARD		0x5a

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t buf[(WORDS + 2) * 8];	/* a guard word before and after */
	struct ibv_mr *mr;
	uint64_t seed;			/* responder: what the words will hold */
};

/* Word i (8 bytes, memory order) of the data with seed. */
static void word(uint64_t seed, unsigned i, uint8_t out[8])
{
	for (unsigned k = 0; k < 8; k++)
		out[k] = pair_pat(seed, i * 8 + k);
}

/*
 * A fresh QP pair for one case; the responder's MR over its buffer (all
 * guard bytes) grants access. The responder's rkey, address and seed (the
 * requester writes its words) arrive in peer.
 */
static bool case_open(struct pair_ctx *c, struct side *s, int access,
		      struct pair_msg *peer, struct verdict *v)
{
	struct pair_msg me = { .ok = true, .seed = rand64() };

	s->seed = me.seed;
	memset(s->buf, GUARD, sizeof(s->buf));
	if (c->server) {
		s->mr = ibv_reg_mr(c->pd, s->buf, sizeof(s->buf), access);
		if (!s->mr)
			fail(v, "ibv_reg_mr: %s", strerror(errno));
		else
			me.rkey = s->mr->rkey;
		me.addr = (uintptr_t)s->buf + 8;
	}
	return pair_qp_ex(c, &s->cq, &s->qp, &me, peer,
			  c->server ? 0 : IBV_QP_EX_WITH_ATOMIC_WRITE, v);
}

static void case_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	s->qp = NULL;
	s->mr = NULL;
	s->cq = NULL;
}

/*
 * n ATOMIC WRITEs, word i of seed to addr + 8 * (spread ? i : 0), at most
 * 4 in flight, every completion checked against want.
 */
static void writes(struct side *s, const struct pair_msg *peer, unsigned n,
		   bool spread, enum ibv_wc_status want, struct verdict *v)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(s->qp);
	unsigned posted = 0, done = 0;
	struct ibv_wc wc;

	while (v->ok && done < n) {
		while (posted < n && posted - done < 4) {
			uint8_t val[8];

			word(peer->seed, posted, val);
			ibv_wr_start(qx);
			qx->wr_id = posted;
			qx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(qx, peer->rkey, peer->addr +
					    (spread ? 8 * posted : 0), val);
			if (ibv_wr_complete(qx)) {
				fail(v, "ibv_wr_complete: %s", strerror(errno));
				return;
			}
			posted++;
		}
		if (wait_wc(s->cq, &wc, 1, OP_MS) != 1) {
			fail(v, "no completion for ATOMIC WRITE %u", done);
			return;
		}
		if (wc.status != want || (want == IBV_WC_SUCCESS &&
					  (wc.opcode != IBV_WC_ATOMIC_WRITE ||
					   wc.wr_id != done))) {
			fail(v, "ATOMIC WRITE %u: %s opcode %d wr_id %llu", done,
			     ibv_wc_status_str(wc.status), wc.opcode,
			     (unsigned long long)wc.wr_id);
			return;
		}
		done++;
		if (want != IBV_WC_SUCCESS)
			return;		/* the rest is flushed */
	}
}

/* The responder's buffer: words [0, n) of seed, guard bytes elsewhere. */
static void check(const struct side *s, uint64_t seed, unsigned n,
		  struct verdict *v)
{
	for (unsigned i = 0; i < WORDS + 2; i++) {
		bool data = i >= 1 && i < 1 + n;
		uint8_t want[8];

		if (data)
			word(seed, i - 1, want);
		else
			memset(want, GUARD, 8);
		if (memcmp(s->buf + 8 * i, want, 8)) {
			fail(v, "word %d is not the %s", (int)i - 1,
			     data ? "ATOMIC WRITE's 8 bytes" : "guard");
			return;
		}
	}
}

static void run_spread(struct pair_ctx *c, struct side *s, struct verdict *v)
{
	struct pair_msg peer;

	if (!case_open(c, s, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		       &peer, v))
		return;
	if (!c->server)
		writes(s, &peer, WORDS, true, IBV_WC_SUCCESS, v);
	if (pair_step(c, v) && c->server)
		check(s, s->seed, WORDS, v);
}

static void run_same_word(struct pair_ctx *c, struct side *s,
			  struct verdict *v)
{
	struct pair_msg peer;
	uint8_t last[8];

	if (!case_open(c, s, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		       &peer, v))
		return;
	if (!c->server)
		writes(s, &peer, 100, false, IBV_WC_SUCCESS, v);
	if (pair_step(c, v) && c->server) {
		word(s->seed, 99, last);
		if (memcmp(s->buf + 8, last, 8))
			fail(v, "the word is not the last ATOMIC WRITE's");
		/* Word 0 set aside, the rest as before. */
		memset(s->buf + 8, GUARD, 8);
		check(s, s->seed, 0, v);
	}
}

static void run_no_remote_write(struct pair_ctx *c, struct side *s,
				struct verdict *v)
{
	struct pair_msg peer;

	if (!case_open(c, s, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		       &peer, v))
		return;
	if (!c->server)
		writes(s, &peer, 1, true, IBV_WC_REM_ACCESS_ERR, v);
	if (pair_step(c, v) && c->server)
		check(s, s->seed, 0, v);
}

static const struct {
	const char *name;
	void (*run)(struct pair_ctx *c, struct side *s, struct verdict *v);
} cases[] = {
	{ "RC ATOMIC WRITE x64 to 64 words: each holds its 8 bytes",
	  run_spread },
	{ "RC ATOMIC WRITE x100 to one word, pipelined: the last stays",
	  run_same_word },
	{ "RC ATOMIC WRITE through a key without REMOTE_WRITE: REM_ACCESS_ERR, nothing stored",
	  run_no_remote_write },
};

int main(int argc, char **argv)
{
	struct pair_ctx c = { .sock = -1 };
	bool setup;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(ARRAY_SIZE(cases));
	setup = pair_setup(&c, CTL_PORT, ARRAY_SIZE(cases));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct verdict v = { .ok = true };
		struct side s = { 0 };

		if (c.sock < 0) {
			ksft_test_result_fail("%s (control connection lost)\n",
					      cases[i].name);
			continue;
		}
		if (setup)
			cases[i].run(&c, &s, &v);
		else
			fail(&v, "no device or no peer");
		pair_finish(&c, cases[i].name, &v);
		case_close(&s);
	}
	if (c.sock >= 0)
		close(c.sock);
	vrnic_close(c.dev, c.pd);
	ksft_finished();
}
