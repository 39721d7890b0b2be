#!/bin/bash
# A hostile third party on the wire of a vrnic pair (issue 13):
# build/selftests/vrnic/hostile_peer (see hostile_peer.c) between the two
# guests of tools/vm -n 2. Node 1 is the target of live RC and UC
# connections; node 0 is its honest peer and also forges RoCEv2 frames
# from 169.254.0.77 with a raw socket on its vrnic net_device: UC
# WRITE/SEND, RC requests over a PSN window, and ACKs, READ responses, an
# ATOMIC ACK and NAKs at a requester. Nothing forged may land or complete,
# the real transfers must complete verified, and node 1's port counters
# must count the forged frames as from a source that is not the QP's peer
# (a counter found by name; VRNIC_HOSTILE_SRC_COUNTER names it).
# The binary prints the TAP; both nodes print the same results.
# Knob: HOSTILE_PEER_TIMEOUT (whole binary, default 480 s).
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

bin=$VRNIC_TOP/build/selftests/vrnic/hostile_peer
tmo=${HOSTILE_PEER_TIMEOUT:-480}

[ -x "$bin" ] || ktap_exit_fail_msg "$bin missing (make -C selftests?)"
wait_gid 30 || echo "# no RoCE v2 IPv4 GID on ${VRNIC_IBDEV:-vrnic0} after 30 s"
pair_barrier_sh hostile-peer-go
timeout -k 5 "$tmo" "$bin"
rc=$?
[ "$rc" = 124 ] && echo "# hostile_peer timed out after $tmo s"
VRNIC_BARRIER_TIMEOUT=$((tmo + 30)) pair_barrier_sh hostile-peer-done
exit "$rc"
