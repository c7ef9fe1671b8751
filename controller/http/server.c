/* The farm's HTTP server: libmicrohttpd on one internal polling thread.
 *
 * A request's body is read whole (at most CV_HTTP_BODY_MAX; past that it is
 * read and dropped and the answer is 413) before it is answered, as the
 * cache server does: answering while a client still sends makes most
 * clients see a reset instead of the answer.  Tokens use the cache
 * server's file format and check ("TOKEN ro|rw"; Bearer, or Basic with the
 * token as password, which browsers ask for).  Connection limits, deadlines
 * and the head's framing check are common/netguard.c's, shared with the
 * cache server; the warning for an open listen is logged at once, since
 * `cuvil farm` prints its diagnostics only when it stops. */
#include "controller/http/http_internal.h"

#include "common/tokens.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/netguard.h"
#include "common/netlib.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>

enum { CONN_TIMEOUT_S = 30 };

static const cv_mhd_fns *mhd(void)
{
    return cv_netlib_mhd(NULL);   /* loaded by cv_http_start before any request */
}

int64_t http_now_ms(const cv_http *h)
{
    return cv_ctl_now_ms(h->now_fn, h->clock_ctx);
}

/* ---------------------------------------------------------------- routes */

typedef enum { NEED_NONE, NEED_READ, NEED_WRITE } need;

typedef struct route {
    const char *method;     /* GET routes answer HEAD too */
    const char *path;       /* exact, or a prefix when it ends in '/' */
    http_area area;
    need right;
    http_handler fn;
} route;

