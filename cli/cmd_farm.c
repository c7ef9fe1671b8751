/* cuvil farm up [REPO] [options] [--once]
 * cuvil controller [REPO] [options]
 * The controller, with N local `cuvil worker` processes (farm up) or with
 * workers that run elsewhere and meet it through the queue (controller). */
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/farm_report.h"
#include "common/fs.h"
#include "compile/build.h"
#include "controller/controller.h"

extern const cv_cli_command cv_cmd_farm, cv_cmd_controller;

#define FAILURES_SHOWN 20

typedef struct farm_args {
    const char *repo, *state, *cache, *queue, *ref;
    const char *signing_key, *verify_key;   /* NULL: the environment's, else the farm's own */
    cv_farm_policy policy;                  /* --remote-cache, --job-timeout, --memory-limit */
    const char *http, *http_tokens, *webhook_secret_file;   /* the HTTP server; NULL = off */
    const char *kafka_kv[CV_CLI_KAFKA_CONFIG_MAX];
    int n_kv, workers;
    int64_t interval_ms;
    bool once;
} farm_args;

static volatile int stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int remote_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v, void *args)
{
    (void)opt;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_farm_policy_add_remote(&((farm_args *)args)->policy, v, &d);
    if (rc)
        cv_cli_usage_error(cmd, "%s", d.n ? d.v[0].msg : "bad --remote-cache");
    cv_diag_free(&d);
    return rc ? CV_EXIT_USAGE : 0;
}

static void set_models_dir(void *ctx, const char *dir)
{
    ((cv_build_lookup *)ctx)->models_dir = dir;
}

/* After --once: the summary, then the jobs that failed. */
static void print_once(const farm_args *a, const cv_farm_summary *s)
{
    cv_cli_print_summary(stdout, s);
    if (!s->failed || !s->revision[0])
        return;
    cv_diag d;
    cv_diag_init(&d);
    cv_builddb *db = NULL;
    cv_rev_summary sum;
    if (cv_cli_open_builddb(a->state, &db, &d) == 0 &&
        cv_builddb_revision_summary(db, s->revision, &sum, &d) == 1) {
        printf("failed jobs:\n");
        cv_cli_print_failures(stdout, db, sum.id, FAILURES_SHOWN, &d);
    }
    cv_builddb_close(db);
    cv_diag_free(&d);
}

typedef struct built_ctx {
    const farm_args *a;
} built_ctx;

static void on_built(void *ctx, const cv_farm_summary *s)
{
    printf("== built %s\n", s->revision);
    print_once(((built_ctx *)ctx)->a, s);
    fflush(stdout);
}

/* The dashboard, API, metrics and webhooks, when --http asks for them. */
static int start_http(const cv_cli_command *cmd, const farm_args *a, const char *queue,
                      cv_http **out, cv_diag *d)
{
    *out = NULL;
    if (!a->http)
        return 0;
    char *secret = NULL;
    size_t len = 0;
    if (a->webhook_secret_file &&
        cv_fs_read_file(a->webhook_secret_file, 4096, &secret, &len, d) != 0)
        return -1;
    while (len && (secret[len - 1] == '\n' || secret[len - 1] == '\r' || secret[len - 1] == ' '))
        secret[--len] = '\0';
    cv_http_opts ho = {.listen = a->http, .state_dir = a->state, .queue_url = queue,
                       .cache_dir = a->cache, .ref = a->ref, .tokens_file = a->http_tokens,
                       .webhook_secret = secret};
    int rc = cv_http_start(&ho, out, d);
    if (secret) {
        explicit_bzero(secret, len);
        free(secret);
    }
    if (rc == 0)
        fprintf(stderr, "cuvil %s: dashboard, API and metrics on http://%.*s:%d/\n", cmd->name,
                (int)(strrchr(a->http, ':') - a->http), a->http, cv_http_port(*out));
    return rc;
}

