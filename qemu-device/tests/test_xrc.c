/*
 * vrnic core: XRC (uapi "XRC"). ALLOC_XRCD / DEALLOC_XRCD limits and the
 * references that keep a domain; the fields an XRC target, an XRC
 * initiator and an XRC SRQ may and may not have. Between two devices: an
 * initiator's SENDs land in the SRQ each one names (multi-packet, with
 * immediate), complete on that SRQ's CQ with the target's QPN and the
 * srqn, in the XRC opcodes with the XRCETH on every request packet and on
 * no response; R_Keys are checked against the named SRQ's PD; an XRCETH
 * naming no SRQ, a basic SRQ or an SRQ of another domain is NAK remote
 * access; a duplicate READ is served under the PD of the SRQ it names;
 * an SRQ destroyed in the middle of a message takes the receive WQE the
 * target held for it along, and under a queued READ ends that stream.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define INI VRNIC_QP_TYPE_XRC_INI
#define TGT VRNIC_QP_TYPE_XRC_TGT
#define LEN 3000            /* three packets at path MTU 1024 */

static uint32_t alloc_xrcd(FakeBus *f)
{
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, VRNIC_AQ_OP_ALLOC_XRCD);
    return run(f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static uint8_t xrc_srq_cmd(FakeBus *f, uint32_t pdn, uint32_t xrcdn,
                           uint32_t cqn, uint32_t uctx, uint64_t *mem,
                           uint64_t *srqn)
{
    AnyCmd c;

    srq_cmd(&c, f, pdn, uctx, 0, mem);
    c.srq.xrcdn = htole32(xrcdn);
    c.srq.cqn = htole32(cqn);
    return run(f, &c, srqn);
}

/* CREATE_QP of an XRC target: the type and the domain, nothing else. */
static void tgt_cmd(AnyCmd *c, uint32_t xrcdn)
{
    cmd_init(c, VRNIC_AQ_OP_CREATE_QP);
    c->qp.type = TGT;
    c->qp.xrcdn = htole32(xrcdn);
}

/* CREATE_QP of an XRC initiator: the helpers' SQ, no receive side. */
static void ini_cmd(AnyCmd *c, FakeBus *f, uint32_t pdn, uint32_t scq)
{
    qp_cmd(c, INI, pdn, scq, 0, 0, 0, obj_alloc(f, QP_MEM_LEN, 4096));
    c->qp.rq_log_depth = 0;
    c->qp.rq_wqe_shift = 0;
    c->qp.max_recv_sge = 0;
    c->qp.rq_offset = 0;
}

TEST(xrcd_limits_and_references)
{
    FakeBus *f = obj_bus(NULL);
    uint32_t eqn = create_eq(f, 2, 4), pdn = alloc_pd(f, 0);
    uint32_t cqn = create_cq(f, eqn, 4, 0, &(uint64_t){ 0 });
    uint64_t mem, srqn, qpn;
    AnyCmd c;

    for (uint32_t i = 1; i <= VRNIC_XRCD_MAX; i++) {
        ASSERT_EQ(i, alloc_xrcd(f));
    }
    cmd_init(&c, VRNIC_AQ_OP_ALLOC_XRCD);
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 7));
    ASSERT_EQ(7, alloc_xrcd(f));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 0));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, VRNIC_XRCD_MAX + 1));
    cmd_init(&c, VRNIC_AQ_OP_ALLOC_XRCD);
    c.raw[20] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));

    /* An SRQ and a target each keep their domain. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, xrc_srq_cmd(f, pdn, 3, cqn, 0, &mem, &srqn));
    tgt_cmd(&c, 5);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &qpn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 3));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 5));
    /* ... and the SRQ its CQ. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, cqn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_SRQ, srqn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_QP, qpn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 3));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 5));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DEALLOC_XRCD, 5));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, cqn));
    /* A reset forgets every domain. */
    ASSERT_TRUE(f->core.obj.xrcds[1].live);
    vrnic_core_reset(&f->core);
    ASSERT_FALSE(f->core.obj.xrcds[1].live);
    fake_free(f);
}

