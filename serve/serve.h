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
} cv_serve_opts;

typedef struct cv_serve cv_serve;

/* Loads every model of the repository (each version checked by a smoke run
 * of its artifact) and starts listening: 0, or -1 with CV9401..CV9403 in d. */
int cv_serve_start(const cv_serve_opts *o, cv_serve **out, cv_diag *d);
/* The port it listens on (useful with port 0). */
int cv_serve_port(const cv_serve *s);
/* Hot reload: loads the newest version of model `name` (NULL: of every
 * model) next to the one served, smoke-runs it, starts its instances and
 * swaps it in atomically; requests that already hold the old version
 * finish on it, and it is freed after the last.  A version that fails to
 * load or to run is refused (CV9402, CV9403) and the old one stays; the
 * same version as served is left alone.  Models added to the repository
 * after the start are not picked up.  0, or -1 with the reasons in d
 * (CV9412 for an unknown name). */
int cv_serve_reload(cv_serve *s, const char *name, cv_diag *d);
/* Stops accepting, lets requests already taken finish (up to drain_ms),
 * joins every thread and frees s.  NULL is a no-op. */
void cv_serve_stop(cv_serve *s, int drain_ms);

#endif
