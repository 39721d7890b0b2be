/*
 * libFuzzer target 1 of 3: admin commands interleaved with register
 * writes, doorbells and hostile rewrites of guest memory (rings, tables,
 * descriptors, doorbell records) under the device. One device; its whole
 * RAM is handed to it, so the fuzzer may point anything anywhere in it,
 * and the canaries are the memory just below the RAM and far above it
 * (fuzz_bus.h): no value the fuzzer writes into RAM or a base register
 * can name them (fuzz_write_sanitized), so a DMA reaching one is an
 * address the device computed wrongly.
 *
 * The input is a list of operations: program the admin queue, AEQ and
 * Ethernet rings; build one of the 32 admin commands from fields (with
 * memory descriptors and page tables that are valid, or nearly) or take
 * 128 raw bytes; write any register; write any bytes anywhere in RAM;
 * ring any BAR2 doorbell; run bottom halves; fire timers; flip the link;
 * reset; receive Ethernet frames; stall the backend; configure the fault
 * injector.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fuzz_dev.h"
#include "fuzz_seed.h"

#define RAM_SIZE SEED_ADMIN_RAM_SIZE
#define MAX_OPS 256

static FuzzBus *bus;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    VrnicConfig cfg = fuzz_config();

    fuzz_global_init();
    bus = fuzz_bus_new("admin", &cfg, RAM_SIZE);
    return 0;
}

/* ---- values ------------------------------------------------------------- */

/*
 * An address: mostly somewhere in RAM (64-byte or 4 KiB aligned, or at
 * any byte), sometimes one the bus refuses (0, just past the RAM, near the
 * top of the address space, anything).
 */
static uint64_t pick_addr(FuzzIn *in)
{
    uint8_t c = fin_u8(in);
    uint64_t off = fin_u16(in);

    switch (c % 10) {
    case 0 ... 3:
        return FUZZ_RAM_BASE + (off * 64) % RAM_SIZE;
    case 4 ... 5:
        return FUZZ_RAM_BASE + (off * 4096) % RAM_SIZE;
    case 6:
        return FUZZ_RAM_BASE + off % RAM_SIZE;
    case 7:
        return (c & 0x10) ? FUZZ_RAM_BASE + RAM_SIZE + off * 64 : off * 64;
    case 8:
        return UINT64_MAX - (off * 64) + 1;
    default:
        return fuzz_sanitize_addr(fin_u64(in));
    }
}

/* A small object number: mostly one the device hands out first. */
static uint32_t pick_num(FuzzIn *in)
{
    uint8_t c = fin_u8(in);

    return (c & 0x80) ? fin_u32(in) : c % 12;
}

/* What a flow rule names: a QP, an RSS context's number or anything. */
static uint32_t pick_flow_dest(FuzzIn *in)
{
    uint8_t c = fin_u8(in);

    return (c & 0x40) ? VRNIC_RSS_NUM_BASE + c % (VRNIC_RSS_MAX + 2) :
                        pick_num(in);
}

static uint32_t pick_key(FuzzIn *in)
{
    uint8_t c = fin_u8(in);

    return (c & 0x80) ? fin_u32(in) : (uint32_t)(c % 18) << 8 | fin_u8(in);
}

/* ---- memory descriptors -------------------------------------------------- */

/*
 * A memory descriptor over len bytes: usually a valid one over RAM at a
 * picked address (inline, or through 1-3 levels of tables the harness
 * writes into RAM at picked addresses), then possibly one field broken;
 * sometimes raw bytes.
 */
static void pick_mem(FuzzIn *in, struct vrnic_mem_desc *d, uint64_t len)
{
    uint8_t c = fin_u8(in);
    unsigned shift = 12 + ((c & 0x10) ? fin_u8(in) % 19 : 0);
    unsigned levels = (c >> 5) & 3;
    uint64_t psz = 1ull << shift;
    uint64_t base = pick_addr(in) & ~(psz - 1);
    uint64_t iova = (c & 0x8) ? fin_u64(in) : base + (fin_u8(in) & 0xc0);
    uint64_t npages;

    if ((c & 7) == 7) {
        fin_bytes(in, d, sizeof(*d));
        return;
    }
    if (!len) {
        len = 1 + fin_u16(in);
    }
    memset(d, 0, sizeof(*d));
    d->iova = htole64(iova);
    d->length = htole64(len);
    npages = ((iova + len - 1) >> shift) - (iova >> shift) + 1;
    if (npages > VRNIC_MEM_INLINE_PAGES && !levels) {
        levels = 1;
    }
    d->flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, shift) |
                       VRNIC_FIELD_PREP(VRNIC_MEM_LEVELS_MASK, levels));
    d->npages = htole32(npages);
    if (!levels) {
        for (unsigned i = 0; i < npages; i++) {
            d->pages[i] = htole64(fuzz_sanitize_addr(base + i * psz));
        }
    } else {
        /*
         * One table page per level, each entry pointing on: the first
         * 512 pages of a contiguous range (enough for what fits RAM).
         */
        uint64_t tbl = pick_addr(in) & ~4095ull;

        d->pages[0] = htole64(tbl);
        for (unsigned l = levels; l > 0 && fuzz_in_ram(bus, tbl, 4096); l--) {
            uint64_t ent[VRNIC_MEM_TABLE_ENTRIES];
            uint64_t next = l > 1 ? pick_addr(in) & ~4095ull : 0;

            for (unsigned i = 0; i < VRNIC_MEM_TABLE_ENTRIES; i++) {
                ent[i] = htole64(l > 1 ? next : base + i * psz);
            }
            fuzz_write_sanitized(bus, tbl, ent, sizeof(ent));
            tbl = next;
        }
    }
    switch ((c >> 3) & 3) {
    case 0:
        break;      /* valid */
    case 1:
        d->npages = htole32(npages + (int8_t)fin_u8(in));
        break;
    case 2:
        d->length = htole64(fin_u64(in));
        break;
    default:
        d->pages[fin_u8(in) % VRNIC_MEM_INLINE_PAGES] =
            htole64(fuzz_sanitize_addr(pick_addr(in) + fin_u8(in)));
        break;
    }
}

