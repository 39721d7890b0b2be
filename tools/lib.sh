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
# The whole Linux source as Debian's linux-source-6.12 ships it, a git
# repository (src/, its commit tagged $LINUX_BASE_TAG) that the kernel
# series applies to; keyed by that package's version.
LINUX_BASE_TAG=linux-source-$KERNEL_SERIES
linux_tree_dir() {
	echo "$VRNIC_CACHE/linux-$(dpkg-query -W -f='${Version}' "linux-source-$KERNEL_SERIES" | tr '~' '_')"
}
kernel_dir() { echo "$VRNIC_CACHE/kernel-$1"; }

# The URI of this machine's configured Debian source for SUITE (never a
# host named here): deb822 .sources first, then one-line .list entries.
# vrnic.sources, which setup-apt.sh writes from it, does not count.
configured_uri() {
	local suite=$1
	{
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -e "$f" ] || continue
			[ "$f" = /etc/apt/sources.list.d/vrnic.sources ] && continue
			awk -v s="$suite" '
				/^[ \t]*$/ { if (uri != "" && hit) print uri; uri=""; hit=0; next }
				/^URIs:/ { uri=$2 }
				/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) hit=1 }
				END { if (uri != "" && hit) print uri }' "$f"
		done
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk -v s="$suite" '$1 == "deb" && $3 == s { print $2 }'
	} | head -n 1 || true
}

# -L options giving qemu-system-x86_64 its firmware (SeaBIOS, option ROMs)
# from Debian's packages: the +ds source builds none. One per line, for
# mapfile -t.
qemu_fw_args() {
	local d
	for d in /usr/share/seabios /usr/share/qemu /usr/lib/ipxe/qemu; do
		[ -d "$d" ] && printf '%s
' -L "$d"
	done
	return 0
}

# who_name, who_email: the checkout's git identity, which signs the upstream
# series and maintains the packages.
git_identity() {
	who_name=$(git -C "$VRNIC_TOP" config user.name || git -C "$VRNIC_TOP" log -1 --format=%an)
	who_email=$(git -C "$VRNIC_TOP" config user.email || git -C "$VRNIC_TOP" log -1 --format=%ae)
}
