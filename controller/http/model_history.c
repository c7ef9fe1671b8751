/* One model's history across revisions (/models?model=P[&target=T] and
 * /api/v1/models): every job built from that repository path, newest
 * first, with its revision's commit, the cache's answer and the compile
 * time, and per target a summary (builds, hits, failures, mean compile
 * time).  The build DB indexes jobs by model path for it. */
#include "controller/http/html.h"

#include <stdlib.h>
#include <string.h>

#define HISTORY_MAX 200

static bool served_from_cache(const http_model_build *b)
{
    return strcmp(b->state, "hit") == 0 || strcmp(b->l2, "hit") == 0 ||
           strcmp(b->l2, "remote-hit") == 0;
}

static bool broken(const http_model_build *b)
{
    return strcmp(b->state, "queued") != 0 && strcmp(b->state, "hit") != 0 &&
           strcmp(b->state, "ok") != 0;
}

/* Per target, in the order they first appear (newest build first). */
static int summarise(const http_model_build *v, int n, http_model_target *t, int max)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < k && strcmp(t[j].target, v[i].target) != 0)
            j++;
        if (j == k) {
            if (k == max)
                continue;
            memset(&t[k], 0, sizeof t[k]);
            snprintf(t[k].target, sizeof t[k].target, "%s", v[i].target);
            snprintf(t[k].last_state, sizeof t[k].last_state, "%s", v[i].state);
            k++;
        }
        t[j].builds++;
        t[j].hits += served_from_cache(&v[i]);
        t[j].failures += broken(&v[i]);
        if (v[i].compile_ms > 0) {
            t[j].compiles++;
            t[j].compile_ms += v[i].compile_ms;
        }
    }
    return k;
}

int http_model_history(cv_builddb *db, const char *model, const char *target,
                       http_model_view *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    out->builds = calloc(HISTORY_MAX, sizeof *out->builds);
    if (!out->builds)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (http_db_model_history(db, model, target, out->builds, HISTORY_MAX, &out->n, d) != 0)
        return -1;
    out->n_targets = summarise(out->builds, out->n, out->targets, HTTP_MODEL_TARGETS_MAX);
    return 0;
}

void http_model_view_free(http_model_view *v)
{
    free(v->builds);
    *v = (http_model_view){0};
}

json_t *http_model_json(const char *model, const http_model_view *v)
{
    json_t *targets = json_array(), *builds = json_array();
    for (int i = 0; i < v->n_targets; i++) {
        const http_model_target *t = &v->targets[i];
        json_array_append_new(targets, json_pack(
            "{s:s, s:I, s:I, s:I, s:I, s:s}", "target", t->target, "builds", (json_int_t)t->builds,
            "hits", (json_int_t)t->hits, "failures", (json_int_t)t->failures, "meanCompileMs",
            (json_int_t)(t->compiles ? t->compile_ms / t->compiles : 0), "lastState",
            t->last_state));
    }
    for (int i = 0; i < v->n; i++) {
        const http_model_build *b = &v->builds[i];
        json_array_append_new(builds, json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:I, s:o, s:o}", "revision", b->revision,
            "subject",
            b->subject, "target", b->target, "precision", b->precision, "state", b->state, "l2",
            b->l2[0] ? b->l2 : (strcmp(b->state, "hit") == 0 ? "planner-hit" : "none"),
            "compileMs", (json_int_t)b->compile_ms, "artifactManifest",
            b->manifest[0] ? json_string(b->manifest) : json_null(), "queuedMs",
            (json_int_t)b->queued_ms, "miss", b->miss[0] ? json_string(b->miss) : json_null(),
            "missReason", b->miss_reason[0] ? json_string(b->miss_reason) : json_null()));
    }
    return json_pack("{s:s, s:o, s:o}", "model", model, "targets", targets, "builds", builds);
}

