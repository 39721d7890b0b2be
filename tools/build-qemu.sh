#!/usr/bin/env bash
# Configure (once) and build qemu-system-x86_64 with the vrnic device from
# this clone: QEMU's tree with the vrnic series applied (tools/qemu-tree.sh).
# The source tree and build directory are cached in VRNIC_CACHE; only
# changed files are recompiled.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

d=$(qemu_dir)
src="$d/src"
build="$d/build"
git -C "$src" rev-parse -q --verify "refs/tags/$QEMU_BASE_TAG" >/dev/null ||
	die "no QEMU source repository in $src" "make setup"

exec 9>"$d/.build.lock"
flock 9

# The tree QEMU is built from: the release, the vrnic series, the harness's
# changes (tools/qemu-tree.sh).
step "QEMU $QEMU_VERSION: the vrnic series (build/patches/qemu/) checked out in $src"
"$VRNIC_TOP/tools/qemu-tree.sh"

export CCACHE_DIR="$VRNIC_CACHE/ccache"
if [ ! -e "$build/.vrnic-configured" ]; then
	step "QEMU $QEMU_VERSION: configure (x86_64-softmmu, TCG, virtfs)"
	rm -rf "$build"
	mkdir -p "$build"
	(cd "$build" && "$src/configure" \
		--target-list=x86_64-softmmu \
		--without-default-features \
		--enable-tcg --enable-kvm --enable-pixman --enable-attr --enable-virtfs \
		--disable-docs --disable-user --disable-tools --disable-fdt \
		--disable-install-blobs \
		--python=/usr/bin/python3 --disable-download \
		>configure.log 2>&1) ||
		die "QEMU configure (see $build/configure.log)" "rm -rf $build && make qemu"
	touch "$build/.vrnic-configured"
fi
step "QEMU $QEMU_VERSION: building qemu-system-x86_64 (first build ~10-15 min on 2 cores)"
ninja -C "$build" qemu-system-x86_64 2>&1 | tee "$build/build.log" |
	awk '/^\[[0-9]+\/[0-9]+\]/ { n++; if (n % 200 == 0) { print "    " $1; fflush() } next } { print; fflush() }'
[ "${PIPESTATUS[0]}" = 0 ] || die "QEMU build (see $build/build.log)" "make qemu"
# Warnings are errors in our code (QEMU itself builds without -Werror from a
# release tarball). Drop the objects so the next build recompiles and fails
# again until the warning is fixed.
if grep -q 'hw/net/vrnic/.*warning:' "$build/build.log"; then
	grep 'hw/net/vrnic/.*warning:' "$build/build.log" >&2
	find "$build" -name '*hw_net_vrnic_*.o' -delete
	die "warnings in qemu-device/ (treated as errors)" "fix them, then: make qemu"
fi
mkdir -p "$VRNIC_TOP/build"
ln -sfn "$build/qemu-system-x86_64" "$VRNIC_TOP/build/qemu-system-x86_64"
info "QEMU: $VRNIC_TOP/build/qemu-system-x86_64"

# QEMU's qtest binary with vrnic's tests in it (tools/qtest.sh runs them).
step "QEMU $QEMU_VERSION: building the qtest binary (tests/qtest/qos-test)"
ninja -C "$build" tests/qtest/qos-test >"$build/qtest-build.log" 2>&1 ||
	die "qtest build (see $build/qtest-build.log)" "make qemu"
if grep -q 'tests/qtest/\(libqos/\)\?vrnic[^ ]*: warning:' "$build/qtest-build.log"; then
	grep 'tests/qtest/\(libqos/\)\?vrnic[^ ]*: warning:' "$build/qtest-build.log" >&2
	find "$build/tests/qtest" -name '*vrnic*.o' -delete
	die "warnings in qemu-device/qtest/ (treated as errors)" "fix them, then: make qemu"
fi
ln -sfn "$build/tests/qtest/qos-test" "$VRNIC_TOP/build/qos-test"
info "qtest: $VRNIC_TOP/build/qos-test"
