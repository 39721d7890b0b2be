/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vrnic user/kernel ABI: the udata structs exchanged between libvrnic and
 * vrnic.ko. Rules (as in efa-abi.h): __u* types, 8-byte aligned structs,
 * comp_mask first, padding named reserved_<hex bit offset>. Unknown
 * comp_mask bits and non-zero reserved fields are refused (-EOPNOTSUPP /
 * -EINVAL).
 *
 * Queue rings of user CQs, QPs and SRQs live in the process's own memory
 * (buf_addr/buf_len, page-aligned): the kernel pins them and programs the
 * device's translation tables, exactly as for an MR. Ring and WQE formats
 * are those of vrnic_hw_defs.h.
 */
#ifndef VRNIC_ABI_USER_H
#define VRNIC_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/* Bump only for an incompatible change; rdma-core matches on it. */
#define VRNIC_UVERBS_ABI_VERSION 1

/* alloc_ucontext: nothing is requested yet; comp_mask must be 0. */
struct vrnic_alloc_ucontext_cmd {
	__aligned_u64 comp_mask;
};

/*
 * db_mmap_key: mmap() offset of this context's doorbell page (4 KiB,
 * uncached); db_page is its index in BAR2 (informational).
 * clock_mmap_key (comp_mask VRNIC_ALLOC_UCONTEXT_RESP_CLOCK): mmap() offset
 * of the device's clock page, to be mapped read-only (vrnic_hw_defs.h:
 * VRNIC_CLOCK_PAGE; its registers sit at VRNIC_REG_CLOCK_LO/HI -
 * VRNIC_CLOCK_PAGE in the mapping).
 */
struct vrnic_alloc_ucontext_resp {
	__aligned_u64 comp_mask;
	__u32 db_page_shift;	/* log2 of this context's doorbell page */
	__u32 db_page;
	__aligned_u64 db_mmap_key;
	__u32 max_inline_data;
	__u32 max_sge;
	__aligned_u64 clock_mmap_key;
};

enum {
	VRNIC_ALLOC_UCONTEXT_RESP_CLOCK = 1 << 0,
};

/*
 * create_cq / resize_cq: the ring holds 2^log_depth CQEs followed by the
 * 64-byte doorbell record (VRNIC_DBREC_SIZE); buf_len covers both
 * (vrnic_cq_ring_len). flags (create only) are CREATE_CQ's VRNIC_CQ_FLAG_*
 * (TIMESTAMP: 64-byte CQEs with the device clock; the device must have
 * VRNIC_DEVICE_CAP_TIMESTAMP); a resize keeps the CQ's.
 */
struct vrnic_create_cq_cmd {
	__aligned_u64 comp_mask;
	__aligned_u64 buf_addr;
	__u32 buf_len;
	__u32 log_depth;
	__u32 flags;
	__u32 reserved_e0;
};

struct vrnic_create_cq_resp {
	__aligned_u64 comp_mask;
	__u32 cqn;
	__u32 reserved_60;
};

struct vrnic_resize_cq_cmd {
	__aligned_u64 comp_mask;
	__aligned_u64 buf_addr;
	__u32 buf_len;
	__u32 log_depth;
};

/*
 * create_qp: one buffer, SQ ring at offset 0, RQ ring at rq_offset (unused
 * with an SRQ). WQE sizes are 2^shift bytes (vrnic_hw_defs.h: CREATE_QP).
 */
struct vrnic_create_qp_cmd {
	__aligned_u64 comp_mask;
	__aligned_u64 buf_addr;
	__u32 buf_len;
	__u32 rq_offset;
	__u8 sq_log_depth;
	__u8 rq_log_depth;
	__u8 sq_wqe_shift;
	__u8 rq_wqe_shift;
	__u32 reserved_e0;
};

struct vrnic_create_qp_resp {
	__aligned_u64 comp_mask;
	__u32 qpn;
	__u32 max_inline;
};

struct vrnic_create_srq_cmd {
	__aligned_u64 comp_mask;
	__aligned_u64 buf_addr;
	__u32 buf_len;
	__u8 log_depth;
	__u8 wqe_shift;
	__u16 reserved_b0;
};

