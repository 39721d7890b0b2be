// SPDX-License-Identifier: GPL-2.0
/*
 * A malicious user process on one vrnic guest (issue 13). It opens the
 * device through libibverbs and creates its queues with the normal verbs,
 * then goes under the provider: drivers/providers/vrnic/vrnic.h gives it
 * the SQ/RQ rings in its own memory, the mmap'd doorbell page and the CQ
 * doorbell record, uapi/vrnic_hw_defs.h the WQE/CQE/doorbell formats. It
 * writes what the provider would never write and checks, case by case,
 * the outcome the device documents (programming-reference.rst, wire.rst):
 *  - garbage send WQEs: bad opcodes, num_sge past the QP's maximum and
 *    past the WQE, SGE lengths and addresses outside every MR, inline
 *    lengths of 4 GiB, a message over 2^31 bytes, short atomics, UD over
 *    the path MTU, ATOMIC WRITE on UC, a FLUSH with a reserved placement
 *    type, and seeded random WQEs: each completes with its error
 *    status, the QP goes to ERR and the WQE after it is flushed;
 *  - garbage receive WQEs (num_sge 255, an SGE running off its MR):
 *    receiver LOC_*_ERR, sender REM_OP_ERR, both QPs in ERR;
 *  - the keys of another process's MRs (a forked child with its own
 *    context, PD and MRs) as lkeys (local SGE, READ target, receive SGE)
 *    and as rkeys (WRITE, READ, FETCH_ADD, ATOMIC WRITE, FLUSH), its
 *    memory window (bind,
 *    LOCAL_INV, SEND_WITH_INV, WRITE through it), and our window bound to
 *    its MR: refused with LOC_PROT_ERR, REM_ACCESS_ERR, REM_OP_ERR,
 *    MW_BIND_ERR, LOC_QP_OP_ERR or REM_INV_REQ_ERR, and the child's memory
 *    never changes; also a UC WRITE with its rkey sent straight to its own
 *    UC QP through the loopback, whose data must not land either;
 *  - doorbells with producer indices more than a ring ahead, half the
 *    index space ahead or backwards, on a QP in RESET, on the 1019
 *    offsets that have no doorbell, and for every index of the child's
 *    QPs and CQs and of every other QPN: ignored, and the real doorbell
 *    afterwards still runs exactly the WQEs that were posted;
 *  - a CQ arm whose consumer index is past the producer: no event;
 *  - the CQ doorbell record rewritten ahead of the producer, and a CQ
 *    overrun: the CQ stops with IBV_EVENT_CQ_ERR and writes nothing more;
 *  - a second thread scribbling over the rings, the CQ ring and the
 *    doorbell record while the device runs WQEs and random doorbells;
 *  - CREATE_QP / CREATE_CQ with hostile udata (unmapped, read-only,
 *    unaligned or too short rings, impossible geometry, reserved bits)
 *    and an MR over the doorbell page: refused with an errno, nothing
 *    left behind.
 * Meanwhile the child runs an RC and a UC loopback pair of its own (WRITE,
 * SEND, READ and a WRITE through a type 2 window, every byte verified,
 * plus honeypots with every remote right that nobody may change) and must
 * keep completing during every case; the kernel log must show no WARN,
 * BUG or oops. At the end a fresh QP pair moves verified data: the device (and
 * QEMU) survived.
 *
 * QPs talk to each other through the device's loopback (an address vector
 * to the port's own RoCEv2 GID), so one guest is enough.
 *
 * usage: hostile_guest [-l] [-t SUBSTRING]...
 *   -l  list the cases and exit
 *   -t  run only the cases whose name contains SUBSTRING (the checks on
 *       the child process and the device at the end always run)
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* No control message to fit: room for long notes (the sweep's CQE tally). */
#define VERDICT_NOTE_LEN	900

#include "kselftest.h"
#include "common.h"
#include "pattern.h"
#include "qp.h"
#include "verdict.h"
/* The provider's private structures: where its rings and doorbells are. */
#include "raw_wq.h"
/* Its command wrappers (DECLARE_DRV_CMD), for hand-made udata. */
#include "vrnic-abi.h"

#define KiB		1024ul
#define MiB		(1024ul * KiB)
#define WAIT_MS		15000	/* a completion that must come */
#define QUIET_MS	1500	/* how long "nothing happens" is watched */
#define PROGRESS_MS	60000	/* the child must complete a round within */
#define ALL_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define HP_LEN		(64 * KiB)	/* the child's honeypot MR */
#define HP_SEED		0x686f6e6579706f74ull
#define UC_HP_SEED	0x75636870ull
#define UC_HP		(32 * KiB)	/* in the child's UC receiver's buffer */
#define BIG_SGE		(128 * MiB + 4 * KiB)	/* 16 of them pass 2^31 */
#define SWEEP_SEEDS	64
#define STORM_MS	3000

/* ---- small things ------------------------------------------------------- */

static ssize_t not_zero(const uint8_t *p, size_t len)
{
	for (size_t k = 0; k < len; k++)
		if (p[k])
			return k;
	return -1;
}

/* ---- verbs objects: one device context, QPs in loopback pairs ---------- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gidx;
	union ibv_gid gid;
};

struct ep_cfg {
	enum ibv_qp_type qpt;
	uint32_t sq, rq, sge, cqe;	/* 0: 16, 16, 1, 64 */
	size_t size;			/* 0: 64 KiB */
	bool chan;			/* the CQ gets a completion channel */
	bool srq;			/* receives come from an SRQ of its own */
};

/* The retries of every connection; a case that wants others edits a copy. */
static const struct rc_knobs conn_default = {
	.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 12,
};

/* One QP with its own CQ (send and receive) and one registered buffer. */
struct ep {
	struct dev *d;
	enum ibv_qp_type qpt;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint8_t *buf;
	size_t size;
	struct ibv_mr *mr;
	uint32_t psn;
};

struct pair {
	struct ep a, b;
};

static bool dev_open(struct dev *d)
{
	memset(d, 0, sizeof(*d));
	d->ctx = vrnic_open();
	if (!d->ctx)
		return false;
	d->pd = ibv_alloc_pd(d->ctx);
	d->gidx = vrnic_ipv4_gid_index(d->ctx);
	if (!d->pd || d->gidx < 0 ||
	    ibv_query_gid(d->ctx, 1, d->gidx, &d->gid))
		return false;
	return true;
}

static void dev_close(struct dev *d)
{
	vrnic_close(d->ctx, d->pd);
}

static bool ep_open(struct dev *d, struct ep *e, const struct ep_cfg *cfg,
		    struct verdict *v)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = cfg->sq ? cfg->sq : 16,
			 .max_recv_wr = cfg->rq ? cfg->rq : 16,
			 .max_send_sge = cfg->sge ? cfg->sge : 1,
			 .max_recv_sge = 1 },
		.qp_type = cfg->qpt,
	};

	memset(e, 0, sizeof(*e));
	e->d = d;
	e->qpt = cfg->qpt;
	e->psn = mix((uint64_t)(now() * 1e9)) & 0xffffff;
	if (cfg->chan) {
		e->ch = ibv_create_comp_channel(d->ctx);
		if (!e->ch) {
			fail(v, "ibv_create_comp_channel: %s", strerror(errno));
			return false;
		}
	}
	e->cq = ibv_create_cq(d->ctx, cfg->cqe ? cfg->cqe : 64, NULL, e->ch, 0);
	if (!e->cq) {
		fail(v, "ibv_create_cq: %s", strerror(errno));
		return false;
	}
	ia.send_cq = ia.recv_cq = e->cq;
	if (cfg->srq) {
		e->srq = srq_for_qp(d->pd, &ia, v);
		if (!e->srq)
			return false;
	}
	e->qp = ibv_create_qp(d->pd, &ia);
	if (!e->qp) {
		fail(v, "ibv_create_qp: %s", strerror(errno));
		return false;
	}
	e->size = cfg->size ? cfg->size : 64 * KiB;
	e->buf = mmap(NULL, e->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		fail(v, "mmap %zu bytes: %s", e->size, strerror(errno));
		return false;
	}
	e->mr = ibv_reg_mr(d->pd, e->buf, e->size, ALL_ACCESS);
	if (!e->mr) {
		fail(v, "ibv_reg_mr: %s", strerror(errno));
		return false;
	}
	return qp_to_init(e->qp, v);
}

static void ep_close(struct ep *e)
{
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (e->qp && ibv_destroy_qp(e->qp))
		ksft_print_msg("ibv_destroy_qp: %s\n", strerror(errno));
	if (e->srq && ibv_destroy_srq(e->srq))
		ksft_print_msg("ibv_destroy_srq: %s\n", strerror(errno));
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, e->size);
	if (e->cq && ibv_destroy_cq(e->cq))
		ksft_print_msg("ibv_destroy_cq: %s\n", strerror(errno));
	if (e->ch)
		ibv_destroy_comp_channel(e->ch);
	memset(e, 0, sizeof(*e));
}

/* INIT -> RTR -> RTS towards QP qpn (through the loopback: our own GID). */
static bool ep_connect_to(struct ep *e, uint32_t qpn, uint32_t psn,
			  const struct rc_knobs *cc, struct verdict *v)
{
	struct ibv_ah_attr ah;

	roce_ah_attr(&ah, e->d->gid.raw, e->d->gidx);
	if (!qp_to_rts(e->qp, &ah, qpn, psn, e->psn, cc, v))
		return false;
	if (e->qpt == IBV_QPT_UD && !e->ah) {
		e->ah = ibv_create_ah(e->d->pd, &ah);
		if (!e->ah) {
			fail(v, "ibv_create_ah: %s", strerror(errno));
			return false;
		}
	}
	return true;
}

static bool ep_connect(struct ep *e, const struct ep *peer,
		       const struct rc_knobs *cc, struct verdict *v)
{
	return ep_connect_to(e, peer->qp->qp_num, peer->psn, cc, v);
}

static bool pair_open(struct dev *d, struct pair *p, const struct ep_cfg *cfg,
		      const struct rc_knobs *cc, struct verdict *v)
{
	memset(p, 0, sizeof(*p));
	return ep_open(d, &p->a, cfg, v) && ep_open(d, &p->b, cfg, v) &&
	       ep_connect(&p->a, &p->b, cc, v) &&
	       ep_connect(&p->b, &p->a, cc, v);
}

static void pair_close(struct pair *p)
{
	ep_close(&p->a);
	ep_close(&p->b);
}

/* Both QPs through RESET and up again (new PSNs): a clean connection. */
static bool pair_reset(struct pair *p, const struct rc_knobs *cc,
		       struct verdict *v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (!qp_modify(p->a.qp, &a, IBV_QP_STATE, "RESET", v) ||
	    !qp_modify(p->b.qp, &a, IBV_QP_STATE, "RESET", v) ||
	    !qp_to_init(p->a.qp, v) || !qp_to_init(p->b.qp, v))
		return false;
	p->a.psn = mix(p->a.psn) & 0xffffff;
	p->b.psn = mix(p->b.psn) & 0xffffff;
	return ep_connect(&p->a, &p->b, cc, v) &&
	       ep_connect(&p->b, &p->a, cc, v);
}

/* One work request from e's buffer at off (a FETCH_AND_ADD adds 1). */
static int post(struct ep *e, enum ibv_wr_opcode op, size_t off, uint32_t len,
		uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	return qp_post_one(e->qp, op, e->mr, e->buf + off, len, raddr, rkey, 1,
			   wr_id);
}

static int post_recv(struct ep *e, size_t off, uint32_t len, uint64_t wr_id)
{
	return qp_post_recv_one(e->qp, e->mr, e->buf + off, len, wr_id);
}

/* A WRITE of len pattern bytes from a's buffer into b's, through the verbs. */
static int post_write(struct ep *a, struct ep *b, uint32_t len, uint64_t seed,
		      uint64_t wr_id)
{
	fill(a->buf, len, seed);
	return post(a, IBV_WR_RDMA_WRITE, 0, len, (uintptr_t)b->buf,
		    b->mr->rkey, wr_id);
}

static bool expect_wc(struct verdict *v, const char *what, struct ibv_cq *cq,
		      enum ibv_wc_status want, uint64_t wr_id, int ms)
{
	struct ibv_wc wc;

