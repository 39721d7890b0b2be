/*
 * The functions record.c puts around the core's entry points with
 * -Wl,--wrap=<name>: __wrap_<name> is called instead of <name>, and calls
 * the real one as __real_<name>.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef VRNIC_FUZZ_RECORD_H
#define VRNIC_FUZZ_RECORD_H

#include "../vrnic_core.h"

void __real_vrnic_core_reg_write(VrnicCore *core, uint64_t addr,
                                 uint32_t val);
void __wrap_vrnic_core_reg_write(VrnicCore *core, uint64_t addr,
                                 uint32_t val);
void __real_vrnic_core_db_write(VrnicCore *core, uint64_t addr, uint32_t val);
void __wrap_vrnic_core_db_write(VrnicCore *core, uint64_t addr, uint32_t val);
void __real_vrnic_core_eth_receive(VrnicCore *core, const uint8_t *frame,
                                   size_t len);
void __wrap_vrnic_core_eth_receive(VrnicCore *core, const uint8_t *frame,
                                   size_t len);

#endif
