/* ONNX GridSample (4-D, the PyTorch semantics ONNX adopted): each output
 * point mixes a few input pixels (1 nearest, 4 bilinear, 16 bicubic).
 * The mix is a matrix W[N, P, H*W] built from one-hot masks of the taps'
 * linear positions, so the output is one batched matmul of the input
 * [N, C, H*W] with W transposed.  The masks cost P x H*W per image, so
 * large images are refused (ONNX_CONST_MAX_NUMEL).  RoiAlign (average
 * mode, its boxes known at import time) is the same matmul with W
 * computed here. */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { GS_ZEROS, GS_BORDER, GS_REFLECT };

typedef struct gs {
    onnx_ctx *c;
    int64_t n, h, w, p;     /* batch, input height and width, output points */
    bool align;
    int pad;
    cv_value *wsum;         /* W so far, [N, P, H*W] */
} gs;

static cv_value *k(gs *s, double v) { return onnx_scalar(s->c, CV_F32, v); }
static cv_value *bin(gs *s, const char *op, cv_value *a, cv_value *b)
{
    return onnx_binary(s->c, op, a, b);
}

/* The grid coordinate in pixels (align_corners decides the end points). */
static cv_value *unnormalize(gs *s, cv_value *g, int64_t size)
{
    if (s->align)   /* (g + 1) / 2 * (size - 1) */
        return bin(s, "mul", bin(s, "add", g, k(s, 1)), k(s, (double)(size - 1) / 2));
    /* ((g + 1) * size - 1) / 2 */
    return bin(s, "div", bin(s, "sub", bin(s, "mul", bin(s, "add", g, k(s, 1)), k(s, (double)size)),
                              k(s, 1)), k(s, 2));
}

static cv_value *clamp(gs *s, cv_value *x, double lo, double hi)
{
    cv_op *o = x ? onnx_op(s->c, "clip", &x, 1) : NULL;
    if (o) {
        cv_op_set_float(o, "min", lo);
        cv_op_set_float(o, "max", hi);
    }
    return onnx_finish(s->c, o);
}

/* PyTorch's reflect_coordinates over [lo, hi], then clipped into the image. */
static cv_value *reflect(gs *s, cv_value *x, int64_t size)
{
    double lo = s->align ? 0 : -0.5, hi = s->align ? (double)(size - 1) : (double)size - 0.5;
    double span = hi - lo;
    if (span <= 0)
        return clamp(s, x, 0, 0);
    cv_value *d = onnx_unary(s->c, "abs", bin(s, "sub", x, k(s, lo)));
    cv_value *flips = onnx_unary(s->c, "floor", bin(s, "div", d, k(s, span)));
    cv_value *extra = bin(s, "sub", d, bin(s, "mul", flips, k(s, span)));
    cv_value *half = onnx_unary(s->c, "floor", bin(s, "div", flips, k(s, 2)));
    cv_value *even = bin(s, "equal", flips, bin(s, "mul", half, k(s, 2)));
    cv_value *r = onnx_where(s->c, even, bin(s, "add", extra, k(s, lo)),
                             bin(s, "sub", k(s, hi), extra));
    return clamp(s, r, 0, (double)(size - 1));
}

/* The source coordinate after the padding mode (bilinear, nearest). */
static cv_value *padded(gs *s, cv_value *x, int64_t size)
{
    if (s->pad == GS_BORDER)
        return clamp(s, x, 0, (double)(size - 1));
    return s->pad == GS_REFLECT ? reflect(s, x, size) : x;
}

/* Adds weight wt at integer tap (ix, iy) (floats holding integers): out of
 * the image it reads zero (zeros padding) or the padded pixel. */
