/*
 * vrnic core against a hostile guest and a hostile wire peer: the holes of
 * issue 13, one regression test each (Documentation/security.rst).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_bus.h"
#include "obj_helpers.h"
#include "xport_helpers.h"
#include "kselftest_harness.h"

/* Another device's registers, e.g. the MMCONFIG page of a root port. */
#define MMIO_GPA    0x80000000ull
#define MMIO_LEN    0x1000ull

FIXTURE(hostile) {
    Node a, b;
};

FIXTURE_SETUP(hostile)
{
    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
    self->b.f->mmio_gpa = MMIO_GPA;
    self->b.f->mmio_len = MMIO_LEN;
}

FIXTURE_TEARDOWN(hostile)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/* B: an MR whose one page is the MMIO window (a guest can program that). */
static uint32_t mmio_mr(Node *n)
{
    uint32_t key;

    if (reg_mr(n->f, n->pdn, ACC_ALL, 0x11, MMIO_GPA, MMIO_LEN, &key)) {
        abort();
    }
    return key;
}

/* A: a 2-byte RDMA WRITE to offset 0x3e of B's MMIO MR (bridge control). */
static void write_bridge_control(Node *A, Qp *qa, uint32_t rkey)
{
    uint64_t src = buf_alloc(A, 2);
    Sg s = { src, 2, mr_any(A, 0, src, 2) };

    memset(fake_ptr(A->f, src), 0x40, 2);     /* secondary bus reset */
    post_send(qa, 0x77, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, MMIO_GPA + 0x3e,
              rkey, 0, NULL, 0);
    fake_settle(A->f);
}

/*
 * Hole 2: DMA that decodes to another device's MMIO is refused by the bus
 * (the glue's MemTxAttrs.memory), so it can have no side effect; the
 * responder answers the WRITE as an access error, and counts it.
 */
TEST_F(hostile, write_into_mmio_is_refused_and_naked)
{
    Qp qa, qb;
    struct vrnic_cqe e;
    uint32_t rkey = mmio_mr(&self->b);

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 10, 20);
    write_bridge_control(&self->a, &qa, rkey);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    ASSERT_EQ(0, self->b.f->mmio_writes);
    ASSERT_LE(1, self->b.f->mmio_refused);
    ASSERT_LE(1, self->b.f->core.stats.port[VRNIC_PORT_STAT_DMA_ERRORS]);
    ASSERT_FALSE(self->b.f->core.fatal);
}

/*
 * The READ side of hole 2: data the bus refuses is not sent as zeros with
 * a good status; the responder NAKs a remote access error.
 */
TEST_F(hostile, read_from_mmio_is_naked_not_zeros)
{
    Node *A = &self->a;
    uint64_t dst = buf_alloc(A, 64);
    Sg s = { dst, 64, mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    uint32_t rkey = mmio_mr(&self->b);
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 10, 20);
    post_send(&qa, 0x78, VRNIC_WQE_OP_RDMA_READ, 0, &s, 1, MMIO_GPA, rkey, 0,
              NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    ASSERT_LE(1, self->b.f->mmio_refused);
}

static void reset_device(FakeBus *f, uint64_t addr)
{
    vrnic_core_reset(&f->core);
}

/*
 * Hole 2, the other half: were such a DMA ever to reach a handler that
 * resets this device (a bus without the RAM-only rule), the reset used to
 * run inside vrnic_mr_rw and free the QP's transport state under the
 * responder (use after free, caught by ASan). It is deferred to the end of
 * the running work, and then done in full.
 */
TEST_F(hostile, reset_from_inside_dma_is_deferred)
{
    FakeBus *f = self->b.f;
    Qp qa, qb;
    uint32_t rkey = mmio_mr(&self->b);

    f->mmio_reachable = true;
    f->mmio_write = reset_device;
    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 10, 20);
    write_bridge_control(&self->a, &qa, rkey);
    ASSERT_EQ(1, f->mmio_writes);
    /* The reset happened, after the work that caused it returned. */
    ASSERT_EQ(0, f->core.running);
    ASSERT_FALSE(f->core.reset_pending);
    ASSERT_FALSE(f->core.aq.live);
    ASSERT_EQ(0, f->core.obj.n_qps);
    ASSERT_EQ(0, f->core.obj.n_mrs);
    /* And the device comes back: the driver can start it again. */
    fake_aq_enable(f, 6);
    ASSERT_NE(0, alloc_pd(f, 0));
}

