# Find vrnic's devices in sysfs (sourced by tools/guest/guest-init.sh and
# selftests/lib.sh): the net_device / ib_device whose parent PCI function
# is bound to the vrnic driver.
vrnic_dev_in() {
	local d
	for d in "$1"/*; do
		[ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = vrnic ] &&
			basename "$d" && return 0
	done
	return 1
}
vrnic_netdev() { vrnic_dev_in /sys/class/net; }
vrnic_ibdev() { vrnic_dev_in /sys/class/infiniband; }
