/*
 * vrnic completion event queues (EQs) and completion queues (CQs).
 *
 * EQ: CREATE_EQ binds a contiguous kernel ring to one completion vector
 * (VRNIC_VEC_COMP_FIRST .. total - 1) and gets eqn = vector - 1, so eqn runs
 * 1 .. num_comp_vectors and a vector carries at most one EQ (a second
 * CREATE_EQ on it: BAD_STATE). EQ_CI(eqn) in BAR0 acknowledges and arms it
 * exactly like AEQ_CI: with arm set the EQ's vector fires on the next EQE,
 * or at once when EQEs past ci are already written. A full EQ loses the
 * event (counted, guest error). A DMA error on an EQ ring - kernel memory
 * the driver must keep mapped - stops the device (DEV_STS.FATAL), as for
 * the AEQ.
 *
 * CQ: 2^log_depth CQEs (32 bytes; 64 with VRNIC_CQ_FLAG_TIMESTAMP, the
 * device clock when the CQE was written in the second half) then the
 * 64-byte doorbell record, all in translated memory (VrnicMem). Before
 * each CQE the device reads dbrec.ci;
 * a full CQ (pi - ci == depth) - or a ci that is ahead of the producer -
 * overruns: the CQ stops for good (no CQE is written past the consumer) and
 * VRNIC_AEQ_EV_CQ_ERR is posted once. A DMA error on the ring or the
 * doorbell record does the same. CQEs are written body first, the info word
 * (phase) last; phase is 1 on the first pass and flips on every wrap.
 *
 * Arming (BAR2 doorbell VRNIC_DB_CQ_ARM_NEXT/SOLICITED, index = the
 * consumer's ci): if the device has written CQEs past ci and one of them
 * came after the last event (quiet: no event told of it), the event is due
 * at once (missed-event rule) and one EQE is written from the queue bottom
 * half - the MMIO handler itself never does DMA. CQEs the last event
 * already announced do not fire again: a consumer that re-arms before it
 * polls (perftest -e) gets no stale event. Otherwise the CQ stays
 * armed and the next CQE (NEXT), or the next solicited or error CQE
 * (SOLICITED), writes one EQE naming the CQ and disarms. One event per arm;
 * an ARM_NEXT upgrades a pending ARM_SOLICITED.
 *
 * MODIFY_CQ moderates ARM_NEXT events: the event is due after mod_count
 * CQEs since the arm or mod_period_us after the first of them. The
 * deadline is the core's timer like the transport's; vrnic_cq_timer posts
 * what is due. Error CQEs, solicited arms and the missed-event rule are
 * never delayed: they are what a consumer waits on.
 *
 * RESIZE_CQ copies the CQEs between dbrec.ci and the producer into the new
 * ring from index 0 (phase 1), writes 0 to the new dbrec.ci and continues
 * there; it keeps the CQ's EQ, uctx and arm state (the command's eqn and
 * uctx fields are ignored). A stopped CQ cannot be resized (BAD_STATE).
 * The copy is done VRNIC_CQ_RESIZE_STEP CQEs per admin run, so a big CQ
 * cannot stall the device; the command completes when it is all done.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

/* CQEs RESIZE_CQ copies per admin run (a 32768-entry CQ takes 32 runs). */
#define VRNIC_CQ_RESIZE_STEP    1024

/* ---- EQs ------------------------------------------------------------- */

