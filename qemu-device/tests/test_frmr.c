/*
 * vrnic core: fast-registration MRs - ALLOC_MR validation;
 * REG_MR installing a scattered page list that the peer then reaches by
 * RDMA WRITE/READ, copied in once; LOCAL_INV and SEND with Invalidate;
 * every REG_MR, LOCAL_INV and remote-invalidation refusal with its
 * completion status and the mapping unchanged; FENCE ordering an
 * invalidation behind an outstanding READ; DEREG_MR by index; reset frees
 * the page lists.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define NPG 3
#define IOVA 0x7000000000100ull     /* offset 0x100 in its first page */
#define LEN (NPG * 4096 - 0x100 - 0x80)
#define RW (VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ | \
            VRNIC_ACCESS_REMOTE_WRITE)

static uint8_t alloc_mr(Node *n, uint32_t pdn, uint32_t max_pages,
                        uint8_t key_byte, uint32_t *key)
{
    AnyCmd c;
    struct vrnic_aq_alloc_mr *m = (void *)&c;
    uint64_t r = 0;
    uint8_t sts;

    cmd_init(&c, VRNIC_AQ_OP_ALLOC_MR);
    m->pdn = htole32(pdn);
    m->max_pages = htole32(max_pages);
    m->key_byte = key_byte;
    sts = run(n->f, &c, &r);
    if (key) {
        *key = r;
    }
    return sts;
}

typedef struct Reg {
    uint32_t key, access, npages;
    uint8_t page_shift;
    uint64_t iova, length, pbl;
} Reg;

static void post_reg(Qp *q, uint64_t wr_id, const Reg *r, uint8_t flags)
{
    struct vrnic_reg_mr_wqe *w = sq_slot(q);

    memset(w, 0, sizeof(*w));
    w->wr_id = htole64(wr_id);
    w->opcode = VRNIC_WQE_OP_REG_MR;
    w->flags = flags | VRNIC_WQE_FLAG_SIGNALED;
    w->page_shift = r->page_shift;
    w->key = htole32(r->key);
    w->access = htole32(r->access);
    w->npages = htole32(r->npages);
    w->iova = htole64(r->iova);
    w->length = htole64(r->length);
    w->pbl_addr = htole64(r->pbl);
    sq_ring(q);
}

static void post_inv(Qp *q, uint64_t wr_id, uint32_t key, uint8_t flags)
{
    post_send(q, wr_id, VRNIC_WQE_OP_LOCAL_INV, flags, NULL, 0, 0, 0,
              htole32(key), NULL, 0);
}

FIXTURE(frmr) {
    Node a, b;
    Qp qa, qb;
    uint64_t buf;       /* 64 KiB on b: pages 5, 2 and 9 of it are mapped */
    uint64_t pbl;       /* b's page list: NPG entries */
    uint32_t key;       /* an FRMR of b, invalid, max_pages 8 */
    Reg reg;            /* a good REG_MR of it, key byte + 1 */
};

static const unsigned page_order[NPG] = { 5, 2, 9 };

FIXTURE_SETUP(frmr)
{
    uint64_t *pl;

    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
    qp_new(&self->qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&self->qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&self->qa, &self->qb, 3, 0x10, 0x20);
    self->buf = obj_alloc(self->b.f, 65536, 4096);
    self->pbl = buf_alloc(&self->b, NPG * 8);
    pl = fake_ptr(self->b.f, self->pbl);
    for (unsigned i = 0; i < NPG; i++) {
        pl[i] = htole64(self->buf + page_order[i] * 4096ull);
    }
    if (alloc_mr(&self->b, self->b.pdn, 8, 0x10, &self->key)) {
        abort();
    }
    self->reg = (Reg) {
        .key = self->key + 1, .access = RW, .npages = NPG, .page_shift = 12,
        .iova = IOVA, .length = LEN, .pbl = self->pbl,
    };
}

