/*
 * vrnic core: Ethernet TX/RX rings, completion write-back, arming, filters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_bus.h"
#include "kselftest_harness.h"

FIXTURE(eth) {
    FakeBus *f;
};

FIXTURE_SETUP(eth)
{
    FakeBus *f = fake_new(NULL);

    self->f = f;
    fake_wr64(f, VRNIC_REG_ETH_TX_BASE_LO, FAKE_TX_RING);
    fake_wr(f, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | 2);
    fake_wr64(f, VRNIC_REG_ETH_RX_BASE_LO, FAKE_RX_RING);
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, VRNIC_RING_CFG_ENABLE | 2);
}

FIXTURE_TEARDOWN(eth)
{
    fake_free(self->f);
}

static struct vrnic_eth_desc *desc(FakeBus *f, uint64_t ring, unsigned i)
{
    return fake_ptr(f, ring + (i % 4) * VRNIC_ETH_DESC_SIZE);
}

static void post(FakeBus *f, uint64_t ring, unsigned i, uint64_t addr,
                 uint16_t len)
{
    struct vrnic_eth_desc *d = desc(f, ring, i);

    memset(d, 0, sizeof(*d));
    d->addr = htole64(addr);
    d->len = htole16(len);
}

static void frame(uint8_t *p, const uint8_t *dst, size_t len)
{
    memcpy(p, dst, 6);
    for (size_t i = 6; i < len; i++) {
        p[i] = (uint8_t)i;
    }
}

static const uint8_t own_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t other_mac[6] = { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 };

TEST_F(eth, tx_sends_and_completes)
{
    FakeBus *f = self->f;

    frame(fake_ptr(f, FAKE_BUF), other_mac, 100);
    post(f, FAKE_TX_RING, 0, FAKE_BUF, 100);
    fake_wr(f, VRNIC_REG_ETH_TX_ARM, 0);
    fake_wr(f, VRNIC_REG_ETH_TX_PI, 1);
    fake_settle(f);
    ASSERT_EQ(1, f->nframes);
    ASSERT_EQ(100, f->frame_len[0]);
    ASSERT_EQ(0, memcmp(f->frames[0], fake_ptr(f, FAKE_BUF), 100));
    ASSERT_EQ(VRNIC_ETH_STS_DONE, le16toh(desc(f, FAKE_TX_RING, 0)->status));
    ASSERT_EQ(1, f->irqs[VRNIC_VEC_ETH]);
    /* Not re-armed: the next completion is silent. */
    post(f, FAKE_TX_RING, 1, FAKE_BUF, 60);
    fake_wr(f, VRNIC_REG_ETH_TX_PI, 2);
    fake_settle(f);
    ASSERT_EQ(2, f->nframes);
    ASSERT_EQ(1, f->irqs[VRNIC_VEC_ETH]);
    /* Arming behind the device's progress fires immediately. */
    fake_wr(f, VRNIC_REG_ETH_TX_ARM, 1);
    ASSERT_EQ(2, f->irqs[VRNIC_VEC_ETH]);
}

TEST_F(eth, tx_bad_length_or_buffer_completes_with_error)
{
    FakeBus *f = self->f;

    post(f, FAKE_TX_RING, 0, FAKE_BUF, 13);
    post(f, FAKE_TX_RING, 1, FAKE_BUF, 1500 + 19);
    post(f, FAKE_TX_RING, 2, FAKE_UNMAPPED, 100);
    post(f, FAKE_TX_RING, 3, FAKE_BUF, 1500 + 18);
    fake_wr(f, VRNIC_REG_ETH_TX_PI, 4);
    fake_settle(f);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(VRNIC_ETH_STS_DONE | VRNIC_ETH_STS_ERROR,
                  le16toh(desc(f, FAKE_TX_RING, i)->status));
    }
    ASSERT_EQ(VRNIC_ETH_STS_DONE, le16toh(desc(f, FAKE_TX_RING, 3)->status));
    ASSERT_EQ(1, f->nframes);
    ASSERT_EQ(3, f->core.stats.eth_tx_errors);
    ASSERT_FALSE(f->core.fatal);
}

TEST_F(eth, tx_unmapped_ring_is_fatal)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_ETH_TX_CFG, 0);
    fake_wr64(f, VRNIC_REG_ETH_TX_BASE_LO, FAKE_UNMAPPED);
    fake_wr(f, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | 2);
    fake_wr(f, VRNIC_REG_ETH_TX_PI, 1);
    fake_settle(f);
    ASSERT_TRUE(f->core.fatal);
    ASSERT_EQ(0, f->nframes);
}

