/* The worker loop: lease a job, run it in a sandboxed child, heartbeat
 * while it runs, record the result; until stopped.  A job's own trouble
 * (errors, crash, timeout, OOM) is a result; farm trouble (model not found,
 * cache unusable) is a queue fail, retried elsewhere; a stop request lets
 * the running job finish within the grace period, else hands it back. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "common/log.h"
#include "worker/internal.h"

static volatile sig_atomic_t stop_requests;

void cv_worker_request_stop(void)
{
    if (stop_requests < 100)
        stop_requests++;
}

static void on_signal(int sig)
{
    (void)sig;
    cv_worker_request_stop();
}

int cv_worker_handle_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;            /* no SA_RESTART: a wait wakes up and looks */
    return sigaction(SIGTERM, &sa, NULL) == 0 && sigaction(SIGINT, &sa, NULL) == 0 ? 0 : -1;
}

/* Options with their defaults filled in. */
typedef struct wopts {
    cv_worker_opts o;
    char id[CV_QUEUE_WORKER_MAX + 1];
    const char *scratch;
} wopts;

static int fill_defaults(const cv_worker_opts *in, wopts *w, cv_diag *d)
{
    w->o = *in;
    cv_worker_opts *o = &w->o;
    if (!o->queue_url)
        return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0}, "the worker needs a queue");
    if (o->lease_s < 0 || o->lease_s > CV_QUEUE_LEASE_MAX_S || o->poll_ms < 0 ||
        o->poll_ms > CV_QUEUE_WAIT_MAX_MS || o->job_timeout_ms < 0 || o->cpu_limit_s < 0 ||
        o->grace_ms < 0 || o->max_jobs < 0)
        return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0},
                            "a worker limit is negative or too large");
    o->lease_s = o->lease_s ? o->lease_s : 30;
    o->poll_ms = o->poll_ms ? o->poll_ms : 1000;
    o->job_timeout_ms = o->job_timeout_ms ? o->job_timeout_ms : 600000;
    o->grace_ms = o->grace_ms ? o->grace_ms : 30000;
    if (!o->cpu_limit_s)
        o->cpu_limit_s = (int)(o->job_timeout_ms * 2 / 1000 + 1);
    if (o->worker_id) {
        snprintf(w->id, sizeof w->id, "%s", o->worker_id);
    } else {
        char host[128] = "localhost";
        gethostname(host, sizeof host - 1);
        snprintf(w->id, sizeof w->id, "%s:%ld", host, (long)getpid());
    }
    const char *tmp = getenv("TMPDIR");
    w->scratch = o->scratch_dir ? o->scratch_dir : tmp && *tmp ? tmp : "/tmp";
    /* a scratch directory that cannot be made would dead-letter every job */
    if (cv_fs_mkdirs(w->scratch, 0755) != 0)
        return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){.file = w->scratch},
                            "cannot create the scratch directory %s: %s", w->scratch,
                            strerror(errno));
    return 0;
}

/* The worker can deliver nothing without a cache to put artifacts in. */
static int check_cache(const cv_worker_opts *o, cv_diag *d)
{
    cv_cache_options co = {.dir = o->cache_dir, .remote = o->remote_cache,
                           .sign_key = o->sign_key, .verify_key = o->verify_key};
    cv_cache *c = NULL;
    if (cv_cache_open(&co, &c, d))
        return -1;
    bool on = cv_cache_enabled(c);
    cv_cache_close(c);
    if (!on)
        return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0}, "the cache is off "
                            "(CUVIL_CACHE=off): a worker has nowhere to put artifacts");
    return 0;
}

/* -------------------------------------------------------------- presence */

/* How often an idle worker reports itself (a busy one does at each lease
 * heartbeat). */
#define PRESENCE_IDLE_MS 5000

/* Presence is for people watching the farm: its failure is only logged. */
static void presence(cv_queue *q, const char *worker_id, const char *job_id, bool done)
{
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_worker_beat(q, worker_id, job_id, done, &d) != 0)
        cv_log_debug("worker presence: %s", d.n ? d.v[0].msg : "?");
    cv_diag_free(&d);
}

/* ------------------------------------------------------------------ tick */

enum { STOP_LOST = 1, STOP_SIGNAL = 2 };

