/* Op family fragment: resize (ONNX Resize, nearest and linear, any rank).
 * Both modes are separable, so the kernel resizes one axis at a time. */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL };

static const char *const ct_names[] = {"half_pixel", "asymmetric", "align_corners",
                                       "pytorch_half_pixel", NULL};
static const char *const nm_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
                                       NULL};
static const char *const mode_names[] = {"nearest", "linear", NULL};

typedef struct resize_params {
    int linear, ct, nearest;
    double scale[CV_MAX_RANK];  /* per axis; <= 0 means out/in (sizes given) */
    int64_t size[CV_MAX_RANK];  /* per axis; -1 when derived from the scale */
} resize_params;

static int pick(cv_infer_ctx *c, const char *attr, const char *dflt, const char *const *names,
                int *out)
{
    const char *v = cv_op_string(c->op, attr, dflt);
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return cv_infer_error(c, CV_E_UNSUPPORTED_ATTRIBUTE_VALUE, "resize: %s '%s' is not supported", attr, v);
}

/* scales/sizes cover every axis, or (n == 2) only the last two. */
static int resize_params_read(cv_infer_ctx *c, int rank, resize_params *p)
{
    if (pick(c, "mode", "nearest", mode_names, &p->linear) ||
        pick(c, "coordinate_transformation_mode", "half_pixel", ct_names, &p->ct) ||
        pick(c, "nearest_mode", "round_prefer_floor", nm_names, &p->nearest))
        return -1;
    const cv_attr *sc = cv_op_attr(c->op, "scales"), *sz = cv_op_attr(c->op, "sizes");
    if (!sc == !sz)
        return cv_infer_error(c, sc ? CV_E_INVALID_ATTRIBUTE_VALUE : CV_E_MISSING_ATTRIBUTE, "resize takes exactly one of 'scales' and "
                              "'sizes'");
    int n = sc ? sc->n : sz->n;
    if (sc && sc->kind == CV_ATTR_INT)
        n = 1;
    if (n != rank && !(n == 2 && rank >= 2))
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "resize: '%s' must have %d entries (or 2 for the last two "
                              "axes), got %d", sc ? "scales" : "sizes", rank, n);
    for (int i = 0; i < rank; i++) {
        int k = i - (rank - n);
        p->scale[i] = 1.0;
        p->size[i] = -1;
        if (k < 0)
            continue;
        if (sz) {
            p->size[i] = sz->kind == CV_ATTR_INTS ? sz->ints[k] : sz->i;
            p->scale[i] = 0.0;
            if (p->size[i] < 1)
                return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "resize: sizes[%d] is %lld, must be positive", k,
                                      (long long)p->size[i]);
        } else {
            p->scale[i] = sc->kind == CV_ATTR_FLOATS ? sc->floats[k]
                          : sc->kind == CV_ATTR_INTS ? (double)sc->ints[k] : (double)sc->i;
            if (!(p->scale[i] > 0.0 && p->scale[i] < 1e6))
                return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "resize: scales[%d] is %g, must be positive", k,
                                      p->scale[i]);
        }
    }
    return 0;
}

/* Output extent of one axis: sizes win, else floor(in * scale). */
static int resize_dim(cv_infer_ctx *c, const resize_params *p, int i, cv_dim in, cv_dim *out)
{
    if (p->size[i] >= 0) {
        *out = (cv_dim){p->size[i], NULL};
        return 0;
    }
    if (p->scale[i] == 1.0) {
        *out = in;
        return 0;
    }
    if (in.sym) {
        /* floor(in * p / q) when the scale is p / q exactly, q a power of two
         * (2.0, 0.5, 1.5): then the double product floors the same way. */
        for (int64_t q = 1; q <= 1024; q *= 2) {
            double pq = p->scale[i] * (double)q;
            if (pq == floor(pq) && pq > 0 && pq < 1e9) {
                cv_dim t;
                return cv_infer_dim(c, CV_DIM_MUL, in, (cv_dim){(int64_t)pq, NULL}, &t) ||
                       cv_infer_dim(c, CV_DIM_FLOORDIV, t, (cv_dim){q, NULL}, out) ? -1 : 0;
            }
        }
        return cv_infer_error(c, CV_E_SYMBOLIC_ARITHMETIC, "resize: scaling symbolic axis %d (%s) by %g is not "
                              "expressible", i, in.sym, p->scale[i]);
    }
    double v = floor((double)in.n * p->scale[i]);
    if (v < 1 || v > 4e18)
        return cv_infer_error(c, CV_E_INVALID_DIMENSION, "resize: axis %d would have extent %g", i, v);
    *out = (cv_dim){(int64_t)v, NULL};
    return 0;
}

