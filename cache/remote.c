/* The remote cache client (see remote.h). */
#include "cache/remote.h"
#include "cache/ac_sign.h"
#include "cache/internal.h"
#include "common/netlib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_URL = 1024 };

struct cv_remote {
    const cv_curl_fns *cu;     /* libcurl (loaded by the first open) */
    CURL *h;                   /* owned: reused, so its connection stays open */
    struct curl_slist *hdrs;   /* owned */
    char base[MAX_URL + 1];
    bool read_only;
    long timeout_ms, connect_ms;
    int retries, down_ms;
    uint64_t max_get;
    char tmp_dir[MAX_URL + 1]; /* where response bodies are spooled */
    int64_t down_until_us;     /* monotonic */
    cv_remote_stats st;
    char errbuf[CURL_ERROR_SIZE];
    cv_ac_keys *keys;          /* owned; NULL: action entries unsigned */
};


static bool url_chars_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '"' || c == '\\')
            return false;
    }
    return true;
}

/* "http://host:port[/instance][|read-only]" -> base URL without a trailing
 * slash, plus the attributes after '|'. */
static int parse_url(const char *url, cv_remote *r, cv_diag *d)
{
    size_t n = strcspn(url, "|");
    bool http = strncmp(url, "http://", 7) == 0, https = strncmp(url, "https://", 8) == 0;
    size_t scheme = http ? 7 : 8;
    if ((!http && !https) || n > MAX_URL || n <= scheme || !url_chars_ok(url, n))
        return cv_cache_err(d, CV_E_CACHE_BAD_URL,
                            "remote cache URL '%.200s' is not http(s)://host:port[/instance]", url);
    while (n > scheme && url[n - 1] == '/')
        n--;
    memcpy(r->base, url, n);
    r->base[n] = '\0';
    for (const char *a = strchr(url, '|'); a; a = strchr(a + 1, '|')) {
        const char *v = a + 1;
        size_t len = strcspn(v, "|");
        if ((len == 9 && strncmp(v, "read-only", 9) == 0) ||
            (len == 14 && strncmp(v, "read-only=true", 14) == 0))
            r->read_only = true;
        else if (!(len == 15 && strncmp(v, "read-only=false", 15) == 0))
            return cv_cache_err(d, CV_E_CACHE_BAD_URL,
                                "remote cache URL: unknown attribute '%.*s'", (int)len, v);
    }
    return 0;
}

int cv_cache_remote_open(const cv_remote_options *o, cv_remote **out, cv_diag *d)
{
    *out = NULL;
    const cv_curl_fns *cu = cv_netlib_curl(d);
    if (!cu)
        return -1;
    cv_remote *r = calloc(1, sizeof *r);
    if (!r)
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the remote cache");
    r->cu = cu;
    if (!o->url || parse_url(o->url, r, d) != 0) {
        if (!o->url)
            cv_cache_err(d, CV_E_CACHE_BAD_URL, "remote cache URL missing");
        free(r);
        return -1;
    }
    r->read_only = r->read_only || o->read_only;
    r->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    r->connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 1000;
    r->retries = o->retries < 0 ? 0 : o->retries == 0 ? 2 : o->retries;
    r->down_ms = o->down_ms > 0 ? o->down_ms : 30000;
    r->max_get = o->max_get ? o->max_get : (uint64_t)4 << 30;
    const char *tmp = o->tmp_dir && *o->tmp_dir ? o->tmp_dir : getenv("TMPDIR");
    snprintf(r->tmp_dir, sizeof r->tmp_dir, "%s", tmp && *tmp ? tmp : "/tmp");
    if (cv_ac_keys_load(o->sign_key, o->verify_key, &r->keys, d) != 0) {
        free(r);
        return -1;
    }
    r->h = cu->easy_init();
    r->hdrs = cu->slist_append(NULL, "Expect:"); /* no 100-continue round trip */
    if (r->hdrs && o->token && *o->token) {
        if (strlen(o->token) > 4096 || !url_chars_ok(o->token, strlen(o->token))) {
            cv_cache_remote_close(r);
            return cv_cache_err(d, CV_E_CACHE_BAD_URL, "remote cache token is malformed");
        }
        char auth[4200];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->token);
        struct curl_slist *h2 = cu->slist_append(r->hdrs, auth);
        if (!h2) {
            cv_cache_remote_close(r);
            return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the remote cache");
        }
        r->hdrs = h2;
    }
    if (!r->h || !r->hdrs) {
        cv_cache_remote_close(r);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory opening the remote cache");
    }
    *out = r;
    return 0;
}

