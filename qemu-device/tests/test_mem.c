/*
 * vrnic core: memory descriptors and the translation walker - inline,
 * 1-, 2- and 3-level tables, 4 KiB / 2 MiB / 1 GiB pages, QUERY_MR's view,
 * malformed descriptors and bad table entries.
 *
 * Huge MRs are walked with sparse fake memory: only the table pages on the
 * path and the 4 KiB pieces actually touched exist (fake_alias maps far
 * guest addresses, e.g. 1 GiB-aligned pages, onto the small window).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "obj_helpers.h"
#include "kselftest_harness.h"

#define KiB 1024ull
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

FIXTURE(mem) {
    FakeBus *f;
    uint32_t pdn;
    AnyCmd c;
};

FIXTURE_SETUP(mem)
{
    self->f = obj_bus(NULL);
    self->pdn = alloc_pd(self->f, 0);
    ASSERT_EQ(1, self->pdn);
}

FIXTURE_TEARDOWN(mem)
{
    fake_free(self->f);
}

static void desc(struct vrnic_mem_desc *d, uint64_t iova, uint64_t len,
                 uint32_t shift, uint32_t levels)
{
    uint64_t n = ((iova + len - 1) >> shift) - (iova >> shift) + 1;

    memset(d, 0, sizeof(*d));
    d->iova = htole64(iova);
    d->length = htole64(len);
    d->flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, shift) |
                       VRNIC_FIELD_PREP(VRNIC_MEM_LEVELS_MASK, levels));
    d->npages = htole32(n);
}

static void set_entry(FakeBus *f, uint64_t table, uint64_t i, uint64_t val)
{
    uint64_t *t = fake_ptr(f, table);

    t[i] = htole64(val);
}

/* Register mem with all rights; returns the key (0 on failure). */
static uint32_t reg(FakeBus *f, AnyCmd *c, uint32_t pdn)
{
    uint64_t r;

    c->hdr.opcode = htole16(VRNIC_AQ_OP_REG_MR);
    c->mr.pdn = htole32(pdn);
    c->mr.access = htole32(VRNIC_ACCESS_ALL);
    c->mr.key_byte = 0x5a;
    return run(f, c, &r) == VRNIC_AQ_STS_OK ? r : 0;
}

static VrnicMr *mr_of(FakeBus *f, uint32_t key)
{
    return vrnic_mr_lookup(&f->core, key);
}

TEST_F(mem, inline_4k_pages_scattered_and_cross_page_access)
{
    FakeBus *f = self->f;
    uint64_t p0 = obj_alloc(f, 4096, 4096), p1 = obj_alloc(f, 4096, 4096);
    uint64_t p2 = obj_alloc(f, 4096, 4096);
    uint8_t buf[200], back[200];
    uint32_t key;
    VrnicMr *mr;

    /* iova 0x7000_0f00 .. +0x2000: touches 3 pages, mapped out of order. */
    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, 0x70000f00, 0x2000, 12, 0);
    ASSERT_EQ(3, le32toh(self->c.mr.mem.npages));
    self->c.mr.mem.pages[0] = htole64(p2);
    self->c.mr.mem.pages[1] = htole64(p0);
    self->c.mr.mem.pages[2] = htole64(p1);
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    for (int i = 0; i < 200; i++) {
        buf[i] = i;
    }
    /* 100 bytes before and after the page 0/1 boundary (iova 0x70001000). */
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0x70001000 - 100, buf, 200, true));
    ASSERT_EQ(0, memcmp(fake_ptr(f, p2 + 4096 - 100), buf, 100));
    ASSERT_EQ(0, memcmp(fake_ptr(f, p0), buf + 100, 100));
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0x70001000 - 100, back, 200, false));
    ASSERT_EQ(0, memcmp(buf, back, 200));
    /* Last byte of the MR is in page 2 at offset 0xeff. */
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0x70002eff, buf, 1, true));
    ASSERT_EQ(0, *(uint8_t *)fake_ptr(f, p1 + 0xeff));
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, 0x70002eff, buf, 2, true));
    ASSERT_EQ(0, f->core.stats.guest_errors);
}

TEST_F(mem, one_level_4k_table)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t pages = obj_alloc(f, 300 * 4096, 4096);
    uint32_t v = htole32(0xdeadbeef), key;
    VrnicMr *mr;

    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, 0x1000000, 300 * 4096, 12, 1);
    self->c.mr.mem.pages[0] = htole64(table);
    /* Page i lives at slot (i * 7) % 300 of the backing: scrambled. */
    for (int i = 0; i < 300; i++) {
        set_entry(f, table, i, pages + ((i * 7) % 300) * 4096ull);
    }
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    ASSERT_EQ(1, mr->mem.levels);
    ASSERT_EQ(300, mr->mem.npages);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0x1000000 + 299 * 4096 + 8, &v, 4,
                            true));
    ASSERT_EQ(0xdeadbeef,
              le32toh(*(uint32_t *)fake_ptr(f, pages + ((299 * 7) % 300) *
                                                4096ull + 8)));
}

