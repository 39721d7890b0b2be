/*
 * vrnic RoCEv2 transport: a QP's transport state (allocation, RESET, ERR,
 * initial PSNs) and what the requester's roles (vrnic_req.c, vrnic_comp.c,
 * vrnic_retry.c) and the responder share: the path MTU, addressing and
 * output of a frame, the send window's WQE lookups and local memory
 * through a send WQE's SGEs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

VrnicXport *vrnic_xport_new(VrnicCore *core)
{
    /*
     * max_qp_rd_atom new READ/atomics and as many replays, an ACK or NAK
     * between any two of them (vrnic_resp_ack).
     */
    uint32_t n = 4 * MAX(core->cfg.max_qp_rd_atom, 1u) + 2;
    VrnicXport *x = g_malloc0(sizeof(*x) + n * sizeof(VrnicResp));

    x->q_size = n;
    x->dev_held = &core->ooo_held;
    return x;
}

void vrnic_xport_free(VrnicQp *qp)
{
    vrnic_rx_held_clear(qp->x);
    g_free(qp->x);
    qp->x = NULL;
}

void vrnic_xport_reset(VrnicQp *qp)
{
    VrnicXport *x = qp->x;
    uint32_t n = x->q_size;
    uint32_t *dev_held = x->dev_held;   /* the device's, not the QP's */

    vrnic_rx_held_clear(x);
    memset(x, 0, sizeof(*x) + n * sizeof(VrnicResp));
    x->q_size = n;
    x->dev_held = dev_held;
}

void vrnic_xport_set_sq_psn(VrnicQp *qp, uint32_t psn)
{
    qp->x->psn = psn & VRNIC_IB_PSN_MASK;
    qp->x->snd_max = qp->x->psn;
    qp->x->acked_psn = vrnic_psn_add(psn, VRNIC_IB_PSN_MASK);   /* psn - 1 */
}

void vrnic_xport_set_rq_psn(VrnicQp *qp, uint32_t psn)
{
    qp->x->epsn = psn & VRNIC_IB_PSN_MASK;
}

void vrnic_xport_err(VrnicCore *core, uint32_t qpn, VrnicQp *qp)
{
    VrnicXport *x = qp->x;

    if (x->have_rwqe && x->rwqe_srq) {
        struct vrnic_cqe e = {
            .wr_id = x->rhdr.wr_id,
            .qpn = cpu_to_le32(qpn),
            .opcode = VRNIC_CQE_OP_RECV,
            .status = VRNIC_WC_WR_FLUSH_ERR,
        };

        vrnic_xrc_cqe(qp, &e);
        vrnic_cq_post(core, qp->recv_cqn, &e);
    }
    /*
     * The flush that follows completes [sq.ci, sq.pi) and [rq.ci, rq.pi);
     * what the transport held is forgotten. PSNs stay as they were.
     */
    x->have_rwqe = false;
    x->in_msg = VRNIC_MSG_NONE;
    vrnic_rx_held_clear(x);
    x->hole_mode = x->hole_pending = false;
    x->rd_out = 0;
    x->rd_pending = 0;
    x->rd_new = 0;
    x->q_head = x->q_tail = 0;
    x->rto_due = x->rnr_due = x->early_due = x->probe_due = 0;
    x->credit_wait = x->probe_ok = false;
    x->rtt_timing = false;
    for (unsigned i = 0; i < VRNIC_TX_WINDOW; i++) {
        x->win[i].started = x->win[i].done = false;
    }
}

/*
 * Path MTU in bytes: the QP's (RC/UC), else the largest IB MTU whose
 * packets fit the port's IP MTU (iboe_get_mtu), at least 256.
 */
uint32_t vrnic_xport_pmtu(const VrnicCore *core, const VrnicQp *qp)
{
    uint32_t pmtu = 4096;

    if (qp->attr.path_mtu >= 1 && qp->attr.path_mtu <= 5) {
        return 128u << qp->attr.path_mtu;
    }
    while (pmtu > 256 && pmtu + 96 > core->mtu) {
        pmtu >>= 1;
    }
    return pmtu;
}

/*
 * Every received RoCEv2 frame asks this: the table entry that matched
 * last is tried first, so a port with one GID in use scans no table.
 */
bool vrnic_port_has_gid(VrnicCore *core, const uint8_t *gid)
{
    uint32_t h = core->gid_hint;

    if (h < core->cfg.gid_tbl_len && core->gids[h].type &&
        !memcmp(core->gids[h].gid, gid, 16)) {
        return true;
    }
    for (uint32_t i = 0; i < core->cfg.gid_tbl_len; i++) {
        if (core->gids[i].type && !memcmp(core->gids[i].gid, gid, 16)) {
            core->gid_hint = i;
            return true;
        }
    }
    return false;
}

