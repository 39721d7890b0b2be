/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libvrnic: rdma-core provider for the vrnic emulated RoCEv2 RNIC.
 */
#ifndef __VRNIC_H__
#define __VRNIC_H__

#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>

/*
 * The one hardware interface definition, shared with vrnic.ko and the QEMU
 * device. Nothing here uses it yet; including it keeps it compiling in the
 * rdma-core environment (STYLE.md §4: compile-only test in all three builds).
 */
#include <vrnic_hw_defs.h>

#include "vrnic-abi.h"

struct vrnic_dev {
	struct verbs_device vdev;
	size_t pg_sz;			/* host page size, for ring/doorbell mmaps */
};

struct vrnic_context {
	struct verbs_context ibvctx;
	uint32_t db_page_shift;		/* log2 of this context's doorbell page */
	/* Device limits, cached at alloc_context from QUERY_DEVICE. */
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cqe;
};

static inline struct vrnic_dev *to_vrnic_dev(struct ibv_device *ibvdev)
{
	return container_of(ibvdev, struct vrnic_dev, vdev.device);
}

static inline struct vrnic_context *to_vrnic_context(struct ibv_context *ibvctx)
{
	return container_of(ibvctx, struct vrnic_context, ibvctx.context);
}

#endif /* __VRNIC_H__ */
