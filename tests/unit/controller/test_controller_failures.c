/* The failure classifier.
 *  - patterns: paths of the three dialects, abstracted (a table)
 *  - history: a build DB with two revisions: derived errors folded, flaky
 *    jobs, first-seen revisions whatever the order of the queries, trends
 *  - corpus: tests/failures/ (model language, CU-IR, ONNX written at test
 *    time) committed to a git repository made here and built by the
 *    embedded farm ($CUVIL_BIN farm up --once); every root lands in the
 *    pattern written next to its model, derived errors never form roots,
 *    the same mistake in different models is one pattern
 * The failures that are not the model's (crash, timeout, OOM, infra, flaky)
 * are in test_controller_failures_faults.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "controller/controller.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"
#include "tests/support/failures_testlib.h"

/* ------------------------------------------------------------ patterns */

static void test_patterns(void **state)
{
    (void)state;
    static const struct {
        cv_fail_class cls;
        int code;
        const char *path, *want;
    } cases[] = {
        {CV_FAIL_MODEL, 3203,
         "FunctionDef[lenet]>For>Assign>Call[cvl.max_pool2d]>arg[0]>Call[cvl.relu]>arg[0]>"
         "Call[cvl.conv2d]", "CV3203 FunctionDef>Assign>Call[cvl.conv2d]"},
        {CV_FAIL_MODEL, 3101, "FunctionDef[m]>Assign>Call[cv.conv2d]>arg[1]",
         "CV3101 FunctionDef>Assign>Call[cvl.conv2d]>arg[1]"},
        {CV_FAIL_MODEL, 2101, "FunctionDef[m]>FunctionDef[inner]>Return>Call[relu]>arg[0]",
         "CV2101 FunctionDef>Return>Call[cvl.relu]>arg[0]"},
        {CV_FAIL_MODEL, 2104, "FunctionDef[b]>Assign>Call[cvl.conv2d]>kw[paddin]",
         "CV2104 FunctionDef>Assign>Call[cvl.conv2d]>kw"},
        {CV_FAIL_MODEL, 2108, "FunctionDef[b]>Assign>Call[cvl.conv2d]>kw[pad]",
         "CV2108 FunctionDef>Assign>Call[cvl.conv2d]>kw[pad]"},
        {CV_FAIL_MODEL, 2103, "FunctionDef[m]>Return>Call[act]>arg[1]",
         "CV2103 FunctionDef>Return>Call>arg"},
        {CV_FAIL_MODEL, 3204, "FunctionDef[m]>For>Call[range]>arg[0]",
         "CV3204 FunctionDef>For>Call[range]>arg"},
        {CV_FAIL_MODEL, 3201,
         "FunctionDef[lenet]>Assign>BinOp[+]>BinOp[@]>Attribute[T]>Attribute[weight]",
         "CV3201 FunctionDef>Assign>BinOp[@]>Attribute"},
        {CV_FAIL_MODEL, 3204, "FunctionDef[g]>If>Compare[>]", "CV3204 FunctionDef>If>Compare[>]"},
        {CV_FAIL_MODEL, 1002, "FunctionDef[f]", "CV1002 FunctionDef"},
        {CV_FAIL_MODEL, 1206, "Module>Bracket", "CV1206 Module>Bracket"},
        {CV_FAIL_MODEL, 3003, "@tinycnn>%2=max_pool2d[pool1]", "CV3003 @F>%v=max_pool2d"},
        {CV_FAIL_MODEL, 2001, "@small>%y", "CV2001 @F>%v"},
        {CV_FAIL_MODEL, 4001, "@small>%0=relux", "CV4001 @F>%v=op"},
        {CV_FAIL_MODEL, 2012, "@chain>return", "CV2012 @F>return"},
        {CV_FAIL_MODEL, 3101, "Graph>Node[Conv](Relu,init,init)",
         "CV3101 Graph>Node[Conv](Relu,init,init)"},
        {CV_FAIL_MODEL, 1302, "ModelProto>graph>node[12]", "CV1302 ModelProto>graph>node[#]"},
        {CV_FAIL_MODEL, 4101, "", "CV4101"},
        {CV_FAIL_MODEL, 0, NULL, "model"},
        {CV_FAIL_ICE, 9301, NULL, "ice CV9301"},
        {CV_FAIL_TIMEOUT, 9303, "", "timeout CV9303"},
        {CV_FAIL_FLAKY, 0, NULL, "flaky"},
    };
    char out[CV_PATTERN_MAX + 1];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cv_failure_pattern(cases[i].cls, cases[i].code, cases[i].path, out);
        if (strcmp(out, cases[i].want) != 0)
            fail_msg("%s -> '%s', want '%s'", cases[i].path ? cases[i].path : "(null)", out,
                     cases[i].want);
    }
    /* bounded whatever the path: 200 nested calls, a 2000-byte name */
    char *deep = malloc(8000), *name = malloc(2100);
    strcpy(deep, "FunctionDef[m]>Assign");
    for (int i = 0; i < 200; i++)
        strcat(deep, ">Call[cvl.relu]>arg[0]");
    memset(name, 'x', 2000);
    name[2000] = 0;
    cv_failure_pattern(CV_FAIL_MODEL, 3002, deep, out);
    assert_string_equal(out, "CV3002 FunctionDef>Assign>Call[cvl.relu]>arg[0]");
    snprintf(deep, 8000, "Graph>Node[%s]", name);
    cv_failure_pattern(CV_FAIL_MODEL, 3002, deep, out);
    assert_int_equal(strlen(out), CV_PATTERN_MAX);
    free(deep);
    free(name);
}