static const route routes[] = {
    {"GET", "/", HTTP_AREA_PAGE, NEED_READ, http_page_overview},
    {"GET", "/revisions/", HTTP_AREA_PAGE, NEED_READ, http_page_revision},
    {"GET", "/failures", HTTP_AREA_PAGE, NEED_READ, http_page_failures},
    {"GET", "/models", HTTP_AREA_PAGE, NEED_READ, http_page_model},
    {"GET", "/misses", HTTP_AREA_PAGE, NEED_READ, http_page_misses},
    {"GET", "/metrics", HTTP_AREA_METRICS, NEED_READ, http_metrics},
    {"GET", "/api/v1/status", HTTP_AREA_API, NEED_READ, http_api_status},
    {"GET", "/api/v1/revisions", HTTP_AREA_API, NEED_READ, http_api_revisions},
    {"POST", "/api/v1/revisions", HTTP_AREA_API, NEED_WRITE, http_api_build},
    {"GET", "/api/v1/revisions/", HTTP_AREA_API, NEED_READ, http_api_revision},
    {"GET", "/api/v1/requests/", HTTP_AREA_API, NEED_READ, http_api_request},
    {"GET", "/api/v1/jobs", HTTP_AREA_API, NEED_READ, http_api_jobs},
    {"GET", "/api/v1/failures", HTTP_AREA_API, NEED_READ, http_api_failures},
    {"GET", "/api/v1/cache", HTTP_AREA_API, NEED_READ, http_api_cache},
    {"GET", "/api/v1/workers", HTTP_AREA_API, NEED_READ, http_api_workers},
    {"GET", "/api/v1/artifacts", HTTP_AREA_API, NEED_READ, http_api_artifacts},
    {"GET", "/api/v1/models", HTTP_AREA_API, NEED_READ, http_api_models},
    {"GET", "/api/v1/misses", HTTP_AREA_API, NEED_READ, http_api_misses},
    {"POST", "/hooks/github", HTTP_AREA_HOOK, NEED_NONE, http_hook_github},
    {"POST", "/hooks/gitlab", HTTP_AREA_HOOK, NEED_NONE, http_hook_gitlab},
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

static bool path_matches(const route *r, const char *path, const char **rest)
{
    size_t n = strlen(r->path);
    bool prefix = n > 1 && r->path[n - 1] == '/';
    if (prefix ? strncmp(path, r->path, n) != 0 || !path[n] : strcmp(path, r->path) != 0)
        return false;
    *rest = path + (prefix ? n : strlen(path));
    return true;
}

static bool method_matches(const route *r, const char *method)
{
    return strcmp(r->method, method) == 0 ||
           (strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* The route for the request; NULL with *path_known when only the method
 * is wrong (then *allow names the right one). */
static const route *find_route(const char *method, const char *path, const char **rest,
                               const char **allow)
{
    *allow = NULL;
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (!path_matches(&routes[i], path, rest))
            continue;
        if (method_matches(&routes[i], method))
            return &routes[i];
        *allow = *allow ? "GET, HEAD, POST" : strcmp(routes[i].method, "GET") == 0 ? "GET, HEAD"
                                                                                   : "POST";
    }
    return NULL;
}

static bool browser_area(http_area a)
{
    return a == HTTP_AREA_PAGE;
}

static bool authorised(cv_http *h, const route *r, const http_req *rq, http_resp *rs)
{
    if (!h->tokens || r->right == NEED_NONE)
        return true;
    cv_token_right got = cv_tokens_check(h->tokens, http_header(rq, "Authorization"));
    if (got == CV_TOKEN_NONE) {
        rs->html_auth = browser_area(r->area);
        http_error(rs, 401, CV_E_HTTP_UNAUTHORIZED, "this farm needs a token: send "
                   "'Authorization: Bearer TOKEN'");
        return false;
    }
    if (r->right == NEED_WRITE && got != CV_TOKEN_WRITE) {
        http_error(rs, 403, CV_E_HTTP_FORBIDDEN, "a read-only token cannot request builds");
        return false;
    }
    return true;
}

/* POST /api/v1/revisions from a browser: a form (or a fetch() without a
 * preflight) can send only the "simple" content types, and a browser
 * resends cached Basic credentials by itself.  A build request therefore
 * takes a Bearer token, which no form can attach, or a JSON body type,
 * which needs a CORS preflight this server never grants. */
static bool cross_site_safe(const http_req *rq)
{
    const char *auth = http_header(rq, "Authorization");
    const char *type = http_header(rq, "Content-Type");
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        return true;
    size_t n = strlen("application/json");
    return type && strncasecmp(type, "application/json", n) == 0 &&
           (type[n] == '\0' || type[n] == ';' || type[n] == ' ');
}

/* ------------------------------------------------------------- requests */

typedef struct conn_state {
    const route *route;
    const char *allow;
    const char *rest;
    char *path;               /* owned */
    const char *method;       /* MHD's, valid for the request */
    cv_sb body;               /* owned */
    uint64_t dropped;
    bool too_large;
    bool answered;            /* answered before its body (then closed) */
} conn_state;

const char *http_arg(const http_req *rq, const char *name)
{
    return mhd()->lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_header(const http_req *rq, const char *name)
{
    return mhd()->lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

static void count(cv_http *h, http_area a, int status)
{
    int cls = status / 100 - 1;
    if (cls >= 0 && cls < HTTP_STATUS_CLASSES)
        atomic_fetch_add_explicit(&h->counters.requests[a][cls], 1, memory_order_relaxed);
}

/* What is decided before the handler: the route, the token, the size and
 * the content type of a build request.  False when rs holds the answer. */
static bool gate(cv_http *h, conn_state *cs, const http_req *rq, http_resp *rs)
{
    const route *r = cs->route;
    if (!r && cs->allow) {
        rs->allow = cs->allow;
        http_error(rs, 405, CV_E_HTTP_METHOD_NOT_ALLOWED, "%s takes %s", cs->path, cs->allow);
        return false;
    }
    if (!r) {
        http_error(rs, 404, CV_E_HTTP_NOT_FOUND, "no page or resource at this path");
        return false;
    }
    if (!authorised(h, r, rq, rs))
        return false;
    if (cs->too_large) {
        if (r->area == HTTP_AREA_HOOK)
            atomic_fetch_add(&h->counters.hooks[r->fn == http_hook_github ? HOOK_GITHUB
                                                                           : HOOK_GITLAB]
                                               [HOOK_TOO_LARGE], 1);
        http_error(rs, 413, CV_E_HTTP_TOO_LARGE, "the body is larger than %d bytes",
                   CV_HTTP_BODY_MAX);
        return false;
    }
    if (r->fn == http_api_build && !cross_site_safe(rq)) {
        http_error(rs, 415, CV_E_HTTP_UNSUPPORTED_MEDIA_TYPE, "a build request takes 'Content-Type: "
                   "application/json' or 'Authorization: Bearer TOKEN' (a browser form "
                   "cannot send either)");
        return false;
    }
    return true;
}

static void dispatch(cv_http *h, conn_state *cs, struct MHD_Connection *c, http_resp *rs)
{
    http_req rq = {.conn = c, .method = cs->method, .path = cs->path, .rest = cs->rest,
                   .body = cv_sb_str(&cs->body), .body_len = cs->body.len,
                   .now_ms = http_now_ms(h)};
    const route *r = cs->route;
    if (!gate(h, cs, &rq, rs))
        return;
    pthread_mutex_lock(&h->mu);
    r->fn(h, &rq, rs);
    pthread_mutex_unlock(&h->mu);
    if (!rs->status)
        http_error(rs, 500, CV_E_HTTP_INTERNAL, "no answer");
}

static void add_common_headers(struct MHD_Response *resp, const http_resp *rs)
{
    mhd()->add_response_header(resp, "Content-Type", rs->type ? rs->type : "text/plain");
    mhd()->add_response_header(resp, "Cache-Control", "no-store");
    mhd()->add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (rs->type && strncmp(rs->type, "text/html", 9) == 0)
        mhd()->add_response_header(resp, "Content-Security-Policy",
                                   "default-src 'none'; style-src 'unsafe-inline'; "
                                   "img-src data:; form-action 'self'");
    if (rs->status == 401)
        mhd()->add_response_header(resp, "WWW-Authenticate", rs->html_auth
                                                                  ? "Basic realm=\"cuvil\""
                                                                  : "Bearer realm=\"cuvil\"");
    if (rs->allow)
        mhd()->add_response_header(resp, "Allow", rs->allow);
    if (rs->status == 503)
        mhd()->add_response_header(resp, "Retry-After", "1");
    if (rs->close)
        mhd()->add_response_header(resp, "Connection", "close");
}

static enum MHD_Result send_response(cv_http *h, conn_state *cs, struct MHD_Connection *c,
                                     http_resp *rs)
{
    size_t n = rs->body.len;
    char *buf = cv_sb_steal(&rs->body);   /* handed to MHD, which frees it */
    if (!buf && n == 0)
        buf = calloc(1, 1);
    struct MHD_Response *resp =
        buf ? mhd()->create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(buf);
        return MHD_NO;
    }
    add_common_headers(resp, rs);
    count(h, cs->route ? cs->route->area : HTTP_AREA_OTHER, rs->status);
    enum MHD_Result ok = mhd()->queue_response(c, (unsigned)rs->status, resp);
    mhd()->destroy_response(resp);
    return ok;
}

static conn_state *begin(const char *url, const char *method, struct MHD_Connection *c)
{
    conn_state *cs = calloc(1, sizeof *cs);
    if (!cs || !(cs->path = strdup(url))) {
        free(cs);
        return NULL;
    }
    cs->method = method;
    cs->route = find_route(method, cs->path, &cs->rest, &cs->allow);
    const char *cl = mhd()->lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > CV_HTTP_BODY_MAX)
        cs->too_large = true;
    return cs;
}

static bool authenticated(cv_http *h, struct MHD_Connection *c)
{
    return h->tokens && cv_tokens_check(h->tokens, mhd()->lookup_connection_value(
                                                       c, MHD_HEADER_KIND, "Authorization")) !=
                            CV_TOKEN_NONE;
}

/* Whether the client waits for 100 Continue before its body.  (One that
 * does not gets its refusal after the body, read and dropped up to
 * CV_NETGUARD_DROP_MAX: answered earlier, curl and others see a reset instead.) */
static bool early_body(struct MHD_Connection *c)
{
    uint64_t len;
    bool chunked;
    return cv_net_body_waits(c, &len, &chunked);
}

/* The head is complete: ambiguous framing (400) and a full server (503,
 * without a token) are answered at once and the connection closed; so is
 * a request the gate refuses whose client waits for 100 Continue before
 * its body (libmicrohttpd sends 100 Continue only when nothing is queued,
 * and reads no body then). */
static enum MHD_Result head(cv_http *h, conn_state *cs, struct MHD_Connection *c)
{
    http_resp rs = {.close = true};
    const char *bad = cv_net_framing_error(c);
    if (bad) {
        http_error(&rs, 400, CV_E_HTTP_BAD_FRAMING, "%s", bad);
    } else if (!cv_netguard_request(h->guard, c, authenticated(h, c))) {
        http_error(&rs, 503, CV_E_HTTP_BUSY, "too many connections without a token; retry, or "
                   "send 'Authorization: Bearer TOKEN'");
    } else if (early_body(c)) {
        http_req rq = {.conn = c, .method = cs->method, .path = cs->path, .rest = cs->rest,
                       .body = "", .now_ms = http_now_ms(h)};
        gate(h, cs, &rq, &rs);
    }
    if (!rs.status)
        return MHD_YES;
    cs->answered = true;
    enum MHD_Result ok = send_response(h, cs, c, &rs);
    cv_sb_free(&rs.body);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    cv_http *h = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        *con_cls = cs = begin(url, method, c);
        return cs ? head(h, cs, c) : MHD_NO;
    }
    if (cs->answered) {
        *upload_size = 0;   /* libmicrohttpd closes the connection after the answer */
        return MHD_YES;
    }
    if (*upload_size) {
        cv_netguard_body(h->guard, c, *upload_size);
        bool keep = cv_netguard_absorb(&cs->body, &cs->too_large, &cs->dropped, CV_HTTP_BODY_MAX,
                                       upload, *upload_size);
        *upload_size = 0;
        return keep ? MHD_YES : MHD_NO;
    }
    cv_netguard_answering(h->guard, c);
    http_resp rs = {0};
    dispatch(h, cs, c, &rs);
    enum MHD_Result ok = send_response(h, cs, c, &rs);
    cv_sb_free(&rs.body);
    return ok;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    cv_http *h = cls;
    conn_state *cs = *con_cls;
    if (!cs)
        return;
    cv_netguard_done(h->guard, c);
    cv_sb_free(&cs->body);
    free(cs->path);
    free(cs);
    *con_cls = NULL;
}

/* ---------------------------------------------------------------- life */

/* "host:port", "[v6]:port", ":port" (every address). */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, bool *v6, cv_diag *d)
{
    char why[512];
    if (cv_net_listen_addr(listen, ss, v6, why, sizeof why) == 0)
        return 0;
    cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "--http %s", why);
    return -1;
}