void cv_cache_remote_close(cv_remote *r)
{
    if (!r)
        return;
    if (r->h)
        r->cu->easy_cleanup(r->h);
    r->cu->slist_free_all(r->hdrs);
    cv_ac_keys_free(r->keys);
    free(r);
}

const char *cv_cache_remote_base(const cv_remote *r)
{
    return r->base;
}

bool cv_cache_remote_read_only(const cv_remote *r)
{
    return r->read_only;
}

void cv_cache_remote_stats(const cv_remote *r, cv_remote_stats *out)
{
    *out = r->st;
}

/* ------------------------------------------------------------- requests */

typedef enum { M_GET, M_HEAD, M_PUT } method;

/* A response body is spooled to an unlinked temp file, never gathered in
 * memory: a remote (or anyone posing as one) can send at most max bytes,
 * to the disk, and a blob's SHA-256 is computed as they arrive. */
typedef struct body {
    int fd;                 /* owned: the spool; -1 = bytes only counted (PUT, HEAD) */
    uint64_t len, max;
    bool too_big, write_failed;
    int err;                /* errno of the failed write */
    cv_cache_hasher *sha;   /* owned; blob GETs only */
    const uint8_t *up;      /* PUT source */
    size_t up_len, up_pos;
} body;

static size_t on_write(char *p, size_t sz, size_t n, void *ctx)
{
    body *b = ctx;
    size_t add = sz * n;
    if (add > b->max - b->len) {
        b->too_big = true;
        return 0;
    }
    for (size_t done = 0; b->fd >= 0 && done < add;) {
        ssize_t w = write(b->fd, p + done, add - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            b->write_failed = true;
            b->err = w < 0 ? errno : ENOSPC;
            return 0;
        }
        done += (size_t)w;
    }
    if (b->sha)
        cv_cache_hasher_update(b->sha, p, add);
    b->len += add;
    return add;
}

/* A GET's body announced larger than the cap is refused before it is read. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dlnow, (void)ultotal, (void)ulnow;
    body *b = ctx;
    if (b->fd >= 0 && dltotal > 0 && (uint64_t)dltotal > b->max) {
        b->too_big = true;
        return 1;
    }
    return 0;
}

/* An unlinked file in dir (O_TMPFILE, else a named one removed at once). */
static int spool_open(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    char path[MAX_URL + 64];
    snprintf(path, sizeof path, "%s/cuvil-remote-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* Empties the spool for another attempt. */
static int body_restart(body *b)
{
    b->len = 0;
    b->up_pos = 0;
    b->too_big = b->write_failed = false;
    if (b->sha) {
        cv_digest scratch;
        cv_cache_hasher_final(b->sha, &scratch); /* resets it */
    }
    return b->fd < 0 || (ftruncate(b->fd, 0) == 0 && lseek(b->fd, 0, SEEK_SET) == 0) ? 0 : -1;
}

static size_t on_read(char *p, size_t sz, size_t n, void *ctx)
{
    body *b = ctx;
    size_t give = sz * n;
    if (give > b->up_len - b->up_pos)
        give = b->up_len - b->up_pos;
    memcpy(p, b->up + b->up_pos, give);
    b->up_pos += give;
    return give;
}

static void set_common(cv_remote *r, const char *url, body *b)
{
    CURL *h = r->h;
    const cv_curl_fns *cu = r->cu;
    cu->easy_reset(h); /* keeps the live connection */
    cu->easy_setopt(h, CURLOPT_URL, url);
    cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(h, CURLOPT_HTTPHEADER, r->hdrs);
    cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, r->connect_ms);
    cu->easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    cu->easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf);
    cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    cu->easy_setopt(h, CURLOPT_WRITEDATA, b);
    cu->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu->easy_setopt(h, CURLOPT_XFERINFODATA, b);
}

static bool transient_curl(CURLcode c)
{
    return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
           c == CURLE_GOT_NOTHING || c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR;
}