/* ------------------------------------------------------------- history */

#define T0 INT64_C(1700000000000)
#define REV1 "main@sha1:1111111111111111111111111111111111111111"
#define REV2 "main@sha1:2222222222222222222222222222222222222222"
#define MANIFEST "abababababababababababababababababababababababababababababababab"

typedef struct hx {
    char *dir;
    cv_builddb *db;
    cv_diag d;
    int64_t seq;
} hx;

static void h_job(hx *h, int64_t rev, const char *revname, const char *id, const char *pipeline,
                  const char *model)
{
    cv_job_msg m = {.job_id = (char *)id, .revision = (char *)revname,
                    .pipeline = (char *)pipeline, .model_path = (char *)model,
                    .target = "x86_64-avx2", .precision = CV_PRECISION_FP32,
                    .opt_level = CV_OPT_O2, .attempt = 1};
    memset(m.model_digest, 'e', CV_DIGEST_HEX);
    memset(m.l2_key, id[strlen(id) - 1], CV_DIGEST_HEX);
    assert_int_equal(cv_builddb_job_add(h->db, rev, &m, false, NULL, T0, &h->d), 0);
}

/* A result; code 3101 adds a root with one derived error, others a plain
 * root (with an AST path below 9000). */
static void h_result(hx *h, const char *id, cv_result_status st, int attempts, int code)
{
    cv_result_msg r;
    cv_result_msg_init(&r);
    r.job_id = strdup(id);
    r.status = st;
    if (st == CV_RESULT_OK)
        memcpy(r.artifact_manifest, MANIFEST, sizeof r.artifact_manifest);
    if (code) {
        int root = cv_diag_add(&r.diags, CV_SEV_ERROR, code, (cv_span){"m.cvl.py", 5, 9, 5, 20},
                               code < 9000 ? "FunctionDef[m]>Assign>Call[cvl.conv2d]" : NULL,
                               "the mistake");
        if (code == 3101) {
            int child = cv_diag_add(&r.diags, CV_SEV_ERROR, 3002, (cv_span){"m.cvl.py", 6, 3, 6, 9},
                                    "FunctionDef[m]>Assign>BinOp[+]", "follows from it");
            cv_diag_set_root(&r.diags, child, root);
        }
    }
    cv_queue_result q = {.seq = ++h->seq, .attempts = attempts};
    snprintf(q.job_id, sizeof q.job_id, "%s", id);
    assert_int_equal(cv_result_msg_encode(&r, &q.msg, &q.msg_len, &h->d), 0);
    assert_int_equal(cv_builddb_record_result(h->db, &q, T0 + h->seq, &h->d), 0);
    free(q.msg);
    cv_result_msg_free(&r);
}

static const cv_failure_group *group(const cv_failure_report *r, const char *pattern)
{
    for (int i = 0; i < r->n_groups; i++)
        if (strcmp(r->groups[i].pattern, pattern) == 0)
            return &r->groups[i];
    for (int i = 0; i < r->n_groups; i++)
        fprintf(stderr, "  have '%s'\n", r->groups[i].pattern);
    fail_msg("no pattern '%s' in %s", pattern, r->revision);
    return NULL;
}

