/*
 * vrnic ICRC (IBTA Annex 17) and the CRC-32 under it; see vrnic_icrc.h.
 *
 * The ICRC is computed over every byte of every frame, twice per packet
 * (sender and receiver), so its speed bounds the data path: zlib's crc32()
 * runs at about 2 GB/s, a carry-less-multiply fold at more than 10, and
 * the same fold four 512-bit registers wide (VPCLMULQDQ with AVX-512) at
 * several times that. On an x86 host with PCLMULQDQ the fold takes the
 * 16-byte blocks and zlib the rest; elsewhere zlib does it all. Each level
 * is checked against zlib at every length and alignment by
 * tests/test_pkt.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <zlib.h>
#include "net/eth.h"
#include "vrnic_icrc.h"

#if defined(HOST_X86_64) || defined(HOST_I386)
#include <immintrin.h>

/*
 * Constants of the reflected polynomial 0xEDB88320 for the method of
 * Intel's "Fast CRC Computation Using PCLMULQDQ" paper: powers x^n mod P(x),
 * bit-reflected, that move a remainder forward by 512 bits (K1, K2: four
 * blocks in flight), by 128 (K3, K4), and down from 64 bits to 32 (K5);
 * then Barrett's mu = x^64 / P and P itself (33 bits each).
 */
#define CRC32_K1        0x154442bd4ull
#define CRC32_K2        0x1c6e41596ull
#define CRC32_K3        0x1751997d0ull
#define CRC32_K4        0x0ccaa009eull
#define CRC32_K5        0x163cd6124ull
#define CRC32_P         0x1db710641ull
#define CRC32_MU        0x1f7011641ull

/*
 * The same for the wide fold: by 2048 bits (sixteen blocks in flight, four
 * per 512-bit register), and by 384 and 256 bits to fold the four blocks
 * of the last register into one.
 */
#define CRC32_K2048_LO  0x11542778aull
#define CRC32_K2048_HI  0x1322d1430ull
#define CRC32_K384_LO   0x03db1ecdcull
#define CRC32_K384_HI   0x174359406ull
#define CRC32_K256_LO   0x0f1da05aaull
#define CRC32_K256_HI   0x15a546366ull

/*
 * The running 128-bit remainder x multiplied forward by 128 or 512 bits
 * (k's two halves) and added to the next block.
 */
__attribute__((target("pclmul,sse4.1")))
static inline __m128i crc32_fold(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/*
 * The CRC register (not complemented) after the bytes whose 128-bit
 * remainder is x0 and then len more at p (a multiple of 16, possibly 0).
 * Four blocks in flight when there are.
 */
__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_pclmul_from(__m128i x0, const uint8_t *p, size_t len)
{
    const __m128i k12 = _mm_set_epi64x(CRC32_K2, CRC32_K1);
    const __m128i k34 = _mm_set_epi64x(CRC32_K4, CRC32_K3);
    const __m128i k5 = _mm_set_epi64x(0, CRC32_K5);
    const __m128i pmu = _mm_set_epi64x(CRC32_MU, CRC32_P);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x1, x2, x3, t;

    if (len >= 48) {
        x1 = _mm_loadu_si128((const void *)p);
        x2 = _mm_loadu_si128((const void *)(p + 16));
        x3 = _mm_loadu_si128((const void *)(p + 32));
        for (p += 48, len -= 48; len >= 64; p += 64, len -= 64) {
            x0 = crc32_fold(x0, k12, _mm_loadu_si128((const void *)p));
            x1 = crc32_fold(x1, k12, _mm_loadu_si128((const void *)(p + 16)));
            x2 = crc32_fold(x2, k12, _mm_loadu_si128((const void *)(p + 32)));
            x3 = crc32_fold(x3, k12, _mm_loadu_si128((const void *)(p + 48)));
        }
        x0 = crc32_fold(x0, k34, x1);
        x0 = crc32_fold(x0, k34, x2);
        x0 = crc32_fold(x0, k34, x3);
    }
    for (; len >= 16; p += 16, len -= 16) {
        x0 = crc32_fold(x0, k34, _mm_loadu_si128((const void *)p));
    }
    /* 128 to 64 bits, 64 to 32, then Barrett reduction to the remainder. */
    t = _mm_clmulepi64_si128(k34, x0, 0x01);
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
    t = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), k5, 0x00);
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 4), t);
    t = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), pmu, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), pmu, 0x00);
    return _mm_extract_epi32(_mm_xor_si128(x0, t), 1);
}

/* The CRC register after len bytes at p, from reg; len >= 16, 16 | len. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_pclmul(uint32_t reg, const uint8_t *p, size_t len)
{
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const void *)p),
                               _mm_cvtsi32_si128(reg));

    return crc32_pclmul_from(x0, p + 16, len - 16);
}

#define CRC32_WIDE_TARGET "avx512f,vpclmulqdq,pclmul,sse4.1"

/* crc32_fold() on four blocks at once. */
__attribute__((target(CRC32_WIDE_TARGET)))
static inline __m512i crc32_fold4(__m512i x, __m512i k, __m512i next)
{
    __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00);
    __m512i hi = _mm512_clmulepi64_epi128(x, k, 0x11);

    return _mm512_xor_si512(_mm512_xor_si512(lo, hi), next);
}