FIXTURE_TEARDOWN(frmr)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/* Where byte off of the registration lives in b's memory. */
static uint8_t *mapped(FIXTURE_DATA(frmr) *self, uint64_t off)
{
    uint64_t pos = (IOVA & 4095) + off;

    return fake_ptr(self->b.f, self->buf + page_order[pos >> 12] * 4096ull +
                    (pos & 4095));
}

/* RDMA WRITE of len bytes (pattern seed) from a to rkey/raddr: status. */
static uint8_t write_to(Qp *qa, uint32_t rkey, uint64_t raddr, uint32_t len,
                        uint32_t seed, uint64_t *src_out)
{
    Node *a = qa->n;
    uint64_t src = buf_alloc(a, len);
    Sg s = { src, len, mr_any(a, 0, src, len) };

    fill(a, src, len, seed);
    if (src_out) {
        *src_out = src;
    }
    post_send(qa, 7, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, raddr, rkey, 0, NULL,
              0);
    fake_settle(a->f);
    return next_status(a, true, NULL);
}

/* One REG_MR on qb: its status (0xfe if it failed without ERR/opcode). */
static uint8_t reg_on(Qp *q, const Reg *r)
{
    Node *n = q->n;
    uint8_t op = 0, sts;

    post_reg(q, 9, r, 0);
    fake_settle(n->f);
    sts = next_status(n, true, &op);
    if (op != VRNIC_CQE_OP_REG_MR ||
        (sts != VRNIC_WC_SUCCESS && qp_state(q) != VRNIC_QPS_ERR)) {
        return 0xfe;
    }
    return sts;
}

/* A REG_MR of r on a fresh QP of b (a failure moves that QP to ERR). */
static uint8_t reg_status(Node *b, const Reg *r)
{
    Qp q;

    self_qp(&q, b);
    return reg_on(&q, r);
}

static uint8_t inv_status(Node *b, uint32_t key)
{
    uint8_t op = 0, sts;
    Qp q;

    self_qp(&q, b);
    post_inv(&q, 4, key, 0);
    fake_settle(b->f);
    sts = next_status(b, true, &op);
    return op == VRNIC_CQE_OP_LOCAL_INV ? sts : 0xfe;
}

/* A self-connected RC QP of n in RTS whose PD is pdn. */
static void self_qp_in(Qp *q, Node *n, uint32_t pdn)
{
    Qp peer;

    qp_new(q, n, VRNIC_QP_TYPE_RC, 0);
    n->f->core.obj.pds[n->pdn].refs--;
    n->f->core.obj.qps[q->qpn].pdn = pdn;
    n->f->core.obj.pds[pdn].refs++;
    peer = *q;
    qp_up(q, &peer, 3, 0, 0);
}

/* A type 1 window of n bound to 64 bytes at addr of mr_key: its key. */
static uint32_t bind_window(Node *n, uint32_t mr_key, uint64_t addr)
{
    struct vrnic_bind_mw_wqe *w;
    uint64_t mw = 0;
    AnyCmd c;
    Qp q;

    cmd_init(&c, VRNIC_AQ_OP_ALLOC_MW);
    ((struct vrnic_aq_alloc_mw *)&c)->pdn = htole32(n->pdn);
    ((struct vrnic_aq_alloc_mw *)&c)->type = VRNIC_MW_TYPE_1;
    if (run(n->f, &c, &mw)) {
        return 0;
    }
    self_qp(&q, n);
    w = sq_slot(&q);
    memset(w, 0, sizeof(*w));
    w->opcode = VRNIC_WQE_OP_BIND_MW;
    w->flags = VRNIC_WQE_FLAG_SIGNALED;
    w->mw_key = htole32(mw + 1);
    w->mr_key = htole32(mr_key);
    w->access = htole32(VRNIC_ACCESS_REMOTE_READ);
    w->addr = htole64(addr);
    w->length = htole64(64);
    sq_ring(&q);
    fake_settle(n->f);
    return next_status(n, true, NULL) == VRNIC_WC_SUCCESS ? mw : 0;
}

