// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic on-demand paging (ODP): MRs registered with IB_ACCESS_ON_DEMAND
 * pin nothing. The device's tables for such an MR start empty; the device
 * raises a page fault (an AEQ entry) when an access needs pages that are
 * not mapped, and the driver maps them here and answers.
 *
 * - Registration: ib_umem_odp_get() with vrnic's MMU interval notifier,
 *   tables for the whole range (vrnic_mem_init_odp()), REG_MR with
 *   VRNIC_MR_FLAG_ON_DEMAND. The MR goes into odp_xa by its key index so
 *   that a fault can find it.
 * - A fault (vrnic_odp_fault_event(), in the admin IRQ) names the QP and
 *   side: each QP has one work item per side, queued on odp_wq. The work
 *   faults the pages in with ib_umem_odp_map_dma_and_lock() - the mm's own
 *   fault path through hmm_range_fault() - writes their DMA addresses into
 *   the device's leaf entries with the present and writable bits, and
 *   answers PAGE_FAULT_DONE (MAPPED, or FAILED when the range cannot be
 *   mapped: not the process's memory any more).
 * - Invalidation (vrnic_odp_invalidate(), the notifier): under umem_mutex,
 *   which also orders it against the fault path's table writes, clear the
 *   entries of every mapped page in the range, ODP_INVALIDATE so that the
 *   device drops what it cached and can no longer reach them, and only then
 *   unmap them (ib_umem_odp_unmap_dma_pages()).
 * - Prefetch (ibv_advise_mr): the same mapping, without a fault, before
 *   any access; PREFETCH_NO_FAULT maps only what is resident.
 *
 * A fault and a deregistration race through odp_srcu: dereg_mr removes
 * the MR from odp_xa after the device forgot its key (DEREG_MR), then
 * waits for the faults that found it before it releases the umem.
 *
 * Implicit ODP MRs (the whole address space) keep their tables and child
 * umems in vrnic_odp_implicit.c; faults, invalidation and prefetch are the
 * same, per child.
 */

#include <linux/bitfield.h>
#include <linux/slab.h>
#include <rdma/ib_umem_odp.h>

#include "vrnic.h"

/* The device's leaf entry for an ODP DMA address with its access bits. */
static u64 vrnic_odp_entry(dma_addr_t dma)
{
	u64 e = dma & ODP_DMA_ADDR_MASK;

	if (dma & ODP_READ_ALLOWED_BIT)
		e |= VRNIC_ODP_PRESENT;
	if (dma & ODP_WRITE_ALLOWED_BIT)
		e |= VRNIC_ODP_WRITABLE;
	return e;
}

/* The device's leaf entry of page @page of @mr. */
static void vrnic_odp_set_entry(struct vrnic_mr *mr, u64 page, u64 entry)
{
	if (mr->implicit)
		vrnic_odp_implicit_set(mr, page, entry);
	else
		vrnic_mem_set_odp(&mr->mem, page, entry);
}

/*
 * Map @npages pages of @odp (a page of @mr's, or an implicit MR's child)
 * from its page @first, which is page @mr_first of the MR, and make them
 * visible to the device. @fault: fault them in (else only what is
 * resident); @write: writable. Return: 0 or a negative errno.
 */
int vrnic_odp_map_umem(struct vrnic_mr *mr, struct ib_umem_odp *odp,
		       u64 first, u64 mr_first, u64 npages, bool fault,
		       bool write)
{
	u64 total = ib_umem_odp_num_pages(odp);
	u64 access = ODP_READ_ALLOWED_BIT;
	u64 start, i;
	int n;

	if (first >= total || !npages)
		return -EFAULT;
	npages = min(npages, total - first);
	if (write && odp->umem.writable)
		access |= ODP_WRITE_ALLOWED_BIT;
	start = ib_umem_start(odp) + (first << odp->page_shift);
	n = ib_umem_odp_map_dma_and_lock(odp, start, npages << odp->page_shift,
					 access, fault);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		vrnic_odp_set_entry(mr, mr_first + i,
				    vrnic_odp_entry(odp->dma_list[first + i]));
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

/* Attempts at a page fault whose range invalidations keep busy. */
#define VRNIC_ODP_FAULT_TRIES	5

/* Pages [page, page + npages) of @mr, as vrnic_odp_map_umem(). */
static int vrnic_odp_map(struct vrnic_dev *vdev, struct vrnic_mr *mr,
			 u64 page, u64 npages, bool fault, bool write)
{
	if (mr->implicit)
		return vrnic_odp_implicit_map(vdev, mr, page, npages, fault,
					      write);
	return vrnic_odp_map_umem(mr, mr->odp, page, page, npages, fault,
				  write);
}

/* The ODP MR a key names, under odp_srcu; NULL if it is gone. */
static struct vrnic_mr *vrnic_odp_mr(struct vrnic_dev *vdev, u32 key)
{
	struct vrnic_mr *mr = xa_load(&vdev->odp_xa,
				      FIELD_GET(VRNIC_KEY_INDEX_MASK, key));

	return mr && mr->ibmr.lkey == key ? mr : NULL;
}

static void vrnic_odp_fault_work(struct work_struct *work)
{
	struct vrnic_odp_fault *f = container_of(work, struct vrnic_odp_fault,
						 work);
	struct vrnic_dev *vdev = f->vdev;
	u32 qpn = *f->qpn, status = VRNIC_PF_DONE_MAPPED;
	struct vrnic_mr *mr;
	int idx, err, tries;

	idx = srcu_read_lock(&vdev->odp_srcu);
	mr = vrnic_odp_mr(vdev, f->key);
	/*
	 * -EBUSY: invalidations of the range kept racing the fault for ib_core's
	 * whole retry time (HMM_RANGE_DEFAULT_TIMEOUT). The memory is still the
	 * process's; a busy or slow host only makes that time short. Try again,
	 * a bounded number of times, before the access fails.
	 */
	for (tries = 0; tries < VRNIC_ODP_FAULT_TRIES; tries++) {
		err = mr ? vrnic_odp_map(vdev, mr, f->page, f->npages, true,
					 f->write) : -ENOENT;
		if (err != -EBUSY)
			break;
	}
	srcu_read_unlock(&vdev->odp_srcu, idx);
	if (err) {
		ibdev_dbg(&vdev->ibdev,
			  "qpn %u: page fault on key %#x page %llu (%u pages) not mapped: %d\n",
			  qpn, f->key, f->page, f->npages, err);
		status = VRNIC_PF_DONE_FAILED;
	}
	/*
	 * BAD_STATE: the QP was reset meanwhile and forgot the fault; the
	 * next access faults again if it has to.
	 */
	err = vrnic_cmd_page_fault_done(vdev->cmdq, qpn, f->responder, status);
	if (err && err != -EBUSY)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "PAGE_FAULT_DONE for qpn %u failed (%d)\n",
				       qpn, err);
}

/* The requester [0] and responder [1] faults of the QP numbered *qpn. */
void vrnic_odp_faults_init(struct vrnic_odp_fault f[2], struct vrnic_dev *vdev,
			   const u32 *qpn)
{
	int i;

	for (i = 0; i < 2; i++) {
		f[i].vdev = vdev;
		f[i].qpn = qpn;
		f[i].responder = i;
		INIT_WORK(&f[i].work, vrnic_odp_fault_work);
	}
}

/* After DESTROY_QP and the admin IRQ synchronised: nothing queues them. */
void vrnic_odp_faults_cancel(struct vrnic_odp_fault f[2])
{
	int i;

	for (i = 0; i < 2; i++)
		cancel_work_sync(&f[i].work);
}

/* A VRNIC_AEQ_EV_PAGE_FAULT entry, in the admin IRQ handler. */
void vrnic_odp_fault_event(struct vrnic_dev *vdev,
			   const struct vrnic_aeqe_page_fault *e)
{
	u32 event = le32_to_cpu(e->event), owner = le32_to_cpu(e->owner);
	u32 qpn = FIELD_GET(VRNIC_PF_QPN_MASK, event);
	bool responder = event & VRNIC_PF_RESPONDER;
	struct vrnic_odp_fault *f;
	struct vrnic_rwq *wq;
	struct vrnic_qp *qp;

	qp = xa_load(&vdev->qp_xa, qpn);
	wq = qp ? NULL : xa_load(&vdev->wq_xa, qpn);
	if (!qp && !wq) {
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "page fault for unknown qpn %u\n", qpn);
		return;
	}
	f = qp ? &qp->odp_fault[responder] : &wq->odp_fault[responder];
	f->key = le32_to_cpu(e->key);
	f->page = le32_to_cpu(e->page_lo) |
		  (u64)FIELD_GET(VRNIC_PF_PAGE_HI_MASK, owner) << 32;
	f->npages = FIELD_GET(VRNIC_PF_NPAGES_MASK, owner);
	f->write = event & VRNIC_PF_WRITE;
	/* The device raises one per QP and side until it is answered. */
	if (!queue_work(vdev->odp_wq, &f->work))
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "qpn %u: page fault while one is handled\n",
				     qpn);
}

