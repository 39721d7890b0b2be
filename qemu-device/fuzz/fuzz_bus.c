/*
 * The fuzz targets' bus: VrnicCoreOps with oracles, guest RAM with a
 * handed-out map, deferred work, a wire with backpressure. See
 * fuzz_bus.h and Documentation/fuzzing.rst.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <limits.h>
#include <stdarg.h>
#include "fuzz_bus.h"
#include "../vrnic_pkt.h"

/* clang 14 defines no __SANITIZE_ADDRESS__; __has_feature tells. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define FUZZ_HAVE_ASAN 1
#endif
#endif

int vrnic_fuzz_trace;
int vrnic_fuzz_verbose;
int fuzz_stats;

/*
 * libFuzzer's extra counters (its features, like coverage): slot k is hit
 * when a context made [2^k, 2^(k+1)) DMA calls, so inputs that make the
 * device work harder per bottom half are kept, and the search leans
 * towards the DMA bound instead of stumbling on it.
 */
__attribute__((section("__libfuzzer_extra_counters")))
static uint8_t fuzz_work_counters[64];

static uint64_t fuzz_stats_max_dma;
static const char *fuzz_stats_max_ctx = "";

static void fuzz_print_stats(void)
{
    fprintf(stderr, "FUZZ_STATS: largest DMA count in one context: %" PRIu64
            " (%s)\n", fuzz_stats_max_dma, fuzz_stats_max_ctx);
}

void fuzz_global_init(void)
{
    vrnic_fuzz_trace = getenv("VRNIC_TEST_TRACE") != NULL;
    vrnic_fuzz_verbose = getenv("VRNIC_TEST_VERBOSE") != NULL;
    fuzz_stats = getenv("FUZZ_STATS") != NULL;
    if (fuzz_stats) {
        atexit(fuzz_print_stats);
    }
}

void fuzz_fail(FuzzBus *b, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "==vrnic-fuzz== ORACLE FAILED on bus %s (%s): ",
            b ? b->name : "-", b && b->ctx ? b->ctx : "-");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---- configuration and the DMA bound ---------------------------------- */

VrnicConfig fuzz_config(void)
{
    VrnicConfig c = {
        .mac = { 0x52, 0x54, 0x00, 0xf0, 0x00, 0x01 },
        .num_comp_vectors = 4,
        .db_pages = 4,
        .gid_tbl_len = 4,
        .max_mtu = 9000,
        .speed_mbps = 25000,
        .cmd_timeout_ms = 5000,
        .max_qp = 8, .max_qp_wr = 64, .max_sge = 4,
        .max_cq = 8, .max_cqe = 256, .max_mr = 16, .max_pd = 4,
        .max_srq = 2, .max_srq_wr = 64, .max_inline_data = 128,
        .max_qp_rd_atom = 4,
        .dm_size = 4096,
    };
    return c;
}

/*
 * The core's own work budgets, in DMA transfers (vrnic_admin.c
 * VRNIC_AQ_WORK, vrnic_qp.c VRNIC_QUEUES_WORK and VRNIC_FLUSH_BUDGET): a
 * bottom half stops starting new work once it spent them.
 */
#define FUZZ_CORE_AQ_WORK       4096
#define FUZZ_CORE_QUEUES_WORK   8192
#define FUZZ_CORE_FLUSH_WQES    256

/*
 * An upper bound on the DMA calls one bottom half (vrnic_core_run) or one
 * received frame (vrnic_core_eth_receive) may make, from the budgets the
 * core documents (Documentation/fuzzing.rst derives it):
 *   x  DMA calls for one translated access of at most one path MTU
 *      (4 KiB): 2 page pieces, each after a walk of up to 3 table levels;
 *   p  one packet handled or built: the WQE (x), up to max_sge SGEs of
 *      payload (x each, and 2 more for the pieces), a CQE post (doorbell
 *      record, body, info: 3 x), an EQE and an AEQE (2 each);
 *   f  one WQE flushed: its header (x), a CQE post (3 x), EQE and AEQE;
 *   one QP's turn in the queue bottom half: 64 TX packets and 64
 *      responses (p each), a flush round (at most 256 WQEs, f each),
 *      doubled for the timer work before it (retransmissions, errors);
 *   a queue bottom half: 64 loopback frames (p each), then QPs until
 *      VRNIC_QUEUES_WORK was spent, plus the turn of the QP that crossed
 *      it, then one EQE per CQ;
 *   an admin bottom half: a queue run, then commands until VRNIC_AQ_WORK
 *      was spent, plus the command that crossed it: at most a flush of
 *      both queues (MODIFY_QP to ERR), a RESIZE_CQ copy (3 x per CQE) or
 *      a QUERY_MR walk (500 x);
 *   a received frame: one packet plus the 64 responses it may drain.
 */
