/* Weights: the model's weights file (safetensors, found relative to the
 * model file and never outside its directory) and the namespace p through
 * which a model names its tensors: p.conv1.weight is the tensor
 * "conv1.weight", p.fc[0].bias is "fc.0.bias" (PyTorch's state_dict
 * names).  Each tensor used becomes one weights(...) param of the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/strbuf.h"
#include "compiler-core/frontends/dsl/sema.h"

void dsl_weights_open(dsl_sema *s, const dsl_node *at, const char *weights_file)
{
    s->weights_name = weights_file;
    cv_diag tmp;   /* owned here: file errors are re-reported at the model */
    cv_diag_init(&tmp);
    char *path = NULL;   /* owned here */
    int rc = cv_fs_resolve_inside(s->base_dir, weights_file, &path, &tmp);
    if (rc == 0)
        rc = cv_safetensors_open(path, &s->st, &tmp);
    if (rc != 0) {
        const cv_diag_entry *e = tmp.n ? &tmp.v[0] : NULL;
        s->weights_root = dsl_error(s, CV_E_DSL_WEIGHTS_FILE, at, "weights file '%s' cannot be used: %s",
                                    weights_file, e ? e->msg : "unknown error");
        if (e && s->weights_root > 0)
            dsl_note(s, s->weights_root, "reported as CV%04d by the weights reader; the file is looked "
                     "up relative to the model's directory (%s)", e->code, s->base_dir);
        if (!s->weights_root)
            s->weights_root = -1;
        s->st = NULL;
    }
    free(path);
    cv_diag_free(&tmp);
}

void dsl_weights_close(dsl_sema *s)
{
    if (s->st)
        cv_safetensors_close(s->st);
    s->st = NULL;
    s->weights_name = NULL;
    s->weights_root = 0;
    s->n_uses = 0;
}

static int no_weights(dsl_sema *s, const dsl_node *at)
{
    if (!s->weights_root)
        s->weights_root = dsl_error(s, CV_E_DSL_WEIGHTS_FILE, at, "this model has no weights file; add "
                                    "weights=\"<file>.safetensors\" to @cvl.model");
    return s->weights_root > 0 ? s->weights_root : 0;
}

bool dsl_params_is_tensor(dsl_sema *s, const dsl_val *p)
{
    return s->st && p->s[0] && cv_safetensors_find(s->st, p->s) != NULL;
}

dsl_val *dsl_params_child(dsl_sema *s, const dsl_node *at, const dsl_val *p, const char *name)
{
    bool member = strcmp(name, "T") == 0 || strcmp(name, "shape") == 0 || strcmp(name, "ndim") == 0 ||
                  strcmp(name, "dtype") == 0;
    if (dsl_params_is_tensor(s, p) || (member && p->s[0])) {
        /* p.layer.weight.T: the prefix must be a tensor (reports it missing). */
        dsl_val *t = dsl_resolve(s, (dsl_val *)p);
        return t->kind == DSL_V_TENSOR ? dsl_tensor_member(s, at, t, name) : t;
    }
    if (s->weights_root)
        return dsl_v_error(s, s->weights_root > 0 ? s->weights_root : 0);
    if (!s->st)
        return dsl_v_error(s, no_weights(s, at));
    dsl_val *v = dsl_v_new(s, DSL_V_PARAMS);
    if (v->kind != DSL_V_PARAMS)
        return v;
    size_t n = strlen(p->s) + strlen(name) + 2;
    char *key = cv_arena_alloc(s->a, n);
    if (!key)
        return dsl_v_error(s, 0);
    snprintf(key, n, "%s%s%s", p->s, p->s[0] ? "." : "", name);
    v->s = key;
    v->at = at;
    return v;
}

/* A CU-IR value name for a weight key ("conv1.weight" stays as is). */
static const char *value_name(dsl_sema *s, const char *key)
{
    cv_sb sb = CV_SB_INIT;   /* owned here */
    cv_sb_puts(&sb, "p.");
    for (const char *c = key; *c; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '_' || *c == '.';
        cv_sb_putc(&sb, ok ? *c : '_');
    }
    size_t base = sb.len;
    for (int k = 2; cv_func_find_value(s->f, cv_sb_str(&sb)); k++) {
        sb.len = base;
        cv_sb_printf(&sb, "_%d", k);
    }
    const char *name = cv_arena_strdup(s->a, cv_sb_str(&sb));
    cv_sb_free(&sb);
    return name;
}

static int missing_weight(dsl_sema *s, const dsl_val *v)
{
    int n = cv_safetensors_count(s->st);
    const char **names = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *names);
    for (int i = 0; names && i < n; i++)
        names[i] = cv_safetensors_at(s->st, i)->name;
    const char *hint = names ? dsl_suggest(v->s, names, n) : NULL;
    int id = dsl_error(s, CV_E_DSL_WEIGHT_MISSING, v->at, "weight '%s' is not in %s%s%s%s", v->s, s->weights_name,
                       hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "");
    if (id > 0 && !hint && n > 0)
        dsl_note(s, id, "%s holds %d tensors, the first is '%s'", s->weights_name, n, names ? names[0] : "");
    return id;
}

dsl_val *dsl_resolve(dsl_sema *s, dsl_val *v)
{
    if (v->kind != DSL_V_PARAMS)
        return v;
    if (s->weights_root)
        return dsl_v_error(s, s->weights_root > 0 ? s->weights_root : 0);
    if (!s->st)
        return dsl_v_error(s, no_weights(s, v->at));
    if (!v->s[0])
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_TYPE_ERROR, v->at, "the weights namespace is not a tensor; "
                                        "name one of its tensors (p.layer.weight)"));
    for (int i = 0; i < s->n_uses; i++)
        if (strcmp(s->uses[i].key, v->s) == 0)
            return dsl_v_tensor(s, s->uses[i].v);
    const cv_st_tensor *t = cv_safetensors_find(s->st, v->s);
    if (!t)
        return dsl_v_error(s, missing_weight(s, v));
    if (t->dtype == CV_F64 || t->rank > CV_MAX_RANK)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_DTYPE_MISMATCH, v->at, "weight '%s' in %s is %s, which CU-IR does not "
                                        "support; store it as float32", v->s, s->weights_name,
                                        t->dtype == CV_F64 ? "float64" : "of too high a rank"));
    if (!s->f)
        return dsl_v_error(s, dsl_error(s, CV_E_DSL_UNSUPPORTED_STATEMENT, v->at, "weights can only be used inside a model"));
    cv_type ty = {.dtype = t->dtype, .shape.rank = t->rank};
    for (int i = 0; i < t->rank; i++)
        ty.shape.d[i].n = t->dims[i];
    cv_param *p = cv_func_add_weights(s->f, value_name(s, v->s), &ty, s->weights_name, v->s);
    p->span = (cv_span){s->m->path, v->at->line, v->at->col, v->at->end_line, v->at->end_col};
    if (s->n_uses == s->cap_uses) {
        int cap = s->cap_uses ? s->cap_uses * 2 : 16;
        dsl_weight_use *u = cv_arena_alloc_array(s->a, (size_t)cap, sizeof *u);
        if (u && s->n_uses)
            memcpy(u, s->uses, (size_t)s->n_uses * sizeof *u);
        if (u) {
            s->uses = u;
            s->cap_uses = cap;
        }
    }
    if (s->n_uses < s->cap_uses)
        s->uses[s->n_uses++] = (dsl_weight_use){v->s, p->value};
    return dsl_v_tensor(s, p->value);
}
