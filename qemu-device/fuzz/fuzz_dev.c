/*
 * Node setup for the fuzz targets (see fuzz_dev.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fuzz_dev.h"


static uint64_t fuzz_q_iova(uint64_t gpa)
{
    return FUZZ_Q_IOVA + (gpa - FUZZ_RAM_BASE);
}

void fuzz_mem_inline(struct vrnic_mem_desc *d, uint64_t addr, uint64_t len,
                     unsigned shift)
{
    uint64_t psz = 1ull << shift;
    uint64_t first = addr & ~(psz - 1);
    uint32_t n = ((addr + len - 1) >> shift) - (addr >> shift) + 1;

    memset(d, 0, sizeof(*d));
    d->iova = htole64(addr);
    d->length = htole64(len);
    d->flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, shift));
    d->npages = htole32(n);
    for (uint32_t i = 0; i < n && i < VRNIC_MEM_INLINE_PAGES; i++) {
        d->pages[i] = htole64(first + i * psz);
    }
}

/* Queue memory: RAM at gpa seen by the device at a different iova. */
static void fuzz_mem_queue(struct vrnic_mem_desc *d, uint64_t gpa,
                           uint64_t len)
{
    uint32_t n = ((gpa + len - 1) >> 12) - (gpa >> 12) + 1;

    fuzz_mem_inline(d, fuzz_q_iova(gpa), len, 12);
    for (uint32_t i = 0; i < n && i < VRNIC_MEM_INLINE_PAGES; i++) {
        d->pages[i] = htole64((gpa & ~4095ull) + i * 4096ull);
    }
}

void fuzz_gid_v4(uint8_t gid[16], uint8_t id)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[15] = id;
}

static uint64_t fuzz_must_alloc(FuzzBus *b, uint64_t size, uint64_t align)
{
    uint64_t a = fuzz_alloc(b, size, align);

    if (!a) {
        fuzz_fail(b, "harness: RAM exhausted by the setup");
    }
    return a;
}

/* Status of a batched command the setup needs: abort unless OK. */
static uint64_t fuzz_must(FuzzBus *b, unsigned idx, const char *what)
{
    uint64_t r = 0;
    uint8_t sts = fuzz_aq_status(b, idx, &r);

    if (sts != VRNIC_AQ_STS_OK) {
        fuzz_fail(b, "harness: setup command %s failed with status %u", what,
                  sts);
    }
    return r;
}

