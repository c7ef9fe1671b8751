/* The rnn op (compiler-core/ir/ops_rnn.c): a plain RNN, LSTM or GRU over a
 * sequence whose length is known only at run time (issue 26: a speech
 * model over a dynamic number of frames).
 *
 * Per direction, the input side of every gate at every step is one GEMM
 * (x [T*B, I] times W^T, plus W's bias) before the recurrence; then each
 * step is one GEMM of the state (h [B, H] times R^T, plus R's bias) and a
 * pointwise pass applying the gates.  GRU without linear_before_reset needs
 * (r . h) R_n^T, so its third gate's recurrent product is a second GEMM
 * after r is known.  The formulas are the interpreter's (ONNX's): sigmoid
 * and tanh, or for the plain RNN tanh or relu (CVRT_RNN_RELU); an LSTM may
 * have peepholes p [dirs, 3*H] (i o f).  With lens (sequence_lens, [B]),
 * batch row b runs L = lens[b] steps (clamped to 0..T): forward over t =
 * 0..L-1, backward over t = L-1..0; y is zero past L and y_h / y_c hold
 * the state after its last step (h0 / c0 when L is 0).  The GEMMs still
 * cover every row; a finished row's state is left as it is.  The running
 * state lives in y_h (and y_c).
 *
 * The C99 backend carries the same code as text (backend/c99/
 * c99_runtime.c, CV_C99_H_RNN): change both together. */
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
    int64_t T, B, H, G;
    bool rev, relu;
    float clip;
    const int32_t *lens;        /* [B] or NULL (every row T steps) */
    const float *p;             /* LSTM peepholes i o f, [3*H], or NULL */
    const float *xg;            /* input side, [T, B, G*H] */
    float *hg;                  /* this step's recurrent side, [B, G*H] */
    float *h, *cell;            /* state, [B, H] */
} rnn_dir;

/* Row b's time index at step i, or -1 once its sequence has ended. */
static int64_t row_t(const rnn_dir *s, int64_t i, int64_t b)
{
    int64_t L = s->T;
    if (s->lens)
        L = s->lens[b] < 0 ? 0 : s->lens[b] > s->T ? s->T : s->lens[b];
    return i >= L ? -1 : s->rev ? L - 1 - i : i;
}

static void plain_cell(const rnn_dir *s, int64_t i)
{
    for (int64_t b = 0; b < s->B; b++) {
        int64_t t = row_t(s, i, b), H = s->H;
        if (t < 0)
            continue;
        const float *xg = s->xg + (t * s->B + b) * H, *hg = s->hg + b * H;
        float *h = s->h + b * H;
        for (int64_t j = 0; j < H; j++) {
            float v = clamp(xg[j] + hg[j], s->clip);
            h[j] = s->relu ? (v > 0 ? v : 0) : __builtin_tanhf(v);
        }
    }
}

/* Gates i o f c; peepholes add p_i . c and p_f . c (the old cell) to i and
 * f, p_o . c (the new one) to o. */
static void lstm_cell(const rnn_dir *s, int64_t i)
{
    int64_t H = s->H, GH = s->G * H;
    for (int64_t b = 0; b < s->B; b++) {
        int64_t t = row_t(s, i, b);
        if (t < 0)
            continue;
        const float *xg = s->xg + (t * s->B + b) * GH, *hg = s->hg + b * GH, *p = s->p;
        float *h = s->h + b * H, *cell = s->cell + b * H;
        for (int64_t j = 0; j < H; j++) {
            float c = cell[j];
            float ig = sigm(clamp(xg[j] + hg[j] + (p ? p[j] * c : 0), s->clip));
            float fg = sigm(clamp(xg[2 * H + j] + hg[2 * H + j] + (p ? p[2 * H + j] * c : 0),
                                  s->clip));
            float g = __builtin_tanhf(clamp(xg[3 * H + j] + hg[3 * H + j], s->clip));
            c = fg * c + ig * g;
            float og = sigm(clamp(xg[H + j] + hg[H + j] + (p ? p[H + j] * c : 0), s->clip));
            cell[j] = c;
            h[j] = og * __builtin_tanhf(c);
        }
    }
}

