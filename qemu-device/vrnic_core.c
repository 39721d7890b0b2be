/*
 * vrnic device core: BAR0 register file, ring programming, reset, interrupts
 * and DMA error handling. Commands, events and the Ethernet function live in
 * their own files; this one only routes register accesses to them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

const char *vrnic_core_check_config(const VrnicConfig *cfg)
{
    if (cfg->num_comp_vectors < 4 ||
        cfg->num_comp_vectors > VRNIC_MAX_COMP_VECTORS) {
        return "num-comp-vectors must be 4..64";
    }
    if (cfg->db_pages < 2 || cfg->db_pages > 4096 ||
        (cfg->db_pages & (cfg->db_pages - 1))) {
        return "db-pages must be a power of two, 2..4096";
    }
    if (cfg->gid_tbl_len < 2 || cfg->gid_tbl_len > VRNIC_MAX_GID_TBL_LEN) {
        return "gid-table-size must be 2..256";
    }
    if (cfg->max_mtu < 1280 || cfg->max_mtu > VRNIC_MAX_MTU) {
        return "max-mtu must be 1280..9000";
    }
    if (cfg->cmd_timeout_ms == 0 || cfg->cmd_timeout_ms > 0xffff) {
        return "cmd-timeout-ms must be 1..65535";
    }
    if (!cfg->speed_mbps) {
        return "speed-mbps must not be 0";
    }
    if (!cfg->max_qp || !cfg->max_qp_wr || !cfg->max_sge || !cfg->max_cq ||
        !cfg->max_cqe || !cfg->max_mr || !cfg->max_pd || !cfg->max_srq ||
        !cfg->max_srq_wr || !cfg->max_qp_rd_atom) {
        return "max-* limits must not be 0";
    }
    /* Object numbers fit the 16-bit doorbell field (qpn up to max_qp + 1). */
    if (cfg->max_qp > VRNIC_MAX_OBJECTS || cfg->max_cq > VRNIC_MAX_OBJECTS ||
        cfg->max_mr > VRNIC_MAX_OBJECTS || cfg->max_pd > VRNIC_MAX_OBJECTS ||
        cfg->max_srq > VRNIC_MAX_OBJECTS) {
        return "max-qp/cq/mr/pd/srq must be at most 65534";
    }
    /* An EQ of 2^VRNIC_EQ_MAX_LOG_DEPTH entries must hold an EQE per CQ. */
    if (cfg->max_cq > (1u << VRNIC_EQ_MAX_LOG_DEPTH)) {
        return "max-cq must be at most 32768";
    }
    /*
     * Rings have 2^log_depth entries, so a queue-depth limit that is not a
     * power of two could not be enforced exactly: refuse it.
     */
    if (cfg->max_qp_wr < 2 || cfg->max_qp_wr > VRNIC_MAX_QUEUE_DEPTH ||
        cfg->max_srq_wr < 2 || cfg->max_srq_wr > VRNIC_MAX_QUEUE_DEPTH ||
        cfg->max_cqe < 2 || cfg->max_cqe > VRNIC_MAX_QUEUE_DEPTH ||
        (cfg->max_qp_wr & (cfg->max_qp_wr - 1)) ||
        (cfg->max_srq_wr & (cfg->max_srq_wr - 1)) ||
        (cfg->max_cqe & (cfg->max_cqe - 1))) {
        return "max-qp-wr, max-srq-wr and max-cqe must be powers of two, "
               "2..32768";
    }
    if (cfg->dm_size && (cfg->dm_size < VRNIC_DM_MIN_SIZE ||
                         cfg->dm_size > VRNIC_DM_MAX_SIZE ||
                         (cfg->dm_size & (cfg->dm_size - 1)))) {
        return "dm-size must be 0 or a power of two, 4096..67108864";
    }
    if (cfg->max_sge > 31 || cfg->max_inline_data > 448 ||
        cfg->max_qp_rd_atom > 255) {
        return "max-sge <= 31, max-inline-data <= 448, max-qp-rd-atom <= 255";
    }
    if (cfg->mac[0] & 1) {
        return "mac must be a unicast address";
    }
    return NULL;
}

