// SPDX-License-Identifier: GPL-2.0
/*
 * Raw packet QPs and flow steering on one vrnic device, through unmodified
 * libibverbs (uapi/vrnic_hw_defs.h, "Raw packet QPs" and "Flow steering"):
 *  - a raw packet QP (IBV_QPT_RAW_PACKET) goes RESET -> INIT (which needs
 *    the port) -> RTR -> RTS and reports itself so; one with an SRQ is
 *    refused;
 *  - the frames one QP sends loop back, whole and in order, to the QP
 *    whose ibv_create_flow() rule matches them, never to a rule of the
 *    sending QP itself, and to no QP when no rule matches;
 *  - rules on the destination MAC, the VLAN ID, IPv4 / IPv6 addresses, the
 *    IP protocol and TCP / UDP ports match those fields and nothing else;
 *    an IP spec implies its EtherType, a TCP / UDP spec its protocol;
 *  - the lowest priority value wins, and the oldest rule among equal ones;
 *    a drop rule drops what it wins;
 *  - a frame without a receive WQE is dropped, not held; a frame longer
 *    than its WQE completes it IBV_WC_LOC_LEN_ERR and the QP receives on;
 *  - flows on RC and UD QPs, fields the device cannot match (EOPNOTSUPP),
 *    frames shorter than an Ethernet header or longer than MTU + 18, and
 *    opcodes other than SEND are refused;
 *  - a device holds 64 rules, not 65;
 *  - RSS: receive WQs (ibv_create_wq), an indirection table over them and
 *    a raw packet QP hashing over it (RX_HASH, IND_TABLE) take the frames
 *    a rule on that QP steers, each on the WQ the Toeplitz hash of its
 *    selected fields picks (computed here from the definition); WQ states
 *    RESET / RDY / ERR (flushing) work, a receive error moves a WQ to ERR,
 *    a WQ receives into on-demand memory (the kernel answers its page
 *    fault), an RSS QP takes no WRs and no
 *    modify, a WQ in a table is not destroyed, and a table or hash the
 *    device cannot do is refused.
 * Frames go to a multicast MAC 01:50:56:xx:xx:xx (random per case) that
 * nothing else on the system listens to, from a locally administered MAC.
 * "Nothing arrives" is shown with a marker, never by waiting: a frame that
 * does match, sent after the one that must not, has to be the first one
 * the QP receives. That relies on the device steering one send queue's
 * frames in the order they were sent, as it sends them.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <glob.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include "kselftest_harness.h"
#include "common.h"
#include "pattern.h"
#include "qp.h"

#define SLOTS		16	/* WRs of each queue, and a buffer for each */
#define SLOT_LEN	9216	/* one buffer: the largest frame, MTU 9000 + 18 */
#define BUF_LEN		(2 * SLOTS * SLOT_LEN)	/* send, then receive slots */
#define WAIT_MS		20000	/* for a completion that must come (TCG) */
#define CASE_TIMEOUT	120	/* seconds per case, for the harness */
#define CANARY		0xa5	/* a receive slot before the device writes */
#define FRAME_OVERHEAD	18	/* VRNIC_ETH_FRAME_OVERHEAD: header + 802.1Q */
#define RULES_MAX	64	/* VRNIC_FLOW_MAX: rules per device */
#define MAX_FLOWS	(RULES_MAX + 8)
#define VLAN_VID_MASK	0x0fff
#define DESC_LEN	256
#define RSS_LOG		2	/* 4 WQs in the RSS cases' table */
#define RSS_WQS		(1 << RSS_LOG)
#define RSS_KEY_LEN	40	/* VRNIC_RSS_KEY_LEN */
#define RSS_LOG_MAX	4	/* VRNIC_RSS_LOG_TABLE_MAX */

/*
 * One Ethernet frame, which build_frame() lays out byte for byte: an
 * Ethernet header (with an 802.1Q tag when vid is set), IPv4 or IPv6 and
 * UDP or TCP (or no IP at all: EtherType ETH_P_802_EX1), then the pattern
 * of seed up to len bytes. IPv4 addresses are kept as ::ffff:a.b.c.d, the
 * way the device keys them, so that one frame turns IPv6 by its ip alone.
 */
struct frame {
	uint8_t dmac[ETH_ALEN];
	uint8_t smac[ETH_ALEN];
	uint16_t vid;		/* 0: untagged */
	int ip;			/* 4, 6 or 0 */
	uint8_t proto;		/* IPPROTO_UDP or IPPROTO_TCP */
	struct in6_addr src, dst;
	uint16_t sport, dport;
	uint32_t len;		/* the whole frame, without FCS */
	uint64_t seed;		/* the payload */
};

/*
 * A raw packet QP with a send and a receive CQ of its own (so that a
 * receive error, whose opcode is undefined, is still told from a send
 * completion) and SLOTS send buffers then SLOTS receive buffers in one MR.
 * Each queue is used in order: the WR with wr_id n uses slot n % SLOTS.
 */
struct rawq {
	const char *name;
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t sent;		/* send WRs posted */
	uint64_t posted;	/* receive WRs posted */
	uint64_t recvd;		/* receive completions taken */
};

/* A sends; B and C receive; X is a fresh QP for what one case needs. */
enum { A, B, C, X, NQ };

/*
 * Receive WQs on one CQ, each with SLOTS receive buffers of its own in
 * one MR, the indirection table over them and the RSS QP hashing over it.
 */
struct rss {
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_wq *wq[RSS_WQS];
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *qp;
	uint8_t key[RSS_KEY_LEN];
};

FIXTURE(raw) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct rawq q[NQ];
	struct ibv_qp *other[2];	/* RC and UD QPs, which take no flows */
	struct ibv_flow *flow[MAX_FLOWS];
	uint32_t mtu;			/* the port's (its netdev's) MTU */
	struct frame base;		/* IPv4 / UDP to the case's dmac */
	struct rss rss;
};

/* ---- frames ------------------------------------------------------------ */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

/* Internet checksum: the 16-bit big-endian words of p added to sum. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* "a.b.c.d" as ::ffff:a.b.c.d, or an IPv6 address. */
static struct in6_addr addr(const char *s)
{
	struct in6_addr a = { 0 };

	if (inet_pton(AF_INET, s, &a.s6_addr[12]) == 1) {
		a.s6_addr[10] = a.s6_addr[11] = 0xff;
		return a;
	}
	inet_pton(AF_INET6, s, &a);
	return a;
}

/*
 * f's bytes at p, with valid IPv4 header and TCP / UDP checksums (the
 * frames go out on the wire too). Returns the length, 0 when the headers
 * do not fit in f->len.
 */
static uint32_t build_frame(const struct frame *f, uint8_t *p)
{
	uint32_t eth = f->vid ? ETH_HLEN + 4 : ETH_HLEN;
	uint32_t l3 = f->ip == 4 ? 20 : f->ip == 6 ? 40 : 0;
	uint32_t l4 = !f->ip ? 0 : f->proto == IPPROTO_TCP ? 20 : 8;
	uint32_t hdr = eth + l3 + l4, seg = f->len - eth - l3;
	uint8_t *ip = p + eth, *th = ip + l3;
	uint16_t type = f->ip == 4 ? ETH_P_IP :
			f->ip == 6 ? ETH_P_IPV6 : ETH_P_802_EX1;
	uint32_t sum;
	uint16_t c;

	if (f->len < hdr)
		return 0;
	memcpy(p, f->dmac, ETH_ALEN);
	memcpy(p + ETH_ALEN, f->smac, ETH_ALEN);
	if (f->vid) {
		put16(p + 12, ETH_P_8021Q);
		put16(p + 14, f->vid);
	}
	put16(p + eth - 2, type);
	memset(ip, 0, l3 + l4);
	fill(p + hdr, f->len - hdr, f->seed);
	if (!f->ip)
		return f->len;
	if (f->ip == 4) {
		ip[0] = 0x45;
		put16(ip + 2, f->len - eth);
		put16(ip + 6, 0x4000);			/* DF */
		ip[8] = 64;
		ip[9] = f->proto;
		memcpy(ip + 12, &f->src.s6_addr[12], 4);
		memcpy(ip + 16, &f->dst.s6_addr[12], 4);
		put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
		sum = csum_add(0, ip + 12, 8);
	} else {
		ip[0] = 0x60;
		put16(ip + 4, seg);
		ip[6] = f->proto;
		ip[7] = 64;
		memcpy(ip + 8, f->src.s6_addr, 16);
		memcpy(ip + 24, f->dst.s6_addr, 16);
		sum = csum_add(0, ip + 8, 32);
	}
	sum += f->proto + seg;		/* the rest of the pseudo-header */
	put16(th, f->sport);
	put16(th + 2, f->dport);
	if (f->proto == IPPROTO_TCP) {
		th[7] = 1;			/* seq 1 */
		th[12] = 0x50;			/* 5 words, no options */
		th[13] = 0x18;			/* PSH, ACK */
		put16(th + 14, 0xffff);		/* window */
		put16(th + 16, csum_fold(csum_add(sum, th, seg)));
	} else {
		put16(th + 4, seg);
		c = csum_fold(csum_add(sum, th, seg));
		put16(th + 6, c ? c : 0xffff);
	}
	return f->len;
}