static int run_with(const cv_cli_command *cmd, farm_args *a)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "cuvil %s: cannot find the running binary (/proc/self/exe)\n", cmd->name);
        return CV_EXIT_INTERNAL;
    }
    exe[n] = '\0';
    cv_diag d;
    cv_diag_init(&d);
    char *queue = NULL;
    if (cv_cli_queue_url(a->queue, a->kafka_kv, a->n_kv, &queue, &d) != 0) {
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        cv_diag_free(&d);
        return CV_EXIT_USAGE;
    }
    /* the operator's remote: the flag, else the environment's */
    if (!a->policy.remote) {
        const char *env = getenv("CUVIL_REMOTE_CACHE");
        a->policy.remote = env && *env ? env : NULL;
    }
    char *sign = NULL, *verify = NULL;
    bool remote = a->policy.remote || a->policy.n_remotes > 0;
    if (remote && cv_farm_signing_keys(a->state, a->signing_key ? a->signing_key
                                                 : getenv("CUVIL_REMOTE_CACHE_SIGNING_KEY"),
                                       a->verify_key ? a->verify_key
                                                     : getenv("CUVIL_REMOTE_CACHE_VERIFY_KEY"),
                                       &sign, &verify, &d) != 0) {
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        cv_diag_free(&d);
        free(queue);
        return CV_EXIT_USAGE;
    }
    cv_cache *cache = NULL;
    cv_cache_options co = {.dir = a->cache, .remote = a->policy.remote ? a->policy.remote : "",
                           .sign_key = sign ? sign : "", .verify_key = verify ? verify : ""};
    if (cv_cache_open(&co, &cache, &d))
        cache = NULL;   /* no look-up: every job is queued, the workers still cache */
    cv_build_lookup lk = {.cache = cache};
    cv_cli_progress_state ps = {.out = stderr, .tty = isatty(STDERR_FILENO) != 0};
    cv_farm_opts o = {.repo = a->repo, .ref = a->ref, .state_dir = a->state, .queue_url = queue,
                      .workers = a->workers, .worker_exe = exe, .cache_dir = a->cache,
                      .policy = a->policy, .signing_key = sign, .verify_key = verify,
                      .interval_ms = a->interval_ms,
                      .lookup = cache ? cv_build_plan_lookup : NULL, .lookup_ctx = &lk,
                      .lookup_models_dir = set_models_dir, .progress = cv_cli_progress,
                      .progress_ctx = &ps, .stop = &stop_requested};
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    int rc;
    cv_farm_summary s = {0};
    cv_http *http = NULL;
    bool http_failed = start_http(cmd, a, queue, &http, &d) != 0;
    if (http_failed) {
        rc = -1;
    } else if (a->once) {
        rc = cv_farm_once(&o, &s, &d);
    } else {
        built_ctx bc = {.a = a};
        fprintf(stderr, "cuvil %s: watching %s (%s) with %d workers; state in %s; Ctrl-C stops\n",
                cmd->name, a->repo, a->ref ? a->ref : "main", a->workers, a->state);
        rc = cv_farm_run(&o, on_built, &bc, &d);
    }
    cv_http_stop(http);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    cv_cache_close(cache);
    free(queue);
    free(sign);
    free(verify);
    if (a->once && !http_failed)
        print_once(a, &s);
    if (rc)
        return http_failed ? CV_EXIT_USAGE : CV_EXIT_INTERNAL;
    if (!a->once)
        return CV_EXIT_OK;
    return s.spec_errors || s.failed || s.pending ? CV_EXIT_INPUT : CV_EXIT_OK;
}

/* A local REPO must be a git repository (a work tree or a bare one): the
 * farm builds commits.  URLs (scheme:// or user@host:path) are checked when
 * fetched. */
static int check_local_repo(const cv_cli_command *cmd, const char *repo)
{
    if (strstr(repo, "://") || (strchr(repo, '@') && strchr(repo, ':')))
        return CV_EXIT_OK;
    struct stat st;
    if (stat(repo, &st) != 0 || !S_ISDIR(st.st_mode))
        return cv_cli_usage_error(cmd, "'%s' is not a directory: REPO is a models repository "
                                  "(a git work tree or bare repository, or a URL)", repo);
    static const char *const marks[] = {".git", "HEAD"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", repo, marks[i]);
        if (access(path, F_OK) == 0)
            return CV_EXIT_OK;
    }
    return cv_cli_usage_error(cmd, "'%s' is not a git repository: the farm builds commits, so "
                              "put the models under git first (git init; git add; git commit), "
                              "or give the repository's URL", repo);
}

static int run_farm(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_farm, argc, argv))
        return CV_EXIT_OK;
    if (argc < 2 || strcmp(argv[1], "up") != 0)
        return cv_cli_usage_error(&cv_cmd_farm, "expected 'up'");
    farm_args a = {.state = cv_cli_default_state(), .workers = 2};
    int rc = cv_cli_parse(&cv_cmd_farm, "up", argc, argv, 2, &a);
    a.repo = a.repo ? a.repo : ".";
    if (rc == 0)
        rc = check_local_repo(&cv_cmd_farm, a.repo);
    return rc ? rc : run_with(&cv_cmd_farm, &a);
}

static int run_controller(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_controller, argc, argv))
        return CV_EXIT_OK;
    farm_args a = {.state = cv_cli_default_state()};
    int rc = cv_cli_parse(&cv_cmd_controller, NULL, argc, argv, 1, &a);
    a.repo = a.repo ? a.repo : ".";
    if (rc == 0 && a.workers)
        rc = cv_cli_usage_error(&cv_cmd_controller, "the controller starts no workers: run "
                                "`cuvil worker` or use `cuvil farm up --workers N`");
    return rc ? rc : run_with(&cv_cmd_controller, &a);
}

#define STR(L, V, F, H) \
    {.name = L, .value = V, .kind = CV_OPT_STR, .at = offsetof(farm_args, F), .help = H}