TEST(what_xrc_objects_may_name)
{
    FakeBus *f = obj_bus(NULL);
    uint32_t eqn = create_eq(f, 2, 4), pdn = alloc_pd(f, 0);
    uint32_t upd = alloc_pd(f, 3);
    uint32_t cqn = create_cq(f, eqn, 4, 0, &(uint64_t){ 0 });
    uint32_t xrcdn = alloc_xrcd(f);
    uint64_t mem, srqn, basic, r;
    AnyCmd c;

#define TGT_BAD(sts, edit) do { \
        tgt_cmd(&c, xrcdn); \
        edit; \
        ASSERT_EQ(sts, run(f, &c, NULL)) TH_LOG("%s", #edit); \
    } while (0)
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.pdn = htole32(pdn));
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.send_cqn = htole32(cqn));
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.recv_cqn = htole32(cqn));
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.sq_log_depth = 3);
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.max_inline = htole32(1));
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.uctx = htole32(3));
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.mem.length = htole64(4096));
    TGT_BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rsvd2[0] = 1);
    TGT_BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.xrcdn = 0);
    TGT_BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.xrcdn = htole32(xrcdn + 1));
    TGT_BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.xrcdn = htole32(0xffffffff));
#undef TGT_BAD
    tgt_cmd(&c, xrcdn);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));

    /* An initiator only sends. */
    ini_cmd(&c, f, pdn, cqn);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    ini_cmd(&c, f, pdn, cqn);
    c.qp.recv_cqn = htole32(cqn);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ini_cmd(&c, f, pdn, cqn);
    c.qp.rq_log_depth = 3;
    c.qp.rq_wqe_shift = QP_RQ_SHIFT;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ini_cmd(&c, f, pdn, cqn);
    c.qp.xrcdn = htole32(xrcdn);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));

    /* An XRC SRQ: a domain and a CQ of its context; a basic one neither. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              xrc_srq_cmd(f, pdn, xrcdn + 1, cqn, 0, &mem, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              xrc_srq_cmd(f, pdn, xrcdn, 0, 0, &mem, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX,
              xrc_srq_cmd(f, upd, xrcdn, cqn, 3, &mem, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              xrc_srq_cmd(f, pdn, 0, cqn, 0, &mem, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK,
              xrc_srq_cmd(f, pdn, xrcdn, cqn, 0, &mem, &srqn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, xrc_srq_cmd(f, pdn, 0, 0, 0, &mem, &basic));
    /* A QP of another transport does not take an XRC SRQ. */
    qp_cmd(&c, VRNIC_QP_TYPE_RC, pdn, cqn, cqn, srqn, 0,
           obj_alloc(f, QP_MEM_LEN, 4096));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    qp_cmd(&c, VRNIC_QP_TYPE_RC, pdn, cqn, cqn, basic, 0,
           obj_alloc(f, QP_MEM_LEN, 4096));
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    fake_free(f);
}

/*
 * A (the initiator's node) and B (the target's): B has a domain with two
 * XRC SRQs in different PDs, each completing on a CQ of its own.
 */
FIXTURE(xrc) {
    Node a, b;
    Qp ini, tgt;
    uint32_t xrcdn, pd2, cq2;
    uint64_t cq2_ring;
    uint16_t cq2_ci;
    uint32_t srq[2];        /* [0]: B's PD and rcq; [1]: pd2 and cq2 */
    uint64_t srq_mem[2];
    uint16_t srq_pi[2];
};

FIXTURE_SETUP(xrc)
{
    uint64_t r;
    AnyCmd c;

    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
    self->xrcdn = alloc_xrcd(self->b.f);
    self->pd2 = alloc_pd(self->b.f, 0);
    self->cq2 = create_cq(self->b.f, self->b.eqn, CQ_LOG, 0, &self->cq2_ring);
    ASSERT_EQ(VRNIC_AQ_STS_OK,
              xrc_srq_cmd(self->b.f, self->b.pdn, self->xrcdn, self->b.rcq,
                          0, &self->srq_mem[0], &r));
    self->srq[0] = r;
    ASSERT_EQ(VRNIC_AQ_STS_OK,
              xrc_srq_cmd(self->b.f, self->pd2, self->xrcdn, self->cq2, 0,
                          &self->srq_mem[1], &r));
    self->srq[1] = r;

    tgt_cmd(&c, self->xrcdn);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(self->b.f, &c, &r));
    self->tgt = (Qp) { .n = &self->b, .qpn = r, .type = TGT };
    ini_cmd(&c, self->a.f, self->a.pdn, self->a.scq);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(self->a.f, &c, &r));
    self->ini = (Qp) { .n = &self->a, .qpn = r, .type = INI,
                       .mem = le64toh(c.qp.mem.iova), .rnr_retry = 7 };
    connect(&self->ini, &self->tgt, 3, 0x100, 0x200);
}

