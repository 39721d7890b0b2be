/*
 * vrnic core: raw packet QPs and flow steering (uapi "Raw packet QPs",
 * "Flow steering"). A raw send puts the WQE's frame on the wire unchanged
 * (SGEs and inline), completes SEND, and refuses other opcodes and frames
 * of the wrong size; CREATE_FLOW / DESTROY_FLOW statuses and limits, rules
 * going with their QP and with device reset; frames from the wire steered
 * by each field of the key (MACs, EtherType behind a VLAN tag, IPv4/IPv6
 * addresses and protocol, TCP/UDP ports, none in a later IPv4 fragment),
 * the best priority and then the oldest rule winning, drop rules, frames
 * no rule takes left to the Ethernet function, a receive too long for its
 * WQE (LOC_LEN_ERR, QP stays up), no WQE and a QP not ready (counted
 * drops); a raw send looping back to another QP's rule but never to the
 * sender's own. RSS: the Toeplitz hash against the RSS specification's
 * verification table; frames spread over receive-only QPs as the hash
 * says; CREATE_RSS checks, limits, the references that keep its QPs, its
 * rules going with it and with device reset; a receive-only QP.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define RAW VRNIC_QP_TYPE_RAW_PACKET
#define BUF 4096

/* A multicast MAC (the MAC filter passes it) and a locally administered one. */
static const uint8_t dmac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t smac[6] = { 0x02, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };

typedef struct Frame {
    uint8_t b[256];
    uint32_t len;
} Frame;

/*
 * Ethernet (optionally 802.1Q-tagged) + IPv4 or IPv6 + a UDP/TCP header's
 * ports + 32 bytes of pattern. proto 0: no L4 header.
 */
static void frame_ip(Frame *fr, bool v6, uint8_t proto, uint16_t sport,
                     uint16_t dport, uint8_t last_ip_byte, uint16_t vlan)
{
    uint8_t *p = fr->b;
    uint32_t l3;

    memset(fr, 0, sizeof(*fr));
    memcpy(p, dmac, 6);
    memcpy(p + 6, smac, 6);
    l3 = 12;
    if (vlan) {
        stw_be_p(p + 12, 0x8100);
        stw_be_p(p + 14, vlan);
        l3 += 4;
    }
    stw_be_p(p + l3, v6 ? 0x86dd : 0x0800);
    l3 += 2;
    if (v6) {
        p[l3] = 0x60;
        p[l3 + 6] = proto;
        p[l3 + 7] = 64;
        p[l3 + 8] = 0xa0;               /* a0a1::... source */
        p[l3 + 23] = last_ip_byte;
        p[l3 + 24] = 0xb0;              /* b0b1::... destination */
        p[l3 + 39] = 2;
        fr->len = l3 + 40;
    } else {
        p[l3] = 0x45;
        p[l3 + 8] = 64;
        p[l3 + 9] = proto;
        p[l3 + 12] = 1;                 /* 1.1.1.x -> 2.2.2.2 */
        p[l3 + 13] = 1;
        p[l3 + 14] = 1;
        p[l3 + 15] = last_ip_byte;
        memset(p + l3 + 16, 2, 4);
        fr->len = l3 + 20;
    }
    if (proto) {
        stw_be_p(p + fr->len, sport);
        stw_be_p(p + fr->len + 2, dport);
        fr->len += proto == IP_PROTO_TCP ? 20 : 8;
    }
    for (unsigned i = 0; i < 32; i++) {
        p[fr->len++] = (uint8_t)(0xa5 ^ i);
    }
}

static void frame_udp4(Frame *fr)
{
    frame_ip(fr, false, IP_PROTO_UDP, 1234, 5678, 1, 0);
}

/* A raw packet QP of n in RTS (RESET->INIT needs only the port). */
static void raw_qp(Qp *q, Node *n)
{
    qp_new(q, n, RAW, 0);
    if (qp_to_rts(n->f, q->qpn, RAW)) {
        abort();
    }
}

/* CREATE_FLOW: status; *id the flow id. value is masked here. */
static uint8_t flow_add(Node *n, uint32_t qpn, uint16_t prio, uint8_t flags,
                        const struct vrnic_flow_key *value,
                        const struct vrnic_flow_key *mask, uint32_t *id)
{
    AnyCmd c;
    uint8_t *v = (uint8_t *)&c.flow.value;
    const uint8_t *m = (const uint8_t *)mask;
    uint64_t r = 0;
    uint8_t sts;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_FLOW);
    c.flow.qpn = htole32(qpn);
    c.flow.priority = htole16(prio);
    c.flow.flags = flags;
    c.flow.value = *value;
    c.flow.mask = *mask;
    for (size_t i = 0; i < sizeof(*value); i++) {
        v[i] &= m[i];
    }
    sts = run(n->f, &c, &r);
    if (id) {
        *id = r;
    }
    return sts;
}

/* A rule on the destination MAC only. */
static uint32_t flow_dmac(Node *n, uint32_t qpn, uint16_t prio, uint8_t flags)
{
    struct vrnic_flow_key v = {}, m = {};
    uint32_t id;

    memcpy(v.dmac, dmac, 6);
    memset(m.dmac, 0xff, 6);
    if (flow_add(n, qpn, prio, flags, &v, &m, &id)) {
        abort();
    }
    return id;
}

