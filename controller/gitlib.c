/* Loading libgit2 on first use (see gitlib.h). */
#include "controller/gitlib.h"

#include <assert.h>

#include "common/lazylib.h"

static cv_git_fns git_fns;
static const char *const git_names[] = {
    "git_blob_free",
    "git_blob_lookup",
    "git_blob_rawcontent",
    "git_blob_rawsize",
    "git_commit_author",
    "git_commit_free",
    "git_commit_id",
    "git_commit_lookup",
    "git_commit_summary",
    "git_commit_tree",
    "git_error_last",
    "git_fetch_options_init",
    "git_libgit2_init",
    "git_libgit2_shutdown",
    "git_object_free",
    "git_object_id",
    "git_object_peel",
    "git_odb_free",
    "git_odb_read_header",
    "git_oid_equal",
    "git_oid_fromstr",
    "git_oid_tostr",
    "git_reference_name_to_id",
    "git_remote_connect",
    "git_remote_create_options_init",
    "git_remote_create_with_opts",
    "git_remote_disconnect",
    "git_remote_download",
    "git_remote_free",
    "git_remote_init_callbacks",
    "git_remote_ls",
    "git_remote_update_tips",
    "git_repository_free",
    "git_repository_init",
    "git_repository_odb",
    "git_repository_open_bare",
    "git_revparse_single",
    "git_tree_entry_filemode",
    "git_tree_entry_id",
    "git_tree_entry_name",
    "git_tree_free",
    "git_tree_walk",
};
CV_LAZYLIB_CHECK(git_fns, git_names);
static cv_lazylib git_lib = CV_LAZYLIB("libgit2.so.1.5", git_fns, git_names, NULL);
static void load_git(void) { cv_lazylib_load(&git_lib); }

const cv_git_fns *cv_git_load(cv_diag *d)
{
    return cv_lazylib_get(&git_lib, load_git, d) ? &git_fns : NULL;
}

const cv_git_fns *cv_git(void)
{
    assert(git_lib.ok); /* every path in starts at cv_gitsource_open */
    return &git_fns;
}
