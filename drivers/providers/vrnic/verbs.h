/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrnic verbs: control path (verbs.c), completion queues (cq.c), queue
 * pairs and shared receive queues (qp.c), flow steering (flow.c), receive
 * work queues and RSS (rss.c), XRC domains and target QPs (xrc.c).
 */
#ifndef __VRNIC_VERBS_H__
#define __VRNIC_VERBS_H__

#include <endian.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "vrnic.h"

/* verbs.c */
int vrnic_query_device_ctx(struct vrnic_context *ctx);
int vrnic_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int vrnic_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *port_attr);
struct ibv_pd *vrnic_alloc_pd(struct ibv_context *ibvctx);
struct ibv_pd *
vrnic_alloc_parent_domain(struct ibv_context *ibvctx,
			  struct ibv_parent_domain_init_attr *attr);
int vrnic_dealloc_pd(struct ibv_pd *ibvpd);
int vrnic_clock_map(struct vrnic_context *ctx,
		    const struct vrnic_alloc_ucontext_resp *resp);
void vrnic_clock_unmap(struct vrnic_context *ctx);
int vrnic_query_rt_values(struct ibv_context *ibvctx,
			  struct ibv_values_ex *values);
struct ibv_pd *vrnic_import_pd(struct ibv_context *ibvctx, uint32_t pd_handle);
void vrnic_unimport_pd(struct ibv_pd *pd);
struct ibv_mr *vrnic_import_mr(struct ibv_pd *pd, uint32_t mr_handle);
void vrnic_unimport_mr(struct ibv_mr *mr);
struct vrnic_parent_domain *vrnic_parent_domain_get(struct vrnic_context *ctx,
						    struct ibv_pd *ibvpd);
void vrnic_parent_domain_put(struct vrnic_context *ctx,
			     struct vrnic_parent_domain *pdom);
struct ibv_mr *vrnic_reg_mr(struct ibv_pd *ibvpd, void *addr, size_t len,
			    uint64_t hca_va, int access);
int vrnic_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
struct ibv_mr *vrnic_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t len, uint64_t hca_va, int fd,
				   int access);
int vrnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *ibvpd,
		   void *addr, size_t len, int access);
int vrnic_dereg_mr(struct verbs_mr *vmr);
struct ibv_ah *vrnic_create_ah(struct ibv_pd *ibvpd, struct ibv_ah_attr *attr);
int vrnic_destroy_ah(struct ibv_ah *ibvah);
int vrnic_buf_alloc(struct vrnic_context *ctx, struct vrnic_buf *buf,
		    size_t len, struct vrnic_parent_domain *pdom,
		    uint64_t res_type);
void vrnic_buf_free(struct vrnic_buf *buf);

/* mw.c */
struct ibv_mw *vrnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int vrnic_dealloc_mw(struct ibv_mw *mw);
int vrnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);

/* dm.c */
struct ibv_dm *vrnic_alloc_dm(struct ibv_context *ibvctx,
			      struct ibv_alloc_dm_attr *attr);
struct ibv_dm *vrnic_import_dm(struct ibv_context *ibvctx, uint32_t dm_handle);
void vrnic_unimport_dm(struct ibv_dm *ibdm);
int vrnic_free_dm(struct ibv_dm *ibvdm);
struct ibv_mr *vrnic_reg_dm_mr(struct ibv_pd *ibvpd, struct ibv_dm *ibvdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access);

/* flow.c */
struct ibv_flow *vrnic_create_flow(struct ibv_qp *ibvqp,
				   struct ibv_flow_attr *flow_attr);
int vrnic_destroy_flow(struct ibv_flow *flow);

/* rss.c */
struct ibv_wq *vrnic_create_wq(struct ibv_context *ibvctx,
			       struct ibv_wq_init_attr *attr);
int vrnic_modify_wq(struct ibv_wq *ibvwq, struct ibv_wq_attr *attr);
int vrnic_destroy_wq(struct ibv_wq *ibvwq);
struct ibv_rwq_ind_table *
vrnic_create_rwq_ind_table(struct ibv_context *ibvctx,
			   struct ibv_rwq_ind_table_init_attr *attr);
int vrnic_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl);
struct ibv_qp *vrnic_create_rss_qp(struct ibv_context *ibvctx,
				   struct ibv_qp_init_attr_ex *attr);

/* xrc.c */
struct ibv_xrcd *vrnic_open_xrcd(struct ibv_context *ibvctx,
				 struct ibv_xrcd_init_attr *attr);
