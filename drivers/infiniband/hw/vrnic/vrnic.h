/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic_rdma: the RoCE function of the emulated vrnic RoCEv2 RNIC, an
 * ib_device on the Ethernet driver's net_device. It binds to the auxiliary
 * device vrnic.ko creates for each PCI function (vrnic_api.h).
 */
#ifndef VRNIC_H
#define VRNIC_H

#include <linux/bitfield.h>
#include <linux/idr.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "vrnic_hw_defs.h"
#include "vrnic_api.h"
#include "vrnic_cmd.h"

/* Completion EQs (one per completion vector, vectors 2..) */
/* At least one event per CQ (a CQ posts one EQE per arm): never overflows. */
#define VRNIC_EQ_MIN_LOG_DEPTH	6
#define VRNIC_EQ_POLL_BUDGET	64	/* EQEs per interrupt, then re-arm */

struct vrnic_eq {
	struct vrnic_dev *vdev;
	struct vrnic_eqe *ring;
	dma_addr_t dma;
	u32 eqn;		/* device number, 1..num_comp_vectors */
	u16 ci;			/* free-running; only this EQ's IRQ handler */
	u16 depth;
	u8 log_depth;
	int irq;
	char irq_name[VRNIC_IRQ_NAME_LEN];
};

/* Objects counted for debugfs res_count (kernel's included) */
enum vrnic_res_type {
	VRNIC_RES_PD,
	VRNIC_RES_MR,
	VRNIC_RES_MW,
	VRNIC_RES_CQ,
	VRNIC_RES_QP,
	VRNIC_RES_SRQ,
	VRNIC_RES_AH,
	VRNIC_RES_UCTX,
	VRNIC_RES_XRCD,
	VRNIC_RES_MAX
};

struct vrnic_dev {
	struct ib_device ibdev;	/* first: ib_alloc_device() requires it */
	struct vrnic_aux_dev *aux;	/* the Ethernet driver's device */
	/* Copied from aux: the PCI function and what vrnic.ko read of it */
	struct pci_dev *pdev;
	void __iomem *regs;	/* BAR0 */
	struct vrnic_cmdq *cmdq;
	struct net_device *netdev;
	struct dentry *debugfs;
	u8 num_comp;		/* completion EQ vectors */
	u8 db_page_shift;
	u16 db_num_pages;

	/* Answers to QUERY_DEVICE / QUERY_PORT at probe (static limits) */
	struct vrnic_cmd_dev_attr dev_attr;
	struct vrnic_cmd_port_attr port_attr;

	/* The async events vrnic.ko passes on (vrnic_eq.c) */
	struct vrnic_event_handler events;
	/* debugfs mr_query: the key last written; read queries it */
	struct mutex mr_query_lock;
	u32 mr_query_key;

	/* ---- objects, and the optional features device_caps announces ---- */
	/* VRNIC_DEVICE_CAP_ON_DEMAND and the kernel's ODP (vrnic_odp.c) */
	bool has_odp;
	/*
	 * VRNIC_DEVICE_CAP_TIMESTAMP: BAR0's clock page (its bus address, for
	 * user mappings) and timestamp CQs; 0 without.
	 */
	resource_size_t clock_pa;
	/* VRNIC_DEVICE_CAP_RAW_PACKET: raw packet QPs and flow steering */
	bool has_raw;
	/* VRNIC_DEVICE_CAP_RSS: receive WQs, indirection tables, RSS QPs */
	bool has_rss;
	/* VRNIC_DEVICE_CAP_XRC: XRC domains, SRQs and QPs (vrnic_xrc.c) */
	bool has_xrc;
	atomic_t rwq_ind_tbl_num;	/* the last indirection table number */
	struct xarray odp_xa;	/* ODP MRs by key index, for page faults */
	struct srcu_struct odp_srcu;	/* a fault's MR against dereg_mr */
	struct workqueue_struct *odp_wq;	/* page faults */
	void __iomem *db;	/* BAR2 page 0: the kernel's doorbell page */
	resource_size_t db_bar_start;
	struct ida db_ida;	/* BAR2 pages 1..db_num_pages-1 for ucontexts */
	struct vrnic_eq *eqs;	/* num_eqs completion EQs, index = vector */
	u32 num_eqs;
	u64 pgsz_bitmap;	/* MR page sizes: device cap & VRNIC_PAGE_SIZE_CAP */
	atomic_t res_count[VRNIC_RES_MAX];

