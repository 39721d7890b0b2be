// SPDX-License-Identifier: GPL-2.0
/*
 * Shared objects: ibv_import_device, ibv_import_pd, ibv_import_mr and
 * ibv_import_dm. A process hands its command fd to another over a unix
 * socket (SCM_RIGHTS) together with the handles of a PD, an MR and a
 * device memory allocation; the other process imports them and uses them
 * as its own:
 *  - the imported MR has the creator's keys and length; the importer's QPs,
 *    created on the imported PD, RDMA WRITE into it at the creator's
 *    address, and the creator finds the data in its private buffer (the
 *    importer has no mapping of it);
 *  - the importer reads what the creator put in the device memory, and the
 *    creator reads what the importer wrote back;
 *  - unimporting leaves every object to its creator, which still uses it
 *    and destroys it; afterwards the device holds what it held before.
 * And the refusals: a handle that names nothing, a handle of another type,
 * or a PD that is already gone fail the import; a descriptor that is not a
 * verbs command fd is no device.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"
#include "pattern.h"
#include "qp.h"

#define BUF_LEN		(64 * 1024)
#define DM_LEN		4096
#define BAD_HANDLE	0x7ffffff0u

/* What the creator tells the importer, beside the fd. */
struct shared {
	uint32_t pd_handle, mr_handle, dm_handle;
	uint32_t lkey, rkey;
	uint64_t addr, length;
	uint64_t seed;
};

static int send_fd(int sock, int fd, const void *msg, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == (ssize_t)len ? 0 : -1;
}

/* The fd received with msg, or -1. */
static int recv_fd(int sock, void *msg, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct iovec iov = { .iov_base = msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &mh, 0) != (ssize_t)len)
		return -1;
	c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * One signaled RDMA WRITE of len pattern bytes (seed) into raddr/rkey from
 * two loopback RC QPs created on pd for the purpose; 0 when it completed
 * successfully, else a note in v.
 */
static int write_through(struct ibv_context *ctx, struct ibv_pd *pd,
			 uint64_t raddr, uint32_t rkey, size_t len,
			 uint64_t seed, struct verdict *v)
{
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 1 };
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_mr *src_mr = NULL;
	struct ibv_ah_attr ah;
	union ibv_gid gid;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	int gidx, ret = -1;
	uint8_t *src;

	gidx = vrnic_wait_ipv4_gid(ctx, now() + 30, &gid);
	src = aligned_alloc(4096, len);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (gidx < 0 || !src || !cq) {
		fail(v, "setup: gid %d, buffer or CQ missing", gidx);
		goto out;
	}
	roce_ah_attr(&ah, gid.raw, gidx);
	ia.send_cq = ia.recv_cq = cq;
	a = ibv_create_qp(pd, &ia);
	b = ibv_create_qp(pd, &ia);
	fill(src, len, seed);
	src_mr = ibv_reg_mr(pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	if (!a || !b || !src_mr) {
		fail(v, "QPs or MR on the PD: %s", strerror(errno));
		goto out;
	}
	if (!(qp_to_init(a, v) && qp_to_init(b, v) &&
	      qp_to_rts(a, &ah, b->qp_num, 7, 9, &k, v) &&
	      qp_to_rts(b, &ah, a->qp_num, 9, 7, &k, v)))
		goto out;
	if (qp_post_one(a, IBV_WR_RDMA_WRITE, src_mr, src, len, raddr, rkey, 0,
			1)) {
		fail(v, "post_send: %s", strerror(errno));
		goto out;
	}
	if (wait_wc(cq, &wc, 1, 20000) != 1) {
		fail(v, "no completion for the WRITE");
		goto out;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fail(v, "WRITE completed with %s", ibv_wc_status_str(wc.status));
		goto out;
	}
	ret = 0;
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (src_mr)
		ibv_dereg_mr(src_mr);
	if (cq)
		ibv_destroy_cq(cq);
	free(src);
	return ret;
}