/* A raw send of fr: the frame written to a buffer, one SGE. */
static void send_frame(Qp *q, uint64_t wr_id, const Frame *fr, uint32_t lkey,
                       uint64_t buf)
{
    Sg sg = { buf, fr->len, lkey };

    memcpy(fake_ptr(q->n->f, buf), fr->b, fr->len);
    post_send(q, wr_id, VRNIC_WQE_OP_SEND, 0, &sg, 1, 0, 0, 0, NULL, 0);
    fake_settle(q->n->f);
}

static void recv_one(Qp *q, uint64_t wr_id, uint64_t addr, uint32_t len,
                     uint32_t lkey)
{
    Sg sg = { addr, len, lkey };

    post_recv(q, wr_id, &sg, 1);
}

static void from_wire(Node *n, const Frame *fr)
{
    fake_wire_put(n->f, fr->b, fr->len);
    fake_settle(n->f);
}

static uint64_t stat(Node *n, unsigned i)
{
    return n->f->core.stats.port[i];
}

FIXTURE(raw) {
    Node n;
    Qp a, b;
    uint64_t buf;
    uint32_t lkey;
};

FIXTURE_SETUP(raw)
{
    node_init(&self->n, 1, false);
    raw_qp(&self->a, &self->n);
    raw_qp(&self->b, &self->n);
    self->buf = buf_alloc(&self->n, 4 * BUF);
    self->lkey = mr_any(&self->n, VRNIC_ACCESS_LOCAL_WRITE, self->buf,
                        4 * BUF);
}

FIXTURE_TEARDOWN(raw)
{
    fake_free(self->n.f);
}

/* Receive of fr expected at q: the next receive CQE and the bytes. */
static void expect_rx(struct __test_metadata *_metadata, Node *n, Qp *q,
                      uint64_t wr_id, uint64_t addr, const Frame *fr)
{
    struct vrnic_cqe e;

    ASSERT_TRUE(poll(n, false, &e));
    EXPECT_EQ(wr_id, le64toh(e.wr_id));
    EXPECT_EQ(q->qpn, le32toh(e.qpn));
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(VRNIC_CQE_OP_RECV, e.opcode);
    EXPECT_EQ(fr->len, le32toh(e.byte_len));
    EXPECT_EQ(0, e.flags);
    EXPECT_EQ(0, memcmp(fake_ptr(n->f, addr), fr->b, fr->len));
}

TEST_F(raw, create_and_states)
{
    FakeBus *f = self->n.f;
    struct vrnic_qp_attr a = good_attr();
    uint64_t smem;
    uint32_t srqn = create_srq(f, self->n.pdn, 0, 0, &smem);
    Qp q;

    /* No SRQ for a raw packet QP. */
    ASSERT_NE(0, srqn);
    ASSERT_EQ(0, create_qp(f, RAW, self->n.pdn, self->n.scq, self->n.rcq,
                           srqn, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, last_status(f));
    /* RESET->INIT: the port, and nothing a raw QP does not have. */
    qp_new(&q, &self->n, RAW, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, q.qpn, QS,
                                                 VRNIC_QPS_INIT, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, q.qpn, QS | VRNIC_QP_ATTR_PORT |
                        VRNIC_QP_ATTR_QKEY, VRNIC_QPS_INIT, &a));
    ASSERT_EQ(0, modify_qp(f, q.qpn, QS | VRNIC_QP_ATTR_PORT,
                           VRNIC_QPS_INIT, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, q.qpn, QS | VRNIC_QP_ATTR_AV, VRNIC_QPS_RTR, &a));
    ASSERT_EQ(0, modify_qp(f, q.qpn, QS, VRNIC_QPS_RTR, &a));
    ASSERT_EQ(0, modify_qp(f, q.qpn, QS, VRNIC_QPS_RTS, &a));
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&q));
}

TEST_F(raw, send_puts_the_frame_on_the_wire)
{
    FakeBus *f = self->n.f;
    struct vrnic_send_wqe *h;
    Frame fr;
    uint8_t op;

    frame_udp4(&fr);
    send_frame(&self->a, 7, &fr, self->lkey, self->buf);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(&self->n, true, &op));
    ASSERT_EQ(VRNIC_CQE_OP_SEND, op);
    ASSERT_EQ(1, f->nframes);
    ASSERT_EQ(fr.len, f->frame_len[0]);
    ASSERT_EQ(0, memcmp(f->frames[0], fr.b, fr.len));

    /*
     * Inline (up to the QP's max_inline, 32 bytes): the frame follows the
     * 64-byte header, no UD segment.
     */
    fr.len = 32;
    fr.b[20] ^= 0xff;
    h = sq_slot(&self->a);
    memset(h, 0, 1u << QP_SQ_SHIFT);
    h->wr_id = htole64(8);
    h->opcode = VRNIC_WQE_OP_SEND;
    h->flags = VRNIC_WQE_FLAG_SIGNALED | VRNIC_WQE_FLAG_INLINE;
    h->inline_len = htole32(fr.len);
    memcpy((uint8_t *)h + sizeof(*h), fr.b, fr.len);
    sq_ring(&self->a);
    fake_settle(f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(&self->n, true, NULL));
    ASSERT_EQ(2, f->nframes);
    ASSERT_EQ(0, memcmp(f->frames[1], fr.b, fr.len));
}

