/* Shared by the cache's own files only: diagnostic codes and small helpers. */
#ifndef CV_CACHE_INTERNAL_H
#define CV_CACHE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

/* Adds an error (when d is not NULL) and returns -1. */
int cv_cache_err(cv_diag *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a warning (when d is not NULL). */
void cv_cache_warn(cv_diag *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The diagnostic code for a failed write: disk full or plain I/O. */
int cv_cache_write_errcode(int err);

/* Runs fn(ctx, i) for every i in [0, n) from up to max_threads threads,
 * the caller's included (thread j takes j, j + k, ...); a thread that cannot
 * be started leaves its share to the caller.  For work whose waits overlap
 * (fsyncs share the file system's journal commits) or that spreads over
 * cores (hashing and compressing an artifact's files). */
void cv_cache_parallel(int n, int max_threads, void (*fn)(void *ctx, int i), void *ctx);

void cv_cache_hex(const uint8_t *b, size_t n, char *out); /* out: 2n+1 bytes */

/* cas.c, for cas_stream.c: pread of exactly n bytes (0, or -1); a corrupt
 * entry reported (a warning) and removed, returning CV_CAS_CORRUPT. */
struct cv_cas_entry;
int cv_cache_cas_read_at(int fd, void *buf, size_t n, long long off);
int cv_cache_cas_corrupt(const struct cv_cas_entry *e, const char *why, cv_diag *d);
int64_t cv_cache_now_us(void);      /* wall clock, for last-use times */
int64_t cv_cache_mono_us(void);     /* monotonic, for durations */

#endif
