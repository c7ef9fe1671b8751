/* Attention fusion (issue 26): the chain that exporters emit for scaled
 * dot-product attention becomes one attention op (ops_attention.c):
 *
 *   s = matmul(q, kT)                 kT = transpose(k, [0,1,3,2]) or
 *                                          transpose(x, [0,2,3,1]) (k = x as [B,S,H,D])
 *   s = div(s, c) | mul(s, c)         optional, c a scalar constant
 *   s = add(s, mask) | add(mask, s)   optional, mask broadcasting to s
 *   s = where(tril, s, fill)          optional: a constant lower-triangular
 *                                     condition and a constant fill <= -1e4
 *                                     (GPT-2's causal mask) -> causal = 1;
 *       where(masked, fill, s)        or torch's masked_fill: the strict upper
 *                                     triangle, or over symbolic lengths
 *                                     equal(window, 0) of a lower-triangular
 *                                     table gathered by aranges (nanoGPT's
 *                                     bias[:, :, P:P+T, :P+T])
 *   p = softmax(s, axis=-1)
 *   y = matmul(p, v)
 *
 * q, k and v that are transpose(x, [0,2,1,3]) of a projection's [B,S,H,D]
 * are read in place (bshd flags), and so is a result whose one use is that
 * transpose back.  q may be scaled before the product instead (q / c).
 * torch's nn.MultiheadAttention exports the chain at rank 3 over [B*H, S, D]
 * (transposes [1,0,2] of [S, B*H, D], kT by [1,2,0]): it becomes the same op
 * on a batch of 1 with B*H heads, between unsqueeze and squeeze of axis 0.  Each link of the chain must have no other use; anything
 * else leaves the ops as they are.  Runs after cse, before dce (which drops
 * the chain's dead ops). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

typedef struct att_match {
    cv_value *q, *k, *v, *mask;
    int64_t bshd[4];
    double scale;           /* 1 when the chain does not scale (not the op's default) */
    bool causal;
    cv_op *pv;              /* the final matmul */
    cv_op *out_t;           /* the transpose of the result absorbed, or NULL */
    bool rank3;             /* torch's [B*H, S, D] chain: B*H heads of a batch of 1 */
} att_match;

static bool perm_is(const cv_op *op, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t p[CV_MAX_RANK + 1];
    return cv_op_ints(op, "perm", p, CV_MAX_RANK + 1) == 4 && p[0] == a && p[1] == b &&
           p[2] == c && p[3] == d;
}

/* The single f32 value of a constant (any shape of one element). */
static bool scalar_const(const cv_value *v, double *out)
{
    if (v->kind != CV_VAL_PARAM || !v->param || !v->param->data || v->type.dtype != CV_F32 ||
        cv_shape_numel(&v->type.shape) != 1 || v->param->nbytes != sizeof(float))
        return false;
    float x;
    memcpy(&x, v->param->data, sizeof x);
    *out = x;
    return true;
}

/* A [.., Sq, Sk] bool constant with 1 exactly where j <= i + Sk - Sq
 * (keep), or exactly where j > i + Sk - Sq (!keep: the masked entries),
 * leading dims all 1. */
static bool is_tril(const cv_value *v, int64_t sq, int64_t sk, bool keep)
{
    const cv_shape *s = &v->type.shape;
    if (v->kind != CV_VAL_PARAM || !v->param || !v->param->data || v->type.dtype != CV_BOOL ||
        s->rank < 2 || !cv_shape_is_static(s) || s->d[s->rank - 2].n != sq ||
        s->d[s->rank - 1].n != sk || cv_shape_numel(s) != sq * sk ||
        v->param->nbytes != (size_t)(sq * sk))
        return false;
    const uint8_t *b = v->param->data;
    for (int64_t i = 0; i < sq; i++)
        for (int64_t j = 0; j < sk; j++)
            if ((b[i * sk + j] != 0) != ((j <= i + sk - sq) == keep))
                return false;
    return true;
}

/* A constant [1.., M, M'] (f32 or bool) nonzero exactly where j <= i. */
static bool is_tril_table(const cv_value *v)
{
    const cv_shape *s = &v->type.shape;
    size_t es = v->type.dtype == CV_F32 ? 4 : v->type.dtype == CV_BOOL ? 1 : 0;
    if (v->kind != CV_VAL_PARAM || !v->param || !v->param->data || !es || s->rank < 2 ||
        !cv_shape_is_static(s))
        return false;
    int64_t rows = s->d[s->rank - 2].n, cols = s->d[s->rank - 1].n;
    if (cv_shape_numel(s) != rows * cols || v->param->nbytes != (size_t)(rows * cols) * es)
        return false;
    const uint8_t *b = v->param->data;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            float f = 0;
            if (es == 4)
                memcpy(&f, b + (i * cols + j) * 4, 4);
            if ((es == 4 ? f != 0 : b[i * cols + j] != 0) != (j <= i))
                return false;
        }
    return true;
}

