# Load and unload vrnic's two modules from the build tree (sourced by
# tools/guest/guest-init.sh and selftests/lib.sh): vrnic.ko, the Ethernet
# driver of the PCI function, and vrnic_rdma.ko, the RDMA driver that binds
# to the auxiliary device vrnic.ko creates. No udev in the guests, so both
# are inserted by hand, in that order, and removed in the reverse one.
VRNIC_KO=$VRNIC_TOP/drivers/net/ethernet/vrnic/vrnic.ko
VRNIC_RDMA_KO=$VRNIC_TOP/drivers/infiniband/hw/vrnic/vrnic_rdma.ko

vrnic_loaded() { grep -q '^vrnic ' /proc/modules; }
vrnic_rdma_loaded() { grep -q '^vrnic_rdma ' /proc/modules; }
vrnic_load() { insmod "$VRNIC_KO" && insmod "$VRNIC_RDMA_KO"; }
vrnic_unload() {
	if vrnic_rdma_loaded; then rmmod vrnic_rdma || return 1; fi
	if vrnic_loaded; then rmmod vrnic || return 1; fi
}
