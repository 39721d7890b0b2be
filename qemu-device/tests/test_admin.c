/*
 * vrnic core: admin queue parsing, command status for malformed commands,
 * phase bits, port commands and the GID table.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_bus.h"
#include "kselftest_harness.h"

FIXTURE(aq) {
    FakeBus *f;
    uint8_t cmd[VRNIC_AQ_CMD_SIZE];
};

FIXTURE_SETUP(aq)
{
    self->f = fake_new(NULL);
    fake_aq_enable(self->f, 2);
    memset(self->cmd, 0, sizeof(self->cmd));
}

FIXTURE_TEARDOWN(aq)
{
    fake_free(self->f);
}

static struct vrnic_aq_query *query(uint8_t *cmd, uint16_t op, uint32_t len,
                                    uint32_t index)
{
    struct vrnic_aq_query *q = (void *)cmd;

    memset(cmd, 0, VRNIC_AQ_CMD_SIZE);
    q->hdr.opcode = htole16(op);
    q->resp_addr = htole64(FAKE_RESP);
    q->resp_len = htole32(len);
    q->index = htole32(index);
    return q;
}

static struct vrnic_aq_gid *gid_cmd(uint8_t *cmd, uint16_t op, uint32_t index,
                                    uint8_t first_byte)
{
    struct vrnic_aq_gid *g = (void *)cmd;

    memset(cmd, 0, VRNIC_AQ_CMD_SIZE);
    g->hdr.opcode = htole16(op);
    g->index = htole32(index);
    if (op == VRNIC_AQ_OP_ADD_GID) {
        g->type = htole32(VRNIC_GID_TYPE_ROCE_V2);
        g->gid[0] = first_byte;
        g->gid[15] = 1;
    }
    return g;
}

TEST_F(aq, query_device_reports_config_and_guid)
{
    FakeBus *f = self->f;
    struct vrnic_device_attr *a = fake_ptr(f, FAKE_RESP);
    struct vrnic_aq_cqe *cqe;
    static const uint8_t guid[8] = { 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34,
                                     0x56 };

    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE, sizeof(*a), 0);
    cqe = fake_aq_exec(f, self->cmd);
    ASSERT_EQ(VRNIC_AQ_STS_OK, cqe->status);
    ASSERT_EQ(1, le16toh(cqe->cmd_id));
    ASSERT_EQ(VRNIC_OWNER_PHASE, le32toh(cqe->owner));
    ASSERT_EQ(VRNIC_PCI_VENDOR_ID, le32toh(a->vendor_id));
    ASSERT_EQ(VRNIC_PCI_DEVICE_ID, le32toh(a->vendor_part_id));
    ASSERT_EQ(1024, le32toh(a->max_qp));
    ASSERT_EQ(32768, le32toh(a->max_cqe));
    ASSERT_EQ(4, le32toh(a->num_comp_vectors));
    ASSERT_EQ(0x7ffff000ull, le64toh(a->page_size_cap));
    ASSERT_EQ(0, memcmp(guid, a->node_guid, 8));
    ASSERT_EQ(0, memcmp(guid, a->sys_image_guid, 8));
    ASSERT_EQ(1, f->irqs[VRNIC_VEC_ADMIN]);
    ASSERT_EQ(0, f->core.stats.guest_errors);
}

TEST_F(aq, query_port_reports_link_mtu_gids)
{
    FakeBus *f = self->f;
    struct vrnic_port_attr *p = fake_ptr(f, FAKE_RESP);

    query(self->cmd, VRNIC_AQ_OP_QUERY_PORT, sizeof(*p), 1);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(VRNIC_PORT_FLAG_LINK_UP, le32toh(p->flags));
    ASSERT_EQ(1500, le32toh(p->mtu));
    ASSERT_EQ(9000, le32toh(p->max_mtu));
    ASSERT_EQ(16, le32toh(p->gid_tbl_len));
    ASSERT_EQ(1, le32toh(p->pkey_tbl_len));
    ASSERT_EQ(25000, le32toh(p->speed_mbps));
    /* Port 0 and 2 do not exist. */
    query(self->cmd, VRNIC_AQ_OP_QUERY_PORT, sizeof(*p), 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
    query(self->cmd, VRNIC_AQ_OP_QUERY_PORT, sizeof(*p), 2);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
}

