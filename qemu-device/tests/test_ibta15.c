/*
 * vrnic core: the IBTA 1.5 operations between two device cores on the
 * scripted wire. ATOMIC WRITE stores its 8 bytes as the WQE holds them and
 * completes on the empty READ RESPONSE ONLY; its rules (8-byte alignment,
 * REMOTE_WRITE on the QP and the key) are NAKed; a duplicate is answered
 * from the result cache, never executed again. FLUSH checks the placement
 * type and selectivity, the FLUSH rights of the QP and the key and the
 * range (the whole MR: the key only), asks the host for persistence only
 * when the placement type does, and completes the same way. Both are RC
 * only, count as READ/atomics against max_rd_atomic, and the wire carries
 * FETH before RETH.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define ACC_FLUSH (VRNIC_ACCESS_FLUSH_GLOBAL | VRNIC_ACCESS_FLUSH_PERSISTENT)

FIXTURE(pair) {
    Node a, b;
    Qp qa, qb;
    uint64_t target;
    uint32_t rkey;
};

/* A and B connected (RC, path MTU 1024), each QP with every remote right. */
FIXTURE_SETUP(pair)
{
    VrnicQp *q;

    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
    qp_new(&self->qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&self->qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&self->qa, &self->qb, 3, 100, 200);
    q = &self->b.f->core.obj.qps[self->qb.qpn];
    q->attr.access = htole32(le32toh(q->attr.access) | ACC_FLUSH);
    self->target = buf_alloc(&self->b, 4096);
    self->rkey = mr_any(&self->b, ACC_ALL | ACC_FLUSH, self->target, 4096);
}

FIXTURE_TEARDOWN(pair)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

static void post_atomic_write(Qp *q, uint64_t wr_id, uint64_t raddr,
                              uint32_t rkey, const void *bytes)
{
    struct vrnic_send_wqe *h = sq_slot(q);

    post_send(q, wr_id, VRNIC_WQE_OP_ATOMIC_WRITE, 0, NULL, 0, raddr, rkey, 0,
              NULL, 0);
    memcpy(&h->compare_add, bytes, 8);
}

static void post_flush(Qp *q, uint64_t wr_id, uint64_t raddr, uint32_t rkey,
                       uint64_t len, uint32_t type, uint32_t sel)
{
    struct vrnic_send_wqe *h = sq_slot(q);

    post_send(q, wr_id, VRNIC_WQE_OP_FLUSH, 0, NULL, 0, raddr, rkey, 0, NULL,
              0);
    h->compare_add = htole64(len);
    h->swap = htole64(VRNIC_FIELD_PREP(VRNIC_FLUSH_SEL_MASK, sel) |
                      VRNIC_FIELD_PREP(VRNIC_FLUSH_TYPE_MASK, type));
}

/* The status and opcode of A's next send completion (0xff: none). */
static uint8_t a_status(FIXTURE_DATA(pair) *self, uint8_t *op)
{
    fake_settle(self->a.f);
    return next_status(&self->a, true, op);
}

TEST_F(pair, atomic_write_stores_the_bytes_and_completes)
{
    static const uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 0xf8 };
    uint8_t *t = fake_ptr(self->b.f, self->target + 64);
    WireLog seen = { 0 };
    uint8_t op;

    memset(t, 0xee, 16);
    self->b.f->wire_hook = wire_log;
    self->b.f->hook_arg = &seen;
    post_atomic_write(&self->qa, 1, self->target + 64, self->rkey, v);
    ASSERT_EQ(VRNIC_WC_SUCCESS, a_status(self, &op));
    ASSERT_EQ(VRNIC_CQE_OP_ATOMIC_WRITE, op);
    ASSERT_EQ(0, memcmp(t, v, 8));          /* in memory order */
    ASSERT_EQ(0xee, t[8]);                  /* nothing past it */
    /* The answer: one READ RESPONSE ONLY without data. */
    ASSERT_EQ(1, seen.n);
    ASSERT_EQ(VRNIC_OP(RC, READ_RESP_ONLY), seen.h[0].bth.opcode);
    ASSERT_EQ(0, seen.plen[0]);
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&self->qa));
}