#define COMMON_OPTIONS                                                                           \
    STR("ref", "REF", ref, "the branch, tag or ref to build (default main)"),                    \
    STR("state", "DIR", state, "git mirror, build DB, queue, revision trees, worker logs "       \
        "(default $CUVIL_FARM_STATE or .cuvil-farm)"),                                           \
    STR("queue", "URL", queue, "sqlite:PATH or kafka://BROKERS?topic_prefix=P (default "         \
        "sqlite:STATE/queue.db)"),                                                               \
    {.name = "kafka-config", .value = "K=V", .kind = CV_OPT_LIST,                                \
     .at = offsetof(farm_args, kafka_kv), .count = offsetof(farm_args, n_kv),                    \
     .hi = CV_CLI_KAFKA_CONFIG_MAX,                                                              \
     .help = "a librdkafka setting for a kafka:// queue (repeatable)"},                          \
    STR("cache", "DIR", cache, "the cache the planner looks up and workers fill (default "       \
        "$CUVIL_CACHE_DIR or ~/.cache/cuvil)"),                                                   \
    {.name = "interval", .value = "DUR", .kind = CV_OPT_DURATION, .lo = 100,                     \
     .at = offsetof(farm_args, interval_ms),                                                     \
     .help = "how often the source is polled (default: the cluster spec's source.interval, "     \
             "else 60s); `cuvil submit` polls at once"},                                         \
    {.name = "remote-cache", .value = "URL", .kind = CV_OPT_CALL, .call = remote_arg,            \
     .example = "http://cache:8080",                                                             \
     .help = "the farm's shared cache (default $CUVIL_REMOTE_CACHE); as NAME=URL, another "     \
             "cache a repository's cluster spec may choose (cache.remote: NAME; repeatable); "  \
             "no spec can name a URL"},                                                          \
    {.name = "job-timeout", .value = "DUR", .kind = CV_OPT_DURATION, .lo = 1000,                 \
     .at = offsetof(farm_args, policy.job_timeout_ms),                                           \
     .help = "the most a compile job may take (default 10m); a spec's workers.jobTimeout can "  \
             "only lower it"},                                                                   \
    {.name = "memory-limit", .value = "SIZE", .kind = CV_OPT_SIZE, .lo = 1,                      \
     .at = offsetof(farm_args, policy.memory_limit),                                             \
     .help = "the most memory a compile job may use (default none); a spec's "                   \
             "workers.memoryLimit can only lower it"},                                           \
    STR("signing-key", "PEM", signing_key, "the Ed25519 key action entries on the remote are "   \
        "signed with (default $CUVIL_REMOTE_CACHE_SIGNING_KEY, else a pair the farm makes in "   \
        "STATE/keys/); unsigned or foreign entries are refused"),                                \
    STR("verify-key", "PEM", verify_key, "the matching public key (default: the signing "       \
        "key's)"),                                                                               \
    STR("http", "ADDR", http, "serve the dashboard, /api/v1, /metrics and webhooks on ADDR "     \
        "(host:port, e.g. 127.0.0.1:8081; port 0 = any free port)"),                             \
    STR("http-token-file", "F", http_tokens, "'TOKEN ro|rw' per line: ro reads, rw also "       \
        "requests builds (default: no token needed)"),                                           \
    STR("webhook-secret-file", "F", webhook_secret_file, "the secret GitHub signs pushes with " \
        "(X-Hub-Signature-256) and GitLab sends (X-Gitlab-Token); without it hooks get 403")

static const cv_cli_opt farm_options[] = {
    COMMON_OPTIONS,
    CV_CLI_INT(0, "workers", "N", farm_args, workers, 0, CV_FARM_WORKERS_MAX,
               "local worker processes (default 2; 0 = they run elsewhere)"),
    CV_CLI_FLAG(0, "once", farm_args, once,
                "build the head, print a summary and exit: 0 only when every job succeeded or "
                "hit, 1 otherwise"),
    CV_CLI_END,
};

static const cv_cli_opt controller_options[] = {
    COMMON_OPTIONS,
    CV_CLI_FLAG(0, "once", farm_args, once,
                "plan the head, wait until workers built it, print a summary"),
    /* taken only to say that the controller starts none */
    {.name = "workers", .value = "N", .kind = CV_OPT_INT, .lo = 0, .hi = CV_FARM_WORKERS_MAX,
     .at = offsetof(farm_args, workers), .flags = CV_OPT_HIDDEN},
    CV_CLI_END,
};
#undef STR

#define REPO "  REPO  a local path or URL of the models repository (default .)\n"

const cv_cli_command cv_cmd_farm = {
    "farm", "build every model of a models repository with local workers",
    "cuvil farm up [REPO] [--workers N] [--once] [options]\n" REPO,
    run_farm, farm_options,
    "Without --once the farm keeps watching the repository until Ctrl-C or SIGTERM,\n"
    "restarting workers that exit.\n",
    NULL, sizeof(farm_args), "up", "repository", offsetof(farm_args, repo),
};

const cv_cli_command cv_cmd_controller = {
    "controller", "watch a models repository and queue its compile jobs (no workers)",
    "cuvil controller [REPO] [options]\n" REPO,
    run_controller, controller_options,
    "Workers started elsewhere with `cuvil worker --queue URL --trees STATE/trees`\n"
    "(same machine) build the jobs.  Runs until Ctrl-C or SIGTERM.\n",
    NULL, sizeof(farm_args), NULL, "repository", offsetof(farm_args, repo),
};
