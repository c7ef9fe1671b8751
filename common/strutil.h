/* Small string algorithms shared by the components: hex digits, typo
 * suggestions. */
#ifndef CV_STRUTIL_H
#define CV_STRUTIL_H

#include <stddef.h>

/* The value of hex digit c (either case), or -1 when c is not one. */
int cv_hex_digit(int c);

/* Levenshtein distance between a and b, or limit+1 as soon as it is certain
 * to exceed limit (also for strings over 64 bytes, so callers never pay for
 * long inputs). */
int cv_edit_distance(const char *a, const char *b, int limit);

/* The first of the n candidates closest to word within limit edits; NULL
 * entries and word itself are skipped.  NULL when none is close enough. */
const char *cv_closest_match(const char *word, const char *const *cands, size_t n, int limit);

#endif