TEST_F(pair, atomic_write_rules_are_naked)
{
    static const uint8_t v[8] = { 9 };
    uint32_t ro = mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE |
                         VRNIC_ACCESS_REMOTE_READ, self->target, 4096);
    Qp a2, b2;

    /* Misaligned: NAK INVALID_REQUEST, both QPs in ERR. */
    post_atomic_write(&self->qa, 1, self->target + 4, self->rkey, v);
    ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, a_status(self, NULL));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->qb));
    /* A key without REMOTE_WRITE: NAK REMOTE_ACCESS. */
    qp_new(&a2, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&b2, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&a2, &b2, 3, 300, 400);
    post_atomic_write(&a2, 2, self->target, ro, v);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, a_status(self, NULL));
    ASSERT_EQ(0, *(uint64_t *)fake_ptr(self->b.f, self->target));
}

TEST_F(pair, atomic_write_on_uc_or_with_sges_is_a_local_error)
{
    static const uint8_t v[8] = { 7 };
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 8, mr_any(&self->a, 0, src, 64) };
    Qp ua, ub;
    uint8_t op;

    qp_new(&ua, &self->a, VRNIC_QP_TYPE_UC, 0);
    qp_new(&ub, &self->b, VRNIC_QP_TYPE_UC, 0);
    connect(&ua, &ub, 3, 10, 20);
    post_atomic_write(&ua, 1, self->target, self->rkey, v);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, a_status(self, &op));
    ASSERT_EQ(VRNIC_CQE_OP_ATOMIC_WRITE, op);
    /* RC, but the WQE names local memory it has no use for. */
    post_send(&self->qa, 2, VRNIC_WQE_OP_ATOMIC_WRITE, 0, &s, 1, self->target,
              self->rkey, 0, NULL, 0);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, a_status(self, NULL));
    ASSERT_EQ(0, *(uint64_t *)fake_ptr(self->b.f, self->target));
}

/*
 * The answer is lost; the target changes (another writer); the requester's
 * timer sends the ATOMIC WRITE again. The responder answers the duplicate
 * from its result cache and leaves the other writer's value alone.
 */
TEST_F(pair, duplicate_atomic_write_is_answered_not_executed)
{
    static const uint8_t v[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                  0x88 };
    uint64_t *t = fake_ptr(self->b.f, self->target);
    WireLog seen = { .drop = 1 };

    self->b.f->wire_hook = wire_log;
    self->b.f->hook_arg = &seen;
    post_atomic_write(&self->qa, 1, self->target, self->rkey, v);
    fake_settle(self->a.f);
    ASSERT_EQ(0, memcmp(t, v, 8));
    ASSERT_FALSE(poll(&self->a, true, &(struct vrnic_cqe){ 0 }));
    *t = htole64(0x5555);
    for (int i = 0; i < 20 && seen.n < 2; i++) {
        fake_fire_timer(self->a.f);
        fake_settle(self->a.f);
    }
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(&self->a, true, NULL));
    ASSERT_EQ(0x5555, le64toh(*t));
    ASSERT_EQ(1, self->b.f->core.stats.port[VRNIC_PORT_STAT_ATOMIC_REPLAYS]);
    ASSERT_EQ(VRNIC_OP(RC, READ_RESP_ONLY), seen.h[1].bth.opcode);
}

/*
 * READ/atomic slots: with max_rd_atomic 1 the FLUSH waits until the ATOMIC
 * WRITE before it is answered (its answer is lost once, so it waits long).
 */
