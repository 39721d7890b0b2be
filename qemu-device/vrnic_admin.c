/*
 * vrnic admin queue: fetch commands from the SQ, dispatch them, write one
 * completion per command with the owner phase, interrupt on vector 0.
 *
 * Every command (VRNIC_AQ_CMD_SIZE = 128 bytes) is
 * copied out of guest memory into the device's buffer before it is looked
 * at, once, and only the copy is used (a hostile guest may rewrite the slot
 * at any time) - also by a command that takes several runs.
 * A failed command changes nothing and returns 0 in result.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/*
 * Per bottom-half run, so a guest that keeps the SQ full cannot monopolise
 * the thread that runs the core, at most this many commands and no new
 * command once this many DMA transfers were spent; the rest go in the next
 * run. Every
 * handler's own work is bounded (a long one, RESIZE_CQ, goes on over
 * several runs), so a run ends within the work budget plus one command.
 */
#define VRNIC_AQ_BUDGET 64
#define VRNIC_AQ_WORK   4096

static uint8_t vrnic_admin_dispatch(VrnicCore *core, const uint8_t *raw,
                                    uint64_t *result)
{
    const struct vrnic_aq_hdr *hdr = (const void *)raw;
    uint16_t opcode = le16_to_cpu(hdr->opcode);

    *result = 0;
    if (!VRNIC_RSVD_ZERO(hdr->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    switch (opcode) {
    case VRNIC_AQ_OP_QUERY_DEVICE:
    case VRNIC_AQ_OP_QUERY_PORT:
    case VRNIC_AQ_OP_QUERY_GID:
    case VRNIC_AQ_OP_QUERY_PORT_STATS:
    case VRNIC_AQ_OP_QUERY_QP:
    case VRNIC_AQ_OP_QUERY_SRQ: {
        const struct vrnic_aq_query *c = (const void *)raw;

        if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
        }
        switch (opcode) {
        case VRNIC_AQ_OP_QUERY_DEVICE:
            return vrnic_port_query_device(core, c);
        case VRNIC_AQ_OP_QUERY_PORT:
            return vrnic_port_query_port(core, c);
        case VRNIC_AQ_OP_QUERY_GID:
            return vrnic_port_query_gid(core, c);
        case VRNIC_AQ_OP_QUERY_PORT_STATS:
            return vrnic_port_query_stats(core, c);
        case VRNIC_AQ_OP_QUERY_QP:
            return vrnic_qp_query(core, c);
        default:
            return vrnic_srq_query(core, c);
        }
    }
    case VRNIC_AQ_OP_SET_MAC: {
        const struct vrnic_aq_set_mac *c = (const void *)raw;

        if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
        }
        return vrnic_port_set_mac(core, c);
    }
    case VRNIC_AQ_OP_SET_MTU: {
        const struct vrnic_aq_set_mtu *c = (const void *)raw;

        if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
        }
        return vrnic_port_set_mtu(core, c);
    }
    case VRNIC_AQ_OP_ADD_GID:
    case VRNIC_AQ_OP_DEL_GID: {
        const struct vrnic_aq_gid *c = (const void *)raw;

        if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
        }
        return opcode == VRNIC_AQ_OP_ADD_GID ? vrnic_port_add_gid(core, c) :
                                               vrnic_port_del_gid(core, c);
    }
    /* Objects: each handler checks its own reserved bytes. */
    case VRNIC_AQ_OP_CREATE_EQ:
        return vrnic_eq_create(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DESTROY_EQ:
        return vrnic_eq_destroy(core, (const void *)raw);
    case VRNIC_AQ_OP_ALLOC_PD:
        return vrnic_pd_alloc(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DEALLOC_PD:
        return vrnic_pd_dealloc(core, (const void *)raw);
    case VRNIC_AQ_OP_REG_MR:
        return vrnic_mr_reg(core, (const void *)raw, result);
    case VRNIC_AQ_OP_REREG_MR:
        return vrnic_mr_rereg(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DEREG_MR:
        return vrnic_mr_dereg(core, (const void *)raw);
    case VRNIC_AQ_OP_QUERY_MR:
        return vrnic_mr_query(core, (const void *)raw);
    case VRNIC_AQ_OP_ALLOC_MW:
        return vrnic_mw_alloc(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DEALLOC_MW:
        return vrnic_mw_dealloc(core, (const void *)raw);
    case VRNIC_AQ_OP_ALLOC_MR:
        return vrnic_frmr_alloc(core, (const void *)raw, result);
    case VRNIC_AQ_OP_CREATE_CQ:
        return vrnic_cq_create(core, (const void *)raw, result);
    case VRNIC_AQ_OP_RESIZE_CQ:
        return vrnic_cq_resize(core, (const void *)raw);
    case VRNIC_AQ_OP_MODIFY_CQ:
        return vrnic_cq_modify(core, (const void *)raw);
    case VRNIC_AQ_OP_DESTROY_CQ:
        return vrnic_cq_destroy(core, (const void *)raw);
    case VRNIC_AQ_OP_CREATE_QP:
        return vrnic_qp_create(core, (const void *)raw, result);
    case VRNIC_AQ_OP_MODIFY_QP:
        return vrnic_qp_modify(core, (const void *)raw);
    case VRNIC_AQ_OP_DESTROY_QP:
        return vrnic_qp_destroy(core, (const void *)raw);
    case VRNIC_AQ_OP_CREATE_SRQ:
        return vrnic_srq_create(core, (const void *)raw, result);
    case VRNIC_AQ_OP_MODIFY_SRQ:
        return vrnic_srq_modify(core, (const void *)raw);
    case VRNIC_AQ_OP_DESTROY_SRQ:
        return vrnic_srq_destroy(core, (const void *)raw);
    case VRNIC_AQ_OP_ATTACH_MCAST:
        return vrnic_mcast_attach(core, (const void *)raw);
    case VRNIC_AQ_OP_DETACH_MCAST:
        return vrnic_mcast_detach(core, (const void *)raw);
    case VRNIC_AQ_OP_PAGE_FAULT_DONE:
        return vrnic_odp_fault_done(core, (const void *)raw);
    case VRNIC_AQ_OP_ODP_INVALIDATE:
        return vrnic_odp_invalidate(core, (const void *)raw);
    case VRNIC_AQ_OP_CREATE_FLOW:
        return vrnic_flow_create(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DESTROY_FLOW:
        return vrnic_flow_destroy(core, (const void *)raw);
    case VRNIC_AQ_OP_CREATE_RSS:
        return vrnic_rss_create(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DESTROY_RSS:
        return vrnic_rss_destroy(core, (const void *)raw);
    case VRNIC_AQ_OP_ALLOC_XRCD:
        return vrnic_xrcd_alloc(core, (const void *)raw, result);
    case VRNIC_AQ_OP_DEALLOC_XRCD:
        return vrnic_xrcd_dealloc(core, (const void *)raw);
    default:
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_OPCODE, "opcode", opcode);
    }
}

/* Complete the command at SQ index ci; false if the CQ write failed. */
static bool vrnic_admin_complete(VrnicCore *core, uint16_t ci,
                                 uint16_t cmd_id, uint8_t status,
                                 uint64_t result)
{
    VrnicRing *aq = &core->aq;
    uint64_t slot = vrnic_ring_slot(aq, core->aq_cq_base, ci,
                                    VRNIC_AQ_CQE_SIZE);
    struct vrnic_aq_cqe cqe = {
        .result = cpu_to_le64(result),
        .cmd_id = cpu_to_le16(cmd_id),
        .status = status,
    };
    uint32_t owner = cpu_to_le32(vrnic_ring_phase(aq, ci) ? VRNIC_OWNER_PHASE
                                                          : 0);

    trace_vrnic_aq_done(ci, cmd_id, status, result);
    /* Body first, owner word last: the driver polls the owner word. */
    if (!vrnic_dma_write(core, slot, &cqe,
                         offsetof(struct vrnic_aq_cqe, owner)) ||
        !vrnic_dma_write(core, slot + offsetof(struct vrnic_aq_cqe, owner),
                         &owner, sizeof(owner))) {
        vrnic_core_fatal(core, "admin CQ", slot);
        return false;
    }
    return true;
}

void vrnic_admin_process(VrnicCore *core)
{
    VrnicRing *aq = &core->aq;
    const struct vrnic_aq_hdr *hdr = (const void *)core->aq_cmd;
    uint64_t start = core->dma_ops;
    unsigned done = 0;

    while (aq->live && aq->ci != aq->pi && done < VRNIC_AQ_BUDGET &&
           core->dma_ops - start < VRNIC_AQ_WORK) {
        uint64_t slot = vrnic_ring_slot(aq, aq->base, aq->ci,
                                        VRNIC_AQ_CMD_SIZE);
        uint64_t result;
        uint8_t status;

        if (!core->aq_cmd_held) {
            if (!vrnic_dma_read(core, slot, core->aq_cmd,
                                sizeof(core->aq_cmd))) {
                vrnic_core_fatal(core, "admin SQ", slot);
                break;
            }
            trace_vrnic_aq_cmd(aq->ci, le16_to_cpu(hdr->opcode),
                               le16_to_cpu(hdr->cmd_id));
        }
        status = vrnic_admin_dispatch(core, core->aq_cmd, &result);
        if (status == VRNIC_AQ_STS_IN_PROGRESS) {
            core->aq_cmd_held = true;   /* same copy, next run */
            break;
        }
        core->aq_cmd_held = false;
        if (status != VRNIC_AQ_STS_OK) {
            result = 0;
        }
        if (status != VRNIC_AQ_STS_OK && vrnic_aq_status_guest_error(status)) {
            VRNIC_GUEST_ERR(core, vrnic_err_aq_cmd, "opcode 0x%x id 0x%x: "
                            "status %u", le16_to_cpu(hdr->opcode),
                            le16_to_cpu(hdr->cmd_id), status);
        } else if (status != VRNIC_AQ_STS_OK) {
            trace_vrnic_aq_cmd_refused(le16_to_cpu(hdr->opcode),
                                       le16_to_cpu(hdr->cmd_id), status);
        }
        core->stats.aq_cmds++;
        if (!vrnic_admin_complete(core, aq->ci, le16_to_cpu(hdr->cmd_id),
                                  status, result)) {
            break;
        }
        aq->ci++;
        done++;
    }
    /* Completions written before a FATAL stop still get their interrupt. */
    if (done && (aq->cfg & VRNIC_RING_CFG_IRQ_EN)) {
        vrnic_core_irq(core, VRNIC_VEC_ADMIN);
    }
    if (aq->live && aq->ci != aq->pi) {
        vrnic_core_kick(core, VRNIC_WORK_ADMIN);
    }
}
