/*
 * vrnic core: PDs and MRs - keys, every key/PD/access/bounds rejection,
 * stale keys after DEREG_MR and REREG_MR, REREG semantics, limits,
 * destroy-while-referenced.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "obj_helpers.h"
#include "kselftest_harness.h"

FIXTURE(mr) {
    FakeBus *f;
    uint32_t pdn;
    uint64_t buf;
};

FIXTURE_SETUP(mr)
{
    self->f = obj_bus(NULL);
    self->pdn = alloc_pd(self->f, 0);
    self->buf = obj_alloc(self->f, 16384, 4096);
}

FIXTURE_TEARDOWN(mr)
{
    fake_free(self->f);
}

static VrnicMrCheck chk(FakeBus *f, uint32_t key, uint32_t pdn, uint32_t acc,
                        uint64_t addr, uint64_t len)
{
    return vrnic_mr_check(&f->core, key, pdn, acc, addr, len, NULL);
}

TEST_F(mr, key_layout_and_every_rejection)
{
    FakeBus *f = self->f;
    uint64_t b = self->buf + 0x100;
    uint32_t pd2 = alloc_pd(f, 0), key;

    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_mr(f, self->pdn, VRNIC_ACCESS_LOCAL_WRITE |
                                      VRNIC_ACCESS_REMOTE_READ, 0xc3, b,
                                      8192, &key));
    ASSERT_EQ(0xc3, key & 0xff);
    ASSERT_EQ(1, key >> 8);                 /* first index */
    /* OK cases: whole MR, zero length at either end, local read implied. */
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, b, 8192));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, VRNIC_ACCESS_LOCAL_WRITE,
                               b + 8191, 1));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, b + 8192, 0));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, VRNIC_ACCESS_REMOTE_READ,
                               b, 1));
    /* Key: wrong byte, index 0, free index, index past max_mr. */
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, key ^ 1, self->pdn, 0, b, 1));
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, 0xc3, self->pdn, 0, b, 1));
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, 2 << 8 | 0xc3, self->pdn, 0, b, 1));
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, 4097u << 8 | 0xc3, self->pdn, 0, b, 1));
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, 0xffffffc3, self->pdn, 0, b, 1));
    /* PD. */
    ASSERT_EQ(VRNIC_MR_BAD_PD, chk(f, key, pd2, 0, b, 1));
    /* Access: each right the MR lacks. */
    ASSERT_EQ(VRNIC_MR_BAD_ACCESS, chk(f, key, self->pdn,
                                       VRNIC_ACCESS_REMOTE_WRITE, b, 1));
    ASSERT_EQ(VRNIC_MR_BAD_ACCESS, chk(f, key, self->pdn,
                                       VRNIC_ACCESS_REMOTE_ATOMIC, b, 8));
    /* Bounds: below, past the end, longer than the MR, wrap-around. */
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, b - 1, 1));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, b + 8191, 2));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, b, 8193));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, b + 8, ~0ull));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, ~0ull, 2));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, b + 8193, 0));
}

