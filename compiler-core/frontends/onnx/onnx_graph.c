/* The structure of an ONNX graph before any lowering: every value name and
 * who produces it (graph inputs, initializers, node outputs), a topological
 * order of the nodes, and the one report of every op that cannot be
 * imported.  Each check reports all of its findings, not only the first. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/frontends/onnx/onnx_internal.h"

const char *onnx_node_label(onnx_ctx *c, const Onnx__NodeProto *n, int index)
{
    if (n->name && n->name[0])
        return n->name;
    char buf[32];
    snprintf(buf, sizeof buf, "op#%d", index);
    return cv_arena_strdup(c->a, buf);
}

static int dup_name(onnx_ctx *c, const char *name, const char *what)
{
    onnx_val *old = onnx_val_get(c, name);
    const char *by = old && old->producer >= 0 ? "a node output" : "a graph input or initializer";
    return onnx_err(c, CV_E_ONNX_DUPLICATE_NAME, "%s '%s' is already defined as %s", what, name, by);
}

static int register_initializers(onnx_ctx *c, const Onnx__GraphProto *g)
{
    int rc = 0;
    if (g->n_sparse_initializer)
        rc = onnx_err(c, CV_E_ONNX_SPARSE_TENSOR, "the graph has %zu sparse initializers (not supported)",
                      g->n_sparse_initializer);
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        const char *name = t->name ? t->name : "";
        if (!name[0]) {
            rc = onnx_err(c, CV_E_ONNX_UNDEFINED_VALUE, "initializer #%zu has no name", i);
            continue;
        }
        if (onnx_val_get(c, name)) {
            rc = dup_name(c, name, "initializer");
            continue;
        }
        onnx_const *k = cv_arena_alloc(c->a, sizeof *k);
        onnx_val *v = onnx_val_new(c, name, -1);
        if (!k || !v || onnx_tensor_decode(t, c->a, c->base_dir, c->path, name, k, c->d) < 0) {
            if (v)
                v->poisoned = true;
            rc = -1;
            continue;
        }
        uintptr_t at = (uintptr_t)k->data, map = (uintptr_t)c->map;
        k->mapped = c->map && at >= map && at - map < c->map_len;
        if (!k->mapped && t->has_raw_data && k->data && k->data == (void *)t->raw_data.data)
            k->own = &((Onnx__TensorProto *)t)->raw_data.data;
        v->c = k;
        onnx_type_of_const(k, &v->type);
    }
    return rc;
}

/* Scalar arithmetic the import folds: a value needed at import time may
 * be computed from graph inputs through these (a size cast to float). */
static bool folds_through(const Onnx__NodeProto *n)
{
    static const char *const ops[] = {"Cast", "Add", "Sub", "Mul", "Div", "Neg", "Identity",
                                      "Unsqueeze", "Squeeze", "Concat", "Ceil", "Floor",
                                      "Relu", "Abs", NULL};
    for (int i = 0; ops[i] && onnx_domain_is_default(n->domain); i++)
        if (!strcmp(n->op_type, ops[i]))
            return true;
    return false;
}

/* An If giving an optional: whether it holds a value may differ between
 * the branches, which only a cond known at import time resolves. */
static bool if_gives_optional(const Onnx__NodeProto *n)
{
    if (strcmp(n->op_type, "If") || !onnx_domain_is_default(n->domain))
        return false;
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__GraphProto *g = n->attribute[a]->g;
        for (size_t k = 0; g && k < g->n_output; k++)
            if (g->output[k]->type &&
                g->output[k]->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
                return true;
    }
    return false;
}

/* Graph inputs that feed an operand CU-IR needs at import time, directly
 * or through folded arithmetic (nodes visited last to first, a few times:
 * producers usually precede their consumers). */
static void find_const_slots(onnx_ctx *c, const Onnx__GraphProto *g, onnx_map *out)
{
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        const onnx_op_entry *e = onnx_node_entry(n);
        for (size_t k = 0; e && k < n->n_input && k < 32; k++)
            if ((e->const_in >> k) & 1u && n->input[k][0])
                onnx_map_put(out, n->input[k], n->input[k]);
        if (if_gives_optional(n) && n->n_input && n->input[0][0])
            onnx_map_put(out, n->input[0], n->input[0]);
    }
    size_t before;
    for (int pass = 0; pass < 4 && out->count; pass++) {
        before = out->count;
        for (size_t i = g->n_node; i-- > 0;) {
            const Onnx__NodeProto *n = g->node[i];
            if (n->n_output != 1 || !onnx_map_get(out, n->output[0]) || !folds_through(n))
                continue;
            for (size_t k = 0; k < n->n_input; k++)
                if (n->input[k][0])
                    onnx_map_put(out, n->input[k], n->input[k]);
        }
        if (out->count == before)
            break;
    }
}

