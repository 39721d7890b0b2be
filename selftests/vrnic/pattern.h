/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test data as a pattern of a seed: byte k is a function of (seed, k)
 * alone, so the side that receives data, or a process that only shares a
 * seed, can check any byte on its own and name the first wrong one.
 */
#ifndef VRNIC_SELFTEST_PATTERN_H
#define VRNIC_SELFTEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

/* Byte k of the pattern of seed. */
static inline uint8_t pat(uint64_t seed, size_t k)
{
	return mix(seed ^ (k / 8)) >> (8 * (k % 8));
}

static inline void fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t k = 0; k < len; k++)
		p[k] = pat(seed, k);
}

/* Offset of the first byte that is not the pattern, or -1. */
static inline ssize_t differs(const uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t k = 0; k < len; k++)
		if (p[k] != pat(seed, k))
			return k;
	return -1;
}

#endif
