/* cuvil worker --queue URL [--cache DIR] [--remote-cache URL] ...
 * Leases compile jobs from the queue and runs each in a sandboxed child. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "worker/worker.h"

extern const cv_cli_command cv_cmd_worker;

/* The options, and what the worker runs itself as for one job or one sync
 * (the internal --job-child and --sync-child, which worker/ adds to the
 * worker's own command line). */
typedef struct worker_args {
    cv_worker_opts o;
    const char *job_dir, *sync_list;
    const char *kafka_kv[CV_CLI_KAFKA_CONFIG_MAX];
    int n_kv;
    bool verbose;
} worker_args;

static int parse_args(int argc, char **argv, worker_args *a)
{
    int rc = cv_cli_parse(&cv_cmd_worker, NULL, argc, argv, 1, a);
    if (rc)
        return rc;
    if (a->verbose)
        cv_log_level_set(CV_LOG_INFO);
    if (!a->o.queue_url && !a->job_dir && !a->sync_list)
        return cv_cli_usage_error(&cv_cmd_worker, "--queue is required");
    return CV_EXIT_OK;
}

static int run_worker(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_worker, argc, argv))
        return CV_EXIT_OK;
    worker_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    cv_worker_opts o = a.o;
    if (a.job_dir || a.sync_list) {
        /* Ends as the forked children always did, without the exit
         * handlers: the sanitized build's leak check at exit crashes in
         * its tracer after LLVM has run threads ("Tracer caught signal
         * 11"), and would turn a good result into an internal error. */
        rc = a.job_dir ? cv_worker_job_child(&o, a.job_dir) : cv_worker_sync_child(a.sync_list);
        fflush(NULL);
        _exit(rc & 0xff);
    }
    cv_diag d;
    cv_diag_init(&d);
    char *url = NULL;
    if (cv_cli_queue_url(o.queue_url, a.kafka_kv, a.n_kv, &url, &d) != 0) {
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

#define W(f) offsetof(worker_args, o.f)
static const cv_cli_opt options[] = {
    {.name = "queue", .value = "URL", .kind = CV_OPT_STR, .at = W(queue_url),
     .help = "sqlite:PATH (or kafka://...) shared with the controller"},
    {.name = "cache", .value = "DIR", .kind = CV_OPT_STR, .at = W(cache_dir),
     .help = "the local cache (default $CUVIL_CACHE_DIR or ~/.cache/cuvil)"},
    {.name = "remote-cache", .value = "URL", .kind = CV_OPT_STR, .at = W(remote_cache),
     .help = "a shared cache (default $CUVIL_REMOTE_CACHE)"},
    {.name = "signing-key", .value = "PEM", .kind = CV_OPT_STR, .at = W(sign_key),
     .help = "sign the action entries put there (Ed25519; default "
             "$CUVIL_REMOTE_CACHE_SIGNING_KEY); `farm up` passes its own"},
    {.name = "verify-key", .value = "PEM", .kind = CV_OPT_STR, .at = W(verify_key),
     .help = "refuse action entries from there not signed by this key (default "
             "$CUVIL_REMOTE_CACHE_VERIFY_KEY)"},
    {.name = "kafka-config", .value = "K=V", .kind = CV_OPT_LIST,
     .at = offsetof(worker_args, kafka_kv), .count = offsetof(worker_args, n_kv),
     .hi = CV_CLI_KAFKA_CONFIG_MAX,
     .help = "a librdkafka setting for a kafka:// queue (repeatable)"},
    {.name = "models", .value = "DIR", .kind = CV_OPT_STR, .at = W(models_dir),
     .help = "where the jobs' model paths are found (default .)"},
    {.name = "trees", .value = "DIR", .kind = CV_OPT_STR, .at = W(trees_dir),
     .help = "instead: under DIR/<commit of the job's revision>/ (what the controller "
             "writes in its state directory's trees/)"},
    {.name = "scratch", .value = "DIR", .kind = CV_OPT_STR, .at = W(scratch_dir),
     .help = "per-job output directories (default $TMPDIR)"},
    {.name = "id", .value = "ID", .kind = CV_OPT_STR, .at = W(worker_id),
     .help = "worker id in the queue (default host:pid)"},
    {.name = "once", .kind = CV_OPT_FLAG, .at = W(once), .help = "exit when no job is ready"},
    {.name = "max-jobs", .value = "N", .kind = CV_OPT_INT, .lo = 1, .hi = 1 << 30,
     .at = W(max_jobs), .help = "exit after N jobs"},
    {.name = "lease", .value = "S", .kind = CV_OPT_INT, .lo = 1, .hi = 86400, .at = W(lease_s),
     .help = "lease length in seconds, heartbeat every S/3 (default 30)"},
    {.name = "poll-ms", .value = "MS", .kind = CV_OPT_INT, .lo = 1, .hi = 3600000,
     .at = W(poll_ms), .help = "how long one wait for a job lasts (default 1000)"},
    {.name = "timeout", .value = "DUR", .kind = CV_OPT_DURATION, .lo = 1,
     .at = W(job_timeout_ms),
     .help = "wall-clock limit per job: 90s, 1500ms, 10m (default 10m)"},
    {.name = "cpu-limit", .value = "S", .kind = CV_OPT_INT, .lo = 1, .hi = 1 << 24,
     .at = W(cpu_limit_s), .help = "CPU seconds per job (default twice the timeout)"},
    {.name = "memory-limit", .value = "SIZE", .kind = CV_OPT_SIZE, .at = W(memory_limit),
     .help = "address space a job may add: 8Gi, 500M (default none)"},
    {.name = "grace", .value = "DUR", .kind = CV_OPT_DURATION, .lo = 1, .at = W(grace_ms),
     .help = "on SIGTERM, how long the running job may finish (default 30s); a second "
             "SIGTERM stops it at once; either way it is handed back"},
    {.name = "no-explain", .kind = CV_OPT_FLAG, .at = W(no_explain),
     .help = "don't record why each cache miss missed (the dashboard's top misses; each "
             "miss scans the cache's stored key manifests)"},
    {.name = "allow-test-faults", .kind = CV_OPT_FLAG, .at = W(allow_test_faults),
     .help = "honour CUVIL_TEST_FAULT=segv|hang|oom|abort (tests only)"},
    CV_CLI_FLAG('v', "verbose", worker_args, verbose, "log each job"),
    {.name = "job-child", .value = "DIR", .kind = CV_OPT_STR, .flags = CV_OPT_HIDDEN,
     .at = offsetof(worker_args, job_dir)},
    {.name = "sync-child", .value = "LIST", .kind = CV_OPT_STR, .flags = CV_OPT_HIDDEN,
     .at = offsetof(worker_args, sync_list)},
    CV_CLI_END,
};
#undef W

const cv_cli_command cv_cmd_worker = {
    "worker", "run compile jobs from a queue (sandboxed, cached)",
    "cuvil worker --queue URL [options]\n",
    run_worker, options, NULL, NULL, sizeof(worker_args), NULL, NULL, 0,
};
