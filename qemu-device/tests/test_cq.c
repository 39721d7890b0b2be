/*
 * vrnic core: completion EQs and CQs - EQE on the right vector, CQE phase,
 * overflow (CQ_ERR, nothing past the end), arm next/solicited and the
 * missed-event rule, arm doorbell checks, resize, limits, timestamp CQs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "obj_helpers.h"
#include "kselftest_harness.h"

FIXTURE(cq) {
    FakeBus *f;
    uint32_t eqn;   /* on vector 4 */
};

FIXTURE_SETUP(cq)
{
    self->f = obj_bus(NULL);
    self->eqn = create_eq(self->f, 4, 3);
    ASSERT_EQ(3, self->eqn);
}

FIXTURE_TEARDOWN(cq)
{
    fake_free(self->f);
}

static struct vrnic_eqe *eqe_at(FakeBus *f, uint32_t eqn, unsigned i)
{
    return fake_ptr(f, eq_ring(f, eqn) + (i % 8) * VRNIC_EQE_SIZE);
}

TEST_F(cq, eq_create_checks)
{
    FakeBus *f = self->f;
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_EQ);
    c.eq.ring_addr = htole64(obj_alloc(f, 4096, 64));
    c.eq.log_depth = htole32(2);
    c.eq.vector = htole32(VRNIC_VEC_ETH);               /* not a comp vector */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.vector = htole32(6);                           /* total = 6 */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.vector = htole32(4);                           /* taken */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, run(f, &c, NULL));
    c.eq.vector = htole32(2);
    c.eq.log_depth = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.log_depth = htole32(VRNIC_EQ_MAX_LOG_DEPTH + 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.log_depth = htole32(2);
    c.eq.ring_addr = htole64(le64toh(c.eq.ring_addr) + 32);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.ring_addr = htole64(~0ull & ~63ull);           /* would wrap */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.ring_addr = htole64(obj_alloc(f, 4096, 64));
    c.eq.rsvd0[0] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.eq.rsvd0[0] = 0;
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    ASSERT_EQ(1, r);                                    /* eqn = vector - 1 */
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_EQ, 1));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DESTROY_EQ, 1));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DESTROY_EQ, 5));
}

TEST_F(cq, cqe_phase_and_eqe_on_the_right_vector)
{
    FakeBus *f = self->f;
    uint64_t ring;
    uint32_t cqn = create_cq(f, self->eqn, 1, 0, &ring);
    struct vrnic_eqe *e;

    ASSERT_EQ(1, cqn);
    fake_wr(f, VRNIC_REG_EQ_CI(self->eqn), VRNIC_AEQ_CI_ARM);
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 0);
    ASSERT_TRUE(post_cqe(f, cqn, 0x1111, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0x1111, le64toh(cqe_at(f, ring, 1, 0)->wr_id));
    ASSERT_EQ(VRNIC_CQE_INFO_PHASE, le32toh(cqe_at(f, ring, 1, 0)->info));
    e = eqe_at(f, self->eqn, 0);
    ASSERT_EQ(cqn, le32toh(e->cqn));
    ASSERT_EQ(VRNIC_OWNER_PHASE, le32toh(e->owner));
    ASSERT_EQ(1, f->irqs[4]);
    for (int v = 0; v < 6; v++) {
        if (v != 4 && v != VRNIC_VEC_ADMIN) {
            ASSERT_EQ(0, f->irqs[v]);
        }
    }
    /* Phase flips on the wrap (depth 2): the 3rd CQE is slot 0, phase 0. */
    cq_set_ci(f, ring, 1, 1);
    ASSERT_TRUE(post_cqe(f, cqn, 0x2222, VRNIC_WC_SUCCESS, 0));
    cq_set_ci(f, ring, 1, 2);
    ASSERT_TRUE(post_cqe(f, cqn, 0x3333, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0x3333, le64toh(cqe_at(f, ring, 1, 2)->wr_id));
    ASSERT_EQ(0, le32toh(cqe_at(f, ring, 1, 2)->info));
    /* One event per arm: no second EQE. */
    ASSERT_EQ(1, f->core.obj.eqs[self->eqn].pi);
}

static uint8_t modify_cq(FakeBus *f, uint32_t cqn, uint16_t count,
                         uint16_t period_us)
{
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_MODIFY_CQ);
    c.mod_cq.handle = htole32(cqn);
    c.mod_cq.count = htole16(count);
    c.mod_cq.period_us = htole16(period_us);
    return run(f, &c, NULL);
}

