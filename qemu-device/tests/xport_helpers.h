/*
 * Helpers for the transport tests: nodes (a core with a GID, an EQ, a PD
 * and two CQs), QPs brought up and connected, MRs over the fake memory,
 * posting send/receive WQEs and polling CQEs. Shared by test_xport.c and
 * the tests of features built on the transport.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_XPORT_HELPERS_H
#define VRNIC_XPORT_HELPERS_H

#include "obj_helpers.h"
#include "../vrnic_xport.h"

#define CQ_LOG 8
#define ACC_ALL (VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ | \
                 VRNIC_ACCESS_REMOTE_WRITE | VRNIC_ACCESS_REMOTE_ATOMIC)

typedef struct Node {
    FakeBus *f;
    uint32_t eqn, pdn, scq, rcq;
    uint64_t sring, rring;
    uint16_t sci, rci;
    uint8_t gid[16];
    uint8_t mac[6];
} Node;

typedef struct Qp {
    Node *n;
    uint32_t qpn;
    uint64_t mem;
    uint16_t sq_pi, rq_pi;
    uint8_t type;
    uint8_t sq_log, sq_shift, rq_log;   /* 0: the obj_helpers defaults */
    uint8_t rnr_retry;                  /* qp_up: 7 (infinite) */
} Qp;

static inline void gid_v4(uint8_t gid[16], uint8_t last)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[15] = last;
}

static inline void gid_v6(uint8_t gid[16], uint8_t last)
{
    memset(gid, 0, 16);
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[15] = last;
}

/*
 * A core on the fake bus with GID 0 (IPv4-mapped 10.0.0.id, or fe80::id),
 * an EQ, a PD and a send and a receive CQ; cfg (NULL: the defaults) with
 * this node's MAC.
 */
static inline void node_init_cfg(Node *n, uint8_t id, bool v6,
                                 const VrnicConfig *base)
{
    VrnicConfig cfg = base ? *base : fake_default_config();
    AnyCmd c;

    memset(n, 0, sizeof(*n));
    cfg.mac[5] = id;
    memcpy(n->mac, cfg.mac, 6);
    n->f = obj_bus(&cfg);
    if (v6) {
        gid_v6(n->gid, id);
    } else {
        gid_v4(n->gid, id);
    }
    cmd_init(&c, VRNIC_AQ_OP_ADD_GID);
    ((struct vrnic_aq_gid *)&c)->index = 0;
    ((struct vrnic_aq_gid *)&c)->type = htole32(VRNIC_GID_TYPE_ROCE_V2);
    memcpy(((struct vrnic_aq_gid *)&c)->gid, n->gid, 16);
    if (run(n->f, &c, NULL)) {
        abort();
    }
    n->eqn = create_eq(n->f, 2, 4);
    n->pdn = alloc_pd(n->f, 0);
    n->scq = create_cq(n->f, n->eqn, CQ_LOG, 0, &n->sring);
    n->rcq = create_cq(n->f, n->eqn, CQ_LOG, 0, &n->rring);
    if (!n->scq || !n->rcq) {
        abort();
    }
}

static inline void node_init(Node *n, uint8_t id, bool v6)
{
    node_init_cfg(n, id, v6, NULL);
}

/* A REG_MR of [addr, addr + len) in n's PD, pages of 2^shift bytes through
 * `levels` tables; the caller fills mem.pages. */
static inline void mr_cmd(AnyCmd *c, Node *n, uint32_t access, uint64_t addr,
                          uint64_t len, uint32_t shift, uint32_t levels)
{
    cmd_init(c, VRNIC_AQ_OP_REG_MR);
    c->mr.pdn = htole32(n->pdn);
    c->mr.access = htole32(access);
    c->mr.key_byte = 0x5a;
    c->mr.mem.iova = htole64(addr);
    c->mr.mem.length = htole64(len);
    c->mr.mem.flags =
        htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, shift) |
                VRNIC_FIELD_PREP(VRNIC_MEM_LEVELS_MASK, levels));
    c->mr.mem.npages = htole32(((addr + len - 1) >> shift) -
                               (addr >> shift) + 1);
}

/* An MR over any part of the window: identity 2 MiB pages, inline. */
static inline uint32_t mr_any(Node *n, uint32_t access, uint64_t addr,
                              uint64_t len)
{
    uint64_t base = addr & ~((1ull << 21) - 1);
    AnyCmd c;
    uint64_t r;

    mr_cmd(&c, n, access, addr, len, 21, 0);
    for (uint32_t i = 0; i < le32toh(c.mr.mem.npages); i++) {
        c.mr.mem.pages[i] = htole64(base + ((uint64_t)i << 21));
    }
    if (run(n->f, &c, &r)) {
        abort();
    }
    return r;
}

static inline uint64_t buf_alloc(Node *n, uint64_t len)
{
    return obj_alloc(n->f, len ? len : 1, 64);
}

