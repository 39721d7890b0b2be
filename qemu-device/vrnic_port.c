/*
 * vrnic port commands: device/port queries, MAC, MTU and the RoCE GID table.
 * Callers have checked the reserved bytes of each command.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/* major.minor.0 of the interface version */
#define VRNIC_FW_VERSION \
    (VRNIC_FIELD_PREP(VRNIC_FW_VERSION_MAJOR_MASK, \
                      (uint64_t)VRNIC_VERSION_MAJOR) | \
     VRNIC_FIELD_PREP(VRNIC_FW_VERSION_MINOR_MASK, \
                      (uint64_t)VRNIC_VERSION_MINOR))

/* Write a query answer of exactly resp_len bytes to the guest's buffer. */
static uint8_t vrnic_port_answer(VrnicCore *core,
                                 const struct vrnic_aq_query *c,
                                 const void *resp, uint32_t len)
{
    uint64_t addr = le64_to_cpu(c->resp_addr);

    if (le32_to_cpu(c->resp_len) != len) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "resp_len",
                            le32_to_cpu(c->resp_len));
    }
    if (!vrnic_dma_write(core, addr, resp, len)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "resp_addr", addr);
    }
    return VRNIC_AQ_STS_OK;
}

/* Modified EUI-64 from the permanent MAC: stable across resets and reboots. */
static void vrnic_port_guid(const VrnicCore *core, uint8_t guid[8])
{
    const uint8_t *m = core->cfg.mac;

    guid[0] = m[0] ^ 0x02;
    guid[1] = m[1];
    guid[2] = m[2];
    guid[3] = 0xff;
    guid[4] = 0xfe;
    guid[5] = m[3];
    guid[6] = m[4];
    guid[7] = m[5];
}

uint8_t vrnic_port_query_device(VrnicCore *core, const struct vrnic_aq_query *c)
{
    const VrnicConfig *cfg = &core->cfg;
    struct vrnic_device_attr a = {
        .fw_version = cpu_to_le64(VRNIC_FW_VERSION),
        .max_mr_size = cpu_to_le64(VRNIC_MAX_MR_SIZE),
        .page_size_cap = cpu_to_le64(VRNIC_PAGE_SIZE_CAP),
        .vendor_id = cpu_to_le32(VRNIC_PCI_VENDOR_ID),
        .vendor_part_id = cpu_to_le32(VRNIC_PCI_DEVICE_ID),
        .hw_version = cpu_to_le32(VRNIC_PCI_REVISION),
        .max_qp = cpu_to_le32(cfg->max_qp),
        .max_qp_wr = cpu_to_le32(cfg->max_qp_wr),
        .max_sge = cpu_to_le32(cfg->max_sge),
        .max_cq = cpu_to_le32(cfg->max_cq),
        .max_cqe = cpu_to_le32(cfg->max_cqe),
        .max_mr = cpu_to_le32(cfg->max_mr),
        .max_pd = cpu_to_le32(cfg->max_pd),
        .max_qp_rd_atom = cpu_to_le32(cfg->max_qp_rd_atom),
        .max_srq = cpu_to_le32(cfg->max_srq),
        .max_srq_wr = cpu_to_le32(cfg->max_srq_wr),
        .max_inline_data = cpu_to_le32(cfg->max_inline_data),
        .num_comp_vectors = cpu_to_le32(cfg->num_comp_vectors),
        .device_caps = cpu_to_le32(VRNIC_DEVICE_CAP_ATOMIC_HCA |
                                   VRNIC_DEVICE_CAP_ON_DEMAND |
                                   VRNIC_DEVICE_CAP_ATOMIC_WRITE |
                                   VRNIC_DEVICE_CAP_FLUSH |
                                   VRNIC_DEVICE_CAP_TIMESTAMP |
                                   VRNIC_DEVICE_CAP_RAW_PACKET |
                                   VRNIC_DEVICE_CAP_RSS |
                                   VRNIC_DEVICE_CAP_XRC |
                                   (cfg->dm_size ? VRNIC_DEVICE_CAP_DEVICE_MEM :
                                                   0)),
    };

    if (le32_to_cpu(c->index) != 0) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "index",
                            le32_to_cpu(c->index));
    }
    vrnic_port_guid(core, a.node_guid);
    vrnic_port_guid(core, a.sys_image_guid);
    return vrnic_port_answer(core, c, &a, sizeof(a));
}

