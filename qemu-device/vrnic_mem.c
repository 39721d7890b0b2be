/*
 * vrnic memory translation: validating a vrnic_mem_desc, walking its page
 * tables, and DMA through the result. Used by MRs and by every queue ring
 * that lives in translated memory (CQs, QPs, SRQs).
 *
 * Rules (vrnic_hw_defs.h, "Memory descriptor"):
 *  - 12 <= page_shift <= 30, levels <= 3, no other flag bits;
 *  - 0 < length <= VRNIC_MAX_MR_SIZE and iova + length does not wrap;
 *  - npages equals the number of pages [iova, iova + length) touches and
 *    fits the levels (6 inline, 512, 512^2, 512^3);
 *  - inline page addresses (levels 0) are page-aligned, the root table
 *    (levels >= 1) is 4 KiB-aligned.
 * A page address walked from the tables is kept in the translation cache
 * (vrnic_tlb.c) under the descriptor's tlb_id until the memory is destroyed
 * or replaced, so the driver keeps its tables unchanged while the memory
 * lives (it may rely on nothing being cached once the destroying command
 * completed). A bad entry (unaligned page or table address, unreadable
 * table) fails that one access - never the device - and is not cached. A
 * fast-registration MR translates through the page list REG_MR copied into
 * the device (list), checked when it was copied.
 *
 * An on-demand memory (odp, vrnic_odp.c) has VRNIC_ODP_* bits in its leaf
 * entries: only a present entry is used or cached (with its bits, so that a
 * write finds out whether it may), and an absent one fails the access
 * quietly - the caller checked with vrnic_odp_mapped() first, so that is a
 * race the guest lost, not a bad table. A directory entry of 0 reads as
 * absent pages below it: its tables are sparse.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

#define VRNIC_TABLE_SHIFT   9       /* 512 entries per 4 KiB table page */
#define VRNIC_TABLE_PAGE    4096ull

static uint64_t vrnic_mem_max_pages(uint32_t levels)
{
    return levels == 0 ? VRNIC_MEM_INLINE_PAGES :
           1ull << (VRNIC_TABLE_SHIFT * levels);
}

bool vrnic_mem_shift_ok(uint32_t shift)
{
    return shift >= 12 && shift <= 30;
}

bool vrnic_mem_length_ok(uint64_t iova, uint64_t length)
{
    return length && length <= VRNIC_MAX_MR_SIZE && iova + length >= iova;
}

uint64_t vrnic_mem_span(uint64_t iova, uint64_t length, uint32_t shift)
{
    return ((iova + length - 1) >> shift) - (iova >> shift) + 1;
}

uint8_t vrnic_mem_parse(VrnicCore *core, const struct vrnic_mem_desc *d,
                        VrnicMem *m)
{
    uint32_t flags = le32_to_cpu(d->flags);
    uint32_t shift = VRNIC_FIELD_GET(VRNIC_MEM_PAGE_SHIFT_MASK, flags);
    uint32_t levels = VRNIC_FIELD_GET(VRNIC_MEM_LEVELS_MASK, flags);
    uint64_t iova = le64_to_cpu(d->iova);
    uint64_t length = le64_to_cpu(d->length);
    uint32_t npages = le32_to_cpu(d->npages);

    memset(m, 0, sizeof(*m));
    if (flags & ~(VRNIC_MEM_PAGE_SHIFT_MASK | VRNIC_MEM_LEVELS_MASK)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem flags", flags);
    }
    if (!vrnic_mem_shift_ok(shift)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem page_shift", shift);
    }
    if (levels > VRNIC_MEM_MAX_LEVELS) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem levels", levels);
    }
    if (!vrnic_mem_length_ok(iova, length)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem length", length);
    }
    if (npages != vrnic_mem_span(iova, length, shift)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem npages", npages);
    }
    if (npages > vrnic_mem_max_pages(levels)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem npages for levels",
                            npages);
    }
    m->iova = iova;
    m->length = length;
    m->page_shift = shift;
    m->levels = levels;
    m->npages = npages;
    for (int i = 0; i < VRNIC_MEM_INLINE_PAGES; i++) {
        m->pages[i] = le64_to_cpu(d->pages[i]);
    }
    if (levels == 0) {
        for (uint32_t i = 0; i < npages; i++) {
            if (m->pages[i] & ((1ull << shift) - 1)) {
                return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                                    "mem inline page unaligned", m->pages[i]);
            }
        }
    } else if (m->pages[0] & (VRNIC_TABLE_PAGE - 1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem table unaligned",
                            m->pages[0]);
    } else {
        m->tlb_id = vrnic_tlb_new_id(&core->tlb);
    }
    return VRNIC_AQ_STS_OK;
}

void vrnic_mem_init_dma(VrnicMem *m)
{
    memset(m, 0, sizeof(*m));
    m->dma = true;
    m->length = ~0ull;
}

bool vrnic_mem_contains(const VrnicMem *m, uint64_t addr, uint64_t len)
{
    /* Written so that nothing can wrap: addr + len is never computed. */
    return addr >= m->iova && len <= m->length &&
           addr - m->iova <= m->length - len;
}

/*
 * DMA address of page idx, walking the tables (levels >= 1) from the root.
 * The top level is indexed by the highest 9-bit group of idx. For an
 * on-demand memory, the leaf entry as it is: address and VRNIC_ODP_* bits.
 */
