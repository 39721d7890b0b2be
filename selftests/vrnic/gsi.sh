#!/bin/bash
# With the 17 mandatory kernel verbs, ib_core attaches its kernel clients:
# ib_mad creates the GSI QP (qpn 1) with a 512-entry RQ, moves it to RTS
# and posts all 512 receives on its PD's local_dma_lkey.
. "$(dirname "$0")/../lib.sh"
dev=$(vrnic_ibdev)

qp=$(mktemp)
cq=$(mktemp)
trap 'rm -f "$qp" "$cq"' EXIT

ktap_print_header
ktap_set_plan 3
rdma res show qp -dd >"$qp" 2>&1
grep -E "lqpn 1 " "$qp" | sed 's/^/# /'
check "GSI QP 1 exists and is in RTS" grep -qE "link $dev/1 lqpn 1 type GSI state RTS" "$qp"
check "ib_mad posted its 512 receives" grep -qE "lqpn 1 .*drv_rq_pi 512" "$qp"
rdma res show cq -dd >"$cq" 2>&1
check "ib_mad's CQ (>= 640 entries) exists" grep -qE "dev $dev cqn [0-9]+ cqe (6[4-9][0-9]|[7-9][0-9][0-9]|[0-9]{4,}) " "$cq"
ktap_finished