static VrnicMr *mr_of(Node *n, uint32_t key)
{
    return &n->f->core.obj.mrs[key >> 8];
}

TEST_F(frmr, alloc_validation_and_dereg_by_index)
{
    Node *b = &self->b;
    uint32_t upd = alloc_pd(b->f, 3), k;
    AnyCmd c;

    ASSERT_EQ(0x10, self->key & 0xff);
    ASSERT_TRUE(mr_of(b, self->key)->frmr);
    ASSERT_FALSE(mr_of(b, self->key)->valid);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, alloc_mr(b, upd, 8, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, alloc_mr(b, b->pdn, 0, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              alloc_mr(b, b->pdn, VRNIC_FRMR_MAX_PAGES + 1, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, alloc_mr(b, 999, 8, 0, NULL));
    cmd_init(&c, VRNIC_AQ_OP_ALLOC_MR);
    ((struct vrnic_aq_alloc_mr *)&c)->pdn = htole32(b->pdn);
    ((struct vrnic_aq_alloc_mr *)&c)->max_pages = htole32(1);
    ((struct vrnic_aq_alloc_mr *)&c)->rsvd0[7] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(b->f, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK,
              alloc_mr(b, b->pdn, VRNIC_FRMR_MAX_PAGES, 0x77, &k));

    /* Invalid: no key of it works, not even as an L_Key. */
    ASSERT_EQ(VRNIC_MR_BAD_KEY, vrnic_mr_check(&b->f->core, self->key, b->pdn,
                                               0, IOVA, 1, NULL));
    /* The PD is held; REREG refuses it; DEREG takes any key byte. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(b->f, VRNIC_AQ_OP_DEALLOC_PD,
                                              b->pdn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEREG_MR, k ^ 0x33));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(b->f, VRNIC_AQ_OP_DEREG_MR, k));
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(self->key);
    c.mr.flags = htole32(VRNIC_MR_REREG_ACCESS);
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(b->f, &c, NULL));   /* invalid */
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_status(b, &self->reg));
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(self->reg.key);
    c.mr.flags = htole32(VRNIC_MR_REREG_ACCESS);
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(b->f, &c, NULL));   /* valid */
    /* Valid or not, DEREG frees it and its page list. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEREG_MR, self->key));
    ASSERT_FALSE(mr_of(b, self->key)->live);
    ASSERT_EQ(NULL, mr_of(b, self->key)->frmr_pages);
}

TEST_F(frmr, register_write_read_and_local_invalidate)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t src, dst = buf_alloc(a, LEN);
    Sg d = { dst, LEN, mr_any(a, VRNIC_ACCESS_LOCAL_WRITE, dst, LEN) };
    uint8_t op;

    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qb, &self->reg));
    ASSERT_TRUE(mr_of(b, self->key)->valid);
    ASSERT_EQ(self->reg.key & 0xff, mr_of(b, self->key)->key_byte);

    /* The WRITE lands page by page where the list says. */
    ASSERT_EQ(VRNIC_WC_SUCCESS, write_to(&self->qa, self->reg.key, IOVA, LEN,
                                         3, &src));
    for (uint64_t off = 0; off < LEN; off += 997) {
        ASSERT_EQ(*(uint8_t *)fake_ptr(a->f, src + off), *mapped(self, off));
    }
    ASSERT_EQ(*(uint8_t *)fake_ptr(a->f, src + LEN - 1), *mapped(self, LEN - 1));
    /* The old key byte, and any byte outside the range, are refused. */
    ASSERT_EQ(VRNIC_MR_BAD_KEY,
              vrnic_rkey_check(&b->f->core, self->key, self->qb.qpn, b->pdn,
                               VRNIC_ACCESS_REMOTE_WRITE, IOVA, 8, NULL));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS,
              vrnic_rkey_check(&b->f->core, self->reg.key, self->qb.qpn,
                               b->pdn, VRNIC_ACCESS_REMOTE_WRITE, IOVA - 1, 2,
                               NULL));
    /* READ back through the same key. */
    post_send(&self->qa, 3, VRNIC_WQE_OP_RDMA_READ, 0, &d, 1, IOVA,
              self->reg.key, 0, NULL, 0);
    fake_settle(a->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_EQ(0, memcmp(fake_ptr(a->f, dst), fake_ptr(a->f, src), LEN));

    /* REG_MR of a valid MR is refused; LOCAL_INV frees it. */
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, reg_status(b, &self->reg));
    post_inv(&self->qb, 4, self->reg.key, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, true, &op));
    ASSERT_EQ(VRNIC_CQE_OP_LOCAL_INV, op);
    ASSERT_FALSE(mr_of(b, self->key)->valid);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, write_to(&self->qa, self->reg.key, IOVA,
                                                8, 1, NULL));
}

