/* ONNX convolutions, pooling, matrix products and (de)quantization.
 * CU-IR's window ops are 2-D: 1-D ONNX ops run on an [N,C,1,L] view, and
 * auto_pad is resolved into explicit pads here (it needs static extents). */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

/* Window geometry in CU-IR form (always two spatial axes). */
typedef struct geom {
    int nsp;                    /* ONNX spatial rank: 1 or 2 */
    int64_t k[2], stride[2], dil[2], pads[4], outpad[2];
} geom;

/* Reads an ONNX per-axis INTS attribute into 2-D form (1-D -> [1, v]). */
static int geom_ints(onnx_ctx *c, const char *name, int nsp, int64_t dflt, int64_t *out)
{
    int64_t v[4];
    int n = onnx_attr_ints(c, name, v, 4);
    if (n == -2)
        return -1;
    out[0] = out[1] = dflt;
    if (n < 0)
        return 0;
    if (n != nsp)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'%s' has %d entries for %d spatial axes", name, n,
                        nsp);
    out[2 - nsp] = v[0];
    if (nsp == 2)
        out[1] = v[1];
    return 0;
}

/* Bounds that keep the window arithmetic below far from overflow. */
#define GEOM_MAX ((int64_t)1 << 20)
#define EXTENT_MAX ((int64_t)1 << 40)

static int geom_check(onnx_ctx *c, const cv_shape *x4, const geom *g)
{
    for (int i = 0; i < 2; i++) {
        cv_dim d = x4->d[2 + i];
        if (g->k[i] < 1 || g->k[i] > GEOM_MAX || g->stride[i] < 1 || g->stride[i] > GEOM_MAX ||
            g->dil[i] < 1 || g->dil[i] > GEOM_MAX || g->outpad[i] < 0 || g->outpad[i] > GEOM_MAX ||
            (!d.sym && d.n > EXTENT_MAX))
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "kernel, strides, dilations and output_padding "
                            "must be positive (output_padding >= 0) and at most %lld",
                            (long long)GEOM_MAX);
    }
    for (int i = 0; i < 4; i++)
        if (g->pads[i] < 0 || g->pads[i] > GEOM_MAX)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "pads must be in [0, %lld]", (long long)GEOM_MAX);
    return 0;
}

/* SAME_UPPER / SAME_LOWER pads for output = ceil(in / stride). */
static int same_pads(onnx_ctx *c, const cv_shape *x, geom *g, bool upper)
{
    for (int i = 0; i < 2; i++) {
        cv_dim d = x->d[2 + i];
        if (d.sym)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "auto_pad needs static spatial extents");
        int64_t out = (d.n + g->stride[i] - 1) / g->stride[i];
        int64_t total = (out - 1) * g->stride[i] + (g->k[i] - 1) * g->dil[i] + 1 - d.n;
        total = total > 0 ? total : 0;
        g->pads[i] = upper ? total / 2 : total - total / 2;
        g->pads[i + 2] = total - g->pads[i];
    }
    return 0;
}