TEST_F(raw, sends_of_the_wrong_size_or_opcode_fail)
{
    FakeBus *f = self->n.f;
    Sg sg = { self->buf, VRNIC_ETH_MIN_FRAME - 1, self->lkey };
    Qp q;

    /* Each failure moves the QP to ERR: a fresh QP per case. */
    post_send(&self->a, 1, VRNIC_WQE_OP_SEND, 0, &sg, 1, 0, 0, 0, NULL, 0);
    fake_settle(f);
    ASSERT_EQ(VRNIC_WC_LOC_LEN_ERR, next_status(&self->n, true, NULL));

    raw_qp(&q, &self->n);
    sg.len = f->core.mtu + VRNIC_ETH_FRAME_OVERHEAD + 1;
    post_send(&q, 2, VRNIC_WQE_OP_SEND, 0, &sg, 1, 0, 0, 0, NULL, 0);
    fake_settle(f);
    ASSERT_EQ(VRNIC_WC_LOC_LEN_ERR, next_status(&self->n, true, NULL));

    raw_qp(&q, &self->n);
    sg.len = f->core.mtu + VRNIC_ETH_FRAME_OVERHEAD;
    post_send(&q, 3, VRNIC_WQE_OP_SEND_IMM, 0, &sg, 1, 0, 0, 0, NULL, 0);
    fake_settle(f);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, next_status(&self->n, true, NULL));

    /* The largest frame goes. */
    raw_qp(&q, &self->n);
    post_send(&q, 4, VRNIC_WQE_OP_SEND, 0, &sg, 1, 0, 0, 0, NULL, 0);
    fake_settle(f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(&self->n, true, NULL));
    ASSERT_EQ(1, f->nframes);
    ASSERT_EQ(sg.len, f->frame_len[0]);
}

TEST_F(raw, create_flow_checks_and_limits)
{
    FakeBus *f = self->n.f;
    struct vrnic_flow_key v = {}, m = {};
    Qp rc, c;
    AnyCmd cmd;
    uint32_t id, first = 0;

    qp_new(&rc, &self->n, VRNIC_QP_TYPE_RC, 0);
    memset(m.dmac, 0xff, 6);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, flow_add(&self->n, 999, 0, 0, &v, &m,
                                               NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, flow_add(&self->n, rc.qpn, 0, 0, &v,
                                               &m, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, flow_add(&self->n, self->b.qpn, 0, 2,
                                               &v, &m, NULL));
    m.rsvd1[0] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, flow_add(&self->n, self->b.qpn, 0, 0,
                                               &v, &m, NULL));
    m.rsvd1[0] = 0;
    /* Value bits outside the mask (flow_add masks: write the command). */
    cmd_init(&cmd, VRNIC_AQ_OP_CREATE_FLOW);
    cmd.flow.qpn = htole32(self->b.qpn);
    cmd.flow.mask = m;
    cmd.flow.value.smac[0] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &cmd, NULL));
    ASSERT_EQ(0, f->core.obj.n_flows);

    /* VRNIC_FLOW_MAX rules, then NO_RESOURCES; DESTROY_FLOW frees one. */
    for (unsigned i = 0; i < VRNIC_FLOW_MAX; i++) {
        ASSERT_EQ(0, flow_add(&self->n, self->b.qpn, i, 0, &v, &m, &id));
        ASSERT_TRUE(id >= 1 && id <= VRNIC_FLOW_MAX);
        first = first ? first : id;
    }
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES,
              flow_add(&self->n, self->b.qpn, 0, 0, &v, &m, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DESTROY_FLOW, 0));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              destroy(f, VRNIC_AQ_OP_DESTROY_FLOW, VRNIC_FLOW_MAX + 1));
    ASSERT_EQ(0, destroy(f, VRNIC_AQ_OP_DESTROY_FLOW, first));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              destroy(f, VRNIC_AQ_OP_DESTROY_FLOW, first));
    raw_qp(&c, &self->n);
    ASSERT_EQ(0, flow_add(&self->n, c.qpn, 0, 0, &v, &m, &id));

    /* DESTROY_QP takes the QP's rules; device reset all that are left. */
    ASSERT_EQ(0, destroy(f, VRNIC_AQ_OP_DESTROY_QP, self->b.qpn));
    ASSERT_EQ(1, f->core.obj.n_flows);
    ASSERT_TRUE(f->core.obj.flows[id].live);
    vrnic_core_reset(&f->core);
    ASSERT_EQ(0, f->core.obj.n_flows);
    ASSERT_FALSE(f->core.obj.flows[id].live);
}

