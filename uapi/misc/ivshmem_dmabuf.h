/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ivshmem_dmabuf: the memory behind a QEMU ivshmem-plain device's BAR 2,
 * exported as dma-bufs (drivers/misc/ivshmem_dmabuf). Each bound device is
 * /dev/ivshmem-dmabufN.
 */
#ifndef _UAPI_MISC_IVSHMEM_DMABUF_H
#define _UAPI_MISC_IVSHMEM_DMABUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * A range of the BAR to export: offset and size in bytes, both multiples
 * of the page size, inside the BAR. flags: O_CLOEXEC and the dma-buf
 * file's access mode (O_RDONLY, O_WRONLY or O_RDWR); nothing else.
 */
struct ivshmem_dmabuf_export {
	__u64 offset;
	__u64 size;
	__u32 flags;
	__u32 reserved;		/* must be 0 */
};

#define IVSHMEM_DMABUF_IOCTL_BASE	'V'

/* The size of the BAR in bytes. */
#define IVSHMEM_DMABUF_SIZE	_IOR(IVSHMEM_DMABUF_IOCTL_BASE, 0xd0, __u64)

/* Returns a new dma-buf file descriptor for the range. */
#define IVSHMEM_DMABUF_EXPORT	_IOW(IVSHMEM_DMABUF_IOCTL_BASE, 0xd1, \
				     struct ivshmem_dmabuf_export)

#endif
