/*
 * libFuzzer target 2 of 3: raw and structured send/receive WQEs and
 * doorbells with arbitrary producer indices on connected RC, UC and UD
 * QPs. Two devices (nodes A and B) share a wire; each has every QP type
 * up (fuzz_dev.h), its rings and buffers handed out exactly, so that any
 * DMA outside them is a canary hit. The input is a list of operations:
 * post (structured or raw bytes; REG_MR and LOCAL_INV of the FRMR among
 * them), ring doorbells with any index, run the bottom halves, fire
 * timers, poll or corrupt CQ consumer indices, change QP states,
 * deregister, reallocate or rebind memory under traffic (its memory is
 * then taken back from the device: a later DMA to it is a canary hit),
 * stall the backend (transmit backpressure), drop, duplicate, reorder
 * or rewrite frames on the wire, and configure the port's fault injector.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fuzz_dev.h"
#include "fuzz_seed.h"

#define MAX_OPS 256

static FuzzBus *bus[2];
static FuzzNode node[2];
static uint64_t resp_buf[2];        /* query answers */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    VrnicConfig cfg = fuzz_config();

    fuzz_global_init();
    for (unsigned i = 0; i < 2; i++) {
        cfg.mac[5] = 0xa0 + i;
        bus[i] = fuzz_bus_new(i ? "B" : "A", &cfg, 256 * 1024);
    }
    fuzz_link(bus[0], bus[1]);
    return 0;
}

/* ---- building blocks ----------------------------------------------------- */

static FuzzNode *peer_node(FuzzNode *n, const FuzzQp *q)
{
    return q->peer_local ? n : &node[n == &node[0]];
}

/*
 * An SGE over one of the node's MRs (or a bad key): address and length
 * mostly inside the MR, sometimes anywhere.
 */
static void pick_sge(FuzzIn *in, FuzzNode *n, struct vrnic_sge *s)
{
    uint8_t ctl = fin_u8(in);
    unsigned m = ctl % (FUZZ_NODE_MRS + 1);
    uint16_t off = fin_u16(in), len = fin_u16(in);

    if (m == FUZZ_NODE_MRS) {
        s->addr = htole64(fin_u64(in));
        s->length = htole32(len);
        s->lkey = htole32(fin_u32(in));
        return;
    }
    if (ctl & 0x80) {
        s->addr = htole64(n->mr[m].iova + off);
        s->length = htole32(len);
    } else {
        uint32_t o = off % n->mr[m].len;

        s->addr = htole64(n->mr[m].iova + o);
        s->length = htole32(len % (n->mr[m].len - o + 1));
    }
    s->lkey = htole32(n->mr[m].key ^ ((ctl & 0x40) ? 0x1 : 0));
}

/*
 * A remote address and key on the peer: an MR (the FRMR as last
 * registered), the window, or garbage.
 */
static void pick_remote(FuzzIn *in, FuzzNode *pn, uint64_t *addr,
                        uint32_t *rkey)
{
    uint8_t ctl = fin_u8(in);
    unsigned m = ctl % (FUZZ_NODE_MRS + 2);
    uint16_t off = fin_u16(in);

    if (m < FUZZ_NODE_MRS) {
        *addr = pn->mr[m].iova + ((ctl & 0x80) ? off : off % pn->mr[m].len);
        *rkey = pn->mr[m].key;
    } else if (m == FUZZ_NODE_MRS) {
        *addr = pn->mr[FUZZ_MR_ALL].iova + off % 16384;
        *rkey = (pn->mw_key & ~0xffu) | fin_u8(in);
    } else {
        *addr = fin_u64(in);
        *rkey = fin_u32(in);
    }
}

static void pick_gid(FuzzIn *in, FuzzNode *n, FuzzNode *pn, uint8_t gid[16])
{
    switch (fin_u8(in) % 5) {
    case 0:
    case 1:
        memcpy(gid, pn->gid, 16);
        break;
    case 2:
        memcpy(gid, n->gid, 16);    /* loopback */
        break;
    case 3:
        memset(gid, 0, 16);         /* IPv4 multicast 224.0.0.x */
        gid[10] = gid[11] = 0xff;
        gid[12] = 224;
        gid[15] = fin_u8(in);
        break;
    default:
        fin_bytes(in, gid, 16);
        break;
    }
}

