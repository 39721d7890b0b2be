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

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

#endif