TEST_F(mr, access_flags_validated_at_registration)
{
    FakeBus *f = self->f;

    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_mr(f, self->pdn,
              VRNIC_ACCESS_REMOTE_WRITE, 0, self->buf, 4096, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_mr(f, self->pdn,
              VRNIC_ACCESS_REMOTE_ATOMIC, 0, self->buf, 4096, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_mr(f, self->pdn, 1u << 7, 0,
                                             self->buf, 4096, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, reg_mr(f, 77, 0, 0, self->buf, 4096,
                                             NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, reg_mr(f, 0, 0, 0, self->buf, 4096,
                                             NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_mr(f, self->pdn, VRNIC_ACCESS_ALL, 0,
                                      self->buf, 4096, NULL));
    ASSERT_EQ(1, f->core.obj.n_mrs);
}

TEST_F(mr, reserved_bytes_and_flags)
{
    FakeBus *f = self->f;
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_REG_MR);
    c.mr.pdn = htole32(self->pdn);
    mem_inline(&c.mr.mem, self->buf, 4096);
    c.mr.rsvd0[6] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.rsvd0[6] = 0;
    c.mr.rsvd1[23] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.rsvd1[23] = 0;
    c.mr.handle = htole32(5);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.handle = 0;
    c.mr.flags = htole32(1u << 2);      /* 1: DMA, 2: DEVICE_MEM */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.flags = 0;
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    cmd_init(&c, VRNIC_AQ_OP_ALLOC_PD);
    c.pd.uctx = htole32(64);                /* db_pages = 64 */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.pd.uctx = htole32(63);
    c.pd.rsvd0[0] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    cmd_init(&c, VRNIC_AQ_OP_DEALLOC_PD);
    c.destroy.handle = htole32(self->pdn);
    c.destroy.rsvd0[115] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
}

TEST_F(mr, stale_key_after_dereg_and_rereg)
{
    FakeBus *f = self->f;
    uint32_t key, key2, k3;
    AnyCmd c;
    uint64_t r;

    ASSERT_EQ(0, reg_mr(f, self->pdn, VRNIC_ACCESS_LOCAL_WRITE, 0x10,
                        self->buf, 4096, &key));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, self->buf, 8));
    /* REREG with a new key byte: old key dead, new key works, same index. */
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(key);
    c.mr.key_byte = 0x11;
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    key2 = r;
    ASSERT_EQ((key & ~0xffu) | 0x11, key2);
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, key, self->pdn, 0, self->buf, 8));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key2, self->pdn, 0, self->buf, 8));
    /* REREG and DEREG with the stale key are refused. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DEREG_MR, key));
    /* DEREG: the key is dead; a second DEREG fails. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEREG_MR, key2));
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, key2, self->pdn, 0, self->buf, 8));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DEREG_MR, key2));
    ASSERT_EQ(0, f->core.obj.n_mrs);
    /* Next-fit: the freed index is not handed out again at once. */
    ASSERT_EQ(0, reg_mr(f, self->pdn, 0, 0x11, self->buf, 4096, &k3));
    ASSERT_NE(key2 >> 8, k3 >> 8);
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, key2, self->pdn, 0, self->buf, 8));
}

TEST_F(mr, rereg_changes_pd_access_translation_atomically)
{
    FakeBus *f = self->f;
    uint32_t pd2 = alloc_pd(f, 0), key, key2;
    VrnicMr *mr;
    AnyCmd c;
    uint64_t r;

    ASSERT_EQ(0, reg_mr(f, self->pdn, 0, 1, self->buf, 4096, &key));
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(key);
    c.mr.key_byte = 2;
    c.mr.flags = htole32(VRNIC_MR_REREG_PD | VRNIC_MR_REREG_ACCESS |
                         VRNIC_MR_REREG_TRANS);
    c.mr.pdn = htole32(pd2);
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_WRITE);
    mem_inline(&c.mr.mem, self->buf + 4096, 8192);
    /* A bad part refuses all of it. */
    c.mr.mem.npages = htole32(3);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, self->buf, 4096));
    c.mr.mem.npages = htole32(2);
    c.mr.pdn = htole32(99);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, run(f, &c, NULL));
    c.mr.pdn = htole32(pd2);
    c.mr.access = htole32(VRNIC_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_WRITE);
    c.mr.flags = htole32(1u << 3);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, self->buf, 4096));
    c.mr.flags = htole32(VRNIC_MR_REREG_PD | VRNIC_MR_REREG_ACCESS |
                         VRNIC_MR_REREG_TRANS);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    key2 = r;
    mr = vrnic_mr_lookup(&f->core, key2);
    ASSERT_EQ(pd2, mr->pdn);
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key2, pd2, VRNIC_ACCESS_REMOTE_WRITE,
                               self->buf + 4096, 8192));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key2, pd2, 0, self->buf, 1));
    /* The MR moved: the old PD is free, the new one is in use. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_PD, self->pdn));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_STATE, destroy(f, VRNIC_AQ_OP_DEALLOC_PD, pd2));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEREG_MR, key2));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_PD, pd2));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, destroy(f, VRNIC_AQ_OP_DEALLOC_PD, pd2));
}

TEST(pd_and_mr_limits_are_exact)
{
    VrnicConfig cfg = fake_default_config();
    FakeBus *f;
    uint32_t pds[4], keys[6], key;
    uint64_t buf;

    cfg.max_pd = 4;
    cfg.max_mr = 6;
    f = obj_bus(&cfg);
    buf = obj_alloc(f, 4096, 4096);
    for (int i = 0; i < 4; i++) {
        pds[i] = alloc_pd(f, 0);
        ASSERT_EQ(i + 1, pds[i]);
    }
    ASSERT_EQ(0, alloc_pd(f, 0));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEALLOC_PD, pds[2]));
    ASSERT_EQ(3, alloc_pd(f, 0));           /* the only free number */
    for (int i = 0; i < 6; i++) {
        ASSERT_EQ(VRNIC_AQ_STS_OK, reg_mr(f, pds[0], 0, i, buf, 64, &keys[i]));
    }
    ASSERT_EQ(VRNIC_AQ_STS_NO_RESOURCES, reg_mr(f, pds[0], 0, 9, buf, 64,
                                                &key));
    /* A limit reached is no guest error (vrnic_aq_status_guest_error()). */
    ASSERT_EQ(0, f->core.stats.guest_errors);
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEREG_MR, keys[3]));
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_mr(f, pds[0], 0, 9, buf, 64, &key));
    ASSERT_EQ(4, key >> 8);
    ASSERT_EQ(6, f->core.obj.n_mrs);
    fake_free(f);
}

