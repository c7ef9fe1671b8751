/* The ONNX op registry: joins the lowering families and answers which ONNX
 * ops (default domain) the front end can import.  An entry lists the CU-IR
 * ops it lowers to, so an op the CU-IR table lacks is reported as
 * unsupported up front instead of failing half-way. */
#include <string.h>

#include "compiler-core/cuvil.h"
#include "compiler-core/frontends/onnx/onnx_internal.h"

static const onnx_op_family *const families[] = {
    &onnx_ops_elementwise, &onnx_ops_nn,     &onnx_ops_shape, &onnx_ops_const,
    &onnx_ops_reduce,      &onnx_ops_norm,   &onnx_ops_resize, &onnx_ops_select,
    &onnx_ops_quant,       &onnx_ops_signal, &onnx_ops_rnn,    &onnx_ops_scatter,
    &onnx_ops_linalg,      &onnx_ops_gridsample, &onnx_ops_einsum,
    &onnx_ops_control,     &onnx_ops_tfidf,   &onnx_ops_seq,
};

static const onnx_op_entry *find_in(const onnx_op_family *fam, const char *op_type)
{
    for (int i = 0; i < fam->count; i++)
        if (strcmp(fam->entries[i].op_type, op_type) == 0)
            return &fam->entries[i];
    return NULL;
}

const onnx_op_entry *onnx_op_find(const char *op_type)
{
    const onnx_op_entry *e = NULL;
    for (size_t f = 0; !e && f < sizeof families / sizeof families[0]; f++)
        e = find_in(families[f], op_type);
    return e;
}

bool onnx_domain_is_default(const char *domain)
{
    return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

const onnx_op_entry *onnx_node_entry(const Onnx__NodeProto *n)
{
    if (onnx_domain_is_default(n->domain))
        return onnx_op_find(n->op_type);
    if (strcmp(n->domain, ONNX_TRAINING_DOMAIN) == 0)
        return find_in(&onnx_ops_train, n->op_type);
    return NULL;
}

bool onnx_op_available(const onnx_op_entry *e)
{
    const char *p = e->needs;
    while (p && *p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n) {
            char name[64];
            if (n >= sizeof name)
                return false;
            memcpy(name, p, n);
            name[n] = 0;
            if (!cv_op_def_lookup(name))
                return false;
        }
        p += n;
    }
    return true;
}

const char *cv_onnx_op_at(int i, int *since)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        if (i < families[f]->count) {
            const onnx_op_entry *e = &families[f]->entries[i];
            if (since)
                *since = e->since;
            return onnx_op_available(e) ? e->op_type : "";
        }
        i -= families[f]->count;
    }
    return NULL;
}

bool cv_onnx_op_supported(const char *op_type)
{
    const onnx_op_entry *e = onnx_op_find(op_type);
    return e && onnx_op_available(e);
}
