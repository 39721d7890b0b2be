// SPDX-License-Identifier: GPL-2.0
/*
 * The RoCEv2 transport between the two guests of a pair (tools/vm -n 2),
 * through the verbs API only, with every payload checked byte for byte on
 * the side that receives it (random data, guard bytes around every buffer):
 *  - RC: SEND, SEND_WITH_IMM, RDMA WRITE, WRITE_WITH_IMM, RDMA READ at 0, 1,
 *    MTU-1, MTU, MTU+1 bytes, 1 MiB and 64 MiB (path MTU 1024); 3 SGEs on
 *    both sides; inline data (the QP's whole max_inline_data); receives
 *    from an SRQ; SENDs into one receive held back by end-to-end credits
 *    until the responder posts more (a credit update); ATOMIC_CMP_AND_SWP
 *    and ATOMIC_FETCH_AND_ADD (the original values returned, the remote
 *    memory after).
 *  - UC: SEND, SEND_WITH_IMM, WRITE, WRITE_WITH_IMM up to 1 MiB.
 *  - UD: SEND, SEND_WITH_IMM up to the MTU through an AH: the 40-byte GRH
 *    area (an IPv4 header in its last 20 bytes), byte_len + 40, src_qp; a
 *    SEND with the wrong Q_Key is dropped without a CQE.
 *  - RC errors, each on a fresh QP pair (IBTA status on each side, the QP
 *    in ERR, the next WR flushed): bad rkey / no REMOTE_WRITE / out of
 *    bounds WRITE and bad rkey READ (REM_ACCESS_ERR), SEND longer than the
 *    receive buffer (REM_INV_REQ_ERR; LOC_LEN_ERR on the responder), bad
 *    lkey (LOC_PROT_ERR); zero-length WRITE/READ with a bogus rkey succeed
 *    (C9-88: no R_Key check for a zero-length access).
 * Completion checks: status, opcode, wr_id, byte_len, IBV_WC_WITH_IMM and
 * imm_data, qp_num (and src_qp, IBV_WC_GRH for UD).
 *
 * Node 1 (VRNIC_NODE=1) is the responder, node 0 the requester. Both walk
 * the same table of cases in step over a TCP connection on the vrnic
 * net_device (port 7472): per case they create fresh QPs, swap QP number,
 * PSN, GID, rkey, address and a random data seed, connect (INIT/RTR/RTS),
 * meet, run the case, and swap verdicts, so both print the same TAP line
 * with each side's reasons as comments. Every wait has a deadline.
 *
 * With -L, four more cases made for a lossy wire (tools/vm -d fault-*=...,
 * selftests/vrnic/pair_lossy.sh), all named "... (lossy wire)":
 *  - RC bulk: rounds of up to 32 WRs (WRITE, READ, SEND, or the three
 *    mixed) of 4 KiB + 1 B .. 16 MiB each, until -B MiB moved; every slot
 *    checked byte for byte (and its guards) where it lands, and a checksum
 *    of every round's slots compared between the two sides.
 *  - RC FETCH_ADD x N (-N) on one word, pipelined: the k-th returns
 *    v0 + k and the word ends at v0 + N (a replayed duplicate is not
 *    executed twice).
 *  - UC SEND / WRITE_WITH_IMM x N, 16 B .. 4 KiB (most of them multi-packet)
 *    and UD SEND x N, 16 B .. MTU: every message carries its sequence
 *    number, length and a checksum; every receive that completes must be
 *    one whole, intact message (never partial or corrupted), at least one
 *    must arrive, and if the fault injectors (the fault_drops and
 *    fault_corrupts port counters of both nodes) took any of the case's
 *    frames, the messages that cannot have arrived must be missing. Counts
 *    are reported as TAP comments.
 *
 * usage: pair_transport [-l] [-n] [-L] [-B MIB] [-N MSGS] [-T TIMEOUT]
 *                       [-t SUBSTRING]...
 *   -l  list the cases and exit
 *   -n  no TAP header and plan (the caller prints them)
 *   -t  run only the cases whose name contains SUBSTRING (both nodes must
 *       be given the same filters)
 *   -L  add the lossy-wire cases
 *   -B  RC bulk: MiB to move (default 1024)
 *   -N  lossy cases: messages (default 2000)
 *   -T  RC local ACK timeout of every QP, 4.096 us << TIMEOUT (default 18:
 *       1 s); a lossy wire wants it short
 * Both nodes must be given the same -L, -B and -N.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest.h"
#include "common.h"
#include "ctl.h"
#include "pair.h"
#include "qp.h"
#include "verdict.h"

#define CTL_PORT	7472
#define MTU		1024	/* every QP's path MTU (IBV_MTU_1024) */
#define MiB		(1024ul * 1024)
#define GUARD		64	/* bytes of GUARD_BYTE around every piece */
#define GUARD_BYTE	0xa5
#define GRH_LEN		40
#define BAD_QKEY	0x22222222u	/* MSB clear: not "the QP's own Q_Key" */
/* The same MR index with another key byte (vrnic: index 31:8, key 7:0). */
#define KEY_FLIP	0x80u
#define MAX_PIECES	4
#define STATS_MAX	8	/* port counters read at once */
#define SRQ_MSGS	4
#define SRQ_SLOT	4096
#define CREDIT_MSGS	4
#define CREDIT_LEN	64

/* ---- the cases ---------------------------------------------------------- */

enum op { SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CMP_SWAP, FETCH_ADD };

