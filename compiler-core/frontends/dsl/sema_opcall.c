/* cvl.<op>(...) calls.  The op table's schema decides everything: leading
 * tensor arguments are operands (None skips an optional one), the other
 * positional arguments fill attributes in schema order, keywords name
 * attributes.  Conveniences, documented in docs/dsl.md: PyTorch keyword
 * spellings (padding= for pad=...), an int for a window attribute
 * (kernel, stride, pad, dilation, output_padding) repeats per spatial axis,
 * a pooling op's stride defaults to its kernel, Python numbers in operand
 * positions become constants, and an op with a variable number of results
 * (split) returns one per entry of its required list attribute. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/dsl/sema.h"

enum { MAX_ATTRS = 32, MAX_OPERANDS = 256 };

static const char *const aliases[][2] = {
    {"padding", "pad"}, {"kernel_size", "kernel"}, {"dim", "axis"}, {"eps", "epsilon"},
    {"keepdim", "keepdims"}, {"negative_slope", "alpha"}, {"strides", "stride"},
    {"dilations", "dilation"}, {"pads", "pad"}, {"is_causal", "causal"},
};

static const char *const window_attrs[] = {"kernel", "stride", "pad", "dilation", "output_padding"};

typedef struct op_call {
    const cv_op_def *def;
    const dsl_node *call;
    int n_schema;
    dsl_val *attr_val[MAX_ATTRS];
    const dsl_node *attr_node[MAX_ATTRS];
    dsl_val *ops[MAX_OPERANDS];
    const dsl_node *op_node[MAX_OPERANDS];
    int n_ops, max_ops;
    int err;
} op_call;

static void fail(op_call *c, int id)
{
    if (!c->err)
        c->err = id ? id : -1;
}

static int schema_index(const op_call *c, const char *name)
{
    for (int i = 0; i < c->n_schema; i++)
        if (strcmp(c->def->attrs[i].name, name) == 0)
            return i;
    return -1;
}

static void add_operand(dsl_sema *s, op_call *c, dsl_val *v, const dsl_node *node)
{
    if (c->n_ops >= c->max_ops) {
        fail(c, dsl_error(s, CV_E_DSL_ARGUMENT_COUNT, node, "cvl.%s takes at most %d tensor operand%s", c->def->name,
                          c->max_ops, c->max_ops == 1 ? "" : "s"));
        return;
    }
    c->op_node[c->n_ops] = node;
    c->ops[c->n_ops++] = v;
}

static bool all_tensors(const dsl_val *v)
{
    if (v->kind != DSL_V_TUPLE && v->kind != DSL_V_LIST)
        return false;
    for (int i = 0; i < v->n; i++)
        if (v->items[i]->kind != DSL_V_TENSOR)
            return false;
    return v->n > 0;
}

static void positional(dsl_sema *s, op_call *c, dsl_val **args, int n)
{
    bool operands = true;
    int next_attr = 0;
    for (int i = 0; i < n && !c->err; i++) {
        dsl_val *v = args[i];
        const dsl_node *node = c->call->items.v[i];
        if (operands && v->kind == DSL_V_TENSOR) {
            add_operand(s, c, v, node);
        } else if (operands && c->def->max_operands < 0 && all_tensors(v)) {
            for (int k = 0; k < v->n; k++)
                add_operand(s, c, v->items[k], node);
        } else if (operands && v->kind == DSL_V_NONE && c->n_ops >= c->def->min_operands) {
            operands = false;  /* an absent optional operand ends the operands */
        } else if (v->kind == DSL_V_TENSOR) {
            fail(c, dsl_error(s, CV_E_DSL_TYPE_ERROR, node, "argument %d of cvl.%s is a tensor, but the op's tensor "
                              "operands come first; this position is an attribute", i, c->def->name));
        } else if (next_attr < c->n_schema) {
            operands = false;
            c->attr_node[next_attr] = node;
            c->attr_val[next_attr++] = v;
        } else if (dsl_v_is_number(v) && c->n_ops < c->max_ops) {
            add_operand(s, c, v, node);  /* a number operand: a constant tensor */
        } else {
            fail(c, dsl_error(s, CV_E_DSL_ARGUMENT_COUNT, node, "cvl.%s takes %d to %d tensor operands and %d attributes; "
                              "argument %d has nowhere to go", c->def->name, c->def->min_operands,
                              c->max_ops, c->n_schema, i));
        }
    }
}

