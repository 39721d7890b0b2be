// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic async event queue and the admin interrupt (MSI-X vector 0, shared by
 * admin completions and async events), plus the port state they drive.
 *
 * Port state: the port is ACTIVE when the device's Ethernet link is up and
 * the net_device is up (as rxe, erdma and mlx5 RoCE ports do). The link
 * comes from VRNIC_REG_DEV_STS at probe and from PORT_ACTIVE/PORT_DOWN async
 * events after that; it also drives the net_device's carrier. Every change
 * of the port state is reported to ib_core once the ib_device is registered.
 */

#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/lockdep.h>

#include "vrnic.h"

static void vrnic_dispatch_port_event(struct vrnic_dev *vdev, bool active)
{
	struct ib_event ev = {
		.device = &vdev->ibdev,
		.element.port_num = VRNIC_PORT,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	/* Allocates with GFP_ATOMIC and defers to a work item: IRQ-safe. */
	ib_dispatch_event(&ev);
}

static void vrnic_port_update_locked(struct vrnic_dev *vdev)
{
	bool active;

	lockdep_assert_held(&vdev->event_lock);

	active = vdev->link_up && vdev->netdev_up;
	if (active == vdev->port_active)
		return;

	vdev->port_active = active;
	if (vdev->ib_live)
		vrnic_dispatch_port_event(vdev, active);
}

/*
 * The net_device was opened (ndo_open succeeded) or is being stopped. Our
 * own flag rather than netif_running(), which is already true during a
 * ndo_open that may still fail.
 */
void vrnic_netdev_set_up(struct vrnic_dev *vdev, bool up)
{
	unsigned long flags;

	spin_lock_irqsave(&vdev->event_lock, flags);
	vdev->netdev_up = up;
	vrnic_port_update_locked(vdev);
	spin_unlock_irqrestore(&vdev->event_lock, flags);
}

/*
 * The net_device was registered (live) or is about to be unregistered: from
 * now on (until then) the link drives its carrier.
 */
void vrnic_netdev_set_live(struct vrnic_dev *vdev, bool live)
{
	unsigned long flags;

	spin_lock_irqsave(&vdev->event_lock, flags);
	vdev->netdev_live = live;
	if (live) {
		if (vdev->link_up)
			netif_carrier_on(vdev->netdev);
		else
			netif_carrier_off(vdev->netdev);
	}
	spin_unlock_irqrestore(&vdev->event_lock, flags);
}

/* The port state as last computed (and reported, once ib_live is set). */
bool vrnic_port_active(struct vrnic_dev *vdev)
{
	unsigned long flags;
	bool active;

	spin_lock_irqsave(&vdev->event_lock, flags);
	active = vdev->port_active;
	spin_unlock_irqrestore(&vdev->event_lock, flags);

	return active;
}

/*
 * Port events need ib_core's cache, which exists only while the ib_device is
 * registered: set live after ib_register_device() and clear it before
 * ib_unregister_device(). @seen_active is vrnic_port_active() sampled before
 * registration; a change since then may have raced with ib_core's first
 * query_port and is reported now (at worst a redundant event).
 */
void vrnic_ib_set_live(struct vrnic_dev *vdev, bool live, bool seen_active)
{
	unsigned long flags;

	spin_lock_irqsave(&vdev->event_lock, flags);
	vdev->ib_live = live;
	if (live && vdev->port_active != seen_active)
		vrnic_dispatch_port_event(vdev, vdev->port_active);
	spin_unlock_irqrestore(&vdev->event_lock, flags);
}

/* A link change reported by the device. */
static void vrnic_link_event(struct vrnic_dev *vdev, bool up)
{
	unsigned long flags;

	spin_lock_irqsave(&vdev->event_lock, flags);
	if (vdev->link_up != up)
		dev_info_ratelimited(&vdev->pdev->dev, "link %s\n",
				     up ? "up" : "down");
	vdev->link_up = up;
	if (vdev->netdev_live) {
		if (up)
			netif_carrier_on(vdev->netdev);
		else
			netif_carrier_off(vdev->netdev);
	}
	vrnic_port_update_locked(vdev);
	spin_unlock_irqrestore(&vdev->event_lock, flags);
}

/*
 * Sample the link once the AEQ is live: a change after this read arrives as
 * an event, and events are handled in order, so the state converges.
 */
void vrnic_link_init(struct vrnic_dev *vdev)
{
	bool up = vrnic_reg_read(vdev, VRNIC_REG_DEV_STS) &
		  VRNIC_DEV_STS_LINK_UP;

	vrnic_link_event(vdev, up);
}

static void vrnic_aeq_handle(struct vrnic_dev *vdev, u32 event, u32 data)
{
	switch (event) {
	case VRNIC_AEQ_EV_PORT_ACTIVE:
	case VRNIC_AEQ_EV_PORT_DOWN:
		if (data != VRNIC_PORT) {
			dev_warn_ratelimited(&vdev->pdev->dev,
					     "async event %u for unknown port %u\n",
					     event, data);
			return;
		}
		vrnic_link_event(vdev, event == VRNIC_AEQ_EV_PORT_ACTIVE);
		break;
	default:
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "unknown async event %u (data %#x)\n",
				     event, data);
		break;
	}
}

