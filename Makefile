# vrnic top-level build.
#   make            build everything: QEMU with the device, vrnic.ko, libvrnic,
#                   selftests, host unit tests
#   make setup      install packages and fetch/unpack heavy inputs (idempotent)
#   make check      set up, build, run every test; last line "N passed, N failed"
#   make demo       set up, build, boot two guests and move data over RDMA
#   make bench      perftest latency/bandwidth, vrnic vs rdma_rxe (slow)
#   make deb        Debian packages: vrnic-dkms, vrnic-ibverbs-provider
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

.PHONY: all setup qemu module provider selftests unit check demo bench bench-core clean \
	checkpatch qtest qemu-fuzz patches deb

all: qemu module provider selftests unit

setup:
	@tools/setup.sh

qemu:
	@tools/build-qemu.sh

module:
	@echo "==> vrnic.ko, vrnic_rdma.ko and ivshmem_dmabuf.ko against $(KDIR)"
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
	vrnic_port.c vrnic_eth.c vrnic_obj.c vrnic_mem.c vrnic_tlb.c vrnic_mr.c vrnic_mw.c \
	vrnic_frmr.c vrnic_cq.c vrnic_qp.c vrnic_icrc.c vrnic_pkt.c vrnic_xport.c vrnic_req.c \
	vrnic_comp.c vrnic_retry.c vrnic_recv.c vrnic_resp_seq.c vrnic_resp.c vrnic_resp_queue.c \
	vrnic_loop.c vrnic_fault.c \
	vrnic_mcast.c vrnic_odp.c vrnic_flow.c vrnic_rss.c vrnic_xrc.c)
UNIT_TESTS := $(patsubst qemu-device/tests/%.c,$(B)/unit/%, \
	$(wildcard qemu-device/tests/test_*.c))
UNIT_CFLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-clobbered \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-Iqemu-device/tests/shim -I$(B)/unit -I$(KSFT)

$(B)/unit/trace/trace-hw_net_vrnic.h: qemu-device/trace-events qemu-device/tests/gen-trace-stub.py
	@mkdir -p $(dir $@)
	python3 qemu-device/tests/gen-trace-stub.py $< $@

# The core and the fake bus are compiled once and linked into every test.
UNIT_CORE_OBJS := $(patsubst qemu-device/%.c,$(B)/unit/obj/%.o,$(CORE_SRCS) qemu-device/tests/fake_bus.c)
.SECONDARY: $(UNIT_CORE_OBJS)