static void keywords(dsl_sema *s, op_call *c, const dsl_node *const *kw_nodes, dsl_val **kw_vals,
                     int n_kw)
{
    for (int k = 0; k < n_kw; k++) {
        const dsl_node *kw = kw_nodes[k];
        if (!kw->name)
            continue;  /* **kwargs: already reported */
        int idx = schema_index(c, kw->name);
        for (size_t a = 0; idx < 0 && a < sizeof aliases / sizeof aliases[0]; a++)
            if (strcmp(kw->name, aliases[a][0]) == 0)
                idx = schema_index(c, aliases[a][1]);
        if (idx < 0) {
            const char *cands[MAX_ATTRS + sizeof aliases / sizeof aliases[0]];
            int n_cands = 0;
            for (int i = 0; i < c->n_schema; i++)
                cands[n_cands++] = c->def->attrs[i].name;
            for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
                if (schema_index(c, aliases[a][1]) >= 0)
                    cands[n_cands++] = aliases[a][0];
            const char *hint = dsl_suggest(kw->name, cands, n_cands);
            fail(c, dsl_error(s, CV_E_DSL_UNKNOWN_KEYWORD, kw, "cvl.%s has no attribute '%s'%s%s%s", c->def->name, kw->name,
                              hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : ""));
        } else if (c->attr_val[idx]) {
            fail(c, dsl_error(s, CV_E_DSL_DUPLICATE_ARGUMENT, kw, "attribute '%s' of cvl.%s is given twice",
                              c->def->attrs[idx].name, c->def->name));
        } else {
            c->attr_val[idx] = kw_vals[k];
            c->attr_node[idx] = kw;
        }
    }
}

/* ---- attribute values ----------------------------------------------------- */

static const char *kind_text(cv_attr_kind k)
{
    switch (k) {
    case CV_ATTR_INT: return "an int";
    case CV_ATTR_FLOAT: return "a number";
    case CV_ATTR_STRING: return "a str";
    case CV_ATTR_INTS: return "an int or a tuple of ints";
    case CV_ATTR_FLOATS: return "a number or a tuple of numbers";
    case CV_ATTR_DTYPE: return "a dtype (cvl.float32 or \"float32\")";
    default: return "a value";
    }
}

static bool is_int(const dsl_val *v) { return v->kind == DSL_V_INT || v->kind == DSL_V_BOOL; }

static bool is_window(const char *name)
{
    for (size_t i = 0; i < sizeof window_attrs / sizeof window_attrs[0]; i++)
        if (strcmp(name, window_attrs[i]) == 0)
            return true;
    return false;
}

/* How many entries an int given for an INTS attribute becomes. */
static int repeat_count(const op_call *c, const char *name)
{
    if (!is_window(name) || c->n_ops == 0 || c->ops[0]->kind != DSL_V_TENSOR)
        return 1;
    int spatial = c->ops[0]->t->type.shape.rank - 2;
    return spatial > 0 ? spatial : 1;
}

static bool list_values(dsl_sema *s, const dsl_val *v, bool ints, dsl_attr *out, int *err,
                        const dsl_node *node)
{
    int n = v->n;
    out->n = n;
    if (ints)
        out->ints = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *out->ints);
    else
        out->floats = cv_arena_alloc_array(s->a, (size_t)n + 1, sizeof *out->floats);
    for (int i = 0; i < n; i++) {
        const dsl_val *e = v->items[i];
        if (e->kind == DSL_V_DIM) {
            *err = dsl_error(s, CV_E_DSL_SYMBOLIC_DIM, node, "symbolic dimension %s cannot be an attribute value "
                             "(reshape takes 0 to copy a dimension and -1 to infer one)", e->s);
            return false;
        }
        if (ints ? !is_int(e) : !dsl_v_is_number(e))
            return false;
        if (ints)
            out->ints[i] = e->i;
        else
            out->floats[i] = dsl_v_num(e);
    }
    return true;
}

