#!/usr/bin/env bash
# make check: host unit tests, then guest selftests (single guest, single
# guest with changed device properties, a pair on one wire, an rdma_rxe pair
# as the reference RoCEv2 peer), each pair's wire capture checked on the
# host (selftests/wire_check.sh); one summary at the end.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

out=$VRNIC_TOP/build/check
rm -rf "$out"
mkdir -p "$out"
t0=$SECONDS

step "host unit tests (device core)"
for t in "$VRNIC_TOP"/build/unit/test_*; do
	n=$(basename "$t")
	{
		echo "# selftest: unit/$n"
		"$t" 2>&1
		echo "# selftest-exit: unit/$n $?"
	} >"$out/unit-$n.tap"
done
# The provider's device matching, against a fake sysfs (host libibverbs).
ids=$(echo VRNIC_PCI_VENDOR_ID VRNIC_PCI_DEVICE_ID VRNIC_UVERBS_ABI_VERSION |
	cc -E -P -I"$VRNIC_TOP/uapi" -include vrnic_hw_defs.h -include rdma/vrnic-abi.h - | tail -n 1)
{
	echo "# selftest: unit/provider_match"
	# shellcheck disable=SC2086 # three numbers
	"$VRNIC_TOP/drivers/providers/vrnic/test-match.sh" "$VRNIC_TOP/build/lib/libvrnic" \
		$(printf '%d %d %d' $ids) 2>&1
	echo "# selftest-exit: unit/provider_match $?"
} >"$out/unit-provider_match.tap"
# The provider's data path against a model of the device (host).
{
	echo "# selftest: unit/provider_datapath"
	"$VRNIC_TOP/build/provider/test-datapath" 2>&1
	echo "# selftest-exit: unit/provider_datapath $?"
} >"$out/unit-provider_datapath.tap"
# The ICRC checker (the device's own codec) over rdma_rxe's capture.
vectors=${VRNIC_VECTORS:-$VRNIC_TOP/../shared/vectors}
{
	echo "# selftest: unit/icrc_check"
	if [ -e "$vectors/rxe-rocev2.pcap" ]; then
		echo "1..1"
		"$VRNIC_TOP/build/bin/icrc-check" "$vectors/rxe-rocev2.pcap" >"$out/icrc-check.log" 2>&1
		icrc_rc=$?
		sed 's/^/# /' "$out/icrc-check.log"
		[ "$icrc_rc" = 0 ] && echo "ok 1 icrc-check rxe-rocev2.pcap" || echo "not ok 1 icrc-check rxe-rocev2.pcap"
	else
		echo "1..0 # SKIP no $vectors/rxe-rocev2.pcap (set VRNIC_VECTORS)"
	fi
	echo "# selftest-exit: unit/icrc_check 0"
} >"$out/unit-icrc_check.tap"
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out"/unit-*.tap | sed '$d'

# The fuzz targets over their checked-in corpora (and the oracles' own
# test): any crash, sanitizer report or oracle failure fails it
# (Documentation/fuzzing.rst), about a second.
step "fuzz regression (device core, libFuzzer targets)"
{
	echo "# selftest: unit/fuzz_regress"
	"$VRNIC_TOP/qemu-device/fuzz/run.sh" regress "$VRNIC_TOP/build/fuzz" 0 \
		fuzz_admin fuzz_wqe fuzz_rx 2>&1
	echo "# selftest-exit: unit/fuzz_regress $?"
} >"$out/fuzz-regress.tap"
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/fuzz-regress.tap" | sed '$d'

# QEMU's own tests of the device: vrnic's libqos qtests in qos-test
# (Documentation/qtest.rst), each in its own process, about 10 s.
step "QEMU qtests (qos-test)"
"$VRNIC_TOP/tools/qtest.sh" >"$out/qtest.tap" 2>&1
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/qtest.tap" | sed '$d'

