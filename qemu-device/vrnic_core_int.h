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
 * QEMU builds with -ftrivial-auto-var-init=zero, which zeroes every local
 * on entry. A frame buffer (4-9 KiB) that the code writes in full before
 * anything reads it, and of which only the bytes written ever leave, is
 * declared with this so a packet does not pay for zeroing it.
 */
#define VRNIC_UNINITIALIZED __attribute__((uninitialized))

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

/*
 * Is a command that failed with status the guest's mistake? A malformed
 * command, or one naming what does not exist or cannot be reached, is. A
 * well-formed command the device cannot carry out now (a limit reached,
 * an object busy or in another state) is not: the driver cannot always
 * know, and hitting a limit is how it learns it.
 */
static inline bool vrnic_aq_status_guest_error(uint8_t status)
{
    switch (status) {
    case VRNIC_AQ_STS_BAD_OPCODE:
    case VRNIC_AQ_STS_BAD_FIELD:
    case VRNIC_AQ_STS_BAD_INDEX:
    case VRNIC_AQ_STS_DMA_ERROR:
        return true;
    default:
        return false;
    }
}

/*
 * A command handler refusing a command: the trace event of the status's
 * kind, naming the function and the check that failed, then the status.
 * The admin loop reports the command once (vrnic_admin_process()).
 */
static inline uint8_t vrnic_reject(const char *func, uint8_t sts,
                                   const char *why, uint64_t val)
{
    switch (sts) {
    case VRNIC_AQ_STS_BAD_OPCODE:
        trace_vrnic_err_cmd_bad_opcode(func, why, val);
        break;
    case VRNIC_AQ_STS_BAD_FIELD:
        trace_vrnic_err_cmd_bad_field(func, why, val);
        break;
    case VRNIC_AQ_STS_BAD_INDEX:
        trace_vrnic_err_cmd_bad_index(func, why, val);
        break;
    case VRNIC_AQ_STS_DMA_ERROR:
        trace_vrnic_err_cmd_dma(func, why, val);
        break;
    case VRNIC_AQ_STS_NO_RESOURCES:
        trace_vrnic_cmd_no_resources(func, why, val);
        break;
    default:
        trace_vrnic_cmd_bad_state(func, why, val);
        break;
    }
    return sts;
}

#define VRNIC_REJECT(sts, why, val)                                       \
    vrnic_reject(__func__, (sts), (why), (uint64_t)(val))

/*
 * A command handler's answer "not done yet": it did a bounded part of the
 * work and is called again with the same command in the next admin bottom
 * half (never on the wire: the command completes with its final status).
 */
#define VRNIC_AQ_STS_IN_PROGRESS    0xff

/* Largest MR (and queue memory) the translation engine addresses: 2^40. */
#define VRNIC_MAX_MR_SIZE   (1ull << 40)

/* The rights that make a key an R_Key. */
#define VRNIC_ACCESS_REMOTE \
    (VRNIC_ACCESS_REMOTE_READ | VRNIC_ACCESS_REMOTE_WRITE | \
     VRNIC_ACCESS_REMOTE_ATOMIC)

static inline bool vrnic_all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < len; i++) {
        if (b[i]) {
            return false;
        }
    }
    return true;
}

#define VRNIC_RSVD_ZERO(field) vrnic_all_zero(&(field), sizeof(field))

static inline uint32_t vrnic_ring_depth(const VrnicRing *r)
{
    return 1u << r->log_depth;
}

/* Slot address of free-running index idx in a live ring of esize entries. */
static inline uint64_t vrnic_ring_slot(const VrnicRing *r, uint64_t base,
                                       uint16_t idx, uint32_t esize)
{
    return base + (uint64_t)vrnic_idx_slot(idx, r->log_depth) * esize;
}

/* The phase the device stamps for free-running index idx (uapi "Rings"). */
static inline uint32_t vrnic_ring_phase(const VrnicRing *r, uint16_t idx)
{
    return vrnic_idx_phase(idx, r->log_depth);
}

/* vrnic_core.c */
/* Run work from a bottom half (VrnicCoreOps.kick), unless uninit stopped us. */
static inline void vrnic_core_kick(VrnicCore *core, VrnicWork work)
{
    if (!core->gone) {
        core->ops->kick(core->opaque, work);
    }
}
/* Around a core entry point that can DMA (VrnicCore.running). */
void vrnic_core_enter(VrnicCore *core);
void vrnic_core_leave(VrnicCore *core);
void vrnic_core_irq(VrnicCore *core, unsigned vector);
void vrnic_core_fatal(VrnicCore *core, const char *what, uint64_t addr);
bool vrnic_dma_read(VrnicCore *core, uint64_t addr, void *buf, uint64_t len);
bool vrnic_dma_write(VrnicCore *core, uint64_t addr, const void *buf,
                     uint64_t len);
