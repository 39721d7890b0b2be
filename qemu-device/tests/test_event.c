/*
 * vrnic core: async event queue (link events, arming, overflow).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_bus.h"
#include "kselftest_harness.h"

FIXTURE(aeq) {
    FakeBus *f;
};

FIXTURE_SETUP(aeq)
{
    self->f = fake_new(NULL);
    fake_aeq_enable(self->f, 2);
}

FIXTURE_TEARDOWN(aeq)
{
    fake_free(self->f);
}

/* A link change as the netdev reports it, then the device's bottom half. */
static void set_link(FakeBus *f, bool up)
{
    vrnic_core_set_link(&f->core, up);
    fake_settle(f);
}

static struct vrnic_aeqe *aeqe(FakeBus *f, unsigned i)
{
    return fake_ptr(f, FAKE_AEQ + (i % 4) * VRNIC_AEQE_SIZE);
}

TEST_F(aeq, link_change_posts_event_irq_only_when_armed)
{
    FakeBus *f = self->f;

    set_link(f, false);
    ASSERT_EQ(VRNIC_AEQ_EV_PORT_DOWN, le32toh(aeqe(f, 0)->event));
    ASSERT_EQ(1, le32toh(aeqe(f, 0)->data));
    ASSERT_EQ(VRNIC_OWNER_PHASE, le32toh(aeqe(f, 0)->owner));
    ASSERT_EQ(0, f->irqs[VRNIC_VEC_ADMIN]);
    ASSERT_FALSE(fake_rd(f, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_LINK_UP);

    /* Arming with an unread event pending fires at once. */
    fake_wr(f, VRNIC_REG_AEQ_CI, 0 | VRNIC_AEQ_CI_ARM);
    ASSERT_EQ(1, f->irqs[VRNIC_VEC_ADMIN]);
    /* Consumed and armed: the next event fires, exactly once. */
    fake_wr(f, VRNIC_REG_AEQ_CI, 1 | VRNIC_AEQ_CI_ARM);
    ASSERT_EQ(1, f->irqs[VRNIC_VEC_ADMIN]);
    set_link(f, true);
    ASSERT_EQ(VRNIC_AEQ_EV_PORT_ACTIVE, le32toh(aeqe(f, 1)->event));
    ASSERT_EQ(2, f->irqs[VRNIC_VEC_ADMIN]);
    set_link(f, false);
    ASSERT_EQ(2, f->irqs[VRNIC_VEC_ADMIN]);
    /* The same state twice is not an event; a flap within one bottom-half
     * run is not either. */
    vrnic_core_set_link(&f->core, true);
    vrnic_core_set_link(&f->core, false);
    fake_settle(f);
    set_link(f, false);
    ASSERT_EQ(3, f->core.aeq.pi);
}

TEST_F(aeq, overflow_drops_and_counts)
{
    FakeBus *f = self->f;

    for (int i = 0; i < 6; i++) {
        set_link(f, i % 2);
    }
    ASSERT_EQ(4, f->core.aeq.pi);
    ASSERT_EQ(2, f->core.stats.aeq_overflows);
    /* After the driver consumes, events flow again with phase 0. */
    fake_wr(f, VRNIC_REG_AEQ_CI, 4);
    set_link(f, false);
    ASSERT_EQ(0, le32toh(aeqe(f, 4)->owner));
    ASSERT_EQ(VRNIC_AEQ_EV_PORT_DOWN, le32toh(aeqe(f, 4)->event));
}

TEST_F(aeq, consumer_index_cannot_pass_producer)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_AEQ_CI, 3);
    ASSERT_EQ(0, f->core.aeq.ci);
    ASSERT_EQ(1, f->core.stats.guest_errors);
    fake_wr(f, VRNIC_REG_AEQ_CI, 0x40000000);
    ASSERT_EQ(2, f->core.stats.guest_errors);
}

TEST(unmapped_aeq_is_fatal)
{
    FakeBus *f = fake_new(NULL);

    fake_wr64(f, VRNIC_REG_AEQ_BASE_LO, FAKE_UNMAPPED);
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | 2);
    set_link(f, false);
    ASSERT_TRUE(fake_rd(f, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_FATAL);
    fake_free(f);
}

TEST_HARNESS_MAIN