static __printf(3, 4) void cat(char *s, size_t n, const char *fmt, ...)
{
	size_t k = strlen(s);
	va_list ap;

	if (k + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(s + k, n - k, fmt, ap);
	va_end(ap);
}

/* A one-line summary of the len bytes at p, for the logs. */
static const char *describe(char *s, size_t n, const uint8_t *p, uint32_t len)
{
	char src[INET6_ADDRSTRLEN] = "", dst[INET6_ADDRSTRLEN] = "";
	uint32_t o = 12, l4 = 0;
	int proto = -1;
	uint16_t type;

	snprintf(s, n, "%u bytes", len);
	if (len < ETH_HLEN)
		return s;
	cat(s, n, " to %02x:%02x:%02x:%02x:%02x:%02x", p[0], p[1], p[2], p[3],
	    p[4], p[5]);
	type = get16(p + o);
	if (type == ETH_P_8021Q && len >= ETH_HLEN + 4) {
		cat(s, n, " vlan %u", get16(p + 14) & VLAN_VID_MASK);
		o += 4;
		type = get16(p + o);
	}
	o += 2;
	cat(s, n, " type %#06x", type);
	if (type == ETH_P_IP && len >= o + 20) {
		inet_ntop(AF_INET, p + o + 12, src, sizeof(src));
		inet_ntop(AF_INET, p + o + 16, dst, sizeof(dst));
		proto = p[o + 9];
		l4 = o + (p[o] & 0xf) * 4;
	} else if (type == ETH_P_IPV6 && len >= o + 40) {
		inet_ntop(AF_INET6, p + o + 8, src, sizeof(src));
		inet_ntop(AF_INET6, p + o + 24, dst, sizeof(dst));
		proto = p[o + 6];
		l4 = o + 40;
	} else {
		return s;
	}
	cat(s, n, " %s > %s proto %d", src, dst, proto);
	if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP) && len >= l4 + 4)
		cat(s, n, " ports %u > %u", get16(p + l4), get16(p + l4 + 2));
	return s;
}

static const char *describe_frame(char *s, size_t n, const struct frame *f)
{
	uint8_t b[SLOT_LEN];

	return describe(s, n, b, build_frame(f, b));
}

static ssize_t first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return -1;
}

/* Offset of the first byte of p that is not v, or -1. */
static ssize_t first_not(const uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return i;
	return -1;
}

/* ---- flow rules -------------------------------------------------------- */

/* An ibv_flow_attr with its specs packed right after it, as verbs wants. */
struct rule {
	struct ibv_flow_attr attr;
	uint8_t specs[256];
};

static_assert(offsetof(struct rule, specs) == sizeof(struct ibv_flow_attr),
	      "the specs follow the attribute");

static void rule_init(struct rule *r, uint16_t priority)
{
	memset(r, 0, sizeof(*r));
	r->attr.type = IBV_FLOW_ATTR_NORMAL;
	r->attr.size = sizeof(r->attr);
	r->attr.priority = priority;
	r->attr.port = 1;
}

static void rule_add(struct rule *r, const void *spec, size_t size)
{
	size_t used = r->attr.size - sizeof(r->attr);

	assert(used + size <= sizeof(r->specs));
	memcpy(r->specs + used, spec, size);
	r->attr.size += size;
	r->attr.num_of_specs++;
}

#define RULE_ADD(r, spec) do {					\
		__typeof__(spec) s_ = (spec);			\
		rule_add(r, &s_, sizeof(s_));			\
	} while (0)

/* f's destination MAC; with vlan, its VLAN ID too. */
static struct ibv_flow_spec_eth spec_eth(const struct frame *f, bool vlan)
{
	struct ibv_flow_spec_eth s = { .type = IBV_FLOW_SPEC_ETH,
				       .size = sizeof(s) };

	memcpy(s.val.dst_mac, f->dmac, ETH_ALEN);
	memset(s.mask.dst_mac, 0xff, ETH_ALEN);
	if (vlan) {
		s.val.vlan_tag = htons(f->vid);
		s.mask.vlan_tag = htons(VLAN_VID_MASK);
	}
	return s;
}

/* f's IPv4 addresses (the plain spec, which has nothing else). */
static struct ibv_flow_spec_ipv4 spec_ipv4(const struct frame *f)
{
	struct ibv_flow_spec_ipv4 s = { .type = IBV_FLOW_SPEC_IPV4,
					.size = sizeof(s) };

	memcpy(&s.val.src_ip, &f->src.s6_addr[12], 4);
	memcpy(&s.val.dst_ip, &f->dst.s6_addr[12], 4);
	s.mask.src_ip = s.mask.dst_ip = UINT32_MAX;
	return s;
}

/* f's IP protocol alone: the extended IPv4 spec, addresses unmasked. */
static struct ibv_flow_spec_ipv4_ext spec_ipv4_proto(const struct frame *f)
{
	struct ibv_flow_spec_ipv4_ext s = { .type = IBV_FLOW_SPEC_IPV4_EXT,
					    .size = sizeof(s) };

	s.val.proto = f->proto;
	s.mask.proto = 0xff;
	return s;
}

/* f's IPv6 addresses. */
static struct ibv_flow_spec_ipv6 spec_ipv6(const struct frame *f)
{
	struct ibv_flow_spec_ipv6 s = { .type = IBV_FLOW_SPEC_IPV6,
					.size = sizeof(s) };

	memcpy(s.val.src_ip, f->src.s6_addr, 16);
	memcpy(s.val.dst_ip, f->dst.s6_addr, 16);
	memset(s.mask.src_ip, 0xff, 16);
	memset(s.mask.dst_ip, 0xff, 16);
	return s;
}

/* f's ports, in a TCP or UDP spec as f is. */
static struct ibv_flow_spec_tcp_udp spec_ports(const struct frame *f)
{
	struct ibv_flow_spec_tcp_udp s = {
		.type = f->proto == IPPROTO_TCP ? IBV_FLOW_SPEC_TCP :
						  IBV_FLOW_SPEC_UDP,
		.size = sizeof(s),
	};

	s.val.src_port = htons(f->sport);
	s.val.dst_port = htons(f->dport);
	s.mask.src_port = s.mask.dst_port = UINT16_MAX;
	return s;
}

static struct ibv_flow_spec_action_drop spec_drop(void)
{
	return (struct ibv_flow_spec_action_drop){
		.type = IBV_FLOW_SPEC_ACTION_DROP,
		.size = sizeof(struct ibv_flow_spec_action_drop),
	};
}

/* What rule_for() matches besides the destination MAC. */
enum {
	M_VLAN = 1 << 0,	/* the VLAN ID */
	M_ADDRS = 1 << 1,	/* the IPv4 or IPv6 addresses */
	M_PROTO = 1 << 2,	/* the IPv4 protocol (IPv4 only) */
	M_PORTS = 1 << 3,	/* the TCP or UDP ports */
	M_DROP = 1 << 4,	/* not a match: the rule drops */
};

/* A rule that matches f's destination MAC and the fields in m. */
static void rule_for(struct rule *r, const struct frame *f, uint16_t priority,
		     unsigned int m)
{
	rule_init(r, priority);
	RULE_ADD(r, spec_eth(f, m & M_VLAN));
	if (m & M_ADDRS && f->ip == 4)
		RULE_ADD(r, spec_ipv4(f));
	if (m & M_ADDRS && f->ip == 6)
		RULE_ADD(r, spec_ipv6(f));
	if (m & M_PROTO)
		RULE_ADD(r, spec_ipv4_proto(f));
	if (m & M_PORTS)
		RULE_ADD(r, spec_ports(f));
	if (m & M_DROP)
		RULE_ADD(r, spec_drop());
}

/* r on q; the fixture destroys it unless del_flow() does first. */
static struct ibv_flow *add_flow(struct __test_metadata *_metadata,
				 FIXTURE_DATA(raw) *self, struct rawq *q,
				 struct rule *r)
{
	struct ibv_flow *fl;
	int i = 0;

	while (i < MAX_FLOWS && self->flow[i])
		i++;
	ASSERT_GT(MAX_FLOWS, i);
	fl = ibv_create_flow(q->qp, &r->attr);
	ASSERT_NE(NULL, fl) TH_LOG("ibv_create_flow on %s (priority %u, %u specs): %s",
				   q->name, r->attr.priority,
				   r->attr.num_of_specs, strerror(errno));
	self->flow[i] = fl;
	return fl;
}

static void del_flow(struct __test_metadata *_metadata,
		     FIXTURE_DATA(raw) *self, struct ibv_flow *fl)
{
	for (int i = 0; i < MAX_FLOWS; i++)
		if (self->flow[i] == fl)
			self->flow[i] = NULL;
	ASSERT_EQ(0, ibv_destroy_flow(fl));
}