static int convert(dsl_sema *s, const op_call *c, int idx, dsl_attr *out)
{
    const cv_attr_schema *sc = &c->def->attrs[idx];
    const dsl_val *v = c->attr_val[idx];
    const dsl_node *node = c->attr_node[idx];
    /* The model language writes shapes as ints; symbolic extents come from
     * tensors' .shape (cvl.reshape of a DIMS attribute takes ints here). */
    cv_attr_kind kind = sc->kind == CV_ATTR_DIMS ? CV_ATTR_INTS : sc->kind;
    memset(out, 0, sizeof *out);
    out->name = sc->name;
    out->kind = kind;
    int err = 0;
    bool ok = false;
    bool seq = v->kind == DSL_V_TUPLE || v->kind == DSL_V_LIST;
    switch (kind) {
    case CV_ATTR_INT: ok = is_int(v); out->i = v->i; break;
    case CV_ATTR_FLOAT: ok = dsl_v_is_number(v); out->f = dsl_v_num(v); break;
    case CV_ATTR_STRING:
        ok = v->kind == DSL_V_STR && !memchr(v->s, 0, v->slen);
        out->str = ok ? cv_arena_strndup(s->a, v->s, v->slen) : NULL;
        break;
    case CV_ATTR_INTS: case CV_ATTR_FLOATS: {
        bool ints = kind == CV_ATTR_INTS;
        if (seq) {
            ok = list_values(s, v, ints, out, &err, node);
        } else if (ints ? is_int(v) : dsl_v_is_number(v)) {
            int n = ints ? repeat_count(c, sc->name) : 1;
            out->n = n;
            out->ints = cv_arena_alloc_array(s->a, (size_t)n, sizeof *out->ints);
            out->floats = cv_arena_alloc_array(s->a, (size_t)n, sizeof *out->floats);
            for (int i = 0; out->ints && out->floats && i < n; i++) {
                out->ints[i] = v->i;
                out->floats[i] = dsl_v_num(v);
            }
            ok = true;
        }
        break;
    }
    case CV_ATTR_DTYPE:
        if (v->kind == DSL_V_DTYPE) {
            out->dt = v->dt;
            ok = true;
        } else if (v->kind == DSL_V_STR) {
            out->dt = dsl_dtype_named(cv_arena_strndup(s->a, v->s, v->slen));
            if (out->dt == CV_DT_INVALID)
                return dsl_error(s, CV_E_DSL_UNKNOWN_DTYPE, node, "unknown dtype '%.*s' (float32 float16 bfloat16 int8 "
                                 "uint8 int32 int64 bool)", (int)(v->slen > 40 ? 40 : v->slen), v->s);
            ok = true;
        }
        break;
    default: break;
    }
    if (err)
        return err;
    if (ok)
        return 0;
    char d[96];
    dsl_v_describe(v, d, sizeof d);
    if (v->kind == DSL_V_DIM)
        return dsl_error(s, CV_E_DSL_SYMBOLIC_DIM, node, "attribute '%s' of cvl.%s needs a number, but %s is only "
                         "known at run time", sc->name, c->def->name, d);
    return dsl_error(s, CV_E_DSL_ATTRIBUTE_VALUE, node, "attribute '%s' of cvl.%s takes %s, got %s", sc->name, c->def->name,
                     kind_text(kind), d);
}

/* ---- the call ------------------------------------------------------------- */

static int result_count(dsl_sema *s, const op_call *c, const dsl_attr *attrs, int n_attrs)
{
    if (c->def->max_results >= 0 && c->def->min_results == c->def->max_results)
        return c->def->min_results;
    for (int i = 0; i < n_attrs; i++) {
        int idx = schema_index(c, attrs[i].name);
        if (idx >= 0 && c->def->attrs[idx].required && attrs[i].kind == CV_ATTR_INTS)
            return attrs[i].n;
    }
    return -dsl_error(s, CV_E_DSL_MISSING_ARGUMENT, c->call, "cvl.%s makes a variable number of results: give its list "
                      "attribute", c->def->name);
}

