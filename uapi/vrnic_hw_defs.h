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
#define VRNIC_GENMASK_ULL(h, l)	(((~0ULL) >> (63 - (h))) & ((~0ULL) << (l)))
/*
 * Environment-neutral accessors for QEMU (which has no FIELD_GET): (v & mask)
 * shifted down by the mask's lowest set bit. mask is always one of the
 * constant *_MASK macros below, so using it twice has no side effect.
 */
#define VRNIC_MASK_LSB(mask)		((mask) & -(mask))
#define VRNIC_FIELD_GET(mask, v)	(((v) & (mask)) / VRNIC_MASK_LSB(mask))
#define VRNIC_FIELD_PREP(mask, v)	(((v) * VRNIC_MASK_LSB(mask)) & (mask))

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

/*
 * BARs: 0 = registers, 2 = doorbell pages, 4 = MSI-X table and PBA,
 * 5 = device memory (VRNIC_DEVICE_CAP_DEVICE_MEM): on-device
 * RAM, 32-bit prefetchable, a power of two of at least 4 KiB that the
 * driver hands out in pages (ibv_alloc_dm). CPU accesses through the BAR
 * and device accesses through an MR registered with
 * VRNIC_MR_FLAG_DEVICE_MEM see the same bytes. Absent when the device has
 * none (dm-size=0).
 */
#define VRNIC_BAR_REGS		0
#define VRNIC_BAR_DB		2
#define VRNIC_BAR_MSIX		4
#define VRNIC_BAR_DM		5
#define VRNIC_REGS_SIZE		0x1000	/* the register page (BAR0 page 0) */
#define VRNIC_BAR0_SIZE		0x2000	/* and the clock page (page 1) */

/*
 * The interface version reported in VRNIC_REG_VERSION. There is one
 * released interface, 1.0; a later minor may only add what a device_caps
 * bit announces, so a driver accepts any minor of its major.
 */
#define VRNIC_VERSION_MAJOR	1
#define VRNIC_VERSION_MINOR	0
#define VRNIC_ID_MAGIC		0x76726e63	/* ASCII "vrnc" */

/* MSI-X vector assignment (fixed): */
#define VRNIC_VEC_ADMIN		0	/* admin completions + async events */
#define VRNIC_VEC_ETH		1	/* Ethernet TX and RX completions */
#define VRNIC_VEC_COMP_FIRST	2	/* completion EQ eqn uses vector eqn + 1 */

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
#define VRNIC_REG_EQ_CI_BASE	0x400	/* WO completion EQ eqn: 0x400 + 4 * eqn */
#define VRNIC_REG_EQ_CI(eqn)	(VRNIC_REG_EQ_CI_BASE + 4 * (eqn))

/*
 * BAR0 page 1, the clock page (VRNIC_DEVICE_CAP_TIMESTAMP; reads 0 without
 * it): the device clock, alone on its page so that a driver can map it
 * read-only into user processes. The clock counts nanoseconds of the
 * host's real time (CLOCK_REALTIME, the Unix epoch): 1 GHz, 64 bits. It is
 * what timestamp CQEs carry. Read HI, LO, then HI again until both HI reads
 * agree; nothing latches, so any number of readers may read at once.
 * Writes are ignored.
 */
#define VRNIC_CLOCK_PAGE	0x1000
#define VRNIC_REG_CLOCK_LO	0x1000	/* RO */
#define VRNIC_REG_CLOCK_HI	0x1004	/* RO */
#define VRNIC_CLOCK_KHZ		1000000	/* ns: 10^6 kHz */

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
 * VRNIC_REG_AEQ_CI, VRNIC_REG_EQ_CI(eqn) (same layout)
 * 31    : arm - raise the queue's vector (VRNIC_VEC_ADMIN for the AEQ, the
 *         EQ's own vector for EQ_CI) on the next event, or at once if events
 *         past ci are already written
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

/* Rings driver-programmed through registers are aligned to this. */
#define VRNIC_RING_ALIGN		64

/* ---------------------------------------------------------------------------
 * Admin queue: an SQ of 128-byte commands and a CQ of 16-byte completions, both
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
	VRNIC_AQ_OP_QUERY_PORT_STATS = 0x08,
	/* objects (see "Objects" below) */
	VRNIC_AQ_OP_CREATE_EQ = 0x10,
	VRNIC_AQ_OP_DESTROY_EQ = 0x11,
	VRNIC_AQ_OP_ALLOC_PD = 0x12,
	VRNIC_AQ_OP_DEALLOC_PD = 0x13,
	VRNIC_AQ_OP_REG_MR = 0x14,
	VRNIC_AQ_OP_DEREG_MR = 0x15,
	VRNIC_AQ_OP_QUERY_MR = 0x16,
	VRNIC_AQ_OP_REREG_MR = 0x17,
	VRNIC_AQ_OP_CREATE_CQ = 0x18,
	VRNIC_AQ_OP_DESTROY_CQ = 0x19,
	VRNIC_AQ_OP_RESIZE_CQ = 0x1a,
	VRNIC_AQ_OP_CREATE_QP = 0x1b,
	VRNIC_AQ_OP_MODIFY_QP = 0x1c,
	VRNIC_AQ_OP_QUERY_QP = 0x1d,
	VRNIC_AQ_OP_DESTROY_QP = 0x1e,
	VRNIC_AQ_OP_CREATE_SRQ = 0x1f,
	VRNIC_AQ_OP_MODIFY_SRQ = 0x20,
	VRNIC_AQ_OP_QUERY_SRQ = 0x21,
	VRNIC_AQ_OP_DESTROY_SRQ = 0x22,
	/* UD multicast (see "Multicast groups" below) */
	VRNIC_AQ_OP_ATTACH_MCAST = 0x23,
	VRNIC_AQ_OP_DETACH_MCAST = 0x24,
	/* memory windows (see "Memory windows" below) */
	VRNIC_AQ_OP_ALLOC_MW = 0x25,
	VRNIC_AQ_OP_DEALLOC_MW = 0x26,
	/* fast registration (see "Fast-registration MRs") */
	VRNIC_AQ_OP_ALLOC_MR = 0x27,
	/* CQ event moderation (see "MODIFY_CQ" below) */
	VRNIC_AQ_OP_MODIFY_CQ = 0x28,
	/* VRNIC_DEVICE_CAP_ON_DEMAND (see "On-demand paging" below) */
	VRNIC_AQ_OP_PAGE_FAULT_DONE = 0x29,
	VRNIC_AQ_OP_ODP_INVALIDATE = 0x2a,
	/* VRNIC_DEVICE_CAP_RAW_PACKET (see "Flow steering" below) */
	VRNIC_AQ_OP_CREATE_FLOW = 0x2b,
	VRNIC_AQ_OP_DESTROY_FLOW = 0x2c,
	/* VRNIC_DEVICE_CAP_RSS (see "Receive-side scaling" below) */
	VRNIC_AQ_OP_CREATE_RSS = 0x2d,
	VRNIC_AQ_OP_DESTROY_RSS = 0x2e,
	/* VRNIC_DEVICE_CAP_XRC (see "XRC" below) */
	VRNIC_AQ_OP_ALLOC_XRCD = 0x2f,
	VRNIC_AQ_OP_DEALLOC_XRCD = 0x30,
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

#define VRNIC_AQ_CMD_SIZE		128
#define VRNIC_AQ_CMD_SHIFT		7
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
 * QUERY_DEVICE, QUERY_PORT, QUERY_GID, QUERY_PORT_STATS: the device writes
 * the answer (vrnic_device_attr, vrnic_port_attr, vrnic_gid_entry,
 * vrnic_port_stats) to resp_addr. resp_len must equal the size of that
 * struct. index: port number (1) for QUERY_PORT and QUERY_PORT_STATS, table
 * index for QUERY_GID, 0 for QUERY_DEVICE.
 */
struct vrnic_aq_query {
	struct vrnic_aq_hdr hdr;
	__le64 resp_addr;
	__le32 resp_len;
	__le32 index;
	__u8 rsvd0[104];
};

