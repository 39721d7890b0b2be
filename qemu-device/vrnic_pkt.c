/*
 * vrnic RoCEv2 packet codec: the opcode table, the frame builder and the
 * validating parser; see vrnic_pkt.h.
 *
 * Byte-order rule: wire structs are read and written only here, through
 * qemu/bswap.h; every value crossing this file's API is host-order.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "net/checksum.h"
#include "vrnic_pkt.h"

#define IPV4_HLEN       sizeof(struct ip_header)
#define IPV6_HLEN       sizeof(struct ip6_header)
#define UDP_HLEN        sizeof(udp_header)
#define BTH_LEN         sizeof(struct vrnic_bth)

/*
 * ---------------------------------------------------------------------------
 * Opcode table (IBTA Vol 1 Table 38 and 9.4; compare rxe_opcode.c).
 */
#define HLEN(h)                                                           \
    (BTH_LEN +                                                            \
     (((h) & VRNIC_HDR_XRCETH) ? sizeof(struct vrnic_xrceth) : 0) +       \
     (((h) & VRNIC_HDR_DETH) ? sizeof(struct vrnic_deth) : 0) +           \
     (((h) & VRNIC_HDR_FETH) ? sizeof(struct vrnic_feth) : 0) +           \
     (((h) & VRNIC_HDR_RETH) ? sizeof(struct vrnic_reth) : 0) +           \
     (((h) & VRNIC_HDR_ATOMIC) ? sizeof(struct vrnic_atomic_eth) : 0) +   \
     (((h) & VRNIC_HDR_AETH) ? sizeof(struct vrnic_aeth) : 0) +           \
     (((h) & VRNIC_HDR_ATOMIC_ACK) ?                                      \
      sizeof(struct vrnic_atomic_ack_eth) : 0) +                          \
     (((h) & VRNIC_HDR_IMM) ? sizeof(struct vrnic_immdt) : 0) +           \
     (((h) & VRNIC_HDR_IETH) ? sizeof(struct vrnic_ieth) : 0))

