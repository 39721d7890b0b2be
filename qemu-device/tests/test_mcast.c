/*
 * vrnic core: UD multicast (uapi "Multicast groups"). ATTACH_MCAST /
 * DETACH_MCAST validation and statuses, the group limits, detach on QP
 * destroy and on device reset; delivery of one multicast send over the
 * fake wire to every attached QP (none to a detached one, none with a
 * Q_Key mismatch), DestQP 0xFFFFFF on the wire; loopback to members on the
 * sending device (IPv6 group); routing of group traffic without members to
 * the Ethernet ring.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define QKEY 0x01234567u    /* RDMA_UDP_QKEY, what rdma_cm uses */

/* ::ffff:230.1.2.3 and its MAC 01:00:5e:01:02:03; ff0e::1:2 and 33:33:.. */
static const uint8_t grp4[16] = { [10] = 0xff, [11] = 0xff, [12] = 230,
                                  [13] = 1, [14] = 2, [15] = 3 };
static const uint8_t mac4[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
static const uint8_t grp6[16] = { [0] = 0xff, [1] = 0x0e, [13] = 1,
                                  [15] = 2 };
static const uint8_t mac6[6] = { 0x33, 0x33, 0x00, 0x01, 0x00, 0x02 };

/* An MR with local write over [addr, addr + len) of the window. */
static uint32_t mr_lw(Node *n, uint64_t addr, uint64_t len)
{
    return mr_any(n, VRNIC_ACCESS_LOCAL_WRITE, addr, len);
}

/* A QP (UD: in RTS with Q_Key qkey; RC: just created, for type checks). */
static void ud_qp(Qp *q, Node *n, uint8_t type, uint32_t qkey)
{
    struct vrnic_qp_attr a = good_attr();

    qp_new(q, n, type, 0);
    if (type != VRNIC_QP_TYPE_UD) {
        return;
    }
    a.qkey = htole32(qkey);
    if (modify_qp(n->f, q->qpn, QS | req_init(type), VRNIC_QPS_INIT, &a) ||
        modify_qp(n->f, q->qpn, QS | req_rtr(type), VRNIC_QPS_RTR, &a) ||
        modify_qp(n->f, q->qpn, QS | req_rts(type), VRNIC_QPS_RTS, &a)) {
        abort();
    }
}

static uint8_t mcast_cmd(FakeBus *f, uint16_t op, uint32_t qpn,
                         const uint8_t gid[16])
{
    AnyCmd c;
    struct vrnic_aq_mcast *m = (void *)&c;

    cmd_init(&c, op);
    m->qpn = htole32(qpn);
    memcpy(m->gid, gid, 16);
    return run(f, &c, NULL);
}

static uint8_t attach(FakeBus *f, uint32_t qpn, const uint8_t gid[16])
{
    return mcast_cmd(f, VRNIC_AQ_OP_ATTACH_MCAST, qpn, gid);
}

static uint8_t detach(FakeBus *f, uint32_t qpn, const uint8_t gid[16])
{
    return mcast_cmd(f, VRNIC_AQ_OP_DETACH_MCAST, qpn, gid);
}

/* UD SEND of len bytes at src (lkey) to group gid/mac; dest_qpn as given. */
static void send_to(Qp *q, uint64_t wr_id, uint64_t src, uint32_t len,
                    uint32_t lkey, const uint8_t gid[16], const uint8_t mac[6],
                    uint32_t dest_qpn)
{
    uint8_t *w = sq_slot(q);
    struct vrnic_send_wqe *h = (void *)w;
    struct vrnic_av *av = (void *)(w + 64);
    struct vrnic_ud_dest *d = (void *)(w + 64 + 32);
    struct vrnic_sge *s = (void *)(w + 128);

    memset(w, 0, 1u << QP_SQ_SHIFT);
    h->wr_id = htole64(wr_id);
    h->opcode = VRNIC_WQE_OP_SEND;
    h->flags = VRNIC_WQE_FLAG_SIGNALED;
    h->num_sge = 1;
    memcpy(av->dgid, gid, 16);
    memcpy(av->dmac, mac, 6);
    av->hop_limit = 1;
    d->dest_qpn = htole32(dest_qpn);
    d->qkey = htole32(QKEY);
    s->addr = htole64(src);
    s->length = htole32(len);
    s->lkey = htole32(lkey);
    sq_ring(q);
}

/* One receive of len bytes at addr. */
static void recv_one(Qp *q, uint64_t wr_id, uint64_t addr, uint32_t len,
                     uint32_t lkey)
{
    Sg sg = { addr, len, lkey };

    post_recv(q, wr_id, &sg, 1);
}

static uint64_t stat(Node *n, unsigned i)
{
    return n->f->core.stats.port[i];
}

/* BTH DestQP of an IPv4 RoCEv2 frame (Ethernet 14 + IP 20 + UDP 8). */
static uint32_t frame_dqpn(const uint8_t *frame)
{
    const uint8_t *bth = frame + 14 + 20 + 8;

    return bth[5] << 16 | bth[6] << 8 | bth[7];
}

TEST(attach_detach_statuses)
{
    Node A;
    Qp ud, ud2, rc;
    uint8_t uni4[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 };
    uint8_t uni6[16] = { [0] = 0xfe, [1] = 0x80, [15] = 1 };
    uint8_t edge4[16];          /* 239.255.255.255 / 240.0.0.0 */
    AnyCmd c;
    struct vrnic_aq_mcast *m = (void *)&c;
    uint32_t gsi;

    node_init(&A, 1, false);
    ud_qp(&ud, &A, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&ud2, &A, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&rc, &A, VRNIC_QP_TYPE_RC, 0);
    gsi = create_qp(A.f, VRNIC_QP_TYPE_GSI, A.pdn, A.scq, A.rcq, 0, 0, NULL);
    ASSERT_EQ(1, gsi);

    /* The QP: live, UD (not RC, not GSI). */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, attach(A.f, 0, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, attach(A.f, 999, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, attach(A.f, 0xffffff, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, attach(A.f, rc.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, attach(A.f, gsi, grp4));
    /* The GID: multicast only. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, attach(A.f, ud.qpn, uni4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, attach(A.f, ud.qpn, uni6));
    memcpy(edge4, grp4, 16);
    edge4[12] = 240;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, attach(A.f, ud.qpn, edge4));
    edge4[12] = 239;
    edge4[13] = edge4[14] = edge4[15] = 255;
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, ud.qpn, edge4));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, ud.qpn, edge4));
    /* Reserved bytes. */
    cmd_init(&c, VRNIC_AQ_OP_ATTACH_MCAST);
    m->qpn = htole32(ud.qpn);
    memcpy(m->gid, grp4, 16);
    m->rsvd1[95] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(A.f, &c, NULL));
    m->rsvd1[95] = 0;
    m->rsvd0 = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(A.f, &c, NULL));
    ASSERT_EQ(0, A.f->core.obj.n_mcast);

    /* Attach, duplicate, a second member, an IPv6 group. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, ud.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, attach(A.f, ud.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, ud2.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, ud.qpn, grp6));
    ASSERT_EQ(2, A.f->core.obj.n_mcast);
    ASSERT_EQ(2, vrnic_mcast_members(&A.f->core, grp4, NULL));
    ASSERT_EQ(1, vrnic_mcast_members(&A.f->core, grp6, NULL));

    /* Detach: a member leaves; a non-member, unknown group, bad QP fail. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, detach(A.f, ud2.qpn, grp6));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, detach(A.f, ud.qpn, edge4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, detach(A.f, rc.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, detach(A.f, ud.qpn, uni4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, detach(A.f, 999, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, ud.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, detach(A.f, ud.qpn, grp4));
    ASSERT_EQ(1, vrnic_mcast_members(&A.f->core, grp4, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, ud2.qpn, grp4));
    ASSERT_EQ(0, vrnic_mcast_members(&A.f->core, grp4, NULL));
    ASSERT_EQ(1, A.f->core.obj.n_mcast);
    fake_free(A.f);
}

TEST(limits_destroy_and_reset)
{
    Node A;
    Qp q[VRNIC_MCAST_MAX_QP_ATTACH + 2];
    uint8_t gid[16];

    node_init(&A, 1, false);
    for (unsigned i = 0; i < VRNIC_MCAST_MAX_QP_ATTACH + 2; i++) {
        ud_qp(&q[i], &A, VRNIC_QP_TYPE_UD, QKEY);
    }
    /* VRNIC_MCAST_MAX_GRP groups, then no more. */
    memcpy(gid, grp6, 16);
    for (unsigned i = 0; i < VRNIC_MCAST_MAX_GRP; i++) {
        gid[14] = i;
        ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, q[0].qpn, gid));
    }
    gid[14] = VRNIC_MCAST_MAX_GRP;
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, attach(A.f, q[0].qpn, gid));
    ASSERT_EQ(VRNIC_MCAST_MAX_GRP, A.f->core.obj.n_mcast);
    /* An existing group still takes members; a freed slot is reused. */
    gid[14] = 5;
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, q[1].qpn, gid));
    gid[14] = 7;
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, q[0].qpn, gid));
    gid[14] = VRNIC_MCAST_MAX_GRP;
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, q[0].qpn, gid));

    /* Destroying q[0] detaches it from all its groups. */
    ASSERT_EQ(0, modify_qp(A.f, q[0].qpn, QS, VRNIC_QPS_RESET, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(A.f, VRNIC_AQ_OP_DESTROY_QP,
                                       q[0].qpn));
    ASSERT_EQ(1, A.f->core.obj.n_mcast);     /* group 5 keeps q[1] */
    gid[14] = 5;
    ASSERT_EQ(1, vrnic_mcast_members(&A.f->core, gid, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, q[1].qpn, gid));
    ASSERT_EQ(0, A.f->core.obj.n_mcast);

    /* VRNIC_MCAST_MAX_QP_ATTACH QPs in one group, then it is full. */
    for (unsigned i = 1; i <= VRNIC_MCAST_MAX_QP_ATTACH + 1; i++) {
        ASSERT_EQ(i <= VRNIC_MCAST_MAX_QP_ATTACH ? VRNIC_AQ_STS_OK :
                  VRNIC_AQ_STS_NO_RESOURCES, attach(A.f, q[i].qpn, grp4));
    }
    ASSERT_EQ(VRNIC_MCAST_MAX_QP_ATTACH,
              vrnic_mcast_members(&A.f->core, grp4, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, q[1].qpn, grp6));

    /* Device reset empties the table. */
    fake_wr(A.f, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    ASSERT_EQ(0, A.f->core.obj.n_mcast);
    ASSERT_EQ(0, vrnic_mcast_members(&A.f->core, grp4, NULL));
    ASSERT_EQ(0, vrnic_mcast_members(&A.f->core, grp6, NULL));
    fake_free(A.f);
}

FIXTURE(pair) {
    Node a, b;
};

FIXTURE_SETUP(pair)
{
    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
}

FIXTURE_TEARDOWN(pair)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/*
 * A sends once to the IPv4 group; on B, two members receive it, a detached
 * QP and a member with another Q_Key do not. The WQE's dest_qpn is not
 * 0xFFFFFF: the device puts 0xFFFFFF on the wire anyway.
 */
TEST_F(pair, wire_delivery_to_members_only)
{
    Node *A = &self->a, *B = &self->b;
    Qp s, r1, r2, gone, badkey;
    uint64_t src = obj_alloc(A->f, 200, 64);
    uint64_t dst = obj_alloc(B->f, 4 * 512, 64);
    uint32_t lkey = mr_lw(A, src, 200), rkey = mr_lw(B, dst, 4 * 512);
    Qp *rq[4] = { &r1, &r2, &gone, &badkey };
    bool got[4] = { false };
    struct vrnic_cqe e;

    ud_qp(&s, A, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&r1, B, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&r2, B, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&gone, B, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&badkey, B, VRNIC_QP_TYPE_UD, QKEY + 1);
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(VRNIC_AQ_STS_OK, attach(B->f, rq[i]->qpn, grp4));
        recv_one(rq[i], 0x100 + i, dst + i * 512, 512, rkey);
    }
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(B->f, gone.qpn, grp4));
    for (unsigned i = 0; i < 200; i++) {
        ((uint8_t *)fake_ptr(A->f, src))[i] = i ^ 0x5a;
    }
    memset(fake_ptr(B->f, dst), 0xee, 4 * 512);

    send_to(&s, 7, src, 200, lkey, grp4, mac4, 0x1234);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(7, le64toh(e.wr_id));
    /* One frame on the wire: group MAC, DestQP 0xFFFFFF; no loopback. */
    ASSERT_EQ(1, A->f->nframes);
    ASSERT_EQ(0, memcmp(A->f->frames[0], mac4, 6));
    ASSERT_EQ(VRNIC_MCAST_QPN, frame_dqpn(A->f->frames[0]));
    ASSERT_EQ(0, stat(A, VRNIC_PORT_STAT_LOOP_PKTS));

    while (poll(B, false, &e)) {
        uint32_t qpn = le32toh(e.qpn);
        int i = qpn == r1.qpn ? 0 : qpn == r2.qpn ? 1 : -1;

        ASSERT_LE(0, i);
        ASSERT_FALSE(got[i]);
        got[i] = true;
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(0x100 + i, le64toh(e.wr_id));
        ASSERT_EQ(VRNIC_GRH_LEN + 200, le32toh(e.byte_len));
        ASSERT_EQ(s.qpn, le32toh(e.src_qp));
        ASSERT_EQ(VRNIC_NET_TYPE_IPV4, e.network_hdr_type);
        ASSERT_TRUE(e.flags & VRNIC_CQE_FLAG_GRH);
        /* GRH area: 20 zero bytes, then the IPv4 header to 230.1.2.3. */
        ASSERT_EQ(0x45, *(uint8_t *)fake_ptr(B->f, dst + i * 512 + 20));
        ASSERT_EQ(0, memcmp(fake_ptr(B->f, dst + i * 512 + 20 + 16),
                            grp4 + 12, 4));
        ASSERT_EQ(0, memcmp(fake_ptr(B->f, dst + i * 512 + VRNIC_GRH_LEN),
                            fake_ptr(A->f, src), 200));
    }
    ASSERT_TRUE(got[0]);
    ASSERT_TRUE(got[1]);
    /* The detached QP and the Q_Key mismatch: untouched, counted. */
    ASSERT_EQ(0xee, *(uint8_t *)fake_ptr(B->f, dst + 2 * 512));
    ASSERT_EQ(0xee, *(uint8_t *)fake_ptr(B->f, dst + 3 * 512));
    ASSERT_EQ(1, stat(B, VRNIC_PORT_STAT_RX_QKEY_MISMATCH));
    ASSERT_EQ(1, stat(B, VRNIC_PORT_STAT_RX_PKTS));
    ASSERT_EQ(0, stat(B, VRNIC_PORT_STAT_RX_NO_QP));

    /* Everybody leaves: the next send is not the RDMA engine's on B. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(B->f, r1.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(B->f, r2.qpn, grp4));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(B->f, badkey.qpn, grp4));
    send_to(&s, 8, src, 200, lkey, grp4, mac4, VRNIC_MCAST_QPN);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(2, A->f->nframes);
    ASSERT_FALSE(poll(B, false, &e));
    ASSERT_EQ(1, stat(B, VRNIC_PORT_STAT_RX_PKTS));
    /* Left for the Ethernet function, not taken by the RDMA engine. */
    vrnic_core_eth_receive(&B->f->core, A->f->frames[1], A->f->frame_len[1]);
    ASSERT_EQ(1, stat(B, VRNIC_PORT_STAT_RX_PKTS));
}