struct vrnic_create_srq_resp {
	__aligned_u64 comp_mask;
	__u32 srqn;
	__u32 reserved_60;
};

/*
 * create_wq (IB_WQT_RQ, raw packet receive queues): one RQ ring, as a QP's
 * (vrnic_hw_defs.h: "Raw packet QPs", a receive-only raw packet QP).
 */
struct vrnic_create_wq_cmd {
	__aligned_u64 comp_mask;
	__aligned_u64 buf_addr;
	__u32 buf_len;
	__u8 log_depth;
	__u8 wqe_shift;
	__u16 reserved_b0;
};

/*
 * create_qp of a QP with a receive WQ indirection table (RSS), in place of
 * vrnic_create_qp_cmd: such a QP has no rings. rx_hash_function is
 * VRNIC_RX_HASH_FUNC_TOEPLITZ; rx_hash_fields_mask holds the bits of
 * libibverbs' enum ibv_rx_hash_fields, which are the device's
 * VRNIC_RSS_F_* (vrnic_hw_defs.h, "Receive-side scaling"); the key is
 * VRNIC_RSS_KEY_LEN bytes.
 */
#define VRNIC_RX_HASH_FUNC_TOEPLITZ	1	/* the only function: bit 0 */

struct vrnic_create_rss_qp_cmd {
	__aligned_u64 comp_mask;
	__aligned_u64 rx_hash_fields_mask;
	__u8 rx_hash_function;
	__u8 rx_key_len;
	__u8 reserved_90[6];
	__u8 rx_hash_key[40];
};

/*
 * create_ah: an AH is a software address vector; the kernel resolves dmac.
 * The one exception to the 8-byte rule: the core response before this
 * struct (ib_uverbs_create_ah_resp) is 4 bytes, so the struct must be
 * 4-byte aligned or rdma-core's DECLARE_DRV_CMD cannot lay it out (same as
 * efa_ibv_create_ah_resp and rxe_create_ah_resp): comp_mask is __u32.
 */
struct vrnic_create_ah_resp {
	__u32 comp_mask;
	__u8 dmac[6];
	__u16 reserved_50;
};

/*
 * alloc_dm (ioctl UVERBS_METHOD_DM_ALLOC, which carries no udata): the
 * driver's own attribute, as in mlx5_user_ioctl_cmds.h. MMAP_OFFSET is the
 * mmap() offset of the allocation (device memory, write-combined), whose
 * mapping is the length rounded up to whole pages.
 */
enum vrnic_ib_alloc_dm_attrs {
	VRNIC_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET = (1U << UVERBS_ID_NS_SHIFT),
};

/*
 * Object sharing between processes (ibv_import_device, ibv_import_pd,
 * ibv_import_dm; ibv_import_mr needs only the core's QUERY_MR). A process
 * that received another's command fd rebuilds its view of the shared
 * context and objects from these queries instead of creating them.
 *
 * QUERY_CONTEXT answers RESP_UCTX with the struct alloc_ucontext returned
 * (the same doorbell page and mmap key: the context is the same one).
 */
enum vrnic_ib_query_context_attrs {
	VRNIC_IB_ATTR_QUERY_CONTEXT_RESP_UCTX = (1U << UVERBS_ID_NS_SHIFT),
};

/* PD_QUERY: the device's number of the PD behind a handle. */
enum vrnic_ib_pd_methods {
	VRNIC_IB_METHOD_PD_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum vrnic_ib_query_pd_attrs {
	VRNIC_IB_ATTR_QUERY_PD_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	VRNIC_IB_ATTR_QUERY_PD_RESP_PDN,		/* __u32 */
};

/* DM_QUERY: what alloc_dm returned for the allocation behind a handle. */
enum vrnic_ib_dm_methods {
	VRNIC_IB_METHOD_DM_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum vrnic_ib_query_dm_attrs {
	VRNIC_IB_ATTR_QUERY_DM_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	VRNIC_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,	/* __u64 */
	VRNIC_IB_ATTR_QUERY_DM_RESP_LENGTH,		/* __u64 */
};

#endif /* VRNIC_ABI_USER_H */
