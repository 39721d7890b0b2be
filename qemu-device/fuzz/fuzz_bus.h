/*
 * The bus the vrnic fuzz targets drive the device core through: guest RAM
 * with a map of what the harness handed to the device, the oracles that
 * go beyond "did not crash" (canary memory, MSI-X range, no DMA from MMIO
 * handlers, bounded DMA per bottom half, well-formed frames on the wire),
 * deferred work, a wire between two buses with transmit backpressure, and
 * a reader for the fuzzer's input bytes. Documentation/fuzzing.rst
 * describes the oracles and their bounds.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_FUZZ_BUS_H
#define VRNIC_FUZZ_BUS_H

#include "qemu/osdep.h"
#include "../vrnic_core.h"

/*
 * Guest RAM of every bus starts at FUZZ_RAM_BASE (256 GiB, far from 0 so
 * that nothing wrapping around 2^64 lands near it). Two canaries bracket
 * it: FUZZ_CANARY_LEN bytes right below the RAM (what an index or offset
 * that went negative reaches) and as many FUZZ_CANARY_HI_OFF above its
 * start (what a wild address reaches). Neither is ever handed to the
 * device, so any DMA touching them is a device bug. Between them, RAM the
 * harness did not hand out (fuzz_alloc) is a canary too.
 */
#define FUZZ_RAM_BASE       UINT64_C(0x4000000000)
#define FUZZ_CANARY_LEN     UINT64_C(0x10000)
#define FUZZ_CANARY_LO      (FUZZ_RAM_BASE - FUZZ_CANARY_LEN)
#define FUZZ_CANARY_HI_OFF  (UINT64_C(16) << 30)
#define FUZZ_CANARY_HI      (FUZZ_RAM_BASE + FUZZ_CANARY_HI_OFF)
/*
 * Addresses the fuzzer may never write into guest memory or a base
 * register (fuzz_sanitize): from any base outside this zone, no extent the
 * interface allows (at most 2^32 bytes: a 32-bit SGE or message length;
 * 1 GiB pages; 2^15-entry rings) reaches a canary.
 */
#define FUZZ_ZONE_MARGIN    (UINT64_C(8) << 30)
/*
 * Granule of the handed-memory map: every ring, buffer and table the
 * harness hands out is a multiple of it.
 */
#define FUZZ_GRANULE_SHIFT  4
#define FUZZ_PAGE_SHIFT     12

typedef struct FuzzFrame {
    struct FuzzFrame *next;
    size_t len;
    uint8_t data[];
} FuzzFrame;

typedef struct FuzzFifo {
    FuzzFrame *head, **tail;
    unsigned len;
} FuzzFifo;

typedef struct FuzzBus FuzzBus;
/* Frames a bus sends with no peer attached (fuzz_rx's sink). */
typedef void FuzzSink(FuzzBus *b, const uint8_t *frame, size_t len);

struct FuzzBus {
    VrnicCore core;
    VrnicConfig cfg;
    const char *name;
    uint8_t *ram;
    uint64_t ram_size;
    uint8_t *handed;        /* one byte per granule: 1 = handed out */
    uint8_t *dirty;         /* one byte per 4 KiB page: needs zeroing */
    uint64_t next_alloc;    /* bump allocator, offset into ram */
    uint64_t top;           /* fuzz_alloc_top's allocations start here */
    uint8_t *devmem;
    bool started;           /* the core exists (fuzz_bus_start) */

    /* Oracle state. */
    bool in_mmio;           /* inside a BAR0/BAR2 handler: no DMA allowed */
    /* The bottom half or receive running (DMA may happen only there) */
    const char *ctx;
    uint64_t ctx_dma;       /* DMA calls since ctx began */
    uint64_t dma_bound;     /* at most this many per ctx (fuzz_dma_bound) */
    uint64_t max_ctx_dma;   /* the largest ctx_dma seen (FUZZ_STATS) */
    bool check_frames;      /* every RoCEv2 frame sent must parse */

    unsigned irqs[VRNIC_VEC_COMP_FIRST + VRNIC_MAX_COMP_VECTORS];
    bool pending[VRNIC_WORK__MAX];
    bool rx_ready;          /* eth_rx_ready was called: retry held RX */