uint8_t vrnic_eq_create(VrnicCore *core, const struct vrnic_aq_create_eq *c,
                        uint64_t *result)
{
    uint64_t base = le64_to_cpu(c->ring_addr);
    uint32_t log_depth = le32_to_cpu(c->log_depth);
    uint32_t vector = le32_to_cpu(c->vector);
    uint32_t eqn;
    VrnicEq *eq;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (log_depth < 1 || log_depth > VRNIC_EQ_MAX_LOG_DEPTH) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "log_depth", log_depth);
    }
    if (!base || (base & (VRNIC_RING_ALIGN - 1)) ||
        base + ((uint64_t)VRNIC_EQE_SIZE << log_depth) < base) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "ring_addr", base);
    }
    if (vector < VRNIC_VEC_COMP_FIRST ||
        vector >= vrnic_total_vectors(&core->cfg)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "vector", vector);
    }
    eqn = vector - VRNIC_VEC_COMP_FIRST + 1;
    eq = &core->obj.eqs[eqn];
    if (eq->live) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "vector has an EQ", vector);
    }
    *eq = (VrnicEq) {
        .live = true,
        .base = base,
        .log_depth = log_depth,
        .vector = vector,
    };
    core->obj.n_eqs++;
    *result = eqn;
    trace_vrnic_eq_create(eqn, base, 1u << log_depth, vector);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_eq_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t eqn = le32_to_cpu(c->handle);
    VrnicEq *eq = vrnic_eq_get(core, eqn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!eq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "eqn", eqn);
    }
    if (eq->refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "eq has CQs", eq->refs);
    }
    memset(eq, 0, sizeof(*eq));
    core->obj.n_eqs--;
    trace_vrnic_eq_destroy(eqn);
    return VRNIC_AQ_STS_OK;
}

static void vrnic_eq_post(VrnicCore *core, uint32_t eqn, uint32_t cqn)
{
    VrnicEq *eq = vrnic_eq_get(core, eqn);
    uint32_t depth;
    struct vrnic_eqe e = { .cqn = cpu_to_le32(cqn) };
    uint32_t owner;
    uint64_t slot;

    if (!eq || core->fatal) {
        return;
    }
    depth = 1u << eq->log_depth;
    if ((uint16_t)(eq->pi - eq->ci) >= depth) {
        core->stats.eq_overflows++;
        VRNIC_GUEST_ERR(core, vrnic_err_eq_overflow, "eqn %u: event for cqn "
                        "%u lost", eqn, cqn);
        return;
    }
    slot = eq->base +
           (uint64_t)vrnic_idx_slot(eq->pi, eq->log_depth) * VRNIC_EQE_SIZE;
    owner = cpu_to_le32(vrnic_idx_phase(eq->pi, eq->log_depth) ?
                        VRNIC_OWNER_PHASE : 0);
    trace_vrnic_eq_post(eqn, cqn, eq->pi);
    if (!vrnic_dma_write(core, slot, &e, offsetof(struct vrnic_eqe, owner)) ||
        !vrnic_dma_write(core, slot + offsetof(struct vrnic_eqe, owner),
                         &owner, sizeof(owner))) {
        vrnic_core_fatal(core, "EQ", slot);
        return;
    }
    eq->pi++;
    if (eq->armed) {
        eq->armed = false;
        vrnic_core_irq(core, eq->vector);
    }
}

/* VRNIC_REG_EQ_CI(eqn): consumer index, optionally re-arming (as AEQ_CI). */
void vrnic_eq_write_ci(VrnicCore *core, uint32_t eqn, uint32_t val)
{
    VrnicEq *eq = vrnic_eq_get(core, eqn);
    uint16_t ci = val & VRNIC_INDEX_MASK;

    if (!eq || core->fatal || (val & ~(VRNIC_INDEX_MASK | VRNIC_AEQ_CI_ARM))) {
        VRNIC_GUEST_ERR(core, vrnic_err_eq_ci, "eqn %u: CI write 0x%x on no "
                        "EQ, a stopped device, or reserved bits", eqn, val);
        return;
    }
    if ((uint16_t)(eq->pi - ci) > (1u << eq->log_depth)) {
        VRNIC_GUEST_ERR(core, vrnic_err_eq_ci, "eqn %u: consumer index 0x%x "
                        "past producer", eqn, val);
        return;
    }
    eq->ci = ci;
    trace_vrnic_eq_ci(eqn, ci, !!(val & VRNIC_AEQ_CI_ARM));
    if (!(val & VRNIC_AEQ_CI_ARM)) {
        return;
    }
    if (eq->pi != ci) {
        vrnic_core_irq(core, eq->vector);
    } else {
        eq->armed = true;
    }
}

/* ---- CQs ------------------------------------------------------------- */

static uint32_t vrnic_cq_max_log(const VrnicCore *core)
{
    return MIN(vrnic_max_log(core->cfg.max_cqe), VRNIC_RING_MAX_LOG_DEPTH);
}

static uint64_t vrnic_cq_dbrec_off(uint32_t flags, uint32_t log_depth)
{
    return vrnic_cq_ring_len(flags, log_depth) - VRNIC_DBREC_SIZE;
}

