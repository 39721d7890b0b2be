#!/bin/bash
# RDMA traffic between two vrnic guests with standard tools that move data
# over the wire today: the libibverbs pingpongs (RC, UC, UD, SRQ), rping
# (rdma_cm over the GSI QP, SEND/READ/WRITE, 100 pings verified with -V),
# the librdmacm examples ucmatose (RC connection + SENDs) and udaddy (UD
# SENDs, address resolution through rdma_cm), and the perftest bandwidth
# (WRITE, READ, SEND, atomic) and latency (WRITE, READ, SEND) tests, each
# twice: QPs connected by hand (-x GID index) and through rdma_cm (-R, which
# finds the GID from the IP address itself); always with an explicit -n;
# once with its server late to listen, a test of pair_run itself; and
# perftest over XRC (-c XRC: SEND, WRITE, READ bandwidth, SEND latency).
# Node 1 is the server, node 0 the client.
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

tmo=${PAIR_VERBS_TIMEOUT:-60}
dev=${VRNIC_IBDEV:-vrnic0}
role=client
[ "$VRNIC_NODE" = 1 ] && role=server

ktap_print_header
ktap_set_plan 28
wait_gid 30
gid=$(roce_gid_index) || gid=1
ping -q -c 2 -w 60 -I "$VRNIC_IFACE" "$VRNIC_PEER_IP" >/dev/null

tool() { pair_tool "$1" "$tmo" "$2" "$3"; }

tool rc_pingpong "ibv_rc_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
tool uc_pingpong "ibv_uc_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
tool ud_pingpong "ibv_ud_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
tool srq_pingpong "ibv_srq_pingpong -d $dev -g $gid -n 100" "$VRNIC_PEER_IP"
PAIR_LOG=/tmp/rping.log pair_run rping "$tmo" "rping -s -a $VRNIC_IP -C 100 -v -V" \
	"rping -c -a $VRNIC_PEER_IP -C 100 -v -V"
rc=$?
tail -n 3 /tmp/rping.log | sed 's/^/# /'
n=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
check "rping -C 100 -V ($role, exit $rc, $n pings)" test "$rc" = 0 -a "$n" -ge 100
tool ucmatose "ucmatose -C 100" "-s $VRNIC_PEER_IP"
tool udaddy "udaddy -C 100" "-s $VRNIC_PEER_IP"
tool write_bw "ib_write_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool read_bw "ib_read_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool send_bw "ib_send_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool atomic_bw "ib_atomic_bw -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool write_lat "ib_write_lat -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool read_lat "ib_read_lat -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool send_lat "ib_send_lat -d $dev -x $gid -n 50 -F" "$VRNIC_PEER_IP"
tool write_bw_cm "ib_write_bw -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
tool read_bw_cm "ib_read_bw -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
tool send_bw_cm "ib_send_bw -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
tool atomic_bw_cm "ib_atomic_bw -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
tool write_lat_cm "ib_write_lat -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
tool read_lat_cm "ib_read_lat -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
tool send_lat_cm "ib_send_lat -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
# The harness: the server's second rdma_cm listen 3 s late, once
# (late_listen.so), so its client is rejected as when a slow guest loses
# perftest -R's race (index.rst); pair_run must start both sides again.
once=/tmp/late_listen.once
rm -f "$once"
tool write_lat_cm_late "LATE_LISTEN_MS=3000 LATE_LISTEN_ONCE=$once LD_PRELOAD=$VRNIC_TOP/build/selftests/late_listen.so ib_write_lat -d $dev -R -n 50 -F" "$VRNIC_PEER_IP"
check "write_lat_cm_late ($role): both sides started again" grep -q 'could not connect' /tmp/write_lat_cm_late.log
# Traffic class 106 in the AH: DSCP 26, ECN 2 on the wire (the host's
# wire check looks for it in the capture).
tool send_bw_tclass "ib_send_bw -d $dev -x $gid -n 50 -F --tclass=106" "$VRNIC_PEER_IP"
# XRC: perftest's initiator QP names the target's XRC SRQ in every WR.
tool send_bw_xrc "ib_send_bw -d $dev -x $gid -n 50 -F -c XRC" "$VRNIC_PEER_IP"
tool write_bw_xrc "ib_write_bw -d $dev -x $gid -n 50 -F -c XRC" "$VRNIC_PEER_IP"
tool read_bw_xrc "ib_read_bw -d $dev -x $gid -n 50 -F -c XRC" "$VRNIC_PEER_IP"
tool send_lat_xrc "ib_send_lat -d $dev -x $gid -n 50 -F -c XRC" "$VRNIC_PEER_IP"
ktap_finished