/* Asks the caller's bind_input for a shape-like graph input's value. */
static int bind_input(onnx_ctx *c, int index, onnx_val *v, const cv_type *declared)
{
    cv_tensor t = {0};
    if (c->opts->bind_input(c->opts->user, index, v->name, &t) < 0)
        return 1;
    int rc = 0;
    onnx_const *k = NULL;
    if (t.dtype != declared->dtype || t.rank != declared->shape.rank)
        rc = onnx_err(c, CV_E_ONNX_DECLARED_DTYPE, "the value bound to input '%s' does not match its type",
                      v->name);
    else if ((k = onnx_const_new(c, t.dtype, t.rank, t.dims)))
        memcpy(k->data, t.data, cv_tensor_nbytes(&t));
    cv_tensor_free(&t);
    if (rc < 0 || !k)
        return -1;
    v->c = k;
    onnx_type_of_const(k, &v->type);
    return 0;
}

static int register_inputs(onnx_ctx *c, const Onnx__GraphProto *g)
{
    int rc = 0;
    onnx_map wanted = {0};
    if (c->opts && c->opts->bind_input)
        find_const_slots(c, g, &wanted);
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        const char *name = vi->name ? vi->name : "";
        onnx_val *old = onnx_val_get(c, name);
        if (old && old->c && !old->graph_input)
            continue;   /* IR < 4 lists initializers as inputs: the value is constant */
        if (!name[0] || old) {
            rc = name[0] ? dup_name(c, name, "graph input")
                         : onnx_err(c, CV_E_ONNX_UNDEFINED_VALUE, "graph input #%zu has no name", i);
            continue;
        }
        onnx_val *v = onnx_val_new(c, name, -1);
        cv_type t;
        int listed = v && vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
                         ? onnx_bind_list_input(c, (int)i, v, vi->type) : 1;
        if (listed <= 0) {   /* a sequence or optional, bound to constants */
            rc |= listed;
            continue;
        }
        if (!v || onnx_type_from_proto(c, vi->type, name, &t) < 0) {
            rc = -1;
            if (v)
                v->poisoned = true;
            continue;
        }
        int bound = onnx_map_get(&wanted, name) ? bind_input(c, (int)i, v, &t) : 1;
        if (bound <= 0) {
            rc |= bound;
            continue;
        }
        const char *id = onnx_ident(c, name);
        v->v = id ? cv_func_add_input(c->f, id, &t) : NULL;
        v->type = t;
        v->graph_input = true;
        if (!v->v)
            rc = onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory adding input '%s'", name);
    }
    onnx_map_free(&wanted);
    return rc;
}

static int register_outputs(onnx_ctx *c, const Onnx__GraphProto *g)
{
    int rc = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        c->node = n;
        c->label = onnx_node_label(c, n, (int)i);
        for (size_t k = 0; k < n->n_output; k++) {
            const char *name = n->output[k];
            if (!name[0])
                continue;   /* an optional output left unused */
            if (onnx_val_get(c, name)) {
                rc = dup_name(c, name, "output");
                continue;
            }
            if (!onnx_val_new(c, name, (int)i))
                rc = onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
        }
    }
    c->node = NULL;
    return rc;
}

/* Kahn's algorithm over node -> node edges.  order[] receives the node
 * indices; inputs nobody produces and nodes on cycles are reported. */