TEST_F(frmr, page_list_is_copied_in_once)
{
    Node *b = &self->b;
    uint64_t *pl = fake_ptr(b->f, self->pbl);

    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qb, &self->reg));
    /* The driver's list changes afterwards: the mapping does not. */
    for (unsigned i = 0; i < NPG; i++) {
        pl[i] = htole64(self->buf + 12 * 4096ull);
    }
    memset(mapped(self, 0), 0, 16);
    ASSERT_EQ(VRNIC_WC_SUCCESS, write_to(&self->qa, self->reg.key, IOVA, 16,
                                         5, NULL));
    ASSERT_NE(0, *mapped(self, 0) | *mapped(self, 1) | *mapped(self, 2));
    ASSERT_EQ(0, *(uint8_t *)fake_ptr(b->f, self->buf + 12 * 4096ull + 0x100));
}

TEST_F(frmr, every_register_refusal_leaves_it_invalid)
{
    Node *b = &self->b;
    uint32_t pd2 = alloc_pd(b->f, 0), other, plain;
    uint64_t *pl = fake_ptr(b->f, self->pbl);
    Reg r;

    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mr(b, pd2, 8, 0, &other));
    plain = mr_any(b, RW, self->buf, 4096);

#define REFUSED(sts, field, val) do {                                   \
        r = self->reg;                                                  \
        r.field = (val);                                                \
        ASSERT_EQ(sts, reg_status(b, &r));                              \
        ASSERT_FALSE(mr_of(b, self->key)->valid);                       \
    } while (0)
    REFUSED(VRNIC_WC_LOC_PROT_ERR, key, other);         /* another PD */
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, key, plain);        /* REG_MR's MR */
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, key, 0x3f00);       /* no such MR */
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, npages, 2);         /* not the range */
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, page_shift, 11);
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, page_shift, 31);
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, length, 0);
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, iova, ~0ull - 8);   /* wraps */
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, pbl, self->pbl + 4);
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, pbl, 1ull << 50);   /* not RAM */
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, access, VRNIC_ACCESS_REMOTE_WRITE);
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, access, VRNIC_ACCESS_REMOTE_ATOMIC);
    REFUSED(VRNIC_WC_LOC_QP_OP_ERR, access, 0x100);
    /* A page list longer than allocated (9 pages, max 8). */
    r = self->reg;
    r.length = 8 * 4096;
    r.npages = 9;
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, reg_status(b, &r));
    /* A page address not aligned to the page size. */
    pl[1] = htole64(self->buf + 4096 + 512);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, reg_status(b, &self->reg));
    ASSERT_FALSE(mr_of(b, self->key)->valid);
    pl[1] = htole64(self->buf + page_order[1] * 4096ull);
    /* After all that, the good one still works. */
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_status(b, &self->reg));
#undef REFUSED
}