	/*
	 * Objects by device number, for event dispatch. Entries are stored
	 * once the object is complete and erased (xa_cmpxchg: only if still
	 * ours, the device may have reused the number) after its DESTROY
	 * command. IRQ lookup rule (STYLE 1.8 (b)): the EQ and AEQ handlers
	 * use a bare xa_load(); destroy erases and then calls
	 * synchronize_irq() on every vector that can look the object up (the
	 * CQ's EQ vector and vector 0) before freeing it. Kernel poll_cq also
	 * looks QPs up, under the CQ lock: destroy_qp erases the QP under the
	 * locks of both of its CQs. An XRC target QP has no CQs; its QPN is
	 * only in the CQEs of XRC SRQs, whose CQs are user CQs (vrnic_xrc.c).
	 */
	struct xarray cq_xa;
	struct xarray qp_xa;
	struct xarray srq_xa;
	struct xarray wq_xa;	/* receive WQs by QPN, for their events */

	/* ---- device memory, BAR5 (dm_size 0: none) ---- */
	u64 dm_size;
	resource_size_t dm_bar_start;
	void __iomem *dm_va;	/* write-combined, for zeroing allocations */
	u32 dm_npages;
	struct mutex dm_lock;	/* protects dm_used */
	unsigned long *dm_used;	/* one bit per page, set while allocated */
};

enum vrnic_mmap_type {
	VRNIC_MMAP_IO_NC,	/* doorbell page: uncached MMIO */
	VRNIC_MMAP_DM,		/* device memory pages: write-combined */
	VRNIC_MMAP_CLOCK,	/* the clock page: uncached MMIO, read-only */
};

struct vrnic_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	struct vrnic_dev *vdev;
	u64 address;		/* physical address */
	u8 type;		/* enum vrnic_mmap_type */
	u32 db_page;		/* IO_NC: BAR2 page index, freed with the entry */
	u32 dm_first;		/* DM: first BAR5 page, freed with the entry */
	u32 dm_npages;
};

struct vrnic_ucontext {
	struct ib_ucontext ibucontext;
	u32 db_page;		/* BAR2 page index of this context */
	struct rdma_user_mmap_entry *db_entry;
	struct rdma_user_mmap_entry *clock_entry;	/* or NULL */
};

/*
 * A memory descriptor in the device's layout plus the table pages it points
 * at. Tables stay allocated until the object is destroyed: the device walks
 * them on every access.
 */
struct vrnic_mem {
	struct vrnic_mem_desc desc;
	struct ib_umem *umem;	/* pinned user memory, or NULL */
	u32 ntbl;		/* 4 KiB table pages: leaves, then directories */
	void **tbl;
	dma_addr_t *tbl_dma;
};

/* A ring in kernel memory (kernel CQs, QPs, SRQs) */
struct vrnic_kbuf {
	void *va;
	dma_addr_t dma;
	size_t size;
};

struct vrnic_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* An XRC domain; ib_core keeps its target QPs (ib_xrcd.tgt_qps). */
struct vrnic_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;
};

struct vrnic_mr {
	struct ib_mr ibmr;
	struct vrnic_mem mem;
	u32 access;		/* VRNIC_ACCESS_* */
	/* on-demand paging (vrnic_odp.c) */
	struct ib_umem_odp *odp;	/* implicit: the root, with no pages */
	bool odp_live;		/* on the device: invalidate there (umem_mutex) */
	bool implicit;		/* all of the address space (VRNIC_MR_FLAG_IMPLICIT) */
	struct mutex tree_lock;	/* implicit: adds children and table pages */
	struct xarray children;	/* implicit: child umems by 1 GiB region */
	struct xarray tables;	/* implicit: table pages by level and index */
	/* fast registration (vrnic_frmr.c): the page list map_mr_sg fills */
	struct vrnic_kbuf pbl;
	u32 max_pages;
	u32 npages;
};

