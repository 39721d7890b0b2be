// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile third party on the wire of a vrnic pair (issue 13). Node 0 and
 * node 1 (tools/vm -n 2) run live RC and UC connections moving verified
 * data, and node 0 also forges RoCEv2 frames with a raw AF_PACKET socket on
 * its vrnic net_device: Ethernet, IPv4, UDP 4791, BTH, extension headers,
 * payload and a valid ICRC (ARCHITECTURE.md 3b: CRC-32 over 8 bytes of 0xFF
 * and the IP/UDP/BTH headers with TOS, TTL, IP checksum, UDP checksum and
 * BTH byte 4 masked, then the rest), from 169.254.0.77 and a MAC that is
 * neither node's, at node 1's QPs. The forger knows everything a sniffer
 * would: QP numbers, R_Keys, addresses and the PSNs in use. Checks:
 *  - calibration: forged frames of every kind sent to a QPN nobody has are
 *    counted in rx_no_qp and none in rx_icrc_err/rx_malformed, so the
 *    frames below are well-formed RoCEv2 that reaches the transport;
 *  - UC (node 1 the receiver): forged WRITE ONLY, WRITE ONLY with IMM,
 *    WRITE FIRST + LAST and SEND ONLY between the rounds of a live
 *    transfer: no forged byte lands in memory (a registered honeypot with
 *    REMOTE_WRITE that real traffic never touches), no receive completes
 *    for them, and the real transfer completes with every byte verified;
 *  - RC responder (node 1): forged WRITE ONLY, SEND ONLY and FETCH_ADD at
 *    every PSN from e - 8 to e + 23 (e the PSN the responder expects): the
 *    same checks;
 *  - RC requester (node 1): a SEND, a READ and a FETCH_ADD are in flight
 *    to a responder that is down (node 0's QP in RESET, for a few seconds
 *    of retransmissions), while forged ACKs, READ responses, an ATOMIC ACK
 *    and NAKs for exactly their PSNs arrive, one kind per connection:
 *    nothing completes early, nothing lands, the QP stays in RTS; then
 *    node 0 reconnects at the expected PSN and the real SEND, READ and
 *    FETCH_ADD complete with the right data and value;
 *  - for each connection, node 1's port counters show every forged frame
 *    as dropped for coming from a source that is not the QP's peer. The
 *    counter is found among the port's hw_counters (the driver's own list,
 *    read from sysfs at run time) by its name: one containing "src",
 *    "source", "addr", "peer" or "spoof" (VRNIC_HOSTILE_SRC_COUNTER names
 *    it explicitly); with none, those checks fail.
 * Every connection is fresh per case and carries verified traffic before
 * and after the forgery, so a failure in one case does not spill into the
 * next. Both nodes print the same TAP lines, each with both sides' notes.
 *
 * usage: hostile_peer [-l]
 * Node 1 (VRNIC_NODE=1) is the target and listens on TCP port 7473 of its
 * vrnic net_device for the control connection; node 0 is the honest peer
 * and the forger. Needs root on node 0 (the raw socket).
 *
 * To test the test: HOSTILE_PEER_MISS=1 on node 0 addresses every forged
 * frame to a MAC address nobody has, so the target's MAC filter drops them
 * all before its transport sees them: what a device that drops forged
 * frames looks like, counters apart. The calibration and counter checks
 * then fail (nothing arrived), every other check must pass.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kselftest.h"
#include "common.h"
#include "ctl.h"
#include "pattern.h"
#include "qp.h"
#include "verdict.h"

#define CTL_PORT	7473
#define MTU		1024	/* every QP's path MTU */
#define KiB		1024u
#define WAIT_MS		20000	/* a completion that must come */
#define QUIET_MS	1500	/* how long "nothing happens" is watched */
#define ROUNDS		8
#define FORGER_IP	"169.254.0.77"
#define NO_QPN		0xabcde	/* a QPN no vrnic has (max-qp is far below) */
#define ALL_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define HP_SEED		0x686f6e6579ull

/* The forger's source MAC: QEMU's prefix, neither node's (...:01, ...:02). */
static const uint8_t forger_mac[6] = { 0x52, 0x54, 0x00, 0x76, 0x72, 0x77 };
/* HOSTILE_PEER_MISS: a destination no port accepts (unicast, not ours). */
static const uint8_t nobody_mac[6] = { 0x52, 0x54, 0x00, 0x76, 0x72, 0x7f };
static bool miss;

/*
 * Each node's 64 KiB buffer, one MR with every right.
 *   TARGET   real WRITEs land here (node 1), READ source (node 0)
 *   RECV     8 receive slots of 1 KiB
 *   ATOMIC   the 8-byte word of FETCH_ADD (node 0); its result (node 1)
 *   HONEY    node 1's honeypot: registered, REMOTE_WRITE, never targeted
 *   LOCAL    outgoing data and READ landing areas
 */
#define BUF_SIZE	(64 * KiB)
#define TARGET		0
#define RECV		(16 * KiB)
#define ATOMIC		(24 * KiB)
#define ATOMIC_RES	(24 * KiB + 64)
#define HONEY		(32 * KiB)
#define HONEY_LEN	(16 * KiB)
#define LOCAL		(48 * KiB)

/* BTH opcodes (IBTA; wire.rst's table). */
enum {
	RC_SEND_ONLY = 0x04, RC_WRITE_ONLY = 0x0a, RC_READ_RESP_FIRST = 0x0d,
	RC_READ_RESP_MIDDLE = 0x0e, RC_READ_RESP_LAST = 0x0f,
	RC_READ_RESP_ONLY = 0x10, RC_ACK = 0x11, RC_ATOMIC_ACK = 0x12,
	RC_FETCH_ADD = 0x14, UC_SEND_ONLY = 0x24, UC_WRITE_FIRST = 0x26,
	UC_WRITE_LAST = 0x28, UC_WRITE_ONLY = 0x2a, UC_WRITE_ONLY_IMM = 0x2b,
};

/* ---- small things ------------------------------------------------------- */

static ssize_t not_byte(const uint8_t *p, size_t len, uint8_t b)
{
	for (size_t k = 0; k < len; k++)
		if (p[k] != b)
			return k;
	return -1;
}

/* ---- the node and its control connection ---------------------------------- */

struct node {
	bool target;			/* node 1 */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gidx;
	union ibv_gid gid, peer_gid;
	const char *ibdev, *iface;
	uint8_t mac[6], peer_mac[6];
	struct in_addr ip, peer_ip;
	int sock;			/* control connection, -1 once lost */
	uint32_t step;
	/* Node 0: the forger. */
	int raw;
	int ifindex;
	uint16_t ip_id;
	unsigned int forged;		/* frames sent in the current case */
};