static_assert(sizeof(struct vrnic_aq_query) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_query");

/*
 * SET_MAC: the port's MAC, used by the Ethernet RX filter and as the RoCE
 * source MAC.
 */
struct vrnic_aq_set_mac {
	struct vrnic_aq_hdr hdr;
	__u8 mac[6];
	__u8 rsvd0[114];
};

static_assert(sizeof(struct vrnic_aq_set_mac) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_set_mac");

/* SET_MTU: IP MTU of the port, 68 .. CAP_ETH.max_mtu. */
struct vrnic_aq_set_mtu {
	struct vrnic_aq_hdr hdr;
	__le32 mtu;
	__u8 rsvd0[116];
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
	__u8 rsvd0[96];
};

static_assert(sizeof(struct vrnic_aq_gid) == VRNIC_AQ_CMD_SIZE, "vrnic_aq_gid");

/*
 * Rings. Every ring the device and a driver share (the admin queue and its
 * CQ, the AEQ, completion EQs, CQs, send, receive and shared receive
 * queues, the Ethernet rings) holds 2^log_depth entries and is indexed by
 * free-running counters: index idx is entry vrnic_idx_slot(idx, log_depth).
 * Where the producer marks an entry with a phase bit (owner or info bit 0),
 * it writes vrnic_idx_phase(idx, log_depth): 1 on the first pass over the
 * ring, flipping on every wrap, so the entry at the consumer's index is new
 * when its phase bit equals vrnic_idx_phase(ci, log_depth). A ring whose
 * doorbell or doorbell record carries a 16-bit index (CQs, EQs, send,
 * receive and shared receive queues) holds at most 2^15 entries, so that
 * the index tells a full ring from an empty one.
 */
#define VRNIC_RING_MAX_LOG_DEPTH	15

static inline __u32 vrnic_idx_slot(__u32 idx, __u32 log_depth)
{
	return idx & ((1U << log_depth) - 1);
}

static inline __u32 vrnic_idx_phase(__u32 idx, __u32 log_depth)
{
	return !((idx >> log_depth) & 1);
}

/*
 * Admin completion. The device writes result/cmd_id/status first and the
 * owner word (its phase, see "Rings") last.
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
 * (from -device properties), enforced exactly by the object commands.
 *
 * fw_version (printed "major.minor.sub_minor" by vrnic.ko and libvrnic, the
 * split rxe and erdma use; 1.0.0 is 0x0000000100000000)
 * 63:48 : reserved
 * 47:32 : major (VRNIC_FW_VERSION_MAJOR_MASK)
 * 31:16 : minor
 * 15:0  : sub_minor
 */
#define VRNIC_FW_VERSION_MAJOR_MASK	VRNIC_GENMASK_ULL(47, 32)
#define VRNIC_FW_VERSION_MINOR_MASK	VRNIC_GENMASK_ULL(31, 16)
#define VRNIC_FW_VERSION_SUB_MINOR_MASK	VRNIC_GENMASK_ULL(15, 0)

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
	__le32 device_caps;		/* VRNIC_DEVICE_CAP_* */
};

static_assert(sizeof(struct vrnic_device_attr) == 104, "vrnic_device_attr");
/*
 * device_caps: the optional features; a driver uses none whose bit is 0,
 * and ignores bits it does not know:
 * 31:9 : reserved
 * 8    : xrc - ALLOC_XRCD/DEALLOC_XRCD, XRC SRQs, VRNIC_QP_TYPE_XRC_INI
 *        and VRNIC_QP_TYPE_XRC_TGT QPs: the XRC transport (see "XRC")
 * 7    : rss - CREATE_RSS/DESTROY_RSS: receive-side scaling contexts that
 *        spread the frames a flow rule steers to them over receive-only
 *        raw packet QPs by a Toeplitz hash (see "Receive-side scaling")
 * 6    : raw packet - VRNIC_QP_TYPE_RAW_PACKET QPs send and receive whole
 *        Ethernet frames; CREATE_FLOW/DESTROY_FLOW steer received frames
 *        to them (see "Flow steering")
 * 5    : timestamp - the clock page (VRNIC_CLOCK_PAGE) counts, and CQs
 *        created with VRNIC_CQ_FLAG_TIMESTAMP write 64-byte CQEs that carry
 *        the clock when each was written
 * 4    : flush - the requester sends VRNIC_WQE_OP_FLUSH and the responder
 *        executes FLUSH requests (IBTA 1.5, "FLUSH and ATOMIC WRITE"):
 *        placement types global visibility and persistence, selectivity
 *        a range or the whole MR; VRNIC_ACCESS_FLUSH_* grant them
 * 3    : atomic_write - the requester sends VRNIC_WQE_OP_ATOMIC_WRITE and
 *        the responder executes ATOMIC WRITE requests (IBTA 1.5): 8 bytes
 *        to an 8-byte aligned address in one store, atomic with respect
 *        to every other atomic of this device, like atomic_hca
 * 2    : on_demand - REG_MR accepts VRNIC_MR_FLAG_ON_DEMAND, the device
 *        raises VRNIC_AEQ_EV_PAGE_FAULT and takes PAGE_FAULT_DONE and
 *        ODP_INVALIDATE ("On-demand paging")
 * 1    : device_mem - BAR5 holds device memory and REG_MR accepts
 *        VRNIC_MR_FLAG_DEVICE_MEM
 * 0    : atomic_hca - ATOMIC_CMP_SWP / ATOMIC_FETCH_ADD (8 bytes, 8-byte
 *        aligned) are executed by the responder atomically with respect to
 *        every other atomic on this device (any QP): IB_ATOMIC_HCA. Not
 *        atomic against CPU accesses to the same memory.
 */
#define VRNIC_DEVICE_CAP_ATOMIC_HCA	VRNIC_BIT(0)
#define VRNIC_DEVICE_CAP_DEVICE_MEM	VRNIC_BIT(1)
#define VRNIC_DEVICE_CAP_ON_DEMAND	VRNIC_BIT(2)
#define VRNIC_DEVICE_CAP_ATOMIC_WRITE	VRNIC_BIT(3)
#define VRNIC_DEVICE_CAP_FLUSH		VRNIC_BIT(4)
#define VRNIC_DEVICE_CAP_TIMESTAMP	VRNIC_BIT(5)
#define VRNIC_DEVICE_CAP_RAW_PACKET	VRNIC_BIT(6)
#define VRNIC_DEVICE_CAP_RSS		VRNIC_BIT(7)
#define VRNIC_DEVICE_CAP_XRC		VRNIC_BIT(8)

/*
 * The port's P_Key table has one entry, the default partition with full
 * membership: the device sends it in every BTH and accepts a packet whose
 * P_Key names the default partition, full or limited member
 * (VRNIC_PKEY_KEY_MASK).
 */
#define VRNIC_PKEY_DEFAULT		0xffff
#define VRNIC_PKEY_KEY_MASK		0x7fff

/*
 * The device has one port, number 1: QUERY_PORT and QUERY_PORT_STATS take
 * it as their index, PORT_ACTIVE/PORT_DOWN events carry it as their data,
 * and a QP's port attribute must be it.
 */
#define VRNIC_PORT_NUM			1

/* Answer to QUERY_PORT (port VRNIC_PORT_NUM, the only port). */
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

/*
 * Answer to QUERY_PORT_STATS (index: port number; resp_len: the size of
 * struct vrnic_port_stats): the port's transport counters, indexed by enum
 * vrnic_port_stat. They count from device creation (a reset through
 * DEV_CTRL does not clear them) and wrap at 2^64. Slots past
 * VRNIC_PORT_STAT_NUM are zero; a later minor version may append counters
 * at the end, never renumber them.
 */
enum vrnic_port_stat {
	VRNIC_PORT_STAT_TX_PKTS,	/* RoCEv2 packets sent (incl. loopback) */
	VRNIC_PORT_STAT_TX_BYTES,	/* their frame bytes */
	VRNIC_PORT_STAT_RX_PKTS,	/* RoCEv2 packets accepted by the codec */
	VRNIC_PORT_STAT_RX_BYTES,
	VRNIC_PORT_STAT_LOOP_PKTS,	/* delivered on the loopback path */
	VRNIC_PORT_STAT_RX_MALFORMED,	/* header/length errors: dropped */
	VRNIC_PORT_STAT_RX_ICRC_ERR,	/* ICRC mismatch: dropped */
	VRNIC_PORT_STAT_RX_NO_QP,	/* no such QP or wrong type: dropped */
	VRNIC_PORT_STAT_RX_BAD_STATE,	/* QP cannot receive: dropped */
	VRNIC_PORT_STAT_RX_BAD_PKEY,
	VRNIC_PORT_STAT_RX_BAD_OPCODE,	/* out of sequence or not for the QP */
	VRNIC_PORT_STAT_RX_PSN_WINDOW,	/* PSN outside the window: dropped */
	VRNIC_PORT_STAT_RX_OUT_OF_SEQ,	/* PSN gap (RC NAK, UC message drop) */
	VRNIC_PORT_STAT_RX_DUPLICATE,	/* RC duplicate requests */
	VRNIC_PORT_STAT_RX_QKEY_MISMATCH, /* UD: dropped, no CQE */
	VRNIC_PORT_STAT_RX_NO_WQE,	/* UD/UC: no receive WQE, dropped */
	VRNIC_PORT_STAT_RX_RESP_DROP,	/* responses matching no request */
	VRNIC_PORT_STAT_NAKS_SENT,	/* every kind, RNR included */
	VRNIC_PORT_STAT_RNR_NAKS_SENT,
	VRNIC_PORT_STAT_NAKS_RCVD,	/* every kind, RNR included */
	VRNIC_PORT_STAT_RNR_NAKS_RCVD,
	VRNIC_PORT_STAT_SEQ_NAKS_RCVD,
	/* requester recovery */
	VRNIC_PORT_STAT_RETRANSMITS,	/* request packets sent again */
	VRNIC_PORT_STAT_TIMEOUTS,	/* retransmit timer expiries */
	VRNIC_PORT_STAT_IMPLIED_NAKS,	/* READ/atomic responses found missing */
	VRNIC_PORT_STAT_RNR_RETRIES,	/* RNR waits, each ending in a resend */
	VRNIC_PORT_STAT_RETRY_EXC,	/* WQEs failed RETRY_EXC_ERR */
	VRNIC_PORT_STAT_RNR_RETRY_EXC,	/* WQEs failed RNR_RETRY_EXC_ERR */
	/* responder recovery */
	VRNIC_PORT_STAT_READ_REPLAYS,	/* duplicate READs served again */
	VRNIC_PORT_STAT_ATOMIC_REPLAYS,	/* duplicate atomics, from the cache */
	/* fault injection (wire frames this port sent or received) */
	VRNIC_PORT_STAT_FAULT_DROPS,
	VRNIC_PORT_STAT_FAULT_REORDERS,
	VRNIC_PORT_STAT_FAULT_DUPS,
	VRNIC_PORT_STAT_FAULT_CORRUPTS,	/* one bit flipped under the ICRC */
	VRNIC_PORT_STAT_FAULT_DELAYS,
	/* loss recovery (Documentation/reliability.rst) */
	VRNIC_PORT_STAT_RX_OOO_HELD,	/* RC packets held past a gap, not NAKed */
	VRNIC_PORT_STAT_EARLY_RETRANSMITS, /* go-backs on the early timer */
	/* a hostile guest or peer (Documentation/security.rst) */
	VRNIC_PORT_STAT_RX_BAD_ADDR,	/* RC/UC: not from the QP's peer GID */
	VRNIC_PORT_STAT_RX_OOO_DROPPED,	/* held past a gap: refused or aged out */
	VRNIC_PORT_STAT_DMA_ERRORS,	/* transfers the bus refused (not RAM) */
	VRNIC_PORT_STAT_ETH_RX_NO_BUF,	/* Ethernet frames: no RX buffer, FIFO full */
	/* the translation cache (see "Memory descriptor") */
	VRNIC_PORT_STAT_XLATE_HITS,	/* page translations found in the cache */
	VRNIC_PORT_STAT_XLATE_MISSES,	/* ... that walked the tables */
	/* end-to-end credits (Documentation/reliability.rst) */
	VRNIC_PORT_STAT_CREDIT_WAITS,	/* SENDs that waited for credits */
	VRNIC_PORT_STAT_CREDIT_ACKS,	/* ACKs sent when the RQ was refilled */
	/* VRNIC_DEVICE_CAP_ON_DEMAND: on-demand paging */
	VRNIC_PORT_STAT_PAGE_FAULTS,	/* PAGE_FAULT events raised */
	VRNIC_PORT_STAT_PAGE_FAULT_WAITS, /* accesses that met an unmapped page */
	VRNIC_PORT_STAT_ODP_INVALIDATIONS, /* ODP_INVALIDATE commands done */
	/* VRNIC_DEVICE_CAP_RAW_PACKET: frames flow rules took */
	VRNIC_PORT_STAT_FLOW_RX,	/* delivered to a raw packet QP */
	VRNIC_PORT_STAT_FLOW_DROPS,	/* a drop rule, or the QP could not take it */
	VRNIC_PORT_STAT_NUM
};

#define VRNIC_PORT_STATS_SLOTS		64

struct vrnic_port_stats {
	__le64 counter[VRNIC_PORT_STATS_SLOTS];
};

static_assert(sizeof(struct vrnic_port_stats) == 512, "vrnic_port_stats");
static_assert(VRNIC_PORT_STAT_NUM <= VRNIC_PORT_STATS_SLOTS, "port stats");

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
	VRNIC_AEQ_EV_CQ_ERR = 3,	/* data = cqn: overrun, the CQ stopped */
	/* data = qpn: the QP went to ERR on a device-detected error */
	VRNIC_AEQ_EV_QP_FATAL = 4,
	/* data = qpn: an SRQ-attached QP in ERR takes no more receive WQEs */
	VRNIC_AEQ_EV_QP_LAST_WQE = 5,
	VRNIC_AEQ_EV_SRQ_LIMIT = 6,	/* data = srqn: fewer WQEs than limit */
	/* vrnic_aeqe_page_fault: an on-demand MR's pages are not mapped */
	VRNIC_AEQ_EV_PAGE_FAULT = 7,
};

/*
 * event
 * 31:8 : event-specific (0 unless the event says otherwise)
 * 7:0  : enum vrnic_aeq_event
 */
struct vrnic_aeqe {
	__le32 event;
	__le32 data;
	__le32 rsvd0;
	__le32 owner;			/* VRNIC_OWNER_PHASE */
};

static_assert(sizeof(struct vrnic_aeqe) == VRNIC_AEQE_SIZE, "vrnic_aeqe");
#define VRNIC_AEQE_EVENT_MASK		VRNIC_GENMASK(7, 0)

