/*
 * vrnic protection domains and memory regions: ALLOC_PD, DEALLOC_PD, REG_MR,
 * REREG_MR, DEREG_MR, QUERY_MR, and the check every data access makes.
 *
 * Keys: lkey = rkey = mr index (bits 31:8, 1 .. max_mr) | key byte (7:0,
 * chosen by the consumer at REG_MR/REREG_MR). A key works only while its
 * index holds a live MR with that key byte, so a key kept after DEREG_MR, or
 * after REREG_MR with a new key byte, is refused. Indices are handed out
 * next-fit, so a freed index comes back as late as possible.
 *
 * A DMA MR (VRNIC_MR_FLAG_DMA, get_dma_mr) translates identity over the
 * whole DMA space (mem.iova 0, mem.length ~0, no pages) and grants local
 * access only: REMOTE_* rights are refused at registration, and so is a
 * PD of a user context (its uctx is not 0): only the kernel's QPs, whose
 * PDs are uctx 0, may name all of memory.
 *
 * A device-memory MR (VRNIC_MR_FLAG_DEVICE_MEM, ibv_reg_dm_mr) is a window
 * on BAR5's RAM: no pages, no tables, just an offset that keeps the whole
 * MR inside the device memory. It cannot be re-registered onto other
 * memory.
 *
 * Access check (vrnic_mr_check), in this order: key (index in range, MR
 * live, key byte current), PD (the MR's PD equals the QP's), rights
 * (LOCAL_READ is implied; every other right asked for must be granted),
 * bounds ([addr, addr + len) inside [iova, iova + length), computed without
 * wrap-around). Translation failures at access time (bad tables) are
 * reported by vrnic_mr_rw.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "vrnic_core_int.h"

#define VRNIC_ACCESS_NEEDS_LOCAL_WRITE \
    (VRNIC_ACCESS_REMOTE_WRITE | VRNIC_ACCESS_REMOTE_ATOMIC)

uint32_t vrnic_mr_key(const VrnicCore *core, const VrnicMr *mr)
{
    uint32_t index = mr - core->obj.mrs;

    return VRNIC_FIELD_PREP(VRNIC_KEY_INDEX_MASK, index) | mr->key_byte;
}

/*
 * A new live entry of the key table for an MR, a window or a
 * fast-registration MR of pd pdn with key byte key_byte, holding the PD;
 * NO_RESOURCES when max_mr entries are in use. The caller fills the rest.
 */
uint8_t vrnic_key_new(VrnicCore *core, uint32_t pdn, uint8_t key_byte,
                      VrnicMr **out)
{
    VrnicObjects *o = &core->obj;
    uint32_t index;

    if (o->n_mrs >= core->cfg.max_mr) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "max_mr", o->n_mrs);
    }
    index = vrnic_obj_alloc(&o->next_mr, 1, core->cfg.max_mr, o->mrs,
                            sizeof(*o->mrs));
    *out = &o->mrs[index];
    **out = (VrnicMr) { .live = true, .key_byte = key_byte, .pdn = pdn };
    o->pds[pdn].refs++;
    o->n_mrs++;
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_pd_alloc(VrnicCore *core, const struct vrnic_aq_alloc_pd *c,
                       uint64_t *result)
{
    VrnicObjects *o = &core->obj;
    uint32_t uctx = le32_to_cpu(c->uctx);
    uint32_t pdn;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (uctx >= core->cfg.db_pages) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "uctx", uctx);
    }
    if (o->n_pds >= core->cfg.max_pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_NO_RESOURCES, "max_pd", o->n_pds);
    }
    pdn = vrnic_obj_alloc(&o->next_pd, 1, core->cfg.max_pd, o->pds,
                          sizeof(*o->pds));
    o->pds[pdn] = (VrnicPd) { .live = true, .uctx = uctx };
    o->n_pds++;
    *result = pdn;
    trace_vrnic_pd_alloc(pdn, uctx);
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_pd_dealloc(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t pdn = le32_to_cpu(c->handle);
    VrnicPd *pd = vrnic_pd_get(core, pdn);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    if (pd->refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "pd in use", pd->refs);
    }
    memset(pd, 0, sizeof(*pd));
    core->obj.n_pds--;
    trace_vrnic_pd_dealloc(pdn);
    return VRNIC_AQ_STS_OK;
}

