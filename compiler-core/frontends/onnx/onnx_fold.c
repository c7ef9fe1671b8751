/* Import-time evaluation of the shape arithmetic exporters emit (Shape,
 * Gather, Unsqueeze, Concat, Slice, arithmetic on shape values, ...).
 * Values may carry symbolic elements (a Shape of an input with dim N):
 * data movement keeps them, arithmetic refuses them (the consumer then
 * reports the shape as data-dependent). */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"
#include "compiler-core/ir/cuir_text.h"

/* Elements folded at import time at most (bigger results stay CU-IR ops). */
#define FOLD_MAX_NUMEL (1 << 20)

bool onnx_foldable(const onnx_const *k)
{
    return k && !k->mapped && k->numel <= FOLD_MAX_NUMEL;
}

static bool has_syms(const onnx_const *k)
{
    for (int64_t i = 0; k->syms && i < k->numel; i++)
        if (k->syms[i])
            return true;
    return false;
}

onnx_const *onnx_fold_view(onnx_ctx *c, const onnx_const *src, int rank, const int64_t *dims,
                           const int64_t *strides, int64_t offset)
{
    onnx_const *k = onnx_const_new(c, src->dt, rank, dims);
    if (!k)
        return NULL;
    size_t es = cv_dtype_size(src->dt);
    bool syms = has_syms(src);
    if (syms && !(k->syms = cv_arena_alloc_array(c->a, (size_t)k->numel + 1, sizeof *k->syms)))
        return NULL;
    int64_t idx[CV_MAX_RANK] = {0}, pos = offset;
    for (int64_t i = 0; i < k->numel; i++) {
        memcpy((char *)k->data + (size_t)i * es, (const char *)src->data + (size_t)pos * es, es);
        if (syms)
            k->syms[i] = src->syms[pos];
        for (int a = rank - 1; a >= 0; a--) {   /* odometer over the result */
            pos += strides[a];
            if (++idx[a] < dims[a])
                break;
            pos -= strides[a] * dims[a];
            idx[a] = 0;
        }
    }
    return k;
}

/* Row-major strides of k. */
static void const_strides(const onnx_const *k, int64_t *st)
{
    int64_t s = 1;
    for (int a = k->rank - 1; a >= 0; a--) {
        st[a] = s;
        s *= k->dims[a];
    }
}

onnx_const *onnx_fold_reshape(onnx_ctx *c, const onnx_const *src, int rank, const int64_t *dims)
{
    onnx_const *k = cv_arena_alloc(c->a, sizeof *k);
    if (!k)
        return NULL;
    *k = *src;   /* constants are immutable: the data is shared */
    k->rank = rank;
    memcpy(k->dims, dims, (size_t)rank * sizeof *dims);
    return k;
}

/* Strides of src broadcast (numpy rules) to the rank-`rank` dims. */
static int broadcast_strides(const onnx_const *src, int rank, const int64_t *dims, int64_t *st)
{
    int64_t own[CV_MAX_RANK];
    const_strides(src, own);
    for (int a = 0; a < rank; a++) {
        int k = a - (rank - src->rank);
        if (k < 0 || src->dims[k] == 1)
            st[a] = 0;
        else if (src->dims[k] == dims[a])
            st[a] = own[k];
        else
            return -1;
    }
    return 0;
}

onnx_const *onnx_fold_expand(onnx_ctx *c, const onnx_const *src, int rank, const int64_t *dims)
{
    int64_t st[CV_MAX_RANK];
    if (rank < src->rank || broadcast_strides(src, rank, dims, st) < 0) {
        onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "cannot broadcast a constant to the requested shape");
        return NULL;
    }
    return onnx_fold_view(c, src, rank, dims, st, 0);
}

/* The numpy broadcast of two shapes into out; -1 when incompatible. */
int onnx_broadcast_dims(int ra, const int64_t *da, int rb, const int64_t *db, int *rank,
                        int64_t *out)
{
    *rank = ra > rb ? ra : rb;
    for (int i = 0; i < *rank; i++) {
        int ia = i - (*rank - ra), ib = i - (*rank - rb);
        int64_t x = ia < 0 ? 1 : da[ia], y = ib < 0 ? 1 : db[ib];
        if (x != y && x != 1 && y != 1)
            return -1;
        out[i] = x == 1 ? y : x;
    }
    return 0;
}

static bool is_cmp(const char *op)
{
    return !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater");
}

static double apply_f(const char *op, double x, double y)
{
    switch (op[0]) {
    case 'A': return x + y;
    case 'S': return x - y;
    case 'M': return op[1] == 'u' ? x * y : op[1] == 'a' ? fmax(x, y) : fmin(x, y);
    case 'D': return x / y;
    case 'E': return x == y;
    case 'L': return x < y;
    case 'G': return x > y;
    default: return NAN;
    }
}

