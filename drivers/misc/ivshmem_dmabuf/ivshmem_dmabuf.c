// SPDX-License-Identifier: GPL-2.0
/*
 * ivshmem_dmabuf: the memory behind a QEMU ivshmem-plain device's BAR 2
 * exported as dma-bufs, so that an RDMA device reads and writes it by
 * peer-to-peer DMA (ibv_reg_dmabuf_mr) as it would a GPU's memory with
 * GPUDirect RDMA. The host side of the BAR is a memory backend that another
 * host process can share, playing the GPU.
 *
 * Each bound device is a misc device, /dev/ivshmem-dmabufN: its
 * IVSHMEM_DMABUF_EXPORT ioctl turns a page-aligned range of the BAR into a
 * dma-buf file descriptor, which user space maps with mmap() and an
 * importer maps for its device. No struct page stands behind a BAR, so an
 * importer's mapping is built with dma_map_resource(): the BAR's address as
 * the importing device reaches it (the bus address, or an IOMMU mapping of
 * it). The kernel's PCI P2PDMA helpers would do the same with pages, but
 * the 6.12 kernels this driver is built for do not configure them.
 *
 * The mapping is fixed for the life of a dma-buf (the exporter is not
 * dynamic: there is nothing to move), so an importer may pin it. The BAR
 * stays claimed until the last dma-buf and the last open file of a device
 * are gone, even if the device is unbound before.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <misc/ivshmem_dmabuf.h>

#define IVD_BAR		2
/* One scatterlist entry covers at most this much (its length is 32 bits). */
#define IVD_SEG_MAX	SZ_1G

struct ivd_dev {
	struct kref ref;
	struct pci_dev *pdev;
	phys_addr_t base;		/* BAR 2's CPU physical address */
	u64 size;
	struct mutex lock;		/* serialises export against remove */
	bool removed;
	int id;
	char name[32];
	struct miscdevice misc;
};

/* One exported range. */
struct ivd_buf {
	struct ivd_dev *dev;
	phys_addr_t phys;
	size_t size;
};

static DEFINE_IDA(ivd_ida);

static void ivd_dev_free(struct kref *ref)
{
	struct ivd_dev *dev = container_of(ref, struct ivd_dev, ref);

	pci_release_region(dev->pdev, IVD_BAR);
	pci_disable_device(dev->pdev);
	pci_dev_put(dev->pdev);
	ida_free(&ivd_ida, dev->id);
	kfree(dev);
}

static void ivd_dev_put(struct ivd_dev *dev)
{
	kref_put(&dev->ref, ivd_dev_free);
}

static void ivd_unmap_sgt(struct device *importer, struct sg_table *sgt,
			  unsigned int n, enum dma_data_direction dir)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_sg(sgt, sg, i) {
		if (i == n)
			break;
		dma_unmap_resource(importer, sg_dma_address(sg),
				   sg_dma_len(sg), dir,
				   DMA_ATTR_SKIP_CPU_SYNC);
	}
	sg_free_table(sgt);
	kfree(sgt);
}

static struct sg_table *ivd_map(struct dma_buf_attachment *at,
				enum dma_data_direction dir)
{
	struct ivd_buf *buf = at->dmabuf->priv;
	unsigned int n = DIV_ROUND_UP(buf->size, IVD_SEG_MAX);
	struct scatterlist *sg;
	struct sg_table *sgt;
	size_t off = 0;
	unsigned int i;
	int err;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	err = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (err) {
		kfree(sgt);
		return ERR_PTR(err);
	}
	for_each_sgtable_sg(sgt, sg, i) {
		size_t len = min_t(size_t, buf->size - off, IVD_SEG_MAX);
		dma_addr_t addr;

		addr = dma_map_resource(at->dev, buf->phys + off, len, dir,
					DMA_ATTR_SKIP_CPU_SYNC);
		if (dma_mapping_error(at->dev, addr)) {
			ivd_unmap_sgt(at->dev, sgt, i, dir);
			return ERR_PTR(-EIO);
		}
		/* No page: only the DMA address and length are valid. */
		sg_set_page(sg, NULL, len, 0);
		sg_dma_address(sg) = addr;
		sg_dma_len(sg) = len;
		off += len;
	}
	return sgt;
}

static void ivd_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
		      enum dma_data_direction dir)
{
	ivd_unmap_sgt(at->dev, sgt, sgt->orig_nents, dir);
}

/*
 * The CPU reaches the BAR like any prefetchable one: write-combined.
 * vm_iomap_memory() bounds the mapping by the buffer, vm_pgoff included.
 */
static int ivd_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct ivd_buf *buf = dmabuf->priv;

	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	return vm_iomap_memory(vma, buf->phys, buf->size);
}

static void ivd_release(struct dma_buf *dmabuf)
{
	struct ivd_buf *buf = dmabuf->priv;

	ivd_dev_put(buf->dev);
	kfree(buf);
}

static const struct dma_buf_ops ivd_dmabuf_ops = {
	.map_dma_buf = ivd_map,
	.unmap_dma_buf = ivd_unmap,
	.mmap = ivd_mmap,
	.release = ivd_release,
};

