/*
 * Seed recorder: linked into a unit test (qemu-device/tests/test_*.c,
 * unchanged) with -Wl,--wrap for the core's MMIO and receive entry
 * points, it writes what the test does as inputs of the fuzz targets:
 *  - fuzz_admin: every register write (ring bases moved from the unit
 *    tests' fake memory to the fuzz RAM), the admin commands each AQ_PI
 *    doorbell hands over (with the addresses in them moved the same way),
 *    BAR2 doorbells and Ethernet frames received, each followed by a
 *    settle;
 *  - fuzz_rx: every frame a device received, as a frame the harness
 *    re-addresses to its device's QP of the same transport, with the
 *    PSN it expects (fuzz_rx.c, op_raw).
 * Each test runs in its own process (the kselftest harness forks), so
 * each writes its own files: $FUZZ_RECORD_DIR/<target>/<test>-<pid>.
 * "make fuzz-corpus" then keeps only what adds coverage (libFuzzer
 * -merge=1).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE             /* program_invocation_short_name */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../tests/fake_bus.h"
#include "../vrnic_core_int.h"
#include "../vrnic_icrc.h"
#include "fuzz_seed.h"

/* Seeds stay small: a file stops growing past this (at an operation). */
#define REC_MAX_BYTES 4096

#include "record.h"

static VrnicCore *rec_core;     /* the first device a test touches */
static pid_t rec_pid;
static FILE *rec_admin, *rec_rx;
static unsigned rec_rx_frames;

static FILE *rec_open(const char *target)
{
    const char *dir = getenv("FUZZ_RECORD_DIR");
    char path[4096];
    FILE *f;

    if (!dir) {
        return NULL;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, target);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/%s-%d", dir, target,
             program_invocation_short_name, (int)getpid());
    f = fopen(path, "wb");
    return f;
}

/* A new process (a forked test): start new files. */
static void rec_check_pid(void)
{
    if (rec_pid != getpid()) {
        rec_pid = getpid();
        rec_core = NULL;
        rec_admin = rec_open("fuzz_admin");
        rec_rx = rec_open("fuzz_rx");
        rec_rx_frames = 0;
    }
}

static void rec_put(FILE *f, const void *p, size_t len)
{
    if (f && ftell(f) + len <= REC_MAX_BYTES) {
        fwrite(p, 1, len, f);
        fflush(f);
    }
}

static uint64_t rec_reloc(uint64_t v)
{
    if (v >= FAKE_MEM_BASE && v - FAKE_MEM_BASE < FAKE_MEM_SIZE) {
        return SEED_ADMIN_RAM + (v - FAKE_MEM_BASE) % SEED_ADMIN_RAM_SIZE;
    }
    return v;
}

static void rec_admin_reg(uint64_t reg, uint32_t val)
{
    uint8_t b[SEED_MAX];

    rec_put(rec_admin, b, seed_admin_reg(b, reg, val));
}

static void rec_admin_settle(void)
{
    uint8_t b[SEED_MAX];

    rec_put(rec_admin, b, seed_admin_settle(b));
}

void __wrap_vrnic_core_reg_write(VrnicCore *core, uint64_t addr, uint32_t val)
{
    rec_check_pid();
    if (!rec_core) {
        rec_core = core;
    }
    if (core == rec_core && rec_admin) {
        switch (addr) {
        case VRNIC_REG_AQ_SQ_BASE_LO:
        case VRNIC_REG_AQ_CQ_BASE_LO:
        case VRNIC_REG_AEQ_BASE_LO:
        case VRNIC_REG_ETH_TX_BASE_LO:
        case VRNIC_REG_ETH_RX_BASE_LO: {
            uint64_t v = rec_reloc(val);

            /* The high half follows from the low one here. */
            rec_admin_reg(addr, (uint32_t)v);
            rec_admin_reg(addr + 4, v >> 32);
            break;
        }
        case VRNIC_REG_AQ_SQ_BASE_HI:
        case VRNIC_REG_AQ_CQ_BASE_HI:
        case VRNIC_REG_AEQ_BASE_HI:
        case VRNIC_REG_ETH_TX_BASE_HI:
        case VRNIC_REG_ETH_RX_BASE_HI:
            if (val) {
                rec_admin_reg(addr, val);
            }
            break;
        case VRNIC_REG_AQ_PI: {
            VrnicRing *aq = &core->aq;
            uint16_t pi = val & VRNIC_INDEX_MASK;

            /* The commands handed over, as the guest wrote them. */
            for (uint16_t i = aq->pi; aq->live && i != pi &&
                 (uint16_t)(i - aq->pi) <= (1u << aq->log_depth); i++) {
                uint8_t cmd[VRNIC_AQ_CMD_SIZE], b[SEED_MAX];
                uint64_t slot = aq->base + (uint64_t)(i &
                                ((1u << aq->log_depth) - 1)) *
                                VRNIC_AQ_CMD_SIZE;

                if (!core->ops->dma_read(core->opaque, slot, cmd,
                                         sizeof(cmd))) {
                    break;
                }
                for (unsigned o = 0; o + 8 <= sizeof(cmd); o += 8) {
                    uint64_t v;

                    memcpy(&v, cmd + o, 8);
                    v = htole64(rec_reloc(le64toh(v)));
                    memcpy(cmd + o, &v, 8);
                }
                rec_put(rec_admin, b, seed_admin_mem(b, rec_reloc(slot), cmd,
                                                     64));
                rec_put(rec_admin, b, seed_admin_mem(b, rec_reloc(slot) + 64,
                                                     cmd + 64, 64));
            }
            rec_admin_reg(addr, val);
            rec_admin_settle();
            break;
        }
        default:
            rec_admin_reg(addr, val);
            break;
        }
    }
    __real_vrnic_core_reg_write(core, addr, val);
}

void __wrap_vrnic_core_db_write(VrnicCore *core, uint64_t addr, uint32_t val)
{
    rec_check_pid();
    if (core == rec_core && rec_admin) {
        uint8_t b[SEED_MAX];

        rec_put(rec_admin, b, seed_admin_db(b, addr / VRNIC_DB_PAGE_SIZE,
                                            addr % VRNIC_DB_PAGE_SIZE,
                                            val & 0xffff, val >> 16));
        rec_admin_settle();
    }
    __real_vrnic_core_db_write(core, addr, val);
}

void __wrap_vrnic_core_eth_receive(VrnicCore *core, const uint8_t *frame,
                                   size_t len)
{
    uint8_t b[SEED_MAX];

    rec_check_pid();
    if (core == rec_core && rec_admin) {
        rec_put(rec_admin, b, seed_admin_frame(b, frame, len));
    }
    /* Every RoCEv2 frame, to either device; a seed stays small. */
    if (rec_rx && rec_rx_frames < 48 && len <= 1600 &&
        vrnic_icrc_locate(frame, len, &(size_t){0}, &(size_t){0})) {
        rec_rx_frames++;
        rec_put(rec_rx, b, seed_rx_raw(b, frame, len, SEED_RX_READDRESS));
    }
    __real_vrnic_core_eth_receive(core, frame, len);
}
