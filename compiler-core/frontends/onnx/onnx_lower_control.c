/* ONNX control flow without control flow in CU-IR: If, Loop and Scan
 * bodies are lowered inline.  If computes both branches and selects with
 * `where` (the branches are side-effect free), or only the taken one when
 * the condition is known; Loop and Scan are unrolled, which needs the trip
 * count (Loop: M and cond known at import time, the body's cond output
 * foldable; Scan: the static extent of the scanned axis).  A body sees the
 * enclosing graphs' values through the scope chain of onnx_val_get. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

enum { MAX_BODY_IO = 32, MAX_UNROLL = 1024, CONCAT_GROUP = 32 };

static const Onnx__GraphProto *graph_attr(onnx_ctx *c, const char *name)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    if (!a || !a->g)
        onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "graph attribute '%s' is required", name);
    return a ? a->g : NULL;
}

/* A value standing for a known tensor. */
static onnx_val *const_val(onnx_ctx *c, onnx_const *k)
{
    onnx_val *v = k ? cv_arena_alloc(c->a, sizeof *v) : NULL;
    if (v) {
        memset(v, 0, sizeof *v);
        v->name = "const";
        v->c = k;
        v->producer = -1;
        onnx_type_of_const(k, &v->type);
    }
    return v;
}

static onnx_val *scalar_val(onnx_ctx *c, cv_dtype dt, int64_t x)
{
    onnx_const *k = onnx_const_new(c, dt, 0, NULL);
    if (k)
        onnx_const_set_i64(k, 0, x);
    return const_val(c, k);
}

static onnx_val *value_val(onnx_ctx *c, cv_value *x)
{
    onnx_val *v = x ? cv_arena_alloc(c->a, sizeof *v) : NULL;
    if (v) {
        memset(v, 0, sizeof *v);
        v->name = x->name;
        v->v = x;
        v->producer = -1;
        v->type = x->type;
    }
    return v;
}

typedef struct saved_node {
    const Onnx__NodeProto *node;
    int node_index;
    const char *label;
    const onnx_op_entry *entry;
} saved_node;

/* Lowers g once, its inputs standing for ins[i]; outs[k] gets output k
 * (valid after return: values live in the arena). */
static int run_body(onnx_ctx *c, const Onnx__GraphProto *g, onnx_val *const *ins, int n_ins,
                    onnx_val **outs)
{
    if ((int)g->n_input != n_ins || g->n_output > MAX_BODY_IO)
        return onnx_err(c, CV_E_ONNX_ARITY, "the body graph takes %zu inputs and gives %zu outputs; "
                        "the node passes %d", g->n_input, g->n_output, n_ins);
    if (g->n_initializer || g->n_sparse_initializer)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "body graphs with initializers are not "
                        "supported");
    if (c->n_outer == ONNX_MAX_SCOPES)
        return onnx_err(c, CV_E_ONNX_NESTING, "bodies are nested more than %d deep",
                        ONNX_MAX_SCOPES);
    saved_node sn = {c->node, c->node_index, c->label, c->entry};
    onnx_map outer = c->vals;
    c->outer[c->n_outer++] = &outer;
    memset(&c->vals, 0, sizeof c->vals);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n_ins; i++) {
        onnx_val *v = onnx_val_new(c, g->input[i]->name ? g->input[i]->name : "", -1);
        if (!v || !ins[i]) {
            rc = v ? onnx_err(c, CV_E_ONNX_ARITY, "body input %d has no value", i)
                   : onnx_err(c, CV_E_ONNX_DUPLICATE_NAME, "body input %d is named twice", i);
            break;
        }
        v->v = ins[i]->v;
        v->c = ins[i]->c;
        v->type = ins[i]->type;
        v->kind = ins[i]->kind;
        v->elems = ins[i]->elems;
        v->n_elems = ins[i]->n_elems;
    }
    for (size_t k = 0; rc == 0 && k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        const onnx_op_entry *e = onnx_node_entry(n);
        if (!e || !onnx_op_available(e)) {
            c->node = sn.node;
            c->label = sn.label;
            rc = onnx_err(c, CV_E_ONNX_UNSUPPORTED_OPS, "the body uses the unsupported ONNX op %s%s%s",
                          n->domain && n->domain[0] ? n->domain : "",
                          n->domain && n->domain[0] ? "." : "", n->op_type);
            break;
        }
        for (size_t o = 0; rc == 0 && o < n->n_output; o++)
            if (n->output[o][0] && !onnx_val_new(c, n->output[o], (int)k))
                rc = onnx_err(c, CV_E_ONNX_DUPLICATE_NAME, "body value '%s' is defined twice",
                              n->output[o]);
        if (rc == 0)
            rc = onnx_lower_node(c, n, (int)k);
    }
    c->node = sn.node;
    c->node_index = sn.node_index;
    c->label = sn.label;
    c->entry = sn.entry;
    for (size_t k = 0; rc == 0 && k < g->n_output; k++) {
        onnx_val *v = onnx_val_get(c, g->output[k]->name ? g->output[k]->name : "");
        if (!v || v->poisoned || (!v->v && !v->c && !v->kind))
            rc = onnx_err(c, CV_E_ONNX_OUTPUT_MISSING, "body output '%s' is not produced",
                          g->output[k]->name);
        outs[k] = v;
    }
    onnx_map_free(&c->vals);
    c->vals = outer;
    c->n_outer--;
    return rc;
}