uint64_t fuzz_dma_bound(const VrnicConfig *c)
{
    const uint64_t x = 2 * (1 + 3);
    const uint64_t p = x + (c->max_sge + 2) * x + 3 * x + 2 + 2;
    const uint64_t f = x + 3 * x + 2 + 2;
    uint64_t flush = MIN(FUZZ_CORE_FLUSH_WQES, 2ull * c->max_qp_wr) * f;
    uint64_t turn = 2 * (64 * p + 64 * p + flush);
    uint64_t queues = 64 * p + FUZZ_CORE_QUEUES_WORK + turn + 2 * c->max_cq;
    uint64_t cmd = MAX(2ull * c->max_qp_wr * f,
                       MAX(3 * x * c->max_cqe, 500 * x));

    return MAX(queues + FUZZ_CORE_AQ_WORK + cmd, p + 64 * p);
}

/* ---- RAM and the handed-out map --------------------------------------- */

static bool fuzz_overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    /* [a, a + alen) and [b, b + blen), without forming either end. */
    return a < b ? b - a < alen : a - b < blen;
}

bool fuzz_in_ram(const FuzzBus *b, uint64_t gpa, uint64_t len)
{
    return gpa >= FUZZ_RAM_BASE && len <= b->ram_size &&
           gpa - FUZZ_RAM_BASE <= b->ram_size - len;
}

static void fuzz_mark_dirty(FuzzBus *b, uint64_t off, uint64_t len)
{
    if (!len) {
        return;
    }
    for (uint64_t pg = off >> FUZZ_PAGE_SHIFT;
         pg <= (off + len - 1) >> FUZZ_PAGE_SHIFT; pg++) {
        b->dirty[pg] = 1;
    }
}

void *fuzz_ptr(FuzzBus *b, uint64_t gpa, uint64_t len)
{
    if (!fuzz_in_ram(b, gpa, len)) {
        fuzz_fail(b, "harness: 0x%" PRIx64 "+%" PRIu64 " is not RAM", gpa,
                  len);
    }
    fuzz_mark_dirty(b, gpa - FUZZ_RAM_BASE, len);
    return b->ram + (gpa - FUZZ_RAM_BASE);
}

/* [gpa, gpa + len) handed to the device (1) or taken back (0). */
static void fuzz_set_handed(FuzzBus *b, uint64_t gpa, uint64_t len,
                            uint8_t handed)
{
    uint64_t off;

    if (!len) {
        return;
    }
    if (!fuzz_in_ram(b, gpa, len)) {
        fuzz_fail(b, "harness: %s 0x%" PRIx64 " outside RAM",
                  handed ? "hand" : "unhand", gpa);
    }
    off = gpa - FUZZ_RAM_BASE;
    memset(b->handed + (off >> FUZZ_GRANULE_SHIFT), handed,
           ((off + len - 1) >> FUZZ_GRANULE_SHIFT) -
           (off >> FUZZ_GRANULE_SHIFT) + 1);
}

void fuzz_hand(FuzzBus *b, uint64_t gpa, uint64_t len)
{
    fuzz_set_handed(b, gpa, len, 1);
}

void fuzz_unhand(FuzzBus *b, uint64_t gpa, uint64_t len)
{
    fuzz_set_handed(b, gpa, len, 0);
}

void fuzz_hand_all(FuzzBus *b)
{
    memset(b->handed, 1, b->ram_size >> FUZZ_GRANULE_SHIFT);
}

uint64_t fuzz_alloc(FuzzBus *b, uint64_t size, uint64_t align)
{
    uint64_t off = (b->next_alloc + align - 1) & ~(align - 1);
    /* A granule of canary below fuzz_alloc_top's allocations too. */
    uint64_t end = b->top - (1u << FUZZ_GRANULE_SHIFT);

    if (!size || off > end || size > end - off) {
        return 0;
    }
    /* At least one granule of canary after every allocation. */
    b->next_alloc = off + size + (1u << FUZZ_GRANULE_SHIFT);
    fuzz_hand(b, FUZZ_RAM_BASE + off, size);
    memset(fuzz_ptr(b, FUZZ_RAM_BASE + off, size), 0, size);
    return FUZZ_RAM_BASE + off;
}

