/* Test helper for the ONNX front end tests: builds ModelProtos with the
 * protobuf-c code generated from onnx.proto and serialises them, so tests
 * describe small models in C.  Everything lives in one arena. */
#ifndef CV_ONNX_TESTLIB_H
#define CV_ONNX_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/arena.h"
#include "compiler-core/frontends/onnx/onnx_import.h"
#include "onnx/onnx.pb-c.h"

enum { TB_FLOAT = 1, TB_INT64 = 7, TB_BOOL = 9, TB_DOUBLE = 11 };
#define TB_N (-1)   /* a dim written as dim_param "N" */
#define TB_L (-2)   /* a dim written as dim_param "L" */

typedef struct tb {
    cv_arena a;
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[2];
} tb;

static inline void *tb_alloc(tb *b, size_t n)
{
    return cv_arena_alloc(&b->a, n);
}

/* A copy of n bytes (never NULL, even for n == 0). */
static inline void *tb_dup(tb *b, const void *p, size_t n)
{
    void *q = tb_alloc(b, n + 1);
    if (n && p)
        memcpy(q, p, n);
    return q;
}

static inline char *tb_str(tb *b, const char *s)
{
    return cv_arena_strdup(&b->a, s);
}

/* Appends item to the pointer array *arr of *n entries (arena storage). */
static inline void tb_push(tb *b, void *arr_p, size_t *n, void *item)
{
    void ***arr = arr_p;
    void **nv = tb_alloc(b, (*n + 1) * sizeof *nv);
    if (*n)
        memcpy(nv, *arr, *n * sizeof *nv);
    nv[(*n)++] = item;
    *arr = nv;
}

static inline void tb_init(tb *b, int64_t opset)
{
    memset(b, 0, sizeof *b);
    cv_arena_init(&b->a);
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opset.domain = tb_str(b, "");
    b->opsets[0] = &b->opset;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsets;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.graph = &b->g;
    b->g.name = tb_str(b, "test_graph");
}

static inline void tb_free(tb *b)
{
    cv_arena_free(&b->a);
}

static inline Onnx__ValueInfoProto *tb_vi(tb *b, const char *name, int elem, int rank,
                                          const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = tb_alloc(b, sizeof *vi);
    Onnx__TypeProto *tp = tb_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = tb_alloc(b, sizeof *tt);
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    vi->name = tb_str(b, name);
    vi->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank < 0)
        return vi;
    Onnx__TensorShapeProto *sh = tb_alloc(b, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    tt->shape = sh;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = tb_alloc(b, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] == TB_N || dims[i] == TB_L) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = tb_str(b, dims[i] == TB_N ? "N" : "L");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        tb_push(b, &sh->dim, &sh->n_dim, d);
    }
    return vi;
}

static inline void tb_input(tb *b, const char *name, int elem, int rank, const int64_t *dims)
{
    tb_push(b, &b->g.input, &b->g.n_input, tb_vi(b, name, elem, rank, dims));
}

static inline void tb_output(tb *b, const char *name, int elem, int rank, const int64_t *dims)
{
    tb_push(b, &b->g.output, &b->g.n_output, tb_vi(b, name, elem, rank, dims));
}

/* ins / outs are comma-separated value names ("" entries allowed). */
static inline void tb_names(tb *b, const char *list, char ***arr, size_t *n)
{
    while (list && *list) {
        const char *e = strchr(list, ',');
        size_t len = e ? (size_t)(e - list) : strlen(list);
        tb_push(b, arr, n, cv_arena_strndup(&b->a, list, len));
        list = e ? e + 1 : list + len;
    }
}

static inline Onnx__NodeProto *tb_node(tb *b, const char *op, const char *name, const char *ins,
                                       const char *outs)
{
    Onnx__NodeProto *n = tb_alloc(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = tb_str(b, op);
    n->name = tb_str(b, name ? name : "");
    tb_names(b, ins, &n->input, &n->n_input);
    tb_names(b, outs, &n->output, &n->n_output);
    tb_push(b, &b->g.node, &b->g.n_node, n);
    return n;
}

static inline Onnx__AttributeProto *tb_attr(tb *b, Onnx__NodeProto *n, const char *name,
                                            Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = tb_alloc(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = tb_str(b, name);
    a->has_type = 1;
    a->type = type;
    tb_push(b, &n->attribute, &n->n_attribute, a);
    return a;
}

static inline void tb_attr_i(tb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void tb_attr_f(tb *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static inline void tb_attr_ints(tb *b, Onnx__NodeProto *n, const char *name, const int64_t *v,
                                size_t k)
{
    Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = tb_dup(b, v, k * sizeof *v);
    a->n_ints = k;
}

/* A tensor; raw selects raw_data over the typed field.  elem TB_FLOAT takes
 * float data, TB_INT64 int64_t data. */
static inline Onnx__TensorProto *tb_tensor(tb *b, const char *name, int elem, int rank,
                                           const int64_t *dims, const void *data, bool raw)
{
    Onnx__TensorProto *t = tb_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = tb_str(b, name);
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)rank;
    t->dims = tb_dup(b, dims, (size_t)rank * sizeof *dims);
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i] > 0 ? dims[i] : 0;
    size_t es = elem == TB_INT64 || elem == TB_DOUBLE ? 8 : elem == TB_BOOL ? 1 : 4;
    if (raw) {
        t->has_raw_data = 1;
        t->raw_data.len = (size_t)n * es;
        t->raw_data.data = tb_dup(b, data, (size_t)n * es);
    } else if (elem == TB_FLOAT) {
        t->n_float_data = (size_t)n;
        t->float_data = tb_dup(b, data, (size_t)n * 4);
    } else if (elem == TB_INT64) {
        t->n_int64_data = (size_t)n;
        t->int64_data = tb_dup(b, data, (size_t)n * 8);
    }
    return t;
}

static inline Onnx__TensorProto *tb_init_tensor(tb *b, const char *name, int elem, int rank,
                                                const int64_t *dims, const void *data, bool raw)
{
    Onnx__TensorProto *t = tb_tensor(b, name, elem, rank, dims, data, raw);
    tb_push(b, &b->g.initializer, &b->g.n_initializer, t);
    return t;
}

/* Serialises the model into the arena. */
static inline uint8_t *tb_pack(tb *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = tb_alloc(b, *len + 1);
    onnx__model_proto__pack(&b->m, buf);
    return buf;
}

static inline cv_module *tb_load(tb *b, cv_diag *d)
{
    size_t len;
    uint8_t *buf = tb_pack(b, &len);
    return cv_onnx_load_mem(buf, len, "test.onnx", d);
}

/* The first error's code, or 0. */
static inline int tb_first_error(const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].sev == CV_SEV_ERROR)
            return d->v[i].code;
    return 0;
}

/* True when some error has this code and mentions `needle` in its message
 * or notes (NULL: any). */
static inline bool tb_has_error(const cv_diag *d, int code, const char *needle)
{
    for (int i = 0; i < d->n; i++) {
        const cv_diag_entry *e = &d->v[i];
        if (e->sev != CV_SEV_ERROR || e->code != code)
            continue;
        if (!needle || strstr(e->msg, needle))
            return true;
        for (int k = 0; k < e->n_notes; k++)
            if (strstr(e->notes[k], needle))
                return true;
    }
    return false;
}

#endif
