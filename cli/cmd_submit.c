/* cuvil submit [--state DIR | --farm URL] [--wait] [--timeout DUR]
 *              [--markdown] [--junit FILE]
 * Asks the farm's controller to poll its source now and build the head;
 * with --wait, follows that revision to the end and exits 0 only when it
 * succeeded.  The farm is reached through its state directory (same
 * machine) or its HTTP API (POST /api/v1/revisions); both give the same
 * JSON views, so what follows is one code path. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "cli/cli.h"
#include "controller/farm_client.h"
#include "cli/farm_report.h"
#include "common/fs.h"

extern const cv_cli_command cv_cmd_submit;

#define WAIT_POLL_US 200000
#define REMOTE_POLL_US 1000000
#define DEFAULT_TIMEOUT_MS (3600 * 1000)
#define TOKEN_MAX 512

typedef struct submit_args {
    const char *state, *farm, *token_file, *junit;
    bool wait, markdown;
    int64_t timeout_ms;
} submit_args;

/* Where the farm is: its build DB, or its API. */
typedef struct farm_link {
    cv_builddb *db;       /* owned; NULL for the API */
    cv_farm_api api;
} farm_link;

static void warn_if_no_controller(cv_builddb *db, cv_diag *d)
{
    json_t *ctl = cv_status_value_json(db, CV_STATUS_CONTROLLER, d);
    if (!ctl || !cv_status_controller_alive(ctl, cv_clock_wall_ms()))
        fprintf(stderr, "cuvil submit: warning: no controller is running on this state "
                "directory; the request waits until one starts\n");
    json_decref(ctl);
}

/* ---- the three calls, on either link */

static int64_t request_build(farm_link *f, cv_diag *d)
{
    int64_t id = 0;
    if (f->db) {
        if (cv_builddb_request_add(f->db, cv_clock_wall_ms(), &id, d) != 0)
            return -1;
        warn_if_no_controller(f->db, d);
        return id;
    }
    long status;
    json_t *o = cv_farm_client_call(&f->api, "POST", "/api/v1/revisions", &status, d);
    id = o ? json_integer_value(json_object_get(o, "request")) : 0;
    json_decref(o);
    if (o && id <= 0)
        cv_diag_error(d, CV_E_HTTP_INTERNAL, (cv_span){0}, "the farm accepted no build request");
    return id > 0 ? id : -1;
}

/* {"handled": bool, "revision": str|null, "error": str|null} */
static json_t *request_get(farm_link *f, int64_t id, cv_diag *d)
{
    if (!f->db) {
        char path[64];
        long status;
        snprintf(path, sizeof path, "/api/v1/requests/%lld", (long long)id);
        return cv_farm_client_call(&f->api, "GET", path, &status, d);
    }
    cv_build_request br;
    if (cv_builddb_request_get(f->db, id, &br, d) != 1)
        return NULL;
    return json_pack("{s:b, s:s?, s:s?}", "handled", br.handled_ms > 0, "revision",
                     br.revision[0] ? br.revision : NULL, "error", br.error[0] ? br.error : NULL);
}

/* The revision's JSON view (cv_status_revision_json). */
static json_t *revision_get(farm_link *f, const char *revision, cv_diag *d)
{
    if (!f->db) {
        /* by commit id: a ref name may hold '/' */
        const char *at = strstr(revision, "@sha1:");
        char path[128];
        long status;
        snprintf(path, sizeof path, "/api/v1/revisions/%.40s", at ? at + 6 : revision);
        return cv_farm_client_call(&f->api, "GET", path, &status, d);
    }
    cv_rev_summary s;
    if (cv_builddb_revision_summary(f->db, revision, &s, d) != 1)
        return NULL;
    return cv_status_revision_json(f->db, &s, d);
}

/* ---- waiting */

