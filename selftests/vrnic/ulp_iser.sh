#!/bin/bash
# iSCSI Extensions for RDMA between the two guests of a pair, on whatever
# NIC each node has (tools/vm --nic): node 1 is an LIO target (targetcli-fb:
# a 256 MiB ramdisk LUN behind an iSER-enabled portal, ib_isert), node 0 an
# open-iscsi initiator (iscsid, an iface with transport iser, ib_iser) that
# discovers the target, logs in, runs fio with verification on the block
# device, and logs out. Both sides then unload their ULP and must leave no
# RDMA object behind.
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"
. "$VRNIC_TOP/selftests/ulp_lib.sh"

iqn=iqn.2026-12.org.vrnic:ulp-iser
port=3260
role=initiator
[ "$VRNIC_NODE" = 1 ] && role=target
export VRNIC_BARRIER_TIMEOUT=600

if [ "$role" = target ]; then
	ulp_begin "$role" 4
else
	ulp_begin "$role" 10
fi

target_up() {
	local tpg=/iscsi/$iqn/tpg1
	modprobe ib_isert &&
		ulp_targetcli <<-EOF &&
			/backstores/ramdisk create name=vrnic_rd0 size=256M
			/iscsi create $iqn
			$tpg/luns create /backstores/ramdisk/vrnic_rd0
			$tpg/portals delete 0.0.0.0 $port
			$tpg/portals create $VRNIC_IP $port
			$tpg/portals/$VRNIC_IP:$port enable_iser true
			$tpg set attribute authentication=0 demo_mode_write_protect=0 generate_node_acls=1 cache_dynamic_acls=1
		EOF
		[ "$(cat "/sys/kernel/config/target/iscsi/$iqn/tpgt_1/np/$VRNIC_IP:$port/iser")" = 1 ]
}

target_down() {
	echo "clearconfig confirm=True" | ulp_targetcli &&
		wait_for 20 modprobe -r ib_isert
}

if [ "$role" = target ]; then
	check "LIO target $iqn, iSER portal $VRNIC_IP:$port, 256 MiB ramdisk LUN" target_up
	pair_barrier_sh iser-up
	pair_barrier_sh iser-done
	check "target cleared, ib_isert unloaded" target_down
	ulp_res_check
	ulp_end_checks
	ktap_finished
fi

iscsid_up() {
	# /run is a fresh tmpfs in the guest: iscsiadm's lock directory.
	mkdir -p /run/lock/iscsi &&
		# No udev either: the SCSI disk driver is loaded by hand.
		modprobe sd_mod && modprobe ib_iser && { pgrep -x iscsid >/dev/null || iscsid; } &&
		wait_for 10 pgrep -x iscsid >/dev/null &&
		iscsiadm -m iface -I vrnic-iser -o new >/dev/null &&
		iscsiadm -m iface -I vrnic-iser -o update -n iface.transport_name -v iser >/dev/null
}

# Retried: iscsid may still be setting up its control socket.
discover_once() {
	iscsiadm -m discovery -t sendtargets -p "$VRNIC_PEER_IP:$port" -I vrnic-iser >/tmp/disc.log 2>&1 &&
		grep -q "$iqn" /tmp/disc.log
}

discover() {
	wait_for 30 discover_once
	local rc=$?
	sed 's/^/# /' /tmp/disc.log
	return "$rc"
}

# The block device of our session (no udev in the guest: from sysfs).
session_disk() {
	local b
	for b in /sys/class/iscsi_session/session*/device/target*/*/block/*; do
		[ -e "$b" ] && echo "/dev/$(basename "$b")" && return 0
	done
	return 1
}

login() {
	iscsiadm -m node -T "$iqn" -p "$VRNIC_PEER_IP:$port" -I vrnic-iser --login >/tmp/login.log 2>&1 &&
		wait_for 30 session_disk >/dev/null
}

is_iser() {
	iscsiadm -m session >/tmp/session.log 2>&1
	sed 's/^/# /' /tmp/session.log
	grep -q "^iser: .*$VRNIC_PEER_IP:$port.*$iqn" /tmp/session.log
}

logout() {
	iscsiadm -m node -T "$iqn" -p "$VRNIC_PEER_IP:$port" --logout >/tmp/logout.log 2>&1 &&
		! session_disk >/dev/null
}

initiator_down() {
	iscsiadm -m iface -I vrnic-iser -o delete >/dev/null
	pkill -x iscsid
	wait_for 20 modprobe -r ib_iser
}

pair_barrier_sh iser-up
check "iscsid with an iface of transport iser" iscsid_up
check "iscsiadm discovery (sendtargets) finds $iqn" discover
check "iscsiadm login over iser" login
check "the session's transport is iser" is_iser
dev=$(session_disk)
ktap_print_msg "LUN 0: $dev ($(cat "/sys/block/${dev#/dev/}/size" 2>/dev/null) sectors)"
ulp_fio iser4k32 "$dev" 4k 32
ulp_fio iser128k8 "$dev" 128k 8
check "iscsiadm logout" logout
check "iscsid stopped, ib_iser unloaded" initiator_down
pair_barrier_sh iser-done
ulp_res_check
ulp_end_checks
ktap_finished
