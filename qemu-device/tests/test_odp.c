/*
 * vrnic core: on-demand paging (vrnic_odp.c) between two device cores on
 * the fake wire. An on-demand MR starts with no page mapped; each access
 * that needs unmapped pages must raise one PAGE_FAULT event (QP, side,
 * write, key, first page, count), touch no memory, and go on once the test
 * - playing the driver - fills the entries and answers PAGE_FAULT_DONE:
 * an incoming WRITE, atomic and SEND (RNR NAK, then the resend lands), a
 * READ response stream (stops, then goes on), a SEND and a READ of the
 * requester (its send queue stops before the packet). Also: a read-only
 * page faults for a write; ODP_INVALIDATE drops the cached translation so
 * that no DMA reaches the old page; a FAILED answer fails the access with
 * the IBTA status; a fault that finds the AEQ full waits for room instead
 * of being lost; the commands' and REG_MR's checks. Implicit MRs: a sparse
 * four-level tree over 2^48 bytes, where a fault names a 36-bit page.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define PORT(n, stat) ((n)->f->core.stats.port[VRNIC_PORT_STAT_##stat])
#define PG 4096u

/* An on-demand MR over [addr, addr + npages pages): one table, all absent. */
typedef struct OdpMr {
    uint32_t key;
    uint64_t addr;
    uint64_t *table;        /* the leaf entries, as the driver writes them */
} OdpMr;

static uint8_t odp_mr_reg(Node *n, OdpMr *m, uint32_t access, uint32_t npages,
                          uint32_t flags, uint32_t levels)
{
    uint64_t table = obj_alloc(n->f, PG, PG);
    uint64_t r = 0;
    AnyCmd c;
    uint8_t sts;

    m->addr = obj_alloc(n->f, (uint64_t)npages * PG, PG);
    memset(fake_ptr(n->f, m->addr), 0xee, (size_t)npages * PG);
    m->table = fake_ptr(n->f, table);
    memset(m->table, 0, PG);
    mr_cmd(&c, n, access, m->addr, (uint64_t)npages * PG, 12, levels);
    c.mr.flags = htole32(flags);
    c.mr.mem.pages[0] = htole64(table);
    sts = run(n->f, &c, &r);
    m->key = r;
    return sts;
}

static uint32_t odp_mr(Node *n, OdpMr *m, uint32_t access, uint32_t npages)
{
    if (odp_mr_reg(n, m, access, npages, VRNIC_MR_FLAG_ON_DEMAND, 1)) {
        abort();
    }
    return m->key;
}

/* The driver maps page i of m (identity), writable or read-only. */
static void odp_map(OdpMr *m, uint32_t i, bool writable)
{
    m->table[i] = htole64((m->addr + (uint64_t)i * PG) | VRNIC_ODP_PRESENT |
                          (writable ? VRNIC_ODP_WRITABLE : 0));
}

/* The next PAGE_FAULT on n's AEQ (other events are skipped), consumed. */
typedef struct Fault {
    uint32_t qpn, npages, key;
    uint64_t page;
    bool write, responder;
} Fault;

static uint16_t aeq_ci[2];

static bool next_fault(Node *n, unsigned who, Fault *out)
{
    for (;;) {
        /* A copy: the CI write below lets the device reuse the slot. */
        struct vrnic_aeqe_page_fault e = *(struct vrnic_aeqe_page_fault *)
                                         aeqe_at(n->f, aeq_ci[who]);
        uint32_t owner = le32toh(e.owner), ev = le32toh(e.event);
        uint32_t phase = ((aeq_ci[who] >> 4) & 1) ^ 1;

        if ((owner & VRNIC_OWNER_PHASE) != phase) {
            return false;
        }
        aeq_ci[who]++;
        fake_wr(n->f, VRNIC_REG_AEQ_CI, aeq_ci[who]);
        if (VRNIC_FIELD_GET(VRNIC_AEQE_EVENT_MASK, ev) !=
            VRNIC_AEQ_EV_PAGE_FAULT) {
            continue;
        }
        *out = (Fault) {
            .qpn = VRNIC_FIELD_GET(VRNIC_PF_QPN_MASK, ev),
            .npages = VRNIC_FIELD_GET(VRNIC_PF_NPAGES_MASK, owner),
            .write = ev & VRNIC_PF_WRITE,
            .responder = ev & VRNIC_PF_RESPONDER,
            .key = le32toh(e.key),
            .page = le32toh(e.page_lo) |
                    (uint64_t)VRNIC_FIELD_GET(VRNIC_PF_PAGE_HI_MASK, owner)
                    << 32,
        };
        return true;
    }
}

