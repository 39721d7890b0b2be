/*
 * vrnic core: memory windows - ALLOC_MW/DEALLOC_MW
 * validation; type 2 windows bound with a BIND_MW WQE and reached by RDMA
 * WRITE/READ from the peer, only inside the window and only on the QP
 * that bound it; LOCAL_INV and SEND with Invalidate; type 1 rebinding and
 * zero-length unbind; every bind refusal (MW_BIND_ERR); MRs pinned while
 * windows are bound; a window key is never an L_Key; QP destroy unbinds.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define MW_ACC_MR (VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_MW_BIND)

static uint8_t alloc_mw(Node *n, uint32_t pdn, uint8_t type, uint8_t key_byte,
                        uint32_t *key)
{
    AnyCmd c;
    struct vrnic_aq_alloc_mw *m = (void *)&c;
    uint64_t r = 0;
    uint8_t sts;

    cmd_init(&c, VRNIC_AQ_OP_ALLOC_MW);
    m->pdn = htole32(pdn);
    m->type = type;
    m->key_byte = key_byte;
    sts = run(n->f, &c, &r);
    if (key) {
        *key = r;
    }
    return sts;
}

/* Post a BIND_MW WQE (signaled) and ring the doorbell. */
static void post_bind(Qp *q, uint64_t wr_id, uint32_t mw_key, uint32_t mr_key,
                      uint32_t access, uint64_t addr, uint64_t len)
{
    struct vrnic_bind_mw_wqe *b = sq_slot(q);

    memset(b, 0, sizeof(*b));
    b->wr_id = htole64(wr_id);
    b->opcode = VRNIC_WQE_OP_BIND_MW;
    b->flags = VRNIC_WQE_FLAG_SIGNALED;
    b->mw_key = htole32(mw_key);
    b->mr_key = htole32(mr_key);
    b->access = htole32(access);
    b->addr = htole64(addr);
    b->length = htole64(len);
    sq_ring(q);
}

/* A one-WQE RDMA WRITE of len bytes from a to rkey/raddr; its status. */
static uint8_t write_to(Qp *qa, uint32_t rkey, uint64_t raddr, uint32_t len)
{
    Node *a = qa->n;
    uint64_t src = buf_alloc(a, len);
    Sg s = { src, len, mr_any(a, 0, src, len) };

    fill(a, src, len, len);
    post_send(qa, 7, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, raddr, rkey, 0, NULL,
              0);
    fake_settle(a->f);
    return next_status(a, true, NULL);
}

FIXTURE(mw) {
    Node a, b;
    Qp qa, qb;
    uint64_t target;    /* 64 KiB on b, MR tkey (MW_BIND + LOCAL_WRITE) */
    uint32_t tkey;
};

FIXTURE_SETUP(mw)
{
    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
    qp_new(&self->qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&self->qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&self->qa, &self->qb, 3, 0x10, 0x20);
    self->target = buf_alloc(&self->b, 65536);
    self->tkey = mr_any(&self->b, MW_ACC_MR, self->target, 65536);
}

FIXTURE_TEARDOWN(mw)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/*
 * A window of type on b, bound through qb to the first 64 bytes of the
 * target MR with REMOTE_READ; the allocated key (the bound one is key + 1),
 * 0 if anything failed.
 */
static uint32_t bound_window(FIXTURE_DATA(mw) *self, uint8_t type)
{
    Node *b = &self->b;
    uint32_t k;

    if (alloc_mw(b, b->pdn, type, 1, &k) != VRNIC_AQ_STS_OK) {
        return 0;
    }
    post_bind(&self->qb, 1, k + 1, self->tkey, VRNIC_ACCESS_REMOTE_READ,
              self->target, 64);
    fake_settle(b->f);
    return next_status(b, true, NULL) == VRNIC_WC_SUCCESS ? k : 0;
}

