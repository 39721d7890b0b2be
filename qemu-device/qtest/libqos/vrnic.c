/*
 * libqos driver for the vrnic PCI function.
 *
 * A minimal driver in the style of libqos/igb.c: it finds the function,
 * maps BAR0, runs the admin queue synchronously (one command at a time,
 * owner phase and a cmd_id cookie checked on every completion) and the
 * async event queue. The rules it follows are those of vrnic's
 * Documentation/programming-reference.rst; the structures are those of
 * standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "../libqtest.h"
#include "pci-pc.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "vrnic.h"

static QTestState *qvrnic_qts(QVrnic *d)
{
    return d->pdev->bus->qts;
}

uint32_t qvrnic_readl(QVrnic *d, uint32_t reg)
{
    return qpci_io_readl(d->pdev, d->bar0, reg);
}

void qvrnic_writel(QVrnic *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(d->pdev, d->bar0, reg, val);
}

void qvrnic_init(QVrnic *d, QPCIDevice *pdev, QGuestAllocator *alloc)
{
    memset(d, 0, sizeof(*d));
    d->pdev = pdev;
    d->alloc = alloc;
    /* Memory decoding for BAR0, bus mastering for every ring. */
    qpci_device_enable(pdev);
    d->bar0 = qpci_iomap(pdev, VRNIC_BAR_REGS, NULL);
    d->next_cmd_id = 0x100;
}

void qvrnic_uninit(QVrnic *d)
{
    if (d->aq_owned) {
        guest_free(d->alloc, d->aq_sq);
        guest_free(d->alloc, d->aq_cq);
    }
    if (d->aeq) {
        guest_free(d->alloc, d->aeq);
    }
    qpci_iounmap(d->pdev, d->bar0);
}

/* DEV_CTRL.reset: every ring idle, every object gone (a driver's first act). */
void qvrnic_reset(QVrnic *d)
{
    qvrnic_writel(d, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    d->aq_pi = d->aq_ci = 0;
    d->aeq_ci = 0;
}

void qvrnic_admin_enable_at(QVrnic *d, uint32_t log_depth, bool irq,
                            uint64_t sq, uint64_t cq)
{
    uint32_t depth = 1u << log_depth;
    uint32_t cfg = VRNIC_RING_CFG_ENABLE | log_depth |
                   (irq ? VRNIC_RING_CFG_IRQ_EN : 0);

    if (d->aq_owned) {
        guest_free(d->alloc, d->aq_sq);
        guest_free(d->alloc, d->aq_cq);
    }
    d->aq_owned = !sq;
    if (!sq) {
        /* The allocator aligns to 4 KiB, more than VRNIC_RING_ALIGN. */
        sq = guest_alloc(d->alloc, depth * VRNIC_AQ_CMD_SIZE);
        cq = guest_alloc(d->alloc, depth * VRNIC_AQ_CQE_SIZE);
        /* Phase 0 everywhere: the device's first pass writes phase 1. */
        qtest_memset(qvrnic_qts(d), cq, 0, depth * VRNIC_AQ_CQE_SIZE);
    }
    d->aq_sq = sq;
    d->aq_cq = cq;
    d->aq_log_depth = log_depth;
    d->aq_pi = d->aq_ci = 0;

    qvrnic_writel(d, VRNIC_REG_AQ_SQ_BASE_LO, (uint32_t)sq);
    qvrnic_writel(d, VRNIC_REG_AQ_SQ_BASE_HI, sq >> 32);
    qvrnic_writel(d, VRNIC_REG_AQ_CQ_BASE_LO, (uint32_t)cq);
    qvrnic_writel(d, VRNIC_REG_AQ_CQ_BASE_HI, cq >> 32);
    qvrnic_writel(d, VRNIC_REG_AQ_CFG, cfg);
    /* Bit 31 reads back set only if the device accepted the enable. */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_AQ_CFG), ==, cfg);
}

void qvrnic_admin_enable(QVrnic *d, uint32_t log_depth, bool irq)
{
    qvrnic_admin_enable_at(d, log_depth, irq, 0, 0);
}

