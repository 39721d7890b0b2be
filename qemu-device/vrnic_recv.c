/*
 * vrnic RoCEv2 receive: routing frames to the RDMA engine and handing each
 * packet to the role that takes it (the requester's completer for
 * responses, the responder for requests). Rules common to the transport
 * are in vrnic_xport.h.
 *
 * Routing (vrnic_rx_route, from the Ethernet receive path after the MAC
 * filter, which passes every multicast MAC): an IPv4/IPv6 UDP frame to
 * port 4791 whose destination IP is one of the port's GIDs (::ffff:a.b.c.d
 * for IPv4), or a multicast group with QPs attached (vrnic_mcast.c),
 * belongs to the RDMA engine; everything else stays on the Ethernet RX
 * ring. A packet with DestQP VRNIC_MCAST_QPN goes to every QP attached to
 * its destination group, each checked as below like a DestQP. The codec then
 * parses it (lengths, checksums, opcode, ICRC); a frame it refuses is
 * dropped and counted (RX_ICRC_ERR, RX_MALFORMED port counters) and traced -
 * a bad wire packet is never a guest error.
 *
 * Checks on every packet, in order (failures drop + count + trace): QP
 * exists (DestQP; 1 = GSI) and its type fits the opcode's transport
 * (RC, UC, UD for UD and GSI), P_Key is the default (low 15 bits all
 * ones), the QP state (responses: RTS/SQD/SQE; requests: RTR and later),
 * for RC/UC the addresses (source IP = the AV's destination GID,
 * destination IP = the AV's source GID: RX_BAD_ADDR), then for UD the
 * Q_Key (a mismatch is counted in RX_QKEY_MISMATCH, no CQE) and for RC/UC
 * the PSN (vrnic_resp_seq.c) and the opcode sequence (vrnic_resp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

void vrnic_rx_drop(VrnicCore *core, unsigned stat, uint32_t qpn,
                   uint32_t psn, const char *why)
{
    core->stats.port[stat]++;
    trace_vrnic_rx_drop(qpn, psn, why);
}

/*
 * A connected QP talks to one peer: its packets come from the AV's
 * destination GID to the AV's source GID (rxe's check_addr). Anyone else
 * on the wire could otherwise inject UC data without guessing a PSN, RC
 * data by covering the PSN window, or forge ACKs and READ responses.
 */
static bool vrnic_rx_from_peer(const VrnicCore *core, const VrnicQp *qp,
                               const VrnicPkt *pkt)
{
    const struct vrnic_av *av = &qp->attr.av;

    /*
     * On the loopback path the device also knows the sending QP, which an
     * RC/UC header does not carry: only the QP this one is connected to
     * (another process's QP on this host has the same GID as the peer).
     */
    if (core->rx_loop_src && core->rx_loop_src !=
        (le32_to_cpu(qp->attr.dest_qpn) & VRNIC_IB_QPN_MASK)) {
        return false;
    }
    return av->sgid_index < core->cfg.gid_tbl_len &&
           core->gids[av->sgid_index].type &&
           !memcmp(pkt->addr.sgid, av->dgid, 16) &&
           !memcmp(pkt->addr.dgid, core->gids[av->sgid_index].gid, 16);
}

/* Deliver a parsed packet to QP qpn (its DestQP, or a multicast member). */
void vrnic_rx_qp(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                 const VrnicPkt *pkt)
{
    uint8_t tr = pkt->hdr.bth.opcode & VRNIC_IB_TRANSPORT_MASK;
    bool resp = !(pkt->op->flags & VRNIC_OPF_REQ);  /* ACK, READ/atomic resp */
    uint8_t type;
    VrnicQp *qp;

    qp = qpn ? vrnic_qp_get(core, qpn) : NULL;
    type = qp ? qp->type : 0;
    /* XRC: requests go to a target, the answers to an initiator. */
    if (!qp ||
        (tr == VRNIC_IB_RC && type != VRNIC_QP_TYPE_RC) ||
        (tr == VRNIC_IB_UC && type != VRNIC_QP_TYPE_UC) ||
        (tr == VRNIC_IB_UD && type != VRNIC_QP_TYPE_UD &&
         type != VRNIC_QP_TYPE_GSI) ||
        (tr == VRNIC_IB_XRC &&
         type != (resp ? VRNIC_QP_TYPE_XRC_INI : VRNIC_QP_TYPE_XRC_TGT))) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_NO_QP, qpn, pkt->hdr.bth.psn,
                      "no QP of that type");
        return;
    }
    if ((pkt->hdr.bth.pkey & VRNIC_PKEY_KEY_MASK) !=
        (VRNIC_PKEY_DEFAULT & VRNIC_PKEY_KEY_MASK)) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_BAD_PKEY, qpn, pkt->hdr.bth.psn,
                      "P_Key");
        return;
    }
    if (resp ? (qp->state != VRNIC_QPS_RTS && qp->state != VRNIC_QPS_SQD &&
                qp->state != VRNIC_QPS_SQE) :
               (qp->state < VRNIC_QPS_RTR || qp->state > VRNIC_QPS_SQE)) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_BAD_STATE, qpn, pkt->hdr.bth.psn,
                      "QP state");
        return;
    }
    if (tr != VRNIC_IB_UD && !vrnic_rx_from_peer(core, qp, pkt)) {
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_BAD_ADDR, qpn, pkt->hdr.bth.psn,
                      "not from the QP's peer");
        return;
    }
    if (resp) {
        vrnic_tx_response(core, qpn, qp, frame, pkt);
    } else if (tr == VRNIC_IB_UD) {
        vrnic_rx_ud(core, qpn, qp, frame, pkt);
    } else {
        vrnic_rx_rc(core, qpn, qp, frame, pkt);
        if (tr != VRNIC_IB_UC) {
            vrnic_rx_replay_held(core, qpn, qp);
        }
    }
}

