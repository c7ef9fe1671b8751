/* cuvil failures [REVISION] [--top N] [--json] [--since REV] [--state DIR]
 * A revision's broken jobs sorted into patterns, root causes first, ranked
 * by the jobs each broke (controller/classify*.c); with --since, the
 * patterns of every revision in a range side by side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "common/fs.h"
#include "controller/failures.h"

extern const cv_cli_command cv_cmd_failures;

#define DEFAULT_TOP 20
#define LIST_SHOWN 8         /* models, roots, configs listed in text */
#define SHORT_COMMIT 7

typedef struct failures_args {
    const char *state, *revision, *since;
    int top;
    bool json;
} failures_args;

static const char *short_rev(const char *rev, char buf[SHORT_COMMIT + 1])
{
    const char *at = strstr(rev, "@sha1:");
    snprintf(buf, SHORT_COMMIT + 1, "%s", at ? at + 6 : rev);
    return buf;
}

/* ---- text */

static void print_list(const char *label, const char *const *v, int n)
{
    printf("    %-12s", label);
    for (int i = 0; i < n && i < LIST_SHOWN; i++)
        printf("%s%s", i ? ", " : "", v[i]);
    if (n > LIST_SHOWN)
        printf(", ... (%d in all)", n);
    printf("\n");
}

static void print_roots(const cv_failure_group *g)
{
    for (int i = 0; i < g->n_roots && i < LIST_SHOWN; i++) {
        const cv_failure_root *r = &g->roots[i];
        char where[CV_GIT_PATH_MAX + 64];
        if (r->file && r->line)
            snprintf(where, sizeof where, "%s:%d:%d", r->file, r->line, r->col);
        else
            snprintf(where, sizeof where, "%s", r->model);
        printf("    %-12s%s  (%lld job%s:", i ? "" : "roots", where, (long long)r->jobs,
               r->jobs == 1 ? "" : "s");
        for (int k = 0; k < r->n_configs && k < LIST_SHOWN; k++)
            printf("%s %s", k ? "," : "", r->configs[k]);
        printf("%s)\n", r->n_configs > LIST_SHOWN ? ", ..." : "");
    }
    if (g->n_roots > LIST_SHOWN)
        printf("    %-12s... %d more roots (--json lists them all)\n", "", g->n_roots - LIST_SHOWN);
}

/* The example diagnostic as `cuvil compile` prints it, indented. */
static void print_indented(const cv_diag *ex)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return;
    cv_diag_print_entry(ex, cv_diag_get(ex, 1), mem, false);
    fclose(mem);
    for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        printf("      %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
    }
    free(buf);
}

static void print_group(int rank, const cv_failure_group *g)
{
    const char *name, *summary;
    cv_failure_group_explain(g, &name, &summary);
    char cmd[CV_GIT_PATH_MAX + 256];
    printf("\n%2d. %s\n", rank, g->pattern);
    printf("    %lld job%s broken, %d root%s in %d model%s%s\n", (long long)g->jobs,
           g->jobs == 1 ? "" : "s", g->n_roots, g->n_roots == 1 ? "" : "s", g->n_models,
           g->n_models == 1 ? "" : "s", g->is_new ? "  -- NEW in this revision" : "");
    printf("    %-12s%s: %s\n", "means", name, summary);
    printf("    %-12s%s\n", "first seen", g->is_new ? "this revision" : g->first_seen);
    print_list("models", g->models, g->n_models);
    print_list("targets", g->targets, g->n_targets);
    print_roots(g);
    if (g->derived)
        printf("    %-12s%lld error%s caused by these roots (folded in)\n", "derived",
               (long long)g->derived, g->derived == 1 ? "" : "s");
    if (g->example && g->example->n) {
        printf("    example     %s  %s %s %s\n", g->ex_model, g->ex_target, g->ex_precision,
               g->ex_opt);
        print_indented(g->example);
    }
    cv_failure_group_reproduce(g, cmd, sizeof cmd);
    printf("    %-12s%s\n", "reproduce", cmd);
}

static void print_report(const cv_failure_report *r, int top)
{
    int fresh = 0;
    for (int i = 0; i < r->n_groups; i++)
        fresh += r->groups[i].is_new;
    printf("revision    %s  %s\n", r->revision, cv_rev_state_name(r->state));
    printf("jobs        %lld, %lld broken: %d pattern%s, %d new in this revision\n",
           (long long)r->jobs, (long long)r->broken, r->n_groups, r->n_groups == 1 ? "" : "s",
           fresh);
    if (r->revision_errors)
        printf("specs       %lld %s about the revision itself (see `cuvil status`)\n",
               (long long)r->revision_errors, cv_cli_plural(r->revision_errors, "error", "errors"));
    for (int i = 0; i < r->n_groups && i < top; i++)
        print_group(i + 1, &r->groups[i]);
    if (r->n_groups > top)
        printf("\n... %d more %s (--top %d shows them)\n", r->n_groups - top,
               cv_cli_plural(r->n_groups - top, "pattern", "patterns"), r->n_groups);
}

