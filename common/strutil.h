/* Small string algorithms shared by the components: hex digits, typo
 * suggestions, name and text checks. */
#ifndef CV_STRUTIL_H
#define CV_STRUTIL_H

#include <stdbool.h>
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

/* The candidate closest to word by edit distance, if close enough to be a
 * plausible typo (at most a third of the word's length, at least 1); NULL
 * otherwise.  candidates is NULL-terminated. */
const char *cv_str_suggest(const char *word, const char *const *candidates);

/* A DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
bool cv_str_is_dns_label(const char *s);
/* A git ref name as git check-ref-format --allow-onelevel accepts it
 * (without the @{ and multi-byte rules, which it refuses outright). */
bool cv_str_is_ref_name(const char *s);
/* Whether s holds only printable ASCII or UTF-8 without control characters. */
bool cv_str_is_clean_text(const char *s);
/* Whether the n bytes at s are well-formed UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF). */
bool cv_str_is_utf8(const char *s, size_t n);
/* The first line of the n bytes at s as clean text for a page or a
 * database row: well-formed UTF-8 kept, malformed bytes and control
 * characters as '?', cut at a character boundary to fit size - 1 bytes
 * (size >= 1); out is always terminated. */
void cv_str_clean_line(const char *s, size_t n, char *out, size_t size);
/* s for a message: bytes that are not printable UTF-8 as \xNN, at most
 * max bytes of s (then "..."); out holds at least 4 * max + 4 bytes. */
void cv_str_printable(const char *s, size_t max, char *out);

#endif
