/* The HTTP side of cuvil serve: libmicrohttpd (common/netlib.h) with one
 * thread per connection, since a request's thread waits for its batch to
 * run; connection limits and deadlines from common/netguard.h, as the
 * cache server and the farm's HTTP server use them.  A body is read whole
 * (up to max_body; past it, read and dropped, then 413) before it is
 * answered. */
#include "serve/serve_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/netguard.h"
#include "common/netlib.h"

enum { CONN_TIMEOUT_S = 60 };

static const cv_mhd_fns *mhd(void)
{
    return cv_netlib_mhd(NULL);   /* loaded by cv_serve_start */
}

/* ---------------------------------------------------------------- answers */

typedef struct answer {
    int status;
    cv_sb body;
    const char *type;
    int64_t hdr_len;              /* Inference-Header-Content-Length, -1: none */
    const char *allow;
    bool close;
} answer;

static int status_of(int code)
{
    switch (code) {
    case CV_E_SERVE_UNKNOWN_MODEL:
    case CV_E_SERVE_NOT_FOUND: return 404;
    case CV_E_SERVE_TOO_LARGE: return 413;
    case CV_E_SERVE_QUEUE_FULL: return 429;
    case CV_E_SERVE_RUN_FAILED: return 500;
    case CV_E_SERVE_UNAVAILABLE: return 503;
    default: return 400;
    }
}

/* The protocol's error shape, {"error": "..."}, with the code named in the
 * text and apart ("code": "CV9411") for scripts. */
static void fail(answer *a, int code, const char *why)
{
    json_t *o = json_object();
    char text[640], c[16];
    snprintf(c, sizeof c, "CV%04d", code);
    snprintf(text, sizeof text, "%s: %s", c, why);
    json_object_set_new(o, "error", json_string(text));
    json_object_set_new(o, "code", json_string(c));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    cv_sb_reset(&a->body);
    if (s)
        cv_sb_puts(&a->body, s);
    free(s);
    a->status = a->status == 405 ? 405 : status_of(code);
    a->type = "application/json";
}

static void json_answer(answer *a, int status, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) {
        fail(a, CV_E_SERVE_RUN_FAILED, "out of memory");
        return;
    }
    cv_sb_puts(&a->body, s);
    free(s);
    a->status = status;
    a->type = "application/json";
}

/* ---------------------------------------------------------------- routes */

static void count_failure(cv_serve *s, sv_model *m, int code)
{
    int slot = sv_fail_slot(code);
    if (m && slot >= 0) {
        pthread_mutex_lock(&m->st.mu);
        m->st.failures[slot]++;
        pthread_mutex_unlock(&m->st.mu);
    } else {
        int i = slot >= 0 ? slot : code == CV_E_SERVE_UNKNOWN_MODEL ? SV_FAIL__COUNT
                                                                    : SV_FAIL__COUNT + 1;
        atomic_fetch_add(&s->http_errors[i], 1);
    }
}

typedef struct request {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const char *body;
    size_t len;
} request;

static void infer(cv_serve *s, sv_model *m, const request *rq, answer *a)
{
    int64_t t0 = sv_now_ns();
    pthread_mutex_lock(&m->st.mu);
    m->st.requests++;
    pthread_mutex_unlock(&m->st.mu);
    const char *hl = mhd()->lookup_connection_value(rq->conn, MHD_HEADER_KIND,
                                                    "Inference-Header-Content-Length");
    int64_t hdr_len = -1;
    char why[512];
    int code = 0;
    if (hl) {
        size_t n = strlen(hl);
        if (n == 0 || n > 18 || strspn(hl, "0123456789") != n)
            code = CV_E_SERVE_BAD_REQUEST,
            snprintf(why, sizeof why, "Inference-Header-Content-Length is not a number");
        else
            hdr_len = atoll(hl);
    }
    sv_req *r = sv_req_new(m->pool);
    if (!r)
        code = CV_E_SERVE_RUN_FAILED, snprintf(why, sizeof why, "out of memory");
    if (!code)
        code = sv_infer_decode(m, &s->lim, rq->body, rq->len, hdr_len, r, why, sizeof why);
    if (!code && (code = sv_model_submit(m, r)) != 0)
        snprintf(why, sizeof why, code == CV_E_SERVE_QUEUE_FULL
                                      ? "model %s has %d requests waiting; retry later"
                                      : "model %s is stopping", m->name, m->cfg.max_queue_size);
    if (!code) {
        sv_model_wait(m, r);
        if (r->err_code)
            code = r->err_code, snprintf(why, sizeof why, "%s", r->err);
    }
    char *body = NULL;
    size_t len = 0;
    if (!code && sv_infer_encode(m, r, &body, &len, &a->hdr_len) != 0)
        code = CV_E_SERVE_RUN_FAILED, snprintf(why, sizeof why, "out of memory");
    if (code) {
        fail(a, code, why);
        count_failure(s, m, code);
    } else {
        cv_sb_add(&a->body, body, len);
        a->status = 200;
        a->type = a->hdr_len >= 0 ? "application/octet-stream" : "application/json";
        int64_t t1 = sv_now_ns();
        pthread_mutex_lock(&m->st.mu);
        m->st.ok++;
        sv_hist_add(&m->st.queue_s, sv_time_bounds, (double)(r->t_start - r->t_enqueue) / 1e9);
        sv_hist_add(&m->st.request_s, sv_time_bounds, (double)(t1 - t0) / 1e9);
        pthread_mutex_unlock(&m->st.mu);
    }
    free(body);
    sv_req_free(m->pool, r);
}