TEST_F(mw, alloc_dealloc_validation)
{
    Node *b = &self->b;
    uint32_t k1, k2, mkey, pd2;
    AnyCmd c;

    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_1, 0x11, &k1));
    ASSERT_EQ(0x11, k1 & 0xff);
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_2, 0x22, &k2));
    ASSERT_NE(k1 >> 8, k2 >> 8);
    ASSERT_NE(self->tkey >> 8, k1 >> 8);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, alloc_mw(b, b->pdn, 0, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, alloc_mw(b, b->pdn, 3, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, alloc_mw(b, 999, VRNIC_MW_TYPE_1, 0,
                                               NULL));
    cmd_init(&c, VRNIC_AQ_OP_ALLOC_MW);
    ((struct vrnic_aq_alloc_mw *)&c)->pdn = htole32(b->pdn);
    ((struct vrnic_aq_alloc_mw *)&c)->type = VRNIC_MW_TYPE_1;
    ((struct vrnic_aq_alloc_mw *)&c)->rsvd0[5] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(b->f, &c, NULL));
    /* A window is no MR: not an L_Key, not for the MR commands. */
    ASSERT_EQ(VRNIC_MR_BAD_KEY, vrnic_mr_check(&b->f->core, k1, b->pdn, 0,
                                               self->target, 1, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(b->f, VRNIC_AQ_OP_DEREG_MR, k1));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW,
                                              self->tkey));
    /* The PD is held by its windows. */
    pd2 = alloc_pd(b->f, 0);
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, pd2, VRNIC_MW_TYPE_2, 0, &mkey));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(b->f, VRNIC_AQ_OP_DEALLOC_PD,
                                              pd2));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW, mkey));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEALLOC_PD, pd2));
    /* Dealloc ignores the key byte (binds change it); twice is an error. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW,
                                       k1 ^ 0xff));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW,
                                              k1));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW, k2));
}

TEST_F(mw, type2_bind_access_and_local_invalidate)
{
    Node *b = &self->b;
    uint64_t win = self->target + 4096;
    uint8_t op;
    uint32_t k, nk;

    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_2, 0x30, &k));
    nk = (k & ~0xffu) | 0x31;
    post_bind(&self->qb, 1, nk, self->tkey, VRNIC_ACCESS_REMOTE_WRITE |
              VRNIC_ACCESS_REMOTE_READ, win, 8192);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, &op));
    ASSERT_EQ(VRNIC_CQE_OP_BIND_MW, op);
    ASSERT_EQ(1, b->f->core.obj.mrs[self->tkey >> 8].mw_refs);

    /* The bound key works inside the window; the old key byte does not. */
    ASSERT_EQ(VRNIC_WC_SUCCESS, write_to(&self->qa, nk, win, 8192));
    ASSERT_EQ(0, memcmp(fake_ptr(b->f, win),
                        fake_ptr(self->a.f, self->a.f->obj_next - 8192),
                        8192));
    ASSERT_EQ(VRNIC_MR_BAD_KEY,
              vrnic_rkey_check(&b->f->core, k, self->qb.qpn, b->pdn,
                               VRNIC_ACCESS_REMOTE_WRITE, win, 1, NULL));
    /* Outside the window (inside the MR), or a right it lacks. */
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS,
              vrnic_rkey_check(&b->f->core, nk, self->qb.qpn, b->pdn,
                               VRNIC_ACCESS_REMOTE_WRITE, win - 1, 2, NULL));
    ASSERT_EQ(VRNIC_MR_BAD_ACCESS,
              vrnic_rkey_check(&b->f->core, nk, self->qb.qpn, b->pdn,
                               VRNIC_ACCESS_REMOTE_ATOMIC, win, 8, NULL));
    /* Type 2: only on the QP that bound it. */
    ASSERT_EQ(VRNIC_MR_BAD_KEY,
              vrnic_rkey_check(&b->f->core, nk, self->qb.qpn + 1, b->pdn,
                               VRNIC_ACCESS_REMOTE_WRITE, win, 1, NULL));
    /* The MR stays while the window is bound. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(b->f, VRNIC_AQ_OP_DEREG_MR,
                                              self->tkey));

    /* LOCAL_INV with a stale key byte fails (QP to ERR): use a new pair
     * for that below; the right key unbinds. */
    post_send(&self->qb, 2, VRNIC_WQE_OP_LOCAL_INV, 0, NULL, 0, 0, 0,
              htole32(nk), NULL, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, &op));
    ASSERT_EQ(VRNIC_CQE_OP_LOCAL_INV, op);
    ASSERT_EQ(0, b->f->core.obj.mrs[self->tkey >> 8].mw_refs);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, write_to(&self->qa, nk, win, 16));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEREG_MR,
                                       self->tkey));
}

