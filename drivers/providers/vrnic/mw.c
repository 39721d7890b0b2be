// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libvrnic memory windows: allocation through the kernel, type 1 binds
 * (ibv_bind_mw) as a BIND_MW send WQE on the caller's QP, like the type 2
 * binds and local invalidations that applications post themselves
 * (qp.c). The device executes the bind when the SQ reaches it and checks
 * the window, the MR and the rights then.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs.h"

struct ibv_mw *vrnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		verbs_debug(verbs_get_ctx(pd->context),
			    "alloc_mw type %d failed: %d\n", type, err);
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

int vrnic_dealloc_mw(struct ibv_mw *mw)
{
	int err;

	err = ibv_cmd_dealloc_mw(mw);
	if (err)
		return err;
	free(mw);
	return 0;
}

/*
 * Type 1 only (type 2 windows are bound with IBV_WR_BIND_MW). The window
 * gets the next key byte; mw->rkey changes when the bind is posted, as
 * verbs specifies: if the bind completes in error the consumer must not
 * use it.
 */
int vrnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	struct ibv_send_wr *bad_wr;
	int err;

	/* The device checks the PDs (a QP's may be a parent domain). */
	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	err = vrnic_post_send(qp, &wr, &bad_wr);
	if (err)
		return err;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