void vrnic_core_init(VrnicCore *core, const VrnicConfig *cfg,
                     const VrnicCoreOps *ops, void *opaque)
{
    memset(core, 0, sizeof(*core));
    core->cfg = *cfg;
    core->ops = ops;
    core->opaque = opaque;
    core->aq.name = "aq";
    core->aeq.name = "aeq";
    core->eth_tx.name = "eth-tx";
    core->eth_rx.name = "eth-rx";
    core->timer_due = INT64_MAX;
    vrnic_obj_init(core);
    vrnic_eth_init(core);
    vrnic_loop_init(core);
    vrnic_fault_init(core);
    vrnic_core_reset(core);
}

/* Entering and leaving a core entry point that can DMA. */
void vrnic_core_enter(VrnicCore *core)
{
    core->running++;
}

static void vrnic_core_do_uninit(VrnicCore *core);
static void vrnic_core_do_reset(VrnicCore *core);

void vrnic_core_leave(VrnicCore *core)
{
    if (--core->running) {
        return;
    }
    if (core->gone) {
        vrnic_core_do_uninit(core);
    } else if (core->reset_pending) {
        vrnic_core_do_reset(core);
    }
}

void vrnic_core_uninit(VrnicCore *core)
{
    bool was_gone = core->gone;

    core->gone = true;          /* no op is called from here on */
    if (core->running) {
        trace_vrnic_defer("uninit", core->running);
        return;                 /* vrnic_core_leave frees */
    }
    if (!was_gone) {
        vrnic_core_do_uninit(core);
    }
}

static void vrnic_core_do_uninit(VrnicCore *core)
{
    vrnic_obj_uninit(core);
    vrnic_eth_uninit(core);
    vrnic_loop_uninit(core);
    vrnic_fault_uninit(core);
}

static void vrnic_ring_reset(VrnicRing *r)
{
    const char *name = r->name;

    memset(r, 0, sizeof(*r));
    r->name = name;
}

/*
 * The one reset path: reached from the DEV_CTRL register, PCI/bus reset and
 * device exit. Every ring goes idle and all driver-programmed state is
 * cleared; the link state belongs to the wire and is kept. While the core
 * runs it is only noted, and done when the outermost entry returns.
 */
void vrnic_core_reset(VrnicCore *core)
{
    if (core->gone) {
        return;
    }
    if (core->running) {
        trace_vrnic_defer("reset", core->running);
        core->reset_pending = true;
        return;
    }
    vrnic_core_do_reset(core);
}

static void vrnic_core_do_reset(VrnicCore *core)
{
    trace_vrnic_reset();
    core->reset_pending = false;
    core->fatal = false;
    core->timer_due = INT64_MAX;    /* a stale expiry finds nothing due */
    core->timer_fired = false;
    core->link_reported = core->link_up;  /* the driver reads DEV_STS */
    vrnic_ring_reset(&core->aq);
    core->aq_cq_base_reg = 0;
    core->aq_cq_base = 0;
    core->aq_cmd_held = false;
    memset(&core->cq_resize, 0, sizeof(core->cq_resize));
    vrnic_ring_reset(&core->aeq);
    core->aeq_armed = false;
    vrnic_ring_reset(&core->eth_tx);
    vrnic_ring_reset(&core->eth_rx);
    core->eth_tx_armed = false;
    core->eth_rx_armed = false;
    core->eth_ctrl = 0;
    vrnic_eth_reset(core);
    memcpy(core->mac, core->cfg.mac, sizeof(core->mac));
    core->mtu = MIN(1500, core->cfg.max_mtu);
    memset(core->gids, 0, sizeof(core->gids));
    core->addr_gen++;
    /* Every PD, MR, EQ, CQ, QP and SRQ ceases to exist. */
    vrnic_obj_reset(core);
    vrnic_tlb_flush(core);
    vrnic_loop_reset(core);
    vrnic_fault_reset(core);
    /* Nothing a previous driver left in device memory survives a reset. */
    if (core->devmem) {
        memset(core->devmem, 0, core->cfg.dm_size);
    }
}

