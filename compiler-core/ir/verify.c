/* The CU-IR verifier: names (SSA), graph order, op schemas, and types and
 * shapes by running each op's shape function and comparing the result with
 * the declared type.  Every independent error is reported in one run; an
 * error that follows from an earlier one is suppressed when nothing useful
 * can be said (unknown operand types) and otherwise linked to its root with
 * cv_diag_set_root.  Linear in the size of the module. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/ir/verify.h"

enum { MAX_CYCLE_CHECKS = 64, MAX_SUGGESTIONS = 32, MAX_SUGGEST_LEN = 64 };

void cv_verify_value_path(const cv_vstate *S, const cv_value *v, char *buf, size_t size)
{
    snprintf(buf, size, "@%s>%%%s", S->f->name, v->name ? v->name : "?");
}

bool cv_verify_owns(const cv_vstate *S, const cv_value *v)
{
    return v->id >= 0 && v->id < S->f->n_values && S->f->values[v->id] == v;
}

cv_span cv_verify_value_span(const cv_vstate *S, const cv_value *v)
{
    if (v->span.line > 0)
        return v->span;
    if (v->kind == CV_VAL_RESULT && v->def)
        return cv_op_span(v->def);
    if (v->kind == CV_VAL_PARAM && v->param && v->param->span.line > 0)
        return v->param->span;
    cv_span s = {.file = S->m->path};
    if (S->f->span.line > 0)
        s = S->f->span;
    return s;
}

int cv_verify_error(cv_vstate *S, int code, cv_span sp, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int id = cv_diag_vadd(S->d, CV_SEV_ERROR, code, sp, path, fmt, ap);
    va_end(ap);
    return id > 0 ? id : -1;
}

/* Links a derived error to its root (when both are recorded). */
static void link_root(cv_vstate *S, int id, int root)
{
    if (id > 0 && root > 0)
        cv_diag_set_root(S->d, id, root);
}

/* ---- "did you mean" ------------------------------------------------------ */

/* Substituting a character for one that looks alike (O/0, l/1, a case
 * change) costs half an edit, so %O suggests %0 before %x. */
static int sub_cost(char a, char b)
{
    if (a == b)
        return 0;
    char la = (char)(a | 0x20), lb = (char)(b | 0x20);
    bool alpha = la >= 'a' && la <= 'z';
    if ((alpha && la == lb) || (la == 'o' && b == '0') || (a == '0' && lb == 'o') ||
        ((la == 'l' || la == 'i') && b == '1') || (a == '1' && (lb == 'l' || lb == 'i')))
        return 1;
    return 2;
}

/* Edit distance in half edits. */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > MAX_SUGGEST_LEN || lb > MAX_SUGGEST_LEN)
        return 1 << 20;
    int row[MAX_SUGGEST_LEN + 1];
    for (int j = 0; j <= lb; j++)
        row[j] = 2 * j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = 2 * i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + sub_cost(a[i - 1], b[j - 1]);
            if (up + 2 < best)
                best = up + 2;
            if (row[j - 1] + 2 < best)
                best = row[j - 1] + 2;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void suggest(cv_vstate *S, int id, const char *name)
{
    if (id <= 0 || S->n_undefined++ >= MAX_SUGGESTIONS)
        return;
    const cv_value *best = NULL;
    int best_d = 2 * ((int)strlen(name) / 3 + 1) + 1;  /* within a third of the length */
    for (int i = 0; i < S->f->n_values; i++) {
        const cv_value *v = S->f->values[i];
        if ((v->kind == CV_VAL_RESULT && !v->def) || !v->name)
            continue;
        int dist = edit_distance(name, v->name);
        if (dist < best_d) {
            best = v;
            best_d = dist;
        }
    }
    if (best) {
        cv_span sp = cv_verify_value_span(S, best);
        cv_diag_note(S->d, id, "did you mean %%%s (defined at line %d)?", best->name, sp.line);
    }
}

/* ---- types --------------------------------------------------------------- */

