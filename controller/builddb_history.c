/* The build DB's read side (revisions, jobs, stored diagnostics) and the
 * build requests that `cuvil submit` leaves for the controller.  Readers
 * are other processes (`cuvil status`, `cuvil artifacts`), which WAL lets
 * read while the controller writes. */
#include "controller/builddb_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- revisions */

static const char SQL_REV_LIST[] =
    "SELECT revision FROM revisions ORDER BY id DESC LIMIT ? OFFSET ?";

int cv_builddb_revisions_list(cv_builddb *db, int64_t offset, cv_rev_summary *out, int max,
                              int *n, cv_diag *d)
{
    *n = 0;
    /* names first: the summary query reuses the statement cache */
    char (*names)[CV_REVISION_MAX + 1] = max > 0 ? calloc((size_t)max, sizeof *names) : NULL;
    if (max > 0 && !names) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_REV_LIST, "ii", (int64_t)max, offset);
    int rc = st ? 1 : -1, count = 0;
    while (rc == 1 && count < max && (rc = cv_sqldb_step(&db->db, st, d)) == 1)
        cv_sqldb_text(st, 0, names[count++], sizeof names[0]);
    if (st && rc == 1)
        sqlite3_reset(st);
    for (int i = 0; rc >= 0 && i < count; i++)
        if (cv_builddb_revision_summary(db, names[i], &out[i], d) != 1)
            rc = -1;
    free(names);
    if (rc < 0)
        return -1;
    *n = count;
    return 0;
}

static bool is_hex_prefix(const char *s)
{
    size_t n = strlen(s);
    if (n < 4 || n > CV_GIT_HEX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

static const char SQL_REV_EXACT[] = "SELECT revision FROM revisions WHERE revision=?";
/* instr() rather than LIKE: a commit prefix holds no wildcard, but a ref
 * name may hold '_'. */
static const char SQL_REV_PREFIX[] =
    "SELECT revision FROM revisions"
    " WHERE substr(revision, instr(revision, '@sha1:') + 6, length(?1)) = lower(?1)"
    " ORDER BY id DESC LIMIT 2";

int cv_builddb_revision_resolve(cv_builddb *db, const char *name, char out[CV_REVISION_MAX + 1],
                                cv_diag *d)
{
    out[0] = '\0';
    if (strcmp(name, "latest") == 0) {
        cv_rev_summary s;
        int rc = cv_builddb_revision_summary(db, NULL, &s, d);
        if (rc == 1)
            snprintf(out, CV_REVISION_MAX + 1, "%s", s.revision);
        return rc;
    }
    bool prefix = !strchr(name, '@') && is_hex_prefix(name);
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, prefix ? SQL_REV_PREFIX : SQL_REV_EXACT, "t", name);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc != 1)
        return rc;
    cv_sqldb_text(st, 0, out, CV_REVISION_MAX + 1);
    rc = cv_sqldb_step(&db->db, st, d);   /* a second match: ambiguous */
    if (rc == 1)
        sqlite3_reset(st);
    if (rc == 1) {
        cv_diag_error(d, CV_E_BUILDDB_AMBIGUOUS_REVISION, (cv_span){0},
                      "the commit prefix '%s' names more than one revision; give more digits",
                      name);
        out[0] = '\0';
        return -1;
    }
    return rc < 0 ? -1 : 1;
}

/* ---- jobs */

#define SQL_JOBS_SELECT                                                                       \
    "SELECT j.job_id, j.pipeline, j.model_path, j.target, j.precision, j.opt_level, j.state,"  \
    " COALESCE(j.result_id,0), j.attempts, j.queued_ms, COALESCE(j.finished_ms,0),"            \
    " COALESCE(r.l2,''), COALESCE(r.l1,''), COALESCE(j.started_ms,0),"                         \
    " COALESCE(j.frontend_ms,0), COALESCE(j.passes_ms,0), COALESCE(j.codegen_ms,0),"           \
    " COALESCE(j.uploaded_ms,0)"                                                               \
    " FROM jobs j LEFT JOIN results r ON r.id = j.result_id WHERE j.revision_id=?"
#define SQL_JOBS_ORDER " ORDER BY j.model_path, j.target, j.precision, j.pipeline"
static const char SQL_JOBS_ALL[] = SQL_JOBS_SELECT SQL_JOBS_ORDER;
static const char SQL_JOBS_BAD[] =
    SQL_JOBS_SELECT " AND j.state NOT IN ('ok','hit','queued')" SQL_JOBS_ORDER;

static void job_row_read(sqlite3_stmt *st, cv_job_row *r)
{
    cv_sqldb_text(st, 0, r->job_id, sizeof r->job_id);
    cv_sqldb_text(st, 1, r->pipeline, sizeof r->pipeline);
    cv_sqldb_text(st, 2, r->model_path, sizeof r->model_path);
    cv_sqldb_text(st, 3, r->target, sizeof r->target);
    cv_sqldb_text(st, 4, r->precision, sizeof r->precision);
    cv_sqldb_text(st, 5, r->opt_level, sizeof r->opt_level);
    cv_sqldb_text(st, 6, r->state, sizeof r->state);
    r->result_id = sqlite3_column_int64(st, 7);
    r->attempts = sqlite3_column_int(st, 8);
    r->queued_ms = sqlite3_column_int64(st, 9);
    r->finished_ms = sqlite3_column_int64(st, 10);
    cv_sqldb_text(st, 11, r->l2, sizeof r->l2);
    cv_sqldb_text(st, 12, r->l1, sizeof r->l1);
    r->ts[CV_JOB_TS_QUEUED] = r->queued_ms;
    for (int i = CV_JOB_TS_STARTED; i <= CV_JOB_TS_UPLOADED; i++)
        r->ts[i] = sqlite3_column_int64(st, 12 + i);
    r->ts[CV_JOB_TS_FINISHED] = r->finished_ms;
}

