/*
 * vrnic core: QPs and SRQs - the IBTA state machine and attribute masks per
 * type, GSI, limits, destroy-while-referenced, malformed commands, doorbells
 * (wrong context page, RESET, bounds), flush on ERR (signaled or not, SQ and
 * RQ, posts while in ERR), RESET discarding, QP_FATAL, LAST_WQE and the SRQ
 * limit event, device reset.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "obj_helpers.h"
#include "kselftest_harness.h"

FIXTURE(qp) {
    FakeBus *f;
    uint32_t eqn, pdn, scq, rcq;
    uint64_t sring, rring;
};

FIXTURE_SETUP(qp)
{
    self->f = obj_bus(NULL);
    self->eqn = create_eq(self->f, 2, 4);
    self->pdn = alloc_pd(self->f, 0);
    self->scq = create_cq(self->f, self->eqn, 5, 0, &self->sring);
    self->rcq = create_cq(self->f, self->eqn, 5, 0, &self->rring);
    ASSERT_NE(0, self->scq);
    ASSERT_NE(0, self->rcq);
}

FIXTURE_TEARDOWN(qp)
{
    fake_free(self->f);
}

#define CUR VRNIC_QP_ATTR_CUR_STATE
#define ALT_PATH (1u << 14)

static uint8_t qp_state(FakeBus *f, uint32_t qpn)
{
    return f->core.obj.qps[qpn].state;
}

static void put_send_wqe(FakeBus *f, uint64_t mem, unsigned idx,
                         uint64_t wr_id, uint8_t opcode, uint8_t flags)
{
    struct vrnic_send_wqe *w = fake_ptr(f, mem + (idx % 16) * (1u << QP_SQ_SHIFT));

    memset(w, 0, sizeof(*w));
    w->wr_id = htole64(wr_id);
    w->opcode = opcode;
    w->flags = flags;
}

static void put_recv_wqe(FakeBus *f, uint64_t mem, unsigned idx,
                         uint64_t wr_id)
{
    struct vrnic_recv_wqe *w = fake_ptr(f, mem + QP_RQ_OFF + (idx % 16) * 64);

    memset(w, 0, sizeof(*w));
    w->wr_id = htole64(wr_id);
}

TEST_F(qp, legal_paths_for_every_type)
{
    FakeBus *f = self->f;
    static const uint8_t types[] = { VRNIC_QP_TYPE_RC, VRNIC_QP_TYPE_UC,
                                     VRNIC_QP_TYPE_UD, VRNIC_QP_TYPE_GSI };
    struct vrnic_qp_attr a = good_attr();

    for (unsigned i = 0; i < 4; i++) {
        uint8_t t = types[i];
        uint32_t qpn = create_qp(f, t, self->pdn, self->scq, self->rcq, 0, 0,
                                 NULL);

        TH_LOG("type %u", t);
        ASSERT_NE(0, qpn);
        if (t == VRNIC_QP_TYPE_GSI) {
            ASSERT_EQ(1, qpn);
        } else {
            ASSERT_LE(2, qpn);
        }
        ASSERT_EQ(VRNIC_QPS_RESET, qp_state(f, qpn));
        ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_RESET, NULL));
        ASSERT_EQ(0, modify_qp(f, qpn, QS | req_init(t), VRNIC_QPS_INIT, &a));
        ASSERT_EQ(0, modify_qp(f, qpn, QS | req_init(t), VRNIC_QPS_INIT, &a));
        ASSERT_EQ(0, modify_qp(f, qpn, QS | req_rtr(t), VRNIC_QPS_RTR, &a));
        ASSERT_EQ(0, modify_qp(f, qpn, QS | req_rts(t) | CUR, VRNIC_QPS_RTS,
                               (a.cur_qp_state = htole32(VRNIC_QPS_RTR), &a)));
        ASSERT_EQ(VRNIC_QPS_RTS, qp_state(f, qpn));
        ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_SQD, NULL));
        ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_RTS, NULL));
        ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
        ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
        ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_RESET, NULL));
        ASSERT_EQ(VRNIC_QPS_RESET, qp_state(f, qpn));
    }
    ASSERT_EQ(0, f->core.stats.guest_errors);
}

TEST_F(qp, illegal_transitions_and_masks)
{
    FakeBus *f = self->f;
    struct vrnic_qp_attr a = good_attr();
    uint32_t rc = create_qp(f, VRNIC_QP_TYPE_RC, self->pdn, self->scq,
                            self->rcq, 0, 0, NULL);
    uint32_t ud = create_qp(f, VRNIC_QP_TYPE_UD, self->pdn, self->scq,
                            self->rcq, 0, 0, NULL);
    uint32_t gsi = create_qp(f, VRNIC_QP_TYPE_GSI, self->pdn, self->scq,
                             self->rcq, 0, 0, NULL);
    uint32_t rtr_rc = req_rtr(VRNIC_QP_TYPE_RC);

    /* Transitions the table does not have. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_RTR, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_ERR, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_SQE, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS, 7, &a));
    /* RESET -> INIT: a required attribute missing, an extra one present. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, rc, QS | VRNIC_QP_ATTR_PKEY_INDEX |
                        VRNIC_QP_ATTR_PORT, VRNIC_QPS_INIT, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, rc, QS | req_init(VRNIC_QP_TYPE_RC) |
                        VRNIC_QP_ATTR_QKEY, VRNIC_QPS_INIT, &a));
    /* UD needs QKEY and must not have ACCESS; GSI must not have PORT. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, ud, QS | req_init(VRNIC_QP_TYPE_RC),
                        VRNIC_QPS_INIT, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, gsi, QS | req_init(VRNIC_QP_TYPE_UD),
                        VRNIC_QPS_INIT, &a));
    /* CUR_STATE is refused in RESET/INIT. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE,
              modify_qp(f, rc, QS | CUR | req_init(VRNIC_QP_TYPE_RC),
                        VRNIC_QPS_INIT, &a));
    ASSERT_EQ(0, modify_qp(f, rc, QS | req_init(VRNIC_QP_TYPE_RC),
                           VRNIC_QPS_INIT, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_RTS, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_SQD, &a));
    /* INIT -> RTR for RC without MIN_RNR_TIMER; with SQ_PSN (not allowed). */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, rc, QS | (rtr_rc & ~VRNIC_QP_ATTR_MIN_RNR_TIMER),
                        VRNIC_QPS_RTR, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, rc, QS | rtr_rc | VRNIC_QP_ATTR_SQ_PSN,
                        VRNIC_QPS_RTR, &a));
    /* Unknown / unimplemented mask bits (alternate path). */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, rc, QS | rtr_rc | ALT_PATH, VRNIC_QPS_RTR, &a));
    /* Out-of-range values. */
    a.path_mtu = 6;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS | rtr_rc,
                                                VRNIC_QPS_RTR, &a));
    a = good_attr();
    a.av.sgid_index = 16;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS | rtr_rc,
                                                VRNIC_QPS_RTR, &a));
    a = good_attr();
    a.dest_qpn = htole32(1u << 24);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS | rtr_rc,
                                                VRNIC_QPS_RTR, &a));
    a = good_attr();
    a.max_dest_rd_atomic = 17;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS | rtr_rc,
                                                VRNIC_QPS_RTR, &a));
    a = good_attr();
    a.rsvd0[1] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS | rtr_rc,
                                                VRNIC_QPS_RTR, &a));
    a = good_attr();
    a.av.rsvd0[2] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, QS | rtr_rc,
                                                VRNIC_QPS_RTR, &a));
    a = good_attr();
    ASSERT_EQ(VRNIC_QPS_INIT, qp_state(f, rc));
    ASSERT_EQ(0, modify_qp(f, rc, QS | rtr_rc, VRNIC_QPS_RTR, &a));
    /* RTR -> RTS RC: retry_cnt 8 refused; CUR_STATE must match. */
    a.retry_cnt = 8;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD,
              modify_qp(f, rc, QS | req_rts(VRNIC_QP_TYPE_RC), VRNIC_QPS_RTS,
                        &a));
    a = good_attr();
    a.cur_qp_state = htole32(VRNIC_QPS_RTS);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE,
              modify_qp(f, rc, QS | CUR | req_rts(VRNIC_QP_TYPE_RC),
                        VRNIC_QPS_RTS, &a));
    ASSERT_EQ(0, modify_qp(f, rc, QS | req_rts(VRNIC_QP_TYPE_RC),
                           VRNIC_QPS_RTS, &a));
    /* RTS -> RTS: MIN_RNR_TIMER ok for RC, AV not; no STATE = same state. */
    ASSERT_EQ(0, modify_qp(f, rc, VRNIC_QP_ATTR_MIN_RNR_TIMER, 0, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, modify_qp(f, rc, VRNIC_QP_ATTR_AV, 0,
                                                &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_RTR, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_INIT, &a));
    /* SQD -> SQD: RC may change the path. */
    ASSERT_EQ(0, modify_qp(f, rc, QS, VRNIC_QPS_SQD, &a));
    ASSERT_EQ(0, modify_qp(f, rc, QS | VRNIC_QP_ATTR_AV | VRNIC_QP_ATTR_TIMEOUT,
                           VRNIC_QPS_SQD, &a));
    /* ERR -> only RESET or ERR. */
    ASSERT_EQ(0, modify_qp(f, rc, QS, VRNIC_QPS_ERR, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_RTS, &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, modify_qp(f, rc, QS, VRNIC_QPS_INIT, &a));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(f, rc));
    /* Unknown QP. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, modify_qp(f, 999, QS, VRNIC_QPS_INIT,
                                                &a));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, modify_qp(f, 0, QS, VRNIC_QPS_INIT, &a));
}

TEST_F(qp, query_returns_applied_attributes)
{
    FakeBus *f = self->f;
    struct vrnic_qp_attr a = good_attr(), *q = fake_ptr(f, FAKE_RESP);
    uint32_t qpn = create_qp(f, VRNIC_QP_TYPE_RC, self->pdn, self->scq,
                             self->rcq, 0, 0, NULL);
    AnyCmd c;

    ASSERT_EQ(0, qp_to_rts(f, qpn, VRNIC_QP_TYPE_RC));
    cmd_init(&c, VRNIC_AQ_OP_QUERY_QP);
    c.query.resp_addr = htole64(FAKE_RESP);
    c.query.resp_len = htole32(sizeof(*q));
    c.query.index = htole32(qpn);
    ASSERT_EQ(0, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_QPS_RTS, le32toh(q->qp_state));
    ASSERT_EQ(0x12, le32toh(q->dest_qpn));
    ASSERT_EQ(200, le32toh(q->sq_psn));
    ASSERT_EQ(100, le32toh(q->rq_psn));
    ASSERT_EQ(3, q->path_mtu);
    ASSERT_EQ(0xfe, q->av.dgid[0]);
    ASSERT_EQ(1, q->port);
    ASSERT_EQ(le32toh(a.access), le32toh(q->access));
    c.query.resp_len = htole32(sizeof(*q) - 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.query.resp_len = htole32(sizeof(*q));
    c.query.index = htole32(qpn + 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &c, NULL));
    /* RESET clears them. */
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_RESET, NULL));
    c.query.index = htole32(qpn);
    ASSERT_EQ(0, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_QPS_RESET, le32toh(q->qp_state));
    ASSERT_EQ(0, le32toh(q->dest_qpn));
}