/* What is wrong with a declared type, as a code and message; 0 if sound. */
static int type_problem(const cv_type *t, char *msg, size_t size)
{
    if (!(CV_DT_BIT(t->dtype) & CV_DT_ALL) || t->dtype >= CV_DT_COUNT) {
        snprintf(msg, size, "element type '%s' is not a CU-IR type", cv_dtype_name(t->dtype));
        return CV_E_UNKNOWN_DTYPE;
    }
    if (t->shape.rank < 0 || t->shape.rank > CV_MAX_RANK) {
        snprintf(msg, size, "rank %d is more than CU-IR allows (%d)", t->shape.rank, CV_MAX_RANK);
        return CV_E_RANK_TOO_LARGE;
    }
    int64_t n = 1;
    bool overflow = false;
    for (int i = 0; i < t->shape.rank; i++) {
        const cv_dim *dim = &t->shape.d[i];
        if (dim->sym)
            continue;
        if (dim->n < 0) {
            snprintf(msg, size, "dimension %d is negative (%lld)", i, (long long)dim->n);
            return CV_E_INVALID_DIMENSION;
        }
        overflow |= !cv_mul_i64(n, dim->n, &n);
    }
    if (overflow) {
        snprintf(msg, size, "it has more elements than fit in 64 bits");
        return CV_E_DIMENSION_OVERFLOW;
    }
    return 0;
}

/* Reports a broken type of value v (or of output `output` of the signature
 * when v is NULL); returns the error id or 0. */
static int check_type(cv_vstate *S, const cv_value *v, const cv_type *t, const int *output)
{
    char msg[200], path[256], ts[160];
    int code = type_problem(t, msg, sizeof msg);
    if (!code)
        return 0;
    cv_type_format(t, ts, sizeof ts);
    if (!v) {
        snprintf(path, sizeof path, "@%s", S->f->name);
        cv_span sp = S->f->span;
        if (!sp.file)
            sp.file = S->m->path;
        return cv_verify_error(S, code, sp, path, "output %d of @%s is %s: %s", *output,
                               S->f->name, ts, msg);
    }
    const char *what = v->kind == CV_VAL_INPUT ? "input" : v->kind == CV_VAL_PARAM ? "param"
                                                                                   : "result";
    cv_verify_value_path(S, v, path, sizeof path);
    return cv_verify_error(S, code, cv_verify_value_span(S, v), path, "%s %%%s is %s: %s", what,
                           v->name ? v->name : "?", ts, msg);
}


/* ---- values and params --------------------------------------------------- */

/* A name used but never defined, reported once, at its first use. */
static int report_undefined(cv_vstate *S, const cv_value *v)
{
    if (!S->root[v->id]) {
        char path[256];
        cv_verify_value_path(S, v, path, sizeof path);
        int id = cv_verify_error(S, CV_E_UNDEFINED_NAME, cv_verify_value_span(S, v), path,
                                 "%%%s is not defined", v->name);
        suggest(S, id, v->name);
        S->root[v->id] = id;
    }
    return S->root[v->id];
}

/* A definition: unique name, valid declared type.  Paths and labels are
 * only formatted once there is something to report (this runs per value). */
static void check_value(cv_vstate *S, const cv_value *v)
{
    char path[256];
    cv_value *first = S->find_twins && v->name ? cv_func_find_value(S->f, v->name) : NULL;
    if (first && first != v) {
        cv_verify_value_path(S, v, path, sizeof path);
        int id = cv_verify_error(S, CV_E_REDEFINITION, cv_verify_value_span(S, v), path,
                                 "%%%s is defined twice", v->name);
        cv_span fs = cv_verify_value_span(S, first);
        if (id > 0)
            cv_diag_note(S->d, id, "first defined at line %d, column %d", fs.line, fs.col);
    }
    int bad = check_type(S, v, &v->type, NULL);
    if (bad) {
        S->root[v->id] = bad;
        return;
    }
    if (v->kind != CV_VAL_RESULT)
        S->eff[v->id] = &v->type;
}

static bool path_escapes(const char *file)
{
    if (file[0] == '/' || strchr(file, '\\'))
        return true;
    for (const char *p = file; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        if (*p == '/')
            p++;
    }
    return false;
}

/* What is wrong with the binding of param p, as a code and message (into
 * msg); 0 if sound.  Nothing is formatted for a sound param: this runs per
 * param. */