const VrnicPath *vrnic_xport_path(VrnicCore *core, VrnicQp *qp,
                                  uint32_t lqpn, const struct vrnic_av *av,
                                  uint32_t rqpn)
{
    VrnicPath *p = &qp->x->path;
    uint32_t fl;
    VrnicPktAddr a;

    if (p->valid && p->gen == core->addr_gen && p->rqpn == rqpn &&
        !memcmp(&p->av, av, sizeof(*av))) {
        return p;
    }
    /* Resolved now: nothing below runs for a packet on a kept path. */
    p->valid = false;
    fl = le32_to_cpu(av->flow_label) & VRNIC_IPV6_FLOW_MASK;
    a = (VrnicPktAddr) {
        .traffic_class = av->traffic_class,
        .hop_limit = av->hop_limit ? av->hop_limit : 64,
        .flow_label = fl,
        .udp_sport = vrnic_pkt_udp_sport(fl, lqpn, rqpn),
    };
    if (av->sgid_index >= core->cfg.gid_tbl_len ||
        !core->gids[av->sgid_index].type) {
        return NULL;
    }
    memcpy(a.smac, core->mac, 6);
    memcpy(a.dmac, av->dmac, 6);
    memcpy(a.sgid, core->gids[av->sgid_index].gid, 16);
    memcpy(a.dgid, av->dgid, 16);
    /* Fails when the GIDs' families (IPv4, IPv6) differ. */
    if (!vrnic_pkt_tmpl_init(&p->tmpl, &a)) {
        return NULL;
    }
    p->av = *av;
    p->rqpn = rqpn;
    p->gen = core->addr_gen;
    p->loop = vrnic_port_has_gid(core, av->dgid);
    p->valid = true;
    trace_vrnic_tx_path(lqpn, rqpn, p->loop);
    return p;
}

bool vrnic_xport_can_send(VrnicCore *core, bool loop)
{
    return loop ? vrnic_loop_has_room(core) : vrnic_wire_can_send(core);
}

void vrnic_xport_output(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                        size_t len, bool loop)
{
    core->stats.port[VRNIC_PORT_STAT_TX_PKTS]++;
    core->stats.port[VRNIC_PORT_STAT_TX_BYTES] += len;
    if (loop) {
        vrnic_loop_put(core, qpn, frame, len, false);
    } else {
        vrnic_fault_frame(core, VRNIC_FAULT_DIR_TX, frame, len);
    }
}

static uint32_t vrnic_swqe_nsge(const VrnicSwqe *s)
{
    return (s->hdr.flags & VRNIC_WQE_FLAG_INLINE) ? 0 : s->hdr.num_sge;
}

struct vrnic_sge vrnic_swqe_sge(const VrnicSwqe *s, uint32_t i)
{
    struct vrnic_sge g;

    memcpy(&g, s->raw + s->data_off + i * sizeof(g), sizeof(g));
    return g;
}

/*
 * Walk [off, off + len) of the message over the local SGEs: each SGE's part
 * in it, its key checked for the access (LOCAL_WRITE for a write), goes to
 * fn with the MR, its address, its length and how much of the SGE is left
 * from there. A key that fails ends the walk with bad_key, fn's non-zero
 * answer with that answer; -1 if the SGEs end before the range.
 */
typedef int (*VrnicSgeFn)(VrnicCore *core, VrnicMr *mr, uint64_t addr,
                          uint32_t chunk, uint32_t rest, void *arg);

static int vrnic_sge_walk(VrnicCore *core, const VrnicQp *qp,
                          const VrnicSwqe *s, uint64_t off, uint32_t len,
                          bool write, int bad_key, VrnicSgeFn fn, void *arg)
{
    uint32_t n = vrnic_swqe_nsge(s);

    for (uint32_t i = 0; i < n && len; i++) {
        struct vrnic_sge g = vrnic_swqe_sge(s, i);
        uint32_t glen = le32_to_cpu(g.length);
        uint32_t chunk;
        VrnicMr *mr;
        int r;

        if (off >= glen) {
            off -= glen;
            continue;
        }
        chunk = MIN(glen - off, len);
        if (vrnic_mr_check(core, le32_to_cpu(g.lkey), qp->pdn,
                           write ? VRNIC_ACCESS_LOCAL_WRITE : 0,
                           le64_to_cpu(g.addr) + off, chunk, &mr)) {
            return bad_key;
        }
        r = fn(core, mr, le64_to_cpu(g.addr) + off, chunk, glen - off, arg);
        if (r) {
            return r;
        }
        len -= chunk;
        off = 0;
    }
    return len ? -1 : 0;
}

typedef struct VrnicSgeCopy {
    uint8_t *buf;
    bool write;
} VrnicSgeCopy;

