/* cuvil farm up [REPO] [--workers N] [--state DIR] [--cache DIR] --once
 * The controller and N local `cuvil worker` processes, on one machine.
 * Only --once (build the head, then exit) exists so far. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "controller/controller.h"
#include "worker/worker.h"

extern const cv_cli_command cv_cmd_farm;

typedef struct farm_args {
    const char *repo, *state, *cache;
    int workers;
    bool once;
} farm_args;

static int parse_args(int argc, char **argv, farm_args *a)
{
    *a = (farm_args){.repo = ".", .state = ".cuvil-farm", .workers = 2};
    if (argc < 2 || strcmp(argv[1], "up") != 0)
        return cv_cli_usage_error(&cv_cmd_farm, "expected 'up'");
    bool have_repo = false;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = strcmp(arg, "--workers") == 0 || strcmp(arg, "--state") == 0 ||
                         strcmp(arg, "--cache") == 0;
        if (has_value && i + 1 >= argc)
            return cv_cli_usage_error(&cv_cmd_farm, "%s needs a value", arg);
        if (strcmp(arg, "--once") == 0) {
            a->once = true;
        } else if (strcmp(arg, "--workers") == 0) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || n < 1 || n > CV_FARM_WORKERS_MAX)
                return cv_cli_usage_error(&cv_cmd_farm, "--workers takes a number from 1 to %d, "
                                          "got '%s'", CV_FARM_WORKERS_MAX, argv[i]);
            a->workers = (int)n;
        } else if (strcmp(arg, "--state") == 0) {
            a->state = argv[++i];
        } else if (strcmp(arg, "--cache") == 0) {
            a->cache = argv[++i];
        } else if (arg[0] == '-' || have_repo) {
            return cv_cli_usage_error(&cv_cmd_farm, "unexpected argument '%s'", arg);
        } else {
            a->repo = arg;
            have_repo = true;
        }
    }
    if (!a->once)
        return cv_cli_usage_error(&cv_cmd_farm, "not yet: a long-running farm is not "
                                  "implemented; use --once");
    return CV_EXIT_OK;
}

static void set_models_dir(void *ctx, const char *dir)
{
    ((cv_worker_lookup *)ctx)->models_dir = dir;
}

static void print_summary(const cv_farm_summary *s)
{
    printf("revision   %s\n", s->revision[0] ? s->revision : "(none)");
    printf("jobs       %lld\n", (long long)s->jobs);
    printf("cache hits %lld (%lld at planning, %lld in workers)\n",
           (long long)(s->plan_hits + s->worker_hits), (long long)s->plan_hits,
           (long long)s->worker_hits);
    printf("compiled   %lld\nfailed     %lld\n", (long long)s->compiled, (long long)s->failed);
    if (s->pending)
        printf("pending    %lld\n", (long long)s->pending);
    printf("time       %.2f s\n", s->seconds);
}

static int run_farm(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_farm, argc, argv))
        return CV_EXIT_OK;
    farm_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "cuvil farm: cannot find the running binary (/proc/self/exe)\n");
        return CV_EXIT_INTERNAL;
    }
    exe[n] = '\0';
    cv_diag d;
    cv_diag_init(&d);
    cv_cache *cache = NULL;
    cv_cache_options co = {.dir = a.cache};
    if (cv_cache_open(&co, &cache, &d))
        cache = NULL;   /* no look-up: every job is queued, the workers still cache */
    cv_worker_lookup lk = {.cache = cache};
    cv_farm_opts o = {.repo = a.repo, .state_dir = a.state, .workers = a.workers,
                      .worker_exe = exe, .cache_dir = a.cache,
                      .lookup = cache ? cv_worker_plan_lookup : NULL, .lookup_ctx = &lk,
                      .lookup_models_dir = set_models_dir};
    cv_farm_summary s;
    rc = cv_farm_once(&o, &s, &d);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    cv_cache_close(cache);
    print_summary(&s);
    if (rc)
        return CV_EXIT_INTERNAL;
    return s.spec_errors || s.failed || s.pending ? CV_EXIT_INPUT : CV_EXIT_OK;
}

const cv_cli_command cv_cmd_farm = {
    "farm", "build every model of a models repository with local workers",
    "cuvil farm up [REPO] [--workers N] [--state DIR] [--cache DIR] --once\n"
    "  REPO          a local path or URL of the models repository (default .)\n"
    "  --workers N   worker processes (default 2)\n"
    "  --state DIR   git mirror, build DB, queue, worker logs (default .cuvil-farm)\n"
    "  --cache DIR   the cache (default $CUVIL_CACHE_DIR or ~/.cache/cuvil)\n"
    "  --once        build the head of main, print a summary and exit: 0 only when\n"
    "                every job succeeded or hit (required for now)\n",
    run_farm,
};
