/* int8 convolution (the -p int8 path): u8 activations (asymmetric, one
 * scale and zero point per tensor) times s8 weights (symmetric, one scale
 * per output channel), int32 accumulation, dequantised in the epilogue.
 *
 * The f32 image is quantised once into scratch as a zero-point-padded
 * NHWC copy with the channels rounded up to 4, so that 4 consecutive k of
 * an im2col column (k = (kh*KW + kw)*Cp + c) are one aligned int32.  A
 * task packs 32 output pixels' columns into a panel ([k/4][32 px] int32)
 * and runs them against every block of 8 output channels: per k/4 step,
 * two vectors of 16 pixels times 8 broadcast weight quads, with AVX-512
 * VNNI's vpdpbusd (u8 x s8, 4 products per i32 lane) when the CPU has it,
 * else a portable loop.  Padding holds the zero point and the weights'
 * row sums remove it: sum (xq - zp) w = sum xq w - zp sum w. */
#include "compiler-core/runtime/cvrt_qepi.h"

#if defined(__x86_64__) && defined(CVRT_AVX512)
#define QC_X86 1
#endif

enum { QR = CVRT_QR, QPX = 32 };

typedef struct qjob {
    const void *x;              /* f32, or u8 already quantised (CVRT_Q_XU8) */
    const int32_t *wp;          /* [OCp/QR][K4][QR] s8 quads */
    const int32_t *wsum;        /* [OCp] */
    const float *scale, *bias;  /* [OCp], bias may be NULL */
    int64_t C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW;
    int64_t Cp, Hp, Wp, K4, P;
    float xs;
    int32_t zp;
    uint8_t *xq;                /* [Hp][Wp][Cp] */
    int32_t **panels;           /* per thread, K4 * QPX int32 */
    cvrt_qout out;
} qjob;

/* Lanes [0, n) of channel c at element off of the image as quantised u8
 * values in int32 (the zero point past C or n). */
static inline cvrt_vi quant_lanes(const qjob *j, int64_t c, int64_t off, int64_t n)
{
    if (c >= j->C || n <= 0)
        return (cvrt_vi){0} + j->zp;
    if (j->out.flags & CVRT_Q_XU8)
        return cvrt_load_u8((const uint8_t *)j->x + c * j->H * j->W + off, n, j->zp);
    return cvrt_quant_vec(cvrt_load_mask((const float *)j->x + c * j->H * j->W + off, 0, n),
                          j->xs, j->zp);
}

/* ---- quantising the image ------------------------------------------------ */

/* Padded rows [lo, hi) of xq: 4 channels at a time become one int32 per
 * pixel (channels past C hold the zero point). */
static void quant_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const qjob *j = arg;
    uint32_t fill = (uint32_t)(uint8_t)j->zp * 0x01010101u;
    int64_t rowlen = j->Wp * j->Cp, cq = j->Cp / 4;
    for (int64_t r = lo; r < hi; r++) {
        uint32_t *row = (uint32_t *)(j->xq + r * rowlen);
        int64_t ih = r - j->pt;
        for (int64_t q = 0; q < rowlen / 4; q++)
            row[q] = fill;
        if (ih < 0 || ih >= j->H)
            continue;
        for (int64_t c4 = 0; c4 < cq; c4++) {
            uint32_t *dst = row + j->pl * cq + c4;
            for (int64_t iw = 0; iw < j->W; iw += CVRT_VL) {
                int64_t n = cvrt_min(CVRT_VL, j->W - iw);
                cvrt_vi packed = {0};
                for (int t = 0; t < 4; t++)
                    packed |= quant_lanes(j, c4 * 4 + t, ih * j->W + iw, n) << (8 * t);
                uint32_t lanes[CVRT_VL] __attribute__((aligned(64)));
                *(cvrt_vi *)lanes = packed;
                for (int64_t i = 0; i < n; i++)
                    dst[(iw + i) * cq] = lanes[i];
            }
        }
    }
}