struct vrnic_mw {
	struct ib_mw ibmw;
};

struct vrnic_dm {
	struct ib_dm ibdm;
	u64 offset;		/* byte offset of the allocation in BAR5 */
	struct rdma_user_mmap_entry *entry;
};

/* A flow steering rule (vrnic_flow.c); the device keeps the rule itself. */
struct vrnic_flow {
	struct ib_flow ibflow;
	u32 id;			/* the device's flow id */
};

struct vrnic_ah {
	struct ib_ah ibah;
	struct vrnic_av av;	/* copied into every UD WQE */
};

struct vrnic_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 vector;		/* completion vector = index into vdev->eqs */
	u32 depth;
	u8 log_depth;
	u32 flags;		/* VRNIC_CQ_FLAG_*: the CQE format */
	bool kernel;
	struct vrnic_mem mem;

	/* kernel CQs only */
	struct vrnic_kbuf kbuf;
	/*
	 * Protects ci, ring, dbrec, resizing and (poll_cq) the lookups of
	 * QPs. Taken from any context: always _irqsave.
	 */
	spinlock_t lock;
	struct vrnic_cqe *ring;
	struct vrnic_cq_dbrec *dbrec;
	u32 ci;			/* free-running */
	bool resizing;		/* RESIZE_CQ in flight: poll returns nothing */
};

/*
 * A kernel work queue: free-running u32 indices (uapi "Rings").
 * pi is written under the queue's lock by post_*; ci is written by poll_cq
 * (the queue's CQ lock) with smp_store_release and read by post_* with
 * smp_load_acquire, after which the wrid slots below ci may be reused.
 */
struct vrnic_wq {
	void *buf;
	u64 *wrid;		/* consumer wr_id per slot */
	u32 pi;
	u32 ci;
	u32 depth;
	u8 log_depth;
	u8 wqe_shift;
	u32 max_sge;
};

struct vrnic_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	bool kernel;
	struct vrnic_mem mem;
	u32 max_wr;
	u32 max_sge;

	/* kernel SRQs only */
	struct vrnic_kbuf kbuf;
	spinlock_t lock;	/* rq, done: post_srq_recv and poll_cq */
	struct vrnic_wq rq;
	unsigned long *done;	/* completed slots not yet passed by ci */
};

/*
 * The page fault of one side of a QP (or of a receive WQ: a receive-only
 * QP of the device), as the device posted it.
 */
struct vrnic_odp_fault {
	struct work_struct work;
	struct vrnic_dev *vdev;
	const u32 *qpn;		/* the owner's, set once it is created */
	bool responder;
	bool write;
	u32 key;
	u64 page;		/* first page of the MR not mapped */
	u32 npages;
};

struct vrnic_qp {
	struct ib_qp ibqp;
	u32 qpn;		/* an RSS QP: the RSS context's number */
	bool kernel;		/* has kernel rings (an XRC target has none) */
	bool rss;		/* has an indirection table (vrnic_rss.c) */
	struct vrnic_mem mem;
	struct ib_qp_cap cap;	/* what was granted */
	u8 sq_sig_all;

	struct mutex state_lock;	/* serialises modify_qp */
	enum ib_qp_state state;	/* last state set; READ_ONCE in post_* */

	/* kernel QPs only */
	struct vrnic_kbuf kbuf;
	spinlock_t sq_lock;	/* sq.pi and the SQ ring */
	spinlock_t rq_lock;	/* rq.pi and the RQ ring */
	struct vrnic_wq sq;
	struct vrnic_wq rq;
	u32 max_inline;
	u32 sq_hdr;		/* bytes before the SGEs: header (+ UD segment) */

	struct vrnic_odp_fault odp_fault[2];	/* [responder] */
};

/*
 * A receive work queue (vrnic_rss.c): a receive-only raw packet QP of the
 * device, whose ring the process owns (libvrnic posts to it directly).
 */
struct vrnic_rwq {
	struct ib_wq ibwq;
	u32 qpn;
	struct vrnic_mem mem;	/* the pinned RQ ring */
	struct mutex state_lock;	/* serialises modify_wq */
	struct vrnic_odp_fault odp_fault[2];	/* [responder] */
};