/*
 * ibv_create_flow(qp, r)'s errno when it fails as it must; 0 when it
 * succeeded, and the flow it should not have made is destroyed again.
 */
static int flow_refused(struct ibv_qp *qp, struct rule *r)
{
	struct ibv_flow *fl;

	errno = 0;
	fl = ibv_create_flow(qp, &r->attr);
	if (!fl)
		return errno ? errno : -1;
	ibv_destroy_flow(fl);
	return 0;
}

/* ---- raw packet QPs ---------------------------------------------------- */

static uint8_t *send_slot(struct rawq *q)
{
	return q->buf + q->sent % SLOTS * SLOT_LEN;
}

static uint8_t *recv_slot(struct rawq *q, uint64_t wr_id)
{
	return q->buf + (SLOTS + wr_id % SLOTS) * SLOT_LEN;
}

static struct ibv_qp_init_attr raw_attr(struct rawq *q)
{
	return (struct ibv_qp_init_attr){
		.send_cq = q->scq, .recv_cq = q->rcq,
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS,
			 .max_send_sge = 2, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
}

/* q's buffers, CQs and QP, in RESET. */
static void raw_create(struct __test_metadata *_metadata,
		       FIXTURE_DATA(raw) *self, struct rawq *q)
{
	struct ibv_qp_init_attr ia;

	ASSERT_EQ(NULL, q->qp);
	q->buf = aligned_alloc(4096, BUF_LEN);
	ASSERT_NE(NULL, q->buf);
	q->mr = ibv_reg_mr(self->pd, q->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	q->scq = ibv_create_cq(self->ctx, SLOTS, NULL, NULL, 0);
	q->rcq = ibv_create_cq(self->ctx, SLOTS, NULL, NULL, 0);
	ASSERT_TRUE(q->mr && q->scq && q->rcq) TH_LOG("%s: MR or CQs: %s",
						      q->name, strerror(errno));
	ia = raw_attr(q);
	q->qp = ibv_create_qp(self->pd, &ia);
	ASSERT_NE(NULL, q->qp) TH_LOG("%s: ibv_create_qp RAW_PACKET: %s",
				      q->name, strerror(errno));
}

/* RESET -> INIT (port 1) -> RTR -> RTS, each state read back. */
static void raw_to_rts(struct __test_metadata *_metadata, struct rawq *q)
{
	static const struct {
		enum ibv_qp_state state;
		int mask;
	} step[] = {
		{ IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PORT },
		{ IBV_QPS_RTR, IBV_QP_STATE },
		{ IBV_QPS_RTS, IBV_QP_STATE },
	};

	for (size_t i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		struct ibv_qp_attr a = { .qp_state = step[i].state,
					 .port_num = 1 };
		int rc = ibv_modify_qp(q->qp, &a, step[i].mask);

		ASSERT_EQ(0, rc) TH_LOG("%s: ibv_modify_qp to %s: %s", q->name,
					qp_state_str(step[i].state),
					strerror(rc));
		ASSERT_EQ(step[i].state, qp_state(q->qp))
			TH_LOG("%s: in %s after the move to %s", q->name,
			       qp_state_str(qp_state(q->qp)),
			       qp_state_str(step[i].state));
	}
}

/* One receive WQE of len bytes in the next receive slot (canary-filled). */
static int post_recv(struct rawq *q, uint32_t len)
{
	uint8_t *slot = recv_slot(q, q->posted);
	int rc;

	if (q->posted - q->recvd >= SLOTS)
		return ENOSPC;
	memset(slot, CANARY, SLOT_LEN);
	rc = qp_post_recv_one(q->qp, q->mr, slot, len, q->posted);
	if (!rc)
		q->posted++;
	return rc;
}

/* q in RTS with nrecv full-size receive WQEs. */
static void raw_open(struct __test_metadata *_metadata,
		     FIXTURE_DATA(raw) *self, struct rawq *q, int nrecv)
{
	raw_create(_metadata, self, q);
	raw_to_rts(_metadata, q);
	for (int i = 0; i < nrecv; i++) {
		ASSERT_EQ(0, post_recv(q, SLOT_LEN)) TH_LOG("%s: receive %d",
							    q->name, i);
	}
}

/* Whatever of q exists; q keeps its name. It must have no flows left. */
static void raw_close(struct rawq *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->scq)
		ibv_destroy_cq(q->scq);
	if (q->rcq)
		ibv_destroy_cq(q->rcq);
	if (q->mr)
		ibv_dereg_mr(q->mr);
	free(q->buf);
	*q = (struct rawq){ .name = q->name };
}

/*
 * One signaled WR of op for the len bytes in the next send slot. With
 * split, two SGEs: the first split bytes are moved to the end of the slot
 * (and zeroed where they were) and gathered from there, then the rest.
 */
static int post_send(struct rawq *q, uint32_t len, enum ibv_wr_opcode op,
		     uint32_t split)
{
	uint8_t *slot = send_slot(q), *head = slot + SLOT_LEN - split;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)slot, .length = len, .lkey = q->mr->lkey },
		{ .addr = (uintptr_t)(slot + split), .length = len - split,
		  .lkey = q->mr->lkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = q->sent, .sg_list = sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc;

	if (split) {
		assert(split < len && len + split <= SLOT_LEN);
		memcpy(head, slot, split);
		memset(slot, 0, split);
		sge[0].addr = (uintptr_t)head;
		sge[0].length = split;
		wr.num_sge = 2;
	}
	rc = ibv_post_send(q->qp, &wr, &bad);
	if (!rc)
		q->sent++;
	return rc;
}

/* q sends f (in two SGEs with split) and the send completes SUCCESS. */
static void send_frame_split(struct __test_metadata *_metadata,
			     struct rawq *q, const struct frame *f,
			     uint32_t split)
{
	uint32_t len = build_frame(f, send_slot(q));
	char d[DESC_LEN];
	struct ibv_wc wc;
	int rc;

	ASSERT_NE(0, len) TH_LOG("a %u-byte frame cannot hold its headers",
				 f->len);
	describe(d, sizeof(d), send_slot(q), len);
	rc = post_send(q, len, IBV_WR_SEND, split);
	ASSERT_EQ(0, rc) TH_LOG("%s: ibv_post_send [%s]: %s", q->name, d,
				strerror(rc));
	ASSERT_EQ(1, wait_wc(q->scq, &wc, 1, WAIT_MS))
		TH_LOG("%s: no send completion for [%s]", q->name, d);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s: send of [%s] completed %s", q->name, d,
		       ibv_wc_status_str(wc.status));
	ASSERT_EQ(IBV_WC_SEND, wc.opcode);
	ASSERT_EQ(q->sent - 1, wc.wr_id);
}

static void send_frame(struct __test_metadata *_metadata, struct rawq *q,
		       const struct frame *f)
{
	send_frame_split(_metadata, q, f, 0);
}

/*
 * q's next receive completion, in wc; returns its slot. Receive WQEs
 * complete in the order they were posted.
 */
static uint8_t *next_recv(struct __test_metadata *_metadata, struct rawq *q,
			  struct ibv_wc *wc, const char *who, const char *want)
{
	ASSERT_EQ(1, wait_wc(q->rcq, wc, 1, WAIT_MS))
		TH_LOG("%s: nothing received in %d s, expected [%s]", who,
		       WAIT_MS / 1000, want);
	ASSERT_EQ(q->recvd, wc->wr_id) TH_LOG("%s: receive WQEs out of order",
					      who);
	ASSERT_EQ(q->qp->qp_num, wc->qp_num);
	q->recvd++;
	return recv_slot(q, wc->wr_id);
}

/*
 * The next frame q receives is f: a SUCCESS RECV of exactly its bytes,
 * nothing written past them. The receive WQE is posted again.
 */
static void expect_frame(struct __test_metadata *_metadata, struct rawq *q,
			 const struct frame *f, const char *who)
{
	char ws[DESC_LEN], gs[DESC_LEN];
	uint8_t want[SLOT_LEN], *got;
	uint32_t len = build_frame(f, want);
	struct ibv_wc wc;
	ssize_t d;

	describe(ws, sizeof(ws), want, len);
	got = next_recv(_metadata, q, &wc, who, ws);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s: receive completed %s, expected [%s]", who,
		       ibv_wc_status_str(wc.status), ws);
	ASSERT_EQ(IBV_WC_RECV, wc.opcode);
	describe(gs, sizeof(gs), got,
		 wc.byte_len < SLOT_LEN ? wc.byte_len : SLOT_LEN);
	ASSERT_EQ(len, wc.byte_len) TH_LOG("%s: received [%s], expected [%s]",
					   who, gs, ws);
	d = first_diff(got, want, len);
	ASSERT_EQ(-1, d) TH_LOG("%s: received [%s], expected [%s]: byte %zd differs",
				who, gs, ws, d);
	d = first_not(got + len, CANARY, SLOT_LEN - len);
	ASSERT_EQ(-1, d) TH_LOG("%s: byte %zd written past the %u-byte frame",
				who, len + d, len);
	ASSERT_EQ(0, post_recv(q, SLOT_LEN));
}