static uint8_t fault_done(Node *n, uint32_t qpn, bool responder,
                          uint32_t status)
{
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_PAGE_FAULT_DONE);
    c.pf_done.qpn = htole32(qpn);
    c.pf_done.flags = htole32(responder ? VRNIC_PF_RESPONDER : 0);
    c.pf_done.status = htole32(status);
    return run(n->f, &c, NULL);
}

static uint8_t odp_invalidate(Node *n, uint32_t key, uint64_t page,
                              uint32_t npages)
{
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_ODP_INVALIDATE);
    c.odp_inval.handle = htole32(key);
    c.odp_inval.page = htole64(page);
    c.odp_inval.npages = htole32(npages);
    return run(n->f, &c, NULL);
}

static bool all_bytes(Node *n, uint64_t addr, uint64_t len, uint8_t v)
{
    const uint8_t *p = fake_ptr(n->f, addr);

    for (uint64_t i = 0; i < len; i++) {
        if (p[i] != v) {
            return false;
        }
    }
    return true;
}

FIXTURE(odp) {
    Node a, b;      /* a: requester, b: responder */
    Qp qa, qb;
};

FIXTURE_SETUP(odp)
{
    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
    aeq_ci[0] = aeq_ci[1] = 0;
    qp_new(&self->qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&self->qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&self->qa, &self->qb, 3, 100, 500);  /* path MTU 1024 */
}

FIXTURE_TEARDOWN(odp)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/*
 * An RDMA WRITE of three pages into three unmapped ones: one responder
 * write fault for all three, an RNR NAK, nothing written; once mapped and
 * answered, the resend after the RNR wait lands.
 */
TEST_F(odp, incoming_write_faults_then_lands)
{
    uint64_t src = buf_alloc(&self->a, 3 * PG);
    Sg s = { src, 3 * PG, mr_any(&self->a, 0, src, 3 * PG) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;

    odp_mr(&self->b, &m, ACC_ALL, 4);
    fill(&self->a, src, 3 * PG, 1);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, m.addr + PG,
              m.key, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_EQ(self->qb.qpn, f.qpn);
    EXPECT_TRUE(f.responder);
    EXPECT_TRUE(f.write);
    EXPECT_EQ(m.key, f.key);
    EXPECT_EQ(1, f.page);
    EXPECT_EQ(3, f.npages);
    EXPECT_FALSE(next_fault(&self->b, 1, &f));      /* one per side */
    EXPECT_LE(1, PORT(&self->b, RNR_NAKS_SENT));
    EXPECT_TRUE(all_bytes(&self->b, m.addr, 4 * PG, 0xee));
    EXPECT_FALSE(poll(&self->a, true, &e));

    for (uint32_t i = 1; i <= 3; i++) {
        odp_map(&m, i, true);
    }
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_MAPPED));
    while (!poll(&self->a, true, &e) && fake_fire_timer(self->a.f)) {
    }
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                        fake_ptr(self->b.f, m.addr + PG), 3 * PG));
    EXPECT_TRUE(all_bytes(&self->b, m.addr, PG, 0xee));
    EXPECT_EQ(1, PORT(&self->b, PAGE_FAULTS));
}

/* A page mapped read-only faults for a write (a copy-on-write break). */
TEST_F(odp, read_only_page_faults_for_a_write)
{
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;

    odp_mr(&self->b, &m, ACC_ALL, 1);
    odp_map(&m, 0, false);
    fill(&self->a, src, 64, 2);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, m.addr,
              m.key, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_TRUE(f.write);
    EXPECT_EQ(0, f.page);
    EXPECT_TRUE(all_bytes(&self->b, m.addr, 64, 0xee));
    odp_map(&m, 0, true);
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_MAPPED));
    while (!poll(&self->a, true, &e) && fake_fire_timer(self->a.f)) {
    }
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                        fake_ptr(self->b.f, m.addr), 64));
}

