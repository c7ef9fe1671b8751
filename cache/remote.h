/* The remote cache client: the bazel-remote HTTP layout
 * (GET/PUT/HEAD <base>/cas/<sha256> and <base>/ac/<sha256>) over one reused
 * libcurl handle (a persistent connection), with timeouts, retries with
 * backoff for transient failures, and a short "down" period after a failure
 * so that a dead remote costs one error, not one per look-up.  Not
 * thread-safe: one client per thread. */
#ifndef CV_CACHE_REMOTE_H
#define CV_CACHE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cas.h"

typedef struct cv_remote cv_remote;

typedef struct cv_remote_options {
    const char *url;        /* "http://host:port[/instance][|read-only]" */
    const char *token;      /* bearer token, or NULL */
    bool read_only;
    int timeout_ms;         /* whole request; 0 = 10000 */
    int connect_timeout_ms; /* 0 = 1000 */
    int retries;            /* extra attempts on transient errors; < 0 = none, 0 = 2 */
    int down_ms;            /* after a failure, skip the remote this long; 0 = 30000 */
    uint64_t max_get;       /* largest body accepted; 0 = 4 GiB */
    const char *tmp_dir;    /* where bodies are spooled; NULL = $TMPDIR or /tmp */
    const char *sign_key;   /* Ed25519 private key (PEM): action entries PUT signed; NULL = no */
    const char *verify_key; /* Ed25519 public key (PEM): action entries read must be signed by
                               it (cache/ac_sign.h); NULL = not required */
} cv_remote_options;

enum {
    CV_REMOTE_FOUND = 1,
    CV_REMOTE_MISSING = 0,
    CV_REMOTE_ERROR = -1,   /* unreachable, bad status, bad content */
    CV_REMOTE_TIMEOUT = -2,
    CV_REMOTE_DOWN = -3,    /* skipped: the remote failed recently */
};

typedef struct cv_remote_stats {
    uint64_t requests, errors, timeouts, retries, skipped, bytes_in, bytes_out;
} cv_remote_stats;

int cv_cache_remote_open(const cv_remote_options *o, cv_remote **out, cv_diag *d);
void cv_cache_remote_close(cv_remote *r);
const char *cv_cache_remote_base(const cv_remote *r);
bool cv_cache_remote_read_only(const cv_remote *r);

/* Bodies are spooled to an unlinked file under tmp_dir as they arrive (at
 * most max_get bytes, CV9114 past that or when announced larger), never
 * gathered in memory; a CAS body's SHA-256 is computed on the way and
 * checked against its name (CV9116 when it differs).  _get then reads the
 * body into memory (exactly its size); an action entry's signature is
 * checked when a verify key is set (CV9314).  _get_blob_file hands over
 * the spool instead: *fd (the caller closes it) holds *len checked bytes. */
int cv_cache_remote_get(cv_remote *r, cv_cas_kind kind, const cv_digest *name, void **data,
                        size_t *len, cv_diag *d);
int cv_cache_remote_get_blob_file(cv_remote *r, const cv_digest *name, int *fd, uint64_t *len,
                                  cv_diag *d);
int cv_cache_remote_head(cv_remote *r, cv_cas_kind kind, const cv_digest *name, cv_diag *d);
/* 0 when stored (or skipped: read-only), < 0 on error. */
int cv_cache_remote_put(cv_remote *r, cv_cas_kind kind, const cv_digest *name, const void *data,
                        size_t len, cv_diag *d);
void cv_cache_remote_stats(const cv_remote *r, cv_remote_stats *out);

#endif