bool vrnic_mem_walk(VrnicCore *core, const VrnicMem *m, uint64_t idx,
                    uint64_t *pa)
{
    uint64_t addr;

    if (m->dma || idx >= m->npages) {
        return false;
    }
    if (m->list) {
        addr = m->list[idx];
    } else if (m->levels == 0) {
        addr = m->pages[idx];
    } else {
        addr = m->pages[0];
        for (int l = m->levels - 1; l >= 0; l--) {
            uint64_t slot = (idx >> (VRNIC_TABLE_SHIFT * l)) &
                            (VRNIC_MEM_TABLE_ENTRIES - 1);
            uint64_t entry;

            if (addr & (VRNIC_TABLE_PAGE - 1)) {
                VRNIC_GUEST_ERR(core, vrnic_err_xlate, "table 0x%" PRIx64
                                " for page %" PRIu64 " unaligned", addr, idx);
                return false;
            }
            if (!vrnic_dma_read(core, addr + slot * 8, &entry,
                                sizeof(entry))) {
                VRNIC_GUEST_ERR(core, vrnic_err_xlate, "table 0x%" PRIx64
                                " for page %" PRIu64 " unreadable", addr, idx);
                return false;
            }
            addr = le64_to_cpu(entry);
            /* On-demand: nothing below this directory entry is mapped. */
            if (m->odp && l && !addr) {
                *pa = 0;
                return true;
            }
        }
    }
    if ((addr & ~(m->odp ? VRNIC_ODP_ENTRY_FLAGS : 0)) &
        ((1ull << m->page_shift) - 1)) {
        VRNIC_GUEST_ERR(core, vrnic_err_xlate, "page 0x%" PRIx64
                        " (index %" PRIu64 ") not page-aligned", addr, idx);
        return false;
    }
    *pa = addr;
    return true;
}

bool vrnic_mem_page(VrnicCore *core, const VrnicMem *m, uint64_t idx,
                    uint64_t *pa)
{
    if (!m->tlb_id) {
        return vrnic_mem_walk(core, m, idx, pa);
    }
    if (vrnic_tlb_lookup(core, m->tlb_id, idx, pa)) {
        return true;
    }
    if (!vrnic_mem_walk(core, m, idx, pa)) {
        return false;
    }
    /* An absent on-demand page is read again next time: never cached. */
    if (!m->odp || (*pa & VRNIC_ODP_PRESENT)) {
        vrnic_tlb_fill(core, m->tlb_id, idx, *pa);
    }
    return true;
}

/*
 * Page idx of m for an access (write or not): its DMA address, or false if
 * the tables are bad or, on-demand, the page is not mapped for it.
 */
static bool vrnic_mem_page_for(VrnicCore *core, const VrnicMem *m,
                               uint64_t idx, bool write, uint64_t *pa)
{
    uint64_t need = VRNIC_ODP_PRESENT | (write ? VRNIC_ODP_WRITABLE : 0);

    if (!vrnic_mem_page(core, m, idx, pa)) {
        return false;
    }
    if (!m->odp) {
        return true;
    }
    if ((*pa & need) != need) {
        return false;
    }
    *pa &= ~(uint64_t)VRNIC_ODP_ENTRY_FLAGS;
    return true;
}

/*
 * Read or write [addr, addr + len) of translated memory, one page at a
 * time. False when the range is outside the memory, a table is bad or the
 * bus refused the access; a write may then have been partly done.
 */
bool vrnic_mem_rw(VrnicCore *core, const VrnicMem *m, uint64_t addr,
                  void *buf, uint64_t len, bool write)
{
    uint8_t *p = buf;
    uint64_t psz, off;

    if (!vrnic_mem_contains(m, addr, len)) {
        return false;
    }
    if (m->dma) {
        return write ? vrnic_dma_write(core, addr, buf, len) :
                       vrnic_dma_read(core, addr, buf, len);
    }
    if (m->devmem) {
        /* Bounded at registration: the MR lies inside the device memory. */
        uint8_t *dm = core->devmem + m->devmem_offset + (addr - m->iova);

        if (write) {
            memcpy(dm, buf, len);
        } else {
            memcpy(buf, dm, len);
        }
        return true;
    }
    psz = 1ull << m->page_shift;
    off = addr - (m->iova & ~(psz - 1));
    while (len) {
        uint64_t in = off & (psz - 1);
        uint64_t chunk = MIN(len, psz - in);
        uint64_t pa;
        bool ok;

        if (!vrnic_mem_page_for(core, m, off >> m->page_shift, write, &pa)) {
            return false;
        }
        ok = write ? vrnic_dma_write(core, pa + in, p, chunk) :
                     vrnic_dma_read(core, pa + in, p, chunk);
        if (!ok) {
            return false;
        }
        p += chunk;
        off += chunk;
        len -= chunk;
    }
    return true;
}

/* Ring helpers: offsets are relative to the start of the memory (iova). */
bool vrnic_mem_read_at(VrnicCore *core, const VrnicMem *m, uint64_t offset,
                       void *buf, uint64_t len)
{
    return offset <= m->length &&
           vrnic_mem_rw(core, m, m->iova + offset, buf, len, false);
}

bool vrnic_mem_write_at(VrnicCore *core, const VrnicMem *m, uint64_t offset,
                        const void *buf, uint64_t len)
{
    return offset <= m->length &&
           vrnic_mem_rw(core, m, m->iova + offset, (void *)buf, len, true);
}
