/* /metrics for one model: Prometheus text, labels model and version. */
#include "serve/serve_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double sv_time_bounds[SV_HIST_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
};
const double sv_batch_bounds[SV_HIST_BUCKETS] = {
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256, 1024,
};

static const int fail_codes[SV_FAIL__COUNT] = {
    [SV_FAIL_BAD_REQUEST] = CV_E_SERVE_BAD_REQUEST, [SV_FAIL_BAD_TENSOR] = CV_E_SERVE_BAD_TENSOR,
    [SV_FAIL_TOO_LARGE] = CV_E_SERVE_TOO_LARGE,     [SV_FAIL_QUEUE_FULL] = CV_E_SERVE_QUEUE_FULL,
    [SV_FAIL_RUN] = CV_E_SERVE_RUN_FAILED,          [SV_FAIL_TRUNCATED] = CV_E_SERVE_TRUNCATED,
    [SV_FAIL_UNAVAILABLE] = CV_E_SERVE_UNAVAILABLE,
};

int sv_fail_slot(int code)
{
    for (int i = 0; i < SV_FAIL__COUNT; i++)
        if (fail_codes[i] == code)
            return i;
    return -1;
}

void sv_hist_add(sv_hist *h, const double *bounds, double v)
{
    int i = 0;
    while (i < SV_HIST_BUCKETS && v > bounds[i])
        i++;
    h->bucket[i]++;
    h->count++;
    h->sum += v;
}

static void hist(cv_sb *out, const char *name, const char *labels, const sv_hist *h,
                 const double *bounds)
{
    uint64_t cum = 0;
    for (int i = 0; i <= SV_HIST_BUCKETS; i++) {
        cum += h->bucket[i];
        if (i < SV_HIST_BUCKETS)
            cv_sb_printf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, bounds[i],
                         (unsigned long long)cum);
        else
            cv_sb_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
                         (unsigned long long)cum);
    }
    cv_sb_printf(out, "%s_sum{%s} %.9g\n%s_count{%s} %llu\n", name, labels, h->sum, name, labels,
                 (unsigned long long)h->count);
}

typedef struct snap {
    char labels[128];
    int depth, n_inst;
    sv_stats s;
    uint64_t allocs;
    double wall_s;                       /* since the version was started */
    double busy_s[SV_MAX_INSTANCES];
} snap;

typedef enum { F_REQ, F_OK, F_FAIL, F_RUNS, F_DEPTH, F_INST, F_QUEUE, F_COMPUTE, F_REQUEST,
               F_BATCH, F_ALLOCS, F_BUSY, F_UTIL, F__COUNT } family;

static const struct {
    const char *name, *type, *help;
} families[F__COUNT] = {
    [F_REQ] = {"cuvil_model_requests_total", "counter", "inference requests taken"},
    [F_OK] = {"cuvil_model_success_total", "counter", "inference requests answered 200"},
    [F_FAIL] = {"cuvil_model_failures_total", "counter", "inference requests failed, by code"},
    [F_RUNS] = {"cuvil_model_runs_total", "counter", "model runs (one per batch)"},
    [F_DEPTH] = {"cuvil_model_queue_depth", "gauge", "requests waiting for an instance"},
    [F_INST] = {"cuvil_model_instances", "gauge", "loaded instances of the model"},
    [F_QUEUE] = {"cuvil_model_queue_seconds", "histogram", "time from queued to run start"},
    [F_COMPUTE] = {"cuvil_model_compute_seconds", "histogram", "time of one run (a batch)"},
    [F_REQUEST] = {"cuvil_model_request_seconds", "histogram",
                   "time from the whole body read to the answer made"},
    [F_BATCH] = {"cuvil_model_batch_size", "histogram", "rows per run"},
    [F_ALLOCS] = {"cuvil_model_buffer_allocations_total", "counter",
                  "tensor buffers allocated (not reused from the pool): flat in the steady state"},
    [F_BUSY] = {"cuvil_model_instance_busy_seconds_total", "counter",
                "time the instance spent running batches"},
    [F_UTIL] = {"cuvil_model_instance_utilization", "gauge",
                "busy time over wall time since the version was loaded, per instance"},
};

