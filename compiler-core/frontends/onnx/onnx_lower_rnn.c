/* ONNX RNN, GRU and LSTM, unrolled over the (static) sequence into CU-IR
 * gemm, elementwise and slice ops: one step per time index and direction,
 * with the gate formulas of the ONNX operator specification.  Weights may
 * be run-time values.  Over a symbolic sequence (or batch), or with a
 * sequence_lens that is not the full length everywhere (rows of their own
 * lengths), the layer becomes one CU-IR rnn op (ir/ops_rnn.c) instead:
 * peepholes, sequence_lens, the plain RNN's tanh or relu; other
 * activations there are CV4xxx refusals naming the node. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { RNN_MAX_STEPS = 4096, RNN_MAX_GATES = 4 };

typedef struct rnn {
    onnx_ctx *c;
    int gates;              /* 1 RNN, 3 GRU (z r h), 4 LSTM (i o f c) */
    int64_t seq, batch, in, hid;
    int dirs;
    bool reverse;           /* direction "reverse" (one direction, last step first) */
    bool lbr;               /* GRU linear_before_reset */
    double clip;            /* 0: none */
    const char *act[2][3];  /* per direction: the CU-IR ops of f, g, h */
    cv_dtype dt;
    /* per direction, per gate: weights [hid, in], [hid, hid]; biases [hid] or NULL */
    cv_value *w[RNN_MAX_GATES], *r[RNN_MAX_GATES], *wb[RNN_MAX_GATES], *rb[RNN_MAX_GATES];
    cv_value *p[3];         /* LSTM peepholes i o f, [hid] or NULL */
} rnn;

static cv_value *reshape(onnx_ctx *c, cv_value *x, int rank, const int64_t *dims)
{
    cv_op *o = onnx_op(c, "reshape", &x, 1);
    if (o)
        cv_op_set_ints(o, "shape", dims, rank);
    return onnx_finish(c, o);
}

static cv_value *transpose(onnx_ctx *c, cv_value *x, int rank, const int64_t *perm)
{
    cv_op *o = onnx_op(c, "transpose", &x, 1);
    if (o)
        cv_op_set_ints(o, "perm", perm, rank);
    return onnx_finish(c, o);
}

static cv_value *concat(onnx_ctx *c, cv_value *const *v, int n, int64_t axis)
{
    if (n == 1)
        return v[0];
    cv_op *o = onnx_op(c, "concat", v, n);
    if (o)
        cv_op_set_int(o, "axis", axis);
    return onnx_finish(c, o);
}

/* a [batch, k] times b [n, k] transposed. */
static cv_value *gemm_bt(onnx_ctx *c, cv_value *a, cv_value *b)
{
    cv_value *ops[2] = {a, b};
    cv_op *o = onnx_op(c, "gemm", ops, 2);
    if (o)
        cv_op_set_int(o, "trans_b", 1);
    return onnx_finish(c, o);
}

static cv_value *add(onnx_ctx *c, cv_value *a, cv_value *b)
{
    return !a ? b : !b ? a : onnx_binary(c, "add", a, b);
}

/* Row d of a [dirs, ...] input, as rank-1 [n] or rank-2 [rows, cols]. */
static cv_value *dir_part(rnn *s, int i, int d, int64_t rows, int64_t cols)
{
    cv_value *v = onnx_in_value(s->c, i);
    int64_t dims[2] = {rows, cols};
    return v ? reshape(s->c, onnx_slice1(s->c, v, 0, d, d + 1), cols ? 2 : 1, dims) : NULL;
}

/* Splits direction d's weights and biases into per-gate values. */
static int load_direction(rnn *s, int d)
{
    onnx_ctx *c = s->c;
    int64_t h = s->hid, g = s->gates;
    cv_value *w = dir_part(s, 1, d, g * h, s->in), *r = dir_part(s, 2, d, g * h, h);
    cv_value *b = onnx_in(c, 3) ? dir_part(s, 3, d, 2 * g * h, 0) : NULL;
    cv_value *p = s->gates == 4 && onnx_in(c, 7) ? dir_part(s, 7, d, 3 * h, 0) : NULL;
    for (int k = 0; k < s->gates; k++) {
        s->w[k] = onnx_slice1(c, w, 0, k * h, (k + 1) * h);
        s->r[k] = onnx_slice1(c, r, 0, k * h, (k + 1) * h);
        s->wb[k] = b ? onnx_slice1(c, b, 0, k * h, (k + 1) * h) : NULL;
        s->rb[k] = b ? onnx_slice1(c, b, 0, (g + k) * h, (g + k + 1) * h) : NULL;
        if (!s->w[k] || !s->r[k] || (b && (!s->wb[k] || !s->rb[k])))
            return -1;
    }
    for (int k = 0; k < 3; k++)
        s->p[k] = p ? onnx_slice1(c, p, 0, k * h, (k + 1) * h) : NULL;
    return 0;
}