int cv_builddb_jobs_visit(cv_builddb *db, int64_t rev_id, bool only_bad, cv_job_row_fn fn,
                          void *ctx, cv_diag *d)
{
    /* Rows are copied out first: fn may query the DB (the statement cache
     * holds one cursor per statement). */
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, only_bad ? SQL_JOBS_BAD : SQL_JOBS_ALL, "i",
                                      rev_id);
    if (!st)
        return -1;
    cv_job_row *rows = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            cv_job_row *grown = realloc(rows, cap * sizeof *rows);
            if (!grown) {
                sqlite3_reset(st);
                free(rows);
                cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
                return -1;
            }
            rows = grown;
        }
        job_row_read(st, &rows[n++]);
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (fn(ctx, &rows[i]))
            break;
    free(rows);
    return rc < 0 ? -1 : 0;
}

static const char SQL_DIAGS_RESULT[] =
    "SELECT diag_id, root_id, code, severity, file, line, col, end_line, end_col, path, message"
    " FROM diagnostics WHERE result_id=? ORDER BY diag_id";
static const char SQL_DIAGS_REV[] =
    "SELECT diag_id, root_id, code, severity, file, line, col, end_line, end_col, path, message"
    " FROM diagnostics WHERE revision_id=? AND result_id IS NULL ORDER BY id";

static cv_severity severity_parse(const char *s)
{
    for (int v = CV_SEV_NOTE; v <= CV_SEV_ERROR; v++)
        if (strcmp(cv_severity_name((cv_severity)v), s) == 0)
            return (cv_severity)v;
    return CV_SEV_ERROR;
}

int cv_builddb_diags_load(cv_builddb *db, int64_t rev_id, int64_t result_id, cv_diag *out,
                          cv_diag *d)
{
    sqlite3_stmt *st = result_id ? cv_sqldb_query(&db->db, d, SQL_DIAGS_RESULT, "i", result_id)
                                 : cv_sqldb_query(&db->db, d, SQL_DIAGS_REV, "i", rev_id);
    if (!st)
        return -1;
    int rc, first = out->n;
    while ((rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        const char *file = (const char *)sqlite3_column_text(st, 4);
        const char *path = (const char *)sqlite3_column_text(st, 9);
        cv_span sp = {.file = file, .line = sqlite3_column_int(st, 5),
                      .col = sqlite3_column_int(st, 6), .end_line = sqlite3_column_int(st, 7),
                      .end_col = sqlite3_column_int(st, 8)};
        int id = cv_diag_add(out, severity_parse((const char *)sqlite3_column_text(st, 3)),
                             sqlite3_column_int(st, 2), sp, path, "%s",
                             (const char *)sqlite3_column_text(st, 10));
        int root = sqlite3_column_int(st, 1);
        /* stored root ids count from the stored result's first diagnostic */
        if (id > 0 && root > 0 && first + root != id)
            cv_diag_set_root(out, id, first + root);
    }
    return rc < 0 ? -1 : 0;
}

/* ---- build requests */

static const char SQL_REQ_ADD[] = "INSERT INTO requests(created_ms) VALUES(?)";
static const char SQL_REQ_NEXT[] =
    "SELECT id, created_ms, COALESCE(handled_ms,0), COALESCE(revision,''), COALESCE(error,'')"
    " FROM requests WHERE handled_ms IS NULL ORDER BY id DESC LIMIT 1";
static const char SQL_REQ_GET[] =
    "SELECT id, created_ms, COALESCE(handled_ms,0), COALESCE(revision,''), COALESCE(error,'')"
    " FROM requests WHERE id=?";
static const char SQL_REQ_DONE[] =
    "UPDATE requests SET handled_ms=?, revision=?, error=? WHERE id<=? AND handled_ms IS NULL";

int cv_builddb_request_add(cv_builddb *db, int64_t now_ms, int64_t *id, cv_diag *d)
{
    if (cv_sqldb_exec(&db->db, d, SQL_REQ_ADD, "i", now_ms) < 0)
        return -1;
    *id = sqlite3_last_insert_rowid(db->db.db);
    return 0;
}

static int request_read(cv_builddb *db, sqlite3_stmt *st, cv_build_request *out, cv_diag *d)
{
    memset(out, 0, sizeof *out);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc != 1)
        return rc;
    out->id = sqlite3_column_int64(st, 0);
    out->created_ms = sqlite3_column_int64(st, 1);
    out->handled_ms = sqlite3_column_int64(st, 2);
    cv_sqldb_text(st, 3, out->revision, sizeof out->revision);
    cv_sqldb_text(st, 4, out->error, sizeof out->error);
    sqlite3_reset(st);
    return 1;
}

int cv_builddb_request_next(cv_builddb *db, cv_build_request *out, cv_diag *d)
{
    return request_read(db, cv_sqldb_query(&db->db, d, SQL_REQ_NEXT, ""), out, d);
}

int cv_builddb_request_get(cv_builddb *db, int64_t id, cv_build_request *out, cv_diag *d)
{
    return request_read(db, cv_sqldb_query(&db->db, d, SQL_REQ_GET, "i", id), out, d);
}

int cv_builddb_request_done(cv_builddb *db, int64_t upto_id, const char *revision,
                            const char *error, int64_t now_ms, cv_diag *d)
{
    int n = cv_sqldb_exec(&db->db, d, SQL_REQ_DONE, "itti", now_ms,
                          revision && *revision ? revision : NULL, error && *error ? error : NULL,
                          upto_id);
    return n;
}