static void instance_rows(cv_sb *out, const char *name, const snap *p, bool ratio)
{
    for (int i = 0; i < p->n_inst; i++)
        cv_sb_printf(out, "%s{%s,instance=\"%d\"} %.9g\n", name, p->labels, i,
                     ratio ? (p->wall_s > 0 ? p->busy_s[i] / p->wall_s : 0) : p->busy_s[i]);
}

static void family_rows(cv_sb *out, family f, const snap *p)
{
    const char *name = families[f].name;
    switch (f) {
    case F_REQ: cv_sb_printf(out, "%s{%s} %llu\n", name, p->labels,
                             (unsigned long long)p->s.requests); break;
    case F_OK: cv_sb_printf(out, "%s{%s} %llu\n", name, p->labels,
                            (unsigned long long)p->s.ok); break;
    case F_FAIL:
        for (int i = 0; i < SV_FAIL__COUNT; i++)
            cv_sb_printf(out, "%s{%s,code=\"CV%04d\"} %llu\n", name, p->labels, fail_codes[i],
                         (unsigned long long)p->s.failures[i]);
        break;
    case F_RUNS: cv_sb_printf(out, "%s{%s} %llu\n", name, p->labels,
                              (unsigned long long)p->s.runs); break;
    case F_DEPTH: cv_sb_printf(out, "%s{%s} %d\n", name, p->labels, p->depth); break;
    case F_INST: cv_sb_printf(out, "%s{%s} %d\n", name, p->labels, p->n_inst); break;
    case F_QUEUE: hist(out, name, p->labels, &p->s.queue_s, sv_time_bounds); break;
    case F_COMPUTE: hist(out, name, p->labels, &p->s.compute_s, sv_time_bounds); break;
    case F_REQUEST: hist(out, name, p->labels, &p->s.request_s, sv_time_bounds); break;
    case F_BATCH: hist(out, name, p->labels, &p->s.batch, sv_batch_bounds); break;
    case F_ALLOCS: cv_sb_printf(out, "%s{%s} %llu\n", name, p->labels,
                                (unsigned long long)p->allocs); break;
    case F_BUSY: instance_rows(out, name, p, false); break;
    case F_UTIL: instance_rows(out, name, p, true); break;
    default: break;
    }
}

/* Model names are [A-Za-z0-9_.-] (sv_model_load): nothing to escape.  Each
 * family's samples together (the text format requires it). */
void sv_metrics_models(cv_sb *out, sv_model *const *models, int n)
{
    snap *p = calloc((size_t)(n ? n : 1), sizeof *p);
    if (!p) {
        out->oom = 1;
        return;
    }
    for (int i = 0; i < n; i++) {
        sv_model *m = models[i];
        snprintf(p[i].labels, sizeof p[i].labels, "model=\"%s\",version=\"%s\"", m->name,
                 m->version);
        pthread_mutex_lock(&m->mu);
        p[i].depth = m->depth;
        pthread_mutex_unlock(&m->mu);
        p[i].n_inst = m->n_inst;
        p[i].allocs = sv_pool_allocs(m->pool);
        int64_t now = sv_now_ns();
        p[i].wall_s = (double)(now - m->t_loaded) / 1e9;
        for (int k = 0; k < m->n_inst; k++)
            p[i].busy_s[k] = (double)atomic_load(&m->inst[k].busy_ns) / 1e9;
        pthread_mutex_lock(&m->st.mu);
        p[i].s = m->st;
        pthread_mutex_unlock(&m->st.mu);
    }
    for (int f = 0; f < F__COUNT; f++) {
        cv_sb_printf(out, "# HELP %s %s\n# TYPE %s %s\n", families[f].name, families[f].help,
                     families[f].name, families[f].type);
        for (int i = 0; i < n; i++)
            family_rows(out, (family)f, &p[i]);
    }
    free(p);
}
