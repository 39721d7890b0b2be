#!/bin/bash
# The vrnic device as standard tools see it: `rdma dev`, `ibv_devices`,
# `ibv_devinfo -v`. Expected limits come from VRNIC_EXPECT_<ATTR> (the
# -device vrnic properties the guest was started with); defaults otherwise.
. "$(dirname "$0")/../lib.sh"

declare -A want=(
	[max_qp]=${VRNIC_EXPECT_MAX_QP:-1024}
	[max_cq]=${VRNIC_EXPECT_MAX_CQ:-1024}
	[max_mr]=${VRNIC_EXPECT_MAX_MR:-4096}
	[max_pd]=${VRNIC_EXPECT_MAX_PD:-1024}
	[max_qp_wr]=${VRNIC_EXPECT_MAX_QP_WR:-4096}
	[max_cqe]=${VRNIC_EXPECT_MAX_CQE:-32768}
	[max_srq]=${VRNIC_EXPECT_MAX_SRQ:-256}
	[max_srq_wr]=${VRNIC_EXPECT_MAX_SRQ_WR:-4096}
)

ktap_print_header
ktap_set_plan $((9 + ${#want[@]}))

dev=$(vrnic_ibdev)
check "vrnic ib_device registered ($dev)" test -n "$dev"
rdma dev show >/tmp/rdma-dev 2>&1
sed 's/^/# /' /tmp/rdma-dev
check "rdma dev lists $dev" grep -q ": $dev: node_type ca" /tmp/rdma-dev
rdma link show >/tmp/rdma-link 2>&1
sed 's/^/# /' /tmp/rdma-link
check "rdma link: $dev/1 ACTIVE on $VRNIC_IFACE" \
	grep -qE "link $dev/1 state ACTIVE physical_state LINK_UP netdev $VRNIC_IFACE" /tmp/rdma-link
ibv_devices >/tmp/ibv-devices 2>&1
check "ibv_devices lists $dev (provider loaded)" grep -qw "$dev" /tmp/ibv-devices
ibv_devinfo -v -d "$dev" >/tmp/devinfo 2>&1
field() { awk -v k="$1:" '$1 == k { print $2; exit }' /tmp/devinfo; }
check "ibv_devinfo: port state PORT_ACTIVE" \
	grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo
check "ibv_devinfo: link_layer Ethernet" \
	grep -q 'link_layer:.*Ethernet' /tmp/devinfo
check "ibv_devinfo: vendor_id 0x1234, part 30322" \
	test "$(field vendor_id)" = 0x1234 -a "$(field vendor_part_id)" = 30322
check "ibv_devinfo: RoCE v2 GID of $VRNIC_IP" \
	grep -qE "GID\[ *[0-9]+\]:.*::ffff:$VRNIC_IP, RoCE v2" /tmp/devinfo
for k in "${!want[@]}"; do
	got=$(field "$k")
	if [ "$got" = "${want[$k]}" ]; then
		ktap_test_pass "ibv_devinfo: $k = ${want[$k]}"
	else
		ktap_test_fail "ibv_devinfo: $k = '$got', device advertises ${want[$k]}"
	fi
done
grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo || sed 's/^/# /' /tmp/devinfo
# The port's transport counters (QUERY_PORT_STATS), one per enum entry.
rdma statistic show link "$dev/1" >/tmp/rdma-stat 2>&1
sed 's/^/# /' /tmp/rdma-stat
check "rdma statistic: $dev/1 port counters (tx_pkts .. seq_naks_rcvd)" \
	grep -qE "^link $dev/1 tx_pkts [0-9]+ .* rx_qkey_mismatch [0-9]+ .* seq_naks_rcvd [0-9]+" /tmp/rdma-stat
ktap_finished