/*
 * A packet after the first parse stage (vrnic_pkt_parse_ip): the rest of
 * the parse, then to its QP (or the members of its multicast group).
 */
static void vrnic_rx_pkt(VrnicCore *core, const uint8_t *frame, size_t len,
                         VrnicPkt *pkt)
{
    VrnicPktErr err = vrnic_pkt_parse_roce(frame, len, pkt);

    if (err != VRNIC_PKT_OK) {
        if (err == VRNIC_PKT_ERR_ICRC) {
            core->stats.port[VRNIC_PORT_STAT_RX_ICRC_ERR]++;
        } else {
            core->stats.port[VRNIC_PORT_STAT_RX_MALFORMED]++;
        }
        trace_vrnic_rx_bad(vrnic_pkt_err_str(err), len);
        return;
    }
    core->stats.port[VRNIC_PORT_STAT_RX_PKTS]++;
    core->stats.port[VRNIC_PORT_STAT_RX_BYTES] += len;
    trace_vrnic_rx_pkt(pkt->hdr.bth.dqpn, pkt->hdr.bth.opcode, pkt->hdr.bth.psn,
                       pkt->payload_len);
    if (pkt->hdr.bth.dqpn == VRNIC_MCAST_QPN) {
        /*
         * Multicast: every QP attached to the destination group, each
         * checked as if it were the DestQP (so only UD QPs take it).
         */
        uint32_t qpns[VRNIC_MCAST_MAX_QP_ATTACH];
        uint32_t n = vrnic_mcast_members(core, pkt->addr.dgid, qpns);

        if (!n) {
            vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_NO_QP, VRNIC_MCAST_QPN,
                          pkt->hdr.bth.psn,
                          "multicast: no QP attached to the group");
            return;
        }
        trace_vrnic_mcast_rx(ldq_be_p(pkt->addr.dgid),
                             ldq_be_p(pkt->addr.dgid + 8), n);
        for (uint32_t i = 0; i < n; i++) {
            vrnic_rx_qp(core, qpns[i], frame, pkt);
        }
        return;
    }
    if (vrnic_gid_is_mcast(pkt->addr.dgid)) {
        /* IBTA: a packet to a multicast address carries DestQP 0xFFFFFF. */
        vrnic_rx_drop(core, VRNIC_PORT_STAT_RX_NO_QP, pkt->hdr.bth.dqpn,
                      pkt->hdr.bth.psn,
                      "multicast destination with a unicast DestQP");
        return;
    }
    vrnic_rx_qp(core, pkt->hdr.bth.dqpn, frame, pkt);
}

/* A frame from the loopback queue or the fault injector. */
void vrnic_rx_frame(VrnicCore *core, const uint8_t *frame, size_t len)
{
    VrnicPkt pkt;
    VrnicPktErr err = vrnic_pkt_parse_ip(frame, len, &pkt);

    if (err != VRNIC_PKT_OK) {
        core->stats.port[VRNIC_PORT_STAT_RX_MALFORMED]++;
        trace_vrnic_rx_bad(vrnic_pkt_err_str(err), len);
        return;
    }
    vrnic_rx_pkt(core, frame, len, &pkt);
}

bool vrnic_rx_route(VrnicCore *core, const uint8_t *frame, size_t len)
{
    VrnicPkt pkt;

    /* A multicast group is ours while a QP is attached to it. */
    if (vrnic_pkt_parse_ip(frame, len, &pkt) != VRNIC_PKT_OK ||
        !(vrnic_port_has_gid(core, pkt.addr.dgid) ||
          vrnic_mcast_members(core, pkt.addr.dgid, NULL))) {
        return false;
    }
    if (vrnic_fault_passes(core, VRNIC_FAULT_DIR_RX, len)) {
        /* Nothing stands between the wire and the engine: parsed once. */
        vrnic_rx_pkt(core, frame, len, &pkt);
    } else {
        /* The injector plays the wire: what it delivers is a new frame. */
        vrnic_fault_frame(core, VRNIC_FAULT_DIR_RX, frame, len);
    }
    return true;
}
