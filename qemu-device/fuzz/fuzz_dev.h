/*
 * Device setups for the fuzz targets: a node is one vrnic core on a
 * FuzzBus with a GID, an EQ, a PD, CQs, MRs over handed buffers, an SRQ,
 * a memory window, a fast-registration MR and QPs of every type, all
 * created through the admin queue as a driver would. The targets then
 * post WQEs, ring doorbells and inject frames against it. Command
 * builders here follow qemu-device/tests/obj_helpers.h; they are separate
 * because they work on a FuzzBus (handed-out memory, oracles), not the
 * unit tests' FakeBus.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_FUZZ_DEV_H
#define VRNIC_FUZZ_DEV_H

#include "fuzz_bus.h"

typedef union FuzzCmd {
    uint8_t raw[VRNIC_AQ_CMD_SIZE];
    struct vrnic_aq_hdr hdr;
    struct vrnic_aq_query query;
    struct vrnic_aq_query_mr query_mr;
    struct vrnic_aq_destroy destroy;
    struct vrnic_aq_alloc_pd pd;
    struct vrnic_aq_reg_mr mr;
    struct vrnic_aq_alloc_mw mw;
    struct vrnic_aq_alloc_mr alloc_mr;
    struct vrnic_aq_create_eq eq;
    struct vrnic_aq_create_cq cq;
    struct vrnic_aq_create_qp qp;
    struct vrnic_aq_modify_qp mod;
    struct vrnic_aq_create_srq srq;
    struct vrnic_aq_gid gid;
    struct vrnic_aq_set_mac mac;
    struct vrnic_aq_set_mtu mtu;
    struct vrnic_aq_mcast mcast;
    struct vrnic_aq_create_flow flow;
    struct vrnic_aq_create_rss rss;
} FuzzCmd;

static inline void fuzz_cmd_init(FuzzCmd *c, uint16_t op)
{
    memset(c, 0, sizeof(*c));
    c->hdr.opcode = htole16(op);
}

/*
 * [addr, addr + len) of contiguous RAM as an inline descriptor of pages
 * of 2^shift bytes (addr page-aligned for shift > 12 callers' care).
 */
void fuzz_mem_inline(struct vrnic_mem_desc *d, uint64_t addr, uint64_t len,
                     unsigned shift);

/*
 * I/O virtual addresses of MRs and queue memory differ from the RAM behind
 * them, so a translation that used an iova as a DMA address would land
 * outside RAM (a failed access) instead of silently working. MR i of a
 * node is at FUZZ_MR_IOVA + i * FUZZ_MR_STRIDE (FUZZ_MR_TABLE 0x100 in).
 */
#define FUZZ_MR_IOVA    0x700000000000ull
#define FUZZ_MR_STRIDE  0x100000ull
#define FUZZ_Q_IOVA     0x600000000000ull
/* Neither RAM nor near a canary, aligned to any page size: DMA fails. */
#define FUZZ_NOT_RAM    (1ull << 40)

#define FUZZ_ACC_ALL (VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ | \
                      VRNIC_ACCESS_REMOTE_WRITE | VRNIC_ACCESS_REMOTE_ATOMIC | \
                      VRNIC_ACCESS_MW_BIND)

/* Queue geometry of every node QP (small: cheap flushes, quick wraps). */
#define FUZZ_SQ_LOG     4
#define FUZZ_SQ_SHIFT   8
#define FUZZ_RQ_LOG     4
#define FUZZ_RQ_SHIFT   6
#define FUZZ_CQ_LOG     6
#define FUZZ_SRQ_LOG    4
#define FUZZ_SRQ_SHIFT  6

enum {
    FUZZ_QP_GSI,        /* qpn 1, UD semantics */
    FUZZ_QP_RC,         /* RC to the peer's FUZZ_QP_RC */
    FUZZ_QP_RC_SRQ,     /* RC on the SRQ, to the peer's FUZZ_QP_RC_SRQ */
    FUZZ_QP_UC,         /* UC to the peer's FUZZ_QP_UC */
    FUZZ_QP_UD,
    FUZZ_QP_LOOP_A,     /* RC to FUZZ_QP_LOOP_B on the same device */
    FUZZ_QP_LOOP_B,
    FUZZ_NODE_QPS,
};

