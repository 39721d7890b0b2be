// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf MRs (ibv_reg_dmabuf_mr -> provider -> uverbs -> driver
 * reg_user_mr_dmabuf): memory another kernel exporter owns, registered by
 * file descriptor and offset instead of by address. Three exporters
 * (dbuf.h): the system dma-heap and udmabuf, which the guest kernel has,
 * and the ivshmem BAR (peer memory: tools/vm --peer-mem,
 * ivshmem_dmabuf.ko), which vrnic reaches by peer-to-peer DMA. For each:
 * RDMA WRITE into such an MR, RDMA READ from it and a SEND received into
 * it, checked through the dma-buf's own CPU mapping (and for the BAR, also
 * through the host's file behind it); an access past its end fails as on
 * any MR; bad registrations fail with the kernel's errno; deregistration
 * leaves no MR behind. Two RC QPs of one guest talk through the device's
 * loopback. The exporter's own argument checks: ivshmem_export_*.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "common.h"
#include "dbuf.h"
#include "mr_query.h"
#include "qp.h"

#define DBUF	(16 * 4096)		/* the dma-buf */
#define MR_OFF	4096			/* the MR starts one page in */
#define MR_LEN	(8 * 4096)
#define MR_IOVA	0x7f0000001000ull	/* any address the MR is given */
#define SRC	(2 * MR_LEN)

FIXTURE(dmabuf) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *src_mr, *mr;
	char *src;
	struct dbuf d;
	int mrs_before;
};

FIXTURE_VARIANT(dmabuf) {
	const char *exporter;
};

FIXTURE_VARIANT_ADD(dmabuf, dma_heap) {
	.exporter = "dma_heap",
};

FIXTURE_VARIANT_ADD(dmabuf, udmabuf) {
	.exporter = "udmabuf",
};

/* The ivshmem BAR: peer memory, reached by peer-to-peer DMA. */
FIXTURE_VARIANT_ADD(dmabuf, ivshmem) {
	.exporter = "ivshmem",
};

FIXTURE_SETUP(dmabuf)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 12 };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ;
	struct verdict v = { .ok = true };
	struct ibv_ah_attr ah;
	union ibv_gid gid;
	int gidx, err;

	self->d = (struct dbuf) { .fd = -1, .memfd = -1, .host = -1 };
	if (!strcmp(variant->exporter, "ivshmem") && !getenv("VRNIC_PEER_MEM"))
		SKIP(return, "no peer memory: not a tools/vm --peer-mem guest");
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx);
	gidx = vrnic_wait_ipv4_gid(self->ctx, now() + 30, &gid);
	ASSERT_LE(0, gidx);
	self->mrs_before = vrnic_res_count("mr");
	self->pd = ibv_alloc_pd(self->ctx);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_TRUE(self->pd && self->cq);
	ia.send_cq = ia.recv_cq = self->cq;
	self->a = ibv_create_qp(self->pd, &ia);
	self->b = ibv_create_qp(self->pd, &ia);
	self->src = aligned_alloc(4096, SRC);
	ASSERT_TRUE(self->a && self->b && self->src);
	self->src_mr = ibv_reg_mr(self->pd, self->src, SRC, acc);
	ASSERT_NE(NULL, self->src_mr);
	roce_ah_attr(&ah, gid.raw, gidx);
	ASSERT_TRUE(qp_to_init(self->a, &v) && qp_to_init(self->b, &v) &&
		    qp_to_rts(self->a, &ah, self->b->qp_num, 200, 100, &k, &v) &&
		    qp_to_rts(self->b, &ah, self->a->qp_num, 100, 200, &k, &v))
		TH_LOG("%s", v.note);

	err = dbuf_open(&self->d, dbuf_exporter(variant->exporter), DBUF);
	ASSERT_EQ(0, err)
		TH_LOG("%s: %s", variant->exporter, strerror(-err));
	self->mr = ibv_reg_dmabuf_mr(self->pd, MR_OFF, MR_LEN, MR_IOVA,
				     self->d.fd, acc);
	ASSERT_NE(NULL, self->mr)
		TH_LOG("ibv_reg_dmabuf_mr: %s", strerror(errno));
}

