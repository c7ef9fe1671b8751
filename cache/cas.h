/* The on-disk store: <root>/cas/ab/<sha256> blobs (content-addressed) and
 * <root>/ac/ab/<sha256> action entries (key -> opaque bytes), each file a
 * 24-byte header (magic "CVB1", codec, raw size, XXH3-64 of the raw bytes)
 * followed by the raw or zstd-compressed bytes.  Large blobs that zstd
 * cannot shrink much (an artifact is mostly weights) are stored raw with
 * the payload at offset 4096: a cache hit then clones it (FICLONERANGE on
 * btrfs and XFS) or copies it inside the kernel (copy_file_range) into the
 * output file instead of decompressing it.  Files are written to
 * <root>/tmp, fsynced and renamed into place (in a batch: renamed, and
 * fsynced with the batch's other files at its end, cas_sync.h), so readers
 * in any process see either nothing or a whole file; every read is
 * verified. */
#ifndef CV_CACHE_CAS_H
#define CV_CACHE_CAS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"

typedef enum cv_cas_kind { CV_CAS_BLOB = 0, CV_CAS_AC = 1 } cv_cas_kind;

enum {
    CV_CAS_MISSING = 0,
    CV_CAS_FOUND = 1,
    CV_CAS_CORRUPT = 2,      /* reported, removed: callers treat it as a miss */
    CV_CAS_BAD_DIGEST = -2,  /* commit: the bytes do not hash to the name */
    CV_CAS_HEADER = 24,
    CV_CAS_PAGE = 4096,      /* where a large raw blob's payload starts */
};

/* How much a read checks: the header's XXH3 always; the SHA-256 of a blob
 * unless the caller settles for the fast check (the server, whose clients
 * verify SHA-256 themselves). */
typedef enum cv_cas_verify { CV_CAS_VERIFY_FULL = 0, CV_CAS_VERIFY_FAST = 1 } cv_cas_verify;

typedef struct cv_cas cv_cas;
typedef struct cv_cas_writer cv_cas_writer;

/* zstd_level 0 stores raw bytes; 1..19 compresses. */
int cv_cache_cas_open(const char *root, int zstd_level, cv_cas **out, cv_diag *d);
void cv_cache_cas_close(cv_cas *cas);
const char *cv_cache_cas_root(const cv_cas *cas);
const char *cv_cache_cas_kind_dir(cv_cas_kind kind); /* "cas" or "ac" */
void cv_cache_cas_path(const cv_cas *cas, cv_cas_kind kind, const cv_digest *name, char *out,
                       size_t cap);

/* A blob's name is its SHA-256: computed when key is NULL (*out_name
 * receives it), trusted when given (the caller hashed or verified the
 * bytes); an action entry's name is its key.  *stored receives the bytes
 * on disk. */
int cv_cache_cas_put(cv_cas *cas, cv_cas_kind kind, const cv_digest *key, const void *data,
                     size_t len, cv_digest *out_name, uint64_t *stored, cv_diag *d);
/* CV_CAS_FOUND (*data malloc'd, caller frees), CV_CAS_MISSING, CV_CAS_CORRUPT,
 * or < 0 (I/O error, or larger than max_len). */
int cv_cache_cas_get(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, cv_cas_verify v,
                     size_t max_len, void **data, size_t *len, uint64_t *stored, cv_diag *d);
/* 1 when present (*stored = bytes on disk), 0 when not. */
int cv_cache_cas_exists(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, uint64_t *stored);
int cv_cache_cas_remove(cv_cas *cas, cv_cas_kind kind, const cv_digest *name);

/* An entry opened for reading in steps (the server checks a raw entry,
 * then sends it straight from the file; it streams a compressed one). */
typedef struct cv_cas_entry {
    int fd;                /* owned: cv_cache_cas_entry_close */
    cv_cas_kind kind;
    cv_digest name;
    uint64_t raw;          /* payload bytes */
    uint64_t stored;       /* file bytes */
    bool raw_codec;        /* the payload lies as is at offset CV_CAS_HEADER */
    bool paged;            /* the payload lies as is at offset CV_CAS_PAGE */
    uint64_t dev, ino;     /* which file was opened (it is never changed in place) */
    int64_t mtime_ns, ctime_ns;
    uint8_t hdr[CV_CAS_HEADER];
    char path[PATH_MAX];
} cv_cas_entry;

