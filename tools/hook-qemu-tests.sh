#!/usr/bin/env bash
# Hook vrnic's QEMU tests into the cached QEMU source tree (idempotent; safe
# on a freshly prepared tree and on one prepared before this script existed):
#   tests/qtest/vrnic-test.c, tests/qtest/libqos/vrnic.{c,h}  symlinks into
#       qemu-device/qtest/ of this clone (re-pointed on every run, like hw/vrnic)
#   tests/qtest/meson.build        vrnic-test.c in qos-test (if CONFIG_VRNIC)
#   tests/qtest/libqos/meson.build vrnic.c in libqos
#   tests/qtest/fuzz/generic_fuzz_configs.h  the generic-fuzz-vrnic target
# The caller holds the build lock (tools/build-qemu.sh, tools/qemu-fuzz.sh).
# Documentation/qtest.rst describes the result.
# usage: hook-qemu-tests.sh QEMU_SRC_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"

src=${1:?usage: hook-qemu-tests.sh QEMU_SRC_DIR}
qt="$src/tests/qtest"
[ -d "$qt/libqos" ] || die "no $qt/libqos: not a QEMU source tree" "make setup"

ln -sfn "$VRNIC_TOP/qemu-device/qtest/vrnic-test.c" "$qt/vrnic-test.c"
ln -sfn "$VRNIC_TOP/qemu-device/qtest/libqos/vrnic.c" "$qt/libqos/vrnic.c"
ln -sfn "$VRNIC_TOP/qemu-device/qtest/libqos/vrnic.h" "$qt/libqos/vrnic.h"

# The qos-test sources are collected before the qtests dictionary uses them:
# add ours just before the first line after the list (tpmemu_files).
if ! grep -q "'vrnic-test.c'" "$qt/meson.build"; then
	sed -i "/^tpmemu_files = /i\\
# vrnic (added by vrnic's tools/hook-qemu-tests.sh)\\
if config_all_devices.has_key('CONFIG_VRNIC')\\
  qos_test_ss.add(files('vrnic-test.c'))\\
endif\\
" "$qt/meson.build"
	grep -q "'vrnic-test.c'" "$qt/meson.build" ||
		die "tests/qtest/meson.build: the vrnic-test.c line did not apply" \
			"check $qt/meson.build (QEMU $QEMU_VERSION expected)"
fi

if ! grep -q "files('vrnic.c')" "$qt/libqos/meson.build"; then
	sed -i "/^libqos = static_library/i\\
# vrnic (added by vrnic's tools/hook-qemu-tests.sh)\\
libqos_srcs += files('vrnic.c')\\
" "$qt/libqos/meson.build"
	grep -q "files('vrnic.c')" "$qt/libqos/meson.build" ||
		die "tests/qtest/libqos/meson.build: the vrnic.c line did not apply" \
			"check $qt/libqos/meson.build (QEMU $QEMU_VERSION expected)"
fi

# generic-fuzz: after the igb entry, the same shape (STYLE.md 2.7). No
# netdev: the TX path then drops frames, and no fuzzing worker depends on
# a socket path. Only --enable-fuzzing builds compile this header.
cfg="$qt/fuzz/generic_fuzz_configs.h"
if ! grep -q '\.name = "vrnic"' "$cfg"; then
	sed -i '/^        \.objects = "igb",$/a\
    },{\
        .name = "vrnic",\
        .args = "-M q35 -nodefaults -device vrnic",\
        .objects = "vrnic*",' "$cfg"
	grep -q '\.name = "vrnic"' "$cfg" ||
		die "generic_fuzz_configs.h: the vrnic entry did not apply" \
			"check $cfg (QEMU $QEMU_VERSION expected)"
fi
