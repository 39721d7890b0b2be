/*
 * vrnic: emulated RoCEv2 RDMA NIC, QEMU glue.
 *
 * QOM type, properties, PCI BARs, MSI-X, the netdev and bottom halves. The
 * device's behaviour is in vrnic_core.c and its siblings; this file only
 * forwards to them (the igb/igb_core split).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "vrnic_core.h"
#include "trace.h"

#define TYPE_VRNIC "vrnic"
OBJECT_DECLARE_SIMPLE_TYPE(VrnicState, VRNIC)

struct VrnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion db;
    MemoryRegion dm;        /* device memory, BAR5 (dm-size bytes) */
    NICConf conf;
    NICState *nic;
    QEMUBH *bh[VRNIC_WORK__MAX];
    QEMUTimer *timer;
    MemoryListener dma_map;     /* drops the translation cache on changes */

    VrnicConfig cfg;    /* properties; mac is filled from conf at realize */
    VrnicFaultCfg fault;    /* fault-* properties, changeable at run time */
    VrnicCore core;
};

/* ---- core -> glue ------------------------------------------------------- */

/*
 * Every DMA of the device is restricted to RAM (MemTxAttrs.memory): the
 * guest chooses the addresses, and an address that decodes to MMIO - the
 * MMCONFIG page of the root port above us, whose bridge control can
 * reset the secondary bus - would otherwise run another device's handlers,
 * and through them reset or unplug this one, in the middle of the core's
 * own work. Such a transfer fails with MEMTX_ACCESS_ERROR instead, and the
 * core reports it like any unreachable address.
 */
static const MemTxAttrs vrnic_dma_attrs = { .memory = 1 };

static bool vrnic_dma_read_cb(void *opaque, uint64_t addr, void *buf,
                              uint64_t len)
{
    return pci_dma_rw(PCI_DEVICE(opaque), addr, buf, len,
                      DMA_DIRECTION_TO_DEVICE, vrnic_dma_attrs) == MEMTX_OK;
}

static bool vrnic_dma_write_cb(void *opaque, uint64_t addr, const void *buf,
                               uint64_t len)
{
    return pci_dma_rw(PCI_DEVICE(opaque), addr, (void *)buf, len,
                      DMA_DIRECTION_FROM_DEVICE, vrnic_dma_attrs) == MEMTX_OK;
}

static void vrnic_irq_cb(void *opaque, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    }
}

static void vrnic_kick_cb(void *opaque, VrnicWork work)
{
    VrnicState *s = opaque;

    qemu_bh_schedule(s->bh[work]);
}

/*
 * The netdev sent a frame it had queued for us, or discarded it
 * (qemu_purge_queued_packets).
 */
static void vrnic_eth_sent_cb(NetClientState *nc, ssize_t len)
{
    VrnicState *s = qemu_get_nic_opaque(nc);

    vrnic_core_wire_sent(&s->core);
}

static bool vrnic_eth_send_cb(void *opaque, const uint8_t *frame, size_t len)
{
    VrnicState *s = opaque;

    /* 0: queued behind a busy backend, with vrnic_eth_sent_cb to follow. */
    return qemu_send_packet_async(qemu_get_queue(s->nic), frame, len,
                                  vrnic_eth_sent_cb) != 0;
}

static int64_t vrnic_clock_ns_cb(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void vrnic_timer_mod_cb(void *opaque, int64_t deadline_ns)
{
    VrnicState *s = opaque;

    timer_mod(s->timer, deadline_ns);
}

static void vrnic_timer_cb(void *opaque)
{
    VrnicState *s = opaque;

    vrnic_core_timer(&s->core);
}

static const VrnicCoreOps vrnic_core_ops = {
    .dma_read = vrnic_dma_read_cb,
    .dma_write = vrnic_dma_write_cb,
    .irq = vrnic_irq_cb,
    .kick = vrnic_kick_cb,
    .eth_send = vrnic_eth_send_cb,
    .clock_ns = vrnic_clock_ns_cb,
    .timer_mod = vrnic_timer_mod_cb,
};

/*
 * Every way into the core that can DMA holds a reference on the device:
 * were the device ever unplugged from inside the core's own work, its
 * memory outlives the call (the core defers its own teardown the same way,
 * see VrnicCore.running).
 */
static void vrnic_run(VrnicState *s, VrnicWork work)
{
    object_ref(OBJECT(s));
    vrnic_core_run(&s->core, work);
    object_unref(OBJECT(s));
}

static void vrnic_admin_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_ADMIN);
}