/* The job before, compiled and waiting for its cache files' sync
 * (syncer.c): it is reported once they are on the disk, while the next
 * job already compiles. */
typedef struct held {
    bool on;
    cv_lease lease;             /* owned when on */
    cv_sb_outcome so;           /* owned when on */
    cv_wk_sync sync;
} held;

static void held_finish(cv_queue *q, held *h, const wopts *w, cv_worker_stats *st);

typedef struct tick_ctx {
    cv_queue *q;
    cv_lease *lease;
    const wopts *w;
    held *h;
    cv_worker_stats *st;
    int64_t last_beat, stop_since;
} tick_ctx;

static int tick(void *ctx)
{
    tick_ctx *t = ctx;
    if (t->h->on && cv_wk_sync_done(&t->h->sync))
        held_finish(t->q, t->h, t->w, t->st);
    int64_t now = cv_clock_mono_ms();
    if (now - t->last_beat >= (int64_t)t->w->o.lease_s * 1000 / 3) {
        cv_diag hd;
        cv_diag_init(&hd);
        int rc = cv_queue_heartbeat(t->q, t->lease, t->w->o.lease_s, &hd);
        bool lost = rc != 0 && hd.n && hd.v[0].code == CV_E_QUEUE_LEASE_LOST;
        if (rc != 0)
            cv_log_warn("heartbeat for %s failed: %s", t->lease->job.job_id,
                        hd.n ? hd.v[0].msg : "?");
        cv_diag_free(&hd);
        if (lost)
            return STOP_LOST;
        if (rc == 0) {
            t->last_beat = now;
            presence(t->q, t->w->id, t->lease->job.job_id, false);
        }
    }
    if (stop_requests && !t->stop_since)
        t->stop_since = now;
    if (stop_requests > 1 || (t->stop_since && now - t->stop_since >= t->w->o.grace_ms))
        return STOP_SIGNAL;
    return 0;
}

/* ------------------------------------------------------------------ jobs */

static void record(cv_queue *q, cv_lease *l, const cv_sb_outcome *so, const wopts *w,
                   cv_worker_stats *st)
{
    cv_result_msg res;
    bool infra = false;
    cv_diag d;
    cv_diag_init(&d);
    char *msg = NULL;
    size_t len = 0;
    int rc = cv_wk_job_result(l, so, &w->o, &res, &infra, &d);
    if (rc == 0 && infra) {
        const cv_diag_entry *e = res.diags.n ? &res.diags.v[0] : NULL;
        rc = cv_queue_fail(q, l, CV_QUEUE_FAIL_INFRA, e ? e->msg : "infrastructure failure", &d);
        if (rc >= 0)
            st->by_status[CV_RESULT_INFRA]++;
    } else if (rc == 0 && (rc = cv_result_msg_encode(&res, &msg, &len, &d)) == 0) {
        rc = cv_queue_complete(q, l, msg, len, &d);
        if (rc == 0)
            st->by_status[res.status]++;
    }
    if (rc < 0) {
        bool lost = d.n && d.v[d.n - 1].code == CV_E_QUEUE_LEASE_LOST;
        st->lost += lost;
        st->errors += !lost;
        cv_log_warn("%s: %s", l->job.job_id, d.n ? d.v[d.n - 1].msg : "could not record");
    } else {
        cv_log_info("%s: %s", l->job.job_id, cv_result_status_name(res.status));
    }
    free(msg);
    cv_result_msg_free(&res);
    cv_diag_free(&d);
}

/* Files that could not be synced: the artifact may not survive a power
 * cut, so the job goes back to the queue as an infrastructure failure. */
static void sync_failed(cv_queue *q, cv_lease *l, const char *why, cv_worker_stats *st)
{
    cv_log_warn("%s: %s", l->job.job_id, why);
    if (cv_queue_fail(q, l, CV_QUEUE_FAIL_INFRA, why, NULL) >= 0)
        st->by_status[CV_RESULT_INFRA]++;
    else
        st->errors++;
}

