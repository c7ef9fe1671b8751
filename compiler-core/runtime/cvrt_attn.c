/* Fused attention for the CPU targets (the attention op of CU-IR when the
 * codegen can hand it over; see codegen_attention.c).  One parallel item
 * per (batch, head, block of ROWS query rows) walks the keys in tiles of
 * TILE with an online softmax, in the thread's GEMM scratch buffer:
 *   kt  the tile's keys transposed, D rows of TILE (zeros past the tile),
 *       so that a score tile is a register-blocked product along the keys;
 *   vp  the tile's values, rows padded to DVQ (zeros past Dv);
 *   s   the block's scores, then its exp-weights (ROWS x TILE);
 *   o   the block's running output (ROWS x DVQ), rescaled when a row's
 *       maximum grows, divided by the row's sum at the end.
 * The exponential is the LLVM backend's (lower_math.c cv_llvm_expf) on
 * whole vectors, so a row's softmax costs a few instructions per key. */
#include "compiler-core/runtime/cvrt_internal.h"
#include "compiler-core/runtime/cvrt_vec.h"

enum {
    VL = CVRT_VL,
    ROWS = 32,
    TILE = 256,
    QMR = 8, QNV = 2,   /* score tile: 8 query rows x 2 vectors of keys */
    PMR = 4, PNV = 4,   /* output tile: 4 query rows x 4 vectors of features */
    DVQ_STEP = PNV * VL,
};

typedef cvrt_vf vf;
typedef cvrt_vfu vfu;
typedef cvrt_vi vi;

#define ALWAYS_INLINE inline __attribute__((always_inline))

typedef struct att {
    cvrt_ctx *rt;
    const float *q, *k, *v, *mask;
    float *y;
    int64_t B, H, Sq, Sk, D, Dv, dvq, nqb;
    int64_t qs[3], ks[3], vs[3], ys[3], ms[4];
    float scale;
    int64_t causal;
} att;

static ALWAYS_INLINE vf vexp(vf x)
{
    vf xc = cvrt_select(x < cvrt_splat(-104.0f), cvrt_splat(-104.0f), x);
    xc = cvrt_select(xc > cvrt_splat(88.72283935546875f), cvrt_splat(88.72283935546875f), xc);
    vf n = __builtin_elementwise_floor(xc * cvrt_splat(1.44269504088896341f) + cvrt_splat(0.5f));
    vf r = n * cvrt_splat(-0.693359375f) + xc;
    r = n * cvrt_splat(2.12194440e-4f) + r;
    vf y = cvrt_splat(1.9875691500e-4f);
    y = y * r + cvrt_splat(1.3981999507e-3f);
    y = y * r + cvrt_splat(8.3334519073e-3f);
    y = y * r + cvrt_splat(4.1665795894e-2f);
    y = y * r + cvrt_splat(1.6666665459e-1f);
    y = y * r + cvrt_splat(5.0000001201e-1f);
    y = y * (r * r) + (r + cvrt_splat(1.0f));
    vi k = __builtin_convertvector(n, vi), h = k >> 1;
    y = y * (vf)((h + 127) << 23) * (vf)((k - h + 127) << 23);
    y = cvrt_select(x > cvrt_splat(88.72283935546875f), cvrt_splat(__builtin_inff()), y);
    return cvrt_select(x != x, x, y);
}

static inline float hsum(vf v)
{
    float s = 0.0f;
    for (int l = 0; l < VL; l++)
        s += v[l];
    return s;
}

static inline float hmax(vf v)
{
    float m = v[0];
    for (int l = 1; l < VL; l++)
        m = v[l] > m ? v[l] : m;
    return m;
}

/* s[i][j0 + ..] for mr rows = q rows qr[i] . kt columns [j0, j0 + QNV*VL). */
static ALWAYS_INLINE void qk_tile(int mr, const float *const *qr, const float *kt, int64_t D,
                                  int64_t j0, float *s)
{
    vf acc[QMR][QNV];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < QNV; v++)
            acc[i][v] = (vf){0};
    for (int64_t d = 0; d < D; d++) {
        vf b[QNV];
        for (int v = 0; v < QNV; v++)
            b[v] = *(const vf *)(kt + d * TILE + j0 + v * VL);
        for (int i = 0; i < mr; i++) {
            vf a = cvrt_splat(qr[i][d]);
            for (int v = 0; v < QNV; v++)
                acc[i][v] += a * b[v];
        }
    }
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < QNV; v++)
            *(vf *)(s + i * TILE + j0 + v * VL) = acc[i][v];
}

