/* The weights data object <name>_weights.o: a relocatable ELF file with one
 * read-only section holding the split weights image (weights_file.c) and
 * one hidden global symbol at its start, which the code object refers to.
 *
 * Written directly rather than through LLVM: it is a copy of the image
 * plus a few hundred bytes of headers, so a retrained model (a code hit)
 * pays a memcpy instead of an LLVM pass over tens of megabytes of
 * constants.  The machine fields come from the code object, so the two
 * objects always link together (riscv64's float-ABI flags included).
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

int cv_weights_object(const void *code_obj, size_t code_len, const char *sym, const void *image,
                      size_t len, unsigned char **out, size_t *out_len, cv_diag *d)
{
    const unsigned char *c = code_obj;
    *out = NULL;
    *out_len = 0;
    /* ELF64, little-endian, relocatable: what every CPU target here emits. */
    if (code_len < EHDR || memcmp(c, "\177ELF", 4) != 0 || c[4] != 2 || c[5] != 1 ||
        get16(c + 16) != 1)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){0},
                            "the code object is not a 64-bit little-endian ELF relocatable; "
                            "its weights cannot be put in an object of their own");
    size_t symlen = strlen(sym);
    size_t data_off = EHDR;                               /* 64: the image's alignment */
    size_t symtab_off = align(data_off + len, 8);
    size_t strtab_off = symtab_off + 2 * SYM;
    size_t shstr_off = strtab_off + symlen + 2;
    size_t sh_off = align(shstr_off + sizeof SHSTRTAB, 8);
    size_t total = sh_off + N_SECTIONS * SHDR;
    unsigned char *b = calloc(1, total);
    if (!b)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    memcpy(b, c, 16);                                     /* e_ident */
    put16(b + 16, 1);                                     /* ET_REL */
    memcpy(b + 18, c + 18, 2);                            /* e_machine */
    put32(b + 20, 1);                                     /* EV_CURRENT */
    put32(b + 48, get32(c + 48));                         /* e_flags (riscv float ABI) */
    put64(b + 40, sh_off);
    put16(b + 52, EHDR);
    put16(b + 58, SHDR);
    put16(b + 60, N_SECTIONS);
    put16(b + 62, N_SECTIONS - 1);                        /* .shstrtab */
    if (len)
        memcpy(b + data_off, image, len);
    unsigned char *s = b + symtab_off + SYM;              /* entry 0 stays null */
    put32(s, 1);
    s[4] = STB_GLOBAL << 4 | STT_OBJECT;
    s[5] = STV_HIDDEN;
    put16(s + 6, 1);                                      /* in .rodata.cv_weights */
    put64(s + 16, len);
    memcpy(b + strtab_off + 1, sym, symlen);
    memcpy(b + shstr_off, SHSTRTAB, sizeof SHSTRTAB);
    unsigned char *h = b + sh_off + SHDR;
    shdr(h, NM_RODATA, SHT_PROGBITS, SHF_ALLOC, data_off, len, 0, 0, 64, 0);
    shdr(h + SHDR, NM_NOTE, SHT_PROGBITS, 0, data_off, 0, 0, 0, 1, 0);
    shdr(h + 2 * SHDR, NM_SYMTAB, SHT_SYMTAB, 0, symtab_off, 2 * SYM, 4, 1, 8, SYM);
    shdr(h + 3 * SHDR, NM_STRTAB, SHT_STRTAB, 0, strtab_off, symlen + 2, 0, 0, 1, 0);
    shdr(h + 4 * SHDR, NM_SHSTRTAB, SHT_STRTAB, 0, shstr_off, sizeof SHSTRTAB, 0, 0, 1, 0);
    *out = b;
    *out_len = total;
    return 0;
}
