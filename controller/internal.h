/* Helpers shared by the controller's files (not part of its public face). */
#ifndef CV_CONTROLLER_INTERNAL_H
#define CV_CONTROLLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/queue.h"

/* The candidate closest to word by edit distance, if close enough to be a
 * plausible typo (at most a third of the word's length, at least 1); NULL
 * otherwise.  candidates is NULL-terminated. */
const char *cv_ctl_suggest(const char *word, const char *const *candidates);

int64_t cv_ctl_now_ms(cv_queue_clock_fn fn, void *ctx);
/* Lowercase hex SHA-256 of data. */
void cv_ctl_sha256_hex(const void *data, size_t len, char out[65]);
/* A DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
bool cv_ctl_is_dns_label(const char *s);
/* A git ref name as git check-ref-format --allow-onelevel accepts it
 * (without the @{ and multi-byte rules, which it refuses outright). */
bool cv_ctl_is_ref_name(const char *s);
/* Whether s holds only printable ASCII or UTF-8 without control characters. */
bool cv_ctl_is_clean_text(const char *s);
/* Whether the n bytes at s are well-formed UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF). */
bool cv_ctl_is_utf8(const char *s, size_t n);
/* s for a message: bytes that are not printable UTF-8 as \xNN, at most
 * max bytes of s (then "..."); out holds at least 4 * max + 4 bytes. */
void cv_ctl_printable(const char *s, size_t max, char *out);

#endif
