/* MaxPool's Indices output for 2-D windows: Y is the usual max_pool2d; the
 * index of each maximum comes from a running comparison over the window's
 * taps, each tap a strided slice of the input padded with -inf next to a
 * constant holding the flat index (row- or column-major per
 * storage_order) it reads.  The first maximum in window order wins, as in
 * ONNX Runtime.  Shapes must be static. */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct argpool {
    int64_t k[2], stride[2], pads[4], dil[2], ceil_mode, storage_order;
    int64_t n, ch, h, w, oh, ow;
} argpool;

/* The flat index tap (i, j) of every output position reads, or -1 in the
 * padding; [1, 1, oh, ow] plus the (n, c) offsets [n, c, 1, 1]. */
static cv_value *tap_index(onnx_ctx *c, const argpool *p, int64_t i, int64_t j)
{
    int64_t dims[4] = {1, 1, p->oh, p->ow};
    onnx_const *k = onnx_const_new(c, CV_I64, 4, dims);
    for (int64_t y = 0; k && y < p->oh; y++)
        for (int64_t x = 0; x < p->ow; x++) {
            int64_t hh = y * p->stride[0] - p->pads[0] + i * p->dil[0];
            int64_t ww = x * p->stride[1] - p->pads[1] + j * p->dil[1];
            bool in = hh >= 0 && hh < p->h && ww >= 0 && ww < p->w;
            onnx_const_set_i64(k, y * p->ow + x,
                               !in ? -1 : p->storage_order ? ww * p->h + hh : hh * p->w + ww);
        }
    return onnx_const_value(c, k, "tap_index");
}

static cv_value *plane_offsets(onnx_ctx *c, const argpool *p)
{
    int64_t dims[4] = {p->n, p->ch, 1, 1};
    onnx_const *k = onnx_const_new(c, CV_I64, 4, dims);
    for (int64_t i = 0; k && i < p->n * p->ch; i++)
        onnx_const_set_i64(k, i, i * p->h * p->w);
    return onnx_const_value(c, k, "plane_offset");
}

static cv_value *tap_values(onnx_ctx *c, const argpool *p, cv_value *xp, int64_t i, int64_t j)
{
    int64_t starts[2] = {i * p->dil[0], j * p->dil[1]};
    int64_t ends[2] = {starts[0] + (p->oh - 1) * p->stride[0] + 1,
                       starts[1] + (p->ow - 1) * p->stride[1] + 1};
    int64_t axes[2] = {2, 3};
    return onnx_slice(c, xp, 2, axes, starts, ends, p->stride);
}

int onnx_lower_pool_indices(onnx_ctx *c)
{
    argpool p;
    const char *auto_pad;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_ints_n(c, "kernel_shape", 2, 1, p.k) < 0 ||
        onnx_attr_ints_n(c, "strides", 2, 1, p.stride) < 0 ||
        onnx_attr_ints_n(c, "pads", 4, 0, p.pads) < 0 ||
        onnx_attr_ints_n(c, "dilations", 2, 1, p.dil) < 0 ||
        onnx_attr_int(c, "ceil_mode", 0, &p.ceil_mode) < 0 ||
        onnx_attr_int(c, "storage_order", 0, &p.storage_order) < 0 ||
        onnx_attr_string(c, "auto_pad", "NOTSET", &auto_pad) < 0)
        return -1;
    if (x->type.shape.rank != 4 || (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID")))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "the Indices output needs a 2-D window "
                        "without auto_pad");
    int64_t *d[4] = {&p.n, &p.ch, &p.h, &p.w};
    for (int i = 0; i < 4; i++)
        if (onnx_static_extent(c, x, i, d[i]) < 0)
            return -1;
    cv_op *o = onnx_op(c, "max_pool2d", &x, 1);
    if (o) {
        cv_op_set_ints(o, "kernel", p.k, 2);
        cv_op_set_ints(o, "stride", p.stride, 2);
        cv_op_set_ints(o, "pad", p.pads, 4);
        cv_op_set_ints(o, "dilation", p.dil, 2);
        cv_op_set_int(o, "ceil_mode", p.ceil_mode);
    }
    cv_value *y = onnx_finish(c, o);
    if (!y)
        return -1;
    p.oh = y->type.shape.d[2].n;
    p.ow = y->type.shape.d[3].n;
    /* -inf padding reaching every tap of every window (ceil_mode may overhang). */
    int64_t over_h = (p.oh - 1) * p.stride[0] + (p.k[0] - 1) * p.dil[0] + 1 - p.h - p.pads[0];
    int64_t over_w = (p.ow - 1) * p.stride[1] + (p.k[1] - 1) * p.dil[1] + 1 - p.w - p.pads[1];
    int64_t pads[8] = {0, 0, p.pads[0], p.pads[1], 0, 0, over_h > 0 ? over_h : 0,
                       over_w > 0 ? over_w : 0};
    o = onnx_op(c, "pad", &x, 1);
    if (o) {
        cv_op_set_ints(o, "pads", pads, 8);
        cv_op_set_float(o, "value", -INFINITY);
    }
    cv_value *xp = onnx_finish(c, o), *best = NULL, *idx = NULL;
    for (int64_t i = 0; xp && i < p.k[0]; i++)
        for (int64_t j = 0; j < p.k[1]; j++) {
            cv_value *v = tap_values(c, &p, xp, i, j), *ti = tap_index(c, &p, i, j);
            if (!v || !ti)
                return -1;
            if (!best) {
                best = v;
                idx = ti;
                continue;
            }
            cv_value *take = onnx_binary(c, "greater", v, best);
            best = onnx_where(c, take, v, best);
            idx = onnx_where(c, take, ti, idx);
        }
    if (!idx)
        return -1;
    cv_value *flat = onnx_binary(c, "add", idx, plane_offsets(c, &p));
    return onnx_bind_value(c, 0, y) | onnx_bind_value(c, 1, flat);
}