static bool wire_drop(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    return false;
}

/* A multicast IP with a unicast DestQP is dropped, even for a member. */
TEST_F(pair, multicast_ip_needs_multicast_qpn)
{
    Node *A = &self->a, *B = &self->b;
    Qp s, r;
    uint64_t src = obj_alloc(A->f, 64, 64), dst = obj_alloc(B->f, 512, 64);
    uint32_t lkey = mr_lw(A, src, 64), rkey = mr_lw(B, dst, 512);
    uint8_t frame[512];
    size_t len;
    struct vrnic_cqe e;

    ud_qp(&s, A, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&r, B, VRNIC_QP_TYPE_UD, QKEY);
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(B->f, r.qpn, grp4));
    recv_one(&r, 1, dst, 512, rkey);
    /* Capture A's frame, rewrite its DestQP to r's number (ICRC redone). */
    A->f->wire_hook = wire_drop;
    send_to(&s, 1, src, 64, lkey, grp4, mac4, VRNIC_MCAST_QPN);
    fake_settle(A->f);
    ASSERT_EQ(1, A->f->nframes);
    len = A->f->frame_len[0];
    memcpy(frame, A->f->frames[0], len);
    frame[14 + 20 + 8 + 5] = r.qpn >> 16;
    frame[14 + 20 + 8 + 6] = r.qpn >> 8;
    frame[14 + 20 + 8 + 7] = r.qpn;
    ASSERT_NE(0, vrnic_pkt_finish(frame, sizeof(frame)));
    fake_wire_put(B->f, frame, len);
    fake_settle(B->f);
    ASSERT_FALSE(poll(B, false, &e));
    ASSERT_EQ(1, stat(B, VRNIC_PORT_STAT_RX_NO_QP));
    /* The original frame is delivered. */
    fake_wire_put(B->f, A->f->frames[0], len);
    fake_settle(B->f);
    ASSERT_TRUE(poll(B, false, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(r.qpn, le32toh(e.qpn));
}

/*
 * Loopback on one device, IPv6 group: the send goes on the wire and to the
 * two local members through the loopback queue; the sender is attached too
 * but has no receive WQE (dropped there, counted); a destroyed member gets
 * nothing and the loopback copy is skipped once no member is left.
 */
TEST(loopback_to_local_members)
{
    Node A;
    Qp s, r1, r2;
    uint64_t src, dst;
    uint32_t lkey, rkey;
    struct vrnic_cqe e;
    bool got1 = false, got2 = false;

    node_init(&A, 1, true);
    src = obj_alloc(A.f, 300, 64);
    dst = obj_alloc(A.f, 2 * 512, 64);
    lkey = mr_lw(&A, src, 300);
    rkey = mr_lw(&A, dst, 2 * 512);
    memset(fake_ptr(A.f, src), 0x6c, 300);
    ud_qp(&s, &A, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&r1, &A, VRNIC_QP_TYPE_UD, QKEY);
    ud_qp(&r2, &A, VRNIC_QP_TYPE_UD, QKEY);
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, s.qpn, grp6));
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, r1.qpn, grp6));
    ASSERT_EQ(VRNIC_AQ_STS_OK, attach(A.f, r2.qpn, grp6));
    recv_one(&r1, 11, dst, 512, rkey);
    recv_one(&r2, 12, dst + 512, 512, rkey);

    send_to(&s, 1, src, 300, lkey, grp6, mac6, VRNIC_MCAST_QPN);
    fake_settle(A.f);
    ASSERT_TRUE(poll(&A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(1, A.f->nframes);                 /* on the wire */
    ASSERT_EQ(0, memcmp(A.f->frames[0], mac6, 6));
    ASSERT_EQ(1, stat(&A, VRNIC_PORT_STAT_LOOP_PKTS));
    ASSERT_EQ(1, stat(&A, VRNIC_PORT_STAT_TX_PKTS));
    while (poll(&A, false, &e)) {
        uint32_t qpn = le32toh(e.qpn);
        uint64_t at = qpn == r1.qpn ? dst : dst + 512;

        ASSERT_TRUE(qpn == r1.qpn || qpn == r2.qpn);
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(VRNIC_GRH_LEN + 300, le32toh(e.byte_len));
        ASSERT_EQ(VRNIC_NET_TYPE_IPV6, e.network_hdr_type);
        ASSERT_EQ(s.qpn, le32toh(e.src_qp));
        ASSERT_EQ(6, *(uint8_t *)fake_ptr(A.f, at) >> 4);
        ASSERT_EQ(0, memcmp(fake_ptr(A.f, at + 24), grp6, 16));
        ASSERT_EQ(0, memcmp(fake_ptr(A.f, at + VRNIC_GRH_LEN),
                            fake_ptr(A.f, src), 300));
        if (qpn == r1.qpn) {
            got1 = true;
        } else {
            got2 = true;
        }
    }
    ASSERT_TRUE(got1);
    ASSERT_TRUE(got2);
    ASSERT_EQ(1, stat(&A, VRNIC_PORT_STAT_RX_NO_WQE));     /* the sender */

    /* r2 destroyed (detached), s and r1 leave: no loopback copy at all. */
    ASSERT_EQ(0, modify_qp(A.f, r2.qpn, QS, VRNIC_QPS_RESET, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(A.f, VRNIC_AQ_OP_DESTROY_QP, r2.qpn));
    ASSERT_EQ(2, vrnic_mcast_members(&A.f->core, grp6, NULL));
    recv_one(&r1, 13, dst, 512, rkey);
    send_to(&s, 2, src, 300, lkey, grp6, mac6, VRNIC_MCAST_QPN);
    fake_settle(A.f);
    ASSERT_TRUE(poll(&A, true, &e));
    ASSERT_TRUE(poll(&A, false, &e));
    ASSERT_EQ(r1.qpn, le32toh(e.qpn));
    ASSERT_EQ(13, le64toh(e.wr_id));
    ASSERT_FALSE(poll(&A, false, &e));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, s.qpn, grp6));
    ASSERT_EQ(VRNIC_AQ_STS_OK, detach(A.f, r1.qpn, grp6));
    recv_one(&r1, 14, dst, 512, rkey);
    send_to(&s, 3, src, 300, lkey, grp6, mac6, VRNIC_MCAST_QPN);
    fake_settle(A.f);
    ASSERT_TRUE(poll(&A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_FALSE(poll(&A, false, &e));
    ASSERT_EQ(3, A.f->nframes);
    ASSERT_EQ(2, stat(&A, VRNIC_PORT_STAT_LOOP_PKTS));
    fake_free(A.f);
}

TEST_HARNESS_MAIN
