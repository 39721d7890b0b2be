/*
 * vrnic: emulated RoCEv2 RDMA NIC, QEMU glue.
 *
 * QOM type, properties, PCI BARs, MSI-X, the netdev, bottom halves and the
 * optional IOThread. The device's behaviour is in vrnic_core.c and its
 * siblings; this file only forwards to them (the igb/igb_core split).
 *
 * Threads. The core is one state machine and every entry into it holds
 * VrnicState.lock. Without an IOThread everything runs in the main loop
 * under the BQL, as for any device. With -device vrnic,iothread=ID the
 * core's bottom halves and timer - the transport, the admin queue, the
 * Ethernet rings - run in that IOThread without the BQL; DMA then reaches
 * only RAM it can access directly (vrnic_dma_direct), which needs no BQL.
 * What does need it stays on the main loop and is handed over through
 * queues: received frames (rxq, from the netdev to the IOThread), frames
 * to send (txq, to the netdev) and MSI-X messages (irq_pending); doorbell
 * writes go the other way (db_mbox). MMIO handlers run with the BQL and
 * take the lock after it; the IOThread never takes the BQL, so the two
 * locks always nest the same way.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qemu/bitmap.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/queue.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "system/iothread.h"
#include "vrnic_core.h"
#include "trace.h"

#define TYPE_VRNIC "vrnic"
OBJECT_DECLARE_SIMPLE_TYPE(VrnicState, VRNIC)

/*
 * Received frames the IOThread has not taken yet: at most this many, and
 * this many bytes; beyond, the netdev holds what comes (and stops reading
 * its socket) until the IOThread catches up.
 */
#define VRNIC_RXQ_MAX_FRAMES    512
#define VRNIC_RXQ_MAX_BYTES     (4 * MiB)

/*
 * Doorbell writes that wait for the IOThread (db_mbox): a vCPU that rings
 * a doorbell does not wait for the packet processing that holds the lock.
 * When it is full, the vCPU applies them itself, under the lock.
 */
#define VRNIC_DB_MAILBOX        256

typedef struct VrnicDbWrite {
    uint32_t addr;
    uint32_t val;
} VrnicDbWrite;

/* A frame handed between the main loop and the IOThread. */
typedef struct VrnicFrame {
    QSIMPLEQ_ENTRY(VrnicFrame) next;
    size_t len;
    uint8_t data[];
} VrnicFrame;

typedef QSIMPLEQ_HEAD(, VrnicFrame) VrnicFrameList;

struct VrnicState {
    PCIDevice parent_obj;

    MemoryRegion bar0;      /* the register page and the clock page */
    MemoryRegion regs;
    MemoryRegion clock;
    MemoryRegion db;
    MemoryRegion dm;        /* device memory, BAR5 (dm-size bytes) */
    NICConf conf;
    NICState *nic;
    QEMUBH *bh[VRNIC_WORK__MAX];    /* in ctx */
    QEMUTimer *timer;               /* in ctx */
    MemoryListener dma_map;     /* drops the translation cache on changes */

    IOThread *iothread;     /* property; NULL: the main loop runs the core */
    AioContext *ctx;        /* where bh[] and timer run */
    QemuRecMutex lock;      /* held by every entry into core */
    bool stopping;          /* unrealize: the core may not kick or arm */

    /* With an IOThread only: the BQL's work, handed to the main loop. */
    QemuMutex handoff_lock; /* protects db_*, rxq, rxq_*, rx_held, txq */
    VrnicDbWrite db_mbox[VRNIC_DB_MAILBOX]; /* a ring, oldest at db_head */
    uint32_t db_head, db_count;
    VrnicFrameList rxq;     /* netdev -> rx_bh */
    uint32_t rxq_frames;
    size_t rxq_bytes;
    bool rx_held;           /* the netdev holds frames for us: flush it */
    bool rx_flush;          /* main_bh: qemu_flush_queued_packets */
    bool handoff_due;       /* under lock: main_bh has work from the core */
    VrnicFrameList txq;     /* core -> main_bh -> netdev */
    DECLARE_BITMAP(irq_pending, VRNIC_VEC_COMP_FIRST + VRNIC_MAX_COMP_VECTORS);
    QEMUBH *rx_bh;          /* in ctx: rxq into the core */
    QEMUBH *db_bh;          /* in ctx: db_mbox into the core */
    QEMUBH *main_bh;        /* main loop: MSI-X, txq, netdev flush */

    VrnicConfig cfg;    /* properties; mac is filled from conf at realize */
    VrnicFaultCfg fault;    /* fault-* properties, changeable at run time */
    VrnicCore core;
};

/*
 * The doorbells rung so far, in order, before anything else enters the
 * core: as if the device took MMIO writes in order. Called with lock.
 */
static void vrnic_db_drain(VrnicState *s)
{
    VrnicDbWrite db[VRNIC_DB_MAILBOX];
    uint32_t n = 0;

    if (!s->iothread) {
        return;
    }
    WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
        for (; n < s->db_count; n++) {
            db[n] = s->db_mbox[(s->db_head + n) % VRNIC_DB_MAILBOX];
        }
        s->db_head = 0;
        s->db_count = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        vrnic_core_db_write(&s->core, db[i].addr, db[i].val);
    }
}

