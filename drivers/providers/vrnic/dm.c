// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic device memory: ibv_alloc_dm() hands out pages of the device's
 * BAR5 RAM, which this process maps and copies to and from directly;
 * ibv_reg_dm_mr() makes them reachable by the device (zero-based MRs).
 *
 * Copies move whole 32-bit words at 4-byte aligned offsets, the access
 * granularity ibv_memcpy_to_dm() documents for device memory: an offset or
 * length that is not a multiple of 4, or a range past the allocation, is
 * refused with EINVAL and nothing is copied.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "verbs.h"

#define VRNIC_DM_ALIGN		4

struct vrnic_dm {
	struct verbs_dm vdm;
	void *va;			/* the mapping: length rounded to pages */
	size_t map_len;
	uint64_t length;
};

static struct vrnic_dm *to_vrnic_dm(struct ibv_dm *ibdm)
{
	return container_of(ibdm, struct vrnic_dm, vdm.dm);
}

static int vrnic_dm_check_range(const struct vrnic_dm *dm, uint64_t offset,
				size_t length)
{
	if ((offset | length) & (VRNIC_DM_ALIGN - 1))
		return EINVAL;
	if (offset > dm->length || length > dm->length - offset)
		return EINVAL;
	return 0;
}

static int vrnic_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			      const void *host_addr, size_t length)
{
	struct vrnic_dm *dm = to_vrnic_dm(ibdm);
	const uint8_t *src = host_addr;
	int err;

	err = vrnic_dm_check_range(dm, dm_offset, length);
	if (err)
		return err;
	for (size_t i = 0; i < length; i += VRNIC_DM_ALIGN) {
		uint32_t w;

		memcpy(&w, src + i, sizeof(w));
		mmio_write32(dm->va + dm_offset + i, w);
	}
	/* The peer may read it right after our next doorbell or message. */
	mmio_flush_writes();
	return 0;
}

static int vrnic_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				uint64_t dm_offset, size_t length)
{
	struct vrnic_dm *dm = to_vrnic_dm(ibdm);
	uint8_t *dst = host_addr;
	int err;

	err = vrnic_dm_check_range(dm, dm_offset, length);
	if (err)
		return err;
	for (size_t i = 0; i < length; i += VRNIC_DM_ALIGN) {
		uint32_t w = mmio_read32(dm->va + dm_offset + i);

		memcpy(dst + i, &w, sizeof(w));
	}
	return 0;
}

struct ibv_dm *vrnic_alloc_dm(struct ibv_context *ibvctx,
			      struct ibv_alloc_dm_attr *attr)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
			       1);
	struct vrnic_dev *dev = to_vrnic_dev(ibvctx->device);
	struct vrnic_dm *dm;
	uint64_t mmap_offset;
	int err;

	if (attr->comp_mask) {
		verbs_err(verbs_get_ctx(ibvctx),
			  "alloc_dm: unsupported comp_mask %#x\n",
			  attr->comp_mask);
		errno = EINVAL;
		return NULL;
	}
	if (!attr->length) {
		errno = EINVAL;
		return NULL;
	}

	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	fill_attr_out_ptr(cmdb, VRNIC_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
			  &mmap_offset);
	err = ibv_cmd_alloc_dm(ibvctx, attr, &dm->vdm, cmdb);
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx),
			    "alloc_dm length %zu failed: %d\n",
			    (size_t)attr->length, err);
		free(dm);
		errno = err;
		return NULL;
	}

	dm->length = attr->length;
	dm->map_len = align(attr->length, dev->pg_sz);
	dm->va = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      ibvctx->cmd_fd, mmap_offset);
	if (dm->va == MAP_FAILED) {
		err = errno;
		verbs_err(verbs_get_ctx(ibvctx),
			  "device memory mmap failed: %d\n", err);
		ibv_cmd_free_dm(&dm->vdm);
		free(dm);
		errno = err;
		return NULL;
	}
	dm->vdm.dm.memcpy_to_dm = vrnic_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = vrnic_memcpy_from_dm;
	return &dm->vdm.dm;
}