static void metrics(cv_serve *s, answer *a)
{
    cv_sb *o = &a->body;
    cv_sb_printf(o, "# HELP cuvil_runtime_up 1 while cuvil serve takes requests\n"
                    "# TYPE cuvil_runtime_up gauge\ncuvil_runtime_up %d\n",
                 atomic_load(&s->draining) ? 0 : 1);
    cv_sb_printf(o, "# HELP cuvil_model_loaded_versions versions of the model loaded\n"
                    "# TYPE cuvil_model_loaded_versions gauge\n");
    pthread_mutex_lock(&s->models_mu);   /* a reload may swap a version meanwhile */
    for (int i = 0; i < s->n_models; i++)
        cv_sb_printf(o, "cuvil_model_loaded_versions{model=\"%s\"} 1\n", s->models[i]->name);
    pthread_mutex_unlock(&s->models_mu);
    pthread_mutex_lock(&s->models_mu);
    int n = s->n_models;
    sv_model **held = calloc((size_t)(n ? n : 1), sizeof *held);
    for (int i = 0; held && i < n; i++)
        (held[i] = s->models[i])->refs++;
    pthread_mutex_unlock(&s->models_mu);
    if (!held) {
        o->oom = 1;
        return;
    }
    sv_metrics_models(o, held, n);
    for (int i = 0; i < n; i++)
        sv_release(s, held[i]);
    free(held);
    cv_sb_printf(o, "# HELP cuvil_http_failures_total requests refused before reaching a "
                    "model, by code\n# TYPE cuvil_http_failures_total counter\n");
    static const int codes[SV_FAIL__COUNT + 2] = {
        CV_E_SERVE_BAD_REQUEST, CV_E_SERVE_BAD_TENSOR, CV_E_SERVE_TOO_LARGE,
        CV_E_SERVE_QUEUE_FULL, CV_E_SERVE_RUN_FAILED, CV_E_SERVE_TRUNCATED,
        CV_E_SERVE_UNAVAILABLE, CV_E_SERVE_UNKNOWN_MODEL, CV_E_SERVE_NOT_FOUND};
    for (int i = 0; i < SV_FAIL__COUNT + 2; i++)
        cv_sb_printf(o, "cuvil_http_failures_total{code=\"CV%04d\"} %llu\n", codes[i],
                     (unsigned long long)atomic_load(&s->http_errors[i]));
    a->status = 200;
    a->type = "text/plain; version=0.0.4";
}

static bool is(const char *a, size_t n, const char *b)
{
    return strlen(b) == n && memcmp(a, b, n) == 0;
}

/* /v2/models/NAME[/versions/V][/ready|/infer] */
static void model_route(cv_serve *s, const request *rq, const char *rest, answer *a)
{
    size_t nl = strcspn(rest, "/");
    sv_model *m = sv_acquire(s, rest, nl);
    const char *tail = rest + nl;
    if (m && strncmp(tail, "/versions/", 10) == 0) {
        const char *v = tail + 10;
        size_t vl = strcspn(v, "/");
        if (!is(v, vl, m->version))
            sv_release(s, m), m = NULL;
        tail = v + vl;
    }
    if (!m) {
        char why[160];
        snprintf(why, sizeof why, "no model '%.*s' (or not that version) is served",
                 (int)(nl > 64 ? 64 : nl), rest);
        fail(a, CV_E_SERVE_UNKNOWN_MODEL, why);
        count_failure(s, NULL, CV_E_SERVE_UNKNOWN_MODEL);
        return;
    }
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    bool post = strcmp(rq->method, "POST") == 0;
    if (strcmp(tail, "") == 0 && get)
        json_answer(a, 200, sv_model_metadata(m));
    else if (strcmp(tail, "/ready") == 0 && get)
        json_answer(a, 200, json_pack("{s:s, s:b}", "name", m->name, "ready", 1));
    else if (strcmp(tail, "/infer") == 0 && post)
        infer(s, m, rq, a);
    else if (strcmp(tail, "") == 0 || strcmp(tail, "/ready") == 0 || strcmp(tail, "/infer") == 0)
        a->status = 405, a->allow = strcmp(tail, "/infer") == 0 ? "POST" : "GET, HEAD",
        fail(a, CV_E_SERVE_NOT_FOUND, "wrong method for this endpoint");
    else
        fail(a, CV_E_SERVE_NOT_FOUND, "no endpoint at this path"),
        count_failure(s, NULL, CV_E_SERVE_NOT_FOUND);
    sv_release(s, m);
}

