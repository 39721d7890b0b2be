/*
 * vrnic core: the RoCEv2 transport between two device cores joined by the
 * fake bus's scripted wire (and loopback on one core): RC SEND/WRITE/READ/
 * atomics with payload checks at MTUs 256/1024/4096 and sizes 0, 1, MTU-1,
 * MTU, MTU+1, 64 KiB; PSN wrap-around; immediate data and SEND_INV; UC;
 * UD/GSI with the GRH area (IPv4 and IPv6) and Q_Key rules; remote and local
 * errors with flushes; zero-length WRITE/READ with a bad rkey; RNR NAK;
 * many outstanding 64 KiB WRITEs/SENDs (a deep SQ past the TX window);
 * PSN gap / out-of-window; routing and ICRC drops.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "xport_helpers.h"
#include "kselftest_harness.h"

FIXTURE(pair) {
    Node a, b;
};

FIXTURE_SETUP(pair)
{
    node_init(&self->a, 1, false);
    node_init(&self->b, 2, false);
    fake_link(self->a.f, self->b.f);
}

FIXTURE_TEARDOWN(pair)
{
    fake_free(self->a.f);
    fake_free(self->b.f);
}

/* One RC SEND of len bytes at the given MTU; payload and CQEs checked. */
static int rc_send_one(struct __test_metadata *_metadata, Node *A, Node *B,
                       Qp *qa, Qp *qb, uint32_t len, uint32_t seed)
{
    uint64_t src = buf_alloc(A, len), dst = buf_alloc(B, len + 64);
    Sg s = { src, len, mr_any(A, 0, src, len ? len : 1) };
    Sg r = { dst, len + 64, mr_any(B, VRNIC_ACCESS_LOCAL_WRITE, dst,
                                   len + 64) };
    struct vrnic_cqe e;

    fill(A, src, len, seed);
    memset(fake_ptr(B->f, dst), 0xee, len + 64);
    post_recv(qb, 0x100 + seed, &r, 1);
    post_send(qa, 0x200 + seed, VRNIC_WQE_OP_SEND, 0, &s, len ? 1 : 0, 0, 0,
              0, NULL, 0);
    fake_settle(A->f);
    ASSERT_TRUE(poll(A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(0x200 + seed, le64toh(e.wr_id));
    ASSERT_EQ(VRNIC_CQE_OP_SEND, e.opcode);
    ASSERT_TRUE(poll(B, false, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(0x100 + seed, le64toh(e.wr_id));
    ASSERT_EQ(VRNIC_CQE_OP_RECV, e.opcode);
    ASSERT_EQ(len, le32toh(e.byte_len));
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, src), fake_ptr(B->f, dst), len));
    ASSERT_EQ(0xee, *(uint8_t *)fake_ptr(B->f, dst + len));
    return 0;
}

TEST_F(pair, rc_send_sizes_mtus)
{
    static const uint8_t mtus[] = { 1, 3, 5 };

    for (unsigned m = 0; m < 3; m++) {
        uint32_t pmtu = 128u << mtus[m];
        uint32_t sizes[] = { 0, 1, pmtu - 1, pmtu, pmtu + 1, 65536 };
        Qp qa, qb;

        self->a.f->obj_next = FAKE_OBJ_MEM + 0x40000 * (m + 1);
        self->b.f->obj_next = FAKE_OBJ_MEM + 0x40000 * (m + 1);
        qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
        connect(&qa, &qb, mtus[m], 0x100, 0x200);
        for (unsigned i = 0; i < 6; i++) {
            ASSERT_EQ(0, rc_send_one(_metadata, &self->a, &self->b, &qa, &qb,
                                     sizes[i], i + m * 10));
        }
        ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qa));
    }
    ASSERT_EQ(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_ICRC_ERR]);
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_RX_RESP_DROP]);
}

TEST_F(pair, rc_psn_wraparound)
{
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0xfffff0, 0xffffff);
    /* 256 packets across 2^24, then more. */
    ASSERT_EQ(0, rc_send_one(_metadata, &self->a, &self->b, &qa, &qb, 65536,
                             1));
    ASSERT_EQ(0, rc_send_one(_metadata, &self->a, &self->b, &qa, &qb, 300, 2));
    ASSERT_EQ(0, rc_send_one(_metadata, &self->b, &self->a, &qb, &qa, 5000,
                             3));
    ASSERT_EQ(0xf0 + 256 + 2 - 0x100, self->a.f->core.obj.qps[qa.qpn].x->psn);
}

TEST_F(pair, rc_write_read_64k)
{
    static const uint8_t mtus[] = { 1, 3, 5 };

    for (unsigned m = 0; m < 3; m++) {
        uint32_t len = 65536 + m * 1001;
        Qp qa, qb;
        uint64_t src, dst, back;
        uint32_t rkey;
        Sg s, r;
        struct vrnic_cqe e;

        self->a.f->obj_next = FAKE_OBJ_MEM + 0x60000 * (m + 1);
        self->b.f->obj_next = FAKE_OBJ_MEM + 0x60000 * (m + 1);
        qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
        connect(&qa, &qb, mtus[m], 77, 99);
        src = buf_alloc(&self->a, len);
        back = buf_alloc(&self->a, len);
        dst = buf_alloc(&self->b, len);
        fill(&self->a, src, len, m + 5);
        s = (Sg){ src, len, mr_any(&self->a, 0, src, len) };
        r = (Sg){ back, len, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, back,
                                    len) };
        rkey = mr_any(&self->b, ACC_ALL, dst, len);
        post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0,
                  NULL, 0);
        post_send(&qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, &r, 1, dst, rkey, 0,
                  NULL, 0);
        fake_settle(self->a.f);
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(VRNIC_CQE_OP_RDMA_WRITE, e.opcode);
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(VRNIC_CQE_OP_RDMA_READ, e.opcode);
        ASSERT_EQ(len, le32toh(e.byte_len));
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                            fake_ptr(self->b.f, dst), len));
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                            fake_ptr(self->a.f, back), len));
        ASSERT_FALSE(poll(&self->b, false, &e));    /* one-sided */
    }
}

/* Counts the frames a bus sends and drops them all. */
static bool count_and_drop(FakeBus *from, uint8_t *frame, size_t *len,
                           void *arg)
{
    (*(unsigned *)arg)++;
    return false;
}

/*
 * The requester's packet window is bytes (VRNIC_TX_WINDOW_BYTES, 256 KiB),
 * at most VRNIC_TX_PKT_WINDOW (256) PSNs: with nothing answered, a 1 MiB
 * WRITE sends 256 packets at path MTU 256 and 1024, 128 at 2048 and 64 at
 * 4096, then waits; the timer's resend over a working wire completes it.
 */
TEST_F(pair, rc_packet_window_is_bytes)
{
    static const struct { uint8_t mtu; unsigned pkts; } c[] = {
        { 1, 256 }, { 3, 256 }, { 4, 128 }, { 5, 64 },
    };
    const uint32_t len = 1 << 20;
    uint64_t src = buf_alloc(&self->a, len), dst = buf_alloc(&self->b, len);
    Sg s = { src, len, mr_any(&self->a, 0, src, len) };
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, len);
    struct vrnic_cqe e;

    for (unsigned i = 0; i < ARRAY_SIZE(c); i++) {
        unsigned sent = 0;
        Qp qa, qb;

        qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
        connect(&qa, &qb, c[i].mtu, 0x100, 0x200);
        self->a.f->wire_hook = count_and_drop;
        self->a.f->hook_arg = &sent;
        post_send(&qa, i, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0,
                  NULL, 0);
        fake_settle(self->a.f);
        ASSERT_EQ(c[i].pkts, sent) {
            TH_LOG("path MTU %u", 128u << c[i].mtu);
        }
        ASSERT_FALSE(poll(&self->a, true, &e));
        self->a.f->wire_hook = NULL;
        for (unsigned t = 0; t < 64 && !poll(&self->a, true, &e); t++) {
            ASSERT_TRUE(fake_fire_timer(self->a.f));
            fake_settle(self->a.f);
        }
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(i, le64toh(e.wr_id));
    }
}

/* The AckReq bits of the request packets A sends, by PSN offset. */
typedef struct AckReqs {
    uint32_t first_psn, last_off;
    unsigned n, asked;
    bool bad;               /* AckReq where the rule has none */
    unsigned every;
} AckReqs;

static bool record_ackreq(FakeBus *from, uint8_t *frame, size_t *len,
                          void *arg)
{
    AckReqs *r = arg;
    VrnicPkt pkt;
    uint32_t off;

    if (vrnic_pkt_parse(frame, *len, &pkt) != VRNIC_PKT_OK) {
        return true;
    }
    off = vrnic_psn_diff(pkt.hdr.bth.psn, r->first_psn);
    r->n++;
    if (pkt.hdr.bth.ack_req) {
        r->asked++;
        r->bad |= (pkt.hdr.bth.psn & (r->every - 1)) != r->every - 1 &&
                  off != r->last_off;
    }
    return true;
}

/*
 * AckReq four times per packet window (vrnic_tx_ackreq_every): a WRITE
 * of one window asks on every 64th PSN at path MTU 1024, every 16th at
 * 4096 - four ACKs whatever the MTU - and on its last packet.
 */
TEST_F(pair, ackreq_four_times_per_window)
{
    static const struct { uint8_t mtu; uint32_t pmtu; } c[] = {
        { 3, 1024 }, { 5, 4096 },
    };
    const uint32_t len = VRNIC_TX_WINDOW_BYTES;
    uint64_t src = buf_alloc(&self->a, len), dst = buf_alloc(&self->b, len);
    Sg s = { src, len, mr_any(&self->a, 0, src, len) };
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, len);
    struct vrnic_cqe e;

    for (unsigned i = 0; i < ARRAY_SIZE(c); i++) {
        AckReqs r = { .first_psn = 0x100, .last_off = len / c[i].pmtu - 1,
                      .every = vrnic_tx_ackreq_every(c[i].pmtu) };
        Qp qa, qb;

        qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
        connect(&qa, &qb, c[i].mtu, 0x100, 0x200);
        self->a.f->wire_hook = record_ackreq;
        self->a.f->hook_arg = &r;
        post_send(&qa, i, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0,
                  NULL, 0);
        fake_settle(self->a.f);
        self->a.f->wire_hook = NULL;
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(len / c[i].pmtu, r.n);
        ASSERT_EQ(VRNIC_TX_ACKREQ_PER_WINDOW, r.asked) {
            TH_LOG("path MTU %u", c[i].pmtu);
        }
        ASSERT_FALSE(r.bad);
    }
}

/*
 * ib_write_bw / ib_send_bw: a deep SQ (128) of 64 KiB WRITEs, then SENDs,
 * at path MTU 1024 - four times the requester window (VRNIC_TX_WINDOW), 64
 * packets each, with no Ethernet RX buffers posted on either side. Every
 * WQE must go out (8192 packets per round) and complete in order. Before
 * the fix, a full window let the send cursor run over the slots still
 * holding in-flight WQEs: WQEs 32..127 were "sent" with no packets and
 * never completed (the guest benchmarks hung after ~53 messages).
 */
TEST_F(pair, rc_many_outstanding_64k)
{
    const uint32_t len = 65536, n = 128;
    Qp qa, qb;
    uint64_t src, dst;
    uint32_t rkey, lkey;
    struct vrnic_cqe e;
    Sg s, r;

    qp_new_deep(&qa, &self->a);
    qp_new_deep(&qb, &self->b);
    connect(&qa, &qb, 3, 0x10, 0x20);
    src = buf_alloc(&self->a, len);
    dst = buf_alloc(&self->b, len);
    fill(&self->a, src, len, 3);
    s = (Sg){ src, len, mr_any(&self->a, 0, src, len) };
    rkey = mr_any(&self->b, ACC_ALL, dst, len);
    lkey = rkey;
    r = (Sg){ dst, len, lkey };
    /* No Ethernet RX buffers: RoCE frames must not wait for them. */
    ASSERT_EQ(self->b.f->core.eth_rx.pi, self->b.f->core.eth_rx.ci);
    ASSERT_EQ(self->a.f->core.eth_rx.pi, self->a.f->core.eth_rx.ci);

    for (unsigned round = 0; round < 2; round++) {
        bool send = round == 1;

        memset(fake_ptr(self->b.f, dst), 0, len);
        for (uint32_t i = 0; i < n; i++) {
            if (send) {
                post_recv(&qb, 0x1000 + i, &r, 1);
            }
            post_send(&qa, i, send ? VRNIC_WQE_OP_SEND :
                                     VRNIC_WQE_OP_RDMA_WRITE,
                      0, &s, 1, dst, rkey, 0, NULL, 0);
        }
        fake_settle(self->a.f);
        for (uint32_t i = 0; i < n; i++) {
            ASSERT_TRUE(poll(&self->a, true, &e)) {
                TH_LOG("round %u: %u of %u sends completed", round, i, n);
            }
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            ASSERT_EQ(i, le64toh(e.wr_id));
            if (send) {
                ASSERT_TRUE(poll(&self->b, false, &e));
                ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
                ASSERT_EQ(0x1000 + i, le64toh(e.wr_id));
                ASSERT_EQ(len, le32toh(e.byte_len));
            }
        }
        ASSERT_FALSE(poll(&self->a, true, &e));
        ASSERT_EQ((round + 1) * n * (len / 1024),
                  self->a.f->core.stats.port[VRNIC_PORT_STAT_TX_PKTS]);
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                            fake_ptr(self->b.f, dst), len));
    }
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qa));
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qb));
    ASSERT_EQ(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ]);
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_RX_RESP_DROP]);
}