static uint32_t pick_ud_qpn(FuzzIn *in, FuzzNode *n, FuzzNode *pn)
{
    switch (fin_u8(in) % 5) {
    case 0:
    case 1:
        return pn->qp[FUZZ_QP_UD].qpn;
    case 2:
        return 1;
    case 3:
        return n->qp[FUZZ_QP_UD].qpn;
    default:
        return fin_u32(in);
    }
}

/*
 * QP i of node n, created and connected on first use (with its peer and,
 * for UD and GSI, the other node's QP of the type, which sends name),
 * and given two receive WQEs so that sends land somewhere.
 */
static FuzzQp *use_qp(FuzzNode *n, unsigned i)
{
    FuzzNode *o = &node[n == &node[0]];

    fuzz_pair_ensure(n, o, i);
    if (i == FUZZ_QP_UD || i == FUZZ_QP_GSI) {
        fuzz_pair_ensure(o, n, i);
    }
    for (unsigned k = 0; k < 2; k++) {
        for (unsigned j = 0; j < FUZZ_NODE_QPS; j++) {
            FuzzQp *q = &node[k].qp[j];

            if (q->live && !q->primed) {
                q->primed = true;
                if (!q->srqn) {
                    fuzz_post_recv_simple(&node[k], q, FUZZ_MR_ALL,
                                          1024 * j, 1024);
                    fuzz_post_recv_simple(&node[k], q, FUZZ_MR_TABLE,
                                          2048 * j, 2048);
                }
            }
        }
    }
    return &n->qp[i];
}

static void doorbell_sq(FuzzNode *n, FuzzQp *q)
{
    fuzz_db(n->b, 0, VRNIC_DB_SQ, q->qpn, q->sq_pi);
}

/*
 * Entry of an FRMR page list for pages of 2^shift bytes: a page of the
 * FRMR's RAM, its address plus 8 (aligned to no page size), or no RAM.
 * Each is safe with any page size (fuzz_dev.h), which is what lets a list
 * be shared by every REG_MR WQE in flight.
 */
static uint64_t frmr_page(const FuzzNode *n, uint8_t sel, unsigned shift)
{
    const FuzzMr *f = &n->mr[FUZZ_MR_FRMR];

    switch (sel % 8) {
    case 6:
        return f->buf + 8;
    case 7:
        return (sel & 0x80) ? 0 : FUZZ_NOT_RAM;
    default:
        return f->buf + (((uint64_t)(sel >> 3) << shift) % f->buf_len);
    }
}

/*
 * A REG_MR WQE, usually of the node's FRMR: a range of its RAM page after
 * page, or npages pages in a pattern of the input (repeated, out of
 * order, bad ones among them, sometimes more than the FRMR has room for);
 * then possibly one thing wrong: the page count, the key, the page size
 * (also past 63), the length or iova, the list's address, a reserved
 * byte.
 */
static void pick_reg_mr(FuzzIn *in, FuzzNode *n, struct vrnic_reg_mr_wqe *w)
{
    const FuzzMr before = n->mr[FUZZ_MR_FRMR];
    uint8_t c = fin_u8(in), kb = fin_u8(in), a = fin_u8(in);
    uint32_t access = (a & 0x80) ? fin_u32(in) : a & VRNIC_ACCESS_ALL;
    unsigned shift = 12 + ((c & 0x40) ? fin_u8(in) % 19 : 0);
    uint8_t k;

    if (c & 1) {
        uint16_t off = fin_u16(in), len = fin_u16(in);

        fuzz_frmr_reg_range(n, w, kb, access, shift, off, len);
    } else {
        uint8_t sel = fin_u8(in), step = fin_u8(in);
        uint16_t cnt = fin_u16(in);
        uint32_t np = (cnt & 0x8000) ? n->frmr_max + 1 + cnt % 4 :
                      1 + cnt % n->frmr_max;
        uint64_t psz = 1ull << shift;
        uint64_t first = fin_u16(in) % psz, last = 1 + fin_u16(in) % psz;
        uint64_t *list = fuzz_ptr(n->b, n->frmr_list, FUZZ_FRMR_LIST_LEN);

        if (np == 1 && last <= first) {
            last = first + 1;
        }
        fuzz_frmr_reg(n, w, kb, access, shift,
                      (FUZZ_FRMR_IOVA & ~(psz - 1)) + first,
                      (np - 1) * psz + last - first);
        for (uint32_t i = 0; i < MIN(np, VRNIC_FRMR_MAX_PAGES); i++) {
            list[i] = htole64(frmr_page(n, sel + i * step, shift));
        }
    }
    switch ((c >> 1) & 7) {
    case 4:
        w->npages = htole32(le32toh(w->npages) + (int8_t)fin_u8(in));
        break;
    case 5:
        /* Not the FRMR: its view stays what it was. */
        k = fin_u8(in);
        w->key = htole32((k & 0x80) ? fin_u32(in) : (k & 0x40) ? n->mw_key :
                         n->mr[k % FUZZ_MR_FRMR].key);
        n->mr[FUZZ_MR_FRMR] = before;
        break;
    case 6:
        k = fin_u8(in);
        switch (k % 4) {
        case 0:
            w->page_shift = fin_u8(in);
            break;
        case 1:
            w->length = 0;
            break;
        case 2:
            w->length = htole64(fin_u64(in));
            break;
        default:
            w->iova = htole64(fin_u64(in));
            break;
        }
        break;
    case 7:
        k = fin_u8(in);
        switch (k % 4) {
        case 0:
            w->pbl_addr = htole64(n->frmr_list + 1 + k % 7);
            break;
        case 1:
            w->pbl_addr = htole64(FUZZ_NOT_RAM);
            break;
        case 2:
            w->rsvd0 = k | 1;
            break;
        default:
            w->rsvd1[k % sizeof(w->rsvd1)] = k | 1;
            break;
        }
        break;
    default:
        break;
    }
}

