#!/bin/bash
# The RoCEv2 transport between two vrnic guests at the verbs level
# (build/selftests/vrnic/pair_transport, see pair_transport.c): RC, UC and UD
# operations at every size with the payload verified where it lands,
# atomics, SRQ, inline data, 3 SGEs, immediate data, and the IBTA error
# statuses on each side. Three more results: the port's rx_qkey_mismatch
# counter (rdma statistic) moves by exactly the one wrong-Q_Key SEND on the
# responder and stays put on the requester; a 64 MiB RDMA WRITE stream
# (ib_write_bw) crosses the lossless wire with no packet lost or reordered
# (the responder's rx_out_of_seq stays put), the netdev's batching
# included (tools/qemu-patches/); and perftest's SENDs into a short
# receive queue go by end-to-end credits (credit_waits).
# Node 1 is the responder (server), node 0 the requester (client). Extra
# arguments go to the binary (e.g. -t UD: only the cases naming UD).
# Knob: PAIR_TRANSPORT_TIMEOUT (whole binary, default 540 s).
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

bin=$VRNIC_TOP/build/selftests/vrnic/pair_transport
dev=${VRNIC_IBDEV:-vrnic0}
tmo=${PAIR_TRANSPORT_TIMEOUT:-540}
role=requester
[ "$VRNIC_NODE" = 1 ] && role=responder

cases=$("$bin" -l "$@") || ktap_exit_fail_msg "$bin -l failed (make -C selftests?)"
n=$(printf '%s\n' "$cases" | grep -c .)
ktap_print_header
ktap_set_plan $((n + 3))

# Port 1's counter NAME (rdma statistic), or nothing if there is none.
counter() { port_counters "$dev" | awk -v n="$1" '$1 == n { print $2 }'; }

wait_gid 30 || ktap_print_msg "no RoCE v2 IPv4 GID on $dev after 30 s"
before=$(counter rx_qkey_mismatch)
pair_barrier_sh transport-go
# The binary prints the results; this script adds the last one.
timeout -k 5 "$tmo" "$bin" -n "$@"
rc=$?
VRNIC_BARRIER_TIMEOUT=$((tmo + 30)) pair_barrier_sh transport-done
after=$(counter rx_qkey_mismatch)
ktap_print_msg "rdma statistic show link $dev/1 after the run:"
rdma statistic show link "$dev/1" 2>&1 | fold -s -w 120 | sed 's/^/#   /'

want=0
[ "$role" = responder ] && printf '%s\n' "$cases" | grep -q 'wrong Q_Key' && want=1
KTAP_TESTNO=$((n + 1))
if [ -z "$before" ] || [ -z "$after" ]; then
	ktap_test_fail "rx_qkey_mismatch on $dev/1 ($role): no such counter in rdma statistic"
else
	check "rx_qkey_mismatch on $dev/1 ($role): $before -> $after, want +$want" \
		test $((after - before)) = "$want"
fi

# A stream of 1024 64 KiB WRITEs, 65536 packets at path MTU 1024, about 32
# per sendmmsg() and recvmmsg() of the netdevs: on a wire without faults
# every packet arrives once and in order.
oos0=$(counter rx_out_of_seq) pkts0=$(counter rx_pkts)
PAIR_LOG=/tmp/stream.log pair_run stream 120 "ib_write_bw -d $dev -x $(roce_gid_index) -F -s 65536 -n 1024" \
	"ib_write_bw -d $dev -x $(roce_gid_index) -F -s 65536 -n 1024 $VRNIC_PEER_IP"
rc=$?
tail -n 2 /tmp/stream.log | sed 's/^/# /'
oos=$(($(counter rx_out_of_seq) - oos0)) pkts=$(($(counter rx_pkts) - pkts0))
if [ "$role" = responder ]; then
	check "64 MiB WRITE stream ($role, exit $rc): $pkts packets in, $oos out of sequence" \
		test "$rc" = 0 -a "$pkts" -ge 65536 -a "$oos" = 0
else
	check "64 MiB WRITE stream ($role, exit $rc)" test "$rc" = 0
fi
# End-to-end credits under perftest: a stream of SENDs into a receive
# queue of 4 WQEs. The requester holds SENDs back until ACKs give credits
# (credit_waits: its first SEND goes alone, the next ones wait for the
# first ACK). Whether the responder also sends credit updates depends on
# how fast perftest posts receives again; the binary's credit case checks
# them with the order fixed.
cred0=$(counter credit_waits)
PAIR_LOG=/tmp/credits.log pair_run credits 120 "ib_send_bw -d $dev -x $(roce_gid_index) -F -s 65536 -n 500 -r 4 -t 16" \
	"ib_send_bw -d $dev -x $(roce_gid_index) -F -s 65536 -n 500 -r 4 -t 16 $VRNIC_PEER_IP"
crc=$?
tail -n 2 /tmp/credits.log | sed 's/^/# /'
if [ "$role" = requester ]; then
	cred=$(($(counter credit_waits) - ${cred0:-0}))
	check "500 SENDs into 4 receive WQEs ($role, exit $crc): credit_waits +$cred" \
		test -n "$cred0" -a "$crc" = 0 -a "$cred" -gt 0
else
	check "500 SENDs into 4 receive WQEs ($role, exit $crc)" test "$crc" = 0
fi
# The binary's status covers its own results (non-zero: one failed).
[ "$rc" = 0 ] && [ "$KTAP_CNT_FAIL" = 0 ]
