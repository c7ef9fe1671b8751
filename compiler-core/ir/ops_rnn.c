/* Op family fragment: recurrent layers over a sequence whose length may be
 * symbolic (issue 26: an LSTM over a dynamic number of frames), or whose
 * rows have lengths of their own.  The ONNX importer unrolls a static
 * sequence into gemm and elementwise ops; a symbolic one (or one with
 * sequence_lens) becomes this op, which the interpreter runs step by step
 * and native code hands to the runtime (backend/codegen_rnn.c,
 * runtime/cvrt_rnn.c).
 *
 * rnn(x [T,B,I], w [D,G*H,I], r [D,G*H,H], b [D,2*G*H], h0 [D,B,H], c0 [D,B,H]?,
 *     p [D,3*H]?, lens i32 [B]?)
 *   -> y [T,D,B,H], y_h [D,B,H] (, y_c [D,B,H] for an LSTM)
 *   cell      STRING "lstm" (G = 4, gates i o f c) | "gru" (G = 3, z r h)
 *             | "rnn" (G = 1)
 *   direction STRING "forward" (default) | "reverse" | "bidirectional" (D = 2)
 *   activation STRING "tanh" (default) | "relu": the plain RNN's
 *   linear_before_reset INT = 0 (GRU)
 *   clip      FLOAT = 0 (none): gate pre-activations clipped to [-clip, clip]
 *   peepholes INT = 0: an LSTM's p (i o f) follows c0
 *   lengths   INT = 0: the last operand is sequence_lens: row b runs
 *             lens[b] steps (clamped to 0..T; backward from lens[b]-1 in
 *             the reverse direction), y is zero past them and y_h / y_c
 *             are the state after row b's last step (h0 / c0 for 0)
 * The ONNX operator formulas with the default activations (sigmoid, tanh,
 * tanh; tanh or relu for the plain RNN); c0 is required for an LSTM. */
#include <math.h>
#include <string.h>

#include "compiler-core/ir/ops_nnutil.h"
#include "compiler-core/backend/codegen.h"

static int rnn_gates(const cv_op *op)
{
    const char *cell = cv_op_string(op, "cell", "");
    return !strcmp(cell, "lstm") ? 4 : !strcmp(cell, "gru") ? 3 : !strcmp(cell, "rnn") ? 1 : 0;
}

static int rnn_dirs(const cv_op *op)
{
    const char *d = cv_op_string(op, "direction", "forward");
    return !strcmp(d, "bidirectional") ? 2 : (!strcmp(d, "forward") || !strcmp(d, "reverse"))
                                             ? 1 : 0;
}

static bool dim_is(cv_dim d, int64_t n) { return !d.sym && d.n == n; }

/* The optional operands: peepholes at *p, lengths at *lens (-1: none). */
static int rnn_extras(const cv_op *op, int g, int *p, int *lens)
{
    int next = g == 4 ? 6 : 5;
    bool peep = cv_op_int(op, "peepholes", 0) != 0;
    *p = peep ? next : -1;
    *lens = cv_op_int(op, "lengths", 0) ? next + peep : -1;
    return next + peep + (*lens >= 0);
}

static int rnn_check_attrs(cv_infer_ctx *c, int g)
{
    const char *act = cv_op_string(c->op, "activation", "tanh");
    if ((strcmp(act, "tanh") && strcmp(act, "relu")) || (g != 1 && strcmp(act, "tanh")))
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "rnn: activation '%s': a plain rnn cell takes "
                              "tanh or relu, lstm and gru their defaults", act);
    if (g != 4 && cv_op_int(c->op, "peepholes", 0))
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "rnn: only an lstm has peepholes");
    return 0;
}

