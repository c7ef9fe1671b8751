/* The command table and the small helpers every command shares. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/diag.h"
#include "common/units.h"

extern const cv_cli_command cv_cmd_help, cv_cmd_version, cv_cmd_validate, cv_cmd_run;
extern const cv_cli_command cv_cmd_compile, cv_cmd_bench;
extern const cv_cli_command cv_cmd_cache;
extern const cv_cli_command cv_cmd_worker, cv_cmd_farm, cv_cmd_controller, cv_cmd_operator;
extern const cv_cli_command cv_cmd_submit, cv_cmd_status, cv_cmd_artifacts, cv_cmd_failures;
extern const cv_cli_command cv_cmd_symbols, cv_cmd_diff, cv_cmd_serve;

static const cv_cli_command *const commands[] = {
    &cv_cmd_validate,
    &cv_cmd_compile,
    &cv_cmd_run,
    &cv_cmd_bench,
    &cv_cmd_cache,
    &cv_cmd_worker,
    &cv_cmd_farm,
    &cv_cmd_controller,
    &cv_cmd_operator,
    &cv_cmd_submit,
    &cv_cmd_status,
    &cv_cmd_artifacts,
    &cv_cmd_failures,
    &cv_cmd_symbols,
    &cv_cmd_diff,
    &cv_cmd_serve,
    &cv_cmd_help,
    &cv_cmd_version,
};

const cv_cli_command *const *cv_cli_commands(int *count)
{
    *count = (int)(sizeof commands / sizeof commands[0]);
    return commands;
}

const cv_cli_command *cv_cli_find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

bool cv_cli_use_color(FILE *f)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        return false;
    return isatty(fileno(f)) != 0;
}

const char *cv_cli_plural(long long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

int cv_cli_usage_error(const cv_cli_command *cmd, const char *fmt, ...)
{
    fprintf(stderr, "cuvil %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    cv_cli_print_usage(cmd, stderr);
    return CV_EXIT_USAGE;
}

void cv_cli_print_usage(const cv_cli_command *cmd, FILE *f)
{
    fprintf(f, "usage: %s", cmd->usage);
    cv_cli_print_options(cmd, f);
    if (cmd->notes)
        fputs(cmd->notes, f);
}

static int units_usage_error(const cv_cli_command *cmd, cv_units_kind kind, int code,
                             const char *flag, const char *v, const cv_units_error *e)
{
    char msg[320];
    cv_units_message(msg, sizeof msg, kind, flag, v, e);
    return cv_cli_usage_error(cmd, "%s [CV%04d]", msg, code);
}

int cv_cli_size_arg(const cv_cli_command *cmd, const char *flag, const char *v, uint64_t *out)
{
    cv_units_error e;
    if (cv_units_parse_size(v, out, &e))
        return units_usage_error(cmd, CV_UNITS_SIZE, CV_E_BAD_SIZE, flag, v, &e);
    return CV_EXIT_OK;
}

int cv_cli_duration_arg(const cv_cli_command *cmd, const char *flag, const char *v, int64_t *out)
{
    cv_units_error e;
    if (cv_units_parse_duration(v, out, &e))
        return units_usage_error(cmd, CV_UNITS_DURATION, CV_E_BAD_DURATION, flag, v, &e);
    return CV_EXIT_OK;
}

bool cv_cli_wants_help(const cv_cli_command *cmd, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cv_cli_print_usage(cmd, stdout);
            return true;
        }
    }
    return false;
}