void vrnic_core_set_devmem(VrnicCore *core, uint8_t *ram)
{
    core->devmem = ram;
    memset(core->devmem, 0, core->cfg.dm_size);
}

/*
 * Transmit backpressure. The netdev copies a frame it cannot send at once
 * onto its own queue and tells us when it left; every such copy is host
 * memory a guest could make grow without bound (a peer that stops
 * reading). So the device counts them, and at VRNIC_WIRE_MAX_QUEUED builds
 * no more frames: QPs that want to send stay pending and the Ethernet TX
 * ring keeps its descriptors, until vrnic_core_wire_sent restarts them.
 * Frames the fault injector releases from its own bounded slots still go.
 */
bool vrnic_wire_can_send(const VrnicCore *core)
{
    return core->wire_queued < VRNIC_WIRE_MAX_QUEUED;
}

void vrnic_wire_send(VrnicCore *core, const uint8_t *frame, size_t len)
{
    if (core->gone) {
        return;
    }
    if (!core->ops->eth_send(core->opaque, frame, len)) {
        core->wire_queued++;
        trace_vrnic_wire_queued(core->wire_queued);
    }
}

void vrnic_core_wire_sent(VrnicCore *core)
{
    bool was_full = !vrnic_wire_can_send(core);

    if (core->wire_queued) {
        core->wire_queued--;
    }
    if (!was_full) {
        return;
    }
    if (core->obj.qps_pending) {
        vrnic_core_kick(core, VRNIC_WORK_QUEUES);
    }
    if (core->eth_tx.live && core->eth_tx.ci != core->eth_tx.pi) {
        vrnic_core_kick(core, VRNIC_WORK_ETH_TX);
    }
}

void vrnic_core_set_faults(VrnicCore *core, const VrnicFaultCfg *cfg)
{
    vrnic_fault_configure(core, cfg);
}

void vrnic_core_timer_arm(VrnicCore *core, int64_t deadline)
{
    if (deadline < core->timer_due && !core->gone) {
        core->timer_due = deadline;
        core->ops->timer_mod(core->opaque, deadline);
    }
}

/*
 * The timer only marks the expiry; the work (resending, releasing held
 * frames, error completions) runs in the queue bottom half like all other
 * device DMA.
 */
void vrnic_core_timer(VrnicCore *core)
{
    core->timer_due = INT64_MAX;
    core->timer_fired = true;
    vrnic_core_kick(core, VRNIC_WORK_QUEUES);
}

void vrnic_core_irq(VrnicCore *core, unsigned vector)
{
    /* Vectors are device-chosen constants or validated EQ vectors. */
    if (vector >= vrnic_total_vectors(&core->cfg) || core->gone) {
        return;
    }
    trace_vrnic_irq(vector);
    core->ops->irq(core->opaque, vector);
}

/*
 * A DMA the device must do failed (the guest unmapped or never mapped the
 * memory a ring points at). Real hardware cannot continue either: stop every
 * engine and report DEV_STS.FATAL until the driver resets the device. The
 * objects stay as they are but do nothing: no CQE, EQE or flush is written
 * and doorbells are ignored while fatal. Only failures on kernel-owned rings
 * (AQ, AEQ, EQs, Ethernet) get here; a CQ or QP whose memory fails goes to
 * error on its own (CQ_ERR / QP_FATAL).
 */
void vrnic_core_fatal(VrnicCore *core, const char *what, uint64_t addr)
{
    VRNIC_GUEST_ERR(core, vrnic_err_fatal, "DMA error on %s at 0x%" PRIx64
                    ": device stopped until reset", what, addr);
    core->fatal = true;
    core->aq.live = false;
    core->aeq.live = false;
    core->eth_tx.live = false;
    core->eth_rx.live = false;
}

