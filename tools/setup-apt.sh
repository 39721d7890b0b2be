#!/usr/bin/env bash
# Install the Debian packages vrnic needs (idempotent).
#
# Adds, derived from the machine's own configured Debian sources (never a
# hard-coded host): deb-src for bookworm*, bookworm-backports (meson >= 1.5,
# python3-pycotap for QEMU 10.0) and deb-src for trixie (rdma-core 56.1 source).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || die "setup-apt must run as root (apt-get install)" "sudo make setup"

SRC_FILE=/etc/apt/sources.list.d/vrnic.sources

# Print "URI" of the first configured source carrying suite $1 (deb822 or one-line).
write_sources() {
	local main sec
	main=$(configured_uri bookworm)
	sec=$(configured_uri bookworm-security)
	[ -n "$main" ] || die "no configured Debian source for bookworm found in /etc/apt" \
		"configure a Debian bookworm apt source, then: make setup"
	local tmp
	tmp=$(mktemp)
	{
		echo "# Written by vrnic tools/setup-apt.sh from this machine's own Debian sources."
		echo "Types: deb-src"
		echo "URIs: $main"
		echo "Suites: bookworm bookworm-updates"
		echo "Components: main"
		echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
		echo
		echo "Types: deb deb-src"
		echo "URIs: $main"
		echo "Suites: bookworm-backports"
		echo "Components: main"
		echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
		echo
		echo "Types: deb-src"
		echo "URIs: $main"
		echo "Suites: trixie"
		echo "Components: main"
		echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
		if [ -n "$sec" ]; then
			echo
			echo "Types: deb-src"
			echo "URIs: $sec"
			echo "Suites: bookworm-security"
			echo "Components: main"
			echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
		fi
	} >"$tmp"
	if ! cmp -s "$tmp" "$SRC_FILE"; then
		step "apt sources: writing $SRC_FILE (deb-src, bookworm-backports)"
		install -m 0644 "$tmp" "$SRC_FILE"
		rm -f "$VRNIC_CACHE/.apt-updated"
	fi
	rm -f "$tmp"
}

mkdir -p "$VRNIC_CACHE"
write_sources

# One apt-get update per day is enough; a missing package triggers another.
stamp="$VRNIC_CACHE/.apt-updated"
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
	step "apt-get update"
	apt-get update -q || die "apt-get update" "make setup"
	touch "$stamp"
fi

KREL=$(guest_kernel_release)
[ -n "$KREL" ] || die "no linux-image-$KERNEL_SERIES.*+deb12-amd64 in the apt lists" "apt-get update && make setup"

PKGS=(
	# QEMU build
	build-essential pkg-config ninja-build python3-venv ccache
	libglib2.0-dev libpixman-1-dev libattr1-dev libcap-ng-dev
	seabios qemu-system-data ipxe-qemu
	# guest image and harness
	busybox-static cpio xz-utils zstd kmod iproute2 iputils-ping pciutils
	# wire checks: decode captured RoCEv2 frames
	tshark
	# make bench's picture
	gnuplot-nox
	# kernel module, checkpatch and kselftest headers; the kernel series'
	# in-tree build (tools/patches.sh)
	"linux-headers-$KREL" linux-source-$KERNEL_SERIES flex bison libelf-dev python3-ply
	# rdma userland used inside the guests
	rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev
	rdmacm-utils perftest python3-pyverbs
	# middleware between guests (selftests/vrnic/pair_middleware.sh)
	ucx-utils openmpi-bin libopenmpi-dev
	# provider build, and rdma-core's own build of it (tools/patches.sh)
	cmake dpkg-dev libnl-3-dev libnl-route-3-dev
	# the Debian packages (tools/deb.sh) and the own-VM test's image
	debhelper dh-dkms dkms mmdebstrap e2fsprogs
	# fuzzing the device core (make fuzz): clang's libFuzzer and sanitizer runtimes
	clang libclang-rt-14-dev
	# the kernel's RDMA consumers between guests (selftests/vrnic/ulp_*)
	nvme-cli fio nfs-kernel-server nfs-common rpcbind targetcli-fb open-iscsi
	srptools
)
BPO_PKGS=(meson python3-pycotap)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	step "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		die "apt-get install ${missing[*]}" "make setup"
fi

# meson >= 1.5 (QEMU 10.0) exists only in bookworm-backports.
mver=$(dpkg-query -W -f='${Version}' meson 2>/dev/null || true)
if [ -z "$mver" ] || dpkg --compare-versions "$mver" lt 1.5 ||
	! dpkg-query -W python3-pycotap >/dev/null 2>&1; then
	step "apt-get install -t bookworm-backports ${BPO_PKGS[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-t bookworm-backports "${BPO_PKGS[@]}" ||
		die "installing meson from bookworm-backports" "make setup"
fi
info "packages: ok (guest kernel $KREL)"