/* ---- core -> glue ------------------------------------------------------- */

/*
 * Every DMA of the device is restricted to RAM (MemTxAttrs.memory): the
 * guest chooses the addresses, and an address that decodes to MMIO - the
 * MMCONFIG page of the root port above us, whose bridge control can
 * reset the secondary bus - would otherwise run another device's handlers,
 * and through them reset or unplug this one, in the middle of the core's
 * own work. Such a transfer fails with MEMTX_ACCESS_ERROR instead, and the
 * core reports it like any unreachable address.
 */
static const MemTxAttrs vrnic_dma_attrs = { .memory = 1 };

/*
 * With an IOThread, DMA reaches only memory that needs no BQL: RAM that
 * can be accessed directly. Anything else that is RAM to
 * MemTxAttrs.memory - a write to ROM, a RAM device's BAR - would take the
 * BQL in the IOThread (prepare_mmio_access) while it holds the device's
 * lock, and a vCPU that holds the BQL may be waiting for that lock. Such
 * a transfer fails like an unreachable address. The memory region cache
 * does the lookup and, for writes, the dirty tracking and TCG's code
 * invalidation as pci_dma_rw() would.
 */
static bool vrnic_dma_direct(VrnicState *s, uint64_t addr, uint8_t *buf,
                             uint64_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));

    RCU_READ_LOCK_GUARD();
    smp_mb();   /* pci_dma_rw()'s dma_barrier() */
    while (len) {
        MemoryRegionCache c;
        int64_t l = address_space_cache_init(&c, as, addr, len, is_write);
        bool ok = l > 0 && c.ptr;

        if (ok && is_write) {
            memcpy(c.ptr, buf, l);
            address_space_cache_invalidate(&c, 0, l);
        } else if (ok) {
            memcpy(buf, c.ptr, l);
        }
        address_space_cache_destroy(&c);
        if (!ok) {
            return false;
        }
        addr += l;
        buf += l;
        len -= l;
    }
    return true;
}

static bool vrnic_dma_read_cb(void *opaque, uint64_t addr, void *buf,
                              uint64_t len)
{
    VrnicState *s = opaque;

    if (s->iothread) {
        return vrnic_dma_direct(s, addr, buf, len, false);
    }
    return pci_dma_rw(PCI_DEVICE(s), addr, buf, len,
                      DMA_DIRECTION_TO_DEVICE, vrnic_dma_attrs) == MEMTX_OK;
}

static bool vrnic_dma_write_cb(void *opaque, uint64_t addr, const void *buf,
                               uint64_t len)
{
    VrnicState *s = opaque;

    if (s->iothread) {
        return vrnic_dma_direct(s, addr, (uint8_t *)buf, len, true);
    }
    return pci_dma_rw(PCI_DEVICE(s), addr, (void *)buf, len,
                      DMA_DIRECTION_FROM_DEVICE, vrnic_dma_attrs) == MEMTX_OK;
}

static int vrnic_persist_block(RAMBlock *rb, void *opaque)
{
    int fd = qemu_ram_get_fd(rb);

    if (fd >= 0 &&
        qemu_msync(qemu_ram_get_host_addr(rb), qemu_ram_get_used_length(rb),
                   fd)) {
        trace_vrnic_persist_failed(qemu_ram_get_idstr(rb));
    }
    return 0;
}

/*
 * FLUSH with persistence: the device cannot tell which guest RAM a peer's
 * earlier WRITEs went to without walking every page of the range, so
 * every RAM block with a file is written back to it (msync); anonymous
 * RAM has none and costs nothing.
 */
static void vrnic_dma_persist_cb(void *opaque)
{
    qemu_ram_foreach_block(vrnic_persist_block, NULL);
}

static void vrnic_msix_notify(PCIDevice *pdev, unsigned vector)
{
    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    }
}

/*
 * Work for main_bh, from the IOThread: it is scheduled once the IOThread's
 * bottom half or timer is done (vrnic_handoff_flush), so a run's frames
 * and interrupts cost the main loop one wake-up. With the BQL (an MMIO
 * handler) at once.
 */
static void vrnic_handoff_kick(VrnicState *s)
{
    if (bql_locked()) {
        qemu_bh_schedule(s->main_bh);
    } else {
        s->handoff_due = true;
    }
}

static void vrnic_handoff_flush(VrnicState *s)
{
    if (s->handoff_due) {
        s->handoff_due = false;
        qemu_bh_schedule(s->main_bh);
    }
}

/* MSI-X needs the BQL: from the IOThread, main_bh sends the message. */
static void vrnic_irq_cb(void *opaque, unsigned vector)
{
    VrnicState *s = opaque;

    if (bql_locked()) {
        vrnic_msix_notify(PCI_DEVICE(s), vector);
        return;
    }
    set_bit_atomic(vector, s->irq_pending);
    vrnic_handoff_kick(s);
}