/*
 * ibv_import_dm(): an allocation of the shared context. The kernel says
 * where alloc_dm put it (the mmap offset) and how long it is; this process
 * maps the same pages, which stay allocated until every mapping is gone.
 */
struct ibv_dm *vrnic_import_dm(struct ibv_context *ibvctx, uint32_t dm_handle)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM, VRNIC_IB_METHOD_DM_QUERY,
			       3);
	struct vrnic_dev *dev = to_vrnic_dev(ibvctx->device);
	uint64_t mmap_offset, length;
	struct vrnic_dm *dm;
	int err;

	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	fill_attr_in_obj(cmdb, VRNIC_IB_ATTR_QUERY_DM_HANDLE, dm_handle);
	fill_attr_out_ptr(cmdb, VRNIC_IB_ATTR_QUERY_DM_RESP_MMAP_OFFSET,
			  &mmap_offset);
	fill_attr_out_ptr(cmdb, VRNIC_IB_ATTR_QUERY_DM_RESP_LENGTH, &length);
	err = execute_ioctl(ibvctx, cmdb);
	if (err) {
		verbs_debug(verbs_get_ctx(ibvctx),
			    "import_dm handle %u failed: %d\n", dm_handle, err);
		goto err_free;
	}
	if (!length || length > SIZE_MAX - dev->pg_sz) {
		err = EPROTO;
		goto err_free;
	}

	dm->length = length;
	dm->map_len = align(length, dev->pg_sz);
	dm->va = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      ibvctx->cmd_fd, mmap_offset);
	if (dm->va == MAP_FAILED) {
		err = errno;
		verbs_err(verbs_get_ctx(ibvctx),
			  "imported device memory mmap failed: %d\n", err);
		goto err_free;
	}
	dm->vdm.dm.context = ibvctx;
	dm->vdm.dm.memcpy_to_dm = vrnic_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = vrnic_memcpy_from_dm;
	dm->vdm.dm.comp_mask = IBV_DM_MASK_HANDLE;
	dm->vdm.handle = dm->vdm.dm.handle = dm_handle;
	return &dm->vdm.dm;

err_free:
	free(dm);
	errno = err;
	return NULL;
}

/* The allocation stays; this process's mapping of it goes. */
void vrnic_unimport_dm(struct ibv_dm *ibdm)
{
	struct vrnic_dm *dm = to_vrnic_dm(ibdm);

	munmap(dm->va, dm->map_len);
	free(dm);
}

int vrnic_free_dm(struct ibv_dm *ibdm)
{
	struct vrnic_dm *dm = to_vrnic_dm(ibdm);
	int err;

	/* An MR still on it keeps it: EBUSY from the kernel, nothing freed. */
	err = ibv_cmd_free_dm(&dm->vdm);
	if (err)
		return err;
	/* The kernel returns the pages once this last mapping is gone. */
	munmap(dm->va, dm->map_len);
	free(dm);
	return 0;
}

struct ibv_mr *vrnic_reg_dm_mr(struct ibv_pd *ibvpd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access)
{
	struct vrnic_dm *dm = to_vrnic_dm(ibdm);
	struct verbs_mr *vmr;
	int err;

	/* The device addresses device memory from 0 (IBV_ACCESS_ZERO_BASED). */
	if (!(access & IBV_ACCESS_ZERO_BASED)) {
		errno = EINVAL;
		return NULL;
	}
	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_reg_dm_mr(ibvpd, &dm->vdm, dm_offset, length, access, vmr,
				NULL);
	if (err) {
		verbs_debug(verbs_get_ctx(ibvpd->context),
			    "reg_dm_mr offset %llu length %zu failed: %d\n",
			    (unsigned long long)dm_offset, length, err);
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}