TEST_F(mw, remote_read_through_window)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t win = self->target + 100, dst = buf_alloc(a, 3000);
    Sg d = { dst, 3000, mr_any(a, VRNIC_ACCESS_LOCAL_WRITE, dst, 3000) };
    uint32_t k, nk;

    fill(b, self->target, 65536, 9);
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_2, 0x40, &k));
    nk = k + 1;
    post_bind(&self->qb, 1, nk, self->tkey, VRNIC_ACCESS_REMOTE_READ, win,
              3000);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, NULL));
    post_send(&self->qa, 3, VRNIC_WQE_OP_RDMA_READ, 0, &d, 1, win, nk, 0,
              NULL, 0);
    fake_settle(a->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_EQ(0, memcmp(fake_ptr(a->f, dst), fake_ptr(b->f, win), 3000));
    /* No REMOTE_WRITE right in this window. */
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, write_to(&self->qa, nk, win, 8));
}

TEST_F(mw, send_with_invalidate)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t src = buf_alloc(a, 64), dst = buf_alloc(b, 64);
    Sg s = { src, 64, mr_any(a, 0, src, 64) };
    Sg r = { dst, 64, mr_any(b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    struct vrnic_cqe e;
    uint32_t k, nk;

    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_2, 0x50, &k));
    nk = k + 1;
    post_bind(&self->qb, 1, nk, self->tkey, VRNIC_ACCESS_REMOTE_WRITE,
              self->target, 4096);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, NULL));
    post_recv(&self->qb, 2, &r, 1);
    post_send(&self->qa, 3, VRNIC_WQE_OP_SEND_INV, 0, &s, 1, 0, 0,
              htole32(nk), NULL, 0);
    fake_settle(a->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_TRUE(poll(b, false, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(e.flags & VRNIC_CQE_FLAG_INV);
    ASSERT_EQ(nk, le32toh(e.imm_data));
    ASSERT_FALSE(b->f->core.obj.mrs[nk >> 8].bound);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, write_to(&self->qa, nk, self->target,
                                                8));
}

TEST_F(mw, send_with_invalidate_of_an_mr_is_invalid_request)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t src = buf_alloc(a, 64), dst = buf_alloc(b, 64);
    Sg s = { src, 64, mr_any(a, 0, src, 64) };
    Sg r = { dst, 64, mr_any(b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };

    post_recv(&self->qb, 2, &r, 1);
    post_send(&self->qa, 3, VRNIC_WQE_OP_SEND_INV, 0, &s, 1, 0, 0,
              htole32(self->tkey), NULL, 0);
    fake_settle(a->f);
    ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, next_status(a, true, NULL));
    ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, next_status(b, false, NULL));
    ASSERT_TRUE(b->f->core.obj.mrs[self->tkey >> 8].live);
}

TEST_F(mw, type1_rebind_and_zero_length_unbind)
{
    Node *b = &self->b;
    uint32_t k, k1, k2;

    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_1, 0x60, &k));
    k1 = k + 1;
    post_bind(&self->qb, 1, k1, self->tkey, VRNIC_ACCESS_REMOTE_WRITE,
              self->target, 4096);
    k2 = k + 2;
    post_bind(&self->qb, 2, k2, self->tkey, VRNIC_ACCESS_REMOTE_WRITE,
              self->target + 8192, 4096);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, NULL));
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, NULL));
    ASSERT_EQ(1, b->f->core.obj.mrs[self->tkey >> 8].mw_refs);
    /* Type 1 is not tied to a QP; the old key is gone. */
    ASSERT_EQ(VRNIC_MR_OK,
              vrnic_rkey_check(&b->f->core, k2, 12345, b->pdn,
                               VRNIC_ACCESS_REMOTE_WRITE, self->target + 8192,
                               4096, NULL));
    ASSERT_EQ(VRNIC_MR_BAD_KEY,
              vrnic_rkey_check(&b->f->core, k1, self->qb.qpn, b->pdn,
                               VRNIC_ACCESS_REMOTE_WRITE, self->target, 1,
                               NULL));
    ASSERT_EQ(VRNIC_WC_SUCCESS, write_to(&self->qa, k2, self->target + 8192,
                                         4096));
    /* Length 0 unbinds (no MR needed). */
    post_bind(&self->qb, 3, k + 3, 0, 0, 0, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, NULL));
    ASSERT_EQ(0, b->f->core.obj.mrs[self->tkey >> 8].mw_refs);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, write_to(&self->qa, k + 3,
                                                self->target, 8));
}

