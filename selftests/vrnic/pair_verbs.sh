#!/bin/bash
# RDMA traffic between two vrnic guests with standard tools that move data
# over the wire today: the libibverbs pingpongs (RC, UC, UD, SRQ), rping
# (rdma_cm over the GSI QP, SEND/READ/WRITE, data verified with -V) and the
# perftest bandwidth (WRITE, READ, SEND, atomic) and latency (WRITE, READ,
# SEND) tests, always with an explicit -n.
# Node 1 is the server, node 0 the client.
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

tmo=${PAIR_VERBS_TIMEOUT:-60}
dev=${VRNIC_IBDEV:-vrnic0}
role=client
[ "$VRNIC_NODE" = 1 ] && role=server

ktap_print_header
ktap_set_plan 12
wait_gid 30
gid=$(roce_gid_index) || gid=1
ping -q -c 2 -w 60 -I "$VRNIC_IFACE" "$VRNIC_PEER_IP" >/dev/null

# tool NAME SERVER_CMD CLIENT_ARGS: one TAP result per tool.
tool() {
	local name=$1 srv=$2 cli=$3 rc
	PAIR_LOG=/tmp/$name.log pair_run "$name" "$tmo" "$srv" "$srv $cli"
	rc=$?
	tail -n 3 "/tmp/$name.log" | sed 's/^/# /'
	check "$name ($role, exit $rc)" test "$rc" = 0
}

tool rc_pingpong "ibv_rc_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
tool uc_pingpong "ibv_uc_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
tool ud_pingpong "ibv_ud_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
tool srq_pingpong "ibv_srq_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
PAIR_LOG=/tmp/rping.log pair_run rping "$tmo" "rping -s -a $VRNIC_IP -C 10 -v -V" \
	"rping -c -a $VRNIC_PEER_IP -C 10 -v -V"
rc=$?
n=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
check "rping -C 10 -V ($role, exit $rc, $n pings)" test "$rc" = 0 -a "$n" -ge 10
tool write_bw "ib_write_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool read_bw "ib_read_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool send_bw "ib_send_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool atomic_bw "ib_atomic_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool write_lat "ib_write_lat -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool read_lat "ib_read_lat -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool send_lat "ib_send_lat -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
ktap_finished
