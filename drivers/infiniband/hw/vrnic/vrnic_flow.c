// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrnic flow steering (VRNIC_DEVICE_CAP_RAW_PACKET): the rules of
 * ibv_create_flow, which steer received Ethernet frames to a raw packet QP
 * or drop them. create_flow turns the ib_flow_spec list into one device
 * flow key - a value and a mask in network byte order (uapi "Flow
 * steering") - and refuses what the device cannot match; the rule itself
 * lives in the device (CREATE_FLOW / DESTROY_FLOW). ib_uverbs requires
 * CAP_NET_RAW, checks the port, and holds the QP while a rule points at it.
 */

#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/slab.h>
#include <net/ipv6.h>

#include "vrnic.h"

/*
 * Add @len bytes of a spec (@val under @mask) to the key field at @kval /
 * @kmask. Only value bits under the mask are kept: the device refuses any
 * other. A bit an earlier spec matches already must have the same value.
 */
static int vrnic_flow_match(void *kval, void *kmask, const void *val,
			    const void *mask, size_t len)
{
	const u8 *v = val, *m = mask;
	u8 *kv = kval, *km = kmask;
	size_t i;

	for (i = 0; i < len; i++) {
		if ((kv[i] ^ v[i]) & km[i] & m[i])
			return -EINVAL;
		kv[i] |= v[i] & m[i];
		km[i] |= m[i];
	}
	return 0;
}

/* One field of struct vrnic_flow_key from a value and mask of its size. */
#define vrnic_flow_field(p, field, fval, fmask)				\
	({								\
		BUILD_BUG_ON(sizeof(*(fval)) != sizeof((p)->value.field)); \
		vrnic_flow_match(&(p)->value.field, &(p)->mask.field,	\
				 fval, fmask, sizeof((p)->value.field)); \
	})

/* The EtherType an IP spec implies, fully matched. */
static int vrnic_flow_ethertype(struct vrnic_cmd_flow_params *p, u16 type)
{
	__be16 val = htons(type), mask = htons(0xffff);

	return vrnic_flow_field(p, ethertype, &val, &mask);
}

/* The IP protocol a TCP or UDP spec implies, fully matched. */
static int vrnic_flow_ip_proto(struct vrnic_cmd_flow_params *p, u8 proto)
{
	u8 mask = 0xff;

	return vrnic_flow_field(p, ip_proto, &proto, &mask);
}

static int vrnic_flow_eth(struct vrnic_cmd_flow_params *p,
			  const struct ib_flow_spec_eth *s)
{
	return vrnic_flow_field(p, dmac, &s->val.dst_mac, &s->mask.dst_mac) ?:
	       vrnic_flow_field(p, smac, &s->val.src_mac, &s->mask.src_mac) ?:
	       vrnic_flow_field(p, ethertype, &s->val.ether_type,
				&s->mask.ether_type) ?:
	       vrnic_flow_field(p, vlan_tci, &s->val.vlan_tag,
				&s->mask.vlan_tag);
}

/* An IPv4 address is keyed as ::ffff:a.b.c.d, its prefix always matched. */
static void vrnic_flow_v4mapped(__be32 val, __be32 mask,
				struct in6_addr *kval, struct in6_addr *kmask)
{
	ipv6_addr_set_v4mapped(val, kval);
	ipv6_addr_set(kmask, htonl(~0U), htonl(~0U), htonl(~0U), mask);
}

static int vrnic_flow_ipv4(struct vrnic_cmd_flow_params *p,
			   const struct ib_flow_spec_ipv4 *s)
{
	struct in6_addr src, src_mask, dst, dst_mask;

	if (s->mask.tos || s->mask.ttl || s->mask.flags)
		return -EOPNOTSUPP;
	vrnic_flow_v4mapped(s->val.src_ip, s->mask.src_ip, &src, &src_mask);
	vrnic_flow_v4mapped(s->val.dst_ip, s->mask.dst_ip, &dst, &dst_mask);
	return vrnic_flow_ethertype(p, ETH_P_IP) ?:
	       vrnic_flow_field(p, src_ip, &src.s6_addr, &src_mask.s6_addr) ?:
	       vrnic_flow_field(p, dst_ip, &dst.s6_addr, &dst_mask.s6_addr) ?:
	       vrnic_flow_field(p, ip_proto, &s->val.proto, &s->mask.proto);
}

static int vrnic_flow_ipv6(struct vrnic_cmd_flow_params *p,
			   const struct ib_flow_spec_ipv6 *s)
{
	if (s->mask.flow_label || s->mask.traffic_class || s->mask.hop_limit)
		return -EOPNOTSUPP;
	return vrnic_flow_ethertype(p, ETH_P_IPV6) ?:
	       vrnic_flow_field(p, src_ip, &s->val.src_ip, &s->mask.src_ip) ?:
	       vrnic_flow_field(p, dst_ip, &s->val.dst_ip, &s->mask.dst_ip) ?:
	       vrnic_flow_field(p, ip_proto, &s->val.next_hdr,
				&s->mask.next_hdr);
}

static int vrnic_flow_l4(struct vrnic_cmd_flow_params *p,
			 const struct ib_flow_spec_tcp_udp *s, u8 proto)
{
	return vrnic_flow_ip_proto(p, proto) ?:
	       vrnic_flow_field(p, src_port, &s->val.src_port,
				&s->mask.src_port) ?:
	       vrnic_flow_field(p, dst_port, &s->val.dst_port,
				&s->mask.dst_port);
}

/* The size a spec of @type must at least have; 0: not supported. */
static size_t vrnic_flow_spec_size(u32 type)
{
	switch (type) {
	case IB_FLOW_SPEC_ETH:
		return sizeof(struct ib_flow_spec_eth);
	case IB_FLOW_SPEC_IPV4:
		return sizeof(struct ib_flow_spec_ipv4);
	case IB_FLOW_SPEC_IPV6:
		return sizeof(struct ib_flow_spec_ipv6);
	case IB_FLOW_SPEC_TCP:
	case IB_FLOW_SPEC_UDP:
		return sizeof(struct ib_flow_spec_tcp_udp);
	case IB_FLOW_SPEC_ACTION_DROP:
		return sizeof(struct ib_flow_spec_action_drop);
	default:
		return 0;
	}
}

static int vrnic_flow_add_spec(struct vrnic_cmd_flow_params *p,
			       const union ib_flow_spec *s)
{
	switch (s->type) {
	case IB_FLOW_SPEC_ETH:
		return vrnic_flow_eth(p, &s->eth);
	case IB_FLOW_SPEC_IPV4:
		return vrnic_flow_ipv4(p, &s->ipv4);
	case IB_FLOW_SPEC_IPV6:
		return vrnic_flow_ipv6(p, &s->ipv6);
	case IB_FLOW_SPEC_TCP:
		return vrnic_flow_l4(p, &s->tcp_udp, IPPROTO_TCP);
	case IB_FLOW_SPEC_UDP:
		return vrnic_flow_l4(p, &s->tcp_udp, IPPROTO_UDP);
	case IB_FLOW_SPEC_ACTION_DROP:
		p->flags |= VRNIC_FLOW_F_DROP;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * The specs follow the attribute, each @size bytes long, all within
 * attr->size: no spec is read past it, whatever the counts say.
 */
static int vrnic_flow_parse(struct vrnic_cmd_flow_params *p,
			    const struct ib_flow_attr *attr)
{
	const u8 *pos = (const u8 *)(attr + 1);
	const u8 *end = (const u8 *)attr + attr->size;
	unsigned int i;
	int err;

	if (attr->size < sizeof(*attr))
		return -EINVAL;
	for (i = 0; i < attr->num_of_specs; i++) {
		const union ib_flow_spec *s = (const void *)pos;
		size_t need;

		if (end - pos < offsetofend(union ib_flow_spec, size))
			return -EINVAL;
		need = vrnic_flow_spec_size(s->type);
		if (!need)
			return -EOPNOTSUPP;
		if (s->size < need || s->size > end - pos)
			return -EINVAL;
		err = vrnic_flow_add_spec(p, s);
		if (err)
			return err;
		pos += s->size;
	}
	return 0;
}

struct ib_flow *vrnic_create_flow(struct ib_qp *ibqp,
				  struct ib_flow_attr *attr,
				  struct ib_udata *udata)
{
	struct vrnic_dev *vdev = to_vdev(ibqp->device);
	struct vrnic_cmd_flow_params p = {};
	struct vrnic_flow *flow;
	int err;

	err = vrnic_udata_no_in(&vdev->ibdev, udata, "create_flow");
	if (err)
		return ERR_PTR(err);
	if (ibqp->qp_type != IB_QPT_RAW_PACKET ||
	    attr->type != IB_FLOW_ATTR_NORMAL || attr->flags ||
	    attr->port != VRNIC_PORT_NUM) {
		ibdev_dbg(&vdev->ibdev,
			  "create_flow: QP type %d, rule type %d, flags %#x, port %u not supported\n",
			  ibqp->qp_type, attr->type, attr->flags, attr->port);
		return ERR_PTR(-EOPNOTSUPP);
	}
	err = vrnic_flow_parse(&p, attr);
	if (err) {
		ibdev_dbg(&vdev->ibdev, "create_flow: specs refused (%d)\n",
			  err);
		return ERR_PTR(err);
	}
	p.qpn = to_vqp(ibqp)->qpn;
	p.priority = attr->priority;

	flow = kzalloc(sizeof(*flow), GFP_KERNEL);
	if (!flow)
		return ERR_PTR(-ENOMEM);
	err = vrnic_cmd_create_flow(vdev->cmdq, &p, &flow->id);
	if (err) {
		kfree(flow);
		return ERR_PTR(err);
	}
	/* ib_uverbs sets qp, device and uobject of the returned ib_flow. */
	return &flow->ibflow;
}

int vrnic_destroy_flow(struct ib_flow *ibflow)
{
	struct vrnic_dev *vdev = to_vdev(ibflow->device);
	struct vrnic_flow *flow = to_vflow(ibflow);
	int err;

	err = vrnic_cmd_destroy(vdev->cmdq, VRNIC_AQ_OP_DESTROY_FLOW,
				flow->id);
	if (err)
		ibdev_warn_ratelimited(&vdev->ibdev,
				       "DESTROY_FLOW %u failed (%d)\n",
				       flow->id, err);
	kfree(flow);
	return 0;
}
