/* ONNX Resize (opsets 10-18) and Upsample (7-9): the scales or sizes input
 * becomes the CU-IR resize attribute.  Opset 10 Resize and Upsample use the
 * asymmetric coordinate map with floor rounding.  Cubic mode is separable
 * too: each resized axis becomes a matmul with a constant [in, out] matrix
 * of the reference's cubic weights. */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct resize_spec {
    double scales[CV_MAX_RANK];
    int64_t sizes[CV_MAX_RANK];
    int n_scales, n_sizes;
    const char *mode, *ct, *nearest;
    bool exclude;           /* exclude_outside (cubic only) */
    double cubic_a;         /* cubic_coeff_a */
    double roi[2 * CV_MAX_RANK]; /* tf_crop_and_resize: starts then ends */
    int n_roi;
    double extrap;          /* extrapolation_value (tf_crop_and_resize) */
} resize_spec;

/* Reads a float constant input into out; count, 0 when absent or empty. */
static int float_input(onnx_ctx *c, int i, const char *role, double *out)
{
    if (!onnx_in(c, i))
        return 0;
    const onnx_const *k = onnx_in_const(c, i, role);
    if (!k)
        return -1;
    if (k->numel > CV_MAX_RANK)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'%s' has too many entries", role);
    for (int64_t j = 0; j < k->numel; j++)
        out[j] = onnx_const_f64(k, j);
    return (int)k->numel;
}

/* Opset 18's `axes`: spreads per-axis values over every axis. */
static int spread_axes(onnx_ctx *c, int rank, const int64_t *axes, int na, resize_spec *s)
{
    double sc[CV_MAX_RANK];
    int64_t sz[CV_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        sc[i] = 1;
        sz[i] = -1;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axes[%d] is out of range", i);
        if (s->n_scales)
            sc[a] = s->scales[i];
        if (s->n_sizes)
            sz[a] = s->sizes[i];
    }
    memcpy(s->scales, sc, sizeof sc);
    memcpy(s->sizes, sz, sizeof sz);
    s->n_scales = s->n_scales ? rank : 0;
    s->n_sizes = s->n_sizes ? rank : 0;
    return 0;
}

/* tf_crop_and_resize's roi input: [starts..., ends...] over every axis. */
static int roi_read(onnx_ctx *c, int rank, resize_spec *s)
{
    const onnx_const *k = onnx_in(c, 1) ? onnx_in_const(c, 1, "roi") : NULL;
    if (!k)
        return onnx_in(c, 1) ? -1 : onnx_err(c, CV_E_ONNX_ARITY, "tf_crop_and_resize needs 'roi'");
    if (k->numel != 2 * rank)
        return onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "'roi' needs %d entries", 2 * rank);
    for (int64_t j = 0; j < k->numel; j++)
        s->roi[j] = onnx_const_f64(k, j);
    s->n_roi = (int)k->numel;
    return 0;
}

