/* One job, both halves.  The child fetches the model, checks it is the one
 * the job was planned for, compiles it through the cache and writes a
 * result message to its report pipe.  The parent turns that message, or
 * the way the child ended (signal, timeout, out of memory, silence), into
 * the result the queue records. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/strutil.h"
#include "worker/internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cv_test_fault_parse(const char *s)
{
    static const char *const names[] = {"none", "segv", "hang", "oom", "abort"};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0)
            return (int)i;
    return -1;
}

/* ---------------------------------------------------------------- child */

/* Out of memory the way a compiler meets it: allocations fail.  Bounded,
 * in case no memory limit is set. */
static void fault_oom(cv_diag *d)
{
    const size_t chunk = (size_t)64 << 20;
    for (size_t total = 0; total < ((size_t)8 << 30); total += chunk) {
        char *p = malloc(chunk);
        if (!p)
            break;
        memset(p, 1, chunk);    /* kept on purpose: the child is about to end */
    }
    cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
}

static void provoke(cv_test_fault f, cv_diag *d)
{
    switch (f) {
    case CV_FAULT_SEGV:
        signal(SIGSEGV, SIG_DFL);   /* past any sanitizer's handler: a plain crash */
        raise(SIGSEGV);
        break;
    case CV_FAULT_ABORT:
        signal(SIGABRT, SIG_DFL);
        abort();
    case CV_FAULT_HANG:
        for (;;)
            pause();
    case CV_FAULT_OOM:
        fault_oom(d);
        break;
    default:
        break;
    }
}

/* With trees_dir, a job's files are under trees_dir/<the commit of its
 * revision>/ (the controller writes them there); else under models_dir. */
static char *models_base(const cv_worker_opts *o, const cv_job_msg *job)
{
    if (!o->trees_dir)
        return strdup(o->models_dir ? o->models_dir : ".");
    const char *at = strstr(job->revision, "@sha1:");
    const char *commit = at ? at + 6 : "";
    bool ok = strlen(commit) == 40;
    for (const char *p = commit; ok && *p; p++)
        ok = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
    return ok ? cv_fs_join(o->trees_dir, commit) : NULL;
}

static int find_model(const cv_wk_job_ctx *j, char **path, cv_diag *d)
{
    const cv_worker_opts *o = j->o;
    const cv_job_msg *job = &j->lease->job;
    if (o->fetch)
        return o->fetch(o->fetch_ctx, job, path, d);
    char *base = models_base(o, job);
    if (!base) {
        cv_diag_error(d, CV_E_WORKER_MODEL_MISSING, (cv_span){.file = job->model_path},
                      "revision '%s' does not name a commit, so its files cannot be found "
                      "under %s", job->revision, o->trees_dir);
        return -1;
    }
    cv_diag scratch;
    cv_diag_init(&scratch);
    int rc = cv_fs_resolve_inside(base, job->model_path, path, &scratch);
    if (rc == 0 && access(*path, R_OK) != 0)
        rc = -1;
    if (rc)
        cv_diag_error(d, CV_E_WORKER_MODEL_MISSING, (cv_span){.file = job->model_path},
                      "model %s not found under %s", job->model_path, base);
    cv_diag_free(&scratch);
    free(base);
    return rc;
}

static int check_digest(cv_cache *c, const cv_job_msg *job, const char *path, cv_diag *d)
{
    cv_digest dg;
    char hex[CV_DIGEST_HEX + 1];
    if (cv_cache_file_digest(c, path, &dg, d))
        return -1;
    cv_cache_digest_hex(&dg, hex);
    if (strcmp(hex, job->model_digest) == 0)
        return 0;
    return cv_diag_fail(d, CV_E_WORKER_MODEL_DIGEST, (cv_span){.file = job->model_path},
                        "model %s has digest %.12s..., the job was planned for %.12s...",
                        job->model_path, hex, job->model_digest);
}

/* What a failed build's diagnostics say about whose fault it is.  Cache
 * trouble (a full disk, CV9100-CV9299) is reported as warnings; a build
 * that failed with no error but such a warning failed to store its output:
 * the farm's fault, not the model's. */
