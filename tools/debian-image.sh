#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A Debian 12 VM image of a user's kind, for the own-VM test
# (tools/ownvm.sh, Documentation/own-vm.rst): mmdebstrap from this machine's
# configured apt sources, Debian's 6.12 kernel and its headers, DKMS, and
# rdma-core's tools; nothing of vrnic. Cached in VRNIC_CACHE, keyed by the
# kernel release and this script:
#   debian12-<krel>-<key>/disk.raw      ext4 root file system (label vrnicroot)
#   debian12-<krel>-<key>/vmlinuz       the image's own kernel and initramfs,
#   debian12-<krel>-<key>/initrd.img    copied out of its /boot
# The only test scaffolding in it: vrnic-test.service runs /mnt/xchg/run.sh
# at boot when the host shares a directory tagged "xchg" (9p), as
# cloud-init would run user data.
# usage: tools/debian-image.sh      prints the image directory
set -euo pipefail
. "$(dirname "$0")/lib.sh"

krel=$(guest_kernel_release)
[ -n "$krel" ] || die "no linux-image-$KERNEL_SERIES.* in apt lists" "apt-get update && make setup"
key=$(sha256sum "$0" | cut -c1-12)
d="$VRNIC_CACHE/debian12-$krel-$key"
if [ -e "$d/.ready" ]; then
	echo "$d"
	exit 0
fi
command -v mmdebstrap >/dev/null || die "no mmdebstrap" "make setup"
main=$(configured_uri bookworm)
sec=$(configured_uri bookworm-security)
[ -n "$main" ] || die "no configured Debian source for bookworm in /etc/apt" "configure one, then: make setup"

exec 9>"$VRNIC_CACHE/.debian-image.lock"
flock 9
step "Debian 12 image ($krel): mmdebstrap (downloads ~250 MB once; a few minutes)" >&2
rm -rf "$d"
mkdir -p "$d"
root="$d/root"
mirrors=("deb $main bookworm main" "deb $main bookworm-updates main" "deb $main bookworm-backports main")
[ -n "$sec" ] && mirrors+=("deb $sec bookworm-security main")
pkgs=(systemd-sysv udev kmod iproute2 iputils-ping procps
	"linux-image-$krel" "linux-headers-$krel" dkms
	rdma-core ibverbs-utils rdmacm-utils perftest)
mmdebstrap --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" \
	--customize-hook='echo vrnic-vm >"$1/etc/hostname"' \
	--customize-hook='passwd --root "$1" -d root' \
	--customize-hook='printf "%s\n" "LABEL=vrnicroot / ext4 defaults 0 1" \
		"xchg /mnt/xchg 9p trans=virtio,version=9p2000.L,msize=262144,nofail 0 0" >"$1/etc/fstab"' \
	--customize-hook='mkdir -p "$1/mnt/xchg"' \
	--customize-hook='cat >"$1/etc/systemd/system/vrnic-test.service" <<UNIT
[Unit]
Description=Run /mnt/xchg/run.sh (the host'"'"'s own-VM test)
RequiresMountsFor=/mnt/xchg
ConditionPathExists=/mnt/xchg/run.sh
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/bin/sh /mnt/xchg/run.sh
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
		chroot "$1" systemctl enable vrnic-test.service' \
	bookworm "$root" "${mirrors[@]}" >"$d/mmdebstrap.log" 2>&1 ||
	{ tail -n 30 "$d/mmdebstrap.log" >&2; die "mmdebstrap (see $d/mmdebstrap.log)" "tools/debian-image.sh"; }
cp "$root/boot/vmlinuz-$krel" "$d/vmlinuz"
cp "$root/boot/initrd.img-$krel" "$d/initrd.img"
step "Debian 12 image: ext4 root file system" >&2
truncate -s 4G "$d/disk.raw"
mkfs.ext4 -q -L vrnicroot -d "$root" "$d/disk.raw" ||
	die "mkfs.ext4 -d (see above)" "tools/debian-image.sh"
rm -rf "$root"
touch "$d/.ready"
# Images of other kernels or an older script are not used again.
find "$VRNIC_CACHE" -maxdepth 1 -name 'debian12-*' ! -path "$d" -exec rm -rf {} +
echo "$d"
