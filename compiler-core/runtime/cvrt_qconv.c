/* int8 and bf16 convolution.
 *
 * Both convert an f32 image once into scratch as a padded NHWC copy whose
 * pixels are whole int32 "units": 4 u8 channels (zero-point padded) or 2
 * bf16 channels (zero padded), so that one unit of an im2col column holds
 * 4 or 2 consecutive k (k = (kh*KW + kw)*Cp + c).
 *
 * int8 (the -p int8 path): u8 activations (asymmetric, one scale and zero
 * point per tensor) times s8 weights (symmetric, one scale per output
 * channel), int32 sums.  u8 activations between int8 layers are stored
 * channels last ([H][W][C], cvrt_qepi.h), so a task packs 32 output
 * pixels' im2col rows ([32 px][k unit]: for a 1x1 convolution a copy of
 * each pixel's bytes) and runs them against blocks of 32 output channels
 * whose weights are packed [OC/16][k unit][16] (each int32 four k of one
 * channel): AMX tdpbusd takes the pixels as its u8 A tiles and the
 * weights as its s8 B tiles (2x2 16x16 tiles per block) where the CPU and
 * the kernel allow it (arch_prctl for the tile data); else 8 pixels x 32
 * channels at a time with AVX-512 VNNI's vpdpbusd (a broadcast pixel unit
 * against 16 channels' weight units); else a portable loop.  The sums of a
 * pixel are its output channels side by side, so the epilogue scales,
 * adds the bias, the residual and the activation and requantises 16
 * channels per vector into the channels-last output.  Padding holds the
 * zero point and the weights' row sums remove it: sum (xq - zp) w = sum
 * xq w - zp sum w.
 *
 * bf16 (CVRT_Q_BF16, -p bf16 on a CPU with AVX512_BF16): f32 in and out
 * (NCHW); a task packs 32 output pixels' columns into a panel ([k
 * unit][32 px] int32) and runs them against every block of 32 output
 * channels, whose weights are plain rows of units ([OC][k unit]): AMX
 * tdpbf16ps (weights as A tiles, the panel as B) or vdpbf16ps (8 channels
 * x 32 pixels, broadcast weight units) or a portable loop, f32 sums.
 * Measured here, vdpbf16ps issues about once every 4 cycles against two
 * f32 FMAs a cycle, so it is slower than the f32 GEMM; AMX is the fast
 * path. */
#include "compiler-core/runtime/cvrt_qcpu.h"
#include "compiler-core/runtime/cvrt_qepi.h"

enum { QR = 8, QPX = 32 };    /* rows per VNNI/vdpbf16ps step, pixels per panel */

typedef struct qjob {
    const void *x;              /* f32 NCHW, or u8 NHWC already quantised (CVRT_Q_XU8) */
    const int32_t *wp;          /* int8: [OCp/16][KUp][16] s8 quads; bf16: [OCp][KUp] pairs */
    const int32_t *wsum;        /* [OCp] (int8) */
    const float *scale, *bias;  /* [OCp] (int8), bias may be NULL */
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
    int64_t Cp, Hp, Wp, KU, KUp, P;   /* KUp: KU rounded up to 16 (AMX's tile depth) */
    int64_t U, epu;             /* units per pixel, channels per unit (4 u8 or 2 bf16) */
    float xs;
    int32_t zp;
    int bf16;
    uint32_t *xq;               /* [Hp][Wp][U] */
    int32_t **panels;           /* per thread, KUp * QPX int32 */
    int64_t ocg;                /* int8: output channel blocks per task */
    cvrt_qout out;
} qjob;

typedef unsigned cvrt_vu __attribute__((vector_size(CVRT_VL * 4)));

/* f32 lanes to bf16 bits (round to nearest even, NaN kept quiet: as
 * common/dtype.c's cv_f32_to_bf16). */
static inline cvrt_vi bf16_vec(cvrt_vf v)
{
    cvrt_vu u = (cvrt_vu)v, r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    cvrt_vi nan = (cvrt_vi)((u & 0x7fffffffu) > 0x7f800000u);
    return (cvrt_vi)((nan & (cvrt_vi)((u >> 16) | 0x40u)) | (~nan & (cvrt_vi)r));
}