bool vrnic_access_valid(uint32_t access)
{
    return !(access & ~VRNIC_ACCESS_ALL) &&
           (!(access & VRNIC_ACCESS_NEEDS_LOCAL_WRITE) ||
            (access & VRNIC_ACCESS_LOCAL_WRITE));
}

static uint8_t vrnic_mr_check_access(uint32_t access, bool dma)
{
    if (!vrnic_access_valid(access)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "access bits, or remote write/atomic without "
                            "local write", access);
    }
    if (dma && (access & VRNIC_ACCESS_REMOTE)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "remote access on DMA MR",
                            access);
    }
    return VRNIC_AQ_STS_OK;
}

/*
 * mem of a device-memory MR: offset pages[0], [offset, offset + length)
 * inside the device memory, no page tables. Length 0 is valid (verbs
 * allow an empty MR): it passes only zero-length accesses.
 */
static uint8_t vrnic_mr_parse_devmem(VrnicCore *core,
                                     const struct vrnic_mem_desc *d,
                                     VrnicMem *m)
{
    uint64_t length = le64_to_cpu(d->length);
    uint64_t offset = le64_to_cpu(d->pages[0]);

    if (!core->devmem) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "no device memory", 0);
    }
    if (le32_to_cpu(d->flags) || le32_to_cpu(d->npages) ||
        !vrnic_all_zero(&d->pages[1],
                        sizeof(d->pages) - sizeof(d->pages[0]))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "device memory desc", 0);
    }
    if (length > core->cfg.dm_size ||
        offset > core->cfg.dm_size - length) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "device memory range",
                            offset);
    }
    if (le64_to_cpu(d->iova) + length < le64_to_cpu(d->iova)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "iova wraps",
                            le64_to_cpu(d->iova));
    }
    *m = (VrnicMem) {
        .iova = le64_to_cpu(d->iova),
        .length = length,
        .devmem = true,
        .devmem_offset = offset,
    };
    return VRNIC_AQ_STS_OK;
}

/* mem of a DMA MR: exactly iova 0, length ~0, no pages. */
static uint8_t vrnic_mr_parse_dma(const struct vrnic_mem_desc *d, VrnicMem *m)
{
    if (le64_to_cpu(d->iova) != 0 || le64_to_cpu(d->length) != ~0ull ||
        le32_to_cpu(d->npages) != 0) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "DMA MR mem",
                            le64_to_cpu(d->length));
    }
    vrnic_mem_init_dma(m);
    return VRNIC_AQ_STS_OK;
}

/*
 * mem of an implicit on-demand MR: all of the I/O address space below
 * 2^VRNIC_ODP_IMPLICIT_VA_BITS, in 4 KiB pages through a sparse tree of
 * VRNIC_ODP_IMPLICIT_LEVELS levels whose root is pages[0]; the descriptor
 * says nothing else (iova 0, length ~0 as the verbs report it).
 */
static uint8_t vrnic_mr_parse_implicit(VrnicCore *core,
                                       const struct vrnic_mem_desc *d,
                                       VrnicMem *m)
{
    uint64_t root = le64_to_cpu(d->pages[0]);

    if (le64_to_cpu(d->iova) != 0 || le64_to_cpu(d->length) != ~0ull ||
        le32_to_cpu(d->npages) || le32_to_cpu(d->flags) ||
        !vrnic_all_zero(&d->pages[1],
                        sizeof(d->pages) - sizeof(d->pages[0]))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "implicit MR mem",
                            le64_to_cpu(d->length));
    }
    if (root & 4095) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "mem table unaligned",
                            root);
    }
    *m = (VrnicMem) {
        .length = 1ull << VRNIC_ODP_IMPLICIT_VA_BITS,
        .page_shift = VRNIC_ODP_IMPLICIT_PAGE_SHIFT,
        .levels = VRNIC_ODP_IMPLICIT_LEVELS,
        .npages = 1ull << (VRNIC_ODP_IMPLICIT_VA_BITS -
                           VRNIC_ODP_IMPLICIT_PAGE_SHIFT),
        .odp = true,
        .pages = { root },
        .tlb_id = vrnic_tlb_new_id(&core->tlb),
    };
    return VRNIC_AQ_STS_OK;
}