/* POST /v2/repository/models/NAME/load or /unload (the model repository
 * extension of Triton's protocol): a hot reload of NAME (loading it when
 * it was added to the repository since), or taking it out of service. */
static void repository_route(cv_serve *s, const char *rest, answer *a)
{
    const char *slash = strrchr(rest, '/');
    bool load = slash && strcmp(slash, "/load") == 0;
    if (!slash || (!load && strcmp(slash, "/unload") != 0)) {
        fail(a, CV_E_SERVE_NOT_FOUND, "no endpoint at this path (POST "
             "/v2/repository/models/NAME/load or /unload, /v2/repository/index)");
        count_failure(s, NULL, CV_E_SERVE_NOT_FOUND);
        return;
    }
    /* The whole segment, '/' and all: a name that is none is refused. */
    char *nm = strndup(rest, (size_t)(slash - rest));
    cv_diag d;
    cv_diag_init(&d);
    int rc = !nm ? cv_diag_fail(&d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory")
             : load ? cv_serve_reload(s, nm, &d) : cv_serve_unload(s, nm, &d);
    if (rc == 0) {
        sv_model *m = load ? sv_acquire(s, nm, strlen(nm)) : NULL;
        json_answer(a, 200, load ? json_pack("{s:s, s:s}", "name", nm, "version",
                                             m ? m->version : "")
                                 : json_pack("{s:s, s:s}", "name", nm, "state", "UNAVAILABLE"));
        sv_release(s, m);
    } else {
        /* The last entry says what was refused, the first why. */
        const cv_diag_entry *first = d.n ? &d.v[0] : NULL, *last = d.n ? &d.v[d.n - 1] : NULL;
        char why[600];
        snprintf(why, sizeof why, "%s%s%s", last ? last->msg : "the reload failed",
                 first != last ? ": " : "", first != last ? first->msg : "");
        fail(a, last ? last->code : CV_E_SERVE_MODEL_LOAD, why);
    }
    cv_diag_free(&d);
    free(nm);
}

/* POST /v2/repository/index: rescans the repository (models added or
 * removed since), then lists the models. */
static void index_route(cv_serve *s, answer *a)
{
    cv_diag d;
    cv_diag_init(&d);
    if (cv_serve_rescan(s, &d) != 0)
        for (int i = 0; i < d.n; i++)
            cv_log_warn("cuvil serve: rescan: CV%04d %s", d.v[i].code, d.v[i].msg);
    cv_diag_free(&d);
    json_answer(a, 200, sv_repo_index(s));
}

static void route(cv_serve *s, const request *rq, answer *a)
{
    const char *p = rq->path;
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    if (strncmp(p, "/v2/models/", 11) == 0)
        return model_route(s, rq, p + 11, a);
    if (strcmp(rq->method, "POST") == 0 && strncmp(p, "/v2/repository/models/", 22) == 0)
        return repository_route(s, p + 22, a);
    if (strcmp(rq->method, "POST") == 0 && strcmp(p, "/v2/repository/index") == 0)
        return index_route(s, a);
    if (get && strcmp(p, "/v2/health/live") == 0)
        return json_answer(a, 200, json_pack("{s:b}", "live", 1));
    if (get && strcmp(p, "/v2/health/ready") == 0) {
        bool ready = !atomic_load(&s->draining);
        return json_answer(a, ready ? 200 : 503, json_pack("{s:b}", "ready", ready));
    }
    if (get && strcmp(p, "/v2") == 0)
        return json_answer(a, 200, json_pack("{s:s, s:s, s:[s]}", "name", "cuvil", "version",
                                             "2", "extensions", "binary_tensor_data"));
    if (get && strcmp(p, "/metrics") == 0)
        return metrics(s, a);
    fail(a, CV_E_SERVE_NOT_FOUND, "no endpoint at this path (see /v2/health/live, "
         "/v2/models/NAME, /v2/models/NAME/infer, /metrics)");
    count_failure(s, NULL, CV_E_SERVE_NOT_FOUND);
}

/* ---------------------------------------------------------------- connections */

typedef struct conn_state {
    char *path;                 /* owned */
    const char *method;         /* libmicrohttpd's, valid for the request */
    cv_sb body;                 /* owned */
    uint64_t dropped;
    bool too_large, answered;
} conn_state;

static enum MHD_Result send_answer(struct MHD_Connection *c, answer *a)
{
    size_t n = a->body.len;
    char *buf = cv_sb_steal(&a->body);
    if (!buf)
        buf = calloc(1, 1), n = 0;
    struct MHD_Response *resp =
        buf ? mhd()->create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(buf);
        return MHD_NO;
    }
    mhd()->add_response_header(resp, "Content-Type", a->type ? a->type : "application/json");
    if (a->hdr_len >= 0) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)a->hdr_len);
        mhd()->add_response_header(resp, "Inference-Header-Content-Length", v);
    }
    if (a->status == 429 || a->status == 503)
        mhd()->add_response_header(resp, "Retry-After", "1");
    if (a->allow)
        mhd()->add_response_header(resp, "Allow", a->allow);
    if (a->close)
        mhd()->add_response_header(resp, "Connection", "close");
    enum MHD_Result ok = mhd()->queue_response(c, (unsigned)a->status, resp);
    mhd()->destroy_response(resp);
    return ok;
}