/* Lanes [0, n) of channel c at element off of the image as the unit's
 * elements in int32: quantised u8 or bf16 bits (the padding value past C
 * or n). */
static inline cvrt_vi unit_lanes(const qjob *j, int64_t c, int64_t off, int64_t n)
{
    if (c >= j->C || n <= 0)
        return (cvrt_vi){0} + (j->bf16 ? 0 : j->zp);
    cvrt_vf v = cvrt_load_mask((const float *)j->x + c * j->H * j->W + off, 0, n);
    return j->bf16 ? bf16_vec(v) : cvrt_quant_vec(v, j->xs, j->zp);
}

/* The units of channels u*epu .. u*epu+epu-1 at element off, n lanes. */
static inline cvrt_vi pack_unit(const qjob *j, int64_t u, int64_t off, int64_t n)
{
    cvrt_vi packed = {0};
    int bits = 32 / (int)j->epu;
    for (int t = 0; t < j->epu; t++)
        packed |= unit_lanes(j, u * j->epu + t, off, n) << (bits * t);
    return packed;
}

/* ---- converting the image ------------------------------------------------ */

/* Padded rows [lo, hi) of xq. */
static void quant_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const qjob *j = arg;
    uint32_t fill = j->bf16 ? 0 : (uint32_t)(uint8_t)j->zp * 0x01010101u;
    int64_t rowlen = j->Wp * j->U;
    for (int64_t r = lo; r < hi; r++) {
        uint32_t *row = j->xq + r * rowlen;
        int64_t ih = r - j->pt;
        for (int64_t q = 0; q < rowlen; q++)
            row[q] = fill;
        if (ih < 0 || ih >= j->H)
            continue;
        for (int64_t u = 0; u < j->U; u++) {
            uint32_t *dst = row + j->pl * j->U + u;
            for (int64_t iw = 0; iw < j->W; iw += CVRT_VL) {
                int64_t n = cvrt_min(CVRT_VL, j->W - iw);
                uint32_t lanes[CVRT_VL] __attribute__((aligned(64)));
                *(cvrt_vi *)lanes = pack_unit(j, u, ih * j->W + iw, n);
                for (int64_t i = 0; i < n; i++)
                    dst[(iw + i) * j->U] = lanes[i];
            }
        }
    }
}

/* ---- bf16: channel-major panels and blocks ------------------------------- */

/* panel[ku*QPX + i] = the unit of pixel p0 + i at k unit ku. */
static void pack_panel(const qjob *j, int64_t p0, int32_t *panel)
{
    int64_t base[QPX];
    for (int i = 0; i < QPX; i++) {
        int64_t p = cvrt_min(p0 + i, j->P - 1), oh = p / j->OW, ow = p % j->OW;
        base[i] = (oh * j->sh * j->Wp + ow * j->sw) * j->U;
    }
    int64_t ku = 0;
    for (int64_t kh = 0; kh < j->KH; kh++)
        for (int64_t kw = 0; kw < j->KW; kw++) {
            const uint32_t *tap = j->xq + (kh * j->dh * j->Wp + kw * j->dw) * j->U;
            for (int64_t u = 0; u < j->U; u++, ku++) {
                int32_t *dst = panel + ku * QPX;
                for (int i = 0; i < QPX; i++)
                    dst[i] = (int32_t)tap[base[i] + u];
            }
        }
    for (; ku < j->KUp; ku++)
        for (int i = 0; i < QPX; i++)
            panel[ku * QPX + i] = 0;
}

/* A 1x1 convolution with stride 1 and no padding reads pixel p of the
 * image for output p: the panel is converted straight from x (each element
 * once), with no padded copy. */
static int direct_1x1(const qjob *j)
{
    return j->KH == 1 && j->KW == 1 && j->sh == 1 && j->sw == 1 && j->pt == 0 && j->pl == 0 &&
           j->OH == j->H && j->OW == j->W;
}

