// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf MRs (ibv_reg_dmabuf_mr -> provider -> uverbs -> driver
 * reg_user_mr_dmabuf): memory another kernel exporter owns, registered by
 * file descriptor and offset instead of by address. Two exporters the
 * guest kernel has: the system dma-heap (/dev/dma_heap/system) and udmabuf
 * (/dev/udmabuf over a sealed memfd). For each: RDMA WRITE into such an MR,
 * RDMA READ from it and a SEND received into it, checked through the
 * dma-buf's own CPU mapping; an access past its end fails as on any MR;
 * bad registrations fail with the kernel's errno; deregistration leaves
 * no MR behind. Two RC QPs of one guest talk through the device's
 * loopback.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"
#include "qp.h"

#define DBUF	(16 * 4096)		/* the dma-buf */
#define MR_OFF	4096			/* the MR starts one page in */
#define MR_LEN	(8 * 4096)
#define MR_IOVA	0x7f0000001000ull	/* any address the MR is given */
#define SRC	(2 * MR_LEN)

/* A dma-buf of DBUF bytes and a CPU mapping of it. */
struct dbuf {
	int fd;
	int memfd;		/* udmabuf: the memfd behind it, else -1 */
	char *map;
};

static int heap_alloc(struct dbuf *d)
{
	struct dma_heap_allocation_data a = {
		.len = DBUF, .fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	if (heap < 0)
		return -errno;
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a)) {
		close(heap);
		return -errno;
	}
	close(heap);
	d->fd = a.fd;
	d->memfd = -1;
	return 0;
}

static int udmabuf_alloc(struct dbuf *d)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = DBUF };
	int dev;

	d->memfd = memfd_create("vrnic-dmabuf", MFD_ALLOW_SEALING);
	if (d->memfd < 0)
		return -errno;
	if (ftruncate(d->memfd, DBUF) ||
	    fcntl(d->memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -errno;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	c.memfd = d->memfd;
	d->fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	return d->fd < 0 ? -errno : 0;
}

/* CPU access to the mapping: bracketed as the dma-buf API asks. */
static void cpu_access(const struct dbuf *d, bool begin, bool write)
{
	struct dma_buf_sync s = {
		.flags = (begin ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END) |
			 (write ? DMA_BUF_SYNC_WRITE : DMA_BUF_SYNC_READ),
	};

	ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &s);
}

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
	int (*alloc)(struct dbuf *d);
};

FIXTURE_VARIANT_ADD(dmabuf, dma_heap) {
	.exporter = "/dev/dma_heap/system", .alloc = heap_alloc,
};

FIXTURE_VARIANT_ADD(dmabuf, udmabuf) {
	.exporter = "/dev/udmabuf", .alloc = udmabuf_alloc,
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

	self->d.fd = self->d.memfd = -1;
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

	err = variant->alloc(&self->d);
	ASSERT_EQ(0, err)
		TH_LOG("%s: %s", variant->exporter, strerror(-err));
	self->d.map = mmap(NULL, DBUF, PROT_READ | PROT_WRITE, MAP_SHARED,
			   self->d.fd, 0);
	ASSERT_NE(MAP_FAILED, self->d.map);
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
	if (self->d.map && self->d.map != MAP_FAILED)
		munmap(self->d.map, DBUF);
	if (self->d.fd >= 0)
		close(self->d.fd);
	if (self->d.memfd >= 0)
		close(self->d.memfd);
	free(self->src);
}

static void fill(char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)(mix(seed + i / 8) >> (i % 8 * 8));
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

	cpu_access(&self->d, true, true);
	memset(self->d.map, 0x5a, DBUF);
	cpu_access(&self->d, false, true);
	fill(self->src, MR_LEN, 1);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  one(self->a, self->cq, IBV_WR_RDMA_WRITE, self->src_mr,
		      self->src, MR_LEN, MR_IOVA, self->mr->rkey));
	cpu_access(&self->d, true, false);
	EXPECT_EQ(0, memcmp(in, self->src, MR_LEN));
	/* Nothing outside the MR's part of the buffer was touched. */
	EXPECT_EQ(0x5a, self->d.map[MR_OFF - 1]);
	EXPECT_EQ(0x5a, self->d.map[MR_OFF + MR_LEN]);
	cpu_access(&self->d, false, false);
}

TEST_F(dmabuf, read_comes_from_the_dma_buf)
{
	cpu_access(&self->d, true, true);
	fill(self->d.map + MR_OFF, MR_LEN, 2);
	cpu_access(&self->d, false, true);
	memset(self->src, 0, MR_LEN);
	/* An unaligned piece, across pages of the buffer. */
	ASSERT_EQ(IBV_WC_SUCCESS,
		  one(self->a, self->cq, IBV_WR_RDMA_READ, self->src_mr,
		      self->src, 3 * 4096 + 100, MR_IOVA + 4000,
		      self->mr->rkey));
	cpu_access(&self->d, true, false);
	EXPECT_EQ(0, memcmp(self->src, self->d.map + MR_OFF + 4000,
			    3 * 4096 + 100));
	cpu_access(&self->d, false, false);
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
	cpu_access(&self->d, true, false);
	EXPECT_EQ(0, memcmp(self->d.map + MR_OFF + 64, self->src, 5000));
	cpu_access(&self->d, false, false);
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
	cpu_access(&self->d, true, true);
	self->d.map[0] = 1;
	cpu_access(&self->d, false, true);
	EXPECT_EQ(1, self->d.map[0]);
}

TEST_HARNESS_MAIN