/* Uninit from inside the core's work only stops it; it frees on return. */
static void uninit_device(FakeBus *f, uint64_t addr)
{
    vrnic_core_uninit(&f->core);
}

TEST_F(hostile, uninit_from_inside_dma_is_deferred)
{
    FakeBus *f = self->b.f;
    Qp qa, qb;
    uint32_t rkey = mmio_mr(&self->b);

    f->mmio_reachable = true;
    f->mmio_write = uninit_device;
    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 10, 20);
    write_bridge_control(&self->a, &qa, rkey);
    ASSERT_EQ(1, f->mmio_writes);
    ASSERT_TRUE(f->core.gone);
    ASSERT_EQ(0, f->core.running);
    ASSERT_EQ(NULL, f->core.obj.qps);   /* freed on the way out */
    /* A gone core takes nothing more, and fake_free must not free twice. */
    vrnic_core_eth_receive(&f->core, (uint8_t[64]) { 0 }, 64);
    vrnic_core_run(&f->core, VRNIC_WORK_QUEUES);
    ASSERT_EQ(0, f->core.running);
}

/*
 * A frame from a third node: source GID 10.0.0.3 (or a spoofed one), to
 * B's GID and MAC, with the given headers and payload.
 */
static size_t forge(const uint8_t sgid[16], Node *to, VrnicPktHdrs *h,
                    const void *payload, uint32_t plen, uint8_t *frame,
                    size_t size)
{
    VrnicPktAddr a = { .hop_limit = 64, .udp_sport = 0xc000 };
    static const uint8_t mac3[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x03 };

    memcpy(a.smac, mac3, 6);
    memcpy(a.dmac, to->mac, 6);
    memcpy(a.sgid, sgid, 16);
    memcpy(a.dgid, to->gid, 16);
    h->bth.pkey = 0xffff;
    return vrnic_pkt_build(frame, size, &a, h, payload, plen);
}

/*
 * Hole 3: a UC QP took a WRITE ONLY from anyone (UC starts a message at
 * any FIRST/ONLY PSN). From a GID that is not the QP's peer it is dropped
 * and counted; the same frame from the peer's GID lands.
 */
TEST_F(hostile, uc_write_from_a_third_node_is_dropped)
{
    Node *B = &self->b;
    VrnicCounters *sb = &B->f->core.stats;
    uint64_t dst = buf_alloc(B, 64);
    uint32_t rkey = mr_any(B, ACC_ALL, dst, 64);
    uint8_t third[16], frame[256], data[32];
    VrnicPktHdrs h;
    size_t len;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_UC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_UC, 0);
    connect(&qa, &qb, 1, 10, 20);
    memset(fake_ptr(B->f, dst), 0xee, 64);
    memset(data, 0x66, sizeof(data));
    gid_v4(third, 3);
    memset(&h, 0, sizeof(h));
    h.bth.opcode = VRNIC_OP(UC, WRITE_ONLY);
    h.bth.dqpn = qb.qpn;
    h.bth.psn = 12345;
    h.reth.va = dst;
    h.reth.rkey = rkey;
    h.reth.len = sizeof(data);
    len = forge(third, B, &h, data, sizeof(data), frame, sizeof(frame));
    fake_wire_put(B->f, frame, len);
    fake_settle(B->f);
    ASSERT_EQ(0xee, *(uint8_t *)fake_ptr(B->f, dst));
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_RX_BAD_ADDR]);
    /* The peer's own address passes the check (and the data lands). */
    len = forge(self->a.gid, B, &h, data, sizeof(data), frame, sizeof(frame));
    fake_wire_put(B->f, frame, len);
    fake_settle(B->f);
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_RX_BAD_ADDR]);
    ASSERT_EQ(0x66, *(uint8_t *)fake_ptr(B->f, dst));
}