/* log_depth and mem of CREATE_CQ/RESIZE_CQ, for a CQ of these flags. */
static uint8_t vrnic_cq_parse_ring(VrnicCore *core,
                                   const struct vrnic_aq_create_cq *c,
                                   uint32_t flags, uint32_t *log_depth,
                                   VrnicMem *mem)
{
    uint8_t sts;

    *log_depth = le32_to_cpu(c->log_depth);
    if (*log_depth < 1 || *log_depth > vrnic_cq_max_log(core)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "log_depth", *log_depth);
    }
    sts = vrnic_mem_parse(core, &c->mem, mem);
    if (sts) {
        return sts;
    }
    if (mem->iova & (VRNIC_RING_ALIGN - 1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "ring unaligned",
                            mem->iova);
    }
    if (mem->length < vrnic_cq_ring_len(flags, *log_depth)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem too short",
                            mem->length);
    }
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_cq_create(VrnicCore *core, const struct vrnic_aq_create_cq *c,
                        uint64_t *result)
{
    VrnicObjects *o = &core->obj;
    uint32_t eqn = le32_to_cpu(c->eqn);
    uint32_t uctx = le32_to_cpu(c->uctx);
    VrnicEq *eq = vrnic_eq_get(core, eqn);
    uint32_t flags = le32_to_cpu(c->flags);
    uint32_t log_depth, cqn;
    VrnicMem mem;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || c->handle) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (flags & ~VRNIC_CQ_FLAG_TIMESTAMP) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "flags", flags);
    }
    if (!eq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "eqn", eqn);
    }
    if (uctx >= core->cfg.db_pages) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "uctx", uctx);
    }
    sts = vrnic_cq_parse_ring(core, c, flags, &log_depth, &mem);
    if (sts) {
        return sts;
    }
    if (o->n_cqs >= core->cfg.max_cq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "max_cq", o->n_cqs);
    }
    cqn = vrnic_obj_alloc(&o->next_cq, 1, core->cfg.max_cq, o->cqs,
                          sizeof(*o->cqs));
    o->cqs[cqn] = (VrnicCq) {
        .live = true,
        .eqn = eqn,
        .uctx = uctx,
        .log_depth = log_depth,
        .flags = flags,
        .mem = mem,
    };
    eq->refs++;
    o->n_cqs++;
    *result = cqn;
    trace_vrnic_cq_create(cqn, eqn, 1u << log_depth, uctx);
    return VRNIC_AQ_STS_OK;
}

/* A CQ flag the object table counts, so its scans can stop early. */
static void vrnic_cq_flag(bool *flag, uint32_t *count, bool on)
{
    if (*flag != on) {
        *flag = on;
        if (on) {
            (*count)++;
        } else {
            (*count)--;
        }
    }
}

/* Start (due = the deadline) or end (INT64_MAX) a moderation wait. */
static void vrnic_cq_set_wait(VrnicCore *core, VrnicCq *cq, int64_t due)
{
    bool on = due != INT64_MAX;

    vrnic_cq_flag(&cq->mod_waiting, &core->obj.cqs_waiting, on);
    cq->mod_due = due;
    if (on) {
        vrnic_core_timer_arm(core, due);
    }
}

/* The armed event is due: one EQE, disarmed. */
static void vrnic_cq_fire(VrnicCore *core, uint32_t cqn, VrnicCq *cq)
{
    cq->arm = VRNIC_CQ_ARM_NONE;
    cq->quiet = false;
    cq->mod_cqes = 0;
    vrnic_cq_set_wait(core, cq, INT64_MAX);
    vrnic_eq_post(core, cq->eqn, cqn);
}

static void vrnic_cq_set_notify(VrnicCore *core, VrnicCq *cq, bool on)
{
    vrnic_cq_flag(&cq->notify, &core->obj.cqs_notify, on);
}

uint8_t vrnic_cq_destroy(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t cqn = le32_to_cpu(c->handle);
    VrnicCq *cq = vrnic_cq_get(core, cqn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!cq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "cqn", cqn);
    }
    if (cq->refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "cq has QPs", cq->refs);
    }
    vrnic_cq_set_notify(core, cq, false);
    vrnic_cq_set_wait(core, cq, INT64_MAX);
    core->obj.eqs[cq->eqn].refs--;
    memset(cq, 0, sizeof(*cq));
    core->obj.n_cqs--;
    trace_vrnic_cq_destroy(cqn);
    return VRNIC_AQ_STS_OK;
}

