/*
 * vrnic RoCEv2 packet codec (IBTA Vol 1 ch. 9 headers, Annex 17 RoCEv2).
 *
 * A RoCEv2 frame is
 *   Ethernet | IPv4 or IPv6 | UDP (dst 4791) | BTH | ext headers | payload |
 *   pad (0-3 bytes to a 4-byte boundary) | ICRC (vrnic_icrc.h)
 * possibly followed by Ethernet padding up to the 60-byte minimum frame.
 *
 * This is IBTA's wire format, not the device interface, so it lives here
 * and not in vrnic_hw_defs.h. Every multi-byte wire field is big-endian;
 * the structs below are the one definition of each header and are read and
 * written only through the vrnic_be*() helpers, at the boundary: everything
 * above this file sees host-order values (VrnicPktHdrs, VrnicPktAddr).
 *
 * Copy semantics: vrnic_pkt_parse() reads a frame in the device's own
 * buffer and returns decoded values plus offsets into that buffer, never
 * pointers; nothing here keeps a pointer, to guest memory or anywhere.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VRNIC_PKT_H
#define HW_VRNIC_PKT_H

/* VRNIC_BIT, VRNIC_GENMASK, VRNIC_FIELD_* */
#include "standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h"
#include "net/eth.h"
#include "vrnic_icrc.h"

#define VRNIC_ROCE_UDP_DPORT    4791
/* rdma_get_udp_sport(): the source port is 0xC000 | a 14-bit flow hash. */
#define VRNIC_ROCE_SPORT_BASE   0xC000
#define VRNIC_IB_PSN_MASK       VRNIC_GENMASK(23, 0)
#define VRNIC_IB_QPN_MASK       VRNIC_GENMASK(23, 0)
#define VRNIC_GRH_LEN           40      /* the UD receive buffer's GRH area */

/*
 * ---------------------------------------------------------------------------
 * Wire headers, big-endian. Ethernet, IPv4, IPv6 and UDP are QEMU's
 * (net/eth.h: struct eth_header, ip_header, ip6_header, udp_header). Only
 * ip_header is packed there, and the others sit at any offset in a frame,
 * so the codec copies them in and out (vrnic_pkt.c) rather than pointing
 * into the frame. The InfiniBand headers below are packed.
 */
#define VRNIC_IPV4_VER_IHL      (IP_HEADER_VERSION_4 << 4 | 5)  /* no options */

/* ip6_un1_flow 31:28 : version (6), 27:20 : traffic class, 19:0 : flow label */
#define VRNIC_IPV6_VER_MASK     VRNIC_GENMASK(31, 28)
#define VRNIC_IPV6_TC_MASK      VRNIC_GENMASK(27, 20)
#define VRNIC_IPV6_FLOW_MASK    VRNIC_GENMASK(19, 0)

/*
 * Base Transport Header (IBTA 9.2):
 * flags 7 : SE, 6 : M (MigReq), 5:4 : PadCnt, 3:0 : TVer (0)
 * qpn   31 : FECN, 30 : BECN, 29:24 : reserved, 23:0 : DestQP
 *       (the whole top byte is masked to ones in the ICRC)
 * apsn  31 : AckReq, 30:24 : reserved, 23:0 : PSN
 */
struct vrnic_bth {
    uint8_t opcode;
    uint8_t flags;
    uint16_t pkey;
    uint32_t qpn;
    uint32_t apsn;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_bth) == 12, "vrnic_bth");

#define VRNIC_BTH_SE            VRNIC_BIT(7)
#define VRNIC_BTH_MIG           VRNIC_BIT(6)
#define VRNIC_BTH_PAD_MASK      VRNIC_GENMASK(5, 4)
#define VRNIC_BTH_TVER_MASK     VRNIC_GENMASK(3, 0)
#define VRNIC_BTH_FECN          VRNIC_BIT(31)
#define VRNIC_BTH_BECN          VRNIC_BIT(30)
#define VRNIC_BTH_ACKREQ        VRNIC_BIT(31)
#define VRNIC_BTH_TVER          0

