// SPDX-License-Identifier: GPL-2.0
/*
 * Memory registration end to end: register MRs of 4 KiB, 1 MiB and 256 MiB
 * and check that the DEVICE's translation of every 4 KiB page (QUERY_MR via
 * the driver's debugfs mr_query) equals the physical page the kernel pinned
 * (/proc/self/pagemap; no IOMMU in the guest, so DMA address = physical).
 * Also: bad registrations fail with the right errno and a deregistered key
 * is gone from the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"
#include "mr_query.h"

#define PG 4096ul

/*
 * Compare the device's view of the MR at buf (len bytes) with pagemap.
 * Returns the number of mismatching 4 KiB pages, or -1 on a read error.
 */
static long compare_mr(struct __test_metadata *_metadata, uint32_t lkey,
		       char *buf, size_t len)
{
	struct mr_query q;
	long bad = 0;
	int pagemap;

	if (mr_query(lkey, &q))
		return -1;
	TH_LOG("lkey %#x: iova %#" PRIx64 " length %" PRIu64 " page_shift %u npages %" PRIu64,
	       lkey, q.iova, q.length, q.shift, q.npages);
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (q.iova != (uintptr_t)buf || q.length != len || pagemap < 0) {
		mr_query_free(&q);
		return -1;
	}
	for (size_t off = 0; off < len; off += PG) {
		uint64_t want = phys_of(pagemap, buf + off);
		uint64_t got = mr_query_addr(&q, (uintptr_t)buf + off);

		if (!want || got != want) {
			if (bad < 5)
				TH_LOG("page %zu: device %#" PRIx64 " pinned %#" PRIx64,
				       off / PG, got, want);
			bad++;
		}
	}
	close(pagemap);
	mr_query_free(&q);
	return bad;
}

FIXTURE(mr) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

FIXTURE_SETUP(mr)
{
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(mr)
{
	ibv_dealloc_pd(self->pd);
	ibv_close_device(self->ctx);
}

static void reg_and_compare(struct __test_metadata *_metadata,
			    struct ibv_pd *pd, size_t len)
{
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct ibv_mr *mr;

	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0x5a, len);
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr) TH_LOG("ibv_reg_mr(%zu): %s", len, strerror(errno));
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_EQ(0, compare_mr(_metadata, mr->lkey, buf, len));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(buf, len);
}

TEST_F(mr, device_view_4k)
{
	reg_and_compare(_metadata, self->pd, 4096);
}

TEST_F(mr, device_view_1m)
{
	reg_and_compare(_metadata, self->pd, 1 << 20);
}

TEST_F(mr, device_view_256m)
{
	reg_and_compare(_metadata, self->pd, 256ul << 20);
}

/* Does the device (QUERY_MR through debugfs) know this key? */
static int device_knows_key(uint32_t key)
{
	const char *path = mr_query_path();
	unsigned long long a, b;
	int known = 0;
	FILE *f;

	if (!path || !(f = fopen(path, "w")))
		return -1;
	fprintf(f, "%u\n", key);
	if (fclose(f))
		return 0;	/* the driver refused the key at write time */
	f = fopen(path, "r");
	if (f) {
		known = fscanf(f, "%llx %llx", &a, &b) == 2;
		fclose(f);
	}
	return known;
}

TEST_F(mr, stale_key_after_dereg_is_gone)
{
	char *buf = aligned_alloc(PG, PG);
	struct ibv_mr *mr = ibv_reg_mr(self->pd, buf, PG, IBV_ACCESS_LOCAL_WRITE);
	uint32_t key;

	ASSERT_NE(NULL, mr);
	key = mr->lkey;
	EXPECT_EQ(1, device_knows_key(key));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, device_knows_key(key));
	free(buf);
}

TEST_F(mr, bad_registrations_fail)
{
	char *buf = aligned_alloc(PG, PG);

	/* Remote write without local write: EINVAL (IB spec). */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_mr(self->pd, buf, PG, IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(EINVAL, errno);
	/* Unmapped memory cannot be pinned: EFAULT. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_mr(self->pd, (void *)0x1000, PG,
				   IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EFAULT, errno);
	free(buf);
}

TEST_HARNESS_MAIN
