/* Passes over the compiled program (internal to compiler-core). */
#ifndef CV_PASSES_H
#define CV_PASSES_H

#include "compiler-core/backend/kernel.h"

/* Memory planning: lays out every arena storage of p (size classes by
 * monomial of the symbolic dims, liveness-based first fit within each
 * class, largest first).  Fills stores[].cls/.offset and p->classes. */
int cv_memplan(cv_kprog *p, cv_diag *d);

/* The arena size and the peak-live lower bound (the largest sum of sizes
 * of simultaneously live storages), in bytes, for the given values of the
 * symbolic dims (NULL: all 1). */
void cv_memplan_stats(const cv_kprog *p, const int64_t *syms, int64_t *arena, int64_t *peak);

/* Fusion planning (fusion.c): next[i] is the op whose elementwise work can
 * run inside op i's kernel (-1: none), link[i] the operand of next[i] that
 * takes op i's result.  Both arrays have f->n_ops entries. */
int cv_fusion_plan(const cv_func *f, int *next, int *link);

#endif
