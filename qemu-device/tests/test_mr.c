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
    ASSERT_EQ(VRNIC_AQ_STS_BAD_FIELD, reg_mr(f, self->pdn, 1u << 4, 0,
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
    c.mr.flags = htole32(2);
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
    ASSERT_EQ(VRNIC_AQ_STS_OK, destroy(f, VRNIC_AQ_OP_DEREG_MR, keys[3]));
    ASSERT_EQ(VRNIC_AQ_STS_OK, reg_mr(f, pds[0], 0, 9, buf, 64, &key));
    ASSERT_EQ(4, key >> 8);
    ASSERT_EQ(6, f->core.obj.n_mrs);
    fake_free(f);
}

TEST_HARNESS_MAIN
