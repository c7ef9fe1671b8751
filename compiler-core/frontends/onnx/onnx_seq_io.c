/* Sequence and optional graph inputs and outputs.  Since sequences live
 * only at import time, a graph input of sequence or optional type is bound
 * to constants through cv_onnx_options.bind_list, and a graph output of
 * such a type becomes its tensors, flattened in order (an absent optional:
 * none).  Test data for them (SequenceProto, OptionalProto) is read here. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"
#include "onnx/onnx_data.pb-c.h"

enum { LIST_MAX = 64 };

static const Onnx__TypeProto *elem_of(const Onnx__TypeProto *tp)
{
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
        return tp->sequence_type ? tp->sequence_type->elem_type : NULL;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
        return tp->optional_type ? tp->optional_type->elem_type : NULL;
    return NULL;
}

char cv_onnx_type_kind(const void *type_proto)
{
    const Onnx__TypeProto *tp = type_proto, *e = tp ? elem_of(tp) : NULL;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return 't';
    if (!e)
        return '?';
    bool seq_elem = e->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    bool tensor_elem = e->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
        return tensor_elem ? 's' : '?';
    if (seq_elem && elem_of(e) && elem_of(e)->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return 'p';
    return tensor_elem ? 'o' : '?';
}

static onnx_val *tensor_const_val(onnx_ctx *c, const cv_tensor *t)
{
    onnx_const *k = onnx_const_new(c, t->dtype, t->rank, t->dims);
    onnx_val *v = k ? onnx_val_list(c, ONNX_VAL_TENSOR, NULL, 0) : NULL;
    if (!v)
        return NULL;
    memcpy(k->data, t->data, cv_tensor_nbytes(t));
    v->name = "element";
    v->c = k;
    onnx_type_of_const(k, &v->type);
    return v;
}

/* The bound elements fix the dim_params of the declared element type
 * (where they all agree), so that tensor inputs sharing them get the
 * same static extents. */
static void fix_symbols(onnx_ctx *c, const Onnx__TypeProto *tp, const cv_tensor *t, int n)
{
    const Onnx__TypeProto *e = elem_of(tp);
    if (e && e->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        e = elem_of(e);
    const Onnx__TensorShapeProto *sh = e && e->tensor_type ? e->tensor_type->shape : NULL;
    for (size_t i = 0; sh && n > 0 && i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
            !d->dim_param[0] || onnx_map_get(&c->sym_values, d->dim_param))
            continue;
        bool agree = true;
        for (int k = 0; k < n; k++)
            agree &= t[k].rank == (int)sh->n_dim && t[k].dims[i] == t[0].dims[i];
        int64_t *v = agree ? cv_arena_alloc(c->a, sizeof *v) : NULL;
        const char *key = v ? cv_arena_strdup(c->a, d->dim_param) : NULL;
        if (key) {
            *v = t[0].dims[i];
            onnx_map_put(&c->sym_values, key, v);
        }
    }
}

int onnx_bind_list_input(onnx_ctx *c, int index, onnx_val *v, const Onnx__TypeProto *tp)
{
    char kind = cv_onnx_type_kind(tp);
    if (kind == '?' || !c->opts || !c->opts->bind_list)
        return 1;
    cv_tensor t[LIST_MAX];
    bool absent = false;
    memset(t, 0, sizeof t);
    int n = c->opts->bind_list(c->opts->user, index, v->name, t, LIST_MAX, &absent);
    if (n < 0)
        return 1;
    onnx_val *e[LIST_MAX];
    int rc = 0;
    fix_symbols(c, tp, t, n);
    for (int i = 0; i < n; i++)
        if (!(e[i] = tensor_const_val(c, &t[i])))
            rc = onnx_err(c, CV_E_OUT_OF_MEMORY, "out of memory binding '%s'", v->name);
    for (int i = 0; i < n; i++)
        cv_tensor_free(&t[i]);
    if (rc < 0 || (kind == 'o' && n > 1))
        return rc < 0 ? -1 : onnx_err(c, CV_E_ONNX_ARITY, "optional '%s' bound to %d tensors",
                                      v->name, n);
    onnx_val *inner = kind == 's' || kind == 'p' ? onnx_val_list(c, ONNX_VAL_SEQ, e, n) : NULL;
    onnx_val *src = kind == 's' ? inner
                  : onnx_val_list(c, ONNX_VAL_OPT, kind == 'p' ? &inner : e, absent ? 0 : 1);
    if (!src || (kind == 'o' && !absent && n != 1))
        return src ? onnx_err(c, CV_E_ONNX_ARITY, "optional '%s' bound to no tensor", v->name) : -1;
    v->kind = src->kind;
    v->elems = src->elems;
    v->n_elems = src->n_elems;
    return 0;
}