/*
 * 2 levels, 4 KiB pages: a 4 GiB MR (2^20 pages) with only the directory,
 * two table pages and two data pages present.
 */
TEST_F(mem, two_level_4k_table_sparse)
{
    FakeBus *f = self->f;
    uint64_t dir = obj_alloc(f, 4096, 4096);
    uint64_t t0 = obj_alloc(f, 4096, 4096), t511 = obj_alloc(f, 4096, 4096);
    uint64_t d0 = obj_alloc(f, 4096, 4096), dl = obj_alloc(f, 4096, 4096);
    uint64_t iova = 0x7f0000000000ull, v = htole64(0x1122334455667788ull);
    uint64_t last = (1ull << 18) - 1;   /* 1 GiB of 4 KiB pages = 2^18 */
    uint32_t key;
    VrnicMr *mr;

    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, iova, 1 * GiB, 12, 2);
    ASSERT_EQ(1u << 18, le32toh(self->c.mr.mem.npages));
    self->c.mr.mem.pages[0] = htole64(dir);
    set_entry(f, dir, 0, t0);
    set_entry(f, dir, last >> 9, t511);
    set_entry(f, t0, 0, d0);
    set_entry(f, t511, last & 511, dl);
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + 16, &v, 8, true));
    ASSERT_EQ(0x1122334455667788ull, le64toh(*(uint64_t *)fake_ptr(f, d0 + 16)));
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + 1 * GiB - 8, &v, 8, true));
    ASSERT_EQ(0x1122334455667788ull,
              le64toh(*(uint64_t *)fake_ptr(f, dl + 4096 - 8)));
    /* A page whose table entry was never filled (0 = address 0): the bus
     * refuses it, the access fails, nothing crashes. */
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, iova + 4096, &v, 8, true));
}

/*
 * 3 levels, 4 KiB pages: a 100 GiB MR (26214400 pages), walking to the first
 * and the very last page through sparse directories.
 */
TEST_F(mem, three_level_4k_table_large_mr)
{
    FakeBus *f = self->f;
    uint64_t top = obj_alloc(f, 4096, 4096);
    uint64_t mid0 = obj_alloc(f, 4096, 4096), midl = obj_alloc(f, 4096, 4096);
    uint64_t t0 = obj_alloc(f, 4096, 4096), tl = obj_alloc(f, 4096, 4096);
    uint64_t d0 = obj_alloc(f, 4096, 4096), dl = obj_alloc(f, 4096, 4096);
    uint64_t len = 100 * GiB, iova = 0x100000000000ull;
    uint64_t n = len >> 12, last = n - 1;
    uint32_t v = htole32(0xabcd1234), key;
    VrnicMr *mr;
    struct vrnic_mr_attr *a;
    uint64_t *pa;

    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, iova, len, 12, 3);
    ASSERT_EQ(n, le32toh(self->c.mr.mem.npages));
    self->c.mr.mem.pages[0] = htole64(top);
    set_entry(f, top, 0, mid0);
    set_entry(f, mid0, 0, t0);
    set_entry(f, t0, 0, d0);
    set_entry(f, top, last >> 18, midl);
    set_entry(f, midl, (last >> 9) & 511, tl);
    set_entry(f, tl, last & 511, dl);
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova, &v, 4, true));
    ASSERT_EQ(0xabcd1234, le32toh(*(uint32_t *)fake_ptr(f, d0)));
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + len - 4, &v, 4, true));
    ASSERT_EQ(0xabcd1234, le32toh(*(uint32_t *)fake_ptr(f, dl + 4092)));

    /* QUERY_MR: the device's own walk, entries past npages read 0. */
    cmd_init(&self->c, VRNIC_AQ_OP_QUERY_MR);
    self->c.query_mr.resp_addr = htole64(FAKE_RESP);
    self->c.query_mr.resp_len = htole32(sizeof(*a) + 8 * 3);
    self->c.query_mr.key = htole32(key);
    self->c.query_mr.first = htole32(last - 1);
    self->c.query_mr.count = htole32(3);
    /* last - 1 shares tl with last: give it an entry. */
    set_entry(f, tl, (last - 1) & 511, d0);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &self->c, NULL));
    a = fake_ptr(f, FAKE_RESP);
    pa = fake_ptr(f, FAKE_RESP + sizeof(*a));
    ASSERT_EQ(iova, le64toh(a->iova));
    ASSERT_EQ(len, le64toh(a->length));
    ASSERT_EQ(3, le32toh(a->levels));
    ASSERT_EQ(12, le32toh(a->page_shift));
    ASSERT_EQ(n, le32toh(a->npages));
    ASSERT_EQ(VRNIC_ACCESS_ALL, le32toh(a->access));
    ASSERT_EQ(d0, le64toh(pa[0]));
    ASSERT_EQ(dl, le64toh(pa[1]));
    ASSERT_EQ(0, le64toh(pa[2]));
}

