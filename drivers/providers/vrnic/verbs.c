// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic verbs: device and port queries, PD, MR, AH and ring buffers.
 *
 * Every op that returns int returns 0 or a positive errno, as libibverbs
 * expects from providers; the ibv_cmd_* helpers already follow that rule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "verbs.h"
#include "vrnic.h"

/*
 * The kernel passes the device's fw_version through as ib_device_attr.fw_ver;
 * printed as vrnic.ko's get_dev_fw_str prints it, so that ibv_devinfo and
 * sysfs agree.
 */
static void vrnic_format_fw_ver(char *buf, size_t len, uint64_t raw)
{
	snprintf(buf, len, "%u.%u.%u",
		 (unsigned int)FIELD_GET(VRNIC_FW_VERSION_MAJOR_MASK, raw),
		 (unsigned int)FIELD_GET(VRNIC_FW_VERSION_MINOR_MASK, raw),
		 (unsigned int)FIELD_GET(VRNIC_FW_VERSION_SUB_MINOR_MASK, raw));
}

int vrnic_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	int err;

	err = ibv_cmd_query_device_any(ibvctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err) {
		verbs_err(verbs_get_ctx(ibvctx),
			  "ibv_cmd_query_device_any failed: %d\n", err);
		return err;
	}

	vrnic_format_fw_ver(attr->orig_attr.fw_ver,
			    sizeof(attr->orig_attr.fw_ver), resp.base.fw_ver);
	/* The kernel reports the RSS limits; what the hash takes is ours. */
	if (attr_size >= offsetofend(struct ibv_device_attr_ex, rss_caps) &&
	    attr->rss_caps.supported_qpts) {
		attr->rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		attr->rss_caps.rx_hash_fields_mask = VRNIC_RSS_F_ALL;
	}
	return 0;
}

/* Cache the limits the data path checks work requests against. */
int vrnic_query_device_ctx(struct vrnic_context *ctx)
{
	struct ibv_device_attr_ex attr;
	int err;

	err = vrnic_query_device_ex(&ctx->ibvctx.context, NULL, &attr,
				    sizeof(attr));
	if (err)
		return err;

	ctx->max_qp_wr = attr.orig_attr.max_qp_wr;
	ctx->max_sge = attr.orig_attr.max_sge;
	ctx->max_cqe = attr.orig_attr.max_cqe;
	ctx->max_srq_wr = attr.orig_attr.max_srq_wr;
	ctx->max_srq_sge = attr.orig_attr.max_srq_sge;
	ctx->atomic_write = attr.device_cap_flags_ex &
			    IB_UVERBS_DEVICE_ATOMIC_WRITE;
	verbs_debug(&ctx->ibvctx, "max_qp_wr %u max_sge %u max_cqe %u\n",
		    ctx->max_qp_wr, ctx->max_sge, ctx->max_cqe);
	return 0;
}

/*
 * port_attr is the application's struct, sized by the libibverbs that loaded
 * us (44's ibv_port_attr ends before 56's active_speed_ex), so it is written
 * only by libibverbs' own ibv_cmd_query_port and never touched here.
 */
int vrnic_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *port_attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibvctx, port, port_attr, &cmd, sizeof(cmd));
}

struct ibv_pd *vrnic_alloc_pd(struct ibv_context *ibvctx)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct ibv_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_alloc_pd(ibvctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx), "alloc_pd failed: %d\n",
			    err);
		free(pd);
		errno = err;
		return NULL;
	}
	return pd;
}

/*
 * ibv_import_pd(): a PD of the shared context (another process created it,
 * see vrnic_import_context). The kernel resolves the handle, so a stale or
 * foreign one fails here rather than at first use; nothing else is kept.
 */
struct ibv_pd *vrnic_import_pd(struct ibv_context *ibvctx, uint32_t pd_handle)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_PD, VRNIC_IB_METHOD_PD_QUERY,
			       2);
	struct ibv_pd *pd;
	uint32_t pdn;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	fill_attr_in_obj(cmdb, VRNIC_IB_ATTR_QUERY_PD_HANDLE, pd_handle);
	fill_attr_out_ptr(cmdb, VRNIC_IB_ATTR_QUERY_PD_RESP_PDN, &pdn);
	err = execute_ioctl(ibvctx, cmdb);
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx),
			    "import_pd handle %u failed: %d\n", pd_handle, err);
		free(pd);
		errno = err;
		return NULL;
	}
	verbs_debug(verbs_get_ctx(ibvctx), "imported pd handle %u: pdn %u\n",
		    pd_handle, pdn);
	pd->context = ibvctx;
	pd->handle = pd_handle;
	return pd;
}

