#!/usr/bin/env bash
# Run vrnic's QEMU qtests (qemu-device/qtest/vrnic-test.c, built into QEMU's
# tests/qtest/qos-test by tools/build-qemu.sh) and print one TAP section for
# tools/tap-summary.py. Each test runs in its own qos-test process, so a test
# that aborts (or a QEMU that crashes) fails that test only.
# usage: tools/qtest.sh [-q QEMU_BINARY] [-t SECONDS] [PATTERN]
#   -q  the QEMU under test (default: the cache build's qemu-system-x86_64)
#   -t  timeout of each test (default 180)
#   PATTERN  run only the tests whose path contains it (grep -F)
# Documentation/qtest.rst lists the tests.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

build="$(qemu_dir)/build"
qemu="$build/qemu-system-x86_64"
timeout=180
while getopts q:t: opt; do
	case $opt in
	q) qemu=$(readlink -f "$OPTARG") ;;
	t) timeout=$OPTARG ;;
	*) echo "usage: $0 [-q QEMU_BINARY] [-t SECONDS] [PATTERN]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
pattern=${1:-}
qos_test="$build/tests/qtest/qos-test"
name=qtest/vrnic

echo "# selftest: $name"
if [ ! -x "$qos_test" ] || [ ! -x "$qemu" ]; then
	echo "Bail out! no $qos_test or $qemu (run: make qemu)"
	echo "# selftest-exit: $name 1"
	exit 1
fi

# qtest starts QEMU through "sh -c exec $QTEST_QEMU_BINARY ...", and takes
# the target from the name's "-system-<arch>" suffix: a wrapper with that
# name adds the firmware directories (the +ds source tree ships none).
work=$(mktemp -d "${TMPDIR:-/tmp}/vrnic-qtest.XXXXXX")
trap 'rm -rf "$work"' EXIT
mapfile -t fw < <(qemu_fw_args)
{
	echo '#!/bin/sh'
	printf 'exec %q' "$qemu"
	printf ' %q' "${fw[@]}"
	echo ' "$@"'
} >"$work/qemu-system-x86_64"
chmod +x "$work/qemu-system-x86_64"
export QTEST_QEMU_BINARY="$work/qemu-system-x86_64"
unset QTEST_QEMU_IMG QTEST_QEMU_STORAGE_DAEMON_BINARY

mapfile -t tests < <("$qos_test" -l 2>/dev/null | grep '^/.*/vrnic' |
	{ if [ -n "$pattern" ]; then grep -F -- "$pattern"; else cat; fi })
if [ "${#tests[@]}" = 0 ]; then
	echo "Bail out! qos-test lists no vrnic test (is CONFIG_VRNIC built?)"
	echo "# selftest-exit: $name 1"
	exit 1
fi

echo "1..${#tests[@]}"
n=0
failed=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	log="$work/$n.log"
	start=$SECONDS
	# The subshell's stderr swallows bash's own "Aborted" notice; the
	# status says it all.
	(cd "$work" && timeout -k 10 "$timeout" "$qos_test" --tap -p "$t" >"$log" 2>&1
	 exit $?) 2>/dev/null
	rc=$?
	secs=$((SECONDS - start))
	if [ "$rc" = 0 ] && grep -q "^ok [0-9]* $t # SKIP" "$log"; then
		echo "ok $n $t # SKIP $(sed -n "s|^ok [0-9]* $t # SKIP *||p" "$log" | head -n 1)"
	elif [ "$rc" = 0 ] && grep -q "^ok [0-9]* $t\$" "$log" && ! grep -q '^not ok' "$log"; then
		echo "ok $n $t (${secs} s)"
	else
		failed=$((failed + 1))
		if [ "$rc" = 124 ]; then
			echo "# timed out after $timeout s"
		elif [ "$rc" -gt 128 ]; then
			echo "# qos-test killed by signal $((rc - 128))"
		fi
		# The test's own lines: its messages, glib's assertion, libqtest's.
		grep -v '^# \(random seed\|Start of\|End of\)\|^TAP version\|^1\.\.' "$log" |
			sed 's/^\(# \)\?/# /'
		echo "not ok $n $t (exit $rc, ${secs} s)"
	fi
done
echo "# selftest-exit: $name $((failed != 0))"
[ "$failed" = 0 ]