TEST_F(qp, gsi_and_qp_limits_exact)
{
    VrnicConfig cfg = fake_default_config();
    FakeBus *f = self->f, *g;
    uint32_t pd, cq, qpns[3];
    AnyCmd c;

    /* One GSI per device, kernel only. */
    ASSERT_EQ(1, create_qp(f, VRNIC_QP_TYPE_GSI, self->pdn, self->scq,
                           self->rcq, 0, 0, NULL));
    qp_cmd(&c, VRNIC_QP_TYPE_GSI, self->pdn, self->scq, self->rcq, 0, 0,
           obj_alloc(f, QP_MEM_LEN, 4096));
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_QP, 1));

    cfg.max_qp = 4;
    g = obj_bus(&cfg);
    pd = alloc_pd(g, 0);
    ASSERT_EQ(1, create_eq(g, 2, 2));
    cq = create_cq(g, 1, 4, 0, NULL);
    ASSERT_EQ(1, create_qp(g, VRNIC_QP_TYPE_GSI, pd, cq, cq, 0, 0, NULL));
    for (int i = 0; i < 3; i++) {
        qpns[i] = create_qp(g, VRNIC_QP_TYPE_RC, pd, cq, cq, 0, 0, NULL);
        ASSERT_EQ(i + 2, qpns[i]);
    }
    /* max_qp counts the GSI QP: the 5th fails, as does a user QP. */
    qp_cmd(&c, VRNIC_QP_TYPE_UD, pd, cq, cq, 0, 0, obj_alloc(g, QP_MEM_LEN,
                                                             4096));
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, run(g, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(g, VRNIC_AQ_OP_DESTROY_QP, qpns[1]));
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(g, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, run(g, &c, NULL));
    ASSERT_EQ(4, g->core.obj.n_qps);
    fake_free(g);
}