/* Every control message (both guests are x86-64: no byte swapping). */
struct msg {
	uint32_t step;
	uint32_t ok;
	uint64_t val[12];
	char note[480];
};

/* Both sides send, then receive: a meeting point that swaps numbers. */
static bool xchg(struct node *n, struct msg *out, struct msg *in)
{
	struct msg dummy;

	if (!in)
		in = &dummy;
	out->step = ++n->step;
	if (!ctl_io(&n->sock, out, sizeof(*out), true) ||
	    !ctl_io(&n->sock, in, sizeof(*in), false))
		return false;
	if (in->step != n->step) {
		ctl_lost(&n->sock, "the peer is at another step");
		return false;
	}
	in->note[sizeof(in->note) - 1] = 0;
	return true;
}

/* A meeting point carrying up to three numbers each way. */
static bool meet(struct node *n, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t *theirs)
{
	struct msg out = { .ok = 1, .val = { a, b, c } }, in;

	if (!xchg(n, &out, &in))
		return false;
	if (theirs)
		memcpy(theirs, in.val, 3 * sizeof(*theirs));
	return true;
}

/* Both sides go on only if both are fine. */
static bool agree(struct node *n, bool ok)
{
	uint64_t theirs[3] = {};

	return meet(n, ok, 0, 0, theirs) && ok && theirs[0];
}

/* ---- the forger: RoCEv2 frames by hand ------------------------------------ */

/* CRC-32 as zlib computes it (reflected 0xEDB88320, init and final ~). */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

static uint16_t ip_csum(const uint8_t *h, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i < len; i += 2)
		s += h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = v;
}

/*
 * One RoCEv2 frame from the forger's addresses to the peer: BTH (opcode,
 * DestQP, PSN, AckReq), ext (the extension headers, already laid out) and
 * payload (a multiple of 4 bytes: no pad). Returns 0 when it was sent.
 */
static int forge(struct node *n, uint8_t opcode, uint32_t dqpn, uint32_t psn,
		 bool ack_req, const uint8_t *ext, size_t elen,
		 const uint8_t *payload, size_t plen)
{
	uint8_t f[2048] = {}, *ip = f + 14, *udp = ip + 20, *bth = udp + 8;
	size_t udp_len = 8 + 12 + elen + plen + 4, ip_len = 20 + udp_len;
	size_t flen = 14 + ip_len;
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET, .sll_ifindex = n->ifindex,
		.sll_halen = 6, .sll_protocol = htons(ETH_P_IP),
	};
	uint8_t mask[20 + 8 + 12];
	uint32_t crc;

	if (flen + 4 > sizeof(f) || plen % 4)
		return -1;
	memcpy(f, miss ? nobody_mac : n->peer_mac, 6);
	memcpy(f + 6, forger_mac, 6);
	f[12] = 0x08;				/* IPv4 */
	ip[0] = 0x45;
	put_be(ip + 2, ip_len, 2);
	put_be(ip + 4, n->ip_id++, 2);
	ip[6] = 0x40;				/* DF */
	ip[8] = 64;
	ip[9] = 17;				/* UDP */
	inet_pton(AF_INET, FORGER_IP, ip + 12);
	memcpy(ip + 16, &n->peer_ip, 4);
	put_be(ip + 10, ip_csum(ip, 20), 2);
	put_be(udp, 0xc0de, 2);
	put_be(udp + 2, 4791, 2);
	put_be(udp + 4, udp_len, 2);
	/* UDP checksum 0: legal, and what vrnic and rdma_rxe send. */
	bth[0] = opcode;
	put_be(bth + 2, 0xffff, 2);		/* P_Key */
	put_be(bth + 5, dqpn, 3);
	bth[8] = ack_req ? 0x80 : 0;
	put_be(bth + 9, psn, 3);
	memcpy(bth + 12, ext, elen);
	memcpy(bth + 12 + elen, payload, plen);

	/* ICRC: the variant fields of IP, UDP and BTH masked to ones. */
	memcpy(mask, ip, sizeof(mask));
	mask[1] = 0xff;				/* TOS */
	mask[8] = 0xff;				/* TTL */
	mask[10] = mask[11] = 0xff;		/* IP checksum */
	mask[20 + 6] = mask[20 + 7] = 0xff;	/* UDP checksum */
	mask[28 + 4] = 0xff;			/* FECN, BECN, reserved */
	crc = crc32_update(0xffffffff, (const uint8_t *)"\xff\xff\xff\xff"
			   "\xff\xff\xff\xff", 8);
	crc = crc32_update(crc, mask, sizeof(mask));
	crc = ~crc32_update(crc, bth + 12, elen + plen);
	f[14 + ip_len - 4] = crc;
	f[14 + ip_len - 3] = crc >> 8;
	f[14 + ip_len - 2] = crc >> 16;
	f[14 + ip_len - 1] = crc >> 24;

	memcpy(to.sll_addr, f, 6);
	if (flen < 60)
		flen = 60;			/* Ethernet minimum, zero pad */
	if (sendto(n->raw, f, flen, 0, (struct sockaddr *)&to,
		   sizeof(to)) != (ssize_t)flen) {
		ksft_print_msg("forger: sendto: %s\n", strerror(errno));
		return -1;
	}
	n->forged++;
	return 0;
}

/* Extension headers (IBTA 9.3), big-endian. */
static size_t reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	put_be(p, va, 8);
	put_be(p + 8, rkey, 4);
	put_be(p + 12, len, 4);
	return 16;
}

static size_t aeth(uint8_t *p, uint8_t syndrome, uint32_t msn)
{
	p[0] = syndrome;
	put_be(p + 1, msn, 3);
	return 4;
}

static size_t atomic_eth(uint8_t *p, uint64_t va, uint32_t rkey,
			 uint64_t add)
{
	put_be(p, va, 8);
	put_be(p + 8, rkey, 4);
	put_be(p + 12, add, 8);
	put_be(p + 20, 0, 8);
	return 28;
}

static bool forger_open(struct node *n)
{
	n->ifindex = if_nametoindex(n->iface);
	/* Protocol 0: it only sends, and receives nothing. */
	n->raw = socket(AF_PACKET, SOCK_RAW, 0);
	if (!n->ifindex || n->raw < 0) {
		ksft_print_msg("forger: raw socket on %s: %s\n", n->iface,
			       strerror(errno));
		return false;
	}
	n->ip_id = rand64();
	return true;
}

/* ---- port counters (node 1): the driver's list, from sysfs ---------------- */

#define MAX_CTR 96

struct counters {
	int n;
	char name[MAX_CTR][48];
	uint64_t val[MAX_CTR];
};

