/* Op family fragment: nn convolutions (conv2d, conv_transpose2d).  Matrix
 * products live in ops_matmul.c, pooling in ops_pool.c, resize in
 * ops_resize.c.  Layout is NCHW; weights are OIHW (conv2d) and IOHW
 * (conv_transpose2d), as in ONNX and PyTorch. */
#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

typedef struct conv_params {
    int64_t stride[2], pad[4], dil[2], groups, outpad[2];
} conv_params;

static const int64_t ones2[2] = {1, 1}, zeros2[2] = {0, 0};

/* Reads and validates the attributes; also used by the kernels, so a kernel
 * called on an op that was never inferred still reports bad attributes. */
static int conv_params_read(cv_infer_ctx *c, bool transpose, conv_params *p)
{
    if (cv_nn_ints_n(c, "stride", 2, ones2, 1, p->stride) || cv_nn_pads2d(c, p->pad) ||
        cv_nn_ints_n(c, "dilation", 2, ones2, 1, p->dil) ||
        cv_nn_int_min(c, "groups", 1, 1, &p->groups))
        return -1;
    p->outpad[0] = p->outpad[1] = 0;
    if (!transpose)
        return 0;
    if (cv_nn_ints_n(c, "output_padding", 2, zeros2, 0, p->outpad))
        return -1;
    for (int i = 0; i < 2; i++)
        if (p->outpad[i] >= p->stride[i] && p->outpad[i] >= p->dil[i])
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: output_padding[%d]=%lld must be smaller than "
                                  "the stride or the dilation", c->op->name, i,
                                  (long long)p->outpad[i]);
    return 0;
}

/* in * groups for a channel count that may be symbolic (only groups == 1). */
static int channels_times(cv_infer_ctx *c, cv_dim d, int64_t groups, cv_dim *out)
{
    if (groups == 1) {
        *out = d;
        return 0;
    }
    return cv_infer_dim(c, CV_DIM_MUL, d, (cv_dim){groups, NULL}, out);
}

static int check_divisible(cv_infer_ctx *c, cv_dim d, int64_t groups, const char *what)
{
    char b[32];
    if (groups == 1)
        return 0;
    if (d.sym || d.n % groups)
        return cv_infer_error(c, CV_E_CHANNEL_MISMATCH, "%s: %s channels (%s) are not divisible by groups=%lld",
                              c->op->name, what, cv_nn_dim_fmt(d, b, sizeof b), (long long)groups);
    return 0;
}

static int check_bias(cv_infer_ctx *c, cv_dim m)
{
    char b1[32], b2[32];
    if (c->n_in < 3)
        return 0;
    if (cv_infer_same_dtype(c, 0, 2) || cv_nn_rank(c, 2, 1, "bias"))
        return -1;
    if (!cv_dim_equal(c->in[2].shape.d[0], m))
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "%s: bias has %s entries but there are %s output channels",
                              c->op->name, cv_nn_dim_fmt(c->in[2].shape.d[0], b1, sizeof b1),
                              cv_nn_dim_fmt(m, b2, sizeof b2));
    return 0;
}

/* Transposed-convolution extent: stride*(in-1) + outpad + dil*(k-1) + 1 - pb - pe. */
static int transpose_dim(cv_infer_ctx *c, const char *axis, cv_dim in, int64_t k, int64_t stride,
                         int64_t pb, int64_t pe, int64_t dil, int64_t outpad, cv_dim *out)
{
    int64_t extra = dil * (k - 1) + outpad;  /* dil and k are bounded by the caller */
    if (__builtin_sub_overflow(extra, pb, &extra) || __builtin_sub_overflow(extra, pe, &extra))
        return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "%s: padding on axis %s overflows", c->op->name, axis);
    if (in.sym)
        return cv_infer_dim(c, CV_DIM_SUB, in, (cv_dim){1, NULL}, out) ||
               cv_infer_dim(c, CV_DIM_MUL, *out, (cv_dim){stride, NULL}, out) ||
               cv_infer_dim(c, CV_DIM_ADD, *out, (cv_dim){extra + 1, NULL}, out) ? -1 : 0;
    int64_t n;
    if (__builtin_mul_overflow(stride, in.n - 1, &n) || __builtin_add_overflow(n, extra + 1, &n))
        return cv_infer_error(c, CV_E_DIMENSION_OVERFLOW, "%s: output extent on axis %s overflows", c->op->name, axis);
    if (n <= 0)
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "%s: output extent on axis %s would be %lld", c->op->name,
                              axis, (long long)n);
    *out = (cv_dim){n, NULL};
    return 0;
}