/* RDMA Extended Transport Header (9.3.3): WRITE FIRST/ONLY, READ request */
struct vrnic_reth {
    uint64_t va;
    uint32_t rkey;
    uint32_t len;                   /* DMA length of the whole message */
} __attribute__((packed));
static_assert(sizeof(struct vrnic_reth) == 16, "vrnic_reth");

/* ACK Extended Transport Header (9.3.5): smsn 31:24 : syndrome, 23:0 : MSN */
struct vrnic_aeth {
    uint32_t smsn;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_aeth) == 4, "vrnic_aeth");

#define VRNIC_AETH_SYN_MASK     VRNIC_GENMASK(31, 24)
#define VRNIC_AETH_MSN_MASK     VRNIC_GENMASK(23, 0)
/* Syndrome: 7 : reserved, 6:5 : type, 4:0 : credits / RNR timer / NAK code */
#define VRNIC_AETH_TYPE_MASK    VRNIC_GENMASK(6, 5)
#define VRNIC_AETH_VALUE_MASK   VRNIC_GENMASK(4, 0)
enum vrnic_aeth_type {
    VRNIC_AETH_ACK = 0,             /* value = credit count, 0x1f invalid */
    VRNIC_AETH_RNR_NAK = 1,         /* value = RNR timer code */
    VRNIC_AETH_NAK = 3,             /* value = enum vrnic_aeth_nak */
};
#define VRNIC_AETH_CREDITS_INVALID 0x1f
enum vrnic_aeth_nak {
    VRNIC_NAK_PSN_SEQ = 0,
    VRNIC_NAK_INV_REQ = 1,
    VRNIC_NAK_REM_ACCESS = 2,
    VRNIC_NAK_REM_OP = 3,
    VRNIC_NAK_INV_RD_REQ = 4,
};

/* Immediate data (9.3.6): opaque 4 bytes, see VrnicPktHdrs.imm. */
struct vrnic_immdt {
    uint32_t imm;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_immdt) == 4, "vrnic_immdt");

/* Invalidate ETH (9.3.7): the R_Key to invalidate. */
struct vrnic_ieth {
    uint32_t rkey;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_ieth) == 4, "vrnic_ieth");

/*
 * FLUSH ETH (IBTA 1.5, "FLUSH and ATOMIC WRITE"), before the RETH of a
 * FLUSH: bits 5:4 selectivity, 3:0 placement type (VRNIC_FLUSH_*).
 */
struct vrnic_feth {
    uint32_t bits;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_feth) == 4, "vrnic_feth");

#define VRNIC_FETH_MASK         (VRNIC_FLUSH_SEL_MASK | VRNIC_FLUSH_TYPE_MASK)

/*
 * XRC ETH (annex A14): the first header after the BTH of every XRC
 * request packet. srqn 31:24 : reserved, 23:0 : the XRC SRQ at the target
 */
struct vrnic_xrceth {
    uint32_t srqn;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_xrceth) == 4, "vrnic_xrceth");

/* Atomic ETH (9.3.4): CMP_SWAP and FETCH_ADD. */
struct vrnic_atomic_eth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;              /* swap data, or the value to add */
    uint64_t compare;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_atomic_eth) == 28, "vrnic_atomic_eth");

/* Atomic Acknowledge ETH (9.3.5.3): the original remote value. */
struct vrnic_atomic_ack_eth {
    uint64_t orig;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_atomic_ack_eth) == 8,
              "vrnic_atomic_ack_eth");

/* Datagram ETH (9.3.2): sqpn 31:24 : reserved, 23:0 : source QP */
struct vrnic_deth {
    uint32_t qkey;
    uint32_t sqpn;
} __attribute__((packed));
static_assert(sizeof(struct vrnic_deth) == 8, "vrnic_deth");

/*
 * ---------------------------------------------------------------------------
 * Opcodes (IBTA Table 38): transport in bits 7:5, operation in 4:0.
 */
#define VRNIC_IB_TRANSPORT_MASK VRNIC_GENMASK(7, 5)
enum vrnic_ib_transport {
    VRNIC_IB_RC = 0x00,
    VRNIC_IB_UC = 0x20,
    VRNIC_IB_RD = 0x40,             /* not supported */
    VRNIC_IB_UD = 0x60,
    VRNIC_IB_XRC = 0xa0,            /* annex A14; the RC operations */
};