static int wait_handled(farm_link *f, int64_t id, int64_t deadline, char *revision, cv_diag *d)
{
    for (;;) {
        json_t *r = request_get(f, id, d);
        if (!r)
            return -1;
        bool handled = json_is_true(json_object_get(r, "handled"));
        const char *err = json_string_value(json_object_get(r, "error"));
        const char *rev = json_string_value(json_object_get(r, "revision"));
        if (handled && err)
            cv_diag_error(d, CV_E_GIT_FETCH_FAILED, (cv_span){0}, "the controller could not read the source: %s",
                          err);
        else if (handled)
            snprintf(revision, CV_REVISION_MAX + 1, "%s", rev ? rev : "");
        json_decref(r);
        if (handled)
            return err ? -1 : 0;
        if (cv_clock_wall_ms() > deadline)
            break;
        usleep(f->db ? WAIT_POLL_US : REMOTE_POLL_US);
    }
    cv_diag_error(d, CV_E_SUBMIT_NOT_HANDLED, (cv_span){0}, "no controller handled request %lld in time",
                  (long long)id);
    return -1;
}

static bool is_finished(const json_t *rev)
{
    const char *st = json_string_value(json_object_get(rev, "state"));
    return st && (strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0);
}

/* Follows the revision until it is finished; returns its last JSON view. */
static json_t *wait_built(farm_link *f, const char *revision, int64_t deadline, cv_diag *d)
{
    cv_cli_progress_state ps = {.out = stderr, .tty = isatty(STDERR_FILENO) != 0};
    int64_t last_done = -1, t0 = cv_clock_wall_ms();
    for (;;) {
        json_t *rev = revision_get(f, revision, d);
        if (!rev)
            return NULL;
        int64_t jobs = json_integer_value(json_object_get(rev, "jobs"));
        int64_t pending = json_integer_value(json_object_get(rev, "pending"));
        if (jobs && jobs - pending != last_done) {
            cv_farm_progress p = {.revision = revision, .jobs = jobs, .done = jobs - pending,
                                  .hits = json_integer_value(json_object_get(rev, "hits")),
                                  .failed = json_integer_value(json_object_get(rev, "failed")),
                                  .pending = pending,
                                  .elapsed_s = (double)(cv_clock_wall_ms() - t0) / 1000.0};
            cv_cli_progress(&ps, &p);
            last_done = jobs - pending;
        }
        if (is_finished(rev))
            return rev;
        json_decref(rev);
        if (cv_clock_wall_ms() > deadline) {
            cv_diag_error(d, CV_E_SUBMIT_NOT_HANDLED, (cv_span){0}, "%s was not built in time", revision);
            return NULL;
        }
        usleep(f->db ? WAIT_POLL_US : REMOTE_POLL_US);
    }
}

/* ---- reporting */

/* The summary `farm up --once` prints, then the failed jobs' first errors
 * (from the JSON view, so a remote farm's too). */
static void print_plain(const json_t *rev)
{
    cv_farm_summary s;
    cv_status_summary_from_json(rev, &s);
    cv_cli_print_summary(stdout, &s);
    size_t i;
    const json_t *job;
    json_array_foreach(json_object_get(rev, "jobsList"), i, job) {
        const char *state = json_string_value(json_object_get(job, "state"));
        if (!state || strcmp(state, "ok") == 0 || strcmp(state, "hit") == 0 ||
            strcmp(state, "queued") == 0)
            continue;
        printf("  %s  %s  %s  %s\n", json_string_value(json_object_get(job, "model")),
               json_string_value(json_object_get(job, "target")),
               json_string_value(json_object_get(job, "precision")), state);
        const json_t *e = json_array_get(json_object_get(job, "diagnostics"), 0);
        if (e)
            printf("    %s %s\n", json_string_value(json_object_get(e, "code")),
                   json_string_value(json_object_get(e, "message")));
    }
}

static int report(const submit_args *a, const json_t *rev, cv_diag *d)
{
    if (a->markdown)
        cv_status_write_markdown(stdout, rev);
    else
        print_plain(rev);
    if (!a->junit)
        return 0;
    FILE *f = fopen(a->junit, "w");
    if (f)
        cv_status_write_junit(f, rev);
    if (!f || fclose(f) != 0) {
        cv_diag_error(d, CV_E_IO_ERROR, (cv_span){.file = a->junit}, "cannot write %s", a->junit);
        return -1;
    }
    return 0;
}

