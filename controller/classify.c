/* The failure classifier: a revision's broken jobs grouped by pattern.
 *
 * A job is broken when its result is not ok (and it was not a cache hit),
 * or when it needed more than one attempt to succeed (flaky).  Its class
 * comes from the result status; a job that failed while the same job (same
 * model, target, precision and opt level, another pipeline) succeeded at
 * the same revision is flaky whatever its status.
 *
 * Each root diagnostic of a failed job (an error with no root id) gives a
 * pattern (classify_path.c); errors with a root id are counted under their
 * root's pattern and never form one.  A failure that is not the model's
 * fault has one pattern: its first root error of the 9xxx range (what the
 * worker said about the crash, timeout, memory or farm), else its first
 * root error.  Within a pattern, roots are keyed by model and place, so the
 * same root failing for several targets and precisions is one entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/arena.h"
#include "controller/classify_internal.h"
#include "controller/classify_state.h"

/* ---- small arena vectors */

void *cv_cls_grow(cv_arena *a, void *v, int n, int *cap, size_t elem)
{
    if (n < *cap)
        return v;
    int nc = *cap ? *cap * 2 : 8;
    void *p = cv_arena_alloc_array(a, (size_t)nc, elem);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, v, (size_t)n * elem);
    *cap = nc;
    return p;
}

static int oom(cv_cls *s)
{
    cv_diag_error(s->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    s->rc = -1;
    return -1;
}

/* Adds s to a set of strings (kept small: targets of a pattern, configs of a root). */
static int set_add(cv_cls *s, const char ***v, int *n, int *cap, const char *str)
{
    for (int i = 0; i < *n; i++)
        if (strcmp((*v)[i], str) == 0)
            return 0;
    const char **g = cv_cls_grow(&s->arena, (void *)*v, *n, cap, sizeof **v);
    const char *copy = g ? cv_arena_strdup(&s->arena, str) : NULL;
    if (!copy)
        return oom(s);
    *v = g;
    g[(*n)++] = copy;
    return 0;
}

/* ---- jobs */

static cv_fail_class class_of_state(const char *state, bool *bad)
{
    static const char *const names[] = {"failed", "ice", "timeout", "oom", "infra"};
    static const cv_fail_class cls[] = {CV_FAIL_MODEL, CV_FAIL_ICE, CV_FAIL_TIMEOUT,
                                        CV_FAIL_OOM, CV_FAIL_INFRA};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(state, names[i]) == 0) {
            *bad = true;
            return cls[i];
        }
    *bad = false;
    return CV_FAIL_MODEL;
}

static int job_add(void *ctx, const cv_job_row *row)
{
    cv_cls *s = ctx;
    cv_cls_job *v = cv_cls_grow(&s->arena, s->jobs, s->n_jobs, &s->cap_jobs, sizeof *v);
    if (!v)
        return oom(s);
    s->jobs = v;
    cv_cls_job *j = &v[s->n_jobs];
    *j = (cv_cls_job){.model = cv_arena_strdup(&s->arena, row->model_path),
                      .target = cv_arena_strdup(&s->arena, row->target),
                      .precision = cv_arena_strdup(&s->arena, row->precision),
                      .opt = cv_arena_strdup(&s->arena, row->opt_level),
                      .result_id = row->result_id, .attempts = row->attempts};
    if (!j->model || !j->target || !j->precision || !j->opt)
        return oom(s);
    j->cls = class_of_state(row->state, &j->bad);
    j->good = strcmp(row->state, "ok") == 0 || strcmp(row->state, "hit") == 0;
    s->n_jobs++;
    return 0;
}

static int job_key_cmp(const cv_cls_job *a, const cv_cls_job *b)
{
    int c = strcmp(a->model, b->model);
    if (!c)
        c = strcmp(a->target, b->target);
    if (!c)
        c = strcmp(a->precision, b->precision);
    return c ? c : strcmp(a->opt, b->opt);
}

static int job_cmp(const void *a, const void *b) { return job_key_cmp(a, b); }

