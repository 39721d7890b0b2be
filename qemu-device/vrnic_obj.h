/*
 * vrnic device objects: the device's own copies of protection
 * domains, memory regions, event queues, completion queues, queue pairs and
 * shared receive queues. Everything here was validated when the admin command
 * that created it ran; guest memory is only ever reached through a VrnicMem
 * (translated) or an EQ base (contiguous kernel memory).
 *
 * Tables are indexed by object number (0 is never valid) and sized from the
 * -device max-* properties at realize; device reset returns every entry to
 * "not live". Every object starts with `bool live` so one allocator serves
 * all tables.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_OBJ_H
#define HW_VRNIC_OBJ_H

#include "standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h"

/*
 * A validated vrnic_mem_desc (see the header): [iova, iova + length) split
 * into 2^page_shift pages whose addresses sit inline (levels 0) or in 1..3
 * levels of 4 KiB tables. A DMA MR (dma = true) translates identity and has
 * no pages. Every copy of one parsed descriptor shares its tlb_id.
 */
typedef struct VrnicMem {
    uint64_t iova;
    uint64_t length;
    uint32_t page_shift;
    uint32_t levels;        /* 4 only for an implicit on-demand MR */
    uint64_t npages;
    bool dma;
    bool odp;               /* on-demand: leaf entries carry VRNIC_ODP_* */
    bool devmem;            /* device memory at devmem_offset, not guest */
    uint64_t devmem_offset;
    uint64_t pages[VRNIC_MEM_INLINE_PAGES];
    const uint64_t *list;   /* fast registration: the device's own copy */
    uint64_t tlb_id;        /* tables' translation id (vrnic_tlb.c), 0: none */
} VrnicMem;

typedef struct VrnicPd {
    bool live;
    uint32_t uctx;      /* doorbell page of the owning context, 0 = kernel */
    uint32_t refs;      /* MRs, QPs and SRQs using it */
} VrnicPd;

/*
 * An MR, or a memory window (mw): both live in the one key table. A bound
 * window's mem holds only its range (iova, length): accesses translate
 * through the parent MR at the same addresses. A fast-registration MR
 * (frmr, vrnic_frmr.c) owns frmr_pages, room for frmr_max page addresses;
 * while not valid it has no mapping and no key of it works.
 */
typedef struct VrnicMr {
    bool live;
    uint8_t key_byte;   /* bits 7:0 of the only key that currently works */
    uint32_t pdn;
    uint32_t access;    /* VRNIC_ACCESS_*; LOCAL_READ is implicit */
    uint32_t flags;     /* VRNIC_MR_FLAG_* */
    VrnicMem mem;
    uint32_t mw_refs;   /* MR: windows bound to it */
    bool mw;            /* a memory window (vrnic_mw.c), not an MR */
    uint8_t mw_type;    /* VRNIC_MW_TYPE_* */
    bool bound;         /* window: bound to MR index parent */
    uint32_t parent;
    uint32_t bound_qpn; /* type 2 window: the QP that bound it */
    bool frmr;
    bool valid;         /* frmr: a REG_MR installed mem, no invalidation yet */
    uint32_t frmr_max;
    uint64_t *frmr_pages;
} VrnicMr;

/* Completion event queue: kernel memory, contiguous, eqn = vector - 1. */
typedef struct VrnicEq {
    bool live;
    uint64_t base;
    uint32_t log_depth;
    uint32_t vector;
    uint16_t pi;        /* device: next EQE slot */
    uint16_t ci;        /* driver, through VRNIC_REG_EQ_CI(eqn) */
    bool armed;
    uint32_t refs;      /* CQs bound to it */
} VrnicEq;

typedef enum VrnicCqArm {
    VRNIC_CQ_ARM_NONE,
    VRNIC_CQ_ARM_NEXT,
    VRNIC_CQ_ARM_SOLICITED,
} VrnicCqArm;