uint8_t vrnic_port_query_port(VrnicCore *core, const struct vrnic_aq_query *c)
{
    const VrnicConfig *cfg = &core->cfg;
    struct vrnic_port_attr a = {
        .flags = cpu_to_le32(core->link_up ? VRNIC_PORT_FLAG_LINK_UP : 0),
        .max_mtu = cpu_to_le32(cfg->max_mtu),
        .mtu = cpu_to_le32(core->mtu),
        .gid_tbl_len = cpu_to_le32(cfg->gid_tbl_len),
        .pkey_tbl_len = cpu_to_le32(1),
        .speed_mbps = cpu_to_le32(cfg->speed_mbps),
    };

    if (le32_to_cpu(c->index) != VRNIC_PORT_NUM) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "port",
                            le32_to_cpu(c->index));
    }
    memcpy(a.mac, core->mac, sizeof(a.mac));
    return vrnic_port_answer(core, c, &a, sizeof(a));
}

uint8_t vrnic_port_query_gid(VrnicCore *core, const struct vrnic_aq_query *c)
{
    uint32_t index = le32_to_cpu(c->index);
    struct vrnic_gid_entry e = {};

    if (index >= core->cfg.gid_tbl_len) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "gid index", index);
    }
    memcpy(e.gid, core->gids[index].gid, sizeof(e.gid));
    e.type = cpu_to_le32(core->gids[index].type);
    return vrnic_port_answer(core, c, &e, sizeof(e));
}

uint8_t vrnic_port_query_stats(VrnicCore *core,
                               const struct vrnic_aq_query *c)
{
    struct vrnic_port_stats st = {};

    if (le32_to_cpu(c->index) != VRNIC_PORT_NUM) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "port",
                            le32_to_cpu(c->index));
    }
    for (unsigned i = 0; i < VRNIC_PORT_STAT_NUM; i++) {
        st.counter[i] = cpu_to_le64(core->stats.port[i]);
    }
    return vrnic_port_answer(core, c, &st, sizeof(st));
}

uint8_t vrnic_port_set_mac(VrnicCore *core, const struct vrnic_aq_set_mac *c)
{
    static const uint8_t zero[6];

    /* A multicast or all-zero source address is never valid. */
    if ((c->mac[0] & 1) || !memcmp(c->mac, zero, sizeof(zero))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mac", c->mac[0]);
    }
    memcpy(core->mac, c->mac, sizeof(core->mac));
    core->addr_gen++;
    trace_vrnic_set_mac(c->mac[0], c->mac[1], c->mac[2], c->mac[3], c->mac[4],
                        c->mac[5]);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_port_set_mtu(VrnicCore *core, const struct vrnic_aq_set_mtu *c)
{
    uint32_t mtu = le32_to_cpu(c->mtu);

    if (mtu < VRNIC_MIN_MTU || mtu > core->cfg.max_mtu) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mtu", mtu);
    }
    core->mtu = mtu;
    trace_vrnic_set_mtu(mtu);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_port_add_gid(VrnicCore *core, const struct vrnic_aq_gid *c)
{
    static const uint8_t zero[16];
    uint32_t index = le32_to_cpu(c->index);

    if (index >= core->cfg.gid_tbl_len) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "gid index", index);
    }
    if (le32_to_cpu(c->type) != VRNIC_GID_TYPE_ROCE_V2 ||
        !memcmp(c->gid, zero, sizeof(zero))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "gid type or zero gid",
                            le32_to_cpu(c->type));
    }
    memcpy(core->gids[index].gid, c->gid, sizeof(c->gid));
    core->gids[index].type = VRNIC_GID_TYPE_ROCE_V2;
    core->addr_gen++;
    trace_vrnic_gid_set(index, ldq_be_p(c->gid), ldq_be_p(c->gid + 8));
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_port_del_gid(VrnicCore *core, const struct vrnic_aq_gid *c)
{
    static const uint8_t zero[16];
    uint32_t index = le32_to_cpu(c->index);

    if (index >= core->cfg.gid_tbl_len) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "gid index", index);
    }
    if (c->type || memcmp(c->gid, zero, sizeof(zero))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "type or gid not 0",
                            c->type);
    }
    if (!core->gids[index].type) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "gid not set", index);
    }
    memset(&core->gids[index], 0, sizeof(core->gids[index]));
    core->addr_gen++;
    trace_vrnic_gid_clear(index);
    return VRNIC_AQ_STS_OK;
}