static inline void fill(Node *n, uint64_t addr, uint64_t len,
                        uint32_t seed)
{
    uint8_t *p = fake_ptr(n->f, addr);

    for (uint64_t i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

static inline void qp_new(Qp *q, Node *n, uint8_t type, uint32_t srqn)
{
    q->n = n;
    q->type = type;
    q->sq_pi = q->rq_pi = 0;
    q->sq_log = q->sq_shift = q->rq_log = 0;
    q->rnr_retry = 7;
    if (type == VRNIC_QP_TYPE_GSI) {
        q->qpn = create_qp(n->f, type, n->pdn, n->scq, n->rcq, 0, 0, &q->mem);
    } else {
        q->qpn = create_qp(n->f, type, n->pdn, n->scq, n->rcq, srqn, 0,
                           &q->mem);
    }
    if (!q->qpn) {
        abort();
    }
}

/* An RC QP with a deep SQ and RQ (2^7 each: what perftest asks for), the
 * WQE rings inline-described (24 KiB). */
static inline void qp_new_deep(Qp *q, Node *n)
{
    uint64_t a;
    AnyCmd c;
    uint64_t r;

    q->n = n;
    q->type = VRNIC_QP_TYPE_RC;
    q->sq_pi = q->rq_pi = 0;
    q->rnr_retry = 7;
    q->sq_log = 7;
    q->sq_shift = 7;
    q->rq_log = 7;
    a = obj_alloc(n->f, (1u << 14) + (1u << (7 + QP_RQ_SHIFT)), 4096);
    qp_cmd(&c, VRNIC_QP_TYPE_RC, n->pdn, n->scq, n->rcq, 0, 0, a);
    c.qp.sq_log_depth = 7;
    c.qp.sq_wqe_shift = 7;
    c.qp.rq_log_depth = 7;
    c.qp.rq_offset = htole32(1u << 14);
    mem_inline(&c.qp.mem, a, (1u << 14) + (1u << (7 + QP_RQ_SHIFT)));
    if (run(n->f, &c, &r) != VRNIC_AQ_STS_OK) {
        abort();
    }
    q->qpn = r;
    q->mem = a;
}

/* RESET -> RTS, connected to peer (RC/UC) or just up (UD/GSI). */
static inline void qp_up(Qp *q, const Qp *peer, uint8_t mtu, uint32_t sq_psn,
                  uint32_t rq_psn)
{
    struct vrnic_qp_attr a = good_attr();
    FakeBus *f = q->n->f;

    a.access = htole32(ACC_ALL);
    a.path_mtu = mtu;
    a.sq_psn = htole32(sq_psn);
    a.rq_psn = htole32(rq_psn);
    a.max_rd_atomic = 4;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.rnr_retry = q->rnr_retry;
    if (peer) {
        a.dest_qpn = htole32(peer->qpn);
        memcpy(a.av.dgid, peer->n->gid, 16);
        memcpy(a.av.dmac, peer->n->mac, 6);
    }
    a.av.sgid_index = 0;
    if (modify_qp(f, q->qpn, QS | req_init(q->type), VRNIC_QPS_INIT, &a) ||
        modify_qp(f, q->qpn, QS | req_rtr(q->type), VRNIC_QPS_RTR, &a) ||
        modify_qp(f, q->qpn, QS | req_rts(q->type), VRNIC_QPS_RTS, &a)) {
        abort();
    }
}

static inline void connect(Qp *a, Qp *b, uint8_t mtu, uint32_t psn_ab,
                    uint32_t psn_ba)
{
    qp_up(a, b, mtu, psn_ab, psn_ba);
    qp_up(b, a, mtu, psn_ba, psn_ab);
}

typedef struct Sg {
    uint64_t addr;
    uint32_t len, key;
} Sg;

/* The SQ slot the next post fills, and the doorbell that hands it over. */
static inline void *sq_slot(Qp *q)
{
    uint32_t sq_log = q->sq_log ? q->sq_log : QP_SQ_LOG;
    uint32_t sq_shift = q->sq_shift ? q->sq_shift : QP_SQ_SHIFT;

    return fake_ptr(q->n->f, q->mem + (q->sq_pi % (1u << sq_log)) *
                    (1u << sq_shift));
}

static inline void sq_ring(Qp *q)
{
    q->sq_pi++;
    db(q->n->f, 0, VRNIC_DB_SQ, q->qpn, q->sq_pi);
}

/* Post one send WQE (UD: av/dest from `to`); ring the doorbell. */
static inline void post_send(Qp *q, uint64_t wr_id, uint8_t op, uint8_t flags,
                      const Sg *sg, unsigned nsg, uint64_t raddr,
                      uint32_t rkey, uint32_t imm, const Qp *to, uint32_t qkey)
{
    uint32_t sq_shift = q->sq_shift ? q->sq_shift : QP_SQ_SHIFT;
    uint8_t *w = sq_slot(q);
    struct vrnic_send_wqe *h = (void *)w;
    struct vrnic_sge *s = (void *)(w + 64);

    memset(w, 0, 1u << sq_shift);
    h->wr_id = htole64(wr_id);
    h->opcode = op;
    h->flags = flags | VRNIC_WQE_FLAG_SIGNALED;
    h->num_sge = nsg;
    h->imm_data = imm;
    h->rkey = htole32(rkey);
    h->remote_addr = htole64(raddr);
    if (q->type == VRNIC_QP_TYPE_UD || q->type == VRNIC_QP_TYPE_GSI) {
        struct vrnic_av *av = (void *)(w + 64);
        struct vrnic_ud_dest *d = (void *)(w + 64 + 32);

        memcpy(av->dgid, to->n->gid, 16);
        memcpy(av->dmac, to->n->mac, 6);
        av->hop_limit = 64;
        d->dest_qpn = htole32(to->qpn);
        d->qkey = htole32(qkey);
        s = (void *)(w + 128);
    }
    for (unsigned i = 0; i < nsg; i++) {
        s[i].addr = htole64(sg[i].addr);
        s[i].length = htole32(sg[i].len);
        s[i].lkey = htole32(sg[i].key);
    }
    sq_ring(q);
}

static inline void post_atomic(Qp *q, uint64_t wr_id, uint8_t op, const Sg *sg,
                        uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
                        uint64_t swap)
{
    struct vrnic_send_wqe *h = sq_slot(q);

    post_send(q, wr_id, op, 0, sg, 1, raddr, rkey, 0, NULL, 0);
    h->compare_add = htole64(cmp_add);
    h->swap = htole64(swap);
}

static inline void post_recv(Qp *q, uint64_t wr_id, const Sg *sg,
                             unsigned nsg)
{
    uint32_t rq_log = q->rq_log ? q->rq_log : QP_RQ_LOG;
    uint32_t rq_off = q->rq_log ? 1u << (q->sq_log + q->sq_shift) : QP_RQ_OFF;
    uint8_t *w = fake_ptr(q->n->f, q->mem + rq_off +
                          (q->rq_pi % (1u << rq_log)) * (1u << QP_RQ_SHIFT));
    struct vrnic_recv_wqe *h = (void *)w;
    struct vrnic_sge *s = (void *)(w + 16);

    memset(w, 0, 1u << QP_RQ_SHIFT);
    h->wr_id = htole64(wr_id);
    h->num_sge = nsg;
    for (unsigned i = 0; i < nsg; i++) {
        s[i].addr = htole64(sg[i].addr);
        s[i].length = htole32(sg[i].len);
        s[i].lkey = htole32(sg[i].key);
    }
    q->rq_pi++;
    db(q->n->f, 0, VRNIC_DB_RQ, q->qpn, q->rq_pi);
}

static inline bool poll(Node *n, bool send, struct vrnic_cqe *out)
{
    uint16_t *ci = send ? &n->sci : &n->rci;
    uint64_t ring = send ? n->sring : n->rring;
    struct vrnic_cqe *e = cqe_at(n->f, ring, CQ_LOG, *ci);
    uint32_t phase = ((*ci >> CQ_LOG) & 1) ^ 1;

    if ((le32toh(e->info) & VRNIC_CQE_INFO_PHASE) != phase) {
        return false;
    }
    *out = *e;
    (*ci)++;
    cq_set_ci(n->f, ring, CQ_LOG, *ci);
    return true;
}

/* The status of the next CQE (0xff: none), and its opcode. */
static inline uint8_t next_status(Node *n, bool send, uint8_t *opcode)
{
    struct vrnic_cqe e;

    if (!poll(n, send, &e)) {
        return 0xff;
    }
    if (opcode) {
        *opcode = e.opcode;
    }
    return e.status;
}

static inline uint8_t qp_state(Qp *q)
{
    return q->n->f->core.obj.qps[q->qpn].state;
}

/*
 * What a bus sends, as a wire_hook (hook_arg: the log) records it: every
 * frame counts in n, its headers and payload length kept (the first
 * WIRE_LOG_MAX), an unparsable one counted in bad; the first `drop`
 * frames are lost on the wire.
 */
#define WIRE_LOG_MAX 64
typedef struct WireLog {
    unsigned n, drop, bad;
    VrnicPktHdrs h[WIRE_LOG_MAX];
    uint32_t plen[WIRE_LOG_MAX];
} WireLog;

static inline bool wire_log(FakeBus *from, uint8_t *frame, size_t *len,
                            void *arg)
{
    WireLog *s = arg;
    VrnicPkt p;

    if (vrnic_pkt_parse(frame, *len, &p) != VRNIC_PKT_OK) {
        s->bad++;
    } else if (s->n < WIRE_LOG_MAX) {
        s->h[s->n] = p.hdr;
        s->plen[s->n] = p.payload_len;
    }
    return s->n++ >= s->drop;
}

/* A fresh RC QP of n in RTS, connected to itself: only its SQ runs. */
static inline void self_qp(Qp *q, Node *n)
{
    Qp peer;

    qp_new(q, n, VRNIC_QP_TYPE_RC, 0);
    peer = *q;
    qp_up(q, &peer, 3, 0, 0);
}

#endif