enum vrnic_ib_op {
    VRNIC_IB_SEND_FIRST = 0x00,
    VRNIC_IB_SEND_MIDDLE = 0x01,
    VRNIC_IB_SEND_LAST = 0x02,
    VRNIC_IB_SEND_LAST_IMM = 0x03,
    VRNIC_IB_SEND_ONLY = 0x04,
    VRNIC_IB_SEND_ONLY_IMM = 0x05,
    VRNIC_IB_WRITE_FIRST = 0x06,
    VRNIC_IB_WRITE_MIDDLE = 0x07,
    VRNIC_IB_WRITE_LAST = 0x08,
    VRNIC_IB_WRITE_LAST_IMM = 0x09,
    VRNIC_IB_WRITE_ONLY = 0x0a,
    VRNIC_IB_WRITE_ONLY_IMM = 0x0b,
    VRNIC_IB_READ_REQ = 0x0c,
    VRNIC_IB_READ_RESP_FIRST = 0x0d,
    VRNIC_IB_READ_RESP_MIDDLE = 0x0e,
    VRNIC_IB_READ_RESP_LAST = 0x0f,
    VRNIC_IB_READ_RESP_ONLY = 0x10,
    VRNIC_IB_ACK = 0x11,
    VRNIC_IB_ATOMIC_ACK = 0x12,
    VRNIC_IB_CMP_SWAP = 0x13,
    VRNIC_IB_FETCH_ADD = 0x14,
    VRNIC_IB_SEND_LAST_INV = 0x16,
    VRNIC_IB_SEND_ONLY_INV = 0x17,
    VRNIC_IB_FLUSH = 0x1c,              /* IBTA 1.5 */
    VRNIC_IB_ATOMIC_WRITE = 0x1d,       /* IBTA 1.5 */
};

/* Full opcodes: transport | operation, e.g. VRNIC_OP(RC, SEND_ONLY). */
#define VRNIC_OP(tr, op)        (VRNIC_IB_##tr | VRNIC_IB_##op)

/* Extension headers an opcode carries; they appear in this bit order. */
enum {
    VRNIC_HDR_XRCETH = VRNIC_BIT(0),
    VRNIC_HDR_DETH = VRNIC_BIT(1),
    VRNIC_HDR_FETH = VRNIC_BIT(2),
    VRNIC_HDR_RETH = VRNIC_BIT(3),
    VRNIC_HDR_ATOMIC = VRNIC_BIT(4),
    VRNIC_HDR_AETH = VRNIC_BIT(5),
    VRNIC_HDR_ATOMIC_ACK = VRNIC_BIT(6),
    VRNIC_HDR_IMM = VRNIC_BIT(7),
    VRNIC_HDR_IETH = VRNIC_BIT(8),
    VRNIC_HDR__COUNT = 9,
};

/* What an opcode means (rxe_opcode.c's mask, reduced to what we need). */
enum {
    VRNIC_OPF_PAYLOAD = VRNIC_BIT(0),   /* carries payload (may be 0 B) */
    VRNIC_OPF_FIRST = VRNIC_BIT(1),     /* FIRST or ONLY: starts a message */
    VRNIC_OPF_LAST = VRNIC_BIT(2),      /* LAST or ONLY: ends a message */
    VRNIC_OPF_REQ = VRNIC_BIT(3),       /* requester -> responder */
    VRNIC_OPF_SEND = VRNIC_BIT(4),
    VRNIC_OPF_WRITE = VRNIC_BIT(5),
    VRNIC_OPF_READ = VRNIC_BIT(6),      /* request or response */
    VRNIC_OPF_ATOMIC = VRNIC_BIT(7),    /* request or ATOMIC_ACK */
    VRNIC_OPF_ACK = VRNIC_BIT(8),       /* ACKNOWLEDGE */
    VRNIC_OPF_IMM = VRNIC_BIT(9),
    VRNIC_OPF_INV = VRNIC_BIT(10),
    /*
     * ATOMIC WRITE or FLUSH (IBTA 1.5): a request that takes a READ/atomic
     * slot like the atomics, answered by an RDMA READ RESPONSE ONLY that
     * carries no data.
     */
    VRNIC_OPF_RD_ACKED = VRNIC_BIT(11),
};

