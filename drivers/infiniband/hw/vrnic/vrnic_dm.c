// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic device memory (ibv_alloc_dm): the RAM behind BAR5, handed out to
 * user contexts in whole pages. An allocation is zeroed before it is
 * handed out (it may hold another process's data), is mapped into the
 * process write-combined through an rdma_user_mmap entry, and returns to
 * the pool only in mmap_free, when no mapping of it can remain. MRs over
 * device memory are registered by vrnic_reg_dm_mr() (vrnic_verbs.c).
 */
#include <linux/bitmap.h>
#include <linux/log2.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/vrnic-abi.h>

#include "vrnic.h"

int vrnic_dm_init(struct vrnic_dev *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	resource_size_t len = pci_resource_len(pdev, VRNIC_BAR_DM);

	if (!(vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_DEVICE_MEM))
		return 0;
	if (!(pci_resource_flags(pdev, VRNIC_BAR_DM) & IORESOURCE_MEM) ||
	    len < PAGE_SIZE || !is_power_of_2(len) || len > SZ_1G) {
		dev_warn(&pdev->dev, "device memory BAR%d unusable (%llu bytes): no ibv_alloc_dm\n",
			 VRNIC_BAR_DM, (u64)len);
		return 0;
	}
	/* The driver only zeroes through it; users map their own pages. */
	vdev->dm_va = pci_iomap_wc(pdev, VRNIC_BAR_DM, len);
	if (!vdev->dm_va)
		return -ENOMEM;
	vdev->dm_npages = len >> PAGE_SHIFT;
	vdev->dm_used = bitmap_zalloc(vdev->dm_npages, GFP_KERNEL);
	if (!vdev->dm_used) {
		pci_iounmap(pdev, vdev->dm_va);
		vdev->dm_va = NULL;
		return -ENOMEM;
	}
	vdev->dm_bar_start = pci_resource_start(pdev, VRNIC_BAR_DM);
	vdev->dm_size = len;
	mutex_init(&vdev->dm_lock);
	return 0;
}

void vrnic_dm_uninit(struct vrnic_dev *vdev)
{
	if (!vdev->dm_size)
		return;
	WARN_ON(!bitmap_empty(vdev->dm_used, vdev->dm_npages));
	bitmap_free(vdev->dm_used);
	pci_iounmap(vdev->pdev, vdev->dm_va);
	vdev->dm_size = 0;
}

/* From vrnic_mmap_free(): the pages' last mapping is gone. */
void vrnic_dm_free_pages(struct vrnic_dev *vdev, u32 first, u32 npages)
{
	mutex_lock(&vdev->dm_lock);
	bitmap_clear(vdev->dm_used, first, npages);
	mutex_unlock(&vdev->dm_lock);
}

/* npages free pages aligned to 2^align_order pages, zeroed; -ENOMEM if none */
static int vrnic_dm_alloc_pages(struct vrnic_dev *vdev, u32 npages,
				u32 align_order, u32 *first)
{
	unsigned long start;

	mutex_lock(&vdev->dm_lock);
	start = bitmap_find_next_zero_area(vdev->dm_used, vdev->dm_npages, 0,
					   npages, (1UL << align_order) - 1);
	if (start >= vdev->dm_npages) {
		mutex_unlock(&vdev->dm_lock);
		return -ENOMEM;
	}
	bitmap_set(vdev->dm_used, start, npages);
	mutex_unlock(&vdev->dm_lock);

	memset_io(vdev->dm_va + (start << PAGE_SHIFT), 0,
		  (size_t)npages << PAGE_SHIFT);
	/*
	 * The zeroes leave the write-combining buffer before the user (or
	 * the device, through an MR) can see the pages.
	 */
	wmb();
	*first = start;
	return 0;
}

struct ib_dm *vrnic_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibucontext,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs)
{
	struct vrnic_dev *vdev = to_vdev(ibdev);
	struct vrnic_user_mmap_entry *entry;
	u32 npages, align_order = 0, first;
	struct vrnic_dm *dm;
	u64 mmap_offset;
	int err;

	if (!vdev->dm_size)
		return ERR_PTR(-EOPNOTSUPP);
	if (attr->flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (!attr->length || attr->length > vdev->dm_size ||
	    attr->alignment > ilog2(vdev->dm_size))
		return ERR_PTR(-EINVAL);
	/* Pages are already aligned to PAGE_SIZE; larger needs more. */
	if (attr->alignment > PAGE_SHIFT)
		align_order = attr->alignment - PAGE_SHIFT;
	npages = DIV_ROUND_UP(attr->length, PAGE_SIZE);

	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!dm || !entry) {
		err = -ENOMEM;
		goto err_free;
	}
	err = vrnic_dm_alloc_pages(vdev, npages, align_order, &first);
	if (err)
		goto err_free;

	entry->vdev = vdev;
	entry->type = VRNIC_MMAP_DM;
	entry->address = vdev->dm_bar_start + ((u64)first << PAGE_SHIFT);
	entry->dm_first = first;
	entry->dm_npages = npages;
	err = rdma_user_mmap_entry_insert(ibucontext, &entry->rdma_entry,
					  (size_t)npages << PAGE_SHIFT);
	if (err) {
		vrnic_dm_free_pages(vdev, first, npages);
		goto err_free;
	}
	dm->offset = (u64)first << PAGE_SHIFT;
	dm->entry = &entry->rdma_entry;

	mmap_offset = rdma_user_mmap_get_offset(dm->entry);
	err = uverbs_copy_to(attrs, VRNIC_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
			     &mmap_offset, sizeof(mmap_offset));
	if (err) {
		/* mmap_free returns the pages and frees the entry */
		rdma_user_mmap_entry_remove(dm->entry);
		kfree(dm);
		return ERR_PTR(err);
	}
	return &dm->ibdm;

err_free:
	kfree(entry);
	kfree(dm);
	return ERR_PTR(err);
}

int vrnic_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct vrnic_dm *dm = to_vdm(ibdm);

	/* The pages stay taken until the process's mapping is gone. */
	rdma_user_mmap_entry_remove(dm->entry);
	kfree(dm);
	return 0;
}
