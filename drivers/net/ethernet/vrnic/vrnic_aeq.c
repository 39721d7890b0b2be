// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic async event queue and the admin interrupt (MSI-X vector 0, shared by
 * admin completions and async events), plus the port state they drive.
 *
 * Port state: the port is ACTIVE when the device's Ethernet link is up and
 * the net_device is up (as rxe, erdma and mlx5 RoCE ports do). The link
 * comes from VRNIC_REG_DEV_STS at probe and from PORT_ACTIVE/PORT_DOWN async
 * events after that; it also drives the net_device's carrier. Every change
 * of the port state goes to the RDMA driver's handler while it asks for
 * port events (vrnic_core_port_events()); every event but the port's goes
 * to that handler too (vrnic_api.h).
 */

#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/export.h>
#include <linux/interrupt.h>
#include <linux/lockdep.h>
#include <linux/log2.h>

#include "vrnic_core.h"

static void vrnic_port_event(struct vrnic_core *core, bool active)
{
	struct vrnic_event_handler *h = core->rdma_events;

	lockdep_assert_held(&core->event_lock);
	if (core->port_events && h)
		h->port_event(h, active);
}

static void vrnic_port_update_locked(struct vrnic_core *core)
{
	bool active;

	lockdep_assert_held(&core->event_lock);

	active = core->link_up && core->netdev_up;
	if (active == core->port_active)
		return;

	core->port_active = active;
	vrnic_port_event(core, active);
}

/*
 * The net_device was opened (ndo_open succeeded) or is being stopped. Our
 * own flag rather than netif_running(), which is already true during a
 * ndo_open that may still fail.
 */
void vrnic_netdev_set_up(struct vrnic_core *core, bool up)
{
	unsigned long flags;

	spin_lock_irqsave(&core->event_lock, flags);
	core->netdev_up = up;
	vrnic_port_update_locked(core);
	spin_unlock_irqrestore(&core->event_lock, flags);
}

/*
 * The net_device was registered (live) or is about to be unregistered: from
 * now on (until then) the link drives its carrier.
 */
void vrnic_netdev_set_live(struct vrnic_core *core, bool live)
{
	unsigned long flags;

	spin_lock_irqsave(&core->event_lock, flags);
	core->netdev_live = live;
	if (live) {
		if (core->link_up)
			netif_carrier_on(core->netdev);
		else
			netif_carrier_off(core->netdev);
	}
	spin_unlock_irqrestore(&core->event_lock, flags);
}

bool vrnic_core_port_state(struct vrnic_core *core, bool *link_up)
{
	unsigned long flags;
	bool active;

	spin_lock_irqsave(&core->event_lock, flags);
	active = core->port_active;
	if (link_up)
		*link_up = core->link_up;
	spin_unlock_irqrestore(&core->event_lock, flags);

	return active;
}
EXPORT_SYMBOL_GPL(vrnic_core_port_state);

void vrnic_core_port_events(struct vrnic_core *core, bool live,
			    bool seen_active)
{
	unsigned long flags;

	spin_lock_irqsave(&core->event_lock, flags);
	core->port_events = live;
	/* At worst a redundant event, if the change raced ib_core's query. */
	if (live && core->port_active != seen_active)
		vrnic_port_event(core, core->port_active);
	spin_unlock_irqrestore(&core->event_lock, flags);
}
EXPORT_SYMBOL_GPL(vrnic_core_port_events);

/*
 * The handler is read once per event in the admin IRQ handler, so clearing
 * it and then waiting for that handler leaves no callback running.
 */
void vrnic_core_set_event_handler(struct vrnic_core *core,
				  struct vrnic_event_handler *h)
{
	unsigned long flags;

	spin_lock_irqsave(&core->event_lock, flags);
	WRITE_ONCE(core->rdma_events, h);
	spin_unlock_irqrestore(&core->event_lock, flags);
	if (!h)
		synchronize_irq(pci_irq_vector(core->pdev, VRNIC_VEC_ADMIN));
}
EXPORT_SYMBOL_GPL(vrnic_core_set_event_handler);

static void vrnic_link_update_locked(struct vrnic_core *core, bool up)
{
	lockdep_assert_held(&core->event_lock);

	if (core->link_up != up)
		dev_info_ratelimited(&core->pdev->dev, "link %s\n",
				     up ? "up" : "down");
	core->link_up = up;
	if (core->netdev_live) {
		if (up)
			netif_carrier_on(core->netdev);
		else
			netif_carrier_off(core->netdev);
	}
	vrnic_port_update_locked(core);
}

/* A link change reported by the device. */
static void vrnic_link_event(struct vrnic_core *core, bool up)
{
	unsigned long flags;

	spin_lock_irqsave(&core->event_lock, flags);
	vrnic_link_update_locked(core, up);
	spin_unlock_irqrestore(&core->event_lock, flags);
}

/*
 * Sample the link once the AEQ is live: a change after this read arrives as
 * an event, and events are handled in order, so the state converges. Read
 * and update under event_lock: an event handled before is already in
 * DEV_STS (the device updates it before posting the event), one handled
 * after is applied after, so an older DEV_STS never overwrites an event.
 */
