/* Layout planning: which ops run in the blocked (NCHWc) layout, a tensor of
 * C channels stored as [N][C/blk][H][W][blk] (blk = the target's vector
 * width), so that the blk channels of a pixel are one vector.
 *
 * Candidates are the ops with blocked kernels (codegen_nchwc.c): f32
 * convolutions (depthwise; dense ones of at least blk output channels, C
 * and OC padded to whole blocks (24, 40, 1000...: the padding's products
 * count against the gain), among them 3x3 ones, or ones the row tiles run
 * (a 7x7 stem), over a plain image of fewer than blk channels, which read it
 * as it is), max pooling, channel concatenations of whole-block parts
 * (but the last), and a global average pool reading a blocked tensor (it
 * writes the plain result itself).  The elementwise ops fused
 * into a convolution (residual add, an epilogue activation) run in its
 * kernel and follow its layout.
 *
 * A tensor is produced in one layout; a consumer wanting the other gets a
 * reorder (a copy converting it), made once per tensor.  Candidates that
 * share tensors form regions; a region stays blocked only when the time
 * its kernels save (negative for dense convolutions) exceeds what its
 * boundary reorders cost, and regions are re-examined until none changes. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

/* Nanoseconds saved per multiply-add, per pooled output element, and spent
 * per reordered element, measured on AVX-512: one by one (one thread, the
 * shapes of resnet18 and mobilenet_v2) the blocked depthwise kernel takes
 * 0.23-0.87 of the plain one's time (~0.04 ns less per multiply-add); the
 * blocked dense convolution in row tiles (pads of at most the stride: every
 * 3x3 and 1x1 of resnet18) 0.58-0.73 of the packed implicit GEMM's (~0.005
 * ns less per multiply-add), in its general form 0.85-1.8.  The general
 * penalty and the reorder cost are set from the whole models (bench/models,
 * blocked vs --no-blocked-layout): mobilenet_v2 (depthwise convs, 1x1 glue)
 * ran as fast or faster blocked. */
#define NS_DENSE (-0.0005)
#define NS_DENSE_ROWS 0.005
/* What a padded channel's multiply-add costs the blocked kernel: about its
 * time per multiply-add in row tiles (resnet18's 3x3s, ~0.01 ns). */
#define NS_PAD_MAC 0.01
#define NS_DEPTHWISE 0.04
#define NS_POOL 0.1
#define NS_REORDER 0.25

enum { K_NONE, K_DENSE, K_PLAIN_IN, K_DEPTHWISE, K_POOL, K_GAP, K_CONCAT };

/* f32, rank 4, C/H/W static (N may be symbolic). */
static bool image(const cv_value *v)
{
    const cv_shape *s = &v->type.shape;
    return v->type.dtype == CV_F32 && s->rank == 4 && !s->d[1].sym && !s->d[2].sym &&
           !s->d[3].sym && s->d[1].n > 0 && s->d[2].n > 0 && s->d[3].n > 0;
}

static int64_t numel(const cv_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->type.shape.rank; i++)
        n *= v->type.shape.d[i].sym ? 1 : v->type.shape.d[i].n;
    return n;
}

static bool const_f32(const cv_value *v)
{
    return v->kind == CV_VAL_PARAM && v->type.dtype == CV_F32 && v->param && v->param->data;
}

/* -p fp16's weights, cast(f16 constant) -> f32: dense convolutions read
 * them packed in f16 (cvrt_nchwc_conv2d_h), depthwise ones widened at
 * compile time (codegen_half.c). */
static bool const_f16_cast(const cv_value *v)
{
    const cv_op *d = v->kind == CV_VAL_RESULT ? v->def : NULL;
    const cv_value *p = d && d->n_operands == 1 ? d->operands[0] : NULL;
    return p && d->def && cv_op_is(d, CV_OP_CAST) && v->type.dtype == CV_F32 &&
           p->kind == CV_VAL_PARAM && p->type.dtype == CV_F16 && p->param && p->param->data;
}

/* Whether the blocked kernel runs a dense convolution in row tiles
 * (cvrt_nchwc.c): width stride 1 or 2 (2 for a plain input), and taps
 * outside the image only at the first output column (two for a plain
 * input) and at the last. */
