/* Position index of a YAML document: entries in a vector, found through two
 * open-addressing hash tables (by node pointer, and by parent + key/index). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/yamldoc_internal.h"

struct cv_yaml_index {
    cv_yaml_entry *v;      /* owned */
    size_t n, cap;
    uint32_t *by_node;     /* owned; entry id + 1, 0 = empty */
    uint32_t *by_slot;     /* owned; same */
    size_t tcap;           /* table capacity, a power of two */
    cv_arena keys;         /* owns the key strings */
};

cv_yspan cv_yspan_of(yaml_mark_t start, yaml_mark_t end)
{
    cv_yspan s = {(int)start.line + 1, (int)start.column + 1, (int)end.line + 1,
                  (int)end.column + 1};
    return s;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_slot(const json_t *parent, const char *key, size_t index)
{
    uint64_t h = mix((uintptr_t)parent);
    if (!key)
        return mix(h ^ (index + 1) * 0x9e3779b97f4a7c15ULL);
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return mix(h);
}

/* true, false and null are shared singletons: they cannot be found by pointer. */
static int by_node_ok(const json_t *n)
{
    return n && !json_is_true(n) && !json_is_false(n) && !json_is_null(n);
}

static void table_put(uint32_t *t, size_t tcap, uint64_t h, uint32_t id1)
{
    size_t i = h & (tcap - 1);
    while (t[i])
        i = (i + 1) & (tcap - 1);
    t[i] = id1;
}

static void index_entry(cv_yaml_index *ix, size_t id)
{
    const cv_yaml_entry *e = &ix->v[id];
    if (by_node_ok(e->node))
        table_put(ix->by_node, ix->tcap, mix((uintptr_t)e->node), (uint32_t)id + 1);
    table_put(ix->by_slot, ix->tcap, hash_slot(e->parent, e->key, e->index), (uint32_t)id + 1);
}

static int rehash(cv_yaml_index *ix, size_t tcap)
{
    uint32_t *a = calloc(tcap, sizeof *a), *b = calloc(tcap, sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    free(ix->by_node);
    free(ix->by_slot);
    ix->by_node = a;
    ix->by_slot = b;
    ix->tcap = tcap;
    for (size_t i = 0; i < ix->n; i++)
        index_entry(ix, i);
    return 0;
}

cv_yaml_index *cv_yidx_new(void)
{
    cv_yaml_index *ix = calloc(1, sizeof *ix);
    if (!ix)
        return NULL;
    cv_arena_init(&ix->keys);
    if (rehash(ix, 64)) {
        free(ix);
        return NULL;
    }
    return ix;
}

void cv_yidx_free(cv_yaml_index *ix)
{
    if (!ix)
        return;
    free(ix->v);
    free(ix->by_node);
    free(ix->by_slot);
    cv_arena_free(&ix->keys);
    free(ix);
}

static int reserve(cv_yaml_index *ix)
{
    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 64;
        cv_yaml_entry *v = realloc(ix->v, cap * sizeof *v);
        if (!v)
            return -1;
        ix->v = v;
        ix->cap = cap;
    }
    if (ix->n + 1 > ix->tcap / 2 && (ix->tcap > UINT32_MAX / 4 || rehash(ix, ix->tcap * 2)))
        return -1;
    return 0;
}

int cv_yidx_add(cv_yaml_index *ix, const json_t *parent, const char *key, size_t index,
                const json_t *node, cv_yspan key_span, cv_yspan span)
{
    if (reserve(ix))
        return -1;
    const char *k = key ? cv_arena_strdup(&ix->keys, key) : NULL;
    if (key && !k)
        return -1;
    cv_yaml_entry *e = &ix->v[ix->n];
    *e = (cv_yaml_entry){parent, k, index, node, key_span, span};
    index_entry(ix, ix->n);
    return (int)ix->n++;
}

cv_yaml_entry *cv_yidx_get(cv_yaml_index *ix, int id)
{
    return id >= 0 && (size_t)id < ix->n ? &ix->v[id] : NULL;
}

const cv_yaml_entry *cv_yidx_by_node(const cv_yaml_index *ix, const json_t *node)
{
    if (!by_node_ok(node))
        return NULL;
    for (size_t i = mix((uintptr_t)node) & (ix->tcap - 1); ix->by_node[i];
         i = (i + 1) & (ix->tcap - 1))
        if (ix->v[ix->by_node[i] - 1].node == node)
            return &ix->v[ix->by_node[i] - 1];
    return NULL;
}

static int slot_eq(const cv_yaml_entry *e, const json_t *parent, const char *key, size_t index)
{
    if (e->parent != parent || !e->key != !key)
        return 0;
    return key ? strcmp(e->key, key) == 0 : e->index == index;
}

static const cv_yaml_entry *by_slot(const cv_yaml_index *ix, const json_t *parent, const char *key,
                                    size_t index)
{
    for (size_t i = hash_slot(parent, key, index) & (ix->tcap - 1); ix->by_slot[i];
         i = (i + 1) & (ix->tcap - 1))
        if (slot_eq(&ix->v[ix->by_slot[i] - 1], parent, key, index))
            return &ix->v[ix->by_slot[i] - 1];
    return NULL;
}

const cv_yaml_entry *cv_yidx_member(const cv_yaml_index *ix, const json_t *parent, const char *key)
{
    return parent && key ? by_slot(ix, parent, key, 0) : NULL;
}

const cv_yaml_entry *cv_yidx_item(const cv_yaml_index *ix, const json_t *parent, size_t i)
{
    return parent ? by_slot(ix, parent, NULL, i) : NULL;
}

const cv_yaml_entry *cv_yidx_root(const cv_yaml_index *ix)
{
    return by_slot(ix, NULL, NULL, 0);
}
