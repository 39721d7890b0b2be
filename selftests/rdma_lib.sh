# shellcheck shell=bash
# RDMA helpers for guest pairs (sourced inside a tools/vm guest): the RoCEv2
# GID index of this node's RDMA device and a server/client runner for the
# standard tools (rping, perftest) that keeps the two guests in step.
# Works for either NIC: VRNIC_IBDEV is vrnic0 on a vrnic node, rxe0 on an
# rxe node (tools/vm --nic).
: "${VRNIC_TOP:?run inside a vrnic guest (tools/vm)}"

# roce_gid_index [DEV]: the index of the RoCE v2 GID holding this node's IPv4
# address (::ffff:a.b.c.d), as ibv_devinfo -v lists it (usually 1: index 0
# is the fe80:: link-local GID).
roce_gid_index() {
	local dev=${1:-$VRNIC_IBDEV} i
	i=$(ibv_devinfo -v -d "$dev" 2>/dev/null |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:$VRNIC_IP, RoCE v2$/\1/p" |
		head -n 1)
	[ -n "$i" ] && echo "$i"
}

# wait_gid SECONDS [DEV]: until the IPv4 RoCE v2 GID exists (it appears when
# the address is added; rdma_rxe adds it asynchronously).
wait_gid() {
	local deadline=$((SECONDS + $1))
	until roce_gid_index "${2:-}" >/dev/null; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
}

# A client that ran before its server was listening fails fast with one of
# these; anything else is a real failure and is not retried. perftest -R
# connects twice (its own channel, then the QPs under test), and its server
# listens for the second only after a handshake over the first: a client
# that is quicker there is rejected (RDMA_CM_EVENT_REJECTED), and perftest
# 4.5 then crashes in its own retry while its server waits for a connection
# that never comes.
PAIR_RETRY_PATTERN="Couldn't connect to|RDMA_CM_EVENT_REJECTED|RDMA_CM_EVENT_ADDR_ERROR|RDMA_CM_EVENT_ROUTE_ERROR|RDMA_CM_EVENT_UNREACHABLE|Unexpected CM event bl blka [1378]\\b"

# pair_run NAME TIMEOUT SERVER_CMD CLIENT_CMD
# Node 1 runs SERVER_CMD, node 0 CLIENT_CMD (bash command lines), both
# within TIMEOUT seconds. The client starts after a barrier; when it fails
# to connect (the server may not listen yet), the server's run is ended too
# and both start again, since a server that was half way through a
# connection cannot take a new client. Both nodes meet again at the end, so
# consecutive calls stay in step whatever happened.
# The command's output goes to $PAIR_LOG (default /tmp/pair-NAME.log); the
# status is the command's (124 = timed out).
pair_run() {
	local name=$1 tmo=$2 srv=$3 cli=$4 rc=0 pid try=0 left verdict
	local log=${PAIR_LOG:-/tmp/pair-$name.log} deadline=$((SECONDS + tmo))
	: >"$log"
	while :; do
		try=$((try + 1))
		left=$((deadline - SECONDS))
		[ "$left" -gt 0 ] || left=1
		if [ "$VRNIC_NODE" = 1 ]; then
			# stdbuf: a tool killed by the timeout still leaves its output.
			timeout -k 5 "$left" stdbuf -oL -eL bash -c "$srv" >"$log.try" 2>&1 </dev/null &
			pid=$!
			# Give the server a moment to listen; the client retries anyway.
			sleep 1
			verdict=stop
			pair_barrier_sh "$name-go$try" &&
				verdict=$(VRNIC_BARRIER_TIMEOUT=$((left + 30)) pair_swap "$name-try$try" </dev/null)
			# No client came, or it will come again to a new server.
			if [ "$verdict" = stop ] || [ "$verdict" = retry ]; then
				kill "$pid" 2>/dev/null
			fi
			wait "$pid"
			rc=$?
			cat "$log.try" >>"$log"
			if [ "$verdict" = retry ]; then
				echo "pair_run: $name: the client could not connect (attempt $try), starting the server again" >>"$log"
				rc=0
				continue
			fi
			[ "$verdict" = stop ] && rc=1
		else
			if ! pair_barrier_sh "$name-go$try"; then
				rc=1
			else
				timeout -k 5 "$left" stdbuf -oL -eL bash -c "$cli" >"$log.try" 2>&1 </dev/null
				rc=$?
				verdict=done
				if [ "$rc" != 0 ] && [ "$try" -lt 20 ] && [ "$SECONDS" -lt "$deadline" ] &&
					grep -Eq "$PAIR_RETRY_PATTERN" "$log.try"; then
					verdict=retry
				fi
				echo "$verdict" | pair_swap "$name-try$try" >/dev/null
				cat "$log.try" >>"$log"
				if [ "$verdict" = retry ]; then
					echo "pair_run: $name: client attempt $try could not connect, retrying" >>"$log"
					rc=0
					sleep 1
					continue
				fi
			fi
		fi
		break
	done
	rm -f "$log.try"
	# The closing barrier waits at most for the other side's own timeout.
	VRNIC_BARRIER_TIMEOUT=$((tmo + 30)) pair_barrier_sh "$name-done" || [ "$rc" != 0 ] || rc=1
	return "$rc"
}

# pair_tool NAME TIMEOUT SERVER_CMD CLIENT_ARGS: a standard tool between the
# pair (the client runs SERVER_CMD CLIENT_ARGS), one TAP result, the tail
# of its output as comments. Needs check() from lib.sh and $role.
pair_tool() {
	local name=$1 tmo=$2 srv=$3 cli=$4 rc
	PAIR_LOG=/tmp/$name.log pair_run "$name" "$tmo" "$srv" "$srv $cli"
	rc=$?
	# A failed or retried run shows its whole output, the rest the tail.
	if [ "$rc" != 0 ] || grep -q 'could not connect' "/tmp/$name.log"; then
		sed 's/^/# /' "/tmp/$name.log"
	else
		tail -n 3 "/tmp/$name.log" | sed 's/^/# /'
	fi
	check "$name ($role, exit $rc)" test "$rc" = 0
}

# port_counters [DEV]: port 1's hardware counters (rdma statistic) as
# "name value" lines.
port_counters() {
	rdma statistic show link "${1:-$VRNIC_IBDEV}/1" 2>/dev/null |
		awk '{ for (i = 3; i < NF; i += 2) print $i, $(i + 1) }'
}

pair_barrier_sh() {
	python3 "$VRNIC_TOP/selftests/pair_barrier.py" "$1"
}

# pair_swap NAME < MINE > THEIRS: send stdin to the peer, print what the
# peer sent (both nodes call it with the same NAME).
pair_swap() {
	python3 "$VRNIC_TOP/selftests/pair_swap.py" "$1"
}