static bool row_tiled(const cv_op *op, int64_t W, int64_t KW, int64_t OW, bool plain)
{
    int64_t st[2] = {1, 1}, dil[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    cv_op_ints(op, "stride", st, 2);
    cv_op_ints(op, "dilation", dil, 2);
    cv_op_ints(op, "pad", pad, 4);      /* [top, left, ...]: left is pad[1] either way */
    int64_t sw = st[1], pl = pad[1], ends = plain ? 2 : 1;
    if ((sw != 2 && (sw != 1 || plain)) || pl < 0)
        return false;
    int64_t lo = (pl + sw - 1) / sw, last = W - 1 + pl - (KW - 1) * dil[1];
    int64_t hi = last < 0 ? 0 : last / sw + 1;
    lo = lo < OW ? lo : OW;
    hi = hi < OW ? hi : OW;
    return lo <= ends && OW - (hi > lo ? hi : lo) <= 1;
}

static int conv_kind(const cv_op *op, int blk, double *gain)
{
    if (op->n_operands < 2 || !image(op->operands[0]) || !image(op->results[0]) ||
        !(const_f32(op->operands[1]) || const_f16_cast(op->operands[1])) ||
        (op->n_operands > 2 && !const_f32(op->operands[2])))
        return K_NONE;
    const cv_shape *x = &op->operands[0]->type.shape, *y = &op->results[0]->type.shape;
    const cv_shape *w = &op->operands[1]->type.shape;
    int64_t C = x->d[1].n, OC = y->d[1].n, groups = cv_op_int(op, "groups", 1);
    int64_t KH = w->d[2].n, KW = w->d[3].n;
    double macs = (double)OC * (double)(y->d[2].n * y->d[3].n) * (double)(KH * KW);
    if (groups == C && OC == C && groups > 1 && w->d[1].n == 1) {
        *gain = NS_DEPTHWISE * macs;
        return K_DEPTHWISE;
    }
    /* (Fewer than blk output channels, padded, at least double the work:
     * mnasnet0_5's 16 -> 8 projections ran 9% slower blocked.) */
    if (groups != 1 || OC < blk)
        return K_NONE;
    /* Blocked storage pads channels to whole blocks (zeros past C, zero
     * weights past C and OC): the kernel computes the padded products too. */
    bool plain = C < blk, rows = row_tiled(op, x->d[3].n, KW, y->d[3].n, plain);
    int64_t Cp = plain ? C : (C + blk - 1) / blk * blk, OCp = (OC + blk - 1) / blk * blk;
    *gain = (rows ? NS_DENSE_ROWS : NS_DENSE) * macs * (double)C -
            NS_PAD_MAC * (macs / (double)OC) * (double)(OCp * Cp - OC * C);
    if (!plain)
        return K_DENSE;
    return rows || (KH == 3 && KW == 3) ? K_PLAIN_IN : K_NONE;
}

/* A channel concatenation whose parts (all but the last) are whole blocks:
 * blocked, each part's blocks are a contiguous run of the result's
 * (squeezenet's Fire modules, densenet's, googlenet's inception blocks).
 * It saves nothing itself; it spares its region the reorders around it. */
static int concat_kind(const cv_op *op, int blk)
{
    int64_t axis = cv_op_int(op, "axis", 0);
    if (!image(op->results[0]) || (axis < 0 ? axis + 4 : axis) != 1)
        return K_NONE;
    for (int j = 0; j < op->n_operands; j++)
        if (!image(op->operands[j]) ||
            (j + 1 < op->n_operands && op->operands[j]->type.shape.d[1].n % blk))
            return K_NONE;
    return K_CONCAT;
}

static int op_kind(const cv_op *op, int blk, double *gain)
{
    *gain = 0;
    if (op->n_results != 1)
        return K_NONE;
    if (cv_op_is(op, CV_OP_CONV2D))
        return conv_kind(op, blk, gain);
    if (cv_op_is(op, CV_OP_MAX_POOL2D) && image(op->operands[0]) && image(op->results[0])) {
        int64_t dil[2] = {1, 1};
        cv_op_ints(op, "dilation", dil, 2);
        *gain = NS_POOL * (double)numel(op->results[0]);
        return dil[0] == 1 && dil[1] == 1 ? K_POOL : K_NONE;
    }
    if (cv_op_is(op, CV_OP_GLOBAL_AVG_POOL) && image(op->operands[0]))
        return K_GAP;
    if (cv_op_is(op, CV_OP_CONCAT))
        return concat_kind(op, blk);
    return K_NONE;
}

/* The chain fused after a convolution that its blocked kernel runs: an
 * optional same-shape add, then an optional activation the runtime
 * epilogue computes (the op table's CV_OPF_EPI: relu, clip, silu, hard_swish). */
static int chain_len(const cv_func *f, const int *next, int i)
{
    int n = 0, k = i;
    const cv_value *run = f->ops[i]->results[0];
    if (next[k] >= 0 && cv_op_is(f->ops[next[k]], CV_OP_ADD)) {
        const cv_op *a = f->ops[next[k]];
        const cv_value *other = a->operands[a->operands[0] == run ? 1 : 0];
        if (!cv_shape_equal(&other->type.shape, &run->type.shape) || other->type.dtype != CV_F32)
            return 0;
        k = next[k];
        n++;
    }
    const cv_op *act = next[k] >= 0 ? f->ops[next[k]] : NULL;
    if (act && act->def && CV_OP_EPI_ACT(act->def)) {
        k = next[k];
        n++;
    }
    return next[k] >= 0 ? -1 : n;
}

typedef struct planner {
    const cv_func *f;
    cv_layout_plan *lp;
    int *kind;          /* by op */
    double *gain;       /* by op */
    int *head;          /* by op: the op whose kernel runs it */
    int *region;        /* by op: union-find parent */
    bool *returned;     /* by value */
} planner;

static int find(int *r, int i)
{
    while (r[i] != i)
        i = r[i] = r[r[i]];
    return i;
}

/* The op producing v's storage (a chain's head), or -1. */
static int producer(const planner *pl, const cv_value *v)
{
    /* (A value of an op dead-code elimination removed has a stale def.) */
    return v->kind == CV_VAL_RESULT && v->def && v->def->id >= 0 && v->def->id < pl->f->n_ops &&
                   pl->f->ops[v->def->id] == v->def
               ? pl->head[v->def->id]
               : -1;
}

static bool blocked(const planner *pl, int op)
{
    return op >= 0 && pl->lp->op_blocked[op];
}

/* Whether op (a head) reads operand v in the blocked layout. */
static bool wants_blocked(const planner *pl, int op, const cv_value *v)
{
    if (!blocked(pl, op))
        return false;
    const cv_op *o = pl->f->ops[op];
    if (pl->kind[op] == K_PLAIN_IN && v == o->operands[0])
        return false;
    /* (-p fp16 weights are a cast's result, yet no reorder either) */
    return v != o->operands[1] || (v->kind != CV_VAL_PARAM && !const_f16_cast(v));
}

static void unite(planner *pl)
{
    const cv_func *f = pl->f;
    for (int i = 0; i < f->n_ops; i++)
        pl->region[i] = i;
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        int h = pl->head[i];
        for (int j = 0; j < op->n_operands && blocked(pl, h); j++) {
            int pr = producer(pl, op->operands[j]);
            if (blocked(pl, pr) && wants_blocked(pl, h, op->operands[j]))
                pl->region[find(pl->region, pr)] = find(pl->region, h);
        }
    }
}