/*
 * DMA reaches RAM only (VrnicCoreOps.dma_read): a transfer the bus refuses
 * is counted and fails the one operation that asked for it. Every transfer
 * counts in dma_ops, the unit of the bottom halves' work budgets.
 */
static bool vrnic_dma_done(VrnicCore *core, bool ok, uint64_t addr,
                           uint64_t len, bool write)
{
    core->dma_ops++;
    if (!ok) {
        core->stats.port[VRNIC_PORT_STAT_DMA_ERRORS]++;
        trace_vrnic_dma_error(addr, len, write);
    }
    return ok;
}

bool vrnic_dma_read(VrnicCore *core, uint64_t addr, void *buf, uint64_t len)
{
    return vrnic_dma_done(core, !core->gone &&
                          core->ops->dma_read(core->opaque, addr, buf, len),
                          addr, len, false);
}

bool vrnic_dma_write(VrnicCore *core, uint64_t addr, const void *buf,
                     uint64_t len)
{
    return vrnic_dma_done(core, !core->gone &&
                          core->ops->dma_write(core->opaque, addr, buf, len),
                          addr, len, true);
}

void vrnic_dma_persist(VrnicCore *core)
{
    if (!core->gone) {
        core->ops->dma_persist(core->opaque);
    }
}

static uint32_t vrnic_max_log_depth(VrnicCore *core, const VrnicRing *r)
{
    if (r == &core->aq) {
        return VRNIC_AQ_MAX_LOG_DEPTH;
    }
    if (r == &core->aeq) {
        return VRNIC_AEQ_MAX_LOG_DEPTH;
    }
    return VRNIC_ETH_MAX_LOG_DEPTH;
}

static bool vrnic_base_ok(uint64_t base)
{
    return base != 0 && !(base & (VRNIC_RING_ALIGN - 1));
}

/* A write to one of the ring CFG registers. */
static void vrnic_ring_write_cfg(VrnicCore *core, VrnicRing *r, uint32_t val)
{
    uint32_t known = VRNIC_RING_CFG_ENABLE | VRNIC_RING_CFG_LOG_DEPTH_MASK |
                     (r == &core->aq ? VRNIC_RING_CFG_IRQ_EN : 0);
    uint32_t log_depth = VRNIC_FIELD_GET(VRNIC_RING_CFG_LOG_DEPTH_MASK, val);

    if (val & ~known) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: reserved CFG bits 0x%x",
                        r->name, val & ~known);
        return;
    }
    if (!(val & VRNIC_RING_CFG_ENABLE)) {
        if (r->live) {
            trace_vrnic_ring_disable(r->name);
        }
        if (r == &core->aq) {
            /* A command going on over several runs is abandoned. */
            core->aq_cmd_held = false;
            core->cq_resize.active = false;
        } else if (r == &core->eth_rx) {
            /* Frames waiting for the old ring's buffers go with it. */
            vrnic_eth_reset(core);
        }
        r->live = false;
        r->pi = r->ci = 0;
        r->cfg = val;
        return;
    }
    if (r->live) {
        /* Only IRQ_EN may change while a ring is live. */
        if ((val ^ r->cfg) & ~VRNIC_RING_CFG_IRQ_EN) {
            VRNIC_GUEST_ERR(core, vrnic_err_ring,
                            "%s: CFG 0x%x changes a live ring", r->name, val);
            return;
        }
        r->cfg = val;
        return;
    }
    if (core->fatal) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: enable while fatal 0x%x",
                        r->name, val);
        return;
    }
    if (log_depth < 1 || log_depth > vrnic_max_log_depth(core, r)) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: bad log_depth in CFG 0x%x",
                        r->name, val);
        return;
    }
    if (!vrnic_base_ok(r->base_reg) ||
        (r == &core->aq && !vrnic_base_ok(core->aq_cq_base_reg))) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: enable 0x%x with an "
                        "unaligned or zero base", r->name, val);
        return;
    }
    r->cfg = val;
    r->base = r->base_reg;
    r->log_depth = log_depth;
    r->pi = r->ci = 0;
    r->live = true;
    if (r == &core->aq) {
        core->aq_cq_base = core->aq_cq_base_reg;
    }
    trace_vrnic_ring_enable(r->name, r->base, vrnic_ring_depth(r));
}

