/* Depthwise 2-D convolution, one channel plane per task item.
 *
 * Each plane is first copied into the thread's scratch with its padding
 * written out and its rows and columns split by stride phase (plane
 * (ph, pw) holds the padded image's rows ph, ph+sh, ... and columns pw,
 * pw+sw, ..., each Wq wide).  Output (oh, ow) is then "grid" position
 * n = oh*Wq + ow, and tap (kh, kw) reads every grid position at one fixed
 * offset: the taps run bounds-free over VB consecutive positions at a time,
 * accumulators in vector registers.  Grid positions with ow >= OW are
 * computed and dropped.  The common shapes (3x3, strides 1 and 2) get their
 * tap loops unrolled. */
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_act.h"

/* A block is VB grid positions in NB vectors; GROUP blocks are in flight
 * (eight accumulators: as many as every target keeps in registers). */
enum { VL = CVRT_VL, VB = 32, NB = VB / VL, GROUP = 8 / NB > 0 ? 8 / NB : 1 };

typedef cvrt_vf vf;
typedef cvrt_vfu vfu;

#define ALWAYS_INLINE inline __attribute__((always_inline))
#if defined(__clang__)
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL
#endif

typedef struct dw_job {
    const float *x, *w, *bias, *res;
    float *y;
    int64_t H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, act;
    float lo, hi;
    int64_t Hq, Wq;             /* one phase plane */
    cvrt_ctx *rt;
} dw_job;

/* xq[ph][pw][i][q] = x[i*sh + ph - pt][q*sw + pw - pl], zero outside x. */
static void split_plane(const dw_job *j, const float *restrict src, float *restrict xq)
{
    for (int64_t ph = 0; ph < j->sh; ph++)
        for (int64_t pw = 0; pw < j->sw; pw++) {
            float *dst = xq + (ph * j->sw + pw) * j->Hq * j->Wq;
            /* Columns q with 0 <= q*sw + pw - pl < W. */
            int64_t q0 = cvrt_min(j->Wq, cvrt_max(0, cvrt_cdiv(j->pl - pw, j->sw)));
            int64_t q1 = cvrt_max(q0, cvrt_min(j->Wq, cvrt_cdiv(j->W + j->pl - pw, j->sw)));
            for (int64_t i = 0; i < j->Hq; i++) {
                float *row = dst + i * j->Wq;
                int64_t ih = i * j->sh + ph - j->pt;
                if (ih < 0 || ih >= j->H) {
                    cvrt_zero(row, j->Wq);
                    continue;
                }
                const float *s = src + ih * j->W + pw - j->pl;
                cvrt_zero(row, q0);
                if (j->sw == 1) {
                    cvrt_copy(row + q0, s + q0, q1 - q0);
                } else if (j->sw == 2) {
                    cvrt_copy_even(row + q0, s + 2 * q0, q1 - q0);
                } else {
                    for (int64_t q = q0; q < q1; q++)
                        row[q] = s[q * j->sw];
                }
                cvrt_zero(row + q1, j->Wq - q1);
            }
        }
    /* The last group of blocks reads past the last phase plane. */
    cvrt_zero(xq + j->sh * j->sw * j->Hq * j->Wq, GROUP * VB);
}

/* Grid positions [n0, n0+nb) of acc to the outputs they stand for, with
 * the epilogue unless done (it is, on the vectors, when there is no res). */
static void store_block(const dw_job *j, const float *acc, int64_t n0, int64_t nb,
                        const float *res, int done, float *restrict out)
{
    int64_t row = n0 / j->Wq, col = n0 % j->Wq;
    for (int64_t t = 0; t < nb;) {
        int64_t len = cvrt_min(nb - t, j->Wq - col);
        if (col < j->OW) {
            int64_t cnt = cvrt_min(len, j->OW - col), o = row * j->OW + col;
            if (!done) {
                for (int64_t q = 0; q < cnt; q++) {
                    float v = acc[t + q] + (res ? res[o + q] : 0.0f);
                    out[o + q] = cvrt_act_f32(v, j->act, j->lo, j->hi);
                }
            } else {
                cvrt_copy(out + o, acc + t, cnt);
            }
        }
        t += len;
        row++;
        col = 0;
    }
}

/* One plane; KH, KW and the strides are constants where inlined. */
/* Stores block acc (grid positions [n0, n0+VB), of which nb exist). */
static ALWAYS_INLINE void put_block(const dw_job *j, vf acc[NB], int64_t n0, int64_t nb,
                                    const float *res, float *restrict out)
{
    if (!res && j->act)
        for (int v = 0; v < NB; v++)
            acc[v] = cvrt_act_vec(acc[v], j->act, j->lo, j->hi);
    int64_t col = n0 % j->Wq;
    if (!res && nb == VB && col + nb <= j->OW) {
        /* The block lies inside one output row: store it as is. */
        float *o = out + (n0 / j->Wq) * j->OW + col;
        for (int v = 0; v < NB; v++)
            *(vfu *)(o + v * VL) = acc[v];
        return;
    }
#if defined(CVRT_AVX512) || defined(CVRT_AVX2)
    if (!res) {
        /* Row by row with masked stores: lanes of run [t, t+len) go to
         * output column o + lane - t. */
        int64_t row = n0 / j->Wq;
        for (int64_t t = 0; t < nb; row++, col = 0) {
            int64_t len = cvrt_min(nb - t, j->Wq - col), cnt = cvrt_min(len, j->OW - col);
            for (int v = 0; cnt > 0 && v < NB; v++) {
                int64_t a = cvrt_max(t - v * VL, 0), b = cvrt_min(t + cnt - v * VL, VL);
                if (a < b)
                    cvrt_store_mask(out + row * j->OW + col - t + v * VL, acc[v], a, b);
            }
            t += len;
        }
        return;
    }
#endif
    _Alignas(64) float tmp[VB];
    for (int v = 0; v < NB; v++)
        *(vf *)(tmp + v * VL) = acc[v];
    store_block(j, tmp, n0, nb, res, !res, out);
}