typedef struct VrnicOpInfo {
    const char *name;               /* "RC SEND ONLY" */
    uint16_t hdrs;                  /* VRNIC_HDR_* */
    uint16_t flags;                 /* VRNIC_OPF_* */
    uint8_t hdr_len;                /* BTH + extension headers */
} VrnicOpInfo;

/*
 * The opcode's description, NULL for an opcode vrnic does not implement
 * (RD, reserved, CNP, manufacturer-specific).
 */
const VrnicOpInfo *vrnic_pkt_opinfo(uint8_t opcode);
/* Size of one extension header (a single VRNIC_HDR_* bit). */
unsigned vrnic_pkt_hdr_size(unsigned hdr);
/*
 * Offset of extension header hdr from the start of the BTH, or 0 if the
 * opcode does not carry it (or is unknown).
 */
unsigned vrnic_pkt_hdr_offset(uint8_t opcode, unsigned hdr);

/*
 * ---------------------------------------------------------------------------
 * Decoded (host-order) headers: the builder's input, the parser's output.
 * Only the members of the headers the opcode carries are used/filled.
 */
typedef struct VrnicBth {
    uint8_t opcode;
    bool se;
    bool mig;
    uint8_t pad;                    /* parse: from the wire; build: ignored */
    uint8_t tver;                   /* parse: from the wire; build: ignored */
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint32_t dqpn;                  /* 24 bits */
    bool ack_req;
    uint32_t psn;                   /* 24 bits */
} VrnicBth;

typedef struct VrnicPktHdrs {
    VrnicBth bth;
    uint32_t xrc_srqn;              /* XRCETH, 24 bits */
    struct {
        uint32_t qkey;
        uint32_t sqpn;
    } deth;
    uint32_t feth;                  /* VRNIC_FETH_MASK bits */
    struct {
        uint64_t va;
        uint32_t rkey;
        uint32_t len;
    } reth;
    struct {
        uint64_t va;
        uint32_t rkey;
        uint64_t swap_add;
        uint64_t compare;
    } atomic;
    struct {
        uint8_t syndrome;           /* see VRNIC_AETH_TYPE_MASK */
        uint32_t msn;
    } aeth;
    uint64_t atomic_orig;           /* AtomicAckETH */
    /*
     * ImmDt: the 4 wire bytes read big-endian. The verbs imm_data (__be32,
     * opaque) is their network-order copy: imm_data = htobe32(imm).
     */
    uint32_t imm;
    uint32_t ieth_rkey;
} VrnicPktHdrs;

/*
 * Addressing: what the AV/QP gives the builder, what the parser saw.
 * GIDs are 16 bytes; ::ffff:a.b.c.d selects IPv4. s* = the sender.
 */
typedef struct VrnicPktAddr {
    uint8_t smac[6];
    uint8_t dmac[6];
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint8_t traffic_class;          /* IPv4 TOS / IPv6 TC: DSCP 7:2, ECN 1:0 */
    uint8_t hop_limit;              /* IPv4 TTL / IPv6 hop limit */
    uint32_t flow_label;            /* IPv6 only (20 bits); IPv4 ignores it */
    uint16_t udp_sport;             /* vrnic_pkt_udp_sport() */
    uint16_t ip_id;                 /* IPv4 identification (DF is set) */
} VrnicPktAddr;

/* Parse result. Offsets are from the start of the frame. */
typedef struct VrnicPkt {
    VrnicPktAddr addr;
    VrnicPktHdrs hdr;
    const VrnicOpInfo *op;          /* static table entry, never NULL if OK */
    uint8_t ip_version;             /* 4 or 6 */
    uint16_t udp_check;             /* as received (0 = none) */
    uint32_t ip_off;                /* IP header (the UD GRH source) */
    uint32_t ip_hdr_len;            /* 20 or 40 */
    uint32_t bth_off;
    uint32_t payload_off;
    uint32_t payload_len;           /* pad excluded */
    uint32_t len;                   /* through the ICRC, no Ethernet pad */
    uint32_t icrc;                  /* as stored (vrnic_icrc_get()) */
} VrnicPkt;