static bool drop_all(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    return false;
}

/*
 * Hole 3: a forged ACK of the outstanding PSN from a third node completed
 * the requester's SEND, whose data never arrived. It must complete
 * nothing; the real ACK from the peer later does.
 */
TEST_F(hostile, rc_ack_from_a_third_node_completes_nothing)
{
    Node *A = &self->a;
    VrnicCounters *sa = &A->f->core.stats;
    uint64_t src = buf_alloc(A, 64), dst = buf_alloc(&self->b, 64);
    Sg s = { src, 64, mr_any(A, 0, src, 64) };
    Sg r = { dst, 64, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    uint8_t third[16], frame[256];
    struct vrnic_cqe e;
    VrnicPktHdrs h;
    size_t len;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 100, 200);
    post_recv(&qb, 2, &r, 1);
    /* The SEND is lost on the wire: it stays outstanding at A. */
    A->f->wire_hook = drop_all;
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(A->f);
    A->f->wire_hook = NULL;
    ASSERT_FALSE(poll(A, true, &e));
    gid_v4(third, 3);
    memset(&h, 0, sizeof(h));
    h.bth.opcode = VRNIC_OP(RC, ACK);
    h.bth.dqpn = qa.qpn;
    h.bth.psn = 100;                /* the SEND's one PSN */
    h.aeth.syndrome = 0x1f;
    h.aeth.msn = 1;
    len = forge(third, A, &h, NULL, 0, frame, sizeof(frame));
    fake_wire_put(A->f, frame, len);
    fake_settle(A->f);
    ASSERT_FALSE(poll(A, true, &e));
    ASSERT_EQ(1, sa->port[VRNIC_PORT_STAT_RX_BAD_ADDR]);
    /* The retransmit reaches B; B's ACK completes the SEND. */
    while (!poll(A, true, &e)) {
        ASSERT_TRUE(fake_fire_timer(A->f));
    }
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(1, le64toh(e.wr_id));
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, src), fake_ptr(self->b.f, dst), 64));
}

/*
 * Fill the wire of n: VRNIC_WIRE_MAX_QUEUED Ethernet frames a stalled
 * backend keeps; the device then sends nothing until it drains.
 */
static void fill_the_wire(Node *n)
{
    FakeBus *f = n->f;
    uint64_t ring = obj_alloc(f, 128 * VRNIC_ETH_DESC_SIZE, 4096);
    uint64_t buf = obj_alloc(f, 64, 64);

    fake_wr64(f, VRNIC_REG_ETH_TX_BASE_LO, ring);
    fake_wr(f, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | 7);
    for (unsigned i = 0; i < VRNIC_WIRE_MAX_QUEUED; i++) {
        struct vrnic_eth_desc *d = fake_ptr(f, ring + i * VRNIC_ETH_DESC_SIZE);

        d->addr = htole64(buf);
        d->len = htole16(60);
    }
    f->wire_stalled = true;
    fake_wr(f, VRNIC_REG_ETH_TX_PI, VRNIC_WIRE_MAX_QUEUED);
    fake_settle(f);
    if (f->wire_queued != VRNIC_WIRE_MAX_QUEUED) {
        abort();
    }
}

/*
 * Hole 8: a UD send's length and packet count are fixed against the MTU
 * when it starts; the packet used to be built against the port MTU of the
 * moment it left. A 1000-byte send that waited behind a full wire while
 * the driver lowered the MTU went out as a 256-byte prefix and completed
 * SUCCESS on both ends. It must fail as too long, and nothing leaves.
 */
