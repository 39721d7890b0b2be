/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vrnic hardware interface: the one definition of the device's registers,
 * admin commands, rings and event formats. Included unchanged by the QEMU
 * device model, the Linux driver and the rdma-core provider.
 *
 * Rules: every field is little-endian and fixed-width; every struct spells out
 * its reserved bytes and is checked by a static_assert; packed words list
 * their fields as "hi:lo : name" above the word; masks are built with
 * VRNIC_GENMASK/VRNIC_BIT and read/written with FIELD_GET/FIELD_PREP (kernel,
 * rdma-core) or VRNIC_FIELD_GET/VRNIC_FIELD_PREP (anywhere).
 *
 * Documentation/programming-reference.rst is the prose version of this file.
 */
#ifndef VRNIC_HW_DEFS_H
#define VRNIC_HW_DEFS_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#else
#include <linux/types.h>
#include <assert.h>
#endif

#define VRNIC_BIT(n)		(1U << (n))
#define VRNIC_GENMASK(h, l)	(((~0U) >> (31 - (h))) & ((~0U) << (l)))
/* Environment-neutral accessors: (v & mask) shifted down by the mask's lowest bit. */
#define VRNIC_FIELD_GET(mask, v)	(((v) & (mask)) / ((mask) & -(mask)))
#define VRNIC_FIELD_PREP(mask, v)	(((v) * ((mask) & -(mask))) & (mask))

/* ---------------------------------------------------------------------------
 * PCI identity
 *
 * 0x1234 is not a PCI-SIG assigned vendor: it is the ID QEMU's own emulated
 * devices use (standard VGA 1234:1111, edu 1234:11e8, IPMI 1234:1112; QEMU's
 * docs/specs/pci-ids.rst lists none of them). 1234:7672 ("vr") collides with
 * nothing QEMU defines or documents.
 */
#define VRNIC_PCI_VENDOR_ID	0x1234
#define VRNIC_PCI_DEVICE_ID	0x7672
#define VRNIC_PCI_REVISION	0x01
/* PCI class: network controller, Ethernet */
#define VRNIC_PCI_CLASS		0x0200

/* BARs: 0 = registers, 2 = doorbell pages, 4 = MSI-X table and PBA */
#define VRNIC_BAR_REGS		0
#define VRNIC_BAR_DB		2
#define VRNIC_BAR_MSIX		4
#define VRNIC_REGS_SIZE		0x1000

/* Interface version reported in VRNIC_REG_VERSION */
#define VRNIC_VERSION_MAJOR	1
#define VRNIC_VERSION_MINOR	0
#define VRNIC_ID_MAGIC		0x76726e63	/* ASCII "vrnc" */

/* MSI-X vector assignment (fixed): */
#define VRNIC_VEC_ADMIN		0	/* admin completions + async events */
#define VRNIC_VEC_ETH		1	/* Ethernet TX and RX completions */
#define VRNIC_VEC_COMP_FIRST	2	/* completion EQ n uses vector 2 + n */

/* ---------------------------------------------------------------------------
 * BAR0 registers. All 32-bit, little-endian, 4-byte aligned accesses only.
 * RO = read-only (writes are ignored and reported as a guest error).
 */
