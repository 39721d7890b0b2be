#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The series that put vrnic into its upstream trees (Documentation/upstream.rst):
# rdma-core's, QEMU's and Linux's. Each is made fresh from this checkout against the
# source `make setup` unpacked, so it never drifts from the code.
#
#   tools/patches.sh [-o DIR] [TREE...]          write DIR/TREE/*.patch
#                                                (build/patches; TREE: rdma-core
#                                                qemu linux; default all three)
#   tools/patches.sh --check [-o DIR] [TREE...]  and check each series in its
#                                                tree, as TAP (make check)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out="$VRNIC_TOP/build/patches"
check=0
trees=()
while [ $# -gt 0 ]; do
	case $1 in
	-o) [ -n "${2:-}" ] || die "-o needs a directory"; out=$2; shift 2 ;;
	--check) check=1; shift ;;
	rdma-core | qemu | linux) trees+=("$1"); shift ;;
	*) die "usage: tools/patches.sh [--check] [-o DIR] [rdma-core|qemu|linux]..." ;;
	esac
done
[ ${#trees[@]} -gt 0 ] || trees=(rdma-core qemu linux)

rdma_src="$VRNIC_CACHE/rdma-core-$RDMA_CORE_SUITE/src"
qemu_src="$(qemu_dir)/src"
prov="$VRNIC_TOP/drivers/providers/vrnic"
# What rdma-core's tree gets of the provider: its library sources and
# headers and its CMakeLists.txt, not the out-of-tree build or host tests.
prov_files() {
	(cd "$prov" && ls -- CMakeLists.txt *.h) | grep -v '^test'
	sed -n 's/^\t\([a-z_]*\.c\)$/\1/p' "$prov/CMakeLists.txt"
}

work=$(mktemp -d)
trap 'rm -rf "$work"; git -C "$qemu_src" worktree prune 2>/dev/null || true' EXIT
# The series' author and sign-off: this checkout's git identity.
git_identity
git_c() { git -C "$1" -c user.name="$who_name" -c user.email="$who_email" "${@:2}"; }

# A scratch git tree of the pristine rdma-core source, for format-patch and am.
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
	case $anchor in *$'\n'*) die "insert_after: '$anchor' is more than one line" ;; esac
	grep -qxF -- "$anchor" "$f" || die "$f: no line '$anchor' to add after"
	awk -v a="$anchor" -v n="$new" '{ print } $0 == a && !done { print n; done = 1 }' \
		"$f" >"$f.new" && mv "$f.new" "$f"
}

# insert_before FILE LINE NEW: NEW before the first LINE.
insert_before() {
	local f=$1 anchor=$2 new=$3
	case $anchor in *$'\n'*) die "insert_before: '$anchor' is more than one line" ;; esac
	grep -qxF -- "$anchor" "$f" || die "$f: no line '$anchor' to add before"
	awk -v a="$anchor" -v n="$new" '$0 == a && !done { print n; done = 1 } { print }' \
		"$f" >"$f.new" && mv "$f.new" "$f"
}

