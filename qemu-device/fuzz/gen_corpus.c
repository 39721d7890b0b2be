/*
 * Seed generator for the fuzz targets (make fuzz-corpus): writes inputs
 * in the targets' formats (fuzz_seed.h) into OUT/<target>/:
 *  - fuzz_rx: every RoCEv2 frame of a real capture (rdma_rxe, the pcap in
 *    ../shared/vectors), eight at a time in capture order, re-addressed to
 *    the fuzz device; frames built with the device's own codec for every
 *    opcode vrnic implements; answers to requests the device sends; the
 *    FRMR registered, written, read and invalidated by the peer;
 *  - fuzz_wqe: the transport scenarios of qemu-device/tests/test_xport.c
 *    as operations: every WQE opcode on every QP type, then the recovery
 *    paths (a lost frame and the timer, backpressure, RNR, flush, a
 *    deregistration under traffic), then fast registration
 *    (qemu-device/tests/test_frmr.c): REG_MR, accesses, LOCAL_INV, SEND
 *    with Invalidate, the refusals;
 *  - fuzz_admin: the bring-up, each admin opcode built from fields, and
 *    the capture's other frames (ARP, IPv6 ND, TCP) on the Ethernet ring.
 * The unit tests' own command sequences and frames come from record.c.
 *
 * usage: gen-corpus OUT [capture.pcap]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <sys/stat.h>
#include "qemu/osdep.h"
#include "vrnic_pkt.h"
#include "fuzz_dev.h"
#include "fuzz_seed.h"

static uint32_t rd32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct Seed {
    uint8_t b[1 << 16];
    size_t n;
} Seed;

static const char *out_dir;
static unsigned written;

static void put(Seed *s, const void *p, size_t n)
{
    if (s->n + n > sizeof(s->b)) {
        fprintf(stderr, "gen-corpus: seed too long\n");
        exit(1);
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
}

static void u8(Seed *s, uint8_t v)
{
    put(s, &v, 1);
}

static void le(Seed *s, uint64_t v, unsigned n)
{
    uint8_t b[8];

    seed_le(b, v, n);
    put(s, b, n);
}

static void save(const char *target, const char *name, const Seed *s)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", out_dir, target);
    if (mkdir(path, 0755) && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
    f = fopen(path, "wb");
    if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f)) {
        perror(path);
        exit(1);
    }
    written++;
}

/*
 * ---- the fuzz devices' numbers, as they allocate them (next-fit from 1,
 * in fuzz_node_init's order): MRs 1-4, then the window 5 and the FRMR 6.
 */
static uint32_t mr_key(unsigned m)
{
    return (m + 1) << 8 | (0x10 + m);
}

static uint64_t mr_iova(unsigned m)
{
    return FUZZ_MR_IOVA + FUZZ_MR_STRIDE * m + (m == FUZZ_MR_TABLE ? 0x100 : 0);
}

#define MW_KEY  (5u << 8 | 0x77)

/* The FRMR's key once a REG_MR gave it key_byte. */
static uint32_t frmr_key(uint8_t key_byte)
{
    return 6u << 8 | key_byte;
}

/* ---- fuzz_wqe ------------------------------------------------------------ */

static void wqe_op(Seed *s, unsigned op, bool node_b, unsigned qp)
{
    u8(s, op | (node_b ? 0x80 : 0));
    u8(s, qp);
}

static void wqe_settle(Seed *s)
{
    wqe_op(s, WQE_SETTLE, false, 0);
    u8(s, 255);
}

/* pick_sge in fuzz_wqe.c: an in-bounds SGE over MR m. */
static void wqe_sge(Seed *s, unsigned m, uint16_t off, uint16_t len)
{
    u8(s, m);
    le(s, off, 2);
    le(s, len, 2);
}

/* The fields of op_send in fuzz_wqe.c that every opcode has. */
static void wqe_head(Seed *s, bool node_b, unsigned qp, uint8_t opcode,
                     uint8_t flags)
{
    wqe_op(s, WQE_SEND, node_b, qp);
    u8(s, opcode);
    le(s, 0x1000 + opcode, 2);                  /* wr_id */
    u8(s, VRNIC_WQE_FLAG_SIGNALED | flags);
    u8(s, opcode == VRNIC_WQE_OP_BIND_MW ||
       opcode == VRNIC_WQE_OP_REG_MR ? 0 : 1);  /* num_sge */
    le(s, 0x01020304, 4);                       /* imm_data */
}

