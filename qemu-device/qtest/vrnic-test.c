/*
 * QTest testcases for the vrnic PCI function.
 *
 * Two kinds of test live here:
 *
 * - qgraph tests (qos_add_test) on the "vrnic" libqos node, which the
 *   framework plugs into every PCI bus it knows (on x86_64 the pc machine's):
 *   identity and BARs, the admin queue, the async event queue, the Ethernet
 *   rings and MSI-X;
 *
 * - q35 tests (qtest_add_func) that put the device behind a pcie-root-port,
 *   because what they check involves the port: hot-unplug with frames still
 *   queued in the netdev, and device DMA aimed at the port's own
 *   configuration space through MMCONFIG.
 *
 * Every expected value comes from the device's interface definition
 * (standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h), from its
 * programming reference or from the properties the test gave the device
 * (libqos/vrnic.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/module.h"
#include "qemu/sockets.h"
#include "libqos/qgraph.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "libqos/vrnic.h"

/* An EtherType for local experiments (IEEE 802): nothing interprets it. */
#define VRNIC_TEST_ETHERTYPE    0x88b5
#define ETH_HLEN                14
/* The IOThread of the tests that run the device's work in one. */
#define VRNIC_TEST_IOTHREAD     "vrnic-io"

static QTestState *vrnic_qts(QVrnic *d)
{
    return d->pdev->bus->qts;
}

/* ---- PCI identity, BARs, registers --------------------------------------- */

/*
 * Size a BAR the way firmware does (all ones, read back, restore) with
 * memory decoding off, so the probe value is never decoded. Returns the
 * raw probe value: size bits and type bits.
 */
static uint32_t bar_probe(QPCIDevice *pdev, int bar)
{
    uint8_t reg = PCI_BASE_ADDRESS_0 + 4 * bar;
    uint16_t cmd = qpci_config_readw(pdev, PCI_COMMAND);
    uint32_t old = qpci_config_readl(pdev, reg);
    uint32_t probe;

    qpci_config_writew(pdev, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
    qpci_config_writel(pdev, reg, 0xffffffff);
    probe = qpci_config_readl(pdev, reg);
    qpci_config_writel(pdev, reg, old);
    qpci_config_writew(pdev, PCI_COMMAND, cmd);
    return probe;
}

static uint32_t bar_size(uint32_t probe)
{
    return 1u << ctz32(probe & PCI_BASE_ADDRESS_MEM_MASK);
}

static void test_probe(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnicPCI *v = obj;
    QPCIDevice *pdev = &v->pci_dev;
    QVrnic *d = &v->vrnic;
    static const uint8_t mac[] = QVRNIC_MAC;
    uint32_t probe, val;

    g_assert_cmphex(qpci_config_readw(pdev, PCI_VENDOR_ID), ==,
                    VRNIC_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_DEVICE_ID), ==,
                    VRNIC_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(pdev, PCI_REVISION_ID), ==,
                    VRNIC_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_CLASS_DEVICE), ==,
                    VRNIC_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(pdev, PCI_CLASS_PROG), ==, 0);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_SUBSYSTEM_VENDOR_ID), ==,
                    VRNIC_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(pdev, PCI_SUBSYSTEM_ID), ==,
                    VRNIC_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(pdev, PCI_HEADER_TYPE), ==,
                    PCI_HEADER_TYPE_NORMAL);
    /* MSI-X only: no INTx pin. */
    g_assert_cmphex(qpci_config_readb(pdev, PCI_INTERRUPT_PIN), ==, 0);
    g_assert_cmphex(qpci_find_capability(pdev, PCI_CAP_ID_EXP, 0), ==, 0xa0);
    g_assert_cmphex(qpci_find_capability(pdev, PCI_CAP_ID_MSIX, 0), !=, 0);
    g_assert_cmpuint(qpci_msix_table_size(pdev), ==,
                     VRNIC_VEC_COMP_FIRST + QVRNIC_NUM_COMP);

    /* The BAR map of the programming reference, sized by the properties. */
    probe = bar_probe(pdev, VRNIC_BAR_REGS);
    g_assert_cmphex(probe & ~PCI_BASE_ADDRESS_MEM_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmpuint(bar_size(probe), ==, VRNIC_BAR0_SIZE);
    probe = bar_probe(pdev, VRNIC_BAR_DB);
    g_assert_cmphex(probe & ~PCI_BASE_ADDRESS_MEM_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmpuint(bar_size(probe), ==, QVRNIC_DB_PAGES * 4096);
    probe = bar_probe(pdev, VRNIC_BAR_MSIX);
    g_assert_cmphex(probe & ~PCI_BASE_ADDRESS_MEM_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_32);
    g_assert_cmpuint(bar_size(probe), ==, 4096);
    probe = bar_probe(pdev, VRNIC_BAR_DM);
    g_assert_cmphex(probe & ~PCI_BASE_ADDRESS_MEM_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_32 |
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmpuint(bar_size(probe), ==, QVRNIC_DM_SIZE);

    /* BAR0 decodes after the probing (the BAR was restored). */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_ID), ==, VRNIC_ID_MAGIC);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_VERSION), ==,
                    VRNIC_FIELD_PREP(VRNIC_VERSION_MAJOR_MASK,
                                     VRNIC_VERSION_MAJOR) |
                    VRNIC_FIELD_PREP(VRNIC_VERSION_MINOR_MASK,
                                     VRNIC_VERSION_MINOR));
    val = qvrnic_readl(d, VRNIC_REG_CAP_VEC);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_VEC_TOTAL_MASK, val), ==,
                     VRNIC_VEC_COMP_FIRST + QVRNIC_NUM_COMP);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_VEC_NUM_COMP_MASK, val), ==,
                     QVRNIC_NUM_COMP);
    val = qvrnic_readl(d, VRNIC_REG_CAP_DB);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_DB_PAGE_SHIFT_MASK, val), ==,
                     12);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_DB_NUM_PAGES_MASK, val), ==,
                     QVRNIC_DB_PAGES);
    val = qvrnic_readl(d, VRNIC_REG_CAP_AQ);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_AQ_LOG_DEPTH_MASK, val), ==,
                     VRNIC_AQ_MAX_LOG_DEPTH);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_AQ_AEQ_LOG_DEPTH_MASK, val), ==,
                     VRNIC_AEQ_MAX_LOG_DEPTH);
    val = qvrnic_readl(d, VRNIC_REG_CAP_ETH);
    g_assert_cmpuint(VRNIC_FIELD_GET(VRNIC_CAP_ETH_LOG_DEPTH_MASK, val), ==,
                     VRNIC_ETH_MAX_LOG_DEPTH);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_MAC_LO), ==, ldl_le_p(mac));
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_MAC_HI), ==, lduw_le_p(mac + 4));
    /* Ready, not FATAL, link up (the hubport's link is up). */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_STS), ==,
                    VRNIC_DEV_STS_READY | VRNIC_DEV_STS_LINK_UP);
    /* Write-only and unassigned offsets read 0. */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_CTRL), ==, 0);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_AQ_PI), ==, 0);
    g_assert_cmphex(qvrnic_readl(d, 0xffc), ==, 0);
}

