/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The scaffolding of the small pair tests (tools/vm -n 2: pair_dmabuf,
 * pair_odp): the device, PD and GID; the control connection's one message
 * (ctl.h carries it); meeting points; an RC QP connected to the peer's;
 * and the one TAP result both sides print, each side's reasons as
 * comments. Node 1 is the responder (server), node 0 the requester.
 */
#ifndef VRNIC_SELFTEST_PAIR_H
#define VRNIC_SELFTEST_PAIR_H

#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>

#include "kselftest.h"
#include "common.h"
#include "ctl.h"
#include "verdict.h"
#include "qp.h"

/* Every control message (both guests are x86-64: no byte swapping). */
struct pair_msg {
	uint32_t ok;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t seed;
	uint64_t addr;
	uint8_t gid[16];
	char note[VERDICT_NOTE_LEN];
};

struct pair_ctx {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	int gid_index;
	union ibv_gid gid;
	struct in_addr peer_ip;
	bool server;		/* node 1: the responder */
	int sock;		/* the control connection, -1 once lost */
};

static inline bool pair_xchg(struct pair_ctx *c, struct pair_msg *out,
			     struct pair_msg *in)
{
	return ctl_io(&c->sock, out, sizeof(*out), true) &&
	       ctl_io(&c->sock, in, sizeof(*in), false);
}

/* A meeting point: true when both sides are still fine. */
static inline bool pair_step(struct pair_ctx *c, struct verdict *v)
{
	struct pair_msg out = { .ok = v->ok }, in;

	if (!pair_xchg(c, &out, &in)) {
		fail(v, "control connection lost");
		return false;
	}
	return v->ok && in.ok;
}

/* Byte k of the data with this seed. */
static inline uint8_t pair_pat(uint64_t seed, size_t k)
{
	return (uint8_t)(mix(seed + k / 8) >> (k % 8 * 8));
}

/*
 * A CQ and an RC QP on it, connected to the peer's: swaps *me (rkey, seed
 * and addr set by the caller, or a setup failure in v) for *peer, then
 * INIT -> RTS and a meeting point. With send_ops (IBV_QP_EX_WITH_*) the
 * QP is an extended one with those builders. False when either side
 * failed.
 */
static inline bool pair_qp_ex(struct pair_ctx *c, struct ibv_cq **cq,
			      struct ibv_qp **qp, struct pair_msg *me,
			      struct pair_msg *peer, uint64_t send_ops,
			      struct verdict *v)
{
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     (send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.pd = c->pd,
		.send_ops_flags = send_ops,
	};
	const struct rc_knobs k = { .timeout = 18, .retry_cnt = 7,
				    .rnr_retry = 7, .min_rnr_timer = 12 };
	struct ibv_ah_attr ah;

	*cq = ibv_create_cq(c->dev, 16, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = *cq;
	*qp = v->ok && *cq ? ibv_create_qp_ex(c->dev, &ia) : NULL;
	if (v->ok && !*qp)
		fail(v, "ibv_create_cq/ibv_create_qp: %s", strerror(errno));
	else if (v->ok)
		qp_to_init(*qp, v);
	me->ok = v->ok;
	if (v->ok) {
		me->qpn = (*qp)->qp_num;
		me->psn = c->server ? 300 : 400;
		memcpy(me->gid, c->gid.raw, 16);
	}
	if (!pair_xchg(c, me, peer)) {
		fail(v, "control connection lost");
		return false;
	}
	if (!v->ok || !peer->ok) {
		if (v->ok)
			fail(v, "the peer's setup failed");
		return false;
	}
	roce_ah_attr(&ah, peer->gid, c->gid_index);
	qp_to_rts(*qp, &ah, peer->qpn, peer->psn, me->psn, &k, v);
	return pair_step(c, v);
}

static inline bool pair_qp(struct pair_ctx *c, struct ibv_cq **cq,
			   struct ibv_qp **qp, struct pair_msg *me,
			   struct pair_msg *peer, struct verdict *v)
{
	return pair_qp_ex(c, cq, qp, me, peer, 0, v);
}

/*
 * The one TAP line of a case, this side's (server: the responder's) and
 * the peer's reasons above it; got: the peer's verdict arrived.
 */
static inline void pair_report(bool server, const char *name,
			       const struct verdict *v, bool got, bool peer_ok,
			       const char *peer_note)
{
	if (v->note[0])
		ksft_print_msg("%s: %s\n", server ? "responder" : "requester",
			       v->note);
	if (!got)
		ksft_print_msg("no verdict from the peer\n");
	else if (peer_note[0])
		ksft_print_msg("%s: %s\n", server ? "requester" : "responder",
			       peer_note);
	ksft_test_result(v->ok && got && peer_ok, "%s\n", name);
}

/* Both sides print one result with both sides' reasons. */
static inline void pair_finish(struct pair_ctx *c, const char *name,
			       struct verdict *v)
{
	struct pair_msg me = { .ok = v->ok }, peer = { 0 };
	bool got;

	snprintf(me.note, sizeof(me.note), "%s", v->note);
	got = pair_xchg(c, &me, &peer);
	peer.note[sizeof(peer.note) - 1] = 0;
	pair_report(c->server, name, v, got, peer.ok, peer.note);
}

/*
 * The device, a PD and the port's RoCEv2 IPv4 GID, then the control
 * connection on port; both sides must give the same fingerprint fp of
 * what they will run. False (with the reason printed) when any of it
 * failed.
 */
static inline bool pair_setup(struct pair_ctx *c, int port, uint64_t fp)
{
	const char *peer = getenv("VRNIC_PEER_IP"), *node = getenv("VRNIC_NODE");
	struct pair_msg me = { .seed = fp }, in;

	c->sock = -1;
	c->server = node && !strcmp(node, "1");
	ksft_print_msg("node %s: %s\n", node ? node : "?",
		       c->server ? "responder (server)" : "requester (client)");
	if (!peer || inet_pton(AF_INET, peer, &c->peer_ip) != 1) {
		ksft_print_msg("VRNIC_PEER_IP not set: run in a tools/vm -n 2 guest\n");
		return false;
	}
	c->dev = vrnic_open();
	c->pd = c->dev ? ibv_alloc_pd(c->dev) : NULL;
	if (!c->pd) {
		ksft_print_msg("no RDMA device or no PD\n");
		return false;
	}
	c->gid_index = vrnic_wait_ipv4_gid(c->dev, now() + 30, &c->gid);
	if (c->gid_index < 0) {
		ksft_print_msg("no RoCEv2 IPv4 GID on port 1\n");
		return false;
	}
	if (!ctl_connect(&c->sock, c->server, c->peer_ip, port, "no requester"))
		return false;
	if (pair_xchg(c, &me, &in) && in.seed != fp)
		ctl_lost(&c->sock, "the peer runs another list of cases");
	return c->sock >= 0;
}

#endif
