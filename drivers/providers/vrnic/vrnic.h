/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrnic: rdma-core provider for the vrnic emulated RoCEv2 RNIC.
 */
#ifndef __VRNIC_H__
#define __VRNIC_H__

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>

/*
 * The one hardware interface definition, shared with vrnic.ko and the QEMU
 * device: every ring, WQE, CQE and doorbell format used here comes from it.
 * In rdma-core's tree it sits next to this file, a copy kept equal to the
 * project's uapi/ (tools/patches.sh checks it); out of tree the Makefile
 * finds the original.
 */
#include "vrnic_hw_defs.h"

#include "vrnic-abi.h"

/* qpn, cqn and srqn fit in 16 bits (vrnic_hw_defs.h "Objects"): flat tables. */
#define VRNIC_QP_TABLE_SIZE	(VRNIC_DB_QN_MASK + 1)
#define VRNIC_SRQ_TABLE_SIZE	(VRNIC_DB_QN_MASK + 1)

struct vrnic_dev {
	struct verbs_device vdev;
	size_t pg_sz;			/* host page size, for ring/doorbell mmaps */
};

struct vrnic_qp;
struct vrnic_srq;
struct vrnic_parent_domain;

/*
 * Resource types a parent domain's allocator is called with, one per kind
 * of queue buffer. verbs.h defines none: they are the provider's, laid out
 * as mlx5dv.h's MLX5DV_RES_TYPE_* (driver id << 32 | type), with vrnic's
 * driver id RDMA_DRIVER_UNKNOWN (0). A QP's SQ and RQ share one buffer.
 */
#define VRNIC_RES_TYPE_QP	((uint64_t)RDMA_DRIVER_UNKNOWN << 32 | 1)
#define VRNIC_RES_TYPE_SRQ	((uint64_t)RDMA_DRIVER_UNKNOWN << 32 | 2)
#define VRNIC_RES_TYPE_CQ	((uint64_t)RDMA_DRIVER_UNKNOWN << 32 | 3)

struct vrnic_context {
	struct verbs_context ibvctx;
	uint32_t db_page_shift;		/* log2 of this context's doorbell page */
	/*
	 * This context's doorbell page (BAR2 page db_page), mapped once at
	 * alloc_context.
	 */
	void *db;
	size_t db_size;
	/* The device's clock page, read-only (clock.c); NULL without one. */
	const uint8_t *clock;
	size_t clock_size;
	/* Device limits, cached at alloc_context from QUERY_DEVICE. */
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	bool atomic_write;		/* IB_UVERBS_DEVICE_ATOMIC_WRITE */
	/* From the alloc_ucontext response. */
	uint32_t max_inline_data;
	/*
	 * qpn -> QP, for CQEs (which name only the qpn). Entries are set in
	 * create_qp before the QP can own a WQE and cleared in destroy_qp
	 * while both of its CQ locks are held, so a poller holding a CQ lock
	 * always sees a stable entry for the QPs of that CQ; qp_table_mutex
	 * serialises the writers.
	 */
	struct vrnic_qp **qp_table;
	pthread_mutex_t qp_table_mutex;
	/*
	 * srqn -> XRC SRQ, for the CQEs of XRC receives, which name the
	 * SRQ and a target QP that may be another process's. The same rule
	 * as qp_table: set in create_srq_ex before the SRQ can own a WQE,
	 * cleared in destroy_srq under the SRQ's CQ lock, written under
	 * qp_table_mutex.
	 */
	struct vrnic_srq **srq_table;
	/*
	 * This context's parent domains, newest first; NULL (as the context
	 * is allocated zeroed) when there are none. qp_table_mutex also
	 * guards this list and every parent domain's refcount: vrnic.c
	 * initialises the one context mutex.
	 */
	struct vrnic_parent_domain *pdoms;
};

/*
 * A parent domain (ibv_alloc_parent_domain()): a protection domain plus,
 * optionally, the application's allocator for the queue buffers of the
 * CQs, QPs and SRQs created on it. Its ibv_pd carries the protection
 * domain's context and handle (ibv_initialize_parent_domain()), so every
 * command taking a PD reaches the kernel with the protection domain; the
 * kernel never sees the parent domain. It is found by address on
 * ctx->pdoms rather than by container_of(): any other ibv_pd is a plain
 * protection domain, and nothing past it is ever read.
 */
struct vrnic_parent_domain {
	struct ibv_pd ibv_pd;
	struct ibv_pd *pd;		/* the protection domain it wraps */
	/* Both set or both NULL (NULL: the default allocation). */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
	/*
	 * CQs, QPs and SRQs created on it: their buffers may come from
	 * alloc and go back through free, so it outlives them (dealloc_pd
	 * is EBUSY until then, as in mlx5).
	 */
	uint32_t refcount;
	struct vrnic_parent_domain *next;	/* on ctx->pdoms */
};

/*
 * A page-aligned ring buffer in our memory, pinned by the kernel. pdom is
 * set when addr came from that parent domain's allocator, and then the
 * buffer goes back through its free callback with the same res_type; the
 * buffer's owner (CQ, QP, SRQ) holds the reference on pdom.
 */
struct vrnic_buf {
	void *addr;
	size_t len;
	struct vrnic_parent_domain *pdom;
	uint64_t res_type;
};