/* The clock page reads the host's real time in ns, HI/LO/HI paired. */
static uint64_t read_device_clock(QVrnic *d)
{
    uint32_t hi, lo;

    do {
        hi = qvrnic_readl(d, VRNIC_REG_CLOCK_HI);
        lo = qvrnic_readl(d, VRNIC_REG_CLOCK_LO);
    } while (hi != qvrnic_readl(d, VRNIC_REG_CLOCK_HI));
    return (uint64_t)hi << 32 | lo;
}

static void test_clock(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnic *d = &((QVrnicPCI *)obj)->vrnic;
    uint64_t before = g_get_real_time() * 1000ull;
    uint64_t t1 = read_device_clock(d);
    uint64_t t2 = read_device_clock(d);
    uint64_t after = g_get_real_time() * 1000ull;

    /* g_get_real_time() has us resolution: allow its truncation. */
    g_assert_cmpuint(t1 + 1000, >=, before);
    g_assert_cmpuint(t1, <=, t2);
    g_assert_cmpuint(t2, <=, after + 1000);
    /* Read-only: a write changes nothing and the clock keeps counting. */
    qvrnic_writel(d, VRNIC_REG_CLOCK_LO, 0);
    qvrnic_writel(d, VRNIC_REG_CLOCK_HI, 0);
    g_assert_cmpuint(read_device_clock(d), >=, t2);
    /* The rest of the page reads 0. */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_CLOCK_PAGE + 8), ==, 0);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_BAR0_SIZE - 4), ==, 0);
}

/* ---- admin queue --------------------------------------------------------- */

static void check_device_attr(QVrnic *d, const struct vrnic_device_attr *a)
{
    static const uint8_t mac[] = QVRNIC_MAC;
    const uint8_t guid[8] = {
        mac[0] ^ 0x02, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]
    };
    uint32_t version = qvrnic_readl(d, VRNIC_REG_VERSION);

    /* fw_version follows the interface: major.minor.0 */
    g_assert_cmphex(le64_to_cpu(a->fw_version), ==,
                    (uint64_t)VRNIC_FIELD_GET(VRNIC_VERSION_MAJOR_MASK,
                                              version) << 32 |
                    VRNIC_FIELD_GET(VRNIC_VERSION_MINOR_MASK, version) << 16);
    g_assert_cmpmem(a->node_guid, 8, guid, 8);
    g_assert_cmpmem(a->sys_image_guid, 8, guid, 8);
    g_assert_cmphex(le64_to_cpu(a->page_size_cap), ==, VRNIC_PAGE_SIZE_CAP);
    g_assert_cmphex(le32_to_cpu(a->vendor_id), ==, VRNIC_PCI_VENDOR_ID);
    g_assert_cmphex(le32_to_cpu(a->vendor_part_id), ==, VRNIC_PCI_DEVICE_ID);
    g_assert_cmphex(le32_to_cpu(a->hw_version), ==, VRNIC_PCI_REVISION);
    g_assert_cmpuint(le32_to_cpu(a->max_qp), ==, QVRNIC_MAX_QP);
    g_assert_cmpuint(le32_to_cpu(a->num_comp_vectors), ==, QVRNIC_NUM_COMP);
    g_assert_cmphex(le32_to_cpu(a->device_caps), ==,
                    VRNIC_DEVICE_CAP_ATOMIC_HCA | VRNIC_DEVICE_CAP_DEVICE_MEM |
                    VRNIC_DEVICE_CAP_ON_DEMAND | VRNIC_DEVICE_CAP_ATOMIC_WRITE |
                    VRNIC_DEVICE_CAP_FLUSH | VRNIC_DEVICE_CAP_TIMESTAMP |
                    VRNIC_DEVICE_CAP_RAW_PACKET | VRNIC_DEVICE_CAP_RSS |
                    VRNIC_DEVICE_CAP_XRC);
}

static void test_admin(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnic *d = &((QVrnicPCI *)obj)->vrnic;
    QTestState *qts = vrnic_qts(d);
    static const uint8_t mac[] = QVRNIC_MAC;
    uint64_t resp = guest_alloc(alloc, 4096);
    struct vrnic_device_attr attr;
    struct vrnic_port_attr port;
    struct vrnic_aq_query q;
    struct vrnic_aq_cqe cqe;
    uint8_t pattern[sizeof(attr)];
    unsigned i;

    qvrnic_reset(d);
    /* Depth 4: ten commands go round the ring two and a half times. */
    qvrnic_admin_enable(d, 2, false);
    for (i = 0; i < 10; i++) {
        memset(&q, 0, sizeof(q));
        q.hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_QUERY_DEVICE);
        q.resp_addr = cpu_to_le64(resp);
        q.resp_len = cpu_to_le32(sizeof(attr));
        qtest_memset(qts, resp, 0xa5, sizeof(attr));
        g_assert_cmpuint(qvrnic_admin_cmd(d, &q, &cqe), ==, VRNIC_AQ_STS_OK);
        /* Phase 1 on the first pass, 0 on the second, 1 on the third. */
        g_assert_cmphex(le32_to_cpu(cqe.owner), ==, ((i >> 2) & 1) ^ 1);
        g_assert_cmphex(le64_to_cpu(cqe.result), ==, 0);
        qtest_memread(qts, resp, &attr, sizeof(attr));
        check_device_attr(d, &attr);
    }

    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_PORT, 1, resp,
                                  sizeof(port)), ==, VRNIC_AQ_STS_OK);
    qtest_memread(qts, resp, &port, sizeof(port));
    g_assert_cmpmem(port.mac, 6, mac, 6);
    g_assert_cmphex(le32_to_cpu(port.flags) & VRNIC_PORT_FLAG_LINK_UP, ==,
                    VRNIC_PORT_FLAG_LINK_UP);

    /*
     * Bad commands complete with their status (never silence), in the
     * documented check order, and write nothing to resp_addr.
     */
    memset(pattern, 0x5a, sizeof(pattern));
    qtest_memwrite(qts, resp, pattern, sizeof(pattern));
    memset(&q, 0, sizeof(q));
    q.hdr.opcode = cpu_to_le16(0x09);               /* between 0x08 and 0x10 */
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_OPCODE);
    q.hdr.opcode = 0;
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_OPCODE);
    /* past the last one */
    q.hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_DEALLOC_XRCD + 1);
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_OPCODE);
    /* hdr.rsvd0 is checked before the opcode. */
    q.hdr.rsvd0 = cpu_to_le32(1);
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_FIELD);

    memset(&q, 0, sizeof(q));
    q.hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_QUERY_DEVICE);
    q.resp_addr = cpu_to_le64(resp);
    q.resp_len = cpu_to_le32(sizeof(attr));
    q.rsvd0[sizeof(q.rsvd0) - 1] = 1;
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_FIELD);
    q.rsvd0[sizeof(q.rsvd0) - 1] = 0;
    q.index = cpu_to_le32(1);
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_INDEX);
    q.index = 0;
    q.resp_len = cpu_to_le32(sizeof(attr) - 1);
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_BAD_FIELD);
    qtest_memread(qts, resp, &attr, sizeof(attr));
    g_assert_cmpmem(&attr, sizeof(attr), pattern, sizeof(pattern));

    /* An answer buffer nothing decodes: a command failure, not FATAL. */
    q.resp_len = cpu_to_le32(sizeof(attr));
    q.resp_addr = cpu_to_le64(1ULL << 50);
    g_assert_cmpuint(qvrnic_admin_cmd(d, &q, NULL), ==,
                     VRNIC_AQ_STS_DMA_ERROR);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_STS) & VRNIC_DEV_STS_FATAL,
                    ==, 0);

    /* And the queue still works. */
    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_DEVICE, 0, resp,
                                  sizeof(attr)), ==, VRNIC_AQ_STS_OK);
    qtest_memread(qts, resp, &attr, sizeof(attr));
    check_device_attr(d, &attr);
    guest_free(alloc, resp);
}