/* Post the REG_MR of MR i (its buffer allocated and filled in). */
static unsigned fuzz_node_mr_post(FuzzNode *n, unsigned i)
{
    FuzzBus *b = n->b;
    FuzzMr *m = &n->mr[i];
    FuzzCmd c;

    fuzz_cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.pdn = htole32(n->pdn);
    c.mr.key_byte = 0x10 + i;
    m->access = FUZZ_ACC_ALL;
    switch (i) {
    case FUZZ_MR_ALL:
        m->len = 16384;
        m->iova = FUZZ_MR_IOVA + FUZZ_MR_STRIDE * i;
        m->buf_len = m->len;
        m->buf = fuzz_must_alloc(b, m->len, 4096);
        fuzz_mem_inline(&c.mr.mem, m->iova, m->len, 12);
        for (unsigned p = 0; p < 4; p++) {
            c.mr.mem.pages[p] = htole64(m->buf + p * 4096ull);
        }
        break;
    case FUZZ_MR_TABLE: {
        /* Starts 0x100 into its first page: 5 pages through a table. */
        uint64_t *tbl;

        m->len = 16384;
        m->iova = FUZZ_MR_IOVA + FUZZ_MR_STRIDE * i + 0x100;
        m->buf_len = 5 * 4096;
        m->buf = fuzz_must_alloc(b, m->buf_len, 4096);
        m->table = fuzz_must_alloc(b, 4096, 4096);
        tbl = fuzz_ptr(b, m->table, 4096);
        for (unsigned p = 0; p < 5; p++) {
            tbl[p] = htole64(m->buf + p * 4096ull);
        }
        fuzz_mem_inline(&c.mr.mem, m->iova, m->len, 12);
        memset(c.mr.mem.pages, 0, sizeof(c.mr.mem.pages));
        c.mr.mem.flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK,
                                                  12) |
                                 VRNIC_FIELD_PREP(VRNIC_MEM_LEVELS_MASK, 1));
        c.mr.mem.pages[0] = htole64(m->table);
        break;
    }
    case FUZZ_MR_RO:
        m->len = 8192;
        m->iova = FUZZ_MR_IOVA + FUZZ_MR_STRIDE * i;
        m->access = VRNIC_ACCESS_REMOTE_READ;
        m->buf_len = m->len;
        m->buf = fuzz_must_alloc(b, m->len, 4096);
        fuzz_mem_inline(&c.mr.mem, m->iova, m->len, 12);
        for (unsigned p = 0; p < 2; p++) {
            c.mr.mem.pages[p] = htole64(m->buf + p * 4096ull);
        }
        break;
    default:
        /* Device memory: the device's own RAM, not guest memory. */
        m->len = b->cfg.dm_size;
        m->iova = FUZZ_MR_IOVA + FUZZ_MR_STRIDE * i;
        m->access = FUZZ_ACC_ALL & ~VRNIC_ACCESS_MW_BIND;
        m->buf = 0;
        c.mr.flags = htole32(VRNIC_MR_FLAG_DEVICE_MEM);
        c.mr.mem.iova = htole64(m->iova);
        c.mr.mem.length = htole64(m->len);
        c.mr.mem.pages[0] = 0;
        break;
    }
    c.mr.access = htole32(m->access);
    return fuzz_aq_post(b, &c);
}

bool fuzz_qp_create(FuzzNode *n, unsigned i)
{
    FuzzBus *b = n->b;
    FuzzQp *q = &n->qp[i];
    bool srq = i == FUZZ_QP_RC_SRQ;
    uint64_t r;
    FuzzCmd c;

    if (q->qpn) {
        return q->live;
    }
    q->peer = -1;
    switch (i) {
    case FUZZ_QP_GSI:
        q->type = VRNIC_QP_TYPE_GSI;
        break;
    case FUZZ_QP_UC:
        q->type = VRNIC_QP_TYPE_UC;
        break;
    case FUZZ_QP_UD:
        q->type = VRNIC_QP_TYPE_UD;
        break;
    default:
        q->type = VRNIC_QP_TYPE_RC;
        break;
    }
    q->mem = fuzz_must_alloc(b, FUZZ_QP_MEM_LEN, 4096);
    fuzz_cmd_init(&c, VRNIC_AQ_OP_CREATE_QP);
    c.qp.type = q->type;
    c.qp.sq_log_depth = FUZZ_SQ_LOG;
    c.qp.sq_wqe_shift = FUZZ_SQ_SHIFT;
    c.qp.rq_log_depth = srq ? 0 : FUZZ_RQ_LOG;
    c.qp.rq_wqe_shift = srq ? 0 : FUZZ_RQ_SHIFT;
    c.qp.max_send_sge = 4;
    c.qp.max_recv_sge = 3;
    c.qp.max_inline = htole32(128);
    c.qp.pdn = htole32(n->pdn);
    c.qp.send_cqn = htole32(n->cqn[0]);
    c.qp.recv_cqn = htole32(n->cqn[1]);
    c.qp.srqn = htole32(srq ? n->srqn : 0);
    c.qp.rq_offset = htole32(srq ? 0 : FUZZ_RQ_OFF);
    fuzz_mem_queue(&c.qp.mem, q->mem, FUZZ_QP_MEM_LEN);
    if (fuzz_aq_exec(b, &c, &r) != VRNIC_AQ_STS_OK) {
        fuzz_fail(b, "harness: CREATE_QP %u failed", i);
    }
    q->qpn = r;
    q->srqn = srq ? n->srqn : 0;
    q->sq_psn = 0x100 * (i + 1) + n->id;
    q->rq_psn = 0x100 * (i + 1) + (n->id ^ 1);
    q->live = true;
    return true;
}