TEST_F(aq, phase_flips_on_every_wrap)
{
    FakeBus *f = self->f;

    /* Depth 4: commands 0-3 carry phase 1, 4-7 phase 0, 8-11 phase 1. */
    for (int i = 0; i < 12; i++) {
        struct vrnic_aq_cqe *cqe;

        query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
              sizeof(struct vrnic_device_attr), 0);
        cqe = fake_aq_exec(f, self->cmd);
        ASSERT_EQ(VRNIC_AQ_STS_OK, cqe->status);
        ASSERT_EQ(i + 1, le16toh(cqe->cmd_id));
        ASSERT_EQ((i / 4) % 2 ? 0 : VRNIC_OWNER_PHASE, le32toh(cqe->owner));
    }
}

TEST_F(aq, batch_of_commands_completes_in_order)
{
    FakeBus *f = self->f;
    struct vrnic_aq_query *q;

    /* Fill all four slots, ring once. */
    for (int i = 0; i < 4; i++) {
        q = fake_ptr(f, FAKE_AQ_SQ + i * VRNIC_AQ_CMD_SIZE);
        memset(q, 0, VRNIC_AQ_CMD_SIZE);
        q->hdr.opcode = htole16(VRNIC_AQ_OP_QUERY_DEVICE);
        q->hdr.cmd_id = htole16(100 + i);
        q->resp_addr = htole64(FAKE_RESP);
        q->resp_len = htole32(sizeof(struct vrnic_device_attr));
    }
    fake_wr(f, VRNIC_REG_AQ_PI, 4);
    fake_settle(f);
    for (int i = 0; i < 4; i++) {
        struct vrnic_aq_cqe *cqe = fake_ptr(f, FAKE_AQ_CQ + i * 16);

        ASSERT_EQ(100 + i, le16toh(cqe->cmd_id));
        ASSERT_EQ(VRNIC_AQ_STS_OK, cqe->status);
    }
    ASSERT_EQ(4, f->core.stats.aq_cmds);
}

TEST_F(aq, unknown_opcode_fails_with_status)
{
    FakeBus *f = self->f;
    struct vrnic_aq_hdr *h = (void *)self->cmd;
    struct vrnic_aq_cqe *cqe;

    h->opcode = htole16(0x7fff);
    cqe = fake_aq_exec(f, self->cmd);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_OPCODE, cqe->status);
    ASSERT_EQ(1, le16toh(cqe->cmd_id));
    h->opcode = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_OPCODE, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(2, f->core.stats.guest_errors);
}

/*
 * A malformed command is the guest's mistake; a well-formed one the device
 * cannot carry out now (BAD_STATE here, NO_RESOURCES in test_mr) is not.
 */
TEST_F(aq, only_malformed_commands_are_guest_errors)
{
    FakeBus *f = self->f;

    gid_cmd(self->cmd, VRNIC_AQ_OP_DEL_GID, 3, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(0, f->core.stats.guest_errors);
    gid_cmd(self->cmd, VRNIC_AQ_OP_DEL_GID, 16, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(1, f->core.stats.guest_errors);
    ASSERT_EQ(2, f->core.stats.aq_cmds);
}

TEST_F(aq, reserved_bytes_must_be_zero)
{
    FakeBus *f = self->f;
    struct vrnic_aq_query *q;

    q = query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
              sizeof(struct vrnic_device_attr), 0);
    q->hdr.rsvd0 = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    q = query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
              sizeof(struct vrnic_device_attr), 0);
    q->rsvd0[39] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    gid_cmd(self->cmd, VRNIC_AQ_OP_ADD_GID, 0, 0xfe);
    ((struct vrnic_aq_gid *)self->cmd)->rsvd0[0] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    ASSERT_FALSE(f->core.gids[0].type);
}

TEST_F(aq, query_with_wrong_length_or_bad_buffer)
{
    FakeBus *f = self->f;
    struct vrnic_aq_query *q;

    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE, 8, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE, 0xffffffff, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
          sizeof(struct vrnic_device_attr), 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
    /* An unmapped answer buffer fails the command, not the device. */
    q = query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
              sizeof(struct vrnic_device_attr), 0);
    q->resp_addr = htole64(FAKE_UNMAPPED);
    ASSERT_EQ(VRNIC_AQ_STS_DMA_ERROR, fake_aq_exec(f, self->cmd)->status);
    q->resp_addr = htole64(FAKE_MEM_BASE + FAKE_MEM_SIZE - 8);
    ASSERT_EQ(VRNIC_AQ_STS_DMA_ERROR, fake_aq_exec(f, self->cmd)->status);
    q->resp_addr = htole64(~0ull - 16);
    ASSERT_EQ(VRNIC_AQ_STS_DMA_ERROR, fake_aq_exec(f, self->cmd)->status);
    ASSERT_FALSE(f->core.fatal);
}