static void active_add(cv_serve *s, int k)
{
    pthread_mutex_lock(&s->mu);
    s->active += k;
    if (s->active == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

/* The head is complete: ambiguous framing (400), a full server or one
 * that is stopping (503), a body announced over the limit whose client
 * waits for 100 Continue (413) are answered at once, then closed. */
static enum MHD_Result head(cv_serve *s, conn_state *cs, struct MHD_Connection *c)
{
    answer a = {.hdr_len = -1, .close = true};
    uint64_t len = 0;
    bool chunked = false;
    bool waits = cv_net_body_waits(c, &len, &chunked);
    const char *bad = cv_net_framing_error(c);
    if (bad)
        fail(&a, CV_E_SERVE_BAD_REQUEST, bad);
    else if (atomic_load(&s->draining))
        fail(&a, CV_E_SERVE_UNAVAILABLE, "the server is shutting down");
    else if (!cv_netguard_request(s->guard, c, false))
        fail(&a, CV_E_SERVE_UNAVAILABLE, "too many connections");
    else if (len > s->max_body)
        cs->too_large = true;
    if (!a.status && cs->too_large && waits) {
        char why[96];
        snprintf(why, sizeof why, "the body is larger than %llu bytes",
                 (unsigned long long)s->max_body);
        fail(&a, CV_E_SERVE_TOO_LARGE, why);
    }
    if (!a.status)
        return MHD_YES;
    if (a.status != 413)
        count_failure(s, NULL, a.status == 400 ? CV_E_SERVE_BAD_REQUEST : CV_E_SERVE_UNAVAILABLE);
    else
        count_failure(s, NULL, CV_E_SERVE_TOO_LARGE);
    cs->answered = true;
    enum MHD_Result ok = send_answer(c, &a);
    cv_sb_free(&a.body);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    cv_serve *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = calloc(1, sizeof *cs);
        if (!cs || !(cs->path = strdup(url))) {
            free(cs);
            return MHD_NO;
        }
        cs->method = method;
        *con_cls = cs;
        active_add(s, 1);
        return head(s, cs, c);
    }
    if (cs->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        cv_netguard_body(s->guard, c, *upload_size);
        bool keep = cv_netguard_absorb(&cs->body, &cs->too_large, &cs->dropped, s->max_body,
                                       upload, *upload_size);
        *upload_size = 0;
        return keep ? MHD_YES : MHD_NO;
    }
    cv_netguard_answering(s->guard, c);
    answer a = {.hdr_len = -1};
    if (cs->too_large) {
        char why[96];
        snprintf(why, sizeof why, "the body is larger than %llu bytes",
                 (unsigned long long)s->max_body);
        fail(&a, CV_E_SERVE_TOO_LARGE, why);
        count_failure(s, NULL, CV_E_SERVE_TOO_LARGE);
    } else {
        request rq = {.conn = c, .method = cs->method, .path = cs->path,
                      .body = cs->body.buf ? cs->body.buf : "", .len = cs->body.len};
        route(s, &rq, &a);
    }
    enum MHD_Result ok = send_answer(c, &a);
    cv_sb_free(&a.body);
    return ok;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    cv_serve *s = cls;
    conn_state *cs = *con_cls;
    if (!cs)
        return;
    cv_netguard_done(s->guard, c);
    cv_sb_free(&cs->body);
    free(cs->path);
    free(cs);
    *con_cls = NULL;
    active_add(s, -1);
}

/* ---------------------------------------------------------------- life */

static int start_daemon(cv_serve *s, const cv_serve_opts *o, cv_diag *d)
{
    const char *listen = o->listen ? o->listen : CV_SERVE_DEFAULT_LISTEN;
    struct sockaddr_storage ss;
    bool v6 = false;
    char why[512];
    if (cv_net_listen_addr(listen, &ss, &v6, why, sizeof why) != 0)
        return cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){0}, "--listen %s", why);
    unsigned conns = o->max_conns ? o->max_conns : CV_SERVE_MAX_CONNS;
    cv_netguard_opts g = {.max_conns = conns, .reserve = 1, .per_client = conns};
    if (cv_netguard_new(&g, CV_E_SERVE_START_FAILED, &s->guard, d) != 0)
        return -1;
    uint64_t hdr = o->max_header ? o->max_header : CV_SERVE_MAX_HEADER;
    size_t mem = (size_t)(hdr < 4096 ? 4096 : hdr);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_ITC | MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    s->daemon = mhd()->start_daemon(
        flags, 0, cv_netguard_accept_cb, s->guard, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION,
        cv_netguard_notify_cb, s->guard, MHD_OPTION_CONNECTION_LIMIT,
        cv_netguard_mhd_limit(s->guard), MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
    if (!s->daemon)
        return cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){0}, "cannot listen on %s: %s",
                            listen, strerror(errno));
    const union MHD_DaemonInfo *info = mhd()->get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return 0;
}

