/*
 * wake-limit: what one thread waking another on the other host CPU costs,
 * the floor under a guest pair's latency. A 2-byte one-way trip between
 * two vrnic guests waits for at least two such wake-ups (the vCPU's
 * doorbell waking its QEMU's main loop, that loop's frame waking the peer
 * QEMU's main loop), each onto a CPU where the other guest's vCPU spins.
 *
 * Two threads, pinned to the first two CPUs this process may use, pass a
 * token back and forth through two eventfds, each sleeping in read() until
 * the other writes: one round trip is two cross-CPU wake-ups. With
 * "spin", a SCHED_IDLE thread busy-polls on each of the two CPUs, as the
 * guests' vCPUs do under tools/vm (Documentation/harness.rst); without,
 * the CPUs are idle between wake-ups. Prints
 * "wake-limit: spin|idle: round trip median US p99 US min US".
 *
 * usage: wake-limit spin|idle [ROUND_TRIPS]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#define PING 1
#define END 2

static int ping_fd, pong_fd;
static int cpu[2];
static atomic_bool done;

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* pthread_* return their error instead of setting errno. */
static void start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    int err = pthread_create(t, NULL, fn, arg);

    if (err) {
        fprintf(stderr, "wake-limit: pthread_create: %s\n", strerror(err));
        exit(1);
    }
}

static void pin(int c)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(c, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
        fprintf(stderr, "wake-limit: cannot pin to CPU %d\n", c);
        exit(1);
    }
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *spinner(void *arg)
{
    struct sched_param sp = { 0 };

    pin(cpu[(intptr_t)arg]);
    if (sched_setscheduler(0, SCHED_IDLE, &sp)) {
        die("wake-limit: SCHED_IDLE");
    }
    while (!atomic_load_explicit(&done, memory_order_relaxed)) {
        /* busy-poll, like perftest in a guest */
    }
    return NULL;
}

/*
 * The far side: every token it reads goes back; END ends it. One token is
 * in flight at a time, so each read() returns what one write() added.
 */
static void *echo(void *unused)
{
    uint64_t v;

    (void)unused;
    pin(cpu[1]);
    while (read(ping_fd, &v, sizeof(v)) == sizeof(v) && v != END) {
        if (write(pong_fd, &v, sizeof(v)) != sizeof(v)) {
            die("wake-limit: write");
        }
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    bool spin = argc > 1 && !strcmp(argv[1], "spin");
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    pthread_t far, spinners[2];
    cpu_set_t allowed;
    double *rtt;
    uint64_t v = PING;
    int c, found = 0;

    if (argc < 2 || (!spin && strcmp(argv[1], "idle")) || n < 100) {
        fprintf(stderr, "usage: wake-limit spin|idle [ROUND_TRIPS >= 100]\n");
        return 2;
    }
    if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
        die("wake-limit: sched_getaffinity");
    }
    for (c = 0; c < CPU_SETSIZE && found < 2; c++) {
        if (CPU_ISSET(c, &allowed)) {
            cpu[found++] = c;
        }
    }
    if (found < 2) {
        fprintf(stderr, "wake-limit: needs two CPUs\n");
        return 1;
    }
    ping_fd = eventfd(0, 0);
    pong_fd = eventfd(0, 0);
    rtt = calloc(n, sizeof(*rtt));
    if (ping_fd < 0 || pong_fd < 0 || !rtt) {
        die("wake-limit: setup");
    }
    for (int i = 0; spin && i < 2; i++) {
        start(&spinners[i], spinner, (void *)(intptr_t)i);
    }
    start(&far, echo, NULL);
    pin(cpu[0]);
    usleep(100 * 1000);     /* the threads on their CPUs */
    for (int i = 0; i < n; i++) {
        double t0 = now_us();

        if (write(ping_fd, &v, sizeof(v)) != sizeof(v) ||
            read(pong_fd, &v, sizeof(v)) != sizeof(v)) {
            die("wake-limit: ping");
        }
        rtt[i] = now_us() - t0;
    }
    v = END;
    if (write(ping_fd, &v, sizeof(v)) != sizeof(v)) {
        die("wake-limit: write");
    }
    pthread_join(far, NULL);
    atomic_store(&done, true);
    for (int i = 0; spin && i < 2; i++) {
        pthread_join(spinners[i], NULL);
    }
    qsort(rtt, n, sizeof(*rtt), cmp_double);
    printf("wake-limit: %s: round trip median %.1f us p99 %.1f us min %.1f us\n",
           spin ? "spin" : "idle", rtt[n / 2], rtt[n * 99 / 100], rtt[0]);
    return 0;
}
