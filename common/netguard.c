/* Connection limits and deadlines for the HTTP servers (see netguard.h). */
#include "common/netguard.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

typedef enum { ST_HEAD, ST_BODY, ST_ANSWER } slot_state;

typedef struct slot {
    struct slot *prev, *next;
    int fd;
    struct sockaddr_storage addr;
    int64_t since_ms;       /* ST_HEAD: waiting since; ST_BODY: the head's arrival */
    uint64_t body_bytes;
    slot_state st;
    bool authed;            /* a request on it carried a valid token */
    bool closing;           /* shut down by the guard; no longer counted */
} slot;

struct cv_netguard {
    cv_netguard_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, stop;
    slot *slots;            /* every open connection, newest first */
    unsigned n, n_anon;     /* counted (not closing) connections; those without a token */
    uint64_t evicted, head_timeouts, slow_bodies, refused, busy;
};

static const cv_mhd_fns *mhd(void)
{
    return cv_netlib_mhd(NULL);   /* loaded by the server before its daemon starts */
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b)
{
    if (a->ss_family != b->sa_family)
        return false;
    if (b->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (b->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return true;   /* other families (a fuzzer's socketpair): one client */
}

static unsigned share(const cv_netguard *g)
{
    return g->o.max_conns - g->o.reserve;
}

static unsigned anon_from(const cv_netguard *g, const struct sockaddr *addr)
{
    unsigned n = 0;
    for (const slot *s = g->slots; s; s = s->next)
        n += !s->closing && !s->authed && same_addr(&s->addr, addr);
    return n;
}

/* With g->mu held: the descriptor is still the connection's (it is closed
 * only after NOTIFY_CONNECTION reports it closed, which takes the lock). */
static void close_slot(cv_netguard *g, slot *s)
{
    shutdown(s->fd, SHUT_RDWR);
    s->closing = true;
    g->n--;
    if (!s->authed)
        g->n_anon--;
}

/* Closes the oldest idle connection without a token (from addr when not
 * NULL): true when there was one. */
static bool evict_oldest(cv_netguard *g, const struct sockaddr *addr)
{
    slot *victim = NULL;
    for (slot *s = g->slots; s; s = s->next)
        if (!s->closing && !s->authed && s->st == ST_HEAD &&
            (!addr || same_addr(&s->addr, addr)) && (!victim || s->since_ms <= victim->since_ms))
            victim = s;
    if (!victim)
        return false;
    close_slot(g, victim);
    g->evicted++;
    return true;
}

enum MHD_Result cv_netguard_accept_cb(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)len;
    cv_netguard *g = cls;
    pthread_mutex_lock(&g->mu);
    if (anon_from(g, addr) >= g->o.per_client)
        evict_oldest(g, addr);
    if (g->n_anon >= share(g))
        evict_oldest(g, NULL);
    bool ok = g->n < g->o.max_conns || evict_oldest(g, NULL);
    if (!ok)
        g->refused++;
    pthread_mutex_unlock(&g->mu);
    return ok ? MHD_YES : MHD_NO;
}

static slot *slot_new(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *fd = mhd()->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ad = mhd()->get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    slot *s = fd ? calloc(1, sizeof *s) : NULL;
    if (!s)
        return NULL;
    s->fd = fd->connect_fd;
    if (ad && ad->client_addr) {
        sa_family_t fam = ad->client_addr->sa_family;
        size_t n = fam == AF_INET ? sizeof(struct sockaddr_in)
                   : fam == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr);
        memcpy(&s->addr, ad->client_addr, n);
    }
    s->since_ms = cv_clock_mono_ms();
    return s;
}

void cv_netguard_notify_cb(void *cls, struct MHD_Connection *c, void **socket_ctx,
                           enum MHD_ConnectionNotificationCode what)
{
    cv_netguard *g = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        slot *s = slot_new(c);
        *socket_ctx = s;
        if (!s)
            return;   /* not tracked: only its limits are lost */
        pthread_mutex_lock(&g->mu);
        s->next = g->slots;
        if (g->slots)
            g->slots->prev = s;
        g->slots = s;
        g->n++;
        g->n_anon++;
        pthread_mutex_unlock(&g->mu);
        return;
    }
    slot *s = *socket_ctx;
    if (!s)
        return;
    pthread_mutex_lock(&g->mu);
    if (!s->closing) {
        g->n--;
        if (!s->authed)
            g->n_anon--;
    }
    if (s->prev)
        s->prev->next = s->next;
    else
        g->slots = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&g->mu);
    free(s);
    *socket_ctx = NULL;
}

