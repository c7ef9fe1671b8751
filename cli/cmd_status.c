/* cuvil status [REVISION] [--state DIR] [--json]
 * What the farm is doing: the controller's heartbeat, the source (fetch
 * failures and back-off), last attempted and last succeeded revisions, and
 * one revision's jobs with the failures and their first errors. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/farm_report.h"

extern const cv_cli_command cv_cmd_status;

#define CONTROLLER_STALE_MS 15000
#define RECENT_REVISIONS 10

typedef struct status_args {
    const char *state, *revision;
    bool json;
} status_args;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A farm_status value holding JSON; NULL when unset or unreadable. */
static json_t *status_json(cv_builddb *db, const char *key, cv_diag *d)
{
    char *text = NULL;
    if (cv_builddb_status_get(db, key, &text, d) != 1)
        return NULL;
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    return j;
}

static bool controller_alive(const json_t *ctl)
{
    json_int_t hb = json_integer_value(json_object_get(ctl, "heartbeatMs"));
    return !json_integer_value(json_object_get(ctl, "stoppedMs")) &&
           wall_ms() - hb < CONTROLLER_STALE_MS;
}

static json_t *status_string(cv_builddb *db, const char *key, cv_diag *d)
{
    char *text = NULL;
    json_t *j = cv_builddb_status_get(db, key, &text, d) == 1 ? json_string(text) : json_null();
    free(text);
    return j;
}

static json_t *summary_json(const cv_rev_summary *s)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "revision", s->revision,
                     "state", cv_rev_state_name(s->state), "createdMs", (json_int_t)s->created_ms,
                     "finishedMs", (json_int_t)s->finished_ms, "jobs", (json_int_t)s->jobs,
                     "hits", (json_int_t)s->hits, "ok", (json_int_t)s->ok, "failed",
                     (json_int_t)s->failed, "pending", (json_int_t)s->pending);
}

typedef struct jobs_ctx {
    cv_builddb *db;
    json_t *arr;
    int rc;
} jobs_ctx;

static int job_to_json(void *ctx, const cv_job_row *row)
{
    jobs_ctx *j = ctx;
    cv_diag dg, tmp;
    cv_diag_init(&dg);
    cv_diag_init(&tmp);
    if (row->result_id && cv_builddb_diags_load(j->db, 0, row->result_id, &dg, &tmp) != 0)
        j->rc = -1;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:o}",
                          "l2", row->l2[0] ? row->l2 : row->state, "job",
                          row->job_id, "pipeline", row->pipeline, "model", row->model_path,
                          "target", row->target, "precision", row->precision, "opt",
                          row->opt_level, "state", row->state, "attempts", row->attempts,
                          "queuedMs", (json_int_t)row->queued_ms, "finishedMs",
                          (json_int_t)row->finished_ms, "diagnostics", cv_diag_to_json(&dg));
    json_array_append_new(j->arr, o);
    cv_diag_free(&dg);
    cv_diag_free(&tmp);
    return 0;
}

static json_t *revision_json(cv_builddb *db, const cv_rev_summary *s, cv_diag *d)
{
    json_t *o = summary_json(s);
    jobs_ctx j = {.db = db, .arr = json_array()};
    if (cv_builddb_jobs_visit(db, s->id, false, job_to_json, &j, d) != 0 || j.rc)
        cv_diag_error(d, 6072, (cv_span){0}, "cannot read the jobs of %s", s->revision);
    json_object_set_new(o, "jobsList", j.arr);
    cv_diag rd;
    cv_diag_init(&rd);
    cv_builddb_diags_load(db, s->id, 0, &rd, d);
    json_object_set_new(o, "diagnostics", cv_diag_to_json(&rd));
    cv_diag_free(&rd);
    return o;
}

static json_t *status_to_json(cv_builddb *db, const cv_rev_summary *rev, cv_diag *d)
{
    json_t *ctl = status_json(db, CV_STATUS_CONTROLLER, d);
    if (ctl) {
        json_object_set_new(ctl, "alive", json_boolean(controller_alive(ctl)));
    }
    json_t *src = status_json(db, CV_STATUS_SOURCE, d);
    json_t *recent = json_array();
    cv_rev_summary list[RECENT_REVISIONS];
    int n = 0;
    cv_builddb_revisions_list(db, list, RECENT_REVISIONS, &n, d);
    for (int i = 0; i < n; i++)
        json_array_append_new(recent, summary_json(&list[i]));
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "controller", ctl ? ctl : json_null(),
                     "source", src ? src : json_null(), "lastAttemptedRevision",
                     status_string(db, CV_STATUS_LAST_ATTEMPTED, d), "lastSucceededRevision",
                     status_string(db, CV_STATUS_LAST_SUCCEEDED, d), "revision",
                     rev ? revision_json(db, rev, d) : json_null(), "revisions", recent);
}

static void print_ago(const char *label, int64_t ms)
{
    if (ms <= 0)
        printf("%s never", label);
    else
        printf("%s %.1fs ago", label, (double)(wall_ms() - ms) / 1000.0);
}

