# Shared helpers for vrnic guest selftests (sourced). TAP output comes from
# the kernel's own ktap_helpers.sh (Debian's linux-source-6.12, unpacked by
# make setup into VRNIC_CACHE).
: "${VRNIC_TOP:?run inside a vrnic guest (tools/vm)}"
VRNIC_CACHE=${VRNIC_CACHE:-/root/.cache/vrnic}
. "$VRNIC_CACHE/linux-source-6.12/tools/testing/selftests/kselftest/ktap_helpers.sh"

# vrnic_ibdev, vrnic_netdev
. "$VRNIC_TOP/tools/guest/sysfs.sh"
# vrnic_load, vrnic_unload, vrnic_loaded, vrnic_rdma_loaded
. "$VRNIC_TOP/tools/guest/modules.sh"

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

# vrnic_qom COMMAND...: read or change this node's vrnic fault-* properties
# while the guest runs (tools/vm --qmp: tools/qom-relay.py on the host runs
# them as QMP qom-get/qom-set on this node's device). Each argument is one
# command, "get fault-NAME" or "set fault-NAME VALUE"; prints one reply per
# command run ("ok [VALUE]" or "error MESSAGE", after which the rest is not
# run) and fails on an error or when no relay answers within 20 s. The
# request carries an id that the reply repeats, so a late reply to an
# earlier request is never taken for this one's.
vrnic_qom() {
	local req=$VRNIC_OUT/qom.req rep=$VRNIC_OUT/qom.rep
	local id="# $$.$RANDOM.$SECONDS" deadline=$((SECONDS + 20))
	rm -f "$rep"
	{ echo "$id"; printf '%s\n' "$@"; } >"$req.tmp" && mv "$req.tmp" "$req" || return 1
	until [ -f "$rep" ] && [ "$(head -n 1 "$rep")" = "$id" ]; do
		if [ $SECONDS -ge $deadline ]; then
			rm -f "$req"
			echo "error no answer from the host (tools/vm --qmp?)"
			return 1
		fi
		sleep 0.1
	done
	tail -n +2 "$rep"
	! grep -q '^error' "$rep"
}
