/* LayerNorm, GELU and swish recognition (issues 26, 30): the decomposed
 * forms that exporters write below opset 17 become one layer_norm, gelu,
 * silu or hard_swish op, so that each runs as one pass over its tensor
 * instead of two to nine (and a swish after a convolution fuses into its
 * kernel's store: x has two uses in mul(x, sigmoid(x)), so the chain could
 * not).
 *
 *   m = reduce_mean(x, axes=[-1], keepdims=1)
 *   d = sub(x, m)
 *   v = reduce_mean(pow(d, 2) | mul(d, d), axes=[-1], keepdims=1)
 *   n = div(d, sqrt(add(v, eps)))
 *   y = add(mul(n, gamma), beta)            -> layer_norm(x, gamma, beta) {epsilon=eps}
 *                                             (beta optional)
 *   GELU, erf form:  mul(mul(x, add(erf(div(x, sqrt2) | mul(x, 1/sqrt2)), 1)), 0.5)
 *                    or mul(mul(x, 0.5), add(erf(..), 1))        -> gelu(x)
 *   GELU, tanh form: the same around
 *                    tanh(mul(add(x, mul(pow(x, 3), 0.044715)), sqrt(2/pi)))
 *                                                               -> gelu(x) {approximate="tanh"}
 *   mul(x, sigmoid(x))                                           -> silu(x)
 *   mul(x, hard_sigmoid(x) {alpha=1/6, beta=1/2})                -> hard_swish(x)
 * Operands of commutative ops in either order; constants are f32 scalars
 * within 1e-6 (relative) of the value; every intermediate has no other use.
 * The new op takes the last op's place; dce drops the rest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

typedef struct nf_ctx {
    cv_func *f;
    int *uses;
    cv_op **user;           /* the last op using each value (the only one when uses is 1) */
} nf_ctx;

static bool scalar_is(const cv_value *v, double want)
{
    if (!v || v->kind != CV_VAL_PARAM || !v->param || !v->param->data ||
        v->type.dtype != CV_F32 || cv_shape_numel(&v->type.shape) != 1 ||
        v->param->nbytes != sizeof(float))
        return false;
    float x;
    memcpy(&x, v->param->data, sizeof x);
    return fabs((double)x - want) <= 1e-6 * fabs(want);
}

static bool scalar_of(const cv_value *v, double *out)
{
    if (!v || v->kind != CV_VAL_PARAM || !v->param || !v->param->data ||
        v->type.dtype != CV_F32 || cv_shape_numel(&v->type.shape) != 1 ||
        v->param->nbytes != sizeof(float))
        return false;
    float x;
    memcpy(&x, v->param->data, sizeof x);
    *out = x;
    return true;
}

/* For a binary op, the operand that is not `known` (NULL when neither or
 * both are). */
static cv_value *other(const cv_op *op, const cv_value *known)
{
    if (op->n_operands != 2)
        return NULL;
    if (op->operands[0] == known && op->operands[1] != known)
        return op->operands[1];
    if (op->operands[1] == known && op->operands[0] != known)
        return op->operands[0];
    return NULL;
}

/* The single user of v when it is an op called `name`. */
static cv_op *only_user(const nf_ctx *c, const cv_value *v, const char *name)
{
    cv_op *u = c->uses[v->id] == 1 ? c->user[v->id] : NULL;
    return u && u->def && strcmp(u->def->name, name) == 0 ? u : NULL;
}

/* mul(a, s) or mul(s, a) with s the scalar `k`: returns a. */
static cv_value *mul_by(const cv_value *v, double k)
{
    if (!cv_value_is(v, CV_OP_MUL))
        return NULL;
    const cv_op *m = v->def;
    if (scalar_is(m->operands[1], k))
        return m->operands[0];
    if (scalar_is(m->operands[0], k))
        return m->operands[1];
    return NULL;
}

static bool last_axis_mean(const cv_op *op)
{
    int64_t axes[CV_MAX_RANK + 1];
    int rank = op->operands[0]->type.shape.rank;
    return op->def && cv_op_is(op, CV_OP_REDUCE_MEAN) &&
           cv_op_ints(op, "axes", axes, CV_MAX_RANK + 1) == 1 &&
           (axes[0] == -1 || axes[0] == rank - 1) && cv_op_int(op, "keepdims", 1) == 1;
}

/* ---- rewriting ----------------------------------------------------------- */

/* Puts the finished op `op` at `last`'s place; its result replaces last's
 * when the types agree.  Returns 1 when it did. */
