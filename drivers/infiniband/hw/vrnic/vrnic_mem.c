// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic memory descriptors: how the device translates an MR or a queue ring
 * (vrnic_hw_defs.h, "Memory descriptor").
 *
 * User memory is pinned with ib_umem_get() (a dma-buf with
 * ib_umem_dmabuf_get_pinned()); the page size is the largest the
 * device supports that fits the mapping (ib_umem_find_best_pgsz() with the
 * MR's IOVA), and rdma_umem_for_each_dma_block() yields one DMA address per
 * device page. Up to VRNIC_MEM_INLINE_PAGES addresses go inline in the
 * command; more go into 4 KiB table pages of 512 entries, with one or two
 * directory levels above them for large regions. Kernel rings are coherent
 * allocations described with 4 KiB pages.
 *
 * The tables stay allocated until the object is destroyed: the device walks
 * them, and its translation cache holds what it walked, until then.
 */

#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "vrnic.h"

#define VRNIC_TBL_SIZE		(VRNIC_MEM_TABLE_ENTRIES * sizeof(__le64))
static_assert(VRNIC_TBL_SIZE == SZ_4K);

static u32 vrnic_mem_levels(u64 npages, bool tables)
{
	if (npages <= VRNIC_MEM_INLINE_PAGES && !tables)
		return 0;
	if (npages <= VRNIC_MEM_TABLE_ENTRIES)
		return 1;
	if (npages <= (u64)VRNIC_MEM_TABLE_ENTRIES * VRNIC_MEM_TABLE_ENTRIES)
		return 2;
	return 3;
}

static void vrnic_mem_free_tables(struct vrnic_dev *vdev, struct vrnic_mem *mem)
{
	u32 i;

	for (i = 0; i < mem->ntbl; i++)
		if (mem->tbl[i])
			dma_free_coherent(&vdev->pdev->dev, VRNIC_TBL_SIZE,
					  mem->tbl[i], mem->tbl_dma[i]);
	kvfree(mem->tbl);
	kvfree(mem->tbl_dma);
	mem->tbl = NULL;
	mem->tbl_dma = NULL;
	mem->ntbl = 0;
}

/*
 * Start a descriptor of npages pages of 2^page_shift bytes: allocate the
 * table pages it needs (leaves first, then each directory level) and link
 * the directories. The caller then sets every page with vrnic_mem_set().
 */
static int vrnic_mem_init(struct vrnic_dev *vdev, struct vrnic_mem *mem,
			  u64 iova, u64 length, u32 page_shift, u64 npages,
			  bool tables)
{
	u32 levels = vrnic_mem_levels(npages, tables);
	u64 level_n[VRNIC_MEM_MAX_LEVELS] = {};
	u64 total = 0, n = npages, base = 0;
	u32 l, i;

	if (npages > (u64)VRNIC_MEM_TABLE_ENTRIES * VRNIC_MEM_TABLE_ENTRIES *
		     VRNIC_MEM_TABLE_ENTRIES)
		return -EINVAL;

	memset(&mem->desc, 0, sizeof(mem->desc));
	mem->desc.iova = cpu_to_le64(iova);
	mem->desc.length = cpu_to_le64(length);
	mem->desc.npages = cpu_to_le32(npages);
	mem->desc.flags = cpu_to_le32(FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK,
						 page_shift) |
				      FIELD_PREP(VRNIC_MEM_LEVELS_MASK,
						 levels));
	mem->ntbl = 0;
	if (!levels)
		return 0;

	for (l = 0; l < levels; l++) {
		n = DIV_ROUND_UP(n, VRNIC_MEM_TABLE_ENTRIES);
		level_n[l] = n;
		total += n;
	}
	/* The top level is a single page: its address goes in pages[0]. */
	if (WARN_ON_ONCE(level_n[levels - 1] != 1))
		return -EINVAL;

	mem->tbl = kvcalloc(total, sizeof(*mem->tbl), GFP_KERNEL);
	mem->tbl_dma = kvcalloc(total, sizeof(*mem->tbl_dma), GFP_KERNEL);
	if (!mem->tbl || !mem->tbl_dma)
		goto err_free;
	mem->ntbl = total;

	for (i = 0; i < total; i++) {
		/* Page-aligned and zeroed: entries past npages read 0. */
		mem->tbl[i] = dma_alloc_coherent(&vdev->pdev->dev,
						 VRNIC_TBL_SIZE,
						 &mem->tbl_dma[i], GFP_KERNEL);
		if (!mem->tbl[i])
			goto err_free;
	}

	/* Directory level l + 1 points at the pages of level l. */
	for (l = 0; l + 1 < levels; l++) {
		u64 parent = base + level_n[l];

		for (i = 0; i < level_n[l]; i++) {
			__le64 *dir = mem->tbl[parent +
					       i / VRNIC_MEM_TABLE_ENTRIES];

			dir[i % VRNIC_MEM_TABLE_ENTRIES] =
				cpu_to_le64(mem->tbl_dma[base + i]);
		}
		base = parent;
	}
	mem->desc.pages[0] = cpu_to_le64(mem->tbl_dma[total - 1]);
	return 0;

err_free:
	vrnic_mem_free_tables(vdev, mem);
	return -ENOMEM;
}