TEST_F(hostile, ud_send_never_leaves_cut_short)
{
    Node *A = &self->a, *B = &self->b;
    uint64_t src = buf_alloc(A, 1000), dst = buf_alloc(B, 2048);
    Sg s = { src, 1000, mr_any(A, 0, src, 1000) };
    Sg r = { dst, 2048, mr_any(B, VRNIC_ACCESS_LOCAL_WRITE, dst, 2048) };
    struct vrnic_qp_attr at = good_attr();
    struct vrnic_aq_set_mtu *mtu;
    struct vrnic_cqe e;
    unsigned rx_before;
    AnyCmd c;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_UD, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_UD, 0);
    qp_up(&qa, NULL, 0, 1, 0);
    qp_up(&qb, NULL, 0, 1, 0);
    at.qkey = htole32(0x11);
    ASSERT_EQ(0, modify_qp(A->f, qa.qpn, VRNIC_QP_ATTR_QKEY, 0, &at));
    ASSERT_EQ(0, modify_qp(B->f, qb.qpn, VRNIC_QP_ATTR_QKEY, 0, &at));
    post_recv(&qb, 9, &r, 1);
    fill_the_wire(A);
    rx_before = B->f->core.stats.port[VRNIC_PORT_STAT_RX_PKTS];
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, &qb, 0x11);
    fake_settle(A->f);
    ASSERT_FALSE(poll(A, true, &e));        /* waiting for the wire */
    cmd_init(&c, VRNIC_AQ_OP_SET_MTU);
    mtu = (void *)&c;
    mtu->mtu = htole32(300);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(A->f, &c, NULL));
    fake_wire_drain(A->f);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_LOC_LEN_ERR, e.status);
    ASSERT_EQ(rx_before, B->f->core.stats.port[VRNIC_PORT_STAT_RX_PKTS]);
    ASSERT_FALSE(poll(B, false, &e));
}

/* An RC WRITE MIDDLE from A's address to B's QP: valid except for size. */
static size_t write_middle(Node *A, Node *B, uint32_t dqpn, uint32_t psn,
                           uint32_t plen, uint8_t *frame, size_t size)
{
    static uint8_t payload[16384];
    VrnicPktHdrs h;

    memset(&h, 0, sizeof(h));
    h.bth.opcode = VRNIC_OP(RC, WRITE_MIDDLE);
    h.bth.dqpn = dqpn;
    h.bth.psn = psn;
    return forge(A->gid, B, &h, payload, plen, frame, size);
}

/*
 * Hole 6: packets past a PSN gap were held before their payload was
 * checked against the path MTU, and forever: a peer could make the device
 * keep 1024 frames of ~64 KiB. Only packets that could go in as they are
 * are held (here: 256-byte MIDDLEs at path MTU 256), and a gap that does
 * not close within VRNIC_OOO_MAX_AGE_NS gives its frames back.
 */
TEST_F(hostile, held_frames_are_checked_bounded_and_aged)
{
    Node *B = &self->b;
    VrnicCore *core = &B->f->core;
    static uint8_t frame[16384 + 256];
    size_t len;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 1000, 5000);       /* B expects PSN 1000 */
    for (uint32_t psn = 1001; psn <= 1064; psn++) {
        len = write_middle(&self->a, B, qb.qpn, psn, 16384, frame,
                           sizeof(frame));
        ASSERT_NE(0, len);
        vrnic_core_eth_receive(core, frame, len);
    }
    ASSERT_EQ(0, core->ooo_held);
    ASSERT_EQ(64, core->stats.port[VRNIC_PORT_STAT_RX_OOO_DROPPED]);
    /* The right size is held (and counted as such) ... */
    for (uint32_t psn = 1001; psn <= 1010; psn++) {
        len = write_middle(&self->a, B, qb.qpn, psn, 256, frame,
                           sizeof(frame));
        vrnic_core_eth_receive(core, frame, len);
    }
    ASSERT_EQ(10, core->ooo_held);
    ASSERT_EQ(10, core->stats.port[VRNIC_PORT_STAT_RX_OOO_HELD]);
    /* ... until the gap has been open for the maximum age. */
    for (unsigned i = 0; core->ooo_held && i < 100; i++) {
        ASSERT_TRUE(fake_fire_timer(B->f));
    }
    ASSERT_EQ(0, core->ooo_held);
    ASSERT_LE(VRNIC_OOO_MAX_AGE_NS, B->f->now_ns);
    ASSERT_EQ(74, core->stats.port[VRNIC_PORT_STAT_RX_OOO_DROPPED]);
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qb));
}

