#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Debian packages of the guest side, with Debian's tooling
# (Documentation/packages.rst):
#   vrnic-dkms               vrnic.ko's sources; DKMS builds them for each
#                            installed kernel from 6.12 on
#   vrnic-ibverbs-provider   libvrnic in libibverbs' provider directory and
#                            /etc/libibverbs.d/vrnic.driver
# One source package, vrnic, staged from this checkout in build/deb/src/ and
# built with dpkg-buildpackage; the .dsc, .debs and .buildinfo land in
# build/deb/. The version is 1.<interface minor>.<commits on this branch>
# (+local when packaged files have uncommitted changes).
#
#   tools/deb.sh           build
#   tools/deb.sh --check   build, then check the packages on the host (TAP)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

check=0
case ${1:-} in
--check) check=1 ;;
"") ;;
*) die "usage: tools/deb.sh [--check]" ;;
esac

out="$VRNIC_TOP/build/deb"
rdma_src="$VRNIC_CACHE/rdma-core-$RDMA_CORE_SUITE/src"
[ -e "$rdma_src/libibverbs/driver.h" ] || die "no rdma-core source in $rdma_src" "make setup"
command -v dh_dkms >/dev/null || die "no dh_dkms (package dh-dkms)" "make setup"

top() { git -C "$VRNIC_TOP" "$@"; }
packaged=(drivers/net/ethernet/vrnic drivers/infiniband/hw/vrnic drivers/providers/vrnic uapi packaging)
minor=$(sed -n 's/^#define VRNIC_VERSION_MINOR\t\([0-9]*\)$/\1/p' "$VRNIC_TOP/uapi/vrnic_hw_defs.h")
major=$(sed -n 's/^#define VRNIC_VERSION_MAJOR\t\([0-9]*\)$/\1/p' "$VRNIC_TOP/uapi/vrnic_hw_defs.h")
version="$major.$minor.$(top rev-list --count HEAD)"
top diff --quiet HEAD -- "${packaged[@]}" || version="$version+local"
git_identity

# ---- stage the source package ----------------------------------------------
step "Debian packages $version: staging the vrnic source package"
src="$out/src/vrnic-$version"
rm -rf "$out"
mkdir -p "$src"
# Tracked files only: no build products of the checkout.
top ls-files -z -- drivers/net/ethernet/vrnic drivers/infiniband/hw/vrnic drivers/providers/vrnic uapi |
	(cd "$VRNIC_TOP" && xargs -0 cp --parents -t "$src")
cp -a "$VRNIC_TOP/packaging/debian" "$src/debian"
sed -i "s|@MAINTAINER@|$who_name <$who_email>|" "$src/debian/control"
cat >"$src/debian/changelog" <<-CHANGELOG
vrnic ($version) unstable; urgency=medium

  * Built from the vrnic checkout at $(top rev-parse --short HEAD).

 -- $who_name <$who_email>  $(date -R -d "@$(top log -1 --format=%ct)")