TEST_F(qp, destroy_while_referenced_is_bad_state)
{
    FakeBus *f = self->f;
    AnyCmd c;
    uint64_t srqn;
    uint32_t qpn;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_SRQ);
    c.srq.pdn = htole32(self->pdn);
    c.srq.log_depth = 4;
    c.srq.wqe_shift = 5;
    c.srq.max_sge = 1;
    mem_inline(&c.srq.mem, obj_alloc(f, 4096, 4096), 512);
    ASSERT_EQ(0, run(f, &c, &srqn));
    qpn = create_qp(f, VRNIC_QP_TYPE_RC, self->pdn, self->scq, self->rcq,
                    srqn, 0, NULL);
    ASSERT_NE(0, qpn);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DEALLOC_PD,
                                              self->pdn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DESTROY_CQ,
                                              self->scq));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DESTROY_CQ,
                                              self->rcq));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DESTROY_SRQ,
                                              srqn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DESTROY_EQ,
                                              self->eqn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_QP, qpn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DESTROY_QP, qpn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DEALLOC_PD,
                                              self->pdn));   /* SRQ left */
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_SRQ, srqn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, self->scq));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, self->rcq));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_EQ, self->eqn));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_PD, self->pdn));
}

TEST_F(qp, malformed_create_commands)
{
    FakeBus *f = self->f;
    uint64_t mem = obj_alloc(f, QP_MEM_LEN, 4096);
    uint32_t upd = alloc_pd(f, 3);
    AnyCmd c;

#define BAD(sts, stmt)                                                    \
    do {                                                                  \
        qp_cmd(&c, VRNIC_QP_TYPE_RC, self->pdn, self->scq, self->rcq, 0,  \
               0, mem);                                                   \
        stmt;                                                             \
        ASSERT_EQ(sts, run(f, &c, NULL));                                 \
    } while (0)

    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.type = 0);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.type = VRNIC_QP_TYPE_RAW_PACKET + 1);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.sq_wqe_shift = 5);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.sq_wqe_shift = 10);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rq_wqe_shift = 3);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rq_wqe_shift = 10);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.sq_log_depth = 0);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.sq_log_depth = 13);  /* > 4096 WRs */
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rq_log_depth = 13);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.max_send_sge = 13);  /* 64+208 > 256 */
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.max_send_sge = 17);  /* > max_sge */
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.max_recv_sge = 4);   /* 16+64 > 64 */
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.max_inline = htole32(193));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rq_offset = htole32(QP_RQ_OFF - 64));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rq_offset = htole32(QP_RQ_OFF + 8));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rq_offset = htole32(QP_RQ_OFF + 64));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rsvd0 = 1);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.xrcdn = htole32(1)); /* not XRC_TGT */
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.rsvd2[7] = 1);
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.mem.npages = htole32(3));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.mem.flags = htole32(11));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.mem.length = htole64(QP_MEM_LEN - 64));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.uctx = htole32(64));
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.uctx = htole32(3));  /* PD is uctx 0 */
    BAD(VRNIC_AQ_STS_BAD_FIELD, c.qp.pdn = htole32(upd)); /* PD of uctx 3 */
    BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.pdn = htole32(77));
    BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.send_cqn = htole32(77));
    BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.recv_cqn = 0);
    BAD(VRNIC_AQ_STS_BAD_INDEX, c.qp.srqn = htole32(3));
    /* GSI must be a kernel QP. */
    BAD(VRNIC_AQ_STS_BAD_FIELD, (c.qp.type = VRNIC_QP_TYPE_GSI,
                                 c.qp.pdn = htole32(upd),
                                 c.qp.uctx = htole32(3)));