TEST_F(pair, rc_read_sizes_multi_sge)
{
    Qp qa, qb;
    uint32_t pmtu = 1024;
    uint32_t sizes[] = { 1, pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5 };
    uint64_t dst = buf_alloc(&self->b, 8192), back = buf_alloc(&self->a, 8192);
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, 8192);
    uint32_t lkey = mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, back, 8192);
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 5, 6);
    fill(&self->b, dst, 8192, 9);
    for (unsigned i = 0; i < 5; i++) {
        uint32_t half = sizes[i] / 2;
        Sg r[2] = { { back, half, lkey }, { back + 4096, sizes[i] - half,
                                            lkey } };

        memset(fake_ptr(self->a.f, back), 0, 8192);
        post_send(&qa, i, VRNIC_WQE_OP_RDMA_READ, 0, r, 2, dst + 3, rkey, 0,
                  NULL, 0);
        fake_settle(self->a.f);
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, back),
                            fake_ptr(self->b.f, dst + 3), half));
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, back + 4096),
                            fake_ptr(self->b.f, dst + 3 + half),
                            sizes[i] - half));
    }
}

TEST_F(pair, rc_atomics_two_qps_same_address)
{
    Qp a1, b1, a2, b2;
    uint64_t target = buf_alloc(&self->b, 8);
    uint64_t res = buf_alloc(&self->a, 64);
    uint32_t rkey = mr_any(&self->b, ACC_ALL, target, 8);
    uint32_t lkey = mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, res, 64);
    uint64_t *t = fake_ptr(self->b.f, target);
    uint64_t seen = 0;
    struct vrnic_cqe e;

    qp_new(&a1, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&b1, &self->b, VRNIC_QP_TYPE_RC, 0);
    qp_new(&a2, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&b2, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&a1, &b1, 3, 10, 20);
    connect(&a2, &b2, 3, 30, 40);
    *t = htole64(1000);
    /* Interleaved FETCH_ADDs from both QPs: every original distinct. */
    for (unsigned i = 0; i < 8; i++) {
        Sg s1 = { res + 8 * (i % 4), 8, lkey };
        Sg s2 = { res + 32 + 8 * (i % 4), 8, lkey };

        post_atomic(&a1, i, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, &s1, target, rkey,
                    1, 0);
        post_atomic(&a2, 100 + i, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, &s2, target,
                    rkey, 1, 0);
        fake_settle(self->a.f);
        for (int k = 0; k < 2; k++) {
            uint64_t v;

            ASSERT_TRUE(poll(&self->a, true, &e));
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            ASSERT_EQ(VRNIC_CQE_OP_FETCH_ADD, e.opcode);
            v = le64toh(*(uint64_t *)fake_ptr(self->a.f,
                        le64toh(e.wr_id) >= 100 ? s2.addr : s1.addr));
            ASSERT_TRUE(v >= 1000 && v < 1016);
            ASSERT_EQ(0, seen & (1ull << (v - 1000)));
            seen |= 1ull << (v - 1000);
        }
    }
    ASSERT_EQ(0xffff, seen);
    ASSERT_EQ(1016, le64toh(*t));
    /* CMP_SWP: a miss leaves it, a hit swaps; the original comes back. */
    if (true) {
        Sg s = { res, 8, lkey };

        post_atomic(&a1, 50, VRNIC_WQE_OP_ATOMIC_CMP_SWP, &s, target, rkey,
                    5, 77);
        post_atomic(&a2, 51, VRNIC_WQE_OP_ATOMIC_CMP_SWP, &s, target, rkey,
                    1016, 0xabcdef);
        fake_settle(self->a.f);
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(VRNIC_CQE_OP_COMP_SWAP, e.opcode);
        ASSERT_EQ(1016, le64toh(*(uint64_t *)fake_ptr(self->a.f, res)));
        ASSERT_EQ(0xabcdef, le64toh(*t));
    }
    /* Misaligned: NAK INVALID_REQUEST. */
    if (true) {
        Sg s = { res, 8, lkey };

        post_atomic(&a1, 60, VRNIC_WQE_OP_ATOMIC_FETCH_ADD, &s, target + 4,
                    rkey, 1, 0);
        fake_settle(self->a.f);
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, e.status);
        ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&a1));
        ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&b1));
    }
}

TEST_F(pair, rc_imm_and_inv)
{
    Qp qa, qb;
    uint64_t src = buf_alloc(&self->a, 3000), dst = buf_alloc(&self->b, 4096);
    Sg s = { src, 3000, mr_any(&self->a, 0, src, 3000) };
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, 4096);
    Sg r = { dst, 4096, rkey };
    struct vrnic_cqe e;
    uint32_t imm = htobe32(0x01020304);

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 2, 1, 2);
    fill(&self->a, src, 3000, 3);
    post_recv(&qb, 1, &r, 1);
    post_recv(&qb, 2, &r, 1);
    post_recv(&qb, 3, &r, 1);
    post_send(&qa, 11, VRNIC_WQE_OP_SEND_IMM, VRNIC_WQE_FLAG_SOLICITED, &s, 1,
              0, 0, imm, NULL, 0);
    post_send(&qa, 12, VRNIC_WQE_OP_RDMA_WRITE_IMM, 0, &s, 1, dst, rkey,
              htobe32(0xa0b0c0d0), NULL, 0);
    post_send(&qa, 13, VRNIC_WQE_OP_SEND_INV, 0, &s, 1, 0, 0,
              htole32(0x1234), NULL, 0);
    fake_settle(self->a.f);
    for (int i = 0; i < 2; i++) {
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(11 + i, le64toh(e.wr_id));
    }
    /* Nothing on this device can be invalidated: an invalid request. */
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, e.status);
    ASSERT_EQ(13, le64toh(e.wr_id));
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(VRNIC_CQE_OP_RECV, e.opcode);
    ASSERT_EQ(VRNIC_CQE_FLAG_IMM | VRNIC_CQE_FLAG_SOLICITED, e.flags);
    ASSERT_EQ(0, memcmp(&e.imm_data, "\x01\x02\x03\x04", 4));
    ASSERT_EQ(3000, le32toh(e.byte_len));
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(VRNIC_CQE_OP_RECV_RDMA_WITH_IMM, e.opcode);
    ASSERT_EQ(VRNIC_CQE_FLAG_IMM, e.flags);
    ASSERT_EQ(0, memcmp(&e.imm_data, "\xa0\xb0\xc0\xd0", 4));
    ASSERT_EQ(3000, le32toh(e.byte_len));
    ASSERT_EQ(2, le64toh(e.wr_id));
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, e.status);
    ASSERT_EQ(3, le64toh(e.wr_id));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qa));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qb));
    ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src), fake_ptr(self->b.f, dst),
                        3000));
}

TEST_F(pair, uc_send_write_imm)
{
    Qp qa, qb;
    uint64_t src = buf_alloc(&self->a, 5000), dst = buf_alloc(&self->b, 8192);
    Sg s = { src, 5000, mr_any(&self->a, 0, src, 5000) };
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, 8192);
    Sg r = { dst, 8192, rkey };
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_UC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_UC, 0);
    connect(&qa, &qb, 3, 0xfffffe, 3);
    fill(&self->a, src, 5000, 4);
    post_recv(&qb, 1, &r, 1);
    post_recv(&qb, 2, &r, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    post_send(&qa, 2, VRNIC_WQE_OP_RDMA_WRITE_IMM, 0, &s, 1, dst + 100, rkey,
              htobe32(7), NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(5000, le32toh(e.byte_len));
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(VRNIC_CQE_OP_RECV_RDMA_WITH_IMM, e.opcode);
    ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src),
                        fake_ptr(self->b.f, dst + 100), 5000));
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_RX_PKTS]);    /* no ACKs on UC */
}

/* Drop the second packet of every UC message: the rest is dropped too. */
static bool drop_second(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    unsigned *n = arg;

    return ++*n != 2;
}

TEST_F(pair, uc_gap_drops_message)
{
    Qp qa, qb;
    unsigned n = 0;
    uint64_t src = buf_alloc(&self->a, 4096), dst = buf_alloc(&self->b, 4096);
    Sg s = { src, 4096, mr_any(&self->a, 0, src, 4096) };
    Sg r = { dst, 4096, mr_any(&self->b, ACC_ALL, dst, 4096) };
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_UC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_UC, 0);
    connect(&qa, &qb, 1, 0, 0);
    post_recv(&qb, 1, &r, 1);
    self->a.f->wire_hook = drop_second;
    self->a.f->hook_arg = &n;
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));      /* UC: done once sent */
    ASSERT_FALSE(poll(&self->b, false, &e));
    ASSERT_EQ(14, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ]);
    /* The next message uses the same receive WQE. */
    post_send(&qa, 2, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(1, le64toh(e.wr_id));
    ASSERT_EQ(4096, le32toh(e.byte_len));
}

/* A's send and B's receive completion, both successful; e: B's. */
static int both_succeed(struct __test_metadata *_metadata, Node *A, Node *B,
                        struct vrnic_cqe *e)
{
    ASSERT_TRUE(poll(A, true, e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e->status);
    ASSERT_TRUE(poll(B, false, e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e->status);
    return 0;
}

static int ud_check(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
                    uint8_t type)
{
    Qp qa, qb;
    uint64_t src = buf_alloc(&self->a, 300), dst = buf_alloc(&self->b, 512);
    Sg s = { src, 300, mr_any(&self->a, 0, src, 300) };
    Sg r[2] = { { dst, 20, 0 }, { dst + 20, 400, 0 } };
    uint32_t qkey = type == VRNIC_QP_TYPE_GSI ? 0x80010000 : 0x11;
    struct vrnic_cqe e;
    uint8_t *grh;

    r[0].key = r[1].key = mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 512);
    qp_new(&qa, &self->a, type, 0);
    qp_new(&qb, &self->b, type, 0);
    if (type == VRNIC_QP_TYPE_UD) {
        struct vrnic_qp_attr at = good_attr();

        qp_up(&qa, NULL, 0, 1, 0);
        qp_up(&qb, NULL, 0, 1, 0);
        at.qkey = htole32(qkey);
        ASSERT_EQ(0, modify_qp(self->a.f, qa.qpn, VRNIC_QP_ATTR_QKEY,
                               0, &at));
        ASSERT_EQ(0, modify_qp(self->b.f, qb.qpn, VRNIC_QP_ATTR_QKEY,
                               0, &at));
    } else {
        qp_up(&qa, NULL, 0, 1, 0);
        qp_up(&qb, NULL, 0, 1, 0);
        ASSERT_EQ(1, qb.qpn);
    }
    fill(&self->a, src, 300, 8);
    post_recv(&qb, 9, r, 2);
    /* MSB set: the QP's own Q_Key. */
    post_send(&qa, 1, VRNIC_WQE_OP_SEND_IMM, 0, &s, 1, 0, 0, htobe32(5), &qb,
              0x80000000);
    fake_settle(self->a.f);
    ASSERT_EQ(0, both_succeed(_metadata, &self->a, &self->b, &e));
    ASSERT_EQ(340, le32toh(e.byte_len));
    ASSERT_EQ(qa.qpn, le32toh(e.src_qp));
    ASSERT_EQ(VRNIC_CQE_FLAG_GRH | VRNIC_CQE_FLAG_IMM, e.flags);
    ASSERT_EQ(VRNIC_NET_TYPE_IPV4, e.network_hdr_type);
    grh = fake_ptr(self->b.f, dst);
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(0, grh[i]);
    }
    ASSERT_EQ(0x45, grh[20]);
    ASSERT_EQ(0, memcmp(grh + 20 + 12, self->a.gid + 12, 4));
    ASSERT_EQ(0, memcmp(grh + 20 + 16, self->b.gid + 12, 4));
    ASSERT_EQ(0, memcmp(grh + 40, fake_ptr(self->a.f, src), 300));
    /* Q_Key mismatch: dropped, counted, no CQE anywhere. */
    post_recv(&qb, 10, r, 2);
    post_send(&qa, 2, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, &qb, 0x1234);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_FALSE(poll(&self->b, false, &e));
    ASSERT_EQ(1, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_QKEY_MISMATCH]);
    /* Larger than one path MTU: LOC_LEN_ERR at the requester. */
    return 0;
}

TEST_F(pair, ud_grh_qkey)
{
    ASSERT_EQ(0, ud_check(_metadata, self, VRNIC_QP_TYPE_UD));
}

TEST_F(pair, gsi_qp1)
{
    ASSERT_EQ(0, ud_check(_metadata, self, VRNIC_QP_TYPE_GSI));
}

