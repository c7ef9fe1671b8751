/* -p bf16 matrix products whose B is a constant (a projection's weights):
 * cvrt_sgemm_bf16 reads B from its pair form, made at compile time and kept
 * in 16 bits (cvrt.h): no cast kernel widens the weights at every run and
 * no run-time packing copies them.  The form serves three ways to compute:
 *   AMX (tdpbf16ps, where cpuid says AMX-BF16 and Linux grants the tile
 *     data): A rounded to bf16 rows, 32 x 32 tiles of f32 sums over all of K;
 *     a row of pairs of the form is exactly a B tile's row.
 *   AVX512_BF16 (vdpbf16ps): the same rounded A, 8 rows x 32 columns, a
 *     broadcast pair of A against a row of pairs of B.  On Zen 4 (one core,
 *     tests/device/amx_gemm_check) 290-335 GFLOP/s on BERT-base's shapes
 *     against 80-185 for the widened path and ~200 for the f32 GEMM.
 *   Otherwise each K block of B is widened into the f32 micro-kernel's
 *     panels (a shift and a mask per pair: bf16 is the top half of an f32)
 *     and A stays f32: the f32 GEMM's speed on half the weight bytes.
 * Few rows (a decode step's M = 1) take dot products straight along the
 * form's panels.  Every path sums in f32 and ends in the f32 micro-kernel's
 * C update (bias, residual, activation). */
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_act.h"
#include "compiler-core/runtime/cvrt_qcpu.h"

enum { PB = CVRT_PB, VL = CVRT_VL, MR = CVRT_GEMM_MR, NV = CVRT_GEMM_NV, RB = 32 };

typedef cvrt_vf vf;
typedef unsigned u32v __attribute__((vector_size(CVRT_VL * 4), aligned(4)));
typedef uint32_t u32a __attribute__((may_alias));

int64_t cvrt_bf16_k2p(int64_t K)
{
    return cvrt_cdiv(cvrt_cdiv(K, 2), 16) * 16;
}

