/* The git source's state, shared by gitsource.c (polling) and gittree.c
 * (reading trees and blobs). */
#ifndef CV_CONTROLLER_GITSOURCE_INTERNAL_H
#define CV_CONTROLLER_GITSOURCE_INTERNAL_H

#include "controller/controller.h"
#include "controller/gitlib.h"

struct cv_gitsource {
    git_repository *repo;       /* owned: the bare mirror */
    char *url;                  /* owned: normalized (local paths made absolute) */
    char *ref;                  /* owned: as configured */
    char *mirror;               /* owned: the mirror's path */
    cv_gitsource_opts opts;     /* defaults filled in; url and ref point at the copies */
    cv_gitsource_status st;
};

#endif