/* The CQ cannot take CQEs any more: stop it and tell the driver once. */
static void vrnic_cq_stop(VrnicCore *core, uint32_t cqn, VrnicCq *cq,
                          const char *why)
{
    VRNIC_GUEST_ERR(core, vrnic_err_cq, "cqn %u stopped: %s", cqn, why);
    cq->error = true;
    cq->arm = VRNIC_CQ_ARM_NONE;
    vrnic_cq_set_notify(core, cq, false);
    vrnic_cq_set_wait(core, cq, INT64_MAX);
    vrnic_aeq_post(core, VRNIC_AEQ_EV_CQ_ERR, cqn);
}

static bool vrnic_cq_read_ci(VrnicCore *core, const VrnicMem *mem,
                             uint32_t flags, uint32_t log_depth, uint16_t *ci)
{
    uint32_t v;

    if (!vrnic_mem_read_at(core, mem, vrnic_cq_dbrec_off(flags, log_depth),
                           &v, sizeof(v))) {
        return false;
    }
    *ci = le32_to_cpu(v) & VRNIC_INDEX_MASK;
    return true;
}

/*
 * Write one CQE at index idx of a ring of the CQ's format: the body (and,
 * with a timestamp, the second half), then the info word.
 */
static bool vrnic_cq_write_cqe(VrnicCore *core, const VrnicMem *mem,
                               uint32_t flags, uint32_t log_depth,
                               uint16_t idx, const struct vrnic_cqe_ts *cqe)
{
    uint64_t off = (uint64_t)vrnic_idx_slot(idx, log_depth) <<
                   vrnic_cqe_shift(flags);
    uint32_t info = le32_to_cpu(cqe->cqe.info) & ~VRNIC_CQE_INFO_PHASE;

    if (vrnic_idx_phase(idx, log_depth)) {
        info |= VRNIC_CQE_INFO_PHASE;
    }
    info = cpu_to_le32(info);
    return vrnic_mem_write_at(core, mem, off, cqe,
                              offsetof(struct vrnic_cqe, info)) &&
           (!(flags & VRNIC_CQ_FLAG_TIMESTAMP) ||
            vrnic_mem_write_at(core, mem, off + VRNIC_CQE_SIZE,
                               (const uint8_t *)cqe + VRNIC_CQE_SIZE,
                               VRNIC_CQE_TS_SIZE - VRNIC_CQE_SIZE)) &&
           vrnic_mem_write_at(core, mem, off + offsetof(struct vrnic_cqe, info),
                              &info, sizeof(info));
}

bool vrnic_cq_post(VrnicCore *core, uint32_t cqn, const struct vrnic_cqe *cqe)
{
    VrnicCq *cq = vrnic_cq_get(core, cqn);
    struct vrnic_cqe_ts e;
    uint32_t depth;
    uint16_t ci, used;
    bool fire;

    if (!cq || cq->error || core->fatal) {
        return false;
    }
    depth = 1u << cq->log_depth;
    if (!vrnic_cq_read_ci(core, &cq->mem, cq->flags, cq->log_depth, &ci)) {
        vrnic_cq_stop(core, cqn, cq, "doorbell record unreadable");
        return false;
    }
    used = cq->pi - ci;
    if (used > depth) {
        vrnic_cq_stop(core, cqn, cq, "dbrec.ci ahead of the producer");
        return false;
    }
    if (used == depth) {
        core->stats.cq_overflows++;
        vrnic_cq_stop(core, cqn, cq, "overrun");
        return false;
    }
    e.cqe = *cqe;
    if (cq->flags & VRNIC_CQ_FLAG_TIMESTAMP) {
        e.timestamp = cpu_to_le64(core->ops->wallclock_ns(core->opaque));
        memset(e.rsvd0, 0, sizeof(e.rsvd0));
    }
    if (!vrnic_cq_write_cqe(core, &cq->mem, cq->flags, cq->log_depth, cq->pi,
                            &e)) {
        vrnic_cq_stop(core, cqn, cq, "DMA error on the ring");
        return false;
    }
    trace_vrnic_cq_post(cqn, cq->pi, le32_to_cpu(cqe->qpn), cqe->opcode,
                        cqe->status, le64_to_cpu(cqe->wr_id));
    cq->pi++;
    if (cq->arm == VRNIC_CQ_ARM_NEXT && cqe->status == VRNIC_WC_SUCCESS &&
        (cq->mod_count > 1 || cq->mod_period_us)) {
        cq->mod_cqes++;
        fire = cq->mod_count && cq->mod_cqes >= cq->mod_count;
        if (!fire && !cq->mod_waiting && cq->mod_period_us) {
            vrnic_cq_set_wait(core, cq, core->ops->clock_ns(core->opaque) +
                              cq->mod_period_us * 1000ll);
        }
    } else {
        fire = cq->arm == VRNIC_CQ_ARM_NEXT ||
               (cq->arm == VRNIC_CQ_ARM_SOLICITED &&
                ((cqe->flags & VRNIC_CQE_FLAG_SOLICITED) ||
                 cqe->status != VRNIC_WC_SUCCESS));
    }
    if (fire) {
        vrnic_cq_fire(core, cqn, cq);
    } else {
        cq->quiet = true;
    }
    return true;
}

