/* Invariants as code (libgit2's GIT_ASSERT is the model).  Where a comment
 * would say "cannot happen", say CV_ASSERT(d, cond) instead:
 *  - in the sanitizer build that every test runs (and in the fuzzers) a
 *    broken invariant prints its place and aborts, so a test that reaches it
 *    fails loudly;
 *  - in a release build it records an internal error (CV9001, with the
 *    condition and its place) in d, which may be NULL, and returns -1 from
 *    the enclosing function (CV_ASSERT_RET returns a value of your choice),
 *    so a user gets a report instead of a crash or a wrong answer.
 * Build with -DCV_ASSERT_ABORTS=1 or =0 to choose either way by hand. */
#ifndef CV_INVARIANT_H
#define CV_INVARIANT_H

#include "common/diag.h"

#ifndef CV_ASSERT_ABORTS
#if defined(__SANITIZE_ADDRESS__)
#define CV_ASSERT_ABORTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CV_ASSERT_ABORTS 1
#endif
#endif
#endif
#ifndef CV_ASSERT_ABORTS
#define CV_ASSERT_ABORTS 0
#endif

/* Reports a broken invariant: prints it and aborts when abort_now, else
 * records CV_E_INTERNAL_ERROR in d (when not NULL).  Not called directly. */
void cv_invariant_failed(cv_diag *d, const char *cond, const char *file, int line, int abort_now);

#define CV_ASSERT_RET(d, cond, ret)                                  \
    do {                                                             \
        if (!(cond)) {                                               \
            cv_invariant_failed((d), #cond, __FILE__, __LINE__,      \
                                CV_ASSERT_ABORTS);                   \
            return ret;                                              \
        }                                                            \
    } while (0)

#define CV_ASSERT(d, cond) CV_ASSERT_RET(d, cond, -1)

#endif