/* ---- MSI-X --------------------------------------------------------------- */

/*
 * MSI-X messages aimed at guest RAM: with no CPU to take the interrupt,
 * the message write itself is what the test observes.
 */
static void test_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnicPCI *v = obj;
    QVrnic *d = &v->vrnic;
    QPCIDevice *pdev = &v->pci_dev;
    QTestState *qts = vrnic_qts(d);
    uint64_t resp = guest_alloc(alloc, 4096);
    uint64_t msg = guest_alloc(alloc, 4096);
    const uint32_t magic = 0x76720000 | VRNIC_VEC_ADMIN;
    uint16_t vec;

    qvrnic_reset(d);
    qpci_msix_enable(pdev);
    qtest_writel(qts, msg, 0);
    for (vec = 0; vec < qpci_msix_table_size(pdev); vec++) {
        g_assert(qpci_msix_masked(pdev, vec));      /* the reset state */
        g_assert(!qpci_msix_pending(pdev, vec));
    }
    qvrnic_msix_set_vector(d, VRNIC_VEC_ADMIN, msg, magic, true);

    /* irq_en clear: completions raise nothing. */
    qvrnic_admin_enable(d, 3, false);
    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_DEVICE, 0, resp,
                                  sizeof(struct vrnic_device_attr)), ==,
                     VRNIC_AQ_STS_OK);
    g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));

    /* irq_en may change while the queue is live. */
    qvrnic_writel(d, VRNIC_REG_AQ_CFG, VRNIC_RING_CFG_ENABLE |
                  VRNIC_RING_CFG_IRQ_EN | d->aq_log_depth);
    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_DEVICE, 0, resp,
                                  sizeof(struct vrnic_device_attr)), ==,
                     VRNIC_AQ_STS_OK);
    /* Masked: latched in the PBA, nothing written. */
    g_assert(qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
    g_assert(qpci_msix_masked(pdev, VRNIC_VEC_ADMIN));
    g_assert_cmphex(qtest_readl(qts, msg), ==, 0);
    for (vec = 0; vec < qpci_msix_table_size(pdev); vec++) {
        if (vec != VRNIC_VEC_ADMIN) {
            g_assert(!qpci_msix_pending(pdev, vec));
        }
    }
    /* Unmasking delivers the latched message and clears the PBA bit. */
    qvrnic_msix_set_vector(d, VRNIC_VEC_ADMIN, msg, magic, false);
    g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
    g_assert_cmphex(qtest_readl(qts, msg), ==, magic);

    /*
     * Unmasked: the message is written by the run that wrote the
     * completion, so it is there once the completion is.
     */
    qtest_writel(qts, msg, 0);
    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_PORT, 1, resp,
                                  sizeof(struct vrnic_port_attr)), ==,
                     VRNIC_AQ_STS_OK);
    g_assert_cmphex(qtest_readl(qts, msg), ==, magic);
    g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));

    /* The function mask latches too. */
    qtest_writel(qts, msg, 0);
    {
        uint8_t cap = qpci_find_capability(pdev, PCI_CAP_ID_MSIX, 0);
        uint16_t ctl = qpci_config_readw(pdev, cap + PCI_MSIX_FLAGS);

        qpci_config_writew(pdev, cap + PCI_MSIX_FLAGS,
                           ctl | PCI_MSIX_FLAGS_MASKALL);
        g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_DEVICE, 0, resp,
                                      sizeof(struct vrnic_device_attr)), ==,
                         VRNIC_AQ_STS_OK);
        g_assert(qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
        g_assert_cmphex(qtest_readl(qts, msg), ==, 0);
        qpci_config_writew(pdev, cap + PCI_MSIX_FLAGS, ctl);
        g_assert_cmphex(qtest_readl(qts, msg), ==, magic);
    }
    guest_free(alloc, resp);
    guest_free(alloc, msg);
}

/* ---- async event queue --------------------------------------------------- */

static void set_link(QTestState *qts, bool up)
{
    qtest_qmp_assert_success(qts, "{'execute': 'set_link', 'arguments': "
                             "{'name': %s, 'up': %i}}", QVRNIC_ID, up);
}

static void test_aeq(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnicPCI *v = obj;
    QVrnic *d = &v->vrnic;
    QPCIDevice *pdev = &v->pci_dev;
    QTestState *qts = vrnic_qts(d);
    uint64_t msg = guest_alloc(alloc, 4096);
    struct vrnic_aeqe e;
    unsigned i;

    qvrnic_reset(d);
    qpci_msix_enable(pdev);
    qvrnic_msix_set_vector(d, VRNIC_VEC_ADMIN, msg, 0xae0, true);
    /* Depth 4: eight link changes take the ring round twice. */
    qvrnic_aeq_enable(d, 2);
    for (i = 0; i < 8; i++) {
        bool up = i & 1;

        qvrnic_aeq_arm(d);
        g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
        set_link(qts, up);
        /* DEV_STS follows at once; the event comes from a bottom half. */
        g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_STS) &
                        VRNIC_DEV_STS_LINK_UP, ==,
                        up ? VRNIC_DEV_STS_LINK_UP : 0);
        g_assert(qvrnic_aeq_next(d, &e, QVRNIC_TIMEOUT_US));
        g_assert_cmpuint(le32_to_cpu(e.event), ==,
                         up ? VRNIC_AEQ_EV_PORT_ACTIVE :
                              VRNIC_AEQ_EV_PORT_DOWN);
        g_assert_cmpuint(le32_to_cpu(e.data), ==, 1);
        /* Armed: vector 0 fired once (latched, the vector is masked). */
        g_assert(qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
        qvrnic_msix_set_vector(d, VRNIC_VEC_ADMIN, msg, 0xae0, false);
        g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
        g_assert_cmphex(qtest_readl(qts, msg), ==, 0xae0);
        qtest_writel(qts, msg, 0);
        qvrnic_msix_set_vector(d, VRNIC_VEC_ADMIN, msg, 0xae0, true);
    }

    /* Setting the link to what it is posts nothing, and the arm stays. */
    qvrnic_aeq_arm(d);
    set_link(qts, true);
    g_assert(!qvrnic_aeq_next(d, &e, G_USEC_PER_SEC / 5));
    g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));
    guest_free(alloc, msg);
}

