/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake_bus.h"

static bool in_mem(uint64_t addr, uint64_t len)
{
    return addr >= FAKE_MEM_BASE && len <= FAKE_MEM_SIZE &&
           addr - FAKE_MEM_BASE <= FAKE_MEM_SIZE - len;
}

/* Host pointer for [addr, addr + len), or NULL when it is not all backed. */
static uint8_t *fake_map(FakeBus *f, uint64_t addr, uint64_t len)
{
    if (in_mem(addr, len)) {
        return f->mem + (addr - FAKE_MEM_BASE);
    }
    for (unsigned i = 0; i < f->nalias; i++) {
        if (addr >= f->alias[i].gpa && len <= f->alias[i].len &&
            addr - f->alias[i].gpa <= f->alias[i].len - len) {
            return f->mem + (f->alias[i].backing - FAKE_MEM_BASE) +
                   (addr - f->alias[i].gpa);
        }
    }
    return NULL;
}

/* True when [addr, addr + len) touches the MMIO window. */
static bool fake_is_mmio(FakeBus *f, uint64_t addr, uint64_t len)
{
    return f->mmio_len && len && addr < f->mmio_gpa + f->mmio_len &&
           addr + len > f->mmio_gpa;
}

/*
 * A DMA into the MMIO window: refused as the glue's RAM-only rule does, or
 * (mmio_reachable) done - a write then runs the device's handler. Reads
 * of it return zeros.
 */
static bool fake_mmio_dma(FakeBus *f, uint64_t addr, bool write)
{
    if (!f->mmio_reachable) {
        f->mmio_refused++;
        return false;
    }
    if (write) {
        f->mmio_writes++;
        if (f->mmio_write) {
            f->mmio_write(f, addr);
        }
    }
    return true;
}

static bool fake_dma_read(void *opaque, uint64_t addr, void *buf, uint64_t len)
{
    FakeBus *f = opaque;
    uint8_t *p;

    if (fake_is_mmio(f, addr, len)) {
        if (fake_mmio_dma(f, addr, false)) {
            memset(buf, 0, len);
            return true;
        }
        return false;
    }
    p = fake_map(f, addr, len);
    if (!p) {
        return false;
    }
    memcpy(buf, p, len);
    return true;
}

static bool fake_dma_write(void *opaque, uint64_t addr, const void *buf,
                           uint64_t len)
{
    FakeBus *f = opaque;
    uint8_t *p;

    if (fake_is_mmio(f, addr, len)) {
        return fake_mmio_dma(f, addr, true);
    }
    p = fake_map(f, addr, len);
    if (!p) {
        return false;
    }
    memcpy(p, buf, len);
    return true;
}

void fake_alias(FakeBus *f, uint64_t gpa, uint64_t len, uint64_t backing)
{
    if (f->nalias == FAKE_MAX_ALIASES || !in_mem(backing, len)) {
        abort();
    }
    f->alias[f->nalias].gpa = gpa;
    f->alias[f->nalias].len = len;
    f->alias[f->nalias].backing = backing;
    f->nalias++;
}

static void fake_irq(void *opaque, unsigned vector)
{
    FakeBus *f = opaque;

    /* The core must never raise a vector outside the MSI-X table. */
    if (vector >= vrnic_total_vectors(&f->core.cfg)) {
        abort();
    }
    f->irqs[vector]++;
}

static void fake_kick(void *opaque, VrnicWork work)
{
    FakeBus *f = opaque;

    f->pending[work] = true;
}

static bool fake_eth_send(void *opaque, const uint8_t *frame, size_t len)
{
    FakeBus *f = opaque;
    uint8_t copy[VRNIC_MAX_MTU + VRNIC_ETH_FRAME_OVERHEAD];

    if (f->nframes < FAKE_MAX_FRAMES) {
        memcpy(f->frames[f->nframes], frame, len);
        f->frame_len[f->nframes] = len;
    }
    f->nframes++;
    if (f->peer && !f->wire_hook) {
        fake_wire_put(f->peer, frame, len);
    } else if (f->peer && len <= sizeof(copy)) {
        memcpy(copy, frame, len);
        if (f->wire_hook(f, copy, &len, f->hook_arg)) {
            fake_wire_put(f->peer, copy, len);
        }
    }
    if (f->wire_stalled) {
        f->wire_queued++;   /* a busy backend: it keeps the frame for later */
        return false;
    }
    return true;
}