void fuzz_node_init(FuzzNode *n, FuzzBus *b, uint8_t id)
{
    unsigned gid, eq, pd, cq[2], mr[FUZZ_MR_FRMR], srq, mw, frmr;
    FuzzCmd c;

    memset(n, 0, sizeof(*n));
    n->b = b;
    n->id = id;
    memcpy(n->mac, b->cfg.mac, 6);
    fuzz_gid_v4(n->gid, id);
    fuzz_aq_enable(b, 5);
    fuzz_aeq_enable(b, 5);

    /* Two batches: what has no dependencies, then what names it. */
    fuzz_cmd_init(&c, VRNIC_AQ_OP_ADD_GID);
    c.gid.index = 0;
    c.gid.type = htole32(VRNIC_GID_TYPE_ROCE_V2);
    memcpy(c.gid.gid, n->gid, 16);
    gid = fuzz_aq_post(b, &c);
    n->eq_ring = fuzz_must_alloc(b, VRNIC_EQE_SIZE << 5, 64);
    fuzz_cmd_init(&c, VRNIC_AQ_OP_CREATE_EQ);
    c.eq.ring_addr = htole64(n->eq_ring);
    c.eq.log_depth = htole32(5);
    c.eq.vector = htole32(VRNIC_VEC_COMP_FIRST);
    eq = fuzz_aq_post(b, &c);
    fuzz_cmd_init(&c, VRNIC_AQ_OP_ALLOC_PD);
    pd = fuzz_aq_post(b, &c);
    fuzz_aq_flush(b);
    fuzz_must(b, gid, "ADD_GID");
    n->eqn = fuzz_must(b, eq, "CREATE_EQ");
    n->pdn = fuzz_must(b, pd, "ALLOC_PD");
    /* Armed, so an EQE raises the vector (the MSI-X oracle sees it). */
    fuzz_reg_write(b, VRNIC_REG_EQ_CI(n->eqn), VRNIC_AEQ_CI_ARM);

    for (unsigned i = 0; i < 2; i++) {
        uint64_t len = (VRNIC_CQE_SIZE << FUZZ_CQ_LOG) + VRNIC_DBREC_SIZE;

        n->cq_mem[i] = fuzz_must_alloc(b, len, 4096);
        fuzz_cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
        c.cq.eqn = htole32(n->eqn);
        c.cq.log_depth = htole32(FUZZ_CQ_LOG);
        fuzz_mem_queue(&c.cq.mem, n->cq_mem[i], len);
        cq[i] = fuzz_aq_post(b, &c);
    }
    for (unsigned i = 0; i < FUZZ_MR_FRMR; i++) {
        mr[i] = fuzz_node_mr_post(n, i);
    }
    n->srq_mem = fuzz_must_alloc(b, 1u << (FUZZ_SRQ_LOG + FUZZ_SRQ_SHIFT),
                                 4096);
    fuzz_cmd_init(&c, VRNIC_AQ_OP_CREATE_SRQ);
    c.srq.pdn = htole32(n->pdn);
    c.srq.log_depth = FUZZ_SRQ_LOG;
    c.srq.wqe_shift = FUZZ_SRQ_SHIFT;
    c.srq.max_sge = 3;
    c.srq.limit = htole32(2);
    fuzz_mem_queue(&c.srq.mem, n->srq_mem,
                   1u << (FUZZ_SRQ_LOG + FUZZ_SRQ_SHIFT));
    srq = fuzz_aq_post(b, &c);
    fuzz_cmd_init(&c, VRNIC_AQ_OP_ALLOC_MW);
    c.mw.pdn = htole32(n->pdn);
    c.mw.type = VRNIC_MW_TYPE_2;
    c.mw.key_byte = 0x77;
    mw = fuzz_aq_post(b, &c);
    /* After the window: its index stays 5, the one seeds name. */
    fuzz_frmr_alloc_cmd(n, &c, VRNIC_FRMR_MAX_PAGES, 0x10 + FUZZ_MR_FRMR);
    frmr = fuzz_aq_post(b, &c);
    fuzz_aq_flush(b);
    for (unsigned i = 0; i < 2; i++) {
        n->cqn[i] = fuzz_must(b, cq[i], "CREATE_CQ");
    }
    for (unsigned i = 0; i < FUZZ_MR_FRMR; i++) {
        n->mr[i].key = fuzz_must(b, mr[i], "REG_MR");
        n->mr[i].live = true;
    }
    n->srqn = fuzz_must(b, srq, "CREATE_SRQ");
    n->mw_key = fuzz_must(b, mw, "ALLOC_MW");

    for (unsigned i = 0; i < FUZZ_SPARE_PAGES; i++) {
        n->spare[i] = fuzz_must_alloc(b, 4096, 4096);
    }
    n->mr[FUZZ_MR_FRMR].buf = fuzz_alloc_top(b, FUZZ_FRMR_LEN);
    n->mr[FUZZ_MR_FRMR].buf_len = FUZZ_FRMR_LEN;
    n->frmr_list = fuzz_alloc_top(b, FUZZ_FRMR_LIST_LEN);
    if (!n->mr[FUZZ_MR_FRMR].buf || !n->frmr_list) {
        fuzz_fail(b, "harness: RAM exhausted by the setup");
    }
    fuzz_frmr_allocated(n, fuzz_must(b, frmr, "ALLOC_MR"),
                        VRNIC_FRMR_MAX_PAGES);
}

