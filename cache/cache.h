/* The content-addressed compilation cache.
 *
 *  - digests: SHA-256 (OpenSSL) names every blob and key; XXH3 (xxHash) is
 *    the fast content check (blob headers, the file-hash memo).
 *  - keys: an ordered list of named fields -> a key manifest (JSON, every
 *    field recorded) and the key sha256(domain || length-prefixed fields).
 *  - the local store ($CUVIL_CACHE_DIR): cas/ab/<sha256> blobs and
 *    ac/ab/<sha256> action entries, zstd-compressed (large blobs zstd cannot
 *    shrink much are kept raw, to be cloned or copied in the kernel on a
 *    hit), written to a temp file and renamed, verified on read (a large
 *    blob in full on its first read, then while its file's stat data are
 *    unchanged: see cache/blobfile.c); index.sqlite for LRU eviction and
 *    stats, written once per process on a hit (cache/pending.h).
 *  - a remote: the bazel-remote HTTP layout (libcurl client, libmicrohttpd
 *    server), so Bazel and ccache share a `cuvil cache serve`.
 *
 * The cache knows nothing of models: it stores bytes under keys.  Which
 * fields make an L1 or L2 key is the compile path's business, defined once
 * there (build_keys.c, beside the build). */
#ifndef CV_CACHE_H
#define CV_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/fs.h"

/* ------------------------------------------------------------ digests */

#define CV_CACHE_HEX_LEN 64

typedef struct cv_digest {
    uint8_t b[32];
} cv_digest;

typedef struct cv_xxh128 {
    uint64_t lo, hi;
} cv_xxh128;

typedef struct cv_cache_hasher cv_cache_hasher; /* opaque: a SHA256_CTX */

void cv_cache_sha256(const void *data, size_t len, cv_digest *out);
cv_cache_hasher *cv_cache_hasher_new(void); /* NULL on OOM; caller frees */
void cv_cache_hasher_update(cv_cache_hasher *h, const void *data, size_t len);
/* Writes the digest and resets the hasher for reuse. */
void cv_cache_hasher_final(cv_cache_hasher *h, cv_digest *out);
void cv_cache_hasher_free(cv_cache_hasher *h);

void cv_cache_digest_hex(const cv_digest *dg, char out[CV_CACHE_HEX_LEN + 1]);
/* Exactly 64 hex digits (either case); 0, or -1 when malformed. */
int cv_cache_digest_parse(const char *hex, cv_digest *out);
bool cv_cache_digest_eq(const cv_digest *a, const cv_digest *b);

uint64_t cv_cache_xxh3_64(const void *data, size_t len);
cv_xxh128 cv_cache_xxh3_128(const void *data, size_t len);
void cv_cache_xxh128_hex(cv_xxh128 h, char out[33]);

/* One pass over a file: SHA-256 and XXH3-64 (any out may be NULL). */
int cv_cache_hash_file(const char *path, cv_digest *sha, uint64_t *xxh3,
                       uint64_t *size, cv_diag *d);
/* XXH3-64 only: the cheap re-check of a file whose stat looks unchanged. */
int cv_cache_xxh3_file(const char *path, uint64_t *xxh3, cv_diag *d);

/* "1.5 GiB" style; returns out. */
char *cv_cache_format_size(uint64_t bytes, char out[32]);

/* ---------------------------------------------------------------- keys */

typedef struct cv_cache_key {
    cv_digest digest;
    char *manifest; /* owned: the key manifest, compact JSON */
} cv_cache_key;

typedef struct cv_cache_keyb cv_cache_keyb; /* opaque key builder */

/* domain: the tag that separates key spaces, e.g. "cuvil-l2". */
cv_cache_keyb *cv_cache_keyb_new(const char *domain); /* NULL on OOM */
/* Field names are unique, printable and at most 128 bytes.  Errors
 * (duplicates, bad names, OOM) are kept and reported by finish. */
void cv_cache_keyb_str(cv_cache_keyb *kb, const char *name, const char *value);
void cv_cache_keyb_int(cv_cache_keyb *kb, const char *name, int64_t value);
void cv_cache_keyb_bool(cv_cache_keyb *kb, const char *name, bool value);
/* Large values enter the key (and the manifest) by their SHA-256. */
void cv_cache_keyb_bytes(cv_cache_keyb *kb, const char *name, const void *data, size_t len);
void cv_cache_keyb_digest(cv_cache_keyb *kb, const char *name, const cv_digest *dg);
/* Frees the builder in every case. */
int cv_cache_keyb_finish(cv_cache_keyb *kb, cv_cache_key *out, cv_diag *d);
void cv_cache_keyb_free(cv_cache_keyb *kb);
void cv_cache_key_free(cv_cache_key *k);
/* Parses a manifest and recomputes its key (so a manifest is checkable). */
int cv_cache_key_from_manifest(const char *manifest, cv_cache_key *out, cv_diag *d);

