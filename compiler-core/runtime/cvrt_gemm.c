/* The GEMM engine: packed, register-tiled single precision (the classic
 * blocked structure).  The work is cut into tasks of (row range, column
 * panel range), as many as keep every thread busy, split along whichever
 * of A and B is larger.  K runs in blocks of at most KC.  A task reads A
 * from its packed form (P8, made at compile time for weights -- in f32, or
 * in a 16-bit type that each task widens one K block at a time -- or packed
 * by the task), reads B in place when its rows are contiguous runs (a plain
 * matrix, a convolution's grid) or packs it into NR-wide panels in its
 * thread's buffer (the im2col view), and an MR x NR micro-kernel keeps the
 * whole C tile in vector registers, one fused multiply-add per element of
 * B and row of A.  The C update (bias, accumulation across K blocks,
 * residual, activation) is applied to the registers as they are stored.
 *
 * The tile shape is chosen per target variant (the bitcode is built once per
 * variant; see build.mk).  MR divides P (8), so a tile's rows always lie in
 * one packed panel. */
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_act.h"

enum { NV = CVRT_GEMM_NV, MR = CVRT_GEMM_MR };
enum { VL = CVRT_VL };
enum {
    NR = VL * NV,
    P = CVRT_P8,
    KC = 320,           /* a B panel (KC x NR) stays in a 48 KB L1 with room for A */
    PANELS_PER_TASK = (512 + NR - 1) / NR,  /* a task's B block: at most KC x 512 floats */
    MC_PACKED = 128,                        /* rows per task when A is packed at run time */
    /* A stored in 16 bits: at most HROWS rows per task, widened one K block
     * at a time behind the row pointers (2 floats each) in the A buffer. */
    HROWS = 512,
    ROWPTR_FLOATS = 2 * KC,
    ABUF_FLOATS = ROWPTR_FLOATS + HROWS * KC,
};

typedef cvrt_vf vf;
typedef cvrt_vfu vfu;

#if defined(__clang__)
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL
#endif

int cvrt_gemm_init(cvrt_ctx *rt)
{
    rt->pack_a = calloc((size_t)rt->nthreads, sizeof *rt->pack_a);
    rt->pack_b = calloc((size_t)rt->nthreads, sizeof *rt->pack_b);
    if (!rt->pack_a || !rt->pack_b)
        return -1;
    for (int t = 0; t < rt->nthreads; t++) {
        void *p = 0, *q = 0;
        if (posix_memalign(&p, 128, sizeof(float) * ABUF_FLOATS) ||
            posix_memalign(&q, 128, sizeof(float) * KC * NR * PANELS_PER_TASK)) {
            free(p);
            return -1;
        }
        rt->pack_a[t] = p;
        rt->pack_b[t] = q;
    }
    return 0;
}

void cvrt_gemm_fini(cvrt_ctx *rt)
{
    for (int t = 0; t < rt->nthreads; t++) {
        if (rt->pack_a)
            free(rt->pack_a[t]);
        if (rt->pack_b)
            free(rt->pack_b[t]);
    }
    free(rt->pack_a);
    free(rt->pack_b);
    rt->pack_a = 0;
    rt->pack_b = 0;
}

int64_t cvrt_gemm_abuf_floats(void)
{
    return ABUF_FLOATS;
}

int64_t cvrt_scratch_floats(void)
{
    return (int64_t)KC * NR * PANELS_PER_TASK;
}

/* ---- the schedule ------------------------------------------------------- */

typedef struct sched {
    const cvrt_gemm_job *j;
    cvrt_ctx *rt;
    int64_t n_panels, n_cols;   /* columns (B's n range, grid columns included) */
    int64_t m_chunk, m_tasks;   /* rows per task (a multiple of P), count */
    int64_t p_chunk, p_tasks;   /* panels per task, count */
} sched;

/* ---- packing B ------------------------------------------------------------ */

/* Row k of the B block from a contiguous source row: one NR slice into
 * each of panels [p0, p1) (zeros past the last column).  Rows go one after
 * another along memory, which the hardware prefetcher follows. */
