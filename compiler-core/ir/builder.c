/* The IR builder: every front end and the text parser construct modules
 * through these functions, so invariants (schema attribute order, unique
 * names, inferred result types) hold however a module was made. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/ir/ir.h"

/* Open addressing over (hash, value id, name prefix) slots.  A name of up
 * to 7 bytes is compared within its slot, a longer one by reading the
 * value's name on a full prefix match: a look-up need not touch the value,
 * which in a large model is rarely in the cache. */
enum { NAME_TAG = 8 };

typedef struct name_slot {
    uint32_t hash;
    int32_t id;             /* index in f->values, -1: empty */
    char tag[NAME_TAG];     /* the name's first bytes, NUL-padded */
} name_slot;

struct cv_name_index {
    name_slot *slots;   /* arena-owned */
    int cap, count;
};

/* The hash and tag of name. */
static uint32_t name_key(const char *s, char tag[NAME_TAG])
{
    uint64_t h = 1469598103934665603ull;
    memset(tag, 0, NAME_TAG);
    for (size_t i = 0; s[i]; i++) {
        if (i < NAME_TAG)
            tag[i] = s[i];
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* The slot holding name (hash h, tag), or the empty slot where it would go. */
static name_slot *index_slot(const cv_func *f, uint32_t h, const char *tag, const char *name)
{
    const struct cv_name_index *ix = f->names;
    size_t mask = (size_t)ix->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        name_slot *s = &ix->slots[i];
        if (s->id < 0)
            return s;
        if (s->hash == h && memcmp(s->tag, tag, NAME_TAG) == 0 &&
            (tag[NAME_TAG - 1] == 0 || strcmp(f->values[s->id]->name, name) == 0))
            return s;
    }
}

static void index_grow(cv_func *f)
{
    struct cv_name_index *ix = f->names;
    int cap = ix->cap ? ix->cap * 2 : 64;
    name_slot *slots = cv_arena_alloc_array(&f->module->arena, (size_t)cap, sizeof *slots);
    if (!slots)
        return;
    for (int i = 0; i < cap; i++)
        slots[i].id = -1;
    size_t mask = (size_t)cap - 1;
    for (int i = 0; i < ix->cap; i++) {
        const name_slot *o = &ix->slots[i];
        if (o->id < 0)
            continue;
        size_t k = o->hash & mask;
        while (slots[k].id >= 0)
            k = (k + 1) & mask;
        slots[k] = *o;
    }
    ix->slots = slots;
    ix->cap = cap;
}

/* v must already be f->values[v->id]. */
static void index_insert(cv_func *f, cv_value *v)
{
    struct cv_name_index *ix = f->names;
    if ((ix->count + 1) * 2 > ix->cap)
        index_grow(f);
    if ((ix->count + 1) * 2 > ix->cap)
        return;  /* out of memory */
    char tag[NAME_TAG];
    uint32_t h = name_key(v->name, tag);
    name_slot *s = index_slot(f, h, tag, v->name);
    if (s->id >= 0)
        return;  /* first definition wins; the verifier reports the duplicate */
    s->hash = h;
    s->id = v->id;
    memcpy(s->tag, tag, NAME_TAG);
    ix->count++;
}

cv_value *cv_func_find_value(const cv_func *f, const char *name)
{
    if (!f->names->cap)
        return NULL;
    char tag[NAME_TAG];
    uint32_t h = name_key(name, tag);
    const name_slot *s = index_slot(f, h, tag, name);
    return s->id >= 0 ? f->values[s->id] : NULL;
}

int cv_func_name_count(const cv_func *f) { return f->names->count; }

/* The old name's slot becomes a tombstone: probing goes on past it (id
 * stays set) but no name matches it (no name's tag is all 0x01). */
int cv_func_rename_value(cv_func *f, cv_value *v, const char *name)
{
    if (cv_func_find_value(f, name))
        return -1;
    const char *copy = cv_arena_strdup(&f->module->arena, name);
    if (!copy)
        return -1;
    if (f->names->cap) {
        char tag[NAME_TAG];
        uint32_t h = name_key(v->name, tag);
        name_slot *s = index_slot(f, h, tag, v->name);
        if (s->id == v->id) {
            memset(s->tag, 1, NAME_TAG);
            s->hash = ~h;
        }
    }
    v->name = copy;
    index_insert(f, v);
    return 0;
}

cv_module *cv_module_new(const char *path)
{
    cv_arena a;
    cv_arena_init(&a);
    cv_module *m = cv_arena_alloc(&a, sizeof *m);
    if (!m) {
        cv_arena_free(&a);
        return NULL;
    }
    m->arena = a;
    m->version = 1;
    m->path = path ? cv_arena_strdup(&m->arena, path) : NULL;
    return m;
}

struct cv_module_resource {
    struct cv_module_resource *next;
    void (*release)(void *);
    void *p;
};

int cv_module_own(cv_module *m, void (*release)(void *), void *p)
{
    struct cv_module_resource *r = cv_arena_alloc(&m->arena, sizeof *r);
    if (!r) {
        release(p);
        return -1;
    }
    r->release = release;
    r->p = p;
    r->next = m->resources;
    m->resources = r;
    return 0;
}

void cv_module_free(cv_module *m)
{
    if (!m)
        return;
    for (struct cv_module_resource *r = m->resources; r; r = r->next)
        r->release(r->p);
    cv_arena a = m->arena;  /* m itself lives in the arena */
    cv_arena_free(&a);
}

/* Grows an arena-backed array of pointers (old storage stays in the arena). */
static void *grow_ptrs(cv_arena *a, void *old, int n, int *cap)
{
    if (n < *cap)
        return old;
    int ncap = *cap ? *cap * 2 : 8;
    void **p = cv_arena_alloc_array(a, (size_t)ncap, sizeof(void *));
    if (p && n)
        memcpy(p, old, (size_t)n * sizeof(void *));
    *cap = ncap;
    return p;
}

static uint64_t bytes_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* m->interned is an open-addressing hash set: an ONNX import interns one
 * location name per node, so a linear scan would make import quadratic. */
static const char **intern_slot(const char **slots, int cap, const char *s, size_t n)
{
    size_t mask = (size_t)cap - 1;
    size_t i = bytes_hash(s, n) & mask;
    while (slots[i] && !(strncmp(slots[i], s, n) == 0 && slots[i][n] == 0))
        i = (i + 1) & mask;
    return &slots[i];
}

const char *cv_module_intern(cv_module *m, const char *s, size_t n)
{
    if ((m->n_interned + 1) * 2 > m->cap_interned) {
        int cap = m->cap_interned ? m->cap_interned * 2 : 16;
        const char **slots = cv_arena_alloc_array(&m->arena, (size_t)cap, sizeof *slots);
        if (!slots)
            return NULL;
        for (int i = 0; i < m->cap_interned; i++)
            if (m->interned[i])
                *intern_slot(slots, cap, m->interned[i], strlen(m->interned[i])) = m->interned[i];
        m->interned = slots;
        m->cap_interned = cap;
    }
    const char **slot = intern_slot(m->interned, m->cap_interned, s, n);
    if (!*slot) {
        *slot = cv_arena_strndup(&m->arena, s, n);
        m->n_interned++;
    }
    return *slot;
}

cv_func *cv_func_new(cv_module *m, const char *name)
{
    cv_func *f = cv_arena_alloc(&m->arena, sizeof *f);
    f->module = m;
    f->name = cv_arena_strdup(&m->arena, name);
    f->names = cv_arena_alloc(&m->arena, sizeof *f->names);
    m->funcs = grow_ptrs(&m->arena, m->funcs, m->n_funcs, &m->cap_funcs);
    m->funcs[m->n_funcs++] = f;
    return f;
}

static cv_value *new_value(cv_func *f, cv_value_kind kind, const char *name, const cv_type *t)
{
    cv_arena *a = &f->module->arena;
    cv_value *v = cv_arena_alloc(a, sizeof *v);
    v->kind = kind;
    v->name = name ? cv_arena_strdup(a, name) : cv_func_auto_name(f);
    if (t)
        v->type = *t;
    v->id = f->n_values;
    f->values = grow_ptrs(a, f->values, f->n_values, &f->cap_values);
    f->values[f->n_values++] = v;
    index_insert(f, v);
    return v;
}

const char *cv_func_auto_name(cv_func *f)
{
    char buf[24];
    do
        snprintf(buf, sizeof buf, "%d", f->next_auto_name++);
    while (cv_func_find_value(f, buf));
    return cv_arena_strdup(&f->module->arena, buf);
}

cv_value *cv_func_add_input(cv_func *f, const char *name, const cv_type *t)
{
    cv_value *v = new_value(f, CV_VAL_INPUT, name, t);
    v->def_index = f->n_inputs;
    int cap = f->n_inputs;  /* inputs are few: grow exactly */
    cv_value **in = cv_arena_alloc_array(&f->module->arena, (size_t)cap + 1, sizeof *in);
    if (cap)
        memcpy(in, f->inputs, (size_t)cap * sizeof *in);
    in[f->n_inputs++] = v;
    f->inputs = in;
    return v;
}

void cv_func_add_output_type(cv_func *f, const cv_type *t)
{
    cv_type *o = cv_arena_alloc_array(&f->module->arena, (size_t)f->n_outputs + 1, sizeof *o);
    if (f->n_outputs)
        memcpy(o, f->out_types, (size_t)f->n_outputs * sizeof *o);
    o[f->n_outputs++] = *t;
    f->out_types = o;
}

static cv_param *new_param(cv_func *f, const char *name, const cv_type *t, cv_param_kind kind)
{
    cv_arena *a = &f->module->arena;
    cv_param *p = cv_arena_alloc(a, sizeof *p);
    p->kind = kind;
    p->value = new_value(f, CV_VAL_PARAM, name, t);
    p->value->param = p;
    f->params = grow_ptrs(a, f->params, f->n_params, &f->cap_params);
    f->params[f->n_params++] = p;
    return p;
}

cv_param *cv_func_add_weights(cv_func *f, const char *name, const cv_type *t,
                              const char *file, const char *key)
{
    cv_param *p = new_param(f, name, t, CV_PARAM_WEIGHTS);
    p->file = cv_arena_strdup(&f->module->arena, file);
    p->key = cv_arena_strdup(&f->module->arena, key);
    return p;
}

cv_param *cv_func_add_dense(cv_func *f, const char *name, const cv_type *t,
                            const void *data, size_t nbytes)
{
    cv_param *p = new_param(f, name, t, CV_PARAM_DENSE);
    p->data = cv_arena_memdup(&f->module->arena, data, nbytes);
    p->nbytes = nbytes;
    return p;
}

void cv_func_set_returns(cv_func *f, cv_value *const *vals, int n)
{
    f->returns = cv_arena_memdup(&f->module->arena, vals, (size_t)n * sizeof *vals);
    f->n_returns = n;
}

cv_op *cv_op_new(cv_func *f, const char *opname, cv_value *const *operands, int n)
{
    cv_arena *a = &f->module->arena;
    cv_op *op = cv_arena_alloc(a, sizeof *op);
    op->def = cv_op_def_lookup(opname);
    op->name = op->def ? op->def->name : cv_arena_strdup(a, opname);
    op->operands = cv_arena_memdup(a, operands, (size_t)n * sizeof *operands);
    op->n_operands = n;
    op->func = f;
    op->id = f->n_ops;
    f->ops = grow_ptrs(a, f->ops, f->n_ops, &f->cap_ops);
    f->ops[f->n_ops++] = op;
    return op;
}

static int schema_index(const cv_op *op, const char *name)
{
    int idx;
    return cv_op_def_attr(op->def, name, &idx) ? idx : 1 << 20;
}

cv_attr *cv_op_put_attr(cv_op *op, const cv_attr *a)
{
    cv_arena *ar = &op->func->module->arena;
    for (int i = 0; i < op->n_attrs; i++)
        if (strcmp(op->attrs[i].name, a->name) == 0) {
            op->attrs[i] = *a;
            return &op->attrs[i];
        }
    /* Attribute arrays are tiny: a fresh copy per insert keeps schema order. */
    cv_attr *v = cv_arena_alloc_array(ar, (size_t)op->n_attrs + 1, sizeof *v);
    int k = schema_index(op, a->name), pos = op->n_attrs;
    for (int i = 0; i < op->n_attrs; i++)
        if (schema_index(op, op->attrs[i].name) > k) {
            pos = i;
            break;
        }
    if (pos)
        memcpy(v, op->attrs, (size_t)pos * sizeof *v);
    v[pos] = *a;
    if (op->n_attrs > pos)
        memcpy(v + pos + 1, op->attrs + pos, (size_t)(op->n_attrs - pos) * sizeof *v);
    op->attrs = v;
    op->n_attrs++;
    return &v[pos];
}

static cv_attr attr_named(cv_op *op, const char *name, cv_attr_kind kind)
{
    cv_attr a = {0};
    a.name = cv_arena_strdup(&op->func->module->arena, name);
    a.kind = kind;
    return a;
}

void cv_op_set_int(cv_op *op, const char *name, int64_t v)
{
    cv_attr a = attr_named(op, name, CV_ATTR_INT);
    a.i = v;
    cv_op_put_attr(op, &a);
}

void cv_op_set_float(cv_op *op, const char *name, double v)
{
    cv_attr a = attr_named(op, name, CV_ATTR_FLOAT);
    a.f = v;
    cv_op_put_attr(op, &a);
}

void cv_op_set_string(cv_op *op, const char *name, const char *v)
{
    cv_attr a = attr_named(op, name, CV_ATTR_STRING);
    a.s = cv_arena_strdup(&op->func->module->arena, v);
    cv_op_put_attr(op, &a);
}

void cv_op_set_ints(cv_op *op, const char *name, const int64_t *v, int n)
{
    cv_attr a = attr_named(op, name, CV_ATTR_INTS);
    a.ints = cv_arena_memdup(&op->func->module->arena, v, (size_t)n * sizeof *v);
    a.n = n;
    cv_op_put_attr(op, &a);
}

void cv_op_set_floats(cv_op *op, const char *name, const double *v, int n)
{
    cv_attr a = attr_named(op, name, CV_ATTR_FLOATS);
    a.floats = cv_arena_memdup(&op->func->module->arena, v, (size_t)n * sizeof *v);
    a.n = n;
    cv_op_put_attr(op, &a);
}

void cv_op_set_dtype(cv_op *op, const char *name, cv_dtype v)
{
    cv_attr a = attr_named(op, name, CV_ATTR_DTYPE);
    a.dt = v;
    cv_op_put_attr(op, &a);
}

void cv_op_set_dims(cv_op *op, const char *name, const cv_dim *v, int n)
{
    bool sym = false;
    for (int i = 0; i < n; i++)
        sym |= v[i].sym != NULL;
    if (!sym) {
        int64_t ints[CV_MAX_RANK];
        for (int i = 0; i < n && i < CV_MAX_RANK; i++)
            ints[i] = v[i].n;
        cv_op_set_ints(op, name, ints, n < CV_MAX_RANK ? n : CV_MAX_RANK);
        return;
    }
    cv_module *m = op->func->module;
    cv_attr a = attr_named(op, name, CV_ATTR_DIMS);
    a.dims = cv_arena_alloc_array(&m->arena, (size_t)n + 1, sizeof *a.dims);
    for (int i = 0; a.dims && i < n; i++)
        a.dims[i] = (cv_dim){v[i].n, v[i].sym ? cv_module_intern(m, v[i].sym, strlen(v[i].sym))
                                              : NULL};
    a.n = a.dims ? n : 0;
    cv_op_put_attr(op, &a);
}

void cv_op_add_loc(cv_op *op, const char *file, int line, int col)
{
    cv_arena *ar = &op->func->module->arena;
    cv_loc *l = cv_arena_alloc_array(ar, (size_t)op->n_locs + 1, sizeof *l);
    if (op->n_locs)
        memcpy(l, op->locs, (size_t)op->n_locs * sizeof *l);
    l[op->n_locs].file = cv_module_intern(op->func->module, file, strlen(file));
    l[op->n_locs].line = line;
    l[op->n_locs].col = col;
    op->locs = l;
    op->n_locs++;
}

cv_value *cv_op_result(const cv_op *op) { return op->n_results ? op->results[0] : NULL; }

int cv_op_finish(cv_op *op, int n_results, cv_diag *d)
{
    cv_func *f = op->func;
    op->results = cv_arena_alloc_array(&f->module->arena, (size_t)(n_results ? n_results : 1),
                                       sizeof *op->results);
    op->n_results = n_results;
    for (int i = 0; i < n_results; i++) {
        cv_value *v = new_value(f, CV_VAL_RESULT, NULL, NULL);
        v->def = op;
        v->def_index = i;
        op->results[i] = v;
    }
    char path[256];
    cv_op_path(op, path, sizeof path);
    if (cv_op_check_schema(op, n_results, path, d))
        return -1;
    cv_type in[64], out[64];
    if (op->n_operands > 64 || n_results > 64)
        return -1;
    for (int i = 0; i < op->n_operands; i++) {
        if (!cv_type_known(&op->operands[i]->type))
            return -1;  /* derived from an earlier error: stay silent */
        in[i] = op->operands[i]->type;
    }
    memset(out, 0, sizeof out);
    if (cv_infer_op(op, in, out, f->module, d))
        return -1;
    for (int i = 0; i < n_results; i++)
        op->results[i]->type = out[i];
    return 0;
}

void cv_op_finish_declared(cv_op *op, int n, const char *const *names, const cv_type *declared)
{
    cv_func *f = op->func;
    op->results = cv_arena_alloc_array(&f->module->arena, (size_t)(n ? n : 1), sizeof *op->results);
    op->n_results = n;
    for (int i = 0; i < n; i++) {
        cv_value *v = new_value(f, CV_VAL_RESULT, names ? names[i] : NULL, &declared[i]);
        v->def = op;
        v->def_index = i;
        op->results[i] = v;
    }
}

void cv_op_set_operand(cv_op *op, int i, cv_value *v)
{
    if (i >= 0 && i < op->n_operands)
        op->operands[i] = v;
}

cv_value *cv_func_add_undefined(cv_func *f, const char *name)
{
    return new_value(f, CV_VAL_RESULT, name, NULL);
}
