/* Connection limits for the two HTTP servers (cache/server.c and
 * controller/http/server.c), both on libmicrohttpd (netlib.h).
 *
 * Without them one client holding about 1,020 idle sockets (libmicrohttpd's
 * default limit) locks every other client out.  The guard keeps a table of
 * open connections and
 *   - caps them in all (max_conns); when full, or when one client address
 *     holds per_client connections without a valid token, the oldest idle
 *     connection without a token (of that address first) is closed to make
 *     room, and a new connection is refused only when none is idle;
 *   - keeps a reserve: a request without a valid token is answered 503
 *     while the connections without one number more than max_conns -
 *     reserve (or its address holds more than per_client), so a request
 *     carrying a token is served even when the unauthenticated share is
 *     full;
 *   - closes a connection whose request head is not complete head_timeout_ms
 *     after it was opened (or after its last answer): a slow or silent head,
 *     whatever it trickles;
 *   - closes a connection whose body arrives slower than body_min_rate bytes
 *     a second on average, once body_grace_ms have passed.
 * libmicrohttpd's own inactivity timeout (idle_timeout_s, given to it by
 * cv_netguard_mhd_options' caller) still covers a client that stops reading
 * an answer.  A thread checks the deadlines every head_timeout_ms / 4 (at
 * most 250 ms).
 *
 * Connections are closed with shutdown(2) from that thread or from the
 * accepting one, with the table's lock held: libmicrohttpd reports a
 * connection closed (NOTIFY_CONNECTION) before it closes the descriptor, so
 * a descriptor in the table is never another connection's. */
#ifndef CV_COMMON_NETGUARD_H
#define CV_COMMON_NETGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/diag.h"
#include "common/netlib.h"
#include "common/strbuf.h"

typedef struct cv_netguard_opts {
    unsigned max_conns;        /* 0 = CV_NETGUARD_MAX_CONNS */
    unsigned reserve;          /* 0 = max_conns / 10; kept for requests with a token */
    unsigned per_client;       /* 0 = CV_NETGUARD_PER_CLIENT; connections without a token */
    unsigned head_timeout_ms;  /* 0 = CV_NETGUARD_HEAD_TIMEOUT_MS */
    unsigned body_grace_ms;    /* 0 = CV_NETGUARD_BODY_GRACE_MS */
    unsigned body_min_rate;    /* bytes/s; 0 = CV_NETGUARD_BODY_MIN_RATE */
} cv_netguard_opts;

#define CV_NETGUARD_MAX_CONNS 1000
#define CV_NETGUARD_PER_CLIENT 64
#define CV_NETGUARD_HEAD_TIMEOUT_MS 10000
#define CV_NETGUARD_BODY_GRACE_MS 10000
#define CV_NETGUARD_BODY_MIN_RATE 4096

typedef struct cv_netguard_stats {
    uint64_t open, unauthenticated;          /* now */
    uint64_t evicted, head_timeouts, slow_bodies, refused, busy;   /* since start */
} cv_netguard_stats;

typedef struct cv_netguard cv_netguard;

/* Starts the deadline thread: 0, or -1 with code in d. */
int cv_netguard_new(const cv_netguard_opts *o, int code, cv_netguard **out, cv_diag *d);
/* After the daemon is stopped (no callback runs any more). */
void cv_netguard_free(cv_netguard *g);

/* The libmicrohttpd hooks, given to MHD_start_daemon with g as their
 * closure: MHD_OPTION_ACCEPT_POLICY and MHD_OPTION_NOTIFY_CONNECTION. */
enum MHD_Result cv_netguard_accept_cb(void *g, const struct sockaddr *addr, socklen_t len);
void cv_netguard_notify_cb(void *g, struct MHD_Connection *c, void **socket_ctx,
                           enum MHD_ConnectionNotificationCode what);
/* The limit to give libmicrohttpd (MHD_OPTION_CONNECTION_LIMIT): above
 * max_conns, since closed connections leave its table a moment later. */
unsigned cv_netguard_mhd_limit(const cv_netguard *g);

/* A request's head is complete: false when it must be answered 503 (no
 * valid token while the unauthenticated share or its address's is full).
 * A connection with a valid token keeps that mark for its later requests. */
bool cv_netguard_request(cv_netguard *g, struct MHD_Connection *c, bool authenticated);
/* n more body bytes arrived. */
void cv_netguard_body(cv_netguard *g, struct MHD_Connection *c, size_t n);
/* The body is complete (the answer is being made): no rate check. */
void cv_netguard_answering(cv_netguard *g, struct MHD_Connection *c);
/* The request is over (NOTIFY_COMPLETED): the connection waits for its next
 * head, with a fresh deadline. */
void cv_netguard_done(cv_netguard *g, struct MHD_Connection *c);

/* A request body, kept up to max bytes; past it the body is freed and the
 * rest read and dropped (*too_large: the answer is 413 once it is read),
 * until CV_NETGUARD_DROP_MAX bytes were dropped.  false: cut the client
 * off (it kept sending far past the limit, or memory ran out). */
#define CV_NETGUARD_DROP_MAX (8u << 20)
bool cv_netguard_absorb(cv_sb *body, bool *too_large, uint64_t *dropped, uint64_t max,
                        const char *data, size_t n);

void cv_netguard_get_stats(cv_netguard *g, cv_netguard_stats *st);

/* Whether a listening address is loopback only (127.0.0.0/8, ::1). */
bool cv_net_is_loopback(const struct sockaddr_storage *ss);

/* The body the head announces: its Content-Length (0 when none) and
 * whether it is chunked; true when there is one and the client waits for
 * 100 Continue before sending it. */
bool cv_net_body_waits(struct MHD_Connection *c, uint64_t *length, bool *chunked);

/* The request head's framing, checked beyond what libmicrohttpd 0.9.75
 * checks (it takes the first of two Content-Length headers, reads a body
 * with both Content-Length and Transfer-Encoding by the length, treats any
 * Transfer-Encoding as chunked, and folds obs-fold and bare-CR lines into
 * a neighbour header).  NULL when the head is unambiguous, else why not
 * (a static string) — answer 400 and close. */
const char *cv_net_framing_error(struct MHD_Connection *c);

#endif