    /*
     * The wire: frames for this bus (inbox) and frames the "netdev" of
     * this bus holds because eth_send returned false (queued).
     */
    FuzzBus *peer;
    FuzzSink *sink;
    FuzzFifo inbox;
    FuzzFifo queued;
    unsigned busy;          /* the next `busy` eth_send calls queue */
    bool faults_used;       /* the fault injector ran in this input */
    uint64_t frames_sent;

    int64_t now_ns;
    int64_t timer_due;

    /* Admin queue the setup helpers use. */
    uint64_t aq_sq, aq_cq, aeq;
    unsigned aq_log, aeq_log;
    uint16_t aq_pi, cmd_id;
};

/*
 * A configuration with small tables: cheap to create and to reason about
 * (the DMA bound scales with it).
 */
VrnicConfig fuzz_config(void);
FuzzBus *fuzz_bus_new(const char *name, const VrnicConfig *cfg,
                      uint64_t ram_size);
void fuzz_bus_free(FuzzBus *b);
/*
 * Start one input: the core created or reset, link up, RAM zeroed,
 * nothing handed out, empty wire.
 */
void fuzz_bus_start(FuzzBus *b);
/* End one input: frames still held are released. */
void fuzz_bus_stop(FuzzBus *b);
void fuzz_link(FuzzBus *a, FuzzBus *b);

/*
 * Guest memory. fuzz_alloc hands out [gpa, gpa + size) and leaves an
 * unhanded gap (a canary) after it; 0 when RAM is exhausted.
 */
uint64_t fuzz_alloc(FuzzBus *b, uint64_t size, uint64_t align);
/*
 * size bytes (a multiple of 4 KiB) at the top of the RAM, below earlier
 * such allocations and above what fuzz_alloc hands out: a device page of
 * any size that starts in them reaches only them, and past the end of the
 * RAM no memory at all. 0 when RAM is exhausted.
 */
uint64_t fuzz_alloc_top(FuzzBus *b, uint64_t size);
void fuzz_hand(FuzzBus *b, uint64_t gpa, uint64_t len);
/* [gpa, gpa + len) is no longer the device's: a DMA there is a canary hit. */
void fuzz_unhand(FuzzBus *b, uint64_t gpa, uint64_t len);
void fuzz_hand_all(FuzzBus *b);
/*
 * Host pointer to [gpa, gpa + len) of RAM (abort if it is not RAM);
 * marks the pages dirty.
 */
void *fuzz_ptr(FuzzBus *b, uint64_t gpa, uint64_t len);
bool fuzz_in_ram(const FuzzBus *b, uint64_t gpa, uint64_t len);
/*
 * Make a value the fuzzer chose safe to use as an address: one in the
 * canary zone is moved far away (bit 62 flipped).
 */
uint64_t fuzz_sanitize_addr(uint64_t v);
/*
 * Write fuzzer bytes into RAM, then sanitize every 8-byte window the
 * write touched (at any alignment: the device reads fields at any byte
 * offset of translated memory).
 */
void fuzz_write_sanitized(FuzzBus *b, uint64_t gpa, const void *data,
                          uint64_t len);

/* MMIO, as the guest CPU does it: no DMA may happen inside. */
void fuzz_reg_write(FuzzBus *b, uint64_t reg, uint32_t val);
uint32_t fuzz_reg_read(FuzzBus *b, uint64_t reg);
void fuzz_reg_write64(FuzzBus *b, uint64_t reg_lo, uint64_t val);
void fuzz_db(FuzzBus *b, uint32_t page, uint32_t off, uint32_t qn,
             uint16_t idx);
/*
 * A context in which the device may DMA, with the DMA bound: what
 * fuzz_run and fuzz_receive use, and tests that call the core directly.
 */
void fuzz_ctx_enter(FuzzBus *b, const char *ctx);
void fuzz_ctx_leave(FuzzBus *b);
/* Deferred work and receive, with the DMA bound. */
void fuzz_run(FuzzBus *b, VrnicWork w);
size_t fuzz_receive(FuzzBus *b, const uint8_t *frame, size_t len);
/*
 * Run work and deliver frames (both ends of a wire) until quiet, at most
 * `rounds` rounds; true when it went quiet.
 */
bool fuzz_settle_n(FuzzBus *b, unsigned rounds);
/*
 * Only this bus's pending work, once each, no frames delivered (its
 * output waits on the wire for the harness to drop or reorder).
 */
