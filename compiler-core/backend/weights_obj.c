/* The weights data object <name>_weights.o: a relocatable ELF file with one
 * read-only section holding the split weights image (weights_file.c) and
 * one hidden global symbol at its start, which the code object refers to.
 *
 * Written directly rather than through LLVM, and never copied together:
 * the object is a list of pieces (cv_fs_part), its headers and each
 * storage's bytes where the kernel program holds them, written (and hashed)
 * straight from there, so a retrained model (a code hit) pays one write of
 * its weights instead of an LLVM pass over tens of megabytes of constants
 * (and, before the pieces, two copies and their page faults).  The machine
 * fields come from the code object, so the two objects always link together
 * (riscv64's float-ABI flags included).
 *
 *   [ELF header][image, 64-aligned][.symtab][.strtab][.shstrtab][sections]
 *
 * Every byte is a function of (code object header, symbol, image). */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/kernel.h"

enum {
    EHDR = 64, SHDR = 64, SYM = 24,
    SHT_PROGBITS = 1, SHT_SYMTAB = 2, SHT_STRTAB = 3,
    SHF_ALLOC = 2,
    STB_GLOBAL = 1, STT_OBJECT = 1, STV_HIDDEN = 2,
    N_SECTIONS = 6,     /* null, .rodata.cv_weights, .note.GNU-stack, .symtab, .strtab, .shstrtab */
};

static const char SHSTRTAB[] = "\0.rodata.cv_weights\0.note.GNU-stack\0.symtab\0.strtab\0.shstrtab";
enum { NM_RODATA = 1, NM_NOTE = 20, NM_SYMTAB = 36, NM_STRTAB = 44, NM_SHSTRTAB = 52 };

static void put16(unsigned char *p, uint64_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint64_t v) { put16(p, v); put16(p + 2, v >> 16); }
static void put64(unsigned char *p, uint64_t v) { put32(p, v); put32(p + 4, v >> 32); }
static uint64_t get16(const unsigned char *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }
static uint64_t get32(const unsigned char *p) { return get16(p) | get16(p + 2) << 16; }

static size_t align(size_t v, size_t a) { return (v + a - 1) / a * a; }

static void shdr(unsigned char *h, uint64_t name, uint64_t type, uint64_t flags, uint64_t off,
                 uint64_t size, uint64_t link, uint64_t info, uint64_t al, uint64_t entsize)
{
    put32(h, name);
    put32(h + 4, type);
    put64(h + 8, flags);
    put64(h + 24, off);
    put64(h + 32, size);
    put32(h + 40, link);
    put32(h + 44, info);
    put64(h + 48, al);
    put64(h + 56, entsize);
}

/* The bytes of the object around an image of len bytes: head (EHDR bytes,
 * the image follows at EHDR) and tail (from EHDR + len to the end). */
static void elf_pieces(const unsigned char *c, const char *sym, size_t len, unsigned char *head,
                       unsigned char *tail, size_t tail_len)
{
    size_t symlen = strlen(sym), base = EHDR + len;
    size_t symtab_off = align(base, 8);
    size_t strtab_off = symtab_off + 2 * SYM;
    size_t shstr_off = strtab_off + symlen + 2;
    size_t sh_off = align(shstr_off + sizeof SHSTRTAB, 8);
    memset(head, 0, EHDR);
    memset(tail, 0, tail_len);
    memcpy(head, c, 16);                                  /* e_ident */
    put16(head + 16, 1);                                  /* ET_REL */
    memcpy(head + 18, c + 18, 2);                         /* e_machine */
    put32(head + 20, 1);                                  /* EV_CURRENT */
    put32(head + 48, get32(c + 48));                      /* e_flags (riscv float ABI) */
    put64(head + 40, sh_off);
    put16(head + 52, EHDR);
    put16(head + 58, SHDR);
    put16(head + 60, N_SECTIONS);
    put16(head + 62, N_SECTIONS - 1);                     /* .shstrtab */
    unsigned char *s = tail + symtab_off - base + SYM;    /* entry 0 stays null */
    put32(s, 1);
    s[4] = STB_GLOBAL << 4 | STT_OBJECT;
    s[5] = STV_HIDDEN;
    put16(s + 6, 1);                                      /* in .rodata.cv_weights */
    put64(s + 16, len);
    memcpy(tail + strtab_off - base + 1, sym, symlen);
    memcpy(tail + shstr_off - base, SHSTRTAB, sizeof SHSTRTAB);
    unsigned char *h = tail + sh_off - base + SHDR;
    shdr(h, NM_RODATA, SHT_PROGBITS, SHF_ALLOC, EHDR, len, 0, 0, 64, 0);
    shdr(h + SHDR, NM_NOTE, SHT_PROGBITS, 0, EHDR, 0, 0, 0, 1, 0);
    shdr(h + 2 * SHDR, NM_SYMTAB, SHT_SYMTAB, 0, symtab_off, 2 * SYM, 4, 1, 8, SYM);
    shdr(h + 3 * SHDR, NM_STRTAB, SHT_STRTAB, 0, strtab_off, symlen + 2, 0, 0, 1, 0);
    shdr(h + 4 * SHDR, NM_SHSTRTAB, SHT_STRTAB, 0, shstr_off, sizeof SHSTRTAB, 0, 0, 1, 0);
}

