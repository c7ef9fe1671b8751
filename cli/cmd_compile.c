/* cuvil compile MODEL -t TARGET [-O2] [-o DIR] [--emit LIST] [--stats]
 * Compiles a model into a native inference library, through the cache
 * (compile/build.c: L1 front-end cache, L2 artifact cache, local then remote). */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cli/cli.h"
#include "common/fs.h"
#include "queue/jobmsg.h"
#include "common/jsonutil.h"
#include "common/strbuf.h"
#include "compiler-core/cuvil.h"
#include "spec/spec.h"
#include "compile/build.h"

extern const cv_cli_command cv_cmd_compile;

typedef struct compile_args {
    const char *model;
    cv_compile_opts o;
    const char *precision, *remote, *calib_method;
    cv_quant_opts quant;        /* --calibration, --calibration-method, --min-sqnr */
    char calib[4096];           /* repeated --calibration specs, joined with ';' */
    bool stats, verbose, no_cache, explain, quiet, force, weights_file;
    const char *name;           /* --name */
    int max_ops;                /* --max-ops; 0: CV_MAX_COMPILE_OPS */
    int64_t timeout_ms;         /* --timeout; 0: none */
} compile_args;

static int target_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v, void *args)
{
    (void)opt;
    char list[512];
    if (!cv_target_known(v))
        return cv_cli_usage_error(cmd, "unknown target '%s'; the targets are %s", v,
                                  cv_target_names(list, sizeof list));
    ((compile_args *)args)->o.target = v;
    return 0;
}

static int emit_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v, void *args)
{
    (void)opt;
    if (cv_emit_parse(v, &((compile_args *)args)->o.emit))
        return cv_cli_usage_error(cmd, "--emit takes a list of so,a,obj,h,llvm,cuir,c; got '%s'", v);
    return 0;
}

static int calibration_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v,
                           void *args)
{
    (void)opt;
    compile_args *a = args;
    size_t at = strlen(a->calib);
    if (at + strlen(v) + 2 > sizeof a->calib)
        return cv_cli_usage_error(cmd, "--calibration: specs too long");
    snprintf(a->calib + at, sizeof a->calib - at, "%s%s", at ? ";" : "", v);
    a->quant.calibration = a->calib;
    return 0;
}

static int sqnr_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v, void *args)
{
    (void)opt;
    char *end;
    double db = strtod(v, &end);
    if (end == v || *end || !(db > 0 && db < 200))
        return cv_cli_usage_error(cmd, "--min-sqnr takes dB in (0, 200), got '%s'", v);
    ((compile_args *)args)->quant.min_sqnr = db;
    return 0;
}

static int parse_args(compile_args *a, int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_compile;
    a->o.opt_level = 2;
    int rc = cv_cli_parse(cmd, NULL, argc, argv, 1, a);
    if (rc)
        return rc;
    if (!a->model)
        return cv_cli_usage_error(cmd, "no model given");
    if (a->explain)
        a->verbose = true;
    if (a->calib_method)
        a->quant.method = (cv_calib_method)cv_calib_method_parse(a->calib_method);
    if (a->weights_file)
        a->o.emit = (a->o.emit ? a->o.emit : CV_EMIT_DEFAULT) | CV_EMIT_WEIGHTS;
    if (!a->o.out_dir)
        a->o.out_dir = "cuvil-out";
    return 0;
}