TEST_F(frmr, reserved_bytes_and_user_qps_are_refused)
{
    Node *b = &self->b;
    struct vrnic_reg_mr_wqe *w;
    uint32_t upd;
    uint8_t op;
    Qp q;

    /* Reserved bytes: set before the doorbell. */
    self_qp(&q, b);
    w = sq_slot(&q);
    memset(w, 0, sizeof(*w));
    w->opcode = VRNIC_WQE_OP_REG_MR;
    w->flags = VRNIC_WQE_FLAG_SIGNALED;
    w->page_shift = 12;
    w->key = htole32(self->reg.key);
    w->access = htole32(RW);
    w->npages = htole32(NPG);
    w->iova = htole64(IOVA);
    w->length = htole64(LEN);
    w->pbl_addr = htole64(self->pbl);
    w->rsvd1[5] = 1;
    sq_ring(&q);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, next_status(b, true, &op));
    ASSERT_EQ(VRNIC_CQE_OP_REG_MR, op);
    ASSERT_FALSE(mr_of(b, self->key)->valid);

    /* A QP of a user PD may not name bus addresses. */
    upd = alloc_pd(b->f, 3);
    self_qp_in(&q, b, upd);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, reg_on(&q, &self->reg));
    ASSERT_FALSE(mr_of(b, self->key)->valid);
}

TEST_F(frmr, local_invalidate_rules)
{
    Node *b = &self->b;
    uint32_t pd2 = alloc_pd(b->f, 0), plain, mw;
    Reg r = self->reg;
    Qp q;

    plain = mr_any(b, RW, self->buf, 4096);
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_status(b, &self->reg));
    /* Stale key byte, a plain MR, nothing: refused, still valid. */
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, inv_status(b, self->key));
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, inv_status(b, plain));
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, inv_status(b, 0x3f01));
    ASSERT_TRUE(mr_of(b, self->key)->valid);
    /* Another PD's QP. */
    self_qp_in(&q, b, pd2);
    post_inv(&q, 4, self->reg.key, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, next_status(b, true, NULL));
    ASSERT_TRUE(mr_of(b, self->key)->valid);

    /* A window bound to it keeps it valid. */
    ASSERT_EQ(VRNIC_WC_SUCCESS, inv_status(b, self->reg.key));
    r.key = self->key + 2;
    r.access = RW | VRNIC_ACCESS_MW_BIND;
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_status(b, &r));
    mw = bind_window(b, r.key, IOVA);
    ASSERT_NE(0, mw);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, inv_status(b, r.key));
    ASSERT_TRUE(mr_of(b, self->key)->valid);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(b->f, VRNIC_AQ_OP_DEREG_MR,
                                              r.key));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(b->f, VRNIC_AQ_OP_DEALLOC_MW, mw));
    ASSERT_EQ(VRNIC_WC_SUCCESS, inv_status(b, r.key));
    /* Invalidating an invalid MR with its key succeeds (idempotent). */
    ASSERT_EQ(VRNIC_WC_SUCCESS, inv_status(b, r.key));
    ASSERT_FALSE(mr_of(b, self->key)->valid);
}

/* A SEND with Invalidate of key from a to b: the two statuses. */
static void send_inv(FIXTURE_DATA(frmr) *self, uint32_t key, uint8_t *ssts,
                     struct vrnic_cqe *recv)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t src = buf_alloc(a, 64), dst = buf_alloc(b, 64);
    Sg s = { src, 64, mr_any(a, 0, src, 64) };
    Sg r = { dst, 64, mr_any(b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };

    post_recv(&self->qb, 2, &r, 1);
    post_send(&self->qa, 3, VRNIC_WQE_OP_SEND_INV, 0, &s, 1, 0, 0,
              htole32(key), NULL, 0);
    fake_settle(a->f);
    *ssts = next_status(a, true, NULL);
    memset(recv, 0xff, sizeof(*recv));
    poll(b, false, recv);
}