TEST(ud_ipv6_grh)
{
    Node A, B;
    Qp qa, qb;
    uint64_t src, dst;
    Sg s, r;
    struct vrnic_cqe e;
    uint8_t *grh;

    node_init(&A, 1, true);
    node_init(&B, 2, true);
    fake_link(A.f, B.f);
    src = buf_alloc(&A, 100);
    dst = buf_alloc(&B, 256);
    s = (Sg){ src, 100, mr_any(&A, 0, src, 100) };
    r = (Sg){ dst, 256, mr_any(&B, VRNIC_ACCESS_LOCAL_WRITE, dst, 256) };
    qp_new(&qa, &A, VRNIC_QP_TYPE_UD, 0);
    qp_new(&qb, &B, VRNIC_QP_TYPE_UD, 0);
    qp_up(&qa, NULL, 0, 1, 0);
    qp_up(&qb, NULL, 0, 1, 0);
    fill(&A, src, 100, 1);
    post_recv(&qb, 1, &r, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, &qb, 0x80010000);
    fake_settle(A.f);
    ASSERT_TRUE(poll(&B, false, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(140, le32toh(e.byte_len));
    ASSERT_EQ(VRNIC_NET_TYPE_IPV6, e.network_hdr_type);
    grh = fake_ptr(B.f, dst);
    ASSERT_EQ(6, grh[0] >> 4);
    ASSERT_EQ(0, memcmp(grh + 8, A.gid, 16));
    ASSERT_EQ(0, memcmp(grh + 24, B.gid, 16));
    ASSERT_EQ(0, memcmp(grh + 40, fake_ptr(A.f, src), 100));
    fake_free(A.f);
    fake_free(B.f);
}

TEST_F(pair, remote_access_errors_and_flush)
{
    enum { BAD_KEY, NO_WRITE, OOB, N };

    for (int c = 0; c < N; c++) {
        Qp qa, qb;
        uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64);
        Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
        uint32_t rkey = mr_any(&self->b, c == NO_WRITE ?
                               VRNIC_ACCESS_LOCAL_WRITE |
                               VRNIC_ACCESS_REMOTE_READ : ACC_ALL, dst, 64);
        struct vrnic_cqe e;

        qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
        connect(&qa, &qb, 3, 1, 1);
        post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst,
                  rkey, 0, NULL, 0);
        post_send(&qa, 2, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1,
                  c == OOB ? dst + 1 : dst, c == BAD_KEY ? rkey ^ 0x100 : rkey,
                  0, NULL, 0);
        post_send(&qa, 3, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
        fake_settle(self->a.f);
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(c == NO_WRITE ? VRNIC_WC_REM_ACCESS_ERR : VRNIC_WC_SUCCESS,
                  e.status);
        if (c != NO_WRITE) {
            ASSERT_TRUE(poll(&self->a, true, &e));
            ASSERT_EQ(2, le64toh(e.wr_id));
            ASSERT_EQ(VRNIC_WC_REM_ACCESS_ERR, e.status);
        }
        if (c == NO_WRITE) {
            ASSERT_TRUE(poll(&self->a, true, &e));  /* WQE 2, flushed */
            ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e.status);
        }
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e.status);
        ASSERT_EQ(3, le64toh(e.wr_id));
        ASSERT_FALSE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qa));
        ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qb));
    }
    ASSERT_EQ(3, self->a.f->core.stats.port[VRNIC_PORT_STAT_NAKS_RCVD]);
}

TEST_F(pair, zero_length_write_read_skip_rkey)
{
    Qp qa, qb;
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, NULL, 0, 0xdead0000,
              0xbad, 0, NULL, 0);
    post_send(&qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, NULL, 0, 0xdead0000,
              0xbad, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(VRNIC_CQE_OP_RDMA_READ, e.opcode);
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qb));
}

TEST_F(pair, local_errors)
{
    Qp qa, qb;
    uint64_t src = buf_alloc(&self->a, 64);
    Sg bad = { src, 64, 0x12345 };
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &bad, 1, 0, 0, 0, NULL, 0);
    post_send(&qa, 2, VRNIC_WQE_OP_SEND, 0, &bad, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_LOC_PROT_ERR, e.status);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_WR_FLUSH_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qa));
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_TX_PKTS]);
}

TEST_F(pair, recv_too_small_loc_len)
{
    Qp qa, qb;
    uint64_t src = buf_alloc(&self->a, 600), dst = buf_alloc(&self->b, 600);
    Sg s = { src, 600, mr_any(&self->a, 0, src, 600) };
    Sg r = { dst, 100, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 600) };
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    post_recv(&qb, 1, &r, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(VRNIC_WC_LOC_LEN_ERR, e.status);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_REM_INV_REQ_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qa));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qb));
}

TEST_F(pair, rnr_nak_without_receive_wqe)
{
    Qp qa, qb;
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    struct vrnic_cqe e;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_EQ(1, self->b.f->core.stats.port[VRNIC_PORT_STAT_RNR_NAKS_SENT]);
    ASSERT_EQ(1, self->a.f->core.stats.port[VRNIC_PORT_STAT_RNR_NAKS_RCVD]);
    ASSERT_FALSE(poll(&self->a, true, &e));     /* waits for the retry */
    ASSERT_EQ(1, self->b.f->core.obj.qps[qb.qpn].x->epsn);
}

/* Build an RC SEND ONLY from A's QP to B's with a chosen PSN and AckReq. */
static size_t craft_req(Node *A, Node *B, uint32_t dqpn, uint32_t psn,
                        bool ack_req, uint8_t *frame, size_t size)
{
    VrnicPktAddr a = { .hop_limit = 64, .udp_sport = 0xc000 };
    VrnicPktHdrs h;

    memset(&h, 0, sizeof(h));
    memcpy(a.smac, A->mac, 6);
    memcpy(a.dmac, B->mac, 6);
    memcpy(a.sgid, A->gid, 16);
    memcpy(a.dgid, B->gid, 16);
    h.bth.opcode = VRNIC_OP(RC, SEND_ONLY);
    h.bth.pkey = 0xffff;
    h.bth.dqpn = dqpn;
    h.bth.psn = psn;
    h.bth.ack_req = ack_req;
    return vrnic_pkt_build(frame, size, &a, &h, "abcd", 4);
}

static size_t craft(Node *A, Node *B, uint32_t dqpn, uint32_t psn,
                    uint8_t *frame, size_t size)
{
    return craft_req(A, B, dqpn, psn, true, frame, size);
}

/*
 * A resend pass of duplicates: the first is answered at once (how far
 * the responder got), later ones only when they ask (AckReq); a packet in
 * order starts a new pass.
 */
TEST_F(pair, duplicates_answered_once_per_pass_then_on_ack_req)
{
    Qp qa, qb;
    uint8_t frame[256];
    size_t len;
    VrnicCounters *sb = &self->b.f->core.stats;
    uint64_t dst = buf_alloc(&self->b, 64);
    Sg r = { dst, 64, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    unsigned out;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1000, 1000);
    post_recv(&qb, 1, &r, 1);   /* for the packet in order */
    out = self->b.f->nframes;
    for (uint32_t psn = 990; psn < 1000; psn++) {
        len = craft_req(&self->a, &self->b, qb.qpn, psn, psn == 995, frame,
                        sizeof(frame));
        fake_wire_put(self->b.f, frame, len);
        fake_settle(self->b.f);
    }
    ASSERT_EQ(10, sb->port[VRNIC_PORT_STAT_RX_DUPLICATE]);
    ASSERT_EQ(out + 2, self->b.f->nframes);     /* PSN 990 and 995 */
    /* In order (no AckReq, no answer), then a new pass. */
    len = craft_req(&self->a, &self->b, qb.qpn, 1000, false, frame,
                    sizeof(frame));
    fake_wire_put(self->b.f, frame, len);
    fake_settle(self->b.f);
    ASSERT_EQ(out + 2, self->b.f->nframes);
    for (uint32_t psn = 996; psn < 999; psn++) {
        len = craft_req(&self->a, &self->b, qb.qpn, psn, false, frame,
                        sizeof(frame));
        fake_wire_put(self->b.f, frame, len);
        fake_settle(self->b.f);
    }
    ASSERT_EQ(out + 3, self->b.f->nframes);
    ASSERT_EQ(1001, self->b.f->core.obj.qps[qb.qpn].x->epsn);
}

TEST_F(pair, psn_gap_nak_once_and_out_of_window)
{
    Qp qa, qb;
    uint8_t frame[256];
    size_t len;
    VrnicCounters *sb = &self->b.f->core.stats;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1000, 1000);
    /* A gap: one NAK sequence error, further gap packets only dropped. */
    len = craft(&self->a, &self->b, qb.qpn, 1005, frame, sizeof(frame));
    fake_wire_put(self->b.f, frame, len);
    fake_wire_put(self->b.f, frame, len);
    fake_settle(self->b.f);
    ASSERT_EQ(2, sb->port[VRNIC_PORT_STAT_RX_OUT_OF_SEQ]);
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(1, self->a.f->core.stats.port[VRNIC_PORT_STAT_SEQ_NAKS_RCVD]);
    /* Far away (beyond 2^22 either side): dropped, counted, no answer. */
    len = craft(&self->a, &self->b, qb.qpn, (1000 + (1u << 23)) & 0xffffff,
                frame, sizeof(frame));
    fake_wire_put(self->b.f, frame, len);
    fake_settle(self->b.f);
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_RX_PSN_WINDOW]);
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_NAKS_SENT]);
    /* A duplicate is re-ACKed, not executed. */
    len = craft(&self->a, &self->b, qb.qpn, 999, frame, sizeof(frame));
    fake_wire_put(self->b.f, frame, len);
    fake_settle(self->b.f);
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_RX_DUPLICATE]);
    ASSERT_EQ(1000, self->b.f->core.obj.qps[qb.qpn].x->epsn);
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qb));
    /* A bad ICRC is dropped and counted. */
    len = craft(&self->a, &self->b, qb.qpn, 1000, frame, sizeof(frame));
    frame[len - 1] ^= 1;
    fake_wire_put(self->b.f, frame, len);
    fake_settle(self->b.f);
    ASSERT_EQ(1, sb->port[VRNIC_PORT_STAT_RX_ICRC_ERR]);
    ASSERT_EQ(1000, self->b.f->core.obj.qps[qb.qpn].x->epsn);
}

/* Hold back frame `late` of A's output until frame `until` passes. */
typedef struct Late {
    unsigned n, late, until;
    size_t len;
    uint8_t frame[8192];
} Late;

static bool deliver_late(FakeBus *from, uint8_t *frame, size_t *len,
                         void *arg)
{
    Late *l = arg;

    l->n++;
    if (l->n == l->late && *len <= sizeof(l->frame)) {
        memcpy(l->frame, frame, *len);
        l->len = *len;
        return false;
    }
    if (l->n == l->until && l->len) {
        fake_wire_put(from->peer, l->frame, l->len);
        l->len = 0;
    }
    return true;
}

/* WRITE of npkts packets (PMTU 256) with A's output filtered by hook. */
/* One RC WRITE of npkts packets from qa to qb, A's frames through hook. */
static int write_once(struct __test_metadata *_metadata, Node *A, Node *B,
                      Qp *qa, Qp *qb, uint32_t npkts, void *hook_arg,
                      bool (*hook)(FakeBus *, uint8_t *, size_t *, void *))
{
    uint32_t len = npkts * 256;
    uint64_t src = buf_alloc(A, len), dst = buf_alloc(B, len);
    Sg s = { src, len, mr_any(A, 0, src, len) };
    uint32_t rkey = mr_any(B, ACC_ALL, dst, len);
    struct vrnic_cqe e;

    fill(A, src, len, npkts);
    A->f->wire_hook = hook;
    A->f->hook_arg = hook_arg;
    post_send(qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0, NULL,
              0);
    for (unsigned i = 0; !poll(A, true, &e); i++) {
        ASSERT_GT(100, i);      /* bounded: a hang is a failure */
        fake_settle(A->f);
        if (A->f->timer_due != INT64_MAX) {
            fake_fire_timer(A->f);
        }
    }
    A->f->wire_hook = NULL;
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, src), fake_ptr(B->f, dst), len));
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(qb));
    return 0;
}

/* write_once on a new pair of connected RC QPs, path MTU 256. */
static int write_through(struct __test_metadata *_metadata, Node *A, Node *B,
                         uint32_t npkts, void *hook_arg,
                         bool (*hook)(FakeBus *, uint8_t *, size_t *, void *))
{
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x40, 0x40);
    return write_once(_metadata, A, B, &qa, &qb, npkts, hook_arg, hook);
}

/*
 * A packet that is only late (here one place) is held with what comes
 * after it: no NAK, nothing sent again.
 */
TEST_F(pair, late_packet_costs_no_resend)
{
    Late l = { .late = 2, .until = 4 };
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;

    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, 8, &l,
                               deliver_late));
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_RX_OOO_HELD]);
    ASSERT_EQ(0, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_RETRANSMITS]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
}

/*
 * A lost packet: what follows is held, the packet more than
 * VRNIC_OOO_NAK_AFTER past it brings the NAK, and only the lost packet is
 * sent again - no timer.
 */
TEST_F(pair, lost_packet_is_resent_alone)
{
    unsigned n = 0;
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;

    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, 14, &n,
                               drop_second));
    ASSERT_EQ(12, cb[VRNIC_PORT_STAT_RX_OOO_HELD]);
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_SEQ_NAKS_RCVD]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_RETRANSMITS]);
}

/*
 * A responder that holds nothing past a gap (rdma_rxe; here vrnic with its
 * device-wide budget used up) answers the resent hole with an ACK of just
 * that packet: the requester then goes back to the packet after it.
 */
TEST_F(pair, responder_holding_nothing_gets_the_rest_again)
{
    unsigned n = 0;
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;

    self->b.f->core.ooo_held = VRNIC_OOO_DEVICE;
    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, 14, &n,
                               drop_second));
    self->b.f->core.ooo_held = 0;
    ASSERT_EQ(0, cb[VRNIC_PORT_STAT_RX_OOO_HELD]);
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(13, ca[VRNIC_PORT_STAT_RETRANSMITS]);
}

/*
 * A's output by frame number (from 1): frame `late` arrives after frame
 * `late + gap`, and the frames after that up to `last` wait for A's next
 * frame (its resend): they are still on the wire when the answer to the
 * late frame comes back.
 */
typedef struct Stall {
    unsigned n, late, gap, last, nheld;
    size_t late_len, len[16];
    uint8_t late_fr[512], fr[16][512];
} Stall;

