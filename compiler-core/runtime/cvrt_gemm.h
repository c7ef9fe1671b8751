/* Internal to the runtime: the one GEMM engine behind cvrt_sgemm and the
 * convolutions.  A job describes C = alpha * A B (+ bias, + C) followed by
 * the epilogue, with A read strided or from its packed form (cvrt.h's P8
 * layout), B read strided, as an im2col view of an image (implicit GEMM),
 * or as "grid rows" B[k][n] = b[rowoff(k) + n], and C written densely or
 * through the grid's column map (see below). */
#ifndef CVRT_GEMM_H
#define CVRT_GEMM_H

#include "compiler-core/runtime/cvrt_vec.h"

/* A convolution over one image and one group (pads: top, left). */
typedef struct cvrt_conv_geom {
    int64_t C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
} cvrt_conv_geom;

typedef enum cvrt_bkind {
    CVRT_B_STRIDED,     /* B[k][n] = b[k*brs + n*bcs] */
    CVRT_B_IM2COL,      /* B[k][n] = x[c, oh*sh-pt+kh*dh, ow*sw-pl+kw*dw] (0 outside),
                           k = (c*KH+kh)*KW+kw, n = oh*OW+ow */
    CVRT_B_GRID,        /* b split by stride phase with no padding left to do (see
                           cvrt_grid_row): B[k][n] = row(k)[n], n = oh*wg + ow (columns with
                           ow >= OW are dropped) */
} cvrt_bkind;

typedef struct cvrt_gemm_job {
    int64_t M, N, K;
    float alpha;
    const float *ap;            /* A packed P8 over all of K, or NULL: */
    const uint16_t *aph;        /* or A packed P8 in a 16-bit type (ahk: CVRT_W_F16 or
                                   CVRT_W_BF16), widened one K block at a time, or NULL: */
    int64_t ahk;
    const float *a;             /* A[i][k] = a[i*ars + k*acs] */
    int64_t ars, acs;
    cvrt_bkind bkind;
    const float *b;
    int64_t brs, bcs;           /* STRIDED */
    const uint16_t *bh;         /* or STRIDED with brs 1 (cvrt_sgemm_h, the small-M path
                                   only): B in a 16-bit type (bhk: CVRT_W_*) */
    const float *bpk;           /* or STRIDED (brs, bcs unused) from B's PB form made at
                                   compile time (cvrt.h, cvrt_sgemm_pb): no packing at run
                                   time when NR is CVRT_PB */
    int64_t bhk;
    const uint32_t *bpb;        /* or STRIDED from B's bf16 pair form (cvrt.h,
                                   cvrt_sgemm_bf16), computed as bfpath says */
    int64_t bfpath;             /* CVRT_BF_WIDEN, _DOT or _AMX (cvrt_gemm_bf16.c) */
    const cvrt_conv_geom *g;    /* IM2COL, GRID */
    int64_t plane, wg;          /* GRID: a channel plane of one phase, its row width */
    float *c;
    int64_t ldc, accumulate;
    const float *bias;          /* bias[i*bias_rs + n*bias_cs], n the output column */
    int64_t bias_rs, bias_cs;
    float bias_scale;
    cvrt_epilogue epi;          /* res[i*res_ld + n], n the output column */
} cvrt_gemm_job;

/* Floats in each thread's B packing buffer (rt->pack_b[tid]), which other
 * routines may use as scratch between GEMMs. */
int64_t cvrt_scratch_floats(void);

/* GRID: where row k = (c*KH+kh)*KW+kw of B starts.  b holds sh*sw phase
 * images, phase (ph, pw) = rows ph, ph+sh, ... and columns pw, pw+sw, ...
 * of the padded image (each C planes of `plane` floats, rows wg wide), so
 * that a tap reads one phase at a fixed offset from the output position. */
static inline const float *cvrt_grid_row(const cvrt_gemm_job *j, int64_t c, int64_t kh,
                                         int64_t kw)
{
    const cvrt_conv_geom *g = j->g;
    int64_t rh = kh * g->dh, rw = kw * g->dw;
    int64_t phase = (rh % g->sh) * g->sw + rw % g->sw;
    return j->b + (phase * g->C + c) * j->plane + (rh / g->sh) * j->wg + rw / g->sw;
}

/* The micro-kernel's tile: MR rows x NV vectors (per target variant). */
#if defined(CVRT_AVX512)
enum { CVRT_GEMM_NV = 2, CVRT_GEMM_MR = 8 };
#elif defined(CVRT_AVX2)
enum { CVRT_GEMM_NV = 3, CVRT_GEMM_MR = 4 };
#elif defined(__aarch64__)
enum { CVRT_GEMM_NV = 3, CVRT_GEMM_MR = 8 };
#else
enum { CVRT_GEMM_NV = 3, CVRT_GEMM_MR = 4 };
#endif

/* How a job over B's bf16 pair form computes: B widened to f32 one K block
 * at a time into the f32 micro-kernel, AVX512_BF16 vdpbf16ps with A rounded
 * to bf16, or AMX tdpbf16ps tiles. */
enum { CVRT_BF_WIDEN = 0, CVRT_BF_DOT = 1, CVRT_BF_AMX = 2 };

/* The C update of the tile at rows i0.., output columns j0.. (nr of them)
 * from its sums acc, as the f32 micro-kernel stores its own (bias,
 * accumulation, residual, activation; rows past M dropped). */
void cvrt_gemm_store_tile(const cvrt_gemm_job *j, cvrt_vf acc[CVRT_GEMM_MR][CVRT_GEMM_NV],
                          int64_t i0, int64_t j0, int64_t nr, int first, int last);
/* cvrt_gemm_bf16.c: panels [p0, p1) of the K block [pc, pc+kc) (pc even)
 * of B's pair form widened into the micro-kernel's NR-wide f32 panels. */
void cvrt_gemm_bf16_widen_b(const cvrt_gemm_job *j, int64_t pc, int64_t kc, int64_t p0,
                            int64_t p1, int64_t nr_panel, float *out);
/* cvrt_gemm_bf16.c: rows [m0, m0+mc) x panels [p0, p1) over all of K with
 * bf16 products (bfpath _DOT or _AMX); abuf is the thread's A buffer. */
void cvrt_gemm_bf16_task(const cvrt_gemm_job *j, float *abuf, int64_t m0, int64_t mc,
                         int64_t p0, int64_t p1, int64_t n_cols);
/* cvrt_gemm_bf16.c: K2p of the pair form (cvrt.h); the path a product
 * of depth K takes (want: -1 the best the CPU offers, else that path if
 * the CPU has it, else CVRT_BF_WIDEN); the job run (few rows or the
 * engine), its bfpath as picked. */
int64_t cvrt_bf16_k2p(int64_t K);
int64_t cvrt_gemm_bf16_pick(int64_t K, int64_t want);
void cvrt_gemm_bf16_run(cvrt_ctx *rt, const cvrt_gemm_job *j);
/* Floats in each thread's A buffer. */
int64_t cvrt_gemm_abuf_floats(void);

/* Runs the job across the pool (returns when C is complete). */
void cvrt_gemm_run(cvrt_ctx *rt, const cvrt_gemm_job *job);
/* Rows below which cvrt_sgemm takes the few-rows path (cvrt_sgemm.c): half
 * the micro-kernel's tile, which depends on the target variant. */
int64_t cvrt_gemm_min_rows(void);
/* dst[i] = src[i] widened from the 16-bit type kind (CVRT_W_F16 or CVRT_W_BF16). */
void cvrt_gemm_widen(float *restrict dst, const uint16_t *restrict src, int64_t n, int64_t kind);

#endif