static bool counters_read(struct node *n, struct counters *c)
{
	char dir[256], path[512], line[64];
	struct dirent *de;
	long lifespan = 10;
	FILE *lf;
	DIR *d;

	c->n = 0;
	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/1/hw_counters",
		 n->ibdev);
	/*
	 * ib_core answers from a copy up to "lifespan" ms old: wait it out,
	 * so that no value read predates what this read is meant to see.
	 */
	snprintf(path, sizeof(path), "%s/lifespan", dir);
	lf = fopen(path, "r");
	if (lf) {
		if (fscanf(lf, "%ld", &lifespan) != 1 || lifespan < 0)
			lifespan = 10;
		fclose(lf);
	}
	usleep((lifespan + 20) * 1000);
	d = opendir(dir);
	if (!d)
		return false;
	while ((de = readdir(d)) && c->n < MAX_CTR) {
		FILE *f;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "lifespan"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f)) {
			snprintf(c->name[c->n], sizeof(c->name[0]), "%.47s",
				 de->d_name);
			c->val[c->n++] = strtoull(line, NULL, 10);
		}
		fclose(f);
	}
	closedir(d);
	return c->n > 0;
}

static int64_t ctr(const struct counters *c, const char *name)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->name[i], name))
			return c->val[i];
	return -1;
}

static int64_t ctr_delta(const struct counters *a, const struct counters *b,
			 const char *name)
{
	int64_t x = ctr(a, name), y = ctr(b, name);

	return x < 0 || y < 0 ? INT64_MIN : y - x;
}

/*
 * The counter of frames dropped for a source that is not the QP's peer:
 * VRNIC_HOSTILE_SRC_COUNTER if set, else the first whose name says so.
 */
static const char *bad_src_counter(const struct counters *c)
{
	static const char *const words[] = {
		"src", "source", "addr", "peer", "spoof",
	};
	const char *env = getenv("VRNIC_HOSTILE_SRC_COUNTER");

	if (env && *env)
		return ctr(c, env) >= 0 ? env : NULL;
	for (int i = 0; i < c->n; i++)
		for (size_t w = 0; w < ARRAY_SIZE(words); w++)
			if (strstr(c->name[i], words[w]))
				return c->name[i];
	return NULL;
}

/* Every counter that moved, as a note. */
static void counters_note(struct verdict *v, const struct counters *a,
			  const struct counters *b)
{
	char s[400] = "";

	for (int i = 0; i < b->n; i++) {
		int64_t d = ctr_delta(a, b, b->name[i]);

		if (d && d != INT64_MIN && strlen(s) < sizeof(s) - 48)
			snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s +%" PRId64,
				 s[0] ? ", " : "", b->name[i], d);
	}
	info(v, "counters moved: %s", s[0] ? s : "none");
}

/*
 * The counter check of a case: every forged frame dropped and counted as
 * from a non-peer source, and none of them broken (they are parsed).
 */
static void counters_check(struct verdict *v, const struct counters *a,
			   const struct counters *b, unsigned int forged)
{
	const char *name = bad_src_counter(b);
	int64_t d;

	counters_note(v, a, b);
	if (ctr_delta(a, b, "rx_icrc_err") || ctr_delta(a, b, "rx_malformed"))
		fail(v, "rx_icrc_err or rx_malformed moved: a forged frame was broken");
	if (!name) {
		fail(v, "no counter for frames from a non-peer source among the %d port counters (none named *src*, *source*, *addr*, *peer*, *spoof*)",
		     b->n);
		return;
	}
	d = ctr_delta(a, b, name);
	if (d != forged)
		fail(v, "%s +%" PRId64 ", want +%u (the forged frames)", name, d,
		     forged);
	else
		info(v, "%s +%" PRId64, name, d);
}

/* ---- verbs: one QP, its CQ and the 64 KiB buffer -------------------------- */

struct ep {
	enum ibv_qp_type qpt;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint32_t psn;		/* the first (sq_psn) */
	uint32_t next;		/* the PSN the next request takes */
	/* The peer's, from the handshake. */
	uint32_t rqpn, rpsn, rkey;
	uint64_t raddr;
};

static void ep_close(struct ep *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, BUF_SIZE);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	memset(e, 0, sizeof(*e));
}

/* PSNs a request of len bytes takes (wire.rst, Segmentation). */
static uint32_t psns(size_t len)
{
	return len ? (len + MTU - 1) / MTU : 1;
}

/*
 * INIT -> RTR -> RTS towards the peer's QP and GID. RC: retries without
 * end (7) for RNR, a 1 s ACK timeout (so a responder may be down for a
 * few seconds) and RNR NAKs carrying timer 24 (41 ms).
 */
static void qp_connect(struct node *n, struct ep *e, uint32_t rq_psn,
		       uint32_t sq_psn, struct verdict *v)
{
	static const struct rc_knobs k = {
		.timeout = 18, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 24,
	};
	struct ibv_ah_attr ah;

	roce_ah_attr(&ah, n->peer_gid.raw, n->gidx);
	qp_to_rts(e->qp, &ah, e->rqpn, rq_psn, sq_psn, &k, v);
}

/*
 * Create, swap QP numbers, PSNs, R_Keys and addresses with the peer, and
 * connect.
 */
static bool ep_setup_v(struct node *n, struct ep *e, enum ibv_qp_type qpt,
		       struct verdict *v)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = qpt,
	};
	uint64_t peer[3], peer2[3];

	memset(e, 0, sizeof(*e));
	e->qpt = qpt;
	e->psn = e->next = rand64() & 0xffffff;
	e->cq = ibv_create_cq(n->ctx, 128, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = e->cq ? ibv_create_qp(n->pd, &ia) : NULL;
	e->buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (e->buf == MAP_FAILED)
		e->buf = NULL;
	e->mr = e->buf ? ibv_reg_mr(n->pd, e->buf, BUF_SIZE, ALL_ACCESS) : NULL;
	if (!e->qp || !e->mr) {
		fail(v, "creating the QP: %s", strerror(errno));
		/* Still meet twice, as the peer does. */
		meet(n, 0, 0, 0, NULL);
		meet(n, 0, 0, 0, NULL);
		return agree(n, false);
	}
	qp_to_init(e->qp, v);
	if (!meet(n, e->qp->qp_num, e->psn, e->mr->rkey, peer) ||
	    !meet(n, (uintptr_t)e->buf, 0, 0, peer2)) {
		fail(v, "control connection lost");
		return false;
	}
	e->rqpn = peer[0];
	e->rpsn = peer[1];
	e->rkey = peer[2];
	e->raddr = peer2[0];
	if (!e->rqpn) {
		fail(v, "the peer could not create its QP");
		return agree(n, false);
	}
	qp_connect(n, e, e->rpsn, e->psn, v);
	return agree(n, v->ok);
}

