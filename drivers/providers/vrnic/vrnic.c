// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic: device matching, registration and user context lifetime.
 *
 * Built out of tree against rdma-core 56.1's private headers and loaded by the
 * host's libibverbs (44, same private ABI IBVERBS_PRIVATE_34): see Makefile.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

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
	.free_context = vrnic_free_context,
	.query_device_ex = vrnic_query_device_ex,
	.query_port = vrnic_query_port,
};

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

	if (resp.db_page_shift < VRNIC_DB_PAGE_SHIFT_MIN ||
	    resp.db_page_shift > VRNIC_DB_PAGE_SHIFT_MAX) {
		verbs_err(&ctx->ibvctx, "kernel reported db_page_shift %u\n",
			  resp.db_page_shift);
		err = EPROTO;
		goto err_uninit_ctx;
	}
	ctx->db_page_shift = resp.db_page_shift;

	verbs_set_ops(&ctx->ibvctx, &vrnic_ctx_ops);

	err = vrnic_query_device_ctx(ctx);
	if (err)
		goto err_uninit_ctx;

	verbs_debug(&ctx->ibvctx, "context ready, resp comp_mask %#llx\n",
		    (unsigned long long)resp.comp_mask);
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
};
PROVIDER_DRIVER(vrnic, vrnic_dev_ops);
