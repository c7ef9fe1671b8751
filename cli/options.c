/* The option tables: one walker parses every command's argv against its
 * table, and one printer makes the option list of its --help from the same
 * rows (cli/cli.h, cv_cli_opt). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/targets.h"
#include "common/units.h"

enum { HELP_COL = 26, WIDTH = 79 };

static bool is_row(const cv_cli_opt *o)
{
    return o->short_name || o->name;
}

/* Whether `word` is one of the words of list, split at any of seps. */
static bool word_in(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);
    for (const char *p = list; *p; p += strcspn(p, seps), p += *p != 0) {
        size_t len = strcspn(p, seps);
        if (len == n && strncmp(p, word, n) == 0)
            return true;
    }
    return false;
}

static bool applies(const cv_cli_opt *o, const char *sub)
{
    return !o->subs || !sub || word_in(o->subs, sub, " ");
}

/* The row that arg names; *value: the text after '=' or an attached
 * value, else NULL. */
static const cv_cli_opt *find_row(const cv_cli_command *cmd, const char *sub, const char *arg,
                                  const char **value)
{
    *value = NULL;
    for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++) {
        if (!applies(o, sub))
            continue;
        if (arg[1] == '-' && o->name) {
            size_t n = strlen(o->name);
            if (strncmp(arg + 2, o->name, n) != 0 || (arg[2 + n] && arg[2 + n] != '='))
                continue;
            *value = arg[2 + n] ? arg + 3 + n : NULL;
            return o;
        }
        if (arg[1] != '-' && o->short_name && arg[1] == o->short_name &&
            (arg[2] == 0 || (o->flags & CV_OPT_ATTACHED))) {
            *value = arg[2] ? arg + 2 : NULL;
            return o;
        }
    }
    return NULL;
}

/* "90s", "100ms", "24h": a duration in the largest unit that divides it. */
static const char *ms_text(long long ms, char *buf, size_t size)
{
    static const struct { long long ms; const char *unit; } units[] = {
        {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
    size_t i = 0;
    while (ms % units[i].ms != 0)
        i++;
    snprintf(buf, size, "%lld%s", ms / units[i].ms, units[i].unit);
    return buf;
}

static int take_int(const cv_cli_command *cmd, const cv_cli_opt *o, const char *flag,
                    const char *v, void *at)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || n < o->lo || n > o->hi)
        return cv_cli_usage_error(cmd, "%s takes a number from %lld to %lld, got '%s'", flag,
                                  o->lo, o->hi, v);
    *(int *)at = (int)n;
    return 0;
}

static int take_duration(const cv_cli_command *cmd, const cv_cli_opt *o, const char *flag,
                         const char *v, int64_t *at)
{
    if (cv_cli_duration_arg(cmd, flag, v, at))
        return CV_EXIT_USAGE;
    char lo[32], hi[32];
    if (*at < o->lo || (o->hi && *at > o->hi))
        return o->hi ? cv_cli_usage_error(cmd, "%s takes %s to %s, got '%s'", flag,
                                          ms_text(o->lo, lo, sizeof lo),
                                          ms_text(o->hi, hi, sizeof hi), v)
                     : cv_cli_usage_error(cmd, "%s takes %s or more, got '%s'", flag,
                                          ms_text(o->lo, lo, sizeof lo), v);
    return 0;
}

static int take_size(const cv_cli_command *cmd, const cv_cli_opt *o, const char *flag,
                     const char *v, uint64_t *at)
{
    if (cv_cli_size_arg(cmd, flag, v, at))
        return CV_EXIT_USAGE;
    if (*at < (uint64_t)o->lo)
        return cv_cli_usage_error(cmd, "%s must be at least %lld bytes, got '%s'", flag, o->lo, v);
    return 0;
}

static int take_list(const cv_cli_command *cmd, const cv_cli_opt *o, const char *flag,
                     const char *v, char *args)
{
    int *n = (int *)(args + o->count);
    if (*n >= o->hi)
        return cv_cli_usage_error(cmd, "too many %s (at most %lld)", flag, o->hi);
    ((const char **)(args + o->at))[(*n)++] = v;
    return 0;
}

static int take(const cv_cli_command *cmd, const cv_cli_opt *o, const char *flag, const char *v,
                void *args)
{
    char *at = (char *)args + o->at;
    switch (o->kind) {
    case CV_OPT_FLAG:
        *(bool *)at = true;
        return 0;
    case CV_OPT_STR:
        *(const char **)at = v;
        return 0;
    case CV_OPT_INT:
        return take_int(cmd, o, flag, v, at);
    case CV_OPT_SIZE:
        return take_size(cmd, o, flag, v, (uint64_t *)at);
    case CV_OPT_DURATION:
        return take_duration(cmd, o, flag, v, (int64_t *)at);
    case CV_OPT_CHOICE:
        if (!word_in(o->choices, v, "|"))
            return cv_cli_usage_error(cmd, "%s takes %s, got '%s'", flag, o->choices, v);
        *(const char **)at = v;
        return 0;
    case CV_OPT_LIST:
        return take_list(cmd, o, flag, v, args);
    case CV_OPT_CALL:
        return o->call(cmd, o, v, args);
    }
    return 0;
}

/* "--top" or "-t": the option as the user wrote it, without its value. */
static const char *flag_text(const char *arg, char *buf, size_t size)
{
    size_t n = arg[1] == '-' ? strcspn(arg, "=") : 2;
    snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), arg);
    return buf;
}

