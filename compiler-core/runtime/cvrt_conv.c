/* Convolutions on the GEMM engine (cvrt_gemm.c).  A convolution is the
 * product of its weights (OC x C*KH*KW) and the im2col matrix of its image,
 * which is never stored.  Given scratch, the image is copied once with its
 * padding written out and its rows and columns split by stride phase:
 * every tap then reads one run of a phase image per output row ("grid"
 * columns n = oh*wg + ow over the phase row width wg, the columns past OW
 * dropped when C is written), so B is read in place.  Without scratch (or
 * when the grid would waste too much), B panels are packed straight from
 * the image with bounds checks. */
#include "compiler-core/runtime/cvrt_gemm.h"
#include "compiler-core/runtime/cvrt_vec.h"

/* The grid computes wg - OW wasted columns per row: past this share the
 * bounds-checked im2col packing costs less (a 3x3 convolution on 7x7
 * wastes 22% and still runs faster on the grid, whose rows are read in
 * place). */
enum { GRID_MAX_WASTE_PCT = 25 };

typedef struct split_job {
    const cvrt_conv_geom *g;
    const float *x;
    float *xq;
    int64_t Hq, Wq;             /* one phase plane */
    unsigned used;              /* bit ph*sw+pw: a tap reads that phase */
} split_job;

/* Row i of phase (ph, pw) of channel c: x[c][i*sh+ph-pt][q*sw+pw-pl],
 * zero outside x. */
static void split_row(const split_job *p, const float *src, int64_t ph, int64_t pw, int64_t i,
                      float *restrict row)
{
    const cvrt_conv_geom *g = p->g;
    int64_t ih = i * g->sh + ph - g->pt;
    if (ih < 0 || ih >= g->H) {
        cvrt_zero(row, p->Wq);
        return;
    }
    /* Columns q with 0 <= q*sw + pw - pl < W. */
    int64_t q0 = cvrt_min(p->Wq, cvrt_max(0, cvrt_cdiv(g->pl - pw, g->sw)));
    int64_t q1 = cvrt_max(q0, cvrt_min(p->Wq, cvrt_cdiv(g->W + g->pl - pw, g->sw)));
    const float *s = src + ih * g->W + q0 * g->sw + pw - g->pl;
    cvrt_zero(row, q0);
    if (g->sw == 1)
        cvrt_copy(row + q0, s, q1 - q0);
    else if (g->sw == 2)
        cvrt_copy_even(row + q0, s, q1 - q0);
    else
        for (int64_t q = q0; q < q1; q++)
            row[q] = s[(q - q0) * g->sw];
    cvrt_zero(row + q1, p->Wq - q1);
}

/* Channels [lo, hi) of every phase a tap reads. */
static void split_task(void *arg, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const split_job *p = arg;
    const cvrt_conv_geom *g = p->g;
    for (int64_t ph = 0; ph < g->sh; ph++)
        for (int64_t pw = 0; pw < g->sw; pw++) {
            if (!(p->used >> (ph * g->sw + pw) & 1))
                continue;
            for (int64_t c = lo; c < hi; c++) {
                float *dst = p->xq + ((ph * g->sw + pw) * g->C + c) * p->Hq * p->Wq;
                for (int64_t i = 0; i < p->Hq; i++)
                    split_row(p, p->x + c * g->H * g->W, ph, pw, i, dst + i * p->Wq);
            }
        }
}

/* Picks B's form: grid rows of x itself (stride 1, nothing to pad) or of
 * its phase-split, padded copy in scratch, when the grid rows waste
 * little; im2col packing otherwise. */
static void choose_b(cvrt_ctx *rt, cvrt_gemm_job *j, const cvrt_conv_geom *g, const float *x,
                     float *scratch)
{
    j->g = g;
    j->b = x;
    j->bkind = CVRT_B_IM2COL;
    int64_t Hp = (g->OH - 1) * g->sh + (g->KH - 1) * g->dh + 1;
    int64_t Wp = (g->OW - 1) * g->sw + (g->KW - 1) * g->dw + 1;
    int64_t Hq = cvrt_cdiv(Hp, g->sh), Wq = cvrt_cdiv(Wp, g->sw);
    int inside = g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && Hp <= g->H &&
                 Wp <= g->W;
    int64_t wg = inside ? g->W : Wq;
    if ((wg - g->OW) * 100 > GRID_MAX_WASTE_PCT * wg || (!inside && !scratch) ||
        g->sh * g->sw > 16)
        return;
    j->bkind = CVRT_B_GRID;
    j->wg = wg;
    j->plane = inside ? g->H * g->W : Hq * Wq;
    if (inside)
        return;
    split_job p = {g, x, scratch, Hq, Wq, 0};
    for (int64_t kh = 0; kh < g->KH; kh++)
        for (int64_t kw = 0; kw < g->KW; kw++)
            p.used |= 1u << ((kh * g->dh % g->sh) * g->sw + kw * g->dw % g->sw);
    cvrt_parallel(rt, g->C, cvrt_max(1, 16384 / (g->sh * g->sw * Hq * Wq)), split_task, &p);
    j->b = scratch;
}

/* The weights: w (plain), wp (P8) or wh (P8 in the 16-bit type whk). */
typedef struct conv_w {
    const float *w, *wp;
    const uint16_t *wh;
    int64_t whk;
} conv_w;

static void conv(cvrt_ctx *rt, const float *x, const conv_w *cw,
                 const float *bias, float *y, int64_t OC, const cvrt_conv_geom *g,
                 const float *res, int64_t act, float lo, float hi, float *scratch)
{
    int64_t K = g->C * g->KH * g->KW, OHW = g->OH * g->OW;
    cvrt_gemm_job j = {.M = OC, .N = OHW, .K = K, .alpha = 1.0f, .ap = cw->wp, .aph = cw->wh,
                       .ahk = cw->whk, .a = cw->w, .ars = K,
                       .acs = 1, .c = y, .ldc = OHW, .bias = bias, .bias_rs = 1, .bias_cs = 0,
                       .bias_scale = 1.0f, .epi = {res, OHW, act, lo, hi}};
    choose_b(rt, &j, g, x, scratch);
    cvrt_gemm_run(rt, &j);
}

void cvrt_conv2d(cvrt_ctx *rt, const float *x, const float *w, const float *bias, float *y,
                 int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                 int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                 int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi)
{
    cvrt_conv_geom g = {C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    conv_w cw = {.w = w};
    conv(rt, x, &cw, bias, y, OC, &g, res, act, lo, hi, 0);
}

void cvrt_conv2d_p8(cvrt_ctx *rt, const float *x, const float *wp, const float *bias, float *y,
                    int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                    int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw,
                    int64_t OH, int64_t OW, const float *res, int64_t act, float lo, float hi,
                    float *scratch)
{
    cvrt_conv_geom g = {C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    conv_w cw = {.wp = wp};
    conv(rt, x, &cw, bias, y, OC, &g, res, act, lo, hi, scratch);
}

void cvrt_conv2d_p8h(cvrt_ctx *rt, const float *x, const uint16_t *wp, int64_t wkind,
                     const float *bias, float *y, int64_t C, int64_t H, int64_t W, int64_t OC,
                     int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                     int64_t dh, int64_t dw, int64_t OH, int64_t OW, const float *res,
                     int64_t act, float lo, float hi, float *scratch)
{
    cvrt_conv_geom g = {C, H, W, KH, KW, sh, sw, pt, pl, dh, dw, OH, OW};
    conv_w cw = {.wh = wp, .whk = wkind};
    conv(rt, x, &cw, bias, y, OC, &g, res, act, lo, hi, scratch);
}
