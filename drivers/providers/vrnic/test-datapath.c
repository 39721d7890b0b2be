// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host test of libvrnic's data path against a model of the device, no
 * kernel and no device needed. The ibv_cmd_* calls the provider makes are
 * replaced by stubs that play vrnic.ko (they record the udata and answer
 * with object numbers); a "device" here reads WQEs and doorbells the way
 * vrnic_hw_defs.h describes them and writes CQEs with the phase rule.
 *
 * Checks: ring and WQE sizing and reported caps, WQE/SGE/inline/UD layouts,
 * one doorbell per post list, *bad_wr on the first bad WR with nothing of it
 * on the ring, CQE phase across wraps, the doorbell record, arming, flush
 * completions (signaled or not) retiring unsignaled WQEs, ring full, the
 * ibv_wr_* API (including a failed session leaving no trace), SRQ slots
 * completing out of order, CQ cleaning on destroy, resize, the extended
 * poll API, the libibverbs 44 VERBS_QP_EX location, raw packet QPs (send
 * WQE layout, SEND only, receive CQEs) and flow rules, receive WQs (ring,
 * posting in states, completions by wq_num, reset), RSS QPs (the hash
 * configuration in the udata, what is refused) and XRC (SRQs by srqn,
 * initiators' xrc_srqn from both post APIs, targets that take no posts,
 * XRC completions and their cleaning).
 *
 * Output is TAP.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"
#include "vrnic.h"

static int test_no;
static int test_failed;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		test_no++;                                                    \
		if (cond) {                                                   \
			printf("ok %d ", test_no);                            \
		} else {                                                      \
			printf("not ok %d ", test_no);                        \
			test_failed++;                                        \
		}                                                             \
		printf(__VA_ARGS__);                                          \
		printf("\n");                                                 \
	} while (0)

/* ---- libibverbs / kernel stand-ins --------------------------------------- */

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...)
{
	va_list ap;

	if (!getenv("VRNIC_TEST_VERBOSE"))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "# ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static uint32_t next_qn = 2;
static struct vrnic_create_cq_cmd last_cq_cmd;
static struct vrnic_create_qp_cmd last_qp_cmd;
static size_t last_qp_cmd_size;
static struct vrnic_create_srq_cmd last_srq_cmd;
static struct ibv_qp_cap last_qp_cap;
static uint32_t kernel_max_inline = 256;
/* Added to an XRC SRQ's srq_num: a kernel whose two numbers disagree. */
static uint32_t kernel_srq_num_skew;
static int srqs_destroyed;

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags)
{
	struct vrnic_ibv_create_cq *c = (void *)cmd;
	struct vrnic_ibv_create_cq_resp *r = (void *)resp;

	last_cq_cmd = c->drv_payload;
	cq->cq.context = context;
	cq->cq.cqe = attr->cqe;
	r->cqn = next_qn++;
	return 0;
}

int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	return 0;
}

/* The device's side of RESIZE_CQ lives in the test (resize_hook). */
static void (*resize_hook)(struct vrnic_cq *cq, void *new_ring,
			   uint32_t new_log_depth);

int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size)
{
	struct vrnic_ibv_resize_cq *c = (void *)cmd;

	if (resize_hook)
		resize_hook(to_vrnic_cq(cq),
			    (void *)(uintptr_t)c->drv_payload.buf_addr,
			    c->drv_payload.log_depth);
	cq->cqe = cqe;
	return 0;
}

int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	struct vrnic_ibv_create_qp *c = (void *)cmd;
	struct vrnic_ibv_create_qp_resp *r = (void *)resp;

	/* An XRC target's command has no udata. */
	last_qp_cmd_size = cmd_size;
	if (cmd_size >= sizeof(*c))
		last_qp_cmd = c->drv_payload;
	last_qp_cap = attr->cap;
	qp->qp.context = context;
	qp->qp.pd = attr->pd;
	qp->qp.send_cq = attr->send_cq;
	qp->qp.recv_cq = attr->recv_cq;
	qp->qp.srq = attr->srq;
	qp->qp.qp_type = attr->qp_type;
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_num = next_qn++;
	/* What libibverbs 44's set_qp() does to its comp_mask. */
	memset((uint8_t *)qp + 352, 0, 4);
	qp->comp_mask = 0;
	if (resp_size >= sizeof(*r))
		r->max_inline = kernel_max_inline;
	return 0;
}

int ibv_cmd_destroy_qp(struct ibv_qp *qp)
{
	return 0;
}

int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd, size_t cmd_size)
{
	return 0;
}

int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size)
{
	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = qp->state;
	return 0;
}

int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size)
{
	struct vrnic_ibv_create_srq *c = (void *)cmd;
	struct vrnic_ibv_create_srq_resp *r = (void *)resp;

	last_srq_cmd = c->drv_payload;
	srq->srq.context = attr_ex->pd->context;
	r->srqn = next_qn++;
	/* What libibverbs' set_vsrq() fills. */
	srq->srq_type = (attr_ex->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ?
			attr_ex->srq_type : IBV_SRQT_BASIC;
	if (srq->srq_type == IBV_SRQT_XRC)
		srq->srq_num = r->srqn + kernel_srq_num_skew;
	return 0;
}

int ibv_cmd_destroy_srq(struct ibv_srq *srq)
{
	srqs_destroyed++;
	return 0;
}

int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	struct vrnic_ibv_create_ah_resp *r = (void *)resp;
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 0x42 };

	memcpy(r->dmac, mac, sizeof(mac));
	ah->context = pd->context;
	ah->pd = pd;
	return 0;
}

int ibv_cmd_destroy_ah(struct ibv_ah *ah)
{
	return 0;
}

static struct ibv_flow_attr *last_flow_attr;
static size_t last_flow_ucmd_size;
static int create_flow_err;
static uint32_t destroyed_flow;

int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd,
			size_t ucmd_size)
{
	last_flow_attr = flow_attr;
	last_flow_ucmd_size = ucmd ? ucmd_size : 0;
	if (create_flow_err)
		return create_flow_err;
	flow_id->context = qp->context;
	flow_id->handle = 0x77;
	return 0;
}

int ibv_cmd_destroy_flow(struct ibv_flow *flow_id)
{
	destroyed_flow = flow_id->handle;
	return 0;
}

/* ---- the device model ------------------------------------------------------ */

static struct vrnic_create_wq_cmd last_wq_cmd;
static struct vrnic_create_rss_qp_cmd last_rss_cmd;
static int rss_cmd_calls;

int ibv_cmd_create_wq(struct ibv_context *context,
		      struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
		      struct ibv_create_wq *cmd, size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp,
		      size_t resp_size)
{
	last_wq_cmd = ((struct vrnic_ibv_create_wq *)cmd)->drv_payload;
	wq->context = context;
	wq->cq = wq_init_attr->cq;
	wq->pd = wq_init_attr->pd;
	wq->wq_type = wq_init_attr->wq_type;
	wq->wq_num = next_qn++;
	return 0;
}

int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
		      struct ibv_modify_wq *cmd, size_t cmd_size)
{
	if (attr->attr_mask & IBV_WQ_ATTR_STATE)
		wq->state = attr->wq_state;
	return 0;
}

int ibv_cmd_destroy_wq(struct ibv_wq *wq)
{
	return 0;
}

int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *attr,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size)
{
	last_rss_cmd = ((struct vrnic_ibv_create_rss_qp *)cmd)->drv_payload;
	rss_cmd_calls++;
	qp->qp.context = context;
	qp->qp.qp_type = attr->qp_type;
	qp->qp.qp_num = 0x10000;	/* VRNIC_RSS_NUM_BASE: an RSS context */
	return 0;
}

static struct vrnic_dev dev;
static struct vrnic_context *ctx;
static uint32_t db_page[VRNIC_DB_PAGE_SIZE / 4];
static struct ibv_pd pd_obj;

static uint32_t db_read(uint32_t off)
{
	uint32_t v = le32toh(db_page[off / 4]);

	db_page[off / 4] = 0;
	return v;
}

static uint32_t db_val(uint32_t qn, uint32_t idx)
{
	return ((idx & 0xffff) << 16) | qn;
}

/* Device producer index per CQ (by cqn). */
static uint32_t cq_pi[64];

/* Slot idx of the ring, in the CQ's CQE size. */
static struct vrnic_cqe *ring_cqe(struct vrnic_cq *cq, uint32_t idx)
{
	return (struct vrnic_cqe *)((uint8_t *)cq->ring +
				    ((size_t)vrnic_idx_slot(idx, cq->log_depth)
				     << cq->cqe_shift));
}

static void dev_cqe(struct vrnic_cq *cq, uint32_t qpn, uint64_t tag,
		    uint8_t opcode, uint8_t status, uint32_t byte_len)
{
	uint32_t pi = cq_pi[cq->cqn]++;
	struct vrnic_cqe *cqe = ring_cqe(cq, pi);
	uint32_t phase = vrnic_idx_phase(pi, cq->log_depth);

	memset(cqe, 0, (size_t)1 << cq->cqe_shift);
	cqe->wr_id = htole64(tag);
	cqe->qpn = htole32(qpn);
	cqe->opcode = opcode;
	cqe->status = status;
	cqe->byte_len = htole32(byte_len);
	/* body first, phase last */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	cqe->info = htole32(phase | (status ? 0x1230000 : 0));
}

static struct vrnic_send_wqe *sq_wqe(struct vrnic_qp *qp, uint32_t idx)
{
	return (void *)((uint8_t *)qp->buf.addr +
			((size_t)vrnic_idx_slot(idx, last_qp_cmd.sq_log_depth)
			 << qp->sq.wqe_shift));
}

/* ---- tests ------------------------------------------------------------------ */

void resize_copy(struct vrnic_cq *cq, void *new_ring, uint32_t new_log_depth);

static void setup(void)
{
	ctx = calloc(1, sizeof(*ctx));
	dev.pg_sz = 4096;
	strcpy(dev.vdev.device.name, "vrnic_test");
	ctx->ibvctx.context.device = &dev.vdev.device;
	ctx->ibvctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pd_obj.context = &ctx->ibvctx.context;
	ctx->db = db_page;
	ctx->db_size = sizeof(db_page);
	ctx->max_qp_wr = 4096;
	ctx->max_sge = 16;
	ctx->max_cqe = 65536;
	ctx->max_srq_wr = 4096;
	ctx->max_srq_sge = 16;
	ctx->max_inline_data = 256;
	ctx->qp_table = calloc(VRNIC_QP_TABLE_SIZE, sizeof(*ctx->qp_table));
	ctx->srq_table = calloc(VRNIC_SRQ_TABLE_SIZE, sizeof(*ctx->srq_table));
	pthread_mutex_init(&ctx->qp_table_mutex, NULL);
}