void fake_wire_drain(FakeBus *f)
{
    f->wire_stalled = false;
    while (f->wire_queued) {
        f->wire_queued--;
        vrnic_core_wire_sent(&f->core);
    }
}

void fake_wire_put(FakeBus *f, const uint8_t *frame, size_t len)
{
    FakeFrame *fr = malloc(sizeof(*fr) + len);

    if (!fr) {
        abort();
    }
    fr->next = NULL;
    fr->len = len;
    memcpy(fr->data, frame, len);
    if (!f->inbox) {
        f->inbox_tail = &f->inbox;
    }
    *f->inbox_tail = fr;
    f->inbox_tail = &fr->next;
}

void fake_link(FakeBus *a, FakeBus *b)
{
    a->peer = b;
    b->peer = a;
}

/* Deliver queued frames; false when none could be delivered. */
static bool fake_deliver(FakeBus *f)
{
    bool any = false;

    while (f->inbox) {
        FakeFrame *fr = f->inbox;

        vrnic_core_eth_receive(&f->core, fr->data, fr->len);
        f->inbox = fr->next;
        f->wire_frames++;
        free(fr);
        any = true;
    }
    return any;
}

static bool fake_run_work(FakeBus *f)
{
    bool any = false, again = true;

    while (again) {
        again = false;
        for (int w = 0; w < VRNIC_WORK__MAX; w++) {
            if (f->pending[w]) {
                uint64_t before = f->core.dma_ops;

                f->pending[w] = false;
                vrnic_core_run(&f->core, w);
                f->max_run_dma = MAX(f->max_run_dma,
                                     f->core.dma_ops - before);
                again = any = true;
            }
        }
    }
    return any;
}

static int64_t fake_clock_ns(void *opaque)
{
    return ((FakeBus *)opaque)->now_ns;
}

/* The wall clock runs with the device clock, from wall_base_ns. */
static int64_t fake_wallclock_ns(void *opaque)
{
    FakeBus *f = opaque;

    return f->wall_base_ns + f->now_ns;
}

static void fake_timer_mod(void *opaque, int64_t deadline_ns)
{
    ((FakeBus *)opaque)->timer_due = deadline_ns;
}

static void fake_dma_persist(void *opaque)
{
    ((FakeBus *)opaque)->persists++;
}

static const VrnicCoreOps fake_ops = {
    .dma_read = fake_dma_read,
    .dma_write = fake_dma_write,
    .dma_persist = fake_dma_persist,
    .irq = fake_irq,
    .kick = fake_kick,
    .eth_send = fake_eth_send,
    .clock_ns = fake_clock_ns,
    .wallclock_ns = fake_wallclock_ns,
    .timer_mod = fake_timer_mod,
};

VrnicConfig fake_default_config(void)
{
    VrnicConfig c = {
        .mac = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
        .num_comp_vectors = 4,
        .db_pages = 64,
        .gid_tbl_len = 16,
        .max_mtu = 9000,
        .speed_mbps = 25000,
        .cmd_timeout_ms = 5000,
        .max_qp = 1024, .max_qp_wr = 4096, .max_sge = 16,
        .max_cq = 1024, .max_cqe = 32768, .max_mr = 4096, .max_pd = 1024,
        .max_srq = 256, .max_srq_wr = 4096, .max_inline_data = 256,
        .max_qp_rd_atom = 16,
    };
    return c;
}

FakeBus *fake_new(const VrnicConfig *cfg)
{
    FakeBus *f = calloc(1, sizeof(*f));
    VrnicConfig def = fake_default_config();

    if (!f) {
        abort();
    }
    f->timer_due = INT64_MAX;
    vrnic_core_init(&f->core, cfg ? cfg : &def, &fake_ops, f);
    if (f->core.cfg.dm_size) {
        f->devmem = malloc(f->core.cfg.dm_size);
        if (!f->devmem) {
            abort();
        }
        /* Garbage, as RAM holds at power-on: set_devmem must zero it. */
        memset(f->devmem, 0xa5, f->core.cfg.dm_size);
        vrnic_core_set_devmem(&f->core, f->devmem);
    }
    vrnic_core_set_link(&f->core, true);
    fake_settle(f);     /* the netdev's initial link state, before any AEQ */
    return f;
}

