/*
 * Host unit-test stand-in for QEMU's qemu/bswap.h: the byte-order
 * conversions and the big-endian load the vrnic core uses.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_TEST_BSWAP_H
#define VRNIC_TEST_BSWAP_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define le16_to_cpu(x) le16toh(x)
#define le32_to_cpu(x) le32toh(x)
#define le64_to_cpu(x) le64toh(x)
#define cpu_to_le16(x) htole16(x)
#define cpu_to_le32(x) htole32(x)
#define cpu_to_le64(x) htole64(x)
#define be16_to_cpu(x) be16toh(x)
#define be32_to_cpu(x) be32toh(x)
#define be64_to_cpu(x) be64toh(x)
#define cpu_to_be16(x) htobe16(x)
#define cpu_to_be32(x) htobe32(x)
#define cpu_to_be64(x) htobe64(x)

static inline uint64_t ldq_be_p(const void *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return be64toh(v);
}

static inline int lduw_be_p(const void *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v));
    return be16toh(v);
}

static inline void stw_be_p(void *p, uint16_t v)
{
    v = htobe16(v);
    memcpy(p, &v, sizeof(v));
}

#endif
