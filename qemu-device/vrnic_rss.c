/*
 * vrnic receive-side scaling (VRNIC_DEVICE_CAP_RSS; the rules are in the
 * uapi header, "Receive-side scaling"): the RSS contexts, their CREATE_RSS
 * and DESTROY_RSS commands, and the choice of the receive queue a frame a
 * flow rule steered to a context goes to.
 *
 * The contexts are a fixed array in the core (VRNIC_RSS_MAX): the guest
 * cannot make it grow. A context names its receive queues by QPN and
 * holds a reference on each (VrnicQp.rss_refs), so no QP it names can be
 * destroyed, and its number reused by another context's QP, while it
 * lives. The hash is QEMU's Toeplitz (net/checksum.h), the function
 * Microsoft's RSS specification defines and NICs implement.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "net/checksum.h"
#include "net/eth.h"
#include "vrnic_core_int.h"

/* Longest hash input: two IPv6 addresses and two ports. */
#define VRNIC_RSS_INPUT_MAX (2 * 16 + 2 * 2)
/* net_toeplitz_add reads 4 key bytes past the input's length. */
static_assert(VRNIC_RSS_INPUT_MAX + 4 <= VRNIC_RSS_KEY_LEN, "RSS key length");

void vrnic_rss_reset(VrnicCore *core)
{
    memset(core->obj.rss, 0, sizeof(core->obj.rss));
}

/* The context numbered rssn, or NULL. */
static VrnicRss *vrnic_rss_get(VrnicCore *core, uint32_t rssn)
{
    uint32_t i = rssn - VRNIC_RSS_NUM_BASE;

    if (rssn < VRNIC_RSS_NUM_BASE || i >= VRNIC_RSS_MAX ||
        !core->obj.rss[i].live) {
        return NULL;
    }
    return &core->obj.rss[i];
}

bool vrnic_rss_exists(VrnicCore *core, uint32_t rssn)
{
    return vrnic_rss_get(core, rssn);
}

/* The checks of one indirection table entry. */
static uint8_t vrnic_rss_check_qp(VrnicCore *core, uint32_t qpn,
                                  uint32_t uctx)
{
    VrnicQp *qp = vrnic_qp_get(core, qpn);

    if (!qp) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "qpn", qpn);
    }
    if (qp->type != VRNIC_QP_TYPE_RAW_PACKET || qp->sq.log_depth ||
        !qp->rq.log_depth) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "not a receive-only raw packet QP", qpn);
    }
    if (qp->uctx != uctx) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "QP of another uctx",
                            qpn);
    }
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_rss_create(VrnicCore *core, const struct vrnic_aq_create_rss *c,
                         uint64_t *result)
{
    uint16_t fields = le16_to_cpu(c->fields);
    uint32_t uctx = le32_to_cpu(c->uctx);
    uint32_t n = 1u << MIN(c->log_size, VRNIC_RSS_LOG_TABLE_MAX);
    VrnicRss *r = NULL;
    uint8_t sts;

    if (c->rsvd0 || !VRNIC_RSVD_ZERO(c->rsvd1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (c->log_size > VRNIC_RSS_LOG_TABLE_MAX) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "log_size", c->log_size);
    }
    if (!fields || (fields & ~VRNIC_RSS_F_ALL)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "fields", fields);
    }
    if (uctx >= core->cfg.db_pages) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "uctx", uctx);
    }
    for (uint32_t i = 0; i < VRNIC_RSS_TABLE_MAX; i++) {
        uint32_t qpn = le32_to_cpu(c->qpn[i]);

        if (i >= n) {
            if (qpn) {
                return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                                    "qpn past the table", i);
            }
            continue;
        }
        sts = vrnic_rss_check_qp(core, qpn, uctx);
        if (sts) {
            return sts;
        }
    }
    for (uint32_t i = 0; i < VRNIC_RSS_MAX && !r; i++) {
        if (!core->obj.rss[i].live) {
            r = &core->obj.rss[i];
        }
    }
    if (!r) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "RSS contexts",
                            VRNIC_RSS_MAX);
    }
    *r = (VrnicRss) {
        .live = true,
        .log_size = c->log_size,
        .fields = fields,
        .uctx = uctx,
    };
    memcpy(r->key, c->key, sizeof(r->key));
    for (uint32_t i = 0; i < n; i++) {
        r->qpn[i] = le32_to_cpu(c->qpn[i]);
        vrnic_qp_get(core, r->qpn[i])->rss_refs++;
    }
    *result = VRNIC_RSS_NUM_BASE + (r - core->obj.rss);
    trace_vrnic_rss_create(VRNIC_RSS_NUM_BASE + (r - core->obj.rss), n, fields,
                           uctx);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_rss_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t rssn = le32_to_cpu(c->handle);
    VrnicRss *r = vrnic_rss_get(core, rssn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!r) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "rss number", rssn);
    }
    for (uint32_t i = 0; i < 1u << r->log_size; i++) {
        vrnic_qp_get(core, r->qpn[i])->rss_refs--;
    }
    vrnic_flow_qp_destroyed(core, rssn);
    memset(r, 0, sizeof(*r));
    trace_vrnic_rss_destroy(rssn);
    return VRNIC_AQ_STS_OK;
}