static int ivd_export(struct ivd_dev *dev,
		      struct ivshmem_dmabuf_export __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct ivshmem_dmabuf_export e;
	struct dma_buf *dmabuf;
	struct ivd_buf *buf;
	int fd;

	if (copy_from_user(&e, uarg, sizeof(e)))
		return -EFAULT;
	if (e.reserved || (e.flags & ~(O_CLOEXEC | O_ACCMODE)) ||
	    (e.flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	if (!e.size || !PAGE_ALIGNED(e.offset) || !PAGE_ALIGNED(e.size) ||
	    e.offset > dev->size || e.size > dev->size - e.offset)
		return -EINVAL;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	buf->dev = dev;
	buf->phys = dev->base + e.offset;
	buf->size = e.size;
	info.ops = &ivd_dmabuf_ops;
	info.size = e.size;
	info.flags = e.flags & O_ACCMODE;
	info.priv = buf;

	mutex_lock(&dev->lock);
	if (dev->removed) {
		mutex_unlock(&dev->lock);
		kfree(buf);
		return -ENODEV;
	}
	kref_get(&dev->ref);
	mutex_unlock(&dev->lock);

	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		ivd_dev_put(dev);
		kfree(buf);
		return PTR_ERR(dmabuf);
	}
	/* From here on the dma-buf owns buf and the reference. */
	fd = dma_buf_fd(dmabuf, e.flags & O_CLOEXEC);
	if (fd < 0)
		dma_buf_put(dmabuf);
	return fd;
}

static struct ivd_dev *ivd_of_file(struct file *f)
{
	return container_of(f->private_data, struct ivd_dev, misc);
}

static long ivd_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct ivd_dev *dev = ivd_of_file(f);
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case IVSHMEM_DMABUF_SIZE:
		return put_user(dev->size, (__u64 __user *)uarg);
	case IVSHMEM_DMABUF_EXPORT:
		return ivd_export(dev, uarg);
	default:
		return -ENOTTY;
	}
}

/* misc_open() has set private_data under the lock misc_deregister() takes. */
static int ivd_open(struct inode *inode, struct file *f)
{
	kref_get(&ivd_of_file(f)->ref);
	return 0;
}

static int ivd_file_release(struct inode *inode, struct file *f)
{
	ivd_dev_put(ivd_of_file(f));
	return 0;
}

static const struct file_operations ivd_fops = {
	.owner = THIS_MODULE,
	.open = ivd_open,
	.release = ivd_file_release,
	.unlocked_ioctl = ivd_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static int ivd_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct ivd_dev *dev;
	int err;

	if (!(pci_resource_flags(pdev, IVD_BAR) & IORESOURCE_MEM) ||
	    !pci_resource_len(pdev, IVD_BAR)) {
		pci_err(pdev, "BAR %d is not memory: no shared memory to export\n",
			IVD_BAR);
		return -ENODEV;
	}
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->id = ida_alloc(&ivd_ida, GFP_KERNEL);
	if (dev->id < 0) {
		err = dev->id;
		goto err_free;
	}
	err = pci_enable_device_mem(pdev);
	if (err)
		goto err_ida;
	err = pci_request_region(pdev, IVD_BAR, KBUILD_MODNAME);
	if (err)
		goto err_disable;

	kref_init(&dev->ref);
	mutex_init(&dev->lock);
	dev->pdev = pci_dev_get(pdev);
	dev->base = pci_resource_start(pdev, IVD_BAR);
	dev->size = pci_resource_len(pdev, IVD_BAR);
	snprintf(dev->name, sizeof(dev->name), "ivshmem-dmabuf%d", dev->id);
	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = dev->name;
	dev->misc.fops = &ivd_fops;
	dev->misc.parent = &pdev->dev;
	pci_set_drvdata(pdev, dev);
	err = misc_register(&dev->misc);
	if (err) {
		/* The last reference releases the region and the device. */
		ivd_dev_put(dev);
		return err;
	}
	pci_info(pdev, "BAR %d: %llu KiB at %pa, /dev/%s\n", IVD_BAR,
		 dev->size >> 10, &dev->base, dev->name);
	return 0;

err_disable:
	pci_disable_device(pdev);
err_ida:
	ida_free(&ivd_ida, dev->id);
err_free:
	kfree(dev);
	return err;
}

static void ivd_remove(struct pci_dev *pdev)
{
	struct ivd_dev *dev = pci_get_drvdata(pdev);

	misc_deregister(&dev->misc);
	mutex_lock(&dev->lock);
	dev->removed = true;
	mutex_unlock(&dev->lock);
	ivd_dev_put(dev);
}

static const struct pci_device_id ivd_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },	/* ivshmem */
	{ }
};
MODULE_DEVICE_TABLE(pci, ivd_ids);

static struct pci_driver ivd_driver = {
	.name = KBUILD_MODNAME,
	.id_table = ivd_ids,
	.probe = ivd_probe,
	.remove = ivd_remove,
};
module_pci_driver(ivd_driver);

MODULE_DESCRIPTION("ivshmem BAR memory exported as dma-bufs (peer memory for RDMA)");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
