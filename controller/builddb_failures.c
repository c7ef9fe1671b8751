/* The failure classifier's history in the build DB: for each finished
 * revision, how many jobs each pattern broke (tables failure_revisions and
 * failure_patterns, migration 3).  A pattern's first-seen revision is the
 * oldest revision that holds it; trends read the counts back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/builddb_internal.h"
#include "controller/classify_internal.h"

static const char SQL_STORED[] =
    "SELECT COUNT(*) FROM failure_revisions WHERE revision_id=? AND classifier=?";
static const char SQL_CLEAR[] = "DELETE FROM failure_patterns WHERE revision_id=?";
static const char SQL_MARK[] =
    "INSERT OR REPLACE INTO failure_revisions(revision_id,classifier,classified_ms)"
    " VALUES(?,?,?)";
static const char SQL_ADD[] =
    "INSERT OR REPLACE INTO failure_patterns(revision_id,pattern,class,code,jobs)"
    " VALUES(?,?,?,?,?)";
static const char SQL_UNSTORED[] =
    "SELECT r.id FROM revisions r WHERE r.id<=? AND r.state IN ('succeeded','failed')"
    " AND NOT EXISTS (SELECT 1 FROM failure_revisions f WHERE f.revision_id=r.id"
    " AND f.classifier=?) ORDER BY r.id LIMIT ?";
static const char SQL_FIRST[] =
    "SELECT p.revision_id, r.revision FROM failure_patterns p"
    " JOIN failure_revisions f ON f.revision_id=p.revision_id AND f.classifier=?2"
    " JOIN revisions r ON r.id=p.revision_id WHERE p.pattern=?1"
    " ORDER BY p.revision_id LIMIT 1";
static const char SQL_COUNTS[] =
    "SELECT pattern, class, code, jobs FROM failure_patterns WHERE revision_id=?"
    " ORDER BY pattern";
static const char SQL_RANGE[] =
    "SELECT id, revision FROM revisions WHERE id BETWEEN ? AND ? ORDER BY id DESC LIMIT ?";
static const char SQL_RANGE_COUNT[] = "SELECT COUNT(*) FROM revisions WHERE id BETWEEN ? AND ?";

int cv_fh_is_stored(cv_builddb *db, int64_t rev_id, bool *stored, cv_diag *d)
{
    int64_t n = 0;
    if (cv_sqldb_int(&db->db, d, &n, SQL_STORED, "ii", rev_id, (int64_t)CV_CLASSIFIER_VERSION) < 0)
        return -1;
    *stored = n > 0;
    return 0;
}

int cv_fh_store(cv_builddb *db, int64_t rev_id, const cv_fh_count *c, int n, int64_t now_ms,
                cv_diag *d)
{
    bool owned;
    if (cv_sqldb_tx_begin(&db->db, &owned, d))
        return -1;
    int rc = cv_sqldb_exec(&db->db, d, SQL_CLEAR, "i", rev_id) < 0 ? -1 : 0;
    if (rc == 0 && cv_sqldb_exec(&db->db, d, SQL_MARK, "iii", rev_id,
                                 (int64_t)CV_CLASSIFIER_VERSION, now_ms) < 0)
        rc = -1;
    for (int i = 0; rc == 0 && i < n; i++)
        if (cv_sqldb_exec(&db->db, d, SQL_ADD, "ittii", rev_id, c[i].pattern,
                          cv_fail_class_name(c[i].cls), (int64_t)c[i].code, c[i].jobs) < 0)
            rc = -1;
    return cv_sqldb_tx_end(&db->db, owned, rc, d);
}

int cv_fh_unstored(cv_builddb *db, int64_t upto_id, int64_t *out, int max, int *n, cv_diag *d)
{
    *n = 0;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_UNSTORED, "iii", upto_id,
                                      (int64_t)CV_CLASSIFIER_VERSION, (int64_t)max);
    int rc = st ? 1 : -1;
    while (rc == 1 && *n < max && (rc = cv_sqldb_step(&db->db, st, d)) == 1)
        out[(*n)++] = sqlite3_column_int64(st, 0);
    if (rc == 1)
        sqlite3_reset(st);
    return rc < 0 ? -1 : 0;
}

int cv_fh_first_seen(cv_builddb *db, const char *pattern, int64_t *rev_id,
                     char name[CV_REVISION_MAX + 1], cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_FIRST, "ti", pattern,
                                      (int64_t)CV_CLASSIFIER_VERSION);
    int rc = st ? cv_sqldb_step(&db->db, st, d) : -1;
    if (rc != 1)
        return rc;
    *rev_id = sqlite3_column_int64(st, 0);
    cv_sqldb_text(st, 1, name, CV_REVISION_MAX + 1);
    sqlite3_reset(st);
    return 1;
}

static cv_fail_class class_parse(const char *s)
{
    for (int c = 0; c < CV_FAIL__COUNT; c++)
        if (strcmp(s, cv_fail_class_name((cv_fail_class)c)) == 0)
            return (cv_fail_class)c;
    return CV_FAIL_MODEL;
}

int cv_fh_counts(cv_builddb *db, int64_t rev_id, cv_fh_count_fn fn, void *ctx, cv_diag *d)
{
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_COUNTS, "i", rev_id);
    int rc = st ? 1 : -1;
    while (rc == 1 && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        char pattern[CV_PATTERN_MAX + 1], cls[16];
        cv_sqldb_text(st, 0, pattern, sizeof pattern);
        cv_sqldb_text(st, 1, cls, sizeof cls);
        cv_fh_count c = {.pattern = pattern, .cls = class_parse(cls),
                         .code = sqlite3_column_int(st, 2), .jobs = sqlite3_column_int64(st, 3)};
        if (fn(ctx, &c)) {
            sqlite3_reset(st);
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}

int cv_fh_range(cv_builddb *db, int64_t since_id, int64_t until_id, int64_t *ids,
                char (*names)[CV_REVISION_MAX + 1], int max, int *n, int *total, cv_diag *d)
{
    *n = *total = 0;
    int64_t count = 0;
    if (cv_sqldb_int(&db->db, d, &count, SQL_RANGE_COUNT, "ii", since_id, until_id) < 0)
        return -1;
    *total = (int)count;
    sqlite3_stmt *st = cv_sqldb_query(&db->db, d, SQL_RANGE, "iii", since_id, until_id,
                                      (int64_t)max);
    int rc = st ? 1 : -1, got = 0;
    while (rc == 1 && got < max && (rc = cv_sqldb_step(&db->db, st, d)) == 1) {
        ids[got] = sqlite3_column_int64(st, 0);
        cv_sqldb_text(st, 1, names[got], CV_REVISION_MAX + 1);
        got++;
    }
    if (rc == 1)
        sqlite3_reset(st);
    if (rc < 0)
        return -1;
    /* newest first from the query: turn into oldest first */
    for (int i = 0, j = got - 1; i < j; i++, j--) {
        int64_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
        char tmp[CV_REVISION_MAX + 1];
        memcpy(tmp, names[i], sizeof tmp);
        memcpy(names[i], names[j], sizeof tmp);
        memcpy(names[j], tmp, sizeof tmp);
    }
    *n = got;
    return 0;
}