/* q has received nothing (yet: see the marker frames). */
static void expect_idle(struct __test_metadata *_metadata, struct rawq *q)
{
	char gs[DESC_LEN] = "";
	struct ibv_wc wc;
	int n = ibv_poll_cq(q->rcq, 1, &wc);

	if (n == 1 && wc.status == IBV_WC_SUCCESS)
		describe(gs, sizeof(gs), recv_slot(q, wc.wr_id),
			 wc.byte_len < SLOT_LEN ? wc.byte_len : SLOT_LEN);
	ASSERT_EQ(0, n) TH_LOG("%s: received [%s] (%s), expected nothing",
			       q->name, gs,
			       n == 1 ? ibv_wc_status_str(wc.status) : "");
}

/*
 * src sends f, which must not reach dst, then marker, which must: dst's
 * next frame is the marker. Had the device steered f to dst, it would
 * have arrived first.
 */
static void expect_not_steered(struct __test_metadata *_metadata,
			       struct rawq *src, const struct frame *f,
			       struct rawq *dst, const struct frame *marker)
{
	char who[DESC_LEN + 64], d[DESC_LEN];

	describe_frame(d, sizeof(d), f);
	snprintf(who, sizeof(who), "%s, which must not take [%s]", dst->name,
		 d);
	send_frame(_metadata, src, f);
	send_frame(_metadata, src, marker);
	expect_frame(_metadata, dst, marker, who);
}

/*
 * A fresh QP (X) posts the first len bytes of f's frame with op: either
 * the post is refused, or the WR completes want. X is destroyed again:
 * after an error completion it is in ERR.
 */
static void expect_send_refused(struct __test_metadata *_metadata,
				FIXTURE_DATA(raw) *self, const struct frame *f,
				uint32_t len, enum ibv_wr_opcode op,
				enum ibv_wc_status want, const char *what)
{
	struct rawq *x = &self->q[X];
	struct ibv_wc wc;
	int rc;

	raw_open(_metadata, self, x, 0);
	ASSERT_NE(0, build_frame(f, send_slot(x)));
	rc = post_send(x, len, op, 0);
	if (rc) {
		TH_LOG("%s: refused by ibv_post_send: %s", what, strerror(rc));
	} else {
		ASSERT_EQ(1, wait_wc(x->scq, &wc, 1, WAIT_MS))
			TH_LOG("%s: no completion", what);
		EXPECT_EQ(want, wc.status)
			TH_LOG("%s: completed %s, expected %s", what,
			       ibv_wc_status_str(wc.status),
			       ibv_wc_status_str(want));
	}
	raw_close(x);
}

/* The MTU of the device's netdev, which is the port's; 0 if not found. */
static uint32_t port_mtu(struct ibv_context *ctx)
{
	unsigned int mtu = 0;
	char pat[256];
	glob_t g;
	FILE *f;

	snprintf(pat, sizeof(pat), "/sys/class/infiniband/%s/device/net/*/mtu",
		 ibv_get_device_name(ctx->device));
	if (glob(pat, 0, NULL, &g))
		return 0;
	f = g.gl_pathc == 1 ? fopen(g.gl_pathv[0], "r") : NULL;
	if (f) {
		if (fscanf(f, "%u", &mtu) != 1)
			mtu = 0;
		fclose(f);
	}
	globfree(&g);
	return mtu;
}

FIXTURE_SETUP(raw)
{
	static const char *const name[NQ] = { "A", "B", "C", "X" };
	uint64_t r = rand64();

	if (geteuid())
		SKIP(return, "raw packet QPs need CAP_NET_RAW: run as root");
	for (int i = 0; i < NQ; i++)
		self->q[i].name = name[i];
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->mtu = port_mtu(self->ctx);
	ASSERT_NE(0, self->mtu) TH_LOG("no netdev MTU for %s",
				       ibv_get_device_name(self->ctx->device));
	/* The largest frame sent, one byte too long, fits in a slot. */
	ASSERT_LE(self->mtu + FRAME_OVERHEAD + 1, SLOT_LEN);
	for (int i = A; i <= C; i++)
		raw_open(_metadata, self, &self->q[i], SLOTS);
	/* A multicast dmac of this case's own: no one else's traffic. */
	self->base = (struct frame){
		.dmac = { 0x01, 0x50, 0x56, (uint8_t)r, (uint8_t)(r >> 8),
			  (uint8_t)(r >> 16) },
		.smac = { 0x02, 0x76, 0x72, 0x6e, 0x69, 0x63 },
		.ip = 4, .proto = IPPROTO_UDP,
		.src = addr("198.51.100.1"), .dst = addr("192.0.2.1"),
		.sport = 40000, .dport = 50000,
		.len = 128, .seed = r,
	};
}

static void rss_close(struct rss *r);

FIXTURE_TEARDOWN(raw)
{
	/* Flows first: a QP that a flow points at cannot be destroyed. */
	for (int i = 0; i < MAX_FLOWS; i++)
		if (self->flow[i])
			ibv_destroy_flow(self->flow[i]);
	rss_close(&self->rss);
	for (int i = 0; i < 2; i++)
		if (self->other[i])
			ibv_destroy_qp(self->other[i]);
	for (int i = 0; i < NQ; i++)
		raw_close(&self->q[i]);
	vrnic_close(self->ctx, self->pd);
}

/* ---- cases ------------------------------------------------------------- */

TEST_F_TIMEOUT(raw, raw_qp_reaches_rts, CASE_TIMEOUT)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SLOTS,
						  .max_sge = 1 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT };
	struct rawq *x = &self->q[X];
	struct ibv_qp_init_attr ia;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	/* RESET -> INIT without the port is refused; with it, it goes on. */
	raw_create(_metadata, self, x);
	EXPECT_NE(0, ibv_modify_qp(x->qp, &a, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_RESET, qp_state(x->qp));
	raw_to_rts(_metadata, x);

	memset(&a, 0, sizeof(a));
	ASSERT_EQ(0, ibv_query_qp(x->qp, &a, IBV_QP_STATE | IBV_QP_PORT |
				  IBV_QP_CAP, &ia));
	EXPECT_EQ(IBV_QPS_RTS, a.qp_state);
	EXPECT_EQ(1, a.port_num);
	EXPECT_EQ(IBV_QPT_RAW_PACKET, ia.qp_type);
	EXPECT_EQ(IBV_QPT_RAW_PACKET, x->qp->qp_type);
	EXPECT_LE(SLOTS, ia.cap.max_send_wr);
	EXPECT_LE(SLOTS, ia.cap.max_recv_wr);

	/* A raw packet QP takes no SRQ. */
	srq = ibv_create_srq(self->pd, &sa);
	ASSERT_NE(NULL, srq) TH_LOG("ibv_create_srq: %s", strerror(errno));
	ia = raw_attr(x);
	ia.srq = srq;
	ia.cap.max_recv_wr = ia.cap.max_recv_sge = 0;
	qp = ibv_create_qp(self->pd, &ia);
	EXPECT_EQ(NULL, qp) TH_LOG("a raw packet QP with an SRQ was created");
	if (qp)
		ibv_destroy_qp(qp);
	else
		TH_LOG("with an SRQ: %s", strerror(errno));
	ibv_destroy_srq(srq);
}

/*
 * B's rule on the destination MAC takes every frame A sends there, of any
 * type and size from the bare header to MTU + 18 (a full-MTU packet behind
 * an 802.1Q tag), whole and in order, also when the send gathers it from
 * two SGEs; not a frame to another MAC. A and C (no rules) get nothing.
 */
TEST_F_TIMEOUT(raw, dmac_rule_steers_frames_to_its_qp, CASE_TIMEOUT)
{
	struct rawq *a = &self->q[A], *b = &self->q[B];
	struct frame f[7], other = self->base;
	const int n = sizeof(f) / sizeof(f[0]);
	struct rule r;

	rule_for(&r, &self->base, 0, 0);
	add_flow(_metadata, self, b, &r);
	for (int i = 0; i < n; i++) {
		f[i] = self->base;
		f[i].seed += i + 1;
	}
	f[0].ip = 0;
	f[0].len = ETH_HLEN;
	f[1].len = 60;
	f[2].proto = IPPROTO_TCP;
	f[2].len = 333;
	f[3].ip = 6;
	f[3].src = addr("2001:db8::1");
	f[3].dst = addr("2001:db8::2");
	f[3].len = 1001;
	f[4].len = 777;			/* sent from two SGEs */
	f[5].len = self->mtu + ETH_HLEN;
	f[6].vid = 7;
	f[6].len = self->mtu + FRAME_OVERHEAD;
	for (int i = 0; i < n; i++)
		send_frame_split(_metadata, a, &f[i], i == 4 ? ETH_HLEN + 3 : 0);
	for (int i = 0; i < n; i++)
		expect_frame(_metadata, b, &f[i], "B");

	other.dmac[5] ^= 1;
	expect_not_steered(_metadata, a, &other, b, &self->base);
	expect_idle(_metadata, a);
	expect_idle(_metadata, &self->q[C]);
}

