// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic admin queue engine.
 *
 * A command takes a credit, then a completion context; it is copied into the
 * next SQ slot with a cookie (cmd_id) and the producer index is written to
 * VRNIC_REG_AQ_PI. The device completes commands in order, one 16-byte CQE
 * each, with a phase bit that flips on every pass through the ring. The
 * waiter sleeps on its context (the admin IRQ on vector 0 completes it) or,
 * before the IRQ exists, polls the CQ itself.
 *
 * cmd_id = context index (low log_depth bits) | the context's generation
 * above them, bumped on every use: a stale or duplicated completion cannot
 * match a reused context until that context has been used another
 * 2^(16 - log_depth) times (at least 64).
 *
 * A command that gets no completion within the device's timeout kills the
 * queue: every later call fails at once with -ENODEV, and the timed-out
 * context and its response buffer are never reused because the device may
 * still write to them.
 */

#include <linux/bitmap.h>
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/export.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "vrnic_cmdq.h"

static const char *const vrnic_cmdq_opcode_names[] = {
	[VRNIC_AQ_OP_QUERY_DEVICE] = "QUERY_DEVICE",
	[VRNIC_AQ_OP_QUERY_PORT] = "QUERY_PORT",
	[VRNIC_AQ_OP_SET_MAC] = "SET_MAC",
	[VRNIC_AQ_OP_SET_MTU] = "SET_MTU",
	[VRNIC_AQ_OP_ADD_GID] = "ADD_GID",
	[VRNIC_AQ_OP_DEL_GID] = "DEL_GID",
	[VRNIC_AQ_OP_QUERY_GID] = "QUERY_GID",
	[VRNIC_AQ_OP_QUERY_PORT_STATS] = "QUERY_PORT_STATS",
	[VRNIC_AQ_OP_CREATE_EQ] = "CREATE_EQ",
	[VRNIC_AQ_OP_DESTROY_EQ] = "DESTROY_EQ",
	[VRNIC_AQ_OP_ALLOC_PD] = "ALLOC_PD",
	[VRNIC_AQ_OP_DEALLOC_PD] = "DEALLOC_PD",
	[VRNIC_AQ_OP_REG_MR] = "REG_MR",
	[VRNIC_AQ_OP_DEREG_MR] = "DEREG_MR",
	[VRNIC_AQ_OP_QUERY_MR] = "QUERY_MR",
	[VRNIC_AQ_OP_REREG_MR] = "REREG_MR",
	[VRNIC_AQ_OP_CREATE_CQ] = "CREATE_CQ",
	[VRNIC_AQ_OP_DESTROY_CQ] = "DESTROY_CQ",
	[VRNIC_AQ_OP_RESIZE_CQ] = "RESIZE_CQ",
	[VRNIC_AQ_OP_CREATE_QP] = "CREATE_QP",
	[VRNIC_AQ_OP_MODIFY_QP] = "MODIFY_QP",
	[VRNIC_AQ_OP_QUERY_QP] = "QUERY_QP",
	[VRNIC_AQ_OP_DESTROY_QP] = "DESTROY_QP",
	[VRNIC_AQ_OP_CREATE_SRQ] = "CREATE_SRQ",
	[VRNIC_AQ_OP_MODIFY_SRQ] = "MODIFY_SRQ",
	[VRNIC_AQ_OP_QUERY_SRQ] = "QUERY_SRQ",
	[VRNIC_AQ_OP_DESTROY_SRQ] = "DESTROY_SRQ",
	[VRNIC_AQ_OP_ATTACH_MCAST] = "ATTACH_MCAST",
	[VRNIC_AQ_OP_DETACH_MCAST] = "DETACH_MCAST",
	[VRNIC_AQ_OP_ALLOC_MW] = "ALLOC_MW",
	[VRNIC_AQ_OP_DEALLOC_MW] = "DEALLOC_MW",
	[VRNIC_AQ_OP_ALLOC_MR] = "ALLOC_MR",
	[VRNIC_AQ_OP_MODIFY_CQ] = "MODIFY_CQ",
	[VRNIC_AQ_OP_PAGE_FAULT_DONE] = "PAGE_FAULT_DONE",
	[VRNIC_AQ_OP_ODP_INVALIDATE] = "ODP_INVALIDATE",
	[VRNIC_AQ_OP_CREATE_FLOW] = "CREATE_FLOW",
	[VRNIC_AQ_OP_DESTROY_FLOW] = "DESTROY_FLOW",
	[VRNIC_AQ_OP_CREATE_RSS] = "CREATE_RSS",
	[VRNIC_AQ_OP_DESTROY_RSS] = "DESTROY_RSS",
	[VRNIC_AQ_OP_ALLOC_XRCD] = "ALLOC_XRCD",
	[VRNIC_AQ_OP_DEALLOC_XRCD] = "DEALLOC_XRCD",
};

