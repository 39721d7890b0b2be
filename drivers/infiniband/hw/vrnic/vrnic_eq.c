// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic RDMA events: the completion EQs, and the async events vrnic.ko
 * passes on from its async event queue (vrnic_api.h).
 *
 * Completion EQs: one per completion vector (MSI-X vectors 2..), created
 * with CREATE_EQ at probe. Each carries "CQ n was armed and has a new CQE"
 * events; its IRQ handler drains at most VRNIC_EQ_POLL_BUDGET events, calls
 * the CQs' comp_handler and re-arms with the consumer index (the device
 * raises the vector again at once if more events are pending).
 *
 * Async events arrive in vrnic.ko's admin IRQ handler (vector 0): object
 * errors, SRQ limits, page faults, and the port's state (active when the
 * link and the net_device are up), which becomes IB_EVENT_PORT_ACTIVE/ERR.
 *
 * Object lookups from these handlers follow STYLE 1.8 rule (b): a bare
 * xa_load(), and destroy paths erase the object and then synchronize_irq()
 * (vrnic_sync_cq_irqs(), vrnic_sync_admin_irq()) before freeing it.
 */

#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/log2.h>

#include "vrnic.h"

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

static void vrnic_async_event(struct vrnic_event_handler *h, u32 event,
			      const struct vrnic_aeqe *aeqe)
{
	struct vrnic_dev *vdev = container_of(h, struct vrnic_dev, events);
	u32 data = le32_to_cpu(aeqe->data);

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
	case VRNIC_AEQ_EV_PAGE_FAULT:
		vrnic_odp_fault_event(vdev, (const void *)aeqe);
		break;
	default:
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "unknown async event %u (data %#x)\n",
				     event, data);
		break;
	}
}

static void vrnic_port_event(struct vrnic_event_handler *h, bool active)
{
	struct vrnic_dev *vdev = container_of(h, struct vrnic_dev, events);
	struct ib_event ev = {
		.device = &vdev->ibdev,
		.element.port_num = VRNIC_PORT_NUM,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	/* Allocates with GFP_ATOMIC and defers to a work item: IRQ-safe. */
	ib_dispatch_event(&ev);
}

void vrnic_events_init(struct vrnic_dev *vdev)
{
	vdev->events.async_event = vrnic_async_event;
	vdev->events.port_event = vrnic_port_event;
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
	writel(VRNIC_AEQ_CI_ARM | FIELD_PREP(VRNIC_INDEX_MASK, eq->ci),
	       vdev->regs + VRNIC_REG_EQ_CI(eq->eqn));
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

	err = vrnic_cmd_create_eq(vdev->cmdq, eq->dma, eq->log_depth, vector,
				  &eq->eqn);
	if (err)
		goto err_free_irq;

	/* Arm: the first CQ event raises the vector. */
	writel(VRNIC_AEQ_CI_ARM | FIELD_PREP(VRNIC_INDEX_MASK, 0),
	       vdev->regs + VRNIC_REG_EQ_CI(eq->eqn));
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

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_EQ, eq->eqn);
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
