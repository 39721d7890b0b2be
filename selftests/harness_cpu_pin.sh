#!/bin/bash
# The harness's host side, seen from the guest: with --pin on (the default:
# Documentation/harness.rst, The guest), tools/vm put this guest's main loop
# and vCPU thread each on the one host CPU it chose, two different CPUs
# where the host has two; with --pin off, both may run on every host CPU.
# tools/vm writes what it asked for and what taskset read back, each CPU
# listed (0,1).
# usage: harness_cpu_pin.sh [on|off]
. "$(dirname "$0")/lib.sh"
want=${1:-on}
f=$VRNIC_OUT/cpu-pin

ktap_print_header
ktap_set_plan 2
sed 's/^/# /' "$f" 2>/dev/null
# pin on; main M; vcpu V; host C,C...   or   pin off; host C,C...
read -r plan <"$f" || plan=
host=${plan##*host }
got_main=$(sed -n 's/^main: //p' "$f")
got_vcpu=$(sed -n 's/^vcpu: //p' "$f")
if [ "$want" = on ]; then
	[[ $plan =~ ^pin\ on\;\ main\ ([0-9]+)\;\ vcpu\ ([0-9]+)\; ]]
	main=${BASH_REMATCH[1]:-none} vcpu=${BASH_REMATCH[2]:-none}
	check "main loop on CPU $main, vCPU on CPU $vcpu, as asked" \
		test "$got_main" = "$main" -a "$got_vcpu" = "$vcpu"
	if [ "${host//[0-9]/}" = "" ]; then
		ktap_test_skip "the host has one CPU: nothing to keep apart"
	else
		check "the vCPU is not on its own main loop's CPU" \
			test "$main" != "$vcpu"
	fi
else
	check "tools/vm was asked for --pin off" grep -q '^pin off; host ' "$f"
	check "main loop and vCPU may run on every host CPU ($host)" \
		test "$got_main" = "$host" -a "$got_vcpu" = "$host"
fi
ktap_finished