static void backoff(int attempt)
{
    long ms = 25L << attempt; /* 25, 50, 100 ms... */
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One request with retries; returns the HTTP status (> 0) or a CV_REMOTE_
 * error.  *b holds the response body. */
static int perform(cv_remote *r, method m, const char *url, body *b, cv_diag *d)
{
    const cv_curl_fns *cu = r->cu;
    int64_t now = cv_cache_mono_us();
    if (now < r->down_until_us) {
        r->st.skipped++;
        return CV_REMOTE_DOWN;
    }
    for (int attempt = 0;; attempt++) {
        if (body_restart(b) != 0) {
            r->st.errors++;
            return cv_cache_err(d, CV_E_CACHE_IO_ERROR, "remote cache %s: cannot reuse the spool "
                                "file: %s", url, strerror(errno)), CV_REMOTE_ERROR;
        }
        r->errbuf[0] = '\0';
        set_common(r, url, b);
        if (m == M_HEAD) {
            cu->easy_setopt(r->h, CURLOPT_NOBODY, 1L);
        } else if (m == M_PUT) {
            cu->easy_setopt(r->h, CURLOPT_UPLOAD, 1L);
            cu->easy_setopt(r->h, CURLOPT_READFUNCTION, on_read);
            cu->easy_setopt(r->h, CURLOPT_READDATA, b);
            cu->easy_setopt(r->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)b->up_len);
        }
        r->st.requests++;
        CURLcode c = cu->easy_perform(r->h);
        long status = 0;
        cu->easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
        bool retry_status = c == CURLE_OK && (status == 502 || status == 503 || status == 504);
        if ((transient_curl(c) || retry_status) && attempt < r->retries) {
            r->st.retries++;
            backoff(attempt);
            continue;
        }
        if (c == CURLE_OK && status >= 500)
            c = CURLE_HTTP_RETURNED_ERROR;
        if (c == CURLE_OK) {
            r->st.bytes_in += b->len;
            if (m == M_PUT)
                r->st.bytes_out += b->up_len;
            return (int)status;
        }
        r->down_until_us = cv_cache_mono_us() + (int64_t)r->down_ms * 1000;
        if (c == CURLE_OPERATION_TIMEDOUT) {
            r->st.timeouts++;
            cv_cache_err(d, CV_E_CACHE_REMOTE_TIMEOUT, "remote cache %s: no answer within %ld ms",
                         r->base, r->timeout_ms);
            return CV_REMOTE_TIMEOUT;
        }
        r->st.errors++;
        if (b->too_big)
            cv_cache_err(d, CV_E_CACHE_ENTRY_TOO_LARGE, "remote cache %s: body over %llu bytes", url,
                         (unsigned long long)b->max);
        else if (b->write_failed)
            cv_cache_err(d, cv_cache_write_errcode(b->err), "remote cache %s: cannot spool the "
                         "body under %s: %s", url, r->tmp_dir, strerror(b->err));
        else if (c == CURLE_HTTP_RETURNED_ERROR)
            cv_cache_err(d, CV_E_CACHE_REMOTE_STATUS, "remote cache %s: HTTP %ld", url, status);
        else
            cv_cache_err(d, CV_E_CACHE_REMOTE_UNREACHABLE, "remote cache %s: %s", r->base,
                         r->errbuf[0] ? r->errbuf : cu->easy_strerror(c));
        return CV_REMOTE_ERROR;
    }
}

static void make_url(const cv_remote *r, cv_cas_kind kind, const cv_digest *name, char *out,
                     size_t cap)
{
    char hex[CV_CACHE_HEX_LEN + 1];
    cv_cache_digest_hex(name, hex);
    snprintf(out, cap, "%s/%s/%s", r->base, cv_cache_cas_kind_dir(kind), hex);
}

/* A status other than the expected ones is an error (and counted). */
static int unexpected(cv_remote *r, const char *url, int status, cv_diag *d)
{
    r->st.errors++;
    return cv_cache_err(d, CV_E_CACHE_REMOTE_STATUS, "remote cache %s: HTTP %d", url, status);
}

/* GETs name into a fresh spool: CV_REMOTE_FOUND with *fd (the caller
 * closes it) holding *len bytes, a blob's checked against its name. */