static struct vrnic_qp *make_qp(enum ibv_qp_type type, struct ibv_cq *scq,
				struct ibv_cq *rcq, struct ibv_srq *srq,
				struct ibv_qp_cap cap, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = type,
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = cap,
		.pd = &pd_obj,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};
	struct ibv_qp *qp;

	if (send_ops) {
		attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		attr.send_ops_flags = send_ops;
	}
	qp = vrnic_create_qp_ex(&ctx->ibvctx.context, &attr);
	return qp ? to_vrnic_qp(qp) : NULL;
}

static void test_cq_and_rc_post(void)
{
	struct ibv_cq *ibvcq = vrnic_create_cq(&ctx->ibvctx.context, 5, NULL, 0);
	struct ibv_qp_cap cap = { .max_send_wr = 10, .max_recv_wr = 10,
				  .max_send_sge = 2, .max_recv_sge = 1,
				  .max_inline_data = 64 };
	struct ibv_sge sge[5] = {
		{ .addr = 0x1000, .length = 100, .lkey = 0x111 },
		{ .addr = 0x2000, .length = 200, .lkey = 0x222 },
		{ .addr = (uintptr_t)"ABCDEFGH", .length = 8, .lkey = 0x333 },
	};
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_wc wc[8];
	struct vrnic_send_wqe *w;
	struct vrnic_sge *s;
	struct vrnic_cq *cq;
	struct vrnic_qp *qp;
	uint32_t v;
	int n, i;

	CHECK(ibvcq, "create_cq(5)");
	cq = to_vrnic_cq(ibvcq);
	CHECK(last_cq_cmd.log_depth == 3 && ibvcq->cqe == 8,
	      "CQ of 5 -> 8 CQEs (log_depth %u, cqe %d)", last_cq_cmd.log_depth,
	      ibvcq->cqe);
	CHECK(last_cq_cmd.buf_len == 4096 && last_cq_cmd.buf_addr % 4096 == 0 &&
	      (uint8_t *)cq->dbrec == (uint8_t *)cq->ring + 8 * 32,
	      "CQ buffer page-aligned, dbrec after 8 CQEs");
	CHECK(!vrnic_create_cq(&ctx->ibvctx.context, 65537, NULL, 0) &&
	      errno == EINVAL, "create_cq(max_cqe + 1) -> EINVAL");
	CHECK(!vrnic_create_cq(&ctx->ibvctx.context, 0, NULL, 0) &&
	      errno == EINVAL, "create_cq(0) -> EINVAL");

	qp = make_qp(IBV_QPT_RC, ibvcq, ibvcq, NULL, cap, 0);
	CHECK(qp, "create RC QP");
	CHECK(last_qp_cmd.sq_log_depth == 4 && last_qp_cmd.sq_wqe_shift == 7 &&
	      last_qp_cmd.rq_log_depth == 4 && last_qp_cmd.rq_wqe_shift == 5 &&
	      last_qp_cmd.rq_offset == 16 * 128 &&
	      last_qp_cmd.buf_len == 4096,
	      "QP rings: SQ 16 x 128B, RQ 16 x 32B at 2048 (%u %u %u %u %u)",
	      last_qp_cmd.sq_log_depth, last_qp_cmd.sq_wqe_shift,
	      last_qp_cmd.rq_log_depth, last_qp_cmd.rq_wqe_shift,
	      last_qp_cmd.rq_offset);
	CHECK(last_qp_cap.max_send_wr == 16 && last_qp_cap.max_send_sge == 4 &&
	      last_qp_cap.max_inline_data == 64 && last_qp_cap.max_recv_wr == 16 &&
	      last_qp_cap.max_recv_sge == 1,
	      "caps sent to the kernel are what the rings hold");

	/* RESET: refused, nothing on the ring. */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 0xa0; wr[0].opcode = IBV_WR_SEND; wr[0].sg_list = sge;
	wr[0].num_sge = 1;
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == EINVAL && bad == wr &&
	      !db_read(VRNIC_DB_SQ), "post_send in RESET -> EINVAL, no doorbell");

	qp->vqp.qp.state = IBV_QPS_RTS;
	wr[0].next = &wr[1];
	wr[1].wr_id = 0xa1; wr[1].opcode = IBV_WR_RDMA_WRITE; wr[1].sg_list = sge;
	wr[1].num_sge = 2; wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[1].wr.rdma.remote_addr = 0xdead0000; wr[1].wr.rdma.rkey = 0x4567;
	wr[1].next = &wr[2];
	wr[2].wr_id = 0xa2; wr[2].opcode = IBV_WR_SEND_WITH_IMM;
	wr[2].sg_list = &sge[2]; wr[2].num_sge = 1;
	wr[2].imm_data = htobe32(0x01020304);
	wr[2].send_flags = IBV_SEND_INLINE | IBV_SEND_SOLICITED;
	bad = NULL;
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == 0 && !bad,
	      "post_send of 3 WRs");
	v = db_read(VRNIC_DB_SQ);
	CHECK(v == db_val(qp->qpn, 3), "one SQ doorbell, pi 3 (%#x)", v);

	w = sq_wqe(qp, 0);
	s = (struct vrnic_sge *)(w + 1);
	CHECK(le64toh(w->wr_id) == 0 && w->opcode == VRNIC_WQE_OP_SEND &&
	      w->flags == 0 && w->num_sge == 1 && le64toh(s[0].addr) == 0x1000 &&
	      le32toh(s[0].length) == 100 && le32toh(s[0].lkey) == 0x111,
	      "WQE 0: SEND, unsignaled, 1 SGE, wr_id = ring position");
	w = sq_wqe(qp, 1);
	s = (struct vrnic_sge *)(w + 1);
	CHECK(w->opcode == VRNIC_WQE_OP_RDMA_WRITE &&
	      w->flags == VRNIC_WQE_FLAG_SIGNALED && w->num_sge == 2 &&
	      le32toh(w->rkey) == 0x4567 &&
	      le64toh(w->remote_addr) == 0xdead0000 &&
	      le32toh(s[1].lkey) == 0x222, "WQE 1: RDMA WRITE signaled, 2 SGEs");
	w = sq_wqe(qp, 2);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND_IMM &&
	      w->flags == (VRNIC_WQE_FLAG_INLINE | VRNIC_WQE_FLAG_SOLICITED) &&
	      le32toh(w->inline_len) == 8 && w->num_sge == 0 &&
	      !memcmp(w + 1, "ABCDEFGH", 8) &&
	      !memcmp(&w->imm_data, "\x01\x02\x03\x04", 4),
	      "WQE 2: SEND_IMM, 8 bytes inline after the header (len %u)",
	      le32toh(w->inline_len));

	/* A bad WR in the middle: the first is posted, nothing of the rest. */
	wr[0].next = &wr[1];
	wr[1].num_sge = 5;
	wr[2].send_flags = 0;
	bad = NULL;
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == EINVAL && bad == &wr[1],
	      "bad num_sge in WR 2 of 3 -> EINVAL, *bad_wr = WR 2");
	v = db_read(VRNIC_DB_SQ);
	CHECK(v == db_val(qp->qpn, 4), "doorbell covers only WR 1 (%#x)", v);
	wr[1].num_sge = 2;

	/* Completion of the signaled WRITE (position 1) retires 0 and 1. */
	dev_cqe(cq, qp->qpn, 1, VRNIC_CQE_OP_RDMA_WRITE, 0, 300);
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(n == 1 && wc[0].wr_id == 0xa1 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RDMA_WRITE && wc[0].qp_num == qp->qpn &&
	      qp->sq.ci == 2, "poll: WRITE completion, wr_id 0xa1, sq ci 2");
	CHECK(le32toh(cq->dbrec->ci) == 1, "dbrec.ci = 1 after polling");

	/* ERR: the device flushes 2 and 3 (unsignaled too). */
	qp->vqp.qp.state = IBV_QPS_ERR;
	dev_cqe(cq, qp->qpn, 2, VRNIC_CQE_OP_SEND, VRNIC_WC_WR_FLUSH_ERR, 0);
	dev_cqe(cq, qp->qpn, 3, VRNIC_CQE_OP_SEND, VRNIC_WC_WR_FLUSH_ERR, 0);
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(n == 2 && wc[0].wr_id == 0xa2 && wc[1].wr_id == 0xa0 &&
	      wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[1].status == IBV_WC_WR_FLUSH_ERR && wc[1].vendor_err == 0x123 &&
	      qp->sq.ci == 4, "flush CQEs polled, in order, vendor_err");
	CHECK(vrnic_poll_cq(ibvcq, 8, wc) == 0, "CQ empty");

	/* Arm carries ci. */
	vrnic_req_notify_cq(ibvcq, 0);
	v = db_read(VRNIC_DB_CQ_ARM_NEXT);
	CHECK(v == db_val(cq->cqn, 3), "arm next: ci 3, cqn (%#x)", v);
	vrnic_req_notify_cq(ibvcq, 1);
	v = db_read(VRNIC_DB_CQ_ARM_SOLICITED);
	CHECK(v == db_val(cq->cqn, 3), "arm solicited (%#x)", v);

	/* In ERR posts still succeed; fill the SQ to full. */
	wr[0].next = NULL;
	for (i = 0; i < 16; i++)
		if (vrnic_post_send(&qp->vqp.qp, wr, &bad))
			break;
	CHECK(i == 16, "16 posts fit a 16-deep SQ");
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == ENOMEM && bad == wr,
	      "17th -> ENOMEM");
	v = db_read(VRNIC_DB_SQ);
	CHECK(v == db_val(qp->qpn, 20), "last doorbell pi 20 (%#x)", v);

	/* Flush all 16 through an 8-deep CQ: phases across two wraps. */
	for (i = 0; i < 16; i++) {
		if (i % 8 == 0 && i) {
			n = vrnic_poll_cq(ibvcq, 8, wc);
			if (n != 8)
				break;
		}
		dev_cqe(cq, qp->qpn, 4 + i, VRNIC_CQE_OP_SEND,
			VRNIC_WC_WR_FLUSH_ERR, 0);
	}
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(i == 16 && n == 8 && qp->sq.ci == 20 && cq->ci == 19,
	      "phase wraps: 16 flushes polled (ci %u)", cq->ci);

	/* Receive side. */
	{
		struct ibv_recv_wr rwr = { .wr_id = 0xb0, .sg_list = sge,
					   .num_sge = 1 };
		struct ibv_recv_wr *rbad = NULL;
		struct vrnic_recv_wqe *r =
			(void *)((uint8_t *)qp->buf.addr + 2048);

		CHECK(vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad) == 0 &&
		      db_read(VRNIC_DB_RQ) == db_val(qp->qpn, 1) &&
		      le64toh(r->wr_id) == 0 && r->num_sge == 1 &&
		      le64toh(((struct vrnic_sge *)(r + 1))->addr) == 0x1000,
		      "post_recv: WQE at rq_offset, RQ doorbell");
		rwr.num_sge = 2;
		CHECK(vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad) == EINVAL &&
		      rbad == &rwr && !db_read(VRNIC_DB_RQ),
		      "post_recv num_sge 2 > 1 -> EINVAL");
		dev_cqe(cq, qp->qpn, 0, VRNIC_CQE_OP_RECV,
			VRNIC_WC_WR_FLUSH_ERR, 0);
		n = vrnic_poll_cq(ibvcq, 8, wc);
		CHECK(n == 1 && wc[0].wr_id == 0xb0 && qp->rq.ci == 1 &&
		      wc[0].opcode == IBV_WC_RECV,
		      "receive flush completes the RQ WQE");
	}

	/*
	 * A CQE naming nothing outstanding, or no QP of ours, is consumed and
	 * dropped (uapi "CQE decoding"); the next good one is still found.
	 */
	dev_cqe(cq, qp->qpn, 77, VRNIC_CQE_OP_SEND, 0, 0);
	dev_cqe(cq, 0x4444, 0, VRNIC_CQE_OP_SEND, 0, 0);
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(n == 0 && qp->sq.ci == 20 && cq->ci == cq_pi[cq->cqn],
	      "bogus CQE index, unknown QP: consumed and dropped, queue untouched");
	{
		struct ibv_recv_wr rwr = { .wr_id = 0xb1, .sg_list = sge,
					   .num_sge = 1 };
		struct ibv_recv_wr *rbad = NULL;

		CHECK(vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad) == 0,
		      "post_recv");
		dev_cqe(cq, 0x4444, 0, VRNIC_CQE_OP_RECV, 0, 0);
		dev_cqe(cq, qp->qpn, 1, VRNIC_CQE_OP_RECV | 0x7f, 0xee, 9);
		n = vrnic_poll_cq(ibvcq, 8, wc);
		CHECK(n == 1 && wc[0].wr_id == 0xb1 && qp->rq.ci == 2 &&
		      wc[0].opcode == IBV_WC_RECV &&
		      wc[0].status == IBV_WC_GENERAL_ERR &&
		      cq->ci == cq_pi[cq->cqn],
		      "dropped CQE skipped; unknown receive opcode and status -> RECV, GENERAL_ERR");
	}
	/* A user REG_MR WQE's error: the send queue's generic opcode. */
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == 0 && qp->sq.pi == 21,
	      "post_send in ERR");
	dev_cqe(cq, qp->qpn, 20, VRNIC_CQE_OP_REG_MR, VRNIC_WC_LOC_QP_OP_ERR, 0);
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(n == 1 && wc[0].opcode == IBV_WC_SEND &&
	      wc[0].status == IBV_WC_LOC_QP_OP_ERR && qp->sq.ci == 21,
	      "CQE opcode REG_MR on a user QP -> IBV_WC_SEND");

	n = qp->qpn;
	CHECK(vrnic_destroy_qp(&qp->vqp.qp) == 0 && !ctx->qp_table[n],
	      "destroy_qp");
	CHECK(vrnic_destroy_cq(ibvcq) == 0, "destroy_cq");
}