static void test_history(void **state)
{
    (void)state;
    hx h = {.dir = cv_tmpdir_make("failures-db")};
    cv_diag_init(&h.d);
    char *path = cv_tmpdir_path(h.dir, "build.db");
    assert_int_equal(cv_builddb_open(path, &h.db, &h.d), 0);
    int64_t r1, r2;
    bool created;
    /* revision 1: a model error, a job that failed in one pipeline and
     * succeeded in another, one that succeeded at its second attempt */
    assert_int_equal(cv_builddb_revision_begin(h.db, REV1, T0, &r1, &created, &h.d), 0);
    h_job(&h, r1, REV1, "j1", "a", "models/m1.cvl.py");
    h_job(&h, r1, REV1, "j2", "a", "models/m2.cvl.py");
    h_job(&h, r1, REV1, "j3", "b", "models/m2.cvl.py");
    h_job(&h, r1, REV1, "j4", "a", "models/m3.cvl.py");
    assert_int_equal(cv_builddb_revision_planned(h.db, r1, false, T0, &h.d), 0);
    h_result(&h, "j1", CV_RESULT_FAILED, 1, 3101);
    h_result(&h, "j2", CV_RESULT_ICE, 1, 9301);
    h_result(&h, "j3", CV_RESULT_OK, 1, 0);
    h_result(&h, "j4", CV_RESULT_OK, 2, 0);
    /* revision 2: the same model error again, and a new one */
    assert_int_equal(cv_builddb_revision_begin(h.db, REV2, T0, &r2, &created, &h.d), 0);
    h_job(&h, r2, REV2, "j5", "a", "models/m1.cvl.py");
    h_job(&h, r2, REV2, "j6", "a", "models/m4.cvl.py");
    assert_int_equal(cv_builddb_revision_planned(h.db, r2, false, T0, &h.d), 0);
    h_result(&h, "j5", CV_RESULT_FAILED, 1, 3101);
    h_result(&h, "j6", CV_RESULT_FAILED, 1, 2101);

    /* the newer revision first: the older one is classified on the way */
    cv_failure_report rep;
    assert_int_equal(cv_failures_classify(h.db, "2222", &rep, &h.d), 0);
    assert_int_equal(rep.n_groups, 2);
    assert_int_equal(rep.broken, 2);
    const cv_failure_group *g = group(&rep, "CV3101 FunctionDef>Assign>Call[cvl.conv2d]");
    assert_false(g->is_new);
    assert_string_equal(g->first_seen, REV1);
    assert_int_equal(g->derived, 1);
    assert_int_equal(g->n_roots, 1);
    assert_int_equal(g->roots[0].line, 5);
    g = group(&rep, "CV2101 FunctionDef>Assign>Call[cvl.conv2d]");
    assert_true(g->is_new);
    assert_string_equal(g->first_seen, REV2);
    cv_failure_report_free(&rep);

    assert_int_equal(cv_failures_classify(h.db, REV1, &rep, &h.d), 0);
    assert_int_equal(rep.broken, 3);
    assert_int_equal(rep.n_groups, 3);
    assert_true(group(&rep, "CV3101 FunctionDef>Assign>Call[cvl.conv2d]")->is_new);
    g = group(&rep, "flaky CV9301");
    assert_string_equal(g->models[0], "models/m2.cvl.py");
    assert_int_equal(g->jobs, 1);
    g = group(&rep, "flaky");
    assert_string_equal(g->models[0], "models/m3.cvl.py");
    cv_failure_report_free(&rep);

    cv_failure_trend t;
    assert_int_equal(cv_failures_trend(h.db, "1111", NULL, &t, &h.d), 0);
    assert_int_equal(t.n_revisions, 2);
    assert_string_equal(t.patterns[0], "CV3101 FunctionDef>Assign>Call[cvl.conv2d]");
    assert_int_equal(t.jobs[0], 1);
    assert_int_equal(t.jobs[1], 1);
    assert_string_equal(t.first_seen[0], REV1);
    assert_int_equal(t.broken[0], 2);   /* flaky-after-retry is ok in the summary */
    cv_failure_trend_free(&t);
    assert_int_equal(cv_failures_trend(h.db, "2222", "1111", &t, &h.d), -1);
    assert_true(cv_diag_has_errors(&h.d));
    cv_builddb_close(h.db);
    cv_diag_free(&h.d);
    free(path);
    cv_tmpdir_remove(h.dir);
}

/* ------------------------------------------------------------- corpus */

