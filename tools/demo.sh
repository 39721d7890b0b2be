#!/usr/bin/env bash
# make demo: boot two guests joined by a private wire through their vrnic
# ports and show, step by step: the RoCE ib_device each guest sees and its
# RoCEv2 GIDs, Ethernet traffic through vrnic (ping), then RDMA between the
# guests with the standard tools: rping (an rdma_cm connection, SEND, RDMA
# READ and RDMA WRITE, data verified) and ib_write_bw (one-sided RDMA
# WRITEs into the other guest's memory).
#
# usage: tools/demo.sh [--nic LIST] [--pcap FILE]
#   --nic LIST   as tools/vm --nic (default vrnic; 'rxe' runs the same demo
#                on the kernel's soft-RoCE over virtio-net, for comparison;
#                'vrnic,rxe' talks vrnic to rxe)
#   --pcap FILE  also record the wire (open it with wireshark or
#                tshark -r FILE -Y infiniband)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VRNIC_TOP"
nic=vrnic vmopts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--nic) nic=$2; vmopts+=(--nic "$2"); shift 2 ;;
	--pcap) vmopts+=(--pcap "$2"); shift 2 ;;
	-h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) die "demo: unknown option $1" "tools/demo.sh --help" ;;
	esac
done

# Runs in both guests; node 0 is the client, node 1 the server.
read -r -d '' guest <<'EOF' || true
. selftests/rdma_lib.sh
hr() { printf '\n=== %s\n' "$*"; }
role=client; [ "$VRNIC_NODE" = 1 ] && role=server
dev=${VRNIC_IBDEV:-}
hr "guest $VRNIC_NODE ($role): NIC $VRNIC_NIC, net_device $VRNIC_IFACE $VRNIC_IP, RDMA device ${dev:-NONE}"
rdma link show
[ -n "$dev" ] || { echo "no RDMA device: nothing more to show"; exit 1; }
ibv_devinfo -d "$dev" | grep -E "hca_id|vendor_id|state|link_layer|active_mtu"
echo "RoCEv2 GIDs (the addresses RDMA peers use; the ::ffff: one is IPv4):"
ibv_devinfo -v -d "$dev" | grep -E "GID\["
wait_gid 30 && gid=$(roce_gid_index) || gid=1

hr "1. Ethernet: ping the other guest through $VRNIC_IFACE"
ping -c 3 -w 60 "$VRNIC_PEER_IP" | tail -n 2

hr "2. rping: RDMA connection + SEND / RDMA READ / RDMA WRITE, 5 round trips"
if [ "$role" = client ]; then
	echo "rping (librdmacm) connects to $VRNIC_PEER_IP (CM REQ/REP/RTU over QP1)."
	echo "Each round: the client SENDs the address of a buffer, the server RDMA-READs"
	echo "that buffer from the client's memory and RDMA-WRITEs it back; -V checks the"
	echo "data on both sides. No socket carries the data: only the RDMA devices."
fi
PAIR_LOG=/tmp/rping.log pair_run rping 60 \
	"rping -s -a $VRNIC_IP -C 5 -v -V" "rping -c -a $VRNIC_PEER_IP -C 5 -v -V"
rc=$?
grep 'ping data' /tmp/rping.log | tail -n 5 | sed 's/^/  | /'
n=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
if [ "$rc" = 0 ] && [ "$n" -ge 5 ]; then
	echo "rping OK: $n RDMA round trips, data verified"
	rping_ok=1
else
	echo "rping FAILED (exit $rc$([ "$rc" = 124 ] && echo ": timed out"), $n round trips); its last lines:"
	grep -v 'ping data' /tmp/rping.log | tail -n 5 | sed 's/^/  | /'
	rping_ok=0
fi

hr "3. ib_write_bw: 200 one-sided RDMA WRITEs of 64 KiB ($dev, GID index $gid)"
if [ "$role" = client ]; then
	echo "perftest exchanges QP numbers and memory keys over TCP, then the client's"
	echo "device writes straight into the server's registered memory: the server's"
	echo "CPU takes no part in moving the data. (TCG-emulated guests: MB/s, not GB/s.)"
else
	echo "(server side: memory registered, waiting for the writes to land)"
fi
PAIR_LOG=/tmp/bw.log pair_run write_bw 90 \
	"ib_write_bw -d $dev -x $gid -F -n 200" \
	"ib_write_bw -d $dev -x $gid -F -n 200 $VRNIC_PEER_IP"
rc=$?
grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/bw.log | sed 's/^/  | /'
bw=$(awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { print $4 }' /tmp/bw.log | tail -n 1)
if [ "$rc" = 0 ] && [ -n "$bw" ]; then
	echo "ib_write_bw OK: 200 x 64 KiB = 12.5 MiB written at $bw MB/s"
	bw_ok=1
else
	echo "ib_write_bw FAILED (exit $rc$([ "$rc" = 124 ] && echo ": timed out")); its last lines:"
	tail -n 5 /tmp/bw.log | sed 's/^/  | /'
	bw_ok=0
fi
[ "$rping_ok$bw_ok" = 11 ]
EOF

step "demo: two TCG guests on one private wire, NIC: $nic"
info "node 0 = client 169.254.0.1, node 1 = server 169.254.0.2; each guest's"
info "output is printed when both have finished (about a minute)"
rc=0
tools/vm -n 2 -t 600 "${vmopts[@]}" -- "$guest" || rc=$?
if [ "$rc" = 0 ]; then
	step "demo: done: the two guests moved data with RDMA over the wire ($nic)"
else
	step "demo: RDMA between the guests did not complete (exit $rc; see above)"
fi
exit "$rc"