uint64_t fuzz_alloc_top(FuzzBus *b, uint64_t size)
{
    if (!size || size & ((1u << FUZZ_PAGE_SHIFT) - 1) || size > b->top ||
        b->top - size < b->next_alloc + (1u << FUZZ_GRANULE_SHIFT)) {
        return 0;
    }
    b->top -= size;
    fuzz_hand(b, FUZZ_RAM_BASE + b->top, size);
    memset(fuzz_ptr(b, FUZZ_RAM_BASE + b->top, size), 0, size);
    return FUZZ_RAM_BASE + b->top;
}

static bool fuzz_forbidden(uint64_t v)
{
    return (v >= FUZZ_RAM_BASE - FUZZ_ZONE_MARGIN && v < FUZZ_RAM_BASE) ||
           (v >= FUZZ_CANARY_HI - FUZZ_ZONE_MARGIN &&
            v < FUZZ_CANARY_HI + FUZZ_CANARY_LEN);
}

uint64_t fuzz_sanitize_addr(uint64_t v)
{
    return fuzz_forbidden(v) ? v ^ (1ull << 62) : v;
}

void fuzz_write_sanitized(FuzzBus *b, uint64_t gpa, const void *data,
                          uint64_t len)
{
    uint8_t *ram;
    uint64_t off, lo, hi;
    bool again = true;

    if (!len) {
        return;
    }
    memcpy(fuzz_ptr(b, gpa, len), data, len);
    ram = b->ram;
    off = gpa - FUZZ_RAM_BASE;
    lo = off >= 7 ? off - 7 : 0;
    hi = MIN(off + len, b->ram_size - 7);
    /*
     * A fix sets bit 62 in a window's top byte, which makes no window
     * that overlaps it forbidden; loop anyway, it is cheap.
     */
    while (again) {
        again = false;
        for (uint64_t w = lo; w < hi; w++) {
            uint64_t v;

            memcpy(&v, ram + w, 8);
            v = le64toh(v);
            if (fuzz_forbidden(v)) {
                v = htole64(fuzz_sanitize_addr(v));
                memcpy(ram + w, &v, 8);
                fuzz_mark_dirty(b, w, 8);
                again = true;
            }
        }
    }
}

/* ---- VrnicCoreOps ----------------------------------------------------- */

static void fuzz_check_host_buf(FuzzBus *b, const void *buf, uint64_t len,
                                const char *what)
{
#ifdef FUZZ_HAVE_ASAN
    /*
     * The core's buffer must hold len bytes even when the bus refuses
     * the transfer (then no memcpy would have shown an overflow).
     */
    if (len && __asan_region_is_poisoned((void *)buf, len)) {
        fuzz_fail(b, "%s of %" PRIu64 " bytes with a host buffer that is "
                  "smaller", what, len);
    }
#endif
}

