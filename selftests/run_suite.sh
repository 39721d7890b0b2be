#!/bin/bash
# Run selftests inside a guest, one after another, each framed for the
# host's summary (tools/tap-summary.py):
#   # selftest: NAME      <TAP of the test>      # selftest-exit: NAME RC
# usage: run_suite.sh "NAME:COMMAND" ...
for spec in "$@"; do
	name=${spec%%:*}
	[ "${VRNIC_NODES:-1}" -gt 1 ] && name+="@node$VRNIC_NODE"
	cmd=${spec#*:}
	echo "# selftest: $name"
	timeout -k 5 "${VRNIC_TEST_TIMEOUT:-600}" bash -c "$cmd" 2>&1
	echo "# selftest-exit: $name $?"
done