/* One bind on a fresh QP of b (a failure moves it to ERR). */
static uint8_t bind_status(Node *b, uint32_t mw_key, uint32_t mr_key,
                           uint32_t access, uint64_t addr, uint64_t len)
{
    uint8_t op = 0, sts;
    Qp q;

    self_qp(&q, b);
    post_bind(&q, 9, mw_key, mr_key, access, addr, len);
    fake_settle(b->f);
    sts = next_status(b, true, &op);
    if (sts != VRNIC_WC_SUCCESS && (op != VRNIC_CQE_OP_BIND_MW ||
                                    qp_state(&q) != VRNIC_QPS_ERR)) {
        return 0xfe;
    }
    return sts;
}

TEST_F(mw, every_bind_refusal)
{
    Node *b = &self->b;
    uint32_t pd2 = alloc_pd(b->f, 0), k, k2, kother, plain, ro;
    uint64_t t = self->target;
    Qp q;

    plain = mr_any(b, VRNIC_ACCESS_LOCAL_WRITE, t, 4096);
    ro = mr_any(b, VRNIC_ACCESS_MW_BIND, t, 4096);
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_2, 1, &k));
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, b->pdn, VRNIC_MW_TYPE_1, 1, &k2));
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mw(b, pd2, VRNIC_MW_TYPE_1, 1, &kother));

    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, self->tkey, self->tkey,
                                                0, t, 8));     /* an MR key */
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, kother, self->tkey, 0, t,
                                                8));           /* other PD */
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, k, plain, 0, t, 8));
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, k, self->tkey,
                                                VRNIC_ACCESS_MW_BIND, t, 8));
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, k, self->tkey, 0, t + 65535,
                                                2));           /* past MR */
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, k, ro,
                                                VRNIC_ACCESS_REMOTE_WRITE, t,
                                                8));   /* MR lacks LW */
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, k2, 0, 0, t, 8));
    /* A good bind, then type 2 cannot be bound again while bound. */
    ASSERT_EQ(VRNIC_WC_SUCCESS, bind_status(b, k + 1, ro,
                                            VRNIC_ACCESS_REMOTE_READ, t, 8));
    ASSERT_EQ(VRNIC_WC_MW_BIND_ERR, bind_status(b, k + 2, ro,
                                                VRNIC_ACCESS_REMOTE_READ, t,
                                                8));
    /* LOCAL_INV of something that is not a bound type 2 window. */
    self_qp(&q, b);
    post_send(&q, 4, VRNIC_WQE_OP_LOCAL_INV, 0, NULL, 0, 0, 0,
              htole32(self->tkey), NULL, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, next_status(b, true, NULL));
}

TEST_F(mw, window_key_is_not_an_lkey)
{
    Node *b = &self->b;
    Sg s;
    uint32_t k;

    k = bound_window(self, VRNIC_MW_TYPE_2);
    ASSERT_NE(0, k);
    s = (Sg) { self->target, 64, k + 1 };
    post_send(&self->qb, 2, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_LOC_PROT_ERR, next_status(b, true, NULL));
}

TEST_F(mw, destroying_the_qp_unbinds_type2)
{
    Node *b = &self->b;
    uint32_t k;

    k = bound_window(self, VRNIC_MW_TYPE_2);
    ASSERT_NE(0, k);
    ASSERT_TRUE(b->f->core.obj.mrs[k >> 8].bound);
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DESTROY_QP,
                                       self->qb.qpn));
    ASSERT_FALSE(b->f->core.obj.mrs[k >> 8].bound);
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEREG_MR,
                                       self->tkey));
}

TEST_F(mw, dealloc_of_a_bound_window_releases_its_mr)
{
    Node *b = &self->b;
    uint32_t k;

    k = bound_window(self, VRNIC_MW_TYPE_1);
    ASSERT_NE(0, k);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(b->f, VRNIC_AQ_OP_DEREG_MR,
                                              self->tkey));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW, k));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEREG_MR,
                                       self->tkey));
}

TEST_HARNESS_MAIN
