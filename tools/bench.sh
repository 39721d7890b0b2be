#!/usr/bin/env bash
# make bench: perftest between two TCG guests, once with vrnic in both and
# once with rdma_rxe (virtio-net) in both, then a table of both and the
# ratio vrnic/rxe. Latency: ib_{write,read,send}_lat at 2 B and 4 KiB
# (-n 200, t_typical in usec), and ib_send_lat -e (completions through CQ
# events); bandwidth: ib_{write,read,send}_bw at 4 KiB, 16 KiB and 64 KiB
# (-D 5 -f 1: 5 s each, the 3 s between one-second margins measured; BW
# average in MB/s). Every test has its own timeout,
# and a failing test is a FAIL cell with its reason, never a hang.
# Then throughput under faults: ib_write_bw and ib_send_bw at 64 KiB x 1000
# on a lossless vrnic pair and on one with the fault injector on both ports
# (--faults), printed side by side with the ratio (goal: >= 0.5).
# Then NVMe over RDMA (nvmet-rdma and nvme-rdma between the guests, fio on
# the host, selftests/bench_nvme_guest.sh) on each NIC: 4 KiB random read
# IOPS at iodepth 32, 4 KiB random read latency at iodepth 1 (p50, p99),
# 128 KiB sequential read and write MB/s; a table with vrnic/rxe.
# Before the guests: bench-core (the device core alone, two cores in one
# process on an in-memory wire, against memcpy), the wire limit (two
# processes, on two CPUs as tools/vm pins the guests' main loops, blasting
# frames of the sizes in use through the guests' kind of socket, 32 per
# system call as the netdev does, and one per call) and
# the wake limit (two threads on two CPUs waking each other, the floor
# under the guests' latency). After the path-MTU-1024
# pairs, the same NICs with jumbo frames (--mtu 9000: path MTU 4096) run
# 64 KiB bandwidth, shown against each other and against the wire limit at
# that frame size, measured again just before and just after the first
# NIC's pair. Then the
# IOThread: two vrnic pairs at path MTU 4096, one with the device's work
# on QEMU's main loop (the default) and one with -device vrnic,iothread=
# (tools/vm --iothread), the same bandwidth and latency tests side by side.
# Then peer memory: one vrnic pair with the ivshmem BAR (tools/vm
# --peer-mem), 64 KiB RDMA WRITEs into the peer's BAR and READs out of it
# against the same into and out of its ordinary memory (pair_dmabuf -b;
# perftest 4.5 has no dma-buf option without CUDA), path MTU 1024.
# Then on-demand paging: ib_write_bw with --odp (both sides' buffers
# registered on-demand) against the same with pinned buffers: first touch
# (5 x 1 MiB, the first of which faults every page in on both sides) and
# warm (64 KiB for 5 s), path MTU 1024.
# Not part of make check. See Documentation/benchmarks.rst.
#
# usage: tools/bench.sh [--nic 'vrnic rxe'] [--faults PROPS]
#                       [--fault-iters N] [-t SEC] [TEST:BYTES:ITERS ...]
#   TEST:BYTES:ITERS  ITERS a count (-n) or seconds (5s: -D 5 -f 1)
#   --nic LIST     the pairs to boot, in order (default: vrnic rxe)
#   --faults PROPS -device vrnic fault properties of the faulted pair
#                  (default: 1% drop, 1% reorder, 0.1% dup, 0.1% corrupt;
#                  'none' skips it)
#   --fault-iters N  iterations of the faults section's tests (default
#                  1000; 4000 gives steadier lossless figures)
#   -t SEC         timeout per test (default 90)
#   --nvme on|off|only  the NVMe over RDMA section (default on; only: skip
#                  perftest and the faults section)
#   --jumbo on|off the path-MTU-4096 section (default on; it also runs
#                  ib_write_bw -q 4, four QPs' aggregate)
#   --iothread on|off  the main loop / IOThread section (default on)
#   --peermem on|off   the peer memory section (default on)
#   --odp on|off   the on-demand paging section (default on)
# Logs: build/bench/<nic>.log (every test's full perftest output).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$VRNIC_TOP" || exit 1