static bool vrnic_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	struct vrnic_mr *mr = odp->private;
	u64 start, end, first = U64_MAX, last = 0, base, i;
	struct vrnic_dev *vdev;
	int err;

	if (!mmu_notifier_range_blockable(range))
		return false;

	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	/* Nothing mapped (or the MR not on the device yet): nothing to do. */
	if (!odp->npages || !mr || !READ_ONCE(mr->odp_live))
		goto out;
	vdev = to_vdev(mr->ibmr.device);
	start = max_t(u64, ib_umem_start(odp), range->start);
	end = min_t(u64, ib_umem_end(odp), range->end);
	/* Page i of @odp is page base + i of the MR (an implicit MR's child). */
	base = mr->implicit ? ib_umem_start(odp) >> odp->page_shift : 0;
	for (i = (start - ib_umem_start(odp)) >> odp->page_shift;
	     (ib_umem_start(odp) + (i << odp->page_shift)) < end; i++) {
		if (!odp->dma_list[i])
			continue;
		vrnic_odp_set_entry(mr, base + i, 0);
		first = min(first, base + i);
		last = base + i;
	}
	if (first != U64_MAX) {
		err = vrnic_cmd_odp_invalidate(vdev->cmdq, mr->ibmr.lkey, first,
					       last - first + 1);
		/* A dead device does no more DMA: unmap anyway. */
		if (err)
			ibdev_warn_ratelimited(&vdev->ibdev,
					       "ODP_INVALIDATE of key %#x failed (%d)\n",
					       mr->ibmr.lkey, err);
	}
	ib_umem_odp_unmap_dma_pages(odp, start, end);
