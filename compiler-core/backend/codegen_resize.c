/* Codegen hook: resize (ops_resize.c).  Every resized axis has static
 * extents, so its coordinate map is computed here, at compile time, in
 * double exactly as the reference kernel does, and embedded as tables
 * (source indices and, for linear, the weight of the upper neighbour).  The
 * kernel then gathers: one load per output for nearest, 2^k weighted loads
 * for linear over k resized axes (the separable passes of the reference,
 * multiplied out). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/ir/ops_nnutil.h"


typedef struct axis_map {
    int64_t in, out;
    double scale;
    int64_t *i0, *i1;       /* malloc'd, out entries */
    float *w;               /* weight of i1 (linear) */
} axis_map;

static int ct_of(const char *s)
{
    return !strcmp(s, "asymmetric") ? CV_RESIZE_ASYMMETRIC
         : !strcmp(s, "align_corners") ? CV_RESIZE_ALIGN_CORNERS
         : !strcmp(s, "pytorch_half_pixel") ? CV_RESIZE_PYTORCH_HALF_PIXEL : CV_RESIZE_HALF_PIXEL;
}

static int64_t nearest_index(const char *mode, double xo, int64_t in)
{
    double f = floor(xo), r;
    if (!strcmp(mode, "floor"))
        r = f;
    else if (!strcmp(mode, "ceil"))
        r = ceil(xo);
    else if (!strcmp(mode, "round_prefer_ceil"))
        r = xo - f == 0.5 ? f + 1 : round(xo);
    else
        r = xo - f == 0.5 ? f : round(xo);
    return r < 0 ? 0 : r > (double)(in - 1) ? in - 1 : (int64_t)r;
}

static int fill_map(axis_map *m, bool linear, int ct, const char *nearest)
{
    m->i0 = calloc((size_t)m->out, sizeof *m->i0);
    m->i1 = calloc((size_t)m->out, sizeof *m->i1);
    m->w = calloc((size_t)m->out, sizeof *m->w);
    if (!m->i0 || !m->i1 || !m->w)
        return -1;
    for (int64_t x = 0; x < m->out; x++) {
        double xo = cv_resize_source_coord(ct, m->scale, x, m->in, m->out);
        if (!linear) {
            m->i0[x] = m->i1[x] = nearest_index(nearest, xo, m->in);
            continue;
        }
        xo = xo < 0 ? 0 : xo > (double)(m->in - 1) ? (double)(m->in - 1) : xo;
        m->i0[x] = (int64_t)floor(xo);
        m->i1[x] = m->i0[x] + 1 < m->in ? m->i0[x] + 1 : m->i0[x];
        m->w[x] = (float)(xo - (double)m->i0[x]);
    }
    return 0;
}

/* The per-axis scales as the reference kernel reads them (<= 0: sizes). */
static void read_scales(const cv_op *op, int rank, double *scale)
{
    const cv_attr *sc = cv_op_attr(op, "scales");
    for (int i = 0; i < rank; i++)
        scale[i] = sc ? 1.0 : 0.0;
    if (!sc)
        return;
    for (int k = 0; k < sc->n; k++)
        scale[rank - sc->n + k] = sc->kind == CV_ATTR_FLOATS ? sc->floats[k] : (double)sc->ints[k];
}

typedef struct resize_tables {
    int n;
    int axis[CV_MAX_RANK];
    cv_kten i0[CV_MAX_RANK], i1[CV_MAX_RANK], w[CV_MAX_RANK];
} resize_tables;

