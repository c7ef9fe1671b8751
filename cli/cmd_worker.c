/* cuvil worker --queue URL [--cache DIR] [--remote-cache URL] ...
 * Leases compile jobs from the queue and runs each in a sandboxed child. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "worker/worker.h"

extern const cv_cli_command cv_cmd_worker;

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (end == s || *end || n < lo || n > hi)
        return -1;
    *out = (int)n;
    return 0;
}

typedef struct flag {
    const char *name;
    enum { F_STR, F_INT, F_MS, F_SIZE, F_BOOL } kind;
    size_t offset;
    int lo, hi;
} flag;

#define O(f) offsetof(cv_worker_opts, f)
static const flag flags[] = {
    {"--queue", F_STR, O(queue_url), 0, 0},       {"--cache", F_STR, O(cache_dir), 0, 0},
    {"--remote-cache", F_STR, O(remote_cache), 0, 0},
    {"--signing-key", F_STR, O(sign_key), 0, 0},  {"--verify-key", F_STR, O(verify_key), 0, 0},
    {"--models", F_STR, O(models_dir), 0, 0},     {"--scratch", F_STR, O(scratch_dir), 0, 0},
    {"--trees", F_STR, O(trees_dir), 0, 0},
    {"--id", F_STR, O(worker_id), 0, 0},          {"--max-jobs", F_INT, O(max_jobs), 1, 1 << 30},
    {"--lease", F_INT, O(lease_s), 1, 86400},     {"--poll-ms", F_INT, O(poll_ms), 1, 3600000},
    {"--cpu-limit", F_INT, O(cpu_limit_s), 1, 1 << 24},
    {"--timeout", F_MS, O(job_timeout_ms), 0, 0}, {"--grace", F_MS, O(grace_ms), 0, 0},
    {"--memory-limit", F_SIZE, O(memory_limit), 0, 0},
    {"--once", F_BOOL, O(once), 0, 0},            {"--explain", F_BOOL, O(explain), 0, 0},
    {"--allow-test-faults", F_BOOL, O(allow_test_faults), 0, 0},
};
#undef O

static int set_flag(const flag *f, const char *v, cv_worker_opts *o)
{
    char *at = (char *)o + f->offset;
    switch (f->kind) {
    case F_STR: *(const char **)at = v; return 0;
    case F_BOOL: *(bool *)at = true; return 0;
    case F_INT:
        return parse_int(v, f->lo, f->hi, (int *)at) ? cv_cli_usage_error(&cv_cmd_worker,
                   "%s takes a number from %d to %d, got '%s'", f->name, f->lo, f->hi, v) : 0;
    case F_MS:
        if (cv_cli_duration_arg(&cv_cmd_worker, f->name, v, (int64_t *)at))
            return CV_EXIT_USAGE;
        return *(int64_t *)at > 0 ? 0 : cv_cli_usage_error(&cv_cmd_worker, "%s must be more than "
                                                           "0ms, got '%s'", f->name, v);
    case F_SIZE:
        return cv_cli_size_arg(&cv_cmd_worker, f->name, v, (uint64_t *)at);
    }
    return 0;
}

/* What the worker runs itself as for one job or one sync (internal flags,
 * added by worker/ to the worker's own command line). */
typedef struct child_role {
    const char *job_dir, *sync_list;
} child_role;

static int parse_args(int argc, char **argv, cv_worker_opts *o, const char **kafka_kv, int *n_kv,
                      child_role *child)
{
    *n_kv = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--job-child") == 0 && i + 1 < argc) {
            child->job_dir = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--sync-child") == 0 && i + 1 < argc) {
            child->sync_list = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--kafka-config") == 0) {
            if (i + 1 >= argc)
                return cv_cli_usage_error(&cv_cmd_worker, "--kafka-config needs KEY=VALUE");
            if (*n_kv == CV_CLI_KAFKA_CONFIG_MAX)
                return cv_cli_usage_error(&cv_cmd_worker, "too many --kafka-config settings");
            kafka_kv[(*n_kv)++] = argv[++i];
            continue;
        }
        const flag *f = NULL;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (strcmp(argv[i], flags[k].name) == 0)
                f = &flags[k];
        if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            cv_log_level_set(CV_LOG_INFO);
            continue;
        }
        if (!f)
            return cv_cli_usage_error(&cv_cmd_worker, "unknown argument '%s'", argv[i]);
        if (f->kind != F_BOOL && i + 1 >= argc)
            return cv_cli_usage_error(&cv_cmd_worker, "%s needs a value", f->name);
        int rc = set_flag(f, f->kind == F_BOOL ? NULL : argv[++i], o);
        if (rc)
            return rc;
    }
    if (!o->queue_url && !child->job_dir && !child->sync_list)
        return cv_cli_usage_error(&cv_cmd_worker, "--queue is required");
    return CV_EXIT_OK;
}

