#include "common/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cv_arena_block {
    cv_arena_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

enum { CV_ARENA_MIN_BLOCK = 64 * 1024 };

void cv_arena_init(cv_arena *a) { a->head = NULL; a->used_total = 0; }

void cv_arena_free(cv_arena *a)
{
    cv_arena_block *b = a->head;
    while (b) {
        cv_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
}

void *cv_arena_alloc(cv_arena *a, size_t size)
{
    if (size > SIZE_MAX / 2)
        return NULL;
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    cv_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > CV_ARENA_MIN_BLOCK ? size : CV_ARENA_MIN_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        /* A large one-off block goes behind the current one so the current
         * block's free tail stays usable for small allocations. */
        if (a->head && size > CV_ARENA_MIN_BLOCK / 4) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    a->used_total += size;
    memset(p, 0, size);
    return p;
}

void *cv_arena_alloc_array(cv_arena *a, size_t count, size_t elem)
{
    if (elem && count > SIZE_MAX / elem)
        return NULL;
    return cv_arena_alloc(a, count * elem);
}

char *cv_arena_strndup(cv_arena *a, const char *s, size_t n)
{
    char *p = cv_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

char *cv_arena_strdup(cv_arena *a, const char *s)
{
    return cv_arena_strndup(a, s, strlen(s));
}

void *cv_arena_memdup(cv_arena *a, const void *p, size_t n)
{
    void *q = cv_arena_alloc(a, n);
    if (q && n)
        memcpy(q, p, n);
    return q;
}