#define VRNIC_REG_ID		0x000	/* RO VRNIC_ID_MAGIC */
#define VRNIC_REG_VERSION	0x004	/* RO */
#define VRNIC_REG_CAP_VEC	0x008	/* RO */
#define VRNIC_REG_CAP_DB	0x00c	/* RO */
#define VRNIC_REG_CAP_AQ	0x010	/* RO */
#define VRNIC_REG_CAP_ETH	0x014	/* RO */
#define VRNIC_REG_MAC_LO	0x018	/* RO permanent MAC, bytes 0..3 */
#define VRNIC_REG_MAC_HI	0x01c	/* RO permanent MAC, bytes 4..5 in 15:0 */
#define VRNIC_REG_DEV_CTRL	0x020	/* RW */
#define VRNIC_REG_DEV_STS	0x024	/* RO */
#define VRNIC_REG_AQ_SQ_BASE_LO	0x040	/* RW admin SQ ring address, 64-byte aligned */
#define VRNIC_REG_AQ_SQ_BASE_HI	0x044
#define VRNIC_REG_AQ_CQ_BASE_LO	0x048	/* RW admin CQ ring address, 64-byte aligned */
#define VRNIC_REG_AQ_CQ_BASE_HI	0x04c
#define VRNIC_REG_AQ_CFG	0x050	/* RW */
#define VRNIC_REG_AQ_PI		0x054	/* WO admin SQ producer index doorbell */
#define VRNIC_REG_AEQ_BASE_LO	0x060	/* RW async event ring address, 64-byte aligned */
#define VRNIC_REG_AEQ_BASE_HI	0x064
#define VRNIC_REG_AEQ_CFG	0x068	/* RW */
#define VRNIC_REG_AEQ_CI	0x06c	/* WO async event consumer index + arm */
#define VRNIC_REG_ETH_TX_BASE_LO 0x080	/* RW Ethernet TX ring address, 64-byte aligned */
#define VRNIC_REG_ETH_TX_BASE_HI 0x084
#define VRNIC_REG_ETH_TX_CFG	0x088	/* RW */
#define VRNIC_REG_ETH_TX_PI	0x08c	/* WO TX producer index doorbell */
#define VRNIC_REG_ETH_RX_BASE_LO 0x090	/* RW Ethernet RX ring address, 64-byte aligned */
#define VRNIC_REG_ETH_RX_BASE_HI 0x094
#define VRNIC_REG_ETH_RX_CFG	0x098	/* RW */
#define VRNIC_REG_ETH_RX_PI	0x09c	/* WO RX producer index doorbell */
#define VRNIC_REG_ETH_TX_ARM	0x0a0	/* WO arm TX interrupt at consumer index */
#define VRNIC_REG_ETH_RX_ARM	0x0a4	/* WO arm RX interrupt at consumer index */
#define VRNIC_REG_ETH_CTRL	0x0a8	/* RW */

/*
 * VRNIC_REG_VERSION
 * 31:16 : major
 * 15:0  : minor
 */
#define VRNIC_VERSION_MAJOR_MASK	VRNIC_GENMASK(31, 16)
#define VRNIC_VERSION_MINOR_MASK	VRNIC_GENMASK(15, 0)

/*
 * VRNIC_REG_CAP_VEC
 * 31:16 : total_vectors - MSI-X table size (VRNIC_VEC_COMP_FIRST + num_comp)
 * 15:8  : reserved
 * 7:0   : num_comp - number of completion EQ vectors
 */
#define VRNIC_CAP_VEC_TOTAL_MASK	VRNIC_GENMASK(31, 16)
#define VRNIC_CAP_VEC_NUM_COMP_MASK	VRNIC_GENMASK(7, 0)

/*
 * VRNIC_REG_CAP_DB
 * 31:24 : reserved
 * 23:16 : page_shift - log2 of one doorbell page (12: 4 KiB)
 * 15:0  : num_pages - doorbell pages in BAR2 (page 0 is the kernel's)
 */
#define VRNIC_CAP_DB_PAGE_SHIFT_MASK	VRNIC_GENMASK(23, 16)
#define VRNIC_CAP_DB_NUM_PAGES_MASK	VRNIC_GENMASK(15, 0)

/*
 * VRNIC_REG_CAP_AQ
 * 31:16 : cmd_timeout_ms - longest the device takes to complete a command
 * 15:13 : reserved
 * 12:8  : aeq_max_log_depth
 * 7:5   : reserved
 * 4:0   : aq_max_log_depth
 */
#define VRNIC_CAP_AQ_TIMEOUT_MS_MASK	VRNIC_GENMASK(31, 16)
#define VRNIC_CAP_AQ_AEQ_LOG_DEPTH_MASK	VRNIC_GENMASK(12, 8)
#define VRNIC_CAP_AQ_LOG_DEPTH_MASK	VRNIC_GENMASK(4, 0)

/*
 * VRNIC_REG_CAP_ETH
 * 31:16 : max_mtu - largest IP MTU the Ethernet function accepts
 * 15:5  : reserved
 * 4:0   : max_log_depth - of each Ethernet ring
 */
#define VRNIC_CAP_ETH_MAX_MTU_MASK	VRNIC_GENMASK(31, 16)
#define VRNIC_CAP_ETH_LOG_DEPTH_MASK	VRNIC_GENMASK(4, 0)

/*
 * VRNIC_REG_DEV_CTRL
 * 31:1 : reserved
 * 0    : reset - write 1: return every queue to idle, clear all state set by
 *        the driver (rings, GID table, MAC, MTU). Completes before the write
 *        returns; reads as 0.
 */
#define VRNIC_DEV_CTRL_RESET		VRNIC_BIT(0)