uint8_t vrnic_mr_reg(VrnicCore *core, const struct vrnic_aq_reg_mr *c,
                     uint64_t *result)
{
    uint32_t pdn = le32_to_cpu(c->pdn);
    uint32_t access = le32_to_cpu(c->access);
    uint32_t flags = le32_to_cpu(c->flags);
    bool dma = flags & VRNIC_MR_FLAG_DMA;
    bool devmem = flags & VRNIC_MR_FLAG_DEVICE_MEM;
    bool odp = flags & VRNIC_MR_FLAG_ON_DEMAND;
    bool implicit = flags & VRNIC_MR_FLAG_IMPLICIT;
    VrnicPd *pd = vrnic_pd_get(core, pdn);
    VrnicMem mem;
    uint8_t sts;
    VrnicMr *mr;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || !VRNIC_RSVD_ZERO(c->rsvd1) ||
        c->handle) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if ((flags & ~(VRNIC_MR_FLAG_DMA | VRNIC_MR_FLAG_DEVICE_MEM |
                   VRNIC_MR_FLAG_ON_DEMAND | VRNIC_MR_FLAG_IMPLICIT)) ||
        dma + devmem + odp > 1 || (implicit && !odp)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "flags", flags);
    }
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    /* All of memory, by identity: for the kernel's PDs only (uctx 0). */
    if (dma && pd->uctx) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "DMA MR on a user PD",
                            pd->uctx);
    }
    sts = vrnic_mr_check_access(access, dma);
    if (sts) {
        return sts;
    }
    if (dma) {
        sts = vrnic_mr_parse_dma(&c->mem, &mem);
    } else if (devmem) {
        sts = vrnic_mr_parse_devmem(core, &c->mem, &mem);
    } else if (implicit) {
        sts = vrnic_mr_parse_implicit(core, &c->mem, &mem);
    } else {
        sts = vrnic_mem_parse(core, &c->mem, &mem);
    }
    if (sts) {
        return sts;
    }
    /* The driver fills and clears entries of tables, never inline ones. */
    if (odp && !mem.levels) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "on-demand MR inline", 0);
    }
    mem.odp = odp;
    sts = vrnic_key_new(core, pdn, c->key_byte, &mr);
    if (sts) {
        return sts;
    }
    mr->access = access;
    mr->flags = flags;
    mr->mem = mem;
    core->obj.n_odp_mrs += mem.odp;
    *result = vrnic_mr_key(core, mr);
    trace_vrnic_mr_reg(vrnic_mr_key(core, mr), pdn, access, mem.iova,
                       mem.length);
    trace_vrnic_mr_reg_mem(vrnic_mr_key(core, mr), mem.page_shift, mem.levels,
                           mem.npages, mem.dma);
    return VRNIC_AQ_STS_OK;
}

VrnicMr *vrnic_key_entry(VrnicCore *core, uint32_t key)
{
    uint32_t index = VRNIC_FIELD_GET(VRNIC_KEY_INDEX_MASK, key);

    if (index == 0 || index > core->cfg.max_mr) {
        return NULL;
    }
    return core->obj.mrs[index].live ? &core->obj.mrs[index] : NULL;
}

