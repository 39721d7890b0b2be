# Shared helpers for vrnic guest selftests (sourced). TAP output comes from
# the kernel's own ktap_helpers.sh (Debian's linux-source-6.12, unpacked by
# make setup into VRNIC_CACHE).
: "${VRNIC_TOP:?run inside a vrnic guest (tools/vm)}"
VRNIC_CACHE=${VRNIC_CACHE:-/root/.cache/vrnic}
. "$VRNIC_CACHE/linux-source-6.12/tools/testing/selftests/kselftest/ktap_helpers.sh"

# vrnic_ibdev, vrnic_netdev
. "$VRNIC_TOP/tools/guest/sysfs.sh"

# wait_for SECONDS COMMAND...: poll COMMAND every 0.2 s until it succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
}

# The device's own view of its GID table (debugfs, from QUERY_GID commands).
vrnic_device_gids() {
	cat /sys/kernel/debug/vrnic/*/gid_table 2>/dev/null
}

# pair_barrier NAME: rendezvous of the two guests of a pair over the wire.
pair_barrier() {
	python3 "$VRNIC_TOP/selftests/pair_barrier.py" "$1"
}

# check DESCRIPTION COMMAND...: one TAP result from COMMAND's status.
# (ktap_test_result expands "$@" unquoted, which splits patterns with spaces.)
check() {
	local desc=$1
	shift
	if "$@"; then
		ktap_test_pass "$desc"
	else
		ktap_test_fail "$desc"
	fi
}
