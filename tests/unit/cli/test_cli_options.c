/* The option tables of every command (cli/options.c): each row is printed in
 * the command's --help and taken by its parser, both spellings of a value
 * (--opt V, --opt=V); unknown options and missing values are usage errors;
 * --help fits in 80 columns; hidden rows stay out of it; the hand-written
 * synopsis names only options that are rows.  Drives the table
 * parser only, so nothing is compiled or started. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli/cli.h"

static char *help_text(const cv_cli_command *cmd)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    cv_cli_print_usage(cmd, f);
    fclose(f);
    return text;
}

static bool is_row(const cv_cli_opt *o)
{
    return o->short_name || o->name;
}

/* The subcommand a row is tried under: its first, else the command's first. */
static void row_sub(const cv_cli_command *cmd, const cv_cli_opt *o, char *buf, size_t size)
{
    const char *list = o->subs ? o->subs : cmd->subs ? cmd->subs : "";
    snprintf(buf, size, "%.*s", (int)strcspn(list, " "), list);
}

/* "--name", else "-s". */
static void opt_name(const cv_cli_opt *o, char *buf, size_t size)
{
    if (o->name)
        snprintf(buf, size, "--%s", o->name);
    else
        snprintf(buf, size, "-%c", o->short_name);
}

/* A value the row takes, from its kind (or its example). */
static void sample_value(const cv_cli_opt *o, char *buf, size_t size)
{
    if (o->example)
        snprintf(buf, size, "%s", o->example);
    else if (o->kind == CV_OPT_INT)
        snprintf(buf, size, "%lld", o->hi);   /* lo may be 0: the struct's zero */
    else if (o->kind == CV_OPT_SIZE)
        snprintf(buf, size, "%lldGi", o->lo / (1LL << 30) + 1);
    else if (o->kind == CV_OPT_DURATION)
        snprintf(buf, size, "%lldms", o->lo > 0 ? o->lo : 1);
    else if (o->kind == CV_OPT_CHOICE)
        snprintf(buf, size, "%.*s", (int)strcspn(o->choices, "|"), o->choices);
    else
        snprintf(buf, size, "x=y");
}

/* Parses {name, [sub], a, [b]} into a fresh argument struct; *args, if
 * given, receives it (else it is freed). */
static int parse(const cv_cli_command *cmd, const char *sub, const char *a, const char *b,
                 unsigned char **args)
{
    char words[4][256];
    char *argv[5];
    int argc = 0;
    const char *given[] = {cmd->name, sub && *sub ? sub : NULL, a, b};
    for (int i = 0; i < 4; i++) {
        if (!given[i])
            continue;
        snprintf(words[argc], sizeof words[argc], "%s", given[i]);  /* argv is writable */
        argv[argc] = words[argc];
        argc++;
    }
    argv[argc] = NULL;
    unsigned char *buf = calloc(1, cmd->args_size + 1);
    assert_non_null(buf);
    /* every refusal prints the usage: keep it out of the test's output */
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    int rc = cv_cli_parse(cmd, sub && *sub ? sub : NULL, argc, argv, sub && *sub ? 2 : 1, buf);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(null);
    if (args)
        *args = buf;
    else
        free(buf);
    return rc;
}

static bool changed(const unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i])
            return true;
    return false;
}

/* Every row, as -s/--name, with its value apart and (long names) joined. */
static void test_every_row_accepted(void **state)
{
    (void)state;
    int n;
    const cv_cli_command *const *cmds = cv_cli_commands(&n);
    int rows = 0;
    for (int c = 0; c < n; c++) {
        const cv_cli_command *cmd = cmds[c];
        for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++, rows++) {
            char sub[64], v[256], opt[300];
            row_sub(cmd, o, sub, sizeof sub);
            sample_value(o, v, sizeof v);
            if (o->kind == CV_OPT_CALL)
                assert_non_null(o->example);
            if (o->flags & CV_OPT_ATTACHED)
                snprintf(opt, sizeof opt, "-%c%s", o->short_name, v);
            else
                opt_name(o, opt, sizeof opt);
            bool apart = o->value && !(o->flags & CV_OPT_ATTACHED);
            unsigned char *args;
            if (parse(cmd, sub, opt, apart ? v : NULL, &args) != 0)
                fail_msg("cuvil %s %s: %s %s refused", cmd->name, sub, opt, apart ? v : "");
            if (o->kind != CV_OPT_CALL && !changed(args, cmd->args_size))
                fail_msg("cuvil %s: %s stored nothing", cmd->name, opt);
            free(args);
            if (apart && o->name) {
                char joined[600];
                snprintf(joined, sizeof joined, "%s=%s", opt, v);
                if (parse(cmd, sub, joined, NULL, NULL) != 0)
                    fail_msg("cuvil %s %s: %s refused", cmd->name, sub, joined);
            }
        }
    }
    assert_true(rows > 100);   /* the tables are there */
}

/* Each visible row starts a line of the option list; hidden ones are
 * nowhere in the help; no line is wider than 80 columns. */