/* ---- Ethernet rings ------------------------------------------------------ */

static void eth_data_clear(void *sockets)
{
    int *sv = sockets;

    close(sv[0]);
    qos_invalidate_command_line();
    close(sv[1]);
    g_free(sv);
}

/* A stream socketpair as the netdev: frames cross it with a 4-byte length. */
static void *eth_data_init(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 2);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id=%s ", sv[1],
                           QVRNIC_NETDEV_ID);
    g_test_queue_destroy(eth_data_clear, sv);
    return sv;
}

static void *hubport_data_init(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line,
                    " -netdev hubport,hubid=0,id=" QVRNIC_NETDEV_ID " ");
    return arg;
}

/*
 * The same tests with the device's work in an IOThread
 * (-device vrnic,iothread=...): the admin queue and the Ethernet rings
 * then run outside the BQL, and their results reach guest memory
 * asynchronously, which the tests' polling already allows for.
 */
static void *hubport_iothread_init(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -object iothread,id=" VRNIC_TEST_IOTHREAD);
    return hubport_data_init(cmd_line, arg);
}

static void *eth_iothread_init(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -object iothread,id=" VRNIC_TEST_IOTHREAD);
    return eth_data_init(cmd_line, arg);
}

static size_t make_frame(uint8_t *buf, size_t len, const uint8_t *dst,
                         uint32_t seq)
{
    static const uint8_t src[] = QVRNIC_MAC;

    memcpy(buf, dst, 6);
    memcpy(buf + 6, src, 6);
    stw_be_p(buf + 12, VRNIC_TEST_ETHERTYPE);
    for (size_t i = ETH_HLEN; i < len; i++) {
        buf[i] = seq + i;
    }
    if (len >= ETH_HLEN + 4) {
        stl_be_p(buf + ETH_HLEN, seq);
    }
    return len;
}

static void write_desc(QTestState *qts, uint64_t ring, unsigned idx,
                       uint64_t addr, uint16_t len)
{
    struct vrnic_eth_desc desc = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le16(len),
    };

    qtest_memwrite(qts, ring + idx * sizeof(desc), &desc, sizeof(desc));
}

static bool wait_desc_done(QTestState *qts, uint64_t ring, unsigned idx,
                           struct vrnic_eth_desc *desc)
{
    gint64 end = g_get_monotonic_time() + QVRNIC_TIMEOUT_US;

    do {
        qtest_memread(qts, ring + idx * sizeof(*desc), desc, sizeof(*desc));
        if (le16_to_cpu(desc->status) & VRNIC_ETH_STS_DONE) {
            return true;
        }
        g_usleep(100);
    } while (g_get_monotonic_time() < end);
    return false;
}

static void recv_all(int fd, void *buf, size_t len)
{
    ssize_t n = recv(fd, buf, len, MSG_WAITALL);

    g_assert_cmpint(n, ==, len);
}

static void test_eth_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnicPCI *v = obj;
    QVrnic *d = &v->vrnic;
    QPCIDevice *pdev = &v->pci_dev;
    QTestState *qts = vrnic_qts(d);
    int *sv = data;
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const size_t lens[] = { ETH_HLEN, 60, 1514 };
    const unsigned n = ARRAY_SIZE(lens);
    uint64_t ring = guest_alloc(alloc, 8 * VRNIC_ETH_DESC_SIZE);
    uint64_t bufs = guest_alloc(alloc, n * 2048);
    uint8_t frame[2048], got[2048];
    struct vrnic_eth_desc desc;
    uint32_t cfg = VRNIC_RING_CFG_ENABLE | 3;
    uint32_t be_len;
    char dummy;

    qvrnic_reset(d);
    qpci_msix_enable(pdev);
    qvrnic_msix_set_vector(d, VRNIC_VEC_ETH, 0, 0, true);
    qtest_memset(qts, ring, 0, 8 * VRNIC_ETH_DESC_SIZE);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_BASE_LO, (uint32_t)ring);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_BASE_HI, ring >> 32);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_CFG, cfg);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_ETH_TX_CFG), ==, cfg);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_ARM, 0);

    /* The smallest, a short and the largest frame at the default MTU. */
    for (unsigned i = 0; i < n; i++) {
        make_frame(frame, lens[i], bcast, i);
        qtest_memwrite(qts, bufs + i * 2048, frame, lens[i]);
        write_desc(qts, ring, i, bufs + i * 2048, lens[i]);
    }
    qvrnic_writel(d, VRNIC_REG_ETH_TX_PI, n);
    for (unsigned i = 0; i < n; i++) {
        g_assert(wait_desc_done(qts, ring, i, &desc));
        g_assert_cmphex(le16_to_cpu(desc.status), ==, VRNIC_ETH_STS_DONE);
        recv_all(sv[0], &be_len, sizeof(be_len));
        g_assert_cmpuint(ntohl(be_len), ==, lens[i]);
        recv_all(sv[0], got, lens[i]);
        make_frame(frame, lens[i], bcast, i);
        g_assert_cmpmem(got, lens[i], frame, lens[i]);
    }
    /* The armed ring raised vector 1, and only vector 1. */
    g_assert(qpci_msix_pending(pdev, VRNIC_VEC_ETH));
    g_assert(!qpci_msix_pending(pdev, VRNIC_VEC_ADMIN));

    /* Too short and one past mtu + 18: done with error, nothing sent. */
    write_desc(qts, ring, n, bufs, ETH_HLEN - 1);
    write_desc(qts, ring, n + 1, bufs, 1500 + 18 + 1);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_PI, n + 2);
    for (unsigned i = n; i < n + 2; i++) {
        g_assert(wait_desc_done(qts, ring, i, &desc));
        g_assert_cmphex(le16_to_cpu(desc.status), ==,
                        VRNIC_ETH_STS_DONE | VRNIC_ETH_STS_ERROR);
    }
    g_assert_cmpint(recv(sv[0], &dummy, 1, MSG_DONTWAIT), ==, -1);
    g_assert_cmpint(errno, ==, EAGAIN);
    guest_free(alloc, ring);
    guest_free(alloc, bufs);
}