#undef BAD
    ASSERT_EQ(0, f->core.obj.n_qps);
    ASSERT_EQ(0, f->core.obj.pds[self->pdn].refs);
    /* And a well-formed one works. */
    qp_cmd(&c, VRNIC_QP_TYPE_RC, self->pdn, self->scq, self->rcq, 0, 0, mem);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    /* An unknown opcode. */
    cmd_init(&c, 0xffff);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_OPCODE, run(f, &c, NULL));
    cmd_init(&c, VRNIC_AQ_OP_MODIFY_QP);
    c.mod.qpn = htole32(2);
    c.mod.rsvd0[39] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
}

TEST_F(qp, doorbells_checked_against_page_state_and_depth)
{
    FakeBus *f = self->f;
    uint32_t upd = alloc_pd(f, 7);
    uint32_t ucq = create_cq(f, self->eqn, 4, 7, NULL);
    uint32_t qpn = create_qp(f, VRNIC_QP_TYPE_RC, upd, ucq, ucq, 0, 7, NULL);
    VrnicQp *qp = &f->core.obj.qps[qpn];
    uint64_t errs;

    ASSERT_NE(0, qpn);
    errs = f->core.stats.guest_errors;
    db(f, 7, VRNIC_DB_RQ, qpn, 1);              /* RESET: refused */
    ASSERT_EQ(0, qp->rq.pi);
    ASSERT_EQ(0, modify_qp(f, qpn, QS | req_init(VRNIC_QP_TYPE_RC),
                           VRNIC_QPS_INIT, (struct vrnic_qp_attr[]){good_attr()}));
    db(f, 0, VRNIC_DB_RQ, qpn, 1);              /* kernel page */
    db(f, 8, VRNIC_DB_RQ, qpn, 1);              /* another context */
    ASSERT_EQ(0, qp->rq.pi);
    db(f, 7, VRNIC_DB_RQ, qpn, 17);             /* > depth 16 ahead */
    db(f, 7, VRNIC_DB_SQ, qpn + 1, 1);          /* no such QP */
    ASSERT_EQ(errs + 5, f->core.stats.guest_errors);
    ASSERT_EQ(5, f->core.stats.db_rejected);
    db(f, 7, VRNIC_DB_RQ, qpn, 16);             /* exactly full: fine */
    ASSERT_EQ(16, qp->rq.pi);
    db(f, 7, VRNIC_DB_RQ, qpn, 15);             /* backwards */
    ASSERT_EQ(16, qp->rq.pi);
    db(f, 7, VRNIC_DB_SQ, qpn, 3);
    ASSERT_EQ(3, qp->sq.pi);
    ASSERT_EQ(0, qp->sq.ci);                    /* INIT: nothing consumed */
    ASSERT_EQ(errs + 6, f->core.stats.guest_errors);
    ASSERT_FALSE(f->pending[VRNIC_WORK_QUEUES]);
}

