// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic RDMA driver: the auxiliary driver for the "vrnic.rdma" device that
 * vrnic.ko creates once its net_device is registered (vrnic_api.h), and
 * module init.
 *
 * Probe runs in stages, each undone by its own teardown when a later one
 * fails, and remove runs the teardowns in reverse:
 *   1. vrnic_objects_init(): QUERY_DEVICE and QUERY_PORT, the kernel's
 *      doorbell page, device memory, the completion EQs, ODP;
 *   2. vrnic_ib_device_add(): the RoCE ib_device on vrnic.ko's net_device.
 */

#include <linux/auxiliary_bus.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <net/addrconf.h>
#include <rdma/vrnic-abi.h>

#include "vrnic.h"

MODULE_DESCRIPTION("vrnic emulated RoCEv2 RDMA NIC: RDMA driver");
MODULE_LICENSE("Dual BSD/GPL");
/* Without uverbs the device is invisible to libibverbs. */
MODULE_SOFTDEP("pre: ib_uverbs");

static bool cq_dim = true;
module_param(cq_dim, bool, 0444);
MODULE_PARM_DESC(cq_dim, "let ib_core tune kernel CQs' event moderation (DIM), default Y");

static const struct ib_device_ops vrnic_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VRNIC_UVERBS_ABI_VERSION,

	.add_gid = vrnic_add_gid,
	.alloc_hw_device_stats = vrnic_alloc_hw_device_stats,
	.alloc_hw_port_stats = vrnic_alloc_hw_port_stats,
	.alloc_mr = vrnic_alloc_mr,
	.alloc_mw = vrnic_alloc_mw,
	.alloc_pd = vrnic_alloc_pd,
	.alloc_ucontext = vrnic_alloc_ucontext,
	.attach_mcast = vrnic_attach_mcast,
	.create_ah = vrnic_create_ah,
	.create_cq = vrnic_create_cq,
	.create_qp = vrnic_create_qp,
	.create_srq = vrnic_create_srq,
	.create_user_ah = vrnic_create_ah,
	.dealloc_mw = vrnic_dealloc_mw,
	.dealloc_pd = vrnic_dealloc_pd,
	.dealloc_ucontext = vrnic_dealloc_ucontext,
	.del_gid = vrnic_del_gid,
	.dereg_mr = vrnic_dereg_mr,
	.destroy_ah = vrnic_destroy_ah,
	.destroy_cq = vrnic_destroy_cq,
	.destroy_qp = vrnic_destroy_qp,
	.destroy_srq = vrnic_destroy_srq,
	.detach_mcast = vrnic_detach_mcast,
	.disassociate_ucontext = vrnic_disassociate_ucontext,
	.fill_res_cq_entry = vrnic_fill_res_cq_entry,
	.fill_res_mr_entry = vrnic_fill_res_mr_entry,
	.fill_res_qp_entry = vrnic_fill_res_qp_entry,
	.fill_res_srq_entry = vrnic_fill_res_srq_entry,
	.get_dev_fw_str = vrnic_get_dev_fw_str,
	.get_dma_mr = vrnic_get_dma_mr,
	.get_hw_stats = vrnic_get_hw_stats,
	.get_link_layer = vrnic_get_link_layer,
	.get_port_immutable = vrnic_get_port_immutable,
	.map_mr_sg = vrnic_map_mr_sg,
	.mmap = vrnic_mmap,
	.mmap_free = vrnic_mmap_free,
	.modify_cq = vrnic_modify_cq,
	.modify_qp = vrnic_modify_qp,
	.modify_srq = vrnic_modify_srq,
	.poll_cq = vrnic_poll_cq,
	.post_recv = vrnic_post_recv,
	.post_send = vrnic_post_send,
	.post_srq_recv = vrnic_post_srq_recv,
	.query_device = vrnic_query_device,
	.query_pkey = vrnic_query_pkey,
	.query_port = vrnic_query_port,
	.query_qp = vrnic_query_qp,
	.query_srq = vrnic_query_srq,
	.query_ucontext = vrnic_query_ucontext,
	.reg_user_mr = vrnic_reg_user_mr,
	.reg_user_mr_dmabuf = vrnic_reg_user_mr_dmabuf,
	.req_notify_cq = vrnic_req_notify_cq,
	.rereg_user_mr = vrnic_rereg_user_mr,
	.resize_cq = vrnic_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, vrnic_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrnic_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, vrnic_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrnic_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrnic_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vrnic_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrnic_ucontext, ibucontext),
};