/*
 * op_send in fuzz_wqe.c, field by field. target: the MR a window binds
 * to, the key an invalidation names (0: the window with key byte kb, 2:
 * the FRMR, 6: the FRMR with its key byte ^ kb), the peer's MR a remote
 * access goes to.
 */
static void wqe_send_to(Seed *s, bool node_b, unsigned qp, uint8_t opcode,
                        uint8_t flags, uint16_t len, uint8_t target,
                        uint8_t kb)
{
    bool ud = qp == FUZZ_QP_UD || qp == FUZZ_QP_GSI;

    wqe_head(s, node_b, qp, opcode, flags);
    if (opcode == VRNIC_WQE_OP_BIND_MW) {
        u8(s, target);
        le(s, 0, 2);
        le(s, 4096, 2);
        u8(s, kb);                              /* the window's key byte */
        u8(s, 0xf);                             /* every remote right */
    } else if (opcode == VRNIC_WQE_OP_LOCAL_INV ||
               opcode == VRNIC_WQE_OP_SEND_INV) {
        u8(s, target);
        if (!(target & 2) || (target & 4)) {
            u8(s, kb);
        }
    } else {
        u8(s, target);                          /* pick_remote */
        le(s, 0x100, 2);
        le(s, 5, 8);                            /* compare_add */
        le(s, 9, 8);                            /* swap */
    }
    if (ud) {
        u8(s, 0);                               /* the peer's GID */
        u8(s, 0);                               /* sgid_index */
        u8(s, 0);                               /* flow label */
        u8(s, qp == FUZZ_QP_GSI ? 2 : 0);       /* dest: GSI or peer UD */
        u8(s, qp == FUZZ_QP_GSI ? 2 : 0);       /* its Q_Key */
    }
    if (flags & VRNIC_WQE_FLAG_INLINE) {
        u8(s, len);
        for (unsigned i = 0; i < len; i++) {
            u8(s, i * 7);
        }
    } else if (opcode != VRNIC_WQE_OP_BIND_MW) {
        wqe_sge(s, FUZZ_MR_TABLE, 0,
                opcode >= VRNIC_WQE_OP_ATOMIC_CMP_SWP ? 8 : len);
    }
}

/* The same to MR_ALL, or naming the window with key byte 0x78. */
static void wqe_send(Seed *s, bool node_b, unsigned qp, uint8_t opcode,
                     uint8_t flags, uint16_t len)
{
    wqe_send_to(s, node_b, qp, opcode, flags, len, FUZZ_MR_ALL, 0x78);
}

/*
 * pick_reg_mr in fuzz_wqe.c up to its layout: c (bit 0: a range, bits
 * 1-3: what is broken, 0x40: shift follows), the key byte, the rights.
 */
static void wqe_reg(Seed *s, bool node_b, unsigned qp, uint8_t c, uint8_t kb,
                    uint8_t access, uint8_t shift)
{
    wqe_head(s, node_b, qp, VRNIC_WQE_OP_REG_MR, 0);
    u8(s, c);
    u8(s, kb);
    u8(s, access);
    if (c & 0x40) {
        u8(s, shift - 12);
    }
}

/* A REG_MR of [off, off + len) of the FRMR's RAM, pages of 2^shift. */
static void wqe_reg_range(Seed *s, bool node_b, unsigned qp, uint8_t broken,
                          uint8_t kb, uint8_t access, uint8_t shift,
                          uint16_t off, uint16_t len)
{
    wqe_reg(s, node_b, qp, 1 | broken << 1 | (shift > 12 ? 0x40 : 0), kb,
            access, shift);
    le(s, off, 2);
    le(s, len - 1, 2);
}

/*
 * A REG_MR of 4 KiB pages (cnt: 1 + cnt % max_pages of them, or past it)
 * sel, sel + step, ... of frmr_page(), the range from first in page 0 to
 * last in the last page.
 */
static void wqe_reg_pages(Seed *s, bool node_b, unsigned qp, uint8_t kb,
                          uint8_t access, uint8_t sel, uint8_t step,
                          uint16_t cnt, uint16_t first, uint16_t last)
{
    wqe_reg(s, node_b, qp, 0, kb, access, 12);
    u8(s, sel);
    u8(s, step);
    le(s, cnt, 2);
    le(s, first, 2);
    le(s, last - 1, 2);
}

/* op_state in fuzz_wqe.c: RESET, and up again. */
static void wqe_reset(Seed *s, bool node_b, unsigned qp)
{
    wqe_op(s, WQE_STATE, node_b, qp);
    u8(s, 3);
}