TEST_F(qp, flush_on_err_signaled_or_not_sq_and_rq)
{
    FakeBus *f = self->f;
    uint64_t mem;
    uint32_t qpn = create_qp(f, VRNIC_QP_TYPE_RC, self->pdn, self->scq,
                             self->rcq, 0, 0, &mem);
    struct vrnic_qp_attr a = good_attr();
    struct vrnic_cqe *e;

    /* RTR: posted sends wait (the transport starts them only in RTS). */
    ASSERT_EQ(0, modify_qp(f, qpn, QS | req_init(VRNIC_QP_TYPE_RC),
                           VRNIC_QPS_INIT, &a));
    ASSERT_EQ(0, modify_qp(f, qpn, QS | req_rtr(VRNIC_QP_TYPE_RC),
                           VRNIC_QPS_RTR, &a));
    put_send_wqe(f, mem, 0, 0xa0, VRNIC_WQE_OP_SEND, VRNIC_WQE_FLAG_SIGNALED);
    put_send_wqe(f, mem, 1, 0xa1, VRNIC_WQE_OP_RDMA_WRITE, 0);
    put_send_wqe(f, mem, 2, 0xa2, VRNIC_WQE_OP_RDMA_READ, 0);
    put_recv_wqe(f, mem, 0, 0xb0);
    put_recv_wqe(f, mem, 1, 0xb1);
    db(f, 0, VRNIC_DB_SQ, qpn, 3);
    db(f, 0, VRNIC_DB_RQ, qpn, 2);
    fake_settle(f);
    ASSERT_EQ(0, f->core.obj.cqs[self->scq].pi);
    ASSERT_EQ(0, f->core.obj.qps[qpn].sq.ci);
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
    ASSERT_EQ(3, f->core.obj.cqs[self->scq].pi);
    ASSERT_EQ(2, f->core.obj.cqs[self->rcq].pi);
    for (int i = 0; i < 3; i++) {
        static const uint8_t op[] = { VRNIC_CQE_OP_SEND,
                                      VRNIC_CQE_OP_RDMA_WRITE,
                                      VRNIC_CQE_OP_RDMA_READ };

        e = cqe_at(f, self->sring, 5, i);
        ASSERT_EQ(0xa0 + i, le64toh(e->wr_id));
        ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e->status);
        ASSERT_EQ(op[i], e->opcode);
        ASSERT_EQ(qpn, le32toh(e->qpn));
        ASSERT_EQ(VRNIC_CQE_INFO_PHASE, le32toh(e->info));
    }
    for (int i = 0; i < 2; i++) {
        e = cqe_at(f, self->rring, 5, i);
        ASSERT_EQ(0xb0 + i, le64toh(e->wr_id));
        ASSERT_EQ(VRNIC_CQE_OP_RECV, e->opcode);
        ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e->status);
    }
    /* Posts while in ERR (ib_drain_qp's unsignaled WRITE) flush too, from
     * the bottom half. */
    put_send_wqe(f, mem, 3, 0xd7a1, VRNIC_WQE_OP_RDMA_WRITE, 0);
    put_recv_wqe(f, mem, 2, 0xd7a2);
    db(f, 0, VRNIC_DB_SQ, qpn, 4);
    db(f, 0, VRNIC_DB_RQ, qpn, 3);
    ASSERT_EQ(3, f->core.obj.cqs[self->scq].pi);
    fake_settle(f);
    ASSERT_EQ(4, f->core.obj.cqs[self->scq].pi);
    ASSERT_EQ(3, f->core.obj.cqs[self->rcq].pi);
    ASSERT_EQ(0xd7a1, le64toh(cqe_at(f, self->sring, 5, 3)->wr_id));
    ASSERT_EQ(0xd7a2, le64toh(cqe_at(f, self->rring, 5, 2)->wr_id));
    ASSERT_EQ(0, f->core.stats.guest_errors);
    /* No LAST_WQE: the QP has its own RQ. */
    ASSERT_EQ(0, f->core.aeq.pi);
}