static int resize_read(onnx_ctx *c, const onnx_val *x, resize_spec *s)
{
    int64_t antialias = 0, exclude = 0, axes[CV_MAX_RANK];
    const char *policy;
    memset(s, 0, sizeof *s);
    bool old = c->opset < 11 || strcmp(c->node->op_type, "Upsample") == 0;
    if (onnx_attr_string(c, "mode", "nearest", &s->mode) < 0 ||
        onnx_attr_string(c, "coordinate_transformation_mode", old ? "asymmetric" : "half_pixel",
                         &s->ct) < 0 ||
        onnx_attr_string(c, "nearest_mode", old ? "floor" : "round_prefer_floor",
                         &s->nearest) < 0 ||
        onnx_attr_int(c, "antialias", 0, &antialias) < 0 ||
        onnx_attr_int(c, "exclude_outside", 0, &exclude) < 0 ||
        onnx_attr_string(c, "keep_aspect_ratio_policy", "stretch", &policy) < 0 ||
        onnx_attr_float(c, "cubic_coeff_a", -0.75, &s->cubic_a) < 0 ||
        onnx_attr_float(c, "extrapolation_value", 0, &s->extrap) < 0)
        return -1;
    s->exclude = exclude != 0;
    if (antialias || (exclude && strcmp(s->mode, "cubic")) || strcmp(policy, "stretch"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "antialias, exclude_outside (except cubic) "
                        "and keep_aspect_ratio_policy are not supported");
    if (!strcmp(s->mode, "bilinear"))   /* Upsample-7's name */
        s->mode = "linear";
    if (old && strcmp(c->node->op_type, "Upsample") == 0 && c->opset < 9) {
        s->n_scales = onnx_attr_floats(c, "scales", s->scales, CV_MAX_RANK);
        return s->n_scales == -2 ? -1 : 0;
    }
    int scales_in = old ? 1 : 2;
    s->n_scales = float_input(c, scales_in, "scales", s->scales);
    if (c->opset >= 11 && onnx_in(c, 3)) {
        s->n_sizes = onnx_ints_arg(c, 3, "sizes", 11, s->sizes, CV_MAX_RANK);
        if (s->n_sizes == -2)
            return -1;
    }
    if (s->n_scales < 0)
        return -1;
    if (!strcmp(s->ct, "tf_crop_and_resize") && roi_read(c, x->type.shape.rank, s) < 0)
        return -1;
    int na = c->opset >= 18 ? onnx_attr_ints(c, "axes", axes, CV_MAX_RANK) : -1;
    if (na == -2)
        return -1;
    return na >= 0 ? spread_axes(c, x->type.shape.rank, axes, na, s) : 0;
}

/* The source coordinate of output index j (the reference's x_ori; its
 * output width is in * scale, not rounded). */
static double source_coord(const char *ct, double j, double scale, int64_t in, double out)
{
    if (!strcmp(ct, "align_corners"))
        return out == 1 ? 0 : j * (double)(in - 1) / (double)(out - 1);
    if (!strcmp(ct, "asymmetric"))
        return j / scale;
    if (!strcmp(ct, "pytorch_half_pixel") && out == 1)
        return -0.5;
    return (j + 0.5) / scale - 0.5;
}

/* The reference's cubic_coeffs for the four neighbours. */
static void cubic_coeffs(double r, double a, double *w)
{
    double s = 1 - r;
    w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

/* tf_crop_and_resize's source coordinate of output j on an axis whose roi
 * runs from a to b (fractions of the input extent). */
static double crop_coord(double j, double a, double b, int64_t in, int64_t out)
{
    if (out == 1)
        return 0.5 * (a + b) * (double)(in - 1);
    return a * (double)(in - 1) + j * (b - a) * (double)(in - 1) / (double)(out - 1);
}

/* Linear weights of output j at source x: floor(x) and the next one. */
static void linear_column(onnx_const *m, double x, int64_t in, int64_t out, int64_t j)
{
    double f = floor(x), r = x - f;
    int64_t i0 = (int64_t)f < 0 ? 0 : (int64_t)f >= in ? in - 1 : (int64_t)f;
    int64_t i1 = i0 + 1 < in ? i0 + 1 : in - 1;
    onnx_const_set_f64(m, i0 * out + j, onnx_const_f64(m, i0 * out + j) + (1 - r));
    onnx_const_set_f64(m, i1 * out + j, onnx_const_f64(m, i1 * out + j) + r);
}

/* M[in, out]: output j mixes the inputs nearest its source coordinate
 * (cubic: four of them; edge values repeat past the ends, or with
 * exclude_outside their weights go to the others).  With
 * tf_crop_and_resize a column whose source lies outside the input stays 0
 * and ext[j] is set, for the extrapolation value to be added. */
static cv_value *resize_matrix(onnx_ctx *c, const resize_spec *s, int axis, int64_t in,
                               int64_t out, double scale, bool *ext)
{
    bool crop = s->n_roi > 0, cubic = !strcmp(s->mode, "cubic");
    int64_t dims[2] = {in, out};
    onnx_const *m = onnx_const_new(c, CV_F32, 2, dims);
    if (!m)
        return NULL;
    memset(m->data, 0, (size_t)(in * out) * sizeof(float));
    for (int64_t j = 0; j < out; j++) {
        double x = crop ? crop_coord((double)j, s->roi[axis], s->roi[axis + s->n_roi / 2], in, out)
                        : source_coord(s->ct, (double)j, scale, in, scale * (double)in);
        double f = floor(x), w[4], sum = 0;
        ext[j] = crop && (x < 0 || x > (double)(in - 1));
        if (ext[j])
            continue;
        if (!cubic) {
            linear_column(m, x, in, out, j);
            continue;
        }
        double ratio = x == f ? 1 : x - f;
        cubic_coeffs(ratio, s->cubic_a, w);
        int64_t base = (int64_t)f - (x == f ? 2 : 1);
        for (int k = 0; k < 4; k++) {
            bool inside = base + k >= 0 && base + k < in;
            if (s->exclude && !inside)
                w[k] = 0;
            sum += w[k];
        }
        for (int k = 0; k < 4; k++) {
            int64_t i = base + k < 0 ? 0 : base + k >= in ? in - 1 : base + k;
            double wk = s->exclude && sum != 0 ? w[k] / sum : w[k];
            onnx_const_set_f64(m, i * out + j, onnx_const_f64(m, i * out + j) + wk);
        }
    }
    return onnx_const_value(c, m, "resize");
}

/* v @ M, plus the extrapolation value in the columns ext marks. */
static cv_value *resize_axis(onnx_ctx *c, const resize_spec *s, cv_value *v, int axis, int64_t in,
                             int64_t out, double scale)
{
    bool ext[1 << 12];
    if (out > (int64_t)(sizeof ext)) {
        onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %d resizes to %lld", axis, (long long)out);
        return NULL;
    }
    v = onnx_binary(c, "matmul", v, resize_matrix(c, s, axis, in, out, scale, ext));
    bool any = false;
    for (int64_t j = 0; j < out; j++)
        any |= ext[j];
    if (!any || !v)
        return v;
    onnx_const *b = onnx_const_new(c, CV_F32, 1, &out);
    if (!b)
        return NULL;
    for (int64_t j = 0; j < out; j++)
        onnx_const_set_f64(b, j, ext[j] ? s->extrap : 0);
    return onnx_binary(c, "add", v, onnx_const_value(c, b, "extrapolation"));
}

/* Cubic and tf_crop_and_resize modes: separable, so each resized axis
 * becomes a matmul with a constant weight matrix. */
static int lower_resize_matrix(onnx_ctx *c, const resize_spec *s)
{
    cv_value *v = onnx_in_value(c, 0);
    if (!v || v->type.dtype != CV_F32)
        return v ? onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "%s resize needs float data", s->mode)
                 : -1;
    int r = v->type.shape.rank, n = s->n_scales > 0 ? s->n_scales : s->n_sizes;
    if (n != r && n != 2)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "scales/sizes need %d entries", r);
    for (int i = 0; i < n && v; i++) {
        int axis = r - n + i;
        int64_t in, out, perm[CV_MAX_RANK];
        if (onnx_static_extent(c, v, axis, &in) < 0)
            return -1;
        double scale = s->n_scales > 0 ? s->scales[i] : 0;
        out = s->n_scales > 0 ? (int64_t)floor((double)in * scale) : s->sizes[i];
        if (out < 1 || out > (1 << 20) || in < 1 || (double)in * (double)out > ONNX_CONST_MAX_NUMEL)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "axis %d resizes %lld to %lld", axis,
                            (long long)in, (long long)out);
        if (s->n_sizes > 0)
            scale = (double)out / (double)in;
        bool whole = !s->n_roi || in == 1 || (s->roi[axis] == 0 && s->roi[axis + r] == 1);
        if (out == in && scale == 1 && whole)
            continue;
        for (int k = 0; k < r; k++)
            perm[k] = k == axis ? r - 1 : k == r - 1 ? axis : k;
        if (axis != r - 1)
            v = onnx_op_ints(c, "transpose", v, "perm", perm, r);
        v = resize_axis(c, s, v, axis, in, out, scale);
        if (axis != r - 1)
            v = onnx_op_ints(c, "transpose", v, "perm", perm, r);
    }
    return onnx_bind_value(c, 0, v);
}

