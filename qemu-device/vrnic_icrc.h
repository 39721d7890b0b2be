/*
 * vrnic ICRC: the RoCEv2 invariant CRC (IBTA Annex 17, A17.3.3) and the
 * CRC-32 it is built on.
 *
 * The ICRC is the standard CRC-32 (zlib's crc32(): reflected polynomial
 * 0xEDB88320, init 0xFFFFFFFF, final complement) of
 *   8 bytes of 0xFF (the LRH a RoCEv2 packet does not carry, masked)
 *   + IP header + UDP header + BTH + extension headers + payload + pad,
 * with the fields a router may change set to all ones:
 *   IPv4: TOS, TTL, header checksum;
 *   IPv6: traffic class, flow label, hop limit;
 *   UDP checksum; BTH byte 4 (FECN, BECN, reserved).
 * It is stored little-endian in the last 4 bytes of the IP packet, located
 * from the IP length (short Ethernet frames carry padding after it).
 * Checked against every RoCEv2 frame of a Linux rdma_rxe capture
 * (tests/test_pkt.c, tools/icrc-check).
 *
 * Pure functions over caller-owned buffers; the only state is the CRC-32
 * level (vrnic_crc32_limit()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_ICRC_H
#define HW_VRNIC_ICRC_H

#define VRNIC_ICRC_SIZE     4

/*
 * CRC-32 as zlib's crc32(crc, buf, len): pass 0 to start, the previous
 * result to continue. vrnic_crc32(0, "123456789", 9) == 0xCBF43926.
 */
uint32_t vrnic_crc32(uint32_t crc, const void *buf, size_t len);

/* How vrnic_crc32() computes: the fastest the host CPU has, by default. */
enum {
    VRNIC_CRC32_ZLIB,           /* zlib's crc32() */
    VRNIC_CRC32_PCLMUL,         /* x86 PCLMULQDQ, 128 bits wide */
    VRNIC_CRC32_VPCLMUL,        /* x86 VPCLMULQDQ and AVX-512, 512 wide */
};

/*
 * Use no level above max (the tests run each): returns the level
 * vrnic_crc32() uses from now on, the CPU's best up to max.
 */
unsigned vrnic_crc32_limit(unsigned max);

/*
 * ICRC of the IP packet at ip (IPv4 or IPv6, told by the version nibble),
 * whose length from the IP header is ip_len bytes, ICRC included: covers
 * the first ip_len - 4 bytes. ip_len must hold the IP header, the UDP
 * header, a BTH and the ICRC (vrnic_icrc_min_len()); if it does not (or the
 * version is neither 4 nor 6) the result is 0 and vrnic_icrc_check() fails.
 */
uint32_t vrnic_icrc_compute(const uint8_t *ip, size_t ip_len);

/*
 * Smallest ip_len vrnic_icrc_compute() accepts for this IP header, 0 if the
 * version nibble is neither 4 nor 6.
 */
size_t vrnic_icrc_min_len(const uint8_t *ip);

/* The ICRC stored in the last 4 bytes of the IP packet, and storing one. */
uint32_t vrnic_icrc_get(const uint8_t *ip, size_t ip_len);
void vrnic_icrc_set(uint8_t *ip, size_t ip_len);

/* Stored == computed; false if ip_len < vrnic_icrc_min_len(ip). */
bool vrnic_icrc_check(const uint8_t *ip, size_t ip_len);

/*
 * Find the IP packet of a RoCEv2 candidate in an Ethernet frame (no VLAN
 * tag): Ethertype IPv4/IPv6 with a matching version nibble, UDP, and an IP
 * length that the frame holds and that is at least vrnic_icrc_min_len().
 * Does not look at the UDP port. On success sets *ip_off and *ip_len (IP
 * header to ICRC inclusive; Ethernet padding excluded).
 */
bool vrnic_icrc_locate(const uint8_t *frame, size_t len, size_t *ip_off,
                       size_t *ip_len);

#endif