static void wqe_poll_all(Seed *s)
{
    for (unsigned k = 0; k < 4; k++) {
        wqe_op(s, WQE_POLL, k & 2, 0);
        u8(s, k & 1);
    }
}

static void gen_wqe(void)
{
    static const struct {
        unsigned qp;
        const char *name;
        uint8_t ops[10];
        unsigned nops;
    } kinds[] = {
        { FUZZ_QP_RC, "rc", { 0, 1, 3, 4, 5, 6, 7 }, 7 },
        { FUZZ_QP_RC_SRQ, "rc-srq", { 0, 1, 3, 4, 5 }, 5 },
        { FUZZ_QP_UC, "uc", { 0, 1, 3, 4 }, 4 },
        { FUZZ_QP_UD, "ud", { 0, 1 }, 2 },
        { FUZZ_QP_GSI, "gsi", { 0, 1 }, 2 },
        { FUZZ_QP_LOOP_A, "loop", { 0, 3, 5, 6, 7 }, 5 },
    };
    char name[64];
    Seed s;

    for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (unsigned o = 0; o < kinds[k].nops; o++) {
            uint8_t op = kinds[k].ops[o];

            /*
             * One message of 3 packets at the pairs' 256-byte MTU, from
             * A to B, then B answers with the same.
             */
            s.n = 0;
            wqe_send(&s, false, kinds[k].qp, op, 0, 700);
            wqe_settle(&s);
            wqe_send(&s, true, kinds[k].qp, op, VRNIC_WQE_FLAG_SOLICITED, 64);
            wqe_settle(&s);
            wqe_poll_all(&s);
            snprintf(name, sizeof(name), "%s-op%u", kinds[k].name, op);
            save("fuzz_wqe", name, &s);
        }
    }

    /* Inline data. */
    s.n = 0;
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_SEND, VRNIC_WQE_FLAG_INLINE,
             100);
    wqe_send(&s, false, FUZZ_QP_UD, VRNIC_WQE_OP_SEND, VRNIC_WQE_FLAG_INLINE,
             60);
    wqe_settle(&s);
    save("fuzz_wqe", "inline", &s);

    /*
     * A window bound, used remotely, invalidated by SEND with Invalidate
     * (test_mw.c's flow).
     */
    s.n = 0;
    wqe_send(&s, true, FUZZ_QP_RC, VRNIC_WQE_OP_BIND_MW, 0, 0);
    wqe_settle(&s);
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_SEND_INV, 0, 64);
    wqe_settle(&s);
    wqe_send(&s, true, FUZZ_QP_RC, VRNIC_WQE_OP_LOCAL_INV, 0, 0);
    wqe_settle(&s);
    save("fuzz_wqe", "mw", &s);

    /* A lost frame: the retransmit timer recovers it. */
    s.n = 0;
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_WRITE, 0, 1000);
    wqe_op(&s, WQE_SETTLE, false, 0);
    u8(&s, 0);                  /* A's work only: frames wait for B */
    wqe_op(&s, WQE_WIRE, true, 0);
    u8(&s, 0);                                  /* drop the head */
    wqe_op(&s, WQE_WIRE, true, 0);
    u8(&s, 2);                                  /* reorder */
    wqe_settle(&s);
    wqe_op(&s, WQE_TIMER, false, 0);
    u8(&s, 3);
    wqe_poll_all(&s);
    save("fuzz_wqe", "loss", &s);

    /* A busy backend: frames queue, then leave. */
    s.n = 0;
    wqe_op(&s, WQE_BUSY, false, 0);
    u8(&s, 70);
    for (unsigned i = 0; i < 6; i++) {
        wqe_send(&s, false, i & 1 ? FUZZ_QP_UC : FUZZ_QP_RC,
                 VRNIC_WQE_OP_RDMA_WRITE, 0, 4000);
    }
    wqe_settle(&s);
    wqe_op(&s, WQE_RELEASE, false, 0);
    u8(&s, 255);
    wqe_settle(&s);
    save("fuzz_wqe", "backpressure", &s);

    /* RNR: sends to the SRQ QP past its two receive WQEs. */
    s.n = 0;
    for (unsigned i = 0; i < 4; i++) {
        wqe_send(&s, false, FUZZ_QP_RC_SRQ, VRNIC_WQE_OP_SEND, 0, 128);
    }
    wqe_settle(&s);
    wqe_op(&s, WQE_TIMER, false, 0);
    u8(&s, 3);
    wqe_op(&s, WQE_RECV, true, FUZZ_QP_RC_SRQ);
    u8(&s, 1);                                  /* the SRQ */
    u8(&s, 1);                                  /* one SGE */
    le(&s, 7, 2);
    wqe_sge(&s, FUZZ_MR_ALL, 0, 4096);
    wqe_op(&s, WQE_TIMER, false, 0);
    u8(&s, 3);
    save("fuzz_wqe", "rnr", &s);

    /* Flush: posts, then ERR; then posts in ERR. */
    s.n = 0;
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_READ, 0, 512);
    wqe_op(&s, WQE_STATE, false, FUZZ_QP_RC);
    u8(&s, 0);                                  /* to ERR */
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_SEND, 0, 16);
    wqe_settle(&s);
    wqe_op(&s, WQE_STATE, false, FUZZ_QP_RC);
    u8(&s, 3);                                  /* RESET and up again */
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_SEND, 0, 16);
    wqe_settle(&s);
    save("fuzz_wqe", "flush", &s);

    /* DEREG_MR of the buffer a WRITE lands in, then the WRITE. */
    s.n = 0;
    wqe_op(&s, WQE_ADMIN, true, FUZZ_QP_RC);
    u8(&s, 0);                                  /* DEREG_MR MR_ALL */
    wqe_send(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_WRITE, 0, 300);
    wqe_settle(&s);
    save("fuzz_wqe", "dereg", &s);

    /*
     * Fast registration (test_frmr.c's flow): B registers a range of its
     * FRMR; A writes, reads and adds to it; B invalidates it; A's next
     * write is refused.
     */
    s.n = 0;
    wqe_reg_range(&s, true, FUZZ_QP_RC, 0, 0x15, 0xf, 12, 0x80, 12000);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_WRITE, 0, 3000,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_READ, 0, 2000,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, 0, 8,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_send_to(&s, true, FUZZ_QP_RC, VRNIC_WQE_OP_LOCAL_INV, 0, 0, 2, 0);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_WRITE, 0, 64,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_poll_all(&s);
    save("fuzz_wqe", "frmr", &s);

    /*
     * SEND with Invalidate of B's FRMR, then of its registration after
     * that with a stale key byte (refused at both ends).
     */
    s.n = 0;
    wqe_reg_range(&s, true, FUZZ_QP_RC, 0, 0x16, 0xf, 12, 0, 8192);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_SEND_INV, 0, 64, 2, 0);
    wqe_settle(&s);
    wqe_reg_range(&s, true, FUZZ_QP_RC, 0, 0x17, 0xf, 12, 0, 8192);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_SEND_INV, 0, 64, 6, 1);
    wqe_settle(&s);
    wqe_poll_all(&s);
    save("fuzz_wqe", "frmr-send-inv", &s);

    /*
     * 40 pages of B's FRMR out of order (every third page of its RAM),
     * written across them; a window bound to it, which LOCAL_INV of the
     * FRMR then may not pass.
     */
    s.n = 0;
    wqe_reg_pages(&s, true, FUZZ_QP_RC, 0x18, 0x1f, 0, 24, 39, 0x100,
                  0x80);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_WRITE, 0, 9000,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_send_to(&s, true, FUZZ_QP_RC, VRNIC_WQE_OP_BIND_MW, 0, 0,
                FUZZ_MR_FRMR, 0x79);
    wqe_send_to(&s, true, FUZZ_QP_RC, VRNIC_WQE_OP_LOCAL_INV, 0, 0, 2, 0);
    wqe_settle(&s);
    wqe_poll_all(&s);
    save("fuzz_wqe", "frmr-pages", &s);

    /*
     * Every REG_MR refusal pick_reg_mr makes, one at a time on B's UC QP
     * (RESET and up again after each); then pages larger than the FRMR's
     * RAM (not RAM: accesses fail) and a second REG_MR of a valid MR.
     */
    s.n = 0;
    {
        static const uint8_t broken[][2] = {
            { 4, 1 },       /* npages + 1 */
            { 5, 0 },       /* MR_ALL's key */
            { 5, 0x40 },    /* the window's key */
            { 6, 0 },       /* page shift ... */
            { 6, 1 },       /* length 0 */
            { 7, 4 },       /* list address + 5 */
            { 7, 1 },       /* list not RAM */
            { 7, 2 },       /* rsvd0 */
            { 7, 3 },       /* rsvd1 */
        };

        for (unsigned i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
            wqe_reg_range(&s, true, FUZZ_QP_UC, broken[i][0], 0x20 + i, 0xf,
                          12, 0x40, 5000);
            u8(&s, broken[i][1]);
            if (broken[i][0] == 6 && broken[i][1] == 0) {
                u8(&s, 11);                     /* ... 11 */
            }
            wqe_settle(&s);
            wqe_reset(&s, true, FUZZ_QP_UC);
        }
    }
    /* More pages than max_pages; pages not aligned; REMOTE_WRITE alone. */
    wqe_reg_pages(&s, true, FUZZ_QP_UC, 0x30, 0xf, 0, 8, 0x8000, 0, 4096);
    wqe_settle(&s);
    wqe_reset(&s, true, FUZZ_QP_UC);
    wqe_reg_pages(&s, true, FUZZ_QP_UC, 0x31, 0xf, 6, 8, 3, 0, 4096);
    wqe_settle(&s);
    wqe_reset(&s, true, FUZZ_QP_UC);
    wqe_reg_range(&s, true, FUZZ_QP_UC, 0, 0x32, VRNIC_ACCESS_REMOTE_WRITE,
                  12, 0, 4096);
    wqe_settle(&s);
    wqe_reset(&s, true, FUZZ_QP_UC);
    wqe_reg_range(&s, true, FUZZ_QP_UC, 0, 0x33, 0xf, 21, 0x1000, 0x8000);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_UC, VRNIC_WQE_OP_RDMA_WRITE, 0, 100,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_reg_range(&s, true, FUZZ_QP_UC, 0, 0x34, 0xf, 12, 0, 4096);
    wqe_settle(&s);
    wqe_poll_all(&s);
    save("fuzz_wqe", "frmr-refusals", &s);

    /*
     * DEREG_MR and ALLOC_MR of B's FRMR with room for 4 pages: 5 are
     * refused, 4 registered and written.
     */
    s.n = 0;
    wqe_op(&s, WQE_ADMIN, true, FUZZ_QP_RC);
    u8(&s, 8);
    le(&s, 3, 2);                               /* max_pages 4 */
    u8(&s, 0x40);                               /* key byte */
    wqe_reg_pages(&s, true, FUZZ_QP_RC, 0x41, 0xf, 8, 8, 0x8000, 0, 4096);
    wqe_settle(&s);
    wqe_reset(&s, true, FUZZ_QP_RC);
    wqe_reg_pages(&s, true, FUZZ_QP_RC, 0x42, 0xf, 8, 8, 3, 0, 4096);
    wqe_settle(&s);
    wqe_send_to(&s, false, FUZZ_QP_RC, VRNIC_WQE_OP_RDMA_WRITE, 0, 5000,
                FUZZ_MR_FRMR, 0);
    wqe_settle(&s);
    wqe_poll_all(&s);
    save("fuzz_wqe", "frmr-realloc", &s);

    /* Doorbells one ring ahead and behind (test_qp.c's checks). */
    s.n = 0;
    wqe_send(&s, false, FUZZ_QP_UC, VRNIC_WQE_OP_SEND, 0, 16);
    for (unsigned d = 0; d < 4; d++) {
        static const int8_t delta[] = { 16, 17, -1, 0 };

        wqe_op(&s, WQE_DB, false, FUZZ_QP_UC);
        u8(&s, 0x23);                           /* SQ (% 5), relative */
        le(&s, (uint8_t)delta[d], 2);
    }
    wqe_settle(&s);
    save("fuzz_wqe", "doorbells", &s);
}