const char *vrnic_cmdq_opcode_str(u16 opcode)
{
	if (opcode < ARRAY_SIZE(vrnic_cmdq_opcode_names) &&
	    vrnic_cmdq_opcode_names[opcode])
		return vrnic_cmdq_opcode_names[opcode];
	return "UNKNOWN";
}
EXPORT_SYMBOL_GPL(vrnic_cmdq_opcode_str);

static int vrnic_cmdq_status_to_errno(u8 status)
{
	switch (status) {
	case VRNIC_AQ_STS_OK:
		return 0;
	case VRNIC_AQ_STS_BAD_OPCODE:
		return -EOPNOTSUPP;
	case VRNIC_AQ_STS_BAD_FIELD:
	case VRNIC_AQ_STS_BAD_INDEX:
		return -EINVAL;
	case VRNIC_AQ_STS_NO_RESOURCES:
		/* what a verbs user expects when a device limit is reached */
		return -ENOMEM;
	case VRNIC_AQ_STS_BAD_STATE:
		return -EBUSY;
	case VRNIC_AQ_STS_DMA_ERROR:
		return -EFAULT;
	default:
		return -EIO;
	}
}

static u8 *vrnic_cmdq_resp_buf(struct vrnic_cmdq *cmdq, unsigned int idx)
{
	return cmdq->resp + idx * VRNIC_CMDQ_RESP_SIZE;
}

/* Called with cq_lock held. Returns the number of completions consumed. */
static unsigned int __vrnic_cmdq_process_cq(struct vrnic_cmdq *cmdq)
{
	unsigned int n;

	/* Bounded: a misbehaving device cannot keep us here. */
	for (n = 0; n < cmdq->depth; n++) {
		struct vrnic_aq_cqe *cqe =
			&cmdq->cq[vrnic_idx_slot(cmdq->cq_ci, cmdq->log_depth)];
		u32 phase = vrnic_idx_phase(cmdq->cq_ci, cmdq->log_depth);
		struct vrnic_cmdq_ctx *ctx;
		u16 cmd_id;
		u32 owner;

		/* The device writes the owner word last. */
		owner = le32_to_cpu(READ_ONCE(cqe->owner));
		if (FIELD_GET(VRNIC_OWNER_PHASE, owner) != phase)
			break;
		/* Read the rest of the CQE only after its phase matched. */
		dma_rmb();

		cmdq->cq_ci++;
		cmd_id = le16_to_cpu(cqe->cmd_id);
		/* The cookie's low log_depth bits are the context's index. */
		ctx = &cmdq->ctx[vrnic_idx_slot(cmd_id, cmdq->log_depth)];
		if (ctx->state != VRNIC_CMDQ_CTX_SUBMITTED ||
		    ctx->cmd_id != cmd_id) {
			dev_err_ratelimited(cmdq->dev,
					    "admin completion for unknown cmd_id %#x (status %u, state %u), dropped\n",
					    cmd_id, cqe->status, ctx->state);
			continue;
		}

		memcpy(&ctx->cqe, cqe, sizeof(ctx->cqe));
		ctx->state = VRNIC_CMDQ_CTX_COMPLETED;
		atomic64_inc(&cmdq->stats.completed);
		/* Harmless in polling mode: the next submit re-inits it. */
		complete(&ctx->done);
	}

	return n;
}

/* The admin IRQ (vector 0) handler's share: complete finished commands. */
void vrnic_cmdq_handle_irq(struct vrnic_cmdq *cmdq)
{
	unsigned long flags;

	spin_lock_irqsave(&cmdq->cq_lock, flags);
	__vrnic_cmdq_process_cq(cmdq);
	spin_unlock_irqrestore(&cmdq->cq_lock, flags);
}