make_rdma_core_series() {
	local t="$work/make"
	[ -e "$rdma_src/libibverbs/driver.h" ] || die "no rdma-core source in $rdma_src" "make setup"
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
check_rdma_core_series() {
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


# ---- series made with git plumbing: QEMU's and Linux's ---------------------
# A series is made in a private index on a cached repository (its release
# commit): no file of the source tree is written. ser_src is the
# repository, ser_parent the commit the next one goes on.
ser_src=
ser_parent=
ser() { GIT_INDEX_FILE="$work/series.index" git -C "$ser_src" "$@"; }
# ser_start REPO BASE: a series on BASE of REPO.
ser_start() {
	ser_src=$1
	ser_parent=$2
	ser read-tree "$2"
}
# ser_put PATH FILE: PATH in the next commit has FILE's content.
ser_put() {
	local mode=100644
	[ -x "$2" ] && mode=100755
	ser update-index --add --cacheinfo "$mode,$(ser hash-object -w -- "$2"),$1"
}
# ser_insert PATH ANCHOR NEW: NEW (one or more lines) after PATH's first line ANCHOR.
ser_insert() {
	local f="$work/series-edit"
	ser show "$ser_parent:$1" >"$f"
	insert_after "$f" "$2" "$3"
	ser_put "$1" "$f"
}
# ser_insert_before PATH ANCHOR NEW: NEW before PATH's first line ANCHOR.
ser_insert_before() {
	local f="$work/series-edit"
	ser show "$ser_parent:$1" >"$f"
	insert_before "$f" "$2" "$3"
	ser_put "$1" "$f"
}
# ser_commit: commit the index on ser_parent, message on stdin, signed off.
ser_commit() {
	local msg="$work/series-msg" tree
	{ cat; printf '\nSigned-off-by: %s <%s>\n' "$who_name" "$who_email"; } >"$msg"
	tree=$(ser write-tree)
	ser_parent=$(GIT_AUTHOR_NAME=$who_name GIT_AUTHOR_EMAIL=$who_email \
		GIT_COMMITTER_NAME=$who_name GIT_COMMITTER_EMAIL=$who_email \
		ser commit-tree "$tree" -p "$ser_parent" -F "$msg")
}

# ---- QEMU -------------------------------------------------------------------
# refs/vrnic/series names the QEMU series' last commit, from which
# tools/qemu-tree.sh makes the tree QEMU is built from.

# What QEMU's hw/net/vrnic/ gets: the device (not its host tests, fuzzers
# or qtests, which have their own places) and the hardware header.
qemu_device_files() {
	(cd "$VRNIC_TOP/qemu-device" && ls -- *.c *.h meson.build trace-events)
}

# The hardware header's place in QEMU: where its update-linux-headers.sh
# puts headers of Linux drivers (include/standard-headers/<the driver's path>).
qemu_hw_defs=include/standard-headers/drivers/net/ethernet/vrnic/vrnic_hw_defs.h
# The header as update-linux-headers.sh's cp_portable converts one: fixed-width
# C types for the kernel's, standard-headers/linux/types.h for its includes.
qemu_portable_header() {
	awk '/^#ifdef __KERNEL__$/ && !done { skip = 1; next }
	     skip && /^#endif$/ { skip = 0; done = 1
	                          print "#include \"standard-headers/linux/types.h\""; next }
	     !skip' "$1" |
		sed -e 's/__u\([0-9][0-9]*\)/uint\1_t/g' -e 's/__s\([0-9][0-9]*\)/int\1_t/g' \
		    -e 's/__le\([0-9][0-9]*\)/uint\1_t/g' -e 's/__be\([0-9][0-9]*\)/uint\1_t/g'
}

make_qemu_series() {
	local dev="$VRNIC_TOP/qemu-device" f base
	git -C "$qemu_src" rev-parse -q --verify "refs/tags/$QEMU_BASE_TAG" >/dev/null ||
		die "no QEMU repository with tag $QEMU_BASE_TAG in $qemu_src" "make setup"
	base=$(git -C "$qemu_src" rev-parse "refs/tags/$QEMU_BASE_TAG^{commit}")
	ser_start "$qemu_src" "$base"

	# 1: the hardware header, as QEMU imports headers it shares with Linux.
	qemu_portable_header "$VRNIC_TOP/uapi/vrnic_hw_defs.h" >"$work/qemu-hw-defs.h"
	ser_put "$qemu_hw_defs" "$work/qemu-hw-defs.h"
	ser_commit <<-'MSG'
	standard-headers: Add the vrnic hardware interface

	vrnic_hw_defs.h defines the vrnic device's registers, admin commands,
	rings and completions once, for the device model, its Linux driver
	(drivers/net/ethernet/vrnic/ in the vrnic kernel series) and its
	rdma-core provider. It is that header with the portable types
	scripts/update-linux-headers.sh gives imported headers, until the
	script can import it from Linux.
	MSG

	# 2: the device.
	for f in $(qemu_device_files); do
		ser_put "hw/net/vrnic/$f" "$dev/$f"
	done
	ser_insert_before hw/net/Kconfig "config RTL8139_PCI" "$(cat "$dev/Kconfig")
"
	ser_insert hw/net/meson.build "subdir('can')" "subdir('vrnic')"
	ser_insert meson.build "    'hw/net/can'," "    'hw/net/vrnic',"
	ser_insert_before MAINTAINERS "eepro100" "vrnic
M: $who_name <$who_email>
S: Maintained
F: hw/net/vrnic/
"
	ser_commit <<-'MSG'
	hw/net/vrnic: Add vrnic, an emulated RoCEv2 RDMA NIC

	vrnic is a PCIe RDMA NIC that speaks RoCEv2 on any netdev: RC, UC and
	UD transport, an admin queue, event and completion queues in guest
	memory, memory regions and windows translated with key, PD and access
	checks, MSI-X. The transport runs in QEMU, so guests get RDMA without
	an RDMA NIC on the host, and the wire is plain RoCEv2 that Linux's
	rdma_rxe and Wireshark understand.

	vrnic.c is the QOM and PCI glue; the device itself is a core
	(vrnic_core.c and the files it calls) that sees guest memory and the
	wire only through a small bus interface, so it is unit tested and
	fuzzed outside QEMU.
	MSG

	# 3: qtests and the libqos driver.
	ser_put tests/qtest/vrnic-test.c "$dev/qtest/vrnic-test.c"
	ser_put tests/qtest/libqos/vrnic.c "$dev/qtest/libqos/vrnic.c"
	ser_put tests/qtest/libqos/vrnic.h "$dev/qtest/libqos/vrnic.h"
	ser_insert tests/qtest/libqos/meson.build "        'virtio-net.c'," "        'vrnic.c',"
	# After the CONFIG_IP_OCTAL_232 block, one of the same shape.
	ser_insert tests/qtest/meson.build "  qos_test_ss.add(files('ipoctal232-test.c'))" "endif
if config_all_devices.has_key('CONFIG_VRNIC')
  qos_test_ss.add(files('vrnic-test.c'))"
	ser_insert MAINTAINERS "F: hw/net/vrnic/" "F: tests/qtest/vrnic-test.c
F: tests/qtest/libqos/vrnic.*"
	ser_commit <<-'MSG'
	tests/qtest: Add vrnic tests and a libqos driver

	The libqos driver brings the device up as its driver does: reset,
	admin queue, async event queue, MSI-X. The qgraph tests check the
	identity and BARs, the clock page, the admin queue, MSI-X, the async
	event queue and the Ethernet rings, several also with an IOThread.
	q35 tests put the device behind a pcie-root-port: DMA aimed at the
	port's configuration space, DMA to ROM from an IOThread, and unplug
	with frames still queued in the netdev.
	MSG

	# 4: generic-fuzz.
	ser_insert tests/qtest/fuzz/generic_fuzz_configs.h '        .objects = "igb",' '    },{
        .name = "vrnic",
        .args = "-M q35 -nodefaults -device vrnic",
        .objects = "vrnic*",'
	ser_commit <<-'MSG'
	tests/qtest/fuzz: Add a generic-fuzz target for vrnic

	Without a netdev the device drops what it transmits, so the fuzzer
	exercises the registers, doorbells, admin queue and DMA paths.
	MSG

	# 5: documentation.
	ser_put docs/system/devices/vrnic.rst "$dev/docs/vrnic.rst"
	ser_insert docs/system/device-emulation.rst "   devices/igb.rst" "   devices/vrnic.rst"
	ser_insert_before MAINTAINERS "F: hw/net/vrnic/" "F: docs/system/devices/vrnic.rst"
	ser_commit <<-'MSG'
	docs/system: Document the vrnic device

	What the device is, how to connect two guests over one wire, its
	properties, and how to trace and test it.
	MSG

	git -C "$qemu_src" update-ref refs/vrnic/series "$ser_parent"
	rm -rf "$out/qemu"
	mkdir -p "$out/qemu"
	git -C "$qemu_src" format-patch -q -o "$out/qemu" "$base..$ser_parent"
}

# The steps ninja takes to bring the QEMU build up to date: none but the
# always-run qemu-version.h (its dependants only when it changed) if the
# tree checked out has been built. Under the build lock, like make qemu.
qemu_build_steps() {
	(
		flock 9
		ninja -C "$1" qemu-system-x86_64 tests/qtest/qos-test 2>&1 | grep '^\[[0-9]*/[0-9]*\] '
	) 9>"$(qemu_dir)/.build.lock"
}

# TAP: the series applies to QEMU as released with git am, its copy of the
# hardware header is this checkout's, QEMU's checkpatch passes it, its
# documentation parses, and the QEMU make check runs is built from it.
check_qemu_series() {
	local t="$work/qemu-check" log="$work/qemu-check.log" n=0 fail=0 p e w build
	build="$(qemu_dir)/build"
	ok() { n=$((n + 1)); echo "ok $n $1"; }
	nok() { n=$((n + 1)); fail=1; echo "not ok $n $1"; }
	echo "TAP version 13"
	echo "1..6"
	git -C "$qemu_src" worktree add -q --detach "$t" "$QEMU_BASE_TAG"
	if git_c "$t" am -q "$out"/qemu/*.patch >"$log" 2>&1; then
		ok "QEMU series: $(ls "$out"/qemu/*.patch | wc -l) patches apply to QEMU $QEMU_VERSION (git am)"
	else
		nok "QEMU series applies"; sed 's/^/# /' "$log"
	fi
	if qemu_portable_header "$VRNIC_TOP/uapi/vrnic_hw_defs.h" | cmp -s - "$t/$qemu_hw_defs"; then
		ok "$qemu_hw_defs is uapi/vrnic_hw_defs.h with portable types"
	else
		nok "the series' $qemu_hw_defs is not uapi/vrnic_hw_defs.h's"
	fi
	# "total: E errors, W warnings, L lines checked", one per patch. A patch
	# adding to include/standard-headers/ gets two reminders: to update
	# MAINTAINERS (standard-headers/ has its own entry) and to use
	# update-linux-headers.sh (which cannot import this header yet).
	: >"$log"
	for p in "$out"/qemu/*.patch; do
		(cd "$t" && perl scripts/checkpatch.pl "$p") >"$log.1" 2>&1 || true
		if grep -q "^+++ b/include/standard-headers/" "$p"; then
			grep -v -e '^WARNING: added, moved or deleted file(s), does MAINTAINERS need updating?' \
				-e '^WARNING: added, moved or deleted file(s) imported from Linux, are you using' \
				"$log.1" | awk '/^total: / { $4 = $4 - 2 "," } { print }'
		else
			cat "$log.1"
		fi >>"$log"
	done
	e=$(awk '/^total: / { e += $2 } END { print e + 0 }' "$log")
	w=$(awk '/^total: / { w += $4 } END { print w + 0 }' "$log")
	if [ "$(grep -c '^total: ' "$log")" = "$(ls "$out"/qemu/*.patch | wc -l)" ] &&
	   [ "$e" = 0 ] && [ "$w" = 0 ]; then
		ok "QEMU's scripts/checkpatch.pl: 0 errors, 0 warnings (but the imported header's two reminders)"
	else
		nok "QEMU's scripts/checkpatch.pl: ${e:-?} errors, ${w:-?} warnings"
		grep -E '^(ERROR|WARNING|#)' "$log" | head -n 40 | sed 's/^/# /'
	fi
	if python3 -c 'import docutils.core, sys
docutils.core.publish_doctree(open(sys.argv[1]).read(), source_path=sys.argv[1],
                              settings_overrides={"halt_level": 2, "report_level": 2})' \
		"$t/docs/system/devices/vrnic.rst" >"$log" 2>&1 &&
	   grep -qx '   devices/vrnic.rst' "$t/docs/system/device-emulation.rst"; then
		ok "docs/system/devices/vrnic.rst parses and is in the device toctree"
	else
		nok "docs/system/devices/vrnic.rst"; sed 's/^/# /' "$log"
	fi
	# tools/qemu-tree.sh recorded the series it checked out for the build.
	if [ "$(git -C "$t" rev-parse 'HEAD^{tree}')" = \
	     "$(git -C "$qemu_src" rev-parse -q --verify 'refs/vrnic/built-series^{tree}' || true)" ] &&
	   [ "$(git -C "$qemu_src" rev-parse HEAD)" = \
	     "$(git -C "$qemu_src" rev-parse -q --verify refs/vrnic/build || true)" ] &&
	   [ -z "$(git -C "$qemu_src" status --porcelain --untracked-files=no)" ] &&
	   ! qemu_build_steps "$build" | grep -v '^\[[0-9]*/[0-9]*\] Generating qemu-version.h ' | grep -q .; then
		ok "the QEMU make check runs is built from this series (and the harness's changes)"
	else
		nok "the QEMU in $build is not built from this series: make qemu"
	fi
	if "$build/qemu-system-x86_64" -device help 2>&1 | grep -q '^name "vrnic", bus PCI'; then
		ok "qemu-system-x86_64 -device help lists vrnic"
	else
		nok "qemu-system-x86_64 has no vrnic device"
	fi
	git -C "$qemu_src" worktree remove --force "$t"
	return $fail
}

