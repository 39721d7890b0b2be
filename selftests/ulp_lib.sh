# shellcheck shell=bash
# Helpers for the kernel-ULP selftests (selftests/vrnic/ulp_*.sh, sourced
# after lib.sh and rdma_lib.sh inside a tools/vm guest): verified block I/O
# with fio, the RDMA objects a ULP leaves behind, configfs.
: "${VRNIC_TOP:?run inside a vrnic guest (tools/vm)}"

# ulp_configfs: mount configfs if it is not (nvmet and LIO live there).
ulp_configfs() {
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
}

# ulp_targetcli < COMMANDS: run targetcli-fb commands (LIO, configfs),
# output in /tmp/targetcli.log and as comments. targetcli asks the system
# D-Bus for tcmu-runner's backstores even when there is none, so a bus is
# started first if the guest has none.
ulp_targetcli() {
	local rc
	ulp_configfs || return 1
	if [ ! -S /run/dbus/system_bus_socket ]; then
		mkdir -p /run/dbus && dbus-daemon --system --fork || return 1
	fi
	{ echo "set global auto_save_on_exit=false"; cat; } | targetcli >/tmp/targetcli.log 2>&1
	rc=$?
	grep -v '^ *[o|]' /tmp/targetcli.log | tail -n 8 | sed 's/^/# targetcli: /'
	return "$rc"
}

# ulp_res: this node's RDMA device's object counts but CQs, one line, as
# rdma res sees them ("pd 3 qp 5 cm_id 0 mr 0 ctx 0 srq 0") and, on a vrnic
# node, as the driver counts them (debugfs res_count: every MR the kernel
# made, fast-registration MRs included). CQs are left out: ib_core's CQ
# pool (ib_cq_pool_get, used by nvme-rdma, nvmet, SRP, NFS) keeps the CQs
# it made until the device is unregistered.
ulp_res() {
	rdma res show 2>/dev/null |
		sed -n "s/^[0-9]*: $VRNIC_IBDEV: //p" | sed 's/cq [0-9]* //' | tr -d '\n'
	if [ "${VRNIC_NIC:-}" = vrnic ]; then
		printf '; device:'
		grep -hv '^cq ' /sys/kernel/debug/vrnic/*/res_count | tr '\n' ' '
	fi
	echo
}

# ulp_fio NAME DEV BS DEPTH [FIO_ARGS...]: random writes then a verified
# read of every block by two jobs, each on its own ULP_FIO_SIZE region of
# DEV (default 16M), with O_DIRECT. One TAP result; fio's summary lines as
# comments. --verify_only as an extra argument checks what an earlier
# run with the same NAME, BS and DEPTH wrote.
ulp_fio() {
	local name=$1 dev=$2 bs=$3 depth=$4 size=${ULP_FIO_SIZE:-16M} rc=1
	shift 4
	[ -b "$dev" ] && fio --name="$name" --filename="$dev" --ioengine=libaio --direct=1 \
		--rw=randwrite --bs="$bs" --iodepth="$depth" --numjobs=2 \
		--size="$size" --offset_increment="$size" --verify=crc32c \
		--verify_fatal=1 --randrepeat=1 --group_reporting \
		--output-format=normal "$@" >"/tmp/fio-$name.log" 2>&1
	rc=$?
	grep -E 'err=|WRITE:|READ:|verify' "/tmp/fio-$name.log" | head -n 6 | sed 's/^/# /'
	check "fio $name: bs $bs iodepth $depth x2 jobs $* (exit $rc)" test "$rc" = 0
}

# ulp_begin ROLE CHECKS: the TAP header and plan (CHECKS of the script,
# this function's GID check and ulp_res_check included, then those of
# ulp_end_checks), the node's line, the GID check; the RDMA objects before
# the ULP in $ulp_before.
ulp_begin() {
	ktap_print_header
	ktap_set_plan $(($2 + $(ulp_end_planned)))
	ktap_print_msg "node $VRNIC_NODE ($1): NIC ${VRNIC_NIC:-?}, $VRNIC_IP, RDMA device ${VRNIC_IBDEV:-none}"
	check "$VRNIC_IBDEV active with a RoCE v2 IPv4 GID" wait_gid 30
	ulp_before=$(ulp_res)
	ktap_print_msg "RDMA objects before: $ulp_before"
}

# ulp_res_check: once the ULP is unloaded, the objects are those before.
ulp_res_check() {
	local after
	after=$(ulp_res)
	ktap_print_msg "RDMA objects after: $after"
	check "no RDMA object left behind (rdma res, res_count)" test "$after" = "$ulp_before"
}

# ulp_end_planned: the number of checks ulp_end_checks makes, for the TAP
# plan: on a vrnic node 1, plus 1 with ULP_EXPECT_FAULTS=1; else 0.
ulp_end_planned() {
	if [ "${VRNIC_NIC:-}" != vrnic ]; then
		echo 0
	elif [ "${ULP_EXPECT_FAULTS:-0}" = 1 ]; then
		echo 2
	else
		echo 1
	fi
}

# ulp_end_checks: after the ULP is gone, on a vrnic node. On a faulty wire
# (ULP_EXPECT_FAULTS=1) the ULP's traffic met the injector and the
# transport recovered: fault_drops and retransmits both > 0. Then vrnic's
# modules unload (ib_core destroys what its CQ pool kept) without a
# warning or a leak report from ib_core's resource tracking or the driver.
ulp_end_checks() {
	[ "${VRNIC_NIC:-}" = vrnic ] || return 0
	if [ "${ULP_EXPECT_FAULTS:-0}" = 1 ]; then
		local drops rexmit
		drops=$(port_counters | awk '$1 == "fault_drops" { print $2 }')
		rexmit=$(port_counters | awk '$1 == "retransmits" { print $2 }')
		port_counters | grep -E '^(fault_|retransmits|timeouts|implied|rx_out_of_seq|rx_duplicate)' |
			tr '\n' ' ' | sed 's/^/# /; s/$/\n/'
		check "the wire was lossy and RC recovered (fault_drops ${drops:-?}, retransmits ${rexmit:-?})" \
			test "${drops:-0}" -gt 0 -a "${rexmit:-0}" -gt 0
	fi
	local mark
	mark=$(dmesg | wc -l)
	vrnic_unloads() {
		vrnic_unload || return 1
		dmesg | tail -n +$((mark + 1)) >/tmp/unload.dmesg
		sed 's/^/# /' /tmp/unload.dmesg | tail -n 5
		! grep -Eiq 'WARNING|leak|not freed|restrack|BUG' /tmp/unload.dmesg
	}
	check "vrnic_rdma.ko and vrnic.ko unload afterwards, no leak or warning in dmesg" vrnic_unloads
}
