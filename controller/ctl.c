/* The controller loop: source -> planner -> queue, results -> build DB.
 *
 * One step does everything that is due, and nothing blocks for long, so
 * `cuvil controller`, `cuvil farm up` and `farm up --once` drive the same
 * object at their own pace.  The head is planned whenever it differs from
 * the last one planned (a restart re-plans nothing: the build DB knows the
 * revision).  Build requests (`cuvil submit`) force a poll that ignores the
 * source's back-off; every open request is answered by that one poll. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fs.h"
#include "controller/ctl_internal.h"

#define DEFAULT_INTERVAL_MS 60000
#define HEARTBEAT_EVERY_MS 1000

struct cv_controller {
    cv_controller_opts o;       /* strings borrowed from the caller */
    char *queue_url, *trees_dir;   /* owned */
    cv_gitsource *src;          /* owned */
    cv_builddb *db;             /* owned */
    cv_queue *q;                /* owned */
    char head_commit[CV_GIT_HEX + 1];    /* the last head planned */
    char head_revision[CV_REVISION_MAX + 1];
    int64_t interval_ms, next_poll_ms, started_ms, heartbeat_ms;
    cv_cluster_settings cluster;   /* the policy applied to the last head read */
};

static int oom(cv_diag *d)
{
    cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    return -1;
}

static int64_t now_ms(const cv_controller *c)
{
    return cv_ctl_now_ms(c->o.now_ms, c->o.clock_ctx);
}

static int heartbeat(cv_controller *c, int64_t now, bool stopped, cv_diag *d);

cv_builddb *cv_controller_db(cv_controller *c) { return c->db; }
const char *cv_controller_queue_url(const cv_controller *c) { return c->queue_url; }
const char *cv_controller_trees_dir(const cv_controller *c) { return c->trees_dir; }

int64_t cv_controller_idle_ms(const cv_controller *c)
{
    int64_t left = c->next_poll_ms - now_ms(c);
    return left > 0 ? left : 0;
}

/* ---- the cluster spec */

const cv_cluster_settings *cv_controller_cluster(const cv_controller *c) { return &c->cluster; }

/* The tree's cluster spec within the operator's policy (spec errors and
 * refused requests are the planner's to report). */
static void read_cluster(cv_controller *c, const cv_gitsource_tree *tree)
{
    cv_spec_set *s = cv_spec_set_new();
    cv_diag quiet;
    cv_diag_init(&quiet);
    if (s)
        cv_planner_load_specs(tree, s, &quiet);
    cv_cluster_apply(s ? cv_spec_set_cluster(s) : NULL, c->o.policy, &c->cluster, NULL);
    if (c->o.interval_ms <= 0)
        c->interval_ms = c->cluster.interval_ms > 0 ? c->cluster.interval_ms : DEFAULT_INTERVAL_MS;
    cv_diag_free(&quiet);
    cv_spec_set_free(s);
}

static char *default_queue_url(const char *state_dir)
{
    size_t n = strlen(state_dir) + sizeof "sqlite:/queue.db";
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "sqlite:%s/queue.db", state_dir);
    return url;
}