static bool fuzz_dma(FuzzBus *b, uint64_t addr, void *buf, uint64_t len,
                     bool write)
{
    const char *what = write ? "DMA write" : "DMA read";
    uint64_t off, g0, g1;

    b->ctx_dma++;
    if (!b->ctx) {
        /*
         * Timers, wire_sent, link changes and resets only record and
         * kick; DMA belongs in bottom halves and the receive path.
         */
        fuzz_fail(b, "%s 0x%" PRIx64 "+%" PRIu64 " outside a bottom half "
                  "or receive", what, addr, len);
    }
    if (b->in_mmio) {
        fuzz_fail(b, "%s 0x%" PRIx64 "+%" PRIu64 " from an MMIO handler",
                  what, addr, len);
    }
    if (b->ctx_dma > b->dma_bound) {
        fuzz_fail(b, "more than %" PRIu64 " DMA calls in one context",
                  b->dma_bound);
    }
    if (b->ctx_dma > b->max_ctx_dma) {
        b->max_ctx_dma = b->ctx_dma;
        if (b->ctx_dma > fuzz_stats_max_dma) {
            fuzz_stats_max_dma = b->ctx_dma;
            fuzz_stats_max_ctx = b->ctx;
        }
    }
    fuzz_check_host_buf(b, buf, len, what);
    if (!len) {
        return true;
    }
    if (fuzz_overlaps(addr, len, FUZZ_CANARY_LO, FUZZ_CANARY_LEN) ||
        fuzz_overlaps(addr, len, FUZZ_CANARY_HI, FUZZ_CANARY_LEN)) {
        fuzz_fail(b, "%s 0x%" PRIx64 "+%" PRIu64 " touches a canary next "
                  "to RAM", what, addr, len);
    }
    if (addr + len - 1 < addr || !fuzz_in_ram(b, addr, len)) {
        /*
         * Unassigned memory: the transfer fails. QEMU's memory core
         * fills a failed read's buffer (with zeros), so do that too.
         */
        if (!write) {
            memset(buf, 0, len);
        }
        return false;
    }
    off = addr - FUZZ_RAM_BASE;
    g0 = off >> FUZZ_GRANULE_SHIFT;
    g1 = (off + len - 1) >> FUZZ_GRANULE_SHIFT;
    for (uint64_t g = g0; g <= g1; g++) {
        if (!b->handed[g]) {
            fuzz_fail(b, "%s 0x%" PRIx64 "+%" PRIu64 " reaches RAM the "
                      "harness never handed to the device (at 0x%" PRIx64 ")",
                      what, addr, len,
                      FUZZ_RAM_BASE + (g << FUZZ_GRANULE_SHIFT));
        }
    }
    if (write) {
        memcpy(b->ram + off, buf, len);
        fuzz_mark_dirty(b, off, len);
    } else {
        memcpy(buf, b->ram + off, len);
    }
    return true;
}

static bool fuzz_dma_read(void *opaque, uint64_t addr, void *buf,
                          uint64_t len)
{
    return fuzz_dma(opaque, addr, buf, len, false);
}

static bool fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
                           uint64_t len)
{
    return fuzz_dma(opaque, addr, (void *)buf, len, true);
}

static void fuzz_irq(void *opaque, unsigned vector)
{
    FuzzBus *b = opaque;

    /* msix_notify() asserts on this. */
    if (vector >= vrnic_total_vectors(&b->cfg)) {
        fuzz_fail(b, "MSI-X vector %u out of range (%u vectors)", vector,
                  vrnic_total_vectors(&b->cfg));
    }
    b->irqs[vector]++;
}

static void fuzz_kick(void *opaque, VrnicWork w)
{
    FuzzBus *b = opaque;

    if ((unsigned)w >= VRNIC_WORK__MAX) {
        fuzz_fail(b, "kick of unknown work %d", (int)w);
    }
    b->pending[w] = true;
}

static FuzzFrame *fuzz_frame_new(const uint8_t *frame, size_t len)
{
    FuzzFrame *fr = malloc(sizeof(*fr) + len);

    if (!fr) {
        abort();
    }
    fr->next = NULL;
    fr->len = len;
    memcpy(fr->data, frame, len);
    return fr;
}

static void fuzz_fifo_push(FuzzFifo *q, FuzzFrame *fr)
{
    if (!q->head) {
        q->tail = &q->head;
    }
    *q->tail = fr;
    q->tail = &fr->next;
    q->len++;
}

static FuzzFrame *fuzz_fifo_pop(FuzzFifo *q)
{
    FuzzFrame *fr = q->head;

    if (fr) {
        q->head = fr->next;
        q->len--;
    }
    return fr;
}

void fuzz_fifo_clear(FuzzFifo *q)
{
    FuzzFrame *fr;

    while ((fr = fuzz_fifo_pop(q))) {
        free(fr);
    }
}

/*
 * Inboxes are bounded as a real switch's buffer is: a frame past it is
 * lost (RC recovers, UD/UC lose it).
 */
#define FUZZ_INBOX_MAX 512

void fuzz_wire_put(FuzzBus *b, const uint8_t *frame, size_t len)
{
    if (b->inbox.len >= FUZZ_INBOX_MAX) {
        return;
    }
    fuzz_fifo_push(&b->inbox, fuzz_frame_new(frame, len));
}

static void fuzz_deliver_out(FuzzBus *b, const uint8_t *frame, size_t len)
{
    if (b->peer) {
        fuzz_wire_put(b->peer, frame, len);
    } else if (b->sink) {
        b->sink(b, frame, len);
    }
}

