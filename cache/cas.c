/* The local content-addressed store (see cas.h for the layout). */
#include "cache/cas.h"
#include "cache/cas_sync.h"
#include "cache/internal.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>
#include <xxhash.h>
#include <zstd.h>

enum {
    CODEC_RAW = 0,       /* payload at CV_CAS_HEADER */
    CODEC_ZSTD = 1,      /* one zstd frame at CV_CAS_HEADER */
    CODEC_PAGED = 2,     /* payload at CV_CAS_PAGE */
    ZBUF = 128 * 1024,
    PAGED_MIN = 1 << 20, /* blobs from this size on may be stored paged */
    SAMPLE = 128 * 1024, /* bytes zstd tries before a large blob is compressed */
};

static const char MAGIC[4] = {'C', 'V', 'B', '1'};

struct cv_cas {
    char *root;          /* owned */
    int level;           /* 0 = raw */
    cv_cas_syncq *defer; /* owned; set during a batch: commits leave the fsync to it */
};

struct cv_cas_writer {
    cv_cas *cas;
    cv_cas_kind kind;
    int fd;
    char tmp[PATH_MAX];
    cv_cache_hasher *sha;  /* owned; blobs only */
    XXH3_state_t *xs;      /* owned */
    ZSTD_CCtx *zc;         /* owned; NULL when storing raw */
    uint8_t *zbuf;         /* owned */
    uint64_t raw, stored;
    bool paged;            /* raw payload at CV_CAS_PAGE */
};

const char *cv_cache_cas_kind_dir(cv_cas_kind kind)
{
    return kind == CV_CAS_AC ? "ac" : "cas";
}

const char *cv_cache_cas_root(const cv_cas *cas)
{
    return cas->root;
}

static int mkdir_ok(const char *path)
{
    return (mkdir(path, 0755) == 0 || errno == EEXIST) ? 0 : -1;
}

int cv_cache_cas_open(const char *root, int zstd_level, cv_cas **out, cv_diag *d)
{
    *out = NULL;
    if (!root || !*root || strlen(root) > PATH_MAX - 128)
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cache directory name missing or too long");
    char p[PATH_MAX];
    /* mkdir -p for the root itself, then the fixed sub-directories. */
    snprintf(p, sizeof p, "%s", root);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir_ok(p);
            *s = '/';
        }
    static const char *subs[] = {"", "/cas", "/ac", "/tmp"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        snprintf(p, sizeof p, "%s%s", root, subs[i]);
        if (mkdir_ok(p) != 0)
            return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot create cache directory %s: %s", p,
                                strerror(errno));
    }
    cv_cas *cas = calloc(1, sizeof *cas);
    if (!cas || !(cas->root = strdup(root))) {
        free(cas);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the cache");
    }
    cas->level = zstd_level < 0 ? 0 : zstd_level > 19 ? 19 : zstd_level;
    *out = cas;
    return 0;
}

void cv_cache_cas_close(cv_cas *cas)
{
    if (!cas)
        return;
    cv_cache_syncq_free(cas->defer);
    free(cas->root);
    free(cas);
}

void cv_cache_cas_path(const cv_cas *cas, cv_cas_kind kind, const cv_digest *name, char *out,
                       size_t cap)
{
    char hex[CV_CACHE_HEX_LEN + 1];
    cv_cache_digest_hex(name, hex);
    snprintf(out, cap, "%s/%s/%.2s/%s", cas->root, cv_cache_cas_kind_dir(kind), hex, hex);
}

/* ---------------------------------------------------------------- write */

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int writer_fail(cv_cas_writer *w, cv_diag *d, const char *what)
{
    int e = errno;
    cv_cache_err(d, cv_cache_write_errcode(e), "cannot %s cache file %s: %s", what, w->tmp,
                 strerror(e));
    cv_cache_cas_writer_abort(w);
    return -1;
}