/*
 * crc32_pclmul() with sixteen blocks in flight over the largest multiple
 * of 256 bytes, then four at a time over the rest; len >= 256.
 */
__attribute__((target(CRC32_WIDE_TARGET)))
static uint32_t crc32_vpclmul(uint32_t reg, const uint8_t *p, size_t len)
{
    const __m512i k2048 = _mm512_set_epi64(CRC32_K2048_HI, CRC32_K2048_LO,
                                           CRC32_K2048_HI, CRC32_K2048_LO,
                                           CRC32_K2048_HI, CRC32_K2048_LO,
                                           CRC32_K2048_HI, CRC32_K2048_LO);
    const __m512i k512 = _mm512_set_epi64(CRC32_K2, CRC32_K1,
                                          CRC32_K2, CRC32_K1,
                                          CRC32_K2, CRC32_K1,
                                          CRC32_K2, CRC32_K1);
    /* Block i of the last register moves forward by 384, 256, 128, 0. */
    const __m512i klast = _mm512_set_epi64(0, 0, CRC32_K4, CRC32_K3,
                                           CRC32_K256_HI, CRC32_K256_LO,
                                           CRC32_K384_HI, CRC32_K384_LO);
    __m512i z0, z1, z2, z3;
    __m128i b[4];

    z0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                          _mm512_inserti32x4(_mm512_setzero_si512(),
                                             _mm_cvtsi32_si128(reg), 0));
    z1 = _mm512_loadu_si512(p + 64);
    z2 = _mm512_loadu_si512(p + 128);
    z3 = _mm512_loadu_si512(p + 192);
    for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
        z0 = crc32_fold4(z0, k2048, _mm512_loadu_si512(p));
        z1 = crc32_fold4(z1, k2048, _mm512_loadu_si512(p + 64));
        z2 = crc32_fold4(z2, k2048, _mm512_loadu_si512(p + 128));
        z3 = crc32_fold4(z3, k2048, _mm512_loadu_si512(p + 192));
    }
    z1 = crc32_fold4(z0, k512, z1);
    z2 = crc32_fold4(z1, k512, z2);
    z3 = crc32_fold4(z2, k512, z3);
    /*
     * Blocks 0-2 moved forward onto block 3 (klast's zeros drop block 3
     * from the products; the masked z3 adds it back), then the four added
     * up. Through memory: GCC 12 warns about the undefined operand of the
     * lane-moving intrinsics.
     */
    z0 = crc32_fold4(z3, klast, _mm512_maskz_mov_epi64(0xc0, z3));
    _mm512_storeu_si512(b, z0);
    return crc32_pclmul_from(_mm_xor_si128(_mm_xor_si128(b[0], b[1]),
                                           _mm_xor_si128(b[2], b[3])),
                             p, len);
}

/* The fastest level this CPU has. */
static unsigned crc32_cpu_level(void)
{
    static int level = -1;

    if (level < 0) {
        __builtin_cpu_init();
        level = VRNIC_CRC32_ZLIB;
        if (__builtin_cpu_supports("pclmul") &&
            __builtin_cpu_supports("sse4.1")) {
            level = VRNIC_CRC32_PCLMUL;
            if (__builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("vpclmulqdq")) {
                level = VRNIC_CRC32_VPCLMUL;
            }
        }
    }
    return level;
}

static unsigned crc32_max_level = VRNIC_CRC32_VPCLMUL;

unsigned vrnic_crc32_limit(unsigned max)
{
    crc32_max_level = max;
    return MIN(max, crc32_cpu_level());
}

uint32_t vrnic_crc32(uint32_t crc, const void *buf, size_t len)
{
    unsigned level = MIN(crc32_max_level, crc32_cpu_level());
    size_t n = len & ~(size_t)15;

    if (n >= 256 && level >= VRNIC_CRC32_VPCLMUL) {
        crc = ~crc32_vpclmul(~crc, buf, n);
    } else if (n && level >= VRNIC_CRC32_PCLMUL) {
        crc = ~crc32_pclmul(~crc, buf, n);
    } else {
        n = 0;
    }
    return crc32_z(crc, (const uint8_t *)buf + n, len - n);
}
#else
unsigned vrnic_crc32_limit(unsigned max)
{
    return VRNIC_CRC32_ZLIB;
}

uint32_t vrnic_crc32(uint32_t crc, const void *buf, size_t len)
{
    return crc32_z(crc, buf, len);
}
#endif

/* Header sizes the masking needs: QEMU's (net/eth.h), and the BTH's. */
#define ICRC_IPV4_MIN_HLEN  sizeof(struct ip_header)
#define ICRC_IPV4_MAX_HLEN  ETH_MAX_IP4_HDR_LEN
#define ICRC_IPV6_HLEN      sizeof(struct ip6_header)
#define ICRC_UDP_HLEN       sizeof(udp_header)
#define ICRC_BTH_LEN        12