static void send_frame(int fd, const uint8_t *frame, uint32_t len)
{
    uint32_t be_len = htonl(len);

    g_assert_cmpint(send(fd, &be_len, sizeof(be_len), 0), ==, sizeof(be_len));
    g_assert_cmpint(send(fd, frame, len, 0), ==, len);
}

static void test_eth_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    QVrnicPCI *v = obj;
    QVrnic *d = &v->vrnic;
    QPCIDevice *pdev = &v->pci_dev;
    QTestState *qts = vrnic_qts(d);
    int *sv = data;
    static const uint8_t mac[] = QVRNIC_MAC;
    static const uint8_t other[] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x99 };
    uint64_t ring = guest_alloc(alloc, 4 * VRNIC_ETH_DESC_SIZE);
    uint64_t buf = guest_alloc(alloc, 2048);
    uint8_t frame[128], got[128];
    struct vrnic_eth_desc desc;
    uint32_t cfg = VRNIC_RING_CFG_ENABLE | 2;

    qvrnic_reset(d);
    qpci_msix_enable(pdev);
    qvrnic_msix_set_vector(d, VRNIC_VEC_ETH, 0, 0, true);
    qtest_memset(qts, ring, 0, 4 * VRNIC_ETH_DESC_SIZE);
    qtest_memset(qts, buf, 0, 2048);
    qvrnic_writel(d, VRNIC_REG_ETH_RX_BASE_LO, (uint32_t)ring);
    qvrnic_writel(d, VRNIC_REG_ETH_RX_BASE_HI, ring >> 32);
    qvrnic_writel(d, VRNIC_REG_ETH_RX_CFG, cfg);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_ETH_RX_CFG), ==, cfg);
    qvrnic_writel(d, VRNIC_REG_ETH_RX_ARM, 0);

    /* A unicast frame for another MAC is filtered; ours lands. */
    make_frame(frame, sizeof(frame), other, 1);
    send_frame(sv[0], frame, sizeof(frame));
    make_frame(frame, 100, mac, 2);
    send_frame(sv[0], frame, 100);
    write_desc(qts, ring, 0, buf, 2048);
    qvrnic_writel(d, VRNIC_REG_ETH_RX_PI, 1);
    g_assert(wait_desc_done(qts, ring, 0, &desc));
    g_assert_cmphex(le16_to_cpu(desc.status), ==, VRNIC_ETH_STS_DONE);
    g_assert_cmpuint(le16_to_cpu(desc.len), ==, 100);
    g_assert_cmphex(le64_to_cpu(desc.addr), ==, buf);
    qtest_memread(qts, buf, got, 100);
    g_assert_cmpmem(got, 100, frame, 100);
    g_assert(qpci_msix_pending(pdev, VRNIC_VEC_ETH));
    guest_free(alloc, ring);
    guest_free(alloc, buf);
}

/* ---- q35: vrnic behind a pcie-root-port ---------------------------------- */

/*
 * q35's MCH: PCIEXBAR (hw/pci-host/q35.h MCH_HOST_BRIDGE_PCIEXBAR*):
 * bit 0 enable, bits 2:1 length (0: 256 MiB, buses 0..255), address bits
 * 35:28. Reset leaves the default base there with the enable clear;
 * firmware sets it, and these tests stand in for firmware.
 */
#define Q35_PCIEXBAR            0x60
#define Q35_PCIEXBAR_EN         1
#define Q35_PCIEXBAR_ADDR_MASK  0xff0000000ULL
#define Q35_RP_SLOT             2

typedef struct VrnicQ35 {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *rp;         /* the pcie-root-port, 00:02.0 */
    QPCIDevice *pdev;       /* vrnic below it, 01:00.0 */
    QVrnic d;
    uint64_t rp_cfg;        /* the port's config space through MMCONFIG */
} VrnicQ35;

static bool q35_available(void)
{
    return qtest_has_machine("q35") && qtest_has_device("pcie-root-port") &&
           qtest_has_device("vrnic");
}

/*
 * Start q35 with the root port and vrnic, and do what firmware would:
 * bus numbers, the port's memory window around vrnic's BAR0, memory and
 * bus master enables on both, and MMCONFIG.
 */
