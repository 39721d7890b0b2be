/*
 * vrnic core: BAR0 register decode, ring programming, reset, doorbell BAR.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_bus.h"
#include "kselftest_harness.h"

FIXTURE(regs) {
    FakeBus *f;
};

FIXTURE_SETUP(regs)
{
    self->f = fake_new(NULL);
}

FIXTURE_TEARDOWN(regs)
{
    fake_free(self->f);
}

TEST_F(regs, identity_and_capabilities)
{
    FakeBus *f = self->f;
    uint32_t v;

    ASSERT_EQ(VRNIC_ID_MAGIC, fake_rd(f, VRNIC_REG_ID));
    v = fake_rd(f, VRNIC_REG_VERSION);
    ASSERT_EQ(VRNIC_VERSION_MAJOR, VRNIC_FIELD_GET(VRNIC_VERSION_MAJOR_MASK, v));
    v = fake_rd(f, VRNIC_REG_CAP_VEC);
    ASSERT_EQ(4, VRNIC_FIELD_GET(VRNIC_CAP_VEC_NUM_COMP_MASK, v));
    ASSERT_EQ(6, VRNIC_FIELD_GET(VRNIC_CAP_VEC_TOTAL_MASK, v));
    v = fake_rd(f, VRNIC_REG_CAP_DB);
    ASSERT_EQ(64, VRNIC_FIELD_GET(VRNIC_CAP_DB_NUM_PAGES_MASK, v));
    ASSERT_EQ(12, VRNIC_FIELD_GET(VRNIC_CAP_DB_PAGE_SHIFT_MASK, v));
    v = fake_rd(f, VRNIC_REG_CAP_AQ);
    ASSERT_EQ(5000, VRNIC_FIELD_GET(VRNIC_CAP_AQ_TIMEOUT_MS_MASK, v));
    ASSERT_EQ(VRNIC_AQ_MAX_LOG_DEPTH,
              VRNIC_FIELD_GET(VRNIC_CAP_AQ_LOG_DEPTH_MASK, v));
    v = fake_rd(f, VRNIC_REG_CAP_ETH);
    ASSERT_EQ(9000, VRNIC_FIELD_GET(VRNIC_CAP_ETH_MAX_MTU_MASK, v));
    ASSERT_EQ(0x12005452, fake_rd(f, VRNIC_REG_MAC_LO));
    ASSERT_EQ(0x5634, fake_rd(f, VRNIC_REG_MAC_HI));
    v = fake_rd(f, VRNIC_REG_DEV_STS);
    ASSERT_EQ(VRNIC_DEV_STS_READY | VRNIC_DEV_STS_LINK_UP, v);
    ASSERT_EQ(0, f->core.stats.guest_errors);
}

TEST_F(regs, config_properties_reflected)
{
    VrnicConfig c = fake_default_config();
    FakeBus *g;

    c.num_comp_vectors = 9;
    c.db_pages = 256;
    g = fake_new(&c);
    ASSERT_EQ(9, VRNIC_FIELD_GET(VRNIC_CAP_VEC_NUM_COMP_MASK,
                                 fake_rd(g, VRNIC_REG_CAP_VEC)));
    ASSERT_EQ(11, VRNIC_FIELD_GET(VRNIC_CAP_VEC_TOTAL_MASK,
                                  fake_rd(g, VRNIC_REG_CAP_VEC)));
    ASSERT_EQ(256, VRNIC_FIELD_GET(VRNIC_CAP_DB_NUM_PAGES_MASK,
                                   fake_rd(g, VRNIC_REG_CAP_DB)));
    fake_free(g);
}

TEST(config_validation)
{
    VrnicConfig c = fake_default_config();

    ASSERT_EQ(NULL, vrnic_core_check_config(&c));
    c.num_comp_vectors = 3;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.num_comp_vectors = VRNIC_MAX_COMP_VECTORS + 1;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.db_pages = 48;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.gid_tbl_len = VRNIC_MAX_GID_TBL_LEN + 1;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.mac[0] = 0x01;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.max_mtu = 9001;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.max_cqe = 777;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.max_qp = 0;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
    c = fake_default_config();
    c.speed_mbps = 0;
    ASSERT_NE(NULL, vrnic_core_check_config(&c));
}

TEST(reset_mtu_never_above_max_mtu)
{
    VrnicConfig c = fake_default_config();
    FakeBus *g;

    c.max_mtu = 1280;
    g = fake_new(&c);
    ASSERT_EQ(1280, g->core.mtu);
    fake_free(g);
}

TEST_F(regs, read_only_and_unknown_writes_are_guest_errors)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_ID, 0xdeadbeef);
    ASSERT_EQ(VRNIC_ID_MAGIC, fake_rd(f, VRNIC_REG_ID));
    ASSERT_EQ(1, f->core.stats.guest_errors);
    fake_wr(f, VRNIC_REG_CAP_VEC, 0);
    fake_wr(f, 0xffc, 1);
    ASSERT_EQ(3, f->core.stats.guest_errors);
    ASSERT_EQ(0, fake_rd(f, 0xffc));
    fake_wr(f, VRNIC_REG_DEV_CTRL, 0x2);
    ASSERT_EQ(4, f->core.stats.guest_errors);
    fake_wr(f, VRNIC_REG_ETH_CTRL, 0x4);
    ASSERT_EQ(5, f->core.stats.guest_errors);
}

TEST_F(regs, ring_enable_validates_depth_and_base)
{
    FakeBus *f = self->f;

    /* Zero base: refused. */
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 4);
    ASSERT_FALSE(f->core.aeq.live);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_AEQ_CFG) & VRNIC_RING_CFG_ENABLE);
    /* Unaligned base: refused. */
    fake_wr64(f, VRNIC_REG_AEQ_BASE_LO, FAKE_AEQ + 8);
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 4);
    ASSERT_FALSE(f->core.aeq.live);
    /* Depth 0 and above the maximum: refused. */
    fake_wr64(f, VRNIC_REG_AEQ_BASE_LO, FAKE_AEQ);
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 0);
    ASSERT_FALSE(f->core.aeq.live);
    fake_wr(f, VRNIC_REG_AEQ_CFG,
            VRNIC_RING_CFG_ENABLE | (VRNIC_AEQ_MAX_LOG_DEPTH + 1));
    ASSERT_FALSE(f->core.aeq.live);
    /* IRQ_EN is an AQ-only bit. */
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE |
            VRNIC_RING_CFG_IRQ_EN | 4);
    ASSERT_FALSE(f->core.aeq.live);
    ASSERT_EQ(5, f->core.stats.guest_errors);
    /* Valid. */
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 4);
    ASSERT_TRUE(f->core.aeq.live);
    ASSERT_EQ(16, 1u << f->core.aeq.log_depth);
    ASSERT_EQ(VRNIC_RING_CFG_ENABLE | 4, fake_rd(f, VRNIC_REG_AEQ_CFG));
    /* Base and depth cannot change while live. */
    fake_wr64(f, VRNIC_REG_AEQ_BASE_LO, FAKE_AEQ + 0x1000);
    ASSERT_EQ(FAKE_AEQ, f->core.aeq.base);
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 5);
    ASSERT_EQ(16, 1u << f->core.aeq.log_depth);
    /* Disable returns the ring to idle. */
    fake_wr(f, VRNIC_REG_AEQ_CFG, 0);
    ASSERT_FALSE(f->core.aeq.live);
}

