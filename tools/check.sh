#!/usr/bin/env bash
# make check: host unit tests, then guest selftests (single guest, single
# guest with changed device properties, a pair on one wire), then the
# pyverbs suite modules; one summary at the end.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

out=$VRNIC_TOP/build/check
rm -rf "$out"
mkdir -p "$out"
t0=$SECONDS

step "host unit tests (device core)"
for t in "$VRNIC_TOP"/build/unit/test_*; do
	n=$(basename "$t")
	{
		echo "# selftest: unit/$n"
		"$t" 2>&1
		echo "# selftest-exit: unit/$n $?"
	} >"$out/unit-$n.tap"
done
# The provider's device matching, against a fake sysfs (host libibverbs).
ids=$(echo VRNIC_PCI_VENDOR_ID VRNIC_PCI_DEVICE_ID VRNIC_UVERBS_ABI_VERSION |
	cc -E -P -I"$VRNIC_TOP/uapi" -include vrnic_hw_defs.h -include rdma/vrnic-abi.h - | tail -n 1)
{
	echo "# selftest: unit/provider_match"
	# shellcheck disable=SC2086 # three numbers
	"$VRNIC_TOP/drivers/providers/vrnic/test-match.sh" "$VRNIC_TOP/build/lib/libvrnic" \
		$(printf '%d %d %d' $ids) 2>&1
	echo "# selftest-exit: unit/provider_match $?"
} >"$out/unit-provider_match.tap"
# The provider's data path against a model of the device (host).
{
	echo "# selftest: unit/provider_datapath"
	"$VRNIC_TOP/build/provider/test-datapath" 2>&1
	echo "# selftest-exit: unit/provider_datapath $?"
} >"$out/unit-provider_datapath.tap"
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out"/unit-*.tap | sed '$d'

# guest RUN_NAME [tools/vm options] -- SUITE_SPEC...
guest() {
	local name=$1 opts=()
	shift
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	step "guest: $name"
	local cmd="selftests/run_suite.sh"
	local s
	for s in "$@"; do cmd+=" $(printf '%q' "$s")"; done
	tools/vm -q "${opts[@]}" -- "$cmd" >"$out/$name.tap" 2>"$out/$name.err"
	local rc=$?
	# A run that died without a status still has to show up as a failure.
	if [ "$rc" != 0 ] && ! grep -q '^# selftest-exit:' "$out/$name.tap"; then
		{ echo "# selftest: $name (guest run)"; sed 's/^/# /' "$out/$name.err"
		  echo "# selftest-exit: $name $rc"; } >>"$out/$name.tap"
	fi
	python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/$name.tap" | sed '$d'
}

cd "$VRNIC_TOP"
# pyverbs NAME TESTS...: rdma-core's pyverbs tests against vrnic, as TAP.
pyverbs() {
	local name=$1
	shift
	echo "pyverbs_$name:/usr/bin/python3 selftests/pyverbs/pyverbs_tap.py --dev vrnic0 $*"
}
# The pyverbs cases that need no traffic (traffic arrives with the transport).
pyverbs_objects="test_pd tests.test_cq.CQAPITest test_qp tests.test_mr.MRTest.test_reg_mr_bad_flags"

# 1 GiB: mr_translation registers a 256 MiB MR.
guest single -t 1200 -m 1024 -- \
	"device_attrs:selftests/vrnic/device_attrs.sh" \
	"query_verbs:build/selftests/vrnic/query_verbs" \
	"msix:selftests/vrnic/msix.sh" \
	"gid_table:selftests/vrnic/gid_table.sh" \
	"$(pyverbs device test_device)" \
	"mr_translation:build/selftests/vrnic/mr_translation" \
	"gsi:selftests/vrnic/gsi.sh" \
	"objects:build/selftests/vrnic/objects -T limits_are_exact" \
	"provider_objects:/usr/bin/python3 drivers/providers/vrnic/tests/test_objects_guest.py vrnic0" \
	"$(pyverbs objects $pyverbs_objects)" \
	"process_cleanup:selftests/vrnic/process_cleanup.sh" \
	"module_reload:selftests/vrnic/module_reload.sh"

props=max-qp=77,max-cq=99,max-mr=123,max-pd=55,max-qp-wr=512,max-cqe=256,max-srq=33,max-srq-wr=128,num-comp-vectors=6
expect="VRNIC_EXPECT_MAX_QP=77 VRNIC_EXPECT_MAX_CQ=99 VRNIC_EXPECT_MAX_MR=123"
expect+=" VRNIC_EXPECT_MAX_PD=55 VRNIC_EXPECT_MAX_QP_WR=512 VRNIC_EXPECT_MAX_CQE=256"
expect+=" VRNIC_EXPECT_MAX_SRQ=33 VRNIC_EXPECT_MAX_SRQ_WR=128 VRNIC_EXPECT_NUM_COMP_VECTORS=6"
guest single-props -t 600 -d "$props" -- \
	"device_attrs_props:$expect selftests/vrnic/device_attrs.sh" \
	"query_verbs_props:$expect build/selftests/vrnic/query_verbs" \
	"msix_props:$expect selftests/vrnic/msix.sh" \
	"limits_props:build/selftests/vrnic/objects -t limits_are_exact"

guest pair -n 2 -t 600 -- \
	"pair_ping:selftests/vrnic/pair_ping.sh"

step "summary ($((SECONDS - t0)) s)"
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out"/*.tap