void fake_free(FakeBus *f)
{
    while (f->inbox) {
        FakeFrame *fr = f->inbox;

        f->inbox = fr->next;
        free(fr);
    }
    if (f->peer) {
        f->peer->peer = NULL;
    }
    vrnic_core_uninit(&f->core);
    free(f->devmem);
    free(f);
}

void fake_settle(FakeBus *f)
{
    bool again = true;

    /* With a wire: both ends' work and both directions, until quiet. */
    while (again) {
        again = fake_run_work(f);
        again |= fake_deliver(f);
        if (f->peer) {
            again |= fake_run_work(f->peer);
            again |= fake_deliver(f->peer);
        }
    }
}

bool fake_fire_timer(FakeBus *f)
{
    FakeBus *p = f->peer;
    int64_t due = f->timer_due;

    if (p && p->timer_due < due) {
        due = p->timer_due;
    }
    if (due == INT64_MAX) {
        return false;
    }
    f->now_ns = MAX(f->now_ns, due);
    if (p) {
        p->now_ns = f->now_ns = MAX(f->now_ns, p->now_ns);
    }
    if (f->timer_due <= f->now_ns) {
        f->timer_due = INT64_MAX;
        vrnic_core_timer(&f->core);
    }
    if (p && p->timer_due <= p->now_ns) {
        p->timer_due = INT64_MAX;
        vrnic_core_timer(&p->core);
    }
    fake_settle(f);
    return true;
}

void *fake_ptr(FakeBus *f, uint64_t addr)
{
    if (!in_mem(addr, 1)) {
        abort();
    }
    return f->mem + (addr - FAKE_MEM_BASE);
}

void fake_wr(FakeBus *f, uint64_t reg, uint32_t val)
{
    vrnic_core_reg_write(&f->core, reg, val);
}

uint32_t fake_rd(FakeBus *f, uint64_t reg)
{
    return vrnic_core_reg_read(&f->core, reg);
}

void fake_wr64(FakeBus *f, uint64_t reg_lo, uint64_t val)
{
    fake_wr(f, reg_lo, (uint32_t)val);
    fake_wr(f, reg_lo + 4, val >> 32);
}

void fake_aq_enable(FakeBus *f, unsigned log_depth)
{
    fake_wr64(f, VRNIC_REG_AQ_SQ_BASE_LO, FAKE_AQ_SQ);
    fake_wr64(f, VRNIC_REG_AQ_CQ_BASE_LO, FAKE_AQ_CQ);
    fake_wr(f, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE | VRNIC_RING_CFG_IRQ_EN |
            log_depth);
    f->aq_pi = 0;
}

struct vrnic_aq_cqe *fake_aq_exec(FakeBus *f, void *cmd)
{
    uint32_t depth = 1u << f->core.aq.log_depth;
    uint32_t slot = f->aq_pi & (depth - 1);
    struct vrnic_aq_hdr *hdr = cmd;

    hdr->cmd_id = htole16(++f->cmd_id);
    memcpy(fake_ptr(f, FAKE_AQ_SQ + slot * VRNIC_AQ_CMD_SIZE), cmd,
           VRNIC_AQ_CMD_SIZE);
    f->aq_pi++;
    fake_wr(f, VRNIC_REG_AQ_PI, f->aq_pi);
    fake_settle(f);
    return fake_ptr(f, FAKE_AQ_CQ + slot * VRNIC_AQ_CQE_SIZE);
}

void fake_aeq_enable(FakeBus *f, unsigned log_depth)
{
    fake_wr64(f, VRNIC_REG_AEQ_BASE_LO, FAKE_AEQ);
    fake_wr(f, VRNIC_REG_AEQ_CFG, VRNIC_RING_CFG_ENABLE | log_depth);
}
