/*
 * vrnic core: the translation cache (vrnic_tlb.c). A walked page address is
 * reused while its memory lives, and no command that ends a translation -
 * DEREG_MR, REREG_MR with new pages, DESTROY_CQ, a device reset, a change of
 * the guest's memory map - ever lets the device use the old one: a hostile
 * or careless driver that reuses its table pages for the next registration
 * sees its new pages at once.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "obj_helpers.h"
#include "kselftest_harness.h"

FIXTURE(tlb) {
    FakeBus *f;
    uint32_t pdn;
};

FIXTURE_SETUP(tlb)
{
    self->f = obj_bus(NULL);
    self->pdn = alloc_pd(self->f, 0);
    ASSERT_EQ(1, self->pdn);
}

FIXTURE_TEARDOWN(tlb)
{
    fake_free(self->f);
}

/* [iova, iova + npages * 4 KiB) through the one-level table at table. */
static void tabled(struct vrnic_mem_desc *d, uint64_t iova, uint32_t npages,
                   uint64_t table)
{
    memset(d, 0, sizeof(*d));
    d->iova = htole64(iova);
    d->length = htole64(npages * 4096ull);
    d->flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, 12) |
                       VRNIC_FIELD_PREP(VRNIC_MEM_LEVELS_MASK, 1));
    d->npages = htole32(npages);
    d->pages[0] = htole64(table);
}

static void set_entry(FakeBus *f, uint64_t table, uint32_t i, uint64_t pa)
{
    ((uint64_t *)fake_ptr(f, table))[i] = htole64(pa);
}

/* REG_MR (or REREG_MR of key with new pages) over a one-level table. */
static uint32_t reg_tabled(FakeBus *f, uint32_t pdn, uint32_t rereg_key,
                           uint64_t iova, uint32_t npages, uint64_t table)
{
    AnyCmd c;
    uint64_t r;

    cmd_init(&c, rereg_key ? VRNIC_AQ_OP_REREG_MR : VRNIC_AQ_OP_REG_MR);
    c.mr.handle = htole32(rereg_key);
    c.mr.pdn = htole32(pdn);
    c.mr.access = htole32(VRNIC_ACCESS_ALL);
    c.mr.flags = htole32(rereg_key ? VRNIC_MR_REREG_TRANS : 0);
    c.mr.key_byte = 0x33;
    tabled(&c.mr.mem, iova, npages, table);
    return run(f, &c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static bool mr_write(FakeBus *f, uint32_t key, uint64_t addr, uint32_t v)
{
    VrnicMr *mr = vrnic_mr_lookup(&f->core, key);

    v = htole32(v);
    return mr && vrnic_mr_rw(&f->core, mr, addr, &v, 4, true);
}

static uint32_t word_at(FakeBus *f, uint64_t pa)
{
    return le32toh(*(uint32_t *)fake_ptr(f, pa));
}

static uint64_t stat(FakeBus *f, int i)
{
    return f->core.stats.port[i];
}

static unsigned live_entries(FakeBus *f)
{
    unsigned n = 0;

    for (unsigned i = 0; i < VRNIC_TLB_ENTRIES; i++) {
        n += f->core.tlb.e[i].id != 0;
    }
    return n;
}

TEST_F(tlb, second_access_to_a_page_reads_no_table)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t data = obj_alloc(f, 8 * 4096, 4096);
    uint64_t iova = 0x7f0000000000ull, dma;
    uint32_t key;

    for (int i = 0; i < 8; i++) {
        set_entry(f, table, i, data + (7 - i) * 4096ull);
    }
    key = reg_tabled(f, self->pdn, 0, iova, 8, table);
    ASSERT_NE(0, key);
    dma = f->core.dma_ops;
    for (int i = 0; i < 8; i++) {
        ASSERT_TRUE(mr_write(f, key, iova + i * 4096ull + 100, i));
    }
    /* A table read and a data write per page. */
    ASSERT_EQ(16, f->core.dma_ops - dma);
    ASSERT_EQ(8, stat(f, VRNIC_PORT_STAT_XLATE_MISSES));
    ASSERT_EQ(0, stat(f, VRNIC_PORT_STAT_XLATE_HITS));
    dma = f->core.dma_ops;
    for (int i = 0; i < 8; i++) {
        ASSERT_TRUE(mr_write(f, key, iova + i * 4096ull + 200, 0x100 + i));
        ASSERT_EQ(0x100 + i, word_at(f, data + (7 - i) * 4096ull + 200));
    }
    ASSERT_EQ(8, f->core.dma_ops - dma);
    ASSERT_EQ(8, stat(f, VRNIC_PORT_STAT_XLATE_HITS));
    ASSERT_EQ(8, live_entries(f));
}

/*
 * The driver frees an MR and registers the next one with the same table
 * page, rewritten: the new MR's accesses land in its own pages, never in
 * the freed ones the device translated a moment ago.
 */
TEST_F(tlb, dereg_then_reg_at_the_same_table_uses_the_new_pages)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t old = obj_alloc(f, 4096, 4096), new = obj_alloc(f, 4096, 4096);
    uint32_t key;

    set_entry(f, table, 0, old);
    key = reg_tabled(f, self->pdn, 0, 0x10000, 1, table);
    ASSERT_TRUE(mr_write(f, key, 0x10000, 0x01d));
    ASSERT_EQ(0x01d, word_at(f, old));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEREG_MR, key));
    ASSERT_FALSE(mr_write(f, key, 0x10000, 0xbad));

    set_entry(f, table, 0, new);
    key = reg_tabled(f, self->pdn, 0, 0x10000, 1, table);
    ASSERT_NE(0, key);
    ASSERT_TRUE(mr_write(f, key, 0x10000, 0x2e2));
    ASSERT_EQ(0x2e2, word_at(f, new));
    ASSERT_EQ(0x01d, word_at(f, old));
}