static void pack_row(const sched *s, const float *restrict row, int64_t k, int64_t kc, int64_t p0,
                     int64_t p1, float *restrict out)
{
    for (int64_t pnl = p0; pnl < p1; pnl++) {
        int64_t j0 = pnl * NR, nr = cvrt_min(NR, s->n_cols - j0);
        float *restrict dst = out + (pnl - p0) * kc * NR + k * NR;
        if (nr == NR) {
            for (int jj = 0; jj < NR; jj++)
                dst[jj] = row[j0 + jj];
        } else {
            for (int64_t jj = 0; jj < NR; jj++)
                dst[jj] = jj < nr ? row[j0 + jj] : 0.0f;
        }
    }
}

/* A strided B whose columns are not contiguous, panel by panel. */
static void pack_b_strided(const cvrt_gemm_job *j, int64_t pc, int64_t kc, int64_t j0, int64_t nr,
                           float *restrict out)
{
    for (int64_t k = 0; k < kc; k++) {
        const float *src = j->b + (pc + k) * j->brs + j0 * j->bcs;
        float *dst = out + k * NR;
        for (int64_t jj = 0; jj < NR; jj++)
            dst[jj] = jj < nr ? src[jj * j->bcs] : 0.0f;
    }
}

/* Row k of the grid is a run of the image: no bounds to check. */
static void pack_b_grid(const sched *s, int64_t pc, int64_t kc, int64_t p0, int64_t p1,
                        float *out)
{
    const cvrt_gemm_job *j = s->j;
    const cvrt_conv_geom *g = j->g;
    int64_t khw = g->KH * g->KW, c = pc / khw, r = pc % khw, kh = r / g->KW, kw = r % g->KW;
    for (int64_t k = 0; k < kc; k++) {
        pack_row(s, cvrt_grid_row(j, c, kh, kw), k, kc, p0, p1, out);
        if (++kw == g->KW) {
            kw = 0;
            if (++kh == g->KH) {
                kh = 0;
                c++;
            }
        }
    }
}

/* One output row's run of n positions: the taps of input row src (NULL
 * when outside the image) at columns iw0 + t*sw, zero outside. */
