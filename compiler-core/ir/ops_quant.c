/* Op family fragment: linear (de)quantization, per tensor or per axis
 * (ONNX QuantizeLinear / DequantizeLinear), and the int8 convolution qconv2d.
 *
 * Unlike the other reference kernels these compute in float32, not double:
 * x / scale is rounded to f32 before rounding to an integer in ONNX (and in
 * every runtime), and a double quotient would round some near-half cases the
 * other way. */
#include <math.h>

#include "compiler-core/ir/ops_internal.h"
#include "compiler-core/backend/codegen.h"

/* A per-tensor scale or zero point: a scalar or a one-element vector. */
static bool per_tensor(const cv_shape *s)
{
    return s->rank == 0 || (s->rank == 1 && !s->d[0].sym && s->d[0].n == 1);
}

static int operand_error(cv_infer_ctx *c, int code, int i, const char *want)
{
    char got[160];
    cv_type_format(&c->in[i], got, sizeof got);
    return cv_infer_error(c, code, "%s: operand %d is %s but must be %s", c->op->name, i, got, want);
}

/* Shared checks: scale is a float scalar or [x.shape[axis]]; zero_point, if
 * given, has scale's shape and a dtype from zp_mask. */
static int infer_scale(cv_infer_ctx *c, unsigned zp_mask)
{
    const cv_shape *x = &c->in[0].shape, *s = &c->in[1].shape;
    if (cv_infer_dtype_in(c, 1, CV_DT_FLOATS))
        return -1;
    if (s->rank > 1)
        return operand_error(c, 3001, 1, "a scalar or a vector");
    if (!per_tensor(s)) {
        int axis;
        if (cv_infer_axis(c, cv_op_int(c->op, "axis", 1), x->rank, &axis))
            return -1;
        if (!cv_dim_equal(s->d[0], x->d[axis]))
            return operand_error(c, 3002, 1, "as long as the quantization axis of operand 0");
    }
    if (c->n_in > 2) {
        const cv_shape *z = &c->in[2].shape;
        if (cv_infer_dtype_in(c, 2, zp_mask))
            return -1;
        if (!(per_tensor(z) && per_tensor(s)) && !cv_shape_equal(z, s))
            return operand_error(c, 3002, 2, "of the same shape as the scale");
    }
    c->out[0].shape = *x;
    return 0;
}

/* quantize_linear(x, scale, zero_point?) {axis: int = 1}
 * y = saturate(round_half_even(x / scale) + zero_point), u8 unless zero_point is i8. */
static int infer_quantize(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_FLOATS) ||
        infer_scale(c, CV_DT_BIT(CV_U8) | CV_DT_BIT(CV_I8)))
        return -1;
    c->out[0].dtype = c->n_in > 2 ? c->in[2].dtype : CV_U8;
    return 0;
}

/* dequantize_linear(x, scale, zero_point?) {axis: int = 1}
 * y = (x - zero_point) * scale as f32; x is i8, u8 or i32, zero_point has x's dtype. */
static int infer_dequantize(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_BIT(CV_I8) | CV_DT_BIT(CV_U8) | CV_DT_BIT(CV_I32)) ||
        infer_scale(c, CV_DT_ALL) || (c->n_in > 2 && cv_infer_same_dtype(c, 0, 2)))
        return -1;
    c->out[0].dtype = CV_F32;
    return 0;
}

/* The channel (index into scale) of element i, and its stride. */
typedef struct qaxis {
    bool per_axis;
    int64_t inner, channels;
} qaxis;

static qaxis qaxis_of(const cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0], *s = c->in[1];
    qaxis q = {.per_axis = s->rank == 1 && s->dims[0] != 1, .inner = 1, .channels = 1};
    if (!q.per_axis)
        return q;
    int64_t a = cv_op_int(c->op, "axis", 1);
    int axis = (int)(a < 0 ? a + x->rank : a);
    for (int d = axis + 1; d < x->rank; d++)
        q.inner *= x->dims[d];
    q.channels = x->dims[axis];
    return q;
}

static int64_t channel(const qaxis *q, int64_t i)
{
    return q->per_axis ? (i / q->inner) % q->channels : 0;
}

static int eval_quantize(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0], *s = c->in[1], *zp = c->n_in > 2 ? c->in[2] : NULL;
    cv_tensor *o = &c->out[0];
    qaxis q = qaxis_of(c);
    double lo = o->dtype == CV_I8 ? -128 : 0, hi = o->dtype == CV_I8 ? 127 : 255;
    for (int64_t i = 0; i < o->numel; i++) {
        int64_t ch = channel(&q, i);
        float r = nearbyintf((float)cv_tensor_get(x, i) / (float)cv_tensor_get(s, ch));
        double y = (double)r + (zp ? (double)cv_tensor_get_i64(zp, ch) : 0);
        cv_tensor_set(o, i, isnan(y) ? 0 : fmin(fmax(y, lo), hi));
    }
    return 0;
}

static int eval_dequantize(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0], *s = c->in[1], *zp = c->n_in > 2 ? c->in[2] : NULL;
    float *y = c->out[0].data;
    qaxis q = qaxis_of(c);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t ch = channel(&q, i);
        int64_t d = cv_tensor_get_i64(x, i) - (zp ? cv_tensor_get_i64(zp, ch) : 0);
        y[i] = (float)d * (float)cv_tensor_get(s, ch);
    }
    return 0;
}