uint8_t fuzz_modify(FuzzNode *n, uint32_t qpn, uint32_t mask, uint32_t state,
                    const struct vrnic_qp_attr *attr)
{
    FuzzCmd c;

    fuzz_cmd_init(&c, VRNIC_AQ_OP_MODIFY_QP);
    c.mod.qpn = htole32(qpn);
    c.mod.attr_mask = htole32(mask);
    if (attr) {
        c.mod.attr = *attr;
    }
    c.mod.attr.qp_state = htole32(state);
    return fuzz_aq_exec(n->b, &c, NULL);
}

uint8_t fuzz_qp_up(FuzzNode *n, FuzzQp *q, const uint8_t *peer_gid,
                   const uint8_t *peer_mac, uint32_t peer_qpn, uint8_t mtu)
{
    struct vrnic_qp_attr a;
    uint32_t mask[3], rtr = 0, rts = VRNIC_QP_ATTR_SQ_PSN;
    unsigned idx[3];
    FuzzCmd c;
    uint8_t sts = 0;

    memset(&a, 0, sizeof(a));
    a.port = 1;
    a.qkey = htole32(q->type == VRNIC_QP_TYPE_GSI ? 0x80010000 : 0x1234);
    a.access = htole32(VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ |
                       VRNIC_ACCESS_REMOTE_WRITE | VRNIC_ACCESS_REMOTE_ATOMIC);
    a.path_mtu = mtu;
    a.dest_qpn = htole32(peer_qpn);
    a.rq_psn = htole32(q->rq_psn);
    a.sq_psn = htole32(q->sq_psn);
    /*
     * Short timers and few retries: the harness fires timers itself, and
     * exhausted retries are paths worth reaching.
     */
    a.timeout = 10;
    a.retry_cnt = 3;
    a.rnr_retry = 3;
    a.min_rnr_timer = 1;
    a.max_rd_atomic = 4;
    a.max_dest_rd_atomic = 4;
    a.av.hop_limit = 64;
    if (peer_gid) {
        memcpy(a.av.dgid, peer_gid, 16);
    }
    if (peer_mac) {
        memcpy(a.av.dmac, peer_mac, 6);
    }
    switch (q->type) {
    case VRNIC_QP_TYPE_UD:
        mask[0] = VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_PORT |
                  VRNIC_QP_ATTR_QKEY;
        break;
    case VRNIC_QP_TYPE_GSI:
        mask[0] = VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_QKEY;
        break;
    case VRNIC_QP_TYPE_UC:
        mask[0] = VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_PORT |
                  VRNIC_QP_ATTR_ACCESS;
        rtr = VRNIC_QP_ATTR_AV | VRNIC_QP_ATTR_PATH_MTU |
              VRNIC_QP_ATTR_DEST_QPN | VRNIC_QP_ATTR_RQ_PSN;
        break;
    default:
        mask[0] = VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_PORT |
                  VRNIC_QP_ATTR_ACCESS;
        rtr = VRNIC_QP_ATTR_AV | VRNIC_QP_ATTR_PATH_MTU |
              VRNIC_QP_ATTR_DEST_QPN | VRNIC_QP_ATTR_RQ_PSN |
              VRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | VRNIC_QP_ATTR_MIN_RNR_TIMER;
        rts |= VRNIC_QP_ATTR_TIMEOUT | VRNIC_QP_ATTR_RETRY_CNT |
               VRNIC_QP_ATTR_RNR_RETRY | VRNIC_QP_ATTR_MAX_QP_RD_ATOMIC;
        break;
    }
    mask[1] = rtr;
    mask[2] = rts;
    /* One batch: a refused step makes the later ones fail too. */
    for (unsigned k = 0; k < 3; k++) {
        fuzz_cmd_init(&c, VRNIC_AQ_OP_MODIFY_QP);
        c.mod.qpn = htole32(q->qpn);
        c.mod.attr_mask = htole32(VRNIC_QP_ATTR_STATE | mask[k]);
        c.mod.attr = a;
        c.mod.attr.qp_state = htole32(VRNIC_QPS_INIT + k);
        idx[k] = fuzz_aq_post(n->b, &c);
    }
    fuzz_aq_flush(n->b);
    for (unsigned k = 0; k < 3 && !sts; k++) {
        sts = fuzz_aq_status(n->b, idx[k], NULL);
    }
    q->sq_pi = q->rq_pi = 0;
    return sts;
}