static int conv_infer_common(cv_infer_ctx *c, bool transpose)
{
    conv_params p;
    if (cv_infer_dtype_in(c, 0, CV_DT_FLOATS) || cv_infer_same_dtype(c, 0, 1) ||
        cv_nn_rank(c, 0, 4, "input") || cv_nn_rank(c, 1, 4, "weight") ||
        conv_params_read(c, transpose, &p))
        return -1;
    const cv_dim *x = c->in[0].shape.d, *w = c->in[1].shape.d;
    int64_t kh, kw;
    if (cv_nn_static_dim(c, w[2], "kernel height", &kh) ||
        cv_nn_static_dim(c, w[3], "kernel width", &kw))
        return -1;
    if (kh < 1 || kw < 1)
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "%s: kernel %lldx%lld is empty", c->op->name,
                              (long long)kh, (long long)kw);
    const int64_t big = 1 << 20;
    if (p.dil[0] > big || p.dil[1] > big || p.stride[0] > big || p.stride[1] > big || kh > big ||
        kw > big)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: kernel, stride or dilation is implausibly large",
                              c->op->name);
    /* conv2d: weight [M, C/g, kh, kw]; conv_transpose2d: weight [C, M/g, kh, kw]. */
    cv_dim expect_c, m;
    char b1[32], b2[32];
    if (transpose) {
        expect_c = w[0];
        if (check_divisible(c, w[0], p.groups, "input") || channels_times(c, w[1], p.groups, &m))
            return -1;
    } else {
        m = w[0];
        if (check_divisible(c, w[0], p.groups, "output") ||
            channels_times(c, w[1], p.groups, &expect_c))
            return -1;
    }
    if (!cv_dim_equal(x[1], expect_c))
        return cv_infer_error(c, CV_E_CHANNEL_MISMATCH, "%s input has %s channels but weight expects %s",
                              c->op->name, cv_nn_dim_fmt(x[1], b1, sizeof b1),
                              cv_nn_dim_fmt(expect_c, b2, sizeof b2));
    if (check_bias(c, m))
        return -1;
    cv_type *o = &c->out[0];
    o->dtype = c->in[0].dtype;
    o->shape.rank = 4;
    o->shape.d[0] = x[0];
    o->shape.d[1] = m;
    if (transpose)
        return transpose_dim(c, "H", x[2], kh, p.stride[0], p.pad[0], p.pad[2], p.dil[0],
                             p.outpad[0], &o->shape.d[2]) ||
               transpose_dim(c, "W", x[3], kw, p.stride[1], p.pad[1], p.pad[3], p.dil[1],
                             p.outpad[1], &o->shape.d[3]) ? -1 : 0;
    return cv_nn_window_dim(c, "H", x[2], kh, p.stride[0], p.pad[0], p.pad[2], p.dil[0], false,
                            &o->shape.d[2]) ||
           cv_nn_window_dim(c, "W", x[3], kw, p.stride[1], p.pad[1], p.pad[3], p.dil[1], false,
                            &o->shape.d[3]) ? -1 : 0;
}

static int conv2d_infer(cv_infer_ctx *c) { return conv_infer_common(c, false); }
static int conv_transpose2d_infer(cv_infer_ctx *c) { return conv_infer_common(c, true); }

/* Geometry and fp64 data of one convolution evaluation. */
typedef struct conv_run {
    conv_params p;
    int64_t n, ci, h, w;        /* input dims */
    int64_t co, oh, ow;         /* output dims */
    int64_t kh, kw, cig, cog;   /* kernel size, channels per group in and out */
    const double *x, *wt, *b;
    double *y;
} conv_run;