static void print_stats(const cv_compile_info *info)
{
    printf("model      %s\n", info->name);
    printf("ops        %d before the graph passes, %d after\n", info->n_ops_in, info->n_ops);
    printf("passes     const-fold %d ops, batch-norm fold %d, cse %d ops + %d params, "
           "dce %d ops + %d params\n", info->pass_folded, info->pass_bn_folded,
           info->pass_cse_ops, info->pass_cse_params, info->pass_dead_ops,
           info->pass_dead_params);
    if (info->pass_attention || info->pass_layer_norms || info->pass_gelus)
        printf("fused      %d attention, %d layer_norm, %d gelu (from the exported chains)\n",
               info->pass_attention, info->pass_layer_norms, info->pass_gelus);
    printf("kernels    %d before fusion, %d after (%d ops fused into their producer)\n",
           info->n_kernels + info->n_fused, info->n_kernels, info->n_fused);
    if (info->nchwc_block)
        printf("layout     %d convolutions in the blocked NCHW%dc layout, %d reorders inserted\n",
               info->n_blocked_convs, info->nchwc_block, info->n_reorders);
    else
        printf("layout     plain NCHW (blocked layout off for this target or option)\n");
    printf("arena      %lld bytes (peak-live bound %lld, ratio %.3f; symbolic dims = 1)\n",
           (long long)info->arena_bytes, (long long)info->peak_bytes,
           info->peak_bytes ? (double)info->arena_bytes / (double)info->peak_bytes : 1.0);
    if (info->arena_formula[0])
        printf("arena      = %s bytes: %lld, %lld, %lld at every symbol = 1, 16, 128\n",
               info->arena_formula, (long long)info->arena_at[0], (long long)info->arena_at[1],
               (long long)info->arena_at[2]);
    printf("time       passes %.1f ms, codegen %.1f ms, llvm %.1f ms, link %.1f ms\n",
           info->ms_passes, info->ms_codegen, info->ms_llvm, info->ms_link);
}

/* --timeout.  LLVM cannot be interrupted part way and a compile thread cannot
 * be cancelled safely, so expiry ends the process from the signal handler
 * with the diagnostic prepared beforehand (write and _exit only: both are
 * async-signal-safe).  The cache writes entries by rename, so none is left
 * half written; files under -o may be. */
static char timeout_msg[600];
static size_t timeout_len;

static void on_timeout(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, timeout_msg, timeout_len);
    (void)w;
    _exit(CV_EXIT_INPUT);
}