/* ---- the dot products ---------------------------------------------------- */

/* panel[k4*QPX + i] = the 4 bytes of pixel p0 + i at k = 4*k4 .. 4*k4+3. */
static void pack_panel(const qjob *j, int64_t p0, int32_t *panel)
{
    int64_t base[QPX], cq = j->Cp / 4;
    for (int i = 0; i < QPX; i++) {
        int64_t p = cvrt_min(p0 + i, j->P - 1), oh = p / j->OW, ow = p % j->OW;
        base[i] = (oh * j->sh * j->Wp + ow * j->sw) * j->Cp;
    }
    int64_t k4 = 0;
    for (int64_t kh = 0; kh < j->KH; kh++)
        for (int64_t kw = 0; kw < j->KW; kw++) {
            const uint8_t *tap = j->xq + (kh * j->dh * j->Wp + kw * j->dw) * j->Cp;
            for (int64_t c4 = 0; c4 < cq; c4++, k4++) {
                int32_t *dst = panel + k4 * QPX;
                for (int i = 0; i < QPX; i++)
                    dst[i] = *(const int32_t *)(tap + base[i] + c4 * 4);
            }
        }
}

/* A 1x1 convolution with stride 1 and no padding reads pixel p of the
 * image for output p: the panel is quantised straight from x (each element
 * once), with no padded copy. */
static int direct_1x1(const qjob *j)
{
    return j->KH == 1 && j->KW == 1 && j->sh == 1 && j->sw == 1 && j->pt == 0 && j->pl == 0 &&
           j->OH == j->H && j->OW == j->W;
}

static void pack_panel_direct(const qjob *j, int64_t p0, int32_t *panel)
{
    for (int64_t c4 = 0; c4 < j->Cp / 4; c4++)
        for (int i = 0; i < QPX; i += CVRT_VL) {
            int64_t n = cvrt_max(0, cvrt_min(CVRT_VL, j->P - p0 - i));
            cvrt_vi packed = {0};
            for (int t = 0; t < 4; t++)
                packed |= quant_lanes(j, c4 * 4 + t, p0 + i, n) << (8 * t);
            *(cvrt_vi *)(panel + c4 * QPX + i) = packed;
        }
}

/* acc (QR x QPX) to y through scale, bias, residual and activation. */
static void store_tile(const qjob *j, int64_t p0, int64_t oc0, const int32_t *acc)
{
    int64_t np = cvrt_min(QPX, j->P - p0);
    const cvrt_qout out = j->out;
    for (int r = 0; r < QR && oc0 + r < j->OC; r++) {
        int64_t oc = oc0 + r;
        int32_t corr = j->zp * j->wsum[oc];
        cvrt_vf s = cvrt_splat(j->scale[oc]), b = cvrt_splat(j->bias ? j->bias[oc] : 0.0f);
        for (int64_t i = 0; i < np; i += CVRT_VL) {
            cvrt_vi a = *(const cvrt_vi *)(acc + r * QPX + i) - corr;
            cvrt_qstore(out, oc * j->P + p0 + i, __builtin_convertvector(a, cvrt_vf) * s + b,
                        cvrt_min(CVRT_VL, np - i));
        }
    }
}

static void dot_generic(const qjob *j, const int32_t *panel, const int32_t *w, int32_t *acc)
{
    for (int q = 0; q < QR * QPX; q++)
        acc[q] = 0;
    for (int64_t k4 = 0; k4 < j->K4; k4++) {
        const uint8_t *xb = (const uint8_t *)(panel + k4 * QPX);
        const int8_t *wb = (const int8_t *)(w + k4 * QR);
        for (int r = 0; r < QR; r++)
            for (int i = 0; i < QPX; i++)
                acc[r * QPX + i] += xb[4 * i] * wb[4 * r] + xb[4 * i + 1] * wb[4 * r + 1] +
                                    xb[4 * i + 2] * wb[4 * r + 2] + xb[4 * i + 3] * wb[4 * r + 3];
    }
}

