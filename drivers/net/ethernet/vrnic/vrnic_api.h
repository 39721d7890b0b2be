/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the vrnic Ethernet driver (vrnic.ko) offers the RDMA driver
 * (vrnic_rdma.ko) bound to its auxiliary device "vrnic.rdma".
 *
 * The Ethernet driver owns the PCI function: BAR0, the reset, every MSI-X
 * vector, the admin queue, the async event queue and the net_device. It
 * creates the auxiliary device once the net_device is registered and
 * deletes it before the net_device goes, so the RDMA driver's ib_device
 * lives within the net_device's lifetime. The RDMA driver maps BARs 2 and
 * 5 itself, requests the completion vectors (VRNIC_VEC_COMP_FIRST ..) and
 * submits its own commands on the admin queue.
 */
#ifndef VRNIC_API_H
#define VRNIC_API_H

#include <linux/auxiliary_bus.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/types.h>

#include "vrnic_hw_defs.h"
#include "vrnic_cmdq.h"
#include "vrnic_eth_cmd.h"

#define VRNIC_AUX_RDMA_NAME	"rdma"	/* the device is "vrnic.rdma.<n>" */
/* "vrnic-<use>@<pci-bdf>", the names of both drivers' IRQs */
#define VRNIC_IRQ_NAME_LEN	48

struct vrnic_core;

/*
 * The RDMA function's side of the async event queue. Both callbacks run in
 * the admin interrupt handler (hard IRQ) and must not sleep.
 */
struct vrnic_event_handler {
	/*
	 * An event about an RDMA object (CQ, QP, SRQ, WQ) or a page fault:
	 * every event but the port's. @aeqe is the entry in the ring, valid
	 * for the call only.
	 */
	void (*async_event)(struct vrnic_event_handler *h, u32 event,
			    const struct vrnic_aeqe *aeqe);
	/* The port became active (link up and net_device up) or not. */
	void (*port_event)(struct vrnic_event_handler *h, bool active);
};

/* Read-only for the RDMA driver. */
struct vrnic_aux_dev {
	struct auxiliary_device adev;
	struct vrnic_core *core;	/* for the calls below */
	struct pci_dev *pdev;		/* the DMA device; vectors, BARs */
	void __iomem *regs;		/* BAR0 registers: EQ doorbells */
	struct vrnic_cmdq *cmdq;
	struct net_device *netdev;	/* the port's net_device */
	struct dentry *debugfs;		/* this function's debugfs directory */
	u8 num_comp;			/* completion vectors (CAP_VEC) */
	u8 db_page_shift;		/* CAP_DB */
	u16 db_num_pages;
};

static inline struct vrnic_aux_dev *
to_vrnic_aux_dev(struct auxiliary_device *adev)
{
	return container_of(adev, struct vrnic_aux_dev, adev);
}

/*
 * Install (@h) or remove (NULL) the RDMA function's event handler. After
 * removal returns, no callback runs or will run.
 */
void vrnic_core_set_event_handler(struct vrnic_core *core,
				  struct vrnic_event_handler *h);

/*
 * Start (@live) or stop reporting port changes to the handler. Port events
 * need ib_core's cache, which exists only while the ib_device is
 * registered. @seen_active is vrnic_core_port_state() sampled before
 * registration; a change since then is reported at once.
 */
void vrnic_core_port_events(struct vrnic_core *core, bool live,
			    bool seen_active);

/*
 * The port state as last computed and reported: true when the link is up
 * and the net_device is up. @link_up (if not NULL) gets the link alone.
 */
bool vrnic_core_port_state(struct vrnic_core *core, bool *link_up);

#endif /* VRNIC_API_H */