/* A READ response stream from unmapped pages stops, then goes on. */
TEST_F(odp, read_response_stream_waits_for_its_pages)
{
    uint64_t dst = buf_alloc(&self->a, 2 * PG);
    Sg s = { dst, 2 * PG, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, dst,
                                 2 * PG) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;

    odp_mr(&self->b, &m, ACC_ALL, 2);
    fill(&self->b, m.addr, 2 * PG, 3);
    memset(fake_ptr(self->a.f, dst), 0, 2 * PG);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_READ, 0, &s, 1, m.addr, m.key,
              0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_TRUE(f.responder);
    EXPECT_FALSE(f.write);
    EXPECT_EQ(0, f.page);
    EXPECT_FALSE(poll(&self->a, true, &e));
    EXPECT_TRUE(all_bytes(&self->a, dst, 2 * PG, 0));
    odp_map(&m, 0, false);
    odp_map(&m, 1, false);
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_MAPPED));
    fake_settle(self->b.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, dst),
                        fake_ptr(self->b.f, m.addr), 2 * PG));
}

/* An atomic on an unmapped page: RNR NAK, then executed once. */
TEST_F(odp, atomic_on_an_unmapped_page_runs_once_mapped)
{
    uint64_t res = buf_alloc(&self->a, 8);
    Sg s = { res, 8, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, res, 8) };
    struct vrnic_cqe e;
    uint64_t *word;
    OdpMr m;
    Fault f;

    odp_mr(&self->b, &m, ACC_ALL, 1);
    word = fake_ptr(self->b.f, m.addr + 64);
    *word = htole64(40);
    post_atomic(&self->qa, 1, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, &s, m.addr + 64,
                m.key, 2, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_TRUE(f.write);
    EXPECT_EQ(40, le64toh(*word));
    odp_map(&m, 0, true);
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_MAPPED));
    while (!poll(&self->a, true, &e) && fake_fire_timer(self->a.f)) {
    }
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(42, le64toh(*word));
    EXPECT_EQ(40, le64toh(*(uint64_t *)fake_ptr(self->a.f, res)));
}

/* A SEND into a receive buffer on unmapped pages: RNR NAK, then received. */
TEST_F(odp, send_into_unmapped_receive_buffer_waits)
{
    uint64_t src = buf_alloc(&self->a, 2000);
    Sg s = { src, 2000, mr_any(&self->a, 0, src, 2000) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;
    Sg r;

    odp_mr(&self->b, &m, VRNIC_ACCESS_LOCAL_WRITE, 1);
    r = (Sg) { m.addr, PG, m.key };
    fill(&self->a, src, 2000, 4);
    post_recv(&self->qb, 9, &r, 1);
    post_send(&self->qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_TRUE(f.responder);
    EXPECT_TRUE(f.write);
    EXPECT_FALSE(poll(&self->b, false, &e));
    odp_map(&m, 0, true);
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_MAPPED));
    while (!poll(&self->a, true, &e) && fake_fire_timer(self->a.f)) {
    }
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(&self->b, false, &e));
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(9, le64toh(e.wr_id));
    EXPECT_EQ(2000, le32toh(e.byte_len));
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                        fake_ptr(self->b.f, m.addr), 2000));
}

/*
 * The requester's own pages: a SEND from unmapped ones sends nothing and
 * stops the send queue (a requester fault, not a write); a READ into
 * unmapped ones faults for a write before the request leaves.
 */