static struct vrnic_cmdq_ctx *vrnic_cmdq_submit(struct vrnic_cmdq *cmdq,
						union vrnic_aq_cmd *cmd,
						size_t resp_len)
{
	struct vrnic_cmdq_ctx *ctx;
	unsigned long flags;
	unsigned int idx;
	u16 cmd_id;

	spin_lock(&cmdq->sq_lock);
	/* Checked again under the lock: a timeout may have just killed it. */
	if (!test_bit(VRNIC_CMDQ_RUNNING, &cmdq->flags)) {
		spin_unlock(&cmdq->sq_lock);
		return ERR_PTR(-ENODEV);
	}

	/* The caller's credit guarantees a free context. */
	idx = find_first_zero_bit(cmdq->ctx_bitmap, cmdq->depth);
	if (WARN_ON_ONCE(idx >= cmdq->depth)) {
		spin_unlock(&cmdq->sq_lock);
		return ERR_PTR(-EIO);
	}
	__set_bit(idx, cmdq->ctx_bitmap);
	ctx = &cmdq->ctx[idx];

	ctx->gen++;
	cmd_id = idx | (u16)(ctx->gen << cmdq->log_depth);
	cmd->hdr.cmd_id = cpu_to_le16(cmd_id);
	if (resp_len) {
		memset(vrnic_cmdq_resp_buf(cmdq, idx), 0, VRNIC_CMDQ_RESP_SIZE);
		cmd->query.resp_addr =
			cpu_to_le64(cmdq->resp_dma + idx * VRNIC_CMDQ_RESP_SIZE);
		cmd->query.resp_len = cpu_to_le32(resp_len);
	}

	spin_lock_irqsave(&cmdq->cq_lock, flags);
	ctx->cmd_id = cmd_id;
	ctx->opcode = le16_to_cpu(cmd->hdr.opcode);
	ctx->state = VRNIC_CMDQ_CTX_SUBMITTED;
	reinit_completion(&ctx->done);
	spin_unlock_irqrestore(&cmdq->cq_lock, flags);

	memcpy(&cmdq->sq[vrnic_idx_slot(cmdq->sq_pi, cmdq->log_depth)], cmd,
	       sizeof(*cmd));
	cmdq->sq_pi++;
	atomic64_inc(&cmdq->stats.submitted);

	/*
	 * writel orders the slot (coherent memory) before the doorbell, so no
	 * explicit dma_wmb() is needed.
	 */
	writel(FIELD_PREP(VRNIC_INDEX_MASK, cmdq->sq_pi),
	       cmdq->regs + VRNIC_REG_AQ_PI);
	spin_unlock(&cmdq->sq_lock);

	return ctx;
}

static void vrnic_cmdq_put_ctx(struct vrnic_cmdq *cmdq,
			       struct vrnic_cmdq_ctx *ctx)
{
	unsigned long flags;

	spin_lock_irqsave(&cmdq->cq_lock, flags);
	ctx->state = VRNIC_CMDQ_CTX_FREE;
	spin_unlock_irqrestore(&cmdq->cq_lock, flags);

	spin_lock(&cmdq->sq_lock);
	__clear_bit(ctx - cmdq->ctx, cmdq->ctx_bitmap);
	spin_unlock(&cmdq->sq_lock);
}

/* Poll the CQ until the context completes or the deadline passes. */
static void vrnic_cmdq_wait_polling(struct vrnic_cmdq *cmdq,
				    struct vrnic_cmdq_ctx *ctx,
				    unsigned long deadline)
{
	unsigned long flags;
	u8 state;

	for (;;) {
		spin_lock_irqsave(&cmdq->cq_lock, flags);
		__vrnic_cmdq_process_cq(cmdq);
		state = ctx->state;
		spin_unlock_irqrestore(&cmdq->cq_lock, flags);

		if (state != VRNIC_CMDQ_CTX_SUBMITTED ||
		    time_after(jiffies, deadline))
			return;
		usleep_range(50, 200);
	}
}

/*
 * Wait for ctx. Returns the status of the completion, or -ETIMEDOUT (the
 * context is then abandoned and the queue dead).
 */
