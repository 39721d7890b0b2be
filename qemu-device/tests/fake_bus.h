/*
 * A fake PCI function for host unit tests of the vrnic core: a window of
 * "guest memory", an MSI-X counter per vector, deferred work run on demand
 * (as QEMU's bottom halves would) and a log of transmitted frames.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_FAKE_BUS_H
#define VRNIC_FAKE_BUS_H

#include "qemu/osdep.h"
#include "../vrnic_core.h"

/* Guest memory is [FAKE_MEM_BASE, FAKE_MEM_BASE + FAKE_MEM_SIZE). */
#define FAKE_MEM_BASE   0x10000000ull
#define FAKE_MEM_SIZE   (8u << 20)
#define FAKE_UNMAPPED   0x40000000ull

/* Fixed ring locations used by the helpers. */
#define FAKE_AQ_SQ      (FAKE_MEM_BASE + 0x00000)
#define FAKE_AQ_CQ      (FAKE_MEM_BASE + 0x10000)
#define FAKE_AEQ        (FAKE_MEM_BASE + 0x20000)
#define FAKE_TX_RING    (FAKE_MEM_BASE + 0x30000)
#define FAKE_RX_RING    (FAKE_MEM_BASE + 0x40000)
#define FAKE_RESP       (FAKE_MEM_BASE + 0x50000)
#define FAKE_BUF        (FAKE_MEM_BASE + 0x60000)

/* Object tests: rings, tables and buffers. */
#define FAKE_OBJ_MEM    (FAKE_MEM_BASE + 0x100000)  /* 7 MiB for tests */

#define FAKE_MAX_FRAMES 64
#define FAKE_MAX_ALIASES 16

typedef struct FakeFrame {
    struct FakeFrame *next;
    size_t len;
    uint8_t data[];
} FakeFrame;

typedef struct FakeBus {
    VrnicCore core;
    uint8_t mem[FAKE_MEM_SIZE];
    unsigned irqs[VRNIC_VEC_COMP_FIRST + VRNIC_MAX_COMP_VECTORS];
    bool pending[VRNIC_WORK__MAX];
    unsigned nframes;
    size_t frame_len[FAKE_MAX_FRAMES];
    uint8_t frames[FAKE_MAX_FRAMES][VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD];
    /*
     * Sparse "guest memory" far from the window: [gpa, gpa + len) is backed
     * by mem at offset backing - FAKE_MEM_BASE. Lets translation tests use
     * 1 GiB-aligned pages and huge MRs without 1 GiB of host memory.
     */
    struct { uint64_t gpa, len, backing; } alias[FAKE_MAX_ALIASES];
    unsigned nalias;
    /*
     * Another device's registers at [mmio_gpa, mmio_gpa + mmio_len) - not
     * RAM. The glue restricts DMA to RAM, so a transfer there fails
     * (counted in mmio_refused); with mmio_reachable the fake acts like a
     * bus without that rule and runs mmio_write (a bridge's secondary bus
     * reset, say) in the middle of the core's DMA.
     */
    uint64_t mmio_gpa, mmio_len;
    bool mmio_reachable;
    void (*mmio_write)(struct FakeBus *f, uint64_t addr);
    unsigned mmio_refused, mmio_writes;
    uint64_t obj_next;  /* bump allocator in [FAKE_OBJ_MEM, window end) */
    /*
     * The scripted wire (fake_link): frames this bus sends are queued for
     * the peer and delivered by fake_settle, in order, after the sender's
     * work ran - as a real network would, never re-entering the core. The
     * hook sees every frame first and may change it or drop it (false).
     */
    struct FakeBus *peer;
    struct FakeFrame *inbox, **inbox_tail;
    bool (*wire_hook)(struct FakeBus *from, uint8_t *frame, size_t *len,
                      void *arg);
    void *hook_arg;
    unsigned wire_frames;   /* frames that crossed the wire to this bus */
    /*
     * A backend that cannot send (a peer that stopped reading): eth_send
     * answers "queued" and counts, until fake_wire_drain sends them all.
     */
    bool wire_stalled;
    unsigned wire_queued;
    unsigned persists;      /* dma_persist calls (FLUSH, persistence) */
    /* The device clock: it only moves in fake_fire_timer (instant work). */
    int64_t now_ns;
    int64_t wall_base_ns;   /* the wall clock at now_ns 0 (timestamp CQEs) */
    int64_t timer_due;      /* INT64_MAX: idle */
    /*
     * Device memory (BAR5): cfg->dm_size bytes, allocated by fake_new when
     * that is not 0 (NULL otherwise) and handed to vrnic_core_set_devmem.
     */
    uint8_t *devmem;
    /* The most DMA transfers one vrnic_core_run call made (work budgets). */
    uint64_t max_run_dma;
    uint16_t aq_pi;     /* helper's admin producer index */
    uint16_t cmd_id;
} FakeBus;

VrnicConfig fake_default_config(void);
FakeBus *fake_new(const VrnicConfig *cfg);
void fake_free(FakeBus *f);
/* Run deferred work until none is pending, as the main loop would. */
void fake_settle(FakeBus *f);

void *fake_ptr(FakeBus *f, uint64_t addr);
void fake_wr(FakeBus *f, uint64_t reg, uint32_t val);
uint32_t fake_rd(FakeBus *f, uint64_t reg);
void fake_wr64(FakeBus *f, uint64_t reg_lo, uint64_t val);

/* Program and enable the admin queue with 2^log_depth entries, IRQ_EN on. */
void fake_aq_enable(FakeBus *f, unsigned log_depth);
/* Map [gpa, gpa + len) onto window memory at backing (see FakeBus.alias). */
void fake_alias(FakeBus *f, uint64_t gpa, uint64_t len, uint64_t backing);
/* Submit one raw 128-byte command, run the device, return its CQE slot. */
struct vrnic_aq_cqe *fake_aq_exec(FakeBus *f, void *cmd);
void fake_aeq_enable(FakeBus *f, unsigned log_depth);
/* Join two buses by a wire (each one's eth_send reaches the other). */
void fake_link(FakeBus *a, FakeBus *b);
/*
 * Move the clock (of f and its peer: one clock for both ends of a wire) to
 * the earliest armed device timer, run it and settle. False when no timer
 * is armed.
 */
bool fake_fire_timer(FakeBus *f);
/* The stalled backend sends what it queued (vrnic_core_wire_sent each). */
void fake_wire_drain(FakeBus *f);
/* Deliver a frame to f as if it came off the wire (queued). */
void fake_wire_put(FakeBus *f, const uint8_t *frame, size_t len);

#endif