static int resize_infer(cv_infer_ctx *c)
{
    resize_params p;
    const cv_shape *s = &c->in[0].shape;
    if (s->rank < 1)
        return cv_infer_error(c, CV_E_RANK_MISMATCH, "resize: input must have rank >= 1");
    if (cv_infer_dtype_in(c, 0, CV_DT_NUMERIC) || resize_params_read(c, s->rank, &p))
        return -1;
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].shape.rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        if (resize_dim(c, &p, i, s->d[i], &c->out[0].shape.d[i]))
            return -1;
    return 0;
}

/* The input coordinate that output index x maps to (ONNX's x_original). */
double cv_resize_source_coord(int mode, double scale, int64_t x, int64_t in, int64_t out)
{
    switch (mode) {
    case CV_RESIZE_ASYMMETRIC:
        return (double)x / scale;
    case CV_RESIZE_ALIGN_CORNERS: {
        /* ONNX resizes to in*scale (unrounded) when given scales. */
        double len = (double)in * scale;
        return out == 1 || len <= 1 ? 0.0 : (double)x * (double)(in - 1) / (len - 1);
    }
    case CV_RESIZE_PYTORCH_HALF_PIXEL:
        return out == 1 ? -0.5 : ((double)x + 0.5) / scale - 0.5;
    default:
        return ((double)x + 0.5) / scale - 0.5;
    }
}

static int64_t nearest_index(int mode, double xo, int64_t in)
{
    double f = floor(xo), r;
    switch (mode) {
    case NM_FLOOR:
        r = f;
        break;
    case NM_CEIL:
        r = ceil(xo);
        break;
    case NM_ROUND_PREFER_CEIL:
        r = xo - f == 0.5 ? f + 1 : round(xo);
        break;
    default:
        r = xo - f == 0.5 ? f : round(xo);
        break;
    }
    return r < 0 ? 0 : r > (double)(in - 1) ? in - 1 : (int64_t)r;
}

/* Resizes axis `ax` of a dense block: `outer` slices of [in, inner] become
 * [out, inner].  Nearest moves element bytes (exact for every dtype); linear
 * works on doubles. */
typedef struct axis_job {
    int64_t outer, in, out, inner;
    double scale;
} axis_job;

static void nearest_axis(const resize_params *p, const axis_job *j, const unsigned char *src,
                         unsigned char *dst, size_t es)
{
    size_t row = (size_t)j->inner * es;
    for (int64_t o = 0; o < j->outer; o++)
        for (int64_t x = 0; x < j->out; x++) {
            double xo = cv_resize_source_coord(p->ct, j->scale, x, j->in, j->out);
            int64_t s = nearest_index(p->nearest, xo, j->in);
            memcpy(dst + (size_t)(o * j->out + x) * row, src + (size_t)(o * j->in + s) * row, row);
        }
}

static void linear_axis(const resize_params *p, const axis_job *j, const double *src, double *dst)
{
    for (int64_t x = 0; x < j->out; x++) {
        double xo = cv_resize_source_coord(p->ct, j->scale, x, j->in, j->out);
        xo = xo < 0 ? 0 : xo > (double)(j->in - 1) ? (double)(j->in - 1) : xo;
        int64_t i0 = (int64_t)floor(xo), i1 = i0 + 1 < j->in ? i0 + 1 : i0;
        double w = xo - (double)i0;
        for (int64_t o = 0; o < j->outer; o++) {
            const double *a = src + (o * j->in + i0) * j->inner;
            const double *b = src + (o * j->in + i1) * j->inner;
            double *d = dst + (o * j->out + x) * j->inner;
            for (int64_t k = 0; k < j->inner; k++)
                d[k] = a[k] * (1.0 - w) + b[k] * w;
        }
    }
}

