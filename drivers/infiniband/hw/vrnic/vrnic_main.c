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
#include <linux/uaccess.h>
#include <net/addrconf.h>
#include <rdma/vrnic-abi.h>

#include "vrnic.h"

MODULE_DESCRIPTION("vrnic emulated RoCEv2 RDMA NIC driver");
MODULE_LICENSE("Dual BSD/GPL");
/* Without uverbs the device is invisible to libibverbs. */
MODULE_SOFTDEP("pre: ib_uverbs");

static bool cq_dim = true;
module_param(cq_dim, bool, 0444);
MODULE_PARM_DESC(cq_dim, "let ib_core tune kernel CQs' event moderation (DIM), default Y");

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
	.alloc_hw_port_stats = vrnic_alloc_hw_port_stats,
	.alloc_mr = vrnic_alloc_mr,
	.alloc_mw = vrnic_alloc_mw,
	.alloc_pd = vrnic_alloc_pd,
	.alloc_ucontext = vrnic_alloc_ucontext,
	.attach_mcast = vrnic_attach_mcast,
	.create_ah = vrnic_create_ah,
	.create_cq = vrnic_create_cq,
	.create_qp = vrnic_create_qp,
	.create_srq = vrnic_create_srq,
	.create_user_ah = vrnic_create_ah,
	.dealloc_mw = vrnic_dealloc_mw,
	.dealloc_pd = vrnic_dealloc_pd,
	.dealloc_ucontext = vrnic_dealloc_ucontext,
	.del_gid = vrnic_del_gid,
	.dereg_mr = vrnic_dereg_mr,
	.destroy_ah = vrnic_destroy_ah,
	.destroy_cq = vrnic_destroy_cq,
	.destroy_qp = vrnic_destroy_qp,
	.destroy_srq = vrnic_destroy_srq,
	.detach_mcast = vrnic_detach_mcast,
	.disassociate_ucontext = vrnic_disassociate_ucontext,
	.fill_res_cq_entry = vrnic_fill_res_cq_entry,
	.fill_res_mr_entry = vrnic_fill_res_mr_entry,
	.fill_res_qp_entry = vrnic_fill_res_qp_entry,
	.fill_res_srq_entry = vrnic_fill_res_srq_entry,
	.get_dev_fw_str = vrnic_get_dev_fw_str,
	.get_dma_mr = vrnic_get_dma_mr,
	.get_hw_stats = vrnic_get_hw_stats,
	.get_link_layer = vrnic_get_link_layer,
	.get_port_immutable = vrnic_get_port_immutable,
	.map_mr_sg = vrnic_map_mr_sg,
	.mmap = vrnic_mmap,
	.mmap_free = vrnic_mmap_free,
	.modify_cq = vrnic_modify_cq,
	.modify_qp = vrnic_modify_qp,
	.modify_srq = vrnic_modify_srq,
	.poll_cq = vrnic_poll_cq,
	.post_recv = vrnic_post_recv,
	.post_send = vrnic_post_send,
	.post_srq_recv = vrnic_post_srq_recv,
	.query_device = vrnic_query_device,
	.query_pkey = vrnic_query_pkey,
	.query_port = vrnic_query_port,
	.query_qp = vrnic_query_qp,
	.query_srq = vrnic_query_srq,
	.query_ucontext = vrnic_query_ucontext,
	.reg_user_mr = vrnic_reg_user_mr,
	.reg_user_mr_dmabuf = vrnic_reg_user_mr_dmabuf,
	.req_notify_cq = vrnic_req_notify_cq,
	.rereg_user_mr = vrnic_rereg_user_mr,
	.resize_cq = vrnic_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, vrnic_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrnic_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, vrnic_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrnic_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrnic_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vrnic_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrnic_ucontext, ibucontext),
};

/* On-demand paging (VRNIC_DEVICE_CAP_ON_DEMAND): ibv_advise_mr. */
static const struct ib_device_ops vrnic_odp_ops = {
	.advise_mr = vrnic_advise_mr,
};

/* Flow steering to raw packet QPs (VRNIC_DEVICE_CAP_RAW_PACKET). */
static const struct ib_device_ops vrnic_flow_ops = {
	.create_flow = vrnic_create_flow,
	.destroy_flow = vrnic_destroy_flow,
};

/* Receive-side scaling (VRNIC_DEVICE_CAP_RSS): WQs and RSS QPs. */
static const struct ib_device_ops vrnic_rss_ops = {
	.create_wq = vrnic_create_wq,
	.modify_wq = vrnic_modify_wq,
	.destroy_wq = vrnic_destroy_wq,
	.create_rwq_ind_table = vrnic_create_rwq_ind_table,
	.destroy_rwq_ind_table = vrnic_destroy_rwq_ind_table,
	/* ib_core's table is all there is: nothing of the driver's around it. */
	.size_ib_rwq_ind_table = sizeof(struct ib_rwq_ind_table),
};