static void number_operands(dsl_sema *s, op_call *c)
{
    cv_dtype dt = CV_DT_INVALID;
    for (int i = 0; i < c->n_ops && dt == CV_DT_INVALID; i++)
        if (c->ops[i]->kind == DSL_V_TENSOR)
            dt = c->ops[i]->t->type.dtype;
    for (int i = 0; i < c->n_ops && !c->err; i++) {
        if (c->ops[i]->kind == DSL_V_TENSOR)
            continue;
        if (dt == CV_DT_INVALID)
            fail(c, dsl_error(s, CV_E_DSL_TYPE_ERROR, c->op_node[i], "cvl.%s needs at least one tensor operand",
                              c->def->name));
        else
            c->ops[i] = dsl_scalar_tensor(s, c->op_node[i], c->ops[i], dt);
        if (c->ops[i]->kind == DSL_V_ERROR)
            fail(c, c->ops[i]->root);
    }
}

dsl_val *dsl_call_op(dsl_sema *s, const dsl_node *call, const cv_op_def *def, dsl_val **args,
                     int n, const dsl_node *const *kw_nodes, dsl_val **kw_vals, int n_kw)
{
    op_call c = {.def = def, .call = call, .max_ops = def->max_operands < 0 ? MAX_OPERANDS : def->max_operands};
    while (def->attrs && def->attrs[c.n_schema].name && c.n_schema < MAX_ATTRS)
        c.n_schema++;
    for (int i = 0; i < n; i++)
        args[i] = dsl_resolve(s, args[i]);
    int root = dsl_v_first_error(args, n);
    if (!root)
        root = dsl_v_first_error(kw_vals, n_kw);
    if (root)
        return dsl_v_error(s, root > 0 ? root : 0);
    positional(s, &c, args, n);
    keywords(s, &c, kw_nodes, kw_vals, n_kw);
    if (!c.err && c.n_ops < def->min_operands)
        fail(&c, dsl_error(s, CV_E_DSL_ARGUMENT_COUNT, call, "cvl.%s takes at least %d tensor operand%s, got %d", def->name,
                           def->min_operands, def->min_operands == 1 ? "" : "s", c.n_ops));
    if (!c.err)
        number_operands(s, &c);
    dsl_attr attrs[MAX_ATTRS];
    int n_attrs = 0;
    for (int i = 0; i < c.n_schema && !c.err; i++) {
        if (!c.attr_val[i] || (c.attr_val[i]->kind == DSL_V_NONE && !def->attrs[i].required))
            continue;  /* None leaves an optional attribute at its default */
        int e = convert(s, &c, i, &attrs[n_attrs++]);
        if (e)
            fail(&c, e);
    }
    /* Pooling: stride defaults to the kernel, as in PyTorch. */
    int ks = schema_index(&c, "kernel"), st = schema_index(&c, "stride");
    if (!c.err && ks >= 0 && st >= 0 && c.attr_val[ks] && !c.attr_val[st] &&
        def->attrs[st].kind == def->attrs[ks].kind) {
        for (int i = 0; i < n_attrs; i++)
            if (strcmp(attrs[i].name, "kernel") == 0) {
                attrs[n_attrs] = attrs[i];
                attrs[n_attrs++].name = "stride";
                break;
            }
    }
    for (int i = 0; i < c.n_schema && !c.err; i++)
        if (def->attrs[i].required && !c.attr_val[i])
            fail(&c, dsl_error(s, CV_E_DSL_MISSING_ARGUMENT, call, "cvl.%s requires the attribute '%s' (%s)", def->name,
                               def->attrs[i].name, kind_text(def->attrs[i].kind)));
    if (c.err)
        return dsl_v_error(s, c.err > 0 ? c.err : 0);
    int n_results = result_count(s, &c, attrs, n_attrs);
    if (n_results < 0)
        return dsl_v_error(s, -n_results);
    return dsl_emit(s, call, def->name, c.ops, c.n_ops, attrs, n_attrs, n_results);
}
