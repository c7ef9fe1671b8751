/* `cuvil cache serve`: the bazel-remote HTTP layout over libmicrohttpd.
 *
 *   GET/HEAD/PUT [/<instance>...]/cas/<sha256>   content-addressed; a PUT
 *                                                body must hash to its name
 *   GET/HEAD/PUT [/<instance>...]/ac/<sha256>    opaque entries (Bazel's
 *                                                ActionResult, ccache's own)
 *   GET /metrics (Prometheus text), GET /status (JSON)
 *
 * The store is a cas.c directory, raw by default.  Every GET checks the
 * entry's XXH3 (the clients verify SHA-256 themselves): a raw entry is
 * read through the page cache and then sent with sendfile, a large
 * compressed one is decompressed as it is sent (entry_response).  Index
 * updates (last use, sizes) are queued and written by one thread in
 * batches, which also enforces the size limit:
 * request threads never wait on SQLite.  Answers are queued only after the
 * whole request is read, so connections stay alive (MHD closes a
 * connection whose answer was queued early), except refusals of bodies
 * better not read (begin).  Connection limits, deadlines and the head's
 * framing check are common/netguard.c's, shared with the farm's server. */
#include "cache/cas.h"
#include "cache/index.h"
#include "cache/internal.h"
#include "common/log.h"
#include "common/netguard.h"
#include "common/netlib.h"
#include "cache/server_internal.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* DROP_MAX: the largest body of a refused upload that is read and dropped
 * so that the answer comes after it and the connection stays open (a larger
 * or unsized one is answered at once, and the connection closed); also how
 * far a chunked upload may run past the size limit before it is cut off
 * (libmicrohttpd 0.9.75 cannot send an answer in the middle of a body).
 * IDLE_TIMEOUT_S: libmicrohttpd's inactivity timeout
 * (a client that stops sending its body or reading its answer). */
enum { QUEUE_MAX = 200000, FLUSH_MS = 200, DROP_MAX = 8 << 20, IDLE_TIMEOUT_S = 30 };

/* libmicrohttpd, loaded by cv_cache_server_start before any other use. */
static const cv_mhd_fns *mhd(void)
{
    return cv_netlib_mhd(NULL);
}

struct cv_cache_server {
    struct MHD_Daemon *daemon;
    char *dir;                 /* owned */
    cv_cas *cas;               /* owned */
    cv_index *ix;              /* owned */
    cv_tokens *tokens;     /* owned; NULL = no authentication */
    cv_netguard *guard;        /* owned: connection limits and deadlines */
    uint64_t max_size, max_request;
    int port;
    int64_t started_us;
    atomic_int inflight;       /* requests begun and not yet completed */
    cv_srv_metrics m;
    /* index writer */
    pthread_t flusher;
    bool flusher_started, stopping;
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    cv_index_event *q;         /* owned */
    size_t qn, qcap;
};

typedef struct req {
    int64_t t0;
    cv_srv_kind kind;
    cv_srv_method method;
    cv_cas_kind cas_kind;
    cv_digest name;
    cv_cas_writer *w;          /* owned while a PUT body arrives */
    uint64_t dropped;          /* body bytes discarded */
    enum { ACT_TEXT, ACT_METRICS, ACT_STATUS, ACT_GET, ACT_HEAD, ACT_PUT } act;
    int defer_status;          /* ACT_TEXT: the answer decided early */
    const char *defer_text;
    bool expect_continue;      /* the client waits for 100 Continue before its body */
    int status;
    bool responded;
} req;

/* ------------------------------------------------------- index writer */

static void enqueue(cv_cache_server *s, cv_index_op op, cv_cas_kind kind, const cv_digest *name,
                    uint64_t stored)
{
    pthread_mutex_lock(&s->qmu);
    if (s->qn == s->qcap && s->qcap < QUEUE_MAX) {
        size_t cap = s->qcap ? s->qcap * 2 : 1024;
        cv_index_event *q = realloc(s->q, cap * sizeof *q);
        if (q) {
            s->q = q;
            s->qcap = cap;
        }
    }
    if (s->qn < s->qcap) /* else dropped: only LRU order suffers */
        s->q[s->qn++] = (cv_index_event){
            .op = op, .kind = kind, .name = *name, .stored = stored, .at_us = cv_cache_now_us()};
    pthread_mutex_unlock(&s->qmu);
}