/* Memory in one 2 MiB page of the window (inline descriptor, 1 page). */
static void mem_2m(struct vrnic_mem_desc *d, uint64_t page, uint64_t addr,
                   uint64_t len)
{
    memset(d, 0, sizeof(*d));
    d->iova = htole64(addr);
    d->length = htole64(len);
    d->flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, 21));
    d->npages = htole32(1);
    d->pages[0] = htole64(page);
}

static uint32_t big_cq(Node *n, uint64_t page, uint32_t log_depth)
{
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(n->eqn);
    c.cq.log_depth = htole32(log_depth);
    mem_2m(&c.cq.mem, page, page,
           (VRNIC_CQE_SIZE << log_depth) + VRNIC_DBREC_SIZE);
    return run(n->f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

/*
 * Hole 5: moving a QP with 16384 posted sends to ERR flushed them all in
 * the one admin bottom half (tens of thousands of DMA transfers; a guest
 * can do it for a thousand QPs at once), and RESIZE_CQ copied every CQE in
 * one go. Both now spend a bounded amount of work per run and go on in the
 * next; every flush CQE and every copied CQE still arrives.
 */
TEST(deep_flush_and_resize_take_bounded_runs)
{
    VrnicConfig cfg = fake_default_config();
    Node n;
    FakeBus *f;
    uint64_t cq_page, qp_page, new_page;
    struct vrnic_qp_attr at = good_attr();
    struct vrnic_cqe *e;
    uint32_t cqn, qpn;
    AnyCmd c;
    uint64_t r;

    cfg.max_qp_wr = 1u << 14;
    node_init_cfg(&n, 1, false, &cfg);
    f = n.f;
    cq_page = obj_alloc(f, 2u << 20, 2u << 20);
    qp_page = obj_alloc(f, 2u << 20, 2u << 20);
    new_page = obj_alloc(f, (VRNIC_CQE_SIZE << 15) + VRNIC_DBREC_SIZE,
                         2u << 20);
    cqn = big_cq(&n, cq_page, 15);
    ASSERT_NE(0, cqn);
    qp_cmd(&c, VRNIC_QP_TYPE_RC, n.pdn, cqn, cqn, 0, 0, qp_page);
    c.qp.sq_log_depth = 14;
    c.qp.sq_wqe_shift = 6;
    c.qp.max_send_sge = 0;
    c.qp.max_inline = 0;
    c.qp.rq_log_depth = 0;
    c.qp.rq_wqe_shift = 0;
    c.qp.max_recv_sge = 0;
    c.qp.rq_offset = 0;
    mem_2m(&c.qp.mem, qp_page, qp_page, 64u << 14);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    qpn = r;
    at.access = htole32(ACC_ALL);
    ASSERT_EQ(0, modify_qp(f, qpn, QS | req_init(VRNIC_QP_TYPE_RC),
                           VRNIC_QPS_INIT, &at));
    for (uint32_t i = 0; i < (1u << 14); i++) {
        struct vrnic_send_wqe *w = fake_ptr(f, qp_page + 64ull * i);

        w->wr_id = htole64(i);
    }
    db(f, 0, VRNIC_DB_SQ, qpn, 1u << 14);   /* waits: the QP is in INIT */
    fake_settle(f);
    f->max_run_dma = 0;
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, &at));
    ASSERT_EQ(1u << 14, f->core.obj.cqs[cqn].pi);
    e = cqe_at(f, cq_page, 15, (1u << 14) - 1);
    ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e->status);
    ASSERT_EQ((1u << 14) - 1, le64toh(e->wr_id));
    ASSERT_GE(12000, f->max_run_dma);

    /* All 16384 CQEs (the consumer polled none) into a new ring. */
    f->max_run_dma = 0;
    cmd_init(&c, VRNIC_AQ_OP_RESIZE_CQ);
    c.cq.handle = htole32(cqn);
    c.cq.eqn = htole32(n.eqn);
    c.cq.log_depth = htole32(15);
    mem_2m(&c.cq.mem, new_page, new_page,
           (VRNIC_CQE_SIZE << 15) + VRNIC_DBREC_SIZE);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    ASSERT_EQ(1u << 14, f->core.obj.cqs[cqn].pi);
    e = cqe_at(f, new_page, 15, (1u << 14) - 1);
    ASSERT_EQ((1u << 14) - 1, le64toh(e->wr_id));
    ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e->status);
    ASSERT_GE(12000, f->max_run_dma);
    fake_free(f);
}

