/* ONNX sequences and optionals, resolved at import time the way Loop and
 * Scan are unrolled: a sequence whose length is known here is the list of
 * its tensor values, an optional is present or absent here.  Ops on them
 * only rearrange that list (SequenceInsert, SequenceAt, ...) or emit plain
 * tensor ops (SplitToSequence: slices, ConcatFromSequence: a concat); a
 * position or a presence computed at run time is refused (CV4305). */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

onnx_val *onnx_val_list(onnx_ctx *c, int kind, onnx_val *const *elems, int n)
{
    onnx_val *v = cv_arena_alloc(c->a, sizeof *v);
    onnx_val **e = cv_arena_alloc_array(c->a, (size_t)n + 1, sizeof *e);
    if (!v || !e) {
        onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    if (n)
        memcpy(e, elems, (size_t)n * sizeof *e);
    v->name = kind == ONNX_VAL_SEQ ? "sequence" : kind == ONNX_VAL_OPT ? "optional" : "tensor";
    v->producer = -1;
    v->kind = kind;
    v->elems = e;
    v->n_elems = n;
    return v;
}

int onnx_bind_val(onnx_ctx *c, int i, const onnx_val *src)
{
    onnx_val *o = i >= 0 && (size_t)i < c->node->n_output && c->node->output[i][0]
                      ? onnx_val_get(c, c->node->output[i]) : NULL;
    if (!o)
        return 0;
    if (!src)
        return -1;
    o->v = src->v;
    o->c = src->c;
    o->type = src->type;
    o->kind = src->kind;
    o->elems = src->elems;
    o->n_elems = src->n_elems;
    return 0;
}

int onnx_flatten(onnx_val *v, onnx_val **out, int max)
{
    if (v->kind == ONNX_VAL_TENSOR) {
        if (max < 1)
            return -1;
        out[0] = v;
        return 1;
    }
    int n = 0;
    for (int i = 0; i < v->n_elems; i++) {
        int k = onnx_flatten(v->elems[i], out + n, max - n);
        if (k < 0)
            return -1;
        n += k;
    }
    return n;
}

/* Node input i as a sequence (or NULL after a report). */
static onnx_val *seq_in(onnx_ctx *c, int i)
{
    onnx_val *v = onnx_in(c, i);
    if (!v || v->kind != ONNX_VAL_SEQ)
        onnx_err(c, CV_E_ONNX_ARITY, "input %d must be a sequence", i);
    return v && v->kind == ONNX_VAL_SEQ ? v : NULL;
}

/* A known position input in [0, n] (insert) or [0, n) (at, erase);
 * dflt when the input is absent. */
static int position(onnx_ctx *c, int i, int64_t n, bool insert, int64_t dflt, int64_t *out)
{
    *out = dflt;
    if (!onnx_in(c, i))
        return 0;
    const onnx_const *k = onnx_in_const(c, i, "position");
    if (!k)
        return -1;
    if (k->numel != 1 || !onnx_const_is_int(k) || (k->syms && k->syms[0]))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'position' must be one known integer");
    int64_t p = onnx_const_i64(k, 0);
    if (p < 0)
        p += n;
    if (p < 0 || p > n || (!insert && p == n))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "position %lld is out of range for a sequence of "
                        "%lld", (long long)onnx_const_i64(k, 0), (long long)n);
    *out = p;
    return 0;
}

static int lower_seq_construct(onnx_ctx *c)
{
    int n = onnx_n_in(c);
    onnx_val *e[ONNX_MAX_SEQ];
    if (n > ONNX_MAX_SEQ)
        return onnx_err(c, CV_E_ONNX_ARITY, "more than %d elements", ONNX_MAX_SEQ);
    for (int i = 0; i < n; i++)
        if (!(e[i] = onnx_in(c, i)) || e[i]->kind != ONNX_VAL_TENSOR)
            return onnx_err(c, CV_E_ONNX_ARITY, "input %d must be a tensor", i);
    return onnx_bind_val(c, 0, onnx_val_list(c, ONNX_VAL_SEQ, e, n));
}

static int lower_seq_empty(onnx_ctx *c)
{
    return onnx_bind_val(c, 0, onnx_val_list(c, ONNX_VAL_SEQ, NULL, 0));
}