/*
 * The hash input: the selected fields the frame has, in the order of the
 * RSS specification (addresses, then ports).
 */
static size_t vrnic_rss_input(uint16_t fields, const VrnicFrameKey *f,
                              uint8_t *in)
{
    const struct vrnic_flow_key *k = &f->key;
    bool tcp = k->ip_proto == IP_PROTO_TCP;
    size_t n = 0;

    if (f->l3 == 4) {
        if (fields & VRNIC_RSS_F_SRC_IPV4) {
            memcpy(in + n, k->src_ip + 12, 4);
            n += 4;
        }
        if (fields & VRNIC_RSS_F_DST_IPV4) {
            memcpy(in + n, k->dst_ip + 12, 4);
            n += 4;
        }
    } else if (f->l3 == 6) {
        if (fields & VRNIC_RSS_F_SRC_IPV6) {
            memcpy(in + n, k->src_ip, 16);
            n += 16;
        }
        if (fields & VRNIC_RSS_F_DST_IPV6) {
            memcpy(in + n, k->dst_ip, 16);
            n += 16;
        }
    }
    /* All fragments of a datagram hash alike: on the addresses only. */
    if (!f->ports || f->frag) {
        return n;
    }
    if (fields & (tcp ? VRNIC_RSS_F_SRC_PORT_TCP : VRNIC_RSS_F_SRC_PORT_UDP)) {
        memcpy(in + n, &k->src_port, 2);
        n += 2;
    }
    if (fields & (tcp ? VRNIC_RSS_F_DST_PORT_TCP : VRNIC_RSS_F_DST_PORT_UDP)) {
        memcpy(in + n, &k->dst_port, 2);
        n += 2;
    }
    return n;
}

uint32_t vrnic_rss_hash(const uint8_t key[VRNIC_RSS_KEY_LEN], uint16_t fields,
                        const VrnicFrameKey *f)
{
    uint8_t in[VRNIC_RSS_INPUT_MAX];
    uint8_t kb[VRNIC_RSS_KEY_LEN];
    net_toeplitz_key tk;
    uint32_t hash = 0;
    size_t n = vrnic_rss_input(fields, f, in);

    memcpy(kb, key, sizeof(kb));
    net_toeplitz_key_init(&tk, kb);
    net_toeplitz_add(&hash, in, n, &tk);
    return hash;
}

uint32_t vrnic_rss_qpn(VrnicCore *core, uint32_t rssn, const VrnicFrameKey *f)
{
    VrnicRss *r = vrnic_rss_get(core, rssn);
    uint32_t hash;

    if (!r) {
        return 0;
    }
    hash = vrnic_rss_hash(r->key, r->fields, f);
    trace_vrnic_rss_pick(rssn, hash, r->qpn[hash & ((1u << r->log_size) - 1)]);
    return r->qpn[hash & ((1u << r->log_size) - 1)];
}
