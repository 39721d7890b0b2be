#!/bin/bash
# Middleware between two vrnic guests, as a user runs it:
#  - UCX (Debian's ucx-utils): ucx_perftest's tag-matching latency and
#    bandwidth, put bandwidth, get and active-message bandwidth, over UCX's
#    UD verbs transport alone and over its RC verbs transport (with UD for
#    wireup, as UCX needs), with UCX_NET_DEVICES naming the vrnic port and
#    nothing else (no TCP, no shared memory). Each side's UCX debug log
#    must show the transport of the run carrying its lanes.
#  - Open MPI over UCX (openmpi-bin, pml ucx): mpi_pingpong, one rank per
#    guest, started by mpirun on node 0 (no ssh here: exec_relay.py is its
#    remote shell). Both nodes check that the RDMA port carried the data.
# Node 1 is the server, node 0 the client.
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

tmo=${PAIR_MIDDLEWARE_TIMEOUT:-180}
role=client
[ "$VRNIC_NODE" = 1 ] && role=server
# ucx_perftest's client before its server listens.
PAIR_RETRY_PATTERN+="|connect\\(\\) failed"
export UCX_NET_DEVICES=$VRNIC_IBDEV:1
TESTS="tag_lat tag_bw ucp_put_bw ucp_get ucp_am_bw"

ktap_print_header
ktap_set_plan 14
wait_gid 30
ping -q -c 2 -w 60 -I "$VRNIC_IFACE" "$VRNIC_PEER_IP" >/dev/null

port=13337
# ucx_runs NAME TLS LANE_RE: each test with UCX_TLS=TLS; UCX's debug log
# (the lanes each endpoint uses) must have one on LANE_RE.
ucx_runs() {
	local name=$1 tls=$2 lane_re=$3 t
	for t in $TESTS; do
		port=$((port + 1))
		pair_tool "ucx_${name}_$t" "$tmo" \
			"UCX_TLS=$tls,self UCX_LOG_LEVEL=debug UCX_LOG_FILE=/tmp/ucx_${name}_$t.debug ucx_perftest -p $port" \
			"-t $t -s 4096 -n 200 $VRNIC_PEER_IP"
	done
	grep -h 'lane\[[0-9]*\]:' /tmp/ucx_"${name}"_*.debug | sort -u |
		head -n 4 | sed 's/^.*UCX  DEBUG */# /'
	check "ucx_$name ($role): lanes on $lane_re" \
		grep -qE "lane\[[0-9]+\]: +[0-9]+:$lane_re/$VRNIC_IBDEV:1" \
		/tmp/ucx_"${name}"_tag_bw.debug
}
ucx_runs ud ud_verbs ud_verbs
ucx_runs rc rc_verbs,ud_verbs rc_verbs

# Open MPI over UCX: mpirun (node 0) starts rank 1's daemon on node 1
# through exec_relay.py.
before=$(port_counters "$VRNIC_IBDEV" | awk '$1 == "rx_bytes" { print $2 }')
if [ "$role" = server ]; then
	python3 "$VRNIC_TOP/selftests/exec_relay.py" --serve >/tmp/relay.log 2>&1 &
	relay=$!
	pair_barrier mpi-go
	VRNIC_BARRIER_TIMEOUT=$((tmo + 60)) pair_barrier mpi-done
	kill "$relay"
	sed 's/^/# /' /tmp/relay.log | cut -c 1-200
	check "mpi: exec_relay started mpirun's daemon here" grep -q orted /tmp/relay.log
else
	pair_barrier mpi-go
	timeout -k 5 "$tmo" mpirun --allow-run-as-root -np 2 \
		-H "$VRNIC_IP:1,$VRNIC_PEER_IP:1" \
		--mca plm_rsh_agent "$VRNIC_TOP/selftests/exec_relay.py" \
		--mca oob_tcp_if_include "$VRNIC_IFACE" \
		--mca pml ucx --mca osc ucx --mca btl self \
		-x UCX_NET_DEVICES -x UCX_TLS=rc_verbs,ud_verbs,self \
		"$VRNIC_TOP/build/selftests/vrnic/mpi_pingpong" >/tmp/mpi.log 2>&1
	rc=$?
	sed 's/^/# /' /tmp/mpi.log
	check "mpi_pingpong over UCX, ranks on both guests (exit $rc)" \
		grep -q '^mpi_pingpong: ok' /tmp/mpi.log
	VRNIC_BARRIER_TIMEOUT=$((tmo + 60)) pair_barrier mpi-done
fi
after=$(port_counters "$VRNIC_IBDEV" | awk '$1 == "rx_bytes" { print $2 }')
# 20 round trips of 1 MiB alone bring 20 MiB each way.
check "mpi ($role): the RDMA port received $((after - before)) bytes (>= 20 MiB)" \
	test $((after - before)) -ge $((20 << 20))
ktap_finished
