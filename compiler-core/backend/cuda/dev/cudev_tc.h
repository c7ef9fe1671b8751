/* Internal to the tensor-core convolution kernels (dev/cudev_tc.c: the
 * im2col gathered from NCHW activations; dev/cudev_nhwc.c: channels-last
 * activations copied with cp.async): the output tile's layout in shared
 * memory and its store, the TF32 and 16-bit wmma steps over operands
 * staged column-major in shared memory, and the operand conversions.
 *
 * A block of 8 warps computes a tile of `rows` (64 or 128) x TN outputs;
 * warp w owns rows wm .. wm + 16 * fr (fr = rows / 64, wm = w / 2 * 16 *
 * fr) and columns wn .. wn + 32 (wn = w % 2 * 32): fr x 2 accumulators of
 * 16 x 16 fp32. */
#ifndef CVDEV_TC_H
#define CVDEV_TC_H

#include "compiler-core/backend/cuda/dev/cudev_gemm.h"

#ifdef __NVPTX__

enum {
    TK = 16, HK = 32,   /* K per step: TF32, 16-bit */
    TLD = TM + 8,       /* a 32-byte aligned row, as wmma's loads want */
    LDT = TK + 4,       /* a TF32 B column of one step (16-byte aligned) */
    LDB = HK + 8,       /* a 16-bit B column of one step (16-byte aligned) */
};

typedef unsigned v4u __attribute__((ext_vector_type(4)));

#define SM_C(base) ((SHARED float(*)[TLD])(SHARED void *)(base))

/* wmma fragment loads from shared memory, in the .shared state space: the
 * clang builtins take generic addresses, which ptxas must load element by
 * element through the generic path.  (Volatile, with a memory clobber:
 * ordered with the barriers.)  A and B column-major, ld elements apart. */
#define SADDR(p) ((unsigned long long)(uintptr_t)(p))
#define WMMA_LD4(op, f, p, ld)                                                                 \
    __asm__ volatile("wmma.load." op " {%0, %1, %2, %3}, [%4], %5;"                            \
                     : "=r"((f)[0]), "=r"((f)[1]), "=r"((f)[2]), "=r"((f)[3])                   \
                     : "l"(SADDR(p)), "r"(ld)                                                   \
                     : "memory")
#define WMMA_LD8(op, f, p, ld)                                                                 \
    __asm__ volatile("wmma.load." op " {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"            \
                     : "=r"((f)[0]), "=r"((f)[1]), "=r"((f)[2]), "=r"((f)[3]), "=r"((f)[4]),    \
                       "=r"((f)[5]), "=r"((f)[6]), "=r"((f)[7])                                 \
                     : "l"(SADDR(p)), "r"(ld)                                                   \
                     : "memory")
#define LD_A_TF32(f, p, ld) WMMA_LD4("a.sync.aligned.col.m16n16k8.shared.tf32", f, p, ld)
#define LD_B_TF32(f, p, ld) WMMA_LD4("b.sync.aligned.col.m16n16k8.shared.tf32", f, p, ld)
#define LD_A_BF16(f, p, ld) WMMA_LD4("a.sync.aligned.col.m16n16k16.shared.bf16", f, p, ld)
#define LD_B_BF16(f, p, ld) WMMA_LD4("b.sync.aligned.col.m16n16k16.shared.bf16", f, p, ld)
#define LD_A_F16(f, p, ld) WMMA_LD8("a.sync.aligned.col.m16n16k16.shared.f16", f, p, ld)
#define LD_B_F16(f, p, ld) WMMA_LD8("b.sync.aligned.col.m16n16k16.shared.f16", f, p, ld)

/* Row i (within the tile) of its P8 panel, as this thread's vector load. */
static ALWAYS_INLINE v4u load_p8_vec(const void *base, int64_t panel, int64_t panels, int64_t K,
                                     int64_t k, int64_t kend, int64_t words_per_k, int part)
{
    v4u z = {0, 0, 0, 0};
    if (panel >= panels || k >= kend)
        return z;
    const v4u *p = (const v4u *)base;
    return p[(panel * K + k) * words_per_k + part];
}

/* The 64-row tile's output from shared memory through put(). */
static ALWAYS_INLINE void tile_out(const gsrc *s, const gout *o, const gtile *w, int tid,
                                   SHARED float (*ct)[TLD])
{
    int tx = tid % TT, ty = tid / TT;
    float v[4][4];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < 4; q++)
            v[r][q] = ct[ty + TT * r][tx + TT * q];
    put_tile(s, o, w, tx, ty, v);
}

/* v as TF32 high parts and (passes > 1) remainders, 4 at a time. */
static ALWAYS_INLINE void tf_split(const float v[4], int passes, v4u *hi, v4u *lo)
{
#pragma unroll
    for (int l = 0; l < 4; l++) {
        unsigned h = __nvvm_f2tf32_rna(v[l]);
        (*hi)[l] = h;
        (*lo)[l] = passes > 1 ? __nvvm_f2tf32_rna(v[l] - __builtin_bit_cast(float, h)) : 0;
    }
}

/* acc[r][f] += A[wm + 16r.., kb..kb+8] x B[kb..kb+8, wn + 16f..] in TF32
 * for r < fr, f < 2; passes 3 adds hi*hi + hi*lo + lo*hi.  A column-major,
 * [k][lda] (high parts at ah, remainders at al), B [j][ldb]. */