static inline float lo_f(uint32_t u)
{
    u <<= 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

static inline float hi_f(uint32_t u)
{
    u &= 0xffff0000u;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

void cvrt_gemm_bf16_widen_b(const cvrt_gemm_job *j, int64_t pc, int64_t kc, int64_t p0,
                            int64_t p1, int64_t nr_panel, float *out)
{
    int64_t K2p = cvrt_bf16_k2p(j->K);
    for (int64_t pnl = p0; pnl < p1; pnl++) {
        float *o = out + (pnl - p0) * kc * nr_panel;
        if (nr_panel == PB) {
            const uint32_t *src = j->bpb + (pnl * K2p + pc / 2) * PB;
            for (int64_t k = 0; k < kc; k += 2) {
                u32a *d0 = (u32a *)(o + k * PB), *d1 = (u32a *)(o + (k + 1) * PB);
                const uint32_t *row = src + (k / 2) * PB;
                for (int v = 0; v < PB / VL; v++) {
                    u32v u = *(const u32v *)(row + v * VL);
                    *(u32v *)(d0 + v * VL) = u << 16;
                    if (k + 1 < kc)
                        *(u32v *)(d1 + v * VL) = u & 0xffff0000u;
                }
            }
            continue;
        }
        for (int64_t k = 0; k < kc; k++)
            for (int64_t jj = 0; jj < nr_panel; jj++) {
                int64_t n = pnl * nr_panel + jj, kk = pc + k;
                uint32_t u = n < j->N ? j->bpb[((n / PB) * K2p + kk / 2) * PB + n % PB] : 0;
                o[k * nr_panel + jj] = kk & 1 ? hi_f(u) : lo_f(u);
            }
    }
}

/* ---- few rows: dot products along the form's panels ---------------------- */

static void small_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const cvrt_gemm_job *j = arg;
    int64_t K2 = cvrt_cdiv(j->K, 2), K2p = cvrt_bf16_k2p(j->K);
    for (int64_t p = lo; p < hi; p++) {
        const uint32_t *panel = j->bpb + p * K2p * PB;
        int64_t n0 = p * PB, nn = cvrt_min(PB, j->N - n0);
        for (int64_t i = 0; i < j->M; i++) {
            const float *arow = j->a + i * j->ars;
            vf acc[PB / VL] = {{0}};
            for (int64_t q = 0; q < K2; q++) {
                float a0 = arow[2 * q * j->acs];
                float a1 = 2 * q + 1 < j->K ? arow[(2 * q + 1) * j->acs] : 0.0f;
                for (int v = 0; v < PB / VL; v++) {
                    u32v u = *(const u32v *)(panel + q * PB + v * VL);
                    acc[v] += cvrt_splat(a0) * (vf)(u << 16) +
                              cvrt_splat(a1) * (vf)(u & 0xffff0000u);
                }
            }
            _Alignas(64) float sums[PB];
            for (int v = 0; v < PB / VL; v++)
                *(vf *)(sums + v * VL) = acc[v];
            float *crow = j->c + i * j->ldc + n0;
            const cvrt_epilogue *e = &j->epi;
            for (int64_t n = 0; n < nn; n++) {
                float x = j->alpha * sums[n] + (j->accumulate ? crow[n] : 0.0f);
                if (j->bias)
                    x += j->bias_scale * j->bias[i * j->bias_rs + (n0 + n) * j->bias_cs];
                if (e->res)
                    x += e->res[i * e->res_ld + n0 + n];
                crow[n] = cvrt_act_f32(x, e->act, e->lo, e->hi);
            }
        }
    }
}

/* ---- bf16 products: AVX512_BF16 and AMX --------------------------------- */

#ifdef QC_X86
/* f32 to bf16 bits, round to nearest even, NaN kept quiet (common/dtype.c). */
static inline uint32_t rne16(float f)
{
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

/* Rows [r0, r0+rows) of A rounded to bf16 pairs, K2p per row, zero past K
 * and past rows (RB rows in all). */
static void round_a(const cvrt_gemm_job *j, int64_t r0, int64_t rows, int64_t K2p, uint32_t *dst)
{
    for (int64_t r = 0; r < RB; r++) {
        uint32_t *d = dst + r * K2p;
        int64_t q = 0;
        if (r < rows) {
            const float *a = j->a + (r0 + r) * j->ars;
            for (; 2 * q + 1 < j->K; q++)
                d[q] = rne16(a[2 * q * j->acs]) | rne16(a[(2 * q + 1) * j->acs]) << 16;
            if (2 * q < j->K) {
                d[q] = rne16(a[2 * q * j->acs]);
                q++;
            }
        }
        for (; q < K2p; q++)
            d[q] = 0;
    }
}

/* acc = 8 rows of A (pairs, lda apart) times the panel's K2 rows of pairs. */
__attribute__((target("avx512f,avx512bf16")))
static void dot_rows(const uint32_t *a, int64_t lda, const uint32_t *b, int64_t K2,
                     vf acc[MR][NV])
{
    __m512 s[8][2];
    for (int r = 0; r < 8; r++)
        s[r][0] = s[r][1] = _mm512_setzero_ps();
    for (int64_t q = 0; q < K2; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * PB);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * PB + 16);
        for (int r = 0; r < 8; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[r * lda + q]);
            s[r][0] = _mm512_dpbf16_ps(s[r][0], av, b0);
            s[r][1] = _mm512_dpbf16_ps(s[r][1], av, b1);
        }
    }
    for (int r = 0; r < 8; r++) {
        acc[r][0] = (vf)s[r][0];
        acc[r][1] = (vf)s[r][1];
    }
}

/* out[32][32] = 32 rows of A (pairs, K2p apart) times the panel: tiles 4, 5
 * the rows 0-15 and 16-31 of A, 6, 7 the panel's columns 0-15 and 16-31,
 * 0-3 the sums. */
__attribute__((target("amx-tile,amx-bf16")))
static void amx_rows(const uint32_t *a, int64_t K2p, const uint32_t *b, float *out)
{
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t q = 0; q < K2p; q += 16) {
        _tile_loadd(4, a + q, K2p * 4);
        _tile_loadd(5, a + 16 * K2p + q, K2p * 4);
        _tile_loadd(6, b + q * PB, PB * 4);
        _tile_loadd(7, b + q * PB + 16, PB * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, PB * 4);
    _tile_stored(1, out + 16, PB * 4);
    _tile_stored(2, out + 16 * PB, PB * 4);
    _tile_stored(3, out + 16 * PB + 16, PB * 4);
}
#endif