$(B)/unit/obj/%.o: qemu-device/%.c $(B)/unit/trace/trace-hw_net_vrnic.h \
		$(wildcard qemu-device/*.h uapi/*.h qemu-device/tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -c -o $@ $<

$(B)/unit/%: qemu-device/tests/%.c $(UNIT_CORE_OBJS) \
		$(B)/unit/trace/trace-hw_net_vrnic.h $(wildcard qemu-device/*.h uapi/*.h qemu-device/tests/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(UNIT_CORE_OBJS) -lz

unit: $(UNIT_TESTS) $(B)/bin/icrc-check

# The core's own speed (tests/bench_xport.c): optimised, no sanitizers.
$(B)/bench/bench_xport: qemu-device/tests/bench_xport.c qemu-device/tests/fake_bus.c \
		$(CORE_SRCS) $(B)/unit/trace/trace-hw_net_vrnic.h \
		$(wildcard qemu-device/*.h uapi/*.h qemu-device/tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
		-Iqemu-device/tests/shim -I$(B)/unit -o $@ $< qemu-device/tests/fake_bus.c $(CORE_SRCS) -lz

bench-core: $(B)/bench/bench_xport
	@$< $(BENCH_CORE_SECONDS)

# The guests' wire on its own (tools/wire-limit/), for make bench.
$(B)/bin/wire-limit: tools/wire-limit/wire-limit.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -Werror -o $@ $<

# The host's cross-CPU wake-up on its own (tools/wake-limit/), for make bench.
$(B)/bin/wake-limit: tools/wake-limit/wake-limit.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -Werror -pthread -o $@ $<

# The ICRC checker shares the device's codec (no second implementation).
ICRC_CHECK_SRCS := tools/icrc-check/icrc-check.c qemu-device/vrnic_icrc.c \
	qemu-device/vrnic_pkt.c
$(B)/bin/icrc-check: $(ICRC_CHECK_SRCS) $(wildcard qemu-device/vrnic_*.h uapi/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -Werror -Iqemu-device/tests/shim \
		-Iqemu-device -o $@ $(ICRC_CHECK_SRCS) -lz

# ---- fuzzing the device core (Documentation/fuzzing.rst) -------------------
# libFuzzer targets over the QEMU-free core, built with clang:
#   make fuzz                 build, then fuzz each target FUZZ_SECONDS (one at a
#                             time), new inputs in $(B)/fuzz/corpus/<target>
#   make fuzz FUZZ_SECONDS=1200 FUZZ_TARGETS=fuzz_rx    one long run
#   make fuzz FUZZ_SECONDS=9000 FUZZ_RUNS=10000000      stop at 10M executions
#   make fuzz-regress         replay every checked-in corpus input (TAP output);
#                             fails on any crash or oracle failure
#   make fuzz-corpus          regenerate the checked-in seeds
FUZZ_CC ?= clang
FUZZ_TARGETS ?= fuzz_admin fuzz_wqe fuzz_rx
FUZZ_SECONDS ?= 30
FUZZ_RUNS ?=
FUZZ_B := $(B)/fuzz
FUZZ_DIR := qemu-device/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# The unit tests' include paths, with the fuzz shim (a getenv-free
# qemu/log.h) and the fuzz trace stubs in front.
FUZZ_CFLAGS := -std=gnu11 -g -O2 -fno-omit-frame-pointer $(FUZZ_SAN) -Wall -Wextra \
	-Wno-unused-parameter -Wno-sign-compare \
	-I$(FUZZ_DIR)/shim -Iqemu-device/tests/shim -I$(FUZZ_B)
FUZZ_CORE_OBJS := $(patsubst qemu-device/%.c,$(FUZZ_B)/obj/%.o,$(CORE_SRCS))
FUZZ_HDRS := $(wildcard qemu-device/*.h uapi/*.h $(FUZZ_DIR)/*.h) \
	$(FUZZ_B)/trace/trace-hw_net_vrnic.h
FUZZ_BINS := $(addprefix $(FUZZ_B)/,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build fuzz-regress fuzz-corpus
# Keep the objects: they are intermediate to pattern rules otherwise.
.SECONDARY: $(FUZZ_CORE_OBJS) $(patsubst %,$(FUZZ_B)/obj/fuzz/%.o,\
	$(FUZZ_TARGETS) fuzz_bus fuzz_dev oracle_test)

# The unit tests' typed trace stubs, switched by a flag read once instead
# of a getenv() per event.
$(FUZZ_B)/trace/trace-hw_net_vrnic.h: $(B)/unit/trace/trace-hw_net_vrnic.h
	@mkdir -p $(dir $@)
	{ echo 'extern int vrnic_fuzz_trace;'; \
	  sed 's/if (vrnic_test_trace_on())/if (vrnic_fuzz_trace)/' $<; } >$@

$(FUZZ_B)/obj/%.o: qemu-device/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# The CRC-32 loop is the whole of vrnic_icrc.c's coverage, and tracing
# its compare on every byte of every frame took 40% of fuzz_rx's time:
# sanitizers only.
$(FUZZ_B)/obj/vrnic_icrc.o: qemu-device/vrnic_icrc.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

# Targets get coverage instrumentation (their input parsing guides the
# fuzzer too); the shared harness only the sanitizers: its loops would
# cost a third of every execution and add no coverage of the device.
$(FUZZ_B)/obj/fuzz/fuzz_bus.o $(FUZZ_B)/obj/fuzz/fuzz_dev.o: \
		$(FUZZ_B)/obj/fuzz/%.o: $(FUZZ_DIR)/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror -c -o $@ $<

$(FUZZ_B)/obj/fuzz/%.o: $(FUZZ_DIR)/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_B)/fuzz_%: $(FUZZ_B)/obj/fuzz/fuzz_%.o $(FUZZ_B)/obj/fuzz/fuzz_bus.o \
		$(FUZZ_B)/obj/fuzz/fuzz_dev.o $(FUZZ_CORE_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -lz

# The oracles' own test: each one made to fire (oracle_test.c).
$(FUZZ_B)/oracle-test: $(FUZZ_B)/obj/fuzz/oracle_test.o $(FUZZ_B)/obj/fuzz/fuzz_bus.o \
		$(FUZZ_B)/obj/fuzz/fuzz_dev.o $(FUZZ_CORE_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -o $@ $^ -lz

# The seed generator: plain host code over the device's codec.
$(FUZZ_B)/gen-corpus: $(FUZZ_DIR)/gen_corpus.c qemu-device/vrnic_pkt.c \
		qemu-device/vrnic_icrc.c $(FUZZ_HDRS)
	$(FUZZ_CC) -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter \
		-Wno-sign-compare -I$(FUZZ_DIR)/shim -Iqemu-device/tests/shim -I$(FUZZ_B) \
		-Iqemu-device -o $@ $(FUZZ_DIR)/gen_corpus.c qemu-device/vrnic_pkt.c \
		qemu-device/vrnic_icrc.c -lz

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@FUZZ_RUNS=$(FUZZ_RUNS) $(FUZZ_DIR)/run.sh fuzz "$(FUZZ_B)" "$(FUZZ_SECONDS)" $(FUZZ_TARGETS)

fuzz-regress: fuzz-build $(FUZZ_B)/oracle-test
	@$(FUZZ_DIR)/run.sh regress "$(FUZZ_B)" 0 $(FUZZ_TARGETS)

# The seed recorder: each unit test, unchanged, with its MMIO and receive
# calls into the core wrapped (record.c). No sanitizers: it only records.
FUZZ_REC_WRAP := -Wl,--wrap=vrnic_core_reg_write -Wl,--wrap=vrnic_core_db_write \
	-Wl,--wrap=vrnic_core_eth_receive
FUZZ_RECS := $(patsubst qemu-device/tests/%.c,$(FUZZ_B)/rec/%, \
	$(wildcard qemu-device/tests/test_*.c))
$(FUZZ_B)/rec/%: qemu-device/tests/%.c qemu-device/tests/fake_bus.c $(FUZZ_DIR)/record.c \
		$(CORE_SRCS) $(B)/unit/trace/trace-hw_net_vrnic.h \
		$(wildcard qemu-device/*.h uapi/*.h qemu-device/tests/*.h $(FUZZ_DIR)/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -w -Iqemu-device/tests/shim -I$(B)/unit -I$(KSFT) \
		$(FUZZ_REC_WRAP) -o $@ $< qemu-device/tests/fake_bus.c $(FUZZ_DIR)/record.c \
		$(CORE_SRCS) -lz

fuzz-corpus: $(FUZZ_B)/gen-corpus $(FUZZ_RECS) $(addprefix $(FUZZ_B)/,fuzz_admin fuzz_wqe fuzz_rx)
	$(FUZZ_DIR)/make-corpus.sh $(FUZZ_B) \
		$${VRNIC_VECTORS:-$(CURDIR)/../shared/vectors}/rxe-rocev2.pcap
# ---- end of fuzzing ----------------------------------------------------------

# ---- tests ----------------------------------------------------------------
check: setup all fuzz-build $(FUZZ_B)/oracle-test
	@tools/check.sh

demo: setup all
	@tools/demo.sh $(DEMO_ARGS)

# perftest, vrnic vs rdma_rxe (not part of check): Documentation/benchmarks.rst
bench: setup all $(B)/bench/bench_xport $(B)/bin/wire-limit $(B)/bin/wake-limit
	@tools/bench.sh $(BENCH_ARGS)

# Debian packages of the driver (DKMS) and the provider (Documentation/packages.rst)
deb: setup
	@tools/deb.sh

# The upstream series (Documentation/upstream.rst) in build/patches/
patches: setup
	@tools/patches.sh $(PATCHES_ARGS)

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
		-f $(filter-out %.mod.c,$(wildcard drivers/net/ethernet/vrnic/*.[ch] \
		drivers/infiniband/hw/vrnic/*.[ch] drivers/misc/ivshmem_dmabuf/*.[ch])) \
		uapi/vrnic_hw_defs.h uapi/rdma/vrnic-abi.h uapi/misc/ivshmem_dmabuf.h

# Not "make -C $(KDIR) M=... clean": for an external module that deletes
# every object file under the whole clone, not only the driver's.
clean:
	rm -rf $(B)
	for d in drivers/net/ethernet/vrnic drivers/infiniband/hw/vrnic drivers/misc/ivshmem_dmabuf; do \
		(cd $$d && rm -f *.o *.ko *.mod *.mod.c .*.cmd modules.order); \
	done
	rm -f Module.symvers modules.order .*.cmd
