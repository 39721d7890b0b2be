/*
 * Host unit-test stand-in for QEMU's net/checksum.h: the Internet checksum
 * (RFC 1071) functions the vrnic core uses, with the same results as
 * net/checksum.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_TEST_NET_CHECKSUM_H
#define VRNIC_TEST_NET_CHECKSUM_H

#include <stdint.h>

/* Sum of len bytes as 16-bit big-endian words (seq odd: buf starts odd). */
static inline uint32_t net_checksum_add_cont(int len, uint8_t *buf, int seq)
{
    uint32_t sum1 = 0, sum2 = 0;
    int i;

    for (i = 0; i < len - 1; i += 2) {
        sum1 += buf[i];
        sum2 += buf[i + 1];
    }
    if (i < len) {
        sum1 += buf[i];
    }
    return (seq & 1) ? sum1 + (sum2 << 8) : sum2 + (sum1 << 8);
}

static inline uint32_t net_checksum_add(int len, uint8_t *buf)
{
    return net_checksum_add_cont(len, buf, 0);
}

/* Fold to 16 bits and complement: 0 when a checked sum verifies. */
static inline uint16_t net_checksum_finish(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

static inline uint16_t net_raw_checksum(uint8_t *data, int length)
{
    return net_checksum_finish(net_checksum_add(length, data));
}

#endif