static void pick_attr(FuzzIn *in, struct vrnic_qp_attr *a)
{
    uint8_t c = fin_u8(in);

    memset(a, 0, sizeof(*a));
    if (c & 1) {
        fin_bytes(in, a, sizeof(*a));
        return;
    }
    a->port = 1;
    a->qkey = htole32(0x80010000);
    a->access = htole32(fin_u8(in) & 0xf);
    a->path_mtu = 1 + fin_u8(in) % 5;
    a->dest_qpn = htole32(pick_num(in));
    a->rq_psn = htole32(fin_u32(in) & 0xffffff);
    a->sq_psn = htole32(fin_u32(in) & 0xffffff);
    a->timeout = fin_u8(in) % 32;
    a->retry_cnt = 7;
    a->rnr_retry = fin_u8(in) % 8;
    a->min_rnr_timer = 1;
    a->max_rd_atomic = fin_u8(in) % 6;
    a->max_dest_rd_atomic = fin_u8(in) % 6;
    a->av.hop_limit = 64;
    /* Our own GID 0 as the destination: the loopback path. */
    fuzz_gid_v4(a->av.dgid, (c & 2) ? 1 : fin_u8(in));
    a->av.sgid_index = fin_u8(in) % 5;
    memcpy(a->av.dmac, bus->cfg.mac, 6);
}

/* Required attribute masks of the usual transitions, per type. */
static uint32_t pick_mask(FuzzIn *in, uint8_t *state)
{
    static const uint32_t masks[] = {
        /* RESET->INIT: RC/UC, UD, GSI */
        0x39, 0x71, 0x51,
        /* INIT->RTR: RC, UC */
        0x2b181, 0x101181,
        /* RTR->RTS: RC, UC/UD/GSI */
        0x12e01, 0x10001,
        /* to ERR, RESET, SQD */
        0x1,
    };
    static const uint8_t states[] = { 1, 1, 1, 2, 2, 3, 3, 6 };
    uint8_t c = fin_u8(in);
    unsigned i = c % 8;

    if (c & 0x80) {
        *state = fin_u8(in) % 8;
        return fin_u32(in);
    }
    *state = i == 7 ? (c >> 3) % 7 : states[i];
    return i == 1 ? masks[1] | 0x100000 : i == 3 ? 0x12b181 : masks[i];
}

/* ---- commands ------------------------------------------------------------ */

static const uint16_t opcodes[] = {
    VRNIC_AQ_OP_QUERY_DEVICE, VRNIC_AQ_OP_QUERY_PORT, VRNIC_AQ_OP_SET_MAC,
    VRNIC_AQ_OP_SET_MTU, VRNIC_AQ_OP_ADD_GID, VRNIC_AQ_OP_DEL_GID,
    VRNIC_AQ_OP_QUERY_GID, VRNIC_AQ_OP_QUERY_PORT_STATS,
    VRNIC_AQ_OP_CREATE_EQ, VRNIC_AQ_OP_DESTROY_EQ, VRNIC_AQ_OP_ALLOC_PD,
    VRNIC_AQ_OP_DEALLOC_PD, VRNIC_AQ_OP_REG_MR, VRNIC_AQ_OP_DEREG_MR,
    VRNIC_AQ_OP_QUERY_MR, VRNIC_AQ_OP_REREG_MR, VRNIC_AQ_OP_CREATE_CQ,
    VRNIC_AQ_OP_DESTROY_CQ, VRNIC_AQ_OP_RESIZE_CQ, VRNIC_AQ_OP_CREATE_QP,
    VRNIC_AQ_OP_MODIFY_QP, VRNIC_AQ_OP_QUERY_QP, VRNIC_AQ_OP_DESTROY_QP,
    VRNIC_AQ_OP_CREATE_SRQ, VRNIC_AQ_OP_MODIFY_SRQ, VRNIC_AQ_OP_QUERY_SRQ,
    VRNIC_AQ_OP_DESTROY_SRQ, VRNIC_AQ_OP_ATTACH_MCAST,
    VRNIC_AQ_OP_DETACH_MCAST, VRNIC_AQ_OP_ALLOC_MW, VRNIC_AQ_OP_DEALLOC_MW,
    VRNIC_AQ_OP_ALLOC_MR, VRNIC_AQ_OP_CREATE_FLOW, VRNIC_AQ_OP_DESTROY_FLOW,
    VRNIC_AQ_OP_CREATE_RSS, VRNIC_AQ_OP_DESTROY_RSS,
    VRNIC_AQ_OP_ALLOC_XRCD, VRNIC_AQ_OP_DEALLOC_XRCD,
};
static_assert(sizeof(opcodes) / sizeof(opcodes[0]) == SEED_ADMIN_OPCODES,
              "the seeds build each opcode by its index");

