/* Arenas: bump allocators freed as a whole.  IR modules, parse trees and
 * interpreter scratch live in arenas so that error paths never leak. */
#ifndef CV_ARENA_H
#define CV_ARENA_H

#include <stddef.h>

typedef struct cv_arena_block cv_arena_block;

typedef struct cv_arena {
    cv_arena_block *head;   /* owned: the chain of blocks, newest first */
    size_t used_total;      /* bytes handed out, for statistics */
} cv_arena;

void  cv_arena_init(cv_arena *a);
void  cv_arena_free(cv_arena *a);
/* Empties the arena for reuse, keeping its newest block (zeroed again):
 * for scratch memory that lives one step of a loop. */
void  cv_arena_reset(cv_arena *a);
/* Returns zeroed memory aligned to 16 bytes; NULL only when malloc fails
 * or the size overflows. */
void *cv_arena_alloc(cv_arena *a, size_t size);
void *cv_arena_alloc_array(cv_arena *a, size_t count, size_t elem);
char *cv_arena_strdup(cv_arena *a, const char *s);
char *cv_arena_strndup(cv_arena *a, const char *s, size_t n);
void *cv_arena_memdup(cv_arena *a, const void *p, size_t n);

#endif