/*
 * XRC (VRNIC_DEVICE_CAP_XRC): domains. XRC SRQs and QPs come through the
 * object verbs, which refuse them without the capability.
 */
static const struct ib_device_ops vrnic_xrc_ops = {
	.alloc_xrcd = vrnic_alloc_xrcd,
	.dealloc_xrcd = vrnic_dealloc_xrcd,

	INIT_RDMA_OBJ_SIZE(ib_xrcd, vrnic_xrcd, ibxrcd),
};

/* Device memory (when the device has a BAR5): ibv_alloc_dm. */
static const struct ib_device_ops vrnic_dm_ops = {
	.alloc_dm = vrnic_alloc_dm,
	.dealloc_dm = vrnic_dealloc_dm,
	.reg_dm_mr = vrnic_reg_dm_mr,
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

/* res_count: live device objects per type, the kernel's own included. */
static int vrnic_res_count_show(struct seq_file *s, void *v)
{
	static const char * const names[VRNIC_RES_MAX] = {
		[VRNIC_RES_PD] = "pd",
		[VRNIC_RES_MR] = "mr",
		[VRNIC_RES_MW] = "mw",
		[VRNIC_RES_CQ] = "cq",
		[VRNIC_RES_QP] = "qp",
		[VRNIC_RES_SRQ] = "srq",
		[VRNIC_RES_AH] = "ah",
		[VRNIC_RES_UCTX] = "uctx",
		[VRNIC_RES_XRCD] = "xrcd",
	};
	struct vrnic_dev *vdev = s->private;
	unsigned int i;

	for (i = 0; i < VRNIC_RES_MAX; i++)
		seq_printf(s, "%s %d\n", names[i],
			   atomic_read(&vdev->res_count[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrnic_res_count);

/*
 * mr_query: write a key (decimal or 0x hex); reading prints the DEVICE's
 * view of that MR (QUERY_MR): "iova length pdn access page_shift npages",
 * then one line per page with the DMA address its tables give. Record 0 is
 * the header, record k the k-th chunk of VRNIC_QUERY_MR_MAX_PAGES pages.
 */
#define VRNIC_MR_QUERY_BUF_SIZE						\
	(sizeof(struct vrnic_mr_attr) +					\
	 VRNIC_QUERY_MR_MAX_PAGES * sizeof(__le64))

struct vrnic_mr_query {
	struct vrnic_dev *vdev;
	u32 key;
	bool queried;		/* attr valid */
	s64 chunk;		/* chunk held in pages[], -1 = none */
	struct vrnic_cmd_mr_attr attr;
	u64 pages[VRNIC_QUERY_MR_MAX_PAGES];
	void *buf;		/* the device writes its answer here */
	dma_addr_t buf_dma;
	bool leak;		/* a query timed out: never free buf */
};

static int vrnic_mr_query_chunk(struct vrnic_mr_query *q, u64 chunk)
{
	u64 first = chunk * VRNIC_QUERY_MR_MAX_PAGES;
	u32 count = VRNIC_QUERY_MR_MAX_PAGES;
	int err;

	if (q->chunk == chunk)
		return 0;
	if (q->queried)
		count = min_t(u64, count, q->attr.npages - first);
	err = vrnic_cmd_query_mr(&q->vdev->cmdq, q->key, first, count, q->buf,
				 q->buf_dma, &q->attr, q->pages);
	if (err == -ETIMEDOUT)
		q->leak = true;
	if (err)
		return err;
	q->queried = true;
	q->chunk = chunk;
	return 0;
}

static u64 vrnic_mr_query_nchunks(struct vrnic_mr_query *q)
{
	return DIV_ROUND_UP((u64)q->attr.npages, VRNIC_QUERY_MR_MAX_PAGES);
}

static void *vrnic_mr_query_start(struct seq_file *s, loff_t *pos)
{
	struct vrnic_mr_query *q = s->private;
	int err;

	if (!q->queried) {
		err = vrnic_mr_query_chunk(q, 0);
		if (err)
			return ERR_PTR(err);
	}
	return *pos <= vrnic_mr_query_nchunks(q) ? pos : NULL;
}

static void *vrnic_mr_query_next(struct seq_file *s, void *v, loff_t *pos)
{
	++*pos;
	return vrnic_mr_query_start(s, pos);
}

static void vrnic_mr_query_stop(struct seq_file *s, void *v)
{
}

static int vrnic_mr_query_show(struct seq_file *s, void *v)
{
	struct vrnic_mr_query *q = s->private;
	loff_t pos = *(loff_t *)v;
	u64 first, i, n;
	int err;

	if (!pos) {
		seq_printf(s, "0x%llx 0x%llx %u 0x%x %u %u\n", q->attr.iova,
			   q->attr.length, q->attr.pdn, q->attr.access,
			   q->attr.page_shift, q->attr.npages);
		return 0;
	}

	err = vrnic_mr_query_chunk(q, pos - 1);
	if (err)
		return err;
	first = (pos - 1) * VRNIC_QUERY_MR_MAX_PAGES;
	n = min_t(u64, VRNIC_QUERY_MR_MAX_PAGES, q->attr.npages - first);
	for (i = 0; i < n; i++)
		seq_printf(s, "0x%llx\n", q->pages[i]);
	return 0;
}

static const struct seq_operations vrnic_mr_query_sops = {
	.start = vrnic_mr_query_start,
	.next = vrnic_mr_query_next,
	.stop = vrnic_mr_query_stop,
	.show = vrnic_mr_query_show,
};

static int vrnic_mr_query_open(struct inode *inode, struct file *file)
{
	struct vrnic_dev *vdev = inode->i_private;
	struct vrnic_mr_query *q;

	/* Writers only set the key. */
	if (!(file->f_mode & FMODE_READ))
		return 0;

	q = __seq_open_private(file, &vrnic_mr_query_sops, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->vdev = vdev;
	q->chunk = -1;
	mutex_lock(&vdev->mr_query_lock);
	q->key = vdev->mr_query_key;
	mutex_unlock(&vdev->mr_query_lock);
	q->buf = dma_alloc_coherent(&vdev->pdev->dev, VRNIC_MR_QUERY_BUF_SIZE,
				    &q->buf_dma, GFP_KERNEL);
	if (!q->buf) {
		seq_release_private(inode, file);
		return -ENOMEM;
	}
	return 0;
}

static int vrnic_mr_query_release(struct inode *inode, struct file *file)
{
	struct vrnic_dev *vdev = inode->i_private;
	struct seq_file *s = file->private_data;
	struct vrnic_mr_query *q;

	if (!(file->f_mode & FMODE_READ))
		return 0;
	q = s->private;
	if (!q->leak)
		dma_free_coherent(&vdev->pdev->dev, VRNIC_MR_QUERY_BUF_SIZE,
				  q->buf, q->buf_dma);
	return seq_release_private(inode, file);
}

static ssize_t vrnic_mr_query_write(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	struct vrnic_dev *vdev = file_inode(file)->i_private;
	u32 key;
	int err;

	err = kstrtou32_from_user(ubuf, count, 0, &key);
	if (err)
		return err;
	mutex_lock(&vdev->mr_query_lock);
	vdev->mr_query_key = key;
	mutex_unlock(&vdev->mr_query_lock);
	return count;
}

static const struct file_operations vrnic_mr_query_fops = {
	.owner = THIS_MODULE,
	.open = vrnic_mr_query_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = vrnic_mr_query_write,
	.release = vrnic_mr_query_release,
};

static void vrnic_debugfs_init(struct vrnic_dev *vdev)
{
	vdev->debugfs = debugfs_create_dir(pci_name(vdev->pdev),
					   vrnic_debugfs_root);
	debugfs_create_file("gid_table", 0400, vdev->debugfs, vdev,
			    &vrnic_gid_table_fops);
	debugfs_create_file("cmdq_stats", 0400, vdev->debugfs, vdev,
			    &vrnic_cmdq_stats_fops);
	debugfs_create_file("res_count", 0400, vdev->debugfs, vdev,
			    &vrnic_res_count_fops);
	debugfs_create_file("mr_query", 0600, vdev->debugfs, vdev,
			    &vrnic_mr_query_fops);
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

/*
 * The object layer: the kernel's doorbell page (BAR2 page 0) and one
 * completion EQ per completion vector.
 */
static int vrnic_objects_init(struct vrnic_dev *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	resource_size_t db_len = (resource_size_t)vdev->db_num_pages <<
				 vdev->db_page_shift;
	int err;

	vdev->num_eqs = vrnic_num_comp_vectors(vdev);
	vdev->pgsz_bitmap = vdev->dev_attr.page_size_cap & VRNIC_PAGE_SIZE_CAP;
	if (!vdev->pgsz_bitmap) {
		dev_warn(&pdev->dev, "device reports page sizes %#llx: using 4 KiB\n",
			 vdev->dev_attr.page_size_cap);
		vdev->pgsz_bitmap = SZ_4K;
	}
	if (!(pci_resource_flags(pdev, VRNIC_BAR_DB) & IORESOURCE_MEM) ||
	    vdev->db_page_shift != ilog2(VRNIC_DB_PAGE_SIZE) ||
	    !vdev->db_num_pages ||
	    pci_resource_len(pdev, VRNIC_BAR_DB) < db_len) {
		dev_err(&pdev->dev, "bad doorbell BAR%d: %llu bytes for %u pages of %u bytes\n",
			VRNIC_BAR_DB,
			(u64)pci_resource_len(pdev, VRNIC_BAR_DB),
			vdev->db_num_pages, 1U << vdev->db_page_shift);
		return -ENODEV;
	}
	vdev->db_bar_start = pci_resource_start(pdev, VRNIC_BAR_DB);
	vdev->db = pci_iomap_range(pdev, VRNIC_BAR_DB, 0, VRNIC_DB_PAGE_SIZE);
	if (!vdev->db)
		return -ENOMEM;

	err = vrnic_dm_init(vdev);
	if (err)
		goto err_db_unmap;
	/* The clock page, when there is one, is handed to user contexts. */
	if ((vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_TIMESTAMP) &&
	    pci_resource_len(pdev, VRNIC_BAR_REGS) >= VRNIC_BAR0_SIZE)
		vdev->clock_pa = pci_resource_start(pdev, VRNIC_BAR_REGS) +
				 VRNIC_CLOCK_PAGE;
	vdev->has_raw = vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_RAW_PACKET;
	vdev->has_rss = vdev->has_raw &&
			(vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_RSS);
	vdev->has_xrc = vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_XRC;
	err = vrnic_eqs_init(vdev);
	if (err)
		goto err_dm_uninit;
	err = vrnic_odp_init(vdev);
	if (err)
		goto err_eqs_uninit;
	return 0;

err_eqs_uninit:
	vrnic_eqs_uninit(vdev);
err_dm_uninit:
	vrnic_dm_uninit(vdev);
err_db_unmap:
	pci_iounmap(pdev, vdev->db);
	vdev->db = NULL;
	return err;
}

static void vrnic_objects_uninit(struct vrnic_dev *vdev)
{
	vrnic_odp_uninit(vdev);
	vrnic_eqs_uninit(vdev);
	vrnic_dm_uninit(vdev);
	pci_iounmap(vdev->pdev, vdev->db);
	vdev->db = NULL;
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
	mutex_init(&vdev->mr_query_lock);
	ida_init(&vdev->db_ida);
	xa_init(&vdev->cq_xa);
	xa_init(&vdev->qp_xa);
	xa_init(&vdev->srq_xa);
	xa_init(&vdev->wq_xa);
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

	err = vrnic_objects_init(vdev);
	if (err)
		goto err_admin_irq_uninit;

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
	ida_destroy(&vdev->db_ida);
	ib_dealloc_device(&vdev->ibdev);
	return err;
}

static void vrnic_remove_dev(struct pci_dev *pdev)
{
	struct vrnic_dev *vdev = pci_get_drvdata(pdev);

	vrnic_debugfs_uninit(vdev);
	vrnic_objects_uninit(vdev);
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
	WARN_ON(!xa_empty(&vdev->cq_xa) || !xa_empty(&vdev->qp_xa) ||
		!xa_empty(&vdev->srq_xa) || !xa_empty(&vdev->wq_xa));
	ida_destroy(&vdev->db_ida);
	ib_dealloc_device(&vdev->ibdev);
}

/* ---- stage 3: the ib_device ---- */

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
	ibdev->num_comp_vectors = vdev->num_eqs;
	ibdev->dev.parent = &vdev->pdev->dev;
	strscpy(ibdev->node_desc, "vrnic RoCEv2 RNIC", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &vrnic_dev_ops);
	ibdev->use_cq_dim = cq_dim;
	if (vdev->has_odp)
		ib_set_device_ops(ibdev, &vrnic_odp_ops);
	if (vdev->has_raw)
		ib_set_device_ops(ibdev, &vrnic_flow_ops);
	if (vdev->has_rss)
		ib_set_device_ops(ibdev, &vrnic_rss_ops);
	if (vdev->has_xrc)
		ib_set_device_ops(ibdev, &vrnic_xrc_ops);
	if (vdev->dm_size)
		ib_set_device_ops(ibdev, &vrnic_dm_ops);
	ibdev->driver_def = vrnic_uapi_defs;

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
