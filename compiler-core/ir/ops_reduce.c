/* Op family fragment: reductions (reduce_sum/mean/max/min, argmax) and the
 * softmax pair.  Norms are in ops_norm.c, (de)quantization in ops_quant.c.
 *
 * Float reductions accumulate in double; integer reductions are exact on
 * int64 (sums wrap, means truncate toward zero, as ONNX Runtime does). */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_internal.h"
#include "compiler-core/backend/codegen.h"

/* ---- reduce_* ------------------------------------------------------------ */

/* Marks the reduced axes in red[]: `axes` (negative counts from the end), or
 * every axis when absent or empty.  With c given, reports bad axes. */
static int reduced_axes(cv_infer_ctx *c, const cv_op *op, int rank, bool *red)
{
    int64_t axes[CV_MAX_RANK];
    int n = cv_op_ints(op, "axes", axes, CV_MAX_RANK);
    memset(red, 0, CV_MAX_RANK * sizeof *red);
    if (n > rank)  /* more axes than dims: some repeat or are out of range */
        return c ? cv_infer_error(c, CV_E_INVALID_ATTRIBUTE_VALUE, "%s: %d axes given for rank %d", op->name, n, rank) : -1;
    for (int i = 0; i < n; i++) {
        int a = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
        if (c && cv_infer_axis(c, axes[i], rank, &a))
            return -1;
        if (a < 0 || a >= rank)
            return -1;
        if (red[a])
            return c ? cv_infer_error(c, CV_E_INVALID_ATTRIBUTE_VALUE, "%s: axis %lld is listed twice", op->name,
                                      (long long)axes[i]) : -1;
        red[a] = true;
    }
    if (n <= 0)
        for (int i = 0; i < rank; i++)
            red[i] = true;
    return 0;
}

static int keepdims(cv_infer_ctx *c, const char *name, int64_t dflt, bool *out)
{
    int64_t k = cv_op_int(c->op, name, dflt);
    if (k != 0 && k != 1)
        return cv_infer_error(c, CV_E_INVALID_ATTRIBUTE_VALUE, "%s: %s must be 0 or 1, got %lld", c->op->name, name,
                              (long long)k);
    *out = k == 1;
    return 0;
}

/* reduce_* {axes: ints (absent = all), keepdims: int = 1} */
static int infer_reduce(cv_infer_ctx *c)
{
    bool red[CV_MAX_RANK], keep = false;
    const cv_shape *in = &c->in[0].shape;
    if (cv_infer_dtype_in(c, 0, CV_DT_NUMERIC) || reduced_axes(c, c->op, in->rank, red) ||
        keepdims(c, "keepdims", 1, &keep))
        return -1;
    cv_shape *out = &c->out[0].shape;
    out->rank = 0;
    for (int i = 0; i < in->rank; i++) {
        if (!red[i])
            out->d[out->rank++] = in->d[i];
        else if (keep)
            out->d[out->rank++] = (cv_dim){1, NULL};
    }
    c->out[0].dtype = c->in[0].dtype;
    return 0;
}

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD };

/* Accumulates x[i] into acc/iacc; max/min let NaN win, like numpy. */
static void accumulate(int kind, bool exact, double v, int64_t vi, double *acc, int64_t *iacc)
{
    if (exact) {
        if (kind == R_SUM || kind == R_MEAN)
            *iacc = (int64_t)((uint64_t)*iacc + (uint64_t)vi);
        else if (kind == R_PROD)
            *iacc = (int64_t)((uint64_t)*iacc * (uint64_t)vi);
        else if (kind == R_MAX ? vi > *iacc : vi < *iacc)
            *iacc = vi;
    } else if (kind == R_SUM || kind == R_MEAN) {
        *acc += v;
    } else if (kind == R_PROD) {
        *acc *= v;
    } else if (!isnan(*acc) && (isnan(v) || (kind == R_MAX ? v > *acc : v < *acc))) {
        *acc = v;
    }
}

static void reduce_init(int kind, double *acc, int64_t *iacc)
{
    *acc = kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : kind == R_PROD ? 1 : 0;
    *iacc = kind == R_MAX ? INT64_MIN : kind == R_MIN ? INT64_MAX : kind == R_PROD ? 1 : 0;
}

static void reduce_store(cv_tensor *o, int64_t i, int kind, bool exact, int64_t count, double acc,
                         int64_t iacc)
{
    if (count == 0)  /* empty: sum 0, mean NaN, max/min the identity (saturated) */
        cv_tensor_set(o, i, kind == R_MEAN ? NAN : acc);
    else if (!exact)
        cv_tensor_set(o, i, kind == R_MEAN ? acc / (double)count : acc);
    else
        cv_tensor_set_i64(o, i, kind == R_MEAN ? iacc / count : iacc);
}

