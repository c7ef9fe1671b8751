/* ONNX Resize (opsets 10-18) and Upsample (7-9): the scales or sizes input
 * becomes the CU-IR resize attribute.  Opset 10 Resize and Upsample use the
 * asymmetric coordinate map with floor rounding. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct resize_spec {
    double scales[CV_MAX_RANK];
    int64_t sizes[CV_MAX_RANK];
    int n_scales, n_sizes;
    const char *mode, *ct, *nearest;
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
        return onnx_err(c, ONNX_E_ATTR_VALUE, "'%s' has too many entries", role);
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
            return onnx_err(c, ONNX_E_ATTR_VALUE, "axes[%d] is out of range", i);
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
        onnx_attr_string(c, "keep_aspect_ratio_policy", "stretch", &policy) < 0)
        return -1;
    if (antialias || exclude || strcmp(policy, "stretch"))
        return onnx_err(c, ONNX_E_UNSUPPORTED_ATTR, "antialias, exclude_outside and "
                        "keep_aspect_ratio_policy are not supported");
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
    int na = c->opset >= 18 ? onnx_attr_ints(c, "axes", axes, CV_MAX_RANK) : -1;
    if (na == -2)
        return -1;
    return na >= 0 ? spread_axes(c, x->type.shape.rank, axes, na, s) : 0;
}

static int lower_resize(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    resize_spec s;
    if (!x)
        return onnx_err(c, ONNX_E_ARITY, "input 0 is required");
    if (resize_read(c, x, &s) < 0)
        return -1;
    if (strcmp(s.mode, "nearest") && strcmp(s.mode, "linear"))
        return onnx_err(c, ONNX_E_UNSUPPORTED_ATTR, "mode '%s' is not supported", s.mode);
    if (!strcmp(s.ct, "tf_crop_and_resize") || !strcmp(s.ct, "tf_half_pixel_for_nn"))
        return onnx_err(c, ONNX_E_UNSUPPORTED_ATTR, "coordinate_transformation_mode '%s' is not "
                        "supported", s.ct);
    if ((s.n_scales > 0) == (s.n_sizes > 0))
        return onnx_err(c, ONNX_E_ATTR_VALUE, "exactly one of scales and sizes must be given");
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
    {"Resize", 10, lower_resize, "resize", 0xeu},
    {"Upsample", 7, lower_resize, "resize", 1u << 1},
};

const onnx_op_family onnx_ops_resize = {entries, sizeof entries / sizeof entries[0]};
