#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# check-syms.sh PROVIDER.so LIB...
#
# Fail if PROVIDER.so needs a dynamic symbol (name@version) that none of LIB
# export. libibverbs dlopen()s providers with RTLD_NOW and skips one that does
# not resolve (a one-line warning at most), so an rdma-core 56.1 symbol missing
# from the host's libibverbs 44 (ibv_cmd_create_cq_ex2, say) must stop the
# build instead. Weak references (w/v) may stay unresolved.
set -eu

[ $# -ge 2 ] || { echo "usage: $0 PROVIDER.so LIB..." >&2; exit 2; }
so=$1
shift

for f in "$so" "$@"; do
	[ -r "$f" ] || { echo "check-syms: cannot read $f" >&2; exit 1; }
done

# Every defined dynamic symbol as "name@VER" ("name@@VER", the default
# version, satisfies a name@VER reference too) and as a bare "name" for
# unversioned references. Assignments keep nm's exit status under set -e.
defined=
for lib in "$@"; do
	out=$(nm -D --defined-only "$lib")
	defined="$defined
$out"
done
exports=$(echo "$defined" | awk 'NF == 3 && $2 != "A" { print $3 }' |
	sed 's/@@/@/' | awk '{ print; sub(/@.*/, ""); print }' | sort -u)

undef=$(nm -D --undefined-only "$so")
missing=$(echo "$undef" | awk '$1 == "U" { print $2 }' | sort -u |
	while read -r sym; do
		echo "$exports" | grep -qxF "$sym" || echo "$sym"
	done)

if [ -n "$missing" ]; then
	echo "check-syms: $so needs symbols that $* do not export:" >&2
	echo "$missing" | sed 's/^/    /' >&2
	exit 1
fi
