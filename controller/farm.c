/* `cuvil farm up --once`: one revision, built by local worker processes.
 *
 * The workers read models from files, and the git source reads trees
 * without a checkout, so the revision's files are written once under
 * state/trees/<commit>/ (a marker file says the copy is complete).  The
 * workers are `cuvil worker --once` processes: all jobs are queued before
 * they start, so a worker that finds the queue empty has nothing left to
 * do.  Should they all stop with jobs still pending (a worker killed, a
 * lease that expired after they left), a fresh set is started, a bounded
 * number of times. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fs.h"
#include "controller/builddb_internal.h"

enum { CV_E_FARM_WORKERS = 6100, CV_E_FARM_TREE = 6101 };

#define FARM_MAX_BLOB ((size_t)2 << 30)
#define FARM_POLL_US 50000
#define FARM_RESPAWNS 2            /* fresh worker sets after the first */
#define FARM_STOP_GRACE_MS 30000   /* workers still running after the last result */
#define TREE_MARKER ".cuvil-tree-complete"

typedef struct farm {
    const cv_farm_opts *o;
    char *tree_dir;         /* owned: state/trees/<commit> */
    char *queue_url;        /* owned: sqlite:state/queue.db */
    char *scratch;          /* owned */
    cv_gitsource *src;      /* owned */
    cv_tree *tree;          /* owned */
    cv_builddb *db;         /* owned */
    cv_queue *q;            /* owned */
    pid_t pids[CV_FARM_WORKERS_MAX];
    int n_pids, spawned_sets;
} farm;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *path_fmt(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s", a, b);
    return p;
}

static int oom(cv_diag *d)
{
    cv_diag_error(d, CV_E_OOM, (cv_span){0}, "out of memory");
    return -1;
}

static int fs_error(cv_diag *d, const char *path, const char *what)
{
    cv_diag_error(d, CV_E_FARM_TREE, (cv_span){.file = path}, "cannot %s %s: %s", what, path,
                  strerror(errno));
    return -1;
}

/* ------------------------------------------------------------ the tree */

static int tree_write_entry(const farm *f, const cv_tree_entry *e, cv_diag *d)
{
    char *path = NULL, *data = NULL;
    size_t len = 0;
    int rc = cv_fs_resolve_inside(f->tree_dir, e->path, &path, d);
    if (rc == 0)
        rc = cv_tree_read(f->tree, e, FARM_MAX_BLOB, &data, &len, d);
    char *dir = rc == 0 ? cv_fs_dirname(path) : NULL;
    if (rc == 0 && !dir)
        rc = oom(d);
    if (rc == 0 && cv_fs_mkdirs(dir, 0755) != 0)
        rc = fs_error(d, dir, "create");
    if (rc == 0)
        rc = cv_fs_write_atomic(path, data, len, d);
    free(dir);
    free(data);
    free(path);
    return rc;
}

/* Writes every file of the tree under tree_dir, unless an earlier run did. */
static int tree_materialise(farm *f, cv_diag *d)
{
    char *marker = cv_fs_join(f->tree_dir, TREE_MARKER);
    if (!marker)
        return oom(d);
    int rc = 0;
    if (access(marker, F_OK) != 0) {
        if (cv_fs_mkdirs(f->tree_dir, 0755) != 0)
            rc = fs_error(d, f->tree_dir, "create");
        for (size_t i = 0; rc == 0 && i < cv_tree_count(f->tree); i++)
            rc = tree_write_entry(f, cv_tree_at(f->tree, i), d);
        if (rc == 0)
            rc = cv_fs_write_atomic(marker, "", 0, d);
    }
    free(marker);
    return rc;
}

/* ------------------------------------------------------------ workers */

