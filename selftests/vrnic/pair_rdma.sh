#!/bin/bash
# RDMA between the two guests of a pair with the standard tools, on whatever
# NIC each node has (tools/vm --nic: vrnic, rxe or an interop mix):
# rping (rdma_cm connection + SEND/RDMA READ/RDMA WRITE, data verified by
# rping -V) and ib_write_bw (perftest, RC RDMA WRITE, explicit -n); with
# PAIR_RDMA_MATRIX=1 also ibv_rc_pingpong, ibv_ud_pingpong, perftest READ,
# SEND and atomic bandwidth and WRITE/READ/SEND/atomic latency (the interop
# matrix; with PAIR_RDMA_EVENTS=1 also SEND bandwidth and latency with CQ
# events, perftest -e: vrnic pairs only, see below; PAIR_RDMA_LOSSY=1 on a faulty wire tells ibv_rc_pingpong's
# teardown race apart, see rc_pingpong_lossy, and has the vrnic node switch
# its injector to faults UD survives for ibv_ud_pingpong, which needs
# tools/vm --qmp, see ud_pingpong_lossy). A vrnic node prints its port
# counters at the end.
# With tools/vm --mtu (VRNIC_MTU) the port's active MTU and the one perftest
# connects with must be the largest IB MTU that netdev MTU holds.
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
lossy=${PAIR_RDMA_LOSSY:-0}
events=${PAIR_RDMA_EVENTS:-0}
# The vrnic node of a lossy matrix also checks its run-time fault change.
qom=0
[ "$matrix" = 1 ] && [ "$lossy" = 1 ] && [ "${VRNIC_NIC:-}" = vrnic ] && qom=1
ktap_print_header
ktap_set_plan $((4 + (matrix ? 9 + (events ? 2 : 0) : 0) + (qom ? 3 : 0) + (${VRNIC_MTU:+1} + 0)))
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

if [ -n "${VRNIC_MTU:-}" ]; then
	# ib_core's rule (iboe_get_mtu): the netdev MTU less GRH, UDP, BTH,
	# the largest extension headers and the ICRC (96 bytes).
	want=256
	for m in 512 1024 2048 4096; do
		[ $((VRNIC_MTU - 96)) -ge "$m" ] && want=$m
	done
	port=$(ibv_devinfo -d "$VRNIC_IBDEV" | awk '/active_mtu:/ { print $2 }')
	used=$(awk '/^ *Mtu *:/ { sub(/\[B\].*/, "", $3); print $3 }' /tmp/bw.log | head -n 1)
	mtu_ok() { [ "$port" = "$want" ] && [ "$used" = "$want" ]; }
	check "netdev MTU $VRNIC_MTU: active_mtu ${port:-?}, ib_write_bw used ${used:-?}, want $want" mtu_ok
fi

# ibv_rc_pingpong on the faulty wire. The tool destroys its QP right after
# its last completion, with no closing handshake: if the ACK of one side's
# final SEND is lost, the other side has already gone and the first can
# only retry in vain (vrnic: RETRY_EXC_ERR after retry_cnt 7; rdma_rxe
# takes 7 as "retry forever" and runs into the timeout). Either side can
# be the one: both send to the end. The peer's exit 0 proves every
# message of both sides arrived, so that outcome is the tool's, and is
# reported as a skip with what each side printed; any other result is a
# pass only if both sides exit 0.
rc_pingpong_lossy() {
	local n=100 rc theirs log=/tmp/rc_pingpong.log
	PAIR_LOG=$log pair_run rc_pingpong "$tmo" "ibv_rc_pingpong -d $d -g $gid -n $n" \
		"ibv_rc_pingpong -d $d -g $gid -n $n $VRNIC_PEER_IP"
	rc=$?
	tail -n 3 "$log" | sed 's/^/# /'
	theirs=$(echo "$rc" | pair_swap rc_pingpong) || theirs=unknown
	if [ "$rc" != 0 ] && [ "$theirs" = 0 ] &&
		! grep "Failed status" "$log" | grep -qv "transport retry counter exceeded"; then
		ktap_test_skip "rc_pingpong ($role, exit $rc): the peer finished $n iterations and exited 0, so only the ACK of this side's last SEND was missing; the tool has no closing handshake"
		return
	fi
	check "rc_pingpong ($role, exit $rc; the peer exited ${theirs:-?})" test "$rc" = 0
}