static void test_wr_api_and_ud(void)
{
	struct ibv_cq *ibvcq = vrnic_create_cq(&ctx->ibvctx.context, 64, NULL, 0);
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_recv_wr = 4,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1,
				       .grh = { .sgid_index = 1, .hop_limit = 64,
						.flow_label = 0x12345,
						.traffic_class = 3 } };
	struct ibv_sge sge = { .addr = 0x5000, .length = 16, .lkey = 7 };
	struct ibv_send_wr wr = { .wr_id = 0xc0, .opcode = IBV_WR_SEND,
				  .sg_list = &sge, .num_sge = 1 };
	char hello[] = "hello";
	struct ibv_send_wr *bad;
	struct vrnic_send_wqe *w;
	struct vrnic_av *av;
	struct vrnic_ud_dest *dest;
	struct ibv_qp_ex *qpx;
	struct ibv_ah *ah;
	struct vrnic_qp *qp;
	uint32_t v;

	memset(ah_attr.grh.dgid.raw, 0xfe, 16);
	qp = make_qp(IBV_QPT_UD, ibvcq, ibvcq, NULL, cap,
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	CHECK(qp && last_qp_cmd.sq_wqe_shift == 8 && qp->sq_data_off == 128,
	      "UD QP: 64 header + 64 address segment + 1 SGE -> 256-byte WQEs");
	CHECK(qp->max_inline == 128 && qp->sq.max_sge == 8,
	      "UD caps: the rest of the WQE, 128 bytes inline or 8 SGEs");
	CHECK(!make_qp(IBV_QPT_UD, ibvcq, ibvcq, NULL, cap,
		       IBV_QP_EX_WITH_RDMA_WRITE) && errno == EOPNOTSUPP,
	      "UD QP with RDMA_WRITE send op -> EOPNOTSUPP");
	qpx = &qp->vqp.qp_ex;
	CHECK(ibv_qp_to_qp_ex(&qp->vqp.qp) == qpx,
	      "host libibverbs 44's ibv_qp_to_qp_ex() finds VERBS_QP_EX");

	ah = vrnic_create_ah(&pd_obj, &ah_attr);
	CHECK(ah && !memcmp(to_vrnic_ah(ah)->av.dmac, "\x02\0\0\0\0\x42", 6),
	      "create_ah keeps the kernel's dmac");
	ah_attr.is_global = 0;
	CHECK(!vrnic_create_ah(&pd_obj, &ah_attr) && errno == EINVAL,
	      "create_ah without GRH -> EINVAL");

	qp->vqp.qp.state = IBV_QPS_RTS;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0x99;
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK(vrnic_post_send(&qp->vqp.qp, &wr, &bad) == 0 &&
	      db_read(VRNIC_DB_SQ) == db_val(qp->qpn, 1), "UD post_send");
	w = sq_wqe(qp, 0);
	av = (struct vrnic_av *)(w + 1);
	dest = (struct vrnic_ud_dest *)(av + 1);
	CHECK(av->dgid[0] == 0xfe && av->sgid_index == 1 && av->hop_limit == 64 &&
	      le32toh(av->flow_label) == 0x12345 && av->traffic_class == 3 &&
	      le32toh(dest->dest_qpn) == 0x99 &&
	      le32toh(dest->qkey) == 0x11111111 &&
	      le64toh(((struct vrnic_sge *)((uint8_t *)w + 128))->addr) == 0x5000,
	      "UD WQE: av, dest, SGE at 128");
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK(vrnic_post_send(&qp->vqp.qp, &wr, &bad) == EINVAL,
	      "RDMA WRITE on UD -> EINVAL");

	/*
	 * UD receives report the network header in sl as ConnectX does
	 * (UCX's UD transport reads it there): 0xa IPv4, 0x9 IPv6.
	 */
	{
		struct ibv_sge rs = { .addr = 0x9000, .length = 256, .lkey = 7 };
		struct ibv_recv_wr rwr = { .wr_id = 0xa0, .sg_list = &rs,
					   .num_sge = 1 }, *rbad;
		struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
		struct ibv_wc wc[2];
		struct vrnic_cqe *cqe;

		CHECK(!vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad) &&
		      !vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad),
		      "UD post_recv x2");
		cqe = ring_cqe(cq, cq_pi[cq->cqn]);
		dev_cqe(cq, qp->qpn, 0, VRNIC_CQE_OP_RECV, 0, 40 + 8);
		cqe->flags = VRNIC_CQE_FLAG_GRH;
		cqe->network_hdr_type = VRNIC_NET_TYPE_IPV4;
		cqe = ring_cqe(cq, cq_pi[cq->cqn]);
		dev_cqe(cq, qp->qpn, 1, VRNIC_CQE_OP_RECV, 0, 40 + 8);
		cqe->flags = VRNIC_CQE_FLAG_GRH;
		cqe->network_hdr_type = VRNIC_NET_TYPE_IPV6;
		CHECK(vrnic_poll_cq(ibvcq, 2, wc) == 2 &&
		      (wc[0].wc_flags & IBV_WC_GRH) && wc[0].sl == 0xa &&
		      (wc[1].wc_flags & IBV_WC_GRH) && wc[1].sl == 0x9,
		      "UD receive sl: %#x over IPv4, %#x over IPv6", wc[0].sl,
		      wc[1].sl);
	}

	/* ibv_wr_* session of two WRs, one doorbell. */
	ibv_wr_start(qpx);
	qpx->wr_id = 0xd0;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, ah, 5, 6);
	ibv_wr_set_sge(qpx, 1, 0x6000, 8);
	qpx->wr_id = 0xd1;
	qpx->wr_flags = 0;
	ibv_wr_send_imm(qpx, htobe32(0xabcd));
	ibv_wr_set_ud_addr(qpx, ah, 5, 6);
	ibv_wr_set_inline_data(qpx, hello, 5);
	CHECK(ibv_wr_complete(qpx) == 0, "wr_complete");
	v = db_read(VRNIC_DB_SQ);
	CHECK(v == db_val(qp->qpn, 3), "wr session: one doorbell, pi 3 (%#x)", v);
	w = sq_wqe(qp, 2);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND_IMM &&
	      (w->flags & VRNIC_WQE_FLAG_INLINE) && le32toh(w->inline_len) == 5 &&
	      !memcmp((uint8_t *)w + 128, "hello", 5) &&
	      le32toh(((struct vrnic_ud_dest *)((uint8_t *)w + 96))->dest_qpn) == 5,
	      "wr_send_imm + inline");

	/* A failed session reaches neither ring index nor doorbell. */
	ibv_wr_start(qpx);
	qpx->wr_id = 0xe0;
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, qp, 4096);
	CHECK(ibv_wr_complete(qpx) == EINVAL && !db_read(VRNIC_DB_SQ) &&
	      qp->sq.pi == 3, "oversized inline: wr_complete EINVAL, no doorbell");
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_abort(qpx);
	CHECK(!db_read(VRNIC_DB_SQ) && qp->sq.pi == 3, "wr_abort: nothing posted");

	/* Extended CQ API. */
	{
		struct ibv_cq_init_attr_ex cattr = {
			.cqe = 4,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
				    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_IMM,
		};
		struct ibv_poll_cq_attr pattr = {};
		struct ibv_cq_ex *cqx;
		struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
		int ret, n = 0;
		uint64_t ids[3];

		cattr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		CHECK(!vrnic_create_cq_ex(&ctx->ibvctx.context, &cattr) &&
		      errno == EOPNOTSUPP, "cq_ex with timestamps -> EOPNOTSUPP");
		cattr.wc_flags &= ~IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		cqx = vrnic_create_cq_ex(&ctx->ibvctx.context, &cattr);
		CHECK(cqx && cqx->read_byte_len && !cqx->read_src_qp,
		      "create_cq_ex installs only the requested readers");

		dev_cqe(cq, qp->qpn, 0, VRNIC_CQE_OP_SEND, 0, 16);
		dev_cqe(cq, qp->qpn, 2, VRNIC_CQE_OP_SEND, 0, 5);
		ret = ibv_start_poll(&cq->vcq.cq_ex, &pattr);
		while (!ret) {
			ids[n++] = cq->vcq.cq_ex.wr_id;
			ret = ibv_next_poll(&cq->vcq.cq_ex);
		}
		ibv_end_poll(&cq->vcq.cq_ex);
		CHECK(n == 2 && ids[0] == 0xc0 && ids[1] == 0xd1 &&
		      qp->sq.ci == 3 && le32toh(cq->dbrec->ci) == cq->ci,
		      "start/next/end_poll: 2 completions, dbrec published");
		CHECK(ibv_start_poll(&cq->vcq.cq_ex, &pattr) == ENOENT,
		      "start_poll on empty CQ -> ENOENT (lock released)");
		CHECK(pthread_spin_trylock(&cq->lock) == 0,
		      "CQ lock free after ENOENT");
		pthread_spin_unlock(&cq->lock);
		/* CQEs dropped by a start_poll that finds nothing are published. */
		dev_cqe(cq, 0x4444, 0, VRNIC_CQE_OP_SEND, 0, 0);
		dev_cqe(cq, qp->qpn, 77, VRNIC_CQE_OP_SEND, 0, 0);
		CHECK(ibv_start_poll(&cq->vcq.cq_ex, &pattr) == ENOENT &&
		      cq->ci == cq_pi[cq->cqn] &&
		      le32toh(cq->dbrec->ci) == cq->ci,
		      "start_poll dropping 2 CQEs: ENOENT, dbrec published");
		vrnic_destroy_cq(ibv_cq_ex_to_cq(cqx));
	}

	/*
	 * Completion timestamps, on a device with the clock page (a fake one
	 * here): 64-byte CQEs, the clock in both readers, the raw clock from
	 * the page's HI/LO registers.
	 */
	{
		static uint32_t page[1024] __attribute__((aligned(4096)));
		struct ibv_cq_init_attr_ex cattr = {
			.cqe = 4,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
				    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		};
		struct ibv_values_ex vals = {
			.comp_mask = IBV_VALUES_MASK_RAW_CLOCK,
		};
		struct ibv_poll_cq_attr pattr = {};
		struct vrnic_cqe_ts *e;
		struct ibv_cq_ex *cqx;
		struct vrnic_cq *tcq;

		ctx->clock = (const uint8_t *)page;
		page[(VRNIC_REG_CLOCK_LO - VRNIC_CLOCK_PAGE) / 4] = htole32(0x89abcdef);
		page[(VRNIC_REG_CLOCK_HI - VRNIC_CLOCK_PAGE) / 4] = htole32(0x1234567);
		CHECK(vrnic_query_rt_values(&ctx->ibvctx.context, &vals) == 0 &&
		      vals.comp_mask == IBV_VALUES_MASK_RAW_CLOCK &&
		      vals.raw_clock.tv_sec == 0 &&
		      (uint64_t)vals.raw_clock.tv_nsec == 0x0123456789abcdefULL,
		      "query_rt_values: the clock page's HI:LO");
		cqx = vrnic_create_cq_ex(&ctx->ibvctx.context, &cattr);
		CHECK(cqx && last_cq_cmd.flags == VRNIC_CQ_FLAG_TIMESTAMP &&
		      last_cq_cmd.buf_len >= 4 * 64 + 64 &&
		      cqx->read_completion_ts && cqx->read_completion_wallclock_ns,
		      "cq_ex with timestamps: 64-byte CQEs, both readers");
		tcq = to_vrnic_cq(ibv_cq_ex_to_cq(cqx));
		e = (struct vrnic_cqe_ts *)((uint8_t *)tcq->ring + 64);
		/* Two sends for the CQEs to complete (slots 3 and 4). */
		ibv_wr_start(qpx);
		ibv_wr_send(qpx);
		ibv_wr_set_ud_addr(qpx, ah, 5, 6);
		ibv_wr_set_sge(qpx, 1, 0x6000, 8);
		ibv_wr_send(qpx);
		ibv_wr_set_ud_addr(qpx, ah, 5, 6);
		ibv_wr_set_sge(qpx, 1, 0x6000, 8);
		CHECK(ibv_wr_complete(qpx) == 0 && qp->sq.pi == 5 &&
		      db_read(VRNIC_DB_SQ), "two sends for the timestamp CQEs");
		dev_cqe(tcq, qp->qpn, 3, VRNIC_CQE_OP_SEND, 0, 16);
		dev_cqe(tcq, qp->qpn, 4, VRNIC_CQE_OP_SEND, 0, 16);
		e->timestamp = htole64(1767225600123456789ULL);
		CHECK(ibv_start_poll(cqx, &pattr) == 0 && ibv_next_poll(cqx) == 0 &&
		      ibv_wc_read_completion_ts(cqx) == 1767225600123456789ULL &&
		      ibv_wc_read_completion_wallclock_ns(cqx) ==
		      1767225600123456789ULL,
		      "the second CQE's timestamp, 64 bytes in");
		ibv_end_poll(cqx);
		vrnic_destroy_cq(ibv_cq_ex_to_cq(cqx));
		ctx->clock = NULL;
		vals.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
		CHECK(vrnic_query_rt_values(&ctx->ibvctx.context, &vals) ==
		      EOPNOTSUPP, "query_rt_values without a clock page -> EOPNOTSUPP");
	}

	/* Atomics (RC): post_send and ibv_wr_atomic_* build the WQE. */
	{
		struct ibv_sge s8 = { .addr = 0x7000, .length = 8, .lkey = 0x99 };
		struct ibv_send_wr aw = {
			.wr_id = 0xc0, .sg_list = &s8, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IBV_SEND_SIGNALED,
		};
		struct ibv_send_wr *abad = NULL;
		struct vrnic_send_wqe *aw_wqe;
		struct vrnic_qp *rc;
		struct ibv_qp_ex *rcx;

		rc = make_qp(IBV_QPT_RC, ibvcq, ibvcq, NULL, cap,
			     IBV_QP_EX_WITH_SEND |
			     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
		CHECK(rc, "RC QP with atomic send ops");
		rcx = &rc->vqp.qp_ex;
		rc->vqp.qp.state = IBV_QPS_RTS;

		aw.wr.atomic.remote_addr = 0x8000;
		aw.wr.atomic.rkey = 0x77;
		aw.wr.atomic.compare_add = 5;
		CHECK(vrnic_post_send(&rc->vqp.qp, &aw, &abad) == 0 &&
		      db_read(VRNIC_DB_SQ) == db_val(rc->qpn, 1),
		      "post_send FETCH_AND_ADD posts one WQE");
		aw_wqe = sq_wqe(rc, 0);
		CHECK(aw_wqe->opcode == VRNIC_WQE_OP_ATOMIC_FETCH_ADD &&
		      le64toh(aw_wqe->remote_addr) == 0x8000 &&
		      le32toh(aw_wqe->rkey) == 0x77 &&
		      le64toh(aw_wqe->compare_add) == 5 && aw_wqe->num_sge == 1,
		      "FETCH_ADD WQE: address, rkey, add value, result SGE");
		ibv_wr_start(rcx);
		ibv_wr_atomic_cmp_swp(rcx, 0x77, 0x8008, 1, 2);
		ibv_wr_set_sge(rcx, 1, 0x7000, 8);
		CHECK(ibv_wr_complete(rcx) == 0 &&
		      db_read(VRNIC_DB_SQ) == db_val(rc->qpn, 2),
		      "wr_atomic_cmp_swp posts");
		aw_wqe = sq_wqe(rc, 1);
		CHECK(aw_wqe->opcode == VRNIC_WQE_OP_ATOMIC_CMP_SWP &&
		      le64toh(aw_wqe->remote_addr) == 0x8008 &&
		      le64toh(aw_wqe->compare_add) == 1 &&
		      le64toh(aw_wqe->swap) == 2,
		      "CMP_SWP WQE: address, compare, swap");
		vrnic_destroy_qp(&rc->vqp.qp);
	}

	/* ATOMIC WRITE: only on a device that has it; the 8 bytes in the WQE. */
	{
		static const uint8_t val[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
		struct vrnic_send_wqe *aw_wqe;
		struct vrnic_qp *rc;
		struct ibv_qp_ex *rcx;

		ctx->atomic_write = false;
		CHECK(!make_qp(IBV_QPT_RC, ibvcq, ibvcq, NULL, cap,
			       IBV_QP_EX_WITH_ATOMIC_WRITE) && errno == EOPNOTSUPP,
		      "ATOMIC_WRITE send op without the device's -> EOPNOTSUPP");
		ctx->atomic_write = true;
		CHECK(!make_qp(IBV_QPT_UC, ibvcq, ibvcq, NULL, cap,
			       IBV_QP_EX_WITH_ATOMIC_WRITE) && errno == EOPNOTSUPP,
		      "ATOMIC_WRITE on UC -> EOPNOTSUPP");
		rc = make_qp(IBV_QPT_RC, ibvcq, ibvcq, NULL, cap,
			     IBV_QP_EX_WITH_ATOMIC_WRITE);
		CHECK(rc && rc->vqp.qp_ex.wr_atomic_write,
		      "RC QP with ATOMIC_WRITE installs wr_atomic_write");
		rcx = &rc->vqp.qp_ex;
		rc->vqp.qp.state = IBV_QPS_RTS;
		ibv_wr_start(rcx);
		ibv_wr_atomic_write(rcx, 0x55, 0x9008, val);
		CHECK(ibv_wr_complete(rcx) == 0 &&
		      db_read(VRNIC_DB_SQ) == db_val(rc->qpn, 1),
		      "wr_atomic_write posts");
		aw_wqe = sq_wqe(rc, 0);
		CHECK(aw_wqe->opcode == VRNIC_WQE_OP_ATOMIC_WRITE &&
		      le64toh(aw_wqe->remote_addr) == 0x9008 &&
		      le32toh(aw_wqe->rkey) == 0x55 && !aw_wqe->num_sge &&
		      !memcmp(&aw_wqe->compare_add, val, 8),
		      "ATOMIC_WRITE WQE: address, rkey, the 8 bytes, no SGE");
		vrnic_destroy_qp(&rc->vqp.qp);
	}

	vrnic_destroy_ah(ah);
	vrnic_destroy_qp(&qp->vqp.qp);
	vrnic_destroy_cq(ibvcq);
}

static void test_clean_resize_srq(void)
{
	struct ibv_cq *ibvcq = vrnic_create_cq(&ctx->ibvctx.context, 8, NULL, 0);
	struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
	struct ibv_qp_cap cap = { .max_send_wr = 8, .max_send_sge = 1 };
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 3, .max_sge = 1 } };
	struct ibv_sge sge = { .addr = 0x7000, .length = 64, .lkey = 9 };
	struct ibv_recv_wr rwr[3], *rbad;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	struct ibv_wc wc[8];
	struct vrnic_qp *a, *b;
	struct vrnic_srq *srq;
	struct ibv_srq *ibvsrq;
	int n, i;

	ibvsrq = vrnic_create_srq(&pd_obj, &sattr);
	CHECK(ibvsrq && sattr.attr.max_wr == 4 && last_srq_cmd.log_depth == 2 &&
	      last_srq_cmd.wqe_shift == 5, "SRQ of 3 -> 4 x 32B");
	srq = to_vrnic_srq(ibvsrq);

	a = make_qp(IBV_QPT_RC, ibvcq, ibvcq, ibvsrq, cap, 0);
	b = make_qp(IBV_QPT_RC, ibvcq, ibvcq, NULL, cap, 0);
	CHECK(a && b && last_qp_cmd.rq_log_depth == 1 && a->srq == srq,
	      "QPs with and without SRQ");
	a->vqp.qp.state = b->vqp.qp.state = IBV_QPS_RTS;

	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 3; i++) {
		rwr[i].wr_id = 0xf0 + i;
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 2 ? &rwr[i + 1] : NULL;
	}
	CHECK(vrnic_post_srq_recv(ibvsrq, rwr, &rbad) == 0 &&
	      db_read(VRNIC_DB_SRQ) == db_val(srq->srqn, 3), "post_srq_recv x3");
	rwr[0].next = NULL;
	CHECK(vrnic_post_srq_recv(ibvsrq, rwr, &rbad) == 0 &&
	      vrnic_post_srq_recv(ibvsrq, rwr, &rbad) == ENOMEM,
	      "4 outstanding fill a 4-deep SRQ");
	db_read(VRNIC_DB_SRQ);

	/* Out of order: slot 2 then slot 0; QP b's sends interleaved. */
	vrnic_post_send(&b->vqp.qp, &wr, &bad);
	vrnic_post_send(&a->vqp.qp, &wr, &bad);
	dev_cqe(cq, a->qpn, 2, VRNIC_CQE_OP_RECV, 0, 64);
	dev_cqe(cq, b->qpn, 0, VRNIC_CQE_OP_SEND, 0, 64);
	dev_cqe(cq, a->qpn, 0, VRNIC_CQE_OP_SEND, 0, 64);
	dev_cqe(cq, a->qpn, 0, VRNIC_CQE_OP_RECV, 0, 64);
	n = vrnic_poll_cq(ibvcq, 1, wc);
	CHECK(n == 1 && wc[0].wr_id == 0xf2 && srq->nfree == 1,
	      "SRQ slot 2 completes first, slot freed");
	CHECK(vrnic_post_srq_recv(ibvsrq, rwr, &rbad) == 0,
	      "a freed slot takes a new WQE");

	/* Destroy a: its two CQEs vanish, b's stays. */
	vrnic_destroy_qp(&a->vqp.qp);
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(n == 1 && wc[0].qp_num == b->qpn && srq->nfree == 1,
	      "destroy_qp cleans its CQEs and returns its SRQ slot");

	/* Resize with an unconsumed CQE: the device copies it to slot 0. */
	for (i = 0; i < 3; i++)
		vrnic_post_send(&b->vqp.qp, &wr, &bad);
	dev_cqe(cq, b->qpn, 1, VRNIC_CQE_OP_SEND, 0, 1);
	dev_cqe(cq, b->qpn, 2, VRNIC_CQE_OP_SEND, 0, 2);
	n = vrnic_poll_cq(ibvcq, 1, wc);
	resize_hook = resize_copy;
	CHECK(vrnic_resize_cq(ibvcq, 100) == 0 && ibvcq->cqe == 128 &&
	      cq->ci == 0, "resize_cq(100) -> 128, ci restarts at 0");
	n = vrnic_poll_cq(ibvcq, 8, wc);
	CHECK(n == 1 && le32toh(cq->dbrec->ci) == 1 && wc[0].byte_len == 2,
	      "the copied CQE is polled from the new ring");
	resize_hook = NULL;

	vrnic_destroy_qp(&b->vqp.qp);
	CHECK(vrnic_destroy_srq(ibvsrq) == 0, "destroy_srq");
	vrnic_destroy_cq(ibvcq);
}

