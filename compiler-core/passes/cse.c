/* Common-subexpression elimination.  Ops are hashed by definition,
 * operands and attributes into an open-addressing table; in program order,
 * an op equal to one already in the table hands its uses to that op (every
 * op is pure, so equal inputs give equal results).  Small params with
 * equal bytes are merged first, so that ops reading duplicated constants
 * (exporters repeat shape constants) compare equal.  Uses move through a
 * forwarding table applied to each op as the walk reaches it (every use
 * comes after its definition), not by a scan of the whole function per
 * merge: that made the pass quadratic (16,000 equal ops: 23 s). */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/passes/passes.h"

enum { MAX_DEDUP_BYTES = 64 * 1024 };

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Operand k of op in canonical order (commutative binary ops: lower id first). */
static const cv_value *operand(const cv_op *op, int k)
{
    if (op->def && (op->def->flags & CV_OPF_COMMUTATIVE) && op->n_operands == 2 &&
        op->operands[0]->id > op->operands[1]->id)
        return op->operands[1 - k];
    return op->operands[k];
}

static uint64_t hash_attr(uint64_t h, const cv_attr *a)
{
    h = hash_bytes(h, a->name, strlen(a->name));
    h = mix(h, (uint64_t)a->kind);
    switch (a->kind) {
    case CV_ATTR_INT: return mix(h, (uint64_t)a->i);
    case CV_ATTR_FLOAT: return hash_bytes(h, &a->f, sizeof a->f);
    case CV_ATTR_STRING: return a->s ? hash_bytes(h, a->s, strlen(a->s)) : h;
    case CV_ATTR_INTS: return hash_bytes(h, a->ints, sizeof *a->ints * (size_t)a->n);
    case CV_ATTR_FLOATS: return hash_bytes(h, a->floats, sizeof *a->floats * (size_t)a->n);
    case CV_ATTR_DTYPE: return mix(h, (uint64_t)a->dt);
    case CV_ATTR_DIMS:   /* symbols are interned: equal dims, equal pointers */
        return hash_bytes(h, a->dims, sizeof *a->dims * (size_t)a->n);
    default: return h;
    }
}

static uint64_t hash_op(const cv_op *op)
{
    uint64_t h = hash_bytes(0xcbf29ce484222325ull, op->name, strlen(op->name));
    h = mix(h, (uint64_t)op->n_operands);
    for (int k = 0; k < op->n_operands; k++)
        h = mix(h, (uint64_t)operand(op, k)->id);
    for (int i = 0; i < op->n_attrs; i++)
        h = hash_attr(h, &op->attrs[i]);
    return h;
}

static bool attr_equal(const cv_attr *a, const cv_attr *b)
{
    if (strcmp(a->name, b->name) != 0 || a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case CV_ATTR_INT: return a->i == b->i;
    /* Bitwise, so that -0.0 and 0.0 (or two NaNs) are never confused. */
    case CV_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case CV_ATTR_STRING: return (!a->s && !b->s) || (a->s && b->s && strcmp(a->s, b->s) == 0);
    case CV_ATTR_INTS: return !a->n || memcmp(a->ints, b->ints, sizeof *a->ints * (size_t)a->n) == 0;
    case CV_ATTR_FLOATS:
        return !a->n || memcmp(a->floats, b->floats, sizeof *a->floats * (size_t)a->n) == 0;
    case CV_ATTR_DTYPE: return a->dt == b->dt;
    case CV_ATTR_DIMS:
        for (int i = 0; i < a->n; i++)
            if (!cv_dim_equal(a->dims[i], b->dims[i]))
                return false;
        return true;
    default: return true;
    }
}

static bool op_equal(const cv_op *a, const cv_op *b)
{
    if (a->def != b->def || !a->def || a->n_operands != b->n_operands ||
        a->n_results != b->n_results || a->n_attrs != b->n_attrs)
        return false;
    for (int k = 0; k < a->n_operands; k++)
        if (operand(a, k) != operand(b, k))
            return false;
    for (int i = 0; i < a->n_attrs; i++)
        if (!attr_equal(&a->attrs[i], &b->attrs[i]))
            return false;
    for (int r = 0; r < a->n_results; r++)
        if (!cv_type_equal(&a->results[r]->type, &b->results[r]->type))
            return false;
    return true;
}

static bool param_equal(const cv_param *a, const cv_param *b)
{
    return cv_type_equal(&a->value->type, &b->value->type) && a->nbytes == b->nbytes &&
           (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

/* An open-addressing table of item indices (-1: empty), twice the size. */
typedef struct table {
    int *slot;
    uint64_t mask;
} table;

static bool table_init(table *t, int n)
{
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n + 2)
        cap *= 2;
    t->slot = malloc(sizeof *t->slot * cap);
    t->mask = cap - 1;
    if (t->slot)
        memset(t->slot, 0xff, sizeof *t->slot * cap);
    return t->slot != NULL;
}

static void merge_params(cv_func *f, cv_pass_stats *st, table *t, cv_pass_fwd *fwd)
{
    for (int i = 0; i < f->n_params; i++) {
        cv_param *p = f->params[i];
        if ((!p->data && p->nbytes) || p->nbytes > MAX_DEDUP_BYTES)
            continue;
        uint64_t h = hash_bytes(mix(0x84222325ull, (uint64_t)p->value->type.dtype),
                                p->data ? p->data : "", p->nbytes);
        uint64_t s = h & t->mask;
        for (; t->slot[s] >= 0; s = (s + 1) & t->mask) {
            cv_param *q = f->params[t->slot[s]];
            if (param_equal(p, q)) {
                cv_pass_fwd_set(fwd, p->value, q->value);
                st->cse_params++;
                break;
            }
        }
        if (t->slot[s] < 0)
            t->slot[s] = i;
    }
}

static void merge_ops(cv_func *f, cv_pass_stats *st, table *t, cv_pass_fwd *fwd)
{
    for (int i = 0; i < f->n_ops; i++) {
        cv_op *op = f->ops[i];
        cv_pass_fwd_op(fwd, op);
        uint64_t s = hash_op(op) & t->mask;
        for (; t->slot[s] >= 0; s = (s + 1) & t->mask) {
            cv_op *q = f->ops[t->slot[s]];
            if (op_equal(op, q)) {
                for (int r = 0; r < op->n_results; r++)
                    cv_pass_fwd_set(fwd, op->results[r], q->results[r]);
                cv_pass_merge_locs(q, op);
                st->cse_ops++;
                break;
            }
        }
        if (t->slot[s] < 0)
            t->slot[s] = i;
    }
}

int cv_pass_cse(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    table t;
    cv_pass_fwd fwd;
    if (cv_pass_fwd_init(&fwd, f) ||
        !table_init(&t, f->n_params > f->n_ops ? f->n_params : f->n_ops)) {
        cv_pass_fwd_free(&fwd);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory merging common subexpressions");
    }
    merge_params(f, st, &t, &fwd);
    memset(t.slot, 0xff, sizeof *t.slot * (t.mask + 1));
    merge_ops(f, st, &t, &fwd);
    cv_pass_fwd_returns(&fwd, f);
    cv_pass_fwd_free(&fwd);
    free(t.slot);
    return 0;
}