TEST_F(qp, reset_discards_wqes_silently)
{
    FakeBus *f = self->f;
    uint64_t mem;
    uint32_t qpn = create_qp(f, VRNIC_QP_TYPE_UD, self->pdn, self->scq,
                             self->rcq, 0, 0, &mem);
    VrnicQp *qp = &f->core.obj.qps[qpn];
    struct vrnic_qp_attr a = good_attr();

    /* In INIT WQEs are accepted but not executed (in RTS the admin
     * doorbell would first run the send). */
    ASSERT_EQ(0, modify_qp(f, qpn, QS | req_init(VRNIC_QP_TYPE_UD),
                           VRNIC_QPS_INIT, &a));
    put_send_wqe(f, mem, 0, 1, VRNIC_WQE_OP_SEND, VRNIC_WQE_FLAG_SIGNALED);
    db(f, 0, VRNIC_DB_SQ, qpn, 1);
    db(f, 0, VRNIC_DB_RQ, qpn, 5);
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_RESET, NULL));
    fake_settle(f);
    ASSERT_EQ(0, f->core.obj.cqs[self->scq].pi);
    ASSERT_EQ(0, f->core.obj.cqs[self->rcq].pi);
    ASSERT_EQ(0, qp->sq.pi);
    ASSERT_EQ(0, qp->rq.pi);
    ASSERT_EQ(0, qp->sq.ci);
    /* Back to ERR from a fresh start: nothing to flush. */
    ASSERT_EQ(0, qp_to_rts(f, qpn, VRNIC_QP_TYPE_UD));
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
    ASSERT_EQ(0, f->core.obj.cqs[self->scq].pi);
}

TEST_F(qp, unreadable_ring_is_qp_fatal)
{
    FakeBus *f = self->f;
    uint32_t qpn;
    AnyCmd c;
    uint64_t r;

    qp_cmd(&c, VRNIC_QP_TYPE_RC, self->pdn, self->scq, self->rcq, 0, 0,
           obj_alloc(f, QP_MEM_LEN, 4096));
    c.qp.mem.pages[0] = htole64(FAKE_UNMAPPED);    /* SQ page gone */
    ASSERT_EQ(0, run(f, &c, &r));
    qpn = r;
    ASSERT_EQ(0, qp_to_rts(f, qpn, VRNIC_QP_TYPE_RC));
    db(f, 0, VRNIC_DB_SQ, qpn, 2);
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
    ASSERT_EQ(VRNIC_AEQ_EV_QP_FATAL, le32toh(aeqe_at(f, 0)->event));
    ASSERT_EQ(qpn, le32toh(aeqe_at(f, 0)->data));
    ASSERT_EQ(0, f->core.obj.cqs[self->scq].pi);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(f, qpn));
    ASSERT_FALSE(f->core.fatal);
    /* More posts: still no crash, only one QP_FATAL per trip to ERR. */
    db(f, 0, VRNIC_DB_SQ, qpn, 3);
    fake_settle(f);
    ASSERT_EQ(1, f->core.aeq.pi);
}

