/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dma-bufs for the tests of dma-buf MRs, from the three exporters a vrnic
 * guest has: the system dma-heap, udmabuf over a sealed memfd, and the
 * ivshmem BAR, the "GPU memory" of tools/vm --peer-mem that
 * ivshmem_dmabuf.ko exports. Each comes with a CPU mapping (mmap of the
 * dma-buf). An ivshmem one also has the host's view of the same bytes: the
 * file behind the BAR ($VRNIC_PEER_MEM, through the guest's shared
 * directory), which is what a host process playing the GPU reads and
 * writes, and which proves that RDMA reached the BAR and not guest RAM.
 */
#ifndef VRNIC_SELFTEST_DBUF_H
#define VRNIC_SELFTEST_DBUF_H

/* memfd_create(): the including file defines _GNU_SOURCE first. */
#include <errno.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <misc/ivshmem_dmabuf.h>

/* Where an ivshmem buffer starts in the BAR: not at 0, to show offsets. */
#define DBUF_IVSHMEM_OFF	(1 << 20)
#define DBUF_IVSHMEM_DEV	"/dev/ivshmem-dmabuf0"

struct dbuf {
	int fd;
	int memfd;		/* udmabuf: the memfd behind it, else -1 */
	int host;		/* ivshmem: the file behind the BAR, else -1 */
	size_t size;
	char *map;		/* the CPU mapping, or MAP_FAILED */
};

struct dbuf_exporter {
	const char *name;
	int (*alloc)(struct dbuf *d);	/* d->size set; 0 or -errno */
};

static inline int dbuf_heap_alloc(struct dbuf *d)
{
	struct dma_heap_allocation_data a = {
		.len = d->size, .fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (heap < 0)
		return -errno;
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a))
		err = -errno;
	close(heap);
	d->fd = a.fd;
	return err;
}

static inline int dbuf_udmabuf_alloc(struct dbuf *d)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = d->size };
	int dev;

	d->memfd = memfd_create("vrnic-dmabuf", MFD_ALLOW_SEALING);
	if (d->memfd < 0)
		return -errno;
	if (ftruncate(d->memfd, d->size) ||
	    fcntl(d->memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -errno;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	c.memfd = d->memfd;
	d->fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	return d->fd < 0 ? -errno : 0;
}

static inline int dbuf_ivshmem_alloc(struct dbuf *d)
{
	struct ivshmem_dmabuf_export e = {
		.offset = DBUF_IVSHMEM_OFF, .size = d->size,
		.flags = O_RDWR | O_CLOEXEC,
	};
	const char *host = getenv("VRNIC_PEER_MEM");
	uint64_t bar;
	int dev;

	if (!host)
		return -ENOENT;		/* not a tools/vm --peer-mem guest */
	d->host = open(host, O_RDWR | O_CLOEXEC);
	if (d->host < 0)
		return -errno;
	dev = open(DBUF_IVSHMEM_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	if (ioctl(dev, IVSHMEM_DMABUF_SIZE, &bar) ||
	    bar < DBUF_IVSHMEM_OFF + d->size) {
		close(dev);
		return -ENOSPC;
	}
	d->fd = ioctl(dev, IVSHMEM_DMABUF_EXPORT, &e);
	close(dev);
	return d->fd < 0 ? -errno : 0;
}

static const struct dbuf_exporter dbuf_exporters[] = {
	{ "dma_heap", dbuf_heap_alloc },
	{ "udmabuf", dbuf_udmabuf_alloc },
	{ "ivshmem", dbuf_ivshmem_alloc },
};

static inline const struct dbuf_exporter *dbuf_exporter(const char *name)
{
	for (size_t i = 0; i < sizeof(dbuf_exporters) /
			       sizeof(dbuf_exporters[0]); i++)
		if (!strcmp(dbuf_exporters[i].name, name))
			return &dbuf_exporters[i];
	return NULL;
}

static inline void dbuf_close(struct dbuf *d)
{
	if (d->map && d->map != MAP_FAILED)
		munmap(d->map, d->size);
	d->map = MAP_FAILED;
	if (d->fd >= 0)
		close(d->fd);
	if (d->memfd >= 0)
		close(d->memfd);
	if (d->host >= 0)
		close(d->host);
	d->fd = d->memfd = d->host = -1;
}

/* A dma-buf of size bytes and its CPU mapping: 0 or -errno. */
static inline int dbuf_open(struct dbuf *d, const struct dbuf_exporter *e,
			    size_t size)
{
	int err;

	*d = (struct dbuf) { .fd = -1, .memfd = -1, .host = -1,
			     .size = size, .map = MAP_FAILED };
	err = e->alloc(d);
	if (!err) {
		d->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      d->fd, 0);
		if (d->map == MAP_FAILED)
			err = -errno;
	}
	if (err)
		dbuf_close(d);
	return err;
}

/* CPU access to the mapping: bracketed as the dma-buf API asks. */
static inline void dbuf_cpu(const struct dbuf *d, bool begin, bool write)
{
	struct dma_buf_sync s = {
		.flags = (begin ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END) |
			 (write ? DMA_BUF_SYNC_WRITE : DMA_BUF_SYNC_READ),
	};

	ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &s);
}

/*
 * The host's view (ivshmem only): len bytes at off of the buffer, read
 * from or written to the file behind the BAR. False on a short transfer.
 */
static inline bool dbuf_host_io(const struct dbuf *d, size_t off, void *p,
				size_t len, bool write)
{
	off_t at = DBUF_IVSHMEM_OFF + off;
	char *b = p;

	while (len) {
		ssize_t r = write ? pwrite(d->host, b, len, at) :
				    pread(d->host, b, len, at);

		if (r <= 0)
			return false;
		b += r;
		at += r;
		len -= r;
	}
	return true;
}

#endif
