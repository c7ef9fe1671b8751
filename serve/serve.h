/* cuvil serve: an inference server for compiled artifacts, speaking the Open
 * Inference Protocol (v2, the KServe/Triton REST protocol) over HTTP/JSON
 * with the binary tensor extension.  docs/serve.md has the endpoints, the
 * model repository layout and the limits.
 *
 * Life of a request:
 *
 *   connection thread (libmicrohttpd, one per connection)
 *     head ──► body (up to max_body) ──► decode (serve/infer_json.c:
 *     JSON or binary tensors, checked against the model's signature)
 *     ──► enqueue on the model (bounded: full = 429) ──► wait ──► encode
 *   instance thread (serve/batcher.c, `instances` per model, each with its
 *   own loaded artifact)
 *     take the oldest request; merge later ones of the same shape up to
 *     max_batch_size or until max_queue_delay_us after the oldest arrived;
 *     run once; split the outputs back; wake each request's thread.
 *
 * Stopping (SIGTERM in `cuvil serve`): the listening socket is closed, new
 * requests on open connections get 503, requests already taken finish
 * (up to drain_ms), then the threads are joined. */
#ifndef CV_SERVE_H
#define CV_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/diag.h"

#define CV_SERVE_DEFAULT_LISTEN "127.0.0.1:8000"
#define CV_SERVE_MAX_BODY (64u << 20)      /* default request body limit */
#define CV_SERVE_MAX_HEADER (16u << 10)    /* default request head limit */
#define CV_SERVE_MAX_TENSOR (64u << 20)    /* default bytes per tensor */
#define CV_SERVE_MAX_CONNS 256u

typedef struct cv_serve_opts {
    const char *model_repository;   /* DIR/NAME/config.yaml, DIR/NAME/<version>/manifest.json */
    const char *listen;             /* "host:port" (port 0: any); NULL: CV_SERVE_DEFAULT_LISTEN */
    int threads;                    /* runtime threads per model instance; 0: 1 */
    uint64_t max_body, max_header, max_tensor;   /* bytes; 0: the defaults above */
    unsigned max_conns;             /* open connections; 0: CV_SERVE_MAX_CONNS */
    bool no_batching;               /* every model runs one request at a time (bench) */
    int64_t poll_ms;                /* rescan the repository this often; 0: only when asked */
} cv_serve_opts;

typedef struct cv_serve cv_serve;

/* Loads every model of the repository (each version checked by a smoke run
 * of its artifact) and starts listening: 0, or -1 with CV9401..CV9403 in d. */
int cv_serve_start(const cv_serve_opts *o, cv_serve **out, cv_diag *d);
/* The port it listens on (useful with port 0). */
int cv_serve_port(const cv_serve *s);
/* Hot reload: loads the newest version of model `name` next to the one
 * served, smoke-runs it, starts its instances and swaps it in atomically;
 * requests that already hold the old version finish on it, and it is
 * freed after the last.  A version that fails to load or to run is
 * refused (CV9402, CV9403) and the old one stays; the same version as
 * served is left alone.  A name not served whose folder is in the
 * repository now is loaded (and a name unloaded before is served again).
 * NULL: cv_serve_rescan.  0, or -1 with the reasons in d (CV9412 for a
 * name neither served nor in the repository, CV9419 for a string that is
 * no model name). */
int cv_serve_reload(cv_serve *s, const char *name, cv_diag *d);
/* Brings the served set in step with the repository: folders that
 * appeared are loaded, models whose folder went are unloaded (after their
 * requests in flight), the others reloaded when a newer version is there.
 * Models unloaded by cv_serve_unload stay out.  A folder whose name is no
 * model name is left out (CV9419).  0, or -1 with every failure in d. */
int cv_serve_rescan(cv_serve *s, cv_diag *d);
/* Takes model `name` out of service: new requests for it get 404 (CV9412),
 * requests already taken finish.  It stays out of rescans until a
 * cv_serve_reload of its name.  0, or -1 (CV9412, CV9419). */
int cv_serve_unload(cv_serve *s, const char *name, cv_diag *d);
/* Stops accepting, lets requests already taken finish (up to drain_ms),
 * joins every thread and frees s.  NULL is a no-op. */
void cv_serve_stop(cv_serve *s, int drain_ms);

#endif
