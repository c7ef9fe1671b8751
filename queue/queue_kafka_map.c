/* The Kafka backend's bookkeeping of strings: in-flight jobs by key and id,
 * and bounded "already seen" sets for deduplication.  Open addressing with
 * linear probing; deleted entries leave tombstones until the next rehash. */
#include <stdlib.h>
#include <string.h>

#include "queue/queue_kafka_internal.h"

struct kq_entry {
    char *key;   /* owned; NULL = empty, TOMB = deleted */
    char *val;   /* owned */
};

static char tomb_mark;
#define TOMB (&tomb_mark)

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot holding key, or the empty slot where it would go. */
static struct kq_entry *find(const kq_map *m, const char *key, struct kq_entry **free_slot)
{
    *free_slot = NULL;
    if (!m->cap)
        return NULL;
    for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct kq_entry *e = &m->v[i];
        if (!e->key) {
            if (!*free_slot)
                *free_slot = e;
            return NULL;
        }
        if (e->key == TOMB) {
            if (!*free_slot)
                *free_slot = e;
        } else if (strcmp(e->key, key) == 0) {
            return e;
        }
    }
}

static int grow(kq_map *m)
{
    size_t cap = m->live * 4 >= m->cap ? (m->cap ? m->cap * 2 : 64) : m->cap;
    struct kq_entry *v = calloc(cap, sizeof *v);
    if (!v)
        return -1;
    kq_map n = {.v = v, .cap = cap};
    for (size_t i = 0; i < m->cap; i++) {
        struct kq_entry *e = &m->v[i], *slot;
        if (e->key && e->key != TOMB) {
            find(&n, e->key, &slot);
            *slot = *e;
            n.used++;
            n.live++;
        }
    }
    free(m->v);
    *m = n;
    return 0;
}

int cv_kq_map_put(kq_map *m, const char *key, const char *val)
{
    struct kq_entry *slot, *e = find(m, key, &slot);
    char *v = strdup(val);
    if (!v)
        return -1;
    if (e) {
        free(e->val);
        e->val = v;
        return 0;
    }
    /* Keep at least a quarter of the slots empty so probes end. */
    if ((m->used + 1) * 4 > m->cap * 3) {
        if (grow(m)) {
            free(v);
            return -1;
        }
        find(m, key, &slot);
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return -1;
    }
    if (!slot->key)
        m->used++;
    slot->key = k;
    slot->val = v;
    m->live++;
    return 0;
}

const char *cv_kq_map_get(const kq_map *m, const char *key)
{
    struct kq_entry *slot, *e = find(m, key, &slot);
    return e ? e->val : NULL;
}

bool cv_kq_map_del(kq_map *m, const char *key)
{
    struct kq_entry *slot, *e = find(m, key, &slot);
    if (!e)
        return false;
    free(e->key);
    free(e->val);
    e->key = TOMB;
    e->val = NULL;
    m->live--;
    return true;
}

void cv_kq_map_free(kq_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->v[i].key && m->v[i].key != TOMB) {
            free(m->v[i].key);
            free(m->v[i].val);
        }
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* Two generations: when the current one is full, the older is dropped. */
int cv_kq_seen_add(kq_seen *s, const char *key)
{
    if (s->cur.live >= KQ_SEEN_MAX) {
        cv_kq_map_free(&s->old);
        s->old = s->cur;
        memset(&s->cur, 0, sizeof s->cur);
    }
    return cv_kq_map_put(&s->cur, key, "");
}

bool cv_kq_seen_has(const kq_seen *s, const char *key)
{
    return cv_kq_map_get(&s->cur, key) || cv_kq_map_get(&s->old, key);
}

void cv_kq_seen_forget(kq_seen *s, const char *key)
{
    cv_kq_map_del(&s->cur, key);
    cv_kq_map_del(&s->old, key);
}

void cv_kq_seen_free(kq_seen *s)
{
    cv_kq_map_free(&s->cur);
    cv_kq_map_free(&s->old);
}
