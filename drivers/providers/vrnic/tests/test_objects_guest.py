#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""libvrnic in a guest, without transport: objects, posting, flushes.

usage (in a guest): /usr/bin/python3 test_objects_guest.py [ibdev]

Each check is one TAP line. Nothing here needs a peer: WQEs are posted
with no syscall, moved out by modify-to-ERR (the device flushes them as
IBV_WC_WR_FLUSH_ERR, signaled or not) and polled with no syscall.
Device memory (ibv_alloc_dm): no allocation shows what an earlier one, or
another process, left there; allocations above max_dm_size fail.
"""
import errno
import subprocess
import sys

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from pyverbs.device import DM, AllocDmAttr, Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

DEV = sys.argv[1] if len(sys.argv) > 1 else "vrnic0"
n = 0
failed = 0


def check(cond, what):
    global n, failed
    n += 1
    print(f"{'ok' if cond else 'not ok'} {n} {what}", flush=True)
    if not cond:
        failed += 1


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


def gid_route(ctx):
    return GlobalRoute(dgid=ctx.query_gid(1, 0), sgid_index=0)


def rc_to_rts(ctx, qp):
    qa = QPAttr()
    qa.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
    qp.to_init(qa)
    qa = QPAttr()
    qa.path_mtu = e.IBV_MTU_1024
    # A QPN nobody owns: the device transmits (loopback to its own GID), the
    # responder drops the packets, no ACK comes back, so posted sends wait
    # until ERR flushes them (retransmission is not implemented yet).
    qa.dest_qp_num = 0xfff0
    qa.rq_psn = 0
    qa.max_dest_rd_atomic = 1
    qa.min_rnr_timer = 12
    qa.ah_attr = AHAttr(port_num=1, is_global=1, gr=gid_route(ctx))
    qp.to_rtr(qa)
    qa.sq_psn = 0
    qa.timeout = 14
    qa.retry_cnt = 7
    qa.rnr_retry = 7
    qa.max_rd_atomic = 1
    qp.to_rts(qa)


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


def dm_checks(ctx):
    """Device memory: no allocation shows an earlier owner's data."""
    size = ctx.query_device_ex().max_dm_size
    if not size:
        check(True, "device memory # SKIP max_dm_size is 0")
        return
    check(size >= 4096 and size & (size - 1) == 0,
          f"max_dm_size {size}: a power of two, at least 4 KiB")
    # Never a zero byte, so a leak cannot pass for a zeroed allocation.
    pattern = bytes((i * 7 + i // 251) % 255 + 1 for i in range(size))
    zeros = bytes(size)

    dm = DM(ctx, AllocDmAttr(size))
    check(dm.copy_from_dm(0, size) == zeros,
          f"a fresh {size}-byte allocation (all of it) reads back zeros")
    dm.copy_to_dm(0, pattern, size)
    check(dm.copy_from_dm(0, size) == pattern,
          "pattern written over all of device memory reads back")
    try:
        DM(ctx, AllocDmAttr(4)).close()
        check(False, "all of device memory taken: a further allocation fails")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.ENOMEM,
              f"all of device memory taken: alloc_dm(4) -> ENOMEM "
              f"({ex.error_code})")
    dm.close()

    dm = DM(ctx, AllocDmAttr(size))
    check(dm.copy_from_dm(0, size) == zeros,
          "freed and allocated again: all zeros, none of the pattern")
    dm.copy_to_dm(0, pattern, size)
    dm.close()
    # Smaller pieces over the same pattern (as many as fit, in whole
    # pages): each one zeroed, up to its end.
    lens, pages = [], 0
    for ln in (4, 4096 + 4, 3 * 4096):
        pages += (ln + 4095) // 4096
        if pages * 4096 <= size:
            lens.append(ln)
    parts = [DM(ctx, AllocDmAttr(ln)) for ln in lens]
    check(all(d.copy_from_dm(0, ln) == bytes(ln)
              for d, ln in zip(parts, lens)),
          f"allocations of {lens} bytes over the pattern read zeros")
    for d in parts:
        d.close()

    # Another process's data, left behind when it exits without freeing.
    child = subprocess.run([sys.executable, "-c", DM_CHILD, DEV, str(size)],
                           capture_output=True, text=True, timeout=120)
    why = child.stderr.strip()[-200:] if child.returncode else ""
    check(child.returncode == 0 and child.stdout.strip() == "filled",
          f"a child process filled all of device memory and exited "
          f"(rc {child.returncode}{' ' + why if why else ''})")
    try:
        dm = DM(ctx, AllocDmAttr(size))
        check(dm.copy_from_dm(0, size) == zeros,
              "after the child's exit: all of device memory, all zeros")
        dm.close()
    except PyverbsRDMAError as ex:
        check(False, f"after the child's exit its allocation is back "
                     f"({ex.error_code})")

    for ln in (size + 4, 2 * size):
        try:
            DM(ctx, AllocDmAttr(ln)).close()
            check(False, f"alloc_dm({ln}) above max_dm_size {size} fails")
        except PyverbsRDMAError as ex:
            check(ex.error_code == errno.EINVAL,
                  f"alloc_dm({ln}) above max_dm_size -> EINVAL "
                  f"({ex.error_code})")


def main():
    print("TAP version 13")
    ctx = Context(name=DEV)
    pd = PD(ctx)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    sge = SGE(mr.buf, 64, mr.lkey)

    # RC QP: post in RTS, flush by ERR, in order, signaled or not.
    cq = CQ(ctx, 16, None, None, 0)
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1,
                max_recv_sge=1, max_inline_data=32)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    attr, init = qp.query(e.IBV_QP_CAP)
    check(init.cap.max_send_wr >= 8 and init.cap.max_inline_data >= 32,
          f"RC QP {qp.qp_num} caps {init.cap.max_send_wr}/"
          f"{init.cap.max_recv_wr}/{init.cap.max_inline_data}")
    rc_to_rts(ctx, qp)
    check(qp.qp_state == e.IBV_QPS_RTS, "RC QP to RTS")
    for i in range(3):
        qp.post_recv(RecvWR(wr_id=0x100 + i, num_sge=1, sg=[sge]))
    qp.post_send(SendWR(wr_id=0x200, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[sge], send_flags=e.IBV_SEND_SIGNALED))
    qp.post_send(SendWR(wr_id=0x201, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[sge]))
    check(cq.poll(1)[0] == 0, "nothing completes while the peer QP never answers")
    to_err(qp)
    wcs = poll_all(cq, 5)
    got = sorted((w.wr_id, w.status) for w in wcs)
    check(got == [(0x100, 5), (0x101, 5), (0x102, 5), (0x200, 5),
                  (0x201, 5)],
          f"ERR flushes 3 receives + 2 sends (one unsignaled): "
          f"{[hex(w.wr_id) for w in wcs]}")
    check([w.wr_id for w in wcs if w.opcode == e.IBV_WC_RECV] ==
          [0x100, 0x101, 0x102], "receive flushes in order, opcode RECV")
    qp.post_send(SendWR(wr_id=0x202, opcode=e.IBV_WR_SEND, num_sge=1,
                        sg=[sge]))
    wcs = poll_all(cq, 1)
    check(len(wcs) == 1 and wcs[0].wr_id == 0x202 and wcs[0].status == 5,
          "a post in ERR is flushed")
    too_many = init.cap.max_send_sge + 1
    try:
        qp.post_send(SendWR(wr_id=0x203, opcode=e.IBV_WR_SEND,
                            num_sge=too_many, sg=[sge] * too_many))
        check(False, "num_sge above the QP's limit refused")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.EINVAL, "num_sge above limit -> EINVAL")
    qp.close()
    cq.close()

    # Completion channel: arm, flush, event.
    cc = CompChannel(ctx)
    cq = CQ(ctx, 8, None, cc, 0)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    qp.to_init(QPAttr())
    qp.post_recv(RecvWR(wr_id=0x300, num_sge=1, sg=[sge]))
    cq.req_notify()
    to_err(qp)
    cc.get_cq_event(cq)
    cq.ack_events(1)
    wcs = poll_all(cq, 1)
    check(len(wcs) == 1 and wcs[0].wr_id == 0x300,
          "armed CQ: flush raises a completion event")
    qp.post_recv(RecvWR(wr_id=0x301, num_sge=1, sg=[sge]))
    wcs = poll_all(cq, 1)
    qp.post_recv(RecvWR(wr_id=0x302, num_sge=1, sg=[sge]))
    # The flush CQE is (or is about to be) there: the arm must fire.
    cq.req_notify()
    cc.get_cq_event(cq)
    cq.ack_events(1)
    wcs = poll_all(cq, 1)
    check(len(wcs) == 1 and wcs[0].wr_id == 0x302,
          "arm with a CQE already pending fires at once")
    qp.close()
    cq.close()
    cc.close()

    # Resize with CQEs outstanding.
    cq = CQ(ctx, 8, None, None, 0)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    qp.to_init(QPAttr())
    for i in range(5):
        qp.post_recv(RecvWR(wr_id=0x400 + i, num_sge=1, sg=[sge]))
    to_err(qp)
    wcs = poll_all(cq, 1)
    try:
        cq.resize(2)
        check(False, "resize below the unpolled CQEs refused")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.EINVAL,
              f"resize(2) with 4 unpolled CQEs -> EINVAL ({ex.error_code})")
    cq.resize(32)
    wcs += poll_all(cq, 4)
    check(cq.cqe >= 32 and [w.wr_id for w in wcs] ==
          [0x400 + i for i in range(5)],
          f"resize(32) keeps the unpolled CQEs in order (cqe {cq.cqe})")
    qp.close()
    cq.close()

    # UD QP + AH.
    cq = CQ(ctx, 8, None, None, 0)
    ud = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
    ah = AH(pd, attr=AHAttr(port_num=1, is_global=1, gr=gid_route(ctx)))
    qa = QPAttr()
    qa.qkey = 0x1234
    ud.to_init(qa)
    ud.to_rtr(qa)
    ud.to_rts(qa)
    wr = SendWR(wr_id=0x500, opcode=e.IBV_WR_SEND, num_sge=1, sg=[sge],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_ud(ah, ud.qp_num, 0x1234)
    ud.post_send(wr)
    check(True, f"UD post_send with an AH (QP {ud.qp_num})")
    to_err(ud)
    wcs = poll_all(cq, 1)
    check(len(wcs) == 1 and wcs[0].wr_id == 0x500 and wcs[0].status in (0, 5),
          f"UD send completes or flushes (status {wcs[0].status if wcs else None})")
    ud.close()
    ah.close()
    cq.close()

    # SRQ.
    cq = CQ(ctx, 8, None, None, 0)
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=4, max_sge=1)))
    sa = srq.query()
    check(sa.max_wr >= 4, f"SRQ max_wr {sa.max_wr}")
    for i in range(4):
        srq.post_recv(RecvWR(wr_id=0x600 + i, num_sge=1, sg=[sge]))
    try:
        srq.post_recv(RecvWR(wr_id=0x604, num_sge=1, sg=[sge]))
        check(sa.max_wr > 4, "SRQ full refuses")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.ENOMEM, "5th receive on a 4-deep SRQ -> ENOMEM")
    sqp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq,
                            cap=QPCap(max_send_wr=4, max_recv_wr=0,
                                      max_send_sge=1, max_recv_sge=0)))
    check(True, f"QP {sqp.qp_num} on the SRQ")
    sqp.close()
    srq.close()
    cq.close()

    # Extended QP and CQ: ibv_wr_* and start/next/end_poll.
    cqa = CqInitAttrEx(cqe=8, wc_flags=e.IBV_WC_EX_WITH_BYTE_LEN |
                       e.IBV_WC_EX_WITH_QP_NUM)
    cqx = CQEX(ctx, cqa)
    qia = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cqx, rcq=cqx, cap=cap, pd=pd,
                       comp_mask=e.IBV_QP_INIT_ATTR_PD |
                       e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                       send_ops_flags=e.IBV_QP_EX_WITH_SEND |
                       e.IBV_QP_EX_WITH_RDMA_WRITE)
    qpx = QPEx(ctx, qia)
    rc_to_rts(ctx, qpx)
    qpx.wr_start()
    qpx.wr_id = 0x700
    qpx.wr_flags = e.IBV_SEND_SIGNALED
    qpx.wr_send()
    qpx.wr_set_sge(SGE(mr.buf, 16, mr.lkey))
    qpx.wr_id = 0x701
    qpx.wr_flags = 0
    qpx.wr_rdma_write(0x1234, mr.buf)
    qpx.wr_set_inline_data(mr.buf, 12)
    qpx.wr_complete()
    check(True, "ibv_wr_start/send/rdma_write/complete")
    to_err(qpx)
    ids = []
    for _ in range(1000):
        if cqx.start_poll(PollCqAttr()) == 0:
            break
    else:
        cqx = None
    if cqx:
        ids.append((cqx.wr_id, cqx.status, cqx.read_qp_num()))
        while cqx.poll_next() == 0:
            ids.append((cqx.wr_id, cqx.status, cqx.read_qp_num()))
        cqx.end_poll()
    check([i[0] for i in ids] == [0x700, 0x701] and
          all(i[1] == 5 and i[2] == qpx.qp_num for i in ids),
          f"extended poll: {[(hex(a), b) for a, b, _ in ids]}")
    qpx.close()

    dm_checks(ctx)

    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