static cv_result_status classify(const cv_diag *d)
{
    cv_result_status st = CV_RESULT_FAILED;
    bool errors = false, cache_trouble = false;
    for (int i = 0; i < d->n; i++) {
        const cv_diag_entry *e = &d->v[i];
        cache_trouble |= e->code >= 9100 && e->code < 9300;
        if (e->sev != CV_SEV_ERROR)
            continue;
        errors = true;
        if (e->code == CV_E_OUT_OF_MEMORY || e->code == CV_E_WORKER_OUT_OF_MEMORY)
            return CV_RESULT_OOM;
        if (e->code == CV_E_INTERNAL_ERROR)
            st = CV_RESULT_ICE;
        else if (st == CV_RESULT_FAILED &&
                 (e->code == CV_E_IO_ERROR || e->code == CV_E_BACKEND_UNAVAILABLE /* backend plugin missing */ ||
                  (e->code >= 9100 && e->code < 9300) ||
                  e->code == CV_E_WORKER_MODEL_MISSING || e->code == CV_E_WORKER_MODEL_DIGEST ||
                  e->code == CV_E_WORKER_SPAWN_FAILED))
            st = CV_RESULT_INFRA;
    }
    return !errors && cache_trouble ? CV_RESULT_INFRA : st;
}

/* Diagnostics name files as the repository does (models/x.cvl.py), not as
 * this worker's checkout happens to place them, so that failures group
 * the same way on every machine. */