static void print_trend(const cv_failure_trend *t)
{
    char buf[SHORT_COMMIT + 1];
    printf("patterns from %s to %s (%d %s, oldest first)\n\n", t->revisions[0],
           t->revisions[t->n_revisions - 1], t->n_revisions,
           cv_cli_plural(t->n_revisions, "revision", "revisions"));
    for (int r = 0; r < t->n_revisions; r++)
        printf("%8s", short_rev(t->revisions[r], buf));
    printf("  %-8s pattern\n", "first");
    for (int r = 0; r < t->n_revisions; r++)
        printf("%8lld", (long long)t->broken[r]);
    printf("  %-8s (jobs broken)\n", "");
    for (int k = 0; k < t->n_patterns; k++) {
        for (int r = 0; r < t->n_revisions; r++)
            printf("%8lld", (long long)t->jobs[(size_t)k * (size_t)t->n_revisions + (size_t)r]);
        printf("  %-8s %s\n", short_rev(t->first_seen[k], buf), t->patterns[k]);
    }
}

/* ---- JSON */

static void print_json(json_t *o)
{
    char *text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(o);
}

/* ---- the command */

static int parse_args(int argc, char **argv, failures_args *a)
{
    *a = (failures_args){.state = cv_cli_default_state(), .top = DEFAULT_TOP};
    return cv_cli_parse(&cv_cmd_failures, NULL, argc, argv, 1, a);
}

static int run_report(cv_builddb *db, const failures_args *a, cv_diag *d)
{
    cv_failure_report r;
    if (cv_failures_classify(db, a->revision, &r, d) != 0)
        return -1;
    char *trees = cv_fs_join(a->state, "trees");
    if (trees)
        cv_failure_report_attach_sources(&r, trees);
    free(trees);
    if (a->json)
        print_json(cv_failure_report_json(&r, a->top));
    else
        print_report(&r, a->top);
    cv_failure_report_free(&r);
    return 0;
}

static int run_trend(cv_builddb *db, const failures_args *a, cv_diag *d)
{
    cv_failure_trend t;
    if (cv_failures_trend(db, a->since, a->revision, &t, d) != 0)
        return -1;
    if (a->json)
        print_json(cv_failure_trend_json(&t));
    else
        print_trend(&t);
    cv_failure_trend_free(&t);
    return 0;
}

static int run_failures(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_failures, argc, argv))
        return CV_EXIT_OK;
    failures_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    cv_builddb *db = NULL;
    rc = cv_cli_open_builddb(a.state, &db, &d);
    if (rc == 0)
        rc = a.since ? run_trend(db, &a, &d) : run_report(db, &a, &d);
    cv_builddb_close(db);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    return rc ? CV_EXIT_INPUT : CV_EXIT_OK;
}

static const cv_cli_opt options[] = {
    CV_CLI_INT(0, "top", "N", failures_args, top, 1, 100000,
               "show the N patterns that broke the most jobs (default 20)"),
    CV_CLI_FLAG(0, "json", failures_args, json, "the report as one JSON object"),
    CV_CLI_STR(0, "since", "REV", failures_args, since,
               "trends: the patterns of every revision from REV to REVISION, jobs broken per "
               "revision (at most the newest 100 revisions)"),
    CV_CLI_STR(0, "state", "DIR", failures_args, state,
               "the farm's state directory (default $CUVIL_FARM_STATE or .cuvil-farm)"),
    CV_CLI_END,
};

const cv_cli_command cv_cmd_failures = {
    "failures", "sort a revision's failed jobs into root causes and patterns",
    "cuvil failures [REVISION] [--top N] [--json] [--since REV] [--state DIR]\n"
    "  REVISION  ref@sha1:COMMIT, a commit id or a prefix of one (4+ hex digits), or\n"
    "            latest (default)\n",
    run_failures, options,
    "A pattern is a root diagnostic's code and its AST path (model language) or IR/op\n"
    "path (CU-IR, ONNX) with names, numbers and places abstracted, e.g.\n"
    "  CV3203 FunctionDef>Assign>Call[cvl.conv2d]\n"
    "so the same mistake in two models, or in two revisions, is one pattern.  Errors\n"
    "caused by an earlier error are folded under it; a root failing for several\n"
    "targets and precisions is one entry.  Failures that are not the model's are\n"
    "named by class: ice (crash), timeout, oom, infra, flaky (the same job failed and\n"
    "succeeded at one revision).  Each pattern shows the registry's explanation of\n"
    "its code, the revision it was first seen at (NEW when this one), the models and\n"
    "targets affected, an example with its source line while the revision's files\n"
    "are in the state directory, and a command that reproduces it.  Exit status 0\n"
    "unless the revision or the farm state cannot be read.\n",
    NULL, sizeof(failures_args), NULL, "revision", offsetof(failures_args, revision),
};