static void q35_start(VrnicQ35 *t, const char *before, const char *dev_opts)
{
    QPCIDevice *mch;
    uint64_t base, limit, bar;

    memset(t, 0, sizeof(*t));
    /*
     * Native PCIe hotplug: with q35's default ACPI hotplug the slot's
     * presence bit stays clear and a slot power-off only resets the
     * device instead of unplugging it.
     */
    t->qts = qtest_initf("-M q35 -nodefaults %s "
                         "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off "
                         "-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,"
                         "addr=%d "
                         "-device vrnic,id=%s,bus=rp0,mac=%s%s",
                         before, Q35_RP_SLOT, QVRNIC_ID, QVRNIC_MAC_STR,
                         dev_opts);
    pc_alloc_init(&t->alloc, t->qts, ALLOC_NO_FLAGS);
    t->bus = qpci_new_pc(t->qts, &t->alloc);
    t->rp = qpci_device_find(t->bus, QPCI_DEVFN(Q35_RP_SLOT, 0));
    g_assert(t->rp);
    qpci_config_writeb(t->rp, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(t->rp, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(t->rp, PCI_SUBORDINATE_BUS, 1);

    /* The window is in 1 MiB units: start vrnic's BARs on a boundary. */
    base = QEMU_ALIGN_UP(t->bus->mmio_alloc_ptr, 1 << 20);
    t->bus->mmio_alloc_ptr = base;
    t->pdev = qpci_device_find(t->bus, QVRNIC_BDF(1, 0, 0));
    g_assert(t->pdev);
    qvrnic_init(&t->d, t->pdev, &t->alloc);
    limit = QEMU_ALIGN_UP(t->bus->mmio_alloc_ptr, 1 << 20) - 1;
    t->bus->mmio_alloc_ptr = limit + 1;
    qpci_config_writew(t->rp, PCI_MEMORY_BASE, (base >> 16) & 0xfff0);
    qpci_config_writew(t->rp, PCI_MEMORY_LIMIT, (limit >> 16) & 0xfff0);
    qpci_device_enable(t->rp);
    g_assert_cmphex(qvrnic_readl(&t->d, VRNIC_REG_ID), ==, VRNIC_ID_MAGIC);

    mch = qpci_device_find(t->bus, QPCI_DEVFN(0, 0));
    bar = qpci_config_readl(mch, Q35_PCIEXBAR) |
          (uint64_t)qpci_config_readl(mch, Q35_PCIEXBAR + 4) << 32;
    bar &= Q35_PCIEXBAR_ADDR_MASK;
    g_assert_cmphex(bar, !=, 0);
    qpci_config_writel(mch, Q35_PCIEXBAR + 4, bar >> 32);
    qpci_config_writel(mch, Q35_PCIEXBAR, (uint32_t)bar | Q35_PCIEXBAR_EN);
    g_free(mch);
    t->rp_cfg = bar + ((uint64_t)Q35_RP_SLOT << 15);
    /* MMCONFIG and the legacy mechanism agree on the port. */
    g_assert_cmphex(qtest_readl(t->qts, t->rp_cfg), ==,
                    qpci_config_readl(t->rp, PCI_VENDOR_ID));
}

static void q35_stop(VrnicQ35 *t)
{
    qvrnic_uninit(&t->d);
    g_free(t->pdev);
    g_free(t->rp);
    qpci_free_pc(t->bus);
    alloc_destroy(&t->alloc);
    qtest_quit(t->qts);
}

/* Compare two copies of a config space; report each byte that changed. */
static unsigned cfg_diff(const uint8_t *before, const uint8_t *after,
                         size_t len)
{
    unsigned n = 0;

    for (size_t i = 0; i < len; i++) {
        if (before[i] != after[i]) {
            g_test_message("root port config 0x%03zx: 0x%02x -> 0x%02x", i,
                           before[i], after[i]);
            n++;
        }
    }
    return n;
}

/*
 * Hole 2, "the device's own DMA can reset or unplug it": a query answer
 * aimed at the root port's config space, crafted so that every byte it
 * writes at 0x30..0x3f is what is already there except the bridge
 * control's secondary bus reset (the rest, 0x40..0x4f, is read-only
 * capability header and MSI-X table offset or zeroes already there). If
 * that write reached the port, it would reset vrnic from inside vrnic's
 * own DMA. Device DMA must reach RAM only: the answer write fails,
 * the command completes with DMA_ERROR (a query answer is not FATAL),
 * the port is untouched and the device carries on.
 */
static void test_dma_to_port_answer(void)
{
    VrnicQ35 t;
    QVrnic *d = &t.d;
    g_autofree uint8_t *before = g_malloc(4096);
    g_autofree uint8_t *after = g_malloc(4096);
    struct vrnic_aq_gid gid = {
        .hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_ADD_GID),
        .index = cpu_to_le32(1),
        .type = cpu_to_le32(VRNIC_GID_TYPE_ROCE_V2),
    };
    struct vrnic_aq_query q = {
        .hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_QUERY_GID),
        .resp_len = cpu_to_le32(sizeof(struct vrnic_gid_entry)),
        .index = cpu_to_le32(1),
    };
    struct vrnic_aq_cqe cqe;
    uint64_t resp;
    uint16_t id;
    bool done;

    q35_start(&t, "", "");
    resp = guest_alloc(&t.alloc, 4096);
    qvrnic_reset(d);
    qvrnic_admin_enable(d, 3, false);

    qtest_memread(t.qts, t.rp_cfg, before, 4096);
    g_assert_cmphex(before[PCI_BRIDGE_CONTROL] & PCI_BRIDGE_CTL_BUS_RESET,
                    ==, 0);
    memcpy(gid.gid, before + 0x30, sizeof(gid.gid));
    gid.gid[PCI_BRIDGE_CONTROL - 0x30] |= PCI_BRIDGE_CTL_BUS_RESET;
    g_assert_cmpuint(qvrnic_admin_cmd(d, &gid, NULL), ==, VRNIC_AQ_STS_OK);

    q.resp_addr = cpu_to_le64(t.rp_cfg + 0x30);
    id = qvrnic_admin_post(d, &q);
    done = qvrnic_admin_wait(d, &cqe, 2 * G_USEC_PER_SEC);

    qtest_memread(t.qts, t.rp_cfg, after, 4096);
    g_assert_cmpuint(cfg_diff(before, after, 4096), ==, 0);
    g_assert(done);
    g_assert_cmphex(le16_to_cpu(cqe.cmd_id), ==, id);
    g_assert_cmpuint(cqe.status, ==, VRNIC_AQ_STS_DMA_ERROR);

    /* Still the same device, still answering. */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_STS), ==,
                    VRNIC_DEV_STS_READY | VRNIC_DEV_STS_LINK_UP);
    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_GID, 1, resp,
                                  sizeof(struct vrnic_gid_entry)), ==,
                     VRNIC_AQ_STS_OK);
    qtest_memread(t.qts, resp, after, sizeof(gid.gid));
    g_assert_cmpmem(after, sizeof(gid.gid), gid.gid, sizeof(gid.gid));
    guest_free(&t.alloc, resp);
    q35_stop(&t);
}

/*
 * Hole 2 again, with a ring: the admin CQ on the port's config header.
 * The first completion would clear the port's command register (bytes
 * 4..7 take the zero result) and set its cache line size (the owner word
 * at byte 12). A completion write that fails is FATAL (the programming
 * reference's FATAL table); the port must be untouched, and after a reset
 * the device answers again.
 */
static void test_dma_to_port_cq(void)
{
    VrnicQ35 t;
    QVrnic *d = &t.d;
    g_autofree uint8_t *before = g_malloc(4096);
    g_autofree uint8_t *after = g_malloc(4096);
    struct vrnic_aq_query q = {
        .hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_QUERY_DEVICE),
        .resp_len = cpu_to_le32(sizeof(struct vrnic_device_attr)),
    };
    uint64_t resp, sq;
    uint32_t sts = 0;
    gint64 end;

    q35_start(&t, "", "");
    resp = guest_alloc(&t.alloc, 4096);
    sq = guest_alloc(&t.alloc, 4096);
    qvrnic_reset(d);
    qtest_memread(t.qts, t.rp_cfg, before, 4096);

    qvrnic_admin_enable_at(d, 1, false, sq, t.rp_cfg);
    q.resp_addr = cpu_to_le64(resp);
    qvrnic_admin_post(d, &q);
    end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
    do {
        sts = qvrnic_readl(d, VRNIC_REG_DEV_STS);
        if (sts & VRNIC_DEV_STS_FATAL) {
            break;
        }
        g_usleep(1000);
    } while (g_get_monotonic_time() < end);

    qtest_memread(t.qts, t.rp_cfg, after, 4096);
    g_assert_cmpuint(cfg_diff(before, after, 4096), ==, 0);
    g_assert_cmphex(sts, ==, VRNIC_DEV_STS_READY | VRNIC_DEV_STS_FATAL |
                             VRNIC_DEV_STS_LINK_UP);
    /* FATAL: every ring is not live. */
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_AQ_CFG) & VRNIC_RING_CFG_ENABLE,
                    ==, 0);

    /* A reset leaves FATAL; the device answers from a queue in RAM. */
    qvrnic_reset(d);
    g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_STS), ==,
                    VRNIC_DEV_STS_READY | VRNIC_DEV_STS_LINK_UP);
    qvrnic_admin_enable(d, 1, false);
    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_DEVICE, 0, resp,
                                  sizeof(struct vrnic_device_attr)), ==,
                     VRNIC_AQ_STS_OK);
    guest_free(&t.alloc, resp);
    guest_free(&t.alloc, sq);
    q35_stop(&t);
}

