#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# test-match.sh LIBDIR/libvrnic VENDOR DEVICE ABI
#
# Host test of device matching, without a kernel driver: libibverbs takes
# sysfs from $SYSFS_PATH, so a fake sysfs tree describing one uverbs device
# lets the host's libibverbs load the provider through RDMAV_DRIVERS and run
# its match table and ABI-version check. The only thing it needs outside
# sysfs is /dev/infiniband/<uverbs> to exist (try_access_device), which a
# private mount namespace provides without touching the host's /dev.
# Output is TAP; the whole test is skipped where unshare/mount are not allowed.
set -eu

drv=$1
vendor=$2
device=$3
abi=$4

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sys=$tmp/sys

mkfake() {	# mkfake MODALIAS ABI
	rm -rf "$sys"
	mkdir -p "$sys/class/infiniband_verbs/uverbs0" "$sys/class/infiniband/vrnic0/device"
	echo 6 >"$sys/class/infiniband_verbs/abi_version"	# IB_USER_VERBS_ABI_VERSION
	echo vrnic0 >"$sys/class/infiniband_verbs/uverbs0/ibdev"
	echo 231:192 >"$sys/class/infiniband_verbs/uverbs0/dev"
	echo "$2" >"$sys/class/infiniband_verbs/uverbs0/abi_version"
	echo "1: CA" >"$sys/class/infiniband/vrnic0/node_type"
	echo 5254:00ff:fe12:3456 >"$sys/class/infiniband/vrnic0/node_guid"
	echo "$1" >"$sys/class/infiniband/vrnic0/device/modalias"
}

# ibv_devices inside a mount namespace with a tmpfs /dev holding the cdev name.
devices() {
	unshare -m sh -c '
		mount --make-rprivate / && mount -t tmpfs vrnic-test /dev &&
		mkdir /dev/infiniband && : >/dev/infiniband/uverbs0 &&
		SYSFS_PATH=$0 RDMAV_DRIVERS=$1 IBV_SHOW_WARNINGS=1 ibv_devices 2>&1' "$sys" "$drv"
}

echo "TAP version 13"
if ! unshare -m sh -c 'mount -t tmpfs vrnic-test /mnt' 2>/dev/null; then
	echo "1..0 # SKIP no private mount namespace (needs root)"
	exit 0
fi
echo "1..3"

ma=$(printf 'pci:v%08Xd%08Xsv00001AF4sd00001100bc02sc00i00' "$vendor" "$device")
fail=0
n=0
expect() {	# expect DESCRIPTION yes|no
	if echo "$out" | awk '$1 == "vrnic0" && $2 == "525400fffe123456" { f = 1 } END { exit !f }'; then
		got=yes
	else
		got=no
	fi
	n=$((n + 1))
	if [ "$got" = "$2" ]; then
		echo "ok $n $1"
	else
		echo "not ok $n $1"
		echo "$out" | sed 's/^/# /'
		fail=1
	fi
}

mkfake "$ma" "$abi"
out=$(devices)
expect "matches $ma, uverbs ABI $abi" yes

mkfake "$ma" $((abi + 1))
out=$(devices)
expect "refuses uverbs ABI $((abi + 1))" no

mkfake "$(printf 'pci:v%08Xd%08Xsv00001AF4sd00001100bc02sc00i00' "$vendor" $((device ^ 1)))" "$abi"
out=$(devices)
expect "ignores another PCI device ID" no

exit $fail