/* Binds node output i to what v stands for. */
static int bind_val(onnx_ctx *c, int i, onnx_val *v)
{
    return onnx_bind_val(c, i, v);
}

/* The vals stacked along a new axis 0 (concat in groups: ops take at most
 * a few dozen operands). */
static cv_value *stack(onnx_ctx *c, onnx_val **vals, int n)
{
    cv_value *parts[MAX_UNROLL];
    int64_t zero = 0;
    for (int i = 0; i < n; i++) {
        cv_value *x = onnx_materialize(c, vals[i]);
        if (!x || !(parts[i] = onnx_op_ints(c, "unsqueeze", x, "axes", &zero, 1)))
            return NULL;
    }
    while (n > 1) {
        int m = 0;
        for (int at = 0; at < n; at += CONCAT_GROUP) {
            int k = n - at < CONCAT_GROUP ? n - at : CONCAT_GROUP;
            cv_op *o = k > 1 ? onnx_op(c, "concat", &parts[at], k) : NULL;
            if (o)
                cv_op_set_int(o, "axis", 0);
            parts[m++] = k > 1 ? onnx_finish(c, o) : parts[at];
            if (!parts[m - 1])
                return NULL;
        }
        n = m;
    }
    return parts[0];
}

/* ---- If ---------------------------------------------------------------------- */

/* where(cond, a, b), element by element for sequences and optionals of
 * the same structure (their lengths and presence cannot depend on cond). */
static onnx_val *select_val(onnx_ctx *c, cv_value *cond, onnx_val *a, onnx_val *b, size_t k)
{
    if (a->kind != b->kind || a->n_elems != b->n_elems) {
        onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "output %zu of the branches differs in length or "
                 "presence, so it depends on cond at run time", k);
        return NULL;
    }
    if (a->kind == ONNX_VAL_TENSOR) {
        if (!cv_type_equal(&a->type, &b->type)) {
            onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "output %zu of the branches differs in type, so "
                     "it depends on cond at run time", k);
            return NULL;
        }
        return value_val(c, onnx_where(c, cond, onnx_materialize(c, a), onnx_materialize(c, b)));
    }
    onnx_val *e[ONNX_MAX_SEQ];
    for (int i = 0; i < a->n_elems; i++)
        if (!(e[i] = select_val(c, cond, a->elems[i], b->elems[i], k)))
            return NULL;
    return onnx_val_list(c, a->kind, e, a->n_elems);
}

static int lower_if(onnx_ctx *c)
{
    onnx_val *cond = onnx_in(c, 0);
    const Onnx__GraphProto *tg = graph_attr(c, "then_branch"), *eg = graph_attr(c, "else_branch");
    if (!cond || !tg || !eg)
        return cond ? -1 : onnx_err(c, CV_E_ONNX_ARITY, "input 0 (cond) is required");
    if (cond->type.dtype != CV_BOOL || cv_shape_numel(&cond->type.shape) != 1)
        return onnx_err(c, CV_E_ONNX_DECLARED_DTYPE, "cond must be one bool");
    onnx_val *t[MAX_BODY_IO], *e[MAX_BODY_IO];
    if (cond->c) {
        const Onnx__GraphProto *g = onnx_const_i64(cond->c, 0) ? tg : eg;
        if (run_body(c, g, NULL, 0, t) < 0)
            return -1;
        int rc = 0;
        for (size_t k = 0; k < g->n_output; k++)
            rc |= bind_val(c, (int)k, t[k]);
        return rc;
    }
    if (tg->n_output != eg->n_output || run_body(c, tg, NULL, 0, t) < 0 ||
        run_body(c, eg, NULL, 0, e) < 0)
        return tg->n_output != eg->n_output
                   ? onnx_err(c, CV_E_ONNX_ARITY, "the branches give different output counts") : -1;
    cv_value *cv = onnx_materialize(c, cond);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < tg->n_output; k++)
        rc = onnx_bind_val(c, (int)k, cv ? select_val(c, cv, t[k], e[k], k) : NULL);
    return rc;
}

