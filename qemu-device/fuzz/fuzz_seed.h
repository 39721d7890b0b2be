/*
 * The fuzz targets' input formats: operation numbers (shared by each
 * target's parser and the seed writers, so the two cannot drift) and
 * encoders for the operations the seed recorder (record.c) and generator
 * (gen_corpus.c) write. Each target's file describes what its operations
 * do; every input parses (reads past the end are zeros).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_FUZZ_SEED_H
#define VRNIC_FUZZ_SEED_H

#include <stdint.h>
#include <string.h>

/* fuzz_admin: RAM it hands out, operation = first byte % ADM__COUNT. */
#define SEED_ADMIN_RAM          UINT64_C(0x4000000000)  /* FUZZ_RAM_BASE */
#define SEED_ADMIN_RAM_SIZE     (2u << 20)
enum {
    ADM_STD_SETUP = 0,      /* 2 values */
    ADM_RING_AQ = 2,        /* 2 */
    ADM_RING_AEQ = 4,
    ADM_RING_ETH = 5,
    ADM_CMD = 6,            /* 20: a command built from fields */
    ADM_RAW_CMD = 26,       /* 3 */
    ADM_REG = 29,           /* 5: any register write */
    ADM_REG_READ = 34,
    ADM_MEM = 35,           /* 6: bytes anywhere in RAM */
    ADM_DB = 41,            /* 5: a BAR2 doorbell */
    ADM_SETTLE = 46,        /* 4 */
    ADM_RUN = 50,
    ADM_TIMER = 51,
    ADM_LINK = 52,
    ADM_RESET = 53,
    ADM_FRAME = 54,         /* 2 */
    ADM_ETH_DESC = 56,      /* 3 */
    ADM_BUSY = 59,
    ADM_RELEASE = 60,
    ADM_FAULTS = 61,
    ADM_DBREC = 62,         /* 2 */
    ADM__COUNT = 64,
};
#define ADM_FRAME_BYTES         2048    /* frame bytes an ADM_FRAME carries */
/* ADM_CMD's selector byte % this: the index of an opcode in its table. */
#define SEED_ADMIN_OPCODES      38

/* fuzz_wqe: operation = first byte & 0x7f, bit 7 = node B. */
enum {
    WQE_SEND = 0,           /* 16 */
    WQE_SEND_RAW = 16,      /* 8 */
    WQE_RECV = 24,          /* 12 */
    WQE_RECV_RAW = 36,      /* 4 */
    WQE_DB = 40,            /* 12 */
    WQE_SETTLE = 52,        /* 16 */
    WQE_TIMER = 68,         /* 8 */
    WQE_POLL = 76,          /* 8 */
    WQE_SET_CI = 84,        /* 3 */
    WQE_STATE = 87,         /* 5 */
    WQE_BUSY = 92,          /* 4 */
    WQE_RELEASE = 96,       /* 4 */
    WQE_WIRE = 100,         /* 8 */
    WQE_REWRITE = 108,      /* 6 */
    WQE_ADMIN = 114,        /* 6 */
    WQE_ARM = 120,          /* 4 */
    WQE_CLOCK = 124,        /* 2 */
    WQE_FAULTS = 126,       /* 2 */
    WQE__COUNT = 128,
};

/* fuzz_rx: operation = first byte % RX__COUNT. */
enum {
    RX_BUILD = 0,           /* 10 */
    RX_RAW = 10,            /* 4 */
    RX_ANSWER = 14,         /* 4 */
    RX_POST_SEND = 18,      /* 3 */
    RX_POST_RECV = 21,      /* 2 */
    RX_SETTLE = 23,         /* 2 */
    RX_TIMER = 25,          /* 2 */
    RX_CQ = 27,
    RX_STATE = 28,
    RX_WIRE = 29,
    RX_ADMIN = 30,
    RX_CLOCK = 31,
    RX__COUNT = 32,
};
/* RX_RAW mode bits */
#define SEED_RX_FIX             0x01    /* checksums and ICRC made valid */
#define SEED_RX_READDRESS       0x07    /* ... to a device QP, PSN it expects */
#define SEED_RX_SRQ             0x08    /* RC frames: the SRQ QP, not the RC */

#define SEED_MAX                (ADM_FRAME_BYTES + 16)

static inline size_t seed_le(uint8_t *b, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        b[i] = v >> (8 * i);
    }
    return n;
}

/* ---- fuzz_admin ---------------------------------------------------------- */

static inline size_t seed_admin_reg(uint8_t *b, uint64_t reg, uint32_t val)
{
    size_t n = 0;

    b[n++] = ADM_REG;
    b[n++] = 0x80;                  /* raw register offset follows */
    n += seed_le(b + n, reg, 2);
    n += seed_le(b + n, val, 4);
    return n;
}

static inline size_t seed_admin_settle(uint8_t *b)
{
    b[0] = ADM_SETTLE;
    b[1] = 255;                     /* rounds - 1 */
    return 2;
}

/* len <= 64 bytes at a 64-byte aligned RAM address. */
static inline size_t seed_admin_mem(uint8_t *b, uint64_t addr,
                                    const void *data, uint8_t len)
{
    size_t n = 0;

    if (addr < SEED_ADMIN_RAM || addr - SEED_ADMIN_RAM >= SEED_ADMIN_RAM_SIZE ||
        (addr & 63) || len > 64) {
        return 0;
    }
    b[n++] = ADM_MEM;
    b[n++] = 0;                     /* pick_addr: RAM + 64 * off */
    n += seed_le(b + n, (addr - SEED_ADMIN_RAM) / 64, 2);
    b[n++] = len;
    memcpy(b + n, data, len);
    return n + len;
}

static inline size_t seed_admin_db(uint8_t *b, uint32_t page, uint32_t off,
                                   uint32_t qn, uint16_t idx)
{
    size_t n = 0;

    b[n++] = ADM_DB;
    b[n++] = page;
    b[n++] = 0x80;                  /* raw offset follows */
    n += seed_le(b + n, off, 2);
    b[n++] = 0x80;                  /* pick_num: raw number follows */
    n += seed_le(b + n, qn, 4);
    n += seed_le(b + n, idx, 2);
    return n;
}

static inline size_t seed_admin_frame(uint8_t *b, const uint8_t *frame,
                                      size_t len)
{
    size_t n = 0, k = len < ADM_FRAME_BYTES ? len : ADM_FRAME_BYTES;

    b[n++] = ADM_FRAME;
    n += seed_le(b + n, len, 2);
    memcpy(b + n, frame, k);
    return n + k;
}

/* ---- fuzz_rx ------------------------------------------------------------- */

static inline size_t seed_rx_raw(uint8_t *b, const uint8_t *frame,
                                 size_t len, uint8_t mode)
{
    size_t n = 0;

    if (len > ADM_FRAME_BYTES) {
        len = ADM_FRAME_BYTES;
    }
    b[n++] = RX_RAW;
    b[n++] = 0;                     /* the QP the op is "on": unused */
    b[n++] = mode;
    b[n++] = 0;                     /* PSN delta */
    n += seed_le(b + n, len, 2);
    memcpy(b + n, frame, len);
    return n + len;
}

#endif