TEST_F(raw, wire_frames_steered_by_each_field)
{
    static const struct {
        const char *what;
        bool v6;
        uint8_t proto;
        uint16_t vlan;
    } kinds[] = {
        { "IPv4 UDP", false, IP_PROTO_UDP, 0 },
        { "IPv4 TCP", false, IP_PROTO_TCP, 0 },
        { "IPv6 UDP", true, IP_PROTO_UDP, 0 },
        { "IPv6 TCP behind a VLAN tag", true, IP_PROTO_TCP, 0x0c0c },
    };
    Node *n = &self->n;
    uint64_t rx = self->buf + BUF;
    uint64_t wr = 100;

    for (unsigned k = 0; k < ARRAY_SIZE(kinds); k++) {
        struct vrnic_flow_key v = {}, m = {};
        Frame good, bad;
        uint32_t id;

        TH_LOG("%s", kinds[k].what);
        /* The rule: the frame's own key, every field (but the VLAN) set. */
        frame_ip(&good, kinds[k].v6, kinds[k].proto, 1234, 5678, 1,
                 kinds[k].vlan);
        memcpy(v.dmac, dmac, 6);
        memcpy(v.smac, smac, 6);
        stw_be_p(&v.ethertype, kinds[k].v6 ? 0x86dd : 0x0800);
        if (kinds[k].v6) {
            v.src_ip[0] = 0xa0;
            v.src_ip[15] = 1;
            v.dst_ip[0] = 0xb0;
            v.dst_ip[15] = 2;
        } else {
            v.src_ip[10] = v.src_ip[11] = v.dst_ip[10] = v.dst_ip[11] = 0xff;
            memset(v.src_ip + 12, 1, 4);
            memset(v.dst_ip + 12, 2, 4);
        }
        v.ip_proto = kinds[k].proto;
        stw_be_p(&v.src_port, 1234);
        stw_be_p(&v.dst_port, 5678);
        memset(&m, 0xff, offsetof(struct vrnic_flow_key, rsvd1));
        m.vlan_tci = 0;
        m.rsvd0 = 0;
        ASSERT_EQ(0, flow_add(n, self->b.qpn, 0, 0, &v, &m, &id));

        recv_one(&self->b, wr, rx, BUF, self->lkey);
        from_wire(n, &good);
        expect_rx(_metadata, n, &self->b, wr++, rx, &good);

        /* One field off each time: no receive (the WQE stays posted). */
        recv_one(&self->b, wr, rx, BUF, self->lkey);
        frame_ip(&bad, kinds[k].v6, kinds[k].proto, 1235, 5678, 1,
                 kinds[k].vlan);
        from_wire(n, &bad);
        frame_ip(&bad, kinds[k].v6, kinds[k].proto, 1234, 5679, 1,
                 kinds[k].vlan);
        from_wire(n, &bad);
        frame_ip(&bad, kinds[k].v6, kinds[k].proto, 1234, 5678, 9,
                 kinds[k].vlan);
        from_wire(n, &bad);
        frame_ip(&bad, kinds[k].v6, kinds[k].proto == IP_PROTO_UDP ?
                 IP_PROTO_TCP : IP_PROTO_UDP, 1234, 5678, 1, kinds[k].vlan);
        from_wire(n, &bad);
        frame_ip(&bad, !kinds[k].v6, kinds[k].proto, 1234, 5678, 1,
                 kinds[k].vlan);
        from_wire(n, &bad);
        good.b[0] ^= 0x80;              /* another (multicast) MAC */
        from_wire(n, &good);
        good.b[0] ^= 0x80;
        /* Then the frame itself still arrives, first in the CQ. */
        from_wire(n, &good);
        expect_rx(_metadata, n, &self->b, wr++, rx, &good);
        ASSERT_EQ(0, destroy(n->f, VRNIC_AQ_OP_DESTROY_FLOW, id));
    }
    EXPECT_EQ(2 * ARRAY_SIZE(kinds), stat(n, VRNIC_PORT_STAT_FLOW_RX));
}

TEST_F(raw, no_ports_in_a_later_ipv4_fragment)
{
    struct vrnic_flow_key v = {}, m = {};
    Node *n = &self->n;
    uint64_t rx = self->buf + BUF;
    Frame fr;

    stw_be_p(&v.dst_port, 5678);
    memset(&m.dst_port, 0xff, 2);
    ASSERT_EQ(0, flow_add(n, self->b.qpn, 0, 0, &v, &m, NULL));
    recv_one(&self->b, 1, rx, BUF, self->lkey);
    frame_udp4(&fr);
    stw_be_p(fr.b + 14 + 6, 0x0010);    /* fragment offset 128 bytes */
    from_wire(n, &fr);
    ASSERT_EQ(0, stat(n, VRNIC_PORT_STAT_FLOW_RX));
    stw_be_p(fr.b + 14 + 6, 0x2000);    /* the first: MF set, offset 0 */
    from_wire(n, &fr);
    expect_rx(_metadata, n, &self->b, 1, rx, &fr);
}

