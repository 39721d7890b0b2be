/*
 * Definitions shared by the vrnic core's source files (not by the glue).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_CORE_INT_H
#define HW_VRNIC_CORE_INT_H

#include "qemu/bswap.h"
#include "qemu/log.h"
#include "vrnic_core.h"
#include "trace.h"

/*
 * Report a guest programming error: the trace event (with the same
 * arguments) plus a LOG_GUEST_ERROR line naming the event and the function.
 * The caller then ignores the access or fails the operation with a status.
 */
#define VRNIC_GUEST_ERR(core, event, fmt, ...)                            \
    do {                                                                  \
        (core)->stats.guest_errors++;                                     \
        trace_##event(__VA_ARGS__);                                       \
        qemu_log_mask(LOG_GUEST_ERROR, "vrnic: " #event " in %s: " fmt    \
                      "\n", __func__, ##__VA_ARGS__);                     \
    } while (0)

static inline uint32_t vrnic_ring_depth(const VrnicRing *r)
{
    return 1u << r->log_depth;
}

/* Slot address of free-running index idx in a live ring of esize entries. */
static inline uint64_t vrnic_ring_slot(const VrnicRing *r, uint64_t base,
                                       uint16_t idx, uint32_t esize)
{
    return base + (uint64_t)(idx & (vrnic_ring_depth(r) - 1)) * esize;
}

/* The phase the device stamps for free-running index idx: 1 on the first
 * pass, flipping at every wrap (uapi: VRNIC_OWNER_PHASE). */
static inline uint32_t vrnic_ring_phase(const VrnicRing *r, uint16_t idx)
{
    return ((idx >> r->log_depth) & 1) ^ 1;
}

/* vrnic_core.c */
void vrnic_core_irq(VrnicCore *core, unsigned vector);
void vrnic_core_fatal(VrnicCore *core, const char *what, uint64_t addr);
bool vrnic_dma_read(VrnicCore *core, uint64_t addr, void *buf, uint64_t len);
bool vrnic_dma_write(VrnicCore *core, uint64_t addr, const void *buf,
                     uint64_t len);

/* vrnic_admin.c */
void vrnic_admin_process(VrnicCore *core);

/* vrnic_event.c */
void vrnic_aeq_post(VrnicCore *core, uint32_t event, uint32_t data);
void vrnic_aeq_write_ci(VrnicCore *core, uint32_t val);

/* vrnic_port.c: one handler per port command; each returns a status. */
uint8_t vrnic_port_query_device(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_port_query_port(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_port_query_gid(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_port_set_mac(VrnicCore *core, const struct vrnic_aq_set_mac *c);
uint8_t vrnic_port_set_mtu(VrnicCore *core, const struct vrnic_aq_set_mtu *c);
uint8_t vrnic_port_add_gid(VrnicCore *core, const struct vrnic_aq_gid *c);
uint8_t vrnic_port_del_gid(VrnicCore *core, const struct vrnic_aq_gid *c);

/* vrnic_eth.c */
void vrnic_eth_tx_process(VrnicCore *core);
void vrnic_eth_write_arm(VrnicCore *core, VrnicRing *ring, bool *armed,
                         uint32_t val);

#endif