static int cmp_event(const void *a, const void *b)
{
    const cv_index_event *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = memcmp(x->name.b, y->name.b, sizeof x->name.b);
    if (c)
        return c;
    return x->at_us < y->at_us ? -1 : x->at_us > y->at_us;
}

/* Folds runs of hits on one entry into one event (a busy server sees the
 * same entries again and again); other events keep their order per entry. */
static size_t fold_hits(cv_index_event *v, size_t n)
{
    if (n < 2)
        return n;
    qsort(v, n, sizeof *v, cmp_event);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        cv_index_event *last = out ? &v[out - 1] : NULL;
        if (last && last->op == CV_IDX_HIT && v[i].op == CV_IDX_HIT && last->kind == v[i].kind &&
            cv_cache_digest_eq(&last->name, &v[i].name)) {
            last->hits = (last->hits ? last->hits : 1) + 1;
            last->at_us = v[i].at_us;
            continue;
        }
        v[out++] = v[i];
    }
    return out;
}

static void flush_once(cv_cache_server *s, cv_index_event *batch, size_t n)
{
    n = fold_hits(batch, n);
    if (n)
        cv_cache_index_apply(s->ix, batch, (int)n, NULL, 0, NULL);
    uint64_t bytes[2], entries[2], evicted = 0;
    if (s->max_size && cv_cache_index_totals(s->ix, bytes, entries, NULL) == 0 &&
        bytes[0] + bytes[1] > s->max_size) {
        cv_cache_index_evict(s->ix, s->cas, s->max_size - s->max_size / 10, &evicted, NULL, NULL);
        atomic_fetch_add(&s->m.evictions, evicted);
    }
}

/* Writes the queued events every FLUSH_MS, and at once when stopping. */
static void *flusher_main(void *arg)
{
    cv_cache_server *s = arg;
    cv_index_event *batch = NULL; /* owned: swapped with the queue */
    size_t bcap = 0;
    pthread_mutex_lock(&s->qmu);
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += FLUSH_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (!s->stopping && pthread_cond_timedwait(&s->qcv, &s->qmu, &ts) != ETIMEDOUT)
            ;
        bool stop = s->stopping;
        cv_index_event *q = s->q;
        size_t n = s->qn, cap = s->qcap;
        s->q = batch;
        s->qcap = bcap;
        s->qn = 0;
        batch = q;
        bcap = cap;
        pthread_mutex_unlock(&s->qmu);
        flush_once(s, batch, n);
        if (stop)
            break;
        pthread_mutex_lock(&s->qmu);
    }
    free(batch);
    return NULL;
}

/* ------------------------------------------------------------ responses */

static enum MHD_Result respond(struct MHD_Connection *c, req *r, int status,
                               struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO;
    enum MHD_Result ok = mhd()->queue_response(c, (unsigned)status, resp);
    mhd()->destroy_response(resp);
    r->status = status;
    r->responded = true;
    return ok;
}

/* A plain-text answer; close: sent before the body was read (refused
 * uploads, bad framing, a full server), so the connection is closed after
 * it, since what follows on it is not a request head. */
static enum MHD_Result text_answer(struct MHD_Connection *c, req *r, int status,
                                   const char *text, bool close)
{
    struct MHD_Response *resp =
        mhd()->create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (resp) {
        mhd()->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        if (status == MHD_HTTP_UNAUTHORIZED)
            mhd()->add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                    "Bearer realm=\"cuvil-cache\"");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
            mhd()->add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD, PUT");
        if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
            mhd()->add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        if (close)
            mhd()->add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    return respond(c, r, status, resp);
}

static enum MHD_Result respond_text(struct MHD_Connection *c, req *r, int status,
                                    const char *text)
{
    return text_answer(c, r, status, text, false);
}

static enum MHD_Result respond_and_close(struct MHD_Connection *c, req *r, int status,
                                         const char *text)
{
    return text_answer(c, r, status, text, true);
}

static enum MHD_Result respond_sb(struct MHD_Connection *c, req *r, cv_sb *sb, const char *type)
{
    size_t n = sb->len;
    char *buf = cv_sb_steal(sb); /* handed to MHD, which frees it */
    struct MHD_Response *resp = buf ? mhd()->create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE)
                                    : NULL;
    if (!resp) {
        free(buf);
        return MHD_NO;
    }
    mhd()->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return respond(c, r, MHD_HTTP_OK, resp);
}