/* ---- test data ------------------------------------------------------------------- */

static int read_tensors(Onnx__TensorProto *const *tv, size_t n, const char *name, cv_tensor *out,
                        int max, cv_diag *d)
{
    if (n > (size_t)max)
        return onnx_err_at(d, name, "SequenceProto", CV_E_ONNX_ARITY, "more than %d tensors", max);
    for (size_t i = 0; i < n; i++) {
        size_t len = onnx__tensor_proto__get_packed_size(tv[i]);
        uint8_t *buf = malloc(len ? len : 1);   /* owned */
        int rc = buf ? 0 : onnx_err_at(d, name, "SequenceProto", CV_E_OUT_OF_MEMORY, "out of memory");
        if (rc == 0) {
            onnx__tensor_proto__pack(tv[i], buf);
            rc = cv_onnx_read_tensor_pb(buf, len, name, &out[i], d);
        }
        free(buf);
        if (rc < 0) {
            for (size_t k = 0; k < i; k++)
                cv_tensor_free(&out[k]);
            return -1;
        }
    }
    return (int)n;
}

static int read_seq(const Onnx__SequenceProto *s, const char *name, cv_tensor *out, int max,
                    cv_diag *d)
{
    if (s->n_sequence_values || s->n_optional_values)
        return onnx_err_at(d, name, "SequenceProto", CV_E_ONNX_NON_TENSOR,
                           "sequences of sequences or optionals are not supported");
    return read_tensors(s->tensor_values, s->n_tensor_values, name, out, max, d);
}

int cv_onnx_read_list_pb(const void *buf, size_t len, const char *name, char kind,
                         cv_tensor *out, int max, bool *absent, cv_diag *d)
{
    *absent = false;
    if (kind == 's') {
        Onnx__SequenceProto *s = onnx__sequence_proto__unpack(NULL, len, buf);   /* owned */
        int n = s ? read_seq(s, name, out, max, d)
                  : onnx_err_at(d, name, "SequenceProto", CV_E_ONNX_BAD_PROTOBUF,
                                "not a valid SequenceProto");
        onnx__sequence_proto__free_unpacked(s, NULL);
        return n;
    }
    Onnx__OptionalProto *o = onnx__optional_proto__unpack(NULL, len, buf);   /* owned */
    int n = 0;
    if (!o)
        n = onnx_err_at(d, name, "OptionalProto", CV_E_ONNX_BAD_PROTOBUF, "not a valid OptionalProto");
    else if (o->tensor_value)
        n = read_tensors(&o->tensor_value, 1, name, out, max, d);
    else if (o->sequence_value)
        n = read_seq(o->sequence_value, name, out, max, d);
    else if (o->optional_value)
        n = onnx_err_at(d, name, "OptionalProto", CV_E_ONNX_NON_TENSOR,
                        "optionals of optionals are not supported");
    else
        *absent = true;
    onnx__optional_proto__free_unpacked(o, NULL);
    return n;
}

int cv_onnx_io_kinds(const void *model, size_t len, char *in, int max_in, char *out, int max_out)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, model);   /* owned */
    const Onnx__GraphProto *g = m ? m->graph : NULL;
    if (!g) {
        onnx__model_proto__free_unpacked(m, NULL);
        return -1;
    }
    for (int i = 0; i < max_in; i++)
        in[i] = (size_t)i < g->n_input ? cv_onnx_type_kind(g->input[i]->type) : 0;
    for (int i = 0; i < max_out; i++)
        out[i] = (size_t)i < g->n_output ? cv_onnx_type_kind(g->output[i]->type) : 0;
    onnx__model_proto__free_unpacked(m, NULL);
    return 0;
}