FIXTURE_TEARDOWN(xrc)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/* An MR over [addr, addr + len) in PD pdn of n (mr_any's pages). */
static uint32_t mr_in_pd(Node *n, uint32_t pdn, uint32_t access,
                         uint64_t addr, uint64_t len)
{
    uint64_t base = addr & ~((1ull << 21) - 1);
    AnyCmd c;
    uint64_t r;

    mr_cmd(&c, n, access, addr, len, 21, 0);
    c.mr.pdn = htole32(pdn);
    for (uint32_t i = 0; i < le32toh(c.mr.mem.npages); i++) {
        c.mr.mem.pages[i] = htole64(base + ((uint64_t)i << 21));
    }
    if (run(n->f, &c, &r)) {
        abort();
    }
    return r;
}

/* A receive WQE of one SGE on XRC SRQ k; the doorbell. */
static void srq_recv(FIXTURE_DATA(xrc) *self, int k, uint64_t wr_id,
                     const Sg *sg)
{
    uint8_t *w = fake_ptr(self->b.f, self->srq_mem[k] +
                          (self->srq_pi[k] % 8) * 32);
    struct vrnic_recv_wqe *h = (void *)w;
    struct vrnic_sge *s = (void *)(w + 16);

    memset(w, 0, 32);
    h->wr_id = htole64(wr_id);
    h->num_sge = 1;
    s->addr = htole64(sg->addr);
    s->length = htole32(sg->len);
    s->lkey = htole32(sg->key);
    self->srq_pi[k]++;
    db(self->b.f, 0, VRNIC_DB_SRQ, self->srq[k], self->srq_pi[k]);
}

/* Post a send WQE on the initiator naming remote XRC SRQ srqn. */
static struct vrnic_send_wqe *ini_send(FIXTURE_DATA(xrc) *self, uint64_t wr_id, uint8_t op,
                     const Sg *sg, uint64_t raddr, uint32_t rkey,
                     uint32_t imm, uint32_t srqn)
{
    struct vrnic_send_wqe *h = sq_slot(&self->ini);

    post_send(&self->ini, wr_id, op, 0, sg, sg ? 1 : 0, raddr, rkey, imm,
              NULL, 0);
    h->xrc_srqn = htole32(srqn);
    return h;
}

static bool poll_cq2(FIXTURE_DATA(xrc) *self, struct vrnic_cqe *out)
{
    struct vrnic_cqe *e = cqe_at(self->b.f, self->cq2_ring, CQ_LOG,
                                 self->cq2_ci);
    uint32_t phase = ((self->cq2_ci >> CQ_LOG) & 1) ^ 1;

    if ((le32toh(e->info) & VRNIC_CQE_INFO_PHASE) != phase) {
        return false;
    }
    *out = *e;
    self->cq2_ci++;
    cq_set_ci(self->b.f, self->cq2_ring, CQ_LOG, self->cq2_ci);
    return true;
}

/* A RECV CQE of the target: its QPN, the SRQ, the XRC flag. */
static void check_xrc_recv(struct __test_metadata *_metadata,
                           const struct vrnic_cqe *e, uint32_t tgt,
                           uint32_t srqn, uint64_t wr_id, uint32_t len)
{
    ASSERT_EQ(VRNIC_WC_SUCCESS, e->status);
    ASSERT_EQ(VRNIC_CQE_OP_RECV, e->opcode);
    ASSERT_EQ(wr_id, le64toh(e->wr_id));
    ASSERT_EQ(len, le32toh(e->byte_len));
    ASSERT_EQ(tgt, le32toh(e->qpn));
    ASSERT_EQ(srqn, le32toh(e->src_qp));
    ASSERT_TRUE(e->flags & VRNIC_CQE_FLAG_XRC);
}

