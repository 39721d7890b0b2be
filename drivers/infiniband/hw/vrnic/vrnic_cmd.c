// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic admin commands of the RDMA function. Each wrapper builds a zeroed
 * command (so every reserved byte is 0, as the device checks), runs it and
 * decodes the answer.
 */

#include <linux/bitfield.h>
#include <linux/etherdevice.h>
#include <linux/string.h>

#include "vrnic_cmd.h"

static_assert(sizeof(struct vrnic_device_attr) <= VRNIC_CMDQ_RESP_SIZE);
static_assert(sizeof(struct vrnic_gid_entry) <= VRNIC_CMDQ_RESP_SIZE);
static_assert(sizeof(struct vrnic_qp_attr) <= VRNIC_CMDQ_RESP_SIZE);
static_assert(sizeof(struct vrnic_srq_attr) <= VRNIC_CMDQ_RESP_SIZE);

int vrnic_cmd_query_device(struct vrnic_cmdq *cmdq,
			   struct vrnic_cmd_dev_attr *attr)
{
	struct vrnic_device_attr resp;
	union vrnic_aq_cmd cmd;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_DEVICE);
	cmd.query.index = cpu_to_le32(0);
	err = vrnic_cmdq_exec(cmdq, &cmd, &resp, sizeof(resp), NULL);
	if (err)
		return err;

	attr->fw_version = le64_to_cpu(resp.fw_version);
	/* GUIDs are bytes in network order, exactly what __be64 holds. */
	static_assert(sizeof(attr->node_guid) == sizeof(resp.node_guid));
	static_assert(sizeof(attr->sys_image_guid) ==
		      sizeof(resp.sys_image_guid));
	memcpy(&attr->node_guid, resp.node_guid, sizeof(attr->node_guid));
	memcpy(&attr->sys_image_guid, resp.sys_image_guid,
	       sizeof(attr->sys_image_guid));
	attr->max_mr_size = le64_to_cpu(resp.max_mr_size);
	attr->page_size_cap = le64_to_cpu(resp.page_size_cap);
	attr->vendor_id = le32_to_cpu(resp.vendor_id);
	attr->vendor_part_id = le32_to_cpu(resp.vendor_part_id);
	attr->hw_version = le32_to_cpu(resp.hw_version);
	attr->max_qp = le32_to_cpu(resp.max_qp);
	attr->max_qp_wr = le32_to_cpu(resp.max_qp_wr);
	attr->max_sge = le32_to_cpu(resp.max_sge);
	attr->max_cq = le32_to_cpu(resp.max_cq);
	attr->max_cqe = le32_to_cpu(resp.max_cqe);
	attr->max_mr = le32_to_cpu(resp.max_mr);
	attr->max_pd = le32_to_cpu(resp.max_pd);
	attr->max_qp_rd_atom = le32_to_cpu(resp.max_qp_rd_atom);
	attr->max_srq = le32_to_cpu(resp.max_srq);
	attr->max_srq_wr = le32_to_cpu(resp.max_srq_wr);
	attr->max_inline_data = le32_to_cpu(resp.max_inline_data);
	attr->num_comp_vectors = le32_to_cpu(resp.num_comp_vectors);
	attr->device_caps = le32_to_cpu(resp.device_caps);
	return 0;
}

int vrnic_cmd_add_gid(struct vrnic_cmdq *cmdq, u32 index, const u8 *gid,
		      enum vrnic_gid_type type)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ADD_GID);
	cmd.gid.index = cpu_to_le32(index);
	cmd.gid.type = cpu_to_le32(type);
	memcpy(cmd.gid.gid, gid, sizeof(cmd.gid.gid));
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_del_gid(struct vrnic_cmdq *cmdq, u32 index)
{
	union vrnic_aq_cmd cmd;

	/* type and gid stay zero, as DEL_GID requires */
	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_DEL_GID);
	cmd.gid.index = cpu_to_le32(index);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_query_gid(struct vrnic_cmdq *cmdq, u32 index,
			struct vrnic_cmd_gid *entry)
{
	struct vrnic_gid_entry resp;
	union vrnic_aq_cmd cmd;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_GID);
	cmd.query.index = cpu_to_le32(index);
	err = vrnic_cmdq_exec(cmdq, &cmd, &resp, sizeof(resp), NULL);
	if (err)
		return err;

	memcpy(entry->gid, resp.gid, sizeof(entry->gid));
	entry->type = le32_to_cpu(resp.type);
	return 0;
}