static int lower_seq_insert(onnx_ctx *c)
{
    onnx_val *s = seq_in(c, 0), *t = onnx_in(c, 1), *e[ONNX_MAX_SEQ];
    int64_t p;
    if (!s || !t || t->kind != ONNX_VAL_TENSOR)
        return s ? onnx_err(c, CV_E_ONNX_ARITY, "input 1 must be a tensor") : -1;
    if (s->n_elems >= ONNX_MAX_SEQ || position(c, 2, s->n_elems, true, s->n_elems, &p) < 0)
        return s->n_elems >= ONNX_MAX_SEQ
                   ? onnx_err(c, CV_E_ONNX_ARITY, "more than %d elements", ONNX_MAX_SEQ) : -1;
    memcpy(e, s->elems, (size_t)p * sizeof *e);
    e[p] = t;
    memcpy(e + p + 1, s->elems + p, (size_t)(s->n_elems - p) * sizeof *e);
    return onnx_bind_val(c, 0, onnx_val_list(c, ONNX_VAL_SEQ, e, s->n_elems + 1));
}

static int lower_seq_erase(onnx_ctx *c)
{
    onnx_val *s = seq_in(c, 0), *e[ONNX_MAX_SEQ];
    int64_t p;
    if (!s || position(c, 1, s->n_elems, false, s->n_elems - 1, &p) < 0)
        return -1;
    if (p < 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "erasing from an empty sequence");
    memcpy(e, s->elems, (size_t)p * sizeof *e);
    memcpy(e + p, s->elems + p + 1, (size_t)(s->n_elems - p - 1) * sizeof *e);
    return onnx_bind_val(c, 0, onnx_val_list(c, ONNX_VAL_SEQ, e, s->n_elems - 1));
}

static int lower_seq_at(onnx_ctx *c)
{
    onnx_val *s = seq_in(c, 0);
    int64_t p;
    if (!s || !onnx_in(c, 1))
        return s ? onnx_err(c, CV_E_ONNX_ARITY, "input 1 is required") : -1;
    if (position(c, 1, s->n_elems, false, 0, &p) < 0)
        return -1;
    return onnx_bind_val(c, 0, s->elems[p]);
}

static int lower_seq_length(onnx_ctx *c)
{
    onnx_val *s = seq_in(c, 0);
    onnx_const *k = s ? onnx_const_new(c, CV_I64, 0, NULL) : NULL;
    if (k)
        onnx_const_set_i64(k, 0, s->n_elems);
    return onnx_bind_const(c, 0, k);
}

/* The piece sizes of SplitToSequence along an axis of extent len. */
static int split_sizes(onnx_ctx *c, int64_t len, int64_t *sizes, bool *squeeze)
{
    int64_t keepdims;
    if (onnx_attr_int(c, "keepdims", 1, &keepdims) < 0)
        return -1;
    *squeeze = false;
    if (!onnx_in(c, 1)) {
        if (len > ONNX_MAX_SEQ)
            return onnx_err(c, CV_E_ONNX_ARITY, "more than %d elements", ONNX_MAX_SEQ);
        for (int64_t i = 0; i < len; i++)
            sizes[i] = 1;
        *squeeze = keepdims == 0;
        return (int)len;
    }
    const onnx_const *k = onnx_in_const(c, 1, "split");
    int64_t v[ONNX_MAX_SEQ];
    int n = k ? onnx_const_ints(k, v, ONNX_MAX_SEQ) : -1;
    if (n < 1)
        return k ? onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'split' must be known integers") : -1;
    if (k->rank == 0) {   /* one chunk size; the last piece may be shorter */
        if (v[0] < 1 || (len + v[0] - 1) / v[0] > ONNX_MAX_SEQ)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "split %lld is invalid", (long long)v[0]);
        n = 0;
        for (int64_t at = 0; at < len; at += v[0])
            sizes[n++] = len - at < v[0] ? len - at : v[0];
        return n;
    }
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "split[%d] is negative", i);
        sum += sizes[i] = v[i];
    }
    if (sum != len)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'split' sums to %lld, the axis has %lld",
                        (long long)sum, (long long)len);
    return n;
}