static void held_finish(cv_queue *q, held *h, const wopts *w, cv_worker_stats *st)
{
    if (!h->on)
        return;
    h->on = false;
    if (cv_wk_sync_finish(&h->sync) != 0)
        sync_failed(q, &h->lease, h->sync.error, st);
    else
        record(q, &h->lease, &h->so, w, st);
    cv_wk_sandbox_outcome_free(&h->so);
    cv_queue_lease_free(&h->lease);
}

/* A compile that ended: reported now, or held until its files are synced
 * (the caller frees l and so, emptied when held). */
static void finished(cv_queue *q, cv_lease *l, cv_sb_outcome *so, const char *dir,
                     const wopts *w, held *h, cv_worker_stats *st)
{
    if (so->end != CV_SB_EXITED || so->code != 0) {
        record(q, l, so, w, st);
    } else if (cv_wk_sync_start(&h->sync, dir, w->o.self_argv) == 1) {
        h->on = true;
        h->lease = *l;
        h->so = *so;
        memset(l, 0, sizeof *l);
        memset(so, 0, sizeof *so);
    } else if (h->sync.error[0]) {
        sync_failed(q, l, h->sync.error, st);
    } else {
        record(q, l, so, w, st);
    }
}

static void stopped(cv_queue *q, cv_lease *l, int why, cv_worker_stats *st)
{
    if (why == STOP_LOST) {     /* another execution owns the job now */
        st->lost++;
        cv_log_warn("%s: lease lost; the compile was stopped", l->job.job_id);
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_fail(q, l, CV_QUEUE_FAIL_RELEASE, "worker stopping", &d) >= 0)
        st->released++;
    else
        st->errors++;
    cv_diag_free(&d);
}

/* Job directories are named cuvil-job-<worker pid>-XXXXXX; those of a
 * worker that died (SIGKILL, OOM killer) are removed by the next one. */