static ALWAYS_INLINE void tf_step(float acc[2][2][8], SHARED const int *ah, SHARED const int *al,
                                  int lda, SHARED const int *bh, SHARED const int *bl, int ldb,
                                  int fr, int wm, int wn, int kb, int passes)
{
    int fbh[2][4], fbl[2][4];
#pragma unroll
    for (int f = 0; f < 2; f++) {
        LD_B_TF32(fbh[f], bh + (wn + 16 * f) * ldb + kb, ldb);
        if (passes > 1)
            LD_B_TF32(fbl[f], bl + (wn + 16 * f) * ldb + kb, ldb);
    }
#pragma unroll
    for (int r = 0; r < fr; r++) {
        int fah[4], fal[4];
        LD_A_TF32(fah, ah + kb * lda + wm + 16 * r, lda);
        if (passes > 1)
            LD_A_TF32(fal, al + kb * lda + wm + 16 * r, lda);
#pragma unroll
        for (int f = 0; f < 2; f++) {
            if (passes > 1) {
                __mma_tf32_m16n16k8_mma_f32(acc[r][f], fal, fbh[f], acc[r][f], 3, 0);
                __mma_tf32_m16n16k8_mma_f32(acc[r][f], fah, fbl[f], acc[r][f], 3, 0);
            }
            __mma_tf32_m16n16k8_mma_f32(acc[r][f], fah, fbh[f], acc[r][f], 3, 0);
        }
    }
}

/* One TF32 step of TK: the tensor cores' own fp32 sums truncate, which
 * over a deep K drifts past fp32's tolerance, so each step's sum starts at
 * zero and is added to acc with ordinary (rounded) adds. */
static ALWAYS_INLINE void tf_steps(float acc[2][2][8], SHARED const int *ah, SHARED const int *al,
                                   int lda, SHARED const int *bh, SHARED const int *bl, int ldb,
                                   int fr, int wm, int wn, int passes)
{
    float part[2][2][8] = {{{0}}};
    tf_step(part, ah, al, lda, bh, bl, ldb, fr, wm, wn, 0, passes);
    tf_step(part, ah, al, lda, bh, bl, ldb, fr, wm, wn, 8, passes);
#pragma unroll
    for (int r = 0; r < fr; r++)
#pragma unroll
        for (int f = 0; f < 2; f++)
#pragma unroll
            for (int v = 0; v < 8; v++)
                acc[r][f][v] += part[r][f][v];
}

/* Two floats as one word of two 16-bit values (lo at the lower address). */
static ALWAYS_INLINE unsigned h_pack(float lo, float hi, int kind)
{
    unsigned r;
    if (kind == CVD_BF16)
        __asm__("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        __asm__("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* acc[r][f] += A[wm + 16r.., kb..kb+16] x B[kb..kb+16, wn + 16f..] (A
 * column-major [k][lda], B [j][LDB]) in the 16-bit kind, whose fragments
 * are NF words; B's fragments are loaded once for every r. */
#define H_STEP(NF, LD_A, LD_B, MMA)                                                            \
    do {                                                                                       \
        int fa[NF], fb[2][NF];                                                                 \
        _Pragma("unroll") for (int f = 0; f < 2; f++)                                          \
            LD_B(fb[f], b + (wn + 16 * f) * LDB + kb, LDB);                                    \
        _Pragma("unroll") for (int r = 0; r < fr; r++) {                                       \
            LD_A(fa, a + kb * lda + wm + 16 * r, lda);                                         \
            _Pragma("unroll") for (int f = 0; f < 2; f++)                                      \
                MMA(acc[r][f], fa, fb[f], acc[r][f], 3, 0);                                    \
        }                                                                                      \
    } while (0)

static ALWAYS_INLINE void h_step(float acc[2][2][8], SHARED uint16_t *a, SHARED uint16_t *b,
                                 int lda, int fr, int wm, int wn, int kb, int kind)
{
    if (kind == CVD_BF16)
        H_STEP(4, LD_A_BF16, LD_B_BF16, __mma_bf16_m16n16k16_mma_f32);
    else
        H_STEP(8, LD_A_F16, LD_B_F16, __hmma_m16n16k16_mma_f32f32);
}

/* fn(s, o, w, kind, rows, sm) with the 16-bit kind a constant. */
#define BY_KIND(fn, s, o, w, kind, rows, sm)                                                   \
    ((kind) == CVD_BF16 ? fn(s, o, w, CVD_BF16, rows, sm) : fn(s, o, w, CVD_F16, rows, sm))

/* The tile's end: the accumulators through shared memory at sm (free for
 * it: every warp is past its last step) to put(), 64 rows at a time. */
static ALWAYS_INLINE void tc_out(const gsrc *s, const gout *o, const gtile *w, int tid, int fr,
                                 int wm, int wn, int tf32, float acc[2][2][8], SHARED void *sm)
{
    SHARED float (*ct)[TLD] = SM_C(sm);
    __nvvm_bar_sync(0);
#pragma unroll
    for (int r = 0; r < fr; r++)
#pragma unroll
        for (int f = 0; f < 2; f++) {
            if (tf32)
                __mma_m16n16k8_st_c_f32(&ct[wm + 16 * r][wn + 16 * f], acc[r][f], TLD, 0);
            else
                __hmma_m16n16k16_st_c_f32(&ct[wm + 16 * r][wn + 16 * f], acc[r][f], TLD, 0);
        }
    __nvvm_bar_sync(0);
#pragma unroll
    for (int r = 0; r < fr; r++) {
        gtile part = *w;
        part.m0 += 64 * r;
        tile_out(s, o, &part, tid, ct + 64 * r);
    }
    __nvvm_bar_sync(0);
}

#endif
#endif