/*
 * Hole 9: a DMA MR names all of memory by identity; only the kernel's PDs
 * (uctx 0) may have one. On a user context's PD it is refused.
 */
TEST(dma_mr_only_on_a_kernel_pd)
{
    FakeBus *f = obj_bus(NULL);
    uint32_t kpd = alloc_pd(f, 0), upd = alloc_pd(f, 3);
    AnyCmd c;
    uint64_t key;

    cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.flags = htole32(VRNIC_MR_FLAG_DMA);
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    c.mr.mem.iova = 0;
    c.mr.mem.length = htole64(~0ull);
    c.mr.pdn = htole32(upd);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, &key));
    ASSERT_EQ(0, f->core.obj.n_mrs);
    c.mr.pdn = htole32(kpd);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &key));
    /* Nor may REREG_MR move it onto one. */
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(key);
    c.mr.flags = htole32(VRNIC_MR_REREG_PD);
    c.mr.pdn = htole32(upd);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ASSERT_EQ(kpd, f->core.obj.mrs[VRNIC_FIELD_GET(VRNIC_KEY_INDEX_MASK,
                                                   key)].pdn);
    fake_free(f);
}

/* An RC READ request from A's address (a valid peer) for len bytes. */
static size_t read_req(Node *A, Node *B, uint32_t dqpn, uint32_t psn,
                       uint64_t va, uint32_t rkey, uint32_t len,
                       uint8_t *frame, size_t size)
{
    VrnicPktHdrs h;

    memset(&h, 0, sizeof(h));
    h.bth.opcode = VRNIC_OP(RC, READ_REQ);
    h.bth.dqpn = dqpn;
    h.bth.psn = psn;
    h.bth.ack_req = true;
    h.reth.va = va;
    h.reth.rkey = rkey;
    h.reth.len = len;
    return forge(A->gid, B, &h, NULL, 0, frame, size);
}

/*
 * Hole 9: IBTA messages are at most 2^31 bytes; the responder took READs
 * (and WRITEs) of up to 4 GiB. Longer is an invalid request: NAK, ERR.
 */