static void vrnic_kick_cb(void *opaque, VrnicWork work)
{
    VrnicState *s = opaque;

    if (!s->stopping) {
        qemu_bh_schedule(s->bh[work]);
    }
}

/*
 * The netdev sent a frame it had queued for us, or discarded it
 * (qemu_purge_queued_packets).
 */
static void vrnic_eth_sent_cb(NetClientState *nc, ssize_t len)
{
    VrnicState *s = qemu_get_nic_opaque(nc);

    QEMU_LOCK_GUARD(&s->lock);
    vrnic_core_wire_sent(&s->core);
}

/* 0: queued behind a busy backend, with vrnic_eth_sent_cb to follow. */
static bool vrnic_wire_send(VrnicState *s, const uint8_t *frame, size_t len)
{
    return qemu_send_packet_async(qemu_get_queue(s->nic), frame, len,
                                  vrnic_eth_sent_cb) != 0;
}

/*
 * The net layer needs the BQL: from the IOThread the frame waits in txq
 * for main_bh, which reports it sent (the core holds at most
 * VRNIC_WIRE_MAX_QUEUED frames that have not left, so txq is bounded).
 */
static bool vrnic_eth_send_cb(void *opaque, const uint8_t *frame, size_t len)
{
    VrnicState *s = opaque;
    VrnicFrame *f;

    if (!s->iothread) {
        return vrnic_wire_send(s, frame, len);
    }
    f = g_malloc(sizeof(*f) + len);
    f->len = len;
    memcpy(f->data, frame, len);
    WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
        QSIMPLEQ_INSERT_TAIL(&s->txq, f, next);
    }
    vrnic_handoff_kick(s);
    return false;
}

static int64_t vrnic_clock_ns_cb(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* The device clock (clock page, timestamp CQEs): the host's real time. */
static int64_t vrnic_wallclock_ns_cb(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_HOST);
}

static void vrnic_timer_mod_cb(void *opaque, int64_t deadline_ns)
{
    VrnicState *s = opaque;

    if (!s->stopping) {
        timer_mod(s->timer, deadline_ns);
    }
}

static void vrnic_timer_cb(void *opaque)
{
    VrnicState *s = opaque;

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->stopping) {
            break;
        }
        vrnic_db_drain(s);
        vrnic_core_timer(&s->core);
        vrnic_handoff_flush(s);
    }
}

static const VrnicCoreOps vrnic_core_ops = {
    .dma_read = vrnic_dma_read_cb,
    .dma_write = vrnic_dma_write_cb,
    .dma_persist = vrnic_dma_persist_cb,
    .irq = vrnic_irq_cb,
    .kick = vrnic_kick_cb,
    .eth_send = vrnic_eth_send_cb,
    .clock_ns = vrnic_clock_ns_cb,
    .wallclock_ns = vrnic_wallclock_ns_cb,
    .timer_mod = vrnic_timer_mod_cb,
};

/*
 * Every way into the core that can DMA holds a reference on the device:
 * were the device ever unplugged from inside the core's own work, its
 * memory outlives the call (the core defers its own teardown the same way,
 * see VrnicCore.running).
 */
static void vrnic_run(VrnicState *s, VrnicWork work)
{
    object_ref(OBJECT(s));
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->stopping) {
            break;
        }
        vrnic_db_drain(s);
        vrnic_core_run(&s->core, work);
        vrnic_handoff_flush(s);
    }
    object_unref(OBJECT(s));
}

static void vrnic_admin_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_ADMIN);
}

static void vrnic_eth_tx_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_ETH_TX);
}

static void vrnic_eth_rx_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_ETH_RX);
}

static void vrnic_link_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_LINK);
}

static void vrnic_queues_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_QUEUES);
}

/* IOThread: the doorbells in db_mbox (they kick the work they start). */
static void vrnic_db_bh(void *opaque)
{
    VrnicState *s = opaque;

    object_ref(OBJECT(s));
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->stopping) {
            break;
        }
        vrnic_db_drain(s);
        vrnic_handoff_flush(s);
    }
    object_unref(OBJECT(s));
}

/* ---- BARs --------------------------------------------------------------- */

static uint64_t vrnic_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    VrnicState *s = opaque;

    QEMU_LOCK_GUARD(&s->lock);
    vrnic_db_drain(s);
    return vrnic_core_reg_read(&s->core, addr);
}

static void vrnic_regs_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    VrnicState *s = opaque;

    QEMU_LOCK_GUARD(&s->lock);
    vrnic_db_drain(s);
    vrnic_core_reg_write(&s->core, addr, val);
}

/*
 * Only aligned 32-bit accesses reach the core; the memory core rejects the
 * rest before our handlers run.
 */
