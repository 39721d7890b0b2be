// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic PCI driver: probe/remove and module init.
 *
 * Probe runs in stages, each undone by its own teardown when a later one
 * fails, and remove runs the teardowns in reverse:
 *   1. vrnic_probe_dev(): the hardware (BAR0, reset, MSI-X, admin queue,
 *      async event queue, admin IRQ, device and port attributes, debugfs);
 *   2. vrnic_netdev_init(): the Ethernet function as a net_device;
 *   3. vrnic_ib_device_add(): the RoCE ib_device on top of that net_device.
 */

#include <linux/bitfield.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <net/addrconf.h>
#include <rdma/vrnic-abi.h>

#include "vrnic.h"

MODULE_DESCRIPTION("vrnic emulated RoCEv2 RDMA NIC driver");
MODULE_LICENSE("Dual BSD/GPL");
/* Without uverbs the device is invisible to libibverbs. */
MODULE_SOFTDEP("pre: ib_uverbs");

/* The device completes a reset before the write returns; be generous. */
#define VRNIC_RESET_TIMEOUT_US	(5 * USEC_PER_SEC)

static struct dentry *vrnic_debugfs_root;

static const struct pci_device_id vrnic_pci_table[] = {
	{ PCI_DEVICE(VRNIC_PCI_VENDOR_ID, VRNIC_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, vrnic_pci_table);

static const struct ib_device_ops vrnic_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VRNIC_UVERBS_ABI_VERSION,

	.add_gid = vrnic_add_gid,
	.alloc_hw_device_stats = vrnic_alloc_hw_device_stats,
	.alloc_ucontext = vrnic_alloc_ucontext,
	.dealloc_ucontext = vrnic_dealloc_ucontext,
	.del_gid = vrnic_del_gid,
	.disassociate_ucontext = vrnic_disassociate_ucontext,
	.get_dev_fw_str = vrnic_get_dev_fw_str,
	.get_hw_stats = vrnic_get_hw_stats,
	.get_link_layer = vrnic_get_link_layer,
	.get_port_immutable = vrnic_get_port_immutable,
	.query_device = vrnic_query_device,
	.query_pkey = vrnic_query_pkey,
	.query_port = vrnic_query_port,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrnic_ucontext, ibucontext),
};

/* ---- debugfs: /sys/kernel/debug/vrnic/<pci-bdf>/ ---- */

static const char *vrnic_gid_type_str(u32 type)
{
	return type == VRNIC_GID_TYPE_ROCE_V2 ? "RoCEv2" : "unknown";
}

/*
 * gid_table: the device's own view, one QUERY_GID per index, printed as
 * "<index> <gid> <type>" for used entries (the GID in the same notation as
 * /sys/class/infiniband/<dev>/ports/1/gids/<index>).
 */
static void *vrnic_gid_table_start(struct seq_file *s, loff_t *pos)
{
	struct vrnic_dev *vdev = s->private;

	return *pos < vdev->port_attr.gid_tbl_len ? pos : NULL;
}

static void *vrnic_gid_table_next(struct seq_file *s, void *v, loff_t *pos)
{
	++*pos;
	return vrnic_gid_table_start(s, pos);
}

static void vrnic_gid_table_stop(struct seq_file *s, void *v)
{
}

static int vrnic_gid_table_show(struct seq_file *s, void *v)
{
	struct vrnic_dev *vdev = s->private;
	u32 index = *(loff_t *)v;
	struct vrnic_cmd_gid entry;
	int err;

	err = vrnic_cmd_query_gid(&vdev->cmdq, index, &entry);
	if (err)
		return err;

	if (entry.type)
		seq_printf(s, "%u %pI6 %s\n", index, entry.gid,
			   vrnic_gid_type_str(entry.type));
	return 0;
}

static const struct seq_operations vrnic_gid_table_sops = {
	.start = vrnic_gid_table_start,
	.next = vrnic_gid_table_next,
	.stop = vrnic_gid_table_stop,
	.show = vrnic_gid_table_show,
};
DEFINE_SEQ_ATTRIBUTE(vrnic_gid_table);

