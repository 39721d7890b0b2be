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

#include "standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h"
#include "vrnic_obj.h"

#include "vrnic_fault.h"

/* Deferred work the core asks the glue to run later, outside MMIO context. */
typedef enum VrnicWork {
    VRNIC_WORK_ADMIN,       /* process the admin SQ */
    VRNIC_WORK_ETH_TX,      /* process the Ethernet TX ring */
    VRNIC_WORK_ETH_RX,      /* frames waiting in the RX FIFO to the RX ring */
    VRNIC_WORK_LINK,        /* report a link change on the AEQ */
    VRNIC_WORK_QUEUES,      /* QP/CQ doorbell work: flushes, due CQ events */
    VRNIC_WORK__MAX,
} VrnicWork;

typedef struct VrnicCoreOps {
    /*
     * Guest memory through the PCI function's DMA address space. Only RAM:
     * an address that decodes to MMIO (another device's registers, a
     * bridge's config space) fails, so no DMA of the device can have side
     * effects on other devices - or reset or unplug this one under itself.
     */
    bool (*dma_read)(void *opaque, uint64_t addr, void *buf, uint64_t len);
    bool (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                      uint64_t len);
    /*
     * A FLUSH asked for persistence (IBTA 1.5): what the device placed in
     * guest RAM reaches the RAM's backing store - the file of a
     * file-backed memory backend (msync), nothing for anonymous RAM.
     */
    void (*dma_persist)(void *opaque);
    /* Raise MSI-X vector (always < VRNIC_VEC_COMP_FIRST + num_comp_vectors). */
    void (*irq)(void *opaque, unsigned vector);
    /* Run vrnic_core_run(core, work) soon, from a bottom half. */
    void (*kick)(void *opaque, VrnicWork work);
    /*
     * Put one Ethernet frame on the wire. True when it left at once; false
     * when the backend queued it (it then holds a copy), and the glue calls
     * vrnic_core_wire_sent() once that frame has left or was discarded.
     */
    bool (*eth_send)(void *opaque, const uint8_t *frame, size_t len);
    /*
     * The device clock (ns) and its one timer: vrnic_core_timer() is due at
     * deadline_ns (a later call replaces the deadline).
     */
    int64_t (*clock_ns)(void *opaque);
    /* The device clock of timestamp CQEs: host real time, ns. */
    int64_t (*wallclock_ns)(void *opaque);
    void (*timer_mod)(void *opaque, int64_t deadline_ns);
} VrnicCoreOps;

/*
 * Fixed at realize from -device properties; reported through CAP registers
 * and QUERY_DEVICE/QUERY_PORT.
 */
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
/*
 * Frames the netdev may hold queued for the device while its backend is
 * busy (each a copy on the host's heap): at this many the device sends
 * nothing more - RoCEv2 or Ethernet - until vrnic_core_wire_sent.
 */
#define VRNIC_WIRE_MAX_QUEUED   64
/* Object numbers travel in 16-bit doorbell fields (qpn up to max_qp + 1). */
#define VRNIC_MAX_OBJECTS       65534
/* Device memory (BAR5): a 32-bit BAR, so keep it well inside 4 GiB. */
#define VRNIC_DM_MIN_SIZE       4096
#define VRNIC_DM_MAX_SIZE       (64u << 20)
/*
 * Work queue and CQ indices are free-running u16 with the phase in bit
 * log_depth, so a ring has at most 2^15 entries.
 */
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

/* A RESIZE_CQ going on over several admin runs (vrnic_cq.c). */
typedef struct VrnicCqResize {
    bool active;
    uint32_t log_depth;
    uint16_t ci;            /* the consumer's, when the command began */
    uint16_t copied;        /* CQEs copied to the new ring so far */
    VrnicMem mem;           /* the new ring */
} VrnicCqResize;

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
    /* RoCEv2 transport (vrnic_xport.h): QUERY_PORT_STATS */
    uint64_t port[VRNIC_PORT_STAT_NUM];
} VrnicCounters;

/*
 * The translation cache (vrnic_tlb.c): page addresses by (translation id,
 * page index). id 0 is never handed out, so a zeroed entry is empty.
 */
#define VRNIC_TLB_ENTRIES   1024

typedef struct VrnicTlbEntry {
    uint64_t id;
    uint64_t idx;
    uint64_t pa;
} VrnicTlbEntry;

typedef struct VrnicTlb {
    uint64_t next_id;       /* the last id handed out */
    VrnicTlbEntry e[VRNIC_TLB_ENTRIES];
} VrnicTlb;

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
    uint32_t n_odp_mrs;     /* of the MRs, on-demand ones */
    /*
     * Next-fit cursors: a freed number is reused as late as possible, so a
     * stale key or number is unlikely to name a new object.
     */
    uint32_t next_pd, next_mr, next_cq, next_qp, next_srq;
    uint32_t qps_pending;   /* QPs with pending set */
    uint32_t qp_cursor;     /* vrnic_qp_process starts at qpn cursor + 1 */
    uint32_t cqs_notify;    /* CQs with notify set */
    uint32_t cqs_waiting;   /* CQs with mod_waiting set */
    /* Multicast groups (vrnic_mcast.c); n_mcast slots are in use. */
    VrnicMcastGrp mcast[VRNIC_MCAST_MAX_GRP];
    uint32_t n_mcast;
    /* Flow rules (vrnic_flow.c) by flow id; entry 0 is never used. */
    VrnicFlow flows[VRNIC_FLOW_MAX + 1];
    uint32_t n_flows;
    uint32_t next_flow;
    uint64_t flow_seq;
    /* RSS contexts (vrnic_rss.c) by index; number VRNIC_RSS_NUM_BASE + i. */
    VrnicRss rss[VRNIC_RSS_MAX];
    /* XRC domains (vrnic_xrc.c) by xrcdn; entry 0 is never used. */
    VrnicXrcd xrcds[VRNIC_XRCD_MAX + 1];
} VrnicObjects;

