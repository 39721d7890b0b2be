/*
 * vrnic device core: the RNIC's behaviour, free of QOM/PCI/netdev code.
 *
 * The QEMU glue (vrnic.c) owns the PCI function, BARs, MSI-X, the netdev and
 * the bottom halves, and reaches the core only through the functions below;
 * the core reaches back only through VrnicCoreOps. That split lets the host
 * unit tests (qemu-device/tests/) drive the core with a fake bus.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_CORE_H
#define HW_VRNIC_CORE_H

#include "uapi/vrnic_hw_defs.h"
#include "vrnic_obj.h"

#include "vrnic_fault.h"

/* Deferred work the core asks the glue to run later, outside MMIO context. */
typedef enum VrnicWork {
    VRNIC_WORK_ADMIN,       /* process the admin SQ */
    VRNIC_WORK_ETH_TX,      /* process the Ethernet TX ring */
    VRNIC_WORK_LINK,        /* report a link change on the AEQ */
    VRNIC_WORK_QUEUES,      /* QP/CQ doorbell work: flushes, due CQ events */
    VRNIC_WORK__MAX,
} VrnicWork;

typedef struct VrnicCoreOps {
    /* Guest memory through the PCI function's DMA address space. */
    bool (*dma_read)(void *opaque, uint64_t addr, void *buf, uint64_t len);
    bool (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                      uint64_t len);
    /* Raise MSI-X vector (always < VRNIC_VEC_COMP_FIRST + num_comp_vectors). */
    void (*irq)(void *opaque, unsigned vector);
    /* Run vrnic_core_run(core, work) soon, from a bottom half. */
    void (*kick)(void *opaque, VrnicWork work);
    /* Put one Ethernet frame on the wire. When the wire cannot take more
     * (the frame was queued), the glue calls vrnic_core_wire_busy(), and
     * vrnic_core_wire_ready() once the queue drained. */
    void (*eth_send)(void *opaque, const uint8_t *frame, size_t len);
    /* RX buffers were posted: frames held back by the netdev may flow again. */
    void (*eth_rx_ready)(void *opaque);
    /* The device clock (ns) and its one timer: vrnic_core_timer() is due at
     * deadline_ns (a later call replaces the deadline). */
    int64_t (*clock_ns)(void *opaque);
    void (*timer_mod)(void *opaque, int64_t deadline_ns);
} VrnicCoreOps;

/* Fixed at realize from -device properties; reported through CAP registers
 * and QUERY_DEVICE/QUERY_PORT. */
typedef struct VrnicConfig {
    uint8_t mac[6];
    uint32_t num_comp_vectors;
    uint32_t db_pages;
    uint32_t gid_tbl_len;
    uint32_t max_mtu;
    uint32_t speed_mbps;
    uint32_t cmd_timeout_ms;
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_sge;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_inline_data;
    uint32_t max_qp_rd_atom;
    uint32_t dm_size;       /* bytes of device memory (BAR5), 0 = none */
} VrnicConfig;

#define VRNIC_MAX_COMP_VECTORS  64
#define VRNIC_MAX_GID_TBL_LEN   256
#define VRNIC_MIN_MTU           68
#define VRNIC_MAX_MTU           9000
/* Largest frame on the wire: MTU + Ethernet header + one VLAN tag. */
#define VRNIC_ETH_OVERHEAD      18
#define VRNIC_ETH_MIN_FRAME     14
/* Object numbers travel in 16-bit doorbell fields (qpn up to max_qp + 1). */
#define VRNIC_MAX_OBJECTS       65534
/* Device memory (BAR5): a 32-bit BAR, so keep it well inside 4 GiB. */
#define VRNIC_DM_MIN_SIZE       4096
#define VRNIC_DM_MAX_SIZE       (64u << 20)
/* Work queue and CQ indices are free-running u16 with the phase in bit
 * log_depth, so a ring has at most 2^15 entries. */
#define VRNIC_MAX_QUEUE_DEPTH   32768

/*
 * A ring the driver programs through BASE_LO/HI + CFG registers. base_reg and
 * cfg hold what the guest wrote; base/depth are latched only when the guest
 * enables the ring, after validation, and never change while it is live.
 */
typedef struct VrnicRing {
    const char *name;
    uint64_t base_reg;
    uint32_t cfg;
    bool live;
    uint64_t base;
    uint32_t log_depth;
    uint16_t pi;    /* producer index (guest doorbell, or device for AEQ) */
    uint16_t ci;    /* consumer index (device, or guest for AEQ) */
} VrnicRing;

typedef struct VrnicGid {
    uint8_t gid[16];
    uint32_t type;  /* enum vrnic_gid_type; 0 = unused */
} VrnicGid;

typedef struct VrnicCounters {
    uint64_t guest_errors;
    uint64_t aq_cmds;
    uint64_t aeq_overflows;
    uint64_t eth_tx_frames;
    uint64_t eth_tx_errors;
    uint64_t eth_rx_frames;
    uint64_t eth_rx_filtered;
    uint64_t eth_rx_too_big;
    uint64_t eq_overflows;
    uint64_t cq_overflows;
    uint64_t db_rejected;
    /* RoCEv2 transport (vrnic_tx.c, vrnic_rx.c): QUERY_PORT_STATS */
    uint64_t port[VRNIC_PORT_STAT_NUM];
} VrnicCounters;