static void pack_panel_direct(const qjob *j, int64_t p0, int32_t *panel)
{
    for (int64_t u = 0; u < j->KUp; u++)
        for (int i = 0; i < QPX; i += CVRT_VL) {
            int64_t n = u < j->U ? cvrt_max(0, cvrt_min(CVRT_VL, j->P - p0 - i)) : 0;
            *(cvrt_vi *)(panel + u * QPX + i) = u < j->U ? pack_unit(j, u, p0 + i, n)
                                                         : (cvrt_vi){0};
        }
}

/* A block's sums: int32 (int8: [QPX px][BR oc]) or f32 (bf16: [BR oc][QPX px]). */
enum { BR = CVRT_Q_OCB };
typedef union qacc {
    int32_t i[BR * QPX];
    float f[BR * QPX];
} qacc;

/* acc (BR x QPX) to y through bias, residual and activation. */
static void store_tile(const qjob *j, int64_t p0, int64_t oc0, const qacc *acc)
{
    int64_t np = cvrt_min(QPX, j->P - p0);
    const cvrt_qout out = j->out;
    for (int r = 0; r < BR && oc0 + r < j->OC; r++) {
        int64_t oc = oc0 + r;
        cvrt_vf b = cvrt_splat(j->bias ? j->bias[oc] : 0.0f);
        for (int64_t i = 0; i < np; i += CVRT_VL)
            cvrt_qstore(out, oc * j->P + p0 + i, *(const cvrt_vf *)(acc->f + r * QPX + i) + b,
                        cvrt_min(CVRT_VL, np - i));
    }
}

static inline float bits_f32(uint32_t u)
{
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

/* vdpbf16ps's sum, in its order: the odd element's product, then the even one's. */
static void dot_bf16_generic(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    for (int q = 0; q < BR * QPX; q++)
        acc->f[q] = 0;
    for (int64_t ku = 0; ku < j->KU; ku++) {
        const uint32_t *xu = (const uint32_t *)(panel + ku * QPX);
        for (int r = 0; r < BR; r++)
            for (int i = 0; i < QPX; i++) {
                const uint32_t *wu = (const uint32_t *)j->wp + (oc0 + r) * j->KUp + ku;
                float *a = &acc->f[r * QPX + i];
                *a += bits_f32(xu[i] & 0xffff0000u) * bits_f32(*wu & 0xffff0000u);
                *a += bits_f32(xu[i] << 16) * bits_f32(*wu << 16);
            }
    }
}

/* ---- int8: pixel-major blocks --------------------------------------------- */

/* A 1x1 convolution with stride 1 and no padding on a u8 (channels-last)
 * image reads pixel p's bytes for output p: no padded copy. */
static int direct_u8(const qjob *j)
{
    return (j->out.flags & CVRT_Q_XU8) && direct_1x1(j);
}

/* dst[0, n) = src[0, n). */
static inline void copy_units(uint32_t *dst, const uint32_t *src, int64_t n)
{
    int64_t q = 0;
#if defined(CVRT_AVX512)
    for (; q + 16 <= n; q += 16)
        _mm512_storeu_si512(dst + q, _mm512_loadu_si512(src + q));
    if (q < n) {
        __mmask16 m = (__mmask16)((1u << (n - q)) - 1);
        _mm512_mask_storeu_epi32(dst + q, m, _mm512_maskz_loadu_epi32(m, src + q));
    }
#else
    for (; q < n; q++)
        dst[q] = src[q];
#endif
}

/* Padded rows [lo, hi) of xq from a u8 channels-last image. */
static void quant_u8_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const qjob *j = arg;
    uint32_t fill = (uint32_t)(uint8_t)j->zp * 0x01010101u;
    int64_t rowlen = j->Wp * j->U;
    for (int64_t r = lo; r < hi; r++) {
        uint32_t *row = j->xq + r * rowlen;
        int64_t ih = r - j->pt;
        for (int64_t q = 0; q < rowlen; q++)
            row[q] = fill;
        if (ih < 0 || ih >= j->H)
            continue;
        const uint8_t *src = (const uint8_t *)j->x + ih * j->W * j->C;
        if (j->C % 4 == 0) {    /* whole units: the row as it is */
            copy_units(row + j->pl * j->U, (const uint32_t *)(const void *)src, j->W * j->U);
            continue;
        }
        for (int64_t iw = 0; iw < j->W; iw++) {
            uint8_t *dst = (uint8_t *)(row + (j->pl + iw) * j->U);
            for (int64_t c = 0; c < j->C; c++)
                dst[c] = src[iw * j->C + c];
        }
    }
}