/*
 * The importing process: every check it makes goes into v, which it
 * sends back whole.
 */
static void importer(int sock)
{
	struct ibv_context *ctx = NULL;
	struct verdict v = { .ok = true };
	uint8_t dm_data[DM_LEN], back[DM_LEN];
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_dm *dm = NULL;
	struct shared sh;
	int fd;

	fd = recv_fd(sock, &sh, sizeof(sh));
	if (fd < 0) {
		fail(&v, "no command fd from the creator");
		goto out;
	}
	ctx = ibv_import_device(fd);
	if (!ctx) {
		fail(&v, "ibv_import_device: %s", strerror(errno));
		goto out;
	}
	pd = ibv_import_pd(ctx, sh.pd_handle);
	if (!pd) {
		fail(&v, "ibv_import_pd: %s", strerror(errno));
		goto out;
	}
	mr = ibv_import_mr(pd, sh.mr_handle);
	if (!mr) {
		fail(&v, "ibv_import_mr: %s", strerror(errno));
		goto out;
	}
	if (mr->lkey != sh.lkey || mr->rkey != sh.rkey ||
	    mr->length != sh.length || mr->handle != sh.mr_handle)
		fail(&v, "imported MR lkey %#x rkey %#x length %zu, the creator's %#x %#x %llu",
		     mr->lkey, mr->rkey, mr->length, sh.lkey, sh.rkey,
		     (unsigned long long)sh.length);
	dm = ibv_import_dm(ctx, sh.dm_handle);
	if (!dm) {
		fail(&v, "ibv_import_dm: %s", strerror(errno));
		goto out;
	}
	if (ibv_memcpy_from_dm(dm_data, dm, 0, DM_LEN) ||
	    differs(dm_data, DM_LEN, sh.seed + 1) >= 0)
		fail(&v, "the device memory does not hold what the creator wrote");
	fill(back, DM_LEN, sh.seed + 2);
	if (ibv_memcpy_to_dm(dm, 0, back, DM_LEN))
		fail(&v, "memcpy_to_dm on the imported allocation: %s",
		     strerror(errno));

	/* The creator's buffer is not mapped here: only its MR reaches it. */
	write_through(ctx, pd, sh.addr, mr->rkey, BUF_LEN, sh.seed, &v);
out:
	if (dm)
		ibv_unimport_dm(dm);
	if (mr)
		ibv_unimport_mr(mr);
	if (pd)
		ibv_unimport_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (write(sock, &v, sizeof(v)) != sizeof(v))
		_exit(2);
	_exit(v.ok ? 0 : 1);
}

/* The device's object counts, to compare before and after. */
struct counts {
	int pd, mr, qp, cq;
};

static struct counts count_objects(void)
{
	return (struct counts){ vrnic_res_count("pd"), vrnic_res_count("mr"),
				vrnic_res_count("qp"), vrnic_res_count("cq") };
}