static void test_help_lists_every_row(void **state)
{
    (void)state;
    int n;
    const cv_cli_command *const *cmds = cv_cli_commands(&n);
    for (int c = 0; c < n; c++) {
        const cv_cli_command *cmd = cmds[c];
        char *help = help_text(cmd);
        for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++) {
            char start[128];
            if (o->short_name)
                snprintf(start, sizeof start, "\n  -%c", o->short_name);
            else
                snprintf(start, sizeof start, "\n  --%s", o->name);
            bool hidden = (o->flags & CV_OPT_HIDDEN) != 0;
            if (!hidden && !strstr(help, start))
                fail_msg("cuvil %s --help has no row for%s", cmd->name, start + 1);
            if (hidden && o->name) {
                char name[128];
                snprintf(name, sizeof name, "--%s", o->name);
                if (strstr(help, name))
                    fail_msg("cuvil %s --help shows the hidden %s", cmd->name, name);
            }
        }
        for (const char *line = help; *line;) {
            size_t len = strcspn(line, "\n");
            if (len > 80)
                fail_msg("cuvil %s --help: a line of %zu columns: %.*s", cmd->name, len,
                         (int)len, line);
            line += len + (line[len] != 0);
        }
        free(help);
    }
}

/* A planted unknown option, and each value option without its value. */
static void test_usage_errors(void **state)
{
    (void)state;
    int n;
    const cv_cli_command *const *cmds = cv_cli_commands(&n);
    for (int c = 0; c < n; c++) {
        const cv_cli_command *cmd = cmds[c];
        char sub[64];
        snprintf(sub, sizeof sub, "%.*s", cmd->subs ? (int)strcspn(cmd->subs, " ") : 0,
                 cmd->subs ? cmd->subs : "");
        assert_int_equal(parse(cmd, sub, "--no-such-option", NULL, NULL), CV_EXIT_USAGE);
        for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++) {
            if (!o->value)
                continue;
            char opt[128];
            row_sub(cmd, o, sub, sizeof sub);
            opt_name(o, opt, sizeof opt);
            if (parse(cmd, sub, opt, NULL, NULL) != CV_EXIT_USAGE)
                fail_msg("cuvil %s %s: %s without a value was taken", cmd->name, sub, opt);
        }
    }
}

/* Ranges are checked: one past an INT row's bounds is refused. */
static void test_out_of_range(void **state)
{
    (void)state;
    int n, checked = 0;
    const cv_cli_command *const *cmds = cv_cli_commands(&n);
    for (int c = 0; c < n; c++) {
        const cv_cli_command *cmd = cmds[c];
        for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++) {
            if (o->kind != CV_OPT_INT || (o->flags & CV_OPT_ATTACHED))
                continue;
            char sub[64], opt[128], v[32];
            row_sub(cmd, o, sub, sizeof sub);
            opt_name(o, opt, sizeof opt);
            snprintf(v, sizeof v, "%lld", o->hi + 1);
            assert_int_equal(parse(cmd, sub, opt, v, NULL), CV_EXIT_USAGE);
            snprintf(v, sizeof v, "%lld", o->lo - 1);
            assert_int_equal(parse(cmd, sub, opt, v, NULL), CV_EXIT_USAGE);
            checked++;
        }
    }
    assert_true(checked > 5);
}

/* The row an option word of the usage text names ("--output", "-o",
 * "-O0" for an attached row), or NULL. */
static const cv_cli_opt *row_named(const cv_cli_command *cmd, const char *w, size_t len)
{
    for (const cv_cli_opt *o = cmd->opts; o && is_row(o); o++) {
        if (len > 2 && w[1] == '-' && o->name && strlen(o->name) == len - 2 &&
            memcmp(w + 2, o->name, len - 2) == 0)
            return o;
        if (w[1] != '-' && w[1] == o->short_name &&
            (len == 2 || (o->flags & CV_OPT_ATTACHED)))
            return o;
    }
    return NULL;
}

/* The synopsis and text before the options are written by hand: every
 * option they name (a word starting with '-' after a space, '[' or '|')
 * must be a row of the command, so they cannot offer what the parser
 * refuses. */
static void test_synopsis_names_rows(void **state)
{
    (void)state;
    int n, words = 0;
    const cv_cli_command *const *cmds = cv_cli_commands(&n);
    for (int c = 0; c < n; c++) {
        const cv_cli_command *cmd = cmds[c];
        for (const char *p = cmd->usage; (p = strchr(p, '-'));) {
            /* "cuvil --version": main's own options, not the command's */
            bool global = p - cmd->usage >= 6 && memcmp(p - 6, "cuvil ", 6) == 0;
            bool starts = p > cmd->usage && strchr(" [|", p[-1]) && !global;
            size_t len = 1 + strspn(p + 1, "-abcdefghijklmnopqrstuvwxyz"
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
            if (starts && len > 1 && p[1] != ' ' && !(p[1] == '-' && len == 2)) {
                words++;
                if (!row_named(cmd, p, len))
                    fail_msg("cuvil %s: the usage text names %.*s, which no row takes",
                             cmd->name, (int)len, p);
            }
            p += len;
        }
    }
    assert_true(words > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_accepted),
        cmocka_unit_test(test_help_lists_every_row),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_synopsis_names_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