TEST_F(raw, best_priority_then_oldest_rule_wins)
{
    Node *n = &self->n;
    uint64_t rx = self->buf + BUF;
    uint32_t older, better, same;
    struct vrnic_cqe e;
    Qp c;
    Frame fr;

    raw_qp(&c, n);
    frame_udp4(&fr);
    older = flow_dmac(n, self->b.qpn, 5, 0);
    same = flow_dmac(n, self->a.qpn, 5, 0);
    better = flow_dmac(n, c.qpn, 4, 0);
    for (unsigned i = 0; i < 3; i++) {
        recv_one(&self->a, 10 + i, rx + i * 512, 512, self->lkey);
        recv_one(&self->b, 20 + i, rx + BUF + i * 512, 512, self->lkey);
        recv_one(&c, 30 + i, rx + 2 * BUF + i * 512, 512, self->lkey);
    }
    from_wire(n, &fr);
    ASSERT_TRUE(poll(n, false, &e));
    ASSERT_EQ(c.qpn, le32toh(e.qpn));
    ASSERT_EQ(0, destroy(n->f, VRNIC_AQ_OP_DESTROY_FLOW, better));
    from_wire(n, &fr);
    ASSERT_TRUE(poll(n, false, &e));
    ASSERT_EQ(self->b.qpn, le32toh(e.qpn));     /* the older of the two */
    ASSERT_EQ(0, destroy(n->f, VRNIC_AQ_OP_DESTROY_FLOW, older));
    from_wire(n, &fr);
    ASSERT_TRUE(poll(n, false, &e));
    ASSERT_EQ(self->a.qpn, le32toh(e.qpn));
    ASSERT_FALSE(poll(n, false, &e));
    ASSERT_EQ(0, destroy(n->f, VRNIC_AQ_OP_DESTROY_FLOW, same));
}

TEST_F(raw, drop_rules_and_frames_no_rule_takes)
{
    Node *n = &self->n;
    uint64_t rx = self->buf + BUF;
    uint64_t filtered = n->f->core.stats.eth_rx_filtered;
    struct vrnic_flow_key v = {}, m = {};
    uint32_t drop;
    struct vrnic_cqe e;
    Frame fr;

    flow_dmac(n, self->b.qpn, 1, 0);
    drop = flow_dmac(n, self->a.qpn, 0, VRNIC_FLOW_F_DROP);
    recv_one(&self->a, 1, rx, BUF, self->lkey);
    recv_one(&self->b, 2, rx + BUF, BUF, self->lkey);
    frame_udp4(&fr);
    from_wire(n, &fr);
    ASSERT_FALSE(poll(n, false, &e));
    ASSERT_EQ(1, stat(n, VRNIC_PORT_STAT_FLOW_DROPS));
    ASSERT_EQ(0, destroy(n->f, VRNIC_AQ_OP_DESTROY_FLOW, drop));
    from_wire(n, &fr);
    expect_rx(_metadata, n, &self->b, 2, rx + BUF, &fr);

    /*
     * A unicast frame to a MAC not the port's, no rule for it: not
     * steered, and the MAC filter keeps it from the Ethernet ring.
     */
    fr.b[0] = 0x02;
    from_wire(n, &fr);
    ASSERT_FALSE(poll(n, false, &e));
    ASSERT_EQ(filtered + 1, n->f->core.stats.eth_rx_filtered);
    /* A rule for that MAC takes it, the filter notwithstanding. */
    memcpy(v.dmac, fr.b, 6);
    memset(m.dmac, 0xff, 6);
    ASSERT_EQ(0, flow_add(n, self->b.qpn, 0, 0, &v, &m, NULL));
    recv_one(&self->b, 3, rx + BUF, BUF, self->lkey);
    from_wire(n, &fr);
    expect_rx(_metadata, n, &self->b, 3, rx + BUF, &fr);
    ASSERT_EQ(filtered + 1, n->f->core.stats.eth_rx_filtered);
}

TEST_F(raw, receive_errors)
{
    Node *n = &self->n;
    uint64_t rx = self->buf + BUF;
    struct vrnic_qp_attr a = good_attr();
    struct vrnic_cqe e;
    uint32_t bflow;
    Frame fr;
    Qp c;

    frame_udp4(&fr);
    bflow = flow_dmac(n, self->b.qpn, 0, 0);
    /* No receive WQE: dropped and counted. */
    from_wire(n, &fr);
    ASSERT_EQ(1, stat(n, VRNIC_PORT_STAT_FLOW_DROPS));
    /* Too long for the WQE: LOC_LEN_ERR, the QP stays up. */
    recv_one(&self->b, 1, rx, fr.len - 1, self->lkey);
    from_wire(n, &fr);
    ASSERT_TRUE(poll(n, false, &e));
    ASSERT_EQ(VRNIC_WC_LOC_LEN_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&self->b));
    recv_one(&self->b, 2, rx, fr.len, self->lkey);
    from_wire(n, &fr);
    expect_rx(_metadata, n, &self->b, 2, rx, &fr);
    /* A key without LOCAL_WRITE: LOC_PROT_ERR, and the QP goes to ERR. */
    recv_one(&self->b, 3, rx, fr.len,
             mr_any(n, VRNIC_ACCESS_REMOTE_READ, rx, BUF));
    from_wire(n, &fr);
    ASSERT_TRUE(poll(n, false, &e));
    ASSERT_EQ(VRNIC_WC_LOC_PROT_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->b));

    /* A QP in INIT does not receive yet. */
    ASSERT_EQ(0, destroy(n->f, VRNIC_AQ_OP_DESTROY_FLOW, bflow));
    qp_new(&c, n, RAW, 0);
    ASSERT_EQ(0, modify_qp(n->f, c.qpn, QS | VRNIC_QP_ATTR_PORT,
                           VRNIC_QPS_INIT, &a));
    flow_dmac(n, c.qpn, 0, 0);
    recv_one(&c, 4, rx, BUF, self->lkey);
    from_wire(n, &fr);
    ASSERT_EQ(2, stat(n, VRNIC_PORT_STAT_FLOW_DROPS));
    while (poll(n, false, &e)) {
        ASSERT_NE(c.qpn, le32toh(e.qpn));       /* flushes of b only */
    }
    /* In RTR it does. */
    ASSERT_EQ(0, modify_qp(n->f, c.qpn, QS, VRNIC_QPS_RTR, &a));
    from_wire(n, &fr);
    expect_rx(_metadata, n, &c, 4, rx, &fr);
}