/*
 * Object tables (vrnic_obj.h), allocated at init from the max-* limits and
 * indexed by object number; entry 0 is never used. qps has max_qp + 2
 * entries: qpn 1 is the GSI QP and other QPs get 2 .. max_qp + 1, but at
 * most max_qp QPs (GSI included) exist at once.
 */
typedef struct VrnicObjects {
    VrnicPd *pds;
    VrnicMr *mrs;
    VrnicCq *cqs;
    VrnicQp *qps;
    VrnicSrq *srqs;
    VrnicEq eqs[VRNIC_MAX_COMP_VECTORS + 1];
    uint32_t n_pds, n_mrs, n_cqs, n_qps, n_srqs, n_eqs;
    /* Next-fit cursors: a freed number is reused as late as possible, so a
     * stale key or number is unlikely to name a new object. */
    uint32_t next_pd, next_mr, next_cq, next_qp, next_srq;
    uint32_t qps_pending;   /* QPs with pending set */
    uint32_t cqs_notify;    /* CQs with notify set */
    /* Multicast groups (vrnic_mcast.c); n_mcast slots are in use. */
    VrnicMcastGrp mcast[VRNIC_MCAST_MAX_GRP];
    uint32_t n_mcast;
} VrnicObjects;

typedef struct VrnicCore {
    const VrnicCoreOps *ops;
    void *opaque;
    VrnicConfig cfg;

    bool link_up;           /* netdev link; survives device reset */
    bool link_reported;     /* link state last reported on the AEQ */
    bool fatal;             /* a DMA error stopped the device */

    /* Admin queue: one SQ and one CQ of the same depth. */
    VrnicRing aq;
    uint64_t aq_cq_base_reg;
    uint64_t aq_cq_base;

    VrnicRing aeq;
    bool aeq_armed;

    VrnicRing eth_tx;
    VrnicRing eth_rx;
    bool eth_tx_armed;
    bool eth_rx_armed;
    uint32_t eth_ctrl;

    uint8_t mac[6];
    uint32_t mtu;
    VrnicGid gids[VRNIC_MAX_GID_TBL_LEN];

    VrnicObjects obj;
    uint8_t *devmem;        /* cfg.dm_size bytes of BAR5, owned by the glue */

    struct VrnicLoop *loop; /* loopback wire (vrnic_rx.c) */
    VrnicFaultCfg fault_cfg;
    struct VrnicFault *fault;   /* vrnic_fault.c */
    int64_t timer_due;      /* INT64_MAX: the timer is idle */
    bool wire_busy;         /* RoCEv2 output waits for vrnic_core_wire_ready */
    bool timer_fired;       /* expired: handled in the queue bottom half */
    uint16_t ip_id;         /* IPv4 identification of RoCEv2 frames */
    uint32_t ooo_held;      /* RC packets held past gaps, all QPs */

    VrnicCounters stats;
} VrnicCore;

/* Validate the configuration; NULL when fine, else a static message. */
const char *vrnic_core_check_config(const VrnicConfig *cfg);
void vrnic_core_init(VrnicCore *core, const VrnicConfig *cfg,
                     const VrnicCoreOps *ops, void *opaque);
void vrnic_core_reset(VrnicCore *core);
/*
 * Device memory: the cfg.dm_size bytes behind BAR5, which the guest CPU
 * reaches directly; call once after init when cfg.dm_size is not 0.
 */
void vrnic_core_set_devmem(VrnicCore *core, uint8_t *ram);
/* Free what vrnic_core_init allocated; call after the final reset. */
void vrnic_core_uninit(VrnicCore *core);

/* BAR0 registers (4-byte accesses) and BAR2 doorbell pages. */
uint32_t vrnic_core_reg_read(VrnicCore *core, uint64_t addr);
void vrnic_core_reg_write(VrnicCore *core, uint64_t addr, uint32_t val);
void vrnic_core_db_write(VrnicCore *core, uint64_t addr, uint32_t val);

void vrnic_core_run(VrnicCore *core, VrnicWork work);
/* Transmit backpressure from the netdev (see VrnicCoreOps.eth_send). */
void vrnic_core_wire_busy(VrnicCore *core);
void vrnic_core_wire_ready(VrnicCore *core);
/* The device timer expired (VrnicCoreOps.timer_mod). */
void vrnic_core_timer(VrnicCore *core);
/* Fault injection on the wire (vrnic_fault.c); any time after init. */
void vrnic_core_set_faults(VrnicCore *core, const VrnicFaultCfg *cfg);

/* Ethernet port. */
void vrnic_core_set_link(VrnicCore *core, bool up);
bool vrnic_core_eth_can_receive(VrnicCore *core);
/* Returns len when the frame was consumed or dropped, 0 to hold it back. */
size_t vrnic_core_eth_receive(VrnicCore *core, const uint8_t *frame,
                              size_t len);

static inline uint32_t vrnic_total_vectors(const VrnicConfig *cfg)
{
    return VRNIC_VEC_COMP_FIRST + cfg->num_comp_vectors;
}

#endif