/* The arange r gathers by: its start (length and delta 1 checked). */
static bool range_window(const cv_value *r, cv_dim len, cv_dim *start)
{
    cv_dim l[2], st[2] = {{0, NULL}};
    if (!cv_value_is(r, CV_OP_ARANGE) || cv_op_int(r->def, "delta", 1) != 1 ||
        cv_op_dims(r->def, "length", l, 2) != 1 || cv_op_dims(r->def, "start", st, 2) > 1 ||
        !cv_dim_equal(l[0], len))
        return false;
    *start = st[0];
    return true;
}

/* x = gather(gather(T, rows, axis -2), cols, axis -1) (either order) of a
 * lower-triangular table T, rows from Sk - Sq and cols from 0: exactly
 * the causal window (nanoGPT's bias[:, :, P:P+T, :P+T] over symbols). */
static bool causal_window(cv_module *mod, const cv_value *x, cv_dim sq, cv_dim sk)
{
    cv_dim r0, c0, off;
    bool rows = false, cols = false;
    for (int hop = 0; hop < 2; hop++) {
        if (!cv_value_is(x, CV_OP_GATHER) || x->def->n_operands != 2)
            return false;
        int rank = x->def->operands[0]->type.shape.rank;
        int64_t a = cv_op_int(x->def, "axis", 0);
        a = a < 0 ? a + rank : a;
        if (a == rank - 2 && !rows)
            rows = range_window(x->def->operands[1], sq, &r0);
        else if (a == rank - 1 && !cols)
            cols = range_window(x->def->operands[1], sk, &c0);
        else
            return false;
        x = x->def->operands[0];
    }
    return rows && cols && is_tril_table(x) && !c0.sym && c0.n == 0 &&
           cv_dim_sub(mod, sk, sq, &off) == 0 && cv_dim_equal(off, r0);
}

/* cond of where(cond, s, fill) (keep) or where(cond, fill, s) (!keep)
 * selects exactly the causal window of a [.., Sq, Sk] score matrix: a
 * constant triangle, or equal(window, 0) over symbolic lengths. */
static bool causal_cond(cv_module *mod, const cv_value *cond, const cv_shape *s, bool keep)
{
    cv_dim sq = s->d[s->rank - 2], sk = s->d[s->rank - 1];
    double z;
    if (!sq.sym && !sk.sym)
        return sk.n >= sq.n && is_tril(cond, sq.n, sk.n, keep);
    return !keep && cv_value_is(cond, CV_OP_EQUAL) && scalar_const(cond->def->operands[1], &z) && z == 0 &&
           causal_window(mod, cond->def->operands[0], sq, sk);
}

/* The operand of a causal where that carries the scores (1 or 2), or 0. */
static int causal_where(cv_module *mod, const cv_op *w, const cv_shape *s)
{
    double fill;
    for (int chain = 1; chain <= 2; chain++)
        if (scalar_const(w->operands[3 - chain], &fill) && fill <= -1e4 &&
            cv_shape_equal(&w->operands[chain]->type.shape, s) &&
            causal_cond(mod, w->operands[0], s, chain == 1))
            return chain;
    return 0;
}

static bool perm3_is(const cv_op *op, int64_t a, int64_t b, int64_t c)
{
    int64_t p[CV_MAX_RANK + 1];
    return cv_op_ints(op, "perm", p, CV_MAX_RANK + 1) == 3 && p[0] == a && p[1] == b && p[2] == c;
}

/* The head swap of a rank-4 chain ([0,2,1,3]) or of torch's rank-3
 * multi-head attention ([1,0,2]: [S, B*H, D] <-> [B*H, S, D]). */
static bool swaps_heads(const cv_op *op, int rank)
{
    return rank == 4 ? perm_is(op, 0, 2, 1, 3) : perm3_is(op, 1, 0, 2);
}

/* q/k/v operand x read in place when it is transpose(y, [0,2,1,3]). */
static cv_value *through_heads(cv_value *x, int64_t *flag)
{
    int rank = x->type.shape.rank;
    *flag = 0;
    if (cv_value_is(x, CV_OP_TRANSPOSE) && swaps_heads(x->def, rank)) {
        *flag = 1;
        return x->def->operands[0];
    }
    return x;
}