/*
 * Object numbers come from the device: never 0 and at most 16 bits (the
 * doorbells carry them in 15:0). Anything else is a device bug; treat the
 * command as failed rather than track an object under a bogus number.
 */
static int vrnic_cmd_objnum(struct vrnic_cmdq *cmdq, u16 opcode, u64 result,
			    u32 *num)
{
	if (!result || result > VRNIC_DB_QN_MASK) {
		dev_err_ratelimited(cmdq->dev, "%s returned bad object number %#llx\n",
				    vrnic_cmdq_opcode_str(opcode), result);
		return -EIO;
	}
	*num = result;
	return 0;
}

static int vrnic_cmd_key(struct vrnic_cmdq *cmdq, u16 opcode, u64 result,
			 u32 *key)
{
	if (result > U32_MAX || !FIELD_GET(VRNIC_KEY_INDEX_MASK, (u32)result)) {
		dev_err_ratelimited(cmdq->dev, "%s returned bad key %#llx\n",
				    vrnic_cmdq_opcode_str(opcode), result);
		return -EIO;
	}
	*key = result;
	return 0;
}

int vrnic_cmd_create_eq(struct vrnic_cmdq *cmdq, dma_addr_t ring,
			u32 log_depth, u32 vector, u32 *eqn)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_CREATE_EQ);
	cmd.create_eq.ring_addr = cpu_to_le64(ring);
	cmd.create_eq.log_depth = cpu_to_le32(log_depth);
	cmd.create_eq.vector = cpu_to_le32(vector);
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_CREATE_EQ, result, eqn);
}

/*
 * DESTROY_EQ, DEALLOC_PD, DEREG_MR, DESTROY_CQ, DESTROY_QP, DESTROY_SRQ,
 * DESTROY_FLOW, DESTROY_RSS, DEALLOC_XRCD
 */
int vrnic_cmd_destroy(struct vrnic_cmdq *cmdq, enum vrnic_aq_opcode op,
		      u32 handle)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, op);
	cmd.destroy.handle = cpu_to_le32(handle);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_alloc_pd(struct vrnic_cmdq *cmdq, u32 uctx, u32 *pdn)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ALLOC_PD);
	cmd.alloc_pd.uctx = cpu_to_le32(uctx);
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_ALLOC_PD, result, pdn);
}

/* ALLOC_XRCD: a domain of no context (processes share it). */
int vrnic_cmd_alloc_xrcd(struct vrnic_cmdq *cmdq, u32 *xrcdn)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ALLOC_XRCD);
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_ALLOC_XRCD, result, xrcdn);
}

int vrnic_cmd_alloc_mw(struct vrnic_cmdq *cmdq, u32 pdn, u8 type,
		       u8 key_byte, u32 *key)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ALLOC_MW);
	cmd.alloc_mw.pdn = cpu_to_le32(pdn);
	cmd.alloc_mw.type = type;
	cmd.alloc_mw.key_byte = key_byte;
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_key(cmdq, VRNIC_AQ_OP_ALLOC_MW, result, key);
}

int vrnic_cmd_alloc_mr(struct vrnic_cmdq *cmdq, u32 pdn, u32 max_pages,
		       u8 key_byte, u32 *key)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ALLOC_MR);
	cmd.alloc_mr.pdn = cpu_to_le32(pdn);
	cmd.alloc_mr.max_pages = cpu_to_le32(max_pages);
	cmd.alloc_mr.key_byte = key_byte;
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_key(cmdq, VRNIC_AQ_OP_ALLOC_MR, result, key);
}

static int vrnic_cmd_mr(struct vrnic_cmdq *cmdq, enum vrnic_aq_opcode op,
			const struct vrnic_cmd_mr_params *p, u32 *key)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, op);
	cmd.reg_mr.handle = cpu_to_le32(p->handle);
	cmd.reg_mr.pdn = cpu_to_le32(p->pdn);
	cmd.reg_mr.access = cpu_to_le32(p->access);
	cmd.reg_mr.flags = cpu_to_le32(p->flags);
	cmd.reg_mr.key_byte = p->key_byte;
	if (p->mem)
		cmd.reg_mr.mem = *p->mem;
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_key(cmdq, op, result, key);
}