/* Reorder cost of value v for region r: produced blocked inside and read
 * plain anywhere, or produced plain and read blocked inside. */
static double reorder_cost(const planner *pl, const cv_value *v, int r, const bool *in_use_b,
                           const bool *in_use_p)
{
    int pr = producer(pl, v);
    bool made_b = blocked(pl, pr) && find(pl->region, pr) == r;
    if (made_b && (in_use_p[v->id] || pl->returned[v->id]))
        return NS_REORDER * (double)numel(v);
    if (!blocked(pl, pr) && in_use_b[v->id])
        return NS_REORDER * (double)numel(v);
    return 0;
}

/* A blocked concatenation whose result is read plain pays a reorder of the
 * whole result; plain, it would pay one per part made blocked (shared with
 * the part's other plain readers) and one of the result if read blocked.
 * Where the first is no cheaper it runs plain (densenet's concatenations
 * feed a batch norm: blocked, each would reorder all the features so far
 * instead of the newest layer's 32 channels). */
static bool drop_concats(planner *pl, const bool *use_b, const bool *use_p)
{
    bool changed = false;
    for (int i = 0; i < pl->f->n_ops; i++) {
        const cv_op *op = pl->f->ops[i];
        const cv_value *y = op->results[0];
        if (pl->kind[i] != K_CONCAT || !blocked(pl, i) ||
            !(use_p[y->id] || pl->returned[y->id]))
            continue;
        double cost_plain = use_b[y->id] ? (double)numel(y) : 0;
        for (int j = 0; j < op->n_operands; j++)
            if (blocked(pl, producer(pl, op->operands[j])) && !use_p[op->operands[j]->id])
                cost_plain += (double)numel(op->operands[j]);
        if ((double)numel(y) >= cost_plain) {
            pl->lp->op_blocked[i] = 0;
            changed = true;
        }
    }
    return changed;
}