/*
 * Limits derived from QUERY_DEVICE and the WQE geometry (uapi "Work queue
 * geometry"). Depths are powers of two, so the largest usable depth is the
 * device's limit rounded down.
 */
static inline u32 vrnic_pow2_limit(u32 val)
{
	return val ? min_t(u32, rounddown_pow_of_two(val),
			   1U << VRNIC_RING_MAX_LOG_DEPTH) : 0;
}

static inline int vrnic_max_qp_wr(const struct vrnic_cmd_dev_attr *da)
{
	return vrnic_pow2_limit(da->max_qp_wr);
}

static inline int vrnic_max_recv_sge(const struct vrnic_cmd_dev_attr *da)
{
	return min_t(u32, da->max_sge,
		     vrnic_wqe_sges(VRNIC_WQE_MAX_SHIFT,
				    sizeof(struct vrnic_recv_wqe)));
}

/*
 * A user's RQ ring (a QP's or a receive WQ's) of 2^log_depth WQEs of
 * 2^wqe_shift bytes: within the device's limits, and holding max_wr WRs
 * of max_sge SGEs each.
 */
static inline bool vrnic_user_rq_ok(const struct vrnic_cmd_dev_attr *da,
				    u32 log_depth, u32 wqe_shift, u32 max_wr,
				    u32 max_sge)
{
	return log_depth >= 1 && log_depth <= ilog2(vrnic_max_qp_wr(da)) &&
	       (1U << log_depth) >= max_wr &&
	       wqe_shift >= VRNIC_RQ_WQE_MIN_SHIFT &&
	       wqe_shift <= VRNIC_WQE_MAX_SHIFT &&
	       (1ULL << wqe_shift) >= vrnic_recv_wqe_len(max_sge);
}

/* The SGEs a receive WQE of 2^wqe_shift bytes holds, as granted. */
static inline u32 vrnic_rq_wqe_sges(const struct vrnic_cmd_dev_attr *da,
				    u32 wqe_shift)
{
	return min_t(u32, vrnic_wqe_sges(wqe_shift, sizeof(struct vrnic_recv_wqe)),
		     vrnic_max_recv_sge(da));
}

static inline struct vrnic_dev *to_vdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vrnic_dev, ibdev);
}

static inline struct vrnic_ucontext *
to_vucontext(struct ib_ucontext *ibucontext)
{
	return container_of(ibucontext, struct vrnic_ucontext, ibucontext);
}

static inline struct vrnic_pd *to_vpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct vrnic_pd, ibpd);
}

static inline struct vrnic_xrcd *to_vxrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct vrnic_xrcd, ibxrcd);
}

static inline struct vrnic_mr *to_vmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct vrnic_mr, ibmr);
}

static inline struct vrnic_ah *to_vah(struct ib_ah *ibah)
{
	return container_of(ibah, struct vrnic_ah, ibah);
}

static inline struct vrnic_cq *to_vcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct vrnic_cq, ibcq);
}

static inline struct vrnic_qp *to_vqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct vrnic_qp, ibqp);
}

static inline struct vrnic_srq *to_vsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct vrnic_srq, ibsrq);
}

static inline struct vrnic_dm *to_vdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct vrnic_dm, ibdm);
}

static inline struct vrnic_rwq *to_vrwq(struct ib_wq *ibwq)
{
	return container_of(ibwq, struct vrnic_rwq, ibwq);
}

static inline struct vrnic_flow *to_vflow(struct ib_flow *ibflow)
{
	return container_of(ibflow, struct vrnic_flow, ibflow);
}

static inline struct vrnic_user_mmap_entry *
to_vmmap(struct rdma_user_mmap_entry *rdma_entry)
{
	return container_of(rdma_entry, struct vrnic_user_mmap_entry,
			    rdma_entry);
}

/* The one helper that indexes a kernel ring */
static inline void *vrnic_wq_slot(struct vrnic_wq *wq, u32 idx)
{
	return wq->buf + (vrnic_idx_slot(idx, wq->log_depth) << wq->wqe_shift);
}