typedef struct VrnicCore {
    const VrnicCoreOps *ops;
    void *opaque;
    VrnicConfig cfg;

    /*
     * Entry points that can DMA (vrnic_core_run, vrnic_core_eth_receive)
     * nest this count. A reset or uninit that arrives while it is not 0 -
     * from inside the core's own DMA, were it ever to reach a device whose
     * handler resets or unplugs this one - must not free what the running
     * caller still uses: the reset is done when the outermost entry
     * returns, and after an uninit (gone) the core calls no op at all and
     * frees its tables on the way out.
     */
    unsigned running;
    bool reset_pending;
    bool gone;

    bool link_up;           /* netdev link; survives device reset */
    bool link_reported;     /* link state last reported on the AEQ */
    bool fatal;             /* a DMA error stopped the device */

    /* Admin queue: one SQ and one CQ of the same depth. */
    VrnicRing aq;
    uint64_t aq_cq_base_reg;
    uint64_t aq_cq_base;
    /*
     * The command at aq.ci when its handler takes more than one bottom half
     * (VRNIC_AQ_STS_IN_PROGRESS): its copy, so it is read from the ring only
     * once, and the progress of the one such command, RESIZE_CQ.
     */
    bool aq_cmd_held;
    uint8_t aq_cmd[VRNIC_AQ_CMD_SIZE] __attribute__((aligned(8)));
    VrnicCqResize cq_resize;
    /* DMA transfers so far: the unit of the bottom halves' work budgets. */
    uint64_t dma_ops;

    VrnicRing aeq;
    bool aeq_armed;
    bool odp_queued;        /* a page fault waits for room in the AEQ */

    VrnicRing eth_tx;
    VrnicRing eth_rx;
    struct VrnicEthFifo *eth_rx_fifo;   /* vrnic_eth.c */
    bool eth_tx_armed;
    bool eth_rx_armed;
    uint32_t eth_ctrl;

    uint8_t mac[6];
    uint32_t mtu;
    VrnicGid gids[VRNIC_MAX_GID_TBL_LEN];
    /* Bumped when mac or gids change: the QPs' paths (VrnicPath) are old. */
    uint32_t addr_gen;
    uint32_t gid_hint;      /* where vrnic_port_has_gid() looks first */

    VrnicObjects obj;
    VrnicTlb tlb;
    uint8_t *devmem;        /* cfg.dm_size bytes of BAR5, owned by the glue */

    struct VrnicLoop *loop; /* loopback wire (vrnic_loop.c) */
    /* The QP that sent the loopback frame being received; 0: from the wire. */
    uint32_t rx_loop_src;
    VrnicFaultCfg fault_cfg;
    struct VrnicFault *fault;   /* vrnic_fault.c */
    int64_t timer_due;      /* INT64_MAX: the timer is idle */
    /*
     * Frames the netdev holds for the device (VRNIC_WIRE_MAX_QUEUED); it
     * belongs to the netdev, so a device reset does not clear it.
     */
    uint32_t wire_queued;
    bool timer_fired;       /* expired: handled in the queue bottom half */
    uint16_t ip_id;         /* IPv4 identification of RoCEv2 frames */
    uint32_t ooo_held;      /* RC packets held past gaps, all QPs */
    int64_t ooo_age_at;     /* none of them ages out before this */

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
/*
 * The guest's memory map changed (the glue's MemoryListener): no cached
 * translation survives, since a table may now read differently.
 */
void vrnic_core_memory_changed(VrnicCore *core);
/*
 * Free what vrnic_core_init allocated; call after the final reset. Called
 * while the core runs, it only stops the core (see VrnicCore.running).
 */
void vrnic_core_uninit(VrnicCore *core);

/* BAR0 registers (4-byte accesses) and BAR2 doorbell pages. */
uint32_t vrnic_core_reg_read(VrnicCore *core, uint64_t addr);
void vrnic_core_reg_write(VrnicCore *core, uint64_t addr, uint32_t val);
void vrnic_core_db_write(VrnicCore *core, uint64_t addr, uint32_t val);

void vrnic_core_run(VrnicCore *core, VrnicWork work);
/* A frame the netdev had queued left or was discarded (see eth_send). */
void vrnic_core_wire_sent(VrnicCore *core);
/* The device timer expired (VrnicCoreOps.timer_mod). */
void vrnic_core_timer(VrnicCore *core);
/* Fault injection on the wire (vrnic_fault.c); any time after init. */
void vrnic_core_set_faults(VrnicCore *core, const VrnicFaultCfg *cfg);

/*
 * Ethernet port. The device takes every frame the netdev offers (it never
 * holds one back, which would stop every frame behind it): RoCEv2 frames
 * go to the RDMA engine, the rest to the RX ring or the RX FIFO, or are
 * dropped and counted.
 */
void vrnic_core_set_link(VrnicCore *core, bool up);
void vrnic_core_eth_receive(VrnicCore *core, const uint8_t *frame,
                            size_t len);

static inline uint32_t vrnic_total_vectors(const VrnicConfig *cfg)
{
    return VRNIC_VEC_COMP_FIRST + cfg->num_comp_vectors;
}

#endif
