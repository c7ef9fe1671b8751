/* Passes (internal to compiler-core): graph rewrites of a verified CU-IR
 * function before code generation, and the planning passes over the
 * kernel program. */
#ifndef CV_PASSES_H
#define CV_PASSES_H

#include "compiler-core/backend/kernel.h"

/* ---- graph rewrites (each keeps the function verified and its meaning) ---- */

/* What the rewrites did (cv_passes_run adds up every pass). */
typedef struct cv_pass_stats {
    int ops_before, ops_after;
    int folded;                 /* ops evaluated at compile time (const_fold.c) */
    int bn_folded;              /* batch_norms folded into conv/gemm weights (bn_fold.c) */
    int cse_ops;                /* ops merged into an identical earlier op (cse.c) */
    int cse_params;             /* params merged into an identical earlier param */
    int dead_ops, dead_params;  /* removed because nothing used them (dce.c) */
    int attention_fused;        /* attention chains made one attention op (attention_fuse.c) */
    int layer_norms_fused;      /* decomposed LayerNorms made one layer_norm (norm_fuse.c) */
    int gelus_fused;            /* decomposed GELUs made one gelu (norm_fuse.c) */
    int swishes_fused;          /* x * sigmoid(x) made one silu or hard_swish (norm_fuse.c) */
} cv_pass_stats;

/* Runs const_fold, bn_fold, cse, attention_fuse, norm_fuse and dce on f,
 * in that order.  A pass that cannot work (out of memory) leaves f valid
 * and reports a diagnostic; returns 0 or -1. */
int cv_passes_run(cv_func *f, cv_pass_stats *st, cv_diag *d);

/* Reduced precision (quantize*.c): rewrites f for q->precision (nothing
 * for fp32) and writes the report (ops per type, SQNR) into rep. */
struct cv_quant_opts;
/* QDQ import (quantize_qdq.c): conv2d over dequantize(quantize(x)) with
 * dequantized constant int8 weights becomes qconv2d; *fused counts them. */
int cv_pass_qdq(cv_func *f, int *fused, cv_diag *d);
int cv_passes_quantize(cv_func *f, const struct cv_quant_opts *q, char *rep, size_t size,
                       cv_diag *d);

/* Replaces every op whose operands are all params (constants) by params
 * holding its results, computed by the op's reference kernel -- the very
 * values the interpreter computes.  Results much larger than the op's
 * inputs (expand) stay ops: folding them would only grow the artifact. */
int cv_pass_const_fold(cv_func *f, cv_pass_stats *st, cv_diag *d);
/* Folds batch_norm into the conv2d or gemm producing its input (used by
 * nothing else), when their weights are f32 params: the weights are scaled
 * per output channel and the bias absorbs the shift.  The producer keeps
 * the batch_norm's locations too. */
int cv_pass_bn_fold(cv_func *f, cv_pass_stats *st, cv_diag *d);
/* Common-subexpression elimination: an op with the same definition,
 * operands (in any order for commutative ops), attributes and result types
 * as an earlier op is replaced by it (which keeps both ops' locations);
 * small params with identical bytes are merged first. */
int cv_pass_cse(cv_func *f, cv_pass_stats *st, cv_diag *d);
/* Attention fusion (attention_fuse.c): the matmul / scale / mask /
 * softmax / matmul chain of scaled dot-product attention, with the
 * multi-head transposes around it, becomes one attention op; *fused counts
 * them.  The chain's ops are left for dce. */
int cv_pass_attention_fuse(cv_func *f, int *fused, cv_diag *d);
/* LayerNorm, GELU and swish recognition (norm_fuse.c): the decomposed
 * forms that exporters write (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/
 * Mul/Add; the erf and tanh GELUs; x * Sigmoid(x), x * HardSigmoid(x))
 * become one layer_norm, gelu, silu or hard_swish op. */
int cv_pass_norm_fuse(cv_func *f, int *layer_norms, int *gelus, int *swishes, cv_diag *d);
/* Dead-code elimination: drops ops none of whose results reach a return,
 * and params nothing uses. */
int cv_pass_dce(cv_func *f, cv_pass_stats *st);

/* Shared by the rewrites (rewrite.c). */
/* Every use of `from` (operands, returns) becomes a use of `to`.  A scan of
 * the whole function: a pass that replaces many values uses a forwarding
 * table instead (below), or it is quadratic. */
void cv_pass_replace_uses(cv_func *f, const cv_value *from, cv_value *to);
/* A forwarding table for passes that walk the ops in program order and
 * replace values as they go: to[v->id] stands for v (NULL: v itself), for
 * the n values f had when it was made (later ones are never forwarded).
 * cv_pass_fwd_op rewrites op's operands when the walk reaches op (every use
 * comes after its definition); cv_pass_fwd_returns rewrites the returns. */
typedef struct cv_pass_fwd {
    cv_value **to;  /* owned */
    int n;
} cv_pass_fwd;
int cv_pass_fwd_init(cv_pass_fwd *fw, const cv_func *f);   /* 0, or -1 out of memory */
void cv_pass_fwd_set(cv_pass_fwd *fw, const cv_value *from, cv_value *to);
void cv_pass_fwd_op(const cv_pass_fwd *fw, cv_op *op);
void cv_pass_fwd_returns(const cv_pass_fwd *fw, cv_func *f);
void cv_pass_fwd_free(cv_pass_fwd *fw);
/* Appends src's locations to dst's (dst now stands for both), up to
 * CV_PASS_MAX_MERGED_LOCS in all. */
enum { CV_PASS_MAX_MERGED_LOCS = 64 };
void cv_pass_merge_locs(cv_op *dst, const cv_op *src);
/* Uses of each value (operands and returns), indexed by value id; the
 * caller frees it.  NULL when out of memory. */
int *cv_pass_count_uses(const cv_func *f);
/* Moves the op last appended to f->ops (cv_op_new) to index `at`, before
 * its future users, and renumbers the ops after it. */
void cv_pass_move_last_op(cv_func *f, int at);
/* A new dense param holding t (copied), with an unused name. */
cv_value *cv_pass_add_const(cv_func *f, const cv_tensor *t);

/* ---- planning passes over the kernel program ----------------------------- */

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
 * takes op i's result.  Both arrays have f->n_ops entries.  A chain holds
 * at most CV_FUSION_MAX ops after its producer (cv_codegen_ctx.epi). */
enum { CV_FUSION_MAX = 8 };
int cv_fusion_plan(const cv_func *f, int *next, int *link);

/* Layout planning (layout.c): which ops run in the blocked NCHWc layout
 * ([N][C/blk][H][W][blk]) where the measured rules say it is faster and the
 * reorders at the region's edges pay.  next is the fusion plan. */
typedef struct cv_layout_plan {
    int blk;                    /* channels per block; 0: everything plain */
    uint8_t *op_blocked;        /* by op index (owned): runs a blocked kernel */
    uint8_t *val_blocked;       /* by value id (owned): produced blocked */
    int n_convs;                /* convolutions planned blocked */
} cv_layout_plan;
int cv_layout_plan_make(const cv_func *f, int blk, const int *next, cv_layout_plan *lp);
void cv_layout_plan_free(cv_layout_plan *lp);

#endif