	if (wait_wc(cq, &wc, 1, ms) != 1) {
		fail(v, "%s: no completion within %d ms", what, ms);
		return false;
	}
	if (wc.status != want || wc.wr_id != wr_id) {
		fail(v, "%s: status %s, wr_id %#" PRIx64 "; want %s, wr_id %#" PRIx64,
		     what, ibv_wc_status_str(wc.status), (uint64_t)wc.wr_id,
		     ibv_wc_status_str(want), wr_id);
		return false;
	}
	return true;
}

/* Nothing completes on cq for ms. */
static bool expect_quiet(struct verdict *v, const char *what,
			 struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	if (wait_wc(cq, &wc, 1, ms) == 0)
		return true;
	fail(v, "%s: unexpected completion (status %s, wr_id %#" PRIx64 ")",
	     what, ibv_wc_status_str(wc.status), (uint64_t)wc.wr_id);
	return false;
}

/* ---- under the provider: rings and doorbells by hand ------------------- */

static struct vrnic_qp *vq(struct ep *e)
{
	return to_vrnic_qp(e->qp);
}

static struct vrnic_cq *vc(struct ep *e)
{
	return to_vrnic_cq(e->cq);
}

/*
 * The same for an SRQ, whose WQEs carry a slot of the provider's wr_id
 * pool instead of their ring position (they complete out of order).
 */
static uint32_t srq_put(struct vrnic_srq *srq, const void *img, size_t len,
			uint64_t wr_id)
{
	size_t size = (size_t)1 << srq->wqe_shift;
	uint32_t pi = srq->pi, idx = srq->free_list[--srq->nfree];
	uint8_t *slot = (uint8_t *)srq->ring +
			((size_t)(pi & ((1u << srq->log_depth) - 1)) <<
			 srq->wqe_shift);

	srq->busy[idx] = 1;
	srq->wrid[idx] = wr_id;
	memset(slot, 0, size);
	memcpy(slot, img, len < size ? len : size);
	*(__le64 *)slot = htole64(idx);
	srq->pi = pi + 1;
	return pi + 1;
}

static void db_write(struct dev *d, uint32_t off, uint32_t val)
{
	raw_db_write(d->ctx, off, val);
}

static void db(struct dev *d, uint32_t off, uint32_t qn, uint32_t idx)
{
	raw_db(d->ctx, off, qn, idx);
}

/*
 * Rewrite the CQ doorbell record, the consumer index the device reads
 * before every CQE it writes (a store the device may see at any time).
 */
static void dbrec_set(struct ep *e, uint32_t ci)
{
	__atomic_store_n(&vc(e)->dbrec->ci, htole32(ci), __ATOMIC_RELEASE);
}

static void sq_ring(struct ep *e, uint32_t idx)
{
	db(e->d, VRNIC_DB_SQ, e->qp->qp_num, idx);
}

static void rq_ring(struct ep *e, uint32_t idx)
{
	db(e->d, VRNIC_DB_RQ, e->qp->qp_num, idx);
}

/* A send WQE header with one SGE (or none when len is 0 and addr 0). */
struct swqe {
	struct vrnic_send_wqe h;
	struct vrnic_sge sge[28];	/* the most a 512-byte WQE holds */
};

static void swqe_init(struct swqe *w, uint8_t opcode, int nsge)
{
	memset(w, 0, sizeof(*w));
	w->h.opcode = opcode;
	w->h.flags = VRNIC_WQE_FLAG_SIGNALED;
	w->h.num_sge = nsge;
}

static void sge_set(struct vrnic_sge *s, uint64_t addr, uint32_t len,
		    uint32_t lkey)
{
	s->addr = htole64(addr);
	s->length = htole32(len);
	s->lkey = htole32(lkey);
}

static void swqe_remote(struct swqe *w, uint64_t raddr, uint32_t rkey)
{
	w->h.remote_addr = htole64(raddr);
	w->h.rkey = htole32(rkey);
}

/* ---- async events -------------------------------------------------------- */

static const char *event_str(enum ibv_event_type t)
{
	return ibv_event_type_str(t);
}

/* The next async event within ms (copied, already acknowledged). */
static bool async_next(struct dev *d, struct ibv_async_event *out, int ms)
{
	struct pollfd p = { .fd = d->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&p, 1, ms) != 1)
		return false;
	if (ibv_get_async_event(d->ctx, &ev))
		return false;
	*out = ev;
	ibv_ack_async_event(&ev);
	return true;
}

/* The element an async event names: a CQ, a QP or an SRQ. */
static void *event_obj(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ev->element.srq;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_DEVICE_FATAL:
		return NULL;
	default:
		return ev->element.qp;
	}
}

/* Wait for event type naming obj; other events are remarked upon. */
static bool expect_event(struct verdict *v, struct dev *d,
			 enum ibv_event_type type, void *obj, int ms)
{
	double end = now() + ms / 1000.0;
	struct ibv_async_event ev;

	while (now() < end) {
		if (!async_next(d, &ev, (end - now()) * 1000 + 1))
			break;
		if (ev.event_type == type && event_obj(&ev) == obj)
			return true;
		info(v, "other async event %s", event_str(ev.event_type));
	}
	fail(v, "no %s within %d ms", event_str(type), ms);
	return false;
}

/*
 * No async event is pending for this case's objects (an event that names
 * them was not expected); events of earlier cases are only remarked upon.
 */
static void expect_no_event(struct verdict *v, struct dev *d, struct pair *p)
{
	struct ibv_async_event ev;

	while (async_next(d, &ev, 0)) {
		void *o = event_obj(&ev);
		bool mine = o && (o == p->a.cq || o == p->b.cq ||
				  o == p->a.qp || o == p->b.qp ||
				  o == p->a.srq || o == p->b.srq);

		if (mine)
			fail(v, "unexpected async event %s", event_str(ev.event_type));
		else
			info(v, "stray async event %s", event_str(ev.event_type));
	}
}

/* ---- the other process: a victim with its own context ------------------ */

/*
 * Shared (MAP_SHARED, before fork) between the attacker and the child.
 * The child publishes its keys and queue numbers once, then counts its
 * verified rounds; the attacker only reads, except stop.
 */
struct victim {
	/* Set once before ready. */
	uint64_t hp_addr;
	uint32_t hp_len, hp_lkey, hp_rkey;
	uint32_t qpn[2], cqn[2];
	uint64_t win_addr;	/* a type 2 window bound through qpn[1] */
	uint32_t mw_rkey;
	/* A UC pair too: its receiver, and a honeypot in that QP's MR. */
	uint32_t uc_qpn, uc_rkey;
	uint64_t uc_hp_addr;
	uint64_t uc_hp_bad;	/* 1 + offset of a changed byte */
	uint64_t uc_rounds;
	int ready;		/* 1: running; -1: could not start */
	/* Live. */
	int stop;
	uint64_t rounds;
	int failed;
	uint64_t hp_bad;	/* 1 + offset of a changed honeypot byte */
	char why[400];
	/* At the end. */
	int done;
	int state[4];
};

static struct victim *vic;
static pid_t vic_pid;
/* The child's own: its window and the range it is bound to. */
static uint8_t *vwin;
static uint32_t vwin_key;

static __printf(1, 2) void victim_fail(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_load_n(&vic->failed, __ATOMIC_ACQUIRE))
		return;
	va_start(ap, fmt);
	vsnprintf(vic->why, sizeof(vic->why), fmt, ap);
	va_end(ap);
	__atomic_store_n(&vic->failed, 1, __ATOMIC_RELEASE);
}

static bool victim_wc(struct ep *e, enum ibv_wc_opcode op, uint64_t wr_id,
		      uint32_t byte_len, const char *what)
{
	struct ibv_wc wc;

	if (wait_wc(e->cq, &wc, 1, WAIT_MS) != 1) {
		victim_fail("%s: no completion", what);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id ||
	    wc.opcode != op || (byte_len && wc.byte_len != byte_len)) {
		victim_fail("%s: status %s opcode %d wr_id %#" PRIx64
			    " byte_len %u; want SUCCESS %d %#" PRIx64 " %u",
			    what, ibv_wc_status_str(wc.status), wc.opcode,
			    (uint64_t)wc.wr_id, wc.byte_len, op, wr_id, byte_len);
		return false;
	}
	return true;
}

/*
 * One round: A WRITEs 16 KiB and SENDs 1 KiB to B, B READs 4 KiB back
 * from A; every byte checked where it lands, then the honeypot.
 */
static bool victim_round(struct ep *a, struct ep *b, uint8_t *hp, uint64_t k)
{
	const uint32_t wlen = 16 * KiB, slen = KiB, rlen = 4 * KiB;
	uint64_t seed = mix(k + 1);
	ssize_t off;

	fill(a->buf, wlen + slen, seed);
	memset(b->buf, 0, 64 * KiB);
	if (post_recv(b, 32 * KiB, slen, k) ||
	    post(a, IBV_WR_RDMA_WRITE, 0, wlen, (uintptr_t)b->buf, b->mr->rkey,
		 4 * k) ||
	    post(a, IBV_WR_SEND, wlen, slen, 0, 0, 4 * k + 1)) {
		victim_fail("round %" PRIu64 ": post failed", k);
		return false;
	}
	if (!victim_wc(a, IBV_WC_RDMA_WRITE, 4 * k, 0, "WRITE") ||
	    !victim_wc(a, IBV_WC_SEND, 4 * k + 1, 0, "SEND") ||
	    !victim_wc(b, IBV_WC_RECV, k, slen, "receive"))
		return false;
	off = differs(b->buf, wlen, seed);
	if (off >= 0) {
		victim_fail("round %" PRIu64 ": WRITE data wrong at %zd", k, off);
		return false;
	}
	for (size_t i = 0; i < slen; i++)
		if (b->buf[32 * KiB + i] != pat(seed, wlen + i)) {
			victim_fail("round %" PRIu64 ": SEND data wrong at %zu", k, i);
			return false;
		}
	if (post(b, IBV_WR_RDMA_READ, 48 * KiB, rlen, (uintptr_t)a->buf,
		 a->mr->rkey, k) ||
	    !victim_wc(b, IBV_WC_RDMA_READ, k, rlen, "READ"))
		return false;
	off = differs(b->buf + 48 * KiB, rlen, seed);
	if (off >= 0) {
		victim_fail("round %" PRIu64 ": READ data wrong at %zd", k, off);
		return false;
	}
	/* Through the window: it must still be bound, to the same range. */
	fill(a->buf + 20 * KiB, KiB, seed ^ 0x3333);
	if (post(a, IBV_WR_RDMA_WRITE, 20 * KiB, KiB, (uintptr_t)vwin, vwin_key,
		 4 * k + 2) ||
	    !victim_wc(a, IBV_WC_RDMA_WRITE, 4 * k + 2, 0,
		       "WRITE through the window"))
		return false;
	off = differs(vwin, KiB, seed ^ 0x3333);
	if (off >= 0) {
		victim_fail("round %" PRIu64 ": window data wrong at %zd", k, off);
		return false;
	}
	off = differs(hp, HP_LEN, HP_SEED);
	if (off >= 0 && !vic->hp_bad)
		__atomic_store_n(&vic->hp_bad, off + 1, __ATOMIC_RELEASE);
	return true;
}

/* A type 2 window over the first 4 KiB of vwin, bound through b. */
static struct ibv_mw *victim_window(struct dev *d, struct ep *b,
				    struct ibv_mr **win_mr)
{
	struct ibv_send_wr wr = {
		.wr_id = 0xb1d, .opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_mw *mw;
	struct ibv_wc wc;

