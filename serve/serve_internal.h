/* serve/'s own types, shared by its files and its tests. */
#ifndef CV_SERVE_INTERNAL_H
#define CV_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/diag.h"
#include "common/strbuf.h"
#include "compiler-core/cuvil.h"
#include "serve/serve.h"

#define SV_NAME_MAX 64
#define SV_MAX_IO 64               /* inputs or outputs a served model may have */
#define SV_MAX_PREFERRED 16
#define SV_MAX_INSTANCES 64
#define SV_MAX_BATCH 4096

/* ---- config.yaml (serve/config.c) ---- */
typedef struct sv_config {
    int max_batch_size;            /* 0: no batching */
    int64_t max_queue_delay_us;
    int instances;
    int max_queue_size;            /* requests waiting; more: 429 */
    int preferred[SV_MAX_PREFERRED];
    int n_preferred;
} sv_config;

/* Reads DIR/config.yaml (missing: the defaults): 0, or -1 with CV9402 at file:line. */
int sv_config_load(const char *model_dir, sv_config *c, cv_diag *d);

/* ---- metrics (serve/metrics.c) ---- */
enum { SV_HIST_BUCKETS = 14 };
typedef struct sv_hist {
    uint64_t bucket[SV_HIST_BUCKETS + 1];   /* the last: +Inf */
    uint64_t count;
    double sum;
} sv_hist;

/* Failures are counted by code; these are the codes a model's requests meet. */
enum { SV_FAIL_BAD_REQUEST, SV_FAIL_BAD_TENSOR, SV_FAIL_TOO_LARGE, SV_FAIL_QUEUE_FULL,
       SV_FAIL_RUN, SV_FAIL_TRUNCATED, SV_FAIL_UNAVAILABLE, SV_FAIL__COUNT };
int sv_fail_slot(int code);        /* the slot of a CV_E_SERVE_* code, -1 if none */

typedef struct sv_stats {
    pthread_mutex_t mu;
    uint64_t requests, ok;
    uint64_t failures[SV_FAIL__COUNT];
    sv_hist queue_s, compute_s, request_s, batch;
    uint64_t runs;
} sv_stats;

void sv_hist_add(sv_hist *h, const double *bounds, double v);
extern const double sv_time_bounds[SV_HIST_BUCKETS];
extern const double sv_batch_bounds[SV_HIST_BUCKETS];

/* ---- a request (serve/infer_json.c decodes and encodes it) ---- */
typedef struct sv_req {
    cv_tensor in[SV_MAX_IO];       /* data owned (malloc) */
    int n_in;                      /* = the model's inputs, in signature order */
    cv_tensor out[SV_MAX_IO];      /* filled by the instance; data owned */
    bool want[SV_MAX_IO];          /* outputs to return */
    bool binary[SV_MAX_IO];        /* ... as binary data */
    char *id;                      /* the request's "id", or NULL */
    int64_t rows;                  /* the batch dimension (1 when not batched) */
    /* Set by the instance: */
    int status;                    /* 0 waiting, 1 done */
    int err_code;                  /* CV_E_* when the run failed */
    char err[512];
    int64_t t_enqueue, t_start, t_end;   /* ns, CLOCK_MONOTONIC */
    struct sv_req *next;           /* in the model's queue */
} sv_req;

void sv_req_free(sv_req *r);

/* ---- a served model (serve/model.c, serve/batcher.c) ---- */
typedef struct sv_model sv_model;
typedef struct sv_instance {
    sv_model *m;
    cv_native *nat;
    pthread_t thread;
    bool started;
    /* Merged inputs of a batch, reused while large enough (owned). */
    void *merged[SV_MAX_IO];
    size_t merged_cap[SV_MAX_IO];
} sv_instance;

struct sv_model {
    char name[SV_NAME_MAX + 1];
    char version[24];
    char *dir;                     /* the version's artifact directory (owned) */
    sv_config cfg;
    bool batchable;                /* every input and output has the same symbolic dim 0 */
    bool no_merge;                 /* each request runs alone (no max_batch_size, or --no-batching) */
    cv_native *meta;               /* instance 0's artifact: the signature */
    sv_instance inst[SV_MAX_INSTANCES];
    int n_inst;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    sv_req *head, *tail;
    int depth;
    bool stopping;
    sv_stats st;
    /* Under the server's models lock (serve/server.c): requests holding
     * this version, and whether a newer one replaced it. */
    int refs;
    bool retired;
};

/* Loads NAME's newest version under repo/NAME with threads a pool: 0, or -1
 * (CV9402, CV9403).  batching_off: max_batch_size is kept for shapes but
 * every request runs alone. */
int sv_model_load(const char *repo, const char *name, int threads, bool batching_off,
                  sv_model **out, cv_diag *d);
/* The newest version folder of repo/name holding an artifact: 0, or -1 (CV9403). */
int sv_model_newest(const char *repo, const char *name, char *out, size_t size, cv_diag *d);
/* Starts its instance threads: 0 or -1. */
int sv_model_start(sv_model *m, cv_diag *d);
/* Lets queued requests finish, joins the threads, frees m. */
void sv_model_free(sv_model *m);
/* Queues r: 0, or CV_E_SERVE_QUEUE_FULL / CV_E_SERVE_UNAVAILABLE. */
int sv_model_submit(sv_model *m, sv_req *r);
/* Waits until r is done. */
void sv_model_wait(sv_model *m, sv_req *r);

int64_t sv_now_ns(void);

/* ---- the protocol's JSON (serve/infer_json.c) ---- */
typedef struct sv_limits {
    uint64_t max_tensor;
} sv_limits;

/* Decodes an infer request body (hdr_len: Inference-Header-Content-Length,
 * -1 when absent) into r for model m: 0, or a CV_E_SERVE_* code with the
 * reason in why. */
int sv_infer_decode(const sv_model *m, const sv_limits *lim, const char *body, size_t len,
                    int64_t hdr_len, sv_req *r, char *why, size_t why_len);
/* The answer for a finished request: the body (malloc'd) and, when it has
 * binary outputs, the JSON part's length in *hdr_len (else -1). */
int sv_infer_encode(const sv_model *m, const sv_req *r, char **body, size_t *len,
                    int64_t *hdr_len);
/* The model's metadata object (GET /v2/models/NAME). */
json_t *sv_model_metadata(const sv_model *m);
/* OIP datatype name of a dtype ("FP32"), NULL if none. */
const char *sv_dtype_name(cv_dtype t);

/* ---- /metrics (serve/metrics.c) ---- */

void sv_metrics_models(cv_sb *out, sv_model *const *models, int n);

#endif