int cv_controller_open(const cv_controller_opts *o, cv_controller **out, cv_diag *d)
{
    *out = NULL;
    if (!o->repo || !o->state_dir) {
        cv_diag_error(d, CV_E_FARM_WORKERS_FAILED, (cv_span){0},
                      "a controller needs a repository and a state directory");
        return -1;
    }
    if (cv_fs_mkdirs(o->state_dir, 0755) != 0) {
        cv_diag_error(d, CV_E_FARM_TREE_WRITE_FAILED, (cv_span){.file = o->state_dir},
                      "cannot create the state directory %s", o->state_dir);
        return -1;
    }
    cv_controller *c = calloc(1, sizeof *c);
    if (!c)
        return oom(d);
    c->o = *o;
    c->interval_ms = o->interval_ms > 0 ? o->interval_ms : DEFAULT_INTERVAL_MS;
    c->trees_dir = cv_fs_join(o->state_dir, "trees");
    char *db_path = cv_fs_join(o->state_dir, "build.db");
    int rc = c->trees_dir && db_path ? 0 : oom(d);
    cv_gitsource_opts go = {.url = o->repo, .ref = o->ref, .state_dir = o->state_dir,
                            .now_ms = o->now_ms, .clock_ctx = o->clock_ctx,
                            .max_tree_entries = o->max_tree_entries};
    if (rc == 0)
        rc = cv_gitsource_open(&go, &c->src, d);
    if (rc == 0)
        rc = cv_builddb_open(db_path, &c->db, d);
    /* the operator's values until a head is read */
    cv_cluster_apply(NULL, o->policy, &c->cluster, NULL);
    if (rc == 0) {   /* the operator's queue only: a spec's brokers are refused (CV6161) */
        c->queue_url = o->queue_url ? strdup(o->queue_url) : default_queue_url(o->state_dir);
        rc = c->queue_url ? 0 : oom(d);
    }
    cv_queue_opts qo = {.now_ms = o->now_ms, .clock_ctx = o->clock_ctx};
    if (rc == 0)
        rc = cv_queue_open(c->queue_url, &qo, &c->q, d);
    free(db_path);
    if (rc) {
        cv_controller_close(c);
        return -1;
    }
    c->started_ms = now_ms(c);
    *out = c;
    return 0;
}

void cv_controller_close(cv_controller *c)
{
    if (!c)
        return;
    if (c->db && c->heartbeat_ms) {
        cv_diag quiet;
        cv_diag_init(&quiet);
        heartbeat(c, now_ms(c), true, &quiet);
        cv_diag_free(&quiet);
    }
    cv_queue_close(c->q);
    cv_builddb_close(c->db);
    cv_gitsource_close(c->src);
    free(c->queue_url);
    free(c->trees_dir);
    free(c);
}

/* ---- the steps */

/* stopped: the last word of a controller that closes (stoppedMs != 0). */
static int heartbeat(cv_controller *c, int64_t now, bool stopped, cv_diag *d)
{
    if (!stopped && now - c->heartbeat_ms < HEARTBEAT_EVERY_MS)
        return 0;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "pid", (int)getpid(),
                          "host", host, "repo", c->o.repo, "ref", c->o.ref ? c->o.ref : "main",
                          "queue", c->queue_url, "startedMs", (json_int_t)c->started_ms,
                          "heartbeatMs", (json_int_t)now, "stoppedMs",
                          (json_int_t)(stopped ? now : 0));
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text)
        return oom(d);
    int rc = cv_builddb_status_set(c->db, CV_STATUS_CONTROLLER, text, now, d);
    free(text);
    if (rc == 0)
        c->heartbeat_ms = now;
    return rc;
}

/* Whether trouble reading a revision's tree is the farm's own (memory),
 * not the revision's: anything else in it would stop every restart again
 * at the same head, so it fails the revision instead. */
static bool farm_trouble(const cv_diag *why)
{
    for (int i = 1; i <= why->n; i++)
        if (cv_diag_get(why, i)->code == CV_E_OUT_OF_MEMORY)
            return true;
    return false;
}

