#!/usr/bin/env bash
# make fuzz-corpus: regenerate the checked-in seeds of every fuzz target.
# SPDX-License-Identifier: GPL-2.0-or-later
#
#   make-corpus.sh OUT PCAP
# 1. OUT/gen-corpus writes the generated seeds (gen_corpus.c) and those of
#    the capture PCAP (skipped when it is missing: a CI clone has no
#    ../shared); 2. every unit test runs once with the recorder
#    (OUT/rec/test_*, record.c); 3. each target keeps, of all these, the
#    inputs that add coverage (libFuzzer -merge=1), under their original
#    names, in qemu-device/fuzz/corpus/<target>.
set -euo pipefail
out=$1 pcap=$2
dir=$(cd "$(dirname "$0")" && pwd)
raw=$out/seeds-raw
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:detect_leaks=1}

rm -rf "$raw" "$out/seeds-merged"
mkdir -p "$raw"
"$out/gen-corpus" "$raw" "$pcap"
for rec in "$out"/rec/test_*; do
	# A failing unit test still records what it did.
	FUZZ_RECORD_DIR=$raw "$rec" >/dev/null 2>&1 || true
done
for t in fuzz_admin fuzz_wqe fuzz_rx; do
	merged=$out/seeds-merged/$t
	mkdir -p "$merged" "$raw/$t"
	"$out/$t" -merge=1 -timeout=25 "$merged" "$raw/$t" >"$out/merge-$t.log" 2>&1 || {
		echo "make-corpus: merging $t failed, see $out/merge-$t.log" >&2
		exit 1
	}
	# libFuzzer names what it keeps by SHA-1: keep the readable names.
	declare -A keep=()
	for f in "$merged"/*; do
		[ -e "$f" ] && keep[$(basename "$f")]=1
	done
	rm -rf "${dir:?}/corpus/$t"
	mkdir -p "$dir/corpus/$t"
	for f in "$raw/$t"/*; do
		h=$(sha1sum "$f" | cut -d' ' -f1)
		if [ -n "${keep[$h]:-}" ]; then
			# Recorded seeds are named <test>-<pid>: name them by
			# content instead, so that a regeneration only changes
			# what changed.
			name=$(basename "$f")
			case $name in
			test_*-[0-9]*) name=${name%-*}-${h:0:8} ;;
			esac
			cp "$f" "$dir/corpus/$t/$name"
			unset "keep[$h]"
		fi
	done
	unset keep
	echo "make-corpus: $t: $(ls "$dir/corpus/$t" | wc -l) seeds of $(ls "$raw/$t" | wc -l)," \
		"$(du -sk "$dir/corpus/$t" | cut -f1) KiB"
done