/* Whether the pixels of the panel at p0 can be read in place: a u8
 * image of whole units read with a row stride of C bytes, every read
 * (KUp units from the panel's last pixel) inside the image; the units past
 * C belong to the next pixels and meet zero weights. */
static int in_place(const qjob *j, int64_t p0)
{
    return direct_u8(j) && j->C % 4 == 0 && (p0 + QPX - 1) * j->C + j->KUp * 4 <= j->P * j->C;
}

/* copy_units for one run of an im2col row: a short one (a stem's few
 * channels) as 8 units where src and dst have them before their ends (the
 * excess in dst is rewritten by the next run or the zero fill). */
static inline void copy_run(uint32_t *dst, const uint32_t *src, int64_t n,
                            const uint32_t *src_end, const uint32_t *dst_end)
{
#if defined(CVRT_AVX512)
    if (n < 8 && src + 8 <= src_end && dst + 8 <= dst_end) {
        _mm256_storeu_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)src));
        return;
    }
#else
    (void)src_end;
    (void)dst_end;
#endif
    copy_units(dst, src, n);
}

/* panel[i*KUp + ku] = unit ku of output pixel p0 + i's im2col row (units
 * past KU zero; pixels past P repeat the last). */
static void pack_rows(const qjob *j, int64_t p0, int32_t *panel)
{
    const int64_t KUp = j->KUp, U = j->U;
    if (direct_u8(j)) {
        for (int i = 0; i < QPX; i++) {
            int64_t p = cvrt_min(p0 + i, j->P - 1);
            uint32_t *dst = (uint32_t *)(panel + i * KUp);
            const uint8_t *src = (const uint8_t *)j->x + p * j->C;
            if (j->C % 4 == 0) {
                copy_units(dst, (const uint32_t *)(const void *)src, U);
            } else {
                uint8_t *d8 = (uint8_t *)dst;
                for (int64_t c = 0; c < U * 4; c++)
                    d8[c] = c < j->C ? src[c] : 0;
            }
            for (int64_t u = U; u < KUp; u++)
                dst[u] = 0;
        }
        return;
    }
    /* A window row's KW taps are consecutive in xq without dilation: one
     * run of KW*U units per (pixel, kh). */
    int64_t run = j->dw == 1 ? j->KW * U : U, runs = j->dw == 1 ? 1 : j->KW, oh = 0, ow = 0;
    const uint32_t *xend = j->xq + j->Hp * j->Wp * U;
    for (int i = 0; i < QPX; i++) {
        int64_t p = cvrt_min(p0 + i, j->P - 1);
        if (i == 0 || p0 + i >= j->P)
            oh = p / j->OW, ow = p % j->OW;
        uint32_t *dst = (uint32_t *)(panel + i * KUp), *end = (uint32_t *)(panel + (i + 1) * KUp);
        const uint32_t *win = j->xq + (oh * j->sh * j->Wp + ow * j->sw) * U;
        for (int64_t kh = 0; kh < j->KH; kh++)
            for (int64_t r = 0; r < runs; r++, dst += run) {
                copy_run(dst, win + (kh * j->dh * j->Wp + r * j->dw) * U, run, xend, end);
            }
        for (; dst < end; dst++)
            *dst = 0;
        if (++ow == j->OW)
            ow = 0, oh++;
    }
}

/* The weight unit of channel oc at k unit ku. */
static inline const int8_t *wunit(const qjob *j, int64_t oc, int64_t ku)
{
    return (const int8_t *)(j->wp + ((oc / 16) * j->KUp + ku) * 16 + oc % 16);
}