static const MemoryRegionOps vrnic_regs_ops = {
    .read = vrnic_regs_read,
    .write = vrnic_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/*
 * The clock page: no device state, so no lock; drivers map it into user
 * processes (read-only). Each read samples the clock: readers pair HI, LO,
 * HI themselves (VRNIC_REG_CLOCK_LO).
 */
static uint64_t vrnic_clock_read(void *opaque, hwaddr addr, unsigned size)
{
    uint64_t now = vrnic_wallclock_ns_cb(opaque);

    switch (addr + VRNIC_CLOCK_PAGE) {
    case VRNIC_REG_CLOCK_LO:
        return (uint32_t)now;
    case VRNIC_REG_CLOCK_HI:
        return now >> 32;
    default:
        return 0;
    }
}

static void vrnic_clock_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    trace_vrnic_err_reg(addr + VRNIC_CLOCK_PAGE, val);
    qemu_log_mask(LOG_GUEST_ERROR, "vrnic: write to the clock page at 0x%"
                  HWADDR_PRIx ": ignored\n", addr + VRNIC_CLOCK_PAGE);
}

static const MemoryRegionOps vrnic_clock_ops = {
    .read = vrnic_clock_read,
    .write = vrnic_clock_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static uint64_t vrnic_db_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0;   /* doorbells are write-only */
}

static void vrnic_db_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    VrnicState *s = opaque;
    bool queued = false;

    if (s->iothread) {
        WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
            if (s->db_count < VRNIC_DB_MAILBOX) {
                s->db_mbox[(s->db_head + s->db_count++) % VRNIC_DB_MAILBOX] =
                    (VrnicDbWrite) { .addr = addr, .val = val };
                queued = true;
            }
        }
        if (queued) {
            qemu_bh_schedule(s->db_bh);
            return;
        }
    }
    QEMU_LOCK_GUARD(&s->lock);
    vrnic_db_drain(s);
    vrnic_core_db_write(&s->core, addr, val);
}

static const MemoryRegionOps vrnic_db_ops = {
    .read = vrnic_db_read,
    .write = vrnic_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/* ---- netdev ------------------------------------------------------------- */

/*
 * With an IOThread, a received frame waits in rxq for rx_bh. 0 when rxq
 * is full: the netdev holds the frame, and rx_bh has it flushed once it
 * has emptied rxq. An empty rxq takes any frame, so none waits forever.
 */
static ssize_t vrnic_rxq_put(VrnicState *s, const uint8_t *buf, size_t size)
{
    VrnicFrame *f;

    WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
        if (s->rxq_frames && (s->rxq_frames >= VRNIC_RXQ_MAX_FRAMES ||
                              s->rxq_bytes + size > VRNIC_RXQ_MAX_BYTES)) {
            s->rx_held = true;
            return 0;
        }
        f = g_malloc(sizeof(*f) + size);
        f->len = size;
        memcpy(f->data, buf, size);
        QSIMPLEQ_INSERT_TAIL(&s->rxq, f, next);
        s->rxq_frames++;
        s->rxq_bytes += size;
    }
    /* main_bh runs after the netdev's batch and wakes the IOThread once. */
    qemu_bh_schedule(s->main_bh);
    return size;
}

/*
 * The core takes every frame: it never asks the netdev to hold one (only
 * a full rxq does, with an IOThread).
 */
static ssize_t vrnic_nc_receive(NetClientState *nc, const uint8_t *buf,
                                size_t size)
{
    VrnicState *s = qemu_get_nic_opaque(nc);

    if (s->stopping) {
        return size;
    }
    if (s->iothread) {
        return vrnic_rxq_put(s, buf, size);
    }
    object_ref(OBJECT(s));
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        vrnic_core_eth_receive(&s->core, buf, size);
    }
    object_unref(OBJECT(s));
    return size;
}

static void vrnic_nc_link_status_changed(NetClientState *nc)
{
    VrnicState *s = qemu_get_nic_opaque(nc);

    QEMU_LOCK_GUARD(&s->lock);
    vrnic_core_set_link(&s->core, !nc->link_down);
}

/* ---- IOThread hand-over ------------------------------------------------- */

static void vrnic_frames_free(VrnicFrameList *l)
{
    VrnicFrame *f, *next;

    QSIMPLEQ_FOREACH_SAFE(f, l, next, next) {
        g_free(f);
    }
    QSIMPLEQ_INIT(l);
}

/* IOThread: the frames received so far, in one batch, into the core. */
static void vrnic_rx_bh(void *opaque)
{
    VrnicState *s = opaque;
    VrnicFrameList batch = QSIMPLEQ_HEAD_INITIALIZER(batch);
    VrnicFrame *f;
    bool held = false;

    object_ref(OBJECT(s));
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        if (s->stopping) {
            break;
        }
        WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
            QSIMPLEQ_CONCAT(&batch, &s->rxq);
            s->rxq_frames = 0;
            s->rxq_bytes = 0;
            held = s->rx_held;
            s->rx_held = false;
        }
        vrnic_db_drain(s);
        QSIMPLEQ_FOREACH(f, &batch, next) {
            vrnic_core_eth_receive(&s->core, f->data, f->len);
        }
        if (held) {
            qatomic_set(&s->rx_flush, true);
            s->handoff_due = true;
        }
        vrnic_handoff_flush(s);
    }
    object_unref(OBJECT(s));
    vrnic_frames_free(&batch);
}