int cv_cache_cas_writer_open(cv_cas *cas, cv_cas_kind kind, cv_cas_writer **out, cv_diag *d)
{
    static unsigned long counter;
    *out = NULL;
    cv_cas_writer *w = calloc(1, sizeof *w);
    if (!w)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory writing to the cache");
    w->cas = cas;
    w->kind = kind;
    w->fd = -1;
    unsigned long n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(w->tmp, sizeof w->tmp, "%s/tmp/%ld.%lu.%lx.tmp", cas->root, (long)getpid(), n,
             (unsigned long)ts.tv_nsec);
    w->xs = XXH3_createState();
    w->sha = kind == CV_CAS_BLOB ? cv_cache_hasher_new() : NULL;
    if (cas->level) {
        w->zc = ZSTD_createCCtx();
        w->zbuf = malloc(ZBUF);
    }
    if (!w->xs || (kind == CV_CAS_BLOB && !w->sha) || (cas->level && (!w->zc || !w->zbuf))) {
        cv_cache_cas_writer_abort(w);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory writing to the cache");
    }
    XXH3_64bits_reset(w->xs);
    if (w->zc) {
        ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, cas->level);
        ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1);
    }
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0 && errno == ENOENT) { /* `cache clear` may have removed tmp/ */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/tmp", cas->root);
        if (mkdir_ok(dir) == 0)
            w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (w->fd < 0)
        return writer_fail(w, d, "create");
    uint8_t hdr[CV_CAS_HEADER] = {0};
    if (write_all(w->fd, hdr, sizeof hdr) != 0)
        return writer_fail(w, d, "write");
    w->stored = CV_CAS_HEADER;
    *out = w;
    return 0;
}

/* Feeds in to zstd and writes what it produces; end finishes the frame. */
static int zstd_pump(cv_cas_writer *w, const void *data, size_t len, bool end)
{
    ZSTD_inBuffer in = {data, len, 0};
    for (;;) {
        ZSTD_outBuffer o = {w->zbuf, ZBUF, 0};
        size_t left = ZSTD_compressStream2(w->zc, &o, &in, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left)) {
            errno = EIO;
            return -1;
        }
        if (o.pos && write_all(w->fd, w->zbuf, o.pos) != 0)
            return -1;
        w->stored += o.pos;
        if (end ? left == 0 : in.pos == in.size)
            return 0;
    }
}

int cv_cache_cas_writer_write(cv_cas_writer *w, const void *data, size_t len, cv_diag *d)
{
    if (!len)
        return 0;
    XXH3_64bits_update(w->xs, data, len);
    if (w->sha)
        cv_cache_hasher_update(w->sha, data, len);
    w->raw += len;
    int rc = w->zc ? zstd_pump(w, data, len, false) : write_all(w->fd, data, len);
    if (rc != 0)
        return writer_fail(w, d, "write");
    if (!w->zc)
        w->stored += len;
    return 0;
}

uint64_t cv_cache_cas_writer_size(const cv_cas_writer *w)
{
    return w->raw;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Renames the finished temp file into place, creating the shard directory
 * the first time one is needed. */
static int place(cv_cas_writer *w, const cv_digest *name, char final[PATH_MAX], cv_diag *d)
{
    cv_cache_cas_path(w->cas, w->kind, name, final, PATH_MAX);
    if (rename(w->tmp, final) == 0)
        return 0;
    if (errno == ENOENT) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", final);
        char *slash = strrchr(dir, '/');
        *slash = '\0';
        char *up = strrchr(dir, '/');
        *up = '\0';
        mkdir_ok(dir); /* cas/ or ac/ itself, in case `clear` removed it */
        *up = '/';
        if (mkdir_ok(dir) == 0 && rename(w->tmp, final) == 0)
            return 0;
    }
    return cv_cache_err(d, cv_cache_write_errcode(errno), "cannot place cache file %s: %s", final,
                        strerror(errno));
}

/* In a batch, the file placed is synced at the batch's end; when the
 * queue cannot take it, now. */
static int hand_to_batch(cv_cas_writer *w, const char *final, cv_diag *d)
{
    if (cv_cache_syncq_add(w->cas->defer, w->fd, final) == 0) {
        w->fd = -1;
        return 0;
    }
    if (fsync(w->fd) == 0)
        return 0;
    int e = errno;
    return cv_cache_err(d, cv_cache_write_errcode(e), "cannot sync cache file %s: %s", w->tmp,
                        strerror(e));
}

