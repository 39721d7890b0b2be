// SPDX-License-Identifier: GPL-2.0
/*
 * XRC between two processes, through unmodified libibverbs on one device
 * (the loopback path): an XRC domain opened by both from one file, one
 * target QP serving both.
 *  - The owner opens the domain (O_CREAT), makes an XRC SRQ, the target
 *    QP (IBV_QPT_XRC_RECV) and an initiator (IBV_QPT_XRC_SEND) connected
 *    to it.
 *  - The other process opens the same domain from the same file, makes
 *    an XRC SRQ of its own (its PD, its CQ) and opens the owner's target
 *    with ibv_open_qp; a number that is no target, or no QP type, is
 *    refused.
 *  - The owner's initiator sends one message to each SRQ through the one
 *    target: each lands in its own process, on that SRQ's CQ, with the
 *    target's QP number and the data intact.
 *  - A SEND to an XRC SRQ of another domain completes REM_ACCESS_ERR.
 *  - Closing everything leaves the device's object counts as they were.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"
#include "pattern.h"
#include "qp.h"

#define LEN		3000	/* three packets at path MTU 1024 */
#define WAIT_MS		20000

/* What the owner tells the other process, and what it answers. */
struct hello {
	char path[64];		/* the domain's file */
	uint32_t tgt_qpn;
	uint64_t seed;
};

struct answer {
	uint32_t srqn;
	bool ok;
};

/* One process's end: an XRC SRQ with one receive posted, on its own CQ. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int fd;
};

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd, .oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &xa);
}

/* Context, PD, CQ, the domain of path, its XRC SRQ, one receive. */
static bool side_open(struct side *s, const char *path, int oflags,
		      struct verdict *v)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
	};
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	memset(s, 0, sizeof(*s));
	s->fd = open(path, O_RDWR | oflags, 0600);
	s->ctx = vrnic_open();
	if (s->fd < 0 || !s->ctx) {
		fail(v, "open %s or the device: %s", path, strerror(errno));
		return false;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
	s->xrcd = open_xrcd(s->ctx, s->fd, oflags);
	s->buf = calloc(1, LEN);
	if (!s->pd || !s->cq || !s->xrcd || !s->buf) {
		fail(v, "PD, CQ, buffer or ibv_open_xrcd: %s", strerror(errno));
		return false;
	}
	s->mr = ibv_reg_mr(s->pd, s->buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	sa.pd = s->pd;
	sa.xrcd = s->xrcd;
	sa.cq = s->cq;
	s->srq = ibv_create_srq_ex(s->ctx, &sa);
	if (!s->mr || !s->srq) {
		fail(v, "MR or XRC SRQ: %s", strerror(errno));
		return false;
	}
	sge = (struct ibv_sge){ (uintptr_t)s->buf, LEN, s->mr->lkey };
	if (ibv_post_srq_recv(s->srq, &wr, &bad)) {
		fail(v, "ibv_post_srq_recv: %s", strerror(errno));
		return false;
	}
	return true;
}

static uint32_t srq_num(struct ibv_srq *srq)
{
	uint32_t n = 0;

	return ibv_get_srq_num(srq, &n) ? 0 : n;
}

static void side_close(struct side *s)
{
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->xrcd)
		ibv_close_xrcd(s->xrcd);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
}

/* The one receive of s arrived from target tgt, with seed's LEN bytes. */
static void expect_recv(struct side *s, uint32_t tgt, uint64_t seed,
			struct verdict *v)
{
	struct ibv_wc wc;

	if (wait_wc(s->cq, &wc, 1, WAIT_MS) != 1) {
		fail(v, "no receive completion on the SRQ's CQ");
		return;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.wr_id != 7 || wc.byte_len != LEN || wc.qp_num != tgt)
		fail(v, "receive: %s opcode %d wr_id %llu byte_len %u qp_num %#x (target %#x)",
		     ibv_wc_status_str(wc.status), wc.opcode,
		     (unsigned long long)wc.wr_id, wc.byte_len, wc.qp_num, tgt);
	else if (differs(s->buf, LEN, seed) >= 0)
		fail(v, "the message's data is not in the SRQ's buffer");
}

