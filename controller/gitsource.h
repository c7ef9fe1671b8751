/* The git source: a bare mirror of the models repository under the state
 * directory, polled with a cheap ls-remote and fetched only when the ref
 * moved (CV6050-CV6069); revisions ("ref@sha1:<commit>") and trees read
 * without a checkout. */
#ifndef CV_CONTROLLER_GITSOURCE_H
#define CV_CONTROLLER_GITSOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "queue/queue.h"

#define CV_GIT_HEX 40
#define CV_REVISION_MAX 512          /* "ref@sha1:<40 hex>" */
/* Limits on what a revision's tree may hold (docs/security.md).  Beyond
 * the entry count or the total bytes of its paths, the whole tree is
 * refused (CV6056: the revision fails); a file whose path is unusable is
 * left out of the tree and listed with cv_gitsource_tree_skipped. */
#define CV_GIT_TREE_MAX_ENTRIES 1000000           /* files and directories */
#define CV_GIT_TREE_MAX_PATH_BYTES ((size_t)256 << 20)
#define CV_GIT_PATH_MAX 4096                      /* buffers that hold a path */
#define CV_GIT_FILE_PATH_MAX 1024                 /* a usable path (CV6060) */
#define CV_GIT_NAME_MAX 255                       /* one path component (CV6060) */
#define CV_GIT_BLOB_MAX ((size_t)2 << 30)         /* one file (CV6055) */

typedef struct cv_gitsource cv_gitsource;   /* opaque */

typedef struct cv_gitsource_opts {
    const char *url;            /* https://, ssh://, git://, file:// URL, scp-like or local path */
    const char *ref;            /* branch, tag or full ref name; NULL = "main" */
    const char *state_dir;      /* the mirror lives in state_dir/git/ */
    int64_t backoff_base_ms;    /* delay after the first failure; 0 = 5000 */
    int64_t backoff_max_ms;     /* 0 = 300000 */
    cv_queue_clock_fn now_ms;   /* NULL = CLOCK_REALTIME */
    void *clock_ctx;            /* not owned */
    size_t max_tree_entries;    /* 0 = CV_GIT_TREE_MAX_ENTRIES (tests lower it) */
} cv_gitsource_opts;

typedef enum {
    CV_GIT_POLL_UNCHANGED = 0,  /* the ref did not move (nothing fetched) */
    CV_GIT_POLL_CHANGED = 1,    /* a new head (fetched, or first seen after opening) */
    CV_GIT_POLL_BACKOFF = 2,    /* skipped: waiting after a failure */
} cv_gitsource_poll_result;

typedef struct cv_gitsource_status {
    char revision[CV_REVISION_MAX + 1];   /* current head; "" before the first success */
    char commit[CV_GIT_HEX + 1];          /* "" likewise */
    int64_t last_poll_ms, last_success_ms, last_change_ms;
    int failures;                         /* consecutive; 0 after a success */
    int64_t next_attempt_ms;              /* 0 when not backing off */
    char last_error[512];                 /* the latest failure (ASCII); kept after recovery */
    uint64_t polls, fetches, errors;      /* totals since open */
} cv_gitsource_status;

/* Opens the mirror of url (making an empty bare repository the first time;
 * the first poll fills it).  Nothing is fetched here. */
int  cv_gitsource_open(const cv_gitsource_opts *o, cv_gitsource **out, cv_diag *d);
void cv_gitsource_close(cv_gitsource *g);
/* Lists the remote's refs; fetches only when the ref moved.  Returns a
 * cv_gitsource_poll_result, or -1 on failure (CV6051/CV6052 in d and in
 * the status; the next attempt waits base * 2^(failures-1), capped).
 * force ignores the back-off (a webhook said the ref moved). */
int  cv_gitsource_poll(cv_gitsource *g, bool force, cv_diag *d);
void cv_gitsource_status_get(const cv_gitsource *g, cv_gitsource_status *out);
const char *cv_gitsource_mirror(const cv_gitsource *g);   /* the bare repository's path */

