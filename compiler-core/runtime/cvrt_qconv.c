/* int8 and bf16 convolution on one engine.
 *
 * int8 (the -p int8 path): u8 activations (asymmetric, one scale and zero
 * point per tensor) times s8 weights (symmetric, one scale per output
 * channel), int32 accumulation, dequantised in the epilogue.  bf16
 * (CVRT_Q_BF16, -p bf16 on a CPU with AVX512_BF16): bf16 activations times
 * bf16 weights, f32 accumulation.
 *
 * The f32 image is converted once into scratch as a padded NHWC copy whose
 * pixels are whole int32 "units": 4 u8 channels (zero-point padded) or 2
 * bf16 channels (zero padded), so that one unit of an im2col column holds
 * 4 or 2 consecutive k (k = (kh*KW + kw)*Cp + c).  A task packs 32 output
 * pixels' columns into a panel ([k unit][32 px] int32) and runs them
 * against every block of 32 output channels, whose weights are plain rows
 * of units ([OC][k unit]), so that AMX takes them as its A tiles and the
 * panel as its B tiles (tdpbsud for s8 x u8 into int32, tdpbf16ps for bf16
 * into f32; 2x2 16x16 tiles per block) where the CPU and the kernel allow
 * it (arch_prctl for the tile data); else 8 channels x 32 pixels at a time
 * with broadcast weight units: AVX-512 VNNI's vpdpbusd (u8 x s8, 4
 * products per i32 lane) or AVX512_BF16's vdpbf16ps (2 bf16 products into
 * an f32 lane); else a portable loop.  Measured here, vdpbf16ps issues
 * about once every 4 cycles against two f32 FMAs a cycle, so it is slower
 * than the f32 GEMM; AMX is the fast path.  int8 padding holds the zero
 * point and the weights' row sums remove it: sum (xq - zp) w = sum xq w -
 * zp sum w. */
#include "compiler-core/runtime/cvrt_qepi.h"

#if defined(__x86_64__) && defined(CVRT_AVX512)
#define QC_X86 1
#endif

enum { QR = 8, QPX = 32 };    /* rows per VNNI/vdpbf16ps step, pixels per panel */