static bool stalled(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    Stall *st = arg;

    st->n++;
    if (*len > sizeof(st->late_fr)) {
        return true;
    }
    if (st->n == st->late) {
        memcpy(st->late_fr, frame, *len);
        st->late_len = *len;
        return false;
    }
    if (st->n == st->late + st->gap) {
        fake_wire_put(from->peer, frame, *len);
        fake_wire_put(from->peer, st->late_fr, st->late_len);
        return false;
    }
    if (st->n > st->late + st->gap && st->n <= st->last && st->nheld < 16) {
        memcpy(st->fr[st->nheld], frame, *len);
        st->len[st->nheld++] = *len;
        return false;
    }
    for (unsigned i = 0; st->n > st->last && i < st->nheld; i++) {
        fake_wire_put(from->peer, st->fr[i], st->len[i]);
    }
    if (st->n > st->last) {
        st->nheld = 0;
    }
    return true;
}

/*
 * The late packet brings a NAK, then fills the gap itself: the ACK of the
 * packets held after it comes right behind the NAK, while the rest of the
 * message is still on its way. Only the packet after that ACK is sent
 * again (its duplicate's answer covers the rest), not everything after
 * it (12 packets).
 */
TEST_F(pair, answer_before_the_resend_brings_one_packet_again)
{
    Stall st = { .late = 2, .gap = 10, .last = 24 };
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;

    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, 24, &st,
                               stalled));
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_SEQ_NAKS_RCVD]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_RETRANSMITS]);
}

/*
 * A's output by frame number (from 1): frames `lost`, `lost2` and `lost3`
 * vanish, frame `late` arrives after frame `late + 1`, and frame `park`
 * waits until the test puts it on the wire.
 */
typedef struct Script {
    unsigned n, lost, lost2, lost3, late, park;
    size_t len, parked_len;
    uint8_t frame[8192], parked[512];
} Script;

static bool scripted(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    Script *sc = arg;

    sc->n++;
    if (sc->n == sc->lost || sc->n == sc->lost2 || sc->n == sc->lost3) {
        return false;
    }
    if (sc->n == sc->park && *len <= sizeof(sc->parked)) {
        memcpy(sc->parked, frame, *len);
        sc->parked_len = *len;
        return false;
    }
    if (sc->n == sc->late && *len <= sizeof(sc->frame)) {
        memcpy(sc->frame, frame, *len);
        sc->len = *len;
        return false;
    }
    if (sc->n == sc->late + 1 && sc->len) {
        fake_wire_put(from->peer, frame, *len);
        fake_wire_put(from->peer, sc->frame, sc->len);
        sc->len = 0;
        return false;
    }
    return true;
}

/*
 * Two WRITEs of 16 packets, each losing its second: the first teaches the
 * requester whether B holds what comes after a gap; for the second, B's
 * answer to the resent hole is held back while a third WRITE of 8 packets
 * is posted. Returns how many of those 8 went out before that answer;
 * every WRITE must then complete with its data in place.
 */
static int writes_past_a_hole(struct __test_metadata *_metadata, Node *A,
                              Node *B, bool *holds_after_first)
{
    const uint32_t len2 = 16 * 256, len3 = 8 * 256;
    uint64_t src = buf_alloc(A, len2 + len3), dst = buf_alloc(B, len2 + len3);
    Sg s2 = { src, len2, mr_any(A, 0, src, len2 + len3) };
    Sg s3 = { src + len2, len3, s2.key };
    uint32_t rkey = mr_any(B, ACC_ALL, dst, len2 + len3);
    Script sc = { .lost = 2, .park = 17 };
    unsigned drop = 0, sent, done = 0;
    struct vrnic_cqe e;
    VrnicXport *x;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x40, 0x40);
    x = vrnic_qp_get(&A->f->core, qa.qpn)->x;
    ASSERT_FALSE(x->peer_holds);
    if (write_once(_metadata, A, B, &qa, &qb, 16, &drop, drop_second)) {
        return -1;
    }
    *holds_after_first = x->peer_holds;

    /* The second WRITE: its hole is resent (frame 17) and parked. */
    fill(A, src, len2 + len3, 7);
    A->f->wire_hook = scripted;
    A->f->hook_arg = &sc;
    post_send(&qa, 2, VRNIC_WQE_OP_RDMA_WRITE, 0, &s2, 1, dst, rkey, 0,
              NULL, 0);
    fake_settle(A->f);
    ASSERT_EQ(17, sc.n);
    ASSERT_TRUE(x->hole_mode);
    ASSERT_EQ(vrnic_psn_add(0x40, 16 + 1), x->hole_psn);

    /* The third WRITE, posted while the hole's answer is outstanding. */
    post_send(&qa, 3, VRNIC_WQE_OP_RDMA_WRITE, 0, &s3, 1, dst + len2, rkey,
              0, NULL, 0);
    fake_settle(A->f);
    sent = sc.n - 17;

    fake_wire_put(A->f->peer, sc.parked, sc.parked_len);
    for (unsigned i = 0; done < 2; i++) {
        ASSERT_GT(100, i);      /* bounded: a hang is a failure */
        fake_settle(A->f);
        while (poll(A, true, &e)) {
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            ASSERT_EQ(2 + done, le64toh(e.wr_id));
            done++;
        }
        if (done < 2 && A->f->timer_due != INT64_MAX) {
            fake_fire_timer(A->f);
        }
    }
    A->f->wire_hook = NULL;
    ASSERT_EQ(0, memcmp(fake_ptr(A->f, src), fake_ptr(B->f, dst),
                        len2 + len3));
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qa));
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qb));
    return sent;
}

/*
 * Once B's answer to a resent hole has shown that it holds packets past
 * a gap, new PSNs keep going out while the next hole is resent: the
 * third WRITE is sent at once, B holds it behind the hole, and only the
 * two lost packets are ever sent again.
 */
TEST_F(pair, new_psns_go_out_past_a_hole_to_a_holding_responder)
{
    const uint64_t *ca = self->a.f->core.stats.port;
    bool holds = false;

    ASSERT_EQ(8, writes_past_a_hole(_metadata, &self->a, &self->b, &holds));
    ASSERT_TRUE(holds);
    ASSERT_EQ(2, ca[VRNIC_PORT_STAT_RETRANSMITS]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
}

/*
 * A responder that holds nothing past a gap (rdma_rxe; here vrnic with its
 * device-wide budget used up) would take new PSNs sent during a hole's
 * resend for a new gap: the requester, which learns it from the first
 * answer, sends none until the hole is answered.
 */
TEST_F(pair, new_psns_wait_past_a_hole_at_a_responder_holding_nothing)
{
    const uint64_t *ca = self->a.f->core.stats.port;
    bool holds = true;

    self->b.f->core.ooo_held = VRNIC_OOO_DEVICE;
    ASSERT_EQ(0, writes_past_a_hole(_metadata, &self->a, &self->b, &holds));
    self->b.f->core.ooo_held = 0;
    ASSERT_FALSE(holds);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
}

/*
 * A go-back while the send window is full (VRNIC_TX_WINDOW WQEs in flight,
 * more posted) from a WQE after the oldest: the slot of the WQE at the
 * cursor is the oldest one's, and the oldest (sent, answered, not yet
 * completed) must keep its state. Single-packet SENDs to a responder that
 * holds nothing past a gap; the first is lost, and the answer to its
 * resend (before the oldest WQE completes) brings the rest again from the
 * second. One SEND before them gets the responder's credits (32 of the
 * receive WQEs it holds), so the window fills at once.
 */
TEST_F(pair, go_back_in_a_full_window_keeps_the_oldest_wqe)
{
    const unsigned n = VRNIC_TX_WINDOW + 8;
    uint64_t src = buf_alloc(&self->a, 64);
    uint64_t dst = buf_alloc(&self->b, 64 * (n + 1));
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    uint32_t lkey = mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst,
                           64 * (n + 1));
    Script sc = { .lost = 1 };
    unsigned done = 0;
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new_deep(&qa, &self->a);
    qp_new_deep(&qb, &self->b);
    connect(&qa, &qb, 1, 0x40, 0x40);
    for (unsigned i = 0; i <= n; i++) {
        Sg r = { dst + 64 * i, 64, lkey };

        post_recv(&qb, i, &r, 1);
    }
    post_send(&qa, n, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(n, le64toh(e.wr_id));
    self->b.f->core.ooo_held = VRNIC_OOO_DEVICE;
    self->a.f->wire_hook = scripted;
    self->a.f->hook_arg = &sc;
    for (unsigned i = 0; i < n; i++) {
        post_send(&qa, i, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    }
    for (unsigned i = 0; done < n; i++) {
        ASSERT_GT(100, i) {
            TH_LOG("%u of %u sends completed", done, n);
        }
        fake_settle(self->a.f);
        while (poll(&self->a, true, &e)) {
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            ASSERT_EQ(done, le64toh(e.wr_id));
            done++;
        }
        if (done < n && self->a.f->timer_due != INT64_MAX) {
            fake_fire_timer(self->a.f);
        }
    }
    self->a.f->wire_hook = NULL;
    self->b.f->core.ooo_held = 0;
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qa));
}

/*
 * After the NAK, two later packets swap places: reordering, not the
 * requester going back, so no second NAK, and the hole alone is resent.
 */
TEST_F(pair, reordering_after_a_nak_is_not_a_resend_pass)
{
    Script sc = { .lost = 2, .late = 20 };
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;

    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, 40, &sc,
                               scripted));
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_RETRANSMITS]);
}

/*
 * A WRITE whose first AckReq (PSN every - 1, at write_through's path MTU
 * 256) comes 20 packets before a loss: its ACK times the round trip
 * before the lost packet is sent again. Frame n + 1 is the first resend.
 */
#define EARLY_EVERY     vrnic_tx_ackreq_every(256)
#define EARLY_NPKTS     (EARLY_EVERY + 40)
#define EARLY_LOST      (EARLY_EVERY + 20)

/*
 * The resent copy of the lost packet is lost too: the early timer sends
 * it once more, a round trip later, not the QP's timeout.
 */
TEST_F(pair, lost_resend_is_sent_again_early)
{
    Script sc = { .lost = EARLY_LOST, .lost2 = EARLY_NPKTS + 1 };
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;

    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, EARLY_NPKTS,
                               &sc, scripted));
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_EARLY_RETRANSMITS]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(2, ca[VRNIC_PORT_STAT_RETRANSMITS]);
}

/*
 * The early resend is lost as well: the early timer sends it again after
 * twice the wait, still long before the QP's timeout (67 ms).
 */
TEST_F(pair, lost_early_resend_is_sent_again_with_backoff)
{
    Script sc = { .lost = EARLY_LOST, .lost2 = EARLY_NPKTS + 1,
                  .lost3 = EARLY_NPKTS + 2 };
    const uint64_t *ca = self->a.f->core.stats.port;

    ASSERT_EQ(0, write_through(_metadata, &self->a, &self->b, EARLY_NPKTS,
                               &sc, scripted));
    ASSERT_EQ(2, ca[VRNIC_PORT_STAT_EARLY_RETRANSMITS]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(3, ca[VRNIC_PORT_STAT_RETRANSMITS]);
    ASSERT_GT(4096ll << 14, self->a.f->now_ns);
}

/*
 * The NAK for a lost packet is lost too. Once an ACK has timed the round
 * trip (the one ACK B sends for the first, clean WRITE: it answers its
 * whole batch), the early timer goes back long before the QP's timeout
 * (timeout 14: 67 ms), and spends no retry. The second WRITE's own first
 * packet arms the timers: the first's were dropped when it completed.
 */
TEST_F(pair, lost_nak_costs_a_round_trip_not_the_timeout)
{
    Script sa = { .lost = 40 + 20 }, sb = { .lost = 2 };
    const uint64_t *ca = self->a.f->core.stats.port;
    const uint64_t *cb = self->b.f->core.stats.port;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x40, 0x40);
    self->b.f->wire_hook = scripted;
    self->b.f->hook_arg = &sb;
    ASSERT_EQ(0, write_once(_metadata, &self->a, &self->b, &qa, &qb, 40,
                            &sa, scripted));
    ASSERT_EQ(1, sb.n);
    ASSERT_EQ(0, write_once(_metadata, &self->a, &self->b, &qa, &qb, 40,
                            &sa, scripted));
    self->b.f->wire_hook = NULL;
    ASSERT_EQ(1, cb[VRNIC_PORT_STAT_NAKS_SENT]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_SEQ_NAKS_RCVD]);
    ASSERT_EQ(1, ca[VRNIC_PORT_STAT_EARLY_RETRANSMITS]);
    ASSERT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_GT(4096ll << 14, self->a.f->now_ns);
}

/* B's output captured, to be handed to A one frame at a time; frame
 * numbers lost and lost2 (1-based, 0: none) are not. */
typedef struct Captured {
    unsigned n, head, lost, lost2;
    size_t len[512];
    uint8_t *fr[512];
} Captured;

static bool capture(FakeBus *from, uint8_t *frame, size_t *len, void *arg)
{
    Captured *c = arg;

    if (c->n < ARRAY_SIZE(c->fr)) {
        c->fr[c->n] = malloc(*len);
        if (!c->fr[c->n]) {
            abort();
        }
        memcpy(c->fr[c->n], frame, *len);
        c->len[c->n++] = *len;
    }
    return false;
}

static void captured_free(Captured *c)
{
    for (unsigned i = 0; i < c->n; i++) {
        free(c->fr[i]);
    }
}