static int vrnic_cmdq_wait(struct vrnic_cmdq *cmdq, struct vrnic_cmdq_ctx *ctx)
{
	unsigned long timeout = msecs_to_jiffies(cmdq->timeout_ms);
	bool signalled = false;
	unsigned long flags;
	u8 status;

	if (test_bit(VRNIC_CMDQ_POLLING, &cmdq->flags))
		vrnic_cmdq_wait_polling(cmdq, ctx, jiffies + timeout);
	else
		signalled = wait_for_completion_timeout(&ctx->done, timeout);

	/*
	 * One last poll tells "the device never completed" apart from "it
	 * completed but the interrupt was lost".
	 */
	spin_lock_irqsave(&cmdq->cq_lock, flags);
	__vrnic_cmdq_process_cq(cmdq);
	if (ctx->state != VRNIC_CMDQ_CTX_COMPLETED) {
		ctx->state = VRNIC_CMDQ_CTX_ABANDONED;
		spin_unlock_irqrestore(&cmdq->cq_lock, flags);

		clear_bit(VRNIC_CMDQ_RUNNING, &cmdq->flags);
		atomic64_inc(&cmdq->stats.timeouts);
		dev_err(cmdq->dev,
			"admin command %s (cmd_id %#x) got no completion in %u ms (sq_pi %u cq_ci %u dev_sts %#x); admin queue is dead\n",
			vrnic_cmdq_opcode_str(ctx->opcode), ctx->cmd_id,
			cmdq->timeout_ms, cmdq->sq_pi, cmdq->cq_ci,
			readl(cmdq->regs + VRNIC_REG_DEV_STS));
		return -ETIMEDOUT;
	}
	status = ctx->cqe.status;
	spin_unlock_irqrestore(&cmdq->cq_lock, flags);

	if (!signalled && !test_bit(VRNIC_CMDQ_POLLING, &cmdq->flags))
		dev_warn_ratelimited(cmdq->dev,
				     "admin command %s (cmd_id %#x) completed without an interrupt\n",
				     vrnic_cmdq_opcode_str(ctx->opcode),
				     ctx->cmd_id);

	return vrnic_cmdq_status_to_errno(status);
}

/**
 * vrnic_cmdq_exec - run one admin command and wait for its completion
 * @cmdq: the admin queue
 * @cmd: zero-initialised command with hdr.opcode and its fields set; the
 *	engine fills hdr.cmd_id, and resp_addr/resp_len when @resp_len != 0
 * @resp: buffer for the data the device returns, or NULL
 * @resp_len: size of that data (the struct the command's opcode answers with)
 * @result: the completion's result word, or NULL
 *
 * Context: process context, may sleep.
 * Return: 0, a negative errno for the device's status, -ETIMEDOUT when the
 * device did not answer (the queue is then dead), -ENODEV when it is dead.
 */
int vrnic_cmdq_exec(struct vrnic_cmdq *cmdq, union vrnic_aq_cmd *cmd,
		    void *resp, size_t resp_len, u64 *result)
{
	struct vrnic_cmdq_ctx *ctx;
	u16 opcode;
	int err;

	might_sleep();

	if (WARN_ON_ONCE(resp_len > VRNIC_CMDQ_RESP_SIZE))
		return -EINVAL;
	if (!test_bit(VRNIC_CMDQ_RUNNING, &cmdq->flags))
		return -ENODEV;

	opcode = le16_to_cpu(cmd->hdr.opcode);
	down(&cmdq->credits);

	ctx = vrnic_cmdq_submit(cmdq, cmd, resp_len);
	if (IS_ERR(ctx)) {
		up(&cmdq->credits);
		return PTR_ERR(ctx);
	}

	err = vrnic_cmdq_wait(cmdq, ctx);
	if (err == -ETIMEDOUT) {
		/*
		 * Keep the context and its response buffer out of use for
		 * good. The credit goes back so that callers sleeping in
		 * down() wake up and see the dead queue.
		 */
		up(&cmdq->credits);
		return err;
	}

	if (err) {
		atomic64_inc(&cmdq->stats.errors);
		dev_err_ratelimited(cmdq->dev,
				    "admin command %s failed: status %u (%d)\n",
				    vrnic_cmdq_opcode_str(opcode),
				    ctx->cqe.status, err);
	} else {
		if (result)
			*result = le64_to_cpu(ctx->cqe.result);
		if (resp_len) {
			/* The device wrote the answer before the CQE. */
			dma_rmb();
			memcpy(resp, vrnic_cmdq_resp_buf(cmdq, ctx - cmdq->ctx),
			       resp_len);
		}
	}

	vrnic_cmdq_put_ctx(cmdq, ctx);
	up(&cmdq->credits);
	return err;
}
EXPORT_SYMBOL_GPL(vrnic_cmdq_exec);