static void vrnic_eth_tx_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_ETH_TX);
}

static void vrnic_eth_rx_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_ETH_RX);
}

static void vrnic_link_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_LINK);
}

static void vrnic_queues_bh(void *opaque)
{
    vrnic_run(opaque, VRNIC_WORK_QUEUES);
}

/* ---- BARs --------------------------------------------------------------- */

static uint64_t vrnic_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    VrnicState *s = opaque;

    return vrnic_core_reg_read(&s->core, addr);
}

static void vrnic_regs_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    VrnicState *s = opaque;

    vrnic_core_reg_write(&s->core, addr, val);
}

/* Only aligned 32-bit accesses reach the core; the memory core rejects the
 * rest before our handlers run. */
static const MemoryRegionOps vrnic_regs_ops = {
    .read = vrnic_regs_read,
    .write = vrnic_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static uint64_t vrnic_db_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0;   /* doorbells are write-only */
}

static void vrnic_db_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    VrnicState *s = opaque;

    vrnic_core_db_write(&s->core, addr, val);
}

static const MemoryRegionOps vrnic_db_ops = {
    .read = vrnic_db_read,
    .write = vrnic_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/* ---- netdev ------------------------------------------------------------- */

/* Every frame is taken: the core never asks the netdev to hold one. */
static ssize_t vrnic_nc_receive(NetClientState *nc, const uint8_t *buf,
                                size_t size)
{
    VrnicState *s = qemu_get_nic_opaque(nc);

    object_ref(OBJECT(s));
    vrnic_core_eth_receive(&s->core, buf, size);
    object_unref(OBJECT(s));
    return size;
}

static void vrnic_nc_link_status_changed(NetClientState *nc)
{
    VrnicState *s = qemu_get_nic_opaque(nc);

    vrnic_core_set_link(&s->core, !nc->link_down);
}

static NetClientInfo vrnic_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = vrnic_nc_receive,
    .link_status_changed = vrnic_nc_link_status_changed,
};

/* ---- lifecycle ---------------------------------------------------------- */

/*
 * A section of our DMA address space appeared or went away (RAM hot-plug,
 * a BAR moving over it, bus mastering toggled): a table page may now read
 * differently, so the translation cache is dropped.
 */
static void vrnic_dma_map_changed(MemoryListener *l,
                                  MemoryRegionSection *section)
{
    VrnicState *s = container_of(l, VrnicState, dma_map);

    vrnic_core_memory_changed(&s->core);
}

