/* Blobs as files: an artifact's outputs on a hit, and its files on a store.
 *
 * A hit that finds an output already holding the right bytes (the memo:
 * the file is as it was when Cuvil wrote or stored it) leaves it alone,
 * mtime and all, so a warm compile neither rewrites 140 MB nor makes
 * `make` relink what depends on it.  Otherwise the blob is written beside
 * the output and renamed over it: a large stored-raw blob is cloned or
 * copied inside the kernel, without passing through this process.
 *
 * Verification: a blob is checked in full (SHA-256 of its bytes against
 * its name) the first time it is read, and its store file's stat data are
 * then remembered; while they are unchanged the file is trusted, as the
 * memo trusts a model file (the store never changes a file in place: any
 * change to it moves its ctime).  Outputs are copies, never hard links: a
 * user editing an output (strip rewrites in place when a file has several
 * links) must not be able to change what the cache serves. */
#include "cache/cache_impl.h"
#include "cache/internal.h"
#include "common/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* The absolute name of path (its directory resolved): the memo's key. */
static int absolute(const char *path, char out[PATH_MAX])
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = slash ? slash + 1 : path;
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= sizeof dir || !*base)
        return -1;
    memcpy(dir, path, n);
    dir[n] = 0;
    if (!realpath(slash ? (n ? dir : "/") : ".", real))
        return -1;
    int w = snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") ? real : "", base);
    return w > 0 && w < PATH_MAX ? 0 : -1;
}

/* 1 when abs already holds blob dg with this mode, as the memo knows. */
static int in_place(cv_cache *c, const char *abs, const cv_digest *dg, unsigned mode,
                    uint64_t *size)
{
    struct stat st;
    cv_index_memo m;
    int64_t seen = cv_cache_now_us() * 1000;
    if (lstat(abs, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != mode)
        return 0;
    cv_memo_state ms = cv_cache_memo_lookup(c, abs, &st, &m);
    if (ms == CV_MEMO_STALE || !cv_cache_digest_eq(&m.sha, dg))
        return 0;
    if (ms == CV_MEMO_RACY) {
        uint64_t x = 0;
        if (cv_cache_xxh3_file(abs, &x, NULL) != 0 || x != m.xxh3)
            return 0;
        cv_cache_memo_record(c, abs, &st, x, dg, seen);
    }
    *size = (uint64_t)st.st_size;
    return 1;
}

typedef struct filler {
    cv_cas_entry *e;    /* copy this entry's payload, or */
    const void *data;   /* write these bytes, or */
    size_t len;
    const cv_fs_part *parts;    /* these pieces in order */
    int n_parts;
} filler;

static int write_bytes(int fd, const void *data, size_t len)
{
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

static int fill(int fd, const filler *f)
{
    if (f->e)
        return cv_cache_cas_entry_copy(f->e, fd);
    for (int i = 0; i < f->n_parts; i++)
        if (write_bytes(fd, f->parts[i].data, f->parts[i].len) != 0)
            return -1;
    return f->parts ? 0 : write_bytes(fd, f->data, f->len);
}

/* Writes abs beside itself and renames it into place, without fsync: an
 * output the cache can always write again, and a hit should not wait for
 * the disk.  Then the memo learns what abs holds. */
static int write_out(cv_cache *c, const char *abs, unsigned mode, const filler *f,
                     const cv_digest *dg, uint64_t xxh3, cv_diag *d)
{
    static unsigned long counter;
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.%lu.tmp", abs, (long)getpid(), counter++) >=
        (int)sizeof tmp)
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "path too long: %s", abs);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && fill(fd, f) == 0 && fchmod(fd, (mode_t)mode) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, abs) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        return cv_cache_err(d, cv_cache_write_errcode(e), "cannot write %s: %s", abs, strerror(e));
    }
    struct stat st;
    int64_t seen = cv_cache_now_us() * 1000;
    if (lstat(abs, &st) == 0)
        cv_cache_memo_record(c, abs, &st, xxh3, dg, seen);
    return 0;
}

/* The store file's memo row, if it vouches for e holding blob dg. */
static cv_memo_state vouched(cv_cache *c, cv_cas_entry *e, const cv_digest *dg,
                             struct stat *st)
{
    cv_index_memo m = {0};
    if (fstat(e->fd, st) != 0)
        return CV_MEMO_STALE;
    cv_memo_state ms = cv_cache_memo_lookup(c, e->path, st, &m);
    if (!cv_cache_digest_eq(&m.sha, dg) || m.xxh3 != cv_cache_cas_entry_xxh3(e))
        return CV_MEMO_STALE;
    return ms;
}

/* From the local store: 1 written, 0 not there (or corrupt: removed and
 * counted; or unreadable: a warning), < 0 the output could not be written. */