/*
 * Run A until ncqe send completions (all successful): B's answers reach A
 * one at a time, A running after each, then timers.
 */
static int one_answer_at_a_time(struct __test_metadata *_metadata, Node *A,
                                Captured *c, unsigned ncqe)
{
    struct vrnic_cqe e;
    unsigned got = 0;

    for (unsigned i = 0; got < ncqe; i++) {
        ASSERT_GT(5000, i);         /* bounded: a hang is a failure */
        while (poll(A, true, &e)) {
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            got++;
        }
        if (got == ncqe) {
            break;
        }
        fake_settle(A->f);
        if (c->head < c->n) {
            if (c->head + 1 != c->lost && c->head + 1 != c->lost2) {
                fake_wire_put(A->f, c->fr[c->head], c->len[c->head]);
            }
            c->head++;
            fake_settle(A->f);
        } else {
            ASSERT_TRUE(fake_fire_timer(A->f));
        }
    }
    return 0;
}

/*
 * WRITE (4 packets), READ of rdlen bytes, WRITE (14 packets), A's frame
 * `lost` lost; returns A's retransmissions for it.
 */
static uint64_t write_read_write(struct __test_metadata *_metadata, Node *A,
                                 Node *B, unsigned lost, uint32_t rdlen)
{
    uint32_t len = 64 * 256;
    uint64_t src = buf_alloc(A, len), dst = buf_alloc(B, len);
    uint64_t rd = buf_alloc(A, len);
    Sg w1 = { src, 4 * 256, mr_any(A, 0, src, len) };
    Sg w2 = { src, 14 * 256, w1.key };
    Sg r = { rd, rdlen, mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, rd, len) };
    uint32_t rkey = mr_any(B, ACC_ALL, dst, len);
    Script sc = { .lost = lost };
    Captured c = { 0 };
    uint64_t before = A->f->core.stats.port[VRNIC_PORT_STAT_RETRANSMITS];
    uint64_t replays = B->f->core.stats.port[VRNIC_PORT_STAT_READ_REPLAYS];
    uint64_t timeouts = A->f->core.stats.port[VRNIC_PORT_STAT_TIMEOUTS];
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x10, 0x20);
    fill(A, src, len, 3);
    A->f->wire_hook = scripted;
    A->f->hook_arg = &sc;
    B->f->wire_hook = capture;
    B->f->hook_arg = &c;
    post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &w1, 1, dst, rkey, 0,
              NULL, 0);
    post_send(&qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, &r, 1, dst, rkey, 0,
              NULL, 0);
    post_send(&qa, 3, VRNIC_WQE_OP_RDMA_WRITE, 0, &w2, 1, dst + 4096, rkey,
              0, NULL, 0);
    EXPECT_EQ(0, one_answer_at_a_time(_metadata, A, &c, 3));
    A->f->wire_hook = B->f->wire_hook = NULL;
    captured_free(&c);
    EXPECT_EQ(replays, B->f->core.stats.port[VRNIC_PORT_STAT_READ_REPLAYS]);
    EXPECT_EQ(timeouts, A->f->core.stats.port[VRNIC_PORT_STAT_TIMEOUTS]);
    return A->f->core.stats.port[VRNIC_PORT_STAT_RETRANSMITS] - before;
}

/*
 * A READ among the held packets: its responses leave before the answer
 * that ends the replay, and no ACK from inside the replay goes ahead of
 * them, so the lost packet is still the only one resent.
 */
TEST_F(pair, hole_before_a_held_read_is_resent_alone)
{
    ASSERT_EQ(1, write_read_write(_metadata, &self->a, &self->b, 2, 256));
    ASSERT_EQ(1, write_read_write(_metadata, &self->a, &self->b, 2, 1024));
}

/* A lost READ request goes back: its answer is a stream, not an ACK. */
TEST_F(pair, lost_read_request_goes_back)
{
    uint64_t n = write_read_write(_metadata, &self->a, &self->b, 5, 1024);

    ASSERT_LT(0, n);
    ASSERT_GE(15, n);       /* the READ and the WRITE after it */
}

/*
 * nreads READs of npkts packets each in flight, B's frame number `lost`
 * (1-based) lost: the READ it belongs to is asked again once, for that
 * one packet alone (B sends `resent` frames more than the streams), and
 * all data arrives. The responses after the lost one are placed; the end of
 * the READ's stream, or an answer to a later READ, says what is missing.
 * The answers to the other READs, which the responder owes before it
 * answers the new request, do not ask it again (each used to, through an
 * implied NAK after the progress it made).
 */
static int reread(struct __test_metadata *_metadata, Node *A, Node *B,
                  uint32_t nreads, uint32_t npkts, unsigned lost,
                  unsigned lost2, unsigned resent, uint64_t retransmits)
{
    uint32_t len = npkts * 256, all = nreads * len;
    uint64_t src = buf_alloc(B, all), dst = buf_alloc(A, all);
    uint32_t lkey = mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, dst, all);
    uint32_t rkey = mr_any(B, ACC_ALL, src, all);
    const uint64_t *ca = A->f->core.stats.port;
    const uint64_t *cb = B->f->core.stats.port;
    Captured c = { .lost = lost, .lost2 = lost2 };
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x10, 0x20);
    fill(B, src, all, 9);
    B->f->wire_hook = capture;
    B->f->hook_arg = &c;
    for (uint32_t i = 0; i < nreads; i++) {
        Sg r = { dst + i * len, len, lkey };

        post_send(&qa, i, VRNIC_WQE_OP_RDMA_READ, 0, &r, 1, src + i * len,
                  rkey, 0, NULL, 0);
    }
    EXPECT_EQ(0, one_answer_at_a_time(_metadata, A, &c, nreads));
    B->f->wire_hook = NULL;
    captured_free(&c);
    EXPECT_EQ(nreads * npkts + resent, c.n);
    EXPECT_EQ(retransmits, ca[VRNIC_PORT_STAT_RETRANSMITS]);
    EXPECT_EQ(retransmits, cb[VRNIC_PORT_STAT_READ_REPLAYS]);
    EXPECT_EQ(0, ca[VRNIC_PORT_STAT_TIMEOUTS]);
    EXPECT_EQ(0, memcmp(fake_ptr(A->f, dst), fake_ptr(B->f, src), all));
    return 0;
}

static int reread_once(struct __test_metadata *_metadata, Node *A, Node *B,
                       uint32_t nreads, uint32_t npkts, unsigned lost,
                       unsigned resent)
{
    return reread(_metadata, A, B, nreads, npkts, lost, 0, resent, 1);
}

TEST_F(pair, reread_is_not_asked_again_by_answers_to_earlier_reads)
{
    ASSERT_EQ(0, reread_once(_metadata, &self->a, &self->b, 4, 4, 2, 1));
}

TEST_F(pair, reread_asks_only_for_the_missing_response)
{
    ASSERT_EQ(0, reread_once(_metadata, &self->a, &self->b, 1, 16, 2, 1));
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_IMPLIED_NAKS]);
}

/*
 * A READ longer than the responses that can be placed past a missing one
 * (VRNIC_TX_RD_AHEAD): the first response past them asks it again at
 * once, from the missing one to the end (a responder still streaming
 * restarts there; B has sent everything, so it sends those 127 again).
 */
TEST_F(pair, long_read_is_asked_again_past_what_can_be_placed)
{
    ASSERT_EQ(0, reread_once(_metadata, &self->a, &self->b, 1, 128, 2, 127));
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_EARLY_RETRANSMITS]);
}

/*
 * Two gaps in one READ (responses 2 and 5 of 16): asked again once, from
 * the first gap to the second (the two placed between them come again).
 */
TEST_F(pair, reread_spans_two_gaps)
{
    ASSERT_EQ(0, reread(_metadata, &self->a, &self->b, 1, 16, 2, 5, 4, 1));
}

/*
 * The one response asked for again is lost too: the early timer asks for
 * it alone once more, not for the rest of the READ, which is placed.
 */
TEST_F(pair, lost_reread_response_is_asked_alone_again)
{
    ASSERT_EQ(0, reread(_metadata, &self->a, &self->b, 1, 16, 2, 17, 2, 2));
    ASSERT_EQ(1, self->a.f->core.stats.port[VRNIC_PORT_STAT_EARLY_RETRANSMITS]);
    ASSERT_EQ(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_TIMEOUTS]);
}

/* The last response is lost: the next READ's answer tells (implied NAK). */
TEST_F(pair, lost_last_read_response_is_asked_alone)
{
    ASSERT_EQ(0, reread_once(_metadata, &self->a, &self->b, 2, 4, 4, 1));
    ASSERT_EQ(1, self->a.f->core.stats.port[VRNIC_PORT_STAT_IMPLIED_NAKS]);
}

/* A copy of a NAK that was answered already sends nothing again. */
TEST_F(pair, stale_nak_is_ignored)
{
    Node *A = &self->a, *B = &self->b;
    uint32_t len = 100 * 256;
    uint64_t src = buf_alloc(A, len), dst = buf_alloc(B, len);
    Sg s = { src, len, mr_any(A, 0, src, len) };
    uint32_t rkey = mr_any(B, ACC_ALL, dst, len);
    const uint64_t *ca = A->f->core.stats.port;
    Script sc = { .lost = 2 };
    Captured c = { 0 };
    struct vrnic_cqe e;
    uint64_t before;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x10, 0x20);
    A->f->wire_hook = scripted;
    A->f->hook_arg = &sc;
    B->f->wire_hook = capture;
    B->f->hook_arg = &c;
    post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0, NULL,
              0);
    fake_settle(A->f);
    ASSERT_LE(1, c.n);      /* the NAK */
    fake_wire_put(A->f, c.fr[0], c.len[0]);
    fake_settle(A->f);
    ASSERT_LE(2, c.n);      /* the answer to the hole */
    fake_wire_put(A->f, c.fr[1], c.len[1]);
    fake_settle(A->f);
    before = ca[VRNIC_PORT_STAT_RETRANSMITS];
    fake_wire_put(A->f, c.fr[0], c.len[0]);     /* the NAK again, late */
    fake_settle(A->f);
    ASSERT_EQ(before, ca[VRNIC_PORT_STAT_RETRANSMITS]);
    c.head = c.n;
    for (unsigned i = 0; !poll(A, true, &e); i++) {
        ASSERT_GT(1000, i);
        if (c.head < c.n) {
            fake_wire_put(A->f, c.fr[c.head], c.len[c.head]);
            c.head++;
            fake_settle(A->f);
        } else {
            ASSERT_TRUE(fake_fire_timer(A->f));
        }
    }
    A->f->wire_hook = B->f->wire_hook = NULL;
    captured_free(&c);
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
}

/*
 * The resent hole's WQE fails (its MR is gone) while it is still the one
 * being sent (the packet window stopped it): it completes with
 * LOC_PROT_ERR at once, the QP goes to ERR.
 */
TEST_F(pair, failed_hole_resend_completes_the_wqe)
{
    Node *A = &self->a, *B = &self->b;
    uint32_t len = 100 * 256;
    uint64_t src = buf_alloc(A, len), dst = buf_alloc(B, len);
    uint32_t lkey = mr_any(A, 0, src, len);
    Sg s = { src, len, lkey };
    uint32_t rkey = mr_any(B, ACC_ALL, dst, len);
    Script sc = { .lost = 2 };
    Captured c = { 0 };
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 0x10, 0x20);
    A->f->wire_hook = scripted;
    A->f->hook_arg = &sc;
    B->f->wire_hook = capture;
    B->f->hook_arg = &c;
    post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0, NULL,
              0);
    fake_settle(A->f);
    ASSERT_EQ(0, destroy(A->f, VRNIC_AQ_OP_DEREG_MR, lkey));
    for (unsigned i = 0; !poll(A, true, &e); i++) {
        ASSERT_GT(200, i);
        ASSERT_GT(c.n, c.head);     /* no timer needed */
        fake_wire_put(A->f, c.fr[c.head], c.len[c.head]);
        c.head++;
        fake_settle(A->f);
    }
    A->f->wire_hook = B->f->wire_hook = NULL;
    captured_free(&c);
    ASSERT_EQ(VRNIC_WC_LOC_PROT_ERR, e.status);
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qa));
}

