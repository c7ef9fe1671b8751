/* Reading an artifact library's ELF64 image: the code ranges of its kernel
 * functions (local FUNC symbols in .symtab) and the bytes of a section.
 * The image is an outside input: every offset and size is checked against
 * the buffer before it is read. */
#include <elf.h>
#include <string.h>

#include "symbols/symbols.h"

typedef struct image {
    const unsigned char *p;
    size_t len;
    const Elf64_Ehdr *eh;
} image;

static bool in_bounds(const image *im, uint64_t off, uint64_t size)
{
    return off <= im->len && size <= im->len - off;
}

static int open_image(image *im, const void *elf, size_t len)
{
    im->p = elf;
    im->len = len;
    if (len < sizeof(Elf64_Ehdr) || memcmp(elf, ELFMAG, SELFMAG) != 0)
        return -1;
    im->eh = elf;
    if (im->p[EI_CLASS] != ELFCLASS64 || im->p[EI_DATA] != ELFDATA2LSB ||
        im->eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_bounds(im, im->eh->e_shoff, (uint64_t)im->eh->e_shnum * sizeof(Elf64_Shdr)) ||
        (im->eh->e_shoff % _Alignof(Elf64_Shdr)) != 0)
        return -1;
    return 0;
}

static const Elf64_Shdr *section(const image *im, unsigned i)
{
    if (i >= im->eh->e_shnum)
        return NULL;
    const Elf64_Shdr *s = (const Elf64_Shdr *)(im->p + im->eh->e_shoff) + i;
    if (s->sh_type != SHT_NOBITS && !in_bounds(im, s->sh_offset, s->sh_size))
        return NULL;
    return s;
}

/* The NUL-terminated string at off of string table strtab, or NULL. */
static const char *string_at(const image *im, const Elf64_Shdr *strtab, uint64_t off)
{
    if (!strtab || off >= strtab->sh_size)
        return NULL;
    const char *s = (const char *)im->p + strtab->sh_offset + off;
    return memchr(s, 0, strtab->sh_size - off) ? s : NULL;
}

int cv_sym_elf_section(const void *elf, size_t len, const char *name, const void **data,
                       size_t *size)
{
    image im;
    if (open_image(&im, elf, len))
        return -1;
    const Elf64_Shdr *names = section(&im, im.eh->e_shstrndx);
    for (unsigned i = 0; names && i < im.eh->e_shnum; i++) {
        const Elf64_Shdr *s = section(&im, i);
        const char *n = s ? string_at(&im, names, s->sh_name) : NULL;
        if (n && strcmp(n, name) == 0 && s->sh_type != SHT_NOBITS) {
            *data = im.p + s->sh_offset;
            *size = s->sh_size;
            return 0;
        }
    }
    return -1;
}

/* Calls fn for each entry of each symbol table (with its name, or NULL)
 * until fn returns true; true then. */
static bool each_symbol(const image *im, bool (*fn)(void *, const image *, const Elf64_Sym *,
                                                    const char *),
                        void *ctx)
{
    for (unsigned i = 0; i < im->eh->e_shnum; i++) {
        const Elf64_Shdr *s = section(im, i);
        if (!s || s->sh_type != SHT_SYMTAB || s->sh_entsize != sizeof(Elf64_Sym) ||
            s->sh_offset % _Alignof(Elf64_Sym) != 0)
            continue;
        const Elf64_Shdr *strtab = section(im, s->sh_link);
        const Elf64_Sym *sym = (const Elf64_Sym *)(im->p + s->sh_offset);
        for (uint64_t j = 0; j < s->sh_size / sizeof *sym; j++)
            if (fn(ctx, im, &sym[j], string_at(im, strtab, sym[j].st_name)))
                return true;
    }
    return false;
}

typedef struct sym_place {
    const char *name;
    uint64_t off, size;
} sym_place;

static bool place_of(void *ctx, const image *im, const Elf64_Sym *sym, const char *n)
{
    sym_place *p = ctx;
    const Elf64_Shdr *in = n && strcmp(n, p->name) == 0 ? section(im, sym->st_shndx) : NULL;
    if (!in || in->sh_type == SHT_NOBITS || sym->st_value < in->sh_addr ||
        sym->st_value - in->sh_addr > in->sh_size ||
        sym->st_size > in->sh_size - (sym->st_value - in->sh_addr))
        return false;
    p->off = in->sh_offset + (sym->st_value - in->sh_addr);
    p->size = sym->st_size;
    return true;
}

int cv_sym_elf_symbol(const void *elf, size_t len, const char *name, uint64_t *off,
                      uint64_t *size)
{
    image im;
    sym_place p = {.name = name};
    if (open_image(&im, elf, len) || !each_symbol(&im, place_of, &p))
        return -1;
    *off = p.off;
    *size = p.size;
    return 0;
}

static int kernel_named(const cv_symmap *m, const char *name)
{
    for (int k = 0; k < m->n_kernels; k++)
        if (m->kernels[k].name && strcmp(m->kernels[k].name, name) == 0)
            return k;
    return -1;
}

typedef struct ranges {
    cv_symmap *m;
    int found;
} ranges;

static bool kernel_range(void *ctx, const image *im, const Elf64_Sym *sym, const char *n)
{
    (void)im;
    ranges *r = ctx;
    if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_size == 0)
        return false;
    int k = n ? kernel_named(r->m, n) : -1;
    if (k < 0 || r->m->kernels[k].hi)
        return false;
    r->m->kernels[k].lo = sym->st_value;
    r->m->kernels[k].hi = sym->st_value + sym->st_size;
    r->found++;
    return false;
}

int cv_symmap_elf_ranges(cv_symmap *m, const void *elf, size_t len)
{
    image im;
    if (open_image(&im, elf, len))
        return -1;
    ranges r = {m, 0};
    each_symbol(&im, kernel_range, &r);
    return r.found;
}