/* x4 is the 4-D (possibly unsqueezed) input shape; kernel extents given. */
static int geom_read(onnx_ctx *c, const cv_shape *x4, int nsp, const int64_t *kernel, geom *g)
{
    const char *auto_pad;
    int64_t p[4];
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    g->k[0] = kernel[0];
    g->k[1] = kernel[1];
    if (geom_ints(c, "strides", nsp, 1, g->stride) < 0 ||
        geom_ints(c, "dilations", nsp, 1, g->dil) < 0 ||
        geom_ints(c, "output_padding", nsp, 0, g->outpad) < 0 ||
        onnx_attr_string(c, "auto_pad", "NOTSET", &auto_pad) < 0)
        return -1;
    int n = onnx_attr_ints(c, "pads", p, 4);
    if (n == -2)
        return -1;
    if (n >= 0 && n != 2 * nsp)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'pads' has %d entries for %d spatial axes", n, nsp);
    if (n > 0 && nsp == 2)
        memcpy(g->pads, p, sizeof p);
    else if (n > 0) {
        g->pads[1] = p[0];
        g->pads[3] = p[1];
    }
    if (geom_check(c, x4, g) < 0)
        return -1;
    if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER"))
        return same_pads(c, x4, g, !strcmp(auto_pad, "SAME_UPPER"));
    if (!strcmp(auto_pad, "VALID"))
        memset(g->pads, 0, sizeof g->pads);
    else if (strcmp(auto_pad, "NOTSET"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "auto_pad '%s' is invalid", auto_pad);
    return 0;
}

static void geom_set(cv_op *o, const geom *g, bool dilation, bool outpad)
{
    if (!o)
        return;
    cv_op_set_ints(o, "stride", g->stride, 2);
    cv_op_set_ints(o, "pad", g->pads, 4);
    if (dilation)
        cv_op_set_ints(o, "dilation", g->dil, 2);
    if (outpad)
        cv_op_set_ints(o, "output_padding", g->outpad, 2);
}

static cv_value *axes_op(onnx_ctx *c, const char *op, cv_value *v, int64_t axis)
{
    cv_op *o = onnx_op(c, op, &v, 1);
    if (o)
        cv_op_set_ints(o, "axes", &axis, 1);
    return onnx_finish(c, o);
}

/* The spatial rank of input 0, after checking that CU-IR can run it. */
static int spatial_rank(onnx_ctx *c, const onnx_val *x)
{
    int r = x ? x->type.shape.rank : 0;
    if (!x)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    if (r != 3 && r != 4)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "only 1-D and 2-D windows are supported "
                        "(input rank %d)", r);
    return r - 2;
}

/* 4-D view of an input: [N,C,L] -> [N,C,1,L]. */
static cv_value *as_4d(onnx_ctx *c, cv_value *v, int nsp)
{
    return nsp == 1 ? axes_op(c, "unsqueeze", v, 2) : v;
}

static int bind_from_4d(onnx_ctx *c, cv_value *y, int nsp)
{
    return onnx_bind_value(c, 0, nsp == 1 && y ? axes_op(c, "squeeze", y, 2) : y);
}

static void shape_4d(const cv_shape *s, int nsp, cv_shape *out)
{
    *out = *s;
    if (nsp == 1) {
        out->rank = 4;
        out->d[3] = s->d[2];
        out->d[2] = (cv_dim){1, NULL};
    }
}

/* ---- Conv, ConvTranspose ------------------------------------------------------ */

/* ConvTranspose's output_shape (or SAME auto_pad: output = in * stride)
 * becomes pads, plus output padding where the pads would be negative. */
static int conv_transpose_shape(onnx_ctx *c, const cv_shape *x4, geom *g)
{
    int64_t want[2], v[2];
    const char *auto_pad;
    int n = onnx_attr_ints(c, "output_shape", v, 2);
    if (n == -2 || onnx_attr_string(c, "auto_pad", "NOTSET", &auto_pad) < 0)
        return -1;
    bool same = !strncmp(auto_pad, "SAME_", 5), upper = !strcmp(auto_pad, "SAME_UPPER");
    if (n < 0 && !same)
        return 0;
    if (n >= 0 && n != g->nsp)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'output_shape' has %d entries", n);
    for (int i = 0; i < 2; i++) {
        cv_dim d = x4->d[2 + i];
        if (d.sym)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "output_shape needs static spatial extents");
        want[i] = n < 0 ? d.n * g->stride[i] : i < 2 - g->nsp ? 1 : v[i - (2 - g->nsp)];
        if (want[i] < 1 || want[i] > EXTENT_MAX)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "output_shape[%d] is out of range", i);
        int64_t total = g->stride[i] * (d.n - 1) + g->outpad[i] + (g->k[i] - 1) * g->dil[i] + 1 -
                        want[i];
        if (total < 0) {
            g->outpad[i] -= total;
            total = 0;
        }
        if (g->outpad[i] > GEOM_MAX)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "output_shape[%d] is out of range", i);
        g->pads[i] = upper ? total / 2 : total - total / 2;
        g->pads[i + 2] = total - g->pads[i];
    }
    return 0;
}

