/*
 * vrnic multicast groups (the rules are in the uapi header,
 * "Multicast groups"): the table of groups and their attached UD QPs, the
 * ATTACH_MCAST / DETACH_MCAST commands, and the lookup the transport uses
 * to deliver a multicast packet to every member (vrnic_recv.c) and to loop a
 * multicast send back to the members on this device (vrnic_req.c).
 *
 * The table is a fixed array in the core (VRNIC_MCAST_MAX_GRP groups of at
 * most VRNIC_MCAST_MAX_QP_ATTACH QPs): the guest cannot make it grow, and a
 * lookup is a bounded scan with no allocation, on the command path and per
 * packet alike. Members stay in attach order, so delivery order is stable.
 *
 * Membership is checked again at delivery: vrnic_recv.c treats every member
 * like the DestQP of a unicast packet (live, UD, P_Key, state, Q_Key), so
 * a number left behind could at worst reach a QP that fails those checks.
 * None is left behind: DESTROY_QP detaches (vrnic_mcast_qp_destroyed) and
 * device reset empties the table (vrnic_obj_reset).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_pkt.h"

void vrnic_mcast_reset(VrnicCore *core)
{
    memset(core->obj.mcast, 0, sizeof(core->obj.mcast));
    core->obj.n_mcast = 0;
}

bool vrnic_gid_is_mcast(const uint8_t gid[16])
{
    if (gid[0] == 0xff) {
        return true;                            /* IPv6 ff00::/8 */
    }
    return vrnic_gid_is_ipv4(gid) && (gid[12] & 0xf0) == 0xe0;  /* 224/4 */
}

static VrnicMcastGrp *vrnic_mcast_find(const VrnicCore *core,
                                       const uint8_t gid[16])
{
    for (uint32_t i = 0; i < VRNIC_MCAST_MAX_GRP; i++) {
        const VrnicMcastGrp *g = &core->obj.mcast[i];

        if (g->nqps && !memcmp(g->gid, gid, sizeof(g->gid))) {
            return (VrnicMcastGrp *)g;
        }
    }
    return NULL;
}

/* Index of qpn in g's member list, -1 when it is not a member. */
static int vrnic_mcast_index(const VrnicMcastGrp *g, uint32_t qpn)
{
    for (uint32_t i = 0; i < g->nqps && i < VRNIC_MCAST_MAX_QP_ATTACH; i++) {
        if (g->qpns[i] == qpn) {
            return i;
        }
    }
    return -1;
}

static void vrnic_mcast_remove(VrnicCore *core, VrnicMcastGrp *g, int idx)
{
    uint32_t qpn = g->qpns[idx];

    memmove(&g->qpns[idx], &g->qpns[idx + 1],
            (g->nqps - idx - 1) * sizeof(g->qpns[0]));
    g->nqps--;
    g->qpns[g->nqps] = 0;
    trace_vrnic_mcast_detach(qpn, ldq_be_p(g->gid), ldq_be_p(g->gid + 8),
                             g->nqps);
    if (!g->nqps) {
        memset(g, 0, sizeof(*g));               /* the group is gone */
        core->obj.n_mcast--;
    }
}

/* Checks common to both commands; the command is the local copy. */
static uint8_t vrnic_mcast_check(VrnicCore *core,
                                 const struct vrnic_aq_mcast *c,
                                 uint32_t *qpn)
{
    VrnicQp *qp;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || !VRNIC_RSVD_ZERO(c->rsvd1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved bytes", 0);
    }
    *qpn = le32_to_cpu(c->qpn);
    qp = vrnic_qp_get(core, *qpn);
    if (!qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", *qpn);
    }
    /* GSI is UD on the wire, but QP1 only ever takes MADs. */
    if (qp->type != VRNIC_QP_TYPE_UD) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "QP type (UD only)",
                            qp->type);
    }
    if (!vrnic_gid_is_mcast(c->gid)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "gid not multicast",
                            ldq_be_p(c->gid));
    }
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_mcast_attach(VrnicCore *core, const struct vrnic_aq_mcast *c)
{
    VrnicMcastGrp *g;
    uint32_t qpn;
    uint8_t sts = vrnic_mcast_check(core, c, &qpn);

    if (sts != VRNIC_AQ_STS_OK) {
        return sts;
    }
    g = vrnic_mcast_find(core, c->gid);
    if (g) {
        if (vrnic_mcast_index(g, qpn) >= 0) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "already attached",
                                qpn);
        }
        if (g->nqps >= VRNIC_MCAST_MAX_QP_ATTACH) {
            return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "group full",
                                g->nqps);
        }
    } else {
        for (uint32_t i = 0; i < VRNIC_MCAST_MAX_GRP && !g; i++) {
            if (!core->obj.mcast[i].nqps) {
                g = &core->obj.mcast[i];
            }
        }
        if (!g) {
            return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "no free group",
                                core->obj.n_mcast);
        }
        memcpy(g->gid, c->gid, sizeof(g->gid));
        core->obj.n_mcast++;
    }
    g->qpns[g->nqps++] = qpn;
    trace_vrnic_mcast_attach(qpn, ldq_be_p(g->gid), ldq_be_p(g->gid + 8),
                             g->nqps);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_mcast_detach(VrnicCore *core, const struct vrnic_aq_mcast *c)
{
    VrnicMcastGrp *g;
    uint32_t qpn;
    uint8_t sts = vrnic_mcast_check(core, c, &qpn);
    int idx;

    if (sts != VRNIC_AQ_STS_OK) {
        return sts;
    }
    g = vrnic_mcast_find(core, c->gid);
    idx = g ? vrnic_mcast_index(g, qpn) : -1;
    if (idx < 0) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "not attached", qpn);
    }
    vrnic_mcast_remove(core, g, idx);
    return VRNIC_AQ_STS_OK;
}

void vrnic_mcast_qp_destroyed(VrnicCore *core, uint32_t qpn)
{
    for (uint32_t i = 0; i < VRNIC_MCAST_MAX_GRP && core->obj.n_mcast; i++) {
        VrnicMcastGrp *g = &core->obj.mcast[i];
        int idx = g->nqps ? vrnic_mcast_index(g, qpn) : -1;

        if (idx >= 0) {
            vrnic_mcast_remove(core, g, idx);
        }
    }
}

uint32_t vrnic_mcast_members(const VrnicCore *core, const uint8_t gid[16],
                             uint32_t *qpns)
{
    const VrnicMcastGrp *g;

    if (!core->obj.n_mcast || !vrnic_gid_is_mcast(gid)) {
        return 0;
    }
    g = vrnic_mcast_find(core, gid);
    if (!g) {
        return 0;
    }
    if (qpns) {
        memcpy(qpns, g->qpns, g->nqps * sizeof(g->qpns[0]));
    }
    return g->nqps;
}
