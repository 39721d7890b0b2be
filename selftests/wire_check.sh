#!/usr/bin/env bash
# Host-side check of a wire capture (tools/vm --pcap FILE), as TAP:
#   - tshark reads it and decodes its RoCEv2 frames (UDP 4791) as InfiniBand;
#   - no RoCEv2 frame is malformed or carries an expert warning/error;
#   - every expected BTH opcode (-o) occurs at least once;
#   - optionally (-p A,B) a ping A -> B and its reply B -> A are in it;
#   - build/bin/icrc-check validates the ICRC of every RoCEv2 frame (tshark
#     shows the ICRC but never verifies it).
#
# usage: selftests/wire_check.sh [options] FILE.pcap
#   -o OPCODE   expect this BTH opcode (repeatable): a number (10, 0x0a) or
#               the IBTA name as in the kernel's ib_pack.h without
#               IB_OPCODE_, e.g. RC_RDMA_WRITE_ONLY, RC_ACKNOWLEDGE,
#               UD_SEND_ONLY (CM MADs on QP1)
#   -m N        at least N RoCEv2 frames (default 1; 0 for a capture of
#               Ethernet traffic only)
#   -p A,B      expect ICMP echo request A -> B and echo reply B -> A
#   -t TCLASS   expect RoCEv2 frames carrying this traffic class (IPv4 DS
#               byte: DSCP = TCLASS >> 2, ECN = TCLASS & 3) and count the
#               frames of each class
#   -l BYTES    expect RoCEv2 frames whose IP packet is at least BYTES long
#               and none longer than BYTES + 100 (the path MTU in use:
#               4096 + headers for jumbo frames)
#   -I          do not run icrc-check
# Exit status 0 when every check passed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
VRNIC_CACHE=${VRNIC_CACHE:-$HOME/.cache/vrnic}
. "$VRNIC_CACHE/linux-source-6.12/tools/testing/selftests/kselftest/ktap_helpers.sh"

# BTH opcodes (IBTA vol. 1 table 38): transport base + operation.
declare -A OPS=(
	[SEND_FIRST]=0x00 [SEND_MIDDLE]=0x01 [SEND_LAST]=0x02
	[SEND_LAST_WITH_IMMEDIATE]=0x03 [SEND_ONLY]=0x04
	[SEND_ONLY_WITH_IMMEDIATE]=0x05 [RDMA_WRITE_FIRST]=0x06
	[RDMA_WRITE_MIDDLE]=0x07 [RDMA_WRITE_LAST]=0x08
	[RDMA_WRITE_LAST_WITH_IMMEDIATE]=0x09 [RDMA_WRITE_ONLY]=0x0a
	[RDMA_WRITE_ONLY_WITH_IMMEDIATE]=0x0b [RDMA_READ_REQUEST]=0x0c
	[RDMA_READ_RESPONSE_FIRST]=0x0d [RDMA_READ_RESPONSE_MIDDLE]=0x0e
	[RDMA_READ_RESPONSE_LAST]=0x0f [RDMA_READ_RESPONSE_ONLY]=0x10
	[ACKNOWLEDGE]=0x11 [ATOMIC_ACKNOWLEDGE]=0x12 [COMPARE_SWAP]=0x13
	[FETCH_ADD]=0x14 [SEND_LAST_WITH_INVALIDATE]=0x16
	[SEND_ONLY_WITH_INVALIDATE]=0x17
)
declare -A BASE=([RC]=0x00 [UC]=0x20 [RD]=0x40 [UD]=0x60 [XRC]=0xa0)

# opcode NAME|NUMBER -> decimal, or fail
opcode() {
	case "$1" in
	[0-9]*) echo $(($1)) ;;
	*_*)
		local t=${1%%_*} op=${1#*_}
		[ -n "${BASE[$t]:-}" ] && [ -n "${OPS[$op]:-}" ] || return 1
		echo $((BASE[$t] + OPS[$op]))
		;;
	*) return 1 ;;
	esac
}

usage() { sed -n '2,/^# Exit/s/^# \{0,1\}//p' "$0"; }

expect=() min=1 ping= icrc=1 tclass= big=
while getopts o:m:p:t:l:Ih opt; do
	case "$opt" in
	o) expect+=("$OPTARG") ;;
	m) min=$OPTARG ;;
	p) ping=$OPTARG ;;
	t) tclass=$((OPTARG)) ;;
	l) big=$((OPTARG)) ;;
	I) icrc=0 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 1 ] || { usage >&2; exit 2; }
pcap=$1

