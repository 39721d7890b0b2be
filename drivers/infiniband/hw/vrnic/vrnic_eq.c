// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic async event queue and the admin interrupt (MSI-X vector 0, shared by
 * admin completions and async events), plus the port state they drive.
 *
 * Completion EQs: one per completion vector (MSI-X vectors 2..), created
 * with CREATE_EQ at probe. Each carries "CQ n was armed and has a new CQE"
 * events; its IRQ handler drains at most VRNIC_EQ_POLL_BUDGET events, calls
 * the CQs' comp_handler and re-arms with the consumer index (the device
 * raises the vector again at once if more events are pending).
 *
 * Object lookups from these handlers follow STYLE 1.8 rule (b): a bare
 * xa_load(), and destroy paths erase the object and then synchronize_irq()
 * (vrnic_sync_cq_irqs(), vrnic_sync_admin_irq()) before freeing it.
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
#include <linux/log2.h>

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

static void vrnic_link_update_locked(struct vrnic_dev *vdev, bool up)
{
	lockdep_assert_held(&vdev->event_lock);

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
}

/* A link change reported by the device. */
static void vrnic_link_event(struct vrnic_dev *vdev, bool up)
{
	unsigned long flags;

	spin_lock_irqsave(&vdev->event_lock, flags);
	vrnic_link_update_locked(vdev, up);
	spin_unlock_irqrestore(&vdev->event_lock, flags);
}

/*
 * Sample the link once the AEQ is live: a change after this read arrives as
 * an event, and events are handled in order, so the state converges. Read
 * and update under event_lock: an event handled before is already in
 * DEV_STS (the device updates it before posting the event), one handled
 * after is applied after, so an older DEV_STS never overwrites an event.
 */
