/* Reading an entry's payload in steps (see cas.h): pread for raw and paged
 * entries, a zstd decompression stream for compressed ones, with the XXH3
 * of what was handed out so far.  Memory: one input buffer and zstd's
 * window, whatever the payload's size. */
#include "cache/cas.h"
#include "cache/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>
#include <zstd.h>

enum { INBUF = 128 * 1024, CHECK_STEP = 256 * 1024 };

struct cv_cas_stream {
    cv_cas_entry e;          /* a copy; e.fd is the stream's own (dup) */
    uint64_t pos;            /* payload bytes handed out */
    XXH3_state_t *xs;        /* owned */
    ZSTD_DStream *zd;        /* owned; NULL for raw and paged entries */
    uint8_t *in;             /* owned: compressed bytes read, not yet decoded */
    ZSTD_inBuffer zin;
    uint64_t file_pos;       /* next compressed byte to read */
    bool frame_done, end_checked, failed;
};

void cv_cache_cas_stream_close(cv_cas_stream *s)
{
    if (!s)
        return;
    if (s->e.fd >= 0)
        close(s->e.fd);
    XXH3_freeState(s->xs);
    ZSTD_freeDStream(s->zd);
    free(s->in);
    free(s);
}

int cv_cache_cas_stream_open(const cv_cas_entry *e, cv_cas_stream **out, cv_diag *d)
{
    *out = NULL;
    cv_cas_stream *s = calloc(1, sizeof *s);
    if (!s)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory reading %s", e->path);
    s->e = *e;
    s->e.fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
    s->xs = XXH3_createState();
    bool zstd = !e->raw_codec && !e->paged;
    if (zstd) {
        s->zd = ZSTD_createDStream();
        s->in = malloc(INBUF);
        s->file_pos = CV_CAS_HEADER;
    }
    if (s->e.fd < 0 || !s->xs || XXH3_64bits_reset(s->xs) != XXH_OK ||
        (zstd && (!s->zd || !s->in || ZSTD_isError(ZSTD_initDStream(s->zd))))) {
        int err = errno;
        cv_cache_cas_stream_close(s);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "cannot read %s: %s", e->path, strerror(err));
    }
    s->zin = (ZSTD_inBuffer){s->in, 0, 0};
    *out = s;
    return 0;
}

/* Decodes into buf up to cap bytes (cap > 0): 0 with *got set, or the
 * reason the frame is damaged. */
static const char *inflate_step(cv_cas_stream *s, void *buf, size_t cap, size_t *got)
{
    ZSTD_outBuffer o = {buf, cap, 0};
    while (o.pos == 0 && !s->frame_done) {
        if (s->zin.pos == s->zin.size) {
            uint64_t left = s->e.stored - s->file_pos;
            size_t want = left < INBUF ? (size_t)left : INBUF;
            if (!want)
                return "zstd frame cut short";
            if (cv_cache_cas_read_at(s->e.fd, s->in, want, (long long)s->file_pos) != 0)
                return "short read";
            s->file_pos += want;
            s->zin = (ZSTD_inBuffer){s->in, want, 0};
        }
        size_t r = ZSTD_decompressStream(s->zd, &o, &s->zin);
        if (ZSTD_isError(r))
            return "zstd frame damaged";
        s->frame_done = r == 0;
    }
    *got = o.pos;
    return NULL;
}

/* Once every payload byte has been handed out: a compressed frame must
 * end exactly there, and the bytes must match the header's XXH3. */
static const char *check_end(cv_cas_stream *s)
{
    if (s->zd) {
        uint8_t probe[1];
        size_t extra = 0;
        const char *why = s->frame_done ? NULL : inflate_step(s, probe, sizeof probe, &extra);
        if (why)
            return why;
        if (extra || !s->frame_done || s->zin.pos != s->zin.size || s->file_pos != s->e.stored)
            return "zstd frame does not match its size";
    }
    return XXH3_64bits_digest(s->xs) == cv_cache_cas_entry_xxh3(&s->e) ? NULL
                                                                        : "checksum mismatch";
}

int cv_cache_cas_stream_read(cv_cas_stream *s, void *buf, size_t cap, size_t *got, cv_diag *d)
{
    *got = 0;
    if (s->failed)
        return -1;
    uint64_t left = s->e.raw - s->pos;
    const char *why = NULL;
    size_t n = 0;
    if (left && !s->zd) {
        n = left < cap ? (size_t)left : cap;
        if (cv_cache_cas_read_at(s->e.fd, buf, n,
                                 (long long)(s->e.stored - s->e.raw + s->pos)) != 0)
            why = "short read";
    } else if (left) {
        /* one byte more than is left: a frame that decodes longer is damaged */
        why = inflate_step(s, buf, cap < left + 1 ? cap : (size_t)left + 1, &n);
        if (!why && (n > left || (n == 0 && s->frame_done)))
            why = "zstd frame does not match its size";
    }
    if (!why && n) {
        XXH3_64bits_update(s->xs, buf, n);
        s->pos += n;
    }
    if (!why && s->pos == s->e.raw && !s->end_checked) {
        s->end_checked = true;
        why = check_end(s);
    }
    if (why) {
        s->failed = true;
        return cv_cache_cas_corrupt(&s->e, why, d);
    }
    *got = n;
    return CV_CAS_FOUND;
}

int cv_cache_cas_entry_check(const cv_cas_entry *e, cv_diag *d)
{
    uint8_t *buf = malloc(CHECK_STEP); /* owned here */
    cv_cas_stream *s = NULL;
    if (!buf || cv_cache_cas_stream_open(e, &s, d) != 0) {
        free(buf);
        return buf ? -1 : cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory reading %s", e->path);
    }
    int rc;
    size_t got;
    do
        rc = cv_cache_cas_stream_read(s, buf, CHECK_STEP, &got, d);
    while (rc == CV_CAS_FOUND && got);
    cv_cache_cas_stream_close(s);
    free(buf);
    return rc;
}
