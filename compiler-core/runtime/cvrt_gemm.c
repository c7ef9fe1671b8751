/* Packed, register-tiled single-precision GEMM (the classic five-loop
 * structure): B is packed per (KC x NC) block into NR-wide panels shared by
 * all threads, each task packs its own MC x KC block of A into MR-tall
 * panels, and an MR x NR micro-kernel keeps the whole C tile in vector
 * registers, one fused multiply-add per element of B and row of A.
 *
 * The tile shape is chosen per target variant (the bitcode is built once per
 * variant; see build.mk).  The B operand is either a strided matrix or a
 * convolution's im2col matrix read straight from the image (implicit GEMM),
 * so convolutions never materialise im2col. */
#include "compiler-core/runtime/cvrt_internal.h"

#if defined(CVRT_AVX512)
enum { MR = 8, NR = 32 };
#elif defined(CVRT_AVX2)
enum { MR = 6, NR = 16 };
#elif defined(__x86_64__)
enum { MR = 4, NR = 8 };
#else
enum { MR = 6, NR = 16 };
#endif
enum { KC = 256, MC = MR * 16, NC = 2048 };

typedef float vnr __attribute__((vector_size(NR * 4)));

#if defined(__clang__)
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL
#endif

/* The im2col view of one image. */
typedef struct conv_geom {
    int64_t C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
} conv_geom;

typedef struct gemm_job {
    int64_t M, N, K;
    float alpha;
    const float *a;
    int64_t ars, acs;
    const float *b;             /* strided B, or the image when conv is set */
    int64_t brs, bcs;
    const conv_geom *conv;
    float *c;
    int64_t ldc, accumulate;
    const float *bias;
    int64_t bias_rs, bias_cs;
    float bias_scale;
    cvrt_epilogue epi;
    /* The current block. */
    int64_t jc, nc, pc, kc, n_panels, m_blocks, n_groups, panels_per_group;
    cvrt_ctx *rt;
} gemm_job;

int cvrt_gemm_init(cvrt_ctx *rt)
{
    void *p = 0;
    if (posix_memalign(&p, 128, sizeof(float) * KC * NC))
        return -1;
    rt->pack_b = p;
    rt->pack_a = calloc((size_t)rt->nthreads, sizeof *rt->pack_a);
    if (!rt->pack_a)
        return -1;
    for (int t = 0; t < rt->nthreads; t++) {
        if (posix_memalign(&p, 128, sizeof(float) * MC * KC))
            return -1;
        rt->pack_a[t] = p;
    }
    return 0;
}

void cvrt_gemm_fini(cvrt_ctx *rt)
{
    for (int t = 0; rt->pack_a && t < rt->nthreads; t++)
        free(rt->pack_a[t]);
    free(rt->pack_a);
    free(rt->pack_b);
    rt->pack_a = 0;
    rt->pack_b = 0;
}

/* ---- packing ------------------------------------------------------------ */

static void pack_b_strided(const gemm_job *j, int64_t j0, int64_t nr, float *out)
{
    for (int64_t k = 0; k < j->kc; k++) {
        const float *src = j->b + (j->pc + k) * j->brs + j0 * j->bcs;
        float *dst = out + k * NR;
        if (nr == NR && j->bcs == 1) {
            for (int jj = 0; jj < NR; jj++)
                dst[jj] = src[jj];
            continue;
        }
        for (int64_t jj = 0; jj < NR; jj++)
            dst[jj] = jj < nr ? src[jj * j->bcs] : 0.0f;
    }
}

/* One output row's run of n positions starting at ow: the taps of input row
 * src (NULL when outside the image) at columns iw0 + t*sw, zero outside. */
static void pack_run(const conv_geom *g, const float *restrict src, int64_t iw0, int64_t n,
                     float *restrict dst)
{
    int64_t lo = 0, hi = 0;
    if (src && iw0 < g->W) {
        lo = iw0 >= 0 ? 0 : cvrt_min(n, (-iw0 + g->sw - 1) / g->sw);
        hi = cvrt_min(n, (g->W - 1 - iw0) / g->sw + 1);
    }
    int64_t t = 0;
    for (; t < lo; t++)
        dst[t] = 0.0f;
    if (g->sw == 1) {
        for (; t < hi; t++)
            dst[t] = src[iw0 + t];
    } else {
        for (; t < hi; t++)
            dst[t] = src[iw0 + t * g->sw];
    }
    for (; t < n; t++)
        dst[t] = 0.0f;
}

