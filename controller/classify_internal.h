/* Internal to the failure classifier: the pattern history kept in the
 * build DB (builddb_failures.c), read and written by classify.c. */
#ifndef CV_CONTROLLER_CLASSIFY_INTERNAL_H
#define CV_CONTROLLER_CLASSIFY_INTERNAL_H

#include "controller/controller.h"
#include "controller/internal.h"

/* Bumped when patterns are formed differently: revisions classified by
 * another version are classified again. */
#define CV_CLASSIFIER_VERSION 1

/* One pattern's count at one revision, as stored. */
typedef struct cv_fh_count {
    const char *pattern;
    cv_fail_class cls;
    int code;
    int64_t jobs;
} cv_fh_count;

/* Whether the revision's patterns are stored (by this classifier version). */
int cv_fh_is_stored(cv_builddb *db, int64_t rev_id, bool *stored, cv_diag *d);
/* Replaces what is stored for the revision. */
int cv_fh_store(cv_builddb *db, int64_t rev_id, const cv_fh_count *c, int n, int64_t now_ms,
                cv_diag *d);
/* Finished revisions up to upto_id (inclusive) not stored yet, oldest
 * first: up to max ids into out. */
int cv_fh_unstored(cv_builddb *db, int64_t upto_id, int64_t *out, int max, int *n, cv_diag *d);
/* The oldest stored revision with the pattern: 1 (id and name set), 0 none. */
int cv_fh_first_seen(cv_builddb *db, const char *pattern, int64_t *rev_id,
                     char name[CV_REVISION_MAX + 1], cv_diag *d);
/* Calls fn for each stored count of a revision. */
typedef int (*cv_fh_count_fn)(void *ctx, const cv_fh_count *c);
int cv_fh_counts(cv_builddb *db, int64_t rev_id, cv_fh_count_fn fn, void *ctx, cv_diag *d);
/* Revision ids and names from since_id to until_id, oldest first; at most
 * max (the newest ones), *total says how many there were. */
int cv_fh_range(cv_builddb *db, int64_t since_id, int64_t until_id, int64_t *ids,
                char (*names)[CV_REVISION_MAX + 1], int max, int *n, int *total, cv_diag *d);

#endif
