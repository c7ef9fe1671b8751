/* What the farm commands print about a revision: the progress line (a bar
 * on a TTY, plain lines otherwise), the summary, and the jobs that failed
 * with the first error of each. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "cli/farm_report.h"

#define BAR_WIDTH 24
#define PLAIN_EVERY_S 2.0

void cv_cli_progress(void *ctx, const cv_farm_progress *p)
{
    cv_cli_progress_state *s = ctx;
    /* the rate counts only jobs done since the first report of this
     * revision: cache hits at planning take no time */
    if (strcmp(s->revision, p->revision) != 0) {
        snprintf(s->revision, sizeof s->revision, "%s", p->revision);
        s->base_done = p->done;
        s->base_s = p->elapsed_s;
    }
    double span = p->elapsed_s - s->base_s;
    double rate = span > 0.05 ? (double)(p->done - s->base_done) / span : 0;
    double eta = rate > 0 ? (double)p->pending / rate : 0;
    if (s->tty) {
        int fill = p->jobs ? (int)(BAR_WIDTH * p->done / p->jobs) : BAR_WIDTH;
        char bar[BAR_WIDTH + 1];
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[BAR_WIDTH] = '\0';
        fprintf(s->out, "\r[%s] %lld/%lld jobs  %lld hits  %lld failed  %.1f jobs/s  ETA %.0fs \033[K",
                bar, (long long)p->done, (long long)p->jobs, (long long)p->hits,
                (long long)p->failed, rate, eta);
        if (p->pending == 0)
            fputc('\n', s->out);
        fflush(s->out);
        return;
    }
    double now = cv_clock_mono_s();
    if (p->pending && now - s->last_plain < PLAIN_EVERY_S)
        return;
    s->last_plain = now;
    fprintf(s->out, "progress: %lld/%lld jobs, %lld hits, %lld failed, %.1f jobs/s\n",
            (long long)p->done, (long long)p->jobs, (long long)p->hits, (long long)p->failed,
            rate);
    fflush(s->out);
}

void cv_cli_print_summary(FILE *out, const cv_farm_summary *s)
{
    fprintf(out, "revision   %s\n", s->revision[0] ? s->revision : "(none)");
    fprintf(out, "jobs       %lld\n", (long long)s->jobs);
    fprintf(out, "cache hits %lld (%lld at planning, %lld in workers)\n",
            (long long)(s->plan_hits + s->worker_hits), (long long)s->plan_hits,
            (long long)s->worker_hits);
    fprintf(out, "compiled   %lld\nfailed     %lld\n", (long long)s->compiled,
            (long long)s->failed);
    if (s->pending)
        fprintf(out, "pending    %lld\n", (long long)s->pending);
    if (s->spec_errors)
        fprintf(out, "specs      errors (see `cuvil status`)\n");
    fprintf(out, "time       %.2f s\n", s->seconds);
}

typedef struct failures_ctx {
    cv_builddb *db;
    FILE *out;
    int shown, max;
    int rc;
} failures_ctx;

/* The first root error of a result, else its first error. */
static const cv_diag_entry *first_root_error(const cv_diag *dg)
{
    const cv_diag_entry *any = NULL;
    for (int i = 1; i <= dg->n; i++) {
        const cv_diag_entry *e = cv_diag_get(dg, i);
        if (e->sev != CV_SEV_ERROR)
            continue;
        if (e->root_id == 0)
            return e;
        if (!any)
            any = e;
    }
    return any;
}

static int print_failure(void *ctx, const cv_job_row *row)
{
    failures_ctx *f = ctx;
    if (f->shown++ == f->max) {
        fprintf(f->out, "  ... (more: `cuvil status --json`)\n");
        return 1;
    }
    fprintf(f->out, "  %s  %s  %s  %s", row->model_path, row->target, row->precision, row->state);
    cv_diag dg;
    cv_diag_init(&dg);
    cv_diag tmp;
    cv_diag_init(&tmp);
    if (row->result_id && cv_builddb_diags_load(f->db, 0, row->result_id, &dg, &tmp) != 0)
        f->rc = -1;
    const cv_diag_entry *e = first_root_error(&dg);
    if (e && e->span.file && e->span.line)
        fprintf(f->out, "\n    %s:%d:%d: CV%04d %s", e->span.file, e->span.line, e->span.col,
                e->code, e->msg);
    else if (e)
        fprintf(f->out, "\n    CV%04d %s", e->code, e->msg);
    fputc('\n', f->out);
    cv_diag_free(&tmp);
    cv_diag_free(&dg);
    return 0;
}

int cv_cli_print_failures(FILE *out, cv_builddb *db, int64_t rev_id, int max, cv_diag *d)
{
    failures_ctx f = {.db = db, .out = out, .max = max};
    if (cv_builddb_jobs_visit(db, rev_id, true, print_failure, &f, d) != 0)
        return -1;
    return f.rc;
}