static int lower_split_to_seq(onnx_ctx *c)
{
    cv_value *x = onnx_in_value(c, 0);
    int64_t axis, len, at = 0, sizes[ONNX_MAX_SEQ];
    int a;
    bool squeeze;
    if (!x || onnx_attr_int(c, "axis", 0, &axis) < 0 ||
        onnx_norm_axis(c, axis, x->type.shape.rank, &a) < 0 ||
        onnx_static_extent(c, x, a, &len) < 0)
        return -1;
    int n = split_sizes(c, len, sizes, &squeeze);
    onnx_val *e[ONNX_MAX_SEQ];
    for (int i = 0; i < n; i++) {
        int64_t ax = a;
        cv_value *p = onnx_slice1(c, x, a, at, at + sizes[i]);
        if (squeeze && p)
            p = onnx_op_ints(c, "squeeze", p, "axes", &ax, 1);
        at += sizes[i];
        e[i] = p ? onnx_val_list(c, ONNX_VAL_TENSOR, NULL, 0) : NULL;
        if (!e[i])
            return -1;
        e[i]->v = p;
        e[i]->type = p->type;
    }
    return n < 0 ? -1 : onnx_bind_val(c, 0, onnx_val_list(c, ONNX_VAL_SEQ, e, n));
}

static int lower_concat_from_seq(onnx_ctx *c)
{
    onnx_val *s = seq_in(c, 0);
    int64_t axis, new_axis;
    if (!s || onnx_attr_int(c, "axis", 0, &axis) < 0 ||
        onnx_attr_int(c, "new_axis", 0, &new_axis) < 0)
        return -1;
    if (s->n_elems == 0)
        return onnx_err(c, CV_E_ONNX_ARITY, "the sequence is empty");
    cv_value *in[ONNX_MAX_SEQ];
    int a = 0;
    for (int i = 0; i < s->n_elems; i++) {
        if (!(in[i] = onnx_materialize(c, s->elems[i])))
            return -1;
        if (i == 0 && onnx_norm_axis(c, axis, in[i]->type.shape.rank + (new_axis != 0), &a) < 0)
            return -1;
        int64_t ax = a;
        if (new_axis && !(in[i] = onnx_op_ints(c, "unsqueeze", in[i], "axes", &ax, 1)))
            return -1;
    }
    cv_op *o = onnx_op(c, "concat", in, s->n_elems);
    if (o)
        cv_op_set_int(o, "axis", a);
    return onnx_bind_value(c, 0, onnx_finish(c, o));
}

/* ---- optionals ---------------------------------------------------------------- */

static int lower_optional(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (!x && !onnx_attr(c, "type"))
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "an empty Optional needs the 'type' attribute");
    return onnx_bind_val(c, 0, onnx_val_list(c, ONNX_VAL_OPT, &x, x ? 1 : 0));
}

static int lower_opt_has(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    onnx_const *k = onnx_const_new(c, CV_BOOL, 0, NULL);
    if (k)
        onnx_const_set_i64(k, 0, x && (x->kind != ONNX_VAL_OPT || x->n_elems == 1));
    return onnx_bind_const(c, 0, k);
}

static int lower_opt_get(onnx_ctx *c)
{
    onnx_val *x = onnx_in(c, 0);
    if (!x)
        return onnx_err(c, CV_E_ONNX_ARITY, "input 0 is required");
    if (x->kind != ONNX_VAL_OPT)
        return onnx_bind_val(c, 0, x);
    if (x->n_elems == 0)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "the optional '%s' is empty", x->name);
    return onnx_bind_val(c, 0, x->elems[0]);
}

static const onnx_op_entry entries[] = {
    {"SequenceConstruct", 11, lower_seq_construct, NULL, 0},
    {"SequenceEmpty", 11, lower_seq_empty, NULL, 0},
    {"SequenceInsert", 11, lower_seq_insert, NULL, 0x4u},
    {"SequenceErase", 11, lower_seq_erase, NULL, 0x2u},
    {"SequenceAt", 11, lower_seq_at, NULL, 0x2u},
    {"SequenceLength", 11, lower_seq_length, NULL, 0},
    {"SplitToSequence", 11, lower_split_to_seq, "slice squeeze", 0x2u},
    {"ConcatFromSequence", 11, lower_concat_from_seq, "concat unsqueeze", 0},
    {"Optional", 15, lower_optional, NULL, 0},
    {"OptionalHasElement", 15, lower_opt_has, NULL, 0},
    {"OptionalGetElement", 15, lower_opt_get, NULL, 0},
};

const onnx_op_family onnx_ops_seq = {entries, sizeof entries / sizeof entries[0]};
