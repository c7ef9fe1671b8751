/* Internal to compiler-core/ir: state shared by the verifier's passes
 * (verify.c: SSA, types and shapes; verify_strict.c: the --strict rules). */
#ifndef CV_IR_VERIFY_H
#define CV_IR_VERIFY_H

#include "compiler-core/ir/ir.h"

typedef struct cv_vstate {
    cv_module *m;
    cv_func *f;
    cv_diag *d;
    const cv_type **eff;  /* owned: per value id, the inferred (effective) type, NULL
                           * while unknown; points at the declared type when they agree,
                           * else into types */
    cv_arena types;     /* owned: inferred types that differ from the declared ones */
    bool find_twins;    /* some name may be defined twice (look each one up) */
    int *root;          /* owned: per value id, 0 = sound, > 0 = id of the error it
                         * derives from, -1 = derived from an error not recorded */
    int *stamp;         /* owned: per op id, for graph walks */
    int epoch;
    int cycle_checks;   /* back edges examined for cycles (bounded) */
    int n_undefined;    /* undefined names given a "did you mean" search */
} cv_vstate;

/* True when v is one of S->f's values (per-value arrays may be indexed by v->id). */
bool cv_verify_owns(const cv_vstate *S, const cv_value *v);
/* Where diagnostics about v point: its text span, else its op's, else the file. */
cv_span cv_verify_value_span(const cv_vstate *S, const cv_value *v);
/* Reports an error and returns its id (> 0), or -1 when the entry was dropped. */
int cv_verify_error(cv_vstate *S, int code, cv_span sp, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void cv_verify_value_path(const cv_vstate *S, const cv_value *v, char *buf, size_t size);

/* verify_strict.c */
void cv_verify_strict_func(cv_vstate *S);
void cv_verify_strict_module(cv_module *m, cv_diag *d);

#endif