# The upstream series (Documentation/upstream.rst), made from this checkout:
# rdma-core's applies to a clean tree and builds the provider there (~1 min);
# QEMU's applies to the release, passes its checkpatch, and is what the
# QEMU of every test here was built from (~1 min); Linux's applies to
# linux-source-6.12, passes checkpatch --strict and both drivers build in
# that tree (a few minutes the first time, then ~1 min).
for tree in rdma-core qemu linux; do
	step "upstream series: $tree"
	{
		echo "# selftest: upstream/${tree//-/_}"
		"$VRNIC_TOP/tools/patches.sh" --check "$tree" 2>&1
		echo "# selftest-exit: upstream/${tree//-/_} $?"
	} >"$out/upstream-${tree//-/_}.tap"
	python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/upstream-${tree//-/_}.tap" | sed '$d'
done

# The Debian packages (Documentation/packages.rst): built with
# dpkg-buildpackage, DKMS builds the driver from vrnic-dkms for the guest
# kernel, the packaged provider loads (~1 min).
step "Debian packages"
{
	echo "# selftest: packages/deb"
	"$VRNIC_TOP/tools/deb.sh" --check 2>&1
	echo "# selftest-exit: packages/deb $?"
} >"$out/packages-deb.tap"
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/packages-deb.tap" | sed '$d'

# Those packages in VMs of a user's kind (Documentation/own-vm.rst): a
# Debian 12 disk image with its own kernel, apt install (DKMS builds the
# driver in the VM), two such VMs run rping and ib_write_bw, apt purge
# (~7 min; the image is built once, ~5 min).
step "own VMs: the packages installed and used in Debian 12 VMs"
{
	echo "# selftest: packages/own_vm"
	"$VRNIC_TOP/tools/ownvm.sh" 2>&1
	echo "# selftest-exit: packages/own_vm $?"
} >"$out/packages-own_vm.tap"
python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/packages-own_vm.tap" | sed '$d'

# guest RUN_NAME [tools/vm options] -- SUITE_SPEC...
guest() {
	local name=$1 opts=()
	shift
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	step "guest: $name"
	local cmd="selftests/run_suite.sh"
	local s
	for s in "$@"; do cmd+=" $(printf '%q' "$s")"; done
	tools/vm -q "${opts[@]}" -- "$cmd" >"$out/$name.tap" 2>"$out/$name.err"
	local rc=$?
	# A run that died without a status still has to show up as a failure.
	if [ "$rc" != 0 ] && ! grep -q '^# selftest-exit:' "$out/$name.tap"; then
		{ echo "# selftest: $name (guest run)"; sed 's/^/# /' "$out/$name.err"
		  echo "# selftest-exit: $name $rc"; } >>"$out/$name.tap"
	fi
	python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/$name.tap" | sed '$d'
}

cd "$VRNIC_TOP"
# pyverbs NAME TESTS...: rdma-core's pyverbs tests against vrnic, as TAP.
# 16 huge pages (32 MiB of the guest, given back afterwards) let the
# requires_huge_pages tests (test_parent_domain's huge page traffic) run.
pyverbs() {
	local name=$1
	shift
	echo "pyverbs_$name:/usr/bin/python3 selftests/pyverbs/pyverbs_tap.py --hugepages 16 --dev vrnic0 $*"
}

# 1 GiB: mr_translation registers a 256 MiB MR. --peer-mem: dmabuf_mr's
# ivshmem exporter (peer memory). pyverbs: rdma-core's whole
# suite (every module; vendor ones skip themselves) with the default GID,
# libvrnic's own test_vrnic among them.
guest single -t 1800 -m 1024 --peer-mem 16 -- \
	"device_attrs:selftests/vrnic/device_attrs.sh" \
	"query_verbs:build/selftests/vrnic/query_verbs" \
	"msix:selftests/vrnic/msix.sh" \
	"gid_table:selftests/vrnic/gid_table.sh" \
	"mr_translation:build/selftests/vrnic/mr_translation" \
	"dmabuf_mr:build/selftests/vrnic/dmabuf_mr" \
	"odp_mr:build/selftests/vrnic/odp_mr" \
	"import_objects:build/selftests/vrnic/import_objects" \
	"xrc_shared:build/selftests/vrnic/xrc_shared" \
	"ibta15:build/selftests/vrnic/ibta15" \
	"timestamps:build/selftests/vrnic/timestamps" \
	"raw_packet:build/selftests/vrnic/raw_packet" \
	"gsi:selftests/vrnic/gsi.sh" \
	"objects:build/selftests/vrnic/objects -T limits_are_exact" \
	"cq_moderation:build/selftests/vrnic/cq_moderation" \
	"$(pyverbs suite --add drivers/providers/vrnic/tests/test_vrnic.py)" \
	"process_cleanup:selftests/vrnic/process_cleanup.sh" \
	"module_reload:selftests/vrnic/module_reload.sh" \
	"harness_vcpu_sched:selftests/harness_vcpu_sched.sh" \
	"harness_cpu_pin:selftests/harness_cpu_pin.sh"

props=max-qp=77,max-cq=99,max-mr=123,max-pd=55,max-qp-wr=512,max-cqe=256,max-srq=33,max-srq-wr=128,num-comp-vectors=6
expect="VRNIC_EXPECT_MAX_QP=77 VRNIC_EXPECT_MAX_CQ=99 VRNIC_EXPECT_MAX_MR=123"
expect+=" VRNIC_EXPECT_MAX_PD=55 VRNIC_EXPECT_MAX_QP_WR=512 VRNIC_EXPECT_MAX_CQE=256"
expect+=" VRNIC_EXPECT_MAX_SRQ=33 VRNIC_EXPECT_MAX_SRQ_WR=128 VRNIC_EXPECT_NUM_COMP_VECTORS=6"
# At --vcpu-sched other --pin off: the harness's other placement (one
# guest, nothing busy-polls against it).
guest single-props -t 600 -d "$props" --vcpu-sched other --pin off -- \
	"harness_vcpu_sched_other:selftests/harness_vcpu_sched.sh other" \
	"harness_cpu_pin_off:selftests/harness_cpu_pin.sh off" \
	"device_attrs_props:$expect selftests/vrnic/device_attrs.sh" \
	"query_verbs_props:$expect build/selftests/vrnic/query_verbs" \
	"msix_props:$expect selftests/vrnic/msix.sh" \
	"limits_props:build/selftests/vrnic/objects -t limits_are_exact"

# wire NAME WIRE_CHECK_ARGS...: check a pair's capture on the host (tshark,
# icrc-check) as one more TAP section.
wire() {
	local name=$1
	shift
	step "wire check: $name"
	{
		echo "# selftest: wire_$name"
		selftests/wire_check.sh "$@" 2>&1
		echo "# selftest-exit: wire_$name $?"
	} >"$out/wire-$name.tap"
	python3 "$VRNIC_TOP/tools/tap-summary.py" "$out/wire-$name.tap" | sed '$d'
}

guest pair -n 2 -t 900 --pcap "$out/pair.pcap" -- \
	"pair_cpu_pin:selftests/harness_cpu_pin.sh" \
	"pair_ping:selftests/vrnic/pair_ping.sh" \
	"pair_verbs:selftests/vrnic/pair_verbs.sh"
# vrnic's own RoCEv2 on the wire: pingpongs (RC/UC SEND, UD SEND ONLY with
# DETH), rping (CM MADs on QP1, SEND, READ, WRITE), READ/atomic bandwidth,
# perftest over XRC.
wire pair -m 100 -p 169.254.0.1,169.254.0.2 -t 106 \
	-o UD_SEND_ONLY -o RC_SEND_ONLY -o UC_SEND_FIRST -o UC_SEND_LAST -o RC_RDMA_READ_REQUEST \
	-o RC_RDMA_READ_RESPONSE_ONLY -o RC_RDMA_WRITE_ONLY \
	-o RC_FETCH_ADD -o RC_ATOMIC_ACKNOWLEDGE -o RC_ACKNOWLEDGE \
	-o XRC_SEND_FIRST -o XRC_SEND_LAST -o XRC_SEND_ONLY -o XRC_RDMA_WRITE_FIRST \
	-o XRC_RDMA_READ_REQUEST -o XRC_RDMA_READ_RESPONSE_LAST -o XRC_ACKNOWLEDGE \
	"$out/pair.pcap"

# Middleware as users run it: UCX's ucx_perftest over its UD and RC verbs
# transports, and Open MPI over UCX with one rank per guest.
guest pair_middleware -n 2 -t 900 -- \
	"pair_middleware:selftests/vrnic/pair_middleware.sh"

# The transport at the verbs level: RC/UC/UD operations at every size up
# to 64 MiB with the payload verified, atomics, SRQ, inline, 3 SGEs, the
# IBTA error statuses and the rx_qkey_mismatch counter. No capture. Then
# dma-buf MRs between the guests, peer memory (the ivshmem BAR) included,
# and on-demand MRs whose pages only the peer's RDMA touches, and ATOMIC
# WRITE.
guest pair_transport -n 2 -t 900 --peer-mem 16 -- \
	"pair_transport:selftests/vrnic/pair_transport.sh" \
	"pair_dmabuf:build/selftests/vrnic/pair_dmabuf" \
	"pair_odp:build/selftests/vrnic/pair_odp" \
	"pair_ibta15:build/selftests/vrnic/pair_ibta15"

# Jumbo frames: netdev MTU 9000 in both guests, so ib_core and perftest
# use path MTU 4096 (4 KiB of payload per packet): the tools and the
# interop matrix with rdma_rxe, each capture holding packets of that size.
guest pair_jumbo -n 2 --mtu 9000 -t 600 --pcap "$out/pair_jumbo.pcap" -- \
	"pair_jumbo:PAIR_RDMA_MATRIX=1 PAIR_RDMA_EVENTS=1 selftests/vrnic/pair_rdma.sh"
wire pair_jumbo -m 100 -l 4136 -o RC_RDMA_WRITE_FIRST -o RC_RDMA_WRITE_MIDDLE \
	-o RC_RDMA_READ_RESPONSE_FIRST -o RC_SEND_FIRST -o RC_ACKNOWLEDGE \
	"$out/pair_jumbo.pcap"
guest interop_jumbo -n 2 --nic vrnic,rxe --mtu 9000 -t 600 \
	--pcap "$out/interop_jumbo.pcap" -- \
	"interop_jumbo:PAIR_RDMA_MATRIX=1 selftests/vrnic/pair_rdma.sh"
wire interop_jumbo -m 100 -l 4136 -o RC_RDMA_WRITE_FIRST -o RC_RDMA_WRITE_MIDDLE \
	-o RC_ACKNOWLEDGE "$out/interop_jumbo.pcap"

# RC that survives a bad wire: 1% drop, 1% reorder, 0.1% duplicate, 0.1%
# corrupt on both ports (each injects into what it sends): >= 1 GiB of RC
# WRITE/READ/SEND verified, atomics exactly once, UC/UD complete only whole
# messages; the port counters show the faults and the recovery.
faults=fault-drop-ppm=10000,fault-reorder-ppm=10000,fault-dup-ppm=1000
faults+=,fault-corrupt-ppm=1000
guest pair_lossy -n 2 -t 900 -d "$faults,fault-seed=7" -- \
	"pair_lossy:selftests/vrnic/pair_lossy.sh"

# The device's work in an IOThread (-device vrnic,iothread=; Threads in
# device-design.rst): a pair's tools (rping, the pingpongs, perftest
# bandwidth, latency and event mode), transport and dma-buf tests (peer
# memory: the IOThread reaches the ivshmem BAR directly), the lossy pair
# (the transport's timers in the IOThread), and one guest's interrupt,
# moderation and hostile-guest tests (doorbells through the mailbox,
# MSI-X from the main loop). perftest -R runs in the main-loop pair only,
# to keep make check short.
guest pair_iothread -n 2 --iothread -t 900 --peer-mem 16 -- \
	"pair_ping_iothread:selftests/vrnic/pair_ping.sh" \
	"pair_rdma_iothread:PAIR_RDMA_MATRIX=1 PAIR_RDMA_EVENTS=1 selftests/vrnic/pair_rdma.sh" \
	"pair_transport_iothread:selftests/vrnic/pair_transport.sh" \
	"pair_dmabuf_iothread:build/selftests/vrnic/pair_dmabuf"
guest pair_lossy_iothread -n 2 --iothread -t 900 -d "$faults,fault-seed=7" -- \
	"pair_lossy_iothread:selftests/vrnic/pair_lossy.sh"
guest single_iothread --iothread -t 600 -- \
	"msix_iothread:selftests/vrnic/msix.sh" \
	"cq_moderation_iothread:build/selftests/vrnic/cq_moderation" \
	"hostile_guest_iothread:build/selftests/vrnic/hostile_guest"

# A malicious user process: garbage WQEs, absurd SGE counts and lengths,
# doorbells far past the ring, rings and doorbell records rewritten while
# the device works, another process's keys and window, hostile
# CREATE_QP/CQ udata: each ends in its documented error CQE, async event or
# command status, while a second process keeps moving verified data.
guest hostile_guest -t 600 -- \
	"hostile_guest:build/selftests/vrnic/hostile_guest"

# A third party on the wire: RoCEv2 frames forged from 169.254.0.77 at
# live RC and UC connections between the pair. Nothing forged lands or
# completes, the real transfers complete verified, the target counts the
# drops (rx_bad_addr); the forged frames decode and carry valid ICRCs.
guest hostile_peer -n 2 -t 900 --pcap "$out/hostile_peer.pcap" -- \
	"hostile_peer:selftests/vrnic/hostile_peer.sh"
wire hostile_peer -m 100 -o UC_RDMA_WRITE_ONLY -o UC_SEND_ONLY \
	-o RC_RDMA_WRITE_ONLY -o RC_FETCH_ADD -o RC_RDMA_READ_RESPONSE_FIRST \
	-o RC_ATOMIC_ACKNOWLEDGE -o RC_ACKNOWLEDGE "$out/hostile_peer.pcap"

# The reference: two rdma_rxe guests (virtio-net) running the same standard
# tools vrnic must run; proves the harness (--nic, --pcap, wire_check and
# the ICRC checker) against a known-good RoCEv2 implementation.
guest pair_rxe -n 2 --nic rxe -t 300 --pcap "$out/pair_rxe.pcap" -- \
	"pair_rdma:selftests/vrnic/pair_rdma.sh"
# rping: CM MADs (UD SEND on QP1), SEND, RDMA READ, RDMA WRITE; ib_write_bw:
# 64 KiB WRITEs at MTU 1024 (FIRST/MIDDLE/LAST); ACKs.
wire pair_rxe -m 100 -p 169.254.0.1,169.254.0.2 \
	-o UD_SEND_ONLY -o RC_SEND_ONLY -o RC_RDMA_READ_REQUEST \
	-o RC_RDMA_READ_RESPONSE_ONLY -o RC_RDMA_WRITE_ONLY \
	-o RC_RDMA_WRITE_FIRST -o RC_RDMA_WRITE_MIDDLE -o RC_RDMA_WRITE_LAST \
	-o RC_ACKNOWLEDGE "$out/pair_rxe.pcap"

# Interop: vrnic against rdma_rxe on the same wire, in both roles (node 0
# is the client): rping -V, ib_write_bw and the matrix (ibv_rc/ud_pingpong,
# perftest READ/SEND/atomic bandwidth, WRITE/READ/SEND/atomic latency) and
# ATOMIC WRITE (pair_ibta15); rxe's and vrnic's frames must all decode and
# carry valid ICRCs.
guest interop_vrnic_client -n 2 --nic vrnic,rxe -t 300 \
	--pcap "$out/interop_vrnic_client.pcap" -- \
	"interop_vrnic_client:PAIR_RDMA_MATRIX=1 selftests/vrnic/pair_rdma.sh" \
	"interop_ibta15_vrnic_client:build/selftests/vrnic/pair_ibta15"
wire interop_vrnic_client -m 100 -o UD_SEND_ONLY -o RC_RDMA_WRITE_FIRST \
	-o RC_ACKNOWLEDGE "$out/interop_vrnic_client.pcap"
guest interop_rxe_client -n 2 --nic rxe,vrnic -t 300 \
	--pcap "$out/interop_rxe_client.pcap" -- \
	"interop_rxe_client:PAIR_RDMA_MATRIX=1 selftests/vrnic/pair_rdma.sh" \
	"interop_ibta15_rxe_client:build/selftests/vrnic/pair_ibta15"
wire interop_rxe_client -m 100 -o UD_SEND_ONLY -o RC_RDMA_WRITE_FIRST \
	-o RC_ACKNOWLEDGE "$out/interop_rxe_client.pcap"

# The interop matrix on a bad wire: vrnic's injector on both directions of
# its port (1% drop, 1% reorder, 0.1% duplicate, 0.1% corrupt), so rdma_rxe
# must recover from what vrnic drops and vrnic from what it sees: rping -V,
# perftest WRITE/READ/SEND/atomic bandwidth and WRITE/READ/SEND/atomic latency
# and ibv_rc_pingpong, each role (pair_rdma.sh tells ibv_rc_pingpong's own
# teardown race apart). ibv_ud_pingpong, which has no loss recovery, runs
# with the injector changed at run time (--qmp: qom-set from the vrnic
# guest) to faults UD delivers through: reorder and delay.
guest interop_faults_vrnic_client -n 2 --nic vrnic,rxe -d "$faults,fault-dir=both,fault-seed=11" \
	--qmp -t 900 -- "interop_faults_vrnic_client:PAIR_RDMA_MATRIX=1 PAIR_RDMA_LOSSY=1 selftests/vrnic/pair_rdma.sh"
guest interop_faults_rxe_client -n 2 --nic rxe,vrnic -d "$faults,fault-dir=both,fault-seed=12" \
	--qmp -t 900 -- "interop_faults_rxe_client:PAIR_RDMA_MATRIX=1 PAIR_RDMA_LOSSY=1 selftests/vrnic/pair_rdma.sh"

# The kernel's own RDMA consumers between two guests (Documentation/ulps.rst),
# with fast registration and remote invalidation under them. NVMe over
# RDMA: nvmet-rdma and nvme-rdma, fio with verification, reconnects; then
# each role against rdma_rxe, and vrnic on a bad wire.
guest ulp_nvme -n 2 -m 1024 -t 900 -- "ulp_nvme:selftests/vrnic/ulp_nvme.sh"
guest ulp_nvme_rxe_target -n 2 -m 1024 --nic vrnic,rxe -t 900 -- \
	"ulp_nvme_rxe_target:selftests/vrnic/ulp_nvme.sh"
guest ulp_nvme_rxe_host -n 2 -m 1024 --nic rxe,vrnic -t 900 -- \
	"ulp_nvme_rxe_host:selftests/vrnic/ulp_nvme.sh"
guest ulp_nvme_lossy -n 2 -m 1024 -d "$faults,fault-seed=13" -t 900 -- \
	"ulp_nvme_lossy:ULP_EXPECT_FAULTS=1 selftests/vrnic/ulp_nvme.sh"
# NFS over RDMA: nfsd with svcrdma on port 20049 exporting a tmpfs, the
# other guest mounting it with proto=rdma as NFSv3 and NFSv4.2.
guest ulp_nfs -n 2 -m 1024 -t 900 -- "ulp_nfs:selftests/vrnic/ulp_nfs.sh"
# iSER: an LIO target (targetcli-fb) with an iSER portal and a ramdisk
# LUN, an open-iscsi initiator on the iser transport, verified I/O.
guest ulp_iser -n 2 -m 1024 -t 900 -- "ulp_iser:selftests/vrnic/ulp_iser.sh"
# SRP over RoCE: ib_srpt (targetcli-fb, a ramdisk LUN, an ACL for the
# initiator's port) and ib_srp logging in through rdma_cm, verified I/O.
guest ulp_srp -n 2 -m 1024 -t 900 -- "ulp_srp:selftests/vrnic/ulp_srp.sh"

step "summary ($((SECONDS - t0)) s)"
python3 "$VRNIC_TOP/tools/tap-summary.py" --why "$out"/*.tap