TEST_F(aq, producer_index_overrun_is_ignored)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_AQ_PI, 5);     /* depth 4: 5 ahead is impossible */
    fake_settle(f);
    ASSERT_EQ(0, f->core.stats.aq_cmds);
    ASSERT_EQ(1, f->core.stats.guest_errors);
    fake_wr(f, VRNIC_REG_AQ_PI, 0x10000);   /* reserved bits */
    ASSERT_EQ(2, f->core.stats.guest_errors);
    ASSERT_EQ(0, f->core.aq.pi);
}

TEST_F(aq, unmapped_sq_stops_device_until_reset)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_AQ_CFG, 0);
    fake_wr64(f, VRNIC_REG_AQ_SQ_BASE_LO, FAKE_UNMAPPED);
    fake_wr(f, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE | 2);
    ASSERT_TRUE(f->core.aq.live);
    fake_wr(f, VRNIC_REG_AQ_PI, 1);
    fake_settle(f);
    ASSERT_TRUE(fake_rd(f, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_FATAL);
    ASSERT_FALSE(f->core.aq.live);
    /* While fatal, rings cannot be re-enabled. */
    fake_wr64(f, VRNIC_REG_AQ_SQ_BASE_LO, FAKE_AQ_SQ);
    fake_wr(f, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE | 2);
    ASSERT_FALSE(f->core.aq.live);
    fake_wr(f, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    ASSERT_FALSE(fake_rd(f, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_FATAL);
    fake_aq_enable(f, 2);
    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
          sizeof(struct vrnic_device_attr), 0);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
}

TEST_F(aq, unmapped_cq_stops_device)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_AQ_CFG, 0);
    fake_wr64(f, VRNIC_REG_AQ_CQ_BASE_LO, FAKE_UNMAPPED);
    fake_wr(f, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE | 2);
    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
          sizeof(struct vrnic_device_attr), 0);
    memcpy(fake_ptr(f, FAKE_AQ_SQ), self->cmd, VRNIC_AQ_CMD_SIZE);
    fake_wr(f, VRNIC_REG_AQ_PI, 1);
    fake_settle(f);
    ASSERT_TRUE(f->core.fatal);
    ASSERT_EQ(0, f->irqs[VRNIC_VEC_ADMIN]);
}

TEST_F(aq, irq_only_when_enabled)
{
    FakeBus *f = self->f;

    fake_wr(f, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE | 2);   /* IRQ_EN off */
    query(self->cmd, VRNIC_AQ_OP_QUERY_DEVICE,
          sizeof(struct vrnic_device_attr), 0);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(0, f->irqs[VRNIC_VEC_ADMIN]);
}

TEST_F(aq, gid_table_bounds_and_roundtrip)
{
    FakeBus *f = self->f;
    struct vrnic_gid_entry *e = fake_ptr(f, FAKE_RESP);

    /* Last valid index works, one past it is BAD_INDEX. */
    gid_cmd(self->cmd, VRNIC_AQ_OP_ADD_GID, 15, 0xfe);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    gid_cmd(self->cmd, VRNIC_AQ_OP_ADD_GID, 16, 0xfe);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
    gid_cmd(self->cmd, VRNIC_AQ_OP_ADD_GID, 0xffffffff, 0xfe);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
    query(self->cmd, VRNIC_AQ_OP_QUERY_GID, sizeof(*e), 16);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);

    query(self->cmd, VRNIC_AQ_OP_QUERY_GID, sizeof(*e), 15);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(0xfe, e->gid[0]);
    ASSERT_EQ(1, e->gid[15]);
    ASSERT_EQ(VRNIC_GID_TYPE_ROCE_V2, le32toh(e->type));

    gid_cmd(self->cmd, VRNIC_AQ_OP_DEL_GID, 15, 0);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    query(self->cmd, VRNIC_AQ_OP_QUERY_GID, sizeof(*e), 15);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(0, le32toh(e->type));
    ASSERT_EQ(0, e->gid[0]);
    /* Deleting an unused entry is a state error. */
    gid_cmd(self->cmd, VRNIC_AQ_OP_DEL_GID, 15, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, fake_aq_exec(f, self->cmd)->status);
    gid_cmd(self->cmd, VRNIC_AQ_OP_DEL_GID, 16, 0);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
}