static int get_spooled(cv_remote *r, cv_cas_kind kind, const cv_digest *name, uint64_t max,
                       int *fd, uint64_t *len, cv_diag *d)
{
    *fd = -1;
    *len = 0;
    char url[MAX_URL + 128];
    make_url(r, kind, name, url, sizeof url);
    body b = {.fd = spool_open(r->tmp_dir), .max = max};
    if (b.fd < 0) {
        r->st.errors++;
        return cv_cache_err(d, cv_cache_write_errcode(errno), "remote cache: cannot create a "
                            "spool file under %s: %s", r->tmp_dir, strerror(errno)),
               CV_REMOTE_ERROR;
    }
    if (kind == CV_CAS_BLOB && !(b.sha = cv_cache_hasher_new())) {
        close(b.fd);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory reading the remote cache");
    }
    int st = perform(r, M_GET, url, &b, d);
    int rc = CV_REMOTE_FOUND;
    if (st != 200) {
        rc = st == 404 ? CV_REMOTE_MISSING : st < 0 ? st : unexpected(r, url, st, d);
    } else if (b.sha) {
        cv_digest got;
        cv_cache_hasher_final(b.sha, &got);
        if (!cv_cache_digest_eq(&got, name)) {
            r->st.errors++;
            rc = cv_cache_err(d, CV_E_CACHE_REMOTE_BAD_BLOB,
                              "remote cache %s: content does not hash to its name", url);
        }
    }
    cv_cache_hasher_free(b.sha);
    if (rc != CV_REMOTE_FOUND) {
        close(b.fd);
        return rc;
    }
    *fd = b.fd;
    *len = b.len;
    return rc;
}

int cv_cache_remote_get_blob_file(cv_remote *r, const cv_digest *name, int *fd, uint64_t *len,
                                  cv_diag *d)
{
    return get_spooled(r, CV_CAS_BLOB, name, r->max_get, fd, len, d);
}

int cv_cache_remote_get(cv_remote *r, cv_cas_kind kind, const cv_digest *name, void **data,
                        size_t *len, cv_diag *d)
{
    *data = NULL;
    *len = 0;
    int fd;
    uint64_t n;
    int rc = get_spooled(r, kind, name, r->max_get, &fd, &n, d);
    if (rc != CV_REMOTE_FOUND)
        return rc;
    uint8_t *buf = n < SIZE_MAX ? malloc(n ? (size_t)n : 1) : NULL; /* exactly what came */
    if (!buf || cv_cache_cas_read_at(fd, buf, (size_t)n, 0) != 0) {
        int err = errno;
        close(fd);
        free(buf);
        r->st.errors++;
        return buf ? cv_cache_err(d, CV_E_CACHE_IO_ERROR, "remote cache: cannot read back the "
                                  "spooled body: %s", strerror(err)), CV_REMOTE_ERROR
                   : cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory reading the remote cache");
    }
    close(fd);
    size_t blen = (size_t)n;
    if (kind == CV_CAS_AC && (n || r->keys) && cv_ac_unseal(r->keys, name, buf, &blen, d) != 0) {
        free(buf);   /* an empty entry is unsigned too */
        r->st.errors++;
        return CV_REMOTE_ERROR;
    }
    *data = buf;
    *len = blen;
    return CV_REMOTE_FOUND;
}

int cv_cache_remote_head(cv_remote *r, cv_cas_kind kind, const cv_digest *name, cv_diag *d)
{
    char url[MAX_URL + 128];
    make_url(r, kind, name, url, sizeof url);
    body b = {.fd = -1, .max = 0};
    int st = perform(r, M_HEAD, url, &b, d);
    if (st == 200)
        return CV_REMOTE_FOUND;
    if (st == 404)
        return CV_REMOTE_MISSING;
    return st < 0 ? st : unexpected(r, url, st, d);
}

int cv_cache_remote_put(cv_remote *r, cv_cas_kind kind, const cv_digest *name, const void *data,
                        size_t len, cv_diag *d)
{
    if (r->read_only)
        return 0;
    char url[MAX_URL + 128];
    make_url(r, kind, name, url, sizeof url);
    void *sealed = NULL;   /* owned: the signed entry, if signing */
    if (kind == CV_CAS_AC && cv_ac_seal(r->keys, name, data, len, &sealed, &len, d) != 0)
        return CV_REMOTE_ERROR;
    body b = {.fd = -1, .max = 64 * 1024, .up = sealed ? sealed : data, .up_len = len};
    int st = perform(r, M_PUT, url, &b, d);
    free(sealed);
    if (st == 200 || st == 201 || st == 204)
        return 0;
    return st < 0 ? st : unexpected(r, url, st, d);
}