static uint32_t query_len(uint16_t op)
{
    switch (op) {
    case VRNIC_AQ_OP_QUERY_DEVICE:
        return sizeof(struct vrnic_device_attr);
    case VRNIC_AQ_OP_QUERY_PORT:
        return sizeof(struct vrnic_port_attr);
    case VRNIC_AQ_OP_QUERY_GID:
        return sizeof(struct vrnic_gid_entry);
    case VRNIC_AQ_OP_QUERY_PORT_STATS:
        return sizeof(struct vrnic_port_stats);
    case VRNIC_AQ_OP_QUERY_QP:
        return sizeof(struct vrnic_qp_attr);
    default:
        return sizeof(struct vrnic_srq_attr);
    }
}

static void build_cmd(FuzzIn *in, FuzzCmd *c)
{
    uint8_t sel = fin_u8(in);
    uint16_t op = (sel & 0x80) ? fin_u16(in) :
                  opcodes[sel % (sizeof(opcodes) / sizeof(opcodes[0]))];

    fuzz_cmd_init(c, op);
    switch (op) {
    case VRNIC_AQ_OP_QUERY_DEVICE:
    case VRNIC_AQ_OP_QUERY_PORT:
    case VRNIC_AQ_OP_QUERY_GID:
    case VRNIC_AQ_OP_QUERY_PORT_STATS:
    case VRNIC_AQ_OP_QUERY_QP:
    case VRNIC_AQ_OP_QUERY_SRQ: {
        uint8_t l = fin_u8(in);

        c->query.resp_addr = htole64(pick_addr(in));
        c->query.resp_len = htole32((l & 0x80) ? fin_u32(in) : query_len(op));
        c->query.index = htole32(op == VRNIC_AQ_OP_QUERY_PORT ||
                                 op == VRNIC_AQ_OP_QUERY_PORT_STATS ?
                                 1 + (l & 1) * pick_num(in) : pick_num(in));
        break;
    }
    case VRNIC_AQ_OP_SET_MAC:
        fin_bytes(in, c->mac.mac, 6);
        break;
    case VRNIC_AQ_OP_SET_MTU:
        c->mtu.mtu = htole32(fin_u16(in));
        break;
    case VRNIC_AQ_OP_ADD_GID:
    case VRNIC_AQ_OP_DEL_GID: {
        uint8_t g = fin_u8(in);

        c->gid.index = htole32(g % 6);
        if (op == VRNIC_AQ_OP_ADD_GID) {
            c->gid.type = htole32((g & 0x40) ? fin_u8(in) :
                                  VRNIC_GID_TYPE_ROCE_V2);
            if (g & 0x80) {
                fin_bytes(in, c->gid.gid, 16);
            } else {
                fuzz_gid_v4(c->gid.gid, 1 + (g >> 3) % 4);
            }
        }
        break;
    }
    case VRNIC_AQ_OP_CREATE_EQ:
        c->eq.ring_addr = htole64(pick_addr(in));
        c->eq.log_depth = htole32(fin_u8(in) % 17);
        c->eq.vector = htole32(fin_u8(in) % 8);
        break;
    case VRNIC_AQ_OP_DEREG_MR:
    case VRNIC_AQ_OP_DEALLOC_MW:
        c->destroy.handle = htole32(pick_key(in));
        break;
    case VRNIC_AQ_OP_DESTROY_EQ:
    case VRNIC_AQ_OP_DEALLOC_PD:
    case VRNIC_AQ_OP_DESTROY_CQ:
    case VRNIC_AQ_OP_DESTROY_QP:
    case VRNIC_AQ_OP_DESTROY_SRQ:
    case VRNIC_AQ_OP_DEALLOC_XRCD:
        c->destroy.handle = htole32(pick_num(in));
        break;
    case VRNIC_AQ_OP_ALLOC_XRCD:
        if (fin_u8(in) & 1) {
            c->raw[8 + fin_u8(in) % 120] = fin_u8(in);  /* reserved */
        }
        break;
    case VRNIC_AQ_OP_ALLOC_PD:
        c->pd.uctx = htole32(fin_u8(in) % 5);
        break;
    case VRNIC_AQ_OP_REG_MR:
    case VRNIC_AQ_OP_REREG_MR: {
        uint8_t f = fin_u8(in);

        if (op == VRNIC_AQ_OP_REREG_MR) {
            c->mr.handle = htole32(pick_key(in));
        }
        c->mr.pdn = htole32(pick_num(in));
        c->mr.access = htole32(fin_u8(in) & 0x3f);
        c->mr.flags = htole32((f & 0x80) ? fin_u32(in) : f % 8);
        c->mr.key_byte = fin_u8(in);
        if (op == VRNIC_AQ_OP_REG_MR && (f % 8) == VRNIC_MR_FLAG_DMA) {
            c->mr.mem.length = htole64(~0ull);
        } else if (op == VRNIC_AQ_OP_REG_MR &&
                   (f % 8) == VRNIC_MR_FLAG_DEVICE_MEM) {
            c->mr.mem.iova = htole64(fin_u64(in));
            c->mr.mem.length = htole64(fin_u16(in));
            c->mr.mem.pages[0] = htole64(fin_u16(in));
        } else {
            pick_mem(in, &c->mr.mem, 0);
        }
        break;
    }
    case VRNIC_AQ_OP_QUERY_MR: {
        uint32_t count = fin_u16(in) % (VRNIC_QUERY_MR_MAX_PAGES + 8);

        c->query_mr.resp_addr = htole64(pick_addr(in));
        c->query_mr.key = htole32(pick_key(in));
        c->query_mr.first = htole32(fin_u8(in));
        c->query_mr.count = htole32(count);
        c->query_mr.resp_len = htole32((count & 1) && (fin_u8(in) & 1) ?
                                       fin_u32(in) :
                                       sizeof(struct vrnic_mr_attr) +
                                       8 * count);
        break;
    }
    case VRNIC_AQ_OP_CREATE_CQ:
    case VRNIC_AQ_OP_RESIZE_CQ: {
        uint32_t log = fin_u8(in) % 10;

        if (op == VRNIC_AQ_OP_RESIZE_CQ) {
            c->cq.handle = htole32(pick_num(in));
        }
        c->cq.eqn = htole32(pick_num(in));
        c->cq.log_depth = htole32(log);
        c->cq.uctx = htole32(fin_u8(in) % 5);
        pick_mem(in, &c->cq.mem, (VRNIC_CQE_SIZE << log) + VRNIC_DBREC_SIZE);
        break;
    }
    case VRNIC_AQ_OP_CREATE_QP: {
        uint8_t g = fin_u8(in);
        uint32_t sq, rq;

        c->qp.type = 1 + g % 7;
        c->qp.sq_log_depth = fin_u8(in) % 8;
        c->qp.sq_wqe_shift = 6 + fin_u8(in) % 4;
        if (c->qp.type == VRNIC_QP_TYPE_RAW_PACKET && !c->qp.sq_log_depth &&
            (g & 0x10)) {
            c->qp.sq_wqe_shift = 0;         /* receive-only: no SQ fields */
        }
        c->qp.rq_log_depth = (g & 0x20) ? 0 : fin_u8(in) % 8;
        c->qp.rq_wqe_shift = 4 + fin_u8(in) % 6;
        c->qp.max_send_sge = c->qp.sq_wqe_shift ? fin_u8(in) % 6 : 0;
        c->qp.max_recv_sge = fin_u8(in) % 6;
        c->qp.max_inline = htole32(c->qp.sq_wqe_shift ? fin_u8(in) : 0);
        c->qp.pdn = htole32(pick_num(in));
        c->qp.send_cqn = htole32(pick_num(in));
        c->qp.recv_cqn = htole32(pick_num(in));
        c->qp.srqn = htole32((g & 0x20) ? pick_num(in) : 0);
        c->qp.uctx = htole32((g & 0x40) ? fin_u8(in) % 5 : 0);
        sq = c->qp.sq_wqe_shift ?
             1u << (c->qp.sq_log_depth + c->qp.sq_wqe_shift) : 0;
        rq = c->qp.rq_log_depth ?
             1u << (c->qp.rq_log_depth + c->qp.rq_wqe_shift) : 0;
        c->qp.rq_offset = htole32((g & 0x80) ? fin_u32(in) : rq ? sq : 0);
        pick_mem(in, &c->qp.mem, sq + rq);
        if (g & 0x08) {
            /* XRC: the domain, and mostly the fields its type wants. */
            c->qp.xrcdn = htole32(pick_num(in));
            if (c->qp.type == VRNIC_QP_TYPE_XRC_TGT && (g & 0x04)) {
                *c = (FuzzCmd) { .qp.hdr = c->qp.hdr,
                                 .qp.type = VRNIC_QP_TYPE_XRC_TGT,
                                 .qp.xrcdn = c->qp.xrcdn };
            } else if (c->qp.type == VRNIC_QP_TYPE_XRC_INI && (g & 0x04)) {
                c->qp.xrcdn = 0;
                c->qp.recv_cqn = c->qp.srqn = 0;
                c->qp.rq_log_depth = 0;
            }
        }
        break;
    }
    case VRNIC_AQ_OP_MODIFY_QP: {
        uint8_t state;

        c->mod.qpn = htole32(pick_num(in));
        c->mod.attr_mask = htole32(pick_mask(in, &state));
        pick_attr(in, &c->mod.attr);
        c->mod.attr.qp_state = htole32(state);
        break;
    }
    case VRNIC_AQ_OP_CREATE_SRQ:
    case VRNIC_AQ_OP_MODIFY_SRQ: {
        uint32_t log = fin_u8(in) % 8, shift = 4 + fin_u8(in) % 6;

        c->srq.handle = htole32(op == VRNIC_AQ_OP_MODIFY_SRQ ?
                                pick_num(in) : 0);
        c->srq.pdn = htole32(op == VRNIC_AQ_OP_CREATE_SRQ ? pick_num(in) : 0);
        c->srq.attr_mask = htole32(op == VRNIC_AQ_OP_MODIFY_SRQ ?
                                   fin_u8(in) % 4 : 0);
        c->srq.limit = htole32(fin_u8(in) % 40);
        if (op == VRNIC_AQ_OP_CREATE_SRQ) {
            c->srq.log_depth = log;
            c->srq.wqe_shift = shift;
            c->srq.max_sge = fin_u8(in) % 6;
            pick_mem(in, &c->srq.mem, 1u << (log + shift));
            if (fin_u8(in) & 1) {                   /* an XRC SRQ */
                c->srq.xrcdn = htole32(pick_num(in));
                c->srq.cqn = htole32(pick_num(in));
            }
        }
        break;
    }
    case VRNIC_AQ_OP_ATTACH_MCAST:
    case VRNIC_AQ_OP_DETACH_MCAST:
        c->mcast.qpn = htole32(pick_num(in));
        c->mcast.gid[10] = c->mcast.gid[11] = 0xff;
        c->mcast.gid[12] = 224 + fin_u8(in) % 18;
        c->mcast.gid[15] = fin_u8(in);
        break;
    case VRNIC_AQ_OP_ALLOC_MW:
        c->mw.pdn = htole32(pick_num(in));
        c->mw.type = fin_u8(in) % 4;
        c->mw.key_byte = fin_u8(in);
        break;
    case VRNIC_AQ_OP_ALLOC_MR: {
        uint8_t m = fin_u8(in);
        uint32_t max = fin_u16(in) % (VRNIC_FRMR_MAX_PAGES + 1);

        /* 0 .. VRNIC_FRMR_MAX_PAGES, just past it, or anything. */
        if (m & 0x80) {
            max = fin_u32(in);
        } else if (m & 0x40) {
            max = VRNIC_FRMR_MAX_PAGES + (m & 1);
        }
        c->alloc_mr.pdn = htole32(pick_num(in));
        c->alloc_mr.max_pages = htole32(max);
        c->alloc_mr.key_byte = fin_u8(in);
        if (m & 0x20) {
            uint8_t at = fin_u8(in);

            c->alloc_mr.rsvd0[at % sizeof(c->alloc_mr.rsvd0)] = at | 1;
        }
        break;
    }
    case VRNIC_AQ_OP_CREATE_FLOW: {
        uint8_t f = fin_u8(in);
        uint8_t *v = (uint8_t *)&c->flow.value;
        const uint8_t *m = (const uint8_t *)&c->flow.mask;

        c->flow.qpn = htole32(pick_flow_dest(in));
        c->flow.priority = htole16(fin_u8(in) % 4);
        c->flow.flags = (f & 0x80) ? fin_u8(in) : f & VRNIC_FLOW_F_DROP;
        /* A few key bytes under a mask; mostly a valid rule. */
        for (unsigned i = 0; i < (f >> 1) % 8; i++) {
            uint8_t at = fin_u8(in) % sizeof(c->flow.mask);

            ((uint8_t *)&c->flow.mask)[at] = fin_u8(in);
            v[at] = fin_u8(in);
        }
        if (!(f & 0x40)) {
            for (size_t i = 0; i < sizeof(c->flow.value); i++) {
                v[i] &= m[i];
            }
        }
        break;
    }
    case VRNIC_AQ_OP_DESTROY_FLOW:
        c->destroy.handle = htole32(fin_u8(in) % (VRNIC_FLOW_MAX + 2));
        break;
    case VRNIC_AQ_OP_CREATE_RSS: {
        uint8_t f = fin_u8(in);
        uint32_t n;

        c->rss.uctx = htole32((f & 0x40) ? fin_u8(in) % 5 : 0);
        c->rss.fields = htole16((f & 0x80) ? fin_u16(in) :
                                1 + fin_u8(in) % VRNIC_RSS_F_ALL);
        c->rss.log_size = fin_u8(in) % (VRNIC_RSS_LOG_TABLE_MAX + 2);
        fin_bytes(in, c->rss.key, sizeof(c->rss.key));
        n = 1u << MIN(c->rss.log_size, VRNIC_RSS_LOG_TABLE_MAX);
        for (uint32_t i = 0; i < n; i++) {
            c->rss.qpn[i] = htole32(pick_num(in));
        }
        if (f & 0x20) {
            uint8_t at = fin_u8(in);

            c->rss.qpn[at % VRNIC_RSS_TABLE_MAX] = htole32(at);
        }
        break;
    }
    case VRNIC_AQ_OP_DESTROY_RSS:
        c->destroy.handle = htole32(pick_flow_dest(in));
        break;
    default:
        fin_bytes(in, c->raw + 8, 32);
        break;
    }
}