/* ---- qconv2d: the int8 convolution the int8 pass makes (passes/quantize.c) ---- */

/* qconv2d(x: f32 [N,C,H,W], w: i8 [M,C/groups,kh,kw], w_scale: f32 [M], b?: f32 [M])
 *   {x_scale: float, x_zp: int in [0, 255], stride, pad, dilation, groups as conv2d}
 * -> f32 [N,M,OH,OW]:  y = (x_scale * w_scale[m]) * sum (xq - x_zp) * w + b[m]
 * with xq = saturate_u8(round_half_even(x / x_scale) + x_zp), padding xq = x_zp. */
static int infer_qconv2d(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_BIT(CV_F32)) || cv_infer_dtype_in(c, 1, CV_DT_BIT(CV_I8)) ||
        cv_infer_dtype_in(c, 2, CV_DT_BIT(CV_F32)))
        return -1;
    int64_t zp = cv_op_int(c->op, "x_zp", 0);
    if (zp < 0 || zp > 255 || !(cv_op_float(c->op, "x_scale", 0) > 0))
        return cv_infer_error(c, 3007, "qconv2d: x_scale must be positive and x_zp in [0, 255]");
    const cv_shape *w = &c->in[1].shape, *s = &c->in[2].shape;
    if (w->rank != 4 || s->rank != 1 || !cv_dim_equal(s->d[0], w->d[0]))
        return operand_error(c, 3002, 2, "one scale per output channel");
    /* The geometry is conv2d's: run its shape function on f32 stand-ins. */
    cv_type in[3] = {c->in[0], {CV_F32, *w}, c->n_in > 3 ? c->in[3] : c->in[0]};
    cv_infer_ctx sub = *c;
    sub.in = in;
    sub.n_in = c->n_in > 3 ? 3 : 2;
    return cv_op_def_lookup("conv2d")->infer(&sub);
}

static int eval_qconv2d(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0], *ws = c->in[2], *b = c->n_in > 3 ? c->in[3] : NULL;
    cv_tensor xq = *x, acc = c->out[0];
    float xs = (float)cv_op_float(c->op, "x_scale", 1);
    int64_t zp = cv_op_int(c->op, "x_zp", 0);
    xq.data = cv_arena_alloc_array(c->scratch, (size_t)(x->numel ? x->numel : 1), sizeof(float));
    acc.dtype = CV_I32;
    acc.data = cv_arena_alloc_array(c->scratch, (size_t)(acc.numel ? acc.numel : 1), 4);
    if (!xq.data || !acc.data)
        return cv_diag_error(c->diag, 9002, cv_op_span(c->op), "qconv2d: out of memory"), -1;
    for (int64_t i = 0; i < x->numel; i++) {
        float r = nearbyintf(((const float *)x->data)[i] / xs) + (float)zp;
        ((float *)xq.data)[i] = (isnan(r) ? (float)zp : fminf(fmaxf(r, 0), 255)) - (float)zp;
    }
    /* The integer sums are exact in conv2d's fp64 accumulation. */
    const cv_tensor *ins[2] = {&xq, c->in[1]};
    cv_eval_ctx sub = {.op = c->op, .in = ins, .n_in = 2, .out = &acc, .n_out = 1,
                       .scratch = c->scratch, .diag = c->diag};
    if (cv_op_def_lookup("conv2d")->eval(&sub))
        return -1;
    const int32_t *a = acc.data;
    float *y = c->out[0].data;
    int64_t m = c->out[0].dims[1], plane = c->out[0].dims[2] * c->out[0].dims[3];
    for (int64_t i = 0; i < c->out[0].numel; i++) {
        int64_t oc = i / plane % m;
        float s = xs * ((const float *)ws->data)[oc];
        y[i] = (float)a[i] * s + (b ? ((const float *)b->data)[oc] : 0.0f);
    }
    return 0;
}

static const cv_attr_schema qconv_attrs[] = {
    {"stride", CV_ATTR_INTS, false},
    {"pad", CV_ATTR_INTS, false},
    {"dilation", CV_ATTR_INTS, false},
    {"groups", CV_ATTR_INT, false},
    {"x_scale", CV_ATTR_FLOAT, true},
    {"x_zp", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

/* quantize_linear, dequantize_linear: axis (int, default 1; used when the
 * scale is a vector of more than one element) */
static const cv_attr_schema quant_attrs[] = {
    {"axis", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    /* quantize_linear(x: float, scale: float, zero_point?: u8|i8) {axis: int = 1} -> u8|i8 */
    {"quantize_linear", 2, 3, 1, 1, quant_attrs, infer_quantize, eval_quantize,
     cv_cg_quantize_linear, 0},
    /* dequantize_linear(x: i8|u8|i32, scale: float, zero_point?: x's dtype) {axis: int = 1} -> f32 */
    {"dequantize_linear", 2, 3, 1, 1, quant_attrs, infer_dequantize, eval_dequantize,
     cv_cg_dequantize_linear, 0},
    {"qconv2d", 3, 4, 1, 1, qconv_attrs, infer_qconv2d, eval_qconv2d, cv_cg_qconv2d, 0},
};

const cv_op_family cv_ops_quant = {defs, (int)(sizeof defs / sizeof defs[0])};