TEST_F(hostile, read_longer_than_2g_is_an_invalid_request)
{
    Node *B = &self->b;
    uint8_t frame[256];
    uint64_t rkey;
    size_t len;
    AnyCmd c;
    Qp qa, qb;

    /* A 3 GiB MR (1 GiB pages; nothing is read before the check). */
    cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.pdn = htole32(B->pdn);
    c.mr.access = htole32(ACC_ALL);
    c.mr.mem.length = htole64(3ull << 30);
    c.mr.mem.flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, 30));
    c.mr.mem.npages = htole32(3);
    for (unsigned i = 0; i < 3; i++) {
        c.mr.mem.pages[i] = htole64((1ull + i) << 30);
    }
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(B->f, &c, &rkey));
    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 1000, 5000);
    len = read_req(&self->a, B, qb.qpn, 1000, 0, rkey, 0x80000001u, frame,
                   sizeof(frame));
    vrnic_core_eth_receive(&B->f->core, frame, len);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qb));
    ASSERT_EQ(1, B->f->core.stats.port[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(0, B->f->core.obj.qps[qb.qpn].x->rd_pending);
}

/* A WRITE FIRST/LAST of 256 bytes each (path MTU 256) from A's address. */
static size_t write_pkt(Node *A, Node *B, uint32_t dqpn, uint32_t psn,
                        bool first, uint64_t va, uint32_t rkey,
                        const uint8_t *data, uint8_t *frame, size_t size)
{
    VrnicPktHdrs h;

    memset(&h, 0, sizeof(h));
    h.bth.opcode = first ? VRNIC_OP(RC, WRITE_FIRST) : VRNIC_OP(RC, WRITE_LAST);
    h.bth.dqpn = dqpn;
    h.bth.psn = psn;
    h.bth.ack_req = !first;
    h.reth.va = va;
    h.reth.rkey = rkey;
    h.reth.len = 512;
    return forge(A->gid, B, &h, data, 256, frame, size);
}

/*
 * Hole 9: the QP's remote rights were checked at a WRITE's FIRST packet
 * only. MODIFY_QP taking REMOTE_WRITE away mid-message now stops the rest:
 * the LAST packet is refused (NAK remote access) and writes nothing.
 */
TEST_F(hostile, rights_taken_mid_write_stop_the_rest)
{
    Node *B = &self->b;
    uint64_t buf = buf_alloc(B, 512);
    uint32_t rkey = mr_any(B, ACC_ALL, buf, 512);
    struct vrnic_qp_attr at = good_attr();
    uint8_t frame[512], data[256];
    size_t len;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 1000, 5000);
    memset(fake_ptr(B->f, buf), 0xee, 512);
    memset(data, 0x33, sizeof(data));
    len = write_pkt(&self->a, B, qb.qpn, 1000, true, buf, rkey, data, frame,
                    sizeof(frame));
    vrnic_core_eth_receive(&B->f->core, frame, len);
    ASSERT_EQ(0x33, *(uint8_t *)fake_ptr(B->f, buf));
    at.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(0, modify_qp(B->f, qb.qpn, VRNIC_QP_ATTR_ACCESS, 0, &at));
    len = write_pkt(&self->a, B, qb.qpn, 1001, false, buf, rkey, data, frame,
                    sizeof(frame));
    vrnic_core_eth_receive(&B->f->core, frame, len);
    ASSERT_EQ(0xee, *(uint8_t *)fake_ptr(B->f, buf + 256));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qb));
}

/*
 * Hole 9: receive WQEs taken from an SRQ were checked against the QP's PD.
 * They name memory of the SRQ's PD (its owner posted them), which may be
 * another one: an MR of the SRQ's PD works, one of only the QP's PD not.
 */