out:
	mutex_unlock(&odp->umem_mutex);
	return true;
}

const struct mmu_interval_notifier_ops vrnic_odp_mn_ops = {
	.invalidate = vrnic_odp_invalidate,
};

/*
 * The umem and tables of an explicit ODP MR over [start, start + length)
 * at @virt_addr, which must have the same offset in an ODP page as @start
 * (page i of the device's tables is page i of the umem).
 */
static int vrnic_odp_explicit_init(struct vrnic_dev *vdev,
				   struct vrnic_mr *mr, u64 start, u64 length,
				   u64 virt_addr, int ib_access)
{
	struct ib_umem_odp *odp;
	int err;

	odp = ib_umem_odp_get(&vdev->ibdev, start, length, ib_access,
			      &vrnic_odp_mn_ops);
	if (IS_ERR(odp))
		return PTR_ERR(odp);
	if ((virt_addr ^ start) & (BIT_ULL(odp->page_shift) - 1) ||
	    !(vdev->pgsz_bitmap & BIT_ULL(odp->page_shift))) {
		err = -EOPNOTSUPP;
		goto err_release;
	}
	err = vrnic_mem_init_odp(vdev, &mr->mem, virt_addr, length,
				 odp->page_shift, ib_umem_odp_num_pages(odp));
	if (err)
		goto err_release;
	mr->odp = odp;
	odp->private = mr;
	return 0;

err_release:
	ib_umem_odp_release(odp);
	return err;
}

