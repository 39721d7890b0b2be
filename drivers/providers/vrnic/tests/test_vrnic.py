# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""
libvrnic's own tests, in rdma-core's tests/ framework: objects, posting and
flushes on one device, with no peer. WQEs are posted with no system call,
moved out by modify-to-ERR (the device flushes them as IBV_WC_WR_FLUSH_ERR,
signaled or not) and polled with no system call. Device memory: no
allocation shows what an earlier one, or another process, left there.
"""
import errno
import subprocess
import sys
import unittest

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from pyverbs.device import DM, AllocDmAttr
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from tests.base import PyverbsAPITestCase

VRNIC_PCI_VENDOR_ID = 0x1234
VRNIC_PCI_DEVICE_ID = 0x7672
# A QPN nobody owns: the device transmits (to its own GID), nothing
# answers, so posted sends wait until ERR flushes them.
NO_PEER_QPN = 0xfff0

# A process that fills all of device memory and exits without freeing it:
# the kernel takes the allocation back when the process goes.
DM_CHILD = """
import os, sys
from pyverbs.device import DM, AllocDmAttr, Context
ctx = Context(name=sys.argv[1])
size = int(sys.argv[2])
dm = DM(ctx, AllocDmAttr(size))
dm.copy_to_dm(0, bytes([0xc3]) * size, size)
ok = dm.copy_from_dm(size - 4, 4) == bytes([0xc3]) * 4
print("filled" if ok else "not filled", flush=True)
os._exit(0)
"""


def poll_all(cq, want, tries=2000):
    wcs = []
    for _ in range(tries):
        cnt, got = cq.poll(want - len(wcs))
        wcs += got[:cnt]
        if len(wcs) >= want:
            break
    return wcs


def to_err(qp):
    qa = QPAttr()
    qa.qp_state = e.IBV_QPS_ERR
    qp.modify(qa, e.IBV_QP_STATE)


class VrnicAPITestCase(PyverbsAPITestCase):
    """A vrnic device, a PD and a 4 KiB MR; skips on any other device."""

    def setUp(self):
        super().setUp()
        if (self.attr.vendor_id, self.attr.vendor_part_id) != \
                (VRNIC_PCI_VENDOR_ID, VRNIC_PCI_DEVICE_ID):
            raise unittest.SkipTest('Not a vrnic device')
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        self.sge = SGE(self.mr.buf, 64, self.mr.lkey)
        self.cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1,
                         max_recv_sge=1, max_inline_data=32)

    def route(self):
        return GlobalRoute(dgid=self.ctx.query_gid(self.ib_port,
                                                   self.gid_index),
                           sgid_index=self.gid_index)

    def rc_qp(self, cq):
        return QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                                      cap=self.cap))

    def to_rts(self, qp):
        qa = QPAttr()
        qa.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
        qp.to_init(qa)
        qa = QPAttr()
        qa.path_mtu = e.IBV_MTU_1024
        qa.dest_qp_num = NO_PEER_QPN
        qa.rq_psn = 0
        qa.max_dest_rd_atomic = 1
        qa.min_rnr_timer = 12
        qa.ah_attr = AHAttr(port_num=self.ib_port, is_global=1,
                            gr=self.route())
        qp.to_rtr(qa)
        qa.sq_psn = 0
        qa.timeout = 14
        qa.retry_cnt = 7
        qa.rnr_retry = 7
        qa.max_rd_atomic = 1
        qp.to_rts(qa)

    def test_rc_flush(self):
        """ERR flushes every WQE, in order, signaled or not; posts in ERR
        are flushed; num_sge above the QP's is refused."""
        cq = CQ(self.ctx, 16, None, None, 0)
        qp = self.rc_qp(cq)
        _, init = qp.query(e.IBV_QP_CAP)
        self.assertGreaterEqual(init.cap.max_send_wr, 8)
        self.assertGreaterEqual(init.cap.max_inline_data, 32)
        self.to_rts(qp)
        self.assertEqual(qp.qp_state, e.IBV_QPS_RTS)
        for i in range(3):
            qp.post_recv(RecvWR(wr_id=0x100 + i, num_sge=1, sg=[self.sge]))
        qp.post_send(SendWR(wr_id=0x200, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[self.sge], send_flags=e.IBV_SEND_SIGNALED))
        qp.post_send(SendWR(wr_id=0x201, opcode=e.IBV_WR_RDMA_WRITE,
                            num_sge=1, sg=[self.sge]))
        self.assertEqual(cq.poll(1)[0], 0,
                         'nothing completes while the peer never answers')
        to_err(qp)
        wcs = poll_all(cq, 5)
        self.assertEqual(sorted((w.wr_id, w.status) for w in wcs),
                         [(0x100, e.IBV_WC_WR_FLUSH_ERR),
                          (0x101, e.IBV_WC_WR_FLUSH_ERR),
                          (0x102, e.IBV_WC_WR_FLUSH_ERR),
                          (0x200, e.IBV_WC_WR_FLUSH_ERR),
                          (0x201, e.IBV_WC_WR_FLUSH_ERR)])
        self.assertEqual([w.wr_id for w in wcs if w.opcode == e.IBV_WC_RECV],
                         [0x100, 0x101, 0x102])
        qp.post_send(SendWR(wr_id=0x202, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[self.sge]))
        wcs = poll_all(cq, 1)
        self.assertEqual([(w.wr_id, w.status) for w in wcs],
                         [(0x202, e.IBV_WC_WR_FLUSH_ERR)])
        too_many = init.cap.max_send_sge + 1
        with self.assertRaises(PyverbsRDMAError) as ex:
            qp.post_send(SendWR(wr_id=0x203, opcode=e.IBV_WR_SEND,
                                num_sge=too_many, sg=[self.sge] * too_many))
        self.assertEqual(ex.exception.error_code, errno.EINVAL)
        qp.close()
        cq.close()

    def test_cq_events(self):
        """An armed CQ raises an event for a flush; an arm with a CQE
        already pending fires at once."""
        cc = CompChannel(self.ctx)
        cq = CQ(self.ctx, 8, None, cc, 0)
        qp = self.rc_qp(cq)
        qp.to_init(QPAttr())
        qp.post_recv(RecvWR(wr_id=0x300, num_sge=1, sg=[self.sge]))
        cq.req_notify()
        to_err(qp)
        cc.get_cq_event(cq)
        cq.ack_events(1)
        self.assertEqual([w.wr_id for w in poll_all(cq, 1)], [0x300])
        qp.post_recv(RecvWR(wr_id=0x301, num_sge=1, sg=[self.sge]))
        poll_all(cq, 1)
        qp.post_recv(RecvWR(wr_id=0x302, num_sge=1, sg=[self.sge]))
        cq.req_notify()
        cc.get_cq_event(cq)
        cq.ack_events(1)
        self.assertEqual([w.wr_id for w in poll_all(cq, 1)], [0x302])
        qp.close()
        cq.close()
        cc.close()

    def test_cq_resize(self):
        """Resize refuses to drop unpolled CQEs and keeps them in order."""
        cq = CQ(self.ctx, 8, None, None, 0)
        qp = self.rc_qp(cq)
        qp.to_init(QPAttr())
        for i in range(5):
            qp.post_recv(RecvWR(wr_id=0x400 + i, num_sge=1, sg=[self.sge]))
        to_err(qp)
        wcs = poll_all(cq, 1)
        with self.assertRaises(PyverbsRDMAError) as ex:
            cq.resize(2)
        self.assertEqual(ex.exception.error_code, errno.EINVAL)
        cq.resize(32)
        wcs += poll_all(cq, 4)
        self.assertGreaterEqual(cq.cqe, 32)
        self.assertEqual([w.wr_id for w in wcs], [0x400 + i for i in range(5)])
        qp.close()
        cq.close()

    def test_ud_ah(self):
        """A UD send through an AH completes or is flushed."""
        cq = CQ(self.ctx, 8, None, None, 0)
        ud = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                                    cap=self.cap))
        ah = AH(self.pd, attr=AHAttr(port_num=self.ib_port, is_global=1,
                                     gr=self.route()))
        qa = QPAttr()
        qa.qkey = 0x1234
        ud.to_init(qa)
        ud.to_rtr(qa)
        ud.to_rts(qa)
        wr = SendWR(wr_id=0x500, opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[self.sge], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_ud(ah, ud.qp_num, 0x1234)
        ud.post_send(wr)
        to_err(ud)
        wcs = poll_all(cq, 1)
        self.assertEqual(len(wcs), 1)
        self.assertEqual(wcs[0].wr_id, 0x500)
        self.assertIn(wcs[0].status, (e.IBV_WC_SUCCESS,
                                      e.IBV_WC_WR_FLUSH_ERR))
        ud.close()
        ah.close()
        cq.close()

    def test_srq_full(self):
        """An SRQ takes max_wr receives, then ENOMEM; a QP attaches."""
        cq = CQ(self.ctx, 8, None, None, 0)
        srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=4, max_sge=1)))
        sa = srq.query()
        self.assertGreaterEqual(sa.max_wr, 4)
        for i in range(sa.max_wr):
            srq.post_recv(RecvWR(wr_id=0x600 + i, num_sge=1, sg=[self.sge]))
        with self.assertRaises(PyverbsRDMAError) as ex:
            srq.post_recv(RecvWR(wr_id=0x6ff, num_sge=1, sg=[self.sge]))
        self.assertEqual(ex.exception.error_code, errno.ENOMEM)
        QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq,
                               cap=QPCap(max_send_wr=4, max_recv_wr=0,
                                         max_send_sge=1,
                                         max_recv_sge=0))).close()
        srq.close()
        cq.close()

    def test_wr_api_and_extended_poll(self):
        """ibv_wr_* posts; the extended poll API returns the flushes."""
        cqa = CqInitAttrEx(cqe=8, wc_flags=e.IBV_WC_EX_WITH_BYTE_LEN |
                           e.IBV_WC_EX_WITH_QP_NUM)
        cqx = CQEX(self.ctx, cqa)
        qia = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cqx, rcq=cqx,
                           cap=self.cap, pd=self.pd,
                           comp_mask=e.IBV_QP_INIT_ATTR_PD |
                           e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                           send_ops_flags=e.IBV_QP_EX_WITH_SEND |
                           e.IBV_QP_EX_WITH_RDMA_WRITE)
        qpx = QPEx(self.ctx, qia)
        self.to_rts(qpx)
        qpx.wr_start()
        qpx.wr_id = 0x700
        qpx.wr_flags = e.IBV_SEND_SIGNALED
        qpx.wr_send()
        qpx.wr_set_sge(SGE(self.mr.buf, 16, self.mr.lkey))
        qpx.wr_id = 0x701
        qpx.wr_flags = 0
        qpx.wr_rdma_write(0x1234, self.mr.buf)
        qpx.wr_set_inline_data(self.mr.buf, 12)
        qpx.wr_complete()
        to_err(qpx)
        for _ in range(1000):
            if cqx.start_poll(PollCqAttr()) == 0:
                break
        else:
            self.fail('no completion after ERR')
        ids = [(cqx.wr_id, cqx.status, cqx.read_qp_num())]
        while cqx.poll_next() == 0:
            ids.append((cqx.wr_id, cqx.status, cqx.read_qp_num()))
        cqx.end_poll()
        self.assertEqual(ids, [(0x700, e.IBV_WC_WR_FLUSH_ERR, qpx.qp_num),
                               (0x701, e.IBV_WC_WR_FLUSH_ERR, qpx.qp_num)])
        qpx.close()
        cqx.close()

    def test_device_memory_isolation(self):
        """No device memory allocation shows an earlier owner's data, nor a
        process's that exited without freeing; above max_dm_size fails."""
        size = self.attr_ex.max_dm_size
        if not size:
            raise unittest.SkipTest('max_dm_size is 0')
        self.assertTrue(size >= 4096 and size & (size - 1) == 0)
        # Never a zero byte, so a leak cannot pass for a zeroed allocation.
        pattern = bytes((i * 7 + i // 251) % 255 + 1 for i in range(size))
        zeros = bytes(size)

        dm = DM(self.ctx, AllocDmAttr(size))
        self.assertEqual(dm.copy_from_dm(0, size), zeros)
        dm.copy_to_dm(0, pattern, size)
        self.assertEqual(dm.copy_from_dm(0, size), pattern)
        with self.assertRaises(PyverbsRDMAError) as ex:
            DM(self.ctx, AllocDmAttr(4)).close()
        self.assertEqual(ex.exception.error_code, errno.ENOMEM)
        dm.close()

        dm = DM(self.ctx, AllocDmAttr(size))
        self.assertEqual(dm.copy_from_dm(0, size), zeros,
                         'freed and allocated again: none of the pattern')
        dm.copy_to_dm(0, pattern, size)
        dm.close()
        # Smaller pieces over the pattern (as many as fit, in whole pages).
        lens, pages = [], 0
        for ln in (4, 4096 + 4, 3 * 4096):
            pages += (ln + 4095) // 4096
            if pages * 4096 <= size:
                lens.append(ln)
        parts = [DM(self.ctx, AllocDmAttr(ln)) for ln in lens]
        for d, ln in zip(parts, lens):
            self.assertEqual(d.copy_from_dm(0, ln), bytes(ln))
        for d in parts:
            d.close()

        child = subprocess.run([sys.executable, '-c', DM_CHILD,
                                self.dev_name, str(size)],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual((child.returncode, child.stdout.strip()),
                         (0, 'filled'), child.stderr[-200:])
        dm = DM(self.ctx, AllocDmAttr(size))
        self.assertEqual(dm.copy_from_dm(0, size), zeros,
                         "after the child's exit: all zeros")
        dm.close()

        for ln in (size + 4, 2 * size):
            with self.assertRaises(PyverbsRDMAError) as ex:
                DM(self.ctx, AllocDmAttr(ln)).close()
            self.assertEqual(ex.exception.error_code, errno.EINVAL)

    def tearDown(self):
        for obj in ('mr', 'pd'):
            if getattr(self, obj, None):
                getattr(self, obj).close()
        super().tearDown()