TEST_F(xrc, sends_land_in_the_srq_they_name)
{
    uint64_t src = buf_alloc(&self->a, LEN);
    uint64_t d0 = buf_alloc(&self->b, LEN), d1 = buf_alloc(&self->b, LEN);
    Sg s = { src, LEN, mr_any(&self->a, 0, src, LEN) };
    Sg r0 = { d0, LEN, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, d0, LEN) };
    Sg r1 = { d1, LEN, mr_in_pd(&self->b, self->pd2,
                                VRNIC_ACCESS_LOCAL_WRITE, d1, LEN) };
    WireLog req = { 0 }, resp = { 0 };
    struct vrnic_cqe e;

    /* SRQ 1's buffer is memory of its own PD, pd2. */
    fill(&self->a, src, LEN, 9);
    srq_recv(self, 0, 0x10, &r0);
    srq_recv(self, 1, 0x11, &r1);
    self->a.f->wire_hook = wire_log;
    self->a.f->hook_arg = &req;
    self->b.f->wire_hook = wire_log;
    self->b.f->hook_arg = &resp;

    ini_send(self, 1, VRNIC_WQE_OP_SEND, &s, 0, 0, 0, self->srq[1]);
    s.len = 100;
    ini_send(self, 2, VRNIC_WQE_OP_SEND_IMM, &s, 0, 0, 0x5a5a, self->srq[0]);
    fake_settle(self->a.f);

    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(1, le64toh(e.wr_id));
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(2, le64toh(e.wr_id));
    /* Each on the CQ of the SRQ it named, none on the other. */
    ASSERT_TRUE(poll_cq2(self, &e));
    check_xrc_recv(_metadata, &e, self->tgt.qpn, self->srq[1], 0x11, LEN);
    ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src), fake_ptr(self->b.f, d1),
                        LEN));
    ASSERT_FALSE(poll_cq2(self, &e));
    ASSERT_TRUE(poll(&self->b, false, &e));
    check_xrc_recv(_metadata, &e, self->tgt.qpn, self->srq[0], 0x10, 100);
    ASSERT_TRUE(e.flags & VRNIC_CQE_FLAG_IMM);
    ASSERT_EQ(0x5a5a, e.imm_data);
    ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src), fake_ptr(self->b.f, d0),
                        100));
    ASSERT_FALSE(poll(&self->b, false, &e));

    /* The wire: XRC SEND FIRST, MIDDLE, LAST, ONLY IMM with XRCETHs. */
    ASSERT_EQ(0, req.bad);
    ASSERT_EQ(4, req.n);
    ASSERT_EQ(VRNIC_OP(XRC, SEND_FIRST), req.h[0].bth.opcode);
    ASSERT_EQ(VRNIC_OP(XRC, SEND_MIDDLE), req.h[1].bth.opcode);
    ASSERT_EQ(VRNIC_OP(XRC, SEND_LAST), req.h[2].bth.opcode);
    ASSERT_EQ(VRNIC_OP(XRC, SEND_ONLY_IMM), req.h[3].bth.opcode);
    for (unsigned i = 0; i < 3; i++) {
        ASSERT_EQ(self->srq[1], req.h[i].xrc_srqn);
    }
    ASSERT_EQ(self->srq[0], req.h[3].xrc_srqn);
    /* ... answered by XRC ACKs that give no credits. */
    ASSERT_EQ(0, resp.bad);
    ASSERT_LT(0, resp.n);
    for (unsigned i = 0; i < resp.n; i++) {
        ASSERT_EQ(VRNIC_OP(XRC, ACK), resp.h[i].bth.opcode);
        ASSERT_EQ(VRNIC_AETH_CREDITS_INVALID, resp.h[i].aeth.syndrome);
    }
}

TEST_F(xrc, keys_are_checked_against_the_named_srqs_pd)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64);
    Sg s = { src, 64, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, src, 64) };
    /* B's memory in pd2, the PD of SRQ 1. */
    uint32_t rkey = mr_in_pd(&self->b, self->pd2, ACC_ALL, dst, 64);
    struct vrnic_cqe e;
    uint64_t word = 40;

    fill(&self->a, src, 64, 3);
    memcpy(fake_ptr(self->b.f, dst + 56), &word, 8);

    s.len = 56;
    ini_send(self, 1, VRNIC_WQE_OP_RDMA_WRITE, &s, dst, rkey, 0,
             self->srq[1]);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src), fake_ptr(self->b.f, dst),
                        56));
    s.len = 64;
    ini_send(self, 2, VRNIC_WQE_OP_RDMA_READ, &s, dst, rkey, 0, self->srq[1]);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(64, le32toh(e.byte_len));
    s.len = 8;
    ini_send(self, 3, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, &s, dst + 56, rkey, 0,
             self->srq[1])->compare_add = htole64(2);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(40, *(uint64_t *)fake_ptr(self->a.f, src));
    ASSERT_EQ(42, *(uint64_t *)fake_ptr(self->b.f, dst + 56));

    /* Through SRQ 0 (B's first PD) the same key names nothing. */
    ini_send(self, 4, VRNIC_WQE_OP_RDMA_WRITE, &s, dst, rkey, 0,
             self->srq[0]);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->tgt));
    ASSERT_FALSE(poll(&self->b, false, &e));
    ASSERT_FALSE(poll_cq2(self, &e));
}