static void pack_run(const cvrt_conv_geom *g, const float *restrict src, int64_t iw0, int64_t n,
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
static void pack_b_im2col(const cvrt_gemm_job *j, int64_t pc, int64_t kc, int64_t j0, int64_t nr,
                          float *restrict out)
{
    const cvrt_conv_geom *g = j->g;
    int64_t khw = g->KH * g->KW, c = pc / khw, r = pc % khw;
    int64_t kh = r / g->KW, kw = r % g->KW, oh0 = j0 / g->OW, ow0 = j0 % g->OW;
    for (int64_t k = 0; k < kc; k++) {
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

/* Panels [p0, p1) from B's PB form, for a micro-kernel whose NR is not
 * CVRT_PB (the form is the same on every target). */
static void pack_b_pb(const sched *s, int64_t pc, int64_t kc, int64_t p0, int64_t p1, float *out)
{
    const cvrt_gemm_job *j = s->j;
    for (int64_t pnl = p0; pnl < p1; pnl++)
        for (int64_t k = 0; k < kc; k++)
            for (int64_t jj = 0; jj < NR; jj++) {
                int64_t n = pnl * NR + jj;
                out[((pnl - p0) * kc + k) * NR + jj] =
                    n < j->N ? j->bpk[((n / CVRT_PB) * j->K + pc + k) * CVRT_PB + n % CVRT_PB] : 0.0f;
            }
}

static void pack_b(const sched *s, int64_t pc, int64_t kc, int64_t p0, int64_t p1, float *out)
{
    const cvrt_gemm_job *j = s->j;
    if (j->bpk) {
        pack_b_pb(s, pc, kc, p0, p1, out);
        return;
    }
    if (j->bpb) {
        cvrt_gemm_bf16_widen_b(j, pc, kc, p0, p1, NR, out);
        return;
    }
    if (j->bkind == CVRT_B_GRID) {
        pack_b_grid(s, pc, kc, p0, p1, out);
        return;
    }
    if (j->bkind == CVRT_B_STRIDED && j->bcs == 1) {
        for (int64_t k = 0; k < kc; k++)
            pack_row(s, j->b + (pc + k) * j->brs, k, kc, p0, p1, out);
        return;
    }
    for (int64_t pnl = p0; pnl < p1; pnl++) {
        int64_t j0 = pnl * NR, nr = cvrt_min(NR, s->n_cols - j0);
        float *o = out + (pnl - p0) * kc * NR;
        if (j->bkind == CVRT_B_IM2COL)
            pack_b_im2col(j, pc, kc, j0, nr, o);
        else
            pack_b_strided(j, pc, kc, j0, nr, o);
    }
}

/* Rows [m0, m0+mc) of A, columns [pc, pc+kc), into P8 panels. */
static void pack_a(const cvrt_gemm_job *j, int64_t m0, int64_t mc, int64_t pc, int64_t kc,
                   float *restrict out)
{
    for (int64_t i0 = 0; i0 < mc; i0 += P) {
        float *panel = out + i0 * kc;
        if (P == 8 && j->acs == 1 && i0 + P <= mc) {
            cvrt_transpose8(j->a + (m0 + i0) * j->ars + pc, j->ars, kc, panel, 8);
            continue;
        }
        for (int64_t ii = 0; ii < P; ii++) {
            if (i0 + ii >= mc) {
                for (int64_t k = 0; k < kc; k++)
                    panel[k * P + ii] = 0.0f;
                continue;
            }
            const float *src = j->a + (m0 + i0 + ii) * j->ars + pc * j->acs;
            if (j->acs == 1) {
                for (int64_t k = 0; k < kc; k++)
                    panel[k * P + ii] = src[k];
            } else {
                for (int64_t k = 0; k < kc; k++)
                    panel[k * P + ii] = src[k * j->acs];
            }
        }
    }
}

/* n values of the 16-bit type kind into f32.  bf16 is the high half of an
 * f32; f16 uses the F16C conversion where the target has it. */
void cvrt_gemm_widen(float *restrict dst, const uint16_t *restrict src, int64_t n, int64_t kind)
{
    if (kind == CVRT_W_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)src[i] << 16;
            __builtin_memcpy(dst + i, &u, 4);
        }
        return;
    }
    int64_t i = 0;
#if defined(__F16C__)
    typedef _Float16 h8 __attribute__((vector_size(16)));
    typedef float f8 __attribute__((vector_size(32)));
    for (; i + 8 <= n; i += 8) {
        h8 h;
        __builtin_memcpy(&h, src + i, sizeof h);
        f8 f = __builtin_convertvector(h, f8);
        __builtin_memcpy(dst + i, &f, sizeof f);
    }
#endif
    for (; i < n; i++)
        dst[i] = cvrt_f16_to_f32(src[i]);
}

/* Rows [m0, m0+mc) (m0 a multiple of P) of the 16-bit packed A, columns
 * [pc, pc+kc), into f32 P8 panels of kc columns. */
static void widen_a(const cvrt_gemm_job *j, int64_t m0, int64_t mc, int64_t pc, int64_t kc,
                    float *restrict out)
{
    for (int64_t q = 0; q < cvrt_cdiv(mc, P); q++)
        cvrt_gemm_widen(out + q * kc * P, j->aph + ((m0 / P + q) * j->K + pc) * P, kc * P, j->ahk);
}

/* ---- the micro-kernel and the C update ---------------------------------- */

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* acc = the MR x NR product of an A panel (stride P) and a B panel: packed
 * (bp, NR floats per k) or read in place (rows[k] + col, see b_rows). */
static ALWAYS_INLINE void ukernel_step(int64_t k, const float *restrict ap,
                                       const float *restrict bp, const float *const *rows,
                                       int64_t col, vf acc[MR][NV])
{
    vf b[NV];
    UNROLL_FULL
    for (int v = 0; v < NV; v++)
        b[v] = rows ? *(const vfu *)(rows[k] + col + v * VL) : *(const vf *)(bp + k * NR + v * VL);
    const float *a = ap + k * P;
    UNROLL_FULL
    for (int i = 0; i < MR; i++)
        UNROLL_FULL
        for (int v = 0; v < NV; v++)
            acc[i][v] += a[i] * b[v];
}

/* The same, touching pf[16 * k] (a line of B's next panel, see block) for
 * the first npf steps: a panel read straight from the weights is a stream
 * from memory, and its first tile would wait for every line of it. */
static ALWAYS_INLINE void ukernel_acc_pf(int64_t kc, const float *restrict ap,
                                         const float *restrict bp, const float *pf, int64_t npf,
                                         vf acc[MR][NV])
{
    UNROLL_FULL
    for (int i = 0; i < MR; i++)
        UNROLL_FULL
        for (int v = 0; v < NV; v++)
            acc[i][v] = (vf){0};
    int64_t k = 0;
    for (; k < npf; k++) {
        __builtin_prefetch(pf + 16 * k);
        ukernel_step(k, ap, bp, 0, 0, acc);
    }
    for (; k < kc; k++)
        ukernel_step(k, ap, bp, 0, 0, acc);
}

static ALWAYS_INLINE void ukernel_acc(int64_t kc, const float *restrict ap,
                                      const float *restrict bp, const float *const *rows,
                                      int64_t col, vf acc[MR][NV])
{
    UNROLL_FULL
    for (int i = 0; i < MR; i++)
        UNROLL_FULL
        for (int v = 0; v < NV; v++)
            acc[i][v] = (vf){0};
    for (int64_t k = 0; k < kc; k++) {
        vf b[NV];
        UNROLL_FULL
        for (int v = 0; v < NV; v++)
            b[v] = rows ? *(const vfu *)(rows[k] + col + v * VL) : *(const vf *)(bp + k * NR + v * VL);
        const float *a = ap + k * P;
        UNROLL_FULL
        for (int i = 0; i < MR; i++)
            UNROLL_FULL
            for (int v = 0; v < NV; v++)
                acc[i][v] += a[i] * b[v];
    }
}

/* The C update of lanes [a, b) of x (a row's columns v*VL.. of the tile):
 * the first K block writes C (plus bias, or onto C when accumulating),
 * later blocks add; the last applies the epilogue.  p, rp and bp point
 * where lane 0 would go in C, res and bias. */
static ALWAYS_INLINE vf update(const cvrt_gemm_job *j, vf x, const float *p, const float *rp,
                               const float *bp, int64_t a, int64_t b, int first, int last)
{
    const cvrt_epilogue *e = &j->epi;
    x = cvrt_splat(j->alpha) * x;
    if (first && j->bias) {
        if (j->bias_cs == 0) {
            x += cvrt_splat(j->bias_scale * bp[0]);
        } else if (j->bias_cs == 1) {     /* a projection's bias: one per column */
            x += cvrt_splat(j->bias_scale) * cvrt_load_mask(bp, a, b);
        } else {
            vf bv = {0};
            for (int64_t l = a; l < b; l++)
                bv[l] = bp[l * j->bias_cs];
            x += cvrt_splat(j->bias_scale) * bv;
        }
    }
    if (!first || j->accumulate)
        x += cvrt_load_mask(p, a, b);
    if (last && e->res)
        x += cvrt_load_mask(rp, a, b);
    if (last)
        x = cvrt_act_vec(x, e->act, e->lo, e->hi);
    return x;
}

/* The common tile: all MR rows, NR consecutive output columns from dst,
 * straight from the registers. */
static ALWAYS_INLINE void store_whole(const cvrt_gemm_job *j, vf acc[MR][NV], int64_t i0,
                                      int64_t dst, int first, int last)
{
    UNROLL_FULL
    for (int i = 0; i < MR; i++) {
        float *crow = j->c + (i0 + i) * j->ldc + dst;
        const float *rrow = j->epi.res ? j->epi.res + (i0 + i) * j->epi.res_ld + dst : 0;
        const float *brow = j->bias ? j->bias + (i0 + i) * j->bias_rs : 0;
        UNROLL_FULL
        for (int v = 0; v < NV; v++)
            *(vfu *)(crow + v * VL) = update(j, acc[i][v], crow + v * VL,
                                             rrow ? rrow + v * VL : 0,
                                             brow && j->bias_cs ? brow + dst + v * VL : brow, 0,
                                             VL, first, last);
    }
}

/* Where the lanes of one tile vector go: pieces of lanes [a, b) stored at
 * output column shift + lane (a grid row may end inside the vector). */
enum { MAX_PIECES = 4 };
typedef struct pieces {
    int n;
    int64_t shift[MAX_PIECES], a[MAX_PIECES], b[MAX_PIECES];
} pieces;

/* Adds tile columns [t, t+cnt), stored from output column shift + t on. */
static int add_run(pieces *pv, int64_t t, int64_t cnt, int64_t shift)
{
    for (int v = 0; v < NV; v++) {
        int64_t a = cvrt_max(t - v * VL, 0), b = cvrt_min(t + cnt - v * VL, VL);
        if (a >= b)
            continue;
        if (pv[v].n == MAX_PIECES)
            return 0;
        pv[v].shift[pv[v].n] = shift + v * VL;
        pv[v].a[pv[v].n] = a;
        pv[v].b[pv[v].n++] = b;
    }
    return 1;
}

/* The pieces of every vector of the tile at columns [j0, j0+nr); false
 * when a vector would need more than MAX_PIECES (grid rows narrower than
 * a third of a vector). */
static int find_pieces(const cvrt_gemm_job *j, int64_t j0, int64_t nr, pieces *pv)
{
    for (int v = 0; v < NV; v++)
        pv[v].n = 0;
    if (j->bkind != CVRT_B_GRID || j->wg == j->g->OW)
        return add_run(pv, 0, nr, j0);
    int64_t wg = j->wg, ow = j->g->OW, row = j0 / wg, col = j0 % wg;
    for (int64_t t = 0; t < nr; row++, col = 0) {
        int64_t len = cvrt_min(nr - t, wg - col);
        if (col < ow && !add_run(pv, t, cvrt_min(len, ow - col), row * ow + col - t))
            return 0;
        t += len;
    }
    return 1;
}

/* Lanes of x's pieces from row p (others 0). */
static inline vf gather_pieces(const float *p, const pieces *pc)
{
    vf x = {0};
    for (int k = 0; k < pc->n; k++)
        x += cvrt_load_mask(p + pc->shift[k], pc->a[k], pc->b[k]);
    return x;
}

/* Any other tile, from memory: the update of store_whole, vector by vector
 * through the pieces. */
static void store_pieces(const cvrt_gemm_job *j, const float *tile, int64_t i0, int64_t mr,
                         const pieces *pv, int first, int last)
{
    const cvrt_epilogue *e = &j->epi;
    for (int64_t i = 0; i < mr; i++) {
        float *crow = j->c + (i0 + i) * j->ldc;
        const float *rrow = e->res ? e->res + (i0 + i) * e->res_ld : 0;
        const float *brow = j->bias ? j->bias + (i0 + i) * j->bias_rs : 0;
        for (int v = 0; v < NV; v++) {
            const pieces *pc = &pv[v];
            vf x = cvrt_splat(j->alpha) * *(const vf *)(tile + i * NR + v * VL);
            if (first && brow && j->bias_cs == 0) {
                x += cvrt_splat(j->bias_scale * brow[0]);
            } else if (first && brow) {
                for (int k = 0; k < pc->n; k++)
                    for (int64_t l = pc->a[k]; l < pc->b[k]; l++)
                        x[l] += j->bias_scale * brow[(pc->shift[k] + l) * j->bias_cs];
            }
            if (!first || j->accumulate)
                x += gather_pieces(crow, pc);
            if (last && rrow)
                x += gather_pieces(rrow, pc);
            if (last)
                x = cvrt_act_vec(x, e->act, e->lo, e->hi);
            for (int k = 0; k < pc->n; k++)
                cvrt_store_mask(crow + pc->shift[k], x, pc->a[k], pc->b[k]);
        }
    }
}

/* Tiles whose vectors would need too many pieces: column by column. */
static void store_columns(const cvrt_gemm_job *j, const float *tile, int64_t i0, int64_t mr,
                          int64_t j0, int64_t nr, int first, int last)
{
    const cvrt_epilogue *e = &j->epi;
    for (int64_t t = 0; t < nr; t++) {
        int64_t n = j0 + t, col = n % j->wg;
        if (col >= j->g->OW)
            continue;
        int64_t dst = (n / j->wg) * j->g->OW + col;
        for (int64_t i = 0; i < mr; i++) {
            float *c = j->c + (i0 + i) * j->ldc + dst;
            float x = j->alpha * tile[i * NR + t];
            if (first && j->bias)
                x += j->bias_scale * j->bias[(i0 + i) * j->bias_rs];
            if (!first || j->accumulate)
                x += *c;
            if (last && e->res)
                x += e->res[(i0 + i) * e->res_ld + dst];
            if (last)
                x = cvrt_act_f32(x, e->act, e->lo, e->hi);
            *c = x;
        }
    }
}

/* Whether tile columns [j0, j0+NR) are output columns [dst, dst+NR). */
static int whole_cols(const cvrt_gemm_job *j, int64_t j0, int64_t nr, int64_t *dst)
{
    if (nr != NR || (j->bias && j->bias_cs != 0 && j->bias_cs != 1))
        return 0;
    if (j->bkind != CVRT_B_GRID || j->wg == j->g->OW) {
        *dst = j0;
        return 1;
    }
    int64_t col = j0 % j->wg;
    *dst = (j0 / j->wg) * j->g->OW + col;
    return col + NR <= j->g->OW;
}

/* The C update of a tile from its sums. */
static ALWAYS_INLINE void store_tile(const cvrt_gemm_job *j, vf acc[MR][NV], int64_t i0,
                                     int64_t j0, int64_t nr, int first, int last)
{
    int64_t dst;
    if (i0 + MR <= j->M && whole_cols(j, j0, nr, &dst)) {
        store_whole(j, acc, i0, dst, first, last);
        return;
    }
    _Alignas(64) float buf[MR * NR];
    UNROLL_FULL
    for (int i = 0; i < MR; i++)
        UNROLL_FULL
        for (int v = 0; v < NV; v++)
            *(vf *)(buf + i * NR + v * VL) = acc[i][v];
    pieces pv[NV];
    int64_t mr = cvrt_min(MR, j->M - i0);
    if (find_pieces(j, j0, nr, pv))
        store_pieces(j, buf, i0, mr, pv, first, last);
    else
        store_columns(j, buf, i0, mr, j0, nr, first, last);
}

void cvrt_gemm_store_tile(const cvrt_gemm_job *j, vf acc[MR][NV], int64_t i0, int64_t j0,
                          int64_t nr, int first, int last)
{
    store_tile(j, acc, i0, j0, nr, first, last);
}

/* One tile: the product of its panels, then the C update. */
static ALWAYS_INLINE void tile(const cvrt_gemm_job *j, int64_t kc, const float *restrict ap,
                               const float *restrict bp, const float *const *rows, int64_t i0,
                               int64_t j0, int64_t nr, int first, int last, const float *pf,
                               int64_t npf)
{
    vf acc[MR][NV];
    if (rows)
        ukernel_acc(kc, ap, 0, rows, j0, acc);
    else if (npf)
        ukernel_acc_pf(kc, ap, bp, pf, npf, acc);
    else
        ukernel_acc(kc, ap, bp, 0, 0, acc);
    store_tile(j, acc, i0, j0, nr, first, last);
}

/* Whether full B panels are read in place: B rows contiguous in memory (the
 * grid, a strided B with unit column stride), and the thread's A buffer
 * free to hold the row pointers (A packed already).  Reading in place
 * saves the copy; B panels of a K block are still few enough to stay in
 * cache while the A panels stream past them. */
static int b_in_place(const cvrt_gemm_job *j)
{
    return (j->ap || j->aph) &&
           (j->bkind == CVRT_B_GRID || (j->bkind == CVRT_B_STRIDED && j->bcs == 1));
}

/* rows[k] = where row pc+k of B starts (column n at rows[k][n]). */
static void b_rows(const cvrt_gemm_job *j, int64_t pc, int64_t kc, const float **rows)
{
    if (j->bkind == CVRT_B_STRIDED) {
        for (int64_t k = 0; k < kc; k++)
            rows[k] = j->b + (pc + k) * j->brs;
        return;
    }
    const cvrt_conv_geom *g = j->g;
    int64_t khw = g->KH * g->KW, c = pc / khw, r = pc % khw, kh = r / g->KW, kw = r % g->KW;
    for (int64_t k = 0; k < kc; k++) {
        rows[k] = cvrt_grid_row(j, c, kh, kw);
        if (++kw == g->KW) {
            kw = 0;
            if (++kh == g->KH) {
                kh = 0;
                c++;
            }
        }
    }
}

/* One K block of a task: rows [m0, m0+mc), panels [p0, p1). */
static void block(const sched *s, int tid, int64_t m0, int64_t mc, int64_t p0, int64_t p1,
                  int64_t pc, int64_t kc)
{
    const cvrt_gemm_job *j = s->j;
    float *bbuf = s->rt->pack_b[tid], *abuf = s->rt->pack_a[tid], *hbuf = abuf + ROWPTR_FLOATS;
    const float **rows = b_in_place(j) ? (const float **)(void *)abuf : 0;
    int first = pc == 0, last = pc + kc >= j->K;
    /* B's PB form is already the micro-kernel's panels (full K, NR wide). */
    int prepacked = j->bpk && NR == CVRT_PB;
    if (rows)
        b_rows(j, pc, kc, rows);
    else if (!prepacked)
        pack_b(s, pc, kc, p0, p1, bbuf);
    if (j->aph)
        widen_a(j, m0, mc, pc, kc, hbuf);
    else if (!j->ap)
        pack_a(j, m0, mc, pc, kc, abuf);
    for (int64_t pnl = p0; pnl < p1; pnl++) {
        int64_t j0 = pnl * NR, nr = cvrt_min(NR, s->n_cols - j0);
        const float *bp = prepacked ? j->bpk + (pnl * j->K + pc) * NR : bbuf + (pnl - p0) * kc * NR;
        /* A partial last panel is packed (reading it in place would read
         * past the end of B). */
        int in_place = rows && nr == NR;
        if (rows && !in_place) {
            pack_b(s, pc, kc, pnl, pnl + 1, bbuf);
            bp = bbuf;
        }
        /* The row tiles share the prefetch of the next prepacked panel's
         * kc x NR block, one line per step of the first steps of each. */
        int64_t lines = prepacked && pnl + 1 < p1 ? kc * NR / 16 : 0;
        int64_t per_tile = cvrt_min(kc, cvrt_cdiv(lines, cvrt_cdiv(mc, MR)));
        const float *next = prepacked ? j->bpk + ((pnl + 1) * j->K + pc) * NR : 0;
        for (int64_t i0 = 0; i0 < mc; i0 += MR) {
            int64_t row = m0 + i0;
            const float *ap = j->ap ? j->ap + ((row / P) * j->K + pc) * P + row % P
                              : (j->aph ? hbuf : abuf) + (i0 / P) * kc * P + i0 % P;
            int64_t first_line = (i0 / MR) * per_tile;
            int64_t npf = cvrt_max(0, cvrt_min(per_tile, lines - first_line));
            if (in_place)
                tile(j, kc, ap, 0, rows, row, j0, nr, first, last, 0, 0);
            else
                tile(j, kc, ap, bp, 0, row, j0, nr, first, last,
                     npf ? next + 16 * first_line : 0, npf);
        }
    }
}

static void task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const sched *s = arg;
    const cvrt_gemm_job *j = s->j;
    /* K in equal blocks of at most KC: no short last block. */
    int64_t kb = cvrt_cdiv(cvrt_cdiv(j->K, cvrt_max(cvrt_cdiv(j->K, KC), 1)), 8) * 8;
    for (int64_t t = lo; t < hi; t++) {
        int64_t m0 = (t / s->p_tasks) * s->m_chunk, mc = cvrt_min(s->m_chunk, j->M - m0);
        int64_t p0 = (t % s->p_tasks) * s->p_chunk, p1 = cvrt_min(s->n_panels, p0 + s->p_chunk);
        if (j->bpb && j->bfpath != CVRT_BF_WIDEN) {
            cvrt_gemm_bf16_task(j, s->rt->pack_a[tid], m0, mc, p0 * NR, p1 * NR, s->n_cols);
            continue;
        }
        int64_t pc = 0;
        do {
            int64_t kc = cvrt_min(kb, j->K - pc);
            block(s, tid, m0, mc, p0, p1, pc, kc);
            pc += kc;
        } while (pc < j->K);
    }
}