/* Activation `which` of direction d, after the clip. */
static cv_value *activate(rnn *s, int d, int which, cv_value *x)
{
    onnx_ctx *c = s->c;
    if (s->clip > 0 && which < 2) {
        cv_op *o = onnx_op(c, "clip", &x, 1);
        if (o) {
            cv_op_set_float(o, "min", -s->clip);
            cv_op_set_float(o, "max", s->clip);
        }
        x = onnx_finish(c, o);
    }
    return x ? onnx_unary(c, s->act[d][which], x) : NULL;
}

/* x W_k^T + h R_k^T + Wb_k + Rb_k (h NULL: the zero initial state). */
static cv_value *gate_in(rnn *s, int k, cv_value *x, cv_value *h, bool with_rb)
{
    cv_value *v = gemm_bt(s->c, x, s->w[k]);
    v = add(s->c, v, h ? gemm_bt(s->c, h, s->r[k]) : NULL);
    v = add(s->c, v, s->wb[k]);
    return with_rb ? add(s->c, v, s->rb[k]) : v;
}

static cv_value *mul(onnx_ctx *c, cv_value *a, cv_value *b) { return onnx_binary(c, "mul", a, b); }

/* One step of direction d: new h (and *cell for LSTM) from x_t. */
static cv_value *step(rnn *s, int d, cv_value *x, cv_value *h, cv_value **cell)
{
    onnx_ctx *c = s->c;
    if (s->gates == 1)
        return activate(s, d, 0, gate_in(s, 0, x, h, true));
    if (s->gates == 3) {
        cv_value *z = activate(s, d, 0, gate_in(s, 0, x, h, true));
        cv_value *r = activate(s, d, 0, gate_in(s, 1, x, h, true));
        cv_value *n;
        if (s->lbr) {
            cv_value *hr = h ? add(c, gemm_bt(c, h, s->r[2]), s->rb[2]) : s->rb[2];
            n = add(c, add(c, gemm_bt(c, x, s->w[2]), s->wb[2]), hr ? mul(c, r, hr) : NULL);
        } else {
            n = add(c, gemm_bt(c, x, s->w[2]), h ? gemm_bt(c, mul(c, r, h), s->r[2]) : NULL);
            n = add(c, add(c, n, s->wb[2]), s->rb[2]);
        }
        n = activate(s, d, 1, n);
        /* (1 - z) n + z h = n + z (h - n) */
        if (!h)
            return onnx_binary(c, "sub", n, mul(c, z, n));
        return add(c, n, mul(c, z, onnx_binary(c, "sub", h, n)));
    }
    cv_value *cp = *cell;
    cv_value *i = gate_in(s, 0, x, h, true), *f = gate_in(s, 2, x, h, true);
    if (cp && s->p[0])
        i = add(c, i, mul(c, s->p[0], cp));
    if (cp && s->p[2])
        f = add(c, f, mul(c, s->p[2], cp));
    i = activate(s, d, 0, i);
    f = activate(s, d, 0, f);
    cv_value *g = activate(s, d, 1, gate_in(s, 3, x, h, true));
    cv_value *cn = add(c, cp ? mul(c, f, cp) : NULL, mul(c, i, g));
    cv_value *o = gate_in(s, 1, x, h, true);
    if (s->p[1])
        o = add(c, o, mul(c, s->p[1], cn));
    o = activate(s, d, 0, o);
    *cell = cn;
    return mul(c, o, activate(s, d, 2, cn));
}

static int read_acts(rnn *s, const char *direction)
{
    onnx_ctx *c = s->c;
    static const char *const dflt[3] = {"Sigmoid", "Tanh", "Tanh"};
    int per = s->gates == 1 ? 1 : s->gates == 3 ? 2 : 3;
    const Onnx__AttributeProto *a = onnx_attr(c, "activations");
    if (a && a->n_strings != (size_t)(per * s->dirs))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "activations lists %zu functions, %s needs %d",
                        a->n_strings, direction, per * s->dirs);
    if (onnx_attr(c, "activation_alpha") || onnx_attr(c, "activation_beta"))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "activation_alpha/beta are not supported");
    for (int d = 0; d < s->dirs; d++)
        for (int k = 0; k < per; k++) {
            const char *name = s->gates == 1 ? "Tanh" : dflt[k];
            size_t n = strlen(name);
            if (a) {
                name = (const char *)a->strings[d * per + k].data;
                n = a->strings[d * per + k].len;
            }
            const char *op = n == 7 && !memcmp(name, "Sigmoid", 7) ? "sigmoid"
                           : n == 4 && !memcmp(name, "Tanh", 4)    ? "tanh"
                           : n == 4 && !memcmp(name, "Relu", 4)    ? "relu" : NULL;
            if (!op)
                return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "activation '%.*s' is not supported",
                                (int)(n < 64 ? n : 64), name);
            s->act[d][k] = op;
        }
    return 0;
}

