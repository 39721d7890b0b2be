/*
 * vrnic Ethernet function: one TX and one RX descriptor ring, completions
 * written back into the descriptors, one MSI-X vector armed per ring.
 *
 * Who gets a received frame (vrnic_core_eth_receive): RoCEv2 to one of the
 * port's GIDs (or an attached multicast group) is the RDMA engine's; a
 * frame a flow rule matches goes to its raw packet QP (vrnic_flow.c),
 * whatever its destination MAC; the rest passes the MAC filter to the RX
 * ring.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/* Descriptors handled per TX bottom-half run (fairness, see vrnic_admin.c). */
#define VRNIC_ETH_TX_BUDGET 64

/*
 * The receive FIFO, as a NIC's on-chip buffer: a frame that finds the RX
 * ring without a buffer waits here (the netdev is never told to hold it,
 * which would stop the RoCEv2 frames behind it) and is written once the
 * driver posts buffers. Full, a frame is dropped (ETH_RX_NO_BUF).
 */
#define VRNIC_ETH_RX_FIFO   32

typedef struct VrnicEthFifo {
    uint32_t head, tail;        /* free-running; tail - head frames */
    uint16_t len[VRNIC_ETH_RX_FIFO];
    uint8_t frame[VRNIC_ETH_RX_FIFO][VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD];
} VrnicEthFifo;

void vrnic_eth_init(VrnicCore *core)
{
    core->eth_rx_fifo = g_new0(VrnicEthFifo, 1);
}

void vrnic_eth_uninit(VrnicCore *core)
{
    g_free(core->eth_rx_fifo);
    core->eth_rx_fifo = NULL;
}

void vrnic_eth_reset(VrnicCore *core)
{
    core->eth_rx_fifo->head = core->eth_rx_fifo->tail = 0;
}

uint32_t vrnic_eth_max_frame(const VrnicCore *core)
{
    return core->mtu + VRNIC_ETH_FRAME_OVERHEAD;
}

static bool vrnic_eth_read_desc(VrnicCore *core, VrnicRing *r, uint16_t idx,
                                struct vrnic_eth_desc *d, uint64_t *slot)
{
    *slot = vrnic_ring_slot(r, r->base, idx, VRNIC_ETH_DESC_SIZE);
    if (!vrnic_dma_read(core, *slot, d, sizeof(*d))) {
        vrnic_core_fatal(core, r->name, *slot);
        return false;
    }
    return true;
}

/* Write back len (RX only) then status, status last. */
static bool vrnic_eth_complete_desc(VrnicCore *core, VrnicRing *r,
                                    uint64_t slot, const uint16_t *len,
                                    uint16_t status)
{
    uint16_t le_status = cpu_to_le16(status);

    if (len) {
        uint16_t le_len = cpu_to_le16(*len);

        if (!vrnic_dma_write(core, slot + offsetof(struct vrnic_eth_desc, len),
                             &le_len, sizeof(le_len))) {
            vrnic_core_fatal(core, r->name, slot);
            return false;
        }
    }
    if (!vrnic_dma_write(core, slot + offsetof(struct vrnic_eth_desc, status),
                         &le_status, sizeof(le_status))) {
        vrnic_core_fatal(core, r->name, slot);
        return false;
    }
    return true;
}

/* A descriptor completed on ring r: fire the vector if the driver armed it. */
static void vrnic_eth_notify(VrnicCore *core, bool *armed)
{
    if (*armed) {
        *armed = false;
        vrnic_core_irq(core, VRNIC_VEC_ETH);
    }
}

void vrnic_eth_tx_process(VrnicCore *core)
{
    VrnicRing *tx = &core->eth_tx;
    uint8_t frame[VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD] VRNIC_UNINITIALIZED;
    unsigned done = 0;

    /* A full wire stops the ring: vrnic_core_wire_sent kicks it again. */
    while (tx->live && tx->ci != tx->pi && done < VRNIC_ETH_TX_BUDGET &&
           vrnic_wire_can_send(core)) {
        struct vrnic_eth_desc d;
        uint64_t slot, addr;
        uint16_t len, status = VRNIC_ETH_STS_DONE;

        if (!vrnic_eth_read_desc(core, tx, tx->ci, &d, &slot)) {
            return;
        }
        addr = le64_to_cpu(d.addr);
        len = le16_to_cpu(d.len);
        if (len < VRNIC_ETH_MIN_FRAME || len > vrnic_eth_max_frame(core)) {
            VRNIC_GUEST_ERR(core, vrnic_err_eth_desc, "TX desc %u: bad length "
                            "%u", tx->ci, len);
            status |= VRNIC_ETH_STS_ERROR;
        } else if (!vrnic_dma_read(core, addr, frame, len)) {
            VRNIC_GUEST_ERR(core, vrnic_err_eth_desc, "TX desc %u: unreadable "
                            "buffer, length %u", tx->ci, len);
            status |= VRNIC_ETH_STS_ERROR;
        } else {
            trace_vrnic_eth_tx(tx->ci, len);
            vrnic_wire_send(core, frame, len);
            core->stats.eth_tx_frames++;
        }
        if (status & VRNIC_ETH_STS_ERROR) {
            core->stats.eth_tx_errors++;
        }
        if (!vrnic_eth_complete_desc(core, tx, slot, NULL, status)) {
            return;
        }
        tx->ci++;
        done++;
    }
    if (done) {
        vrnic_eth_notify(core, &core->eth_tx_armed);
    }
    if (tx->live && tx->ci != tx->pi && vrnic_wire_can_send(core)) {
        vrnic_core_kick(core, VRNIC_WORK_ETH_TX);
    }
}

