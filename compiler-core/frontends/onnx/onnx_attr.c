/* Node attributes with defaults and type checks (CV2305 on a mismatch). */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

const Onnx__AttributeProto *onnx_attr(const onnx_ctx *c, const char *name)
{
    const Onnx__NodeProto *n = c->node;
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

/* True when a carries a value of kind `type` (old IRs may omit `type`). */
static bool attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType type)
{
    if (a->has_type)
        return a->type == type;
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return a->has_i;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return a->has_f;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return a->has_s;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return a->n_ints > 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return a->n_floats > 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return a->t != NULL;
    default: return false;
    }
}

static int wrong_type(onnx_ctx *c, const char *name, const char *want)
{
    return onnx_err(c, CV_E_ONNX_ATTRIBUTE_TYPE, "attribute '%s' must be %s", name, want);
}

int onnx_attr_int(onnx_ctx *c, const char *name, int64_t dflt, int64_t *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = dflt;
    if (!a)
        return 0;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
        return wrong_type(c, name, "an int");
    *out = a->i;
    return 0;
}

int onnx_attr_float(onnx_ctx *c, const char *name, double dflt, double *out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = dflt;
    if (!a)
        return 0;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT))
        return wrong_type(c, name, "a float");
    *out = a->f;
    return 0;
}

int onnx_attr_string(onnx_ctx *c, const char *name, const char *dflt, const char **out)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *out = dflt;
    if (!a)
        return 0;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING))
        return wrong_type(c, name, "a string");
    *out = a->s.len ? cv_arena_strndup(c->a, (const char *)a->s.data, a->s.len) : "";
    return *out ? 0 : -1;
}

int onnx_attr_ints(onnx_ctx *c, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    if (!a)
        return -1;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) {
        wrong_type(c, name, "a list of ints");
        return -2;
    }
    if (a->n_ints > (size_t)max) {
        onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "attribute '%s' has %zu entries (at most %d)",
                 name, a->n_ints, max);
        return -2;
    }
    if (a->n_ints)
        memcpy(out, a->ints, a->n_ints * sizeof *out);
    return (int)a->n_ints;
}

int onnx_attr_floats(onnx_ctx *c, const char *name, double *out, int max)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    if (!a)
        return -1;
    if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)) {
        wrong_type(c, name, "a list of floats");
        return -2;
    }
    if (a->n_floats > (size_t)max) {
        onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "attribute '%s' has %zu entries (at most %d)",
                 name, a->n_floats, max);
        return -2;
    }
    for (size_t i = 0; i < a->n_floats; i++)
        out[i] = a->floats[i];
    return (int)a->n_floats;
}

/* Exactly n ints in [dflt ? 1 : 0, 4096] (window geometry), dflt each when absent. */
int onnx_attr_ints_n(onnx_ctx *c, const char *name, int n, int64_t dflt, int64_t *out)
{
    int got = onnx_attr_ints(c, name, out, n);
    if (got == -2)
        return -1;
    if (got >= 0 && got != n)
        return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'%s' needs %d entries, got %d", name, n, got);
    for (int i = 0; got < 0 && i < n; i++)
        out[i] = dflt;
    for (int i = 0; i < n; i++)
        if (out[i] < (dflt ? 1 : 0) || out[i] > 4096)
            return onnx_err(c, CV_E_ONNX_ATTRIBUTE_VALUE, "'%s'[%d] = %lld is out of range", name, i,
                            (long long)out[i]);
    return 0;
}