VrnicMr *vrnic_mr_lookup(VrnicCore *core, uint32_t key)
{
    VrnicMr *mr = vrnic_key_entry(core, key);

    if (!mr || mr->mw || mr->key_byte != (key & VRNIC_KEY_BYTE_MASK)) {
        return NULL;    /* windows are R_Keys only: vrnic_rkey_check() */
    }
    return mr->frmr && !mr->valid ? NULL : mr;
}

uint8_t vrnic_mr_rereg(VrnicCore *core, const struct vrnic_aq_reg_mr *c,
                       uint64_t *result)
{
    uint32_t key = le32_to_cpu(c->handle);
    uint32_t flags = le32_to_cpu(c->flags);
    VrnicMr *entry = vrnic_key_entry(core, key);
    VrnicMr *mr = vrnic_mr_lookup(core, key);
    uint32_t pdn, access;
    VrnicPd *pd;
    VrnicMem mem;
    uint8_t sts;

    if (!VRNIC_RSVD_ZERO(c->rsvd0) || !VRNIC_RSVD_ZERO(c->rsvd1)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (flags & ~(VRNIC_MR_REREG_TRANS | VRNIC_MR_REREG_PD |
                  VRNIC_MR_REREG_ACCESS)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "rereg flags", flags);
    }
    /* Valid or not: REG_MR WQEs map it, never REREG_MR. */
    if (entry && entry->frmr) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                            "rereg of a fast-registration MR", key);
    }
    if (!mr) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "key", key);
    }
    if (mr->mw_refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "windows bound",
                            mr->mw_refs);
    }
    /* Validate everything first: a refused REREG changes nothing. */
    pdn = flags & VRNIC_MR_REREG_PD ? le32_to_cpu(c->pdn) : mr->pdn;
    pd = vrnic_pd_get(core, pdn);
    if (!pd) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "pdn", pdn);
    }
    if (mr->mem.dma && pd->uctx) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "DMA MR to a user PD",
                            pd->uctx);
    }
    access = flags & VRNIC_MR_REREG_ACCESS ? le32_to_cpu(c->access) :
                                             mr->access;
    sts = vrnic_mr_check_access(access, mr->mem.dma);
    if (sts) {
        return sts;
    }
    mem = mr->mem;
    if (flags & VRNIC_MR_REREG_TRANS) {
        if (mr->mem.dma || mr->mem.devmem || mr->mem.odp) {
            return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD,
                                "rereg DMA, device memory or on-demand "
                                "MR mem", 0);
        }
        sts = vrnic_mem_parse(core, &c->mem, &mem);
        if (sts) {
            return sts;
        }
    }
    core->obj.pds[mr->pdn].refs--;
    pd->refs++;
    mr->pdn = pdn;
    mr->access = access;
    mr->mem = mem;
    mr->key_byte = c->key_byte;
    *result = vrnic_mr_key(core, mr);
    trace_vrnic_mr_rereg(key, vrnic_mr_key(core, mr), flags);
    return VRNIC_AQ_STS_OK;
}

/*
 * A fast-registration MR by its index alone (valid or not, any key byte:
 * REG_MR changes it); any other MR by its current key.
 */
static VrnicMr *vrnic_mr_for_dereg(VrnicCore *core, uint32_t key)
{
    VrnicMr *mr = vrnic_key_entry(core, key);

    return mr && mr->frmr ? mr : vrnic_mr_lookup(core, key);
}

uint8_t vrnic_mr_dereg(VrnicCore *core, const struct vrnic_aq_destroy *c)
{
    uint32_t key = le32_to_cpu(c->handle);
    VrnicMr *mr = vrnic_mr_for_dereg(core, key);

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (!mr) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "key", key);
    }
    if (mr->mw_refs) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_STATE, "windows bound",
                            mr->mw_refs);
    }
    core->obj.pds[mr->pdn].refs--;
    core->obj.n_odp_mrs -= mr->mem.odp;
    vrnic_frmr_free(mr);
    memset(mr, 0, sizeof(*mr));
    core->obj.n_mrs--;
    trace_vrnic_mr_dereg(key);
    return VRNIC_AQ_STS_OK;
}