/* One round: drops every region that does not pay; true when any did. */
static bool drop_losers(planner *pl, bool *use_b, bool *use_p, double *net)
{
    const cv_func *f = pl->f;
    unite(pl);
    memset(use_b, 0, sizeof *use_b * (size_t)(f->n_values + 1));
    memset(use_p, 0, sizeof *use_p * (size_t)(f->n_values + 1));
    for (int i = 0; i < f->n_ops; i++)
        net[i] = 0;
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        int h = pl->head[i];
        for (int j = 0; j < op->n_operands; j++) {
            const cv_value *v = op->operands[j];
            if (producer(pl, v) == h && h != i)
                continue;   /* the running value of a chain */
            if (wants_blocked(pl, h, v))
                use_b[v->id] = true;
            else if (v->kind != CV_VAL_PARAM)
                use_p[v->id] = true;
        }
        if (blocked(pl, i) && h == i)
            net[find(pl->region, i)] += pl->gain[i];
    }
    /* A value's cost goes to the region producing it, or to the region
     * reading it blocked (any one of them: the reorder is made once). */
    for (int v = 0; v < f->n_values; v++) {
        const cv_value *val = f->values[v];
        int pr = producer(pl, val);
        int r = blocked(pl, pr) ? find(pl->region, pr) : -1;
        for (int i = 0; r < 0 && use_b[v] && i < f->n_ops; i++)
            for (int j = 0; r < 0 && j < f->ops[i]->n_operands; j++)
                if (f->ops[i]->operands[j] == val && wants_blocked(pl, pl->head[i], val))
                    r = find(pl->region, pl->head[i]);
        if (r >= 0)
            net[r] -= reorder_cost(pl, val, r, use_b, use_p);
    }
    /* (then the next round prices the regions without them: a region is
     * dropped for good) */
    if (drop_concats(pl, use_b, use_p))
        return true;
    bool changed = false;
    for (int i = 0; i < f->n_ops; i++) {
        int r = find(pl->region, i);
        /* A global pool alone saves nothing: it only ends a region. */
        bool gap_alone = pl->kind[i] == K_GAP && !blocked(pl, producer(pl, f->ops[i]->operands[0]));
        if (blocked(pl, i) && (net[r] <= 0 || gap_alone)) {
            pl->lp->op_blocked[i] = 0;
            changed = true;
        }
    }
    return changed;
}

static void finish(planner *pl)
{
    const cv_func *f = pl->f;
    cv_layout_plan *lp = pl->lp;
    for (int i = 0; i < f->n_ops; i++) {
        int h = pl->head[i];
        if (!blocked(pl, h) || pl->kind[h] == K_GAP)
            continue;
        lp->val_blocked[f->ops[i]->results[0]->id] = 1;
        if (h == i && pl->kind[i] != K_POOL && pl->kind[i] != K_CONCAT)
            lp->n_convs++;
    }
}

int cv_layout_plan_make(const cv_func *f, int blk, const int *next, cv_layout_plan *lp)
{
    memset(lp, 0, sizeof *lp);
    lp->blk = blk;
    size_t nops = (size_t)f->n_ops + 1, nvals = (size_t)f->n_values + 1;
    lp->op_blocked = calloc(nops, 1);
    lp->val_blocked = calloc(nvals, 1);
    planner pl = {f, lp, calloc(nops, sizeof(int)), calloc(nops, sizeof(double)),
                  calloc(nops, sizeof(int)), calloc(nops, sizeof(int)), calloc(nvals, 1)};
    bool *use_b = calloc(nvals, 1), *use_p = calloc(nvals, 1);
    double *net = calloc(nops, sizeof *net);
    int rc = -1;
    if (!lp->op_blocked || !lp->val_blocked || !pl.kind || !pl.gain || !pl.head ||
        !pl.region || !pl.returned || !use_b || !use_p || !net)
        goto out;
    rc = 0;
    if (blk <= 1)
        goto out;
    for (int i = 0; i < f->n_returns; i++)
        pl.returned[f->returns[i]->id] = true;
    for (int i = 0; i < f->n_ops; i++)
        pl.head[i] = i;
    for (int i = 0; i < f->n_ops; i++) {
        pl.kind[i] = op_kind(f->ops[i], blk, &pl.gain[i]);
        int n = pl.kind[i] == K_NONE || pl.kind[i] == K_GAP || pl.kind[i] == K_CONCAT ? 0
              : pl.kind[i] == K_POOL ? (next[i] >= 0 ? -1 : 0) : chain_len(f, next, i);
        if (pl.kind[i] == K_NONE || n < 0)
            continue;
        int k = i;
        bool ret = pl.returned[f->ops[i]->results[0]->id];
        for (int m = 0; m < n; m++) {
            k = next[k];
            pl.head[k] = i;
            ret = ret || pl.returned[f->ops[k]->results[0]->id];
        }
        /* Returned tensors are the caller's, plain. */
        lp->op_blocked[i] = !ret || pl.kind[i] == K_GAP;
    }
    for (int round = 0; round < 8 && drop_losers(&pl, use_b, use_p, net); round++)
        ;
    finish(&pl);
out:
    free(pl.kind);
    free(pl.gain);
    free(pl.head);
    free(pl.region);
    free(pl.returned);
    free(use_b);
    free(use_p);
    free(net);
    if (rc)
        cv_layout_plan_free(lp);
    return rc;
}

void cv_layout_plan_free(cv_layout_plan *lp)
{
    free(lp->op_blocked);
    free(lp->val_blocked);
    lp->op_blocked = lp->val_blocked = NULL;
}
