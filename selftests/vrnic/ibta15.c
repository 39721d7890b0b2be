// SPDX-License-Identifier: GPL-2.0
/*
 * The IBTA 1.5 operations on vrnic, through the device's loopback (two RC
 * QPs of one guest, the responder's side exactly as from another node):
 *  - the device reports ATOMIC WRITE and both FLUSH placement types, and
 *    an MR and a QP take the FLUSH rights (ibv_query_qp gives them back);
 *  - ibv_wr_atomic_write() stores its 8 bytes, in memory order, at
 *    8-byte aligned addresses and nothing around them, and completes
 *    IBV_WC_ATOMIC_WRITE; a misaligned one is REM_INV_REQ_ERR, one through
 *    a key without REMOTE_WRITE REM_ACCESS_ERR, the memory unchanged;
 *  - FLUSH, posted into the send queue by hand (libibverbs 44 has no
 *    ibv_wr_flush): global visibility and persistence of a range and of a
 *    whole MR complete IBV_WC_FLUSH; persistence through a key that only
 *    grants visibility, or a key without FLUSH rights, is REM_ACCESS_ERR;
 *    a FLUSH behind an unsignaled 256 KiB WRITE completes only once every
 *    byte of the WRITE is in place.
 */
#include <errno.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "common.h"
#include "pattern.h"
#include "qp.h"
#include "raw_wq.h"

#define BUF_LEN		(256 * 1024)
#define REMOTE_ACC	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define FLUSH_ACC	(IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT)

FIXTURE(ibta15) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_ah_attr ah;
	uint8_t *src, *dst;
	struct ibv_mr *src_mr, *dst_mr;
};

/* A fresh loopback pair a -> b; b grants every remote right, FLUSH too. */
static bool pair_up(struct __test_metadata *_metadata,
		    FIXTURE_DATA(ibta15) *self)
{
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.send_cq = self->cq, .recv_cq = self->cq,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = self->pd,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
				  IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 1 };
	struct ibv_qp_attr attr = {
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC | FLUSH_ACC,
	};
	struct verdict v = { .ok = true };

	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	self->a = ibv_create_qp_ex(self->ctx, &ia);
	self->b = ibv_create_qp_ex(self->ctx, &ia);
	if (!self->a || !self->b) {
		TH_LOG("create_qp_ex: %s", strerror(errno));
		return false;
	}
	if (!(qp_to_init(self->a, &v) && qp_to_init(self->b, &v) &&
	      qp_to_rts(self->a, &self->ah, self->b->qp_num, 200, 100, &k,
			&v) &&
	      qp_to_rts(self->b, &self->ah, self->a->qp_num, 100, 200, &k,
			&v))) {
		TH_LOG("%s", v.note);
		return false;
	}
	if (ibv_modify_qp(self->b, &attr, IBV_QP_ACCESS_FLAGS)) {
		TH_LOG("modify_qp FLUSH rights: %s", strerror(errno));
		return false;
	}
	return true;
}

FIXTURE_SETUP(ibta15)
{
	union ibv_gid gid;
	int gidx;

	self->a = self->b = NULL;
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	gidx = vrnic_wait_ipv4_gid(self->ctx, now() + 30, &gid);
	ASSERT_LE(0, gidx);
	roce_ah_attr(&self->ah, gid.raw, gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_TRUE(self->pd && self->cq);
	self->src = aligned_alloc(4096, BUF_LEN);
	self->dst = aligned_alloc(4096, BUF_LEN);
	ASSERT_TRUE(self->src && self->dst);
	memset(self->dst, 0, BUF_LEN);
	self->src_mr = ibv_reg_mr(self->pd, self->src, BUF_LEN,
				  IBV_ACCESS_LOCAL_WRITE);
	self->dst_mr = ibv_reg_mr(self->pd, self->dst, BUF_LEN,
				  REMOTE_ACC | FLUSH_ACC);
	ASSERT_NE(NULL, self->src_mr);
	ASSERT_NE(NULL, self->dst_mr) TH_LOG("reg_mr with FLUSH rights: %s",
					     strerror(errno));
	ASSERT_TRUE(pair_up(_metadata, self));
}

FIXTURE_TEARDOWN(ibta15)
{
	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	if (self->src_mr)
		ibv_dereg_mr(self->src_mr);
	if (self->dst_mr)
		ibv_dereg_mr(self->dst_mr);
	ibv_destroy_cq(self->cq);
	vrnic_close(self->ctx, self->pd);
	free(self->src);
	free(self->dst);
}

/* One ATOMIC WRITE of the 8 bytes at val to raddr through rkey. */
static int atomic_write(FIXTURE_DATA(ibta15) *self, uint32_t rkey,
			uint64_t raddr, const void *val, uint64_t wr_id)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(self->a);

	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, rkey, raddr, val);
	return ibv_wr_complete(qx);
}