static int64_t apply_i(const char *op, int64_t x, int64_t y)
{
    switch (op[0]) {
    case 'A': return (int64_t)((uint64_t)x + (uint64_t)y);
    case 'S': return (int64_t)((uint64_t)x - (uint64_t)y);
    case 'M': return op[1] == 'u' ? (int64_t)((uint64_t)x * (uint64_t)y)
                   : op[1] == 'a' ? (x > y ? x : y) : (x < y ? x : y);
    case 'D': return y == 0 ? 0 : (x == INT64_MIN && y == -1) ? x : x / y;
    case 'E': return x == y;
    case 'L': return x < y;
    case 'G': return x > y;
    default: return 0;
    }
}

/* Element i of a shape value as a dim: an integer, or its symbol or
 * expression text (onnx_fold_shape stores a dim's sym verbatim). */
cv_dim onnx_const_dim(const onnx_const *k, int64_t i)
{
    const char *s = k->syms ? k->syms[i] : NULL;
    if (!s)
        return (cv_dim){onnx_const_i64(k, i), NULL};
    return (cv_dim){cv_cuir_is_ident(s) || !strpbrk(s, " *()") ? 0 : CV_DIM_EXPR, s};
}

/* Integer Add Sub Mul Div Max Min Equal over shape values with symbolic
 * elements: each element is dimension arithmetic (ir/dimexpr.c); Div is
 * floor division (dims are >= 0).  NULL when an element is not
 * expressible or an Equal cannot be decided. */
static onnx_const *fold_symbolic(onnx_ctx *c, const char *op, const onnx_const *a,
                                 const onnx_const *b, int rank, const int64_t *dims,
                                 const int64_t *sa, const int64_t *sb)
{
    static const struct { const char *name; cv_dim_op op; } map[] = {
        {"Add", CV_DIM_ADD}, {"Sub", CV_DIM_SUB}, {"Mul", CV_DIM_MUL}, {"Div", CV_DIM_FLOORDIV},
        {"Max", CV_DIM_MAX}, {"Min", CV_DIM_MIN}, {"Mod", CV_DIM_MOD}, {"Equal", CV_DIM_SUB}};
    int which = -1;
    for (int i = 0; i < (int)(sizeof map / sizeof *map); i++)
        if (!strcmp(map[i].name, op))
            which = i;
    bool eq = which >= 0 && !strcmp(op, "Equal");
    if (which < 0 || !onnx_const_is_int(a))
        return NULL;
    onnx_const *k = onnx_const_new(c, eq ? CV_BOOL : a->dt, rank, dims);
    if (!k || k->numel > CV_MAX_RANK * CV_MAX_RANK ||
        !(k->syms = cv_arena_alloc_array(c->a, (size_t)k->numel + 1, sizeof *k->syms)))
        return NULL;
    int64_t idx[CV_MAX_RANK] = {0}, pa = 0, pb = 0;
    bool any = false;
    for (int64_t i = 0; i < k->numel; i++) {
        cv_dim r;
        if (cv_dim_arith(c->m, map[which].op, onnx_const_dim(a, pa), onnx_const_dim(b, pb), &r))
            return NULL;
        if (eq) {
            int cmp = cv_dim_compare(onnx_const_dim(a, pa), onnx_const_dim(b, pb));
            if (cmp == CV_DIM_UNKNOWN || cmp == CV_DIM_LE || cmp == CV_DIM_GE)
                return NULL;
            r = (cv_dim){cmp == CV_DIM_EQ, NULL};
        }
        onnx_const_set_i64(k, i, r.sym ? -1 : r.n);
        k->syms[i] = r.sym;
        any |= r.sym != NULL;
        for (int d = rank - 1; d >= 0; d--) {
            pa += sa[d];
            pb += sb[d];
            if (++idx[d] < dims[d])
                break;
            pa -= sa[d] * dims[d];
            pb -= sb[d] * dims[d];
            idx[d] = 0;
        }
    }
    if (!any)
        k->syms = NULL;
    return k;
}

/* Add Sub Mul Div Max Min Equal Less Greater on two constants.  Returns NULL
 * without a report when the operands do not allow folding. */
onnx_const *onnx_fold_binary(onnx_ctx *c, const char *op, const onnx_const *a, const onnx_const *b)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less",
                                      "Greater", NULL};
    int rank, known = 0;
    for (int i = 0; ops[i]; i++)
        known |= !strcmp(ops[i], op);
    int64_t dims[CV_MAX_RANK], sa[CV_MAX_RANK], sb[CV_MAX_RANK];
    if (a->dt != b->dt ||
        onnx_broadcast_dims(a->rank, a->dims, b->rank, b->dims, &rank, dims) < 0 ||
        broadcast_strides(a, rank, dims, sa) < 0 || broadcast_strides(b, rank, dims, sb) < 0)
        return NULL;
    if (has_syms(a) || has_syms(b))
        return fold_symbolic(c, op, a, b, rank, dims, sa, sb);
    if (!known)
        return NULL;
    onnx_const *k = onnx_const_new(c, is_cmp(op) ? CV_BOOL : a->dt, rank, dims);
    if (!k || k->numel > FOLD_MAX_NUMEL)
        return NULL;
    bool exact = !cv_dtype_is_float(a->dt);
    int64_t idx[CV_MAX_RANK] = {0}, pa = 0, pb = 0;
    for (int64_t i = 0; i < k->numel; i++) {
        if (exact)
            onnx_const_set_i64(k, i, apply_i(op, onnx_const_i64(a, pa), onnx_const_i64(b, pb)));
        else
            onnx_const_set_f64(k, i, apply_f(op, onnx_const_f64(a, pa), onnx_const_f64(b, pb)));
        for (int d = rank - 1; d >= 0; d--) {
            pa += sa[d];
            pb += sb[d];
            if (++idx[d] < dims[d])
                break;
            pa -= sa[d] * dims[d];
            pb -= sb[d] * dims[d];
            idx[d] = 0;
        }
    }
    return k;
}