static int conv_common(onnx_ctx *c, bool transpose)
{
    onnx_val *x = onnx_in(c, 0), *w = onnx_in(c, 1);
    int nsp = spatial_rank(c, x);
    int64_t groups, kernel[2];
    if (nsp < 0 || onnx_attr_int(c, "group", 1, &groups) < 0)
        return -1;
    if (!w || w->type.shape.rank != nsp + 2)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the weight must have rank %d", nsp + 2);
    for (int i = 0; i < 2; i++) {
        cv_dim d = i < 2 - nsp ? (cv_dim){1, NULL} : w->type.shape.d[2 + i - (2 - nsp)];
        if (d.sym)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the kernel extent must be static");
        kernel[i] = d.n;
    }
    cv_shape x4;
    geom g;
    shape_4d(&x->type.shape, nsp, &x4);
    if (geom_read(c, &x4, nsp, kernel, &g) < 0)
        return -1;
    if (transpose && conv_transpose_shape(c, &x4, &g) < 0)
        return -1;
    cv_value *ops[3] = {as_4d(c, onnx_in_value(c, 0), nsp), as_4d(c, onnx_in_value(c, 1), nsp),
                        NULL};
    int n = 2;
    if (onnx_in(c, 2))
        ops[n++] = onnx_in_value(c, 2);
    cv_op *o = onnx_op(c, transpose ? "conv_transpose2d" : "conv2d", ops, n);
    geom_set(o, &g, true, transpose);
    if (o)
        cv_op_set_int(o, "groups", groups);
    return bind_from_4d(c, onnx_finish(c, o), nsp);
}

static int lower_conv(onnx_ctx *c) { return conv_common(c, false); }
static int lower_conv_transpose(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (x && x->type.shape.rank == 5)
        return onnx_lower_conv_transpose3d(c);
    return conv_common(c, true);
}

/* ---- pooling --------------------------------------------------------------------- */

static int lower_pool(onnx_ctx *c)
{
    bool max = strcmp(c->node->op_type, "MaxPool") == 0;
    onnx_val *x = onnx_in(c, 0);
    if (x && x->type.shape.rank == 5)
        return onnx_lower_pool3d(c);
    int nsp = spatial_rank(c, x);
    int64_t kernel[2], ceil_mode, include_pad;
    if (nsp < 0 || geom_ints(c, "kernel_shape", nsp, 1, kernel) < 0 ||
        onnx_attr_int(c, "ceil_mode", 0, &ceil_mode) < 0 ||
        onnx_attr_int(c, "count_include_pad", 0, &include_pad) < 0)
        return -1;
    if (!onnx_attr(c, "kernel_shape"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "attribute 'kernel_shape' is required");
    if (max && c->node->n_output > 1 && c->node->output[1][0])
        return onnx_lower_pool_indices(c);
    cv_shape x4;
    geom g;
    shape_4d(&x->type.shape, nsp, &x4);
    if (geom_read(c, &x4, nsp, kernel, &g) < 0)
        return -1;
    if (!max && (g.dil[0] != 1 || g.dil[1] != 1))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "dilated average pooling is not supported");
    cv_value *v = as_4d(c, onnx_in_value(c, 0), nsp);
    cv_op *o = onnx_op(c, max ? "max_pool2d" : "avg_pool2d", &v, 1);
    geom_set(o, &g, max, false);
    if (o) {
        cv_op_set_ints(o, "kernel", g.k, 2);
        cv_op_set_int(o, "ceil_mode", ceil_mode);
        if (!max)
            cv_op_set_int(o, "count_include_pad", include_pad);
    }
    return bind_from_4d(c, onnx_finish(c, o), nsp);
}