/*
 * ep_setup_v with a verdict of its own (the caller's may carry failures
 * of earlier steps): true when both sides are connected; what went wrong
 * goes to v.
 */
static bool ep_setup(struct node *n, struct ep *e, enum ibv_qp_type qpt,
		     struct verdict *v)
{
	struct verdict mine = { .ok = true };

	if (ep_setup_v(n, e, qpt, &mine))
		return true;
	fail(v, "connection setup failed%s%s", mine.note[0] ? ": " : " (on the peer)",
	     mine.note);
	return false;
}

/*
 * One work request from e's buffer at off to the peer's at roff (a
 * FETCH_AND_ADD adds 5), and the PSNs it takes counted in e->next.
 */
static int post(struct ep *e, enum ibv_wr_opcode op, size_t off, uint32_t len,
		uint64_t roff, uint64_t wr_id)
{
	int rc = qp_post_one(e->qp, op, e->mr, e->buf + off, len,
			     e->raddr + roff, e->rkey, 5, wr_id);

	if (!rc)
		e->next = (e->next + (op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 1 :
				      psns(len))) & 0xffffff;
	return rc;
}

static int post_recv(struct ep *e, size_t off, uint32_t len, uint64_t wr_id)
{
	return qp_post_recv_one(e->qp, e->mr, e->buf + off, len, wr_id);
}

static bool expect_wc_ms(struct verdict *v, const char *what, struct ep *e,
			 enum ibv_wc_opcode op, uint64_t wr_id,
			 uint32_t byte_len, int ms)
{
	struct ibv_wc wc;

	if (wait_wc(e->cq, &wc, 1, ms) != 1) {
		fail(v, "%s: no completion within %d ms", what, ms);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id ||
	    wc.opcode != op || (byte_len && wc.byte_len != byte_len)) {
		fail(v, "%s: status %s opcode %d wr_id %#" PRIx64
		     " byte_len %u; want SUCCESS %d %#" PRIx64 " %u", what,
		     ibv_wc_status_str(wc.status), wc.opcode, (uint64_t)wc.wr_id,
		     wc.byte_len, op, wr_id, byte_len);
		return false;
	}
	return true;
}

static bool expect_wc(struct verdict *v, const char *what, struct ep *e,
		      enum ibv_wc_opcode op, uint64_t wr_id, uint32_t byte_len)
{
	return expect_wc_ms(v, what, e, op, wr_id, byte_len, WAIT_MS);
}

/*
 * Nothing completes on e's CQ for ms. Returns the wr_ids that did, as a
 * bit mask (bits 0..63), and names them (status, byte_len) in the note.
 */
static uint64_t expect_quiet(struct verdict *v, const char *what, struct ep *e,
			     int ms)
{
	struct ibv_wc wc[16];
	int n = wait_wc(e->cq, wc, 16, ms);
	char s[200] = "";
	uint64_t seen = 0;

	for (int i = 0; i < n; i++) {
		seen |= 1ull << (wc[i].wr_id & 63);
		if (strlen(s) < sizeof(s) - 40)
			snprintf(s + strlen(s), sizeof(s) - strlen(s),
				 "%s%#" PRIx64 " %s %u B", i ? ", " : "",
				 (uint64_t)wc[i].wr_id,
				 wc[i].status ? ibv_wc_status_str(wc[i].status) :
						"OK", wc[i].byte_len);
	}
	if (n)
		fail(v, "%s: %d completion(s) (wr_id status bytes: %s)", what, n, s);
	return seen;
}

/* ---- results: both nodes print the same lines ----------------------------- */

#define MAX_RES 8

struct results {
	int n;
	const char *name[MAX_RES];
	struct verdict v[MAX_RES];
};

static struct verdict *res_add(struct results *r, const char *name)
{
	r->name[r->n] = name;
	r->v[r->n].ok = true;
	r->v[r->n].note[0] = 0;
	return &r->v[r->n++];
}

static void finish(struct node *n, struct results *r)
{
	for (int i = 0; i < r->n; i++) {
		struct msg out = { .ok = r->v[i].ok }, in = {};
		bool got;

		snprintf(out.note, sizeof(out.note), "%s", r->v[i].note);
		got = n->sock >= 0 && xchg(n, &out, &in);
		if (r->v[i].note[0])
			ksft_print_msg("node %d: %s\n", n->target, r->v[i].note);
		if (got && in.note[0])
			ksft_print_msg("node %d: %s\n", !n->target, in.note);
		if (!got)
			ksft_print_msg("no verdict from the peer\n");
		ksft_test_result(r->v[i].ok && got && in.ok, "%s\n", r->name[i]);
	}
}

/* ---- the cases -------------------------------------------------------------- */

/*
 * Calibration: 32 forged frames of eight kinds, to a QPN nobody has. All
 * must reach the transport (rx_no_qp) and none fail the parser: proof that
 * the frames of the other cases are well-formed RoCEv2 with a good ICRC.
 */
static void case_calibrate(struct node *n, struct results *r)
{
	struct verdict *v = res_add(r,
		"calibration: 32 forged frames of 8 kinds from " FORGER_IP
		" to an unused QPN are well-formed RoCEv2: rx_no_qp +32, rx_icrc_err and rx_malformed +0");
	struct counters a, b;
	uint64_t peer[3];
	uint8_t ext[32], pay[256];

	n->forged = 0;
	if (n->target && !counters_read(n, &a))
		fail(v, "no port counters in sysfs");
	meet(n, 0, 0, 0, NULL);
	if (!n->target) {
		memset(pay, 0xee, sizeof(pay));
		for (int k = 0; k < 4; k++) {
			uint32_t psn = rand64() & 0xffffff;

			forge(n, RC_SEND_ONLY, NO_QPN, psn, true, NULL, 0, pay, 64);
			forge(n, RC_WRITE_ONLY, NO_QPN, psn, true, ext,
			      reth(ext, 0x1000, 0x1234, 256), pay, 256);
			forge(n, RC_FETCH_ADD, NO_QPN, psn, true, ext,
			      atomic_eth(ext, 0x1000, 0x1234, 1), NULL, 0);
			forge(n, RC_ACK, NO_QPN, psn, false, ext,
			      aeth(ext, 0x1f, 1), NULL, 0);
			forge(n, RC_READ_RESP_ONLY, NO_QPN, psn, false, ext,
			      aeth(ext, 0x1f, 1), pay, 256);
			aeth(ext, 0x1f, 1);
			put_be(ext + 4, 0x0bad, 8);
			forge(n, RC_ATOMIC_ACK, NO_QPN, psn, false, ext, 12, NULL, 0);
			forge(n, UC_SEND_ONLY, NO_QPN, psn, false, NULL, 0, pay, 128);
			reth(ext, 0x1000, 0x1234, 64);
			put_be(ext + 16, 0xf00d, 4);
			forge(n, UC_WRITE_ONLY_IMM, NO_QPN, psn, false, ext, 20, pay, 64);
		}
	}
	if (!meet(n, n->forged, 0, 0, peer)) {
		fail(v, "control connection lost");
		return;
	}
	if (!n->target) {
		if (n->forged != 32)
			fail(v, "only %u of 32 frames sent", n->forged);
		return;
	}
	if (!counters_read(n, &b)) {
		fail(v, "no port counters in sysfs");
		return;
	}
	counters_note(v, &a, &b);
	if (ctr_delta(&a, &b, "rx_no_qp") != (int64_t)peer[0])
		fail(v, "rx_no_qp +%" PRId64 ", want +%" PRIu64,
		     ctr_delta(&a, &b, "rx_no_qp"), peer[0]);
	if (ctr_delta(&a, &b, "rx_icrc_err") || ctr_delta(&a, &b, "rx_malformed"))
		fail(v, "rx_icrc_err +%" PRId64 ", rx_malformed +%" PRId64,
		     ctr_delta(&a, &b, "rx_icrc_err"),
		     ctr_delta(&a, &b, "rx_malformed"));
}