/*
 * A REG_MR's page list address is the one bus address a WQE holds: one
 * the fuzzer wrote in raw bytes could name RAM never handed out (a guest
 * bug, not the device's), so in RAM it becomes the node's list (keeping
 * a misalignment), whose entries are all safe.
 */
static void sq_slot_fix(FuzzNode *n, uint64_t slot)
{
    struct vrnic_reg_mr_wqe *w = fuzz_ptr(n->b, slot, sizeof(*w));
    uint64_t pbl = fuzz_sanitize_addr(le64toh(w->pbl_addr));

    if (w->opcode == VRNIC_WQE_OP_REG_MR) {
        w->pbl_addr = htole64(fuzz_in_ram(n->b, pbl, 1) ?
                              n->frmr_list | (pbl & 7) : pbl);
    }
}

/* A send WQE built from fields. */
static void op_send(FuzzIn *in, FuzzNode *n, FuzzQp *q)
{
    uint8_t w[1u << FUZZ_SQ_SHIFT];
    struct vrnic_send_wqe *h = (void *)w;
    FuzzNode *pn = peer_node(n, q);
    bool ud = q->type == VRNIC_QP_TYPE_UD || q->type == VRNIC_QP_TYPE_GSI;
    uint8_t opb = fin_u8(in);
    uint8_t data_off = ud ? 128 : 64;
    uint8_t nsge;

    memset(w, 0, sizeof(w));
    h->wr_id = htole64(fin_u16(in));
    h->opcode = (opb & 0x80) ? opb : opb % (VRNIC_WQE_OP_FLUSH + 1);
    h->flags = fin_u8(in);
    if (!(h->flags & 0x80)) {
        h->flags &= 0xf;
    }
    nsge = fin_u8(in);
    h->num_sge = (nsge & 0x80) ? nsge : nsge % 5;
    h->imm_data = fin_u32(in);
    if (h->opcode == VRNIC_WQE_OP_BIND_MW) {
        struct vrnic_bind_mw_wqe *bw = (void *)w;
        unsigned m = fin_u8(in) % FUZZ_NODE_MRS;
        uint16_t off = fin_u16(in), len = fin_u16(in);

        bw->rsvd0[0] = bw->rsvd0[1] = 0;
        bw->mw_key = htole32((n->mw_key & ~0xffu) | fin_u8(in));
        bw->mr_key = htole32(n->mr[m].key);
        bw->access = htole32(fin_u8(in) & 0xf);
        bw->addr = htole64(n->mr[m].iova + off % n->mr[m].len);
        bw->length = htole64(len);
        memset(bw->rsvd1, 0, sizeof(bw->rsvd1));
    } else if (h->opcode == VRNIC_WQE_OP_REG_MR) {
        pick_reg_mr(in, n, (void *)w);
    } else if (h->opcode == VRNIC_WQE_OP_LOCAL_INV ||
               h->opcode == VRNIC_WQE_OP_SEND_INV) {
        /*
         * Our own key (LOCAL_INV) or the peer's (SEND_INV): the window
         * with any key byte, the FRMR with its current one or another,
         * or anything.
         */
        FuzzNode *kn = h->opcode == VRNIC_WQE_OP_LOCAL_INV ? n : pn;
        uint8_t k = fin_u8(in);
        uint32_t key;

        if (k & 1) {
            key = fin_u32(in);
        } else if (k & 2) {
            key = kn->mr[FUZZ_MR_FRMR].key ^ ((k & 4) ? fin_u8(in) : 0);
        } else {
            key = (kn->mw_key & ~0xffu) | fin_u8(in);
        }
        h->imm_data = htole32(key);
    } else {
        uint64_t raddr;
        uint32_t rkey;

        pick_remote(in, pn, &raddr, &rkey);
        h->remote_addr = htole64(raddr);
        h->rkey = htole32(rkey);
        h->compare_add = htole64(fin_u64(in));
        h->swap = htole64(fin_u64(in));
    }
    if (ud) {
        struct vrnic_av *av = (void *)(w + 64);
        struct vrnic_ud_dest *d = (void *)(w + 64 + 32);

        pick_gid(in, n, pn, av->dgid);
        memcpy(av->dmac, pn->mac, 6);
        av->sgid_index = fin_u8(in) % 5;
        av->hop_limit = 64;
        av->flow_label = htole32(fin_u8(in));
        d->dest_qpn = htole32(pick_ud_qpn(in, n, pn));
        switch (fin_u8(in) % 4) {
        case 0:
            d->qkey = htole32(0x1234);
            break;
        case 1:
            d->qkey = htole32(0x80000000);      /* the QP's own */
            break;
        case 2:
            d->qkey = htole32(0x80010000);      /* GSI */
            break;
        default:
            d->qkey = htole32(fin_u32(in));
            break;
        }
    }
    if (h->flags & VRNIC_WQE_FLAG_INLINE) {
        uint8_t len = fin_u8(in);

        h->inline_len = htole32(len);
        fin_bytes(in, w + data_off, MIN(len, sizeof(w) - data_off));
    } else if (h->opcode != VRNIC_WQE_OP_BIND_MW &&
               h->opcode != VRNIC_WQE_OP_REG_MR) {
        struct vrnic_sge *s = (void *)(w + data_off);

        for (unsigned i = 0; i < (h->num_sge & 0x7) &&
             data_off + (i + 1) * sizeof(*s) <= sizeof(w); i++) {
            pick_sge(in, n, &s[i]);
        }
    }
    memcpy(fuzz_ptr(n->b, fuzz_sq_slot(q, q->sq_pi), sizeof(w)), w,
           sizeof(w));
    q->sq_pi++;
    if (!(opb & 0x40)) {
        doorbell_sq(n, q);
    }
}