enum {
    FUZZ_MR_ALL,        /* 16 KiB, every right, inline 4 KiB pages */
    FUZZ_MR_TABLE,      /* 16 KiB, every right, through a level-1 table */
    FUZZ_MR_RO,         /* 8 KiB, local read and remote read only */
    FUZZ_MR_DM,         /* device memory (BAR5), every right */
    /*
     * Fast registration (ALLOC_MR, max_pages VRNIC_FRMR_MAX_PAGES): no
     * mapping until a REG_MR WQE, then what that WQE's page list says.
     * The MRs before it are registered by the REG_MR command.
     */
    FUZZ_MR_FRMR,
    FUZZ_NODE_MRS,
};

/*
 * The FRMR's RAM: FUZZ_FRMR_LEN at the very top of the RAM (fuzz_alloc_top),
 * with its page list below it. Every page address REG_MR WQEs name is in
 * it or not RAM at all, so a page of any size starting there reaches only
 * it: whatever list, page size and range a WQE (or raw bytes) pairs, the
 * device never has a reason to touch memory not handed out.
 */
#define FUZZ_FRMR_LEN       0x10000u
#define FUZZ_FRMR_LIST_LEN  (VRNIC_FRMR_MAX_PAGES * 8u)
#define FUZZ_FRMR_IOVA      (FUZZ_MR_IOVA + FUZZ_MR_STRIDE * FUZZ_MR_FRMR)

typedef struct FuzzQp {
    uint32_t qpn;
    uint8_t type;
    uint64_t mem;           /* SQ, then RQ at FUZZ_RQ_OFF */
    uint32_t srqn;
    uint16_t sq_pi, rq_pi;  /* the harness's producer indices */
    uint32_t sq_psn, rq_psn;
    int peer;               /* index of the connected QP, -1: none */
    bool peer_local;        /* connected on the same node */
    uint32_t peer_qpn;      /* its qpn (fuzz_rx: the virtual peer's) */
    bool live;
    bool primed;            /* the target posted its first receive WQEs */
} FuzzQp;

typedef struct FuzzMr {
    uint32_t key;
    uint64_t iova, len;
    uint64_t buf;           /* RAM behind it (0: device memory) */
    uint64_t buf_len;
    uint64_t table;         /* FUZZ_MR_TABLE: the table page */
    uint32_t access;
    bool live;
} FuzzMr;

#define FUZZ_QP_MEM_LEN ((1u << (FUZZ_SQ_LOG + FUZZ_SQ_SHIFT)) + \
                         (1u << (FUZZ_RQ_LOG + FUZZ_RQ_SHIFT)))
#define FUZZ_RQ_OFF     (1u << (FUZZ_SQ_LOG + FUZZ_SQ_SHIFT))
#define FUZZ_SPARE_PAGES 2

typedef struct FuzzNode {
    FuzzBus *b;
    uint8_t id;
    uint8_t gid[16];
    uint8_t mac[6];
    uint32_t eqn, pdn;
    uint64_t eq_ring;
    uint32_t cqn[2];        /* send, recv */
    uint64_t cq_mem[2];
    uint16_t cq_ci[2];
    uint32_t srqn;
    uint64_t srq_mem;
    uint16_t srq_pi;
    uint32_t mw_key;        /* a type 2 window, unbound at start */
    /*
     * mr[FUZZ_MR_FRMR] is what the harness last asked its REG_MR WQE
     * for (key, iova, len, access), as a ULP uses the key it posted.
     */
    FuzzMr mr[FUZZ_NODE_MRS];
    uint64_t frmr_list;     /* the page list REG_MR WQEs name */
    uint32_t frmr_max;      /* the FRMR's max_pages */
    FuzzQp qp[FUZZ_NODE_QPS];
    /*
     * Pages handed out and never taken back: what a hostile table
     * rewrite may point an MR at.
     */
    uint64_t spare[FUZZ_SPARE_PAGES];
} FuzzNode;