static int start_daemon(cv_http *h, const char *listen, const cv_netguard_opts *limits,
                        cv_diag *d)
{
    struct sockaddr_storage ss;
    bool v6 = false;
    if (parse_listen(listen, &ss, &v6, d) != 0)
        return -1;
    if (!h->tokens && !cv_net_is_loopback(&ss)) {
        cv_diag_add(d, CV_SEV_WARNING, CV_E_SERVER_OPEN_LISTEN, (cv_span){0}, NULL,
                    "the farm's HTTP server listens on %s, beyond loopback, without tokens "
                    "(--http-token-file): anyone who reaches it can read the farm and request "
                    "builds", listen);
        cv_log_warn("CV%04d: the farm's HTTP server listens on %s without tokens",
                    CV_E_SERVER_OPEN_LISTEN, listen);
    }
    if (cv_netguard_new(limits, CV_E_HTTP_START_FAILED, &h->guard, d) != 0)
        return -1;
    /* poll, not epoll: see cache/server.c start_daemon */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_TURBO |
                     MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    h->daemon = mhd()->start_daemon(
        flags, 0, cv_netguard_accept_cb, h->guard, on_request, h, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION,
        cv_netguard_notify_cb, h->guard, MHD_OPTION_CONNECTION_LIMIT,
        cv_netguard_mhd_limit(h->guard), MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
    if (!h->daemon) {
        cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "cannot listen on %s: %s", listen,
                      strerror(errno));
        return -1;
    }
    const union MHD_DaemonInfo *info = mhd()->get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    return 0;
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *p = s ? strdup(s) : NULL;
    if (s && !p)
        *oom = true;
    return p;
}