TEST_F(tlb, rereg_with_new_pages_uses_them)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t old = obj_alloc(f, 2 * 4096, 4096);
    uint64_t new = obj_alloc(f, 2 * 4096, 4096);
    uint32_t key, key2;

    set_entry(f, table, 0, old);
    set_entry(f, table, 1, old + 4096);
    key = reg_tabled(f, self->pdn, 0, 0, 2, table);
    ASSERT_TRUE(mr_write(f, key, 4096, 1));
    ASSERT_EQ(1, word_at(f, old + 4096));

    set_entry(f, table, 0, new);
    set_entry(f, table, 1, new + 4096);
    key2 = reg_tabled(f, self->pdn, key, 0, 2, table);
    ASSERT_NE(0, key2);
    ASSERT_TRUE(mr_write(f, key2, 4096, 2));
    ASSERT_EQ(2, word_at(f, new + 4096));
    ASSERT_EQ(1, word_at(f, old + 4096));
}

/* A CQ's ring is translated memory too: a new CQ writes its own ring. */
TEST_F(tlb, cq_destroyed_and_created_on_the_same_table_writes_the_new_ring)
{
    FakeBus *f = self->f;
    uint32_t eqn = create_eq(f, 2, 4);
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t old = obj_alloc(f, 4096, 4096), new = obj_alloc(f, 4096, 4096);
    AnyCmd c;
    uint64_t cqn;

    ASSERT_NE(0, eqn);
    cmd_init(&c, VRNIC_AQ_OP_CREATE_CQ);
    c.cq.eqn = htole32(eqn);
    c.cq.log_depth = htole32(4);
    tabled(&c.cq.mem, 0x5000, 1, table);
    set_entry(f, table, 0, old);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &cqn));
    ASSERT_TRUE(post_cqe(f, cqn, 0xaaaa, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0xaaaa, le64toh(cqe_at(f, old, 4, 0)->wr_id));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DESTROY_CQ, cqn));

    set_entry(f, table, 0, new);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &cqn));
    ASSERT_TRUE(post_cqe(f, cqn, 0xbbbb, VRNIC_WC_SUCCESS, 0));
    ASSERT_EQ(0xbbbb, le64toh(cqe_at(f, new, 4, 0)->wr_id));
    ASSERT_EQ(0, cqe_at(f, old, 4, 1)->wr_id);
    ASSERT_EQ(0xaaaa, le64toh(cqe_at(f, old, 4, 0)->wr_id));
}

/*
 * A live memory's tables must not change (the rule the driver follows):
 * the device keeps the page it walked until the guest's memory map changes,
 * which drops every entry, and so does a reset.
 */
