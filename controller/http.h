/* The farm's HTTP face (controller/http/). */
#ifndef CV_CONTROLLER_HTTP_H
#define CV_CONTROLLER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "queue/queue.h"

/* The farm's HTTP face (controller/http/): a JSON API under /api/v1/
 * (schemas/api.yaml), a server-rendered dashboard (/, /revisions/REV,
 * /failures), Prometheus metrics (/metrics) and git webhooks
 * (/hooks/github, /hooks/gitlab).  It runs on libmicrohttpd's own thread
 * and reads the build DB through its own handle (WAL: the controller
 * writes meanwhile).  A webhook push for the tracked ref and
 * POST /api/v1/revisions leave a build request, which the controller's
 * next step handles (it polls the source at once).  Codes CV6130-CV6149. */
#define CV_HTTP_DEFAULT_LISTEN "127.0.0.1:8081"
#define CV_HTTP_BODY_MAX (1 << 20)   /* request bodies (webhook payloads) */

typedef struct cv_http cv_http;   /* opaque */

typedef struct cv_http_opts {
    const char *listen;          /* "host:port", "[v6]:port"; NULL = CV_HTTP_DEFAULT_LISTEN;
                                    port 0 = any free port (cv_http_port) */
    const char *state_dir;       /* the farm's: build.db, trees/ */
    const char *queue_url;       /* NULL = the controller's (from its heartbeat), else
                                    sqlite:STATE/queue.db; only sqlite: queues are read,
                                    other depths come from the build DB */
    const char *cache_dir;       /* NULL = the default cache ($CUVIL_CACHE_DIR or
                                    ~/.cache/cuvil) */
    bool no_cache;               /* report no cache figures */
    const char *ref;             /* the tracked ref, for webhooks; NULL = "main" */
    const char *tokens_file;     /* "TOKEN ro|rw" per line ('#' comments); ro reads, rw also
                                    builds; NULL = no authentication */
    const char *webhook_secret;  /* GitHub's HMAC key and GitLab's token; NULL = hooks 403 */
    cv_queue_clock_fn now_ms;    /* NULL = CLOCK_REALTIME */
    void *clock_ctx;             /* not owned */
    const struct cv_netguard_opts *limits;   /* connections and deadlines
                                                (common/netguard.h); NULL = its defaults */
} cv_http_opts;

int  cv_http_start(const cv_http_opts *o, cv_http **out, cv_diag *d);
int  cv_http_port(const cv_http *h);
/* Stops accepting, waits for requests under way and frees h (NULL: no-op). */
void cv_http_stop(cv_http *h);

#endif
