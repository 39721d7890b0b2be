#!/bin/bash
# Two guests reach each other through their vrnic Ethernet ports only
# (no virtio-net): ARP, ICMP, and a TCP connection (the barrier).
. "$(dirname "$0")/../lib.sh"

ktap_print_header
ktap_set_plan 3
check "ping $VRNIC_PEER_IP via $VRNIC_IFACE" \
	ping -c 5 -i 0.5 -w 60 -I "$VRNIC_IFACE" "$VRNIC_PEER_IP"
check "TCP rendezvous with the peer" pair_barrier ping-done
check "large frames: ping -s 1400 (no fragmentation)" \
	ping -c 3 -M do -s 1400 -w 30 "$VRNIC_PEER_IP"
pair_barrier ping-large-done
ktap_finished