static int vrnic_cmdq_stats_show(struct seq_file *s, void *v)
{
	struct vrnic_dev *vdev = s->private;
	struct vrnic_cmdq_stats *st = &vdev->cmdq.stats;

	seq_printf(s, "submitted %lld\n", atomic64_read(&st->submitted));
	seq_printf(s, "completed %lld\n", atomic64_read(&st->completed));
	seq_printf(s, "errors %lld\n", atomic64_read(&st->errors));
	seq_printf(s, "timeouts %lld\n", atomic64_read(&st->timeouts));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrnic_cmdq_stats);

static void vrnic_debugfs_init(struct vrnic_dev *vdev)
{
	vdev->debugfs = debugfs_create_dir(pci_name(vdev->pdev),
					   vrnic_debugfs_root);
	debugfs_create_file("gid_table", 0400, vdev->debugfs, vdev,
			    &vrnic_gid_table_fops);
	debugfs_create_file("cmdq_stats", 0400, vdev->debugfs, vdev,
			    &vrnic_cmdq_stats_fops);
}

/* Waits for readers that are still running a file's show(). */
static void vrnic_debugfs_uninit(struct vrnic_dev *vdev)
{
	debugfs_remove_recursive(vdev->debugfs);
	vdev->debugfs = NULL;
}

/* ---- stage 1: hardware ---- */

static int vrnic_check_id(struct vrnic_dev *vdev)
{
	struct device *dev = &vdev->pdev->dev;
	u32 id = vrnic_reg_read(vdev, VRNIC_REG_ID);
	u32 version = vrnic_reg_read(vdev, VRNIC_REG_VERSION);
	u32 major = FIELD_GET(VRNIC_VERSION_MAJOR_MASK, version);
	u32 minor = FIELD_GET(VRNIC_VERSION_MINOR_MASK, version);

	if (id != VRNIC_ID_MAGIC) {
		dev_err(dev, "not a vrnic: ID register reads %#x, expected %#x\n",
			id, VRNIC_ID_MAGIC);
		return -ENODEV;
	}

	if (major != VRNIC_VERSION_MAJOR) {
		dev_err(dev, "device interface version %u.%u is not supported (driver speaks %u.x)\n",
			major, minor, VRNIC_VERSION_MAJOR);
		return -ENODEV;
	}

	dev_dbg(dev, "device interface version %u.%u\n", major, minor);
	return 0;
}