/* The pixel operand: row i of a at a + i * lda units. */
static void dot_px_generic(const qjob *j, const int32_t *px, int64_t lda, int64_t oc0,
                           int64_t np, qacc *acc)
{
    for (int64_t i = 0; i < np; i++)
        for (int r = 0; r < BR; r++) {
            int32_t a = 0;
            const uint8_t *xb = (const uint8_t *)(px + i * lda);
            for (int64_t ku = 0; ku < j->KU; ku++) {
                const int8_t *wb = wunit(j, oc0 + r, ku);
                a += xb[4 * ku] * wb[0] + xb[4 * ku + 1] * wb[1] + xb[4 * ku + 2] * wb[2] +
                     xb[4 * ku + 3] * wb[3];
            }
            acc->i[i * BR + r] = a;
        }
}

/* Sums at [QPX px][BR oc] to the output.  A u8 output or a u8 residual
 * (channels last): 16 channels of a pixel per vector, an f32 residual
 * gathered or an f32 output scattered across the NCHW planes; else (f32
 * out, NCHW) the block transposed, the pixels of a channel per vector. */
static void store_px(const qjob *j, int64_t p0, int64_t oc0, int64_t np, const qacc *acc)
{
    enum { NV = BR / CVRT_VL };
    const cvrt_qout out = j->out;
    const int64_t OC = j->OC, P = j->P;
    int rf32 = out.res && !(out.flags & CVRT_Q_RU8), ru8 = out.res && !rf32;
    int yu8 = (out.flags & CVRT_Q_YU8) != 0;
    if (yu8 || ru8) {
        cvrt_vi corr[NV];
        cvrt_vf s[NV], b[NV];
        int64_t n[NV];
        for (int v = 0; v < NV; v++) {
            int64_t oc = oc0 + v * CVRT_VL;
            n[v] = cvrt_max(0, cvrt_min(CVRT_VL, OC - oc));
            __builtin_memcpy(&corr[v], j->wsum + oc, sizeof corr[v]);   /* OCp entries */
            corr[v] *= j->zp;
            s[v] = cvrt_load_mask(j->scale + oc, 0, CVRT_VL);
            b[v] = j->bias ? cvrt_load_mask(j->bias + oc, 0, n[v]) : cvrt_splat(0.0f);
        }
        cvrt_qfast qf;
        if (cvrt_qfast_init(&out, &qf)) {
            uint8_t *y = (uint8_t *)out.y;
            for (int64_t i = 0; i < np; i++)
                for (int v = 0; v < NV && n[v]; v++) {
                    cvrt_vi a = *(const cvrt_vi *)(const void *)(acc->i + i * BR + v * CVRT_VL);
                    cvrt_vf f = __builtin_convertvector(a - corr[v], cvrt_vf) * s[v] + b[v];
                    cvrt_qfast_store(&qf, y, (p0 + i) * OC + oc0 + v * CVRT_VL, f, n[v]);
                }
            return;
        }
        cvrt_qout o = out;      /* an f32 residual is gathered here */
        if (rf32)
            o.res = NULL;
        for (int64_t i = 0; i < np; i++) {
            int64_t p = p0 + i;
            for (int v = 0; v < NV && n[v]; v++) {
                cvrt_vi a = *(const cvrt_vi *)(const void *)(acc->i + i * BR + v * CVRT_VL) -
                            corr[v];
                cvrt_vf f = __builtin_convertvector(a, cvrt_vf) * s[v] + b[v];
                int64_t oc = oc0 + v * CVRT_VL, at = p * OC + oc;
                if (rf32)
                    f += load_strided((const float *)out.res + oc * P + p, P, n[v]);
                if (yu8) {
                    cvrt_qstore(o, at, f, n[v]);
                    continue;
                }
                f = cvrt_qact(&o, cvrt_qres_u8(&o, at, f, n[v]));
                store_strided((float *)out.y + oc * P + p, P, f, n[v]);
            }
        }
        return;
    }
    int32_t at[BR * QPX] __attribute__((aligned(64)));     /* the sums as [oc][px] */
#if defined(CVRT_AVX512)
    for (int q = 0; q < 4; q++) {
        const int32_t *src = acc->i + (q & 1) * 16 * BR + (q >> 1) * 16;
        __m512i r[16];
        for (int k = 0; k < 16; k++)
            r[k] = _mm512_load_si512(src + k * BR);
        transpose16(r);
        for (int k = 0; k < 16; k++)
            _mm512_store_si512(at + ((q >> 1) * 16 + k) * QPX + (q & 1) * 16, r[k]);
    }
#else
    for (int i = 0; i < QPX; i++)
        for (int r = 0; r < BR; r++)
            at[r * QPX + i] = acc->i[i * BR + r];
#endif
    for (int r = 0; r < BR && oc0 + r < OC; r++) {
        int64_t oc = oc0 + r;
        int32_t corr = j->zp * j->wsum[oc];
        cvrt_vf s = cvrt_splat(j->scale[oc]), b = cvrt_splat(j->bias ? j->bias[oc] : 0.0f);
        for (int64_t i = 0; i < np; i += CVRT_VL) {
            int64_t n = cvrt_min(CVRT_VL, np - i);
            cvrt_vi a = *(const cvrt_vi *)(const void *)(at + r * QPX + i);
            cvrt_vf f = __builtin_convertvector(a - corr, cvrt_vf) * s + b;
            cvrt_qstore(out, oc * P + p0 + i, f, n);
        }
    }
}