/* o[i][c0 + ..] += sum_j p[i][j] vp[j][c0 + ..] for mr rows, jn keys. */
static ALWAYS_INLINE void pv_tile(int mr, const float *p, const float *vp, int64_t dvq,
                                  int64_t jn, int64_t c0, float *o)
{
    vf acc[PMR][PNV];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < PNV; v++)
            acc[i][v] = *(const vf *)(o + i * dvq + c0 + v * VL);
    for (int64_t j = 0; j < jn; j++) {
        vf b[PNV];
        for (int v = 0; v < PNV; v++)
            b[v] = *(const vf *)(vp + j * dvq + c0 + v * VL);
        for (int i = 0; i < mr; i++) {
            vf a = cvrt_splat(p[i * TILE + j]);
            for (int v = 0; v < PNV; v++)
                acc[i][v] += a * b[v];
        }
    }
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < PNV; v++)
            *(vf *)(o + i * dvq + c0 + v * VL) = acc[i][v];
}

/* Scores of rows [0, nr) (row pointers qr) against the tile's jn keys. */
static void scores(const att *a, const float *const *qr, int64_t nr, const float *kt, int64_t jn,
                   float *s)
{
    for (int64_t i0 = 0; i0 < nr; i0 += QMR) {
        int64_t mr = cvrt_min(QMR, nr - i0);
        for (int64_t j0 = 0; j0 < jn; j0 += QNV * VL) {
            switch (mr) {
#define QK_CASE(n) case n: qk_tile(n, qr + i0, kt, a->D, j0, s + i0 * TILE); break;
            QK_CASE(1) QK_CASE(2) QK_CASE(3) QK_CASE(4) QK_CASE(5) QK_CASE(6) QK_CASE(7)
            default: qk_tile(QMR, qr + i0, kt, a->D, j0, s + i0 * TILE); break;
#undef QK_CASE
            }
        }
    }
}

static void weighted_values(const att *a, const float *s, int64_t nr, const float *vp,
                            int64_t jn, float *o)
{
    for (int64_t i0 = 0; i0 < nr; i0 += PMR) {
        int64_t mr = cvrt_min(PMR, nr - i0);
        for (int64_t c0 = 0; c0 < a->dvq; c0 += DVQ_STEP) {
            const float *p = s + i0 * TILE;
            float *or = o + i0 * a->dvq;
            switch (mr) {
            case 1: pv_tile(1, p, vp, a->dvq, jn, c0, or); break;
            case 2: pv_tile(2, p, vp, a->dvq, jn, c0, or); break;
            case 3: pv_tile(3, p, vp, a->dvq, jn, c0, or); break;
            default: pv_tile(PMR, p, vp, a->dvq, jn, c0, or); break;
            }
        }
    }
}

/* The tile's keys [j0, j0 + jn) of head (b, h): kt transposed (zeros up to
 * the score tile's width), vp row by row (zeros past Dv). */
static void load_tile(const att *a, int64_t b, int64_t h, int64_t j0, int64_t jn, float *kt,
                      float *vp)
{
    const float *kh = a->k + b * a->ks[0] + h * a->ks[1];
    const float *vh = a->v + b * a->vs[0] + h * a->vs[1];
    int64_t jw = cvrt_cdiv(jn, QNV * VL) * QNV * VL;
    int64_t j = 0;
    for (; j + 8 <= jn; j += 8)
        cvrt_transpose8(kh + (j0 + j) * a->ks[2], a->ks[2], a->D, kt + j, TILE);
    for (; j < jn; j++) {
        const float *kr = kh + (j0 + j) * a->ks[2];
        for (int64_t d = 0; d < a->D; d++)
            kt[d * TILE + j] = kr[d];
    }
    for (int64_t d = 0; d < a->D; d++)
        for (int64_t j = jn; j < jw; j++)
            kt[d * TILE + j] = 0.0f;
    for (j = 0; j < jn; j++) {
        const float *vr = vh + (j0 + j) * a->vs[2];
        float *dst = vp + j * a->dvq;
        for (int64_t c = 0; c < a->Dv; c++)
            dst[c] = vr[c];
        for (int64_t c = a->Dv; c < a->dvq; c++)
            dst[c] = 0.0f;
    }
}

/* Row i of the block: its scores over the tile's keys [j0, j0 + jn) become
 * exp-weights against the row's new maximum; the running sum and output
 * are rescaled.  Keys at or past `vis` (causal) weigh nothing. */
