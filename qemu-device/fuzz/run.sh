#!/usr/bin/env bash
# Run the vrnic fuzz targets, one at a time, with TAP output (one result
# per target). SPDX-License-Identifier: GPL-2.0-or-later
#
#   run.sh regress OUT 0 TARGET...     run the oracle test (OUT/oracle-test),
#                                      then replay every input of the
#                                      checked-in corpus qemu-device/fuzz/
#                                      corpus/TARGET
#   run.sh fuzz OUT SECONDS TARGET...  fuzz each target SECONDS (or until
#                                      FUZZ_RUNS executions, if set first),
#                                      starting from the checked-in corpus
#                                      and the working corpus OUT/corpus/TARGET
# OUT holds the binaries (make fuzz-build), the logs and the working
# corpora. A crash, sanitizer report or oracle failure fails the target:
# its input is in OUT/artifacts/TARGET-crash-*. FUZZ_ARGS adds libFuzzer
# options (e.g. -jobs=2 -workers=2 on an idle machine).
set -uo pipefail
mode=$1 out=$2 secs=$3
shift 3
dir=$(cd "$(dirname "$0")" && pwd)

# A small ASan quarantine: each execution frees its QPs' transport state,
# and a 256 MiB quarantine makes every allocation fresh, page-faulting
# memory (half the time of an execution). 16 MiB still holds the frees of
# hundreds of executions, far more than a use-after-free within one needs.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

n=0
fail=0
if [ "$mode" = regress ]; then
	# First the oracles themselves: each must still be able to fail.
	echo "1..$(($# + 1))"
	n=1
	if "$out/oracle-test" >"$out/oracle-test.log" 2>&1; then
		echo "ok $n oracles: $(grep -c '^ok' "$out/oracle-test.log") fire as they should"
	else
		echo "not ok $n oracles (log $out/oracle-test.log)"
		grep '^not ok' "$out/oracle-test.log" | sed 's/^/# /'
		fail=1
	fi
else
	echo "1..$#"
fi
for t in "$@"; do
	n=$((n + 1))
	bin=$out/$t
	seeds=$dir/corpus/$t
	log=$out/$t-$mode.log
	mkdir -p "$out/artifacts" "$out/corpus/$t"
	if [ ! -x "$bin" ]; then
		echo "not ok $n $t # no binary $bin"
		fail=1
		continue
	fi
	case $mode in
	regress)
		# Every file once (-runs=0 over the directory: libFuzzer runs
		# the corpus, then stops); no new inputs are tried.
		count=$(find "$seeds" -type f | wc -l)
		"$bin" -runs=0 -timeout=25 -rss_limit_mb=2048 \
			-artifact_prefix="$out/artifacts/$t-" "$seeds" >"$log" 2>&1
		rc=$?
		desc="$t: $count inputs replayed"
		;;
	fuzz)
		t0=$(date +%s)
		# shellcheck disable=SC2086 # FUZZ_ARGS is a list of options
		# Inputs of at most 4 KiB: up to 256 operations, and every
		# execution stays short (larger seeds are cut, not skipped).
		"$bin" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 \
			-max_len="${FUZZ_MAX_LEN:-4096}" -runs="${FUZZ_RUNS:--1}" -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
			${FUZZ_ARGS:-} "$out/corpus/$t" "$seeds" >"$log" 2>&1
		rc=$?
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
		last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
		cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
		ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
		corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
		desc="$t: ${execs:-?} executions, ${rate:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?} in $(($(date +%s) - t0))s"
		;;
	*)
		echo "run.sh: unknown mode $mode" >&2
		exit 2
		;;
	esac
	if [ "$rc" = 0 ]; then
		echo "ok $n $desc"
	else
		echo "not ok $n $desc (exit $rc, log $log)"
		grep -E 'ORACLE FAILED|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|SUMMARY|Test unit written' \
			"$log" | head -n 8 | sed 's/^/# /'
		fail=1
	fi
done
exit $fail