static int eval_reduce(cv_eval_ctx *c, int kind)
{
    const cv_tensor *x = c->in[0];
    cv_tensor *o = &c->out[0];
    bool red[CV_MAX_RANK], exact = !cv_dtype_is_float(x->dtype);
    reduced_axes(NULL, c->op, x->rank, red);
    /* Output stride of each input axis (0 for reduced ones); keepdims only
     * inserts 1s, which leaves the flat output order unchanged. */
    int64_t ostride[CV_MAX_RANK], s = 1, count = 1, coord[CV_MAX_RANK] = {0};
    for (int d = x->rank - 1; d >= 0; d--) {
        ostride[d] = red[d] ? 0 : s;
        s *= red[d] ? 1 : x->dims[d];
        count *= red[d] ? x->dims[d] : 1;
    }
    double *acc = cv_arena_alloc_array(c->scratch, (size_t)o->numel + 1, sizeof *acc);
    int64_t *iacc = cv_arena_alloc_array(c->scratch, (size_t)o->numel + 1, sizeof *iacc);
    if (!acc || !iacc) {
        cv_diag_error(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "%s: out of memory", c->op->name);
        return -1;
    }
    for (int64_t j = 0; j < o->numel; j++)
        reduce_init(kind, &acc[j], &iacc[j]);
    int64_t oi = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        accumulate(kind, exact, exact ? 0 : cv_tensor_get(x, i), exact ? cv_tensor_get_i64(x, i) : 0,
                   &acc[oi], &iacc[oi]);
        for (int d = x->rank - 1; d >= 0; d--) {  /* odometer step */
            oi += ostride[d];
            if (++coord[d] < x->dims[d])
                break;
            oi -= ostride[d] * coord[d];
            coord[d] = 0;
        }
    }
    for (int64_t j = 0; j < o->numel; j++)
        reduce_store(o, j, kind, exact, count, acc[j], iacc[j]);
    return 0;
}

static int eval_reduce_sum(cv_eval_ctx *c) { return eval_reduce(c, R_SUM); }
static int eval_reduce_mean(cv_eval_ctx *c) { return eval_reduce(c, R_MEAN); }
static int eval_reduce_max(cv_eval_ctx *c) { return eval_reduce(c, R_MAX); }
static int eval_reduce_min(cv_eval_ctx *c) { return eval_reduce(c, R_MIN); }
static int eval_reduce_prod(cv_eval_ctx *c) { return eval_reduce(c, R_PROD); }

/* ---- ops along one axis -------------------------------------------------- */

/* Views x as [outer, n, inner] around axis. */
static void split_axis(const cv_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        *inner *= x->dims[d];
    *n = x->dims[axis];
}

static int axis_of(const cv_op *op, int64_t dflt, int rank)
{
    int64_t a = cv_op_int(op, "axis", dflt);
    return (int)(a < 0 ? a + rank : a);
}

/* argmax {axis: int = 0, keepdims: int = 1, select_last_index: int = 0} -> i64 */
static int infer_argmax(cv_infer_ctx *c)
{
    const cv_shape *in = &c->in[0].shape;
    int axis;
    bool keep = false, last = false;
    if (cv_infer_dtype_in(c, 0, CV_DT_NUMERIC) ||
        cv_infer_axis(c, cv_op_int(c->op, "axis", 0), in->rank, &axis) ||
        keepdims(c, "keepdims", 1, &keep) || keepdims(c, "select_last_index", 0, &last))
        return -1;
    if (!in->d[axis].sym && in->d[axis].n == 0)
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "argmax: axis %d has size 0", axis);
    cv_shape *out = &c->out[0].shape;
    out->rank = 0;
    for (int i = 0; i < in->rank; i++) {
        if (i != axis)
            out->d[out->rank++] = in->d[i];
        else if (keep)
            out->d[out->rank++] = (cv_dim){1, NULL};
    }
    c->out[0].dtype = CV_I64;
    return 0;
}

/* Ties go to the first index (the last with select_last_index); NaN counts
 * as the largest value, like numpy. */