typedef struct cv_cache_named_digest {
    const char *name;
    cv_digest digest;
} cv_cache_named_digest;

/* ------------------------------------------------------------- explain */

typedef struct cv_cache_diff {
    char *field; /* owned */
    char *text;  /* owned: "target features: +avx512f" */
} cv_cache_diff;

typedef struct cv_cache_diffs {
    cv_cache_diff *v; /* owned */
    int n;
} cv_cache_diffs;

/* Fields of manifest b that differ from manifest a (old -> new). */
int cv_cache_explain(const char *manifest_a, const char *manifest_b,
                     cv_cache_diffs *out, cv_diag *d);
void cv_cache_diffs_free(cv_cache_diffs *ds);

/* --------------------------------------------------------- local+remote */

typedef enum cv_cache_level {
    CV_CACHE_L1 = 0,
    CV_CACHE_L2 = 1,
    CV_CACHE_CODE = 2,       /* generated code apart from weights (compile/: a retrain hits it) */
    CV_CACHE_NLEVELS
} cv_cache_level;

typedef enum cv_cache_source {
    CV_CACHE_SRC_NONE = 0,
    CV_CACHE_SRC_LOCAL,
    CV_CACHE_SRC_REMOTE
} cv_cache_source;

typedef enum cv_cache_miss_reason {
    CV_MISS_NONE = 0,
    CV_MISS_NOT_FOUND,   /* never stored (or stored under another key) */
    CV_MISS_EVICTED,     /* stored once, evicted for space */
    CV_MISS_CORRUPT,     /* stored, failed verification, removed */
    CV_MISS_REMOTE_ERROR,/* local miss and the remote failed */
    CV_MISS_DISABLED,    /* CUVIL_CACHE=off */
    CV_MISS_NREASONS
} cv_cache_miss_reason;

const char *cv_cache_miss_reason_name(cv_cache_miss_reason r);

typedef struct cv_cache_lookup {
    cv_cache_source source;
    cv_cache_miss_reason reason;
    double ms;            /* time the look-up took */
} cv_cache_lookup;

typedef struct cv_cache_options {
    const char *dir;         /* NULL: $CUVIL_CACHE_DIR, else ~/.cache/cuvil */
    const char *remote;      /* NULL: $CUVIL_REMOTE_CACHE; "" = none.
                                "http://host:port[/instance][|read-only]" */
    const char *remote_token;/* NULL: $CUVIL_REMOTE_CACHE_TOKEN */
    bool remote_read_only;
    int remote_timeout_ms;   /* whole request; 0 = 10000 */
    int remote_connect_timeout_ms; /* 0 = 1000 */
    int remote_retries;      /* extra attempts after a transient error; -1 = 0, 0 = 2 */
    uint64_t max_size;       /* 0: $CUVIL_CACHE_SIZE, else 10 GiB */
    int zstd_level;          /* 0 = default 1; -1 = store uncompressed */
    int memo_racy_ms;        /* file-hash memo: a file changed this close to its
                                hashing is re-checked by XXH3; 0 = 2000 */
    bool disabled;           /* also when $CUVIL_CACHE=off */
    bool ignore_env;         /* tests: read no environment variable */
    /* Ed25519 PEM files for the remote's action entries (signed on PUT,
     * verified on GET: a verify key refuses unsigned and foreign entries);
     * NULL: $CUVIL_REMOTE_CACHE_SIGNING_KEY / $CUVIL_REMOTE_CACHE_VERIFY_KEY;
     * "" = none.  A private key also serves as verify key. */
    const char *sign_key, *verify_key;
} cv_cache_options;

typedef struct cv_cache cv_cache; /* opaque */

int cv_cache_open(const cv_cache_options *opt, cv_cache **out, cv_diag *d);
/* Makes a new Ed25519 key pair for signed action entries: the private key
 * to sign_pem (0600), the public one to verify_pem (0644), each written
 * whole then renamed.  CV9315 on failure. */
int cv_cache_ac_keygen(const char *sign_pem, const char *verify_pem, cv_diag *d);
/* Ends a batch still open (its files synced, trouble ignored) and frees c. */
void cv_cache_close(cv_cache *c);