static int param_problem(const cv_param *p, cv_sb *msg)
{
    const cv_value *v = p->value;
    if (p->kind == CV_PARAM_WEIGHTS) {
        if (!p->file || !p->file[0] || !p->key || !p->key[0]) {
            cv_sb_printf(msg, "param %%%s: the weights %s name is empty", v->name,
                         (!p->file || !p->file[0]) ? "file" : "tensor");
            return CV_E_WEIGHTS_MISSING;
        }
        if (path_escapes(p->file)) {
            cv_sb_printf(msg, "param %%%s: weights file \"%s\" must be a relative path inside "
                         "the model's directory", v->name, p->file);
            return CV_E_PATH_ESCAPE;
        }
        if (!cv_shape_is_static(&v->type.shape)) {
            cv_sb_printf(msg, "param %%%s: weights need a static shape", v->name);
            return CV_E_WEIGHTS_MISMATCH;
        }
        return 0;
    }
    if (!cv_shape_is_static(&v->type.shape)) {
        cv_sb_printf(msg, "param %%%s: an inline constant needs a static shape", v->name);
        return CV_E_WEIGHTS_MISMATCH;
    }
    size_t elem = cv_dtype_size(v->type.dtype);
    int64_t want = cv_shape_numel(&v->type.shape);
    if (!p->data && p->nbytes) {
        cv_sb_printf(msg, "param %%%s has no data", v->name);
        return CV_E_INTERNAL_ERROR;
    }
    if (want < 0 || p->nbytes != (size_t)want * elem) {
        char ts[160];
        cv_type_format(&v->type, ts, sizeof ts);
        cv_sb_printf(msg, "param %%%s: dense(...) has %zu values but %s holds %lld", v->name,
                     elem ? p->nbytes / elem : 0, ts, (long long)want);
        return CV_E_WEIGHTS_MISMATCH;
    }
    return 0;
}

/* The binding of a param.  Its type stays sound whatever is wrong here, so
 * nothing downstream derives from these errors. */
static void check_param(cv_vstate *S, const cv_param *p)
{
    const cv_value *v = p->value;
    if (S->root[v->id])
        return;  /* its type is already wrong */
    cv_sb msg = CV_SB_INIT;
    int code = param_problem(p, &msg);
    if (code) {
        char path[256];
        cv_verify_value_path(S, v, path, sizeof path);
        cv_span sp = p->span.line > 0 ? p->span : cv_verify_value_span(S, v);
        cv_verify_error(S, code, sp, path, "%s", cv_sb_str(&msg));
    }
    cv_sb_free(&msg);
}

/* ---- graph order and cycles ---------------------------------------------- */

/* Does op `from` depend, through operands, on a result of op `target`? */
static bool depends_on(cv_vstate *S, const cv_op *from, const cv_op *target)
{
    cv_func *f = S->f;
    int *stack = malloc((size_t)f->n_ops * sizeof *stack);
    if (!stack)
        return false;
    int sp = 0, epoch = ++S->epoch;
    bool found = false;
    stack[sp++] = from->id;
    S->stamp[from->id] = epoch;
    while (sp && !found) {
        const cv_op *op = f->ops[stack[--sp]];
        for (int k = 0; k < op->n_operands && !found; k++) {
            const cv_value *v = op->operands[k];
            if (!v || v->kind != CV_VAL_RESULT || !v->def || v->def->func != f)
                continue;
            const cv_op *d = v->def;
            if (d == target)
                found = true;
            else if (S->stamp[d->id] != epoch) {
                S->stamp[d->id] = epoch;
                stack[sp++] = d->id;
            }
        }
    }
    free(stack);
    return found;
}

/* op uses v, whose defining op comes at or after op: a cycle or a mere
 * use before the definition. */
static int report_order(cv_vstate *S, const cv_op *op, const cv_value *v, const char *path)
{
    const cv_op *def = v->def;
    bool cycle = def == op;
    if (!cycle && S->cycle_checks++ < MAX_CYCLE_CHECKS)
        cycle = depends_on(S, def, op);
    cv_span dsp = cv_verify_value_span(S, v);
    if (cycle) {
        int id = cv_verify_error(S, CV_E_GRAPH_CYCLE, cv_op_span(op), path, "%s uses %%%s, which depends on "
                                 "this op's own result: the graph has a cycle", op->name, v->name);
        if (id > 0 && def != op)
            cv_diag_note(S->d, id, "%%%s is defined at line %d", v->name, dsp.line);
        return id;
    }
    int id = cv_verify_error(S, CV_E_USE_BEFORE_DEFINITION, cv_op_span(op), path, "%%%s is used before its definition",
                             v->name);
    if (id > 0)
        cv_diag_note(S->d, id, "%%%s is defined at line %d; move this op after it", v->name,
                     dsp.line);
    return id;
}