typedef struct expect {
    char model[256];
    char pattern[CV_PATTERN_MAX + 1];
    int line, col;        /* 0: no line (ONNX) */
    int derived, jobs;    /* derived errors of the model; its jobs */
    bool found;
} expect;

typedef struct corpus {
    expect e[128];
    int n;
} corpus;

/* "failure: PATTERN @ L:C" (or "@ -") after a prefix. */
static void parse_failure(corpus *c, const char *model, const char *text, int jobs)
{
    const char *at = strstr(text, " @ ");
    assert_non_null(at);
    assert_true(c->n < 128);
    expect *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->model, sizeof e->model, "%s", model);
    snprintf(e->pattern, sizeof e->pattern, "%.*s", (int)(at - text), text);
    if (at[3] != '-')
        assert_int_equal(sscanf(at + 3, "%d:%d", &e->line, &e->col), 2);
    e->jobs = jobs;
}

static int model_jobs(const char *name)
{
    /* the `multi` pipeline also builds the conv_* models for x86_64 */
    return strncmp(name, "conv_", 5) == 0 && !strstr(name, ".cuir") ? 2 : 1;
}

/* Copies tests/failures/<sub>/ into the repository and reads the headers. */
static void copy_sub(corpus *c, const char *repo, const char *sub)
{
    char src[1024];
    snprintf(src, sizeof src, "%s/tests/failures/%s", cv_tmpdir_src_root(), sub);
    DIR *dir = opendir(src);
    assert_non_null(dir);
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        char from[2048], to[2048], model[512];
        snprintf(from, sizeof from, "%s/%s", src, de->d_name);
        snprintf(model, sizeof model, "models/%s/%s", sub, de->d_name);
        snprintf(to, sizeof to, "%s/%s", repo, model);
        size_t len;
        char *text = cv_tmpdir_read_file(from, &len);
        assert_non_null(text);
        write_file(to, text, len);
        int first = c->n;
        for (char *line = text; *line == '#';) {
            char *end = strchr(line, '\n');
            assert_non_null(end);
            *end = 0;
            if (strncmp(line, "# failure: ", 11) == 0)
                parse_failure(c, model, line + 11, model_jobs(de->d_name));
            else if (strncmp(line, "# derived: ", 11) == 0 && c->n > first)
                c->e[first].derived = atoi(line + 11);
            line = end + 1;
        }
        assert_true(c->n > first);   /* every corpus model says what it breaks */
        free(text);
    }
    closedir(dir);
}

static void gen_onnx(corpus *c, const char *repo)
{
    char script[1024], models[2048];
    snprintf(script, sizeof script, "%s/tests/failures/gen_corpus.py", cv_tmpdir_src_root());
    snprintf(models, sizeof models, "%s/models", repo);
    const char *argv[] = {CV_PYTHON, script, models, NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(argv, NULL, &out), 0);
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char *colon = strstr(line, ": failure: ");
        assert_non_null(colon);
        *colon = 0;
        char model[512];
        snprintf(model, sizeof model, "models/%s", line);
        parse_failure(c, model, colon + 11, model_jobs(line + 5));
    }
    free(out);
}

static const char PIPELINES[] =
    "apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: dsl}\n"
    "spec: {models: [\"models/dsl/*.cvl.py\"], targets: [x86_64-avx2], precisions: [fp32]}\n"
    "---\napiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: cuir}\n"
    "spec: {models: [\"models/cuir/*.cuir\"], targets: [x86_64-avx2], precisions: [fp32]}\n"
    "---\napiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: onnx}\n"
    "spec: {models: [\"models/onnx/*.onnx\"], targets: [x86_64-avx2], precisions: [fp32]}\n"
    "---\napiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: multi}\n"
    "spec: {models: [\"models/dsl/conv_*.cvl.py\", \"models/onnx/conv_*.onnx\"],"
    " targets: [x86_64], precisions: [fp32]}\n";

static bool root_matches(json_t *root, const expect *e)
{
    return strcmp(json_string_value(json_object_get(root, "model")), e->model) == 0 &&
           json_integer_value(json_object_get(root, "line")) == e->line &&
           json_integer_value(json_object_get(root, "col")) == e->col;
}

/* Every root expected is found with its jobs; every root found is expected;
 * each group's derived count is what its models declare. */