/*
 * A and B have the same rule: A's frames go to B alone, B's to A alone.
 * The first frame each receives is the other's, so neither saw its own.
 */
TEST_F_TIMEOUT(raw, sender_does_not_see_its_own_frames, CASE_TIMEOUT)
{
	struct rawq *a = &self->q[A], *b = &self->q[B];
	struct frame f[3], from_b = self->base, again = self->base;
	struct rule r;

	rule_for(&r, &self->base, 0, 0);
	add_flow(_metadata, self, a, &r);
	add_flow(_metadata, self, b, &r);
	for (int i = 0; i < 3; i++) {
		f[i] = self->base;
		f[i].seed += i + 1;
		send_frame(_metadata, a, &f[i]);
	}
	for (int i = 0; i < 3; i++)
		expect_frame(_metadata, b, &f[i], "B");
	from_b.seed += 100;
	send_frame(_metadata, b, &from_b);
	expect_frame(_metadata, a, &from_b,
		     "A, which must not have taken its own frames");
	again.seed += 101;
	send_frame(_metadata, a, &again);
	expect_frame(_metadata, b, &again,
		     "B, which must not have taken its own frame");
	expect_idle(_metadata, &self->q[C]);
}

/*
 * B's rule on match's dmac and the fields in m takes match and none of
 * miss[] (each match with one matched field changed).
 */
static void check_fields(struct __test_metadata *_metadata,
			 FIXTURE_DATA(raw) *self, const struct frame *match,
			 unsigned int m, const struct frame *miss, int n)
{
	struct rawq *a = &self->q[A], *b = &self->q[B];
	struct rule r;

	rule_for(&r, match, 0, m);
	add_flow(_metadata, self, b, &r);
	send_frame(_metadata, a, match);
	expect_frame(_metadata, b, match, "B");
	for (int i = 0; i < n; i++)
		expect_not_steered(_metadata, a, &miss[i], b, match);
	expect_idle(_metadata, a);
	expect_idle(_metadata, &self->q[C]);
}

TEST_F_TIMEOUT(raw, ipv4_udp_rule_matches_its_fields, CASE_TIMEOUT)
{
	struct frame x[6];

	for (int i = 0; i < 6; i++)
		x[i] = self->base;
	x[0].sport++;
	x[1].dport++;
	x[2].src.s6_addr[15]++;
	x[3].dst.s6_addr[12] ^= 0x80;
	x[4].proto = IPPROTO_TCP;	/* the UDP spec implies UDP */
	x[5].ip = 6;			/* the IPv4 spec implies IPv4: the */
					/* same (mapped) addresses in IPv6 */
	check_fields(_metadata, self, &self->base, M_ADDRS | M_PORTS, x, 6);
}

TEST_F_TIMEOUT(raw, ipv4_tcp_rule_matches_its_fields, CASE_TIMEOUT)
{
	struct frame m = self->base, x[5];

	m.proto = IPPROTO_TCP;
	for (int i = 0; i < 5; i++)
		x[i] = m;
	x[0].proto = IPPROTO_UDP;	/* the TCP spec implies TCP */
	x[1].sport ^= 0x100;
	x[2].dport--;
	x[3].src.s6_addr[13]++;
	x[4].ip = 6;
	check_fields(_metadata, self, &m, M_ADDRS | M_PORTS, x, 5);
}

TEST_F_TIMEOUT(raw, ipv6_udp_rule_matches_its_fields, CASE_TIMEOUT)
{
	struct frame m = self->base, x[5];

	m.ip = 6;
	m.src = addr("2001:db8::1");
	m.dst = addr("2001:db8:0:1::2");
	for (int i = 0; i < 5; i++)
		x[i] = m;
	x[0].src.s6_addr[15]++;
	x[1].dst.s6_addr[0] ^= 0x40;	/* all 16 bytes count */
	x[2].proto = IPPROTO_TCP;
	x[3].sport++;
	x[4].dport++;
	check_fields(_metadata, self, &m, M_ADDRS | M_PORTS, x, 5);
}

/*
 * The extended IPv4 spec on the protocol alone: TCP and IPv6 (with the
 * same protocol) miss; other addresses and ports, which it does not name,
 * match.
 */
TEST_F_TIMEOUT(raw, ipv4_protocol_rule_matches_its_fields, CASE_TIMEOUT)
{
	struct frame x[2] = { self->base, self->base }, any = self->base;

	x[0].proto = IPPROTO_TCP;
	x[1].ip = 6;
	check_fields(_metadata, self, &self->base, M_PROTO, x, 2);
	any.src = addr("203.0.113.7");
	any.dst = addr("203.0.113.8");
	any.sport = 7;
	any.dport = 9;
	send_frame(_metadata, &self->q[A], &any);
	expect_frame(_metadata, &self->q[B], &any, "B");
}

/*
 * The VLAN ID, and IPv4 / UDP behind the tag (the EtherType compared is
 * the one after it): another VLAN ID, no tag or another port miss.
 */
TEST_F_TIMEOUT(raw, vlan_rule_matches_the_tag, CASE_TIMEOUT)
{
	struct frame m = self->base, x[3];

	m.vid = 100;
	for (int i = 0; i < 3; i++)
		x[i] = m;
	x[0].vid = 101;
	x[1].vid = 0;
	x[2].dport++;
	check_fields(_metadata, self, &m, M_VLAN | M_ADDRS | M_PORTS, x, 3);
}

/* A rule on q for the base frame's dmac, with this priority. */
static struct ibv_flow *dmac_flow(struct __test_metadata *_metadata,
				  FIXTURE_DATA(raw) *self, struct rawq *q,
				  uint16_t priority)
{
	struct rule r;

	rule_for(&r, &self->base, priority, 0);
	return add_flow(_metadata, self, q, &r);
}

/*
 * Rules for the same frames on win and lose, with these priorities, win's
 * created first when win_first: win takes every frame; once its rule is
 * gone, lose takes the next one, and that is the first lose receives.
 */
static void check_winner(struct __test_metadata *_metadata,
			 FIXTURE_DATA(raw) *self, struct rawq *win,
			 uint16_t win_prio, struct rawq *lose,
			 uint16_t lose_prio, bool win_first)
{
	struct rawq *a = &self->q[A];
	struct frame f[3], marker = self->base;
	struct ibv_flow *wf;

	if (win_first) {
		wf = dmac_flow(_metadata, self, win, win_prio);
		dmac_flow(_metadata, self, lose, lose_prio);
	} else {
		dmac_flow(_metadata, self, lose, lose_prio);
		wf = dmac_flow(_metadata, self, win, win_prio);
	}
	for (int i = 0; i < 3; i++) {
		f[i] = self->base;
		f[i].seed += i + 1;
		send_frame(_metadata, a, &f[i]);
	}
	for (int i = 0; i < 3; i++)
		expect_frame(_metadata, win, &f[i], win->name);
	del_flow(_metadata, self, wf);
	marker.seed += 100;
	send_frame(_metadata, a, &marker);
	expect_frame(_metadata, lose, &marker,
		     "the losing rule's QP, which must have had nothing before");
	expect_idle(_metadata, win);
}

/* C's priority 0 beats B's 1, though C's rule is the newer one. */
TEST_F_TIMEOUT(raw, lowest_priority_value_wins, CASE_TIMEOUT)
{
	check_winner(_metadata, self, &self->q[C], 0, &self->q[B], 1, false);
}

/*
 * Equal priorities: the older rule wins - C's, made first, though B's QP
 * is the older one (creation order, not QP numbers).
 */
TEST_F_TIMEOUT(raw, equal_priorities_oldest_rule_wins, CASE_TIMEOUT)
{
	check_winner(_metadata, self, &self->q[C], 1, &self->q[B], 1, true);
}

/*
 * A drop rule (on C) with a better priority than B's rule drops the
 * frames: none reaches B or C. Once it is gone B receives again, and with
 * a worse priority it does not stand in B's way.
 */
TEST_F_TIMEOUT(raw, drop_rule_drops_what_it_wins, CASE_TIMEOUT)
{
	struct rawq *a = &self->q[A], *b = &self->q[B], *c = &self->q[C];
	struct frame f = self->base, marker = self->base;
	struct ibv_flow *drop;
	struct rule r;

	rule_for(&r, &self->base, 1, 0);
	add_flow(_metadata, self, b, &r);
	rule_for(&r, &self->base, 0, M_DROP);
	drop = add_flow(_metadata, self, c, &r);
	for (int i = 0; i < 3; i++) {
		f.seed++;
		send_frame(_metadata, a, &f);
	}
	del_flow(_metadata, self, drop);
	marker.seed += 100;
	send_frame(_metadata, a, &marker);
	expect_frame(_metadata, b, &marker,
		     "B, which must not have had the dropped frames");
	expect_idle(_metadata, c);

	rule_for(&r, &self->base, 2, M_DROP);
	add_flow(_metadata, self, c, &r);
	f.seed++;
	send_frame(_metadata, a, &f);
	expect_frame(_metadata, b, &f, "B (the drop rule's priority is worse)");
	expect_idle(_metadata, c);
}

