/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The device's own view of an MR, through the driver's debugfs mr_query
 * (Documentation/driver-memory.rst): the QUERY_MR header and the DMA
 * address of every page as the device's table walk finds it; and the
 * physical address behind a CPU mapping (/proc/self/pagemap; needs root,
 * which the guest selftests are). The guest has no IOMMU, so a DMA address
 * is a physical address and the two compare directly.
 */
#ifndef VRNIC_SELFTEST_MR_QUERY_H
#define VRNIC_SELFTEST_MR_QUERY_H

#include <glob.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct mr_query {
	uint64_t iova, length, npages;
	unsigned int pdn, access, shift;
	uint64_t *page;		/* npages DMA addresses */
};

static inline const char *mr_query_path(void)
{
	static char path[256];
	glob_t g;

	if (glob("/sys/kernel/debug/vrnic/*/mr_query", 0, NULL, &g) ||
	    !g.gl_pathc)
		return NULL;
	snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
	globfree(&g);
	return path;
}

static inline void mr_query_free(struct mr_query *q)
{
	free(q->page);
	q->page = NULL;
}

/* The device's translation of key: 0, or -1 if it could not be read. */
static inline int mr_query(uint32_t key, struct mr_query *q)
{
	const char *path = mr_query_path();
	FILE *f;

	*q = (struct mr_query) { 0 };
	f = path ? fopen(path, "w") : NULL;
	if (!f)
		return -1;
	fprintf(f, "%u\n", key);
	if (fclose(f))
		return -1;
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%" SCNx64 " %" SCNx64 " %u %x %u %" SCNu64, &q->iova,
		   &q->length, &q->pdn, &q->access, &q->shift,
		   &q->npages) != 6 || q->shift > 63)
		goto fail;
	q->page = calloc(q->npages ? q->npages : 1, sizeof(*q->page));
	if (!q->page)
		goto fail;
	for (uint64_t i = 0; i < q->npages; i++)
		if (fscanf(f, "%" SCNx64, &q->page[i]) != 1)
			goto fail;
	fclose(f);
	return 0;
fail:
	fclose(f);
	mr_query_free(q);
	return -1;
}

/* The DMA address the device uses for I/O address a of the MR, or 0. */
static inline uint64_t mr_query_addr(const struct mr_query *q, uint64_t a)
{
	uint64_t mask = (1ull << q->shift) - 1;
	uint64_t idx = (a - (q->iova & ~mask)) >> q->shift;

	if (a < q->iova || a - q->iova >= q->length || idx >= q->npages)
		return 0;
	return q->page[idx] + (a & mask);
}

/* The physical address of the page mapped at va, or 0 if none. */
static inline uint64_t phys_of(int pagemap, const void *va)
{
	uint64_t e;

	if (pread(pagemap, &e, 8, (uintptr_t)va / 4096 * 8) != 8)
		return 0;
	if (!(e & (1ull << 63)))
		return 0;
	return (e & ((1ull << 55) - 1)) * 4096;
}

#endif