TEST_F(qp, flush_to_a_full_cq_stops_the_cq)
{
    FakeBus *f = self->f;
    uint64_t mem, ring;
    uint32_t cq = create_cq(f, self->eqn, 1, 0, &ring);  /* 2 CQEs */
    uint32_t qpn = create_qp(f, VRNIC_QP_TYPE_UC, self->pdn, cq, cq, 0, 0,
                             &mem);

    ASSERT_EQ(0, qp_to_rts(f, qpn, VRNIC_QP_TYPE_UC));
    for (int i = 0; i < 4; i++) {
        put_send_wqe(f, mem, i, i, VRNIC_WQE_OP_SEND, 0);
    }
    db(f, 0, VRNIC_DB_SQ, qpn, 4);
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
    ASSERT_EQ(2, f->core.obj.cqs[cq].pi);
    ASSERT_TRUE(f->core.obj.cqs[cq].error);
    ASSERT_EQ(VRNIC_AEQ_EV_CQ_ERR, le32toh(aeqe_at(f, 0)->event));
    ASSERT_EQ(1, f->core.aeq.pi);
    ASSERT_EQ(4, f->core.obj.qps[qpn].sq.ci);
}

TEST_F(qp, srq_limit_and_last_wqe_events)
{
    FakeBus *f = self->f;
    uint64_t smem;
    uint32_t srqn = create_srq(f, self->pdn, 0, 0, &smem);
    uint32_t qpn = create_qp(f, VRNIC_QP_TYPE_RC, self->pdn, self->scq,
                             self->rcq, srqn, 0, NULL);
    struct vrnic_srq_attr *sa = fake_ptr(f, FAKE_RESP);
    struct vrnic_recv_wqe w;
    AnyCmd c;

    ASSERT_NE(0, srqn);
    ASSERT_NE(0, qpn);
    /* RQ doorbell on an SRQ QP is refused; SRQ doorbell from page 0 ok. */
    ASSERT_EQ(0, qp_to_rts(f, qpn, VRNIC_QP_TYPE_RC));
    db(f, 0, VRNIC_DB_RQ, qpn, 1);
    ASSERT_EQ(1, f->core.stats.db_rejected);
    for (int i = 0; i < 6; i++) {
        struct vrnic_recv_wqe *p = fake_ptr(f, smem + i * 32);

        p->wr_id = htole64(0x500 + i);
    }
    db(f, 0, VRNIC_DB_SRQ, srqn, 6);
    db(f, 1, VRNIC_DB_SRQ, srqn, 7);            /* wrong page */
    db(f, 0, VRNIC_DB_SRQ, srqn, 9);            /* past depth 8 */
    ASSERT_EQ(6, f->core.obj.srqs[srqn].wq.pi);
    /* Arm the limit at 4. */
    cmd_init(&c, VRNIC_AQ_OP_MODIFY_SRQ);
    c.srq.handle = htole32(srqn);
    c.srq.attr_mask = htole32(VRNIC_SRQ_ATTR_LIMIT);
    c.srq.limit = htole32(9);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.attr_mask = htole32(1);               /* IB_SRQ_MAX_WR: no resize */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.attr_mask = htole32(VRNIC_SRQ_ATTR_LIMIT);
    c.srq.limit = htole32(4);
    ASSERT_EQ(0, run(f, &c, NULL));
    cmd_init(&c, VRNIC_AQ_OP_QUERY_SRQ);
    c.query.resp_addr = htole64(FAKE_RESP);
    c.query.resp_len = htole32(sizeof(*sa));
    c.query.index = htole32(srqn);
    ASSERT_EQ(0, run(f, &c, NULL));
    ASSERT_EQ(8, le32toh(sa->max_wr));
    ASSERT_EQ(1, le32toh(sa->max_sge));
    ASSERT_EQ(4, le32toh(sa->limit));
    /* The receive path takes WQEs: 5 left, 4 left - then 3 < 4 fires once. */
    ASSERT_TRUE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));
    ASSERT_EQ(0x500, le64toh(w.wr_id));
    ASSERT_TRUE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));
    ASSERT_EQ(0, f->core.aeq.pi);
    ASSERT_TRUE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));
    ASSERT_EQ(1, f->core.aeq.pi);
    ASSERT_EQ(VRNIC_AEQ_EV_SRQ_LIMIT, le32toh(aeqe_at(f, 0)->event));
    ASSERT_EQ(srqn, le32toh(aeqe_at(f, 0)->data));
    ASSERT_EQ(0, f->core.obj.srqs[srqn].limit);      /* disarmed */
    ASSERT_TRUE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));
    ASSERT_EQ(1, f->core.aeq.pi);
    /* ERR on the SRQ-attached QP: LAST_WQE; the SRQ keeps its WQEs. */
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));
    ASSERT_EQ(VRNIC_AEQ_EV_QP_LAST_WQE, le32toh(aeqe_at(f, 1)->event));
    ASSERT_EQ(qpn, le32toh(aeqe_at(f, 1)->data));
    ASSERT_EQ(0, f->core.obj.cqs[self->rcq].pi);
    ASSERT_EQ(4, f->core.obj.srqs[srqn].wq.ci);
    ASSERT_EQ(0, modify_qp(f, qpn, QS, VRNIC_QPS_ERR, NULL));   /* once */
    ASSERT_EQ(2, f->core.aeq.pi);
    ASSERT_TRUE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));
    ASSERT_TRUE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));
    ASSERT_FALSE(vrnic_srq_take(&f->core, srqn, &w, sizeof(w)));  /* empty */
}