void vrnic_link_init(struct vrnic_dev *vdev)
{
	unsigned long flags;
	bool up;

	spin_lock_irqsave(&vdev->event_lock, flags);
	up = vrnic_reg_read(vdev, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_LINK_UP;
	vrnic_link_update_locked(vdev, up);
	spin_unlock_irqrestore(&vdev->event_lock, flags);
}

static void vrnic_aeq_cq_event(struct vrnic_dev *vdev, u32 cqn)
{
	struct vrnic_cq *cq = xa_load(&vdev->cq_xa, cqn);
	struct ib_event ev = { .event = IB_EVENT_CQ_ERR };

	if (!cq) {
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "CQ error event for unknown cqn %u\n", cqn);
		return;
	}
	ibdev_err_ratelimited(&vdev->ibdev,
			      "CQ %u error (overrun or inaccessible ring): the CQ stopped\n",
			      cqn);
	ev.device = &vdev->ibdev;
	ev.element.cq = &cq->ibcq;
	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/* A receive WQ is a receive-only QP of the device: its QP_FATAL. */
static void vrnic_aeq_wq_fatal(struct vrnic_dev *vdev, struct vrnic_rwq *wq)
{
	struct ib_event ev = {
		.event = IB_EVENT_WQ_FATAL,
		.device = &vdev->ibdev,
		.element.wq = &wq->ibwq,
	};

	WRITE_ONCE(wq->ibwq.state, IB_WQS_ERR);
	if (wq->ibwq.event_handler)
		wq->ibwq.event_handler(&ev, wq->ibwq.wq_context);
}

static void vrnic_aeq_qp_event(struct vrnic_dev *vdev, u32 qpn,
			       enum ib_event_type type)
{
	struct vrnic_qp *qp = xa_load(&vdev->qp_xa, qpn);
	struct ib_event ev = { .event = type };
	struct vrnic_rwq *wq;

	if (!qp) {
		wq = xa_load(&vdev->wq_xa, qpn);
		if (wq && type == IB_EVENT_QP_FATAL) {
			vrnic_aeq_wq_fatal(vdev, wq);
			return;
		}
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "QP event %d for unknown qpn %u\n", type,
				     qpn);
		return;
	}
	if (type == IB_EVENT_QP_FATAL)
		WRITE_ONCE(qp->state, IB_QPS_ERR);
	ev.device = &vdev->ibdev;
	ev.element.qp = &qp->ibqp;
	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

static void vrnic_aeq_srq_event(struct vrnic_dev *vdev, u32 srqn)
{
	struct vrnic_srq *srq = xa_load(&vdev->srq_xa, srqn);
	struct ib_event ev = { .event = IB_EVENT_SRQ_LIMIT_REACHED };

	if (!srq) {
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "SRQ limit event for unknown srqn %u\n",
				     srqn);
		return;
	}
	ev.device = &vdev->ibdev;
	ev.element.srq = &srq->ibsrq;
	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

static void vrnic_aeq_handle(struct vrnic_dev *vdev, u32 event, u32 data)
{
	switch (event) {
	case VRNIC_AEQ_EV_CQ_ERR:
		vrnic_aeq_cq_event(vdev, data);
		break;
	case VRNIC_AEQ_EV_QP_FATAL:
		vrnic_aeq_qp_event(vdev, data, IB_EVENT_QP_FATAL);
		break;
	case VRNIC_AEQ_EV_QP_LAST_WQE:
		vrnic_aeq_qp_event(vdev, data, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case VRNIC_AEQ_EV_SRQ_LIMIT:
		vrnic_aeq_srq_event(vdev, data);
		break;
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
		if (event == VRNIC_AEQ_EV_PAGE_FAULT)
			vrnic_odp_fault_event(vdev, (const void *)aeqe);
		else
			vrnic_aeq_handle(vdev, event, le32_to_cpu(aeqe->data));
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

/* ---- completion EQs ---- */

static irqreturn_t vrnic_eq_irq_handler(int irq, void *data)
{
	struct vrnic_eq *eq = data;
	struct vrnic_dev *vdev = eq->vdev;
	unsigned int n;

	for (n = 0; n < VRNIC_EQ_POLL_BUDGET; n++) {
		struct vrnic_eqe *eqe =
			&eq->ring[vrnic_idx_slot(eq->ci, eq->log_depth)];
		u32 phase = vrnic_idx_phase(eq->ci, eq->log_depth);
		struct vrnic_cq *cq;
		u32 owner, cqn;

		/* The device writes the owner word last. */
		owner = le32_to_cpu(READ_ONCE(eqe->owner));
		if (FIELD_GET(VRNIC_OWNER_PHASE, owner) != phase)
			break;
		/* Read the event only after its phase matched. */
		dma_rmb();

		cqn = le32_to_cpu(eqe->cqn);
		eq->ci++;
		cq = xa_load(&vdev->cq_xa, cqn);
		if (!cq) {
			/* Destroyed with an event in flight: harmless. */
			dev_dbg_ratelimited(&vdev->pdev->dev,
					    "EQ %u: event for unknown cqn %u\n",
					    eq->eqn, cqn);
			continue;
		}
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}

	/* If more events are pending, the arm raises the vector at once. */
	vrnic_reg_write(vdev, VRNIC_REG_EQ_CI(eq->eqn),
			VRNIC_AEQ_CI_ARM | FIELD_PREP(VRNIC_INDEX_MASK, eq->ci));
	return IRQ_HANDLED;
}

static int vrnic_eq_init_one(struct vrnic_dev *vdev, struct vrnic_eq *eq,
			     u32 index)
{
	u32 vector = VRNIC_VEC_COMP_FIRST + index;
	int err;

	eq->vdev = vdev;
	eq->log_depth = clamp_t(u32, order_base_2(vdev->dev_attr.max_cq),
				VRNIC_EQ_MIN_LOG_DEPTH, VRNIC_EQ_MAX_LOG_DEPTH);
	eq->depth = 1U << eq->log_depth;
	eq->ci = 0;
	/* Zeroed: every entry starts with phase 0 (old). */
	eq->ring = dma_alloc_coherent(&vdev->pdev->dev,
				      eq->depth * VRNIC_EQE_SIZE, &eq->dma,
				      GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;

	eq->irq = pci_irq_vector(vdev->pdev, vector);
	snprintf(eq->irq_name, sizeof(eq->irq_name), "vrnic-comp%u@%s", index,
		 pci_name(vdev->pdev));
	err = request_irq(eq->irq, vrnic_eq_irq_handler, 0, eq->irq_name, eq);
	if (err)
		goto err_free_ring;

	err = vrnic_cmd_create_eq(&vdev->cmdq, eq->dma, eq->log_depth, vector,
				  &eq->eqn);
	if (err)
		goto err_free_irq;

	/* Arm: the first CQ event raises the vector. */
	vrnic_reg_write(vdev, VRNIC_REG_EQ_CI(eq->eqn),
			VRNIC_AEQ_CI_ARM | FIELD_PREP(VRNIC_INDEX_MASK, 0));
	return 0;

err_free_irq:
	free_irq(eq->irq, eq);
err_free_ring:
	dma_free_coherent(&vdev->pdev->dev, eq->depth * VRNIC_EQE_SIZE,
			  eq->ring, eq->dma);
	return err;
}

static void vrnic_eq_uninit_one(struct vrnic_dev *vdev, struct vrnic_eq *eq)
{
	int err;

	err = vrnic_cmd_destroy(&vdev->cmdq, VRNIC_AQ_OP_DESTROY_EQ, eq->eqn);
	free_irq(eq->irq, eq);
	/* A device that did not confirm may still write the ring: leak it. */
	if (err) {
		dev_warn(&vdev->pdev->dev, "DESTROY_EQ %u failed (%d)\n",
			 eq->eqn, err);
		return;
	}
	dma_free_coherent(&vdev->pdev->dev, eq->depth * VRNIC_EQE_SIZE,
			  eq->ring, eq->dma);
}

/* One completion EQ per completion vector (ibdev->num_comp_vectors). */
int vrnic_eqs_init(struct vrnic_dev *vdev)
{
	u32 i;
	int err;

	vdev->eqs = kcalloc(vdev->num_eqs, sizeof(*vdev->eqs), GFP_KERNEL);
	if (!vdev->eqs)
		return -ENOMEM;

	for (i = 0; i < vdev->num_eqs; i++) {
		err = vrnic_eq_init_one(vdev, &vdev->eqs[i], i);
		if (err) {
			dev_err(&vdev->pdev->dev,
				"cannot create completion EQ %u (%d)\n", i, err);
			goto err_uninit;
		}
	}
	return 0;

err_uninit:
	while (i--)
		vrnic_eq_uninit_one(vdev, &vdev->eqs[i]);
	kfree(vdev->eqs);
	vdev->eqs = NULL;
	return err;
}

void vrnic_eqs_uninit(struct vrnic_dev *vdev)
{
	u32 i = vdev->num_eqs;

	if (!vdev->eqs)
		return;
	while (i--)
		vrnic_eq_uninit_one(vdev, &vdev->eqs[i]);
	kfree(vdev->eqs);
	vdev->eqs = NULL;
}

/* Wait for every handler that may have looked up @cq (rule (b)). */
void vrnic_sync_cq_irqs(struct vrnic_dev *vdev, struct vrnic_cq *cq)
{
	synchronize_irq(vdev->eqs[cq->vector].irq);
	vrnic_sync_admin_irq(vdev);
}

void vrnic_sync_admin_irq(struct vrnic_dev *vdev)
{
	synchronize_irq(pci_irq_vector(vdev->pdev, VRNIC_VEC_ADMIN));
}
