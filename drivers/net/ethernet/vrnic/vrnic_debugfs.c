// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic debugfs: /sys/kernel/debug/vrnic/<pci-bdf>/, one directory per
 * function, with the admin queue's counters (cmdq_stats). The RDMA driver
 * adds its own files to the same directory (vrnic_aux_dev.debugfs).
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "vrnic_core.h"

static struct dentry *vrnic_debugfs_root;

static int vrnic_cmdq_stats_show(struct seq_file *s, void *v)
{
	struct vrnic_core *core = s->private;
	struct vrnic_cmdq_stats *st = &core->cmdq.stats;

	seq_printf(s, "submitted %lld\n", atomic64_read(&st->submitted));
	seq_printf(s, "completed %lld\n", atomic64_read(&st->completed));
	seq_printf(s, "errors %lld\n", atomic64_read(&st->errors));
	seq_printf(s, "timeouts %lld\n", atomic64_read(&st->timeouts));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrnic_cmdq_stats);

void vrnic_debugfs_init(struct vrnic_core *core)
{
	core->debugfs = debugfs_create_dir(pci_name(core->pdev),
					   vrnic_debugfs_root);
	debugfs_create_file("cmdq_stats", 0400, core->debugfs, core,
			    &vrnic_cmdq_stats_fops);
}

/* Waits for readers that are still running a file's show(). */
void vrnic_debugfs_uninit(struct vrnic_core *core)
{
	debugfs_remove_recursive(core->debugfs);
	core->debugfs = NULL;
}

void vrnic_debugfs_register(void)
{
	vrnic_debugfs_root = debugfs_create_dir(VRNIC_DRV_NAME, NULL);
}

void vrnic_debugfs_unregister(void)
{
	debugfs_remove_recursive(vrnic_debugfs_root);
}
