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
 */
#include <vrnic_hw_defs.h>

#include "vrnic-abi.h"

/* qpn and cqn fit in 16 bits (vrnic_hw_defs.h "Objects"): a flat table. */
#define VRNIC_QP_TABLE_SIZE	(1U << 16)

struct vrnic_dev {
	struct verbs_device vdev;
	size_t pg_sz;			/* host page size, for ring/doorbell mmaps */
};

struct vrnic_qp;

struct vrnic_context {
	struct verbs_context ibvctx;
	uint32_t db_page_shift;		/* log2 of this context's doorbell page */
	/*
	 * This context's doorbell page (BAR2 page db_page), mapped once at
	 * alloc_context; NULL when the kernel predates interface 1.1 objects.
	 */
	void *db;
	size_t db_size;
	/* Device limits, cached at alloc_context from QUERY_DEVICE. */
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
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
};

/* A page-aligned ring buffer in our memory, pinned by the kernel. */
struct vrnic_buf {
	void *addr;
	size_t len;
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
	struct vrnic_cqe *ring;
	struct vrnic_cq_dbrec *dbrec;
	uint32_t cqn;
	uint32_t log_depth;
	uint32_t ci;			/* free-running consumer index */
	bool ci_dirty;			/* ci not yet published in dbrec */
	/* Extended poll: a copy of the current CQE, decoded. */
	struct vrnic_cqe cur;
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
	struct vrnic_wq sq;
	struct vrnic_wq rq;
	struct vrnic_srq *srq;
	uint32_t qpn;
	uint32_t max_inline;
	uint32_t sq_data_off;		/* 64, or 128 for UD (address segment) */
	bool sq_sig_all;
	/* ibv_wr_* session (sq.lock held from wr_start to complete/abort). */
	int wr_err;
	uint32_t wr_start_pi;
	struct vrnic_send_wqe *wr_cur;
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

static inline struct vrnic_ah *to_vrnic_ah(struct ibv_ah *ibvah)
{
	return container_of(ibvah, struct vrnic_ah, ibv_ah);
}

#endif /* __VRNIC_H__ */
