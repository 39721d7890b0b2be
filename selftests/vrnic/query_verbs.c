// SPDX-License-Identifier: GPL-2.0
/*
 * The vrnic device through the verbs API (libibverbs + libvrnic): device
 * and port attributes match what the device advertises, GIDs are RoCE v2.
 * Expected limits come from VRNIC_EXPECT_<ATTR> like device_attrs.sh.
 */
#include <arpa/inet.h>

#include "kselftest_harness.h"
#include "common.h"

static unsigned long expect(const char *name, unsigned long def)
{
	const char *v = getenv(name);

	return v ? strtoul(v, NULL, 0) : def;
}

FIXTURE(dev) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(dev)
{
	self->ctx = vrnic_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("no vrnic device (provider loaded?)");
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(dev, query_device_ex_limits)
{
	struct ibv_device_attr_ex a = {};

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &a));
	EXPECT_EQ(0x1234, a.orig_attr.vendor_id);
	EXPECT_EQ(0x7672, a.orig_attr.vendor_part_id);
	EXPECT_NE(0, a.orig_attr.node_guid);
	EXPECT_NE(0, a.orig_attr.sys_image_guid);
	EXPECT_EQ(1, a.orig_attr.phys_port_cnt);
	EXPECT_EQ(expect("VRNIC_EXPECT_MAX_QP", 1024), a.orig_attr.max_qp);
	EXPECT_EQ(expect("VRNIC_EXPECT_MAX_CQ", 1024), a.orig_attr.max_cq);
	EXPECT_EQ(expect("VRNIC_EXPECT_MAX_MR", 4096), a.orig_attr.max_mr);
	EXPECT_EQ(expect("VRNIC_EXPECT_MAX_PD", 1024), a.orig_attr.max_pd);
	EXPECT_EQ(expect("VRNIC_EXPECT_MAX_QP_WR", 4096), a.orig_attr.max_qp_wr);
	EXPECT_EQ(expect("VRNIC_EXPECT_MAX_CQE", 32768), a.orig_attr.max_cqe);
}

TEST_F(dev, query_port_roce)
{
	struct ibv_port_attr p = {};

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &p));
	EXPECT_EQ(IBV_PORT_ACTIVE, p.state);
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, p.link_layer);
	EXPECT_EQ(1, p.pkey_tbl_len);
	EXPECT_EQ(expect("VRNIC_EXPECT_GID_TBL_LEN", 16), p.gid_tbl_len);
	EXPECT_EQ(IBV_MTU_1024, p.active_mtu);	/* netdev MTU 1500 */
	EXPECT_NE(0, p.active_speed);
	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &p));	/* one port */
}

TEST_F(dev, ipv4_gid_is_roce_v2)
{
	const char *ip = getenv("VRNIC_IP");
	struct ibv_gid_entry e;
	unsigned char want[16] = { [10] = 0xff, [11] = 0xff };
	int found = 0;

	ASSERT_NE(NULL, ip);
	ASSERT_EQ(1, inet_pton(AF_INET, ip, want + 12));
	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid_ex(self->ctx, 1, i, &e, 0))
			continue;
		if (!memcmp(e.gid.raw, want, 16)) {
			EXPECT_EQ(IBV_GID_TYPE_ROCE_V2, e.gid_type);
			found = 1;
		}
	}
	EXPECT_EQ(1, found) TH_LOG("no GID ::ffff:%s", ip);
}

TEST_HARNESS_MAIN