/* Raw bytes into the next SQ or RQ slot, then its doorbell. */
static void op_raw(FuzzIn *in, FuzzNode *n, FuzzQp *q, bool send)
{
    uint32_t size = 1u << (send ? FUZZ_SQ_SHIFT : FUZZ_RQ_SHIFT);
    uint64_t slot = send ? fuzz_sq_slot(q, q->sq_pi) :
                           fuzz_rq_slot(q, q->rq_pi);
    uint8_t *p = fuzz_ptr(n->b, slot, size);
    uint32_t len = MIN((uint32_t)fin_u8(in), size);

    memset(p, 0, size);
    fin_bytes(in, p, len);
    if (send) {
        sq_slot_fix(n, slot);
        q->sq_pi++;
        doorbell_sq(n, q);
    } else {
        q->rq_pi++;
        fuzz_db(n->b, 0, VRNIC_DB_RQ, q->qpn, q->rq_pi);
    }
}

/* A receive WQE built from fields, on the QP's RQ or the node's SRQ. */
static void op_recv(FuzzIn *in, FuzzNode *n, FuzzQp *q)
{
    bool srq = (fin_u8(in) & 1) || q->srqn;
    uint32_t size = 1u << (srq ? FUZZ_SRQ_SHIFT : FUZZ_RQ_SHIFT);
    uint64_t slot = srq ? fuzz_srq_slot(n, n->srq_pi) :
                          fuzz_rq_slot(q, q->rq_pi);
    uint8_t *w = fuzz_ptr(n->b, slot, size);
    struct vrnic_recv_wqe *h = (void *)w;
    struct vrnic_sge *s = (void *)(w + sizeof(*h));
    uint8_t nsge = fin_u8(in);

    memset(w, 0, size);
    h->wr_id = htole64(fin_u16(in));
    h->num_sge = (nsge & 0x80) ? nsge : nsge % 4;
    for (unsigned i = 0; i < (h->num_sge & 3) && i < 3; i++) {
        pick_sge(in, n, &s[i]);
    }
    if (srq) {
        n->srq_pi++;
        fuzz_db(n->b, 0, VRNIC_DB_SRQ, n->srqn, n->srq_pi);
    } else {
        q->rq_pi++;
        fuzz_db(n->b, 0, VRNIC_DB_RQ, q->qpn, q->rq_pi);
    }
}