static int conv_run_init(cv_eval_ctx *c, bool transpose, conv_run *r)
{
    cv_infer_ctx ic = {.op = c->op, .diag = c->diag};
    if (conv_params_read(&ic, transpose, &r->p))
        return -1;
    const cv_tensor *x = c->in[0], *w = c->in[1], *y = &c->out[0];
    r->n = x->dims[0], r->ci = x->dims[1], r->h = x->dims[2], r->w = x->dims[3];
    r->co = y->dims[1], r->oh = y->dims[2], r->ow = y->dims[3];
    r->kh = w->dims[2], r->kw = w->dims[3];
    r->cig = r->ci / r->p.groups;
    r->cog = r->co / r->p.groups;
    r->x = cv_tensor_to_f64(x, c->scratch);
    r->wt = cv_tensor_to_f64(w, c->scratch);
    r->b = c->n_in > 2 ? cv_tensor_to_f64(c->in[2], c->scratch) : NULL;
    r->y = cv_arena_alloc_array(c->scratch, (size_t)(y->numel ? y->numel : 1), sizeof *r->y);
    if (!r->x || !r->wt || !r->y || (c->n_in > 2 && !r->b))
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "%s: out of memory", c->op->name);
    return 0;
}

/* The outputs o in [*lo, *hi) whose tap o*stride + off lands inside [0, in). */
static void tap_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t *lo,
                      int64_t *hi)
{
    *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    *hi = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
    if (*hi > out)
        *hi = out;
    if (*lo > *hi)
        *lo = *hi;
}

/* Adds weight wv times the input plane xp, shifted by tap (ky, kx), into the
 * output plane yp.  Looping over whole rows per tap keeps the inner loop
 * free of bounds checks; each output still sums its taps in the order
 * (channel, ky, kx). */
static void conv_tap(const conv_run *r, const double *xp, double *yp, double wv, int64_t ky,
                     int64_t kx)
{
    int64_t offy = ky * r->p.dil[0] - r->p.pad[0], offx = kx * r->p.dil[1] - r->p.pad[1];
    int64_t y0, y1, x0, x1, sx = r->p.stride[1];
    tap_range(offy, r->p.stride[0], r->h, r->oh, &y0, &y1);
    tap_range(offx, sx, r->w, r->ow, &x0, &x1);
    for (int64_t oy = y0; oy < y1; oy++) {
        const double *xr = xp + (oy * r->p.stride[0] + offy) * r->w + offx;
        double *yr = yp + oy * r->ow;
        for (int64_t ox = x0; ox < x1; ox++)
            yr[ox] += wv * xr[ox * sx];
    }
}

static int conv2d_eval(cv_eval_ctx *c)
{
    conv_run r;
    if (conv_run_init(c, false, &r))
        return -1;
    int64_t plane = r.oh * r.ow;
    for (int64_t n = 0; n < r.n; n++)
        for (int64_t m = 0; m < r.co; m++) {
            double *yp = r.y + (n * r.co + m) * plane;
            int64_t g = m / r.cog;
            for (int64_t i = 0; i < plane; i++)
                yp[i] = r.b ? r.b[m] : 0.0;
            for (int64_t ci = 0; ci < r.cig; ci++) {
                const double *xp = r.x + (n * r.ci + g * r.cig + ci) * r.h * r.w;
                const double *wp = r.wt + (m * r.cig + ci) * r.kh * r.kw;
                for (int64_t ky = 0; ky < r.kh; ky++)
                    for (int64_t kx = 0; kx < r.kw; kx++)
                        conv_tap(&r, xp, yp, wp[ky * r.kw + kx], ky, kx);
            }
        }
    cv_tensor_from_f64(&c->out[0], r.y);
    return 0;
}

/* Scatters input plane xp through weight wv at tap (ky, kx) into the output
 * plane yp: input (iy, ix) lands on (iy*sh - pt + ky*dh, ix*sw - pl + kx*dw). */