/*
 * VRNIC_REG_DEV_STS
 * 31:3 : reserved
 * 2    : link_up - the Ethernet link (netdev peer) is up
 * 1    : fatal - the device stopped after a DMA error; only reset clears it
 * 0    : ready - registers may be programmed
 */
#define VRNIC_DEV_STS_READY		VRNIC_BIT(0)
#define VRNIC_DEV_STS_FATAL		VRNIC_BIT(1)
#define VRNIC_DEV_STS_LINK_UP		VRNIC_BIT(2)

/*
 * VRNIC_REG_AQ_CFG, VRNIC_REG_AEQ_CFG, VRNIC_REG_ETH_{TX,RX}_CFG
 * 31   : enable - the ring is live; base and depth are latched when set.
 *        Clearing it returns the ring to idle with its indices at 0.
 * 30   : irq_en - (AQ only) raise VRNIC_VEC_ADMIN after writing admin
 *        completions; one interrupt may cover several completions
 * 29:5 : reserved
 * 4:0  : log_depth - ring has 2^log_depth entries (1 <= log_depth <= max)
 */
#define VRNIC_RING_CFG_ENABLE		VRNIC_BIT(31)
#define VRNIC_RING_CFG_IRQ_EN		VRNIC_BIT(30)
#define VRNIC_RING_CFG_LOG_DEPTH_MASK	VRNIC_GENMASK(4, 0)

/*
 * Producer indices (AQ_PI, ETH_TX_PI, ETH_RX_PI) and consumer indices
 * (AEQ_CI, ETH_*_ARM) are free-running 16-bit counters, never masked by the
 * writer; the ring slot is index & (depth - 1). A producer index more than
 * depth entries ahead of the device's consumer index is a guest error and is
 * ignored.
 *
 * VRNIC_REG_AEQ_CI
 * 31    : arm - raise VRNIC_VEC_ADMIN on the next event (or at once if events
 *         past ci are already written)
 * 30:16 : reserved
 * 15:0  : ci - consumer index
 *
 * VRNIC_REG_ETH_TX_ARM, VRNIC_REG_ETH_RX_ARM: arm VRNIC_VEC_ETH once. It
 * fires when the device completes a descriptor, or immediately if it has
 * already completed descriptors past ci (so no completion can be missed
 * between the driver's last poll and the arm). A ci ahead of the device's
 * own progress is a guest error and is ignored.
 * 31:16 : reserved
 * 15:0  : ci - index of the first descriptor the driver has not yet seen done
 */
#define VRNIC_INDEX_MASK		VRNIC_GENMASK(15, 0)
#define VRNIC_AEQ_CI_ARM		VRNIC_BIT(31)

/*
 * VRNIC_REG_ETH_CTRL
 * 31:1 : reserved
 * 0    : promisc - deliver unicast frames for any MAC (otherwise only the
 *        programmed MAC, broadcast and multicast)
 */
#define VRNIC_ETH_CTRL_PROMISC		VRNIC_BIT(0)

/* Rings are aligned to this in guest memory; every entry size divides it. */
#define VRNIC_RING_ALIGN		64

/* ---------------------------------------------------------------------------
 * Admin queue: an SQ of 64-byte commands and a CQ of 16-byte completions, both
 * 2^log_depth entries. The driver writes a command, then writes the new
 * producer index to VRNIC_REG_AQ_PI. The device completes commands in order,
 * writing one CQE per command into the CQ slot with the same index.
 */
enum vrnic_aq_opcode {
	VRNIC_AQ_OP_QUERY_DEVICE = 0x01,
	VRNIC_AQ_OP_QUERY_PORT = 0x02,
	VRNIC_AQ_OP_SET_MAC = 0x03,
	VRNIC_AQ_OP_SET_MTU = 0x04,
	VRNIC_AQ_OP_ADD_GID = 0x05,
	VRNIC_AQ_OP_DEL_GID = 0x06,
	VRNIC_AQ_OP_QUERY_GID = 0x07,
};

enum vrnic_aq_status {
	VRNIC_AQ_STS_OK = 0,
	VRNIC_AQ_STS_BAD_OPCODE = 1,	/* opcode unknown */
	VRNIC_AQ_STS_BAD_FIELD = 2,	/* a field (or a reserved byte) is invalid */
	VRNIC_AQ_STS_BAD_INDEX = 3,	/* an object or table index is out of range */
	VRNIC_AQ_STS_NO_RESOURCES = 4,	/* a device limit is reached */
	VRNIC_AQ_STS_BAD_STATE = 5,	/* the object is not in a state for this */
	VRNIC_AQ_STS_DMA_ERROR = 6,	/* a buffer the command names cannot be accessed */
};

