/* Symbol maps: what an artifact's generated code came from.
 *
 * Every artifact carries <name>.cvsym (JSON, format "cuvil-symbols/1"),
 * listed in its manifest like any other file, so the cache stores it with
 * the artifact.  It maps each generated kernel to the CU-IR ops fused into
 * it (op index, op name, result value, locations: a DSL file:line:col or an
 * ONNX node name), the kernel's code range in the shared library, and every
 * intermediate tensor to its storage (arena offset, shape).  Locations are
 * written only when the artifact's cache key covers them (a debug build,
 * `cuvil compile -g`, or a compile that never enters the cache): a
 * comment-only edit is an L2 hit and must not leave stale line numbers.
 *
 * This component knows nothing of the IR: compiler-core fills a cv_symmap,
 * symbols/ writes, reads and queries it.  Also here: reading a shared
 * library's ELF symbol table and sections, and the crash reporter of
 * `cuvil run --trace`.
 *
 * Diagnostic codes: CV5200-CV5209. */
#ifndef CV_SYMBOLS_H
#define CV_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/arena.h"
#include "common/diag.h"

#define CV_SYMMAP_FORMAT "cuvil-symbols/1"

typedef struct cv_sym_loc {
    const char *file;           /* a source file, or (line == 0) an ONNX node name */
    int line, col;
} cv_sym_loc;

typedef struct cv_sym_op {
    int index;                  /* in the compiled function's ops */
    const char *op;             /* "conv2d" */
    const char *value;          /* its first result, without '%' */
    const char *path;           /* the IR path diagnostics use: "@lenet>%3=conv2d" */
    cv_sym_loc *locs;
    int n_locs;
    int listing_line;           /* its line in the generated <name>.cuir listing, 0: none */
} cv_sym_op;

typedef struct cv_sym_kernel {
    const char *name;           /* the function: "k2_conv2d" */
    int *ops;                   /* indices into cv_symmap.ops: the op first, then its epilogue */
    int n_ops;
    bool parallel;              /* runs on the thread pool */
    uint64_t lo, hi;            /* code range in the library ([lo, hi)); hi == 0: unknown */
} cv_sym_kernel;

typedef struct cv_sym_tensor {
    const char *value;          /* without '%' */
    int op;                     /* index into cv_symmap.ops of its producer, -1: none */
    const char *dtype, *shape;  /* "f32", "[N,6,28,28]" */
    const char *storage;        /* "arena", "view", "output", "input", "const" */
    int64_t offset;             /* arena byte offset with every symbolic dim = 1 (-1: n/a) */
    const char *offset_expr;    /* the offset as a C expression over d[] (NULL: n/a) */
    int64_t bytes;              /* size with every symbolic dim = 1 */
} cv_sym_tensor;

typedef struct cv_symmap {
    cv_arena arena;             /* every string and array below */
    const char *model;          /* the artifact's C name */
    const char *fingerprint;    /* symbol-table fingerprint (hex), NULL when unknown */
    const char *library;        /* "liblenet.so", NULL when none was linked */
    const char *listing;        /* "lenet.cuir" when debug info points into it, else NULL */
    bool locs;                  /* locations were recorded */
    cv_sym_op *ops;
    int n_ops;
    cv_sym_kernel *kernels;
    int n_kernels;
    cv_sym_tensor *tensors;
    int n_tensors;
} cv_symmap;

void cv_symmap_init(cv_symmap *m);
void cv_symmap_free(cv_symmap *m);
/* Arrays of n zeroed entries in the map's arena (NULL on out of memory). */
int cv_symmap_alloc(cv_symmap *m, int n_ops, int n_kernels, int n_tensors);
const char *cv_symmap_str(cv_symmap *m, const char *s);

/* The JSON text (malloc'd; NULL on out of memory). */
char *cv_symmap_to_json(const cv_symmap *m);
/* Parses and validates a .cvsym text (an outside input: every index is
 * checked).  name is for diagnostics.  CV5200 when malformed. */
int cv_symmap_parse(const char *text, size_t len, const char *name, cv_symmap *m, cv_diag *d);
/* Reads <dir>/<name>.cvsym of an artifact directory (name from its
 * manifest.json), or the file itself when path is a .cvsym.  CV5201. */
int cv_symmap_load(const char *path, cv_symmap *m, cv_diag *d);

/* Fills each kernel's code range from the FUNC symbols of an ELF64
 * little-endian image (the linked library).  Returns the number of kernels
 * found, -1 when the bytes are not such an image. */
int cv_symmap_elf_ranges(cv_symmap *m, const void *elf, size_t len);
/* The bytes of section `name` of an ELF64 image; -1 when absent. */
int cv_sym_elf_section(const void *elf, size_t len, const char *name, const void **data,
                       size_t *size);

/* Where the bytes of the symbol `name` (any binding) lie in an ELF64 image:
 * their file offset and size; -1 when absent or not backed by the file. */
int cv_sym_elf_symbol(const void *elf, size_t len, const char *name, uint64_t *off,
                      uint64_t *size);

/* The kernel whose code holds addr (library-relative), or -1. */
int cv_symmap_find_addr(const cv_symmap *m, uint64_t addr);
/* "k2_conv2d: conv2d + relu at lenet.cvl.py:8:33 (%3, %4)" into buf. */
void cv_symmap_describe_kernel(const cv_symmap *m, int k, char *buf, size_t size);
/* "lenet.cvl.py:8:33", "node Conv_3" or "%3" (no location recorded). */
void cv_symmap_describe_op(const cv_symmap *m, int op, char *buf, size_t size);
/* The kernel an op runs in (as its op or in its epilogue), or -1. */
int cv_symmap_kernel_of_op(const cv_symmap *m, int op);
/* The human listing of `cuvil symbols`. */
void cv_symmap_print(const cv_symmap *m, FILE *out);

/* cuvil run --trace: installs handlers for SIGSEGV, SIGBUS, SIGFPE and
 * SIGILL that, when the faulting instruction (or a return address on the
 * stack) lies in one of the map's kernels, write that kernel's model source
 * line to stderr before dying of the signal.  library_suffix ends the path
 * of the already loaded library ("/liblenet.so").  The map is copied into
 * static storage; the handler only calls async-signal-safe functions.
 * Returns 0, or -1 when the library is not loaded. */
int cv_symbols_trace_install(const cv_symmap *m, const char *library_suffix);

#endif
