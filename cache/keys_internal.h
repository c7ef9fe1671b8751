/* Key fields and parsed manifests, shared by keys.c, explain.c and the
 * index (closest-manifest search). */
#ifndef CV_CACHE_KEYS_INTERNAL_H
#define CV_CACHE_KEYS_INTERNAL_H

#include <stdbool.h>

#include "cache/cache.h"

typedef enum cv_key_kind { CV_KEY_STR, CV_KEY_INT, CV_KEY_BOOL, CV_KEY_DIGEST } cv_key_kind;

typedef struct cv_key_field {
    const char *name;  /* borrowed */
    cv_key_kind kind;
    const char *text;  /* borrowed: the recorded value (digest: hex) */
    cv_digest dg;      /* CV_KEY_DIGEST only */
} cv_key_field;

typedef struct cv_manifest {
    const char *domain;   /* borrowed from root */
    cv_key_field *fields; /* owned; strings borrowed from root or numtext */
    char *numtext;        /* owned: texts of int and bool fields, 24 bytes each */
    int n;
    bool has_key;
    cv_digest key;
    void *root;           /* owned: the parsed json_t */
} cv_manifest;

const char *cv_cache_key_kind_name(cv_key_kind k);
int cv_cache_key_kind_parse(const char *s, cv_key_kind *out);
bool cv_cache_key_name_ok(const char *name);
int cv_cache_key_hash(const char *domain, const cv_key_field *fields, int n, cv_digest *out);
/* Compact JSON, malloc'd; NULL on OOM. */
char *cv_cache_key_manifest(const char *domain, const cv_key_field *fields, int n,
                            const cv_digest *key);

/* Parses and validates a key manifest (bounded: 16 MiB, 100000 fields). */
int cv_cache_manifest_parse(const char *json, cv_manifest *out, cv_diag *d);
void cv_cache_manifest_free(cv_manifest *m);
/* How far apart two manifests are: 1024 per differing field (added,
 * removed or changed) plus the differing tokens of changed list values;
 * -1 when the domains differ. */
int cv_cache_manifest_distance(const cv_manifest *a, const cv_manifest *b);

#endif