/* A batch of stores, e.g. one compile's: between _begin and _end, stores
 * are visible at once to every reader but not waited onto the disk one by
 * one, nor written to the index one by one, nor checked against the size
 * limit; _end syncs all the batch's files together (cache/cas_sync.h says
 * why that is safe), writes the index in one transaction and evicts if the
 * store grew past its limit.  Publish a stored digest beyond this cache
 * (a farm result) only after _end returned 0; < 0 means the files may not
 * survive a power cut (an error in d).  Both are no-ops on a disabled
 * cache.  _begin returns 0 when it opened a batch, 1 when one was open
 * already (its opener ends it), < 0 on error. */
int cv_cache_batch_begin(cv_cache *c, cv_diag *d);
int cv_cache_batch_end(cv_cache *c, cv_diag *d);
/* _end for a caller that syncs later, maybe in another process (a farm
 * worker's compile child hands them to the worker, which syncs them while
 * the next job compiles): the index is written and the limit enforced, but
 * the files are only named in *paths (malloc'd array of *n malloc'd
 * strings; cv_cache_paths_free).  Publish nothing before
 * cv_cache_sync_files returned 0 for them. */
int cv_cache_batch_end_unsynced(cv_cache *c, char ***paths, int *n, cv_diag *d);
/* Fsyncs files by path, several at a time; one removed meanwhile (evicted)
 * needs nothing.  0, or < 0 with an error in d. */
int cv_cache_sync_files(char *const *paths, int n, cv_diag *d);
void cv_cache_paths_free(char **paths, int n);
bool cv_cache_enabled(const cv_cache *c);
const char *cv_cache_dir(const cv_cache *c);

/* Blobs by content.  get: 1 hit (*data malloc'd, caller frees) or 0 miss;
 * put: 0, or < 0 when it could not be stored.  Cache trouble never fails a
 * build: a corrupt entry, an unreadable or full disk, a failing remote are
 * warnings in d (a failing remote: once per cv_cache), counted in the
 * stats.  A corrupt entry is removed; a remote hit is verified (blobs) and
 * written back locally. */
int cv_cache_put_blob(cv_cache *c, const void *data, size_t len, cv_digest *out, cv_diag *d);
int cv_cache_get_blob(cv_cache *c, const cv_digest *dg, void **data, size_t *len,
                      cv_cache_lookup *info, cv_diag *d);
int cv_cache_has_blob(cv_cache *c, const cv_digest *dg);

/* Blobs as files (an artifact's outputs; see cache/blobfile.c).  get:
 * blob dg as the file `path` with permissions `mode`: 1 done (written
 * beside path and renamed over it, a large blob cloned or copied in the
 * kernel; or left alone when the file-hash memo shows path to hold exactly
 * these bytes already), 0 miss (as cv_cache_get_blob, remote included),
 * < 0 path could not be written.  *size: the blob's size.  put: stores the
 * file's bytes (at most max_bytes) as a blob and remembers that path holds
 * them, so that the next get into the same place writes nothing. */
int cv_cache_get_blob_file(cv_cache *c, const cv_digest *dg, const char *path, unsigned mode,
                           uint64_t *size, cv_cache_lookup *info, cv_diag *d);
int cv_cache_put_blob_file(cv_cache *c, const char *path, size_t max_bytes, cv_digest *out,
                           uint64_t *size, cv_diag *d);
/* A file made of blobs (an artifact file around a weights image stored
 * once: compile/build_store.c).  in_place: 1 when the memo shows path to
 * hold the bytes of digest dg with this mode already.  write_file_parts:
 * writes path from pieces whose concatenation the caller has checked to
 * be dg, and remembers it (as cv_cache_get_blob_file).  remember_file:
 * the memo learns that path, whose bytes are data, holds dg. */
int  cv_cache_file_in_place(cv_cache *c, const char *path, const cv_digest *dg, unsigned mode,
                            uint64_t *size);
int  cv_cache_write_file_parts(cv_cache *c, const char *path, unsigned mode, const cv_digest *dg,
                               const cv_fs_part *parts, int n, cv_diag *d);
void cv_cache_remember_file(cv_cache *c, const char *path, const void *data, size_t len,
                            const cv_digest *dg);
/* cv_cache_put_blob_file for n files at once (an artifact's): they are
 * read, hashed, compressed and synced in parallel, then recorded; out[i]
 * and sizes[i] are file i's digest and size.  remember false: the files
 * are about to be removed (a farm worker's scratch copy), so no memo rows
 * are written for their paths. */
int cv_cache_put_blob_files(cv_cache *c, const char *const *paths, int n, size_t max_bytes,
                            bool remember, cv_digest *out, uint64_t *sizes, cv_diag *d);