static void check_roots(corpus *c, json_t *report)
{
    json_t *pats = json_object_get(report, "patterns");
    for (size_t i = 0; i < json_array_size(pats); i++) {
        json_t *g = json_array_get(pats, i), *roots = json_object_get(g, "roots");
        const char *pattern = json_string_value(json_object_get(g, "pattern"));
        int64_t derived = 0;
        for (size_t k = 0; k < json_array_size(roots); k++) {
            json_t *r = json_array_get(roots, k);
            expect *hit = NULL;
            for (int x = 0; x < c->n && !hit; x++)
                if (strcmp(c->e[x].pattern, pattern) == 0 && root_matches(r, &c->e[x]))
                    hit = &c->e[x];
            if (!hit)
                fail_msg("unexpected root: %s in %s at %lld:%lld", pattern,
                         json_string_value(json_object_get(r, "model")),
                         (long long)json_integer_value(json_object_get(r, "line")),
                         (long long)json_integer_value(json_object_get(r, "col")));
            hit->found = true;
            assert_int_equal(json_integer_value(json_object_get(r, "jobs")), hit->jobs);
            assert_int_equal(json_array_size(json_object_get(r, "configs")), hit->jobs);
            derived += (int64_t)hit->derived * hit->jobs;
        }
        if (json_integer_value(json_object_get(g, "derived")) != derived)
            fail_msg("%s: %lld derived, want %lld", pattern,
                     (long long)json_integer_value(json_object_get(g, "derived")),
                     (long long)derived);
    }
    for (int x = 0; x < c->n; x++)
        if (!c->e[x].found)
            fail_msg("%s: no root '%s' at %d:%d", c->e[x].model, c->e[x].pattern, c->e[x].line,
                     c->e[x].col);
}

/* The same mistake in different models: one group listing them all. */
static void check_same_mistakes(corpus *c, json_t *report, int *patterns, int *shared)
{
    *patterns = *shared = 0;
    for (int x = 0; x < c->n; x++) {
        bool first = true;
        for (int y = 0; y < x; y++)
            first &= strcmp(c->e[y].pattern, c->e[x].pattern) != 0;
        if (!first)
            continue;
        (*patterns)++;
        json_t *g = find_group(report, c->e[x].pattern), *models = json_object_get(g, "models");
        int n = 0;
        for (int y = 0; y < c->n; y++)
            if (strcmp(c->e[y].pattern, c->e[x].pattern) == 0)
                n++;
        assert_int_equal(json_array_size(models), n);
        *shared += n >= 2;
    }
}

typedef struct derived_ctx {
    cv_builddb *db;
    json_t *report;
    int checked;
} derived_ctx;

static char *pattern_of(const cv_diag_entry *e, char out[CV_PATTERN_MAX + 1])
{
    cv_failure_pattern(CV_FAIL_MODEL, e->code, e->path, out);
    return out;
}

static bool same_place(const cv_diag_entry *a, const cv_diag_entry *b)
{
    return a->span.line == b->span.line && a->span.col == b->span.col;
}

/* A derived error at the place of a root of the same pattern is merged
 * with it; anywhere else it must not be a root of the report. */
static void check_entry(derived_ctx *x, const cv_diag *dg, const cv_diag_entry *e)
{
    char pat[CV_PATTERN_MAX + 1], other[CV_PATTERN_MAX + 1];
    pattern_of(e, pat);
    for (int k = 1; k <= dg->n; k++) {
        const cv_diag_entry *o = cv_diag_get(dg, k);
        if (!o->root_id && same_place(o, e) && strcmp(pattern_of(o, other), pat) == 0)
            return;
    }
    x->checked++;
    json_t *g = find_group(x->report, pat), *roots = json_object_get(g, "roots");
    for (size_t k = 0; k < json_array_size(roots); k++) {
        json_t *r = json_array_get(roots, k);
        const char *file = json_string_value(json_object_get(r, "file"));
        if (file && e->span.file && strcmp(file, e->span.file) == 0 &&
            json_integer_value(json_object_get(r, "line")) == e->span.line &&
            json_integer_value(json_object_get(r, "col")) == e->span.col)
            fail_msg("derived error %s at %s:%d:%d is a root", pat, file, e->span.line,
                     e->span.col);
    }
}

static int check_job(void *ctx, const cv_job_row *row)
{
    derived_ctx *x = ctx;
    cv_diag dg, d;
    cv_diag_init(&dg);
    cv_diag_init(&d);
    assert_int_equal(cv_builddb_diags_load(x->db, 0, row->result_id, &dg, &d), 0);
    for (int i = 1; i <= dg.n; i++)
        if (cv_diag_get(&dg, i)->root_id)
            check_entry(x, &dg, cv_diag_get(&dg, i));
    cv_diag_free(&dg);
    cv_diag_free(&d);
    return 0;
}

