/* Memory planning: one activation arena per model.
 *
 * Symbolic dims make sizes polynomials, so storages are grouped into size
 * classes by the monomial of symbols their size carries (1, N, N*N, ...).
 * Within a class every size is a constant number of bytes per unit of the
 * monomial, so the class can be planned at compile time as if it were
 * static: largest first, each at the lowest offset where it overlaps no
 * placed storage whose lifetime overlaps its own.  The classes are laid end
 * to end; the run function computes their bases from the symbols.
 *
 * Dimension expressions: a dim that is a monomial of symbols (32*L*N, from
 * a flatten) joins the symbols' classes; any other expression (P + 1,
 * (H + 1) floordiv 2) is a derived dim, one more factor a monomial may
 * carry, computed once per run (backend/dimlower.c).  So the arena is
 * sum(units_c * monomial_c) over classes, a formula of the symbols. */
#include <stdlib.h>
#include <string.h>

#include "common/invariant.h"
#include "compiler-core/backend/kernel_internal.h"
#include "compiler-core/passes/passes.h"

enum { ALIGN = 64 };

typedef struct item {
    int store;
    int cls;
    int64_t size;       /* units */
    int first, last;
    int64_t key;        /* the sort key of the order being tried */
} item;

/* Adds extended symbol k to the monomial (false: too many factors). */
static bool mono_add(cv_kclass *mono, int k)
{
    if (mono->degree == (int)(sizeof mono->syms / sizeof mono->syms[0]))
        return false;
    int j = mono->degree++;
    while (j > 0 && mono->syms[j - 1] > k) {
        mono->syms[j] = mono->syms[j - 1];
        j--;
    }
    mono->syms[j] = k;
    return true;
}

/* One dim's factor: an integer, a symbol, a monomial of symbols (32*L*N)
 * or a derived dim (an expression, registered by register_dims). */
static bool dim_factor(const cv_kprog *p, cv_dim d, int64_t *bytes, cv_kclass *mono)
{
    int syms[CV_MAX_RANK * 2], n;
    int64_t coef;
    if (!d.sym)
        return cv_mul_i64(*bytes, d.n, bytes);
    if (!cv_dim_is_expr(d))
        return mono_add(mono, cv_kp_sym_index(p, d.sym, strlen(d.sym)));
    if ((n = cv_kp_dim_monomial(p, d, &coef, syms)) >= 0) {
        for (int i = 0; i < n; i++)
            if (!mono_add(mono, syms[i]))
                return false;
        return cv_mul_i64(*bytes, coef, bytes);
    }
    int k = cv_kp_dsym_find(p, d);
    return k >= 0 && mono_add(mono, k);
}

/* Bytes per unit (aligned) and the monomial of a storage. */
static int64_t storage_units(const cv_kprog *p, const cv_kstore *s, cv_kclass *mono)
{
    int64_t bytes = (int64_t)cv_dtype_size(s->dtype);
    memset(mono, 0, sizeof *mono);
    for (int i = 0; i < s->shape.rank; i++)
        if (!dim_factor(p, s->shape.d[i], &bytes, mono))
            return -1;
    if (bytes > INT64_MAX - ALIGN)
        return -1;
    return (bytes + ALIGN - 1) / ALIGN * ALIGN;
}

/* Every expression dim of a storage becomes a derived dim: the run function
 * computes it once (and refuses a negative one); arena classes use it. */
static int register_dims(cv_kprog *p, cv_diag *d)
{
    for (int i = 0; i < p->n_stores; i++) {
        const cv_shape *sh = &p->stores[i].shape;
        for (int k = 0; k < sh->rank; k++)
            if (cv_dim_is_expr(sh->d[k]) && cv_kp_dsym(p, sh->d[k]) < 0)
                return cv_diag_fail(d, CV_E_BACKEND_DIM_EXPRESSION, (cv_span){.file = p->f->module->path},
                                    "dimension %s cannot be computed at run time",
                                    sh->d[k].sym);
    }
    return 0;
}