static int read_shapes(rnn *s, int64_t layout)
{
    onnx_ctx *c = s->c;
    onnx_val *x = onnx_in(c, 0);
    if (!x || !onnx_in(c, 1) || !onnx_in(c, 2))
        return onnx_err(c, CV_E_ONNX_ARITY, "X, W and R are required");
    const cv_shape *sh = &x->type.shape;
    if (x->type.dtype != CV_F32 || sh->rank != 3 || !cv_shape_is_static(sh))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "X must be a float tensor of static rank-3 "
                        "shape");
    s->dt = x->type.dtype;
    s->seq = sh->d[layout ? 1 : 0].n;
    s->batch = sh->d[layout ? 0 : 1].n;
    s->in = sh->d[2].n;
    if (s->seq < 1 || s->seq > RNN_MAX_STEPS)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "sequence length %lld is outside 1..%d",
                        (long long)s->seq, RNN_MAX_STEPS);
    const onnx_const *lens = onnx_in(c, 4) ? onnx_in_const(c, 4, "sequence_lens") : NULL;
    if (onnx_in(c, 4) && !lens)
        return -1;
    for (int64_t i = 0; lens && i < lens->numel; i++)
        if ((lens->syms && lens->syms[i]) || onnx_const_i64(lens, i) != s->seq)
            return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "sequence_lens other than the full "
                            "sequence length are not supported");
    return 0;
}

static int read_attrs(rnn *s, int64_t *layout)
{
    onnx_ctx *c = s->c;
    const char *direction;
    int64_t lbr, input_forget;
    double clip;
    if (onnx_attr_int(c, "hidden_size", 0, &s->hid) < 0 ||
        onnx_attr_int(c, "layout", 0, layout) < 0 ||
        onnx_attr_int(c, "linear_before_reset", 0, &lbr) < 0 ||
        onnx_attr_int(c, "input_forget", 0, &input_forget) < 0 ||
        onnx_attr_float(c, "clip", 0, &clip) < 0 ||
        onnx_attr_string(c, "direction", "forward", &direction) < 0)
        return -1;
    if (s->hid < 1 || s->hid > (1 << 20) || *layout < 0 || *layout > 1)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "hidden_size and layout are required and in range");
    if (input_forget)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "input_forget is not supported");
    bool bidi = !strcmp(direction, "bidirectional");
    if (!bidi && strcmp(direction, "forward") && strcmp(direction, "reverse"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "direction '%s' is not one of forward, reverse, "
                        "bidirectional", direction);
    s->dirs = bidi ? 2 : 1;
    s->reverse = !strcmp(direction, "reverse");
    s->lbr = lbr != 0;
    s->clip = clip;
    return read_acts(s, direction);
}

/* The initial state of direction d from input i ([dirs, batch, hid]), or NULL. */
static cv_value *initial(rnn *s, int i, int d, int64_t layout)
{
    cv_value *v = onnx_in(s->c, i) ? onnx_in_value(s->c, i) : NULL;
    if (!v)
        return NULL;
    if (layout) {
        static const int64_t perm[3] = {1, 0, 2};
        v = transpose(s->c, v, 3, perm);
    }
    int64_t dims[2] = {s->batch, s->hid};
    return reshape(s->c, onnx_slice1(s->c, v, 0, d, d + 1), 2, dims);
}

/* Stacks per-direction states [batch, hid] into [dirs, batch, hid] (layout 0). */
static cv_value *stack_dirs(rnn *s, cv_value *const *v, int64_t layout)
{
    cv_value *parts[2];
    int64_t dims[3] = {1, s->batch, s->hid};
    for (int d = 0; d < s->dirs; d++)
        parts[d] = reshape(s->c, v[d], 3, dims);
    cv_value *r = concat(s->c, parts, s->dirs, 0);
    static const int64_t perm[3] = {1, 0, 2};
    return layout && r ? transpose(s->c, r, 3, perm) : r;
}

