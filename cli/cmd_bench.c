/* cuvil bench MODEL|ARTIFACT_DIR [--threads N] [--iters K] [--warmup W] [--batch B]
 *             [--dim SYM=V]... [--profile]
 * Times native runs on deterministic random inputs and prints p50/p90/p99,
 * and for a model over token ids (an integer first input) tokens per second:
 * a decoder with a key/value cache (--dim P=128) makes one token per
 * sequence per run.  --profile then times each kernel over as many runs
 * (cli/bench_profile.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "compiler-core/cuvil.h"

extern const cv_cli_command cv_cmd_bench;

enum { MAX_ITERS = 1000000, MAX_DIMS = 8, MAX_DIM_VALUE = 1 << 24 };

typedef struct bench_dim {
    const char *name;           /* points into argv, len bytes */
    size_t len;
    int64_t value;
    bool used;
} bench_dim;

typedef struct bench_opts {
    const char *model;
    int threads, iters, warmup, batch;
    bench_dim dims[MAX_DIMS];
    int n_dims;
    bool json, profile;
} bench_opts;

/* --dim SYM=V: the name points into argv. */
static int dim_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v, void *args)
{
    (void)opt;
    bench_opts *o = args;
    const char *eq = strchr(v, '=');
    char *end = NULL;
    long n = eq ? strtol(eq + 1, &end, 10) : -1;
    if (!eq || eq == v || o->n_dims == MAX_DIMS || !eq[1] || *end || n < 0 || n > MAX_DIM_VALUE)
        return cv_cli_usage_error(cmd, "--dim takes SYMBOL=VALUE (VALUE from 0 to %d, at most %d "
                                  "of them)", MAX_DIM_VALUE, MAX_DIMS);
    o->dims[o->n_dims++] = (bench_dim){v, (size_t)(eq - v), n, false};
    return 0;
}

static int parse_args(bench_opts *o, int argc, char **argv)
{
    *o = (bench_opts){.threads = 1, .iters = 50, .warmup = 5, .batch = 1};
    int rc = cv_cli_parse(&cv_cmd_bench, NULL, argc, argv, 1, o);
    if (rc)
        return rc;
    return o->model ? 0 : cv_cli_usage_error(&cv_cmd_bench, "no model given");
}

/* The value of symbolic dim `dim` (-1 - k): its --dim, else the batch. */
static int64_t symbol_value(const cv_native *n, bench_opts *o, int64_t dim)
{
    const char *name = cv_native_symbol_name(n, (int)(-1 - dim));
    for (int i = 0; name && i < o->n_dims; i++)
        if (strlen(name) == o->dims[i].len && !strncmp(name, o->dims[i].name, o->dims[i].len)) {
            o->dims[i].used = true;
            return o->dims[i].value;
        }
    return (int64_t)o->batch;
}

/* A --dim naming no symbol of the model is an error naming the symbols. */
static int check_dims(const cv_native *n, const bench_opts *o, cv_diag *d)
{
    for (int i = 0; i < o->n_dims; i++) {
        if (o->dims[i].used)
            continue;
        char names[512] = "";
        size_t at = 0;
        for (int k = 0; k < cv_native_num_symbols(n) && at < sizeof names; k++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", k ? ", " : "",
                                   cv_native_symbol_name(n, k));
        return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){.file = o->model}, "--dim %.*s: the "
                            "model's inputs have no symbol %.*s (they have: %s)", (int)o->dims[i].len,
                            o->dims[i].name, (int)o->dims[i].len, o->dims[i].name,
                            names[0] ? names : "none");
    }
    return 0;
}

/* Inputs of the manifest's shapes (symbolic dims from --dim, else the
 * batch), values in [-1, 1]. */
