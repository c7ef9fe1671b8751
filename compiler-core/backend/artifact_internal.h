/* Internal to the backend: writing artifact files. */
#ifndef CV_ARTIFACT_INTERNAL_H
#define CV_ARTIFACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"
#include "compiler-core/backend/kernel.h"
#include "compiler-core/cuvil.h"

/* The bytes a code cache keys the generated code of p by (code_source.c;
 * malloc'd, *len set), or NULL when out of memory.  blk: the layout block,
 * half: the half-precision mode p was built with. */
char *cv_code_source(const cv_module *m, const cv_kprog *p, int blk, unsigned half, size_t *len);

/* A static archive of n (at most 16) objects, with an index of each
 * one's syms. */
typedef struct cv_ar_member {
    const char *name;
    const cv_fs_part *parts;    /* the member's bytes, in pieces */
    int n_parts;
    size_t len;                 /* their total */
    const char *const *syms;
    int n_syms;
} cv_ar_member;
/* The archive of m[0..n) (n <= 16) as pieces in order (*parts malloc'd):
 * its headers in glue, the members' bytes where they are.  0, or -1 (out
 * of memory, or too many members). */
int cv_archive_parts(const cv_ar_member *m, int n, cv_sb *glue, cv_fs_part **parts, int *n_parts);
/* Runs argv (PATH lookup, no shell), stdout and stderr into out (bounded,
 * NUL-terminated).  Returns the exit status, or -errno when it cannot start. */
int cv_spawn_capture(char *const *argv, char *out, size_t out_size);
/* Links objs[0..n) (n <= 4) into the shared object so (link.c): with the binutils linker
 * behind the C driver `linker` directly where it and libgcc are found, else
 * with `linker -shared ... -lm -lpthread`.  *missing is set (and nothing is
 * reported) when the linker is not installed.  build_id: the GNU build id
 * as hex (at most 40 digits), or NULL for the linker's own. */
int cv_link_shared(const char *linker, const char *const *objs, int n, const char *so,
                   const char *soname, const char *build_id, cv_diag *d, bool *missing);
/* Linking without the linker (so_splice.c).  cv_so_build_id: the build id
 * (40 hex digits) of a library linked from objects of these SHA-256 digests
 * (hex).  cv_so_template_cut: the bytes of a linked library so around the
 * image_len bytes of symbol wsym (copied); -1 when it has no such symbol
 * or no GNU build id before it.  cv_so_template_fits: whether t (from the
 * cache) can take an image of image_len bytes.  cv_so_template_patch:
 * writes build_id (hex) into t's head. */
int  cv_so_build_id(const char *const *hex, int n, char out[41]);
int  cv_so_template_cut(const void *so, size_t len, const char *wsym, uint64_t image_len,
                        cv_so_template *t);
bool cv_so_template_fits(const cv_so_template *t, uint64_t image_len);
int  cv_so_template_patch(cv_so_template *t, const char *build_id);
void cv_so_template_free(cv_so_template *t);
/* The C header of the artifact's API. */
void cv_artifact_header(const cv_kprog *p, const char *target, int opt, cv_sb *out);
/* "128 + 192*d[0]": the arena size as a C expression over an array `arr`. */
void cv_artifact_arena_expr(const cv_kprog *p, const char *arr, cv_sb *out);
/* The same with the symbols' names and derived dims' texts, for people. */
void cv_artifact_arena_formula(const cv_kprog *p, cv_sb *out);
/* The names of the API functions (static strings in a buffer of the caller's). */
int cv_artifact_symbols(const cv_kprog *p, char names[][160], int max);

#endif
