#!/bin/bash
# MSI-X: the function exposes 2 + num-comp-vectors vectors, the driver
# enables MSI-X with all of them, and the admin and Ethernet vectors fire.
. "$(dirname "$0")/../lib.sh"
ncomp=${VRNIC_EXPECT_NUM_COMP_VECTORS:-4}

ktap_print_header
ktap_set_plan 4
lspci -vv -d 1234:7672 >/tmp/lspci 2>&1
grep 'MSI-X' /tmp/lspci | sed 's/^/# /'
check "MSI-X enabled with Count=$((ncomp + 2))" \
	grep -qE "MSI-X: Enable\+ Count=$((ncomp + 2)) " /tmp/lspci
grep vrnic /proc/interrupts | sed 's/^/# /'
irq_count() { awk -v n="$1" '$0 ~ n { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s; exit }' /proc/interrupts; }
check "admin vector fired (admin commands complete by interrupt)" \
	test "$(irq_count vrnic-admin)" -gt 0
ping -c 2 -W 1 -I "$VRNIC_IFACE" 169.254.255.254 >/dev/null 2>&1  # ARP traffic
check "Ethernet vector registered" grep -q vrnic-eth /proc/interrupts
check "num_comp_vectors = $ncomp (ibv_devinfo)" \
	grep -qE "num_comp_vectors:[[:space:]]+$ncomp\$" <(ibv_devinfo -v -d "$(vrnic_ibdev)")
ktap_finished