/* Bytes of B that every task reading a range of columns touches: the
 * image of a convolution, the matrix otherwise. */
static int64_t b_bytes(const cvrt_gemm_job *j)
{
    const cvrt_conv_geom *g = j->g;
    if (j->bkind == CVRT_B_GRID)
        return g->sh * g->sw * g->C * j->plane * 4;
    if (j->bkind == CVRT_B_IM2COL)
        return g->C * g->H * g->W * 4;
    return j->K * j->N * 4;
}

/* At least two tasks per thread and a multiple of the thread count, so
 * that the threads finish together.  A task splitting the columns reads
 * all of its rows of A, one splitting the rows all of B: the larger of the
 * two is split first, so that each thread streams its own share of it. */
static void spread(const cvrt_gemm_job *j, int64_t T, int64_t max_m, int64_t max_p,
                   int64_t *m_tasks, int64_t *p_tasks)
{
    int rows_first = (j->ap || j->aph) && j->M * j->K * 4 > b_bytes(j);
    int64_t *first = rows_first ? m_tasks : p_tasks, *second = rows_first ? p_tasks : m_tasks;
    int64_t first_max = rows_first ? max_m : max_p, second_max = rows_first ? max_p : max_m;
    if (*m_tasks * *p_tasks < 4 * T)
        *first = cvrt_min(first_max, cvrt_cdiv(4 * T, *second));
    if (*m_tasks * *p_tasks < 4 * T)
        *second = cvrt_min(second_max, cvrt_cdiv(4 * T, *first));
    while ((*m_tasks * *p_tasks) % T && *first < first_max)
        (*first)++;
}