/*
 * A VRNIC_AEQ_EV_PAGE_FAULT entry: the same size, event code and owner
 * word as vrnic_aeqe, with the fault in the other bits ("On-demand
 * paging"). page is the first page the access needs that is not mapped,
 * an index into the MR's pages (48 bits: an implicit MR has 2^36).
 * event
 * 31:16 : qpn
 * 15:10 : reserved
 * 9     : responder - an incoming request met the pages (else a WQE of
 *         qpn's send queue, or the answer to one)
 * 8     : write - the access writes (the pages must be writable)
 * 7:0   : VRNIC_AEQ_EV_PAGE_FAULT
 * owner
 * 31:16 : page bits 47:32
 * 15:4  : npages - pages from page on the access needs (at most
 *         VRNIC_ODP_FAULT_MAX_PAGES; a longer access faults again)
 * 3:1   : reserved
 * 0     : VRNIC_OWNER_PHASE
 */
struct vrnic_aeqe_page_fault {
	__le32 event;
	__le32 key;			/* the MR's key */
	__le32 page_lo;			/* page bits 31:0 */
	__le32 owner;
};

static_assert(sizeof(struct vrnic_aeqe_page_fault) == VRNIC_AEQE_SIZE,
	      "vrnic_aeqe_page_fault");
#define VRNIC_PF_QPN_MASK		VRNIC_GENMASK(31, 16)
#define VRNIC_PF_RESPONDER		VRNIC_BIT(9)
#define VRNIC_PF_WRITE			VRNIC_BIT(8)
#define VRNIC_PF_PAGE_HI_MASK		VRNIC_GENMASK(31, 16)
#define VRNIC_PF_NPAGES_MASK		VRNIC_GENMASK(15, 4)
#define VRNIC_ODP_FAULT_MAX_PAGES	4095

/* ---------------------------------------------------------------------------
 * Ethernet rings. One 16-byte descriptor per frame in both directions.
 * TX: the driver fills addr/len, then advances ETH_TX_PI; the device sends
 *     the frame if 14 <= len <= mtu + 18 (mtu: the port's current MTU, see
 *     SET_MTU) and sets status.done, with status.error if it was not sent.
 * RX: the driver fills addr/len (buffer size), then advances ETH_RX_PI; the
 *     device writes a received frame into the buffer, sets len to the frame
 *     length, then writes status with done set. A frame longer than mtu + 18
 *     or than the buffer is dropped, never truncated, and consumes no
 *     descriptor (only drops for want of a buffer are counted, in
 *     VRNIC_PORT_STAT_ETH_RX_NO_BUF).
 * Descriptors complete in ring order; status is written last.
 */
#define VRNIC_ETH_DESC_SIZE		16
#define VRNIC_ETH_MAX_LOG_DEPTH		12
/* Frame sizes: 14 .. mtu + 18 (raw packet QPs' frames too). */
#define VRNIC_ETH_MIN_FRAME		14	/* the Ethernet header */
#define VRNIC_ETH_FRAME_OVERHEAD	18	/* header + one 802.1Q tag */

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

/* ===========================================================================
 * Objects: protection domains, memory regions, event queues,
 * completion queues, queue pairs and shared receive queues.
 *
 * Object numbers (eqn, pdn, cqn, qpn, srqn) are chosen by the device and
 * returned in vrnic_aq_cqe.result; 0 is never a valid number, and every
 * number fits in 16 bits (doorbells carry it in 15:0): object limits are at
 * most 65534, queue depths at most 32768 (a power of two). qpn 1 is the GSI
 * QP (created with VRNIC_QP_TYPE_GSI); other QPs get qpn >= 2. Limits are
 * the QUERY_DEVICE max_* values; one more object than the limit fails with
 * VRNIC_AQ_STS_NO_RESOURCES. Every object-number field in a command is
 * bounds-checked and must name a live object (else BAD_INDEX) of the same
 * owning context (uctx) as the object being created (else BAD_FIELD).
 *
 * A destroy command completes only when the device has stopped all DMA to
 * the object's memory: the driver may unpin it as soon as the CQE arrives.
 * Objects still referenced (a CQ with QPs, a PD with MRs/QPs/SRQs, an EQ
 * with CQs, an SRQ with QPs) cannot be destroyed: BAD_STATE.
 * --------------------------------------------------------------------------
 */

/*
 * Memory descriptor: how the device translates [iova, iova + length) of a
 * memory region or a queue ring into DMA addresses. The region is split into
 * pages of 2^page_shift bytes (12 <= page_shift <= 30, VRNIC_PAGE_SIZE_CAP)
 * aligned on iova's page boundary: page i covers
 *   [(iova & ~(psz - 1)) + i * psz, ... + psz)
 * and npages = the number of such pages [iova, iova + length) touches. The
 * DMA address of byte a is page_addr[(a - (iova & ~(psz-1))) >> page_shift]
 * + (a & (psz - 1)); every page_addr must be psz-aligned.
 *
 * levels says where the page addresses are:
 *  0: inline: pages[0 .. npages-1] (npages <= VRNIC_MEM_INLINE_PAGES)
 *  1: pages[0] is the DMA address of a table page: 4 KiB, 4 KiB-aligned,
 *     512 __le64 page addresses (npages <= 512)
 *  2: pages[0] points at a directory page of 512 table-page addresses
 *     (npages <= 512 * 512)
 *  3: one more directory level (npages <= 512^3)
 * Unused inline slots and table entries past npages are ignored. The device
 * may cache any page address it walked from the command that accepted the
 * descriptor until the command that destroys or replaces the memory
 * completes, and after a device reset.
 * So the driver keeps the tables intact while the object lives, and may
 * free them and the pages once that command completed: nothing of the old
 * memory is cached then. A change to a live memory's tables takes effect at
 * no defined time. QUERY_MR always reads the tables.
 *
 * flags
 * 31:10 : reserved
 * 9:8   : levels
 * 7:0   : page_shift
 */
#define VRNIC_MEM_INLINE_PAGES		6
#define VRNIC_MEM_TABLE_ENTRIES		512
#define VRNIC_MEM_MAX_LEVELS		3
#define VRNIC_MEM_PAGE_SHIFT_MASK	VRNIC_GENMASK(7, 0)
#define VRNIC_MEM_LEVELS_MASK		VRNIC_GENMASK(9, 8)

struct vrnic_mem_desc {
	__le64 iova;
	__le64 length;
	__le32 flags;
	__le32 npages;
	__le64 pages[VRNIC_MEM_INLINE_PAGES];
};

static_assert(sizeof(struct vrnic_mem_desc) == 72, "vrnic_mem_desc");

/*
 * Protection: MR access flags (IB semantics). LOCAL_READ is always granted.
 * REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE (else BAD_FIELD).
 * An ATOMIC WRITE needs REMOTE_WRITE; a FLUSH needs FLUSH_GLOBAL and/or
 * FLUSH_PERSISTENT, as its placement type asks (VRNIC_DEVICE_CAP_FLUSH).
 */
#define VRNIC_ACCESS_LOCAL_WRITE	VRNIC_BIT(0)
#define VRNIC_ACCESS_REMOTE_READ	VRNIC_BIT(1)
#define VRNIC_ACCESS_REMOTE_WRITE	VRNIC_BIT(2)
#define VRNIC_ACCESS_REMOTE_ATOMIC	VRNIC_BIT(3)
#define VRNIC_ACCESS_MW_BIND		VRNIC_BIT(4)	/* MRs: windows may bind */
#define VRNIC_ACCESS_FLUSH_GLOBAL	VRNIC_BIT(5)
#define VRNIC_ACCESS_FLUSH_PERSISTENT	VRNIC_BIT(6)
#define VRNIC_ACCESS_ALL		VRNIC_GENMASK(6, 0)

/*
 * Keys (lkey = rkey):
 * 31:8 : mr index (device-chosen, >= 1)
 * 7:0  : key byte - the consumer's (ib_inc_rkey, FRWR); chosen at REG_MR
 * A key is valid only while its index holds a live MR whose key byte equals
 * it: after DEREG_MR, or REREG_MR with a new key byte, the old key fails.
 */
#define VRNIC_KEY_INDEX_MASK		VRNIC_GENMASK(31, 8)
#define VRNIC_KEY_BYTE_MASK		VRNIC_GENMASK(7, 0)

/*
 * CREATE_EQ: a completion event queue, kernel memory, on one MSI-X vector;
 * result = eqn, 1 .. num_comp_vectors (at most one EQ per completion
 * vector). The EQ is acknowledged and armed through VRNIC_REG_EQ_CI(eqn)
 * exactly like the AEQ; an EQE (vrnic_eqe) names the CQ whose arm fired.
 */
struct vrnic_aq_create_eq {
	struct vrnic_aq_hdr hdr;
	__le64 ring_addr;	/* DMA address, 64-byte aligned, contiguous */
	__le32 log_depth;	/* 1 .. VRNIC_EQ_MAX_LOG_DEPTH */
	__le32 vector;		/* VRNIC_VEC_COMP_FIRST .. total_vectors - 1 */
	__u8 rsvd0[104];
};

static_assert(sizeof(struct vrnic_aq_create_eq) == VRNIC_AQ_CMD_SIZE, "create_eq");
/*
 * A CQ posts at most one EQE per arm, so an EQ with at least max_cq entries
 * never overflows; the device's max_cq is at most 2^15 for that reason.
 * An EQ's index is 16 bits, as every ring's ("Rings").
 */
#define VRNIC_EQ_MAX_LOG_DEPTH		VRNIC_RING_MAX_LOG_DEPTH

/*
 * DESTROY_EQ, DEALLOC_PD, DEREG_MR, DESTROY_CQ, DESTROY_QP, DESTROY_SRQ:
 * handle = eqn, pdn, lkey, cqn, qpn or srqn.
 */
struct vrnic_aq_destroy {
	struct vrnic_aq_hdr hdr;
	__le32 handle;
	__u8 rsvd0[116];
};

static_assert(sizeof(struct vrnic_aq_destroy) == VRNIC_AQ_CMD_SIZE, "destroy");

/*
 * ALLOC_PD: result = pdn. uctx is the doorbell page (BAR2 page index) of the
 * owning context, 0 for the kernel; PDs are only checked against it by
 * objects created in the same context.
 */
struct vrnic_aq_alloc_pd {
	struct vrnic_aq_hdr hdr;
	__le32 uctx;
	__u8 rsvd0[116];
};

static_assert(sizeof(struct vrnic_aq_alloc_pd) == VRNIC_AQ_CMD_SIZE, "alloc_pd");

/*
 * REG_MR: result = key. With VRNIC_MR_FLAG_DMA the MR covers the whole DMA
 * address space untranslated (get_dma_mr for kernel consumers: mem.iova = 0,
 * mem.length = ~0, no pages, no remote access). With
 * VRNIC_MR_FLAG_DEVICE_MEM the MR is device memory (BAR5), not guest
 * memory: [mem.iova, mem.iova + mem.length) maps to the bytes starting at
 * offset mem.pages[0] of the device memory, which must hold them all;
 * mem.flags and mem.npages are 0.
 * REREG_MR: handle = current key; VRNIC_MR_REREG_* select what changes; the
 * MR keeps its index, its key byte becomes key_byte; result = the new key.
 */
struct vrnic_aq_reg_mr {
	struct vrnic_aq_hdr hdr;
	__le32 handle;		/* REREG_MR only: the current key */
	__le32 pdn;
	__le32 access;		/* VRNIC_ACCESS_* */
	__le32 flags;		/* REG_MR: VRNIC_MR_FLAG_*; REREG_MR: VRNIC_MR_REREG_* */
	__u8 key_byte;
	__u8 rsvd0[7];
	struct vrnic_mem_desc mem;
	__u8 rsvd1[24];
};

