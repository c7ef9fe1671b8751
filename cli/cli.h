/* The command-line front: one cmd_<name>.c per command, registered in
 * cli/commands.c.  Commands only parse arguments and call component APIs. */
#ifndef CV_CLI_H
#define CV_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum {
    CV_EXIT_OK = 0,        /* success */
    CV_EXIT_INPUT = 1,     /* errors in the input (diagnostics printed) */
    CV_EXIT_USAGE = 2,     /* bad command line */
    CV_EXIT_INTERNAL = 3,  /* internal error, I/O failure, out of memory */
};

typedef struct cv_cli_command {
    const char *name;
    const char *summary;   /* one line for `cuvil help` */
    const char *usage;     /* full help text for `cuvil help <name>` / --help */
    int (*run)(int argc, char **argv);   /* argv[0] is the command name */
} cv_cli_command;

const cv_cli_command *cv_cli_find(const char *name);
const cv_cli_command *const *cv_cli_commands(int *count);

/* Colour only on a TTY and never with NO_COLOR set. */
bool cv_cli_use_color(FILE *f);
/* Prints "cuvil <cmd>: message" to stderr and returns CV_EXIT_USAGE. */
int cv_cli_usage_error(const cv_cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A size or duration flag's value in the grammar of common/units.h: 0, or
 * prints the coded error (CV1013, CV1014) and returns CV_EXIT_USAGE. */
int cv_cli_size_arg(const cv_cli_command *cmd, const char *flag, const char *v, uint64_t *out);
int cv_cli_duration_arg(const cv_cli_command *cmd, const char *flag, const char *v, int64_t *out);
/* one or many by n: "1 error", "2 errors", "1 entry", "3 entries". */
const char *cv_cli_plural(long long n, const char *one, const char *many);

/* "usage: " and the command's usage text, with {targets} replaced by the
 * target list (common/targets.h). */
void cv_cli_print_usage(const cv_cli_command *cmd, FILE *f);
/* True when argv contains -h or --help (prints the usage). */
bool cv_cli_wants_help(const cv_cli_command *cmd, int argc, char **argv);

/* Native execution shared by run and bench (cli/native_open.c): opens an
 * artifact directory, or compiles a model file (-O2, this machine) into a
 * fresh temporary directory (*tmpdir, removed by cv_cli_remove_tmpdir). */
struct cv_native;
struct cv_diag;
int cv_cli_open_native(const char *model_or_dir, int threads, struct cv_native **out,
                       char **tmpdir, double *compile_ms, struct cv_diag *d);
void cv_cli_remove_tmpdir(char *dir);
/* A fresh $TMPDIR/cuvil-run-XXXXXX (malloc'd), or NULL. */
char *cv_cli_make_tmpdir(void);

/* cuvil bench --profile (cli/bench_profile.c): runs the opened artifact in
 * dir `runs` times on ins with per-kernel timing on, and gives (*out, a new
 * reference) {"runs", "run_ms", "kernel_ms", "kernels": [{"kernel", "ops",
 * "at", "ms", "share"}...]}: milliseconds a run, slowest kernel first, ops
 * and model locations from the artifact's symbol map.  CV5038 when the
 * artifact cannot profile. */
struct cv_tensor;
struct json_t;
int cv_cli_bench_profile(struct cv_native *n, const char *dir, int runs,
                         const struct cv_tensor *ins, struct json_t **out, struct cv_diag *d);
/* The profile as a table on out. */
void cv_cli_bench_profile_print(const struct json_t *p, FILE *out);

/* cuvil cache explain (cli/cmd_cache_explain.c); argv[0] is "explain". */
int cv_cli_cache_explain(const cv_cli_command *cmd, int argc, char **argv);

/* --kafka-config KEY=VALUE settings folded into a kafka:// queue URL
 * (cli/farm_state.c).  *out is malloc'd (a copy of url when n is 0). */
#define CV_CLI_KAFKA_CONFIG_MAX 32
int cv_cli_queue_url(const char *url, const char *const *kv, int n, char **out,
                     struct cv_diag *d);

/* The build DB of a farm's state directory, for the commands that read it
 * (status, submit, artifacts): CV6070 when there is none. */
struct cv_builddb;
int cv_cli_open_builddb(const char *state_dir, struct cv_builddb **out, struct cv_diag *d);
/* The default state directory: $CUVIL_FARM_STATE or .cuvil-farm. */
const char *cv_cli_default_state(void);

#endif