/* Refused on both ends: NAK Invalid Request, REM_INV_REQ_ERR twice. */
static bool send_inv_refused(FIXTURE_DATA(frmr) *self, uint32_t key)
{
    struct vrnic_cqe e;
    uint8_t s;

    send_inv(self, key, &s, &e);
    return s == VRNIC_WC_REM_INV_REQ_ERR &&
           e.status == VRNIC_WC_REM_INV_REQ_ERR;
}

TEST_F(frmr, send_with_invalidate)
{
    Node *b = &self->b;
    struct vrnic_cqe e;
    uint8_t s;

    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qb, &self->reg));
    send_inv(self, self->reg.key, &s, &e);
    ASSERT_EQ(VRNIC_WC_SUCCESS, s);
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(e.flags & VRNIC_CQE_FLAG_INV);
    ASSERT_EQ(self->reg.key, le32toh(e.imm_data));
    ASSERT_FALSE(mr_of(b, self->key)->valid);
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, write_to(&self->qa, self->reg.key, IOVA,
                                                8, 1, NULL));
}

/* Remote invalidation of an invalid MR: an invalid request on both ends. */
TEST_F(frmr, send_with_invalidate_of_an_invalid_mr)
{
    ASSERT_TRUE(send_inv_refused(self, self->key));
}

/* A key with no remote right may not be remotely invalidated. */
TEST_F(frmr, send_with_invalidate_of_a_local_only_mr)
{
    Reg r = self->reg;

    r.access = VRNIC_ACCESS_LOCAL_WRITE;
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qb, &r));
    ASSERT_TRUE(send_inv_refused(self, r.key));
    ASSERT_TRUE(mr_of(&self->b, self->key)->valid);
}

/* Another PD's MR (its QP's PD differs from the MR's). */
TEST_F(frmr, send_with_invalidate_of_another_pds_mr)
{
    Node *b = &self->b;
    uint32_t pd2 = alloc_pd(b->f, 0), other;
    Reg r = self->reg;
    Qp q;

    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mr(b, pd2, 8, 0x40, &other));
    self_qp_in(&q, b, pd2);
    r.key = other + 1;
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&q, &r));
    ASSERT_TRUE(send_inv_refused(self, r.key));
    ASSERT_TRUE(mr_of(b, other)->valid);
}

/* An MR that a window is bound to is not remotely invalidated either. */
TEST_F(frmr, send_with_invalidate_of_an_mr_windows_use)
{
    Reg r = self->reg;

    r.access = RW | VRNIC_ACCESS_MW_BIND;
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qb, &r));
    ASSERT_NE(0, bind_window(&self->b, r.key, IOVA));
    ASSERT_TRUE(send_inv_refused(self, r.key));
    ASSERT_TRUE(mr_of(&self->b, self->key)->valid);
}

/* REG_MR and LOCAL_INV are for connected QPs only. */
TEST_F(frmr, ud_qps_refuse_registration)
{
    Node *b = &self->b;
    uint8_t op = 0;
    Qp u;

    qp_new(&u, b, VRNIC_QP_TYPE_UD, 0);
    qp_up(&u, &u, 3, 0, 0);
    post_reg(&u, 1, &self->reg, 0);
    fake_settle(b->f);
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, next_status(b, true, &op));
    ASSERT_EQ(VRNIC_CQE_OP_REG_MR, op);
    ASSERT_FALSE(mr_of(b, self->key)->valid);
}

/*
 * FENCE: a LOCAL_INV of the MR a READ is still landing in waits for the
 * READ; without FENCE it would run as soon as the SQ reaches it.
 */