TEST(loopback_one_device)
{
    Node A;
    Qp q1, q2;
    uint64_t src, dst, back;
    uint32_t rkey;
    Sg s, r, b;
    struct vrnic_cqe e;

    node_init(&A, 1, true);
    src = buf_alloc(&A, 20000);
    dst = buf_alloc(&A, 20000);
    back = buf_alloc(&A, 20000);
    s = (Sg){ src, 20000, mr_any(&A, 0, src, 20000) };
    rkey = mr_any(&A, ACC_ALL, dst, 20000);
    r = (Sg){ dst, 20000, rkey };
    b = (Sg){ back, 20000, mr_any(&A, VRNIC_ACCESS_LOCAL_WRITE, back, 20000) };
    qp_new(&q1, &A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&q2, &A, VRNIC_QP_TYPE_RC, 0);
    connect(&q1, &q2, 1, 3, 4);
    fill(&A, src, 20000, 2);
    post_recv(&q2, 7, &r, 1);
    post_send(&q1, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    post_send(&q1, 2, VRNIC_WQE_OP_RDMA_READ, 0, &b, 1, dst, rkey, 0, NULL,
              0);
    fake_settle(A.f);
    ASSERT_TRUE(poll(&A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(&A, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_TRUE(poll(&A, false, &e));
    ASSERT_EQ(20000, le32toh(e.byte_len));
    ASSERT_EQ(0, memcmp(fake_ptr(A.f, src), fake_ptr(A.f, back), 20000));
    ASSERT_EQ(0, A.f->nframes);                 /* nothing on the wire */
    ASSERT_LT(0, A.f->core.stats.port[VRNIC_PORT_STAT_LOOP_PKTS]);
    fake_free(A.f);
}

TEST_F(pair, non_roce_stays_on_ethernet)
{
    uint8_t frame[256];
    size_t len;
    Qp qb;

    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    len = craft(&self->a, &self->b, qb.qpn, 0, frame, sizeof(frame));
    frame[14 + 20 + 3] ^= 0xff;     /* UDP destination port: not 4791 */
    /* Left for the Ethernet function, not taken by the RDMA engine. */
    vrnic_core_eth_receive(&self->b.f->core, frame, len);
    ASSERT_EQ(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_PKTS] +
                 self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_MALFORMED]);
}

/*
 * UDP port 4791 to one of the port's GIDs is the RDMA engine's even when
 * the rest is malformed: dropped and counted, never left to the Ethernet
 * function. Here the IPv4 total length claims more than the frame holds.
 */
TEST_F(pair, malformed_roce_is_counted_not_ethernet)
{
    uint8_t frame[256];
    size_t len;
    Qp qb;

    uint32_t sum = 0;

    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    len = craft(&self->a, &self->b, qb.qpn, 0, frame, sizeof(frame));
    /* IPv4 total length past the frame's end, header checksum made good. */
    frame[14 + 2] = 0x0f;
    frame[14 + 10] = frame[14 + 11] = 0;
    for (unsigned i = 0; i < 20; i += 2) {
        sum += frame[14 + i] << 8 | frame[14 + i + 1];
    }
    sum = (sum & 0xffff) + (sum >> 16);
    sum = ~((sum & 0xffff) + (sum >> 16));
    frame[14 + 10] = sum >> 8;
    frame[14 + 11] = sum;
    vrnic_core_eth_receive(&self->b.f->core, frame, len);
    ASSERT_EQ(1, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_MALFORMED]);
    ASSERT_EQ(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_PKTS]);
}

/* Copies each frame a bus sends (c->fr) and lets it through. */
static bool capture_and_pass(FakeBus *from, uint8_t *frame, size_t *len,
                             void *arg)
{
    capture(from, frame, len, arg);
    return true;
}

static void set_mac(Node *n, const uint8_t mac[6])
{
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_SET_MAC);
    memcpy(((struct vrnic_aq_set_mac *)&c)->mac, mac, 6);
    if (run(n->f, &c, NULL)) {
        abort();
    }
}

/* GID index 0 of n: deleted, then (gid not NULL) added as gid. */
static void set_gid0(Node *n, const uint8_t *gid)
{
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_DEL_GID);
    if (run(n->f, &c, NULL)) {
        abort();
    }
    if (!gid) {
        return;
    }
    cmd_init(&c, VRNIC_AQ_OP_ADD_GID);
    ((struct vrnic_aq_gid *)&c)->type = htole32(VRNIC_GID_TYPE_ROCE_V2);
    memcpy(((struct vrnic_aq_gid *)&c)->gid, gid, 16);
    if (run(n->f, &c, NULL)) {
        abort();
    }
}

/* An RC pair qa-qb whose first SEND (A to B) resolved qa's path. */
static int rc_path_resolved(struct __test_metadata *_metadata, Node *A,
                            Node *B, Qp *qa, Qp *qb)
{
    qp_new(qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(qa, qb, 3, 0x100, 0x200);
    return rc_send_one(_metadata, A, B, qa, qb, 64, 1);
}

/* One more SEND on qa, A's frames copied into c. */
static void send_captured(Node *A, Qp *qa, const Sg *s, Captured *c)
{
    A->f->wire_hook = capture_and_pass;
    A->f->hook_arg = c;
    post_send(qa, 2, VRNIC_WQE_OP_SEND, 0, s, 1, 0, 0, 0, NULL, 0);
    fake_settle(A->f);
}

/*
 * A QP resolves its path (headers, loopback) once, not per packet
 * (VrnicPath): a new port MAC must still be in the very next packet.
 */
TEST_F(pair, path_follows_a_new_mac)
{
    static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x77 };
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    Captured c = { 0 };
    Qp qa, qb;

    ASSERT_EQ(0, rc_path_resolved(_metadata, &self->a, &self->b, &qa, &qb));
    ASSERT_EQ(0, memcmp(self->a.f->core.mac, self->a.mac, 6));
    set_mac(&self->a, mac);
    send_captured(&self->a, &qa, &s, &c);
    ASSERT_LE(1, c.n);
    ASSERT_EQ(0, memcmp(c.fr[0] + 6, mac, 6));
    captured_free(&c);
}

/*
 * As a new MAC, a new source GID is in the next packet. B no longer knows
 * A's packets as its peer's: dropped as RX_BAD_ADDR.
 */
TEST_F(pair, path_follows_a_new_gid)
{
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    Captured c = { 0 };
    struct vrnic_cqe e;
    uint8_t gid[16];
    Qp qa, qb;

    ASSERT_EQ(0, rc_path_resolved(_metadata, &self->a, &self->b, &qa, &qb));
    gid_v4(gid, 9);
    set_gid0(&self->a, gid);
    send_captured(&self->a, &qa, &s, &c);
    ASSERT_EQ(1, c.n);
    ASSERT_EQ(0, memcmp(c.fr[0] + 14 + 12, gid + 12, 4));
    ASSERT_EQ(1, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_BAD_ADDR]);
    ASSERT_FALSE(poll(&self->b, false, &e));
    captured_free(&c);
}

/* A deleted source GID is never used: the next message fails unsent. */
TEST_F(pair, deleted_source_gid_is_never_used)
{
    uint64_t src = buf_alloc(&self->a, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    unsigned sent = 0;
    struct vrnic_cqe e;
    Qp qa, qb;

    ASSERT_EQ(0, rc_path_resolved(_metadata, &self->a, &self->b, &qa, &qb));
    set_gid0(&self->a, NULL);
    self->a.f->wire_hook = count_and_drop;
    self->a.f->hook_arg = &sent;
    post_send(&qa, 2, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_LOC_QP_OP_ERR, e.status);
    ASSERT_EQ(0, sent);
}

/*
 * A UD QP keeps the path of the last destination it sent to: sends that
 * alternate between two QPs each carry their own DestQP and UDP source
 * port (rdma_get_udp_sport of the two QPNs) and all arrive.
 */
TEST_F(pair, ud_path_per_destination)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 4096);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    uint32_t rkey = mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 4096);
    Captured c = { 0 };
    struct vrnic_cqe e;
    Qp qa, qb[2];

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_UD, 0);
    qp_up(&qa, NULL, 0, 1, 0);
    for (unsigned i = 0; i < 2; i++) {
        qp_new(&qb[i], &self->b, VRNIC_QP_TYPE_UD, 0);
        qp_up(&qb[i], NULL, 0, 1, 0);
    }
    self->a.f->wire_hook = capture_and_pass;
    self->a.f->hook_arg = &c;
    for (unsigned i = 0; i < 4; i++) {
        Sg r = { dst + i * 1024, 1024, rkey };

        post_recv(&qb[i & 1], i, &r, 1);
        post_send(&qa, i, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, &qb[i & 1],
                  0x80000000);
        fake_settle(self->a.f);
        ASSERT_EQ(0, both_succeed(_metadata, &self->a, &self->b, &e));
        ASSERT_EQ(qb[i & 1].qpn, le32toh(e.qpn));
    }
    ASSERT_EQ(4, c.n);
    for (unsigned i = 0; i < 4; i++) {
        const uint8_t *udp = c.fr[i] + 14 + 20;

        ASSERT_EQ(vrnic_pkt_udp_sport(0, qa.qpn, qb[i & 1].qpn),
                  udp[0] << 8 | udp[1]);
        ASSERT_EQ(qb[i & 1].qpn & 0xffffff,
                  udp[8 + 5] << 16 | udp[8 + 6] << 8 | udp[8 + 7]);
    }
    captured_free(&c);
}

TEST(device_caps_atomic)
{
    FakeBus *f = obj_bus(NULL);
    struct vrnic_device_attr *a = fake_ptr(f, FAKE_RESP);
    AnyCmd c;

    cmd_init(&c, VRNIC_AQ_OP_QUERY_DEVICE);
    c.query.resp_addr = htole64(FAKE_RESP);
    c.query.resp_len = htole32(sizeof(*a));
    ASSERT_EQ(0, run(f, &c, NULL));
    ASSERT_EQ(VRNIC_DEVICE_CAP_ATOMIC_HCA | VRNIC_DEVICE_CAP_ON_DEMAND |
              VRNIC_DEVICE_CAP_ATOMIC_WRITE | VRNIC_DEVICE_CAP_FLUSH |
              VRNIC_DEVICE_CAP_TIMESTAMP |
              VRNIC_DEVICE_CAP_RAW_PACKET | VRNIC_DEVICE_CAP_RSS |
              VRNIC_DEVICE_CAP_XRC,
              le32toh(a->device_caps));
    fake_free(f);
}

/* Build an RC READ REQUEST from A's QP to B's. */
static size_t craft_read(Node *A, Node *B, uint32_t dqpn, uint32_t psn,
                         uint64_t va, uint32_t rkey, uint32_t len,
                         uint8_t *frame, size_t size)
{
    VrnicPktAddr a = { .hop_limit = 64, .udp_sport = 0xc000 };
    VrnicPktHdrs h;

    memset(&h, 0, sizeof(h));
    memcpy(a.smac, A->mac, 6);
    memcpy(a.dmac, B->mac, 6);
    memcpy(a.sgid, A->gid, 16);
    memcpy(a.dgid, B->gid, 16);
    h.bth.opcode = VRNIC_OP(RC, READ_REQ);
    h.bth.pkey = 0xffff;
    h.bth.dqpn = dqpn;
    h.bth.psn = psn;
    h.bth.ack_req = true;
    h.reth.va = va;
    h.reth.rkey = rkey;
    h.reth.len = len;
    return vrnic_pkt_build(frame, size, &a, &h, NULL, 0);
}

/*
 * A hostile requester repeats a long READ many times, then sends a new
 * one: duplicates take READ/atomic slots like new requests, so the
 * response queue never overflows (this used to dereference NULL).
 */
TEST_F(pair, duplicate_reads_stay_within_the_response_queue)
{
    Qp qa, qb;
    uint8_t frame[256];
    size_t len;
    uint32_t big = 1u << 20;            /* 4096 responses at PMTU 256 */
    uint64_t buf = buf_alloc(&self->b, big);
    uint32_t rkey = mr_any(&self->b, ACC_ALL, buf, big);
    VrnicXport *x;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 1, 1000, 1000);
    x = self->b.f->core.obj.qps[qb.qpn].x;
    len = craft_read(&self->a, &self->b, qb.qpn, 1000, buf, rkey, big,
                     frame, sizeof(frame));
    vrnic_core_eth_receive(&self->b.f->core, frame, len);
    for (unsigned i = 0; i < 40; i++) {
        vrnic_core_eth_receive(&self->b.f->core, frame, len);
        vrnic_core_run(&self->b.f->core, VRNIC_WORK_QUEUES);
        ASSERT_LE(x->rd_pending, MAX(self->b.f->core.obj.qps[qb.qpn].attr.max_dest_rd_atomic, 1));
        ASSERT_LE(x->q_tail - x->q_head, x->q_size);
    }
    ASSERT_LT(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_DUPLICATE]);
    len = craft_read(&self->a, &self->b, qb.qpn, x->epsn, buf, rkey, 64,
                     frame, sizeof(frame));
    vrnic_core_eth_receive(&self->b.f->core, frame, len);
    ASSERT_LE(x->q_tail - x->q_head, x->q_size);
    ASSERT_EQ(VRNIC_QPS_RTS, self->b.f->core.obj.qps[qb.qpn].state);
}

/* ---- a lossy wire: the fault injector between the two engines ---------- */

static void set_faults(Node *n, uint32_t drop, uint32_t reorder, uint32_t dup,
                       uint32_t corrupt, uint64_t seed)
{
    VrnicFaultCfg c = {
        .drop_ppm = drop, .reorder_ppm = reorder, .reorder_depth = 3,
        .dup_ppm = dup, .corrupt_ppm = corrupt, .seed = seed,
        .dir = VRNIC_FAULT_DIR_TX,
    };

    vrnic_core_set_faults(&n->f->core, &c);
}

/* Run both ends, firing timers (retransmit, RNR, held frames) until none
 * is left; bounded so a hang fails instead of spinning. */
static unsigned run_lossy(Node *a)
{
    unsigned fired = 0;

    fake_settle(a->f);
    while (fired < 200000 && fake_fire_timer(a->f)) {
        fired++;
    }
    return fired;
}

static uint32_t lcg(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return *st >> 33;
}

enum { L_SEND, L_SEND_IMM, L_WRITE, L_WRITE_IMM, L_READ, L_FADD, L_CSWAP,
       L_NOPS };

#define L_MAX 20000u        /* largest message */
#define L_BATCH 8           /* WQEs per round (SQ depth 16) */

typedef struct LossyRun {
    uint64_t counters[VRNIC_PORT_STAT_NUM];   /* A's, then compared */
    unsigned msgs, bytes;
} LossyRun;

/*
 * nmsg randomized RC messages of every opcode and sizes 0..L_MAX at MTU
 * 1024 through the injector (both directions): every WQE completes once,
 * in order, successfully; SEND data lands once per receive WQE; WRITE and
 * READ data match; every atomic ran exactly once (the returned values
 * follow the model of the target).
 */
