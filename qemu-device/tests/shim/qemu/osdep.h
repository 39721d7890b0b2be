/*
 * Host unit-test stand-in for QEMU's qemu/osdep.h: the few libc headers and
 * byte-order helpers the vrnic core uses. Lets the core build without QEMU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_TEST_OSDEP_H
#define VRNIC_TEST_OSDEP_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The host CPU, as QEMU's config-host.h (through osdep.h) names it. */
#if defined(__x86_64__)
#define HOST_X86_64 1
#elif defined(__i386__)
#define HOST_I386 1
#endif

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MAX_CONST(a, b) ((a) > (b) ? (a) : (b))
#endif

/* glib's allocator as QEMU code uses it: zeroed, never NULL. */
static inline void *vrnic_test_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (!p) {
        abort();
    }
    return p;
}
#define g_new0(type, n) ((type *)vrnic_test_calloc((n), sizeof(type)))
#define g_malloc0(size) vrnic_test_calloc(1, (size))
#define g_malloc(size) vrnic_test_calloc(1, (size))
#define g_free(p) free(p)

#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#endif

#endif