TEST_F(pair, ibta15_operations_count_against_max_rd_atomic)
{
    static const uint8_t v[8] = { 3 };
    VrnicQp *q = &self->a.f->core.obj.qps[self->qa.qpn];
    WireLog from_a = { 0 }, from_b = { .drop = 1 };
    uint8_t op;

    q->attr.max_rd_atomic = 1;
    self->a.f->wire_hook = wire_log;
    self->a.f->hook_arg = &from_a;
    self->b.f->wire_hook = wire_log;
    self->b.f->hook_arg = &from_b;
    post_atomic_write(&self->qa, 1, self->target, self->rkey, v);
    post_flush(&self->qa, 2, self->target, self->rkey, 8,
               VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_RANGE);
    fake_settle(self->a.f);
    ASSERT_EQ(1, from_a.n);
    ASSERT_EQ(VRNIC_OP(RC, ATOMIC_WRITE), from_a.h[0].bth.opcode);
    for (int i = 0; i < 20 && from_b.n < 3; i++) {
        fake_fire_timer(self->a.f);
    }
    ASSERT_EQ(VRNIC_WC_SUCCESS, a_status(self, &op));
    ASSERT_EQ(VRNIC_CQE_OP_ATOMIC_WRITE, op);
    ASSERT_EQ(VRNIC_WC_SUCCESS, a_status(self, &op));
    ASSERT_EQ(VRNIC_CQE_OP_FLUSH, op);
    ASSERT_EQ(VRNIC_OP(RC, FLUSH), from_a.h[from_a.n - 1].bth.opcode);
}

TEST_F(pair, flush_global_persistent_range_and_mr)
{
    WireLog seen = { 0 };
    uint8_t op;

    self->b.f->wire_hook = wire_log;
    self->b.f->hook_arg = &seen;
    post_flush(&self->qa, 1, self->target + 128, self->rkey, 256,
               VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_RANGE);
    ASSERT_EQ(VRNIC_WC_SUCCESS, a_status(self, &op));
    ASSERT_EQ(VRNIC_CQE_OP_FLUSH, op);
    ASSERT_EQ(0, self->b.f->persists);      /* visibility only */
    post_flush(&self->qa, 2, self->target, self->rkey, 4096,
               VRNIC_FLUSH_TYPE_PERSISTENT, VRNIC_FLUSH_SEL_RANGE);
    ASSERT_EQ(VRNIC_WC_SUCCESS, a_status(self, NULL));
    ASSERT_EQ(1, self->b.f->persists);
    /* The whole MR: any address and length, only the key counts. */
    post_flush(&self->qa, 3, 0xdead0000, self->rkey, 1u << 30,
               VRNIC_FLUSH_TYPE_GLOBAL | VRNIC_FLUSH_TYPE_PERSISTENT,
               VRNIC_FLUSH_SEL_MR);
    ASSERT_EQ(VRNIC_WC_SUCCESS, a_status(self, NULL));
    ASSERT_EQ(2, self->b.f->persists);
    ASSERT_EQ(3, seen.n);
    for (unsigned i = 0; i < 3; i++) {
        ASSERT_EQ(VRNIC_OP(RC, READ_RESP_ONLY), seen.h[i].bth.opcode);
        ASSERT_EQ(0, seen.plen[i]);
    }
}

/* The FETH goes before the RETH and carries selectivity and type. */
static bool check_flush_wire(FakeBus *from, uint8_t *frame, size_t *len,
                             void *arg)
{
    unsigned *ok = arg;
    VrnicPkt p;
    const uint8_t *feth;

    if (vrnic_pkt_parse(frame, *len, &p) != VRNIC_PKT_OK ||
        p.hdr.bth.opcode != VRNIC_OP(RC, FLUSH)) {
        return true;
    }
    feth = frame + p.bth_off + 12;
    if (feth[0] == 0 && feth[1] == 0 && feth[2] == 0 && feth[3] == 0x12 &&
        ldq_be_p(feth + 4) == 0x123450 && p.hdr.reth.len == 16 &&
        p.payload_len == 0 && p.hdr.bth.ack_req) {
        (*ok)++;
    }
    return true;
}

TEST_F(pair, flush_wire_format)
{
    unsigned ok = 0;

    self->a.f->wire_hook = check_flush_wire;
    self->a.f->hook_arg = &ok;
    post_flush(&self->qa, 1, 0x123450, self->rkey, 16,
               VRNIC_FLUSH_TYPE_PERSISTENT, VRNIC_FLUSH_SEL_MR);
    fake_settle(self->a.f);
    ASSERT_EQ(1, ok);
}