/*
 * Put a command in the next admin SQ slot (where the device will look)
 * and ring the doorbell; the producer index may jump.
 */
static void submit(FuzzIn *in, const FuzzCmd *c, uint8_t ctl)
{
    VrnicRing *aq = &bus->core.aq;
    uint16_t pi = aq->pi + 1;

    if (aq->live) {
        uint64_t slot = aq->base + (uint64_t)(aq->pi & ((1u << aq->log_depth) -
                                                        1)) *
                        VRNIC_AQ_CMD_SIZE;

        if (fuzz_in_ram(bus, slot, VRNIC_AQ_CMD_SIZE)) {
            fuzz_write_sanitized(bus, slot, c, VRNIC_AQ_CMD_SIZE);
        }
    }
    if (ctl & 0x40) {
        pi = aq->pi + (int8_t)fin_u8(in);
    }
    if (!(ctl & 0x20)) {
        fuzz_reg_write(bus, VRNIC_REG_AQ_PI, (ctl & 0x10) ? fin_u32(in) : pi);
    }
    if (!(ctl & 0x08)) {
        fuzz_settle(bus);
    }
}

/* ---- registers ----------------------------------------------------------- */

static const uint32_t regs[] = {
    VRNIC_REG_DEV_CTRL, VRNIC_REG_AQ_SQ_BASE_LO, VRNIC_REG_AQ_SQ_BASE_HI,
    VRNIC_REG_AQ_CQ_BASE_LO, VRNIC_REG_AQ_CQ_BASE_HI, VRNIC_REG_AQ_CFG,
    VRNIC_REG_AQ_PI, VRNIC_REG_AEQ_BASE_LO, VRNIC_REG_AEQ_BASE_HI,
    VRNIC_REG_AEQ_CFG, VRNIC_REG_AEQ_CI, VRNIC_REG_ETH_TX_BASE_LO,
    VRNIC_REG_ETH_TX_BASE_HI, VRNIC_REG_ETH_TX_CFG, VRNIC_REG_ETH_TX_PI,
    VRNIC_REG_ETH_RX_BASE_LO, VRNIC_REG_ETH_RX_BASE_HI, VRNIC_REG_ETH_RX_CFG,
    VRNIC_REG_ETH_RX_PI, VRNIC_REG_ETH_TX_ARM, VRNIC_REG_ETH_RX_ARM,
    VRNIC_REG_ETH_CTRL, VRNIC_REG_EQ_CI(0), VRNIC_REG_EQ_CI(1),
    VRNIC_REG_EQ_CI(2), VRNIC_REG_EQ_CI(4), VRNIC_REG_EQ_CI(5),
    VRNIC_REG_ID, VRNIC_REG_DEV_STS,
};