/* IP header length of a packet starting at ip: 0 if not IPv4/IPv6. */
static size_t icrc_ip_hlen(const uint8_t *ip)
{
    switch (ip[0] >> 4) {
    case 4: {
        size_t hlen = (ip[0] & 0xf) * 4u;

        return hlen >= ICRC_IPV4_MIN_HLEN ? hlen : 0;
    }
    case 6:
        return ICRC_IPV6_HLEN;
    default:
        return 0;
    }
}

size_t vrnic_icrc_min_len(const uint8_t *ip)
{
    size_t hlen = icrc_ip_hlen(ip);

    return hlen ? hlen + ICRC_UDP_HLEN + ICRC_BTH_LEN + VRNIC_ICRC_SIZE : 0;
}

uint32_t vrnic_icrc_compute(const uint8_t *ip, size_t ip_len)
{
    /*
     * The masked LRH (8 bytes of ones), a masked copy of IP + UDP + BTH and
     * as much of what follows as completes a 16-byte block: one buffer of
     * whole blocks, so the fast CRC covers the headers too.
     */
    uint8_t hdr[8 + ICRC_IPV4_MAX_HLEN + ICRC_UDP_HLEN + ICRC_BTH_LEN + 15];
    size_t hlen = icrc_ip_hlen(ip);
    size_t n = hlen + ICRC_UDP_HLEN + ICRC_BTH_LEN;
    size_t rest, more;
    uint8_t *h = hdr + 8;

    if (!hlen || ip_len < n + VRNIC_ICRC_SIZE) {
        return 0;
    }
    rest = ip_len - n - VRNIC_ICRC_SIZE;
    more = MIN(-(8 + n) & 15, rest);
    memset(hdr, 0xff, 8);
    memcpy(h, ip, n + more);
    if (hlen == ICRC_IPV6_HLEN) {
        /*
         * Version stays; traffic class and flow label (the rest of the
         * first word) and hop limit become ones.
         */
        h[0] |= 0x0f;
        h[1] = h[2] = h[3] = 0xff;
        h[7] = 0xff;
    } else {
        h[1] = 0xff;                        /* TOS (DSCP + ECN) */
        h[8] = 0xff;                        /* TTL */
        h[10] = h[11] = 0xff;               /* header checksum */
    }
    h[hlen + 6] = h[hlen + 7] = 0xff;       /* UDP checksum */
    h[hlen + ICRC_UDP_HLEN + 4] = 0xff;     /* BTH: FECN, BECN, reserved */

    return vrnic_crc32(vrnic_crc32(0, hdr, 8 + n + more), ip + n + more,
                       rest - more);
}

uint32_t vrnic_icrc_get(const uint8_t *ip, size_t ip_len)
{
    const uint8_t *p = ip + ip_len - VRNIC_ICRC_SIZE;

    /*
     * Little-endian on the wire (the CRC register's bit order), unlike
     * every other multi-byte field of the packet.
     */
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

void vrnic_icrc_set(uint8_t *ip, size_t ip_len)
{
    uint32_t icrc = vrnic_icrc_compute(ip, ip_len);
    uint8_t *p = ip + ip_len - VRNIC_ICRC_SIZE;

    p[0] = icrc;
    p[1] = icrc >> 8;
    p[2] = icrc >> 16;
    p[3] = icrc >> 24;
}

bool vrnic_icrc_check(const uint8_t *ip, size_t ip_len)
{
    size_t min = vrnic_icrc_min_len(ip);

    return min && ip_len >= min &&
           vrnic_icrc_compute(ip, ip_len) == vrnic_icrc_get(ip, ip_len);
}

bool vrnic_icrc_locate(const uint8_t *frame, size_t len, size_t *ip_off,
                       size_t *ip_len)
{
    const uint8_t *ip = frame + ETH_HLEN;
    uint16_t ethertype;
    size_t n, avail;
    uint8_t proto;

    if (len < ETH_HLEN + 1) {
        return false;
    }
    avail = len - ETH_HLEN;
    ethertype = frame[12] << 8 | frame[13];
    if (ethertype == 0x0800 && ip[0] >> 4 == 4) {
        if (avail < ICRC_IPV4_MIN_HLEN) {
            return false;
        }
        n = ip[2] << 8 | ip[3];             /* total length */
        proto = ip[9];
    } else if (ethertype == 0x86dd && ip[0] >> 4 == 6) {
        if (avail < ICRC_IPV6_HLEN) {
            return false;
        }
        n = ICRC_IPV6_HLEN + (ip[4] << 8 | ip[5]);  /* + payload length */
        proto = ip[6];
    } else {
        return false;
    }
    if (proto != IP_PROTO_UDP || !vrnic_icrc_min_len(ip) ||
        n < vrnic_icrc_min_len(ip) || n > avail) {
        return false;
    }
    *ip_off = ETH_HLEN;
    *ip_len = n;
    return true;
}