uint8_t vrnic_cq_modify(VrnicCore *core, const struct vrnic_aq_modify_cq *c)
{
    uint32_t cqn = le32_to_cpu(c->handle);
    uint16_t count = le16_to_cpu(c->count);
    uint16_t period = le16_to_cpu(c->period_us);
    VrnicCq *cq = vrnic_cq_get(core, cqn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (count > 1 && !period) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "count without period",
                            count);
    }
    if (!cq) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "cqn", cqn);
    }
    cq->mod_count = count;
    cq->mod_period_us = period;
    trace_vrnic_cq_modify(cqn, count, period);
    return VRNIC_AQ_STS_OK;
}

/* Timer expiry: post the moderated events that are due, re-arm for the rest. */
void vrnic_cq_timer(VrnicCore *core, int64_t now)
{
    int64_t next = INT64_MAX;

    for (uint32_t cqn = 1; core->obj.cqs_waiting && cqn <= core->cfg.max_cq;
         cqn++) {
        VrnicCq *cq = &core->obj.cqs[cqn];

        if (!cq->live || !cq->mod_waiting) {
            continue;
        }
        if (cq->mod_due <= now) {
            vrnic_cq_fire(core, cqn, cq);
        } else {
            next = MIN(next, cq->mod_due);
        }
    }
    if (next != INT64_MAX) {
        vrnic_core_timer_arm(core, next);
    }
}

/* BAR2 arm doorbell (MMIO context: no DMA here). */
void vrnic_cq_arm_db(VrnicCore *core, uint32_t page, bool solicited,
                     uint32_t cqn, uint16_t ci)
{
    VrnicCq *cq = vrnic_cq_get(core, cqn);

    if (!cq || cq->uctx != page) {
        core->stats.db_rejected++;
        VRNIC_GUEST_ERR(core, vrnic_err_db_obj, "page %u: CQ arm for cqn %u "
                        "that does not exist or is not this page's", page, cqn);
        return;
    }
    if ((uint16_t)(cq->pi - ci) > (1u << cq->log_depth)) {
        core->stats.db_rejected++;
        VRNIC_GUEST_ERR(core, vrnic_err_db_obj, "page %u: CQ arm for cqn %u "
                        "with ci past the producer", page, cqn);
        return;
    }
    trace_vrnic_cq_arm(cqn, ci, solicited, cq->pi);
    if (cq->error) {
        return;     /* stopped: no more events */
    }
    if (cq->pi != ci && cq->quiet) {
        /* CQEs the consumer has not seen, not all told of: due now. */
        cq->arm = VRNIC_CQ_ARM_NONE;
        cq->mod_cqes = 0;
        vrnic_cq_set_wait(core, cq, INT64_MAX);
        vrnic_cq_set_notify(core, cq, true);
        core->ops->kick(core->opaque, VRNIC_WORK_QUEUES);
    } else if (!solicited || cq->arm == VRNIC_CQ_ARM_NONE) {
        cq->arm = solicited ? VRNIC_CQ_ARM_SOLICITED : VRNIC_CQ_ARM_NEXT;
    }
}