static size_t tail_size(const char *sym, size_t len)
{
    size_t base = EHDR + len;
    size_t shstr_off = align(base, 8) + 2 * SYM + strlen(sym) + 2;
    return align(shstr_off + sizeof SHSTRTAB, 8) + N_SECTIONS * SHDR - base;
}

static const unsigned char zeros[64];

/* Appends one piece; 0, or -1 out of memory. */
static int add_part(cv_weights_obj *o, const void *data, size_t len)
{
    if (len == 0)
        return 0;
    if (o->n_parts % 64 == 0) {
        cv_fs_part *v = realloc(o->parts, sizeof *v * ((size_t)o->n_parts + 64));
        if (!v)
            return -1;
        o->parts = v;
    }
    o->parts[o->n_parts++] = (cv_fs_part){data, len};
    o->len += len;
    return 0;
}

int cv_weights_split_object(const cv_kprog *p, const void *code_obj, size_t code_len,
                            const char *sym, cv_weights_obj *o, cv_diag *d)
{
    const unsigned char *c = code_obj;
    memset(o, 0, sizeof *o);
    /* ELF64, little-endian, relocatable: what every CPU target here emits. */
    if (code_len < EHDR || memcmp(c, "\177ELF", 4) != 0 || c[4] != 2 || c[5] != 1 ||
        get16(c + 16) != 1)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){0},
                            "the code object is not a 64-bit little-endian ELF relocatable; "
                            "its weights cannot be put in an object of their own");
    int64_t *off = malloc(sizeof *off * ((size_t)p->n_stores + 1));
    size_t len = off ? (size_t)cv_weights_split_layout(p, off) : 0;
    o->tail_len = tail_size(sym, len);
    o->tail = off ? malloc(o->tail_len) : NULL;
    int rc = o->tail ? 0 : -1;
    if (rc == 0) {
        elf_pieces(c, sym, len, o->head, o->tail, o->tail_len);
        rc = add_part(o, o->head, EHDR);
    }
    /* The image in place: each storage's bytes behind the zeros that align it. */
    size_t at = 0;
    for (int i = 0; rc == 0 && i < p->n_stores; i++) {
        const cv_kstore *s = &p->stores[i];
        if (off[i] < 0)
            continue;
        for (size_t pad = (size_t)off[i] - at; rc == 0 && pad; pad -= pad < 64 ? pad : 64)
            rc = add_part(o, zeros, pad < 64 ? pad : 64);
        for (size_t k = 0; rc == 0 && !s->data && k < s->nbytes; k += 64)
            rc = add_part(o, zeros, s->nbytes - k < 64 ? s->nbytes - k : 64);
        if (rc == 0 && s->data)
            rc = add_part(o, s->data, s->nbytes);
        at = (size_t)off[i] + s->nbytes;
    }
    if (rc == 0)
        rc = add_part(o, o->tail, o->tail_len);
    free(off);
    if (rc) {
        cv_weights_obj_free(o);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    return 0;
}

void cv_weights_obj_free(cv_weights_obj *o)
{
    free(o->tail);
    free(o->parts);
    memset(o, 0, sizeof *o);
}