static void arm_timeout(const compile_args *a)
{
    int n = snprintf(timeout_msg, sizeof timeout_msg, "%s: error[CV5013]: the compile ran past "
                     "--timeout (%lld ms) and was stopped\n", a->model, (long long)a->timeout_ms);
    timeout_len = n < 0 ? 0 : (size_t)n < sizeof timeout_msg ? (size_t)n : sizeof timeout_msg - 1;
    struct sigaction sa = {.sa_handler = on_timeout};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {.tv_sec = (time_t)(a->timeout_ms / 1000),
                                        .tv_usec = (suseconds_t)(a->timeout_ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_timeout(void)
{
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
}

/* One line: what was written where, from the artifact's manifest. */
static void print_wrote(const compile_args *a, const cv_build_result *r)
{
    char *path = cv_fs_join(a->o.out_dir, "manifest.json");
    json_t *m = NULL, *files;
    cv_diag quiet;
    cv_diag_init(&quiet);
    if (path)
        cv_json_read_file(path, 64u << 20, &m, &quiet);
    cv_diag_free(&quiet);
    free(path);
    const char *key;
    json_t *v;
    cv_sb list = CV_SB_INIT;
    files = json_object_get(m, "files");
    json_object_foreach(files, key, v) {
        size_t n = strlen(key);
        if (strncmp(key, "lib", 3) == 0 || (n > 2 && strcmp(key + n - 2, ".h") == 0))
            cv_sb_printf(&list, "%s%s", list.len ? ", " : "", key);
    }
    const char *target = a->o.target ? a->o.target : "native";
    printf("cuvil compile: wrote %s for %s to %s/ (%s%smanifest.json)%s\n", r->name, target,
           a->o.out_dir, cv_sb_str(&list), list.len ? ", " : "",
           r->compiled ? "" : " from the cache");
    cv_sb_free(&list);
    json_decref(m);
}

static int build(const compile_args *a, cv_build_result *r, cv_diag *d)
{
    cv_cache *cache = NULL;
    cv_cache_options co = {.remote = a->remote, .disabled = a->no_cache};
    if (cv_cache_open(&co, &cache, d))
        cache = NULL;  /* a broken cache is a warning: compile without it */
    cv_build_opts bo = {
        .model = a->model, .target = a->o.target,
        .precision = a->precision ? (cv_precision)cv_precision_parse(a->precision)
                                  : CV_PRECISION_FP32,
        .opt_level = (cv_opt_level)a->o.opt_level, .emit = a->o.emit,
        .out_dir = a->o.out_dir, .explain = a->explain, .debug = a->o.debug, .quant = a->quant,
        .no_blocked_layout = a->o.no_blocked_layout, .max_ops = a->max_ops,
        .name = a->name, .force = a->force,
    };
    if (a->timeout_ms)
        arm_timeout(a);
    int rc = cv_build(cache, &bo, r, d);
    if (a->timeout_ms)
        disarm_timeout();
    cv_cache_close(cache);
    return rc;
}

static int run_compile(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_compile, argc, argv))
        return CV_EXIT_OK;
    compile_args a = {0};
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    cv_build_result r;
    if (a.name && !cv_artifact_name_ok(a.name)) {
        cv_diag_error(&d, CV_E_BAD_ARTIFACT_NAME, (cv_span){0}, "--name '%.80s' is not a C "
                           "identifier of at most 64 characters ([A-Za-z_][A-Za-z0-9_]*)",
                           a.name);
        rc = CV_EXIT_INPUT;
    } else {
        rc = build(&a, &r, &d) == 0 ? CV_EXIT_OK : CV_EXIT_INPUT;
    }
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    if (rc == CV_EXIT_OK) {
        if (a.verbose) {
            char line[600];
            cv_build_cache_line(&r, line, sizeof line);
            fprintf(stderr, "%s\n", line);
        }
        if (a.stats && r.compiled)
            print_stats(&r.info);
        if (r.compiled && r.info.quant_report[0])
            fputs(r.info.quant_report, stdout);
        if (r.compiled && !r.info.linked_so && (a.o.emit == 0 || (a.o.emit & CV_EMIT_SO)))
            fprintf(stderr, "cuvil compile: no linker for %s installed: wrote the object and "
                    "archive, not lib%s.so\n", a.o.target ? a.o.target : "native", r.name);
        if (!a.quiet)
            print_wrote(&a, &r);
    }
    cv_diag_free(&d);
    return rc;
}

static const cv_cli_opt options[] = {
    {.short_name = 't', .name = "target", .value = "TARGET", .kind = CV_OPT_CALL,
     .call = target_arg, .example = "native",
     .help = "{targets} (default native: this machine's CPU; cuda-smNN: PTX in an x86-64 host "
             "library)"},
    {.short_name = 'O', .kind = CV_OPT_INT, .value = "N", .flags = CV_OPT_ATTACHED, .lo = 0,
     .hi = 3, .at = offsetof(compile_args, o.opt_level),
     .help = "optimisation level (default -O2)"},
    CV_CLI_FLAG('g', NULL, compile_args, o.debug,
                "debug info: DWARF mapping each kernel to its model line (for ONNX models, to "
                "its line in the generated <name>.cuir), and locations in the symbol map "
                "<name>.cvsym (cuvil symbols)"),
    CV_CLI_STR('o', "output", "DIR", compile_args, o.out_dir,
               "output directory (default ./cuvil-out); artifacts of other names may share it"),
    CV_CLI_STR(0, "name", "NAME", compile_args, name,
               "the artifact's C name (lib<NAME>.so, cv_<NAME>_run); default: the model's own "
               "name, or for an ONNX graph named by its exporter (torch_jit, main_graph...) "
               "the model file's stem"),
    CV_CLI_FLAG(0, "force", compile_args, force,
                "replace an artifact of the same name made from another model in DIR (CV5035 "
                "otherwise)"),
    CV_CLI_FLAG('q', "quiet", compile_args, quiet,
                "print nothing on success (default: one line, what was written)"),
    {.name = "emit", .value = "LIST", .kind = CV_OPT_CALL, .call = emit_arg, .example = "so,h",
     .help = "comma-separated files to write: so,a,obj,h,llvm,cuir,c (default so,a,obj,h; "
             "manifest.json is always written); c: portable C99 <name>.c + <name>_weights.c + "
             "<name>.h for any C compiler (cc -std=c99 -O2, -lm; -fopenmp for threads), made "
             "without LLVM when no so,a,obj,llvm is asked for"},
    CV_CLI_FLAG(0, "weights-file", compile_args, weights_file,
                "the weights in <name>.weights.bin beside the library, not in its read-only "
                "data (cv_<name>_create_weights maps them in)"),
    {.short_name = 'p', .name = "precision", .value = "PRECISION", .kind = CV_OPT_CHOICE,
     .choices = "fp32|fp16|bf16|int8", .at = offsetof(compile_args, precision),
     .help = "fp32 (default), fp16, bf16 (weights stored reduced) or int8"},
    {.name = "calibration", .value = "GLOB", .kind = CV_OPT_CALL, .call = calibration_arg,
     .example = "x=calib/*.npy",
     .help = "int8: .npy inputs to calibrate on (the last one is held out for the SQNR "
             "report); a model with several inputs takes one --calibration INPUT=GLOB per "
             "input (file i of each glob makes sample i)"},
    {.name = "calibration-method", .value = "M", .kind = CV_OPT_CHOICE,
     .choices = "minmax|percentile|entropy", .at = offsetof(compile_args, calib_method),
     .help = "minmax (default), percentile or entropy"},
    {.name = "min-sqnr", .value = "DB", .kind = CV_OPT_CALL, .call = sqnr_arg, .example = "30",
     .help = "fail (CV5110) when an int8 output's SQNR is below DB"},
    CV_CLI_FLAG(0, "stats", compile_args, stats,
                "print ops, kernels, arena size against the peak-live bound, timings"),
    CV_CLI_FLAG('v', "verbose", compile_args, verbose,
                "print the cache outcome: 'cache: l1 hit, l2 miss (reason)'"),
    CV_CLI_FLAG(0, "explain", compile_args, explain,
                "on a miss, name the key fields that differ from the closest entry"),
    CV_CLI_FLAG(0, "no-cache", compile_args, no_cache,
                "compile without the cache (also CUVIL_CACHE=off)"),
    CV_CLI_FLAG(0, "no-blocked-layout", compile_args, o.no_blocked_layout,
                "keep every convolution in the plain NCHW layout (for comparison)"),
    CV_CLI_STR(0, "remote-cache", "URL", compile_args, remote,
               "http://host:port[/instance] (also CUVIL_REMOTE_CACHE)"),
    CV_CLI_INT(0, "max-ops", "N", compile_args, max_ops, 1, CV_MAX_COMPILE_OPS_CEILING,
               "refuse (CV5012) a model with more than N ops (default 200000)"),
    {.name = "timeout", .value = "DUR", .kind = CV_OPT_DURATION, .lo = 1,
     .hi = (long long)24 * 3600 * 1000, .at = offsetof(compile_args, timeout_ms),
     .help = "stop the compile (CV5013, exit 1) after DUR: 90s, 1500ms, 10m"},
    CV_CLI_END,
};

const cv_cli_command cv_cmd_compile = {
    "compile", "compile a model into a native inference library",
    "cuvil compile MODEL [-t TARGET] [-O0..-O3] [-g] [-p PRECISION] [-o DIR]\n"
    "              [--name NAME] [--force] [--emit LIST] [--weights-file] [--stats]\n"
    "              [-q] [-v] [--explain] [--no-cache] [--remote-cache URL]\n"
    "              [--no-blocked-layout] [--calibration GLOB]\n"
    "              [--calibration-method M] [--min-sqnr DB] [--max-ops N]\n"
    "              [--timeout DUR]\n",
    run_compile, options, NULL, NULL, sizeof(compile_args), NULL,
    "model", offsetof(compile_args, model),
};