/*
 * Raw packet QPs: an RC-shaped send WQE (no UD segment) whose data is the
 * frame, SEND only, no SRQ; receives complete as RECV with the frame's
 * length and nothing of UD's GRH reporting. Flow rules go to the kernel.
 */
static void test_raw_packet(void)
{
	static const uint8_t frame[60] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* broadcast */
		0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5,	/* local experimental */
		'r', 'a', 'w',
	};
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 8,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_SL,
	};
	struct ibv_qp_cap cap = { .max_send_wr = 8, .max_recv_wr = 4,
				  .max_send_sge = 2, .max_recv_sge = 1,
				  .max_inline_data = 64 };
	static const enum ibv_wr_opcode refused[] = {
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_SEND_WITH_INV, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW,
	};
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_sge sge[2] = {
		{ .addr = 0x1000, .length = 14, .lkey = 0x11 },
		{ .addr = 0x2000, .length = 1000, .lkey = 0x22 },
	};
	struct ibv_sge inl = { .addr = (uintptr_t)frame, .length = sizeof(frame) };
	struct ibv_data_buf bufs[2] = {
		{ .addr = (void *)frame, .length = 14 },
		{ .addr = (void *)(frame + 14), .length = 3 },
	};
	struct ibv_send_wr wr[2], *bad;
	struct ibv_recv_wr rwr = { .sg_list = sge, .num_sge = 1 }, *rbad;
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} rule = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(rule),
			  .num_of_specs = 1, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth),
			 .val.ether_type = htobe16(0x88b5),
			 .mask.ether_type = 0xffff },
	};
	struct ibv_poll_cq_attr pattr = {};
	struct vrnic_send_wqe *w;
	struct vrnic_sge *s;
	struct vrnic_cqe *cqe;
	struct ibv_flow *flow;
	struct ibv_srq *ibvsrq;
	struct ibv_qp_ex *qpx;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *ibvcq;
	struct vrnic_cq *cq;
	struct vrnic_qp *qp;
	struct ibv_wc wc;
	size_t i;
	int n;

	cqx = vrnic_create_cq_ex(&ctx->ibvctx.context, &cattr);
	ibvcq = ibv_cq_ex_to_cq(cqx);
	cq = to_vrnic_cq(ibvcq);
	ibvsrq = vrnic_create_srq(&pd_obj, &sattr);
	CHECK(cqx && ibvsrq, "CQ and SRQ for the raw packet QP tests");

	CHECK(!make_qp(IBV_QPT_RAW_PACKET, ibvcq, ibvcq, ibvsrq, cap, 0) &&
	      errno == EINVAL, "raw packet QP with an SRQ -> EINVAL");
	CHECK(!make_qp(IBV_QPT_RAW_PACKET, ibvcq, ibvcq, NULL, cap,
		       IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM) &&
	      errno == EOPNOTSUPP,
	      "raw packet QP with SEND_WITH_IMM send op -> EOPNOTSUPP");
	qp = make_qp(IBV_QPT_RAW_PACKET, ibvcq, ibvcq, NULL, cap,
		     IBV_QP_EX_WITH_SEND);
	CHECK(qp && qp->vqp.qp.qp_type == IBV_QPT_RAW_PACKET &&
	      qp->sq_data_off == 64 && last_qp_cmd.sq_wqe_shift == 7 &&
	      last_qp_cmd.rq_wqe_shift == 5 && qp->max_inline == 64 &&
	      qp->sq.max_sge == 4,
	      "raw packet QP sized as RC: no UD segment, 128-byte send WQEs");
	qpx = &qp->vqp.qp_ex;
	CHECK(qpx->wr_send && !qpx->wr_send_imm && !qpx->wr_set_ud_addr &&
	      qpx->wr_set_sge_list && qpx->wr_set_inline_data_list,
	      "raw packet qp_ex: wr_send and the data setters, no wr_set_ud_addr");
	qp->vqp.qp.state = IBV_QPS_RTS;

	/* A SEND of two SGEs, then the frame inline. */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 0x70; wr[0].opcode = IBV_WR_SEND; wr[0].sg_list = sge;
	wr[0].num_sge = 2; wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].next = &wr[1];
	wr[1].wr_id = 0x71; wr[1].opcode = IBV_WR_SEND; wr[1].sg_list = &inl;
	wr[1].num_sge = 1; wr[1].send_flags = IBV_SEND_INLINE;
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == 0 &&
	      db_read(VRNIC_DB_SQ) == db_val(qp->qpn, 2),
	      "raw post_send of 2 SENDs, one doorbell");
	w = sq_wqe(qp, 0);
	s = (struct vrnic_sge *)((uint8_t *)w + 64);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND &&
	      w->flags == VRNIC_WQE_FLAG_SIGNALED && w->num_sge == 2 &&
	      !w->inline_len && !w->imm_data && !w->rkey && !w->remote_addr &&
	      le64toh(s[0].addr) == 0x1000 && le32toh(s[0].length) == 14 &&
	      le32toh(s[0].lkey) == 0x11 && le64toh(s[1].addr) == 0x2000 &&
	      le32toh(s[1].length) == 1000 && le32toh(s[1].lkey) == 0x22,
	      "raw SEND WQE: header, the frame's 2 SGEs at 64");
	w = sq_wqe(qp, 1);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND &&
	      w->flags == VRNIC_WQE_FLAG_INLINE && !w->num_sge &&
	      le32toh(w->inline_len) == sizeof(frame) &&
	      !memcmp((uint8_t *)w + 64, frame, sizeof(frame)),
	      "raw inline SEND WQE: the 60-byte frame at 64");

	/* Every other opcode is refused before it touches the ring. */
	wr[0].next = NULL;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		wr[0].opcode = refused[i];
		bad = NULL;
		if (vrnic_post_send(&qp->vqp.qp, wr, &bad) != EINVAL ||
		    bad != wr)
			break;
	}
	CHECK(i == sizeof(refused) / sizeof(refused[0]) &&
	      !db_read(VRNIC_DB_SQ) && qp->sq.pi == 2,
	      "raw post_send: %zu non-SEND opcodes -> EINVAL, nothing posted",
	      sizeof(refused) / sizeof(refused[0]));
	wr[0].opcode = IBV_WR_SEND;
	wr[0].next = &wr[1];
	wr[1].opcode = IBV_WR_SEND_WITH_IMM;
	CHECK(vrnic_post_send(&qp->vqp.qp, wr, &bad) == EINVAL &&
	      bad == &wr[1] && db_read(VRNIC_DB_SQ) == db_val(qp->qpn, 3),
	      "SEND then SEND_WITH_IMM: the SEND posted, *bad_wr the second");

	/* ibv_wr_*: SGE list and inline list. */
	ibv_wr_start(qpx);
	qpx->wr_id = 0x72;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 2, sge);
	qpx->wr_id = 0x73;
	qpx->wr_flags = 0;
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data_list(qpx, 2, bufs);
	CHECK(ibv_wr_complete(qpx) == 0 &&
	      db_read(VRNIC_DB_SQ) == db_val(qp->qpn, 5),
	      "raw wr session of 2 SENDs, one doorbell");
	w = sq_wqe(qp, 3);
	s = (struct vrnic_sge *)((uint8_t *)w + 64);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND &&
	      w->flags == VRNIC_WQE_FLAG_SIGNALED && w->num_sge == 2 &&
	      le64toh(s[1].addr) == 0x2000 && le32toh(s[1].lkey) == 0x22,
	      "wr_send + wr_set_sge_list: SGEs at 64");
	w = sq_wqe(qp, 4);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND &&
	      w->flags == VRNIC_WQE_FLAG_INLINE && le32toh(w->inline_len) == 17 &&
	      !memcmp((uint8_t *)w + 64, frame, 17),
	      "wr_send + wr_set_inline_data_list: header and payload at 64");

	/*
	 * Receives: RECV with the frame's length, no flags, sl 0. The sl
	 * follows the GRH flag only, so a header type in the CQE (which the
	 * device writes for UD) does not make it UD's 0xa.
	 */
	rwr.wr_id = 0x80;
	CHECK(vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad) == 0 &&
	      db_read(VRNIC_DB_RQ) == db_val(qp->qpn, 1),
	      "raw post_recv");
	rwr.wr_id = 0x81;
	vrnic_post_recv(&qp->vqp.qp, &rwr, &rbad);
	cqe = ring_cqe(cq, cq_pi[cq->cqn]);
	dev_cqe(cq, qp->qpn, 0, VRNIC_CQE_OP_RECV, 0, 60);
	cqe->network_hdr_type = VRNIC_NET_TYPE_IPV4;
	dev_cqe(cq, qp->qpn, 1, VRNIC_CQE_OP_RECV, 0, 1514);
	n = vrnic_poll_cq(ibvcq, 1, &wc);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x80 &&
	      wc.opcode == IBV_WC_RECV && wc.byte_len == 60 && !wc.wc_flags &&
	      !wc.sl && !wc.src_qp && wc.qp_num == qp->qpn,
	      "raw receive: RECV, byte_len 60, wc_flags 0, sl 0, qp_num");
	CHECK(ibv_start_poll(cqx, &pattr) == 0 && cqx->wr_id == 0x81 &&
	      ibv_wc_read_opcode(cqx) == IBV_WC_RECV &&
	      ibv_wc_read_byte_len(cqx) == 1514 &&
	      !ibv_wc_read_wc_flags(cqx) && !ibv_wc_read_sl(cqx) &&
	      ibv_wc_read_qp_num(cqx) == qp->qpn && qp->rq.ci == 2,
	      "raw receive, extended poll: RECV, byte_len 1514, no flags, sl 0");
	ibv_end_poll(cqx);

	/* Flow rules: the attr goes to the kernel as is, no vendor udata. */
	last_flow_ucmd_size = 1;
	flow = vrnic_create_flow(&qp->vqp.qp, &rule.attr);
	CHECK(flow && flow->handle == 0x77 &&
	      flow->context == &ctx->ibvctx.context &&
	      last_flow_attr == &rule.attr && !last_flow_ucmd_size,
	      "create_flow: the kernel's rule, no udata");
	create_flow_err = EINVAL;
	errno = 0;
	CHECK(!vrnic_create_flow(&qp->vqp.qp, &rule.attr) && errno == EINVAL,
	      "create_flow refused by the kernel -> NULL, errno EINVAL");
	create_flow_err = 0;
	CHECK(vrnic_destroy_flow(flow) == 0 && destroyed_flow == 0x77,
	      "destroy_flow");

	vrnic_destroy_qp(&qp->vqp.qp);
	vrnic_destroy_srq(ibvsrq);
	vrnic_destroy_cq(ibvcq);
}