int cv_cache_cas_defer_sync(cv_cas *cas, cv_diag *d)
{
    if (!cas->defer && !(cas->defer = cv_cache_syncq_new()))
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory starting a cache batch");
    return 0;
}

int cv_cache_cas_sync(cv_cas *cas, cv_diag *d)
{
    if (!cas->defer)
        return 0;
    int err = cv_cache_syncq_run(cas->defer);
    cv_cache_syncq_free(cas->defer);
    cas->defer = NULL;
    return err ? cv_cache_err(d, cv_cache_write_errcode(err), "cannot sync the files stored "
                              "in %s: %s", cas->root, strerror(err))
               : 0;
}

int cv_cache_cas_detach(cv_cas *cas, char ***paths, int *n, cv_diag *d)
{
    *paths = NULL;
    *n = 0;
    if (!cas->defer)
        return 0;
    int rc = cv_cache_syncq_detach(cas->defer, paths, n);
    cv_cache_syncq_free(cas->defer);
    cas->defer = NULL;
    return rc == 0 ? 0 : cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory ending a cache batch");
}

int cv_cache_cas_writer_commit(cv_cas_writer *w, const cv_digest *expect, cv_digest *out_name,
                               uint64_t *stored, cv_diag *d)
{
    if (w->zc && zstd_pump(w, NULL, 0, true) != 0)
        return writer_fail(w, d, "write");
    uint8_t hdr[CV_CAS_HEADER] = {0};
    memcpy(hdr, MAGIC, 4);
    hdr[4] = w->zc ? CODEC_ZSTD : w->paged ? CODEC_PAGED : CODEC_RAW;
    put_le64(hdr + 8, w->raw);
    put_le64(hdr + 16, XXH3_64bits_digest(w->xs));
    if (pwrite(w->fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr)
        return writer_fail(w, d, "write");
    if (!w->cas->defer && fsync(w->fd) != 0)
        return writer_fail(w, d, "sync");
    cv_digest name;
    if (w->sha) {
        cv_cache_hasher_final(w->sha, &name);
        if (expect && !cv_cache_digest_eq(expect, &name)) {
            cv_cache_cas_writer_abort(w);
            return CV_CAS_BAD_DIGEST;
        }
    } else if (expect) {
        name = *expect;
    } else {
        cv_cache_cas_writer_abort(w);
        return cv_cache_err(d, CV_E_CACHE_BAD_KEY, "action entry written without a key");
    }
    char final[PATH_MAX];
    int rc = place(w, &name, final, d);
    if (rc == 0 && w->cas->defer)
        rc = hand_to_batch(w, final, d);
    if (rc == 0) {
        if (out_name)
            *out_name = name;
        if (stored)
            *stored = w->stored;
    }
    cv_cache_cas_writer_abort(w); /* frees; the temp name is gone after rename */
    return rc;
}

void cv_cache_cas_writer_abort(cv_cas_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0) {
        close(w->fd);
        unlink(w->tmp);
    }
    cv_cache_hasher_free(w->sha);
    if (w->xs)
        XXH3_freeState(w->xs);
    ZSTD_freeCCtx(w->zc);
    free(w->zbuf);
    free(w);
}

/* Whether zstd shrinks a large blob enough to be worth decompressing on
 * every hit: tried on a slice from its middle, where an artifact's weights
 * are (float weights save about 8%; code and text far more). */
static bool worth_compressing(const uint8_t *data, size_t len)
{
    size_t n = len < SAMPLE ? len : SAMPLE;
    size_t cap = ZSTD_compressBound(n);
    void *z = malloc(cap); /* owned here */
    if (!z)
        return true;
    size_t got = ZSTD_compress(z, cap, data + (len - n) / 2, n, 1);
    free(z);
    return !ZSTD_isError(got) && got < n - n / 5;
}

/* Switches a writer that has written nothing yet to the paged layout. */
static int writer_page(cv_cas_writer *w)
{
    static const uint8_t zero[CV_CAS_PAGE - CV_CAS_HEADER];
    ZSTD_freeCCtx(w->zc);
    w->zc = NULL;
    w->paged = true;
    if (write_all(w->fd, zero, sizeof zero) != 0)
        return -1;
    w->stored = CV_CAS_PAGE;
    return 0;
}