	vwin = mmap(NULL, 16 * KiB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (vwin == MAP_FAILED)
		return NULL;
	*win_mr = ibv_reg_mr(d->pd, vwin, 16 * KiB, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	mw = *win_mr ? ibv_alloc_mw(d->pd, IBV_MW_TYPE_2) : NULL;
	if (!mw)
		return NULL;
	vwin_key = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = vwin_key;
	wr.bind_mw.bind_info.mr = *win_mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)vwin;
	wr.bind_mw.bind_info.length = 4 * KiB;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_post_send(b->qp, &wr, &bad) ||
	    wait_wc(b->cq, &wc, 1, WAIT_MS) != 1 ||
	    wc.status != IBV_WC_SUCCESS || wc.wr_id != 0xb1d) {
		ibv_dealloc_mw(mw);
		return NULL;
	}
	return mw;
}

/*
 * The UC pair's round: a WRITE of 1 KiB and a SEND of 256 bytes, both
 * checked, then the honeypot in the receiver's MR (16 KiB at UC_HP that
 * nothing of the child writes).
 */
static bool victim_uc_round(struct ep *a, struct ep *b, uint64_t k)
{
	uint64_t seed = mix(k + 0x75);
	ssize_t off;

	fill(a->buf, KiB + 256, seed);
	memset(b->buf, 0, KiB);
	if (post_recv(b, 16 * KiB, 256, k) ||
	    post(a, IBV_WR_RDMA_WRITE, 0, KiB, (uintptr_t)b->buf, b->mr->rkey,
		 2 * k) ||
	    post(a, IBV_WR_SEND, KiB, 256, 0, 0, 2 * k + 1)) {
		victim_fail("UC round %" PRIu64 ": post failed", k);
		return false;
	}
	if (!victim_wc(a, IBV_WC_RDMA_WRITE, 2 * k, 0, "UC WRITE") ||
	    !victim_wc(a, IBV_WC_SEND, 2 * k + 1, 0, "UC SEND") ||
	    !victim_wc(b, IBV_WC_RECV, k, 256, "UC receive"))
		return false;
	off = differs(b->buf, KiB, seed);
	if (off >= 0) {
		victim_fail("UC round %" PRIu64 ": WRITE data wrong at %zd", k, off);
		return false;
	}
	for (size_t i = 0; i < 256; i++)
		if (b->buf[16 * KiB + i] != pat(seed, KiB + i)) {
			victim_fail("UC round %" PRIu64 ": SEND data wrong at %zu",
				    k, i);
			return false;
		}
	off = differs(b->buf + UC_HP, 16 * KiB, UC_HP_SEED);
	if (off >= 0 && !vic->uc_hp_bad)
		__atomic_store_n(&vic->uc_hp_bad, off + 1, __ATOMIC_RELEASE);
	return true;
}

static void victim_main(void)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	struct ep_cfg ucfg = { .qpt = IBV_QPT_UC };
	struct pair u;
	struct verdict v = { .ok = true };
	struct ibv_mr *hp_mr = NULL, *win_mr = NULL;
	struct ibv_mw *mw = NULL;
	struct dev d;
	struct pair p;
	uint8_t *hp;
	uint64_t k;

	if (!dev_open(&d)) {
		snprintf(vic->why, sizeof(vic->why), "cannot open vrnic");
		__atomic_store_n(&vic->ready, -1, __ATOMIC_RELEASE);
		_exit(1);
	}
	hp = mmap(NULL, HP_LEN, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (hp != MAP_FAILED) {
		fill(hp, HP_LEN, HP_SEED);
		hp_mr = ibv_reg_mr(d.pd, hp, HP_LEN, ALL_ACCESS);
	}
	if (hp_mr && pair_open(&d, &p, &cfg, &conn_default, &v) &&
	    pair_open(&d, &u, &ucfg, &conn_default, &v))
		mw = victim_window(&d, &p.b, &win_mr);
	if (!mw) {
		snprintf(vic->why, sizeof(vic->why), "setup: %s%s%.300s",
			 hp_mr ? "" : "honeypot MR failed ",
			 mw ? "" : "window failed ", v.note);
		__atomic_store_n(&vic->ready, -1, __ATOMIC_RELEASE);
		_exit(1);
	}
	vic->hp_addr = (uintptr_t)hp;
	vic->hp_len = HP_LEN;
	vic->hp_lkey = hp_mr->lkey;
	vic->hp_rkey = hp_mr->rkey;
	vic->qpn[0] = p.a.qp->qp_num;
	vic->qpn[1] = p.b.qp->qp_num;
	vic->cqn[0] = vc(&p.a)->cqn;
	vic->cqn[1] = vc(&p.b)->cqn;
	vic->win_addr = (uintptr_t)vwin;
	vic->mw_rkey = vwin_key;
	fill(u.b.buf + UC_HP, 16 * KiB, UC_HP_SEED);
	vic->uc_qpn = u.b.qp->qp_num;
	vic->uc_rkey = u.b.mr->rkey;
	vic->uc_hp_addr = (uintptr_t)u.b.buf + UC_HP;
	__atomic_store_n(&vic->ready, 1, __ATOMIC_RELEASE);

	for (k = 0; !__atomic_load_n(&vic->stop, __ATOMIC_ACQUIRE); k++) {
		if (!victim_round(&p.a, &p.b, hp, k) ||
		    !victim_uc_round(&u.a, &u.b, k))
			break;
		__atomic_store_n(&vic->rounds, k + 1, __ATOMIC_RELEASE);
		/* Leave the single emulated CPU to the attacker for a while. */
		usleep(20000);
	}
	vic->state[0] = qp_state(p.a.qp);
	vic->state[1] = qp_state(p.b.qp);
	vic->state[2] = qp_state(u.a.qp);
	vic->state[3] = qp_state(u.b.qp);
	pair_close(&u);
	if (differs(hp, HP_LEN, HP_SEED) >= 0 && !vic->hp_bad)
		vic->hp_bad = differs(hp, HP_LEN, HP_SEED) + 1;
	pair_close(&p);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(win_mr);
	ibv_dereg_mr(hp_mr);
	dev_close(&d);
	__atomic_store_n(&vic->done, 1, __ATOMIC_RELEASE);
	_exit(0);
}

static uint64_t vic_rounds(void)
{
	return __atomic_load_n(&vic->rounds, __ATOMIC_ACQUIRE);
}

/* ---- the cases ------------------------------------------------------------ */

struct ctx {
	struct dev d;
	uint8_t *big;		/* BIG_SGE bytes, registered on demand */
	struct ibv_mr *big_mr;
	struct ibv_mw *mw;	/* a type 2 window of ours, on demand */
};

struct tcase {
	const char *name;
	void (*run)(struct ctx *c, const struct tcase *tc, struct verdict *v);
	int arg;
};

/*
 * A send WQE the provider would refuse, on a fresh pair; then one good
 * WRITE through the verbs. The bad one completes with want (and a's QP
 * goes to ERR), the good one is flushed, nothing lands in b's buffer,
 * and b's QP ends in b_state (ERR when the responder detected it).
 */
enum sq_bad {
	SQ_OPCODE, SQ_UC_READ, SQ_NSGE_MAX, SQ_NSGE_255, SQ_SGE_LEN,
	SQ_SGE_WRAP, SQ_INLINE_LEN, SQ_INLINE_READ, SQ_2G, SQ_ATOMIC_SHORT,
	SQ_UD_LONG, SQ_VIC_LKEY, SQ_VIC_LKEY_READ, SQ_VIC_RKEY_WRITE,
	SQ_VIC_RKEY_READ, SQ_VIC_RKEY_FADD, SQ_MW_ON_VIC_MR, SQ_MW_VIC_WINDOW,
	SQ_LINV_VIC_WINDOW, SQ_SENDINV_VIC_WINDOW, SQ_VIC_WINDOW_WRITE,
	SQ_AWRITE_UC, SQ_FLUSH_RESERVED, SQ_VIC_RKEY_AWRITE, SQ_VIC_RKEY_FLUSH,
};

struct sq_bad_spec {
	enum ibv_qp_type qpt;
	uint32_t sge;			/* the QP's max_send_sge */
	enum ibv_wc_status want;
	int b_state;
	int b_want;			/* b's receive completes so; 0: none */
};

static const struct sq_bad_spec sq_bad_spec[] = {
	[SQ_OPCODE] = { IBV_QPT_RC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_UC_READ] = { IBV_QPT_UC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_NSGE_MAX] = { IBV_QPT_RC, 16, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_NSGE_255] = { IBV_QPT_RC, 4, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_SGE_LEN] = { IBV_QPT_RC, 1, IBV_WC_LOC_PROT_ERR, IBV_QPS_RTS },
	[SQ_SGE_WRAP] = { IBV_QPT_RC, 1, IBV_WC_LOC_PROT_ERR, IBV_QPS_RTS },
	[SQ_INLINE_LEN] = { IBV_QPT_RC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_INLINE_READ] = { IBV_QPT_RC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_2G] = { IBV_QPT_RC, 16, IBV_WC_LOC_LEN_ERR, IBV_QPS_RTS },
	[SQ_ATOMIC_SHORT] = { IBV_QPT_RC, 1, IBV_WC_LOC_LEN_ERR, IBV_QPS_RTS },
	[SQ_UD_LONG] = { IBV_QPT_UD, 1, IBV_WC_LOC_LEN_ERR, IBV_QPS_RTS },
	[SQ_VIC_LKEY] = { IBV_QPT_RC, 1, IBV_WC_LOC_PROT_ERR, IBV_QPS_RTS },
	[SQ_VIC_LKEY_READ] = { IBV_QPT_RC, 1, IBV_WC_LOC_PROT_ERR, IBV_QPS_RTS },
	[SQ_VIC_RKEY_WRITE] = { IBV_QPT_RC, 1, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
	[SQ_VIC_RKEY_READ] = { IBV_QPT_RC, 1, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
	[SQ_VIC_RKEY_FADD] = { IBV_QPT_RC, 1, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
	[SQ_MW_ON_VIC_MR] = { IBV_QPT_RC, 1, IBV_WC_MW_BIND_ERR, IBV_QPS_RTS },
	[SQ_MW_VIC_WINDOW] = { IBV_QPT_RC, 1, IBV_WC_MW_BIND_ERR, IBV_QPS_RTS },
	[SQ_LINV_VIC_WINDOW] = { IBV_QPT_RC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_SENDINV_VIC_WINDOW] = { IBV_QPT_RC, 1, IBV_WC_REM_INV_REQ_ERR,
				    IBV_QPS_ERR, IBV_WC_REM_INV_REQ_ERR },
	[SQ_VIC_WINDOW_WRITE] = { IBV_QPT_RC, 1, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
	[SQ_AWRITE_UC] = { IBV_QPT_UC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_FLUSH_RESERVED] = { IBV_QPT_RC, 1, IBV_WC_LOC_QP_OP_ERR, IBV_QPS_RTS },
	[SQ_VIC_RKEY_AWRITE] = { IBV_QPT_RC, 1, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
	[SQ_VIC_RKEY_FLUSH] = { IBV_QPT_RC, 1, IBV_WC_REM_ACCESS_ERR, IBV_QPS_ERR },
};

static bool big_mr(struct ctx *c, struct verdict *v)
{
	if (c->big_mr)
		return true;
	c->big = mmap(NULL, BIG_SGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c->big == MAP_FAILED) {
		c->big = NULL;
		fail(v, "mmap %lu bytes: %s", BIG_SGE, strerror(errno));
		return false;
	}
	c->big_mr = ibv_reg_mr(c->d.pd, c->big, BIG_SGE, IBV_ACCESS_LOCAL_WRITE);
	if (!c->big_mr) {
		fail(v, "ibv_reg_mr %lu bytes: %s", BIG_SGE, strerror(errno));
		munmap(c->big, BIG_SGE);
		c->big = NULL;
		return false;
	}
	return true;
}

static bool sq_bad_build(struct ctx *c, enum sq_bad bad, struct pair *p,
			 struct swqe *w, struct verdict *v)
{
	struct ep *a = &p->a, *b = &p->b;
	uint64_t abuf = (uintptr_t)a->buf, bbuf = (uintptr_t)b->buf;
	uint32_t lk = a->mr->lkey, max = vq(a)->sq.max_sge;

	switch (bad) {
	case SQ_OPCODE:
		/* Past every opcode of enum vrnic_wqe_opcode. */
		swqe_init(w, 0xee, 1);
		sge_set(&w->sge[0], abuf, 8, lk);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_UC_READ:
		swqe_init(w, VRNIC_WQE_OP_RDMA_READ, 1);
		sge_set(&w->sge[0], abuf, 8, lk);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_NSGE_MAX:
	case SQ_NSGE_255:
		/* max + 1 still fits the 512-byte WQE; 255 runs far past it. */
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE,
			  bad == SQ_NSGE_255 ? 255 : max + 1);
		for (int i = 0; i < 28; i++)
			sge_set(&w->sge[i], abuf, 8, lk);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_SGE_LEN:
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE, 1);
		sge_set(&w->sge[0], abuf, 0xffffffff, lk);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_SGE_WRAP:
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE, 1);
		sge_set(&w->sge[0], 0xfffffffffffff000ull, 0x2000, lk);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_INLINE_LEN:
		swqe_init(w, VRNIC_WQE_OP_SEND, 0);
		w->h.flags |= VRNIC_WQE_FLAG_INLINE;
		w->h.inline_len = htole32(0xffffffff);
		break;
	case SQ_INLINE_READ:
		swqe_init(w, VRNIC_WQE_OP_RDMA_READ, 0);
		w->h.flags |= VRNIC_WQE_FLAG_INLINE;
		w->h.inline_len = htole32(8);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_2G:
		if (!big_mr(c, v))
			return false;
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE, max);
		for (uint32_t i = 0; i < max; i++)
			sge_set(&w->sge[i], (uintptr_t)c->big, BIG_SGE,
				c->big_mr->lkey);
		if ((uint64_t)max * BIG_SGE <= (1ull << 31)) {
			fail(v, "max_send_sge %u: %u x %lu bytes do not pass 2^31",
			     max, max, BIG_SGE);
			return false;
		}
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_ATOMIC_SHORT:
		swqe_init(w, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, 1);
		sge_set(&w->sge[0], abuf, 4, lk);
		swqe_remote(w, bbuf, b->mr->rkey);
		w->h.compare_add = htole64(1);
		break;
	case SQ_UD_LONG: {
		/* After the UD segment: the provider's own address vector. */
		struct {
			struct vrnic_send_wqe h;
			struct vrnic_av av;
			struct vrnic_ud_dest dest;
			uint8_t pad[16];
			struct vrnic_sge sge;
		} *u = (void *)w;

		swqe_init(w, VRNIC_WQE_OP_SEND, 1);
		memcpy(&u->av, &to_vrnic_ah(a->ah)->av, sizeof(u->av));
		u->dest.dest_qpn = htole32(b->qp->qp_num);
		u->dest.qkey = htole32(0x80000000);
		sge_set(&u->sge, abuf, 2048, lk);
		break;
	}
	case SQ_VIC_LKEY:
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE, 1);
		sge_set(&w->sge[0], vic->hp_addr, 64, vic->hp_lkey);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_VIC_LKEY_READ:
		swqe_init(w, VRNIC_WQE_OP_RDMA_READ, 1);
		sge_set(&w->sge[0], vic->hp_addr, 64, vic->hp_lkey);
		swqe_remote(w, bbuf, b->mr->rkey);
		break;
	case SQ_VIC_RKEY_WRITE:
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE, 1);
		fill(a->buf, 64, 0xbad);
		sge_set(&w->sge[0], abuf, 64, lk);
		swqe_remote(w, vic->hp_addr, vic->hp_rkey);
		break;
	case SQ_VIC_RKEY_READ:
		swqe_init(w, VRNIC_WQE_OP_RDMA_READ, 1);
		sge_set(&w->sge[0], abuf + 4 * KiB, 64, lk);
		swqe_remote(w, vic->hp_addr, vic->hp_rkey);
		break;
	case SQ_VIC_RKEY_FADD:
		swqe_init(w, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, 1);
		sge_set(&w->sge[0], abuf + 4 * KiB, 8, lk);
		swqe_remote(w, vic->hp_addr, vic->hp_rkey);
		w->h.compare_add = htole64(0x100);
		break;
	case SQ_MW_ON_VIC_MR:
	case SQ_MW_VIC_WINDOW: {
		struct vrnic_bind_mw_wqe *m = (void *)w;
		uint32_t key;

		if (bad == SQ_MW_ON_VIC_MR) {
			/* Our own window onto the child's honeypot MR. */
			if (!c->mw)
				c->mw = ibv_alloc_mw(c->d.pd, IBV_MW_TYPE_2);
			if (!c->mw) {
				fail(v, "ibv_alloc_mw: %s", strerror(errno));
				return false;
			}
			key = ibv_inc_rkey(c->mw->rkey);
		} else {
			/* The child's window (a new key byte) onto our MR. */
			key = ibv_inc_rkey(vic->mw_rkey);
		}
		swqe_init(w, VRNIC_WQE_OP_BIND_MW, 0);
		m->mw_key = htole32(key);
		m->mr_key = htole32(bad == SQ_MW_ON_VIC_MR ? vic->hp_lkey : lk);
		m->access = htole32(VRNIC_ACCESS_REMOTE_WRITE |
				    VRNIC_ACCESS_REMOTE_READ);
		m->addr = htole64(bad == SQ_MW_ON_VIC_MR ? vic->hp_addr : abuf);
		m->length = htole64(64);
		break;
	}
	case SQ_LINV_VIC_WINDOW:
		swqe_init(w, VRNIC_WQE_OP_LOCAL_INV, 0);
		w->h.imm_data = htole32(vic->mw_rkey);
		break;
	case SQ_SENDINV_VIC_WINDOW:
		/* Zero bytes: nothing may land, only the key travels. */
		swqe_init(w, VRNIC_WQE_OP_SEND_INV, 0);
		w->h.imm_data = htole32(vic->mw_rkey);
		break;
	case SQ_VIC_WINDOW_WRITE:
		swqe_init(w, VRNIC_WQE_OP_RDMA_WRITE, 1);
		fill(a->buf, 64, 0xbad);
		sge_set(&w->sge[0], abuf, 64, lk);
		swqe_remote(w, vic->win_addr, vic->mw_rkey);
		break;
	case SQ_AWRITE_UC:
	case SQ_VIC_RKEY_AWRITE:
		/* The 8 bytes travel in the WQE; no SGE. */
		swqe_init(w, VRNIC_WQE_OP_ATOMIC_WRITE, 0);
		if (bad == SQ_AWRITE_UC)
			swqe_remote(w, bbuf, b->mr->rkey);
		else
			swqe_remote(w, vic->hp_addr, vic->hp_rkey);
		w->h.compare_add = htole64(0xbadbadbadbadull);
		break;
	case SQ_FLUSH_RESERVED:
		/* Placement type bit 3 is reserved. */
		swqe_init(w, VRNIC_WQE_OP_FLUSH, 0);
		swqe_remote(w, bbuf, b->mr->rkey);
		w->h.compare_add = htole64(64);
		w->h.swap = htole64(VRNIC_FLUSH_TYPE_GLOBAL | 0x8);
		break;
	case SQ_VIC_RKEY_FLUSH:
		swqe_init(w, VRNIC_WQE_OP_FLUSH, 0);
		swqe_remote(w, vic->hp_addr, vic->hp_rkey);
		w->h.compare_add = htole64(64);
		w->h.swap = htole64(VRNIC_FIELD_PREP(VRNIC_FLUSH_SEL_MASK,
						     VRNIC_FLUSH_SEL_MR) |
				    VRNIC_FLUSH_TYPE_PERSISTENT);
		break;
	}
	return true;
}