static const char *const op_name[] = {
	[SEND] = "SEND", [SEND_IMM] = "SEND_WITH_IMM", [WRITE] = "WRITE",
	[WRITE_IMM] = "WRITE_WITH_IMM", [READ] = "READ",
	[CMP_SWAP] = "ATOMIC_CMP_AND_SWP", [FETCH_ADD] = "ATOMIC_FETCH_AND_ADD",
};
static const enum ibv_wr_opcode wr_opcode[] = {
	[SEND] = IBV_WR_SEND, [SEND_IMM] = IBV_WR_SEND_WITH_IMM,
	[WRITE] = IBV_WR_RDMA_WRITE, [WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[READ] = IBV_WR_RDMA_READ, [CMP_SWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
	[FETCH_ADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
};
/* The requester's completion opcode. */
static const enum ibv_wc_opcode wc_opcode[] = {
	[SEND] = IBV_WC_SEND, [SEND_IMM] = IBV_WC_SEND,
	[WRITE] = IBV_WC_RDMA_WRITE, [WRITE_IMM] = IBV_WC_RDMA_WRITE,
	[READ] = IBV_WC_RDMA_READ, [CMP_SWAP] = IBV_WC_COMP_SWAP,
	[FETCH_ADD] = IBV_WC_FETCH_ADD,
};

enum { F_SGE3 = 1, F_INLINE = 2 };

/* What an error case breaks. */
enum bad { BAD_NONE, BAD_RKEY, BAD_ACCESS, BAD_BOUNDS, BAD_LONG, BAD_LKEY };

struct ctx;
struct tcase {
	const char *label;	/* NULL: "<QP type> <op> <size>" */
	void (*run)(struct ctx *c, const struct tcase *tc, struct verdict *v);
	enum ibv_qp_type qpt;
	enum op op;
	size_t len;		/* message bytes (F_INLINE: the QP's inline cap) */
	unsigned int flags;
	enum bad bad;
	enum ibv_wc_status status;	/* error cases: the requester's */
};

static void run_xfer(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_srq(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_credits(struct ctx *c, const struct tcase *tc,
			struct verdict *v);
static void run_atomic(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_ud(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_qkey(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_err(struct ctx *c, const struct tcase *tc, struct verdict *v);

#define XFER(t, o, l, f) \
	{ .run = run_xfer, .qpt = IBV_QPT_##t, .op = o, .len = l, .flags = f }
#define SIZES(t, o) \
	XFER(t, o, 0, 0), XFER(t, o, 1, 0), XFER(t, o, MTU - 1, 0), \
	XFER(t, o, MTU, 0), XFER(t, o, MTU + 1, 0), XFER(t, o, MiB, 0)
#define UD_SIZES(o) \
	{ .run = run_ud, .qpt = IBV_QPT_UD, .op = o, .len = 0 }, \
	{ .run = run_ud, .qpt = IBV_QPT_UD, .op = o, .len = 1 }, \
	{ .run = run_ud, .qpt = IBV_QPT_UD, .op = o, .len = MTU - 1 }, \
	{ .run = run_ud, .qpt = IBV_QPT_UD, .op = o, .len = MTU }
#define ERR(lbl, o, l, b, st) { .label = lbl, .run = run_err, \
	.qpt = IBV_QPT_RC, .op = o, .len = l, .bad = b, .status = IBV_WC_##st }

static const struct tcase cases[] = {
	SIZES(RC, SEND), XFER(RC, SEND, 64 * MiB, 0),
	SIZES(RC, SEND_IMM), XFER(RC, SEND_IMM, 64 * MiB, 0),
	SIZES(RC, WRITE), XFER(RC, WRITE, 64 * MiB, 0),
	SIZES(RC, WRITE_IMM), XFER(RC, WRITE_IMM, 64 * MiB, 0),
	SIZES(RC, READ), XFER(RC, READ, 64 * MiB, 0),
	XFER(RC, SEND, 5000, F_SGE3),
	XFER(RC, SEND_IMM, 5000, F_SGE3),
	XFER(RC, WRITE, 5000, F_SGE3),
	XFER(RC, READ, 5000, F_SGE3),
	{ .label = "RC SEND inline (max_inline_data bytes)", .run = run_xfer,
	  .qpt = IBV_QPT_RC, .op = SEND, .flags = F_INLINE },
	{ .label = "RC WRITE_WITH_IMM inline (max_inline_data bytes)",
	  .run = run_xfer, .qpt = IBV_QPT_RC, .op = WRITE_IMM, .flags = F_INLINE },
	{ .label = "RC SEND x4 (last WITH_IMM) into an SRQ", .run = run_srq,
	  .qpt = IBV_QPT_RC },
	{ .label = "RC SEND x4 into 1 receive: credit waits, then a credit update",
	  .run = run_credits, .qpt = IBV_QPT_RC },
	{ .label = "RC ATOMIC_CMP_AND_SWP (swaps, then does not)",
	  .run = run_atomic, .qpt = IBV_QPT_RC, .op = CMP_SWAP },
	{ .label = "RC ATOMIC_FETCH_AND_ADD x2", .run = run_atomic,
	  .qpt = IBV_QPT_RC, .op = FETCH_ADD },
	SIZES(UC, SEND), SIZES(UC, SEND_IMM), SIZES(UC, WRITE),
	SIZES(UC, WRITE_IMM),
	XFER(UC, SEND, 5000, F_SGE3),
	UD_SIZES(SEND), UD_SIZES(SEND_IMM),
	{ .label = "UD SEND with a wrong Q_Key: no CQE, the next SEND arrives",
	  .run = run_qkey, .qpt = IBV_QPT_UD },
	ERR("RC WRITE, bad rkey: REM_ACCESS_ERR", WRITE, 64, BAD_RKEY,
	    REM_ACCESS_ERR),
	ERR("RC WRITE to an MR without REMOTE_WRITE: REM_ACCESS_ERR", WRITE,
	    64, BAD_ACCESS, REM_ACCESS_ERR),
	ERR("RC WRITE past the end of the MR: REM_ACCESS_ERR", WRITE, 64,
	    BAD_BOUNDS, REM_ACCESS_ERR),
	ERR("RC READ, bad rkey: REM_ACCESS_ERR", READ, 64, BAD_RKEY,
	    REM_ACCESS_ERR),
	ERR("RC SEND longer than the receive buffer: REM_INV_REQ_ERR, responder LOC_LEN_ERR",
	    SEND, 256, BAD_LONG, REM_INV_REQ_ERR),
	ERR("RC SEND, bad lkey: LOC_PROT_ERR", SEND, 64, BAD_LKEY,
	    LOC_PROT_ERR),
	ERR("RC zero-length WRITE, bogus rkey and address: success", WRITE, 0,
	    BAD_RKEY, SUCCESS),
	ERR("RC zero-length READ, bogus rkey and address: success", READ, 0,
	    BAD_RKEY, SUCCESS),
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static void run_bulk(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_fadd(struct ctx *c, const struct tcase *tc, struct verdict *v);
static void run_lossy(struct ctx *c, const struct tcase *tc, struct verdict *v);

/* -L: the lossy-wire cases (after the others). */
static const struct tcase lossy_cases[] = {
	{ .label = "RC bulk WRITE/READ/SEND, 4 KiB..16 MiB, mixed (lossy wire)",
	  .run = run_bulk, .qpt = IBV_QPT_RC },
	{ .label = "RC FETCH_ADD xN in order, no duplicate executed (lossy wire)",
	  .run = run_fadd, .qpt = IBV_QPT_RC, .op = FETCH_ADD },
	{ .label = "UC SEND/WRITE_WITH_IMM xN, only whole messages (lossy wire)",
	  .run = run_lossy, .qpt = IBV_QPT_UC },
	{ .label = "UD SEND xN, only whole messages (lossy wire)",
	  .run = run_lossy, .qpt = IBV_QPT_UD, .op = SEND },
};

/* Options (-T, -B, -N). */
static unsigned int qp_timeout = 18;
static size_t bulk_bytes = 1024 * MiB;
static unsigned int lossy_msgs = 2000;

static const char *case_name(const struct tcase *tc, char *buf, size_t n)
{
	const char *qpt = tc->qpt == IBV_QPT_RC ? "RC" :
			  tc->qpt == IBV_QPT_UC ? "UC" : "UD";

	if (tc->label)
		return tc->label;
	if (tc->len && tc->len % MiB == 0)
		snprintf(buf, n, "%s %s %zu MiB", qpt, op_name[tc->op],
			 tc->len / MiB);
	else
		snprintf(buf, n, "%s %s %zu B", qpt, op_name[tc->op], tc->len);
	if (tc->flags & F_SGE3)
		snprintf(buf + strlen(buf), n - strlen(buf), ", 3 SGEs");
	return buf;
}

/* ---- the control connection -------------------------------------------- */

enum msg_kind { MSG_HELLO = 1, MSG_INFO, MSG_STEP, MSG_RESULT };

/* Every control message (both guests are x86-64: no byte swapping). */
struct msg {
	uint32_t kind;
	uint32_t case_no;
	uint32_t ok;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t addr;
	uint64_t seed;
	uint8_t gid[16];
	uint64_t val[STATS_MAX];	/* numbers a case swaps (ctl_swap) */
	char note[480];
};

struct ctx {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	int gid_index;
	union ibv_gid gid;
	struct in_addr ip, peer_ip;
	uint32_t max_inline;	/* inline cap of an RC QP with 3 send SGEs */
	bool server;		/* node 1: the responder */
	int sock;		/* the control connection, -1 once lost */
	uint32_t case_no;
	struct msg peer_result;	/* responder: the requester's RESULT ... */
	bool have_peer_result;	/* ... once read */
};

/* Completion deadline for a message of len bytes: 10 s + 2.5 MB/s. */
static int op_ms(size_t len)
{
	return 10000 + len / 2500;
}

static bool ctl_send(struct ctx *c, struct msg *m, enum msg_kind kind)
{
	m->kind = kind;
	m->case_no = c->case_no;
	return ctl_io(&c->sock, m, sizeof(*m), true);
}

static bool ctl_recv(struct ctx *c, struct msg *m, enum msg_kind kind)
{
	char why[96];

	if (!ctl_io(&c->sock, m, sizeof(*m), false))
		return false;
	if (m->kind != kind || m->case_no != c->case_no) {
		snprintf(why, sizeof(why), "got message %u of case %u, want %u of case %u",
			 m->kind, m->case_no, kind, c->case_no);
		ctl_lost(&c->sock, why);
		return false;
	}
	m->note[sizeof(m->note) - 1] = 0;
	return true;
}

static bool ctl_xchg(struct ctx *c, struct msg *out, struct msg *in,
		     enum msg_kind kind)
{
	return ctl_send(c, out, kind) && ctl_recv(c, in, kind);
}

/*
 * A meeting point that also swaps numbers (mine: NULL or STATS_MAX values
 * out, theirs: NULL or STATS_MAX values in): true when both sides are
 * still fine.
 */
static bool ctl_swap(struct ctx *c, struct verdict *v, const uint64_t *mine,
		     uint64_t *theirs)
{
	struct msg out = { .ok = v->ok }, in;

	if (mine)
		memcpy(out.val, mine, sizeof(out.val));
	if (!ctl_xchg(c, &out, &in, MSG_STEP)) {
		fail(v, "control connection lost");
		return false;
	}
	if (theirs)
		memcpy(theirs, in.val, sizeof(in.val));
	return v->ok && in.ok;
}

/* A meeting point: true when both sides are still fine. */
static bool ctl_step(struct ctx *c, struct verdict *v)
{
	return ctl_swap(c, v, NULL, NULL);
}

/* Responder: the requester's RESULT, read now unless already read. */
static bool await_requester(struct ctx *c)
{
	if (!c->have_peer_result)
		c->have_peer_result = ctl_recv(c, &c->peer_result, MSG_RESULT);
	return c->have_peer_result;
}

/* Responder, never blocks: has the requester already reported failure? */
static bool requester_failed(struct ctx *c)
{
	struct pollfd p = { .fd = c->sock, .events = POLLIN };

	if (c->sock < 0)
		return true;
	if (!c->have_peer_result && poll(&p, 1, 0) == 1 && !await_requester(c))
		return true;
	return c->have_peer_result && !c->peer_result.ok;
}

/*
 * Swap the verdicts (the requester's first: the responder may need it to
 * know a WRITE is done) and print one TAP line, the same on both sides.
 */
static void finish(struct ctx *c, const char *name, struct verdict *v)
{
	struct msg me = { .ok = v->ok }, peer = { 0 };
	bool got;

	snprintf(me.note, sizeof(me.note), "%s", v->note);
	if (c->server) {
		got = await_requester(c);
		peer = c->peer_result;
		got = got && ctl_send(c, &me, MSG_RESULT);
	} else {
		got = ctl_send(c, &me, MSG_RESULT) &&
		      ctl_recv(c, &peer, MSG_RESULT);
	}
	c->have_peer_result = false;
	pair_report(c->server, name, v, got, peer.ok, peer.note);
}

/* ---- data: a pattern any byte of which can be computed on its own ------- */

/* Byte k of the message with this seed. */
static uint8_t pat(uint64_t seed, size_t k)
{
	return mix(seed + k / 8) >> (8 * (k % 8));
}

/* The seed of sub-message k (SRQ messages, the Q_Key case). */
static uint64_t sub_seed(uint64_t seed, unsigned int k)
{
	return mix(seed ^ (0x5851f42d4c957f2dull * (k + 1)));
}

static uint32_t imm_of(uint64_t seed)
{
	return mix(~seed);
}

/* p[0..len) = message bytes [off, off + len). */
static void fill(uint8_t *p, size_t len, uint64_t seed, size_t off)
{
	size_t i = 0;

	for (; i < len && (off + i) % 8; i++)
		p[i] = pat(seed, off + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix(seed + (off + i) / 8);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = pat(seed, off + i);
}

/* The first byte of p[0..len) that is not message byte off + i, or -1. */
static ssize_t differs(const uint8_t *p, size_t len, uint64_t seed, size_t off)
{
	size_t i = 0;

	for (; i < len && (off + i) % 8; i++)
		if (p[i] != pat(seed, off + i))
			return i;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix(seed + (off + i) / 8);

		if (memcmp(p + i, &w, 8))
			break;
	}
	for (; i < len; i++)
		if (p[i] != pat(seed, off + i))
			return i;
	return -1;
}

static ssize_t not_guard(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != GUARD_BYTE)
			return i;
	return -1;
}

/* v may be NULL (quiet). */
static bool expect_data(struct verdict *v, const char *what, const uint8_t *p,
			size_t len, uint64_t seed, size_t off)
{
	ssize_t i = differs(p, len, seed, off);

	if (i >= 0 && v)
		fail(v, "%s: message byte %zu is 0x%02x, want 0x%02x", what,
		     off + i, p[i], pat(seed, off + i));
	return i < 0;
}

static bool expect_guard(struct verdict *v, const char *what, const uint8_t *p,
			 size_t len)
{
	ssize_t i = not_guard(p, len);

	if (i >= 0 && v)
		fail(v, "%s: byte %zd of a %zu-byte area outside the message was overwritten (0x%02x)",
		     what, i, len, p[i]);
	return i < 0;
}

/*
 * Where a message lives in a side's buffer: n pieces (one SGE each), each
 * GUARD bytes after the previous one; size counts the guards.
 */
struct layout {
	int n;
	size_t off[MAX_PIECES], len[MAX_PIECES];
	size_t size;
};

static void layout_make(struct layout *l, int n, const size_t *lens)
{
	size_t off = GUARD;

	l->n = n;
	for (int i = 0; i < n; i++) {
		l->off[i] = off;
		l->len[i] = lens[i];
		off += lens[i] + GUARD;
	}
	l->size = off;
}

static void layout_one(struct layout *l, size_t len)
{
	layout_make(l, 1, &len);
}

/* Piece k of l as a layout of its own (one SGE). */
static const struct layout *layout_piece(struct layout *one,
					 const struct layout *l, int k)
{
	*one = (struct layout){ .n = 1, .off = { l->off[k] },
				.len = { l->len[k] } };
	return one;
}

/* Scatter a total-byte message over l (the rest of buf is guard bytes). */
static void fill_layout(uint8_t *buf, const struct layout *l, size_t total,
			uint64_t seed)
{
	size_t m = 0;

	memset(buf, GUARD_BYTE, l->size);
	for (int i = 0; i < l->n && m < total; i++) {
		size_t n = l->len[i] < total - m ? l->len[i] : total - m;

		fill(buf + l->off[i], n, seed, m);
		m += n;
	}
}

/* buf holds the message scattered over l and guard bytes everywhere else. */
static bool check_layout(struct verdict *v, const char *what, const uint8_t *buf,
			 const struct layout *l, size_t total, uint64_t seed)
{
	size_t m = 0, pos = 0;
	bool ok = true;

	for (int i = 0; i < l->n && ok; i++) {
		size_t n = l->len[i] < total - m ? l->len[i] : total - m;

		ok = expect_guard(v, what, buf + pos, l->off[i] - pos) &&
		     expect_data(v, what, buf + l->off[i], n, seed, m);
		m += n;
		pos = l->off[i] + n;
	}
	return ok && expect_guard(v, what, buf + pos, l->size - pos);
}

/* ---- verbs objects ------------------------------------------------------ */

/* One side of a case: its own CQs, QP and buffer. */
struct ep {
	enum ibv_qp_type qpt;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint8_t *buf;
	size_t size;
	struct ibv_mr *mr;
	uint32_t psn;
};

struct ep_cfg {
	enum ibv_qp_type qpt;
	size_t size;		/* buffer bytes, all registered */
	uint32_t sq, rq, cqe;	/* queue depths (0: 8, 8 and 32) */
	int mr_access;		/* 0: local write + every remote right */
	bool srq;
	uint32_t max_inline;
};

#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* CQs, QP (in INIT), buffer full of guard bytes, MR. */
static bool ep_open(struct ctx *c, struct ep *e, const struct ep_cfg *cfg,
		    struct verdict *v)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = cfg->sq ? cfg->sq : 8,
			 .max_recv_wr = cfg->rq ? cfg->rq : 8, .max_send_sge = 3,
			 .max_recv_sge = 3, .max_inline_data = cfg->max_inline },
		.qp_type = cfg->qpt,
	};
	int cqe = cfg->cqe ? cfg->cqe : 32;

	e->qpt = cfg->qpt;
	e->psn = rand64() & 0xffffff;
	e->scq = ibv_create_cq(c->dev, cqe, NULL, NULL, 0);
	e->rcq = ibv_create_cq(c->dev, cqe, NULL, NULL, 0);
	if (!e->scq || !e->rcq) {
		fail(v, "ibv_create_cq: %s", strerror(errno));
		return false;
	}
	if (cfg->srq) {
		e->srq = srq_for_qp(c->pd, &ia, v);
		if (!e->srq)
			return false;
	}
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	e->qp = ibv_create_qp(c->pd, &ia);
	if (!e->qp) {
		fail(v, "ibv_create_qp: %s", strerror(errno));
		return false;
	}
	if (ia.cap.max_inline_data < cfg->max_inline) {
		fail(v, "ibv_create_qp granted max_inline_data %u < %u",
		     ia.cap.max_inline_data, cfg->max_inline);
		return false;
	}
	e->buf = mmap(NULL, cfg->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		fail(v, "mmap %zu bytes: %s", cfg->size, strerror(errno));
		return false;
	}
	e->size = cfg->size;
	memset(e->buf, GUARD_BYTE, e->size);
	e->mr = ibv_reg_mr(c->pd, e->buf, e->size,
			   cfg->mr_access ? cfg->mr_access : ALL_ACCESS);
	if (!e->mr) {
		fail(v, "ibv_reg_mr %zu bytes: %s", e->size, strerror(errno));
		return false;
	}
	return qp_to_init(e->qp, v);
}

static void ep_close(struct ep *e)
{
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->srq)
		ibv_destroy_srq(e->srq);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, e->size);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
}

/* INIT -> RTR -> RTS towards the peer's QP (UD: and an AH to it). */
static bool qp_connect(struct ctx *c, struct ep *e, const struct msg *peer,
		       struct verdict *v)
{
	/* 4.096 us << 18 = 1 s (default): slack for a slow emulated peer. */
	const struct rc_knobs k = {
		.timeout = qp_timeout, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 12,
	};
	struct ibv_ah_attr ah;

	roce_ah_attr(&ah, peer->gid, c->gid_index);
	if (!qp_to_rts(e->qp, &ah, peer->qpn, peer->psn, e->psn, &k, v))
		return false;
	if (e->qpt == IBV_QPT_UD) {
		e->ah = ibv_create_ah(c->pd, &ah);
		if (!e->ah) {
			fail(v, "ibv_create_ah: %s", strerror(errno));
			return false;
		}
	}
	return true;
}

/*
 * Swap INFO (QP number, PSN, GID, buffer address, rkey, data seed, or a
 * setup failure), connect, and meet once both QPs are ready to receive.
 */
static bool handshake(struct ctx *c, struct ep *e, uint64_t addr, uint64_t seed,
		      struct msg *peer, struct verdict *v)
{
	struct msg me = { .ok = v->ok, .addr = addr, .seed = seed };

	if (e->qp) {
		me.qpn = e->qp->qp_num;
		me.psn = e->psn;
	}
	if (e->mr)
		me.rkey = e->mr->rkey;
	memcpy(me.gid, c->gid.raw, 16);
	if (!ctl_xchg(c, &me, peer, MSG_INFO)) {
		fail(v, "control connection lost");
		return false;
	}
	if (!v->ok || !peer->ok)
		return false;
	qp_connect(c, e, peer, v);
	return ctl_step(c, v);
}

static int sge_list(const struct ep *e, const struct layout *l,
		    struct ibv_sge *sge)
{
	for (int i = 0; i < l->n; i++) {
		sge[i].addr = (uintptr_t)e->buf + l->off[i];
		sge[i].length = l->len[i];
		sge[i].lkey = e->mr->lkey;
	}
	return l->n;
}

/* A receive WQE over l (NULL: no SGE), on the SRQ if there is one. */
static bool post_recv(struct ep *e, const struct layout *l, uint64_t wr_id,
		      struct verdict *v)
{
	struct ibv_sge sge[MAX_PIECES];
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge }, *bad;
	int rc;

	if (l)
		wr.num_sge = sge_list(e, l, sge);
	rc = e->srq ? ibv_post_srq_recv(e->srq, &wr, &bad) :
		      ibv_post_recv(e->qp, &wr, &bad);
	if (rc)
		fail(v, "ibv_post_recv: %s", strerror(rc));
	return !rc;
}

/* wait_wc_until's give_up: the requester has reported failure. */
static bool requester_gone(void *c)
{
	return requester_failed(c);
}

/*
 * Up to n completions from cq within ms. The responder passes watch while
 * the requester's next message is its RESULT, to stop waiting as soon as
 * the requester has failed. Returns how many arrived.
 */
static int wait_cqes(struct ctx *c, struct ibv_cq *cq, struct ibv_wc *wc,
		     int n, int ms, bool watch)
{
	return wait_wc_until(cq, wc, n, ms, 1000,
			     watch ? requester_gone : NULL, c);
}

/*
 * At least one and at most n completions from cq, or 0 after ms: for
 * loops that keep a queue fed (they act on every completion at once).
 */
static int wait_some(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	double end = now() + ms / 1000.0;
	int idle = 0;

	for (;;) {
		int r = ibv_poll_cq(cq, n, wc);

		if (r)
			return r < 0 ? 0 : r;
		if (now() > end)
			return 0;
		/* As wait_cqes: leave the CPU to the device when idle. */
		if (++idle > 100)
			usleep(200);
	}
}

/* Nothing on cq for ms (a completion that must not happen). */
static bool expect_no_cqe(struct verdict *v, const char *what,
			  struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	if (wait_cqes(NULL, cq, &wc, 1, ms, false) == 0)
		return true;
	fail(v, "%s: unexpected completion (status %s, opcode %d, byte_len %u)",
	     what, ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len);
	return false;
}

/* Status, wr_id and (on success; want_op >= 0) opcode of a completion. */
static bool check_wc(struct verdict *v, const char *what,
		     const struct ibv_wc *wc, enum ibv_wc_status want,
		     int want_op, uint64_t wr_id)
{
	if (wc->status != want) {
		fail(v, "%s: status %s (%d), want %s", what,
		     ibv_wc_status_str(wc->status), wc->status,
		     ibv_wc_status_str(want));
		return false;
	}
	if (wc->wr_id != wr_id) {
		fail(v, "%s: wr_id %" PRIu64 ", want %" PRIu64, what,
		     (uint64_t)wc->wr_id, wr_id);
		return false;
	}
	if (want == IBV_WC_SUCCESS && want_op >= 0 && wc->opcode != want_op) {
		fail(v, "%s: opcode %d, want %d", what, wc->opcode, want_op);
		return false;
	}
	return true;
}

/* A successful receive completion: opcode, byte_len, immediate, QP. */
static bool check_recv_wc(struct verdict *v, const struct ep *e,
			  const struct ibv_wc *wc, enum ibv_wc_opcode op,
			  uint64_t wr_id, uint32_t byte_len, bool imm,
			  uint32_t imm_data)
{
	bool ok = check_wc(v, "receive CQE", wc, IBV_WC_SUCCESS, op, wr_id);

	if (ok && wc->byte_len != byte_len) {
		fail(v, "receive CQE: byte_len %u, want %u", wc->byte_len, byte_len);
		ok = false;
	}
	if (ok && !!(wc->wc_flags & IBV_WC_WITH_IMM) != imm) {
		fail(v, "receive CQE: IBV_WC_WITH_IMM %s", imm ? "missing" : "set");
		ok = false;
	}
	if (ok && imm && be32toh(wc->imm_data) != imm_data) {
		fail(v, "receive CQE: imm_data %#x, want %#x",
		     be32toh(wc->imm_data), imm_data);
		ok = false;
	}
	if (ok && wc->qp_num != e->qp->qp_num) {
		fail(v, "receive CQE: qp_num %#x, want %#x", wc->qp_num,
		     e->qp->qp_num);
		ok = false;
	}
	return ok;
}

static bool send_wr(struct ep *e, struct ibv_send_wr *wr, struct verdict *v)
{
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(e->qp, wr, &bad);

	if (rc)
		fail(v, "ibv_post_send: %s", strerror(rc));
	return !rc;
}

/*
 * One signaled SEND per piece of l, posted at once, wr_id = the piece's
 * number; the last one WITH_IMM imm if last_imm.
 */
static bool send_pieces(struct ep *e, const struct layout *l, bool last_imm,
			uint32_t imm, struct verdict *v)
{
	struct ibv_send_wr wr[MAX_PIECES] = { 0 };
	struct ibv_sge sge[MAX_PIECES];
	struct layout one;

	for (int k = 0; k < l->n; k++) {
		bool with_imm = last_imm && k == l->n - 1;

		sge_list(e, layout_piece(&one, l, k), &sge[k]);
		wr[k] = (struct ibv_send_wr){
			.wr_id = k, .sg_list = &sge[k], .num_sge = 1,
			.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htobe32(imm),
			.next = k + 1 < l->n ? &wr[k + 1] : NULL,
		};
	}
	return send_wr(e, wr, v);
}

/* ---- RC/UC: SEND, WRITE, READ at every size ----------------------------- */

static bool op_is_send(enum op op)
{
	return op == SEND || op == SEND_IMM;
}

static bool op_has_imm(enum op op)
{
	return op == SEND_IMM || op == WRITE_IMM;
}

static size_t msg_len(const struct ctx *c, const struct tcase *tc)
{
	return tc->flags & F_INLINE ? c->max_inline : tc->len;
}

/*
 * The requester's buffer: 3 SGEs (gather 1000/3000/rest, READ scatter
 * 1500/1500/rest) or one. The responder's: a SEND lands in receive SGEs
 * with GUARD bytes to spare (3 SGEs: 1500/1500/rest), a WRITE or READ
 * targets one contiguous range.
 */
static void xfer_layout(const struct ctx *c, const struct tcase *tc,
			size_t len, struct layout *l)
{
	size_t p[3] = { 1000, 3000, 0 };

	if (c->server && !op_is_send(tc->op)) {
		layout_one(l, len);
	} else if (c->server) {
		p[0] = p[1] = 1500;
		p[2] = len - 3000 + GUARD;
		if (tc->flags & F_SGE3)
			layout_make(l, 3, p);
		else
			layout_one(l, len + GUARD);
	} else if (tc->flags & F_SGE3) {
		if (tc->op == READ)
			p[0] = p[1] = 1500;
		p[2] = len - p[0] - p[1];
		layout_make(l, 3, p);
	} else {
		layout_one(l, len);
	}
}

static void xfer_requester(struct ctx *c, const struct tcase *tc, struct ep *e,
			   const struct layout *l, size_t len,
			   const struct msg *peer, uint64_t seed,
			   struct verdict *v)
{
	struct ibv_sge sge[MAX_PIECES];
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = sge, .opcode = wr_opcode[tc->op],
		.send_flags = IBV_SEND_SIGNALED |
			      (tc->flags & F_INLINE ? IBV_SEND_INLINE : 0),
		.imm_data = htobe32(imm_of(seed)),
	};
	struct ibv_wc wc;
	double t0 = now(), dt;

	if (len)	/* a zero-length message has no SGE */
		wr.num_sge = sge_list(e, l, sge);
	wr.wr.rdma.remote_addr = peer->addr;
	wr.wr.rdma.rkey = peer->rkey;
	if (!send_wr(e, &wr, v))
		return;
	if (wait_cqes(c, e->scq, &wc, 1, op_ms(len), false) != 1) {
		fail(v, "no send completion within %d s", op_ms(len) / 1000);
		return;
	}
	dt = now() - t0;
	if (!check_wc(v, "send CQE", &wc, IBV_WC_SUCCESS, wc_opcode[tc->op], 1))
		return;
	if (len >= MiB)
		info(v, "%zu bytes in %.2f s (%.1f MB/s)", len, dt, len / dt / 1e6);
	if (tc->op != READ)
		return;
	if (wc.byte_len != len)
		fail(v, "READ CQE: byte_len %u, want %zu", wc.byte_len, len);
	check_layout(v, "READ data", e->buf, l, len, seed);
}

static void xfer_responder(struct ctx *c, const struct tcase *tc, struct ep *e,
			   const struct layout *l, size_t len, uint64_t seed,
			   struct verdict *v)
{
	const char *what = op_is_send(tc->op) ? "received data" : "written data";
	struct ibv_wc wc;

	if (op_is_send(tc->op) || tc->op == WRITE_IMM) {
		if (wait_cqes(c, e->rcq, &wc, 1, op_ms(len), true) != 1) {
			if (!requester_failed(c))
				fail(v, "no receive completion within %d s",
				     op_ms(len) / 1000);
			return;
		}
		if (!check_recv_wc(v, e, &wc, tc->op == WRITE_IMM ?
				   IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, 1,
				   len, op_has_imm(tc->op), imm_of(seed)))
			return;
	}
	if (!await_requester(c) || !c->peer_result.ok)
		return;
	if (tc->op == READ) {
		/* The READ must leave the source as it was. */
		check_layout(v, "READ source", e->buf, l, len, seed);
	} else if (tc->qpt == IBV_QPT_UC && tc->op == WRITE) {
		/* UC completes at the requester once sent: give it time. */
		double end = now() + op_ms(len) / 1000.0;

		while (!check_layout(NULL, what, e->buf, l, len, seed) &&
		       now() < end)
			usleep(1000);
		check_layout(v, what, e->buf, l, len, seed);
	} else {
		check_layout(v, what, e->buf, l, len, seed);
	}
	expect_no_cqe(v, "receive CQ", e->rcq, 0);
}

/*
 * One message from the requester to the responder (READ: back), its
 * completions on both sides and the data where it lands.
 */
static void run_xfer(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	size_t len = msg_len(c, tc);
	/* This side holds the data: the requester, or the responder of a READ. */
	bool source = (tc->op == READ) == c->server;
	struct ep_cfg cfg = { .qpt = tc->qpt };
	uint64_t seed = rand64();
	struct ep e = { 0 };
	struct layout l;
	struct msg peer;

	if (tc->flags & F_INLINE) {
		if (!c->max_inline) {
			fail(v, "the device grants no inline data");
			len = 16;
		}
		if (!c->server)
			cfg.max_inline = len;
	}
	xfer_layout(c, tc, len, &l);
	cfg.size = l.size;
	if (ep_open(c, &e, &cfg, v)) {
		if (source)
			fill_layout(e.buf, &l, len, seed);
		if (c->server && op_is_send(tc->op))
			post_recv(&e, &l, 1, v);
		else if (c->server && tc->op == WRITE_IMM)
			post_recv(&e, NULL, 1, v);
	}
	if (handshake(c, &e, (uintptr_t)e.buf + l.off[0], seed, &peer, v)) {
		if (!source)
			seed = peer.seed;
		if (c->server)
			xfer_responder(c, tc, &e, &l, len, seed, v);
		else
			xfer_requester(c, tc, &e, &l, len, &peer, seed, v);
	}
	ep_close(&e);
}

/* ---- RC SEND into an SRQ ------------------------------------------------ */

static const size_t srq_len[SRQ_MSGS] = { 1, MTU, MTU + 1, 3000 };

/*
 * Four SENDs (the last WITH_IMM) into four SRQ receives: the k-th receive
 * completion carries message k in whichever slot wr_id names.
 */
static void run_srq(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	size_t slots[SRQ_MSGS] = { SRQ_SLOT, SRQ_SLOT, SRQ_SLOT, SRQ_SLOT };
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .srq = c->server };
	struct ibv_wc wc[SRQ_MSGS];
	uint64_t seed = rand64();
	struct ep e = { 0 };
	struct layout l, one;
	struct msg peer;
	int k, n;

	layout_make(&l, SRQ_MSGS, c->server ? slots : srq_len);
	cfg.size = l.size;
	if (ep_open(c, &e, &cfg, v)) {
		for (k = 0; k < SRQ_MSGS; k++) {
			if (c->server)
				post_recv(&e, layout_piece(&one, &l, k), k, v);
			else
				fill(e.buf + l.off[k], l.len[k],
				     sub_seed(seed, k), 0);
		}
	}
	if (!handshake(c, &e, 0, seed, &peer, v))
		goto out;
	if (!c->server) {
		if (!send_pieces(&e, &l, true, imm_of(seed), v))
			goto out;
		n = wait_cqes(c, e.scq, wc, SRQ_MSGS, op_ms(0), false);
		if (n != SRQ_MSGS)
			fail(v, "%d of %d send completions", n, SRQ_MSGS);
		for (k = 0; k < n; k++)
			check_wc(v, "send CQE", &wc[k], IBV_WC_SUCCESS,
				 IBV_WC_SEND, k);
		goto out;
	}
	n = wait_cqes(c, e.rcq, wc, SRQ_MSGS, op_ms(0), true);
	if (n != SRQ_MSGS && !requester_failed(c))
		fail(v, "%d of %d receive completions", n, SRQ_MSGS);
	for (k = 0; k < n; k++) {
		uint64_t slot = wc[k].wr_id;
		char what[48];

		snprintf(what, sizeof(what), "message %d (slot %" PRIu64 ")",
			 k, slot);
		if (slot >= SRQ_MSGS) {
			fail(v, "%s: no such receive", what);
			continue;
		}
		if (!check_recv_wc(v, &e, &wc[k], IBV_WC_RECV, slot, srq_len[k],
				   k == SRQ_MSGS - 1, imm_of(peer.seed)))
			continue;
		/* The slot and its guards: GUARD before, GUARD after. */
		expect_data(v, what, e.buf + l.off[slot], srq_len[k],
			    sub_seed(peer.seed, k), 0);
		expect_guard(v, what, e.buf + l.off[slot] + srq_len[k],
			     SRQ_SLOT - srq_len[k] + GUARD);
	}
	expect_no_cqe(v, "receive CQ", e.rcq, 0);
out:
	ep_close(&e);
}

/* ---- port counters ------------------------------------------------------ */

/*
 * Port 1 counters of this node's device by name, from `rdma statistic show
 * link DEV/1` ("link vrnic0/1 tx_pkts 12 rx_pkts 34 ..."). False when the
 * tool or any of the counters is missing.
 */
static bool port_stats(struct ctx *c, const char *const *names, int n,
		       uint64_t *val)
{
	char cmd[128], tok[64], prev[64] = "";
	unsigned int found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "rdma statistic show link %s/1 2>/dev/null",
		 ibv_get_device_name(c->dev->device));
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fscanf(p, "%63s", tok) == 1) {
		for (int i = 0; i < n; i++) {
			if (!strcmp(prev, names[i])) {
				val[i] = strtoull(tok, NULL, 10);
				found |= 1u << i;
			}
		}
		strcpy(prev, tok);
	}
	pclose(p);
	return found == (1u << n) - 1;
}