int vrnic_cmd_reg_mr(struct vrnic_cmdq *cmdq,
		     const struct vrnic_cmd_mr_params *p, u32 *key)
{
	return vrnic_cmd_mr(cmdq, VRNIC_AQ_OP_REG_MR, p, key);
}

int vrnic_cmd_rereg_mr(struct vrnic_cmdq *cmdq,
		       const struct vrnic_cmd_mr_params *p, u32 *key)
{
	return vrnic_cmd_mr(cmdq, VRNIC_AQ_OP_REREG_MR, p, key);
}

/*
 * QUERY_MR into the caller's coherent buffer @buf (@buf_dma), which must
 * hold sizeof(struct vrnic_mr_attr) + 8 * VRNIC_QUERY_MR_MAX_PAGES bytes.
 * Fills @attr and @pages[0 .. count-1]. On -ETIMEDOUT the buffer must be
 * leaked (vrnic_cmdq_exec_dma()).
 */
int vrnic_cmd_query_mr(struct vrnic_cmdq *cmdq, u32 key, u32 first,
		       u32 count, void *buf, dma_addr_t buf_dma,
		       struct vrnic_cmd_mr_attr *attr, u64 *pages)
{
	size_t len = sizeof(struct vrnic_mr_attr) + count * sizeof(__le64);
	struct vrnic_mr_attr *ma = buf;
	__le64 *pa = buf + sizeof(*ma);
	union vrnic_aq_cmd cmd;
	unsigned int i;
	int err;

	if (WARN_ON_ONCE(count > VRNIC_QUERY_MR_MAX_PAGES))
		return -EINVAL;

	memset(buf, 0, len);
	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_MR);
	cmd.query_mr.key = cpu_to_le32(key);
	cmd.query_mr.first = cpu_to_le32(first);
	cmd.query_mr.count = cpu_to_le32(count);
	err = vrnic_cmdq_exec_dma(cmdq, &cmd, buf_dma, len, NULL);
	if (err)
		return err;

	attr->iova = le64_to_cpu(ma->iova);
	attr->length = le64_to_cpu(ma->length);
	attr->pdn = le32_to_cpu(ma->pdn);
	attr->access = le32_to_cpu(ma->access);
	attr->flags = le32_to_cpu(ma->flags);
	attr->page_shift = le32_to_cpu(ma->page_shift);
	attr->npages = le32_to_cpu(ma->npages);
	attr->levels = le32_to_cpu(ma->levels);
	for (i = 0; i < count; i++)
		pages[i] = le64_to_cpu(pa[i]);
	return 0;
}

/*
 * QUERY_PORT_STATS into the caller's coherent buffer @buf (@buf_dma, a
 * struct vrnic_port_stats); @values gets VRNIC_PORT_STAT_NUM counters. On
 * -ETIMEDOUT the buffer must be leaked (vrnic_cmdq_exec_dma()).
 */
int vrnic_cmd_query_port_stats(struct vrnic_cmdq *cmdq, u32 port,
			       struct vrnic_port_stats *buf,
			       dma_addr_t buf_dma, u64 *values)
{
	union vrnic_aq_cmd cmd;
	unsigned int i;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_PORT_STATS);
	cmd.query.index = cpu_to_le32(port);
	err = vrnic_cmdq_exec_dma(cmdq, &cmd, buf_dma, sizeof(*buf), NULL);
	if (err)
		return err;
	for (i = 0; i < VRNIC_PORT_STAT_NUM; i++)
		values[i] = le64_to_cpu(buf->counter[i]);
	return 0;
}

static void vrnic_cmd_fill_cq(union vrnic_aq_cmd *cmd,
			      const struct vrnic_cmd_cq_params *p)
{
	cmd->create_cq.eqn = cpu_to_le32(p->eqn);
	cmd->create_cq.log_depth = cpu_to_le32(p->log_depth);
	cmd->create_cq.uctx = cpu_to_le32(p->uctx);
	cmd->create_cq.mem = *p->mem;
	cmd->create_cq.flags = cpu_to_le32(p->flags);
}