/* The other process: its own SRQ in the owner's domain, the owner's target. */
static void other(int sock)
{
	struct verdict v = { .ok = true };
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct answer ans = { 0 };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *tgt = NULL, *none;
	struct hello h;
	struct side s;

	if (read(sock, &h, sizeof(h)) != sizeof(h))
		_exit(2);
	if (side_open(&s, h.path, 0, &v)) {
		oa.xrcd = s.xrcd;
		oa.qp_num = h.tgt_qpn;
		tgt = ibv_open_qp(s.ctx, &oa);
		if (!tgt)
			fail(&v, "ibv_open_qp %#x: %s", h.tgt_qpn, strerror(errno));
		else if (ibv_query_qp(tgt, &qa, IBV_QP_STATE, &qia) ||
			 qa.qp_state != IBV_QPS_RTS)
			fail(&v, "the opened target is not in RTS");
		oa.qp_num = h.tgt_qpn + 0x1000;
		none = ibv_open_qp(s.ctx, &oa);
		if (none) {
			fail(&v, "ibv_open_qp of QP %#x, which is none",
			     oa.qp_num);
			ibv_destroy_qp(none);
		}
		oa.qp_num = h.tgt_qpn;
		oa.qp_type = IBV_QPT_RC;
		none = ibv_open_qp(s.ctx, &oa);
		if (none) {
			fail(&v, "ibv_open_qp of an RC QP");
			ibv_destroy_qp(none);
		}
		ans.srqn = srq_num(s.srq);
	}
	ans.ok = v.ok;
	if (write(sock, &ans, sizeof(ans)) != sizeof(ans))
		_exit(2);
	if (v.ok)
		expect_recv(&s, h.tgt_qpn, h.seed + 1, &v);
	if (tgt)
		ibv_destroy_qp(tgt);
	side_close(&s);
	if (write(sock, &v, sizeof(v)) != sizeof(v))
		_exit(2);
	_exit(v.ok ? 0 : 1);
}

/* XRC SEND of LEN pattern bytes (seed) from ini to remote XRC SRQ srqn. */
static int xrc_send(struct ibv_qp *ini, struct ibv_mr *mr, uint8_t *buf,
		    uint32_t srqn, uint64_t seed)
{
	struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = srqn, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	fill(buf, LEN, seed);
	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(ini, &wr, &bad);
}

/* The device's counts of what XRC uses, before and after. */
struct counts {
	int qp, srq, xrcd, cq;
};

static struct counts count_objects(void)
{
	return (struct counts){ vrnic_res_count("qp"), vrnic_res_count("srq"),
				vrnic_res_count("xrcd"), vrnic_res_count("cq") };
}

