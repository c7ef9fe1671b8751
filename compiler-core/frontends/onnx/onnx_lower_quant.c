/* ONNX integer and quantized-linear ops (QLinearConv, QLinearMatMul,
 * ConvInteger, MatMulInteger, DynamicQuantizeLinear), lowered onto CU-IR's
 * float and integer ops: (de)quantize_linear around conv2d / matmul, or the
 * zero points subtracted in a wider type.  Integer products of 8-bit values
 * are exact in the f64/i64 accumulation of the interpreter and in f32 up to
 * 2^24; the int8 pass (passes/quantize*.c) is what makes int8 kernels. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static cv_value *cast_to(onnx_ctx *c, cv_value *v, cv_dtype dt)
{
    cv_op *o = v ? onnx_op(c, "cast", &v, 1) : NULL;
    if (o)
        cv_op_set_dtype(o, "to", dt);
    return onnx_finish(c, o);
}

static cv_value *unsqueeze(onnx_ctx *c, cv_value *v, const int64_t *axes, int n)
{
    cv_op *o = v ? onnx_op(c, "unsqueeze", &v, 1) : NULL;
    if (o)
        cv_op_set_ints(o, "axes", axes, n);
    return onnx_finish(c, o);
}

/* A per-axis zero point or scale (1-D, more than one element). */
static bool is_vector(const cv_value *v)
{
    return v && v->type.shape.rank == 1 &&
           (v->type.shape.d[0].sym || v->type.shape.d[0].n != 1);
}

/* x - zero_point in dtype dt (zp input zi, absent: x alone); a per-row
 * zero point of a matrix is applied along axis `row_axis` (-1: last). */
static cv_value *minus_zp(onnx_ctx *c, int xi, int zi, cv_dtype dt, bool per_row)
{
    cv_value *x = cast_to(c, onnx_in_value(c, xi), dt);
    if (!onnx_in(c, zi))
        return x;
    cv_value *z = cast_to(c, onnx_in_value(c, zi), dt);
    if (per_row && is_vector(z)) {
        int64_t ax = 1;
        z = unsqueeze(c, z, &ax, 1);
    }
    return x && z ? onnx_binary(c, "sub", x, z) : NULL;
}

static cv_value *dequant(onnx_ctx *c, cv_value *x, cv_value *s, cv_value *zp, int64_t axis)
{
    cv_value *ops[3] = {x, s, zp};
    cv_op *o = x && s ? onnx_op(c, "dequantize_linear", ops, zp ? 3 : 2) : NULL;
    if (o && axis != 1)
        cv_op_set_int(o, "axis", axis);
    return onnx_finish(c, o);
}

static cv_value *quant(onnx_ctx *c, cv_value *x, cv_value *s, cv_value *zp)
{
    cv_value *ops[3] = {x, s, zp};
    return onnx_finish(c, x && s ? onnx_op(c, "quantize_linear", ops, zp ? 3 : 2) : NULL);
}

static cv_value *opt_in(onnx_ctx *c, int i)
{
    return onnx_in(c, i) ? onnx_in_value(c, i) : NULL;
}

/* ---- convolutions (2-D only: the quantized models in use are image models) ---- */

static int conv_attrs(onnx_ctx *c, cv_op *o)
{
    int64_t v[4], groups;
    const char *auto_pad;
    if (onnx_attr_int(c, "group", 1, &groups) < 0 ||
        onnx_attr_string(c, "auto_pad", "NOTSET", &auto_pad) < 0)
        return -1;
    if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "auto_pad '%s' is not supported here", auto_pad);
    static const struct { const char *onnx, *cuir; int n; } a[] = {
        {"strides", "stride", 2}, {"dilations", "dilation", 2}, {"pads", "pad", 4},
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        int n = onnx_attr_ints(c, a[i].onnx, v, 4);
        if (n == -2)
            return -1;
        if (n >= 0 && n != a[i].n)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'%s' must have %d entries for a 2-D "
                            "convolution", a[i].onnx, a[i].n);
        if (n > 0 && o && !(i == 2 && !strcmp(auto_pad, "VALID")))
            cv_op_set_ints(o, a[i].cuir, v, n);
    }
    if (o)
        cv_op_set_int(o, "groups", groups);
    return 0;
}

static int need_2d(onnx_ctx *c, int xi, int wi)
{
    onnx_val *x = onnx_in(c, xi), *w = onnx_in(c, wi);
    if (!x || !w || x->type.shape.rank != 4 || w->type.shape.rank != 4)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "only 2-D convolutions are supported");
    return 0;
}

static cv_value *conv(onnx_ctx *c, cv_value *x, cv_value *w, cv_value *b)
{
    cv_value *ops[3] = {x, w, b};
    cv_op *o = x && w ? onnx_op(c, "conv2d", ops, b ? 3 : 2) : NULL;
    if (!o || conv_attrs(c, o) < 0)
        return NULL;
    return onnx_finish(c, o);
}

/* ConvInteger(x, w, x_zero_point?, w_zero_point?) -> i32: the zero points
 * are subtracted in f32 (exact), so padding adds true zeros as in ORT. */
