/*
 * Helpers for the object tests: build and run admin commands for PDs, MRs,
 * EQs, CQs, QPs and SRQs against the fake bus, and a bump allocator for
 * their rings in the fake guest memory.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_OBJ_HELPERS_H
#define VRNIC_OBJ_HELPERS_H

#include "fake_bus.h"
#include "../vrnic_core_int.h"

typedef union AnyCmd {
    uint8_t raw[VRNIC_AQ_CMD_SIZE];
    struct vrnic_aq_hdr hdr;
    struct vrnic_aq_query query;
    struct vrnic_aq_query_mr query_mr;
    struct vrnic_aq_destroy destroy;
    struct vrnic_aq_alloc_pd pd;
    struct vrnic_aq_reg_mr mr;
    struct vrnic_aq_create_eq eq;
    struct vrnic_aq_create_cq cq;
    struct vrnic_aq_modify_cq mod_cq;
    struct vrnic_aq_create_qp qp;
    struct vrnic_aq_modify_qp mod;
    struct vrnic_aq_create_srq srq;
    struct vrnic_aq_page_fault_done pf_done;
    struct vrnic_aq_odp_invalidate odp_inval;
    struct vrnic_aq_create_flow flow;
    struct vrnic_aq_create_rss rss;
} AnyCmd;

static inline void cmd_init(AnyCmd *c, uint16_t op)
{
    memset(c, 0, sizeof(*c));
    c->hdr.opcode = htole16(op);
}

/* Run a command; status returned, result stored when asked. */
static inline uint8_t run(FakeBus *f, AnyCmd *c, uint64_t *result)
{
    struct vrnic_aq_cqe *cqe = fake_aq_exec(f, c);

    if (result) {
        *result = le64toh(cqe->result);
    }
    return cqe->status;
}

/* Status of the last command the helper ran. */
static inline uint8_t last_status(FakeBus *f)
{
    uint32_t depth = 1u << f->core.aq.log_depth;
    struct vrnic_aq_cqe *cqe = fake_ptr(f, FAKE_AQ_CQ + ((f->aq_pi - 1) &
                                        (depth - 1)) * VRNIC_AQ_CQE_SIZE);

    return cqe->status;
}

/* Set up the admin queue (depth 64) and AEQ (depth 16) for object tests. */
static inline FakeBus *obj_bus(const VrnicConfig *cfg)
{
    FakeBus *f = fake_new(cfg);

    fake_aq_enable(f, 6);
    fake_aeq_enable(f, 4);
    f->obj_next = FAKE_OBJ_MEM;
    return f;
}

static inline uint64_t obj_alloc(FakeBus *f, uint64_t size, uint64_t align)
{
    uint64_t a = (f->obj_next + align - 1) & ~(align - 1);

    if (a + size > FAKE_MEM_BASE + FAKE_MEM_SIZE) {
        abort();
    }
    f->obj_next = a + size;
    memset(fake_ptr(f, a), 0, size);
    return a;
}

/* Contiguous fake memory as an inline 4 KiB-page descriptor (<= 24 KiB). */
static inline void mem_inline(struct vrnic_mem_desc *d, uint64_t addr,
                              uint64_t len)
{
    uint64_t first = addr & ~4095ull;
    uint32_t n = ((addr + len - 1) >> 12) - (addr >> 12) + 1;

    memset(d, 0, sizeof(*d));
    d->iova = htole64(addr);
    d->length = htole64(len);
    d->flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, 12));
    d->npages = htole32(n);
    for (uint32_t i = 0; i < n && i < VRNIC_MEM_INLINE_PAGES; i++) {
        d->pages[i] = htole64(first + i * 4096ull);
    }
}