static int lossy_rc(struct __test_metadata *_metadata, Node *A, Node *B,
                    uint32_t drop, uint32_t reorder, uint32_t dup,
                    uint32_t corrupt, uint64_t seed, unsigned nmsg,
                    LossyRun *out)
{
    uint64_t src = buf_alloc(A, L_BATCH * L_MAX);
    uint64_t rd = buf_alloc(A, L_BATCH * L_MAX);
    uint64_t res = buf_alloc(A, L_BATCH * 8);
    uint64_t rbuf = buf_alloc(B, L_BATCH * L_MAX);
    uint64_t wr = buf_alloc(B, L_BATCH * L_MAX);
    uint64_t ctr = buf_alloc(B, 8);
    uint32_t lsrc = mr_any(A, 0, src, L_BATCH * L_MAX);
    uint32_t lrd = mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, rd, L_BATCH * L_MAX);
    uint32_t lres = mr_any(A, VRNIC_ACCESS_LOCAL_WRITE, res, L_BATCH * 8);
    uint32_t lrbuf = mr_any(B, VRNIC_ACCESS_LOCAL_WRITE, rbuf,
                            L_BATCH * L_MAX);
    uint32_t rwr = mr_any(B, ACC_ALL, wr, L_BATCH * L_MAX);
    uint32_t rctr = mr_any(B, ACC_ALL, ctr, 8);
    uint64_t model = 5, st = seed;
    Qp qa, qb;

    qp_new(&qa, A, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, B, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 0xfffff0, 0xffff00);   /* PSNs wrap on the way */
    set_faults(A, drop, reorder, dup, corrupt, seed);
    set_faults(B, drop, reorder, dup, corrupt, seed ^ 0x5555);
    *(uint64_t *)fake_ptr(B->f, ctr) = htole64(model);
    memset(out, 0, sizeof(*out));

    for (unsigned done = 0; done < nmsg; done += L_BATCH) {
        uint8_t op[L_BATCH];
        uint32_t len[L_BATCH], nrecv = 0;
        uint64_t expect_orig[L_BATCH];
        struct vrnic_cqe e;

        for (unsigned k = 0; k < L_BATCH; k++) {
            static const uint32_t edge[] = { 0, 1, 1023, 1024, 1025 };
            uint32_t r = lcg(&st);
            uint64_t off = (uint64_t)k * L_MAX;
            Sg s = { src + off, 0, lsrc };
            Sg rs = { rd + off, 0, lrd };
            Sg at = { res + k * 8, 8, lres };
            Sg rv = { rbuf + off, L_MAX, lrbuf };

            op[k] = r % L_NOPS;
            len[k] = (r >> 8) % 4 ? lcg(&st) % (L_MAX + 1) :
                     edge[(r >> 12) % 5];
            s.len = rs.len = len[k];
            fill(A, src + off, len[k], done + k + (uint32_t)seed);
            switch (op[k]) {
            case L_SEND:
            case L_SEND_IMM:
            case L_WRITE_IMM:
                post_recv(&qb, 1000 + done + k, &rv, 1);
                nrecv++;
                if (op[k] == L_WRITE_IMM) {
                    post_send(&qa, done + k, VRNIC_WQE_OP_RDMA_WRITE_IMM, 0,
                              &s, 1, wr + off, rwr, done + k, NULL, 0);
                } else {
                    post_send(&qa, done + k, op[k] == L_SEND ?
                              VRNIC_WQE_OP_SEND : VRNIC_WQE_OP_SEND_IMM, 0,
                              &s, 1, 0, 0, done + k, NULL, 0);
                }
                break;
            case L_WRITE:
                post_send(&qa, done + k, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1,
                          wr + off, rwr, 0, NULL, 0);
                break;
            case L_READ:
                fill(B, wr + off, len[k], 77 + done + k);
                post_send(&qa, done + k, VRNIC_WQE_OP_RDMA_READ, 0, &rs, 1,
                          wr + off, rwr, 0, NULL, 0);
                break;
            case L_FADD:
                expect_orig[k] = model;
                model += k + 1;
                post_atomic(&qa, done + k, VRNIC_WQE_OP_ATOMIC_FETCH_ADD,
                            &at, ctr, rctr, k + 1, 0);
                break;
            default:
                expect_orig[k] = model;
                /* Swaps when it matches: every other one on purpose. */
                if (k % 2 == 0) {
                    post_atomic(&qa, done + k, VRNIC_WQE_OP_ATOMIC_CMP_SWP,
                                &at, ctr, rctr, model, model * 3 + 1);
                    model = model * 3 + 1;
                } else {
                    post_atomic(&qa, done + k, VRNIC_WQE_OP_ATOMIC_CMP_SWP,
                                &at, ctr, rctr, model + 1, 0);
                }
                break;
            }
        }
        run_lossy(A);
        for (unsigned k = 0; k < L_BATCH; k++) {
            uint64_t off = (uint64_t)k * L_MAX;

            ASSERT_TRUE(poll(A, true, &e)) {
                TH_LOG("seed %" PRIu64 " msg %u: no completion", seed,
                       done + k);
            }
            ASSERT_EQ(done + k, le64toh(e.wr_id));
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status) {
                TH_LOG("seed %" PRIu64 " msg %u op %u len %u", seed,
                       done + k, op[k], len[k]);
            }
            if (op[k] == L_WRITE || op[k] == L_WRITE_IMM) {
                ASSERT_EQ(0, memcmp(fake_ptr(A->f, src + off),
                                    fake_ptr(B->f, wr + off), len[k]));
            } else if (op[k] == L_READ) {
                ASSERT_EQ(len[k], le32toh(e.byte_len));
                ASSERT_EQ(0, memcmp(fake_ptr(A->f, rd + off),
                                    fake_ptr(B->f, wr + off), len[k]));
            } else if (op[k] == L_FADD || op[k] == L_CSWAP) {
                ASSERT_EQ(expect_orig[k],
                          le64toh(*(uint64_t *)fake_ptr(A->f, res + k * 8)));
            }
            out->bytes += len[k];
        }
        ASSERT_FALSE(poll(A, true, &e));
        /* Receives: one per SEND/WRITE_IMM, in order, never twice. */
        for (unsigned k = 0, n = 0; k < L_BATCH; k++) {
            if (op[k] != L_SEND && op[k] != L_SEND_IMM &&
                op[k] != L_WRITE_IMM) {
                continue;
            }
            ASSERT_TRUE(poll(B, false, &e));
            ASSERT_EQ(1000 + done + k, le64toh(e.wr_id));
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            ASSERT_EQ(len[k], le32toh(e.byte_len));
            if (op[k] != L_WRITE_IMM) {
                ASSERT_EQ(0, memcmp(fake_ptr(A->f, src + (uint64_t)k * L_MAX),
                                    fake_ptr(B->f, rbuf + (uint64_t)k * L_MAX),
                                    len[k]));
            }
            n++;
            ASSERT_GE(nrecv, n);
        }
        ASSERT_FALSE(poll(B, false, &e));
        ASSERT_EQ(model, le64toh(*(uint64_t *)fake_ptr(B->f, ctr)));
        out->msgs += L_BATCH;
    }
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qa));
    ASSERT_EQ(VRNIC_QPS_RTS, qp_state(&qb));
    memcpy(out->counters, A->f->core.stats.port, sizeof(out->counters));
    return 0;
}

static void log_counters(struct __test_metadata *_metadata, const char *who,
                         const uint64_t *c)
{
    TH_LOG("%s: retransmits %" PRIu64 " timeouts %" PRIu64 " early %" PRIu64
           " seq NAKs %" PRIu64 " implied %" PRIu64 " faults drop %" PRIu64
           " reorder %" PRIu64 " dup %" PRIu64 " corrupt %" PRIu64, who,
           c[VRNIC_PORT_STAT_RETRANSMITS], c[VRNIC_PORT_STAT_TIMEOUTS],
           c[VRNIC_PORT_STAT_EARLY_RETRANSMITS],
           c[VRNIC_PORT_STAT_SEQ_NAKS_RCVD], c[VRNIC_PORT_STAT_IMPLIED_NAKS],
           c[VRNIC_PORT_STAT_FAULT_DROPS], c[VRNIC_PORT_STAT_FAULT_REORDERS],
           c[VRNIC_PORT_STAT_FAULT_DUPS], c[VRNIC_PORT_STAT_FAULT_CORRUPTS]);
}

/* Each fault kind alone, then all of them, at rates far above the guest
 * test's so thousands of messages see many of each. */
TEST_F(pair, lossy_rc_drop)
{
    LossyRun r;

    ASSERT_EQ(0, lossy_rc(_metadata, &self->a, &self->b, 30000, 0, 0, 0, 1,
                          1000, &r));
    log_counters(_metadata, "A", r.counters);
    ASSERT_LT(0, r.counters[VRNIC_PORT_STAT_FAULT_DROPS]);
    ASSERT_LT(0, r.counters[VRNIC_PORT_STAT_RETRANSMITS]);
}

TEST_F(pair, lossy_rc_reorder)
{
    LossyRun r;

    ASSERT_EQ(0, lossy_rc(_metadata, &self->a, &self->b, 0, 30000, 0, 0, 2,
                          1000, &r));
    log_counters(_metadata, "A", r.counters);
    ASSERT_LT(0, r.counters[VRNIC_PORT_STAT_FAULT_REORDERS]);
}

TEST_F(pair, lossy_rc_duplicate)
{
    LossyRun r;

    ASSERT_EQ(0, lossy_rc(_metadata, &self->a, &self->b, 0, 0, 30000, 0, 3,
                          1000, &r));
    log_counters(_metadata, "A", r.counters);
    ASSERT_LT(0, r.counters[VRNIC_PORT_STAT_FAULT_DUPS]);
    ASSERT_LT(0, self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_DUPLICATE]);
}

TEST_F(pair, lossy_rc_corrupt)
{
    LossyRun r;

    ASSERT_EQ(0, lossy_rc(_metadata, &self->a, &self->b, 0, 0, 0, 30000, 4,
                          1000, &r));
    log_counters(_metadata, "A", r.counters);
    ASSERT_LT(0, r.counters[VRNIC_PORT_STAT_FAULT_CORRUPTS]);
    /* Every flip is caught: by the ICRC, or first by a header check (a
     * flipped opcode or pad count can make the frame malformed). */
    ASSERT_EQ(r.counters[VRNIC_PORT_STAT_FAULT_CORRUPTS],
              self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_ICRC_ERR] +
              self->b.f->core.stats.port[VRNIC_PORT_STAT_RX_MALFORMED]);
}

TEST_F(pair, lossy_rc_all_faults)
{
    LossyRun r;

    ASSERT_EQ(0, lossy_rc(_metadata, &self->a, &self->b, 10000, 10000, 1000,
                          1000, 5, 2000, &r));
    log_counters(_metadata, "A", r.counters);
    log_counters(_metadata, "B", self->b.f->core.stats.port);
}

/* Many seeds, heavy faults of every kind at once (both directions). */
TEST(lossy_rc_many_seeds)
{
    for (uint64_t seed = 100; seed < 120; seed++) {
        LossyRun r;
        Node a, b;

        node_init(&a, 1, false);
        node_init(&b, 2, false);
        fake_link(a.f, b.f);
        ASSERT_EQ(0, lossy_rc(_metadata, &a, &b, 40000, 40000, 10000, 10000,
                              seed, 400, &r)) {
            TH_LOG("seed %" PRIu64, seed);
        }
        fake_free(a.f);
        fake_free(b.f);
    }
}

/*
 * Messages far longer than the 256-PSN window (1 MiB = 1024 PSNs at MTU
 * 1024) on a lossy wire: READ suffix retries deep inside the response
 * range, and WRITEs paced by the window.
 */
/*
 * SENDs of 64 KiB, eight at a time: the requester's packet window is full
 * all the time, and every loss is found in the middle of it. At twice
 * make check's fault rates (both ports), for twelve seeds, every SEND
 * completes successfully with its data.
 */
TEST(lossy_rc_full_window_sends)
{
    const uint32_t len = 64 * 1024, n = 8;

    for (uint64_t seed = 1; seed <= 12; seed++) {
        Node a, b;
        Qp qa, qb;
        uint64_t src, rbuf;
        uint32_t lsrc, lrbuf;

        node_init(&a, 1, false);
        node_init(&b, 2, false);
        fake_link(a.f, b.f);
        src = buf_alloc(&a, n * len);
        rbuf = buf_alloc(&b, n * len);
        lsrc = mr_any(&a, 0, src, n * len);
        lrbuf = mr_any(&b, VRNIC_ACCESS_LOCAL_WRITE, rbuf, n * len);
        qp_new(&qa, &a, VRNIC_QP_TYPE_RC, 0);
        qp_new(&qb, &b, VRNIC_QP_TYPE_RC, 0);
        connect(&qa, &qb, 3, 0x100, 0x200);
        set_faults(&a, 20000, 20000, 2000, 2000, seed);
        set_faults(&b, 20000, 20000, 2000, 2000, seed ^ 0x5555);
        for (unsigned round = 0; round < 4; round++) {
            struct vrnic_cqe e;

            for (unsigned k = 0; k < n; k++) {
                Sg s = { src + (uint64_t)k * len, len, lsrc };
                Sg rv = { rbuf + (uint64_t)k * len, len, lrbuf };

                fill(&a, s.addr, len, round * n + k + (uint32_t)seed);
                post_recv(&qb, k, &rv, 1);
                post_send(&qa, k, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0,
                          NULL, 0);
            }
            run_lossy(&a);
            for (unsigned k = 0; k < n; k++) {
                ASSERT_TRUE(poll(&a, true, &e)) {
                    TH_LOG("seed %" PRIu64 " round %u: %u of %u sends done",
                           seed, round, k, n);
                }
                ASSERT_EQ(VRNIC_WC_SUCCESS, e.status) {
                    TH_LOG("seed %" PRIu64 " round %u send %u", seed, round,
                           k);
                }
                ASSERT_TRUE(poll(&b, false, &e));
                ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
            }
            ASSERT_EQ(0, memcmp(fake_ptr(a.f, src), fake_ptr(b.f, rbuf),
                                n * len));
        }
        fake_free(a.f);
        fake_free(b.f);
    }
}

