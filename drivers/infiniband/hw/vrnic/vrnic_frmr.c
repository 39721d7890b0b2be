// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic fast registration (vrnic_hw_defs.h "Fast-registration MRs"):
 * alloc_mr, map_mr_sg and the REG_MR work request, for the kernel's RDMA
 * consumers (nvme-rdma, xprtrdma, iSER, SRP).
 *
 * Each MR owns a coherent page list of max_num_sg entries. map_mr_sg fills
 * it (ib_sg_to_pages); the device copies it in when the SQ reaches the
 * REG_MR WQE, so the list is only rewritten by the next map_mr_sg, which
 * consumers call once the previous registration was invalidated (a
 * consumer that remaps a valid MR changes nothing the device uses: it
 * refuses REG_MR of a valid MR).
 * map_mr_sg and the WQE builder run in any context and never sleep.
 */

#include "vrnic.h"

struct ib_mr *vrnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			     u32 max_num_sg)
{
	struct vrnic_dev *vdev = to_vdev(ibpd->device);
	struct vrnic_mr *mr;
	u32 key;
	int err;

	/* Pages only: no SG_GAPS, no integrity (signature) MRs. */
	if (mr_type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > VRNIC_FRMR_MAX_PAGES)
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = vrnic_kbuf_alloc(vdev, &mr->pbl, max_num_sg * sizeof(__le64));
	if (err)
		goto err_free_mr;
	mr->max_pages = max_num_sg;

	err = vrnic_cmd_alloc_mr(vdev->cmdq, to_vpd(ibpd)->pdn, max_num_sg,
				 vrnic_new_key_byte(), &key);
	if (err)
		goto err_free_pbl;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	atomic_inc(&vdev->res_count[VRNIC_RES_MR]);
	return &mr->ibmr;

err_free_pbl:
	vrnic_kbuf_free(vdev, &mr->pbl);
err_free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

static int vrnic_frmr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vrnic_mr *mr = to_vmr(ibmr);
	__le64 *pbl = mr->pbl.va;

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	pbl[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

int vrnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	to_vmr(ibmr)->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset,
			      vrnic_frmr_set_page);
}

/* The REG_MR WQE for @wr in @slot (zeroed by the caller). */
int vrnic_frmr_build_wqe(void *slot, const struct ib_reg_wr *wr, u8 flags)
{
	struct vrnic_reg_mr_wqe *wqe = slot;
	struct vrnic_mr *mr = to_vmr(wr->mr);
	u32 access;
	int err;

	err = vrnic_access(wr->access, &access);
	if (err)
		return err;
	/* The device takes the MR from the key's index: it must be this MR. */
	if ((wr->key ^ wr->mr->lkey) & VRNIC_KEY_INDEX_MASK)
		return -EINVAL;
	if (!is_power_of_2(wr->mr->page_size) ||
	    wr->mr->page_size < SZ_4K || wr->mr->page_size > SZ_1G)
		return -EINVAL;

	wqe->opcode = VRNIC_WQE_OP_REG_MR;
	wqe->flags = flags;
	wqe->page_shift = ilog2(wr->mr->page_size);
	wqe->key = cpu_to_le32(wr->key);
	wqe->access = cpu_to_le32(access);
	wqe->npages = cpu_to_le32(mr->npages);
	wqe->iova = cpu_to_le64(wr->mr->iova);
	wqe->length = cpu_to_le64(wr->mr->length);
	wqe->pbl_addr = cpu_to_le64(mr->pbl.dma);
	return 0;
}
