/* The canonical forms of a loaded module that the keys are made of:
 *
 *   text       CU-IR without locations, every dense param over 64 bytes
 *              written as weights("cuvil-dense:sha256", "<digest>") (the
 *              same identity as printing every number, at a fraction of the
 *              cost: an ONNX model holds millions) -> the IR digest
 *   structure  the same with every constant over CV_INLINE_CONST_MAX bytes
 *              (dense or from a weights file) written as
 *              weights("cuvil-weight", ""): what the code is made of, the
 *              values of the constants folded into code included
 *   weights    {param name: digest} for exactly those constants
 *
 * A retrain keeps the structure and changes the weights list; `cache
 * explain` counts the entries that changed.  Params are restored before
 * returning. */
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "compile/internal.h"

enum { BIG_DENSE = 64 };    /* bytes: larger dense params are printed by digest */
#define DENSE_REF "cuvil-dense:sha256"
#define WEIGHT_REF "cuvil-weight"

typedef struct saved {
    cv_param *p;
    cv_param_kind kind;
    const char *file, *key;
    char hex[CV_DIGEST_HEX + 1];
} saved;

typedef struct params {
    saved *v;                   /* owned; one per param with bytes */
    int n;
} params;

static int collect(cv_module *m, params *ps, json_t *weights)
{
    int n = 0;
    for (int f = 0; f < m->n_funcs; f++)
        n += m->funcs[f]->n_params;
    ps->v = calloc(n ? (size_t)n : 1, sizeof *ps->v);
    ps->n = 0;
    if (!ps->v)
        return -1;
    for (int f = 0; f < m->n_funcs; f++)
        for (int i = 0; i < m->funcs[f]->n_params; i++) {
            cv_param *p = m->funcs[f]->params[i];
            if (!p->data && p->nbytes)
                continue;   /* a weights param not loaded: its file's digest covers it */
            saved *s = &ps->v[ps->n++];
            *s = (saved){.p = p, .kind = p->kind, .file = p->file, .key = p->key};
            if (p->nbytes <= CV_INLINE_CONST_MAX)
                continue;
            cv_digest dg;
            cv_cache_sha256(p->data, p->nbytes, &dg);
            cv_compile_hex(&dg, s->hex);
            const char *name = p->value && p->value->name ? p->value->name : "?";
            if (json_object_set_new(weights, name, json_string(s->hex)) != 0)
                return -1;
        }
    return 0;
}

static void restore(params *ps)
{
    for (int i = 0; i < ps->n; i++) {
        ps->v[i].p->kind = ps->v[i].kind;
        ps->v[i].p->file = ps->v[i].file;
        ps->v[i].p->key = ps->v[i].key;
    }
}

/* The text form: dense params over BIG_DENSE by digest. */
static void as_text(params *ps)
{
    for (int i = 0; i < ps->n; i++) {
        saved *s = &ps->v[i];
        if (s->kind != CV_PARAM_DENSE || s->p->nbytes <= BIG_DENSE)
            continue;
        s->p->kind = CV_PARAM_WEIGHTS;
        s->p->file = DENSE_REF;
        s->p->key = s->hex;
    }
}

/* The structure form: the small constants inline, the others blank. */
static void as_structure(params *ps)
{
    for (int i = 0; i < ps->n; i++) {
        saved *s = &ps->v[i];
        bool small = s->p->nbytes <= CV_INLINE_CONST_MAX;
        s->p->kind = small ? CV_PARAM_DENSE : CV_PARAM_WEIGHTS;
        s->p->file = small ? s->file : WEIGHT_REF;
        s->p->key = small ? s->key : "";
    }
}

int cv_compile_describe(cv_module *m, const cv_compile_deps *x, cv_compile_l1_value *v, char **text,
                   json_t **weights)
{
    params ps = {0};
    char *loc = NULL, *structure = NULL;
    *text = NULL;
    *weights = json_object();
    int rc = *weights ? collect(m, &ps, *weights) : -1;
    if (rc == 0) {
        as_text(&ps);
        loc = cv_module_print(m, 0);
        *text = cv_module_print(m, CV_PRINT_NO_LOC);
        restore(&ps);
        as_structure(&ps);
        structure = cv_module_print(m, CV_PRINT_NO_LOC);
        restore(&ps);
        rc = loc && *text && structure ? 0 : -1;
    }
    if (rc == 0) {
        memset(v, 0, sizeof *v);
        cv_compile_ir_digest(*text, strlen(*text), x, &v->ir);
        cv_compile_ir_digest(loc, strlen(loc), x, &v->ir_loc);
        cv_compile_ir_digest(structure, strlen(structure), NULL, &v->structure);
        char *list = cv_json_canonical(*weights);
        cv_cache_sha256(list ? list : "", list ? strlen(list) : 0, &v->weights);
        rc = list ? 0 : -1;
        free(list);
        cv_compile_fingerprint(m, &v->fingerprint);
        snprintf(v->name, sizeof v->name, "%s", m->n_funcs ? m->funcs[0]->name : "");
    }
    free(ps.v);
    free(loc);
    free(structure);
    if (rc) {
        free(*text);
        *text = NULL;
        json_decref(*weights);
        *weights = NULL;
    }
    return rc;
}
