/*
 * Host unit-test stand-in for QEMU's net/checksum.h: the Internet checksum
 * (RFC 1071) functions and the Toeplitz hash the vrnic core uses, with the
 * same results as QEMU's.
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

/*
 * The Toeplitz hash (Microsoft RSS): for each input bit that is set, XOR
 * in the 32-bit window of the key starting at that bit. The key must
 * hold 4 bytes more than all the input added to it.
 */
typedef struct toeplitz_key_st {
    uint32_t leftmost_32_bits;
    uint8_t *next_byte;
} net_toeplitz_key;

static inline void net_toeplitz_key_init(net_toeplitz_key *key,
                                         uint8_t *key_bytes)
{
    key->leftmost_32_bits = (uint32_t)key_bytes[0] << 24 |
                            (uint32_t)key_bytes[1] << 16 |
                            (uint32_t)key_bytes[2] << 8 | key_bytes[3];
    key->next_byte = key_bytes + 4;
}

static inline void net_toeplitz_add(uint32_t *result, uint8_t *input,
                                    uint32_t len, net_toeplitz_key *key)
{
    uint32_t window = key->leftmost_32_bits;

    for (uint32_t i = 0; i < len; i++) {
        uint8_t next = *key->next_byte++;

        for (int bit = 7; bit >= 0; bit--) {
            if (input[i] & (1u << bit)) {
                *result ^= window;
            }
            window = window << 1 | ((next >> bit) & 1);
        }
    }
    key->leftmost_32_bits = window;
}

#endif
