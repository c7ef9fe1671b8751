/* Signed action-cache entries on the remote cache (cache/ac_sign.c).
 *
 * An action entry maps a key to a result and cannot be checked by its
 * content, so whoever may PUT to the shared cache could point a key at any
 * artifact.  With a signing key (Ed25519, PEM: the farm's workers and
 * trusted CI), every action entry PUT to the remote carries a signature
 * over its key and its bytes; with a verify key (the matching public key:
 * every reader), an action entry read from the remote must carry a good
 * signature by it, or it is refused (CV9314) and counts as a miss.  The
 * signature binds the key, so a signed entry cannot be replayed under
 * another key.  A reader without a verify key strips signatures unchecked.
 * Blobs are not signed: they are named by their SHA-256 already. */
#ifndef CV_CACHE_AC_SIGN_H
#define CV_CACHE_AC_SIGN_H

#include <stddef.h>

#include "cache/cache.h"

typedef struct cv_ac_keys cv_ac_keys;   /* opaque */

/* Loads the PEM files named (either may be NULL or "": not used).  *out is
 * NULL when both are unused.  CV9315 on an unreadable or non-Ed25519 key. */
int cv_ac_keys_load(const char *sign_pem, const char *verify_pem, cv_ac_keys **out, cv_diag *d);
void cv_ac_keys_free(cv_ac_keys *k);

/* The bytes to PUT for the action entry `name`: signed when k has a signing
 * key (*out malloc'd, owned by the caller), else data itself (*out NULL). */
int cv_ac_seal(const cv_ac_keys *k, const cv_digest *name, const void *data, size_t len,
               void **out, size_t *out_len, cv_diag *d);
/* An action entry read from the remote (buf[0..*len)), in place: its
 * signature checked (when k verifies) and removed.  CV9314 when k verifies
 * and the entry is unsigned or its signature is not good. */
int cv_ac_unseal(const cv_ac_keys *k, const cv_digest *name, void *buf, size_t *len, cv_diag *d);

#endif