/* Row k of the im2col matrix is tap (c, kh, kw); its columns are output
 * positions, packed run by run along output rows.  The tap advances
 * incrementally: divisions per row would cost more than the copy. */
static void pack_b_conv(const gemm_job *j, int64_t j0, int64_t nr, float *out)
{
    const conv_geom *g = j->conv;
    int64_t khw = g->KH * g->KW, c = j->pc / khw, r = j->pc % khw;
    int64_t kh = r / g->KW, kw = r % g->KW, oh0 = j0 / g->OW, ow0 = j0 % g->OW;
    for (int64_t k = 0; k < j->kc; k++) {
        const float *plane = j->b + c * g->H * g->W;
        float *dst = out + k * NR;
        int64_t jj = 0, oh = oh0, ow = ow0;
        while (jj < nr) {
            int64_t n = cvrt_min(nr - jj, g->OW - ow);
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            const float *src = ih >= 0 && ih < g->H ? plane + ih * g->W : 0;
            pack_run(g, src, ow * g->sw - g->pl + kw * g->dw, n, dst + jj);
            jj += n;
            ow += n;
            if (ow == g->OW) {
                ow = 0;
                oh++;
            }
        }
        for (; jj < NR; jj++)
            dst[jj] = 0.0f;
        if (++kw == g->KW) {
            kw = 0;
            if (++kh == g->KH) {
                kh = 0;
                c++;
            }
        }
    }
}

static void pack_b_task(void *p, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const gemm_job *j = p;
    for (int64_t pnl = lo; pnl < hi; pnl++) {
        int64_t j0 = j->jc + pnl * NR, nr = cvrt_min(NR, j->jc + j->nc - j0);
        float *out = j->rt->pack_b + pnl * j->kc * NR;
        if (j->conv)
            pack_b_conv(j, j0, nr, out);
        else
            pack_b_strided(j, j0, nr, out);
    }
}

static void pack_a(const gemm_job *j, int64_t ic, int64_t mc, float *out)
{
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
        int64_t mr = cvrt_min(MR, mc - i0);
        float *panel = out + i0 * j->kc;
        for (int64_t ii = 0; ii < MR; ii++) {
            const float *src = j->a + (ic + i0 + ii) * j->ars + j->pc * j->acs;
            for (int64_t k = 0; k < j->kc; k++)
                panel[k * MR + ii] = ii < mr ? src[k * j->acs] : 0.0f;
        }
    }
}

/* ---- the micro-kernel and the C update ---------------------------------- */

static void ukernel(int64_t kc, const float *restrict ap, const float *restrict bp,
                    float *restrict out)
{
    vnr acc[MR];
    UNROLL_FULL
    for (int i = 0; i < MR; i++)
        acc[i] = (vnr){0};
    for (int64_t k = 0; k < kc; k++) {
        vnr b = *(const vnr *)(bp + k * NR);
        const float *a = ap + k * MR;
        UNROLL_FULL
        for (int i = 0; i < MR; i++)
            acc[i] += a[i] * b;
    }
    UNROLL_FULL
    for (int i = 0; i < MR; i++)
        *(vnr *)(out + i * NR) = acc[i];
}

/* The epilogue on a finished row segment (res offset ro). */
static void finish_row(const cvrt_epilogue *e, float *row, int64_t ro, int64_t n)
{
    if (e->res)
        for (int64_t jj = 0; jj < n; jj++)
            row[jj] += e->res[ro + jj];
    if (e->act == 1) {
        for (int64_t jj = 0; jj < n; jj++)
            row[jj] = row[jj] < 0.0f ? 0.0f : row[jj];
    } else if (e->act == 2) {
        for (int64_t jj = 0; jj < n; jj++) {
            float v = row[jj] < e->lo ? e->lo : row[jj];
            row[jj] = v > e->hi ? e->hi : v;
        }
    }
}

/* The first K block writes C from scratch (plus bias, or onto C when
 * accumulating); later blocks add to it. */
static void store_tile(const gemm_job *j, const float *acc, int64_t i0, int64_t j0, int64_t mr,
                       int64_t nr)
{
    int first = j->pc == 0;
    for (int64_t ii = 0; ii < mr; ii++) {
        float *crow = j->c + (i0 + ii) * j->ldc + j0;
        const float *arow = acc + ii * NR;
        if (!first || j->accumulate) {
            for (int64_t jj = 0; jj < nr; jj++)
                crow[jj] += j->alpha * arow[jj];
        } else {
            for (int64_t jj = 0; jj < nr; jj++)
                crow[jj] = j->alpha * arow[jj];
        }
        if (first && j->bias) {
            const float *brow = j->bias + (i0 + ii) * j->bias_rs + j0 * j->bias_cs;
            for (int64_t jj = 0; jj < nr; jj++)
                crow[jj] += j->bias_scale * brow[jj * j->bias_cs];
        }
        if (j->pc + j->kc >= j->K)
            finish_row(&j->epi, crow, (i0 + ii) * j->epi.res_ld + j0, nr);
    }
}