static int resize_eval(cv_eval_ctx *c)
{
    const cv_tensor *X = c->in[0];
    cv_tensor *Y = &c->out[0];
    resize_params p;
    cv_infer_ctx ic = {.op = c->op, .diag = c->diag};
    if (resize_params_read(&ic, X->rank, &p))
        return -1;
    size_t es = p.linear ? sizeof(double) : cv_dtype_size(X->dtype);
    int64_t cur[CV_MAX_RANK], bound = 1;
    memcpy(cur, X->dims, sizeof cur);
    /* Ping-pong between two buffers, each big enough for any intermediate. */
    bool ok = true;
    for (int i = 0; i < X->rank; i++)
        ok = ok && cv_mul_i64(bound, X->dims[i] > Y->dims[i] ? X->dims[i] : Y->dims[i], &bound);
    if (X->numel == 0 || Y->numel == 0)
        return 0;
    unsigned char *buf[2] = {NULL, NULL};
    if (ok) {
        buf[0] = cv_arena_alloc_array(c->scratch, (size_t)bound, es);
        buf[1] = cv_arena_alloc_array(c->scratch, (size_t)bound, es);
    }
    if (!buf[0] || !buf[1])
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "resize: out of memory");
    if (p.linear) {
        const double *x = cv_tensor_to_f64(X, c->scratch);
        if (!x)
            return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "resize: out of memory");
        memcpy(buf[0], x, (size_t)X->numel * es);
    } else {
        memcpy(buf[0], X->data, cv_tensor_nbytes(X));
    }
    int which = 0;
    for (int ax = 0; ax < X->rank; ax++) {
        if (cur[ax] == Y->dims[ax] && (p.scale[ax] == 1.0 || p.scale[ax] <= 0.0))
            continue;  /* identity along this axis for every coordinate mode */
        axis_job j = {.outer = 1, .in = cur[ax], .out = Y->dims[ax], .inner = 1,
                      .scale = p.scale[ax] > 0 ? p.scale[ax]
                                               : (double)Y->dims[ax] / (double)cur[ax]};
        for (int i = 0; i < ax; i++)
            j.outer *= cur[i];
        for (int i = ax + 1; i < X->rank; i++)
            j.inner *= cur[i];
        if (p.linear)
            linear_axis(&p, &j, (const double *)buf[which], (double *)buf[!which]);
        else
            nearest_axis(&p, &j, buf[which], buf[!which], es);
        cur[ax] = Y->dims[ax];
        which = !which;
    }
    if (p.linear)
        cv_tensor_from_f64(Y, (const double *)buf[which]);
    else
        memcpy(Y->data, buf[which], cv_tensor_nbytes(Y));
    return 0;
}

/* resize(x) -> x resized on every axis (ONNX Resize; roi and cubic are not
 * supported; extents follow floor(in * scale) or sizes)
 *   mode    STRING "nearest" | "linear"           default "nearest"
 *   scales  FLOATS, one per axis (or 2: last two axes)   exactly one of
 *   sizes   INTS,   one per axis (or 2: last two axes)   scales and sizes
 *   coordinate_transformation_mode STRING "half_pixel" (default) | "asymmetric" |
 *           "align_corners" | "pytorch_half_pixel"
 *   nearest_mode STRING "round_prefer_floor" (default) | "round_prefer_ceil" |
 *           "floor" | "ceil"
 * With scales the coordinate map uses the given scale; with sizes, out/in.
 * Linear clamps the source coordinate to the input (edge values). */
static const cv_attr_schema resize_attrs[] = {
    {"mode", CV_ATTR_STRING, false},
    {"scales", CV_ATTR_FLOATS, false},
    {"sizes", CV_ATTR_INTS, false},
    {"coordinate_transformation_mode", CV_ATTR_STRING, false},
    {"nearest_mode", CV_ATTR_STRING, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"resize", 1, 1, 1, 1, resize_attrs, resize_infer, resize_eval, cv_cg_resize, 0},
};

const cv_op_family cv_ops_resize = {defs, (int)(sizeof defs / sizeof defs[0])};
