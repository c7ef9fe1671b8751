/* The planner: one revision's tree -> jobs.
 *
 * Every pipeline's model globs are matched against the tree's paths; each
 * model x target x precision (with the pipeline's options) is one job.  A
 * model's digest comes from the build DB's blob memo when git says the file
 * is unchanged, so an unchanged repository is planned without reading a
 * model.  The cache look-up callback gives each job its L2 key and says
 * whether the artifact exists: hits are recorded as finished at once,
 * misses are queued, and the queue merges a job into an identical one (same
 * L2 key) already in flight.
 *
 * The whole revision is planned in one build-DB transaction, so a crash
 * leaves either the complete plan or none; jobs queued before a failed
 * commit are merged into by the next attempt (same ids, same keys). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/yamldoc.h"
#include "controller/builddb_internal.h"
#include "controller/controller.h"
#include "controller/internal.h"

#define DEFAULT_MAX_JOBS 100000

typedef struct plan {
    const cv_planner_opts *o;
    const cv_gitsource_tree *tree;
    const char *revision;
    int64_t rev_id, now;
    cv_plan_report *r;
    cv_diag *sd;      /* diagnostics about the revision (stored with it) */
    cv_diag *d;       /* the caller's: infrastructure errors */
} plan;

int cv_planner_load_specs(const cv_gitsource_tree *tree, cv_spec_set *s, cv_diag *d)
{
    int before = d->n_errors, files = 0;
    size_t total = 0;
    for (size_t i = 0; i < cv_gitsource_tree_count(tree); i++) {
        const cv_gitsource_tree_entry *e = cv_gitsource_tree_at(tree, i);
        if (!cv_spec_is_spec_path(e->path))
            continue;
        if (++files > CV_SPEC_FILES_MAX) {
            cv_diag_error(d, CV_E_RESOURCE_LIMIT, (cv_span){.file = e->path},
                          "more than %d spec files under %s/", CV_SPEC_FILES_MAX, CV_SPEC_DIR);
            break;
        }
        /* the total is checked from the object headers, before reading */
        size_t size;
        if (cv_gitsource_tree_size(tree, e, &size, d))
            continue;
        if (size <= CV_YAML_MAX_BYTES && size > CV_SPEC_BYTES_MAX - total) {
            cv_spec_too_large(d, e->path, total + size);
            break;
        }
        char *text;
        size_t len;
        if (cv_gitsource_tree_read(tree, e, CV_YAML_MAX_BYTES, &text, &len, d) == 0) {
            total += len;
            cv_spec_set_add(s, text, len, e->path, false, d);
        }
        free(text);
    }
    cv_spec_set_resolve(s, d);
    return d->n_errors > before ? -1 : 0;
}

static bool is_model_path(const char *p)
{
    static const char *const exts[] = {".onnx", ".cvl.py", ".cuir"};
    size_t n = strlen(p);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t k = strlen(exts[i]);
        if (n > k && strcmp(p + n - k, exts[i]) == 0)
            return true;
    }
    return false;
}

/* Whether a path can travel in a job message (jobmsg.h: no control
 * characters, no '..' component, relative, bounded). */
static bool is_job_path(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > CV_MSG_STR_MAX || p[0] == '/' || !cv_str_is_clean_text(p))
        return false;
    for (const char *s = p; s; s = strchr(s, '/')) {
        s += *s == '/';
        if (s[0] == '.' && s[1] == '.' && (s[2] == '/' || !s[2]))
            return false;
    }
    return true;
}