static_assert(sizeof(struct vrnic_aq_reg_mr) == VRNIC_AQ_CMD_SIZE, "reg_mr");
#define VRNIC_MR_FLAG_DMA		VRNIC_BIT(0)
#define VRNIC_MR_FLAG_DEVICE_MEM	VRNIC_BIT(1)
#define VRNIC_MR_FLAG_ON_DEMAND		VRNIC_BIT(2)	/* "On-demand paging" */
#define VRNIC_MR_FLAG_IMPLICIT		VRNIC_BIT(3)	/* ... of all memory */
#define VRNIC_MR_REREG_TRANS		VRNIC_BIT(0)	/* new mem */
#define VRNIC_MR_REREG_PD		VRNIC_BIT(1)	/* new pdn */
#define VRNIC_MR_REREG_ACCESS		VRNIC_BIT(2)	/* new access */

/*
 * On-demand paging (VRNIC_DEVICE_CAP_ON_DEMAND). An MR registered with
 * VRNIC_MR_FLAG_ON_DEMAND (a user MR: not DMA, not device memory; mem
 * levels 1..3) has tables whose entries the driver fills and clears while
 * the MR lives. A directory entry of 0 means that no page below it is
 * mapped, so table pages may be added as pages are. With
 * VRNIC_MR_FLAG_IMPLICIT as well, the MR is all of the I/O address space
 * up to 2^VRNIC_ODP_IMPLICIT_VA_BITS, in 4 KiB pages through
 * VRNIC_ODP_IMPLICIT_LEVELS levels of tables: mem.iova 0, mem.length ~0,
 * mem.flags and mem.npages 0, mem.pages[0] the top directory (4 KiB
 * aligned), the other pages 0. The leaf entries:
 * 63:12 : page address (psz-aligned)
 * 11:2  : reserved, 0
 * 1     : writable - the page may be written (else only read)
 * 0     : present - the page is mapped
 * The device only uses an entry that is present, and for a write also
 * writable; it caches only such entries. An access that needs pages that
 * are not (a local SGE of a send WQE, the place of a READ response or
 * atomic result, an incoming WRITE, READ, atomic or SEND) waits, and the
 * device posts one VRNIC_AEQ_EV_PAGE_FAULT per QP and side until the
 * driver answers it with PAGE_FAULT_DONE:
 *  - a send WQE (requester): the QP's send queue stops before the packet
 *    that needs the pages (a READ/atomic: before the request leaves; its
 *    response finding them gone is dropped) and goes on at
 *    PAGE_FAULT_DONE, which checks again;
 *  - an incoming RC request: RNR NAK (the requester resends after its RNR
 *    wait); a READ response stream stops at the packet and goes on at
 *    PAGE_FAULT_DONE. UC and UD drop the packet (the message is lost).
 * Filling entries needs no command: the device reads absent entries again
 * at every access. Clearing them does: ODP_INVALIDATE.
 */
#define VRNIC_ODP_PRESENT		VRNIC_BIT(0)
#define VRNIC_ODP_WRITABLE		VRNIC_BIT(1)
#define VRNIC_ODP_ENTRY_FLAGS		VRNIC_GENMASK(11, 0)
#define VRNIC_ODP_IMPLICIT_VA_BITS	48
#define VRNIC_ODP_IMPLICIT_LEVELS	4
#define VRNIC_ODP_IMPLICIT_PAGE_SHIFT	12

/*
 * PAGE_FAULT_DONE: the answer to the PAGE_FAULT event of qpn whose
 * VRNIC_PF_RESPONDER bit equals flags' (the other bits of flags are
 * ignored). status VRNIC_PF_DONE_MAPPED: the pages are mapped now, the
 * access goes on (and faults again if they are not); VRNIC_PF_DONE_FAILED:
 * the range cannot be mapped - the WQE completes with LOC_PROT_ERR, or the
 * request is answered NAK REMOTE_ACCESS (RC), and the QP goes to ERR.
 * BAD_INDEX: no such QP; BAD_STATE: no fault of that side is waiting for
 * an answer (the QP was reset, or the fault was answered already).
 */
struct vrnic_aq_page_fault_done {
	struct vrnic_aq_hdr hdr;
	__le32 qpn;
	__le32 flags;		/* VRNIC_PF_RESPONDER or 0 */
	__le32 status;		/* VRNIC_PF_DONE_* */
	__u8 rsvd0[108];
};

static_assert(sizeof(struct vrnic_aq_page_fault_done) == VRNIC_AQ_CMD_SIZE,
	      "page_fault_done");
#define VRNIC_PF_DONE_MAPPED		0
#define VRNIC_PF_DONE_FAILED		1

/*
 * ODP_INVALIDATE: handle = the key of an on-demand MR whose leaf entries
 * of pages [page, page + npages) the driver cleared. When it completes the
 * device holds no translation of them and no DMA to them runs or starts
 * until they are filled again: the driver may then unmap the pages.
 * BAD_INDEX: no such MR; BAD_STATE: not on-demand; BAD_FIELD: the range
 * is not inside the MR or npages is 0.
 */
struct vrnic_aq_odp_invalidate {
	struct vrnic_aq_hdr hdr;
	__le32 handle;
	__le32 npages;
	__le64 page;
	__u8 rsvd0[104];
};

static_assert(sizeof(struct vrnic_aq_odp_invalidate) == VRNIC_AQ_CMD_SIZE,
	      "odp_invalidate");

/*
 * Memory windows. A window takes an index from the MR
 * table (max_mr counts both) and is reachable only as an R_Key, never as
 * an L_Key. ALLOC_MW creates it unbound in pdn with the given key byte;
 * result = its key. DEALLOC_MW (vrnic_aq_destroy, handle = the key; the
 * key byte is ignored: binds change it) unbinds and frees it.
 *
 * A BIND_MW send WQE (vrnic_bind_mw_wqe) binds it to [addr, addr + length)
 * of an MR of the QP's PD that grants VRNIC_ACCESS_MW_BIND (and
 * LOCAL_WRITE when the window grants REMOTE_WRITE or REMOTE_ATOMIC), with
 * the window's rights and the key byte of mw_key; the bound window's key
 * is mw_key. Type 1: any QP of the PD may bind it again (length 0
 * unbinds). Type 2 (2B): only an unbound window binds, and remote accesses
 * through it are honoured only on the QP that bound it; LOCAL_INV (send
 * WQE, imm_data = key) or a SEND with Invalidate arriving on that QP
 * unbind it. A failed bind completes with MW_BIND_ERR, a failed LOCAL_INV
 * with LOC_QP_OP_ERR. While windows are bound to an MR, DEREG_MR and
 * REREG_MR of it fail with BAD_STATE; destroying the QP a type 2 window
 * was bound through unbinds it.
 */
struct vrnic_aq_alloc_mw {
	struct vrnic_aq_hdr hdr;
	__le32 pdn;
	__u8 type;		/* VRNIC_MW_TYPE_* */
	__u8 key_byte;
	__u8 rsvd0[114];
};

static_assert(sizeof(struct vrnic_aq_alloc_mw) == VRNIC_AQ_CMD_SIZE, "alloc_mw");
#define VRNIC_MW_TYPE_1			1
#define VRNIC_MW_TYPE_2			2

/*
 * Fast-registration MRs (IBTA's Base Memory Management
 * Extensions, the kernel's IB_MR_TYPE_MEM_REG). ALLOC_MR takes an index
 * from the MR table (max_mr counts it) for pdn, a PD of the kernel (uctx
 * 0: the page list names bus addresses, which no process may choose), with
 * room for max_pages page addresses (1 .. VRNIC_FRMR_MAX_PAGES, copied into
 * the device: at most max_mr * VRNIC_FRMR_MAX_PAGES * 8 bytes in all);
 * result = its key, key byte key_byte. The MR starts invalid ("free"): no
 * mapping, its key fails every access.
 *
 * A REG_MR send WQE (vrnic_reg_mr_wqe, RC/UC) executed when the SQ reaches
 * it installs a mapping: the device reads npages page addresses (__le64,
 * each aligned to 2^page_shift) from pbl_addr in one DMA read when the SQ
 * reaches the WQE and keeps its own copy: the list must not change before
 * that, and the mapping never changes with it afterwards. [iova, iova +
 * length) starts in page 0 at iova's offset in a page. The MR becomes
 * valid with access and the key byte of key. Refused, with the mapping
 * unchanged and the completion status: another PD's MR
 * (LOC_PROT_ERR); key not a fast-registration MR, the MR already valid,
 * npages over the MR's max_pages or not the number of pages the range
 * touches, page_shift outside 12..30, length 0 or over max_mr_size, a page
 * address unaligned, the list unreadable, access bits outside
 * VRNIC_ACCESS_ALL or REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE, a QP
 * of a user PD, non-zero reserved bytes (LOC_QP_OP_ERR).
 *
 * Invalidation, one path for fast-registration MRs and type 2 windows:
 * LOCAL_INV (send WQE, imm_data = key) makes the MR invalid again; it needs
 * the current key byte and the QP's PD, and fails with LOC_QP_OP_ERR on an
 * MR that windows are bound to, on an MR made by REG_MR (the command) and
 * on anything else. LOCAL_INV of an MR that is already invalid succeeds.
 * A SEND with Invalidate arriving on a QP invalidates a valid
 * fast-registration MR of the QP's PD that grants a remote right (an
 * R_Key) and has no bound window; anything else is an invalid request
 * (NAK; REM_INV_REQ_ERR at the sender and at the receiver). The receive
 * CQE of a successful one carries VRNIC_CQE_FLAG_INV and the key.
 * FENCE on a LOCAL_INV or REG_MR makes it wait for every earlier READ and
 * atomic to complete, as on any other WQE.
 *
 * DEREG_MR of a fast-registration MR names its index; the key byte is
 * ignored (REG_MR changes it) and the MR may be valid or invalid, but not
 * bound to by windows (BAD_STATE). REREG_MR refuses it (BAD_FIELD).
 */
struct vrnic_aq_alloc_mr {
	struct vrnic_aq_hdr hdr;
	__le32 pdn;
	__le32 max_pages;
	__u8 key_byte;
	__u8 rsvd0[111];
};

static_assert(sizeof(struct vrnic_aq_alloc_mr) == VRNIC_AQ_CMD_SIZE, "alloc_mr");
#define VRNIC_FRMR_MAX_PAGES		512

/*
 * QUERY_MR (vrnic_aq_query: index = key, resp_len = sizeof(vrnic_mr_attr) +
 * 8 * count): the device's own view of an MR, as it would translate it now:
 * the attributes, then page_addr[first .. first + count - 1] found by walking
 * its tables (0 for entries past npages). first and count ride in the
 * query's rsvd space as struct vrnic_aq_query_mr.
 */
struct vrnic_aq_query_mr {
	struct vrnic_aq_hdr hdr;
	__le64 resp_addr;
	__le32 resp_len;
	__le32 key;
	__le32 first;
	__le32 count;		/* <= VRNIC_QUERY_MR_MAX_PAGES */
	__u8 rsvd0[96];
};

static_assert(sizeof(struct vrnic_aq_query_mr) == VRNIC_AQ_CMD_SIZE, "query_mr");
#define VRNIC_QUERY_MR_MAX_PAGES	500

struct vrnic_mr_attr {
	__le64 iova;
	__le64 length;
	__le32 pdn;
	__le32 access;
	__le32 flags;		/* VRNIC_MR_FLAG_* */
	__le32 page_shift;
	__le32 npages;
	__le32 levels;
};

