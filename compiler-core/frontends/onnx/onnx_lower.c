/* Lowering a checked, sorted ONNX graph: each node through its registry
 * entry, then the graph outputs and the declared types (outputs and
 * value_info) compared with what the op table inferred. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static bool inputs_poisoned(onnx_ctx *c)
{
    for (int i = 0; i < onnx_n_in(c); i++) {
        onnx_val *v = onnx_in(c, i);
        if (v && v->poisoned)
            return true;
    }
    return false;
}

static void poison_outputs(onnx_ctx *c)
{
    for (size_t k = 0; k < c->node->n_output; k++) {
        onnx_val *v = c->node->output[k][0] ? onnx_val_get(c, c->node->output[k]) : NULL;
        if (v && !v->v && !v->c && !v->kind)
            v->poisoned = true;
    }
}

int onnx_lower_node(onnx_ctx *c, const Onnx__NodeProto *n, int index)
{
    c->node = n;
    c->node_index = index;
    c->label = onnx_node_label(c, n, index);
    if (inputs_poisoned(c)) {
        poison_outputs(c);   /* the root cause is already reported */
        return -1;
    }
    const onnx_op_entry *e = onnx_node_entry(n);
    c->entry = e;
    int before = c->d->n_errors, first = c->d->n;
    int rc = e ? e->lower(c) : -1;
    onnx_node_paths(c, first);
    if (rc < 0 && c->d->n_errors == before)
        onnx_err(c, CV_E_INTERNAL_ERROR, "lowering failed without a diagnostic");
    for (size_t k = 0; rc == 0 && k < n->n_output; k++) {
        onnx_val *v = n->output[k][0] ? onnx_val_get(c, n->output[k]) : NULL;
        if (v && !v->v && !v->c && !v->kind)
            rc = onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "output %zu ('%s') is not supported", k,
                          v->name);
    }
    if (rc < 0)
        poison_outputs(c);
    return rc;
}

/* Compares a declared ValueInfo type with the inferred one: dtypes must
 * agree, and so must every dimension both sides know as a number. */
static int check_declared(onnx_ctx *c, const Onnx__ValueInfoProto *vi, const onnx_val *v)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !v->type.dtype)
        return 0;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    cv_dtype dt = onnx_dtype(tt->elem_type);
    if (tt->has_elem_type && tt->elem_type != ONNX_DT_UNDEFINED && dt != v->type.dtype)
        return onnx_err(c, CV_E_ONNX_DECLARED_DTYPE, "'%s' is declared %s but computes %s", v->name,
                        onnx_dtype_name(tt->elem_type), cv_dtype_name(v->type.dtype));
    if (!tt->shape)
        return 0;
    char want[128], got[128];
    cv_type_format(&v->type, got, sizeof got);
    if ((int)tt->shape->n_dim != v->type.shape.rank)
        return onnx_err(c, CV_E_ONNX_DECLARED_SHAPE, "'%s' is declared with rank %zu but computes %s",
                        v->name, tt->shape->n_dim, got);
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
        cv_dim have = v->type.shape.d[i];
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            !have.sym && have.n != dim->dim_value) {
            snprintf(want, sizeof want, "%lld", (long long)dim->dim_value);
            return onnx_err(c, CV_E_ONNX_DECLARED_SHAPE, "'%s' is declared with dimension %zu = %s but "
                            "computes %s", v->name, i, want, got);
        }
    }
    return 0;
}

/* Diagnostics about a value name the node that produced it. */
static void at_producer(onnx_ctx *c, const Onnx__GraphProto *g, const onnx_val *v)
{
    c->node = v->producer >= 0 ? g->node[v->producer] : NULL;
    c->label = c->node ? onnx_node_label(c, c->node, v->producer) : NULL;
}

/* Output v's tensors (a sequence or optional: flattened) appended to rets. */
static int add_returns(onnx_ctx *c, onnx_val *v, cv_value **rets, int *n, int max)
{
    onnx_val *flat[ONNX_MAX_SEQ];
    int k = onnx_flatten(v, flat, ONNX_MAX_SEQ);
    if (k < 0 || *n + k > max)
        return onnx_err(c, CV_E_ONNX_ARITY, "graph output '%s' has too many tensors", v->name);
    for (int i = 0; i < k; i++) {
        if (!(rets[*n] = onnx_materialize(c, flat[i])))
            return -1;
        cv_func_add_output_type(c->f, &rets[(*n)++]->type);
    }
    return 0;
}

/* The returned value takes the graph output's name (an op's result has a
 * generated one, "48"): the artifact's manifest, header and `cuvil run`
 * name outputs by it.  Inputs and weights returned as they are, a value
 * returned twice and a name already taken keep theirs. */
static void keep_output_name(onnx_ctx *c, cv_value **rets, int i, const char *name)
{
    cv_value *v = rets[i];
    if (v->kind != CV_VAL_RESULT || !name[0] || strcmp(v->name, name) == 0)
        return;
    for (int k = 0; k < i; k++)
        if (rets[k] == v)
            return;
    const char *id = onnx_ident(c, name);
    if (id)
        cv_func_rename_value(c->f, v, id);
}

static int bind_outputs(onnx_ctx *c, const Onnx__GraphProto *g)
{
    int rc = 0, n = 0, max = (int)g->n_output + ONNX_MAX_SEQ;
    cv_value **rets = cv_arena_alloc_array(c->a, (size_t)max, sizeof *rets);
    if (!rets)
        return onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i]->name ? g->output[i]->name : "";
        onnx_val *v = onnx_val_get(c, name);
        if (!v) {
            rc = onnx_err(c, CV_E_ONNX_OUTPUT_MISSING, "graph output '%s' is never produced", name);
            continue;
        }
        int first = n;
        if (v->poisoned || add_returns(c, v, rets, &n, max) < 0) {
            rc = -1;
            continue;
        }
        if (n == first + 1)
            keep_output_name(c, rets, first, name);
        at_producer(c, g, v);
        if (check_declared(c, g->output[i], v) < 0)
            rc = -1;
        c->node = NULL;
    }
    if (rc == 0)
        cv_func_set_returns(c->f, rets, n);
    return rc;
}

int onnx_lower_graph(onnx_ctx *c, const Onnx__GraphProto *g, const int *order)
{
    int rc = 0;
    for (size_t i = 0; i < g->n_node; i++)
        rc |= onnx_lower_node(c, g->node[order[i]], order[i]);
    c->node = NULL;
    if (g->n_output == 0)
        rc = onnx_err(c, CV_E_ONNX_OUTPUT_MISSING, "the graph has no outputs");
    rc |= bind_outputs(c, g);
    for (size_t i = 0; i < g->n_value_info; i++) {
        const onnx_val *v = g->value_info[i]->name ? onnx_val_get(c, g->value_info[i]->name) : NULL;
        if (v && !v->poisoned) {
            at_producer(c, g, v);
            rc |= check_declared(c, g->value_info[i], v);
            c->node = NULL;
        }
    }
    return rc < 0 ? -1 : 0;
}