TEST(one_target_serves_the_srqs_of_two_processes)
{
	struct rc_knobs k = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			      .min_rnr_timer = 1 };
	struct counts before = count_objects(), after;
	struct verdict v = { .ok = true }, ov;
	struct hello h = { .path = "/tmp/vrnic-xrcd-XXXXXX" };
	struct ibv_qp_init_attr_ex ia = { 0 };
	struct ibv_qp *tgt = NULL, *ini = NULL;
	struct side s, foreign;
	char foreign_path[] = "/tmp/vrnic-xrcd-XXXXXX";
	struct ibv_ah_attr ah;
	union ibv_gid gid;
	struct answer ans;
	struct ibv_wc wc;
	struct ibv_cq *scq;
	struct ibv_mr *smr;
	uint8_t sbuf[LEN];
	int sv[2], status, gidx, tmp;
	pid_t pid;

	ASSERT_LE(0, before.xrcd) TH_LOG("no xrcd count in res_count");
	tmp = mkstemp(h.path);
	ASSERT_LE(0, tmp);
	close(tmp);
	tmp = mkstemp(foreign_path);
	ASSERT_LE(0, tmp);
	close(tmp);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	/* Forked before any verbs object exists: it inherits nothing. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		other(sv[1]);
	}
	close(sv[1]);

	ASSERT_TRUE(side_open(&s, h.path, O_CREAT, &v)) TH_LOG("%s", v.note);
	gidx = vrnic_wait_ipv4_gid(s.ctx, now() + 30, &gid);
	ASSERT_LE(0, gidx);
	roce_ah_attr(&ah, gid.raw, gidx);
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = s.xrcd;
	tgt = ibv_create_qp_ex(s.ctx, &ia);
	ASSERT_NE(NULL, tgt) TH_LOG("XRC_RECV: %s", strerror(errno));
	scq = ibv_create_cq(s.ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, scq);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = s.pd;
	ia.send_cq = scq;
	ia.cap.max_send_wr = 8;
	ia.cap.max_send_sge = 1;
	ini = ibv_create_qp_ex(s.ctx, &ia);
	ASSERT_NE(NULL, ini) TH_LOG("XRC_SEND: %s", strerror(errno));
	ASSERT_TRUE(qp_to_init(tgt, &v) && qp_to_init(ini, &v) &&
		    qp_to_rts(tgt, &ah, ini->qp_num, 11, 0, &k, &v) &&
		    qp_to_rts(ini, &ah, tgt->qp_num, 0, 11, &k, &v))
		TH_LOG("%s", v.note);
	smr = ibv_reg_mr(s.pd, sbuf, LEN, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, smr);

	h.tgt_qpn = tgt->qp_num;
	h.seed = rand64();
	ASSERT_EQ(sizeof(h), write(sv[0], &h, sizeof(h)));
	ASSERT_EQ(sizeof(ans), read(sv[0], &ans, sizeof(ans)));
	ASSERT_TRUE(ans.ok);

	/* One message to each process's SRQ, through the one target. */
	ASSERT_EQ(0, xrc_send(ini, smr, sbuf, srq_num(s.srq), h.seed));
	ASSERT_EQ(1, wait_wc(scq, &wc, 1, WAIT_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(IBV_WC_SEND, wc.opcode);
	expect_recv(&s, tgt->qp_num, h.seed, &v);
	ASSERT_EQ(0, xrc_send(ini, smr, sbuf, ans.srqn, h.seed + 1));
	ASSERT_EQ(1, wait_wc(scq, &wc, 1, WAIT_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(ans.srqn, wc.wr_id);
	/* Nothing more on the owner's SRQ: that one went to the other's. */
	EXPECT_EQ(0, wait_wc(s.cq, &wc, 1, 200));
	ASSERT_EQ(sizeof(ov), read(sv[0], &ov, sizeof(ov)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(ov.ok) TH_LOG("other process: %s", ov.note);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_TRUE(v.ok) TH_LOG("%s", v.note);

	/* An XRC SRQ of another domain is not the target's to fill. */
	ASSERT_TRUE(side_open(&foreign, foreign_path, O_CREAT, &v))
		TH_LOG("%s", v.note);
	ASSERT_EQ(0, xrc_send(ini, smr, sbuf, srq_num(foreign.srq), h.seed));
	ASSERT_EQ(1, wait_wc(scq, &wc, 1, WAIT_MS));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0, wait_wc(foreign.cq, &wc, 1, 200));

	EXPECT_EQ(0, ibv_destroy_qp(ini));
	EXPECT_EQ(0, ibv_destroy_qp(tgt));
	EXPECT_EQ(0, ibv_dereg_mr(smr));
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	side_close(&foreign);
	side_close(&s);
	close(sv[0]);
	unlink(h.path);
	unlink(foreign_path);
	after = count_objects();
	EXPECT_EQ(before.qp, after.qp);
	EXPECT_EQ(before.srq, after.srq);
	EXPECT_EQ(before.xrcd, after.xrcd);
	EXPECT_EQ(before.cq, after.cq);
}

TEST_HARNESS_MAIN