/* A doorbell on the kernel's page: index in 31:16, queue number in 15:0 */
static inline void vrnic_ring_db(struct vrnic_dev *vdev, u32 offset, u32 qn,
				 u32 idx)
{
	/* writel orders the (coherent) ring writes before the doorbell. */
	writel(FIELD_PREP(VRNIC_DB_INDEX_MASK, idx & 0xffff) |
	       FIELD_PREP(VRNIC_DB_QN_MASK, qn), vdev->db + offset);
}

/* vrnic_debugfs.c */
void vrnic_debugfs_init(struct vrnic_dev *vdev);
void vrnic_debugfs_uninit(struct vrnic_dev *vdev);

/* vrnic_eq.c */
int vrnic_eqs_init(struct vrnic_dev *vdev);
void vrnic_eqs_uninit(struct vrnic_dev *vdev);
void vrnic_sync_cq_irqs(struct vrnic_dev *vdev, struct vrnic_cq *cq);
void vrnic_sync_admin_irq(struct vrnic_dev *vdev);
void vrnic_events_init(struct vrnic_dev *vdev);

/* vrnic_mem.c */
int vrnic_mem_from_umem(struct vrnic_dev *vdev, struct vrnic_mem *mem,
			struct ib_umem *umem, u64 iova);
int vrnic_mem_from_kbuf(struct vrnic_dev *vdev, struct vrnic_mem *mem,
			const struct vrnic_kbuf *kbuf);
void vrnic_mem_uninit(struct vrnic_dev *vdev, struct vrnic_mem *mem);
int vrnic_kbuf_alloc(struct vrnic_dev *vdev, struct vrnic_kbuf *kbuf,
		     size_t size);
void vrnic_kbuf_free(struct vrnic_dev *vdev, struct vrnic_kbuf *kbuf);

int vrnic_mem_init_odp(struct vrnic_dev *vdev, struct vrnic_mem *mem,
		       u64 iova, u64 length, u32 page_shift, u64 npages);
void vrnic_mem_set_odp(struct vrnic_mem *mem, u64 i, u64 entry);

/* vrnic_odp.c */
int vrnic_odp_init(struct vrnic_dev *vdev);
void vrnic_odp_uninit(struct vrnic_dev *vdev);
void vrnic_odp_caps(struct vrnic_dev *vdev, struct ib_device_attr *attr);
struct ib_mr *vrnic_reg_user_mr_odp(struct ib_pd *ibpd, u64 start,
				    u64 length, u64 virt_addr, int ib_access,
				    u32 access);
void vrnic_odp_dereg(struct vrnic_dev *vdev, struct vrnic_mr *mr);
extern const struct mmu_interval_notifier_ops vrnic_odp_mn_ops;
int vrnic_odp_map_umem(struct vrnic_mr *mr, struct ib_umem_odp *odp,
		       u64 first, u64 mr_first, u64 npages, bool fault,
		       bool write);

/* vrnic_odp_implicit.c */
int vrnic_odp_implicit_init(struct vrnic_dev *vdev, struct vrnic_mr *mr,
			    int ib_access);
void vrnic_odp_implicit_free(struct vrnic_dev *vdev, struct vrnic_mr *mr);
void vrnic_odp_implicit_quiesce(struct vrnic_mr *mr);
void vrnic_odp_implicit_set(struct vrnic_mr *mr, u64 page, u64 entry);
int vrnic_odp_implicit_map(struct vrnic_dev *vdev, struct vrnic_mr *mr,
			   u64 page, u64 npages, bool fault, bool write);
void vrnic_odp_faults_init(struct vrnic_odp_fault f[2], struct vrnic_dev *vdev,
			   const u32 *qpn);
void vrnic_odp_faults_cancel(struct vrnic_odp_fault f[2]);
void vrnic_odp_fault_event(struct vrnic_dev *vdev,
			   const struct vrnic_aeqe_page_fault *e);
int vrnic_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);

/* vrnic_cq.c */
int vrnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int vrnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void vrnic_cq_clean(struct vrnic_cq *cq, u32 qpn);