static int make_tables(cv_codegen_ctx *c, const cv_kten *x, const cv_kten *y, bool linear,
                       resize_tables *t)
{
    double scale[CV_MAX_RANK];
    read_scales(c->op, x->rank, scale);
    int ct = ct_of(cv_op_string(c->op, "coordinate_transformation_mode", "half_pixel"));
    const char *nearest = cv_op_string(c->op, "nearest_mode", "round_prefer_floor");
    t->n = 0;
    for (int a = 0; a < x->rank; a++) {
        cv_dim din = c->op->operands[0]->type.shape.d[a], dout = c->op->results[0]->type.shape.d[a];
        if (cv_dim_equal(din, dout) && (scale[a] == 1.0 || scale[a] <= 0.0))
            continue;   /* identity for every coordinate mode */
        if (x->sdim[a] < 0 || y->sdim[a] < 0)
            return cv_cg_error(c, CV_E_CODEGEN_SYMBOLIC_RESIZE, "resizing symbolic axis %d is not compiled", a);
        axis_map m = {.in = x->sdim[a], .out = y->sdim[a]};
        m.scale = scale[a] > 0 ? scale[a] : (double)m.out / (double)m.in;
        int rc = fill_map(&m, linear, ct, nearest);
        cv_shape s = {.rank = 1, .d = {{m.out, NULL}}};
        if (rc == 0) {
            t->axis[t->n] = a;
            t->i0[t->n] = cv_cg_const(c, CV_I64, &s, m.i0);
            t->i1[t->n] = cv_cg_const(c, CV_I64, &s, m.i1);
            t->w[t->n++] = cv_cg_const(c, CV_F32, &s, m.w);
        }
        free(m.i0);
        free(m.i1);
        free(m.w);
        if (rc)
            return cv_cg_error(c, CV_E_OUT_OF_MEMORY, "out of memory");
    }
    return 0;
}

int cv_cg_resize(cv_codegen_ctx *c)
{
    cv_kten x = cv_cg_in(c, 0), y = cv_cg_out(c, 0);
    bool linear = strcmp(cv_op_string(c->op, "mode", "nearest"), "linear") == 0;
    resize_tables t;
    if (make_tables(c, &x, &y, linear, &t))
        return -1;
    const cv_kexpr *p = cv_k_begin(c, "resize", cv_k_numel(c, &y, 0, y.rank), cv_k_i64(c, 1024));
    const cv_kexpr *q = p, *coord[CV_MAX_RANK], *xs[CV_MAX_RANK], *s = cv_k_i64(c, 1);
    for (int d = y.rank - 1; d >= 0; d--) {
        coord[d] = d ? cv_k_rem(c, q, y.dim[d]) : q;
        q = cv_k_div(c, q, y.dim[d]);
        xs[d] = s;
        s = cv_k_mul(c, s, x.dim[d]);
    }
    /* The offset of the non-resized coordinates, then each corner. */
    const cv_kexpr *base = cv_k_i64(c, 0), *lo[CV_MAX_RANK], *hi[CV_MAX_RANK], *w[CV_MAX_RANK];
    int k = 0;
    for (int d = 0; d < x.rank; d++) {
        if (k < t.n && t.axis[k] == d) {
            lo[k] = cv_k_mul(c, cv_k_load(c, &t.i0[k], coord[d]), xs[d]);
            hi[k] = cv_k_mul(c, cv_k_load(c, &t.i1[k], coord[d]), xs[d]);
            w[k] = cv_k_load(c, &t.w[k], coord[d]);
            k++;
        } else {
            base = cv_k_add(c, base, cv_k_mul(c, coord[d], xs[d]));
        }
    }
    const cv_kexpr *v;
    if (!linear) {
        const cv_kexpr *at = base;
        for (int i = 0; i < t.n; i++)
            at = cv_k_add(c, at, lo[i]);
        v = cv_k_load(c, &x, at);
    } else {
        v = cv_k_f32(c, 0);
        for (int corner = 0; corner < (1 << t.n); corner++) {
            const cv_kexpr *at = base, *wt = cv_k_f32(c, 1);
            for (int i = 0; i < t.n; i++) {
                bool up = (corner >> i) & 1;
                at = cv_k_add(c, at, up ? hi[i] : lo[i]);
                wt = cv_k_mul(c, wt, up ? w[i] : cv_k_sub(c, cv_k_f32(c, 1), w[i]));
            }
            v = cv_k_add(c, v, cv_k_mul(c, wt, cv_k_cast(c, cv_k_load(c, &x, at), CV_KTY_F32)));
        }
    }
    cv_k_store(c, &y, p, v);
    cv_k_end(c);
    return 0;
}