/* CV_CAS_FOUND (e->fd open), CV_CAS_MISSING, CV_CAS_CORRUPT (bad header:
 * reported and removed) or < 0.  _open is _stat (open and fstat: the file's
 * identity) followed by _header (reads and checks the header). */
int cv_cache_cas_entry_open(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, cv_cas_entry *e,
                            cv_diag *d);
int cv_cache_cas_entry_stat(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, cv_cas_entry *e,
                            cv_diag *d);
int cv_cache_cas_entry_header(cv_cas_entry *e, cv_diag *d);
/* Reads and verifies the payload: CV_CAS_FOUND (*data malloc'd),
 * CV_CAS_CORRUPT (reported, removed) or < 0.  The entry stays open. */
int cv_cache_cas_entry_read(cv_cas_entry *e, cv_cas_verify v, size_t max_len, void **data,
                            size_t *len, cv_diag *d);
void cv_cache_cas_entry_close(cv_cas_entry *e);
/* The XXH3-64 of the payload that the header records. */
uint64_t cv_cache_cas_entry_xxh3(const cv_cas_entry *e);
/* Copies a raw or paged entry's payload, unverified, into out_fd (empty,
 * at offset 0): cloned when the file system can share the blocks, else
 * copied inside the kernel, else by read and write.  0, or -1 with errno. */
int cv_cache_cas_entry_copy(cv_cas_entry *e, int out_fd);

/* Streaming reads: the payload in steps of the caller's size, raw or
 * decompressed as it goes, so a large entry never sits whole in memory.
 * The stream reads its own copy of e's descriptor (e may be closed).  Its
 * XXH3 is checked before the step that ends the payload is handed out: a
 * reader never receives a whole payload that does not match, only a short
 * one, then CV_CAS_CORRUPT (reported, the file removed). */
typedef struct cv_cas_stream cv_cas_stream;
int cv_cache_cas_stream_open(const cv_cas_entry *e, cv_cas_stream **out, cv_diag *d);
/* CV_CAS_FOUND with *got bytes in buf (0: the payload is done and intact),
 * CV_CAS_CORRUPT, or < 0 (I/O error). */
int cv_cache_cas_stream_read(cv_cas_stream *s, void *buf, size_t cap, size_t *got, cv_diag *d);
void cv_cache_cas_stream_close(cv_cas_stream *s);
/* Reads the whole payload through a stream and drops it: CV_CAS_FOUND when
 * it matches its XXH3, CV_CAS_CORRUPT, or < 0. */
int cv_cache_cas_entry_check(const cv_cas_entry *e, cv_diag *d);

/* Streaming writes (server uploads). */
int cv_cache_cas_writer_open(cv_cas *cas, cv_cas_kind kind, cv_cas_writer **out, cv_diag *d);
int cv_cache_cas_writer_write(cv_cas_writer *w, const void *data, size_t len, cv_diag *d);
uint64_t cv_cache_cas_writer_size(const cv_cas_writer *w);
/* Finishes and renames into place, then frees w.  For a blob, `expect` (may
 * be NULL) is checked against the SHA-256 (CV_CAS_BAD_DIGEST when it
 * differs); for an action entry it is the key and required. */
int cv_cache_cas_writer_commit(cv_cas_writer *w, const cv_digest *expect, cv_digest *out_name,
                               uint64_t *stored, cv_diag *d);
void cv_cache_cas_writer_abort(cv_cas_writer *w);

/* Batches (cas_sync.h): from _defer_sync on, commits rename without
 * waiting for the disk; _sync fsyncs all of them at once and ends the
 * batch (0, or < 0 when a file could not be synced). */
int cv_cache_cas_defer_sync(cv_cas *cas, cv_diag *d);
int cv_cache_cas_sync(cv_cas *cas, cv_diag *d);
/* Ends the batch without syncing: *paths (malloc'd array of *n malloc'd
 * strings) names the files still to be synced.  0, or -1 out of memory
 * (everything synced, nothing handed over). */
int cv_cache_cas_detach(cv_cas *cas, char ***paths, int *n, cv_diag *d);

typedef int (*cv_cas_walk_fn)(void *ctx, cv_cas_kind kind, const cv_digest *name,
                              uint64_t stored, int64_t mtime_us);
/* Calls fn for every entry (stops when fn returns non-zero). */
int cv_cache_cas_walk(cv_cas *cas, cv_cas_walk_fn fn, void *ctx, cv_diag *d);
/* Removes temp files older than age_s (left by crashed writers). */
void cv_cache_cas_clean_tmp(cv_cas *cas, int age_s);

#endif
