/*
 * vrnic flow steering (VRNIC_DEVICE_CAP_RAW_PACKET; the rules are in the
 * uapi header, "Flow steering"): the table of flow rules, the CREATE_FLOW
 * and DESTROY_FLOW commands, and the lookup that sends a received frame
 * to a raw packet QP (vrnic_resp.c), directly or through an RSS context
 * (vrnic_rss.c), instead of the Ethernet RX ring.
 *
 * The table is a fixed array in the core (VRNIC_FLOW_MAX rules): the guest
 * cannot make it grow, and a lookup is a bounded scan with no allocation.
 * A frame is reduced once to a struct vrnic_flow_key - the fields a rule
 * can name, in their network-order layout - and each rule compares it
 * byte by byte under its mask; the value was masked at creation, so the
 * comparison needs no second mask.
 *
 * A rule never outlives its QP or RSS context: DESTROY_QP and DESTROY_RSS
 * remove their rules (vrnic_flow_qp_destroyed) and device reset empties
 * the table. The QP is
 * looked up again on every delivery (vrnic_rx_raw checks it).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_pkt.h"
#include "vrnic_xport.h"

void vrnic_flow_reset(VrnicCore *core)
{
    VrnicObjects *o = &core->obj;

    memset(o->flows, 0, sizeof(o->flows));
    o->n_flows = 0;
    o->next_flow = 0;
}

static bool vrnic_flow_key_ok(const struct vrnic_flow_key *value,
                              const struct vrnic_flow_key *mask)
{
    const uint8_t *v = (const void *)value, *m = (const void *)mask;

    if (!VRNIC_RSVD_ZERO(value->rsvd1) || value->rsvd0 ||
        !VRNIC_RSVD_ZERO(mask->rsvd1) || mask->rsvd0) {
        return false;
    }
    for (size_t i = 0; i < sizeof(*value); i++) {
        if (v[i] & ~m[i]) {
            return false;
        }
    }
    return true;
}

uint8_t vrnic_flow_create(VrnicCore *core,
                          const struct vrnic_aq_create_flow *c,
                          uint64_t *result)
{
    VrnicObjects *o = &core->obj;
    uint32_t qpn = le32_to_cpu(c->qpn);
    VrnicQp *qp = vrnic_qp_get(core, qpn);
    bool rss = qpn >= VRNIC_RSS_NUM_BASE;
    uint32_t id;

    if (c->rsvd0 || (c->flags & ~VRNIC_FLOW_F_DROP)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved or flags",
                            c->flags);
    }
    if (rss ? !vrnic_rss_exists(core, qpn) : !qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", qpn);
    }
    if (!rss && qp->type != VRNIC_QP_TYPE_RAW_PACKET) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "not a raw packet QP",
                            qp->type);
    }
    if (!vrnic_flow_key_ok(&c->value, &c->mask)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "value outside the mask, or reserved bytes", qpn);
    }
    id = vrnic_obj_alloc(&o->next_flow, 1, VRNIC_FLOW_MAX, o->flows,
                         sizeof(o->flows[0]));
    if (!id) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "flow rules",
                            o->n_flows);
    }
    o->flows[id] = (VrnicFlow) {
        .live = true,
        .flags = c->flags,
        .priority = le16_to_cpu(c->priority),
        .qpn = qpn,
        .seq = o->flow_seq++,
        .value = c->value,
        .mask = c->mask,
    };
    o->n_flows++;
    *result = id;
    trace_vrnic_flow_create(id, qpn, le16_to_cpu(c->priority), c->flags);
    return VRNIC_AQ_STS_OK;
}

static void vrnic_flow_remove(VrnicCore *core, uint32_t id)
{
    trace_vrnic_flow_destroy(id, core->obj.flows[id].qpn);
    memset(&core->obj.flows[id], 0, sizeof(core->obj.flows[id]));
    core->obj.n_flows--;
}

uint8_t vrnic_flow_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t id = le32_to_cpu(c->handle);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (id == 0 || id > VRNIC_FLOW_MAX || !core->obj.flows[id].live) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "flow id", id);
    }
    vrnic_flow_remove(core, id);
    return VRNIC_AQ_STS_OK;
}

void vrnic_flow_qp_destroyed(VrnicCore *core, uint32_t qpn)
{
    for (uint32_t id = 1; core->obj.n_flows && id <= VRNIC_FLOW_MAX; id++) {
        if (core->obj.flows[id].live && core->obj.flows[id].qpn == qpn) {
            vrnic_flow_remove(core, id);
        }
    }
}

/*
 * The fields of a frame a rule can name (uapi "Flow steering"); those the
 * frame lacks stay 0. Every offset is checked against len: the frame may
 * come from any wire peer.
 */