void vrnic_dma_persist(VrnicCore *core);
/*
 * The wire (see vrnic_core_wire_sent): room for another frame, and the one
 * way a frame leaves the device.
 */
bool vrnic_wire_can_send(const VrnicCore *core);
void vrnic_wire_send(VrnicCore *core, const uint8_t *frame, size_t len);

/* vrnic_admin.c */
void vrnic_admin_process(VrnicCore *core);

/* vrnic_event.c */
void vrnic_aeq_post(VrnicCore *core, uint32_t event, uint32_t data);
bool vrnic_aeq_post_entry(VrnicCore *core, const void *e, uint32_t owner_bits);
void vrnic_aeq_write_ci(VrnicCore *core, uint32_t val);

/* vrnic_odp.c: on-demand paging. */
typedef enum VrnicOdpRes {
    VRNIC_ODP_GO,           /* mapped (or not on-demand): go on */
    VRNIC_ODP_WAIT,         /* not mapped: a page fault is outstanding */
    VRNIC_ODP_FAIL,         /* the driver cannot map it: fail the access */
} VrnicOdpRes;
/*
 * The check before an access of qpn's requester (or responder) to
 * [addr, addr + len) of mr, which the key check accepted; a fault asks for
 * [addr, addr + span) (span >= len, inside mr: the rest of the message).
 */
VrnicOdpRes vrnic_odp_access(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                             const VrnicMr *mr, uint64_t addr, uint64_t len,
                             uint64_t span, bool write, bool responder);
void vrnic_odp_aeq_room(VrnicCore *core);
uint8_t vrnic_odp_fault_done(VrnicCore *core,
                             const struct vrnic_aq_page_fault_done *c);
uint8_t vrnic_odp_invalidate(VrnicCore *core,
                             const struct vrnic_aq_odp_invalidate *c);

/* vrnic_port.c: one handler per port command; each returns a status. */
uint8_t vrnic_port_query_device(VrnicCore *core,
                                const struct vrnic_aq_query *c);