/* Write one command into the next SQ slot with a fresh cmd_id, ring AQ_PI. */
uint16_t qvrnic_admin_post(QVrnic *d, void *cmd)
{
    struct vrnic_aq_hdr *hdr = cmd;
    uint32_t mask = (1u << d->aq_log_depth) - 1;
    uint16_t id = d->next_cmd_id++;

    /* The driver keeps pi at most one ring ahead of what it consumed. */
    g_assert_cmpuint((uint16_t)(d->aq_pi - d->aq_ci), <, mask + 1);
    hdr->cmd_id = cpu_to_le16(id);
    qtest_memwrite(qvrnic_qts(d),
                   d->aq_sq + (uint64_t)(d->aq_pi & mask) * VRNIC_AQ_CMD_SIZE,
                   cmd, VRNIC_AQ_CMD_SIZE);
    d->aq_pi++;
    qvrnic_writel(d, VRNIC_REG_AQ_PI, d->aq_pi);
    return id;
}

/*
 * Wait for the completion at the driver's consumer index: it is new when
 * its phase is !((ci >> log_depth) & 1). False on timeout (nothing is
 * consumed then).
 */
bool qvrnic_admin_wait(QVrnic *d, struct vrnic_aq_cqe *cqe,
                       uint64_t timeout_us)
{
    uint32_t mask = (1u << d->aq_log_depth) - 1;
    uint32_t phase = !((d->aq_ci >> d->aq_log_depth) & 1);
    uint64_t slot = d->aq_cq + (uint64_t)(d->aq_ci & mask) * VRNIC_AQ_CQE_SIZE;
    gint64 end = g_get_monotonic_time() + timeout_us;

    for (;;) {
        qtest_memread(qvrnic_qts(d), slot, cqe, sizeof(*cqe));
        if ((le32_to_cpu(cqe->owner) & VRNIC_OWNER_PHASE) == phase) {
            break;
        }
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(100);
    }
    /* Bits 31:1 of owner and rsvd0 are reserved: the device writes 0. */
    g_assert_cmphex(le32_to_cpu(cqe->owner), ==, phase);
    g_assert_cmpuint(cqe->rsvd0, ==, 0);
    d->aq_ci++;
    return true;
}

/*
 * Submit cmd (VRNIC_AQ_CMD_SIZE bytes) and wait for its completion, which
 * must carry our cookie and, unless OK, a zero result. Returns the status.
 */
uint8_t qvrnic_admin_cmd(QVrnic *d, void *cmd, struct vrnic_aq_cqe *cqe)
{
    struct vrnic_aq_cqe local;
    uint16_t id;

    cqe = cqe ?: &local;
    id = qvrnic_admin_post(d, cmd);
    if (!qvrnic_admin_wait(d, cqe, QVRNIC_TIMEOUT_US)) {
        g_test_message("no completion for cmd_id 0x%x (DEV_STS 0x%x)", id,
                       qvrnic_readl(d, VRNIC_REG_DEV_STS));
        g_assert_not_reached();
    }
    g_assert_cmphex(le16_to_cpu(cqe->cmd_id), ==, id);
    if (cqe->status != VRNIC_AQ_STS_OK) {
        g_assert_cmphex(le64_to_cpu(cqe->result), ==, 0);
    }
    return cqe->status;
}

uint8_t qvrnic_query(QVrnic *d, uint16_t opcode, uint32_t index,
                     uint64_t resp_addr, uint32_t resp_len)
{
    struct vrnic_aq_query q = {
        .hdr.opcode = cpu_to_le16(opcode),
        .resp_addr = cpu_to_le64(resp_addr),
        .resp_len = cpu_to_le32(resp_len),
        .index = cpu_to_le32(index),
    };

    return qvrnic_admin_cmd(d, &q, NULL);
}

void qvrnic_aeq_enable(QVrnic *d, uint32_t log_depth)
{
    uint32_t size = (1u << log_depth) * VRNIC_AEQE_SIZE;
    uint32_t cfg = VRNIC_RING_CFG_ENABLE | log_depth;

    if (d->aeq) {
        guest_free(d->alloc, d->aeq);
    }
    d->aeq = guest_alloc(d->alloc, size);
    qtest_memset(qvrnic_qts(d), d->aeq, 0, size);
    d->aeq_log_depth = log_depth;
    d->aeq_ci = 0;
    qvrnic_writel(d, VRNIC_REG_AEQ_BASE_LO, (uint32_t)d->aeq);
    qvrnic_writel(d, VRNIC_REG_AEQ_BASE_HI, d->aeq >> 32);
    qvrnic_writel(d, VRNIC_REG_AEQ_CFG, cfg);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_AEQ_CFG), ==, cfg);
}

/* Tell the device what we consumed and ask for vector 0 at the next event. */
void qvrnic_aeq_arm(QVrnic *d)
{
    qvrnic_writel(d, VRNIC_REG_AEQ_CI, VRNIC_AEQ_CI_ARM | d->aeq_ci);
}