static void fuzz_qp_must_up(FuzzNode *n, FuzzQp *q, const FuzzNode *pn,
                            uint8_t mtu)
{
    uint8_t sts = fuzz_qp_up(n, q, pn ? pn->gid : NULL, pn ? pn->mac : NULL,
                             q->peer_qpn, mtu);

    if (sts) {
        fuzz_fail(n->b, "harness: QP %u to RTS failed with status %u", q->qpn,
                  sts);
    }
}

/*
 * Path MTU of each kind of pair (enum ib_mtu): small, so that messages
 * of a few KiB take several packets.
 */
static const uint8_t fuzz_pair_mtu[FUZZ_NODE_QPS] = {
    [FUZZ_QP_RC] = 1, [FUZZ_QP_RC_SRQ] = 2, [FUZZ_QP_UC] = 1,
    [FUZZ_QP_LOOP_A] = 1, [FUZZ_QP_LOOP_B] = 1,
};

bool fuzz_pair_ensure(FuzzNode *a, FuzzNode *b, unsigned i)
{
    FuzzQp *qa = &a->qp[i], *qb;
    unsigned j;

    if (qa->qpn) {
        return qa->live;
    }
    switch (i) {
    case FUZZ_QP_RC:
    case FUZZ_QP_RC_SRQ:
    case FUZZ_QP_UC:
        qb = &b->qp[i];
        fuzz_qp_create(a, i);
        fuzz_qp_create(b, i);
        qa->peer = qb->peer = i;
        qa->peer_local = qb->peer_local = false;
        qa->peer_qpn = qb->qpn;
        qb->peer_qpn = qa->qpn;
        /* Each end's sq_psn is the other end's rq_psn. */
        qa->sq_psn = qb->rq_psn = 0x1000 * (i + 1) + 0x10 * a->id;
        qb->sq_psn = qa->rq_psn = 0x1000 * (i + 1) + 0x10 * b->id;
        fuzz_qp_must_up(a, qa, b, fuzz_pair_mtu[i]);
        fuzz_qp_must_up(b, qb, a, fuzz_pair_mtu[i]);
        return true;
    case FUZZ_QP_LOOP_A:
    case FUZZ_QP_LOOP_B:
        j = i == FUZZ_QP_LOOP_A ? FUZZ_QP_LOOP_B : FUZZ_QP_LOOP_A;
        qb = &a->qp[j];
        fuzz_qp_create(a, i);
        fuzz_qp_create(a, j);
        qa->peer = j;
        qb->peer = i;
        qa->peer_local = qb->peer_local = true;
        qa->peer_qpn = qb->qpn;
        qb->peer_qpn = qa->qpn;
        /* Near the 24-bit wrap. */
        qa->sq_psn = qb->rq_psn = 0xffff00 + 0x10 * i;
        qb->sq_psn = qa->rq_psn = 0xffff00 + 0x10 * j;
        fuzz_qp_must_up(a, qa, a, fuzz_pair_mtu[i]);
        fuzz_qp_must_up(a, qb, a, fuzz_pair_mtu[j]);
        return true;
    default:
        fuzz_qp_create(a, i);
        fuzz_qp_must_up(a, qa, NULL, 0);
        return true;
    }
}

