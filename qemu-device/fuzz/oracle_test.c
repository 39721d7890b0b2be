/*
 * The fuzz oracles must be able to fail: each case below makes the device
 * (or, where no input can, a direct call standing in for a device bug)
 * break one oracle, in a child process, and expects that child to stop
 * with the oracle's message and SIGABRT. TAP output; part of make
 * fuzz-regress, so an oracle that stopped working fails the run.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fuzz_dev.h"
#include "../vrnic_core_int.h"

/* Neither RAM nor a canary: a DMA there just fails. */
#define FUZZ_UNMAPPED_TEST 0x1000

static FuzzBus *bus;
static FuzzNode node;

static void setup(void)
{
    VrnicConfig cfg = fuzz_config();

    bus = fuzz_bus_new("test", &cfg, 256 * 1024);
    fuzz_bus_start(bus);
    fuzz_node_init(&node, bus, 1);
}

/*
 * CREATE_EQ on a ring at ring, then an arm that makes the device post an
 * EQE there: the device writes where the guest said.
 */
static void eq_at(uint64_t ring)
{
    FuzzCmd c;

    fuzz_cmd_init(&c, VRNIC_AQ_OP_CREATE_EQ);
    c.eq.ring_addr = htole64(ring);
    c.eq.log_depth = htole32(4);
    c.eq.vector = htole32(VRNIC_VEC_COMP_FIRST + 1);
    if (fuzz_aq_exec(bus, &c, NULL) != VRNIC_AQ_STS_OK) {
        exit(3);
    }
    /* A CQ on it, armed with a CQE pending: the EQE is written. */
    fuzz_cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(2);
    c.cq.log_depth = htole32(2);
    fuzz_mem_inline(&c.cq.mem, fuzz_alloc(bus, 4096, 4096), 4096, 12);
    if (fuzz_aq_exec(bus, &c, NULL) != VRNIC_AQ_STS_OK) {
        exit(3);
    }
    fuzz_db(bus, 0, VRNIC_DB_CQ_ARM_NEXT, 3, 0);
    fuzz_ctx_enter(bus, "test");
    {
        struct vrnic_cqe e = { .status = 1 };

        vrnic_cq_post(&bus->core, 3, &e);
    }
    fuzz_ctx_leave(bus);
    fuzz_settle(bus);
}

static void t_canary_below(void)
{
    eq_at(FUZZ_CANARY_LO + FUZZ_CANARY_LEN - 256);
}

static void t_canary_above(void)
{
    eq_at(FUZZ_CANARY_HI);
}

static void t_unhanded(void)
{
    /* Below fuzz_alloc_top's allocations: fuzz_alloc never got there. */
    eq_at(FUZZ_RAM_BASE + bus->top - 4096);
}

static void t_mmio_dma(void)
{
    uint8_t buf[8];

    bus->in_mmio = true;
    fuzz_ctx_enter(bus, "test");
    bus->core.ops->dma_read(bus, node.eq_ring, buf, sizeof(buf));
}

static void t_no_ctx_dma(void)
{
    uint8_t buf[8];

    bus->core.ops->dma_read(bus, node.eq_ring, buf, sizeof(buf));
}

static void t_vector(void)
{
    bus->core.ops->irq(bus, vrnic_total_vectors(&bus->cfg));
}

static void t_dma_bound(void)
{
    FuzzCmd c;

    /* One command is three DMA calls. */
    bus->dma_bound = 2;
    fuzz_cmd_init(&c, VRNIC_AQ_OP_ALLOC_PD);
    fuzz_aq_exec(bus, &c, NULL);
}

static void t_bad_frame(void)
{
    uint8_t frame[100];

    memset(frame, 0, sizeof(frame));
    bus->check_frames = true;
    bus->core.ops->eth_send(bus, frame, sizeof(frame));
}

static void t_host_buffer(void)
{
    uint8_t *buf = malloc(8);

    fuzz_ctx_enter(bus, "test");
    bus->core.ops->dma_read(bus, FUZZ_UNMAPPED_TEST, buf, 16);
    free(buf);
}