bool fuzz_run_work(FuzzBus *b);
void fuzz_settle(FuzzBus *b);
/*
 * Move the clock to the earliest armed timer (either end) and fire it;
 * false when none is armed.
 */
bool fuzz_fire_timer(FuzzBus *b);
void fuzz_advance_clock(FuzzBus *b, int64_t ns);
/* The oldest frame this bus's netdev queued leaves (vrnic_core_wire_sent). */
bool fuzz_wire_release(FuzzBus *b);
/* At most n of them; returns how many left. */
unsigned fuzz_wire_release_n(FuzzBus *b, unsigned n);
/*
 * The port's fault injector (vrnic_core_set_faults), noted for the
 * backpressure oracle.
 */
void fuzz_set_faults(FuzzBus *b, const VrnicFaultCfg *cfg);
/* Queue a frame for b as if it came off the wire. */
void fuzz_wire_put(FuzzBus *b, const uint8_t *frame, size_t len);
void fuzz_fifo_clear(FuzzFifo *q);
/*
 * A frame rewritten by the fuzzer made valid again where it is RoCEv2:
 * IPv4 header checksum, UDP checksum 0 (none), ICRC (the device's own
 * vrnic_icrc_set), so the change reaches the transport.
 */
void fuzz_frame_fix(uint8_t *frame, size_t len);
/*
 * buf[from .. len) from its first `from` bytes (harness code, so that the
 * byte loop is not traced for coverage).
 */
void fuzz_fill_pattern(uint8_t *buf, size_t from, size_t len);

/* The admin queue and AEQ (handed out), and one command through them. */
void fuzz_aq_enable(FuzzBus *b, unsigned log_depth);
void fuzz_aeq_enable(FuzzBus *b, unsigned log_depth);
uint8_t fuzz_aq_exec(FuzzBus *b, const void *cmd, uint64_t *result);
/*
 * The same in batches: post commands (the index identifies each), ring
 * the doorbell and run once, then read each one's status and result
 * (0xff: no completion).
 */
unsigned fuzz_aq_post(FuzzBus *b, const void *cmd);
void fuzz_aq_flush(FuzzBus *b);
uint8_t fuzz_aq_status(FuzzBus *b, unsigned idx, uint64_t *result);

/* The bound on DMA calls per bottom half / receive for a configuration. */
uint64_t fuzz_dma_bound(const VrnicConfig *cfg);
/* An oracle failed: print and abort (libFuzzer reports a crash). */
void fuzz_fail(FuzzBus *b, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

/* The libFuzzer entry points each target defines. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- input bytes ----------------------------------------------------- */

typedef struct FuzzIn {
    const uint8_t *p;
    size_t n;
} FuzzIn;

static inline bool fin_empty(const FuzzIn *in)
{
    return in->n == 0;
}

/* Past the end every read returns zeros: an input never fails to parse. */
static inline uint8_t fin_u8(FuzzIn *in)
{
    if (!in->n) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static inline uint16_t fin_u16(FuzzIn *in)
{
    uint16_t v = fin_u8(in);

    return v | (uint16_t)fin_u8(in) << 8;
}

static inline uint32_t fin_u32(FuzzIn *in)
{
    uint32_t v = fin_u16(in);

    return v | (uint32_t)fin_u16(in) << 16;
}

static inline uint64_t fin_u64(FuzzIn *in)
{
    uint64_t v = fin_u32(in);

    return v | (uint64_t)fin_u32(in) << 32;
}

/* Copy up to len bytes (zero-filled past the end). */
static inline void fin_bytes(FuzzIn *in, void *dst, size_t len)
{
    size_t n = MIN(len, in->n);

    memcpy(dst, in->p, n);
    memset((uint8_t *)dst + n, 0, len - n);
    in->p += n;
    in->n -= n;
}

/*
 * Debug switches, read once from the environment by fuzz_global_init()
 * (call it from LLVMFuzzerInitialize): VRNIC_TEST_TRACE prints the core's
 * trace events, VRNIC_TEST_VERBOSE its guest-error log, FUZZ_STATS the
 * largest DMA count per bottom half at exit. The unit tests' stubs call
 * getenv() on every event instead, which costs too much per execution.
 */
extern int vrnic_fuzz_trace;
extern int vrnic_fuzz_verbose;
extern int fuzz_stats;
void fuzz_global_init(void);

#endif