# ibv_ud_pingpong on the faulty wire. UD has no recovery and the tool waits
# forever for a datagram the wire lost. A duplicate can stall it too: it
# sends its next message once a receive and its own send have completed,
# so a second receive inside that window is lost to its count. For this
# one tool the vrnic node changes its injector while the guest runs
# (tools/vm --qmp: QMP qom-set on its own device): no drops, corruptions or
# duplicates; 10% of the frames reordered (held until later frames pass,
# at most 1 ms) and every frame delayed 200 us. Its counters must show that
# the change took effect. Afterwards it puts the old rates back and checks
# that a value out of range is refused and changes nothing.
ud_qom_rates="drop-ppm=0 corrupt-ppm=0 dup-ppm=0 reorder-ppm=100000 delay-us=200"
ud_pingpong_lossy() {
	local kv k val reply saved=() cmds=()
	local -A before after
	if [ "$qom" = 1 ]; then
		for kv in $ud_qom_rates; do
			# No relay (tools/vm without --qmp): one wait is enough.
			reply=$(vrnic_qom "get fault-${kv%%=*}") || break
			saved+=("set fault-${kv%%=*} ${reply#ok }")
			cmds+=("set fault-${kv%%=*} ${kv#*=}")
		done
		reply=$(vrnic_qom "${cmds[@]}")
		ktap_print_msg "qom replies: ${reply//$'\n'/; }"
		check "qom-set at run time: $ud_qom_rates (were: ${saved[*]#set fault-})" \
			test "${#saved[@]}" = 5 -a "$(grep -c '^ok$' <<<"$reply")" = 5
		while read -r k val; do before[$k]=$val; done < <(port_counters "$VRNIC_IBDEV")
	fi
	pair_tool ud_pingpong "$tmo" "ibv_ud_pingpong -d $d -g $gid -n 100" "$VRNIC_PEER_IP"
	[ "$qom" = 1 ] || return 0
	while read -r k val; do after[$k]=$val; done < <(port_counters "$VRNIC_IBDEV")
	local -A n
	for k in fault_drops fault_corrupts fault_dups fault_reorders fault_delays; do
		n[$k]=$((${after[$k]:-0} - ${before[$k]:-0}))
	done
	check "the injector during ud_pingpong: drops +${n[fault_drops]}, corrupts +${n[fault_corrupts]}, dups +${n[fault_dups]} (want 0), reorders +${n[fault_reorders]}, delays +${n[fault_delays]} (want > 0)" \
		test $((n[fault_drops] + n[fault_corrupts] + n[fault_dups])) = 0 \
		-a "${n[fault_reorders]}" -gt 0 -a "${n[fault_delays]}" -gt 0
	# Put the matrix's rates back; then a refused value must change nothing.
	reply=$(vrnic_qom "${saved[@]}" "set fault-drop-ppm 1000001")
	ktap_print_msg "qom replies: ${reply//$'\n'/; }"
	local now=() want=() name
	for kv in "${saved[@]}"; do
		name=${kv#set }
		now+=("$(vrnic_qom "get ${name% *}" | sed 's/^ok //')")
		want+=("${kv##* }")
	done
	check "rates restored (${now[*]}); fault-drop-ppm 1000001 refused" \
		test "$(grep -c '^ok$' <<<"$reply")" = 5 -a \
		"$(grep -c '^error.*must be 0\.\.1000000' <<<"$reply")" = 1 -a \
		"${now[*]}" = "${want[*]}"
}
if [ "$matrix" = 1 ]; then
	d=$VRNIC_IBDEV
	if [ "$lossy" = 1 ]; then
		rc_pingpong_lossy
		ud_pingpong_lossy
	else
		pair_tool rc_pingpong "$tmo" "ibv_rc_pingpong -d $d -g $gid -n 100" "$VRNIC_PEER_IP"
		pair_tool ud_pingpong "$tmo" "ibv_ud_pingpong -d $d -g $gid -n 100" "$VRNIC_PEER_IP"
	fi
	for t in read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat; do
		pair_tool "$t" "$tmo" "ib_$t -d $d -x $gid -n 50 -F" "$VRNIC_PEER_IP"
	done
	# Completions through CQ events (perftest has -e for SEND only). Not in
	# the vrnic/rdma_rxe mix: ib_send_lat -e hangs there in about one run
	# in six, with every message ACKed on the vrnic side (open).
	if [ "$events" = 1 ]; then
		for t in send_bw send_lat; do
			pair_tool "$t-e" "$tmo" "ib_$t -d $d -x $gid -n 50 -F -e" "$VRNIC_PEER_IP"
		done
	fi
fi
if [ "${VRNIC_NIC:-}" = vrnic ]; then
	rdma statistic show link "$VRNIC_IBDEV/1" | sed 's/^/# counters: /'
fi
ktap_finished