# A run with no arguments is the reference run: its results become
# Documentation/benchmarks-results.txt and benchmarks.png.
reference=$(($# == 0))
nics="vrnic rxe" tmo=90 fiters=1000 nvme=on jumbo=on iothread=on peermem=on odp=on
faults=fault-drop-ppm=10000,fault-reorder-ppm=10000,fault-dup-ppm=1000,fault-corrupt-ppm=1000,fault-seed=1
while [ $# -gt 0 ]; do
	case "$1" in
	--nic) nics=$2; shift 2 ;;
	--faults) faults=$2; shift 2 ;;
	--fault-iters) fiters=$2; shift 2 ;;
	--nvme) nvme=$2; shift 2 ;;
	--jumbo) jumbo=$2; shift 2 ;;
	--iothread) iothread=$2; shift 2 ;;
	--peermem) peermem=$2; shift 2 ;;
	--odp) odp=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) break ;;
	esac
done
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(
	ib_write_lat:2:200 ib_write_lat:4096:200
	ib_read_lat:2:200 ib_read_lat:4096:200
	ib_send_lat:2:200 ib_send_lat:4096:200 ib_send_lat-e:2:200
	ib_write_bw:4096:5s ib_write_bw:16384:5s ib_write_bw:65536:5s
	ib_read_bw:4096:5s ib_read_bw:16384:5s ib_read_bw:65536:5s
	ib_send_bw:4096:5s ib_send_bw:16384:5s ib_send_bw:65536:5s
)
out=$VRNIC_TOP/build/bench
mkdir -p "$out"
rm -f "$out"/{core,wire,wake,table,p99,faults,jumbo,iothread,peermem,odp,nvme}.txt "$out"/*.dat "$out/bench.png"

machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $(uname -sr)"
step "bench: perftest, vrnic vs rdma_rxe, TCG guests ($(date -u +%Y-%m-%dT%H:%MZ))"
info "host: $machine"

declare -A res pct
# ratio A B: A/B to two decimals, "-" unless both are numbers and B > 0.
ratio() {
	if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]]; then
		awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
	else
		echo -
	fi
}
# run_pair NAME NIC [tools/vm options...] -- TEST...: one pair, results in
# res[NAME,test,bytes].
run_pair() {
	local name=$1 nic=$2 opts=() t list
	shift 2
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	list=("$@")
	# Boot + per-test budget (server start, retries, closing barrier).
	vmtmo=$((120 + ${#list[@]} * (tmo + 40)))
	step "pair: $name (${#list[@]} tests, ${tmo}s each at most)"
	t0=$SECONDS
	tools/vm -n 2 --nic "$nic" "${opts[@]}" -t "$vmtmo" -q -- \
		"BENCH_TIMEOUT=$tmo selftests/bench_guest.sh ${list[*]}" >"$out/$name.log" 2>&1
	rc=$?
	info "$name: guests done in $((SECONDS - t0)) s (exit $rc), log $out/$name.log"
	while read -r _ test bytes val unit; do
		if [ "$val" = FAIL ]; then
			res[$name,$test,$bytes]="FAIL($unit)"
		else
			res[$name,$test,$bytes]=$val
		fi
	done < <(grep '^BENCH ' "$out/$name.log")
	while read -r _ test bytes pmin p50 p99 p999 pmax; do
		pct[$name,$test,$bytes]="$pmin $p50 $p99 $p999 $pmax"
	done < <(grep '^PCTL ' "$out/$name.log")
	for t in "${list[@]}"; do
		IFS=: read -r test bytes _ qps <<<"$t"
		test=$test${qps:+-q$qps}
		[ -n "${res[$name,$test,$bytes]:-}" ] ||
			res[$name,$test,$bytes]="FAIL(no-result:vm-exit-$rc)"
	done
}

[ "$nvme" = only ] && faults=none jumbo=off iothread=off peermem=off odp=off

# wl BYTES PER_CALL: the best of three 2-second wire-limit runs.
wl() { for _ in 1 2 3; do build/bin/wire-limit "$1" 2 "$2"; done | sort -k5,5n | tail -n 1; }
# wl_mbs: MB/s of the wire-limit line on stdin.
wl_mbs() { awk '{ printf "%.1f", $5 * 1000 }'; }

# The core alone and the wire alone, in this run, on this machine.
if [ "$nvme" != only ]; then
	step "bench-core: two device cores on an in-memory wire, one host thread"
	build/bench/bench_xport 2 | tee "$out/core.txt"
	step "wire limit: two processes, unix datagrams, 32 and 1 per system call"
	# WRITE MIDDLE frames: Ethernet + IPv4 + UDP + BTH + payload + ICRC.
	# The limit is the netdev's way, 32 frames per call; one per call is
	# shown for what the batching is worth.
	for f in 1082 4154; do wl $f 32; wl $f 1; done | tee "$out/wire.txt"
	step "wake limit: two threads on two CPUs waking each other through eventfds"
	for m in spin idle; do build/bin/wake-limit "$m"; done | tee "$out/wake.txt"
fi

for nic in $nics; do
	[ "$nvme" = only ] || run_pair "$nic" "$nic" -- "${tests[@]}"
done
# Under faults: 1000 iterations (64 MiB), against a lossless pair running
# the same, so the ratio compares like with like (100 iterations last a
# fraction of a second and vary 3x between runs).
ftests=(ib_write_bw:65536:$fiters ib_send_bw:65536:$fiters)
# perftest's event mode has no duration mode: 10000 x 64 KiB.
jtests=(ib_write_bw:65536:5s ib_read_bw:65536:5s ib_send_bw:65536:5s
	ib_send_bw-e:65536:10000 ib_write_bw:65536:5s:4)
# The host's speed comes and goes for minutes at a time (the same
# wire-limit run has measured 2.2 and 7.0 GB/s at 4154 bytes a minute
# apart), so the jumbo table divides by the wire measured just before and
# just after the first NIC's pair, not at the start of the run.
if [ "$jumbo" = on ]; then
	set -- $nics
	for nic in $nics; do
		[ "$nic" = "$1" ] && wire_before=$(wl 4154 32 | wl_mbs)
		run_pair "$nic-jumbo" "$nic" --mtu 9000 -- "${jtests[@]}"
		[ "$nic" = "$1" ] && wire_after=$(wl 4154 32 | wl_mbs)
	done
	res[wire,jumbo]=$(awk -v a="$wire_before" -v b="$wire_after" 'BEGIN { printf "%.1f", (a + b) / 2 }')
fi
iotests=(ib_write_bw:65536:5s ib_read_bw:65536:5s ib_send_bw:65536:5s
	ib_write_lat:2:200 ib_read_lat:2:200 ib_send_lat:2:200)
if [ "$iothread" = on ]; then
	run_pair vrnic-mainloop vrnic --mtu 9000 -- "${iotests[@]}"
	run_pair vrnic-iothread vrnic --mtu 9000 --iothread -- "${iotests[@]}"
fi
if [ "$faults" != none ]; then
	run_pair vrnic-lossless vrnic -- "${ftests[@]}"
	run_pair vrnic-faults vrnic -d "$faults" -- "${ftests[@]}"
fi
otests=(ib_write_bw:1048576:5 ib_write_bw-odp:1048576:5
	ib_write_bw:65536:5s ib_write_bw-odp:65536:5s)
[ "$odp" = on ] && run_pair vrnic-odp vrnic -- "${otests[@]}"
if [ "$peermem" = on ]; then
	step "peer memory: 64 KiB WRITE/READ, the peer's ivshmem BAR vs its RAM (5 s each)"
	t0=$SECONDS
	tools/vm -n 2 --peer-mem 16 -t 300 -q -- \
		"build/selftests/vrnic/pair_dmabuf -x ivshmem -b 5" >"$out/peermem.log" 2>&1
	info "peer memory: guests done in $((SECONDS - t0)) s (exit $?), log $out/peermem.log"
	while read -r _ _ target op _ val _; do
		res[peermem,$target,$op]=$val
	done < <(grep '^# BENCH ' "$out/peermem.log")
fi

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
		[[ ${name%-e} == *_lat ]] && unit=usec
		printf '%-13s %6s %-5s' "$name" "$bytes" "$unit"
		for nic in $nics; do printf ' %14s' "${res[$nic,$name,$bytes]%%(*}"; done
		[ $# = 2 ] && printf ' %10s' "$(ratio "${res[$1,$name,$bytes]}" "${res[$2,$name,$bytes]}")"
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

# Latency tails: the 99th percentile of each latency test.
set -- $nics
if [ $# = 2 ]; then
	echo
	echo "latency, 99th percentile (usec):"
	{
		printf '%-13s %6s %14s %14s %10s\n' test bytes "$1" "$2" "$2/$1"
		for t in "${tests[@]}"; do
			IFS=: read -r name bytes _ <<<"$t"
			[[ ${name%-e} == *_lat ]] || continue
			a=$(cut -d' ' -f3 <<<"${pct[$1,$name,$bytes]:-}") b=$(cut -d' ' -f3 <<<"${pct[$2,$name,$bytes]:-}")
			printf '%-13s %6s %14s %14s %10s\n' "$name" "$bytes" "${a:--}" "${b:--}" "$(ratio "$b" "$a")"
		done
	} | tee "$out/p99.txt"
fi

if [ "$faults" != none ]; then
	echo
	echo "vrnic under faults ($faults), both ports:"
	{
		printf '%-13s %6s %-5s %14s %14s %10s\n' test bytes unit lossless faults faults/lossless
		for t in "${ftests[@]}"; do
			IFS=: read -r name bytes _ <<<"$t"
			a=${res[vrnic-lossless,$name,$bytes]} b=${res[vrnic-faults,$name,$bytes]}
			printf '%-13s %6s %-5s %14s %14s %10s\n' "$name" "$bytes" MB/s "${a%%(*}" "${b%%(*}" \
				"$(ratio "$b" "$a")"
		done
	} | tee "$out/faults.txt"
	# Client-side port counters of the faulted run: what was injected and
	# how the transport recovered.
	grep -h '^counters:' "$out/vrnic-faults.log" | tr ' ' '\n' |
		awk '/^(retransmits|timeouts|early_retransmits|seq_naks_rcvd|implied_naks|fault_[a-z]+)$/ { k = $0; next }
		     k { printf "%s %s  ", k, $0; k = "" } END { print "" }'
fi
if [ "$jumbo" = on ]; then
	echo
	echo "path MTU 4096 (netdev MTU 9000), 5 s per test"
	set -- $nics
	{
		echo "wire limit at 4154-byte frames: ${res[wire,jumbo]} MB/s" \
			"(the mean of $wire_before before and $wire_after after the $1 pair)"
		printf '%-16s %6s %-5s' test bytes unit
		for nic in $nics; do printf ' %14s' "$nic"; done
		[ $# = 2 ] && printf ' %10s' "$1/$2"
		printf ' %10s\n' "$1/wire"
		for t in "${jtests[@]}"; do
			IFS=: read -r name bytes _ qps <<<"$t"
			name=$name${qps:+-q$qps}
			printf '%-16s %6s %-5s' "$name" "$bytes" MB/s
			for nic in $nics; do printf ' %14s' "${res[$nic-jumbo,$name,$bytes]%%(*}"; done
			[ $# = 2 ] && printf ' %10s' "$(ratio "${res[$1-jumbo,$name,$bytes]}" "${res[$2-jumbo,$name,$bytes]}")"
			printf ' %10s\n' "$(ratio "${res[$1-jumbo,$name,$bytes]}" "${res[wire,jumbo]}")"
		done
	} | tee "$out/jumbo.txt"
fi
if [ "$iothread" = on ]; then
	echo
	echo "vrnic's work on the main loop or in an IOThread, path MTU 4096:"
	{
		printf '%-13s %6s %-5s %14s %14s %10s\n' test bytes unit mainloop iothread iothread/main
		for t in "${iotests[@]}"; do
			IFS=: read -r name bytes _ <<<"$t"
			unit=MB/s
			[[ $name == *_lat ]] && unit=usec
			a=${res[vrnic-mainloop,$name,$bytes]} b=${res[vrnic-iothread,$name,$bytes]}
			printf '%-13s %6s %-5s %14s %14s %10s\n' "$name" "$bytes" "$unit" "${a%%(*}" "${b%%(*}" \
				"$(ratio "$b" "$a")"
		done
	} | tee "$out/iothread.txt"
fi
if [ "$peermem" = on ]; then
	echo
	echo "vrnic into and out of peer memory (the ivshmem BAR) or RAM, 64 KiB, path MTU 1024:"
	{
		printf '%-13s %6s %-5s %14s %14s %10s\n' test bytes unit RAM BAR BAR/RAM
		for op in write read; do
			a=${res[peermem,host,$op]:-FAIL} b=${res[peermem,ivshmem,$op]:-FAIL}
			printf '%-13s %6s %-5s %14s %14s %10s\n' "rdma_$op" 65536 MB/s "$a" "$b" "$(ratio "$b" "$a")"
		done
	} | tee "$out/peermem.txt"
fi
if [ "$odp" = on ]; then
	echo
	echo "vrnic ib_write_bw, buffers pinned or on-demand (--odp), path MTU 1024:"
	{
		printf '%-26s %8s %-5s %14s %14s %10s\n' test bytes unit pinned odp odp/pinned
		for t in ib_write_bw:1048576:first-touch ib_write_bw:65536:warm; do
			IFS=: read -r name bytes what <<<"$t"
			a=${res[vrnic-odp,$name,$bytes]:-FAIL} b=${res[vrnic-odp,$name-odp,$bytes]:-FAIL}
			printf '%-26s %8s %-5s %14s %14s %10s\n' "$name ($what)" "$bytes" MB/s \
				"${a%%(*}" "${b%%(*}" "$(ratio "$b" "$a")"
		done
	} | tee "$out/odp.txt"
	grep -h '^counters:' "$out/vrnic-odp.log" | tr ' ' '\n' |
		awk '/^odp_[a-z_]+$/ { k = $0; next } k { printf "%s %s  ", k, $0; k = "" } END { print "(client)" }' |
		tee -a "$out/odp.txt"
fi
if [ "$nvme" != off ]; then
	nrows="randread_4k_qd32:IOPS lat_4k_qd1_p50:usec lat_4k_qd1_p99:usec seqread_128k:MB/s seqwrite_128k:MB/s"
	for nic in $nics; do
		step "NVMe over RDMA: $nic pair (fio on nvme-rdma, nvmet-rdma target)"
		t0=$SECONDS
		tools/vm -n 2 -m 1024 --nic "$nic" -t 600 -q -- selftests/bench_nvme_guest.sh \
			>"$out/nvme-$nic.log" 2>&1
		info "$nic: guests done in $((SECONDS - t0)) s (exit $?), log $out/nvme-$nic.log"
		while read -r _ _ row val unit; do
			res[nvme-$nic,$row]=$val
			[ "$val" = FAIL ] && res[nvme-$nic,$row]="FAIL($unit)"
		done < <(grep '^BENCH nvme ' "$out/nvme-$nic.log")
	done
	set -- $nics
	{
		printf '%-18s %-5s' row unit
		for nic in $nics; do printf ' %12s' "$nic"; done
		[ $# = 2 ] && printf ' %10s' "$1/$2"
		printf '\n'
		for r in $nrows; do
			row=${r%%:*} unit=${r#*:}
			printf '%-18s %-5s' "$row" "$unit"
			for nic in $nics; do printf ' %12s' "${res[nvme-$nic,$row]:-FAIL(no-result)}"; done
			[ $# = 2 ] && printf ' %10s' "$(ratio "${res[nvme-$1,$row]:-}" "${res[nvme-$2,$row]:-}")"
			printf '\n'
		done
	} | tee "$out/nvme.txt"
	echo "NVMe: IOPS and MB/s higher is better (ratio > 1: vrnic ahead); usec lower is better (ratio < 1: vrnic ahead)."
fi
# The picture: bandwidth against message size, latency percentiles.
set -- $nics
for nic in $nics; do
	for t in "${tests[@]}"; do
		IFS=: read -r name bytes _ <<<"$t"
		v=${res[$nic,$name,$bytes]:-}
		[[ $name == *_bw && $v =~ ^[0-9.]+$ ]] && echo "$name $bytes $v" >>"$out/bw-$nic.dat"
		[[ $name == *_lat && $bytes == 2 && -n ${pct[$nic,$name,$bytes]:-} ]] &&
			tr ' ' '\n' <<<"${pct[$nic,$name,$bytes]}" | cat -n >"$out/lat-$nic-$name.dat"
	done
done
if command -v gnuplot >/dev/null && [ $# = 2 ] &&
	gnuplot -e "out='$out'; a='$1'; b='$2'" tools/bench-plot.gp 2>"$out/gnuplot.err"; then
	info "picture: $out/bench.png"
else
	info "no picture (gnuplot missing, one NIC only, or see $out/gnuplot.err)"
fi
echo "host: $machine; load average $(cut -d' ' -f1-3 /proc/loadavg); logs in $out/"

# Every table of this run, with its date and machine, in one file.
{
	echo "make bench, $(date -u +%Y-%m-%d) on $machine (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
	for f in core wire wake table p99 jumbo iothread faults peermem odp nvme; do
		[ -s "$out/$f.txt" ] || continue
		echo
		case $f in
		core) echo "bench-core (the device core alone, one host thread):" ;;
		wire) echo "wire limit (two processes, unix datagrams):" ;;
		wake) echo "wake limit (two threads on two CPUs, eventfd; spin: a SCHED_IDLE busy-poller on each):" ;;
		table) echo "perftest, path MTU 1024 (lat: median usec; bw: MB/s):" ;;
		p99) echo "latency, 99th percentile (usec):" ;;
		jumbo) echo "perftest, path MTU 4096, 5 s per test (MB/s):" ;;
		iothread) echo "vrnic on the main loop or in an IOThread, path MTU 4096 (lat: median usec; bw: MB/s):" ;;
		faults) echo "vrnic under faults ($faults), 64 KiB x $fiters (MB/s):" ;;
		peermem) echo "peer memory (pair_dmabuf -b 5: the peer's ivshmem BAR or its RAM, path MTU 1024):" ;;
		odp) echo "on-demand paging (ib_write_bw --odp; first touch: 5 x 1 MiB; warm: 64 KiB for 5 s):" ;;
		nvme) echo "NVMe over RDMA (fio):" ;;
		esac
		cat "$out/$f.txt"
	done
} >"$out/results.txt"
if [ "$reference" = 1 ]; then
	cp "$out/results.txt" Documentation/benchmarks-results.txt
	[ -s "$out/bench.png" ] && cp "$out/bench.png" Documentation/benchmarks.png
	info "reference run: Documentation/benchmarks-results.txt and benchmarks.png updated"
fi
! grep -q FAIL "$out/table.txt" "$out/faults.txt" "$out/jumbo.txt" "$out/iothread.txt" \
	"$out/peermem.txt" "$out/odp.txt" "$out/nvme.txt" 2>/dev/null
