/*
 * vrnic object tables: allocation at init (sizes from the max-* properties),
 * the number allocator, lookups that bound every guest-supplied number, and
 * the reset that returns every object to nothing.
 *
 * Object lifetime and DMA: every command, doorbell-triggered job and CQE
 * write holds the device's lock (MMIO handlers and the core's bottom
 * halves, in the main loop or an IOThread: vrnic.c), never concurrently.
 * A destroy command therefore completes with no DMA to the object in
 * flight, and nothing touches the object's memory after its completion is
 * written: the driver may unpin at once.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

void vrnic_obj_init(VrnicCore *core)
{
    const VrnicConfig *cfg = &core->cfg;
    VrnicObjects *o = &core->obj;

    o->pds = g_new0(VrnicPd, cfg->max_pd + 1);
    o->mrs = g_new0(VrnicMr, cfg->max_mr + 1);
    o->cqs = g_new0(VrnicCq, cfg->max_cq + 1);
    o->qps = g_new0(VrnicQp, cfg->max_qp + 2);
    o->srqs = g_new0(VrnicSrq, cfg->max_srq + 1);
}

void vrnic_obj_reset(VrnicCore *core)
{
    const VrnicConfig *cfg = &core->cfg;
    VrnicObjects *o = &core->obj;

    if (!o->pds) {
        return;
    }
    memset(o->pds, 0, sizeof(*o->pds) * (cfg->max_pd + 1));
    for (uint32_t i = 0; i <= cfg->max_mr; i++) {
        vrnic_frmr_free(&o->mrs[i]);
    }
    memset(o->mrs, 0, sizeof(*o->mrs) * (cfg->max_mr + 1));
    memset(o->cqs, 0, sizeof(*o->cqs) * (cfg->max_cq + 1));
    for (uint32_t qpn = 0; qpn < cfg->max_qp + 2; qpn++) {
        vrnic_xport_free(&o->qps[qpn]);
    }
    memset(o->qps, 0, sizeof(*o->qps) * (cfg->max_qp + 2));
    memset(o->srqs, 0, sizeof(*o->srqs) * (cfg->max_srq + 1));
    memset(o->eqs, 0, sizeof(o->eqs));
    o->n_pds = o->n_mrs = o->n_cqs = o->n_qps = o->n_srqs = o->n_eqs = 0;
    o->n_odp_mrs = 0;
    o->next_pd = o->next_mr = o->next_cq = o->next_qp = o->next_srq = 0;
    o->qps_pending = o->cqs_notify = o->cqs_waiting = 0;
    vrnic_mcast_reset(core);
    vrnic_flow_reset(core);
    vrnic_rss_reset(core);
    vrnic_xrcd_reset(core);
}

void vrnic_obj_uninit(VrnicCore *core)
{
    VrnicObjects *o = &core->obj;

    g_free(o->pds);
    if (o->mrs) {
        for (uint32_t i = 0; i <= core->cfg.max_mr; i++) {
            vrnic_frmr_free(&o->mrs[i]);
        }
    }
    g_free(o->mrs);
    g_free(o->cqs);
    if (o->qps) {
        for (uint32_t qpn = 0; qpn < core->cfg.max_qp + 2; qpn++) {
            vrnic_xport_free(&o->qps[qpn]);
        }
    }
    g_free(o->qps);
    g_free(o->srqs);
    memset(o, 0, sizeof(*o));
}

/*
 * Next-fit search for a free entry in [first, last] of a table whose
 * entries start with `bool live`; 0 when all are taken.
 */
uint32_t vrnic_obj_alloc(uint32_t *cursor, uint32_t first, uint32_t last,
                         const void *table, size_t esize)
{
    uint32_t n = last - first + 1;
    uint32_t i = *cursor < first || *cursor > last ? first : *cursor;

    for (uint32_t tries = 0; tries < n; tries++) {
        const bool *live = (const void *)((const char *)table + i * esize);

        if (!*live) {
            *cursor = i == last ? first : i + 1;
            return i;
        }
        i = i == last ? first : i + 1;
    }
    return 0;
}

VrnicPd *vrnic_pd_get(VrnicCore *core, uint32_t pdn)
{
    if (pdn == 0 || pdn > core->cfg.max_pd || !core->obj.pds[pdn].live) {
        return NULL;
    }
    return &core->obj.pds[pdn];
}

VrnicCq *vrnic_cq_get(VrnicCore *core, uint32_t cqn)
{
    if (cqn == 0 || cqn > core->cfg.max_cq || !core->obj.cqs[cqn].live) {
        return NULL;
    }
    return &core->obj.cqs[cqn];
}

VrnicEq *vrnic_eq_get(VrnicCore *core, uint32_t eqn)
{
    if (eqn == 0 || eqn > core->cfg.num_comp_vectors ||
        !core->obj.eqs[eqn].live) {
        return NULL;
    }
    return &core->obj.eqs[eqn];
}

VrnicQp *vrnic_qp_get(VrnicCore *core, uint32_t qpn)
{
    if (qpn == 0 || qpn > core->cfg.max_qp + 1 || !core->obj.qps[qpn].live) {
        return NULL;
    }
    return &core->obj.qps[qpn];
}

VrnicSrq *vrnic_srq_get(VrnicCore *core, uint32_t srqn)
{
    if (srqn == 0 || srqn > core->cfg.max_srq || !core->obj.srqs[srqn].live) {
        return NULL;
    }
    return &core->obj.srqs[srqn];
}

uint32_t vrnic_max_log(uint32_t max)
{
    uint32_t l = 0;

    while (l < 31 && (2u << l) <= max) {
        l++;
    }
    return l;
}

/* Write a query answer of exactly resp_len bytes to the guest's buffer. */
uint8_t vrnic_answer(VrnicCore *core, uint64_t addr, uint32_t resp_len,
                     const void *resp, uint32_t len)
{
    if (resp_len != len) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "resp_len", resp_len);
    }
    if (!vrnic_dma_write(core, addr, resp, len)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "resp_addr", addr);
    }
    return VRNIC_AQ_STS_OK;
}