/* Base registers may only change while the ring is not live. */
static void vrnic_ring_write_base(VrnicCore *core, VrnicRing *r,
                                  uint64_t *reg, bool hi, uint32_t val)
{
    if (r->live) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring,
                        "%s: base written while live 0x%x", r->name, val);
        return;
    }
    if (hi) {
        *reg = (*reg & 0xffffffffull) | ((uint64_t)val << 32);
    } else {
        *reg = (*reg & ~0xffffffffull) | val;
    }
}

/*
 * A producer-index doorbell. Indices are free-running u16; the guest may be
 * at most one ring ahead of what the device has consumed.
 */
static bool vrnic_ring_write_pi(VrnicCore *core, VrnicRing *r, uint32_t val)
{
    uint16_t pi = val & VRNIC_INDEX_MASK;

    if (!r->live || (val & ~VRNIC_INDEX_MASK)) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring, "%s: doorbell 0x%x on a ring "
                        "that is not live, or reserved bits", r->name, val);
        return false;
    }
    if ((uint16_t)(pi - r->ci) > vrnic_ring_depth(r)) {
        VRNIC_GUEST_ERR(core, vrnic_err_ring,
                        "%s: producer index 0x%x overruns the ring", r->name,
                        val);
        return false;
    }
    r->pi = pi;
    return true;
}

static uint32_t vrnic_ring_read_cfg(const VrnicRing *r)
{
    return r->live ? r->cfg : (r->cfg & ~VRNIC_RING_CFG_ENABLE);
}

