/*
 * icrc-check: verify the ICRC of every RoCEv2 frame in a pcap file.
 *
 * tshark decodes RoCEv2 and displays the ICRC but never verifies it; this
 * tool does, with the device model's own code (qemu-device/vrnic_icrc.c and
 * vrnic_pkt.c), so the checker and the device cannot disagree on the rule.
 *
 * usage: icrc-check [-s] [-v] FILE.pcap
 *   -s  strict: a RoCEv2 frame must also pass vrnic_pkt_parse() (lengths,
 *       pad, opcode vrnic implements, ...), not only carry a good ICRC
 *   -v  print every RoCEv2 frame, not only the bad ones
 * A RoCEv2 frame is an Ethernet frame with IPv4/IPv6 + UDP destination port
 * 4791 (no VLAN tag). Prints one line per bad frame and the summary
 * "N RoCEv2 frames, N good, N bad"; exits 0 if none is bad, 1 if any is,
 * 2 if the file cannot be read (classic libpcap format, Ethernet link type,
 * either byte order, us or ns timestamps; pcapng is not read).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <errno.h>
#include <getopt.h>
#include "vrnic_pkt.h"

#define PCAP_LINKTYPE_ETHERNET  1

static uint32_t rd32(const uint8_t *p, bool swap)
{
    uint32_t v = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;

    return swap ? __builtin_bswap32(v) : v;
}

static uint16_t rd16be(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

/* IPv4/IPv6 + UDP with destination port 4791, as far as the frame shows. */
static bool is_rocev2(const uint8_t *f, size_t len)
{
    size_t l4;

    if (len < 14 + 20) {
        return false;
    }
    if (rd16be(f + 12) == ETH_P_IP && f[14 + 9] == IP_PROTO_UDP) {
        l4 = 14 + (f[14] & 0xf) * 4u;
    } else if (rd16be(f + 12) == ETH_P_IPV6 && len >= 14 + 40 &&
               f[14 + 6] == IP_PROTO_UDP) {
        l4 = 14 + 40;
    } else {
        return false;
    }
    return len >= l4 + 8 && rd16be(f + l4 + 2) == VRNIC_ROCE_UDP_DPORT;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: icrc-check [-s] [-v] FILE.pcap\n");
}

int main(int argc, char **argv)
{
    bool strict = false, verbose = false, swap;
    unsigned long frame_no = 0, roce = 0, good = 0, bad = 0;
    const char *path;
    uint8_t hdr[24], rec[16];
    uint8_t *buf = NULL;
    size_t bufsize = 0;
    uint32_t magic, linktype;
    FILE *f;
    int c;

    while ((c = getopt(argc, argv, "svh")) != -1) {
        switch (c) {
        case 's':
            strict = true;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    path = argv[optind];
    f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "icrc-check: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (fread(hdr, sizeof(hdr), 1, f) != 1) {
        fprintf(stderr, "icrc-check: %s: short pcap header\n", path);
        return 2;
    }
    magic = rd32(hdr, false);
    if (magic != 0xa1b2c3d4 && magic != 0xd4c3b2a1 &&
        magic != 0xa1b23c4d && magic != 0x4d3cb2a1) {
        fprintf(stderr, "icrc-check: %s: not a classic pcap file (magic "
                "%08x; convert pcapng with editcap -F pcap)\n", path, magic);
        return 2;
    }
    swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
    linktype = rd32(hdr + 20, swap) & 0x0fffffff;
    if (linktype != PCAP_LINKTYPE_ETHERNET) {
        fprintf(stderr, "icrc-check: %s: link type %u, need Ethernet (1)\n",
                path, linktype);
        return 2;
    }

    while (fread(rec, sizeof(rec), 1, f) == 1) {
        uint32_t incl = rd32(rec + 8, swap), orig = rd32(rec + 12, swap);
        size_t ip_off, ip_len;
        VrnicPktErr err;
        VrnicPkt pkt;

        frame_no++;
        if (incl > (1u << 20)) {
            fprintf(stderr, "icrc-check: %s: frame %lu: bad record length "
                    "%u\n", path, frame_no, incl);
            return 2;
        }
        if (incl > bufsize) {
            bufsize = incl;
            buf = realloc(buf, bufsize);
            if (!buf) {
                abort();
            }
        }
        if (incl && fread(buf, incl, 1, f) != 1) {
            fprintf(stderr, "icrc-check: %s: frame %lu: truncated file\n",
                    path, frame_no);
            return 2;
        }
        if (!is_rocev2(buf, incl)) {
            continue;
        }
        roce++;
        if (incl < orig) {
            printf("frame %lu: BAD: captured %u of %u bytes (snaplen), "
                   "ICRC not checkable\n", frame_no, incl, orig);
            bad++;
            continue;
        }
        if (!vrnic_icrc_locate(buf, incl, &ip_off, &ip_len)) {
            printf("frame %lu: BAD: IP/UDP lengths do not fit the frame "
                   "(%u bytes)\n", frame_no, incl);
            bad++;
            continue;
        }
        if (!vrnic_icrc_check(buf + ip_off, ip_len)) {
            uint32_t stored = vrnic_icrc_get(buf + ip_off, ip_len);
            uint32_t want = vrnic_icrc_compute(buf + ip_off, ip_len);

            /* tshark prints the ICRC's wire bytes as a big-endian number. */
            printf("frame %lu: BAD: ICRC stored %08x, computed %08x "
                   "(tshark notation %08x, %08x)\n", frame_no, stored, want,
                   __builtin_bswap32(stored), __builtin_bswap32(want));
            bad++;
            continue;
        }
        err = vrnic_pkt_parse(buf, incl, &pkt);
        if (err != VRNIC_PKT_OK) {
            printf("frame %lu: %s: ICRC good, parse: %s\n", frame_no,
                   strict ? "BAD" : "note", vrnic_pkt_err_str(err));
            if (strict) {
                bad++;
                continue;
            }
        } else if (verbose) {
            printf("frame %lu: ok: %s QP 0x%06x PSN %u, %u payload bytes, "
                   "ICRC %08x\n", frame_no, pkt.op->name, pkt.hdr.bth.dqpn,
                   pkt.hdr.bth.psn, pkt.payload_len, pkt.icrc);
        }
        good++;
    }
    if (ferror(f)) {
        fprintf(stderr, "icrc-check: %s: read error\n", path);
        return 2;
    }
    fclose(f);
    free(buf);
    printf("%lu RoCEv2 frames, %lu good, %lu bad\n", roce, good, bad);
    return bad ? 1 : 0;
}