/**
 * vrnic_cmdq_exec_dma - run a query whose answer is too big for the engine's
 *	per-context response buffer
 * @cmdq: the admin queue
 * @cmd: a command laid out as struct vrnic_aq_query (resp_addr, resp_len)
 * @resp_dma: the caller's DMA buffer (coherent), at least @resp_len bytes
 * @resp_len: size of the answer
 * @result: the completion's result word, or NULL
 *
 * Context: process context, may sleep.
 * Return: as vrnic_cmdq_exec(). On -ETIMEDOUT the device may still write to
 * the buffer at any time: the caller must never free or reuse it (leak it).
 */
int vrnic_cmdq_exec_dma(struct vrnic_cmdq *cmdq, union vrnic_aq_cmd *cmd,
			dma_addr_t resp_dma, size_t resp_len, u64 *result)
{
	int err;

	cmd->query.resp_addr = cpu_to_le64(resp_dma);
	cmd->query.resp_len = cpu_to_le32(resp_len);
	err = vrnic_cmdq_exec(cmdq, cmd, NULL, 0, result);
	/* The device wrote the answer before the CQE. */
	if (!err)
		dma_rmb();
	return err;
}
EXPORT_SYMBOL_GPL(vrnic_cmdq_exec_dma);

void vrnic_cmdq_set_polling(struct vrnic_cmdq *cmdq, bool polling)
{
	if (polling)
		set_bit(VRNIC_CMDQ_POLLING, &cmdq->flags);
	else
		clear_bit(VRNIC_CMDQ_POLLING, &cmdq->flags);
}

/*
 * Allocate the rings and start the queue in polling mode. The device raises
 * vector 0 for every completion from the start (irq_en); until the driver
 * requests that IRQ the message stays pending in the masked MSI-X entry and
 * is harmless when it is finally delivered.
 */