uint32_t vrnic_core_reg_read(VrnicCore *core, uint64_t addr)
{
    const VrnicConfig *cfg = &core->cfg;
    uint32_t val = 0;

    switch (addr) {
    case VRNIC_REG_ID:
        val = VRNIC_ID_MAGIC;
        break;
    case VRNIC_REG_VERSION:
        val = VRNIC_FIELD_PREP(VRNIC_VERSION_MAJOR_MASK, VRNIC_VERSION_MAJOR) |
              VRNIC_FIELD_PREP(VRNIC_VERSION_MINOR_MASK, VRNIC_VERSION_MINOR);
        break;
    case VRNIC_REG_CAP_VEC:
        val = VRNIC_FIELD_PREP(VRNIC_CAP_VEC_TOTAL_MASK,
                               vrnic_total_vectors(cfg)) |
              VRNIC_FIELD_PREP(VRNIC_CAP_VEC_NUM_COMP_MASK,
                               cfg->num_comp_vectors);
        break;
    case VRNIC_REG_CAP_DB:
        val = VRNIC_FIELD_PREP(VRNIC_CAP_DB_PAGE_SHIFT_MASK, 12) |
              VRNIC_FIELD_PREP(VRNIC_CAP_DB_NUM_PAGES_MASK, cfg->db_pages);
        break;
    case VRNIC_REG_CAP_AQ:
        val = VRNIC_FIELD_PREP(VRNIC_CAP_AQ_TIMEOUT_MS_MASK,
                               cfg->cmd_timeout_ms) |
              VRNIC_FIELD_PREP(VRNIC_CAP_AQ_AEQ_LOG_DEPTH_MASK,
                               VRNIC_AEQ_MAX_LOG_DEPTH) |
              VRNIC_FIELD_PREP(VRNIC_CAP_AQ_LOG_DEPTH_MASK,
                               VRNIC_AQ_MAX_LOG_DEPTH);
        break;
    case VRNIC_REG_CAP_ETH:
        val = VRNIC_FIELD_PREP(VRNIC_CAP_ETH_MAX_MTU_MASK, cfg->max_mtu) |
              VRNIC_FIELD_PREP(VRNIC_CAP_ETH_LOG_DEPTH_MASK,
                               VRNIC_ETH_MAX_LOG_DEPTH);
        break;
    case VRNIC_REG_MAC_LO:
        val = cfg->mac[0] | cfg->mac[1] << 8 | cfg->mac[2] << 16 |
              (uint32_t)cfg->mac[3] << 24;
        break;
    case VRNIC_REG_MAC_HI:
        val = cfg->mac[4] | cfg->mac[5] << 8;
        break;
    case VRNIC_REG_DEV_STS:
        val = VRNIC_DEV_STS_READY |
              (core->fatal ? VRNIC_DEV_STS_FATAL : 0) |
              (core->link_up ? VRNIC_DEV_STS_LINK_UP : 0);
        break;
    case VRNIC_REG_AQ_SQ_BASE_LO:
        val = (uint32_t)core->aq.base_reg;
        break;
    case VRNIC_REG_AQ_SQ_BASE_HI:
        val = core->aq.base_reg >> 32;
        break;
    case VRNIC_REG_AQ_CQ_BASE_LO:
        val = (uint32_t)core->aq_cq_base_reg;
        break;
    case VRNIC_REG_AQ_CQ_BASE_HI:
        val = core->aq_cq_base_reg >> 32;
        break;
    case VRNIC_REG_AQ_CFG:
        val = vrnic_ring_read_cfg(&core->aq);
        break;
    case VRNIC_REG_AEQ_BASE_LO:
        val = (uint32_t)core->aeq.base_reg;
        break;
    case VRNIC_REG_AEQ_BASE_HI:
        val = core->aeq.base_reg >> 32;
        break;
    case VRNIC_REG_AEQ_CFG:
        val = vrnic_ring_read_cfg(&core->aeq);
        break;
    case VRNIC_REG_ETH_TX_BASE_LO:
        val = (uint32_t)core->eth_tx.base_reg;
        break;
    case VRNIC_REG_ETH_TX_BASE_HI:
        val = core->eth_tx.base_reg >> 32;
        break;
    case VRNIC_REG_ETH_TX_CFG:
        val = vrnic_ring_read_cfg(&core->eth_tx);
        break;
    case VRNIC_REG_ETH_RX_BASE_LO:
        val = (uint32_t)core->eth_rx.base_reg;
        break;
    case VRNIC_REG_ETH_RX_BASE_HI:
        val = core->eth_rx.base_reg >> 32;
        break;
    case VRNIC_REG_ETH_RX_CFG:
        val = vrnic_ring_read_cfg(&core->eth_rx);
        break;
    case VRNIC_REG_ETH_CTRL:
        val = core->eth_ctrl;
        break;
    default:
        /* Write-only doorbells, DEV_CTRL and holes read as zero. */
        break;
    }
    trace_vrnic_reg_read(addr, val);
    return val;
}

