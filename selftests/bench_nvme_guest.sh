#!/bin/bash
# The NVMe half of make bench (tools/bench.sh): NVMe over RDMA between the
# two guests of a pair (node 1 the nvmet-rdma target, node 0 the host, as
# in selftests/vrnic/ulp_nvme.sh), fio on the host, time-based. Node 0
# prints one machine-readable line per measurement:
#   BENCH nvme <row> <value> <unit>
#   BENCH nvme <row> FAIL <reason>
# rows: randread_4k_qd32 (IOPS), lat_4k_qd1_p50 and lat_4k_qd1_p99 (usec,
# completion latency of 4 KiB random reads at iodepth 1), seqread_128k and
# seqwrite_128k (MB/s, iodepth 16); then fio's own output.
# env: BENCH_NVME_RUNTIME seconds per fio job (default 10, plus 2 ramp).
. "$VRNIC_TOP/selftests/lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"
. "$VRNIC_TOP/selftests/ulp_lib.sh"
. "$VRNIC_TOP/selftests/nvme_lib.sh"

runtime=${BENCH_NVME_RUNTIME:-10}
rows="randread_4k_qd32 lat_4k_qd1_p50 lat_4k_qd1_p99 seqread_128k seqwrite_128k"
export VRNIC_BARRIER_TIMEOUT=600

fail_all() {
	local r
	for r in $rows; do echo "BENCH nvme $r FAIL $1"; done
}

if [ "$VRNIC_NODE" = 1 ]; then
	wait_gid 30 && nvme_target_up || echo "nvme target setup failed"
	pair_barrier_sh bench-nvme-up
	pair_barrier_sh bench-nvme-done
	nvme_target_down
	exit 0
fi

modprobe nvme-rdma
pair_barrier_sh bench-nvme-up
if ! wait_gid 30 || ! nvme_host_connect; then
	fail_all "connect(${VRNIC_NIC:-?})"
	pair_barrier_sh bench-nvme-done
	exit 1
fi
dev=/dev/$(nvme_ctrl)n1

# job NAME RW BS DEPTH: one fio job, JSON in /tmp/fio-NAME.json. Within
# the first 256 MiB of the namespace: the target's null_blk keeps every
# block written in its guest's memory, and a sequential write over the
# whole 1 GiB for 12 s at 80 MB/s would fill the 1 GiB guest (the OOM
# killer then ends the target's side of the run).
job() {
	fio --name="$1" --filename="$dev" --ioengine=libaio --direct=1 \
		--size=256M \
		--rw="$2" --bs="$3" --iodepth="$4" --numjobs=1 --time_based \
		--runtime="$runtime" --ramp_time=2 --output-format=json \
		>"/tmp/fio-$1.json" 2>"/tmp/fio-$1.err"
}

# pick NAME FIELD: one number from a job's JSON (python: no jq in the
# guest's package set).
pick() {
	python3 - "/tmp/fio-$1.json" "$2" <<-'EOF'
		import json, sys
		j = json.load(open(sys.argv[1]))["jobs"][0]
		f = sys.argv[2]
		if f == "iops":
		    print("%.0f" % j["read"]["iops"])
		elif f in ("p50", "p99"):
		    p = j["read"]["clat_ns"]["percentile"]
		    print("%.1f" % (p["50.000000" if f == "p50" else "99.000000"] / 1000))
		else:
		    print("%.1f" % (j[f]["bw_bytes"] / 1e6))
	EOF
}

status=0
report() {
	local row=$1 unit=$2 name=$3 field=$4 val
	if val=$(pick "$name" "$field" 2>/dev/null) && [ -n "$val" ]; then
		echo "BENCH nvme $row $val $unit"
	else
		status=1
		echo "BENCH nvme $row FAIL fio-$name:$(head -c 60 "/tmp/fio-$name.err" | tr -cs 'A-Za-z0-9_.:-' '-')"
	fi
}

job randread4k32 randread 4k 32
report randread_4k_qd32 IOPS randread4k32 iops
job randread4k1 randread 4k 1
report lat_4k_qd1_p50 usec randread4k1 p50
report lat_4k_qd1_p99 usec randread4k1 p99
job seqread128k read 128k 16
report seqread_128k MB/s seqread128k read
job seqwrite128k write 128k 16
report seqwrite_128k MB/s seqwrite128k write
for f in /tmp/fio-*.json; do
	echo "## $f"
	sed 's/^/   /' "$f"
done
nvme_host_disconnect
pair_barrier_sh bench-nvme-done
exit "$status"
