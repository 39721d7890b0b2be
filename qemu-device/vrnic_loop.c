/*
 * vrnic loopback wire: a frame the transport addresses to one of the
 * device's own GIDs is not sent on the wire but queued (VRNIC_LOOP_SLOTS
 * frames) and received from the queue bottom half, so a QP can talk to a
 * QP on the same device without re-entering the core. A multicast send
 * with members on this device is queued here too (besides going on the
 * wire), and so is a raw packet QP's frame a flow rule of this device
 * takes (vrnic_flow.c). A full queue holds the sender back (nothing is
 * dropped). Each frame keeps the QPN that sent it, so an RC/UC QP takes
 * loopback frames only from the QP it is connected to (vrnic_recv.c) and
 * a raw frame never reaches its sender's own rules.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"
#include "vrnic_xport.h"

void vrnic_loop_init(VrnicCore *core)
{
    core->loop = g_new0(VrnicLoop, 1);
}

void vrnic_loop_uninit(VrnicCore *core)
{
    g_free(core->loop);
    core->loop = NULL;
}

void vrnic_loop_reset(VrnicCore *core)
{
    core->loop->head = core->loop->tail = 0;
}

bool vrnic_loop_has_room(VrnicCore *core)
{
    return core->loop->tail - core->loop->head < VRNIC_LOOP_SLOTS;
}

void vrnic_loop_put(VrnicCore *core, uint32_t qpn, const uint8_t *frame,
                    size_t len, bool raw)
{
    VrnicLoop *l = core->loop;
    uint32_t slot = l->tail % VRNIC_LOOP_SLOTS;

    assert(vrnic_loop_has_room(core) && len <= VRNIC_LOOP_FRAME);
    memcpy(l->frame[slot], frame, len);
    l->len[slot] = len;
    l->src_qpn[slot] = qpn;
    l->raw[slot] = raw;
    l->tail++;
    vrnic_core_kick(core, VRNIC_WORK_QUEUES);
}

void vrnic_loop_process(VrnicCore *core)
{
    VrnicLoop *l = core->loop;
    uint8_t frame[VRNIC_LOOP_FRAME] VRNIC_UNINITIALIZED;
    unsigned n = 0;

    while (l->head != l->tail && n++ < VRNIC_LOOP_SLOTS) {
        uint32_t slot = l->head % VRNIC_LOOP_SLOTS;
        uint32_t len = l->len[slot];
        uint32_t src = l->src_qpn[slot];

        /* Dequeue first: handling the frame may queue answers. */
        memcpy(frame, l->frame[slot], len);
        l->head++;
        if (l->raw[slot]) {
            vrnic_flow_rx(core, frame, len, src);
            continue;
        }
        core->rx_loop_src = src;
        core->stats.port[VRNIC_PORT_STAT_LOOP_PKTS]++;
        vrnic_rx_frame(core, frame, len);
        core->rx_loop_src = 0;
    }
    if (l->head != l->tail) {
        vrnic_core_kick(core, VRNIC_WORK_QUEUES);
    }
}
