#!/bin/bash
# Load and unload vrnic.ko and vrnic_rdma.ko 20 times: each load must bring
# up the net_device and the ib_device, each unload must leave nothing behind
# (IRQs, netdev, ib_device, debugfs, module references). Then the RDMA
# driver alone, as an auxiliary driver: reloading or unbinding it takes
# the ib_device away and back while the net_device stays up with its
# address, and the RDMA device works again afterwards.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../rdma_lib.sh"
rounds=${VRNIC_RELOAD_ROUNDS:-20}

ktap_print_header
ktap_set_plan $((rounds + 8))
vrnic_unload
ib_core_refs() { awk '$1 == "ib_core" { print $3 }' /proc/modules; }
base_refs=$(ib_core_refs)
dmesg_start=$(dmesg | wc -l)

leftovers() {
	local what=
	vrnic_loaded && what+=" vrnic"
	vrnic_rdma_loaded && what+=" vrnic_rdma"
	vrnic_ibdev >/dev/null && what+=" ib_device"
	vrnic_netdev >/dev/null && what+=" netdev"
	grep -q vrnic /proc/interrupts && what+=" irqs"
	[ -e /sys/kernel/debug/vrnic ] && [ -n "$(ls /sys/kernel/debug/vrnic)" ] && what+=" debugfs"
	[ "$(ib_core_refs)" = "$base_refs" ] || what+=" ib_core-refs($(ib_core_refs)/$base_refs)"
	echo "$what"
}

for i in $(seq 1 "$rounds"); do
	err=
	vrnic_load || err+=" insmod"
	wait_for 20 vrnic_ibdev >/dev/null || err+=" no-ib_device"
	vrnic_netdev >/dev/null || err+=" no-netdev"
	grep -q vrnic /proc/interrupts || err+=" no-irqs"
	vrnic_unload || err+=" rmmod"
	left=$(leftovers)
	[ -n "$left" ] && err+=" left:$left"
	if [ -z "$err" ]; then
		ktap_test_pass "load/unload round $i"
	else
		ktap_test_fail "load/unload round $i:$err"
	fi
done

# ---- the RDMA driver on its own ----
vrnic_load && wait_for 20 vrnic_ibdev >/dev/null
ifc=$(vrnic_netdev)
ip link set "$ifc" up
ip addr add "$VRNIC_IP/16" dev "$ifc" 2>/dev/null
ifindex=$(cat "/sys/class/net/$ifc/ifindex")
comp_irqs() { grep -c 'vrnic-comp' /proc/interrupts; }
netdev_kept() {
	[ "$(vrnic_netdev)" = "$ifc" ] &&
		[ "$(cat "/sys/class/net/$ifc/ifindex")" = "$ifindex" ] &&
		ip -4 addr show dev "$ifc" | grep -q "$VRNIC_IP/" &&
		ip link show dev "$ifc" | grep -q 'state UP'
}
rdma_gone() {
	rmmod vrnic_rdma && ! vrnic_ibdev >/dev/null && [ "$(comp_irqs)" = 0 ] &&
		[ ! -e "/sys/kernel/debug/vrnic/$(basename "$(readlink -f "/sys/class/net/$ifc/device")")/res_count" ]
}
check "rmmod vrnic_rdma alone: the ib_device, its IRQs and debugfs files go" rdma_gone
check "the net_device stays: same ifindex, up, its address kept" netdev_kept
check "vrnic.ko is not in use by anything once vrnic_rdma is gone" \
	test "$(awk '$1 == "vrnic" { print $3 }' /proc/modules)" = 0
rdma_back() { insmod "$VRNIC_RDMA_KO" && wait_for 20 vrnic_ibdev >/dev/null; }
check "insmod vrnic_rdma again: the ib_device is back on the same net_device" rdma_back
port_active() { ibv_devinfo -d "$(vrnic_ibdev)" | grep -q 'state:.*PORT_ACTIVE'; }
check "its port is ACTIVE without touching the net_device" wait_for 20 port_active
# Unbinding the auxiliary device (what a driver_override or a hot-unplug of
# the RDMA function does) and binding it back, with the module loaded.
aux=$(basename /sys/bus/auxiliary/drivers/vrnic_rdma.rdma/vrnic.rdma.* 2>/dev/null)
rebind() {
	echo "$aux" >/sys/bus/auxiliary/drivers/vrnic_rdma.rdma/unbind &&
		! vrnic_ibdev >/dev/null && netdev_kept &&
		echo "$aux" >/sys/bus/auxiliary/drivers/vrnic_rdma.rdma/bind &&
		wait_for 20 vrnic_ibdev >/dev/null && wait_for 20 port_active
}
check "unbind and bind $aux: the ib_device goes and comes back, the net_device stays" rebind
# The RDMA device works after all this: an RC ping-pong through the
# device's loopback, on the GID of the address the net_device kept.
pingpong() {
	local dev gidx srv rc
	dev=$(vrnic_ibdev)
	wait_gid 20 "$dev" && gidx=$(roce_gid_index "$dev") || return 1
	ibv_rc_pingpong -d "$dev" -g "$gidx" -n 5 >/tmp/reload-srv.log 2>&1 &
	srv=$!
	sleep 1
	ibv_rc_pingpong -d "$dev" -g "$gidx" -n 5 localhost >/tmp/reload-cli.log 2>&1
	rc=$?
	wait "$srv" && [ "$rc" = 0 ] || { sed 's/^/# /' /tmp/reload-*.log; return 1; }
}
check "the re-bound RDMA device moves data: ibv_rc_pingpong over loopback" pingpong

# Only what this test caused: driver errors, kernel warnings, oopses.
dmesg | tail -n +$((dmesg_start + 1)) |
	grep -E -e 'vrnic.*([Ee]rror|[Ff]ail|[Tt]imeout)' -e 'BUG|WARNING|Oops|leak' |
	grep -v 'module verification failed' >/tmp/reload-dmesg
if [ -s /tmp/reload-dmesg ]; then
	sed 's/^/# /' /tmp/reload-dmesg
	ktap_test_fail "no driver errors or kernel warnings in dmesg"
else
	ktap_test_pass "no driver errors or kernel warnings in dmesg"
fi
ktap_finished
