/* Failure reports as JSON and their words: `cuvil failures --json`, the
 * HTTP API (/api/v1/failures) and the dashboard's failures page say the
 * same things. */
#include "controller/controller.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* What a class-only pattern means (no diagnostic to explain it). */
static const char *class_summary(cv_fail_class c)
{
    switch (c) {
    case CV_FAIL_ICE: return "the compiler crashed or reported an internal error";
    case CV_FAIL_TIMEOUT: return "the compile ran past its time limit";
    case CV_FAIL_OOM: return "the compile ran out of memory";
    case CV_FAIL_INFRA: return "the farm failed the job (cache, queue, model fetch, disk)";
    case CV_FAIL_FLAKY: return "the same job failed and succeeded at this revision";
    default: return "the model failed without a diagnostic";
    }
}

void cv_failure_group_explain(const cv_failure_group *g, const char **name, const char **summary)
{
    const cv_diag_code_info *info = g->code ? cv_diag_code_lookup(g->code) : NULL;
    *name = info ? info->name : cv_fail_class_name(g->cls);
    *summary = info ? info->summary : class_summary(g->cls);
}

void cv_failure_group_reproduce(const cv_failure_group *g, char *buf, size_t size)
{
    snprintf(buf, size, "cuvil compile %s -t %s -p %s -%s", g->ex_model, g->ex_target,
             g->ex_precision, g->ex_opt);
}

static json_t *strings(const char *const *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *roots_json(const cv_failure_group *g)
{
    json_t *a = json_array();
    for (int i = 0; i < g->n_roots; i++) {
        const cv_failure_root *r = &g->roots[i];
        json_array_append_new(
            a, json_pack("{s:s, s:o, s:i, s:i, s:I, s:o}", "model", r->model, "file",
                         r->file ? json_string(r->file) : json_null(), "line", r->line, "col",
                         r->col, "jobs", (json_int_t)r->jobs, "configs",
                         strings(r->configs, r->n_configs)));
    }
    return a;
}

static json_t *group_json(const cv_failure_group *g)
{
    const char *name, *summary;
    cv_failure_group_explain(g, &name, &summary);
    char code[16], cmd[CV_GIT_PATH_MAX + 256];
    snprintf(code, sizeof code, "CV%04d", g->code);
    cv_failure_group_reproduce(g, cmd, sizeof cmd);
    json_t *diags = g->example ? cv_diag_to_json(g->example) : json_array();
    json_t *first = json_array_get(diags, 0);
    json_t *ex = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "model", g->ex_model, "target",
                           g->ex_target, "precision", g->ex_precision, "opt", g->ex_opt,
                           "diagnostic", first ? json_incref(first) : json_null(),
                           "sourceLine", g->ex_line ? json_string(g->ex_line) : json_null());
    json_decref(diags);
    return json_pack("{s:s, s:s, s:o, s:s, s:s, s:I, s:I, s:s, s:b, s:o, s:o, s:o, s:o, s:s}",
                     "pattern", g->pattern, "class", cv_fail_class_name(g->cls), "code",
                     g->code ? json_string(code) : json_null(), "name", name, "summary",
                     summary, "jobs", (json_int_t)g->jobs, "derived", (json_int_t)g->derived,
                     "firstSeen", g->first_seen, "new", g->is_new, "models",
                     strings(g->models, g->n_models), "targets",
                     strings(g->targets, g->n_targets), "roots", roots_json(g), "example", ex,
                     "reproduce", cmd);
}

json_t *cv_failure_report_json(const cv_failure_report *r, int top)
{
    json_t *groups = json_array();
    for (int i = 0; i < r->n_groups && i < top; i++)
        json_array_append_new(groups, group_json(&r->groups[i]));
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:o}", "revision", r->revision, "state",
                     cv_rev_state_name(r->state), "jobs", (json_int_t)r->jobs, "broken",
                     (json_int_t)r->broken, "revisionErrors", (json_int_t)r->revision_errors,
                     "patternCount", r->n_groups, "patterns", groups);
}

json_t *cv_failure_trend_json(const cv_failure_trend *t)
{
    json_t *revs = json_array(), *pats = json_array();
    for (int r = 0; r < t->n_revisions; r++)
        json_array_append_new(revs, json_pack("{s:s, s:I}", "revision", t->revisions[r],
                                              "broken", (json_int_t)t->broken[r]));
    for (int k = 0; k < t->n_patterns; k++) {
        json_t *counts = json_array();
        for (int r = 0; r < t->n_revisions; r++)
            json_array_append_new(counts, json_integer(t->jobs[(size_t)k * (size_t)t->n_revisions +
                                                                (size_t)r]));
        json_array_append_new(pats, json_pack("{s:s, s:s, s:o}", "pattern", t->patterns[k],
                                              "firstSeen", t->first_seen[k], "jobs", counts));
    }
    return json_pack("{s:o, s:o}", "revisions", revs, "patterns", pats);
}