/*
 * Node 1 receives: ROUNDS rounds of WRITE 4 KiB + SEND 1 KiB from node 0,
 * each verified before the next; after round 2 node 0 forges at node 1's
 * QP (uc: UC frames; else RC requests at every PSN of a window around the
 * one node 1 expects). Results: nothing forged arrived, the real transfer
 * is intact, the counters.
 */
static void forge_requests(struct node *n, struct ep *e, bool uc)
{
	uint64_t hp = e->raddr + HONEY;
	uint8_t ext[32], pay[MTU];
	uint32_t base = e->next;

	memset(pay, 0xee, sizeof(pay));
	if (uc) {
		/* UC takes any FIRST/ONLY: the expected PSN, the next, any. */
		uint32_t psn[4] = { base, base + 1, rand64(), rand64() };

		for (int i = 0; i < 4; i++) {
			uint32_t p = psn[i] & 0xffffff;

			forge(n, UC_WRITE_ONLY, e->rqpn, p, false, ext,
			      reth(ext, hp, e->rkey, 256), pay, 256);
			reth(ext, hp + 512, e->rkey, 256);
			put_be(ext + 16, 0xf0f0f0f0, 4);
			forge(n, UC_WRITE_ONLY_IMM, e->rqpn, p, false, ext, 20,
			      pay, 256);
			forge(n, UC_WRITE_FIRST, e->rqpn, p, false, ext,
			      reth(ext, hp + 4 * KiB, e->rkey, 2 * MTU), pay, MTU);
			forge(n, UC_WRITE_LAST, e->rqpn, (p + 1) & 0xffffff, false,
			      NULL, 0, pay, MTU);
			forge(n, UC_SEND_ONLY, e->rqpn, p, false, NULL, 0, pay, 256);
		}
		return;
	}
	/* RC: every PSN from e - 8 to e + 23, so one of them is exactly e. */
	for (int kind = 0; kind < 3; kind++)
		for (int d = -8; d < 24; d++) {
			uint32_t p = (base + d) & 0xffffff;

			if (kind == 0)
				forge(n, RC_WRITE_ONLY, e->rqpn, p, true, ext,
				      reth(ext, hp, e->rkey, 256), pay, 256);
			else if (kind == 1)
				forge(n, RC_SEND_ONLY, e->rqpn, p, true, NULL, 0,
				      pay, 256);
			else
				forge(n, RC_FETCH_ADD, e->rqpn, p, true, ext,
				      atomic_eth(ext, hp + 8 * KiB, e->rkey,
						 0x100), NULL, 0);
		}
}

static void case_requests(struct node *n, struct results *r, bool uc)
{
	struct verdict *vin = res_add(r, uc ?
		"UC: forged WRITE ONLY, WRITE ONLY with IMM, WRITE FIRST + LAST and SEND ONLY from a third address during a live transfer: no byte in memory, no receive completion" :
		"RC responder: forged WRITE ONLY, SEND ONLY and FETCH_ADD from a third address at every PSN from e - 8 to e + 23: no byte in memory, no receive completion");
	struct verdict *vreal = res_add(r, uc ?
		"UC: the real transfer (8 x WRITE 4 KiB + SEND 1 KiB) completes with every byte verified" :
		"RC responder: the real transfer (8 x WRITE 4 KiB + SEND 1 KiB) completes with every byte verified");
	struct verdict *vctr = res_add(r, uc ?
		"UC: the target's port counters count every forged frame as from a source that is not the QP's peer" :
		"RC responder: the target's port counters count every forged frame as from a source that is not the QP's peer");
	struct counters a = {}, b;
	uint64_t peer[3] = {}, round_ok[3] = {};
	int wait = WAIT_MS;
	struct ep e;
	ssize_t off;

	n->forged = 0;
	if (!ep_setup(n, &e, uc ? IBV_QPT_UC : IBV_QPT_RC, vreal)) {
		fail(vin, "not run");
		fail(vctr, "not run");
		goto out;
	}
	if (n->target) {
		fill(e.buf + HONEY, HONEY_LEN, HP_SEED);
		for (int k = 0; k < ROUNDS; k++)
			if (post_recv(&e, RECV + k * KiB, KiB, k))
				fail(vreal, "ibv_post_recv: %s", strerror(errno));
		counters_read(n, &a);
	}
	meet(n, 0, 0, 0, NULL);
	for (int k = 0; k < ROUNDS && n->sock >= 0; k++) {
		uint64_t seed = mix(k + (uc ? 100 : 200));

		if (k == 3) {
			/* Quiet between rounds: the forger's turn. */
			if (!n->target)
				forge_requests(n, &e, uc);
			meet(n, n->forged, 0, 0, peer);
			if (n->target)
				expect_quiet(vin, "after the forged frames", &e,
					     QUIET_MS);
			meet(n, 0, 0, 0, NULL);
		}
		if (!n->target) {
			bool ok = false;

			fill(e.buf + LOCAL, 5 * KiB, seed);
			if (post(&e, IBV_WR_RDMA_WRITE, LOCAL, 4 * KiB,
				 TARGET + (k % 4) * 4 * KiB, 2 * k) ||
			    post(&e, IBV_WR_SEND, LOCAL + 4 * KiB, KiB, 0,
				 2 * k + 1))
				fail(vreal, "round %d: ibv_post_send: %s", k,
				     strerror(errno));
			else
				ok = expect_wc(vreal, "WRITE", &e,
					       IBV_WC_RDMA_WRITE, 2 * k, 0) &&
				     expect_wc(vreal, "SEND", &e, IBV_WC_SEND,
					       2 * k + 1, 0);
			meet(n, ok, 0, 0, NULL);
			continue;
		}
		meet(n, 0, 0, 0, round_ok);
		/*
		 * The SEND follows the WRITE: once it is in, both are. A
		 * sender that failed the round sent nothing worth waiting for.
		 */
		if (!round_ok[0]) {
			expect_quiet(vreal, "round the sender failed", &e, 300);
			fail(vreal, "round %d: the sender failed it", k);
			continue;
		}
		if (!expect_wc_ms(vreal, "receive", &e, IBV_WC_RECV, k, KiB,
				  wait)) {
			/* Broken already: the next rounds need not wait long. */
			wait = 2000;
			continue;
		}
		off = differs(e.buf + TARGET + (k % 4) * 4 * KiB, 4 * KiB, seed);
		if (off >= 0)
			fail(vreal, "round %d: WRITE data wrong at byte %zd", k, off);
		for (size_t i = 0; i < KiB; i++)
			if (e.buf[RECV + k * KiB + i] != pat(seed, 4 * KiB + i)) {
				fail(vreal, "round %d: SEND data wrong at byte %zu",
				     k, i);
				break;
			}
	}
	if (n->target) {
		off = differs(e.buf + HONEY, HONEY_LEN, HP_SEED);
		if (off >= 0)
			fail(vin, "the honeypot changed at byte %zd (now %#x)", off,
			     e.buf[HONEY + off]);
		expect_quiet(vin, "after the last round", &e, 200);
		if (qp_state(e.qp) != IBV_QPS_RTS)
			fail(vreal, "QP in state %d, want RTS", qp_state(e.qp));
		if (!counters_read(n, &b))
			fail(vctr, "no port counters in sysfs");
		else
			counters_check(vctr, &a, &b, peer[0]);
	}
out:
	meet(n, 0, 0, 0, NULL);
	ep_close(&e);
}