static void gauges(cv_cache_server *s, cv_srv_gauges *g)
{
    uint64_t bytes[2], entries[2];
    cv_cache_index_totals(s->ix, bytes, entries, NULL);
    *g = (cv_srv_gauges){bytes[0] + bytes[1], entries[0], entries[1], s->max_size,
                         (double)(cv_cache_mono_us() - s->started_us) / 1e6};
}

static enum MHD_Result serve_admin(cv_cache_server *s, struct MHD_Connection *c, req *r,
                                   bool metrics)
{
    cv_srv_gauges g;
    gauges(s, &g);
    cv_sb sb = CV_SB_INIT;
    if (metrics)
        cv_cache_srv_metrics_text(&s->m, &g, &sb);
    else
        cv_cache_srv_status_json(&s->m, &g, s->dir, &sb);
    enum MHD_Result ok =
        respond_sb(c, r, &sb, metrics ? "text/plain; version=0.0.4" : "application/json");
    cv_sb_free(&sb);
    return ok;
}

/* --------------------------------------------------------------- GET/HEAD */

/* Opens the entry and reads its header; a miss or a bad header is
 * answered (404) here. */
static int open_entry(cv_cache_server *s, struct MHD_Connection *c, req *r, cv_cas_entry *e,
                      enum MHD_Result *answer)
{
    int rc = cv_cache_cas_entry_open(s->cas, r->cas_kind, &r->name, e, NULL);
    if (rc == CV_CAS_FOUND)
        return rc;
    if (rc == CV_CAS_CORRUPT) {
        atomic_fetch_add(&s->m.corrupt, 1);
        enqueue(s, CV_IDX_REMOVE, r->cas_kind, &r->name, 0);
    }
    atomic_fetch_add(&s->m.misses[r->kind], 1);
    *answer = rc < 0 ? respond_text(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read entry\n")
                     : respond_text(c, r, MHD_HTTP_NOT_FOUND, "not found\n");
    return rc;
}

/* A compressed entry larger than this is decompressed as it is sent. */
#define STREAM_FROM ((uint64_t)1 << 20)

/* A compressed entry being sent: decoded a block at a time. */
typedef struct sender {
    cv_cache_server *s;
    cv_cas_stream *st;         /* owned */
    cv_cas_kind kind;
    cv_digest name;
} sender;

static ssize_t send_block(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;                 /* MHD asks in order */
    sender *x = cls;
    size_t got = 0;
    int rc = cv_cache_cas_stream_read(x->st, buf, max, &got, NULL);
    if (rc == CV_CAS_FOUND && got)
        return (ssize_t)got;
    if (rc == CV_CAS_CORRUPT) { /* the client gets a short body; the next GET a 404 */
        atomic_fetch_add(&x->s->m.corrupt, 1);
        enqueue(x->s, CV_IDX_REMOVE, x->kind, &x->name, 0);
    }
    return MHD_CONTENT_READER_END_WITH_ERROR; /* got 0: MHD stops at the length first */
}

static void send_done(void *cls)
{
    sender *x = cls;
    cv_cache_cas_stream_close(x->st);
    free(x);
}

/* Every GET checks the payload against its XXH3 before or as it is sent:
 * a file's identity says nothing of bits rotted in place.  A raw entry is
 * read once through the page cache, then sent from the file (sendfile); a
 * small compressed one is decoded into memory and checked; a large one is
 * decoded as it is sent, and a mismatch found at its end cuts the body
 * short (the client never receives the whole promised length). */
static struct MHD_Response *entry_response(cv_cache_server *s, req *r, cv_cas_entry *e, int *rc)
{
    if (e->raw_codec || e->paged) {
        *rc = cv_cache_cas_entry_check(e, NULL);
        if (*rc != CV_CAS_FOUND)
            return NULL;
        struct MHD_Response *resp =
            mhd()->create_response_from_fd_at_offset64(e->raw, e->fd, e->stored - e->raw);
        if (resp)
            e->fd = -1; /* MHD closes it */
        return resp;
    }
    if (e->raw > STREAM_FROM) {
        sender *x = calloc(1, sizeof *x);
        *rc = x && cv_cache_cas_stream_open(e, &x->st, NULL) == 0 ? CV_CAS_FOUND : -1;
        if (*rc != CV_CAS_FOUND) {
            free(x);
            return NULL;
        }
        *x = (sender){s, x->st, r->cas_kind, r->name};
        struct MHD_Response *resp =
            mhd()->create_response_from_callback(e->raw, 256 * 1024, send_block, x, send_done);
        if (!resp)
            send_done(x);
        return resp;
    }
    void *data = NULL;
    size_t len = 0;
    *rc = cv_cache_cas_entry_read(e, CV_CAS_VERIFY_FAST, STREAM_FROM, &data, &len, NULL);
    if (*rc != CV_CAS_FOUND)
        return NULL;
    struct MHD_Response *resp = mhd()->create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(data);
    return resp;
}

static enum MHD_Result serve_get(cv_cache_server *s, struct MHD_Connection *c, req *r)
{
    cv_cas_entry e;
    enum MHD_Result answer = MHD_NO;
    if (open_entry(s, c, r, &e, &answer) != CV_CAS_FOUND)
        return answer;
    int rc = CV_CAS_FOUND;
    struct MHD_Response *resp = entry_response(s, r, &e, &rc);
    cv_cache_cas_entry_close(&e);
    if (rc == CV_CAS_CORRUPT) {
        atomic_fetch_add(&s->m.corrupt, 1);
        atomic_fetch_add(&s->m.misses[r->kind], 1);
        enqueue(s, CV_IDX_REMOVE, r->cas_kind, &r->name, 0);
        return respond_text(c, r, MHD_HTTP_NOT_FOUND, "not found\n");
    }
    if (rc < 0)
        return respond_text(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read entry\n");
    if (!resp)
        return MHD_NO;
    mhd()->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    atomic_fetch_add(&s->m.hits[r->kind], 1);
    atomic_fetch_add(&s->m.bytes_out[r->kind], e.raw);
    enqueue(s, CV_IDX_HIT, r->cas_kind, &r->name, e.stored);
    return respond(c, r, MHD_HTTP_OK, resp);
}

static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls, (void)pos, (void)buf, (void)max;
    return MHD_CONTENT_READER_END_WITH_ERROR; /* never called for HEAD */
}

static enum MHD_Result serve_head(cv_cache_server *s, struct MHD_Connection *c, req *r)
{
    cv_cas_entry e;
    enum MHD_Result answer = MHD_NO;
    if (open_entry(s, c, r, &e, &answer) != CV_CAS_FOUND)
        return answer;
    cv_cache_cas_entry_close(&e);
    atomic_fetch_add(&s->m.hits[r->kind], 1);
    /* a sized callback response: Content-Length right, no body read */
    return respond(c, r, MHD_HTTP_OK,
                   mhd()->create_response_from_callback(e.raw, 4096, no_body, NULL, NULL));
}

/* -------------------------------------------------------------------- PUT */

/* Answers are queued once the whole request has been read: MHD closes
 * the connection when a response is queued before that, and keep-alive
 * matters (clients fetch many small entries). */
static void defer(req *r, int status, const char *text)
{
    r->act = ACT_TEXT;
    r->defer_status = status;
    r->defer_text = text;
}

static void begin_put(cv_cache_server *s, struct MHD_Connection *c, req *r)
{
    const char *cl = mhd()->lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > s->max_request) {
        defer(r, MHD_HTTP_CONTENT_TOO_LARGE, "entry too large\n");
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_cas_writer_open(s->cas, r->cas_kind, &r->w, &d);
    bool full = rc != 0 && d.n && d.v[0].code == CV_E_CACHE_DISK_FULL;
    cv_diag_free(&d);
    if (rc != 0)
        defer(r, full ? MHD_HTTP_INSUFFICIENT_STORAGE : MHD_HTTP_INTERNAL_SERVER_ERROR,
              "cannot store\n");
    else
        r->act = ACT_PUT;
}

/* A body that is not stored (refused, or past the limit) is read and
 * dropped, then answered at its end: answering early makes some clients
 * fail on a reset while they are still sending.  Refusals of bodies that
 * wait for 100 Continue, are over DROP_MAX or of unknown size were answered
 * before the body (begin); a chunked upload that runs past the limit by
 * DROP_MAX is cut off without an answer. */
static enum MHD_Result absorb(cv_cache_server *s, struct MHD_Connection *c, req *r,
                              const char *data, size_t n)
{
    if (r->responded)
        return MHD_YES;
    if (r->act == ACT_PUT && cv_cache_cas_writer_size(r->w) + n > s->max_request) {
        cv_cache_cas_writer_abort(r->w);
        r->w = NULL;
        defer(r, MHD_HTTP_CONTENT_TOO_LARGE, "entry too large\n");
    }
    if (r->act != ACT_PUT) {
        r->dropped += n;
        return r->dropped > DROP_MAX ? MHD_NO : MHD_YES;
    }
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_cas_writer_write(r->w, data, n, &d); /* frees w on failure */
    bool full = rc != 0 && d.n && d.v[0].code == CV_E_CACHE_DISK_FULL;
    cv_diag_free(&d);
    if (rc != 0) {
        r->w = NULL;
        defer(r, full ? MHD_HTTP_INSUFFICIENT_STORAGE : MHD_HTTP_INTERNAL_SERVER_ERROR,
              "cannot store\n");
        return MHD_YES;
    }
    atomic_fetch_add(&s->m.bytes_in[r->kind], n);
    return MHD_YES;
}

static enum MHD_Result finish_put(cv_cache_server *s, struct MHD_Connection *c, req *r)
{
    uint64_t stored = 0;
    cv_cas_writer *w = r->w;
    r->w = NULL; /* commit frees it */
    int rc = cv_cache_cas_writer_commit(w, &r->name, NULL, &stored, NULL);
    if (rc == CV_CAS_BAD_DIGEST) {
        atomic_fetch_add(&s->m.bad_digest, 1);
        return respond_text(c, r, MHD_HTTP_BAD_REQUEST, "content does not hash to its name\n");
    }
    if (rc != 0)
        return respond_text(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot store\n");
    enqueue(s, CV_IDX_PUT, r->cas_kind, &r->name, stored);
    return respond_text(c, r, MHD_HTTP_OK, "");
}

/* ------------------------------------------------------------- routing */

static cv_srv_method parse_method(const char *m)
{
    if (strcmp(m, MHD_HTTP_METHOD_GET) == 0)
        return SRV_GET;
    if (strcmp(m, MHD_HTTP_METHOD_HEAD) == 0)
        return SRV_HEAD;
    if (strcmp(m, MHD_HTTP_METHOD_PUT) == 0)
        return SRV_PUT;
    return SRV_METHOD_OTHER;
}

/* ".../cas/<64 hex>" or ".../ac/<64 hex>": any prefix is an instance name
 * and ignored (as bazel-remote does over HTTP). */
static bool parse_entry_url(const char *url, req *r)
{
    size_t n = strlen(url);
    if (n < CV_CACHE_HEX_LEN + 4 || n > 2048)
        return false;
    const char *hex = url + n - CV_CACHE_HEX_LEN;
    if (hex[-1] != '/' || cv_cache_digest_parse(hex, &r->name) != 0)
        return false;
    if (hex - url >= 5 && strncmp(hex - 5, "/cas/", 5) == 0) {
        r->kind = SRV_CAS;
        r->cas_kind = CV_CAS_BLOB;
        return true;
    }
    if (hex - url >= 4 && strncmp(hex - 4, "/ac/", 4) == 0) {
        r->kind = SRV_AC;
        r->cas_kind = CV_CAS_AC;
        return true;
    }
    return false;
}

/* The rights the request's token grants (all when there are no tokens). */
static cv_token_right rights(cv_cache_server *s, struct MHD_Connection *c)
{
    if (!s->tokens)
        return CV_TOKEN_WRITE;
    const char *auth = mhd()->lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    return cv_tokens_check(s->tokens, auth);
}

/* Decides what the request gets, from its line and headers. */
static void prepare(cv_cache_server *s, struct MHD_Connection *c, req *r, const char *url)
{
    bool metrics = strcmp(url, "/metrics") == 0, status = strcmp(url, "/status") == 0;
    bool read = r->method == SRV_GET || r->method == SRV_HEAD;
    r->kind = metrics || status ? SRV_ADMIN : SRV_OTHER;
    if ((metrics || status) && read && rights(s, c) == CV_TOKEN_NONE) {
        defer(r, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
    } else if ((metrics || status) && read) {
        r->act = metrics ? ACT_METRICS : ACT_STATUS;
    } else if (metrics || status) {
        defer(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    } else if (!parse_entry_url(url, r)) {
        defer(r, MHD_HTTP_NOT_FOUND, "no such resource\n");
    } else if (r->method == SRV_METHOD_OTHER) {
        defer(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    } else {
        cv_token_right right = rights(s, c);
        if (right == CV_TOKEN_NONE)
            defer(r, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
        else if (!read && right != CV_TOKEN_WRITE)
            defer(r, MHD_HTTP_FORBIDDEN, "read-only token\n");
        else if (read)
            r->act = r->method == SRV_GET ? ACT_GET : ACT_HEAD;
        else
            begin_put(s, c, r);
    }
}

static enum MHD_Result answer(cv_cache_server *s, struct MHD_Connection *c, req *r)
{
    if (r->responded)
        return MHD_YES;
    cv_netguard_answering(s->guard, c);
    switch (r->act) {
    case ACT_METRICS:
    case ACT_STATUS:
        return serve_admin(s, c, r, r->act == ACT_METRICS);
    case ACT_GET:
        return serve_get(s, c, r);
    case ACT_HEAD:
        return serve_head(s, c, r);
    case ACT_PUT:
        return finish_put(s, c, r);
    default:
        return respond_text(c, r, r->defer_status, r->defer_text);
    }
}

/* Whether the request carries a valid token (no tokens: nobody does). */
static bool authenticated(cv_cache_server *s, struct MHD_Connection *c)
{
    return s->tokens && rights(s, c) != CV_TOKEN_NONE;
}

/* Whether a refused request's body is better not read: its client waits
 * for 100 Continue, or it is over DROP_MAX, or of unknown size (chunked). */
static bool refuse_before_body(struct MHD_Connection *c)
{
    uint64_t len;
    bool chunked;
    bool waits = cv_net_body_waits(c, &len, &chunked);
    return waits || chunked || len > DROP_MAX;
}

/* The head is complete: ambiguous framing is refused (400), a full server
 * refuses requests without a token (503), and a refused upload whose body
 * is better not read is answered now: libmicrohttpd then sends no 100
 * Continue (only when no answer is queued by the first call). */
static enum MHD_Result begin(cv_cache_server *s, struct MHD_Connection *c, req *r,
                             const char *url)
{
    const char *bad = cv_net_framing_error(c);
    if (bad) {
        cv_log_info("cache serve: refused a request: %s", bad);
        return respond_and_close(c, r, MHD_HTTP_BAD_REQUEST, "bad request framing\n");
    }
    if (!cv_netguard_request(s->guard, c, authenticated(s, c)))
        return respond_and_close(c, r, MHD_HTTP_SERVICE_UNAVAILABLE,
                                 "too many connections without a token\n");
    prepare(s, c, r, url);
    if (r->act == ACT_TEXT && refuse_before_body(c))
        return respond_and_close(c, r, r->defer_status, r->defer_text);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    cv_cache_server *s = cls;
    req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->t0 = cv_cache_mono_us();
        r->method = parse_method(method);
        *con_cls = r;
        atomic_fetch_add(&s->inflight, 1);
        return begin(s, c, r, url);
    }
    if (*upload_size) {
        cv_netguard_body(s->guard, c, *upload_size);
        enum MHD_Result ok = absorb(s, c, r, upload, *upload_size);
        *upload_size = 0;
        return ok;
    }
    return answer(s, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    cv_cache_server *s = cls;
    req *r = *con_cls;
    if (!r)
        return;
    cv_cache_srv_metrics_record(&s->m, r->kind, r->method, r->responded ? r->status : 0,
                                cv_cache_mono_us() - r->t0);
    cv_cache_cas_writer_abort(r->w); /* a PUT cut short */
    cv_netguard_done(s->guard, c);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&s->inflight, 1);
}

/* ------------------------------------------------------------- life */

/* "host:port", "[v6]:port", ":port"; port 0 = any free port. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, bool *v6, cv_diag *d)
{
    char why[512];
    if (cv_net_listen_addr(listen, ss, v6, why, sizeof why) == 0)
        return 0;
    return cv_cache_err(d, CV_E_CACHE_BAD_URL, "listen address %s", why);
}

static int start_daemon(cv_cache_server *s, const cv_cache_server_options *o, cv_diag *d)
{
    struct sockaddr_storage ss;
    bool v6 = false;
    if (parse_listen(o->listen, &ss, &v6, d) != 0)
        return -1;
    if (!s->tokens && !cv_net_is_loopback(&ss)) {
        cv_diag_add(d, CV_SEV_WARNING, CV_E_SERVER_OPEN_LISTEN, (cv_span){0},
                    NULL, "cache serve listens on %s, beyond loopback, without tokens (--tokens): "
                    "anyone who reaches it can read and write the cache", o->listen);
        /* (printed at once by `cuvil cache serve`, with the start's other diagnostics) */
    }
    if (cv_netguard_new(o->limits, CV_E_CACHE_SERVER_ERROR, &s->guard, d) != 0)
        return -1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = (unsigned)(o->threads > 0 ? o->threads : cpus > 0 ? cpus : 1);
    /* poll, not epoll: libmicrohttpd 0.9.75's edge-triggered epoll misses a
     * client's end of input that arrives with its request (~10 % over
     * loopback), keeping the connection for the whole timeout. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_TURBO |
                     MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    s->daemon = mhd()->start_daemon(
        flags, 0, cv_netguard_accept_cb, s->guard, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 0u, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_NOTIFY_CONNECTION, cv_netguard_notify_cb, s->guard,
        MHD_OPTION_CONNECTION_LIMIT, cv_netguard_mhd_limit(s->guard),
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
    if (!s->daemon)
        return cv_cache_err(d, CV_E_CACHE_SERVER_ERROR, "cannot listen on %s: %s", o->listen,
                            strerror(errno));
    const union MHD_DaemonInfo *info = mhd()->get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return 0;
}

int cv_cache_server_start(const cv_cache_server_options *o, cv_cache_server **out, cv_diag *d)
{
    *out = NULL;
    if (!cv_netlib_mhd(d))
        return -1;
    cv_cache_server *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(o->dir ? o->dir : ""))) {
        free(s);
        return cv_cache_err(d, CV_E_OUT_OF_MEMORY, "out of memory starting the cache server");
    }
    pthread_mutex_init(&s->qmu, NULL);
    pthread_cond_init(&s->qcv, NULL);
    s->max_size = o->max_size;
    s->max_request = o->max_request ? o->max_request : (uint64_t)1 << 30;
    s->started_us = cv_cache_mono_us();
    int rc = cv_cache_cas_open(s->dir, o->zstd_level, &s->cas, d);
    if (rc == 0)
        rc = cv_cache_index_open(s->dir, &s->ix, d);
    if (rc == 0 && o->tokens_file)
        rc = cv_tokens_load(o->tokens_file, &s->tokens, d);
    if (rc == 0) {
        rc = pthread_create(&s->flusher, NULL, flusher_main, s) == 0
                 ? 0
                 : cv_cache_err(d, CV_E_CACHE_SERVER_ERROR, "cannot start the index thread");
        s->flusher_started = rc == 0;
    }
    if (rc == 0)
        rc = start_daemon(s, o, d);
    if (rc != 0) {
        cv_cache_server_stop(s, 0);
        return -1;
    }
    cv_cache_cas_clean_tmp(s->cas, 3600);
    *out = s;
    return 0;
}

struct MHD_Daemon *cv_cache_srv_daemon(const cv_cache_server *s)
{
    return s->daemon;
}

int cv_cache_server_port(const cv_cache_server *s)
{
    return s->port;
}

void cv_cache_server_stop(cv_cache_server *s, int grace_ms)
{
    if (!s)
        return;
    if (s->daemon) {
        /* No new connections; requests under way may finish (idle
         * keep-alive connections are not waited for). */
        MHD_socket lfd = mhd()->quiesce_daemon(s->daemon);
        for (int waited = 0; waited < grace_ms && atomic_load(&s->inflight) > 0; waited += 10) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        mhd()->stop_daemon(s->daemon);
        if (lfd != MHD_INVALID_SOCKET)
            close(lfd);
    }
    if (s->flusher_started) {
        pthread_mutex_lock(&s->qmu);
        s->stopping = true;
        pthread_cond_signal(&s->qcv);
        pthread_mutex_unlock(&s->qmu);
        pthread_join(s->flusher, NULL); /* writes what is queued */
    }
    free(s->q);
    cv_netguard_free(s->guard);
    cv_tokens_free(s->tokens);
    cv_cache_index_close(s->ix);
    cv_cache_cas_close(s->cas);
    pthread_cond_destroy(&s->qcv);
    pthread_mutex_destroy(&s->qmu);
    free(s->dir);
    free(s);
}