/* Any doorbell: offset, page, queue number and index from the input. */
static void op_doorbell(FuzzIn *in, FuzzNode *n, FuzzQp *q)
{
    static const uint32_t offs[] = {
        VRNIC_DB_SQ, VRNIC_DB_RQ, VRNIC_DB_SRQ, VRNIC_DB_CQ_ARM_NEXT,
        VRNIC_DB_CQ_ARM_SOLICITED,
    };
    uint8_t ctl = fin_u8(in);
    uint32_t off = offs[ctl % 5];
    uint32_t page = (ctl & 0x80) ? fin_u8(in) : 0;
    uint32_t qn;
    uint16_t idx = fin_u16(in);

    switch (off) {
    case VRNIC_DB_SRQ:
        qn = n->srqn;
        break;
    case VRNIC_DB_CQ_ARM_NEXT:
    case VRNIC_DB_CQ_ARM_SOLICITED:
        qn = n->cqn[(ctl >> 3) & 1];
        break;
    default:
        qn = q->qpn;
        break;
    }
    if (ctl & 0x40) {
        qn = fin_u16(in);
    }
    if (ctl & 0x20) {
        /*
         * Relative to what the harness posted: the interesting edges
         * (one ring ahead, just behind) are a small delta away.
         */
        uint16_t base = off == VRNIC_DB_SQ ? q->sq_pi :
                        off == VRNIC_DB_RQ ? q->rq_pi :
                        off == VRNIC_DB_SRQ ? n->srq_pi :
                        n->cq_ci[(ctl >> 3) & 1];
        idx = base + (int8_t)idx;
    }
    fuzz_db(n->b, page, off, qn, idx);
}

/* Hostile rewrites of memory the device owns a view of. */
static void op_rewrite(FuzzIn *in, FuzzNode *n, FuzzQp *q)
{
    uint8_t kind = fin_u8(in);
    FuzzMr *m = &n->mr[FUZZ_MR_TABLE];

    switch (kind % 5) {
    case 0:
    case 1: {
        /* Bytes of a posted WQE (before or after its doorbell ran). */
        bool send = kind % 5 == 0;
        uint64_t slot = send ? fuzz_sq_slot(q, q->sq_pi - 1 - fin_u8(in) % 4) :
                        fuzz_rq_slot(q, q->rq_pi - 1 - fin_u8(in) % 4);
        uint32_t size = 1u << (send ? FUZZ_SQ_SHIFT : FUZZ_RQ_SHIFT);
        uint32_t off = fin_u8(in) % size;
        uint32_t len = MIN(fin_u8(in) % 17, size - off);

        fin_bytes(in, fuzz_ptr(n->b, slot + off, len), len);
        if (send) {
            sq_slot_fix(n, slot);
        }
        break;
    }
    case 2: {
        /*
         * An MR table entry: a page the device may still be handed (the
         * MR's own, a spare one) or a bad one (unaligned, not RAM).
         */
        uint64_t *tbl;
        unsigned e = fin_u8(in) % 8;
        uint8_t c = fin_u8(in);
        uint64_t v;

        if (!m->live || !m->table) {
            break;
        }
        switch (c % 5) {
        case 0:
            v = m->buf + (c >> 3) % 5 * 4096ull;
            break;
        case 1:
            v = n->spare[(c >> 3) % FUZZ_SPARE_PAGES];
            break;
        case 2:
            v = m->buf + 8;
            break;
        case 3:
            v = 0x1000;
            break;
        default:
            v = 0;
            break;
        }
        tbl = fuzz_ptr(n->b, m->table, 4096);
        tbl[e] = htole64(v);
        break;
    }
    case 3:
        /* SRQ WQE bytes. */
        fin_bytes(in, fuzz_ptr(n->b, fuzz_srq_slot(n, n->srq_pi - 1) +
                               fin_u8(in) % 48, 16), 16);
        break;
    default:
        /* A receive WQE's SGE pointed at another MR's key. */
        if (q->rq_pi) {
            struct vrnic_sge *s = fuzz_ptr(n->b, fuzz_rq_slot(q, q->rq_pi - 1) +
                                           16, sizeof(*s));

            pick_sge(in, n, s);
        }
        break;
    }
}