#ifdef QC_X86
__attribute__((target("avx512f,avx512vnni")))
static void dot_vnni(const qjob *j, const int32_t *panel, const int32_t *w, int32_t *acc)
{
    __m512i a[QR][2];
    for (int r = 0; r < QR; r++)
        a[r][0] = a[r][1] = _mm512_setzero_si512();
    for (int64_t k4 = 0; k4 < j->K4; k4++) {
        __m512i x0 = _mm512_load_si512(panel + k4 * QPX);
        __m512i x1 = _mm512_load_si512(panel + k4 * QPX + 16);
        const int32_t *wk = w + k4 * QR;
        for (int r = 0; r < QR; r++) {
            __m512i wv = _mm512_set1_epi32(wk[r]);
            a[r][0] = _mm512_dpbusd_epi32(a[r][0], x0, wv);
            a[r][1] = _mm512_dpbusd_epi32(a[r][1], x1, wv);
        }
    }
    for (int r = 0; r < QR; r++) {
        _mm512_storeu_si512(acc + r * QPX, a[r][0]);
        _mm512_storeu_si512(acc + r * QPX + 16, a[r][1]);
    }
}

/* CPUID leaf 7: ECX bit 11 is AVX512_VNNI (the variant already assumes
 * AVX-512 with OS support). */
static int has_vnni(void)
{
    static _Atomic int known;   /* 0 unknown, 1 no, 2 yes */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a = 7, b, c = 0, d;
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
        k = (c >> 11 & 1) ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}
#endif

static void conv_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const qjob *j = arg;
    int32_t *panel = j->panels[tid];
    int32_t acc[QR * QPX] __attribute__((aligned(64)));
#ifdef QC_X86
    int vnni = has_vnni();
#endif
    int direct = direct_1x1(j);
    for (int64_t pb = lo; pb < hi; pb++) {
        if (direct)
            pack_panel_direct(j, pb * QPX, panel);
        else
            pack_panel(j, pb * QPX, panel);
        for (int64_t oc0 = 0; oc0 < j->OC; oc0 += QR) {
            const int32_t *w = j->wp + oc0 / QR * j->K4 * QR;
#ifdef QC_X86
            if (vnni)
                dot_vnni(j, panel, w, acc);
            else
#endif
                dot_generic(j, panel, w, acc);
            store_tile(j, pb * QPX, oc0, acc);
        }
    }
}

void cvrt_qconv2d(cvrt_ctx *rt, const void *x, const int32_t *wp, const int32_t *wsum,
                  const float *scale, const float *bias, void *y,
                  int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                  int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                  int64_t OH, int64_t OW, const void *res, int64_t act, float lo, float hi,
                  float xs, int64_t zp, uint8_t *scratch, int64_t flags, float ys, int64_t yzp,
                  float rs, int64_t rzp)
{
    qjob j = {x, wp, wsum, scale, bias, C, H, W, OC, KH, KW, sh, sw, pt, pl, dh, dw,
              OH, OW, 0, 0, 0, 0, OH * OW, xs, (int32_t)zp, scratch, (int32_t **)rt->pack_b,
              {y, res, flags, act, lo, hi, ys > 0 ? 1.0f / ys : 0.0f, rs, (int32_t)yzp, (int32_t)rzp}};
    j.Cp = CVRT_QCONV_CP(C);
    j.Hp = CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh);
    j.Wp = CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw);
    j.K4 = KH * KW * j.Cp / 4;
    if (!direct_1x1(&j))
        cvrt_parallel(rt, j.Hp, cvrt_max(1, 4096 / (j.Wp * j.Cp + 1)), quant_task, &j);
    cvrt_parallel(rt, cvrt_cdiv(j.P, QPX), 1, conv_task, &j);
}
