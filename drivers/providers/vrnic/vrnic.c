// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic: device matching, registration and user context lifetime.
 *
 * Built out of tree against rdma-core 56.1's private headers and loaded by the
 * host's libibverbs (44, same private ABI IBVERBS_PRIVATE_34): see Makefile.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ccan/minmax.h>
#include <infiniband/driver.h>

#include "verbs.h"
#include "vrnic.h"

/*
 * Doorbell pages are at least 4 KiB (VRNIC_REG_CAP_DB page_shift 12) and the
 * kernel maps them into our address space whole, so anything outside
 * [12, 30] is a kernel bug we refuse instead of mapping later.
 */
#define VRNIC_DB_PAGE_SHIFT_MIN 12
#define VRNIC_DB_PAGE_SHIFT_MAX 30

/*
 * vrnic.ko is out of tree and has no RDMA_DRIVER_* id: it registers with
 * RDMA_DRIVER_UNKNOWN and libibverbs matches us on the PCI IDs through
 * /sys/class/infiniband/<dev>/device/modalias.
 */
static const struct verbs_match_ent vrnic_match_table[] = {
	VERBS_PCI_MATCH(VRNIC_PCI_VENDOR_ID, VRNIC_PCI_DEVICE_ID, NULL),
	{}
};

static void vrnic_free_context(struct ibv_context *ibvctx);

static const struct verbs_context_ops vrnic_ctx_ops = {
	.advise_mr = vrnic_advise_mr,
	.alloc_dm = vrnic_alloc_dm,
	.alloc_mw = vrnic_alloc_mw,
	.alloc_parent_domain = vrnic_alloc_parent_domain,
	.alloc_pd = vrnic_alloc_pd,
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = vrnic_bind_mw,
	.close_xrcd = vrnic_close_xrcd,
	.create_ah = vrnic_create_ah,
	.create_cq = vrnic_create_cq,
	.create_cq_ex = vrnic_create_cq_ex,
	.create_flow = vrnic_create_flow,
	.create_qp = vrnic_create_qp,
	.create_qp_ex = vrnic_create_qp_ex,
	.create_rwq_ind_table = vrnic_create_rwq_ind_table,
	.create_srq = vrnic_create_srq,
	.create_srq_ex = vrnic_create_srq_ex,
	.create_wq = vrnic_create_wq,
	.dealloc_mw = vrnic_dealloc_mw,
	.dealloc_pd = vrnic_dealloc_pd,
	.dereg_mr = vrnic_dereg_mr,
	.destroy_ah = vrnic_destroy_ah,
	.destroy_cq = vrnic_destroy_cq,
	.destroy_flow = vrnic_destroy_flow,
	.destroy_qp = vrnic_destroy_qp,
	.destroy_rwq_ind_table = vrnic_destroy_rwq_ind_table,
	.destroy_srq = vrnic_destroy_srq,
	.destroy_wq = vrnic_destroy_wq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = vrnic_free_context,
	.free_dm = vrnic_free_dm,
	.get_srq_num = vrnic_get_srq_num,
	.import_dm = vrnic_import_dm,
	.import_mr = vrnic_import_mr,
	.import_pd = vrnic_import_pd,
	.modify_cq = vrnic_modify_cq,
	.modify_qp = vrnic_modify_qp,
	.modify_srq = vrnic_modify_srq,
	.modify_wq = vrnic_modify_wq,
	.open_qp = vrnic_open_qp,
	.open_xrcd = vrnic_open_xrcd,
	.poll_cq = vrnic_poll_cq,
	.post_recv = vrnic_post_recv,
	.post_send = vrnic_post_send,
	.post_srq_recv = vrnic_post_srq_recv,
	.query_device_ex = vrnic_query_device_ex,
	.query_port = vrnic_query_port,
	.query_qp = vrnic_query_qp,
	.query_rt_values = vrnic_query_rt_values,
	.query_srq = vrnic_query_srq,
	.reg_dm_mr = vrnic_reg_dm_mr,
	.reg_dmabuf_mr = vrnic_reg_dmabuf_mr,
	.reg_mr = vrnic_reg_mr,
	.req_notify_cq = vrnic_req_notify_cq,
	.rereg_mr = vrnic_rereg_mr,
	.resize_cq = vrnic_resize_cq,
	.unimport_dm = vrnic_unimport_dm,
	.unimport_mr = vrnic_unimport_mr,
	.unimport_pd = vrnic_unimport_pd,
};

/*
 * Map this context's doorbell page once. User contexts own BAR2 pages
 * 1 .. n-1; page 0 is the kernel's and never a context's.
 */
static int vrnic_map_db(struct vrnic_context *ctx,
			const struct vrnic_alloc_ucontext_resp *resp)
{
	size_t pg_sz = to_vrnic_dev(ctx->ibvctx.context.device)->pg_sz;
	void *db;

	if (!resp->db_page) {
		verbs_err(&ctx->ibvctx, "kernel gave no doorbell page\n");
		return EPROTO;
	}

	ctx->db_size = max_t(size_t, (size_t)1 << ctx->db_page_shift, pg_sz);
	db = mmap(NULL, ctx->db_size, PROT_WRITE, MAP_SHARED,
		  ctx->ibvctx.context.cmd_fd, resp->db_mmap_key);
	if (db == MAP_FAILED) {
		verbs_err(&ctx->ibvctx, "doorbell page mmap failed: %d\n",
			  errno);
		return errno;
	}

	ctx->db = db;
	ctx->max_inline_data = resp->max_inline_data;
	return 0;
}

static void vrnic_unmap_db(struct vrnic_context *ctx)
{
	if (ctx->db)
		munmap(ctx->db, ctx->db_size);
	ctx->db = NULL;
}