static void run_sq_bad(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	const struct sq_bad_spec *s = &sq_bad_spec[tc->arg];
	struct ep_cfg cfg = { .qpt = s->qpt, .sge = s->sge };
	struct pair p;
	struct swqe w;
	struct ibv_wc wc[2];
	uint32_t pi;
	ssize_t off;
	int n;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v) ||
	    !sq_bad_build(c, tc->arg, &p, &w, v))
		goto out;
	if (s->b_want && post_recv(&p.b, 0, 64, 0xbeef)) {
		fail(v, "ibv_post_recv: %s", strerror(errno));
		goto out;
	}
	pi = raw_wq_put(&vq(&p.a)->sq, &w, sizeof(w), 0xbad1);
	sq_ring(&p.a, pi);
	/* A good WRITE (UD: SEND) behind it must be flushed, not run. */
	if (s->qpt == IBV_QPT_UD) {
		struct ibv_sge sge = { (uintptr_t)p.a.buf, 8, p.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 0x600d, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = p.a.ah, .remote_qpn = p.b.qp->qp_num,
				   .remote_qkey = QKEY },
		}, *bad;

		n = ibv_post_send(p.a.qp, &wr, &bad);
	} else {
		n = post_write(&p.a, &p.b, 64, 0x600d, 0x600d);
	}
	if (n) {
		fail(v, "ibv_post_send of the good WR: %s", strerror(n));
		goto out;
	}
	n = wait_wc(p.a.cq, wc, 2, WAIT_MS);
	if (n < 1) {
		fail(v, "no completion for the bad WQE within %d ms", WAIT_MS);
	} else if (wc[0].status != s->want || wc[0].wr_id != 0xbad1) {
		fail(v, "bad WQE: status %s wr_id %#" PRIx64 ", want %s",
		     ibv_wc_status_str(wc[0].status), (uint64_t)wc[0].wr_id,
		     ibv_wc_status_str(s->want));
	} else if (n < 2) {
		fail(v, "no completion for the WR behind it");
	} else if (wc[1].status != IBV_WC_WR_FLUSH_ERR || wc[1].wr_id != 0x600d) {
		fail(v, "the WR behind it: status %s wr_id %#" PRIx64
		     ", want WR_FLUSH_ERR", ibv_wc_status_str(wc[1].status),
		     (uint64_t)wc[1].wr_id);
	}
	expect_state(v, "requester", p.a.qp, IBV_QPS_ERR);
	expect_state(v, "responder", p.b.qp, s->b_state);
	if (s->b_want)
		expect_wc(v, "responder's receive", p.b.cq, s->b_want, 0xbeef,
			  WAIT_MS);
	expect_quiet(v, "responder CQ", p.b.cq, 200);
	off = not_zero(p.b.buf, p.b.size);
	if (off >= 0)
		fail(v, "the responder's buffer changed at %zd", off);
	/* A READ or FETCH_ADD refused must bring nothing back. */
	off = not_zero(p.a.buf + 4 * KiB, 4 * KiB);
	if (off >= 0)
		fail(v, "the requester's landing area changed at %zd", off);
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * A receive WQE the provider would refuse, on b; a SEND from a. Receiver
 * and sender complete with the statuses of wire.rst's NAK table, both QPs
 * in ERR, and nothing lands outside what b registered.
 */
enum rq_bad { RQ_NSGE_255, RQ_SGE_PAST_MR, RQ_VIC_LKEY, RQ_SRQ_NSGE_255 };

static void run_rq_bad(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC,
			      .srq = tc->arg == RQ_SRQ_NSGE_255 };
	struct {
		struct vrnic_recv_wqe h;
		struct vrnic_sge sge[1];
	} r = {};
	enum ibv_wc_status want_recv = IBV_WC_LOC_PROT_ERR;
	struct ibv_mr *small = NULL;
	uint32_t len = 64, pi;
	struct pair p;
	ssize_t off;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		goto out;
	switch (tc->arg) {
	case RQ_NSGE_255:
	case RQ_SRQ_NSGE_255:
		r.h.num_sge = 255;
		sge_set(&r.sge[0], (uintptr_t)p.b.buf, 64, p.b.mr->lkey);
		want_recv = IBV_WC_LOC_QP_OP_ERR;
		break;
	case RQ_SGE_PAST_MR:
		/*
		 * A 4 KiB MR and an SGE of 4 GiB from its start: the SEND's
		 * fifth packet runs off the MR. Bytes 4 KiB .. 8 KiB of the
		 * buffer are not registered and must stay as they are.
		 */
		small = ibv_reg_mr(c->d.pd, p.b.buf, 4 * KiB,
				   IBV_ACCESS_LOCAL_WRITE);
		if (!small) {
			fail(v, "ibv_reg_mr 4 KiB: %s", strerror(errno));
			goto out;
		}
		r.h.num_sge = 1;
		sge_set(&r.sge[0], (uintptr_t)p.b.buf, 0xffffffff, small->lkey);
		fill(p.b.buf + 4 * KiB, 4 * KiB, 0x9a4d);
		len = 8 * KiB;
		break;
	case RQ_VIC_LKEY:
		r.h.num_sge = 1;
		sge_set(&r.sge[0], vic->hp_addr, 64, vic->hp_lkey);
		break;
	}
	if (p.b.srq) {
		struct vrnic_srq *srq = to_vrnic_srq(p.b.srq);

		pi = srq_put(srq, &r, sizeof(r), 0xbad2);
		db(&c->d, VRNIC_DB_SRQ, srq->srqn, pi);
	} else {
		pi = raw_wq_put(&vq(&p.b)->rq, &r, sizeof(r), 0xbad2);
		rq_ring(&p.b, pi);
	}
	fill(p.a.buf, len, 0x5e4d);
	if (post(&p.a, IBV_WR_SEND, 0, len, 0, 0, 0x5e4d)) {
		fail(v, "ibv_post_send: %s", strerror(errno));
		goto out;
	}
	expect_wc(v, "sender", p.a.cq, IBV_WC_REM_OP_ERR, 0x5e4d, WAIT_MS);
	expect_wc(v, "receiver", p.b.cq, want_recv, 0xbad2, WAIT_MS);
	expect_state(v, "sender", p.a.qp, IBV_QPS_ERR);
	expect_state(v, "receiver", p.b.qp, IBV_QPS_ERR);
	if (p.b.srq) {
		/* Every SRQ-attached QP entering ERR reports its last WQE. */
		expect_event(v, &c->d, IBV_EVENT_QP_LAST_WQE_REACHED, p.b.qp,
			     WAIT_MS);
		expect_event(v, &c->d, IBV_EVENT_QP_LAST_WQE_REACHED, p.a.qp,
			     WAIT_MS);
	}
	if (tc->arg == RQ_SGE_PAST_MR) {
		off = differs(p.b.buf + 4 * KiB, 4 * KiB, 0x9a4d);
		if (off >= 0)
			fail(v, "byte %zd past the 4 KiB MR was written", off + 4096);
	} else {
		off = not_zero(p.b.buf, p.b.size);
		if (off >= 0)
			fail(v, "the receiver's buffer changed at %zd", off);
	}
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
	if (small)
		ibv_dereg_mr(small);
}