static void add_tap(gs *s, cv_value *ix, cv_value *iy, cv_value *wt, bool pad_tap)
{
    onnx_ctx *c = s->c;
    if (pad_tap && s->pad != GS_ZEROS) {
        ix = padded(s, ix, s->w);
        iy = padded(s, iy, s->h);
    }
    cv_value *inside = onnx_where(c, bin(s, "less", ix, k(s, 0)), onnx_scalar(c, CV_BOOL, 0),
                                  bin(s, "less", ix, k(s, (double)s->w)));
    inside = onnx_where(c, bin(s, "less", iy, k(s, 0)), onnx_scalar(c, CV_BOOL, 0),
                        onnx_where(c, inside, bin(s, "less", iy, k(s, (double)s->h)),
                                   onnx_scalar(c, CV_BOOL, 0)));
    cv_value *lin = bin(s, "add", bin(s, "mul", iy, k(s, (double)s->w)), ix);
    lin = onnx_where(c, inside, lin, k(s, -1));
    cv_op *o = lin ? onnx_op(c, "cast", &lin, 1) : NULL;
    if (o)
        cv_op_set_dtype(o, "to", CV_I64);
    cv_value *hit = bin(s, "equal", onnx_finish(c, o), onnx_iota(c, CV_I64, 3, 2, s->h * s->w));
    cv_value *part = onnx_where(c, hit, wt, k(s, 0));
    s->wsum = s->wsum ? bin(s, "add", s->wsum, part) : part;
}

/* The bicubic weights of offset t for taps -1, 0, 1, 2 (A = -0.75). */
static void cubic_weights(gs *s, cv_value *t, cv_value **w)
{
    const double a = -0.75;
    cv_value *t1 = bin(s, "add", t, k(s, 1)), *u = bin(s, "sub", k(s, 1), t);
    cv_value *u1 = bin(s, "add", u, k(s, 1));
    /* far taps: ((a x - 5a) x + 8a) x - 4a; near: ((a + 2) x - (a + 3)) x x + 1 */
    cv_value *far[2] = {t1, u1}, *near[2] = {t, u};
    for (int i = 0; i < 2; i++) {
        cv_value *x = far[i];
        cv_value *v = bin(s, "sub", bin(s, "mul", x, k(s, a)), k(s, 5 * a));
        v = bin(s, "sub", bin(s, "mul", bin(s, "add", bin(s, "mul", v, x), k(s, 8 * a)), x),
                k(s, 4 * a));
        w[i ? 3 : 0] = v;
        x = near[i];
        v = bin(s, "add", bin(s, "mul", bin(s, "mul", bin(s, "sub", bin(s, "mul", x, k(s, a + 2)),
                          k(s, a + 3)), x), x), k(s, 1));
        w[i ? 2 : 1] = v;
    }
}

