#include "common/arena.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct cv_arena_block {
    cv_arena_block *next;
    size_t cap, used;
    bool zeroed;        /* calloc'd: the bytes past used are zero */
    size_t populated;   /* zeroed blocks: bytes of data known to be mapped in */
    _Alignas(16) unsigned char data[];
};

/* Blocks double from 64 KiB up to 4 MiB, so a module of millions of objects
 * takes a few dozen mallocs.  Blocks from 128 KiB are calloc'd: they come
 * straight from mmap as zero pages, and since every byte is handed out at
 * most once, their memory needs no memset per allocation (nor any write
 * before its first use).  Smaller blocks, often recycled heap memory that
 * calloc would clear whole, are zeroed piecewise as they are handed out. */
enum {
    CV_ARENA_MIN_BLOCK = 64 * 1024,
    CV_ARENA_ZEROED_BLOCK = 128 * 1024,
    CV_ARENA_MAX_BLOCK = 4 * 1024 * 1024,
};

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

void cv_arena_reset(cv_arena *a)
{
    cv_arena_block *keep = a->head;
    if (!keep)
        return;
    cv_arena_block *b = keep->next;
    while (b) {
        cv_arena_block *next = b->next;
        free(b);
        b = next;
    }
    if (keep->zeroed)
        memset(keep->data, 0, keep->used);
    keep->used = 0;
    keep->next = NULL;
    a->used_total = 0;
}

/* Maps in the next stretch of a zeroed block with one call: faulting its
 * pages in one at a time, as first use would, costs about half as much
 * again (a large module is thousands of pages).  Best effort: kernels
 * without MADV_POPULATE_WRITE leave the pages to fault in as usual. */
static void populate(cv_arena_block *b)
{
    enum { STRETCH = 256 * 1024 };
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = ps > 0 ? (size_t)ps : 4096;
    uintptr_t from = (uintptr_t)(b->data + b->populated) & ~(uintptr_t)(page - 1);
    size_t want = b->used + STRETCH < b->cap ? b->used + STRETCH : b->cap;
    uintptr_t to = (uintptr_t)(b->data + want) & ~(uintptr_t)(page - 1);
#ifdef MADV_POPULATE_WRITE
    if (to > from)
        madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#endif
    b->populated = want;
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
        size_t grow = b ? b->cap * 2 : CV_ARENA_MIN_BLOCK;
        if (grow > CV_ARENA_MAX_BLOCK)
            grow = CV_ARENA_MAX_BLOCK;
        size_t cap = size > grow ? size : grow;
        bool zeroed = cap >= CV_ARENA_ZEROED_BLOCK;
        b = zeroed ? calloc(1, sizeof *b + cap) : malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->zeroed = zeroed;
        b->populated = 0;
        /* A large one-off block goes behind the current one so the current
         * block's free tail stays usable for small allocations. */
        if (a->head && size > grow / 4) {
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
    if (!b->zeroed)
        memset(p, 0, size);
    else if (b->used > b->populated)
        populate(b);
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