static bool fuzz_eth_send(void *opaque, const uint8_t *frame, size_t len)
{
    FuzzBus *b = opaque;

    if (len < VRNIC_ETH_MIN_FRAME || len > VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD) {
        fuzz_fail(b, "sent a frame of %zu bytes", len);
    }
    fuzz_check_host_buf(b, frame, len, "eth_send");
    if (b->check_frames) {
        VrnicPkt pkt;
        VrnicPktErr err = vrnic_pkt_parse(frame, len, &pkt);

        /* The device's own RoCEv2 output always passes its own parser. */
        if (err != VRNIC_PKT_OK) {
            fuzz_fail(b, "sent a frame its own codec refuses: %s (%zu bytes)",
                      vrnic_pkt_err_str(err), len);
        }
    }
    b->frames_sent++;
    if (b->busy) {
        b->busy--;
        fuzz_fifo_push(&b->queued, fuzz_frame_new(frame, len));
        /*
         * The core stops sending at VRNIC_WIRE_MAX_QUEUED. Once the fault
         * injector ran, what its slots hold (2 * VRNIC_FAULT_MAX_DEPTH,
         * vrnic_fault.c) still goes out when released - by design, even
         * after it was switched off - and a duplicate may leave right
         * after the frame that filled the queue.
         */
        unsigned cap = VRNIC_WIRE_MAX_QUEUED +
                       (b->faults_used ? 1 + 2 * VRNIC_FAULT_MAX_DEPTH : 0);

        if (b->queued.len > cap) {
            fuzz_fail(b, "%u frames queued on a busy backend (at most %u)",
                      b->queued.len, cap);
        }
        return false;
    }
    fuzz_deliver_out(b, frame, len);
    return true;
}

static int64_t fuzz_clock_ns(void *opaque)
{
    return ((FuzzBus *)opaque)->now_ns;
}

static void fuzz_timer_mod(void *opaque, int64_t deadline_ns)
{
    ((FuzzBus *)opaque)->timer_due = deadline_ns;
}

/* Persistence is a host concern: nothing in the fuzzed memory changes. */
static void fuzz_dma_persist(void *opaque)
{
}

/* A fixed wall clock: timestamps vary with nothing the input controls. */
static int64_t fuzz_wallclock_ns(void *opaque)
{
    return ((FuzzBus *)opaque)->now_ns + 1700000000000000000ll;
}

static const VrnicCoreOps fuzz_ops = {
    .dma_read = fuzz_dma_read,
    .dma_write = fuzz_dma_write,
    .dma_persist = fuzz_dma_persist,
    .irq = fuzz_irq,
    .kick = fuzz_kick,
    .eth_send = fuzz_eth_send,
    .clock_ns = fuzz_clock_ns,
    .wallclock_ns = fuzz_wallclock_ns,
    .timer_mod = fuzz_timer_mod,
};

/* ---- lifetime ----------------------------------------------------------- */

FuzzBus *fuzz_bus_new(const char *name, const VrnicConfig *cfg,
                      uint64_t ram_size)
{
    FuzzBus *b = calloc(1, sizeof(*b));
    const char *bad = vrnic_core_check_config(cfg);

    if (!b || bad || ram_size & ((1u << FUZZ_PAGE_SHIFT) - 1)) {
        fprintf(stderr, "fuzz_bus_new: %s\n", bad ? bad : "no memory");
        abort();
    }
    b->name = name;
    b->cfg = *cfg;
    b->ram_size = ram_size;
    b->ram = calloc(1, ram_size);
    b->handed = calloc(1, ram_size >> FUZZ_GRANULE_SHIFT);
    b->dirty = calloc(1, ram_size >> FUZZ_PAGE_SHIFT);
    if (cfg->dm_size) {
        b->devmem = calloc(1, cfg->dm_size);
    }
    if (!b->ram || !b->handed || !b->dirty || (cfg->dm_size && !b->devmem)) {
        abort();
    }
    b->dma_bound = fuzz_dma_bound(cfg);
    return b;
}

void fuzz_bus_free(FuzzBus *b)
{
    if (b->started) {
        fuzz_bus_stop(b);
        vrnic_core_reset(&b->core);
        vrnic_core_uninit(&b->core);
    }
    free(b->ram);
    free(b->handed);
    free(b->dirty);
    free(b->devmem);
    free(b);
}

void fuzz_link(FuzzBus *a, FuzzBus *b)
{
    a->peer = b;
    b->peer = a;
}

