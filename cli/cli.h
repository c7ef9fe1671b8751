/* The command-line front: one cmd_<name>.c per command, registered in
 * cli/commands.c.  Commands only parse arguments and call component APIs. */
#ifndef CV_CLI_H
#define CV_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    CV_EXIT_OK = 0,        /* success */
    CV_EXIT_INPUT = 1,     /* errors in the input (diagnostics printed) */
    CV_EXIT_USAGE = 2,     /* bad command line */
    CV_EXIT_INTERNAL = 3,  /* internal error, I/O failure, out of memory */
};

struct cv_cli_opt;

/* A command: its usage text is the synopsis and text in `usage`, then the
 * option list printed from `opts` (cli/options.c), then `notes`, so that
 * --help cannot name an option the parser does not take, or miss one. */
typedef struct cv_cli_command {
    const char *name;
    const char *summary;   /* one line for `cuvil help` */
    const char *usage;     /* synopsis and text before the options */
    int (*run)(int argc, char **argv);   /* argv[0] is the command name */
    const struct cv_cli_opt *opts;       /* NULL or ended by a row without names */
    const char *notes;     /* text after the options, or NULL */
    /* A positional argument: 0, or a usage error's exit code.  NULL: the
     * one `operand` below, or none ("unexpected argument"). */
    int (*positional)(const char *arg, void *args);
    size_t args_size;      /* the struct the rows' offsets point into */
    const char *subs;      /* its subcommands ("get list"), or NULL */
    const char *operand;   /* the one positional ("model"), a const char * ... */
    size_t operand_at;     /* ... at this offset: "more than one model given" */
} cv_cli_command;

/* One option (cli/options.c).  The value is stored at offset `at` of the
 * command's argument struct, by kind:
 *   FLAG      bool, set true
 *   STR       const char * (argv's own)
 *   INT       int in [lo, hi]
 *   SIZE      uint64_t (common/units.h), at least lo
 *   DURATION  int64_t milliseconds (common/units.h) in [lo, hi]
 *   CHOICE    const char *, one of the '|'-separated `choices`
 *   LIST      const char *[hi] at `at`, the int count at `count` (repeatable)
 *   CALL      call(): values with a grammar of their own (--dim SYM=V) */
typedef enum cv_cli_opt_kind {
    CV_OPT_FLAG, CV_OPT_STR, CV_OPT_INT, CV_OPT_SIZE, CV_OPT_DURATION, CV_OPT_CHOICE,
    CV_OPT_LIST, CV_OPT_CALL,
} cv_cli_opt_kind;

enum {
    CV_OPT_HIDDEN = 1,    /* internal: taken, never printed */
    CV_OPT_ATTACHED = 2,  /* the value joined to the short name: -O2 */
};

typedef struct cv_cli_opt {
    char short_name;       /* 'o' for -o, or 0 */
    const char *name;      /* "output" for --output, or NULL */
    const char *value;     /* the value's name in the help ("DIR"); NULL: a flag */
    const char *help;      /* wrapped below 80 columns; {targets} is the target list */
    cv_cli_opt_kind kind;
    size_t at, count;
    long long lo, hi;
    const char *choices;
    /* CALL: 0, or prints a usage error and returns its exit code */
    int (*call)(const cv_cli_command *cmd, const struct cv_cli_opt *o, const char *v,
                void *args);
    const char *example;   /* a value it takes (CALL, STR): for tests */
    const char *subs;      /* the subcommands that take it ("stats serve"); NULL: all */
    unsigned flags;
} cv_cli_opt;

#define CV_CLI_FLAG(S, L, T, F, H) \
    {.short_name = S, .name = L, .kind = CV_OPT_FLAG, .at = offsetof(T, F), .help = H}
#define CV_CLI_STR(S, L, V, T, F, H) \
    {.short_name = S, .name = L, .value = V, .kind = CV_OPT_STR, .at = offsetof(T, F), .help = H}
#define CV_CLI_INT(S, L, V, T, F, LO, HI, H)                                                    \
    {.short_name = S, .name = L, .value = V, .kind = CV_OPT_INT, .at = offsetof(T, F),          \
     .lo = LO, .hi = HI, .help = H}
#define CV_CLI_END {0}

/* --input NAME=FILE (run, diff): a CALL row whose `at` is a cv_cli_inputs
 * in the command's arguments; argv's text is split in place. */
#define CV_CLI_MAX_INPUTS 1024
typedef struct cv_cli_inputs {
    const char *names[CV_CLI_MAX_INPUTS], *files[CV_CLI_MAX_INPUTS];
    int n;
} cv_cli_inputs;
int cv_cli_input_arg(const cv_cli_command *cmd, const struct cv_cli_opt *o, const char *v,
                     void *args);

/* Walks argv[first..] against cmd->opts: --opt V, --opt=V, -o V, -O2
 * (ATTACHED), `--` (the rest are positional), positionals through
 * cmd->positional.  sub: the subcommand whose rows apply (NULL: every
 * row).  0, or prints the usage error and returns CV_EXIT_USAGE. */
int cv_cli_parse(const cv_cli_command *cmd, const char *sub, int argc, char **argv, int first,
                 void *args);
/* The option list, as `--help` prints it after the synopsis. */
void cv_cli_print_options(const cv_cli_command *cmd, FILE *f);

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
 * target list (common/targets.h), its options and its notes. */
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

/* cuvil cache explain (cli/cmd_cache_explain.c): precision NULL is fp32. */
int cv_cli_cache_explain(const char *model, const char *target, const char *precision,
                         int opt_level);

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