static int copy_opts(cv_http *h, const cv_http_opts *o, cv_diag *d)
{
    bool oom = false;
    h->state_dir = dup_or_null(o->state_dir, &oom);
    h->db_path = o->state_dir ? cv_fs_join(o->state_dir, "build.db") : NULL;
    h->trees_dir = o->state_dir ? cv_fs_join(o->state_dir, "trees") : NULL;
    h->ref = dup_or_null(o->ref ? o->ref : "main", &oom);
    h->secret = dup_or_null(o->webhook_secret, &oom);
    h->queue_url = dup_or_null(o->queue_url, &oom);
    h->cache_dir = dup_or_null(o->cache_dir, &oom);
    h->no_cache = o->no_cache;
    h->now_fn = o->now_ms;
    h->clock_ctx = o->clock_ctx;
    if (oom || !h->db_path || !h->trees_dir) {
        cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "%s",
                      o->state_dir ? "out of memory" : "the HTTP server needs a state directory");
        return -1;
    }
    if (h->secret && !*h->secret) {
        cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "the webhook secret is empty");
        return -1;
    }
    return 0;
}

int cv_http_start(const cv_http_opts *o, cv_http **out, cv_diag *d)
{
    *out = NULL;
    if (!cv_netlib_mhd(d))
        return -1;
    cv_http *h = calloc(1, sizeof *h);
    if (!h) {
        cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "out of memory");
        return -1;
    }
    pthread_mutex_init(&h->mu, NULL);
    int rc = copy_opts(h, o, d);
    if (rc == 0 && o->tokens_file)
        rc = cv_tokens_load(o->tokens_file, &h->tokens, d);
    if (rc == 0 && !(h->ms = http_metrics_new()))
        rc = -1, cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "out of memory");
    if (rc == 0 && cv_fs_mkdirs(h->state_dir, 0755) != 0)
        rc = -1, cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){.file = h->state_dir},
                               "cannot create the state directory");
    if (rc == 0)
        rc = cv_builddb_open(h->db_path, &h->db, d);
    if (rc == 0)
        rc = http_db_hooks_init(h->db, d);
    if (rc == 0)
        rc = start_daemon(h, o->listen ? o->listen : CV_HTTP_DEFAULT_LISTEN, o->limits, d);
    if (rc != 0) {
        cv_diag_error(d, CV_E_HTTP_START_FAILED, (cv_span){0}, "the HTTP server did not start");
        cv_http_stop(h);
        return -1;
    }
    *out = h;
    return 0;
}

int cv_http_port(const cv_http *h)
{
    return h ? h->port : 0;
}

void cv_http_stop(cv_http *h)
{
    if (!h)
        return;
    if (h->daemon)
        mhd()->stop_daemon(h->daemon);   /* joins the polling thread */
    cv_netguard_free(h->guard);
    if (h->secret)
        OPENSSL_cleanse(h->secret, strlen(h->secret));
    cv_tokens_free(h->tokens);
    http_metrics_free(h->ms);
    free(h->days_kept);
    cv_queue_close(h->q);
    cv_cache_close(h->cache);
    cv_builddb_close(h->db);
    pthread_mutex_destroy(&h->mu);
    free(h->state_dir);
    free(h->db_path);
    free(h->trees_dir);
    free(h->ref);
    free(h->secret);
    free(h->queue_url);
    free(h->cache_dir);
    free(h);
}
