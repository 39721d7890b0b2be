#!/bin/bash
# The guest half of make bench (tools/bench.sh): runs perftest between the
# two guests of a pair, node 1 as server, node 0 as client, one test after
# another, each under its own timeout. Node 0 prints one machine-readable
# line per test:
#   BENCH <test> <bytes> <value> <unit>       (lat: t_typical usec; bw: MB/s)
#   BENCH <test> <bytes> FAIL <reason>
#   PCTL <test> <bytes> <min> <median> <p99> <p99.9> <max>   (lat, usec)
# and each test's full output after a '## <test> <bytes>' header.
# usage: bench_guest.sh TEST:BYTES:ITERS[:QPS] ...   (tools/bench.sh passes
# the set); ITERS is a count (-n) or, ending in s, seconds (-D N -f 1: the
# time between one-second margins is measured, for bandwidth tests);
# QPS > 1 runs perftest with -q QPS and names the result
# <test>-q<QPS> (the aggregate over the QPs). A TEST ending in -e
# (ib_send_bw-e) runs the perftest without it, with -e: completions
# through CQ events instead of polling; one ending in -odp
# (ib_write_bw-odp) with --odp: its buffers registered on-demand.
# env: BENCH_TIMEOUT per test (default 90 s)
. "$VRNIC_TOP/selftests/rdma_lib.sh"

tmo=${BENCH_TIMEOUT:-90}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || { echo "usage: bench_guest.sh TEST:BYTES:ITERS ..." >&2; exit 2; }

say() { [ "$VRNIC_NODE" = 0 ] && echo "$@"; }

dev=${VRNIC_IBDEV:-}
if [ -z "$dev" ] || ! wait_gid 30; then
	for t in "${tests[@]}"; do
		IFS=: read -r name bytes _ qps <<<"$t"
		say "BENCH $name${qps:+-q$qps} $bytes FAIL no-RDMA-device-or-GID(${VRNIC_NIC:-?})"
	done
	exit 1
fi
gid=$(roce_gid_index)
# Resolve the neighbour once, outside the measurements.
ping -q -c 1 -w 30 "$VRNIC_PEER_IP" >/dev/null

status=0
for t in "${tests[@]}"; do
	IFS=: read -r name bytes iters qps <<<"$t"
	prog=${name%-e}
	prog=${prog%-odp}
	# ITERS ending in s: that many seconds (perftest -D), measured between
	# one-second margins, instead of a count.
	if [[ $iters == *s ]]; then
		count="-D ${iters%s} -f 1"
	else
		count="-n $iters"
	fi
	opts="-d $dev -x $gid -F -s $bytes $count${qps:+ -q $qps}"
	case "$name" in
	*-e) opts+=" -e" ;;
	*-odp) opts+=" --odp" ;;
	esac
	label=$name${qps:+-q$qps}
	PAIR_LOG=/tmp/bench.log pair_run "bench-$name-$bytes" "$tmo" \
		"$prog $opts" "$prog $opts $VRNIC_PEER_IP"
	rc=$?
	[ "$VRNIC_NODE" = 0 ] || continue
	case "$prog" in
	*_lat) # #bytes #iter t_min t_max t_typical t_avg ...
		val=$(awk -v b="$bytes" '$1 == b && NF >= 6 && $3 ~ /^[0-9.]+$/ { print $5 }' /tmp/bench.log | tail -n 1)
		unit=usec ;;
	*) # #bytes #iter BW_peak BW_average MsgRate
		val=$(awk -v b="$bytes" '$1 == b && NF >= 5 && $4 ~ /^[0-9.]+$/ { print $4 }' /tmp/bench.log | tail -n 1)
		unit=MB/s ;;
	esac
	if [ "$rc" = 0 ] && [ -n "$val" ]; then
		echo "BENCH $label $bytes $val $unit"
		# #bytes #iter t_min t_max t_typical t_avg t_stdev 99% 99.9%
		if [[ $prog == *_lat ]]; then
			awk -v n="$label" -v b="$bytes" '$1 == b && NF >= 9 && $3 ~ /^[0-9.]+$/ {
				l = "PCTL " n " " b " " $3 " " $5 " " $8 " " $9 " " $4 } END { if (l) print l }' \
				/tmp/bench.log
		fi
	else
		status=1
		if [ "$rc" = 124 ]; then
			why="timeout-${tmo}s"
		elif [ "$rc" = 0 ]; then
			why="no-result-line"
		else
			# The first line perftest complained with, compressed to one word.
			# (or its last line).
			why=$({ grep -m1 -iE "fail|error|couldn't|unable|not found" /tmp/bench.log ||
				grep . /tmp/bench.log | tail -n 1; } | tr -cs 'A-Za-z0-9_.:-' '-' | cut -c1-60)
			why="exit-$rc:${why#-}"
		fi
		echo "BENCH $label $bytes FAIL ${why%-}"
	fi
	echo "## $label $bytes (exit $rc)"
	sed 's/^/   /' /tmp/bench.log
done
# The port's counters after the run (vrnic: retransmits, injected faults).
[ "${VRNIC_NIC:-}" = vrnic ] && say "counters: $(rdma statistic show link "$dev/1" 2>&1)"
exit "$status"