/*
 * The core is created once per bus and reset between inputs: a fresh
 * vrnic_core_init() per input costs more than the input itself (the
 * fault injector's and loopback's frame slots are over 1 MiB of new,
 * page-faulting memory each time). The reset is the device's own one
 * path (DEV_CTRL, PCI reset); what it keeps by design is put back here:
 * the fault configuration (a -device property), the counters (they count
 * from device creation) and the IPv4 identification sequence.
 */
void fuzz_bus_start(FuzzBus *b)
{
    static const VrnicFaultCfg no_faults;

    b->busy = 0;
    if (b->started) {
        fuzz_wire_release_n(b, UINT_MAX);
    }
    fuzz_fifo_clear(&b->inbox);
    fuzz_fifo_clear(&b->queued);
    for (uint64_t pg = 0; pg < b->ram_size >> FUZZ_PAGE_SHIFT; pg++) {
        if (b->dirty[pg]) {
            memset(b->ram + (pg << FUZZ_PAGE_SHIFT), 0,
                   1u << FUZZ_PAGE_SHIFT);
            b->dirty[pg] = 0;
        }
    }
    memset(b->handed, 0, b->ram_size >> FUZZ_GRANULE_SHIFT);
    b->next_alloc = 0;
    b->top = b->ram_size;
    b->in_mmio = false;
    b->ctx = NULL;
    b->ctx_dma = 0;
    b->check_frames = false;
    memset(b->irqs, 0, sizeof(b->irqs));
    b->frames_sent = 0;
    b->faults_used = false;
    b->now_ns = 0;
    b->timer_due = INT64_MAX;
    b->aq_pi = b->cmd_id = 0;
    if (!b->started) {
        vrnic_core_init(&b->core, &b->cfg, &fuzz_ops, b);
        if (b->devmem) {
            vrnic_core_set_devmem(&b->core, b->devmem);
        }
        b->started = true;
    } else {
        vrnic_core_reset(&b->core);
        vrnic_core_set_faults(&b->core, &no_faults);
        memset(&b->core.stats, 0, sizeof(b->core.stats));
        b->core.ip_id = 0;
        vrnic_core_set_link(&b->core, false);
    }
    memset(b->pending, 0, sizeof(b->pending));
    vrnic_core_set_link(&b->core, true);
    fuzz_settle(b);
}

void fuzz_bus_stop(FuzzBus *b)
{
    /*
     * Frames the netdev holds are sent now, so the core's count of them
     * goes back to 0.
     */
    b->busy = 0;
    fuzz_wire_release_n(b, UINT_MAX);
    fuzz_fifo_clear(&b->inbox);
    /*
     * The reset frees what the input made the core allocate (transport
     * state, held frames): each execution then frees all it allocated,
     * which libFuzzer checks (-detect_leaks), so a leak in the core shows
     * up as one instead of costing a leak search on every execution.
     */
    vrnic_core_reset(&b->core);
}

/* ---- MMIO, work, the wire ------------------------------------------------ */

void fuzz_ctx_enter(FuzzBus *b, const char *ctx)
{
    b->ctx = ctx;
    b->ctx_dma = 0;
}

void fuzz_ctx_leave(FuzzBus *b)
{
    if (b->ctx_dma) {
        unsigned k = 63 - __builtin_clzll(b->ctx_dma);

        if (fuzz_work_counters[k] < 255) {
            fuzz_work_counters[k]++;
        }
    }
    b->ctx = NULL;
}

void fuzz_reg_write(FuzzBus *b, uint64_t reg, uint32_t val)
{
    b->in_mmio = true;
    vrnic_core_reg_write(&b->core, reg, val);
    b->in_mmio = false;
}

uint32_t fuzz_reg_read(FuzzBus *b, uint64_t reg)
{
    uint32_t v;

    b->in_mmio = true;
    v = vrnic_core_reg_read(&b->core, reg);
    b->in_mmio = false;
    return v;
}

void fuzz_reg_write64(FuzzBus *b, uint64_t reg_lo, uint64_t val)
{
    fuzz_reg_write(b, reg_lo, (uint32_t)val);
    fuzz_reg_write(b, reg_lo + 4, val >> 32);
}