/* ---- RC end-to-end credits --------------------------------------------- */

/*
 * Four SENDs into an RQ that holds one receive. The ACK of the first
 * tells the requester the RQ is empty, so it holds the others back
 * (credit_waits). Only once the requester has that ACK does the responder
 * post three more receives: the ACK left saying "no credits", so the
 * posting must bring a credit update (credit_update_acks), whatever the
 * timing of the guests. Every SEND lands in order in its own receive.
 */
static void run_credits(struct ctx *c, const struct tcase *tc,
			struct verdict *v)
{
	static const char *const names[] = { "credit_waits",
					     "credit_update_acks" };
	const char *name = names[c->server];
	size_t lens[CREDIT_MSGS];
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	struct ibv_wc wc[CREDIT_MSGS];
	uint64_t seed = rand64(), before, after;
	struct ep e = { 0 };
	struct layout l, slot;
	struct msg peer;
	bool stats;
	int k, n;

	for (k = 0; k < CREDIT_MSGS; k++)
		lens[k] = CREDIT_LEN;
	layout_make(&l, CREDIT_MSGS, lens);
	cfg.size = l.size;
	stats = port_stats(c, &name, 1, &before);
	if (ep_open(c, &e, &cfg, v)) {
		for (k = 0; k < CREDIT_MSGS; k++)
			if (!c->server)
				fill(e.buf + l.off[k], CREDIT_LEN,
				     sub_seed(seed, k), 0);
		if (c->server)
			post_recv(&e, layout_piece(&slot, &l, 0), 0, v);
	}
	if (!handshake(c, &e, 0, seed, &peer, v))
		goto out;
	if (!c->server) {
		if (!send_pieces(&e, &l, false, 0, v))
			goto out;
		n = wait_cqes(c, e.scq, wc, 1, op_ms(0), false);
		if (n != 1)
			fail(v, "the first SEND did not complete");
		else
			check_wc(v, "send CQE", &wc[0], IBV_WC_SUCCESS,
				 IBV_WC_SEND, 0);
		if (!ctl_step(c, v))
			goto out;
		n = wait_cqes(c, e.scq, wc + 1, CREDIT_MSGS - 1, op_ms(0),
			      false);
		if (n != CREDIT_MSGS - 1)
			fail(v, "%d of %d send completions", n + 1,
			     CREDIT_MSGS);
		for (k = 1; k <= n; k++)
			check_wc(v, "send CQE", &wc[k], IBV_WC_SUCCESS,
				 IBV_WC_SEND, k);
	} else {
		/*
		 * Not watching the control connection: the requester's next
		 * message is its step below, not its result, and may come
		 * before this poll sees the receive CQE.
		 */
		n = wait_cqes(c, e.rcq, wc, 1, op_ms(0), false);
		if (n != 1)
			fail(v, "the first SEND did not arrive");
		/* The requester has the ACK of the first SEND. */
		if (!ctl_step(c, v))
			goto out;
		for (k = 1; k < CREDIT_MSGS; k++)
			post_recv(&e, layout_piece(&slot, &l, k), k, v);
		n += wait_cqes(c, e.rcq, wc + 1, CREDIT_MSGS - 1, op_ms(0),
			       true);
		if (n != CREDIT_MSGS && !requester_failed(c))
			fail(v, "%d of %d receive completions", n,
			     CREDIT_MSGS);
		for (k = 0; k < n; k++) {
			if (!check_recv_wc(v, &e, &wc[k], IBV_WC_RECV, k,
					   CREDIT_LEN, false, 0))
				continue;
			expect_data(v, "received data", e.buf + l.off[k],
				    CREDIT_LEN, sub_seed(peer.seed, k), 0);
			expect_guard(v, "received data",
				     e.buf + l.off[k] + CREDIT_LEN, GUARD);
		}
		expect_no_cqe(v, "receive CQ", e.rcq, 0);
	}
	if (!v->ok)
		goto out;
	stats = port_stats(c, &name, 1, &after) && stats;
	if (!stats)
		fail(v, "no %s counter in rdma statistic", name);
	else if (after == before)
		fail(v, "%s did not move", name);
	else
		info(v, "%s +%" PRIu64, name, after - before);
out:
	ep_close(&e);
}