/* The PD stays; only this process's view of it goes. */
void vrnic_unimport_pd(struct ibv_pd *pd)
{
	free(pd);
}

/* ibv_import_mr(): keys and length from the core's QUERY_MR, addr NULL. */
struct ibv_mr *vrnic_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "import_mr handle %u failed: %d\n", mr_handle, err);
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

void vrnic_unimport_mr(struct ibv_mr *mr)
{
	free(verbs_get_mr(mr));
}

/* The parent domain ibvpd is, or NULL. Called with qp_table_mutex held. */
static struct vrnic_parent_domain *
vrnic_find_parent_domain(struct vrnic_context *ctx, struct ibv_pd *ibvpd)
{
	struct vrnic_parent_domain *pdom;

	for (pdom = ctx->pdoms; pdom; pdom = pdom->next)
		if (&pdom->ibv_pd == ibvpd)
			return pdom;
	return NULL;
}

/*
 * A parent domain as mlx5_alloc_parent_domain() builds one: no kernel
 * object, only a struct whose ibv_pd copies the protection domain's context
 * and handle, so that reg_mr, rereg_mr, create_ah, create_qp(_ex) and
 * create_srq send the protection domain's handle to the kernel unchanged.
 * Thread domains are refused: the provider offers none (no alloc_td), so
 * no ibv_td can belong to this context.
 */
struct ibv_pd *
vrnic_alloc_parent_domain(struct ibv_context *ibvctx,
			  struct ibv_parent_domain_init_attr *attr)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	const uint32_t supported = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct vrnic_parent_domain *pdom;
	int err = EINVAL;

	if (ibv_check_alloc_parent_domain(attr)) {
		verbs_err(&ctx->ibvctx,
			  "alloc_parent_domain: no protection domain\n");
		return NULL;
	}

	/* Unknown bits are EINVAL, as mlx5_alloc_parent_domain() answers. */
	if (!check_comp_mask(attr->comp_mask, supported)) {
		verbs_err(&ctx->ibvctx,
			  "alloc_parent_domain: comp_mask %#x has unsupported bits %#x\n",
			  attr->comp_mask, attr->comp_mask & ~supported);
		goto err_out;
	}
	if (attr->td) {
		verbs_err(&ctx->ibvctx,
			  "alloc_parent_domain: thread domains are not supported\n");
		goto err_out;
	}
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    !attr->alloc != !attr->free) {
		verbs_err(&ctx->ibvctx,
			  "alloc_parent_domain: alloc and free must be given together\n");
		goto err_out;
	}
	if (attr->pd->context != ibvctx) {
		verbs_err(&ctx->ibvctx,
			  "alloc_parent_domain: the PD belongs to another context\n");
		goto err_out;
	}

	pdom = calloc(1, sizeof(*pdom));
	if (!pdom) {
		err = ENOMEM;
		goto err_out;
	}

	pdom->pd = attr->pd;
	ibv_initialize_parent_domain(&pdom->ibv_pd, attr->pd);
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pdom->alloc = attr->alloc;
		pdom->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pdom->pd_context = attr->pd_context;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (vrnic_find_parent_domain(ctx, attr->pd)) {
		pthread_mutex_unlock(&ctx->qp_table_mutex);
		verbs_err(&ctx->ibvctx,
			  "alloc_parent_domain: the PD is itself a parent domain\n");
		goto err_free_pdom;
	}
	pdom->next = ctx->pdoms;
	ctx->pdoms = pdom;
	pthread_mutex_unlock(&ctx->qp_table_mutex);

	verbs_debug(&ctx->ibvctx,
		    "parent domain on PD handle %u, %s allocator\n",
		    attr->pd->handle, pdom->alloc ? "own" : "default");
	return &pdom->ibv_pd;

err_free_pdom:
	free(pdom);
err_out:
	errno = err;
	return NULL;
}

/*
 * For a CQ, QP or SRQ being created on ibvpd: the parent domain ibvpd is,
 * with a reference taken, or NULL when ibvpd is a plain protection domain.
 */
