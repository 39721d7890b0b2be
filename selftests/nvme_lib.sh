# shellcheck shell=bash
# NVMe over RDMA for the guest tests (sourced after lib.sh and ulp_lib.sh):
# an nvmet-rdma target with a memory-backed null_blk namespace, configured
# through configfs, and the nvme-cli host side. Used by ulp_nvme.sh and by
# make bench (bench_nvme_guest.sh).
: "${VRNIC_TOP:?run inside a vrnic guest (tools/vm)}"

nqn=nqn.2026-12.org.vrnic:ulp-nvme
port=4420
nvmet=/sys/kernel/config/nvmet

# nvme_target_up: the subsystem $nqn with namespace 1 on /dev/nullb0,
# any host allowed, on an RDMA port at this node's address.
nvme_target_up() {
	modprobe null_blk nr_devices=1 gb=1 memory_backed=1 &&
		modprobe nvmet-rdma && ulp_configfs &&
		mkdir "$nvmet/subsystems/$nqn" &&
		echo 1 >"$nvmet/subsystems/$nqn/attr_allow_any_host" &&
		mkdir "$nvmet/subsystems/$nqn/namespaces/1" &&
		echo -n /dev/nullb0 >"$nvmet/subsystems/$nqn/namespaces/1/device_path" &&
		echo 1 >"$nvmet/subsystems/$nqn/namespaces/1/enable" &&
		mkdir "$nvmet/ports/1" &&
		echo rdma >"$nvmet/ports/1/addr_trtype" &&
		echo ipv4 >"$nvmet/ports/1/addr_adrfam" &&
		echo "$VRNIC_IP" >"$nvmet/ports/1/addr_traddr" &&
		echo "$port" >"$nvmet/ports/1/addr_trsvcid" &&
		ln -s "$nvmet/subsystems/$nqn" "$nvmet/ports/1/subsystems/$nqn"
}

nvme_target_down() {
	rm -f "$nvmet/ports/1/subsystems/$nqn" &&
		rmdir "$nvmet/ports/1" &&
		echo 0 >"$nvmet/subsystems/$nqn/namespaces/1/enable" &&
		rmdir "$nvmet/subsystems/$nqn/namespaces/1" &&
		rmdir "$nvmet/subsystems/$nqn" &&
		modprobe -r nvmet-rdma nvmet null_blk
}

# nvme_ctrl: the host's controller for $nqn (nvme0, ...).
nvme_ctrl() {
	grep -lx "$nqn" /sys/class/nvme/nvme*/subsysnqn 2>/dev/null |
		head -n 1 | xargs -r dirname | xargs -r basename
}

nvme_state_is() {
	local c
	c=$(nvme_ctrl) && [ -n "$c" ] && [ "$(cat "/sys/class/nvme/$c/state")" = "$1" ]
}

# nvme_host_connect: to the peer's $nqn with a read, a default (write) and
# a poll I/O queue of depth 128 (one CPU serves one queue of each map),
# reconnecting every 2 s for up to 120 s when the target goes away.
nvme_host_connect() {
	nvme connect -t rdma -a "$VRNIC_PEER_IP" -s "$port" -n "$nqn" \
		-i 1 -W 1 -P 1 -Q 128 -c 2 -l 120 >/tmp/connect.log 2>&1 &&
		wait_for 30 nvme_state_is live && wait_for 30 test -b "/dev/$(nvme_ctrl)n1"
}

nvme_host_disconnect() {
	nvme disconnect -n "$nqn" >/tmp/disconnect.log 2>&1 && ! wait_for 10 test -n "$(nvme_ctrl)"
}
