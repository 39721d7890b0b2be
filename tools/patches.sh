#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The series that put vrnic into its upstream trees (Documentation/upstream.rst).
# Today: rdma-core's. The series is made fresh from this checkout against the
# rdma-core source `make setup` unpacked, so it never drifts from the code.
#
#   tools/patches.sh [-o DIR]          write DIR/rdma-core/*.patch (build/patches)
#   tools/patches.sh --check [-o DIR]  and apply them to a clean copy of that
#                                      source and build the provider there, as
#                                      TAP (make check runs this)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out="$VRNIC_TOP/build/patches"
check=0
while [ $# -gt 0 ]; do
	case $1 in
	-o) [ -n "${2:-}" ] || die "-o needs a directory"; out=$2; shift 2 ;;
	--check) check=1; shift ;;
	*) die "usage: tools/patches.sh [--check] [-o DIR]" ;;
	esac
done

rdma_src="$VRNIC_CACHE/rdma-core-$RDMA_CORE_SUITE/src"
[ -e "$rdma_src/libibverbs/driver.h" ] || die "no rdma-core source in $rdma_src" "make setup"
prov="$VRNIC_TOP/drivers/providers/vrnic"
# What rdma-core's tree gets of the provider: its library sources and
# headers and its CMakeLists.txt, not the out-of-tree build or host tests.
prov_files() {
	(cd "$prov" && ls -- CMakeLists.txt *.h) | grep -v '^test'
	sed -n 's/^\t\([a-z_]*\.c\)$/\1/p' "$prov/CMakeLists.txt"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The series' author and sign-off: this checkout's git identity.
who_name=$(git -C "$VRNIC_TOP" config user.name || git -C "$VRNIC_TOP" log -1 --format=%an)
who_email=$(git -C "$VRNIC_TOP" config user.email || git -C "$VRNIC_TOP" log -1 --format=%ae)
git_c() { git -C "$1" -c user.name="$who_name" -c user.email="$who_email" "${@:2}"; }

# A scratch git tree of the pristine source, for format-patch and am.
pristine() {
	mkdir -p "$1"
	cp -a "$rdma_src/." "$1/"
	git -C "$1" init -q
	git -C "$1" add -A
	git_c "$1" commit -q -m "rdma-core as unpacked by make setup"
}

# insert_after FILE LINE NEW: NEW on a line of its own after the first LINE.
insert_after() {
	local f=$1 anchor=$2 new=$3
	grep -qxF -- "$anchor" "$f" || die "$f: no line '$anchor' to add after"
	awk -v a="$anchor" -v n="$new" '{ print } $0 == a && !done { print n; done = 1 }' \
		"$f" >"$f.new" && mv "$f.new" "$f"
}

make_series() {
	local t="$work/make"
	pristine "$t"

	# 1: the uAPI header, as rdma-core carries the kernel's.
	cp "$VRNIC_TOP/uapi/rdma/vrnic-abi.h" "$t/kernel-headers/rdma/vrnic-abi.h"
	sed -i 's|^  rdma/vmw_pvrdma-abi.h$|&\n  rdma/vrnic-abi.h|' "$t/kernel-headers/CMakeLists.txt"
	[ "$(grep -c '^  rdma/vrnic-abi.h$' "$t/kernel-headers/CMakeLists.txt")" = 2 ] ||
		die "kernel-headers/CMakeLists.txt: the header lists changed shape"
	git -C "$t" add -A
	git_c "$t" commit -q -s -F - <<-'EOF'
	kernel-headers: Add the vrnic uAPI header

	rdma/vrnic-abi.h is the udata of vrnic.ko, the driver of the vrnic
	emulated RoCEv2 NIC, as its kernel series adds it.
	EOF

	# 2: the provider, with the hardware header it shares with the driver
	# and the device (synced from uapi/, checked below).
	mkdir -p "$t/providers/vrnic"
	prov_files | while read -r f; do cp "$prov/$f" "$t/providers/vrnic/$f"; done
	cp "$VRNIC_TOP/uapi/vrnic_hw_defs.h" "$t/providers/vrnic/vrnic_hw_defs.h"
	insert_after "$t/CMakeLists.txt" "add_subdirectory(providers/vmw_pvrdma)" \
		"add_subdirectory(providers/vrnic)"
	insert_after "$t/debian/control" "  - siw: A software implementation of the iWarp protocol" \
		"  - vrnic: vrnic, an emulated RoCEv2 NIC (QEMU -device vrnic)"
	printf '\nVRNIC USERSPACE PROVIDER (for vrnic.ko)\nM:\t%s <%s>\nS:\tSupported\nF:\tproviders/vrnic/\n' \
		"$who_name" "$who_email" >>"$t/MAINTAINERS"
	git -C "$t" add -A
	git_c "$t" commit -q -s -F - <<-'EOF'
	providers/vrnic: Add a provider for the vrnic emulated RoCEv2 NIC

	vrnic is a RoCEv2 RDMA NIC emulated by QEMU (-device vrnic), driven by
	vrnic.ko. The provider keeps the queues in the process's memory and
	rings the device's doorbell page directly: posting and polling make no
	system call. vrnic_hw_defs.h is the hardware interface the device, the
	kernel driver and this provider share.
	EOF

	# 3: the provider's tests, in rdma-core's pyverbs framework.
	cp "$prov/tests/test_vrnic.py" "$t/tests/test_vrnic.py"
	insert_after "$t/tests/CMakeLists.txt" "  test_tag_matching.py" "  test_vrnic.py"
	git -C "$t" add -A
	git_c "$t" commit -q -s -F - <<-'EOF'
	tests: Add vrnic provider tests

	Posting, flushes, arming, CQ resize, UD, SRQ, the ibv_wr_* and extended
	poll APIs on one vrnic device with no peer, and device memory never
	showing an earlier owner's data. They skip on any other device.
	EOF

	rm -rf "$out/rdma-core"
	mkdir -p "$out/rdma-core"
	git -C "$t" format-patch -q -o "$out/rdma-core" HEAD~3
}

# TAP: the series applies to a clean tree, its copies of the shared headers
# are this checkout's, and the provider builds there with rdma-core's CMake.
check_series() {
	local t="$work/check" b="$work/check-build" n=0 fail=0 log="$work/build.log"
	ok() { n=$((n + 1)); echo "ok $n $1"; }
	nok() { n=$((n + 1)); fail=1; echo "not ok $n $1"; }
	echo "TAP version 13"
	echo "1..5"
	pristine "$t"
	if git_c "$t" am -q "$out"/rdma-core/*.patch >"$log" 2>&1; then
		ok "rdma-core series: $(ls "$out"/rdma-core/*.patch | wc -l) patches apply to rdma-core $(sed -n 's/^set(PACKAGE_VERSION "\([^"]*\)")$/\1/p' "$t/CMakeLists.txt")"
	else
		nok "rdma-core series applies"; sed 's/^/# /' "$log"
	fi
	if cmp -s "$t/providers/vrnic/vrnic_hw_defs.h" "$VRNIC_TOP/uapi/vrnic_hw_defs.h" &&
	   cmp -s "$t/kernel-headers/rdma/vrnic-abi.h" "$VRNIC_TOP/uapi/rdma/vrnic-abi.h"; then
		ok "providers/vrnic/vrnic_hw_defs.h and kernel-headers/rdma/vrnic-abi.h are uapi/'s"
	else
		nok "the series' shared headers differ from uapi/"
	fi
	if cmake -S "$t" -B "$b" -G Ninja -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 \
		-DENABLE_WERROR=1 >"$log" 2>&1 &&
	   ninja -C "$b" "vrnic-rdmav$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")$/\1/p' "$t/CMakeLists.txt")" >>"$log" 2>&1; then
		ok "rdma-core's CMake builds the vrnic provider (ENABLE_WERROR)"
	else
		nok "rdma-core's CMake builds the vrnic provider"; tail -n 30 "$log" | sed 's/^/# /'
	fi
	local so
	so=$(ls "$b"/lib/libvrnic-rdmav*.so 2>/dev/null | head -n 1 || true)
	if [ -n "$so" ] && LD_LIBRARY_PATH="$b/lib" python3 -c \
		'import ctypes, os, sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)' "$so" \
		>"$log" 2>&1; then
		ok "$(basename "$so") loads (RTLD_NOW) with that tree's libibverbs"
	else
		nok "the built provider loads"; sed 's/^/# /' "$log"
	fi
	# The guest runs the same file with rdma-core 44's suite (make check).
	if grep -qx '  test_vrnic.py' "$t/tests/CMakeLists.txt" &&
	   python3 -m py_compile "$t/tests/test_vrnic.py" >"$log" 2>&1; then
		ok "tests/test_vrnic.py is listed in tests/CMakeLists.txt and compiles"
	else
		nok "tests/test_vrnic.py in rdma-core's tests"; sed 's/^/# /' "$log"
	fi
	return $fail
}

make_series
if [ "$check" = 1 ]; then
	check_series
else
	info "rdma-core series: $out/rdma-core/"
fi