#ifdef QC_X86
/* Pixels r0 .. r0+7 of the block at oc0. */
__attribute__((target("avx512f,avx512vnni")))
static void dot_vnni_rows(const qjob *j, const int32_t *px, int64_t lda, int64_t oc0, int64_t r0,
                          qacc *acc)
{
    __m512i a[QR][2];
    const int32_t *w0 = j->wp + (oc0 / 16) * j->KUp * 16, *w1 = w0 + j->KUp * 16;
    const int32_t *x = px + r0 * lda;
    for (int r = 0; r < QR; r++)
        a[r][0] = a[r][1] = _mm512_setzero_si512();
    for (int64_t ku = 0; ku < j->KU; ku++) {
        __m512i b0 = _mm512_loadu_si512(w0 + ku * 16), b1 = _mm512_loadu_si512(w1 + ku * 16);
        for (int r = 0; r < QR; r++) {
            __m512i xv = _mm512_set1_epi32(x[r * lda + ku]);
            a[r][0] = _mm512_dpbusd_epi32(a[r][0], xv, b0);
            a[r][1] = _mm512_dpbusd_epi32(a[r][1], xv, b1);
        }
    }
    for (int r = 0; r < QR; r++) {
        _mm512_storeu_si512(acc->i + (r0 + r) * BR, a[r][0]);
        _mm512_storeu_si512(acc->i + (r0 + r) * BR + 16, a[r][1]);
    }
}

static void dot_px_vnni(const qjob *j, const int32_t *px, int64_t lda, int64_t oc0, int64_t np,
                        qacc *acc)
{
    for (int64_t r0 = 0; r0 < np; r0 += QR)
        dot_vnni_rows(j, px, lda, oc0, r0, acc);
}

/* Rows r0 .. r0+7 of the block at oc0. */
__attribute__((target("avx512f,avx512bf16")))
static void dot_bf16_rows(const qjob *j, const int32_t *panel, int64_t oc0, int r0, qacc *acc)
{
    __m512 a[QR][2];
    const int32_t *w = j->wp + (oc0 + r0) * j->KUp;
    for (int r = 0; r < QR; r++)
        a[r][0] = a[r][1] = _mm512_setzero_ps();
    for (int64_t ku = 0; ku < j->KU; ku++) {
        __m512bh x0 = (__m512bh)_mm512_load_si512(panel + ku * QPX);
        __m512bh x1 = (__m512bh)_mm512_load_si512(panel + ku * QPX + 16);
        for (int r = 0; r < QR; r++) {
            __m512bh wv = (__m512bh)_mm512_set1_epi32(w[r * j->KUp + ku]);
            a[r][0] = _mm512_dpbf16_ps(a[r][0], x0, wv);
            a[r][1] = _mm512_dpbf16_ps(a[r][1], x1, wv);
        }
    }
    for (int r = 0; r < QR; r++) {
        _mm512_storeu_ps(acc->f + (r0 + r) * QPX, a[r][0]);
        _mm512_storeu_ps(acc->f + (r0 + r) * QPX + 16, a[r][1]);
    }
}