static int from_store(cv_cache *c, const cv_digest *dg, const char *abs, unsigned mode,
                      uint64_t *size, cv_cache_txn *a, cv_diag *d)
{
    cv_diag scratch;
    cv_diag_init(&scratch);
    cv_cas_entry e;
    int64_t seen = cv_cache_now_us() * 1000;
    int rc = cv_cache_cas_entry_open(c->cas, CV_CAS_BLOB, dg, &e, &scratch);
    struct stat st;
    cv_memo_state ms = rc == CV_CAS_FOUND ? vouched(c, &e, dg, &st) : CV_MEMO_STALE;
    void *data = NULL; /* owned here */
    size_t len = 0;
    if (rc == CV_CAS_FOUND && (ms != CV_MEMO_FRESH || (!e.raw_codec && !e.paged))) {
        /* Racy: the bytes must still hash to the XXH3 recorded with the
         * full check (entry_read compares them with the header's). */
        rc = cv_cache_cas_entry_read(&e, ms == CV_MEMO_STALE ? CV_CAS_VERIFY_FULL
                                                             : CV_CAS_VERIFY_FAST,
                                     CV_CACHE_MAX_ENTRY, &data, &len, &scratch);
        if (rc == CV_CAS_FOUND && ms != CV_MEMO_FRESH)
            cv_cache_memo_record(c, e.path, &st, cv_cache_cas_entry_xxh3(&e), dg, seen);
    }
    if (rc == CV_CAS_CORRUPT) {
        cv_cache_txn_count(a, CV_CTR_CORRUPT, 1);
        cv_cache_txn_event(a, CV_IDX_REMOVE, CV_CAS_BLOB, dg, 0);
    }
    for (int i = 0; i < scratch.n; i++) /* store trouble: a warning, the build goes on */
        cv_cache_warn(d, scratch.v[i].code, "%s", scratch.v[i].msg);
    cv_diag_free(&scratch);
    int out = 0;
    if (rc == CV_CAS_FOUND) {
        filler f = {.e = data ? NULL : &e, .data = data, .len = len};
        *size = e.raw;
        out = write_out(c, abs, mode, &f, dg, cv_cache_cas_entry_xxh3(&e), d) == 0 ? 1 : -1;
        if (out == 1)
            cv_cache_txn_event(a, CV_IDX_HIT, CV_CAS_BLOB, dg, e.stored);
    }
    if (e.fd >= 0)
        cv_cache_cas_entry_close(&e);
    free(data);
    return out;
}

int cv_cache_get_blob_file(cv_cache *c, const cv_digest *dg, const char *path, unsigned mode,
                           uint64_t *size, cv_cache_lookup *info, cv_diag *d)
{
    cv_cache_lookup l = {.source = CV_CACHE_SRC_NONE, .reason = CV_MISS_DISABLED};
    int64_t t0 = cv_cache_mono_us();
    char abs[PATH_MAX];
    int rc = 0;
    *size = 0;
    if (!cv_cache_enabled(c)) {
        if (info)
            *info = l;
        return 0;
    }
    if (absolute(path, abs) != 0)
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot write %s: no such directory", path);
    cv_cache_txn a = {0};
    uint64_t stored = 0;
    if (cv_cache_cas_exists(c->cas, CV_CAS_BLOB, dg, &stored) && in_place(c, abs, dg, mode, size)) {
        cv_cache_txn_event(&a, CV_IDX_HIT, CV_CAS_BLOB, dg, stored);
        rc = 1;
    } else {
        rc = from_store(c, dg, abs, mode, size, &a, d);
    }
    if (rc == 1) {
        cv_cache_txn_count(&a, "blob.hit.local", 1);
        l = (cv_cache_lookup){.source = CV_CACHE_SRC_LOCAL, .reason = CV_MISS_NONE};
    }
    cv_cache_txn_commit(c, &a, d);
    if (rc == 0) { /* the remote, or a counted miss */
        void *data = NULL;
        size_t len = 0;
        rc = cv_cache_get_blob(c, dg, &data, &len, &l, d);
        filler f = {.data = data, .len = len};
        *size = len;
        if (rc == 1 && write_out(c, abs, mode, &f, dg, cv_cache_xxh3_64(data, len), d) != 0)
            rc = -1;
        free(data);
    }
    l.ms = (double)(cv_cache_mono_us() - t0) / 1000.0;
    if (info)
        *info = l;
    return rc;
}

int cv_cache_file_in_place(cv_cache *c, const char *path, const cv_digest *dg, unsigned mode,
                           uint64_t *size)
{
    char abs[PATH_MAX];
    return cv_cache_enabled(c) && absolute(path, abs) == 0 ? in_place(c, abs, dg, mode, size) : 0;
}

int cv_cache_write_file_parts(cv_cache *c, const char *path, unsigned mode, const cv_digest *dg,
                              const cv_fs_part *parts, int n, cv_diag *d)
{
    char abs[PATH_MAX];
    if (absolute(path, abs) != 0)
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot write %s: no such directory", path);
    XXH3_state_t *x = XXH3_createState();
    if (!x || XXH3_64bits_reset(x) != XXH_OK) {
        XXH3_freeState(x);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < n; i++)
        XXH3_64bits_update(x, parts[i].data, parts[i].len);
    uint64_t h = XXH3_64bits_digest(x);
    XXH3_freeState(x);
    filler f = {.parts = parts, .n_parts = n};
    return write_out(c, abs, mode, &f, dg, h, d);
}

