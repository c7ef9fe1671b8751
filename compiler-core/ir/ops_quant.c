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
        return operand_error(c, CV_E_RANK_MISMATCH, 1, "a scalar or a vector");
    if (!per_tensor(s)) {
        int axis;
        if (cv_infer_axis(c, cv_op_int(c->op, "axis", 1), x->rank, &axis))
            return -1;
        if (!cv_dim_equal(s->d[0], x->d[axis]))
            return operand_error(c, CV_E_BROADCAST_MISMATCH, 1, "as long as the quantization axis of operand 0");
    }
    if (c->n_in > 2) {
        const cv_shape *z = &c->in[2].shape;
        if (cv_infer_dtype_in(c, 2, zp_mask))
            return -1;
        if (!(per_tensor(z) && per_tensor(s)) && !cv_shape_equal(z, s))
            return operand_error(c, CV_E_BROADCAST_MISMATCH, 2, "of the same shape as the scale");
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

/* qconv2d(x: f32|u8 [N,C,H,W], w: i8 [M,C/groups,kh,kw], w_scale: f32 [M], b?: f32 [M],
 *         res?: f32|u8 [N,M,OH,OW])
 *   {x_scale: float, x_zp: int in [0, 255], stride, pad, dilation, groups as conv2d,
 *    act: 0 none | 1 relu | 2 clip to [act_lo, act_hi], y_scale, y_zp, res_scale, res_zp}
 * -> f32, or u8 when y_scale > 0:
 *   v = (x_scale * w_scale[m]) * sum (xq - x_zp) * w + b[m] + r, through act, where
 *   xq = saturate_u8(round_half_even(x / x_scale) + x_zp) for f32 x (padding xq = x_zp),
 *   xq = x for u8 x (quantised by its producer with x_scale and x_zp);
 *   r = res for f32 res, (res - res_zp) * res_scale for u8 res;
 *   y = v, or saturate_u8(round_half_even(v * (1 / y_scale)) + y_zp) (the
 *   reciprocal rounded to f32 first: a multiply in the kernels): the output
 *   requantised in the kernel for the int8 layers that read it.  (Compiled,
 *   such u8 values are stored channels last: only qconv2d reads them.) */
static int infer_qconv2d(cv_infer_ctx *c)
{
    if (cv_infer_dtype_in(c, 0, CV_DT_BIT(CV_F32) | CV_DT_BIT(CV_U8)) ||
        cv_infer_dtype_in(c, 1, CV_DT_BIT(CV_I8)) || cv_infer_dtype_in(c, 2, CV_DT_BIT(CV_F32)) ||
        (c->n_in > 3 && cv_infer_dtype_in(c, 3, CV_DT_BIT(CV_F32))) ||
        (c->n_in > 4 && cv_infer_dtype_in(c, 4, CV_DT_BIT(CV_F32) | CV_DT_BIT(CV_U8))))
        return -1;
    int64_t zp = cv_op_int(c->op, "x_zp", 0), yzp = cv_op_int(c->op, "y_zp", 0);
    int64_t rzp = cv_op_int(c->op, "res_zp", 0), act = cv_op_int(c->op, "act", 0);
    if (zp < 0 || zp > 255 || !(cv_op_float(c->op, "x_scale", 0) > 0) || yzp < 0 || yzp > 255 ||
        rzp < 0 || rzp > 255 || act < 0 || act > 2 || cv_op_float(c->op, "y_scale", 0) < 0 ||
        (c->n_in > 4 && c->in[4].dtype == CV_U8 && !(cv_op_float(c->op, "res_scale", 0) > 0)))
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "qconv2d: scales must be positive, zero points in "
                              "[0, 255] and act 0, 1 or 2");
    const cv_shape *w = &c->in[1].shape, *s = &c->in[2].shape;
    if (w->rank != 4 || s->rank != 1 || !cv_dim_equal(s->d[0], w->d[0]))
        return operand_error(c, CV_E_BROADCAST_MISMATCH, 2, "one scale per output channel");
    /* The geometry is conv2d's: run its shape function on f32 stand-ins. */
    cv_type in[3] = {{CV_F32, c->in[0].shape}, {CV_F32, *w}, c->n_in > 3 ? c->in[3] : c->in[0]};
    cv_infer_ctx sub = *c;
    sub.in = in;
    sub.n_in = c->n_in > 3 ? 3 : 2;
    if (cv_op_def_lookup("conv2d")->infer(&sub))
        return -1;
    if (c->n_in > 4 && !cv_shape_equal(&c->in[4].shape, &c->out[0].shape))
        return operand_error(c, CV_E_BROADCAST_MISMATCH, 4, "of the result's shape");
    c->out[0].dtype = cv_op_float(c->op, "y_scale", 0) > 0 ? CV_U8 : CV_F32;
    return 0;
}