/* IPv4-mapped ::ffff:10.0.0.id. */
void fuzz_gid_v4(uint8_t gid[16], uint8_t id);

/*
 * Bring a node up on a started bus: AQ, AEQ, GID 0, EQ, PD, CQs, MRs,
 * SRQ, window and FRMR, in two batches of commands. QPs are created on
 * first use (fuzz_pair_ensure), since an input rarely uses all of them and
 * every one costs a CREATE_QP and three MODIFY_QPs per execution. Aborts
 * if a command the setup needs fails (a harness bug, or a core change to
 * look at).
 */
void fuzz_node_init(FuzzNode *n, FuzzBus *b, uint8_t id);
/*
 * CREATE_QP for QP i if it was not created yet; false if it was
 * created and destroyed since.
 */
bool fuzz_qp_create(FuzzNode *n, unsigned i);
/* RESET -> INIT -> RTR -> RTS, to peer_qpn at peer_gid/peer_mac. */
uint8_t fuzz_qp_up(FuzzNode *n, FuzzQp *q, const uint8_t *peer_gid,
                   const uint8_t *peer_mac, uint32_t peer_qpn, uint8_t mtu);
/*
 * QP i of node a created and in RTS, connected: RC/UC to b's QP i, the
 * loop pair to each other on a, UD/GSI just up. False if it no longer
 * exists.
 */
bool fuzz_pair_ensure(FuzzNode *a, FuzzNode *b, unsigned i);
uint8_t fuzz_modify(FuzzNode *n, uint32_t qpn, uint32_t mask, uint32_t state,
                    const struct vrnic_qp_attr *attr);

/* Slots of the rings in RAM. */
uint64_t fuzz_sq_slot(const FuzzQp *q, uint16_t idx);
uint64_t fuzz_rq_slot(const FuzzQp *q, uint16_t idx);
uint64_t fuzz_srq_slot(const FuzzNode *n, uint16_t idx);
/* Consume every new CQE of CQ i (0 send, 1 recv); returns how many. */
unsigned fuzz_cq_poll(FuzzNode *n, unsigned i, unsigned max);
void fuzz_cq_set_ci(FuzzNode *n, unsigned i, uint32_t ci);
/* A receive WQE of one SGE over MR m at off, and its doorbell. */
void fuzz_post_recv_simple(FuzzNode *n, FuzzQp *q, unsigned m, uint32_t off,
                           uint32_t len);
void fuzz_post_srq_simple(FuzzNode *n, unsigned m, uint32_t off, uint32_t len);

/* DEREG_MR of m completed: its RAM is the guest's again. */
void fuzz_mr_unhand(FuzzNode *n, const FuzzMr *m);

/* ALLOC_MR of an FRMR on the node's PD. */
void fuzz_frmr_alloc_cmd(const FuzzNode *n, FuzzCmd *c, uint32_t max_pages,
                         uint8_t key_byte);
/* ALLOC_MR gave key: it is the node's FRMR, invalid, its RAM handed out. */
void fuzz_frmr_allocated(FuzzNode *n, uint32_t key, uint32_t max_pages);
/*
 * The fields of a REG_MR WQE of the node's FRMR (opcode, key with
 * key_byte, access, page size, the range and its page count, the list
 * address), and the harness's view of it. The caller writes the list.
 */
void fuzz_frmr_reg(FuzzNode *n, struct vrnic_reg_mr_wqe *w, uint8_t key_byte,
                   uint32_t access, unsigned shift, uint64_t iova,
                   uint64_t len);
/*
 * The same over bytes [off, off + len) of the FRMR's RAM (both reduced to
 * fit), in pages of 2^shift bytes taken in order and written to the
 * list; pages larger than its RAM are not RAM.
 */
void fuzz_frmr_reg_range(FuzzNode *n, struct vrnic_reg_mr_wqe *w,
                         uint8_t key_byte, uint32_t access, unsigned shift,
                         uint32_t off, uint32_t len);

#endif