/*
 * A good WRITE in the ring, then SQ doorbells the device must refuse:
 * nothing runs, the QP stays in RTS; the correct doorbell then runs it.
 */
enum db_bad { DB_AHEAD, DB_HALF, DB_BACK };

static void run_sq_db(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	struct pair p;
	struct swqe w;
	uint32_t pi, depth, bad[2];
	int nbad = 1;
	ssize_t off;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		goto out;
	depth = 1u << vq(&p.a)->sq.log_depth;
	/* One WRITE that the device runs for real first: ci moves off 0. */
	if (post_write(&p.a, &p.b, 64, 1, 1) ||
	    !expect_wc(v, "first WRITE", p.a.cq, IBV_WC_SUCCESS, 1, WAIT_MS))
		goto out;
	swqe_init(&w, VRNIC_WQE_OP_RDMA_WRITE, 1);
	fill(p.a.buf + 4 * KiB, 256, 0xd00b);
	sge_set(&w.sge[0], (uintptr_t)p.a.buf + 4 * KiB, 256, p.a.mr->lkey);
	swqe_remote(&w, (uintptr_t)p.b.buf + 4 * KiB, p.b.mr->rkey);
	pi = raw_wq_put(&vq(&p.a)->sq, &w, sizeof(w), 2);
	switch (tc->arg) {
	case DB_AHEAD:
		bad[0] = pi + depth;	/* ci (= pi - 1) + depth + 1 */
		break;
	case DB_HALF:
		bad[0] = pi + 0x8000;
		bad[1] = pi + 0x7fff;
		nbad = 2;
		break;
	case DB_BACK:
		bad[0] = pi - 2;	/* behind what the device has */
		bad[1] = 0xffff & (pi - 2 - depth);
		nbad = 2;
		break;
	}
	for (int i = 0; i < nbad; i++)
		sq_ring(&p.a, bad[i]);
	expect_quiet(v, "after the refused doorbells", p.a.cq, QUIET_MS);
	expect_state(v, "requester", p.a.qp, IBV_QPS_RTS);
	off = not_zero(p.b.buf + 4 * KiB, 256);
	if (off >= 0)
		fail(v, "data landed before the correct doorbell (byte %zd)", off);
	sq_ring(&p.a, pi);
	expect_wc(v, "after the correct doorbell", p.a.cq, IBV_WC_SUCCESS, 2,
		  WAIT_MS);
	off = differs(p.b.buf + 4 * KiB, 256, 0xd00b);
	if (off >= 0)
		fail(v, "WRITE data wrong at %zd", off);
	expect_quiet(v, "after the WRITE", p.a.cq, 300);
	expect_state(v, "requester", p.a.qp, IBV_QPS_RTS);
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * A receive WQE in b's ring behind an RQ doorbell more than a ring ahead:
 * refused, so a's SEND waits in RNR (no completion anywhere) until the
 * correct doorbell, then lands in that WQE.
 */
static void run_rq_db(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .srq = tc->arg };
	/* RNR NAKs carry timer 20 (10.24 ms); the sender retries forever. */
	struct rc_knobs cc = conn_default;
	struct {
		struct vrnic_recv_wqe h;
		struct vrnic_sge sge[1];
	} r = {};
	struct vrnic_srq *srq = NULL;
	struct ibv_wc wc;
	struct pair p;
	uint32_t pi, depth;
	ssize_t off;

	cc.min_rnr_timer = 20;
	if (!pair_open(&c->d, &p, &cfg, &cc, v))
		goto out;
	r.h.num_sge = 1;
	sge_set(&r.sge[0], (uintptr_t)p.b.buf, 256, p.b.mr->lkey);
	if (p.b.srq) {
		srq = to_vrnic_srq(p.b.srq);
		depth = 1u << srq->log_depth;
		pi = srq_put(srq, &r, sizeof(r), 0x4ec);
		db(&c->d, VRNIC_DB_SRQ, srq->srqn, pi + depth);
		db(&c->d, VRNIC_DB_SRQ, srq->srqn, pi + 0x8000);
		db(&c->d, VRNIC_DB_SRQ, srq->srqn, pi - 2);
	} else {
		depth = 1u << vq(&p.b)->rq.log_depth;
		pi = raw_wq_put(&vq(&p.b)->rq, &r, sizeof(r), 0x4ec);
		rq_ring(&p.b, pi + depth);
		rq_ring(&p.b, pi + 0x8000);
	}
	fill(p.a.buf, 256, 0x4ec);
	if (post(&p.a, IBV_WR_SEND, 0, 256, 0, 0, 0x5e)) {
		fail(v, "ibv_post_send: %s", strerror(errno));
		goto out;
	}
	expect_quiet(v, "sender, RQ not rung", p.a.cq, QUIET_MS);
	expect_quiet(v, "receiver, RQ not rung", p.b.cq, 100);
	expect_state(v, "sender", p.a.qp, IBV_QPS_RTS);
	expect_state(v, "receiver", p.b.qp, IBV_QPS_RTS);
	if (srq)
		db(&c->d, VRNIC_DB_SRQ, srq->srqn, pi);
	else
		rq_ring(&p.b, pi);
	expect_wc(v, "sender", p.a.cq, IBV_WC_SUCCESS, 0x5e, WAIT_MS);
	if (wait_wc(p.b.cq, &wc, 1, WAIT_MS) != 1) {
		fail(v, "no receive completion");
	} else if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x4ec ||
		   wc.byte_len != 256) {
		fail(v, "receive: status %s wr_id %#" PRIx64 " byte_len %u",
		     ibv_wc_status_str(wc.status), (uint64_t)wc.wr_id,
		     wc.byte_len);
	} else {
		off = differs(p.b.buf, 256, 0x4ec);
		if (off >= 0)
			fail(v, "received data wrong at %zd", off);
	}
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * Doorbells on a QP in RESET are refused: a WQE rung then must not run
 * when the QP later reaches RTS; posting it again runs it once.
 */
static void run_reset_db(struct ctx *c, const struct tcase *tc,
			 struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct pair p = {};
	struct swqe w;
	ssize_t off;

	if (!ep_open(&c->d, &p.a, &cfg, v) || !ep_open(&c->d, &p.b, &cfg, v) ||
	    !qp_modify(p.a.qp, &a, IBV_QP_STATE, "RESET", v))
		goto out;
	/* Slot 0 by hand, without telling the provider: it stays at 0. */
	swqe_init(&w, VRNIC_WQE_OP_RDMA_WRITE, 1);
	fill(p.a.buf, 128, 0x4e5e7);
	sge_set(&w.sge[0], (uintptr_t)p.a.buf, 128, p.a.mr->lkey);
	swqe_remote(&w, (uintptr_t)p.b.buf, p.b.mr->rkey);
	memcpy(raw_wq_slot(&vq(&p.a)->sq, 0), &w, sizeof(w.h) + sizeof(w.sge[0]));
	sq_ring(&p.a, 1);
	if (!qp_to_init(p.a.qp, v) || !ep_connect(&p.a, &p.b, &conn_default, v) ||
	    !ep_connect(&p.b, &p.a, &conn_default, v))
		goto out;
	expect_quiet(v, "in RTS after the doorbell in RESET", p.a.cq, QUIET_MS);
	off = not_zero(p.b.buf, 128);
	if (off >= 0)
		fail(v, "the WQE rung in RESET ran (byte %zd landed)", off);
	if (post(&p.a, IBV_WR_RDMA_WRITE, 0, 128, (uintptr_t)p.b.buf,
		 p.b.mr->rkey, 7)) {
		fail(v, "ibv_post_send: %s", strerror(errno));
		goto out;
	}
	expect_wc(v, "the WRITE posted in RTS", p.a.cq, IBV_WC_SUCCESS, 7,
		  WAIT_MS);
	expect_quiet(v, "after it", p.a.cq, 300);
	off = differs(p.b.buf, 128, 0x4e5e7);
	if (off >= 0)
		fail(v, "WRITE data wrong at %zd", off);
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * Doorbells for what is not ours: every index on the child's two QPs (SQ
 * and RQ) and CQs (both arms), then three indices on every QPN (the GSI
 * QP 1 of the kernel included). All refused by the page check: the child
 * must not notice.
 */
static void run_foreign_db(struct ctx *c, const struct tcase *tc,
			   struct verdict *v)
{
	uint64_t r0 = vic_rounds();
	double t0 = now();
	unsigned long n = 0;

	for (int q = 0; q < 2; q++)
		for (uint32_t i = 0; i <= 0xffff; i++) {
			db(&c->d, VRNIC_DB_SQ, vic->qpn[q], i);
			db(&c->d, VRNIC_DB_RQ, vic->qpn[q], i);
			db(&c->d, VRNIC_DB_CQ_ARM_NEXT, vic->cqn[q], i);
			db(&c->d, VRNIC_DB_CQ_ARM_SOLICITED, vic->cqn[q], i);
			db(&c->d, VRNIC_DB_SRQ, i, i);
			n += 5;
		}
	for (uint32_t qn = 0; qn <= 0xffff; qn++) {
		db(&c->d, VRNIC_DB_SQ, qn, 1);
		db(&c->d, VRNIC_DB_SQ, qn, 0x4000);
		db(&c->d, VRNIC_DB_RQ, qn, 1);
		n += 3;
	}
	info(v, "%lu doorbell writes in %.1f s; the child did %" PRIu64
	     " rounds meanwhile", n, now() - t0, vic_rounds() - r0);
}

/* The 1019 words of the page that are no doorbell, written with garbage. */
static void run_offsets_db(struct ctx *c, const struct tcase *tc,
			   struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC };
	struct pair p;
	ssize_t off;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		goto out;
	for (uint32_t o = VRNIC_DB_CQ_ARM_SOLICITED + 4; o < VRNIC_DB_PAGE_SIZE;
	     o += 4) {
		db_write(&c->d, o, 0xffffffff);
		db_write(&c->d, o, (uint32_t)mix(o));
		/* The same qpn and the next index a real SQ doorbell carries. */
		db(&c->d, o, p.a.qp->qp_num, 1);
	}
	expect_quiet(v, "after the writes", p.a.cq, 500);
	if (post_write(&p.a, &p.b, 4 * KiB, 0x0ff5, 1) ||
	    !expect_wc(v, "a WRITE afterwards", p.a.cq, IBV_WC_SUCCESS, 1,
		       WAIT_MS))
		goto out;
	off = differs(p.b.buf, 4 * KiB, 0x0ff5);
	if (off >= 0)
		fail(v, "WRITE data wrong at %zd", off);
	expect_state(v, "requester", p.a.qp, IBV_QPS_RTS);
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * A CQ arm carrying a consumer index past the producer is refused: a
 * completion after it raises no event. A correct arm afterwards does.
 */
