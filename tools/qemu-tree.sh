#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check out in the cached QEMU source tree what the build compiles: QEMU as
# released, the vrnic series made from this checkout (tools/patches.sh qemu),
# then the harness's own QEMU changes: tools/qemu-patches/ and skipping the
# edk2 blobs the +ds tarball lacks. git rewrites only the files that differ
# from the last checkout, so ninja recompiles only what changed, whichever
# clone built last. refs/vrnic/build is the commit checked out,
# refs/vrnic/built-series the series under it (tools/patches.sh --check
# compares them). The caller holds the build lock.
# usage: qemu-tree.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

src="$(qemu_dir)/src"
"$VRNIC_TOP/tools/patches.sh" -o "$VRNIC_TOP/build/patches" qemu >/dev/null
series=$(git -C "$src" rev-parse refs/vrnic/series)

idx=$(mktemp)
trap 'rm -f "$idx" "$idx.file"' EXIT
g() { GIT_INDEX_FILE=$idx git -C "$src" "$@"; }
g read-tree "$series"
for p in "$VRNIC_TOP"/tools/qemu-patches/*.patch; do
	[ -e "$p" ] || continue
	g apply --cached "$p" ||
		die "QEMU: tools/qemu-patches/$(basename "$p") does not apply over the vrnic series" \
			"rebase it onto build/patches/qemu/, then: make qemu"
done
# The +ds tarball has no edk2 firmware blobs: skip unpacking them, as Debian does.
g show "$series:pc-bios/meson.build" |
	sed 's/^if unpack_edk2_blobs$/if false # vrnic: +ds tarball has no edk2 blobs/' >"$idx.file"
grep -q 'vrnic: +ds tarball' "$idx.file" ||
	die "QEMU: pc-bios/meson.build has no 'if unpack_edk2_blobs' to skip" \
		"check pc-bios/meson.build of QEMU $QEMU_VERSION"
g update-index --cacheinfo "100644,$(g hash-object -w "$idx.file"),pc-bios/meson.build"
commit=$(echo "vrnic harness: tools/qemu-patches/, no edk2 blobs" |
	GIT_AUTHOR_NAME=vrnic GIT_AUTHOR_EMAIL=vrnic@localhost \
	GIT_COMMITTER_NAME=vrnic GIT_COMMITTER_EMAIL=vrnic@localhost \
	g commit-tree "$(g write-tree)" -p "$series")
git -C "$src" checkout -q -f --detach "$commit"
git -C "$src" update-ref refs/vrnic/build "$commit"
git -C "$src" update-ref refs/vrnic/built-series "$series"