/* Zeros of shape [dirs, batch, hid] (batch maybe symbolic). */
static cv_value *zero_state(rnn *s, cv_dim batch)
{
    cv_dim dims[3] = {{s->dirs, NULL}, batch, {s->hid, NULL}};
    double zero = 0;
    cv_op *o = onnx_op(s->c, "constant", NULL, 0);
    if (o) {
        cv_op_set_floats(o, "value", &zero, 1);
        cv_op_set_dims(o, "shape", dims, 3);
    }
    return onnx_finish(s->c, o);
}

/* An LSTM or GRU over a symbolic sequence (or batch): one CU-IR rnn op
 * (ops_rnn.c), run step by step at run time, instead of the unrolling. */
/* Whether the rnn op takes this node's activations: the defaults, or for
 * the plain RNN tanh or relu, the same in both directions. */
static bool op_acts(const rnn *s)
{
    for (int d = 0; d < s->dirs; d++) {
        if (s->gates == 1 && (strcmp(s->act[d][0], s->act[0][0]) || !strcmp(s->act[d][0], "sigmoid")))
            return false;
        if (s->gates > 1 && (strcmp(s->act[d][0], "sigmoid") || strcmp(s->act[d][1], "tanh") ||
                             (s->gates == 4 && strcmp(s->act[d][2], "tanh"))))
            return false;
    }
    return true;
}

static int lower_symbolic(rnn *s, int64_t layout)
{
    onnx_ctx *c = s->c;
    onnx_val *xv = onnx_in(c, 0), *lens = onnx_in(c, 4);
    if (!onnx_in(c, 1) || !onnx_in(c, 2) || xv->type.dtype != CV_F32 ||
        xv->type.shape.rank != 3 || xv->type.shape.d[2].sym)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "over a symbolic sequence or with sequence_lens: "
                        "X must be f32 [seq, batch, input] with a static input size");
    if (!op_acts(s))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "over a symbolic sequence or with sequence_lens: "
                        "only the default activations (the plain RNN: Tanh or Relu, the same in "
                        "both directions)");
    if (lens && (lens->type.dtype != CV_I32 || lens->type.shape.rank != 1))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "sequence_lens must be an int32 tensor [batch]");
    static const int64_t perm[3] = {1, 0, 2}, yperm[4] = {2, 0, 1, 3};
    cv_value *x = onnx_in_value(c, 0);
    if (x && layout)
        x = transpose(c, x, 3, perm);
    cv_dim batch = xv->type.shape.d[layout ? 0 : 1];
    cv_value *ops[8] = {x, onnx_in_value(c, 1), onnx_in_value(c, 2), NULL, NULL, NULL, NULL, NULL};
    if (onnx_in(c, 3)) {
        ops[3] = onnx_in_value(c, 3);
    } else {
        int64_t bd[2] = {s->dirs, 2 * s->gates * s->hid};
        ops[3] = onnx_const_value(c, onnx_const_new(c, CV_F32, 2, bd), "bias");
    }
    int n_ops = s->gates == 4 ? 6 : 5;
    for (int i = 4; i < n_ops; i++) {
        cv_value *v = onnx_in(c, i + 1) ? onnx_in_value(c, i + 1) : zero_state(s, batch);
        ops[i] = v && layout && onnx_in(c, i + 1) ? transpose(c, v, 3, perm) : v;
    }
    bool peep = s->gates == 4 && onnx_in(c, 7);
    if (peep)
        ops[n_ops++] = onnx_in_value(c, 7);
    if (lens)
        ops[n_ops++] = onnx_in_value(c, 4);
    cv_op *o = onnx_op(c, "rnn", ops, n_ops);
    if (o) {
        cv_op_set_string(o, "cell", s->gates == 4 ? "lstm" : s->gates == 3 ? "gru" : "rnn");
        if (s->gates == 1 && !strcmp(s->act[0][0], "relu"))
            cv_op_set_string(o, "activation", "relu");
        if (peep)
            cv_op_set_int(o, "peepholes", 1);
        if (lens)
            cv_op_set_int(o, "lengths", 1);
        cv_op_set_string(o, "direction", s->dirs == 2 ? "bidirectional"
                                         : s->reverse ? "reverse" : "forward");
        if (s->lbr)
            cv_op_set_int(o, "linear_before_reset", 1);
        if (s->clip > 0)
            cv_op_set_float(o, "clip", s->clip);
    }
    cv_value *res[3] = {NULL, NULL, NULL};
    int n_res = s->gates == 4 ? 3 : 2;
    if (onnx_finish_n(c, o, n_res, res) < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n_res && rc == 0; i++) {
        cv_value *v = res[i];
        if (layout)
            v = i == 0 ? transpose(c, v, 4, yperm) : transpose(c, v, 3, perm);
        rc = onnx_bind_value(c, i, v);
    }
    return rc;
}