TEST_F(odp, requester_stops_before_a_packet_that_needs_pages)
{
    uint64_t dst = buf_alloc(&self->b, 2 * PG), rsrc = buf_alloc(&self->b, 64);
    Sg r = { dst, 2 * PG, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst,
                                 2 * PG) };
    uint32_t rkey = mr_any(&self->b, ACC_ALL, rsrc, 64);
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;
    Sg s;

    odp_mr(&self->a, &m, VRNIC_ACCESS_LOCAL_WRITE, 2);
    fill(&self->a, m.addr, 2 * PG, 5);
    s = (Sg) { m.addr, 1500, m.key };
    post_recv(&self->qb, 3, &r, 1);
    post_send(&self->qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->a, 0, &f));
    EXPECT_EQ(self->qa.qpn, f.qpn);
    EXPECT_FALSE(f.responder);
    EXPECT_FALSE(f.write);
    EXPECT_EQ(0, f.page);
    EXPECT_EQ(0, PORT(&self->b, RX_PKTS));
    odp_map(&m, 0, false);
    ASSERT_EQ(0, fault_done(&self->a, f.qpn, false, VRNIC_PF_DONE_MAPPED));
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(&self->b, false, &e));
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, m.addr),
                        fake_ptr(self->b.f, dst), 1500));

    /* READ into page 1, still unmapped: a write fault, nothing sent. */
    fill(&self->b, rsrc, 64, 6);
    s = (Sg) { m.addr + PG, 64, m.key };
    post_send(&self->qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, &s, 1, rsrc, rkey, 0,
              NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->a, 0, &f));
    EXPECT_FALSE(f.responder);
    EXPECT_TRUE(f.write);
    EXPECT_EQ(1, f.page);
    odp_map(&m, 1, true);
    ASSERT_EQ(0, fault_done(&self->a, f.qpn, false, VRNIC_PF_DONE_MAPPED));
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    EXPECT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, m.addr + PG),
                        fake_ptr(self->b.f, rsrc), 64));
}

/*
 * After a WRITE through a cached translation, the driver clears the entry
 * and invalidates: the next WRITE must fault, and must not reach the page
 * the cache held (the driver may have given it away).
 */
TEST_F(odp, invalidate_drops_the_cached_translation)
{
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;

    odp_mr(&self->b, &m, ACC_ALL, 1);
    odp_map(&m, 0, true);
    fill(&self->a, src, 64, 7);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, m.addr, m.key,
              0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_FALSE(next_fault(&self->b, 1, &f));

    m.table[0] = 0;
    ASSERT_EQ(0, odp_invalidate(&self->b, m.key, 0, 1));
    EXPECT_EQ(1, PORT(&self->b, ODP_INVALIDATIONS));
    memset(fake_ptr(self->b.f, m.addr), 0xee, 64);
    fill(&self->a, src, 64, 8);
    post_send(&self->qa, 2, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, m.addr, m.key,
              0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_TRUE(all_bytes(&self->b, m.addr, 64, 0xee));
    EXPECT_FALSE(poll(&self->a, true, &e));
}

/*
 * FAILED answers: the responder NAKs REMOTE_ACCESS (the requester's WQE
 * completes REM_ACCESS_ERR), the requester completes LOC_PROT_ERR.
 */
TEST_F(odp, failed_answer_fails_the_access)
{
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;

    odp_mr(&self->b, &m, ACC_ALL, 1);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, m.addr, m.key,
              0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_FAILED));
    while (!poll(&self->a, true, &e) && fake_fire_timer(self->a.f)) {
    }
    EXPECT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    EXPECT_TRUE(all_bytes(&self->b, m.addr, PG, 0xee));
}

TEST_F(odp, failed_answer_fails_the_requesters_wqe)
{
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;
    Sg s;

    odp_mr(&self->a, &m, VRNIC_ACCESS_LOCAL_WRITE, 1);
    s = (Sg) { m.addr, 64, m.key };
    post_send(&self->qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->a, 0, &f));
    ASSERT_EQ(0, fault_done(&self->a, f.qpn, false, VRNIC_PF_DONE_FAILED));
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    EXPECT_EQ(VRNIC_WC_LOC_PROT_ERR, e.status);
    EXPECT_EQ(VRNIC_QPS_ERR, qp_state(&self->qa));
    EXPECT_EQ(0, PORT(&self->b, RX_PKTS));
}

/*
 * A fault that finds the AEQ full is not lost: it is posted when the
 * driver consumes entries. Until then PAGE_FAULT_DONE has nothing to
 * answer.
 */