int vrnic_cmd_create_cq(struct vrnic_cmdq *cmdq,
			const struct vrnic_cmd_cq_params *p, u32 *cqn)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_CREATE_CQ);
	vrnic_cmd_fill_cq(&cmd, p);
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_CREATE_CQ, result, cqn);
}

int vrnic_cmd_resize_cq(struct vrnic_cmdq *cmdq, u32 cqn,
			const struct vrnic_cmd_cq_params *p)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_RESIZE_CQ);
	vrnic_cmd_fill_cq(&cmd, p);
	cmd.create_cq.handle = cpu_to_le32(cqn);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_modify_cq(struct vrnic_cmdq *cmdq, u32 cqn, u16 count,
			u16 period_us)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_MODIFY_CQ);
	cmd.modify_cq.handle = cpu_to_le32(cqn);
	cmd.modify_cq.count = cpu_to_le16(count);
	cmd.modify_cq.period_us = cpu_to_le16(period_us);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_page_fault_done(struct vrnic_cmdq *cmdq, u32 qpn,
			      bool responder, u32 status)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_PAGE_FAULT_DONE);
	cmd.page_fault_done.qpn = cpu_to_le32(qpn);
	cmd.page_fault_done.flags = cpu_to_le32(responder ?
						VRNIC_PF_RESPONDER : 0);
	cmd.page_fault_done.status = cpu_to_le32(status);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_odp_invalidate(struct vrnic_cmdq *cmdq, u32 key, u64 page,
			     u32 npages)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_ODP_INVALIDATE);
	cmd.odp_invalidate.handle = cpu_to_le32(key);
	cmd.odp_invalidate.page = cpu_to_le64(page);
	cmd.odp_invalidate.npages = cpu_to_le32(npages);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_create_qp(struct vrnic_cmdq *cmdq,
			const struct vrnic_cmd_qp_params *p, u32 *qpn)
{
	struct vrnic_aq_create_qp *c;
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_CREATE_QP);
	c = &cmd.create_qp;
	c->type = p->type;
	c->sq_log_depth = p->sq_log_depth;
	c->rq_log_depth = p->rq_log_depth;
	c->sq_wqe_shift = p->sq_wqe_shift;
	c->rq_wqe_shift = p->rq_wqe_shift;
	c->max_send_sge = p->max_send_sge;
	c->max_recv_sge = p->max_recv_sge;
	c->max_inline = cpu_to_le32(p->max_inline);
	c->pdn = cpu_to_le32(p->pdn);
	c->send_cqn = cpu_to_le32(p->send_cqn);
	c->recv_cqn = cpu_to_le32(p->recv_cqn);
	c->srqn = cpu_to_le32(p->srqn);
	c->uctx = cpu_to_le32(p->uctx);
	c->rq_offset = cpu_to_le32(p->rq_offset);
	c->xrcdn = cpu_to_le32(p->xrcdn);
	if (p->mem)
		c->mem = *p->mem;
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_CREATE_QP, result, qpn);
}

int vrnic_cmd_modify_qp(struct vrnic_cmdq *cmdq, u32 qpn, u32 attr_mask,
			const struct vrnic_qp_attr *attr)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_MODIFY_QP);
	cmd.modify_qp.qpn = cpu_to_le32(qpn);
	cmd.modify_qp.attr_mask = cpu_to_le32(attr_mask);
	cmd.modify_qp.attr = *attr;
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_query_qp(struct vrnic_cmdq *cmdq, u32 qpn,
		       struct vrnic_qp_attr *attr)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_QP);
	cmd.query.index = cpu_to_le32(qpn);
	return vrnic_cmdq_exec(cmdq, &cmd, attr, sizeof(*attr), NULL);
}

int vrnic_cmd_create_srq(struct vrnic_cmdq *cmdq,
			 const struct vrnic_cmd_srq_params *p, u32 *srqn)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_CREATE_SRQ);
	cmd.create_srq.pdn = cpu_to_le32(p->pdn);
	cmd.create_srq.uctx = cpu_to_le32(p->uctx);
	cmd.create_srq.limit = cpu_to_le32(p->limit);
	cmd.create_srq.log_depth = p->log_depth;
	cmd.create_srq.wqe_shift = p->wqe_shift;
	cmd.create_srq.max_sge = p->max_sge;
	cmd.create_srq.mem = *p->mem;
	cmd.create_srq.xrcdn = cpu_to_le32(p->xrcdn);
	cmd.create_srq.cqn = cpu_to_le32(p->cqn);
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_CREATE_SRQ, result, srqn);
}

