/*
 * vrnic core: device memory end to end - two cores with
 * dm-size set, joined by the fake bus's wire, RC QPs between them: RDMA
 * WRITE into and RDMA READ from a device-memory MR (multi-packet, at an
 * offset in the device memory), device memory as the local side of WRITE,
 * READ, SEND and RECV, atomics on device memory, and an access past the
 * end of a device-memory MR (remote access error, nothing written).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

#define DM_SIZE (64u << 10)

/* A zero-based MR over device memory [offset, offset + len). */
static uint32_t mr_dm(Node *n, uint32_t access, uint64_t offset, uint64_t len)
{
    uint32_t key;

    if (reg_dm_mr(n->f, n->pdn, access, 0x6b, 0, offset, len, &key)) {
        abort();
    }
    return key;
}

/* A pattern with no zero byte, so that zeroed memory never matches it. */
static void pattern(uint8_t *p, uint64_t len, uint32_t seed)
{
    for (uint64_t i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8)) % 255 + 1;
    }
}

static bool all(const uint8_t *p, uint64_t len, uint8_t v)
{
    for (uint64_t i = 0; i < len; i++) {
        if (p[i] != v) {
            return false;
        }
    }
    return true;
}

FIXTURE(dm) {
    Node a, b;
    Qp qa, qb;
};

FIXTURE_SETUP(dm)
{
    VrnicConfig cfg = fake_default_config();

    cfg.dm_size = DM_SIZE;
    node_init_cfg(&self->a, 1, false, &cfg);
    node_init_cfg(&self->b, 2, false, &cfg);
    fake_link(self->a.f, self->b.f);
    qp_new(&self->qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&self->qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&self->qa, &self->qb, 3, 100, 200);     /* path MTU 1024 */
}

FIXTURE_TEARDOWN(dm)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/* 5000 bytes (5 packets) into B's device memory at 8192 + 100, and back. */
TEST_F(dm, rdma_write_into_and_read_from_device_memory)
{
    Node *A = &self->a, *B = &self->b;
    uint32_t len = 5000, off = 8192, at = 100;
    uint64_t src = buf_alloc(A, len), back = buf_alloc(A, len);
    Sg s = { src, len, mr_any(A, 0, src, len) };
    Sg r = { back, len, mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, back, len) };
    uint32_t rkey = mr_dm(B, ACC_ALL, off, 8192);
    uint8_t *dm = B->f->devmem;
    struct vrnic_cqe e;

    pattern(fake_ptr(A->f, src), len, 1);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, at, rkey, 0,
              NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(VRNIC_CQE_OP_RDMA_WRITE, e.opcode);
    ASSERT_FALSE(poll(B, false, &e));   /* one-sided */
    /* Exactly devmem[off + at, off + at + len): the MR is zero-based. */
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, src), dm + off + at, len));
    ASSERT_TRUE(all(dm, off + at, 0));
    ASSERT_TRUE(all(dm + off + at + len, DM_SIZE - (off + at + len), 0));
    /* B's CPU changes it through the BAR; A reads what is there now. */
    pattern(dm + off + at, len, 2);
    post_send(&self->qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, &r, 1, at, rkey, 0,
              NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(VRNIC_CQE_OP_RDMA_READ, e.opcode);
    ASSERT_EQ(len, le32toh(e.byte_len));
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, back), dm + off + at, len));
    ASSERT_EQ(0, B->f->core.stats.guest_errors);
}

/* Device memory as the local side: WRITE from it, READ and RECV into it. */
TEST_F(dm, device_memory_as_local_buffer)
{
    Node *A = &self->a, *B = &self->b;
    uint32_t len = 3000;
    uint32_t lkey = mr_dm(A, VRNIC_ACCESS_LOCAL_WRITE, 4096, 16384);
    uint64_t dst = buf_alloc(B, len);
    uint32_t rkey = mr_any(B, ACC_ALL, dst, len);
    uint32_t blkey = mr_dm(B, VRNIC_ACCESS_LOCAL_WRITE, 32768, 4096);
    uint8_t *adm = A->f->devmem, *bdm = B->f->devmem;
    Sg s = { 0, len, lkey };
    Sg r = { 8192, len, lkey };
    Sg rr = { 16, 4000, blkey };
    struct vrnic_cqe e;

    pattern(adm + 4096, len, 3);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0,
              NULL, 0);
    post_send(&self->qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, &r, 1, dst, rkey, 0,
              NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(VRNIC_CQE_OP_RDMA_READ, e.opcode);
    ASSERT_EQ(0, memcmp(adm + 4096, fake_ptr(B->f, dst), len));
    ASSERT_EQ(0, memcmp(adm + 4096, adm + 4096 + 8192, len));
    ASSERT_TRUE(all(adm + 4096 + len, 8192 - len, 0));
    ASSERT_TRUE(all(adm + 4096 + 8192 + len, 16384 - 8192 - len, 0));
    /* SEND from A's device memory into B's device memory. */
    post_recv(&self->qb, 7, &rr, 1);
    post_send(&self->qa, 3, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(B, false, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(7, le64toh(e.wr_id));
    ASSERT_EQ(len, le32toh(e.byte_len));
    ASSERT_EQ(0, memcmp(adm + 4096, bdm + 32768 + 16, len));
    ASSERT_TRUE(all(bdm, 32768 + 16, 0));
    ASSERT_TRUE(all(bdm + 32768 + 16 + len, DM_SIZE - 32768 - 16 - len, 0));
}

TEST_F(dm, atomics_on_device_memory)
{
    Node *A = &self->a, *B = &self->b;
    uint64_t res = buf_alloc(A, 16);
    Sg s = { res, 8, mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, res, 16) };
    uint32_t rkey = mr_dm(B, ACC_ALL, 1024, 64);
    uint64_t *t = (uint64_t *)(B->f->devmem + 1024 + 8);
    struct vrnic_cqe e;

    *t = htole64(1000);
    post_atomic(&self->qa, 1, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, &s, 8, rkey, 5,
                0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(VRNIC_CQE_OP_FETCH_ADD, e.opcode);
    ASSERT_EQ(1000, le64toh(*(uint64_t *)fake_ptr(A->f, res)));
    ASSERT_EQ(1005, le64toh(*t));
    post_atomic(&self->qa, 2, VRNIC_WQE_OP_ATOMIC_CMP_SWP, &s, 8, rkey, 1005,
                0x1234567890ull);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(VRNIC_CQE_OP_COMP_SWAP, e.opcode);
    ASSERT_EQ(1005, le64toh(*(uint64_t *)fake_ptr(A->f, res)));
    ASSERT_EQ(0x1234567890ull, le64toh(*t));
    ASSERT_TRUE(all(B->f->devmem, 1024 + 8, 0));
    ASSERT_TRUE(all(B->f->devmem + 1024 + 16, DM_SIZE - 1024 - 16, 0));
}

/* One byte past a device-memory MR: NAK, nothing written anywhere. */
TEST_F(dm, access_past_device_memory_mr_is_remote_error)
{
    Node *A = &self->a, *B = &self->b;
    uint64_t src = buf_alloc(A, 64);
    Sg s = { src, 64, mr_any(A, 0, src, 64) };
    uint32_t rkey = mr_dm(B, ACC_ALL, DM_SIZE - 4096, 4096);
    struct vrnic_cqe e;

    pattern(fake_ptr(A->f, src), 64, 4);
    post_send(&self->qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, 4096 - 63, rkey,
              0, NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
    ASSERT_TRUE(all(B->f->devmem, DM_SIZE, 0));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&self->qb));
}

TEST_HARNESS_MAIN