static_assert(sizeof(struct vrnic_mr_attr) == 40, "vrnic_mr_attr");

/*
 * Doorbell pages (BAR2). Page p (4 KiB at BAR2 + p * 4096) belongs to
 * context p: page 0 to the kernel, pages 1 .. num_pages-1 to user contexts
 * (the driver maps exactly one into each process). A queue is created with
 * the page index (uctx) that may ring it; a doorbell on any other page is a
 * guest error and is ignored. All doorbells are 32-bit writes:
 *   31:16 : index (pi for SQ/RQ/SRQ, the consumer's ci for CQ arms)
 *   15:0  : qpn / srqn / cqn
 * An SQ/RQ/SRQ pi more than the queue depth ahead of the device is ignored.
 * A CQ arm fires the CQ's EQ on the next CQE (ARM_NEXT) or the next CQE of
 * a solicited message or an error (ARM_SOLICITED) - or at once if CQEs past
 * ci are already written, so no event is missed between the consumer's last
 * poll and the arm. One event per arm.
 */
#define VRNIC_DB_PAGE_SIZE		4096
#define VRNIC_DB_SQ			0x000
#define VRNIC_DB_RQ			0x004
#define VRNIC_DB_SRQ			0x008
#define VRNIC_DB_CQ_ARM_NEXT		0x00c
#define VRNIC_DB_CQ_ARM_SOLICITED	0x010
#define VRNIC_DB_INDEX_MASK		VRNIC_GENMASK(31, 16)
#define VRNIC_DB_QN_MASK		VRNIC_GENMASK(15, 0)

/*
 * CREATE_CQ: result = cqn. The ring is 2^log_depth CQEs followed by a 64-byte
 * doorbell record (vrnic_cq_dbrec) in the same memory (mem covers both,
 * mem.length >= vrnic_cq_ring_len(flags, log_depth); for user CQs it is the
 * consumer's own memory, pinned). flags (VRNIC_CQ_FLAG_*): with TIMESTAMP
 * (VRNIC_DEVICE_CAP_TIMESTAMP) the CQEs are struct vrnic_cqe_ts, 64 bytes;
 * other bits are reserved (BAD_FIELD). The consumer writes its
 * consumer index to dbrec.ci after polling; the device reads it before it
 * writes a CQE and, if the CQ is full, stops the CQ (no more CQEs) and posts
 * VRNIC_AEQ_EV_CQ_ERR.
 * RESIZE_CQ: handle = cqn, new log_depth and mem. CQEs the consumer has not
 * consumed (between dbrec.ci and the producer) are copied to the new ring
 * from index 0 with the new ring's phase; the consumer continues at ci 0. If
 * they do not fit: BAD_FIELD and nothing changes. flags must be the CQ's
 * (BAD_FIELD): the CQE format stays.
 */
struct vrnic_aq_create_cq {
	struct vrnic_aq_hdr hdr;
	__le32 handle;		/* RESIZE_CQ: cqn */
	__le32 eqn;
	__le32 log_depth;	/* 1 .. log2(max_cqe) */
	__le32 uctx;		/* doorbell page allowed to arm it */
	struct vrnic_mem_desc mem;
	__le32 flags;		/* VRNIC_CQ_FLAG_* */
	__u8 rsvd0[28];
};

static_assert(sizeof(struct vrnic_aq_create_cq) == VRNIC_AQ_CMD_SIZE, "create_cq");
#define VRNIC_CQ_FLAG_TIMESTAMP		VRNIC_BIT(0)

/*
 * MODIFY_CQ: handle = cqn; event moderation of an ARM_NEXT
 * arm. The event is due when count CQEs have been written since the arm,
 * or period_us microseconds after the first of them, whichever is first.
 * count <= 1 with period_us 0 (the default after CREATE_CQ): at the first
 * CQE. count > 1 with period_us 0 is refused (BAD_FIELD): the last CQEs of
 * a burst would wait for ever. An error CQE, a solicited arm and an arm
 * that finds CQEs already written are never delayed. Takes effect at the
 * next arm; RESIZE_CQ keeps it.
 */
struct vrnic_aq_modify_cq {
	struct vrnic_aq_hdr hdr;
	__le32 handle;
	__le16 count;
	__le16 period_us;
	__u8 rsvd0[112];
};

static_assert(sizeof(struct vrnic_aq_modify_cq) == VRNIC_AQ_CMD_SIZE, "modify_cq");
/* Every 16-bit value of both fields is accepted. */
#define VRNIC_CQ_MOD_MAX_COUNT		0xffff
#define VRNIC_CQ_MOD_MAX_PERIOD_US	0xffff

#define VRNIC_DBREC_SIZE		64
struct vrnic_cq_dbrec {
	__le32 ci;		/* free-running consumer index (low 16 bits used) */
	__u8 rsvd0[60];
};

static_assert(sizeof(struct vrnic_cq_dbrec) == VRNIC_DBREC_SIZE, "cq_dbrec");

/*
 * Completion queue entry, written by the device; owner word last, same
 * phase rule as the admin CQ (phase 1 on the first pass).
 * info
 * 31:16 : vendor_err (device detail for a non-SUCCESS status)
 * 15:1  : reserved
 * 0     : phase
 */
#define VRNIC_CQE_SIZE			32
#define VRNIC_CQE_SHIFT			5
struct vrnic_cqe {
	__le64 wr_id;
	__le32 byte_len;
	__le32 imm_data;	/* network order as received; or invalidated rkey */
	__le32 qpn;
	__le32 src_qp;		/* UD receives; XRC SRQ receives: the srqn */
	__u8 opcode;		/* enum vrnic_cqe_opcode */
	__u8 status;		/* enum vrnic_wc_status */
	__u8 flags;		/* VRNIC_CQE_FLAG_* */
	__u8 network_hdr_type;	/* UD receives: enum vrnic_net_type */
	__le32 info;
};

static_assert(sizeof(struct vrnic_cqe) == VRNIC_CQE_SIZE, "vrnic_cqe");

#define VRNIC_CQE_INFO_PHASE		VRNIC_BIT(0)
#define VRNIC_CQE_INFO_VENDOR_ERR_MASK	VRNIC_GENMASK(31, 16)
#define VRNIC_CQE_FLAG_IMM		VRNIC_BIT(0)
#define VRNIC_CQE_FLAG_INV		VRNIC_BIT(1)
#define VRNIC_CQE_FLAG_GRH		VRNIC_BIT(2)
#define VRNIC_CQE_FLAG_SOLICITED	VRNIC_BIT(3)
#define VRNIC_CQE_FLAG_XRC		VRNIC_BIT(4)	/* src_qp = the XRC srqn */

/*
 * The CQE of a CQ created with VRNIC_CQ_FLAG_TIMESTAMP: the same first 32
 * bytes (info, with the phase, still written last), then the device clock
 * (VRNIC_CLOCK_PAGE) at the moment the device wrote the CQE.
 */
#define VRNIC_CQE_TS_SIZE		64
#define VRNIC_CQE_TS_SHIFT		6
struct vrnic_cqe_ts {
	struct vrnic_cqe cqe;
	__le64 timestamp;	/* ns, host real time */
	__u8 rsvd0[24];
};

static_assert(sizeof(struct vrnic_cqe_ts) == VRNIC_CQE_TS_SIZE, "vrnic_cqe_ts");

/* log2 of a CQE's size in a CQ created with flags. */
static inline __u32 vrnic_cqe_shift(__u32 cq_flags)
{
	return (cq_flags & VRNIC_CQ_FLAG_TIMESTAMP) ? VRNIC_CQE_TS_SHIFT :
						      VRNIC_CQE_SHIFT;
}

/* The memory a CQ ring needs: its CQEs, then the doorbell record. */
static inline __u64 vrnic_cq_ring_len(__u32 cq_flags, __u32 log_depth)
{
	return ((__u64)1 << (log_depth + vrnic_cqe_shift(cq_flags))) +
	       VRNIC_DBREC_SIZE;
}

/*
 * The values of enum ib_uverbs_wc_opcode, which libibverbs' IBV_WC_* and
 * ib_core's IB_WC_* equal; REG_MR, which only kernel WQEs complete, has
 * no uverbs value and its own here.
 */
enum vrnic_cqe_opcode {
	VRNIC_CQE_OP_SEND = 0,
	VRNIC_CQE_OP_RDMA_WRITE = 1,
	VRNIC_CQE_OP_RDMA_READ = 2,
	VRNIC_CQE_OP_COMP_SWAP = 3,
	VRNIC_CQE_OP_FETCH_ADD = 4,
	VRNIC_CQE_OP_BIND_MW = 5,
	VRNIC_CQE_OP_LOCAL_INV = 6,
	VRNIC_CQE_OP_FLUSH = 8,
	VRNIC_CQE_OP_ATOMIC_WRITE = 9,
	VRNIC_CQE_OP_REG_MR = 0x10,
	VRNIC_CQE_OP_RECV = 0x80,
	VRNIC_CQE_OP_RECV_RDMA_WITH_IMM = 0x81,
};

/* Completion status: the IBTA / ib_wc_status set, same values. */
enum vrnic_wc_status {
	VRNIC_WC_SUCCESS = 0,
	VRNIC_WC_LOC_LEN_ERR = 1,
	VRNIC_WC_LOC_QP_OP_ERR = 2,
	VRNIC_WC_LOC_PROT_ERR = 4,
	VRNIC_WC_WR_FLUSH_ERR = 5,
	VRNIC_WC_MW_BIND_ERR = 6,
	VRNIC_WC_BAD_RESP_ERR = 7,
	VRNIC_WC_LOC_ACCESS_ERR = 8,
	VRNIC_WC_REM_INV_REQ_ERR = 9,
	VRNIC_WC_REM_ACCESS_ERR = 10,
	VRNIC_WC_REM_OP_ERR = 11,
	VRNIC_WC_RETRY_EXC_ERR = 12,
	VRNIC_WC_RNR_RETRY_EXC_ERR = 13,
	VRNIC_WC_FATAL_ERR = 19,
	VRNIC_WC_GENERAL_ERR = 21,
};

/*
 * CQE decoding, the one vrnic.ko and libvrnic share:
 * - A consumer puts the WQE's slot index in wr_id bits 31:0; the CQE
 *   returns it (VRNIC_CQE_WR_ID_SLOT_MASK).
 * - Opcode bit 7 (VRNIC_CQE_OP_RECV) says which queue the slot indexes:
 *   set for the receive queue (RQ or SRQ), clear for the send queue, on
 *   every CQE, flushed and failed ones included (vrnic_cqe_is_recv()).
 * - An opcode or status the consumer does not know is reported as the
 *   queue's generic one (vrnic_cqe_wc_opcode(), vrnic_cqe_wc_status()).
 * - A CQE that names no queue of the consumer's, or no outstanding slot of
 *   it, is consumed and dropped with a log message: only a broken or
 *   hostile device writes one, and no WQE of the consumer completed.
 */
#define VRNIC_CQE_WR_ID_SLOT_MASK	0xffffffffULL

static inline int vrnic_cqe_is_recv(__u8 opcode)
{
	return !!(opcode & VRNIC_CQE_OP_RECV);
}