static void vrnic_realize(PCIDevice *pdev, Error **errp)
{
    VrnicState *s = VRNIC(pdev);
    DeviceState *dev = DEVICE(pdev);
    uint32_t nvec;
    const char *bad;

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(s->cfg.mac, s->conf.macaddr.a, sizeof(s->cfg.mac));
    bad = vrnic_core_check_config(&s->cfg);
    if (bad) {
        error_setg(errp, "vrnic: %s", bad);
        return;
    }
    nvec = vrnic_total_vectors(&s->cfg);

    /* MSI-X only: no INTx pin is advertised. */
    memory_region_init_io(&s->regs, OBJECT(s), &vrnic_regs_ops, s,
                          "vrnic-regs", VRNIC_REGS_SIZE);
    pci_register_bar(pdev, VRNIC_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);
    memory_region_init_io(&s->db, OBJECT(s), &vrnic_db_ops, s, "vrnic-db",
                          (uint64_t)s->cfg.db_pages * VRNIC_DB_PAGE_SIZE);
    pci_register_bar(pdev, VRNIC_BAR_DB, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db);

    if (pci_is_express(pdev) && pcie_endpoint_cap_init(pdev, 0xa0) < 0) {
        error_setg(errp, "vrnic: cannot add the PCIe capability");
        return;
    }
    if (msix_init_exclusive_bar(pdev, nvec, VRNIC_BAR_MSIX, errp)) {
        return;
    }
    if (s->cfg.dm_size) {
        /* Plain RAM: the guest CPU maps it; the core copies through it. */
        if (!memory_region_init_ram(&s->dm, OBJECT(s), "vrnic-dm",
                                    s->cfg.dm_size, errp)) {
            return;
        }
        pci_register_bar(pdev, VRNIC_BAR_DM, PCI_BASE_ADDRESS_SPACE_MEMORY |
                         PCI_BASE_ADDRESS_MEM_PREFETCH, &s->dm);
    }
    /* Mark every vector used: msix_notify() drops unused ones silently.
     * The core never raises a vector >= nvec. */
    for (uint32_t i = 0; i < nvec; i++) {
        msix_vector_use(pdev, i);
    }

    s->bh[VRNIC_WORK_ADMIN] = qemu_bh_new_guarded(vrnic_admin_bh, s,
                                                  &dev->mem_reentrancy_guard);
    s->bh[VRNIC_WORK_ETH_TX] = qemu_bh_new_guarded(vrnic_eth_tx_bh, s,
                                                   &dev->mem_reentrancy_guard);
    s->bh[VRNIC_WORK_ETH_RX] = qemu_bh_new_guarded(vrnic_eth_rx_bh, s,
                                                   &dev->mem_reentrancy_guard);
    s->bh[VRNIC_WORK_LINK] = qemu_bh_new_guarded(vrnic_link_bh, s,
                                                 &dev->mem_reentrancy_guard);
    s->bh[VRNIC_WORK_QUEUES] = qemu_bh_new_guarded(vrnic_queues_bh, s,
                                                   &dev->mem_reentrancy_guard);
    s->nic = qemu_new_nic(&vrnic_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, vrnic_timer_cb, s);

    vrnic_core_init(&s->core, &s->cfg, &vrnic_core_ops, s);
    if (s->cfg.dm_size) {
        vrnic_core_set_devmem(&s->core, memory_region_get_ram_ptr(&s->dm));
    }
    vrnic_core_set_faults(&s->core, &s->fault);
    vrnic_core_set_link(&s->core, !qemu_get_queue(s->nic)->link_down);
    s->dma_map = (MemoryListener) {
        .name = "vrnic-dma-map",
        .region_add = vrnic_dma_map_changed,
        .region_del = vrnic_dma_map_changed,
    };
    memory_listener_register(&s->dma_map, pci_get_address_space(pdev));
    trace_vrnic_realize(s->cfg.num_comp_vectors, s->cfg.db_pages);
}

/*
 * Frames the netdev still holds for us carry our NetClientState and
 * vrnic_eth_sent_cb: drop them while both are alive (virtio-net does the
 * same), or the netdev would call back into a freed device once it can
 * send again. Each purged frame runs vrnic_eth_sent_cb, so the core's
 * count of queued frames returns to 0.
 */
static void vrnic_purge_wire(VrnicState *s)
{
    qemu_purge_queued_packets(qemu_get_queue(s->nic));
}

