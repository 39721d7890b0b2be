// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic RDMA debugfs: in the function's directory the Ethernet driver made
 * (/sys/kernel/debug/vrnic/<pci-bdf>/), the device's own view of its GID
 * table (gid_table), the object counts (res_count) and an MR's translation
 * (mr_query: write a key, read its pages).
 */

#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "vrnic.h"

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

	err = vrnic_cmd_query_gid(vdev->cmdq, index, &entry);
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
	err = vrnic_cmd_query_mr(q->vdev->cmdq, q->key, first, count, q->buf,
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

static const struct {
	const char *name;
	umode_t mode;
	const struct file_operations *fops;
} vrnic_debugfs_files[] = {
	{ "gid_table", 0400, &vrnic_gid_table_fops },
	{ "res_count", 0400, &vrnic_res_count_fops },
	{ "mr_query", 0600, &vrnic_mr_query_fops },
};

/* Our files, in the Ethernet driver's directory of the function. */
void vrnic_debugfs_init(struct vrnic_dev *vdev)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vrnic_debugfs_files); i++)
		debugfs_create_file(vrnic_debugfs_files[i].name,
				    vrnic_debugfs_files[i].mode, vdev->debugfs,
				    vdev, vrnic_debugfs_files[i].fops);
}

/* Waits for readers that are still running a file's show(). */
void vrnic_debugfs_uninit(struct vrnic_dev *vdev)
{
	unsigned int i;

	/* No directory (debugfs off): debugfs_lookup() needs a real parent. */
	if (IS_ERR_OR_NULL(vdev->debugfs))
		return;
	for (i = 0; i < ARRAY_SIZE(vrnic_debugfs_files); i++)
		debugfs_lookup_and_remove(vrnic_debugfs_files[i].name,
					  vdev->debugfs);
}