static int vrnic_sge_copy(VrnicCore *core, VrnicMr *mr, uint64_t addr,
                          uint32_t chunk, uint32_t rest, void *arg)
{
    VrnicSgeCopy *c = arg;

    if (!vrnic_mr_rw(core, mr, addr, c->buf, chunk, c->write)) {
        return -1;
    }
    c->buf += chunk;
    return 0;
}

/*
 * Copy [off, off + len) of the message from (write = false) or to the
 * local SGEs. The keys were checked when the WQE started; they are looked
 * up again, so an MR deregistered meanwhile fails the access.
 */
bool vrnic_sge_rw(VrnicCore *core, const VrnicQp *qp,
                  const VrnicSwqe *s, uint64_t off, uint8_t *buf,
                  uint32_t len, bool write)
{
    VrnicSgeCopy c = { .buf = buf, .write = write };

    if (s->hdr.flags & VRNIC_WQE_FLAG_INLINE) {
        memcpy(buf, s->raw + s->data_off + off, len);
        return true;
    }
    return !vrnic_sge_walk(core, qp, s, off, len, write, -1, vrnic_sge_copy,
                           &c);
}

typedef struct VrnicSgeOdp {
    uint32_t qpn;
    VrnicQp *qp;
    bool write;
} VrnicSgeOdp;

static int vrnic_sge_odp_one(VrnicCore *core, VrnicMr *mr, uint64_t addr,
                             uint32_t chunk, uint32_t rest, void *arg)
{
    VrnicSgeOdp *o = arg;

    return vrnic_odp_access(core, o->qpn, o->qp, mr, addr, chunk, rest,
                            o->write, false);
}

/*
 * The on-demand check of [off, off + len) of the message in the local SGEs
 * (vrnic_odp_access for each MR it touches), before vrnic_sge_rw. A key
 * that fails here passes: vrnic_sge_rw fails it as before.
 */
VrnicOdpRes vrnic_sge_odp(VrnicCore *core, uint32_t qpn, VrnicQp *qp,
                          const VrnicSwqe *s, uint64_t off, uint32_t len,
                          bool write)
{
    VrnicSgeOdp o = { .qpn = qpn, .qp = qp, .write = write };
    int r;

    /* No key lookups per packet while no MR is on-demand. */
    if (!core->obj.n_odp_mrs) {
        return VRNIC_ODP_GO;
    }
    r = vrnic_sge_walk(core, qp, s, off, len, write, VRNIC_ODP_GO,
                       vrnic_sge_odp_one, &o);
    return r > 0 ? r : VRNIC_ODP_GO;
}

/*
 * Window slot i (sq.ci <= i <= next) holds a started WQE: every index
 * before next does; next itself only when it has started and is not the
 * slot of WQE next - VRNIC_TX_WINDOW (a full window) or past sq.pi.
 */
VrnicSwqe *vrnic_tx_slot(VrnicQp *qp, uint16_t i)
{
    VrnicXport *x = qp->x;
    VrnicSwqe *s = &x->win[i % VRNIC_TX_WINDOW];

    if (i == x->next &&
        (i == qp->sq.pi || (uint16_t)(i - qp->sq.ci) >= VRNIC_TX_WINDOW ||
         !s->started)) {
        return NULL;
    }
    return s;
}

/* Request packets sent and not yet answered (RC). */
bool vrnic_tx_outstanding(VrnicQp *qp)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && !s->done && s->sent) {
            return true;
        }
    }
    return false;
}

/*
 * The started WQE whose PSN range holds psn, or NULL. The WQE at next
 * counts: after a go-back it may not be resent yet, and an answer to its
 * earlier transmission is as good as one to the resend.
 */
VrnicSwqe *vrnic_tx_find_psn(VrnicQp *qp, uint32_t psn)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && vrnic_psn_diff(psn, s->first_psn) >= 0 &&
            vrnic_psn_diff(psn, s->last_psn) <= 0) {
            return s;
        }
    }
    return NULL;
}

/* The oldest READ/atomic not yet answered (the WQE at next included). */
VrnicSwqe *vrnic_tx_oldest_rd(VrnicQp *qp)
{
    for (uint16_t i = qp->sq.ci; i != (uint16_t)(qp->x->next + 1); i++) {
        VrnicSwqe *s = vrnic_tx_slot(qp, i);

        if (s && !s->done && vrnic_op_is_rd(s->hdr.opcode)) {
            return s;
        }
    }
    return NULL;
}

/* Where a READ/atomic is (re)requested from: READs ask for what is missing. */
uint32_t vrnic_tx_rd_psn(const VrnicCore *core, const VrnicQp *qp,
                         const VrnicSwqe *s)
{
    if (s->hdr.opcode != VRNIC_WQE_OP_RDMA_READ) {
        return s->first_psn;
    }
    return vrnic_psn_add(s->first_psn, s->rcvd / s->pmtu);
}