/*
 * The device's view: attributes, then page_addr[first .. first + count - 1]
 * from a fresh table walk (0 past npages). A table that cannot be walked
 * fails the command with DMA_ERROR.
 */
uint8_t vrnic_mr_query(VrnicCore *core, const struct vrnic_aq_query_mr *c)
{
    uint32_t key = le32_to_cpu(c->key);
    uint32_t first = le32_to_cpu(c->first);
    uint32_t count = le32_to_cpu(c->count);
    uint32_t resp_len = le32_to_cpu(c->resp_len);
    uint64_t addr = le64_to_cpu(c->resp_addr);
    VrnicMr *mr = vrnic_mr_lookup(core, key);
    struct vrnic_mr_attr a;

    if (!VRNIC_RSVD_ZERO(c->rsvd0)) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "reserved", 0);
    }
    if (count > VRNIC_QUERY_MR_MAX_PAGES) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "count", count);
    }
    if (resp_len != sizeof(a) + 8 * count) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_FIELD, "resp_len", resp_len);
    }
    if (!mr) {
        return VRNIC_REJECT(VRNIC_AQ_STS_BAD_INDEX, "key", key);
    }
    a = (struct vrnic_mr_attr) {
        .iova = cpu_to_le64(mr->mem.iova),
        .length = cpu_to_le64(mr->mem.length),
        .pdn = cpu_to_le32(mr->pdn),
        .access = cpu_to_le32(mr->access),
        .flags = cpu_to_le32(mr->flags),
        .page_shift = cpu_to_le32(mr->mem.page_shift),
        /* An implicit MR's 2^36 pages are not listed. */
        .npages = cpu_to_le32(mr->mem.levels > VRNIC_MEM_MAX_LEVELS ? 0 :
                              mr->mem.npages),
        .levels = cpu_to_le32(mr->mem.levels),
    };
    if (!vrnic_dma_write(core, addr, &a, sizeof(a))) {
        return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "resp_addr", addr);
    }
    for (uint32_t i = 0; i < count; i++) {
        uint64_t idx = (uint64_t)first + i;
        uint64_t pa = 0;

        if (idx < le32_to_cpu(a.npages) &&
            !vrnic_mem_walk(core, &mr->mem, idx, &pa)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "table walk", idx);
        }
        pa = cpu_to_le64(pa);
        if (!vrnic_dma_write(core, addr + sizeof(a) + 8ull * i, &pa, 8)) {
            return VRNIC_REJECT(VRNIC_AQ_STS_DMA_ERROR, "resp_addr", addr);
        }
    }
    trace_vrnic_mr_query(key, first, count);
    return VRNIC_AQ_STS_OK;
}

VrnicMrCheck vrnic_mr_check(VrnicCore *core, uint32_t key, uint32_t pdn,
                            uint32_t access, uint64_t addr, uint64_t len,
                            VrnicMr **out)
{
    VrnicMr *mr = vrnic_mr_lookup(core, key);
    VrnicMrCheck r = VRNIC_MR_OK;

    if (!mr) {
        r = VRNIC_MR_BAD_KEY;
    } else if (mr->pdn != pdn) {
        r = VRNIC_MR_BAD_PD;
    } else if (access & ~mr->access) {
        r = VRNIC_MR_BAD_ACCESS;
    } else if (!vrnic_mem_contains(&mr->mem, addr, len)) {
        r = VRNIC_MR_BAD_BOUNDS;
    }
    trace_vrnic_mr_check(key, pdn, access, addr, len, r);
    if (out) {
        *out = r == VRNIC_MR_OK ? mr : NULL;
    }
    return r;
}

bool vrnic_mr_rw(VrnicCore *core, const VrnicMr *mr, uint64_t addr,
                 void *buf, uint64_t len, bool write)
{
    return vrnic_mem_rw(core, &mr->mem, addr, buf, len, write);
}