/* ---- Loop -------------------------------------------------------------------- */

/* Scan outputs of every iteration, then the stacked results bound from
 * node output `first` on. */
typedef struct scans {
    onnx_val **v;           /* [iteration * n + j], arena */
    int n, iters;
} scans;

static int bind_scans(onnx_ctx *c, const scans *s, int first)
{
    if (s->n && !s->iters)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "scan outputs of zero iterations (empty "
                        "tensors) are not supported");
    onnx_val *col[MAX_UNROLL];
    int rc = 0;
    for (int j = 0; rc == 0 && j < s->n; j++) {
        for (int t = 0; t < s->iters; t++)
            col[t] = s->v[t * s->n + j];
        rc = onnx_bind_value(c, first + j, stack(c, col, s->iters));
    }
    return rc;
}

static int lower_loop(onnx_ctx *c)
{
    const Onnx__GraphProto *body = graph_attr(c, "body");
    int n_in = onnx_n_in(c), n_carried = n_in - 2;
    if (!body || n_in < 2 || n_carried + 2 > MAX_BODY_IO)
        return body ? onnx_err(c, CV_E_ONNX_ARITY, "Loop takes M, cond and the loop-carried values")
                    : -1;
    int n_scan = (int)body->n_output - 1 - n_carried;
    if (n_scan < 0)
        return onnx_err(c, CV_E_ONNX_ARITY, "the body gives fewer outputs than cond and the "
                        "loop-carried values");
    const onnx_const *mk = onnx_in(c, 0) ? onnx_in_const(c, 0, "M") : NULL;
    const onnx_const *ck = onnx_in(c, 1) ? onnx_in_const(c, 1, "cond") : NULL;
    if ((onnx_in(c, 0) && !mk) || (onnx_in(c, 1) && !ck))
        return -1;
    int64_t m = mk ? onnx_const_i64(mk, 0) : MAX_UNROLL + 1;
    bool go = ck ? onnx_const_i64(ck, 0) != 0 : true;
    onnx_val *ins[MAX_BODY_IO], *outs[MAX_BODY_IO], *carried[MAX_BODY_IO];
    for (int i = 0; i < n_carried; i++)
        if (!(carried[i] = onnx_in(c, 2 + i)))
            return onnx_err(c, CV_E_ONNX_ARITY, "loop-carried input %d is required", i);
    scans s = {.n = n_scan};
    s.v = cv_arena_alloc_array(c->a, (size_t)(MAX_UNROLL * (n_scan ? n_scan : 1)), sizeof *s.v);
    if (!s.v)
        return onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    for (int64_t t = 0; go && t < m; t++) {
        if (t == MAX_UNROLL)
            return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "loops of more than %d iterations are "
                            "not unrolled", MAX_UNROLL);
        ins[0] = scalar_val(c, CV_I64, t);
        ins[1] = scalar_val(c, CV_BOOL, 1);
        memcpy(&ins[2], carried, sizeof carried[0] * (size_t)n_carried);
        if (!ins[0] || !ins[1] || run_body(c, body, ins, n_in, outs) < 0)
            return -1;
        if (!outs[0]->c || outs[0]->c->numel != 1)
            return onnx_err(c, CV_E_ONNX_DATA_DEPENDENT_SHAPE, "the loop condition is computed at run "
                            "time; unrolling needs it at import time");
        go = onnx_const_i64(outs[0]->c, 0) != 0;
        memcpy(carried, &outs[1], sizeof carried[0] * (size_t)n_carried);
        for (int j = 0; j < n_scan; j++)
            s.v[s.iters * n_scan + j] = outs[1 + n_carried + j];
        s.iters++;
    }
    int rc = 0;
    for (int i = 0; i < n_carried; i++)
        rc |= bind_val(c, i, carried[i]);
    return rc | bind_scans(c, &s, n_carried);
}