/* One plane, GROUP blocks at a time (each tap's chain of FMAs is long:
 * independent blocks keep the FMA units busy); KH, KW and the strides are
 * constants where inlined. */
static ALWAYS_INLINE void plane(const dw_job *j, const float *restrict xq,
                                const float *restrict wk, float bv, const float *res,
                                float *restrict out, int64_t KH, int64_t KW, int64_t sh,
                                int64_t sw)
{
    int64_t Hq = j->Hq, Wq = j->Wq, ng = (j->OH - 1) * Wq + j->OW;
    for (int64_t n0 = 0; n0 < ng; n0 += GROUP * VB) {
        vf acc[GROUP][NB];
        UNROLL_FULL
        for (int g = 0; g < GROUP; g++)
            UNROLL_FULL
            for (int v = 0; v < NB; v++)
                acc[g][v] = cvrt_splat(bv);
        for (int64_t kh = 0; kh < KH; kh++) {
            int64_t rh = kh * j->dh;
            for (int64_t kw = 0; kw < KW; kw++) {
                int64_t rw = kw * j->dw;
                const float *s = xq + ((rh % sh) * sw + rw % sw) * Hq * Wq +
                                 (rh / sh) * Wq + rw / sw + n0;
                vf wv = cvrt_splat(wk[kh * KW + kw]);
                UNROLL_FULL
                for (int g = 0; g < GROUP; g++)
                    UNROLL_FULL
                    for (int v = 0; v < NB; v++)
                        acc[g][v] += wv * *(const vfu *)(s + g * VB + v * VL);
            }
        }
        UNROLL_FULL
        for (int g = 0; g < GROUP; g++)
            if (n0 + g * VB < ng)
                put_block(j, acc[g], n0 + g * VB, cvrt_min(VB, ng - n0 - g * VB), res, out);
    }
}

static void plane_any(const dw_job *j, const float *xq, const float *wk, float bv,
                      const float *res, float *out)
{
    int64_t KH = j->KH, KW = j->KW, sh = j->sh, sw = j->sw;
#define DW_CASE(k, s) \
    if (KH == k && KW == k && sh == s && sw == s) { \
        plane(j, xq, wk, bv, res, out, k, k, s, s); \
        return; \
    }
    DW_CASE(3, 1) DW_CASE(3, 2)
#undef DW_CASE
    plane(j, xq, wk, bv, res, out, KH, KW, sh, sw);
}

static void dw_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const dw_job *j = arg;
    float *xq = j->rt->pack_b[tid];
    int64_t in = j->H * j->W, outn = j->OH * j->OW, taps = j->KH * j->KW;
    for (int64_t c = lo; c < hi; c++) {
        split_plane(j, j->x + c * in, xq);
        plane_any(j, xq, j->w + c * taps, j->bias ? j->bias[c] : 0.0f,
                  j->res ? j->res + c * outn : 0, j->y + c * outn);
    }
}

/* Planes too large for the scratch: bounds-checked taps, one output at a time. */
static void dw_task_checked(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const dw_job *j = arg;
    for (int64_t c = lo; c < hi; c++) {
        const float *x = j->x + c * j->H * j->W, *wk = j->w + c * j->KH * j->KW;
        for (int64_t oh = 0; oh < j->OH; oh++)
            for (int64_t ow = 0; ow < j->OW; ow++) {
                float acc = j->bias ? j->bias[c] : 0.0f;
                for (int64_t kh = 0; kh < j->KH; kh++) {
                    int64_t ih = oh * j->sh - j->pt + kh * j->dh;
                    for (int64_t kw = 0; ih >= 0 && ih < j->H && kw < j->KW; kw++) {
                        int64_t iw = ow * j->sw - j->pl + kw * j->dw;
                        if (iw >= 0 && iw < j->W)
                            acc += wk[kh * j->KW + kw] * x[ih * j->W + iw];
                    }
                }
                int64_t o = (c * j->OH + oh) * j->OW + ow;
                dw_job one = *j;
                one.OW = one.Wq = 1;
                store_block(&one, &acc, 0, 1, j->res ? j->res + o : 0, 0, j->y + o);
            }
    }
}

void cvrt_dwconv2d(cvrt_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                   int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                   int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                   int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    if (C <= 0 || OH <= 0 || OW <= 0)
        return;
    dw_job j = {x, w, bias, res, y, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW, act, lo, hi,
                .rt = rt};
    j.Hq = cvrt_cdiv((OH - 1) * sh + (KH - 1) * dh + 1, sh);
    j.Wq = cvrt_cdiv((OW - 1) * sw + (KW - 1) * dw + 1, sw);
    int64_t grain = cvrt_max(1, 4096 / (OH * OW));
    if (sh * sw * j.Hq * j.Wq + GROUP * VB <= cvrt_scratch_floats())
        cvrt_parallel(rt, C, grain, dw_task, &j);
    else
        cvrt_parallel(rt, C, grain, dw_task_checked, &j);
}