int cv_serve_start(const cv_serve_opts *o, cv_serve **out, cv_diag *d)
{
    *out = NULL;
    if (!o->model_repository)
        return cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){0},
                            "no model repository given");
    if (!cv_netlib_mhd(d))
        return -1;
    cv_serve *s = calloc(1, sizeof *s);
    if (!s)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_mutex_init(&s->models_mu, NULL);
    pthread_mutex_init(&s->reload_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->poll_cv, &ca);
    pthread_condattr_destroy(&ca);
    s->poll_ms = o->poll_ms;
    s->repo = strdup(o->model_repository);
    s->threads = o->threads;
    s->no_batching = o->no_batching;
    s->lim.max_tensor = o->max_tensor ? o->max_tensor : CV_SERVE_MAX_TENSOR;
    s->max_body = o->max_body ? o->max_body : CV_SERVE_MAX_BODY;
    int rc = s->repo ? sv_repo_load_all(s, d)
                     : cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (rc == 0)
        rc = start_daemon(s, o, d);
    if (rc == 0)
        rc = sv_repo_poll_start(s, d);
    if (rc != 0) {
        cv_diag_error(d, CV_E_SERVE_START_FAILED, (cv_span){0}, "cuvil serve did not start");
        cv_serve_stop(s, 0);
        return -1;
    }
    *out = s;
    return 0;
}

int cv_serve_port(const cv_serve *s)
{
    return s ? s->port : 0;
}

void cv_serve_stop(cv_serve *s, int drain_ms)
{
    if (!s)
        return;
    atomic_store(&s->draining, true);
    sv_repo_poll_stop(s);
    if (s->daemon) {
        MHD_socket lfd = mhd()->quiesce_daemon(s->daemon);   /* no new connections */
        if (lfd != MHD_INVALID_SOCKET)
            close(lfd);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)(drain_ms > 0 ? drain_ms : 0) * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_mutex_lock(&s->mu);
        while (s->active > 0 && pthread_cond_timedwait(&s->idle, &s->mu, &ts) == 0)
            ;
        pthread_mutex_unlock(&s->mu);
        mhd()->stop_daemon(s->daemon);   /* joins the connection threads */
    }
    for (int i = 0; i < s->n_models; i++)
        sv_model_free(s->models[i]);
    free(s->models);
    free(s->unloaded);
    cv_netguard_free(s->guard);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->models_mu);
    pthread_mutex_destroy(&s->reload_mu);
    pthread_cond_destroy(&s->poll_cv);
    free(s->repo);
    free(s);
}
