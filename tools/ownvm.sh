#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vrnic in a VM of a user's own, as a user would run it
# (Documentation/own-vm.rst): a Debian 12 disk image (tools/debian-image.sh)
# booted with its own kernel and initramfs, the packages of make deb
# installed with apt, then two such VMs on one wire run ibv_devinfo, rping
# and ib_write_bw, and remove the packages again. TAP on stdout.
#
#   1. install: one VM, a copy of the image, apt installs vrnic-dkms (DKMS
#      builds vrnic.ko and vrnic_rdma.ko in the VM) and
#      vrnic-ibverbs-provider; powers off.
#   2. pair: two VMs boot that disk (each on a throwaway overlay,
#      snapshot=on), udev loads both modules, and they talk over a dgram wire
#      on unix sockets, link-local addresses; then each purges the packages.
# The VMs get their commands through a 9p share tagged "xchg" (run.sh,
# the packages) and leave their results there.
#
# usage: tools/ownvm.sh [DEB_DIR]     (default build/deb, from make deb)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

debs=${1:-$VRNIC_TOP/build/deb}
dkms_deb=$(ls "$debs"/vrnic-dkms_*_all.deb 2>/dev/null | tail -n 1 || true)
prov_deb=$(ls "$debs"/vrnic-ibverbs-provider_*_amd64.deb 2>/dev/null | tail -n 1 || true)
[ -n "$dkms_deb" ] && [ -n "$prov_deb" ] || die "no packages in $debs" "make deb"
qemu=${VRNIC_QEMU:-$VRNIC_TOP/build/qemu-system-x86_64}
[ -x "$qemu" ] || die "no $qemu" "make qemu"
img=$("$VRNIC_TOP/tools/debian-image.sh")
tmo=${VRNIC_OWNVM_TIMEOUT:-1200}

out="$VRNIC_TOP/build/ownvm"
rm -rf "$out"
mkdir -p "$out"
mapfile -t fw < <(qemu_fw_args)

# vm NAME DISK SMP [QEMU ARGS...]: boot the image's kernel on DISK with
# xchg-NAME shared, serial console to NAME.console; returns when it powers off.
vm() {
	local name=$1 disk=$2 smp=$3
	shift 3
	timeout -k 5 "$tmo" "$qemu" -M q35 -accel tcg -cpu max -smp "$smp" -m 1024 \
		-nodefaults -no-user-config -display none -no-reboot "${fw[@]}" \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=LABEL=vrnicroot ro console=ttyS0 panic=-1" \
		-serial "file:$out/$name.console" \
		-drive "$disk" \
		-virtfs "local,path=$out/xchg-$name,mount_tag=xchg,security_model=none" \
		"$@" >"$out/$name.qemu.log" 2>&1
}

# The scripts the VMs run (POSIX sh, Debian's dash). Each result is one
# line "ok ..." or "not ok ..." in result; "done" last.
common='set -u
cd /mnt/xchg
exec >>log 2>&1
check() { desc=$1; shift; if "$@" >>log 2>&1; then echo "ok $desc" >>result; else echo "not ok $desc" >>result; fi; }
finish() { echo done >>result; sync; systemctl poweroff || poweroff -f; exit 0; }
# The PCI function vrnic.ko drives, its RDMA device and its network
# interface. rdma-core'"'"'s udev rules name the RDMA device after the PCI
# slot (rocep0s2) and systemd names the interface (enp0s2).
vrnic_fn() { ls -d /sys/bus/pci/drivers/vrnic/0000:* 2>/dev/null | head -n 1; }
vrnic_ibdev() { basename "$(ls -d "$(vrnic_fn)"/infiniband/* 2>/dev/null | head -n 1)"; }
vrnic_ifc() { basename "$(ls -d "$(vrnic_fn)"/net/* 2>/dev/null | head -n 1)"; }
'
mkdir -p "$out/xchg-install" "$out/xchg-server" "$out/xchg-client"
cp "$dkms_deb" "$prov_deb" "$out/xchg-install/"
cat >"$out/xchg-install/run.sh" <<EOF_INSTALL
$common
check "install: the VM runs its own kernel \$(uname -r)" test -d /lib/modules/\$(uname -r)/kernel
check "install: apt installs $(basename "$dkms_deb") and $(basename "$prov_deb")" \\
	env DEBIAN_FRONTEND=noninteractive apt-get install -y \\
	/mnt/xchg/$(basename "$dkms_deb") /mnt/xchg/$(basename "$prov_deb")
check "install: DKMS built and installed vrnic.ko and vrnic_rdma.ko for \$(uname -r)" \\
	sh -c 'dkms status vrnic | grep -q "\$(uname -r), x86_64: installed" && modinfo -n vrnic | grep -q /updates/dkms/ && modinfo -n vrnic_rdma | grep -q /updates/dkms/'
modprobe vrnic; udevadm settle
check "install: modprobe vrnic, and udev loads vrnic_rdma for its auxiliary device" \\
	sh -c 'grep -q "^vrnic_rdma " /proc/modules'
check "install: the RDMA device \$(vrnic_ibdev) is listed by ibv_devices" \\
	sh -c "ibv_devices | grep -qw '\$(vrnic_ibdev)'"
finish
EOF_INSTALL