TEST_F(pair, flush_rules)
{
    uint32_t global_only = mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE |
                                  VRNIC_ACCESS_FLUSH_GLOBAL, self->target,
                                  4096);
    static const struct {
        uint32_t type, sel;
        uint64_t off, len;
        bool global_key;
        uint8_t status;
    } cases[] = {
        /* Persistence through a key that grants only visibility. */
        { VRNIC_FLUSH_TYPE_PERSISTENT, VRNIC_FLUSH_SEL_RANGE, 0, 64, true,
          VRNIC_WC_REM_ACCESS_ERR },
        /* Past the MR. */
        { VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_RANGE, 4000, 200, false,
          VRNIC_WC_REM_ACCESS_ERR },
        /* Placement type 0, or a reserved one. */
        { 0, VRNIC_FLUSH_SEL_RANGE, 0, 64, false, VRNIC_WC_LOC_QP_OP_ERR },
        { 4, VRNIC_FLUSH_SEL_RANGE, 0, 64, false, VRNIC_WC_LOC_QP_OP_ERR },
        /* Reserved selectivity. */
        { VRNIC_FLUSH_TYPE_GLOBAL, 2, 0, 64, false, VRNIC_WC_LOC_QP_OP_ERR },
        /* Longer than 2^31. */
        { VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_RANGE, 0,
          (1ull << 31) + 1, false, VRNIC_WC_LOC_LEN_ERR },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        Qp a2, b2;
        VrnicQp *q;

        qp_new(&a2, &self->a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&b2, &self->b, VRNIC_QP_TYPE_RC, 0);
        connect(&a2, &b2, 3, 300, 400);
        q = &self->b.f->core.obj.qps[b2.qpn];
        q->attr.access = htole32(le32toh(q->attr.access) | ACC_FLUSH);
        post_flush(&a2, i, self->target + cases[i].off,
                   cases[i].global_key ? global_only : self->rkey,
                   cases[i].len, cases[i].type, cases[i].sel);
        ASSERT_EQ(cases[i].status, a_status(self, NULL)) TH_LOG("case %zu", i);
        ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&a2));
    }
    ASSERT_EQ(0, self->b.f->persists);
}

/* A QP without the FLUSH rights refuses a FLUSH the key would allow. */
TEST_F(pair, flush_needs_the_qp_right)
{
    VrnicQp *q = &self->b.f->core.obj.qps[self->qb.qpn];

    q->attr.access = htole32(le32toh(q->attr.access) &
                             ~VRNIC_ACCESS_FLUSH_PERSISTENT);
    post_flush(&self->qa, 1, self->target, self->rkey, 64,
               VRNIC_FLUSH_TYPE_GLOBAL | VRNIC_FLUSH_TYPE_PERSISTENT,
               VRNIC_FLUSH_SEL_RANGE);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, a_status(self, NULL));
    ASSERT_EQ(0, self->b.f->persists);
}

/* A crafted FLUSH with a reserved placement type: NAK INVALID_REQUEST. */
TEST_F(pair, crafted_flush_with_reserved_type_is_naked)
{
    VrnicPktAddr a = { .hop_limit = 64, .udp_sport = 0xc000 };
    uint8_t frame[256];
    VrnicPktHdrs h;
    WireLog seen = { 0 };
    size_t len;

    memset(&h, 0, sizeof(h));
    memcpy(a.smac, self->a.mac, 6);
    memcpy(a.dmac, self->b.mac, 6);
    memcpy(a.sgid, self->a.gid, 16);
    memcpy(a.dgid, self->b.gid, 16);
    h.bth.opcode = VRNIC_OP(RC, FLUSH);
    h.bth.pkey = 0xffff;
    h.bth.dqpn = self->qb.qpn;
    h.bth.psn = 100;
    h.bth.ack_req = true;
    h.feth = 0x08;              /* placement type bit 3: reserved */
    h.reth.va = self->target;
    h.reth.rkey = self->rkey;
    h.reth.len = 8;
    len = vrnic_pkt_build(frame, sizeof(frame), &a, &h, NULL, 0);
    ASSERT_LT(0, len);
    self->b.f->wire_hook = wire_log;
    self->b.f->hook_arg = &seen;
    fake_wire_put(self->b.f, frame, len);
    fake_settle(self->b.f);
    ASSERT_EQ(1, seen.n);
    ASSERT_EQ(VRNIC_OP(RC, ACK), seen.h[0].bth.opcode);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->qb));
}

TEST_HARNESS_MAIN
