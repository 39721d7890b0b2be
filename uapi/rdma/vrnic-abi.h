/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * vrnic user/kernel ABI: the udata structs exchanged between libvrnic and
 * vrnic.ko. Rules (as in efa-abi.h): __u* types, 8-byte aligned structs,
 * comp_mask first, padding named reserved_<hex bit offset>.
 */
#ifndef VRNIC_ABI_USER_H
#define VRNIC_ABI_USER_H

#include <linux/types.h>

/* Bump only for an incompatible change; rdma-core matches on it. */
#define VRNIC_UVERBS_ABI_VERSION 1

/* alloc_ucontext: nothing is requested yet; comp_mask must be 0. */
struct vrnic_alloc_ucontext_cmd {
	__aligned_u64 comp_mask;
};

struct vrnic_alloc_ucontext_resp {
	__aligned_u64 comp_mask;
	__u32 db_page_shift;	/* log2 of this context's doorbell page */
	__u32 reserved_60;
};

#endif /* VRNIC_ABI_USER_H */