int cv_cache_cas_put(cv_cas *cas, cv_cas_kind kind, const cv_digest *key, const void *data,
                     size_t len, cv_digest *out_name, uint64_t *stored, cv_diag *d)
{
    cv_cas_writer *w;
    if (cv_cache_cas_writer_open(cas, kind, &w, d) != 0)
        return -1;
    if (kind == CV_CAS_BLOB && len >= PAGED_MIN && (!w->zc || !worth_compressing(data, len)) &&
        writer_page(w) != 0)
        return writer_fail(w, d, "write");
    if (key && w->sha) { /* the caller already hashed (or verified) these bytes */
        cv_cache_hasher_free(w->sha);
        w->sha = NULL;
    }
    if (w->zc)
        ZSTD_CCtx_setPledgedSrcSize(w->zc, len);
    if (cv_cache_cas_writer_write(w, data, len, d) != 0)
        return -1;
    return cv_cache_cas_writer_commit(w, key, out_name, stored, d);
}

/* ----------------------------------------------------------------- read */

/* 0 when all n bytes were read, -1 otherwise. */
int cv_cache_cas_read_at(int fd, void *buf, size_t n, long long off)
{
    uint8_t *b = buf;
    while (n) {
        ssize_t r = pread(fd, b, n, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        off += r;
        n -= (size_t)r;
    }
    return 0;
}

/* A corrupt entry is removed only while its name still points at the file
 * that was read: another process may just have renamed a good copy there. */
int cv_cache_cas_corrupt(const cv_cas_entry *e, const char *why, cv_diag *d)
{
    cv_cache_warn(d, CV_E_CACHE_CORRUPT_ENTRY, "cache entry %s is corrupt (%s); removed", e->path, why);
    struct stat now;
    if (stat(e->path, &now) == 0 && (uint64_t)now.st_ino == e->ino && (uint64_t)now.st_dev == e->dev)
        unlink(e->path);
    return CV_CAS_CORRUPT;
}

/* Reads the payload into *out (malloc'd); returns NULL, or why it is corrupt. */
static const char *decode(const cv_cas_entry *e, uint8_t **out)
{
    const uint8_t *hdr = e->hdr;
    uint64_t raw = e->raw;
    if (hdr[4] == CODEC_RAW || hdr[4] == CODEC_PAGED) {
        if (!e->raw_codec && !e->paged)
            return "size does not match its header";
        *out = malloc(raw ? raw : 1);
        if (!*out)
            return NULL;
        return cv_cache_cas_read_at(e->fd, *out, raw, (long long)(e->stored - raw)) == 0
                   ? NULL
                   : "short read";
    }
    if (hdr[4] != CODEC_ZSTD)
        return "unknown codec";
    uint64_t body = e->stored - CV_CAS_HEADER;
    if (body > ZSTD_compressBound(raw))
        return "size does not match its header";
    uint8_t *z = malloc(body ? body : 1); /* owned here */
    if (!z)
        return NULL;
    const char *why = NULL;
    if (cv_cache_cas_read_at(e->fd, z, body, CV_CAS_HEADER) != 0) {
        why = "short read";
    } else {
        unsigned long long fcs = ZSTD_getFrameContentSize(z, body);
        if (fcs == ZSTD_CONTENTSIZE_ERROR || (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != raw))
            why = "zstd frame header damaged";
    }
    if (!why && (*out = malloc(raw ? raw : 1))) {
        size_t got = ZSTD_decompress(*out, raw, z, body);
        if (ZSTD_isError(got) || got != raw)
            why = "zstd frame damaged";
    }
    free(z);
    return why;
}

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int cv_cache_cas_entry_stat(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, cv_cas_entry *e,
                            cv_diag *d)
{
    memset(e, 0, offsetof(cv_cas_entry, path));
    e->kind = kind;
    e->name = *name;
    cv_cache_cas_path(cas, kind, name, e->path, sizeof e->path);
    e->fd = open(e->path, O_RDONLY | O_CLOEXEC);
    if (e->fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return CV_CAS_MISSING;
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot open %s: %s", e->path, strerror(errno));
    }
    struct stat st = {0};
    if (fstat(e->fd, &st) != 0) {
        int err = errno;
        cv_cache_cas_entry_close(e);
        return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot stat %s: %s", e->path, strerror(err));
    }
    e->dev = (uint64_t)st.st_dev;
    e->ino = (uint64_t)st.st_ino;
    e->mtime_ns = ts_ns(st.st_mtim);
    e->ctime_ns = ts_ns(st.st_ctim);
    e->stored = (uint64_t)st.st_size;
    return CV_CAS_FOUND;
}

/* Whether the header's payload size fits the file: exactly for raw and
 * paged entries; for zstd within the format's densest encoding (a 4-byte
 * RLE block per 128 KiB), so a damaged size is found here rather than
 * taken for an entry too large to read. */
static bool size_plausible(const cv_cas_entry *e)
{
    if (e->hdr[4] == CODEC_ZSTD)
        return e->raw / 32768 <= e->stored - CV_CAS_HEADER;
    return e->raw_codec || e->paged;
}

int cv_cache_cas_entry_header(cv_cas_entry *e, cv_diag *d)
{
    /* bytes 5-7 are written as zeros: a flip there is damage too */
    if (e->stored < CV_CAS_HEADER || cv_cache_cas_read_at(e->fd, e->hdr, sizeof e->hdr, 0) != 0 ||
        memcmp(e->hdr, MAGIC, 4) != 0 || (e->hdr[5] | e->hdr[6] | e->hdr[7]) != 0) {
        cv_cache_cas_entry_close(e);
        return cv_cache_cas_corrupt(e, "bad header", d);
    }
    e->raw = get_le64(e->hdr + 8);
    e->raw_codec = e->hdr[4] == CODEC_RAW && e->stored - CV_CAS_HEADER == e->raw;
    e->paged = e->hdr[4] == CODEC_PAGED && e->stored >= CV_CAS_PAGE &&
               e->stored - CV_CAS_PAGE == e->raw;
    if (!size_plausible(e)) {
        cv_cache_cas_entry_close(e);
        return cv_cache_cas_corrupt(e, "size does not match its header", d);
    }
    return CV_CAS_FOUND;
}

int cv_cache_cas_entry_open(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, cv_cas_entry *e,
                            cv_diag *d)
{
    int rc = cv_cache_cas_entry_stat(cas, kind, name, e, d);
    return rc == CV_CAS_FOUND ? cv_cache_cas_entry_header(e, d) : rc;
}

void cv_cache_cas_entry_close(cv_cas_entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
}

uint64_t cv_cache_cas_entry_xxh3(const cv_cas_entry *e)
{
    return get_le64(e->hdr + 16);
}

/* The plain copy, from src offset `in` on: the last resort. */
static int copy_rw(int in_fd, off_t in, int out_fd, uint64_t left)
{
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK); /* owned here */
    if (!buf)
        return -1;
    int rc = 0;
    while (rc == 0 && left) {
        size_t want = left < CHUNK ? (size_t)left : CHUNK;
        if (cv_cache_cas_read_at(in_fd, buf, want, in) != 0 || write_all(out_fd, buf, want) != 0)
            rc = -1;
        in += (off_t)want;
        left -= want;
    }
    free(buf);
    return rc;
}