/* 2 MiB pages, 1-level table: page addresses 2 MiB-aligned far away. */
TEST_F(mem, two_mib_pages)
{
    FakeBus *f = self->f;
    uint64_t table = obj_alloc(f, 4096, 4096);
    uint64_t back = obj_alloc(f, 4096, 4096);
    uint64_t iova = 0x200000000ull + 0x1234, len = 10 * MiB;
    uint32_t v = htole32(0x600dcafe), key;
    VrnicMr *mr;

    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, iova, len, 21, 1);
    ASSERT_EQ(6, le32toh(self->c.mr.mem.npages));
    self->c.mr.mem.pages[0] = htole64(table);
    for (int i = 0; i < 6; i++) {
        set_entry(f, table, i, 0x3000000000ull + (5 - i) * 2 * MiB);
    }
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    /* Byte iova + 5 MiB: page 2 (pages start at iova & ~(2M-1)), offset
     * 0x101234 within it -> 0x3000000000 + 3 * 2M + 0x101234. */
    fake_alias(f, 0x3000000000ull + 3 * 2 * MiB + 0x101000, 4096, back);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + 5 * MiB, &v, 4, true));
    ASSERT_EQ(0x600dcafe, le32toh(*(uint32_t *)fake_ptr(f, back + 0x234)));
    /* An entry that is 4 KiB- but not 2 MiB-aligned is refused at access
     * (page 3: page 2's address is in the translation cache now). */
    set_entry(f, table, 3, 0x3000001000ull);
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, iova + 7 * MiB, &v, 4, true));
    ASSERT_EQ(1, f->core.stats.guest_errors);
}

/* 1 GiB pages: 4 GiB inline, and a 300 GiB MR through a 1-level table. */
TEST_F(mem, one_gib_pages_inline_and_table)
{
    FakeBus *f = self->f;
    uint64_t back = obj_alloc(f, 8192, 4096), table = obj_alloc(f, 4096, 4096);
    uint64_t v = htole64(0x0123456789abcdefull);
    uint32_t key;
    VrnicMr *mr;

    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, 0x40000000ull * 8, 4 * GiB, 30, 0);
    for (int i = 0; i < 4; i++) {
        self->c.mr.mem.pages[i] = htole64((0x100ull + 3 - i) * GiB);
    }
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    /* Offset 3 GiB + 0x1234_5678: page 3 -> 0x100 GiB + 0x12345678. */
    fake_alias(f, 0x100ull * GiB + 0x12345000, 4096, back);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 8 * GiB + 3 * GiB + 0x12345678, &v,
                            8, true));
    ASSERT_EQ(0x0123456789abcdefull,
              le64toh(*(uint64_t *)fake_ptr(f, back + 0x678)));

    /* 300 GiB MR: npages 300 > 6 needs a table. */
    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, 0, 300 * GiB, 30, 0);
    ASSERT_EQ(0, reg(f, &self->c, self->pdn));
    desc(&self->c.mr.mem, 0, 300 * GiB, 30, 1);
    self->c.mr.mem.pages[0] = htole64(table);
    for (int i = 0; i < 300; i++) {
        set_entry(f, table, i, (0x200ull + i) * GiB);
    }
    key = reg(f, &self->c, self->pdn);
    ASSERT_NE(0, key);
    mr = mr_of(f, key);
    fake_alias(f, (0x200ull + 299) * GiB + GiB - 4096, 4096, back + 4096);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 300 * GiB - 8, &v, 8, true));
    ASSERT_EQ(0x0123456789abcdefull,
              le64toh(*(uint64_t *)fake_ptr(f, back + 8192 - 8)));
}

