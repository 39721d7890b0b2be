// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic device clock: the device's clock page (vrnic_hw_defs.h,
 * VRNIC_CLOCK_PAGE), mapped read-only when the kernel offers it, read by
 * ibv_query_rt_values_ex(). The clock counts nanoseconds of the host's real
 * time, the value timestamp CQEs carry (cq.c).
 */
#include <errno.h>
#include <sys/mman.h>

#include "verbs.h"

int vrnic_clock_map(struct vrnic_context *ctx,
		    const struct vrnic_alloc_ucontext_resp *resp)
{
	size_t pg_sz = to_vrnic_dev(ctx->ibvctx.context.device)->pg_sz;
	void *page;

	if (!(resp->comp_mask & VRNIC_ALLOC_UCONTEXT_RESP_CLOCK))
		return 0;
	page = mmap(NULL, pg_sz, PROT_READ, MAP_SHARED,
		    ctx->ibvctx.context.cmd_fd, resp->clock_mmap_key);
	if (page == MAP_FAILED) {
		verbs_err(&ctx->ibvctx, "clock page mmap failed: %d\n", errno);
		return errno;
	}
	ctx->clock = page;
	ctx->clock_size = pg_sz;
	return 0;
}

void vrnic_clock_unmap(struct vrnic_context *ctx)
{
	if (ctx->clock)
		munmap((void *)ctx->clock, ctx->clock_size);
	ctx->clock = NULL;
}

/* HI, LO, HI until the two HI agree: nothing latches on the device. */
static uint64_t vrnic_clock_read(const struct vrnic_context *ctx)
{
	const uint8_t *regs = ctx->clock - VRNIC_CLOCK_PAGE;
	uint32_t hi, lo, again;

	hi = mmio_read32(regs + VRNIC_REG_CLOCK_HI);
	for (;;) {
		lo = mmio_read32(regs + VRNIC_REG_CLOCK_LO);
		again = mmio_read32(regs + VRNIC_REG_CLOCK_HI);
		if (again == hi)
			return (uint64_t)hi << 32 | lo;
		hi = again;
	}
}

/*
 * The raw clock as mlx5 reports it: tv_sec 0, tv_nsec the clock value
 * (here already nanoseconds since the epoch).
 */
int vrnic_query_rt_values(struct ibv_context *ibvctx,
			  struct ibv_values_ex *values)
{
	struct vrnic_context *ctx = to_vrnic_context(ibvctx);
	uint32_t asked = values->comp_mask;

	if (!check_comp_mask(asked, IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (!ctx->clock)
		return EOPNOTSUPP;
	values->comp_mask = 0;
	if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = vrnic_clock_read(ctx);
		values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}