/* Queue bottom half: events due from arms that found CQEs pending. */
void vrnic_cq_process(VrnicCore *core)
{
    for (uint32_t cqn = 1; core->obj.cqs_notify && cqn <= core->cfg.max_cq;
         cqn++) {
        VrnicCq *cq = &core->obj.cqs[cqn];

        if (cq->live && cq->notify) {
            vrnic_cq_set_notify(core, cq, false);
            cq->quiet = false;
            vrnic_eq_post(core, cq->eqn, cqn);
        }
    }
}

/*
 * One run of RESIZE_CQ: copy up to VRNIC_CQ_RESIZE_STEP more CQEs, then
 * either go on in the next admin run (IN_PROGRESS) or, with everything
 * between the consumer's ci and the producer copied, switch rings. The
 * old ring stays live until then, so CQEs keep arriving there meanwhile
 * and are copied too; the consumer does not poll during the command (the
 * driver and the provider hold the CQ's lock across it).
 */
static uint8_t vrnic_cq_resize_step(VrnicCore *core, uint32_t cqn, VrnicCq *cq)
{
    VrnicCqResize *r = &core->cq_resize;
    uint16_t used = cq->pi - r->ci;
    uint32_t zero = 0;

    if (cq->error) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "cq stopped", cqn);
    }
    if (used > (1u << cq->log_depth) || used > (1u << r->log_depth)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "CQEs do not fit", used);
    }
    for (unsigned n = 0; r->copied != used && n < VRNIC_CQ_RESIZE_STEP; n++) {
        uint32_t shift = vrnic_cqe_shift(cq->flags);
        struct vrnic_cqe_ts e;
        uint64_t off = (uint64_t)vrnic_idx_slot((uint16_t)(r->ci + r->copied),
                                                cq->log_depth) << shift;

        if (!vrnic_mem_read_at(core, &cq->mem, off, &e, 1u << shift) ||
            !vrnic_cq_write_cqe(core, &r->mem, cq->flags, r->log_depth,
                                r->copied, &e)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "CQE copy", r->copied);
        }
        r->copied++;
    }
    if (r->copied != used) {
        return VRNIC_AQ_STS_IN_PROGRESS;
    }
    if (!vrnic_mem_write_at(core, &r->mem,
                            vrnic_cq_dbrec_off(cq->flags, r->log_depth),
                            &zero, sizeof(zero))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "new dbrec", cqn);
    }
    cq->mem = r->mem;
    cq->log_depth = r->log_depth;
    cq->pi = used;
    trace_vrnic_cq_resize(cqn, 1u << r->log_depth, used);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_cq_resize(VrnicCore *core, const struct vrnic_aq_create_cq *c)
{
    VrnicCqResize *r = &core->cq_resize;
    uint32_t cqn = le32_to_cpu(c->handle);
    VrnicCq *cq = vrnic_cq_get(core, cqn);
    uint8_t sts;

    if (!r->active) {
        /* The command's first run: validate it, start the copy. */
        uint32_t log_depth;
        VrnicMem mem;
        uint16_t ci;

        if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
        }
        if (!cq) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "cqn", cqn);
        }
        if (le32_to_cpu(c->flags) != cq->flags) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "flags not the CQ's",
                                le32_to_cpu(c->flags));
        }
        sts = vrnic_cq_parse_ring(core, c, cq->flags, &log_depth, &mem);
        if (sts) {
            return sts;
        }
        if (cq->error) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "cq stopped", cqn);
        }
        if (!vrnic_cq_read_ci(core, &cq->mem, cq->flags, cq->log_depth,
                              &ci)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "old dbrec", cqn);
        }
        *r = (VrnicCqResize) {
            .active = true, .log_depth = log_depth, .ci = ci, .mem = mem,
        };
    } else if (!cq) {
        /* Only the command itself could destroy it: never, but be sure. */
        r->active = false;
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "cqn", cqn);
    }
    sts = vrnic_cq_resize_step(core, cqn, cq);
    if (sts != VRNIC_AQ_STS_IN_PROGRESS) {
        r->active = false;
    }
    return sts;
}