/*
 * A frame steered to a QP without a receive WQE is dropped, not held for
 * the next WQE. A frame to B that A sends after it shows that the device
 * has handled it.
 */
TEST_F_TIMEOUT(raw, frame_without_receive_wqe_is_dropped, CASE_TIMEOUT)
{
	struct rawq *a = &self->q[A], *x = &self->q[X];
	struct frame f = self->base, to_b = self->base;
	struct rule r;

	raw_open(_metadata, self, x, 0);
	rule_for(&r, &f, 0, 0);
	add_flow(_metadata, self, x, &r);
	to_b.dmac[5] ^= 1;
	rule_for(&r, &to_b, 0, 0);
	add_flow(_metadata, self, &self->q[B], &r);

	send_frame(_metadata, a, &f);
	send_frame(_metadata, a, &to_b);
	expect_frame(_metadata, &self->q[B], &to_b, "B");
	ASSERT_EQ(0, post_recv(x, SLOT_LEN));
	f.seed++;
	send_frame(_metadata, a, &f);
	expect_frame(_metadata, x, &f,
		     "X, whose frame without a WQE must have been dropped");
}

/*
 * A frame one byte longer than its receive WQE completes the WQE
 * IBV_WC_LOC_LEN_ERR without writing past it; the QP stays in RTS and
 * takes a frame of exactly the WQE's size, then a large one.
 */
TEST_F_TIMEOUT(raw, short_receive_buffer_completes_loc_len_err, CASE_TIMEOUT)
{
	const uint32_t wqe = 64;
	struct rawq *a = &self->q[A], *x = &self->q[X];
	struct frame f = self->base;
	char ws[DESC_LEN];
	struct ibv_wc wc;
	struct rule r;
	uint8_t *slot;
	ssize_t d;

	raw_open(_metadata, self, x, 0);
	rule_for(&r, &f, 0, 0);
	add_flow(_metadata, self, x, &r);
	ASSERT_EQ(0, post_recv(x, wqe));
	f.len = wqe + 1;
	send_frame(_metadata, a, &f);
	slot = next_recv(_metadata, x, &wc, "X (a 64-byte WQE)",
			 describe_frame(ws, sizeof(ws), &f));
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status)
		TH_LOG("a %u-byte frame into a %u-byte WQE completed %s",
		       f.len, wqe, ibv_wc_status_str(wc.status));
	d = first_not(slot + wqe, CANARY, SLOT_LEN - wqe);
	EXPECT_EQ(-1, d) TH_LOG("byte %zd written past the %u-byte WQE",
				wqe + d, wqe);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(x->qp));

	ASSERT_EQ(0, post_recv(x, wqe));
	f.len = wqe;
	f.seed++;
	send_frame(_metadata, a, &f);
	expect_frame(_metadata, x, &f, "X (a frame the size of its WQE)");
	f.len = 1500;
	f.seed++;
	send_frame(_metadata, a, &f);
	expect_frame(_metadata, x, &f, "X");
}

/* Flows are for raw packet QPs: one on an RC or a UD QP is refused. */
TEST_F_TIMEOUT(raw, flow_needs_a_raw_qp, CASE_TIMEOUT)
{
	static const enum ibv_qp_type type[2] = { IBV_QPT_RC, IBV_QPT_UD };
	struct rawq *a = &self->q[A];
	struct rule r;

	rule_for(&r, &self->base, 0, 0);
	/* The same rule is fine on a raw packet QP. */
	del_flow(_metadata, self, add_flow(_metadata, self, a, &r));
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = raw_attr(a);
		int err;

		ia.qp_type = type[i];
		self->other[i] = ibv_create_qp(self->pd, &ia);
		ASSERT_NE(NULL, self->other[i]) TH_LOG("ibv_create_qp type %d: %s",
						       type[i], strerror(errno));
		err = flow_refused(self->other[i], &r);
		EXPECT_NE(0, err) TH_LOG("a flow on a QP of type %d was created",
					 type[i]);
		TH_LOG("a flow on a QP of type %d: %s", type[i], strerror(err));
	}
}

/*
 * IPv4 TOS, TTL and flags and IPv6 flow label, traffic class and hop
 * limit are not in the device's key: a mask on any is EOPNOTSUPP, and no
 * rule is left behind (a later, worse rule on C still gets the frames).
 */
TEST_F_TIMEOUT(raw, unsupported_fields_are_eopnotsupp, CASE_TIMEOUT)
{
	struct rawq *b = &self->q[B];
	struct frame v6 = self->base;
	struct ibv_flow_spec_ipv4_ext tos, ttl, flags;
	struct ibv_flow_spec_ipv6 label, tclass, hops;
	const struct {
		const char *what;
		const void *spec;
		size_t size;
	} bad[] = {
		{ "IPv4 TOS", &tos, sizeof(tos) },
		{ "IPv4 TTL", &ttl, sizeof(ttl) },
		{ "IPv4 flags", &flags, sizeof(flags) },
		{ "IPv6 flow label", &label, sizeof(label) },
		{ "IPv6 traffic class", &tclass, sizeof(tclass) },
		{ "IPv6 hop limit", &hops, sizeof(hops) },
	};
	struct rule r;

	v6.ip = 6;
	v6.src = addr("2001:db8::1");
	v6.dst = addr("2001:db8::2");
	tos = ttl = flags = spec_ipv4_proto(&self->base);
	tos.mask.tos = 0xff;
	ttl.mask.ttl = 0xff;
	flags.mask.flags = 0xff;
	label = tclass = hops = spec_ipv6(&v6);
	label.mask.flow_label = htonl(0xfffff);
	tclass.mask.traffic_class = 0xff;
	hops.mask.hop_limit = 0xff;

	/* The same specs without those masks are fine. */
	rule_for(&r, &self->base, 0, M_PROTO);
	del_flow(_metadata, self, add_flow(_metadata, self, b, &r));
	rule_for(&r, &v6, 0, M_ADDRS);
	del_flow(_metadata, self, add_flow(_metadata, self, b, &r));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err;

		rule_init(&r, 0);
		RULE_ADD(&r, spec_eth(&self->base, false));
		rule_add(&r, bad[i].spec, bad[i].size);
		err = flow_refused(b->qp, &r);
		EXPECT_EQ(EOPNOTSUPP, err) TH_LOG("%s: %s", bad[i].what,
						  err ? strerror(err) :
							"the flow was created");
	}

	rule_for(&r, &self->base, 1, 0);
	add_flow(_metadata, self, &self->q[C], &r);
	send_frame(_metadata, &self->q[A], &self->base);
	expect_frame(_metadata, &self->q[C], &self->base, "C");
	expect_idle(_metadata, b);
}

/*
 * Frames of 10 and 13 bytes (less than the Ethernet header) and of MTU + 19
 * are not sent: the WR completes IBV_WC_LOC_LEN_ERR (or the post is
 * refused), and B, whose rule takes that dmac, gets none of them.
 */
TEST_F_TIMEOUT(raw, bad_frame_lengths_are_refused, CASE_TIMEOUT)
{
	struct frame hdr = self->base, big = self->base;
	static const uint32_t short_len[] = { 10, ETH_HLEN - 1 };
	char what[64];
	struct rule r;

	rule_for(&r, &self->base, 0, 0);
	add_flow(_metadata, self, &self->q[B], &r);
	hdr.ip = 0;
	hdr.len = ETH_HLEN;
	for (size_t i = 0; i < sizeof(short_len) / sizeof(short_len[0]); i++) {
		snprintf(what, sizeof(what), "a %u-byte frame", short_len[i]);
		expect_send_refused(_metadata, self, &hdr, short_len[i],
				    IBV_WR_SEND, IBV_WC_LOC_LEN_ERR, what);
	}
	big.ip = 0;
	big.len = self->mtu + FRAME_OVERHEAD + 1;
	snprintf(what, sizeof(what), "a frame of MTU %u + 19 bytes", self->mtu);
	expect_send_refused(_metadata, self, &big, big.len, IBV_WR_SEND,
			    IBV_WC_LOC_LEN_ERR, what);

	send_frame(_metadata, &self->q[A], &self->base);
	expect_frame(_metadata, &self->q[B], &self->base,
		     "B, which must not have had the refused frames");
}

/*
 * SEND is a raw packet QP's only opcode: SEND_WITH_IMM and RDMA_WRITE are
 * refused at the post or complete IBV_WC_LOC_QP_OP_ERR, and send nothing.
 */
TEST_F_TIMEOUT(raw, only_send_is_allowed, CASE_TIMEOUT)
{
	static const struct {
		enum ibv_wr_opcode op;
		const char *what;
	} op[] = {
		{ IBV_WR_SEND_WITH_IMM, "SEND_WITH_IMM" },
		{ IBV_WR_RDMA_WRITE, "RDMA_WRITE" },
	};
	struct rule r;

	rule_for(&r, &self->base, 0, 0);
	add_flow(_metadata, self, &self->q[B], &r);
	for (size_t i = 0; i < sizeof(op) / sizeof(op[0]); i++)
		expect_send_refused(_metadata, self, &self->base,
				    self->base.len, op[i].op,
				    IBV_WC_LOC_QP_OP_ERR, op[i].what);
	send_frame(_metadata, &self->q[A], &self->base);
	expect_frame(_metadata, &self->q[B], &self->base,
		     "B, which must not have had the refused WRs' frames");
}