/* Return every queue to idle and clear what a previous driver set up. */
static int vrnic_reset_device(struct vrnic_dev *vdev)
{
	u32 sts;
	int err;

	vrnic_reg_write(vdev, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
	/* The read also flushes the posted reset write. */
	err = readl_poll_timeout(vdev->regs + VRNIC_REG_DEV_STS, sts,
				 sts & VRNIC_DEV_STS_READY, 1000,
				 VRNIC_RESET_TIMEOUT_US);
	if (err) {
		dev_err(&vdev->pdev->dev,
			"device not ready after reset (DEV_STS %#x)\n", sts);
		return err;
	}

	if (sts & VRNIC_DEV_STS_FATAL) {
		dev_err(&vdev->pdev->dev,
			"device still in fatal state after reset (DEV_STS %#x)\n",
			sts);
		return -EIO;
	}
	return 0;
}

static int vrnic_read_caps(struct vrnic_dev *vdev)
{
	struct device *dev = &vdev->pdev->dev;
	u32 vec = vrnic_reg_read(vdev, VRNIC_REG_CAP_VEC);
	u32 db = vrnic_reg_read(vdev, VRNIC_REG_CAP_DB);
	u32 eth = vrnic_reg_read(vdev, VRNIC_REG_CAP_ETH);
	u32 total = FIELD_GET(VRNIC_CAP_VEC_TOTAL_MASK, vec);
	u32 num_comp = FIELD_GET(VRNIC_CAP_VEC_NUM_COMP_MASK, vec);

	if (!num_comp || total != VRNIC_VEC_COMP_FIRST + num_comp) {
		dev_err(dev, "bad CAP_VEC %#x: %u vectors, %u completion vectors\n",
			vec, total, num_comp);
		return -EINVAL;
	}
	vdev->num_vectors = total;
	vdev->num_comp = num_comp;

	vdev->db_page_shift = FIELD_GET(VRNIC_CAP_DB_PAGE_SHIFT_MASK, db);
	vdev->db_num_pages = FIELD_GET(VRNIC_CAP_DB_NUM_PAGES_MASK, db);

	vdev->eth_max_mtu = FIELD_GET(VRNIC_CAP_ETH_MAX_MTU_MASK, eth);
	vdev->eth_max_log_depth = FIELD_GET(VRNIC_CAP_ETH_LOG_DEPTH_MASK, eth);
	if (vdev->eth_max_mtu < ETH_MIN_MTU || !vdev->eth_max_log_depth) {
		dev_err(dev, "bad CAP_ETH %#x: max MTU %u, max log depth %u\n",
			eth, vdev->eth_max_mtu, vdev->eth_max_log_depth);
		return -EINVAL;
	}
	return 0;
}

static int vrnic_probe_dev(struct pci_dev *pdev)
{
	struct vrnic_dev *vdev;
	int err;

	vdev = ib_alloc_device(vrnic_dev, ibdev);
	if (!vdev)
		return -ENOMEM;

	vdev->pdev = pdev;
	spin_lock_init(&vdev->event_lock);
	pci_set_drvdata(pdev, vdev);

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

	vdev->regs = pci_iomap(pdev, VRNIC_BAR_REGS, VRNIC_REGS_SIZE);
	if (!vdev->regs) {
		err = -ENOMEM;
		goto err_release_regions;
	}

	err = vrnic_check_id(vdev);
	if (err)
		goto err_iounmap;

	err = vrnic_reset_device(vdev);
	if (err)
		goto err_iounmap;

	err = vrnic_read_caps(vdev);
	if (err)
		goto err_reset;

	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "no 64-bit DMA (%d)\n", err);
		goto err_reset;
	}
	/* Let ib_umem build scatterlist segments of any size. */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	pci_set_master(pdev);

	err = pci_alloc_irq_vectors(pdev, vdev->num_vectors, vdev->num_vectors,
				    PCI_IRQ_MSIX);
	if (err < 0) {
		dev_err(&pdev->dev, "cannot allocate %u MSI-X vectors (%d)\n",
			vdev->num_vectors, err);
		goto err_clear_master;
	}

	err = vrnic_cmdq_init(&vdev->cmdq, &pdev->dev, vdev->regs);
	if (err)
		goto err_free_vectors;

	/* Polling mode: the first command also proves the queue works. */
	err = vrnic_cmd_query_device(&vdev->cmdq, &vdev->dev_attr);
	if (err) {
		dev_err(&pdev->dev, "QUERY_DEVICE failed (%d)\n", err);
		goto err_cmdq_uninit;
	}

	err = vrnic_aeq_init(vdev);
	if (err)
		goto err_cmdq_uninit;

	err = vrnic_admin_irq_init(vdev);
	if (err) {
		dev_err(&pdev->dev, "cannot request the admin IRQ (%d)\n", err);
		goto err_aeq_uninit;
	}
	vrnic_cmdq_set_polling(&vdev->cmdq, false);

	vrnic_link_init(vdev);

	err = vrnic_cmd_query_port(&vdev->cmdq, VRNIC_PORT, &vdev->port_attr);
	if (err) {
		dev_err(&pdev->dev, "QUERY_PORT failed (%d)\n", err);
		goto err_admin_irq_uninit;
	}
	if (!vdev->port_attr.gid_tbl_len) {
		dev_err(&pdev->dev, "device reports an empty GID table\n");
		err = -EINVAL;
		goto err_admin_irq_uninit;
	}

	vrnic_debugfs_init(vdev);
	return 0;

err_admin_irq_uninit:
	vrnic_cmdq_set_polling(&vdev->cmdq, true);
	vrnic_admin_irq_uninit(vdev);
err_aeq_uninit:
	vrnic_aeq_uninit(vdev);
err_cmdq_uninit:
	vrnic_cmdq_uninit(&vdev->cmdq);
err_free_vectors:
	pci_free_irq_vectors(pdev);
err_clear_master:
	pci_clear_master(pdev);
err_reset:
	vrnic_reset_device(vdev);
err_iounmap:
	pci_iounmap(pdev, vdev->regs);
err_release_regions:
	pci_release_regions(pdev);
err_disable_device:
	pci_disable_device(pdev);
err_dealloc:
	ib_dealloc_device(&vdev->ibdev);
	return err;
}