static int class_cmp(const cv_kclass *a, const cv_kclass *b)
{
    if (a->degree != b->degree)
        return a->degree - b->degree;
    for (int i = 0; i < a->degree; i++)
        if (a->syms[i] != b->syms[i])
            return a->syms[i] - b->syms[i];
    return 0;
}

static int find_class(cv_kprog *p, const cv_kclass *m)
{
    int i = 0;
    while (i < p->n_classes && class_cmp(&p->classes[i], m) < 0)
        i++;
    if (i < p->n_classes && class_cmp(&p->classes[i], m) == 0)
        return i;
    memmove(&p->classes[i + 1], &p->classes[i], sizeof *m * (size_t)(p->n_classes - i));
    p->classes[i] = *m;
    p->n_classes++;
    return i;
}

/* Placement orders tried for each class; the smallest arena wins.  Largest
 * first is the classic; longest-lived first keeps the tensors that span
 * the whole model at the bottom, and size-time area first favours big
 * long-lived tensors while leaving short scratch to fill the holes. */
enum { ORDER_SIZE, ORDER_LIFETIME, ORDER_AREA, ORDER_FIRST_USE, N_ORDERS };
static int64_t order_key(const item *a, int order)
{
    int64_t life = (int64_t)(a->last - a->first + 1);
    switch (order) {
    case ORDER_LIFETIME: return life;
    case ORDER_AREA: return a->size * life;
    case ORDER_FIRST_USE: return -(int64_t)a->first;
    default: return a->size;
    }
}

static int item_cmp(const void *x, const void *y)
{
    const item *a = x, *b = y;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->first != b->first)
        return a->first - b->first;
    return a->store - b->store;
}

static void sort_items(item *items, int n, int order)
{
    for (int i = 0; i < n; i++)
        items[i].key = order_key(&items[i], order);
    qsort(items, (size_t)n, sizeof *items, item_cmp);
}

/* Places items[0..n) (all of one class) in their order, each at the lowest
 * offset where it overlaps no placed item whose lifetime overlaps its own;
 * fills off[] (by position in items) and returns the class size. */
static int64_t place_order(const item *items, int n, int64_t *off, int *scratch)
{
    int64_t top = 0;
    for (int i = 0; i < n; i++) {
        int m = 0;
        for (int j = 0; j < i; j++)
            if (items[j].first <= items[i].last && items[i].first <= items[j].last)
                scratch[m++] = j;
        /* Insertion sort by offset: the conflict lists are short. */
        for (int a = 1; a < m; a++)
            for (int b = a; b > 0 && off[scratch[b - 1]] > off[scratch[b]]; b--) {
                int t = scratch[b];
                scratch[b] = scratch[b - 1];
                scratch[b - 1] = t;
            }
        int64_t o = 0;
        for (int a = 0; a < m; a++) {
            int64_t c = off[scratch[a]];
            if (c >= o + items[i].size)
                break;
            if (c + items[scratch[a]].size > o)
                o = c + items[scratch[a]].size;
        }
        off[i] = o;
        if (o + items[i].size > top)
            top = o + items[i].size;
    }
    return top;
}

/* Tries every order on items[0..n) (reordering them) and commits the best
 * placement to the storages. */
static int64_t place_class(cv_kprog *p, item *items, int n, int *scratch, int64_t *off)
{
    int64_t best = -1;
    int best_order = 0;
    for (int o = 0; o < N_ORDERS; o++) {
        sort_items(items, n, o);
        int64_t top = place_order(items, n, off, scratch);
        if (best < 0 || top < best) {
            best = top;
            best_order = o;
        }
    }
    sort_items(items, n, best_order);
    place_order(items, n, off, scratch);
    for (int i = 0; i < n; i++)
        p->stores[items[i].store].offset = off[i];
    return best;
}

static int64_t class_peak(const item *items, int n)
{
    int64_t peak = 0;
    for (int i = 0; i < n; i++) {
        int64_t live = 0;
        for (int j = 0; j < n; j++)
            if (items[j].first <= items[i].first && items[i].first <= items[j].last)
                live += items[j].size;
        if (live > peak)
            peak = live;
    }
    return peak;
}