int vrnic_cmd_modify_srq(struct vrnic_cmdq *cmdq, u32 srqn, u32 attr_mask,
			 u32 limit)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_MODIFY_SRQ);
	cmd.create_srq.handle = cpu_to_le32(srqn);
	cmd.create_srq.attr_mask = cpu_to_le32(attr_mask);
	cmd.create_srq.limit = cpu_to_le32(limit);
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

int vrnic_cmd_query_srq(struct vrnic_cmdq *cmdq, u32 srqn,
			struct vrnic_cmd_srq_attr *attr)
{
	struct vrnic_srq_attr resp;
	union vrnic_aq_cmd cmd;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_QUERY_SRQ);
	cmd.query.index = cpu_to_le32(srqn);
	err = vrnic_cmdq_exec(cmdq, &cmd, &resp, sizeof(resp), NULL);
	if (err)
		return err;

	attr->max_wr = le32_to_cpu(resp.max_wr);
	attr->max_sge = le32_to_cpu(resp.max_sge);
	attr->limit = le32_to_cpu(resp.limit);
	return 0;
}

/*
 * ATTACH_MCAST / DETACH_MCAST (op): QP qpn joins or leaves multicast group
 * gid (16 bytes, network order). RoCE has no multicast LIDs.
 */
int vrnic_cmd_mcast(struct vrnic_cmdq *cmdq, enum vrnic_aq_opcode op,
		    u32 qpn, const u8 *gid)
{
	union vrnic_aq_cmd cmd;

	vrnic_cmd_init(&cmd, op);
	cmd.mcast.qpn = cpu_to_le32(qpn);
	memcpy(cmd.mcast.gid, gid, sizeof(cmd.mcast.gid));
	return vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, NULL);
}

/* CREATE_FLOW: a steering rule to raw packet QP qpn; *id = the flow id. */
int vrnic_cmd_create_flow(struct vrnic_cmdq *cmdq,
			  const struct vrnic_cmd_flow_params *p, u32 *id)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_CREATE_FLOW);
	cmd.create_flow.qpn = cpu_to_le32(p->qpn);
	cmd.create_flow.priority = cpu_to_le16(p->priority);
	cmd.create_flow.flags = p->flags;
	cmd.create_flow.value = p->value;
	cmd.create_flow.mask = p->mask;
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	return vrnic_cmd_objnum(cmdq, VRNIC_AQ_OP_CREATE_FLOW, result, id);
}

/* CREATE_RSS: an RSS context over p->qpn; *rssn = its number. */
int vrnic_cmd_create_rss(struct vrnic_cmdq *cmdq,
			 const struct vrnic_cmd_rss_params *p, u32 *rssn)
{
	union vrnic_aq_cmd cmd;
	u64 result;
	u32 i;
	int err;

	vrnic_cmd_init(&cmd, VRNIC_AQ_OP_CREATE_RSS);
	cmd.create_rss.uctx = cpu_to_le32(p->uctx);
	cmd.create_rss.fields = cpu_to_le16(p->fields);
	cmd.create_rss.log_size = p->log_size;
	memcpy(cmd.create_rss.key, p->key, sizeof(cmd.create_rss.key));
	for (i = 0; i < (1U << p->log_size); i++)
		cmd.create_rss.qpn[i] = cpu_to_le32(p->qpn[i]);
	err = vrnic_cmdq_exec(cmdq, &cmd, NULL, 0, &result);
	if (err)
		return err;
	if (result < VRNIC_RSS_NUM_BASE ||
	    result >= VRNIC_RSS_NUM_BASE + VRNIC_RSS_MAX) {
		dev_err_ratelimited(cmdq->dev,
				    "CREATE_RSS returned bad number %#llx\n",
				    result);
		return -EIO;
	}
	*rssn = result;
	return 0;
}