TEST_F(odp, fault_waits_for_room_in_a_full_aeq)
{
    uint64_t dst = buf_alloc(&self->b, 64);
    Sg r = { dst, 64, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    struct vrnic_cqe e;
    OdpMr m;
    Fault f;
    Sg s;

    post_recv(&self->qb, 1, &r, 1);
    odp_mr(&self->a, &m, VRNIC_ACCESS_LOCAL_WRITE, 1);
    while (next_fault(&self->a, 0, &f)) {
    }
    /* Fill the 16 entries behind the test's consumer index. */
    while ((uint16_t)(self->a.f->core.aeq.pi - aeq_ci[0]) < 16) {
        vrnic_aeq_post(&self->a.f->core, VRNIC_AEQ_EV_SRQ_LIMIT, 99);
    }
    s = (Sg) { m.addr, 64, m.key };
    post_send(&self->qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    EXPECT_EQ(1, PORT(&self->a, PAGE_FAULTS));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_STATE,
              fault_done(&self->a, self->qa.qpn, false, VRNIC_PF_DONE_MAPPED));
    /* Consuming the 16 makes room: the fault comes after them. */
    ASSERT_TRUE(next_fault(&self->a, 0, &f));
    EXPECT_EQ(self->qa.qpn, f.qpn);
    odp_map(&m, 0, false);
    ASSERT_EQ(0, fault_done(&self->a, f.qpn, false, VRNIC_PF_DONE_MAPPED));
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
}

/* The commands' and REG_MR's rules for on-demand MRs. */
TEST_F(odp, commands_check_their_fields)
{
    uint64_t buf = buf_alloc(&self->b, PG);
    uint32_t plain = mr_any(&self->b, ACC_ALL, buf, PG);
    OdpMr m, bad;
    AnyCmd c;

    odp_mr(&self->b, &m, ACC_ALL, 2);
    EXPECT_EQ(VRNIC_AQ_STS_BAD_STATE,
              fault_done(&self->b, self->qb.qpn, true, VRNIC_PF_DONE_MAPPED));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              fault_done(&self->b, 999, true, VRNIC_PF_DONE_MAPPED));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              fault_done(&self->b, self->qb.qpn, true, 2));
    cmd_init(&c, VRNIC_AQ_OP_PAGE_FAULT_DONE);
    c.pf_done.qpn = htole32(self->qb.qpn);
    c.pf_done.flags = htole32(VRNIC_PF_WRITE);
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(self->b.f, &c, NULL));

    EXPECT_EQ(0, odp_invalidate(&self->b, m.key, 1, 1));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_STATE, odp_invalidate(&self->b, plain, 0, 1));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_INDEX, odp_invalidate(&self->b, 0x7700, 0, 1));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD, odp_invalidate(&self->b, m.key, 0, 0));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD, odp_invalidate(&self->b, m.key, 1, 2));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              odp_invalidate(&self->b, m.key, 2, 0xffffffffu));

    /* Tables only; not with DMA or device memory. */
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              odp_mr_reg(&self->b, &bad, ACC_ALL, 1, VRNIC_MR_FLAG_ON_DEMAND,
                         0));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              odp_mr_reg(&self->b, &bad, ACC_ALL, 1,
                         VRNIC_MR_FLAG_ON_DEMAND | VRNIC_MR_FLAG_DEVICE_MEM,
                         1));
    /* Its translation is the driver's to change, not REREG_MR's. */
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(m.key);
    c.mr.flags = htole32(VRNIC_MR_REREG_TRANS);
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(self->b.f, &c, NULL));
}

/* ---- implicit MRs ------------------------------------------------------ */

/* REG_MR of an implicit MR; *root: its top directory (zeroed). */
static uint8_t implicit_reg(Node *n, uint64_t *root, uint32_t flags,
                            uint64_t length, uint64_t *key)
{
    AnyCmd c;

    *root = obj_alloc(n->f, PG, PG);
    memset(fake_ptr(n->f, *root), 0, PG);
    cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.pdn = htole32(n->pdn);
    c.mr.access = htole32(ACC_ALL);
    c.mr.flags = htole32(flags);
    c.mr.mem.length = htole64(length);
    c.mr.mem.pages[0] = htole64(*root);
    return run(n->f, &c, key);
}