/* ---- RC atomics --------------------------------------------------------- */

/* Two atomics on one remote word: compare/add operands, results, after. */
struct atomic_plan {
	uint64_t cmp[2], arg[2], ret[2], final;
};

static void atomic_plan(enum op op, uint64_t v0, uint64_t seed,
			struct atomic_plan *p)
{
	uint64_t a = mix(seed + 1), b = mix(seed + 2);

	if (op == CMP_SWAP) {
		/* Swaps v0 for a, then compares v0 again: no swap to b. */
		*p = (struct atomic_plan){ .cmp = { v0, v0 }, .arg = { a, b },
					   .ret = { v0, a }, .final = a };
	} else {
		*p = (struct atomic_plan){ .arg = { a, b },
					   .ret = { v0, v0 + a },
					   .final = v0 + a + b };
	}
}

static void run_atomic(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	static const size_t words[2] = { 8, 8 };
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	uint64_t seed = rand64(), got;
	struct atomic_plan p;
	struct ibv_wc wc[2];
	struct ep e = { 0 };
	struct layout l;
	struct msg peer;
	int k, n;

	/* Responder: one word, v0 = mix(seed). Requester: two result words. */
	layout_make(&l, c->server ? 1 : 2, words);
	cfg.size = l.size;
	if (ep_open(c, &e, &cfg, v) && c->server) {
		got = mix(seed);
		memcpy(e.buf + l.off[0], &got, 8);
	}
	if (!handshake(c, &e, (uintptr_t)e.buf + l.off[0], seed, &peer, v))
		goto out;
	if (c->server) {
		atomic_plan(tc->op, mix(seed), peer.seed, &p);
		if (!await_requester(c) || !c->peer_result.ok)
			goto out;
		memcpy(&got, e.buf + l.off[0], 8);
		if (got != p.final)
			fail(v, "remote word after: %#" PRIx64 ", want %#" PRIx64,
			     got, p.final);
		expect_guard(v, "around the word", e.buf, l.off[0]);
		expect_guard(v, "around the word", e.buf + l.off[0] + 8, GUARD);
		goto out;
	}
	atomic_plan(tc->op, mix(peer.seed), seed, &p);
	{
		struct ibv_sge sge[2];
		struct ibv_send_wr wr[2];

		sge_list(&e, &l, sge);
		for (k = 0; k < 2; k++)
			wr[k] = (struct ibv_send_wr){
				.wr_id = k, .sg_list = &sge[k], .num_sge = 1,
				.opcode = wr_opcode[tc->op],
				.send_flags = IBV_SEND_SIGNALED,
				.wr.atomic = {
					.remote_addr = peer.addr,
					.rkey = peer.rkey,
					.compare_add = tc->op == CMP_SWAP ?
						       p.cmp[k] : p.arg[k],
					.swap = p.arg[k],
				},
				.next = k ? NULL : &wr[1],
			};
		if (!send_wr(&e, wr, v))
			goto out;
	}
	n = wait_cqes(c, e.scq, wc, 2, op_ms(0), false);
	if (n != 2)
		fail(v, "%d of 2 completions", n);
	for (k = 0; k < n; k++) {
		if (!check_wc(v, "atomic CQE", &wc[k], IBV_WC_SUCCESS,
			      wc_opcode[tc->op], k))
			continue;
		if (wc[k].byte_len != 8)
			fail(v, "atomic %d CQE: byte_len %u, want 8", k,
			     wc[k].byte_len);
		memcpy(&got, e.buf + l.off[k], 8);
		if (got != p.ret[k])
			fail(v, "atomic %d returned %#" PRIx64 ", want %#" PRIx64,
			     k, got, p.ret[k]);
	}
	if (n == 2) {
		for (k = 0; k < 2; k++)
			expect_guard(v, "around the results",
				     e.buf + l.off[k] - GUARD, GUARD);
		expect_guard(v, "around the results", e.buf + l.off[1] + 8, GUARD);
	}
out:
	ep_close(&e);
}

