/* Bearer tokens with read-only or read-write rights (common/tokens.c),
 * shared by `cuvil cache serve --tokens FILE` and the farm's HTTP API
 * (`--http-token-file FILE`).  A file holds one "TOKEN rw|ro" per line;
 * '#' starts a comment.  A request names its token as "Bearer TOKEN", or as
 * the password of "Basic" credentials (browsers).  Comparisons take
 * constant time; tokens are wiped from memory when freed.  A bad file is
 * CV9113. */
#ifndef CV_COMMON_TOKENS_H
#define CV_COMMON_TOKENS_H

#include "common/diag.h"

typedef enum cv_token_right {
    CV_TOKEN_NONE = 0, CV_TOKEN_READ = 1, CV_TOKEN_WRITE = 2
} cv_token_right;

typedef struct cv_tokens cv_tokens;   /* opaque */

int  cv_tokens_load(const char *path, cv_tokens **out, cv_diag *d);
void cv_tokens_free(cv_tokens *t);
/* The right of an Authorization header's token (NULL header: none). */
cv_token_right cv_tokens_check(const cv_tokens *t, const char *authorization);

#endif