/*
 * With an IOThread the device reaches only RAM it can access directly.
 * Query answers aimed at the firmware ROM (pc.bios ends at 4 GiB) would
 * take the BQL in the IOThread while it holds the device's lock; the
 * register reads below hold the BQL and wait for that lock, so that would
 * deadlock QEMU (the test then times out). Each answer fails instead
 * (DMA_ERROR), the ROM is untouched, and the device answers from RAM.
 */
static void test_iothread_dma_to_rom(void)
{
    enum { LOG_DEPTH = 3, ROUNDS = 1000 };
    const uint64_t rom = 0x100000000ull - 4096;
    VrnicQ35 t;
    QVrnic *d = &t.d;
    g_autofree uint8_t *before = g_malloc(4096);
    g_autofree uint8_t *after = g_malloc(4096);
    struct vrnic_aq_query q = {
        .hdr.opcode = cpu_to_le16(VRNIC_AQ_OP_QUERY_DEVICE),
        .resp_len = cpu_to_le32(sizeof(struct vrnic_device_attr)),
        .resp_addr = cpu_to_le64(rom),
    };
    struct vrnic_aq_cqe cqe;
    uint64_t resp;

    q35_start(&t, "-object iothread,id=" VRNIC_TEST_IOTHREAD,
              ",iothread=" VRNIC_TEST_IOTHREAD);
    resp = guest_alloc(&t.alloc, 4096);
    qvrnic_reset(d);
    qvrnic_admin_enable(d, LOG_DEPTH, false);

    qtest_memread(t.qts, rom, before, 4096);
    for (unsigned i = 0; i < ROUNDS; i++) {
        qvrnic_admin_post(d, &q);
        g_assert_cmphex(qvrnic_readl(d, VRNIC_REG_DEV_STS) &
                        VRNIC_DEV_STS_FATAL, ==, 0);
        g_assert(qvrnic_admin_wait(d, &cqe, 2 * G_USEC_PER_SEC));
        g_assert_cmpuint(cqe.status, ==, VRNIC_AQ_STS_DMA_ERROR);
    }
    qtest_memread(t.qts, rom, after, 4096);
    g_assert_cmpmem(after, 4096, before, 4096);

    g_assert_cmpuint(qvrnic_query(d, VRNIC_AQ_OP_QUERY_DEVICE, 0, resp,
                                  sizeof(struct vrnic_device_attr)), ==,
                     VRNIC_AQ_STS_OK);
    guest_free(&t.alloc, resp);
    q35_stop(&t);
}

/*
 * Count the TX descriptors the device completes, in ring order, until all
 * n are or none has completed for a second.
 */
static unsigned wait_tx_settled(QTestState *qts, uint64_t ring, unsigned n)
{
    struct vrnic_eth_desc desc;
    gint64 last = g_get_monotonic_time();
    unsigned done = 0;

    while (done < n && g_get_monotonic_time() - last < G_USEC_PER_SEC) {
        qtest_memread(qts, ring + done * sizeof(desc), &desc, sizeof(desc));
        if (le16_to_cpu(desc.status) & VRNIC_ETH_STS_DONE) {
            g_assert_cmphex(le16_to_cpu(desc.status), ==, VRNIC_ETH_STS_DONE);
            done++;
            last = g_get_monotonic_time();
        } else {
            g_usleep(1000);
        }
    }
    return done;
}

/* Does /machine/peripheral/ID exist (a device with that id is plugged)? */
static bool peripheral_exists(QTestState *qts, const char *id)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    QDict *resp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                            "{'path': %s, 'property': 'type'}}", path);
    bool exists = qdict_haskey(resp, "return");

    qobject_unref(resp);
    return exists;
}

/*
 * Hole 1, "queued frames outlive the device": every frame leaves through
 * qemu_send_packet_async() with vrnic's sent callback; while the backend
 * is busy QEMU queues the packet together with vrnic's NetClientState.
 * The backend here is a datagram socket whose peer (this test) does not
 * read, so after the few datagrams the kernel holds, sends fail with
 * EAGAIN and QEMU queues what follows (all the rest, or up to where the
 * device stops at a full wire). Then the slot is powered off, which
 * unplugs vrnic at once (pcie_cap_slot_write_config), and the test reads
 * the socket: the backend flushes its queue, and any packet still naming
 * vrnic would call back into freed memory. glibc fills freed memory
 * (MALLOC_PERTURB_, with the tcache off so every free is filled), so such
 * a call crashes QEMU instead of reading stale pointers.
 */
