/* Op family fragment: pooling (max_pool2d, avg_pool2d, global_avg_pool).
 * NCHW layout; window arithmetic is shared with conv2d (ops_nnutil.c). */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

typedef struct pool_params {
    int64_t k[2], stride[2], pad[4], dil[2];
    bool ceil_mode, include_pad;
} pool_params;

static const int64_t ones2[2] = {1, 1};

static int pool_params_read(cv_infer_ctx *c, pool_params *p)
{
    if (cv_nn_ints_n(c, "kernel", 2, NULL, 1, p->k) ||
        cv_nn_ints_n(c, "stride", 2, ones2, 1, p->stride) || cv_nn_pads2d(c, p->pad) ||
        cv_nn_ints_n(c, "dilation", 2, ones2, 1, p->dil))
        return -1;
    p->ceil_mode = cv_op_int(c->op, "ceil_mode", 0) != 0;
    p->include_pad = cv_op_int(c->op, "count_include_pad", 0) != 0;
    const int64_t big = 1 << 20;
    for (int i = 0; i < 2; i++) {
        if (p->k[i] > big || p->stride[i] > big || p->dil[i] > big)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: kernel, stride or dilation is implausibly large",
                                  c->op->name);
        /* A window wholly inside the padding would have nothing to pool. */
        int64_t eff = p->dil[i] * (p->k[i] - 1) + 1;
        if (p->pad[i] >= eff || p->pad[i + 2] >= eff)
            return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "%s: padding on axis %s must be smaller than the "
                                  "kernel extent %lld", c->op->name, i ? "W" : "H",
                                  (long long)eff);
    }
    return 0;
}

static int pool_infer(cv_infer_ctx *c, unsigned dtypes)
{
    pool_params p;
    if (cv_infer_dtype_in(c, 0, dtypes) || cv_nn_rank(c, 0, 4, "input") ||
        pool_params_read(c, &p))
        return -1;
    const cv_dim *x = c->in[0].shape.d;
    cv_type *o = &c->out[0];
    o->dtype = c->in[0].dtype;
    o->shape = (cv_shape){.rank = 4, .d = {x[0], x[1]}};
    return cv_nn_window_dim(c, "H", x[2], p.k[0], p.stride[0], p.pad[0], p.pad[2], p.dil[0],
                            p.ceil_mode, &o->shape.d[2]) ||
           cv_nn_window_dim(c, "W", x[3], p.k[1], p.stride[1], p.pad[1], p.pad[3], p.dil[1],
                            p.ceil_mode, &o->shape.d[3]) ? -1 : 0;
}

static int max_pool2d_infer(cv_infer_ctx *c) { return pool_infer(c, CV_DT_NUMERIC); }
static int avg_pool2d_infer(cv_infer_ctx *c) { return pool_infer(c, CV_DT_FLOATS); }

/* Input rows [lo, hi) with a window tap: the window of output `o` along one
 * axis, clipped to the input; *full gets the window clipped to the padded
 * extent instead (count_include_pad's divisor, as in PyTorch). */
static void window(const pool_params *p, int axis, int64_t o, int64_t in, int64_t *lo,
                   int64_t *hi, int64_t *full)
{
    int64_t start = o * p->stride[axis] - p->pad[axis];
    int64_t end = start + p->dil[axis] * (p->k[axis] - 1) + 1;
    int64_t pend = in + p->pad[axis + 2];
    *full = (end < pend ? end : pend) - start;
    *lo = start;
    *hi = end < in ? end : in;
}

typedef struct pool_run {
    pool_params p;
    int64_t planes, h, w, oh, ow;
} pool_run;

static int pool_run_init(cv_eval_ctx *c, pool_run *r)
{
    cv_infer_ctx ic = {.op = c->op, .diag = c->diag};
    if (pool_params_read(&ic, &r->p))
        return -1;
    const cv_tensor *x = c->in[0];
    r->planes = x->dims[0] * x->dims[1];
    r->h = x->dims[2], r->w = x->dims[3];
    r->oh = c->out[0].dims[2], r->ow = c->out[0].dims[3];
    return 0;
}

/* Max pooling picks an input element and copies its bytes, so every dtype
 * (i64 included) comes through exactly. */
static int max_pool2d_eval(cv_eval_ctx *c)
{
    pool_run r;
    if (pool_run_init(c, &r))
        return -1;
    const cv_tensor *X = c->in[0];
    const double *x = cv_tensor_to_f64(X, c->scratch);
    if (!x)
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "max_pool2d: out of memory");
    size_t es = cv_dtype_size(X->dtype);
    unsigned char *y = c->out[0].data;
    const unsigned char *xb = X->data;
    const pool_params *p = &r.p;
    for (int64_t pl = 0; pl < r.planes; pl++)
        for (int64_t oy = 0; oy < r.oh; oy++)
            for (int64_t ox = 0; ox < r.ow; ox++) {
                int64_t y0, y1, x0, x1, unused, best = -1;
                window(p, 0, oy, r.h, &y0, &y1, &unused);
                window(p, 1, ox, r.w, &x0, &x1, &unused);
                for (int64_t iy = y0; iy < y1; iy += p->dil[0])
                    for (int64_t ix = x0; ix < x1; ix += p->dil[1]) {
                        if (iy < 0 || ix < 0)
                            continue;
                        int64_t i = (pl * r.h + iy) * r.w + ix;
                        if (best < 0 || x[i] > x[best] || isnan(x[i]))
                            best = i;
                    }
                if (best >= 0)  /* always: padding is smaller than the window */
                    memcpy(y, xb + (size_t)best * es, es);
                y += es;
            }
    return 0;
}