/* Only the vector 0 handler calls this, so aeq->ci needs no lock. */
static void vrnic_aeq_process(struct vrnic_dev *vdev)
{
	struct vrnic_aeq *aeq = &vdev->aeq;
	unsigned int n;

	/*
	 * At most one ring's worth per interrupt; if more is pending, the
	 * arm below raises the vector again at once.
	 */
	for (n = 0; n < aeq->depth; n++) {
		struct vrnic_aeqe *aeqe = &aeq->ring[aeq->ci & (aeq->depth - 1)];
		u32 phase = !((aeq->ci >> aeq->log_depth) & 1);
		u32 owner;

		/* The device writes the owner word last. */
		owner = le32_to_cpu(READ_ONCE(aeqe->owner));
		if (FIELD_GET(VRNIC_OWNER_PHASE, owner) != phase)
			break;
		/* Read the event only after its phase matched. */
		dma_rmb();

		vrnic_aeq_handle(vdev, le32_to_cpu(aeqe->event),
				 le32_to_cpu(aeqe->data));
		aeq->ci++;
	}

	vrnic_reg_write(vdev, VRNIC_REG_AEQ_CI,
			VRNIC_AEQ_CI_ARM |
			FIELD_PREP(VRNIC_INDEX_MASK, aeq->ci));
}

int vrnic_aeq_init(struct vrnic_dev *vdev)
{
	u32 cap = vrnic_reg_read(vdev, VRNIC_REG_CAP_AQ);
	u32 max_log = FIELD_GET(VRNIC_CAP_AQ_AEQ_LOG_DEPTH_MASK, cap);
	struct vrnic_aeq *aeq = &vdev->aeq;

	if (!max_log) {
		dev_err(&vdev->pdev->dev,
			"device reports no async event queue (CAP_AQ %#x)\n",
			cap);
		return -EINVAL;
	}

	aeq->log_depth = min3(max_log, (u32)VRNIC_AEQ_MAX_LOG_DEPTH,
			      (u32)VRNIC_AEQ_LOG_DEPTH);
	aeq->depth = 1U << aeq->log_depth;
	aeq->ci = 0;
	/* Zeroed: every entry starts with phase 0 (old). */
	aeq->ring = dma_alloc_coherent(&vdev->pdev->dev,
				       aeq->depth * VRNIC_AEQE_SIZE, &aeq->dma,
				       GFP_KERNEL);
	if (!aeq->ring)
		return -ENOMEM;

	vrnic_reg_write(vdev, VRNIC_REG_AEQ_BASE_LO, lower_32_bits(aeq->dma));
	vrnic_reg_write(vdev, VRNIC_REG_AEQ_BASE_HI, upper_32_bits(aeq->dma));
	vrnic_reg_write(vdev, VRNIC_REG_AEQ_CFG,
			VRNIC_RING_CFG_ENABLE |
			FIELD_PREP(VRNIC_RING_CFG_LOG_DEPTH_MASK,
				   aeq->log_depth));
	/*
	 * Arm now; the vector stays masked until vrnic_admin_irq_init()
	 * requests it, and an event raised before that is delivered then.
	 */
	vrnic_reg_write(vdev, VRNIC_REG_AEQ_CI,
			VRNIC_AEQ_CI_ARM | FIELD_PREP(VRNIC_INDEX_MASK, 0));
	return 0;
}

void vrnic_aeq_uninit(struct vrnic_dev *vdev)
{
	struct vrnic_aeq *aeq = &vdev->aeq;

	/* Back to idle before the write returns: no DMA after this. */
	vrnic_reg_write(vdev, VRNIC_REG_AEQ_CFG, 0);
	vrnic_reg_read(vdev, VRNIC_REG_AEQ_CFG);	/* flush the posted write */
	dma_free_coherent(&vdev->pdev->dev, aeq->depth * VRNIC_AEQE_SIZE,
			  aeq->ring, aeq->dma);
}

static irqreturn_t vrnic_admin_irq_handler(int irq, void *data)
{
	struct vrnic_dev *vdev = data;

	vrnic_cmdq_handle_irq(&vdev->cmdq);
	vrnic_aeq_process(vdev);
	return IRQ_HANDLED;
}

int vrnic_admin_irq_init(struct vrnic_dev *vdev)
{
	snprintf(vdev->admin_irq_name, sizeof(vdev->admin_irq_name),
		 "vrnic-admin@%s", pci_name(vdev->pdev));
	return request_irq(pci_irq_vector(vdev->pdev, VRNIC_VEC_ADMIN),
			   vrnic_admin_irq_handler, 0, vdev->admin_irq_name,
			   vdev);
}

void vrnic_admin_irq_uninit(struct vrnic_dev *vdev)
{
	free_irq(pci_irq_vector(vdev->pdev, VRNIC_VEC_ADMIN), vdev);
}