TEST_F(hostile, srq_receive_buffers_use_the_srq_pd)
{
    Node *A = &self->a, *B = &self->b;
    FakeBus *f = B->f;
    uint32_t pd2 = alloc_pd(f, 0);
    uint64_t smem = obj_alloc(f, 4096, 4096);
    uint64_t src = buf_alloc(A, 64), dst = buf_alloc(B, 128);
    Sg s = { src, 64, mr_any(A, 0, src, 64) };
    uint32_t key_srq_pd, key_qp_pd, srqn;
    struct vrnic_recv_wqe *w;
    struct vrnic_sge *g;
    struct vrnic_cqe e;
    AnyCmd c;
    uint64_t r;
    Qp qa, qb;

    ASSERT_EQ(0, reg_mr(f, pd2, VRNIC_ACCESS_LOCAL_WRITE, 1, dst, 64,
                        &key_srq_pd));
    key_qp_pd = mr_any(B, VRNIC_ACCESS_LOCAL_WRITE, dst + 64, 64);
    cmd_init(&c, VRNIC_AQ_OP_CREATE_SRQ);
    c.srq.pdn = htole32(pd2);
    c.srq.log_depth = 3;
    c.srq.wqe_shift = 5;
    c.srq.max_sge = 1;
    mem_inline(&c.srq.mem, smem, 8 * 32);
    ASSERT_EQ(0, run(f, &c, &r));
    srqn = r;
    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, srqn);     /* QP of B->pdn, SRQ of pd2 */
    connect(&qa, &qb, 1, 10, 20);
    for (unsigned i = 0; i < 2; i++) {
        w = fake_ptr(f, smem + i * 32);
        g = (void *)(w + 1);
        w->wr_id = htole64(0x700 + i);
        w->num_sge = 1;
        g->addr = htole64(i ? dst + 64 : dst);
        g->length = htole32(64);
        g->lkey = htole32(i ? key_qp_pd : key_srq_pd);
    }
    db(f, 0, VRNIC_DB_SRQ, srqn, 2);
    fill(A, src, 64, 3);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(B, false, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(0x700, le64toh(e.wr_id));
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, src), fake_ptr(f, dst), 64));
    post_send(&qa, 2, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(B, false, &e));
    ASSERT_EQ(VRNIC_WC_LOC_PROT_ERR, e.status);
    ASSERT_EQ(0x701, le64toh(e.wr_id));
}

/*
 * Hole 3, on the loopback path: another QP of this device (another
 * process, the same GID as the real peer) wrote into a connected UC QP
 * with a stolen R_Key. The device knows the sending QP there, and an
 * RC/UC QP takes loopback frames only from the QP it is connected to.
 */
TEST(loopback_uc_write_only_from_the_connected_qp)
{
    Node n;
    uint64_t dst, src;
    uint32_t rkey;
    struct vrnic_cqe e;
    Sg s;
    Qp q1, q2, evil, evil_peer;

    node_init(&n, 1, false);
    dst = buf_alloc(&n, 64);
    src = buf_alloc(&n, 64);
    rkey = mr_any(&n, ACC_ALL, dst, 64);
    s = (Sg){ src, 64, mr_any(&n, 0, src, 64) };
    qp_new(&q1, &n, VRNIC_QP_TYPE_UC, 0);
    qp_new(&q2, &n, VRNIC_QP_TYPE_UC, 0);
    connect(&q1, &q2, 1, 10, 20);
    /* evil "connects" to q2, which is connected to q1, not to evil. */
    qp_new(&evil, &n, VRNIC_QP_TYPE_UC, 0);
    evil_peer = q2;
    qp_up(&evil, &evil_peer, 1, 30, 40);
    memset(fake_ptr(n.f, dst), 0xee, 64);
    memset(fake_ptr(n.f, src), 0x66, 64);
    post_send(&evil, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0,
              NULL, 0);
    fake_settle(n.f);
    ASSERT_TRUE(poll(&n, true, &e));        /* UC: done once it is sent */
    ASSERT_EQ(0xee, *(uint8_t *)fake_ptr(n.f, dst));
    ASSERT_EQ(1, n.f->core.stats.port[VRNIC_PORT_STAT_RX_BAD_ADDR]);
    /* From q1, the connected QP, the same WRITE lands. */
    post_send(&q1, 2, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0,
              NULL, 0);
    fake_settle(n.f);
    ASSERT_EQ(0x66, *(uint8_t *)fake_ptr(n.f, dst));
    fake_free(n.f);
}

TEST_HARNESS_MAIN