TEST_F(frmr, fenced_invalidate_waits_for_the_read)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t tgt = buf_alloc(b, 4096), apbl = buf_alloc(a, 8);
    uint64_t abuf = obj_alloc(a->f, 4096, 4096);
    uint32_t akey, rkey = mr_any(b, VRNIC_ACCESS_REMOTE_READ |
                                 VRNIC_ACCESS_LOCAL_WRITE, tgt, 4096);
    Reg r = { .access = VRNIC_ACCESS_LOCAL_WRITE, .npages = 1,
              .page_shift = 12, .iova = 0x100000, .length = 4096,
              .pbl = apbl };
    Sg d;

    *(uint64_t *)fake_ptr(a->f, apbl) = htole64(abuf);
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mr(a, a->pdn, 1, 0x20, &akey));
    r.key = akey + 1;
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qa, &r));
    fill(b, tgt, 4096, 8);

    /* The READ request is lost: only the retransmit timer brings it. */
    d = (Sg) { 0x100000, 4096, r.key };
    a->f->peer = NULL;
    post_send(&self->qa, 5, VRNIC_WQE_OP_RDMA_READ, 0, &d, 1, tgt, rkey, 0,
              NULL, 0);
    post_inv(&self->qa, 6, r.key, VRNIC_WQE_FLAG_FENCE);
    fake_settle(a->f);
    ASSERT_TRUE(mr_of(a, akey)->valid);     /* waiting behind the READ */
    a->f->peer = b->f;
    ASSERT_TRUE(fake_fire_timer(a->f));
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_FALSE(mr_of(a, akey)->valid);
    ASSERT_EQ(0, memcmp(fake_ptr(a->f, abuf), fake_ptr(b->f, tgt), 4096));
}

/*
 * A LOCAL_INV waits until the WQEs before it are answered: the SEND from
 * the MR is lost, and its resend must still read through the key.
 */
TEST_F(frmr, local_invalidate_waits_for_earlier_wqes)
{
    Node *a = &self->a, *b = &self->b;
    uint64_t apbl = buf_alloc(a, 8), abuf = obj_alloc(a->f, 4096, 4096);
    uint64_t dst = buf_alloc(b, 4096);
    Reg r = { .access = VRNIC_ACCESS_LOCAL_WRITE, .npages = 1,
              .page_shift = 12, .iova = 0x200000, .length = 4096,
              .pbl = apbl };
    Sg d = { dst, 4096, mr_any(b, VRNIC_ACCESS_LOCAL_WRITE, dst, 4096) };
    Sg src;
    uint32_t akey;

    *(uint64_t *)fake_ptr(a->f, apbl) = htole64(abuf);
    ASSERT_EQ(VRNIC_AQ_STS_OK, alloc_mr(a, a->pdn, 1, 0x30, &akey));
    r.key = akey + 1;
    ASSERT_EQ(VRNIC_WC_SUCCESS, reg_on(&self->qa, &r));
    fill(a, abuf, 4096, 4);
    src = (Sg) { 0x200000, 4096, r.key };
    post_recv(&self->qb, 1, &d, 1);

    a->f->peer = NULL;
    post_send(&self->qa, 2, VRNIC_WQE_OP_SEND, 0, &src, 1, 0, 0, 0, NULL, 0);
    post_inv(&self->qa, 3, r.key, 0);
    fake_settle(a->f);
    ASSERT_TRUE(mr_of(a, akey)->valid);     /* the SEND is not answered */
    a->f->peer = b->f;
    ASSERT_TRUE(fake_fire_timer(a->f));
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(a, true, NULL));
    ASSERT_FALSE(mr_of(a, akey)->valid);
    ASSERT_EQ(VRNIC_WC_SUCCESS, next_status(b, false, NULL));
    ASSERT_EQ(0, memcmp(fake_ptr(b->f, dst), fake_ptr(a->f, abuf), 4096));
}

TEST_F(frmr, reset_frees_the_page_lists)
{
    Node *b = &self->b;

    ASSERT_NE(NULL, mr_of(b, self->key)->frmr_pages);
    vrnic_obj_reset(&b->f->core);
    ASSERT_FALSE(mr_of(b, self->key)->live);
    ASSERT_EQ(NULL, mr_of(b, self->key)->frmr_pages);
}

TEST_HARNESS_MAIN
