/* `cuvil farm up`: the controller and local worker processes.
 *
 * The workers are `cuvil worker` processes that read each job's model from
 * trees/<commit>/ (--trees), so one set of workers serves every revision.
 * With --once they are stopped (SIGTERM) once the revision has no job
 * pending; should they all die before (killed, crashed), a fresh set is
 * started, a bounded number of times.  Long-running, each worker slot is
 * restarted when its process ends, at most once per RESTART_MS.  The same
 * code serves both queues: SQLite in the state directory or Kafka.  A farm
 * killed outright takes its workers with it (PR_SET_PDEATHSIG: SIGTERM). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "controller/ctl_internal.h"

#define FARM_POLL_US 50000
#define FARM_RESPAWNS 2            /* --once: fresh worker sets after the first */
#define RESTART_MS 2000            /* long-running: a slot restarts at most this often */
#define PROGRESS_EVERY_S 1.0

typedef struct farm {
    const cv_farm_opts *o;
    cv_controller *ctl;     /* owned */
    char *scratch;          /* owned */
    char *sign, *verify;    /* owned: the action-cache keys; NULL without a remote */
    pid_t pids[CV_FARM_WORKERS_MAX];
    double started[CV_FARM_WORKERS_MAX];
    int spawned_sets;
    /* the revision being followed for progress */
    char revision[CV_REVISION_MAX + 1];
    double rev_t0, last_progress;
    int64_t last_done;
} farm;

/* ------------------------------------------------------------ workers */

