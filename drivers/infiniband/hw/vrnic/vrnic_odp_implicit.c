// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic implicit ODP: one MR over the process's whole address space
 * (ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND)). The device walks
 * a sparse tree of VRNIC_ODP_IMPLICIT_LEVELS table levels over 2^48 bytes
 * of 4 KiB pages (VRNIC_MR_FLAG_IMPLICIT), in which a directory entry of 0
 * means nothing is mapped below it; the driver adds table pages as pages
 * are mapped and frees them with the MR.
 *
 * The kernel side is an implicit ib_umem_odp (no pages of its own) and, as
 * pages are faulted in, children: ib_umem_odp_alloc_child() umems of
 * 1 GiB each (VRNIC_ODP_CHILD_SHIFT), with the same MMU interval notifier
 * as explicit ODP MRs, so invalidation works the same way (vrnic_odp.c).
 * Page p of the MR is the page at address p << 12.
 *
 * Table pages and children are only added, under tree_lock, and only
 * freed by deregistration, once the device and the notifiers are done with
 * them. Table pages are allocated before ib_umem_odp_map_dma_and_lock()
 * takes umem_mutex, so that no allocation - and no reclaim that could call
 * the notifier back - happens under it.
 */

#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include <rdma/ib_umem_odp.h>

#include "vrnic.h"

#define VRNIC_ODP_CHILD_SHIFT	30
#define VRNIC_ODP_CHILD_PAGES	(1ULL << (VRNIC_ODP_CHILD_SHIFT - \
					  VRNIC_ODP_IMPLICIT_PAGE_SHIFT))
#define VRNIC_ODP_MR_PAGES	(1ULL << (VRNIC_ODP_IMPLICIT_VA_BITS - \
					  VRNIC_ODP_IMPLICIT_PAGE_SHIFT))
#define VRNIC_TBL_BITS		9	/* 512 entries per 4 KiB table page */

struct vrnic_odp_table {
	__le64 *va;
	dma_addr_t dma;
};

/* The key in mr->tables of the table at @level that holds page's entry. */
static unsigned long vrnic_tbl_key(u32 level, u64 page)
{
	return ((unsigned long)level << 40) |
	       (page >> (VRNIC_TBL_BITS * (level + 1)));
}

static struct vrnic_odp_table *vrnic_tbl_alloc(struct vrnic_dev *vdev)
{
	struct vrnic_odp_table *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	/* Zeroed: every entry absent. */
	t->va = dma_alloc_coherent(&vdev->pdev->dev, SZ_4K, &t->dma,
				   GFP_KERNEL);
	if (!t->va) {
		kfree(t);
		return NULL;
	}
	return t;
}

/*
 * The leaf entry of @page, or NULL when a table on its path is missing.
 * With @vdev (and tree_lock held) the missing tables are added: each one
 * zeroed, then linked into its parent.
 */
static __le64 *vrnic_tree_entry(struct vrnic_dev *vdev, struct vrnic_mr *mr,
				u64 page)
{
	u32 top = VRNIC_ODP_IMPLICIT_LEVELS - 1, l;
	struct vrnic_odp_table *t = xa_load(&mr->tables, vrnic_tbl_key(top, 0));

	for (l = top; l > 0; l--) {
		__le64 *e = t->va + ((page >> (VRNIC_TBL_BITS * l)) &
				     (VRNIC_MEM_TABLE_ENTRIES - 1));
		unsigned long key = vrnic_tbl_key(l - 1, page);
		struct vrnic_odp_table *c = xa_load(&mr->tables, key);

		if (!c) {
			if (!vdev)
				return NULL;
			c = vrnic_tbl_alloc(vdev);
			if (!c)
				return NULL;
			if (xa_err(xa_store(&mr->tables, key, c, GFP_KERNEL))) {
				dma_free_coherent(&vdev->pdev->dev, SZ_4K,
						  c->va, c->dma);
				kfree(c);
				return NULL;
			}
			WRITE_ONCE(*e, cpu_to_le64(c->dma));
		}
		t = c;
	}
	return t->va + (page & (VRNIC_MEM_TABLE_ENTRIES - 1));
}

void vrnic_odp_implicit_set(struct vrnic_mr *mr, u64 page, u64 entry)
{
	__le64 *e = vrnic_tree_entry(NULL, mr, page);

	/* No table: nothing there to clear (a set always prepared one). */
	if (e)
		WRITE_ONCE(*e, cpu_to_le64(entry));
}

/* The tables of pages [page, end), added where missing. */
static int vrnic_tree_prepare(struct vrnic_dev *vdev, struct vrnic_mr *mr,
			      u64 page, u64 end)
{
	int err = 0;

	mutex_lock(&mr->tree_lock);
	for (; page < end && !err;
	     page = round_down(page, VRNIC_MEM_TABLE_ENTRIES) +
		    VRNIC_MEM_TABLE_ENTRIES)
		if (!vrnic_tree_entry(vdev, mr, page))
			err = -ENOMEM;
	mutex_unlock(&mr->tree_lock);
	return err;
}