/* Action entries by key; the key's manifest is recorded for explain. */
int cv_cache_put_action(cv_cache *c, cv_cache_level lv, const cv_cache_key *key,
                        const void *entry, size_t len, cv_diag *d);
int cv_cache_get_action(cv_cache *c, cv_cache_level lv, const cv_cache_key *key,
                        void **entry, size_t *len, cv_cache_lookup *info, cv_diag *d);

/* Auxiliary action entries: stored, found, shared with the remote and
 * evicted like action entries, but counted in no level's hits and misses
 * and given no manifest.  For a compile path's own bookkeeping on the way
 * to its counted look-up (worker/: the files a model reads, which the L1
 * key needs before the front end runs). */
int cv_cache_put_aux(cv_cache *c, const cv_cache_key *key, const void *entry, size_t len,
                     cv_diag *d);
int cv_cache_get_aux(cv_cache *c, const cv_cache_key *key, void **entry, size_t *len,
                     cv_cache_lookup *info, cv_diag *d);

/* The stored key manifest of this level closest to `manifest` (fewest
 * differing fields, newest on ties): 1 found (*closest malloc'd), 0 none. */
int cv_cache_closest_manifest(cv_cache *c, cv_cache_level lv, const char *manifest,
                              char **closest, cv_diag *d);

/* SHA-256 of a file through the (path, size, mtime, ctime, inode) memo, so
 * an unchanged big file is not re-read. */
int cv_cache_file_digest(cv_cache *c, const char *path, cv_digest *out, cv_diag *d);

/* Lets the compile path add what only it knows (its own miss time). */
void cv_cache_note_miss_time(cv_cache *c, cv_cache_level lv, double ms);

typedef struct cv_cache_stats {
    uint64_t hits_local[CV_CACHE_NLEVELS], hits_remote[CV_CACHE_NLEVELS];
    uint64_t misses[CV_CACHE_NLEVELS];
    uint64_t miss_reasons[CV_MISS_NREASONS];
    uint64_t blob_hits_local, blob_hits_remote, blob_misses;
    uint64_t hit_time_us, hit_count, miss_time_us, miss_count;
    uint64_t bytes_stored, max_size, entries, ac_entries;
    uint64_t evictions, evicted_bytes, evicted_then_requested;
    uint64_t corrupt;
    uint64_t remote_errors, remote_timeouts, remote_puts;
    uint64_t memo_hits, memo_rechecks, full_hashes;
} cv_cache_stats;

int cv_cache_stats_get(cv_cache *c, cv_cache_stats *st, cv_diag *d);
int cv_cache_stats_zero(cv_cache *c, cv_diag *d);
/* A JSON object (jansson json_t *); caller owns it. */
struct json_t *cv_cache_stats_json(const cv_cache_stats *st);

/* Evicts least-recently-used entries until the store holds <= max_bytes
 * (0 = the configured limit). */
int cv_cache_evict(cv_cache *c, uint64_t max_bytes, uint64_t *n_evicted,
                   uint64_t *bytes_freed, cv_diag *d);
/* Removes every entry (statistics stay). */
int cv_cache_clear(cv_cache *c, cv_diag *d);

typedef struct cv_cache_verify_report {
    uint64_t checked, corrupt, bytes, indexed_added, index_dropped;
} cv_cache_verify_report;
/* Re-hashes every entry, drops corrupt ones, reconciles the index. */
int cv_cache_verify(cv_cache *c, cv_cache_verify_report *r, cv_diag *d);

/* -------------------------------------------------------------- server */

typedef struct cv_cache_server_options {
    const char *listen;      /* "127.0.0.1:8080", "[::1]:0"; port 0 = any */
    const char *dir;         /* the store (created when missing) */
    uint64_t max_size;       /* 0 = no limit */
    const char *tokens_file; /* NULL = no authentication */
    uint64_t max_request;    /* PUT body limit; 0 = 1 GiB */
    int threads;             /* 0 = number of CPUs */
    int zstd_level;          /* 0 = store uncompressed (fastest GETs) */
    const struct cv_netguard_opts *limits; /* connections and deadlines (common/netguard.h);
                                              NULL = the defaults there */
} cv_cache_server_options;

typedef struct cv_cache_server cv_cache_server; /* opaque */

int cv_cache_server_start(const cv_cache_server_options *opt, cv_cache_server **out,
                          cv_diag *d);
int cv_cache_server_port(const cv_cache_server *s);
/* Stops accepting, lets in-flight requests finish (up to grace_ms), flushes
 * the index and frees the server. */
void cv_cache_server_stop(cv_cache_server *s, int grace_ms);

#endif