/* Node 1's requests in the responses case: wr_ids 1, 2, 3. */
enum { WR_SEND = 1, WR_READ, WR_FADD };

/*
 * Node 0 forges the responses of phase ph for the SEND at PSN p, the READ
 * at PSN rd (two PSNs) and the FETCH_ADD at PSN at.
 */
static void forge_responses(struct node *n, struct ep *e, int ph, uint32_t p,
			    uint32_t rd, uint32_t at)
{
	uint8_t ext[16], pay[MTU];

	memset(pay, 0xee, sizeof(pay));
	for (int rep = 0; rep < 2; rep++) {
		switch (ph) {
		case 0:
			/* ACKs for the SEND, the READ's PSNs and the atomic's. */
			for (int d = -1; d <= 3; d++)
				forge(n, RC_ACK, e->rqpn, (p + d) & 0xffffff, false,
				      ext, aeth(ext, 0x1f, 1), NULL, 0);
			break;
		case 1:
			forge(n, RC_READ_RESP_FIRST, e->rqpn, rd, false, ext,
			      aeth(ext, 0x1f, 1), pay, MTU);
			forge(n, RC_READ_RESP_MIDDLE, e->rqpn, rd, false, NULL, 0,
			      pay, MTU);
			forge(n, RC_READ_RESP_LAST, e->rqpn, (rd + 1) & 0xffffff,
			      false, ext, aeth(ext, 0x1f, 1), pay, MTU);
			break;
		case 2:
			aeth(ext, 0x1f, 1);
			put_be(ext + 4, 0x0bad0bad0bad0badull, 8);
			forge(n, RC_ATOMIC_ACK, e->rqpn, at, false, ext, 12, NULL, 0);
			break;
		case 3:
			/*
			 * NAK codes 1..3 (0x61..0x63) for the SEND, and a PSN
			 * Sequence Error (0x60) claiming the responder already
			 * expects the READ's second PSN (an implied ACK).
			 */
			for (int code = 0; code < 4; code++)
				forge(n, RC_ACK, e->rqpn,
				      (p + (code ? 0 : 2)) & 0xffffff, false, ext,
				      aeth(ext, 0x60 | code, 1), NULL, 0);
			break;
		}
	}
}

/*
 * Node 1 is the requester, on a connection of its own for each phase (so
 * that what one phase's forgery did cannot fail the next). A WRITE and a
 * READ show the connection live. Then node 0 takes its QP down (RESET:
 * it drops whatever arrives) and node 1 posts a SEND, a READ of 2 KiB and
 * a FETCH_ADD: all three stay in flight, retransmitted on the ACK timeout,
 * with no answer. Node 0 forges the phase's responses for exactly their
 * PSNs; node 1 checks that nothing completed, nothing landed and its QP
 * is in RTS. Then node 0 brings its QP up again, expecting the SEND's
 * PSN, with a receive posted, and the requester's next retransmission
 * completes the three for real.
 */
static bool responses_phase(struct node *n, int ph, struct verdict *vp,
			    struct verdict *vreal, unsigned int *forged)
{
	static const int rd_first[3] = { WR_SEND, WR_READ, WR_FADD };
	static const int at_first[3] = { WR_SEND, WR_FADD, WR_READ };
	const uint64_t sentinel = 0x5a5a5a5a5a5a5a5aull;
	uint64_t w0 = 0, peer[3] = {}, res, early = 0;
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	uint32_t p = 0, rd = 0, at = 0;
	bool ran = false;
	int order[3];
	struct ep e;
	ssize_t off;

	n->forged = 0;
	if (!ep_setup(n, &e, IBV_QPT_RC, vreal)) {
		fail(vp, "not run");
		goto out;
	}
	ran = true;
	/* Node 0: READ source and the atomic word. */
	if (!n->target) {
		fill(e.buf + TARGET, 16 * KiB, 0x50c + ph);
		w0 = rand64();
		memcpy(e.buf + ATOMIC, &w0, 8);
	}
	meet(n, w0, 0, 0, peer);
	if (n->target)
		w0 = peer[0];

