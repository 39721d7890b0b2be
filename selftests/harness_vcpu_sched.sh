#!/bin/bash
# The harness's host side, seen from the guest: tools/vm set this guest's
# vCPU thread to the policy it was asked for (--vcpu-sched, default idle:
# Documentation/harness.rst, The guest) and wrote what chrt read back.
# usage: harness_vcpu_sched.sh [idle|other]
. "$(dirname "$0")/lib.sh"
want=${1:-idle}
declare -A policy=([idle]=SCHED_IDLE [other]=SCHED_OTHER)

ktap_print_header
ktap_set_plan 1
# tools/vm sets it within a second of QEMU's start; the guest boots later.
sed 's/^/# /' "$VRNIC_OUT/vcpu-sched" 2>/dev/null
check "the vCPU thread runs at ${policy[$want]}" \
	grep -q "policy: ${policy[$want]}\$" "$VRNIC_OUT/vcpu-sched"
ktap_finished