static int lower_grid_sample(onnx_ctx *c)
{
    const char *mode, *pad;
    int64_t align, gd[4], xd[4];
    cv_value *x = onnx_in_value(c, 0), *grid = onnx_in_value(c, 1);
    if (!x || !grid || onnx_attr_string(c, "mode", "bilinear", &mode) < 0 ||
        onnx_attr_string(c, "padding_mode", "zeros", &pad) < 0 ||
        onnx_attr_int(c, "align_corners", 0, &align) < 0)
        return -1;
    if (x->type.shape.rank != 4 || grid->type.shape.rank != 4 || x->type.dtype != CV_F32 ||
        grid->type.dtype != CV_F32)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "GridSample needs 4-D float X and grid");
    for (int i = 0; i < 4; i++)
        if (onnx_static_extent(c, x, i, &xd[i]) < 0 || onnx_static_extent(c, grid, i, &gd[i]) < 0)
            return -1;
    gs s = {.c = c, .n = xd[0], .h = xd[2], .w = xd[3], .p = gd[1] * gd[2], .align = align != 0};
    s.pad = !strcmp(pad, "border") ? GS_BORDER : !strcmp(pad, "reflection") ? GS_REFLECT : GS_ZEROS;
    bool nearest = !strcmp(mode, "nearest"), cubic = !strcmp(mode, "bicubic");
    if ((strcmp(pad, "zeros") && s.pad == GS_ZEROS) ||
        (!nearest && !cubic && strcmp(mode, "bilinear")))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "mode '%s' / padding_mode '%s' is not "
                        "supported", mode, pad);
    if (gd[0] != s.n || gd[3] != 2 || s.p * s.h * s.w > ONNX_CONST_MAX_NUMEL)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "grid must be [N, H_out, W_out, 2] and the image "
                        "small enough for the one-hot lowering");
    int64_t col[3] = {s.n, s.p, 1}, three = 3;
    cv_value *coord[2];
    for (int i = 0; i < 2; i++) {
        cv_op *o = onnx_op(c, "slice", &grid, 1);
        int64_t st = i, en = i + 1;
        if (o) {
            cv_op_set_ints(o, "starts", &st, 1);
            cv_op_set_ints(o, "ends", &en, 1);
            cv_op_set_ints(o, "axes", &three, 1);
        }
        coord[i] = onnx_op_ints(c, "reshape", onnx_finish(c, o), "shape", col, 3);
        coord[i] = unnormalize(&s, coord[i], i ? s.h : s.w);
    }
    cv_value *ix = coord[0], *iy = coord[1];
    if (nearest) {
        add_tap(&s, onnx_unary(c, "round", padded(&s, ix, s.w)),
                onnx_unary(c, "round", padded(&s, iy, s.h)), k(&s, 1), false);
    } else if (!cubic) {
        ix = padded(&s, ix, s.w);
        iy = padded(&s, iy, s.h);
        cv_value *x0 = onnx_unary(c, "floor", ix), *y0 = onnx_unary(c, "floor", iy);
        cv_value *fx = bin(&s, "sub", ix, x0), *fy = bin(&s, "sub", iy, y0);
        cv_value *gx = bin(&s, "sub", k(&s, 1), fx), *gy = bin(&s, "sub", k(&s, 1), fy);
        cv_value *x1 = bin(&s, "add", x0, k(&s, 1)), *y1 = bin(&s, "add", y0, k(&s, 1));
        add_tap(&s, x0, y0, bin(&s, "mul", gx, gy), false);
        add_tap(&s, x1, y0, bin(&s, "mul", fx, gy), false);
        add_tap(&s, x0, y1, bin(&s, "mul", gx, fy), false);
        add_tap(&s, x1, y1, bin(&s, "mul", fx, fy), false);
    } else {
        cv_value *x0 = onnx_unary(c, "floor", ix), *y0 = onnx_unary(c, "floor", iy);
        cv_value *wx[4], *wy[4];
        cubic_weights(&s, bin(&s, "sub", ix, x0), wx);
        cubic_weights(&s, bin(&s, "sub", iy, y0), wy);
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                add_tap(&s, bin(&s, "add", x0, k(&s, b - 1)), bin(&s, "add", y0, k(&s, a - 1)),
                        bin(&s, "mul", wx[b], wy[a]), true);
    }
    int64_t flat[3] = {s.n, xd[1], s.h * s.w}, perm[3] = {0, 2, 1};
    int64_t out[4] = {s.n, xd[1], gd[1], gd[2]};
    cv_value *y = bin(&s, "matmul", onnx_op_ints(c, "reshape", x, "shape", flat, 3),
                      onnx_op_ints(c, "transpose", s.wsum, "perm", perm, 3));
    return onnx_bind_value(c, 0, onnx_op_ints(c, "reshape", y, "shape", out, 4));
}

/* Adds the bilinear weights of sample (y, x) into row w[h*wd] (scaled),
 * with RoiAlign's border rules. */
static void roi_sample(double y, double x, int64_t h, int64_t wd, double scale, float *w)
{
    if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)wd)
        return;
    y = y <= 0 ? 0 : y;
    x = x <= 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= h - 1) {
        y0 = y1 = h - 1;
        y = (double)y0;
    }
    if (x0 >= wd - 1) {
        x0 = x1 = wd - 1;
        x = (double)x0;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    w[y0 * wd + x0] += (float)(scale * hy * hx);
    w[y0 * wd + x1] += (float)(scale * hy * lx);
    w[y1 * wd + x0] += (float)(scale * ly * hx);
    w[y1 * wd + x1] += (float)(scale * ly * lx);
}

