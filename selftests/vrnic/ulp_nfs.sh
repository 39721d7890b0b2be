#!/bin/bash
# NFS over RDMA between the two guests of a pair, on whatever NIC each node
# has (tools/vm --nic): node 1 runs nfsd (rpcbind, rpc.mountd, svcrdma
# listening on RDMA port 20049) exporting a tmpfs; node 0 mounts it with
# proto=rdma,port=20049, once as NFSv3 and once as NFSv4.2, and on each
# mount writes 256 MiB and reads it back (SHA-256 on both ends, the
# client's page cache dropped in between), creates, lists, checks and
# removes a tree of small files, shows that the mount really uses RDMA
# (the RPC transport in /proc/self/mountstats) and unmounts. Both sides
# then stop their ULP and must leave no RDMA object behind.
# Knobs: ULP_NFS_MIB (the big file, default 256), ULP_NFS_FILES (small
# files per mount, default 500).
. "$(dirname "$0")/../lib.sh"
. "$VRNIC_TOP/selftests/rdma_lib.sh"
. "$VRNIC_TOP/selftests/ulp_lib.sh"

export_dir=/srv/vrnic-nfs
mnt=/mnt/vrnic-nfs
mib=${ULP_NFS_MIB:-256}
files=${ULP_NFS_FILES:-500}
role=client
[ "$VRNIC_NODE" = 1 ] && role=server
export VRNIC_BARRIER_TIMEOUT=600

if [ "$role" = server ]; then
	ulp_begin "$role" 6
else
	ulp_begin "$role" $((3 + 2 * 6))
fi

server_up() {
	mkdir -p "$export_dir" && mount -t tmpfs -o size=600m tmpfs "$export_dir" &&
		chmod 1777 "$export_dir" &&
		modprobe nfsd && modprobe rpcrdma &&
		{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
		# No nfsdcld here: a short grace period, so that NFSv4 OPENs do
		# not wait the default 90 s after the start.
		echo 10 >/proc/fs/nfsd/nfsv4gracetime &&
		echo 10 >/proc/fs/nfsd/nfsv4leasetime &&
		rpcbind -w && rpc.mountd &&
		# fsid=0: the root of the NFSv4 pseudo file system (the
		# client mounts it as "/"); NFSv3 names the path.
		exportfs -o rw,no_root_squash,no_subtree_check,insecure,fsid=0 \
			"$VRNIC_PEER_IP:$export_dir" &&
		rpc.nfsd 4 &&
		echo "rdma 20049" >/proc/fs/nfsd/portlist &&
		grep -q '^rdma 20049' /proc/fs/nfsd/portlist
}

server_down() {
	exportfs -ua && rpc.nfsd 0 && pkill -x rpc.mountd && pkill -x rpcbind &&
		umount /proc/fs/nfsd && umount "$export_dir" &&
		wait_for 20 modprobe -r rpcrdma
}

if [ "$role" = server ]; then
	check "nfsd on $VRNIC_IP exporting a tmpfs, RDMA listener on 20049" server_up
	sed 's/^/# portlist: /' /proc/fs/nfsd/portlist
	pair_barrier_sh nfs-up
	pair_barrier_sh nfs-v3-written
	sum_ok() {
		[ "$(sha256sum <"$export_dir/big" | cut -d' ' -f1)" = \
			"$(pair_swap nfs-v3-sum </dev/null)" ]
	}
	check "NFSv3: the server holds the bytes the client wrote (SHA-256)" sum_ok
	pair_barrier_sh nfs-v42-written
	sum42_ok() {
		[ "$(sha256sum <"$export_dir/big" | cut -d' ' -f1)" = \
			"$(pair_swap nfs-v42-sum </dev/null)" ]
	}
	check "NFSv4.2: the server holds the bytes the client wrote (SHA-256)" sum42_ok
	pair_barrier_sh nfs-done
	check "nfsd stopped, rpcrdma unloaded" server_down
	ulp_res_check
	ulp_end_checks
	ktap_finished
fi

# mount_nfs VERS: mount the export over RDMA with NFS version VERS.
mount_nfs() {
	local opts="vers=$1,proto=rdma,port=20049" path=/
	[ "$1" = 3 ] && opts+=",nolock" && path=$export_dir
	mkdir -p "$mnt" && mount -t nfs -o "$opts" "$VRNIC_PEER_IP:$path" "$mnt"
}

# The RPC transport of the mount on $mnt, as the kernel reports it.
uses_rdma() {
	awk -v m="$mnt" '$1 == "device" && $5 == m { on = 1; next }
		$1 == "device" { on = 0 }
		on && $1 == "xprt:" { print $2; exit }' /proc/self/mountstats |
		grep -qx rdma
}

big_file() {
	local vers=$1 sum back
	mountpoint -q "$mnt" || return 1
	sum=$(head -c "${mib}M" /dev/urandom | tee "$mnt/big" | sha256sum | cut -d' ' -f1) &&
		sync && echo 3 >/proc/sys/vm/drop_caches &&
		back=$(sha256sum <"$mnt/big" | cut -d' ' -f1) &&
		ktap_print_msg "NFSv$vers: $mib MiB, sha256 $sum, read back $back" &&
		[ -n "$sum" ] && [ "$sum" = "$back" ] &&
		echo "$sum" >/tmp/nfs-sum
}

small_files() {
	local d=$mnt/tree i n
	mountpoint -q "$mnt" && mkdir -p "$d" || return 1
	for i in $(seq 1 "$files"); do
		mkdir -p "$d/$((i % 20))" && echo "file $i" >"$d/$((i % 20))/f$i" || return 1
	done
	sync && echo 3 >/proc/sys/vm/drop_caches
	n=$(find "$d" -type f | wc -l)
	[ "$n" = "$files" ] || { ktap_print_msg "listed $n of $files files"; return 1; }
	for i in 1 $((files / 2)) "$files"; do
		[ "$(cat "$d/$((i % 20))/f$i")" = "file $i" ] || return 1
	done
	rm -rf "$d" && [ ! -e "$d" ]
}

one_version() {
	local vers=$1
	check "mount -t nfs -o vers=$vers,proto=rdma,port=20049" mount_nfs "$vers"
	check "NFSv$vers: the mount's RPC transport is rdma (mountstats)" uses_rdma
	check "NFSv$vers: $mib MiB written and read back, SHA-256 equal" big_file "$vers"
	pair_barrier_sh "nfs-v${vers/./}-written"
	pair_swap "nfs-v${vers/./}-sum" </tmp/nfs-sum >/dev/null
	check "NFSv$vers: $files small files created, listed, read, removed" small_files
	check "NFSv$vers: rm the big file" eval 'mountpoint -q "$mnt" && rm "$mnt/big"'
	check "NFSv$vers: umount" umount "$mnt"
}

modprobe rpcrdma
pair_barrier_sh nfs-up
one_version 3
one_version 4.2
pair_barrier_sh nfs-done
check "rpcrdma unloaded" wait_for 20 modprobe -r rpcrdma
ulp_res_check
ulp_end_checks
ktap_finished