static int submit_and_wait(const submit_args *a, farm_link *f, cv_diag *d)
{
    int64_t id = request_build(f, d);
    if (id < 0)
        return CV_EXIT_INPUT;
    fprintf(stderr, "cuvil submit: request %lld submitted\n", (long long)id);
    if (!a->wait)
        return CV_EXIT_OK;
    int64_t deadline = cv_clock_wall_ms() + a->timeout_ms;
    char revision[CV_REVISION_MAX + 1];
    if (wait_handled(f, id, deadline, revision, d) != 0)
        return CV_EXIT_INPUT;
    fprintf(stderr, "cuvil submit: building %s\n", revision);
    json_t *rev = wait_built(f, revision, deadline, d);
    if (!rev)
        return CV_EXIT_INPUT;
    bool ok = strcmp(json_string_value(json_object_get(rev, "state")), "succeeded") == 0;
    int rc = report(a, rev, d);
    json_decref(rev);
    return rc ? CV_EXIT_INTERNAL : ok ? CV_EXIT_OK : CV_EXIT_INPUT;
}

/* ---- arguments */

static int parse_args(int argc, char **argv, submit_args *a)
{
    *a = (submit_args){.state = cv_cli_default_state(), .timeout_ms = DEFAULT_TIMEOUT_MS};
    int rc = cv_cli_parse(&cv_cmd_submit, NULL, argc, argv, 1, a);
    if (rc == 0 && (a->markdown || a->junit) && !a->wait)
        return cv_cli_usage_error(&cv_cmd_submit, "--markdown and --junit need --wait");
    return rc;
}

/* The API token: --token-file, else $CUVIL_FARM_TOKEN; NULL for none. */
static char *read_token(const submit_args *a, cv_diag *d)
{
    if (!a->token_file) {
        const char *env = getenv("CUVIL_FARM_TOKEN");
        return env && *env ? strdup(env) : NULL;
    }
    char *text = NULL;
    size_t len;
    if (cv_fs_read_file(a->token_file, TOKEN_MAX, &text, &len, d) != 0)
        return NULL;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        text[--len] = '\0';
    return text;
}

static int run_submit(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_submit, argc, argv))
        return CV_EXIT_OK;
    submit_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    farm_link f = {0};
    char *token = a.farm ? read_token(&a, &d) : NULL;
    if (a.farm && a.token_file && !token)
        rc = CV_EXIT_INPUT;
    else if (a.farm)
        rc = cv_farm_client_open(a.farm, token, &f.api, &d) == 0 ? submit_and_wait(&a, &f, &d)
                                                              : CV_EXIT_INPUT;
    else
        rc = cv_cli_open_builddb(a.state, &f.db, &d) == 0 ? submit_and_wait(&a, &f, &d)
                                                         : CV_EXIT_INPUT;
    free(token);
    cv_builddb_close(f.db);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    return rc;
}

static const cv_cli_opt options[] = {
    CV_CLI_STR(0, "state", "DIR", submit_args, state,
               "the farm's state directory (default $CUVIL_FARM_STATE or .cuvil-farm), for a "
               "farm on this machine"),
    CV_CLI_STR(0, "farm", "URL", submit_args, farm,
               "or the farm's HTTP API (cuvil farm up/controller --http)"),
    CV_CLI_STR(0, "token-file", "FILE", submit_args, token_file,
               "the API's write token (default $CUVIL_FARM_TOKEN)"),
    CV_CLI_FLAG(0, "wait", submit_args, wait,
                "follow the build; exit 0 only when every job succeeded or hit"),
    {.name = "timeout", .value = "DUR", .kind = CV_OPT_DURATION,
     .at = offsetof(submit_args, timeout_ms), .help = "how long --wait waits (default 1h)"},
    CV_CLI_FLAG(0, "markdown", submit_args, markdown,
                "with --wait: print the result as a Markdown job summary"),
    CV_CLI_STR(0, "junit", "FILE", submit_args, junit,
               "with --wait: write the jobs as JUnit XML"),
    CV_CLI_END,
};

const cv_cli_command cv_cmd_submit = {
    "submit", "ask the farm to build the head of its repository now",
    "cuvil submit [--state DIR | --farm URL] [--wait] [--timeout DUR]\n"
    "             [--markdown] [--junit FILE]\n",
    run_submit, options,
    "The running controller polls the source at once, ignoring any back-off, and\n"
    "plans the head if it is new.\n",
    NULL, sizeof(submit_args), NULL, NULL, 0,
};