/* Main loop: what the IOThread handed over that needs the BQL. */
static void vrnic_main_bh(void *opaque)
{
    VrnicState *s = opaque;
    VrnicFrameList batch = QSIMPLEQ_HEAD_INITIALIZER(batch);
    VrnicFrame *f;
    unsigned sent = 0;

    /* Unplug: frames sent now would outlive the device in the netdev. */
    if (s->stopping) {
        return;
    }
    for (size_t w = 0; w < ARRAY_SIZE(s->irq_pending); w++) {
        unsigned long bits = qatomic_xchg(&s->irq_pending[w], 0);

        while (bits) {
            int b = ctzl(bits);

            bits &= bits - 1;
            vrnic_msix_notify(PCI_DEVICE(s), w * BITS_PER_LONG + b);
        }
    }
    WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
        QSIMPLEQ_CONCAT(&batch, &s->txq);
    }
    QSIMPLEQ_FOREACH(f, &batch, next) {
        sent += vrnic_wire_send(s, f->data, f->len);
    }
    vrnic_frames_free(&batch);
    if (sent) {
        QEMU_LOCK_GUARD(&s->lock);
        while (sent--) {
            vrnic_core_wire_sent(&s->core);
        }
    }
    if (qatomic_xchg(&s->rx_flush, false)) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
    WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
        if (s->rxq_frames) {
            qemu_bh_schedule(s->rx_bh);
        }
    }
}

static NetClientInfo vrnic_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = vrnic_nc_receive,
    .link_status_changed = vrnic_nc_link_status_changed,
};

/* ---- lifecycle ---------------------------------------------------------- */

/*
 * A section of our DMA address space appeared or went away (RAM hot-plug,
 * a BAR moving over it, bus mastering toggled): a table page may now read
 * differently, so the translation cache is dropped.
 */
static void vrnic_dma_map_changed(MemoryListener *l,
                                  MemoryRegionSection *section)
{
    VrnicState *s = container_of(l, VrnicState, dma_map);

    QEMU_LOCK_GUARD(&s->lock);
    vrnic_core_memory_changed(&s->core);
}

static void vrnic_realize(PCIDevice *pdev, Error **errp)
{
    VrnicState *s = VRNIC(pdev);
    DeviceState *dev = DEVICE(pdev);
    MemReentrancyGuard *guard;
    uint32_t nvec;
    const char *bad;

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(s->cfg.mac, s->conf.macaddr.a, sizeof(s->cfg.mac));
    bad = vrnic_core_check_config(&s->cfg);
    if (bad) {
        error_setg(errp, "vrnic: %s", bad);
        return;
    }
    nvec = vrnic_total_vectors(&s->cfg);

    /* MSI-X only: no INTx pin is advertised. */
    memory_region_init(&s->bar0, OBJECT(s), "vrnic-bar0", VRNIC_BAR0_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &vrnic_regs_ops, s,
                          "vrnic-regs", VRNIC_REGS_SIZE);
    memory_region_init_io(&s->clock, OBJECT(s), &vrnic_clock_ops, s,
                          "vrnic-clock", VRNIC_BAR0_SIZE - VRNIC_CLOCK_PAGE);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    memory_region_add_subregion(&s->bar0, VRNIC_CLOCK_PAGE, &s->clock);
    pci_register_bar(pdev, VRNIC_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);
    memory_region_init_io(&s->db, OBJECT(s), &vrnic_db_ops, s, "vrnic-db",
                          (uint64_t)s->cfg.db_pages * VRNIC_DB_PAGE_SIZE);
    pci_register_bar(pdev, VRNIC_BAR_DB, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db);

    if (pci_is_express(pdev) && pcie_endpoint_cap_init(pdev, 0xa0) < 0) {
        error_setg(errp, "vrnic: cannot add the PCIe capability");
        return;
    }
    if (msix_init_exclusive_bar(pdev, nvec, VRNIC_BAR_MSIX, errp)) {
        return;
    }
    if (s->cfg.dm_size) {
        /* Plain RAM: the guest CPU maps it; the core copies through it. */
        if (!memory_region_init_ram(&s->dm, OBJECT(s), "vrnic-dm",
                                    s->cfg.dm_size, errp)) {
            return;
        }
        pci_register_bar(pdev, VRNIC_BAR_DM, PCI_BASE_ADDRESS_SPACE_MEMORY |
                         PCI_BASE_ADDRESS_MEM_PREFETCH, &s->dm);
    }
    /*
     * Mark every vector used: msix_notify() drops unused ones silently.
     * The core never raises a vector >= nvec.
     */
    for (uint32_t i = 0; i < nvec; i++) {
        msix_vector_use(pdev, i);
    }

    qemu_rec_mutex_init(&s->lock);
    qemu_mutex_init(&s->handoff_lock);
    QSIMPLEQ_INIT(&s->rxq);
    QSIMPLEQ_INIT(&s->txq);
    /*
     * The device's re-entrancy guard belongs to the threads that hold the
     * BQL (MMIO dispatch and the main loop): an IOThread bottom half that
     * set it would make a concurrent doorbell write fail as re-entrant.
     * The core's DMA reaches only RAM, so it cannot re-enter our MMIO.
     */
    guard = s->iothread ? NULL : &dev->mem_reentrancy_guard;
    s->ctx = s->iothread ? iothread_get_aio_context(s->iothread) :
                           qemu_get_aio_context();
    s->bh[VRNIC_WORK_ADMIN] = aio_bh_new_guarded(s->ctx, vrnic_admin_bh, s,
                                                 guard);
    s->bh[VRNIC_WORK_ETH_TX] = aio_bh_new_guarded(s->ctx, vrnic_eth_tx_bh, s,
                                                  guard);
    s->bh[VRNIC_WORK_ETH_RX] = aio_bh_new_guarded(s->ctx, vrnic_eth_rx_bh, s,
                                                  guard);
    s->bh[VRNIC_WORK_LINK] = aio_bh_new_guarded(s->ctx, vrnic_link_bh, s,
                                                guard);
    s->bh[VRNIC_WORK_QUEUES] = aio_bh_new_guarded(s->ctx, vrnic_queues_bh, s,
                                                  guard);
    s->nic = qemu_new_nic(&vrnic_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    if (s->iothread) {
        object_ref(OBJECT(s->iothread));
        s->rx_bh = aio_bh_new(s->ctx, vrnic_rx_bh, s);
        s->db_bh = aio_bh_new(s->ctx, vrnic_db_bh, s);
        s->main_bh = qemu_bh_new_guarded(vrnic_main_bh, s,
                                         &dev->mem_reentrancy_guard);
        s->timer = aio_timer_new(s->ctx, QEMU_CLOCK_VIRTUAL, SCALE_NS,
                                 vrnic_timer_cb, s);
    } else {
        /* The main loop's timer list: qtest's clock_step runs it. */
        s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, vrnic_timer_cb, s);
    }

    vrnic_core_init(&s->core, &s->cfg, &vrnic_core_ops, s);
    if (s->cfg.dm_size) {
        vrnic_core_set_devmem(&s->core, memory_region_get_ram_ptr(&s->dm));
    }
    vrnic_core_set_faults(&s->core, &s->fault);
    vrnic_core_set_link(&s->core, !qemu_get_queue(s->nic)->link_down);
    s->dma_map = (MemoryListener) {
        .name = "vrnic-dma-map",
        .region_add = vrnic_dma_map_changed,
        .region_del = vrnic_dma_map_changed,
    };
    memory_listener_register(&s->dma_map, pci_get_address_space(pdev));
    trace_vrnic_realize(s->cfg.num_comp_vectors, s->cfg.db_pages);
}

