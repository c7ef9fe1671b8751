/* Dynamic batching: each instance thread takes the oldest queued request
 * and merges later ones of the same shape (past the batch dimension) until
 * the rows reach max_batch_size, a preferred size with nothing else
 * waiting, or max_queue_delay_us after the oldest arrived; it runs the
 * batch once on its own artifact and splits the outputs back by rows. */
#include "serve/serve_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool preferred(const sv_model *m, int64_t rows)
{
    for (int i = 0; i < m->cfg.n_preferred; i++)
        if (m->cfg.preferred[i] == rows)
            return true;
    return false;
}

static void abs_deadline(int64_t ns, struct timespec *ts)
{
    /* the condition variables use CLOCK_MONOTONIC (sv_model_start) */
    ts->tv_sec = (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

/* Takes the next batch off the queue (m->mu held); NULL when stopping
 * with nothing queued. */
static sv_req *take_batch(sv_model *m, int *n_out, int64_t *rows_out)
{
    while (!m->head && !m->stopping)
        pthread_cond_wait(&m->cv_work, &m->mu);
    sv_req *first = m->head;
    if (!first)
        return NULL;
    m->head = first->next;
    m->tail = m->head ? m->tail : NULL;
    m->depth--;
    first->next = NULL;
    sv_req *last = first;
    int n = 1;
    int64_t rows = first->rows;
    int64_t deadline = first->t_enqueue + m->cfg.max_queue_delay_us * 1000;
    while (!m->no_merge && rows < m->cfg.max_batch_size) {
        sv_req *c = m->head;
        if (c && rows + c->rows <= m->cfg.max_batch_size && sv_pad_compatible(m, first, c)) {
            m->head = c->next;
            m->tail = m->head ? m->tail : NULL;
            m->depth--;
            c->next = NULL;
            last->next = c;
            last = c;
            n++;
            rows += c->rows;
            continue;
        }
        if (c || m->stopping || (preferred(m, rows)) || sv_now_ns() >= deadline)
            break;   /* the next one does not fit, or the wait is over */
        struct timespec ts;
        abs_deadline(deadline, &ts);
        pthread_cond_timedwait(&m->cv_work, &m->mu, &ts);
    }
    *n_out = n;
    *rows_out = rows;
    return first;
}

static void fail_all(sv_req *b, int code, const char *why)
{
    for (sv_req *r = b; r; r = r->next) {
        r->err_code = code;
        snprintf(r->err, sizeof r->err, "%s", why);
    }
}

/* Input i of the batch, its rows one request after another, in the
 * instance's reused buffer; padded to the longest request on symbolic
 * axes when the model pads (*padded then set). */
static int merge_input(sv_instance *in, sv_req *b, int i, int64_t rows, cv_tensor *t,
                       bool *padded)
{
    bool pad = sv_pad_shape(in->m, b, i, rows, t);
    size_t need = (size_t)t->numel * cv_dtype_size(t->dtype);
    if (need > in->merged_cap[i]) {
        void *p = realloc(in->merged[i], need);
        if (!p)
            return -1;
        in->merged[i] = p;
        in->merged_cap[i] = need;
        sv_pool_count(in->m->pool, 1);
    }
    t->data = in->merged[i];
    if (pad) {
        *padded = true;
        sv_pad_fill(in->m, t);
        int64_t row0 = 0;
        for (sv_req *r = b; r; row0 += r->rows, r = r->next)
            sv_pad_put(r, i, t, row0);
        return 0;
    }
    char *at = in->merged[i];
    for (sv_req *r = b; r; r = r->next) {
        size_t n = cv_tensor_nbytes(&r->in[i]);
        memcpy(at, r->in[i].data, n);
        at += n;
    }
    return 0;
}

/* Output o of the batch back to each request, by its rows (a request run
 * alone takes it whole; a padded batch is cut to each one's lengths), in
 * blocks of the model's pool. */
static int split_output(sv_model *m, sv_req *b, int o, const cv_tensor *t, int64_t rows,
                        bool padded)
{
    sv_pool *pool = m->pool;
    if (padded) {
        if (t->rank < 1 || t->dims[0] != rows)
            return -1;
        int64_t row0 = 0;
        for (sv_req *r = b; r; row0 += r->rows, r = r->next)
            if (sv_pad_cut(m, pool, r, o, t, row0) != 0)
                return -1;
        return 0;
    }
    if (!b->next) {
        cv_tensor *dst = &b->out[o];
        *dst = *t;
        if (!(dst->data = sv_pool_get(pool, cv_tensor_nbytes(t))))
            return -1;
        memcpy(dst->data, t->data, cv_tensor_nbytes(t));
        return 0;
    }
    if (t->rank < 1 || t->dims[0] != rows)
        return -1;
    size_t row_bytes = cv_tensor_nbytes(t) / (size_t)(rows ? rows : 1);
    const char *at = t->data;
    for (sv_req *r = b; r; r = r->next) {
        cv_tensor *dst = &r->out[o];
        *dst = *t;
        dst->dims[0] = r->rows;
        dst->numel = t->numel / (rows ? rows : 1) * r->rows;
        size_t n = row_bytes * (size_t)r->rows;
        dst->data = sv_pool_get(pool, n);
        if (!dst->data)
            return -1;
        memcpy(dst->data, at, n);
        at += n;
    }
    return 0;
}

/* The instance's output buffers, shaped as the last run's outputs with
 * this batch's rows: cv_native_run reuses a buffer whose shape is right,
 * and replaces one whose shape is not (which then counts as an
 * allocation).  Capacity is kept, so a smaller batch after a larger one
 * reuses the larger buffer. */
static void shape_outputs(sv_instance *in, int no, int64_t rows, bool batched)
{
    for (int o = 0; o < no; o++) {
        cv_tensor *t = &in->outs[o];
        if (!t->data)
            continue;
        if (batched && t->rank > 0 && t->dims[0] > 0) {
            t->numel = t->numel / t->dims[0] * rows;
            t->dims[0] = rows;
        }
        if (cv_tensor_nbytes(t) > in->out_cap[o]) {
            cv_tensor_free(t);   /* too small: the run allocates a new one */
            in->out_cap[o] = 0;
        }
    }
}

static void outputs_ran(sv_instance *in, int no, void *const *before)
{
    int fresh = 0;
    for (int o = 0; o < no; o++)
        if (in->outs[o].data != before[o]) {
            fresh++;
            in->out_cap[o] = cv_tensor_nbytes(&in->outs[o]);
        }
    if (fresh)
        sv_pool_count(in->m->pool, (uint64_t)fresh);
}

static void run_batch(sv_instance *in, sv_req *b, int n, int64_t rows)
{
    sv_model *m = in->m;
    int ni = cv_native_num_inputs(in->nat), no = cv_native_num_outputs(in->nat);
    cv_diag d;
    cv_diag_init(&d);
    int64_t t0 = sv_now_ns();
    for (sv_req *r = b; r; r = r->next)
        r->t_start = t0;
    cv_tensor merged[SV_MAX_IO];
    const cv_tensor *ins = b->in;
    int rc = 0;
    bool padded = false;
    for (int i = 0; n > 1 && i < ni && rc == 0; i++)
        rc = merge_input(in, b, i, rows, &merged[i], &padded);
    if (n > 1)
        ins = merged;
    shape_outputs(in, no, rows, m->batchable);
    void *before[SV_MAX_IO];
    for (int o = 0; o < no; o++)
        before[o] = in->outs[o].data;
    if (rc != 0)
        fail_all(b, CV_E_SERVE_RUN_FAILED, "out of memory merging a batch");
    else if (cv_native_run(in->nat, ins, ni, in->outs, &d) != 0)
        fail_all(b, CV_E_SERVE_RUN_FAILED, d.n ? d.v[0].msg : "the run failed");
    else
        for (int o = 0; o < no; o++)
            if (split_output(m, b, o, &in->outs[o], rows, padded) != 0) {
                fail_all(b, CV_E_SERVE_RUN_FAILED, "an output's first dimension is not "
                         "the batch's (or out of memory)");
                break;
            }
    outputs_ran(in, no, before);
    int64_t t1 = sv_now_ns();
    atomic_fetch_add(&in->busy_ns, t1 - t0);
    cv_diag_free(&d);
    pthread_mutex_lock(&m->st.mu);
    sv_hist_add(&m->st.batch, sv_batch_bounds, (double)rows);
    sv_hist_add(&m->st.compute_s, sv_time_bounds, (double)(t1 - t0) / 1e9);
    m->st.runs++;
    pthread_mutex_unlock(&m->st.mu);
    pthread_mutex_lock(&m->mu);
    for (sv_req *r = b; r; r = r->next) {
        r->t_end = t1;
        r->status = 1;
    }
    pthread_cond_broadcast(&m->cv_done);
    pthread_mutex_unlock(&m->mu);
}

static void *instance_main(void *arg)
{
    sv_instance *in = arg;
    sv_model *m = in->m;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        int n = 0;
        int64_t rows = 0;
        sv_req *b = take_batch(m, &n, &rows);
        pthread_mutex_unlock(&m->mu);
        if (!b)
            return NULL;
        /* The list's links are the requests' own: keep them apart from
         * the queue before the waiters may free them. */
        run_batch(in, b, n, rows);
    }
}

int sv_model_start(sv_model *m, cv_diag *d)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&m->cv_work);
    pthread_cond_init(&m->cv_work, &ca);
    pthread_condattr_destroy(&ca);
    m->t_loaded = sv_now_ns();
    for (int i = 0; i < m->n_inst; i++) {
        if (pthread_create(&m->inst[i].thread, NULL, instance_main, &m->inst[i]) != 0)
            return cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){0},
                                "cannot start the threads of model %s", m->name);
        m->inst[i].started = true;
    }
    return 0;
}

