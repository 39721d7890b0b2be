#!/bin/bash
# RC that survives a bad wire: the lossy-wire cases of pair_transport
# (build/selftests/vrnic/pair_transport -L, see pair_transport.c) between
# two vrnic guests started with fault injection, e.g.
#   tools/vm -n 2 -d fault-drop-ppm=10000,fault-reorder-ppm=10000,fault-dup-ppm=1000,fault-corrupt-ppm=1000
#  - RC bulk: >= PAIR_LOSSY_MIB of WRITE, READ and SEND (4 KiB .. 16 MiB),
#    every byte checked where it lands, checksums equal on both sides;
#  - RC FETCH_ADD x PAIR_LOSSY_MSGS: in order, none executed twice;
#  - UC and UD x PAIR_LOSSY_MSGS: only whole, intact messages complete.
# Then the port counters (rdma statistic) around the run, on each node and
# swapped with the peer: this node's injectors dropped, reordered,
# duplicated and corrupted frames; its receiver saw ICRC errors; it never
# ran out of retries; the requester (node 0) retransmitted; the responder
# (node 1) held reordered requests (rx_ooo_held).
# Node 1 is the responder (server), node 0 the requester. Extra arguments
# go to the binary (e.g. -t UD: only the UD case).
# Knobs: PAIR_LOSSY_MIB (RC bulk MiB, default 1024), PAIR_LOSSY_MSGS
# (default 2000), PAIR_LOSSY_QP_TIMEOUT (RC local ACK timeout exponent,
# default 14: 67 ms), PAIR_LOSSY_TIMEOUT (whole binary, default 480 s).
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"

bin=$VRNIC_TOP/build/selftests/vrnic/pair_transport
dev=${VRNIC_IBDEV:-vrnic0}
tmo=${PAIR_LOSSY_TIMEOUT:-480}
args=(-L -B "${PAIR_LOSSY_MIB:-1024}" -N "${PAIR_LOSSY_MSGS:-2000}"
	-T "${PAIR_LOSSY_QP_TIMEOUT:-14}" -t "lossy wire" "$@")
role=requester
[ "$VRNIC_NODE" = 1 ] && role=responder

cases=$("$bin" -l "${args[@]}") || ktap_exit_fail_msg "$bin -l failed (make -C selftests?)"
n=$(printf '%s\n' "$cases" | grep -c .)
ktap_print_header
ktap_set_plan $((n + 8))

wait_gid 30 || ktap_print_msg "no RoCE v2 IPv4 GID on $dev after 30 s"
declare -A before after delta peer
while read -r k val; do before[$k]=$val; done < <(port_counters "$dev")
pair_barrier_sh lossy-go
t0=$SECONDS
# The binary prints the cases' results; this script adds the rest.
timeout -k 5 "$tmo" "$bin" -n "${args[@]}"
rc=$?
[ "$rc" = 124 ] && ktap_print_msg "pair_transport timed out after $tmo s"
ktap_print_msg "pair_transport: exit $rc after $((SECONDS - t0)) s"
VRNIC_BARRIER_TIMEOUT=$((tmo + 30)) pair_barrier_sh lossy-done
while read -r k val; do after[$k]=$val; done < <(port_counters "$dev")
mine=
for k in "${!after[@]}"; do
	delta[$k]=$((after[$k] - ${before[$k]:-0}))
	mine+="$k ${delta[$k]}"$'\n'
done
theirs=$(printf '%s' "$mine" | pair_swap counters) || ktap_print_msg "no counters from the peer"
while read -r k val; do [ -n "$k" ] && peer[$k]=$val; done <<<"$theirs"

# deltas LABEL ARRAY: one comment block, non-zero counters only.
deltas() {
	local -n d=$2
	local k out=
	for k in $(printf '%s\n' "${!d[@]}" | sort); do
		[ "${d[$k]}" != 0 ] && out+="$k +${d[$k]} "
	done
	ktap_print_msg "$1:"
	printf '%s\n' "${out:-(none)}" | fold -s -w 110 | sed 's/^/#   /'
}
deltas "counters of $dev/1 here (node $VRNIC_NODE, $role), change over the run" delta
[ ${#peer[@]} -gt 0 ] && deltas "the peer's (node $((1 - VRNIC_NODE)))" peer

# gt0 NAME: the counter moved here.
gt0() {
	[ -n "${delta[$1]}" ] && [ "${delta[$1]}" -gt 0 ]
}

KTAP_TESTNO=$((n + 1))
for k in fault_drops fault_reorders fault_dups fault_corrupts; do
	check "$k here (node $VRNIC_NODE's injector): +${delta[$k]:-?} > 0" gt0 "$k"
done
# A flipped bit that breaks the headers may count as rx_malformed instead.
check "rx_icrc_err here: +${delta[rx_icrc_err]:-?} > 0 (rx_malformed +${delta[rx_malformed]:-0}; the peer's fault_corrupts +${peer[fault_corrupts]:-?})" \
	gt0 rx_icrc_err
check "retry_exceeded here: +${delta[retry_exceeded]:-?}, want +0" \
	test "${delta[retry_exceeded]:-x}" = 0
# The requester (node 0: every RC request, SEND and WRITE data) had to
# retransmit; the responder's READ responses are never "retransmitted" (a
# lost one is asked for again), so its counter stays 0.
if [ "$VRNIC_NODE" = 0 ]; then
	re=${delta[retransmits]:-}
else
	re=${peer[retransmits]:-}
fi
check "retransmits on the requester (node 0): +${re:-?} > 0" test "${re:-0}" -gt 0
# Requests the wire reordered were held by the responder (node 1) until
# their gap closed, instead of being NAKed and sent again.
if [ "$VRNIC_NODE" = 1 ]; then
	held=${delta[rx_ooo_held]:-}
else
	held=${peer[rx_ooo_held]:-}
fi
check "rx_ooo_held on the responder (node 1): +${held:-?} > 0" test "${held:-0}" -gt 0
# The binary's status covers its own results (non-zero: one failed).
[ "$rc" = 0 ] && [ "$KTAP_CNT_FAIL" = 0 ]