static int replace(cv_func *f, cv_op *op, cv_op *last)
{
    cv_pass_merge_locs(op, last);
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_op_finish(op, 1, &quiet);
    cv_diag_free(&quiet);
    cv_pass_move_last_op(f, last->id);
    if (rc || !cv_type_equal(&op->results[0]->type, &last->results[0]->type))
        return 0;
    cv_pass_replace_uses(f, last->results[0], op->results[0]);
    return 1;
}

/* ---- LayerNorm ----------------------------------------------------------- */

/* From the first reduce_mean m1 = reduce_mean(x). */
static int layer_norm(nf_ctx *c, cv_op *m1)
{
    if (!last_axis_mean(m1) || m1->results[0]->type.dtype != CV_F32)
        return 0;
    cv_value *x = m1->operands[0], *mean = m1->results[0];
    cv_op *sub = only_user(c, mean, "sub");
    if (!sub || sub->operands[0] != x || sub->operands[1] != mean)
        return 0;
    cv_value *d = sub->results[0];
    /* d feeds the square and the division: two or three uses (mul(d, d)). */
    cv_op *sq = NULL, *dv = NULL;
    for (int i = 0; i < c->f->n_ops; i++) {
        cv_op *o = c->f->ops[i];
        for (int k = 0; k < o->n_operands; k++)
            if (o->operands[k] == d && o->def) {
                if (cv_op_is(o, CV_OP_DIV) && k == 0)
                    dv = o;
                else if ((cv_op_is(o, CV_OP_POW) && k == 0 && scalar_is(o->operands[1], 2)) ||
                         (cv_op_is(o, CV_OP_MUL) && o->operands[0] == d && o->operands[1] == d))
                    sq = o;
            }
    }
    int d_uses = sq && cv_op_is(sq, CV_OP_MUL) ? 3 : 2;
    if (!sq || !dv || c->uses[d->id] != d_uses)
        return 0;
    cv_op *m2 = only_user(c, sq->results[0], "reduce_mean");
    if (!m2 || !last_axis_mean(m2))
        return 0;
    cv_op *ae = only_user(c, m2->results[0], "add");
    double eps;
    if (!ae || !scalar_of(other(ae, m2->results[0]), &eps) || !(eps >= 0))
        return 0;
    cv_op *sr = only_user(c, ae->results[0], "sqrt");
    if (!sr || c->uses[sr->results[0]->id] != 1 || c->user[sr->results[0]->id] != dv ||
        dv->operands[1] != sr->results[0])
        return 0;
    cv_op *mg = only_user(c, dv->results[0], "mul");
    cv_value *gamma = mg ? other(mg, dv->results[0]) : NULL;
    /* gamma and beta must broadcast to the normalised axis alone (the
     * shape function decides; replace() keeps the chain otherwise). */
    if (!gamma || gamma->type.shape.rank > 1)
        return 0;
    cv_op *last = mg, *ab = only_user(c, mg->results[0], "add");
    cv_value *beta = ab ? other(ab, mg->results[0]) : NULL;
    if (beta && beta->type.shape.rank <= 1)
        last = ab;
    else
        beta = NULL;
    cv_value *ops[3] = {x, gamma, beta};
    cv_op *ln = cv_op_new(c->f, "layer_norm", ops, beta ? 3 : 2);
    if (!ln)
        return -1;
    cv_op_set_int(ln, "axis", -1);
    cv_op_set_float(ln, "epsilon", eps);
    return replace(c->f, ln, last);
}

/* ---- GELU ---------------------------------------------------------------- */

/* From add(t, 1) where t is erf(x/sqrt2) or the tanh form's tanh: the
 * final op of 0.5 * x * (1 + t), or NULL. */
static cv_op *gelu_tail(nf_ctx *c, cv_op *a1, cv_value *x)
{
    cv_value *p = a1->results[0];
    cv_op *m = only_user(c, p, "mul");
    cv_value *o = m ? other(m, p) : NULL;
    if (!o)
        return NULL;
    if (o == x) {                         /* (x * (1 + t)) * 0.5 */
        cv_op *h = only_user(c, m->results[0], "mul");
        return h && other(h, m->results[0]) && scalar_is(other(h, m->results[0]), 0.5) ? h : NULL;
    }
    /* (0.5 * x) * (1 + t), the half used here alone */
    return c->uses[o->id] == 1 && mul_by(o, 0.5) == x ? m : NULL;
}

