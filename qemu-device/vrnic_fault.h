/*
 * vrnic fault injection on the port's wire (vrnic_fault.c): what the
 * injector is configured with, set from -device properties at start and
 * through QOM properties (qom-set) at run time.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_FAULT_H
#define HW_VRNIC_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#define VRNIC_FAULT_PPM         1000000u
#define VRNIC_FAULT_MAX_DEPTH   64      /* reorder depth, frames */
#define VRNIC_FAULT_MAX_DELAY   1000000u /* extra delay, us (1 s) */

/* Directions the injector acts on (fault-dir). */
enum {
    VRNIC_FAULT_DIR_TX = 1,     /* RoCEv2 frames the port sends */
    VRNIC_FAULT_DIR_RX = 2,     /* RoCEv2 frames routed to the engine */
};

typedef struct VrnicFaultCfg {
    uint32_t drop_ppm;          /* lose the frame */
    uint32_t reorder_ppm;       /* hold it back behind reorder_depth frames */
    uint32_t reorder_depth;     /* 1 .. VRNIC_FAULT_MAX_DEPTH */
    uint32_t dup_ppm;           /* deliver it twice */
    uint32_t corrupt_ppm;       /* flip one bit the ICRC covers */
    uint32_t delay_us;          /* every frame, 0 .. VRNIC_FAULT_MAX_DELAY */
    uint64_t seed;              /* the random sequence; set = restart it */
    uint32_t dir;               /* VRNIC_FAULT_DIR_* mask */
} VrnicFaultCfg;

#endif