uint8_t vrnic_port_query_port(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_port_query_gid(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_port_query_stats(VrnicCore *core,
                               const struct vrnic_aq_query *c);
uint8_t vrnic_port_set_mac(VrnicCore *core, const struct vrnic_aq_set_mac *c);
uint8_t vrnic_port_set_mtu(VrnicCore *core, const struct vrnic_aq_set_mtu *c);
uint8_t vrnic_port_add_gid(VrnicCore *core, const struct vrnic_aq_gid *c);
uint8_t vrnic_port_del_gid(VrnicCore *core, const struct vrnic_aq_gid *c);

/* vrnic_tlb.c: the translation cache (see the file header). */
uint64_t vrnic_tlb_new_id(VrnicTlb *tlb);
bool vrnic_tlb_lookup(VrnicCore *core, uint64_t id, uint64_t idx,
                      uint64_t *pa);
void vrnic_tlb_fill(VrnicCore *core, uint64_t id, uint64_t idx, uint64_t pa);
void vrnic_tlb_flush(VrnicCore *core);

/* vrnic_mem.c: translation (see the file header for the rules). */
/*
 * The memory rules REG_MR (the command) and the REG_MR WQE share: a page
 * size of 4 KiB .. 1 GiB, 0 < length <= 2^40 without wrap, and the number
 * of pages [iova, iova + length) touches.
 */
bool vrnic_mem_shift_ok(uint32_t shift);
bool vrnic_mem_length_ok(uint64_t iova, uint64_t length);
uint64_t vrnic_mem_span(uint64_t iova, uint64_t length, uint32_t shift);
uint8_t vrnic_mem_parse(VrnicCore *core, const struct vrnic_mem_desc *d,
                        VrnicMem *m);
void vrnic_mem_init_dma(VrnicMem *m);
bool vrnic_mem_contains(const VrnicMem *m, uint64_t addr, uint64_t len);
/* Page idx's DMA address through the cache; vrnic_mem_walk reads the tables. */
bool vrnic_mem_page(VrnicCore *core, const VrnicMem *m, uint64_t idx,
                    uint64_t *pa);
bool vrnic_mem_walk(VrnicCore *core, const VrnicMem *m, uint64_t idx,
                    uint64_t *pa);
bool vrnic_mem_rw(VrnicCore *core, const VrnicMem *m, uint64_t addr,
                  void *buf, uint64_t len, bool write);
bool vrnic_mem_read_at(VrnicCore *core, const VrnicMem *m, uint64_t offset,
                       void *buf, uint64_t len);
bool vrnic_mem_write_at(VrnicCore *core, const VrnicMem *m, uint64_t offset,
                        const void *buf, uint64_t len);

/* vrnic_obj.c: tables, allocation, reset. */
void vrnic_obj_init(VrnicCore *core);
void vrnic_obj_reset(VrnicCore *core);
void vrnic_obj_uninit(VrnicCore *core);
uint32_t vrnic_obj_alloc(uint32_t *cursor, uint32_t first, uint32_t last,
                         const void *table, size_t esize);
VrnicPd *vrnic_pd_get(VrnicCore *core, uint32_t pdn);
VrnicCq *vrnic_cq_get(VrnicCore *core, uint32_t cqn);
VrnicEq *vrnic_eq_get(VrnicCore *core, uint32_t eqn);
VrnicQp *vrnic_qp_get(VrnicCore *core, uint32_t qpn);
VrnicSrq *vrnic_srq_get(VrnicCore *core, uint32_t srqn);
/* Largest log_depth whose 2^log_depth entries do not exceed max. */
uint32_t vrnic_max_log(uint32_t max);

/* vrnic_mr.c: PDs, MRs and the key/PD/access/bounds check. */
uint8_t vrnic_pd_alloc(VrnicCore *core, const struct vrnic_aq_alloc_pd *c,
                       uint64_t *result);
uint8_t vrnic_pd_dealloc(VrnicCore *core, const struct vrnic_aq_destroy *c);
uint8_t vrnic_mr_reg(VrnicCore *core, const struct vrnic_aq_reg_mr *c,
                     uint64_t *result);
uint8_t vrnic_mr_rereg(VrnicCore *core, const struct vrnic_aq_reg_mr *c,
                       uint64_t *result);
uint8_t vrnic_mr_dereg(VrnicCore *core, const struct vrnic_aq_destroy *c);
uint8_t vrnic_mr_query(VrnicCore *core, const struct vrnic_aq_query_mr *c);
uint32_t vrnic_mr_key(const VrnicCore *core, const VrnicMr *mr);
/*
 * The live entry of the key table at key's index (MR, window or
 * fast-registration MR, any key byte, any state), or NULL.
 */
VrnicMr *vrnic_key_entry(VrnicCore *core, uint32_t key);
uint8_t vrnic_key_new(VrnicCore *core, uint32_t pdn, uint8_t key_byte,
                      VrnicMr **out);
/* The IB access rules: known bits, remote write/atomic need local write. */
bool vrnic_access_valid(uint32_t access);

typedef enum VrnicMrCheck {
    VRNIC_MR_OK,
    VRNIC_MR_BAD_KEY,       /* no live MR, or a stale key byte */
    VRNIC_MR_BAD_PD,        /* MR of another PD than the QP's */
    VRNIC_MR_BAD_ACCESS,    /* a right the MR does not grant */
    VRNIC_MR_BAD_BOUNDS,    /* [addr, addr + len) not inside the MR */
} VrnicMrCheck;
VrnicMr *vrnic_mr_lookup(VrnicCore *core, uint32_t key);
VrnicMrCheck vrnic_mr_check(VrnicCore *core, uint32_t key, uint32_t pdn,
                            uint32_t access, uint64_t addr, uint64_t len,
                            VrnicMr **out);
bool vrnic_mr_rw(VrnicCore *core, const VrnicMr *mr, uint64_t addr,
                 void *buf, uint64_t len, bool write);

/* vrnic_mw.c: memory windows. */
uint8_t vrnic_mw_alloc(VrnicCore *core, const struct vrnic_aq_alloc_mw *c,
                       uint64_t *result);
uint8_t vrnic_mw_dealloc(VrnicCore *core, const struct vrnic_aq_destroy *c);
bool vrnic_mw_bind(VrnicCore *core, uint32_t qpn, const VrnicQp *qp,
                   const struct vrnic_bind_mw_wqe *w, const char **why);
bool vrnic_mw_invalidate(VrnicCore *core, uint32_t qpn, uint32_t pdn,
                         uint32_t key, bool remote);
void vrnic_mw_qp_destroyed(VrnicCore *core, uint32_t qpn);

/* vrnic_frmr.c: fast-registration MRs, and invalidation of every key. */
uint8_t vrnic_frmr_alloc(VrnicCore *core, const struct vrnic_aq_alloc_mr *c,
                         uint64_t *result);
void vrnic_frmr_free(VrnicMr *mr);
bool vrnic_frmr_register(VrnicCore *core, uint32_t qpn, const VrnicQp *qp,
                         const struct vrnic_reg_mr_wqe *w, uint8_t *status,
                         const char **why);
bool vrnic_key_invalidate(VrnicCore *core, uint32_t qpn, uint32_t pdn,
                          uint32_t key, bool remote);
VrnicMrCheck vrnic_rkey_check(VrnicCore *core, uint32_t rkey, uint32_t qpn,
                              uint32_t pdn, uint32_t access, uint64_t addr,
                              uint64_t len, VrnicMr **out);
/*
 * Where the memory an R_Key names starts (the MR's, or a window's, iova):
 * what a FLUSH of the whole MR checks the key at. False: no such index.
 */
bool vrnic_rkey_start(VrnicCore *core, uint32_t rkey, uint64_t *iova);

/* vrnic_cq.c: EQs and CQs. */
uint8_t vrnic_eq_create(VrnicCore *core, const struct vrnic_aq_create_eq *c,
                        uint64_t *result);
uint8_t vrnic_eq_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c);
void vrnic_eq_write_ci(VrnicCore *core, uint32_t eqn, uint32_t val);
uint8_t vrnic_cq_create(VrnicCore *core, const struct vrnic_aq_create_cq *c,
                        uint64_t *result);
uint8_t vrnic_cq_resize(VrnicCore *core, const struct vrnic_aq_create_cq *c);
uint8_t vrnic_cq_modify(VrnicCore *core, const struct vrnic_aq_modify_cq *c);
void vrnic_cq_timer(VrnicCore *core, int64_t now);
uint8_t vrnic_cq_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c);
void vrnic_cq_arm_db(VrnicCore *core, uint32_t page, bool solicited,
                     uint32_t cqn, uint16_t ci);