static int rnn_infer(cv_infer_ctx *c)
{
    int g = rnn_gates(c->op), dirs = rnn_dirs(c->op), pi, li;
    if (!g || !dirs)
        return cv_infer_error(c, CV_E_INVALID_SHAPE_ATTRIBUTE, "rnn: cell must be lstm, gru or rnn and direction "
                              "forward, reverse or bidirectional");
    if (rnn_check_attrs(c, g))
        return -1;
    int n_in = rnn_extras(c->op, g, &pi, &li);
    if (c->n_in != n_in || c->n_out != (g == 4 ? 3 : 2))
        return cv_infer_error(c, CV_E_OPERAND_COUNT, "rnn: this %s takes %d operands and makes %d results",
                              cv_op_string(c->op, "cell", ""), n_in, g == 4 ? 3 : 2);
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].dtype != (i == li ? CV_I32 : CV_F32))
            return cv_infer_error(c, CV_E_DTYPE_MISMATCH, "rnn: operand %d must be %s", i,
                                  i == li ? "i32 (sequence_lens)" : "f32");
    const char *what[6] = {"x", "w", "r", "b", "h0", "c0"};
    for (int i = 0; i < c->n_in; i++)
        if (cv_nn_rank(c, i, i == pi || i == 3 ? 2 : i == li ? 1 : 3,
                       i == pi ? "p" : i == li ? "sequence_lens" : what[i]))
            return -1;
    const cv_shape *x = &c->in[0].shape, *w = &c->in[1].shape, *r = &c->in[2].shape;
    cv_dim t = x->d[0], b = x->d[1], in = x->d[2], hid = r->d[2];
    if (hid.sym || w->d[1].sym || !dim_is(w->d[0], dirs) || !dim_is(w->d[1], g * hid.n) ||
        !cv_dim_equal(w->d[2], in) || !dim_is(r->d[0], dirs) || !dim_is(r->d[1], g * hid.n) ||
        !dim_is(c->in[3].shape.d[0], dirs) || !dim_is(c->in[3].shape.d[1], 2 * g * hid.n))
        return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "rnn: w, r and b must be [%d,%d*H,I], [%d,%d*H,H] and "
                              "[%d,%d*H] with static H", dirs, g, dirs, g, dirs, 2 * g);
    if ((pi >= 0 && (!dim_is(c->in[pi].shape.d[0], dirs) || !dim_is(c->in[pi].shape.d[1], 3 * hid.n))) ||
        (li >= 0 && !cv_dim_equal(c->in[li].shape.d[0], b)))
        return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "rnn: p must be [%d,%lld] and sequence_lens [B]", dirs,
                              3 * (long long)hid.n);
    for (int i = 4; i < (g == 4 ? 6 : 5); i++) {
        const cv_shape *s = &c->in[i].shape;
        if (!dim_is(s->d[0], dirs) || !cv_dim_equal(s->d[1], b) || !cv_dim_equal(s->d[2], hid)) {
            char got[96], bs[48];
            cv_type_format(&c->in[i], got, sizeof got);
            cv_dim_format(b, bs, sizeof bs);
            return cv_infer_error(c, CV_E_BROADCAST_MISMATCH, "rnn: %s must be [%d,%s,%lld], got %s", what[i], dirs,
                                  bs, (long long)hid.n, got);
        }
    }
    cv_dim dd = {dirs, NULL};
    c->out[0] = (cv_type){CV_F32, {.rank = 4, .d = {t, dd, b, hid}}};
    for (int i = 1; i < c->n_out; i++)
        c->out[i] = (cv_type){CV_F32, {.rank = 3, .d = {dd, b, hid}}};
    return 0;
}

static double sigm(double v) { return 1 / (1 + exp(-v)); }

typedef struct rnn_run {
    int g, lbr;
    bool relu;
    const double *p;            /* peepholes of one direction, or NULL */
    int64_t b, in, hid;
    double clip;
    const double *w, *r, *bias;   /* of one direction */
} rnn_run;

static double clipv(const rnn_run *s, double v)
{
    return s->clip > 0 ? fmin(fmax(v, -s->clip), s->clip) : v;
}

/* pre[k][j] = x.W_kj + Wb_kj (+ h.R_kj + Rb_kj unless GRU's reset-gated n). */
static double pre(const rnn_run *s, int k, int64_t j, const double *x, const double *h,
                  bool with_r)
{
    int64_t row = k * s->hid + j;
    double v = s->bias[row];
    for (int64_t q = 0; q < s->in; q++)
        v += x[q] * s->w[row * s->in + q];
    if (with_r) {
        v += s->bias[s->g * s->hid + row];
        for (int64_t q = 0; q < s->hid; q++)
            v += h[q] * s->r[row * s->hid + q];
    }
    return v;
}

/* pre, clipped when it is a whole gate's. */
static double gate(const rnn_run *s, int k, int64_t j, const double *x, const double *h,
                   bool with_r)
{
    double v = pre(s, k, j, x, h, with_r);
    return with_r ? clipv(s, v) : v;
}

/* One step for one batch row: h (and cell) updated in place; tmp holds 4*H. */
static void rnn_step(const rnn_run *s, const double *x, double *h, double *cell, double *tmp)
{
    int64_t H = s->hid;
    double *nh = tmp, *aux = tmp + H, *rv = tmp + 2 * H, *zv = tmp + 3 * H;
    if (s->g == 1) {
        for (int64_t j = 0; j < H; j++) {
            double v = gate(s, 0, j, x, h, true);
            nh[j] = s->relu ? fmax(v, 0) : tanh(v);
        }
        memcpy(h, nh, sizeof *h * (size_t)H);
        return;
    }
    if (s->g == 4) {
        const double *p = s->p;
        for (int64_t j = 0; j < H; j++) {
            double i = sigm(clipv(s, pre(s, 0, j, x, h, true) + (p ? p[j] * cell[j] : 0)));
            double f = sigm(clipv(s, pre(s, 2, j, x, h, true) + (p ? p[2 * H + j] * cell[j] : 0)));
            double cc = tanh(gate(s, 3, j, x, h, true));
            aux[j] = f * cell[j] + i * cc;
            double o = sigm(clipv(s, pre(s, 1, j, x, h, true) + (p ? p[H + j] * aux[j] : 0)));
            nh[j] = o * tanh(aux[j]);
        }
        memcpy(cell, aux, sizeof *cell * (size_t)H);
        memcpy(h, nh, sizeof *h * (size_t)H);
        return;
    }
    for (int64_t j = 0; j < H; j++) {
        zv[j] = sigm(gate(s, 0, j, x, h, true));
        rv[j] = sigm(gate(s, 1, j, x, h, true));
    }
    for (int64_t j = 0; j < H; j++) {
        int64_t row = 2 * H + j;
        double rb = s->bias[s->g * H + row], acc = 0;
        for (int64_t q = 0; q < H; q++)   /* h R^T, or (r . h) R^T before the reset */
            acc += (s->lbr ? h[q] : rv[q] * h[q]) * s->r[row * H + q];
        double n = gate(s, 2, j, x, h, false) + (s->lbr ? rv[j] * (acc + rb) : acc + rb);
        if (s->clip > 0)
            n = fmin(fmax(n, -s->clip), s->clip);
        n = tanh(n);
        nh[j] = (1 - zv[j]) * n + zv[j] * h[j];
    }
    memcpy(h, nh, sizeof *h * (size_t)H);
}