/*
 * What the init functions made: the umems first (their notifiers go), then
 * the tables - an implicit MR's children before its root.
 */
static void vrnic_odp_free(struct vrnic_dev *vdev, struct vrnic_mr *mr)
{
	if (mr->implicit) {
		vrnic_odp_implicit_free(vdev, mr);
		ib_umem_odp_release(mr->odp);
	} else {
		ib_umem_odp_release(mr->odp);
		vrnic_mem_uninit(vdev, &mr->mem);
	}
	mr->odp = NULL;
}

/*
 * An ODP MR: explicit over [start, start + length), or implicit over the
 * whole address space (@start 0 and @length U64_MAX).
 */
struct ib_mr *vrnic_reg_user_mr_odp(struct ib_pd *ibpd, u64 start,
				    u64 length, u64 virt_addr, int ib_access,
				    u32 access)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	bool implicit = !start && length == U64_MAX;
	struct vrnic_cmd_mr_params p = {};
	struct vrnic_mr *mr;
	u32 key;
	int err;

	if (!vdev->has_odp)
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = implicit ? vrnic_odp_implicit_init(vdev, mr, ib_access) :
			 vrnic_odp_explicit_init(vdev, mr, start, length,
						 virt_addr, ib_access);
	if (err)
		goto err_free;

	p.pdn = to_vpd(ibpd)->pdn;
	p.access = access;
	p.flags = VRNIC_MR_FLAG_ON_DEMAND |
		  (implicit ? VRNIC_MR_FLAG_IMPLICIT : 0);
	p.key_byte = vrnic_new_key_byte();
	p.mem = &mr->mem.desc;
	err = vrnic_cmd_reg_mr(vdev->cmdq, &p, &key);
	if (err)
		goto err_odp;

	mr->access = access;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	err = xa_err(xa_store(&vdev->odp_xa,
			      FIELD_GET(VRNIC_KEY_INDEX_MASK, key), mr,
			      GFP_KERNEL));
	if (err)
		goto err_dereg;
	/*
	 * From here on invalidations reach the device. An implicit MR has no
	 * child yet, whose notifier could look.
	 */
	mutex_lock(&mr->odp->umem_mutex);
	WRITE_ONCE(mr->odp_live, true);
	mutex_unlock(&mr->odp->umem_mutex);
	atomic_inc(&vdev->res_count[VRNIC_RES_MR]);
	return &mr->ibmr;

err_dereg:
	vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DEREG_MR, key);
err_odp:
	vrnic_odp_free(vdev, mr);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * The MR left the device (DEREG_MR completed): no new fault names it. Wait
 * for the faults that found it, stop the notifiers from reaching the
 * device, then release the umems (the notifiers go, the pages are
 * unmapped) and the tables.
 */
void vrnic_odp_dereg(struct vrnic_dev *vdev, struct vrnic_mr *mr)
{
	u32 index = FIELD_GET(VRNIC_KEY_INDEX_MASK, mr->ibmr.lkey);

	xa_cmpxchg(&vdev->odp_xa, index, mr, NULL, GFP_KERNEL);
	synchronize_srcu(&vdev->odp_srcu);
	mutex_lock(&mr->odp->umem_mutex);
	WRITE_ONCE(mr->odp_live, false);
	mutex_unlock(&mr->odp->umem_mutex);
	if (mr->implicit)
		vrnic_odp_implicit_quiesce(mr);
	vrnic_odp_free(vdev, mr);
}

/*
 * ibv_advise_mr: PREFETCH (readable), PREFETCH_WRITE (writable, breaking
 * copy-on-write), PREFETCH_NO_FAULT (what is resident, with the access the
 * mm gives it) for each SGE's range of an ODP MR of @ibpd. Done before it
 * returns, so IB_UVERBS_ADVISE_MR_FLAG_FLUSH asks nothing more.
 */