TEST_F(eth, rx_writes_frame_and_length)
{
    FakeBus *f = self->f;
    uint8_t fr[200];

    /* No buffer yet: the frame waits in the device, the netdev goes on. */
    frame(fr, own_mac, sizeof(fr));
    vrnic_core_eth_receive(&f->core, fr, sizeof(fr));
    ASSERT_EQ(0, f->core.stats.eth_rx_frames);
    post(f, FAKE_RX_RING, 0, FAKE_BUF, 2048);
    fake_wr(f, VRNIC_REG_ETH_RX_ARM, 0);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 1);
    ASSERT_TRUE(f->pending[VRNIC_WORK_ETH_RX]);
    ASSERT_EQ(0, f->core.stats.eth_rx_frames);  /* no DMA in MMIO context */
    fake_settle(f);
    ASSERT_EQ(0, memcmp(fr, fake_ptr(f, FAKE_BUF), sizeof(fr)));
    ASSERT_EQ(sizeof(fr), le16toh(desc(f, FAKE_RX_RING, 0)->len));
    ASSERT_EQ(VRNIC_ETH_STS_DONE, le16toh(desc(f, FAKE_RX_RING, 0)->status));
    ASSERT_EQ(1, f->irqs[VRNIC_VEC_ETH]);
    ASSERT_EQ(1, f->core.stats.eth_rx_frames);
}

/*
 * Issue 13, hole 7: with the RX ring empty, the device used to ask the
 * netdev to hold the Ethernet frame (receive returned 0), and QEMU then
 * stops delivering anything to the device - the RoCEv2 frames behind it
 * too. Now frames wait in a bounded FIFO, in order, and beyond it are
 * dropped and counted; nothing is held back from the netdev.
 */
TEST_F(eth, rx_without_buffers_fifo_then_drop_in_order)
{
    FakeBus *f = self->f;
    uint8_t fr[100];

    for (unsigned i = 0; i < 40; i++) {
        frame(fr, own_mac, sizeof(fr));
        fr[20] = i;
        vrnic_core_eth_receive(&f->core, fr, sizeof(fr));
    }
    ASSERT_EQ(8, f->core.stats.port[VRNIC_PORT_STAT_ETH_RX_NO_BUF]);
    /* Four buffers: the four oldest frames, in order. */
    for (unsigned i = 0; i < 4; i++) {
        post(f, FAKE_RX_RING, i, FAKE_BUF + i * 2048, 2048);
    }
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 4);
    fake_settle(f);
    ASSERT_EQ(4, f->core.stats.eth_rx_frames);
    for (unsigned i = 0; i < 4; i++) {
        ASSERT_EQ(i, ((uint8_t *)fake_ptr(f, FAKE_BUF + i * 2048))[20]);
    }
    /* A new frame queues behind the 28 still waiting, never ahead. */
    frame(fr, own_mac, sizeof(fr));
    fr[20] = 0xee;
    vrnic_core_eth_receive(&f->core, fr, sizeof(fr));
    for (unsigned i = 0; i < 4; i++) {
        post(f, FAKE_RX_RING, i, FAKE_BUF + i * 2048, 2048);
    }
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 8);
    fake_settle(f);
    ASSERT_EQ(8, f->core.stats.eth_rx_frames);
    for (unsigned i = 0; i < 4; i++) {
        ASSERT_EQ(4 + i, ((uint8_t *)fake_ptr(f, FAKE_BUF + i * 2048))[20]);
    }
    /* A reset empties the FIFO: nothing of the old driver's comes out. */
    fake_wr(f, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    fake_wr64(f, VRNIC_REG_ETH_RX_BASE_LO, FAKE_RX_RING);
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, VRNIC_RING_CFG_ENABLE | 2);
    post(f, FAKE_RX_RING, 0, FAKE_BUF, 2048);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 1);
    fake_settle(f);
    ASSERT_EQ(8, f->core.stats.eth_rx_frames);
    ASSERT_EQ(0, desc(f, FAKE_RX_RING, 0)->status);
}

/* Frames waiting for buffers belong to the ring: disabling it drops them. */
TEST_F(eth, rx_ring_disable_empties_the_fifo)
{
    FakeBus *f = self->f;
    uint8_t fr[100];

    frame(fr, own_mac, sizeof(fr));
    vrnic_core_eth_receive(&f->core, fr, sizeof(fr));
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, 0);
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, VRNIC_RING_CFG_ENABLE | 2);
    post(f, FAKE_RX_RING, 0, FAKE_BUF, 2048);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 1);
    fake_settle(f);
    ASSERT_EQ(0, f->core.stats.eth_rx_frames);
    ASSERT_EQ(0, desc(f, FAKE_RX_RING, 0)->status);
}

/*
 * Issue 13, hole 4: a backend that queues frames (its peer stopped reading)
 * must not make the device hand it frame after frame - each a copy on the
 * host's heap. At VRNIC_WIRE_MAX_QUEUED the TX ring stops, the rest of its
 * descriptors stay posted, and the ring goes on as the backend drains.
 */