static void print_controller_and_source(cv_builddb *db, cv_diag *d)
{
    json_t *ctl = status_json(db, CV_STATUS_CONTROLLER, d);
    if (!ctl) {
        printf("controller  never started here\n");
    } else {
        json_int_t hb = json_integer_value(json_object_get(ctl, "heartbeatMs"));
        json_int_t stopped = json_integer_value(json_object_get(ctl, "stoppedMs"));
        printf("controller  %s (pid %lld on %s, ",
               controller_alive(ctl) ? "running" : stopped ? "stopped" : "not responding",
               (long long)json_integer_value(json_object_get(ctl, "pid")),
               json_string_value(json_object_get(ctl, "host")));
        print_ago(stopped ? "stopped" : "heartbeat", stopped ? stopped : hb);
        printf(")\n            %s %s, queue %s\n", json_string_value(json_object_get(ctl, "repo")),
               json_string_value(json_object_get(ctl, "ref")),
               json_string_value(json_object_get(ctl, "queue")));
    }
    json_decref(ctl);
    json_t *src = status_json(db, CV_STATUS_SOURCE, d);
    if (src) {
        json_int_t failures = json_integer_value(json_object_get(src, "failures"));
        print_ago("source      last poll", json_integer_value(json_object_get(src, "lastPollMs")));
        if (failures)
            printf(", %lld failures in a row, next attempt in %.0fs: %s", (long long)failures,
                   (double)(json_integer_value(json_object_get(src, "nextAttemptMs")) -
                            wall_ms()) / 1000.0,
                   json_string_value(json_object_get(src, "lastError")));
        else
            printf(", ok");
        printf("\n");
    }
    json_decref(src);
    char *v = NULL;
    if (cv_builddb_status_get(db, CV_STATUS_LAST_ATTEMPTED, &v, d) == 1)
        printf("last attempted  %s\n", v);
    free(v);
    v = NULL;
    if (cv_builddb_status_get(db, CV_STATUS_LAST_SUCCEEDED, &v, d) == 1)
        printf("last succeeded  %s\n", v);
    free(v);
}

static void print_revision(cv_builddb *db, const cv_rev_summary *s, cv_diag *d)
{
    printf("\nrevision    %s  %s\n", s->revision, cv_rev_state_name(s->state));
    printf("jobs        %lld: %lld hits, %lld ok, %lld failed, %lld pending\n",
           (long long)s->jobs, (long long)s->hits, (long long)s->ok, (long long)s->failed,
           (long long)s->pending);
    if (s->finished_ms)
        printf("time        %.2f s\n", (double)(s->finished_ms - s->created_ms) / 1000.0);
    cv_diag rd;
    cv_diag_init(&rd);
    cv_builddb_diags_load(db, s->id, 0, &rd, d);
    if (rd.n) {
        printf("revision diagnostics:\n");
        cv_diag_print(&rd, stdout, false);
    }
    cv_diag_free(&rd);
    if (s->failed) {
        printf("failed jobs:\n");
        cv_cli_print_failures(stdout, db, s->id, 50, d);
    }
}

static int parse_args(int argc, char **argv, status_args *a)
{
    *a = (status_args){.state = cv_cli_default_state()};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            a->json = true;
        } else if (strcmp(argv[i], "--state") == 0) {
            if (i + 1 >= argc)
                return cv_cli_usage_error(&cv_cmd_status, "--state needs a value");
            a->state = argv[++i];
        } else if (argv[i][0] == '-' || a->revision) {
            return cv_cli_usage_error(&cv_cmd_status, "unexpected argument '%s'", argv[i]);
        } else {
            a->revision = argv[i];
        }
    }
    return CV_EXIT_OK;
}

static int run_status(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_status, argc, argv))
        return CV_EXIT_OK;
    status_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    cv_builddb *db = NULL;
    char name[CV_REVISION_MAX + 1] = "";
    cv_rev_summary rev;
    int found = cv_cli_open_builddb(a.state, &db, &d) == 0
                    ? cv_builddb_revision_resolve(db, a.revision ? a.revision : "latest", name, &d)
                    : -1;
    if (found == 1 && cv_builddb_revision_summary(db, name, &rev, &d) != 1)
        found = -1;
    if (found == 0 && a.revision) {
        cv_diag_error(&d, 6075, (cv_span){0}, "no revision '%s' in %s", a.revision, a.state);
        found = -1;
    }
    if (found >= 0 && a.json) {
        json_t *o = status_to_json(db, found == 1 ? &rev : NULL, &d);
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(o);
    } else if (found >= 0) {
        print_controller_and_source(db, &d);
        if (found == 1)
            print_revision(db, &rev, &d);
        else
            printf("\nno revision planned yet\n");
    }
    cv_builddb_close(db);
    bool errors = cv_diag_has_errors(&d);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    return found < 0 ? CV_EXIT_INPUT : errors ? CV_EXIT_INTERNAL : CV_EXIT_OK;
}

const cv_cli_command cv_cmd_status = {
    "status", "show what the farm is building and what failed",
    "cuvil status [REVISION] [--state DIR] [--json]\n"
    "  REVISION     ref@sha1:COMMIT, a commit id or a prefix of one (4+ hex digits), or\n"
    "               latest (default)\n"
    "  --state DIR  the farm's state directory (default $CUVIL_FARM_STATE or .cuvil-farm)\n"
    "  --json       everything as one JSON object: controller, source, last attempted\n"
    "               and succeeded revisions, the revision with every job and its\n"
    "               diagnostics, and the recent revisions\n",
    run_status,
};
