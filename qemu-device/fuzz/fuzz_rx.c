/*
 * libFuzzer target 3 of 3: frames from the wire. One device (node B) with
 * every QP type up and receive WQEs posted; the harness is its peer (node
 * A's GID, MAC and QP numbers, but no device behind them). The input is a
 * list of operations: frames as raw bytes, raw bytes re-addressed to a
 * QP of the device with the IPv4 checksum and ICRC made valid again
 * (captured rdma_rxe frames come in this way), frames built from fields
 * with the device's own codec (vrnic_pkt_build: any implemented opcode,
 * PSNs near the QP's expected one, keys and addresses of the device's MRs
 * - its FRMR among them - or anything), answers to the requests the device
 * sent (ACKs, NAKs, READ responses, atomic ACKs, right or wrong), and
 * device-side work: post sends (so answers have something to match) and
 * receives, register and invalidate the FRMR, run bottom halves, fire
 * timers, change QP states, stall the backend. Every frame the device
 * sends must pass its own parser; its DMA stays within what the harness
 * handed out.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fuzz_dev.h"
#include "fuzz_seed.h"
#include "../vrnic_xport.h"

#define MAX_OPS 256
#define PEER_QPN_BASE 0x100
#define PAYLOAD_MAX 4200

static FuzzBus *bus;
static FuzzNode dev;
static uint8_t peer_gid[16], peer_gid6[16], dev_gid6[16];
static const uint8_t peer_mac[6] = { 0x52, 0x54, 0x00, 0xf0, 0x00, 0xa1 };
static uint8_t ops_rc[32], ops_uc[32], ops_ud[4];
static unsigned n_rc, n_uc, n_ud;

/* The newest request the device sent on each QP (for answers). */
typedef struct Sent {
    bool valid;
    VrnicPkt pkt;
} Sent;
static Sent sent[FUZZ_NODE_QPS];

static int qp_index_of_peer(uint32_t dqpn)
{
    for (unsigned i = 0; i < FUZZ_NODE_QPS; i++) {
        if (dev.qp[i].qpn && dev.qp[i].peer_qpn == dqpn &&
            !dev.qp[i].peer_local) {
            return i;
        }
    }
    return -1;
}

