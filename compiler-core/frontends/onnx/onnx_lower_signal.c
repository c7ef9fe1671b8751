/* ONNX signal ops: the window functions (HannWindow, HammingWindow,
 * BlackmanWindow) and MelWeightMatrix, whose results depend only on
 * import-time scalars and are evaluated here into constants, and DFT, a
 * matmul with constant cosine and sine matrices. */
#include <math.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

/* The element type named by the output_datatype attribute (default float). */
static int out_dtype(onnx_ctx *c, cv_dtype *dt)
{
    int64_t odt;
    if (onnx_attr_int(c, "output_datatype", ONNX_DT_FLOAT, &odt) < 0)
        return -1;
    *dt = onnx_dtype((int32_t)odt);
    if (*dt == CV_DT_INVALID)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_DTYPE, "output_datatype %s is not supported",
                        onnx_dtype_name((int32_t)odt));
    return 0;
}

/* Input i as one integer or float scalar known at import time. */
static int scalar_in(onnx_ctx *c, int i, const char *role, double *out)
{
    const onnx_const *k = onnx_in_const(c, i, role);
    if (!k)
        return onnx_in(c, i) ? -1 : onnx_err(c, CV_E_ONNX_ARITY, "input %d (%s) is required", i, role);
    if (k->numel != 1 || (k->syms && k->syms[0]))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "input %d (%s) must be one known value", i, role);
    *out = onnx_const_f64(k, 0);
    return 0;
}

/* w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic)
 * or size - 1 (symmetric). */
static int lower_window(onnx_ctx *c)
{
    const char *op = c->node->op_type;
    double a0 = 0.5, a1 = 0.5, a2 = 0, size;
    if (!strcmp(op, "HammingWindow")) {
        a0 = 25.0 / 46;
        a1 = 1 - a0;
    } else if (!strcmp(op, "BlackmanWindow")) {
        a0 = 0.42;
        a2 = 0.08;
    }
    int64_t periodic;
    cv_dtype dt;
    if (scalar_in(c, 0, "size", &size) < 0 || onnx_attr_int(c, "periodic", 1, &periodic) < 0 ||
        out_dtype(c, &dt) < 0)
        return -1;
    if (size < 0 || size > ONNX_CONST_MAX_NUMEL)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "window size %g is out of range", size);
    int64_t n = (int64_t)size;
    double len = (double)(periodic ? n : n - 1);
    onnx_const *k = onnx_const_new(c, dt, 1, &n);
    for (int64_t i = 0; k && i < n; i++) {
        double x = len > 0 ? 2 * M_PI * (double)i / len : 0;
        onnx_const_set_f64(k, i, a0 - a1 * cos(x) + a2 * cos(2 * x));
    }
    return onnx_bind_const(c, 0, k);
}

/* The mel filter bank of the ONNX reference: triangular filters between
 * bin edges spaced evenly on the mel scale. */
static int lower_mel(onnx_ctx *c)
{
    double bins, dft, rate, lo_hz, hi_hz;
    cv_dtype dt;
    if (scalar_in(c, 0, "num_mel_bins", &bins) < 0 || scalar_in(c, 1, "dft_length", &dft) < 0 ||
        scalar_in(c, 2, "sample_rate", &rate) < 0 ||
        scalar_in(c, 3, "lower_edge_hertz", &lo_hz) < 0 ||
        scalar_in(c, 4, "upper_edge_hertz", &hi_hz) < 0 || out_dtype(c, &dt) < 0)
        return -1;
    if (bins < 1 || bins > 4096 || dft < 1 || dft > (1 << 20) || rate <= 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "num_mel_bins, dft_length or sample_rate out of "
                        "range");
    int64_t nm = (int64_t)bins, dims[2] = {(int64_t)dft / 2 + 1, nm};
    onnx_const *k = onnx_const_new(c, dt, 2, dims);
    int64_t *edge = cv_arena_alloc_array(c->a, (size_t)nm + 2, sizeof *edge);
    if (!k || !edge)
        return -1;
    double lo_mel = 2595 * log10(1 + lo_hz / 700), hi_mel = 2595 * log10(1 + hi_hz / 700);
    double step = (hi_mel - lo_mel) / (double)(nm + 2);
    for (int64_t i = 0; i < nm + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lo_mel) / 2595) - 1);
        edge[i] = (int64_t)floor((double)((int64_t)dft + 1) * hz / rate);
        if (edge[i] < 0 || edge[i] >= dims[0] + (i == nm + 1))
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "the mel band edges fall outside the spectrum");
    }
    memset(k->data, 0, (size_t)k->numel * cv_dtype_size(dt));
    for (int64_t i = 0; i < nm; i++) {
        int64_t l = edge[i], m = edge[i + 1], h = edge[i + 2];
        if (m == l)
            onnx_const_set_f64(k, m * nm + i, 1);
        for (int64_t j = l; m > l && j <= m; j++)
            onnx_const_set_f64(k, j * nm + i, (double)(j - l) / (double)(m - l));
        for (int64_t j = m; h > m && j < h; j++)
            onnx_const_set_f64(k, j * nm + i, (double)(h - j) / (double)(h - m));
    }
    return onnx_bind_const(c, 0, k);
}