	/* Live first: a WRITE and a READ, verified. */
	if (n->target) {
		fill(e.buf + LOCAL, 4 * KiB, 0x3300 + ph);
		memset(e.buf + LOCAL + 8 * KiB, 0, 4 * KiB);
		if (post(&e, IBV_WR_RDMA_WRITE, LOCAL, 4 * KiB, LOCAL, 10) ||
		    post(&e, IBV_WR_RDMA_READ, LOCAL + 8 * KiB, 4 * KiB, TARGET,
			 20)) {
			fail(vreal, "warm-up: ibv_post_send: %s", strerror(errno));
		} else {
			expect_wc(vreal, "warm-up WRITE", &e, IBV_WC_RDMA_WRITE,
				  10, 0);
			expect_wc(vreal, "warm-up READ", &e, IBV_WC_RDMA_READ, 20,
				  4 * KiB);
			off = differs(e.buf + LOCAL + 8 * KiB, 4 * KiB, 0x50c + ph);
			if (off >= 0)
				fail(vreal, "warm-up READ wrong at %zd", off);
		}
	}
	meet(n, 0, 0, 0, NULL);
	if (!n->target) {
		off = differs(e.buf + LOCAL, 4 * KiB, 0x3300 + ph);
		if (off >= 0)
			fail(vreal, "warm-up WRITE wrong at %zd", off);
		/* The responder goes away. */
		qp_modify(e.qp, &reset, IBV_QP_STATE, "RESET", vreal);
	}
	meet(n, 0, 0, 0, NULL);

	/*
	 * The SEND, READ and FETCH_ADD that will wait. The requester pairs a
	 * READ response or ATOMIC ACK with its oldest READ or atomic only,
	 * so in the atomic phase the FETCH_ADD goes first.
	 */
	for (int i = 0; i < 3; i++)
		order[i] = ph == 2 ? at_first[i] : rd_first[i];
	if (n->target) {
		memset(e.buf + HONEY, 0, 2 * KiB);
		memcpy(e.buf + ATOMIC_RES, &sentinel, 8);
		fill(e.buf + LOCAL, KiB, 0x5e4d + ph);
		p = e.next;
		for (int i = 0, rc = 0; i < 3 && !rc; i++) {

			if (order[i] == WR_SEND) {
				rc = post(&e, IBV_WR_SEND, LOCAL, KiB, 0, WR_SEND);
			} else if (order[i] == WR_READ) {
				rd = e.next;
				rc = post(&e, IBV_WR_RDMA_READ, HONEY, 2 * KiB,
					  TARGET + 4 * KiB, WR_READ);
			} else {
				at = e.next;
				rc = post(&e, IBV_WR_ATOMIC_FETCH_AND_ADD,
					  ATOMIC_RES, 8, ATOMIC, WR_FADD);
			}
			if (rc)
				fail(vreal, "ibv_post_send: %s", strerror(rc));
		}
		/* Let the requests go out (and be dropped). */
		usleep(300000);
	}
	meet(n, p, rd, at, peer);
	if (!n->target) {
		p = peer[0];
		rd = peer[1];
		at = peer[2];
		forge_responses(n, &e, ph, p, rd, at);
		if (!n->forged)
			fail(vp, "nothing forged");
	}
	meet(n, 0, 0, 0, NULL);
	if (n->target) {
		early = expect_quiet(vp, "after the forged responses", &e,
				     QUIET_MS);
		off = not_byte(e.buf + HONEY, 2 * KiB, 0);
		if (off >= 0)
			fail(vp, "the READ landing area changed at byte %zd", off);
		memcpy(&res, e.buf + ATOMIC_RES, 8);
		if (res != sentinel)
			fail(vp, "the FETCH_ADD result changed to %#" PRIx64, res);
		if (qp_state(e.qp) != IBV_QPS_RTS)
			fail(vp, "QP in state %d, want RTS", qp_state(e.qp));
	}
	/* Node 0 comes back only once node 1 has looked. */
	meet(n, early, 0, 0, peer);
	if (!n->target) {
		early = peer[0];
		qp_to_init(e.qp, vreal);
		if (post_recv(&e, RECV, KiB, 7))
			fail(vreal, "ibv_post_recv: %s", strerror(errno));
		qp_connect(n, &e, p, e.next, vreal);
	}
	meet(n, 0, 0, 0, NULL);

	/*
	 * The requester's next retransmission finds the responder. A WR
	 * that completed during the forgery is not sent again: no long
	 * waits for what cannot come.
	 */
	if (n->target) {
		static const char *const what[] = {
			NULL, "the SEND", "the READ", "the FETCH_ADD",
		};
		static const enum ibv_wc_opcode op[] = {
			0, IBV_WC_SEND, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
		};
		static const uint32_t len[] = { 0, 0, 2 * KiB, 8 };

		for (int i = 0; i < 3; i++) {
			int w = order[i];

			if (early & (1u << w))
				fail(vreal, "phase %d: %s had completed during the forgery",
				     ph + 1, what[w]);
			else
				expect_wc_ms(vreal, what[w], &e, op[w], w, len[w],
					     early ? 5000 : WAIT_MS);
		}
		for (size_t i = 0; i < 2 * KiB; i++)
			if (e.buf[HONEY + i] != pat(0x50c + ph, 4 * KiB + i)) {
				fail(vreal, "phase %d: READ data wrong at byte %zu",
				     ph + 1, i);
				break;
			}
		memcpy(&res, e.buf + ATOMIC_RES, 8);
		if (res != w0)
			fail(vreal, "phase %d: FETCH_ADD returned %#" PRIx64
			     ", want %#" PRIx64, ph + 1, res, w0);
		if (qp_state(e.qp) != IBV_QPS_RTS)
			fail(vreal, "phase %d: QP in state %d, want RTS", ph + 1,
			     qp_state(e.qp));
	} else if (expect_wc_ms(vreal, "the receive", &e, IBV_WC_RECV, 7, KiB,
				early ? 5000 : WAIT_MS)) {
		off = differs(e.buf + RECV, KiB, 0x5e4d + ph);
		if (off >= 0)
			fail(vreal, "phase %d: SEND data wrong at byte %zd", ph + 1,
			     off);
	}
	/* The atomic was executed exactly once, when it was the peer's. */
	meet(n, n->forged, 0, 0, peer);
	if (n->target) {
		*forged += peer[0];
	} else {
		memcpy(&res, e.buf + ATOMIC, 8);
		if (res != w0 + 5)
			fail(vreal, "phase %d: the atomic word is %#" PRIx64
			     ", want %#" PRIx64, ph + 1, res, w0 + 5);
	}
out:
	meet(n, 0, 0, 0, NULL);
	ep_close(&e);
	return ran;
}