/* Frames the device sends: remember the newest request per QP. */
static void sink(FuzzBus *b, const uint8_t *frame, size_t len)
{
    VrnicPkt pkt;
    int i;

    if (vrnic_pkt_parse(frame, len, &pkt) != VRNIC_PKT_OK ||
        !(pkt.op->flags & VRNIC_OPF_REQ)) {
        return;
    }
    i = qp_index_of_peer(pkt.hdr.bth.dqpn);
    if (i >= 0) {
        sent[i].valid = true;
        sent[i].pkt = pkt;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    VrnicConfig cfg = fuzz_config();

    fuzz_global_init();
    cfg.mac[5] = 0xa2;
    bus = fuzz_bus_new("dev", &cfg, 256 * 1024);
    bus->sink = sink;
    fuzz_gid_v4(peer_gid, 1);
    memset(peer_gid6, 0, 16);
    peer_gid6[0] = 0xfe;
    peer_gid6[1] = 0x80;
    peer_gid6[15] = 1;
    memcpy(dev_gid6, peer_gid6, 16);
    dev_gid6[15] = 2;
    for (unsigned op = 0; op < 256; op++) {
        if (!vrnic_pkt_opinfo(op)) {
            continue;
        }
        switch (op & VRNIC_IB_TRANSPORT_MASK) {
        case VRNIC_IB_RC:
            ops_rc[n_rc++] = op;
            break;
        case VRNIC_IB_UC:
            ops_uc[n_uc++] = op;
            break;
        case VRNIC_IB_UD:
            ops_ud[n_ud++] = op;
            break;
        }
    }
    return 0;
}

/* ---- the device side ---------------------------------------------------- */

/*
 * Device QP i, created and up on first use, and every QP given its
 * first receive WQEs (again after a RESET).
 */
static FuzzQp *use_qp(unsigned i)
{
    static const uint8_t mtu[FUZZ_NODE_QPS] = {
        [FUZZ_QP_RC] = 1, [FUZZ_QP_RC_SRQ] = 3, [FUZZ_QP_UC] = 1,
        [FUZZ_QP_LOOP_A] = 2, [FUZZ_QP_LOOP_B] = 2,
    };
    FuzzQp *q = &dev.qp[i];

    if (!q->qpn) {
        if (i == FUZZ_QP_LOOP_A || i == FUZZ_QP_LOOP_B) {
            fuzz_pair_ensure(&dev, NULL, i);
        } else {
            fuzz_qp_create(&dev, i);
            if (i != FUZZ_QP_GSI && i != FUZZ_QP_UD) {
                q->peer = i;
                q->peer_qpn = PEER_QPN_BASE + i;
            }
            fuzz_qp_up(&dev, q, q->peer < 0 ? NULL : peer_gid, peer_mac,
                       q->peer_qpn, mtu[i]);
        }
    }
    for (unsigned j = 0; j < FUZZ_NODE_QPS; j++) {
        FuzzQp *p = &dev.qp[j];

        if (p->live && !p->primed) {
            p->primed = true;
            if (!p->srqn) {
                fuzz_post_recv_simple(&dev, p, FUZZ_MR_ALL, 1024 * j, 1024);
                fuzz_post_recv_simple(&dev, p, FUZZ_MR_TABLE, 2048 * j, 2048);
            }
        }
    }
    return q;
}

static VrnicXport *xport(const FuzzQp *q)
{
    VrnicQp *qp = q->qpn ? &bus->core.obj.qps[q->qpn] : NULL;

    return qp && qp->live ? qp->x : NULL;
}

static void pick_sge(FuzzIn *in, struct vrnic_sge *s)
{
    uint8_t c = fin_u8(in);
    unsigned m = c % FUZZ_NODE_MRS;
    uint32_t off = fin_u16(in) % dev.mr[m].len;

    s->addr = htole64(dev.mr[m].iova + off);
    s->length = htole32(fin_u16(in) % (dev.mr[m].len - off + 1));
    s->lkey = htole32(dev.mr[m].key);
}

/* A send WQE on a device QP, so the peer's answers have a request. */
static void op_post_send(FuzzIn *in, FuzzQp *q)
{
    uint8_t w[1u << FUZZ_SQ_SHIFT];
    struct vrnic_send_wqe *h = (void *)w;
    bool ud = q->type == VRNIC_QP_TYPE_UD || q->type == VRNIC_QP_TYPE_GSI;
    unsigned off = ud ? 128 : 64;
    uint8_t c = fin_u8(in);

    memset(w, 0, sizeof(w));
    h->wr_id = htole64(c);
    h->opcode = c % 8;
    h->flags = VRNIC_WQE_FLAG_SIGNALED | ((c & 0x80) ? VRNIC_WQE_FLAG_FENCE :
                                          0);
    h->num_sge = 1 + ((c >> 3) & 1);
    h->imm_data = fin_u32(in);
    h->rkey = htole32(fin_u32(in));
    h->remote_addr = htole64(fin_u64(in) & ~7ull);
    h->compare_add = htole64(fin_u8(in));
    h->swap = htole64(fin_u8(in));
    if (ud) {
        struct vrnic_av *av = (void *)(w + 64);
        struct vrnic_ud_dest *d = (void *)(w + 96);

        memcpy(av->dgid, peer_gid, 16);
        memcpy(av->dmac, peer_mac, 6);
        av->hop_limit = 64;
        d->dest_qpn = htole32(0x42);
        d->qkey = htole32(0x80000000);
    }
    for (unsigned i = 0; i < h->num_sge; i++) {
        pick_sge(in, (struct vrnic_sge *)(w + off) + i);
    }
    if (h->opcode >= VRNIC_WQE_OP_ATOMIC_CMP_SWP) {
        struct vrnic_sge *s = (void *)(w + off);

        h->num_sge = 1;
        s->addr = htole64(le64toh(s->addr) & ~7ull);
        s->length = htole32(8);
    }
    memcpy(fuzz_ptr(bus, fuzz_sq_slot(q, q->sq_pi), sizeof(w)), w, sizeof(w));
    q->sq_pi++;
    fuzz_db(bus, 0, VRNIC_DB_SQ, q->qpn, q->sq_pi);
    fuzz_settle(bus);
}

static void op_post_recv(FuzzIn *in, FuzzQp *q)
{
    uint8_t c = fin_u8(in);
    unsigned m = c % FUZZ_NODE_MRS;
    uint32_t off = fin_u16(in) % dev.mr[m].len;
    uint32_t len = fin_u16(in) % (dev.mr[m].len - off + 1);

    if (q->srqn || (c & 0x80)) {
        fuzz_post_srq_simple(&dev, m, off, len);
    } else {
        fuzz_post_recv_simple(&dev, q, m, off, len);
    }
}

/* ---- frames -------------------------------------------------------------- */

static uint8_t pick_opcode(FuzzIn *in, const FuzzQp *q)
{
    uint8_t c = fin_u8(in);

    if (c & 0x80) {
        return fin_u8(in);
    }
    switch (q->type) {
    case VRNIC_QP_TYPE_RC:
        return ops_rc[c % n_rc];
    case VRNIC_QP_TYPE_UC:
        return ops_uc[c % n_uc];
    default:
        return ops_ud[c % n_ud];
    }
}

/* An R_Key and address on the device: an MR, the window, or anything. */
static void pick_rkey(FuzzIn *in, uint64_t *va, uint32_t *rkey, bool align)
{
    uint8_t c = fin_u8(in);
    unsigned m = c % (FUZZ_NODE_MRS + 2);
    uint16_t off = fin_u16(in);

    if (m < FUZZ_NODE_MRS) {
        *va = dev.mr[m].iova + ((c & 0x80) ? off : off % dev.mr[m].len);
        *rkey = dev.mr[m].key;
    } else if (m == FUZZ_NODE_MRS) {
        *va = dev.mr[FUZZ_MR_ALL].iova + off % 16384;
        *rkey = dev.mw_key;
    } else {
        *va = fin_u64(in);
        *rkey = fin_u32(in);
    }
    if (align && !(c & 0x40)) {
        *va &= ~7ull;
    }
}

/*
 * Build a frame to device QP q (or a DestQP the input picks) from fields,
 * with the device's codec, then deliver it. base: a request the device
 * sent that this answers (responses take its PSN and length), or NULL.
 */
static void op_build(FuzzIn *in, FuzzQp *q, const VrnicPkt *base)
{
    static uint8_t frame[VRNIC_XPORT_FRAME + 64];
    static uint8_t payload[PAYLOAD_MAX];
    VrnicXport *x = xport(q);
    VrnicPktAddr a;
    VrnicPktHdrs h;
    uint8_t ctl = fin_u8(in), ctl2 = fin_u8(in), ctl3 = fin_u8(in);
    VrnicQp *qp = q->qpn ? &bus->core.obj.qps[q->qpn] : NULL;
    uint32_t pmtu = qp && qp->live ? vrnic_xport_pmtu(&bus->core, qp) : 1024;
    const VrnicOpInfo *op;
    uint32_t plen;
    size_t len;

    memset(&a, 0, sizeof(a));
    memset(&h, 0, sizeof(h));
    memcpy(a.dmac, (ctl2 & 0x80) ? (const uint8_t *)"\xff\xff\xff\xff\xff\xff"
                                 : dev.mac, 6);
    memcpy(a.smac, peer_mac, 6);
    if ((ctl2 & 0x60) == 0x60 && (q->type == VRNIC_QP_TYPE_UD ||
                                  q->type == VRNIC_QP_TYPE_GSI)) {
        memcpy(a.sgid, peer_gid6, 16);
        memcpy(a.dgid, dev_gid6, 16);
    } else if ((ctl2 & 0x60) == 0x40) {
        /* From the device's own address: a spoofed loopback frame. */
        memcpy(a.sgid, dev.gid, 16);
        memcpy(a.dgid, dev.gid, 16);
    } else {
        memcpy(a.sgid, peer_gid, 16);
        memcpy(a.dgid, dev.gid, 16);
    }
    if ((ctl2 & 0x60) == 0x20 && (ctl & 0x80)) {
        /* A multicast group the UD QP may have joined. */
        memset(a.dgid, 0, 16);
        a.dgid[10] = a.dgid[11] = 0xff;
        a.dgid[12] = 224;
        a.dgid[15] = fin_u8(in) % 4;
    }
    a.traffic_class = fin_u8(in);
    a.hop_limit = 1 + fin_u8(in);
    a.flow_label = fin_u8(in);
    a.udp_sport = 0xc000 | fin_u16(in);
    a.ip_id = fin_u16(in);

    if (base) {
        /*
         * An answer: ACK/NAK, READ response or atomic ACK to what the
         * device asked, mostly right.
         */
        uint8_t r = base->hdr.bth.opcode & ~VRNIC_IB_TRANSPORT_MASK;
        uint8_t k = fin_u8(in);

        if (r == VRNIC_IB_READ_REQ) {
            static const uint8_t rr[] = {
                VRNIC_IB_READ_RESP_ONLY, VRNIC_IB_READ_RESP_FIRST,
                VRNIC_IB_READ_RESP_MIDDLE, VRNIC_IB_READ_RESP_LAST,
            };
            h.bth.opcode = rr[k % 4];
        } else if (r == VRNIC_IB_CMP_SWAP || r == VRNIC_IB_FETCH_ADD) {
            h.bth.opcode = VRNIC_IB_ATOMIC_ACK;
        } else {
            h.bth.opcode = VRNIC_IB_ACK;
        }
        if ((k & 0x30) == 0x30) {
            h.bth.opcode = VRNIC_IB_ACK;    /* a NAK instead */
        }
        h.bth.psn = vrnic_psn_add(base->hdr.bth.psn, (k >> 6) ?
                                  (int8_t)fin_u8(in) : 0);
        h.aeth.syndrome = (k & 0x30) == 0x30 ? fin_u8(in) : 0x1f;
        h.aeth.msn = fin_u8(in);
        h.atomic_orig = fin_u64(in);
        plen = h.bth.opcode == VRNIC_IB_READ_RESP_ONLY ||
               h.bth.opcode == VRNIC_IB_READ_RESP_LAST ?
               MIN(base->hdr.reth.len, pmtu) : pmtu;
        if (k & 8) {
            plen = fin_u16(in) % PAYLOAD_MAX;
        }
        h.bth.dqpn = q->qpn;
    } else {
        h.bth.opcode = pick_opcode(in, q);
        switch (ctl & 3) {
        case 0:
        case 1:
            h.bth.dqpn = q->qpn;
            break;
        case 2:
            h.bth.dqpn = (ctl & 4) ? VRNIC_MCAST_QPN : 1;
            break;
        default:
            h.bth.dqpn = fin_u32(in) & VRNIC_IB_QPN_MASK;
            break;
        }
        /* Near the PSN the QP expects: in order, a gap, a duplicate. */
        h.bth.psn = (ctl & 8) ? fin_u32(in) & VRNIC_IB_PSN_MASK :
                    vrnic_psn_add(x ? x->epsn : 0,
                                  (ctl3 & 4) ? 0 : (int8_t)fin_u8(in));
        h.deth.qkey = (ctl & 0x10) ? fin_u32(in) :
                      q->type == VRNIC_QP_TYPE_GSI ? 0x80010000 : 0x1234;
        h.deth.sqpn = fin_u8(in);
        pick_rkey(in, &h.reth.va, &h.reth.rkey, false);
        h.reth.len = (ctl & 0x20) ? fin_u32(in) : fin_u16(in) % 20000;
        h.feth = fin_u8(in);    /* FLUSH: selectivity, placement type */
        pick_rkey(in, &h.atomic.va, &h.atomic.rkey, true);
        h.atomic.swap_add = fin_u64(in);
        h.atomic.compare = fin_u64(in);
        h.aeth.syndrome = fin_u8(in);
        h.aeth.msn = fin_u32(in) & 0xffffff;
        h.imm = fin_u32(in);
        /* The window, the FRMR with its current key byte or another. */
        if (ctl & 0x40) {
            h.ieth_rkey = fin_u32(in);
        } else if (!(ctl3 & 0x08)) {
            h.ieth_rkey = dev.mw_key;
        } else {
            h.ieth_rkey = dev.mr[FUZZ_MR_FRMR].key ^
                          ((ctl3 & 0x10) ? fin_u8(in) : 0);
        }
        /*
         * The path MTU (what FIRST/MIDDLE must carry), near it, or any
         * size up to past the largest path MTU.
         */
        switch (ctl3 & 3) {
        case 0:
            plen = pmtu;
            break;
        case 1:
            plen = pmtu + (int8_t)fin_u8(in) % 9;
            break;
        case 2:
            plen = fin_u16(in) % 1100;
            break;
        default:
            plen = fin_u16(in) % PAYLOAD_MAX;
            break;
        }
    }
    h.bth.se = ctl2 & 1;
    h.bth.mig = ctl2 & 2;
    h.bth.ack_req = ctl2 & 4;
    h.bth.fecn = ctl2 & 8;
    h.bth.pkey = (ctl2 & 0x10) ? fin_u16(in) : 0xffff;
    if (base) {
        h.bth.opcode |= base->hdr.bth.opcode & VRNIC_IB_TRANSPORT_MASK;
    }
    op = vrnic_pkt_opinfo(h.bth.opcode);
    if (!op) {
        return;     /* the codec builds no unknown opcode: see op_raw */
    }
    if (!(op->flags & VRNIC_OPF_PAYLOAD)) {
        plen = 0;
    }
    fin_bytes(in, payload, MIN(plen, 64));
    fuzz_fill_pattern(payload, 64, plen);
    len = vrnic_pkt_build(frame, sizeof(frame), &a, &h, payload, plen);
    if (!len) {
        return;
    }
    /* Then maybe change a few bytes under a valid ICRC. */
    for (unsigned n = fin_u8(in) % 4; n; n--) {
        uint16_t off = fin_u16(in);

        frame[off % len] = fin_u8(in);
    }
    if (ctl2 & 0x40 || !(ctl & 0x40)) {
        fuzz_frame_fix(frame, len);
    }
    fuzz_receive(bus, frame, len);
}

/*
 * Raw bytes as a frame. With re-addressing (mode bit 1), a captured frame
 * is pointed at the device: destination MAC and IP, source IP (the peer,
 * which RC/UC check), DestQP to the device QP of its transport, PSN to
 * what that QP expects (mode bit 2); mode bit 0 makes checksums and ICRC
 * valid again afterwards.
 */
static void op_raw(FuzzIn *in)
{
    static uint8_t frame[VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD];
    uint8_t mode = fin_u8(in);
    int8_t delta = fin_u8(in);
    uint16_t len = fin_u16(in) % sizeof(frame);
    size_t ip_off, ip_len;

    fin_bytes(in, frame, len);
    if ((mode & 2) && vrnic_icrc_locate(frame, len, &ip_off, &ip_len)) {
        uint8_t *ip = frame + ip_off;
        bool v4 = (ip[0] >> 4) == 4;
        size_t hl = v4 ? (ip[0] & 0xf) * 4 : 40;
        uint8_t *bth = ip + hl + 8;

        memcpy(frame, dev.mac, 6);
        if (v4) {
            memcpy(ip + 12, peer_gid + 12, 4);
            memcpy(ip + 16, dev.gid + 12, 4);
        } else {
            memcpy(ip + 8, peer_gid6, 16);
            memcpy(ip + 24, dev_gid6, 16);
        }
        if (hl + 8 + 12 <= ip_len) {
            const VrnicOpInfo *op = vrnic_pkt_opinfo(bth[0]);
            unsigned qi;
            FuzzQp *q;
            VrnicXport *x;
            uint32_t psn;

            switch (bth[0] & VRNIC_IB_TRANSPORT_MASK) {
            case VRNIC_IB_RC:
                qi = (mode & SEED_RX_SRQ) ? FUZZ_QP_RC_SRQ : FUZZ_QP_RC;
                break;
            case VRNIC_IB_UC:
                qi = FUZZ_QP_UC;
                break;
            default:
                qi = (bth[7] == 1 && !bth[5] && !bth[6]) ? FUZZ_QP_GSI :
                     FUZZ_QP_UD;
                break;
            }
            q = use_qp(qi);
            x = xport(q);
            bth[5] = q->qpn >> 16;
            bth[6] = q->qpn >> 8;
            bth[7] = q->qpn;
            if ((mode & 4) && x) {
                /* Requests: the expected PSN; answers: the newest sent. */
                psn = op && !(op->flags & VRNIC_OPF_REQ) && sent[qi].valid ?
                      sent[qi].pkt.hdr.bth.psn : x->epsn;
                psn = vrnic_psn_add(psn, delta);
                bth[9] = psn >> 16;
                bth[10] = psn >> 8;
                bth[11] = psn;
            }
        }
    }
    if (mode & 1) {
        fuzz_frame_fix(frame, len);
    }
    fuzz_receive(bus, frame, len);
}

/* ---- the rest ------------------------------------------------------------ */

static void op_state(FuzzIn *in, FuzzQp *q)
{
    uint8_t kind = fin_u8(in);

    switch (kind % 4) {
    case 0:
        fuzz_modify(&dev, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_ERR, NULL);
        break;
    case 1:
        fuzz_modify(&dev, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_SQD, NULL);
        break;
    case 2:
        fuzz_modify(&dev, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_RTS, NULL);
        break;
    default:
        fuzz_modify(&dev, q->qpn, VRNIC_QP_ATTR_STATE, VRNIC_QPS_RESET, NULL);
        fuzz_qp_up(&dev, q, q->peer < 0 ? NULL : q->peer_local ? dev.gid :
                   peer_gid, q->peer_local ? dev.mac : peer_mac, q->peer_qpn,
                   1 + (kind >> 2) % 5);
        q->primed = false;
        break;
    }
}

/*
 * A key-table WQE (BIND_MW, REG_MR, LOCAL_INV) on q, run at once: no
 * packet goes out.
 */
static void post_local(FuzzQp *q, const void *wqe, size_t len)
{
    uint8_t *slot = fuzz_ptr(bus, fuzz_sq_slot(q, q->sq_pi),
                             1u << FUZZ_SQ_SHIFT);

    memset(slot, 0, 1u << FUZZ_SQ_SHIFT);
    memcpy(slot, wqe, len);
    q->sq_pi++;
    fuzz_db(bus, 0, VRNIC_DB_SQ, q->qpn, q->sq_pi);
    fuzz_settle(bus);
}

static void op_admin(FuzzIn *in, FuzzQp *q)
{
    uint8_t kind = fin_u8(in);
    FuzzMr *m = &dev.mr[(kind >> 4) % FUZZ_NODE_MRS];
    bool rc_uc = q->type == VRNIC_QP_TYPE_RC || q->type == VRNIC_QP_TYPE_UC;
    FuzzCmd c;
    uint64_t r;

    switch (kind % 6) {
    case 0:
        fuzz_cmd_init(&c, VRNIC_AQ_OP_DEREG_MR);
        c.destroy.handle = htole32(m->key);
        if (m->live && fuzz_aq_exec(bus, &c, NULL) == VRNIC_AQ_STS_OK) {
            /* Its pages are the guest's again: a DMA there is a hit. */
            m->live = false;
            fuzz_mr_unhand(&dev, m);
        }
        break;
    case 1:
        fuzz_cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
        c.mr.handle = htole32(m->key);
        c.mr.flags = htole32(VRNIC_MR_REREG_ACCESS);
        c.mr.access = htole32(fin_u8(in) & VRNIC_ACCESS_ALL);
        c.mr.key_byte = fin_u8(in);
        if (m->live && fuzz_aq_exec(bus, &c, &r) == VRNIC_AQ_STS_OK) {
            m->key = r;
        }
        break;
    case 2:
        fuzz_cmd_init(&c, (kind & 0x10) ? VRNIC_AQ_OP_DETACH_MCAST :
                          VRNIC_AQ_OP_ATTACH_MCAST);
        c.mcast.qpn = htole32(use_qp(FUZZ_QP_UD)->qpn);
        c.mcast.gid[10] = c.mcast.gid[11] = 0xff;
        c.mcast.gid[12] = 224;
        c.mcast.gid[15] = fin_u8(in) % 4;
        fuzz_aq_exec(bus, &c, NULL);
        break;
    case 3: {
        /*
         * Bind the window over MR_ALL through q, so SEND with
         * Invalidate and remote accesses through it have a target.
         */
        struct vrnic_bind_mw_wqe w = {
            .opcode = VRNIC_WQE_OP_BIND_MW,
            .flags = VRNIC_WQE_FLAG_SIGNALED,
            .mw_key = htole32(dev.mw_key),
            .mr_key = htole32(dev.mr[FUZZ_MR_ALL].key),
            .access = htole32(FUZZ_ACC_ALL & ~VRNIC_ACCESS_MW_BIND),
        };

        if (!rc_uc) {
            break;
        }
        w.addr = htole64(dev.mr[FUZZ_MR_ALL].iova + (fin_u8(in) << 4));
        w.length = htole64(fin_u16(in) % 8192);
        post_local(q, &w, sizeof(w));
        break;
    }
    case 4: {
        /*
         * REG_MR of the FRMR through q: a range of its RAM, key byte,
         * rights and page size (4 KiB to past its RAM) of the input, so
         * that frames through it and SEND with Invalidate of it land.
         */
        struct vrnic_reg_mr_wqe w = {
            .flags = VRNIC_WQE_FLAG_SIGNALED,
        };
        uint8_t kb, a, sh;
        uint16_t off;

        if (!rc_uc) {
            break;
        }
        kb = fin_u8(in);
        a = fin_u8(in);
        sh = fin_u8(in);
        off = fin_u16(in);
        fuzz_frmr_reg_range(&dev, &w, kb, a & VRNIC_ACCESS_ALL, 12 + sh % 6,
                            off, fin_u16(in));
        post_local(q, &w, sizeof(w));
        break;
    }
    default: {
        /* LOCAL_INV of the FRMR through q, its key byte or another. */
        struct vrnic_send_wqe w = {
            .opcode = VRNIC_WQE_OP_LOCAL_INV,
            .flags = VRNIC_WQE_FLAG_SIGNALED,
        };

        if (!rc_uc) {
            break;
        }
        w.imm_data = htole32(dev.mr[FUZZ_MR_FRMR].key ^ fin_u8(in));
        post_local(q, &w, sizeof(w));
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    unsigned ops = 0;
    FuzzCmd c;

    memset(sent, 0, sizeof(sent));
    fuzz_bus_start(bus);
    fuzz_node_init(&dev, bus, 2);
    /* A second GID, IPv6, for UD frames over IPv6. */
    fuzz_cmd_init(&c, VRNIC_AQ_OP_ADD_GID);
    c.gid.index = htole32(1);
    c.gid.type = htole32(VRNIC_GID_TYPE_ROCE_V2);
    memcpy(c.gid.gid, dev_gid6, 16);
    fuzz_aq_exec(bus, &c, NULL);
    fuzz_post_srq_simple(&dev, FUZZ_MR_ALL, 8192, 4096);
    fuzz_post_srq_simple(&dev, FUZZ_MR_TABLE, 0, 8192);
    bus->check_frames = true;

    while (!fin_empty(&in) && ops++ < MAX_OPS) {
        uint8_t op = fin_u8(&in);
        FuzzQp *q = use_qp(fin_u8(&in) % FUZZ_NODE_QPS);
        int qi = q - dev.qp;

        if (!q->live) {
            continue;
        }
        switch (op % RX__COUNT) {
        case RX_BUILD ... RX_RAW - 1:
            op_build(&in, q, NULL);
            break;
        case RX_RAW ... RX_ANSWER - 1:
            op_raw(&in);
            break;
        case RX_ANSWER ... RX_POST_SEND - 1:
            if (sent[qi].valid) {
                op_build(&in, q, &sent[qi].pkt);
            }
            break;
        case RX_POST_SEND ... RX_POST_RECV - 1:
            op_post_send(&in, q);
            break;
        case RX_POST_RECV ... RX_SETTLE - 1:
            op_post_recv(&in, q);
            break;
        case RX_SETTLE ... RX_TIMER - 1:
            fuzz_settle_n(bus, 1 + fin_u8(&in));
            break;
        case RX_TIMER ... RX_CQ - 1:
            for (unsigned k = fin_u8(&in) % 4 + 1; k--; ) {
                fuzz_fire_timer(bus);
            }
            break;
        case RX_CQ: {
            uint8_t k = fin_u8(&in);

            if (k & 0x80) {
                fuzz_cq_set_ci(&dev, k & 1, fin_u32(&in));
            } else {
                fuzz_cq_poll(&dev, k & 1, 64);
            }
            break;
        }
        case RX_STATE:
            op_state(&in, q);
            break;
        case RX_WIRE: {
            uint8_t k = fin_u8(&in);

            if (k & 0x80) {
                bus->busy = k % (VRNIC_WIRE_MAX_QUEUED + 16);
            } else {
                fuzz_wire_release_n(bus, k + 1);
            }
            break;
        }
        case RX_ADMIN:
            op_admin(&in, q);
            break;
        default:
            fuzz_advance_clock(bus, fin_u32(&in));
            break;
        }
    }
    fuzz_settle(bus);
    for (unsigned i = 0; i < 8 && fuzz_fire_timer(bus); i++) {
        fuzz_cq_poll(&dev, 0, 64);
        fuzz_cq_poll(&dev, 1, 64);
    }
    fuzz_bus_stop(bus);
    return 0;
}