static cv_value *slice_last(onnx_ctx *c, cv_value *x, int r, int64_t part)
{
    int64_t axis = r - 1;
    return onnx_op_ints(c, "squeeze", onnx_slice1(c, x, axis, part, part + 1), "axes", &axis, 1);
}

/* The [n, k] matrix of cos (or sin) of 2 pi j k / n, times scale. */
static cv_value *dft_matrix(onnx_ctx *c, int64_t n, int64_t k, bool sine, double scale)
{
    int64_t dims[2] = {n, k};
    onnx_const *m = onnx_const_new(c, CV_F32, 2, dims);
    for (int64_t j = 0; m && j < n; j++)
        for (int64_t q = 0; q < k; q++) {
            double th = 2 * M_PI * (double)((j * q) % n) / (double)n;
            onnx_const_set_f64(m, j * k + q, scale * (sine ? sin(th) : cos(th)));
        }
    return onnx_const_value(c, m, sine ? "dft_sin" : "dft_cos");
}

/* DFT along `axis` of x [..., n, ..., 1|2] (real or complex in the last
 * axis): the axis is moved last, multiplied by W = exp(-+2 pi i jk / n)
 * (inverse: conjugate, over n), and moved back. */
static cv_value *dft(onnx_ctx *c, cv_value *x, int64_t axis_attr, bool inverse, bool onesided)
{
    int64_t n, parts;
    int axis;
    int r = x->type.shape.rank;
    if (r < 2 || onnx_norm_axis(c, axis_attr, r - 1, &axis) < 0 ||
        onnx_static_extent(c, x, axis, &n) < 0 || onnx_static_extent(c, x, r - 1, &parts) < 0) {
        if (r < 2)
            onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "the signal needs rank >= 2");
        return NULL;
    }
    if (parts < 1 || parts > 2 || (onesided && inverse) || n < 1 || n > 65536 ||
        x->type.dtype != CV_F32) {
        onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "the transform needs a float signal with 1 or 2 "
                 "parts in the last axis, and one-sided only forward");
        return NULL;
    }
    int64_t k = onesided ? n / 2 + 1 : n, perm[CV_MAX_RANK], back[CV_MAX_RANK];
    for (int i = 0, j = 0; i < r - 1; i++)
        if (i != axis)
            perm[j++] = i;
    perm[r - 2] = axis;
    for (int i = 0; i < r - 1; i++)
        back[perm[i]] = i;
    cv_value *re = onnx_op_ints(c, "transpose", slice_last(c, x, r, 0), "perm", perm, r - 1);
    cv_value *im = parts == 2 ? onnx_op_ints(c, "transpose", slice_last(c, x, r, 1), "perm", perm,
                                             r - 1) : NULL;
    double scale = inverse ? 1 / (double)n : 1;
    cv_value *wc = dft_matrix(c, n, k, false, scale), *ws = dft_matrix(c, n, k, true,
                                                                        inverse ? scale : -scale);
    cv_value *yr = onnx_binary(c, "matmul", re, wc), *yi = onnx_binary(c, "matmul", re, ws);
    if (im) {
        yr = onnx_binary(c, "sub", yr, onnx_binary(c, "matmul", im, ws));
        yi = onnx_binary(c, "add", yi, onnx_binary(c, "matmul", im, wc));
    }
    int64_t last = r - 1;
    cv_value *out[2] = {
        onnx_op_ints(c, "unsqueeze", onnx_op_ints(c, "transpose", yr, "perm", back, r - 1), "axes",
                     &last, 1),
        onnx_op_ints(c, "unsqueeze", onnx_op_ints(c, "transpose", yi, "perm", back, r - 1), "axes",
                     &last, 1),
    };
    cv_op *o = onnx_op(c, "concat", out, 2);
    if (o)
        cv_op_set_int(o, "axis", last);
    return onnx_finish(c, o);
}