static int plan_head(cv_controller *c, const cv_gitsource_status *st, cv_step_report *r,
                     cv_diag *d)
{
    cv_gitsource_tree *tree = NULL;
    cv_diag content;   /* about the revision's content: stored with it */
    cv_diag_init(&content);
    size_t max_blob = c->o.max_blob_bytes ? c->o.max_blob_bytes : CV_GIT_BLOB_MAX;
    cv_planner_opts po = {.db = c->db, .queue = c->q, .lookup = c->o.lookup,
                          .lookup_ctx = c->o.lookup_ctx, .now_ms = c->o.now_ms,
                          .clock_ctx = c->o.clock_ctx, .max_model_bytes = max_blob,
                          .tree_diags = &content, .policy = c->o.policy};
    char *dir = cv_fs_join(c->trees_dir, st->commit);
    int rc = dir ? 0 : oom(d);
    if (rc == 0 && cv_gitsource_tree_open(c->src, st->commit, &tree, &content) != 0) {
        rc = farm_trouble(&content) ? -1
             : cv_planner_fail(&po, st->revision, &content, &r->plan, d);
        cv_diag_merge(d, &content);
    } else if (rc == 0) {
        rc = cv_ctl_tree_write(tree, dir, max_blob, &content, d);
        if (rc == 0 && c->o.lookup_models_dir)
            c->o.lookup_models_dir(c->o.lookup_ctx, dir);
        if (rc == 0)
            rc = cv_planner_plan(&po, tree, st->revision, &r->plan, d);
        if (rc == 0)
            read_cluster(c, tree);
    }
    if (rc == 0) {
        r->planned = !r->plan.already_planned;
        memcpy(c->head_commit, st->commit, sizeof c->head_commit);
        snprintf(c->head_revision, sizeof c->head_revision, "%s", st->revision);
    }
    cv_diag_free(&content);
    cv_gitsource_tree_free(tree);
    free(dir);
    return rc;
}

/* Polls the source; plans the head when it is not the one planned last.
 * A source failure is recorded in the status and in *why. */
static int poll_and_plan(cv_controller *c, bool force, cv_step_report *r, cv_diag *d)
{
    int64_t now = now_ms(c);
    c->next_poll_ms = now + c->interval_ms;
    cv_diag sd;
    cv_diag_init(&sd);
    int polled = cv_gitsource_poll(c->src, force, &sd);
    r->polled = polled != CV_GIT_POLL_BACKOFF;
    cv_gitsource_status st;
    cv_gitsource_status_get(c->src, &st);
    int rc = cv_builddb_source_status_put(c->db, &st, now, d);
    if (polled < 0) {
        r->source_failed = true;
        snprintf(r->source_error, sizeof r->source_error, "%s", st.last_error);
    }
    cv_diag_free(&sd);
    if (rc == 0 && polled >= 0 && st.commit[0] && strcmp(st.commit, c->head_commit) != 0) {
        rc = plan_head(c, &st, r, d);
        c->next_poll_ms = now + c->interval_ms;   /* the head's spec may set the interval */
    }
    return rc;
}

static int handle_requests(cv_controller *c, bool force, cv_step_report *r, cv_diag *d)
{
    cv_build_request req;
    int found = cv_builddb_request_next(c->db, &req, d);
    if (found < 0)
        return -1;
    if (!force && !found && now_ms(c) < c->next_poll_ms)
        return 0;
    if (poll_and_plan(c, force || found, r, d) != 0)
        return -1;
    if (!found)
        return 0;
    /* this poll answers every request made before it started: up to the
     * newest one open then */
    const char *why = r->source_failed ? r->source_error : NULL;
    int n = cv_builddb_request_done(c->db, req.id, why ? NULL : c->head_revision, why, now_ms(c),
                                    d);
    if (n < 0)
        return -1;
    r->requests = n;
    return 0;
}

int cv_controller_step(cv_controller *c, bool force_poll, cv_step_report *r, cv_diag *d)
{
    memset(r, 0, sizeof *r);
    if (handle_requests(c, force_poll, r, d) != 0)
        return -1;
    cv_planner_opts po = {.db = c->db, .queue = c->q, .now_ms = c->o.now_ms,
                          .clock_ctx = c->o.clock_ctx};
    if (cv_planner_collect(&po, &r->results, d) != 0)
        return -1;
    if (r->results || r->planned) {
        int removed;
        if (cv_ctl_trees_gc(c->db, c->trees_dir, c->head_commit[0] ? c->head_commit : NULL,
                            &removed, d) != 0)
            return -1;
    }
    snprintf(r->revision, sizeof r->revision, "%s", c->head_revision);
    return heartbeat(c, now_ms(c), false, d);
}
