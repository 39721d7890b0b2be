#!/bin/bash
# SRP (SCSI RDMA Protocol) over RoCE between the two guests of a pair, on
# whatever NIC each node has (tools/vm --nic): node 1 is an LIO target
# (targetcli-fb: ib_srpt, a 128 MiB ramdisk LUN, an ACL for the initiator's
# port, the RDMA/CM listener on port 5555), node 0 an ib_srp initiator that
# logs in through rdma_cm addressing (add_target with dest=IP:port), runs
# fio with verification on the SCSI disk and removes the target port again.
# Both sides then unload their ULP and must leave no RDMA object behind.
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"
. "$VRNIC_TOP/selftests/ulp_lib.sh"

cm_port=5555
role=initiator
[ "$VRNIC_NODE" = 1 ] && role=target
export VRNIC_BARRIER_TIMEOUT=600
sys_ib=/sys/class/infiniband/$VRNIC_IBDEV

if [ "$role" = target ]; then
	ulp_begin "$role" 4
else
	ulp_begin "$role" 7
fi

# The interface ID (low 64 bits) of port 1's GID 0, as 16 hex digits: SRP
# names RoCE ports by it (the target port, the initiator's i_port_id).
port_id() {
	sed 's/://g; s/^.\{16\}//' "$sys_ib/ports/1/gids/0"
}

# The target: named by its port GID (targetcli's ib.HEX, ib_srpt's
# configfs 0xHEX); the initiator's ACL by its i_port_id (initiator
# extension 0, then its port ID).
srpt=/sys/kernel/config/target/srpt
target_up() {
	local ini=$1 gid
	modprobe ib_srpt && ulp_configfs || return 1
	gid=$(sed 's/://g' "$sys_ib/ports/1/gids/0")
	ulp_targetcli <<-EOF || return 1
		/backstores/ramdisk create name=vrnic_srp0 size=128M
		/srpt create ib.$gid
		/srpt/ib.$gid/luns create /backstores/ramdisk/vrnic_srp0
		/srpt/ib.$gid/acls create ib.0000000000000000$ini
	EOF
	echo "$cm_port" >"$srpt/discovery_auth/rdma_cm_port" &&
		[ -d "$srpt/0x$gid/tpgt_1/acls/0x0000000000000000$ini/lun_0" ]
}

# The RDMA/CM listener and the fabric's configfs group hold ib_srpt.
target_down() {
	echo "clearconfig confirm=True" | ulp_targetcli &&
		echo 0 >"$srpt/discovery_auth/rdma_cm_port" && rmdir "$srpt" &&
		wait_for 20 modprobe -r ib_srpt
}

if [ "$role" = target ]; then
	ini=$(port_id | pair_swap srp-ids)
	ini=${ini##*$'\n'}
	check "ib_srpt target: 128 MiB ramdisk LUN, ACL for i_port_id ...$ini, rdma_cm port $cm_port" \
		target_up "$ini"
	sed 's/://g' "$sys_ib/node_guid" | pair_swap srp-guid >/dev/null
	pair_barrier_sh srp-up
	pair_barrier_sh srp-done
	check "target cleared, ib_srpt unloaded" target_down
	ulp_res_check
	ulp_end_checks
	ktap_finished
fi

# The SCSI disk of the SRP target's LUN (no udev: from sysfs): under the
# SCSI host that holds the SRP remote port.
srp_disk() {
	local b
	for b in /sys/class/srp_remote_ports/port-*/device/../target*/*/block/*; do
		[ -e "$b" ] && echo "/dev/$(basename "$b")" && return 0
	done
	return 1
}

# rdma_cm addressing: id_ext and ioc_guid are the target's node GUID.
login() {
	local guid=$1
	echo "id_ext=$guid,ioc_guid=$guid,dest=$VRNIC_PEER_IP:$cm_port,max_cmd_per_lun=32" \
		>"/sys/class/infiniband_srp/srp-$VRNIC_IBDEV-1/add_target" &&
		wait_for 30 srp_disk >/dev/null
}

logout() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		echo 1 >"$p/delete" || return 1
	done
	wait_for 30 eval '! srp_disk >/dev/null'
}

port_id | pair_swap srp-ids >/dev/null
modprobe sd_mod && modprobe ib_srp
guid=$(pair_swap srp-guid </dev/null)
guid=${guid##*$'\n'}
pair_barrier_sh srp-up
check "ib_srp login through rdma_cm (dest=$VRNIC_PEER_IP:$cm_port, ioc_guid $guid)" login "$guid"
dev=$(srp_disk)
ktap_print_msg "LUN 0: $dev ($(cat "/sys/block/${dev#/dev/}/size" 2>/dev/null) sectors)"
ulp_fio srp4k32 "$dev" 4k 32
ulp_fio srp128k8 "$dev" 128k 8
check "SRP target port removed" logout
check "ib_srp unloaded" wait_for 20 modprobe -r ib_srp
pair_barrier_sh srp-done
ulp_res_check
ulp_end_checks
ktap_finished