static int lower_dft(onnx_ctx *c)
{
    int64_t axis, inverse, onesided;
    cv_value *x = onnx_in_value(c, 0);
    if (!x || onnx_attr_int(c, "axis", 1, &axis) < 0 ||
        onnx_attr_int(c, "inverse", 0, &inverse) < 0 ||
        onnx_attr_int(c, "onesided", 0, &onesided) < 0)
        return -1;
    double len;
    int64_t r = x->type.shape.rank, a = axis < 0 ? axis + r - 1 : axis;
    if (onnx_in(c, 1) && (scalar_in(c, 1, "dft_length", &len) < 0 || a < 0 || a >= r ||
                          x->type.shape.d[a].sym || len != (double)x->type.shape.d[a].n))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "dft_length other than the signal length is "
                        "not supported");
    return onnx_bind_value(c, 0, dft(c, x, axis, inverse != 0, onesided != 0));
}

/* STFT: frames of the signal [batch, len, 1|2] gathered by constant
 * indices, times the window, then a DFT of each frame. */
static int lower_stft(onnx_ctx *c)
{
    int64_t onesided, len, wlen = -1;
    double step, fl;
    cv_value *x = onnx_in_value(c, 0), *win = onnx_in(c, 2) ? onnx_in_value(c, 2) : NULL;
    if (!x || (onnx_in(c, 2) && !win) || onnx_attr_int(c, "onesided", 1, &onesided) < 0 ||
        scalar_in(c, 1, "frame_step", &step) < 0 ||
        (onnx_in(c, 3) && scalar_in(c, 3, "frame_length", &fl) < 0))
        return -1;
    if (win && (win->type.shape.rank != 1 || onnx_static_extent(c, win, 0, &wlen) < 0))
        return win->type.shape.rank != 1 ? onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "window must be 1-D")
                                         : -1;
    if (onnx_in(c, 3) && wlen >= 0 && (int64_t)fl != wlen)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "frame_length differs from the window's length");
    wlen = onnx_in(c, 3) ? (int64_t)fl : wlen;
    if (x->type.shape.rank != 3 || onnx_static_extent(c, x, 1, &len) < 0)
        return x->type.shape.rank != 3 ? onnx_err(c, CV_E_ONNX_SHAPE_VALUE, "signal must be "
                                                  "[batch, length, 1|2]") : -1;
    if (wlen < 1 || wlen > len || step < 1)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "frame length or step out of range");
    int64_t dims[2] = {(len - wlen) / (int64_t)step + 1, wlen};
    onnx_const *idx = onnx_const_new(c, CV_I64, 2, dims);
    for (int64_t f = 0; idx && f < dims[0]; f++)
        for (int64_t l = 0; l < wlen; l++)
            onnx_const_set_i64(idx, f * wlen + l, f * (int64_t)step + l);
    cv_value *ops[2] = {x, onnx_const_value(c, idx, "frames")};
    cv_op *o = onnx_op(c, "gather", ops, 2);
    if (o)
        cv_op_set_int(o, "axis", 1);
    cv_value *frames = onnx_finish(c, o);   /* [batch, frames, wlen, parts] */
    if (win) {
        int64_t wd[4] = {1, 1, wlen, 1};
        frames = onnx_binary(c, "mul", frames, onnx_op_ints(c, "reshape", win, "shape", wd, 4));
    }
    return onnx_bind_value(c, 0, frames ? dft(c, frames, 2, false, onesided != 0) : NULL);
}

static const onnx_op_entry entries[] = {
    {"HannWindow", 17, lower_window, NULL, 0x1u},
    {"HammingWindow", 17, lower_window, NULL, 0x1u},
    {"BlackmanWindow", 17, lower_window, NULL, 0x1u},
    {"MelWeightMatrix", 17, lower_mel, NULL, 0x1fu},
    {"DFT", 17, lower_dft, "slice squeeze transpose matmul sub add unsqueeze concat", 0x2u},
    {"STFT", 17, lower_stft,
     "gather reshape mul slice squeeze transpose matmul sub add unsqueeze concat", 0xau},
};

const onnx_op_family onnx_ops_signal = {entries, sizeof entries / sizeof entries[0]};