TEST(another_process_uses_the_imported_objects)
{
	struct counts before = count_objects(), after;
	struct verdict v = { .ok = true };
	struct ibv_device_attr_ex dx;
	uint8_t dm_data[DM_LEN];
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_dm *dm;
	struct shared sh;
	int sv[2], status;
	uint8_t *buf;
	pid_t pid;

	ASSERT_LE(0, before.pd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	/* Forked before any verbs object exists: it inherits nothing. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		importer(sv[1]);
	}
	close(sv[1]);

	ctx = vrnic_open();
	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_device_ex(ctx, NULL, &dx));
	ASSERT_LE(DM_LEN, dx.max_dm_size);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, BUF_LEN);
	mr = ibv_reg_mr(pd, buf, BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr);
	dm = ibv_alloc_dm(ctx, &da);
	ASSERT_NE(NULL, dm);

	sh = (struct shared){
		.pd_handle = pd->handle, .mr_handle = mr->handle,
		.dm_handle = dm->handle, .lkey = mr->lkey, .rkey = mr->rkey,
		.addr = (uintptr_t)buf, .length = BUF_LEN, .seed = rand64(),
	};
	fill(dm_data, DM_LEN, sh.seed + 1);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 0, dm_data, DM_LEN));
	ASSERT_EQ(0, send_fd(sv[0], ctx->cmd_fd, &sh, sizeof(sh)));

	ASSERT_EQ(sizeof(v), read(sv[0], &v, sizeof(v)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(v.ok) TH_LOG("importer: %s", v.note);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	EXPECT_GT(0, differs(buf, BUF_LEN, sh.seed))
		TH_LOG("the importer's WRITE is not in the creator's buffer");
	ASSERT_EQ(0, ibv_memcpy_from_dm(dm_data, dm, 0, DM_LEN));
	EXPECT_GT(0, differs(dm_data, DM_LEN, sh.seed + 2))
		TH_LOG("the importer's copy into the device memory is missing");

	/* Unimported, everything is still the creator's to use and free. */
	memset(buf, 0, BUF_LEN);
	EXPECT_EQ(0, write_through(ctx, pd, sh.addr, mr->rkey, BUF_LEN,
				   sh.seed + 3, &v)) TH_LOG("%s", v.note);
	EXPECT_GT(0, differs(buf, BUF_LEN, sh.seed + 3));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_free_dm(dm));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));
	munmap(buf, BUF_LEN);
	close(sv[0]);

	after = count_objects();
	EXPECT_EQ(before.pd, after.pd);
	EXPECT_EQ(before.mr, after.mr);
	EXPECT_EQ(before.qp, after.qp);
	EXPECT_EQ(before.cq, after.cq);
}

TEST(imports_refuse_what_is_not_there)
{
	struct ibv_context *ctx, *ictx;
	struct ibv_pd *pd, *ipd, *gone;
	uint32_t gone_handle;
	struct ibv_mr *mr;
	uint8_t *buf;
	int fd;

	ctx = vrnic_open();
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	buf = aligned_alloc(4096, 4096);
	ASSERT_NE(NULL, buf);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	ictx = ibv_import_device(dup(ctx->cmd_fd));
	ASSERT_NE(NULL, ictx) TH_LOG("import_device: %s", strerror(errno));
	ipd = ibv_import_pd(ictx, pd->handle);
	ASSERT_NE(NULL, ipd);

	errno = 0;
	EXPECT_EQ(NULL, ibv_import_pd(ictx, BAD_HANDLE));
	EXPECT_NE(0, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_pd(ictx, mr->handle))
		TH_LOG("an MR's handle imported as a PD");
	EXPECT_NE(0, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_mr(ipd, BAD_HANDLE));
	EXPECT_NE(0, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_mr(ipd, pd->handle))
		TH_LOG("a PD's handle imported as an MR");
	EXPECT_NE(0, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_dm(ictx, BAD_HANDLE));
	EXPECT_NE(0, errno);

	gone = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, gone);
	gone_handle = gone->handle;
	ASSERT_EQ(0, ibv_dealloc_pd(gone));
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_pd(ictx, gone_handle))
		TH_LOG("a deallocated PD imported");
	EXPECT_NE(0, errno);

	/* Not a uverbs command fd: a regular file, and /dev/null. */
	fd = open("/proc/self/status", O_RDONLY);
	ASSERT_LE(0, fd);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_device(fd));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	fd = open("/dev/null", O_RDWR);
	ASSERT_LE(0, fd);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_device(fd));
	EXPECT_EQ(ENODEV, errno);
	close(fd);

	/* The failed imports changed nothing: the PD and MR still work. */
	ibv_unimport_pd(ipd);
	EXPECT_EQ(0, ibv_close_device(ictx));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));
	free(buf);
}

TEST_HARNESS_MAIN