FIXTURE_TEARDOWN(dmabuf)
{
	ibv_destroy_qp(self->a);
	ibv_destroy_qp(self->b);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->src_mr)
		ibv_dereg_mr(self->src_mr);
	ibv_destroy_cq(self->cq);
	vrnic_close(self->ctx, self->pd);
	dbuf_close(&self->d);
	free(self->src);
}

static void fill(char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)(mix(seed + i / 8) >> (i % 8 * 8));
}

/* Where BAR 2 of the (only) ivshmem function starts, or 0. */
static uint64_t bar2_start(void)
{
	uint64_t start = 0, end, flags;
	char path[160];
	glob_t g;
	FILE *f;

	if (glob("/sys/bus/pci/drivers/ivshmem_dmabuf/0000:*/resource", 0,
		 NULL, &g) || !g.gl_pathc)
		return 0;
	snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
	globfree(&g);
	f = fopen(path, "r");
	for (int i = 0; f && i < 3; i++)
		if (fscanf(f, "%" SCNx64 " %" SCNx64 " %" SCNx64, &start, &end,
			   &flags) != 3)
			start = 0;
	if (f)
		fclose(f);
	return start;
}

/* One WR on qp, waited for; its status. */
static int one(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op,
	       struct ibv_mr *mr, void *addr, uint32_t len, uint64_t raddr,
	       uint32_t rkey)
{
	struct ibv_wc wc;

	if (qp_post_one(qp, op, mr, addr, len, raddr, rkey, 0, op))
		return -1;
	if (wait_wc(cq, &wc, 1, 5000) != 1)
		return -2;
	return wc.status;
}

TEST_F(dmabuf, write_lands_in_the_dma_buf)
{
	char *in = self->d.map + MR_OFF;

	dbuf_cpu(&self->d, true, true);
	memset(self->d.map, 0x5a, DBUF);
	dbuf_cpu(&self->d, false, true);
	fill(self->src, MR_LEN, 1);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  one(self->a, self->cq, IBV_WR_RDMA_WRITE, self->src_mr,
		      self->src, MR_LEN, MR_IOVA, self->mr->rkey));
	dbuf_cpu(&self->d, true, false);
	EXPECT_EQ(0, memcmp(in, self->src, MR_LEN));
	/* Nothing outside the MR's part of the buffer was touched. */
	EXPECT_EQ(0x5a, self->d.map[MR_OFF - 1]);
	EXPECT_EQ(0x5a, self->d.map[MR_OFF + MR_LEN]);
	dbuf_cpu(&self->d, false, false);
	if (self->d.host >= 0) {
		/* The bytes are in the BAR's memory, as the host sees it. */
		char *host = malloc(MR_LEN);

		ASSERT_NE(NULL, host);
		ASSERT_TRUE(dbuf_host_io(&self->d, MR_OFF, host, MR_LEN, false));
		EXPECT_EQ(0, memcmp(host, self->src, MR_LEN));
		free(host);
	}
}

TEST_F(dmabuf, read_comes_from_the_dma_buf)
{
	char *data = malloc(MR_LEN);

	ASSERT_NE(NULL, data);
	fill(data, MR_LEN, 2);
	if (self->d.host >= 0) {
		/* Put there by the host, the "GPU" that owns the BAR. */
		ASSERT_TRUE(dbuf_host_io(&self->d, MR_OFF, data, MR_LEN, true));
	} else {
		dbuf_cpu(&self->d, true, true);
		memcpy(self->d.map + MR_OFF, data, MR_LEN);
		dbuf_cpu(&self->d, false, true);
	}
	memset(self->src, 0, MR_LEN);
	/* An unaligned piece, across pages of the buffer. */
	ASSERT_EQ(IBV_WC_SUCCESS,
		  one(self->a, self->cq, IBV_WR_RDMA_READ, self->src_mr,
		      self->src, 3 * 4096 + 100, MR_IOVA + 4000,
		      self->mr->rkey));
	dbuf_cpu(&self->d, true, false);
	EXPECT_EQ(0, memcmp(self->src, self->d.map + MR_OFF + 4000,
			    3 * 4096 + 100));
	dbuf_cpu(&self->d, false, false);
	EXPECT_EQ(0, memcmp(self->src, data + 4000, 3 * 4096 + 100));
	free(data);
}