static void run_arm_db(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .chan = true };
	struct pollfd pf;
	struct ibv_cq *ecq;
	void *ectx;
	struct pair p;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		goto out;
	db(&c->d, VRNIC_DB_CQ_ARM_NEXT, vc(&p.a)->cqn, vc(&p.a)->ci + 5);
	db(&c->d, VRNIC_DB_CQ_ARM_SOLICITED, vc(&p.a)->cqn, vc(&p.a)->ci + 0x8000);
	if (post_write(&p.a, &p.b, 64, 1, 1) ||
	    !expect_wc(v, "WRITE", p.a.cq, IBV_WC_SUCCESS, 1, WAIT_MS))
		goto out;
	pf = (struct pollfd){ .fd = p.a.ch->fd, .events = POLLIN };
	if (poll(&pf, 1, QUIET_MS) != 0)
		fail(v, "a completion event after refused arms");
	if (ibv_req_notify_cq(p.a.cq, 0) || post_write(&p.a, &p.b, 64, 2, 2)) {
		fail(v, "arm or post failed");
		goto out;
	}
	if (poll(&pf, 1, WAIT_MS) != 1) {
		fail(v, "no completion event after a correct arm");
		goto out;
	}
	if (ibv_get_cq_event(p.a.ch, &ecq, &ectx) || ecq != p.a.cq)
		fail(v, "ibv_get_cq_event: not our CQ");
	else
		ibv_ack_cq_events(ecq, 1);
	expect_wc(v, "second WRITE", p.a.cq, IBV_WC_SUCCESS, 2, WAIT_MS);
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * The CQ's doorbell record rewritten by the consumer: ahead of the
 * producer (DBREC_AHEAD), or left at 0 while more CQEs than the ring
 * holds arrive (DBREC_OVERRUN). The CQ stops with IBV_EVENT_CQ_ERR and
 * writes no CQE past what the consumer allowed.
 */
enum dbrec_bad { DBREC_AHEAD, DBREC_OVERRUN };

static void run_dbrec(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC,
			      .cqe = tc->arg == DBREC_OVERRUN ? 2 : 16 };
	struct ibv_wc wc[4];
	struct pair p;
	uint32_t depth;
	int n, want;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		goto out;
	depth = 1u << vc(&p.a)->log_depth;
	if (tc->arg == DBREC_AHEAD) {
		dbrec_set(&p.a, vc(&p.a)->ci + 100);
		want = 0;
		if (post_write(&p.a, &p.b, 64, 1, 1)) {
			fail(v, "ibv_post_send: %s", strerror(errno));
			goto out;
		}
	} else {
		if (depth != 2) {
			fail(v, "a CQ of 2 entries has %u", depth);
			goto out;
		}
		want = 2;
		for (int i = 1; i <= 3; i++)
			if (post_write(&p.a, &p.b, 64, i, i)) {
				fail(v, "ibv_post_send: %s", strerror(errno));
				goto out;
			}
	}
	expect_event(v, &c->d, IBV_EVENT_CQ_ERR, p.a.cq, WAIT_MS);
	/*
	 * The consumer catches up (its real ci back in the record): the
	 * stopped CQ must stay stopped all the same.
	 */
	if (tc->arg == DBREC_AHEAD)
		dbrec_set(&p.a, vc(&p.a)->ci);
	n = wait_wc(p.a.cq, wc, 4, 500);
	if (n != want)
		fail(v, "%d CQEs in the stopped CQ, want %d", n, want);
	for (int i = 0; i < n && i < want; i++)
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i + 1)
			fail(v, "CQE %d: status %s wr_id %#" PRIx64, i,
			     ibv_wc_status_str(wc[i].status), (uint64_t)wc[i].wr_id);
	/* A stopped CQ never writes again, even once the consumer caught up. */
	if (post_write(&p.a, &p.b, 64, 9, 9) == 0)
		expect_quiet(v, "the stopped CQ after one more WRITE", p.a.cq,
			     QUIET_MS);
	else
		info(v, "WRITE after the stop not posted: %s", strerror(errno));
out:
	pair_close(&p);
}

/*
 * Seeded random send WQEs, each signaled, in four kinds so that every
 * check sees garbage: all random; a valid opcode and few SGEs; also SGEs
 * inside our MR with random offsets and lengths (some run off its end) and
 * no inline; also a remote address inside b's MR with its rkey (random
 * offsets: unaligned atomics, ranges running off the end). Every WQE ends
 * in a CQE, the QP is in ERR exactly when that CQE is an error, and the
 * pair is reset for the next. The responder has no receive WQE and the
 * sender rnr_retry 0, so a random SEND ends in RNR_RETRY_EXC_ERR instead
 * of waiting forever.
 */
static void run_sweep(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .sge = 16 };
	struct rc_knobs cc = conn_default;
	unsigned int count[32] = {};
	char hist[256] = "";
	struct pair p;
	struct swqe w;
	struct ibv_wc wc;

	cc.rnr_retry = 0;
	cc.retry_cnt = 1;
	if (!pair_open(&c->d, &p, &cfg, &cc, v))
		goto out;
	for (int s = 0; s < SWEEP_SEEDS && v->ok; s++) {
		uint8_t *raw = (uint8_t *)&w;
		uint32_t pi;
		int st;

		for (size_t k = 0; k < sizeof(w); k++)
			raw[k] = pat(0x5eed0000 + s, k);
		if (s % 4) {
			w.h.opcode %= VRNIC_WQE_OP_LOCAL_INV + 1;
			w.h.num_sge %= 4;
		}
		if (s % 4 >= 2) {
			w.h.flags &= VRNIC_WQE_FLAG_SOLICITED | VRNIC_WQE_FLAG_FENCE;
			for (int i = 0; i < w.h.num_sge; i++) {
				uint64_t r = mix(s * 8 + i);

				sge_set(&w.sge[i], (uintptr_t)p.a.buf +
					(r % (60 * KiB)), (r >> 20) % (8 * KiB),
					p.a.mr->lkey);
			}
		}
		if (s % 4 == 3)
			swqe_remote(&w, (uintptr_t)p.b.buf +
				    (mix(s) >> 7) % (64 * KiB), p.b.mr->rkey);
		w.h.flags |= VRNIC_WQE_FLAG_SIGNALED;
		pi = raw_wq_put(&vq(&p.a)->sq, &w, sizeof(w), 0x5eed0000 + s);
		sq_ring(&p.a, pi);
		if (wait_wc(p.a.cq, &wc, 1, WAIT_MS) != 1) {
			fail(v, "seed %d (opcode %#x flags %#x num_sge %u): no CQE",
			     s, w.h.opcode, w.h.flags, w.h.num_sge);
			break;
		}
		if (wc.wr_id != 0x5eed0000u + s)
			fail(v, "seed %d: wr_id %#" PRIx64, s, (uint64_t)wc.wr_id);
		st = qp_state(p.a.qp);
		if ((wc.status == IBV_WC_SUCCESS) != (st == IBV_QPS_RTS))
			fail(v, "seed %d (opcode %#x): CQE %s but QP in %s", s,
			     w.h.opcode, ibv_wc_status_str(wc.status),
			     qp_state_str(st));
		count[wc.status < 32 ? wc.status : 31]++;
		/* Anything still in the CQs belongs to this seed: drop it. */
		while (wait_wc(p.a.cq, &wc, 1, 0) || wait_wc(p.b.cq, &wc, 1, 0))
			;
		if (!pair_reset(&p, &cc, v))
			break;
	}
	for (int i = 0; i < 32; i++)
		if (count[i])
			snprintf(hist + strlen(hist), sizeof(hist) - strlen(hist),
				 "%s%s x%u", hist[0] ? ", " : "",
				 ibv_wc_status_str(i), count[i]);
	info(v, "CQEs: %s", hist);
	expect_no_event(v, &c->d, &p);
out:
	pair_close(&p);
}

/*
 * Rings and doorbell records rewritten while the device works: a thread
 * scribbles random bytes over a's whole queue buffer (SQ and RQ rings),
 * its CQ ring and doorbell record and b's rings, while this one keeps
 * putting WRITEs in the ring and ringing correct and random doorbells
 * (random offsets, QPNs and indices). Nothing is polled. Afterwards
 * every object is destroyed with a good status and the only async
 * events name this pair's objects.
 */
struct storm {
	struct pair *p;
	int stop;		/* __atomic */
	unsigned long writes;
};

static void *storm_thread(void *arg)
{
	struct storm *s = arg;
	struct vrnic_qp *qa = vq(&s->p->a), *qb = vq(&s->p->b);
	struct vrnic_cq *ca = vc(&s->p->a);
	uint64_t x = 0x570e;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		x = mix(x);
		switch (x % 4) {
		case 0:
			((uint8_t *)qa->buf.addr)[(x >> 8) % qa->buf.len] = x >> 40;
			break;
		case 1:
			((uint8_t *)ca->buf.addr)[(x >> 8) % ca->buf.len] = x >> 40;
			break;
		case 2:
			dbrec_set(&s->p->a, x >> 32);
			break;
		case 3:
			((uint8_t *)qb->buf.addr)[(x >> 8) % qb->buf.len] = x >> 40;
			break;
		}
		s->writes++;
		if (!(s->writes % 64))
			sched_yield();
	}
	return NULL;
}

static void run_storm(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .sq = 64, .cqe = 64 };
	struct storm s = {};
	struct ibv_async_event ev;
	unsigned long dbs = 0, evs = 0;
	struct pair p;
	pthread_t th;
	struct swqe w;
	uint64_t x = 0xd0;
	double end;
	int rc;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		return;
	s.p = &p;
	if (pthread_create(&th, NULL, storm_thread, &s)) {
		fail(v, "pthread_create failed");
		pair_close(&p);
		return;
	}
	end = now() + STORM_MS / 1000.0;
	while (now() < end) {
		x = mix(x);
		swqe_init(&w, VRNIC_WQE_OP_RDMA_WRITE, 1);
		sge_set(&w.sge[0], (uintptr_t)p.a.buf, 64, p.a.mr->lkey);
		swqe_remote(&w, (uintptr_t)p.b.buf, p.b.mr->rkey);
		sq_ring(&p.a, raw_wq_put(&vq(&p.a)->sq, &w, sizeof(w), x));
		db(&c->d, VRNIC_DB_SQ, p.a.qp->qp_num, x >> 16);
		db(&c->d, VRNIC_DB_RQ, p.b.qp->qp_num, x >> 32);
		db(&c->d, (x >> 48) & 0xffc, x >> 8, x >> 24);
		db(&c->d, VRNIC_DB_CQ_ARM_NEXT, vc(&p.a)->cqn, x >> 40);
		dbs += 5;
		usleep(1000);
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	info(v, "%lu scribbles, %lu doorbells", s.writes, dbs);
	while (async_next(&c->d, &ev, 1000)) {
		void *o = event_obj(&ev);
		bool mine = o == p.a.cq || o == p.b.cq || o == p.a.qp ||
			    o == p.b.qp;

		evs++;
		if (!mine)
			fail(v, "async event %s for an object not of this pair",
			     event_str(ev.event_type));
		else
			info(v, "async event %s", event_str(ev.event_type));
	}
	info(v, "a's QP in %s", qp_state_str(qp_state(p.a.qp)));
	/* Every destroy must still succeed (the command status). */
	rc = ibv_destroy_qp(p.a.qp);
	if (rc)
		fail(v, "ibv_destroy_qp: %s", strerror(rc));
	else
		p.a.qp = NULL;
	rc = ibv_destroy_qp(p.b.qp);
	if (rc)
		fail(v, "ibv_destroy_qp: %s", strerror(rc));
	else
		p.b.qp = NULL;
	rc = ibv_destroy_cq(p.a.cq);
	if (rc)
		fail(v, "ibv_destroy_cq: %s", strerror(rc));
	else
		p.a.cq = NULL;
	pair_close(&p);
}

/*
 * Another process's UC QP as the responder of ours, through the loopback:
 * a WRITE with that process's rkey into its own MR. Its R_Key and PD match
 * the QP it arrives on, and its source address is this host's, as its real
 * peer's is: only the device, which knows which QP each loopback frame
 * comes from, can tell that it is not from the QP's peer. The data must
 * not land (the child checks its honeypot every round).
 */
static void run_uc_inject(struct ctx *c, const struct tcase *tc,
			  struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_UC };
	uint64_t r0;
	struct ibv_wc wc;
	struct ep a;
	double end;

	if (!ep_open(&c->d, &a, &cfg, v) ||
	    !ep_connect_to(&a, vic->uc_qpn, 0, &conn_default, v))
		goto out;
	fill(a.buf, 256, 0xbad0);
	r0 = vic_rounds();
	if (post(&a, IBV_WR_RDMA_WRITE, 0, 256, vic->uc_hp_addr, vic->uc_rkey,
		 1)) {
		fail(v, "ibv_post_send: %s", strerror(errno));
		goto out;
	}
	if (wait_wc(a.cq, &wc, 1, WAIT_MS) != 1)
		fail(v, "no completion for our WRITE");
	else
		info(v, "our WRITE completed %s", ibv_wc_status_str(wc.status));
	/* Two rounds of the child: it has looked at its honeypot since. */
	end = now() + PROGRESS_MS / 1000.0;
	while (vic_rounds() < r0 + 2 && !vic->failed && now() < end)
		usleep(10000);
	if (vic_rounds() < r0 + 2)
		fail(v, "the child did not complete two rounds");
	if (vic->uc_hp_bad)
		fail(v, "our bytes landed in the other process's MR (its byte %" PRIu64
		     " changed)", vic->uc_hp_bad - 1);
