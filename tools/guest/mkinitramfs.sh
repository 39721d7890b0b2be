#!/usr/bin/env bash
# Build (or reuse) the guest initramfs: busybox, the 9p/overlay modules the
# guest kernel needs to reach its root, and tools/guest/init.
# usage: mkinitramfs.sh KERNEL_CACHE_DIR KREL   -> prints the image path
set -euo pipefail
kdir=$1 krel=$2
here=$(cd "$(dirname "$0")" && pwd)
img="$kdir/initramfs-$(sha1sum "$here/init" "$0" | sha1sum | cut -c1-12).cpio.gz"
if [ -s "$img" ]; then
	echo "$img"
	exit 0
fi
bb=/bin/busybox
[ -x "$bb" ] && "$bb" --list | grep -qx switch_root ||
	{ echo "mkinitramfs: need busybox-static at /bin/busybox (make setup)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,modules}
cp "$bb" "$work/bin/busybox"
cp "$here/init" "$work/init"
# Modules in dependency order, each once (modprobe --show-depends prints the
# insmod lines a real modprobe would run).
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$kdir/root" -S "$krel" --show-depends "$m" 2>/dev/null |
		awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' >"$work/modules/list"
: >"$work/modules/order"
while read -r ko; do
	cp "$ko" "$work/modules/"
	basename "$ko" >>"$work/modules/order"
done <"$work/modules/list"
rm "$work/modules/list"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$img.tmp"
mv "$img.tmp" "$img"
echo "$img"