/*
 * Frames the netdev still holds for us carry our NetClientState and
 * vrnic_eth_sent_cb: drop them while both are alive (virtio-net does the
 * same), or the netdev would call back into a freed device once it can
 * send again. Each purged frame runs vrnic_eth_sent_cb, so the core's
 * count of queued frames returns to 0.
 */
static void vrnic_purge_wire(VrnicState *s)
{
    qemu_purge_queued_packets(qemu_get_queue(s->nic));
}

static void vrnic_cancel_work(VrnicState *s)
{
    for (int i = 0; i < VRNIC_WORK__MAX; i++) {
        qemu_bh_cancel(s->bh[i]);
    }
    timer_del(s->timer);
}

static void vrnic_nop_bh(void *opaque)
{
}

static void vrnic_exit(PCIDevice *pdev)
{
    VrnicState *s = VRNIC(pdev);

    memory_listener_unregister(&s->dma_map);
    WITH_QEMU_LOCK_GUARD(&s->lock) {
        /* From here the core's kicks and timer changes go nowhere. */
        s->stopping = true;
        vrnic_purge_wire(s);
        vrnic_core_reset(&s->core);
        vrnic_cancel_work(s);
    }
    if (s->iothread) {
        /*
         * A bottom half or the timer of ours that had started in the
         * IOThread finishes before this returns; none starts later.
         */
        qemu_bh_cancel(s->rx_bh);
        qemu_bh_cancel(s->db_bh);
        qemu_bh_cancel(s->main_bh);
        aio_wait_bh_oneshot(s->ctx, vrnic_nop_bh, NULL);
        qemu_bh_delete(s->rx_bh);
        qemu_bh_delete(s->db_bh);
        qemu_bh_delete(s->main_bh);
        vrnic_frames_free(&s->rxq);
        vrnic_frames_free(&s->txq);
        object_unref(OBJECT(s->iothread));
    }
    if (s->cfg.dm_size) {
        /* memory_region_init_ram registered it (and a CPR blocker). */
        vmstate_unregister_ram(&s->dm, DEVICE(s));
    }
    for (int i = 0; i < VRNIC_WORK__MAX; i++) {
        qemu_bh_delete(s->bh[i]);
    }
    timer_free(s->timer);
    qemu_del_nic(s->nic);
    vrnic_core_uninit(&s->core);
    qemu_mutex_destroy(&s->handoff_lock);
    qemu_rec_mutex_destroy(&s->lock);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

/*
 * With an IOThread, frames still in rxq are left to rx_bh: the reset core
 * drops them, and rx_bh has the netdev flushed if it holds more.
 */
static void vrnic_reset_hold(Object *obj, ResetType type)
{
    VrnicState *s = VRNIC(obj);
    VrnicFrameList txq = QSIMPLEQ_HEAD_INITIALIZER(txq);
    VrnicFrame *f;

    QEMU_LOCK_GUARD(&s->lock);
    vrnic_purge_wire(s);
    /*
     * What the core handed over before the reset does not reach the
     * driver after it: doorbells for rings now gone, interrupts, frames
     * (discarded like the netdev's queued ones, so the core's count of
     * unsent frames returns to 0). Before the work is cancelled, since
     * reporting frames sent may kick some.
     */
    WITH_QEMU_LOCK_GUARD(&s->handoff_lock) {
        s->db_count = 0;
        QSIMPLEQ_CONCAT(&txq, &s->txq);
    }
    for (size_t w = 0; w < ARRAY_SIZE(s->irq_pending); w++) {
        qatomic_set(&s->irq_pending[w], 0);
    }
    QSIMPLEQ_FOREACH(f, &txq, next) {
        vrnic_core_wire_sent(&s->core);
    }
    vrnic_frames_free(&txq);
    vrnic_cancel_work(s);
    vrnic_core_reset(&s->core);
}

/* Device state is not described for migration yet: refuse to migrate. */
static const VMStateDescription vrnic_vmstate = {
    .name = "vrnic",
    .unmigratable = 1,
};

static const Property vrnic_props[] = {
    DEFINE_NIC_PROPERTIES(VrnicState, conf),
    DEFINE_PROP_LINK("iothread", VrnicState, iothread, TYPE_IOTHREAD,
                     IOThread *),
    DEFINE_PROP_UINT32("num-comp-vectors", VrnicState, cfg.num_comp_vectors, 4),
    DEFINE_PROP_UINT32("db-pages", VrnicState, cfg.db_pages, 64),
    DEFINE_PROP_UINT32("gid-table-size", VrnicState, cfg.gid_tbl_len, 16),
    DEFINE_PROP_UINT32("max-mtu", VrnicState, cfg.max_mtu, 9000),
    DEFINE_PROP_UINT32("speed-mbps", VrnicState, cfg.speed_mbps, 25000),
    DEFINE_PROP_UINT32("cmd-timeout-ms", VrnicState, cfg.cmd_timeout_ms, 5000),
    DEFINE_PROP_UINT32("max-qp", VrnicState, cfg.max_qp, 1024),
    DEFINE_PROP_UINT32("max-qp-wr", VrnicState, cfg.max_qp_wr, 4096),
    DEFINE_PROP_UINT32("max-sge", VrnicState, cfg.max_sge, 16),
    DEFINE_PROP_UINT32("max-cq", VrnicState, cfg.max_cq, 1024),
    DEFINE_PROP_UINT32("max-cqe", VrnicState, cfg.max_cqe, 32768),
    DEFINE_PROP_UINT32("max-mr", VrnicState, cfg.max_mr, 4096),
    DEFINE_PROP_UINT32("max-pd", VrnicState, cfg.max_pd, 1024),
    DEFINE_PROP_UINT32("max-srq", VrnicState, cfg.max_srq, 256),
    DEFINE_PROP_UINT32("max-srq-wr", VrnicState, cfg.max_srq_wr, 4096),
    DEFINE_PROP_UINT32("max-inline-data", VrnicState, cfg.max_inline_data, 256),
    /* 128 like rdma_rxe: perftest sets max_rd_atomic to the peer's value. */
    DEFINE_PROP_UINT32("max-qp-rd-atom", VrnicState, cfg.max_qp_rd_atom, 128),
    DEFINE_PROP_UINT32("dm-size", VrnicState, cfg.dm_size, 256 * KiB),
};

/*
 * Fault injection (vrnic_fault.c). QOM class properties rather than qdev
 * ones, because qdev properties cannot change after realize: these are set
 * with -device vrnic,fault-drop-ppm=10000,... and at run time with qom-set
 * (QMP or HMP), taking effect at once.
 */
typedef struct VrnicFaultProp {
    const char *name;
    size_t offset;          /* of a uint32_t in VrnicFaultCfg */
    uint32_t max;
    const char *desc;
    uint32_t min;
} VrnicFaultProp;

static const VrnicFaultProp vrnic_fault_props[] = {
    { "fault-drop-ppm", offsetof(VrnicFaultCfg, drop_ppm), VRNIC_FAULT_PPM,
      "RoCEv2 frames dropped, parts per million" },
    { "fault-reorder-ppm", offsetof(VrnicFaultCfg, reorder_ppm),
      VRNIC_FAULT_PPM, "frames held back behind later ones, ppm" },
    { "fault-reorder-depth", offsetof(VrnicFaultCfg, reorder_depth),
      VRNIC_FAULT_MAX_DEPTH, "frames a reordered frame lets past (1-64)",
      1 },
    { "fault-dup-ppm", offsetof(VrnicFaultCfg, dup_ppm), VRNIC_FAULT_PPM,
      "frames delivered twice, ppm" },
    { "fault-corrupt-ppm", offsetof(VrnicFaultCfg, corrupt_ppm),
      VRNIC_FAULT_PPM, "frames with one ICRC-covered bit flipped, ppm" },
    { "fault-delay-us", offsetof(VrnicFaultCfg, delay_us),
      VRNIC_FAULT_MAX_DELAY, "extra delay of every frame, microseconds" },
};

static void vrnic_fault_apply(VrnicState *s)
{
    if (DEVICE(s)->realized) {
        QEMU_LOCK_GUARD(&s->lock);
        vrnic_core_set_faults(&s->core, &s->fault);
    }
}

static void vrnic_fault_get_u32(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    const VrnicFaultProp *p = opaque;
    uint32_t val = *(uint32_t *)((char *)&VRNIC(obj)->fault + p->offset);

    visit_type_uint32(v, name, &val, errp);
}

static void vrnic_fault_set_u32(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    const VrnicFaultProp *p = opaque;
    VrnicState *s = VRNIC(obj);
    uint32_t val;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val < p->min || val > p->max) {
        error_setg(errp, "vrnic: %s must be %u..%u", name, p->min, p->max);
        return;
    }
    *(uint32_t *)((char *)&s->fault + p->offset) = val;
    vrnic_fault_apply(s);
}