# ---- Linux ------------------------------------------------------------------
# The two drivers for Debian's linux-source-6.12 (tools/setup-sources.sh
# keeps it as a git repository); refs/vrnic/linux-series names the last
# commit. The hardware header goes beside the Ethernet driver, which owns
# the function; the RDMA driver finds it there, as ionic's does.
linux_src="$(linux_tree_dir)/src"
net_dir=drivers/net/ethernet/vrnic
ib_dir=drivers/infiniband/hw/vrnic

# linux_makefile DIR CONFIG: DIR's in-tree Makefile from its Kbuild, whose
# object list it copies; the out-of-tree include paths become in-tree ones.
linux_makefile() {
	local dir=$1 config=$2 mod
	mod=$(sed -n 's/^obj-m += \(.*\)\.o$/\1/p' "$VRNIC_TOP/$dir/Kbuild")
	[ -n "$mod" ] || die "$dir/Kbuild: no obj-m line"
	printf '# SPDX-License-Identifier: GPL-2.0\n'
	if [ "$dir" = "$ib_dir" ]; then
		printf '\nccflags-y := -I $(srctree)/%s\n' "$net_dir"
	fi
	printf '\nobj-$(CONFIG_%s) += %s.o\n\n' "$config" "$mod"
	sed -n "/^$mod-y :=/,\$p" "$VRNIC_TOP/$dir/Kbuild"
}