static int avg_pool2d_eval(cv_eval_ctx *c)
{
    pool_run r;
    if (pool_run_init(c, &r))
        return -1;
    const double *x = cv_tensor_to_f64(c->in[0], c->scratch);
    double *y = cv_arena_alloc_array(c->scratch, (size_t)(c->out[0].numel + 1), sizeof *y);
    if (!x || !y)
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "avg_pool2d: out of memory");
    const pool_params *p = &r.p;
    double *yp = y;
    for (int64_t pl = 0; pl < r.planes; pl++)
        for (int64_t oy = 0; oy < r.oh; oy++)
            for (int64_t ox = 0; ox < r.ow; ox++) {
                int64_t y0, y1, x0, x1, fh, fw, n = 0;
                window(p, 0, oy, r.h, &y0, &y1, &fh);
                window(p, 1, ox, r.w, &x0, &x1, &fw);
                double acc = 0.0;
                for (int64_t iy = y0 < 0 ? 0 : y0; iy < y1; iy++)
                    for (int64_t ix = x0 < 0 ? 0 : x0; ix < x1; ix++, n++)
                        acc += x[(pl * r.h + iy) * r.w + ix];
                *yp++ = acc / (double)(p->include_pad ? fh * fw : n);
            }
    cv_tensor_from_f64(&c->out[0], y);
    return 0;
}

static int global_avg_pool_infer(cv_infer_ctx *c)
{
    const cv_shape *s = &c->in[0].shape;
    if (cv_infer_dtype_in(c, 0, CV_DT_FLOATS))
        return -1;
    if (s->rank < 3)
        return cv_infer_error(c, CV_E_RANK_MISMATCH, "global_avg_pool: input must have rank >= 3 "
                              "([N,C,spatial...]), got rank %d", s->rank);
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].shape = *s;
    for (int i = 2; i < s->rank; i++)
        c->out[0].shape.d[i] = (cv_dim){1, NULL};
    return 0;
}

static int global_avg_pool_eval(cv_eval_ctx *c)
{
    const cv_tensor *X = c->in[0];
    int64_t planes = X->dims[0] * X->dims[1], area = 1;
    for (int i = 2; i < X->rank; i++)
        area *= X->dims[i];
    const double *x = cv_tensor_to_f64(X, c->scratch);
    double *y = cv_arena_alloc_array(c->scratch, (size_t)(planes + 1), sizeof *y);
    if (!x || !y)
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "global_avg_pool: out of memory");
    for (int64_t pl = 0; pl < planes; pl++) {
        double acc = 0.0;
        for (int64_t i = 0; i < area; i++)
            acc += x[pl * area + i];
        y[pl] = area ? acc / (double)area : NAN;
    }
    cv_tensor_from_f64(&c->out[0], y);
    return 0;
}

/* max_pool2d(x: [N,C,H,W]) -> [N,C,OH,OW]   (ONNX MaxPool, one output)
 *   kernel    INTS [kh,kw]                 required
 *   stride    INTS [sh,sw]                 default [1,1] (ONNX default, not the kernel)
 *   pad       INTS [top,left,bottom,right] default zeros; [h,w] = symmetric;
 *                                          each pad < dilated kernel extent
 *   dilation  INTS [dh,dw]                 default [1,1]
 *   ceil_mode INT                          default 0; 1 rounds the output extent up,
 *                                          dropping a last window that would start in
 *                                          the end padding (PyTorch rule)
 * Padding never wins the max.  Any numeric dtype; elements are copied exactly.
 *
 * avg_pool2d(x: [N,C,H,W]) -> [N,C,OH,OW]   (ONNX AveragePool; float dtypes)
 *   kernel, stride, pad, ceil_mode as max_pool2d (no dilation)
 *   count_include_pad INT                  default 0: divide by the number of input
 *                                          elements in the window; 1: by the window
 *                                          clipped to the padded extent (PyTorch)
 *
 * global_avg_pool(x: [N,C,d1,...]) -> [N,C,1,...]   mean over every axis from 2 on. */
static const cv_attr_schema max_pool_attrs[] = {
    {"kernel", CV_ATTR_INTS, true},
    {"stride", CV_ATTR_INTS, false},
    {"pad", CV_ATTR_INTS, false},
    {"dilation", CV_ATTR_INTS, false},
    {"ceil_mode", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_attr_schema avg_pool_attrs[] = {
    {"kernel", CV_ATTR_INTS, true},
    {"stride", CV_ATTR_INTS, false},
    {"pad", CV_ATTR_INTS, false},
    {"ceil_mode", CV_ATTR_INT, false},
    {"count_include_pad", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_attr_schema no_attrs[] = {{NULL, CV_ATTR_NONE, false}};

static const cv_op_def defs[] = {
    {"max_pool2d", 1, 1, 1, 1, max_pool_attrs, max_pool2d_infer, max_pool2d_eval, cv_cg_max_pool2d,
     0},
    {"avg_pool2d", 1, 1, 1, 1, avg_pool_attrs, avg_pool2d_infer, avg_pool2d_eval, cv_cg_avg_pool2d,
     0},
    {"global_avg_pool", 1, 1, 1, 1, no_attrs, global_avg_pool_infer, global_avg_pool_eval,
     cv_cg_global_avg_pool,
     0},
};

const cv_op_family cv_ops_pool = {defs, (int)(sizeof defs / sizeof defs[0])};