TEST_F(eth, tx_stops_while_the_wire_is_full)
{
    FakeBus *f = self->f;
    unsigned sent = 0;

    fake_wr(f, VRNIC_REG_ETH_TX_CFG, 0);
    fake_wr(f, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | 8);   /* 256 */
    frame(fake_ptr(f, FAKE_BUF), other_mac, 100);
    f->wire_stalled = true;
    for (unsigned i = 0; i < 200; i++) {
        struct vrnic_eth_desc *d = fake_ptr(f, FAKE_TX_RING +
                                            i * VRNIC_ETH_DESC_SIZE);

        memset(d, 0, sizeof(*d));
        d->addr = htole64(FAKE_BUF);
        d->len = htole16(100);
    }
    fake_wr(f, VRNIC_REG_ETH_TX_PI, 200);
    fake_settle(f);
    ASSERT_EQ(VRNIC_WIRE_MAX_QUEUED, f->nframes);
    ASSERT_EQ(VRNIC_WIRE_MAX_QUEUED, f->wire_queued);
    ASSERT_EQ(VRNIC_WIRE_MAX_QUEUED, f->core.eth_tx.ci);
    /* Stopped, not failed: the rest is still posted, nothing pending. */
    ASSERT_FALSE(f->pending[VRNIC_WORK_ETH_TX]);
    while (sent < 200) {
        unsigned before = f->nframes;

        fake_wire_drain(f);
        f->wire_stalled = true;
        fake_settle(f);
        ASSERT_LE(f->wire_queued, VRNIC_WIRE_MAX_QUEUED);
        ASSERT_GT(f->nframes, before);
        sent = f->nframes;
    }
    ASSERT_EQ(200, f->core.eth_tx.ci);
    ASSERT_EQ(0, f->core.stats.eth_tx_errors);
}

TEST_F(eth, rx_filters_and_drops)
{
    FakeBus *f = self->f;
    uint8_t fr[1600];
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    post(f, FAKE_RX_RING, 0, FAKE_BUF, 256);
    post(f, FAKE_RX_RING, 1, FAKE_BUF + 2048, 2048);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 2);
    /* Unicast for another MAC: filtered. */
    frame(fr, other_mac, 100);
    vrnic_core_eth_receive(&f->core, fr, 100);
    ASSERT_EQ(1, f->core.stats.eth_rx_filtered);
    /* Larger than the posted buffer: dropped, never truncated. */
    frame(fr, own_mac, 300);
    vrnic_core_eth_receive(&f->core, fr, 300);
    ASSERT_EQ(1, f->core.stats.eth_rx_too_big);
    ASSERT_EQ(0, desc(f, FAKE_RX_RING, 0)->status);
    /* Larger than MTU: dropped. */
    frame(fr, own_mac, 1519);
    vrnic_core_eth_receive(&f->core, fr, 1519);
    ASSERT_EQ(2, f->core.stats.eth_rx_too_big);
    /* Broadcast passes. */
    frame(fr, bcast, 60);
    vrnic_core_eth_receive(&f->core, fr, 60);
    ASSERT_EQ(1, f->core.stats.eth_rx_frames);
    /* Promiscuous: the other MAC passes too. */
    fake_wr(f, VRNIC_REG_ETH_CTRL, VRNIC_ETH_CTRL_PROMISC);
    frame(fr, other_mac, 100);
    vrnic_core_eth_receive(&f->core, fr, 100);
    ASSERT_EQ(2, f->core.stats.eth_rx_frames);
}

TEST_F(eth, rx_link_down_drops)
{
    FakeBus *f = self->f;
    uint8_t fr[64];

    post(f, FAKE_RX_RING, 0, FAKE_BUF, 2048);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 1);
    vrnic_core_set_link(&f->core, false);
    frame(fr, own_mac, sizeof(fr));
    vrnic_core_eth_receive(&f->core, fr, sizeof(fr));
    ASSERT_EQ(0, f->core.stats.eth_rx_frames);
}

TEST_F(eth, rx_unmapped_buffer_is_fatal)
{
    FakeBus *f = self->f;
    uint8_t fr[64];

    post(f, FAKE_RX_RING, 0, FAKE_UNMAPPED, 2048);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 1);
    frame(fr, own_mac, sizeof(fr));
    vrnic_core_eth_receive(&f->core, fr, sizeof(fr));
    ASSERT_TRUE(f->core.fatal);
    ASSERT_FALSE(f->core.eth_rx.live);
}

TEST_F(eth, arm_ahead_of_device_is_ignored)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_ETH_TX_ARM, 3);    /* nothing completed yet */
    ASSERT_EQ(1, f->core.stats.guest_errors);
    ASSERT_EQ(0, f->irqs[VRNIC_VEC_ETH]);
    ASSERT_FALSE(f->core.eth_tx_armed);
}

TEST_F(eth, refused_cfg_write_keeps_arm)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_ETH_RX_ARM, 0);
    ASSERT_TRUE(f->core.eth_rx_armed);
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, VRNIC_RING_CFG_ENABLE | 5);  /* refused */
    ASSERT_TRUE(f->core.eth_rx_armed);
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, 0);
    ASSERT_FALSE(f->core.eth_rx_armed);
}

TEST_F(eth, rx_producer_overrun_rejected)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_ETH_RX_PI, 5);
    ASSERT_EQ(0, f->core.eth_rx.pi);
    ASSERT_FALSE(f->pending[VRNIC_WORK_ETH_RX]);
    ASSERT_EQ(1, f->core.stats.guest_errors);
}

TEST_HARNESS_MAIN