/* ---- ops ----------------------------------------------------------------- */

static void mark_results(cv_vstate *S, const cv_op *op, int root)
{
    for (int i = 0; i < op->n_results; i++)
        if (op->results[i] && !S->root[op->results[i]->id])
            S->root[op->results[i]->id] = root ? root : -1;
}

/* Compares each result's declared type with the inferred one. */
static void compare_results(cv_vstate *S, const cv_op *op, const cv_type *out, int in_root,
                            const char *path)
{
    for (int i = 0; i < op->n_results; i++) {
        const cv_value *r = op->results[i];
        bool same = cv_type_equal(&r->type, &out[i]);
        cv_type *copy = same ? NULL : cv_arena_alloc(&S->types, sizeof *copy);
        if (copy)
            *copy = out[i];
        S->eff[r->id] = same ? &r->type : copy;  /* NULL (unknown) when out of memory */
        if (S->root[r->id])
            continue;  /* declared type already reported */
        S->root[r->id] = in_root;
        if (!cv_type_known(&r->type) || same)
            continue;
        char ds[160], is[160];
        cv_type_format(&r->type, ds, sizeof ds);
        cv_type_format(&out[i], is, sizeof is);
        int code = r->type.dtype != out[i].dtype ? CV_E_DECLARED_DTYPE : CV_E_DECLARED_SHAPE;
        int id = cv_verify_error(S, code, cv_verify_value_span(S, r), path,
                                 "%%%s is declared %s but %s gives %s", r->name, ds, op->name, is);
        link_root(S, id, in_root);
        if (!in_root)
            S->root[r->id] = id;
    }
}

/* Gathers operand types; returns false when some are unknown.  *in_root is
 * the first error an operand derives from. */
static bool gather_operands(cv_vstate *S, const cv_op *op, cv_type *in, int *in_root,
                            const char *path)
{
    bool known = true;
    for (int k = 0; k < op->n_operands; k++) {
        const cv_value *v = op->operands[k];
        int r = 0;
        if (!v) {
            r = cv_verify_error(S, CV_E_UNDEFINED_NAME, cv_op_span(op), path, "operand %d of %s is not defined",
                                k, op->name);
        } else if (!cv_verify_owns(S, v)) {
            r = cv_verify_error(S, CV_E_INTERNAL_ERROR, cv_op_span(op), path, "operand %d of %s belongs to "
                                "another model", k, op->name);
        } else if (v->kind == CV_VAL_RESULT && !v->def) {
            r = report_undefined(S, v);
        } else if (v->kind == CV_VAL_RESULT && v->def->func == S->f && v->def->id >= op->id) {
            r = report_order(S, op, v, path);
        } else {
            r = S->root[v->id];
            if (r >= 0 && S->eff[v->id] && cv_type_known(S->eff[v->id])) {
                in[k] = *S->eff[v->id];
                if (r && !*in_root)
                    *in_root = r;
                continue;
            }
        }
        known = false;
        if (r && !*in_root)
            *in_root = r;
    }
    return known;
}

static void check_op(cv_vstate *S, const cv_op *op)
{
    char path[256];
    cv_op_path(op, path, sizeof path);
    cv_type in_small[16], out_small[16];
    cv_type *in = in_small, *out = out_small;
    if (op->n_operands > 16)
        in = calloc((size_t)op->n_operands, sizeof *in);
    if (op->n_results > 16)
        out = calloc((size_t)op->n_results, sizeof *out);
    if (!in || !out) {
        mark_results(S, op, cv_verify_error(S, CV_E_OUT_OF_MEMORY, cv_op_span(op), path, "out of memory"));
        goto done;
    }
    int in_root = 0;
    bool known = gather_operands(S, op, in, &in_root, path), missing = false;
    for (int k = 0; k < op->n_operands; k++)
        missing |= !op->operands[k];
    int before = S->d->n;
    /* The schema check would report a missing operand a second time. */
    if (!missing && cv_op_check_schema(op, op->n_results, path, S->d)) {
        mark_results(S, op, S->d->n > before ? before + 1 : -1);
        goto done;
    }
    if (!known) {
        mark_results(S, op, in_root ? in_root : -1);  /* nothing new to say */
        goto done;
    }
    /* Unknown (zero) until the shape function sets them: only those it sets
     * are read. */
    memset(out, 0, (size_t)op->n_results * sizeof *out);
    before = S->d->n;
    if (cv_infer_op(op, in, out, S->m, S->d)) {
        for (int id = before + 1; id <= S->d->n; id++)
            link_root(S, id, in_root);
        mark_results(S, op, in_root ? in_root : S->d->n > before ? before + 1 : -1);
        goto done;
    }
    compare_results(S, op, out, in_root, path);
done:
    if (in != in_small)
        free(in);
    if (out != out_small)
        free(out);
}