TEST_F(mem, malformed_descriptors_are_refused)
{
    FakeBus *f = self->f;
    struct vrnic_mem_desc *d = &self->c.mr.mem;
    uint64_t p = obj_alloc(f, 8192, 4096);
    struct {
        const char *what;
        uint64_t iova, len;
        uint32_t shift, levels, npages_delta, flags_extra;
        uint64_t page0;
    } bad[] = {
        { "page_shift 11", p, 4096, 11, 0, 0, 0, p },
        { "page_shift 31", 0, 4096, 31, 0, 0, 0, 0 },
        { "levels 4", p, 4096, 12, 4, 0, 0, p },
        { "reserved flag", p, 4096, 12, 0, 0, 1u << 10, p },
        { "length 0", p, 0, 12, 0, 0, 0, p },
        { "length 2^40 + 1", 0, (1ull << 40) + 1, 30, 1, 0, 0, p },
        { "wraps", ~0ull - 4095, 8192, 12, 0, 0, 0, p },
        { "npages + 1", p, 4096, 12, 0, 1, 0, p },
        { "npages - 1", p + 8, 4096, 12, 0, (uint32_t)-1, 0, p },
        { "7 inline pages", p, 7 * 4096, 12, 0, 0, 0, p },
        { "513 pages at level 1", p, 513 * 4096, 12, 1, 0, 0, p },
        { "unaligned inline page", p, 4096, 12, 0, 0, 0, p + 512 },
        { "unaligned table root", p, 4096, 12, 1, 0, 0, p + 8 },
        { "2M page not 2M-aligned", 0, 4096, 21, 0, 0, 0, 0x1000 },
    };

    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t n;

        cmd_init(&self->c, VRNIC_AQ_OP_REG_MR);
        self->c.mr.pdn = htole32(self->pdn);
        d->iova = htole64(bad[i].iova);
        d->length = htole64(bad[i].len);
        d->flags = htole32(bad[i].shift | bad[i].levels << 8 |
                           bad[i].flags_extra);
        n = bad[i].len && bad[i].shift < 64 ?
            ((bad[i].iova + bad[i].len - 1) >> bad[i].shift) -
            (bad[i].iova >> bad[i].shift) + 1 : 0;
        d->npages = htole32((uint32_t)n + bad[i].npages_delta);
        d->pages[0] = htole64(bad[i].page0);
        TH_LOG("%s", bad[i].what);
        ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
    }
    ASSERT_EQ(0, f->core.obj.n_mrs);
    ASSERT_EQ(0, f->core.obj.pds[self->pdn].refs);
}

TEST_F(mem, bad_tables_fail_the_access_not_the_device)
{
    FakeBus *f = self->f;
    uint64_t dir = obj_alloc(f, 4096, 4096), t = obj_alloc(f, 4096, 4096);
    uint64_t page = obj_alloc(f, 4096, 4096);
    uint32_t v = 0, key;
    VrnicMr *mr;

    cmd_init(&self->c, 0);
    desc(&self->c.mr.mem, 0, 2 * MiB, 12, 2);
    self->c.mr.mem.pages[0] = htole64(dir);
    set_entry(f, dir, 0, t);
    set_entry(f, t, 0, page);
    set_entry(f, t, 1, page + 4);              /* unaligned page */
    key = reg(f, &self->c, self->pdn);
    mr = mr_of(f, key);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0, &v, 4, false));
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, 4096, &v, 4, false));
    /* Page 2 was never walked (page 0 is in the translation cache). */
    set_entry(f, dir, 0, t + 8);               /* unaligned table */
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, 8192, &v, 4, false));
    set_entry(f, dir, 0, FAKE_UNMAPPED);       /* unreadable table */
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, 8192, &v, 4, false));
    ASSERT_EQ(3, f->core.stats.guest_errors);
    ASSERT_FALSE(f->core.fatal);
    /* QUERY_MR over a broken walk: DMA_ERROR, no answer pages. */
    cmd_init(&self->c, VRNIC_AQ_OP_QUERY_MR);
    self->c.query_mr.resp_addr = htole64(FAKE_RESP);
    self->c.query_mr.resp_len = htole32(sizeof(struct vrnic_mr_attr) + 8);
    self->c.query_mr.key = htole32(key);
    self->c.query_mr.count = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_DMA_ERROR, run(f, &self->c, NULL));
}