/* Admin commands under traffic. */
static void op_admin(FuzzIn *in, FuzzNode *n, FuzzQp *q)
{
    uint8_t kind = fin_u8(in);
    FuzzMr *m = &n->mr[(kind >> 4) % FUZZ_NODE_MRS];
    FuzzCmd c;
    uint64_t r;

    switch (kind % 9) {
    case 0:
        /* DEREG_MR: its pages are the guest's again. */
        fuzz_cmd_init(&c, VRNIC_AQ_OP_DEREG_MR);
        c.destroy.handle = htole32(m->key);
        if (m->live && fuzz_aq_exec(n->b, &c, NULL) == VRNIC_AQ_STS_OK) {
            m->live = false;
            fuzz_mr_unhand(n, m);
        }
        break;
    case 1:
        /* REREG_MR: new access rights and key byte, same pages. */
        fuzz_cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
        c.mr.handle = htole32(m->key);
        c.mr.flags = htole32(VRNIC_MR_REREG_ACCESS);
        c.mr.access = htole32(fin_u8(in) & VRNIC_ACCESS_ALL);
        c.mr.key_byte = fin_u8(in);
        if (m->live && fuzz_aq_exec(n->b, &c, &r) == VRNIC_AQ_STS_OK) {
            m->key = r;
        }
        break;
    case 2:
        /* MODIFY_QP with raw attributes. */
        fuzz_cmd_init(&c, VRNIC_AQ_OP_MODIFY_QP);
        c.mod.qpn = htole32(q->qpn);
        c.mod.attr_mask = htole32(fin_u32(in));
        fin_bytes(in, &c.mod.attr, sizeof(c.mod.attr));
        fuzz_aq_exec(n->b, &c, NULL);
        break;
    case 3:
        /* DESTROY_QP: its rings are the guest's again. */
        fuzz_cmd_init(&c, VRNIC_AQ_OP_DESTROY_QP);
        c.destroy.handle = htole32(q->qpn);
        if (q->live && fuzz_aq_exec(n->b, &c, NULL) == VRNIC_AQ_STS_OK) {
            q->live = false;
            fuzz_unhand(n->b, q->mem, FUZZ_QP_MEM_LEN);
        }
        break;
    case 4:
        /* Queries into a handed buffer. */
        fuzz_cmd_init(&c, (kind & 0x10) ? VRNIC_AQ_OP_QUERY_QP :
                          VRNIC_AQ_OP_QUERY_PORT_STATS);
        c.query.resp_addr = htole64(resp_buf[n == &node[1]]);
        c.query.resp_len = htole32((kind & 0x10) ?
                                   sizeof(struct vrnic_qp_attr) :
                                   sizeof(struct vrnic_port_stats));
        c.query.index = htole32((kind & 0x10) ? q->qpn : 1);
        fuzz_aq_exec(n->b, &c, NULL);
        break;
    case 5:
        /* The UD QP joins or leaves a multicast group. */
        fuzz_cmd_init(&c, (kind & 0x10) ? VRNIC_AQ_OP_DETACH_MCAST :
                          VRNIC_AQ_OP_ATTACH_MCAST);
        c.mcast.qpn = htole32(n->qp[FUZZ_QP_UD].qpn);
        c.mcast.gid[10] = c.mcast.gid[11] = 0xff;
        c.mcast.gid[12] = 224;
        c.mcast.gid[15] = fin_u8(in) % 4;
        fuzz_aq_exec(n->b, &c, NULL);
        break;
    case 6:
        /* MODIFY_SRQ: re-arm the limit. */
        fuzz_cmd_init(&c, VRNIC_AQ_OP_MODIFY_SRQ);
        c.srq.handle = htole32(n->srqn);
        c.srq.attr_mask = htole32(VRNIC_SRQ_ATTR_LIMIT);
        c.srq.limit = htole32(fin_u8(in) % 20);
        fuzz_aq_exec(n->b, &c, NULL);
        break;
    default:
        /* DEALLOC_MW (unbinds) and ALLOC_MW again. */
        fuzz_cmd_init(&c, VRNIC_AQ_OP_DEALLOC_MW);
        c.destroy.handle = htole32(n->mw_key);
        if (fuzz_aq_exec(n->b, &c, NULL) == VRNIC_AQ_STS_OK) {
            fuzz_cmd_init(&c, VRNIC_AQ_OP_ALLOC_MW);
            c.mw.pdn = htole32(n->pdn);
            c.mw.type = (kind & 0x10) ? VRNIC_MW_TYPE_1 : VRNIC_MW_TYPE_2;
            c.mw.key_byte = fin_u8(in);
            if (fuzz_aq_exec(n->b, &c, &r) == VRNIC_AQ_STS_OK) {
                n->mw_key = r;
            }
        }
        break;
    case 8: {
        /*
         * DEREG_MR of the FRMR (valid or not) and ALLOC_MR again: a new
         * index (its old key is stale), with room for max_pages of the
         * input.
         */
        FuzzMr *f = &n->mr[FUZZ_MR_FRMR];
        uint32_t max = 1 + fin_u16(in) % VRNIC_FRMR_MAX_PAGES;

        fuzz_cmd_init(&c, VRNIC_AQ_OP_DEREG_MR);
        c.destroy.handle = htole32(f->key);
        if (f->live) {
            if (fuzz_aq_exec(n->b, &c, NULL) != VRNIC_AQ_STS_OK) {
                break;      /* windows are bound to it */
            }
            f->live = false;
            fuzz_mr_unhand(n, f);
        }
        fuzz_frmr_alloc_cmd(n, &c, max, fin_u8(in));
        if (fuzz_aq_exec(n->b, &c, &r) == VRNIC_AQ_STS_OK) {
            fuzz_frmr_allocated(n, r, max);
        }
        break;
    }
    }
}