static int lower_conv_integer(onnx_ctx *c)
{
    if (need_2d(c, 0, 1) < 0)
        return -1;
    cv_value *x = minus_zp(c, 0, 2, CV_F32, false), *w = cast_to(c, onnx_in_value(c, 1), CV_F32);
    if (onnx_in(c, 3)) {
        cv_value *z = cast_to(c, onnx_in_value(c, 3), CV_F32);
        static const int64_t axes[3] = {1, 2, 3};
        if (is_vector(z))
            z = unsqueeze(c, z, axes, 3);
        w = w && z ? onnx_binary(c, "sub", w, z) : NULL;
    }
    return onnx_bind_value(c, 0, cast_to(c, conv(c, x, w, NULL), CV_I32));
}

/* QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, B?): B is i32 in units of xs*ws. */
static int lower_qlinear_conv(onnx_ctx *c)
{
    if (need_2d(c, 0, 3) < 0)
        return -1;
    cv_value *xs = onnx_in_value(c, 1), *ws = onnx_in_value(c, 4);
    cv_value *x = dequant(c, onnx_in_value(c, 0), xs, opt_in(c, 2), 1);
    cv_value *w = dequant(c, onnx_in_value(c, 3), ws, opt_in(c, 5), 0);
    cv_value *b = NULL;
    if (onnx_in(c, 8))
        b = dequant(c, onnx_in_value(c, 8), xs && ws ? onnx_binary(c, "mul", xs, ws) : NULL,
                    NULL, 0);
    cv_value *y = conv(c, x, w, b);
    return onnx_bind_value(c, 0, quant(c, y, onnx_in_value(c, 6), opt_in(c, 7)));
}

/* ---- matrix products ---------------------------------------------------------- */

/* MatMulInteger(a, b, a_zero_point?, b_zero_point?) -> i32 (exact in i64). */
static int lower_matmul_integer(onnx_ctx *c)
{
    cv_value *a = minus_zp(c, 0, 2, CV_I32, true), *b = minus_zp(c, 1, 3, CV_I32, false);
    return onnx_bind_value(c, 0, a && b ? onnx_binary(c, "matmul", a, b) : NULL);
}

/* QLinearMatMul(a, as, azp, b, bs, bzp, ys, yzp): per-column b scales. */
static int lower_qlinear_matmul(onnx_ctx *c)
{
    cv_value *a = dequant(c, onnx_in_value(c, 0), onnx_in_value(c, 1), opt_in(c, 2), 1);
    onnx_val *bv = onnx_in(c, 3);
    int64_t baxis = bv && bv->type.shape.rank >= 2 ? bv->type.shape.rank - 1 : 0;
    cv_value *b = dequant(c, onnx_in_value(c, 3), onnx_in_value(c, 4), opt_in(c, 5), baxis);
    cv_value *y = a && b ? onnx_binary(c, "matmul", a, b) : NULL;
    return onnx_bind_value(c, 0, quant(c, y, onnx_in_value(c, 6), opt_in(c, 7)));
}

/* ---- DynamicQuantizeLinear ------------------------------------------------------ */

/* A reduction over every axis to a scalar. */
static cv_value *reduce_all(onnx_ctx *c, const char *op, cv_value *x)
{
    cv_op *o = x ? onnx_op(c, op, &x, 1) : NULL;
    if (o)
        cv_op_set_int(o, "keepdims", 0);
    return onnx_finish(c, o);
}

/* scale = (max(x, 0) - min(x, 0)) / 255, zp = saturate(round(-min / scale)),
 * y = saturate(round(x / scale) + zp), all u8. */
static int lower_dynamic_quant(onnx_ctx *c)
{
    cv_value *x = onnx_in_value(c, 0), *zero = onnx_scalar(c, CV_F32, 0);
    cv_value *mn = reduce_all(c, "reduce_min", x), *mx = reduce_all(c, "reduce_max", x);
    mn = mn && zero ? onnx_binary(c, "min", mn, zero) : NULL;
    mx = mx && zero ? onnx_binary(c, "max", mx, zero) : NULL;
    cv_value *range = mn && mx ? onnx_binary(c, "sub", mx, mn) : NULL;
    cv_value *k = onnx_scalar(c, CV_F32, 255);
    cv_value *scale = range && k ? onnx_binary(c, "div", range, k) : NULL;
    cv_value *zp = quant(c, mn ? onnx_unary(c, "neg", mn) : NULL, scale, NULL);
    cv_value *y = quant(c, x, scale, zp);
    if (onnx_bind_value(c, 0, y) < 0)
        return -1;
    if (c->node->n_output > 1 && c->node->output[1][0] && onnx_bind_value(c, 1, scale) < 0)
        return -1;
    if (c->node->n_output > 2 && c->node->output[2][0] && onnx_bind_value(c, 2, zp) < 0)
        return -1;
    return 0;
}

static const onnx_op_entry entries[] = {
    {"ConvInteger", 10, lower_conv_integer, "conv2d cast sub unsqueeze", 0},
    {"QLinearConv", 10, lower_qlinear_conv,
     "conv2d quantize_linear dequantize_linear mul", 0},
    {"MatMulInteger", 10, lower_matmul_integer, "matmul cast sub unsqueeze", 0},
    {"QLinearMatMul", 10, lower_qlinear_matmul, "matmul quantize_linear dequantize_linear", 0},
    {"DynamicQuantizeLinear", 11, lower_dynamic_quant,
     "reduce_min reduce_max min max sub div neg quantize_linear", 0},
};

const onnx_op_family onnx_ops_quant = {entries, sizeof entries / sizeof entries[0]};
