/*
 * vrnic async event queue (AEQ): port events and object error events for
 * the driver, on MSI-X vector 0 when armed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

void vrnic_aeq_post(VrnicCore *core, uint32_t event, uint32_t data)
{
    VrnicRing *aeq = &core->aeq;
    struct vrnic_aeqe e = {
        .event = cpu_to_le32(event),
        .data = cpu_to_le32(data),
    };
    uint32_t owner;
    uint64_t slot;

    if (!aeq->live) {
        return;     /* no AEQ yet: the driver reads DEV_STS at start */
    }
    if ((uint16_t)(aeq->pi - aeq->ci) >= vrnic_ring_depth(aeq)) {
        /* Full: the event is lost, as on hardware; count it. */
        core->stats.aeq_overflows++;
        VRNIC_GUEST_ERR(core, vrnic_err_aeq_overflow, "event %u data %u lost",
                        event, data);
        return;
    }
    slot = vrnic_ring_slot(aeq, aeq->base, aeq->pi, VRNIC_AEQE_SIZE);
    owner = cpu_to_le32(vrnic_ring_phase(aeq, aeq->pi) ? VRNIC_OWNER_PHASE : 0);
    trace_vrnic_aeq_post(event, data, aeq->pi);
    if (!vrnic_dma_write(core, slot, &e, offsetof(struct vrnic_aeqe, owner)) ||
        !vrnic_dma_write(core, slot + offsetof(struct vrnic_aeqe, owner),
                         &owner, sizeof(owner))) {
        vrnic_core_fatal(core, "AEQ", slot);
        return;
    }
    aeq->pi++;
    if (core->aeq_armed) {
        core->aeq_armed = false;
        vrnic_core_irq(core, VRNIC_VEC_ADMIN);
    }
}

/* VRNIC_REG_AEQ_CI: the driver's consumer index, optionally re-arming. */
void vrnic_aeq_write_ci(VrnicCore *core, uint32_t val)
{
    VrnicRing *aeq = &core->aeq;
    uint16_t ci = val & VRNIC_INDEX_MASK;

    if (!aeq->live || (val & ~(VRNIC_INDEX_MASK | VRNIC_AEQ_CI_ARM))) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: CI write 0x%x on a ring "
                        "that is not live, or reserved bits", aeq->name, val);
        return;
    }
    /* The consumer cannot pass the producer. */
    if ((uint16_t)(aeq->pi - ci) > vrnic_ring_depth(aeq)) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: consumer index 0x%x past "
                        "producer", aeq->name, val);
        return;
    }
    aeq->ci = ci;
    if (!(val & VRNIC_AEQ_CI_ARM)) {
        return;
    }
    if (aeq->pi != ci) {
        vrnic_core_irq(core, VRNIC_VEC_ADMIN);
    } else {
        core->aeq_armed = true;
    }
}