/* ---- fuzz_rx ------------------------------------------------------------- */

static void rx_raw(Seed *s, const uint8_t *frame, size_t len, uint8_t mode)
{
    uint8_t b[SEED_MAX];

    put(s, b, seed_rx_raw(b, frame, len, mode));
}

static void rx_tail(Seed *s)
{
    u8(s, RX_SETTLE);
    u8(s, 0);
    u8(s, 255);
    u8(s, RX_TIMER);
    u8(s, 0);
    u8(s, 2);
}

/* A frame from the codec; fuzz_rx points it at its device (RX_RAW). */
static size_t build(uint8_t *frame, size_t size, uint8_t opcode, uint32_t psn,
                    const VrnicPktHdrs *base, uint32_t plen)
{
    VrnicPktAddr a;
    VrnicPktHdrs h = *base;
    uint8_t payload[4096];

    memset(&a, 0, sizeof(a));
    /* ::ffff:10.0.0.1 to ::ffff:10.0.0.2 (re-addressed anyway). */
    a.sgid[10] = a.sgid[11] = a.dgid[10] = a.dgid[11] = 0xff;
    a.sgid[12] = a.dgid[12] = 10;
    a.sgid[15] = 1;
    a.dgid[15] = 2;
    memset(a.dmac, 0x52, 6);
    a.hop_limit = 64;
    a.udp_sport = 0xc001;
    h.bth.opcode = opcode;
    h.bth.psn = psn;
    h.bth.pkey = 0xffff;
    h.bth.ack_req = true;
    for (uint32_t i = 0; i < plen; i++) {
        payload[i] = i * 3;
    }
    return vrnic_pkt_build(frame, size, &a, &h, payload, plen);
}

