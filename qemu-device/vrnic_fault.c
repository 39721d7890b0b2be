/*
 * vrnic fault injection: a bad wire on demand. Every RoCEv2 frame the port
 * puts on its wire (direction TX) or routes from it to the RDMA engine
 * (RX) passes the injector when its direction is enabled; frames on the
 * loopback path and Ethernet (non-RoCE) frames never do. Per frame, in
 * this order, each with its own rate in parts per million:
 *   drop     the frame is lost;
 *   corrupt  one bit is flipped at a random position the ICRC covers and
 *            does not mask: BTH (minus its masked resv8a byte) through the
 *            payload, never the ICRC itself, so the receiver must see an
 *            ICRC error (MAC/IP/UDP bits and masked fields are never
 *            flipped);
 *   dup      the frame is delivered twice (the copy right after it);
 *   reorder  the frame is held back until reorder_depth later frames of
 *            the same direction went past (or 1 ms, whichever is first);
 * and delay_us holds every frame that long (FIFO). Held frames are
 * released from the device timer (vrnic_core_timer). A random sequence
 * comes from seed, so a run with the same seed, traffic and timing
 * injects the same faults; setting the seed restarts the sequence.
 *
 * What was injected is counted in the port counters (FAULT_*). A device
 * reset discards held frames.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_icrc.h"
#include "vrnic_pkt.h"

#define VRNIC_FAULT_SLOTS       (2 * VRNIC_FAULT_MAX_DEPTH)
#define VRNIC_FAULT_FRAME       (VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD)
#define VRNIC_FAULT_HOLD_NS     1000000     /* reorder: at most 1 ms */

typedef struct VrnicFaultHeld {
    bool used;
    bool reorder;           /* held for reordering (else only delayed) */
    uint8_t dir;            /* VRNIC_FAULT_DIR_TX or _RX */
    uint32_t behind;        /* reorder: frames still to let past first */
    int64_t due;            /* release at the latest */
    uint64_t seq;           /* FIFO order among due frames */
    size_t len;
    uint8_t frame[VRNIC_FAULT_FRAME];
} VrnicFaultHeld;

struct VrnicFault {
    uint64_t rng;
    uint64_t seq;
    unsigned nheld;
    VrnicFaultHeld held[VRNIC_FAULT_SLOTS];
};

static uint64_t vrnic_fault_rand(struct VrnicFault *f)
{
    /* xorshift64*: small, fast, and enough for fault rates. */
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return f->rng * 0x2545F4914F6CDD1Dull;
}

static bool vrnic_fault_roll(struct VrnicFault *f, uint32_t ppm)
{
    return ppm && vrnic_fault_rand(f) % VRNIC_FAULT_PPM < ppm;
}

void vrnic_fault_init(VrnicCore *core)
{
    core->fault = g_new0(struct VrnicFault, 1);
    vrnic_fault_configure(core, &core->fault_cfg);
}

void vrnic_fault_uninit(VrnicCore *core)
{
    g_free(core->fault);
    core->fault = NULL;
}

void vrnic_fault_reset(VrnicCore *core)
{
    struct VrnicFault *f = core->fault;

    for (unsigned i = 0; i < VRNIC_FAULT_SLOTS; i++) {
        f->held[i].used = false;
    }
    f->nheld = 0;
}

void vrnic_fault_configure(VrnicCore *core, const VrnicFaultCfg *cfg)
{
    struct VrnicFault *f = core->fault;

    core->fault_cfg = *cfg;
    core->fault_cfg.reorder_depth = MAX(1, MIN(cfg->reorder_depth,
                                               VRNIC_FAULT_MAX_DEPTH));
    core->fault_cfg.delay_us = MIN(cfg->delay_us, VRNIC_FAULT_MAX_DELAY);
    /* xorshift must not start at 0. */
    f->rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ull;
    trace_vrnic_fault_config(cfg->drop_ppm, cfg->reorder_ppm,
                             core->fault_cfg.reorder_depth, cfg->dup_ppm,
                             cfg->corrupt_ppm, core->fault_cfg.delay_us,
                             cfg->seed, cfg->dir);
}

static void vrnic_fault_emit(VrnicCore *core, uint8_t dir, uint8_t *frame,
                             size_t len)
{
    if (dir == VRNIC_FAULT_DIR_TX) {
        vrnic_wire_send(core, frame, len);
    } else {
        vrnic_rx_frame(core, frame, len);
    }
}

/* Flip one bit the ICRC covers and does not mask (see the top comment). */
static void vrnic_fault_corrupt(struct VrnicFault *f, uint8_t *frame,
                                size_t len)
{
    size_t ip_off, ip_len, bth, end, pos;

    if (!vrnic_icrc_locate(frame, len, &ip_off, &ip_len)) {
        return;
    }
    bth = ip_off + 8 + ((frame[ip_off] >> 4) == 4 ?
                        (frame[ip_off] & 0xf) * 4u : 40u);
    end = ip_off + ip_len - VRNIC_ICRC_SIZE;
    if (end <= bth + 5) {
        return;
    }
    pos = bth + vrnic_fault_rand(f) % (end - bth - 1);
    if (pos >= bth + 4) {
        pos++;      /* skip BTH resv8a, masked in the ICRC */
    }
    frame[pos] ^= 1u << (vrnic_fault_rand(f) % 8);
}