ktap_print_header
ktap_set_plan $((2 + ${#expect[@]} + (${ping:+1} + 0) + (${tclass:+1} + 0) + (${big:+1} + 0) + 1))

# tshark insists on saying it runs as root; keep its stderr for real errors.
# Two of its heuristics claim tiny SEND payloads (perftest's 2-byte sends)
# and then report them malformed: RPC-over-RDMA, and Ethernet over IB,
# which takes a payload whose first two bytes happen to be a known
# EtherType (0x8926, VN-Tag, in one run) for a frame. RoCE frames here
# carry neither.
ts() {
	tshark -r "$pcap" --disable-protocol rpcordma \
		--disable-heuristic eth_over_ib "$@" \
		2> >(grep -v '^Running as user' >&2)
}

roce='(infiniband || udp.dstport == 4791)'
if ! command -v tshark >/dev/null; then
	ktap_exit_fail_msg "tshark not installed (make setup)"
fi
if ! ops=$(ts -Y infiniband -T fields -e infiniband.bth.opcode); then
	ktap_exit_fail_msg "tshark cannot read $pcap"
fi
nroce=$(grep -c . <<<"$ops")
ntotal=$(ts -T fields -e frame.number | grep -c .)
ktap_print_msg "$pcap: $ntotal frames, $nroce RoCEv2 (InfiniBand) frames"
# Opcode histogram, for the log.
sort -n <<<"$ops" | uniq -c | while read -r n op; do
	[ -n "$op" ] && ktap_print_msg "  opcode $op: $n"
done
check_min() { [ "$nroce" -ge "$min" ]; }
ktap_test_result "at least $min RoCEv2 frame(s) decoded ($nroce)" check_min

bad=$(ts -Y "$roce && (_ws.malformed || _ws.expert.severity >= warning)")
if [ -z "$bad" ]; then
	ktap_test_pass "no malformed RoCEv2 frame, no expert warning"
else
	head -n 20 <<<"$bad" | sed 's/^/# /'
	ktap_test_fail "no malformed RoCEv2 frame, no expert warning ($(grep -c . <<<"$bad") bad)"
fi

for e in "${expect[@]}"; do
	if ! n=$(opcode "$e"); then
		ktap_test_fail "opcode $e: unknown name"
		continue
	fi
	has_op() { grep -qx "$n" <<<"$ops"; }
	ktap_test_result "opcode $e ($(printf '0x%02x' "$n")) present" has_op
done

if [ -n "$ping" ]; then
	a=${ping%,*} b=${ping#*,}
	req=$(ts -Y "icmp.type == 8 && ip.src == $a && ip.dst == $b" -T fields -e icmp.seq | grep -c .)
	rep=$(ts -Y "icmp.type == 0 && ip.src == $b && ip.dst == $a" -T fields -e icmp.seq | grep -c .)
	ktap_print_msg "ping $a -> $b: $req echo request(s), $rep echo reply(ies)"
	both() { [ "$req" -gt 0 ] && [ "$rep" -gt 0 ]; }
	ktap_test_result "ping $a -> $b captured in both directions" both
fi

if [ -n "$tclass" ]; then
	dscp=$((tclass >> 2)) ecn=$((tclass & 3))
	ts -Y infiniband -T fields -e ip.dsfield.dscp -e ip.dsfield.ecn |
		sort | uniq -c | while read -r n d e; do
			ktap_print_msg "  DSCP $d ECN $e: $n frame(s)"
		done
	ntc=$(ts -Y "infiniband && ip.dsfield.dscp == $dscp && ip.dsfield.ecn == $ecn" \
		-T fields -e frame.number | grep -c .)
	has_tc() { [ "$ntc" -gt 0 ]; }
	ktap_test_result "traffic class $tclass on the wire: DSCP $dscp ECN $ecn ($ntc frames)" has_tc
fi

if [ -n "$big" ]; then
	lens=$(ts -Y infiniband -T fields -e ip.len | sort -n)
	nbig=$(awk -v b="$big" '$1 >= b' <<<"$lens" | grep -c .)
	largest=$(tail -n 1 <<<"$lens")
	ktap_print_msg "RoCEv2 IP packets: ${largest:-none} bytes the largest, $nbig of at least $big"
	sized() { [ "$nbig" -gt 0 ] && [ "${largest:-0}" -le $((big + 100)) ]; }
	ktap_test_result "RoCEv2 packets of $big..$((big + 100)) bytes ($nbig), none longer" sized
fi

ic=$top/build/bin/icrc-check
if [ "$icrc" = 0 ]; then
	ktap_test_skip "ICRC of every RoCEv2 frame (icrc-check not requested)"
elif [ ! -x "$ic" ]; then
	ktap_test_skip "ICRC of every RoCEv2 frame ($ic not built)"
else
	out=$("$ic" "$pcap" 2>&1)
	rc=$?
	tail -n 20 <<<"$out" | sed 's/^/# /'
	ktap_test_result "ICRC of every RoCEv2 frame valid (icrc-check)" test "$rc" = 0
fi
ktap_finished