pair_script() {
	local role=$1 me=$2 peer=$3
	cat <<EOF_PAIR
$common
role=$role
# vrnic.ko comes up at boot (udev loads it for the PCI device), then
# vrnic_rdma.ko (udev loads it for vrnic.ko's auxiliary device).
i=0
while [ -z "\$(vrnic_ibdev)" ] && [ \$i -lt 120 ]; do sleep 1; i=\$((i + 1)); done
udevadm settle
ibdev=\$(vrnic_ibdev)
ifc=\$(vrnic_ifc)
export ibdev ifc
check "\$role: udev loaded vrnic.ko and vrnic_rdma.ko at boot: RDMA device \$ibdev, interface \$ifc" test -n "\$ibdev"
check "\$role: \$ifc up with $me/16" sh -c "ip addr add $me/16 dev \$ifc && ip link set \$ifc up"
check "\$role: ping $peer" sh -c 'for i in \$(seq 60); do ping -c 1 -W 1 $peer && exit 0; sleep 1; done; exit 1'
check "\$role: ibv_devinfo: \$ibdev port 1 PORT_ACTIVE" sh -c "ibv_devinfo -d \$ibdev | grep -q 'state:.*PORT_ACTIVE'"
EOF_PAIR
	if [ "$role" = server ]; then
		cat <<'EOF_SERVER'
check "server: rping -s (5 ping-pongs, verified)" timeout 300 rping -s -a 0.0.0.0 -v -C 5
check "server: ib_write_bw (64 KiB RDMA WRITEs over rdma_cm)" \
	timeout 300 ib_write_bw -d "$ibdev" -R -s 65536 -n 200
EOF_SERVER
	else
		cat <<EOF_CLIENT
check "client: rping -c $peer (5 ping-pongs, verified)" sh -c 'for i in \$(seq 60); do timeout 120 rping -c -a $peer -v -C 5 && exit 0; sleep 2; done; exit 1'
check "client: ib_write_bw $peer (64 KiB RDMA WRITEs over rdma_cm)" sh -c 'for i in \$(seq 60); do timeout 120 ib_write_bw -d \$ibdev -R -s 65536 -n 200 $peer && exit 0; sleep 2; done; exit 1'
EOF_CLIENT
	fi
	cat <<'EOF_REMOVE'
check "$role: apt purges both packages; the modules, the provider and DKMS's state are gone" sh -c '
	rmmod vrnic_rdma vrnic &&
	DEBIAN_FRONTEND=noninteractive apt-get purge -y vrnic-dkms vrnic-ibverbs-provider &&
	! dpkg -l vrnic-dkms vrnic-ibverbs-provider 2>/dev/null | grep -q "^ii" &&
	! find /lib/modules -name "vrnic.ko*" -o -name "vrnic_rdma.ko*" | grep -q . &&
	[ -z "$(dkms status vrnic)" ] &&
	[ ! -e /etc/libibverbs.d/vrnic.driver ] &&
	! ls /usr/lib/x86_64-linux-gnu/libibverbs/libvrnic* 2>/dev/null &&
	[ ! -d /usr/src/vrnic-* ] 2>/dev/null'
finish
EOF_REMOVE
}
pair_script server 169.254.77.1 169.254.77.2 >"$out/xchg-server/run.sh"
pair_script client 169.254.77.2 169.254.77.1 >"$out/xchg-client/run.sh"

results() {
	local name=$1
	if [ -e "$out/xchg-$name/result" ]; then
		grep -v '^done$' "$out/xchg-$name/result" || true
	fi
	grep -qx done "$out/xchg-$name/result" 2>/dev/null ||
		echo "not ok $name: the VM did not finish (build/ownvm/$name.console, xchg-$name/log)"
}

echo "TAP version 13"
step "own VM: install (apt, DKMS builds vrnic.ko and vrnic_rdma.ko inside the VM)" | sed 's/^/# /'
cp --sparse=always "$img/disk.raw" "$out/disk.raw"
t0=$SECONDS
vm install "file=$out/disk.raw,format=raw,if=virtio" 2 -device vrnic || true
echo "# install took $((SECONDS - t0)) s"
all=$(results install)

step "own VM: two VMs on one wire" | sed 's/^/# /'
t0=$SECONDS
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
wire() { echo "dgram,id=n0,local.type=unix,local.path=$run/$1.sock,remote.type=unix,remote.path=$run/$2.sock"; }
vm server "file=$out/disk.raw,format=raw,if=virtio,snapshot=on" 1 \
	-netdev "$(wire server client)" -device vrnic,netdev=n0,mac=52:54:00:77:00:01 &
spid=$!
vm client "file=$out/disk.raw,format=raw,if=virtio,snapshot=on" 1 \
	-netdev "$(wire client server)" -device vrnic,netdev=n0,mac=52:54:00:77:00:02 || true
wait "$spid" || true
echo "# pair took $((SECONDS - t0)) s"
all+=$'\n'$(results server)$'\n'$(results client)

n=0 fail=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	n=$((n + 1))
	case $line in
	"ok "*) echo "ok $n ${line#ok }" ;;
	*) fail=1; echo "not ok $n ${line#not ok }" ;;
	esac
done <<<"$all"
echo "1..$n"
exit $fail
