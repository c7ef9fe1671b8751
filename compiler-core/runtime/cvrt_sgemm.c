/* The GEMM entry points the kernels call (cvrt_sgemm, with B packed at
 * compile time, with 16-bit B) and the path for few rows: dot products or
 * row updates along memory, columns split across threads.  The blocked
 * engine they hand larger products to is cvrt_gemm.c. */
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_act.h"

enum { VL = CVRT_VL };

typedef cvrt_vf vf;
typedef cvrt_vfu vfu;

/* y[i][j] = alpha * sum_k A[i][k] B[k][j] for few rows: dot products or
 * row updates, whichever runs along memory; columns split across threads. */
typedef struct small_job {
    const cvrt_gemm_job *j;
} small_job;

/* sum_k a[k*as] b[k], in VL partial sums when a is contiguous. */
static float dot(const float *a, int64_t as, const float *b, int64_t K)
{
    int64_t k = 0;
    float acc = 0.0f;
    if (as == 1) {
        vf s[4] = {{0}, {0}, {0}, {0}};
        for (; k + 4 * VL <= K; k += 4 * VL)
            for (int u = 0; u < 4; u++)
                s[u] += *(const vfu *)(a + k + u * VL) * *(const vfu *)(b + k + u * VL);
        vf t = (s[0] + s[1]) + (s[2] + s[3]);
        for (int q = 0; q < VL; q++)
            acc += t[q];
    }
    for (; k < K; k++)
        acc += a[k * as] * b[k];
    return acc;
}

/* dot with b in the 16-bit type `kind`, widened a stack buffer at a time. */
static float dot_h(const float *a, int64_t as, const uint16_t *b, int64_t K, int64_t kind)
{
    enum { CHUNK = 512 };
    _Alignas(64) float buf[CHUNK];
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += CHUNK) {
        int64_t n = cvrt_min(CHUNK, K - k0);
        cvrt_gemm_widen(buf, b + k0, n, kind);
        acc += dot(a + k0 * as, as, buf, n);
    }
    return acc;
}

static void small_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const cvrt_gemm_job *j = ((const small_job *)arg)->j;
    for (int64_t i = 0; i < j->M; i++) {
        float *crow = j->c + i * j->ldc;
        const float *arow = j->a + i * j->ars;
        if (j->brs == 1) {
            for (int64_t n = lo; n < hi; n++) {
                float acc = j->bh ? dot_h(arow, j->acs, j->bh + n * j->bcs, j->K, j->bhk)
                                  : dot(arow, j->acs, j->b + n * j->bcs, j->K);
                crow[n] = j->accumulate ? crow[n] + j->alpha * acc : j->alpha * acc;
            }
        } else {
            for (int64_t n = lo; n < hi; n++)
                crow[n] = j->accumulate ? crow[n] : 0.0f;
            for (int64_t k = 0; k < j->K; k++) {
                float av = j->alpha * arow[k * j->acs];
                const float *brow = j->b + k * j->brs;
                for (int64_t n = lo; n < hi; n++)
                    crow[n] += av * brow[n * j->bcs];
            }
        }
        if (j->bias)
            for (int64_t n = lo; n < hi; n++)
                crow[n] += j->bias_scale * j->bias[i * j->bias_rs + n * j->bias_cs];
        const cvrt_epilogue *e = &j->epi;
        for (int64_t n = lo; n < hi; n++) {
            float v = crow[n] + (e->res ? e->res[i * e->res_ld + n] : 0.0f);
            crow[n] = cvrt_act_f32(v, e->act, e->lo, e->hi);
        }
    }
}

static void run_small(cvrt_ctx *rt, const cvrt_gemm_job *j)
{
    small_job sj = {j};
    int64_t grain = cvrt_max(64, 65536 / cvrt_max(1, j->M * j->K));
    cvrt_parallel(rt, j->N, cvrt_max(grain, cvrt_cdiv(j->N, 2 * (int64_t)rt->nthreads)),
                  small_task, &sj);
}

void cvrt_sgemm(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                const float *a, int64_t ars, int64_t acs,
                const float *b, int64_t brs, int64_t bcs,
                float *c, int64_t ldc, int64_t accumulate,
                const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                const float *res, int64_t res_ld, int64_t act, float lo, float hi)
{
    cvrt_gemm_job j = {.M = M, .N = N, .K = K, .alpha = alpha, .a = a, .ars = ars, .acs = acs,
                       .bkind = CVRT_B_STRIDED, .b = b, .brs = brs, .bcs = bcs, .c = c,
                       .ldc = ldc, .accumulate = accumulate, .bias = bias, .bias_rs = bias_rs,
                       .bias_cs = bias_cs, .bias_scale = bias_scale,
                       .epi = {res, res_ld, act, lo, hi}};
    if (M <= 0 || N <= 0)
        return;
    if (M < cvrt_gemm_min_rows() || M == 1) {
        run_small(rt, &j);
        return;
    }
    cvrt_gemm_run(rt, &j);
}

void cvrt_sgemm_pb(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *a, int64_t ars, int64_t acs,
                   const float *b, int64_t brs, int64_t bcs,
                   float *c, int64_t ldc, int64_t accumulate,
                   const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                   const float *res, int64_t res_ld, int64_t act, float lo, float hi)
{
    (void)brs;
    (void)bcs;
    cvrt_gemm_job j = {.M = M, .N = N, .K = K, .alpha = alpha, .a = a, .ars = ars, .acs = acs,
                       .bkind = CVRT_B_STRIDED, .bpk = b, .c = c, .ldc = ldc,
                       .accumulate = accumulate, .bias = bias, .bias_rs = bias_rs,
                       .bias_cs = bias_cs, .bias_scale = bias_scale,
                       .epi = {res, res_ld, act, lo, hi}};
    if (M > 0 && N > 0)
        cvrt_gemm_run(rt, &j);
}

void cvrt_sgemm_h(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *a, int64_t ars, int64_t acs,
                  const uint16_t *b, int64_t bkind, int64_t bcs,
                  float *c, int64_t ldc, int64_t accumulate,
                  const float *bias, int64_t bias_rs, int64_t bias_cs, float bias_scale,
                  const float *res, int64_t res_ld, int64_t act, float lo, float hi)
{
    cvrt_gemm_job j = {.M = M, .N = N, .K = K, .alpha = alpha, .a = a, .ars = ars, .acs = acs,
                       .bkind = CVRT_B_STRIDED, .bh = b, .bhk = bkind, .brs = 1, .bcs = bcs,
                       .c = c, .ldc = ldc, .accumulate = accumulate, .bias = bias,
                       .bias_rs = bias_rs, .bias_cs = bias_cs, .bias_scale = bias_scale,
                       .epi = {res, res_ld, act, lo, hi}};
    if (M > 0 && N > 0)
        run_small(rt, &j);
}
