#!/usr/bin/env bash
# Fetch and unpack the heavy inputs into VRNIC_CACHE (idempotent, keyed by version):
#   qemu-<ver>/src        QEMU source as a git repository (tools/qemu-tree.sh)
#   kernel-<krel>/        guest kernel image + modules (depmod'ed, decompressed)
#   rdma-core-<ver>/      rdma-core source (provider private headers)
#   linux-source-6.12/    kselftest headers and checkpatch.pl
#   linux-<version>/src   the whole linux-source tree, a git repository
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mkdir -p "$VRNIC_CACHE"
exec 9>"$VRNIC_CACHE/.sources.lock"
flock 9

# ---- QEMU source ---------------------------------------------------------------
# src is a git repository: QEMU as released, tagged $QEMU_BASE_TAG. The
# vrnic series and the harness's own changes are commits on top of it,
# checked out by tools/qemu-tree.sh on every build.
fetch_qemu() {
	local d src tarball
	d=$(qemu_dir)
	src="$d/src"
	git -C "$src" rev-parse -q --verify "refs/tags/$QEMU_BASE_TAG" >/dev/null 2>&1 && return 0
	mkdir -p "$d/dl"
	tarball="$d/dl/qemu_$QEMU_VERSION+ds.orig.tar.xz"
	if [ ! -s "$tarball" ]; then
		step "QEMU $QEMU_VERSION: downloading source ($QEMU_SUITE)"
		# Only the .orig tarball of this version is served: apt-get fetches it and
		# then fails on the missing .dsc. Judge by the tarball, not the exit code.
		(cd "$d/dl" && apt-get source --download-only -q "qemu/$QEMU_SUITE" >apt-source.log 2>&1) || true
		[ -s "$tarball" ] || die "QEMU source download (see $d/dl/apt-source.log)" "make setup"
	fi
	step "QEMU $QEMU_VERSION: unpacking into a git repository"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xf "$tarball" -C "$src.tmp" --strip-components=1
	# Every file, .gitignore'd ones too: the tree is the tarball.
	git -C "$src.tmp" init -q
	git -C "$src.tmp" add -f -A
	git -C "$src.tmp" -c user.name=vrnic -c user.email=vrnic@localhost \
		commit -q -m "QEMU $QEMU_VERSION as released (+ds)"
	git -C "$src.tmp" tag "$QEMU_BASE_TAG"
	mv "$src.tmp" "$src"
	# The build directories were configured against the tree as it was.
	rm -rf "$d/build" "$d/build-fuzz"
}

# ---- guest kernel --------------------------------------------------------------
fetch_kernel() {
	local krel d deb
	krel=$(guest_kernel_release)
	[ -n "$krel" ] || die "no linux-image-$KERNEL_SERIES.* in apt lists" "apt-get update && make setup"
	d=$(kernel_dir "$krel")
	[ -e "$d/.vrnic-ready" ] && return 0
	step "guest kernel $krel: downloading and unpacking"
	rm -rf "$d"
	mkdir -p "$d/dl" "$d/root"
	(cd "$d/dl" && apt-get download -q "linux-image-$krel") ||
		die "apt-get download linux-image-$krel" "make setup"
	deb=$(ls "$d"/dl/linux-image-"$krel"_*.deb | head -n 1)
	dpkg-deb -x "$deb" "$d/root"
	# busybox insmod cannot read .ko.xz: decompress every module once.
	info "decompressing modules"
	find "$d/root/lib/modules/$krel" -name '*.ko.xz' -print0 | xargs -0 -r -n 64 xz -d
	# The package ships no modules.dep.
	depmod -b "$d/root" "$krel"
	cp "$d/root/boot/vmlinuz-$krel" "$d/vmlinuz"
	rm -rf "$d/dl"
	touch "$d/.vrnic-ready"
}

# ---- rdma-core source ----------------------------------------------------------
fetch_rdma_core() {
	local d
	d="$VRNIC_CACHE/rdma-core-$RDMA_CORE_SUITE"
	[ -e "$d/.vrnic-ready" ] && return 0
	step "rdma-core ($RDMA_CORE_SUITE): downloading source"
	rm -rf "$d"
	mkdir -p "$d/dl"
	(cd "$d/dl" && apt-get source --download-only -q "rdma-core/$RDMA_CORE_SUITE" >apt-source.log 2>&1) || true
	local tarball
	tarball=$(ls "$d"/dl/rdma-core_*.orig.tar.gz 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || die "rdma-core source download (see $d/dl/apt-source.log)" "make setup"
	mkdir -p "$d/src"
	tar -xf "$tarball" -C "$d/src" --strip-components=1
	rm -rf "$d/dl"
	touch "$d/.vrnic-ready"
}

# ---- linux-source: kselftest headers and ktap helpers, checkpatch ------------------------------
# The tarball package linux-source-6.12 installs.
linux_source_tarball() {
	local tarball=/usr/src/linux-source-$KERNEL_SERIES.tar.xz
	[ -s "$tarball" ] || die "$tarball missing (package linux-source-$KERNEL_SERIES)" "make setup"
	echo "$tarball"
}

fetch_linux_source() {
	local d tarball
	d="$VRNIC_CACHE/linux-source-$KERNEL_SERIES"
	[ -e "$d/.vrnic-ready-2" ] && return 0
	tarball=$(linux_source_tarball)
	step "linux-source-$KERNEL_SERIES: extracting kselftest headers and checkpatch"
	rm -rf "$d"
	mkdir -p "$d"
	tar -xf "$tarball" -C "$d" --strip-components=1 --wildcards \
		'*/tools/testing/selftests/kselftest.h' \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/tools/testing/selftests/kselftest/ktap_helpers.sh' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	touch "$d/.vrnic-ready-2"
}

# ---- the whole linux-source tree, for the kernel series (tools/patches.sh) ----
fetch_linux_tree() {
	local d tarball
	d=$(linux_tree_dir)
	[ -e "$d/.vrnic-ready" ] && return 0
	tarball=$(linux_source_tarball)
	step "linux-source-$KERNEL_SERIES: the whole tree as a git repository (once, a few minutes)"
	rm -rf "$d"
	mkdir -p "$d/src"
	tar -xf "$tarball" -C "$d/src" --strip-components=1
	git -C "$d/src" init -q
	# Debian's top .gitignore ignores all but debian/: add everything.
	git -C "$d/src" add -A -f
	git -C "$d/src" -c user.name=vrnic -c user.email=vrnic@localhost \
		commit -q -m "linux-source-$KERNEL_SERIES $(dpkg-query -W -f='${Version}' "linux-source-$KERNEL_SERIES")"
	git -C "$d/src" tag "$LINUX_BASE_TAG"
	touch "$d/.vrnic-ready"
}

fetch_qemu
fetch_kernel
fetch_rdma_core
fetch_linux_source
fetch_linux_tree
info "sources: ok ($VRNIC_CACHE)"