TEST_F(qp, srq_create_checks_and_limit)
{
    VrnicConfig cfg = fake_default_config();
    FakeBus *f = self->f, *g;
    uint64_t m;
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_CREATE_SRQ);
    c.srq.pdn = htole32(self->pdn);
    c.srq.log_depth = 3;
    c.srq.wqe_shift = 5;
    c.srq.max_sge = 2;                  /* 16 + 32 > 32 */
    mem_inline(&c.srq.mem, obj_alloc(f, 4096, 4096), 256);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.max_sge = 1;
    c.srq.wqe_shift = 3;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.wqe_shift = 5;
    c.srq.log_depth = 13;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.log_depth = 4;                /* 512 bytes > mem 256 */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.log_depth = 3;
    c.srq.attr_mask = htole32(VRNIC_SRQ_ATTR_LIMIT);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.attr_mask = 0;
    c.srq.uctx = htole32(2);            /* PD belongs to the kernel */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.srq.uctx = 0;
    c.srq.pdn = htole32(50);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &c, NULL));
    ASSERT_EQ(0, f->core.obj.n_srqs);

    cfg.max_srq = 2;
    g = obj_bus(&cfg);
    ASSERT_EQ(1, alloc_pd(g, 0));
    ASSERT_EQ(1, create_srq(g, 1, 0, 0, &m));
    ASSERT_EQ(2, create_srq(g, 1, 0, 0, &m));
    ASSERT_EQ(0, create_srq(g, 1, 0, 0, &m));
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, last_status(g));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(g, VRNIC_AQ_OP_DESTROY_SRQ, 1));
    ASSERT_EQ(1, create_srq(g, 1, 0, 0, &m));
    fake_free(g);
}

TEST_F(qp, device_reset_returns_objects_to_nothing)
{
    FakeBus *f = self->f;
    uint32_t key, qpn = create_qp(f, VRNIC_QP_TYPE_RC, self->pdn, self->scq,
                                  self->rcq, 0, 0, NULL);

    ASSERT_EQ(0, reg_mr(f, self->pdn, 0, 1, FAKE_BUF, 64, &key));
    ASSERT_EQ(0, qp_to_rts(f, qpn, VRNIC_QP_TYPE_RC));
    fake_wr(f, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    ASSERT_EQ(0, f->core.obj.n_qps + f->core.obj.n_cqs + f->core.obj.n_eqs +
                 f->core.obj.n_pds + f->core.obj.n_mrs + f->core.obj.n_srqs);
    ASSERT_EQ(NULL, vrnic_mr_lookup(&f->core, key));
    ASSERT_EQ(NULL, vrnic_qp_get(&f->core, qpn));
    db(f, 0, VRNIC_DB_SQ, qpn, 1);              /* a stale doorbell */
    ASSERT_EQ(1, f->core.stats.db_rejected);
    fake_aq_enable(f, 6);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DESTROY_QP, qpn));
    ASSERT_EQ(1, alloc_pd(f, 0));
    ASSERT_EQ(1, create_eq(f, 2, 2));           /* the vector is free again */
}

TEST_HARNESS_MAIN
