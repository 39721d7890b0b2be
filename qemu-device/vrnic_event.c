/*
 * vrnic async event queue (AEQ): port events and object error events for
 * the driver, on MSI-X vector 0 when armed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/*
 * Write one entry (its first 12 bytes from e, then the owner word: the
 * phase and owner_bits) and interrupt if armed. False when the AEQ is full
 * (or not live): nothing was written.
 */
bool vrnic_aeq_post_entry(VrnicCore *core, const void *e, uint32_t owner_bits)
{
    VrnicRing *aeq = &core->aeq;
    struct vrnic_aeqe head;
    uint32_t owner;
    uint64_t slot;

    if (!aeq->live || (uint16_t)(aeq->pi - aeq->ci) >= vrnic_ring_depth(aeq)) {
        return false;
    }
    slot = vrnic_ring_slot(aeq, aeq->base, aeq->pi, VRNIC_AEQE_SIZE);
    owner = cpu_to_le32(owner_bits |
                        (vrnic_ring_phase(aeq, aeq->pi) ? VRNIC_OWNER_PHASE :
                                                          0));
    memcpy(&head, e, offsetof(struct vrnic_aeqe, owner));
    trace_vrnic_aeq_post(le32_to_cpu(head.event), le32_to_cpu(head.data),
                         aeq->pi);
    if (!vrnic_dma_write(core, slot, &head,
                         offsetof(struct vrnic_aeqe, owner)) ||
        !vrnic_dma_write(core, slot + offsetof(struct vrnic_aeqe, owner),
                         &owner, sizeof(owner))) {
        vrnic_core_fatal(core, "AEQ", slot);
        return true;    /* the device stopped: nothing to wait for */
    }
    aeq->pi++;
    if (core->aeq_armed) {
        core->aeq_armed = false;
        vrnic_core_irq(core, VRNIC_VEC_ADMIN);
    }
    return true;
}

void vrnic_aeq_post(VrnicCore *core, uint32_t event, uint32_t data)
{
    struct vrnic_aeqe e = {
        .event = cpu_to_le32(event),
        .data = cpu_to_le32(data),
    };

    if (!core->aeq.live) {
        return;     /* no AEQ yet: the driver reads DEV_STS at start */
    }
    if (!vrnic_aeq_post_entry(core, &e, 0)) {
        /* Full: the event is lost, as on hardware; count it. */
        core->stats.aeq_overflows++;
        VRNIC_GUEST_ERR(core, vrnic_err_aeq_overflow, "event %u data %u lost",
                        event, data);
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
    if (core->odp_queued) {
        vrnic_odp_aeq_room(core);   /* page faults that found it full */
    }
    if (!(val & VRNIC_AEQ_CI_ARM)) {
        return;
    }
    if (aeq->pi != ci) {
        vrnic_core_irq(core, VRNIC_VEC_ADMIN);
    } else {
        core->aeq_armed = true;
    }
}