static void dot_bf16(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    for (int r0 = 0; r0 < BR && oc0 + r0 < j->OC; r0 += QR)
        dot_bf16_rows(j, panel, oc0, r0, acc);
}

/* bf16: the weights of channels oc0.. and oc0+16.. as A (tiles 4, 5), the
 * panel's pixels 0-15 and 16-31 as B (6, 7), f32 sums [oc][px]. */
__attribute__((target("amx-tile,amx-bf16")))
static void dot_amx_bf16(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    const int32_t *w = j->wp + oc0 * j->KUp;
    long ws = (long)j->KUp * 4, ps = QPX * 4;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t kb = 0; kb < j->KUp; kb += 16) {
        _tile_loadd(4, w + kb, ws);
        _tile_loadd(5, w + 16 * j->KUp + kb, ws);
        _tile_loadd(6, panel + kb * QPX, ps);
        _tile_loadd(7, panel + kb * QPX + 16, ps);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, acc->f, ps);
    _tile_stored(1, acc->f + 16, ps);
    _tile_stored(2, acc->f + 16 * QPX, ps);
    _tile_stored(3, acc->f + 16 * QPX + 16, ps);
}

/* int8: the pixels 0-15 and 16-31 as u8 A tiles (4, 5), the weights of
 * channels oc0.. and oc0+16.. as s8 B tiles (6, 7), int32 sums [px][oc]. */
__attribute__((target("amx-tile,amx-int8")))
static void dot_px_amx(const qjob *j, const int32_t *px, int64_t lda, int64_t oc0, int64_t np,
                       qacc *acc)
{
    (void)np;
    const int32_t *w = j->wp + (oc0 / 16) * j->KUp * 16;
    long ps = (long)lda * 4, as = BR * 4;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t kb = 0; kb < j->KUp; kb += 16) {
        _tile_loadd(4, px + kb, ps);
        _tile_loadd(5, px + 16 * lda + kb, ps);
        _tile_loadd(6, w + kb * 16, 64);
        _tile_loadd(7, w + (j->KUp + kb) * 16, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    _tile_stored(0, acc->i, as);
    _tile_stored(1, acc->i + 16, as);
    _tile_stored(2, acc->i + 16 * BR, as);
    _tile_stored(3, acc->i + 16 * BR + 16, as);
}

#endif

typedef void (*dot_fn)(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc);
typedef void (*dot_px_fn)(const qjob *j, const int32_t *px, int64_t lda, int64_t oc0,
                          int64_t np, qacc *acc);

static dot_fn pick_dot_bf16(void)
{
#ifdef QC_X86
    int have = cpu_dots();
    return have & HAVE_AMX_BF16 ? dot_amx_bf16 : have & HAVE_BF16 ? dot_bf16 : dot_bf16_generic;
#else
    return dot_bf16_generic;
#endif
}

static dot_px_fn pick_dot_px(void)
{
#ifdef QC_X86
    int have = cpu_dots();
    if (have & HAVE_AMX_I8)
        return dot_px_amx;
    if (have & HAVE_VNNI)
        return dot_px_vnni;
#endif
    return dot_px_generic;
}

static void bf16_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const qjob *j = arg;
    int32_t *panel = j->panels[tid];
    qacc acc __attribute__((aligned(64)));
    dot_fn dot = pick_dot_bf16();
#ifdef QC_X86
    int amx = dot == dot_amx_bf16;
    if (amx)
        amx_begin();
#endif
    for (int64_t pb = lo; pb < hi; pb++) {
        if (direct_1x1(j))
            pack_panel_direct(j, pb * QPX, panel);
        else
            pack_panel(j, pb * QPX, panel);
        for (int64_t oc0 = 0; oc0 < j->OC; oc0 += BR) {
            dot(j, panel, oc0, &acc);
            store_tile(j, pb * QPX, oc0, &acc);
        }
    }
#ifdef QC_X86
    if (amx)
        amx_end();
#endif
}

/* Task t: panel t / groups, output channel blocks [g*ocg, (g+1)*ocg) of
 * g = t % groups (several groups per panel where there are few panels: the
 * 7x7 layers, so that every thread has work). */
