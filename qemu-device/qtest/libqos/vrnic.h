/*
 * libqos driver for the vrnic PCI function (QEMU's qtest framework).
 *
 * The register, command and ring layouts come from the device's one
 * interface definition,
 * standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h; nothing is
 * redefined here.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QOS_VRNIC_H
#define QOS_VRNIC_H

#include "qgraph.h"
#include "pci.h"
#include "libqos-malloc.h"
#include "standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h"

/*
 * The properties the qgraph node gives the device. Tests compare what the
 * device reports with these, so a value the device ignored shows up.
 * None of them is a default.
 */
#define QVRNIC_ID               "vrnic0"
#define QVRNIC_NETDEV_ID        "hs0"
#define QVRNIC_MAC              { 0x52, 0x54, 0x00, 0x76, 0x72, 0x11 }
#define QVRNIC_MAC_STR          "52:54:00:76:72:11"
#define QVRNIC_NUM_COMP         6
#define QVRNIC_DB_PAGES         32
#define QVRNIC_DM_SIZE          65536
#define QVRNIC_MAX_QP           77

/* How long a test waits for the device's bottom halves (wall time). */
#define QVRNIC_TIMEOUT_US       (10 * G_USEC_PER_SEC)

typedef struct QVrnic {
    QPCIDevice *pdev;
    QGuestAllocator *alloc;
    QPCIBar bar0;

    /* admin queue */
    uint32_t aq_log_depth;
    uint64_t aq_sq;
    uint64_t aq_cq;
    bool aq_owned;          /* aq_sq/aq_cq came from alloc */
    uint16_t aq_pi;         /* next SQ index = next CQ index expected */
    uint16_t aq_ci;         /* next CQ index to consume */
    uint16_t next_cmd_id;

    /* async event queue */
    uint32_t aeq_log_depth;
    uint64_t aeq;
    uint16_t aeq_ci;
} QVrnic;

/* The qgraph node: the PCI function with its driver state. */
typedef struct QVrnicPCI {
    QOSGraphObject obj;
    QPCIDevice pci_dev;
    QVrnic vrnic;
} QVrnicPCI;

/* Encode a bus number into libqos' devfn (as qpci_secondary_buses_init). */
#define QVRNIC_BDF(bus, dev, fn) (((bus) << 8) | QPCI_DEVFN(dev, fn))

void qvrnic_init(QVrnic *d, QPCIDevice *pdev, QGuestAllocator *alloc);
void qvrnic_uninit(QVrnic *d);
uint32_t qvrnic_readl(QVrnic *d, uint32_t reg);
void qvrnic_writel(QVrnic *d, uint32_t reg, uint32_t val);
void qvrnic_reset(QVrnic *d);

/* Admin queue with rings from the allocator (or at sq/cq when non-zero). */
void qvrnic_admin_enable(QVrnic *d, uint32_t log_depth, bool irq);
void qvrnic_admin_enable_at(QVrnic *d, uint32_t log_depth, bool irq,
                            uint64_t sq, uint64_t cq);
uint16_t qvrnic_admin_post(QVrnic *d, void *cmd);
bool qvrnic_admin_wait(QVrnic *d, struct vrnic_aq_cqe *cqe,
                       uint64_t timeout_us);
uint8_t qvrnic_admin_cmd(QVrnic *d, void *cmd, struct vrnic_aq_cqe *cqe);
uint8_t qvrnic_query(QVrnic *d, uint16_t opcode, uint32_t index,
                     uint64_t resp_addr, uint32_t resp_len);

/* Async event queue. */
void qvrnic_aeq_enable(QVrnic *d, uint32_t log_depth);
void qvrnic_aeq_arm(QVrnic *d);
bool qvrnic_aeq_next(QVrnic *d, struct vrnic_aeqe *e, uint64_t timeout_us);

/* MSI-X: program a table entry so the message lands in guest RAM. */
void qvrnic_msix_set_vector(QVrnic *d, uint16_t entry, uint64_t addr,
                            uint32_t data, bool masked);

#endif
