/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic: driver for the emulated vrnic RoCEv2 RNIC. One PCI function with
 * two personalities: an Ethernet net_device and a RoCE ib_device on top of it.
 */
#ifndef VRNIC_H
#define VRNIC_H

#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include "vrnic_hw_defs.h"
#include "vrnic_cmdq.h"
#include "vrnic_cmd.h"

#define VRNIC_DRV_NAME		"vrnic"
#define VRNIC_PORT		1	/* the only port */
#define VRNIC_IRQ_NAME_LEN	48

/* Async event queue (vector 0, shared with admin completions) */
#define VRNIC_AEQ_LOG_DEPTH	6

struct vrnic_aeq {
	struct vrnic_aeqe *ring;
	dma_addr_t dma;
	u16 depth;
	u8 log_depth;
	u16 ci;			/* free-running; only the vector 0 handler */
};

struct vrnic_dev {
	struct ib_device ibdev;	/* first: ib_alloc_device() requires it */
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

	/* Answers to QUERY_DEVICE / QUERY_PORT at probe (static limits) */
	struct vrnic_cmd_dev_attr dev_attr;
	struct vrnic_cmd_port_attr port_attr;

	/* Owned from vrnic_netdev_init() to vrnic_netdev_uninit() */
	struct net_device *netdev;

	/*
	 * Protects the flags below. Taken by the admin IRQ handler (AEQ
	 * events), so always with interrupts disabled. The port is ACTIVE
	 * when link_up && netdev_up.
	 */
	spinlock_t event_lock;
	bool link_up;		/* the device's Ethernet link */
	bool port_active;	/* last port state reported to ib_core */
	bool netdev_live;	/* netdev registered: carrier may be changed */
	bool netdev_up;		/* netdev opened (between open and stop) */
	bool ib_live;		/* ibdev registered: events may be dispatched */

	struct dentry *debugfs;
};

struct vrnic_ucontext {
	struct ib_ucontext ibucontext;
};

static inline struct vrnic_dev *to_vdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vrnic_dev, ibdev);
}

static inline struct vrnic_ucontext *
to_vucontext(struct ib_ucontext *ibucontext)
{
	return container_of(ibucontext, struct vrnic_ucontext, ibucontext);
}

static inline u32 vrnic_reg_read(struct vrnic_dev *vdev, u32 reg)
{
	return readl(vdev->regs + reg);
}

static inline void vrnic_reg_write(struct vrnic_dev *vdev, u32 reg, u32 val)
{
	writel(val, vdev->regs + reg);
}

/* vrnic_eq.c */
int vrnic_aeq_init(struct vrnic_dev *vdev);
void vrnic_aeq_uninit(struct vrnic_dev *vdev);
int vrnic_admin_irq_init(struct vrnic_dev *vdev);
void vrnic_admin_irq_uninit(struct vrnic_dev *vdev);
void vrnic_link_init(struct vrnic_dev *vdev);
void vrnic_netdev_set_up(struct vrnic_dev *vdev, bool up);
void vrnic_netdev_set_live(struct vrnic_dev *vdev, bool live);
bool vrnic_port_active(struct vrnic_dev *vdev);
void vrnic_ib_set_live(struct vrnic_dev *vdev, bool live, bool seen_active);

/* vrnic_netdev.c */
int vrnic_netdev_init(struct vrnic_dev *vdev);
void vrnic_netdev_uninit(struct vrnic_dev *vdev);

/* vrnic_verbs.c */
int vrnic_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		       struct ib_udata *udata);
int vrnic_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *attr);
int vrnic_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
int vrnic_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable);
enum rdma_link_layer vrnic_get_link_layer(struct ib_device *ibdev, u32 port);
void vrnic_get_dev_fw_str(struct ib_device *ibdev, char *str);
int vrnic_add_gid(const struct ib_gid_attr *attr, void **context);
int vrnic_del_gid(const struct ib_gid_attr *attr, void **context);
int vrnic_alloc_ucontext(struct ib_ucontext *ibucontext,
			 struct ib_udata *udata);
void vrnic_dealloc_ucontext(struct ib_ucontext *ibucontext);
void vrnic_disassociate_ucontext(struct ib_ucontext *ibucontext);
struct rdma_hw_stats *vrnic_alloc_hw_device_stats(struct ib_device *ibdev);
int vrnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

#endif /* VRNIC_H */