out:
	ep_close(&a);
}

/* ---- hostile commands: udata the provider would never send -------------- */

enum cmd_bad {
	CMD_QP_UNMAPPED, CMD_QP_SHORT, CMD_QP_RQ_OVERLAP, CMD_QP_GEOMETRY,
	CMD_QP_UNALIGNED, CMD_QP_RESERVED, CMD_CQ_READONLY, CMD_CQ_SHORT,
	CMD_MR_DOORBELL,
};

static int res_counts(int *qp, int *cq, int *mr)
{
	*qp = vrnic_res_count("qp");
	*cq = vrnic_res_count("cq");
	*mr = vrnic_res_count("mr");
	return *qp < 0 || *cq < 0 || *mr < 0 ? -1 : 0;
}

/* CREATE_QP with cmd (the rest of it is a valid RC QP of 8/8 WRs). */
static int create_qp_raw(struct ctx *c, struct ibv_cq *cq,
			 struct vrnic_ibv_create_qp *cmd, int *err_out)
{
	struct vrnic_ibv_create_qp_resp resp = {};
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = c->d.pd,
	};
	struct verbs_qp vqp = {};
	int err;

	err = ibv_cmd_create_qp_ex(c->d.ctx, &vqp, &ia, &cmd->ibv_cmd,
				   sizeof(*cmd), &resp.ibv_resp, sizeof(resp));
	if (!err)
		ibv_cmd_destroy_qp(&vqp.qp);
	*err_out = err;
	return err;
}

static void run_cmd(struct ctx *c, const struct tcase *tc, struct verdict *v)
{
	struct vrnic_ibv_create_qp qc = {
		.sq_log_depth = 3, .rq_log_depth = 3, .sq_wqe_shift = 7,
		.rq_wqe_shift = 5, .rq_offset = 1024, .buf_len = 4096,
	};
	int want = EINVAL, err = 0, q0, c0, m0, q1, c1, m1;
	long pg = sysconf(_SC_PAGESIZE);
	struct ibv_cq *cq = NULL;
	uint8_t *mem;

	mem = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED) {
		fail(v, "mmap: %s", strerror(errno));
		return;
	}
	cq = ibv_create_cq(c->d.ctx, 16, NULL, NULL, 0);
	if (!cq || res_counts(&q0, &c0, &m0)) {
		fail(v, "setup: CQ or rdma res failed");
		goto out;
	}
	qc.buf_addr = (uintptr_t)mem;
	switch (tc->arg) {
	case CMD_QP_UNMAPPED:
		/* Page 3 unmapped: the rings cross into it. */
		munmap(mem + 3 * pg, pg);
		qc.buf_addr = (uintptr_t)mem + 2 * pg;
		qc.buf_len = 2 * pg;
		want = EFAULT;
		create_qp_raw(c, cq, &qc, &err);
		break;
	case CMD_QP_SHORT:
		qc.buf_len = 1024 + 128;	/* the RQ ring needs 256 */
		create_qp_raw(c, cq, &qc, &err);
		break;
	case CMD_QP_RQ_OVERLAP:
		qc.rq_offset = 512;		/* inside the SQ ring */
		create_qp_raw(c, cq, &qc, &err);
		if (err == want) {
			qc.rq_offset = 1024 + 32;	/* not 64-byte aligned */
			create_qp_raw(c, cq, &qc, &err);
		}
		break;
	case CMD_QP_GEOMETRY:
		qc.sq_log_depth = 16;
		create_qp_raw(c, cq, &qc, &err);
		if (err == want) {
			qc.sq_log_depth = 3;
			qc.sq_wqe_shift = 10;
			create_qp_raw(c, cq, &qc, &err);
		}
		if (err == want) {
			qc.sq_wqe_shift = 6;	/* 64 bytes: no room for the SGE */
			create_qp_raw(c, cq, &qc, &err);
		}
		break;
	case CMD_QP_UNALIGNED:
		qc.buf_addr = (uintptr_t)mem + 64;
		create_qp_raw(c, cq, &qc, &err);
		break;
	case CMD_QP_RESERVED:
		qc.reserved_e0 = 1;
		create_qp_raw(c, cq, &qc, &err);
		if (err == want) {
			qc.reserved_e0 = 0;
			qc.comp_mask = 1;
			want = EOPNOTSUPP;
			create_qp_raw(c, cq, &qc, &err);
		}
		break;
	case CMD_CQ_READONLY:
	case CMD_CQ_SHORT: {
		struct vrnic_ibv_create_cq cc = {
			.buf_addr = (uintptr_t)mem, .buf_len = 4096,
			.log_depth = 4,
		};
		struct vrnic_ibv_create_cq_resp resp = {};
		struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
		struct verbs_cq vcq = {};

		if (tc->arg == CMD_CQ_READONLY) {
			mprotect(mem, pg, PROT_READ);
			want = EFAULT;
		} else {
			cc.buf_len = 16 * 32;	/* no room for the doorbell record */
		}
		err = ibv_cmd_create_cq_ex(c->d.ctx, &ca, &vcq, &cc.ibv_cmd,
					   sizeof(cc), &resp.ibv_resp,
					   sizeof(resp), 0);
		if (!err)
			ibv_cmd_destroy_cq(&vcq.cq);
		break;
	}
	case CMD_MR_DOORBELL: {
		struct vrnic_context *vctx = to_vrnic_context(c->d.ctx);
		struct ibv_mr *mr = ibv_reg_mr(c->d.pd, vctx->db, vctx->db_size,
					       IBV_ACCESS_LOCAL_WRITE);

		want = EFAULT;
		err = mr ? 0 : errno;
		if (mr)
			ibv_dereg_mr(mr);
		break;
	}
	}
	if (err != want)
		fail(v, "errno %d (%s), want %d (%s)", err, strerror(err), want,
		     strerror(want));
	if (res_counts(&q1, &c1, &m1))
		fail(v, "rdma res failed");
	else if (q1 != q0 || c1 != c0 || m1 != m0)
		fail(v, "rdma res: QPs %d -> %d, CQs %d -> %d, MRs %d -> %d",
		     q0, q1, c0, c1, m0, m1);
out:
	if (cq)
		ibv_destroy_cq(cq);
	munmap(mem, 4 * pg);
}

/* ---- the table ------------------------------------------------------------ */

/*
 * Keys another process could guess: the consumer key byte (bits 7:0) of
 * consecutive registrations must not follow a pattern, and a
 * re-registration with a new translation must change it. With a counter
 * shared by every MR, 32 MRs' bytes differ by the same step each time (a
 * random byte does that with a chance of 256^-30).
 */
static void run_key_guess(struct ctx *c, const struct tcase *tc,
			  struct verdict *v)
{
	struct ibv_mr *mr[32] = {};
	uint8_t *buf = malloc(4096);
	bool same_step = true;
	uint32_t old;
	int i;