/* ---- the signature ------------------------------------------------------- */

static void check_returns(cv_vstate *S)
{
    cv_func *f = S->f;
    char path[256];
    snprintf(path, sizeof path, "@%s>return", f->name);
    cv_span sp = f->ret_span.line > 0 ? f->ret_span : f->span;
    if (!sp.file)
        sp.file = S->m->path;
    for (int i = 0; i < f->n_outputs; i++)
        check_type(S, NULL, &f->out_types[i], &i);
    if (f->n_returns != f->n_outputs)
        cv_verify_error(S, CV_E_RETURN_MISMATCH, sp, path, "model @%s returns %d value%s but its signature has %d "
                        "output%s", f->name, f->n_returns, f->n_returns == 1 ? "" : "s",
                        f->n_outputs, f->n_outputs == 1 ? "" : "s");
    for (int i = 0; i < f->n_returns && i < f->n_outputs; i++) {
        const cv_value *v = f->returns[i];
        if (!v || !cv_verify_owns(S, v)) {
            cv_verify_error(S, v ? CV_E_INTERNAL_ERROR : CV_E_UNDEFINED_NAME, sp, path, "returned value %d is %s", i,
                            v ? "from another model" : "not defined");
            continue;
        }
        if (v->kind == CV_VAL_RESULT && !v->def) {
            report_undefined(S, v);
            continue;
        }
        const cv_type *t = S->eff[v->id];
        if (S->root[v->id] < 0 || !t || !cv_type_known(t) || cv_type_equal(t, &f->out_types[i]))
            continue;
        char have[160], want[160];
        cv_type_format(t, have, sizeof have);
        cv_type_format(&f->out_types[i], want, sizeof want);
        int id = cv_verify_error(S, CV_E_RETURN_MISMATCH, sp, path, "output %d: %%%s is %s but the signature says "
                                 "%s", i, v->name, have, want);
        link_root(S, id, S->root[v->id]);
    }
}

static int verify_func(cv_module *m, cv_func *f, unsigned flags, cv_diag *d)
{
    cv_vstate S = {.m = m, .f = f, .d = d};
    /* Names are looked up for repeats only when the builder's index holds
     * fewer names than there are values. */
    S.find_twins = cv_func_name_count(f) != f->n_values;
    cv_arena_init(&S.types);
    S.eff = calloc((size_t)f->n_values + 1, sizeof *S.eff);
    S.root = calloc((size_t)f->n_values + 1, sizeof *S.root);
    S.stamp = calloc((size_t)f->n_ops + 1, sizeof *S.stamp);
    if (!S.eff || !S.root || !S.stamp) {
        free(S.eff);
        free(S.root);
        free(S.stamp);
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = m->path}, "out of memory verifying @%s", f->name);
        return -1;
    }
    /* Program order, so that diagnostics come out in line order. */
    for (int i = 0; i < f->n_inputs; i++)
        check_value(&S, f->inputs[i]);
    for (int i = 0; i < f->n_params; i++) {
        check_value(&S, f->params[i]->value);
        check_param(&S, f->params[i]);
    }
    for (int i = 0; i < f->n_ops; i++) {
        const cv_op *op = f->ops[i];
        for (int k = 0; k < op->n_results; k++)
            check_value(&S, op->results[k]);
        check_op(&S, op);
    }
    check_returns(&S);
    if (flags & CV_VERIFY_STRICT)
        cv_verify_strict_func(&S);
    free(S.eff);
    free(S.root);
    free(S.stamp);
    cv_arena_free(&S.types);
    return 0;
}

int cv_verify(cv_module *m, unsigned flags, cv_diag *d)
{
    int errors = d->n_errors;
    for (int i = 0; i < m->n_funcs; i++)
        verify_func(m, m->funcs[i], flags, d);
    if (flags & CV_VERIFY_STRICT)
        cv_verify_strict_module(m, d);
    return d->n_errors > errors ? -1 : 0;
}