/*
 * Write one CQE (host-order fields; phase and endianness are done here).
 * False when the CQ is stopped (it was, or it just overran).
 */
bool vrnic_cq_post(VrnicCore *core, uint32_t cqn, const struct vrnic_cqe *cqe);
void vrnic_cq_process(VrnicCore *core);

/* vrnic_qp.c: QPs and SRQs. */
/* The CQE opcode completing a send WQE of this opcode (flushes included). */
uint8_t vrnic_cqe_opcode(uint8_t wqe_opcode);
uint8_t vrnic_qp_create(VrnicCore *core, const struct vrnic_aq_create_qp *c,
                        uint64_t *result);
uint8_t vrnic_qp_modify(VrnicCore *core, const struct vrnic_aq_modify_qp *c);
uint8_t vrnic_qp_query(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_qp_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c);
uint8_t vrnic_srq_create(VrnicCore *core, const struct vrnic_aq_create_srq *c,
                         uint64_t *result);
uint8_t vrnic_srq_modify(VrnicCore *core, const struct vrnic_aq_create_srq *c);
uint8_t vrnic_srq_query(VrnicCore *core, const struct vrnic_aq_query *c);
uint8_t vrnic_srq_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c);
void vrnic_wq_db(VrnicCore *core, uint32_t page, uint32_t off, uint32_t qn,
                 uint16_t pi);
void vrnic_qp_process(VrnicCore *core);
/*
 * Take the next receive WQE of an SRQ (the transport's receive path):
 * copies its first len bytes to buf, advances the SRQ and fires the limit
 * event. False when the SRQ is empty or its ring is unreadable.
 */
bool vrnic_srq_take(VrnicCore *core, uint32_t srqn, void *buf, uint32_t len);
/* A device-detected error on a QP: QP_FATAL event, then ERR (flush). */
void vrnic_qp_fatal(VrnicCore *core, uint32_t qpn, const char *why);
/* Queue answer helper shared by the query commands. */
uint8_t vrnic_answer(VrnicCore *core, uint64_t addr, uint32_t resp_len,
                     const void *resp, uint32_t len);

