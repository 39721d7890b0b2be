#!/bin/bash
# RDMA between the two guests of a pair with the standard tools, on whatever
# NIC each node has (tools/vm --nic: vrnic, rxe or an interop mix):
# rping (rdma_cm connection + SEND/RDMA READ/RDMA WRITE, data verified by
# rping -V) and ib_write_bw (perftest, RC RDMA WRITE, explicit -n); with
# PAIR_RDMA_MATRIX=1 also ibv_rc_pingpong, ibv_ud_pingpong, perftest READ,
# SEND and atomic bandwidth and WRITE/READ/SEND latency (the interop
# matrix; PAIR_RDMA_LOSSY=1 on a faulty wire skips ibv_ud_pingpong, which
# has no loss recovery, and tells ibv_rc_pingpong's teardown race apart,
# see rc_pingpong_lossy). A vrnic node prints its port counters at the end.
# Node 1 is the server, node 0 the client. Knobs: PAIR_RDMA_TIMEOUT (per
# tool, default 60 s), PAIR_RDMA_RPING_COUNT (10), PAIR_RDMA_BW_ITERS (100).
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

tmo=${PAIR_RDMA_TIMEOUT:-60}
count=${PAIR_RDMA_RPING_COUNT:-10}
iters=${PAIR_RDMA_BW_ITERS:-100}
role=client
[ "$VRNIC_NODE" = 1 ] && role=server

matrix=${PAIR_RDMA_MATRIX:-0}
ktap_print_header
ktap_set_plan $((4 + (matrix ? 8 : 0)))
ktap_print_msg "node $VRNIC_NODE ($role): NIC ${VRNIC_NIC:-?}, $VRNIC_IFACE $VRNIC_IP, RDMA device ${VRNIC_IBDEV:-none}"

dev_ok() {
	[ -n "${VRNIC_IBDEV:-}" ] &&
		ibv_devinfo -d "$VRNIC_IBDEV" | grep -q 'state:.*PORT_ACTIVE' &&
		wait_gid 30
}
check "$VRNIC_IBDEV port active with a RoCE v2 IPv4 GID" dev_ok
gid=$(roce_gid_index) || gid=1
ktap_print_msg "RoCE v2 GID index for $VRNIC_IP: $gid"
ibv_devinfo -v -d "$VRNIC_IBDEV" 2>/dev/null | grep -E 'GID\[' | sed 's/^[[:space:]]*/# /'

# Also resolves the neighbour before rdma_cm needs it, and gives a wire
# capture (tools/vm --pcap) a ping in both directions.
check "ping $VRNIC_PEER_IP via $VRNIC_IFACE" \
	ping -q -c 2 -i 0.5 -w 60 -I "$VRNIC_IFACE" "$VRNIC_PEER_IP"

show() { sed 's/^/# /' "$1" | tail -n "${2:-12}"; }

# -V verifies every ping's data on both sides.
PAIR_LOG=/tmp/rping.log pair_run rping "$tmo" \
	"rping -s -a $VRNIC_IP -C $count -v -V" \
	"rping -c -a $VRNIC_PEER_IP -C $count -v -V"
rc=$?
show /tmp/rping.log 6
n=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
rping_ok() { [ "$rc" = 0 ] && [ "$n" -ge "$count" ]; }
check "rping -C $count -V ($role, exit $rc, $n pings)" rping_ok

PAIR_LOG=/tmp/bw.log pair_run write_bw "$tmo" \
	"ib_write_bw -d $VRNIC_IBDEV -x $gid -n $iters -F" \
	"ib_write_bw -d $VRNIC_IBDEV -x $gid -n $iters -F $VRNIC_PEER_IP"
rc=$?
show /tmp/bw.log 4
bw=$(awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { print $4 }' /tmp/bw.log | tail -n 1)
bw_ok() { [ "$rc" = 0 ] && [ -n "$bw" ]; }
check "ib_write_bw -n $iters ($role, exit $rc, ${bw:-no} MB/s)" bw_ok

# ibv_rc_pingpong on the faulty wire. The tool destroys its QP right after
# its last completion, with no closing handshake: if the ACK of the
# server's final SEND is lost, the client has already gone and the server
# can only retry in vain (vrnic: RETRY_EXC_ERR after retry_cnt 7; rdma_rxe
# takes 7 as "retry forever" and runs into the timeout). The client's exit
# 0 proves every message of both sides arrived, so that outcome is the
# tool's, and is reported as a skip with what each side printed; any other
# result is a pass only if both sides exit 0.
rc_pingpong_lossy() {
	local n=100 rc theirs log=/tmp/rc_pingpong.log
	PAIR_LOG=$log pair_run rc_pingpong "$tmo" "ibv_rc_pingpong -d $d -g $gid -n $n" \
		"ibv_rc_pingpong -d $d -g $gid -n $n $VRNIC_PEER_IP"
	rc=$?
	tail -n 3 "$log" | sed 's/^/# /'
	theirs=$(echo "$rc" | pair_swap rc_pingpong) || theirs=unknown
	if [ "$rc" != 0 ] && [ "$VRNIC_NODE" = 1 ] && [ "$theirs" = 0 ] &&
		! grep "Failed status" "$log" | grep -qv "transport retry counter exceeded"; then
		ktap_test_skip "rc_pingpong ($role, exit $rc): the client finished $n iterations and exited 0, so only the ACK of this side's last SEND was missing; the tool has no closing handshake"
		return
	fi
	check "rc_pingpong ($role, exit $rc; the peer exited ${theirs:-?})" test "$rc" = 0
}

if [ "$matrix" = 1 ]; then
	d=$VRNIC_IBDEV
	if [ "${PAIR_RDMA_LOSSY:-0}" = 1 ]; then
		rc_pingpong_lossy
		ktap_test_skip "ud_pingpong: UD has no recovery, a lost packet stalls it"
	else
		pair_tool rc_pingpong "$tmo" "ibv_rc_pingpong -d $d -g $gid -n 100" "$VRNIC_PEER_IP"
		pair_tool ud_pingpong "$tmo" "ibv_ud_pingpong -d $d -g $gid -n 100" "$VRNIC_PEER_IP"
	fi
	for t in read_bw send_bw atomic_bw write_lat read_lat send_lat; do
		pair_tool "$t" "$tmo" "ib_$t -d $d -x $gid -n 50 -F" "$VRNIC_PEER_IP"
	done
fi
if [ "${VRNIC_NIC:-}" = vrnic ]; then
	rdma statistic show link "$VRNIC_IBDEV/1" | sed 's/^/# counters: /'
fi
ktap_finished
