/* A broken invariant (common/invariant.h): abort in the test build, an
 * internal error in a release one. */
#include "common/invariant.h"

#include <stdio.h>
#include <stdlib.h>

void cv_invariant_failed(cv_diag *d, const char *cond, const char *file, int line, int abort_now)
{
    if (abort_now) {
        fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, cond);
        abort();
    }
    if (d)
        cv_diag_error(d, CV_E_INTERNAL_ERROR, (cv_span){.file = file, .line = line},
                      "internal error: invariant broken: %s", cond);
}