static void test_wq_and_rss(void)
{
	struct ibv_cq *ibvcq = vrnic_create_cq(&ctx->ibvctx.context, 8, NULL, 0);
	struct vrnic_cq *cq = to_vrnic_cq(ibvcq);
	struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ, .max_wr = 5,
				       .max_sge = 3, .pd = &pd_obj,
				       .cq = ibvcq };
	struct ibv_wq_attr rdy = { .attr_mask = IBV_WQ_ATTR_STATE,
				   .wq_state = IBV_WQS_RDY };
	struct ibv_wq_attr rst = { .attr_mask = IBV_WQ_ATTR_STATE,
				   .wq_state = IBV_WQS_RESET };
	struct ibv_sge sge = { .addr = 0x5000, .length = 1514, .lkey = 0x55 };
	struct ibv_recv_wr r2 = { .wr_id = 0xb2, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr r1 = { .wr_id = 0xb1, .sg_list = &sge, .num_sge = 1,
				  .next = &r2 }, *rbad;
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *sbad;
	uint8_t key[VRNIC_RSS_KEY_LEN];
	struct ibv_rwq_ind_table tbl = { .context = &ctx->ibvctx.context };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = &pd_obj,
		.rwq_ind_tbl = &tbl,
		.rx_hash_conf = {
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = VRNIC_RSS_KEY_LEN,
			.rx_hash_key = key,
			.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
					       IBV_RX_HASH_DST_PORT_TCP,
		},
	};
	struct vrnic_recv_wqe *w;
	struct vrnic_rwq *rwq;
	struct ibv_qp *rss;
	struct ibv_wq *wq;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < VRNIC_RSS_KEY_LEN; i++)
		key[i] = i * 7 + 1;
	db_read(VRNIC_DB_RQ);	/* what earlier cases left */

	wq = vrnic_create_wq(&ctx->ibvctx.context, &wa);
	CHECK(wq != NULL, "create_wq");
	if (!wq)
		return;
	rwq = to_vrnic_rwq(wq);
	CHECK(last_wq_cmd.log_depth == 3 && wa.max_wr == 8 &&
	      (1U << last_wq_cmd.wqe_shift) >=
	      sizeof(struct vrnic_recv_wqe) + 3 * sizeof(struct vrnic_sge) &&
	      wa.max_sge >= 3 &&
	      last_wq_cmd.buf_len >= 8U << last_wq_cmd.wqe_shift &&
	      last_wq_cmd.buf_addr == (uintptr_t)rwq->qp.buf.addr,
	      "create_wq: an RQ ring of 8 (asked 5), max_sge %u, in the udata",
	      wa.max_sge);
	CHECK(ctx->qp_table[wq->wq_num] == &rwq->qp && wq->post_recv,
	      "create_wq: found by wq_num, post_recv set");

	CHECK(ibv_post_wq_recv(wq, &r1, &rbad) == EINVAL && rbad == &r1 &&
	      db_read(VRNIC_DB_RQ) == 0, "post_wq_recv in RESET: EINVAL");
	CHECK(vrnic_modify_wq(wq, &rdy) == 0 && wq->state == IBV_WQS_RDY,
	      "modify_wq to RDY");
	CHECK(ibv_post_wq_recv(wq, &r1, &rbad) == 0 &&
	      db_read(VRNIC_DB_RQ) == db_val(wq->wq_num, 2),
	      "post_wq_recv: two WQEs, one RQ doorbell for the WQ");
	w = (struct vrnic_recv_wqe *)((uint8_t *)rwq->qp.buf.addr +
				      ((size_t)1 << last_wq_cmd.wqe_shift));
	CHECK(le64toh(w->wr_id) == 1 && w->num_sge == 1 &&
	      le64toh(((struct vrnic_sge *)(w + 1))->addr) == 0x5000,
	      "post_wq_recv: the second WQE in slot 1");
	dev_cqe(cq, wq->wq_num, 0, VRNIC_CQE_OP_RECV, 0, 60);
	CHECK(vrnic_poll_cq(ibvcq, 1, &wc) == 1 && wc.wr_id == 0xb1 &&
	      wc.qp_num == wq->wq_num && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == 60, "the WQ's CQE: its wr_id, qp_num = wq_num");

	dev_cqe(cq, wq->wq_num, 1, VRNIC_CQE_OP_RECV, 0, 60);
	CHECK(vrnic_modify_wq(wq, &rst) == 0 &&
	      vrnic_poll_cq(ibvcq, 1, &wc) == 0 && rwq->qp.rq.pi == 0 &&
	      rwq->qp.rq.ci == 0, "modify_wq to RESET: CQEs dropped, ring at 0");

	memset(&last_rss_cmd, 0, sizeof(last_rss_cmd));
	rss = vrnic_create_qp_ex(&ctx->ibvctx.context, &qa);
	CHECK(rss && rss->qp_num == 0x10000 &&
	      last_rss_cmd.rx_hash_function == VRNIC_RX_HASH_FUNC_TOEPLITZ &&
	      last_rss_cmd.rx_key_len == VRNIC_RSS_KEY_LEN &&
	      last_rss_cmd.rx_hash_fields_mask ==
	      (VRNIC_RSS_F_SRC_IPV4 | VRNIC_RSS_F_DST_PORT_TCP) &&
	      !memcmp(last_rss_cmd.rx_hash_key, key, VRNIC_RSS_KEY_LEN),
	      "RSS QP: function, key and fields in the udata");
	if (rss) {
		CHECK(vrnic_post_recv(rss, &r1, &rbad) == EINVAL &&
		      vrnic_post_send(rss, &swr, &sbad) == EINVAL &&
		      vrnic_modify_qp(rss, &(struct ibv_qp_attr){ 0 },
				      IBV_QP_STATE) == EOPNOTSUPP,
		      "RSS QP: no posts, no modify");
		CHECK(vrnic_destroy_qp(rss) == 0, "RSS QP destroyed");
	}

	i = rss_cmd_calls;
	qa.rx_hash_conf.rx_hash_key_len = 20;
	CHECK(!vrnic_create_qp_ex(&ctx->ibvctx.context, &qa) &&
	      errno == EOPNOTSUPP, "RSS QP: a 20-byte key is EOPNOTSUPP");
	qa.rx_hash_conf.rx_hash_key_len = VRNIC_RSS_KEY_LEN;
	qa.rx_hash_conf.rx_hash_fields_mask |= IBV_RX_HASH_INNER;
	CHECK(!vrnic_create_qp_ex(&ctx->ibvctx.context, &qa) &&
	      errno == EOPNOTSUPP, "RSS QP: inner fields are EOPNOTSUPP");
	qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4;
	qa.cap.max_recv_wr = 1;
	CHECK(!vrnic_create_qp_ex(&ctx->ibvctx.context, &qa) &&
	      errno == EINVAL && rss_cmd_calls == i,
	      "RSS QP: receive capacity is EINVAL, the kernel not asked");

	i = wq->wq_num;
	CHECK(vrnic_destroy_wq(wq) == 0 && ctx->qp_table[i] == NULL,
	      "destroy_wq: gone from the QP table");
	vrnic_destroy_cq(ibvcq);
}

