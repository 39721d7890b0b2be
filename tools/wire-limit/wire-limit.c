/*
 * wire-limit: what the guests' wire carries with no device behind it.
 * Two processes, one sending and one receiving, blast frames of one size
 * through the kind of socket a tools/vm pair uses, as QEMU's -netdev dgram
 * sets it up and uses it (tools/qemu-patches/): unix datagram sockets bound
 * to paths and connected to each other, a 208 KiB send buffer asked for,
 * up to PER_CALL (default 32, the netdev's batch) Ethernet frames per
 * sendmmsg() and per recvmmsg(), the sender blocking when its buffer is
 * full; PER_CALL 1 is one system call per frame on each side, as the
 * netdev's send() and recv() were before it batched. The sender runs on
 * the first CPU this process may use and the receiver on the second, as
 * tools/vm pins the two guests' main loops. Prints
 * "wire-limit: BYTES B frames: GB/s frames/s, PER_CALL per call".
 *
 * usage: wire-limit FRAME_BYTES [SECONDS [PER_CALL]]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE     /* sendmmsg, recvmmsg, CPU_SET */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#define BATCH 32        /* most per call: NET_DGRAM_BATCH of the netdev */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bound(struct sockaddr_un *a, const char *dir, const char *name)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    int sndbuf = 208 * 1024;

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", dir, name);
    if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) ||
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf))) {
        perror("wire-limit: socket");
        exit(1);
    }
    return fd;
}

/* Pins the calling process to the idx-th CPU it may use. */
static void pin_nth_cpu(int idx)
{
    cpu_set_t allowed, one;
    int c;

    if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
        perror("wire-limit: sched_getaffinity");
        exit(1);
    }
    for (c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &allowed) && idx-- == 0) {
            break;
        }
    }
    if (c == CPU_SETSIZE) {
        fprintf(stderr, "wire-limit: needs two CPUs\n");
        exit(1);
    }
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (sched_setaffinity(0, sizeof(one), &one)) {
        perror("wire-limit: sched_setaffinity");
        exit(1);
    }
}

static void connect_to(int fd, const struct sockaddr_un *a)
{
    if (connect(fd, (const struct sockaddr *)a, sizeof(*a))) {
        perror("wire-limit: connect");
        exit(1);
    }
}

int main(int argc, char **argv)
{
    size_t len = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
    double secs = argc > 2 ? atof(argv[2]) : 2.0, t0, t;
    int per_call = argc > 3 ? atoi(argv[3]) : BATCH;
    char dir[] = "/tmp/wire-limit.XXXXXX";
    struct sockaddr_un ta, ra;
    static char buf[65536];
    struct mmsghdr sm[BATCH];
    struct iovec siov[BATCH];
    unsigned long frames = 0;
    int tx, rx, status;
    pid_t child;

    if (len < 14 || len > sizeof(buf) || per_call < 1 || per_call > BATCH ||
        !mkdtemp(dir)) {
        fprintf(stderr, "usage: wire-limit FRAME_BYTES(14..65536) "
                "[SECONDS [PER_CALL(1..%d)]]\n", BATCH);
        return 2;
    }
    tx = bound(&ta, dir, "tx");
    rx = bound(&ra, dir, "rx");
    connect_to(tx, &ra);
    connect_to(rx, &ta);
    child = fork();
    if (child == 0) {
        /* The receiver: read until the sender's zero-length end mark. */
        struct mmsghdr m[BATCH];
        struct iovec iov[BATCH];
        static char rbuf[BATCH][65536];
        int n;

        close(tx);
        pin_nth_cpu(1);
        for (int i = 0; i < BATCH; i++) {
            iov[i] = (struct iovec){ rbuf[i], sizeof(rbuf[i]) };
            m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
                                            .msg_iovlen = 1 };
        }
        while ((n = recvmmsg(rx, m, per_call, MSG_WAITFORONE, NULL)) > 0 &&
               m[n - 1].msg_len) {
        }
        _exit(0);
    }
    close(rx);
    pin_nth_cpu(0);
    memset(buf, 0x5a, len);
    for (int i = 0; i < BATCH; i++) {
        siov[i] = (struct iovec){ buf, len };
        sm[i].msg_hdr = (struct msghdr){ .msg_iov = &siov[i],
                                         .msg_iovlen = 1 };
    }
    t0 = now_s();
    do {
        for (int sent = 0, n; sent < per_call; sent += n) {
            n = sendmmsg(tx, sm + sent, per_call - sent, 0);
            if (n <= 0) {
                perror("wire-limit: sendmmsg");
                return 1;
            }
        }
        frames += per_call;
        t = now_s() - t0;
    } while (t < secs);
    send(tx, buf, 0, 0);
    waitpid(child, &status, 0);
    t = now_s() - t0;   /* until the receiver has read everything */
    printf("wire-limit: %zu B frames: %.3f GB/s %.0f frames/s, %d per call\n",
           len, frames * len / t / 1e9, frames / t, per_call);
    unlink(ta.sun_path);
    unlink(ra.sun_path);
    rmdir(dir);
    return 0;
}