int sv_model_submit(sv_model *m, sv_req *r)
{
    pthread_mutex_lock(&m->mu);
    int rc = 0;
    if (m->stopping)
        rc = CV_E_SERVE_UNAVAILABLE;
    else if (m->depth >= m->cfg.max_queue_size)
        rc = CV_E_SERVE_QUEUE_FULL;
    if (rc == 0) {
        r->t_enqueue = sv_now_ns();
        r->next = NULL;
        if (m->tail)
            m->tail->next = r;
        else
            m->head = r;
        m->tail = r;
        m->depth++;
        pthread_cond_signal(&m->cv_work);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void sv_model_wait(sv_model *m, sv_req *r)
{
    pthread_mutex_lock(&m->mu);
    while (!r->status)
        pthread_cond_wait(&m->cv_done, &m->mu);
    pthread_mutex_unlock(&m->mu);
}

void sv_model_free(sv_model *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_cond_broadcast(&m->cv_work);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->n_inst; i++) {
        if (m->inst[i].started)
            pthread_join(m->inst[i].thread, NULL);
        cv_native_close(m->inst[i].nat);
        for (int k = 0; k < SV_MAX_IO; k++) {
            free(m->inst[i].merged[k]);
            cv_tensor_free(&m->inst[i].outs[k]);
        }
    }
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv_work);
    pthread_cond_destroy(&m->cv_done);
    pthread_mutex_destroy(&m->st.mu);
    if (m->pool)
        sv_pool_destroy(m->pool);
    free(m->pool);
    free(m->dir);
    free(m);
}