void cv_cache_remember_file(cv_cache *c, const char *path, const void *data, size_t len,
                            const cv_digest *dg)
{
    char abs[PATH_MAX];
    struct stat st;
    int64_t seen = cv_cache_now_us() * 1000;
    if (cv_cache_enabled(c) && absolute(path, abs) == 0 && stat(abs, &st) == 0 &&
        st.st_size == (off_t)len)
        cv_cache_memo_record(c, abs, &st, cv_cache_xxh3_64(data, len), dg, seen);
}

/* One file of a put: read and written into the store by a thread of its
 * own, recorded afterwards by the caller's. */
typedef struct put_file {
    const char *path;
    char abs[PATH_MAX];
    size_t max_bytes;
    struct stat before;
    cv_fs_view view;    /* owned: the file's bytes */
    const char *data;   /* view.data */
    size_t len;
    bool read_ok;
    cv_cache_put put;
    cv_cache *c;
    int64_t seen;
} put_file;

static void persist_file(void *files, int i)
{
    put_file *f = (put_file *)files + i;
    cv_diag *d = &f->put.diag;
    f->put.rc = -1;
    if (absolute(f->path, f->abs) != 0) {
        cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot read %s: no such directory", f->path);
        return;
    }
    f->seen = cv_cache_now_us() * 1000;
    if (stat(f->abs, &f->before) != 0) {
        cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot read %s: %s", f->abs, strerror(errno));
        return;
    }
    /* Mapped: an artifact's .a and .so are tens of MB each, and a read
     * into fresh memory per file and thread was most of their store. */
    if (cv_fs_view_file(f->abs, f->max_bytes, &f->view, d) != 0)
        return;
    f->data = f->view.data;
    f->len = f->view.len;
    f->read_ok = true;
    f->put.data = f->data;
    f->put.len = f->len;
    if (cv_cache_enabled(f->c)) {
        cv_cache_store_persist(f->c, &f->put);
    } else {
        cv_cache_sha256(f->data, f->len, &f->put.name);
        f->put.rc = 0;
    }
}

/* The memo row only if the file did not change while it was read. */
static void remember_file(cv_cache *c, const put_file *f)
{
    struct stat after;
    if (stat(f->abs, &after) == 0 && after.st_ino == f->before.st_ino &&
        after.st_size == (off_t)f->len && after.st_mtim.tv_sec == f->before.st_mtim.tv_sec &&
        after.st_mtim.tv_nsec == f->before.st_mtim.tv_nsec &&
        after.st_ctim.tv_sec == f->before.st_ctim.tv_sec &&
        after.st_ctim.tv_nsec == f->before.st_ctim.tv_nsec)
        cv_cache_memo_record(c, f->abs, &after, cv_cache_xxh3_64(f->data, f->len), &f->put.name,
                             f->seen);
}

/* At most this many files are read, hashed and compressed at once (an
 * artifact's .o, .a and .so are often each tens of MB); outside a batch
 * each is synced too, and concurrent fsyncs share journal commits. */
#define PUT_THREADS 8

int cv_cache_put_blob_files(cv_cache *c, const char *const *paths, int n, size_t max_bytes,
                            bool remember, cv_digest *out, uint64_t *sizes, cv_diag *d)
{
    put_file *f = calloc((size_t)(n > 0 ? n : 1), sizeof *f); /* owned here */
    if (!f)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        f[i] = (put_file){.path = paths[i], .max_bytes = max_bytes, .c = c,
                          .put = {.kind = CV_CAS_BLOB}};
        cv_diag_init(&f[i].put.diag);
    }
    cv_cache_parallel(n, PUT_THREADS, persist_file, f);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!f[i].read_ok) { /* the file itself: the build's trouble, not the cache's */
            cv_diag_merge(d, &f[i].put.diag);
            rc = -1;
        } else if (cv_cache_enabled(c) && cv_cache_store_record(c, &f[i].put, d) != 0) {
            rc = -1;
        } else {
            if (cv_cache_enabled(c) && remember)
                remember_file(c, &f[i]);
            out[i] = f[i].put.name;
            sizes[i] = f[i].len;
        }
        cv_diag_free(&f[i].put.diag);
        cv_fs_view_free(&f[i].view);
    }
    free(f);
    return rc == 0 && cv_cache_enabled(c) ? cv_cache_enforce_limit(c, d) : rc;
}

int cv_cache_put_blob_file(cv_cache *c, const char *path, size_t max_bytes, cv_digest *out,
                           uint64_t *size, cv_diag *d)
{
    return cv_cache_put_blob_files(c, &path, 1, max_bytes, true, out, size, d);
}