#define OPE(tr, op, nm, h, f)                                             \
    [VRNIC_OP(tr, op)] = { #tr " " nm, (h), (f), HLEN(h) }

#define P       VRNIC_OPF_PAYLOAD
#define F       VRNIC_OPF_FIRST
#define L       VRNIC_OPF_LAST
#define RQ      VRNIC_OPF_REQ
#define SND     (VRNIC_OPF_SEND | RQ | P)
#define WR      (VRNIC_OPF_WRITE | RQ | P)
#define IMMF    VRNIC_OPF_IMM
#define IMMH    VRNIC_HDR_IMM
#define RETH    VRNIC_HDR_RETH
#define XRCH    VRNIC_HDR_XRCETH

/*
 * RC, UC and XRC share the SEND and RDMA WRITE opcodes, RC and XRC the
 * other RC operations; XRC requests carry the XRCETH. IBTA 1.5's XRC forms
 * of FLUSH and ATOMIC WRITE are not implemented.
 */
static const VrnicOpInfo vrnic_opcodes[256] = {
    /* RC */
    OPE(RC, SEND_FIRST, "SEND FIRST", 0, SND | F),
    OPE(RC, SEND_MIDDLE, "SEND MIDDLE", 0, SND),
    OPE(RC, SEND_LAST, "SEND LAST", 0, SND | L),
    OPE(RC, SEND_LAST_IMM, "SEND LAST IMM", IMMH, SND | L | IMMF),
    OPE(RC, SEND_ONLY, "SEND ONLY", 0, SND | F | L),
    OPE(RC, SEND_ONLY_IMM, "SEND ONLY IMM", IMMH, SND | F | L | IMMF),
    OPE(RC, WRITE_FIRST, "RDMA WRITE FIRST", RETH, WR | F),
    OPE(RC, WRITE_MIDDLE, "RDMA WRITE MIDDLE", 0, WR),
    OPE(RC, WRITE_LAST, "RDMA WRITE LAST", 0, WR | L),
    OPE(RC, WRITE_LAST_IMM, "RDMA WRITE LAST IMM", IMMH, WR | L | IMMF),
    OPE(RC, WRITE_ONLY, "RDMA WRITE ONLY", RETH, WR | F | L),
    OPE(RC, WRITE_ONLY_IMM, "RDMA WRITE ONLY IMM", RETH | IMMH,
        WR | F | L | IMMF),
    OPE(RC, READ_REQ, "RDMA READ REQUEST", RETH, VRNIC_OPF_READ | RQ | F | L),
    OPE(RC, READ_RESP_FIRST, "RDMA READ RESPONSE FIRST", VRNIC_HDR_AETH,
        VRNIC_OPF_READ | P | F),
    OPE(RC, READ_RESP_MIDDLE, "RDMA READ RESPONSE MIDDLE", 0,
        VRNIC_OPF_READ | P),
    OPE(RC, READ_RESP_LAST, "RDMA READ RESPONSE LAST", VRNIC_HDR_AETH,
        VRNIC_OPF_READ | P | L),
    OPE(RC, READ_RESP_ONLY, "RDMA READ RESPONSE ONLY", VRNIC_HDR_AETH,
        VRNIC_OPF_READ | P | F | L),
    OPE(RC, ACK, "ACKNOWLEDGE", VRNIC_HDR_AETH, VRNIC_OPF_ACK | F | L),
    OPE(RC, ATOMIC_ACK, "ATOMIC ACKNOWLEDGE",
        VRNIC_HDR_AETH | VRNIC_HDR_ATOMIC_ACK, VRNIC_OPF_ATOMIC | F | L),
    OPE(RC, CMP_SWAP, "CMP_SWAP", VRNIC_HDR_ATOMIC,
        VRNIC_OPF_ATOMIC | RQ | F | L),
    OPE(RC, FETCH_ADD, "FETCH_ADD", VRNIC_HDR_ATOMIC,
        VRNIC_OPF_ATOMIC | RQ | F | L),
    OPE(RC, SEND_LAST_INV, "SEND LAST INV", VRNIC_HDR_IETH,
        SND | L | VRNIC_OPF_INV),
    OPE(RC, SEND_ONLY_INV, "SEND ONLY INV", VRNIC_HDR_IETH,
        SND | F | L | VRNIC_OPF_INV),
    OPE(RC, FLUSH, "FLUSH", VRNIC_HDR_FETH | RETH,
        VRNIC_OPF_RD_ACKED | RQ | F | L),
    OPE(RC, ATOMIC_WRITE, "ATOMIC WRITE", RETH,
        VRNIC_OPF_RD_ACKED | RQ | P | F | L),
    /* UC */
    OPE(UC, SEND_FIRST, "SEND FIRST", 0, SND | F),
    OPE(UC, SEND_MIDDLE, "SEND MIDDLE", 0, SND),
    OPE(UC, SEND_LAST, "SEND LAST", 0, SND | L),
    OPE(UC, SEND_LAST_IMM, "SEND LAST IMM", IMMH, SND | L | IMMF),
    OPE(UC, SEND_ONLY, "SEND ONLY", 0, SND | F | L),
    OPE(UC, SEND_ONLY_IMM, "SEND ONLY IMM", IMMH, SND | F | L | IMMF),
    OPE(UC, WRITE_FIRST, "RDMA WRITE FIRST", RETH, WR | F),
    OPE(UC, WRITE_MIDDLE, "RDMA WRITE MIDDLE", 0, WR),
    OPE(UC, WRITE_LAST, "RDMA WRITE LAST", 0, WR | L),
    OPE(UC, WRITE_LAST_IMM, "RDMA WRITE LAST IMM", IMMH, WR | L | IMMF),
    OPE(UC, WRITE_ONLY, "RDMA WRITE ONLY", RETH, WR | F | L),
    OPE(UC, WRITE_ONLY_IMM, "RDMA WRITE ONLY IMM", RETH | IMMH,
        WR | F | L | IMMF),
    /* XRC */
    OPE(XRC, SEND_FIRST, "SEND FIRST", XRCH, SND | F),
    OPE(XRC, SEND_MIDDLE, "SEND MIDDLE", XRCH, SND),
    OPE(XRC, SEND_LAST, "SEND LAST", XRCH, SND | L),
    OPE(XRC, SEND_LAST_IMM, "SEND LAST IMM", XRCH | IMMH, SND | L | IMMF),
    OPE(XRC, SEND_ONLY, "SEND ONLY", XRCH, SND | F | L),
    OPE(XRC, SEND_ONLY_IMM, "SEND ONLY IMM", XRCH | IMMH, SND | F | L | IMMF),
    OPE(XRC, WRITE_FIRST, "RDMA WRITE FIRST", XRCH | RETH, WR | F),
    OPE(XRC, WRITE_MIDDLE, "RDMA WRITE MIDDLE", XRCH, WR),
    OPE(XRC, WRITE_LAST, "RDMA WRITE LAST", XRCH, WR | L),
    OPE(XRC, WRITE_LAST_IMM, "RDMA WRITE LAST IMM", XRCH | IMMH, WR | L | IMMF),
    OPE(XRC, WRITE_ONLY, "RDMA WRITE ONLY", XRCH | RETH, WR | F | L),
    OPE(XRC, WRITE_ONLY_IMM, "RDMA WRITE ONLY IMM", XRCH | RETH | IMMH,
        WR | F | L | IMMF),
    OPE(XRC, READ_REQ, "RDMA READ REQUEST", XRCH | RETH,
        VRNIC_OPF_READ | RQ | F | L),
    OPE(XRC, READ_RESP_FIRST, "RDMA READ RESPONSE FIRST", VRNIC_HDR_AETH,
        VRNIC_OPF_READ | P | F),
    OPE(XRC, READ_RESP_MIDDLE, "RDMA READ RESPONSE MIDDLE", 0,
        VRNIC_OPF_READ | P),
    OPE(XRC, READ_RESP_LAST, "RDMA READ RESPONSE LAST", VRNIC_HDR_AETH,
        VRNIC_OPF_READ | P | L),
    OPE(XRC, READ_RESP_ONLY, "RDMA READ RESPONSE ONLY", VRNIC_HDR_AETH,
        VRNIC_OPF_READ | P | F | L),
    OPE(XRC, ACK, "ACKNOWLEDGE", VRNIC_HDR_AETH, VRNIC_OPF_ACK | F | L),
    OPE(XRC, ATOMIC_ACK, "ATOMIC ACKNOWLEDGE",
        VRNIC_HDR_AETH | VRNIC_HDR_ATOMIC_ACK, VRNIC_OPF_ATOMIC | F | L),
    OPE(XRC, CMP_SWAP, "CMP_SWAP", XRCH | VRNIC_HDR_ATOMIC,
        VRNIC_OPF_ATOMIC | RQ | F | L),
    OPE(XRC, FETCH_ADD, "FETCH_ADD", XRCH | VRNIC_HDR_ATOMIC,
        VRNIC_OPF_ATOMIC | RQ | F | L),
    OPE(XRC, SEND_LAST_INV, "SEND LAST INV", XRCH | VRNIC_HDR_IETH,
        SND | L | VRNIC_OPF_INV),
    OPE(XRC, SEND_ONLY_INV, "SEND ONLY INV", XRCH | VRNIC_HDR_IETH,
        SND | F | L | VRNIC_OPF_INV),
    /* UD */
    OPE(UD, SEND_ONLY, "SEND ONLY", VRNIC_HDR_DETH, SND | F | L),
    OPE(UD, SEND_ONLY_IMM, "SEND ONLY IMM", VRNIC_HDR_DETH | IMMH,
        SND | F | L | IMMF),
};

#undef P
#undef F
#undef L
#undef RQ
#undef SND
#undef WR
#undef IMMF
#undef IMMH
#undef RETH
#undef XRCH

const VrnicOpInfo *vrnic_pkt_opinfo(uint8_t opcode)
{
    const VrnicOpInfo *op = &vrnic_opcodes[opcode];

    return op->name ? op : NULL;
}

unsigned vrnic_pkt_hdr_size(unsigned hdr)
{
    switch (hdr) {
    case VRNIC_HDR_XRCETH:
        return sizeof(struct vrnic_xrceth);
    case VRNIC_HDR_DETH:
        return sizeof(struct vrnic_deth);
    case VRNIC_HDR_FETH:
        return sizeof(struct vrnic_feth);
    case VRNIC_HDR_RETH:
        return sizeof(struct vrnic_reth);
    case VRNIC_HDR_ATOMIC:
        return sizeof(struct vrnic_atomic_eth);
    case VRNIC_HDR_AETH:
        return sizeof(struct vrnic_aeth);
    case VRNIC_HDR_ATOMIC_ACK:
        return sizeof(struct vrnic_atomic_ack_eth);
    case VRNIC_HDR_IMM:
        return sizeof(struct vrnic_immdt);
    case VRNIC_HDR_IETH:
        return sizeof(struct vrnic_ieth);
    default:
        return 0;
    }
}

unsigned vrnic_pkt_hdr_offset(uint8_t opcode, unsigned hdr)
{
    const VrnicOpInfo *op = vrnic_pkt_opinfo(opcode);
    unsigned off = BTH_LEN;

    if (!op || !(op->hdrs & hdr)) {
        return 0;
    }
    /* Headers follow the BTH in VRNIC_HDR_* bit order. */
    for (unsigned b = 1; b < hdr; b <<= 1) {
        if (op->hdrs & b) {
            off += vrnic_pkt_hdr_size(b);
        }
    }
    return off;
}

/*
 * ---------------------------------------------------------------------------
 * Small helpers.
 */
static const uint8_t vrnic_v4mapped_prefix[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
};

bool vrnic_gid_is_ipv4(const uint8_t gid[16])
{
    return !memcmp(gid, vrnic_v4mapped_prefix, sizeof(vrnic_v4mapped_prefix));
}

uint32_t vrnic_calc_flow_label(uint32_t lqpn, uint32_t rqpn)
{
    /* rdma_calc_flow_label(): fold the 48-bit product to 20 bits. */
    uint64_t v = (uint64_t)lqpn * rqpn;

    v ^= v >> 20;
    v ^= v >> 40;
    return (uint32_t)(v & VRNIC_IPV6_FLOW_MASK);
}

uint16_t vrnic_pkt_udp_sport(uint32_t flow_label, uint32_t lqpn,
                             uint32_t rqpn)
{
    uint32_t fl = flow_label;

    if (!fl) {
        fl = vrnic_calc_flow_label(lqpn, rqpn);
    }
    /* rdma_flow_label_to_udp_sport(): low 14 bits xor bits 19:14. */
    fl = (fl & 0x3fff) ^ ((fl & 0xfc000) >> 14);
    return (uint16_t)(fl | VRNIC_ROCE_SPORT_BASE);
}

uint32_t vrnic_read_psns(uint32_t len, uint32_t pmtu)
{
    uint32_t n = len / pmtu + (len % pmtu != 0);

    return n ? n : 1;
}

static const uint16_t vrnic_aeth_credits[VRNIC_AETH_CREDITS_INVALID] = {
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
    512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768,
};

uint8_t vrnic_aeth_credit_code(uint32_t n)
{
    uint8_t c = 0;

    while (c + 1 < VRNIC_AETH_CREDITS_INVALID &&
           vrnic_aeth_credits[c + 1] <= n) {
        c++;
    }
    return c;
}

uint32_t vrnic_aeth_credit_count(uint8_t code)
{
    return code < VRNIC_AETH_CREDITS_INVALID ? vrnic_aeth_credits[code] : 0;
}

/*
 * The sum (net/checksum.h) of the UDP pseudo header and datagram: a
 * received datagram verifies when net_checksum_finish() of it, computed
 * with the check field left in, is 0. The checksum API takes non-const
 * buffers but only reads them.
 */
static uint32_t udp_csum_sum(const uint8_t *ip, bool v6, const uint8_t *udp,
                             uint32_t udp_len)
{
    /* Source and destination address follow each other in both headers. */
    const uint8_t *addrs = ip + (v6 ? offsetof(struct ip6_header, ip6_src) :
                                      offsetof(struct ip_header, ip_src));
    uint32_t sum = net_checksum_add(v6 ? 32 : 8, (uint8_t *)addrs);

    sum += IP_PROTO_UDP + udp_len;          /* same words for v4 and v6 */
    return sum + net_checksum_add(udp_len, (uint8_t *)udp);
}

const char *vrnic_pkt_err_str(VrnicPktErr err)
{
    static const char *const names[VRNIC_PKT_ERR__MAX] = {
        [VRNIC_PKT_OK] = "ok",
        [VRNIC_PKT_ERR_RUNT] = "runt",
        [VRNIC_PKT_ERR_NOT_IP] = "not-ip",
        [VRNIC_PKT_ERR_NOT_UDP] = "not-udp",
        [VRNIC_PKT_ERR_UDP_PORT] = "udp-port",
        [VRNIC_PKT_ERR_TRUNCATED] = "truncated",
        [VRNIC_PKT_ERR_IP_VERSION] = "ip-version",
        [VRNIC_PKT_ERR_IP_HDR] = "ip-header",
        [VRNIC_PKT_ERR_IP_CSUM] = "ip-checksum",
        [VRNIC_PKT_ERR_LENGTH] = "length",
        [VRNIC_PKT_ERR_UDP_CSUM] = "udp-checksum",
        [VRNIC_PKT_ERR_TVER] = "bth-tver",
        [VRNIC_PKT_ERR_OPCODE] = "opcode",
        [VRNIC_PKT_ERR_HDR_LEN] = "header-length",
        [VRNIC_PKT_ERR_PAD] = "pad",
        [VRNIC_PKT_ERR_ICRC] = "icrc",
    };

    return (unsigned)err < VRNIC_PKT_ERR__MAX ? names[err] : "?";
}

bool vrnic_pkt_err_is_foreign(VrnicPktErr err)
{
    return err == VRNIC_PKT_ERR_RUNT || err == VRNIC_PKT_ERR_NOT_IP ||
           err == VRNIC_PKT_ERR_NOT_UDP || err == VRNIC_PKT_ERR_UDP_PORT;
}

/*
 * ---------------------------------------------------------------------------
 * Parser.
 */
static void parse_ext(const uint8_t *bth_p, const VrnicOpInfo *op,
                      VrnicPktHdrs *h)
{
    const uint8_t *p = bth_p + BTH_LEN;

    /* Same order as HLEN()/vrnic_pkt_hdr_offset(). */
    if (op->hdrs & VRNIC_HDR_XRCETH) {
        const struct vrnic_xrceth *x = (const void *)p;

        h->xrc_srqn = be32_to_cpu(x->srqn) & VRNIC_XRC_SRQN_MASK;
        p += sizeof(*x);
    }
    if (op->hdrs & VRNIC_HDR_DETH) {
        const struct vrnic_deth *d = (const void *)p;

        h->deth.qkey = be32_to_cpu(d->qkey);
        h->deth.sqpn = be32_to_cpu(d->sqpn) & VRNIC_IB_QPN_MASK;
        p += sizeof(*d);
    }
    if (op->hdrs & VRNIC_HDR_FETH) {
        const struct vrnic_feth *f = (const void *)p;

        h->feth = be32_to_cpu(f->bits) & VRNIC_FETH_MASK;
        p += sizeof(*f);
    }
    if (op->hdrs & VRNIC_HDR_RETH) {
        const struct vrnic_reth *r = (const void *)p;

        h->reth.va = be64_to_cpu(r->va);
        h->reth.rkey = be32_to_cpu(r->rkey);
        h->reth.len = be32_to_cpu(r->len);
        p += sizeof(*r);
    }
    if (op->hdrs & VRNIC_HDR_ATOMIC) {
        const struct vrnic_atomic_eth *a = (const void *)p;

        h->atomic.va = be64_to_cpu(a->va);
        h->atomic.rkey = be32_to_cpu(a->rkey);
        h->atomic.swap_add = be64_to_cpu(a->swap_add);
        h->atomic.compare = be64_to_cpu(a->compare);
        p += sizeof(*a);
    }
    if (op->hdrs & VRNIC_HDR_AETH) {
        const struct vrnic_aeth *a = (const void *)p;
        uint32_t smsn = be32_to_cpu(a->smsn);

        h->aeth.syndrome = VRNIC_FIELD_GET(VRNIC_AETH_SYN_MASK, smsn);
        h->aeth.msn = VRNIC_FIELD_GET(VRNIC_AETH_MSN_MASK, smsn);
        p += sizeof(*a);
    }
    if (op->hdrs & VRNIC_HDR_ATOMIC_ACK) {
        const struct vrnic_atomic_ack_eth *a = (const void *)p;

        h->atomic_orig = be64_to_cpu(a->orig);
        p += sizeof(*a);
    }
    if (op->hdrs & VRNIC_HDR_IMM) {
        const struct vrnic_immdt *i = (const void *)p;

        h->imm = be32_to_cpu(i->imm);
        p += sizeof(*i);
    }
    if (op->hdrs & VRNIC_HDR_IETH) {
        const struct vrnic_ieth *i = (const void *)p;

        h->ieth_rkey = be32_to_cpu(i->rkey);
    }
}

/* An IPv4 header: its checks up to the UDP header, and the addresses. */
static VrnicPktErr parse_ip4(const uint8_t *ip, size_t avail, VrnicPkt *p)
{
    struct ip_header h;

    if (avail < IPV4_HLEN) {
        return VRNIC_PKT_ERR_RUNT;
    }
    memcpy(&h, ip, sizeof(h));
    if (h.ip_ver_len >> 4 != IP_HEADER_VERSION_4) {
        return VRNIC_PKT_ERR_IP_VERSION;
    }
    /* A non-first fragment has no UDP header to look at. */
    if (h.ip_p != IP_PROTO_UDP || (be16_to_cpu(h.ip_off) & IP_OFFMASK)) {
        return VRNIC_PKT_ERR_NOT_UDP;
    }
    p->ip_hdr_len = (h.ip_ver_len & 0xf) * 4u;
    if (p->ip_hdr_len < IPV4_HLEN) {
        return VRNIC_PKT_ERR_IP_HDR;
    }
    p->ip_version = 4;
    /* As GIDs and an AV say them: ::ffff:a.b.c.d. */
    memcpy(p->addr.sgid, vrnic_v4mapped_prefix, 12);
    memcpy(p->addr.sgid + 12, &h.ip_src, 4);
    memcpy(p->addr.dgid, vrnic_v4mapped_prefix, 12);
    memcpy(p->addr.dgid + 12, &h.ip_dst, 4);
    p->addr.traffic_class = h.ip_tos;
    p->addr.hop_limit = h.ip_ttl;
    p->addr.ip_id = be16_to_cpu(h.ip_id);
    return VRNIC_PKT_OK;
}

/* An IPv6 header, the same. RoCEv2 carries no extension headers. */
static VrnicPktErr parse_ip6(const uint8_t *ip, size_t avail, VrnicPkt *p)
{
    struct ip6_header h;
    uint32_t vtf;

    if (avail < IPV6_HLEN) {
        return VRNIC_PKT_ERR_RUNT;
    }
    memcpy(&h, ip, sizeof(h));
    vtf = be32_to_cpu(h.ip6_ctlun.ip6_un1.ip6_un1_flow);
    if (VRNIC_FIELD_GET(VRNIC_IPV6_VER_MASK, vtf) != IP_HEADER_VERSION_6) {
        return VRNIC_PKT_ERR_IP_VERSION;
    }
    if (h.ip6_nxt != IP_PROTO_UDP) {
        return VRNIC_PKT_ERR_NOT_UDP;
    }
    p->ip_hdr_len = IPV6_HLEN;
    p->ip_version = 6;
    memcpy(p->addr.sgid, &h.ip6_src, 16);
    memcpy(p->addr.dgid, &h.ip6_dst, 16);
    p->addr.traffic_class = VRNIC_FIELD_GET(VRNIC_IPV6_TC_MASK, vtf);
    p->addr.flow_label = VRNIC_FIELD_GET(VRNIC_IPV6_FLOW_MASK, vtf);
    p->addr.hop_limit = h.ip6_ctlun.ip6_un1.ip6_un1_hlim;
    return VRNIC_PKT_OK;
}

/*
 * Stage 1: is it RoCEv2 at all? Until the UDP destination port is seen,
 * every refusal is "foreign" (the Ethernet function's frame).
 */
VrnicPktErr vrnic_pkt_parse_ip(const uint8_t *frame, size_t len, VrnicPkt *pkt)
{
    struct eth_header eth;
    udp_header udp;
    VrnicPktErr err;
    uint16_t proto;

    memset(pkt, 0, sizeof(*pkt));
    if (len < ETH_HLEN) {
        return VRNIC_PKT_ERR_RUNT;
    }
    memcpy(&eth, frame, sizeof(eth));
    proto = be16_to_cpu(eth.h_proto);
    if (proto == ETH_P_IP) {
        err = parse_ip4(frame + ETH_HLEN, len - ETH_HLEN, pkt);
    } else if (proto == ETH_P_IPV6) {
        err = parse_ip6(frame + ETH_HLEN, len - ETH_HLEN, pkt);
    } else {
        err = VRNIC_PKT_ERR_NOT_IP;
    }
    if (err != VRNIC_PKT_OK) {
        return err;
    }
    if (len - ETH_HLEN < pkt->ip_hdr_len + UDP_HLEN) {
        return VRNIC_PKT_ERR_RUNT;
    }
    memcpy(&udp, frame + ETH_HLEN + pkt->ip_hdr_len, sizeof(udp));
    if (be16_to_cpu(udp.uh_dport) != VRNIC_ROCE_UDP_DPORT) {
        return VRNIC_PKT_ERR_UDP_PORT;
    }
    pkt->ip_off = ETH_HLEN;
    memcpy(pkt->addr.dmac, eth.h_dest, ETH_ALEN);
    memcpy(pkt->addr.smac, eth.h_source, ETH_ALEN);
    pkt->addr.udp_sport = be16_to_cpu(udp.uh_sport);
    return VRNIC_PKT_OK;
}

/* Stage 2: the IP header's rest, IP and UDP lengths, checksums. */
static VrnicPktErr parse_ip_udp(const uint8_t *frame, size_t len,
                                VrnicPkt *p, uint32_t *udp_len)
{
    const uint8_t *ip = frame + p->ip_off;
    const uint8_t *udp_p = ip + p->ip_hdr_len;
    udp_header udp;
    size_t ip_len;

    if (p->ip_version == 4) {
        struct ip_header h;

        memcpy(&h, ip, sizeof(h));
        if (p->ip_hdr_len != IPV4_HLEN || (be16_to_cpu(h.ip_off) & IP_MF)) {
            return VRNIC_PKT_ERR_IP_HDR;
        }
        if (net_raw_checksum((uint8_t *)ip, IPV4_HLEN)) {
            return VRNIC_PKT_ERR_IP_CSUM;
        }
        ip_len = be16_to_cpu(h.ip_len);
        if (ip_len < IPV4_HLEN + UDP_HLEN) {
            return VRNIC_PKT_ERR_LENGTH;
        }
    } else {
        ip_len = IPV6_HLEN +
                 lduw_be_p(ip + offsetof(struct ip6_header, ip6_plen));
        if (ip_len < IPV6_HLEN + UDP_HLEN) {
            return VRNIC_PKT_ERR_LENGTH;
        }
    }
    if (ip_len > len - p->ip_off) {
        return VRNIC_PKT_ERR_TRUNCATED;
    }
    memcpy(&udp, udp_p, sizeof(udp));
    *udp_len = be16_to_cpu(udp.uh_ulen);
    if (*udp_len != ip_len - p->ip_hdr_len) {
        return VRNIC_PKT_ERR_LENGTH;
    }
    p->udp_check = be16_to_cpu(udp.uh_sum);
    if (p->udp_check &&
        net_checksum_finish(udp_csum_sum(ip, p->ip_version == 6, udp_p,
                                         *udp_len))) {
        return VRNIC_PKT_ERR_UDP_CSUM;
    }
    if (*udp_len < UDP_HLEN + BTH_LEN + VRNIC_ICRC_SIZE) {
        return VRNIC_PKT_ERR_HDR_LEN;
    }
    p->len = p->ip_off + ip_len;
    return VRNIC_PKT_OK;
}

/* Stage 3: BTH version, the opcode, its headers and the pad fit. */
static VrnicPktErr parse_bth(const struct vrnic_bth *bth, uint32_t udp_len,
                             VrnicPkt *p, uint32_t *rest)
{
    const VrnicOpInfo *op;

    p->hdr.bth.tver = VRNIC_FIELD_GET(VRNIC_BTH_TVER_MASK, bth->flags);
    if (p->hdr.bth.tver != VRNIC_BTH_TVER) {
        return VRNIC_PKT_ERR_TVER;
    }
    op = vrnic_pkt_opinfo(bth->opcode);
    if (!op) {
        return VRNIC_PKT_ERR_OPCODE;
    }
    if (udp_len < UDP_HLEN + op->hdr_len + VRNIC_ICRC_SIZE) {
        return VRNIC_PKT_ERR_HDR_LEN;
    }
    /*
     * Payload + pad: 4-byte aligned (headers all are), none without a
     * payload, and the pad no longer than what follows the headers.
     */
    *rest = udp_len - UDP_HLEN - op->hdr_len - VRNIC_ICRC_SIZE;
    p->hdr.bth.pad = VRNIC_FIELD_GET(VRNIC_BTH_PAD_MASK, bth->flags);
    if (*rest % 4 || (!(op->flags & VRNIC_OPF_PAYLOAD) &&
                      (*rest || p->hdr.bth.pad)) ||
        p->hdr.bth.pad > *rest) {
        return VRNIC_PKT_ERR_PAD;
    }
    p->op = op;
    return VRNIC_PKT_OK;
}

/* Stage 5: the BTH fields and the opcode's extension headers. */
static void parse_decode(const struct vrnic_bth *bth, VrnicPkt *p)
{
    uint32_t w;

    p->hdr.bth.opcode = bth->opcode;
    p->hdr.bth.se = bth->flags & VRNIC_BTH_SE;
    p->hdr.bth.mig = bth->flags & VRNIC_BTH_MIG;
    p->hdr.bth.pkey = be16_to_cpu(bth->pkey);
    w = be32_to_cpu(bth->qpn);
    p->hdr.bth.fecn = w & VRNIC_BTH_FECN;
    p->hdr.bth.becn = w & VRNIC_BTH_BECN;
    p->hdr.bth.dqpn = w & VRNIC_IB_QPN_MASK;
    w = be32_to_cpu(bth->apsn);
    p->hdr.bth.ack_req = w & VRNIC_BTH_ACKREQ;
    p->hdr.bth.psn = w & VRNIC_IB_PSN_MASK;
    parse_ext((const uint8_t *)bth, p->op, &p->hdr);
}

/* Stages 2 to 5 of a frame stage 1 (vrnic_pkt_parse_ip) accepted. */
VrnicPktErr vrnic_pkt_parse_roce(const uint8_t *frame, size_t len,
                                 VrnicPkt *pkt)
{
    const uint8_t *ip = frame + pkt->ip_off;
    const struct vrnic_bth *bth;
    uint32_t udp_len, rest;
    VrnicPktErr err;

    /* RoCEv2 from here on: every refusal is a drop. */
    err = parse_ip_udp(frame, len, pkt, &udp_len);
    if (err != VRNIC_PKT_OK) {
        return err;
    }
    pkt->bth_off = pkt->ip_off + pkt->ip_hdr_len + UDP_HLEN;
    bth = (const void *)(frame + pkt->bth_off);
    err = parse_bth(bth, udp_len, pkt, &rest);
    if (err != VRNIC_PKT_OK) {
        return err;
    }
    /* 4. The ICRC covers everything checked above. */
    if (!vrnic_icrc_check(ip, pkt->len - pkt->ip_off)) {
        return VRNIC_PKT_ERR_ICRC;
    }
    parse_decode(bth, pkt);
    pkt->payload_off = pkt->bth_off + pkt->op->hdr_len;
    pkt->payload_len = rest - pkt->hdr.bth.pad;
    pkt->icrc = vrnic_icrc_get(ip, pkt->len - pkt->ip_off);
    return VRNIC_PKT_OK;
}

VrnicPktErr vrnic_pkt_parse(const uint8_t *frame, size_t len, VrnicPkt *pkt)
{
    VrnicPkt p;
    VrnicPktErr err = vrnic_pkt_parse_ip(frame, len, &p);

    if (err == VRNIC_PKT_OK) {
        err = vrnic_pkt_parse_roce(frame, len, &p);
    }
    if (err == VRNIC_PKT_OK) {
        *pkt = p;
    }
    return err;
}

void vrnic_pkt_grh(const uint8_t *frame, const VrnicPkt *pkt,
                   uint8_t grh[VRNIC_GRH_LEN])
{
    if (pkt->ip_version == 6) {
        memcpy(grh, frame + pkt->ip_off, VRNIC_GRH_LEN);
    } else {
        memset(grh, 0, VRNIC_GRH_LEN - IPV4_HLEN);
        memcpy(grh + VRNIC_GRH_LEN - IPV4_HLEN, frame + pkt->ip_off,
               IPV4_HLEN);
    }
}

/*
 * ---------------------------------------------------------------------------
 * Builder.
 */
static uint32_t build_pad(uint32_t payload_len)
{
    return -payload_len & 3;
}

size_t vrnic_pkt_frame_len(uint8_t opcode, bool ipv6, uint32_t payload_len)
{
    const VrnicOpInfo *op = vrnic_pkt_opinfo(opcode);
    uint64_t n;

    if (!op) {
        return 0;
    }
    n = ETH_HLEN + (ipv6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN + op->hdr_len +
        (uint64_t)payload_len + build_pad(payload_len) + VRNIC_ICRC_SIZE;
    return MAX(n, ETH_ZLEN);
}

static void build_ext(uint8_t *p, const VrnicOpInfo *op, const VrnicPktHdrs *h)
{
    if (op->hdrs & VRNIC_HDR_XRCETH) {
        struct vrnic_xrceth *x = (void *)p;

        x->srqn = cpu_to_be32(h->xrc_srqn & VRNIC_XRC_SRQN_MASK);
        p += sizeof(*x);
    }
    if (op->hdrs & VRNIC_HDR_DETH) {
        struct vrnic_deth *d = (void *)p;

        d->qkey = cpu_to_be32(h->deth.qkey);
        d->sqpn = cpu_to_be32(h->deth.sqpn & VRNIC_IB_QPN_MASK);
        p += sizeof(*d);
    }
    if (op->hdrs & VRNIC_HDR_FETH) {
        struct vrnic_feth *f = (void *)p;

        f->bits = cpu_to_be32(h->feth & VRNIC_FETH_MASK);
        p += sizeof(*f);
    }
    if (op->hdrs & VRNIC_HDR_RETH) {
        struct vrnic_reth *r = (void *)p;

        r->va = cpu_to_be64(h->reth.va);
        r->rkey = cpu_to_be32(h->reth.rkey);
        r->len = cpu_to_be32(h->reth.len);
        p += sizeof(*r);
    }
    if (op->hdrs & VRNIC_HDR_ATOMIC) {
        struct vrnic_atomic_eth *a = (void *)p;

        a->va = cpu_to_be64(h->atomic.va);
        a->rkey = cpu_to_be32(h->atomic.rkey);
        a->swap_add = cpu_to_be64(h->atomic.swap_add);
        a->compare = cpu_to_be64(h->atomic.compare);
        p += sizeof(*a);
    }
    if (op->hdrs & VRNIC_HDR_AETH) {
        struct vrnic_aeth *a = (void *)p;

        a->smsn = cpu_to_be32(VRNIC_FIELD_PREP(VRNIC_AETH_SYN_MASK,
                                              (uint32_t)h->aeth.syndrome) |
                             VRNIC_FIELD_PREP(VRNIC_AETH_MSN_MASK,
                                              h->aeth.msn));
        p += sizeof(*a);
    }
    if (op->hdrs & VRNIC_HDR_ATOMIC_ACK) {
        struct vrnic_atomic_ack_eth *a = (void *)p;

        a->orig = cpu_to_be64(h->atomic_orig);
        p += sizeof(*a);
    }
    if (op->hdrs & VRNIC_HDR_IMM) {
        struct vrnic_immdt *i = (void *)p;

        i->imm = cpu_to_be32(h->imm);
        p += sizeof(*i);
    }
    if (op->hdrs & VRNIC_HDR_IETH) {
        struct vrnic_ieth *i = (void *)p;

        i->rkey = cpu_to_be32(h->ieth_rkey);
    }
}

bool vrnic_pkt_tmpl_init(VrnicPktTmpl *t, const VrnicPktAddr *av)
{
    bool v4 = vrnic_gid_is_ipv4(av->dgid);
    size_t hlen = v4 ? IPV4_HLEN : IPV6_HLEN;
    struct eth_header eth = {
        .h_proto = cpu_to_be16(v4 ? ETH_P_IP : ETH_P_IPV6),
    };
    udp_header udp = {
        .uh_sport = cpu_to_be16(av->udp_sport),
        .uh_dport = cpu_to_be16(VRNIC_ROCE_UDP_DPORT),
        /*
         * 0 = no checksum: legal for RoCEv2 on IPv4 and IPv6 (rxe does
         * the same); the ICRC protects the datagram end to end.
         */
        .uh_sum = 0,
    };

    if (v4 != vrnic_gid_is_ipv4(av->sgid)) {
        return false;
    }
    memset(t, 0, sizeof(*t));
    t->v4 = v4;
    t->len = ETH_HLEN + hlen + UDP_HLEN;
    memcpy(eth.h_dest, av->dmac, ETH_ALEN);
    memcpy(eth.h_source, av->smac, ETH_ALEN);
    memcpy(t->hdr, &eth, ETH_HLEN);
    if (v4) {
        struct ip_header h = {
            .ip_ver_len = VRNIC_IPV4_VER_IHL,
            .ip_tos = av->traffic_class,
            /* As rxe: never fragmented (RoCE packets fit the path MTU). */
            .ip_off = cpu_to_be16(IP_DF),
            .ip_ttl = av->hop_limit,
            .ip_p = IP_PROTO_UDP,
        };

        memcpy(&h.ip_src, av->sgid + 12, 4);
        memcpy(&h.ip_dst, av->dgid + 12, 4);
        memcpy(t->hdr + ETH_HLEN, &h, sizeof(h));
    } else {
        struct ip6_header h = { 0 };

        h.ip6_ctlun.ip6_un1.ip6_un1_flow =
            cpu_to_be32(VRNIC_FIELD_PREP(VRNIC_IPV6_VER_MASK,
                                         (uint32_t)IP_HEADER_VERSION_6) |
                        VRNIC_FIELD_PREP(VRNIC_IPV6_TC_MASK,
                                         (uint32_t)av->traffic_class) |
                        VRNIC_FIELD_PREP(VRNIC_IPV6_FLOW_MASK,
                                         av->flow_label));
        h.ip6_nxt = IP_PROTO_UDP;
        h.ip6_ctlun.ip6_un1.ip6_un1_hlim = av->hop_limit;
        memcpy(&h.ip6_src, av->sgid, 16);
        memcpy(&h.ip6_dst, av->dgid, 16);
        memcpy(t->hdr + ETH_HLEN, &h, sizeof(h));
    }
    memcpy(t->hdr + ETH_HLEN + hlen, &udp, sizeof(udp));
    return true;
}

size_t vrnic_pkt_tmpl_build(uint8_t *buf, size_t size, const VrnicPktTmpl *t,
                            uint16_t ip_id, const VrnicPktHdrs *h,
                            uint32_t payload_len)
{
    const VrnicOpInfo *op = vrnic_pkt_opinfo(h->bth.opcode);
    uint8_t *ip = buf + ETH_HLEN;
    uint8_t *udp = buf + t->len - UDP_HLEN;
    struct vrnic_bth *bth = (void *)(buf + t->len);
    uint32_t pad = build_pad(payload_len);
    uint64_t udp_len;

    if (!op || (payload_len && !(op->flags & VRNIC_OPF_PAYLOAD))) {
        return 0;
    }
    udp_len = UDP_HLEN + op->hdr_len + (uint64_t)payload_len + pad +
              VRNIC_ICRC_SIZE;
    /* IPv4 total length and IPv6 payload length are 16-bit. */
    if ((t->v4 ? IPV4_HLEN : 0) + udp_len > UINT16_MAX ||
        vrnic_pkt_frame_len(h->bth.opcode, !t->v4, payload_len) > size) {
        return 0;
    }

    /* The template, then what differs per packet: lengths, ID, checksum. */
    memcpy(buf, t->hdr, t->len);
    if (t->v4) {
        stw_be_p(ip + offsetof(struct ip_header, ip_len), IPV4_HLEN + udp_len);
        stw_be_p(ip + offsetof(struct ip_header, ip_id), ip_id);
        stw_be_p(ip + offsetof(struct ip_header, ip_sum),
                 net_raw_checksum(ip, IPV4_HLEN));
    } else {
        stw_be_p(ip + offsetof(struct ip6_header, ip6_plen), udp_len);
    }
    stw_be_p(udp + offsetof(udp_header, uh_ulen), udp_len);

    bth->opcode = h->bth.opcode;
    bth->flags = (h->bth.se ? VRNIC_BTH_SE : 0) |
                 (h->bth.mig ? VRNIC_BTH_MIG : 0) |
                 VRNIC_FIELD_PREP(VRNIC_BTH_PAD_MASK, pad) |
                 VRNIC_FIELD_PREP(VRNIC_BTH_TVER_MASK, VRNIC_BTH_TVER);
    bth->pkey = cpu_to_be16(h->bth.pkey);
    bth->qpn = cpu_to_be32((h->bth.fecn ? VRNIC_BTH_FECN : 0) |
                          (h->bth.becn ? VRNIC_BTH_BECN : 0) |
                          (h->bth.dqpn & VRNIC_IB_QPN_MASK));
    bth->apsn = cpu_to_be32((h->bth.ack_req ? VRNIC_BTH_ACKREQ : 0) |
                           (h->bth.psn & VRNIC_IB_PSN_MASK));
    build_ext((uint8_t *)bth + BTH_LEN, op, h);
    return t->len + op->hdr_len;
}

size_t vrnic_pkt_build_hdrs(uint8_t *buf, size_t size, const VrnicPktAddr *av,
                            const VrnicPktHdrs *h, uint32_t payload_len)
{
    VrnicPktTmpl t;

    if (!vrnic_pkt_tmpl_init(&t, av)) {
        return 0;
    }
    return vrnic_pkt_tmpl_build(buf, size, &t, av->ip_id, h, payload_len);
}

size_t vrnic_pkt_finish(uint8_t *buf, size_t size)
{
    size_t ip_off, ip_len, end, hlen;
    const struct vrnic_bth *bth;
    unsigned pad;

    if (!vrnic_icrc_locate(buf, size, &ip_off, &ip_len)) {
        return 0;
    }
    hlen = (buf[ip_off] >> 4) == 4 ? IPV4_HLEN : IPV6_HLEN;
    bth = (const void *)(buf + ip_off + hlen + UDP_HLEN);
    pad = VRNIC_FIELD_GET(VRNIC_BTH_PAD_MASK, bth->flags);
    end = ip_off + ip_len;
    memset(buf + end - VRNIC_ICRC_SIZE - pad, 0, pad);
    vrnic_icrc_set(buf + ip_off, ip_len);
    if (end < ETH_ZLEN) {
        if (size < ETH_ZLEN) {
            return 0;
        }
        memset(buf + end, 0, ETH_ZLEN - end);
        end = ETH_ZLEN;
    }
    return end;
}

size_t vrnic_pkt_build(uint8_t *buf, size_t size, const VrnicPktAddr *av,
                       const VrnicPktHdrs *h, const void *payload,
                       uint32_t payload_len)
{
    size_t off = vrnic_pkt_build_hdrs(buf, size, av, h, payload_len);

    if (!off) {
        return 0;
    }
    if (payload_len) {
        memcpy(buf + off, payload, payload_len);
    }
    return vrnic_pkt_finish(buf, size);
}
