/* Shared by the controller loop (ctl.c), the revision trees (trees.c) and
 * the farm (farm.c). */
#ifndef CV_CONTROLLER_CTL_INTERNAL_H
#define CV_CONTROLLER_CTL_INTERNAL_H

#include "controller/builddb_internal.h"

/* Writes every file of tree under dir, unless a complete copy is there.
 * Files over max_blob bytes are left out, each with a CV6055 warning in
 * skipped; d gets the farm's own trouble (the disk). */
int cv_ctl_tree_write(const cv_gitsource_tree *tree, const char *dir, size_t max_blob, cv_diag *skipped,
                      cv_diag *d);
/* Removes the trees/<commit>/ directories whose commit has no pending job,
 * except keep_commit (may be NULL).  Removal trouble is a warning. */
int cv_ctl_trees_gc(cv_builddb *db, const char *trees_dir, const char *keep_commit, int *removed,
                    cv_diag *d);

#endif