bool qvrnic_aeq_next(QVrnic *d, struct vrnic_aeqe *e, uint64_t timeout_us)
{
    uint32_t mask = (1u << d->aeq_log_depth) - 1;
    uint32_t phase = !((d->aeq_ci >> d->aeq_log_depth) & 1);
    uint64_t slot = d->aeq + (uint64_t)(d->aeq_ci & mask) * VRNIC_AEQE_SIZE;
    gint64 end = g_get_monotonic_time() + timeout_us;

    for (;;) {
        qtest_memread(qvrnic_qts(d), slot, e, sizeof(*e));
        if ((le32_to_cpu(e->owner) & VRNIC_OWNER_PHASE) == phase) {
            break;
        }
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(100);
    }
    g_assert_cmphex(le32_to_cpu(e->owner), ==, phase);
    g_assert_cmphex(le32_to_cpu(e->rsvd0), ==, 0);
    d->aeq_ci++;
    return true;
}

void qvrnic_msix_set_vector(QVrnic *d, uint16_t entry, uint64_t addr,
                            uint32_t data, bool masked)
{
    QPCIDevice *pdev = d->pdev;
    uint64_t off = pdev->msix_table_off + entry * PCI_MSIX_ENTRY_SIZE;

    g_assert(pdev->msix_enabled);
    qpci_io_writel(pdev, pdev->msix_table_bar, off + PCI_MSIX_ENTRY_LOWER_ADDR,
                   (uint32_t)addr);
    qpci_io_writel(pdev, pdev->msix_table_bar, off + PCI_MSIX_ENTRY_UPPER_ADDR,
                   addr >> 32);
    qpci_io_writel(pdev, pdev->msix_table_bar, off + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(pdev, pdev->msix_table_bar, off + PCI_MSIX_ENTRY_VECTOR_CTRL,
                   masked ? PCI_MSIX_ENTRY_CTRL_MASKBIT : 0);
}

/* ---- qgraph node --------------------------------------------------------- */

static void qvrnic_pci_destructor(QOSGraphObject *obj)
{
    QVrnicPCI *v = (QVrnicPCI *)obj;

    if (v->pci_dev.msix_enabled) {
        qpci_msix_disable(&v->pci_dev);
    }
    qvrnic_uninit(&v->vrnic);
}

static void *qvrnic_pci_get_driver(void *obj, const char *interface)
{
    QVrnicPCI *v = obj;

    if (!g_strcmp0(interface, "vrnic-if")) {
        return &v->vrnic;
    }
    if (!g_strcmp0(interface, "pci-device")) {
        return &v->pci_dev;
    }
    fprintf(stderr, "%s not present in vrnic\n", interface);
    g_assert_not_reached();
}

static void qvrnic_foreach_cb(QPCIDevice *dev, int devfn, void *data)
{
    QPCIDevice *res = data;

    memcpy(res, dev, sizeof(QPCIDevice));
    g_free(dev);
}

static void *qvrnic_pci_create(void *pci_bus, QGuestAllocator *alloc,
                               void *addr)
{
    QVrnicPCI *v = g_new0(QVrnicPCI, 1);
    QPCIAddress *address = addr;

    qpci_device_foreach(pci_bus, address->vendor_id, address->device_id,
                        qvrnic_foreach_cb, &v->pci_dev);
    g_assert(v->pci_dev.bus);
    qvrnic_init(&v->vrnic, &v->pci_dev, alloc);

    v->obj.get_driver = qvrnic_pci_get_driver;
    v->obj.destructor = qvrnic_pci_destructor;
    return &v->obj;
}

static void qvrnic_register_nodes(void)
{
    QPCIAddress addr = {
        .vendor_id = VRNIC_PCI_VENDOR_ID,
        .device_id = VRNIC_PCI_DEVICE_ID,
    };
    /*
     * Every test on this node must provide -netdev ...,id=hs0 (a hubport
     * when it sends nothing, a socketpair when it checks frames).
     */
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "id=" QVRNIC_ID ",netdev=" QVRNIC_NETDEV_ID
                             ",mac=" QVRNIC_MAC_STR
                             ",num-comp-vectors=" stringify(QVRNIC_NUM_COMP)
                             ",db-pages=" stringify(QVRNIC_DB_PAGES)
                             ",dm-size=" stringify(QVRNIC_DM_SIZE)
                             ",max-qp=" stringify(QVRNIC_MAX_QP),
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("vrnic", qvrnic_pci_create);
    qos_node_consumes("vrnic", "pci-bus", &opts);
}

libqos_init(qvrnic_register_nodes);