static inline uint32_t alloc_pd(FakeBus *f, uint32_t uctx)
{
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, VRNIC_AQ_OP_ALLOC_PD);
    c.pd.uctx = htole32(uctx);
    return run(f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static inline uint8_t destroy(FakeBus *f, uint16_t op, uint32_t handle)
{
    AnyCmd c;

    cmd_init(&c, op);
    c.destroy.handle = htole32(handle);
    return run(f, &c, NULL);
}

/* REG_MR over contiguous fake memory [addr, addr + len), inline table. */
static inline uint8_t reg_mr(FakeBus *f, uint32_t pdn, uint32_t access,
                             uint8_t key_byte, uint64_t addr, uint64_t len,
                             uint32_t *key)
{
    AnyCmd c;
    uint64_t r;
    uint8_t sts;

    cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.pdn = htole32(pdn);
    c.mr.access = htole32(access);
    c.mr.key_byte = key_byte;
    mem_inline(&c.mr.mem, addr, len);
    sts = run(f, &c, &r);
    if (key) {
        *key = r;
    }
    return sts;
}

/*
 * REG_MR over device memory (VRNIC_MR_FLAG_DEVICE_MEM): [iova, iova + len)
 * maps to the device memory from byte offset; no pages, no tables.
 */
static inline void dm_mr_cmd(AnyCmd *c, uint32_t pdn, uint32_t access,
                             uint8_t key_byte, uint64_t iova, uint64_t offset,
                             uint64_t len)
{
    cmd_init(c, VRNIC_AQ_OP_REG_MR);
    c->mr.pdn = htole32(pdn);
    c->mr.access = htole32(access);
    c->mr.key_byte = key_byte;
    c->mr.flags = htole32(VRNIC_MR_FLAG_DEVICE_MEM);
    c->mr.mem.iova = htole64(iova);
    c->mr.mem.length = htole64(len);
    c->mr.mem.pages[0] = htole64(offset);
}

static inline uint8_t reg_dm_mr(FakeBus *f, uint32_t pdn, uint32_t access,
                                uint8_t key_byte, uint64_t iova,
                                uint64_t offset, uint64_t len, uint32_t *key)
{
    AnyCmd c;
    uint64_t r;
    uint8_t sts;

    dm_mr_cmd(&c, pdn, access, key_byte, iova, offset, len);
    sts = run(f, &c, &r);
    if (key) {
        *key = r;
    }
    return sts;
}

static inline uint32_t create_eq(FakeBus *f, uint32_t vector,
                                 uint32_t log_depth)
{
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_EQ);
    c.eq.ring_addr = htole64(obj_alloc(f, VRNIC_EQE_SIZE << log_depth, 64));
    c.eq.log_depth = htole32(log_depth);
    c.eq.vector = htole32(vector);
    return run(f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static inline uint64_t eq_ring(FakeBus *f, uint32_t eqn)
{
    return f->core.obj.eqs[eqn].base;
}

/* CREATE_CQ with a fresh ring (+ dbrec); *ring gets its address. */
static inline uint32_t create_cq(FakeBus *f, uint32_t eqn, uint32_t log_depth,
                                 uint32_t uctx, uint64_t *ring)
{
    uint64_t len = (VRNIC_CQE_SIZE << log_depth) + VRNIC_DBREC_SIZE;
    uint64_t a = obj_alloc(f, len, 4096);
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(eqn);
    c.cq.log_depth = htole32(log_depth);
    c.cq.uctx = htole32(uctx);
    mem_inline(&c.cq.mem, a, len);
    if (ring) {
        *ring = a;
    }
    return run(f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static inline struct vrnic_cqe *cqe_at(FakeBus *f, uint64_t ring,
                                       uint32_t log_depth, uint32_t idx)
{
    return fake_ptr(f, ring + (idx & ((1u << log_depth) - 1)) *
                    VRNIC_CQE_SIZE);
}

static inline void cq_set_ci(FakeBus *f, uint64_t ring, uint32_t log_depth,
                             uint32_t ci)
{
    struct vrnic_cq_dbrec *d = fake_ptr(f, ring + (VRNIC_CQE_SIZE << log_depth));

    d->ci = htole32(ci);
}

/* A plain QP command: SQ 2^4 x 256 B, RQ 2^4 x 64 B right after it. */
#define QP_SQ_LOG   4
#define QP_SQ_SHIFT 8
#define QP_RQ_LOG   4
#define QP_RQ_SHIFT 6
#define QP_RQ_OFF   (1u << (QP_SQ_LOG + QP_SQ_SHIFT))
#define QP_MEM_LEN  (QP_RQ_OFF + (1u << (QP_RQ_LOG + QP_RQ_SHIFT)))

static inline void qp_cmd(AnyCmd *c, uint8_t type, uint32_t pdn,
                          uint32_t scq, uint32_t rcq, uint32_t srqn,
                          uint32_t uctx, uint64_t mem)
{
    cmd_init(c, VRNIC_AQ_OP_CREATE_QP);
    c->qp.type = type;
    c->qp.sq_log_depth = QP_SQ_LOG;
    c->qp.sq_wqe_shift = QP_SQ_SHIFT;
    c->qp.rq_log_depth = srqn ? 0 : QP_RQ_LOG;
    c->qp.rq_wqe_shift = srqn ? 0 : QP_RQ_SHIFT;
    c->qp.max_send_sge = 2;
    c->qp.max_recv_sge = 2;
    c->qp.max_inline = htole32(32);
    c->qp.pdn = htole32(pdn);
    c->qp.send_cqn = htole32(scq);
    c->qp.recv_cqn = htole32(rcq);
    c->qp.srqn = htole32(srqn);
    c->qp.uctx = htole32(uctx);
    c->qp.rq_offset = htole32(srqn ? 0 : QP_RQ_OFF);
    mem_inline(&c->qp.mem, mem, QP_MEM_LEN);
}

static inline uint32_t create_qp(FakeBus *f, uint8_t type, uint32_t pdn,
                                 uint32_t scq, uint32_t rcq, uint32_t srqn,
                                 uint32_t uctx, uint64_t *mem)
{
    uint64_t a = obj_alloc(f, QP_MEM_LEN, 4096);
    AnyCmd c;
    uint64_t r;

    qp_cmd(&c, type, pdn, scq, rcq, srqn, uctx, a);
    if (mem) {
        *mem = a;
    }
    return run(f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static inline uint8_t modify_qp(FakeBus *f, uint32_t qpn, uint32_t mask,
                                uint32_t state, struct vrnic_qp_attr *attr)
{
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_MODIFY_QP);
    c.mod.qpn = htole32(qpn);
    c.mod.attr_mask = htole32(mask);
    if (attr) {
        c.mod.attr = *attr;
    }
    c.mod.attr.qp_state = htole32(state);
    return run(f, &c, NULL);
}

/* Sensible values for every attribute. */
static inline struct vrnic_qp_attr good_attr(void)
{
    struct vrnic_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.port = 1;
    a.qkey = htole32(0x80010000);
    a.access = htole32(VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ);
    a.path_mtu = 3;
    a.dest_qpn = htole32(0x12);
    a.rq_psn = htole32(100);
    a.sq_psn = htole32(200);
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.min_rnr_timer = 12;
    a.max_rd_atomic = 1;
    a.max_dest_rd_atomic = 1;
    a.av.hop_limit = 64;
    a.av.dgid[0] = 0xfe;
    return a;
}

/* CREATE_SRQ of 8 one-SGE WQEs in a fresh page (*mem). */
static inline void srq_cmd(AnyCmd *c, FakeBus *f, uint32_t pdn, uint32_t uctx,
                           uint32_t limit, uint64_t *mem)
{
    *mem = obj_alloc(f, 4096, 4096);
    cmd_init(c, VRNIC_AQ_OP_CREATE_SRQ);
    c->srq.pdn = htole32(pdn);
    c->srq.uctx = htole32(uctx);
    c->srq.limit = htole32(limit);
    c->srq.log_depth = 3;
    c->srq.wqe_shift = 5;
    c->srq.max_sge = 1;
    mem_inline(&c->srq.mem, *mem, 8 * 32);
}

/* An SRQ of 8 one-SGE WQEs in a fresh page (*mem); 0 when refused. */
static inline uint32_t create_srq(FakeBus *f, uint32_t pdn, uint32_t uctx,
                                  uint32_t limit, uint64_t *mem)
{
    AnyCmd c;
    uint64_t r;

    srq_cmd(&c, f, pdn, uctx, limit, mem);
    return run(f, &c, &r) == 0 ? r : 0;
}

/* Masks of ib_modify_qp_is_ok's required attributes, per type. */
static inline uint32_t req_init(uint8_t type)
{
    switch (type) {
    case VRNIC_QP_TYPE_UD:
        return VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_PORT |
               VRNIC_QP_ATTR_QKEY;
    case VRNIC_QP_TYPE_GSI:
        return VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_QKEY;
    case VRNIC_QP_TYPE_RAW_PACKET:
        return VRNIC_QP_ATTR_PORT;
    default:
        return VRNIC_QP_ATTR_PKEY_INDEX | VRNIC_QP_ATTR_PORT |
               VRNIC_QP_ATTR_ACCESS;
    }
}

static inline uint32_t req_rtr(uint8_t type)
{
    switch (type) {
    case VRNIC_QP_TYPE_RC:
    case VRNIC_QP_TYPE_XRC_TGT:
        return VRNIC_QP_ATTR_AV | VRNIC_QP_ATTR_PATH_MTU |
               VRNIC_QP_ATTR_DEST_QPN | VRNIC_QP_ATTR_RQ_PSN |
               VRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC | VRNIC_QP_ATTR_MIN_RNR_TIMER;
    case VRNIC_QP_TYPE_UC:
    case VRNIC_QP_TYPE_XRC_INI:
        return VRNIC_QP_ATTR_AV | VRNIC_QP_ATTR_PATH_MTU |
               VRNIC_QP_ATTR_DEST_QPN | VRNIC_QP_ATTR_RQ_PSN;
    default:
        return 0;
    }
}

static inline uint32_t req_rts(uint8_t type)
{
    if (type == VRNIC_QP_TYPE_RC || type == VRNIC_QP_TYPE_XRC_INI) {
        return VRNIC_QP_ATTR_TIMEOUT | VRNIC_QP_ATTR_RETRY_CNT |
               VRNIC_QP_ATTR_RNR_RETRY | VRNIC_QP_ATTR_SQ_PSN |
               VRNIC_QP_ATTR_MAX_QP_RD_ATOMIC;
    }
    if (type == VRNIC_QP_TYPE_XRC_TGT) {
        return VRNIC_QP_ATTR_TIMEOUT | VRNIC_QP_ATTR_SQ_PSN;
    }
    if (type == VRNIC_QP_TYPE_RAW_PACKET) {
        return 0;
    }
    return VRNIC_QP_ATTR_SQ_PSN;
}

#define QS VRNIC_QP_ATTR_STATE

/* RESET -> INIT -> RTR -> RTS with exactly the required attributes. */
static inline uint8_t qp_to_rts(FakeBus *f, uint32_t qpn, uint8_t type)
{
    struct vrnic_qp_attr a = good_attr();
    uint8_t sts;

    sts = modify_qp(f, qpn, QS | req_init(type), VRNIC_QPS_INIT, &a);
    if (!sts) {
        sts = modify_qp(f, qpn, QS | req_rtr(type), VRNIC_QPS_RTR, &a);
    }
    if (!sts) {
        sts = modify_qp(f, qpn, QS | req_rts(type), VRNIC_QPS_RTS, &a);
    }
    return sts;
}

/* Doorbell write on page `page`. */
static inline void db(FakeBus *f, uint32_t page, uint32_t off, uint32_t qn,
                      uint16_t idx)
{
    vrnic_core_db_write(&f->core, (uint64_t)page * VRNIC_DB_PAGE_SIZE + off,
                        VRNIC_FIELD_PREP(VRNIC_DB_INDEX_MASK, idx) | qn);
}

static inline struct vrnic_aeqe *aeqe_at(FakeBus *f, unsigned i)
{
    return fake_ptr(f, FAKE_AEQ + (i % 16) * VRNIC_AEQE_SIZE);
}

/* A host-side CQE as the transport would post it. */
static inline bool post_cqe(FakeBus *f, uint32_t cqn, uint64_t wr_id,
                            uint8_t status, uint8_t flags)
{
    struct vrnic_cqe e;

    memset(&e, 0, sizeof(e));
    e.wr_id = htole64(wr_id);
    e.status = status;
    e.flags = flags;
    e.qpn = htole32(7);
    return vrnic_cq_post(&f->core, cqn, &e);
}

#endif