/* The 64-bit base register a write to reg changes, or NULL. */
static uint64_t *base_reg(uint64_t reg, bool *hi)
{
    VrnicCore *core = &bus->core;

    *hi = reg & 4;
    switch (reg & ~4ull) {
    case VRNIC_REG_AQ_SQ_BASE_LO:
        return &core->aq.base_reg;
    case VRNIC_REG_AQ_CQ_BASE_LO:
        return &core->aq_cq_base_reg;
    case VRNIC_REG_AEQ_BASE_LO:
        return &core->aeq.base_reg;
    case VRNIC_REG_ETH_TX_BASE_LO:
        return &core->eth_tx.base_reg;
    case VRNIC_REG_ETH_RX_BASE_LO:
        return &core->eth_rx.base_reg;
    default:
        return NULL;
    }
}

/*
 * Any register write. A base register half is adjusted so that the 64-bit
 * base it forms with the other half (as the device holds it) is no
 * canary-zone address.
 */
static void reg_write(uint64_t reg, uint32_t val)
{
    bool hi;
    uint64_t *cur = base_reg(reg, &hi);

    if (cur) {
        uint64_t v = hi ? (*cur & 0xffffffffull) | (uint64_t)val << 32 :
                          (*cur & ~0xffffffffull) | val;
        uint64_t s = fuzz_sanitize_addr(v);

        if (hi) {
            val = s >> 32;
        } else if (s != v) {
            /* Only the high half can leave the zone: write it too. */
            fuzz_reg_write(bus, reg, val);
            reg += 4;
            val = s >> 32;
        }
    }
    fuzz_reg_write(bus, reg, val);
}

