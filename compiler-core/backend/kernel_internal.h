/* Internal to the backend: program construction shared by kernel.c,
 * program.c and the backends. */
#ifndef CV_BACKEND_KERNEL_INTERNAL_H
#define CV_BACKEND_KERNEL_INTERNAL_H

#include "common/strbuf.h"
#include "compiler-core/backend/kernel.h"

/* Zeroed memory in the program's arena; sets p->oom and returns NULL when
 * allocation fails. */
void *cv_kp_alloc(cv_kprog *p, size_t size);
/* Records a misuse of the kernel API (reported as an internal error). */
void cv_kp_bug(cv_codegen_ctx *c, const char *what);
/* The kernel slot bound to t's storage (added on first use). */
int cv_k_slot(cv_codegen_ctx *c, const cv_kten *t, bool write);
/* The storage a view ultimately reads (itself when not a view). */
int cv_kp_root(const cv_kprog *p, int store);
/* Adds a storage; returns its id or -1. */
int cv_kp_add_store(cv_kprog *p, const cv_kstore *s);

/* ---- dimension expressions (dimlower.c) ---- */
/* The index of symbol name[0..n), or -1. */
int cv_kp_sym_index(const cv_kprog *p, const char *name, size_t n);
/* The bounds the module's facts put on the program's symbols (ir/facts.c):
 * symbol index, largest valid value and what implies it (why may be NULL);
 * returns how many (at most cap).  A run checks them before anything else. */
int cv_kp_sym_bounds(const cv_kprog *p, int *sym, int64_t *max, const char **why, int cap);
/* d as a run-time expression (floor semantics of ir/dimexpr.c); NULL when
 * it names an unknown symbol or divides by a non-constant. */
const cv_kexpr *cv_kp_dim(cv_codegen_ctx *c, cv_dim d);
/* d as C text over the int64_t array arr of symbol values (-1 as above). */
int cv_kp_dim_c(const cv_kprog *p, cv_dim d, const char *arr, cv_sb *out);
/* Extended symbol k (a symbol, or derived dim k - n_syms) as C text. */
void cv_kp_sym_c(const cv_kprog *p, int k, const char *arr, cv_sb *out);
/* The extended index of expression dim d, interned (-1: cannot lower). */
int cv_kp_dsym(cv_kprog *p, cv_dim d);
int cv_kp_dsym_find(const cv_kprog *p, cv_dim d);
/* Every extended symbol's value from the symbols' (NULL: every symbol 1). */
int cv_kp_sym_values(const cv_kprog *p, const int64_t *syms, int64_t *ext);
/* d = coef * syms[0] * ... * syms[n-1]: returns n (syms gets up to
 * 2 * CV_MAX_RANK indices), or -1 when d is no such monomial. */
int cv_kp_dim_monomial(const cv_kprog *p, cv_dim d, int64_t *coef, int *syms);

#endif
