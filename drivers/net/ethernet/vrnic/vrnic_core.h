/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic Ethernet driver: the PCI function, its admin and async event
 * queues, the net_device, and the auxiliary device of the RDMA function.
 */
#ifndef VRNIC_CORE_H
#define VRNIC_CORE_H

#include <linux/io.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "vrnic_api.h"

#define VRNIC_DRV_NAME		"vrnic"

/* Async event queue (vector 0, shared with admin completions) */
#define VRNIC_AEQ_LOG_DEPTH	6

struct vrnic_aeq {
	struct vrnic_aeqe *ring;
	dma_addr_t dma;
	u16 depth;
	u8 log_depth;
	u16 ci;			/* free-running; only the vector 0 handler */
};

struct vrnic_core {
	struct pci_dev *pdev;
	void __iomem *regs;	/* BAR0 */

	/* Read from capability registers at probe */
	u16 num_vectors;	/* MSI-X vectors allocated (all of them) */
	u8 num_comp;		/* completion EQ vectors */
	u8 db_page_shift;
	u16 db_num_pages;
	u32 eth_max_mtu;
	u8 eth_max_log_depth;

	struct vrnic_cmdq cmdq;
	struct vrnic_aeq aeq;
	char admin_irq_name[VRNIC_IRQ_NAME_LEN];

	/* Owned from vrnic_netdev_init() to vrnic_netdev_uninit() */
	struct net_device *netdev;
	/* The RDMA function's auxiliary device, while it exists */
	struct vrnic_aux_dev *rdma;
	/* Its event handler: READ_ONCE in the admin IRQ handler */
	struct vrnic_event_handler *rdma_events;

	/*
	 * Protects the flags below. Taken by the admin IRQ handler (AEQ
	 * events), so always with interrupts disabled. The port is ACTIVE
	 * when link_up && netdev_up.
	 */
	spinlock_t event_lock;
	bool link_up;		/* the device's Ethernet link */
	bool port_active;	/* last port state computed */
	bool netdev_live;	/* netdev registered: carrier may be changed */
	bool netdev_up;		/* netdev opened (between open and stop) */
	bool port_events;	/* report port changes to rdma_events */

	struct dentry *debugfs;
};

static inline u32 vrnic_reg_read(struct vrnic_core *core, u32 reg)
{
	return readl(core->regs + reg);
}

static inline void vrnic_reg_write(struct vrnic_core *core, u32 reg, u32 val)
{
	writel(val, core->regs + reg);
}

/* vrnic_aeq.c */
int vrnic_aeq_init(struct vrnic_core *core);
void vrnic_aeq_uninit(struct vrnic_core *core);
int vrnic_admin_irq_init(struct vrnic_core *core);
void vrnic_admin_irq_uninit(struct vrnic_core *core);
void vrnic_link_init(struct vrnic_core *core);
void vrnic_netdev_set_up(struct vrnic_core *core, bool up);
void vrnic_netdev_set_live(struct vrnic_core *core, bool live);

/* vrnic_netdev.c */
int vrnic_netdev_init(struct vrnic_core *core);
void vrnic_netdev_uninit(struct vrnic_core *core);

/* vrnic_debugfs.c */
void vrnic_debugfs_register(void);
void vrnic_debugfs_unregister(void);
void vrnic_debugfs_init(struct vrnic_core *core);
void vrnic_debugfs_uninit(struct vrnic_core *core);

#endif /* VRNIC_CORE_H */