/* "ref@sha1:<commit>".  format returns -1 if it would not fit. */
int cv_revision_format(const char *ref, const char *commit_hex, char out[CV_REVISION_MAX + 1]);
/* Splits a revision; CV6058 when malformed. */
int cv_revision_parse(const char *rev, char ref[CV_REVISION_MAX + 1], char commit[CV_GIT_HEX + 1],
                      cv_diag *d);

/* A commit's tree, read from the mirror without a checkout: every regular
 * file (symlinks and submodules are left out), sorted by path.  Files whose
 * path cannot be used are left out too and listed as skipped: a path that
 * is not UTF-8 (CV6059), too long (CV6060: a component over
 * CV_GIT_NAME_MAX bytes or a path over CV_GIT_FILE_PATH_MAX), or unsafe
 * (CV6061: an empty, "." or ".." component, a '/' in a name, the same path
 * twice, or a file that is also a directory).  A tree over
 * CV_GIT_TREE_MAX_ENTRIES entries or CV_GIT_TREE_MAX_PATH_BYTES of paths
 * is CV6056; an unreadable tree CV6054. */
typedef struct cv_gitsource_tree cv_gitsource_tree;   /* opaque; must not outlive its git source */

typedef struct cv_gitsource_tree_entry {
    const char *path;                 /* owned by the tree */
    char blob_id[CV_GIT_HEX + 1];     /* git's id of the contents */
} cv_gitsource_tree_entry;

/* Who made the tree's commit and why, as the dashboard shows it: the
 * subject line and the author's name, clean UTF-8 (cv_str_clean_line: a
 * repository may hold any bytes there), and the author time. */
#define CV_COMMIT_SUBJECT_MAX 200
#define CV_COMMIT_AUTHOR_MAX 100
typedef struct cv_commit_info {
    char subject[CV_COMMIT_SUBJECT_MAX + 1];
    char author[CV_COMMIT_AUTHOR_MAX + 1];
    int64_t time_ms;
} cv_commit_info;

/* commit: 40 hex digits, or NULL for the current head. */
int  cv_gitsource_tree_open(cv_gitsource *g, const char *commit, cv_gitsource_tree **out, cv_diag *d);
void cv_gitsource_tree_free(cv_gitsource_tree *t);
const char *cv_gitsource_tree_commit(const cv_gitsource_tree *t);
const cv_commit_info *cv_gitsource_tree_commit_info(const cv_gitsource_tree *t);
size_t cv_gitsource_tree_count(const cv_gitsource_tree *t);
const cv_gitsource_tree_entry *cv_gitsource_tree_at(const cv_gitsource_tree *t, size_t i);
const cv_gitsource_tree_entry *cv_gitsource_tree_find(const cv_gitsource_tree *t, const char *path);
/* The files left out, in walk order: the first CV_TREE_SKIPPED_KEPT of
 * them (paths as git has them: any bytes, maybe truncated to
 * CV_GIT_PATH_MAX), with the reason's code; total counts them all. */
#define CV_TREE_SKIPPED_KEPT 1000
size_t cv_gitsource_tree_skipped_count(const cv_gitsource_tree *t, size_t *total);
const cv_gitsource_tree_entry *cv_gitsource_tree_skipped_at(const cv_gitsource_tree *t, size_t i, int *code);
/* The blob's size from its object header, without inflating it. */
int  cv_gitsource_tree_size(const cv_gitsource_tree *t, const cv_gitsource_tree_entry *e, size_t *size, cv_diag *d);
/* The blob's bytes, malloc'd and NUL-terminated (caller frees); CV6055 if
 * larger than max_bytes, known from the object header before anything is
 * inflated. */
int  cv_gitsource_tree_read(const cv_gitsource_tree *t, const cv_gitsource_tree_entry *e, size_t max_bytes, char **data,
                  size_t *len, cv_diag *d);

#endif