/* ---- UD ----------------------------------------------------------------- */

static bool ud_send(struct ctx *c, struct ep *e, const struct msg *peer,
		    const struct layout *l, int piece, size_t len,
		    uint32_t qkey, int imm, uint64_t seed, struct verdict *v)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + l->off[piece], .length = len,
		.lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = piece, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(imm_of(seed)),
		.wr.ud = { .ah = e->ah, .remote_qpn = peer->qpn,
			   .remote_qkey = qkey },
	};
	struct ibv_wc wc;

	if (!send_wr(e, &wr, v))
		return false;
	if (wait_cqes(c, e->scq, &wc, 1, op_ms(len), false) != 1) {
		fail(v, "no send completion within %d s", op_ms(len) / 1000);
		return false;
	}
	return check_wc(v, "send CQE", &wc, IBV_WC_SUCCESS, IBV_WC_SEND, piece);
}

/*
 * A UD receive in piece k of l: GRH area (RoCEv2 over IPv4: the IPv4
 * header in its last 20 bytes, A17.4.5.1), then the message, then guard.
 */
static void check_ud_recv(struct ctx *c, struct ep *e, const struct layout *l,
			  int k, const struct ibv_wc *wc, const struct msg *peer,
			  size_t len, bool imm, uint64_t seed, struct verdict *v)
{
	const uint8_t *grh = e->buf + l->off[k], *ip = grh + 20;

	if (!check_recv_wc(v, e, wc, IBV_WC_RECV, k, GRH_LEN + len, imm,
			   imm_of(seed)))
		return;
	if (!(wc->wc_flags & IBV_WC_GRH))
		fail(v, "receive CQE: IBV_WC_GRH missing");
	if (wc->src_qp != peer->qpn)
		fail(v, "receive CQE: src_qp %#x, want %#x", wc->src_qp,
		     peer->qpn);
	if (ip[0] != 0x45 || ip[9] != IPPROTO_UDP ||
	    memcmp(ip + 12, &c->peer_ip, 4) || memcmp(ip + 16, &c->ip, 4))
		fail(v, "GRH area: bytes 20..39 are not the IPv4 header from the peer (%02x .. proto %u)",
		     ip[0], ip[9]);
	expect_guard(v, "before the receive buffer", e->buf + l->off[k] - GUARD,
		     GUARD);
	expect_data(v, "received data", grh + GRH_LEN, len, seed, 0);
	expect_guard(v, "received data", grh + GRH_LEN + len,
		     l->len[k] - GRH_LEN - len + GUARD);
}

static void run_ud(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	size_t len = tc->len, room = GRH_LEN + len + GUARD;
	struct ep_cfg cfg = { .qpt = IBV_QPT_UD };
	uint64_t seed = rand64();
	struct ep e = { 0 };
	struct ibv_wc wc;
	struct layout l;
	struct msg peer;

	layout_one(&l, c->server ? room : len);
	cfg.size = l.size;
	if (ep_open(c, &e, &cfg, v)) {
		if (c->server)
			post_recv(&e, &l, 0, v);
		else
			fill_layout(e.buf, &l, len, seed);
	}
	if (!handshake(c, &e, 0, seed, &peer, v))
		goto out;
	if (!c->server) {
		ud_send(c, &e, &peer, &l, 0, len, QKEY, tc->op == SEND_IMM,
			seed, v);
		goto out;
	}
	if (wait_cqes(c, e.rcq, &wc, 1, op_ms(len), true) != 1) {
		if (!requester_failed(c))
			fail(v, "no receive completion within %d s",
			     op_ms(len) / 1000);
		goto out;
	}
	check_ud_recv(c, &e, &l, 0, &wc, &peer, len, tc->op == SEND_IMM,
		      peer.seed, v);
	expect_no_cqe(v, "receive CQ", e.rcq, 0);
out:
	ep_close(&e);
}

/*
 * A SEND with the wrong Q_Key, then (once the responder has watched its CQ
 * for 2 s) one with the right Q_Key: only the second completes, in the
 * first receive WQE. The wrapper checks the rx_qkey_mismatch counter.
 */
static void run_qkey(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	static const size_t len = 64;
	size_t p[2] = { len, len };
	struct ep_cfg cfg = { .qpt = IBV_QPT_UD };
	uint64_t seed = rand64();
	struct ep e = { 0 };
	struct ibv_wc wc;
	struct layout l;
	struct msg peer;

	if (c->server)
		p[0] = p[1] = GRH_LEN + len + GUARD;
	layout_make(&l, 2, p);
	cfg.size = l.size;
	if (ep_open(c, &e, &cfg, v)) {
		struct layout one[2] = {
			{ .n = 1, .off = { l.off[0] }, .len = { l.len[0] } },
			{ .n = 1, .off = { l.off[1] }, .len = { l.len[1] } },
		};

		if (c->server) {
			post_recv(&e, &one[0], 0, v);
			post_recv(&e, &one[1], 1, v);
		} else {
			fill(e.buf + l.off[0], len, sub_seed(seed, 0), 0);
			fill(e.buf + l.off[1], len, sub_seed(seed, 1), 0);
		}
	}
	if (!handshake(c, &e, 0, seed, &peer, v))
		goto out;
	if (!c->server) {
		ud_send(c, &e, &peer, &l, 0, len, BAD_QKEY, 0, 0, v);
		if (!ctl_step(c, v) || !ctl_step(c, v))
			goto out;
		ud_send(c, &e, &peer, &l, 1, len, QKEY, 0, 0, v);
		goto out;
	}
	if (!ctl_step(c, v))
		goto out;
	if (wait_cqes(c, e.rcq, &wc, 1, 2000, false))
		fail(v, "the SEND with Q_Key %#x (QP's %#x) completed: status %s, byte_len %u",
		     BAD_QKEY, QKEY, ibv_wc_status_str(wc.status), wc.byte_len);
	if (!ctl_step(c, v))
		goto out;
	if (wait_cqes(c, e.rcq, &wc, 1, op_ms(len), true) != 1) {
		if (!requester_failed(c))
			fail(v, "the SEND with the right Q_Key did not complete");
		goto out;
	}
	/* The good message, in the first receive: the bad one took none. */
	check_ud_recv(c, &e, &l, 0, &wc, &peer, len, false,
		      sub_seed(peer.seed, 1), v);
	expect_no_cqe(v, "receive CQ", e.rcq, 200);
out:
	ep_close(&e);
}

/* ---- RC errors ---------------------------------------------------------- */

/*
 * The requester posts the failing WR and an 8-byte WRITE after it. On an
 * error the first completes with tc->status, the second is flushed and
 * the QP is in ERR; a zero-length access with a bogus rkey succeeds, the
 * WRITE too, and the QP stays in RTS.
 */
static void err_requester(struct ctx *c, const struct tcase *tc, struct ep *e,
			  const struct layout *l, const struct msg *peer,
			  uint64_t seed, struct verdict *v)
{
	bool fails = tc->status != IBV_WC_SUCCESS;
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + GUARD, .length = tc->len,
		.lkey = e->mr->lkey,
	}, sge8 = sge;
	struct ibv_send_wr next = {
		.wr_id = 2, .sg_list = &sge8, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr, .rkey = peer->rkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .next = &next, .sg_list = &sge,
		.num_sge = tc->len ? 1 : 0, .opcode = wr_opcode[tc->op],
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr, .rkey = peer->rkey },
	};
	struct ibv_wc wc[2];
	int n;

	sge8.length = 8;
	switch (tc->bad) {
	case BAD_RKEY:
		wr.wr.rdma.rkey ^= KEY_FLIP;
		if (!tc->len)
			wr.wr.rdma.remote_addr = 0xdead0000;
		break;
	case BAD_BOUNDS:
		/* Starts 32 bytes before the end of the peer's MR. */
		wr.wr.rdma.remote_addr = peer->addr - GUARD + l->size - 32;
		break;
	case BAD_LKEY:
		sge.lkey ^= KEY_FLIP;
		break;
	default:
		break;
	}
	if (!send_wr(e, &wr, v))
		return;
	n = wait_cqes(c, e->scq, wc, 2, op_ms(0), false);
	if (n < 1) {
		fail(v, "no completion within %d s (want %s)", op_ms(0) / 1000,
		     ibv_wc_status_str(tc->status));
		return;
	}
	check_wc(v, op_name[tc->op], &wc[0], tc->status, wc_opcode[tc->op], 1);
	if (n < 2)
		fail(v, "the WRITE after it never completed (want %s)",
		     fails ? "WR_FLUSH_ERR" : "success");
	else
		check_wc(v, "the WRITE after it", &wc[1],
			 fails ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS,
			 IBV_WC_RDMA_WRITE, 2);
	expect_state(v, "requester", e->qp, fails ? IBV_QPS_ERR : IBV_QPS_RTS);
	/* Nothing came back into the local buffer (READ: no data). */
	check_layout(v, "local buffer", e->buf, l, l->len[0], seed);
}

static void err_responder(struct ctx *c, const struct tcase *tc, struct ep *e,
			  const struct layout *l, const struct msg *peer,
			  struct verdict *v)
{
	struct ibv_wc wc[2];
	int n;

	if (tc->bad == BAD_LONG) {
		n = wait_cqes(c, e->rcq, wc, 2, op_ms(0), true);
		if (n < 1) {
			if (!requester_failed(c))
				fail(v, "no receive completion (want LOC_LEN_ERR)");
		} else {
			check_wc(v, "receive", &wc[0], IBV_WC_LOC_LEN_ERR, -1, 1);
			if (n < 2)
				fail(v, "the second receive was not flushed");
			else
				check_wc(v, "second receive", &wc[1],
					 IBV_WC_WR_FLUSH_ERR, -1, 2);
			expect_state(v, "responder", e->qp, IBV_QPS_ERR);
		}
	}
	if (!await_requester(c) || !c->peer_result.ok)
		return;
	if (tc->bad == BAD_LONG)
		return;		/* the receive buffer's contents are undefined */
	if (tc->bad == BAD_LKEY) {
		expect_no_cqe(v, "receive CQ", e->rcq, 300);
		expect_state(v, "responder", e->qp, IBV_QPS_RTS);
	}
	/* Untouched, but for the 8-byte WRITE that follows a success. */
	if (tc->status == IBV_WC_SUCCESS)
		check_layout(v, "target", e->buf, l, 8, peer->seed);
	else
		expect_guard(v, "target", e->buf, l->size);
}