static int gelu(nf_ctx *c, cv_op *t)
{
    bool tanh_form = cv_op_is(t, CV_OP_TANH);
    cv_value *arg = t->operands[0], *x = NULL;
    if (t->results[0]->type.dtype != CV_F32 || c->uses[arg->id] != 1)
        return 0;
    if (!tanh_form) {
        if (cv_value_is(arg, CV_OP_DIV) && scalar_is(arg->def->operands[1], M_SQRT2))
            x = arg->def->operands[0];
        else
            x = mul_by(arg, M_SQRT1_2);
    } else {
        /* sqrt(2/pi) * (x + 0.044715 * x^3) */
        cv_value *s = mul_by(arg, sqrt(2 / M_PI));
        if (!s || !cv_value_is(s, CV_OP_ADD) || c->uses[s->id] != 1)
            return 0;
        for (int k = 0; k < 2 && !x; k++) {
            cv_value *cube = mul_by(s->def->operands[1 - k], 0.044715);
            cv_value *cand = s->def->operands[k];
            if (cube && c->uses[s->def->operands[1 - k]->id] == 1 && c->uses[cube->id] == 1 &&
                cv_value_is(cube, CV_OP_POW) && cube->def->operands[0] == cand &&
                scalar_is(cube->def->operands[1], 3))
                x = cand;
        }
    }
    if (!x || x->type.dtype != CV_F32)
        return 0;
    cv_op *a1 = only_user(c, t->results[0], "add");
    if (!a1 || !scalar_is(other(a1, t->results[0]), 1))
        return 0;
    cv_op *last = gelu_tail(c, a1, x);
    if (!last)
        return 0;
    cv_op *g = cv_op_new(c->f, "gelu", &x, 1);
    if (!g)
        return -1;
    if (tanh_form)
        cv_op_set_string(g, "approximate", "tanh");
    return replace(c->f, g, last);
}

/* ---- swish --------------------------------------------------------------- */

/* From s = sigmoid(x) or hard_sigmoid(x): mul(x, s) becomes silu(x) or
 * hard_swish(x) (torch writes Hardswish below opset 14 as x * HardSigmoid(x)
 * with alpha 1/6). */
static int swish(nf_ctx *c, cv_op *s)
{
    bool hard = cv_op_is(s, CV_OP_HARD_SIGMOID);
    cv_value *x = s->operands[0];
    if (x->type.dtype != CV_F32 ||
        (hard && (fabs(cv_op_float(s, "alpha", 0.2) - 1.0 / 6) > 1e-6 / 6 ||
                  fabs(cv_op_float(s, "beta", 0.5) - 0.5) > 0.5e-6)))
        return 0;
    cv_op *m = only_user(c, s->results[0], "mul");
    if (!m || other(m, s->results[0]) != x)
        return 0;
    cv_op *n = cv_op_new(c->f, hard ? "hard_swish" : "silu", &x, 1);
    return n ? replace(c->f, n, m) : -1;
}

/* ---- driver -------------------------------------------------------------- */

static int index_uses(nf_ctx *c)
{
    free(c->uses);
    free(c->user);
    c->uses = cv_pass_count_uses(c->f);
    c->user = calloc((size_t)c->f->n_values + 1, sizeof *c->user);
    if (!c->uses || !c->user)
        return -1;
    for (int i = 0; i < c->f->n_ops; i++)
        for (int k = 0; k < c->f->ops[i]->n_operands; k++)
            c->user[c->f->ops[i]->operands[k]->id] = c->f->ops[i];
    return 0;
}

int cv_pass_norm_fuse(cv_func *f, int *layer_norms, int *gelus, int *swishes, cv_diag *d)
{
    nf_ctx c = {.f = f};
    *layer_norms = *gelus = *swishes = 0;
    int rc = index_uses(&c);
    for (int i = 0; rc == 0 && i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        if (!op->def)
            continue;
        int r = 0;
        if (cv_op_is(op, CV_OP_REDUCE_MEAN) && (r = layer_norm(&c, op)) > 0)
            (*layer_norms)++;
        else if ((cv_op_is(op, CV_OP_ERF) || cv_op_is(op, CV_OP_TANH)) &&
                 (r = gelu(&c, op)) > 0)
            (*gelus)++;
        else if ((cv_op_is(op, CV_OP_SIGMOID) || cv_op_is(op, CV_OP_HARD_SIGMOID)) &&
                 (r = swish(&c, op)) > 0)
            (*swishes)++;
        if (r < 0 || (r > 0 && index_uses(&c)))
            rc = -1;
    }
    free(c.uses);
    free(c.user);
    if (rc)
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span,
                      "out of memory fusing layer norms, GELUs and swishes");
    return rc;
}