TEST_F(mem, query_mr_checks)
{
    FakeBus *f = self->f;
    uint64_t buf = obj_alloc(f, 8192, 4096);
    struct vrnic_mr_attr *a = fake_ptr(f, FAKE_RESP);
    uint64_t *pa = fake_ptr(f, FAKE_RESP + sizeof(*a));
    uint32_t key;

    ASSERT_EQ(0, reg_mr(f, self->pdn, VRNIC_ACCESS_LOCAL_WRITE, 7, buf + 100,
                        5000, &key));
    cmd_init(&self->c, VRNIC_AQ_OP_QUERY_MR);
    self->c.query_mr.resp_addr = htole64(FAKE_RESP);
    self->c.query_mr.key = htole32(key);
    self->c.query_mr.count = htole32(3);
    self->c.query_mr.resp_len = htole32(sizeof(*a) + 8 * 3);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &self->c, NULL));
    ASSERT_EQ(buf + 100, le64toh(a->iova));
    ASSERT_EQ(5000, le64toh(a->length));
    ASSERT_EQ(2, le32toh(a->npages));
    ASSERT_EQ(0, le32toh(a->levels));
    ASSERT_EQ(self->pdn, le32toh(a->pdn));
    ASSERT_EQ(buf, le64toh(pa[0]));
    ASSERT_EQ(buf + 4096, le64toh(pa[1]));
    ASSERT_EQ(0, le64toh(pa[2]));
    /* Length must match count; count is bounded; the key must be live. */
    self->c.query_mr.resp_len = htole32(sizeof(*a) + 8 * 2);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
    self->c.query_mr.count = htole32(VRNIC_QUERY_MR_MAX_PAGES + 1);
    self->c.query_mr.resp_len = htole32(sizeof(*a) +
                                        8 * (VRNIC_QUERY_MR_MAX_PAGES + 1));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
    self->c.query_mr.count = htole32(1);
    self->c.query_mr.resp_len = htole32(sizeof(*a) + 8);
    self->c.query_mr.key = htole32(key ^ 1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &self->c, NULL));
    self->c.query_mr.key = htole32(key);
    self->c.query_mr.first = htole32(0xffffffff);   /* past npages: 0 */
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &self->c, NULL));
    ASSERT_EQ(0, le64toh(pa[0]));
    self->c.query_mr.rsvd0[95] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
}

TEST_F(mem, dma_mr_is_identity_local_only)
{
    FakeBus *f = self->f;
    struct vrnic_mr_attr *a = fake_ptr(f, FAKE_RESP);
    uint32_t v = htole32(0x5151), key;
    VrnicMr *mr;
    uint64_t r;

    cmd_init(&self->c, VRNIC_AQ_OP_REG_MR);
    self->c.mr.pdn = htole32(self->pdn);
    self->c.mr.flags = htole32(VRNIC_MR_FLAG_DMA);
    self->c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE |
                                VRNIC_ACCESS_REMOTE_READ);
    self->c.mr.mem.length = htole64(~0ull);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
    self->c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    self->c.mr.mem.length = htole64(1ull << 40);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
    self->c.mr.mem.length = htole64(~0ull);
    self->c.mr.mem.npages = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &self->c, NULL));
    self->c.mr.mem.npages = 0;
    key = reg(f, &self->c, self->pdn);
    ASSERT_EQ(0, key);      /* reg() asks for ACCESS_ALL: refused */
    self->c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &self->c, &r));
    key = r;
    mr = vrnic_mr_lookup(&f->core, key);
    ASSERT_NE(NULL, mr);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, FAKE_BUF + 12, &v, 4, true));
    ASSERT_EQ(0x5151, le32toh(*(uint32_t *)fake_ptr(f, FAKE_BUF + 12)));
    ASSERT_EQ(VRNIC_MR_OK, vrnic_mr_check(&f->core, key, self->pdn,
                                          VRNIC_ACCESS_LOCAL_WRITE,
                                          0xffffffffffffe000ull, 4096, NULL));
    ASSERT_EQ(VRNIC_MR_BAD_ACCESS,
              vrnic_mr_check(&f->core, key, self->pdn,
                             VRNIC_ACCESS_REMOTE_READ, FAKE_BUF, 8, NULL));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS,
              vrnic_mr_check(&f->core, key, self->pdn, 0, ~0ull - 3, 8, NULL));
    /* Its QUERY_MR view: flags DMA, no pages. */
    cmd_init(&self->c, VRNIC_AQ_OP_QUERY_MR);
    self->c.query_mr.resp_addr = htole64(FAKE_RESP);
    self->c.query_mr.resp_len = htole32(sizeof(*a) + 8);
    self->c.query_mr.key = htole32(key);
    self->c.query_mr.count = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &self->c, NULL));
    ASSERT_EQ(VRNIC_MR_FLAG_DMA, le32toh(a->flags));
    ASSERT_EQ(~0ull, le64toh(a->length));
    ASSERT_EQ(0, le32toh(a->npages));
}

TEST_HARNESS_MAIN