/*
 * ETH_TX_ARM / ETH_RX_ARM: val is the driver's consumer index. If the device
 * has already completed descriptors past it, interrupt now; otherwise at the
 * next completion.
 */
void vrnic_eth_write_arm(VrnicCore *core, VrnicRing *ring, bool *armed,
                         uint32_t val)
{
    uint16_t ci = val & VRNIC_INDEX_MASK;

    if (!ring->live || (val & ~VRNIC_INDEX_MASK)) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: arm 0x%x on a ring that "
                        "is not live, or reserved bits", ring->name, val);
        return;
    }
    /* The driver cannot have seen more completions than the device made. */
    if ((uint16_t)(ring->ci - ci) > vrnic_ring_depth(ring)) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: arm 0x%x is ahead of the "
                        "device", ring->name, val);
        return;
    }
    if (ring->ci != ci) {
        *armed = false;
        vrnic_core_irq(core, VRNIC_VEC_ETH);
    } else {
        *armed = true;
    }
}

static bool vrnic_eth_accept(const VrnicCore *core, const uint8_t *frame)
{
    /* Group addresses (broadcast, IPv6 ND multicast) always pass. */
    return (core->eth_ctrl & VRNIC_ETH_CTRL_PROMISC) || (frame[0] & 1) ||
           !memcmp(frame, core->mac, sizeof(core->mac));
}

static bool vrnic_eth_rx_has_buffer(const VrnicCore *core)
{
    return core->eth_rx.live && core->eth_rx.pi != core->eth_rx.ci;
}

/* Write one frame into the next RX buffer; false when it stopped the ring. */
static bool vrnic_eth_rx_put(VrnicCore *core, const uint8_t *frame,
                             uint16_t len)
{
    VrnicRing *rx = &core->eth_rx;
    struct vrnic_eth_desc d;
    uint64_t slot;

    if (!vrnic_eth_read_desc(core, rx, rx->ci, &d, &slot)) {
        return false;
    }
    if (le16_to_cpu(d.len) < len) {
        /* Dropped, never truncated; the buffer stays for the next one. */
        core->stats.eth_rx_too_big++;
        trace_vrnic_eth_rx_drop(len, "larger than the posted buffer");
        return true;
    }
    if (!vrnic_dma_write(core, le64_to_cpu(d.addr), frame, len)) {
        vrnic_core_fatal(core, "eth-rx buffer", le64_to_cpu(d.addr));
        return false;
    }
    if (!vrnic_eth_complete_desc(core, rx, slot, &len, VRNIC_ETH_STS_DONE)) {
        return false;
    }
    trace_vrnic_eth_rx(rx->ci, len);
    rx->ci++;
    core->stats.eth_rx_frames++;
    vrnic_eth_notify(core, &core->eth_rx_armed);
    return true;
}

/* Buffers were posted: frames waiting in the FIFO go in, oldest first. */
void vrnic_eth_rx_process(VrnicCore *core)
{
    VrnicEthFifo *q = core->eth_rx_fifo;

    while (q->head != q->tail && vrnic_eth_rx_has_buffer(core)) {
        uint32_t i = q->head % VRNIC_ETH_RX_FIFO;

        q->head++;
        if (!vrnic_eth_rx_put(core, q->frame[i], q->len[i])) {
            return;
        }
    }
}

void vrnic_core_eth_receive(VrnicCore *core, const uint8_t *frame,
                            size_t len)
{
    VrnicEthFifo *q = core->eth_rx_fifo;

    bool accept;

    if (core->gone || !core->link_up || len < VRNIC_ETH_MIN_FRAME) {
        return;
    }
    accept = vrnic_eth_accept(core, frame);
    vrnic_core_enter(core);
    if (accept && vrnic_rx_route(core, frame, len)) {
        /* UDP/4791 to one of the port's GIDs: the RDMA engine's. */
    } else if (len <= vrnic_eth_max_frame(core) &&
               vrnic_flow_rx(core, frame, len, 0)) {
        /* A flow rule took it, whatever its MAC: a raw packet QP's. */
    } else if (!accept) {
        core->stats.eth_rx_filtered++;
    } else if (len > vrnic_eth_max_frame(core)) {
        core->stats.eth_rx_too_big++;
        trace_vrnic_eth_rx_drop(len, "larger than MTU");
    } else if (q->head == q->tail && vrnic_eth_rx_has_buffer(core)) {
        vrnic_eth_rx_put(core, frame, len);
    } else if (q->tail - q->head < VRNIC_ETH_RX_FIFO) {
        /* In order behind what already waits. */
        memcpy(q->frame[q->tail % VRNIC_ETH_RX_FIFO], frame, len);
        q->len[q->tail % VRNIC_ETH_RX_FIFO] = len;
        q->tail++;
    } else {
        core->stats.port[VRNIC_PORT_STAT_ETH_RX_NO_BUF]++;
        trace_vrnic_eth_rx_drop(len, "no RX buffer, FIFO full");
    }
    vrnic_core_leave(core);
}
