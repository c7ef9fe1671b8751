/* `cuvil status --junit FILE` / `--markdown` and `cuvil submit ... --junit
 * --markdown`: a revision for CI systems, written from the revision's JSON
 * view (controller/status_json.c locally, GET /api/v1/revisions/REV from a
 * farm), so both paths print the same.
 *
 * JUnit XML (GitLab and most CI servers show it per test case): one test
 * case per job, a <failure> for a model error, an <error> for the farm's
 * own trouble (ice, timeout, oom, infra), <skipped> while pending.
 * Markdown: a GitHub job summary with the failed jobs' first errors. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "controller/status.h"

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static long long num(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

static void xml_escaped(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            /* XML 1.0 forbids most control characters even as references */
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
                fputc(*s, out);
        }
    }
}

static bool is_farm_error(const char *state)
{
    return strcmp(state, "ice") == 0 || strcmp(state, "timeout") == 0 ||
           strcmp(state, "oom") == 0 || strcmp(state, "infra") == 0;
}

static bool is_bad(const char *state)
{
    return strcmp(state, "failed") == 0 || is_farm_error(state);
}

/* The first error that is a root cause, else the first error; NULL. */
static const json_t *first_error(const json_t *job)
{
    const json_t *diags = json_object_get(job, "diagnostics"), *any = NULL;
    size_t i;
    const json_t *e;
    json_array_foreach(diags, i, e) {
        if (strcmp(str(e, "severity"), "error") != 0)
            continue;
        if (json_is_null(json_object_get(e, "root_id")))
            return e;
        if (!any)
            any = e;
    }
    return any;
}

static void junit_problem(FILE *out, const json_t *job, const char *tag)
{
    const json_t *first = first_error(job);
    fprintf(out, "      <%s type=\"%s\" message=\"", tag, first ? str(first, "code") : str(job, "state"));
    xml_escaped(out, first ? str(first, "message") : str(job, "state"));
    fprintf(out, "\">");
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(job, "diagnostics"), i, e) {
        char where[64];
        snprintf(where, sizeof where, ":%lld:%lld: ", num(e, "line"), num(e, "col"));
        if (*str(e, "file")) {
            xml_escaped(out, str(e, "file"));
            xml_escaped(out, where);
        }
        fprintf(out, "%s[%s]: ", str(e, "severity"), str(e, "code"));
        xml_escaped(out, str(e, "message"));
        fputc('\n', out);
    }
    fprintf(out, "</%s>\n", tag);
}

static void junit_case(FILE *out, const json_t *job)
{
    const char *state = str(job, "state");
    long long q = num(job, "queuedMs"), f = num(job, "finishedMs");
    fprintf(out, "    <testcase classname=\"");
    xml_escaped(out, str(job, "pipeline"));
    fputc('.', out);
    xml_escaped(out, str(job, "target"));
    fputc('.', out);
    xml_escaped(out, str(job, "precision"));
    fprintf(out, "\" name=\"");
    xml_escaped(out, str(job, "model"));
    fprintf(out, "\" time=\"%.3f\">\n", f > q ? (double)(f - q) / 1000.0 : 0.0);
    if (strcmp(state, "queued") == 0)
        fprintf(out, "      <skipped message=\"pending\"/>\n");
    else if (strcmp(state, "failed") == 0)
        junit_problem(out, job, "failure");
    else if (is_farm_error(state))
        junit_problem(out, job, "error");
    fprintf(out, "    </testcase>\n");
}

void cv_status_write_junit(FILE *out, const json_t *rev)
{
    const json_t *jobs = json_object_get(rev, "jobsList");
    long long failures = 0, errors = 0;
    size_t i;
    const json_t *job;
    json_array_foreach(jobs, i, job) {
        failures += strcmp(str(job, "state"), "failed") == 0;
        errors += is_farm_error(str(job, "state"));
    }
    long long created = num(rev, "createdMs"), finished = num(rev, "finishedMs");
    double secs = finished > created ? (double)(finished - created) / 1000.0 : 0.0;
    size_t n = json_array_size(jobs);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<testsuites name=\"cuvil\" tests=\"%zu\" failures=\"%lld\" errors=\"%lld\" "
                 "time=\"%.3f\">\n", n, failures, errors, secs);
    fprintf(out, "  <testsuite name=\"");
    xml_escaped(out, str(rev, "revision"));
    fprintf(out, "\" tests=\"%zu\" failures=\"%lld\" errors=\"%lld\" skipped=\"%lld\" "
                 "time=\"%.3f\">\n", n, failures, errors, num(rev, "pending"), secs);
    json_array_foreach(jobs, i, job)
        junit_case(out, job);
    fprintf(out, "  </testsuite>\n</testsuites>\n");
}

static void md_cell(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '\n')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
}

void cv_status_summary_from_json(const json_t *rev, cv_farm_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->revision, sizeof s->revision, "%s", str(rev, "revision"));
    s->jobs = num(rev, "jobs");
    s->plan_hits = num(rev, "hits");
    s->failed = num(rev, "failed");
    s->pending = num(rev, "pending");
    s->spec_errors = json_array_size(json_object_get(rev, "diagnostics")) > 0;
    long long created = num(rev, "createdMs"), finished = num(rev, "finishedMs");
    s->seconds = finished > created ? (double)(finished - created) / 1000.0 : 0.0;
    size_t i;
    const json_t *job;
    json_array_foreach(json_object_get(rev, "jobsList"), i, job) {
        if (strcmp(str(job, "state"), "ok") != 0)
            continue;
        bool hit = strcmp(str(job, "l2"), "hit") == 0 || strcmp(str(job, "l2"), "remote-hit") == 0;
        s->worker_hits += hit;
        s->compiled += !hit;
    }
}

void cv_status_write_markdown(FILE *out, const json_t *rev)
{
    cv_farm_summary s;
    cv_status_summary_from_json(rev, &s);
    fprintf(out, "### Cuvil: `%s` %s\n\n", s.revision, str(rev, "state"));
    fprintf(out, "| jobs | cache hits | compiled | failed | pending |\n|---|---|---|---|---|\n");
    fprintf(out, "| %lld | %lld | %lld | %lld | %lld |\n\n", (long long)s.jobs,
            (long long)(s.plan_hits + s.worker_hits), (long long)s.compiled,
            (long long)s.failed, (long long)s.pending);
    if (!s.failed)
        return;
    const json_t *jobs = json_object_get(rev, "jobsList");
    size_t i;
    const json_t *job;
    fprintf(out, "| model | target | precision | status | first error |\n|---|---|---|---|---|\n");
    json_array_foreach(jobs, i, job) {
        if (!is_bad(str(job, "state")))
            continue;
        const json_t *e = first_error(job);
        fprintf(out, "| `");
        md_cell(out, str(job, "model"));
        fprintf(out, "` | %s | %s | %s | ", str(job, "target"), str(job, "precision"),
                str(job, "state"));
        if (e) {
            fprintf(out, "`%s` ", str(e, "code"));
            if (*str(e, "file"))
                fprintf(out, "%s:%lld:%lld ", str(e, "file"), num(e, "line"), num(e, "col"));
            md_cell(out, str(e, "message"));
        }
        fprintf(out, " |\n");
    }
    fputc('\n', out);
}