TEST_F(regs, doorbell_on_idle_ring_is_ignored)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_AQ_PI, 1);
    fake_wr(f, VRNIC_REG_ETH_TX_PI, 1);
    fake_wr(f, VRNIC_REG_ETH_RX_PI, 1);
    fake_settle(f);
    ASSERT_EQ(3, f->core.stats.guest_errors);
    ASSERT_EQ(0, f->core.stats.aq_cmds);
    ASSERT_FALSE(f->pending[VRNIC_WORK_ETH_RX]);
}

TEST_F(regs, doorbell_bar_without_queues_is_guest_error)
{
    FakeBus *f = self->f;

    vrnic_core_db_write(&f->core, 0x1000, 5);
    ASSERT_EQ(1, f->core.stats.guest_errors);
}

TEST_F(regs, reset_returns_everything_to_idle)
{
    FakeBus *f = self->f;
    uint8_t cmd[VRNIC_AQ_CMD_SIZE] = {};
    struct vrnic_aq_gid *g = (void *)cmd;

    fake_aq_enable(f, 3);
    fake_aeq_enable(f, 3);
    fake_wr64(f, VRNIC_REG_ETH_TX_BASE_LO, FAKE_TX_RING);
    fake_wr(f, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | 4);
    fake_wr64(f, VRNIC_REG_ETH_RX_BASE_LO, FAKE_RX_RING);
    fake_wr(f, VRNIC_REG_ETH_RX_CFG, VRNIC_RING_CFG_ENABLE | 4);
    g->hdr.opcode = htole16(VRNIC_AQ_OP_ADD_GID);
    g->type = htole32(VRNIC_GID_TYPE_ROCE_V2);
    g->gid[0] = 0xfe;
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, cmd)->status);
    ASSERT_TRUE(f->core.gids[0].type);

    fake_wr(f, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_AQ_CFG) & VRNIC_RING_CFG_ENABLE);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_AEQ_CFG) & VRNIC_RING_CFG_ENABLE);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_ETH_TX_CFG) & VRNIC_RING_CFG_ENABLE);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_ETH_RX_CFG) & VRNIC_RING_CFG_ENABLE);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_AQ_SQ_BASE_LO));
    ASSERT_FALSE(f->core.gids[0].type);
    ASSERT_EQ(1500, f->core.mtu);
    ASSERT_EQ(0, fake_rd(f, VRNIC_REG_DEV_CTRL));
    /* The link is the wire's, not the driver's: it survives reset. */
    ASSERT_TRUE(fake_rd(f, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_LINK_UP);
}

TEST_HARNESS_MAIN