/* v through qconv2d's residual, activation and output quantisation. */
static double qconv_epilogue(const cv_eval_ctx *c, int64_t i, float v)
{
    const cv_tensor *r = c->n_in > 4 ? c->in[4] : NULL;
    if (r && r->dtype == CV_U8)
        v += (float)(((const uint8_t *)r->data)[i] - cv_op_int(c->op, "res_zp", 0)) *
             (float)cv_op_float(c->op, "res_scale", 1);
    else if (r)
        v += ((const float *)r->data)[i];
    int64_t act = cv_op_int(c->op, "act", 0);
    float lo = (float)cv_op_float(c->op, "act_lo", 0), hi = (float)cv_op_float(c->op, "act_hi", 0);
    if (act == 1)
        v = v < 0 ? 0.0f : v;
    else if (act == 2)
        v = v < lo ? lo : v > hi ? hi : v;
    float ys = (float)cv_op_float(c->op, "y_scale", 0);
    if (!(ys > 0))
        return v;
    float zp = (float)cv_op_int(c->op, "y_zp", 0), q = v * (1.0f / ys);
    q = isnan(q) ? -zp : fminf(fmaxf(q, -zp), 255 - zp);
    return (double)(nearbyintf(q) + zp);
}

static int eval_qconv2d(cv_eval_ctx *c)
{
    const cv_tensor *x = c->in[0], *ws = c->in[2], *b = c->n_in > 3 ? c->in[3] : NULL;
    cv_tensor xq = *x, acc = c->out[0];
    float xs = (float)cv_op_float(c->op, "x_scale", 1);
    int64_t zp = cv_op_int(c->op, "x_zp", 0);
    xq.dtype = CV_F32;
    xq.data = cv_arena_alloc_array(c->scratch, (size_t)(x->numel ? x->numel : 1), sizeof(float));
    acc.dtype = CV_I32;
    acc.data = cv_arena_alloc_array(c->scratch, (size_t)(acc.numel ? acc.numel : 1), 4);
    if (!xq.data || !acc.data)
        return cv_diag_fail(c->diag, CV_E_OUT_OF_MEMORY, cv_op_span(c->op), "qconv2d: out of memory");
    for (int64_t i = 0; i < x->numel; i++) {
        if (x->dtype == CV_U8) {
            ((float *)xq.data)[i] = (float)(((const uint8_t *)x->data)[i] - zp);
            continue;
        }
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
    int64_t m = c->out[0].dims[1], plane = c->out[0].dims[2] * c->out[0].dims[3];
    for (int64_t i = 0; i < c->out[0].numel; i++) {
        int64_t oc = i / plane % m;
        float s = xs * ((const float *)ws->data)[oc];
        cv_tensor_set(&c->out[0], i, qconv_epilogue(c, i, (float)a[i] * s +
                                                    (b ? ((const float *)b->data)[oc] : 0.0f)));
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
    {"act", CV_ATTR_INT, false},
    {"act_lo", CV_ATTR_FLOAT, false},
    {"act_hi", CV_ATTR_FLOAT, false},
    {"y_scale", CV_ATTR_FLOAT, false},
    {"y_zp", CV_ATTR_INT, false},
    {"res_scale", CV_ATTR_FLOAT, false},
    {"res_zp", CV_ATTR_INT, false},
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
    {"qconv2d", 3, 5, 1, 1, qconv_attrs, infer_qconv2d, eval_qconv2d, cv_cg_qconv2d, 0},
};

const cv_op_family cv_ops_quant = {defs, (int)(sizeof defs / sizeof defs[0])};