static int eval_argmax(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0];
    int64_t outer, n, inner;
    split_axis(x, axis_of(c->op, 0, x->rank), &outer, &n, &inner);
    bool last = cv_op_int(c->op, "select_last_index", 0) == 1, exact = !cv_dtype_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t base = o * n * inner + k, best = 0;
            for (int64_t j = 1; j < n; j++) {
                int64_t i = base + j * inner, b = base + best * inner;
                bool better;
                if (exact) {
                    int64_t v = cv_tensor_get_i64(x, i), bv = cv_tensor_get_i64(x, b);
                    better = last ? v >= bv : v > bv;
                } else {
                    double v = cv_tensor_get(x, i), bv = cv_tensor_get(x, b);
                    better = isnan(bv) ? (last && isnan(v))
                                       : (isnan(v) || (last ? v >= bv : v > bv));
                }
                if (better)
                    best = j;
            }
            cv_tensor_set_i64(&c->out[0], o * inner + k, best);
        }
    return 0;
}

/* softmax, log_softmax {axis: int = -1}: floats, along one axis (ONNX-13). */
static int infer_softmax(cv_infer_ctx *c)
{
    int axis;
    if (cv_infer_dtype_in(c, 0, CV_DT_FLOATS) ||
        cv_infer_axis(c, cv_op_int(c->op, "axis", -1), c->in[0].shape.rank, &axis))
        return -1;
    c->out[0] = c->in[0];
    return 0;
}

static int eval_softmax_common(cv_eval_ctx *c, bool log_form)
{
    const cv_tensor *x = c->in[0];
    int64_t outer, n, inner;
    split_axis(x, axis_of(c->op, -1, x->rank), &outer, &n, &inner);
    double *v = cv_tensor_to_f64(x, c->scratch);
    if (!v) {
        cv_diag_error(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "%s: out of memory", c->op->name);
        return -1;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double *row = v + o * n * inner + k, mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++)
                mx = fmax(mx, row[j * inner]);
            for (int64_t j = 0; j < n; j++)
                sum += exp(row[j * inner] - mx);
            for (int64_t j = 0; j < n; j++) {
                double d = row[j * inner] - mx;
                row[j * inner] = log_form ? d - log(sum) : exp(d) / sum;
            }
        }
    cv_tensor_from_f64(&c->out[0], v);
    return 0;
}

static int eval_softmax(cv_eval_ctx *c) { return eval_softmax_common(c, false); }
static int eval_log_softmax(cv_eval_ctx *c) { return eval_softmax_common(c, true); }

/* ---- the table ----------------------------------------------------------- */

/* reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod:
 *   axes (ints, optional: absent or [] = all axes), keepdims (int, default 1) */
static const cv_attr_schema reduce_attrs[] = {
    {"axes", CV_ATTR_INTS, false},
    {"keepdims", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* argmax: axis (int, default 0), keepdims (int, default 1),
 *   select_last_index (int, default 0) */
static const cv_attr_schema argmax_attrs[] = {
    {"axis", CV_ATTR_INT, false},
    {"keepdims", CV_ATTR_INT, false},
    {"select_last_index", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* softmax, log_softmax: axis (int, default -1) */
static const cv_attr_schema softmax_attrs[] = {
    {"axis", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    /* reduce_* {axes: ints = all, keepdims: int = 1}: numeric; result dtype = input's. */
    {"reduce_sum", 1, 1, 1, 1, reduce_attrs, infer_reduce, eval_reduce_sum, cv_cg_reduce_sum, 0},
    {"reduce_mean", 1, 1, 1, 1, reduce_attrs, infer_reduce, eval_reduce_mean, cv_cg_reduce_mean, 0},
    {"reduce_max", 1, 1, 1, 1, reduce_attrs, infer_reduce, eval_reduce_max, cv_cg_reduce_max, 0},
    {"reduce_min", 1, 1, 1, 1, reduce_attrs, infer_reduce, eval_reduce_min, cv_cg_reduce_min, 0},
    {"reduce_prod", 1, 1, 1, 1, reduce_attrs, infer_reduce, eval_reduce_prod, cv_cg_reduce_prod, 0},
    /* argmax {axis: int = 0, keepdims: int = 1, select_last_index: int = 0} -> i64 */
    {"argmax", 1, 1, 1, 1, argmax_attrs, infer_argmax, eval_argmax, cv_cg_argmax, 0},
    /* softmax, log_softmax {axis: int = -1}: floats. */
    {"softmax", 1, 1, 1, 1, softmax_attrs, infer_softmax, eval_softmax, cv_cg_softmax, 0},
    {"log_softmax", 1, 1, 1, 1, softmax_attrs, infer_softmax, eval_log_softmax, cv_cg_log_softmax,
     0},
};

const cv_op_family cv_ops_reduce = {defs, (int)(sizeof defs / sizeof defs[0])};