/* Straight from the build DB: no error caused by another is a root. */
static void check_derived_not_roots(const char *state_dir, json_t *report)
{
    char *path = cv_tmpdir_path(state_dir, "build.db");
    derived_ctx x = {.report = report};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_builddb_open(path, &x.db, &d), 0);
    cv_rev_summary s;
    assert_int_equal(cv_builddb_revision_summary(x.db, NULL, &s, &d), 1);
    assert_int_equal(cv_builddb_jobs_visit(x.db, s.id, true, check_job, &x, &d), 0);
    assert_true(x.checked >= 8);   /* the corpus holds derived errors elsewhere than roots */
    cv_builddb_close(x.db);
    cv_diag_free(&d);
    free(path);
}

static void check_text(const char *bin, const char *state_dir, const char *err, int patterns)
{
    const char *argv[] = {bin, "failures", "--state", state_dir, "--top", "3", NULL};
    char *out = NULL, more[64];
    assert_int_equal(cv_run_argv(argv, err, &out), 0);
    snprintf(more, sizeof more, "... %d more patterns", patterns - 3);
    const char *must[] = {"-- NEW in this revision", "reproduce   cuvil compile models/",
                          "means       ", "^~", more};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        if (!strstr(out, must[i]))
            fail_msg("no '%s' in:\n%s", must[i], out);
    free(out);
}

static void test_corpus(void **state)
{
    (void)state;
    const char *bin = cuvil_bin();
    if (!bin || !cv_pyrun_has_module("onnx")) {
        skip();
        return;
    }
    char *dir = cv_tmpdir_make("failures");
    char *repo_dir = cv_tmpdir_path(dir, "repo"), *state_dir = cv_tmpdir_path(dir, "state");
    char *err = cv_tmpdir_path(dir, "stderr.txt"), *cache = cv_tmpdir_path(dir, "cache");
    setenv("CUVIL_CACHE_DIR", cache, 1);
    setenv("CUVIL_REMOTE_CACHE", "", 1);
    git_repository *repo = trepo_init(repo_dir);
    corpus *c = calloc(1, sizeof *c);
    copy_sub(c, repo_dir, "dsl");
    copy_sub(c, repo_dir, "cuir");
    gen_onnx(c, repo_dir);
    char spec[2048];
    snprintf(spec, sizeof spec, "%s/cuvil/pipelines.yaml", repo_dir);
    write_file(spec, PIPELINES, strlen(PIPELINES));
    char hex[41];
    commit_all(repo, "the failure corpus", hex);
    trepo_free(repo);

    const char *farm[] = {bin, "farm", "up", repo_dir, "--once", "--workers", "2", "--state",
                          state_dir, NULL};
    char *out = NULL;
    assert_int_equal(cv_run_argv(farm, err, &out), 1);   /* every job fails */
    assert_non_null(strstr(out, "compiled   0\n"));
    free(out);
    const char *argv[] = {bin, "failures", "--state", state_dir, "--json", "--top", "1000", NULL};
    json_t *report = run_json(argv, err, 0);
    int models = 0;
    for (int x = 0; x < c->n; x++)
        models += x == 0 || strcmp(c->e[x].model, c->e[x - 1].model) != 0;
    assert_true(models >= 40);
    check_roots(c, report);
    int patterns, shared;
    check_same_mistakes(c, report, &patterns, &shared);
    assert_true(patterns >= 12);
    assert_int_equal(json_integer_value(json_object_get(report, "patternCount")), patterns);
    assert_true(shared >= 12);
    assert_int_equal(json_integer_value(json_object_get(report, "broken")),
                     json_integer_value(json_object_get(report, "jobs")));
    check_derived_not_roots(state_dir, report);
    /* the example has its source line; ONNX has none to show */
    json_t *g = find_group(report, "CV3203 FunctionDef>Assign>Call[cvl.conv2d]");
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(g, "example"),
                                                             "sourceLine")), "cvl.conv2d("));
    assert_true(json_is_true(json_object_get(g, "new")));
    json_decref(report);
    check_text(bin, state_dir, err, patterns);
    free(c);
    unsetenv("CUVIL_CACHE_DIR");
    free(repo_dir);
    free(state_dir);
    free(err);
    free(cache);
    cv_tmpdir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