static int lower_resize(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    resize_spec s;
    if (!x)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    if (resize_read(c, x, &s) < 0)
        return -1;
    bool crop = !strcmp(s.ct, "tf_crop_and_resize");
    if ((crop ? strcmp(s.mode, "nearest") != 0 : !strcmp(s.mode, "cubic")) &&
        strcmp(s.ct, "tf_half_pixel_for_nn") && (s.n_scales > 0) != (s.n_sizes > 0))
        return lower_resize_matrix(c, &s);
    if (strcmp(s.mode, "nearest") && strcmp(s.mode, "linear"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "mode '%s' is not supported", s.mode);
    if (crop || !strcmp(s.ct, "tf_half_pixel_for_nn"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "coordinate_transformation_mode '%s' is not "
                        "supported", s.ct);
    if ((s.n_scales > 0) == (s.n_sizes > 0))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "exactly one of scales and sizes must be given");
    cv_value *v = onnx_in_value(c, 0);
    cv_op *o = onnx_op(c, "resize", &v, 1);
    if (o) {
        cv_op_set_string(o, "mode", s.mode);
        if (s.n_scales > 0)
            cv_op_set_floats(o, "scales", s.scales, s.n_scales);
        else
            cv_op_set_ints(o, "sizes", s.sizes, s.n_sizes);
        cv_op_set_string(o, "coordinate_transformation_mode", s.ct);
        cv_op_set_string(o, "nearest_mode", s.nearest);
    }
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

static const onnx_op_entry entries[] = {
    {"Resize", 10, lower_resize, "resize matmul transpose add", 0xeu},
    {"Upsample", 7, lower_resize, "resize", 1u << 1},
};

const onnx_op_family onnx_ops_resize = {entries, sizeof entries / sizeof entries[0]};
