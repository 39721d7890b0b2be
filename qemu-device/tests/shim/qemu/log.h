/*
 * Host unit-test stand-in for QEMU's qemu/log.h. Guest errors are counted
 * by the core itself (VrnicCounters.guest_errors); the text goes to stderr
 * only when VRNIC_TEST_VERBOSE is set.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_TEST_LOG_H
#define VRNIC_TEST_LOG_H

#include <stdio.h>
#include <stdlib.h>

#define LOG_GUEST_ERROR (1 << 11)

#define qemu_log_mask(mask, ...)                                          \
    do {                                                                  \
        if (getenv("VRNIC_TEST_VERBOSE")) {                               \
            fprintf(stderr, __VA_ARGS__);                                 \
        }                                                                 \
    } while (0)

#endif