static inline __u8 vrnic_cqe_wc_opcode(__u8 opcode)
{
	switch (opcode) {
	case VRNIC_CQE_OP_SEND:
	case VRNIC_CQE_OP_RDMA_WRITE:
	case VRNIC_CQE_OP_RDMA_READ:
	case VRNIC_CQE_OP_COMP_SWAP:
	case VRNIC_CQE_OP_FETCH_ADD:
	case VRNIC_CQE_OP_BIND_MW:
	case VRNIC_CQE_OP_LOCAL_INV:
	case VRNIC_CQE_OP_FLUSH:
	case VRNIC_CQE_OP_ATOMIC_WRITE:
	case VRNIC_CQE_OP_REG_MR:
	case VRNIC_CQE_OP_RECV:
	case VRNIC_CQE_OP_RECV_RDMA_WITH_IMM:
		return opcode;
	default:
		return vrnic_cqe_is_recv(opcode) ? VRNIC_CQE_OP_RECV :
						   VRNIC_CQE_OP_SEND;
	}
}

static inline __u8 vrnic_cqe_wc_status(__u8 status)
{
	switch (status) {
	case VRNIC_WC_SUCCESS:
	case VRNIC_WC_LOC_LEN_ERR:
	case VRNIC_WC_LOC_QP_OP_ERR:
	case VRNIC_WC_LOC_PROT_ERR:
	case VRNIC_WC_WR_FLUSH_ERR:
	case VRNIC_WC_MW_BIND_ERR:
	case VRNIC_WC_BAD_RESP_ERR:
	case VRNIC_WC_LOC_ACCESS_ERR:
	case VRNIC_WC_REM_INV_REQ_ERR:
	case VRNIC_WC_REM_ACCESS_ERR:
	case VRNIC_WC_REM_OP_ERR:
	case VRNIC_WC_RETRY_EXC_ERR:
	case VRNIC_WC_RNR_RETRY_EXC_ERR:
	case VRNIC_WC_FATAL_ERR:
		return status;
	default:
		return VRNIC_WC_GENERAL_ERR;
	}
}

enum vrnic_net_type {
	VRNIC_NET_TYPE_IPV4 = 1,
	VRNIC_NET_TYPE_IPV6 = 2,
};

/* Completion EQ entry (kernel memory; EQ_CI(n) acknowledges and arms). */
#define VRNIC_EQE_SIZE			16
struct vrnic_eqe {
	__le32 cqn;
	__le32 rsvd0[2];
	__le32 owner;		/* VRNIC_OWNER_PHASE */
};

static_assert(sizeof(struct vrnic_eqe) == VRNIC_EQE_SIZE, "vrnic_eqe");

/*
 * QP types and states (IBTA). State values equal enum ib_qp_state.
 */
enum vrnic_qp_type {
	VRNIC_QP_TYPE_RC = 1,
	VRNIC_QP_TYPE_UC = 2,
	VRNIC_QP_TYPE_UD = 3,
	VRNIC_QP_TYPE_GSI = 4,	/* UD semantics, qpn 1, one per device */
	VRNIC_QP_TYPE_RAW_PACKET = 5,	/* VRNIC_DEVICE_CAP_RAW_PACKET */
	VRNIC_QP_TYPE_XRC_INI = 6,	/* VRNIC_DEVICE_CAP_XRC: initiator */
	VRNIC_QP_TYPE_XRC_TGT = 7,	/* VRNIC_DEVICE_CAP_XRC: target */
};

enum vrnic_qp_state {
	VRNIC_QPS_RESET = 0,
	VRNIC_QPS_INIT = 1,
	VRNIC_QPS_RTR = 2,
	VRNIC_QPS_RTS = 3,
	VRNIC_QPS_SQD = 4,
	VRNIC_QPS_SQE = 5,
	VRNIC_QPS_ERR = 6,
};

/*
 * CREATE_QP: result = qpn. One memory region holds the SQ ring at offset 0
 * (2^sq_log_depth WQEs of 2^sq_wqe_shift bytes) and, unless the QP uses an
 * SRQ (srqn != 0), the RQ ring at rq_offset (2^rq_log_depth WQEs of
 * 2^rq_wqe_shift bytes). The QP starts in RESET; it accepts doorbells only
 * from page uctx. sq_wqe_shift: 6..9 (64..512-byte send WQEs, enough for
 * max_send_sge SGEs or max_inline bytes after the header and, for UD, the
 * address vector); rq_wqe_shift: 4..9.
 */
struct vrnic_aq_create_qp {
	struct vrnic_aq_hdr hdr;
	__u8 type;		/* enum vrnic_qp_type */
	__u8 sq_log_depth;	/* 1 .. log2(max_qp_wr) */
	__u8 rq_log_depth;	/* 0 with an SRQ */
	__u8 sq_wqe_shift;
	__u8 rq_wqe_shift;
	__u8 max_send_sge;	/* <= max_sge */
	__u8 max_recv_sge;	/* <= max_sge */
	__u8 rsvd0;
	__le32 max_inline;	/* <= max_inline_data */
	__le32 pdn;
	__le32 send_cqn;
	__le32 recv_cqn;
	__le32 srqn;		/* 0 = own RQ */
	__le32 uctx;
	__le32 rq_offset;	/* byte offset of the RQ ring in mem */
	__le32 xrcdn;		/* VRNIC_QP_TYPE_XRC_TGT only, else 0 */
	struct vrnic_mem_desc mem;
	__u8 rsvd2[8];
};

static_assert(sizeof(struct vrnic_aq_create_qp) == VRNIC_AQ_CMD_SIZE, "create_qp");

/*
 * Raw packet QPs (VRNIC_QP_TYPE_RAW_PACKET, VRNIC_DEVICE_CAP_RAW_PACKET):
 * the send WQE's data (SGEs, or inline) is one whole Ethernet frame,
 * destination MAC first, without FCS: VRNIC_ETH_MIN_FRAME bytes up to the
 * port's MTU + VRNIC_ETH_FRAME_OVERHEAD (else LOC_LEN_ERR). Only
 * VRNIC_WQE_OP_SEND (LOC_QP_OP_ERR otherwise); no UD segment. The frame
 * leaves as it is, on the wire and - when it matches a flow rule of
 * another QP of this device - through the loopback path to that QP; it
 * completes (SEND) once it left. No SRQ (BAD_FIELD). sq_log_depth 0 (with
 * sq_wqe_shift, max_send_sge and max_inline 0) makes a receive-only raw
 * packet QP, which has no SQ: what verbs calls a receive work queue (WQ),
 * the kind an RSS context spreads frames over. States: RESET->INIT
 * requires the port; INIT->RTR and RTR->RTS need nothing. A raw packet QP
 * receives, in RTR and later, the frames flow rules steer to it: each
 * takes one receive WQE and is scattered whole (LOCAL_WRITE checked); the
 * CQE is RECV with byte_len = the frame's length. No WQE: dropped and
 * counted (VRNIC_PORT_STAT_FLOW_DROPS); too long for the WQE: the WQE
 * completes LOC_LEN_ERR and the QP stays up.
 */

/*
 * Flow steering (VRNIC_DEVICE_CAP_RAW_PACKET). A flow rule matches fields
 * of a received frame; a frame one or more rules match goes to the QP of
 * the winning rule (lowest priority value; among equals, the oldest rule)
 * and not to the Ethernet RX ring, or is dropped with VRNIC_FLOW_F_DROP.
 * The order in which receive paths take a frame: RoCEv2 to one of the
 * port's GIDs (or an attached multicast group) is the RDMA engine's and is
 * never steered; then flow rules; then the MAC filter and the Ethernet RX
 * ring. Rules see every frame the wire brings, whatever its destination
 * MAC (a rule names the traffic it wants), and the frames raw packet QPs
 * of this device send (not those of the rule's own QP).
 *
 * The fields compared (struct vrnic_flow_key, network byte order): the
 * MACs; the EtherType, after one 802.1Q tag if there is one, and the tag's
 * TCI (0 untagged); for IPv4 and IPv6 the addresses (IPv4 as
 * ::ffff:a.b.c.d) and the protocol / next header (no extension headers are
 * walked); for TCP and UDP the ports (not in IPv4 fragments past the
 * first). A field a frame lacks reads 0. A rule matches when
 * (frame key & mask) == value for every byte.
 *
 * CREATE_FLOW: result = flow id. qpn: a raw packet QP, or an RSS context
 * by its number (VRNIC_RSS_NUM_BASE + index, "Receive-side scaling"; else
 * BAD_INDEX / BAD_FIELD); value bits outside mask, non-zero reserved bytes or unknown
 * flags: BAD_FIELD. VRNIC_FLOW_MAX rules per device, more: NO_RESOURCES.
 * DESTROY_FLOW: vrnic_aq_destroy, handle = flow id (BAD_INDEX if no such
 * rule). DESTROY_QP and DESTROY_RSS remove the rules of what they
 * destroy; device reset removes all.
 */
struct vrnic_flow_key {
	__u8 dmac[6];
	__u8 smac[6];
	__be16 ethertype;
	__be16 vlan_tci;
	__u8 src_ip[16];
	__u8 dst_ip[16];
	__u8 ip_proto;
	__u8 rsvd0;
	__be16 src_port;
	__be16 dst_port;
	__u8 rsvd1[2];
};

static_assert(sizeof(struct vrnic_flow_key) == 56, "vrnic_flow_key");

struct vrnic_aq_create_flow {
	struct vrnic_aq_hdr hdr;
	__le32 qpn;
	__le16 priority;	/* lower wins */
	__u8 flags;		/* VRNIC_FLOW_F_* */
	__u8 rsvd0;
	struct vrnic_flow_key value;
	struct vrnic_flow_key mask;
};

static_assert(sizeof(struct vrnic_aq_create_flow) == VRNIC_AQ_CMD_SIZE, "create_flow");
#define VRNIC_FLOW_F_DROP		VRNIC_BIT(0)
#define VRNIC_FLOW_MAX			64

/*
 * Receive-side scaling (VRNIC_DEVICE_CAP_RSS). An RSS context takes the
 * frames flow rules steer to its number and spreads them over up to
 * VRNIC_RSS_TABLE_MAX receive-only raw packet QPs (sq_log_depth 0, "Raw
 * packet QPs"): for each frame the device computes the Toeplitz hash of
 * Microsoft's RSS specification (key: the context's VRNIC_RSS_KEY_LEN
 * bytes) over the selected fields the frame has, in this order: source
 * then destination IPv4 address (IPv4 frames), or IPv6 address (IPv6
 * frames), then source and destination port (TCP or UDP segments, as
 * selected per protocol; not in any IPv4 fragment, the first one
 * included, so that all fragments of a datagram hash alike). The
 * frame goes to qpn[hash & (2^log_size - 1)], which receives it as its
 * own rules' frames ("Raw packet QPs"); a frame with none of the selected
 * fields hashes to 0. The fields and the offsets of "Flow steering" apply
 * (one 802.1Q tag, no IPv6 extension headers).
 *
 * CREATE_RSS: result = the context's number, VRNIC_RSS_NUM_BASE + index;
 * numbers never collide with QPNs (those fit 16 bits), so a flow rule
 * names either. The first 2^log_size qpn entries name receive-only raw
 * packet QPs of the same uctx (else BAD_INDEX / BAD_FIELD); the rest and
 * the reserved bytes are 0. log_size above VRNIC_RSS_LOG_TABLE_MAX,
 * unknown fields bits or none at all: BAD_FIELD. VRNIC_RSS_MAX contexts
 * per device, more: NO_RESOURCES. While a context names a QP, DESTROY_QP
 * of that QP fails with BAD_STATE. DESTROY_RSS: vrnic_aq_destroy, handle =
 * the number (BAD_INDEX if none); it removes the context's flow rules.
 * Device reset removes every context.
 */