void fuzz_db(FuzzBus *b, uint32_t page, uint32_t off, uint32_t qn,
             uint16_t idx)
{
    b->in_mmio = true;
    vrnic_core_db_write(&b->core, (uint64_t)page * VRNIC_DB_PAGE_SIZE + off,
                        VRNIC_FIELD_PREP(VRNIC_DB_INDEX_MASK, idx) |
                        (qn & VRNIC_DB_QN_MASK));
    b->in_mmio = false;
}

static const char *const fuzz_work_name[VRNIC_WORK__MAX] = {
    [VRNIC_WORK_ADMIN] = "admin bottom half",
    [VRNIC_WORK_ETH_TX] = "eth-tx bottom half",
    [VRNIC_WORK_ETH_RX] = "eth-rx bottom half",
    [VRNIC_WORK_LINK] = "link bottom half",
    [VRNIC_WORK_QUEUES] = "queue bottom half",
};

void fuzz_run(FuzzBus *b, VrnicWork w)
{
    fuzz_ctx_enter(b, fuzz_work_name[w] ? fuzz_work_name[w] : "bottom half");
    vrnic_core_run(&b->core, w);
    fuzz_ctx_leave(b);
}

size_t fuzz_receive(FuzzBus *b, const uint8_t *frame, size_t len)
{
    fuzz_ctx_enter(b, "eth receive");
    vrnic_core_eth_receive(&b->core, frame, len);
    fuzz_ctx_leave(b);
    return len;
}

bool fuzz_run_work(FuzzBus *b)
{
    bool any = false;

    for (int w = 0; w < VRNIC_WORK__MAX; w++) {
        if (b->pending[w]) {
            b->pending[w] = false;
            fuzz_run(b, w);
            any = true;
        }
    }
    return any;
}

/* Deliver at most `max` frames from the inbox. */
static bool fuzz_deliver(FuzzBus *b, unsigned max)
{
    bool any = false;
    FuzzFrame *fr;

    while (max-- && (fr = fuzz_fifo_pop(&b->inbox))) {
        fuzz_receive(b, fr->data, fr->len);
        free(fr);
        any = true;
    }
    return any;
}

bool fuzz_settle_n(FuzzBus *b, unsigned rounds)
{
    while (rounds--) {
        bool any = fuzz_run_work(b);

        /*
         * A few frames per round, so that work and frames interleave as
         * they would on a host running both devices.
         */
        any |= fuzz_deliver(b, 8);
        if (b->peer) {
            any |= fuzz_run_work(b->peer);
            any |= fuzz_deliver(b->peer, 8);
        }
        if (!any) {
            return true;
        }
    }
    return false;
}

void fuzz_settle(FuzzBus *b)
{
    fuzz_settle_n(b, 4096);
}

void fuzz_advance_clock(FuzzBus *b, int64_t ns)
{
    b->now_ns += ns;
    if (b->peer) {
        b->peer->now_ns = b->now_ns;
    }
}

bool fuzz_fire_timer(FuzzBus *b)
{
    FuzzBus *p = b->peer;
    int64_t due = b->timer_due;

    if (p && p->timer_due < due) {
        due = p->timer_due;
    }
    if (due == INT64_MAX) {
        return false;
    }
    fuzz_advance_clock(b, due > b->now_ns ? due - b->now_ns : 0);
    if (b->timer_due <= b->now_ns) {
        b->timer_due = INT64_MAX;
        vrnic_core_timer(&b->core);
    }
    if (p && p->timer_due <= p->now_ns) {
        p->timer_due = INT64_MAX;
        vrnic_core_timer(&p->core);
    }
    fuzz_settle(b);
    return true;
}

bool fuzz_wire_release(FuzzBus *b)
{
    FuzzFrame *fr = fuzz_fifo_pop(&b->queued);

    if (!fr) {
        return false;
    }
    fuzz_deliver_out(b, fr->data, fr->len);
    free(fr);
    vrnic_core_wire_sent(&b->core);
    return true;
}

void fuzz_set_faults(FuzzBus *b, const VrnicFaultCfg *cfg)
{
    b->faults_used = true;
    vrnic_core_set_faults(&b->core, cfg);
}

unsigned fuzz_wire_release_n(FuzzBus *b, unsigned n)
{
    unsigned done = 0;

    while (done < n && fuzz_wire_release(b)) {
        done++;
    }
    return done;
}

/* ---- admin queue -------------------------------------------------------- */

