#!/bin/bash
# Load and unload vrnic.ko 20 times: each load must bring up the net_device
# and the ib_device, each unload must leave nothing behind (IRQs, netdev,
# ib_device, debugfs, module references).
. "$(dirname "$0")/../lib.sh"
ko=$VRNIC_TOP/drivers/infiniband/hw/vrnic/vrnic.ko
rounds=${VRNIC_RELOAD_ROUNDS:-20}

ktap_print_header
ktap_set_plan $((rounds + 1))
lsmod | grep -q '^vrnic ' && rmmod vrnic
ib_core_refs() { awk '$1 == "ib_core" { print $3 }' /proc/modules; }
base_refs=$(ib_core_refs)
dmesg_start=$(dmesg | wc -l)

leftovers() {
	local what=
	lsmod | grep -q '^vrnic ' && what+=" module"
	vrnic_ibdev >/dev/null && what+=" ib_device"
	vrnic_netdev >/dev/null && what+=" netdev"
	grep -q vrnic /proc/interrupts && what+=" irqs"
	[ -e /sys/kernel/debug/vrnic ] && [ -n "$(ls /sys/kernel/debug/vrnic)" ] && what+=" debugfs"
	[ "$(ib_core_refs)" = "$base_refs" ] || what+=" ib_core-refs($(ib_core_refs)/$base_refs)"
	echo "$what"
}

for i in $(seq 1 "$rounds"); do
	err=
	insmod "$ko" || err+=" insmod"
	wait_for 20 vrnic_ibdev >/dev/null || err+=" no-ib_device"
	vrnic_netdev >/dev/null || err+=" no-netdev"
	grep -q vrnic /proc/interrupts || err+=" no-irqs"
	rmmod vrnic || err+=" rmmod"
	left=$(leftovers)
	[ -n "$left" ] && err+=" left:$left"
	if [ -z "$err" ]; then
		ktap_test_pass "load/unload round $i"
	else
		ktap_test_fail "load/unload round $i:$err"
	fi
done
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