/*
 * One FLUSH (libibverbs 44 has no ibv_wr_flush): its WQE written into a's
 * send queue and the doorbell rung, as libvrnic would for ibv_wr_flush.
 */
static void flush(FIXTURE_DATA(ibta15) *self, uint32_t rkey, uint64_t raddr,
		  uint64_t len, uint32_t type, uint32_t sel, uint64_t wr_id,
		  bool signaled)
{
	struct vrnic_qp *q = to_vrnic_qp(self->a);
	struct vrnic_send_wqe w = {
		.opcode = VRNIC_WQE_OP_FLUSH,
		.flags = signaled ? VRNIC_WQE_FLAG_SIGNALED : 0,
		.rkey = htole32(rkey),
		.remote_addr = htole64(raddr),
		.compare_add = htole64(len),
		.swap = htole64(VRNIC_FIELD_PREP(VRNIC_FLUSH_SEL_MASK, sel) |
				VRNIC_FIELD_PREP(VRNIC_FLUSH_TYPE_MASK, type)),
	};
	uint32_t pi;

	pthread_spin_lock(&q->sq.lock);
	pi = raw_wq_put(&q->sq, &w, sizeof(w), wr_id);
	raw_db(self->ctx, VRNIC_DB_SQ, self->a->qp_num, pi);
	pthread_spin_unlock(&q->sq.lock);
}

/* The next completion (status and opcode), or -1 when none came. */
static int next_wc(FIXTURE_DATA(ibta15) *self, struct ibv_wc *wc)
{
	return wait_wc(self->cq, wc, 1, 20000) == 1 ? 0 : -1;
}

TEST_F(ibta15, device_and_objects_take_the_new_rights)
{
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &dx));
	EXPECT_TRUE(dx.device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE);
	EXPECT_TRUE(dx.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL);
	EXPECT_TRUE(dx.device_cap_flags_ex &
		    IB_UVERBS_DEVICE_FLUSH_PERSISTENT);
	ASSERT_EQ(0, ibv_query_qp(self->b, &qa, IBV_QP_ACCESS_FLAGS, &ia));
	EXPECT_EQ(FLUSH_ACC, qa.qp_access_flags & FLUSH_ACC);
}

TEST_F(ibta15, atomic_write_stores_eight_bytes)
{
	struct ibv_wc wc;

	for (unsigned i = 0; i < 64; i++) {
		uint64_t off = 8 * (i % 16) + 64;
		uint8_t val[8];

		fill(val, 8, i + 1);
		ASSERT_EQ(0, atomic_write(self, self->dst_mr->rkey,
					  (uintptr_t)self->dst + off, val, i));
		ASSERT_EQ(0, next_wc(self, &wc));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("%s", ibv_wc_status_str(wc.status));
		ASSERT_EQ(IBV_WC_ATOMIC_WRITE, wc.opcode);
		ASSERT_EQ(i, wc.wr_id);
		ASSERT_EQ(0, memcmp(self->dst + off, val, 8)) TH_LOG("write %u", i);
	}
	/* Nothing around the 16 slots was touched. */
	for (unsigned k = 0; k < 64; k++)
		ASSERT_EQ(0, self->dst[k]);
	for (unsigned k = 64 + 128; k < 4096; k++)
		ASSERT_EQ(0, self->dst[k]);
}

