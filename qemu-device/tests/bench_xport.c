/*
 * make bench-core: the transport's own speed, without QEMU, syscalls or a
 * guest. Two device cores in one process, joined by the fake wire, run on
 * one host thread: the figure is 1 / (sender's + receiver's time per
 * byte), the one-core bound of the device code.
 *
 * Each run posts 64 KiB RDMA WRITEs from a 4 KiB-page MR with a one-level
 * translation table (the shape the driver gives a user-space MR) into
 * another, settles both cores, and checks every CQE and the data outside
 * the timed region. Printed next to it, measured in the same process:
 * memcpy of the same bytes, and 2-byte WRITEs as packets per second.
 *
 * Output lines are "bench-core: KEY VALUE UNIT [...]" for tools/bench.sh.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <time.h>
#include "xport_helpers.h"

#define MSG_LEN     65536u
#define MSGS        32u     /* per round: 2 MiB, one table page of 512 */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* An MR over [addr, addr + len) of n's memory: 4 KiB pages, one level. */
static uint32_t mr_paged(Node *n, uint32_t access, uint64_t addr,
                         uint64_t len)
{
    uint32_t np = len / 4096;
    uint64_t table = obj_alloc(n->f, np * 8ull, 4096);
    uint64_t *t = fake_ptr(n->f, table);
    AnyCmd c;
    uint64_t r;

    for (uint32_t i = 0; i < np; i++) {
        t[i] = htole64(addr + i * 4096ull);
    }
    mr_cmd(&c, n, access, addr, len, 12, 1);
    c.mr.mem.pages[0] = htole64(table);
    if (run(n->f, &c, &r)) {
        fprintf(stderr, "bench-core: REG_MR failed\n");
        exit(1);
    }
    return r;
}

typedef struct Bench {
    Node a, b;
    Qp qa, qb;
    uint64_t src, dst;
    uint32_t lkey, rkey;
} Bench;

static void bench_init(Bench *s, uint8_t mtu)
{
    uint64_t len = (uint64_t)MSG_LEN * MSGS;

    node_init(&s->a, 1, false);
    node_init(&s->b, 2, false);
    fake_link(s->a.f, s->b.f);
    qp_new_deep(&s->qa, &s->a);
    qp_new_deep(&s->qb, &s->b);
    connect(&s->qa, &s->qb, mtu, 0x10, 0x20);
    s->src = obj_alloc(s->a.f, len, 4096);
    s->dst = obj_alloc(s->b.f, len, 4096);
    s->lkey = mr_paged(&s->a, 0, s->src, len);
    s->rkey = mr_paged(&s->b, ACC_ALL, s->dst, len);
}

static void bench_free(Bench *s)
{
    fake_free(s->a.f);
    fake_free(s->b.f);
}

/* One round of n WRITEs of len bytes; every CQE checked. */
static void bench_round(Bench *s, uint32_t n, uint32_t len, uint32_t stride)
{
    struct vrnic_cqe e;

    for (uint32_t i = 0; i < n; i++) {
        Sg sg = { s->src + (uint64_t)i * stride, len, s->lkey };

        post_send(&s->qa, i, VRNIC_WQE_OP_RDMA_WRITE, 0, &sg, 1,
                  s->dst + (uint64_t)i * stride, s->rkey, 0, NULL, 0);
    }
    fake_settle(s->a.f);
    for (uint32_t i = 0; i < n; i++) {
        if (!poll(&s->a, true, &e) || e.status != VRNIC_WC_SUCCESS ||
            le64toh(e.wr_id) != i) {
            fprintf(stderr, "bench-core: WRITE %u of %u did not complete\n",
                    i, n);
            exit(1);
        }
    }
}

static uint64_t port_stat(Node *n, unsigned i)
{
    return n->f->core.stats.port[i];
}

/* 64 KiB WRITEs at one path MTU: GB/s, ns and DMA transfers per packet. */
static double bench_bw(uint8_t mtu, double secs)
{
    uint64_t len = (uint64_t)MSG_LEN * MSGS, bytes = 0, pkts, dma;
    double t0, t;
    Bench s;

    bench_init(&s, mtu);
    fill(&s.a, s.src, len, 7);
    bench_round(&s, MSGS, MSG_LEN, MSG_LEN);    /* warm up */
    pkts = port_stat(&s.a, VRNIC_PORT_STAT_TX_PKTS);
    dma = s.a.f->core.dma_ops + s.b.f->core.dma_ops;
    t0 = now_s();
    do {
        bench_round(&s, MSGS, MSG_LEN, MSG_LEN);
        bytes += len;
        t = now_s() - t0;
    } while (t < secs);
    pkts = port_stat(&s.a, VRNIC_PORT_STAT_TX_PKTS) - pkts;
    dma = s.a.f->core.dma_ops + s.b.f->core.dma_ops - dma;
    if (memcmp(fake_ptr(s.a.f, s.src), fake_ptr(s.b.f, s.dst), len) ||
        port_stat(&s.b, VRNIC_PORT_STAT_RX_OUT_OF_SEQ)) {
        fprintf(stderr, "bench-core: data or sequence wrong at pmtu %u\n",
                128u << mtu);
        exit(1);
    }
    printf("bench-core: write_64k_pmtu%u %.3f GB/s %.0f ns/pkt "
           "%.2f dma/pkt\n", 128u << mtu, bytes / t / 1e9, t / pkts * 1e9,
           (double)dma / pkts);
    bench_free(&s);
    return bytes / t / 1e9;
}

/* 2-byte WRITEs: packets (request and ACK) per second. */
static void bench_small(double secs)
{
    uint64_t pkts;
    double t0, t;
    Bench s;

    bench_init(&s, 3);
    pkts = port_stat(&s.a, VRNIC_PORT_STAT_TX_PKTS) +
           port_stat(&s.b, VRNIC_PORT_STAT_TX_PKTS);
    t0 = now_s();
    do {
        bench_round(&s, 64, 2, 64);
        t = now_s() - t0;
    } while (t < secs);
    pkts = port_stat(&s.a, VRNIC_PORT_STAT_TX_PKTS) +
           port_stat(&s.b, VRNIC_PORT_STAT_TX_PKTS) - pkts;
    printf("bench-core: write_2b %.0f pkt/s\n", pkts / t);
    bench_free(&s);
}

/* memcpy of 64 KiB blocks within 2 MiB: the host's own copy rate. */
static double bench_memcpy(double secs)
{
    size_t len = (size_t)MSG_LEN * MSGS;
    uint8_t *a = malloc(len), *b = malloc(len);
    uint64_t bytes = 0;
    double t0, t;

    if (!a || !b) {
        abort();
    }
    memset(a, 1, len);
    memset(b, 2, len);
    t0 = now_s();
    do {
        for (size_t off = 0; off < len; off += MSG_LEN) {
            memcpy(b + off, a + off, MSG_LEN);
        }
        __asm__ volatile("" : : "r"(b) : "memory");
        bytes += len;
        t = now_s() - t0;
    } while (t < secs);
    free(a);
    free(b);
    printf("bench-core: memcpy_64k %.3f GB/s\n", bytes / t / 1e9);
    return bytes / t / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    double mc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    mc = bench_memcpy(secs);

    for (uint8_t mtu = 3; mtu <= 5; mtu += 2) {
        double bw = bench_bw(mtu, secs);

        printf("bench-core: write_64k_pmtu%u_vs_memcpy %.3f\n", 128u << mtu,
               bw / mc);
    }
    bench_small(secs);
    return 0;
}
