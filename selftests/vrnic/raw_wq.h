/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Under the provider: WQE images put straight into a QP's ring and
 * doorbells rung by hand, as libvrnic does it but without its checks, for
 * the tests that post what the verbs cannot (hostile_guest: what the
 * provider refuses; ibta15: FLUSH, which libibverbs 44 has no verb for).
 * Needs the provider's private header (vrnic.h, built against its include
 * tree) for the rings and the doorbell page.
 */
#ifndef VRNIC_SELFTEST_RAW_WQ_H
#define VRNIC_SELFTEST_RAW_WQ_H

#include <endian.h>
#include <string.h>

#include "vrnic.h"

static inline void *raw_wq_slot(struct vrnic_wq *wq, uint32_t idx)
{
	return (uint8_t *)wq->ring +
	       ((size_t)(idx & ((1u << wq->log_depth) - 1)) << wq->wqe_shift);
}

/*
 * Put a WQE image into the next slot of a queue the way the provider does
 * (the WQE's wr_id is its ring position; the user's wr_id waits in
 * wrid[]) but without any of its checks, and advance the provider's
 * producer index so that it can match the completion. Rings nothing:
 * returns the index a correct doorbell carries.
 */
static inline uint32_t raw_wq_put(struct vrnic_wq *wq, const void *img,
				  size_t len, uint64_t wr_id)
{
	size_t size = (size_t)1 << wq->wqe_shift;
	uint32_t pi = wq->pi;
	uint8_t *slot = raw_wq_slot(wq, pi);

	memset(slot, 0, size);
	memcpy(slot, img, len < size ? len : size);
	/* wr_id is the first field of every WQE format. */
	*(__le64 *)slot = htole64(pi);
	wq->wrid[pi & ((1u << wq->log_depth) - 1)] = wr_id;
	__atomic_store_n(&wq->pi, pi + 1, __ATOMIC_RELEASE);
	return pi + 1;
}

/* A raw 32-bit store to the context's doorbell page. */
static inline void raw_db_write(struct ibv_context *ctx, uint32_t off,
				uint32_t val)
{
	struct vrnic_context *c = to_vrnic_context(ctx);

	/* The ring stores before the doorbell, as the provider orders them. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*(volatile __le32 *)((uint8_t *)c->db + off) = htole32(val);
}

/* Doorbell off (VRNIC_DB_SQ, ...) of queue qn with producer index idx. */
static inline void raw_db(struct ibv_context *ctx, uint32_t off, uint32_t qn,
			  uint32_t idx)
{
	raw_db_write(ctx, off,
		     VRNIC_FIELD_PREP(VRNIC_DB_INDEX_MASK, idx & 0xffff) |
		     VRNIC_FIELD_PREP(VRNIC_DB_QN_MASK, qn & 0xffff));
}

#endif
