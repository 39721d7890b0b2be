#!/usr/bin/env bash
# make demo: boot two guests joined by a private wire through their vrnic
# ports and show what exists today: the RoCE ib_device each guest sees,
# its RoCEv2 GIDs, and Ethernet traffic between the guests through vrnic
# alone. (RDMA data transfer arrives with the transport issue.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VRNIC_TOP"
step "demo: two TCG guests, one wire, vrnic in each"
tools/vm -n 2 -t 300 -- '
dev=$(. selftests/lib.sh; vrnic_ibdev)
echo "guest $VRNIC_NODE: $VRNIC_IFACE $VRNIC_IP, RDMA device $dev"
rdma link show
ibv_devinfo -d "$dev" | grep -E "hca_id|vendor|state|link_layer|active_mtu"
echo "RoCEv2 GIDs:"; ibv_devinfo -v -d "$dev" | grep -E "GID\["
echo "ping the peer through vrnic:"; ping -c 3 -w 60 "$VRNIC_PEER_IP" | tail -n 2
python3 selftests/pair_barrier.py demo-done
'