/*
 * RX_ADMIN's REG_MR of the device's FRMR through its RC QP: every right,
 * 4 KiB pages over [off, off + len) of its RAM.
 */
static void rx_frmr_reg(Seed *s, uint8_t kb, uint16_t off, uint16_t len)
{
    u8(s, RX_ADMIN);
    u8(s, FUZZ_QP_RC);
    u8(s, 4);                               /* REG_MR */
    u8(s, kb);
    u8(s, 0xf);                             /* access */
    u8(s, 0);                               /* 4 KiB pages */
    le(s, off, 2);
    le(s, len - 1, 2);
}

static void gen_rx_codec(void)
{
    static const struct {
        const char *name;
        uint8_t ops[4];
        unsigned n;
        uint32_t plen[4];
    } msgs[] = {
        { "rc-send-only", { VRNIC_OP(RC, SEND_ONLY) }, 1, { 100 } },
        { "rc-send-3", { VRNIC_OP(RC, SEND_FIRST), VRNIC_OP(RC, SEND_MIDDLE),
          VRNIC_OP(RC, SEND_LAST_IMM) }, 3, { 256, 256, 10 } },
        { "rc-send-imm", { VRNIC_OP(RC, SEND_ONLY_IMM) }, 1, { 8 } },
        { "rc-send-inv", { VRNIC_OP(RC, SEND_ONLY_INV) }, 1, { 8 } },
        { "rc-write-only", { VRNIC_OP(RC, WRITE_ONLY) }, 1, { 200 } },
        { "rc-write-2", { VRNIC_OP(RC, WRITE_FIRST),
          VRNIC_OP(RC, WRITE_LAST_IMM) }, 2, { 256, 44 } },
        { "rc-write-imm", { VRNIC_OP(RC, WRITE_ONLY_IMM) }, 1, { 0 } },
        { "rc-read", { VRNIC_OP(RC, READ_REQ) }, 1, { 0 } },
        { "rc-cmp-swap", { VRNIC_OP(RC, CMP_SWAP) }, 1, { 0 } },
        { "rc-fetch-add", { VRNIC_OP(RC, FETCH_ADD) }, 1, { 0 } },
        { "uc-send-2", { VRNIC_OP(UC, SEND_FIRST), VRNIC_OP(UC, SEND_LAST) },
          2, { 256, 3 } },
        { "uc-write", { VRNIC_OP(UC, WRITE_ONLY_IMM) }, 1, { 30 } },
        { "ud-send", { VRNIC_OP(UD, SEND_ONLY) }, 1, { 200 } },
        { "ud-send-imm", { VRNIC_OP(UD, SEND_ONLY_IMM) }, 1, { 20 } },
    };
    uint8_t frame[8192];
    Seed s;

    for (unsigned k = 0; k < sizeof(msgs) / sizeof(msgs[0]); k++) {
        VrnicPktHdrs h;
        uint32_t total = 0;

        memset(&h, 0, sizeof(h));
        for (unsigned i = 0; i < msgs[k].n; i++) {
            total += msgs[k].plen[i];
        }
        h.bth.dqpn = 2;
        h.deth.qkey = 0x1234;
        h.deth.sqpn = 0x42;
        h.reth.va = mr_iova(FUZZ_MR_ALL) + 64;
        h.reth.rkey = mr_key(FUZZ_MR_ALL);
        h.reth.len = msgs[k].ops[0] == VRNIC_OP(RC, READ_REQ) ? 600 : total;
        h.atomic.va = mr_iova(FUZZ_MR_ALL) + 8;
        h.atomic.rkey = mr_key(FUZZ_MR_ALL);
        h.atomic.swap_add = 7;
        h.imm = 0x11223344;
        h.ieth_rkey = MW_KEY;
        s.n = 0;
        for (unsigned i = 0; i < msgs[k].n; i++) {
            size_t len = build(frame, sizeof(frame), msgs[k].ops[i], 0, &h,
                               msgs[k].plen[i]);

            rx_raw(&s, frame, len, SEED_RX_READDRESS);
        }
        rx_tail(&s);
        save("fuzz_rx", msgs[k].name, &s);
    }

    /*
     * The device's FRMR registered through its RC QP (RX_ADMIN), then
     * written, read, added to and invalidated by the peer (SEND with
     * Invalidate); the peer's write after that is refused.
     */
    {
        static const uint8_t ops[] = {
            VRNIC_OP(RC, WRITE_ONLY), VRNIC_OP(RC, READ_REQ),
            VRNIC_OP(RC, FETCH_ADD), VRNIC_OP(RC, SEND_ONLY_INV),
            VRNIC_OP(RC, WRITE_ONLY),
        };
        VrnicPktHdrs h;

        s.n = 0;
        rx_frmr_reg(&s, 0x15, 0x40, 0x3000);
        memset(&h, 0, sizeof(h));
        h.reth.va = FUZZ_FRMR_IOVA + 0x50;
        h.reth.rkey = frmr_key(0x15);
        h.reth.len = 200;
        h.atomic.va = FUZZ_FRMR_IOVA + 0x48;
        h.atomic.rkey = frmr_key(0x15);
        h.atomic.swap_add = 3;
        h.ieth_rkey = frmr_key(0x15);
        for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
            size_t len = build(frame, sizeof(frame), ops[i], 0, &h,
                               ops[i] == VRNIC_OP(RC, WRITE_ONLY) ? 200 :
                               ops[i] == VRNIC_OP(RC, SEND_ONLY_INV) ? 16 : 0);

            rx_raw(&s, frame, len, SEED_RX_READDRESS);
        }
        rx_tail(&s);
        save("fuzz_rx", "frmr-write-inv", &s);

        /*
         * Registered, invalidated locally (RX_ADMIN), registered again
         * with a new key byte: a SEND with Invalidate naming the old one
         * is an invalid request.
         */
        s.n = 0;
        rx_frmr_reg(&s, 0x15, 0, 0x2000);
        u8(&s, RX_ADMIN);
        u8(&s, FUZZ_QP_RC);
        u8(&s, 5);                          /* LOCAL_INV */
        u8(&s, 0);                          /* its current key */
        rx_frmr_reg(&s, 0x16, 0, 0x2000);
        h.ieth_rkey = frmr_key(0x15);
        rx_raw(&s, frame, build(frame, sizeof(frame),
                                VRNIC_OP(RC, SEND_ONLY_INV), 0, &h, 16),
               SEED_RX_READDRESS);
        rx_tail(&s);
        save("fuzz_rx", "frmr-stale-inv", &s);
    }

    /*
     * The device as requester: RX_POST_SEND of a READ, SEND and atomic on
     * the RC QP, each answered (RX_ANSWER: the right answer to the
     * newest request, field by field as op_build reads them).
     */
    for (unsigned k = 0; k < 3; k++) {
        static const uint8_t wqe_op[] = {
            VRNIC_WQE_OP_RDMA_READ, VRNIC_WQE_OP_SEND,
            VRNIC_WQE_OP_ATOMIC_FETCH_ADD,
        };
        static const char *const names[] = {
            "answer-read", "answer-send", "answer-atomic",
        };

        s.n = 0;
        u8(&s, RX_POST_SEND);
        u8(&s, FUZZ_QP_RC);
        u8(&s, wqe_op[k]);                  /* c: opcode, one SGE */
        le(&s, 0, 4);                       /* imm */
        le(&s, 0x1234, 4);                  /* rkey */
        le(&s, 0x10000, 8);                 /* remote_addr */
        u8(&s, 0);                          /* compare_add */
        u8(&s, 0);                          /* swap */
        u8(&s, FUZZ_MR_ALL);                /* SGE: MR_ALL, 0, 200 */
        le(&s, 0, 2);
        le(&s, 200, 2);
        u8(&s, RX_ANSWER);
        u8(&s, FUZZ_QP_RC);
        u8(&s, 0);                          /* ctl */
        u8(&s, 0);                          /* ctl2 */
        u8(&s, 0);                          /* ctl3 */
        u8(&s, 0);                          /* traffic class */
        u8(&s, 63);                         /* hop limit - 1 */
        u8(&s, 0);                          /* flow label */
        le(&s, 0x1234, 2);                  /* UDP source port */
        le(&s, 1, 2);                       /* IP id */
        u8(&s, 0);                          /* k: the right answer */
        u8(&s, 0);                          /* msn */
        le(&s, 0x55, 8);                    /* atomic original value */
        for (unsigned i = 0; k == 0 && i < 64; i++) {
            u8(&s, i);                      /* READ response payload */
        }
        u8(&s, 0);                          /* no byte changes */
        rx_tail(&s);
        save("fuzz_rx", names[k], &s);
    }
}