static void case_responses(struct node *n, struct results *r)
{
	static const char *const phase[] = {
		"RC requester: forged ACKs for the PSNs in flight complete nothing (the SEND to a responder that is down stays pending)",
		"RC requester: forged READ responses (FIRST, MIDDLE, LAST) complete nothing and land nowhere",
		"RC requester: a forged ATOMIC ACKNOWLEDGE completes nothing and lands nowhere",
		"RC requester: forged NAKs (invalid request, remote access, remote operational; PSN sequence) fail and complete nothing, the QP stays in RTS",
	};
	struct verdict *vp[4], *vreal, *vctr;
	struct counters a = {}, b;
	unsigned int forged = 0, ran = 0;

	for (int i = 0; i < 4; i++)
		vp[i] = res_add(r, phase[i]);
	vreal = res_add(r, "RC requester: after each forgery the real SEND, READ and FETCH_ADD complete with every byte and the original value verified");
	vctr = res_add(r, "RC requester: the target's port counters count every forged response as from a source that is not the QP's peer");
	if (n->target && !counters_read(n, &a))
		fail(vctr, "no port counters in sysfs");
	for (int ph = 0; ph < 4; ph++)
		if (n->sock >= 0)
			ran += responses_phase(n, ph, vp[ph], vreal, &forged);
		else
			fail(vp[ph], "not run: control connection lost");
	if (ran < 4)
		fail(vctr, "only %u of the 4 phases ran", ran);
	if (n->target) {
		if (!counters_read(n, &b))
			fail(vctr, "no port counters in sysfs");
		else
			counters_check(vctr, &a, &b, forged);
	}
}

static void case_uc(struct node *n, struct results *r)
{
	case_requests(n, r, true);
}

static void case_rc(struct node *n, struct results *r)
{
	case_requests(n, r, false);
}

static const struct {
	void (*run)(struct node *n, struct results *r);
	int nres;
	const char *what;
} cases[] = {
	{ case_calibrate, 1, "calibration" },
	{ case_uc, 3, "UC receiver" },
	{ case_rc, 3, "RC responder" },
	{ case_responses, 6, "RC requester" },
};

#define NCASES ARRAY_SIZE(cases)

/* ---- setup -------------------------------------------------------------------- */

static bool read_mac(const char *iface, uint8_t *mac)
{
	char path[128];
	FILE *f;
	int got;

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", iface);
	f = fopen(path, "r");
	if (!f)
		return false;
	got = fscanf(f, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1],
		     &mac[2], &mac[3], &mac[4], &mac[5]);
	fclose(f);
	return got == 6;
}

static bool setup(struct node *n)
{
	const char *ip = getenv("VRNIC_IP"), *pip = getenv("VRNIC_PEER_IP");
	struct msg out = {}, in;
	double end = now() + 60;

	n->iface = getenv("VRNIC_IFACE") ? getenv("VRNIC_IFACE") : "eth0";
	n->ibdev = getenv("VRNIC_IBDEV") ? getenv("VRNIC_IBDEV") : "vrnic0";
	if (!ip || !pip || !inet_pton(AF_INET, ip, &n->ip) ||
	    !inet_pton(AF_INET, pip, &n->peer_ip)) {
		ksft_print_msg("VRNIC_IP / VRNIC_PEER_IP not set: run in a tools/vm -n 2 guest\n");
		return false;
	}
	if (!read_mac(n->iface, n->mac)) {
		ksft_print_msg("no MAC address for %s\n", n->iface);
		return false;
	}
	n->ctx = vrnic_open();
	n->pd = n->ctx ? ibv_alloc_pd(n->ctx) : NULL;
	if (!n->pd) {
		ksft_print_msg("no vrnic device\n");
		return false;
	}
	n->gidx = vrnic_wait_ipv4_gid(n->ctx, end, &n->gid);
	if (n->gidx < 0) {
		ksft_print_msg("no RoCEv2 IPv4 GID\n");
		return false;
	}
	if (!n->target && !forger_open(n))
		return false;
	if (!ctl_connect(&n->sock, n->target, n->peer_ip, CTL_PORT, "nobody"))
		return false;
	memcpy(&out.val[0], n->gid.raw, 16);
	memcpy(&out.val[2], n->mac, 6);
	out.val[3] = NCASES;
	if (!xchg(n, &out, &in))
		return false;
	if (in.val[3] != NCASES) {
		ctl_lost(&n->sock, "the peer runs another list of cases");
		return false;
	}
	memcpy(n->peer_gid.raw, &in.val[0], 16);
	memcpy(n->peer_mac, &in.val[2], 6);
	ksft_print_msg("node %d (%s): %s %s, GID index %d, peer %s %02x:%02x:%02x:%02x:%02x:%02x\n",
		       n->target, n->target ? "target" : "honest peer and forger",
		       n->ibdev, n->iface, n->gidx, pip, n->peer_mac[0],
		       n->peer_mac[1], n->peer_mac[2], n->peer_mac[3],
		       n->peer_mac[4], n->peer_mac[5]);
	return true;
}

int main(int argc, char **argv)
{
	const char *node = getenv("VRNIC_NODE");
	struct node n = { .sock = -1, .raw = -1 };
	int plan = 0, opt;
	bool ready;

	while ((opt = getopt(argc, argv, "l")) != -1) {
		if (opt != 'l')
			ksft_exit_fail_msg("usage: %s [-l]\n", argv[0]);
		for (size_t i = 0; i < NCASES; i++)
			printf("%s (%d results)\n", cases[i].what, cases[i].nres);
		return 0;
	}
	for (size_t i = 0; i < NCASES; i++)
		plan += cases[i].nres;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
	ksft_set_plan(plan);
	n.target = node && !strcmp(node, "1");
	miss = !n.target && getenv("HOSTILE_PEER_MISS") &&
	       strcmp(getenv("HOSTILE_PEER_MISS"), "0");
	if (miss)
		ksft_print_msg("HOSTILE_PEER_MISS: every forged frame goes to a MAC nobody has\n");
	ready = setup(&n);
	for (size_t i = 0; i < NCASES; i++) {
		struct results r = {};
		double t0 = now();

		if (!ready || n.sock < 0) {
			const char *why = ready ? "control connection lost" :
						  "no device or no peer";

			for (int k = 0; k < cases[i].nres; k++)
				ksft_test_result_fail("%s #%d (%s)\n", cases[i].what,
						      k + 1, why);
			continue;
		}
		cases[i].run(&n, &r);
		ksft_print_msg("%s: %.1f s\n", cases[i].what, now() - t0);
		if (r.n != cases[i].nres)
			ksft_print_msg("%s: %d results, %d planned\n",
				       cases[i].what, r.n, cases[i].nres);
		finish(&n, &r);
	}
	if (n.sock >= 0)
		close(n.sock);
	if (n.raw >= 0)
		close(n.raw);
	vrnic_close(n.ctx, n.pd);
	ksft_finished();
}