/* ---- SequenceMap ------------------------------------------------------------- */

/* The body runs once per element of the first input; further inputs are
 * sequences of the same length (their element i goes in) or tensors
 * (passed every time).  Output k collects iteration results as a sequence. */
static int lower_seq_map(onnx_ctx *c)
{
    const Onnx__GraphProto *body = graph_attr(c, "body");
    int n_in = onnx_n_in(c), n_out = body ? (int)body->n_output : 0;
    onnx_val *x[MAX_BODY_IO], *ins[MAX_BODY_IO], *outs[MAX_BODY_IO];
    if (!body || n_in < 1 || n_in > MAX_BODY_IO || n_out > MAX_BODY_IO)
        return body ? onnx_err(c, CV_E_ONNX_ARITY, "SequenceMap takes 1..%d inputs", MAX_BODY_IO)
                    : -1;
    for (int i = 0; i < n_in; i++)
        if (!(x[i] = onnx_in(c, i)) || (i == 0 && x[i]->kind != ONNX_VAL_SEQ) ||
            x[i]->kind == ONNX_VAL_OPT ||
            (x[i]->kind == ONNX_VAL_SEQ && x[i]->n_elems != x[0]->n_elems))
            return onnx_err(c, CV_E_ONNX_ARITY, "input %d must be a sequence as long as input 0, "
                            "or a tensor", i);
    int len = x[0]->n_elems;
    onnx_val **col = cv_arena_alloc_array(c->a, (size_t)(n_out * len + 1), sizeof *col);
    if (!col)
        return onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    for (int t = 0; t < len; t++) {
        for (int i = 0; i < n_in; i++)
            ins[i] = x[i]->kind == ONNX_VAL_SEQ ? x[i]->elems[t] : x[i];
        if (run_body(c, body, ins, n_in, outs) < 0)
            return -1;
        for (int k = 0; k < n_out; k++)
            col[k * len + t] = outs[k];
    }
    int rc = 0;
    for (int k = 0; k < n_out; k++)
        rc |= onnx_bind_val(c, k, onnx_val_list(c, ONNX_VAL_SEQ, col + k * len, len));
    return rc;
}

/* ---- Scan -------------------------------------------------------------------- */

/* Every axis/direction attribute must be absent or all zero. */
static int scan_defaults_only(onnx_ctx *c)
{
    static const char *const attrs[] = {"scan_input_axes", "scan_input_directions",
                                        "scan_output_axes", "scan_output_directions", "directions"};
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
        int64_t v[MAX_BODY_IO];
        int n = onnx_attr_ints(c, attrs[a], v, MAX_BODY_IO);
        if (n == -2)
            return -1;
        for (int i = 0; i < n; i++)
            if (v[i])
                return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "'%s' other than 0 is not supported",
                                attrs[a]);
    }
    return 0;
}

/* x[t] along axis 0, without the axis. */
static onnx_val *scan_slice(onnx_ctx *c, cv_value *x, int64_t t)
{
    int64_t zero = 0;
    cv_value *s = onnx_slice1(c, x, 0, t, t + 1);
    return value_val(c, s ? onnx_op_ints(c, "squeeze", s, "axes", &zero, 1) : NULL);
}