static void run_err(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	uint64_t seed = rand64();
	struct ep e = { 0 };
	struct layout l;
	struct msg peer;

	layout_one(&l, 256);
	cfg.size = l.size;
	if (c->server && tc->bad == BAD_ACCESS)
		cfg.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ep_open(c, &e, &cfg, v)) {
		if (!c->server) {
			fill_layout(e.buf, &l, l.len[0], seed);
		} else if (tc->op == SEND) {
			/* BAD_LONG: 64-byte receives for a 256-byte SEND. */
			struct layout rl;

			layout_one(&rl, tc->bad == BAD_LONG ? 64 : 256);
			post_recv(&e, &rl, 1, v);
			post_recv(&e, &rl, 2, v);
		}
	}
	if (handshake(c, &e, (uintptr_t)e.buf + GUARD, seed, &peer, v)) {
		if (c->server)
			err_responder(c, tc, &e, &l, &peer, v);
		else
			err_requester(c, tc, &e, &l, &peer, seed, v);
	}
	ep_close(&e);
}

/* ---- lossy wire: checksums ---------------------------------------------- */

/* A running checksum (Fletcher-style over 64-bit words: order counts). */
struct csum {
	uint64_t a, b;
};

static void csum_add(struct csum *s, const uint8_t *p, size_t len)
{
	uint64_t w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		s->a += w;
		s->b += s->a;
	}
	w = 0;
	memcpy(&w, p + i, len - i);
	/* The tail, and the length: where one piece ends counts too. */
	s->a += w ^ ((uint64_t)len << 32);
	s->b += s->a;
}

static uint64_t csum_value(const struct csum *s)
{
	return mix(s->a ^ mix(s->b));
}

static uint64_t csum_of(const uint8_t *p, size_t len)
{
	struct csum s = { 0 };

	csum_add(&s, p, len);
	return csum_value(&s);
}

/* ---- lossy wire: RC bulk ------------------------------------------------ */

#define BULK_ROUND	(32 * MiB)	/* bytes per round, at most */
#define BULK_WRS	32		/* WRs per round, at most */
#define BULK_MODES	4		/* WRITE, READ, SEND, the three mixed */

static const size_t bulk_len[] = {
	4096 + 1, 64 * 1024, 200 * 1024 - 7, MiB, 16 * MiB,
};
static const enum op bulk_op[] = { WRITE, READ, SEND };

/* Round r: the modes cycle first (WRITE, READ, SEND, mixed), then sizes. */
struct bulk_round {
	unsigned int mode;	/* index in bulk_op, or 3: mixed */
	size_t len;		/* every message's */
	unsigned int n;		/* messages */
};

static void bulk_plan(unsigned int r, struct bulk_round *b)
{
	b->mode = r % BULK_MODES;
	b->len = bulk_len[(r / BULK_MODES) % ARRAY_SIZE(bulk_len)];
	b->n = BULK_ROUND / b->len;
	if (b->n > BULK_WRS)
		b->n = BULK_WRS;
}

static enum op bulk_op_of(const struct bulk_round *b, unsigned int k)
{
	return bulk_op[b->mode == BULK_MODES - 1 ? k % 3 : b->mode];
}

/* Slot k of a round in either side's buffer, GUARD bytes on each side. */
static size_t bulk_off(const struct bulk_round *b, unsigned int k)
{
	return GUARD + k * (b->len + GUARD);
}

/* Completion deadline of a round: 20 s + 1 MB/s (go-back-N is costly). */
static int bulk_ms(size_t bytes)
{
	return 20000 + bytes / 1000;
}

/* Requester: post the round's WRs, wait for them, check the READ data. */
static bool bulk_requester(struct ctx *c, struct ep *e,
			   const struct bulk_round *b, const struct msg *peer,
			   struct verdict *v)
{
	struct ibv_sge sge[BULK_WRS];
	struct ibv_send_wr wr[BULK_WRS];
	struct ibv_wc wc[BULK_WRS];
	size_t bytes = b->n * b->len;
	unsigned int k;
	int got;

	for (k = 0; k < b->n; k++) {
		enum op op = bulk_op_of(b, k);

		sge[k] = (struct ibv_sge){
			.addr = (uintptr_t)e->buf + bulk_off(b, k),
			.length = b->len, .lkey = e->mr->lkey,
		};
		wr[k] = (struct ibv_send_wr){
			.wr_id = k, .sg_list = &sge[k], .num_sge = 1,
			.opcode = wr_opcode[op], .send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = peer->addr + bulk_off(b, k),
				     .rkey = peer->rkey },
			.next = k + 1 < b->n ? &wr[k + 1] : NULL,
		};
	}
	if (!send_wr(e, wr, v))
		return false;
	got = wait_cqes(c, e->scq, wc, b->n, bulk_ms(bytes), false);
	for (k = 0; k < (unsigned int)got; k++) {
		enum op op = bulk_op_of(b, k);

		if (!check_wc(v, op_name[op], &wc[k], IBV_WC_SUCCESS,
			      wc_opcode[op], k))
			return false;
		if (op == READ && wc[k].byte_len != b->len) {
			fail(v, "READ %u CQE: byte_len %u, want %zu", k,
			     wc[k].byte_len, b->len);
			return false;
		}
	}
	if (got != (int)b->n) {
		fail(v, "%d of %u completions within %d s", got, b->n,
		     bulk_ms(bytes) / 1000);
		return false;
	}
	return true;
}

/* Responder: the round's SENDs arrive, whole and in order. */
static bool bulk_responder(struct ctx *c, struct ep *e,
			   const struct bulk_round *b, struct verdict *v)
{
	struct ibv_wc wc[BULK_WRS];
	unsigned int k, j = 0, nsend = 0;
	int got;

	for (k = 0; k < b->n; k++)
		nsend += bulk_op_of(b, k) == SEND;
	if (!nsend)
		return true;
	got = wait_cqes(c, e->rcq, wc, nsend, bulk_ms(b->n * b->len), false);
	for (k = 0; k < b->n && j < (unsigned int)got; k++) {
		if (bulk_op_of(b, k) != SEND)
			continue;
		if (!check_recv_wc(v, e, &wc[j++], IBV_WC_RECV, k, b->len,
				   false, 0))
			return false;
	}
	if (got != (int)nsend) {
		fail(v, "%d of %u receive completions within %d s", got, nsend,
		     bulk_ms(b->n * b->len) / 1000);
		return false;
	}
	return true;
}

/*
 * Rounds of up to BULK_WRS messages until bulk_bytes moved. Per round:
 * each side fills the slots it is the source of (SEND/WRITE: requester,
 * READ: responder) and fills the rest with guard bytes, the responder posts
 * a receive per SEND, both meet; the requester posts every WR and waits
 * for the completions (the responder for its receives); both meet again,
 * check every slot they are the sink of (data and guards) and swap a
 * checksum of all the round's slots, which must be equal.
 */
static void run_bulk(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .sq = BULK_WRS,
			      .rq = BULK_WRS, .cqe = 2 * BULK_WRS };
	size_t moved = 0, op_bytes[3] = { 0 }, sunk = 0;
	double op_s[BULK_MODES] = { 0 }, t0 = now(), xfer = 0;
	size_t mode_bytes[BULK_MODES] = { 0 };
	uint64_t seed = rand64(), total = 0;
	struct bulk_round b;
	struct ep e = { 0 };
	struct msg peer;
	unsigned int r;

	cfg.size = 0;
	for (r = 0; r < BULK_MODES * ARRAY_SIZE(bulk_len); r++) {
		bulk_plan(r, &b);
		if (bulk_off(&b, b.n) > cfg.size)
			cfg.size = bulk_off(&b, b.n);
	}
	ep_open(c, &e, &cfg, v);
	if (!handshake(c, &e, (uintptr_t)e.buf, seed, &peer, v))
		goto out;
	if (c->server)
		seed = peer.seed;
	for (r = 0; moved < bulk_bytes || r < BULK_MODES; r++) {
		uint64_t rseed = sub_seed(seed, r), mine[STATS_MAX] = { 0 };
		uint64_t theirs[STATS_MAX];
		struct csum cs = { 0 };
		unsigned int k;
		double t;

		bulk_plan(r, &b);
		memset(e.buf, GUARD_BYTE, bulk_off(&b, b.n));
		for (k = 0; k < b.n; k++) {
			enum op op = bulk_op_of(&b, k);
			struct layout one = { .n = 1, .off = { bulk_off(&b, k) },
					      .len = { b.len } };

			if ((op == READ) == c->server)
				fill(e.buf + bulk_off(&b, k), b.len,
				     sub_seed(rseed, k), 0);
			else if (c->server && op == SEND &&
				 !post_recv(&e, &one, k, v))
				break;
		}
		if (!ctl_step(c, v))
			break;
		t = now();
		if (c->server)
			bulk_responder(c, &e, &b, v);
		else
			bulk_requester(c, &e, &b, &peer, v);
		t = now() - t;
		if (!ctl_step(c, v)) {
			info(v, "round %u (%s, %u x %zu B) failed", r,
			     b.mode < 3 ? op_name[bulk_op[b.mode]] : "mixed",
			     b.n, b.len);
			break;
		}
		for (k = 0; k < b.n && v->ok; k++) {
			enum op op = bulk_op_of(&b, k);
			size_t off = bulk_off(&b, k);
			char what[80];

			if ((op == READ) != c->server) {
				snprintf(what, sizeof(what),
					 "round %u, %s %u of %zu B", r,
					 op_name[op], k, b.len);
				expect_guard(v, what, e.buf + off - GUARD, GUARD);
				expect_data(v, what, e.buf + off, b.len,
					    sub_seed(rseed, k), 0);
				expect_guard(v, what, e.buf + off + b.len, GUARD);
				sunk += b.len;
			}
			csum_add(&cs, e.buf + off, b.len);
			op_bytes[op == WRITE ? 0 : op == READ ? 1 : 2] += b.len;
		}
		mine[0] = csum_value(&cs);
		if (!ctl_swap(c, v, mine, theirs))
			break;
		if (mine[0] != theirs[0]) {
			fail(v, "round %u: checksum %016" PRIx64 " here, %016" PRIx64 " there",
			     r, mine[0], theirs[0]);
			break;
		}
		total = mix(total ^ mine[0]);
		moved += b.n * b.len;
		mode_bytes[b.mode] += b.n * b.len;
		op_s[b.mode] += t;
		xfer += t;
	}
	if (!c->server && moved)
		info(v, "%zu MiB in %u rounds (WRITE %zu, READ %zu, SEND %zu MiB): %.1f MB/s in transfer (%.1f s), %.1f s in all",
		     moved / MiB, r, op_bytes[0] / MiB, op_bytes[1] / MiB,
		     op_bytes[2] / MiB, moved / xfer / 1e6, xfer, now() - t0);
	if (!c->server && moved) {
		static const char *const mode[] = { "WRITE", "READ", "SEND",
						    "mixed" };
		char rates[160] = "";

		for (r = 0; r < BULK_MODES; r++)
			if (op_s[r] > 0)
				snprintf(rates + strlen(rates),
					 sizeof(rates) - strlen(rates),
					 "%s%s %.1f", r ? ", " : "", mode[r],
					 mode_bytes[r] / op_s[r] / 1e6);
		info(v, "MB/s by round type: %s", rates);
	}
	if (moved)
		info(v, "%zu MiB checked here, checksum of all rounds %016" PRIx64,
		     sunk / MiB, total);
	if (v->ok && moved < bulk_bytes)
		fail(v, "moved %zu of %zu MiB", moved / MiB, bulk_bytes / MiB);
out:
	ep_close(&e);
}

/* ---- lossy wire: RC atomics --------------------------------------------- */

#define FADD_DEPTH	64	/* WRs in the SQ; the device runs 4 at once */

/*
 * lossy_msgs FETCH_ADDs of 1 on one word, FADD_DEPTH posted at a time:
 * RC executes them once each and in order, so the k-th returns v0 + k and
 * the word ends at v0 + N whatever was lost, duplicated or retried.
 */