TEST_F(raw, sends_loop_back_to_other_qps_rules_only)
{
    FakeBus *f = self->n.f;
    Node *n = &self->n;
    uint64_t rx = self->buf + BUF;
    struct vrnic_cqe e;
    Frame fr;

    frame_udp4(&fr);
    flow_dmac(n, self->a.qpn, 0, 0);    /* the sender's own: never */
    flow_dmac(n, self->b.qpn, 1, 0);
    recv_one(&self->a, 1, rx, BUF, self->lkey);
    recv_one(&self->b, 2, rx + BUF, BUF, self->lkey);
    send_frame(&self->a, 3, &fr, self->lkey, self->buf);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(n, true, NULL));
    expect_rx(_metadata, n, &self->b, 2, rx + BUF, &fr);
    ASSERT_FALSE(poll(n, false, &e));
    /* ... and it went on the wire as well. */
    ASSERT_EQ(1, f->nframes);
    ASSERT_EQ(0, memcmp(f->frames[0], fr.b, fr.len));
    /* b's send meets a's rule, which wins for it. */
    send_frame(&self->b, 4, &fr, self->lkey, self->buf);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(n, true, NULL));
    expect_rx(_metadata, n, &self->a, 1, rx, &fr);
}

/* ---- receive-side scaling (uapi "Receive-side scaling") ---------------- */

/* A receive-only raw packet QP (a WQ) of n, in RTR. */
static void rx_only_qp(Qp *q, Node *n)
{
    struct vrnic_qp_attr a = good_attr();
    uint64_t mem = obj_alloc(n->f, QP_MEM_LEN, 4096);
    AnyCmd c;
    uint64_t r;

    qp_cmd(&c, RAW, n->pdn, n->scq, n->rcq, 0, 0, mem);
    c.qp.sq_log_depth = 0;
    c.qp.sq_wqe_shift = 0;
    c.qp.max_send_sge = 0;
    c.qp.max_inline = 0;
    if (run(n->f, &c, &r)) {
        abort();
    }
    *q = (Qp) { .n = n, .qpn = r, .mem = mem, .type = RAW };
    if (modify_qp(n->f, q->qpn, VRNIC_QP_ATTR_STATE | VRNIC_QP_ATTR_PORT,
                  VRNIC_QPS_INIT, &a) ||
        modify_qp(n->f, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_RTR, NULL)) {
        abort();
    }
}

/* CREATE_RSS over qpns[0 .. 2^log_size - 1]: status, *rssn the number. */
static uint8_t rss_add(Node *n, uint8_t log_size, uint16_t fields,
                       const uint8_t *key, const uint32_t *qpns,
                       uint32_t *rssn)
{
    AnyCmd c;
    uint64_t r = 0;
    uint8_t sts;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_RSS);
    c.rss.fields = htole16(fields);
    c.rss.log_size = log_size;
    memcpy(c.rss.key, key, VRNIC_RSS_KEY_LEN);
    for (uint32_t i = 0; i < (1u << log_size) && i < VRNIC_RSS_TABLE_MAX; i++) {
        c.rss.qpn[i] = htole32(qpns[i]);
    }
    sts = run(n->f, &c, &r);
    if (rssn) {
        *rssn = r;
    }
    return sts;
}

/* The verification key of Microsoft's RSS specification. */
static const uint8_t ms_key[VRNIC_RSS_KEY_LEN] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
    0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
    0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* The specification's IPv4 verification table. */