static void softmax_row(const att *a, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t jn,
                        float *srow, float *m, float *l, float *orow)
{
    int64_t vis = jn;
    if (a->causal)
        vis = cvrt_min(jn, cvrt_min(a->Sk, a->Sk - a->Sq + i + 1) - j0);
    int64_t jw = cvrt_cdiv(jn, VL) * VL;
    if (vis <= 0) {
        for (int64_t j = 0; j < jw; j++)
            srow[j] = 0.0f;
        return;
    }
    const float *mrow = a->mask ? a->mask + b * a->ms[0] + h * a->ms[1] + i * a->ms[2] : 0;
    vi lane;
    for (int q = 0; q < VL; q++)
        lane[q] = q;
    vf mx = cvrt_splat(-__builtin_inff());
    for (int64_t j = 0; j < jw; j += VL) {
        vf x = *(const vf *)(srow + j) * cvrt_splat(a->scale);
        if (mrow && a->ms[3] == 1) {
            x += cvrt_load_mask(mrow + j0 + j, 0, cvrt_min(VL, vis - j > 0 ? vis - j : 0));
        } else if (mrow) {
            vf mv = {0};
            for (int64_t q = 0; q < VL && j + q < vis; q++)
                mv[q] = mrow[(j0 + j + q) * a->ms[3]];
            x += mv;
        }
        x = cvrt_select(lane + (int)j < (int)vis, x, cvrt_splat(-__builtin_inff()));
        *(vf *)(srow + j) = x;
        mx = cvrt_select(x > mx, x, mx);
    }
    float mnew = hmax(mx) > *m ? hmax(mx) : *m;
    float alpha = vexp(cvrt_splat(*m - mnew))[0];
    vf sum = {0}, mn = cvrt_splat(mnew);
    for (int64_t j = 0; j < jw; j += VL) {
        vf e = vexp(*(const vf *)(srow + j) - mn);
        e = cvrt_select(lane + (int)j < (int)vis, e, (vf){0});
        *(vf *)(srow + j) = e;
        sum += e;
    }
    *l = *l * alpha + hsum(sum);
    *m = mnew;
    if (alpha != 1.0f)
        for (int64_t c = 0; c < a->dvq; c += VL)
            *(vf *)(orow + c) *= cvrt_splat(alpha);
}

static void item(void *arg, int64_t lo, int64_t hi, int tid)
{
    const att *a = arg;
    float *kt = a->rt->pack_b[tid], *vp = kt + a->D * TILE, *s = vp + TILE * a->dvq;
    float *o = s + ROWS * TILE;
    for (int64_t it = lo; it < hi; it++) {
        int64_t bh = it / a->nqb, i0 = (it % a->nqb) * ROWS, b = bh / a->H, h = bh % a->H;
        int64_t nr = cvrt_min(ROWS, a->Sq - i0);
        const float *qr[ROWS];
        float m[ROWS], l[ROWS];
        for (int64_t i = 0; i < nr; i++) {
            qr[i] = a->q + b * a->qs[0] + h * a->qs[1] + (i0 + i) * a->qs[2];
            m[i] = -__builtin_inff();
            l[i] = 0.0f;
        }
        for (int64_t c = 0; c < nr * a->dvq; c++)
            o[c] = 0.0f;
        /* Keys any row of the block sees. */
        int64_t keys = a->Sk;
        if (a->causal)
            keys = cvrt_max(0, cvrt_min(a->Sk, a->Sk - a->Sq + i0 + nr));
        for (int64_t j0 = 0; j0 < keys; j0 += TILE) {
            int64_t jn = cvrt_min(TILE, keys - j0);
            load_tile(a, b, h, j0, jn, kt, vp);
            scores(a, qr, nr, kt, jn, s);
            for (int64_t i = 0; i < nr; i++)
                softmax_row(a, b, h, i0 + i, j0, jn, s + i * TILE, &m[i], &l[i], o + i * a->dvq);
            weighted_values(a, s, nr, vp, jn, o);
        }
        for (int64_t i = 0; i < nr; i++) {
            /* No visible key (causal, Sq > Sk): zeros, as the reference. */
            float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
            float *yr = a->y + b * a->ys[0] + h * a->ys[1] + (i0 + i) * a->ys[2];
            const float *orow = o + i * a->dvq;
            for (int64_t c = 0; c < a->Dv; c++)
                yr[c] = orow[c] * inv;
        }
    }
}

void cvrt_attention(cvrt_ctx *rt, const float *q, const float *k, const float *v,
                    const float *mask, float *y, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                    int64_t D, int64_t Dv, int64_t qsb, int64_t qsh, int64_t qss, int64_t ksb,
                    int64_t ksh, int64_t kss, int64_t vsb, int64_t vsh, int64_t vss, int64_t ysb,
                    int64_t ysh, int64_t yss, int64_t msb, int64_t msh, int64_t mss, int64_t msk,
                    float scale, int64_t causal)
{
    att a = {.rt = rt, .q = q, .k = k, .v = v, .mask = mask, .y = y, .B = B, .H = H, .Sq = Sq,
             .Sk = Sk, .D = D, .Dv = Dv, .dvq = cvrt_cdiv(Dv, DVQ_STEP) * DVQ_STEP,
             .nqb = cvrt_cdiv(Sq, ROWS), .qs = {qsb, qsh, qss}, .ks = {ksb, ksh, kss},
             .vs = {vsb, vsh, vss}, .ys = {ysb, ysh, yss}, .ms = {msb, msh, mss, msk},
             .scale = scale, .causal = causal};
    if (B <= 0 || H <= 0 || Sq <= 0)
        return;
    cvrt_parallel(rt, B * H * a.nqb, 1, item, &a);
}