/* vrnic_dm.c */
extern const struct uapi_definition vrnic_uapi_defs[];
int vrnic_dm_init(struct vrnic_dev *vdev);
void vrnic_dm_uninit(struct vrnic_dev *vdev);
void vrnic_dm_free_pages(struct vrnic_dev *vdev, u32 first, u32 npages);
struct ib_dm *vrnic_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibucontext,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs);
int vrnic_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);

/* vrnic_flow.c */
struct ib_flow *vrnic_create_flow(struct ib_qp *ibqp,
				  struct ib_flow_attr *attr,
				  struct ib_udata *udata);
int vrnic_destroy_flow(struct ib_flow *ibflow);

/* vrnic_rss.c */
struct ib_wq *vrnic_create_wq(struct ib_pd *ibpd,
			      struct ib_wq_init_attr *init_attr,
			      struct ib_udata *udata);
int vrnic_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr,
		    u32 attr_mask, struct ib_udata *udata);
int vrnic_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata);
int vrnic_create_rwq_ind_table(struct ib_rwq_ind_table *tbl,
			       struct ib_rwq_ind_table_init_attr *init_attr,
			       struct ib_udata *udata);
int vrnic_destroy_rwq_ind_table(struct ib_rwq_ind_table *tbl);
int vrnic_create_rss_qp(struct vrnic_dev *vdev, struct vrnic_qp *qp,
			struct ib_qp_init_attr *init_attr,
			struct ib_udata *udata);

/* vrnic_xrc.c */
int vrnic_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int vrnic_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int vrnic_create_xrc_tgt_qp(struct vrnic_dev *vdev, struct vrnic_qp *qp,
			    struct ib_qp_init_attr *init_attr);

/* vrnic_qp.c */
int vrnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vrnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int vrnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

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
int vrnic_query_ucontext(struct ib_ucontext *ibucontext,
			 struct uverbs_attr_bundle *attrs);
void vrnic_disassociate_ucontext(struct ib_ucontext *ibucontext);
int vrnic_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma);
void vrnic_mmap_free(struct rdma_user_mmap_entry *rdma_entry);
int vrnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int vrnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *vrnic_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *vrnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata);
struct ib_mr *vrnic_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 virt_addr, int fd,
				       int ib_access,
				       struct uverbs_attr_bundle *attrs);
struct ib_mr *vrnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 virt_addr, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int vrnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int vrnic_udata_in(struct ib_device *ibdev, struct ib_udata *udata,
		   void *cmd, size_t size, size_t min_len, const char *verb);
int vrnic_udata_no_in(struct ib_device *ibdev, struct ib_udata *udata,
		      const char *verb);
/* The doorbell page (device uctx) of udata's context; 0 for the kernel. */
u32 vrnic_uctx(struct ib_udata *udata);
int vrnic_pin_ring(struct vrnic_dev *vdev, struct vrnic_mem *mem, u64 addr,
		   u64 len);
int vrnic_access(int ib_access, u32 *access);
u8 vrnic_new_key_byte(void);
struct ib_mr *vrnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			     u32 max_num_sg);
int vrnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int vrnic_frmr_build_wqe(void *slot, const struct ib_reg_wr *wr, u8 flags);
int vrnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int vrnic_dealloc_mw(struct ib_mw *ibmw);
struct ib_mr *vrnic_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs);
int vrnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int vrnic_destroy_ah(struct ib_ah *ibah, u32 flags);
int vrnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs);
int vrnic_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int vrnic_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
int vrnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int vrnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata);
int vrnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int attr_mask, struct ib_udata *udata);
int vrnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_qp_init_attr *init_attr);
int vrnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int vrnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int vrnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int vrnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		     struct ib_udata *udata);
int vrnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask attr_mask, struct ib_udata *udata);
int vrnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int vrnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int vrnic_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int vrnic_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int vrnic_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);
int vrnic_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq);
/* vrnic_stats.c */
struct rdma_hw_stats *vrnic_alloc_hw_device_stats(struct ib_device *ibdev);
struct rdma_hw_stats *vrnic_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port);
int vrnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

#endif /* VRNIC_H */