/*
 * MODIFY_CQ: an ARM_NEXT event waits for count CQEs or period_us after the
 * first, whichever comes first; error CQEs, solicited arms and the
 * missed-event rule are not delayed.
 */
TEST_F(cq, moderation_by_count_or_period)
{
    FakeBus *f = self->f;
    uint16_t *eq_pi = &f->core.obj.eqs[self->eqn].pi;
    uint64_t ring;
    uint32_t cqn = create_cq(f, self->eqn, 4, 0, &ring);
    int64_t t0;

    ASSERT_EQ(VRNIC_AQ_STS_OK, modify_cq(f, cqn, 4, 100));
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 0);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(post_cqe(f, cqn, i, VRNIC_WC_SUCCESS, 0));
    }
    ASSERT_EQ(0, *eq_pi);
    ASSERT_TRUE(post_cqe(f, cqn, 3, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(1, *eq_pi);                   /* the 4th: count reached */
    ASSERT_EQ(0, f->core.obj.cqs_waiting);

    /* One CQE alone: due 100 us after it. */
    cq_set_ci(f, ring, 4, 4);
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 4);
    t0 = f->now_ns;
    ASSERT_TRUE(post_cqe(f, cqn, 4, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(1, *eq_pi);
    ASSERT_TRUE(fake_fire_timer(f));
    ASSERT_EQ(2, *eq_pi);
    ASSERT_EQ(cqn, le32toh(eqe_at(f, self->eqn, 1)->cqn));
    ASSERT_EQ(t0 + 100000, f->now_ns);
    ASSERT_TRUE(post_cqe(f, cqn, 5, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(2, *eq_pi);                   /* one event per arm */

    /* An error CQE is never delayed. */
    cq_set_ci(f, ring, 4, 6);
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 6);
    ASSERT_TRUE(post_cqe(f, cqn, 6, VRNIC_WC_SUCCESS, 0));
    ASSERT_TRUE(post_cqe(f, cqn, 7, VRNIC_WC_LOC_PROT_ERR, 0));
    ASSERT_EQ(3, *eq_pi);
    ASSERT_EQ(0, f->core.obj.cqs_waiting);

    /* Nor is a solicited arm, nor an arm that finds CQEs unread. */
    cq_set_ci(f, ring, 4, 8);
    db(f, 0, VRNIC_DB_CQ_ARM_SOLICITED, cqn, 8);
    ASSERT_TRUE(post_cqe(f, cqn, 8, VRNIC_WC_SUCCESS,
                         VRNIC_CQE_FLAG_SOLICITED));
    ASSERT_EQ(4, *eq_pi);
    ASSERT_TRUE(post_cqe(f, cqn, 9, VRNIC_WC_SUCCESS, 0));
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 8);
    fake_settle(f);
    ASSERT_EQ(5, *eq_pi);

    /* Back to one event per CQE. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, modify_cq(f, cqn, 0, 0));
    cq_set_ci(f, ring, 4, 10);
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 10);
    ASSERT_TRUE(post_cqe(f, cqn, 10, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(6, *eq_pi);
}

TEST_F(cq, moderation_checks_and_destroy_while_waiting)
{
    FakeBus *f = self->f;
    uint16_t *eq_pi = &f->core.obj.eqs[self->eqn].pi;
    uint32_t cqn = create_cq(f, self->eqn, 4, 0, NULL);
    AnyCmd c;

    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_cq(f, cqn, 8, 0));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, modify_cq(f, cqn + 1, 8, 10));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, modify_cq(f, 0, 8, 10));
    cmd_init(&c, VRNIC_AQ_OP_MODIFY_CQ);
    c.mod_cq.handle = htole32(cqn);
    c.mod_cq.rsvd0[5] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    /* A period alone, the largest. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, modify_cq(f, cqn, 0, 0xffff));
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 0);
    ASSERT_TRUE(post_cqe(f, cqn, 1, VRNIC_WC_SUCCESS, 0));
    ASSERT_TRUE(post_cqe(f, cqn, 2, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0, *eq_pi);
    ASSERT_EQ(1, f->core.obj.cqs_waiting);
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, cqn));
    ASSERT_EQ(0, f->core.obj.cqs_waiting);
    fake_fire_timer(f);
    ASSERT_EQ(0, *eq_pi);
    /* A reset forgets waits too. */
    cqn = create_cq(f, self->eqn, 4, 0, NULL);
    ASSERT_EQ(VRNIC_AQ_STS_OK, modify_cq(f, cqn, 0, 10));
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 0);
    ASSERT_TRUE(post_cqe(f, cqn, 1, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(1, f->core.obj.cqs_waiting);
    vrnic_core_reset(&f->core);
    ASSERT_EQ(0, f->core.obj.cqs_waiting);
}

TEST_F(cq, overflow_stops_cq_posts_cq_err_once)
{
    FakeBus *f = self->f;
    uint64_t ring;
    uint32_t cqn = create_cq(f, self->eqn, 2, 0, &ring);
    AnyCmd c;

    for (int i = 0; i < 4; i++) {
        ASSERT_TRUE(post_cqe(f, cqn, i, VRNIC_WC_SUCCESS, 0));
    }
    /* Full (consumer still at 0): the 5th overruns. */
    ASSERT_FALSE(post_cqe(f, cqn, 4, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0, le64toh(cqe_at(f, ring, 2, 0)->wr_id));    /* not overwritten */
    ASSERT_EQ(VRNIC_CQE_INFO_PHASE, le32toh(cqe_at(f, ring, 2, 0)->info));
    ASSERT_EQ(VRNIC_AEQ_EV_CQ_ERR, le32toh(aeqe_at(f, 0)->event));
    ASSERT_EQ(cqn, le32toh(aeqe_at(f, 0)->data));
    ASSERT_EQ(1, f->core.stats.cq_overflows);
    /* Stopped for good: even after the consumer catches up. */
    cq_set_ci(f, ring, 2, 4);
    ASSERT_FALSE(post_cqe(f, cqn, 5, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(1, f->core.aeq.pi);
    /* A stopped CQ cannot be resized; it can be destroyed. */
    cmd_init(&c, VRNIC_AQ_OP_RESIZE_CQ);
    c.cq.handle = htole32(cqn);
    c.cq.log_depth = htole32(3);
    mem_inline(&c.cq.mem, obj_alloc(f, 4096, 4096), 8 * 32 + 64);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, cqn));
}

TEST_F(cq, bogus_dbrec_or_unmapped_ring_is_cq_error)
{
    FakeBus *f = self->f;
    uint64_t ring;
    uint32_t cqn = create_cq(f, self->eqn, 2, 0, &ring);
    AnyCmd c;
    uint64_t r;

    cq_set_ci(f, ring, 2, 7);   /* ahead of the producer (0) */
    ASSERT_FALSE(post_cqe(f, cqn, 1, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(VRNIC_AEQ_EV_CQ_ERR, le32toh(aeqe_at(f, 0)->event));
    /* A CQ whose dbrec page is not mapped: depth 128 = one full page of
     * CQEs, dbrec on the second page, which points at nothing. */
    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(self->eqn);
    c.cq.log_depth = htole32(7);
    mem_inline(&c.cq.mem, obj_alloc(f, 4096, 4096), 4096 + 64);
    c.cq.mem.pages[1] = htole64(FAKE_UNMAPPED);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    ASSERT_FALSE(post_cqe(f, r, 1, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(VRNIC_AEQ_EV_CQ_ERR, le32toh(aeqe_at(f, 1)->event));
    ASSERT_EQ(r, le32toh(aeqe_at(f, 1)->data));
    ASSERT_FALSE(f->core.fatal);
}

TEST_F(cq, arm_solicited_fires_on_solicited_or_error_only)
{
    FakeBus *f = self->f;
    uint64_t ring;
    uint32_t cqn = create_cq(f, self->eqn, 3, 0, &ring);
    VrnicEq *eq = &f->core.obj.eqs[self->eqn];

    db(f, 0, VRNIC_DB_CQ_ARM_SOLICITED, cqn, 0);
    ASSERT_TRUE(post_cqe(f, cqn, 1, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0, eq->pi);
    ASSERT_TRUE(post_cqe(f, cqn, 2, VRNIC_WC_SUCCESS,
                         VRNIC_CQE_FLAG_SOLICITED));
    ASSERT_EQ(1, eq->pi);
    cq_set_ci(f, ring, 3, 2);
    db(f, 0, VRNIC_DB_CQ_ARM_SOLICITED, cqn, 2);
    ASSERT_TRUE(post_cqe(f, cqn, 3, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(1, eq->pi);
    ASSERT_TRUE(post_cqe(f, cqn, 4, VRNIC_WC_WR_FLUSH_ERR, 0));
    ASSERT_EQ(2, eq->pi);
    /* ARM_NEXT after ARM_SOLICITED upgrades it. */
    cq_set_ci(f, ring, 3, 4);
    db(f, 0, VRNIC_DB_CQ_ARM_SOLICITED, cqn, 4);
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 4);
    ASSERT_TRUE(post_cqe(f, cqn, 5, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(3, eq->pi);
    /* Not armed: no event. */
    ASSERT_TRUE(post_cqe(f, cqn, 6, VRNIC_WC_SUCCESS, VRNIC_CQE_FLAG_SOLICITED));
    ASSERT_EQ(3, eq->pi);
}

TEST_F(cq, missed_event_rule)
{
    FakeBus *f = self->f;
    uint64_t ring;
    uint32_t cqn = create_cq(f, self->eqn, 3, 0, &ring);
    VrnicEq *eq = &f->core.obj.eqs[self->eqn];

    /* A CQE lands while nobody is armed. */
    ASSERT_TRUE(post_cqe(f, cqn, 1, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0, eq->pi);
    /* The consumer arms having seen nothing (ci 0): the event is due at
     * once - written from the bottom half, not the MMIO handler. */
    fake_wr(f, VRNIC_REG_EQ_CI(self->eqn), VRNIC_AEQ_CI_ARM);
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 0);
    ASSERT_EQ(0, eq->pi);
    ASSERT_TRUE(f->pending[VRNIC_WORK_QUEUES]);
    fake_settle(f);
    ASSERT_EQ(1, eq->pi);
    ASSERT_EQ(cqn, le32toh(eqe_at(f, self->eqn, 0)->cqn));
    ASSERT_EQ(1, f->irqs[4]);
    /* Arming at the producer (ci 1, everything seen): waits for the next. */
    db(f, 0, VRNIC_DB_CQ_ARM_SOLICITED, cqn, 1);
    fake_settle(f);
    ASSERT_EQ(1, eq->pi);
    /* Same rule for ARM_SOLICITED with unseen CQEs. */
    ASSERT_TRUE(post_cqe(f, cqn, 2, VRNIC_WC_SUCCESS, 0));
    db(f, 0, VRNIC_DB_CQ_ARM_SOLICITED, cqn, 1);
    fake_settle(f);
    ASSERT_EQ(2, eq->pi);
    /* EQ not re-armed by the driver: EQE written, no interrupt. */
    ASSERT_EQ(1, f->irqs[4]);
    /* EQ_CI arm with unread EQEs interrupts at once. */
    fake_wr(f, VRNIC_REG_EQ_CI(self->eqn), 1 | VRNIC_AEQ_CI_ARM);
    ASSERT_EQ(2, f->irqs[4]);
}

/*
 * perftest -e re-arms after each event before it polls: the CQE that fired
 * the event is unread then, but announced, so the arm must wait for the
 * next CQE - a stale event would make perftest poll an empty CQ.
 */
TEST_F(cq, rearm_before_poll_waits_for_the_next_cqe)
{
    FakeBus *f = self->f;
    uint32_t cqn = create_cq(f, self->eqn, 3, 0, NULL);
    VrnicEq *eq = &f->core.obj.eqs[self->eqn];

    for (uint16_t i = 0; i < 4; i++) {
        db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, i);
        fake_settle(f);
        ASSERT_EQ(i, eq->pi);
        ASSERT_TRUE(post_cqe(f, cqn, i, VRNIC_WC_SUCCESS, 0));
        ASSERT_EQ(i + 1, eq->pi);
        /* Re-armed with that CQE unread (ci i): no event. */
        db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, i);
        fake_settle(f);
        ASSERT_EQ(i + 1, eq->pi);
    }
    /* A CQE written while disarmed after the last event is told of. */
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 4);
    ASSERT_TRUE(post_cqe(f, cqn, 4, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(5, eq->pi);
    ASSERT_TRUE(post_cqe(f, cqn, 5, VRNIC_WC_SUCCESS, 0));
    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, 4);
    fake_settle(f);
    ASSERT_EQ(6, eq->pi);
}

TEST_F(cq, arm_doorbell_and_eq_ci_checks)
{
    FakeBus *f = self->f;
    uint32_t user = create_cq(f, self->eqn, 2, 5, NULL);   /* page 5's CQ */
    uint64_t errs = f->core.stats.guest_errors;

    db(f, 0, VRNIC_DB_CQ_ARM_NEXT, user, 0);        /* kernel page */
    db(f, 6, VRNIC_DB_CQ_ARM_NEXT, user, 0);        /* another process */
    ASSERT_EQ(VRNIC_CQ_ARM_NONE, f->core.obj.cqs[user].arm);
    db(f, 5, VRNIC_DB_CQ_ARM_NEXT, 99, 0);          /* no such CQ */
    db(f, 5, VRNIC_DB_CQ_ARM_NEXT, user, 9);        /* ci past producer */
    db(f, 5, 0x14, user, 0);                        /* no doorbell there */
    vrnic_core_db_write(&f->core, 64 * 4096, user); /* past BAR2 */
    ASSERT_EQ(errs + 6, f->core.stats.guest_errors);
    ASSERT_EQ(VRNIC_CQ_ARM_NONE, f->core.obj.cqs[user].arm);
    db(f, 5, VRNIC_DB_CQ_ARM_NEXT, user, 0);
    ASSERT_EQ(VRNIC_CQ_ARM_NEXT, f->core.obj.cqs[user].arm);
    /* EQ_CI: unknown EQ, reserved bits, ci past producer. */
    fake_wr(f, VRNIC_REG_EQ_CI(1), VRNIC_AEQ_CI_ARM);
    fake_wr(f, VRNIC_REG_EQ_CI(self->eqn), 0x10000);
    fake_wr(f, VRNIC_REG_EQ_CI(self->eqn), 3);
    fake_wr(f, VRNIC_REG_EQ_CI(5), 0);              /* past num_comp */
    ASSERT_EQ(errs + 10, f->core.stats.guest_errors);
    ASSERT_FALSE(f->core.obj.eqs[self->eqn].armed);
}

TEST_F(cq, eq_overflow_loses_events_and_counts)
{
    FakeBus *f = self->f;
    uint32_t cqn = create_cq(f, self->eqn, 5, 0, NULL);

    /* EQ depth 8: 9 armed CQEs -> 8 EQEs, 1 lost. */
    for (int i = 0; i < 9; i++) {
        db(f, 0, VRNIC_DB_CQ_ARM_NEXT, cqn, i);
        ASSERT_TRUE(post_cqe(f, cqn, i, VRNIC_WC_SUCCESS, 0));
    }
    ASSERT_EQ(8, f->core.obj.eqs[self->eqn].pi);
    ASSERT_EQ(1, f->core.stats.eq_overflows);
}

TEST_F(cq, resize_copies_unconsumed_cqes)
{
    FakeBus *f = self->f;
    uint64_t ring, nring = obj_alloc(f, 4096, 4096);
    uint32_t cqn = create_cq(f, self->eqn, 2, 0, &ring);
    AnyCmd c;

    for (int i = 0; i < 4; i++) {
        ASSERT_TRUE(post_cqe(f, cqn, 0x100 + i, VRNIC_WC_SUCCESS, 0));
    }
    cq_set_ci(f, ring, 2, 1);           /* 3 unconsumed */
    memset(fake_ptr(f, nring), 0xee, 4096);
    cmd_init(&c, VRNIC_AQ_OP_RESIZE_CQ);
    c.cq.handle = htole32(cqn);
    c.cq.log_depth = htole32(1);        /* 2 slots: does not fit */
    mem_inline(&c.cq.mem, nring, 2 * 32 + 64);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ASSERT_EQ(2, f->core.obj.cqs[cqn].log_depth);
    c.cq.log_depth = htole32(3);
    mem_inline(&c.cq.mem, nring, 8 * 32 + 32);  /* too short for dbrec */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    mem_inline(&c.cq.mem, nring, 8 * 32 + 64);
    c.cq.handle = htole32(cqn + 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &c, NULL));
    c.cq.handle = htole32(cqn);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(0x101 + i, le64toh(cqe_at(f, nring, 3, i)->wr_id));
        ASSERT_EQ(VRNIC_CQE_INFO_PHASE, le32toh(cqe_at(f, nring, 3, i)->info));
    }
    ASSERT_EQ(0, *(uint32_t *)fake_ptr(f, nring + 8 * 32));  /* dbrec.ci */
    ASSERT_TRUE(post_cqe(f, cqn, 0x200, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0x200, le64toh(cqe_at(f, nring, 3, 3)->wr_id));
    ASSERT_EQ(4, f->core.obj.cqs[cqn].pi);
}

TEST_F(cq, create_checks_and_limits)
{
    VrnicConfig cfg = fake_default_config();
    FakeBus *f = self->f, *g;
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(self->eqn);
    c.cq.log_depth = htole32(16);       /* > 15 and > log2(max_cqe) */
    mem_inline(&c.cq.mem, obj_alloc(f, 4096, 4096), 4096);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.cq.log_depth = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.cq.log_depth = htole32(2);
    c.cq.eqn = htole32(1);              /* no EQ on vector 2 */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &c, NULL));
    c.cq.eqn = htole32(self->eqn);
    c.cq.uctx = htole32(64);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.cq.uctx = 0;
    c.cq.handle = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.cq.handle = 0;
    c.cq.rsvd0[27] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.cq.rsvd0[27] = 0;
    c.cq.mem.iova = htole64(le64toh(c.cq.mem.iova) + 32);  /* unaligned */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ASSERT_EQ(0, f->core.obj.n_cqs);
    /* The EQ with a CQ cannot go. */
    ASSERT_NE(0, create_cq(f, self->eqn, 2, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DESTROY_EQ,
                                              self->eqn));

    cfg.max_cq = 3;
    g = obj_bus(&cfg);
    ASSERT_EQ(1, create_eq(g, 2, 2));
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(i + 1, create_cq(g, 1, 1, 0, NULL));
    }
    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(1);
    c.cq.log_depth = htole32(1);
    mem_inline(&c.cq.mem, obj_alloc(g, 4096, 4096), 128);
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, run(g, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(g, VRNIC_AQ_OP_DESTROY_CQ, 2));
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(g, &c, NULL));
    fake_free(g);
}

/* CREATE_CQ with VRNIC_CQ_FLAG_TIMESTAMP: 64-byte CQEs; *ring its address. */
static uint32_t create_ts_cq(FakeBus *f, uint32_t eqn, uint32_t log_depth,
                             uint64_t len, uint64_t *ring, uint8_t *sts)
{
    uint64_t a = obj_alloc(f, vrnic_cq_ring_len(VRNIC_CQ_FLAG_TIMESTAMP,
                                                log_depth), 4096);
    AnyCmd c;
    uint64_t r = 0;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(eqn);
    c.cq.log_depth = htole32(log_depth);
    c.cq.flags = htole32(VRNIC_CQ_FLAG_TIMESTAMP);
    mem_inline(&c.cq.mem, a, len);
    *sts = run(f, &c, &r);
    *ring = a;
    return r;
}

static struct vrnic_cqe_ts *ts_cqe_at(FakeBus *f, uint64_t ring,
                                      uint32_t log_depth, uint32_t idx)
{
    return fake_ptr(f, ring + ((idx & ((1u << log_depth) - 1)) <<
                               VRNIC_CQE_TS_SHIFT));
}

/*
 * A timestamp CQ: 64-byte CQEs with the device clock in the second half,
 * the phase in the same place, the doorbell record after 2^n x 64 bytes;
 * its ring must be long enough for that; reserved flags are refused.
 */
TEST_F(cq, timestamp_cqes)
{
    FakeBus *f = self->f;
    uint64_t ring;
    uint32_t cqn;
    uint8_t sts;
    AnyCmd c;

    /* A ring sized for 32-byte CQEs is too short. */
    create_ts_cq(f, self->eqn, 2, 4 * 32 + 64, &ring, &sts);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, sts);
    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(self->eqn);
    c.cq.log_depth = htole32(2);
    c.cq.flags = htole32(2);
    mem_inline(&c.cq.mem, obj_alloc(f, 4096, 4096), 4096);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));

    f->wall_base_ns = 1767225600000000000ll;   /* 2026-01-01 */
    cqn = create_ts_cq(f, self->eqn, 2, 4 * 64 + 64, &ring, &sts);
    ASSERT_EQ(VRNIC_AQ_STS_OK, sts);
    memset(fake_ptr(f, ring), 0xee, 4 * 64);
    f->now_ns = 1000;
    ASSERT_TRUE(post_cqe(f, cqn, 0x10, VRNIC_WC_SUCCESS, 0));
    f->now_ns = 2500;
    ASSERT_TRUE(post_cqe(f, cqn, 0x11, VRNIC_WC_SUCCESS, 0));
    for (unsigned i = 0; i < 2; i++) {
        struct vrnic_cqe_ts *e = ts_cqe_at(f, ring, 2, i);

        ASSERT_EQ(0x10 + i, le64toh(e->cqe.wr_id));
        ASSERT_EQ(VRNIC_CQE_INFO_PHASE, le32toh(e->cqe.info));
        ASSERT_EQ(f->wall_base_ns + (i ? 2500 : 1000), le64toh(e->timestamp));
        for (size_t k = 0; k < sizeof(e->rsvd0); k++)
            ASSERT_EQ(0, e->rsvd0[k]);
    }
    /* Slot 2 untouched: the stride is 64 bytes. */
    ASSERT_EQ(0xee, *(uint8_t *)ts_cqe_at(f, ring, 2, 2));
    /*
     * The consumer index is read after 4 x 64 bytes: with 2 consumed, four
     * more fit and the fifth overruns.
     */
    *(uint32_t *)fake_ptr(f, ring + 4 * 64) = htole32(2);
    for (unsigned i = 0; i < 4; i++)
        ASSERT_TRUE(post_cqe(f, cqn, 0x12 + i, VRNIC_WC_SUCCESS, 0));
    ASSERT_FALSE(post_cqe(f, cqn, 0x16, VRNIC_WC_SUCCESS, 0));
}

/* RESIZE_CQ of a timestamp CQ keeps the format and the timestamps. */
TEST_F(cq, resize_keeps_the_timestamp_format)
{
    FakeBus *f = self->f;
    uint64_t ring, nring = obj_alloc(f, 4096, 4096);
    uint32_t cqn;
    uint8_t sts;
    AnyCmd c;

    f->wall_base_ns = 1767225600000000000ll;
    cqn = create_ts_cq(f, self->eqn, 1, 2 * 64 + 64, &ring, &sts);
    ASSERT_EQ(VRNIC_AQ_STS_OK, sts);
    f->now_ns = 77;
    ASSERT_TRUE(post_cqe(f, cqn, 0x20, VRNIC_WC_SUCCESS, 0));
    cmd_init(&c, VRNIC_AQ_OP_RESIZE_CQ);
    c.cq.handle = htole32(cqn);
    c.cq.log_depth = htole32(3);
    mem_inline(&c.cq.mem, nring, 8 * 64 + 64);
    /* Without the flag: another CQE format. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.cq.flags = htole32(VRNIC_CQ_FLAG_TIMESTAMP);
    mem_inline(&c.cq.mem, nring, 8 * 32 + 64);  /* sized for 32 bytes */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    mem_inline(&c.cq.mem, nring, 8 * 64 + 64);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    ASSERT_EQ(0x20, le64toh(ts_cqe_at(f, nring, 3, 0)->cqe.wr_id));
    ASSERT_EQ(f->wall_base_ns + 77,
              le64toh(ts_cqe_at(f, nring, 3, 0)->timestamp));
    ASSERT_EQ(0, *(uint32_t *)fake_ptr(f, nring + 8 * 64));  /* dbrec.ci */
    f->now_ns = 99;
    ASSERT_TRUE(post_cqe(f, cqn, 0x21, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(f->wall_base_ns + 99,
              le64toh(ts_cqe_at(f, nring, 3, 1)->timestamp));
}

TEST_HARNESS_MAIN