static pid_t spawn_worker(const farm *f, int i)
{
    char id[64], log_name[64];
    snprintf(id, sizeof id, "farm-%d-%d", (int)getpid(), i);
    snprintf(log_name, sizeof log_name, "/worker-%d.log", i);
    char *log_path = path_fmt(f->o->state_dir, log_name);
    const char *argv[24];
    int n = 0;
    argv[n++] = f->o->worker_exe;
    argv[n++] = "worker";
    argv[n++] = "--queue";   argv[n++] = f->queue_url;
    argv[n++] = "--models";  argv[n++] = f->tree_dir;
    argv[n++] = "--scratch"; argv[n++] = f->scratch;
    argv[n++] = "--id";      argv[n++] = id;
    argv[n++] = "--poll-ms"; argv[n++] = "200";
    argv[n++] = "--once";
    if (f->o->cache_dir) {
        argv[n++] = "--cache";
        argv[n++] = f->o->cache_dir;
    }
    argv[n] = NULL;
    pid_t pid = log_path ? fork() : -1;
    if (pid == 0) {
        /* Workers' logs go to the state directory: the farm's own output
         * stays a summary. */
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

static int workers_start(farm *f, cv_diag *d)
{
    f->spawned_sets++;
    for (int i = 0; i < f->o->workers; i++) {
        pid_t pid = spawn_worker(f, f->n_pids);
        if (pid < 0) {
            cv_diag_error(d, CV_E_FARM_WORKERS, (cv_span){0}, "cannot start a worker (%s): %s",
                          f->o->worker_exe, strerror(errno));
            return -1;
        }
        f->pids[f->n_pids++] = pid;
    }
    return 0;
}

/* Reaps workers that ended; returns how many still run. */
static int workers_reap(farm *f, bool block)
{
    int running = 0;
    for (int i = 0; i < f->n_pids; i++) {
        if (f->pids[i] <= 0)
            continue;
        pid_t r = waitpid(f->pids[i], NULL, block ? 0 : WNOHANG);
        if (r == f->pids[i] || (r < 0 && errno == ECHILD))
            f->pids[i] = 0;
        else
            running++;
    }
    if (running == 0)
        f->n_pids = 0;
    return running;
}

/* Waits up to grace_ms for the workers to leave on their own, then asks
 * them to stop (SIGTERM releases a running lease) and waits for them. */
static void workers_stop(farm *f, int grace_ms)
{
    for (int waited = 0; workers_reap(f, false) > 0 && waited < grace_ms;
         waited += FARM_POLL_US / 1000)
        usleep(FARM_POLL_US);
    for (int i = 0; i < f->n_pids; i++)
        if (f->pids[i] > 0)
            kill(f->pids[i], SIGTERM);
    workers_reap(f, true);
}

/* ------------------------------------------------------------ the run */

static int open_all(farm *f, cv_diag *d)
{
    const cv_farm_opts *o = f->o;
    if (cv_fs_mkdirs(o->state_dir, 0755) != 0)
        return fs_error(d, o->state_dir, "create");
    f->queue_url = path_fmt("sqlite:", o->state_dir);
    char *qurl = f->queue_url ? path_fmt(f->queue_url, "/queue.db") : NULL;
    free(f->queue_url);
    f->queue_url = qurl;
    f->scratch = cv_fs_join(o->state_dir, "scratch");
    char *db_path = cv_fs_join(o->state_dir, "build.db");
    if (!f->queue_url || !f->scratch || !db_path) {
        free(db_path);
        return oom(d);
    }
    cv_gitsource_opts go = {.url = o->repo, .ref = o->ref, .state_dir = o->state_dir};
    int rc = cv_gitsource_open(&go, &f->src, d);
    if (rc == 0)
        rc = cv_builddb_open(db_path, &f->db, d);
    free(db_path);
    cv_queue_opts qo = {0};
    if (rc == 0)
        rc = cv_queue_open(f->queue_url, &qo, &f->q, d);
    if (rc == 0 && cv_fs_mkdirs(f->scratch, 0755) != 0)
        rc = fs_error(d, f->scratch, "create");
    return rc;
}

/* Polls the source, reads the head's tree and writes its files out. */
static int checkout_head(farm *f, cv_farm_summary *s, cv_diag *d)
{
    if (cv_gitsource_poll(f->src, true, d) < 0)
        return -1;
    cv_gitsource_status st;
    cv_gitsource_status_get(f->src, &st);
    snprintf(s->revision, sizeof s->revision, "%s", st.revision);
    if (cv_builddb_source_status_put(f->db, &st, cv_ctl_now_ms(NULL, NULL), d) != 0)
        return -1;
    if (cv_gitsource_tree(f->src, st.commit, &f->tree, d) != 0)
        return -1;
    char *trees = cv_fs_join(f->o->state_dir, "trees");
    f->tree_dir = trees ? cv_fs_join(trees, st.commit) : NULL;
    free(trees);
    if (!f->tree_dir)
        return oom(d);
    return tree_materialise(f, d);
}

/* Jobs of the revision that were queued and then hit L2 in the worker. */
static int count_worker_hits(farm *f, int64_t rev_id, int64_t *out, cv_diag *d)
{
    int rc = cv_db_int(&f->db->db, d, out,
                       "SELECT COUNT(*) FROM jobs j JOIN results r ON r.id = j.result_id "
                       "WHERE j.revision_id = ? AND j.state = 'ok' "
                       "AND r.l2 IN ('hit', 'remote-hit')",
                       "i", rev_id);
    return rc < 0 ? -1 : 0;
}

/* Collects results until the revision has none pending; restarts the
 * workers when they all left early. */
static int build_revision(farm *f, const cv_planner_opts *po, const char *revision,
                          cv_rev_summary *sum, cv_diag *d)
{
    for (;;) {
        if (cv_planner_collect(po, NULL, d) != 0)
            return -1;
        if (cv_builddb_revision_summary(f->db, revision, sum, d) != 1)
            return -1;
        if (sum->pending == 0)
            return 0;
        if (workers_reap(f, false) == 0) {
            if (f->spawned_sets > FARM_RESPAWNS) {
                cv_diag_error(d, CV_E_FARM_WORKERS, (cv_span){0},
                              "the workers stopped with %lld jobs of %s without a result "
                              "(see %s/worker-*.log)",
                              (long long)sum->pending, revision, f->o->state_dir);
                return -1;
            }
            if (workers_start(f, d) != 0)
                return -1;
        }
        usleep(FARM_POLL_US);
    }
}

static int plan_and_build(farm *f, cv_farm_summary *s, cv_diag *d)
{
    const cv_farm_opts *o = f->o;
    if (o->lookup_models_dir)
        o->lookup_models_dir(o->lookup_ctx, f->tree_dir);
    cv_planner_opts po = {.db = f->db, .queue = f->q, .lookup = o->lookup,
                          .lookup_ctx = o->lookup_ctx};
    cv_plan_report r;
    if (cv_planner_plan(&po, f->tree, s->revision, &r, d) != 0)
        return -1;
    s->spec_errors = r.spec_errors;
    cv_rev_summary sum = {0};
    if (cv_builddb_revision_summary(f->db, s->revision, &sum, d) != 1)
        return -1;
    int rc = 0;
    if (sum.pending > 0) {
        rc = workers_start(f, d);
        if (rc == 0)
            rc = build_revision(f, &po, s->revision, &sum, d);
    }
    workers_stop(f, rc == 0 ? FARM_STOP_GRACE_MS : 0);
    int64_t worker_hits = 0;
    if (rc == 0)
        rc = count_worker_hits(f, sum.id, &worker_hits, d);
    s->jobs = sum.jobs;
    s->plan_hits = sum.hits;
    s->worker_hits = worker_hits;
    s->compiled = sum.ok - worker_hits;
    s->failed = sum.failed;
    s->pending = sum.pending;
    return rc;
}

static void farm_close(farm *f)
{
    if (f->n_pids)
        workers_stop(f, 0);
    cv_tree_free(f->tree);
    cv_queue_close(f->q);
    cv_builddb_close(f->db);
    cv_gitsource_close(f->src);
    free(f->tree_dir);
    free(f->queue_url);
    free(f->scratch);
}

int cv_farm_once(const cv_farm_opts *o, cv_farm_summary *s, cv_diag *d)
{
    memset(s, 0, sizeof *s);
    double t0 = mono_s();
    if (!o->repo || !o->state_dir || !o->worker_exe || o->workers < 1 ||
        o->workers > CV_FARM_WORKERS_MAX) {
        cv_diag_error(d, CV_E_FARM_WORKERS, (cv_span){0},
                      "a farm needs a repository, a state directory, the worker binary and "
                      "1 to %d workers", CV_FARM_WORKERS_MAX);
        return -1;
    }
    farm f = {.o = o};
    int rc = open_all(&f, d);
    if (rc == 0)
        rc = checkout_head(&f, s, d);
    if (rc == 0)
        rc = plan_and_build(&f, s, d);
    farm_close(&f);
    s->seconds = mono_s() - t0;
    return rc;
}