static void vrnic_flow_key_of(const uint8_t *f, size_t len, VrnicFrameKey *fk)
{
    struct vrnic_flow_key *k = &fk->key;
    size_t l3 = ETH_HLEN, l4;
    uint16_t type;

    memset(fk, 0, sizeof(*fk));
    memcpy(k->dmac, f, sizeof(k->dmac));
    memcpy(k->smac, f + ETH_ALEN, sizeof(k->smac));
    type = lduw_be_p(f + 12);
    if (type == ETH_P_VLAN && len >= ETH_HLEN + 4) {
        memcpy(&k->vlan_tci, f + 14, 2);
        type = lduw_be_p(f + 16);
        l3 += 4;
    }
    stw_be_p(&k->ethertype, type);
    if (type == ETH_P_IP && len >= l3 + 20 && (f[l3] >> 4) == 4) {
        size_t ihl = (f[l3] & 0xf) * 4;

        if (ihl < 20 || len < l3 + ihl) {
            return;
        }
        k->src_ip[10] = k->src_ip[11] = 0xff;
        k->dst_ip[10] = k->dst_ip[11] = 0xff;
        memcpy(k->src_ip + 12, f + l3 + 12, 4);
        memcpy(k->dst_ip + 12, f + l3 + 16, 4);
        k->ip_proto = f[l3 + 9];
        fk->l3 = 4;
        fk->frag = lduw_be_p(f + l3 + 6) & (IP_MF | IP_OFFMASK);
        if (lduw_be_p(f + l3 + 6) & IP_OFFMASK) {
            return;     /* a later fragment: no L4 header */
        }
        l4 = l3 + ihl;
    } else if (type == ETH_P_IPV6 && len >= l3 + 40 && (f[l3] >> 4) == 6) {
        memcpy(k->src_ip, f + l3 + 8, 16);
        memcpy(k->dst_ip, f + l3 + 24, 16);
        k->ip_proto = f[l3 + 6];
        fk->l3 = 6;
        l4 = l3 + 40;
    } else {
        return;
    }
    if ((k->ip_proto == IP_PROTO_TCP ||
         k->ip_proto == IP_PROTO_UDP) && len >= l4 + 4) {
        memcpy(&k->src_port, f + l4, 2);
        memcpy(&k->dst_port, f + l4 + 2, 2);
        fk->ports = true;
    }
}

static bool vrnic_flow_matches(const VrnicFlow *fl,
                               const struct vrnic_flow_key *k)
{
    const uint8_t *kb = (const void *)k;
    const uint8_t *m = (const void *)&fl->mask;
    const uint8_t *v = (const void *)&fl->value;

    for (size_t i = 0; i < sizeof(*k); i++) {
        if ((kb[i] & m[i]) != v[i]) {
            return false;
        }
    }
    return true;
}

/* The winning rule for a frame's key (0: none). */
static uint32_t vrnic_flow_match_key(VrnicCore *core,
                                     const struct vrnic_flow_key *k,
                                     uint32_t src_qpn)
{
    const VrnicFlow *best = NULL;
    uint32_t best_id = 0;

    for (uint32_t id = 1; id <= VRNIC_FLOW_MAX; id++) {
        const VrnicFlow *fl = &core->obj.flows[id];

        if (!fl->live || fl->qpn == src_qpn || !vrnic_flow_matches(fl, k)) {
            continue;
        }
        if (!best || fl->priority < best->priority ||
            (fl->priority == best->priority && fl->seq < best->seq)) {
            best = fl;
            best_id = id;
        }
    }
    return best_id;
}

uint32_t vrnic_flow_lookup(VrnicCore *core, const uint8_t *frame, size_t len,
                           uint32_t src_qpn)
{
    VrnicFrameKey fk;

    if (!core->obj.n_flows || len < ETH_HLEN) {
        return 0;
    }
    vrnic_flow_key_of(frame, len, &fk);
    return vrnic_flow_match_key(core, &fk.key, src_qpn);
}

bool vrnic_flow_rx(VrnicCore *core, const uint8_t *frame, size_t len,
                   uint32_t src_qpn)
{
    const VrnicFlow *fl;
    VrnicFrameKey fk;
    uint32_t id, qpn;

    if (!core->obj.n_flows || len < ETH_HLEN) {
        return false;
    }
    vrnic_flow_key_of(frame, len, &fk);
    id = vrnic_flow_match_key(core, &fk.key, src_qpn);
    if (!id) {
        return false;
    }
    fl = &core->obj.flows[id];
    if (fl->flags & VRNIC_FLOW_F_DROP) {
        core->stats.port[VRNIC_PORT_STAT_FLOW_DROPS]++;
        trace_vrnic_flow_drop(id, fl->qpn, len, "drop rule");
        return true;
    }
    /* An RSS context's rule: the hash picks one of its receive queues. */
    qpn = fl->qpn < VRNIC_RSS_NUM_BASE ? fl->qpn :
                                         vrnic_rss_qpn(core, fl->qpn, &fk);
    trace_vrnic_flow_rx(id, qpn, len, src_qpn);
    vrnic_rx_raw(core, id, qpn, frame, len);
    return true;
}