/* q scaled before the product (torch's q / sqrt(D)): the scale moves into
 * the op. */
static cv_value *through_scale(cv_value *q, const int *uses, double *scale)
{
    double c;
    if (uses[q->id] != 1 || !(cv_value_is(q, CV_OP_DIV) || cv_value_is(q, CV_OP_MUL)))
        return q;
    cv_op *d = q->def;
    bool div = cv_op_is(d, CV_OP_DIV);
    int chain = !div && scalar_const(d->operands[0], &c) ? 1 : 0;
    if (!scalar_const(d->operands[1 - chain], &c) || (div && c == 0) ||
        !cv_shape_equal(&d->operands[chain]->type.shape, &q->type.shape))
        return q;
    *scale *= div ? 1.0 / c : c;
    return d->operands[chain];
}

/* The score-side links, walked back from the softmax input s.  Returns
 * the q.kT matmul or NULL. */
static cv_op *scores(cv_value *s, const int *uses, att_match *m)
{
    if (uses[s->id] != 1)
        return NULL;
    if (cv_value_is(s, CV_OP_WHERE)) {
        int chain = causal_where(s->def->func->module, s->def, &s->type.shape);
        if (!chain)
            return NULL;
        m->causal = true;
        s = s->def->operands[chain];
        if (uses[s->id] != 1)
            return NULL;
    }
    if (cv_value_is(s, CV_OP_ADD)) {
        cv_op *a = s->def;
        int chain = 0;
        for (int o = 1; o >= 0; o--) {
            const cv_value *x = a->operands[o];
            bool scores = cv_value_is(x, CV_OP_MATMUL) || cv_value_is(x, CV_OP_DIV) ||
                          cv_value_is(x, CV_OP_MUL);
            if (scores && uses[x->id] == 1 &&
                cv_shape_equal(&x->type.shape, &s->type.shape))
                chain = o;
        }
        cv_value *x = a->operands[chain], *mask = a->operands[1 - chain];
        if (!cv_shape_equal(&x->type.shape, &s->type.shape) || mask->type.dtype != CV_F32 ||
            mask->type.shape.rank > 4 || uses[x->id] != 1)
            return NULL;
        m->mask = mask;
        s = x;
    }
    if (cv_value_is(s, CV_OP_DIV) || cv_value_is(s, CV_OP_MUL)) {
        cv_op *d = s->def;
        double c;
        int chain = cv_op_is(d, CV_OP_MUL) && scalar_const(d->operands[0], &c) ? 1 : 0;
        if (!scalar_const(d->operands[1 - chain], &c) || (chain == 1 && cv_op_is(d, CV_OP_DIV)))
            return NULL;
        if (cv_op_is(d, CV_OP_DIV)) {
            if (c == 0)
                return NULL;
            c = 1.0 / c;
        }
        m->scale = c;
        s = d->operands[chain];
        if (uses[s->id] != 1)
            return NULL;
    }
    return cv_value_is(s, CV_OP_MATMUL) ? s->def : NULL;
}

static bool match(cv_op *sm, const int *uses, cv_op *const *user, att_match *m)
{
    memset(m, 0, sizeof *m);
    m->scale = 1;
    cv_value *p = sm->results[0];
    const cv_shape *ps = &p->type.shape;
    int rank = ps->rank;
    if (p->type.dtype != CV_F32 || (rank != 4 && rank != 3) || uses[p->id] != 1 ||
        (cv_op_int(sm, "axis", -1) != -1 && cv_op_int(sm, "axis", -1) != rank - 1))
        return false;
    cv_op *pv = user[p->id];
    if (!pv || !pv->def || !cv_op_is(pv, CV_OP_MATMUL) || pv->operands[0] != p ||
        pv->operands[1]->type.shape.rank != rank)
        return false;
    cv_op *qk = scores(sm->operands[0], uses, m);
    if (!qk || qk->operands[0]->type.shape.rank != rank)
        return false;
    cv_value *kt = qk->operands[1];
    bool t_last = cv_value_is(kt, CV_OP_TRANSPOSE) &&
                  (rank == 4 ? perm_is(kt->def, 0, 1, 3, 2) : perm3_is(kt->def, 0, 2, 1));
    bool t_heads = cv_value_is(kt, CV_OP_TRANSPOSE) &&
                   (rank == 4 ? perm_is(kt->def, 0, 2, 3, 1) : perm3_is(kt->def, 1, 2, 0));
    if (t_last) {
        m->k = through_heads(kt->def->operands[0], &m->bshd[1]);
    } else if (t_heads) {
        m->k = kt->def->operands[0];
        m->bshd[1] = 1;
    } else {
        return false;
    }
    m->rank3 = rank == 3;
    m->q = through_heads(through_scale(qk->operands[0], uses, &m->scale), &m->bshd[0]);
    m->v = through_heads(pv->operands[1], &m->bshd[2]);
    m->pv = pv;
    cv_value *y = pv->results[0];
    cv_op *t = uses[y->id] == 1 ? user[y->id] : NULL;
    if (t && t->def && cv_op_is(t, CV_OP_TRANSPOSE) && swaps_heads(t, rank)) {
        m->out_t = t;
        m->bshd[3] = 1;
    }
    return true;
}