typedef struct qjob {
    const void *x;              /* f32, or u8 already quantised (CVRT_Q_XU8) */
    const int32_t *wp;          /* [OCp][KUp] units: s8 quads or bf16 pairs */
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
    if (j->out.flags & CVRT_Q_XU8)
        return cvrt_load_u8((const uint8_t *)j->x + c * j->H * j->W + off, n, j->zp);
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

/* ---- the dot products ---------------------------------------------------- */

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

/* A block's sums: int32 (int8) or f32 (bf16). */
enum { BR = CVRT_Q_OCB };
typedef union qacc {
    int32_t i[BR * QPX];
    float f[BR * QPX];
} qacc;

/* acc (BR x QPX) to y through scale, bias, residual and activation. */
static void store_tile(const qjob *j, int64_t p0, int64_t oc0, const qacc *acc)
{
    int64_t np = cvrt_min(QPX, j->P - p0);
    const cvrt_qout out = j->out;
    for (int r = 0; r < BR && oc0 + r < j->OC; r++) {
        int64_t oc = oc0 + r;
        cvrt_vf b = cvrt_splat(j->bias ? j->bias[oc] : 0.0f);
        if (j->bf16) {
            for (int64_t i = 0; i < np; i += CVRT_VL)
                cvrt_qstore(out, oc * j->P + p0 + i, *(const cvrt_vf *)(acc->f + r * QPX + i) + b,
                            cvrt_min(CVRT_VL, np - i));
            continue;
        }
        int32_t corr = j->zp * j->wsum[oc];
        cvrt_vf s = cvrt_splat(j->scale[oc]);
        for (int64_t i = 0; i < np; i += CVRT_VL) {
            cvrt_vi a = *(const cvrt_vi *)(acc->i + r * QPX + i) - corr;
            cvrt_qstore(out, oc * j->P + p0 + i, __builtin_convertvector(a, cvrt_vf) * s + b,
                        cvrt_min(CVRT_VL, np - i));
        }
    }
}

static void dot_generic(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    for (int q = 0; q < BR * QPX; q++)
        acc->i[q] = 0;
    for (int64_t ku = 0; ku < j->KU; ku++) {
        const uint8_t *xb = (const uint8_t *)(panel + ku * QPX);
        for (int r = 0; r < BR && oc0 + r < j->OC; r++) {
            const int8_t *wb = (const int8_t *)(j->wp + (oc0 + r) * j->KUp + ku);
            for (int i = 0; i < QPX; i++)
                acc->i[r * QPX + i] += xb[4 * i] * wb[0] + xb[4 * i + 1] * wb[1] +
                                       xb[4 * i + 2] * wb[2] + xb[4 * i + 3] * wb[3];
        }
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

#ifdef QC_X86
/* Rows r0 .. r0+7 of the block at oc0. */
__attribute__((target("avx512f,avx512vnni")))
static void dot_vnni_rows(const qjob *j, const int32_t *panel, int64_t oc0, int r0, qacc *acc)
{
    __m512i a[QR][2];
    const int32_t *w = j->wp + (oc0 + r0) * j->KUp;
    for (int r = 0; r < QR; r++)
        a[r][0] = a[r][1] = _mm512_setzero_si512();
    for (int64_t ku = 0; ku < j->KU; ku++) {
        __m512i x0 = _mm512_load_si512(panel + ku * QPX);
        __m512i x1 = _mm512_load_si512(panel + ku * QPX + 16);
        for (int r = 0; r < QR; r++) {
            __m512i wv = _mm512_set1_epi32(w[r * j->KUp + ku]);
            a[r][0] = _mm512_dpbusd_epi32(a[r][0], x0, wv);
            a[r][1] = _mm512_dpbusd_epi32(a[r][1], x1, wv);
        }
    }
    for (int r = 0; r < QR; r++) {
        _mm512_storeu_si512(acc->i + (r0 + r) * QPX, a[r][0]);
        _mm512_storeu_si512(acc->i + (r0 + r) * QPX + 16, a[r][1]);
    }
}

static void dot_vnni(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    for (int r0 = 0; r0 < BR && oc0 + r0 < j->OC; r0 += QR)
        dot_vnni_rows(j, panel, oc0, r0, acc);
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

/* AMX: tiles 0-3 the 2x2 f32 sums (16 channels x 16 pixels each), 4-5 the
 * weights of channels oc0.. and oc0+16.. (16 rows of 16 units), 6-7 the
 * panel's pixels 0-15 and 16-31 (16 units deep). */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

__attribute__((target("amx-tile")))
static void amx_begin(void)
{
    amx_cfg cfg = {.palette = 1};
    for (int t = 0; t < 8; t++)
        cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
}

__attribute__((target("amx-tile")))
static void amx_end(void)
{
    _tile_release();
}

/* The block's 2x2 tiles: s8 x u8 into int32 (i8) or bf16 into f32. */
__attribute__((target("amx-tile,amx-bf16,amx-int8"), always_inline))
static inline void dot_amx(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc, int i8)
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
        if (i8) {
            _tile_dpbsud(0, 4, 6);
            _tile_dpbsud(1, 4, 7);
            _tile_dpbsud(2, 5, 6);
            _tile_dpbsud(3, 5, 7);
        } else {
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, acc->i, ps);
    _tile_stored(1, acc->i + 16, ps);
    _tile_stored(2, acc->i + 16 * QPX, ps);
    _tile_stored(3, acc->i + 16 * QPX + 16, ps);
}

__attribute__((target("amx-tile,amx-bf16,amx-int8")))
static void dot_amx_bf16(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    dot_amx(j, panel, oc0, acc, 0);
}

__attribute__((target("amx-tile,amx-bf16,amx-int8")))
static void dot_amx_i8(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc)
{
    dot_amx(j, panel, oc0, acc, 1);
}

/* Linux hands out AMX's tile state only on request (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, once per process). */
static int amx_permitted(void)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(158L), "D"(0x1023L), "S"(18L)
                     : "rcx", "r11", "memory");
    return ret == 0;
}

/* CPUID leaf 7: ECX bit 11 of subleaf 0 is AVX512_VNNI, EDX bits 22, 24
 * and 25 AMX-BF16, AMX-TILE and AMX-INT8, EAX bit 5 of subleaf 1
 * AVX512_BF16 (the variant already assumes AVX-512 with OS support).  The
 * AMX bits count only when the kernel granted the tile data. */
enum { HAVE_VNNI = 1, HAVE_BF16 = 2, HAVE_AMX_BF16 = 4, HAVE_AMX_I8 = 8, KNOWN = 16 };
static int cpu_dots(void)
{
    static _Atomic int known;   /* 0 unknown, else KNOWN | the bits */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        unsigned a = 7, b, c = 0, d;
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
        k = KNOWN | (int)(c >> 11 & 1);
        int tile = (int)(d >> 24 & 1), amx = (int)(d >> 22 & 1) * HAVE_AMX_BF16 |
                                             (int)(d >> 25 & 1) * HAVE_AMX_I8;
        a = 7, c = 1;
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
        k |= (int)(a >> 5 & 1) << 1;
        if (tile && amx && amx_permitted())
            k |= amx;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k;
}
#endif

typedef void (*dot_fn)(const qjob *j, const int32_t *panel, int64_t oc0, qacc *acc);

static dot_fn pick_dot(const qjob *j)
{
#ifdef QC_X86
    int have = cpu_dots();
    if (j->bf16)
        return have & HAVE_AMX_BF16 ? dot_amx_bf16 : have & HAVE_BF16 ? dot_bf16
                                                                      : dot_bf16_generic;
    if (have & HAVE_AMX_I8)
        return dot_amx_i8;
    if (have & HAVE_VNNI)
        return dot_vnni;
#endif
    return j->bf16 ? dot_bf16_generic : dot_generic;
}

static void conv_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    const qjob *j = arg;
    int32_t *panel = j->panels[tid];
    qacc acc __attribute__((aligned(64)));
    dot_fn dot = pick_dot(j);
    int direct = direct_1x1(j);
#ifdef QC_X86
    int amx = dot == dot_amx_bf16 || dot == dot_amx_i8;
    if (amx)
        amx_begin();
#endif
    for (int64_t pb = lo; pb < hi; pb++) {
        if (direct)
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
              (uint32_t *)(void *)scratch, (int32_t **)rt->pack_b,
              {y, res, flags, act, lo, hi, ys > 0 ? 1.0f / ys : 0.0f, rs, (int32_t)yzp, (int32_t)rzp}};
    j.Cp = bf16 ? CVRT_BCONV_CP(C) : CVRT_QCONV_CP(C);
    j.U = j.Cp / j.epu;
    j.Hp = CVRT_QCONV_EXT(H, pt, OH, sh, KH, dh);
    j.Wp = CVRT_QCONV_EXT(W, pl, OW, sw, KW, dw);
    j.KU = KH * KW * j.U;
    j.KUp = cvrt_cdiv(j.KU, CVRT_Q_KUB) * CVRT_Q_KUB;
    if (!direct_1x1(&j))
        cvrt_parallel(rt, j.Hp, cvrt_max(1, 4096 / (j.Wp * j.U * 4 + 1)), quant_task, &j);
    cvrt_parallel(rt, cvrt_cdiv(j.P, QPX), 1, conv_task, &j);
}