struct vrnic_parent_domain *vrnic_parent_domain_get(struct vrnic_context *ctx,
						    struct ibv_pd *ibvpd)
{
	struct vrnic_parent_domain *pdom;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	pdom = vrnic_find_parent_domain(ctx, ibvpd);
	if (pdom)
		pdom->refcount++;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return pdom;
}

void vrnic_parent_domain_put(struct vrnic_context *ctx,
			     struct vrnic_parent_domain *pdom)
{
	if (!pdom)
		return;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	pdom->refcount--;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
}

/*
 * A parent domain is freed here (it has no kernel object) once no CQ, QP or
 * SRQ uses it; a protection domain goes to the kernel once no parent domain
 * wraps it. Both refusals are EBUSY, as in mlx5's _mlx5_free_pd().
 */
int vrnic_dealloc_pd(struct ibv_pd *pd)
{
	struct vrnic_context *ctx = to_vrnic_context(pd->context);
	struct vrnic_parent_domain **pp, *pdom;
	unsigned int wrapped = 0;
	uint32_t users;
	int err;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	for (pp = &ctx->pdoms; *pp; pp = &(*pp)->next) {
		pdom = *pp;
		if (&pdom->ibv_pd == pd) {
			users = pdom->refcount;
			if (users) {
				pthread_mutex_unlock(&ctx->qp_table_mutex);
				verbs_err(&ctx->ibvctx,
					  "dealloc_pd: parent domain still used by %u CQs/QPs/SRQs\n",
					  users);
				return EBUSY;
			}
			*pp = pdom->next;
			pthread_mutex_unlock(&ctx->qp_table_mutex);
			free(pdom);
			return 0;
		}
		if (pdom->pd == pd)
			wrapped++;
	}
	pthread_mutex_unlock(&ctx->qp_table_mutex);

	if (wrapped) {
		verbs_err(&ctx->ibvctx,
			  "dealloc_pd: PD handle %u still has %u parent domains\n",
			  pd->handle, wrapped);
		return EBUSY;
	}

	err = ibv_cmd_dealloc_pd(pd);
	if (err)
		return err;

	free(pd);
	return 0;
}

/*
 * pd may be a parent domain: its handle is the protection domain's, so the
 * kernel registers the MR in the protection domain (ibv_mr.pd stays the
 * parent domain the caller passed). The same holds for rereg_mr and
 * create_ah.
 */
struct ibv_mr *vrnic_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "reg_mr len %zu access %#x failed: %d\n", len,
			    access, err);
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_advise_mr on ODP MRs (IBV_ACCESS_ON_DEMAND): the kernel maps the
 * pages before it returns (Documentation/driver-memory.rst, "On-demand
 * paging").
 */
int vrnic_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge);
}

/* An MR over [offset, offset + len) of dma-buf fd, at hca_va. */
struct ibv_mr *vrnic_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t len, uint64_t hca_va, int fd,
				   int access)
{
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_reg_dmabuf_mr(pd, offset, len, hca_va, fd, access, vmr,
				    NULL);
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "reg_dmabuf_mr fd %d len %zu access %#x failed: %d\n",
			    fd, len, access, err);
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * The device re-registers in place (REREG_MR keeps the MR index; the key
 * byte may change), so the lkey/rkey the kernel answers with replace ours:
 * ibv_cmd_rereg_mr copies them into vmr->ibv_mr.
 */
int vrnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t len, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};

	return ibv_cmd_rereg_mr(vmr, flags, addr, len, (uintptr_t)addr, access,
				pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
}

int vrnic_dereg_mr(struct verbs_mr *vmr)
{
	int err;

	err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;

	free(vmr);
	return 0;
}

/*
 * An AH is a software address vector (vrnic_hw_defs.h: not a device
 * object). The kernel creates its own copy (ib_cm needs one in atomic
 * context) and answers with the destination MAC it resolved; we keep the
 * vrnic_av that post_send copies into every UD WQE.
 */
struct ibv_ah *vrnic_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct vrnic_ibv_create_ah_resp resp = {};
	struct vrnic_ah *ah;
	int err;

	/* RoCE has no LIDs: the GRH carries the whole address. */
	if (!attr->is_global) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "create_ah without GRH refused\n");
		errno = EINVAL;
		return NULL;
	}

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "create_ah failed: %d\n", err);
		free(ah);
		errno = err;
		return NULL;
	}

	/* dgid stays in network order, as the wire and the device want it. */
	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	memcpy(ah->av.dmac, resp.dmac, sizeof(ah->av.dmac));
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.flow_label = htole32(attr->grh.flow_label & 0xfffff);
	ah->av.traffic_class = attr->grh.traffic_class;
	return &ah->ibv_ah;
}