/* Why vrnic_pkt_parse() refused a frame. */
typedef enum VrnicPktErr {
    VRNIC_PKT_OK = 0,
    /* Not RoCEv2 at all: the frame belongs to the Ethernet function. */
    VRNIC_PKT_ERR_RUNT,             /* too short to show a UDP dst port */
    VRNIC_PKT_ERR_NOT_IP,           /* Ethertype neither IPv4 nor IPv6 */
    /* IP protocol / next header not UDP, or an IPv4 non-first fragment */
    VRNIC_PKT_ERR_NOT_UDP,
    VRNIC_PKT_ERR_UDP_PORT,         /* UDP destination port not 4791 */
    /* RoCEv2 (or claiming to be), malformed: drop and count. */
    VRNIC_PKT_ERR_TRUNCATED,        /* frame ends before what headers claim */
    VRNIC_PKT_ERR_IP_VERSION,       /* version nibble vs Ethertype */
    VRNIC_PKT_ERR_IP_HDR,           /* IPv4 IHL not 5, or MF set */
    VRNIC_PKT_ERR_IP_CSUM,          /* IPv4 header checksum */
    VRNIC_PKT_ERR_LENGTH,           /* IP and UDP lengths disagree */
    VRNIC_PKT_ERR_UDP_CSUM,         /* non-zero UDP checksum that is wrong */
    VRNIC_PKT_ERR_TVER,             /* BTH transport header version not 0 */
    VRNIC_PKT_ERR_OPCODE,           /* opcode not implemented */
    /* BTH (+ ext headers) + ICRC do not fit in the UDP payload */
    VRNIC_PKT_ERR_HDR_LEN,
    /* pad count vs payload, payload on an opcode without one, unaligned */
    VRNIC_PKT_ERR_PAD,
    VRNIC_PKT_ERR_ICRC,
    VRNIC_PKT_ERR__MAX,
} VrnicPktErr;

/* Short name for traces and the checker ("icrc", "udp-port", ...). */
const char *vrnic_pkt_err_str(VrnicPktErr err);
/*
 * True for the reasons that mean "not RoCEv2": the frame goes to the
 * Ethernet RX ring. They are the refusals made before the UDP destination
 * port is known, plus a port other than 4791, except two that no stack
 * accepts anyway and are dropped: a version nibble contradicting the
 * Ethertype (IP_VERSION) and an IPv4 IHL below 5 (IP_HDR).
 */
bool vrnic_pkt_err_is_foreign(VrnicPktErr err);

/*
 * Validate and decode one Ethernet frame (no VLAN tag). Checks, in order:
 * Ethertype, IP version, UDP protocol, UDP destination port (the foreign
 * reasons), then IPv4 IHL/MF, IPv4 header checksum, IP length against the
 * frame and the UDP length, a non-zero UDP checksum, BTH TVer, opcode,
 * header lengths, pad, ICRC; the first failure is returned. Ethernet
 * padding after the IP packet is ignored. *pkt is written only on
 * VRNIC_PKT_OK. MACs, GIDs, P_Key, QPN and PSN are the transport's to check.
 */
VrnicPktErr vrnic_pkt_parse(const uint8_t *frame, size_t len, VrnicPkt *pkt);
/*
 * The same parse in two steps, for a receiver that decides on the
 * addresses before it checks the rest (routing): vrnic_pkt_parse_ip()
 * checks through the UDP destination port and fills the addresses
 * (pkt->addr, ip_version, ip_off, ip_hdr_len); vrnic_pkt_parse_roce()
 * goes on from there with the same pkt. Together they return what
 * vrnic_pkt_parse() returns; *pkt is scratch unless both say OK.
 */
VrnicPktErr vrnic_pkt_parse_ip(const uint8_t *frame, size_t len,
                               VrnicPkt *pkt);
VrnicPktErr vrnic_pkt_parse_roce(const uint8_t *frame, size_t len,
                                 VrnicPkt *pkt);