static int lower_scan(onnx_ctx *c)
{
    const Onnx__GraphProto *body = graph_attr(c, "body");
    int64_t n_scan_in;
    bool batched = c->opset < 9;   /* Scan-8: sequence_lens first, a batch axis 0 */
    int first = batched ? 1 : 0, n_in = onnx_n_in(c) - first;
    if (!body || onnx_attr_int(c, "num_scan_inputs", -1, &n_scan_in) < 0 ||
        scan_defaults_only(c) < 0)
        return -1;
    if (n_scan_in < 1 || n_scan_in > n_in || n_in > MAX_BODY_IO)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "num_scan_inputs must be in 1..%d", n_in);
    if (batched && onnx_in(c, 0))
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "sequence_lens is not supported");
    int n_state = n_in - (int)n_scan_in, n_scan_out = (int)body->n_output - n_state;
    int64_t zero = 0, len = -1;
    cv_value *x[MAX_BODY_IO];
    onnx_val *state[MAX_BODY_IO], *ins[MAX_BODY_IO], *outs[MAX_BODY_IO];
    for (int i = 0; i < n_in; i++) {
        int64_t b = 1;
        if (!(x[i] = onnx_in_value(c, first + i)) || x[i]->type.shape.rank < 1 + batched ||
            (batched && onnx_static_extent(c, x[i], 0, &b) < 0))
            return x[i] && x[i]->type.shape.rank < 1 + batched
                       ? onnx_err(c, CV_E_ONNX_RANK_LIMIT, "input %d has too low a rank", first + i) : -1;
        if (b != 1)
            return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "Scan-8 with a batch of %lld is not "
                            "supported (only 1)", (long long)b);
        if (batched && !(x[i] = onnx_op_ints(c, "squeeze", x[i], "axes", &zero, 1)))
            return -1;
        if (i < n_state) {
            state[i] = value_val(c, x[i]);
            continue;
        }
        int64_t n;
        if (onnx_static_extent(c, x[i], 0, &n) < 0)
            return -1;
        if (len >= 0 && n != len)
            return onnx_err(c, CV_E_ONNX_DECLARED_SHAPE, "the scan inputs differ in length");
        len = n;
    }
    if (n_scan_out < 0 || len > MAX_UNROLL)
        return onnx_err(c, n_scan_out < 0 ? CV_E_ONNX_ARITY : CV_E_ONNX_UNSUPPORTED_FEATURE,
                        n_scan_out < 0 ? "the body gives fewer outputs than states"
                                       : "scans longer than %d are not unrolled", MAX_UNROLL);
    scans s = {.n = n_scan_out};
    s.v = cv_arena_alloc_array(c->a, (size_t)(len * (n_scan_out ? n_scan_out : 1) + 1),
                               sizeof *s.v);
    for (int64_t t = 0; s.v && t < len; t++) {
        memcpy(ins, state, sizeof state[0] * (size_t)n_state);
        for (int j = n_state; j < n_in; j++)
            if (!(ins[j] = scan_slice(c, x[j], t)))
                return -1;
        if (run_body(c, body, ins, n_in, outs) < 0)
            return -1;
        memcpy(state, outs, sizeof state[0] * (size_t)n_state);
        for (int j = 0; j < n_scan_out; j++)
            s.v[s.iters * n_scan_out + j] = outs[n_state + j];
        s.iters++;
    }
    if (!s.v)
        return onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory");
    if (batched && n_scan_out && !s.iters)
        return onnx_err(c, CV_E_ONNX_UNSUPPORTED_FEATURE, "scan outputs of zero iterations (empty "
                        "tensors) are not supported");
    if (batched) {   /* put the batch axis back on every result */
        for (int i = 0; i < n_state; i++)
            state[i] = value_val(c, onnx_op_ints(c, "unsqueeze", onnx_materialize(c, state[i]),
                                                 "axes", &zero, 1));
        for (int j = 0; j < n_scan_out; j++) {
            onnx_val *col[MAX_UNROLL];
            for (int t = 0; t < s.iters; t++)
                col[t] = s.v[t * n_scan_out + j];
            cv_value *st = s.iters ? stack(c, col, s.iters) : NULL;
            s.v[j] = value_val(c, st ? onnx_op_ints(c, "unsqueeze", st, "axes", &zero, 1) : NULL);
        }
    }
    int rc = 0;
    for (int i = 0; i < n_state; i++)
        rc |= state[i] ? bind_val(c, i, state[i]) : -1;
    if (!batched)
        return rc | bind_scans(c, &s, n_state);
    for (int j = 0; j < n_scan_out; j++)
        rc |= s.v[j] ? bind_val(c, n_state + j, s.v[j]) : -1;
    return rc;
}

static const onnx_op_entry entries[] = {
    {"If", 1, lower_if, "where", 0},
    {"Loop", 1, lower_loop, "unsqueeze concat", 0x3u},
    {"Scan", 8, lower_scan, "slice squeeze unsqueeze concat", 0},
    /* Tensor inputs are bound like the sequences (their shapes must meet
     * the elements' known ones). */
    {"SequenceMap", 17, lower_seq_map, NULL, ~1u},
};

const onnx_op_family onnx_ops_control = {entries, sizeof entries / sizeof entries[0]};