#define VRNIC_RSS_F_SRC_IPV4		VRNIC_BIT(0)
#define VRNIC_RSS_F_DST_IPV4		VRNIC_BIT(1)
#define VRNIC_RSS_F_SRC_IPV6		VRNIC_BIT(2)
#define VRNIC_RSS_F_DST_IPV6		VRNIC_BIT(3)
#define VRNIC_RSS_F_SRC_PORT_TCP	VRNIC_BIT(4)
#define VRNIC_RSS_F_DST_PORT_TCP	VRNIC_BIT(5)
#define VRNIC_RSS_F_SRC_PORT_UDP	VRNIC_BIT(6)
#define VRNIC_RSS_F_DST_PORT_UDP	VRNIC_BIT(7)
#define VRNIC_RSS_F_ALL			0xff
#define VRNIC_RSS_KEY_LEN		40
#define VRNIC_RSS_LOG_TABLE_MAX		4
#define VRNIC_RSS_TABLE_MAX		VRNIC_BIT(VRNIC_RSS_LOG_TABLE_MAX)
#define VRNIC_RSS_MAX			16
#define VRNIC_RSS_NUM_BASE		0x10000

struct vrnic_aq_create_rss {
	struct vrnic_aq_hdr hdr;
	__le32 uctx;
	__le16 fields;		/* VRNIC_RSS_F_* */
	__u8 log_size;		/* 0 .. VRNIC_RSS_LOG_TABLE_MAX */
	__u8 rsvd0;
	__u8 key[VRNIC_RSS_KEY_LEN];
	__le32 qpn[VRNIC_RSS_TABLE_MAX];
	__u8 rsvd1[8];
};

static_assert(sizeof(struct vrnic_aq_create_rss) == VRNIC_AQ_CMD_SIZE, "create_rss");

/*
 * XRC (VRNIC_DEVICE_CAP_XRC; IBTA annex A14, eXtended Reliable Connected).
 * An XRC domain groups XRC SRQs and XRC target QPs; it belongs to no
 * context (processes share one), so ALLOC_XRCD takes none: result =
 * xrcdn, 1 .. VRNIC_XRCD_MAX (NO_RESOURCES past it); the reserved bytes
 * are 0. DEALLOC_XRCD: vrnic_aq_destroy, handle = xrcdn; BAD_STATE while
 * an SRQ or QP names the domain.
 *
 * - XRC SRQ: CREATE_SRQ with xrcdn != 0 and cqn, a CQ of the SRQ's uctx
 *   (basic SRQs: both 0). Its receive WQEs take the SENDs that name it.
 * - XRC_INI QP (the sender): an RC send queue and no receive side:
 *   recv_cqn, srqn and rq_log_depth 0. Each send WQE names the remote
 *   XRC SRQ in xrc_srqn (24 bits); the opcodes of RC (no ATOMIC WRITE,
 *   FLUSH). Attributes and states as RC, but no receive-side attributes.
 * - XRC_TGT QP (the receiver): uctx 0; xrcdn names its domain; no rings:
 *   pdn, send_cqn, recv_cqn, srqn, the depths, shifts, SGE and inline
 *   counts, rq_offset and mem all 0. It answers requests like an RC
 *   responder and never sends requests. RESET->INIT: pkey, port, access;
 *   INIT->RTR: av, path_mtu, dest_qpn, rq_psn, max_dest_rd_atomic,
 *   min_rnr_timer; RTR->RTS: timeout, sq_psn (min_rnr_timer, access
 *   optional).
 * Wire: the XRC transport class (0xA0 | the RC operation; no ATOMIC
 * WRITE, FLUSH) with the XRC extended transport header (XRCETH: 31:24
 * reserved, 23:0 the XRC SRQ) right after the BTH of every request
 * packet; responses carry none. At the target every request packet's
 * XRCETH must name an XRC SRQ of the target's domain, the same one for
 * every packet of a message; else NAK REMOTE_ACCESS and the QP goes to
 * ERR, as after any error an RC responder NAKs (a duplicate is dropped;
 * a duplicate READ is served under its own SRQ's PD). DESTROY_SRQ of an
 * XRC SRQ a target is using ends that message and any READ response
 * queued under it (NAK REMOTE_ACCESS). The SRQ decides what the
 * request may touch: R_Keys and the receive WQE's L_Keys are checked
 * against the SRQ's PD, rights against the target QP's access. A SEND
 * (or WRITE with immediate) takes a WQE of that SRQ (none: RNR NAK) and
 * completes on the SRQ's CQ: qpn = the target QP, src_qp = the srqn,
 * flag VRNIC_CQE_FLAG_XRC (also when it completes in error). A
 * target's ACKs give no end-to-end credits (code 0x1F).
 */
#define VRNIC_XRCD_MAX			64

struct vrnic_aq_alloc_xrcd {
	struct vrnic_aq_hdr hdr;
	__u8 rsvd0[120];
};

static_assert(sizeof(struct vrnic_aq_alloc_xrcd) == VRNIC_AQ_CMD_SIZE, "alloc_xrcd");

/*
 * QP attributes for MODIFY_QP (attr_mask selects which are applied, IBTA
 * rules enforced: the device refuses a transition or an attribute the
 * current state/transition does not allow with BAD_STATE / BAD_FIELD) and
 * the answer to QUERY_QP (vrnic_aq_query, index = qpn, all fields valid).
 * Moving to ERR flushes every outstanding WQE of the QP with
 * VRNIC_WC_WR_FLUSH_ERR (signaled or not); while in ERR, newly posted WQEs
 * are flushed too. An SRQ-attached QP entering ERR posts
 * VRNIC_AEQ_EV_QP_LAST_WQE. RESET discards all WQEs without completions.
 */
#define VRNIC_QP_ATTR_STATE		VRNIC_BIT(0)
#define VRNIC_QP_ATTR_CUR_STATE		VRNIC_BIT(1)
#define VRNIC_QP_ATTR_EN_SQD_ASYNC_NOTIFY VRNIC_BIT(2)	/* RTS->SQD; ignored */
#define VRNIC_QP_ATTR_ACCESS		VRNIC_BIT(3)
#define VRNIC_QP_ATTR_PKEY_INDEX	VRNIC_BIT(4)
#define VRNIC_QP_ATTR_PORT		VRNIC_BIT(5)
#define VRNIC_QP_ATTR_QKEY		VRNIC_BIT(6)
#define VRNIC_QP_ATTR_AV		VRNIC_BIT(7)
#define VRNIC_QP_ATTR_PATH_MTU		VRNIC_BIT(8)
#define VRNIC_QP_ATTR_TIMEOUT		VRNIC_BIT(9)
#define VRNIC_QP_ATTR_RETRY_CNT		VRNIC_BIT(10)
#define VRNIC_QP_ATTR_RNR_RETRY		VRNIC_BIT(11)
#define VRNIC_QP_ATTR_RQ_PSN		VRNIC_BIT(12)
#define VRNIC_QP_ATTR_MAX_QP_RD_ATOMIC	VRNIC_BIT(13)
#define VRNIC_QP_ATTR_MIN_RNR_TIMER	VRNIC_BIT(15)
#define VRNIC_QP_ATTR_SQ_PSN		VRNIC_BIT(16)
#define VRNIC_QP_ATTR_MAX_DEST_RD_ATOMIC VRNIC_BIT(17)
#define VRNIC_QP_ATTR_DEST_QPN		VRNIC_BIT(20)
/* The bit numbers are those of enum ib_qp_attr_mask. */

/*
 * Address vector: where a UD WQE or a connected QP sends. GIDs in network
 * order; a ::ffff:a.b.c.d dgid means IPv4. sgid_index selects the source
 * GID from the port's table.
 */
struct vrnic_av {
	__u8 dgid[16];
	__u8 dmac[6];
	__u8 sgid_index;
	__u8 hop_limit;
	__le32 flow_label;	/* 19:0 */
	__u8 traffic_class;
	__u8 rsvd0[3];
};

static_assert(sizeof(struct vrnic_av) == 32, "vrnic_av");

struct vrnic_qp_attr {
	__le32 qp_state;	/* enum vrnic_qp_state */
	__le32 cur_qp_state;
	__le32 access;		/* VRNIC_ACCESS_*: the REMOTE_* bits matter */
	__le32 qkey;
	__le32 rq_psn;		/* 23:0 */
	__le32 sq_psn;		/* 23:0 */
	__le32 dest_qpn;	/* 23:0 */
	__le16 pkey_index;
	__u8 port;
	__u8 path_mtu;		/* enum ib_mtu: 1 = 256 .. 5 = 4096 */
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 rsvd0[2];
	struct vrnic_av av;
};

static_assert(sizeof(struct vrnic_qp_attr) == 72, "vrnic_qp_attr");

struct vrnic_aq_modify_qp {
	struct vrnic_aq_hdr hdr;
	__le32 qpn;
	__le32 attr_mask;	/* VRNIC_QP_ATTR_* */
	struct vrnic_qp_attr attr;
	__u8 rsvd0[40];
};

static_assert(sizeof(struct vrnic_aq_modify_qp) == VRNIC_AQ_CMD_SIZE, "modify_qp");

/*
 * CREATE_SRQ: result = srqn. mem holds 2^log_depth receive WQEs of
 * 2^wqe_shift bytes. MODIFY_SRQ: handle = srqn, VRNIC_SRQ_ATTR_LIMIT arms
 * the limit event (fires once when fewer than limit WQEs remain, then
 * disarms). QUERY_SRQ: vrnic_aq_query, index = srqn, answer vrnic_srq_attr.
 */
struct vrnic_aq_create_srq {
	struct vrnic_aq_hdr hdr;
	__le32 handle;		/* MODIFY_SRQ: srqn */
	__le32 pdn;
	__le32 uctx;
	__le32 attr_mask;	/* MODIFY_SRQ: VRNIC_SRQ_ATTR_* */
	__le32 limit;
	__u8 log_depth;
	__u8 wqe_shift;		/* 4..9 */
	__u8 max_sge;
	__u8 rsvd0;
	struct vrnic_mem_desc mem;
	__le32 xrcdn;		/* 0: a basic SRQ; else an XRC SRQ ("XRC") */
	__le32 cqn;		/* XRC SRQ: its CQ; basic SRQ: 0 */
	__u8 rsvd1[16];
};

static_assert(sizeof(struct vrnic_aq_create_srq) == VRNIC_AQ_CMD_SIZE, "create_srq");
#define VRNIC_SRQ_ATTR_LIMIT		VRNIC_BIT(1)	/* IB_SRQ_LIMIT */

struct vrnic_srq_attr {
	__le32 max_wr;
	__le32 max_sge;
	__le32 limit;
	__le32 rsvd0;
};

static_assert(sizeof(struct vrnic_srq_attr) == 16, "vrnic_srq_attr");

