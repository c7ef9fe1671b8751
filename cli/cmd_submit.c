/* cuvil submit [--state DIR] [--wait] [--timeout DUR]
 * Asks the farm's controller to poll its source now and build the head;
 * with --wait, follows that revision to the end and exits 0 only when it
 * succeeded. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/farm_report.h"

extern const cv_cli_command cv_cmd_submit;

#define WAIT_POLL_US 200000
#define CONTROLLER_STALE_MS 15000
#define DEFAULT_TIMEOUT_MS (3600 * 1000)

typedef struct submit_args {
    const char *state;
    bool wait;
    int64_t timeout_ms;
} submit_args;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void warn_if_no_controller(cv_builddb *db, cv_diag *d)
{
    char *text = NULL;
    int64_t hb = 0;
    if (cv_builddb_status_get(db, CV_STATUS_CONTROLLER, &text, d) == 1) {
        json_t *j = json_loads(text, 0, NULL);
        if (!json_integer_value(json_object_get(j, "stoppedMs")))
            hb = json_integer_value(json_object_get(j, "heartbeatMs"));
        json_decref(j);
    }
    free(text);
    if (wall_ms() - hb > CONTROLLER_STALE_MS)
        fprintf(stderr, "cuvil submit: warning: no controller is running on this state "
                "directory; the request waits until one starts\n");
}

/* Waits until the controller handled request id; fills revision. */
static int wait_handled(cv_builddb *db, int64_t id, int64_t deadline, char *revision,
                        cv_diag *d)
{
    for (;;) {
        cv_build_request req;
        if (cv_builddb_request_get(db, id, &req, d) != 1)
            return -1;
        if (req.handled_ms && req.error[0]) {
            cv_diag_error(d, 6051, (cv_span){0}, "the controller could not read the source: %s",
                          req.error);
            return -1;
        }
        if (req.handled_ms) {
            snprintf(revision, CV_REVISION_MAX + 1, "%s", req.revision);
            return 0;
        }
        if (wall_ms() > deadline)
            break;
        usleep(WAIT_POLL_US);
    }
    cv_diag_error(d, 6102, (cv_span){0}, "no controller handled request %lld in time",
                  (long long)id);
    return -1;
}

/* Follows the revision until it is finished; 1 succeeded, 0 failed. */
static int wait_built(cv_builddb *db, const char *revision, int64_t deadline, cv_diag *d)
{
    cv_cli_progress_state ps = {.out = stderr, .tty = isatty(STDERR_FILENO) != 0};
    int64_t last_done = -1, t0 = wall_ms();
    for (;;) {
        cv_rev_summary s;
        if (cv_builddb_revision_summary(db, revision, &s, d) != 1)
            return -1;
        int64_t done = s.jobs - s.pending;
        bool finished = s.state == CV_REV_SUCCEEDED || s.state == CV_REV_FAILED;
        if (done != last_done && s.jobs) {
            cv_farm_progress p = {.revision = s.revision, .jobs = s.jobs, .done = done,
                                  .hits = s.hits, .failed = s.failed, .pending = s.pending,
                                  .elapsed_s = (double)(wall_ms() - t0) / 1000.0};
            cv_cli_progress(&ps, &p);
            last_done = done;
        }
        if (finished)
            return s.state == CV_REV_SUCCEEDED;
        if (wall_ms() > deadline) {
            cv_diag_error(d, 6102, (cv_span){0}, "%s was not built in time (%lld jobs pending)",
                          revision, (long long)s.pending);
            return -1;
        }
        usleep(WAIT_POLL_US);
    }
}

static int parse_args(int argc, char **argv, submit_args *a)
{
    *a = (submit_args){.state = cv_cli_default_state(), .timeout_ms = DEFAULT_TIMEOUT_MS};
    for (int i = 1; i < argc; i++) {
        bool has_value = strcmp(argv[i], "--state") == 0 || strcmp(argv[i], "--timeout") == 0;
        if (has_value && i + 1 >= argc)
            return cv_cli_usage_error(&cv_cmd_submit, "%s needs a value", argv[i]);
        if (strcmp(argv[i], "--wait") == 0)
            a->wait = true;
        else if (strcmp(argv[i], "--state") == 0)
            a->state = argv[++i];
        else if (strcmp(argv[i], "--timeout") == 0) {
            if (cv_spec_parse_duration(argv[++i], &a->timeout_ms) != 0)
                return cv_cli_usage_error(&cv_cmd_submit, "--timeout takes a duration (90s, "
                                          "10m, 1h), got '%s'", argv[i]);
        } else
            return cv_cli_usage_error(&cv_cmd_submit, "unexpected argument '%s'", argv[i]);
    }
    return CV_EXIT_OK;
}

static int submit_and_wait(const submit_args *a, cv_builddb *db, cv_diag *d)
{
    int64_t id;
    if (cv_builddb_request_add(db, wall_ms(), &id, d) != 0)
        return CV_EXIT_INTERNAL;
    printf("request %lld submitted\n", (long long)id);
    warn_if_no_controller(db, d);
    if (!a->wait)
        return CV_EXIT_OK;
    int64_t deadline = wall_ms() + a->timeout_ms;
    char revision[CV_REVISION_MAX + 1];
    if (wait_handled(db, id, deadline, revision, d) != 0)
        return CV_EXIT_INPUT;
    printf("building %s\n", revision);
    fflush(stdout);
    int built = wait_built(db, revision, deadline, d);
    if (built < 0)
        return CV_EXIT_INPUT;
    cv_farm_summary s;
    cv_rev_summary sum;
    if (cv_farm_summarise(db, revision, &s, d) == 0 &&
        cv_builddb_revision_summary(db, revision, &sum, d) == 1) {
        cv_cli_print_summary(stdout, &s);
        if (s.failed) {
            printf("failed jobs:\n");
            cv_cli_print_failures(stdout, db, sum.id, 20, d);
        }
    }
    return built ? CV_EXIT_OK : CV_EXIT_INPUT;
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
    cv_builddb *db = NULL;
    rc = cv_cli_open_builddb(a.state, &db, &d) == 0 ? submit_and_wait(&a, db, &d)
                                                   : CV_EXIT_INPUT;
    cv_builddb_close(db);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    return rc;
}

const cv_cli_command cv_cmd_submit = {
    "submit", "ask the farm to build the head of its repository now",
    "cuvil submit [--state DIR] [--wait] [--timeout DUR]\n"
    "  --state DIR     the farm's state directory (default $CUVIL_FARM_STATE or .cuvil-farm)\n"
    "  --wait          follow the build; exit 0 only when every job succeeded or hit\n"
    "  --timeout DUR   how long --wait waits (default 1h)\n"
    "The running controller (`cuvil farm up` or `cuvil controller`) polls the source at\n"
    "once, ignoring any back-off, and plans the head if it is new.\n",
    run_submit,
};