static void relativise(cv_diag *d, const char *model, const char *rel)
{
    size_t n = strlen(model), k = strlen(rel);
    if (n <= k || strcmp(model + n - k, rel) != 0 || model[n - k - 1] != '/')
        return;
    size_t root = n - k;
    for (int i = 0; i < d->n; i++) {
        cv_span *sp = &d->v[i].span;
        char *rest = sp->file && strncmp(sp->file, model, root) == 0 ? strdup(sp->file + root)
                                                                       : NULL;
        if (rest) {
            free((char *)sp->file);
            sp->file = rest;
        }
    }
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The dashboard's "why did this miss" (controller/http): the cause word and
 * the reason, cleaned so the result message always encodes. */
static void record_miss(cv_result_msg *res, const cv_build_level *l2)
{
    char clean[256];
    res->miss = strdup(l2->cause);
    cv_str_clean_line(l2->reason, strlen(l2->reason), clean, sizeof clean);
    res->miss_reason = clean[0] ? strdup(clean) : NULL;
}

static int compile_job(const cv_wk_job_ctx *j, cv_cache *c, const char *model,
                       cv_result_msg *res, cv_diag *d)
{
    const cv_job_msg *job = &j->lease->job;
    cv_build_opts bo = {.model = model, .target = job->target, .precision = job->precision,
                        .opt_level = job->opt_level, .out_dir = j->out_dir,
                        .explain = !j->o->no_explain, .no_output_on_hit = true,
                        .scratch_out = true};
    char *root = job->calibration ? models_base(j->o, job) : NULL;
    if (job->calibration && !root)
        return cv_diag_fail(d, CV_E_WORKER_MODEL_MISSING, (cv_span){.file = job->calibration},
                            "revision '%s' does not name a commit, so its calibration data "
                            "cannot be found", job->revision);
    cv_build_job_quant(job, root, &bo.quant);
    cv_build_result br;
    int rc = cv_build(c, &bo, &br, d);
    free(root);
    res->l1 = br.l1.outcome;
    res->l2 = br.l2.outcome;
    if (br.l2.outcome == CV_CACHE_MISS && br.l2.cause)
        record_miss(res, &br.l2);
    res->timings_ms[CV_TIMING_FRONTEND] = (int64_t)br.ms_frontend;
    res->timings_ms[CV_TIMING_PASSES] = (int64_t)br.ms_passes;
    res->timings_ms[CV_TIMING_CODEGEN] = (int64_t)br.ms_codegen;
    res->timings_ms[CV_TIMING_UPLOAD] = (int64_t)br.ms_upload;
    if (rc == 0 && !br.artifact_manifest[0])
        rc = cv_diag_error(d, CV_E_BUILD_BAD_ARTIFACT, (cv_span){.file = job->model_path},
                           "the artifact of %s could not be stored in the cache",
                           job->model_path);
    if (rc == 0)
        memcpy(res->artifact_manifest, br.artifact_manifest, sizeof res->artifact_manifest);
    char line[600];
    cv_build_cache_line(&br, line, sizeof line);
    fprintf(stderr, "%s: %s\n", job->job_id, line);
    return rc;
}

int cv_wk_job_body(void *ctx, int report_fd)
{
    const cv_wk_job_ctx *j = ctx;
    const cv_worker_opts *o = j->o;
    cv_result_msg res;
    cv_result_msg_init(&res);
    res.job_id = strdup(j->lease->job.job_id);
    cv_diag d;
    cv_diag_init(&d);
    double t0 = now_ms();
    int fault = o->allow_test_faults ? cv_test_fault_parse(getenv("CUVIL_TEST_FAULT")) : 0;
    cv_cache_options co = {.dir = o->cache_dir, .remote = o->remote_cache,
                           .sign_key = o->sign_key, .verify_key = o->verify_key};
    cv_cache *c = NULL;
    char *model = NULL;
    int rc = cv_cache_open(&co, &c, &d);
    /* the worker syncs the files this compile stores while the next one runs */
    bool batch = rc == 0 && cv_cache_batch_begin(c, &d) == 0;
    if (rc == 0 && (rc = find_model(j, &model, &d)) == 0)
        rc = check_digest(c, &j->lease->job, model, &d);
    res.timings_ms[CV_TIMING_FETCH] = (int64_t)(now_ms() - t0);
    if (rc == 0 && fault > 0)
        provoke((cv_test_fault)fault, &d);
    if (rc == 0 && !cv_diag_has_errors(&d))
        rc = compile_job(j, c, model, &res, &d);
    if (batch && cv_wk_sync_hand_over(c, j->out_dir) != 0 && res.artifact_manifest[0])
        cv_diag_error(&d, CV_E_BUILD_BAD_ARTIFACT, (cv_span){.file = j->lease->job.model_path},
                      "the artifact's files could not be synced to the cache's disk");
    res.status = rc == 0 && !cv_diag_has_errors(&d) ? CV_RESULT_OK : classify(&d);
    if (res.status != CV_RESULT_OK)
        res.artifact_manifest[0] = 0;
    if (model)
        relativise(&d, model, j->lease->job.model_path);
    cv_diag_merge(&res.diags, &d);
    char *msg = NULL;
    size_t len = 0;
    cv_diag ed;
    cv_diag_init(&ed);
    rc = res.job_id ? cv_result_msg_encode(&res, &msg, &len, &ed) : -1;
    if (rc == 0)
        rc = write_all(report_fd, msg, len);
    else
        cv_diag_print(&ed, stderr, false);
    free(msg);
    free(model);
    cv_diag_free(&ed);
    cv_diag_free(&d);
    cv_result_msg_free(&res);
    cv_cache_close(c);
    return rc == 0 ? 0 : 3;
}

/* --------------------------------------------------------------- parent */

static bool looks_oom(const char *tail)
{
    static const char *const marks[] = {"out of memory", "failed to allocate",
                                        "Cannot allocate memory", "std::bad_alloc",
                                        "allocation-size-too-big"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(tail, marks[i]))
            return true;
    return false;
}

/* The last lines of the child's stderr, as a note. */
static void note_tail(cv_diag *d, int id, const char *tail)
{
    if (!tail[0] || !id)
        return;
    size_t n = strlen(tail);
    const char *p = n > 1000 ? tail + n - 1000 : tail;
    cv_diag_note(d, id, "the compiler's last output:\n%s", p);
}

static void synthesise(const cv_lease *l, const cv_sb_outcome *so, const cv_worker_opts *o,
                       cv_result_msg *res)
{
    cv_diag *d = &res->diags;
    cv_span at = {.file = l->job.model_path};
    bool killed = so->end == CV_SB_SIGNALED && so->code == SIGKILL;
    int id = 0;
    if (so->end == CV_SB_TIMEOUT) {
        res->status = CV_RESULT_TIMEOUT;
        id = cv_diag_error(d, CV_E_WORKER_JOB_TIMEOUT, at, "the compile ran past its %lld ms limit "
                           "and was killed", (long long)o->job_timeout_ms);
    } else if (so->end == CV_SB_CPU) {
        res->status = CV_RESULT_TIMEOUT;
        id = cv_diag_error(d, CV_E_WORKER_CPU_LIMIT, at, "the compile ran past its %d s CPU-time "
                           "limit and was killed", o->cpu_limit_s);
    } else if (looks_oom(so->err_tail) || (killed && so->cgroup_oom)) {
        res->status = CV_RESULT_OOM;
        id = cv_diag_error(d, CV_E_WORKER_OUT_OF_MEMORY, at, "the compiler ran out of memory (peak "
                           "resident %ld MiB)", so->maxrss_kb / 1024);
    } else if (killed) {
        /* Our own limits never SIGKILL without a trace (RLIMIT_AS fails
         * allocations, the timeouts are above): an operator, an evicted
         * pod or a host OOM kill outside the cgroup.  Not the model's
         * fault: retried. */
        res->status = CV_RESULT_INFRA;
        id = cv_diag_error(d, CV_E_WORKER_COMPILER_KILLED, at, "the compiler was killed (SIGKILL) from "
                           "outside the worker, with no sign of running out of memory (peak "
                           "resident %ld MiB)", so->maxrss_kb / 1024);
    } else if (so->end == CV_SB_SIGNALED) {
        res->status = CV_RESULT_ICE;
        id = cv_diag_error(d, CV_E_WORKER_COMPILER_CRASH, at, "the compiler crashed: signal %d (%s)",
                           so->code, strsignal(so->code));
    } else {
        res->status = CV_RESULT_ICE;
        id = cv_diag_error(d, CV_E_WORKER_COMPILER_EXIT, at, "the compiler exited with status %d "
                           "without reporting a result", so->code);
    }
    note_tail(d, id, so->err_tail);
}

int cv_wk_job_result(const cv_lease *l, const cv_sb_outcome *so, const cv_worker_opts *o,
                     cv_result_msg *res, bool *infra, cv_diag *d)
{
    cv_result_msg_init(res);
    *infra = false;
    cv_diag scratch;
    cv_diag_init(&scratch);
    bool own = so->end == CV_SB_EXITED && so->code == 0 && so->report &&
               cv_result_msg_decode(so->report, so->report_len, "compile result", res,
                                    &scratch) == 0 &&
               strcmp(res->job_id, l->job.job_id) == 0;
    if (!own) {
        bool malformed = so->end == CV_SB_EXITED && so->code == 0 && so->report;
        cv_result_msg_free(res);
        cv_result_msg_init(res);
        res->job_id = strdup(l->job.job_id);
        if (!res->job_id) {
            cv_diag_free(&scratch);
            return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        }
        if (malformed) {
            res->status = CV_RESULT_ICE;
            int id = cv_diag_error(&res->diags, CV_E_WORKER_BAD_RESULT,
                                   (cv_span){.file = l->job.model_path},
                                   "the compiler reported a malformed result");
            if (scratch.n)
                cv_diag_note(&res->diags, id, "%s", scratch.v[0].msg);
        } else {
            synthesise(l, so, o, res);
        }
    }
    cv_diag_free(&scratch);
    res->timings_ms[CV_TIMING_QUEUED] = l->leased_ms > l->enqueued_ms
                                            ? l->leased_ms - l->enqueued_ms : 0;
    *infra = res->status == CV_RESULT_INFRA;
    return 0;
}