static void ring_setup(FuzzIn *in, uint64_t base_lo, uint64_t cfg_reg,
                       uint64_t base2_lo)
{
    uint8_t c = fin_u8(in);

    reg_write(cfg_reg, 0);
    reg_write(base_lo, (uint32_t)pick_addr(in));
    reg_write(base_lo + 4, (uint32_t)(pick_addr(in) >> 32));
    if (base2_lo) {
        uint64_t a = pick_addr(in);

        reg_write(base2_lo, (uint32_t)a);
        reg_write(base2_lo + 4, a >> 32);
    }
    reg_write(cfg_reg, VRNIC_RING_CFG_ENABLE | ((c & 0x80) ?
              VRNIC_RING_CFG_IRQ_EN : 0) | (c % 13));
}

/* The usual bring-up with everything in RAM, so seeds get going fast. */
static void std_setup(FuzzIn *in)
{
    uint8_t c = fin_u8(in);

    reg_write(VRNIC_REG_AQ_CFG, 0);
    fuzz_reg_write64(bus, VRNIC_REG_AQ_SQ_BASE_LO, FUZZ_RAM_BASE);
    fuzz_reg_write64(bus, VRNIC_REG_AQ_CQ_BASE_LO, FUZZ_RAM_BASE + 0x8000);
    fuzz_reg_write(bus, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE |
                   VRNIC_RING_CFG_IRQ_EN | (1 + c % 6));
    fuzz_reg_write64(bus, VRNIC_REG_AEQ_BASE_LO, FUZZ_RAM_BASE + 0x9000);
    fuzz_reg_write(bus, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 4);
    fuzz_reg_write(bus, VRNIC_REG_AEQ_CI, VRNIC_AEQ_CI_ARM);
    if (c & 0x80) {
        fuzz_reg_write64(bus, VRNIC_REG_ETH_TX_BASE_LO, FUZZ_RAM_BASE + 0xa000);
        fuzz_reg_write(bus, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | 4);
        fuzz_reg_write64(bus, VRNIC_REG_ETH_RX_BASE_LO, FUZZ_RAM_BASE + 0xb000);
        fuzz_reg_write(bus, VRNIC_REG_ETH_RX_CFG, VRNIC_RING_CFG_ENABLE | 4);
    }
}