/*
 * Device memory: MRs with VRNIC_MR_FLAG_DEVICE_MEM are
 * windows on the fake bus's devmem buffer (cfg.dm_size bytes).
 */
#define DM_SIZE (64u << 10)

FIXTURE(dm) {
    FakeBus *f;
    uint32_t pdn;
};

FIXTURE_SETUP(dm)
{
    VrnicConfig cfg = fake_default_config();

    cfg.dm_size = DM_SIZE;
    self->f = obj_bus(&cfg);
    self->pdn = alloc_pd(self->f, 0);
}

FIXTURE_TEARDOWN(dm)
{
    fake_free(self->f);
}

static uint32_t query_device_caps(FakeBus *f)
{
    struct vrnic_device_attr *a = fake_ptr(f, FAKE_RESP);
    AnyCmd c;

    memset(a, 0xff, sizeof(*a));
    cmd_init(&c, VRNIC_AQ_OP_QUERY_DEVICE);
    c.query.resp_addr = htole64(FAKE_RESP);
    c.query.resp_len = htole32(sizeof(*a));
    if (run(f, &c, NULL) != VRNIC_AQ_STS_OK) {
        return ~0u;
    }
    return le32toh(a->device_caps);
}

TEST_F(dm, registration_accepted_and_refused)
{
    FakeBus *f = self->f;
    uint32_t acc = VRNIC_ACCESS_LOCAL_WRITE | VRNIC_ACCESS_REMOTE_READ |
                   VRNIC_ACCESS_REMOTE_WRITE | VRNIC_ACCESS_REMOTE_ATOMIC;
    uint32_t key;
    VrnicMr *mr;
    AnyCmd c;

    /* Accepted: all of it, a slice, the last byte, every remote right. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, acc, 1, 0, 0, DM_SIZE,
                                         &key));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, VRNIC_ACCESS_REMOTE_WRITE,
                               0, DM_SIZE));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, 0, DM_SIZE + 1));
    mr = vrnic_mr_lookup(&f->core, key);
    ASSERT_NE(NULL, mr);
    ASSERT_TRUE(mr->mem.devmem);
    ASSERT_FALSE(mr->mem.dma);
    ASSERT_EQ(0, mr->mem.devmem_offset);
    ASSERT_EQ(VRNIC_MR_FLAG_DEVICE_MEM, mr->flags);
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 2, 0, 4096, 100,
                                         &key));
    ASSERT_EQ(4096, vrnic_mr_lookup(&f->core, key)->mem.devmem_offset);
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 3, 0, DM_SIZE - 1,
                                         1, NULL));
    /* Any iova (the kernel passes 0: zero-based), as long as it cannot
     * wrap. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 4,
                                         0xffffffffffff0000ull, 0, 0xffff,
                                         &key));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, ~0ull - 1, 1));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, ~0ull, 1));
    ASSERT_EQ(4, f->core.obj.n_mrs);

    /* Range: past dm_size, longer than dm_size, offset past the end. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0,
                                                DM_SIZE - 10, 11, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0, 0,
                                                DM_SIZE + 1, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0,
                                                DM_SIZE + 1, 0, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0,
                                                DM_SIZE, 1, NULL));
    /* offset + length wraps around 2^64 (and would land inside). */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0,
                                                ~0ull - 1, 4, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0,
                                                4096, ~0ull - 4000, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5, 0,
                                                1ull << 63, 1ull << 63, NULL));
    /* iova + length wraps (reaching exactly 2^64 counts). */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5,
                                                ~0ull - 1, 0, 4, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn, 0, 5,
                                                0xffffffffffff0000ull, 0,
                                                0x10000, NULL));
    /* The descriptor has no page size, levels, pages or tables. */
    dm_mr_cmd(&c, self->pdn, 0, 5, 0, 0, 4096);
    c.mr.mem.flags = htole32(VRNIC_FIELD_PREP(VRNIC_MEM_PAGE_SHIFT_MASK, 12));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    dm_mr_cmd(&c, self->pdn, 0, 5, 0, 0, 4096);
    c.mr.mem.npages = htole32(1);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    for (unsigned i = 1; i < VRNIC_MEM_INLINE_PAGES; i++) {
        dm_mr_cmd(&c, self->pdn, 0, 5, 0, 0, 4096);
        c.mr.mem.pages[i] = htole64(FAKE_BUF);
        ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    }
    /* DMA and DEVICE_MEM together; an unknown flag next to DEVICE_MEM. */
    dm_mr_cmd(&c, self->pdn, 0, 5, 0, 0, 4096);
    c.mr.flags = htole32(VRNIC_MR_FLAG_DMA | VRNIC_MR_FLAG_DEVICE_MEM);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.mem.iova = 0;
    c.mr.mem.length = htole64(~0ull);
    c.mr.mem.pages[0] = 0;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    dm_mr_cmd(&c, self->pdn, 0, 5, 0, 0, 4096);
    c.mr.flags = htole32(VRNIC_MR_FLAG_DEVICE_MEM | 1u << 2);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    /* The usual checks still apply: PD, access rules, reserved bytes. */
    ASSERT_EQ(VRNIC_AQ_STS_BAD_INDEX, reg_dm_mr(f, 77, 0, 5, 0, 0, 4096,
                                                NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, self->pdn,
                                                VRNIC_ACCESS_REMOTE_WRITE, 5,
                                                0, 0, 4096, NULL));
    dm_mr_cmd(&c, self->pdn, 0, 5, 0, 0, 4096);
    c.mr.rsvd1[0] = 1;
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    /* Nothing refused was created. */
    ASSERT_EQ(4, f->core.obj.n_mrs);
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 5, 0, 0, 4096,
                                         NULL));
}