TEST(rss_hash_matches_the_specification)
{
    static const struct {
        uint8_t dst[4], src[4];
        uint16_t dport, sport;
        uint32_t ip, tcp;
    } v[] = {
        { { 161, 142, 100, 80 }, { 66, 9, 149, 187 }, 1766, 2794,
          0x323e8fc2, 0x51ccc178 },
        { { 65, 69, 140, 83 }, { 199, 92, 111, 2 }, 4739, 14230,
          0xd718262a, 0xc626b0ea },
        { { 12, 22, 207, 184 }, { 24, 19, 198, 95 }, 38024, 12898,
          0xd2d0a5de, 0x5c2b394a },
        { { 209, 142, 163, 6 }, { 38, 27, 205, 30 }, 2217, 48228,
          0x82989176, 0xafc7327f },
        { { 202, 188, 127, 2 }, { 153, 39, 163, 191 }, 1303, 44251,
          0x5d1809c5, 0x10e828a2 },
    };
    const uint16_t ip = VRNIC_RSS_F_SRC_IPV4 | VRNIC_RSS_F_DST_IPV4;
    const uint16_t tcp = VRNIC_RSS_F_SRC_PORT_TCP | VRNIC_RSS_F_DST_PORT_TCP;

    for (unsigned i = 0; i < ARRAY_SIZE(v); i++) {
        VrnicFrameKey f = { .l3 = 4, .ports = true };

        memcpy(f.key.src_ip + 12, v[i].src, 4);
        memcpy(f.key.dst_ip + 12, v[i].dst, 4);
        f.key.ip_proto = IP_PROTO_TCP;
        stw_be_p(&f.key.src_port, v[i].sport);
        stw_be_p(&f.key.dst_port, v[i].dport);
        EXPECT_EQ(v[i].ip, vrnic_rss_hash(ms_key, ip, &f));
        EXPECT_EQ(v[i].tcp, vrnic_rss_hash(ms_key, ip | tcp, &f));
        /* UDP port bits select nothing in a TCP segment. */
        EXPECT_EQ(v[i].ip, vrnic_rss_hash(ms_key, ip | (tcp << 2), &f));
        /* Nor do IPv6 bits in an IPv4 packet, nor ports it lacks. */
        EXPECT_EQ(0, vrnic_rss_hash(ms_key, VRNIC_RSS_F_SRC_IPV6, &f));
        /* A fragment, even with its ports, hashes on the addresses. */
        f.frag = true;
        EXPECT_EQ(v[i].ip, vrnic_rss_hash(ms_key, ip | tcp, &f));
        f.frag = false;
        f.ports = false;
        EXPECT_EQ(v[i].ip, vrnic_rss_hash(ms_key, ip | tcp, &f));
    }
}

TEST_F(raw, rss_spreads_frames_by_hash)
{
    Node *n = &self->n;
    const uint16_t fields = VRNIC_RSS_F_SRC_IPV4 | VRNIC_RSS_F_DST_IPV4 |
                            VRNIC_RSS_F_SRC_PORT_UDP | VRNIC_RSS_F_DST_PORT_UDP;
    uint32_t qpns[4], rssn, got[4] = {};
    struct vrnic_cqe e;
    Frame other;
    Qp wq[4];

    for (unsigned i = 0; i < 4; i++) {
        rx_only_qp(&wq[i], n);
        qpns[i] = wq[i].qpn;
        for (unsigned j = 0; j < 8; j++) {
            recv_one(&wq[i], i << 8 | j, self->buf + (i * 8 + j) * 128, 128,
                     self->lkey);
        }
    }
    ASSERT_EQ(0, rss_add(n, 2, fields, ms_key, qpns, &rssn));
    ASSERT_EQ(VRNIC_RSS_NUM_BASE, rssn & ~(uint32_t)(VRNIC_RSS_MAX - 1));
    flow_dmac(n, rssn, 0, 0);

    for (unsigned i = 0; i < 16; i++) {
        VrnicFrameKey f = { .l3 = 4, .ports = true };
        uint32_t want;
        Frame fr;

        frame_ip(&fr, false, IP_PROTO_UDP, 1000 + i * 7, 5678, i, 0);
        memcpy(f.key.src_ip + 12, fr.b + 14 + 12, 4);
        memcpy(f.key.dst_ip + 12, fr.b + 14 + 16, 4);
        f.key.ip_proto = IP_PROTO_UDP;
        memcpy(&f.key.src_port, fr.b + 34, 2);
        memcpy(&f.key.dst_port, fr.b + 36, 2);
        want = qpns[vrnic_rss_hash(ms_key, fields, &f) & 3];
        from_wire(n, &fr);
        ASSERT_TRUE(poll(n, false, &e));
        ASSERT_EQ(want, le32toh(e.qpn));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(fr.len, le32toh(e.byte_len));
        got[(le64toh(e.wr_id) >> 8) & 3]++;
    }
    /* The hash really spreads: more than one queue got frames. */
    EXPECT_TRUE((got[0] != 0) + (got[1] != 0) + (got[2] != 0) +
                (got[3] != 0) > 1);
    EXPECT_EQ(16, stat(n, VRNIC_PORT_STAT_FLOW_RX));

    /*
     * The two fragments of one datagram (the first with its UDP ports)
     * reach one queue: the one of the addresses alone.
     */
    for (unsigned i = 0; i < 2; i++) {
        VrnicFrameKey f = { .l3 = 4 };

        frame_ip(&other, false, IP_PROTO_UDP, 4242, 5678, 99, 0);
        stw_be_p(other.b + 14 + 6, i ? 185 : IP_MF);
        memcpy(f.key.src_ip + 12, other.b + 14 + 12, 4);
        memcpy(f.key.dst_ip + 12, other.b + 14 + 16, 4);
        from_wire(n, &other);
        ASSERT_TRUE(poll(n, false, &e));
        EXPECT_EQ(qpns[vrnic_rss_hash(ms_key, fields, &f) & 3],
                  le32toh(e.qpn)) {
            TH_LOG("fragment %u went to qpn %u", i, le32toh(e.qpn));
        }
    }

    /* A non-IP frame has none of the fields: hash 0, the first queue. */
    memset(&other, 0, sizeof(other));
    memcpy(other.b, dmac, 6);
    stw_be_p(other.b + 12, 0x88b5);
    other.len = 60;
    from_wire(n, &other);
    ASSERT_TRUE(poll(n, false, &e));
    EXPECT_EQ(qpns[0], le32toh(e.qpn));
}