/*
 * Multicast groups. A group is a multicast GID: ff00::/8,
 * or ::ffff:a.b.c.d with a.b.c.d in 224.0.0.0/4 (RoCEv2 over IPv4). There
 * are no LIDs on RoCE (ib_attach_mcast's lid is not passed on).
 * ATTACH_MCAST adds UD QP qpn to the receivers of group gid, DETACH_MCAST
 * removes it; a group exists while at least one QP is attached. Limits are
 * fixed: VRNIC_MCAST_MAX_GRP groups, VRNIC_MCAST_MAX_QP_ATTACH QPs in each
 * (max_mcast_grp, max_mcast_qp_attach; max_total_mcast_qp_attach is their
 * product). Status: qpn not a live QP: BAD_INDEX; not a UD QP (GSI
 * included), gid not multicast, non-zero reserved bytes: BAD_FIELD;
 * ATTACH of a member or DETACH of a non-member: BAD_STATE; a new group
 * with all groups in use, or a full group: NO_RESOURCES. DESTROY_QP
 * detaches the QP from every group; device reset empties the table.
 *
 * Receive: a UD SEND whose BTH DestQP is VRNIC_MCAST_QPN and whose
 * destination IP is a group with attached QPs is delivered to each of
 * them, as a unicast UD receive (state, Q_Key, receive WQE, CQE). Other
 * frames to a multicast IP are not the RDMA engine's (Ethernet RX ring).
 * Send: a UD WQE whose AV dgid is multicast (dmac: the group's MAC,
 * 01:00:5e:.. or 33:33:.., as the driver resolved it) leaves with DestQP
 * VRNIC_MCAST_QPN whatever dest_qpn says, on the wire and - when QPs of
 * this device are attached to the group, the sender included - through the
 * loopback path to them too.
 */
struct vrnic_aq_mcast {
	struct vrnic_aq_hdr hdr;
	__le32 qpn;
	__le32 rsvd0;
	__u8 gid[16];		/* network byte order */
	__u8 rsvd1[96];
};

static_assert(sizeof(struct vrnic_aq_mcast) == VRNIC_AQ_CMD_SIZE, "mcast");
#define VRNIC_MCAST_MAX_GRP		64
#define VRNIC_MCAST_MAX_QP_ATTACH	16
#define VRNIC_MCAST_QPN			0xffffff	/* BTH DestQP */

/*
 * Work queue entries. Send WQE: a 64-byte header, then for UD/GSI a
 * vrnic_av (32 bytes) and the destination (vrnic_ud_dest, 16 bytes) padded
 * to 64, then either num_sge vrnic_sge or, with VRNIC_WQE_FLAG_INLINE,
 * inline_len bytes of data. Receive WQE: a 16-byte header then num_sge
 * vrnic_sge. The device copies each WQE in before looking at it.
 */
enum vrnic_wqe_opcode {
	VRNIC_WQE_OP_SEND = 0,
	VRNIC_WQE_OP_SEND_IMM = 1,
	VRNIC_WQE_OP_SEND_INV = 2,
	VRNIC_WQE_OP_RDMA_WRITE = 3,
	VRNIC_WQE_OP_RDMA_WRITE_IMM = 4,
	VRNIC_WQE_OP_RDMA_READ = 5,
	VRNIC_WQE_OP_ATOMIC_CMP_SWP = 6,
	VRNIC_WQE_OP_ATOMIC_FETCH_ADD = 7,
	VRNIC_WQE_OP_BIND_MW = 8,	/* RC/UC; the WQE is a vrnic_bind_mw_wqe */
	VRNIC_WQE_OP_LOCAL_INV = 9,	/* RC/UC; imm_data = the key */
	VRNIC_WQE_OP_REG_MR = 10,	/* RC/UC; the WQE is a vrnic_reg_mr_wqe */
	VRNIC_WQE_OP_ATOMIC_WRITE = 11,	/* RC; VRNIC_DEVICE_CAP_ATOMIC_WRITE */
	VRNIC_WQE_OP_FLUSH = 12,	/* RC; VRNIC_DEVICE_CAP_FLUSH */
};

#define VRNIC_WQE_FLAG_SIGNALED		VRNIC_BIT(0)
#define VRNIC_WQE_FLAG_SOLICITED	VRNIC_BIT(1)
#define VRNIC_WQE_FLAG_INLINE		VRNIC_BIT(2)
#define VRNIC_WQE_FLAG_FENCE		VRNIC_BIT(3)

struct vrnic_send_wqe {
	__le64 wr_id;
	__u8 opcode;		/* enum vrnic_wqe_opcode */
	__u8 flags;		/* VRNIC_WQE_FLAG_* */
	__u8 num_sge;
	__u8 rsvd0;
	__le32 inline_len;
	__le32 imm_data;	/* network order; SEND_INV, LOCAL_INV: the key */
	__le32 rkey;
	__le64 remote_addr;
	__le64 compare_add;	/* atomics; ATOMIC_WRITE: the 8 bytes; FLUSH: length */
	__le64 swap;		/* CMP_SWP; FLUSH: VRNIC_FLUSH_* */
	__le32 xrc_srqn;	/* XRC_INI QPs: VRNIC_XRC_SRQN_MASK */
	__u8 rsvd1[12];
};

static_assert(sizeof(struct vrnic_send_wqe) == 64, "vrnic_send_wqe");
/* An XRC SRQ number in a send WQE and in the XRCETH: 24 bits. */
#define VRNIC_XRC_SRQN_MASK		VRNIC_GENMASK(23, 0)

/*
 * ATOMIC_WRITE (no SGE, num_sge 0): remote_addr (8-byte aligned) and rkey
 * name the target; compare_add holds the 8 bytes to store there, in memory
 * order (copied, not converted). FLUSH (no SGE): remote_addr, rkey and
 * compare_add (the length, at most 2^31) name the range; swap says what is
 * flushed, with the FLUSH extended transport header's encoding:
 * 5:4 : selectivity - 0 the range, 1 the whole MR rkey names (the range is
 *       ignored)
 * 3:0 : placement type - bit 0 global visibility, bit 1 persistence; at
 *       least one
 * Both complete (VRNIC_CQE_OP_ATOMIC_WRITE / _FLUSH) when the responder
 * answered: everything the QP wrote to the target before is then placed
 * (visible, or also persistent).
 */
#define VRNIC_FLUSH_SEL_MASK		VRNIC_GENMASK(5, 4)
#define VRNIC_FLUSH_TYPE_MASK		VRNIC_GENMASK(3, 0)
#define VRNIC_FLUSH_SEL_RANGE		0
#define VRNIC_FLUSH_SEL_MR		1
#define VRNIC_FLUSH_TYPE_GLOBAL		VRNIC_BIT(0)
#define VRNIC_FLUSH_TYPE_PERSISTENT	VRNIC_BIT(1)

/* BIND_MW: executed when the SQ reaches it; no packet goes out. */
struct vrnic_bind_mw_wqe {
	__le64 wr_id;
	__u8 opcode;		/* VRNIC_WQE_OP_BIND_MW */
	__u8 flags;		/* VRNIC_WQE_FLAG_SIGNALED / FENCE */
	__u8 rsvd0[2];
	__le32 mw_key;		/* the window's index, the new key byte */
	__le32 mr_key;		/* the MR it binds to */
	__le32 access;		/* VRNIC_ACCESS_* except MW_BIND */
	__le64 addr;
	__le64 length;
	__u8 rsvd1[24];
};

static_assert(sizeof(struct vrnic_bind_mw_wqe) == 64, "vrnic_bind_mw_wqe");

/* REG_MR: executed when the SQ reaches it; no packet goes out. */
struct vrnic_reg_mr_wqe {
	__le64 wr_id;
	__u8 opcode;		/* VRNIC_WQE_OP_REG_MR */
	__u8 flags;		/* VRNIC_WQE_FLAG_SIGNALED / FENCE */
	__u8 page_shift;
	__u8 rsvd0;
	__le32 key;		/* the MR's index, the new key byte */
	__le32 access;		/* VRNIC_ACCESS_* */
	__le32 npages;
	__le64 iova;
	__le64 length;
	__le64 pbl_addr;	/* DMA address of npages __le64, 8-byte aligned */
	__u8 rsvd1[16];
};

static_assert(sizeof(struct vrnic_reg_mr_wqe) == 64, "vrnic_reg_mr_wqe");

struct vrnic_ud_dest {
	__le32 dest_qpn;
	__le32 qkey;		/* MSB set: use the QP's own Q_Key */
	__u8 rsvd0[8];
};

static_assert(sizeof(struct vrnic_ud_dest) == 16, "vrnic_ud_dest");
#define VRNIC_UD_SEG_SIZE		64	/* vrnic_av + vrnic_ud_dest + pad */

struct vrnic_sge {
	__le64 addr;
	__le32 length;
	__le32 lkey;
};

static_assert(sizeof(struct vrnic_sge) == 16, "vrnic_sge");

struct vrnic_recv_wqe {
	__le64 wr_id;
	__u8 num_sge;
	__u8 rsvd0[7];
};

static_assert(sizeof(struct vrnic_recv_wqe) == 16, "vrnic_recv_wqe");

/*
 * Work queue geometry: what CREATE_QP and CREATE_SRQ accept, and how the
 * drivers size their rings.
 * - A ring holds 2^log_depth WQEs, 1 <= log_depth <= VRNIC_RING_MAX_LOG_DEPTH
 *   and 2^log_depth <= max_qp_wr (max_srq_wr for an SRQ).
 * - A send WQE is 2^sq_wqe_shift bytes, VRNIC_SQ_WQE_MIN_SHIFT ..
 *   VRNIC_WQE_MAX_SHIFT, and holds vrnic_send_wqe_len() bytes: the header,
 *   for UD and GSI the address segment, then max_send_sge SGEs or
 *   max_inline bytes, whichever is larger.
 * - A receive WQE is 2^rq_wqe_shift bytes, VRNIC_RQ_WQE_MIN_SHIFT ..
 *   VRNIC_WQE_MAX_SHIFT, and holds vrnic_recv_wqe_len(max_recv_sge).
 * - max_send_sge and max_recv_sge are bytes in CREATE_QP: at most
 *   VRNIC_WQE_MAX_SGE (and the device's max_sge).
 */
#define VRNIC_SQ_WQE_MIN_SHIFT		6
#define VRNIC_RQ_WQE_MIN_SHIFT		4
#define VRNIC_WQE_MAX_SHIFT		9
#define VRNIC_WQE_MAX_SGE		255

/* Bytes of a send WQE before its SGEs or inline data. */
static inline __u32 vrnic_send_wqe_hdr_len(int ud)
{
	return sizeof(struct vrnic_send_wqe) + (ud ? VRNIC_UD_SEG_SIZE : 0);
}

static inline __u64 vrnic_send_wqe_len(int ud, __u32 max_sge,
				       __u32 max_inline)
{
	__u64 sges = (__u64)max_sge * sizeof(struct vrnic_sge);

	return vrnic_send_wqe_hdr_len(ud) +
	       (sges > max_inline ? sges : max_inline);
}

static inline __u64 vrnic_recv_wqe_len(__u32 max_sge)
{
	return sizeof(struct vrnic_recv_wqe) +
	       (__u64)max_sge * sizeof(struct vrnic_sge);
}

/*
 * The smallest WQE shift of at least min_shift whose WQE holds len bytes;
 * above VRNIC_WQE_MAX_SHIFT when no WQE can.
 */
static inline __u32 vrnic_wqe_shift(__u64 len, __u32 min_shift)
{
	__u32 shift = min_shift;

	while (shift <= VRNIC_WQE_MAX_SHIFT && ((__u64)1 << shift) < len)
		shift++;
	return shift;
}

/* The SGEs a WQE of 2^shift bytes holds after hdr_len bytes of header. */
static inline __u32 vrnic_wqe_sges(__u32 shift, __u32 hdr_len)
{
	return ((1U << shift) - hdr_len) / sizeof(struct vrnic_sge);
}

#endif /* VRNIC_HW_DEFS_H */