TEST_F(ibta15, atomic_write_errors)
{
	struct ibv_mr *ro = ibv_reg_mr(self->pd, self->dst, BUF_LEN,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_READ);
	uint64_t val = 0x1122334455667788ull;
	struct ibv_wc wc;

	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, atomic_write(self, self->dst_mr->rkey,
				  (uintptr_t)self->dst + 4, &val, 1));
	ASSERT_EQ(0, next_wc(self, &wc));
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status)
		TH_LOG("misaligned: %s", ibv_wc_status_str(wc.status));
	ASSERT_TRUE(pair_up(_metadata, self));
	ASSERT_EQ(0, atomic_write(self, ro->rkey, (uintptr_t)self->dst, &val, 2));
	ASSERT_EQ(0, next_wc(self, &wc));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status)
		TH_LOG("without REMOTE_WRITE: %s", ibv_wc_status_str(wc.status));
	for (unsigned k = 0; k < 16; k++)
		ASSERT_EQ(0, self->dst[k]);
	ibv_dereg_mr(ro);
}

TEST_F(ibta15, flush_placement_types_and_selectivity)
{
	static const struct {
		uint32_t type, sel;
	} ok[] = {
		{ VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_RANGE },
		{ VRNIC_FLUSH_TYPE_PERSISTENT, VRNIC_FLUSH_SEL_RANGE },
		{ VRNIC_FLUSH_TYPE_GLOBAL | VRNIC_FLUSH_TYPE_PERSISTENT,
		  VRNIC_FLUSH_SEL_MR },
	};
	struct ibv_wc wc;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		flush(self, self->dst_mr->rkey, (uintptr_t)self->dst + 4096,
		      8192, ok[i].type, ok[i].sel, 10 + i, true);
		ASSERT_EQ(0, next_wc(self, &wc));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("case %zu: %s", i, ibv_wc_status_str(wc.status));
		EXPECT_EQ(IBV_WC_FLUSH, wc.opcode);
		EXPECT_EQ(10 + i, wc.wr_id);
	}
}

TEST_F(ibta15, flush_needs_the_rights_it_asks_for)
{
	struct ibv_mr *global = ibv_reg_mr(self->pd, self->dst, BUF_LEN,
					   REMOTE_ACC | IBV_ACCESS_FLUSH_GLOBAL);
	struct ibv_mr *none = ibv_reg_mr(self->pd, self->dst, BUF_LEN,
					 REMOTE_ACC);
	struct ibv_wc wc;

	ASSERT_TRUE(global && none);
	flush(self, global->rkey, (uintptr_t)self->dst, 64,
	      VRNIC_FLUSH_TYPE_PERSISTENT, VRNIC_FLUSH_SEL_RANGE, 1, true);
	ASSERT_EQ(0, next_wc(self, &wc));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status)
		TH_LOG("persistence via a global-only key: %s",
		       ibv_wc_status_str(wc.status));
	ASSERT_TRUE(pair_up(_metadata, self));
	flush(self, none->rkey, (uintptr_t)self->dst, 64,
	      VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_MR, 2, true);
	ASSERT_EQ(0, next_wc(self, &wc));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status)
		TH_LOG("a key without FLUSH rights: %s",
		       ibv_wc_status_str(wc.status));
	ibv_dereg_mr(global);
	ibv_dereg_mr(none);
}

TEST_F(ibta15, flush_completes_after_the_writes_before_it)
{
	struct ibv_sge sge = { (uintptr_t)self->src, BUF_LEN,
			       self->src_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { (uintptr_t)self->dst, self->dst_mr->rkey },
	}, *bad;
	struct ibv_wc wc;

	for (unsigned round = 0; round < 4; round++) {
		fill(self->src, BUF_LEN, 0xf1 + round);
		ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
		flush(self, self->dst_mr->rkey, (uintptr_t)self->dst, BUF_LEN,
		      VRNIC_FLUSH_TYPE_GLOBAL, VRNIC_FLUSH_SEL_RANGE, 2, true);
		ASSERT_EQ(0, next_wc(self, &wc));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(IBV_WC_FLUSH, wc.opcode);
		ASSERT_GT(0, differs(self->dst, BUF_LEN, 0xf1 + round))
			TH_LOG("round %u", round);
	}
}

TEST_HARNESS_MAIN