struct vrnic_cq {
	struct verbs_cq vcq;
	/*
	 * Protects ci, the ring and the doorbell record, the extended-poll
	 * state (cur_*) and, through the QPs using this CQ, the ci of those
	 * QPs' queues. start_poll takes it, end_poll releases it.
	 */
	pthread_spinlock_t lock;
	struct vrnic_buf buf;
	/* Created with IBV_CQ_INIT_ATTR_MASK_PD: ring (and resize) source. */
	struct vrnic_parent_domain *pdom;
	void *ring;			/* 2^log_depth CQEs of 1 << cqe_shift */
	struct vrnic_cq_dbrec *dbrec;
	uint32_t cqn;
	uint32_t log_depth;
	uint32_t flags;			/* VRNIC_CQ_FLAG_*: the CQE format */
	uint32_t cqe_shift;
	uint32_t ci;			/* free-running consumer index */
	bool ci_dirty;			/* ci not yet published in dbrec */
	/* Extended poll: a copy of the current CQE, decoded. */
	struct vrnic_cqe cur;
	uint64_t cur_ts;		/* its timestamp (timestamp CQs) */
	uint32_t cur_status;		/* enum ibv_wc_status */
};

/* One work queue ring (SQ or RQ); WQE i lives at buf + (i & mask) << shift. */
struct vrnic_wq {
	void *ring;
	uint64_t *wrid;			/* user wr_id per ring slot */
	uint32_t log_depth;
	uint32_t wqe_shift;
	uint32_t max_sge;
	/*
	 * pi: free-running producer index, written under the QP's lock for
	 * this queue. ci: free-running index of the oldest WQE not known
	 * complete, written by the poller of this queue's CQ (under that CQ's
	 * lock). Each side reads the other's index with acquire semantics.
	 */
	uint32_t pi;
	uint32_t ci;
	pthread_spinlock_t lock;	/* producer side: pi, ring writes, doorbell */
};

struct vrnic_srq {
	struct verbs_srq vsrq;
	struct vrnic_buf buf;
	struct vrnic_parent_domain *pdom;	/* created on one, or NULL */
	/*
	 * Protects pi, the ring, the wr_id pool and its free list. Taken by
	 * post_srq_recv and by pollers (inside their CQ lock) returning slots.
	 */
	pthread_spinlock_t lock;
	void *ring;
	uint32_t log_depth;
	uint32_t wqe_shift;
	uint32_t max_sge;
	uint32_t pi;			/* free-running ring position */
	uint32_t srqn;
	/*
	 * An XRC SRQ's CQ (its receives complete there, found through
	 * srq_table); NULL for a basic SRQ, whose QPs' CQs take them.
	 */
	struct vrnic_cq *xrc_cq;
	/*
	 * SRQ WQEs complete out of order, so a WQE carries an index into this
	 * pool instead of its ring position (see post_srq_recv).
	 */
	uint64_t *wrid;
	uint8_t *busy;
	uint32_t *free_list;
	uint32_t nfree;
};

struct vrnic_qp {
	struct verbs_qp vqp;
	struct vrnic_buf buf;
	struct vrnic_parent_domain *pdom;	/* created on one, or NULL */
	struct vrnic_wq sq;
	struct vrnic_wq rq;
	struct vrnic_srq *srq;
	uint32_t qpn;
	uint32_t max_inline;
	uint32_t sq_data_off;		/* 64, or 128 for UD (address segment) */
	bool sq_sig_all;
	/*
	 * An RSS QP (rss.c): no rings and no CQs, qpn the device's RSS
	 * context; receives arrive on the WQs of its indirection table.
	 */
	bool rss;
	/* ibv_wr_* session (sq.lock held from wr_start to complete/abort). */
	int wr_err;
	uint32_t wr_start_pi;
	struct vrnic_send_wqe *wr_cur;
};

/*
 * A receive work queue (ibv_create_wq, rss.c): a receive-only raw packet
 * QP of the device. qp holds its RQ ring and is what CQ polling finds in
 * qp_table under the WQ's number (qpn = wq_num); its SQ stays empty.
 */
struct vrnic_rwq {
	struct ibv_wq ibv_wq;
	struct vrnic_qp qp;
};

struct vrnic_ah {
	struct ibv_ah ibv_ah;
	struct vrnic_av av;		/* copied into every UD WQE */
};

static inline struct vrnic_dev *to_vrnic_dev(struct ibv_device *ibvdev)
{
	return container_of(ibvdev, struct vrnic_dev, vdev.device);
}

static inline struct vrnic_context *to_vrnic_context(struct ibv_context *ibvctx)
{
	return container_of(ibvctx, struct vrnic_context, ibvctx.context);
}

static inline struct vrnic_cq *to_vrnic_cq(struct ibv_cq *ibvcq)
{
	return container_of(ibvcq, struct vrnic_cq, vcq.cq);
}

static inline struct vrnic_cq *to_vrnic_cq_ex(struct ibv_cq_ex *ibvcqx)
{
	return container_of(ibvcqx, struct vrnic_cq, vcq.cq_ex);
}

static inline struct vrnic_qp *to_vrnic_qp(struct ibv_qp *ibvqp)
{
	return container_of(ibvqp, struct vrnic_qp, vqp.qp);
}

static inline struct vrnic_qp *to_vrnic_qp_ex(struct ibv_qp_ex *ibvqpx)
{
	return container_of(ibvqpx, struct vrnic_qp, vqp.qp_ex);
}

static inline struct vrnic_srq *to_vrnic_srq(struct ibv_srq *ibvsrq)
{
	return container_of(ibvsrq, struct vrnic_srq, vsrq.srq);
}

static inline struct vrnic_rwq *to_vrnic_rwq(struct ibv_wq *ibvwq)
{
	return container_of(ibvwq, struct vrnic_rwq, ibv_wq);
}

static inline struct vrnic_ah *to_vrnic_ah(struct ibv_ah *ibvah)
{
	return container_of(ibvah, struct vrnic_ah, ibv_ah);
}

#endif /* __VRNIC_H__ */