/*
 * 64 rules fit in the device (nothing else in the guest holds any), a
 * 65th does not; the 64th steers, and destroying one makes room again.
 */
TEST_F_TIMEOUT(raw, device_holds_64_rules, CASE_TIMEOUT)
{
	struct rawq *b = &self->q[B];
	struct frame f = self->base;
	struct ibv_flow *first = NULL;
	struct rule r;
	int err;

	for (int i = 0; i < RULES_MAX; i++) {
		struct ibv_flow *fl;

		f.dmac[5] = i;
		rule_for(&r, &f, 0, 0);
		fl = add_flow(_metadata, self, b, &r);
		if (!first)
			first = fl;
	}
	f.dmac[5] = RULES_MAX;
	rule_for(&r, &f, 0, 0);
	err = flow_refused(b->qp, &r);
	EXPECT_NE(0, err) TH_LOG("rule %d was created", RULES_MAX + 1);
	TH_LOG("rule %d: %s", RULES_MAX + 1, strerror(err));

	f.dmac[5] = RULES_MAX - 1;
	send_frame(_metadata, &self->q[A], &f);
	expect_frame(_metadata, b, &f, "B (through rule 64)");

	del_flow(_metadata, self, first);
	f.dmac[5] = RULES_MAX;
	rule_for(&r, &f, 0, 0);
	add_flow(_metadata, self, b, &r);
	f.seed++;
	send_frame(_metadata, &self->q[A], &f);
	expect_frame(_metadata, b, &f, "B (through the rule made in the room)");
}

/* ---- receive-side scaling --------------------------------------------- */

/*
 * The Toeplitz hash of in[0..len), from its definition: for each input bit
 * set, XOR in the 32 key bits that start at that bit's position.
 */
static uint32_t toeplitz(const uint8_t *key, const uint8_t *in, size_t len)
{
	uint32_t hash = 0;

	for (size_t bit = 0; bit < len * 8; bit++) {
		uint32_t window = 0;

		if (!(in[bit / 8] & (0x80 >> bit % 8)))
			continue;
		for (size_t k = 0; k < 32; k++) {
			size_t kb = bit + k;

			window = window << 1 |
				 ((key[kb / 8] >> (7 - kb % 8)) & 1);
		}
		hash ^= window;
	}
	return hash;
}

/* The WQ of r the device must pick for IPv4 / UDP frame f (all 4 fields). */
static int rss_pick(const struct rss *r, const struct frame *f)
{
	uint8_t in[12];

	memcpy(in, &f->src.s6_addr[12], 4);
	memcpy(in + 4, &f->dst.s6_addr[12], 4);
	put16(in + 8, f->sport);
	put16(in + 10, f->dport);
	return toeplitz(r->key, in, sizeof(in)) & (RSS_WQS - 1);
}

static uint8_t *rss_slot(struct rss *r, int wq, uint64_t wr_id)
{
	return r->buf + ((size_t)wq * SLOTS + wr_id % SLOTS) * SLOT_LEN;
}

static int rss_post_recv(struct rss *r, int wq, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rss_slot(r, wq, wr_id),
			       .length = SLOT_LEN, .lkey = r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_wq_recv(r->wq[wq], &wr, &bad);
}

static int wq_to(struct ibv_wq *wq, enum ibv_wq_state state)
{
	struct ibv_wq_attr a = { .attr_mask = IBV_WQ_ATTR_STATE,
				 .wq_state = state };

	return ibv_modify_wq(wq, &a);
}

/* r's CQ, buffers and WQs, in RDY, each with SLOTS receives posted. */
static void rss_open_wqs(struct __test_metadata *_metadata,
			 FIXTURE_DATA(raw) *self, struct rss *r)
{
	size_t len = (size_t)RSS_WQS * SLOTS * SLOT_LEN;

	r->cq = ibv_create_cq(self->ctx, RSS_WQS * SLOTS, NULL, NULL, 0);
	r->buf = aligned_alloc(4096, len);
	ASSERT_TRUE(r->cq && r->buf);
	r->mr = ibv_reg_mr(self->pd, r->buf, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, r->mr);
	for (int i = 0; i < RSS_WQS; i++) {
		struct ibv_wq_init_attr wa = {
			.wq_type = IBV_WQT_RQ, .max_wr = SLOTS, .max_sge = 1,
			.pd = self->pd, .cq = r->cq,
		};

		r->wq[i] = ibv_create_wq(self->ctx, &wa);
		ASSERT_NE(NULL, r->wq[i]) TH_LOG("ibv_create_wq %d: %s", i,
						 strerror(errno));
		EXPECT_LE(SLOTS, wa.max_wr);
		EXPECT_EQ(IBV_WQS_RESET, r->wq[i]->state);
		ASSERT_EQ(0, wq_to(r->wq[i], IBV_WQS_RDY));
		for (int j = 0; j < SLOTS; j++)
			ASSERT_EQ(0, rss_post_recv(r, i, j));
	}
}

static struct ibv_rwq_ind_table *rss_table(FIXTURE_DATA(raw) *self,
					   struct rss *r, uint32_t log_size)
{
	struct ibv_wq *wqs[1 << (RSS_LOG_MAX + 1)];
	struct ibv_rwq_ind_table_init_attr ta = {
		.log_ind_tbl_size = log_size, .ind_tbl = wqs,
	};

	for (uint32_t i = 0; i < 1U << log_size; i++)
		wqs[i] = r->wq[i % RSS_WQS];
	return ibv_create_rwq_ind_table(self->ctx, &ta);
}

static struct ibv_qp *rss_qp(FIXTURE_DATA(raw) *self, struct rss *r,
			     uint8_t function, uint8_t key_len,
			     uint64_t fields)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = self->pd,
		.rwq_ind_tbl = r->tbl,
		.rx_hash_conf = { .rx_hash_function = function,
				  .rx_hash_key_len = key_len,
				  .rx_hash_key = r->key,
				  .rx_hash_fields_mask = fields },
	};

	return ibv_create_qp_ex(self->ctx, &ia);
}

#define RSS_FIELDS (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | \
		    IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)

/* WQs, table and RSS QP of self->rss, with a random key. */
static void rss_open(struct __test_metadata *_metadata,
		     FIXTURE_DATA(raw) *self)
{
	struct rss *r = &self->rss;

	for (int i = 0; i < RSS_KEY_LEN; i += 8) {
		uint64_t v = rand64();

		memcpy(r->key + i, &v, 8);
	}
	rss_open_wqs(_metadata, self, r);
	r->tbl = rss_table(self, r, RSS_LOG);
	ASSERT_NE(NULL, r->tbl) TH_LOG("ibv_create_rwq_ind_table: %s",
				       strerror(errno));
	r->qp = rss_qp(self, r, IBV_RX_HASH_FUNC_TOEPLITZ, RSS_KEY_LEN,
		       RSS_FIELDS);
	ASSERT_NE(NULL, r->qp) TH_LOG("RSS QP: %s", strerror(errno));
}

static void rss_close(struct rss *r)
{
	if (r->qp)
		ibv_destroy_qp(r->qp);
	if (r->tbl)
		ibv_destroy_rwq_ind_table(r->tbl);
	for (int i = 0; i < RSS_WQS; i++)
		if (r->wq[i])
			ibv_destroy_wq(r->wq[i]);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	free(r->buf);
	*r = (struct rss){ 0 };
}

/* A rule on the RSS QP, destroyed by the fixture. */
static void rss_flow(struct __test_metadata *_metadata,
		     FIXTURE_DATA(raw) *self, const struct frame *f)
{
	struct rule r;
	int i = 0;

	rule_for(&r, f, 0, 0);
	while (i < MAX_FLOWS && self->flow[i])
		i++;
	ASSERT_GT(MAX_FLOWS, i);
	self->flow[i] = ibv_create_flow(self->rss.qp, &r.attr);
	ASSERT_NE(NULL, self->flow[i]) TH_LOG("ibv_create_flow on the RSS QP: %s",
					      strerror(errno));
}

/*
 * 16 IPv4 / UDP frames that differ in source address and port each land
 * whole on the WQ the hash of their addresses and ports picks, in order,
 * and the hash spreads them over more than one WQ.
 */
