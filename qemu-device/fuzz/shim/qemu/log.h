/*
 * Fuzzing stand-in for QEMU's qemu/log.h, found before the unit tests'
 * shim: the same guest-error log, but switched by a flag read once
 * (vrnic_fuzz_verbose, from VRNIC_TEST_VERBOSE) instead of a getenv() on
 * every guest error, which a fuzzer provokes thousands of times a second.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_FUZZ_LOG_H
#define VRNIC_FUZZ_LOG_H

#include <stdio.h>
#include <stdlib.h>

#define LOG_GUEST_ERROR (1 << 11)

extern int vrnic_fuzz_verbose;

#define qemu_log_mask(mask, ...)                                          \
    do {                                                                  \
        if (vrnic_fuzz_verbose) {                                         \
            fprintf(stderr, __VA_ARGS__);                                 \
        }                                                                 \
    } while (0)

#endif