static int lower_roi_align(onnx_ctx *c)
{
    const char *mode, *ct;
    int64_t oh, ow, ratio, xd[4];
    double scale;
    cv_value *x = onnx_in_value(c, 0);
    const onnx_const *rois = onnx_in_const(c, 1, "rois");
    const onnx_const *bidx = onnx_in_const(c, 2, "batch_indices");
    if (!x || !rois || !bidx || onnx_attr_string(c, "mode", "avg", &mode) < 0 ||
        onnx_attr_string(c, "coordinate_transformation_mode", "half_pixel", &ct) < 0 ||
        onnx_attr_int(c, "output_height", 1, &oh) < 0 ||
        onnx_attr_int(c, "output_width", 1, &ow) < 0 ||
        onnx_attr_int(c, "sampling_ratio", 0, &ratio) < 0 ||
        onnx_attr_float(c, "spatial_scale", 1, &scale) < 0)
        return -1;
    bool half = c->opset >= 16 && strcmp(ct, "output_half_pixel");
    if (strcmp(mode, "avg") || x->type.shape.rank != 4 || x->type.dtype != CV_F32)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "RoiAlign supports avg mode on 4-D float X");
    for (int i = 0; i < 4; i++)
        if (onnx_static_extent(c, x, i, &xd[i]) < 0)
            return -1;
    int64_t nr = bidx->numel, hw = xd[2] * xd[3], p = oh * ow;
    if (rois->rank != 2 || rois->dims[0] != nr || rois->dims[1] != 4 || oh < 1 || ow < 1 ||
        nr < 1 || nr * p * hw > ONNX_CONST_MAX_NUMEL)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "rois must be [R, 4] for R batch indices, and the "
                        "sampling matrix small enough");
    int64_t wdims[3] = {nr, hw, p};
    onnx_const *wm = onnx_const_new(c, CV_F32, 3, wdims);
    float *row = cv_arena_alloc_array(c->a, (size_t)hw, sizeof *row);
    if (!wm || !row)
        return -1;
    memset(wm->data, 0, (size_t)(nr * hw * p) * sizeof(float));
    for (int64_t r = 0; r < nr; r++) {
        double off = half ? 0.5 : 0, v[4];
        for (int i = 0; i < 4; i++)
            v[i] = onnx_const_f64(rois, r * 4 + i) * scale - off;
        double rw = v[2] - v[0], rh = v[3] - v[1];
        if (!half) {
            rw = rw > 1 ? rw : 1;
            rh = rh > 1 ? rh : 1;
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        int64_t gh = ratio > 0 ? ratio : (int64_t)ceil(rh / (double)oh);
        int64_t gw = ratio > 0 ? ratio : (int64_t)ceil(rw / (double)ow);
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t q = 0; q < p; q++) {
            memset(row, 0, (size_t)hw * sizeof *row);
            for (int64_t iy = 0; iy < gh; iy++)
                for (int64_t ix = 0; ix < gw; ix++)
                    roi_sample(v[1] + (double)(q / ow) * bh + ((double)iy + 0.5) * bh / (double)gh,
                               v[0] + (double)(q % ow) * bw + ((double)ix + 0.5) * bw / (double)gw,
                               xd[2], xd[3], 1 / count, row);
            for (int64_t j = 0; j < hw; j++)
                onnx_const_set_f64(wm, (r * hw + j) * p + q, row[j]);
        }
    }
    onnx_const *pick = onnx_const_new(c, CV_I64, 1, &nr);
    for (int64_t r = 0; pick && r < nr; r++) {
        int64_t b = onnx_const_i64(bidx, r);
        if (b < 0 || b >= xd[0])
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "batch index %lld is out of range", (long long)b);
        onnx_const_set_i64(pick, r, b);
    }
    int64_t flat[3] = {xd[0], xd[1], hw}, out[4] = {nr, xd[1], oh, ow};
    cv_value *ops[2] = {onnx_op_ints(c, "reshape", x, "shape", flat, 3),
                        onnx_const_value(c, pick, "batch")};
    cv_op *o = onnx_op(c, "gather", ops, 2);
    if (o)
        cv_op_set_int(o, "axis", 0);
    cv_value *y = onnx_binary(c, "matmul", onnx_finish(c, o), onnx_const_value(c, wm, "weights"));
    return onnx_bind_value(c, 0, onnx_op_ints(c, "reshape", y, "shape", out, 4));
}

static const onnx_op_entry entries[] = {
    {"RoiAlign", 10, lower_roi_align, "reshape gather matmul", 0x6u},
    {"GridSample", 16, lower_grid_sample,
     "slice reshape add sub mul div clip abs floor round equal where less cast matmul transpose",
     0},
};

const onnx_op_family onnx_ops_gridsample = {entries, sizeof entries / sizeof entries[0]};