/* ---- the capture --------------------------------------------------------- */

static void gen_pcap(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t gh[24], rh[16], frame[65536];
    Seed rx, eth;
    unsigned nrx = 0, nrx_seeds = 0, neth = 0, neth_seeds = 0;
    char name[64];

    if (!f) {
        fprintf(stderr, "gen-corpus: no capture %s: its seeds are skipped\n",
                path);
        return;
    }
    if (fread(gh, 1, sizeof(gh), f) != sizeof(gh) ||
        rd32(gh) != 0xa1b2c3d4) {
        fprintf(stderr, "gen-corpus: %s is not a little-endian pcap\n", path);
        exit(1);
    }
    rx.n = eth.n = 0;
    while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
        uint32_t len = rd32(rh + 8);
        size_t ip_off, ip_len;

        if (len > sizeof(frame) || fread(frame, 1, len, f) != len) {
            break;
        }
        if (vrnic_icrc_locate(frame, len, &ip_off, &ip_len)) {
            /* RoCEv2 (UDP): to the device, in capture order. */
            rx_raw(&rx, frame, len, SEED_RX_READDRESS | SEED_RX_SRQ);
            if (++nrx % 8 == 0) {
                rx_tail(&rx);
                snprintf(name, sizeof(name), "rxe-pcap-%02u", nrx_seeds++);
                save("fuzz_rx", name, &rx);
                rx.n = 0;
            }
        } else if (neth_seeds < 8) {
            uint8_t b[SEED_MAX];

            /* Everything else: the Ethernet RX ring of fuzz_admin. */
            if (!eth.n) {
                u8(&eth, ADM_STD_SETUP);
                u8(&eth, 0x80);                 /* with Ethernet rings */
                for (unsigned i = 0; i < 8; i++) {
                    u8(&eth, ADM_ETH_DESC);     /* RX buffers */
                    u8(&eth, 0);
                    u8(&eth, 4);                /* pick_addr: 4 KiB */
                    le(&eth, 16 + i, 2);
                    u8(&eth, 200);              /* 14 + 8 * 200 bytes */
                }
            }
            put(&eth, b, seed_admin_frame(b, frame, len));
            if (++neth % 8 == 0) {
                snprintf(name, sizeof(name), "rxe-pcap-eth-%02u",
                         neth_seeds++);
                save("fuzz_admin", name, &eth);
                eth.n = 0;
            }
        }
    }
    fclose(f);
    if (rx.n) {
        rx_tail(&rx);
        snprintf(name, sizeof(name), "rxe-pcap-%02u", nrx_seeds++);
        save("fuzz_rx", name, &rx);
    }
}

/* ---- fuzz_admin ---------------------------------------------------------- */

static void gen_admin(void)
{
    char name[64];
    Seed s;

    /*
     * Each opcode from fields (build_cmd's selector is its index), after
     * the usual bring-up; the fields are a pattern the builders read.
     */
    for (unsigned op = 0; op < SEED_ADMIN_OPCODES; op++) {
        s.n = 0;
        u8(&s, ADM_STD_SETUP);
        u8(&s, 3);
        for (unsigned k = 0; k < 3; k++) {
            u8(&s, ADM_CMD);
            u8(&s, op);
            for (unsigned i = 0; i < 48; i++) {
                u8(&s, (i * (k + 1)) % 7);
            }
        }
        snprintf(name, sizeof(name), "cmd-%02u", op);
        save("fuzz_admin", name, &s);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen-corpus OUT [capture.pcap]\n");
        return 2;
    }
    out_dir = argv[1];
    if (mkdir(out_dir, 0755) && errno != EEXIST) {
        perror(out_dir);
        return 1;
    }
    gen_wqe();
    gen_rx_codec();
    gen_admin();
    if (argc > 2) {
        gen_pcap(argv[2]);
    }
    printf("gen-corpus: %u seeds in %s\n", written, out_dir);
    return 0;
}