/* Gates z r n: z and r into hg's first 2H columns (in place); then r . h
 * into rh when the reset comes before the product. */
static void gru_zr(const rnn_dir *s, int64_t i, bool lbr, float *rh)
{
    int64_t H = s->H, GH = s->G * H;
    for (int64_t b = 0; b < s->B; b++) {
        int64_t t = row_t(s, i, b);
        const float *h = s->h + b * H;
        float *hg = s->hg + b * GH;
        for (int64_t j = 0; t >= 0 && j < 2 * H; j++)
            hg[j] = sigm(clamp(s->xg[(t * s->B + b) * GH + j] + hg[j], s->clip));
        for (int64_t j = 0; !lbr && j < H; j++)
            rh[b * H + j] = t >= 0 ? hg[H + j] * h[j] : 0;
    }
}

/* hg's n columns hold h R_n^T + Rb_n (linear_before_reset) or
 * (r . h) R_n^T + Rb_n. */
static void gru_update(const rnn_dir *s, int64_t i, bool lbr)
{
    int64_t H = s->H, GH = s->G * H;
    for (int64_t b = 0; b < s->B; b++) {
        int64_t t = row_t(s, i, b);
        if (t < 0)
            continue;
        const float *xg = s->xg + (t * s->B + b) * GH, *hg = s->hg + b * GH;
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
        dst[i] = src ? src[i] : 0.0f;
}

/* y rows of direction d (stride dirs*B*H per time step): each row's state
 * at its time index of step i. */
static void store_y(const rnn_dir *s, int64_t i, float *y, int64_t dirs, int64_t d)
{
    int64_t H = s->H;
    for (int64_t b = 0; b < s->B; b++) {
        int64_t t = row_t(s, i, b);
        if (t >= 0)
            copy(y + ((t * dirs + d) * s->B + b) * H, s->h + b * H, H);
    }
}

void cvrt_rnn(cvrt_ctx *rt, const float *x, const float *w, const float *r, const float *bias,
              const float *h0, const float *c0, const float *p, const int32_t *lens, float *y,
              float *yh, float *yc, float *xg, float *hg, int64_t T, int64_t B, int64_t I,
              int64_t H, int64_t gates, int64_t dirs, int64_t flags, float clip)
{
    int64_t G = gates, GH = G * H, BH = B * H;
    bool lbr = (flags & CVRT_RNN_LBR) != 0;
    float *rh = hg + B * GH;
    if (lens)
        copy(y, NULL, T * dirs * BH);
    for (int64_t d = 0; d < dirs; d++) {
        const float *wd = w + d * GH * I, *rd = r + d * GH * H, *wb = bias + d * 2 * GH;
        rnn_dir s = {.T = T, .B = B, .H = H, .G = G, .clip = clip, .lens = lens, .xg = xg,
                     .hg = hg, .h = yh + d * BH, .cell = G == 4 ? yc + d * BH : NULL,
                     .p = p ? p + d * 3 * H : NULL, .relu = (flags & CVRT_RNN_RELU) != 0,
                     .rev = (flags & CVRT_RNN_REVERSE) || d == 1};
        copy(s.h, h0 + d * BH, BH);
        if (G == 4)
            copy(s.cell, c0 + d * BH, BH);
        if (T * B > 0)
            gemm_bt(rt, T * B, GH, I, x, I, wd, xg, GH, wb);
        for (int64_t i = 0; i < T; i++) {
            gemm_bt(rt, B, GH, H, s.h, H, rd, hg, GH, wb + GH);
            if (G == 1) {
                plain_cell(&s, i);
            } else if (G == 4) {
                lstm_cell(&s, i);
            } else {
                gru_zr(&s, i, lbr, rh);
                if (!lbr)
                    gemm_bt(rt, B, H, H, rh, H, rd + 2 * H * H, hg + 2 * H, GH, wb + GH + 2 * H);
                gru_update(&s, i, lbr);
            }
            store_y(&s, i, y, dirs, d);
        }
    }
}