static void run_fadd(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .sq = FADD_DEPTH,
			      .cqe = FADD_DEPTH };
	unsigned int n = lossy_msgs, posted = 0, done = 0;
	uint64_t seed = rand64(), v0 = mix(seed), got;
	struct ep e = { 0 };
	struct msg peer;
	double t0, end;

	cfg.size = 2 * GUARD + (c->server ? 8 : 8ul * n);
	if (ep_open(c, &e, &cfg, v) && c->server)
		memcpy(e.buf + GUARD, &v0, 8);
	if (!handshake(c, &e, (uintptr_t)e.buf + GUARD, seed, &peer, v))
		goto out;
	if (c->server) {
		if (!ctl_step(c, v))
			goto out;
		memcpy(&got, e.buf + GUARD, 8);
		if (got != v0 + n)
			fail(v, "the word ends at v0 + %" PRId64 ", want v0 + %u",
			     (int64_t)(got - v0), n);
		expect_guard(v, "before the word", e.buf, GUARD);
		expect_guard(v, "after the word", e.buf + GUARD + 8, GUARD);
		goto out;
	}
	v0 = mix(peer.seed);
	t0 = now();
	end = t0 + 20 + n * 0.05;
	while (done < n && v->ok && now() < end) {
		struct ibv_send_wr wr[16];
		struct ibv_sge sge[16];
		struct ibv_wc wc[16];
		int k = 0, m;

		while (posted < n && posted - done < FADD_DEPTH && k < 16) {
			sge[k] = (struct ibv_sge){
				.addr = (uintptr_t)e.buf + GUARD + 8ul * posted,
				.length = 8, .lkey = e.mr->lkey,
			};
			wr[k] = (struct ibv_send_wr){
				.wr_id = posted, .sg_list = &sge[k],
				.num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.atomic = { .remote_addr = peer.addr,
					       .rkey = peer.rkey,
					       .compare_add = 1 },
			};
			if (k)
				wr[k - 1].next = &wr[k];
			k++;
			posted++;
		}
		if (k && !send_wr(&e, wr, v))
			break;
		m = wait_some(e.scq, wc, 16, 100);
		for (int i = 0; i < m && v->ok; i++, done++) {
			if (!check_wc(v, "FETCH_ADD CQE", &wc[i], IBV_WC_SUCCESS,
				      IBV_WC_FETCH_ADD, done))
				break;
			memcpy(&got, e.buf + GUARD + 8ul * done, 8);
			if (got != v0 + done)
				fail(v, "FETCH_ADD %u returned v0 + %" PRId64 ", want v0 + %u",
				     done, (int64_t)(got - v0), done);
		}
	}
	if (v->ok && done < n)
		fail(v, "%u of %u FETCH_ADDs completed within %.0f s", done, n,
		     end - t0);
	expect_guard(v, "before the results", e.buf, GUARD);
	expect_guard(v, "after the results", e.buf + GUARD + 8ul * n, GUARD);
	info(v, "%u FETCH_ADDs in %.1f s (%.0f/s)", done, now() - t0,
	     done / (now() - t0));
	ctl_step(c, v);
out:
	ep_close(&e);
}

/* ---- lossy wire: UC and UD ---------------------------------------------- */

#define LOSSY_MAX	4096	/* largest UC message */
#define LOSSY_HDR	16	/* sequence number, length, body checksum */
#define LOSSY_SQ	128	/* requester: WRs in flight */
#define LOSSY_QUIET_MS	1500	/* responder: the last arrival is that old */
#define LOSSY_NOTES	3	/* bad messages described, at most */
#define WSTRIDE		(LOSSY_MAX + GUARD)		/* UC WRITE slots */
#define RSTRIDE		(GRH_LEN + LOSSY_MAX + GUARD)	/* receive slots */

static const uint32_t uc_len[] = { 16, 700, 1024, 1025, 2000, 3000, 4000, 4096 };
static const uint32_t ud_len[] = { 16, 100, 512, 1000, MTU };

static uint32_t lossy_len(const struct tcase *tc, uint64_t seed, uint32_t seq)
{
	uint64_t r = mix(seed ^ ((uint64_t)seq << 32));

	return tc->qpt == IBV_QPT_UD ? ud_len[r % ARRAY_SIZE(ud_len)] :
				       uc_len[r % ARRAY_SIZE(uc_len)];
}

/* UC: odd messages are WRITE_WITH_IMM (imm = seq), even ones SENDs. */
static bool lossy_write(const struct tcase *tc, uint32_t seq)
{
	return tc->qpt == IBV_QPT_UC && (seq & 1);
}

/* Message seq: seq, len (LE32), checksum of the body (LE64), the body. */
static void lossy_make(uint8_t *p, uint64_t seed, uint32_t seq, uint32_t len)
{
	uint64_t sum;

	fill(p + LOSSY_HDR, len - LOSSY_HDR, sub_seed(seed, seq), 0);
	sum = csum_of(p + LOSSY_HDR, len - LOSSY_HDR);
	memcpy(p, &seq, 4);
	memcpy(p + 4, &len, 4);
	memcpy(p + 8, &sum, 8);
}

/*
 * p holds byte_len bytes a receive completed with: one whole, intact
 * message of the n sent (its number in *seq), or false and why.
 */
static bool lossy_check(const struct tcase *tc, const uint8_t *p,
			uint32_t byte_len, uint64_t seed, uint32_t n,
			uint32_t *seq, char *why, size_t wlen)
{
	uint32_t s, len, want;
	uint64_t sum;
	ssize_t i;

	if (byte_len < LOSSY_HDR) {
		snprintf(why, wlen, "%u bytes: shorter than any message",
			 byte_len);
		return false;
	}
	memcpy(&s, p, 4);
	memcpy(&len, p + 4, 4);
	memcpy(&sum, p + 8, 8);
	if (s >= n) {
		snprintf(why, wlen, "%u bytes, sequence number %u: never sent",
			 byte_len, s);
		return false;
	}
	*seq = s;
	want = lossy_len(tc, seed, s);
	if (byte_len != want || len != want) {
		snprintf(why, wlen, "message %u: %u bytes (header: %u), sent %u",
			 s, byte_len, len, want);
		return false;
	}
	if (sum != csum_of(p + LOSSY_HDR, len - LOSSY_HDR)) {
		snprintf(why, wlen, "message %u (%u B): body checksum differs",
			 s, len);
		return false;
	}
	i = differs(p + LOSSY_HDR, len - LOSSY_HDR, sub_seed(seed, s), 0);
	if (i >= 0) {
		snprintf(why, wlen, "message %u: byte %zd is 0x%02x, want 0x%02x",
			 s, LOSSY_HDR + i, p[LOSSY_HDR + i],
			 pat(sub_seed(seed, s), i));
		return false;
	}
	return true;
}

/* What the responder saw. */
struct lossy_tally {
	uint8_t *seen;			/* per message: arrivals */
	unsigned int unique, multi, dups, bad;
};

/* One receive completion (responder). */
static void lossy_recv(struct ctx *c, const struct tcase *tc, struct ep *e,
		       const struct ibv_wc *wc, const struct msg *peer,
		       uint32_t nrecv, struct lossy_tally *t, struct verdict *v)
{
	uint32_t n = lossy_msgs, seq = UINT32_MAX, byte_len = wc->byte_len;
	bool ud = tc->qpt == IBV_QPT_UD, ok = false;
	const uint8_t *p;
	char why[160];

	if (wc->status != IBV_WC_SUCCESS) {
		snprintf(why, sizeof(why), "a receive completed with %s",
			 ibv_wc_status_str(wc->status));
	} else if (wc->wr_id >= nrecv) {
		snprintf(why, sizeof(why), "wr_id %" PRIu64 ": no such receive",
			 (uint64_t)wc->wr_id);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM && !ud) {
		/* The data is in the WRITE slot the immediate names. */
		seq = be32toh(wc->imm_data);
		if (seq >= n || !lossy_write(tc, seq)) {
			snprintf(why, sizeof(why), "WRITE_WITH_IMM with imm %u: never sent",
				 seq);
		} else {
			uint32_t s;

			p = e->buf + GUARD + (size_t)seq * WSTRIDE;
			ok = lossy_check(tc, p, byte_len, peer->seed, n, &s, why,
					 sizeof(why));
			if (ok && s != seq) {
				snprintf(why, sizeof(why), "imm %u, message %u",
					 seq, s);
				ok = false;
			}
			if (ok && not_guard(p + byte_len, WSTRIDE - byte_len) >= 0) {
				snprintf(why, sizeof(why), "message %u: written past its %u bytes",
					 seq, byte_len);
				ok = false;
			}
		}
	} else if (wc->opcode == IBV_WC_RECV && !(wc->wc_flags & IBV_WC_WITH_IMM)) {
		p = e->buf + GUARD + (size_t)n * WSTRIDE * !ud +
		    wc->wr_id * RSTRIDE;
		if (ud) {
			if (!(wc->wc_flags & IBV_WC_GRH) || byte_len < GRH_LEN ||
			    wc->src_qp != peer->qpn) {
				snprintf(why, sizeof(why), "UD receive: byte_len %u, GRH flag %d, src_qp %#x",
					 byte_len, !!(wc->wc_flags & IBV_WC_GRH),
					 wc->src_qp);
				goto bad;
			}
			p += GRH_LEN;
			byte_len -= GRH_LEN;
		}
		ok = lossy_check(tc, p, byte_len, peer->seed, n, &seq, why,
				 sizeof(why));
		if (ok && lossy_write(tc, seq)) {
			snprintf(why, sizeof(why), "message %u (a WRITE_WITH_IMM) arrived as a SEND",
				 seq);
			ok = false;
		}
	} else {
		snprintf(why, sizeof(why), "receive CQE: opcode %d, flags %#x",
			 wc->opcode, wc->wc_flags);
	}
	if (ok && wc->qp_num != e->qp->qp_num) {
		snprintf(why, sizeof(why), "receive CQE: qp_num %#x, want %#x",
			 wc->qp_num, e->qp->qp_num);
		ok = false;
	}
bad:
	if (!ok) {
		if (t->bad++ < LOSSY_NOTES)
			fail(v, "%s", why);
		else
			v->ok = false;
		return;
	}
	if (t->seen[seq]++) {
		t->dups++;
		return;
	}
	t->unique++;
	t->multi += lossy_len(tc, peer->seed, seq) > MTU;
}

static const char *const fault_names[] = {
	"fault_drops", "fault_corrupts", "fault_reorders", "fault_dups",
};
#define NFAULT ARRAY_SIZE(fault_names)

/* Requester: all lossy_msgs messages, LOSSY_SQ in flight; true if all sent. */
static bool lossy_send(struct ctx *c, const struct tcase *tc, struct ep *e,
		       const struct msg *peer, uint64_t seed, struct verdict *v)
{
	unsigned int n = lossy_msgs, posted = 0, done = 0;
	double end = now() + 2 * op_ms((size_t)n * LOSSY_MAX) / 1000.0;

	while (done < n && v->ok && now() < end) {
		struct ibv_send_wr wr[32];
		struct ibv_sge sge[32];
		struct ibv_wc wc[32];
		int k = 0, m;

		while (posted < n && posted - done < LOSSY_SQ && k < 32) {
			uint32_t len = lossy_len(tc, seed, posted);
			uint8_t *p = e->buf + GUARD +
				     (size_t)(posted % LOSSY_SQ) * WSTRIDE;

			lossy_make(p, seed, posted, len);
			sge[k] = (struct ibv_sge){ .addr = (uintptr_t)p,
						   .length = len,
						   .lkey = e->mr->lkey };
			wr[k] = (struct ibv_send_wr){
				.wr_id = posted, .sg_list = &sge[k],
				.num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
			};
			if (tc->qpt == IBV_QPT_UD) {
				wr[k].wr.ud.ah = e->ah;
				wr[k].wr.ud.remote_qpn = peer->qpn;
				wr[k].wr.ud.remote_qkey = QKEY;
			} else if (lossy_write(tc, posted)) {
				wr[k].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
				wr[k].imm_data = htobe32(posted);
				wr[k].wr.rdma.remote_addr = peer->addr +
					(uint64_t)posted * WSTRIDE;
				wr[k].wr.rdma.rkey = peer->rkey;
			}
			if (k)
				wr[k - 1].next = &wr[k];
			k++;
			posted++;
		}
		if (k && !send_wr(e, wr, v))
			break;
		m = wait_some(e->scq, wc, 32, 100);
		for (int i = 0; i < m && v->ok; i++, done++)
			check_wc(v, "send CQE", &wc[i], IBV_WC_SUCCESS,
				 lossy_write(tc, done) ? IBV_WC_RDMA_WRITE :
							 IBV_WC_SEND, done);
	}
	if (v->ok && done < n)
		fail(v, "%u of %u send completions within %.0f s", done, n,
		     2 * op_ms((size_t)n * LOSSY_MAX) / 1000.0);
	return v->ok;
}

