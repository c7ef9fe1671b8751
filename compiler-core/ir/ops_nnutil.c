/* Helpers shared by the nn and layout op families; see ops_nnutil.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"

int cv_nn_ints_n(cv_infer_ctx *c, const char *name, int n, const int64_t *dflt, int64_t min,
                 int64_t *out)
{
    const cv_attr *a = cv_op_attr(c->op, name);
    if (!a) {
        if (!dflt)
            return cv_infer_error(c, CV_E_MISSING_ATTRIBUTE, "%s requires attribute '%s'", c->op->name, name);
        memcpy(out, dflt, (size_t)n * sizeof *out);
        return 0;
    }
    int got = cv_op_ints(c->op, name, out, n);
    if (got != n)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: '%s' must have %d entries, got %d", c->op->name,
                              name, n, got);
    for (int i = 0; i < n; i++)
        if (out[i] < min)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: '%s'[%d] is %lld, must be at least %lld",
                                  c->op->name, name, i, (long long)out[i], (long long)min);
    return 0;
}

int cv_nn_pads2d(cv_infer_ctx *c, int64_t out[4])
{
    int64_t v[4] = {0, 0, 0, 0};
    int n = cv_op_ints(c->op, "pad", v, 4);
    if (n == 2) {
        v[2] = v[0];
        v[3] = v[1];
    } else if (n != 4 && n != -1) {
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: 'pad' must have 4 entries (top,left,bottom,right) "
                              "or 2 (h,w), got %d", c->op->name, n);
    }
    for (int i = 0; i < 4; i++)
        if (v[i] < 0)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: 'pad'[%d] is %lld, must not be negative",
                                  c->op->name, i, (long long)v[i]);
    memcpy(out, v, sizeof v);
    return 0;
}

int cv_nn_int_min(cv_infer_ctx *c, const char *name, int64_t dflt, int64_t min, int64_t *out)
{
    *out = cv_op_int(c->op, name, dflt);
    if (*out < min)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: '%s' is %lld, must be at least %lld", c->op->name,
                              name, (long long)*out, (long long)min);
    return 0;
}

/* The window count over a symbolic extent: floor((in + pads - eff) / stride)
 * + 1, or in ceil mode min(ceil((in + pads - eff) / stride) + 1,
 * ceil((in + pb) / stride)) (the last window must start before the end
 * padding: the static path's decrement, written as a min). */
static int window_dim_sym(cv_infer_ctx *c, cv_dim in, int64_t eff, int64_t stride, int64_t pb,
                          int64_t pads, bool ceil_mode, cv_dim *out)
{
    cv_dim span, n, last;
    if (cv_infer_dim(c, CV_DIM_ADD, in, (cv_dim){pads - eff, NULL}, &span) ||
        cv_infer_dim(c, ceil_mode ? CV_DIM_CEILDIV : CV_DIM_FLOORDIV, span,
                     (cv_dim){stride, NULL}, &n) ||
        cv_infer_dim(c, CV_DIM_ADD, n, (cv_dim){1, NULL}, &n))
        return -1;
    if (!ceil_mode) {
        *out = n;
        return 0;
    }
    if (cv_infer_dim(c, CV_DIM_ADD, in, (cv_dim){pb, NULL}, &last) ||
        cv_infer_dim(c, CV_DIM_CEILDIV, last, (cv_dim){stride, NULL}, &last))
        return -1;
    return cv_infer_dim(c, CV_DIM_MIN, n, last, out);
}

int cv_nn_window_dim(cv_infer_ctx *c, const char *axis, cv_dim in, int64_t k, int64_t stride,
                     int64_t pb, int64_t pe, int64_t dil, bool ceil_mode, cv_dim *out)
{
    int64_t eff, pads, span;
    if (__builtin_mul_overflow(dil, k - 1, &eff) || __builtin_add_overflow(eff, 1, &eff) ||
        __builtin_add_overflow(pb, pe, &pads))
        return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "%s: window on axis %s overflows", c->op->name, axis);
    if (in.sym)
        return window_dim_sym(c, in, eff, stride, pb, pads, ceil_mode, out);
    if (__builtin_add_overflow(in.n, pads, &span))
        return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "%s: padded extent on axis %s overflows", c->op->name, axis);
    span -= eff;
    if (span < 0)
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "%s: window of %lld (dilated) is larger than the padded "
                              "input %lld on axis %s", c->op->name, (long long)eff,
                              (long long)(in.n + pads), axis);
    int64_t n = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (n - 1) * stride >= in.n + pb)
        n--;  /* the last window would start in the end padding */
    *out = (cv_dim){n, NULL};
    return 0;
}

int cv_nn_dim_product(cv_infer_ctx *c, const cv_dim *d, int n, cv_dim *out)
{
    cv_dim p = {1, NULL};
    for (int i = 0; i < n; i++)
        if (cv_infer_dim(c, CV_DIM_MUL, p, d[i], &p))
            return -1;
    *out = p;
    return 0;
}

int cv_nn_rank(cv_infer_ctx *c, int i, int rank, const char *what)
{
    if (c->in[i].shape.rank == rank)
        return 0;
    return cv_infer_error(c, CV_E_RANK_MISMATCH, "%s: %s must have rank %d, got rank %d", c->op->name, what,
                          rank, c->in[i].shape.rank);
}

int cv_nn_static_dim(cv_infer_ctx *c, cv_dim d, const char *what, int64_t *out)
{
    if (d.sym)
        return cv_infer_error(c, CV_E_SYMBOLIC_ARITHMETIC, "%s: %s must be a fixed number, got symbol %s",
                              c->op->name, what, d.sym);
    *out = d.n;
    return 0;
}

const char *cv_nn_dim_fmt(cv_dim d, char *buf, size_t size)
{
    if (d.sym)
        snprintf(buf, size, "%s", d.sym);
    else
        snprintf(buf, size, "%lld", (long long)d.n);
    return buf;
}

int cv_nn_eval_error(cv_eval_ctx *c, int code, const char *fmt, ...)
{
    char path[256];
    cv_op_path(c->op, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(c->diag, CV_SEV_ERROR, code, cv_op_span(c->op), path, fmt, ap);
    va_end(ap);
    return -1;
}

void cv_nn_copy_strided(void *dst, const void *src, size_t esize, int rank, const int64_t *dims,
                        const int64_t *src_strides, int64_t src_off)
{
    int64_t total = 1;
    for (int i = 0; i < rank; i++)
        total *= dims[i];
    if (total == 0)
        return;
    int64_t coord[CV_MAX_RANK] = {0};
    int64_t off = src_off;
    unsigned char *o = dst;
    const unsigned char *s = src;
    for (int64_t i = 0; i < total; i++) {
        memcpy(o + (size_t)i * esize, s + (size_t)off * esize, esize);
        /* Odometer step: bump the last axis, carrying into earlier ones. */
        for (int a = rank - 1; a >= 0; a--) {
            if (++coord[a] < dims[a]) {
                off += src_strides[a];
                break;
            }
            off -= src_strides[a] * (dims[a] - 1);
            coord[a] = 0;
        }
    }
}
