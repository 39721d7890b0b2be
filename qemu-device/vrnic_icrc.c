/*
 * vrnic ICRC (IBTA Annex 17) and a table-driven CRC-32; see vrnic_icrc.h.
 *
 * QEMU links no zlib into the device and glib has no CRC-32, so the CRC is
 * implemented here: the byte-at-a-time reflected table algorithm (the
 * "Sarwate" method zlib's portable path also uses), table built once at
 * compile time so there is no initialisation order to get wrong.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_icrc.h"

/* Reflected CRC-32 polynomial (IEEE 802.3, zlib). */
#define VRNIC_CRC32_POLY    0xEDB88320u

/* Header sizes the masking needs (full layouts live in vrnic_pkt.h). */
#define ICRC_ETH_HLEN       14
#define ICRC_IPV4_MIN_HLEN  20
#define ICRC_IPV4_MAX_HLEN  60
#define ICRC_IPV6_HLEN      40
#define ICRC_UDP_HLEN       8
#define ICRC_BTH_LEN        12
#define ICRC_PROTO_UDP      17

/* One table entry: the CRC of byte n, 8 shift/xor steps. */
#define T1(n) (((n) & 1) ? ((n) >> 1) ^ VRNIC_CRC32_POLY : (n) >> 1)
#define T2(n) T1(T1(n))
#define T4(n) T2(T2(n))
#define T8(n) T4(T4((uint32_t)(n)))
#define R4(n) T8(n), T8((n) + 1), T8((n) + 2), T8((n) + 3)
#define R16(n) R4(n), R4((n) + 4), R4((n) + 8), R4((n) + 12)
#define R64(n) R16(n), R16((n) + 16), R16((n) + 32), R16((n) + 48)

static const uint32_t vrnic_crc32_table[256] = {
    R64(0), R64(64), R64(128), R64(192),
};

uint32_t vrnic_crc32(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    crc = ~crc;
    while (len--) {
        crc = vrnic_crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

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
    /* Masked copy of IP + UDP + BTH: the only bytes the mask touches. */
    uint8_t hdr[ICRC_IPV4_MAX_HLEN + ICRC_UDP_HLEN + ICRC_BTH_LEN];
    static const uint8_t lrh[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    size_t hlen = icrc_ip_hlen(ip);
    size_t n = hlen + ICRC_UDP_HLEN + ICRC_BTH_LEN;
    uint32_t crc;

    if (!hlen || ip_len < n + VRNIC_ICRC_SIZE) {
        return 0;
    }
    memcpy(hdr, ip, n);
    if (hlen == ICRC_IPV6_HLEN) {
        /* Version stays; traffic class and flow label (the rest of the
         * first word) and hop limit become ones. */
        hdr[0] |= 0x0f;
        hdr[1] = hdr[2] = hdr[3] = 0xff;
        hdr[7] = 0xff;
    } else {
        hdr[1] = 0xff;                      /* TOS (DSCP + ECN) */
        hdr[8] = 0xff;                      /* TTL */
        hdr[10] = hdr[11] = 0xff;           /* header checksum */
    }
    hdr[hlen + 6] = hdr[hlen + 7] = 0xff;   /* UDP checksum */
    hdr[hlen + ICRC_UDP_HLEN + 4] = 0xff;   /* BTH: FECN, BECN, reserved */

    crc = vrnic_crc32(0, lrh, sizeof(lrh));
    crc = vrnic_crc32(crc, hdr, n);
    return vrnic_crc32(crc, ip + n, ip_len - n - VRNIC_ICRC_SIZE);
}

uint32_t vrnic_icrc_get(const uint8_t *ip, size_t ip_len)
{
    const uint8_t *p = ip + ip_len - VRNIC_ICRC_SIZE;

    /* Little-endian on the wire (the CRC register's bit order), unlike
     * every other multi-byte field of the packet. */
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
    const uint8_t *ip = frame + ICRC_ETH_HLEN;
    uint16_t ethertype;
    size_t n, avail;
    uint8_t proto;

    if (len < ICRC_ETH_HLEN + 1) {
        return false;
    }
    avail = len - ICRC_ETH_HLEN;
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
    if (proto != ICRC_PROTO_UDP || !vrnic_icrc_min_len(ip) ||
        n < vrnic_icrc_min_len(ip) || n > avail) {
        return false;
    }
    *ip_off = ICRC_ETH_HLEN;
    *ip_len = n;
    return true;
}