	if (!buf) {
		fail(v, "malloc");
		return;
	}
	for (i = 0; i < 32; i++) {
		mr[i] = ibv_reg_mr(c->d.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
		if (!mr[i]) {
			fail(v, "ibv_reg_mr %d: %s", i, strerror(errno));
			goto out;
		}
		if (i >= 2 && (uint8_t)(mr[i]->lkey - mr[i - 1]->lkey) !=
		    (uint8_t)(mr[i - 1]->lkey - mr[i - 2]->lkey))
			same_step = false;
	}
	if (same_step)
		fail(v, "32 key bytes in a row step by 0x%02x: predictable",
		     (uint8_t)(mr[1]->lkey - mr[0]->lkey));
	for (i = 0; i < 8; i++) {
		old = mr[0]->lkey;
		if (ibv_rereg_mr(mr[0], IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				 buf, 4096, 0)) {
			fail(v, "ibv_rereg_mr: %s", strerror(errno));
			break;
		}
		if ((mr[0]->lkey & 0xff) == (old & 0xff))
			fail(v, "re-registration kept key byte 0x%02x", old & 0xff);
	}
out:
	for (i = 0; i < 32; i++)
		if (mr[i])
			ibv_dereg_mr(mr[i]);
	free(buf);
}

static const struct tcase cases[] = {
	{ "SQ: opcode 0xee: LOC_QP_OP_ERR, QP in ERR, next WR flushed",
	  run_sq_bad, SQ_OPCODE },
	{ "SQ: RDMA_READ on a UC QP: LOC_QP_OP_ERR", run_sq_bad, SQ_UC_READ },
	{ "SQ: num_sge max_send_sge + 1: LOC_QP_OP_ERR", run_sq_bad, SQ_NSGE_MAX },
	{ "SQ: num_sge 255 (past the WQE): LOC_QP_OP_ERR", run_sq_bad, SQ_NSGE_255 },
	{ "SQ: SGE length 0xffffffff on a 64 KiB MR: LOC_PROT_ERR", run_sq_bad,
	  SQ_SGE_LEN },
	{ "SQ: SGE address wrapping past 2^64: LOC_PROT_ERR", run_sq_bad,
	  SQ_SGE_WRAP },
	{ "SQ: inline_len 0xffffffff: LOC_QP_OP_ERR", run_sq_bad, SQ_INLINE_LEN },
	{ "SQ: inline RDMA_READ: LOC_QP_OP_ERR", run_sq_bad, SQ_INLINE_READ },
	{ "SQ: 16 SGEs of 128 MiB + 4 KiB (over 2^31 bytes): LOC_LEN_ERR",
	  run_sq_bad, SQ_2G },
	{ "SQ: ATOMIC WRITE on a UC QP: LOC_QP_OP_ERR", run_sq_bad,
	  SQ_AWRITE_UC },
	{ "SQ: FLUSH with a reserved placement type bit: LOC_QP_OP_ERR",
	  run_sq_bad, SQ_FLUSH_RESERVED },
	{ "SQ: FETCH_ADD into a 4-byte SGE: LOC_LEN_ERR", run_sq_bad,
	  SQ_ATOMIC_SHORT },
	{ "SQ: UD SEND of 2048 bytes over a 1024-byte path MTU: LOC_LEN_ERR",
	  run_sq_bad, SQ_UD_LONG },
	{ "keys: another process's lkey in a WRITE's SGE: LOC_PROT_ERR",
	  run_sq_bad, SQ_VIC_LKEY },
	{ "keys: another process's lkey as a READ's target: LOC_PROT_ERR",
	  run_sq_bad, SQ_VIC_LKEY_READ },
	{ "keys: another process's rkey in a WRITE: REM_ACCESS_ERR",
	  run_sq_bad, SQ_VIC_RKEY_WRITE },
	{ "keys: another process's rkey in a READ: REM_ACCESS_ERR, nothing read",
	  run_sq_bad, SQ_VIC_RKEY_READ },
	{ "keys: another process's rkey in a FETCH_ADD: REM_ACCESS_ERR",
	  run_sq_bad, SQ_VIC_RKEY_FADD },
	{ "keys: another process's rkey in an ATOMIC WRITE: REM_ACCESS_ERR",
	  run_sq_bad, SQ_VIC_RKEY_AWRITE },
	{ "keys: another process's rkey in a FLUSH of its whole MR: REM_ACCESS_ERR",
	  run_sq_bad, SQ_VIC_RKEY_FLUSH },
	{ "keys: BIND_MW of our window onto another process's MR: MW_BIND_ERR",
	  run_sq_bad, SQ_MW_ON_VIC_MR },
	{ "keys: BIND_MW of another process's window onto our MR: MW_BIND_ERR",
	  run_sq_bad, SQ_MW_VIC_WINDOW },
	{ "keys: LOCAL_INV of another process's window: LOC_QP_OP_ERR",
	  run_sq_bad, SQ_LINV_VIC_WINDOW },
	{ "keys: SEND_WITH_INV of another process's window: REM_INV_REQ_ERR on both sides",
	  run_sq_bad, SQ_SENDINV_VIC_WINDOW },
	{ "keys: WRITE through another process's window: REM_ACCESS_ERR",
	  run_sq_bad, SQ_VIC_WINDOW_WRITE },
	{ "keys: a UC WRITE with another process's rkey to its own UC QP (loopback): its memory unchanged",
	  run_uc_inject, 0 },
	{ "keys: another process's lkey in a receive SGE: LOC_PROT_ERR / REM_OP_ERR",
	  run_rq_bad, RQ_VIC_LKEY },
	{ "RQ: receive num_sge 255: LOC_QP_OP_ERR / REM_OP_ERR", run_rq_bad,
	  RQ_NSGE_255 },
	{ "RQ: receive SGE of 4 GiB on a 4 KiB MR: LOC_PROT_ERR / REM_OP_ERR, nothing past the MR",
	  run_rq_bad, RQ_SGE_PAST_MR },
	{ "SRQ: receive num_sge 255: LOC_QP_OP_ERR / REM_OP_ERR, QP_LAST_WQE_REACHED",
	  run_rq_bad, RQ_SRQ_NSGE_255 },
	{ "SQ: random WQEs x64: each ends in a CQE, QP in ERR iff it is an error",
	  run_sweep, 0 },
	{ "doorbell: SQ index ci + depth + 1: ignored, the correct one runs the WQE",
	  run_sq_db, DB_AHEAD },
	{ "doorbell: SQ index + 0x8000 / + 0x7fff: ignored", run_sq_db, DB_HALF },
	{ "doorbell: SQ index backwards: ignored", run_sq_db, DB_BACK },
	{ "doorbell: RQ index a ring ahead: ignored, the SEND waits in RNR",
	  run_rq_db, 0 },
	{ "doorbell: SRQ index a ring ahead / backwards: ignored, the SEND waits in RNR",
	  run_rq_db, 1 },
	{ "doorbell: SQ of a QP in RESET: ignored, nothing runs in RTS",
	  run_reset_db, 0 },
	{ "doorbell: every index of the other process's QPs, CQs and SRQ numbers, every QPN: ignored",
	  run_foreign_db, 0 },
	{ "doorbell: the 1019 offsets without a doorbell: ignored", run_offsets_db, 0 },
	{ "doorbell: CQ arm with ci past the producer: no event; a correct arm fires",
	  run_arm_db, 0 },
	{ "CQ: doorbell record ci ahead of the producer: IBV_EVENT_CQ_ERR, no CQE",
	  run_dbrec, DBREC_AHEAD },
	{ "CQ: overrun (3 CQEs, 2 slots): IBV_EVENT_CQ_ERR, exactly 2 CQEs",
	  run_dbrec, DBREC_OVERRUN },
	{ "rings, CQ ring and doorbell record scribbled while the device works: all destroys succeed",
	  run_storm, 0 },
	{ "command: CREATE_QP rings over an unmapped page: EFAULT", run_cmd,
	  CMD_QP_UNMAPPED },
	{ "command: CREATE_QP buf_len short of the RQ ring: EINVAL", run_cmd,
	  CMD_QP_SHORT },
	{ "command: CREATE_QP rq_offset inside the SQ ring / unaligned: EINVAL",
	  run_cmd, CMD_QP_RQ_OVERLAP },
	{ "command: CREATE_QP sq_log_depth 16, sq_wqe_shift 10 and 6: EINVAL",
	  run_cmd, CMD_QP_GEOMETRY },
	{ "command: CREATE_QP ring not page-aligned: EINVAL", run_cmd,
	  CMD_QP_UNALIGNED },
	{ "command: CREATE_QP reserved bits: EINVAL, comp_mask: EOPNOTSUPP",
	  run_cmd, CMD_QP_RESERVED },
	{ "command: CREATE_CQ ring in read-only memory: EFAULT", run_cmd,
	  CMD_CQ_READONLY },
	{ "command: CREATE_CQ buf_len without the doorbell record: EINVAL",
	  run_cmd, CMD_CQ_SHORT },
	{ "command: an MR over the mmap'd doorbell page: EFAULT", run_cmd,
	  CMD_MR_DOORBELL },
	{ "keys: 32 MRs' key bytes follow no step; re-registration changes it",
	  run_key_guess, 0 },
};

#define NCASES ARRAY_SIZE(cases)

/* ---- the end: the other process, and the device -------------------------- */

static void final_victim(const char *stalled, struct verdict *v)
{
	double end;
	int status = 0;

	__atomic_store_n(&vic->stop, 1, __ATOMIC_RELEASE);
	end = now() + 60;
	while (!__atomic_load_n(&vic->done, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&vic->failed, __ATOMIC_ACQUIRE) && now() < end)
		usleep(10000);
	if (waitpid(vic_pid, &status, 0) != vic_pid)
		fail(v, "waitpid: %s", strerror(errno));
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail(v, "the child ended with status %#x", status);
	info(v, "%" PRIu64 " rounds", vic_rounds());
	if (vic->failed)
		fail(v, "the child failed: %s", vic->why);
	if (vic->hp_bad)
		fail(v, "its honeypot MR changed at byte %" PRIu64, vic->hp_bad - 1);
	/* The UC receiver's honeypot has a case of its own (UC loopback). */
	if (vic->uc_hp_bad)
		info(v, "its UC receiver's honeypot changed at byte %" PRIu64,
		     vic->uc_hp_bad - 1);
	if (!vic->done)
		fail(v, "the child did not finish");
	else
		for (int i = 0; i < 4; i++)
			if (vic->state[i] != IBV_QPS_RTS)
				fail(v, "its QP %d in %s", i,
				     qp_state_str(vic->state[i]));
	if (stalled[0])
		fail(v, "no round completed during:%s", stalled);
}

static void final_device(struct ctx *c, struct verdict *v)
{
	struct ep_cfg cfg = { .qpt = IBV_QPT_RC, .size = 2 * MiB };
	const uint32_t len = MiB;
	struct ibv_wc wc;
	struct pair p;
	ssize_t off;

	if (!pair_open(&c->d, &p, &cfg, &conn_default, v))
		goto out;
	if (post_write(&p.a, &p.b, len, 0xf1a1, 1) ||
	    !expect_wc(v, "1 MiB WRITE", p.a.cq, IBV_WC_SUCCESS, 1, WAIT_MS))
		goto out;
	off = differs(p.b.buf, len, 0xf1a1);
	if (off >= 0)
		fail(v, "WRITE data wrong at %zd", off);
	if (post_recv(&p.b, len, 4 * KiB, 2) ||
	    post(&p.a, IBV_WR_SEND, 0, 4 * KiB, 0, 0, 3) ||
	    !expect_wc(v, "SEND", p.a.cq, IBV_WC_SUCCESS, 3, WAIT_MS) ||
	    wait_wc(p.b.cq, &wc, 1, WAIT_MS) != 1 ||
	    wc.status != IBV_WC_SUCCESS || wc.byte_len != 4 * KiB) {
		fail(v, "SEND / receive failed");
		goto out;
	}
	off = differs(p.b.buf + len, 4 * KiB, 0xf1a1);
	if (off >= 0)
		fail(v, "SEND data wrong at %zd", off);
	memset(p.a.buf, 0, len);
	if (post(&p.a, IBV_WR_RDMA_READ, 0, len, (uintptr_t)p.b.buf,
		 p.b.mr->rkey, 4) ||
	    !expect_wc(v, "1 MiB READ", p.a.cq, IBV_WC_SUCCESS, 4, WAIT_MS))
		goto out;
	off = differs(p.a.buf, len, 0xf1a1);
	if (off >= 0)
		fail(v, "READ data wrong at %zd", off);
out:
	pair_close(&p);
}

/*
 * Kernel log lines that mean vrnic.ko (or the core) hit a bug: a WARN, a
 * BUG, an oops, a lockdep or KASAN report. Counted before and after.
 */
static int kernel_bugs(char *last, size_t n)
{
	static const char *const pat[] = {
		"WARNING:", "BUG:", "Oops", "general protection fault",
		"Call Trace:", "possible recursive locking", "KASAN",
	};
	char line[512];
	int count = 0;
	FILE *f = popen("dmesg 2>/dev/null", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		for (size_t i = 0; i < ARRAY_SIZE(pat); i++)
			if (strstr(line, pat[i])) {
				count++;
				snprintf(last, n, "%s", line);
				break;
			}
	return pclose(f) ? -1 : count;
}

static bool wanted(const char *name, char **filters, int nf)
{
	if (!nf)
		return true;
	for (int i = 0; i < nf; i++)
		if (strstr(name, filters[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	char *filters[16];
	char stalled[2048] = "";
	struct ctx c = {};
	struct verdict v;
	int nf = 0, n = 0, opt, bugs0, bugs1;
	char bug_line[512] = "";
	double end;

	while ((opt = getopt(argc, argv, "lt:")) != -1) {
		switch (opt) {
		case 'l':
			for (size_t i = 0; i < NCASES; i++)
				printf("%s\n", cases[i].name);
			return 0;
		case 't':
			if (nf < 16)
				filters[nf++] = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-l] [-t SUBSTRING]...\n", argv[0]);
			return 2;
		}
	}
	for (size_t i = 0; i < NCASES; i++)
		n += wanted(cases[i].name, filters, nf);

	ksft_print_header();
	ksft_set_plan(n + 3);
	bugs0 = kernel_bugs(bug_line, sizeof(bug_line));

	/* The child first: no verbs object of ours may exist across fork. */
	vic = mmap(NULL, sizeof(*vic), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (vic == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(vic, 0, sizeof(*vic));
	vic_pid = fork();
	if (vic_pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!vic_pid)
		victim_main();
	end = now() + 60;
	while (!__atomic_load_n(&vic->ready, __ATOMIC_ACQUIRE) && now() < end)
		usleep(10000);
	if (__atomic_load_n(&vic->ready, __ATOMIC_ACQUIRE) != 1) {
		kill(vic_pid, SIGKILL);
		ksft_exit_fail_msg("the child process did not start: %s\n",
				   vic->why);
	}
	ksft_print_msg("child pid %d: QPs %#x %#x, CQs %u %u, honeypot rkey %#x\n",
		       vic_pid, vic->qpn[0], vic->qpn[1], vic->cqn[0],
		       vic->cqn[1], vic->hp_rkey);
	if (!dev_open(&c.d)) {
		kill(vic_pid, SIGKILL);
		ksft_exit_fail_msg("cannot open vrnic (PD, RoCEv2 IPv4 GID)\n");
	}

	for (size_t i = 0; i < NCASES; i++) {
		uint64_t r0 = vic_rounds();
		double t0 = now();

		if (!wanted(cases[i].name, filters, nf))
			continue;
		memset(&v, 0, sizeof(v));
		v.ok = true;
		cases[i].run(&c, &cases[i], &v);
		/* The other process must have completed a round meanwhile. */
		end = now() + PROGRESS_MS / 1000.0;
		while (vic_rounds() == r0 && !vic->failed && now() < end)
			usleep(10000);
		if (vic_rounds() == r0 && strlen(stalled) < sizeof(stalled) - 80)
			snprintf(stalled + strlen(stalled),
				 sizeof(stalled) - strlen(stalled), " [%s]",
				 cases[i].name);
		if (v.note[0])
			ksft_print_msg("%s\n", v.note);
		ksft_print_msg("%.1f s, the other process +%" PRIu64 " rounds\n",
			       now() - t0, vic_rounds() - r0);
		ksft_test_result(v.ok, "%s\n", cases[i].name);
	}

	memset(&v, 0, sizeof(v));
	v.ok = true;
	final_victim(stalled, &v);
	if (v.note[0])
		ksft_print_msg("%s\n", v.note);
	ksft_test_result(v.ok, "the other process kept moving verified data (RC, UC, its window), its honeypot MR untouched, its QPs in RTS\n");

	memset(&v, 0, sizeof(v));
	v.ok = true;
	final_device(&c, &v);
	if (v.note[0])
		ksft_print_msg("%s\n", v.note);
	ksft_test_result(v.ok, "a fresh QP pair moves 1 MiB WRITE/READ and a SEND, verified: the device survived\n");

	bugs1 = kernel_bugs(bug_line, sizeof(bug_line));
	if (bugs1 != bugs0)
		ksft_print_msg("last one: %s", bug_line);
	ksft_test_result(bugs0 >= 0 && bugs1 == bugs0,
			 "the kernel logged no WARNING/BUG/oops (%d before, %d after)\n",
			 bugs0, bugs1);

	if (c.mw)
		ibv_dealloc_mw(c.mw);
	if (c.big_mr)
		ibv_dereg_mr(c.big_mr);
	if (c.big)
		munmap(c.big, BIG_SGE);
	dev_close(&c.d);
	ksft_finished();
}