void fuzz_aq_enable(FuzzBus *b, unsigned log_depth)
{
    b->aq_log = log_depth;
    b->aq_sq = fuzz_alloc(b, VRNIC_AQ_CMD_SIZE << log_depth, 4096);
    b->aq_cq = fuzz_alloc(b, VRNIC_AQ_CQE_SIZE << log_depth, 4096);
    fuzz_reg_write64(b, VRNIC_REG_AQ_SQ_BASE_LO, b->aq_sq);
    fuzz_reg_write64(b, VRNIC_REG_AQ_CQ_BASE_LO, b->aq_cq);
    fuzz_reg_write(b, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE |
                   VRNIC_RING_CFG_IRQ_EN | log_depth);
    b->aq_pi = 0;
}

void fuzz_aeq_enable(FuzzBus *b, unsigned log_depth)
{
    b->aeq_log = log_depth;
    b->aeq = fuzz_alloc(b, VRNIC_AEQE_SIZE << log_depth, 4096);
    fuzz_reg_write64(b, VRNIC_REG_AEQ_BASE_LO, b->aeq);
    fuzz_reg_write(b, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | log_depth);
}

unsigned fuzz_aq_post(FuzzBus *b, const void *cmd)
{
    uint32_t slot = b->aq_pi & ((1u << b->aq_log) - 1);
    struct vrnic_aq_hdr *hdr;

    hdr = fuzz_ptr(b, b->aq_sq + slot * VRNIC_AQ_CMD_SIZE, VRNIC_AQ_CMD_SIZE);
    memcpy(hdr, cmd, VRNIC_AQ_CMD_SIZE);
    hdr->cmd_id = htole16(++b->cmd_id);
    b->aq_pi++;
    return b->aq_pi - 1;
}

void fuzz_aq_flush(FuzzBus *b)
{
    fuzz_reg_write(b, VRNIC_REG_AQ_PI, b->aq_pi);
    fuzz_settle(b);
}

uint8_t fuzz_aq_status(FuzzBus *b, unsigned idx, uint64_t *result)
{
    uint32_t slot = idx & ((1u << b->aq_log) - 1);
    struct vrnic_aq_hdr *hdr;
    struct vrnic_aq_cqe *cqe;

    hdr = fuzz_ptr(b, b->aq_sq + slot * VRNIC_AQ_CMD_SIZE, VRNIC_AQ_CMD_SIZE);
    cqe = fuzz_ptr(b, b->aq_cq + slot * VRNIC_AQ_CQE_SIZE, VRNIC_AQ_CQE_SIZE);
    if (cqe->cmd_id != hdr->cmd_id ||
        (le32toh(cqe->owner) & VRNIC_OWNER_PHASE) !=
        (((idx >> b->aq_log) & 1) ^ 1)) {
        return 0xff;    /* not completed (FATAL): the caller sees a failure */
    }
    if (result) {
        *result = le64toh(cqe->result);
    }
    return cqe->status;
}

uint8_t fuzz_aq_exec(FuzzBus *b, const void *cmd, uint64_t *result)
{
    unsigned idx = fuzz_aq_post(b, cmd);

    fuzz_aq_flush(b);
    return fuzz_aq_status(b, idx, result);
}

/* ---- frames ------------------------------------------------------------- */

void fuzz_frame_fix(uint8_t *frame, size_t len)
{
    size_t ip_off, ip_len;
    uint8_t *ip;

    if (!vrnic_icrc_locate(frame, len, &ip_off, &ip_len)) {
        return;
    }
    ip = frame + ip_off;
    if ((ip[0] >> 4) == 4) {
        size_t hlen = (ip[0] & 0xf) * 4;
        uint32_t sum = 0;

        if (hlen < 20 || hlen + 8 > ip_len) {
            return;
        }
        /* RFC 1071 over the header with the checksum field zeroed. */
        ip[10] = ip[11] = 0;
        for (size_t i = 0; i < hlen; i += 2) {
            sum += (uint32_t)ip[i] << 8 | ip[i + 1];
        }
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10] = ~sum >> 8;
        ip[11] = ~sum;
        ip[hlen + 6] = ip[hlen + 7] = 0;    /* UDP checksum: none */
    } else if (ip_len >= 48) {
        ip[46] = ip[47] = 0;
    }
    vrnic_icrc_set(ip, ip_len);
}

void fuzz_fill_pattern(uint8_t *buf, size_t from, size_t len)
{
    for (size_t i = from; i < len; i++) {
        buf[i] = buf[i % from] + i;
    }
}