void cvrt_gemm_run(cvrt_ctx *rt, const cvrt_gemm_job *j)
{
    if (j->M <= 0 || j->N <= 0)
        return;
    sched s = {.j = j, .rt = rt, .n_cols = j->N};
    if (j->bkind == CVRT_B_GRID)
        s.n_cols = (j->g->OH - 1) * j->wg + j->g->OW;
    s.n_panels = cvrt_cdiv(s.n_cols, NR);
    /* Rows: all of them when A is packed already (B is then packed once);
     * chunks that fit the thread's buffer otherwise. */
    int64_t m_round = cvrt_cdiv(j->M, P) * P, T = rt->nthreads;
    int64_t m_tasks = cvrt_cdiv(m_round, j->ap    ? m_round
                                         : j->aph ? cvrt_min(m_round, HROWS)
                                                  : MC_PACKED);
    int64_t p_tasks = cvrt_cdiv(s.n_panels, PANELS_PER_TASK);
    if (T > 1 && j->M * j->N * cvrt_max(j->K, 1) >= 65536)
        spread(j, T, m_round / P, s.n_panels, &m_tasks, &p_tasks);
    s.p_chunk = cvrt_cdiv(s.n_panels, p_tasks);
    s.p_tasks = cvrt_cdiv(s.n_panels, s.p_chunk);
    s.m_chunk = cvrt_cdiv(cvrt_cdiv(m_round, m_tasks), P) * P;
    s.m_tasks = cvrt_cdiv(m_round, s.m_chunk);
    cvrt_parallel(rt, s.m_tasks * s.p_tasks, 1, task, &s);
}

int64_t cvrt_gemm_min_rows(void)
{
    return MR / 2;
}