static int lower_global_avg_pool(onnx_ctx *c)
{
    return onnx_bind_value(c, 0, onnx_unary(c, "global_avg_pool", onnx_in_value(c, 0)));
}

static int lower_global_max_pool(onnx_ctx *c)
{
    cv_value *x = onnx_in_value(c, 0);
    int r = x ? x->type.shape.rank : 0;
    int64_t axes[CV_MAX_RANK];
    if (x && r < 3)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the input must have rank >= 3");
    for (int i = 2; i < r; i++)
        axes[i - 2] = i;
    cv_op *o = onnx_op(c, "reduce_max", &x, 1);
    if (o) {
        cv_op_set_ints(o, "axes", axes, r - 2);
        cv_op_set_int(o, "keepdims", 1);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ---- Gemm, MatMul ------------------------------------------------------------------ */

static int lower_gemm(onnx_ctx *c)
{
    double alpha, beta;
    int64_t ta, tb;
    if (onnx_attr_float(c, "alpha", 1, &alpha) < 0 || onnx_attr_float(c, "beta", 1, &beta) < 0 ||
        onnx_attr_int(c, "transA", 0, &ta) < 0 || onnx_attr_int(c, "transB", 0, &tb) < 0)
        return -1;
    cv_value *ops[3] = {onnx_in_value(c, 0), onnx_in_value(c, 1), NULL};
    int n = 2;
    if (onnx_in(c, 2))
        ops[n++] = onnx_in_value(c, 2);
    cv_op *o = onnx_op(c, "gemm", ops, n);
    if (o) {
        if (alpha != 1)
            cv_op_set_float(o, "alpha", alpha);
        if (beta != 1)
            cv_op_set_float(o, "beta", beta);
        if (ta)
            cv_op_set_int(o, "trans_a", 1);
        if (tb)
            cv_op_set_int(o, "trans_b", 1);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static int lower_matmul(onnx_ctx *c)
{
    cv_value *a = onnx_in_value(c, 0), *b = onnx_in_value(c, 1);
    return onnx_bind_value(c, 0, onnx_binary(c, "matmul", a, b));
}

/* ---- QuantizeLinear, DequantizeLinear ----------------------------------------- */

static int lower_quant(onnx_ctx *c)
{
    int64_t axis;
    if (onnx_attr_int(c, "axis", 1, &axis) < 0)
        return -1;
    cv_value *ops[3] = {onnx_in_value(c, 0), onnx_in_value(c, 1), NULL};
    int n = 2;
    if (onnx_in(c, 2))
        ops[n++] = onnx_in_value(c, 2);
    cv_op *o = onnx_op(c, c->entry->needs, ops, n);
    if (o && axis != 1)
        cv_op_set_int(o, "axis", axis);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static const onnx_op_entry entries[] = {
    {"Conv", 1, lower_conv, "conv2d unsqueeze squeeze", 0},
    {"ConvTranspose", 1, lower_conv_transpose,
     "conv_transpose2d unsqueeze squeeze transpose slice pad add reshape", 0},
    {"MaxPool", 1, lower_pool, "max_pool2d unsqueeze squeeze reshape pad slice greater where add",
     0},
    {"AveragePool", 7, lower_pool, "avg_pool2d unsqueeze squeeze reshape", 0},
    {"GlobalAveragePool", 1, lower_global_avg_pool, "global_avg_pool", 0},
    {"GlobalMaxPool", 1, lower_global_max_pool, "reduce_max", 0},
    {"Gemm", 7, lower_gemm, "gemm", 0},
    {"MatMul", 1, lower_matmul, "matmul", 0},
    {"QuantizeLinear", 10, lower_quant, "quantize_linear", 0},
    {"DequantizeLinear", 10, lower_quant, "dequantize_linear", 0},
};

const onnx_op_family onnx_ops_nn = {entries, sizeof entries / sizeof entries[0]};