/* QP state changes: ERR (flush), SQD and back, RESET and up again. */
static void op_state(FuzzIn *in, FuzzNode *n, FuzzQp *q)
{
    uint8_t kind = fin_u8(in);
    FuzzNode *pn = q->peer < 0 ? NULL : peer_node(n, q);

    if (!q->live) {
        return;
    }
    switch (kind % 4) {
    case 0:
        fuzz_modify(n, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_ERR, NULL);
        break;
    case 1:
        fuzz_modify(n, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_SQD, NULL);
        break;
    case 2:
        fuzz_modify(n, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_RTS, NULL);
        break;
    default:
        fuzz_modify(n, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_RESET, NULL);
        fuzz_qp_up(n, q, pn ? pn->gid : NULL, pn ? pn->mac : NULL,
                   q->peer_qpn, 1 + (kind >> 2) % 5);
        q->primed = false;
        break;
    }
}

/*
 * The wire: drop, duplicate, reorder, or rewrite-and-fix a frame in
 * flight to node n.
 */
static void op_wire(FuzzIn *in, FuzzNode *n)
{
    FuzzFifo *q = &n->b->inbox;
    uint8_t kind = fin_u8(in);
    FuzzFrame *fr = q->head;

    if (!fr) {
        return;
    }
    switch (kind % 4) {
    case 0:
        q->head = fr->next;
        q->len--;
        free(fr);
        break;
    case 1:
        fuzz_wire_put(n->b, fr->data, fr->len);
        break;
    case 2:
        if (fr->next) {
            q->head = fr->next;
            q->len--;
            fr->next = NULL;
            fuzz_wire_put(n->b, fr->data, fr->len);
            free(fr);
        }
        break;
    default: {
        uint16_t off = fin_u16(in) % fr->len;

        fr->data[off] ^= fin_u8(in) | 1;
        if (kind & 0x80) {
            fuzz_frame_fix(fr->data, fr->len);
        }
        break;
    }
    }
}

static void op_arm(FuzzIn *in, FuzzNode *n)
{
    uint8_t ctl = fin_u8(in);

    if (ctl & 1) {
        fuzz_reg_write(n->b, VRNIC_REG_EQ_CI(n->eqn),
                       (ctl & 2) ? fin_u32(in) :
                       VRNIC_AEQ_CI_ARM | n->b->core.obj.eqs[n->eqn].pi);
    } else {
        unsigned i = (ctl >> 1) & 1;

        fuzz_db(n->b, 0, (ctl & 4) ? VRNIC_DB_CQ_ARM_SOLICITED :
                VRNIC_DB_CQ_ARM_NEXT, n->cqn[i], n->cq_ci[i]);
    }
}

