# Shared helpers for the vrnic tools/ scripts (sourced, not executed).
# Everything heavy lives in VRNIC_CACHE, outside the clone, keyed by version.

VRNIC_CACHE=${VRNIC_CACHE:-$HOME/.cache/vrnic}
VRNIC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Pinned inputs. Changing one of these selects a new cache directory.
QEMU_VERSION=10.0.2
QEMU_SUITE=bookworm-backports
# The cached QEMU repository's commit of the release, which the series applies to.
QEMU_BASE_TAG=qemu-$QEMU_VERSION
RDMA_CORE_SUITE=trixie
KERNEL_SERIES=6.12

step() { printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
info() { printf '    %s\n' "$*"; }
die() {
	printf '\nvrnic: FAILED: %s\n' "$1" >&2
	[ -n "${2:-}" ] && printf 'vrnic: to retry: %s\n' "$2" >&2
	exit 1
}

# The newest linux-image-6.12.N+deb12-amd64 version string ("6.12.N+deb12-amd64").
# sort -V matters: plain sort ranks 6.12.9 above 6.12.48.
guest_kernel_release() {
	if [ -n "${VRNIC_KERNEL:-}" ]; then
		echo "$VRNIC_KERNEL"
		return
	fi
	apt-cache pkgnames "linux-image-$KERNEL_SERIES." 2>/dev/null |
		sed -n "s/^linux-image-\($KERNEL_SERIES\.[0-9]*+deb12-amd64\)$/\1/p" |
		sort -V | tail -n 1
}

qemu_dir() { echo "$VRNIC_CACHE/qemu-$QEMU_VERSION"; }
kernel_dir() { echo "$VRNIC_CACHE/kernel-$1"; }