static pid_t spawn_worker(const farm *f, int slot)
{
    char id[64], log_name[64];
    snprintf(id, sizeof id, "farm-%d-%d", (int)getpid(), slot);
    snprintf(log_name, sizeof log_name, "worker-%d.log", slot);
    char *log_path = cv_fs_join(f->o->state_dir, log_name);
    /* the operator's settings, lowered or chosen among by the cluster spec */
    const cv_cluster_settings *cs = cv_controller_cluster(f->ctl);
    char timeout[32], memory[32], remote[sizeof cs->remote + 16];
    snprintf(timeout, sizeof timeout, "%lldms", (long long)cs->job_timeout_ms);
    snprintf(memory, sizeof memory, "%llu", (unsigned long long)cs->memory_limit);
    snprintf(remote, sizeof remote, "%s%s", cs->remote,
             cs->remote[0] && cs->remote_read_only && !strstr(cs->remote, "|read-only")
                 ? "|read-only" : "");
    const char *argv[40];
    int n = 0;
    argv[n++] = f->o->worker_exe;
    argv[n++] = "worker";
    argv[n++] = "--queue";   argv[n++] = cv_controller_queue_url(f->ctl);
    argv[n++] = "--trees";   argv[n++] = cv_controller_trees_dir(f->ctl);
    argv[n++] = "--scratch"; argv[n++] = f->scratch;
    argv[n++] = "--id";      argv[n++] = id;
    argv[n++] = "--poll-ms"; argv[n++] = "200";
    if (f->o->cache_dir) {
        argv[n++] = "--cache";
        argv[n++] = f->o->cache_dir;
    }
    /* always said ("" = none): a worker must not fall back to a remote of
     * its environment that the policy did not choose */
    argv[n++] = "--remote-cache";
    argv[n++] = remote;
    if (remote[0] && f->sign) {
        argv[n++] = "--signing-key";
        argv[n++] = f->sign;
        argv[n++] = "--verify-key";
        argv[n++] = f->verify;
    }
    if (cs->job_timeout_ms > 0) {
        argv[n++] = "--timeout";
        argv[n++] = timeout;
    }
    if (cs->memory_limit) {
        argv[n++] = "--memory-limit";
        argv[n++] = memory;
    }
    argv[n] = NULL;
    pid_t farm_pid = getpid();
    pid_t pid = log_path ? fork() : -1;
    if (pid == 0) {
        /* A farm killed outright (SIGKILL, OOM) cannot stop its workers:
         * the kernel sends them SIGTERM when it dies, the signal with which
         * the farm stops them itself (the running job finishes within the
         * grace period or is handed back).  The setting survives execv; a
         * farm that died before it was made is caught by the check after. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != farm_pid)
            _exit(0);
        /* Workers' logs go to the state directory: the farm's own output
         * stays a summary.  Their own process group keeps a Ctrl-C at the
         * terminal from reaching them: the farm stops them in order. */
        setpgid(0, 0);
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    free(log_path);
    return pid;
}

static int worker_start(farm *f, int slot, cv_diag *d)
{
    pid_t pid = spawn_worker(f, slot);
    if (pid < 0) {
        cv_diag_error(d, CV_E_FARM_WORKERS_FAILED, (cv_span){0}, "cannot start a worker (%s): %s",
                      f->o->worker_exe, strerror(errno));
        return -1;
    }
    f->pids[slot] = pid;
    f->started[slot] = cv_clock_mono_s();
    return 0;
}

static int workers_start(farm *f, cv_diag *d)
{
    f->spawned_sets++;
    for (int i = 0; i < f->o->workers; i++)
        if (worker_start(f, i, d) != 0)
            return -1;
    return 0;
}

/* Reaps workers that ended; returns how many still run. */
static int workers_reap(farm *f, bool block)
{
    int running = 0;
    for (int i = 0; i < f->o->workers; i++) {
        if (f->pids[i] <= 0)
            continue;
        pid_t r = waitpid(f->pids[i], NULL, block ? 0 : WNOHANG);
        if (r == f->pids[i] || (r < 0 && errno == ECHILD))
            f->pids[i] = 0;
        else
            running++;
    }
    return running;
}

/* Waits up to grace_ms for the workers to leave on their own, then asks
 * them to stop (SIGTERM releases a running lease) and waits for them. */
static void workers_stop(farm *f, int grace_ms)
{
    for (int waited = 0; workers_reap(f, false) > 0 && waited < grace_ms;
         waited += FARM_POLL_US / 1000)
        usleep(FARM_POLL_US);
    for (int i = 0; i < f->o->workers; i++)
        if (f->pids[i] > 0)
            kill(f->pids[i], SIGTERM);
    workers_reap(f, true);
}

/* Long-running: a slot whose process ended gets a new one. */
static int workers_keep_alive(farm *f, cv_diag *d)
{
    workers_reap(f, false);
    double now = cv_clock_mono_s();
    for (int i = 0; i < f->o->workers; i++)
        if (f->pids[i] <= 0 && now - f->started[i] >= RESTART_MS / 1000.0 &&
            worker_start(f, i, d) != 0)
            return -1;
    return 0;
}

/* ------------------------------------------------------------ summaries */

int cv_farm_summarise(cv_builddb *db, const char *revision, cv_farm_summary *s, cv_diag *d)
{
    memset(s, 0, sizeof *s);
    cv_rev_summary sum;
    int rc = cv_builddb_revision_summary(db, revision, &sum, d);
    if (rc != 1) {
        if (rc == 0)
            cv_diag_error(d, CV_E_BUILDDB_UNKNOWN_REVISION, (cv_span){0}, "no revision %s in the build DB",
                          revision ? revision : "at all");
        return -1;
    }
    int64_t worker_hits = 0;
    if (cv_sqldb_int(&db->db, d, &worker_hits,
                     "SELECT COUNT(*) FROM jobs j JOIN results r ON r.id = j.result_id "
                     "WHERE j.revision_id = ? AND j.state = 'ok' AND r.l2 IN ('hit', 'remote-hit')",
                     "i", sum.id) < 0)
        return -1;
    int64_t spec_errors = 0;
    if (cv_sqldb_int(&db->db, d, &spec_errors,
                     "SELECT COUNT(*) FROM diagnostics WHERE revision_id = ? AND result_id IS NULL"
                     " AND severity = 'error'", "i", sum.id) < 0)
        return -1;
    snprintf(s->revision, sizeof s->revision, "%s", sum.revision);
    s->spec_errors = spec_errors > 0;
    s->jobs = sum.jobs;
    s->plan_hits = sum.hits;
    s->worker_hits = worker_hits;
    s->compiled = sum.ok - worker_hits;
    s->failed = sum.failed;
    s->pending = sum.pending;
    if (sum.finished_ms)
        s->seconds = (double)(sum.finished_ms - sum.created_ms) / 1000.0;
    return 0;
}

static void report_progress(farm *f, const cv_rev_summary *sum)
{
    if (!f->o->progress)
        return;
    double now = cv_clock_mono_s();
    int64_t done = sum->jobs - sum->pending;
    if (done == f->last_done && now - f->last_progress < PROGRESS_EVERY_S)
        return;
    f->last_done = done;
    f->last_progress = now;
    cv_farm_progress p = {.revision = sum->revision, .jobs = sum->jobs, .done = done,
                          .hits = sum->hits, .failed = sum->failed, .pending = sum->pending,
                          .elapsed_s = now - f->rev_t0};
    f->o->progress(f->o->progress_ctx, &p);
}

/* ------------------------------------------------------------ set-up */

static int farm_open(farm *f, const cv_farm_opts *o, cv_diag *d)
{
    *f = (farm){.o = o};
    if (!o->repo || !o->state_dir || (o->workers && !o->worker_exe) || o->workers < 0 ||
        o->workers > CV_FARM_WORKERS_MAX) {
        cv_diag_error(d, CV_E_FARM_WORKERS_FAILED, (cv_span){0},
                      "a farm needs a repository, a state directory, the worker binary and "
                      "0 to %d workers", CV_FARM_WORKERS_MAX);
        return -1;
    }
    cv_controller_opts co = {.repo = o->repo, .ref = o->ref, .state_dir = o->state_dir,
                             .queue_url = o->queue_url, .interval_ms = o->interval_ms,
                             .lookup = o->lookup, .lookup_ctx = o->lookup_ctx,
                             .lookup_models_dir = o->lookup_models_dir, .policy = &o->policy};
    if (cv_controller_open(&co, &f->ctl, d) != 0)
        return -1;
    /* a shared remote: signed action entries, by default */
    bool remote = (o->policy.remote && *o->policy.remote) || o->policy.n_remotes > 0;
    if (remote && cv_farm_signing_keys(o->state_dir, o->signing_key, o->verify_key, &f->sign,
                                       &f->verify, d) != 0)
        return -1;
    f->scratch = cv_fs_join(o->state_dir, "scratch");
    if (!f->scratch || cv_fs_mkdirs(f->scratch, 0755) != 0) {
        cv_diag_error(d, CV_E_FARM_TREE_WRITE_FAILED, (cv_span){.file = o->state_dir},
                      "cannot create %s/scratch", o->state_dir);
        return -1;
    }
    return 0;
}

static void farm_close(farm *f)
{
    workers_stop(f, 0);
    cv_controller_close(f->ctl);
    free(f->scratch);
    free(f->sign);
    free(f->verify);
}

/* ------------------------------------------------------------ --once */

/* Collects results until the revision has none pending; restarts the
 * workers when they all left early. */
static int build_revision(farm *f, cv_rev_summary *sum, cv_diag *d)
{
    cv_builddb *db = cv_controller_db(f->ctl);
    for (;;) {
        cv_step_report r;
        if (cv_controller_step(f->ctl, false, &r, d) != 0)
            return -1;
        if (cv_builddb_revision_summary(db, f->revision, sum, d) != 1)
            return -1;
        report_progress(f, sum);
        if (sum->pending == 0)
            return 0;
        if (f->o->workers && workers_reap(f, false) == 0) {
            if (f->spawned_sets > FARM_RESPAWNS) {
                cv_diag_error(d, CV_E_FARM_WORKERS_FAILED, (cv_span){0},
                              "the workers stopped with %lld jobs of %s without a result "
                              "(see %s/worker-*.log)",
                              (long long)sum->pending, f->revision, f->o->state_dir);
                return -1;
            }
            if (workers_start(f, d) != 0)
                return -1;
        }
        if (f->o->stop && *f->o->stop)
            return 0;
        usleep(FARM_POLL_US);
    }
}

int cv_farm_once(const cv_farm_opts *o, cv_farm_summary *s, cv_diag *d)
{
    memset(s, 0, sizeof *s);
    double t0 = cv_clock_mono_s();
    farm f;
    int rc = farm_open(&f, o, d);
    cv_step_report r = {0};
    if (rc == 0)
        rc = cv_controller_step(f.ctl, true, &r, d);
    if (rc == 0 && r.source_failed) {
        cv_diag_error(d, CV_E_GIT_FETCH_FAILED, (cv_span){0}, "%s", r.source_error);
        rc = -1;
    }
    snprintf(f.revision, sizeof f.revision, "%s", r.revision);
    f.rev_t0 = t0;
    cv_rev_summary sum = {0};
    if (rc == 0 && cv_builddb_revision_summary(cv_controller_db(f.ctl), f.revision, &sum, d) != 1)
        rc = -1;
    if (rc == 0 && sum.pending > 0) {
        f.last_done = -1;
        report_progress(&f, &sum);
        if (o->workers)
            rc = workers_start(&f, d);
        if (rc == 0)
            rc = build_revision(&f, &sum, d);
    }
    if (f.ctl)
        workers_stop(&f, 0);
    if (rc == 0)
        rc = cv_farm_summarise(cv_controller_db(f.ctl), f.revision, s, d);
    if (f.ctl)
        farm_close(&f);
    else
        free(f.scratch);
    s->seconds = cv_clock_mono_s() - t0;
    return rc;
}

/* ------------------------------------------------------------ long-running */

/* Follows the newest planned revision; reports it once when it is built. */
static int follow_revision(farm *f, const cv_step_report *r,
                           void (*on_built)(void *, const cv_farm_summary *), void *ctx,
                           cv_diag *d)
{
    if (r->planned) {
        snprintf(f->revision, sizeof f->revision, "%s", r->revision);
        f->rev_t0 = cv_clock_mono_s();
        f->last_done = -1;
    }
    if (!f->revision[0])
        return 0;
    cv_rev_summary sum;
    if (cv_builddb_revision_summary(cv_controller_db(f->ctl), f->revision, &sum, d) != 1)
        return -1;
    report_progress(f, &sum);
    if (sum.pending)
        return 0;
    cv_farm_summary s;
    if (cv_farm_summarise(cv_controller_db(f->ctl), f->revision, &s, d) != 0)
        return -1;
    s.seconds = cv_clock_mono_s() - f->rev_t0;
    if (on_built)
        on_built(ctx, &s);
    f->revision[0] = '\0';
    return 0;
}

int cv_farm_run(const cv_farm_opts *o, void (*on_built)(void *ctx, const cv_farm_summary *s),
                void *ctx, cv_diag *d)
{
    farm f;
    int rc = farm_open(&f, o, d);
    bool first = true;
    while (rc == 0 && !(o->stop && *o->stop)) {
        cv_step_report r;
        rc = cv_controller_step(f.ctl, first, &r, d);
        if (rc == 0 && r.source_failed)
            cv_diag_add(d, CV_SEV_WARNING, CV_E_GIT_FETCH_FAILED, (cv_span){0}, NULL,
                        "the source failed (retrying with back-off): %s", r.source_error);
        first = false;
        if (rc == 0)
            rc = follow_revision(&f, &r, on_built, ctx, d);
        if (rc == 0 && o->workers)
            rc = workers_keep_alive(&f, d);
        if (rc == 0 && !r.results && !r.planned)
            usleep(FARM_POLL_US * 4);
    }
    if (f.ctl)
        farm_close(&f);
    else
        free(f.scratch);
    return rc;
}