static void vrnic_remove_dev(struct pci_dev *pdev)
{
	struct vrnic_dev *vdev = pci_get_drvdata(pdev);

	vrnic_debugfs_uninit(vdev);
	vrnic_cmdq_set_polling(&vdev->cmdq, true);
	vrnic_admin_irq_uninit(vdev);
	vrnic_aeq_uninit(vdev);
	vrnic_cmdq_uninit(&vdev->cmdq);
	pci_free_irq_vectors(pdev);
	pci_clear_master(pdev);
	vrnic_reset_device(vdev);
	pci_iounmap(pdev, vdev->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	ib_dealloc_device(&vdev->ibdev);
}

/* ---- stage 3: the ib_device ---- */

static u32 vrnic_num_comp_vectors(struct vrnic_dev *vdev)
{
	u32 n = vdev->dev_attr.num_comp_vectors;

	if (!n || n > vdev->num_comp) {
		dev_warn(&vdev->pdev->dev,
			 "QUERY_DEVICE reports %u completion vectors, CAP_VEC %u: using %u\n",
			 n, vdev->num_comp, vdev->num_comp);
		n = vdev->num_comp;
	}
	return n;
}

static int vrnic_ib_device_add(struct vrnic_dev *vdev)
{
	struct ib_device *ibdev = &vdev->ibdev;
	struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	bool seen_active;
	int err;

	/* ib_core and pyverbs expect non-zero GUIDs: fall back to EUI-64. */
	if (!da->node_guid) {
		addrconf_addr_eui48((u8 *)&da->node_guid,
				    vdev->netdev->dev_addr);
		dev_warn(&vdev->pdev->dev,
			 "device reports node GUID 0, using %016llx\n",
			 be64_to_cpu(da->node_guid));
	}
	if (!da->sys_image_guid)
		da->sys_image_guid = da->node_guid;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->node_guid = da->node_guid;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = vrnic_num_comp_vectors(vdev);
	ibdev->dev.parent = &vdev->pdev->dev;
	strscpy(ibdev->node_desc, "vrnic RoCEv2 RNIC", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &vrnic_dev_ops);

	/* Holds a reference on the netdev until ib_unregister_device(). */
	err = ib_device_set_netdev(ibdev, vdev->netdev, VRNIC_PORT);
	if (err) {
		dev_err(&vdev->pdev->dev, "cannot bind the netdev (%d)\n", err);
		return err;
	}

	seen_active = vrnic_port_active(vdev);
	err = ib_register_device(ibdev, "vrnic%d", &vdev->pdev->dev);
	if (err) {
		dev_err(&vdev->pdev->dev, "ib_register_device failed (%d)\n",
			err);
		ib_device_set_netdev(ibdev, NULL, VRNIC_PORT);
		return err;
	}
	vrnic_ib_set_live(vdev, true, seen_active);

	ibdev_info(ibdev, "RoCEv2 port on %s\n", netdev_name(vdev->netdev));
	return 0;
}

static void vrnic_ib_device_remove(struct vrnic_dev *vdev)
{
	vrnic_ib_set_live(vdev, false, false);
	/* Also deletes every GID (DEL_GID) and drops the netdev reference. */
	ib_unregister_device(&vdev->ibdev);
}

/* ---- PCI driver ---- */

static int vrnic_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct vrnic_dev *vdev;
	int err;

	err = vrnic_probe_dev(pdev);
	if (err)
		return err;
	vdev = pci_get_drvdata(pdev);

	err = vrnic_netdev_init(vdev);
	if (err) {
		dev_err(&pdev->dev, "cannot register the netdev (%d)\n", err);
		goto err_remove_dev;
	}

	err = vrnic_ib_device_add(vdev);
	if (err)
		goto err_netdev_uninit;

	return 0;

err_netdev_uninit:
	vrnic_netdev_uninit(vdev);
err_remove_dev:
	vrnic_remove_dev(pdev);
	return err;
}

static void vrnic_remove(struct pci_dev *pdev)
{
	struct vrnic_dev *vdev = pci_get_drvdata(pdev);

	vrnic_ib_device_remove(vdev);
	vrnic_netdev_uninit(vdev);
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

	vrnic_debugfs_root = debugfs_create_dir(VRNIC_DRV_NAME, NULL);

	err = pci_register_driver(&vrnic_pci_driver);
	if (err)
		debugfs_remove_recursive(vrnic_debugfs_root);
	return err;
}

static void __exit vrnic_exit(void)
{
	pci_unregister_driver(&vrnic_pci_driver);
	debugfs_remove_recursive(vrnic_debugfs_root);
}

module_init(vrnic_init);
module_exit(vrnic_exit);