static void vrnic_exit(PCIDevice *pdev)
{
    VrnicState *s = VRNIC(pdev);

    memory_listener_unregister(&s->dma_map);
    vrnic_purge_wire(s);
    vrnic_core_reset(&s->core);
    if (s->cfg.dm_size) {
        /* memory_region_init_ram registered it (and a CPR blocker). */
        vmstate_unregister_ram(&s->dm, DEVICE(s));
    }
    for (int i = 0; i < VRNIC_WORK__MAX; i++) {
        qemu_bh_delete(s->bh[i]);
    }
    timer_free(s->timer);
    vrnic_core_uninit(&s->core);
    qemu_del_nic(s->nic);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void vrnic_reset_hold(Object *obj, ResetType type)
{
    VrnicState *s = VRNIC(obj);

    vrnic_purge_wire(s);
    for (int i = 0; i < VRNIC_WORK__MAX; i++) {
        qemu_bh_cancel(s->bh[i]);
    }
    timer_del(s->timer);
    vrnic_core_reset(&s->core);
}

/* Device state is not described for migration yet: refuse to migrate. */
static const VMStateDescription vrnic_vmstate = {
    .name = "vrnic",
    .unmigratable = 1,
};

static const Property vrnic_props[] = {
    DEFINE_NIC_PROPERTIES(VrnicState, conf),
    DEFINE_PROP_UINT32("num-comp-vectors", VrnicState, cfg.num_comp_vectors, 4),
    DEFINE_PROP_UINT32("db-pages", VrnicState, cfg.db_pages, 64),
    DEFINE_PROP_UINT32("gid-table-size", VrnicState, cfg.gid_tbl_len, 16),
    DEFINE_PROP_UINT32("max-mtu", VrnicState, cfg.max_mtu, 9000),
    DEFINE_PROP_UINT32("speed-mbps", VrnicState, cfg.speed_mbps, 25000),
    DEFINE_PROP_UINT32("cmd-timeout-ms", VrnicState, cfg.cmd_timeout_ms, 5000),
    DEFINE_PROP_UINT32("max-qp", VrnicState, cfg.max_qp, 1024),
    DEFINE_PROP_UINT32("max-qp-wr", VrnicState, cfg.max_qp_wr, 4096),
    DEFINE_PROP_UINT32("max-sge", VrnicState, cfg.max_sge, 16),
    DEFINE_PROP_UINT32("max-cq", VrnicState, cfg.max_cq, 1024),
    DEFINE_PROP_UINT32("max-cqe", VrnicState, cfg.max_cqe, 32768),
    DEFINE_PROP_UINT32("max-mr", VrnicState, cfg.max_mr, 4096),
    DEFINE_PROP_UINT32("max-pd", VrnicState, cfg.max_pd, 1024),
    DEFINE_PROP_UINT32("max-srq", VrnicState, cfg.max_srq, 256),
    DEFINE_PROP_UINT32("max-srq-wr", VrnicState, cfg.max_srq_wr, 4096),
    DEFINE_PROP_UINT32("max-inline-data", VrnicState, cfg.max_inline_data, 256),
    /* 128 like rdma_rxe: perftest sets max_rd_atomic to the peer's value. */
    DEFINE_PROP_UINT32("max-qp-rd-atom", VrnicState, cfg.max_qp_rd_atom, 128),
    DEFINE_PROP_UINT32("dm-size", VrnicState, cfg.dm_size, 256 * KiB),
};

/*
 * Fault injection (vrnic_fault.c). QOM class properties rather than qdev
 * ones, because qdev properties cannot change after realize: these are set
 * with -device vrnic,fault-drop-ppm=10000,... and at run time with qom-set
 * (QMP or HMP), taking effect at once.
 */
typedef struct VrnicFaultProp {
    const char *name;
    size_t offset;          /* of a uint32_t in VrnicFaultCfg */
    uint32_t max;
    const char *desc;
    uint32_t min;
} VrnicFaultProp;

static const VrnicFaultProp vrnic_fault_props[] = {
    { "fault-drop-ppm", offsetof(VrnicFaultCfg, drop_ppm), VRNIC_FAULT_PPM,
      "RoCEv2 frames dropped, parts per million" },
    { "fault-reorder-ppm", offsetof(VrnicFaultCfg, reorder_ppm),
      VRNIC_FAULT_PPM, "frames held back behind later ones, ppm" },
    { "fault-reorder-depth", offsetof(VrnicFaultCfg, reorder_depth),
      VRNIC_FAULT_MAX_DEPTH, "frames a reordered frame lets past (1-64)",
      1 },
    { "fault-dup-ppm", offsetof(VrnicFaultCfg, dup_ppm), VRNIC_FAULT_PPM,
      "frames delivered twice, ppm" },
    { "fault-corrupt-ppm", offsetof(VrnicFaultCfg, corrupt_ppm),
      VRNIC_FAULT_PPM, "frames with one ICRC-covered bit flipped, ppm" },
    { "fault-delay-us", offsetof(VrnicFaultCfg, delay_us),
      VRNIC_FAULT_MAX_DELAY, "extra delay of every frame, microseconds" },
};

static void vrnic_fault_apply(VrnicState *s)
{
    if (DEVICE(s)->realized) {
        vrnic_core_set_faults(&s->core, &s->fault);
    }
}

static void vrnic_fault_get_u32(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    const VrnicFaultProp *p = opaque;
    uint32_t val = *(uint32_t *)((char *)&VRNIC(obj)->fault + p->offset);

    visit_type_uint32(v, name, &val, errp);
}

static void vrnic_fault_set_u32(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    const VrnicFaultProp *p = opaque;
    VrnicState *s = VRNIC(obj);
    uint32_t val;

    if (!visit_type_uint32(v, name, &val, errp)) {
        return;
    }
    if (val < p->min || val > p->max) {
        error_setg(errp, "vrnic: %s must be %u..%u", name, p->min, p->max);
        return;
    }
    *(uint32_t *)((char *)&s->fault + p->offset) = val;
    vrnic_fault_apply(s);
}

static void vrnic_fault_get_seed(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    visit_type_uint64(v, name, &VRNIC(obj)->fault.seed, errp);
}

static void vrnic_fault_set_seed(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    VrnicState *s = VRNIC(obj);
    uint64_t val;

    if (visit_type_uint64(v, name, &val, errp)) {
        s->fault.seed = val;
        vrnic_fault_apply(s);
    }
}

static const char *const vrnic_fault_dirs[] = {
    [VRNIC_FAULT_DIR_TX] = "tx",
    [VRNIC_FAULT_DIR_RX] = "rx",
    [VRNIC_FAULT_DIR_TX | VRNIC_FAULT_DIR_RX] = "both",
};

static char *vrnic_fault_get_dir(Object *obj, Error **errp)
{
    return g_strdup(vrnic_fault_dirs[VRNIC(obj)->fault.dir]);
}

static void vrnic_fault_set_dir(Object *obj, const char *val, Error **errp)
{
    VrnicState *s = VRNIC(obj);

    for (uint32_t d = 1; d < ARRAY_SIZE(vrnic_fault_dirs); d++) {
        if (!strcmp(val, vrnic_fault_dirs[d])) {
            s->fault.dir = d;
            vrnic_fault_apply(s);
            return;
        }
    }
    error_setg(errp, "vrnic: fault-dir must be tx, rx or both");
}

static void vrnic_instance_init(Object *obj)
{
    VrnicState *s = VRNIC(obj);

    s->fault.reorder_depth = 3;
    s->fault.dir = VRNIC_FAULT_DIR_TX;
}

static void vrnic_class_add_fault_props(ObjectClass *oc)
{
    for (size_t i = 0; i < ARRAY_SIZE(vrnic_fault_props); i++) {
        const VrnicFaultProp *p = &vrnic_fault_props[i];

        object_class_property_add(oc, p->name, "uint32", vrnic_fault_get_u32,
                                  vrnic_fault_set_u32, NULL, (void *)p);
        object_class_property_set_description(oc, p->name, p->desc);
    }
    object_class_property_add(oc, "fault-seed", "uint64",
                              vrnic_fault_get_seed, vrnic_fault_set_seed,
                              NULL, NULL);
    object_class_property_set_description(oc, "fault-seed",
        "start of the fault injector's random sequence (0: a fixed one)");
    object_class_property_add_str(oc, "fault-dir", vrnic_fault_get_dir,
                                  vrnic_fault_set_dir);
    object_class_property_set_description(oc, "fault-dir",
        "frames the injector acts on: tx (default), rx or both");
}

static void vrnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = vrnic_realize;
    pc->exit = vrnic_exit;
    pc->vendor_id = VRNIC_PCI_VENDOR_ID;
    pc->device_id = VRNIC_PCI_DEVICE_ID;
    pc->revision = VRNIC_PCI_REVISION;
    pc->class_id = VRNIC_PCI_CLASS;
    pc->subsystem_vendor_id = VRNIC_PCI_VENDOR_ID;
    pc->subsystem_id = VRNIC_PCI_DEVICE_ID;

    rc->phases.hold = vrnic_reset_hold;
    dc->desc = "vrnic emulated RoCEv2 RDMA NIC";
    dc->vmsd = &vrnic_vmstate;
    device_class_set_props(dc, vrnic_props);
    vrnic_class_add_fault_props(klass);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo vrnic_info = {
    .name = TYPE_VRNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(VrnicState),
    .instance_init = vrnic_instance_init,
    .class_init = vrnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void vrnic_register_types(void)
{
    type_register_static(&vrnic_info);
}

type_init(vrnic_register_types)