/*
 * UC or UD: the requester sends lossy_msgs messages back to back; the
 * responder has a receive posted for each (and a quarter more for
 * duplicates), takes whatever arrives until LOSSY_QUIET_MS pass without
 * an arrival, and checks every message that arrived. The fault counters
 * of both nodes, read around the case, say how many of its frames the
 * injectors dropped or corrupted (nothing else is sent meanwhile): each
 * of those takes one message with it, at most max_pkts per message.
 */
static void run_lossy(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	bool ud = tc->qpt == IBV_QPT_UD;
	uint32_t n = lossy_msgs, nrecv = n + n / 4 + 16, max_pkts, k;
	struct ep_cfg cfg = { .qpt = tc->qpt };
	uint64_t seed = rand64(), before[NFAULT], after[NFAULT];
	uint64_t mine[STATS_MAX] = { 0 }, theirs[STATS_MAX] = { 0 };
	unsigned int multi_sent = 0, pkts = 0;
	struct lossy_tally t = { 0 };
	bool stats = false;
	struct ep e = { 0 };
	struct msg peer;

	if (nrecv > (uint32_t)c->attr.max_qp_wr)
		nrecv = c->attr.max_qp_wr;
	if (nrecv > (uint32_t)c->attr.max_cqe)
		nrecv = c->attr.max_cqe;
	if (c->server) {
		cfg.rq = cfg.cqe = nrecv;
		cfg.size = GUARD + (size_t)n * WSTRIDE * !ud +
			   (size_t)nrecv * RSTRIDE;
		t.seen = calloc(n, 1);
	} else {
		cfg.sq = cfg.cqe = LOSSY_SQ;
		cfg.size = GUARD + (size_t)LOSSY_SQ * WSTRIDE;
	}
	if (ep_open(c, &e, &cfg, v) && c->server) {
		for (k = 0; k < nrecv && v->ok; k++) {
			size_t off = GUARD + (size_t)n * WSTRIDE * !ud +
				     (size_t)k * RSTRIDE;
			struct layout one = { .n = 1, .off = { off },
					      .len = { RSTRIDE - GUARD } };

			post_recv(&e, &one, k, v);
		}
	}
	if (!handshake(c, &e, (uintptr_t)e.buf + GUARD, seed, &peer, v))
		goto out;
	if (c->server)
		seed = peer.seed;
	for (k = 0; k < n; k++) {
		uint32_t len = lossy_len(tc, seed, k);

		multi_sent += len > MTU;
		pkts += (len + MTU - 1) / MTU;
	}
	max_pkts = ud ? 1 : (LOSSY_MAX + MTU - 1) / MTU;
	stats = port_stats(c, fault_names, NFAULT, before);
	if (!ctl_step(c, v))
		goto out;
	if (!c->server) {
		lossy_send(c, tc, &e, &peer, seed, v);
		ctl_step(c, v);
	} else {
		double quiet = LOSSY_QUIET_MS / 1000.0, last, end;
		struct ibv_wc wc[64];

		/* The requester is done sending (or failed) after this. */
		ctl_step(c, v);
		last = now();
		end = last + 30 + n * 0.01;
		while (t.unique < n && now() < end && now() - last < quiet) {
			int m = wait_some(e.rcq, wc, 64, 100);

			if (m > 0)
				last = now();
			for (int i = 0; i < m; i++)
				lossy_recv(c, tc, &e, &wc[i], &peer, nrecv, &t, v);
		}
	}
	stats = port_stats(c, fault_names, NFAULT, after) && stats;
	mine[NFAULT] = stats;
	for (k = 0; k < NFAULT; k++)
		mine[k] = after[k] - before[k];
	/* Swapped even after a failure: the counts explain it. */
	ctl_swap(c, v, mine, theirs);
	if (!c->server || c->sock < 0)
		goto out;
	info(v, "sent %u (%u multi-packet, %u packets), arrived %u (%u multi-packet, %u single), %u duplicates, %u bad",
	     n, multi_sent, pkts, t.unique, t.multi, t.unique - t.multi, t.dups,
	     t.bad);
	if (!t.unique)
		fail(v, "no message arrived");
	if (!stats || !theirs[NFAULT]) {
		info(v, "no fault counters (rdma statistic): losses not checked");
	} else {
		uint64_t lost = mine[0] + mine[1] + theirs[0] + theirs[1];
		uint64_t gone = (lost + max_pkts - 1) / max_pkts;

		info(v, "faults on the case's frames (both nodes): %" PRIu64 " drops, %" PRIu64 " corrupts, %" PRIu64 " reorders, %" PRIu64 " dups",
		     mine[0] + theirs[0], mine[1] + theirs[1],
		     mine[2] + theirs[2], mine[3] + theirs[3]);
		/* Each lost frame takes its message; a message has <= max_pkts. */
		if (gone > n || t.unique > n - gone)
			fail(v, "%u messages arrived, but %" PRIu64 " frames were dropped or corrupted: at most %" PRIu64 " could",
			     t.unique, lost, gone > n ? 0 : n - gone);
	}
	if (t.bad > LOSSY_NOTES)
		info(v, "%u more bad messages", t.bad - LOSSY_NOTES);
out:
	free(t.seen);
	ep_close(&e);
}

/* ---- setup -------------------------------------------------------------- */

/* The inline cap of the QPs run_xfer creates: the largest one granted. */
static uint32_t probe_inline(struct ctx *c)
{
	struct ibv_cq *cq = ibv_create_cq(c->dev, 4, NULL, NULL, 0);
	uint32_t got = 0;

	for (uint32_t want = 4096; cq && want && !got; want /= 2) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 3, .max_recv_sge = 3,
				 .max_inline_data = want },
		};
		struct ibv_qp *qp = ibv_create_qp(c->pd, &ia);

		if (qp) {
			got = ia.cap.max_inline_data;
			ibv_destroy_qp(qp);
		}
	}
	if (cq)
		ibv_destroy_cq(cq);
	return got;
}

static bool setup_device(struct ctx *c)
{
	const char *ip = getenv("VRNIC_IP"), *peer = getenv("VRNIC_PEER_IP");
	double end = now() + 30;

	if (!ip || !peer || inet_pton(AF_INET, ip, &c->ip) != 1 ||
	    inet_pton(AF_INET, peer, &c->peer_ip) != 1) {
		ksft_print_msg("VRNIC_IP/VRNIC_PEER_IP not set: run in a tools/vm -n 2 guest\n");
		return false;
	}
	c->dev = vrnic_open();
	if (!c->dev) {
		ksft_print_msg("no vrnic device\n");
		return false;
	}
	c->pd = ibv_alloc_pd(c->dev);
	if (!c->pd || ibv_query_device(c->dev, &c->attr)) {
		ksft_print_msg("ibv_alloc_pd/ibv_query_device failed\n");
		return false;
	}
	c->gid_index = vrnic_wait_ipv4_gid(c->dev, end, &c->gid);
	if (c->gid_index < 0) {
		ksft_print_msg("no RoCEv2 IPv4 GID on port 1\n");
		return false;
	}
	c->max_inline = probe_inline(c);
	ksft_print_msg("%s, GID index %d, atomic_cap %d, inline cap %u bytes\n",
		       ibv_get_device_name(c->dev->device), c->gid_index,
		       c->attr.atomic_cap, c->max_inline);
	return true;
}

/* A number option in [lo, hi]. */
static unsigned long opt_num(const char *arg, unsigned long lo,
			     unsigned long hi, int opt)
{
	char *end;
	unsigned long n = strtoul(arg, &end, 0);

	if (*end || !*arg || n < lo || n > hi)
		ksft_exit_fail_msg("-%c: want a number in %lu..%lu, not '%s'\n",
				   opt, lo, hi, arg);
	return n;
}

int main(int argc, char **argv)
{
	static const struct tcase *sel[N_CASES + ARRAY_SIZE(lossy_cases)];
	const char *filter[16];
	struct ctx c = { .sock = -1 };
	bool list = false, header = true, lossy = false, ready;
	unsigned int nsel = 0, nfilter = 0, ncases = N_CASES, i;
	uint64_t fingerprint = 0;
	const char *node = getenv("VRNIC_NODE");
	char name[96];
	int opt;

	while ((opt = getopt(argc, argv, "lnt:LB:N:T:")) != -1) {
		if (opt == 'l')
			list = true;
		else if (opt == 'n')
			header = false;
		else if (opt == 't' && nfilter < 16)
			filter[nfilter++] = optarg;
		else if (opt == 'L')
			lossy = true;
		else if (opt == 'B')
			bulk_bytes = opt_num(optarg, 1, 1 << 20, opt) * MiB;
		else if (opt == 'N')
			lossy_msgs = opt_num(optarg, 1, 1 << 20, opt);
		else if (opt == 'T')
			qp_timeout = opt_num(optarg, 1, 31, opt);
		else
			ksft_exit_fail_msg("usage: %s [-l] [-n] [-L] [-B MIB] [-N MSGS] [-T TIMEOUT] [-t SUBSTRING]...\n",
					   argv[0]);
	}
	if (lossy) {
		ncases += ARRAY_SIZE(lossy_cases);
		/* The lossy cases' sizes must agree too. */
		fingerprint = mix(bulk_bytes ^ ((uint64_t)lossy_msgs << 48));
	}
	for (i = 0; i < ncases; i++) {
		const struct tcase *tc = i < N_CASES ? &cases[i] :
					 &lossy_cases[i - N_CASES];
		const char *n = case_name(tc, name, sizeof(name));
		bool match = !nfilter;

		for (unsigned int f = 0; f < nfilter; f++)
			match |= !!strstr(n, filter[f]);
		if (!match)
			continue;
		sel[nsel++] = tc;
		if (list)
			printf("%s\n", n);
		fingerprint = mix(fingerprint ^ i);
	}
	if (list)
		return 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (header) {
		ksft_print_header();
		ksft_set_plan(nsel);
	} else {
		ksft_plan = nsel;
	}
	c.server = node && !strcmp(node, "1");
	ksft_print_msg("node %s: %s\n", node ? node : "?",
		       c.server ? "responder (server)" : "requester (client)");

	ready = setup_device(&c) &&
		ctl_connect(&c.sock, c.server, c.peer_ip, CTL_PORT,
			    "no requester");
	if (ready) {
		/* Both sides must walk the same list. */
		struct msg me = { .seed = fingerprint, .ok = nsel }, peer;

		c.case_no = UINT32_MAX;
		ready = ctl_xchg(&c, &me, &peer, MSG_HELLO);
		if (ready && peer.seed != fingerprint) {
			ctl_lost(&c.sock, "the peer runs another list of cases");
			ready = false;
		}
	}
	for (i = 0; i < nsel; i++) {
		const char *n = case_name(sel[i], name, sizeof(name));
		struct verdict v = { .ok = true };
		double t0 = now();

		c.case_no = i;
		if (c.sock < 0) {
			ksft_test_result_fail("%s (%s)\n", n,
					      ready ? "control connection lost" :
						      "no device or no peer");
			continue;
		}
		sel[i]->run(&c, sel[i], &v);
		if (now() - t0 > 5)
			info(&v, "%.1f s", now() - t0);
		finish(&c, n, &v);
	}
	if (c.sock >= 0)
		close(c.sock);
	vrnic_close(c.dev, c.pd);
	ksft_finished();
}