static void vrnic_fault_get_seed(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    visit_type_uint64(v, name, &VRNIC(obj)->fault.seed, errp);
}

static void vrnic_fault_set_seed(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    VrnicState *s = VRNIC(obj);
    uint64_t val;

    if (visit_type_uint64(v, name, &val, errp)) {
        s->fault.seed = val;
        vrnic_fault_apply(s);
    }
}

static const char *const vrnic_fault_dirs[] = {
    [VRNIC_FAULT_DIR_TX] = "tx",
    [VRNIC_FAULT_DIR_RX] = "rx",
    [VRNIC_FAULT_DIR_TX | VRNIC_FAULT_DIR_RX] = "both",
};

static char *vrnic_fault_get_dir(Object *obj, Error **errp)
{
    return g_strdup(vrnic_fault_dirs[VRNIC(obj)->fault.dir]);
}

static void vrnic_fault_set_dir(Object *obj, const char *val, Error **errp)
{
    VrnicState *s = VRNIC(obj);

    for (uint32_t d = 1; d < ARRAY_SIZE(vrnic_fault_dirs); d++) {
        if (!strcmp(val, vrnic_fault_dirs[d])) {
            s->fault.dir = d;
            vrnic_fault_apply(s);
            return;
        }
    }
    error_setg(errp, "vrnic: fault-dir must be tx, rx or both");
}

