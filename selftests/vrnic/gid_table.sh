#!/bin/bash
# GIDs follow the net_device's addresses: adding an IPv4/IPv6 address adds a
# RoCE v2 GID in ib_core's table AND in the device's own table (QUERY_GID via
# debugfs); removing the address removes both.
. "$(dirname "$0")/../lib.sh"
dev=$(vrnic_ibdev)
gids=/sys/class/infiniband/$dev/ports/1/gids

ktap_print_header
ktap_set_plan 8
in_core() { grep -qix "$1" $gids/* 2>/dev/null; }
in_device() { vrnic_device_gids | grep -qi " $1 "; }
not() { ! "$@"; }

v4=169.254.10.7 v4gid=0000:0000:0000:0000:0000:ffff:a9fe:0a07
v6=fd00::77 v6gid=fd00:0000:0000:0000:0000:0000:0000:0077
ip addr add $v4/16 dev "$VRNIC_IFACE"
check "IPv4 $v4 added: GID in ib_core" wait_for 10 in_core $v4gid
check "IPv4 $v4 added: GID in the device table" wait_for 10 in_device $v4gid
ip addr del $v4/16 dev "$VRNIC_IFACE"
check "IPv4 $v4 removed: GID gone from ib_core" wait_for 10 not in_core $v4gid
check "IPv4 $v4 removed: GID gone from the device" wait_for 10 not in_device $v4gid
ip addr add $v6/64 dev "$VRNIC_IFACE" nodad
check "IPv6 $v6 added: GID in ib_core" wait_for 10 in_core $v6gid
check "IPv6 $v6 added: GID in the device table" wait_for 10 in_device $v6gid
ip addr del $v6/64 dev "$VRNIC_IFACE"
check "IPv6 $v6 removed: GID gone from ib_core" wait_for 10 not in_core $v6gid
check "IPv6 $v6 removed: GID gone from the device" wait_for 10 not in_device $v6gid
vrnic_device_gids | sed 's/^/# /'
ktap_finished