TEST_F(xrc, an_xrceth_naming_no_srq_of_the_domain_is_nak_remote_access)
{
    uint32_t other = alloc_xrcd(self->b.f);
    uint64_t mem, foreign, basic;
    uint32_t bad[3];
    struct vrnic_cqe e;

    ASSERT_EQ(VRNIC_AQ_STS_OK,
              xrc_srq_cmd(self->b.f, self->b.pdn, other, self->b.rcq, 0,
                          &mem, &foreign));
    basic = create_srq(self->b.f, self->b.pdn, 0, 0, &mem);
    bad[0] = foreign;           /* an XRC SRQ of another domain */
    bad[1] = basic;             /* a basic SRQ */
    bad[2] = 0x7fff;            /* none */
    for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
        uint64_t src = buf_alloc(&self->a, 16);
        Sg s = { src, 16, mr_any(&self->a, 0, src, 16) };
        uint64_t r;
        AnyCmd c;

        if (i) {
            tgt_cmd(&c, self->xrcdn);
            ASSERT_EQ(VRNIC_AQ_STS_OK, run(self->b.f, &c, &r));
            self->tgt.qpn = r;
            ini_cmd(&c, self->a.f, self->a.pdn, self->a.scq);
            ASSERT_EQ(VRNIC_AQ_STS_OK, run(self->a.f, &c, &r));
            self->ini.qpn = r;
            self->ini.mem = le64toh(c.qp.mem.iova);
            self->ini.sq_pi = 0;
            connect(&self->ini, &self->tgt, 3, 0x100, 0x200);
        }
        ini_send(self, i, VRNIC_WQE_OP_SEND, &s, 0, 0, 0, bad[i]);
        fake_settle(self->a.f);
        ASSERT_TRUE(poll(&self->a, true, &e)) TH_LOG("case %u", i);
        ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status) TH_LOG("case %u", i);
        ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->tgt)) TH_LOG("case %u", i);
    }
    ASSERT_FALSE(poll(&self->b, false, &e));
}

/* The first READ response from B is lost. */
static bool drop_first_read_resp(FakeBus *from, uint8_t *frame, size_t *len,
                                 void *arg)
{
    bool *dropped = arg;
    VrnicPkt p;

    if (*dropped || vrnic_pkt_parse(frame, *len, &p) != VRNIC_PKT_OK ||
        p.hdr.bth.opcode != VRNIC_OP(XRC, READ_RESP_ONLY)) {
        return true;
    }
    *dropped = true;
    return false;
}

/*
 * A READ through SRQ 1 (pd2) whose response is lost, then a SEND through
 * SRQ 0 (B's PD): the READ comes again as a duplicate, and is served
 * under the PD of the SRQ it names, not that of the message after it.
 */
TEST_F(xrc, a_duplicate_read_is_served_under_its_own_srqs_pd)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64);
    uint64_t rbuf = buf_alloc(&self->b, 64);
    Sg s = { src, 64, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, src, 64) };
    Sg r = { rbuf, 64, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, rbuf, 64) };
    uint32_t rkey = mr_in_pd(&self->b, self->pd2, ACC_ALL, dst, 64);
    struct vrnic_cqe e;
    bool dropped = false;

    fill(&self->b, dst, 64, 5);
    srq_recv(self, 0, 0x10, &r);
    srq_recv(self, 0, 0x11, &r);
    /* A first SEND, so the initiator knows the target gives no credits. */
    ini_send(self, 0, VRNIC_WQE_OP_SEND, &s, 0, 0, 0, self->srq[0]);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    self->b.f->wire_hook = drop_first_read_resp;
    self->b.f->hook_arg = &dropped;
    ini_send(self, 1, VRNIC_WQE_OP_RDMA_READ, &s, dst, rkey, 0, self->srq[1]);
    ini_send(self, 2, VRNIC_WQE_OP_SEND, &s, 0, 0, 0, self->srq[0]);
    fake_settle(self->a.f);
    ASSERT_TRUE(dropped);
    /* The SEND after the READ went in: the message in progress is SRQ 0's. */
    ASSERT_EQ(self->b.pdn, self->b.f->core.obj.qps[self->tgt.qpn].pdn);
    for (unsigned t = 0; t < 16 && !poll(&self->a, true, &e); t++) {
        ASSERT_TRUE(fake_fire_timer(self->a.f));
        fake_settle(self->a.f);
    }
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(1, le64toh(e.wr_id));
    ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src), fake_ptr(self->b.f, dst),
                        64));
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(2, le64toh(e.wr_id));
    ASSERT_LT(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_READ_REPLAYS]);
}