void vrnic_core_reg_write(VrnicCore *core, uint64_t addr, uint32_t val)
{
    trace_vrnic_reg_write(addr, val);

    switch (addr) {
    case VRNIC_REG_DEV_CTRL:
        if (val & ~VRNIC_DEV_CTRL_RESET) {
            VRNIC_GUEST_ERR(core, vrnic_err_reg, "reserved bits 0x%" PRIx64
                            " 0x%x", addr, val);
            return;
        }
        if (val & VRNIC_DEV_CTRL_RESET) {
            vrnic_core_reset(core);
        }
        return;
    case VRNIC_REG_AQ_SQ_BASE_LO:
    case VRNIC_REG_AQ_SQ_BASE_HI:
        vrnic_ring_write_base(core, &core->aq, &core->aq.base_reg,
                              addr == VRNIC_REG_AQ_SQ_BASE_HI, val);
        return;
    case VRNIC_REG_AQ_CQ_BASE_LO:
    case VRNIC_REG_AQ_CQ_BASE_HI:
        vrnic_ring_write_base(core, &core->aq, &core->aq_cq_base_reg,
                              addr == VRNIC_REG_AQ_CQ_BASE_HI, val);
        return;
    case VRNIC_REG_AQ_CFG:
        vrnic_ring_write_cfg(core, &core->aq, val);
        return;
    case VRNIC_REG_AQ_PI:
        if (vrnic_ring_write_pi(core, &core->aq, val)) {
            vrnic_core_kick(core, VRNIC_WORK_ADMIN);
        }
        return;
    case VRNIC_REG_AEQ_BASE_LO:
    case VRNIC_REG_AEQ_BASE_HI:
        vrnic_ring_write_base(core, &core->aeq, &core->aeq.base_reg,
                              addr == VRNIC_REG_AEQ_BASE_HI, val);
        return;
    case VRNIC_REG_AEQ_CFG:
        vrnic_ring_write_cfg(core, &core->aeq, val);
        core->aeq_armed &= core->aeq.live;
        return;
    case VRNIC_REG_AEQ_CI:
        vrnic_aeq_write_ci(core, val);
        return;
    case VRNIC_REG_ETH_TX_BASE_LO:
    case VRNIC_REG_ETH_TX_BASE_HI:
        vrnic_ring_write_base(core, &core->eth_tx, &core->eth_tx.base_reg,
                              addr == VRNIC_REG_ETH_TX_BASE_HI, val);
        return;
    case VRNIC_REG_ETH_TX_CFG:
        vrnic_ring_write_cfg(core, &core->eth_tx, val);
        core->eth_tx_armed &= core->eth_tx.live;
        return;
    case VRNIC_REG_ETH_TX_PI:
        if (vrnic_ring_write_pi(core, &core->eth_tx, val)) {
            vrnic_core_kick(core, VRNIC_WORK_ETH_TX);
        }
        return;
    case VRNIC_REG_ETH_RX_BASE_LO:
    case VRNIC_REG_ETH_RX_BASE_HI:
        vrnic_ring_write_base(core, &core->eth_rx, &core->eth_rx.base_reg,
                              addr == VRNIC_REG_ETH_RX_BASE_HI, val);
        return;
    case VRNIC_REG_ETH_RX_CFG:
        vrnic_ring_write_cfg(core, &core->eth_rx, val);
        core->eth_rx_armed &= core->eth_rx.live;
        return;
    case VRNIC_REG_ETH_RX_PI:
        if (vrnic_ring_write_pi(core, &core->eth_rx, val)) {
            vrnic_core_kick(core, VRNIC_WORK_ETH_RX);
        }
        return;
    case VRNIC_REG_ETH_TX_ARM:
        vrnic_eth_write_arm(core, &core->eth_tx, &core->eth_tx_armed, val);
        return;
    case VRNIC_REG_ETH_RX_ARM:
        vrnic_eth_write_arm(core, &core->eth_rx, &core->eth_rx_armed, val);
        return;
    case VRNIC_REG_ETH_CTRL:
        if (val & ~VRNIC_ETH_CTRL_PROMISC) {
            VRNIC_GUEST_ERR(core, vrnic_err_reg, "reserved bits 0x%" PRIx64
                            " 0x%x", addr, val);
            return;
        }
        core->eth_ctrl = val;
        return;
    default:
        if (addr >= VRNIC_REG_EQ_CI(1) &&
            addr <= VRNIC_REG_EQ_CI(core->cfg.num_comp_vectors) &&
            !(addr & 3)) {
            vrnic_eq_write_ci(core, (addr - VRNIC_REG_EQ_CI_BASE) / 4, val);
            return;
        }
        VRNIC_GUEST_ERR(core, vrnic_err_reg, "write to read-only or unknown "
                        "register 0x%" PRIx64 " 0x%x", addr, val);
        return;
    }
}