static void drain(void)
{
    fuzz_settle(bus[0]);
    for (unsigned i = 0; i < 8 && fuzz_fire_timer(bus[0]); i++) {
        fuzz_cq_poll(&node[0], 0, 64);
        fuzz_cq_poll(&node[0], 1, 64);
        fuzz_cq_poll(&node[1], 0, 64);
        fuzz_cq_poll(&node[1], 1, 64);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    unsigned ops = 0;

    for (unsigned i = 0; i < 2; i++) {
        fuzz_bus_start(bus[i]);
    }
    for (unsigned i = 0; i < 2; i++) {
        fuzz_node_init(&node[i], bus[i], 1 + i);
        resp_buf[i] = fuzz_alloc(bus[i], 512, 64);
    }
    for (unsigned i = 0; i < 2; i++) {
        fuzz_post_srq_simple(&node[i], FUZZ_MR_ALL, 8192, 4096);
        fuzz_post_srq_simple(&node[i], FUZZ_MR_TABLE, 0, 8192);
        bus[i]->check_frames = true;
    }
    fuzz_settle(bus[0]);

    while (!fin_empty(&in) && ops++ < MAX_OPS) {
        uint8_t op = fin_u8(&in);
        FuzzNode *n = &node[(op >> 7) & 1];
        FuzzQp *q = use_qp(n, fin_u8(&in) % FUZZ_NODE_QPS);

        switch (op & 0x7f) {
        case WQE_SEND ... WQE_SEND_RAW - 1:
            op_send(&in, n, q);
            break;
        case WQE_SEND_RAW ... WQE_RECV - 1:
            op_raw(&in, n, q, true);
            break;
        case WQE_RECV ... WQE_RECV_RAW - 1:
            op_recv(&in, n, q);
            break;
        case WQE_RECV_RAW ... WQE_DB - 1:
            op_raw(&in, n, q, false);
            break;
        case WQE_DB ... WQE_SETTLE - 1:
            op_doorbell(&in, n, q);
            break;
        case WQE_SETTLE ... WQE_TIMER - 1: {
            uint8_t r = fin_u8(&in);

            if (r) {
                fuzz_settle_n(n->b, r);
            } else {
                fuzz_run_work(n->b);
            }
            break;
        }
        case WQE_TIMER ... WQE_POLL - 1:
            for (unsigned k = fin_u8(&in) % 4 + 1; k--; ) {
                fuzz_fire_timer(n->b);
            }
            break;
        case WQE_POLL ... WQE_SET_CI - 1: {
            uint8_t c = fin_u8(&in);

            fuzz_cq_poll(n, c & 1, (c & 0x80) ? 1 : 64);
            break;
        }
        case WQE_SET_CI ... WQE_STATE - 1: {
            /* A consumer index the device must not trust. */
            uint8_t c = fin_u8(&in);

            fuzz_cq_set_ci(n, c & 1, (c & 2) ? fin_u32(&in) :
                           n->cq_ci[c & 1] + (int8_t)fin_u8(&in));
            break;
        }
        case WQE_STATE ... WQE_BUSY - 1:
            op_state(&in, n, q);
            break;
        case WQE_BUSY ... WQE_RELEASE - 1:
            n->b->busy = fin_u8(&in) % (VRNIC_WIRE_MAX_QUEUED + 16);
            break;
        case WQE_RELEASE ... WQE_WIRE - 1:
            fuzz_wire_release_n(n->b, fin_u8(&in));
            break;
        case WQE_WIRE ... WQE_REWRITE - 1:
            op_wire(&in, n);
            break;
        case WQE_REWRITE ... WQE_ADMIN - 1:
            op_rewrite(&in, n, q);
            break;
        case WQE_ADMIN ... WQE_ARM - 1:
            op_admin(&in, n, q);
            break;
        case WQE_ARM ... WQE_CLOCK - 1:
            op_arm(&in, n);
            break;
        case WQE_CLOCK ... WQE_FAULTS - 1:
            fuzz_advance_clock(n->b, fin_u32(&in));
            break;
        default: {
            /*
             * The port's fault injector: everything but corruption, whose
             * frames the device's own parser rightly refuses (the frame
             * oracle); corrupted frames come from op_wire instead.
             */
            VrnicFaultCfg f = {
                .drop_ppm = fin_u8(&in) * 1000,
                .reorder_ppm = fin_u8(&in) * 1000,
                .reorder_depth = 1 + fin_u8(&in) % 8,
                .dup_ppm = fin_u8(&in) * 1000,
                .delay_us = fin_u8(&in),
                .seed = 1 + fin_u8(&in),
                .dir = fin_u8(&in) % 4,
            };

            fuzz_set_faults(n->b, &f);
            break;
        }
        }
    }
    drain();
    for (unsigned i = 0; i < 2; i++) {
        fuzz_bus_stop(bus[i]);
    }
    return 0;
}