typedef struct VrnicCq {
    bool live;
    bool error;         /* overrun or DMA error: no more CQEs, ever */
    bool notify;        /* an arm found CQEs pending: EQE due from the BH */
    bool quiet;         /* CQEs were written since the last event */
    uint8_t arm;        /* VrnicCqArm */
    uint32_t eqn;
    uint32_t uctx;
    uint32_t log_depth;
    uint32_t flags;     /* VRNIC_CQ_FLAG_*: the CQE format */
    uint16_t pi;        /* device producer index (free-running) */
    uint32_t refs;      /* QPs using it as send or recv CQ */
    VrnicMem mem;       /* ring of CQEs, then the vrnic_cq_dbrec */
    /* Event moderation of ARM_NEXT (MODIFY_CQ; 0 and 0: none). */
    uint16_t mod_count;
    uint16_t mod_period_us;
    uint16_t mod_cqes;  /* CQEs written since the arm, event not yet due */
    bool mod_waiting;   /* mod_due is set: counted in cqs_waiting */
    int64_t mod_due;    /* clock_ns of the moderated event */
} VrnicCq;

/*
 * One work queue ring (SQ, RQ or SRQ) inside its owner's memory: entries of
 * 2^wqe_shift bytes at offset. pi is the producer index from the doorbell;
 * ci is the device's consumer index - every WQE in [ci, pi) is outstanding
 * (the transport will consume from ci; flush completes all of them).
 */
typedef struct VrnicWq {
    uint32_t log_depth;     /* 0: no such queue */
    uint32_t wqe_shift;
    uint64_t offset;
    uint16_t pi;
    uint16_t ci;
} VrnicWq;

typedef struct VrnicSrq {
    bool live;
    uint32_t pdn;
    uint32_t uctx;
    uint32_t max_sge;
    uint32_t limit;     /* 0 = limit event not armed */
    uint32_t refs;      /* QPs attached */
    uint32_t xrcdn;     /* an XRC SRQ's domain; 0: a basic SRQ */
    uint32_t cqn;       /* an XRC SRQ's CQ */
    VrnicWq wq;
    VrnicMem mem;
} VrnicSrq;

typedef struct VrnicQp {
    bool live;
    bool pending;       /* doorbell or state change: the queue BH looks at it */
    bool fatal_sent;    /* one QP_FATAL per trip to ERR */
    uint8_t type;       /* enum vrnic_qp_type */
    uint8_t state;      /* enum vrnic_qp_state */
    uint32_t pdn;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    uint32_t srqn;
    uint32_t uctx;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline;
    VrnicWq sq;
    VrnicWq rq;
    VrnicMem mem;
    struct vrnic_qp_attr attr;  /* as last applied, little-endian */
    struct VrnicXport *x;       /* transport state (vrnic_xport.h) */
    uint32_t rss_refs;  /* RSS contexts naming it: DESTROY_QP waits */
    uint32_t xrcdn;     /* an XRC target's domain */
} VrnicQp;

/*
 * A multicast group (vrnic_mcast.c): a multicast GID and the UD QPs attached
 * to it, in attach order. The slot is free while nqps is 0.
 */
typedef struct VrnicMcastGrp {
    uint8_t gid[16];
    uint32_t nqps;
    uint32_t qpns[VRNIC_MCAST_MAX_QP_ATTACH];
} VrnicMcastGrp;

/*
 * A flow rule (vrnic_flow.c): what it matches (value already masked), the
 * raw packet QP that gets the frames, and the order among equal
 * priorities (seq: the older rule wins).
 */
typedef struct VrnicFlow {
    bool live;
    uint8_t flags;      /* VRNIC_FLOW_F_* */
    uint16_t priority;
    uint32_t qpn;
    uint64_t seq;
    struct vrnic_flow_key value;
    struct vrnic_flow_key mask;
} VrnicFlow;

/*
 * A receive-side scaling context (vrnic_rss.c): the hash key and fields
 * and the receive-only raw packet QPs it spreads frames over; each of
 * those holds a reference (rss_refs) per entry naming it.
 */
typedef struct VrnicRss {
    bool live;
    uint8_t log_size;
    uint16_t fields;    /* VRNIC_RSS_F_* */
    uint32_t uctx;
    uint8_t key[VRNIC_RSS_KEY_LEN];
    uint32_t qpn[VRNIC_RSS_TABLE_MAX];
} VrnicRss;

/* An XRC domain (vrnic_xrc.c): alive, and the SRQs and QPs naming it. */
typedef struct VrnicXrcd {
    bool live;
    uint32_t refs;
} VrnicXrcd;

#endif