/*
 * Build a frame into buf: headers from av and h (h->bth.pad/tver are
 * computed), payload_len bytes of payload, zero pad to 4 bytes, ICRC,
 * zero Ethernet padding up to ETH_ZLEN. IPv4 when av->dgid is
 * ::ffff:a.b.c.d (then av->sgid must be too). UDP checksum 0, IPv4 DF set.
 * Returns the frame length, or 0 if the opcode is unknown, the opcode has
 * no payload but payload_len > 0, the GIDs' families differ or the frame
 * does not fit in size bytes (internal errors: the caller sized things).
 *
 * In two steps, for a payload gathered straight into the frame:
 * vrnic_pkt_build_hdrs() writes everything before the payload and returns
 * the payload offset (0 on error); the caller fills payload_len bytes
 * there, then vrnic_pkt_finish() adds pad, ICRC and Ethernet padding and
 * returns the frame length. vrnic_pkt_build() does both with a copy.
 */
size_t vrnic_pkt_build_hdrs(uint8_t *buf, size_t size, const VrnicPktAddr *av,
                            const VrnicPktHdrs *h, uint32_t payload_len);

/*
 * A header template: the Ethernet, IP and UDP headers of one path (what
 * VrnicPktAddr gives, ip_id aside) with the lengths, the IPv4 ID and
 * checksum left to each packet. vrnic_pkt_tmpl_init() fails when the GIDs'
 * families differ. vrnic_pkt_tmpl_build() is vrnic_pkt_build_hdrs() from a
 * template: a copy of t->len bytes, the lengths, BTH and extension headers.
 */
typedef struct VrnicPktTmpl {
    /* Ethernet, IPv6 (or IPv4), UDP */
    uint8_t hdr[ETH_HLEN + sizeof(struct ip6_header) + sizeof(udp_header)];
    uint8_t len;                    /* of them in use */
    bool v4;
} VrnicPktTmpl;

bool vrnic_pkt_tmpl_init(VrnicPktTmpl *t, const VrnicPktAddr *av);
size_t vrnic_pkt_tmpl_build(uint8_t *buf, size_t size, const VrnicPktTmpl *t,
                            uint16_t ip_id, const VrnicPktHdrs *h,
                            uint32_t payload_len);
size_t vrnic_pkt_finish(uint8_t *buf, size_t size);
size_t vrnic_pkt_build(uint8_t *buf, size_t size, const VrnicPktAddr *av,
                       const VrnicPktHdrs *h, const void *payload,
                       uint32_t payload_len);
/*
 * Frame length vrnic_pkt_build() produces (buffer sizing), 0 if unknown
 * opcode.
 */
size_t vrnic_pkt_frame_len(uint8_t opcode, bool ipv6, uint32_t payload_len);

/*
 * ---------------------------------------------------------------------------
 * Helpers the transport needs around the codec.
 */

/* ::ffff:a.b.c.d (RoCEv2 over IPv4). */
bool vrnic_gid_is_ipv4(const uint8_t gid[16]);

/*
 * Linux's rdma_get_udp_sport(fl, lqpn, rqpn) (include/rdma/ib_verbs.h):
 * a zero flow label is replaced by rdma_calc_flow_label(lqpn, rqpn), then
 * folded to 14 bits and ORed with 0xC000. Fixed per flow: changing it
 * would let the network reorder a QP's packets.
 */
uint32_t vrnic_calc_flow_label(uint32_t lqpn, uint32_t rqpn);
uint16_t vrnic_pkt_udp_sport(uint32_t flow_label, uint32_t lqpn,
                             uint32_t rqpn);

/*
 * The 40-byte GRH area of a UD receive buffer for a parsed frame (ARCH
 * §3b): IPv6 - the received IPv6 header; IPv4 - 20 zero bytes then the
 * received IPv4 header (checksum valid), which is how libibverbs and the
 * kernel tell the two apart.
 */
void vrnic_pkt_grh(const uint8_t *frame, const VrnicPkt *pkt,
                   uint8_t grh[VRNIC_GRH_LEN]);

/* PSNs an RDMA READ of len bytes consumes: ceil(len / pmtu), at least 1. */
uint32_t vrnic_read_psns(uint32_t len, uint32_t pmtu);

/*
 * End-to-end credits (the AETH credit table, IBTA 9.7.5.1): the code for
 * n receive WQEs (the largest code whose count is <= n), and the count a
 * code stands for (codes 0..30; VRNIC_AETH_CREDITS_INVALID has none).
 */
uint8_t vrnic_aeth_credit_code(uint32_t n);
uint32_t vrnic_aeth_credit_count(uint8_t code);

#endif