linux_put_dir() {
	local dir=$1 config=$2 f
	for f in $(git -C "$VRNIC_TOP/$dir" ls-files -- '*.c' '*.h' Kconfig); do
		ser_put "$dir/$f" "$VRNIC_TOP/$dir/$f"
	done
	linux_makefile "$dir" "$config" >"$work/linux-makefile"
	ser_put "$dir/Makefile" "$work/linux-makefile"
}

make_linux_series() {
	local base
	git -C "$linux_src" rev-parse -q --verify "refs/tags/$LINUX_BASE_TAG" >/dev/null ||
		die "no Linux repository with tag $LINUX_BASE_TAG in $linux_src" "make setup"
	base=$(git -C "$linux_src" rev-parse "refs/tags/$LINUX_BASE_TAG^{commit}")
	ser_start "$linux_src" "$base"

	# 1: the Ethernet driver, with the hardware header.
	linux_put_dir "$net_dir" VRNIC
	ser_put "$net_dir/vrnic_hw_defs.h" "$VRNIC_TOP/uapi/vrnic_hw_defs.h"
	ser_insert drivers/net/ethernet/Kconfig 'source "drivers/net/ethernet/via/Kconfig"' \
		'source "drivers/net/ethernet/vrnic/Kconfig"'
	ser_insert drivers/net/ethernet/Makefile 'obj-$(CONFIG_NET_VENDOR_VIA) += via/' \
		'obj-$(CONFIG_VRNIC) += vrnic/'
	ser_insert_before MAINTAINERS "VSPRINTF" "VRNIC EMULATED ROCEV2 NIC DRIVERS
M:	$who_name <$who_email>
L:	netdev@vger.kernel.org
L:	linux-rdma@vger.kernel.org
S:	Maintained
F:	$net_dir/
"
	ser_commit <<-'MSG'
	net: vrnic: Add a driver for the vrnic emulated RoCEv2 NIC

	vrnic is a PCIe RoCEv2 RDMA NIC that QEMU emulates (-device vrnic),
	so that RDMA software can run and be tested in guests without an
	RDMA NIC on the host. Its Ethernet function is a simple NIC: one TX
	and one RX ring, one MSI-X vector, NAPI.

	This driver owns the PCI function: it resets the device, runs the
	admin queue and the async event queue, keeps the link and port
	state, registers the net_device and then an auxiliary device,
	vrnic.rdma, for the RDMA driver, deleting it before the net_device
	goes. vrnic_api.h is what the RDMA driver uses: the admin queue, the
	async events of its objects and the port's state.

	vrnic_hw_defs.h defines the device's interface once, for this driver,
	the RDMA driver, the rdma-core provider and the device model.
	MSG

	# 2: the uAPI of the RDMA driver.
	ser_put include/uapi/rdma/vrnic-abi.h "$VRNIC_TOP/uapi/rdma/vrnic-abi.h"
	ser_insert MAINTAINERS "F:	$net_dir/" "F:	include/uapi/rdma/vrnic-abi.h"
	ser_commit <<-'MSG'
	RDMA/vrnic: Add the vrnic uAPI

	The udata of the vrnic RDMA driver's verbs, which its rdma-core
	provider shares: the queues live in the process's memory and the
	process rings the device's doorbell page directly.
	MSG

	# 3: the RDMA driver.
	linux_put_dir "$ib_dir" INFINIBAND_VRNIC
	ser_insert drivers/infiniband/Kconfig 'source "drivers/infiniband/hw/vmw_pvrdma/Kconfig"' \
		'source "drivers/infiniband/hw/vrnic/Kconfig"'
	ser_insert drivers/infiniband/hw/Makefile 'obj-$(CONFIG_INFINIBAND_VMWARE_PVRDMA)	+= vmw_pvrdma/' \
		'obj-$(CONFIG_INFINIBAND_VRNIC)		+= vrnic/'
	ser_insert_before MAINTAINERS "F:	$net_dir/" "F:	$ib_dir/"
	ser_commit <<-'MSG'
	RDMA/vrnic: Add the vrnic RDMA driver

	An auxiliary driver for the vrnic.rdma device of the vrnic Ethernet
	driver: it registers a RoCEv2 ib_device on that driver's net_device
	with RC, UC, UD, XRC and raw packet QPs, SRQs, memory regions and
	windows (also fast registration, dma-buf and on-demand paging),
	device memory, flow steering, RSS and hardware statistics. The
	kernel's queues are in its memory; a process's are in the process's,
	for the rdma-core provider's kernel-bypass data path.
	MSG

	git -C "$linux_src" update-ref refs/vrnic/linux-series "$ser_parent"
	rm -rf "$out/linux"
	mkdir -p "$out/linux"
	git -C "$linux_src" format-patch -q -o "$out/linux" "$base..$ser_parent"
}