onnx_const *onnx_fold_concat(onnx_ctx *c, const onnx_const *const *in, int n, int axis)
{
    int64_t dims[CV_MAX_RANK];
    const onnx_const *f = in[0];
    memcpy(dims, f->dims, sizeof dims);
    dims[axis] = 0;
    bool syms = false;
    for (int i = 0; i < n; i++) {
        if (in[i]->rank != f->rank || in[i]->dt != f->dt)
            return NULL;
        for (int a = 0; a < f->rank; a++)
            if (a != axis && in[i]->dims[a] != f->dims[a])
                return NULL;
        dims[axis] += in[i]->dims[axis];
        syms |= has_syms(in[i]);
    }
    onnx_const *k = onnx_const_new(c, f->dt, f->rank, dims);
    if (k && syms)
        k->syms = cv_arena_alloc_array(c->a, (size_t)k->numel + 1, sizeof *k->syms);
    if (!k || (syms && !k->syms))
        return NULL;
    size_t es = cv_dtype_size(f->dt);
    int64_t outer = 1, out_pos = 0;
    for (int a = 0; a < axis; a++)
        outer *= f->dims[a];
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            int64_t chunk = outer ? in[i]->numel / outer : 0;
            memcpy((char *)k->data + (size_t)out_pos * es,
                   (const char *)in[i]->data + (size_t)(o * chunk) * es, (size_t)chunk * es);
            for (int64_t j = 0; syms && j < chunk; j++)
                k->syms[out_pos + j] = in[i]->syms ? in[i]->syms[o * chunk + j] : NULL;
            out_pos += chunk;
        }
    return k;
}

onnx_const *onnx_fold_gather(onnx_ctx *c, const onnx_const *src, const onnx_const *idx, int axis)
{
    int rank = src->rank - 1 + idx->rank;
    if (rank > CV_MAX_RANK || !onnx_const_is_int(idx) || has_syms(idx))
        return NULL;
    int64_t dims[CV_MAX_RANK], st[CV_MAX_RANK];
    const_strides(src, st);
    int r = 0;
    for (int a = 0; a < axis; a++)
        dims[r++] = src->dims[a];
    for (int a = 0; a < idx->rank; a++)
        dims[r++] = idx->dims[a];
    for (int a = axis + 1; a < src->rank; a++)
        dims[r++] = src->dims[a];
    onnx_const *k = onnx_const_new(c, src->dt, rank, dims);
    if (!k || (src->syms && !(k->syms = cv_arena_alloc_array(c->a, (size_t)k->numel + 1,
                                                             sizeof *k->syms))))
        return NULL;
    int64_t outer = 1, inner = st[axis], n = src->dims[axis];
    for (int a = 0; a < axis; a++)
        outer *= src->dims[a];
    size_t es = cv_dtype_size(src->dt);
    int64_t pos = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < idx->numel; j++) {
            int64_t g = onnx_const_i64(idx, j);
            if (g < 0)
                g += n;
            if (g < 0 || g >= n) {
                onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "gather index %lld is out of range for %lld",
                         (long long)onnx_const_i64(idx, j), (long long)n);
                return NULL;
            }
            int64_t from = o * n * inner + g * inner;
            memcpy((char *)k->data + (size_t)pos * es, (const char *)src->data + (size_t)from * es,
                   (size_t)inner * es);
            for (int64_t t = 0; src->syms && t < inner; t++)
                k->syms[pos + t] = src->syms[from + t];
            pos += inner;
        }
    return k;
}

onnx_const *onnx_fold_shape(onnx_ctx *c, const cv_type *t, int64_t start, int64_t end)
{
    int64_t r = t->shape.rank;
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    int64_t n = end - start;
    onnx_const *k = onnx_const_new(c, CV_I64, 1, &n);
    if (!k)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        cv_dim d = t->shape.d[start + i];
        onnx_const_set_i64(k, i, d.sym ? -1 : d.n);
        if (d.sym && !k->syms)
            k->syms = cv_arena_alloc_array(c->a, (size_t)n, sizeof *k->syms);
        if (d.sym && !k->syms)
            return NULL;
        if (d.sym)
            k->syms[i] = d.sym;
    }
    return k;
}
