// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic PCI driver (the Ethernet function): probe/remove and module init.
 *
 * Probe runs in stages, each undone by its own teardown when a later one
 * fails, and remove runs the teardowns in reverse:
 *   1. vrnic_probe_dev(): the hardware (BAR0, reset, MSI-X, admin queue,
 *      async event queue, admin IRQ, debugfs);
 *   2. vrnic_netdev_init(): the Ethernet function as a net_device;
 *   3. vrnic_rdma_add(): the auxiliary device "vrnic.rdma" that
 *      vrnic_rdma.ko binds to for the RoCE ib_device (vrnic_api.h).
 */

#include <linux/auxiliary_bus.h>
#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "vrnic_core.h"

MODULE_DESCRIPTION("vrnic emulated RoCEv2 RDMA NIC: Ethernet driver");
MODULE_LICENSE("Dual BSD/GPL");

/* Auxiliary device ids: unique among all vrnic functions. */
static DEFINE_IDA(vrnic_aux_ida);

/* The device completes a reset before the write returns; be generous. */
#define VRNIC_RESET_TIMEOUT_US	(5 * USEC_PER_SEC)

static const struct pci_device_id vrnic_pci_table[] = {
	{ PCI_DEVICE(VRNIC_PCI_VENDOR_ID, VRNIC_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, vrnic_pci_table);

/* ---- stage 1: hardware ---- */

static int vrnic_check_id(struct vrnic_core *core)
{
	struct device *dev = &core->pdev->dev;
	u32 id = vrnic_reg_read(core, VRNIC_REG_ID);
	u32 version = vrnic_reg_read(core, VRNIC_REG_VERSION);
	u32 major = FIELD_GET(VRNIC_VERSION_MAJOR_MASK, version);
	u32 minor = FIELD_GET(VRNIC_VERSION_MINOR_MASK, version);

	if (id != VRNIC_ID_MAGIC) {
		dev_err(dev, "not a vrnic: ID register reads %#x, expected %#x\n",
			id, VRNIC_ID_MAGIC);
		return -ENODEV;
	}

	/*
	 * One released interface: a later minor may only add what a
	 * device_caps bit announces, so any minor of major 1 is understood.
	 */
	if (major != VRNIC_VERSION_MAJOR) {
		dev_err(dev, "device interface version %u.%u is not supported (driver speaks %u.x)\n",
			major, minor, VRNIC_VERSION_MAJOR);
		return -ENODEV;
	}
	dev_dbg(dev, "device interface version %u.%u\n", major, minor);
	return 0;
}

/* Return every queue to idle and clear what a previous driver set up. */
static int vrnic_reset_device(struct vrnic_core *core)
{
	u32 sts;
	int err;

	vrnic_reg_write(core, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
	/* The read also flushes the posted reset write. */
	err = readl_poll_timeout(core->regs + VRNIC_REG_DEV_STS, sts,
				 sts & VRNIC_DEV_STS_READY, 1000,
				 VRNIC_RESET_TIMEOUT_US);
	if (err) {
		dev_err(&core->pdev->dev,
			"device not ready after reset (DEV_STS %#x)\n", sts);
		return err;
	}

	if (sts & VRNIC_DEV_STS_FATAL) {
		dev_err(&core->pdev->dev,
			"device still in fatal state after reset (DEV_STS %#x)\n",
			sts);
		return -EIO;
	}
	return 0;
}

static int vrnic_read_caps(struct vrnic_core *core)
{
	struct device *dev = &core->pdev->dev;
	u32 vec = vrnic_reg_read(core, VRNIC_REG_CAP_VEC);
	u32 db = vrnic_reg_read(core, VRNIC_REG_CAP_DB);
	u32 eth = vrnic_reg_read(core, VRNIC_REG_CAP_ETH);
	u32 total = FIELD_GET(VRNIC_CAP_VEC_TOTAL_MASK, vec);
	u32 num_comp = FIELD_GET(VRNIC_CAP_VEC_NUM_COMP_MASK, vec);

	if (!num_comp || total != VRNIC_VEC_COMP_FIRST + num_comp) {
		dev_err(dev, "bad CAP_VEC %#x: %u vectors, %u completion vectors\n",
			vec, total, num_comp);
		return -EINVAL;
	}
	core->num_vectors = total;
	core->num_comp = num_comp;

	core->db_page_shift = FIELD_GET(VRNIC_CAP_DB_PAGE_SHIFT_MASK, db);
	core->db_num_pages = FIELD_GET(VRNIC_CAP_DB_NUM_PAGES_MASK, db);

	core->eth_max_mtu = FIELD_GET(VRNIC_CAP_ETH_MAX_MTU_MASK, eth);
	core->eth_max_log_depth = FIELD_GET(VRNIC_CAP_ETH_LOG_DEPTH_MASK, eth);
	if (core->eth_max_mtu < ETH_MIN_MTU || !core->eth_max_log_depth) {
		dev_err(dev, "bad CAP_ETH %#x: max MTU %u, max log depth %u\n",
			eth, core->eth_max_mtu, core->eth_max_log_depth);
		return -EINVAL;
	}
	return 0;
}

static int vrnic_probe_dev(struct pci_dev *pdev)
{
	struct vrnic_core *core;
	int err;

	core = kzalloc(sizeof(*core), GFP_KERNEL);
	if (!core)
		return -ENOMEM;

	core->pdev = pdev;
	spin_lock_init(&core->event_lock);
	pci_set_drvdata(pdev, core);

	err = pci_enable_device_mem(pdev);
	if (err) {
		dev_err(&pdev->dev, "cannot enable PCI device (%d)\n", err);
		goto err_dealloc;
	}

	err = pci_request_regions(pdev, VRNIC_DRV_NAME);
	if (err) {
		dev_err(&pdev->dev, "cannot request BARs (%d)\n", err);
		goto err_disable_device;
	}

	if (!(pci_resource_flags(pdev, VRNIC_BAR_REGS) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, VRNIC_BAR_REGS) < VRNIC_REGS_SIZE) {
		dev_err(&pdev->dev, "BAR%d is not a %#x-byte memory BAR\n",
			VRNIC_BAR_REGS, VRNIC_REGS_SIZE);
		err = -ENODEV;
		goto err_release_regions;
	}

	core->regs = pci_iomap(pdev, VRNIC_BAR_REGS, VRNIC_REGS_SIZE);
	if (!core->regs) {
		err = -ENOMEM;
		goto err_release_regions;
	}

	err = vrnic_check_id(core);
	if (err)
		goto err_iounmap;

	err = vrnic_reset_device(core);
	if (err)
		goto err_iounmap;

	err = vrnic_read_caps(core);
	if (err)
		goto err_reset;

	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "no 64-bit DMA (%d)\n", err);
		goto err_reset;
	}
	/* Let the RDMA driver's ib_umem build segments of any size. */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	pci_set_master(pdev);

	err = pci_alloc_irq_vectors(pdev, core->num_vectors, core->num_vectors,
				    PCI_IRQ_MSIX);
	if (err < 0) {
		dev_err(&pdev->dev, "cannot allocate %u MSI-X vectors (%d)\n",
			core->num_vectors, err);
		goto err_clear_master;
	}

	err = vrnic_cmdq_init(&core->cmdq, &pdev->dev, core->regs);
	if (err)
		goto err_free_vectors;

	err = vrnic_aeq_init(core);
	if (err)
		goto err_cmdq_uninit;

	err = vrnic_admin_irq_init(core);
	if (err) {
		dev_err(&pdev->dev, "cannot request the admin IRQ (%d)\n", err);
		goto err_aeq_uninit;
	}
	vrnic_cmdq_set_polling(&core->cmdq, false);

	vrnic_link_init(core);
	vrnic_debugfs_init(core);
	return 0;

err_aeq_uninit:
	vrnic_aeq_uninit(core);
err_cmdq_uninit:
	vrnic_cmdq_uninit(&core->cmdq);
err_free_vectors:
	pci_free_irq_vectors(pdev);
err_clear_master:
	pci_clear_master(pdev);
err_reset:
	vrnic_reset_device(core);
err_iounmap:
	pci_iounmap(pdev, core->regs);
err_release_regions:
	pci_release_regions(pdev);
err_disable_device:
	pci_disable_device(pdev);
err_dealloc:
	kfree(core);
	return err;
}

static void vrnic_remove_dev(struct pci_dev *pdev)
{
	struct vrnic_core *core = pci_get_drvdata(pdev);

	vrnic_debugfs_uninit(core);
	vrnic_cmdq_set_polling(&core->cmdq, true);
	vrnic_admin_irq_uninit(core);
	vrnic_aeq_uninit(core);
	vrnic_cmdq_uninit(&core->cmdq);
	pci_free_irq_vectors(pdev);
	pci_clear_master(pdev);
	vrnic_reset_device(core);
	pci_iounmap(pdev, core->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	kfree(core);
}

/* ---- stage 3: the RDMA function's auxiliary device ---- */

static void vrnic_rdma_release(struct device *dev)
{
	struct vrnic_aux_dev *aux = to_vrnic_aux_dev(to_auxiliary_dev(dev));

	ida_free(&vrnic_aux_ida, aux->adev.id);
	kfree(aux);
}

static int vrnic_rdma_add(struct vrnic_core *core)
{
	struct vrnic_aux_dev *aux;
	int err;

	aux = kzalloc(sizeof(*aux), GFP_KERNEL);
	if (!aux)
		return -ENOMEM;

	err = ida_alloc(&vrnic_aux_ida, GFP_KERNEL);
	if (err < 0) {
		kfree(aux);
		return err;
	}
	aux->adev.id = err;
	aux->adev.name = VRNIC_AUX_RDMA_NAME;
	aux->adev.dev.parent = &core->pdev->dev;
	aux->adev.dev.release = vrnic_rdma_release;
	aux->core = core;
	aux->pdev = core->pdev;
	aux->regs = core->regs;
	aux->cmdq = &core->cmdq;
	aux->netdev = core->netdev;
	aux->debugfs = core->debugfs;
	aux->num_comp = core->num_comp;
	aux->db_page_shift = core->db_page_shift;
	aux->db_num_pages = core->db_num_pages;

	err = auxiliary_device_init(&aux->adev);
	if (err) {
		ida_free(&vrnic_aux_ida, aux->adev.id);
		kfree(aux);
		return err;
	}
	/* Binds vrnic_rdma.ko now if it is loaded; udev loads it otherwise. */
	err = auxiliary_device_add(&aux->adev);
	if (err) {
		auxiliary_device_uninit(&aux->adev);	/* releases aux */
		return err;
	}
	core->rdma = aux;
	return 0;
}

/* Unbinds the RDMA driver: its ib_device is gone when this returns. */
static void vrnic_rdma_del(struct vrnic_core *core)
{
	auxiliary_device_delete(&core->rdma->adev);
	auxiliary_device_uninit(&core->rdma->adev);
	core->rdma = NULL;
	WARN_ON(core->rdma_events);
}

/* ---- PCI driver ---- */

static int vrnic_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct vrnic_core *core;
	int err;

	err = vrnic_probe_dev(pdev);
	if (err)
		return err;
	core = pci_get_drvdata(pdev);

	err = vrnic_netdev_init(core);
	if (err) {
		dev_err(&pdev->dev, "cannot register the netdev (%d)\n", err);
		goto err_remove_dev;
	}

	err = vrnic_rdma_add(core);
	if (err) {
		dev_err(&pdev->dev, "cannot add the RDMA function (%d)\n", err);
		goto err_netdev_uninit;
	}

	return 0;

err_netdev_uninit:
	vrnic_netdev_uninit(core);
err_remove_dev:
	vrnic_remove_dev(pdev);
	return err;
}

static void vrnic_remove(struct pci_dev *pdev)
{
	struct vrnic_core *core = pci_get_drvdata(pdev);

	vrnic_rdma_del(core);
	vrnic_netdev_uninit(core);
	vrnic_remove_dev(pdev);
}

static struct pci_driver vrnic_pci_driver = {
	.name = VRNIC_DRV_NAME,
	.id_table = vrnic_pci_table,
	.probe = vrnic_probe,
	.remove = vrnic_remove,
};

static int __init vrnic_init(void)
{
	int err;

	vrnic_debugfs_register();

	err = pci_register_driver(&vrnic_pci_driver);
	if (err)
		vrnic_debugfs_unregister();
	return err;
}

static void __exit vrnic_exit(void)
{
	pci_unregister_driver(&vrnic_pci_driver);
	vrnic_debugfs_unregister();
}

module_init(vrnic_init);
module_exit(vrnic_exit);