uint64_t fuzz_sq_slot(const FuzzQp *q, uint16_t idx)
{
    return q->mem + ((uint64_t)(idx & ((1u << FUZZ_SQ_LOG) - 1)) <<
                     FUZZ_SQ_SHIFT);
}

uint64_t fuzz_rq_slot(const FuzzQp *q, uint16_t idx)
{
    return q->mem + FUZZ_RQ_OFF +
           ((uint64_t)(idx & ((1u << FUZZ_RQ_LOG) - 1)) << FUZZ_RQ_SHIFT);
}

uint64_t fuzz_srq_slot(const FuzzNode *n, uint16_t idx)
{
    return n->srq_mem +
           ((uint64_t)(idx & ((1u << FUZZ_SRQ_LOG) - 1)) << FUZZ_SRQ_SHIFT);
}

unsigned fuzz_cq_poll(FuzzNode *n, unsigned i, unsigned max)
{
    unsigned got = 0;

    while (got < max) {
        uint16_t ci = n->cq_ci[i];
        struct vrnic_cqe *e = fuzz_ptr(n->b, n->cq_mem[i] +
                                       (ci & ((1u << FUZZ_CQ_LOG) - 1)) *
                                       VRNIC_CQE_SIZE, VRNIC_CQE_SIZE);
        uint32_t phase = ((ci >> FUZZ_CQ_LOG) & 1) ^ 1;

        if ((le32toh(e->info) & VRNIC_CQE_INFO_PHASE) != phase) {
            break;
        }
        n->cq_ci[i]++;
        got++;
    }
    fuzz_cq_set_ci(n, i, n->cq_ci[i]);
    return got;
}

void fuzz_cq_set_ci(FuzzNode *n, unsigned i, uint32_t ci)
{
    uint32_t *d = fuzz_ptr(n->b, n->cq_mem[i] +
                           (VRNIC_CQE_SIZE << FUZZ_CQ_LOG), 4);

    *d = htole32(ci);
}

static void fuzz_recv_wqe(FuzzNode *n, uint64_t slot, uint32_t wqe_size,
                          unsigned m, uint32_t off, uint32_t len)
{
    uint8_t *w = fuzz_ptr(n->b, slot, wqe_size);
    struct vrnic_recv_wqe *h = (void *)w;
    struct vrnic_sge *s = (void *)(w + sizeof(*h));

    memset(w, 0, wqe_size);
    h->wr_id = htole64(0xabc000 + slot % 4096);
    h->num_sge = 1;
    s->addr = htole64(n->mr[m].iova + off);
    s->length = htole32(len);
    s->lkey = htole32(n->mr[m].key);
}