static int make_inputs(const cv_native *n, bench_opts *o, cv_tensor *ins)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < cv_native_num_inputs(n); i++) {
        cv_native_io io = cv_native_input(n, i);
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < io.rank; k++)
            dims[k] = io.dims[k] >= 0 ? io.dims[k] : symbol_value(n, o, io.dims[k]);
        if (cv_tensor_alloc(&ins[i], io.dtype, io.rank, dims))
            return -1;
        for (int64_t e = 0; e < ins[i].numel; e++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            cv_tensor_set(&ins[i], e, (double)(s >> 11) / 9007199254740992.0 * 2 - 1);
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs warmup + iters times; ms[] gets the timed ones, sorted. */
static int time_runs(cv_native *n, const bench_opts *o, cv_tensor *ins, double *ms, cv_diag *d)
{
    cv_tensor *outs = calloc((size_t)cv_native_num_outputs(n) + 1, sizeof *outs);
    if (!outs)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    int rc = 0;
    for (int i = 0; i < o->warmup + o->iters && rc == 0; i++) {
        double t0 = cv_clock_mono_ms_f();
        rc = cv_native_run(n, ins, cv_native_num_inputs(n), outs, d);
        if (i >= o->warmup)
            ms[i - o->warmup] = cv_clock_mono_ms_f() - t0;
    }
    for (int i = 0; i < cv_native_num_outputs(n); i++)
        cv_tensor_free(&outs[i]);
    free(outs);
    qsort(ms, (size_t)o->iters, sizeof *ms, cmp_double);
    return rc;
}

static double pct(const double *ms, int n, double p)
{
    int i = (int)(p * (double)(n - 1) + 0.5);
    return ms[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* tokens: token ids per run (0: the model does not read ids); prof: the
 * kernel profile or NULL. */
static void report(const bench_opts *o, const double *ms, double compile_ms, int64_t tokens,
                   json_t *prof)
{
    double p50 = pct(ms, o->iters, 0.5), p90 = pct(ms, o->iters, 0.9), p99 = pct(ms, o->iters, 0.99);
    double tok_s = tokens && p50 > 0 ? (double)tokens * 1000.0 / p50 : 0;
    if (o->json) {
        json_t *j = json_pack("{s:s, s:i, s:i, s:I, s:f, s:f, s:f, s:f, s:f}", "model", o->model,
                              "threads", o->threads, "iters", o->iters, "batch", (json_int_t)o->batch,
                              "p50_ms", p50, "p90_ms", p90, "p99_ms", p99, "min_ms", ms[0],
                              "compile_ms", compile_ms);
        json_t *dims = json_object();
        for (int i = 0; i < o->n_dims; i++) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)o->dims[i].len, o->dims[i].name);
            json_object_set_new(dims, name, json_integer(o->dims[i].value));
        }
        json_object_set_new(j, "dims", dims);
        if (tokens) {
            json_object_set_new(j, "tokens_per_run", json_integer(tokens));
            json_object_set_new(j, "tokens_per_s", json_real(tok_s));
        }
        if (prof)
            json_object_set(j, "profile", prof);
        json_dumpf(j, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(j);
        return;
    }
    if (compile_ms > 0)
        printf("compile  %.1f ms (-O2, native)\n", compile_ms);
    printf("latency  p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  min %.3f ms  (%d iters, %d thread%s, "
           "batch %lld)\n", p50, p90, p99, ms[0], o->iters, o->threads, o->threads > 1 ? "s" : "",
           (long long)o->batch);
    if (tokens)
        printf("tokens   %.1f tokens/s at p50 (%lld token id%s per run)\n", tok_s, (long long)tokens,
               tokens > 1 ? "s" : "");
    if (prof)
        cv_cli_bench_profile_print(prof, stdout);
}

static int run_bench(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_bench, argc, argv))
        return CV_EXIT_OK;
    bench_opts o;
    int rc = parse_args(&o, argc, argv);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    cv_native *n = NULL;
    char *tmp = NULL;
    double compile_ms = 0, *ms = calloc((size_t)o.iters, sizeof *ms);
    cv_tensor *ins = NULL;
    int64_t tokens = 0;
    json_t *prof = NULL;
    rc = CV_EXIT_INPUT;
    if (ms && cv_cli_open_native(o.model, o.threads, &n, &tmp, &compile_ms, &d) == 0) {
        ins = calloc((size_t)cv_native_num_inputs(n) + 1, sizeof *ins);
        if (!ins || make_inputs(n, &o, ins))
            cv_diag_error(&d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "cannot make the inputs");
        else if (check_dims(n, &o, &d) == 0 && time_runs(n, &o, ins, ms, &d) == 0 &&
                 (!o.profile || cv_cli_bench_profile(n, tmp ? tmp : o.model, o.iters, ins, &prof,
                                                     &d) == 0))
            rc = CV_EXIT_OK;
        if (ins && cv_native_num_inputs(n) > 0 && cv_dtype_is_int(ins[0].dtype))
            tokens = ins[0].numel;
        for (int i = 0; ins && i < cv_native_num_inputs(n); i++)
            cv_tensor_free(&ins[i]);
        free(ins);
    }
    if (rc == CV_EXIT_OK)
        report(&o, ms, compile_ms, tokens, prof);
    json_decref(prof);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    cv_native_close(n);
    cv_cli_remove_tmpdir(tmp);
    free(ms);
    return rc;
}

static const cv_cli_opt options[] = {
    CV_CLI_INT(0, "threads", "N", bench_opts, threads, 1, 256, "thread pool size (default 1)"),
    CV_CLI_INT(0, "iters", "K", bench_opts, iters, 1, MAX_ITERS, "timed runs (default 50)"),
    CV_CLI_INT(0, "warmup", "W", bench_opts, warmup, 0, MAX_ITERS,
               "untimed runs first (default 5)"),
    CV_CLI_INT(0, "batch", "B", bench_opts, batch, 1, MAX_ITERS,
               "the value of every symbolic dim (default 1)"),
    {.name = "dim", .value = "SYM=V", .kind = CV_OPT_CALL, .call = dim_arg, .example = "P=128",
     .help = "the symbolic dim SYM is V instead of B (a decoder's past length: --dim P=128)"},
    CV_CLI_FLAG(0, "json", bench_opts, json, "the figures as one JSON object"),
    CV_CLI_FLAG(0, "profile", bench_opts, profile,
                "then K more runs timing each kernel: milliseconds a run and share of the "
                "total, slowest first, with the ops it runs and their model locations (ONNX "
                "node names when compiled here)"),
    CV_CLI_END,
};

const cv_cli_command cv_cmd_bench = {
    "bench", "time native runs of a model (latency percentiles)",
    "cuvil bench MODEL|ARTIFACT_DIR [--threads N] [--iters K] [--warmup W]\n"
    "            [--batch B] [--dim SYM=V]... [--json] [--profile]\n"
    "  compiles MODEL for this machine (-O2) unless given an artifact directory, then\n"
    "  times K runs (default 50) after W warm-up runs (default 5) on random inputs\n"
    "  whose symbolic dims are B (default 1); prints p50/p90/p99 latency, and for a\n"
    "  model whose first input is integer token ids, tokens per second (ids per run\n"
    "  over the p50: one decode step of a key/value-cache decoder makes B tokens)\n",
    run_bench, options, NULL, NULL, sizeof(bench_opts), NULL, "model",
    offsetof(bench_opts, model),
};