int vrnic_cmdq_init(struct vrnic_cmdq *cmdq, struct device *dev,
		    void __iomem *regs)
{
	u32 cap = readl(regs + VRNIC_REG_CAP_AQ);
	u32 max_log = FIELD_GET(VRNIC_CAP_AQ_LOG_DEPTH_MASK, cap);
	unsigned int i;
	int err = -ENOMEM;

	if (!max_log) {
		dev_err(dev, "device reports no admin queue (CAP_AQ %#x)\n",
			cap);
		return -EINVAL;
	}

	cmdq->dev = dev;
	cmdq->regs = regs;
	cmdq->log_depth = min3(max_log, (u32)VRNIC_AQ_MAX_LOG_DEPTH,
			       (u32)VRNIC_CMDQ_LOG_DEPTH);
	cmdq->depth = 1U << cmdq->log_depth;
	cmdq->timeout_ms = FIELD_GET(VRNIC_CAP_AQ_TIMEOUT_MS_MASK, cap);
	if (!cmdq->timeout_ms)
		cmdq->timeout_ms = VRNIC_CMDQ_DEFAULT_TIMEOUT_MS;
	cmdq->sq_pi = 0;
	cmdq->cq_ci = 0;
	cmdq->flags = 0;
	spin_lock_init(&cmdq->sq_lock);
	spin_lock_init(&cmdq->cq_lock);
	sema_init(&cmdq->credits, cmdq->depth);
	atomic64_set(&cmdq->stats.submitted, 0);
	atomic64_set(&cmdq->stats.completed, 0);
	atomic64_set(&cmdq->stats.errors, 0);
	atomic64_set(&cmdq->stats.timeouts, 0);

	/* Coherent memory is zeroed: every CQE starts with phase 0 (old). */
	cmdq->sq = dma_alloc_coherent(dev, cmdq->depth * VRNIC_AQ_CMD_SIZE,
				      &cmdq->sq_dma, GFP_KERNEL);
	if (!cmdq->sq)
		return -ENOMEM;

	cmdq->cq = dma_alloc_coherent(dev, cmdq->depth * VRNIC_AQ_CQE_SIZE,
				      &cmdq->cq_dma, GFP_KERNEL);
	if (!cmdq->cq)
		goto err_free_sq;

	cmdq->resp = dma_alloc_coherent(dev,
					cmdq->depth * VRNIC_CMDQ_RESP_SIZE,
					&cmdq->resp_dma, GFP_KERNEL);
	if (!cmdq->resp)
		goto err_free_cq;

	cmdq->ctx = kcalloc(cmdq->depth, sizeof(*cmdq->ctx), GFP_KERNEL);
	if (!cmdq->ctx)
		goto err_free_resp;
	for (i = 0; i < cmdq->depth; i++)
		init_completion(&cmdq->ctx[i].done);

	cmdq->ctx_bitmap = bitmap_zalloc(cmdq->depth, GFP_KERNEL);
	if (!cmdq->ctx_bitmap)
		goto err_free_ctx;

	set_bit(VRNIC_CMDQ_POLLING, &cmdq->flags);
	set_bit(VRNIC_CMDQ_RUNNING, &cmdq->flags);

	writel(lower_32_bits(cmdq->sq_dma), regs + VRNIC_REG_AQ_SQ_BASE_LO);
	writel(upper_32_bits(cmdq->sq_dma), regs + VRNIC_REG_AQ_SQ_BASE_HI);
	writel(lower_32_bits(cmdq->cq_dma), regs + VRNIC_REG_AQ_CQ_BASE_LO);
	writel(upper_32_bits(cmdq->cq_dma), regs + VRNIC_REG_AQ_CQ_BASE_HI);
	writel(VRNIC_RING_CFG_ENABLE | VRNIC_RING_CFG_IRQ_EN |
	       FIELD_PREP(VRNIC_RING_CFG_LOG_DEPTH_MASK, cmdq->log_depth),
	       regs + VRNIC_REG_AQ_CFG);

	dev_dbg(dev, "admin queue: %u entries, timeout %u ms\n",
		cmdq->depth, cmdq->timeout_ms);
	return 0;

err_free_ctx:
	kfree(cmdq->ctx);
err_free_resp:
	dma_free_coherent(dev, cmdq->depth * VRNIC_CMDQ_RESP_SIZE, cmdq->resp,
			  cmdq->resp_dma);
err_free_cq:
	dma_free_coherent(dev, cmdq->depth * VRNIC_AQ_CQE_SIZE, cmdq->cq,
			  cmdq->cq_dma);
err_free_sq:
	dma_free_coherent(dev, cmdq->depth * VRNIC_AQ_CMD_SIZE, cmdq->sq,
			  cmdq->sq_dma);
	return err;
}

/*
 * Stop the queue. Clearing the enable bit returns the device's rings to idle
 * before the write returns, so no DMA can reach the memory freed below, even
 * for a command that timed out.
 */
void vrnic_cmdq_uninit(struct vrnic_cmdq *cmdq)
{
	struct device *dev = cmdq->dev;

	clear_bit(VRNIC_CMDQ_RUNNING, &cmdq->flags);
	writel(0, cmdq->regs + VRNIC_REG_AQ_CFG);
	/* Flush the posted write before the memory goes away. */
	readl(cmdq->regs + VRNIC_REG_AQ_CFG);

	bitmap_free(cmdq->ctx_bitmap);
	kfree(cmdq->ctx);
	dma_free_coherent(dev, cmdq->depth * VRNIC_CMDQ_RESP_SIZE, cmdq->resp,
			  cmdq->resp_dma);
	dma_free_coherent(dev, cmdq->depth * VRNIC_AQ_CQE_SIZE, cmdq->cq,
			  cmdq->cq_dma);
	dma_free_coherent(dev, cmdq->depth * VRNIC_AQ_CMD_SIZE, cmdq->sq,
			  cmdq->sq_dma);
}