TEST(dm_mr_refused_without_device_memory)
{
    FakeBus *f = obj_bus(NULL);     /* fake_default_config: dm_size 0 */
    uint32_t pdn = alloc_pd(f, 0);

    ASSERT_EQ(0, f->core.cfg.dm_size);
    ASSERT_EQ(NULL, f->core.devmem);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, pdn, 0, 1, 0, 0, 4096,
                                                NULL));
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_dm_mr(f, pdn, 0, 1, 0, 0, 0, NULL));
    ASSERT_EQ(0, f->core.obj.n_mrs);
    /* No cap bit; the rest still there. */
    ASSERT_EQ(VRNIC_DEVICE_CAP_ATOMIC_HCA | VRNIC_DEVICE_CAP_ON_DEMAND |
              VRNIC_DEVICE_CAP_ATOMIC_WRITE | VRNIC_DEVICE_CAP_FLUSH |
              VRNIC_DEVICE_CAP_TIMESTAMP |
              VRNIC_DEVICE_CAP_RAW_PACKET | VRNIC_DEVICE_CAP_RSS |
              VRNIC_DEVICE_CAP_XRC,
              query_device_caps(f));
    fake_free(f);
}

TEST_F(dm, query_device_reports_cap)
{
    ASSERT_EQ(VRNIC_DEVICE_CAP_ATOMIC_HCA | VRNIC_DEVICE_CAP_DEVICE_MEM |
              VRNIC_DEVICE_CAP_ON_DEMAND | VRNIC_DEVICE_CAP_ATOMIC_WRITE |
              VRNIC_DEVICE_CAP_FLUSH | VRNIC_DEVICE_CAP_TIMESTAMP |
              VRNIC_DEVICE_CAP_RAW_PACKET | VRNIC_DEVICE_CAP_RSS |
              VRNIC_DEVICE_CAP_XRC,
              query_device_caps(self->f));
}