static void int8_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const qjob *j = arg;
    int32_t *panel = j->panels[tid];
    qacc acc __attribute__((aligned(64)));
    dot_px_fn dot = pick_dot_px();
    int64_t nblk = cvrt_cdiv(j->OC, BR), groups = cvrt_cdiv(nblk, j->ocg), packed = -1;
#ifdef QC_X86
    int amx = dot == dot_px_amx;
    if (amx)
        amx_begin();
#endif
    for (int64_t t = lo; t < hi; t++) {
        int64_t pb = t / groups, g = t % groups, p0 = pb * QPX, np = cvrt_min(QPX, j->P - p0);
        const int32_t *px = panel;
        int64_t lda = j->KUp;
        if (in_place(j, p0)) {
            px = (const int32_t *)(const void *)((const uint8_t *)j->x + p0 * j->C);
            lda = j->C / 4;
        } else if (pb != packed) {
            pack_rows(j, p0, panel);
            packed = pb;
        }
        for (int64_t b = g * j->ocg; b < cvrt_min(nblk, (g + 1) * j->ocg); b++) {
            dot(j, px, lda, b * BR, np, &acc);
            store_px(j, p0, b * BR, np, &acc);
        }
    }
#ifdef QC_X86
    if (amx)
        amx_end();
#endif
}

void cvrt_qconv2d(cvrt_ctx *rt, const void *x, const int32_t *wp, const int32_t *wsum,
                  const float *scale, const float *bias, void *y,
                  int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                  int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                  int64_t OH, int64_t OW, const void *res, int64_t act, float lo, float hi,
                  float xs, int64_t zp, uint8_t *scratch, int64_t flags, float ys, int64_t yzp,
                  float rs, int64_t rzp)
{
    int bf16 = (flags & CVRT_Q_BF16) != 0;
    if (bf16)
        flags = 0, zp = 0;      /* f32 in, out and residual */
    qjob j = {x, wp, wsum, scale, bias, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw,
              OH, OW, 0, 0, 0, 0, 0, OH * OW, 0, bf16 ? 2 : 4, xs, (int32_t)zp, bf16,
              (uint32_t *)(void *)scratch, (int32_t **)rt->pack_b, 1,
              {y, res, flags, act, lo, hi, ys > 0 ? 1.0f / ys : 0.0f, rs, (int32_t)yzp, (int32_t)rzp}};
    j.Cp = bf16 ? CVRT_BCONV_CP(C) : CVRT_QCONV_CP(C);
    j.U = j.Cp / j.epu;
    j.Hp = CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh);
    j.Wp = CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw);
    j.KU = KH * KW * j.U;
    j.KUp = cvrt_cdiv(j.KU, CVRT_Q_KUB) * CVRT_Q_KUB;
    int64_t grain = cvrt_max(1, 4096 / (j.Wp * j.U * 4 + 1)), npan = cvrt_cdiv(j.P, QPX);
    if (bf16) {
        if (!direct_1x1(&j))
            cvrt_parallel(rt, j.Hp, grain, quant_task, &j);
        cvrt_parallel(rt, npan, 1, bf16_task, &j);
        return;
    }
    if (!direct_u8(&j))
        cvrt_parallel(rt, j.Hp, grain, flags & CVRT_Q_XU8 ? quant_u8_task : quant_task, &j);
    /* Threads share a panel's output channels (one contiguous range each:
     * a cache line of the channels-last output is written by one thread
     * but at the ranges' ends) only where there are too few panels to go
     * round; tasks are claimed a few at a time (a claim costs about as
     * much as a small panel). */
    int64_t nblk = cvrt_cdiv(OC, BR), nt = cvrt_threads(rt);
    int64_t groups = nt > 1 && npan < 2 * nt ? cvrt_min(nblk, nt) : 1;
    j.ocg = cvrt_cdiv(nblk, groups);
    int64_t ntask = npan * cvrt_cdiv(nblk, j.ocg);
    cvrt_parallel(rt, ntask, cvrt_max(1, ntask / (8 * nt)), int8_task, &j);
}