int vrnic_destroy_ah(struct ibv_ah *ibvah)
{
	int err;

	err = ibv_cmd_destroy_ah(ibvah);
	if (err)
		return err;

	free(to_vrnic_ah(ibvah));
	return 0;
}

/*
 * Queue rings live in our own memory (uapi/rdma/vrnic-abi.h): page-aligned,
 * whole pages, zeroed (so every CQE starts with phase 0 and the device's
 * first pass writes phase 1). The kernel pins any user memory with
 * ib_umem_get(), so the buffer may come from a parent domain's allocator
 * (called with the page size as alignment, as mlx5 asks for its QP
 * buffers), huge pages included; when it answers IBV_ALLOCATOR_USE_DEFAULT
 * the default allocation follows. The default buffer is excluded from
 * fork's copy-on-write (ibv_dontfork_range, as libibverbs does for MRs);
 * an allocator's memory is the application's, and is left alone as mlx5
 * leaves it (MADV_DONTFORK on part of a huge page would fail anyway).
 *
 * vrnic_buf_alloc_custom() answers 0 with buf->addr NULL when the
 * allocator asks for the default allocation.
 */
static int vrnic_buf_alloc_custom(struct vrnic_context *ctx,
				  struct vrnic_buf *buf, size_t len,
				  size_t pg_sz, struct vrnic_parent_domain *pdom,
				  uint64_t res_type)
{
	void *addr;

	buf->addr = NULL;
	addr = pdom->alloc(&pdom->ibv_pd, pdom->pd_context, len, pg_sz,
			   res_type);
	if (addr == IBV_ALLOCATOR_USE_DEFAULT)
		return 0;
	if (!addr) {
		verbs_err(&ctx->ibvctx,
			  "parent domain allocator failed: %zu bytes, resource type %#llx\n",
			  len, (unsigned long long)res_type);
		return ENOMEM;
	}
	if ((uintptr_t)addr & (pg_sz - 1)) {
		verbs_err(&ctx->ibvctx,
			  "parent domain allocator returned %p, not aligned to %zu bytes (resource type %#llx)\n",
			  addr, pg_sz, (unsigned long long)res_type);
		pdom->free(&pdom->ibv_pd, pdom->pd_context, addr, res_type);
		return EINVAL;
	}

	/* Its contents are whatever the allocator left there. */
	memset(addr, 0, len);
	buf->addr = addr;
	buf->len = len;
	buf->pdom = pdom;
	buf->res_type = res_type;
	return 0;
}

int vrnic_buf_alloc(struct vrnic_context *ctx, struct vrnic_buf *buf,
		    size_t len, struct vrnic_parent_domain *pdom,
		    uint64_t res_type)
{
	size_t pg_sz = to_vrnic_dev(ctx->ibvctx.context.device)->pg_sz;
	void *addr;
	int err;

	len = align(len, pg_sz);
	if (pdom && pdom->alloc) {
		err = vrnic_buf_alloc_custom(ctx, buf, len, pg_sz, pdom,
					     res_type);
		if (err || buf->addr)
			return err;
		verbs_debug(&ctx->ibvctx,
			    "parent domain allocator: default for resource type %#llx\n",
			    (unsigned long long)res_type);
	}

	err = posix_memalign(&addr, pg_sz, len);
	if (err)
		return err;
	memset(addr, 0, len);

	err = ibv_dontfork_range(addr, len);
	if (err) {
		free(addr);
		return err;
	}

	buf->addr = addr;
	buf->len = len;
	buf->pdom = NULL;
	buf->res_type = 0;
	return 0;
}

void vrnic_buf_free(struct vrnic_buf *buf)
{
	struct vrnic_parent_domain *pdom = buf->pdom;

	if (!buf->addr)
		return;
	if (pdom) {
		pdom->free(&pdom->ibv_pd, pdom->pd_context, buf->addr,
			   buf->res_type);
	} else {
		ibv_dofork_range(buf->addr, buf->len);
		free(buf->addr);
	}
	buf->addr = NULL;
	buf->len = 0;
	buf->pdom = NULL;
}