static void targets_table(cv_sb *o, const http_model_view *v)
{
    cv_sb_puts(o, "<table id=\"model-targets\"><tr><th>target</th><th>builds</th><th>from the "
                  "cache</th><th>failures</th><th>mean compile</th><th>last</th></tr>");
    for (int i = 0; i < v->n_targets; i++) {
        const http_model_target *t = &v->targets[i];
        cv_sb_puts(o, "<tr><td>");
        html_esc(o, t->target);
        cv_sb_printf(o, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td>"
                        "<td class=\"n\">%lld</td><td class=\"n\">",
                     (long long)t->builds, (long long)t->hits, (long long)t->failures);
        html_duration(o, t->compiles ? t->compile_ms / t->compiles : 0);
        cv_sb_puts(o, "</td><td>");
        html_state(o, t->last_state);
        cv_sb_puts(o, "</td></tr>");
    }
    cv_sb_puts(o, "</table>");
}

static void builds_table(cv_sb *o, const http_model_view *v)
{
    cv_sb_printf(o, "<h2>Builds (newest first, at most %d)</h2><table id=\"model-builds\"><tr>"
                    "<th>revision</th><th>target</th><th>precision</th><th>status</th>"
                    "<th>cache</th><th>why it missed</th><th>compile</th><th>artifact</th></tr>",
                 HISTORY_MAX);
    for (int i = 0; i < v->n; i++) {
        const http_model_build *b = &v->builds[i];
        cv_sb_puts(o, "<tr class=\"build\"><td>");
        html_rev_link(o, b->revision);
        cv_sb_puts(o, " <span class=\"muted\">");
        html_esc(o, b->subject);
        cv_sb_puts(o, "</span></td><td>");
        html_esc(o, b->target);
        cv_sb_puts(o, "</td><td>");
        html_esc(o, b->precision);
        cv_sb_puts(o, "</td><td>");
        html_state(o, b->state);
        cv_sb_puts(o, "</td><td>");
        html_esc(o, strcmp(b->state, "hit") == 0 ? "L2 hit (planner)" : b->l2);
        cv_sb_puts(o, "</td><td class=\"why\">");
        html_esc(o, b->miss_reason[0] ? b->miss_reason : b->miss);
        cv_sb_puts(o, "</td><td class=\"n\">");
        if (b->compile_ms > 0)
            html_duration(o, b->compile_ms);
        cv_sb_printf(o, "</td><td><code>%.12s</code></td></tr>", b->manifest);
    }
    cv_sb_puts(o, "</table>");
}

void http_page_model(cv_http *h, const http_req *rq, http_resp *rs)
{
    const char *model = http_arg(rq, "model"), *target = http_arg(rq, "target");
    if (!model || !*model) {
        html_error_page(rs, 400, "Which model?", "Give its repository path: /models?model=models/"
                        "resnet18.onnx (and &target=T to keep one target).");
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    http_model_view v;
    if (http_model_history(h->db, model, target && *target ? target : NULL, &v, &d) != 0) {
        html_error_page(rs, 500, "The build DB could not be read", d.n ? d.v[0].msg : "");
        http_model_view_free(&v);
        cv_diag_free(&d);
        return;
    }
    cv_sb *o = &rs->body;
    html_begin(o, model, "", 0);
    cv_sb_puts(o, "<h1>");
    html_esc(o, model);
    cv_sb_puts(o, "</h1>");
    if (!v.n)
        cv_sb_puts(o, "<p id=\"no-builds\">No job of the farm built this path.</p>");
    else
        targets_table(o, &v);
    builds_table(o, &v);
    http_model_view_free(&v);
    cv_diag_free(&d);
    html_finish(rs, o, rq->now_ms);
}

void http_api_models(cv_http *h, const http_req *rq, http_resp *rs)
{
    const char *model = http_arg(rq, "model"), *target = http_arg(rq, "target");
    cv_diag d;
    cv_diag_init(&d);
    http_model_view v = {0};
    if (!model || !*model) {
        cv_diag_error(&d, CV_E_HTTP_BAD_REQUEST, (cv_span){0}, "model= names the model (a "
                      "repository path)");
        http_error_diag(rs, 400, &d);
    } else if (http_model_history(h->db, model, target && *target ? target : NULL, &v, &d) != 0) {
        http_error_diag(rs, 500, &d);
    } else {
        http_json(rs, 200, http_model_json(model, &v));
    }
    http_model_view_free(&v);
    cv_diag_free(&d);
}
