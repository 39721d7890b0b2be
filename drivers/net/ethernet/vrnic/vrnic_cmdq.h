/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vrnic admin queue engine: submits 128-byte commands to the device's admin
 * SQ and collects 16-byte completions from its CQ. It knows the command
 * header and nothing about what a command means: the Ethernet driver's
 * commands are in vrnic_eth_cmd.c, the RDMA driver's in its vrnic_cmd.c.
 */
#ifndef VRNIC_CMDQ_H
#define VRNIC_CMDQ_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/types.h>

#include "vrnic_hw_defs.h"

/* One SQ slot, seen as each command layout of vrnic_hw_defs.h. */
union vrnic_aq_cmd {
	struct vrnic_aq_hdr hdr;
	struct vrnic_aq_query query;
	struct vrnic_aq_set_mac set_mac;
	struct vrnic_aq_set_mtu set_mtu;
	struct vrnic_aq_gid gid;
	struct vrnic_aq_create_eq create_eq;
	struct vrnic_aq_destroy destroy;
	struct vrnic_aq_alloc_pd alloc_pd;
	struct vrnic_aq_alloc_mw alloc_mw;
	struct vrnic_aq_alloc_mr alloc_mr;
	struct vrnic_aq_mcast mcast;
	struct vrnic_aq_reg_mr reg_mr;
	struct vrnic_aq_query_mr query_mr;
	struct vrnic_aq_create_cq create_cq;
	struct vrnic_aq_modify_cq modify_cq;
	struct vrnic_aq_create_qp create_qp;
	struct vrnic_aq_modify_qp modify_qp;
	struct vrnic_aq_create_srq create_srq;
	struct vrnic_aq_page_fault_done page_fault_done;
	struct vrnic_aq_odp_invalidate odp_invalidate;
	struct vrnic_aq_create_flow create_flow;
	struct vrnic_aq_create_rss create_rss;
	struct vrnic_aq_alloc_xrcd alloc_xrcd;
	u8 raw[VRNIC_AQ_CMD_SIZE];
};

static_assert(sizeof(union vrnic_aq_cmd) == VRNIC_AQ_CMD_SIZE);

/*
 * Commands that return data (QUERY_*) use struct vrnic_aq_query; the engine
 * owns one response buffer of this size per completion context, so a device
 * that answers after the driver gave up can never write into freed memory.
 * A longer answer (QUERY_MR page lists) goes to a caller-owned DMA buffer:
 * see vrnic_cmdq_exec_dma().
 */
#define VRNIC_CMDQ_RESP_SIZE		128

/* Used when VRNIC_REG_CAP_AQ.cmd_timeout_ms reads 0. */
#define VRNIC_CMDQ_DEFAULT_TIMEOUT_MS	10000

/* 64 commands in flight is far more than the control path needs. */
#define VRNIC_CMDQ_LOG_DEPTH		6

/* Only atomic64_t here: read locklessly by debugfs and hw stats. */
struct vrnic_cmdq_stats {
	atomic64_t submitted;
	atomic64_t completed;
	atomic64_t errors;	/* completed with a status other than OK */
	atomic64_t timeouts;	/* no completion within the timeout */
};

enum vrnic_cmdq_ctx_state {
	VRNIC_CMDQ_CTX_FREE,
	VRNIC_CMDQ_CTX_SUBMITTED,
	VRNIC_CMDQ_CTX_COMPLETED,
	/* timed out: never reused, the device may still write to it */
	VRNIC_CMDQ_CTX_ABANDONED,
};

struct vrnic_cmdq_ctx {
	struct completion done;
	struct vrnic_aq_cqe cqe;	/* copy of the device's completion */
	u16 cmd_id;			/* cookie the completion must carry */
	u16 gen;			/* bumped per use (sq_lock), in cmd_id */
	u16 opcode;
	u8 state;			/* enum vrnic_cmdq_ctx_state */
};

/* Bits of vrnic_cmdq.flags */
enum {
	VRNIC_CMDQ_RUNNING,	/* cleared for good after a timeout */
	VRNIC_CMDQ_POLLING,	/* waiters poll the CQ (no IRQ yet) */
};

struct vrnic_cmdq {
	struct device *dev;		/* the PCI device: DMA and logs */
	void __iomem *regs;		/* BAR0 */
	u32 timeout_ms;
	u16 depth;
	u8 log_depth;
	unsigned long flags;

	/* One credit per context; taken before any spinlock below. */
	struct semaphore credits;

	spinlock_t sq_lock;		/* protects sq_pi, the SQ slots, ctx_bitmap */
	union vrnic_aq_cmd *sq;
	dma_addr_t sq_dma;
	u16 sq_pi;			/* free-running producer index */
	unsigned long *ctx_bitmap;	/* contexts in use */

	/*
	 * Protects cq_ci and the state and cqe of every context. Taken by the
	 * admin IRQ handler, so always with interrupts disabled.
	 */
	spinlock_t cq_lock;
	struct vrnic_aq_cqe *cq;
	dma_addr_t cq_dma;
	u16 cq_ci;			/* free-running consumer index */

	struct vrnic_cmdq_ctx *ctx;	/* depth entries */
	u8 *resp;			/* depth * VRNIC_CMDQ_RESP_SIZE bytes */
	dma_addr_t resp_dma;

	struct vrnic_cmdq_stats stats;
};

/* A command with every reserved byte 0, as the device checks. */
static inline void vrnic_cmd_init(union vrnic_aq_cmd *cmd,
				  enum vrnic_aq_opcode op)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.opcode = cpu_to_le16(op);
}

int vrnic_cmdq_init(struct vrnic_cmdq *cmdq, struct device *dev,
		    void __iomem *regs);
void vrnic_cmdq_uninit(struct vrnic_cmdq *cmdq);
void vrnic_cmdq_set_polling(struct vrnic_cmdq *cmdq, bool polling);
void vrnic_cmdq_handle_irq(struct vrnic_cmdq *cmdq);
int vrnic_cmdq_exec(struct vrnic_cmdq *cmdq, union vrnic_aq_cmd *cmd,
		    void *resp, size_t resp_len, u64 *result);
int vrnic_cmdq_exec_dma(struct vrnic_cmdq *cmdq, union vrnic_aq_cmd *cmd,
			dma_addr_t resp_dma, size_t resp_len, u64 *result);
const char *vrnic_cmdq_opcode_str(u16 opcode);

#endif /* VRNIC_CMDQ_H */