static void vrnic_mem_set(struct vrnic_mem *mem, u64 i, u64 addr)
{
	__le64 *leaf;

	if (!mem->ntbl) {
		mem->desc.pages[i] = cpu_to_le64(addr);
		return;
	}
	leaf = mem->tbl[i / VRNIC_MEM_TABLE_ENTRIES];
	leaf[i % VRNIC_MEM_TABLE_ENTRIES] = cpu_to_le64(addr);
}

/**
 * vrnic_mem_from_umem - describe pinned user memory to the device
 * @vdev: the device
 * @mem: the descriptor to fill; takes ownership of @umem on success
 * @umem: pinned memory
 * @iova: the address the device will be given (MR IOVA, ring address)
 *
 * Return: 0, -EOPNOTSUPP if no supported page size fits, -ENOMEM.
 */
int vrnic_mem_from_umem(struct vrnic_dev *vdev, struct vrnic_mem *mem,
			struct ib_umem *umem, u64 iova)
{
	struct ib_block_iter biter;
	unsigned long pgsz;
	u64 npages, i = 0;
	int err;

	pgsz = ib_umem_find_best_pgsz(umem, vdev->pgsz_bitmap, iova);
	if (!pgsz) {
		ibdev_dbg(&vdev->ibdev,
			  "no supported page size for iova %#llx length %zu\n",
			  iova, umem->length);
		return -EOPNOTSUPP;
	}

	npages = ib_umem_num_dma_blocks(umem, pgsz);
	err = vrnic_mem_init(vdev, mem, iova, umem->length, ilog2(pgsz),
			     npages, false);
	if (err)
		return err;

	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		if (WARN_ON_ONCE(i >= npages))
			break;
		vrnic_mem_set(mem, i++, rdma_block_iter_dma_address(&biter));
	}
	mem->umem = umem;
	return 0;
}

/**
 * vrnic_mem_init_odp - describe on-demand memory to the device
 * @vdev: the device
 * @mem: the descriptor to fill (no umem: the caller owns it)
 * @iova: the MR's I/O address
 * @length: its length
 * @page_shift: the pages of its ib_umem_odp
 * @npages: how many of them [iova, iova + length) touches
 *
 * Always tables, never inline pages: the driver fills and clears their
 * leaf entries while the MR lives (vrnic_mem_set_odp()); they start
 * absent (0).
 *
 * Return: 0, -EINVAL if too large for three levels, -ENOMEM.
 */
int vrnic_mem_init_odp(struct vrnic_dev *vdev, struct vrnic_mem *mem,
		       u64 iova, u64 length, u32 page_shift, u64 npages)
{
	mem->umem = NULL;
	return vrnic_mem_init(vdev, mem, iova, length, page_shift, npages,
			      true);
}

/* Leaf entry @i of on-demand memory: a page address and VRNIC_ODP_* bits. */
void vrnic_mem_set_odp(struct vrnic_mem *mem, u64 i, u64 entry)
{
	__le64 *leaf = mem->tbl[i / VRNIC_MEM_TABLE_ENTRIES];

	WRITE_ONCE(leaf[i % VRNIC_MEM_TABLE_ENTRIES], cpu_to_le64(entry));
}

/* Describe a coherent kernel ring with 4 KiB pages (iova = its DMA address). */
int vrnic_mem_from_kbuf(struct vrnic_dev *vdev, struct vrnic_mem *mem,
			const struct vrnic_kbuf *kbuf)
{
	u64 npages = DIV_ROUND_UP(kbuf->size, SZ_4K), i;
	int err;

	err = vrnic_mem_init(vdev, mem, kbuf->dma, kbuf->size, ilog2(SZ_4K),
			     npages, false);
	if (err)
		return err;

	for (i = 0; i < npages; i++)
		vrnic_mem_set(mem, i, kbuf->dma + i * SZ_4K);
	mem->umem = NULL;
	return 0;
}

/* Call only once the device no longer uses the descriptor (destroyed). */
void vrnic_mem_uninit(struct vrnic_dev *vdev, struct vrnic_mem *mem)
{
	vrnic_mem_free_tables(vdev, mem);
	ib_umem_release(mem->umem);
	mem->umem = NULL;
}

int vrnic_kbuf_alloc(struct vrnic_dev *vdev, struct vrnic_kbuf *kbuf,
		     size_t size)
{
	kbuf->size = PAGE_ALIGN(size);
	/* Zeroed: every CQE/EQE starts with phase 0 (old). */
	kbuf->va = dma_alloc_coherent(&vdev->pdev->dev, kbuf->size, &kbuf->dma,
				      GFP_KERNEL);
	return kbuf->va ? 0 : -ENOMEM;
}

void vrnic_kbuf_free(struct vrnic_dev *vdev, struct vrnic_kbuf *kbuf)
{
	if (kbuf->va)
		dma_free_coherent(&vdev->pdev->dev, kbuf->size, kbuf->va,
				  kbuf->dma);
	kbuf->va = NULL;
}
