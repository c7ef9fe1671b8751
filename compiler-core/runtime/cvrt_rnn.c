/* The rnn op (compiler-core/ir/ops_rnn.c): an LSTM or GRU over a sequence
 * whose length is known only at run time (issue 26: a speech model over a
 * dynamic number of frames).
 *
 * Per direction, the input side of every gate at every step is one GEMM
 * (x [T*B, I] times W^T, plus W's bias) before the recurrence; then each
 * step is one GEMM of the state (h [B, H] times R^T, plus R's bias) and a
 * pointwise pass applying the gates.  GRU without linear_before_reset needs
 * (r . h) R_n^T, so its third gate's recurrent product is a second GEMM
 * after r is known.  The formulas are the interpreter's (ONNX's, with the
 * default activations); the running state lives in y_h (and y_c). */
#include <stdbool.h>

#include "compiler-core/runtime/cvrt_gemm.h"

static float sigm(float v) { return 1.0f / (1.0f + __builtin_expf(-v)); }

static float clamp(float v, float clip)
{
    if (clip <= 0)
        return v;
    return v < -clip ? -clip : v > clip ? clip : v;
}

/* c = A[M,K] B^T + bias, with B [N,K] row-major (a weight matrix). */
static void gemm_bt(cvrt_ctx *rt, int64_t M, int64_t N, int64_t K, const float *a, int64_t lda,
                    const float *b, float *c, int64_t ldc, const float *bias)
{
    cvrt_sgemm(rt, M, N, K, 1.0f, a, lda, 1, b, 1, K, c, ldc, 0, bias, 0, 1, 1.0f, NULL, 0, 0,
               0.0f, 0.0f);
}

typedef struct rnn_dir {
    int64_t B, H, G;
    float clip;
    const float *xg;            /* this step's input side, [B, G*H] */
    float *hg;                  /* this step's recurrent side, [B, G*H] */
    float *h, *cell;            /* state, [B, H] */
} rnn_dir;

/* Gates i o f c. */
static void lstm_cell(const rnn_dir *s)
{
    int64_t H = s->H, GH = s->G * H;
    for (int64_t b = 0; b < s->B; b++) {
        const float *xg = s->xg + b * GH, *hg = s->hg + b * GH;
        float *h = s->h + b * H, *cell = s->cell + b * H;
        for (int64_t j = 0; j < H; j++) {
            float i = sigm(clamp(xg[j] + hg[j], s->clip));
            float o = sigm(clamp(xg[H + j] + hg[H + j], s->clip));
            float f = sigm(clamp(xg[2 * H + j] + hg[2 * H + j], s->clip));
            float g = __builtin_tanhf(clamp(xg[3 * H + j] + hg[3 * H + j], s->clip));
            cell[j] = f * cell[j] + i * g;
            h[j] = o * __builtin_tanhf(cell[j]);
        }
    }
}

/* Gates z r n: z and r into hg's first 2H columns (in place); then r . h
 * into rh when the reset comes before the product. */
static void gru_zr(const rnn_dir *s, bool lbr, float *rh)
{
    int64_t H = s->H, GH = s->G * H;
    for (int64_t b = 0; b < s->B; b++) {
        const float *xg = s->xg + b * GH, *h = s->h + b * H;
        float *hg = s->hg + b * GH;
        for (int64_t j = 0; j < 2 * H; j++)
            hg[j] = sigm(clamp(xg[j] + hg[j], s->clip));
        for (int64_t j = 0; !lbr && j < H; j++)
            rh[b * H + j] = hg[H + j] * h[j];
    }
}

/* hg's n columns hold h R_n^T + Rb_n (linear_before_reset) or
 * (r . h) R_n^T + Rb_n. */
static void gru_update(const rnn_dir *s, bool lbr)
{
    int64_t H = s->H, GH = s->G * H;
    for (int64_t b = 0; b < s->B; b++) {
        const float *xg = s->xg + b * GH, *hg = s->hg + b * GH;
        float *h = s->h + b * H;
        for (int64_t j = 0; j < H; j++) {
            float z = hg[j], r = hg[H + j], rec = hg[2 * H + j];
            float n = __builtin_tanhf(clamp(xg[2 * H + j] + (lbr ? r * rec : rec), s->clip));
            h[j] = (1.0f - z) * n + z * h[j];
        }
    }
}

static void copy(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[i];
}

void cvrt_rnn(cvrt_ctx *rt, const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, float *y, float *yh, float *yc, float *xg,
              float *hg, int64_t T, int64_t B, int64_t I, int64_t H, int64_t gates,
              int64_t dirs, int64_t flags, float clip)
{
    int64_t G = gates, GH = G * H, BH = B * H;
    bool lbr = (flags & CVRT_RNN_LBR) != 0;
    float *rh = hg + B * GH;
    for (int64_t d = 0; d < dirs; d++) {
        const float *wd = w + d * GH * I, *rd = r + d * GH * H, *wb = bias + d * 2 * GH;
        rnn_dir s = {.B = B, .H = H, .G = G, .clip = clip, .hg = hg, .h = yh + d * BH,
                     .cell = G == 4 ? yc + d * BH : NULL};
        copy(s.h, h0 + d * BH, BH);
        if (G == 4)
            copy(s.cell, c0 + d * BH, BH);
        if (T * B > 0)
            gemm_bt(rt, T * B, GH, I, x, I, wd, xg, GH, wb);
        bool rev = (flags & CVRT_RNN_REVERSE) || d == 1;
        for (int64_t i = 0; i < T; i++) {
            int64_t t = rev ? T - 1 - i : i;
            s.xg = xg + t * B * GH;
            gemm_bt(rt, B, GH, H, s.h, H, rd, hg, GH, wb + GH);
            if (G == 4) {
                lstm_cell(&s);
            } else {
                gru_zr(&s, lbr, rh);
                if (!lbr)
                    gemm_bt(rt, B, H, H, rh, H, rd + 2 * H * H, hg + 2 * H, GH, wb + GH + 2 * H);
                gru_update(&s, lbr);
            }
            copy(y + (t * dirs + d) * BH, s.h, BH);
        }
    }
}
