#!/usr/bin/env bash
# make bench: perftest between two TCG guests, once with vrnic in both and
# once with rdma_rxe (virtio-net) in both, then a table of both and the
# ratio vrnic/rxe. Latency: ib_{write,read,send}_lat at 2 B and 4 KiB
# (-n 200, t_typical in usec); bandwidth: ib_{write,read,send}_bw at 4 KiB
# and 64 KiB (-n 100, BW average in MB/s). Every test has its own timeout,
# and a failing test is a FAIL cell with its reason, never a hang.
# Not part of make check. See Documentation/benchmarks.rst.
#
# usage: tools/bench.sh [--nic 'vrnic rxe'] [-t SEC] [TEST:BYTES:ITERS ...]
#   --nic LIST  the pairs to boot, in order (default: vrnic rxe)
#   -t SEC      timeout per test (default 90)
# Logs: build/bench/<nic>.log (every test's full perftest output).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VRNIC_TOP" || exit 1

nics="vrnic rxe" tmo=90
while [ $# -gt 0 ]; do
	case "$1" in
	--nic) nics=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) break ;;
	esac
done
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(
	ib_write_lat:2:200 ib_write_lat:4096:200
	ib_read_lat:2:200 ib_read_lat:4096:200
	ib_send_lat:2:200 ib_send_lat:4096:200
	ib_write_bw:4096:100 ib_write_bw:65536:100
	ib_read_bw:4096:100 ib_read_bw:65536:100
	ib_send_bw:4096:100 ib_send_bw:65536:100
)
out=$VRNIC_TOP/build/bench
mkdir -p "$out"

machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $(uname -sr)"
step "bench: perftest, vrnic vs rdma_rxe, TCG guests ($(date -u +%Y-%m-%dT%H:%MZ))"
info "host: $machine"

declare -A res
for nic in $nics; do
	# Boot + per-test budget (server start, retries, closing barrier).
	vmtmo=$((120 + ${#tests[@]} * (tmo + 40)))
	step "pair: $nic <-> $nic (${#tests[@]} tests, ${tmo}s each at most)"
	t0=$SECONDS
	tools/vm -n 2 --nic "$nic" -t "$vmtmo" -q -- \
		"BENCH_TIMEOUT=$tmo selftests/bench_guest.sh ${tests[*]}" >"$out/$nic.log" 2>&1
	rc=$?
	info "$nic: guests done in $((SECONDS - t0)) s (exit $rc), log $out/$nic.log"
	while read -r _ name bytes val unit; do
		if [ "$val" = FAIL ]; then
			res[$nic,$name,$bytes]="FAIL($unit)"
		else
			res[$nic,$name,$bytes]=$val
		fi
	done < <(grep '^BENCH ' "$out/$nic.log")
	for t in "${tests[@]}"; do
		IFS=: read -r name bytes _ <<<"$t"
		[ -n "${res[$nic,$name,$bytes]:-}" ] ||
			res[$nic,$name,$bytes]="FAIL(no-result:vm-exit-$rc)"
	done
done

# One table: a column per NIC, then vrnic/rxe when both have numbers.
set -- $nics
{
	printf '%-13s %6s %-5s' test bytes unit
	for nic in $nics; do printf ' %14s' "$nic"; done
	[ $# = 2 ] && printf ' %10s' "$1/$2"
	printf '\n'
	for t in "${tests[@]}"; do
		IFS=: read -r name bytes _ <<<"$t"
		unit=MB/s
		[[ $name == *_lat ]] && unit=usec
		printf '%-13s %6s %-5s' "$name" "$bytes" "$unit"
		for nic in $nics; do printf ' %14s' "${res[$nic,$name,$bytes]%%(*}"; done
		if [ $# = 2 ]; then
			a=${res[$1,$name,$bytes]} b=${res[$2,$name,$bytes]}
			if [[ $a =~ ^[0-9.]+$ && $b =~ ^[0-9.]+$ ]]; then
				printf ' %10s' "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
			else
				printf ' %10s' -
			fi
		fi
		printf '\n'
	done
} | tee "$out/table.txt"
echo
echo "lat: t_typical (median) in usec, lower is better; bw: average MB/s, higher is better."
[ $# = 2 ] && echo "$1/$2 > 1 means $1 is slower in latency rows and faster in bandwidth rows."
# Each failed cell with its reason (timeout, exit status + perftest's message).
for k in "${!res[@]}"; do
	case "${res[$k]}" in
	FAIL*) echo "FAIL ${k//,/ }: ${res[$k]#FAIL}" ;;
	esac
done | sort
echo "host: $machine; load average $(cut -d' ' -f1-3 /proc/loadavg); logs in $out/"
! grep -q FAIL "$out/table.txt"
