# vrnic top-level build.
#   make            build everything: QEMU with the device, vrnic.ko, libvrnic,
#                   selftests, host unit tests
#   make setup      install packages and fetch/unpack heavy inputs (idempotent)
#   make check      set up, build, run every test; last line "N passed, N failed"
#   make demo       set up, build, boot two guests and move data over RDMA
#   make bench      perftest latency/bandwidth, vrnic vs rdma_rxe (slow)
# Heavy inputs are cached in VRNIC_CACHE (default ~/.cache/vrnic).

VRNIC_CACHE ?= $(HOME)/.cache/vrnic
export VRNIC_CACHE

# Guest kernel: the newest Debian 12 6.12 kernel whose headers are installed.
KREL ?= $(shell ls -d /usr/src/linux-headers-6.12.*+deb12-amd64 2>/dev/null | \
	sed 's|.*/linux-headers-||' | sort -V | tail -n 1)
KDIR ?= /usr/src/linux-headers-$(KREL)
export KREL

B := $(CURDIR)/build
KSFT := $(VRNIC_CACHE)/linux-source-6.12/tools/testing/selftests

.PHONY: all setup qemu module provider selftests unit check demo bench clean \
	checkpatch qtest qemu-fuzz

all: qemu module provider selftests unit

setup:
	@tools/setup.sh

qemu:
	@tools/build-qemu.sh

module:
	@echo "==> vrnic.ko against $(KDIR)"
	@test -d "$(KDIR)" || { echo "vrnic: no kernel headers in $(KDIR): run make setup" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

provider:
	@echo "==> libvrnic provider"
	$(MAKE) -C drivers/providers/vrnic all tests

selftests:
	@echo "==> selftests"
	$(MAKE) -C selftests KSFT=$(KSFT) OUT=$(B)/selftests

# ---- host unit tests of the device core ----------------------------------
CORE_SRCS := $(addprefix qemu-device/,vrnic_core.c vrnic_admin.c vrnic_event.c \
	vrnic_port.c vrnic_eth.c vrnic_obj.c vrnic_mem.c vrnic_mr.c vrnic_mw.c vrnic_cq.c \
	vrnic_qp.c vrnic_icrc.c vrnic_pkt.c vrnic_tx.c vrnic_rx.c vrnic_fault.c \
	vrnic_mcast.c)
UNIT_TESTS := $(patsubst qemu-device/tests/%.c,$(B)/unit/%, \
	$(wildcard qemu-device/tests/test_*.c))
UNIT_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-clobbered \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-Iqemu-device/tests/shim -I$(B)/unit -I$(KSFT)

$(B)/unit/hw/vrnic/trace-hw_vrnic.h: qemu-device/trace-events qemu-device/tests/gen-trace-stub.py
	@mkdir -p $(dir $@)
	python3 qemu-device/tests/gen-trace-stub.py $< $@

$(B)/unit/%: qemu-device/tests/%.c qemu-device/tests/fake_bus.c $(CORE_SRCS) \
		$(B)/unit/hw/vrnic/trace-hw_vrnic.h $(wildcard qemu-device/*.h uapi/*.h qemu-device/tests/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ $< qemu-device/tests/fake_bus.c $(CORE_SRCS)

unit: $(UNIT_TESTS) $(B)/bin/icrc-check

# The ICRC checker shares the device's codec (no second implementation).
ICRC_CHECK_SRCS := tools/icrc-check/icrc-check.c qemu-device/vrnic_icrc.c \
	qemu-device/vrnic_pkt.c
$(B)/bin/icrc-check: $(ICRC_CHECK_SRCS) $(wildcard qemu-device/vrnic_*.h uapi/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -Werror -Iqemu-device/tests/shim \
		-Iqemu-device -o $@ $(ICRC_CHECK_SRCS)

# ---- tests ----------------------------------------------------------------
check: setup all
	@tools/check.sh

demo: setup all
	@tools/demo.sh $(DEMO_ARGS)

# perftest, vrnic vs rdma_rxe (not part of check): Documentation/benchmarks.rst
bench: setup all
	@tools/bench.sh $(BENCH_ARGS)

# QEMU's qtests of the device (Documentation/qtest.rst); make check runs them too
qtest: qemu
	@tools/qtest.sh $(QTEST_ARGS)

# QEMU's generic-fuzz-vrnic: a second, clang/ASan QEMU build, not in check
QEMU_FUZZ_SECONDS ?= 600
qemu-fuzz:
	@tools/qemu-fuzz.sh all $(QEMU_FUZZ_SECONDS)

checkpatch:
	$(VRNIC_CACHE)/linux-source-6.12/scripts/checkpatch.pl --strict --no-tree \
		--ignore MACRO_ARG_REUSE \
		-f $(filter-out %.mod.c,$(wildcard drivers/infiniband/hw/vrnic/*.[ch])) \
		uapi/vrnic_hw_defs.h uapi/rdma/vrnic-abi.h

# Not "make -C $(KDIR) M=... clean": for an external module that deletes
# every object file under the whole clone, not only the driver's.
clean:
	rm -rf $(B)
	cd drivers/infiniband/hw/vrnic && rm -f *.o *.ko *.mod *.mod.c .*.cmd \
		modules.order
	rm -f Module.symvers modules.order .*.cmd