/*
 * A READ stream queued under SRQ 1, waiting for an on-demand page of the
 * MR it reads: destroying the SRQ ends it (its PD may go next), in NAK
 * remote access, even once the page comes.
 */
TEST_F(xrc, an_srq_destroyed_under_a_queued_read_ends_it)
{
    uint64_t src = buf_alloc(&self->a, 4096);
    uint64_t table = obj_alloc(self->b.f, 4096, 4096);
    uint64_t dst = obj_alloc(self->b.f, 4096, 4096);
    uint64_t *leaf = fake_ptr(self->b.f, table);
    Sg s = { src, 4096, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, src,
                               4096) };
    VrnicXport *x = self->b.f->core.obj.qps[self->tgt.qpn].x;
    struct vrnic_cqe e;
    uint64_t rkey;
    AnyCmd c;

    /* An on-demand MR of pd2, its one page not mapped yet. */
    memset(leaf, 0, 4096);
    mr_cmd(&c, &self->b, ACC_ALL, dst, 4096, 12, 1);
    c.mr.pdn = htole32(self->pd2);
    c.mr.flags = htole32(VRNIC_MR_FLAG_ON_DEMAND);
    c.mr.mem.pages[0] = htole64(table);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(self->b.f, &c, &rkey));

    ini_send(self, 1, VRNIC_WQE_OP_RDMA_READ, &s, dst, rkey, 0, self->srq[1]);
    fake_settle(self->a.f);
    ASSERT_NE(x->q_head, x->q_tail);            /* the stream waits */
    ASSERT_EQ(VRNIC_AQ_STS_OK,
              destroy(self->b.f, VRNIC_AQ_OP_DESTROY_SRQ, self->srq[1]));
    leaf[0] = htole64(dst | VRNIC_ODP_PRESENT | VRNIC_ODP_WRITABLE);
    cmd_init(&c, VRNIC_AQ_OP_PAGE_FAULT_DONE);
    c.pf_done.qpn = htole32(self->tgt.qpn);
    c.pf_done.flags = htole32(VRNIC_PF_RESPONDER);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(self->b.f, &c, NULL));
    fake_settle(self->a.f);
    for (unsigned t = 0; t < 16 && !poll(&self->a, true, &e); t++) {
        ASSERT_TRUE(fake_fire_timer(self->a.f));
        fake_settle(self->a.f);
    }
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->tgt));
}

/* Frames from A after the first are lost while *arg is set. */
static bool only_first(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    unsigned *n = arg;

    return ++*n == 1;
}

TEST_F(xrc, an_srq_destroyed_mid_message_takes_its_wqe_along)
{
    uint64_t src = buf_alloc(&self->a, LEN), dst = buf_alloc(&self->b, LEN);
    Sg s = { src, LEN, mr_any(&self->a, 0, src, LEN) };
    Sg r = { dst, LEN, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, LEN) };
    struct vrnic_cqe e;
    unsigned n = 0;

    srq_recv(self, 0, 0x10, &r);
    self->a.f->wire_hook = only_first;
    self->a.f->hook_arg = &n;
    ini_send(self, 1, VRNIC_WQE_OP_SEND, &s, 0, 0, 0, self->srq[0]);
    fake_settle(self->a.f);
    ASSERT_TRUE(self->b.f->core.obj.qps[self->tgt.qpn].x->have_rwqe);
    ASSERT_EQ(VRNIC_AQ_STS_OK,
              destroy(self->b.f, VRNIC_AQ_OP_DESTROY_SRQ, self->srq[0]));
    ASSERT_FALSE(self->b.f->core.obj.qps[self->tgt.qpn].x->have_rwqe);
    /* The rest comes again: it names an SRQ that is gone. */
    self->a.f->wire_hook = NULL;
    for (unsigned t = 0; t < 16 && !poll(&self->a, true, &e); t++) {
        ASSERT_TRUE(fake_fire_timer(self->a.f));
        fake_settle(self->a.f);
    }
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->tgt));
    /* Nothing, not even a flush, reached the gone SRQ's CQ. */
    fake_settle(self->b.f);
    ASSERT_FALSE(poll(&self->b, false, &e));
}

TEST_HARNESS_MAIN