/* The child umem of 1 GiB region @k, made on first use. */
static struct ib_umem_odp *vrnic_odp_child(struct vrnic_mr *mr, u64 k)
{
	struct ib_umem_odp *child = xa_load(&mr->children, k);
	int err;

	if (child)
		return child;
	mutex_lock(&mr->tree_lock);
	child = xa_load(&mr->children, k);
	if (!child) {
		child = ib_umem_odp_alloc_child(mr->odp,
						k << VRNIC_ODP_CHILD_SHIFT,
						1UL << VRNIC_ODP_CHILD_SHIFT,
						&vrnic_odp_mn_ops);
		if (!IS_ERR(child)) {
			child->private = mr;
			err = xa_err(xa_store(&mr->children, k, child,
					      GFP_KERNEL));
			if (err) {
				ib_umem_odp_release(child);
				child = ERR_PTR(err);
			}
		}
	}
	mutex_unlock(&mr->tree_lock);
	return child;
}

int vrnic_odp_implicit_map(struct vrnic_dev *vdev, struct vrnic_mr *mr,
			   u64 page, u64 npages, bool fault, bool write)
{
	u64 end;
	int err;

	if (page >= VRNIC_ODP_MR_PAGES || !npages)
		return -EFAULT;
	end = page + min(npages, VRNIC_ODP_MR_PAGES - page);
	while (page < end) {
		u64 k = page / VRNIC_ODP_CHILD_PAGES;
		u64 kend = min(end, (k + 1) * VRNIC_ODP_CHILD_PAGES);
		struct ib_umem_odp *child = vrnic_odp_child(mr, k);

		if (IS_ERR(child))
			return PTR_ERR(child);
		err = vrnic_tree_prepare(vdev, mr, page, kend);
		if (!err)
			err = vrnic_odp_map_umem(mr, child,
						 page - k * VRNIC_ODP_CHILD_PAGES,
						 page, kend - page, fault,
						 write);
		if (err)
			return err;
		page = kend;
	}
	return 0;
}

/* The MR's tree and its root umem; the descriptor REG_MR gets. */
int vrnic_odp_implicit_init(struct vrnic_dev *vdev, struct vrnic_mr *mr,
			    int ib_access)
{
	struct vrnic_odp_table *root;
	int err;

	mr->implicit = true;
	mutex_init(&mr->tree_lock);
	xa_init(&mr->children);
	xa_init(&mr->tables);
	mr->odp = ib_umem_odp_alloc_implicit(&vdev->ibdev, ib_access);
	if (IS_ERR(mr->odp)) {
		err = PTR_ERR(mr->odp);
		mr->odp = NULL;
		return err;
	}
	root = vrnic_tbl_alloc(vdev);
	if (!root) {
		err = -ENOMEM;
		goto err_release;
	}
	err = xa_err(xa_store(&mr->tables,
			      vrnic_tbl_key(VRNIC_ODP_IMPLICIT_LEVELS - 1, 0),
			      root, GFP_KERNEL));
	if (err) {
		dma_free_coherent(&vdev->pdev->dev, SZ_4K, root->va, root->dma);
		kfree(root);
		goto err_release;
	}
	memset(&mr->mem.desc, 0, sizeof(mr->mem.desc));
	mr->mem.desc.length = cpu_to_le64(U64_MAX);
	mr->mem.desc.pages[0] = cpu_to_le64(root->dma);
	return 0;

err_release:
	ib_umem_odp_release(mr->odp);
	mr->odp = NULL;
	return err;
}

/*
 * After DEREG_MR and once no invalidation can reach the device any more
 * (odp_live is false): the children (their notifiers go, their pages are
 * unmapped), then the tables. The root umem is the caller's to release.
 */
void vrnic_odp_implicit_free(struct vrnic_dev *vdev, struct vrnic_mr *mr)
{
	struct ib_umem_odp *child;
	struct vrnic_odp_table *t;
	unsigned long i;

	xa_for_each(&mr->children, i, child)
		ib_umem_odp_release(child);
	xa_destroy(&mr->children);
	xa_for_each(&mr->tables, i, t) {
		dma_free_coherent(&vdev->pdev->dev, SZ_4K, t->va, t->dma);
		kfree(t);
	}
	xa_destroy(&mr->tables);
}

/* Serialise with every child's notifier: none still sees odp_live. */
void vrnic_odp_implicit_quiesce(struct vrnic_mr *mr)
{
	struct ib_umem_odp *child;
	unsigned long i;

	xa_for_each(&mr->children, i, child) {
		mutex_lock(&child->umem_mutex);
		mutex_unlock(&child->umem_mutex);
	}
}
