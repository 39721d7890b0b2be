#!/usr/bin/env bash
# Fetch and unpack the heavy inputs into VRNIC_CACHE (idempotent, keyed by version):
#   qemu-<ver>/src        QEMU source with the vrnic device dropped in and
#                         tools/qemu-patches/ applied
#   kernel-<krel>/        guest kernel image + modules (depmod'ed, decompressed)
#   rdma-core-<ver>/      rdma-core source (provider private headers)
#   linux-source-6.12/    kselftest headers and checkpatch.pl
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mkdir -p "$VRNIC_CACHE"
exec 9>"$VRNIC_CACHE/.sources.lock"
flock 9

# ---- QEMU source ---------------------------------------------------------------
fetch_qemu() {
	local d src tarball
	d=$(qemu_dir)
	src="$d/src"
	[ -e "$src/.vrnic-prepared" ] && return 0
	mkdir -p "$d/dl"
	tarball="$d/dl/qemu_$QEMU_VERSION+ds.orig.tar.xz"
	if [ ! -s "$tarball" ]; then
		step "QEMU $QEMU_VERSION: downloading source ($QEMU_SUITE)"
		# Only the .orig tarball of this version is served: apt-get fetches it and
		# then fails on the missing .dsc. Judge by the tarball, not the exit code.
		(cd "$d/dl" && apt-get source --download-only -q "qemu/$QEMU_SUITE" >apt-source.log 2>&1) || true
		[ -s "$tarball" ] || die "QEMU source download (see $d/dl/apt-source.log)" "make setup"
	fi
	step "QEMU $QEMU_VERSION: unpacking"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xf "$tarball" -C "$src.tmp" --strip-components=1
	# The +ds tarball has no edk2 firmware blobs: skip unpacking them, as Debian does.
	sed -i 's/^if unpack_edk2_blobs$/if false # vrnic: +ds tarball has no edk2 blobs/' \
		"$src.tmp/pc-bios/meson.build"
	grep -q 'vrnic: +ds tarball' "$src.tmp/pc-bios/meson.build" ||
		die "QEMU: pc-bios/meson.build edk2 skip did not apply" "rm -rf $d/src* && make setup"
	# Drop the device in: one symlink, one subdir() line, one Kconfig source line.
	# The symlink is re-pointed at each clone's qemu-device/ by tools/build-qemu.sh.
	ln -sfn "$VRNIC_TOP/qemu-device" "$src.tmp/hw/vrnic"
	echo "subdir('vrnic')" >>"$src.tmp/hw/meson.build"
	echo 'source vrnic/Kconfig' >>"$src.tmp/hw/Kconfig"
	touch "$src.tmp/.vrnic-prepared"
	mv "$src.tmp" "$src"
}

# The QEMU changes the project carries (tools/qemu-patches/, in order), each
# applied once, also to a source unpacked before the patch existed.
patch_qemu() {
	local src p name
	src="$(qemu_dir)/src"
	for p in "$VRNIC_TOP"/tools/qemu-patches/*.patch; do
		[ -e "$p" ] || continue
		name=$(basename "$p" .patch)
		[ -e "$src/.vrnic-patch-$name" ] && continue
		step "QEMU $QEMU_VERSION: applying $name"
		(cd "$src" && git apply "$p") ||
			die "QEMU: $name did not apply" "rm -rf $(qemu_dir)/src* && make setup"
		touch "$src/.vrnic-patch-$name"
	done
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
fetch_linux_source() {
	local d tarball
	d="$VRNIC_CACHE/linux-source-$KERNEL_SERIES"
	[ -e "$d/.vrnic-ready-2" ] && return 0
	tarball=/usr/src/linux-source-$KERNEL_SERIES.tar.xz
	[ -s "$tarball" ] || die "$tarball missing (package linux-source-$KERNEL_SERIES)" "make setup"
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

fetch_qemu
patch_qemu
fetch_kernel
fetch_rdma_core
fetch_linux_source
info "sources: ok ($VRNIC_CACHE)"