/* An Ethernet descriptor at the ring's producer slot, then its doorbell. */
static void eth_desc(FuzzIn *in, bool tx)
{
    VrnicRing *r = tx ? &bus->core.eth_tx : &bus->core.eth_rx;
    struct vrnic_eth_desc d;
    uint8_t c = fin_u8(in);

    memset(&d, 0, sizeof(d));
    d.addr = htole64(pick_addr(in));
    d.len = htole16((c & 0x80) ? fin_u16(in) : 14 + fin_u8(in) * 8);
    if (r->live) {
        uint64_t slot = r->base + (uint64_t)(r->pi & ((1u << r->log_depth) -
                                                      1)) * sizeof(d);

        if (fuzz_in_ram(bus, slot, sizeof(d))) {
            fuzz_write_sanitized(bus, slot, &d, sizeof(d));
        }
    }
    reg_write(tx ? VRNIC_REG_ETH_TX_PI : VRNIC_REG_ETH_RX_PI,
              (c & 0x40) ? r->pi + (int8_t)fin_u8(in) : r->pi + 1);
}

static void set_faults(FuzzIn *in)
{
    VrnicFaultCfg f = {
        .drop_ppm = fin_u8(in) * 2000,
        .reorder_ppm = fin_u8(in) * 2000,
        .reorder_depth = 1 + fin_u8(in) % VRNIC_FAULT_MAX_DEPTH,
        .dup_ppm = fin_u8(in) * 2000,
        .corrupt_ppm = fin_u8(in) * 2000,
        .delay_us = fin_u16(in),
        .seed = fin_u8(in),
        .dir = fin_u8(in) % 4,
    };

    fuzz_set_faults(bus, &f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    unsigned ops = 0;

    fuzz_bus_start(bus);
    fuzz_hand_all(bus);

    while (!fin_empty(&in) && ops++ < MAX_OPS) {
        uint8_t op = fin_u8(&in);

        switch (op % ADM__COUNT) {
        case ADM_STD_SETUP ... ADM_STD_SETUP + 1:
            std_setup(&in);
            break;
        case ADM_RING_AQ ... ADM_RING_AQ + 1:
            ring_setup(&in, VRNIC_REG_AQ_SQ_BASE_LO, VRNIC_REG_AQ_CFG,
                       VRNIC_REG_AQ_CQ_BASE_LO);
            break;
        case ADM_RING_AEQ:
            ring_setup(&in, VRNIC_REG_AEQ_BASE_LO, VRNIC_REG_AEQ_CFG, 0);
            break;
        case ADM_RING_ETH:
            ring_setup(&in, (op & 0x80) ? VRNIC_REG_ETH_TX_BASE_LO :
                       VRNIC_REG_ETH_RX_BASE_LO, (op & 0x80) ?
                       VRNIC_REG_ETH_TX_CFG : VRNIC_REG_ETH_RX_CFG, 0);
            break;
        case ADM_CMD ... ADM_RAW_CMD - 1: {
            FuzzCmd c;

            build_cmd(&in, &c);
            submit(&in, &c, op & 0x80 ? fin_u8(&in) : 0);
            break;
        }
        case ADM_RAW_CMD ... ADM_REG - 1: {
            FuzzCmd c;
            uint8_t len = fin_u8(&in);

            memset(&c, 0, sizeof(c));
            fin_bytes(&in, c.raw, MIN(len, sizeof(c.raw)));
            submit(&in, &c, op & 0x80 ? fin_u8(&in) : 0);
            break;
        }
        case ADM_REG ... ADM_REG_READ - 1: {
            uint8_t r = fin_u8(&in);
            uint64_t reg = (r & 0x80) ? fin_u16(&in) % VRNIC_REGS_SIZE :
                           regs[r % (sizeof(regs) / sizeof(regs[0]))];

            reg_write(reg, fin_u32(&in));
            break;
        }
        case ADM_REG_READ: {
            uint8_t r = fin_u8(&in);

            fuzz_reg_read(bus, (r & 0x80) ? fin_u16(&in) % VRNIC_REGS_SIZE :
                          regs[r % (sizeof(regs) / sizeof(regs[0]))]);
            break;
        }
        case ADM_MEM ... ADM_DB - 1: {
            /* Any bytes anywhere in RAM: WQEs, tables, dbrecs, rings. */
            uint64_t a = pick_addr(&in);
            uint8_t len = fin_u8(&in) % 65, buf[64];

            fin_bytes(&in, buf, len);
            if (fuzz_in_ram(bus, a, len)) {
                fuzz_write_sanitized(bus, a, buf, len);
            }
            break;
        }
        case ADM_DB ... ADM_SETTLE - 1: {
            static const uint32_t offs[] = {
                VRNIC_DB_SQ, VRNIC_DB_RQ, VRNIC_DB_SRQ, VRNIC_DB_CQ_ARM_NEXT,
                VRNIC_DB_CQ_ARM_SOLICITED,
            };
            uint32_t page = fin_u8(&in) % 6;
            uint8_t c = fin_u8(&in);
            uint32_t off = (c & 0x80) ? fin_u16(&in) : offs[c % 5];
            uint32_t qn = pick_num(&in);

            fuzz_db(bus, page, off, qn, fin_u16(&in));
            break;
        }
        case ADM_SETTLE ... ADM_RUN - 1:
            fuzz_settle_n(bus, 1 + fin_u8(&in));
            break;
        case ADM_RUN: {
            uint8_t w = fin_u8(&in) % VRNIC_WORK__MAX;

            fuzz_run(bus, w);
            break;
        }
        case ADM_TIMER:
            fuzz_fire_timer(bus);
            fuzz_advance_clock(bus, fin_u32(&in));
            break;
        case ADM_LINK:
            vrnic_core_set_link(&bus->core, fin_u8(&in) & 1);
            break;
        case ADM_RESET:
            fuzz_reg_write(bus, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
            break;
        case ADM_FRAME ... ADM_ETH_DESC - 1: {
            uint8_t buf[VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD + 64];
            uint16_t len = fin_u16(&in) % sizeof(buf);
            size_t k = MIN(len, ADM_FRAME_BYTES);

            fin_bytes(&in, buf, k);
            memset(buf + k, 0, len - k);
            if (op & 0x80) {
                fuzz_frame_fix(buf, len);
            }
            fuzz_receive(bus, buf, len);
            break;
        }
        case ADM_ETH_DESC ... ADM_BUSY - 1:
            eth_desc(&in, op & 0x80);
            break;
        case ADM_BUSY:
            bus->busy = fin_u8(&in) % (VRNIC_WIRE_MAX_QUEUED + 16);
            break;
        case ADM_RELEASE:
            fuzz_wire_release_n(bus, fin_u8(&in));
            break;
        case ADM_FAULTS:
            set_faults(&in);
            break;
        default: {
            /* A doorbell record or CQ consumer index the device reads. */
            uint64_t a = pick_addr(&in) & ~3ull;
            uint32_t v = fin_u32(&in);

            if (fuzz_in_ram(bus, a, 4)) {
                fuzz_write_sanitized(bus, a, &v, 4);
            }
            break;
        }
        }
    }
    fuzz_settle(bus);
    for (unsigned i = 0; i < 4; i++) {
        if (!fuzz_fire_timer(bus)) {
            break;
        }
    }
    fuzz_bus_stop(bus);
    return 0;
}