static slot *slot_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = mhd()->get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

bool cv_netguard_request(cv_netguard *g, struct MHD_Connection *c, bool authenticated)
{
    slot *s = g ? slot_of(c) : NULL;
    if (!s)
        return true;
    pthread_mutex_lock(&g->mu);
    if (authenticated && !s->authed && !s->closing)
        g->n_anon--;
    s->authed = s->authed || authenticated;
    s->st = ST_BODY;
    s->since_ms = cv_clock_mono_ms();
    s->body_bytes = 0;
    bool ok = s->authed || (g->n_anon <= share(g) &&
                            anon_from(g, (const struct sockaddr *)&s->addr) <= g->o.per_client);
    if (!ok)
        g->busy++;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static void set_state(cv_netguard *g, struct MHD_Connection *c, slot_state st, size_t body)
{
    slot *s = g ? slot_of(c) : NULL;
    if (!s)
        return;
    pthread_mutex_lock(&g->mu);
    s->body_bytes += body;
    if (s->st != st) {
        s->st = st;
        if (st == ST_HEAD)
            s->since_ms = cv_clock_mono_ms();
    }
    pthread_mutex_unlock(&g->mu);
}

void cv_netguard_body(cv_netguard *g, struct MHD_Connection *c, size_t n)
{
    set_state(g, c, ST_BODY, n);
}

void cv_netguard_answering(cv_netguard *g, struct MHD_Connection *c)
{
    set_state(g, c, ST_ANSWER, 0);
}

void cv_netguard_done(cv_netguard *g, struct MHD_Connection *c)
{
    set_state(g, c, ST_HEAD, 0);
}

/* ------------------------------------------------------------ deadlines */

static void sweep(cv_netguard *g)
{
    int64_t now = cv_clock_mono_ms();
    for (slot *s = g->slots; s; s = s->next) {
        if (s->closing)
            continue;
        int64_t age = now - s->since_ms;
        if (s->st == ST_HEAD && age > (int64_t)g->o.head_timeout_ms) {
            close_slot(g, s);
            g->head_timeouts++;
        } else if (s->st == ST_BODY && age > (int64_t)g->o.body_grace_ms &&
                   s->body_bytes * 1000 < (uint64_t)age * g->o.body_min_rate) {
            close_slot(g, s);
            g->slow_bodies++;
        }
    }
}

static void *guard_main(void *arg)
{
    cv_netguard *g = arg;
    unsigned period = g->o.head_timeout_ms / 4;
    period = period > 250 ? 250 : period < 10 ? 10 : period;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)period * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        if (!g->stop)
            sweep(g);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int cv_netguard_new(const cv_netguard_opts *o, int code, cv_netguard **out, cv_diag *d)
{
    *out = NULL;
    cv_netguard *g = calloc(1, sizeof *g);
    if (!g) {
        cv_diag_error(d, code, (cv_span){0}, "out of memory");
        return -1;
    }
    g->o = o ? *o : (cv_netguard_opts){0};
    if (!g->o.max_conns)
        g->o.max_conns = CV_NETGUARD_MAX_CONNS;
    if (!g->o.reserve || g->o.reserve >= g->o.max_conns)
        g->o.reserve = g->o.max_conns / 10;
    if (!g->o.per_client)
        g->o.per_client = CV_NETGUARD_PER_CLIENT;
    if (!g->o.head_timeout_ms)
        g->o.head_timeout_ms = CV_NETGUARD_HEAD_TIMEOUT_MS;
    if (!g->o.body_grace_ms)
        g->o.body_grace_ms = CV_NETGUARD_BODY_GRACE_MS;
    if (!g->o.body_min_rate)
        g->o.body_min_rate = CV_NETGUARD_BODY_MIN_RATE;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        cv_diag_error(d, code, (cv_span){0}, "cannot start the connection guard: %s",
                      strerror(errno));
        cv_netguard_free(g);
        return -1;
    }
    g->started = true;
    *out = g;
    return 0;
}