TEST_F(dmabuf, send_is_received_into_the_dma_buf)
{
	struct ibv_sge sge = { .addr = MR_IOVA + 64, .length = 5000,
			       .lkey = self->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct ibv_wc wc[2];
	int got = 0;

	ASSERT_EQ(0, ibv_post_recv(self->b, &wr, &bad));
	fill(self->src, 5000, 3);
	ASSERT_EQ(0, qp_post_one(self->a, IBV_WR_SEND, self->src_mr,
				 self->src, 5000, 0, 0, 0, 1));
	while (got < 2) {
		int n = wait_wc(self->cq, wc + got, 2 - got, 5000);

		ASSERT_LT(0, n);
		got += n;
	}
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		if (wc[i].wr_id == 7)
			EXPECT_EQ(5000, wc[i].byte_len);
	}
	dbuf_cpu(&self->d, true, false);
	EXPECT_EQ(0, memcmp(self->d.map + MR_OFF + 64, self->src, 5000));
	dbuf_cpu(&self->d, false, false);
}

/*
 * The device's translation of the MR (debugfs mr_query) is the exporter's
 * memory, page for page: for udmabuf the memfd's pages (pagemap of a
 * mapping of the memfd), for the BAR its bus address, so the device
 * reaches it peer to peer and not through a copy. The dma-heap's pages are
 * visible to no user-space mapping pagemap can read (the heap maps them
 * VM_PFNMAP): for it, only that every page is translated, each to a
 * different page.
 */
TEST_F(dmabuf, the_device_translates_to_the_exporters_pages)
{
	uint64_t bar = self->d.host >= 0 ? bar2_start() : 0;
	char *memfd_map = MAP_FAILED;
	int pagemap, bad = 0;
	struct mr_query q;

	if (self->d.memfd >= 0) {
		memfd_map = mmap(NULL, DBUF, PROT_READ,
				 MAP_SHARED | MAP_POPULATE, self->d.memfd, 0);
		ASSERT_NE(MAP_FAILED, memfd_map);
	}
	if (self->d.host >= 0)
		ASSERT_NE(0, bar);
	ASSERT_EQ(0, mr_query(self->mr->lkey, &q));
	EXPECT_EQ(MR_IOVA, q.iova);
	EXPECT_EQ(MR_LEN, q.length);
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pagemap);
	for (size_t off = 0; off < MR_LEN; off += 4096) {
		uint64_t got = mr_query_addr(&q, MR_IOVA + off), want = got;

		if (memfd_map != MAP_FAILED)
			want = phys_of(pagemap, memfd_map + MR_OFF + off);
		else if (bar)
			want = bar + DBUF_IVSHMEM_OFF + MR_OFF + off;
		for (size_t o = 0; o < off && got; o += 4096)
			if (mr_query_addr(&q, MR_IOVA + o) == got)
				got = 0;	/* two pages, one address */
		if (!got || got != want) {
			if (bad++ < 5)
				TH_LOG("page %zu: device %#" PRIx64 ", exporter %#" PRIx64,
				       off / 4096, mr_query_addr(&q, MR_IOVA + off),
				       want);
		}
	}
	EXPECT_EQ(0, bad);
	close(pagemap);
	mr_query_free(&q);
	if (memfd_map != MAP_FAILED)
		munmap(memfd_map, DBUF);
}

TEST_F(dmabuf, access_past_the_end_is_a_remote_access_error)
{
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  one(self->a, self->cq, IBV_WR_RDMA_WRITE, self->src_mr,
		      self->src, 64, MR_IOVA + MR_LEN - 32, self->mr->rkey));
}