/* On-demand paging (VRNIC_DEVICE_CAP_ON_DEMAND): ibv_advise_mr. */
static const struct ib_device_ops vrnic_odp_ops = {
	.advise_mr = vrnic_advise_mr,
};

/* Flow steering to raw packet QPs (VRNIC_DEVICE_CAP_RAW_PACKET). */
static const struct ib_device_ops vrnic_flow_ops = {
	.create_flow = vrnic_create_flow,
	.destroy_flow = vrnic_destroy_flow,
};

/* Receive-side scaling (VRNIC_DEVICE_CAP_RSS): WQs and RSS QPs. */
static const struct ib_device_ops vrnic_rss_ops = {
	.create_wq = vrnic_create_wq,
	.modify_wq = vrnic_modify_wq,
	.destroy_wq = vrnic_destroy_wq,
	.create_rwq_ind_table = vrnic_create_rwq_ind_table,
	.destroy_rwq_ind_table = vrnic_destroy_rwq_ind_table,
	/* ib_core's table is all there is: nothing of the driver's around it. */
	.size_ib_rwq_ind_table = sizeof(struct ib_rwq_ind_table),
};

/*
 * XRC (VRNIC_DEVICE_CAP_XRC): domains. XRC SRQs and QPs come through the
 * object verbs, which refuse them without the capability.
 */
static const struct ib_device_ops vrnic_xrc_ops = {
	.alloc_xrcd = vrnic_alloc_xrcd,
	.dealloc_xrcd = vrnic_dealloc_xrcd,

	INIT_RDMA_OBJ_SIZE(ib_xrcd, vrnic_xrcd, ibxrcd),
};

/* Device memory (when the device has a BAR5): ibv_alloc_dm. */
static const struct ib_device_ops vrnic_dm_ops = {
	.alloc_dm = vrnic_alloc_dm,
	.dealloc_dm = vrnic_dealloc_dm,
	.reg_dm_mr = vrnic_reg_dm_mr,
};

/* ---- stage 1: the object layer ---- */

static u32 vrnic_num_comp_vectors(struct vrnic_dev *vdev)
{
	u32 n = vdev->dev_attr.num_comp_vectors;

	if (!n || n > vdev->num_comp) {
		dev_warn(&vdev->pdev->dev,
			 "QUERY_DEVICE reports %u completion vectors, CAP_VEC %u: using %u\n",
			 n, vdev->num_comp, vdev->num_comp);
		n = vdev->num_comp;
	}
	return n;
}

