#!/bin/bash
# NVMe over RDMA between the two guests of a pair, on whatever NIC each node
# has (tools/vm --nic: vrnic, rxe or an interop mix), with the standard
# tools: node 1 is the target (nvmet-rdma, a memory-backed null_blk
# namespace configured through configfs), node 0 the host (nvme-cli,
# nvme-rdma with a read, a default (write) and a poll I/O queue, each of
# depth 128: one CPU can serve one queue of each map).
# The host discovers and connects, runs fio with verification (random
# writes, then every block read back and checked: 4 KiB and 128 KiB,
# iodepth 1 and 32, two jobs; once through the poll queue), disconnects
# and connects again (the data is still there), then the target takes its
# subsystem off the port and puts it back while the host keeps its
# controller (it reconnects within ctrl-loss-tmo and the data is still
# there). Both sides unload their ULP and must leave no RDMA object
# behind.
# Knobs: ULP_FIO_SIZE (per job, default 16M); ULP_EXPECT_FAULTS=1 on a
# faulty wire (tools/vm -d fault-*): a vrnic node then also checks that its
# injector dropped frames and its transport recovered (port counters).
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"
. "$VRNIC_TOP/selftests/ulp_lib.sh"
. "$VRNIC_TOP/selftests/nvme_lib.sh"

role=host
[ "$VRNIC_NODE" = 1 ] && role=target
export VRNIC_BARRIER_TIMEOUT=600

if [ "$role" = target ]; then
	ulp_begin "$role" 6
else
	ulp_begin "$role" 17
fi

if [ "$role" = target ]; then
	check "nvmet-rdma target: $nqn on $VRNIC_IP:$port (null_blk, configfs)" nvme_target_up
	pair_barrier_sh nvme-up
	pair_barrier_sh nvme-away
	# The subsystem leaves the port: nvmet drops the host's controller.
	check "subsystem taken off the port" rm "$nvmet/ports/1/subsystems/$nqn"
	sleep 6
	check "subsystem back on the port" \
		ln -s "$nvmet/subsystems/$nqn" "$nvmet/ports/1/subsystems/$nqn"
	pair_barrier_sh nvme-back
	pair_barrier_sh nvme-done
	check "target torn down, nvmet-rdma unloaded" nvme_target_down
	ulp_res_check
	ulp_end_checks
	ktap_finished
fi

modprobe nvme-rdma
pair_barrier_sh nvme-up
disc() {
	nvme discover -t rdma -a "$VRNIC_PEER_IP" -s "$port" >/tmp/discover.log 2>&1 &&
		grep -q "subnqn: *$nqn" /tmp/discover.log &&
		grep -q "trtype: *rdma" /tmp/discover.log
}
check "nvme discover -t rdma finds $nqn" disc
check "nvme connect -t rdma (read, write and poll I/O queues, depth 128)" nvme_host_connect
c=$(nvme_ctrl)
ktap_print_msg "controller $c: queue_count $(cat /sys/class/nvme/$c/queue_count 2>/dev/null), sqsize $(cat /sys/class/nvme/$c/sqsize 2>/dev/null)"
check "all 4 queues up (admin + 3 I/O)" test "$(cat "/sys/class/nvme/$c/queue_count" 2>/dev/null)" = 4
dev=/dev/${c}n1
ulp_fio nvme4k32 "$dev" 4k 32
ulp_fio nvme4k1 "$dev" 4k 1
ulp_fio nvme128k32 "$dev" 128k 32
ulp_fio nvme128k1 "$dev" 128k 1
ulp_fio nvme4k32poll "$dev" 4k 32 --ioengine=io_uring --hipri
check "nvme disconnect" nvme_host_disconnect
check "nvme connect again" nvme_host_connect
ulp_fio nvme4k32 "/dev/$(nvme_ctrl)n1" 4k 32 --verify_only

pair_barrier_sh nvme-away
c=$(nvme_ctrl)
check "the host sees the target go (controller $c leaves live)" \
	wait_for 60 eval '! nvme_state_is live'
pair_barrier_sh nvme-back
check "the host reconnects the same controller within ctrl-loss-tmo" \
	wait_for 120 eval 'nvme_state_is live && [ "$(nvme_ctrl)" = "$c" ]'
ulp_fio nvme4k32 "/dev/${c}n1" 4k 32 --verify_only

check "nvme disconnect, nvme-rdma unloaded" \
	eval 'nvme_host_disconnect && modprobe -r nvme-rdma nvme-fabrics'
ulp_res_check
pair_barrier_sh nvme-done
ulp_end_checks
ktap_finished