/* vrnic_mcast.c: multicast groups (uapi "Multicast groups"). */
void vrnic_mcast_reset(VrnicCore *core);
uint8_t vrnic_mcast_attach(VrnicCore *core, const struct vrnic_aq_mcast *c);
uint8_t vrnic_mcast_detach(VrnicCore *core, const struct vrnic_aq_mcast *c);
/* DESTROY_QP succeeded: qpn leaves every group it was attached to. */
void vrnic_mcast_qp_destroyed(VrnicCore *core, uint32_t qpn);
/* ff00::/8, or ::ffff:a.b.c.d in 224.0.0.0/4. */
bool vrnic_gid_is_mcast(const uint8_t gid[16]);
/*
 * The QPs attached to group gid, copied to qpns (VRNIC_MCAST_MAX_QP_ATTACH
 * entries; may be NULL to only count them): a snapshot, so delivering to
 * one member cannot change the list being walked. 0: no such group.
 */
uint32_t vrnic_mcast_members(const VrnicCore *core, const uint8_t gid[16],
                             uint32_t *qpns);

/*
 * The fields of a received frame flow rules and RSS look at: the flow key,
 * plus which layers the frame has (the key reads 0 for a missing field).
 */
typedef struct VrnicFrameKey {
    struct vrnic_flow_key key;
    uint8_t l3;         /* 4 or 6: an IPv4 / IPv6 header is there; else 0 */
    bool ports;         /* TCP or UDP ports are there */
    bool frag;          /* an IPv4 fragment, the first one included */
} VrnicFrameKey;

/* vrnic_flow.c: flow steering (uapi "Flow steering"). */
void vrnic_flow_reset(VrnicCore *core);
uint8_t vrnic_flow_create(VrnicCore *core,
                          const struct vrnic_aq_create_flow *c,
                          uint64_t *result);
uint8_t vrnic_flow_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c);
/* DESTROY_QP or DESTROY_RSS succeeded: the rules naming qpn go with it. */
void vrnic_flow_qp_destroyed(VrnicCore *core, uint32_t qpn);
/*
 * The rule a frame meets, ignoring the rules of QP src_qpn (the sender of
 * a looped-back frame; 0 from the wire): its flow id, 0 when none matches.
 */
uint32_t vrnic_flow_lookup(VrnicCore *core, const uint8_t *frame, size_t len,
                           uint32_t src_qpn);
/*
 * Steer a received frame: true when a rule took it (to its raw packet QP,
 * or dropped it), false when it goes on to the Ethernet RX ring.
 */
bool vrnic_flow_rx(VrnicCore *core, const uint8_t *frame, size_t len,
                   uint32_t src_qpn);

/* vrnic_xrc.c: XRC domains and the XRC target's SRQ (uapi "XRC"). */
void vrnic_xrcd_reset(VrnicCore *core);
uint8_t vrnic_xrcd_alloc(VrnicCore *core,
                         const struct vrnic_aq_alloc_xrcd *c,
                         uint64_t *result);
uint8_t vrnic_xrcd_dealloc(VrnicCore *core, const struct vrnic_aq_destroy *c);
/* A live domain (for CREATE_SRQ/CREATE_QP, which then take a reference). */
VrnicXrcd *vrnic_xrcd_get(VrnicCore *core, uint32_t xrcdn);
/* The XRC SRQ srqn if it is one of the domain of target qp, else NULL. */
VrnicSrq *vrnic_xrc_srq_of(VrnicCore *core, const VrnicQp *qp,
                           uint32_t srqn);
/*
 * An XRC target's in-sequence request packet names srqn in its XRCETH:
 * the SRQ, if it is an XRC SRQ of the target's domain and the one of the
 * message the packet continues (the message then uses its PD and CQ);
 * else NULL.
 */
VrnicSrq *vrnic_xrc_srq(VrnicCore *core, VrnicQp *qp, uint32_t srqn,
                        bool first);
/* A receive CQE of an XRC target names the SRQ (VRNIC_CQE_FLAG_XRC). */
void vrnic_xrc_cqe(const VrnicQp *qp, struct vrnic_cqe *e);
/* An XRC SRQ is destroyed: the targets in a message of it drop it. */
void vrnic_xrc_srq_destroyed(VrnicCore *core, uint32_t srqn);

/* vrnic_rss.c: receive-side scaling (uapi "Receive-side scaling"). */
void vrnic_rss_reset(VrnicCore *core);
uint8_t vrnic_rss_create(VrnicCore *core, const struct vrnic_aq_create_rss *c,
                         uint64_t *result);