/* The device's and the port's static limits. */
static int vrnic_query_attrs(struct vrnic_dev *vdev)
{
	struct device *dev = &vdev->pdev->dev;
	int err;

	err = vrnic_cmd_query_device(vdev->cmdq, &vdev->dev_attr);
	if (err) {
		dev_err(dev, "QUERY_DEVICE failed (%d)\n", err);
		return err;
	}
	err = vrnic_cmd_query_port(vdev->cmdq, VRNIC_PORT_NUM, &vdev->port_attr);
	if (err) {
		dev_err(dev, "QUERY_PORT failed (%d)\n", err);
		return err;
	}
	if (!vdev->port_attr.gid_tbl_len) {
		dev_err(dev, "device reports an empty GID table\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * The object layer: the kernel's doorbell page (BAR2 page 0), device
 * memory, one completion EQ per completion vector, ODP, and the async
 * events of the objects.
 */
static int vrnic_objects_init(struct vrnic_dev *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	resource_size_t db_len = (resource_size_t)vdev->db_num_pages <<
				 vdev->db_page_shift;
	int err;

	err = vrnic_query_attrs(vdev);
	if (err)
		return err;

	vdev->num_eqs = vrnic_num_comp_vectors(vdev);
	vdev->pgsz_bitmap = vdev->dev_attr.page_size_cap & VRNIC_PAGE_SIZE_CAP;
	if (!vdev->pgsz_bitmap) {
		dev_warn(&pdev->dev, "device reports page sizes %#llx: using 4 KiB\n",
			 vdev->dev_attr.page_size_cap);
		vdev->pgsz_bitmap = SZ_4K;
	}
	if (!(pci_resource_flags(pdev, VRNIC_BAR_DB) & IORESOURCE_MEM) ||
	    vdev->db_page_shift != ilog2(VRNIC_DB_PAGE_SIZE) ||
	    !vdev->db_num_pages ||
	    pci_resource_len(pdev, VRNIC_BAR_DB) < db_len) {
		dev_err(&pdev->dev, "bad doorbell BAR%d: %llu bytes for %u pages of %u bytes\n",
			VRNIC_BAR_DB,
			(u64)pci_resource_len(pdev, VRNIC_BAR_DB),
			vdev->db_num_pages, 1U << vdev->db_page_shift);
		return -ENODEV;
	}
	vdev->db_bar_start = pci_resource_start(pdev, VRNIC_BAR_DB);
	vdev->db = pci_iomap_range(pdev, VRNIC_BAR_DB, 0, VRNIC_DB_PAGE_SIZE);
	if (!vdev->db)
		return -ENOMEM;

	err = vrnic_dm_init(vdev);
	if (err)
		goto err_db_unmap;
	/* The clock page, when there is one, is handed to user contexts. */
	if ((vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_TIMESTAMP) &&
	    pci_resource_len(pdev, VRNIC_BAR_REGS) >= VRNIC_BAR0_SIZE)
		vdev->clock_pa = pci_resource_start(pdev, VRNIC_BAR_REGS) +
				 VRNIC_CLOCK_PAGE;
	vdev->has_raw = vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_RAW_PACKET;
	vdev->has_rss = vdev->has_raw &&
			(vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_RSS);
	vdev->has_xrc = vdev->dev_attr.device_caps & VRNIC_DEVICE_CAP_XRC;
	err = vrnic_eqs_init(vdev);
	if (err)
		goto err_dm_uninit;
	err = vrnic_odp_init(vdev);
	if (err)
		goto err_eqs_uninit;
	vrnic_core_set_event_handler(vdev->aux->core, &vdev->events);
	return 0;

err_eqs_uninit:
	vrnic_eqs_uninit(vdev);
err_dm_uninit:
	vrnic_dm_uninit(vdev);
err_db_unmap:
	pci_iounmap(pdev, vdev->db);
	vdev->db = NULL;
	return err;
}

static void vrnic_objects_uninit(struct vrnic_dev *vdev)
{
	vrnic_core_set_event_handler(vdev->aux->core, NULL);
	vrnic_odp_uninit(vdev);
	vrnic_eqs_uninit(vdev);
	vrnic_dm_uninit(vdev);
	pci_iounmap(vdev->pdev, vdev->db);
	vdev->db = NULL;
}

/* ---- stage 2: the ib_device ---- */

static int vrnic_ib_device_add(struct vrnic_dev *vdev)
{
	struct ib_device *ibdev = &vdev->ibdev;
	struct vrnic_cmd_dev_attr *da = &vdev->dev_attr;
	bool seen_active;
	int err;

	/* ib_core and pyverbs expect non-zero GUIDs: fall back to EUI-64. */
	if (!da->node_guid) {
		addrconf_addr_eui48((u8 *)&da->node_guid,
				    vdev->netdev->dev_addr);
		dev_warn(&vdev->pdev->dev,
			 "device reports node GUID 0, using %016llx\n",
			 be64_to_cpu(da->node_guid));
	}
	if (!da->sys_image_guid)
		da->sys_image_guid = da->node_guid;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->node_guid = da->node_guid;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = vdev->num_eqs;
	ibdev->dev.parent = &vdev->pdev->dev;
	strscpy(ibdev->node_desc, "vrnic RoCEv2 RNIC", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &vrnic_dev_ops);
	ibdev->use_cq_dim = cq_dim;
	if (vdev->has_odp)
		ib_set_device_ops(ibdev, &vrnic_odp_ops);
	if (vdev->has_raw)
		ib_set_device_ops(ibdev, &vrnic_flow_ops);
	if (vdev->has_rss)
		ib_set_device_ops(ibdev, &vrnic_rss_ops);
	if (vdev->has_xrc)
		ib_set_device_ops(ibdev, &vrnic_xrc_ops);
	if (vdev->dm_size)
		ib_set_device_ops(ibdev, &vrnic_dm_ops);
	ibdev->driver_def = vrnic_uapi_defs;

	/* Holds a reference on the netdev until ib_unregister_device(). */
	err = ib_device_set_netdev(ibdev, vdev->netdev, VRNIC_PORT_NUM);
	if (err) {
		dev_err(&vdev->pdev->dev, "cannot bind the netdev (%d)\n", err);
		return err;
	}

	seen_active = vrnic_core_port_state(vdev->aux->core, NULL);
	err = ib_register_device(ibdev, "vrnic%d", &vdev->pdev->dev);
	if (err) {
		dev_err(&vdev->pdev->dev, "ib_register_device failed (%d)\n",
			err);
		ib_device_set_netdev(ibdev, NULL, VRNIC_PORT_NUM);
		return err;
	}
	vrnic_core_port_events(vdev->aux->core, true, seen_active);

	ibdev_info(ibdev, "RoCEv2 port on %s\n", netdev_name(vdev->netdev));
	return 0;
}

static void vrnic_ib_device_remove(struct vrnic_dev *vdev)
{
	vrnic_core_port_events(vdev->aux->core, false, false);
	/* Also deletes every GID (DEL_GID) and drops the netdev reference. */
	ib_unregister_device(&vdev->ibdev);
}

/* ---- auxiliary driver ---- */

static int vrnic_aux_probe(struct auxiliary_device *adev,
			   const struct auxiliary_device_id *id)
{
	struct vrnic_aux_dev *aux = to_vrnic_aux_dev(adev);
	struct vrnic_dev *vdev;
	int err;

	vdev = ib_alloc_device(vrnic_dev, ibdev);
	if (!vdev)
		return -ENOMEM;

	vdev->aux = aux;
	vdev->pdev = aux->pdev;
	vdev->regs = aux->regs;
	vdev->cmdq = aux->cmdq;
	vdev->netdev = aux->netdev;
	vdev->debugfs = aux->debugfs;
	vdev->num_comp = aux->num_comp;
	vdev->db_page_shift = aux->db_page_shift;
	vdev->db_num_pages = aux->db_num_pages;
	mutex_init(&vdev->mr_query_lock);
	ida_init(&vdev->db_ida);
	xa_init(&vdev->cq_xa);
	xa_init(&vdev->qp_xa);
	xa_init(&vdev->srq_xa);
	xa_init(&vdev->wq_xa);
	vrnic_events_init(vdev);
	auxiliary_set_drvdata(adev, vdev);

	err = vrnic_objects_init(vdev);
	if (err)
		goto err_dealloc;

	err = vrnic_ib_device_add(vdev);
	if (err)
		goto err_objects_uninit;

	vrnic_debugfs_init(vdev);
	return 0;

err_objects_uninit:
	vrnic_objects_uninit(vdev);
err_dealloc:
	ida_destroy(&vdev->db_ida);
	ib_dealloc_device(&vdev->ibdev);
	return err;
}

static void vrnic_aux_remove(struct auxiliary_device *adev)
{
	struct vrnic_dev *vdev = auxiliary_get_drvdata(adev);

	vrnic_debugfs_uninit(vdev);
	vrnic_ib_device_remove(vdev);
	vrnic_objects_uninit(vdev);
	WARN_ON(!xa_empty(&vdev->cq_xa) || !xa_empty(&vdev->qp_xa) ||
		!xa_empty(&vdev->srq_xa) || !xa_empty(&vdev->wq_xa));
	ida_destroy(&vdev->db_ida);
	ib_dealloc_device(&vdev->ibdev);
}

static const struct auxiliary_device_id vrnic_aux_id_table[] = {
	{ .name = "vrnic." VRNIC_AUX_RDMA_NAME },
	{ }
};
MODULE_DEVICE_TABLE(auxiliary, vrnic_aux_id_table);

static struct auxiliary_driver vrnic_aux_driver = {
	.name = VRNIC_AUX_RDMA_NAME,
	.probe = vrnic_aux_probe,
	.remove = vrnic_aux_remove,
	.id_table = vrnic_aux_id_table,
};

module_auxiliary_driver(vrnic_aux_driver);