#define VRNIC_AQ_CMD_SIZE		64
#define VRNIC_AQ_CMD_SHIFT		6
#define VRNIC_AQ_CQE_SIZE		16
#define VRNIC_AQ_CQE_SHIFT		4
#define VRNIC_AQ_MAX_LOG_DEPTH		10

/* Common first 8 bytes of every command. cmd_id is echoed in the CQE. */
struct vrnic_aq_hdr {
	__le16 opcode;
	__le16 cmd_id;
	__le32 rsvd0;
};
static_assert(sizeof(struct vrnic_aq_hdr) == 8, "vrnic_aq_hdr");

/*
 * QUERY_DEVICE, QUERY_PORT, QUERY_GID: the device writes the answer
 * (vrnic_device_attr, vrnic_port_attr, vrnic_gid_entry) to resp_addr.
 * resp_len must equal the size of that struct. index: port number (1) for
 * QUERY_PORT, table index for QUERY_GID, 0 for QUERY_DEVICE.
 */
struct vrnic_aq_query {
	struct vrnic_aq_hdr hdr;
	__le64 resp_addr;
	__le32 resp_len;
	__le32 index;
	__u8 rsvd0[40];
};
static_assert(sizeof(struct vrnic_aq_query) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_query");

/* SET_MAC: the port's MAC, used by the Ethernet RX filter (and as the RoCE
 * source MAC once the transport exists). */
struct vrnic_aq_set_mac {
	struct vrnic_aq_hdr hdr;
	__u8 mac[6];
	__u8 rsvd0[50];
};
static_assert(sizeof(struct vrnic_aq_set_mac) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_set_mac");

/* SET_MTU: IP MTU of the port, 68 .. CAP_ETH.max_mtu. */
struct vrnic_aq_set_mtu {
	struct vrnic_aq_hdr hdr;
	__le32 mtu;
	__u8 rsvd0[52];
};
static_assert(sizeof(struct vrnic_aq_set_mtu) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_set_mtu");

enum vrnic_gid_type {
	VRNIC_GID_TYPE_ROCE_V2 = 1,	/* RoCEv2: ::ffff:a.b.c.d means IPv4 */
};

/* ADD_GID: set table entry index (< port gid_tbl_len); DEL_GID: clear it. */
struct vrnic_aq_gid {
	struct vrnic_aq_hdr hdr;
	__le32 index;
	__le32 type;		/* enum vrnic_gid_type; 0 for DEL_GID */
	__u8 gid[16];		/* network byte order; zero for DEL_GID */
	__u8 rsvd0[32];
};
static_assert(sizeof(struct vrnic_aq_gid) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_gid");

/*
 * Admin completion. The device writes result/cmd_id/status first and the
 * owner word last. owner.phase is 1 on the first pass through the ring and
 * flips on every wrap, so an entry is new when phase == !((ci >> log_depth) & 1).
 *
 * owner
 * 31:1 : reserved
 * 0    : phase
 */
struct vrnic_aq_cqe {
	__le64 result;		/* command-specific; 0 when not defined */
	__le16 cmd_id;
	__u8 status;		/* enum vrnic_aq_status */
	__u8 rsvd0;
	__le32 owner;
};
static_assert(sizeof(struct vrnic_aq_cqe) == VRNIC_AQ_CQE_SIZE, "vrnic_aq_cqe");
#define VRNIC_OWNER_PHASE		VRNIC_BIT(0)

/*
 * MR page sizes: every power of two from 4 KiB to 1 GiB (page_size_cap).
 */
#define VRNIC_PAGE_SIZE_CAP		((__u64)VRNIC_GENMASK(30, 12))

/*
 * Answer to QUERY_DEVICE. The max_* limits are the device's object limits
 * (from -device properties); interface 1.0 has no objects that consume them
 * yet.
 *
 * fw_version (printed "major.minor.sub_minor" by vrnic.ko and libvrnic, the
 * split rxe and erdma use; 1.0.0 is 0x0000000100000000)
 * 63:48 : reserved
 * 47:32 : major
 * 31:16 : minor
 * 15:0  : sub_minor
 */
struct vrnic_device_attr {
	__le64 fw_version;
	__u8 node_guid[8];		/* modified EUI-64 of the permanent MAC */
	__u8 sys_image_guid[8];		/* network order */
	__le64 max_mr_size;
	__le64 page_size_cap;		/* bitmap of supported MR page sizes */
	__le32 vendor_id;
	__le32 vendor_part_id;
	__le32 hw_version;
	__le32 max_qp;
	__le32 max_qp_wr;
	__le32 max_sge;
	__le32 max_cq;
	__le32 max_cqe;
	__le32 max_mr;
	__le32 max_pd;
	__le32 max_qp_rd_atom;
	__le32 max_srq;
	__le32 max_srq_wr;
	__le32 max_inline_data;
	__le32 num_comp_vectors;
	__le32 rsvd0;
};
static_assert(sizeof(struct vrnic_device_attr) == 104, "vrnic_device_attr");

/* Answer to QUERY_PORT (port 1, the only port). */
struct vrnic_port_attr {
	__le32 flags;			/* VRNIC_PORT_FLAG_* */
	__le32 max_mtu;			/* largest IP MTU */
	__le32 mtu;			/* current IP MTU (SET_MTU) */
	__le32 gid_tbl_len;
	__le32 pkey_tbl_len;
	__le32 speed_mbps;		/* Ethernet link speed */
	__u8 mac[6];			/* current MAC (SET_MAC, else permanent) */
	__u8 rsvd0[2];
};
static_assert(sizeof(struct vrnic_port_attr) == 32, "vrnic_port_attr");
#define VRNIC_PORT_FLAG_LINK_UP		VRNIC_BIT(0)

/* Answer to QUERY_GID: the device's view of one GID table entry. */
struct vrnic_gid_entry {
	__u8 gid[16];
	__le32 type;			/* enum vrnic_gid_type, 0 = entry unused */
	__le32 rsvd0[3];
};
static_assert(sizeof(struct vrnic_gid_entry) == 32, "vrnic_gid_entry");

/* ---------------------------------------------------------------------------
 * Async event queue (AEQ): 16-byte entries written by the device, same
 * owner/phase rule as the admin CQ. Interrupt on VRNIC_VEC_ADMIN when armed.
 */
#define VRNIC_AEQE_SIZE			16
#define VRNIC_AEQ_MAX_LOG_DEPTH		10

enum vrnic_aeq_event {
	VRNIC_AEQ_EV_PORT_ACTIVE = 1,	/* data = port number */
	VRNIC_AEQ_EV_PORT_DOWN = 2,	/* data = port number */
};

struct vrnic_aeqe {
	__le32 event;			/* enum vrnic_aeq_event */
	__le32 data;
	__le32 rsvd0;
	__le32 owner;			/* VRNIC_OWNER_PHASE */
};
static_assert(sizeof(struct vrnic_aeqe) == VRNIC_AEQE_SIZE, "vrnic_aeqe");

/* ---------------------------------------------------------------------------
 * Ethernet rings. One 16-byte descriptor per frame in both directions.
 * TX: the driver fills addr/len, then advances ETH_TX_PI; the device sends
 *     the frame if 14 <= len <= mtu + 18 (mtu: the port's current MTU, see
 *     SET_MTU) and sets status.done, with status.error if it was not sent.
 * RX: the driver fills addr/len (buffer size), then advances ETH_RX_PI; the
 *     device writes a received frame into the buffer, sets len to the frame
 *     length, then writes status with done set. A frame longer than mtu + 18
 *     or than the buffer is dropped, never truncated, and consumes no
 *     descriptor. (Drop counters are internal in interface 1.0.)
 * Descriptors complete in ring order; status is written last.
 */
#define VRNIC_ETH_DESC_SIZE		16
#define VRNIC_ETH_MAX_LOG_DEPTH		12

struct vrnic_eth_desc {
	__le64 addr;
	__le16 len;
	__le16 rsvd0;
	__le16 status;			/* written by the device */
	__le16 rsvd1;
};
static_assert(sizeof(struct vrnic_eth_desc) == VRNIC_ETH_DESC_SIZE, "vrnic_eth_desc");

/*
 * vrnic_eth_desc.status
 * 15:2 : reserved
 * 1    : error - TX: frame not sent (bad length or DMA error)
 * 0    : done
 */
#define VRNIC_ETH_STS_DONE		VRNIC_BIT(0)
#define VRNIC_ETH_STS_ERROR		VRNIC_BIT(1)

#endif /* VRNIC_HW_DEFS_H */