/*
 * Everything a context needs past the kernel's answer to alloc_ucontext
 * (or, for an imported one, QUERY_CONTEXT): the doorbell page, the QP and
 * SRQ tables, the ops and the device's limits. On failure the caller
 * frees ctx.
 */
static int vrnic_context_setup(struct vrnic_context *ctx,
			       const struct vrnic_alloc_ucontext_resp *resp)
{
	int err;

	if (resp->db_page_shift < VRNIC_DB_PAGE_SHIFT_MIN ||
	    resp->db_page_shift > VRNIC_DB_PAGE_SHIFT_MAX) {
		verbs_err(&ctx->ibvctx, "kernel reported db_page_shift %u\n",
			  resp->db_page_shift);
		return EPROTO;
	}
	ctx->db_page_shift = resp->db_page_shift;

	ctx->qp_table = calloc(VRNIC_QP_TABLE_SIZE, sizeof(*ctx->qp_table));
	ctx->srq_table = calloc(VRNIC_SRQ_TABLE_SIZE, sizeof(*ctx->srq_table));
	if (!ctx->qp_table || !ctx->srq_table) {
		free(ctx->srq_table);
		free(ctx->qp_table);
		return ENOMEM;
	}
	pthread_mutex_init(&ctx->qp_table_mutex, NULL);

	err = vrnic_map_db(ctx, resp);
	if (err)
		goto err_free_tables;
	err = vrnic_clock_map(ctx, resp);
	if (err)
		goto err_unmap_db;

	verbs_set_ops(&ctx->ibvctx, &vrnic_ctx_ops);

	err = vrnic_query_device_ctx(ctx);
	if (err)
		goto err_unmap_db;

	verbs_debug(&ctx->ibvctx,
		    "context ready, resp comp_mask %#llx db page %u max_inline %u\n",
		    (unsigned long long)resp->comp_mask, resp->db_page,
		    ctx->max_inline_data);
	return 0;

err_unmap_db:
	vrnic_clock_unmap(ctx);
	vrnic_unmap_db(ctx);
err_free_tables:
	pthread_mutex_destroy(&ctx->qp_table_mutex);
	free(ctx->srq_table);
	free(ctx->qp_table);
	return err;
}

static struct verbs_context *vrnic_alloc_context(struct ibv_device *ibvdev,
						 int cmd_fd,
						 void *private_data)
{
	struct vrnic_get_context_resp resp = {};
	struct vrnic_get_context cmd = {};
	struct vrnic_context *ctx;
	int err;

	/* No optional feature is requested or acknowledged yet. */
	cmd.comp_mask = 0;

	ctx = verbs_init_and_alloc_context(ibvdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	err = ibv_cmd_get_context(&ctx->ibvctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(&ctx->ibvctx, "ibv_cmd_get_context failed: %d\n",
			  err);
		goto err_uninit_ctx;
	}

	err = vrnic_context_setup(ctx, &resp.drv_payload);
	if (err)
		goto err_uninit_ctx;
	return &ctx->ibvctx;

err_uninit_ctx:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	errno = err;
	return NULL;
}

/*
 * ibv_import_device(): cmd_fd is a duplicate of another context's command
 * fd (sent by another process, or dup()ed here). The kernel context
 * already exists, so instead of alloc_ucontext the kernel is asked what it
 * answered then; the doorbell page is mapped once more, and the objects
 * created through this context are the shared context's.
 */
static struct verbs_context *vrnic_import_context(struct ibv_device *ibvdev,
						  int cmd_fd)
{
	DECLARE_COMMAND_BUFFER_LINK(driver_attr, UVERBS_OBJECT_DEVICE,
				    UVERBS_METHOD_QUERY_CONTEXT, 1, NULL);
	struct vrnic_alloc_ucontext_resp resp = {};
	struct vrnic_context *ctx;
	int err;

	ctx = verbs_init_and_alloc_context(ibvdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	fill_attr_out_ptr(driver_attr, VRNIC_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
			  &resp);
	err = ibv_cmd_query_context(&ctx->ibvctx.context, driver_attr);
	if (err) {
		verbs_err(&ctx->ibvctx, "import: query_context failed: %d\n",
			  err);
		goto err_uninit_ctx;
	}

	err = vrnic_context_setup(ctx, &resp);
	if (err)
		goto err_uninit_ctx;
	return &ctx->ibvctx;

err_uninit_ctx:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	errno = err;
	return NULL;
}

static void vrnic_free_context(struct ibv_context *ibvctx)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);

	vrnic_clock_unmap(ctx);
	vrnic_unmap_db(ctx);
	pthread_mutex_destroy(&ctx->qp_table_mutex);
	free(ctx->srq_table);
	free(ctx->qp_table);
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
}

static struct verbs_device *
vrnic_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct vrnic_dev *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	dev->pg_sz = sysconf(_SC_PAGESIZE);

	return &dev->vdev;
}

static void vrnic_uninit_device(struct verbs_device *verbs_device)
{
	struct vrnic_dev *dev = to_vrnic_dev(&verbs_device->device);

	free(dev);
}

static const struct verbs_device_ops vrnic_dev_ops = {
	.name = "vrnic",
	.match_min_abi_version = VRNIC_UVERBS_ABI_VERSION,
	.match_max_abi_version = VRNIC_UVERBS_ABI_VERSION,
	.match_table = vrnic_match_table,
	.alloc_device = vrnic_alloc_device,
	.uninit_device = vrnic_uninit_device,
	.alloc_context = vrnic_alloc_context,
	.import_context = vrnic_import_context,
};
PROVIDER_DRIVER(vrnic, vrnic_dev_ops);
