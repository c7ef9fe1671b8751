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
    bool pad;                      /* pad_dynamic_axes: batch different lengths of a symbolic axis */
    double pad_value;
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

/* ---- buffers kept for reuse (serve/pool.c) ---- */
enum { SV_POOL_MAX = 256 };
typedef struct sv_pool {
    pthread_mutex_t mu;
    void *free[SV_POOL_MAX];
    int n;
    uint64_t allocs;               /* blocks asked of the allocator (misses) */
} sv_pool;

void sv_pool_init(sv_pool *p);
void sv_pool_destroy(sv_pool *p);
/* A 64-byte aligned block of at least n bytes (its contents undefined), or NULL. */
void *sv_pool_get(sv_pool *p, size_t n);
void sv_pool_put(sv_pool *p, void *b);
/* Counts k allocations made beside the pool (an instance's batch buffers). */
void sv_pool_count(sv_pool *p, uint64_t k);
uint64_t sv_pool_allocs(sv_pool *p);

/* ---- a request (serve/infer_json.c decodes and encodes it) ---- */
typedef struct sv_req {
    cv_tensor in[SV_MAX_IO];       /* data owned (the model's pool) */
    int n_in;                      /* = the model's inputs, in signature order */
    cv_tensor out[SV_MAX_IO];      /* filled by the instance; data owned (the pool) */
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

/* A zeroed request from the model's pool, and back (with its tensors). */
sv_req *sv_req_new(sv_pool *p);
void sv_req_free(sv_pool *p, sv_req *r);

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
    /* The outputs of its last run, reused by the next run of the same
     * shape (cv_native_run keeps a buffer of the right shape). */
    cv_tensor outs[SV_MAX_IO];
    size_t out_cap[SV_MAX_IO];
    _Atomic int64_t busy_ns;       /* time spent running batches */
} sv_instance;

struct sv_model {
    char name[SV_NAME_MAX + 1];
    char version[24];
    char *dir;                     /* the version's artifact directory (owned) */
    sv_config cfg;
    bool batchable;                /* every input and output has the same symbolic dim 0 */
    bool no_merge;                 /* each request runs alone (no max_batch_size, or --no-batching) */
    bool pads;                     /* pad_dynamic_axes and some input has such an axis */
    /* Per input dim past the batch: the symbol it is (k), or -1 when
     * fixed; per output dim the same (serve/pad.c). */
    int in_sym[SV_MAX_IO][CV_MAX_RANK], out_sym[SV_MAX_IO][CV_MAX_RANK];
    cv_native *meta;               /* instance 0's artifact: the signature */
    sv_instance inst[SV_MAX_INSTANCES];
    int n_inst;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    sv_req *head, *tail;
    int depth;
    bool stopping;
    sv_stats st;
    sv_pool *pool;                 /* requests and their tensors (owned) */
    int64_t t_loaded;              /* ns, CLOCK_MONOTONIC: the utilisation's wall */
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

/* ---- padding of symbolic axes (serve/pad.c) ---- */

/* Reads which dims are symbols; with pad_dynamic_axes, refuses a model
 * whose outputs could not be cut back (a dim that is an expression): 0 or
 * -1 with CV9402. */
int sv_pad_setup(sv_model *m, const cv_native *n, cv_diag *d);
/* Whether b may join a batch that starts with a: the same dims past the
 * batch dim, or different only on symbolic axes when the model pads. */
bool sv_pad_compatible(const sv_model *m, const sv_req *a, const sv_req *b);
/* The padded shape of input i for the batch (every symbol at its largest
 * over the batch), and whether it differs from some request's. */
bool sv_pad_shape(const sv_model *m, const sv_req *b, int i, int64_t rows, cv_tensor *t);
/* Copies request r's input i into the batch tensor t at row row0 (the
 * padding around it filled with pad_value). */
void sv_pad_fill(const sv_model *m, cv_tensor *t);
void sv_pad_put(const sv_req *r, int i, cv_tensor *t, int64_t row0);
/* Output o's block of request r (rows from row0), cut to its own lengths. */
int sv_pad_cut(const sv_model *m, sv_pool *pool, sv_req *r, int o, const cv_tensor *t,
               int64_t row0);

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

/* ---- the server (serve/server.c: HTTP; serve/repository.c: the models) ---- */
enum { SV_MAX_MODELS = 1024 };
struct MHD_Daemon;
struct cv_netguard;

struct cv_serve {
    sv_model **models;             /* the versions served; swapped under models_mu */
    int n_models, cap_models;
    pthread_mutex_t models_mu;     /* models[], and each model's refs and retired */
    pthread_mutex_t reload_mu;     /* one change of the model set at a time; unloaded[] */
    char (*unloaded)[SV_NAME_MAX + 1];   /* unloaded by request: a rescan leaves them out */
    int n_unloaded;
    char *repo;                    /* owned */
    int threads;
    bool no_batching;
    sv_limits lim;
    uint64_t max_body;
    struct cv_netguard *guard;
    struct MHD_Daemon *daemon;
    int port;
    atomic_bool draining;
    pthread_mutex_t mu;            /* active, with idle; poll_stop, with poll_cv */
    pthread_cond_t idle;
    int active;                    /* requests between their head and their end */
    atomic_uint_fast64_t http_errors[SV_FAIL__COUNT + 2];   /* + unknown model, not found */
    /* --poll-interval: a thread rescans the repository (serve/repository.c). */
    int64_t poll_ms;
    pthread_t poll_thread;
    bool polling, poll_stop;
    pthread_cond_t poll_cv;
};

/* Whether s is a model name: 1 to 64 of [A-Za-z0-9_.-], not starting with '.'. */
bool sv_name_ok(const char *s, size_t n);
/* Loads every model folder of the repository at the start: 0 or -1. */
int sv_repo_load_all(cv_serve *s, cv_diag *d);
/* Starts and stops the --poll-interval thread. */
int sv_repo_poll_start(cv_serve *s, cv_diag *d);
void sv_repo_poll_stop(cv_serve *s);
/* The version served now of a model, held until sv_release (NULL: none). */
sv_model *sv_acquire(cv_serve *s, const char *name, size_t n);
void sv_release(cv_serve *s, sv_model *m);
/* The repository index (POST /v2/repository/index): [{name, version, state}]. */
json_t *sv_repo_index(cv_serve *s);

/* ---- /metrics (serve/metrics.c) ---- */

void sv_metrics_models(cv_sb *out, sv_model *const *models, int n);

#endif
