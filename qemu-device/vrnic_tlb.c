/*
 * vrnic translation cache (TLB): page addresses the table walker found,
 * kept so that the next access to the same page of the same memory does not
 * read the guest's tables again.
 *
 * Only tabled memories (levels 1..3) are cached: inline pages, DMA MRs,
 * device memory and fast-registration lists are already in the device.
 * Entries are tagged with the memory's translation id (VrnicMem.tlb_id),
 * which vrnic_mem_parse hands out once per accepted descriptor and never
 * reuses. So every command that ends a translation - DEREG_MR, REREG_MR with
 * new pages, DESTROY_CQ/QP/SRQ, RESIZE_CQ, a failed creation - makes its
 * entries unreachable by dropping the id with the memory, and a new
 * registration at the same tables starts empty: exact invalidation without
 * a search. Device reset and changes to the guest's memory map
 * (vrnic_core_memory_changed) drop everything.
 *
 * The cache is direct-mapped: a page of a memory always lands in the same
 * slot, and consecutive pages of one memory in consecutive slots.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

static VrnicTlbEntry *vrnic_tlb_slot(VrnicTlb *tlb, uint64_t id, uint64_t idx)
{
    /* Spread memories over the table; keep one memory's pages adjacent. */
    uint64_t base = (id * 0x9e3779b97f4a7c15ull) >> 40;

    return &tlb->e[(base + idx) & (VRNIC_TLB_ENTRIES - 1)];
}

uint64_t vrnic_tlb_new_id(VrnicTlb *tlb)
{
    return ++tlb->next_id;
}

bool vrnic_tlb_lookup(VrnicCore *core, uint64_t id, uint64_t idx,
                      uint64_t *pa)
{
    VrnicTlbEntry *e = vrnic_tlb_slot(&core->tlb, id, idx);

    if (e->id == id && e->idx == idx) {
        core->stats.port[VRNIC_PORT_STAT_XLATE_HITS]++;
        *pa = e->pa;
        return true;
    }
    core->stats.port[VRNIC_PORT_STAT_XLATE_MISSES]++;
    return false;
}

void vrnic_tlb_fill(VrnicCore *core, uint64_t id, uint64_t idx, uint64_t pa)
{
    *vrnic_tlb_slot(&core->tlb, id, idx) = (VrnicTlbEntry) {
        .id = id, .idx = idx, .pa = pa,
    };
}

/* Ids go on counting: a memory parsed before the flush still misses. */
void vrnic_tlb_flush(VrnicCore *core)
{
    trace_vrnic_tlb_flush(core->tlb.next_id);
    memset(core->tlb.e, 0, sizeof(core->tlb.e));
}

void vrnic_core_memory_changed(VrnicCore *core)
{
    vrnic_tlb_flush(core);
}