static bool vrnic_fault_hold(VrnicCore *core, uint8_t dir,
                             const uint8_t *frame, size_t len,
                             uint32_t behind, int64_t due)
{
    struct VrnicFault *f = core->fault;

    if (len > VRNIC_FAULT_FRAME) {
        return false;
    }
    for (unsigned i = 0; i < VRNIC_FAULT_SLOTS; i++) {
        VrnicFaultHeld *h = &f->held[i];

        if (!h->used) {
            h->used = true;
            h->reorder = behind != 0;
            h->dir = dir;
            h->behind = behind;
            h->due = due;
            h->seq = f->seq++;
            h->len = len;
            memcpy(h->frame, frame, len);
            f->nheld++;
            vrnic_core_timer_arm(core, due);
            return true;
        }
    }
    return false;   /* all slots busy: the frame goes out unharmed */
}

/*
 * Release held frames: reorder countdowns that hit 0 in dir, or (dir 0)
 * every frame whose time has come, oldest first.
 */
static void vrnic_fault_release(VrnicCore *core, uint8_t dir, int64_t now)
{
    struct VrnicFault *f = core->fault;

    while (f->nheld) {
        VrnicFaultHeld *pick = NULL;

        for (unsigned i = 0; i < VRNIC_FAULT_SLOTS; i++) {
            VrnicFaultHeld *h = &f->held[i];
            bool ready = dir ? h->reorder && h->dir == dir &&
                               h->behind == 0 : h->due <= now;

            if (h->used && ready && (!pick || h->seq < pick->seq)) {
                pick = h;
            }
        }
        if (!pick) {
            return;
        }
        pick->used = false;
        f->nheld--;
        vrnic_fault_emit(core, pick->dir, pick->frame, pick->len);
    }
}

/* A frame of dir went past: reorder countdowns move. */
static void vrnic_fault_passed(VrnicCore *core, uint8_t dir)
{
    struct VrnicFault *f = core->fault;
    bool any = false;

    for (unsigned i = 0; i < VRNIC_FAULT_SLOTS && f->nheld; i++) {
        VrnicFaultHeld *h = &f->held[i];

        if (h->used && h->dir == dir && h->behind) {
            any |= --h->behind == 0;
        }
    }
    if (any) {
        vrnic_fault_release(core, dir, 0);
    }
}

/* Nothing to inject and nothing held back: frames pass untouched. */
static bool vrnic_fault_idle(const VrnicFaultCfg *c, const struct VrnicFault *f)
{
    return !(c->drop_ppm | c->reorder_ppm | c->dup_ppm | c->corrupt_ppm |
             c->delay_us) && !f->nheld;
}

bool vrnic_fault_passes(const VrnicCore *core, uint8_t dir, size_t len)
{
    return !(core->fault_cfg.dir & dir) ||
           vrnic_fault_idle(&core->fault_cfg, core->fault) ||
           len > VRNIC_FAULT_FRAME;
}

void vrnic_fault_frame(VrnicCore *core, uint8_t dir, const uint8_t *frame,
                       size_t len)
{
    const VrnicFaultCfg *c = &core->fault_cfg;
    struct VrnicFault *f = core->fault;
    uint64_t *st = core->stats.port;
    uint8_t buf[VRNIC_FAULT_FRAME] VRNIC_UNINITIALIZED;
    int64_t now;
    bool dup;

    if (vrnic_fault_passes(core, dir, len)) {
        vrnic_fault_emit(core, dir, (uint8_t *)frame, len);
        return;
    }
    if (vrnic_fault_roll(f, c->drop_ppm)) {
        st[VRNIC_PORT_STAT_FAULT_DROPS]++;
        trace_vrnic_fault(dir, "drop", len);
        return;
    }
    memcpy(buf, frame, len);
    if (vrnic_fault_roll(f, c->corrupt_ppm)) {
        vrnic_fault_corrupt(f, buf, len);
        st[VRNIC_PORT_STAT_FAULT_CORRUPTS]++;
        trace_vrnic_fault(dir, "corrupt", len);
    }
    dup = vrnic_fault_roll(f, c->dup_ppm);
    now = core->ops->clock_ns(core->opaque);
    if (vrnic_fault_roll(f, c->reorder_ppm) &&
        vrnic_fault_hold(core, dir, buf, len, c->reorder_depth,
                         now + MAX((int64_t)c->delay_us * 1000,
                                   VRNIC_FAULT_HOLD_NS))) {
        st[VRNIC_PORT_STAT_FAULT_REORDERS]++;
        trace_vrnic_fault(dir, "reorder", len);
    } else if (c->delay_us &&
               vrnic_fault_hold(core, dir, buf, len, 0,
                                now + (int64_t)c->delay_us * 1000)) {
        st[VRNIC_PORT_STAT_FAULT_DELAYS]++;
    } else {
        vrnic_fault_emit(core, dir, buf, len);
        vrnic_fault_passed(core, dir);
    }
    if (dup) {
        st[VRNIC_PORT_STAT_FAULT_DUPS]++;
        trace_vrnic_fault(dir, "duplicate", len);
        vrnic_fault_emit(core, dir, buf, len);
        vrnic_fault_passed(core, dir);
    }
}

void vrnic_fault_timer(VrnicCore *core, int64_t now)
{
    struct VrnicFault *f = core->fault;
    int64_t next = INT64_MAX;

    vrnic_fault_release(core, 0, now);
    for (unsigned i = 0; i < VRNIC_FAULT_SLOTS && f->nheld; i++) {
        if (f->held[i].used) {
            next = MIN(next, f->held[i].due);
        }
    }
    if (next != INT64_MAX) {
        vrnic_core_timer_arm(core, next);
    }
}