TEST_F_TIMEOUT(raw, rss_spreads_frames_over_wqs_by_hash, CASE_TIMEOUT)
{
	struct rss *r = &self->rss;
	uint64_t got[RSS_WQS] = { 0 };
	int used = 0;

	rss_open(_metadata, self);
	rss_flow(_metadata, self, &self->base);
	for (int i = 0; i < 16; i++) {
		struct frame f = self->base;
		uint8_t want[SLOT_LEN];
		struct ibv_wc wc;
		int w;

		f.src.s6_addr[15] = 1 + i * 13;
		f.sport = 40000 + i * 101;
		f.seed += i;
		w = rss_pick(r, &f);
		send_frame(_metadata, &self->q[A], &f);
		ASSERT_EQ(1, wait_wc(r->cq, &wc, 1, WAIT_MS))
			TH_LOG("frame %d: nothing received", i);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(IBV_WC_RECV, wc.opcode);
		ASSERT_EQ(r->wq[w]->wq_num, wc.qp_num)
			TH_LOG("frame %d: hash picks WQ %d (%u), it went to %u",
			       i, w, r->wq[w]->wq_num, wc.qp_num);
		ASSERT_EQ(got[w], wc.wr_id);
		ASSERT_EQ(build_frame(&f, want), wc.byte_len);
		ASSERT_EQ(-1, first_diff(rss_slot(r, w, wc.wr_id), want,
					 wc.byte_len));
		got[w]++;
	}
	for (int i = 0; i < RSS_WQS; i++)
		used += got[i] != 0;
	EXPECT_LT(1, used) TH_LOG("all 16 frames hashed to one WQ");
	/* A and the receive QPs without rules got nothing. */
	expect_idle(_metadata, &self->q[B]);
}

/*
 * WQ states: a WQ in RESET takes no receive; RDY -> ERR flushes what is
 * posted; ERR -> RESET -> RDY works again. An RSS QP is not modified and
 * takes no WRs; a WQ in a table is not destroyed; tables larger than the
 * device's, other hash functions, key lengths and fields are refused.
 */
TEST_F_TIMEOUT(raw, rss_objects_follow_the_rules, CASE_TIMEOUT)
{
	struct ibv_wc wc[SLOTS];
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_send_wr swr = { 0 }, *sbad;
	struct rss *r = &self->rss;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_rwq_ind_table *big;
	struct ibv_qp *qp;
	int n = 0;

	rss_open(_metadata, self);

	ASSERT_EQ(0, wq_to(r->wq[0], IBV_WQS_ERR));
	while (n < SLOTS) {
		int k = wait_wc(r->cq, wc + n, SLOTS - n, WAIT_MS);

		ASSERT_LT(0, k) TH_LOG("%d of %d receives flushed", n, SLOTS);
		n += k;
	}
	for (int i = 0; i < SLOTS; i++) {
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
		EXPECT_EQ(r->wq[0]->wq_num, wc[i].qp_num);
		EXPECT_EQ(i, wc[i].wr_id);
	}
	ASSERT_EQ(0, wq_to(r->wq[0], IBV_WQS_RESET));
	EXPECT_EQ(EINVAL, rss_post_recv(r, 0, 0));
	ASSERT_EQ(0, wq_to(r->wq[0], IBV_WQS_RDY));
	EXPECT_EQ(0, rss_post_recv(r, 0, 0));

	EXPECT_NE(0, ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PORT));
	EXPECT_NE(0, ibv_post_recv(r->qp, &rwr, &rbad));
	EXPECT_NE(0, ibv_post_send(r->qp, &swr, &sbad));
	EXPECT_EQ(EBUSY, ibv_destroy_wq(r->wq[1]));

	big = rss_table(self, r, RSS_LOG_MAX + 1);
	EXPECT_EQ(NULL, big) TH_LOG("a table of %d WQs was created",
				    1 << (RSS_LOG_MAX + 1));
	if (big)
		ibv_destroy_rwq_ind_table(big);
	qp = rss_qp(self, r, IBV_RX_HASH_FUNC_TOEPLITZ, RSS_KEY_LEN / 2,
		    RSS_FIELDS);
	EXPECT_EQ(NULL, qp) TH_LOG("an RSS QP with a 20-byte key");
	if (qp)
		ibv_destroy_qp(qp);
	qp = rss_qp(self, r, IBV_RX_HASH_FUNC_TOEPLITZ, RSS_KEY_LEN,
		    IBV_RX_HASH_INNER | IBV_RX_HASH_SRC_IPV4);
	EXPECT_EQ(NULL, qp) TH_LOG("an RSS QP on inner headers");
	if (qp)
		ibv_destroy_qp(qp);
	qp = rss_qp(self, r, 0, RSS_KEY_LEN, RSS_FIELDS);
	EXPECT_EQ(NULL, qp) TH_LOG("an RSS QP without a hash function");
	if (qp)
		ibv_destroy_qp(qp);
}

/*
 * A receive WQE whose key does not allow the write, on the WQ the hash
 * picks: the frame completes it IBV_WC_LOC_PROT_ERR and the WQ is in ERR,
 * where what is posted next is flushed; RESET -> RDY and it receives the
 * same frame again.
 */
TEST_F_TIMEOUT(raw, wq_receive_error_puts_it_in_err, CASE_TIMEOUT)
{
	struct rss *r = &self->rss;
	struct frame f = self->base;
	uint8_t want[SLOT_LEN];
	struct ibv_recv_wr wr, *bad;
	struct ibv_wc wc;
	struct ibv_mr *ro;
	struct ibv_sge sge;
	int w;

	rss_open(_metadata, self);
	rss_flow(_metadata, self, &self->base);
	w = rss_pick(r, &f);
	/* Drop the WQ's good WQEs, then give it one it may not write. */
	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RESET));
	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RDY));
	ro = ibv_reg_mr(self->pd, rss_slot(r, w, 0), SLOT_LEN, 0);
	ASSERT_NE(NULL, ro);
	sge = (struct ibv_sge){ .addr = (uintptr_t)rss_slot(r, w, 0),
				.length = SLOT_LEN, .lkey = ro->lkey };
	wr = (struct ibv_recv_wr){ .wr_id = 77, .sg_list = &sge, .num_sge = 1 };
	ASSERT_EQ(0, ibv_post_wq_recv(r->wq[w], &wr, &bad));

	send_frame(_metadata, &self->q[A], &f);
	ASSERT_EQ(1, wait_wc(r->cq, &wc, 1, WAIT_MS));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status)
		TH_LOG("completed %s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(77, wc.wr_id);
	EXPECT_EQ(r->wq[w]->wq_num, wc.qp_num);

	ASSERT_EQ(0, rss_post_recv(r, w, 78));
	ASSERT_EQ(1, wait_wc(r->cq, &wc, 1, WAIT_MS)) TH_LOG("no flush");
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
	EXPECT_EQ(78, wc.wr_id);

	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RESET));
	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RDY));
	ASSERT_EQ(0, rss_post_recv(r, w, 0));
	send_frame(_metadata, &self->q[A], &f);
	ASSERT_EQ(1, wait_wc(r->cq, &wc, 1, WAIT_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(r->wq[w]->wq_num, wc.qp_num);
	EXPECT_EQ(build_frame(&f, want), wc.byte_len);
	ibv_dereg_mr(ro);
}

/*
 * A WQ's receive buffers in an on-demand MR: the first frame finds them
 * unmapped and is dropped while the kernel answers the device's page
 * fault (a raw frame is not sent again); a later one lands whole.
 */
TEST_F_TIMEOUT(raw, wq_receives_into_on_demand_memory, CASE_TIMEOUT)
{
	struct rss *r = &self->rss;
	struct frame f = self->base;
	uint8_t want[SLOT_LEN], *buf;
	struct ibv_recv_wr wr, *bad;
	struct ibv_wc wc = { 0 };
	struct ibv_mr *odp;
	struct ibv_sge sge;
	int w, tries, got = 0;

	rss_open(_metadata, self);
	rss_flow(_metadata, self, &self->base);
	w = rss_pick(r, &f);
	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RESET));
	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RDY));
	buf = aligned_alloc(4096, SLOT_LEN);
	ASSERT_NE(NULL, buf);
	odp = ibv_reg_mr(self->pd, buf, SLOT_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	ASSERT_NE(NULL, odp) TH_LOG("ODP MR: %s", strerror(errno));
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = SLOT_LEN,
				.lkey = odp->lkey };
	wr = (struct ibv_recv_wr){ .wr_id = 5, .sg_list = &sge, .num_sge = 1 };
	ASSERT_EQ(0, ibv_post_wq_recv(r->wq[w], &wr, &bad));

	for (tries = 0; tries < 20 && !got; tries++) {
		f.seed = self->base.seed + tries;
		send_frame(_metadata, &self->q[A], &f);
		got = wait_wc(r->cq, &wc, 1, 2000);
	}
	ASSERT_EQ(1, got) TH_LOG("no frame landed in %d tries", tries);
	TH_LOG("landed on try %d", tries);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("completed %s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(5, wc.wr_id);
	EXPECT_EQ(r->wq[w]->wq_num, wc.qp_num);
	ASSERT_EQ(build_frame(&f, want), wc.byte_len);
	EXPECT_EQ(-1, first_diff(buf, want, wc.byte_len));
	ASSERT_EQ(0, wq_to(r->wq[w], IBV_WQS_RESET));
	ibv_dereg_mr(odp);
	free(buf);
}

TEST_HARNESS_MAIN