static void compute_task(void *p, int64_t lo, int64_t hi, int tid)
{
    const gemm_job *j = p;
    _Alignas(sizeof(vnr)) float tile[MR * NR];
    float *ap = j->rt->pack_a[tid];
    for (int64_t t = lo; t < hi; t++) {
        int64_t ic = (t / j->n_groups) * MC, mc = cvrt_min(MC, j->M - ic);
        int64_t p0 = (t % j->n_groups) * j->panels_per_group;
        int64_t p1 = cvrt_min(j->n_panels, p0 + j->panels_per_group);
        pack_a(j, ic, mc, ap);
        for (int64_t pnl = p0; pnl < p1; pnl++) {
            int64_t j0 = j->jc + pnl * NR, nr = cvrt_min(NR, j->jc + j->nc - j0);
            const float *bp = j->rt->pack_b + pnl * j->kc * NR;
            for (int64_t i0 = 0; i0 < mc; i0 += MR) {
                ukernel(j->kc, ap + i0 * j->kc, bp, tile);
                store_tile(j, tile, ic + i0, j0, cvrt_min(MR, mc - i0), nr);
            }
        }
    }
}

/* ---- the block loops ---------------------------------------------------- */

static void run_block(gemm_job *j)
{
    cvrt_ctx *rt = j->rt;
    j->n_panels = cvrt_cdiv(j->nc, NR);
    j->m_blocks = cvrt_cdiv(j->M, MC);
    /* Small products are not worth waking the pool for. */
    int small = j->M * j->nc * cvrt_max(j->kc, 1) < 32768;
    int64_t want = small ? 1 : 2 * (int64_t)rt->nthreads;
    int64_t groups = cvrt_min(j->n_panels, cvrt_max(1, cvrt_cdiv(want, j->m_blocks)));
    j->panels_per_group = cvrt_cdiv(j->n_panels, groups);
    j->n_groups = cvrt_cdiv(j->n_panels, j->panels_per_group);
    cvrt_parallel(rt, j->n_panels, small ? j->n_panels : 8, pack_b_task, j);
    cvrt_parallel(rt, j->m_blocks * j->n_groups, 1, compute_task, j);
}

static void gemm_run(gemm_job *j)
{
    if (j->M <= 0 || j->N <= 0)
        return;
    for (j->jc = 0; j->jc < j->N; j->jc += NC) {
        j->nc = cvrt_min(NC, j->N - j->jc);
        j->pc = 0;
        do {
            j->kc = cvrt_min(KC, j->K - j->pc);
            run_block(j);
            j->pc += KC;
        } while (j->pc < j->K);
    }
}

void cvrt_sgemm(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                const float *a, int64_t ars, int64_t acs,
                const float *b, int64_t brs, int64_t bcs,
                float *c, int64_t ldc, int64_t accumulate,
                const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                const float *res, int64_t res_ld, int64_t act, float lo, float hi)
{
    gemm_job j = {.M = M, .N = N, .K = K, .alpha = alpha, .a = a, .ars = ars, .acs = acs,
                  .b = b, .brs = brs, .bcs = bcs, .c = c, .ldc = ldc, .accumulate = accumulate,
                  .bias = bias, .bias_rs = bias_rs, .bias_cs = bias_cs,
                  .bias_scale = bias_scale, .epi = {res, res_ld, act, lo, hi}, .rt = rt};
    gemm_run(&j);
}

void cvrt_conv2d(cvrt_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                 int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                 int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                 int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    conv_geom g = {C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    int64_t K = C * KH * KW;
    gemm_job j = {.M = OC, .N = OH * OW, .K = K, .alpha = 1.0f, .a = w, .ars = K, .acs = 1,
                  .b = x, .c = y, .ldc = OH * OW, .bias = bias, .bias_rs = 1, .bias_cs = 0,
                  .bias_scale = 1.0f, .epi = {res, OH * OW, act, lo, hi}, .rt = rt};
    /* A 1x1 convolution with unit strides and no padding reads x as is. */
    if (KH == 1 && KW == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && OH == H && OW == W) {
        j.brs = H * W;
        j.bcs = 1;
    } else {
        j.conv = &g;
    }
    gemm_run(&j);
}
