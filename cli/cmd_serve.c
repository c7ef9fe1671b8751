/* cuvil serve: the inference server (serve/serve.h) until SIGTERM. */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/diag.h"
#include "serve/serve.h"

typedef struct serve_args {
    const char *repo, *listen;
    int threads, max_conns;
    uint64_t max_body, max_header, max_tensor;
    int64_t drain_ms, poll_ms;
    bool no_batching;
} serve_args;

extern const cv_cli_command cv_cmd_serve;

static int run_serve(int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_serve;
    if (cv_cli_wants_help(cmd, argc, argv))
        return CV_EXIT_OK;
    serve_args a = {.drain_ms = 30000};
    int rc = cv_cli_parse(cmd, NULL, argc, argv, 1, &a);
    if (rc != CV_EXIT_OK)
        return rc;
    if (!a.repo)
        return cv_cli_usage_error(cmd, "no --model-repository DIR given");
    /* SIGTERM/SIGINT are taken by sigwait below; the server's threads,
     * started after this, inherit the blocked mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    cv_serve_opts o = {.model_repository = a.repo, .listen = a.listen, .threads = a.threads,
                       .max_body = a.max_body, .max_header = a.max_header,
                       .max_tensor = a.max_tensor, .max_conns = (unsigned)a.max_conns,
                       .no_batching = a.no_batching, .poll_ms = a.poll_ms};
    cv_serve *s;
    cv_diag d;
    cv_diag_init(&d);
    rc = cv_serve_start(&o, &s, &d);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    if (rc != 0)
        return CV_EXIT_INPUT;
    /* Scripts and tests read the port from this line (--listen :0). */
    fprintf(stderr, "cuvil serve: listening on port %d, models from %s\n", cv_serve_port(s),
            a.repo);
    int sig = 0;
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
        cv_diag_init(&d);
        if (cv_serve_reload(s, NULL, &d) == 0)
            fprintf(stderr, "cuvil serve: SIGHUP, the repository rescanned: every model at its "
                    "newest version\n");
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        cv_diag_free(&d);
    }
    fprintf(stderr, "cuvil serve: %s, finishing requests\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    cv_serve_stop(s, (int)a.drain_ms);
    fprintf(stderr, "cuvil serve: stopped\n");
    return CV_EXIT_OK;
}

static const cv_cli_opt options[] = {
    CV_CLI_STR(0, "model-repository", "DIR", serve_args, repo,
               "one folder per model: NAME/config.yaml and NAME/<version>/ with a compiled "
               "artifact (cuvil compile -o); the newest version is served (required)"),
    CV_CLI_STR(0, "listen", "HOST:PORT", serve_args, listen,
               "where to listen (default " CV_SERVE_DEFAULT_LISTEN "; port 0: any free port)"),
    CV_CLI_INT(0, "threads", "N", serve_args, threads, 0, 256,
               "runtime threads of each model instance (0: 1)"),
    {.name = "max-body", .value = "N", .kind = CV_OPT_SIZE, .lo = 1,
     .at = offsetof(serve_args, max_body), .help = "the largest request body (default 64Mi)"},
    {.name = "max-header", .value = "N", .kind = CV_OPT_SIZE, .lo = 1,
     .at = offsetof(serve_args, max_header),
     .help = "memory for a request's head (default 16Ki, at least 4Ki)"},
    {.name = "max-tensor", .value = "N", .kind = CV_OPT_SIZE, .lo = 1,
     .at = offsetof(serve_args, max_tensor), .help = "the largest input tensor (default 64Mi)"},
    CV_CLI_INT(0, "max-connections", "N", serve_args, max_conns, 0, 100000,
               "open connections at most (0: 256)"),
    CV_CLI_FLAG(0, "no-batching", serve_args, no_batching,
                "run every request alone, whatever max_batch_size says (for comparisons)"),
    {.name = "drain", .value = "DURATION", .kind = CV_OPT_DURATION, .lo = 0, .hi = 3600000,
     .at = offsetof(serve_args, drain_ms),
     .help = "on SIGTERM, how long requests already taken may finish (default 30s)"},
    {.name = "poll-interval", .value = "DURATION", .kind = CV_OPT_DURATION, .lo = 0,
     .hi = 86400000, .at = offsetof(serve_args, poll_ms),
     .help = "rescan the model repository this often (default: only on SIGHUP or "
             "POST /v2/repository/index)"},
    CV_CLI_END,
};

const cv_cli_command cv_cmd_serve = {
    "serve", "serve compiled models over the Open Inference Protocol (KServe/Triton v2)",
    "cuvil serve --model-repository DIR [--listen HOST:PORT] [--threads N]\n"
    "                   [options]\n"
    "\n"
    "Serves every model of DIR over HTTP: GET /v2/health/live, /v2/health/ready,\n"
    "/v2/models/NAME[/versions/V][/ready], POST /v2/models/NAME/infer (JSON tensors\n"
    "or the binary tensor extension), GET /metrics.  Requests of a model with a\n"
    "symbolic batch dimension and max_batch_size in its config.yaml are batched.\n"
    "SIGHUP (or POST /v2/repository/index, or --poll-interval) rescans DIR: new\n"
    "model folders are loaded, removed ones unloaded, a newer version is loaded\n"
    "next to the one served and swapped in (POST /v2/repository/models/NAME/load\n"
    "or /unload for one model); SIGTERM stops accepting, finishes the requests\n"
    "taken and exits.\n"
    "\n",
    run_serve, options, "docs/serve.md has the model repository layout and config.yaml.\n",
    NULL, sizeof(serve_args), NULL, NULL, 0,
};