static void t_backpressure(void)
{
    uint8_t frame[60] = { 0 };

    bus->busy = 1000;
    for (unsigned i = 0; i <= VRNIC_WIRE_MAX_QUEUED; i++) {
        bus->core.ops->eth_send(bus, frame, sizeof(frame));
    }
}

static void t_dereg_then_dma(void)
{
    FuzzMr *m = &node.mr[FUZZ_MR_ALL];
    uint8_t buf[8];

    /*
     * The harness takes a deregistered MR's pages back; the device
     * touching them after DEREG_MR (here: directly) is caught.
     */
    memset(bus->handed + ((m->buf - FUZZ_RAM_BASE) >> FUZZ_GRANULE_SHIFT), 0,
           m->len >> FUZZ_GRANULE_SHIFT);
    fuzz_ctx_enter(bus, "test");
    bus->core.ops->dma_write(bus, m->buf, buf, sizeof(buf));
}

static void t_frmr_dereg_then_dma(void)
{
    FuzzMr *f = &node.mr[FUZZ_MR_FRMR];
    uint8_t buf[8];
    FuzzCmd c;

    /* As fuzz_wqe does after a DEREG_MR of the FRMR; then a stray DMA. */
    fuzz_cmd_init(&c, VRNIC_AQ_OP_DEREG_MR);
    c.destroy.handle = htole32(f->key);
    if (fuzz_aq_exec(bus, &c, NULL) != VRNIC_AQ_STS_OK) {
        exit(3);
    }
    fuzz_mr_unhand(&node, f);
    fuzz_ctx_enter(bus, "test");
    bus->core.ops->dma_write(bus, f->buf + f->buf_len - 8, buf, sizeof(buf));
}

static const struct {
    const char *name;
    void (*fn)(void);
    const char *expect;
} cases[] = {
    { "DMA into the canary below RAM", t_canary_below, "canary" },
    { "DMA into the canary above RAM", t_canary_above, "canary" },
    { "DMA into RAM never handed out", t_unhanded, "never handed" },
    { "DMA from an MMIO handler", t_mmio_dma, "MMIO handler" },
    { "DMA outside a bottom half", t_no_ctx_dma, "outside a bottom half" },
    { "MSI-X vector out of range", t_vector, "MSI-X vector" },
    { "DMA bound per bottom half", t_dma_bound, "DMA calls in one context" },
    { "malformed RoCEv2 frame sent", t_bad_frame, "codec refuses" },
    { "host buffer smaller than the DMA", t_host_buffer, "host buffer" },
    { "frames past the backpressure limit", t_backpressure, "busy backend" },
    { "DMA to a deregistered MR", t_dereg_then_dma, "never handed" },
    { "DMA to a deregistered FRMR's RAM", t_frmr_dereg_then_dma,
      "never handed" },
};

int main(void)
{
    unsigned n = sizeof(cases) / sizeof(cases[0]), failed = 0;

    printf("1..%u\n", n);
    for (unsigned i = 0; i < n; i++) {
        int pipefd[2], status;
        char out[8192];
        ssize_t got = 0, r;
        pid_t pid;

        if (pipe(pipefd)) {
            return 1;
        }
        pid = fork();
        if (pid == 0) {
            dup2(pipefd[1], 2);
            close(pipefd[0]);
            setup();
            cases[i].fn();
            _exit(0);       /* the oracle did not fire */
        }
        close(pipefd[1]);
        while ((r = read(pipefd[0], out + got, sizeof(out) - 1 - got)) > 0) {
            got += r;
        }
        out[got] = 0;
        close(pipefd[0]);
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
            strstr(out, "ORACLE FAILED") && strstr(out, cases[i].expect)) {
            printf("ok %u %s\n", i + 1, cases[i].name);
        } else {
            printf("not ok %u %s (status 0x%x)\n", i + 1, cases[i].name,
                   status);
            printf("# %s\n", out);
            failed++;
        }
    }
    return failed ? 1 : 0;
}
