#!/bin/bash
# PID 1 of a vrnic guest, after the initramfs switched to the host root
# (read-only 9p + tmpfs overlay, so nothing written here reaches the host,
# except under /vrnic-out). Loads the driver (vrnic.ko and vrnic_rdma.ko,
# or virtio-net + rdma_rxe on an rxe node), configures the wire address,
# registers libvrnic for libibverbs (in the overlay's /etc only), runs the
# command the host left in /vrnic-out/cmd and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-linux}

for arg in $(</proc/cmdline); do
	case "$arg" in
	vrnic.*=*) k=${arg%%=*}; k=${k#vrnic.}; declare "VRNIC_${k^^}=${arg#*=}" ;;
	esac
done
export VRNIC_TOP VRNIC_NODE VRNIC_NODES VRNIC_KREL VRNIC_MTU VRNIC_PEER_MEM
export VRNIC_OUT=/vrnic-out

say() { echo "vrnic-guest[$VRNIC_NODE]: $*" >/dev/console; }

# /tmp stays the overlay's (already private to the guest): the clone or the
# cache may live under the host's /tmp, and a tmpfs there would hide them.
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /dev/pts /dev/shm
# devtmpfs has no /dev/fd: bash process substitution needs it.
ln -sf /proc/self/fd /dev/fd
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# The guest kernel's modules, from the cache, where modprobe looks.
mkdir -p "/lib/modules/$VRNIC_KREL"
mount --bind "$VRNIC_KMODS" "/lib/modules/$VRNIC_KREL"
hostname "vrnic$VRNIC_NODE"
ip link set lo up

# libibverbs finds libvrnic through this file; /etc is the overlay's.
mkdir -p /etc/libibverbs.d
echo "driver $VRNIC_TOP/build/lib/libvrnic" >/etc/libibverbs.d/vrnic.driver

# Node i has 169.254.0.(i+1); with two nodes the peer is the other one.
VRNIC_IP=169.254.0.$((VRNIC_NODE + 1))
VRNIC_PEER_IP=169.254.0.$(((VRNIC_NODE + 1) % ${VRNIC_NODES:-1} + 1))
export VRNIC_IP VRNIC_PEER_IP

. "$VRNIC_TOP/tools/guest/sysfs.sh"
. "$VRNIC_TOP/tools/guest/modules.sh"

# The node's NIC on the wire: vrnic (vrnic.ko) or rxe (virtio-net with the
# kernel's soft-RoCE on top, for interop and reference runs).
VRNIC_NIC=${VRNIC_NIC:-vrnic}
export VRNIC_NIC
# up_iface IFACE: bring the wire's net_device up with this node's address.
up_iface() {
	VRNIC_IFACE=$1
	export VRNIC_IFACE
	[ -n "${VRNIC_MTU:-}" ] && { ip link set "$VRNIC_IFACE" mtu "$VRNIC_MTU" ||
		say "ip link set $VRNIC_IFACE mtu $VRNIC_MTU failed"; }
	ip link set "$VRNIC_IFACE" up
	ip addr add "$VRNIC_IP/16" dev "$VRNIC_IFACE"
}

if [ "$VRNIC_NIC" = rxe ]; then
	# No udev here: load what a vrnic guest gets from vrnic.ko by hand.
	modprobe virtio_net || say "modprobe virtio_net failed"
	modprobe ib_uverbs && modprobe rdma_ucm && modprobe rdma_rxe ||
		say "modprobe ib_uverbs/rdma_ucm/rdma_rxe failed"
	for d in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = virtio_net ] &&
			up_iface "$(basename "$d")" && break
	done
	if [ -z "${VRNIC_IFACE:-}" ]; then
		say "no virtio-net net_device"
	elif rdma link add rxe0 type rxe netdev "$VRNIC_IFACE"; then
		export VRNIC_IBDEV=rxe0
	else
		say "rdma link add rxe0 on $VRNIC_IFACE failed"
	fi
elif [ "${VRNIC_MODULE:-1}" = 1 ]; then
	modprobe ib_uverbs && modprobe rdma_ucm ||
		say "modprobe ib_uverbs/rdma_ucm failed"
	if vrnic_load; then
		if iface=$(vrnic_netdev); then
			up_iface "$iface"
		else
			say "vrnic loaded but no vrnic net_device"
		fi
		if VRNIC_IBDEV=$(vrnic_ibdev); then
			export VRNIC_IBDEV
		else
			say "vrnic loaded but no vrnic ib_device"
		fi
	else
		say "insmod vrnic.ko vrnic_rdma.ko failed"
	fi
fi
# tools/vm --peer-mem: the ivshmem BAR's exporter (/dev/ivshmem-dmabuf0).
if [ -n "${VRNIC_PEER_MEM:-}" ] && [ "${VRNIC_MODULE:-1}" = 1 ]; then
	insmod "$VRNIC_TOP/drivers/misc/ivshmem_dmabuf/ivshmem_dmabuf.ko" ||
		say "insmod ivshmem_dmabuf.ko failed"
fi

cd "$VRNIC_TOP" || exit 1
if [ -s /vrnic-out/cmd ]; then
	bash /vrnic-out/cmd >/vrnic-out/output 2>&1 </dev/null
	echo $? >/vrnic-out/status
	dmesg >/vrnic-out/dmesg
else
	# Interactive: a login-less shell on the serial console.
	setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
fi
sync
echo o >/proc/sysrq-trigger
sleep 10