TEST_F(dm, zero_length_mr_passes_only_zero_length)
{
    FakeBus *f = self->f;
    uint8_t *dm = f->devmem;
    uint8_t b[4] = { 1, 2, 3, 4 };
    uint32_t key, k2;
    VrnicMr *mr;

    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn,
                                         VRNIC_ACCESS_LOCAL_WRITE |
                                         VRNIC_ACCESS_REMOTE_WRITE, 1, 0,
                                         100, 0, &key));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, 0, 0, 0));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key, self->pdn, VRNIC_ACCESS_REMOTE_WRITE,
                               0, 0));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, 0, 1));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, 1, 0));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, ~0ull, 1));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key, self->pdn, 0, 0, ~0ull));
    mr = vrnic_mr_lookup(&f->core, key);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0, b, 0, true));
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, 0, b, 1, true));
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, 0, b, 4, false));
    for (unsigned i = 0; i < DM_SIZE; i++) {
        ASSERT_EQ(0, dm[i]);
    }
    /* Empty at the very end of the device memory is still inside it. */
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 2, 0, DM_SIZE, 0,
                                         &k2));
    mr = vrnic_mr_lookup(&f->core, k2);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 0, b, 0, false));
    ASSERT_EQ(1, b[0]);
}

TEST_F(dm, rw_moves_exactly_the_right_bytes)
{
    FakeBus *f = self->f;
    uint8_t *dm = f->devmem;
    uint8_t in[64], out[64];
    uint64_t iova = 0x7000;     /* not the offset: the MR translates */
    uint32_t key;
    VrnicMr *mr;

    memset(dm, 0xaa, DM_SIZE);
    for (unsigned i = 0; i < sizeof(in); i++) {
        in[i] = i + 1;
    }
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn,
                                         VRNIC_ACCESS_LOCAL_WRITE, 9, iova,
                                         8192, 256, &key));
    ASSERT_EQ(VRNIC_MR_OK, vrnic_mr_check(&f->core, key, self->pdn,
                                          VRNIC_ACCESS_LOCAL_WRITE, iova + 10,
                                          sizeof(in), &mr));
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + 10, in, sizeof(in), true));
    /* devmem[8192 + 10 .. 8192 + 74) and not a byte more. */
    ASSERT_EQ(0, memcmp(dm + 8192 + 10, in, sizeof(in)));
    for (unsigned i = 0; i < DM_SIZE; i++) {
        if (i < 8192 + 10 || i >= 8192 + 10 + sizeof(in)) {
            ASSERT_EQ(0xaa, dm[i]);
        }
    }
    /* Guest memory is untouched: no DMA at iova or at the offset. */
    ASSERT_EQ(0, *(uint8_t *)fake_ptr(f, FAKE_MEM_BASE + 0x7000 + 10));
    /* A read sees what the CPU wrote through the BAR. */
    dm[8192] = 0x11;
    dm[8192 + 255] = 0x22;
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova, out, 1, false));
    ASSERT_EQ(0x11, out[0]);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + 255, out, 1, false));
    ASSERT_EQ(0x22, out[0]);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, iova + 10, out, sizeof(out),
                            false));
    ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
    /* Outside the MR: refused, and nothing written. */
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, iova + 250, in, 7, true));
    ASSERT_FALSE(vrnic_mr_rw(&f->core, mr, iova - 1, in, 2, true));
    ASSERT_EQ(0xaa, dm[8192 - 1]);
    ASSERT_EQ(0xaa, dm[8192 + 256]);
    ASSERT_EQ(0x22, dm[8192 + 255]);
    ASSERT_EQ(0xaa, dm[8192 + 250]);
}

