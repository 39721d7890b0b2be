#!/bin/bash
# Objects follow their process: SIGKILL releases everything a process held;
# rmmod vrnic_rdma while a process holds objects completes (disassociate),
# the process sees its device gone, and the driver loads again afterwards.
. "$(dirname "$0")/../lib.sh"
hold=$VRNIC_TOP/build/selftests/vrnic/hold_objects

ktap_print_header
ktap_set_plan 6
counts() { for t in pd cq qp mr; do rdma res show $t | grep -c ' vrnic'; done | tr '\n' ' '; }
base=$(counts)

# start_holder ARGS: the holder's stdin is a FIFO we keep open on fd 8;
# closing fd 8 lets it continue. Its output goes to $out.
out=$(mktemp)
fifo=$(mktemp -u)
mkfifo "$fifo"
start_holder() {
	"$hold" "$@" <"$fifo" >"$out" 2>&1 &
	pid=$!
	exec 8>"$fifo"
	wait_for 60 grep -qx ready "$out"
}

check "process holding objects starts" start_holder
held=$(counts)
echo "# rdma res pd/cq/qp/mr: before $base, held $held"
check "its objects are visible in rdma res" test "$held" != "$base"
kill -9 "$pid"
wait "$pid" 2>/dev/null
exec 8>&-
back_to_base() { [ "$(counts)" = "$base" ]; }
check "SIGKILL releases every object" wait_for 20 back_to_base

start_holder probe || echo "# second holder did not start"
check "rmmod vrnic_rdma with a live process holding objects completes" timeout 60 rmmod vrnic_rdma
exec 8>&-	# let the holder try a verb on the disassociated device
timeout 30 tail --pid="$pid" -f /dev/null
after=$(grep '^after:' "$out")
echo "# holder: $after"
check "the process sees the device gone" test -n "$after" -a "$after" != "after: 0"
kill -9 "$pid" 2>/dev/null
rm -f "$fifo" "$out"
insmod "$VRNIC_RDMA_KO" && wait_for 20 vrnic_ibdev >/dev/null
check "the driver loads again" vrnic_ibdev
ktap_finished