int cv_memplan(cv_kprog *p, cv_diag *d)
{
    cv_span sp = {.file = p->f->module->path};
    size_t cap = (size_t)p->n_stores + 1;
    item *items = calloc(cap, sizeof *items), *mine = calloc(cap, sizeof *mine);
    int *scratch = calloc(cap, sizeof *scratch);
    int64_t *off = calloc(cap, sizeof *off);
    p->classes = cv_kp_alloc(p, sizeof *p->classes * cap);
    int n = 0, rc = 0;
    if (!items || !mine || !scratch || !off || !p->classes) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, sp, "out of memory planning memory");
        rc = -1;
        goto done;
    }
    if (register_dims(p, d)) {
        rc = -1;
        goto done;
    }
    for (int i = 0; i < p->n_stores; i++) {
        cv_kstore *s = &p->stores[i];
        if (s->kind != CV_KST_ARENA || s->first < 0)
            continue;
        cv_kclass mono;
        int64_t units = storage_units(p, s, &mono);
        if (units < 0) {
            cv_diag_error(d, CV_E_CODEGEN_SIZE_OVERFLOW, sp, "a tensor's size overflows");
            rc = -1;
            goto done;
        }
        find_class(p, &mono);
        items[n++] = (item){i, 0, units, s->first, s->last, 0};
    }
    /* Class indices settle once every class is known. */
    for (int i = 0; i < n; i++) {
        cv_kclass mono;
        cv_kstore *s = &p->stores[items[i].store];
        storage_units(p, s, &mono);
        items[i].cls = s->cls = find_class(p, &mono);
    }
    for (int c = 0; c < p->n_classes; c++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (items[i].cls == c)
                mine[m++] = items[i];
        p->classes[c].units = place_class(p, mine, m, scratch, off);
        p->classes[c].peak_units = class_peak(mine, m);
    }
done:
    free(items);
    free(mine);
    free(scratch);
    free(off);
    return rc;
}

static int64_t mono_value(const cv_kclass *c, const int64_t *ext)
{
    int64_t v = 1;
    for (int i = 0; i < c->degree; i++)
        v *= ext[c->syms[i]];
    return v;
}

void cv_memplan_stats(const cv_kprog *p, const int64_t *syms, int64_t *arena, int64_t *peak)
{
    *arena = 0;
    *peak = 0;
    int64_t *ext = calloc((size_t)(p->n_syms + p->n_dsyms) + 1, sizeof *ext);
    if (!ext || cv_kp_sym_values(p, syms, ext)) {
        free(ext);
        *arena = *peak = -1;
        return;
    }
    for (int c = 0; c < p->n_classes; c++)
        *arena += p->classes[c].units * mono_value(&p->classes[c], ext);
    /* The exact bound across classes: the live sum at each launch, by
     * adding each storage where its life starts and taking it away after it
     * ends (summing every storage at every launch was quadratic: 5 s of a
     * 100,000-op compile). */
    int64_t *delta = calloc((size_t)p->n_launches + 1, sizeof *delta);
    if (!delta) {
        *peak = *arena;   /* out of memory: the plan itself is an upper bound */
        free(ext);
        return;
    }
    for (int i = 0; i < p->n_stores; i++) {
        const cv_kstore *s = &p->stores[i];
        int last = s->last < p->n_launches ? s->last : p->n_launches - 1;
        if (s->kind != CV_KST_ARENA || s->first < 0 || s->first > last)
            continue;
        cv_kclass mono;
        int64_t units = storage_units(p, s, &mono) * mono_value(&mono, ext);
        delta[s->first] += units;
        delta[last + 1] -= units;
    }
    int64_t live = 0;
    for (int t = 0; t < p->n_launches; t++) {
        live += delta[t];
        if (live > *peak)
            *peak = live;
    }
    free(delta);
    free(ext);
}