# TAP: the series applies to Debian's linux-source-6.12, its copies of the
# shared headers are this checkout's, checkpatch --strict passes it, its
# Kconfig options exist, and both drivers build in the tree with W=1.
check_linux_series() {
	local log="$work/linux-check.log" n=0 fail=0 p e w c d build tree kconfig
	d=$(linux_tree_dir)
	kconfig="/usr/src/linux-headers-$(guest_kernel_release)/.config"
	build="$d/build"
	ok() { n=$((n + 1)); echo "ok $n $1"; }
	nok() { n=$((n + 1)); fail=1; echo "not ok $n $1"; }
	echo "TAP version 13"
	echo "1..5"
	# Applied with git apply to an index of the release, no checkout.
	GIT_INDEX_FILE="$work/linux-apply.index" git -C "$linux_src" read-tree "$LINUX_BASE_TAG"
	if for p in "$out"/linux/*.patch; do
		GIT_INDEX_FILE="$work/linux-apply.index" git -C "$linux_src" apply --cached "$p" || exit 1
	   done >"$log" 2>&1 &&
	   tree=$(GIT_INDEX_FILE="$work/linux-apply.index" git -C "$linux_src" write-tree) &&
	   [ "$tree" = "$(git -C "$linux_src" rev-parse 'refs/vrnic/linux-series^{tree}')" ]; then
		ok "Linux series: $(ls "$out"/linux/*.patch | wc -l) patches apply to linux-source-$KERNEL_SERIES $(dpkg-query -W -f='${Version}' "linux-source-$KERNEL_SERIES")"
	else
		nok "Linux series applies"; sed 's/^/# /' "$log"
	fi
	if cmp -s <(git -C "$linux_src" show "refs/vrnic/linux-series:$net_dir/vrnic_hw_defs.h") \
		"$VRNIC_TOP/uapi/vrnic_hw_defs.h" &&
	   cmp -s <(git -C "$linux_src" show refs/vrnic/linux-series:include/uapi/rdma/vrnic-abi.h) \
		"$VRNIC_TOP/uapi/rdma/vrnic-abi.h"; then
		ok "$net_dir/vrnic_hw_defs.h and include/uapi/rdma/vrnic-abi.h are uapi/'s"
	else
		nok "the series' shared headers differ from uapi/"
	fi
	# MACRO_ARG_REUSE as make checkpatch: the field macros read their mask
	# twice. In a git tree checkpatch also runs spdxcheck.py (python3-ply).
	for p in "$out"/linux/*.patch; do
		(cd "$linux_src" && perl scripts/checkpatch.pl --strict --ignore MACRO_ARG_REUSE "$p") \
			>"$work/checkpatch-$(basename "$p").log" 2>&1 &
	done
	wait
	cat "$work"/checkpatch-*.log >"$log"
	e=$(awk '/^total: / { e += $2 } END { print e + 0 }' "$log")
	w=$(awk '/^total: / { w += $4 } END { print w + 0 }' "$log")
	c=$(awk '/^total: / { c += $6 } END { print c + 0 }' "$log")
	if [ "$(grep -c '^total: ' "$log")" = "$(ls "$out"/linux/*.patch | wc -l)" ] &&
	   [ "$e" = 0 ] && [ "$w" = 0 ] && [ "$c" = 0 ]; then
		ok "scripts/checkpatch.pl --strict (but MACRO_ARG_REUSE): 0 errors, 0 warnings, 0 checks"
	else
		nok "scripts/checkpatch.pl --strict: ${e:-?} errors, ${w:-?} warnings, ${c:-?} checks"
		grep -E '^(ERROR|WARNING|CHECK|#)' "$log" | head -n 40 | sed 's/^/# /'
	fi
	# The guest kernel's configuration with both drivers as modules. The
	# tree and its O= build directory are reused, so only what changed is
	# rebuilt (the first run prepares the tree: a few minutes).
	if (
		flock 9
		git -C "$linux_src" checkout -q -f --detach refs/vrnic/linux-series &&
		mkdir -p "$build" &&
		{ cmp -s "$kconfig" "$build/.config.seed" ||
			{ cp "$kconfig" "$build/.config" && cp "$kconfig" "$build/.config.seed"; }; } &&
		"$linux_src/scripts/config" --file "$build/.config" -m VRNIC -m INFINIBAND_VRNIC &&
		make -C "$linux_src" O="$build" olddefconfig &&
		grep -qx 'CONFIG_VRNIC=m' "$build/.config" &&
		grep -qx 'CONFIG_INFINIBAND_VRNIC=m' "$build/.config"
	) 9>"$d/.build.lock" >"$log" 2>&1; then
		ok "Kconfig: CONFIG_VRNIC=m and CONFIG_INFINIBAND_VRNIC=m in the guest kernel's configuration"
	else
		nok "Kconfig: the drivers' options"; tail -n 20 "$log" | sed 's/^/# /'
	fi
	if (
		flock 9
		make -C "$linux_src" O="$build" -j"$(nproc)" W=1 "$net_dir/" "$ib_dir/"
	) 9>"$d/.build.lock" >"$log" 2>&1 &&
	   ! grep -E "($net_dir|$ib_dir|vrnic_hw_defs|vrnic-abi)[^ ]*: (warning|error):" "$log" | grep -q .; then
		ok "both drivers build in the tree with W=1, no warning ($(ls "$build/$net_dir"/*.o "$build/$ib_dir"/*.o | wc -l) objects)"
	else
		nok "the drivers build in the tree"; grep -E 'warning:|error:|Error' "$log" | head -n 20 | sed 's/^/# /'
		tail -n 10 "$log" | sed 's/^/# /'
	fi
	return $fail
}

rc=0
for tree in "${trees[@]}"; do
	case $tree in
	rdma-core) make_rdma_core_series ;;
	qemu) make_qemu_series ;;
	linux) make_linux_series ;;
	esac
	if [ "$check" = 1 ]; then
		"check_${tree//-/_}_series" || rc=1
	else
		info "$tree series: $out/$tree/"
	fi
done
exit $rc