/*
 * BAR2: doorbell pages, one per context (page 0: the kernel). A doorbell is
 * only recorded here; any DMA it causes runs in the queue bottom half.
 */
void vrnic_core_db_write(VrnicCore *core, uint64_t addr, uint32_t val)
{
    uint32_t page = addr / VRNIC_DB_PAGE_SIZE;
    uint32_t off = addr % VRNIC_DB_PAGE_SIZE;
    uint32_t qn = VRNIC_FIELD_GET(VRNIC_DB_QN_MASK, val);
    uint16_t idx = VRNIC_FIELD_GET(VRNIC_DB_INDEX_MASK, val);

    trace_vrnic_db_write(page, off, val);
    if (page >= core->cfg.db_pages || core->fatal) {
        VRNIC_GUEST_ERR(core, vrnic_err_db, "doorbell 0x%" PRIx64 " 0x%x "
                        "outside BAR2 or while fatal", addr, val);
        return;
    }
    switch (off) {
    case VRNIC_DB_SQ:
    case VRNIC_DB_RQ:
    case VRNIC_DB_SRQ:
        vrnic_wq_db(core, page, off, qn, idx);
        return;
    case VRNIC_DB_CQ_ARM_NEXT:
    case VRNIC_DB_CQ_ARM_SOLICITED:
        vrnic_cq_arm_db(core, page, off == VRNIC_DB_CQ_ARM_SOLICITED, qn, idx);
        return;
    default:
        VRNIC_GUEST_ERR(core, vrnic_err_db, "no doorbell at 0x%" PRIx64
                        " 0x%x", addr, val);
        return;
    }
}

void vrnic_core_run(VrnicCore *core, VrnicWork work)
{
    if (core->gone) {
        return;
    }
    vrnic_core_enter(core);
    switch (work) {
    case VRNIC_WORK_ADMIN:
        /*
         * Doorbells rung before the admin doorbell are served first, as if
         * the device took MMIO writes in order: a RESIZE_CQ or MODIFY_QP
         * then sees the completions of the sends posted before it (rdma-core's
         * test_resize_cq shrinks a CQ right after posting sends and expects
         * the shrink to count them).
         */
        vrnic_core_run(core, VRNIC_WORK_QUEUES);
        if (!core->reset_pending && !core->gone) {
            vrnic_admin_process(core);
        }
        break;
    case VRNIC_WORK_ETH_TX:
        vrnic_eth_tx_process(core);
        break;
    case VRNIC_WORK_ETH_RX:
        vrnic_eth_rx_process(core);
        break;
    case VRNIC_WORK_LINK:
        if (core->link_reported != core->link_up) {
            core->link_reported = core->link_up;
            vrnic_aeq_post(core, core->link_up ? VRNIC_AEQ_EV_PORT_ACTIVE :
                                                 VRNIC_AEQ_EV_PORT_DOWN,
                           VRNIC_PORT_NUM);
        }
        break;
    case VRNIC_WORK_QUEUES:
        if (core->timer_fired) {
            int64_t now = core->ops->clock_ns(core->opaque);

            core->timer_fired = false;
            vrnic_fault_timer(core, now);
            vrnic_xport_timer(core, now);
            vrnic_rx_held_age(core, now);
            vrnic_cq_timer(core, now);
        }
        vrnic_loop_process(core);
        vrnic_qp_process(core);
        vrnic_cq_process(core);
        break;
    case VRNIC_WORK__MAX:
        break;
    }
    vrnic_core_leave(core);
}

/*
 * Called from the netdev layer. DEV_STS follows at once; the AEQ event is
 * written from a bottom half, like every other device DMA, so it runs under
 * the device's re-entrancy guard. A flap shorter than that is not reported.
 */
void vrnic_core_set_link(VrnicCore *core, bool up)
{
    if (core->link_up == up) {
        return;
    }
    core->link_up = up;
    trace_vrnic_link(up);
    vrnic_core_kick(core, VRNIC_WORK_LINK);
}