void vrnic_link_init(struct vrnic_core *core)
{
	unsigned long flags;
	bool up;

	spin_lock_irqsave(&core->event_lock, flags);
	up = vrnic_reg_read(core, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_LINK_UP;
	vrnic_link_update_locked(core, up);
	spin_unlock_irqrestore(&core->event_lock, flags);
}

/*
 * The port's events are the Ethernet function's; every other event belongs
 * to the RDMA function, which also reports the ones it does not know.
 */
static void vrnic_aeq_handle(struct vrnic_core *core, u32 event,
			     const struct vrnic_aeqe *aeqe)
{
	struct vrnic_event_handler *h;
	u32 data = le32_to_cpu(aeqe->data);

	switch (event) {
	case VRNIC_AEQ_EV_PORT_ACTIVE:
	case VRNIC_AEQ_EV_PORT_DOWN:
		if (data != VRNIC_PORT_NUM) {
			dev_warn_ratelimited(&core->pdev->dev,
					     "async event %u for unknown port %u\n",
					     event, data);
			return;
		}
		vrnic_link_event(core, event == VRNIC_AEQ_EV_PORT_ACTIVE);
		break;
	default:
		h = READ_ONCE(core->rdma_events);
		if (h)
			h->async_event(h, event, aeqe);
		else
			dev_dbg_ratelimited(&core->pdev->dev,
					    "async event %u (data %#x) with no RDMA driver bound\n",
					    event, data);
		break;
	}
}

/* Only the vector 0 handler calls this, so aeq->ci needs no lock. */
static void vrnic_aeq_process(struct vrnic_core *core)
{
	struct vrnic_aeq *aeq = &core->aeq;
	unsigned int n;

	/*
	 * At most one ring's worth per interrupt; if more is pending, the
	 * arm below raises the vector again at once.
	 */
	for (n = 0; n < aeq->depth; n++) {
		struct vrnic_aeqe *aeqe =
			&aeq->ring[vrnic_idx_slot(aeq->ci, aeq->log_depth)];
		u32 phase = vrnic_idx_phase(aeq->ci, aeq->log_depth);
		u32 owner, event;

		/* The device writes the owner word last. */
		owner = le32_to_cpu(READ_ONCE(aeqe->owner));
		if (FIELD_GET(VRNIC_OWNER_PHASE, owner) != phase)
			break;
		/* Read the event only after its phase matched. */
		dma_rmb();

		event = FIELD_GET(VRNIC_AEQE_EVENT_MASK,
				  le32_to_cpu(aeqe->event));
		vrnic_aeq_handle(core, event, aeqe);
		aeq->ci++;
	}

	vrnic_reg_write(core, VRNIC_REG_AEQ_CI,
			VRNIC_AEQ_CI_ARM |
			FIELD_PREP(VRNIC_INDEX_MASK, aeq->ci));
}

int vrnic_aeq_init(struct vrnic_core *core)
{
	u32 cap = vrnic_reg_read(core, VRNIC_REG_CAP_AQ);
	u32 max_log = FIELD_GET(VRNIC_CAP_AQ_AEQ_LOG_DEPTH_MASK, cap);
	struct vrnic_aeq *aeq = &core->aeq;

	if (!max_log) {
		dev_err(&core->pdev->dev,
			"device reports no async event queue (CAP_AQ %#x)\n",
			cap);
		return -EINVAL;
	}

	aeq->log_depth = min3(max_log, (u32)VRNIC_AEQ_MAX_LOG_DEPTH,
			      (u32)VRNIC_AEQ_LOG_DEPTH);
	aeq->depth = 1U << aeq->log_depth;
	aeq->ci = 0;
	/* Zeroed: every entry starts with phase 0 (old). */
	aeq->ring = dma_alloc_coherent(&core->pdev->dev,
				       aeq->depth * VRNIC_AEQE_SIZE, &aeq->dma,
				       GFP_KERNEL);
	if (!aeq->ring)
		return -ENOMEM;

	vrnic_reg_write(core, VRNIC_REG_AEQ_BASE_LO, lower_32_bits(aeq->dma));
	vrnic_reg_write(core, VRNIC_REG_AEQ_BASE_HI, upper_32_bits(aeq->dma));
	vrnic_reg_write(core, VRNIC_REG_AEQ_CFG,
			VRNIC_RING_CFG_ENABLE |
			FIELD_PREP(VRNIC_RING_CFG_LOG_DEPTH_MASK,
				   aeq->log_depth));
	/*
	 * Arm now; the vector stays masked until vrnic_admin_irq_init()
	 * requests it, and an event raised before that is delivered then.
	 */
	vrnic_reg_write(core, VRNIC_REG_AEQ_CI,
			VRNIC_AEQ_CI_ARM | FIELD_PREP(VRNIC_INDEX_MASK, 0));
	return 0;
}

void vrnic_aeq_uninit(struct vrnic_core *core)
{
	struct vrnic_aeq *aeq = &core->aeq;

	/* Back to idle before the write returns: no DMA after this. */
	vrnic_reg_write(core, VRNIC_REG_AEQ_CFG, 0);
	vrnic_reg_read(core, VRNIC_REG_AEQ_CFG);	/* flush the posted write */
	dma_free_coherent(&core->pdev->dev, aeq->depth * VRNIC_AEQE_SIZE,
			  aeq->ring, aeq->dma);
}

static irqreturn_t vrnic_admin_irq_handler(int irq, void *data)
{
	struct vrnic_core *core = data;

	vrnic_cmdq_handle_irq(&core->cmdq);
	vrnic_aeq_process(core);
	return IRQ_HANDLED;
}

int vrnic_admin_irq_init(struct vrnic_core *core)
{
	snprintf(core->admin_irq_name, sizeof(core->admin_irq_name),
		 "vrnic-admin@%s", pci_name(core->pdev));
	return request_irq(pci_irq_vector(core->pdev, VRNIC_VEC_ADMIN),
			   vrnic_admin_irq_handler, 0, core->admin_irq_name,
			   core);
}

void vrnic_admin_irq_uninit(struct vrnic_core *core)
{
	free_irq(pci_irq_vector(core->pdev, VRNIC_VEC_ADMIN), core);
}