static void warn(plan *pl, const cv_spec_pipeline *p, int code, int glob, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void warn(plan *pl, const cv_spec_pipeline *p, int code, int glob, const char *fmt, ...)
{
    char path[64];
    snprintf(path, sizeof path, "spec.models[%d]", glob);
    cv_span sp = {.file = p->origin.file, .line = p->origin.line, .col = p->origin.col};
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(pl->sd, CV_SEV_WARNING, code, sp, glob >= 0 ? path : NULL, fmt, ap);
    va_end(ap);
}

/* The pipeline's models: tree entries matched by any of its globs, in path
 * order, each once.  *out is malloc'd (caller frees). */
static int match_models(plan *pl, const cv_spec_pipeline *p, const cv_gitsource_tree_entry ***out, int *n)
{
    size_t cap = 16;
    int hits[CV_SPEC_LIST_MAX] = {0}, models[CV_SPEC_LIST_MAX] = {0};
    const cv_gitsource_tree_entry **v = malloc(cap * sizeof *v);
    bool oom = !v;
    *n = 0;
    for (size_t i = 0; !oom && i < cv_gitsource_tree_count(pl->tree); i++) {
        const cv_gitsource_tree_entry *e = cv_gitsource_tree_at(pl->tree, i);
        bool take = false;
        for (int g = 0; g < p->n_models; g++) {
            if (!cv_glob_match(p->models[g], e->path))
                continue;
            hits[g]++;
            bool ok = is_model_path(e->path) && is_job_path(e->path);
            models[g] += ok;
            take |= ok;
        }
        if (!take)
            continue;
        if ((size_t)*n == cap) {
            const cv_gitsource_tree_entry **nv = realloc(v, (cap *= 2) * sizeof *v);
            oom = !nv;
            if (oom)
                break;
            v = nv;
        }
        v[(*n)++] = e;
    }
    if (oom) {
        free(v);
        cv_diag_error(pl->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory matching models");
        return -1;
    }
    for (int g = 0; g < p->n_models; g++) {
        if (!hits[g])
            warn(pl, p, CV_E_PLAN_GLOB_NO_MATCH, g, "pipeline '%s': '%s' matches no file", p->name,
                 p->models[g]);
        else if (!models[g])
            warn(pl, p, CV_E_PLAN_NOT_A_MODEL, g,
                 "pipeline '%s': '%s' matches %d file(s), none of them a model "
                 "(.onnx, .cvl.py, .cuir)", p->name, p->models[g], hits[g]);
    }
    *out = v;
    return 0;
}

/* sha256 of the model's bytes, from the blob memo when git knows the blob. */
static int model_digest(plan *pl, const cv_gitsource_tree_entry *e, char out[CV_DIGEST_HEX + 1])
{
    int rc = cv_builddb_blob_digest_get(pl->o->db, e->blob_id, out, pl->d);
    if (rc) {
        pl->r->memo_hits += rc == 1;
        return rc < 0 ? -1 : 0;
    }
    char *data;
    size_t len;
    size_t max = pl->o->max_model_bytes ? pl->o->max_model_bytes : CV_GIT_BLOB_MAX;
    cv_diag rd;
    cv_diag_init(&rd);
    rc = cv_gitsource_tree_read(pl->tree, e, max, &data, &len, &rd);
    if (rc) {   /* the model's trouble, not the farm's: a revision error */
        const cv_diag_entry *why = cv_diag_get(&rd, 1);
        int code = why && why->code == CV_E_GIT_BLOB_TOO_LARGE ? CV_E_GIT_BLOB_TOO_LARGE : CV_E_PLAN_MODEL_UNREADABLE;
        cv_diag_add(pl->sd, CV_SEV_ERROR, code, (cv_span){.file = e->path}, NULL,
                    "cannot read model %s: %s", e->path, why ? why->msg : "?");
        cv_diag_free(&rd);
        return 1;
    }
    cv_diag_free(&rd);
    cv_ctl_sha256_hex(data, len, out);
    free(data);
    pl->r->hashed++;
    return cv_builddb_blob_digest_put(pl->o->db, e->blob_id, out, pl->d);
}

/* "<commit12>/<pipeline>/<model>@<target>/<precision>", with the model
 * path replaced by its digest when it is not plain visible ASCII or the
 * id would be too long. */
static void job_id(plan *pl, const cv_job_msg *j, char out[CV_MSG_ID_MAX + 1])
{
    const char *prec = cv_precision_name(j->precision);
    int n = snprintf(out, CV_MSG_ID_MAX + 1, "%.12s/%s/%s@%s/%s", cv_gitsource_tree_commit(pl->tree),
                     j->pipeline, j->model_path, j->target, prec);
    bool plain = n > 0 && n <= CV_MSG_ID_MAX;
    for (const char *c = j->model_path; plain && *c; c++)
        plain = *c > ' ' && *c < 0x7f;
    if (plain)
        return;
    char hex[65];
    cv_ctl_sha256_hex(j->model_path, strlen(j->model_path), hex);
    snprintf(out, CV_MSG_ID_MAX + 1, "%.12s/%.64s/%.20s@%.64s/%s", cv_gitsource_tree_commit(pl->tree),
             j->pipeline, hex, j->target, prec);
}

/* The key a job is queued under when no look-up gives the real L2 key:
 * the same for identical work, so identical jobs still merge. */
static void planner_key(const cv_job_msg *j, char out[CV_DIGEST_HEX + 1])
{
    char buf[CV_DIGEST_HEX + CV_MSG_TOKEN_MAX + 64];
    int n = snprintf(buf, sizeof buf, "cuvil-plan%c%s%c%s%c%s%c%s", 0, j->model_digest, 0,
                     j->target, 0, cv_precision_name(j->precision), 0,
                     cv_opt_level_name(j->opt_level));
    size_t len = n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf;
    if (!j->calibration) {
        cv_ctl_sha256_hex(buf, len, out);
        return;
    }
    /* The calibration files are not hashed here: the glob, method and
     * revision stand for them, so jobs merge only within one revision. */
    cv_sb sb = CV_SB_INIT;
    const char *parts[] = {j->calibration, j->calibration_method, j->revision};
    cv_sb_add(&sb, buf, len);
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        cv_sb_putc(&sb, 0);
        cv_sb_puts(&sb, parts[i] ? parts[i] : "");
    }
    cv_ctl_sha256_hex(sb.buf, sb.len, out);
    cv_sb_free(&sb);
}

static int add_job(plan *pl, cv_job_msg *j)
{
    bool hit = false;
    if (!pl->o->lookup || pl->o->lookup(pl->o->lookup_ctx, j, j->l2_key, &hit)) {
        if (pl->o->lookup)
            cv_diag_add(pl->sd, CV_SEV_WARNING, CV_E_PLAN_LOOKUP_FAILED, (cv_span){0}, NULL,
                        "cache look-up failed for %s; queued without it", j->job_id);
        planner_key(j, j->l2_key);
        hit = false;
    }
    pl->r->jobs++;
    if (hit) {
        pl->r->hits++;
        return cv_builddb_job_add(pl->o->db, pl->rev_id, j, true, NULL, pl->now, pl->d);
    }
    char *msg;
    size_t len;
    cv_queue_enq enq;
    if (cv_job_msg_encode(j, &msg, &len, pl->d))
        return -1;
    int rc = cv_queue_enqueue(pl->o->queue, msg, len, &enq, pl->d);
    free(msg);
    if (rc)
        return -1;
    pl->r->queued++;
    pl->r->merged += enq.merged && strcmp(enq.job_id, j->job_id) != 0;
    return cv_builddb_job_add(pl->o->db, pl->rev_id, j, false, enq.job_id, pl->now, pl->d);
}

static int expand_model(plan *pl, const cv_spec_pipeline *p, const cv_gitsource_tree_entry *e)
{
    char id[CV_MSG_ID_MAX + 1];
    cv_job_msg j = {.job_id = id, .revision = (char *)pl->revision, .pipeline = (char *)p->name,
                    .model_path = (char *)e->path, .opt_level = p->opt_level, .attempt = 1};
    int rc = model_digest(pl, e, j.model_digest);
    if (rc)
        return rc < 0 ? -1 : 0;
    int max = pl->o->max_jobs > 0 ? pl->o->max_jobs : DEFAULT_MAX_JOBS;
    for (int t = 0; t < p->n_targets; t++) {
        for (int k = 0; k < p->n_precisions; k++) {
            if (pl->r->jobs >= max) {
                cv_diag_add(pl->sd, CV_SEV_ERROR, CV_E_PLAN_TOO_MANY_JOBS,
                            (cv_span){.file = p->origin.file, .line = p->origin.line,
                                      .col = p->origin.col},
                            NULL, "the revision expands into more than %d jobs", max);
                return 1;
            }
            j.target = (char *)p->targets[t];
            j.precision = p->precisions[k];
            /* Only an int8 artifact depends on the calibration data. */
            bool calibrated = j.precision == CV_PRECISION_INT8 && p->calibration_data;
            j.calibration = calibrated ? (char *)p->calibration_data : NULL;
            j.calibration_method = calibrated ? (char *)p->calibration_method : NULL;
            memset(j.l2_key, 0, sizeof j.l2_key);
            job_id(pl, &j, id);
            if (add_job(pl, &j))
                return -1;
        }
    }
    return 0;
}

static int expand_pipeline(plan *pl, const cv_spec_pipeline *p)
{
    const cv_gitsource_tree_entry **models;
    int n, rc = 0;
    if (cv_builddb_pipeline_add(pl->o->db, pl->rev_id, p->name, p->canonical, pl->d) ||
        match_models(pl, p, &models, &n))
        return -1;
    pl->r->models += n;
    for (int i = 0; i < n && rc == 0; i++)
        rc = expand_model(pl, p, models[i]);
    free(models);
    return rc;
}

static bool has_spec_files(const cv_gitsource_tree *tree)
{
    for (size_t i = 0; i < cv_gitsource_tree_count(tree); i++)
        if (cv_spec_is_spec_path(cv_gitsource_tree_at(tree, i)->path))
            return true;
    return false;
}

/* Whether a pipeline of s would take path as a model. */
static bool wanted_model(const cv_spec_set *s, const char *path)
{
    int n = s ? cv_spec_set_pipeline_count(s) : 0;
    for (int i = 0; i < n && is_model_path(path); i++) {
        const cv_spec_pipeline *p = cv_spec_set_pipeline(s, i);
        for (int g = 0; g < p->n_models; g++)
            if (cv_glob_match(p->models[g], path))
                return true;
    }
    return false;
}

/* The files the tree left out (unusable paths): an error for each model a
 * pipeline wants (the revision fails, the other models still build) and
 * for any unsafe entry (no honest commit has one: git itself refuses
 * them), a warning for any other file.  Paths are shown with odd bytes
 * escaped. */
static void report_skipped(plan *pl, const cv_spec_set *s)
{
    static const char *const why[] = {"is not valid UTF-8", "is too long", "is unsafe"};
    size_t total, n = cv_gitsource_tree_skipped_count(pl->tree, &total);
    char shown[4 * 512 + 4];
    for (size_t i = 0; i < n; i++) {
        int code;
        const cv_gitsource_tree_entry *e = cv_gitsource_tree_skipped_at(pl->tree, i, &code);
        cv_str_printable(e->path, 512, shown);
        bool model = wanted_model(s, e->path), error = model || code == CV_E_GIT_PATH_UNSAFE;
        cv_diag_add(pl->sd, error ? CV_SEV_ERROR : CV_SEV_WARNING, code, (cv_span){.file = shown},
                    NULL, "%s path '%s' %s (see docs/security.md): %s", model ? "model" : "the",
                    shown, why[code - CV_E_GIT_PATH_NOT_UTF8],
                    model ? "the model cannot be built" : "left out of the revision's files");
    }
    if (total > n)
        cv_diag_add(pl->sd, CV_SEV_WARNING, CV_E_GIT_PATH_UNSAFE, (cv_span){0}, NULL,
                    "%zu more files with unusable paths were left out", total - n);
}

/* Diagnostics found before planning, copied into the revision's. */
static void copy_diags(cv_diag *to, const cv_diag *from)
{
    for (int i = 1; from && i <= from->n; i++) {
        const cv_diag_entry *e = cv_diag_get(from, i);
        cv_diag_add(to, e->sev, e->code, e->span, e->path, "%s", e->msg);
    }
}

static int plan_specs(plan *pl)
{
    cv_spec_set *s = cv_spec_set_new();
    if (!s) {
        cv_diag_error(pl->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    int rc = 0;
    copy_diags(pl->sd, pl->o->tree_diags);
    if (!has_spec_files(pl->tree)) {
        /* a commit that deletes every spec builds nothing: not a success */
        cv_diag_add(pl->sd, CV_SEV_ERROR, CV_E_PLAN_NO_SPECS, (cv_span){0}, NULL,
                    "%s has no spec file (%s/*.yaml or *.yml): nothing to build", pl->revision,
                    CV_SPEC_DIR);
        pl->r->spec_errors = true;
        report_skipped(pl, NULL);
    } else if (cv_planner_load_specs(pl->tree, s, pl->sd)) {
        pl->r->spec_errors = true;
        report_skipped(pl, NULL);
    } else {
        if (pl->o->policy) {   /* what the cluster spec asks that the operator refuses */
            cv_cluster_settings ignored;
            cv_cluster_apply(cv_spec_set_cluster(s), pl->o->policy, &ignored, pl->sd);
        }
        report_skipped(pl, s);
        pl->r->pipelines = cv_spec_set_pipeline_count(s);
        if (pl->r->pipelines == 0)
            cv_diag_add(pl->sd, CV_SEV_WARNING, CV_E_PLAN_NO_PIPELINES, (cv_span){0}, NULL,
                        "%s has no CuvilPipeline in %s/*.yaml: nothing to build", pl->revision,
                        CV_SPEC_DIR);
        for (int i = 0; i < pl->r->pipelines && rc == 0; i++)
            rc = expand_pipeline(pl, cv_spec_set_pipeline(s, i));
    }
    cv_spec_set_free(s);
    if (rc < 0)
        return -1;
    if (cv_builddb_revision_diags(pl->o->db, pl->rev_id, pl->sd, pl->d))
        return -1;
    return cv_builddb_revision_planned(pl->o->db, pl->rev_id, pl->r->spec_errors, pl->now, pl->d);
}

int cv_planner_plan(const cv_planner_opts *o, const cv_gitsource_tree *tree, const char *revision,
                    cv_plan_report *r, cv_diag *d)
{
    memset(r, 0, sizeof *r);
    cv_diag sd;
    cv_diag_init(&sd);
    plan pl = {.o = o, .tree = tree, .revision = revision, .r = r, .sd = &sd, .d = d,
               .now = cv_ctl_now_ms(o->now_ms, o->clock_ctx)};
    bool created = false;
    if (cv_builddb_begin(o->db, d))
        return -1;
    int rc = cv_builddb_revision_begin(o->db, revision, pl.now, &pl.rev_id, &created, d);
    r->rev_id = pl.rev_id;
    r->already_planned = rc == 0 && !created;
    if (rc == 0 && created && tree)
        rc = cv_builddb_revision_commit(o->db, pl.rev_id, cv_gitsource_tree_commit_info(tree), d);
    if (rc == 0 && created)
        rc = plan_specs(&pl);
    if (rc == 0)
        rc = cv_builddb_commit(o->db, d);
    else
        cv_builddb_rollback(o->db);
    cv_diag_merge(d, &sd);
    cv_diag_free(&sd);
    return rc;
}

int cv_planner_fail(const cv_planner_opts *o, const char *revision, const cv_diag *why,
                    cv_plan_report *r, cv_diag *d)
{
    memset(r, 0, sizeof *r);
    int64_t now = cv_ctl_now_ms(o->now_ms, o->clock_ctx);
    bool created = false;
    if (cv_builddb_begin(o->db, d))
        return -1;
    int rc = cv_builddb_revision_begin(o->db, revision, now, &r->rev_id, &created, d);
    r->already_planned = rc == 0 && !created;
    r->spec_errors = true;
    if (rc == 0 && created)
        rc = cv_builddb_revision_diags(o->db, r->rev_id, why, d);
    if (rc == 0 && created)
        rc = cv_builddb_revision_planned(o->db, r->rev_id, true, now, d);
    if (rc == 0)
        rc = cv_builddb_commit(o->db, d);
    else
        cv_builddb_rollback(o->db);
    return rc;
}

int cv_planner_collect(const cv_planner_opts *o, int *n_results, cv_diag *d)
{
    int total = 0;
    for (;;) {
        cv_queue_result *res = NULL;
        int n = 0;
        if (cv_queue_poll_results(o->queue, 0, 1000, &res, &n, d))
            return -1;
        int rc = n ? cv_builddb_begin(o->db, d) : 0;
        int64_t now = cv_ctl_now_ms(o->now_ms, o->clock_ctx);
        for (int i = 0; rc == 0 && i < n; i++)
            rc = cv_builddb_record_result(o->db, &res[i], now, d);
        if (n && rc == 0)
            rc = cv_builddb_commit(o->db, d);
        else if (n)
            cv_builddb_rollback(o->db);
        /* ack only what the build DB has stored */
        if (rc == 0 && n)
            rc = cv_queue_ack_results(o->queue, res[n - 1].seq, d);
        cv_queue_results_free(res, n);
        if (rc)
            return -1;
        total += n;
        if (n < 1000)
            break;
    }
    if (n_results)
        *n_results = total;
    return 0;
}