/* A device CQE for an XRC SRQ's receive: qpn the target QP, src_qp the srqn. */
static void dev_xrc_cqe(struct vrnic_cq *cq, uint32_t tgt_qpn, uint32_t srqn,
			uint64_t slot, uint32_t byte_len)
{
	struct vrnic_cqe *cqe = ring_cqe(cq, cq_pi[cq->cqn]);

	dev_cqe(cq, tgt_qpn, slot, VRNIC_CQE_OP_RECV, 0, byte_len);
	cqe->src_qp = htole32(srqn);
	cqe->flags = VRNIC_CQE_FLAG_XRC;
}

/*
 * XRC: SRQs made by create_srq_ex (XRC found by srqn, tag matching
 * refused), XRC_SEND initiators (no RQ, xrc_srqn in every WQE from both
 * post APIs), XRC_RECV targets (no rings, no posts) and the completions
 * of XRC receives (the SRQ's slot, qp_num the target, src_qp 0).
 */
static void test_xrc(void)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			    IBV_WC_EX_WITH_BYTE_LEN,
	};
	struct verbs_xrcd xrcd = {
		.xrcd.context = &ctx->ibvctx.context,
		.comp_mask = VERBS_XRCD_HANDLE,
		.handle = 3,
	};
	struct ibv_srq_init_attr_ex sattr = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = &pd_obj,
		.xrcd = &xrcd.xrcd,
	};
	struct ibv_srq_init_attr_ex battr = {
		.attr = { .max_wr = 2, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC,
		.pd = &pd_obj,
	};
	struct ibv_qp_init_attr_ex tattr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = &xrcd.xrcd,
		/* perftest asks a target for receive capacities: ignored */
		.cap = { .max_recv_wr = 16, .max_recv_sge = 1 },
	};
	struct ibv_qp_cap cap = { .max_send_wr = 32, .max_send_sge = 1 };
	struct ibv_sge sge = { .addr = 0x3000, .length = 64, .lkey = 0x31 };
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_qp_attr rst = { .qp_state = IBV_QPS_RESET };
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_srq *ibvsrq, *basic;
	struct vrnic_send_wqe *w;
	struct vrnic_srq *srq;
	struct vrnic_qp *ini, *rc;
	struct ibv_qp_ex *qpx;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *ibvcq;
	struct vrnic_cq *cq;
	struct ibv_qp *tgt;
	struct ibv_wc wc[4];
	uint32_t num, ci;
	int i, n, destroyed;

	cqx = vrnic_create_cq_ex(&ctx->ibvctx.context, &cattr);
	ibvcq = ibv_cq_ex_to_cq(cqx);
	cq = to_vrnic_cq(ibvcq);
	sattr.cq = ibvcq;
	db_read(VRNIC_DB_SQ);	/* what earlier cases left */
	db_read(VRNIC_DB_SRQ);

	/* SRQs: tag matching refused, XRC needs its domain and CQ. */
	sattr.srq_type = IBV_SRQT_TM;
	CHECK(!vrnic_create_srq_ex(&ctx->ibvctx.context, &sattr) &&
	      errno == EOPNOTSUPP, "create_srq_ex: IBV_SRQT_TM -> EOPNOTSUPP");
	sattr.srq_type = IBV_SRQT_XRC;
	sattr.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
	CHECK(!vrnic_create_srq_ex(&ctx->ibvctx.context, &sattr) &&
	      errno == EOPNOTSUPP,
	      "create_srq_ex: IBV_SRQ_INIT_ATTR_TM -> EOPNOTSUPP");
	sattr.comp_mask &= ~(IBV_SRQ_INIT_ATTR_TM | IBV_SRQ_INIT_ATTR_CQ);
	CHECK(!vrnic_create_srq_ex(&ctx->ibvctx.context, &sattr) &&
	      errno == EINVAL, "create_srq_ex: XRC without a CQ -> EINVAL");
	sattr.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;

	destroyed = srqs_destroyed;
	kernel_srq_num_skew = 1;
	CHECK(!vrnic_create_srq_ex(&ctx->ibvctx.context, &sattr) &&
	      errno == EPROTO && srqs_destroyed == destroyed + 1 &&
	      sattr.attr.max_wr == 4,
	      "XRC SRQ whose srq_num is not its srqn -> EPROTO, destroyed");
	kernel_srq_num_skew = 0;

	ibvsrq = vrnic_create_srq_ex(&ctx->ibvctx.context, &sattr);
	CHECK(ibvsrq != NULL, "create_srq_ex: XRC SRQ");
	if (!ibvsrq)
		return;
	srq = to_vrnic_srq(ibvsrq);
	CHECK(last_srq_cmd.log_depth == 2 && last_srq_cmd.wqe_shift == 5 &&
	      last_srq_cmd.buf_addr == (uintptr_t)srq->buf.addr &&
	      sattr.attr.max_wr == 4 && srq->xrc_cq == cq &&
	      ctx->srq_table[srq->srqn] == srq && ibvsrq->pd == &pd_obj,
	      "XRC SRQ: the basic SRQ's ring, found by srqn %u", srq->srqn);
	CHECK(vrnic_get_srq_num(ibvsrq, &num) == 0 && num == srq->srqn,
	      "get_srq_num: the srqn");
	basic = vrnic_create_srq_ex(&ctx->ibvctx.context, &battr);
	CHECK(basic && last_srq_cmd.log_depth == 1 && battr.attr.max_wr == 2 &&
	      !to_vrnic_srq(basic)->xrc_cq &&
	      !ctx->srq_table[to_vrnic_srq(basic)->srqn],
	      "create_srq_ex: a basic SRQ, not in the XRC SRQ table");

	/* An XRC initiator: send queue only, RC's operations. */
	cap.max_recv_wr = 1;
	CHECK(!make_qp(IBV_QPT_XRC_SEND, ibvcq, NULL, NULL, cap, 0) &&
	      errno == EINVAL, "XRC_SEND with max_recv_wr -> EINVAL");
	cap.max_recv_wr = 0;
	ctx->atomic_write = true;
	CHECK(!make_qp(IBV_QPT_XRC_SEND, ibvcq, NULL, NULL, cap,
		       IBV_QP_EX_WITH_ATOMIC_WRITE) && errno == EOPNOTSUPP,
	      "XRC_SEND with ATOMIC_WRITE send op -> EOPNOTSUPP");
	ini = make_qp(IBV_QPT_XRC_SEND, ibvcq, NULL, NULL, cap,
		      IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
		      IBV_QP_EX_WITH_RDMA_READ |
		      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
	CHECK(ini && last_qp_cmd.rq_log_depth == 0 &&
	      last_qp_cmd.sq_log_depth == 5 && last_qp_cmd.sq_wqe_shift == 7 &&
	      last_qp_cmd.rq_offset == 4096 && last_qp_cmd.buf_len == 4096 &&
	      last_qp_cap.max_recv_wr == 0 && last_qp_cap.max_recv_sge == 0,
	      "XRC_SEND QP: an SQ of 32 x 128B and no RQ");
	if (!ini)
		return;
	qpx = &ini->vqp.qp_ex;
	CHECK(qpx->wr_set_xrc_srqn && qpx->wr_rdma_read && !qpx->wr_set_ud_addr,
	      "XRC_SEND qp_ex: wr_set_xrc_srqn installed");
	rc = make_qp(IBV_QPT_RC, ibvcq, ibvcq, NULL, cap, IBV_QP_EX_WITH_SEND);
	CHECK(rc && !rc->vqp.qp_ex.wr_set_xrc_srqn,
	      "an RC QP gets no wr_set_xrc_srqn");
	vrnic_destroy_qp(&rc->vqp.qp);

	ini->vqp.qp.state = IBV_QPS_RTS;
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 0x90; wr[0].opcode = IBV_WR_SEND; wr[0].sg_list = &sge;
	wr[0].num_sge = 1; wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].qp_type.xrc.remote_srqn = 0x1234;
	wr[0].next = &wr[1];
	wr[1].wr_id = 0x91; wr[1].opcode = IBV_WR_RDMA_READ;
	wr[1].sg_list = &sge; wr[1].num_sge = 1; wr[1].wr.rdma.rkey = 0x55;
	wr[1].wr.rdma.remote_addr = 0x8000;
	wr[1].qp_type.xrc.remote_srqn = 0xabcdef;
	CHECK(vrnic_post_send(&ini->vqp.qp, wr, &bad) == 0 &&
	      db_read(VRNIC_DB_SQ) == db_val(ini->qpn, 2),
	      "XRC_SEND post_send: SEND and RDMA READ, one doorbell");
	w = sq_wqe(ini, 0);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND &&
	      le32toh(w->xrc_srqn) == 0x1234 && w->num_sge == 1 &&
	      le64toh(((struct vrnic_sge *)(w + 1))->addr) == 0x3000,
	      "XRC SEND WQE: xrc_srqn 0x1234, the SGE at 64");
	w = sq_wqe(ini, 1);
	CHECK(w->opcode == VRNIC_WQE_OP_RDMA_READ &&
	      le32toh(w->xrc_srqn) == 0xabcdef && le32toh(w->rkey) == 0x55,
	      "XRC RDMA READ WQE: xrc_srqn 0xabcdef");
	wr[0].next = NULL;
	wr[0].qp_type.xrc.remote_srqn = 0x1000000;
	CHECK(vrnic_post_send(&ini->vqp.qp, wr, &bad) == EINVAL && bad == wr &&
	      !db_read(VRNIC_DB_SQ),
	      "remote_srqn beyond 24 bits -> EINVAL, nothing posted");
	rwr[0] = (struct ibv_recv_wr){ .sg_list = &sge, .num_sge = 1 };
	CHECK(vrnic_post_recv(&ini->vqp.qp, rwr, &rbad) == EINVAL &&
	      rbad == rwr && !db_read(VRNIC_DB_RQ),
	      "post_recv on an XRC_SEND QP -> EINVAL");

	ibv_wr_start(qpx);
	qpx->wr_id = 0x92;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 0x777);
	ibv_wr_set_sge(qpx, 0x31, 0x3000, 64);
	qpx->wr_id = 0x93;
	ibv_wr_rdma_write(qpx, 0x66, 0x9000);
	ibv_wr_set_xrc_srqn(qpx, 0x778);
	ibv_wr_set_sge(qpx, 0x31, 0x3000, 64);
	CHECK(ibv_wr_complete(qpx) == 0 &&
	      db_read(VRNIC_DB_SQ) == db_val(ini->qpn, 4),
	      "XRC wr session of 2 WRs, one doorbell");
	w = sq_wqe(ini, 2);
	CHECK(w->opcode == VRNIC_WQE_OP_SEND && le32toh(w->xrc_srqn) == 0x777,
	      "wr_send + wr_set_xrc_srqn: xrc_srqn 0x777");
	w = sq_wqe(ini, 3);
	CHECK(w->opcode == VRNIC_WQE_OP_RDMA_WRITE &&
	      le32toh(w->xrc_srqn) == 0x778 && le32toh(w->rkey) == 0x66,
	      "wr_rdma_write + wr_set_xrc_srqn: xrc_srqn 0x778");
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 0x1000000);
	CHECK(ibv_wr_complete(qpx) == EINVAL && !db_read(VRNIC_DB_SQ) &&
	      ini->sq.pi == 4, "wr_set_xrc_srqn beyond 24 bits: session fails");

	/* A target: no udata, no rings, no posts, not in the QP table. */
	tgt = vrnic_create_qp_ex(&ctx->ibvctx.context, &tattr);
	CHECK(tgt && tgt->qp_type == IBV_QPT_XRC_RECV &&
	      last_qp_cmd_size == sizeof(struct ibv_create_qp) &&
	      !ctx->qp_table[tgt->qp_num],
	      "XRC_RECV QP: no udata, not in the QP table");
	if (!tgt)
		return;
	tgt->state = IBV_QPS_RTS;
	wr[0].qp_type.xrc.remote_srqn = 1;
	CHECK(vrnic_post_send(tgt, wr, &bad) == EINVAL && bad == wr &&
	      vrnic_post_recv(tgt, rwr, &rbad) == EINVAL && rbad == rwr &&
	      !db_read(VRNIC_DB_SQ) && !db_read(VRNIC_DB_RQ),
	      "post_send and post_recv on an XRC_RECV QP -> EINVAL");
	tattr.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			  IBV_QP_INIT_ATTR_XRCD;
	tattr.send_ops_flags = IBV_QP_EX_WITH_SEND;
	CHECK(!vrnic_create_qp_ex(&ctx->ibvctx.context, &tattr) &&
	      errno == EOPNOTSUPP, "XRC_RECV QP with send ops -> EOPNOTSUPP");

	/*
	 * XRC receives: slots 1 then 0 of the SRQ, by srqn; qp_num the
	 * target (here one of another process), src_qp 0.
	 */
	for (i = 0; i < 2; i++)
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 0xe0 + i,
					       .sg_list = &sge, .num_sge = 1,
					       .next = i ? NULL : &rwr[1] };
	CHECK(vrnic_post_srq_recv(ibvsrq, rwr, &rbad) == 0 &&
	      db_read(VRNIC_DB_SRQ) == db_val(srq->srqn, 2),
	      "post_srq_recv on the XRC SRQ");
	dev_xrc_cqe(cq, 0x4321, srq->srqn, 1, 40);
	dev_xrc_cqe(cq, tgt->qp_num, srq->srqn, 0, 41);
	n = vrnic_poll_cq(ibvcq, 1, wc);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 0xe1 &&
	      wc[0].opcode == IBV_WC_RECV && wc[0].qp_num == 0x4321 &&
	      !wc[0].src_qp && wc[0].byte_len == 40 && srq->nfree == 3,
	      "XRC receive: the SRQ's slot 1, qp_num the target, src_qp 0");
	CHECK(ibv_start_poll(cqx, &pattr) == 0 && cqx->wr_id == 0xe0 &&
	      ibv_wc_read_qp_num(cqx) == tgt->qp_num &&
	      !ibv_wc_read_src_qp(cqx) && ibv_wc_read_byte_len(cqx) == 41 &&
	      srq->nfree == 4,
	      "XRC receive, extended poll: qp_num the target, src_qp 0");
	ibv_end_poll(cqx);

	/* An XRC CQE naming no XRC SRQ of ours: consumed and dropped. */
	ci = cq->ci;
	dev_xrc_cqe(cq, 0x4321, 999, 0, 40);
	dev_xrc_cqe(cq, 0x4321, to_vrnic_srq(basic)->srqn, 0, 40);
	n = vrnic_poll_cq(ibvcq, 4, wc);
	CHECK(n == 0 && cq->ci == ci + 2,
	      "XRC CQE naming an unknown or a basic SRQ: consumed, dropped");

	/*
	 * Cleaning: the target's going keeps the SRQ's CQEs, resetting the
	 * initiator drops only its own; destroying the SRQ drops its CQEs.
	 */
	vrnic_post_srq_recv(ibvsrq, rwr, &rbad);
	dev_xrc_cqe(cq, tgt->qp_num, srq->srqn, 0, 50);
	dev_cqe(cq, ini->qpn, 0, VRNIC_CQE_OP_SEND, 0, 64);
	dev_xrc_cqe(cq, ini->qpn, srq->srqn, 1, 51);
	CHECK(vrnic_modify_qp(tgt, &rst, IBV_QP_STATE) == 0 &&
	      vrnic_destroy_qp(tgt) == 0, "XRC_RECV QP: to RESET, destroyed");
	CHECK(vrnic_modify_qp(&ini->vqp.qp, &rst, IBV_QP_STATE) == 0 &&
	      ini->sq.pi == 0 && cq_pi[cq->cqn] - cq->ci == 2,
	      "XRC_SEND QP to RESET drops its send CQE, not the XRC ones");
	vrnic_post_srq_recv(ibvsrq, rwr, &rbad);
	dev_cqe(cq, 0x4444, 0, VRNIC_CQE_OP_SEND, 0, 64);
	num = srq->srqn;
	CHECK(vrnic_destroy_srq(ibvsrq) == 0 && !ctx->srq_table[num],
	      "destroy_srq: gone from the XRC SRQ table");
	CHECK(cq_pi[cq->cqn] - cq->ci == 1 &&
	      le32toh(ring_cqe(cq, cq->ci)->qpn) == 0x4444,
	      "destroy_srq drops the XRC SRQ's CQEs, keeps the others");
	n = vrnic_poll_cq(ibvcq, 4, wc);

	vrnic_destroy_qp(&ini->vqp.qp);
	vrnic_destroy_srq(basic);
	vrnic_destroy_cq(ibvcq);
}

/* The device side of RESIZE_CQ: move unconsumed CQEs to the new ring. */
void resize_copy(struct vrnic_cq *cq, void *new_ring, uint32_t new_log_depth)
{
	uint32_t ci = le32toh(cq->dbrec->ci), pi = cq_pi[cq->cqn], n = 0;
	struct vrnic_cqe *dst = new_ring;

	for (; ci != pi; ci++, n++) {
		dst[n] = *ring_cqe(cq, ci);
		dst[n].info = htole32((le32toh(dst[n].info) & ~1U) | 1);
	}
	cq_pi[cq->cqn] = n;
}

int main(void)
{
	printf("TAP version 13\n");
	setup();
	test_cq_and_rc_post();
	test_wr_api_and_ud();
	test_clean_resize_srq();
	test_raw_packet();
	test_wq_and_rss();
	test_xrc();
	printf("1..%d\n", test_no);
	return test_failed ? 1 : 0;
}