/* Row bi's number of steps: sequence_lens clamped to 0..T, else T. */
static int64_t rnn_len(const cv_tensor *lens, int64_t bi, int64_t T)
{
    if (!lens)
        return T;
    double v = cv_tensor_get(lens, bi);
    return v < 0 ? 0 : v > (double)T ? T : (int64_t)v;
}

static int rnn_eval(cv_eval_ctx *c)
{
    const cv_op *op = c->op;
    const cv_tensor *x = c->in[0];
    int g = rnn_gates(op), dirs = rnn_dirs(op), pi, li;
    rnn_extras(op, g, &pi, &li);
    int64_t T = x->dims[0], B = x->dims[1], I = x->dims[2], H = c->in[2]->dims[2];
    bool reverse = !strcmp(cv_op_string(op, "direction", "forward"), "reverse");
    double *xs = cv_tensor_to_f64(x, c->scratch), *w = cv_tensor_to_f64(c->in[1], c->scratch);
    double *r = cv_tensor_to_f64(c->in[2], c->scratch);
    double *bias = cv_tensor_to_f64(c->in[3], c->scratch);
    double *h0 = cv_tensor_to_f64(c->in[4], c->scratch);
    double *c0 = g == 4 ? cv_tensor_to_f64(c->in[5], c->scratch) : NULL;
    double *p = pi >= 0 ? cv_tensor_to_f64(c->in[pi], c->scratch) : NULL;
    double *tmp = cv_arena_alloc_array(c->scratch, (size_t)(4 * H + 1), sizeof *tmp);
    if (!xs || !w || !r || !bias || !h0 || (g == 4 && !c0) || (pi >= 0 && !p) || !tmp)
        return cv_nn_eval_error(c, CV_E_OUT_OF_MEMORY, "rnn: out of memory");
    for (int64_t i = 0; i < c->out[0].numel; i++)
        cv_tensor_set(&c->out[0], i, 0);
    for (int d = 0; d < dirs; d++) {
        rnn_run s = {.g = g, .lbr = (int)cv_op_int(op, "linear_before_reset", 0), .b = B,
                     .in = I, .hid = H, .clip = cv_op_float(op, "clip", 0),
                     .relu = !strcmp(cv_op_string(op, "activation", "tanh"), "relu"),
                     .p = p ? p + d * 3 * H : NULL,
                     .w = w + d * g * H * I, .r = r + d * g * H * H, .bias = bias + d * 2 * g * H};
        for (int64_t bi = 0; bi < B; bi++) {
            double *h = h0 + (d * B + bi) * H, *cell = c0 ? c0 + (d * B + bi) * H : NULL;
            int64_t L = rnn_len(li >= 0 ? c->in[li] : NULL, bi, T);
            for (int64_t i = 0; i < L; i++) {
                int64_t t = (reverse || d == 1) ? L - 1 - i : i;
                rnn_step(&s, xs + (t * B + bi) * I, h, cell, tmp);
                for (int64_t j = 0; j < H; j++)
                    cv_tensor_set(&c->out[0], ((t * dirs + d) * B + bi) * H + j, h[j]);
            }
            for (int64_t j = 0; j < H; j++) {
                cv_tensor_set(&c->out[1], (d * B + bi) * H + j, h[j]);
                if (g == 4)
                    cv_tensor_set(&c->out[2], (d * B + bi) * H + j, cell[j]);
            }
        }
    }
    return 0;
}

static const cv_attr_schema rnn_attrs[] = {
    {"cell", CV_ATTR_STRING, true},
    {"direction", CV_ATTR_STRING, false},
    {"linear_before_reset", CV_ATTR_INT, false},
    {"clip", CV_ATTR_FLOAT, false},
    {"activation", CV_ATTR_STRING, false},
    {"peepholes", CV_ATTR_INT, false},
    {"lengths", CV_ATTR_INT, false},
    {NULL, CV_ATTR_NONE, false},
};

static const cv_op_def defs[] = {
    {"rnn", 5, 8, 2, 3, rnn_attrs, rnn_infer, rnn_eval, cv_cg_rnn, 0},
};

const cv_op_family cv_ops_rnn = {defs, (int)(sizeof defs / sizeof defs[0])};