/* Page p of an implicit MR at pa: the tables on its path as needed. */
static uint64_t *implicit_leaf(Node *n, uint64_t root, uint64_t p)
{
    uint64_t table = root;

    for (int l = VRNIC_ODP_IMPLICIT_LEVELS - 1; l > 0; l--) {
        uint64_t *e = (uint64_t *)fake_ptr(n->f, table) + ((p >> (9 * l)) & 511);

        if (!*e) {
            uint64_t t = obj_alloc(n->f, PG, PG);

            memset(fake_ptr(n->f, t), 0, PG);
            *e = htole64(t);
        }
        table = le64toh(*e);
    }
    return (uint64_t *)fake_ptr(n->f, table) + (p & 511);
}

/*
 * A WRITE to a high I/O address of an implicit MR: the fault names its
 * page (36 bits wide); mapped through a fresh path of tables, the resend
 * lands; cleared and invalidated, the next WRITE faults again and the old
 * page keeps its bytes.
 */
TEST_F(odp, implicit_mr_faults_at_any_address)
{
    const uint64_t va = 0x7f1234567000ull, p = va >> 12;
    uint64_t src = buf_alloc(&self->a, 64), root, key;
    uint64_t page = obj_alloc(self->b.f, PG, PG);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    struct vrnic_cqe e;
    Fault f;

    ASSERT_EQ(0, implicit_reg(&self->b, &root, VRNIC_MR_FLAG_ON_DEMAND |
                              VRNIC_MR_FLAG_IMPLICIT, ~0ull, &key));
    memset(fake_ptr(self->b.f, page), 0xee, PG);
    fill(&self->a, src, 64, 9);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, va + 0x40,
              key, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_EQ(p, f.page);
    EXPECT_EQ(1, f.npages);
    EXPECT_EQ(key, f.key);
    *implicit_leaf(&self->b, root, p) =
        htole64(page | VRNIC_ODP_PRESENT | VRNIC_ODP_WRITABLE);
    ASSERT_EQ(0, fault_done(&self->b, f.qpn, true, VRNIC_PF_DONE_MAPPED));
    while (!poll(&self->a, true, &e) && fake_fire_timer(self->a.f)) {
    }
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    EXPECT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                        fake_ptr(self->b.f, page + 0x40), 64));

    *implicit_leaf(&self->b, root, p) = 0;
    ASSERT_EQ(0, odp_invalidate(&self->b, key, p, 1));
    memset(fake_ptr(self->b.f, page), 0xee, PG);
    post_send(&self->qa, 2, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, va + 0x40,
              key, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(next_fault(&self->b, 1, &f));
    EXPECT_EQ(p, f.page);
    EXPECT_TRUE(all_bytes(&self->b, page, PG, 0xee));
}

/* REG_MR's rules for implicit MRs, and the end of their address space. */
TEST_F(odp, implicit_mr_rules)
{
    uint64_t src = buf_alloc(&self->a, 64), root, key;
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    struct vrnic_cqe e;
    AnyCmd c;

    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              implicit_reg(&self->b, &root, VRNIC_MR_FLAG_IMPLICIT, ~0ull,
                           &key));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              implicit_reg(&self->b, &root, VRNIC_MR_FLAG_ON_DEMAND |
                           VRNIC_MR_FLAG_IMPLICIT, 1ull << 40, &key));
    cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.pdn = htole32(self->b.pdn);
    c.mr.flags = htole32(VRNIC_MR_FLAG_ON_DEMAND | VRNIC_MR_FLAG_IMPLICIT);
    c.mr.mem.length = htole64(~0ull);
    c.mr.mem.pages[0] = htole64(root + 8);
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(self->b.f, &c, NULL));
    ASSERT_EQ(0, implicit_reg(&self->b, &root, VRNIC_MR_FLAG_ON_DEMAND |
                              VRNIC_MR_FLAG_IMPLICIT, ~0ull, &key));
    EXPECT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              odp_invalidate(&self->b, key,
                             1ull << (VRNIC_ODP_IMPLICIT_VA_BITS - 12), 1));
    /* Past 2^48 is outside the MR: REMOTE_ACCESS, no fault. */
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1,
              1ull << VRNIC_ODP_IMPLICIT_VA_BITS, key, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    EXPECT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    EXPECT_EQ(0, PORT(&self->b, PAGE_FAULTS));
}

TEST_HARNESS_MAIN