int cv_cache_cas_entry_copy(cv_cas_entry *e, int out_fd)
{
    if (!e->raw_codec && !e->paged) {
        errno = EINVAL;
        return -1;
    }
    off_t off = (off_t)(e->stored - e->raw);
    if (e->paged) {
        struct file_clone_range r = {.src_fd = e->fd, .src_offset = (uint64_t)off};
        if (ioctl(out_fd, FICLONERANGE, &r) == 0) /* src_length 0: to the end */
            return 0;
    }
    loff_t in = off;
    uint64_t left = e->raw;
    errno = 0;
    while (left) {
        ssize_t n = copy_file_range(e->fd, &in, out_fd, NULL, left, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        left -= (uint64_t)n;
    }
    if (!left)
        return 0;
    if (in != off || (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
                      errno != EOPNOTSUPP && errno != EBADF)) {
        if (errno == 0)
            errno = EIO; /* the file ended early */
        return -1;
    }
    return copy_rw(e->fd, off, out_fd, left); /* the kernel cannot copy these two */
}

int cv_cache_cas_entry_read(cv_cas_entry *e, cv_cas_verify v, size_t max_len, void **data,
                            size_t *len, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    if (e->raw > max_len)
        return cv_cache_err(d, CV_E_CACHE_ENTRY_TOO_LARGE, "cache entry %s holds %llu bytes (limit %zu)",
                            e->path, (unsigned long long)e->raw, max_len);
    uint8_t *out = NULL; /* owned until handed to the caller */
    const char *why = decode(e, &out);
    if (!why && !out)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory reading %s", e->path);
    if (!why && XXH3_64bits(out, e->raw) != get_le64(e->hdr + 16))
        why = "checksum mismatch";
    if (!why && e->kind == CV_CAS_BLOB && v == CV_CAS_VERIFY_FULL) {
        cv_digest got;
        cv_cache_sha256(out, e->raw, &got);
        if (!cv_cache_digest_eq(&got, &e->name))
            why = "content does not hash to its name";
    }
    if (why) {
        free(out);
        return cv_cache_cas_corrupt(e, why, d);
    }
    *data = out;
    *len = e->raw;
    return CV_CAS_FOUND;
}

int cv_cache_cas_get(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, cv_cas_verify v,
                     size_t max_len, void **data, size_t *len, uint64_t *stored, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    cv_cas_entry e;
    int rc = cv_cache_cas_entry_open(cas, kind, name, &e, d);
    if (rc == CV_CAS_FOUND) {
        rc = cv_cache_cas_entry_read(&e, v, max_len, data, len, d);
        cv_cache_cas_entry_close(&e);
    }
    if (rc == CV_CAS_FOUND && stored)
        *stored = e.stored;
    return rc;
}

int cv_cache_cas_exists(cv_cas *cas, cv_cas_kind kind, const cv_digest *name, uint64_t *stored)
{
    char path[PATH_MAX];
    cv_cache_cas_path(cas, kind, name, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    if (stored)
        *stored = (uint64_t)st.st_size;
    return 1;
}

int cv_cache_cas_remove(cv_cas *cas, cv_cas_kind kind, const cv_digest *name)
{
    char path[PATH_MAX];
    cv_cache_cas_path(cas, kind, name, path, sizeof path);
    return (unlink(path) == 0 || errno == ENOENT) ? 0 : -1;
}

/* ----------------------------------------------------------------- walk */

static bool is_shard(const char *s)
{
    return strlen(s) == 2 && strspn(s, "0123456789abcdef") == 2;
}

static int walk_shard(const char *dir, cv_cas_kind kind, cv_cas_walk_fn fn, void *ctx)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return 0;
    int stop = 0;
    struct dirent *e;
    while (!stop && (e = readdir(dh))) {
        cv_digest name;
        if (cv_cache_digest_parse(e->d_name, &name) != 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(dh), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
        stop = fn(ctx, kind, &name, (uint64_t)st.st_size, mt);
    }
    closedir(dh);
    return stop;
}

int cv_cache_cas_walk(cv_cas *cas, cv_cas_walk_fn fn, void *ctx, cv_diag *d)
{
    for (int k = 0; k < 2; k++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", cas->root, cv_cache_cas_kind_dir((cv_cas_kind)k));
        DIR *dh = opendir(dir);
        if (!dh) {
            if (errno == ENOENT)
                continue;
            return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "cannot list %s: %s", dir, strerror(errno));
        }
        int stop = 0;
        struct dirent *e;
        while (!stop && (e = readdir(dh))) {
            if (!is_shard(e->d_name))
                continue;
            char sub[PATH_MAX + 8];
            snprintf(sub, sizeof sub, "%s/%.2s", dir, e->d_name);
            stop = walk_shard(sub, (cv_cas_kind)k, fn, ctx);
        }
        closedir(dh);
        if (stop)
            return 0;
    }
    return 0;
}

void cv_cache_cas_clean_tmp(cv_cas *cas, int age_s)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/tmp", cas->root);
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(dh))) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(dh), e->d_name, &st, 0) != 0)
            continue;
        if (S_ISREG(st.st_mode) && now - st.st_mtime >= age_s)
            unlinkat(dirfd(dh), e->d_name, 0);
    }
    closedir(dh);
}
