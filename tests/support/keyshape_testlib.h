/* Example key shapes for the cache tests: an L1-like and an L2-like key
 * built with the cache's generic key builder.  The cache knows nothing of
 * models; the real L1 and L2 fields are defined once, by the compile path
 * (worker/build_keys.c).  These only give the tests keys with names. */
#ifndef CV_TEST_KEYSHAPE_UTIL_H
#define CV_TEST_KEYSHAPE_UTIL_H

#include <stdbool.h>
#include <stdio.h>

#include "cache/cache.h"

typedef struct tks_l1_fields {
    const char *frontend;
    const char *frontend_version;
    const char *options;
    cv_digest source;
    const cv_cache_named_digest *weights;
    int n_weights;
} tks_l1_fields;

typedef struct tks_l2_fields {
    cv_digest ir;
    const char *target_triple;
    const char *cpu_features;
    const char *precision;
    const char *opt_level;
    bool debug;
    const char *compiler_build_id;
    const char *llvm_version;
} tks_l2_fields;

static inline int tks_key_l1(const tks_l1_fields *f, cv_cache_key *out, cv_diag *d)
{
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-l1");
    if (kb) {
        cv_cache_keyb_str(kb, "frontend", f->frontend);
        cv_cache_keyb_str(kb, "frontend_version", f->frontend_version);
        cv_cache_keyb_str(kb, "options", f->options);
        cv_cache_keyb_digest(kb, "source", &f->source);
        for (int i = 0; i < f->n_weights; i++) {
            char name[300];
            snprintf(name, sizeof name, "weight:%s", f->weights[i].name ? f->weights[i].name : "");
            cv_cache_keyb_digest(kb, name, &f->weights[i].digest);
        }
    }
    return cv_cache_keyb_finish(kb, out, d);
}

static inline int tks_key_l2(const tks_l2_fields *f, cv_cache_key *out, cv_diag *d)
{
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-l2");
    if (kb) {
        cv_cache_keyb_digest(kb, "ir_digest", &f->ir);
        cv_cache_keyb_str(kb, "target_triple", f->target_triple);
        cv_cache_keyb_str(kb, "target_features", f->cpu_features);
        cv_cache_keyb_str(kb, "precision", f->precision);
        cv_cache_keyb_str(kb, "opt_level", f->opt_level);
        cv_cache_keyb_bool(kb, "debug", f->debug);
        cv_cache_keyb_str(kb, "compiler_build_id", f->compiler_build_id);
        cv_cache_keyb_str(kb, "llvm_version", f->llvm_version);
    }
    return cv_cache_keyb_finish(kb, out, d);
}

#endif