static int topo_sort(onnx_ctx *c, const Onnx__GraphProto *g, int *order)
{
    size_t nn = g->n_node, ne = 0;
    for (size_t i = 0; i < nn; i++)
        ne += g->node[i]->n_input;
    int *indeg = calloc(nn + 1, sizeof *indeg);       /* owned */
    int *first = calloc(nn + 1, sizeof *first);       /* owned: CSR row starts */
    int *succ = calloc(ne + 1, sizeof *succ);         /* owned: CSR targets */
    int *fill = calloc(nn + 1, sizeof *fill);         /* owned */
    int rc = (indeg && first && succ && fill) ? 0 : onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    for (size_t pass = 0; rc == 0 && pass < 2; pass++) {
        for (size_t i = 0; i < nn; i++) {
            const Onnx__NodeProto *n = g->node[i];
            c->node = n;
            c->label = onnx_node_label(c, n, (int)i);
            for (size_t k = 0; k < n->n_input; k++) {
                if (!n->input[k][0])
                    continue;
                onnx_val *v = onnx_val_get(c, n->input[k]);
                if (!v && pass == 0)
                    onnx_err(c, CV_E_ONNX_UNDEFINED_VALUE, "input '%s' is not produced by any node, graph "
                             "input or initializer (missing initializer?)", n->input[k]);
                if (!v || v->producer < 0)
                    continue;
                if (pass == 0) {
                    first[v->producer + 1]++;
                    indeg[i]++;
                } else {
                    succ[first[v->producer] + fill[v->producer]++] = (int)i;
                }
            }
        }
        if (pass == 0)
            for (size_t i = 0; i < nn; i++)
                first[i + 1] += first[i];
    }
    c->node = NULL;
    /* Nodes already in order (as ONNX requires) keep it; Kahn's order only
     * replaces an order that is not topological. */
    bool sorted = true;
    for (size_t u = 0; rc == 0 && u < nn; u++)
        for (int e = first[u]; e < first[u + 1]; e++)
            sorted &= (size_t)succ[e] > u;
    int head = 0, tail = 0;
    for (size_t i = 0; rc == 0 && i < nn; i++)
        if (indeg[i] == 0)
            order[tail++] = (int)i;
    while (rc == 0 && head < tail) {
        int u = order[head++];
        for (int e = first[u]; e < first[u + 1]; e++)
            if (--indeg[succ[e]] == 0)
                order[tail++] = succ[e];
    }
    if (rc == 0 && (size_t)tail == nn && sorted)
        for (size_t i = 0; i < nn; i++)
            order[i] = (int)i;
    if (rc == 0 && (size_t)tail < nn) {
        cv_sb sb = CV_SB_INIT;
        int shown = 0;
        for (size_t i = 0; i < nn && shown < 8; i++)
            if (indeg[i] > 0) {
                cv_sb_printf(&sb, "%s'%s'", shown++ ? ", " : "",
                             onnx_node_label(c, g->node[i], (int)i));
            }
        rc = onnx_err(c, CV_E_ONNX_GRAPH_CYCLE, "%zu nodes form or depend on a cycle: %s%s",
                      nn - (size_t)tail, cv_sb_str(&sb), nn - (size_t)tail > 8 ? ", ..." : "");
        cv_sb_free(&sb);
    }
    free(indeg);
    free(first);
    free(succ);
    free(fill);
    return rc;
}

int64_t onnx_domain_opset(const onnx_ctx *c, const char *domain)
{
    bool dflt = !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
    for (size_t i = 0; i < c->model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = c->model->opset_import[i];
        const char *od = o->domain ? o->domain : "";
        bool odflt = !od[0] || strcmp(od, "ai.onnx") == 0;
        if ((dflt && odflt) || (!dflt && strcmp(od, domain) == 0))
            return o->has_version ? o->version : -1;
    }
    return -1;
}

/* Why node n cannot be imported, or NULL when it can. */
static const char *unsupported_why(const onnx_ctx *c, const Onnx__NodeProto *n)
{
    const char *dom = n->domain && n->domain[0] ? n->domain : "ai.onnx";
    bool train = strcmp(dom, ONNX_TRAINING_DOMAIN) == 0;
    if (strcmp(dom, "ai.onnx") != 0 && !train)
        return onnx_domain_opset(c, dom) < 0 ? "domain not imported" : "domain not supported";
    int64_t opset = train ? onnx_domain_opset(c, dom) : c->opset;
    if (opset < 0)
        return "domain not imported";
    const onnx_op_entry *e = onnx_node_entry(n);
    if (!e)
        return "op not supported";
    if (!onnx_op_available(e))
        return "CU-IR op missing";
    return opset < e->since ? "opset older than the supported version" : NULL;
}

/* One CV4301 diagnostic listing every node that cannot be imported. */
static int report_unsupported(onnx_ctx *c, const Onnx__GraphProto *g)
{
    int count = 0;
    onnx_map seen = {0};     /* op types already named */
    cv_sb kinds = CV_SB_INIT;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!unsupported_why(c, n))
            continue;
        count++;
        if (onnx_map_put(&seen, n->op_type, NULL) == 1)
            cv_sb_printf(&kinds, "%s%s", kinds.len ? ", " : "", n->op_type);
    }
    onnx_map_free(&seen);
    if (count == 0)
        return 0;
    cv_span sp = {.file = c->path};
    int id = cv_diag_add(c->d, CV_SEV_ERROR, CV_E_ONNX_UNSUPPORTED_OPS, sp, "Graph>Node",
                         "%d unsupported ONNX op%s: %s", count, count == 1 ? "" : "s",
                         cv_sb_str(&kinds));
    cv_sb_free(&kinds);
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        const char *why = unsupported_why(c, n);
        const char *dom = n->domain && n->domain[0] ? n->domain : "ai.onnx";
        if (why)
            cv_diag_note(c->d, id, "%s (domain %s, opset %" PRId64 ") at node '%s': %s",
                         n->op_type, dom, onnx_domain_opset(c, dom),
                         onnx_node_label(c, n, (int)i), why);
    }
    return -1;
}

int onnx_check_graph(onnx_ctx *c, const Onnx__GraphProto *g, int *order)
{
    int rc = register_initializers(c, g);
    rc |= register_inputs(c, g);
    rc |= register_outputs(c, g);
    if (rc < 0)
        return -1;
    if (topo_sort(c, g, order) < 0 || cv_diag_has_errors(c->d))
        return -1;
    return report_unsupported(c, g);
}