static void test_unplug_queued_frames(const void *data)
{
    bool iothread = (uintptr_t)data;
    enum { LOG_DEPTH = 8, N = 1 << LOG_DEPTH, FRAME = 1000 };
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    g_autofree char *dir = g_dir_make_tmp("vrnic-qtest-XXXXXX", NULL);
    g_autofree char *peer_path = g_build_filename(dir, "peer.sock", NULL);
    g_autofree char *qemu_path = g_build_filename(dir, "qemu.sock", NULL);
    g_autofree char *netdev = NULL;
    g_autofree char *old_perturb = g_strdup(g_getenv("MALLOC_PERTURB_"));
    g_autofree char *old_tunables = g_strdup(g_getenv("GLIBC_TUNABLES"));
    g_autofree uint8_t *frame = g_malloc(FRAME);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    VrnicQ35 t;
    QVrnic *d = &t.d;
    uint64_t ring, bufs;
    uint8_t cap, buf[2048];
    uint16_t ctl;
    unsigned completed, received = 0;
    gint64 quiet_since, end;
    int peer;

    peer = socket(AF_UNIX, SOCK_DGRAM, 0);
    g_assert_cmpint(peer, >=, 0);
    g_assert_cmpuint(strlen(peer_path), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, peer_path);
    g_assert_cmpint(bind(peer, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    netdev = g_strdup_printf("%s-netdev dgram,id=n0,local.type=unix,"
                             "local.path=%s,remote.type=unix,remote.path=%s",
                             iothread ? "-object iothread,id="
                             VRNIC_TEST_IOTHREAD " " : "",
                             qemu_path, peer_path);

    g_setenv("MALLOC_PERTURB_", "204", true);
    g_setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", true);
    q35_start(&t, netdev, iothread ? ",netdev=n0,iothread="
                                     VRNIC_TEST_IOTHREAD : ",netdev=n0");
    /* Only the QEMU under test runs with them. */
    if (old_perturb) {
        g_setenv("MALLOC_PERTURB_", old_perturb, true);
    } else {
        g_unsetenv("MALLOC_PERTURB_");
    }
    if (old_tunables) {
        g_setenv("GLIBC_TUNABLES", old_tunables, true);
    } else {
        g_unsetenv("GLIBC_TUNABLES");
    }

    qvrnic_reset(d);
    ring = guest_alloc(&t.alloc, N * VRNIC_ETH_DESC_SIZE);
    bufs = guest_alloc(&t.alloc, N * FRAME);
    qtest_memset(t.qts, ring, 0, N * VRNIC_ETH_DESC_SIZE);
    for (unsigned i = 0; i < N; i++) {
        make_frame(frame, FRAME, bcast, i);
        qtest_memwrite(t.qts, bufs + i * FRAME, frame, FRAME);
        write_desc(t.qts, ring, i, bufs + i * FRAME, FRAME);
    }
    qvrnic_writel(d, VRNIC_REG_ETH_TX_BASE_LO, (uint32_t)ring);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_BASE_HI, ring >> 32);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_CFG, VRNIC_RING_CFG_ENABLE | LOG_DEPTH);
    qvrnic_writel(d, VRNIC_REG_ETH_TX_PI, N);
    /*
     * Done means handed to the network layer, sent or queued. A device
     * may stop at a full wire (transmit backpressure) or carry on and
     * leave QEMU to queue everything: either way, wait until it stops.
     */
    completed = wait_tx_settled(t.qts, ring, N);
    g_test_message("%u of %u frames completed before the unplug", completed,
                   N);
    g_assert_cmpuint(completed, >, 0);

    /* Slot power off (power indicator off too): QEMU unplugs at once. */
    cap = qpci_find_capability(t.rp, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(cap, !=, 0);
    g_assert_cmphex(qpci_config_readw(t.rp, cap + PCI_EXP_SLTSTA) &
                    PCI_EXP_SLTSTA_PDS, ==, PCI_EXP_SLTSTA_PDS);
    g_assert(peripheral_exists(t.qts, QVRNIC_ID));
    ctl = qpci_config_readw(t.rp, cap + PCI_EXP_SLTCTL);
    qpci_config_writew(t.rp, cap + PCI_EXP_SLTCTL,
                       (ctl & ~PCI_EXP_SLTCTL_PIC) |
                       PCI_EXP_SLTCTL_PWR_IND_OFF | PCI_EXP_SLTCTL_PWR_OFF);
    g_assert_cmphex(qpci_config_readw(t.rp, cap + PCI_EXP_SLTSTA) &
                    PCI_EXP_SLTSTA_PDS, ==, 0);
    g_assert_cmphex(qpci_config_readw(t.pdev, PCI_VENDOR_ID), ==, 0xffff);
    g_assert(!peripheral_exists(t.qts, QVRNIC_ID));

    /* Drain the socket until it has been quiet for a second. */
    quiet_since = g_get_monotonic_time();
    end = quiet_since + 30 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < end &&
           g_get_monotonic_time() - quiet_since < G_USEC_PER_SEC) {
        ssize_t n = recv(peer, buf, sizeof(buf), MSG_DONTWAIT);

        if (n >= 0) {
            g_assert_cmpint(n, ==, FRAME);
            received++;
            quiet_since = g_get_monotonic_time();
            continue;
        }
        g_assert_cmpint(errno, ==, EAGAIN);
        if (!qtest_probe_child(t.qts)) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_test_message("%u of them reached the peer", received);
    if (!qtest_probe_child(t.qts)) {
        g_test_message("QEMU died while its netdev flushed the frames queued "
                       "before the unplug");
        g_assert_not_reached();
    }
    qtest_qmp_assert_success(t.qts, "{'execute': 'query-status'}");
    /*
     * Fewer than completed: frames were queued in QEMU when the device
     * went, and went with it. All of them would mean nothing was queued,
     * and this test exercised nothing.
     */
    g_assert_cmpuint(received, >, 0);
    g_assert_cmpuint(received, <, completed);

    /* The device is gone: give the allocator back without touching it. */
    g_free(t.pdev);
    g_free(t.rp);
    qpci_free_pc(t.bus);
    alloc_destroy(&t.alloc);
    qtest_quit(t.qts);
    close(peer);
    unlink(peer_path);
    unlink(qemu_path);
    rmdir(dir);
}

/*
 * The qgraph tests, with the netdev each needs (eth: a socket the test
 * talks to; else a hub port), and whether it runs a second time with the
 * device's work in an IOThread. test_probe checks what realize sets up,
 * and test_msix that the message comes with the completion, which with an
 * IOThread it does not (it follows shortly after).
 */
static const struct {
    const char *name;
    QOSTestFunc fn;
    bool eth;
    bool iothread;
} vrnic_tests[] = {
    { "probe", test_probe, false, false },
    { "admin", test_admin, false, true },
    { "clock", test_clock, false, false },
    { "msix", test_msix, false, false },
    { "aeq", test_aeq, false, true },
#ifndef _WIN32
    { "eth-tx", test_eth_tx, true, true },
    { "eth-rx", test_eth_rx, true, true },
#endif
};

static void register_vrnic_test(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(vrnic_tests); i++) {
        QOSGraphTestOptions opts = {
            .before = vrnic_tests[i].eth ? eth_data_init : hubport_data_init,
        };
        g_autofree char *name = NULL;

        qos_add_test(vrnic_tests[i].name, "vrnic", vrnic_tests[i].fn, &opts);
        if (!vrnic_tests[i].iothread) {
            continue;
        }
        name = g_strdup_printf("iothread/%s", vrnic_tests[i].name);
        opts.before = vrnic_tests[i].eth ? eth_iothread_init :
                                           hubport_iothread_init;
        opts.edge.extra_device_opts = "iothread=" VRNIC_TEST_IOTHREAD;
        qos_add_test(name, "vrnic", vrnic_tests[i].fn, &opts);
    }

    if (!strcmp(qtest_get_arch(), "x86_64") && q35_available()) {
        qtest_add_func("vrnic/q35/dma-to-root-port/answer",
                       test_dma_to_port_answer);
        qtest_add_func("vrnic/q35/dma-to-root-port/cq",
                       test_dma_to_port_cq);
        qtest_add_func("vrnic/q35/iothread/dma-to-rom",
                       test_iothread_dma_to_rom);
        qtest_add_data_func("vrnic/q35/unplug-with-queued-frames",
                            (void *)false, test_unplug_queued_frames);
        qtest_add_data_func("vrnic/q35/unplug-with-queued-frames/iothread",
                            (void *)true, test_unplug_queued_frames);
    }
}

libqos_init(register_vrnic_test);
