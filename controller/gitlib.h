/* libgit2, loaded when the controller first opens its git source
 * (common/lazylib.h): with mbedTLS, libssh2, PCRE2 and http-parser it cost
 * every cuvil process about a millisecond of load time, and only the
 * controller reads git.  The table holds the functions the git source
 * calls. */
#ifndef CV_CONTROLLER_GITLIB_H
#define CV_CONTROLLER_GITLIB_H

#include <git2.h>

#include "common/diag.h"

typedef struct cv_git_fns {
    __typeof__(git_blob_free) *blob_free;
    __typeof__(git_blob_lookup) *blob_lookup;
    __typeof__(git_blob_rawcontent) *blob_rawcontent;
    __typeof__(git_blob_rawsize) *blob_rawsize;
    __typeof__(git_commit_author) *commit_author;
    __typeof__(git_commit_free) *commit_free;
    __typeof__(git_commit_id) *commit_id;
    __typeof__(git_commit_lookup) *commit_lookup;
    __typeof__(git_commit_summary) *commit_summary;
    __typeof__(git_commit_tree) *commit_tree;
    __typeof__(git_error_last) *error_last;
    __typeof__(git_fetch_options_init) *fetch_options_init;
    __typeof__(git_libgit2_init) *libgit2_init;
    __typeof__(git_libgit2_shutdown) *libgit2_shutdown;
    __typeof__(git_object_free) *object_free;
    __typeof__(git_object_id) *object_id;
    __typeof__(git_object_peel) *object_peel;
    __typeof__(git_odb_free) *odb_free;
    __typeof__(git_odb_read_header) *odb_read_header;
    __typeof__(git_oid_equal) *oid_equal;
    __typeof__(git_oid_fromstr) *oid_fromstr;
    __typeof__(git_oid_tostr) *oid_tostr;
    __typeof__(git_reference_name_to_id) *reference_name_to_id;
    __typeof__(git_remote_connect) *remote_connect;
    __typeof__(git_remote_create_options_init) *remote_create_options_init;
    __typeof__(git_remote_create_with_opts) *remote_create_with_opts;
    __typeof__(git_remote_disconnect) *remote_disconnect;
    __typeof__(git_remote_download) *remote_download;
    __typeof__(git_remote_free) *remote_free;
    __typeof__(git_remote_init_callbacks) *remote_init_callbacks;
    __typeof__(git_remote_ls) *remote_ls;
    __typeof__(git_remote_update_tips) *remote_update_tips;
    __typeof__(git_repository_free) *repository_free;
    __typeof__(git_repository_init) *repository_init;
    __typeof__(git_repository_odb) *repository_odb;
    __typeof__(git_repository_open_bare) *repository_open_bare;
    __typeof__(git_revparse_single) *revparse_single;
    __typeof__(git_tree_entry_filemode) *tree_entry_filemode;
    __typeof__(git_tree_entry_id) *tree_entry_id;
    __typeof__(git_tree_entry_name) *tree_entry_name;
    __typeof__(git_tree_free) *tree_free;
    __typeof__(git_tree_walk) *tree_walk;
} cv_git_fns;

/* Loads libgit2 (once per process); NULL with an error in d when it cannot
 * be loaded.  cv_git() is the table once that succeeded. */
const cv_git_fns *cv_git_load(cv_diag *d);
const cv_git_fns *cv_git(void);

#endif