TEST_F(pair, lossy_rc_long_messages)
{
    const uint32_t len = 1u << 20;
    uint64_t src = buf_alloc(&self->a, 2 * len), dst = buf_alloc(&self->b, 2 * len);
    uint32_t lsrc = mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, src, 2 * len);
    uint32_t rdst = mr_any(&self->b, ACC_ALL, dst, 2 * len);
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 0xfffe00, 0x100);
    set_faults(&self->a, 20000, 20000, 2000, 2000, 9);
    set_faults(&self->b, 20000, 20000, 2000, 2000, 10);
    for (int round = 0; round < 3; round++) {
        Sg w = { src, len, lsrc }, r = { src + len, len, lsrc };

        fill(&self->a, src, len, 40 + round);
        fill(&self->b, dst + len, len, 50 + round);
        post_send(&qa, 1, VRNIC_WQE_OP_RDMA_WRITE, 0, &w, 1, dst, rdst, 0,
                  NULL, 0);
        post_send(&qa, 2, VRNIC_WQE_OP_RDMA_READ, 0, &r, 1, dst + len, rdst,
                  0, NULL, 0);
        run_lossy(&self->a);
        for (uint64_t id = 1; id <= 2; id++) {
            ASSERT_TRUE(poll(&self->a, true, &e)) {
                TH_LOG("round %d: WQE %" PRIu64 " did not complete", round,
                       id);
            }
            ASSERT_EQ(id, le64toh(e.wr_id));
            ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        }
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src), fake_ptr(self->b.f, dst),
                            len));
        ASSERT_EQ(0, memcmp(fake_ptr(self->a.f, src + len),
                            fake_ptr(self->b.f, dst + len), len));
    }
    log_counters(_metadata, "A", self->a.f->core.stats.port);
    ASSERT_LT(0, self->a.f->core.stats.port[VRNIC_PORT_STAT_RETRANSMITS]);
}

/* The same seed and traffic inject the same faults: a failure replays. */
TEST(lossy_rc_seed_reproduces)
{
    LossyRun r[2];

    for (int i = 0; i < 2; i++) {
        Node a, b;

        node_init(&a, 1, false);
        node_init(&b, 2, false);
        fake_link(a.f, b.f);
        ASSERT_EQ(0, lossy_rc(_metadata, &a, &b, 20000, 20000, 2000, 2000,
                              42, 200, &r[i]));
        fake_free(a.f);
        fake_free(b.f);
    }
    ASSERT_EQ(0, memcmp(r[0].counters, r[1].counters, sizeof(r[0].counters)));
}

/* Every request lost: retry_cnt (7) retransmissions after the first try,
 * then RETRY_EXC_ERR and ERR. */
TEST_F(pair, retry_exhaustion)
{
    uint64_t src = buf_alloc(&self->a, 100);
    Sg s = { src, 100, mr_any(&self->a, 0, src, 100) };
    uint64_t dst = buf_alloc(&self->b, 100);
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, 100);
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    set_faults(&self->a, VRNIC_FAULT_PPM, 0, 0, 0, 1);
    post_send(&qa, 9, VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0, NULL,
              0);
    run_lossy(&self->a);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_RETRY_EXC_ERR, e.status);
    ASSERT_EQ(9, le64toh(e.wr_id));
    ASSERT_EQ(VRNIC_QPS_ERR, qp_state(&qa));
    ASSERT_EQ(8, self->a.f->core.stats.port[VRNIC_PORT_STAT_TIMEOUTS]);
    ASSERT_EQ(7, self->a.f->core.stats.port[VRNIC_PORT_STAT_RETRANSMITS]);
    ASSERT_EQ(8, self->a.f->core.stats.port[VRNIC_PORT_STAT_FAULT_DROPS]);
    /* 4.096 us * 2^14 per timeout. */
    ASSERT_EQ(8 * (4096ll << 14), self->a.f->now_ns);
}

/* No receive WQE: RNR NAKs, each waited out (min_rnr_timer 12 = 0.64 ms),
 * then RNR_RETRY_EXC_ERR after rnr_retry (3) retries. */
TEST_F(pair, rnr_retry_exhaustion_and_recovery)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    Sg r = { dst, 64, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    qa.rnr_retry = 3;
    connect(&qa, &qb, 3, 1, 1);
    post_send(&qa, 1, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    run_lossy(&self->a);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_RNR_RETRY_EXC_ERR, e.status);
    ASSERT_EQ(4, self->b.f->core.stats.port[VRNIC_PORT_STAT_RNR_NAKS_SENT]);
    ASSERT_EQ(3, self->a.f->core.stats.port[VRNIC_PORT_STAT_RNR_RETRIES]);
    ASSERT_LE(3 * 640000ll, self->a.f->now_ns);     /* three RNR waits */

    /* Infinite RNR retry (7): the receive posted later is found. */
    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    post_send(&qa, 2, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    fake_fire_timer(self->a.f);
    fake_fire_timer(self->a.f);
    ASSERT_FALSE(poll(&self->a, true, &e));
    post_recv(&qb, 3, &r, 1);
    run_lossy(&self->a);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(2, le64toh(e.wr_id));
    ASSERT_TRUE(poll(&self->b, false, &e));
    ASSERT_EQ(3, le64toh(e.wr_id));
}

#define PORT(n, stat) ((n)->f->core.stats.port[VRNIC_PORT_STAT_##stat])

/*
 * End-to-end credits: SENDs wait for the receive WQEs the responder has
 * (its ACKs carry the count); one past the limit goes alone to learn it
 * again, and once the responder RNR NAKed and sent a credit update, not
 * before another update (or an RNR wait) comes.
 */
TEST_F(pair, sends_wait_for_end_to_end_credits)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64 * 8);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    uint32_t lkey = mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64 * 8);
    struct vrnic_cqe e;
    unsigned r = 0;
    Qp qa, qb;

#define RECV() do { \
        Sg g = { dst + 64 * r, 64, lkey }; \
        post_recv(&qb, r++, &g, 1); \
    } while (0)
    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    RECV();
    for (unsigned i = 0; i < 4; i++) {
        post_send(&qa, i, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    }
    /*
     * The first goes alone (no credits known yet); its ACK gives none, so
     * the second goes alone too, to an empty RQ: RNR NAK. The other two
     * never went.
     */
    fake_settle(self->a.f);
    ASSERT_EQ(2, PORT(&self->a, TX_PKTS));
    ASSERT_EQ(1, PORT(&self->b, RNR_NAKS_SENT));
    ASSERT_EQ(2, PORT(&self->a, CREDIT_WAITS));     /* the second, third */
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_FALSE(poll(&self->a, true, &e));

    /* Three receives: a credit update; after the RNR wait all three go. */
    RECV();
    RECV();
    RECV();
    ASSERT_EQ(1, PORT(&self->b, CREDIT_ACKS));
    fake_settle(self->a.f);
    ASSERT_FALSE(poll(&self->a, true, &e));
    ASSERT_TRUE(fake_fire_timer(self->a.f));
    fake_settle(self->a.f);
    for (unsigned i = 1; i < 4; i++) {
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
        ASSERT_EQ(i, le64toh(e.wr_id));
    }
    ASSERT_EQ(1, PORT(&self->b, RNR_NAKS_SENT));

    /*
     * The RQ is empty again, and this responder sends updates: the next
     * SEND waits for one instead of drawing an RNR NAK, and goes the
     * moment it comes - no timer fires.
     */
    post_send(&qa, 4, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_EQ(5, PORT(&self->a, TX_PKTS));      /* 2 + 3: nothing new */
    ASSERT_EQ(3, PORT(&self->a, CREDIT_WAITS));
    RECV();
    fake_settle(self->a.f);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(4, le64toh(e.wr_id));
    ASSERT_EQ(1, PORT(&self->b, RNR_NAKS_SENT));
    ASSERT_EQ(2, PORT(&self->b, CREDIT_ACKS));

    /* No update within an RNR wait: the limited SEND goes anyway. */
    post_send(&qa, 5, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    fake_settle(self->a.f);
    ASSERT_EQ(6, PORT(&self->a, TX_PKTS));
    ASSERT_TRUE(fake_fire_timer(self->a.f));
    fake_settle(self->a.f);
    ASSERT_EQ(7, PORT(&self->a, TX_PKTS));
    ASSERT_EQ(2, PORT(&self->b, RNR_NAKS_SENT));
    RECV();
    run_lossy(&self->a);
    ASSERT_TRUE(poll(&self->a, true, &e));
    ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    ASSERT_EQ(5, le64toh(e.wr_id));
    for (unsigned i = 0; i < r; i++) {
        ASSERT_TRUE(poll(&self->b, false, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    }
#undef RECV
}

/*
 * Credits count receive WQEs: WRITEs and READs never wait for them, a
 * WRITE with immediate does.
 */
TEST_F(pair, only_messages_taking_a_receive_wqe_wait_for_credits)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64);
    Sg s = { src, 64, mr_any(&self->a, VRNIC_ACCESS_LOCAL_WRITE, src, 64) };
    uint32_t rkey = mr_any(&self->b, ACC_ALL, dst, 64);
    struct vrnic_cqe e;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    for (unsigned i = 0; i < 6; i++) {
        post_send(&qa, i, i & 1 ? VRNIC_WQE_OP_RDMA_READ :
                  VRNIC_WQE_OP_RDMA_WRITE, 0, &s, 1, dst, rkey, 0, NULL, 0);
    }
    fake_settle(self->a.f);
    for (unsigned i = 0; i < 6; i++) {
        ASSERT_TRUE(poll(&self->a, true, &e));
        ASSERT_EQ(VRNIC_WC_SUCCESS, e.status);
    }
    ASSERT_EQ(0, PORT(&self->a, CREDIT_WAITS));
    /* The RQ is empty: the first WRITE_IMM goes alone, the second waits. */
    post_send(&qa, 6, VRNIC_WQE_OP_RDMA_WRITE_IMM, 0, &s, 1, dst, rkey, 7,
              NULL, 0);
    post_send(&qa, 7, VRNIC_WQE_OP_RDMA_WRITE_IMM, 0, &s, 1, dst, rkey, 8,
              NULL, 0);
    fake_settle(self->a.f);
    ASSERT_EQ(1, PORT(&self->b, RNR_NAKS_SENT));
    ASSERT_EQ(1, PORT(&self->a, CREDIT_WAITS));
    ASSERT_EQ(6 + 1, PORT(&self->a, TX_PKTS));
}

/*
 * A peer's credits are believed only for messages the requester started:
 * an ACK with an MSN past them (here before any message, with the largest
 * credit count) moves nothing, and SENDs still wait for real credits.
 */
TEST_F(pair, credits_for_messages_never_sent_are_ignored)
{
    uint64_t src = buf_alloc(&self->a, 64), dst = buf_alloc(&self->b, 64);
    Sg s = { src, 64, mr_any(&self->a, 0, src, 64) };
    Sg r = { dst, 64, mr_any(&self->b, VRNIC_ACCESS_LOCAL_WRITE, dst, 64) };
    VrnicPktAddr addr = { .hop_limit = 64, .udp_sport = 0xc000 };
    uint8_t frame[256];
    VrnicPktHdrs h;
    Qp qa, qb;

    qp_new(&qa, &self->a, VRNIC_QP_TYPE_RC, 0);
    qp_new(&qb, &self->b, VRNIC_QP_TYPE_RC, 0);
    connect(&qa, &qb, 3, 1, 1);
    memset(&h, 0, sizeof(h));
    memcpy(addr.smac, self->b.mac, 6);
    memcpy(addr.dmac, self->a.mac, 6);
    memcpy(addr.sgid, self->b.gid, 16);
    memcpy(addr.dgid, self->a.gid, 16);
    h.bth.opcode = VRNIC_OP(RC, ACK);
    h.bth.pkey = 0xffff;
    h.bth.dqpn = qa.qpn;
    h.bth.psn = 0;              /* the PSN before the first request */
    h.aeth.syndrome = 30;       /* ACK, 32768 credits */
    h.aeth.msn = 1000;
    fake_wire_put(self->a.f, frame,
                  vrnic_pkt_build(frame, sizeof(frame), &addr, &h, NULL, 0));
    fake_settle(self->a.f);

    /* One receive WQE: the first SEND takes it, the second draws an RNR
     * NAK as the limited WQE, the third never goes. */
    post_recv(&qb, 1, &r, 1);
    for (unsigned i = 0; i < 3; i++) {
        post_send(&qa, i, VRNIC_WQE_OP_SEND, 0, &s, 1, 0, 0, 0, NULL, 0);
    }
    fake_settle(self->a.f);
    ASSERT_EQ(2, PORT(&self->a, TX_PKTS));
    ASSERT_EQ(1, PORT(&self->b, RNR_NAKS_SENT));
}

TEST_HARNESS_MAIN