static int run_worker(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_worker, argc, argv))
        return CV_EXIT_OK;
    cv_worker_opts o = {0};
    const char *kafka_kv[CV_CLI_KAFKA_CONFIG_MAX];
    int n_kv;
    child_role child = {0};
    int rc = parse_args(argc, argv, &o, kafka_kv, &n_kv, &child);
    if (rc)
        return rc;
    if (child.job_dir || child.sync_list) {
        /* Ends as the forked children always did, without the exit
         * handlers: the sanitized build's leak check at exit crashes in
         * its tracer after LLVM has run threads ("Tracer caught signal
         * 11"), and would turn a good result into an internal error. */
        rc = child.job_dir ? cv_worker_job_child(&o, child.job_dir)
                           : cv_worker_sync_child(child.sync_list);
        fflush(NULL);
        _exit(rc & 0xff);
    }
    cv_diag d;
    cv_diag_init(&d);
    char *url = NULL;
    if (cv_cli_queue_url(o.queue_url, kafka_kv, n_kv, &url, &d) != 0) {
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        cv_diag_free(&d);
        return CV_EXIT_USAGE;
    }
    o.queue_url = url;
    if (cv_worker_handle_signals() != 0) {
        free(url);
        cv_diag_free(&d);
        return CV_EXIT_INTERNAL;
    }
    /* Each job runs in a fresh image of this command (see cv_worker_opts) */
    char **self = calloc((size_t)argc + 2, sizeof *self);
    if (self) {
        self[0] = "/proc/self/exe";
        memcpy(self + 1, argv, (size_t)argc * sizeof *self);
    }
    o.self_argv = self;
    cv_worker_stats st;
    rc = cv_worker_run(&o, &st, &d);
    free(url);
    free(self);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    fprintf(stderr, "cuvil worker: %d %s: %d ok, %d failed, %d ice, %d timeout, %d oom, "
            "%d infra; %d released, %d lost\n", st.jobs, cv_cli_plural(st.jobs, "job", "jobs"), st.by_status[CV_RESULT_OK],
            st.by_status[CV_RESULT_FAILED], st.by_status[CV_RESULT_ICE],
            st.by_status[CV_RESULT_TIMEOUT], st.by_status[CV_RESULT_OOM],
            st.by_status[CV_RESULT_INFRA], st.released, st.lost);
    return rc ? CV_EXIT_INTERNAL : CV_EXIT_OK;
}

const cv_cli_command cv_cmd_worker = {
    "worker", "run compile jobs from a queue (sandboxed, cached)",
    "cuvil worker --queue URL [options]\n"
    "  --queue URL          sqlite:PATH (or kafka://...) shared with the controller\n"
    "  --cache DIR          the local cache (default $CUVIL_CACHE_DIR or ~/.cache/cuvil)\n"
    "  --remote-cache URL   a shared cache (default $CUVIL_REMOTE_CACHE)\n"
    "  --signing-key PEM    sign the action entries put there (Ed25519; default\n"
    "                       $CUVIL_REMOTE_CACHE_SIGNING_KEY); `farm up` passes its own\n"
    "  --verify-key PEM     refuse action entries from there not signed by this key\n"
    "                       (default $CUVIL_REMOTE_CACHE_VERIFY_KEY)\n"
    "  --kafka-config K=V   a librdkafka setting for a kafka:// queue (repeatable)\n"
    "  --models DIR         where the jobs' model paths are found (default .)\n"
    "  --trees DIR          instead: under DIR/<commit of the job's revision>/ (what the\n"
    "                       controller writes in its state directory's trees/)\n"
    "  --scratch DIR        per-job output directories (default $TMPDIR)\n"
    "  --id ID              worker id in the queue (default host:pid)\n"
    "  --once               exit when no job is ready\n"
    "  --max-jobs N         exit after N jobs\n"
    "  --lease S            lease length in seconds, heartbeat every S/3 (default 30)\n"
    "  --poll-ms MS         how long one wait for a job lasts (default 1000)\n"
    "  --timeout DUR        wall-clock limit per job: 90s, 1500ms, 10m (default 10m)\n"
    "  --cpu-limit S        CPU seconds per job (default twice the timeout)\n"
    "  --memory-limit SIZE  address space a job may add: 8Gi, 500M (default none)\n"
    "  --grace DUR          on SIGTERM, how long the running job may finish (default 30s);\n"
    "                       a second SIGTERM stops it at once; either way it is handed back\n"
    "  --explain            name the key fields behind each cache miss\n"
    "  --allow-test-faults  honour CUVIL_TEST_FAULT=segv|hang|oom|abort (tests only)\n"
    "  -v                   log each job\n",
    run_worker,
};