static void remove_stale(const char *scratch)
{
    DIR *dir = opendir(scratch);
    struct dirent *e;
    while (dir && (e = readdir(dir)) != NULL) {
        char *end;
        if (strncmp(e->d_name, "cuvil-job-", 10) != 0)
            continue;
        long pid = strtol(e->d_name + 10, &end, 10);
        if (end == e->d_name + 10 || *end != '-' || pid <= 0 ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char *path = cv_fs_join(scratch, e->d_name);
        if (path && cv_wk_remove_tree(path) == 0)
            cv_log_info("removed %s, left by worker %ld", path, pid);
        free(path);
    }
    if (dir)
        closedir(dir);
}

static void run_job(cv_queue *q, cv_lease *l, const wopts *w, held *h, cv_worker_stats *st)
{
    char name[64];
    snprintf(name, sizeof name, "cuvil-job-%ld-XXXXXX", (long)getpid());
    char *dir = cv_fs_join(w->scratch, name);
    cv_sb_outcome so = {0};
    cv_diag d;
    cv_diag_init(&d);
    st->jobs++;
    if (!dir || !mkdtemp(dir)) {
        cv_diag_error(&d, CV_E_WORKER_SPAWN_FAILED, (cv_span){0}, "cannot make a scratch directory in "
                      "%s: %s", w->scratch, strerror(errno));
        cv_queue_fail(q, l, CV_QUEUE_FAIL_INFRA, d.v[0].msg, NULL);
        st->errors++;
        free(dir);
        cv_diag_free(&d);
        return;
    }
    cv_wk_job_ctx jc = {.o = &w->o, .lease = l, .out_dir = dir};
    tick_ctx tc = {.q = q, .lease = l, .w = w, .h = h, .st = st, .last_beat = cv_clock_mono_ms()};
    cv_sb_spec spec = {.timeout_ms = w->o.job_timeout_ms, .cpu_limit_s = w->o.cpu_limit_s,
                       .memory_limit = w->o.memory_limit, .tick_ms = 100, .tick = tick,
                       .tick_ctx = &tc, .body = cv_wk_job_body, .body_ctx = &jc};
    char **argv = NULL;
    if (w->o.self_argv && cv_wk_job_exec_argv(&w->o, l, dir, &argv, &d) == 0) {
        spec.exec_path = w->o.self_argv[0];
        spec.exec_argv = argv;
    }
    cv_log_info("%s: compiling %s for %s (attempt %d)", l->job.job_id, l->job.model_path,
                l->job.target, l->attempt);
    presence(q, w->id, l->job.job_id, false);
    int ran = w->o.self_argv && !argv ? -1 : cv_wk_sandbox_run(&spec, &so, &d);
    free(argv);
    held_finish(q, h, w, st); /* the job before is reported first */
    if (ran != 0) {
        cv_queue_fail(q, l, CV_QUEUE_FAIL_INFRA, d.n ? d.v[0].msg : "spawn failed", NULL);
        st->errors++;
    } else if (so.end == CV_SB_STOPPED) {
        stopped(q, l, so.stop_reason, st);
    } else {
        finished(q, l, &so, dir, w, h, st);
    }
    if (so.err_tail[0])
        cv_log_debug("%s: compiler output:\n%s", l->job.job_id, so.err_tail);
    cv_wk_sandbox_outcome_free(&so);
    presence(q, w->id, NULL, true);
    cv_wk_remove_tree(dir);
    free(dir);
    cv_diag_free(&d);
}

/* --------------------------------------------------------------- the loop */

static bool done(const wopts *w, const cv_worker_stats *st)
{
    return stop_requests || (w->o.max_jobs && st->jobs >= w->o.max_jobs);
}

int cv_worker_run(const cv_worker_opts *opts, cv_worker_stats *st, cv_diag *d)
{
    memset(st, 0, sizeof *st);
    wopts w;
    cv_queue *q = NULL;
    if (fill_defaults(opts, &w, d) || check_cache(&w.o, d) ||
        cv_queue_open(w.o.queue_url, &w.o.queue_opts, &q, d))
        return -1;
    cv_log_info("worker %s: queue %s; job timeout %lldms, memory limit %llu bytes; remote "
                "cache %s%s", w.id, w.o.queue_url, (long long)w.o.job_timeout_ms,
                (unsigned long long)w.o.memory_limit,
                w.o.remote_cache && *w.o.remote_cache ? w.o.remote_cache : "none",
                w.o.sign_key && *w.o.sign_key ? " (signed)" : "");
    remove_stale(w.scratch);
    /* Each job's child would otherwise load LLVM again; one that cannot
     * load it reports that in its own result. */
    cv_diag pd;
    cv_diag_init(&pd);
    if (cv_backend_preload(&pd) != 0)
        cv_log_warn("the native backend did not load: %s", pd.n ? pd.v[0].msg : "?");
    cv_diag_free(&pd);
    int failures = 0, rc = 0;
    presence(q, w.id, NULL, false);
    int64_t seen = cv_clock_mono_ms();
    held h = {0};
    while (!done(&w, st)) {
        cv_lease l;
        cv_diag ld;
        cv_diag_init(&ld);
        /* holding a job: look for the next without waiting, else report it */
        int got = cv_queue_lease(q, w.id, w.o.lease_s, h.on ? 0 : w.o.poll_ms, &l, &ld);
        if (got < 0) {
            st->errors++;
            cv_log_warn("lease failed: %s", ld.n ? ld.v[0].msg : "?");
            if (w.o.once || ++failures >= 100) {
                cv_diag_merge(d, &ld);
                rc = -1;
            }
            cv_diag_free(&ld);
            if (rc)
                break;
            usleep((useconds_t)(failures < 10 ? failures : 10) * 200000u);
            continue;
        }
        cv_diag_free(&ld);
        failures = 0;
        if (got == 0 && h.on) {
            held_finish(q, &h, &w, st);
            continue;
        }
        if (got == 0) {
            if (w.o.once)
                break;
            if (cv_clock_mono_ms() - seen >= PRESENCE_IDLE_MS) {
                presence(q, w.id, NULL, false);
                seen = cv_clock_mono_ms();
            }
            continue;
        }
        run_job(q, &l, &w, &h, st);
        seen = cv_clock_mono_ms();
        cv_queue_lease_free(&l);
    }
    held_finish(q, &h, &w, st);
    cv_diag ed;
    cv_diag_init(&ed);
    if (cv_queue_worker_leave(q, w.id, &ed) != 0)
        cv_log_debug("worker presence: %s", ed.n ? ed.v[0].msg : "?");
    cv_diag_free(&ed);
    cv_queue_close(q);
    return rc;
}
