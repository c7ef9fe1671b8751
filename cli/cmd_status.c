/* cuvil status [REVISION] [--state DIR] [--json] [--watch]
 * What the farm is doing: the controller's heartbeat, the source (fetch
 * failures and back-off), last attempted and last succeeded revisions, and
 * one revision's jobs with the failures and their first errors. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/clock.h"
#include "cli/cli.h"
#include "cli/farm_report.h"

extern const cv_cli_command cv_cmd_status;

typedef struct status_args {
    const char *state, *revision, *junit;
    bool json, markdown, watch;
    int64_t interval_ms;
} status_args;

static void print_ago(const char *label, int64_t ms)
{
    if (ms <= 0)
        printf("%s never", label);
    else
        printf("%s %.1fs ago", label, (double)(cv_clock_wall_ms() - ms) / 1000.0);
}

static void print_controller_and_source(cv_builddb *db, cv_diag *d)
{
    json_t *ctl = cv_status_value_json(db, CV_STATUS_CONTROLLER, d);
    if (!ctl) {
        printf("controller  never started here\n");
    } else {
        json_int_t hb = json_integer_value(json_object_get(ctl, "heartbeatMs"));
        json_int_t stopped = json_integer_value(json_object_get(ctl, "stoppedMs"));
        bool alive = cv_status_controller_alive(ctl, cv_clock_wall_ms());
        printf("controller  %s (pid %lld on %s, ",
               alive ? "running" : stopped ? "stopped" : "not responding",
               (long long)json_integer_value(json_object_get(ctl, "pid")),
               json_string_value(json_object_get(ctl, "host")));
        print_ago(stopped ? "stopped" : "heartbeat", stopped ? stopped : hb);
        printf(")\n            %s %s, queue %s\n", json_string_value(json_object_get(ctl, "repo")),
               json_string_value(json_object_get(ctl, "ref")),
               json_string_value(json_object_get(ctl, "queue")));
    }
    json_decref(ctl);
    json_t *src = cv_status_value_json(db, CV_STATUS_SOURCE, d);
    if (src) {
        json_int_t failures = json_integer_value(json_object_get(src, "failures"));
        print_ago("source      last poll", json_integer_value(json_object_get(src, "lastPollMs")));
        if (failures)
            printf(", %lld %s in a row, next attempt in %.0fs: %s", (long long)failures,
                   cv_cli_plural(failures, "failure", "failures"),
                   (double)(json_integer_value(json_object_get(src, "nextAttemptMs")) -
                            cv_clock_wall_ms()) / 1000.0,
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

/* --junit FILE and --markdown, from the revision's JSON view. */
static int write_ci_formats(const status_args *a, cv_builddb *db, const cv_rev_summary *rev,
                            cv_diag *d)
{
    json_t *o = cv_status_revision_json(db, rev, d);
    int rc = o ? 0 : -1;
    FILE *f = rc == 0 && a->junit ? fopen(a->junit, "w") : NULL;
    if (rc == 0 && a->junit) {
        if (f)
            cv_status_write_junit(f, o);
        if (!f || fclose(f) != 0) {
            cv_diag_error(d, CV_E_IO_ERROR, (cv_span){.file = a->junit}, "cannot write %s", a->junit);
            rc = -1;
        }
    }
    if (rc == 0 && a->markdown)
        cv_status_write_markdown(stdout, o);
    json_decref(o);
    return rc;
}

static int parse_args(int argc, char **argv, status_args *a)
{
    *a = (status_args){.state = cv_cli_default_state(), .interval_ms = 1000};
    return cv_cli_parse(&cv_cmd_status, NULL, argc, argv, 1, a);
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
    if (a.watch) {
        rc = cv_cli_open_builddb(a.state, &db, &d) == 0
                 ? cv_cli_status_watch(db, a.revision, a.interval_ms, &d)
                 : CV_EXIT_INPUT;
        cv_builddb_close(db);
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        cv_diag_free(&d);
        return rc;
    }
    char name[CV_REVISION_MAX + 1] = "";
    cv_rev_summary rev;
    int found = cv_cli_open_builddb(a.state, &db, &d) == 0
                    ? cv_builddb_revision_resolve(db, a.revision ? a.revision : "latest", name, &d)
                    : -1;
    if (found == 1 && cv_builddb_revision_summary(db, name, &rev, &d) != 1)
        found = -1;
    if (found == 0 && a.revision) {
        cv_diag_error(&d, CV_E_BUILDDB_UNKNOWN_REVISION, (cv_span){0}, "no revision '%s' in %s", a.revision, a.state);
        found = -1;
    }
    if (found == 1 && (a.junit || a.markdown) && write_ci_formats(&a, db, &rev, &d) != 0)
        found = -1;
    if (a.markdown) {
        /* the summary is all it prints */
    } else if (found >= 0 && a.json) {
        json_t *o = cv_status_json(db, found == 1 ? &rev : NULL, cv_clock_wall_ms(), &d);
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

static const cv_cli_opt options[] = {
    CV_CLI_STR(0, "state", "DIR", status_args, state,
               "the farm's state directory (default $CUVIL_FARM_STATE or .cuvil-farm)"),
    CV_CLI_FLAG(0, "json", status_args, json,
                "everything as one JSON object: controller, source, last attempted and "
                "succeeded revisions, the revision with every job and its diagnostics, and "
                "the recent revisions"),
    CV_CLI_FLAG(0, "markdown", status_args, markdown,
                "a job summary in Markdown (GitHub's $GITHUB_STEP_SUMMARY)"),
    CV_CLI_STR(0, "junit", "FILE", status_args, junit,
               "also write the revision's jobs as JUnit XML (one test case per job)"),
    CV_CLI_FLAG(0, "watch", status_args, watch,
                "print the revision's progress whenever it changes until it is done, then "
                "its failures; exit 0 when it succeeded, 1 when it failed"),
    {.name = "interval", .value = "DUR", .kind = CV_OPT_DURATION, .lo = 50, .hi = 3600000,
     .at = offsetof(status_args, interval_ms),
     .help = "how often --watch reads the build DB (default 1s)"},
    CV_CLI_END,
};

const cv_cli_command cv_cmd_status = {
    "status", "show what the farm is building and what failed",
    "cuvil status [REVISION] [--state DIR] [--json | --markdown]\n"
    "             [--junit FILE] [--watch [--interval DUR]]\n"
    "  REVISION  ref@sha1:COMMIT, a commit id or a prefix of one (4+ hex digits), or\n"
    "            latest (default)\n",
    run_status, options, NULL, NULL, sizeof(status_args), NULL, "revision",
    offsetof(status_args, revision),
};