TEST_F(dm, rereg_keeps_device_memory)
{
    FakeBus *f = self->f;
    uint32_t pd2 = alloc_pd(f, 0), key, key2;
    uint8_t v = 0x5c;
    VrnicMr *mr;
    AnyCmd c;
    uint64_t r;

    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 1, 0, 4096, 4096,
                                         &key));
    /* TRANS (onto guest memory, alone or with the rest) is refused. */
    cmd_init(&c, VRNIC_AQ_OP_REREG_MR);
    c.mr.handle = htole32(key);
    c.mr.key_byte = 2;
    c.mr.flags = htole32(VRNIC_MR_REREG_TRANS);
    mem_inline(&c.mr.mem, FAKE_BUF, 4096);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.flags = htole32(VRNIC_MR_REREG_TRANS | VRNIC_MR_REREG_PD |
                         VRNIC_MR_REREG_ACCESS);
    c.mr.pdn = htole32(pd2);
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    /* ... and changed nothing. */
    mr = vrnic_mr_lookup(&f->core, key);
    ASSERT_NE(NULL, mr);
    ASSERT_EQ(self->pdn, mr->pdn);
    ASSERT_EQ(0, mr->access);
    ASSERT_TRUE(mr->mem.devmem);
    ASSERT_EQ(4096, mr->mem.devmem_offset);
    ASSERT_EQ(1, f->core.obj.pds[self->pdn].refs);
    /* PD and ACCESS: accepted; the MR still covers the same bytes. */
    c.mr.flags = htole32(VRNIC_MR_REREG_PD | VRNIC_MR_REREG_ACCESS);
    memset(&c.mr.mem, 0, sizeof(c.mr.mem));
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, &r));
    key2 = r;
    ASSERT_EQ((key & ~0xffu) | 2, key2);
    ASSERT_EQ(VRNIC_MR_BAD_KEY, chk(f, key, self->pdn, 0, 0, 1));
    ASSERT_EQ(VRNIC_MR_BAD_PD, chk(f, key2, self->pdn, 0, 0, 1));
    ASSERT_EQ(VRNIC_MR_OK, chk(f, key2, pd2, VRNIC_ACCESS_LOCAL_WRITE, 0,
                               4096));
    ASSERT_EQ(VRNIC_MR_BAD_BOUNDS, chk(f, key2, pd2, 0, 0, 4097));
    ASSERT_EQ(0, f->core.obj.pds[self->pdn].refs);
    ASSERT_EQ(1, f->core.obj.pds[pd2].refs);
    mr = vrnic_mr_lookup(&f->core, key2);
    ASSERT_TRUE(mr->mem.devmem);
    ASSERT_TRUE(vrnic_mr_rw(&f->core, mr, 4095, &v, 1, true));
    ASSERT_EQ(0x5c, f->devmem[4096 + 4095]);
    /* Remote rights on rereg are checked as at registration. */
    c.mr.handle = htole32(key2);
    c.mr.key_byte = 3;
    c.mr.flags = htole32(VRNIC_MR_REREG_ACCESS);
    c.mr.access = htole32(VRNIC_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, run(f, &c, NULL));
    c.mr.access = htole32(VRNIC_ACCESS_LOCAL_WRITE |
                          VRNIC_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(VRNIC_AQ_STS_OK, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEREG_MR,
                                       (key2 & ~0xffu) | 3));
    ASSERT_EQ(0, f->core.obj.n_mrs);
}

TEST_F(dm, reset_zeroes_device_memory)
{
    FakeBus *f = self->f;
    uint32_t key;

    /* fake_new filled it with 0xa5: vrnic_core_set_devmem zeroed it. */
    for (unsigned i = 0; i < DM_SIZE; i++) {
        ASSERT_EQ(0, f->devmem[i]);
    }
    ASSERT_EQ(f->devmem, f->core.devmem);
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, self->pdn, 0, 1, 0, 0, DM_SIZE,
                                         &key));
    memset(f->devmem, 0x5c, DM_SIZE);
    fake_wr(f, VRNIC_REG_DEV_CTRL, VRNIC_DEV_CTRL_RESET);
    for (unsigned i = 0; i < DM_SIZE; i++) {
        ASSERT_EQ(0, f->devmem[i]);
    }
    ASSERT_EQ(NULL, vrnic_mr_lookup(&f->core, key));
    /* Still device memory after the reset, still DEVICE_MEM MRs. */
    ASSERT_EQ(f->devmem, f->core.devmem);
    fake_aq_enable(f, 6);
    ASSERT_EQ(1, alloc_pd(f, 0));
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_dm_mr(f, 1, 0, 1, 0, 0, DM_SIZE, NULL));
}

TEST(dm_size_config_validation)
{
    static const uint32_t good[] = { 0, 4096, 8192, 256u << 10, 64u << 20 };
    static const uint32_t bad[] = { 1, 2048, 4095, 4097, 3 * 4096,
                                    (256u << 10) + 4096, (64u << 20) + 4096,
                                    128u << 20, 1u << 31, 0xffffffffu };
    VrnicConfig c = fake_default_config();

    for (unsigned i = 0; i < ARRAY_SIZE(good); i++) {
        c.dm_size = good[i];
        ASSERT_EQ(NULL, vrnic_core_check_config(&c));
    }
    for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
        c.dm_size = bad[i];
        ASSERT_NE(NULL, vrnic_core_check_config(&c));
    }
}

TEST_HARNESS_MAIN