static int option(const cv_cli_command *cmd, const char *sub, int argc, char **argv, int *i,
                  void *args)
{
    const char *arg = argv[*i], *v;
    const cv_cli_opt *o = find_row(cmd, sub, arg, &v);
    if (!o)
        return sub ? cv_cli_usage_error(cmd, "%s: unknown option '%s'", sub, arg)
                   : cv_cli_usage_error(cmd, "unknown option '%s'", arg);
    char flag[64];
    flag_text(arg, flag, sizeof flag);
    if (!o->value && v)
        return cv_cli_usage_error(cmd, "%s takes no value, got '%s'", flag, arg);
    if (o->value && !v) {
        if ((o->flags & CV_OPT_ATTACHED) || *i + 1 >= argc)
            return cv_cli_usage_error(cmd, "%s needs a value (%s)", flag, o->value);
        v = argv[++*i];
    }
    return take(cmd, o, flag, v, args);
}

static int operand(const cv_cli_command *cmd, const char *arg, void *args)
{
    const char **slot = (const char **)((char *)args + cmd->operand_at);
    if (*slot)
        return cv_cli_usage_error(cmd, "more than one %s given ('%s')", cmd->operand, arg);
    *slot = arg;
    return 0;
}

int cv_cli_parse(const cv_cli_command *cmd, const char *sub, int argc, char **argv, int first,
                 void *args)
{
    bool rest = false;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (!rest && strcmp(a, "--") == 0) {
            rest = true;
            continue;
        }
        if (!rest && a[0] == '-' && a[1])
            rc = option(cmd, sub, argc, argv, &i, args);
        else if (cmd->positional)
            rc = cmd->positional(a, args);
        else if (cmd->operand)
            rc = operand(cmd, a, args);
        else
            rc = cv_cli_usage_error(cmd, "unexpected argument '%s'", a);
        if (rc)
            return rc;
    }
    return 0;
}

int cv_cli_input_arg(const cv_cli_command *cmd, const cv_cli_opt *o, const char *v, void *args)
{
    cv_cli_inputs *in = (cv_cli_inputs *)((char *)args + o->at);
    char *eq = strchr(v, '=');
    if (!eq || eq == v)
        return cv_cli_usage_error(cmd, "--input takes NAME=FILE.npy, got '%s'", v);
    if (in->n == CV_CLI_MAX_INPUTS)
        return cv_cli_usage_error(cmd, "more than %d --input given", CV_CLI_MAX_INPUTS);
    *eq = 0;
    in->names[in->n] = v;
    in->files[in->n++] = eq + 1;
    return 0;
}

/* ------------------------------------------------------------ printing */

/* "-t, --target TARGET", "--once", "-O0..-O3". */
static void row_label(const cv_cli_opt *o, char *buf, size_t size)
{
    if (o->flags & CV_OPT_ATTACHED) {
        snprintf(buf, size, "-%c%lld..-%c%lld", o->short_name, o->lo, o->short_name, o->hi);
        return;
    }
    char s[4] = {'-', o->short_name, 0};
    snprintf(buf, size, "%s%s%s%s%s%s", o->short_name ? s : "", o->short_name && o->name ? ", " : "",
             o->name ? "--" : "", o->name ? o->name : "", o->value ? " " : "",
             o->value ? o->value : "");
}

/* The row's help with {targets} replaced and the subcommands that take it
 * named; malloc'd. */
static char *row_text(const cv_cli_opt *o)
{
    static const char mark[] = "{targets}";
    char targets[512];
    cv_target_names(targets, sizeof targets);
    const char *help = o->help ? o->help : "", *m = strstr(help, mark);
    size_t n = strlen(help) + sizeof targets + (o->subs ? 2 * strlen(o->subs) + 8 : 0);
    char *t = malloc(n);
    if (!t)
        return NULL;
    if (m)
        snprintf(t, n, "%.*s%s%s", (int)(m - help), help, targets, m + sizeof mark - 1);
    else
        snprintf(t, n, "%s", help);
    for (const char *s = o->subs, *sep = " ("; s && *s; sep = ", ") {
        int len = (int)strcspn(s, " ");
        snprintf(t + strlen(t), n - strlen(t), "%s%.*s%s", sep, len, s, s[len] ? "" : ")");
        s += len + (s[len] != 0);
    }
    return t;
}

/* Words of text from column col, broken before column WIDTH; each new line
 * starts at HELP_COL. */
static void wrap(const char *text, int col, FILE *f)
{
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        int len = (int)strcspn(p, " ");
        if (!len)
            break;
        if (col > HELP_COL && col + 1 + len > WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, (size_t)len, f);
        col += len;
        p += len;
    }
    fputc('\n', f);
}

void cv_cli_print_options(const cv_cli_command *cmd, FILE *f)
{
    bool header = false;
    for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++) {
        if (o->flags & CV_OPT_HIDDEN)
            continue;
        if (!header)
            fputs("options:\n", f);
        header = true;
        char label[128];
        row_label(o, label, sizeof label);
        int col = fprintf(f, "  %s", label);
        if (col + 2 > HELP_COL)
            fprintf(f, "\n%*s", HELP_COL, "");
        else
            fprintf(f, "%*s", HELP_COL - col, "");
        char *text = row_text(o);
        wrap(text ? text : "", HELP_COL, f);
        free(text);
    }
}