void cvrt_gemm_bf16_task(const cvrt_gemm_job *j, float *abuf, int64_t m0, int64_t mc,
                         int64_t c0, int64_t c1, int64_t n_cols)
{
#ifdef QC_X86
    int64_t K2 = cvrt_cdiv(j->K, 2), K2p = cvrt_bf16_k2p(j->K);
    uint32_t *ap = (uint32_t *)(void *)abuf;
    int amx = j->bfpath == CVRT_BF_AMX;
    if (amx)
        amx_begin();
    for (int64_t r0 = m0; r0 < m0 + mc && r0 < j->M; r0 += RB) {
        int64_t rows = cvrt_min(RB, cvrt_min(m0 + mc, j->M) - r0);
        round_a(j, r0, rows, K2p, ap);
        for (int64_t n0 = c0; n0 < c1 && n0 < n_cols; n0 += PB) {
            const uint32_t *bp = j->bpb + (n0 / PB) * K2p * PB;
            int64_t nr = cvrt_min(PB, n_cols - n0);
            _Alignas(64) float out[RB * PB];
            if (amx)
                amx_rows(ap, K2p, bp, out);
            for (int64_t g = 0; g * MR < rows; g++) {
                vf acc[MR][NV];
                if (amx) {
                    for (int r = 0; r < MR; r++)
                        for (int v = 0; v < NV; v++)
                            acc[r][v] = *(const vf *)(out + (g * MR + r) * PB + v * VL);
                } else {
                    dot_rows(ap + g * MR * K2p, K2p, bp, K2, acc);
                }
                cvrt_gemm_store_tile(j, acc, r0 + g * MR, n0, nr, 1, 1);
            }
        }
    }
    if (amx)
        amx_end();
#else
    (void)j, (void)abuf, (void)m0, (void)mc, (void)c0, (void)c1, (void)n_cols;
#endif
}

/* Which way a product of K deep computes here: AMX where granted, else
 * vdpbf16ps where the CPU has AVX512_BF16 (either only while A's rounded
 * rows fit the thread's buffer), else the widened f32 GEMM.
 * want > 0 asks for that path (the check program, tests): granted only
 * where the CPU has it. */
int64_t cvrt_gemm_bf16_pick(int64_t K, int64_t want)
{
#ifdef QC_X86
    int have = cpu_dots();
    if (RB * cvrt_bf16_k2p(K) > cvrt_gemm_abuf_floats())
        return CVRT_BF_WIDEN;
    if (want == CVRT_BF_WIDEN)
        return CVRT_BF_WIDEN;
    if ((want < 0 || want == CVRT_BF_AMX) && (have & HAVE_AMX_BF16))
        return CVRT_BF_AMX;
    if ((want < 0 || want == CVRT_BF_DOT) && (have & HAVE_BF16))
        return CVRT_BF_DOT;
#else
    (void)K, (void)want;
#endif
    return CVRT_BF_WIDEN;
}

void cvrt_gemm_bf16_run(cvrt_ctx *rt, const cvrt_gemm_job *j)
{
    if (j->M <= 0 || j->N <= 0)
        return;
    if (j->M < cvrt_gemm_min_rows() || j->M == 1) {
        int64_t np = cvrt_cdiv(j->N, PB);
        int64_t grain = cvrt_max(1, cvrt_min(cvrt_cdiv(np, 2 * (int64_t)cvrt_threads(rt)),
                                             2048 / cvrt_max(1, j->M * j->K / 64)));
        cvrt_parallel(rt, np, grain, small_task, (void *)j);
        return;
    }
    cvrt_gemm_run(rt, j);
}

void cvrt_sgemm_bf16(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *a, int64_t ars, int64_t acs,
                     const uint32_t *b, int64_t brs, int64_t bcs,
                     float *c, int64_t ldc, int64_t accumulate,
                     const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                     const float *res, int64_t res_ld, int64_t act, float lo, float hi)
{
    (void)brs;
    (void)bcs;
    cvrt_gemm_job j = {.M = M, .N = N, .K = K, .alpha = alpha, .a = a, .ars = ars, .acs = acs,
                       .bkind = CVRT_B_STRIDED, .bpb = b, .bfpath = cvrt_gemm_bf16_pick(K, -1),
                       .c = c, .ldc = ldc, .accumulate = accumulate, .bias = bias,
                       .bias_rs = bias_rs, .bias_cs = bias_cs, .bias_scale = bias_scale,
                       .epi = {res, res_ld, act, lo, hi}};
    cvrt_gemm_bf16_run(rt, &j);
}
