/* The Kubernetes REST client: JSON requests and watch streams over libcurl
 * (loaded on first use through common/netlib.h).  Two handles, one for
 * requests and one for the watch, so that each keeps its connection. */
#include <stdlib.h>
#include <string.h>

#include "common/netlib.h"
#include "common/strbuf.h"
#include "k8s-operator/internal.h"

#define MAX_RESPONSE ((size_t)32 << 20)   /* a list of many objects */
#define MAX_EVENT ((size_t)8 << 20)       /* one watch event */
#define REQUEST_TIMEOUT_MS 30000L
#define CONNECT_TIMEOUT_MS 5000L
#define TOKEN_REFRESH_MS 60000

struct cv_k8s_client {
    const cv_curl_fns *cu;
    CURL *req, *watch;
    char *server, *token, *token_file;   /* owned */
    char *ca, *cert, *key;               /* owned PEM copies; may be NULL */
    size_t ca_len, cert_len, key_len;
    bool insecure;
    int64_t token_read_ms;
    int64_t requests;
};

static char *dup_n(const char *s, size_t n)
{
    char *c = s ? malloc(n + 1) : NULL;
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

int cv_k8s_client_open(const cv_k8s_config *c, cv_k8s_client **out, cv_diag *d)
{
    *out = NULL;
    const cv_curl_fns *cu = cv_netlib_curl(d);
    if (!cu)
        return -1;
    cv_k8s_client *k = calloc(1, sizeof *k);
    if (!k)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    k->cu = cu;
    k->server = c->server ? strdup(c->server) : NULL;
    k->token = c->token ? strdup(c->token) : NULL;
    k->token_file = c->token_file ? strdup(c->token_file) : NULL;
    k->ca = dup_n(c->ca_pem, k->ca_len = c->ca_len);
    k->cert = dup_n(c->cert_pem, k->cert_len = c->cert_len);
    k->key = dup_n(c->key_pem, k->key_len = c->key_len);
    k->insecure = c->insecure;
    k->token_read_ms = k8s_mono_ms();
    k->req = cu->easy_init();
    k->watch = cu->easy_init();
    if (!k->server || !k->req || !k->watch) {
        cv_k8s_client_close(k);
        return cv_diag_fail(d, CV_E_K8S_NO_CONFIG, (cv_span){0},
                            "cannot set up the Kubernetes client (no server, or out of memory)");
    }
    *out = k;
    return 0;
}

void cv_k8s_client_close(cv_k8s_client *c)
{
    if (!c)
        return;
    if (c->req)
        c->cu->easy_cleanup(c->req);
    if (c->watch)
        c->cu->easy_cleanup(c->watch);
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    if (c->key)
        explicit_bzero(c->key, c->key_len);
    free(c->server);
    free(c->token);
    free(c->token_file);
    free(c->ca);
    free(c->cert);
    free(c->key);
    free(c);
}

int64_t cv_k8s_client_requests(const cv_k8s_client *c) { return c->requests; }

/* Projected service-account tokens are rotated by the kubelet. */
static void refresh_token(cv_k8s_client *c)
{
    if (!c->token_file || k8s_mono_ms() - c->token_read_ms < TOKEN_REFRESH_MS)
        return;
    c->token_read_ms = k8s_mono_ms();
    cv_diag quiet;
    cv_diag_init(&quiet);
    char *t = k8s_read_trimmed(c->token_file, K8S_TOKEN_MAX, NULL, &quiet);
    if (t && *t) {
        if (c->token)
            explicit_bzero(c->token, strlen(c->token));
        free(c->token);
        c->token = t;
        t = NULL;
    }
    free(t);
    cv_diag_free(&quiet);
}

static void set_blob(const cv_curl_fns *cu, CURL *h, CURLoption opt, char *data, size_t len)
{
    if (!data)
        return;
    struct curl_blob b = {.data = data, .len = len, .flags = CURL_BLOB_COPY};
    cu->easy_setopt(h, opt, &b);
}

/* Options every request and watch shares; *hdrs is the caller's to free. */
static int setup(cv_k8s_client *c, CURL *h, const char *path, const char *content_type,
                 struct curl_slist **hdrs)
{
    const cv_curl_fns *cu = c->cu;
    refresh_token(c);
    cu->easy_reset(h);
    cv_sb url = CV_SB_INIT;
    cv_sb_printf(&url, "%s%s", c->server, path);
    if (url.oom)
        return -1;
    cu->easy_setopt(h, CURLOPT_URL, cv_sb_str(&url));
    cv_sb_free(&url);
    cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    cu->easy_setopt(h, CURLOPT_USERAGENT, "cuvil-operator");
    cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    set_blob(cu, h, CURLOPT_CAINFO_BLOB, c->ca, c->ca_len);
    set_blob(cu, h, CURLOPT_SSLCERT_BLOB, c->cert, c->cert_len);
    set_blob(cu, h, CURLOPT_SSLKEY_BLOB, c->key, c->key_len);
    if (c->cert)
        cu->easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    if (c->key)
        cu->easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    if (c->insecure) {
        cu->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        cu->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    struct curl_slist *l = cu->slist_append(NULL, "Accept: application/json");
    cv_sb line = CV_SB_INIT;
    if (content_type) {
        cv_sb_printf(&line, "Content-Type: %s", content_type);
        l = l ? cu->slist_append(l, cv_sb_str(&line)) : NULL;
    }
    if (c->token) {
        cv_sb_reset(&line);
        cv_sb_printf(&line, "Authorization: Bearer %s", c->token);
        l = l ? cu->slist_append(l, cv_sb_str(&line)) : NULL;
        if (line.buf)
            explicit_bzero(line.buf, line.len);
    }
    cv_sb_free(&line);
    *hdrs = l;
    if (!l)
        return -1;
    cu->easy_setopt(h, CURLOPT_HTTPHEADER, l);
    c->requests++;
    return 0;
}

/* ------------------------------------------------------------- requests */

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
    cv_sb *sb = ctx;
    if (sb->len + n > MAX_RESPONSE)
        return 0;
    cv_sb_add(sb, p, n);
    return sb->oom ? 0 : n;
}

static int transport_error(cv_k8s_client *c, CURLcode rc, const char *method, const char *path,
                           cv_diag *d)
{
    cv_diag_error(d, rc == CURLE_WRITE_ERROR ? CV_E_K8S_BAD_RESPONSE : CV_E_K8S_UNREACHABLE,
                  (cv_span){0}, "%s %s%s: %s", method, c->server, path,
                  rc == CURLE_WRITE_ERROR ? "the answer is larger than 32 MiB"
                                          : c->cu->easy_strerror(rc));
    return -1;
}

int cv_k8s_request(cv_k8s_client *c, const char *method, const char *path,
                   const char *content_type, const json_t *body, long *status, json_t **out,
                   cv_diag *d)
{
    *out = NULL;
    *status = 0;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct curl_slist *hdrs = NULL;
    if ((body && !text) ||
        setup(c, c->req, path, body ? (content_type ? content_type : "application/json") : NULL,
              &hdrs) != 0) {
        free(text);
        c->cu->slist_free_all(hdrs);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    const cv_curl_fns *cu = c->cu;
    cv_sb resp = CV_SB_INIT;
    cu->easy_setopt(c->req, CURLOPT_CUSTOMREQUEST, method);
    if (text) {
        cu->easy_setopt(c->req, CURLOPT_POSTFIELDS, text);
        cu->easy_setopt(c->req, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
    } else if (strcmp(method, "GET") != 0) {
        cu->easy_setopt(c->req, CURLOPT_POSTFIELDSIZE, 0L);
        cu->easy_setopt(c->req, CURLOPT_POSTFIELDS, "");
    }
    cu->easy_setopt(c->req, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
    cu->easy_setopt(c->req, CURLOPT_WRITEFUNCTION, collect);
    cu->easy_setopt(c->req, CURLOPT_WRITEDATA, &resp);
    CURLcode rc = cu->easy_perform(c->req);
    cu->slist_free_all(hdrs);
    free(text);
    if (rc != CURLE_OK) {
        cv_sb_free(&resp);
        return transport_error(c, rc, method, path, d);
    }
    cu->easy_getinfo(c->req, CURLINFO_RESPONSE_CODE, status);
    if (resp.len)
        *out = json_loadb(resp.buf, resp.len, JSON_REJECT_DUPLICATES, NULL);
    cv_sb_free(&resp);
    return 0;
}

/* --------------------------------------------------------------- watch */

#define MAX_ERROR_BODY ((size_t)64 << 10)

typedef struct watch_ctx {
    cv_k8s_event_fn fn;
    void *ctx;
    volatile int *stop;
    const cv_curl_fns *cu;
    CURL *h;
    long http;                  /* the answer's status, once known */
    cv_sb line;                 /* the event not yet complete */
    bool stopped, bad;
    char why[200];
} watch_ctx;

/* One complete line: {"type": ..., "object": {...}}. */
static void watch_line(watch_ctx *w, const char *p, size_t n)
{
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
        n--;
    if (!n || w->stopped)
        return;
    json_error_t err;
    json_t *ev = json_loadb(p, n, JSON_REJECT_DUPLICATES, &err);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        snprintf(w->why, sizeof w->why, "a watch event is not {type, object}: %.120s",
                 ev ? "missing members" : err.text);
        w->bad = w->stopped = true;
    } else if (w->fn(w->ctx, type, obj)) {
        w->stopped = true;
    }
    json_decref(ev);
}

static size_t watch_data(char *p, size_t size, size_t n, void *ctx)
{
    watch_ctx *w = ctx;
    if (!w->http)
        w->cu->easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->http);
    if (w->http != 200) {   /* a Status, handed over as an ERROR event at the end */
        if (w->line.len + n <= MAX_ERROR_BODY)
            cv_sb_add(&w->line, p, n);
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t piece = nl ? (size_t)(nl - (p + i)) : n - i;
        if (w->line.len + piece > MAX_EVENT) {
            snprintf(w->why, sizeof w->why, "a watch event is larger than 8 MiB");
            w->bad = w->stopped = true;
            return 0;
        }
        cv_sb_add(&w->line, p + i, piece);
        if (w->line.oom)
            return 0;
        i += piece;
        if (nl) {
            watch_line(w, w->line.buf, w->line.len);
            cv_sb_reset(&w->line);
        }
    }
    /* Everything received is handled before a stop ends the stream. */
    return w->stopped ? 0 : n;
}

/* An answer other than 200 as the API server sends errors within a
 * stream: an ERROR event with a Status (its code the HTTP status). */
static void error_event(watch_ctx *w, long status)
{
    json_t *st = w->line.len ? json_loadb(w->line.buf, w->line.len, 0, NULL) : NULL;
    if (!json_is_object(st)) {
        json_decref(st);
        st = json_pack("{s:s, s:s}", "kind", "Status", "message", "");
    }
    if (st && !json_integer_value(json_object_get(st, "code")))
        json_object_set_new(st, "code", json_integer(status));
    if (st)
        w->fn(w->ctx, "ERROR", st);
    json_decref(st);
}

static int watch_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const watch_ctx *w = ctx;
    return w->stop && *w->stop ? 1 : 0;
}

int cv_k8s_watch(cv_k8s_client *c, const char *path, int64_t timeout_ms, volatile int *stop,
                 cv_k8s_event_fn fn, void *ctx, long *status, cv_diag *d)
{
    *status = 0;
    struct curl_slist *hdrs = NULL;
    if (setup(c, c->watch, path, NULL, &hdrs) != 0) {
        c->cu->slist_free_all(hdrs);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    const cv_curl_fns *cu = c->cu;
    watch_ctx w = {.fn = fn, .ctx = ctx, .stop = stop, .cu = cu, .h = c->watch};
    cu->easy_setopt(c->watch, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    cu->easy_setopt(c->watch, CURLOPT_WRITEFUNCTION, watch_data);
    cu->easy_setopt(c->watch, CURLOPT_WRITEDATA, &w);
    cu->easy_setopt(c->watch, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(c->watch, CURLOPT_XFERINFOFUNCTION, watch_progress);
    cu->easy_setopt(c->watch, CURLOPT_XFERINFODATA, &w);
    CURLcode rc = cu->easy_perform(c->watch);
    cu->slist_free_all(hdrs);
    cu->easy_getinfo(c->watch, CURLINFO_RESPONSE_CODE, status);
    if (w.line.len && !w.stopped && *status == 200)
        watch_line(&w, w.line.buf, w.line.len);   /* a last event without its newline */
    if (*status && *status != 200)
        error_event(&w, *status);
    cv_sb_free(&w.line);
    if (w.bad)
        return cv_diag_fail(d, CV_E_K8S_BAD_RESPONSE, (cv_span){0}, "watch %s: %s", path,
                            w.why);
    /* Ours to end: a stop, a handled event, the time limit. */
    bool ended = rc == CURLE_OK || rc == CURLE_OPERATION_TIMEDOUT ||
                 rc == CURLE_ABORTED_BY_CALLBACK || (rc == CURLE_WRITE_ERROR && w.stopped);
    if (!ended || (*status == 0 && rc != CURLE_ABORTED_BY_CALLBACK &&
                   rc != CURLE_OPERATION_TIMEDOUT))
        return transport_error(c, rc, "watch", path, d);
    return 0;
}