/* The same job failing and succeeding at one revision, or succeeding only
 * after a failed attempt: flaky. */
static void mark_flaky(cv_cls *s)
{
    qsort(s->jobs, (size_t)s->n_jobs, sizeof *s->jobs, job_cmp);
    for (int i = 0, j; i < s->n_jobs; i = j) {
        bool good = false;
        for (j = i; j < s->n_jobs && job_key_cmp(&s->jobs[i], &s->jobs[j]) == 0; j++)
            good |= s->jobs[j].good;
        for (int k = i; k < j; k++) {
            cv_cls_job *x = &s->jobs[k];
            if ((x->bad && good) || (x->good && x->attempts > 1 && x->result_id)) {
                x->cls = CV_FAIL_FLAKY;
                x->bad = true;
            }
        }
    }
}

/* ---- groups and roots */

static unsigned hash_str(const char *p)
{
    unsigned h = 2166136261u;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

static cv_cls_group *group_get(cv_cls *s, const char *pattern, cv_fail_class cls, int code)
{
    unsigned b = hash_str(pattern) % CV_CLS_BUCKETS;
    for (cv_cls_group *g = s->buckets[b]; g; g = g->hash_next)
        if (strcmp(g->pub.pattern, pattern) == 0)
            return g;
    cv_cls_group **v = cv_cls_grow(&s->arena, s->groups, s->n_groups, &s->cap_groups, sizeof *v);
    cv_cls_group *g = v ? cv_arena_alloc(&s->arena, sizeof *g) : NULL;
    if (g)
        g->pub.pattern = cv_arena_strdup(&s->arena, pattern);
    if (!g || !g->pub.pattern) {
        oom(s);
        return NULL;
    }
    g->pub.cls = cls;
    g->pub.code = code;
    g->hash_next = s->buckets[b];
    s->buckets[b] = g;
    s->groups = v;
    v[s->n_groups++] = g;
    return g;
}

static bool same_place(const cv_cls_root *r, const char *model, const cv_span *sp)
{
    const char *file = sp->file && *sp->file ? sp->file : NULL;
    return strcmp(r->model, model) == 0 && r->line == sp->line && r->col == sp->col &&
           (file ? r->file && strcmp(r->file, file) == 0 : !r->file);
}

static cv_cls_root *root_get(cv_cls *s, cv_cls_group *g, const cv_cls_job *j, const cv_span *sp,
                             int job_index, int entry)
{
    for (int i = 0; i < g->n_roots; i++)
        if (same_place(&g->roots[i], j->model, sp))
            return &g->roots[i];
    cv_cls_root *v = cv_cls_grow(&s->arena, g->roots, g->n_roots, &g->cap_roots, sizeof *v);
    if (!v) {
        oom(s);
        return NULL;
    }
    g->roots = v;
    cv_cls_root *r = &v[g->n_roots++];
    *r = (cv_cls_root){.model = j->model, .line = sp->line, .col = sp->col,
                       .ex_job = job_index, .ex_result = j->result_id, .ex_entry = entry};
    if (sp->file && *sp->file && !(r->file = cv_arena_strdup(&s->arena, sp->file))) {
        oom(s);
        return NULL;
    }
    return r;
}

/* Counts job j under pattern (code, path) at place sp. */
static cv_cls_group *count_root(cv_cls *s, int job_index, cv_fail_class cls, int code,
                                const char *path, const cv_span *sp, int entry)
{
    const cv_cls_job *j = &s->jobs[job_index];
    char pattern[CV_PATTERN_MAX + 1], config[3 * CV_MSG_TOKEN_MAX];
    cv_failure_pattern(cls, code, path, pattern);
    cv_cls_group *g = group_get(s, pattern, cls, code);
    cv_cls_root *r = g ? root_get(s, g, j, sp, job_index, entry) : NULL;
    if (!r)
        return NULL;
    if (g->last_job != job_index + 1) {
        g->last_job = job_index + 1;
        g->pub.jobs++;
        if (set_add(s, &g->targets, &g->pub.n_targets, &g->cap_targets, j->target))
            return NULL;
    }
    if (r->last_job != job_index + 1) {
        r->last_job = job_index + 1;
        r->jobs++;
        snprintf(config, sizeof config, "%s %s %s", j->target, j->precision, j->opt);
        if (set_add(s, &r->configs, &r->n_configs, &r->cap_configs, config))
            return NULL;
    }
    return g;
}

static bool is_error(const cv_diag_entry *e) { return e && e->sev == CV_SEV_ERROR; }

/* The error an entry was caused by, following chains (bounded); an error
 * said to be caused by a warning or by nothing recorded is its own root. */
static int ultimate_root(const cv_diag *dg, int id)
{
    for (int steps = 0; steps < dg->n; steps++) {
        const cv_diag_entry *e = cv_diag_get(dg, id);
        if (!e || e->root_id <= 0 || e->root_id == id || !is_error(cv_diag_get(dg, e->root_id)))
            return id;
        id = e->root_id;
    }
    return id;
}

static bool is_root(const cv_diag *dg, int id)
{
    return is_error(cv_diag_get(dg, id)) && ultimate_root(dg, id) == id;
}

/* The root a non-model failure is filed under. */
static int pick_single_root(const cv_diag *dg)
{
    int first = 0;
    for (int i = 1; i <= dg->n; i++) {
        if (!is_root(dg, i))
            continue;
        if (cv_diag_get(dg, i)->code >= 9000)
            return i;
        if (!first)
            first = i;
    }
    return first;
}

static int classify_job(cv_cls *s, int job_index)
{
    const cv_cls_job *j = &s->jobs[job_index];
    cv_diag dg;
    cv_diag_init(&dg);
    if (j->result_id && cv_builddb_diags_load(s->db, 0, j->result_id, &dg, s->d) != 0) {
        cv_diag_free(&dg);
        return s->rc = -1;
    }
    cv_cls_group **by_entry = calloc((size_t)dg.n + 1, sizeof *by_entry);
    if (!by_entry) {
        cv_diag_free(&dg);
        return oom(s);
    }
    int single = j->cls == CV_FAIL_MODEL ? 0 : pick_single_root(&dg), counted = 0;
    for (int i = 1; i <= dg.n && s->rc == 0; i++) {
        const cv_diag_entry *e = cv_diag_get(&dg, i);
        if ((j->cls == CV_FAIL_MODEL && is_root(&dg, i)) || i == single) {
            by_entry[i] = count_root(s, job_index, j->cls, e->code, e->path, &e->span, i);
            counted++;
        }
    }
    if (!counted && s->rc == 0)   /* nothing reported: the class alone */
        count_root(s, job_index, j->cls, 0, NULL, &(cv_span){0}, 0);
    for (int i = 1; i <= dg.n && s->rc == 0; i++) {
        int r = ultimate_root(&dg, i);
        if (r != i && is_error(cv_diag_get(&dg, i)) && by_entry[r])
            by_entry[r]->pub.derived++;
    }
    free(by_entry);
    cv_diag_free(&dg);
    return s->rc;
}

int cv_cls_run(cv_cls *s, int64_t rev_id)
{
    if (cv_builddb_jobs_visit(s->db, rev_id, false, job_add, s, s->d) != 0)
        s->rc = -1;
    if (s->rc)
        return -1;
    mark_flaky(s);
    for (int i = 0; i < s->n_jobs && s->rc == 0; i++)
        if (s->jobs[i].bad) {
            s->broken++;
            classify_job(s, i);
        }
    return s->rc;
}

void cv_cls_init(cv_cls *s, cv_builddb *db, cv_diag *d)
{
    memset(s, 0, sizeof *s);
    s->db = db;
    s->d = d;
    cv_arena_init(&s->arena);
}

/* ---- the report */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int root_cmp(const void *a, const void *b)
{
    const cv_cls_root *x = a, *y = b;
    int c = strcmp(x->model, y->model);
    if (!c)
        c = x->line != y->line ? (x->line < y->line ? -1 : 1) : 0;
    return c ? c : x->col != y->col ? (x->col < y->col ? -1 : 1) : 0;
}

static int group_cmp(const void *a, const void *b)
{
    const cv_cls_group *x = *(cv_cls_group *const *)a, *y = *(cv_cls_group *const *)b;
    if (x->pub.jobs != y->pub.jobs)
        return x->pub.jobs > y->pub.jobs ? -1 : 1;
    if (x->n_roots != y->n_roots)
        return x->n_roots > y->n_roots ? -1 : 1;
    return strcmp(x->pub.pattern, y->pub.pattern);
}

void cv_cls_rank(cv_cls *s)
{
    qsort(s->groups, (size_t)s->n_groups, sizeof *s->groups, group_cmp);
}

/* The example: the first root's diagnostic, copied with its notes. */
static int load_example(cv_cls *s, cv_cls_group *g)
{
    cv_diag *ex = cv_arena_alloc(&s->arena, sizeof *ex);
    if (!ex)
        return oom(s);
    cv_diag_init(ex);
    g->pub.example = ex;
    const cv_cls_root *r = &g->roots[0];
    const cv_cls_job *j = &s->jobs[r->ex_job];
    g->pub.ex_model = j->model;
    g->pub.ex_target = j->target;
    g->pub.ex_precision = j->precision;
    g->pub.ex_opt = j->opt;
    if (!r->ex_entry || !r->ex_result)
        return 0;
    cv_diag all;
    cv_diag_init(&all);
    int rc = cv_builddb_diags_load(s->db, 0, r->ex_result, &all, s->d);
    const cv_diag_entry *e = rc == 0 ? cv_diag_get(&all, r->ex_entry) : NULL;
    if (e) {
        int id = cv_diag_add(ex, e->sev, e->code, e->span, e->path, "%s", e->msg);
        for (int i = 0; i < e->n_notes && id; i++)
            cv_diag_note(ex, id, "%s", e->notes[i]);
    }
    cv_diag_free(&all);
    return rc ? (s->rc = -1) : 0;
}

/* Fills the public side of every group: sorted roots, models, targets and
 * the example. */
int cv_cls_finish(cv_cls *s)
{
    for (int i = 0; i < s->n_groups && s->rc == 0; i++) {
        cv_cls_group *g = s->groups[i];
        qsort(g->roots, (size_t)g->n_roots, sizeof *g->roots, root_cmp);
        cv_failure_root *pub = cv_arena_alloc_array(&s->arena, (size_t)g->n_roots, sizeof *pub);
        const char **models = cv_arena_alloc_array(&s->arena, (size_t)g->n_roots, sizeof *models);
        if (!pub || !models)
            return oom(s);
        int n_models = 0;
        for (int k = 0; k < g->n_roots; k++) {
            const cv_cls_root *r = &g->roots[k];
            qsort(r->configs, (size_t)r->n_configs, sizeof *r->configs, str_cmp);
            pub[k] = (cv_failure_root){.model = r->model, .file = r->file, .line = r->line,
                                       .col = r->col, .jobs = r->jobs, .configs = r->configs,
                                       .n_configs = r->n_configs};
            if (!n_models || strcmp(models[n_models - 1], r->model) != 0)
                models[n_models++] = r->model;
        }
        qsort(g->targets, (size_t)g->pub.n_targets, sizeof *g->targets, str_cmp);
        g->pub.roots = pub;
        g->pub.n_roots = g->n_roots;
        g->pub.models = models;
        g->pub.n_models = n_models;
        g->pub.targets = g->targets;
        load_example(s, g);
    }
    return s->rc;
}

void cv_cls_free(cv_cls *s)
{
    for (int i = 0; i < s->n_groups; i++)
        if (s->groups[i]->pub.example)
            cv_diag_free((cv_diag *)s->groups[i]->pub.example);
    cv_arena_free(&s->arena);
}
