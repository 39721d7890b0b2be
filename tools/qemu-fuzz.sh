#!/usr/bin/env bash
# QEMU's generic-fuzz target for vrnic (libFuzzer, clang, AddressSanitizer),
# in its own build directory beside the cached QEMU build. Not part of
# make check: the build is a second full QEMU build (see
# Documentation/qtest.rst for its cost and the figures measured).
# usage: tools/qemu-fuzz.sh build       configure (once) and build
#        tools/qemu-fuzz.sh run SECONDS [LIBFUZZER_ARGS...]
#        tools/qemu-fuzz.sh all SECONDS  build, then run
# Environment: VRNIC_FUZZ_JOBS (ninja -j, default 2), VRNIC_FUZZ_OUT (corpus,
# crashes and the log; default build/qemu-fuzz in this clone; build/fuzz
# belongs to the core fuzzers of make fuzz).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

d=$(qemu_dir)
src="$d/src"
fbuild="$d/build-fuzz"
jobs=${VRNIC_FUZZ_JOBS:-2}
out=${VRNIC_FUZZ_OUT:-$VRNIC_TOP/build/qemu-fuzz}
target=generic-fuzz-vrnic
bin="$fbuild/qemu-fuzz-x86_64-target-$target"

build() {
	git -C "$src" rev-parse -q --verify "refs/tags/$QEMU_BASE_TAG" >/dev/null ||
		die "no QEMU source repository in $src" "make setup"
	command -v clang >/dev/null || die "no clang" "apt-get install clang"
	exec 8>"$d/.fuzz-build.lock"
	flock 8
	# The machine is shared: never two QEMU builds at once. Start only when
	# no other ninja runs (tools/build-qemu.sh's builds included).
	while pgrep -x ninja >/dev/null; do
		info "another ninja is running ($(pgrep -x ninja | tr '\n' ' ')): waiting"
		sleep 60
	done
	# The tree is checked out under the main build's lock, as
	# tools/build-qemu.sh does.
	(
		flock 9
		"$VRNIC_TOP/tools/qemu-tree.sh"
	) 9>"$d/.build.lock"

	export CCACHE_DIR="$VRNIC_CACHE/ccache"
	if [ ! -e "$fbuild/.vrnic-configured" ]; then
		step "QEMU $QEMU_VERSION: configure the fuzzing build (clang, libFuzzer, ASan)"
		rm -rf "$fbuild"
		mkdir -p "$fbuild"
		# qtest is the only accelerator the fuzzer uses: KVM (cheap to build)
		# keeps x86_64-softmmu buildable without TCG.
		(cd "$fbuild" && CC=clang CXX=clang++ "$src/configure" \
			--cc=clang --cxx=clang++ \
			--target-list=x86_64-softmmu \
			--without-default-features \
			--enable-kvm --disable-tcg --enable-pixman \
			--enable-fuzzing --enable-asan \
			--disable-docs --disable-user --disable-tools --disable-fdt \
			--disable-install-blobs \
			--python=/usr/bin/python3 --disable-download \
			>configure.log 2>&1) ||
			die "fuzz configure (see $fbuild/configure.log)" "rm -rf $fbuild && $0 build"
		touch "$fbuild/.vrnic-configured"
	fi
	step "QEMU $QEMU_VERSION: building qemu-fuzz-x86_64 (ninja -j$jobs; a full build: tens of minutes)"
	local t0=$SECONDS
	ninja -C "$fbuild" -j"$jobs" qemu-fuzz-x86_64 >"$fbuild/build.log" 2>&1 ||
		die "fuzz build (see $fbuild/build.log)" "$0 build"
	info "built in $((SECONDS - t0)) s"
	# The fuzzer takes its target from the binary's name (fuzz.c).
	ln -sfn qemu-fuzz-x86_64 "$bin"
	# The +ds source has no firmware: QEMU in the build tree looks in
	# qemu-bundle/<datadir> (util/cutils.c get_relocated_path).
	local data="$fbuild/qemu-bundle/usr/local/share/qemu" f dir
	mkdir -p "$data"
	for dir in /usr/share/seabios /usr/share/qemu /usr/lib/ipxe/qemu; do
		[ -d "$dir" ] || continue
		for f in "$dir"/*; do
			[ -e "$data/${f##*/}" ] || ln -s "$f" "$data/${f##*/}"
		done
	done
	info "fuzzer: $bin"
}

run() {
	local secs=${1:?usage: $0 run SECONDS [LIBFUZZER_ARGS...]}
	shift
	[ -x "$bin" ] || die "no $bin" "$0 build"
	mkdir -p "$out/corpus" "$out/crashes"
	step "fuzzing $target for $secs s (corpus $out/corpus, crashes $out/crashes)"
	# -close_fd_mask=2: QEMU's guest-error lines would drown libFuzzer's own.
	(cd "$out" && ASAN_OPTIONS=detect_leaks=0 "$bin" -max_total_time="$secs" \
		-artifact_prefix="$out/crashes/" -print_final_stats=1 \
		-close_fd_mask=2 "$@" "$out/corpus") 2>&1 | tee "$out/fuzz.log" |
		grep -E '^#[0-9]+.*(pulse|DONE)|^stat::|^==[0-9]+==ERROR|SUMMARY|artifact|MemoryRegions|^  \* '
	local rc=${PIPESTATUS[0]}
	info "crashes: $(find "$out/crashes" -type f | wc -l) (files in $out/crashes)"
	return "$rc"
}

case ${1:-} in
build) build ;;
run) shift; run "$@" ;;
all) shift; build; run "$@" ;;
*) echo "usage: $0 build | run SECONDS [ARGS...] | all SECONDS" >&2; exit 2 ;;
esac