uint8_t vrnic_rss_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c);
bool vrnic_rss_exists(VrnicCore *core, uint32_t rssn);
/* The Toeplitz hash of a frame's selected fields (VRNIC_RSS_F_*). */
uint32_t vrnic_rss_hash(const uint8_t key[VRNIC_RSS_KEY_LEN], uint16_t fields,
                        const VrnicFrameKey *f);
/* The receive queue context rssn gives the frame; 0 when it is gone. */
uint32_t vrnic_rss_qpn(VrnicCore *core, uint32_t rssn, const VrnicFrameKey *f);

/* The RoCEv2 transport (vrnic_xport.h lists its files). */
struct VrnicXport *vrnic_xport_new(VrnicCore *core);
void vrnic_xport_free(VrnicQp *qp);
/* RESET: every transport state back to zero (keeps the allocation). */
void vrnic_xport_reset(VrnicQp *qp);
/*
 * The QP is entering ERR: drop requester/responder state; a receive WQE
 * taken from the SRQ for a message in progress completes as flushed.
 */
void vrnic_xport_err(VrnicCore *core, uint32_t qpn, VrnicQp *qp);
void vrnic_xport_set_sq_psn(VrnicQp *qp, uint32_t psn);
void vrnic_xport_set_rq_psn(VrnicQp *qp, uint32_t psn);
/*
 * Queue bottom half: send what a QP in RTS/SQD has to send (requests and
 * responses), in bounded batches.
 */
void vrnic_xport_process(VrnicCore *core, uint32_t qpn, VrnicQp *qp);
/* Receive WQEs were posted to an RC QP's RQ: credits may be news. */
void vrnic_resp_rq_posted(VrnicCore *core, VrnicQp *qp);
/*
 * Ethernet receive path: true when the frame belonged to the RDMA engine
 * (it was consumed or dropped and counted).
 */
bool vrnic_rx_route(VrnicCore *core, const uint8_t *frame, size_t len);
void vrnic_rx_frame(VrnicCore *core, const uint8_t *frame, size_t len);

/*
 * vrnic_fault.c: frames of one direction (VRNIC_FAULT_DIR_*) through the
 * injector, then on (TX: the wire, RX: vrnic_rx_frame).
 */
void vrnic_fault_init(VrnicCore *core);
void vrnic_fault_uninit(VrnicCore *core);
void vrnic_fault_reset(VrnicCore *core);
void vrnic_fault_configure(VrnicCore *core, const VrnicFaultCfg *cfg);
void vrnic_fault_frame(VrnicCore *core, uint8_t dir, const uint8_t *frame,
                       size_t len);
/* A frame of len bytes in dir would pass untouched and at once. */
bool vrnic_fault_passes(const VrnicCore *core, uint8_t dir, size_t len);
void vrnic_fault_timer(VrnicCore *core, int64_t now);

/* The device timer: due no later than deadline (ns, ops->clock_ns). */
void vrnic_core_timer_arm(VrnicCore *core, int64_t deadline);
/* vrnic_retry.c: retransmit and RNR timers of every QP. */
void vrnic_xport_timer(VrnicCore *core, int64_t now);
/* vrnic_resp_seq.c: drop packets held past a gap for too long. */
void vrnic_rx_held_age(VrnicCore *core, int64_t now);
void vrnic_loop_init(VrnicCore *core);
void vrnic_loop_reset(VrnicCore *core);
void vrnic_loop_uninit(VrnicCore *core);
void vrnic_loop_process(VrnicCore *core);
/* vrnic_qp.c helpers the transport uses. */
void vrnic_qp_set_pending(VrnicCore *core, VrnicQp *qp, bool on);
void vrnic_qp_error(VrnicCore *core, uint32_t qpn);

/* vrnic_eth.c */
void vrnic_eth_init(VrnicCore *core);
void vrnic_eth_reset(VrnicCore *core);
void vrnic_eth_uninit(VrnicCore *core);
void vrnic_eth_tx_process(VrnicCore *core);
void vrnic_eth_rx_process(VrnicCore *core);
/* The longest frame the port sends or takes: MTU + VRNIC_ETH_FRAME_OVERHEAD. */
uint32_t vrnic_eth_max_frame(const VrnicCore *core);
void vrnic_eth_write_arm(VrnicCore *core, VrnicRing *ring, bool *armed,
                         uint32_t val);

#endif