TEST_F(tlb, memory_map_change_and_reset_drop_every_entry)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t a = obj_alloc(f, 4096, 4096), b = obj_alloc(f, 4096, 4096);
    uint32_t key;

    set_entry(f, table, 0, a);
    key = reg_tabled(f, self->pdn, 0, 0, 1, table);
    ASSERT_TRUE(mr_write(f, key, 0, 1));
    set_entry(f, table, 0, b);
    ASSERT_TRUE(mr_write(f, key, 0, 2));
    ASSERT_EQ(2, word_at(f, a));        /* cached */
    ASSERT_EQ(0, word_at(f, b));

    vrnic_core_memory_changed(&f->core);
    ASSERT_EQ(0, live_entries(f));
    ASSERT_TRUE(mr_write(f, key, 0, 3));
    ASSERT_EQ(3, word_at(f, b));
    ASSERT_EQ(1, live_entries(f));

    vrnic_core_reset(&f->core);
    ASSERT_EQ(0, live_entries(f));
}

/* A walk that failed leaves nothing behind: the fixed table is read. */
TEST_F(tlb, failed_walk_is_not_cached)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096), a = obj_alloc(f, 4096, 4096);
    uint32_t key;

    set_entry(f, table, 0, a + 8);
    key = reg_tabled(f, self->pdn, 0, 0, 1, table);
    ASSERT_FALSE(mr_write(f, key, 0, 1));
    ASSERT_EQ(0, live_entries(f));
    set_entry(f, table, 0, a);
    ASSERT_TRUE(mr_write(f, key, 0, 1));
    ASSERT_EQ(1, word_at(f, a));
}

/*
 * A hostile driver's churn: four MR slots registered, re-registered and
 * freed at random over the same four table pages, each registration with
 * fresh random pages and up to 512 of them (so memories also evict each
 * other in the cache), and a write to a random page of a random live MR
 * after every step. Each write carries a unique value and must be found
 * at the page the current table gives: one stale translation fails it.
 */
#define CHURN_SLOTS 4
#define CHURN_DATA  64

TEST_F(tlb, churn_never_uses_a_stale_translation)
{
    FakeBus *f = self->f;
    uint64_t tables[CHURN_SLOTS], data = obj_alloc(f, CHURN_DATA * 4096, 4096);
    uint64_t map[CHURN_SLOTS][512];
    uint32_t keys[CHURN_SLOTS] = { 0 }, npages[CHURN_SLOTS] = { 0 };
    uint32_t seed = 12345, token = 1, writes = 0;

    for (int s = 0; s < CHURN_SLOTS; s++) {
        tables[s] = obj_alloc(f, 4096, 4096);
    }
    for (int step = 0; step < 4000; step++) {
        int s = (seed = seed * 1103515245 + 12345) >> 16 & (CHURN_SLOTS - 1);
        uint32_t op = (seed = seed * 1103515245 + 12345) >> 16 & 7;

        if (op < 2 && keys[s]) {
            ASSERT_EQ(VRNIC_AQ_STS_OK,
                      destroy(f, VRNIC_AQ_OP_DEREG_MR, keys[s]));
            keys[s] = 0;
        } else if (op < 4) {
            npages[s] = 1 + ((seed = seed * 1103515245 + 12345) >> 16) % 512;
            for (uint32_t i = 0; i < npages[s]; i++) {
                seed = seed * 1103515245 + 12345;
                map[s][i] = data + ((seed >> 16) % CHURN_DATA) * 4096ull;
                set_entry(f, tables[s], i, map[s][i]);
            }
            keys[s] = reg_tabled(f, self->pdn, keys[s], 0, npages[s],
                                 tables[s]);
            ASSERT_NE(0, keys[s]);
        } else if (op == 4 && !(step % 64)) {
            vrnic_core_memory_changed(&f->core);
        }
        for (int w = 0; w < CHURN_SLOTS; w++) {
            uint32_t i, off;

            if (!keys[w]) {
                continue;
            }
            seed = seed * 1103515245 + 12345;
            i = (seed >> 16) % npages[w];
            off = (seed >> 4) & 0xffc;
            ASSERT_TRUE(mr_write(f, keys[w], i * 4096ull + off, token));
            ASSERT_EQ(token, word_at(f, map[w][i] + off));
            token++;
            writes++;
        }
    }
    ASSERT_GT(writes, 8000);
    ASSERT_GT(stat(f, VRNIC_PORT_STAT_XLATE_HITS), 0);
    ASSERT_GT(stat(f, VRNIC_PORT_STAT_XLATE_MISSES), 1000);
}

TEST_HARNESS_MAIN