void cv_netguard_free(cv_netguard *g)
{
    if (!g)
        return;
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
    }
    while (g->slots) {   /* none once the daemon has stopped; kept safe */
        slot *s = g->slots;
        g->slots = s->next;
        free(s);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

unsigned cv_netguard_mhd_limit(const cv_netguard *g)
{
    return g->o.max_conns + g->o.max_conns / 4 + 16;
}

void cv_netguard_get_stats(cv_netguard *g, cv_netguard_stats *st)
{
    pthread_mutex_lock(&g->mu);
    *st = (cv_netguard_stats){g->n, g->n_anon, g->evicted, g->head_timeouts, g->slow_bodies,
                              g->refused, g->busy};
    pthread_mutex_unlock(&g->mu);
}

/* ---------------------------------------------------------- addresses */

bool cv_net_is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            return a->s6_addr[12] == 127;
        return IN6_IS_ADDR_LOOPBACK(a);
    }
    return false;
}

/* ------------------------------------------------------------ framing */

bool cv_net_body_waits(struct MHD_Connection *c, uint64_t *length, bool *chunked)
{
    const char *cl = mhd()->lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *e = mhd()->lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    *length = cl ? strtoull(cl, NULL, 10) : 0;
    *chunked = mhd()->lookup_connection_value(c, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
    return (*length || *chunked) && e && strcasecmp(e, "100-continue") == 0;
}

typedef struct framing {
    int content_length, transfer_encoding;
    const char *te;
    const char *error;
} framing;

static bool is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool host_char(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch && strchr("-._~:[]%!$&'()*+,;=", ch));
}

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    framing *f = cls;
    if (!key || !*key)
        f->error = "a header without a name";
    for (const unsigned char *p = (const unsigned char *)key; !f->error && *p; p++)
        if (!is_tchar(*p))
            f->error = "a header name with a character that is not a token "
                       "(a folded or bare-CR line?)";
    for (const unsigned char *p = (const unsigned char *)(value ? value : ""); !f->error && *p;
         p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            f->error = "a control character in a header value";
    if (f->error)
        return MHD_NO;
    /* libmicrohttpd 0.9.75 joins an obs-fold line to the header's name
     * ("Content-Length: 3\r\n 5" becomes "Content-Length5: 3"): that is
     * undetectable in general, but not on the headers that frame a request */
    static const char *const framing_names[] = {"Content-Length", "Transfer-Encoding", "Host"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(framing_names[i]);
        if (strncasecmp(key, framing_names[i], n) == 0 && key[n]) {
            f->error = "a framing header's name runs on (a folded line?)";
            return MHD_NO;
        }
    }
    if (strcasecmp(key, "Content-Length") == 0)
        f->content_length++;
    if (strcasecmp(key, "Transfer-Encoding") == 0) {
        f->transfer_encoding++;
        f->te = value;
    }
    if (strcasecmp(key, "Host") == 0)
        for (const unsigned char *p = (const unsigned char *)(value ? value : ""); *p; p++)
            if (!host_char(*p)) {
                f->error = "a Host header that is not a host name";
                return MHD_NO;
            }
    return MHD_YES;
}

const char *cv_net_framing_error(struct MHD_Connection *c)
{
    framing f = {0};
    mhd()->get_connection_values(c, MHD_HEADER_KIND, check_header, &f);
    if (f.error)
        return f.error;
    if (f.content_length > 1)
        return "more than one Content-Length header";
    if (f.transfer_encoding > 1)
        return "more than one Transfer-Encoding header";
    if (f.transfer_encoding && f.content_length)
        return "both Content-Length and Transfer-Encoding";
    if (f.transfer_encoding && strcasecmp(f.te ? f.te : "", "chunked") != 0)
        return "a Transfer-Encoding other than chunked";
    return NULL;
}

bool cv_netguard_absorb(cv_sb *body, bool *too_large, uint64_t *dropped, uint64_t max,
                        const char *data, size_t n)
{
    if (!*too_large && body->len + n > max) {
        *too_large = true;
        cv_sb_free(body);
    }
    if (*too_large) {
        *dropped += n;
        return *dropped <= CV_NETGUARD_DROP_MAX;
    }
    cv_sb_add(body, data, n);
    return !body->oom;
}