TEST_F(aq, port_stats_query)
{
    FakeBus *f = self->f;
    struct vrnic_port_stats *st = fake_ptr(f, FAKE_RESP);

    f->core.stats.port[VRNIC_PORT_STAT_RX_QKEY_MISMATCH] = 3;
    f->core.stats.port[VRNIC_PORT_STAT_TX_BYTES] = 1ull << 40;
    memset(st, 0xa5, sizeof(*st));
    query(self->cmd, VRNIC_AQ_OP_QUERY_PORT_STATS, sizeof(*st), 1);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(3, le64toh(st->counter[VRNIC_PORT_STAT_RX_QKEY_MISMATCH]));
    ASSERT_EQ(1ull << 40, le64toh(st->counter[VRNIC_PORT_STAT_TX_BYTES]));
    /* Slots the interface does not define read as zero. */
    ASSERT_EQ(0, st->counter[VRNIC_PORT_STATS_SLOTS - 1]);

    query(self->cmd, VRNIC_AQ_OP_QUERY_PORT_STATS, sizeof(*st), 2);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, fake_aq_exec(f, self->cmd)->status);
    query(self->cmd, VRNIC_AQ_OP_QUERY_PORT_STATS, sizeof(*st) - 8, 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
}

TEST_F(aq, gid_type_and_value_checked)
{
    FakeBus *f = self->f;
    struct vrnic_aq_gid *g;

    g = gid_cmd(self->cmd, VRNIC_AQ_OP_ADD_GID, 0, 0xfe);
    g->type = htole32(2);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    g = gid_cmd(self->cmd, VRNIC_AQ_OP_ADD_GID, 0, 0);
    g->gid[15] = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    g = gid_cmd(self->cmd, VRNIC_AQ_OP_DEL_GID, 0, 0);
    g->type = htole32(VRNIC_GID_TYPE_ROCE_V2);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    ASSERT_FALSE(f->core.gids[0].type);
}

TEST_F(aq, set_mtu_and_mac_bounds)
{
    FakeBus *f = self->f;
    struct vrnic_aq_set_mtu *m = (void *)self->cmd;
    struct vrnic_aq_set_mac *a = (void *)self->cmd;
    static const uint8_t mac[6] = { 0x02, 1, 2, 3, 4, 5 };

    m->hdr.opcode = htole16(VRNIC_AQ_OP_SET_MTU);
    m->mtu = htole32(67);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    m->mtu = htole32(9001);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    m->mtu = htole32(4200);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(4200, f->core.mtu);

    memset(self->cmd, 0, sizeof(self->cmd));
    a->hdr.opcode = htole16(VRNIC_AQ_OP_SET_MAC);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    a->mac[0] = 0x01;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, fake_aq_exec(f, self->cmd)->status);
    memcpy(a->mac, mac, 6);
    ASSERT_EQ(VRNIC_AQ_STS_OK, fake_aq_exec(f, self->cmd)->status);
    ASSERT_EQ(0, memcmp(mac, f->core.mac, 6));
}

TEST_F(aq, guest_rewriting_slot_after_doorbell_sees_copy_semantics)
{
    FakeBus *f = self->f;
    struct vrnic_aq_cqe *cqe;

    /* The device reads each command once; the completion reflects what it
     * read at processing time, and a garbage slot gives a status, not a
     * crash. */
    memset(fake_ptr(f, FAKE_AQ_SQ), 0xff, VRNIC_AQ_CMD_SIZE);
    fake_wr(f, VRNIC_REG_AQ_PI, 1);
    fake_settle(f);
    cqe = fake_ptr(f, FAKE_AQ_CQ);
    ASSERT_EQ(0xffff, le16toh(cqe->cmd_id));
    ASSERT_NE(VRNIC_AQ_STS_OK, cqe->status);
}

TEST_HARNESS_MAIN
