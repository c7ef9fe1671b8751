/* Internal to the C99 backend: lowering kernel IR to C text. */
#ifndef CV_C99_INTERNAL_H
#define CV_C99_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "compiler-core/backend/c99/c99.h"

/* The runtime helpers generated code may call (c99_runtime.c).  Each is
 * emitted only when used: clang warns about unused static functions. */
typedef enum cv_c99_helper {
    CV_C99_H_ADD, CV_C99_H_SUB, CV_C99_H_MUL, CV_C99_H_NEG, CV_C99_H_IABS,
    CV_C99_H_IMIN, CV_C99_H_IMAX, CV_C99_H_MINF, CV_C99_H_MAXF, CV_C99_H_MIND, CV_C99_H_MAXD,
    CV_C99_H_F2I64, CV_C99_H_FSAT, CV_C99_H_WRAP8, CV_C99_H_WRAPU8, CV_C99_H_WRAP32,
    CV_C99_H_WRAP16, CV_C99_H_WRAPU16, CV_C99_H_WRAPU32,
    CV_C99_H_FBITS, CV_C99_H_BITSF, CV_C99_H_F2H, CV_C99_H_H2F, CV_C99_H_F2BF, CV_C99_H_BFROUND, CV_C99_H_BF2F,
    CV_C99_H_BFBITS,
    CV_C99_H_ARENA, CV_C99_H_LAUNCH, CV_C99_H_EPI, CV_C99_H_TILE, CV_C99_H_SGEMM, CV_C99_H_CONV,
    CV_C99_H_CONV2D, CV_C99_H_CONV2D_P8, CV_C99_H_DWCONV2D, CV_C99_H_QEPI,
    CV_C99_H_QCONV2D, CV_C99_H_QDWCONV2D,
    CV_C99_H_NCHWC_CONV2D, CV_C99_H_NCHWC_DWCONV2D, CV_C99_H_NCHWC_POOL2D,
    CV_C99_H_W16, CV_C99_H_CONV2D_P8H, CV_C99_H_SGEMM_H, CV_C99_H_NCHWC_CONV2D_H,
    CV_C99_H_SGEMM_PB, CV_C99_H_SGEMM_BF, CV_C99_H_RNN, CV_C99_H_ATTENTION,
    CV_C99_H__COUNT
} cv_c99_helper;

/* The text of the rnn op's runtime (c99_runtime_rnn.c). */
extern const char cv_c99_rnn_text[];
/* The text of the attention runtime routine (c99_runtime_attn.c). */
extern const char cv_c99_attention_text[];

/* Open-addressing map from an expression to its per-statement state. */
typedef struct cv_c99_memo_ent {
    const cv_kexpr *key;
    int uses;                   /* references within the statement */
    int tmp;                    /* its temporary, or -1 */
} cv_c99_memo_ent;

/* The function being written: a kernel, or the run function. */
typedef struct cv_c99_fn {
    cv_sb *out;                 /* statements go here */
    const cv_kprog *p;
    const cv_kernel *k;         /* NULL in the run function */
    int indent;
    int n_tmp;                  /* temporaries named so far */
    bool *need;                 /* by cv_c99_helper: the helper is used */
    const bool *var_live;       /* kernel: variables that are read (others' SETs are dropped) */
    cv_c99_memo_ent *memo;      /* owned */
    int memo_cap, memo_n;
    bool oom;
    bool malformed;             /* KIR the lowering does not know (an internal error) */
    int bad_rt;                 /* a runtime routine with no C99 version, or -1 */
} cv_c99_fn;

/* ---- c99_expr.c ------------------------------------------------------------- */

const char *cv_c99_kty(cv_kty t);
/* The C element type of a tensor of dt in memory. */
const char *cv_c99_elem(cv_dtype dt);
/* Starts a statement: forgets the previous statement's temporaries and
 * counts the references among roots[0..n) (a DAG stays a DAG). */
void cv_c99_begin_stmt(cv_c99_fn *f, const cv_kexpr *const *roots, int n);
/* Appends e's C text to dst; a subexpression used more than once in the
 * statement is first written to f->out as a const temporary. */
void cv_c99_expr(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst);
/* A compute value as the tensor element of dt it is stored as. */
void cv_c99_to_storage(cv_c99_fn *f, const cv_kexpr *v, cv_dtype dt, cv_sb *dst);
void cv_c99_indent(cv_c99_fn *f);
void cv_c99_memo_free(cv_c99_fn *f);
/* Marks e visited in f's memo; true on the first visit (for DAG walks). */
bool cv_c99_first_visit(cv_c99_fn *f, const cv_kexpr *e);
/* Appends an exact C literal of a float (F32 or F64) value. */
void cv_c99_float_lit(cv_sb *sb, double v, bool single);
void cv_c99_int_lit(cv_sb *sb, int64_t v);

/* ---- c99_stmt.c ------------------------------------------------------------- */

/* Emits a statement list at f's indentation. */
void cv_c99_stmts(cv_c99_fn *f, const cv_kstmt *s);
/* Defines kernel k as a static C function into out. */
int cv_c99_kernel(const cv_kprog *p, const cv_kernel *k, bool *need, cv_sb *out, cv_diag *d);

/* ---- c99_runtime.c ------------------------------------------------------------ */

/* The helpers marked in need (and those they use), in dependency order. */
void cv_c99_runtime(bool *need, cv_sb *out);
/* The C name of a kernel runtime routine, marking its helper used; NULL
 * when the C99 runtime has no version of it. */
const char *cv_c99_rt_name(cv_krt fn, bool *need);

/* ---- c99_module.c, c99_weights.c ------------------------------------------------ */

/* Storage s is constant data a kernel reads (a weights array). */
bool cv_c99_is_weight(const cv_kprog *p, int s);
/* The C name of storage s's data (a const weights array). */
void cv_c99_weight_name(const cv_kprog *p, int s, char *buf, size_t size);
/* <name>_weights.c: every used constant storage as a typed array. */
void cv_c99_weights_file(const cv_kprog *p, cv_sb *out);
/* The extern declaration of constant storage s. */
void cv_c99_weight_decl(const cv_kprog *p, int s, cv_sb *out);

#endif