void fuzz_post_recv_simple(FuzzNode *n, FuzzQp *q, unsigned m, uint32_t off,
                           uint32_t len)
{
    fuzz_recv_wqe(n, fuzz_rq_slot(q, q->rq_pi), 1u << FUZZ_RQ_SHIFT, m, off,
                  len);
    q->rq_pi++;
    fuzz_db(n->b, 0, VRNIC_DB_RQ, q->qpn, q->rq_pi);
}

void fuzz_post_srq_simple(FuzzNode *n, unsigned m, uint32_t off, uint32_t len)
{
    fuzz_recv_wqe(n, fuzz_srq_slot(n, n->srq_pi), 1u << FUZZ_SRQ_SHIFT, m,
                  off, len);
    n->srq_pi++;
    fuzz_db(n->b, 0, VRNIC_DB_SRQ, n->srqn, n->srq_pi);
}

void fuzz_mr_unhand(FuzzNode *n, const FuzzMr *m)
{
    if (m->buf) {
        fuzz_unhand(n->b, m->buf, m->buf_len);
    }
    if (m->table) {
        fuzz_unhand(n->b, m->table, 4096);
    }
}

void fuzz_frmr_alloc_cmd(const FuzzNode *n, FuzzCmd *c, uint32_t max_pages,
                         uint8_t key_byte)
{
    fuzz_cmd_init(c, VRNIC_AQ_OP_ALLOC_MR);
    c->alloc_mr.pdn = htole32(n->pdn);
    c->alloc_mr.max_pages = htole32(max_pages);
    c->alloc_mr.key_byte = key_byte;
}

void fuzz_frmr_allocated(FuzzNode *n, uint32_t key, uint32_t max_pages)
{
    FuzzMr *m = &n->mr[FUZZ_MR_FRMR];

    m->key = key;
    m->iova = FUZZ_FRMR_IOVA;
    m->len = m->buf_len;
    m->access = 0;
    m->live = true;
    n->frmr_max = max_pages;
    fuzz_hand(n->b, m->buf, m->buf_len);
}

void fuzz_frmr_reg(FuzzNode *n, struct vrnic_reg_mr_wqe *w, uint8_t key_byte,
                   uint32_t access, unsigned shift, uint64_t iova,
                   uint64_t len)
{
    FuzzMr *m = &n->mr[FUZZ_MR_FRMR];

    m->key = (m->key & VRNIC_KEY_INDEX_MASK) | key_byte;
    m->iova = iova;
    m->len = len;
    m->access = access;
    w->opcode = VRNIC_WQE_OP_REG_MR;
    w->page_shift = shift;
    w->key = htole32(m->key);
    w->access = htole32(access);
    w->npages = htole32(((iova + len - 1) >> shift) - (iova >> shift) + 1);
    w->iova = htole64(iova);
    w->length = htole64(len);
    w->pbl_addr = htole64(n->frmr_list);
}

void fuzz_frmr_reg_range(FuzzNode *n, struct vrnic_reg_mr_wqe *w,
                         uint8_t key_byte, uint32_t access, unsigned shift,
                         uint32_t off, uint32_t len)
{
    const FuzzMr *m = &n->mr[FUZZ_MR_FRMR];
    uint64_t psz = 1ull << shift;
    uint64_t base = psz <= m->buf_len ? m->buf : FUZZ_NOT_RAM;
    uint64_t span = MAX(m->buf_len, psz);
    uint64_t first, *list;
    uint32_t np;

    off %= span;
    len = 1 + len % (span - off);
    first = base + (off & ~(psz - 1));
    /* iova's offset in its first page is off's: iova + i is base + off + i. */
    fuzz_frmr_reg(n, w, key_byte, access, shift,
                  (FUZZ_FRMR_IOVA & ~(psz - 1)) + off, len);
    np = le32toh(w->npages);
    list = fuzz_ptr(n->b, n->frmr_list, np * 8ull);
    for (uint32_t k = 0; k < np; k++) {
        list[k] = htole64(first + k * psz);
    }
}