/* unsqueeze or squeeze of axis 0 (a rank-3 chain as a batch of 1), placed
 * at *at; NULL when it does not type-check. */
static cv_value *axis0(cv_func *f, const char *opname, cv_value *x, const cv_op *loc, int *at)
{
    static const int64_t zero[1] = {0};
    cv_op *op = cv_op_new(f, opname, &x, 1);
    if (!op)
        return NULL;
    cv_op_set_ints(op, "axes", zero, 1);
    cv_pass_merge_locs(op, loc);
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_op_finish(op, 1, &quiet);
    cv_diag_free(&quiet);
    cv_pass_move_last_op(f, (*at)++);
    return rc ? NULL : op->results[0];
}

static int rewrite(cv_func *f, const att_match *m, int *fused, cv_diag *d)
{
    cv_value *ops[4] = {m->q, m->k, m->v, m->mask};
    int at = m->pv->id;
    for (int i = 0; m->rank3 && i < 3; i++)
        if (!(ops[i] = axis0(f, "unsqueeze", ops[i], m->pv, &at)))
            return 0;
    cv_op *op = cv_op_new(f, "attention", ops, m->mask ? 4 : 3);
    if (!op)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory fusing attention");
    cv_op_set_float(op, "scale", m->scale);
    if (m->causal)
        cv_op_set_int(op, "causal", 1);
    cv_op_set_ints(op, "bshd", m->bshd, 4);
    cv_pass_merge_locs(op, m->pv);
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_op_finish(op, 1, &quiet);
    cv_diag_free(&quiet);
    cv_op *replaced = m->out_t ? m->out_t : m->pv;
    cv_pass_move_last_op(f, at++);
    if (m->rank3 && !rc) {
        cv_value *y = axis0(f, "squeeze", op->results[0], m->pv, &at);
        if (!y)
            return 0;
        op = y->def;
    }
    /* A shape the op does not accept (it should not happen: the chain
     * type-checked) leaves the original ops in use; dce drops the new one. */
    if (rc || !cv_type_equal(&op->results[0]->type, &replaced->results[0]->type))
        return 0;
    cv_pass_replace_uses(f, replaced->results[0], op->results[0]);
    (*fused)++;
    return 0;
}

int cv_pass_attention_fuse(cv_func *f, int *fused, cv_diag *d)
{
    *fused = 0;
    int *uses = cv_pass_count_uses(f);
    cv_op **user = calloc((size_t)f->n_values + 1, sizeof *user);
    int rc = 0;
    if (!uses || !user) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory fusing attention");
        rc = -1;
        goto out;
    }
    for (int i = 0; i < f->n_ops; i++)
        for (int k = 0; k < f->ops[i]->n_operands; k++)
            user[f->ops[i]->operands[k]->id] = f->ops[i];
    for (int i = 0; i < f->n_ops && rc == 0; i++) {
        cv_op *sm = f->ops[i];
        att_match m;
        if (!sm->def || !cv_op_is(sm, CV_OP_SOFTMAX) || !match(sm, uses, user, &m))
            continue;
        int before = f->n_ops;
        rc = rewrite(f, &m, fused, d);
        if (f->n_ops > before) {
            /* The new op's operands and result change the use counts. */
            free(uses);
            free(user);
            uses = cv_pass_count_uses(f);
            user = calloc((size_t)f->n_values + 1, sizeof *user);
            if (!uses || !user) {
                cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory fusing attention");
                rc = -1;
                break;
            }
            for (int j = 0; j < f->n_ops; j++)
                for (int k = 0; k < f->ops[j]->n_operands; k++)
                    user[f->ops[j]->operands[k]->id] = f->ops[j];
        }
    }
out:
    free(uses);
    free(user);
    return rc;
}