static void vrnic_instance_init(Object *obj)
{
    VrnicState *s = VRNIC(obj);

    s->fault.reorder_depth = 3;
    s->fault.dir = VRNIC_FAULT_DIR_TX;
}

static void vrnic_class_add_fault_props(ObjectClass *oc)
{
    for (size_t i = 0; i < ARRAY_SIZE(vrnic_fault_props); i++) {
        const VrnicFaultProp *p = &vrnic_fault_props[i];

        object_class_property_add(oc, p->name, "uint32", vrnic_fault_get_u32,
                                  vrnic_fault_set_u32, NULL, (void *)p);
        object_class_property_set_description(oc, p->name, p->desc);
    }
    object_class_property_add(oc, "fault-seed", "uint64",
                              vrnic_fault_get_seed, vrnic_fault_set_seed,
                              NULL, NULL);
    object_class_property_set_description(oc, "fault-seed",
        "start of the fault injector's random sequence (0: a fixed one)");
    object_class_property_add_str(oc, "fault-dir", vrnic_fault_get_dir,
                                  vrnic_fault_set_dir);
    object_class_property_set_description(oc, "fault-dir",
        "frames the injector acts on: tx (default), rx or both");
}

static void vrnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = vrnic_realize;
    pc->exit = vrnic_exit;
    pc->vendor_id = VRNIC_PCI_VENDOR_ID;
    pc->device_id = VRNIC_PCI_DEVICE_ID;
    pc->revision = VRNIC_PCI_REVISION;
    pc->class_id = VRNIC_PCI_CLASS;
    pc->subsystem_vendor_id = VRNIC_PCI_VENDOR_ID;
    pc->subsystem_id = VRNIC_PCI_DEVICE_ID;

    rc->phases.hold = vrnic_reset_hold;
    dc->desc = "vrnic emulated RoCEv2 RDMA NIC";
    dc->vmsd = &vrnic_vmstate;
    device_class_set_props(dc, vrnic_props);
    vrnic_class_add_fault_props(klass);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo vrnic_info = {
    .name = TYPE_VRNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(VrnicState),
    .instance_init = vrnic_instance_init,
    .class_init = vrnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void vrnic_register_types(void)
{
    type_register_static(&vrnic_info);
}

type_init(vrnic_register_types)