int vrnic_close_xrcd(struct ibv_xrcd *ibvxrcd);
struct ibv_qp *vrnic_create_xrc_recv_qp(struct ibv_context *ibvctx,
					struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *vrnic_open_qp(struct ibv_context *ibvctx,
			     struct ibv_qp_open_attr *attr);
int vrnic_get_srq_num(struct ibv_srq *ibvsrq, uint32_t *srq_num);

/* cq.c */
struct ibv_cq *vrnic_create_cq(struct ibv_context *ibvctx, int ncqe,
			       struct ibv_comp_channel *channel, int vec);
struct ibv_cq_ex *vrnic_create_cq_ex(struct ibv_context *ibvctx,
				     struct ibv_cq_init_attr_ex *attr);
int vrnic_destroy_cq(struct ibv_cq *ibvcq);
int vrnic_resize_cq(struct ibv_cq *ibvcq, int ncqe);
int vrnic_modify_cq(struct ibv_cq *ibvcq, struct ibv_modify_cq_attr *attr);
int vrnic_poll_cq(struct ibv_cq *ibvcq, int nwc, struct ibv_wc *wc);
int vrnic_req_notify_cq(struct ibv_cq *ibvcq, int solicited_only);
void vrnic_cq_clean(struct vrnic_cq *cq, uint32_t qpn, struct vrnic_srq *srq);
void vrnic_cq_clean_xrc_srq(struct vrnic_cq *cq, uint32_t srqn);
void vrnic_srq_put_slot(struct vrnic_srq *srq, uint32_t idx);

/* qp.c */
struct ibv_qp *vrnic_create_qp(struct ibv_pd *ibvpd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *vrnic_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr);
int vrnic_modify_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		    int attr_mask);
int vrnic_query_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int vrnic_destroy_qp(struct ibv_qp *ibvqp);
int vrnic_post_send(struct ibv_qp *ibvqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int vrnic_post_recv(struct ibv_qp *ibvqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
int vrnic_qp_table_add(struct vrnic_context *ctx, struct vrnic_qp *qp,
		       const char *verb);
int vrnic_cmd_create_qp(struct ibv_context *ibvctx, struct vrnic_qp *qp,
			struct ibv_qp_init_attr_ex *attr,
			struct ibv_create_qp *cmd, size_t cmd_size,
			struct ib_uverbs_create_qp_resp *resp,
			size_t resp_size);
int vrnic_rq_post(struct vrnic_context *ctx, struct vrnic_qp *qp,
		  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int vrnic_wq_log_depth(uint32_t wr, uint32_t *log_depth);
int vrnic_recv_wqe_shift(struct vrnic_context *ctx, uint32_t max_sge,
			 uint32_t *shift, uint32_t *real_max_sge);
int vrnic_wq_init(struct vrnic_wq *wq, void *ring, uint32_t log_depth,
		  uint32_t shift, uint32_t max_sge);
void vrnic_wq_uninit(struct vrnic_wq *wq);
struct ibv_srq *vrnic_create_srq(struct ibv_pd *ibvpd,
				 struct ibv_srq_init_attr *attr);
struct ibv_srq *vrnic_create_srq_ex(struct ibv_context *ibvctx,
				    struct ibv_srq_init_attr_ex *attr);
int vrnic_modify_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr,
		     int attr_mask);
int vrnic_query_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr);
int vrnic_destroy_srq(struct ibv_srq *ibvsrq);
int vrnic_post_srq_recv(struct ibv_srq *ibvsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

/* log2 of the smallest power of two >= n (n >= 1). */
static inline uint32_t vrnic_order(uint64_t n)
{
	return n <= 1 ? 0 : 64 - __builtin_clzll(n - 1);
}

/*
 * Ring a 32-bit doorbell on this context's page. The caller has already
 * made the ring contents visible with udma_to_device_barrier(); the
 * doorbell itself is a single uncached MMIO store (mmio_write32_le), never
 * a plain pointer store. Only the low 16 bits of the free-running index
 * travel (VRNIC_DB_INDEX_MASK); the device compares modulo 2^16.
 */
static inline void vrnic_ring_db(struct vrnic_context *ctx, uint32_t off,
				 uint32_t qn, uint32_t idx)
{
	uint32_t val = FIELD_PREP(VRNIC_DB_INDEX_MASK, idx & 0xffff) |
		       FIELD_PREP(VRNIC_DB_QN_MASK, qn);

	mmio_write32_le((uint8_t *)ctx->db + off, htole32(val));
}

/* Free-running index shared between producer and poller (see vrnic_wq). */
static inline uint32_t vrnic_load_idx(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void vrnic_store_idx(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#endif /* __VRNIC_VERBS_H__ */
