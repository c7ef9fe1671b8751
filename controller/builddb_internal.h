/* The build DB's handle, shared by builddb.c (schema, revisions, status)
 * and builddb_jobs.c (jobs, results, artifacts). */
#ifndef CV_CONTROLLER_BUILDDB_INTERNAL_H
#define CV_CONTROLLER_BUILDDB_INTERNAL_H

#include "controller/controller.h"
#include "common/sqldb.h"
#include "controller/internal.h"

struct cv_builddb {
    cv_sqldb db;
};

/* Transactions: the build DB's own and the tests'. */
int  cv_builddb_begin(cv_builddb *db, cv_diag *d);     /* BEGIN IMMEDIATE */
int  cv_builddb_commit(cv_builddb *db, cv_diag *d);
void cv_builddb_rollback(cv_builddb *db);

/* Finishes the revision when no job is pending (force: now, as failed):
 * succeeded when every job is ok or a hit and the revision itself has no
 * error diagnostics. */
int builddb_finish_if_done(cv_builddb *db, int64_t rev_id, bool force, int64_t now_ms,
                           cv_diag *d);
/* Stores diagnostics about a revision (result_id 0) or a result (rev_id 0). */
int builddb_store_diags(cv_builddb *db, int64_t rev_id, int64_t result_id, const cv_diag *diags,
                        cv_diag *d);

#endif