CHANGELOG
# What the provider's Makefile takes from rdma-core: its private headers and
# the two build scripts (drivers/providers/vrnic/Makefile), with their
# licence texts.
mkdir -p "$src/rdma-core/buildlib" "$src/rdma-core/libibverbs"
cp "$rdma_src/CMakeLists.txt" "$rdma_src"/COPYING.* "$src/rdma-core/"
cp "$rdma_src/buildlib/config.h.in" "$rdma_src/buildlib/make_abi_structs.py" "$src/rdma-core/buildlib/"
cp "$rdma_src"/libibverbs/*.h "$src/rdma-core/libibverbs/"
cp -a "$rdma_src/kernel-headers" "$rdma_src/util" "$rdma_src/ccan" "$src/rdma-core/"

# ---- build -------------------------------------------------------------------
step "Debian packages $version: dpkg-buildpackage (source and binary)"
(cd "$src" && dpkg-buildpackage -us -uc >"$out/build.log" 2>&1) ||
	{ tail -n 30 "$out/build.log" >&2; die "dpkg-buildpackage (see $out/build.log)" "make deb"; }
mv "$out"/src/*.deb "$out"/src/*.dsc "$out"/src/*.tar.* "$out"/src/*.buildinfo "$out"/src/*.changes "$out/"
for f in "$out"/*.deb; do info "$f"; done
[ "$check" = 1 ] || exit 0

# ---- check on the host (TAP) -------------------------------------------------
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
nok() { n=$((n + 1)); fail=1; echo "not ok $n $1"; }
echo "TAP version 13"
echo "1..6"
dkms_deb="$out/vrnic-dkms_${version}_all.deb"
prov_deb="$out/vrnic-ibverbs-provider_${version}_amd64.deb"
if [ -s "$dkms_deb" ] && [ -s "$prov_deb" ] && [ -s "$out/vrnic_$version.dsc" ]; then
	ok "dpkg-buildpackage built vrnic_$version.dsc, vrnic-dkms and vrnic-ibverbs-provider"
else
	nok "dpkg-buildpackage built the source and both binary packages"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$dkms_deb" "$work/dkms"
dsrc="$work/dkms/usr/src/vrnic-$version"
if grep -qx "PACKAGE_VERSION=\"$version\"" "$dsrc/dkms.conf" 2>/dev/null &&
   cmp -s "$dsrc/uapi/vrnic_hw_defs.h" "$VRNIC_TOP/uapi/vrnic_hw_defs.h" &&
   [ "$(cd "$dsrc/drivers" && ls net/ethernet/vrnic/*.c infiniband/hw/vrnic/*.c | wc -l)" = \
     "$(top ls-files 'drivers/net/ethernet/vrnic/*.c' 'drivers/infiniband/hw/vrnic/*.c' | wc -l)" ] &&
   dpkg-deb -f "$dkms_deb" Depends | grep -qw dkms; then
	ok "vrnic-dkms: /usr/src/vrnic-$version with dkms.conf, the driver and uapi/; depends on dkms"
else
	nok "vrnic-dkms's contents"; ls -R "$work/dkms" | head -n 20 | sed 's/^/# /'
fi
# DKMS's own build, in a private tree: the host's DKMS state is untouched.
krel=$(guest_kernel_release)
mkdir -p "$work/dkmstree"
if dkms build -m vrnic -v "$version" -k "$krel" --dkmstree "$work/dkmstree" \
	--sourcetree "$work/dkms/usr/src" >"$work/dkms.log" 2>&1 &&
   ko=$(ls "$work/dkmstree/vrnic/$version/$krel/x86_64/module"/vrnic.ko* 2>/dev/null | head -n 1) &&
   rko=$(ls "$work/dkmstree/vrnic/$version/$krel/x86_64/module"/vrnic_rdma.ko* 2>/dev/null | head -n 1) &&
   [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$krel" ] &&
   [ "$(modinfo -F vermagic "$rko" | cut -d' ' -f1)" = "$krel" ] &&
   modinfo -F alias "$rko" | grep -qx 'auxiliary:vrnic.rdma'; then
	ok "dkms build makes vrnic.ko and vrnic_rdma.ko (alias auxiliary:vrnic.rdma) for the guest kernel $krel"
else
	nok "dkms build for $krel"; tail -n 20 "$work/dkms.log" | sed 's/^/# /'
	find "$work/dkmstree" -name make.log -exec tail -n 20 {} \; | sed 's/^/# /' || true
fi
dpkg-deb -x "$prov_deb" "$work/prov"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
so=$(ls "$work/prov/usr/lib/$multiarch/libibverbs"/libvrnic-rdmav*.so 2>/dev/null | head -n 1 || true)
if [ -n "$so" ] && [ "$(cat "$work/prov/etc/libibverbs.d/vrnic.driver")" = "driver vrnic" ]; then
	ok "vrnic-ibverbs-provider: $(basename "$so") in /usr/lib/$multiarch/libibverbs, /etc/libibverbs.d/vrnic.driver"
else
	nok "vrnic-ibverbs-provider's contents"; ls -R "$work/prov" | sed 's/^/# /'
fi
if dpkg-deb -f "$prov_deb" Depends | grep -q 'libibverbs1 (>= '; then
	ok "vrnic-ibverbs-provider depends on $(dpkg-deb -f "$prov_deb" Depends | grep -o 'libibverbs1 ([^)]*)')"
else
	nok "vrnic-ibverbs-provider depends on libibverbs1: $(dpkg-deb -f "$prov_deb" Depends)"
fi
if [ -n "$so" ] && python3 -c 'import ctypes, os, sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)' \
	"$so" >"$work/load.log" 2>&1; then
	ok "the packaged provider loads (RTLD_NOW) with this system's libibverbs"
else
	nok "the packaged provider loads"; sed 's/^/# /' "$work/load.log"
fi
exit $fail