TEST_F(dmabuf, bad_registrations_fail)
{
	int acc = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_mr *mr;

	/* Not a file, not a dma-buf, past the buffer's end, no length. */
	mr = ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, -1, acc);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EBADF, errno);
	mr = ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, self->ctx->cmd_fd, acc);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	mr = ibv_reg_dmabuf_mr(self->pd, DBUF - 4096, 2 * 4096, 0,
			       self->d.fd, acc);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	mr = ibv_reg_dmabuf_mr(self->pd, 0, 0, 0, self->d.fd, acc);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	/* Remote write without local write, as for any MR. */
	mr = ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, self->d.fd,
			       IBV_ACCESS_REMOTE_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dmabuf, deregistration_leaves_nothing)
{
	/* The source MR and the dma-buf MR are registered now. */
	EXPECT_EQ(self->mrs_before + 2, vrnic_res_count("mr"));
	ASSERT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
	EXPECT_EQ(self->mrs_before + 1, vrnic_res_count("mr"));
	/* The buffer outlives the MR: the exporter still serves it. */
	dbuf_cpu(&self->d, true, true);
	self->d.map[0] = 1;
	dbuf_cpu(&self->d, false, true);
	EXPECT_EQ(1, self->d.map[0]);
}

/*
 * ivshmem_dmabuf.ko's own checks (tools/vm --peer-mem): ranges that are
 * not page-aligned, empty, past the BAR or wrapping around, unknown flags
 * and a non-zero reserved field are refused with EINVAL, an unknown ioctl
 * with ENOTTY; a CPU mapping past the buffer fails; a dma-buf of the BAR's
 * last page maps that page (the host's file says so) and outlives the
 * device file it came from.
 */
TEST(ivshmem_export_checks)
{
	const uint64_t pg = 4096;
	struct ivshmem_dmabuf_export e;
	uint64_t bar;
	char host, *p;
	int dev, fd;

	if (!getenv("VRNIC_PEER_MEM"))
		SKIP(return, "no peer memory: not a tools/vm --peer-mem guest");
	dev = open(DBUF_IVSHMEM_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, ioctl(dev, IVSHMEM_DMABUF_SIZE, &bar));
	ASSERT_LE(2 * pg, bar);
	const struct ivshmem_dmabuf_export bad[] = {
		{ .offset = 1, .size = pg, .flags = O_RDWR },
		{ .offset = 0, .size = 100, .flags = O_RDWR },
		{ .offset = 0, .size = 0, .flags = O_RDWR },
		{ .offset = bar, .size = pg, .flags = O_RDWR },
		{ .offset = bar - pg, .size = 2 * pg, .flags = O_RDWR },
		{ .offset = pg, .size = -pg, .flags = O_RDWR },
		{ .offset = 0, .size = pg, .flags = O_RDWR | O_APPEND },
		{ .offset = 0, .size = pg, .flags = O_ACCMODE },
		{ .offset = 0, .size = pg, .flags = O_RDWR, .reserved = 1 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		e = bad[i];
		EXPECT_EQ(-1, ioctl(dev, IVSHMEM_DMABUF_EXPORT, &e))
			TH_LOG("bad[%zu] exported", i);
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(-1, ioctl(dev, _IO(IVSHMEM_DMABUF_IOCTL_BASE, 0xdf)));
	EXPECT_EQ(ENOTTY, errno);

	e = (struct ivshmem_dmabuf_export) {
		.offset = bar - pg, .size = pg, .flags = O_RDWR | O_CLOEXEC,
	};
	fd = ioctl(dev, IVSHMEM_DMABUF_EXPORT, &e);
	ASSERT_LE(0, fd);
	close(dev);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, pg));
	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[pg - 1] = 0x77;
	dev = open(getenv("VRNIC_PEER_MEM"), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(1, pread(dev, &host, 1, bar - 1));
	EXPECT_EQ(0x77, host);
	close(dev);
	munmap(p, pg);
	close(fd);
}

TEST_HARNESS_MAIN