static void convt_tap(const conv_run *r, const double *xp, double *yp, double wv, int64_t ky,
                      int64_t kx)
{
    int64_t offy = ky * r->p.dil[0] - r->p.pad[0], offx = kx * r->p.dil[1] - r->p.pad[1];
    int64_t y0, y1, x0, x1, sx = r->p.stride[1];
    tap_range(offy, r->p.stride[0], r->oh, r->h, &y0, &y1);
    tap_range(offx, sx, r->ow, r->w, &x0, &x1);
    for (int64_t iy = y0; iy < y1; iy++) {
        const double *xr = xp + iy * r->w;
        double *yr = yp + (iy * r->p.stride[0] + offy) * r->ow + offx;
        for (int64_t ix = x0; ix < x1; ix++)
            yr[ix * sx] += wv * xr[ix];
    }
}

static int conv_transpose2d_eval(cv_eval_ctx *c)
{
    conv_run r;
    if (conv_run_init(c, true, &r))
        return -1;
    int64_t plane = r.oh * r.ow;
    for (int64_t n = 0; n < r.n; n++)
        for (int64_t m = 0; m < r.co; m++) {
            double *yp = r.y + (n * r.co + m) * plane;
            int64_t g = m / r.cog, mo = m % r.cog;
            for (int64_t i = 0; i < plane; i++)
                yp[i] = r.b ? r.b[m] : 0.0;
            for (int64_t ci = g * r.cig; ci < (g + 1) * r.cig; ci++) {
                const double *xp = r.x + (n * r.ci + ci) * r.h * r.w;
                const double *wp = r.wt + (ci * r.cog + mo) * r.kh * r.kw;
                for (int64_t ky = 0; ky < r.kh; ky++)
                    for (int64_t kx = 0; kx < r.kw; kx++)
                        convt_tap(&r, xp, yp, wp[ky * r.kw + kx], ky, kx);
            }
        }
    cv_tensor_from_f64(&c->out[0], r.y);
    return 0;
}

/* conv2d(x: [N,C,H,W], w: [M,C/groups,kH,kW], b?: [M]) -> [N,M,OH,OW]
 *   stride   INTS [sh,sw]                     default [1,1]
 *   pad      INTS [top,left,bottom,right]     default [0,0,0,0]; [h,w] = symmetric
 *   dilation INTS [dh,dw]                     default [1,1]
 *   groups   INT                              default 1 (C and M divisible by it;
 *                                             groups == C == M is depthwise)
 * OH = floor((H + top + bottom - dh*(kH-1) - 1) / sh) + 1.
 *
 * conv_transpose2d(x: [N,C,H,W], w: [C,M/groups,kH,kW], b?: [M]) -> [N,M,OH,OW]
 *   stride, pad, dilation, groups as conv2d;
 *   output_padding INTS [oh,ow]               default [0,0] (each < stride or dilation)
 * OH = sh*(H-1) + oh + dh*(kH-1) + 1 - top - bottom.  ONNX's output_shape and
 * auto_pad are resolved into pad by the front end. */
static const cv_attr_schema conv_attrs[] = {
    {"stride", CV_ATTR_INTS, false},
    {"pad", CV_ATTR_INTS, false},
    {"dilation", CV_ATTR_INTS, false},
    {"groups", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_attr_schema conv_transpose_attrs[] = {
    {"stride", CV_ATTR_INTS, false},
    {"pad", CV_ATTR_INTS, false},
    {"dilation", CV_ATTR_INTS, false},
    {"groups", CV_ATTR_INT, false},
    {"output_padding", CV_ATTR_INTS, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"conv2d", 2, 3, 1, 1, conv_attrs, conv2d_infer, conv2d_eval, cv_cg_conv2d, 0},
    {"conv_transpose2d", 2, 3, 1, 1, conv_transpose_attrs, conv_transpose2d_infer,
     conv_transpose2d_eval, cv_cg_conv_transpose2d, 0},
};

const cv_op_family cv_ops_nn = {defs, (int)(sizeof defs / sizeof defs[0])};