static bool static_x(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    return !x || cv_shape_is_static(&x->type.shape);
}

/* Whether sequence_lens is given and not known to be the full length of
 * every row (a run-time value, or rows of their own lengths). */
static bool partial_lens(onnx_ctx *c, int64_t layout)
{
    onnx_val *x = onnx_in(c, 0), *lens = onnx_in(c, 4);
    if (!lens)
        return false;
    const onnx_const *k = lens->c;
    if (!x || !k || x->type.shape.rank != 3 || x->type.shape.d[layout ? 1 : 0].sym)
        return true;
    for (int64_t i = 0; i < k->numel; i++)
        if ((k->syms && k->syms[i]) || onnx_const_i64(k, i) != x->type.shape.d[layout ? 1 : 0].n)
            return true;
    return false;
}

static int lower_rnn(onnx_ctx *c)
{
    const char *op = c->node->op_type;
    rnn s = {.c = c, .gates = !strcmp(op, "RNN") ? 1 : !strcmp(op, "GRU") ? 3 : 4};
    int64_t layout;
    if (read_attrs(&s, &layout) < 0)
        return -1;
    if (!static_x(c) || partial_lens(c, layout))
        return lower_symbolic(&s, layout);
    if (read_shapes(&s, layout) < 0)
        return -1;
    cv_value *x = onnx_in_value(c, 0);
    static const int64_t perm[3] = {1, 0, 2};
    if (x && layout)
        x = transpose(c, x, 3, perm);
    bool want_y = c->node->n_output > 0 && c->node->output[0][0];
    cv_value **ys = want_y ? cv_arena_alloc_array(c->a, (size_t)(s.seq * s.dirs), sizeof *ys)
                           : NULL;
    cv_value *last_h[2] = {NULL, NULL}, *last_c[2] = {NULL, NULL};
    int64_t xd[2] = {s.batch, s.in};
    for (int d = 0; x && d < s.dirs; d++) {
        if (load_direction(&s, d) < 0)
            return -1;
        bool rev = s.reverse || d == 1;
        cv_value *h = initial(&s, 5, d, layout);
        cv_value *cell = s.gates == 4 ? initial(&s, 6, d, layout) : NULL;
        for (int64_t i = 0; i < s.seq; i++) {
            int64_t t = rev ? s.seq - 1 - i : i;
            cv_value *xt = reshape(c, onnx_slice1(c, x, 0, t, t + 1), 2, xd);
            h = xt ? step(&s, d, xt, h, &cell) : NULL;
            if (!h)
                return -1;
            if (ys)
                ys[t * s.dirs + d] = h;
        }
        last_h[d] = h;
        last_c[d] = cell;
    }
    if (!x)
        return -1;
    cv_value *y = NULL;
    if (ys) {
        cv_value **rows = cv_arena_alloc_array(c->a, (size_t)s.seq, sizeof *rows);
        int64_t dims[4] = {1, 1, s.batch, s.hid};
        for (int64_t t = 0; rows && t < s.seq; t++) {
            cv_value *parts[2];
            for (int d = 0; d < s.dirs; d++)
                parts[d] = reshape(c, ys[t * s.dirs + d], 4, dims);
            rows[t] = concat(c, parts, s.dirs, 1);
        }
        y = rows ? concat(c, rows, (int)s.seq, 0) : NULL;
        static const int64_t yperm[4] = {2, 0, 1, 3};
        if (y && layout)
            y = transpose(c, y, 4, yperm);
    }
    int rc = onnx_bind_value(c, 0, y);
    rc |= onnx_bind_value(c, 1, stack_dirs(&s, last_h, layout));
    if (s.gates == 4)
        rc |= onnx_bind_value(c, 2, stack_dirs(&s, last_c, layout));
    return rc;
}

static const onnx_op_entry entries[] = {
    {"RNN", 7, lower_rnn, "slice reshape transpose concat gemm add sigmoid tanh relu clip rnn",
     0x10u},
    {"GRU", 7, lower_rnn, "slice reshape transpose concat gemm add sub mul sigmoid tanh relu clip "
     "rnn", 0x10u},
    {"LSTM", 7, lower_rnn, "slice reshape transpose concat gemm add mul sigmoid tanh relu clip rnn",
     0x10u},
};

const onnx_op_family onnx_ops_rnn = {entries, sizeof entries / sizeof entries[0]};