int vrnic_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	bool write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	int idx, err = 0;
	u32 i;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EOPNOTSUPP;

	idx = srcu_read_lock(&vdev->odp_srcu);
	for (i = 0; i < num_sge && !err; i++) {
		struct vrnic_mr *mr = vrnic_odp_mr(vdev, sg_list[i].lkey);
		u64 first, last, base, end;
		struct ib_umem_odp *odp;

		if (!mr || mr->ibmr.pd != ibpd) {
			err = -ENOENT;
			break;
		}
		odp = mr->odp;
		/* An implicit MR: all addresses, page i at i << 12. */
		base = mr->implicit ? 0 : ib_umem_start(odp);
		end = mr->implicit ? BIT_ULL(VRNIC_ODP_IMPLICIT_VA_BITS) :
				     ib_umem_end(odp);
		if (!sg_list[i].length || sg_list[i].addr < base ||
		    sg_list[i].addr >= end ||
		    sg_list[i].length > end - sg_list[i].addr) {
			err = -EINVAL;
			break;
		}
		first = (sg_list[i].addr - base) >> odp->page_shift;
		last = (sg_list[i].addr + sg_list[i].length - 1 - base) >>
		       odp->page_shift;
		err = vrnic_odp_map(vdev, mr, first, last - first + 1, fault,
				    write);
	}
	srcu_read_unlock(&vdev->odp_srcu, idx);
	return err;
}

/* query_device: what on-demand paging covers (everything the device does). */
void vrnic_odp_caps(struct vrnic_dev *vdev, struct ib_device_attr *attr)
{
	struct ib_odp_caps *c = &attr->odp_caps;

	if (!vdev->has_odp)
		return;
	attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	c->general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	c->per_transport_caps.rc_odp_caps = IB_ODP_SUPPORT_SEND |
					    IB_ODP_SUPPORT_RECV |
					    IB_ODP_SUPPORT_WRITE |
					    IB_ODP_SUPPORT_READ |
					    IB_ODP_SUPPORT_ATOMIC |
					    IB_ODP_SUPPORT_SRQ_RECV;
	c->per_transport_caps.uc_odp_caps = IB_ODP_SUPPORT_SEND |
					    IB_ODP_SUPPORT_RECV |
					    IB_ODP_SUPPORT_WRITE |
					    IB_ODP_SUPPORT_SRQ_RECV;
	c->per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND |
					    IB_ODP_SUPPORT_RECV |
					    IB_ODP_SUPPORT_SRQ_RECV;
	/* An initiator's sends, a target's receives into its XRC SRQs. */
	if (vdev->has_xrc)
		c->per_transport_caps.xrc_odp_caps = IB_ODP_SUPPORT_SEND |
						     IB_ODP_SUPPORT_SRQ_RECV;
}

int vrnic_odp_init(struct vrnic_dev *vdev)
{
	int err;

	xa_init(&vdev->odp_xa);
	vdev->has_odp = IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING) &&
			(vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_ON_DEMAND);
	if (!vdev->has_odp)
		return 0;
	err = init_srcu_struct(&vdev->odp_srcu);
	if (err)
		return err;
	vdev->odp_wq = alloc_workqueue("vrnic-odp-%s", WQ_UNBOUND | WQ_MEM_RECLAIM,
				       0, pci_name(vdev->pdev));
	if (!vdev->odp_wq) {
		cleanup_srcu_struct(&vdev->odp_srcu);
		return -ENOMEM;
	}
	return 0;
}

/* Every MR and QP is gone: no work is queued or running. */
void vrnic_odp_uninit(struct vrnic_dev *vdev)
{
	WARN_ON(!xa_empty(&vdev->odp_xa));
	xa_destroy(&vdev->odp_xa);
	if (!vdev->has_odp)
		return;
	destroy_workqueue(vdev->odp_wq);
	cleanup_srcu_struct(&vdev->odp_srcu);
}