TEST_F(raw, rss_create_checks_references_and_limits)
{
    FakeBus *f = self->n.f;
    Node *n = &self->n;
    uint32_t qpns[VRNIC_RSS_TABLE_MAX], rssn, id, first = 0;
    struct vrnic_flow_key v = {}, m = {};
    AnyCmd c;
    Qp wq, rc;

    rx_only_qp(&wq, n);
    qp_new(&rc, n, VRNIC_QP_TYPE_RC, 0);
    for (unsigned i = 0; i < VRNIC_RSS_TABLE_MAX; i++) {
        qpns[i] = wq.qpn;
    }
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              rss_add(n, VRNIC_RSS_LOG_TABLE_MAX + 1, 1, ms_key, qpns, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, rss_add(n, 1, 0, ms_key, qpns, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              rss_add(n, 1, VRNIC_RSS_F_ALL + 1, ms_key, qpns, NULL));
    qpns[1] = 999;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, rss_add(n, 1, 1, ms_key, qpns, NULL));
    qpns[1] = rc.qpn;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, rss_add(n, 1, 1, ms_key, qpns, NULL));
    qpns[1] = self->a.qpn;      /* a raw packet QP with an SQ */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, rss_add(n, 1, 1, ms_key, qpns, NULL));
    qpns[1] = wq.qpn;
    /* An entry past the table, reserved bytes. */
    cmd_init(&c, VRNIC_AQ_OP_CREATE_RSS);
    c.rss.fields = htole16(1);
    c.rss.qpn[0] = htole32(wq.qpn);
    c.rss.qpn[1] = htole32(wq.qpn);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.rss.qpn[1] = 0;
    c.rss.rsvd1[7] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.rss.rsvd1[7] = 0;
    c.rss.uctx = htole32(1);    /* the QP is uctx 0's */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.rss.uctx = 0;
    ASSERT_EQ(0, run(f, &c, NULL));

    /* VRNIC_RSS_MAX contexts (one made above), then NO_RESOURCES. */
    for (unsigned i = 1; i < VRNIC_RSS_MAX; i++) {
        ASSERT_EQ(0, rss_add(n, VRNIC_RSS_LOG_TABLE_MAX, VRNIC_RSS_F_ALL,
                             ms_key, qpns, &rssn));
        first = first ? first : rssn;
    }
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES,
              rss_add(n, 0, 1, ms_key, qpns, NULL));
    ASSERT_EQ(1 + (VRNIC_RSS_MAX - 1) * VRNIC_RSS_TABLE_MAX,
              f->core.obj.qps[wq.qpn].rss_refs);

    /* A context's QPs stay while it lives; its rules go with it. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE,
              destroy(f, VRNIC_AQ_OP_DESTROY_QP, wq.qpn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              flow_add(n, VRNIC_RSS_NUM_BASE + VRNIC_RSS_MAX, 0, 0, &v, &m,
                       NULL));
    ASSERT_EQ(0, flow_add(n, first, 0, 0, &v, &m, &id));
    ASSERT_EQ(0, destroy(f, VRNIC_AQ_OP_DESTROY_RSS, first));
    ASSERT_FALSE(f->core.obj.flows[id].live);
    ASSERT_EQ(0, f->core.obj.n_flows);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              destroy(f, VRNIC_AQ_OP_DESTROY_RSS, first));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              destroy(f, VRNIC_AQ_OP_DESTROY_RSS, wq.qpn));
    ASSERT_EQ(0, rss_add(n, 0, 1, ms_key, qpns, &rssn));
    ASSERT_EQ(first, rssn);

    /* Device reset removes every context, and with them the references. */
    vrnic_core_reset(&f->core);
    for (unsigned i = 0; i < VRNIC_RSS_MAX; i++) {
        ASSERT_FALSE(f->core.obj.rss[i].live);
    }
}

TEST_F(raw, receive_only_qp_has_no_sq)
{
    FakeBus *f = self->n.f;
    Node *n = &self->n;
    uint64_t rejected;
    AnyCmd c;
    Frame fr;
    Qp wq;

    /* SQ fields without an SQ, and no SQ on another type. */
    qp_cmd(&c, RAW, n->pdn, n->scq, n->rcq, 0, 0,
           obj_alloc(f, QP_MEM_LEN, 4096));
    c.qp.sq_log_depth = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.qp.sq_wqe_shift = 0;
    c.qp.max_send_sge = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.qp.max_inline = 0;
    c.qp.type = VRNIC_QP_TYPE_UD;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));

    /* It receives what a rule steers to it; an SQ doorbell is refused. */
    rx_only_qp(&wq, n);
    recv_one(&wq, 7, self->buf, BUF, self->lkey);
    flow_dmac(n, wq.qpn, 0, 0);
    frame_udp4(&fr);
    from_wire(n, &fr);
    expect_rx(_metadata, n, &wq, 7, self->buf, &fr);
    rejected = f->core.stats.db_rejected;
    db(f, 0, VRNIC_DB_SQ, wq.qpn, 1);
    fake_settle(f);
    EXPECT_EQ(rejected + 1, f->core.stats.db_rejected);
}

TEST_HARNESS_MAIN
