/* The ONNX op registry: joins the lowering families and answers which ONNX
 * ops (default domain) the front end can import.  An entry lists the CU-IR
 * ops it lowers to, so an op the CU-IR table lacks is reported as
 * unsupported up front instead of failing half-way. */
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static const onnx_op_family *const families[] = {
    &onnx_ops_elementwise, &onnx_ops_nn,     &onnx_ops_shape, &onnx_ops_const,
    &onnx_ops_reduce,      &onnx_ops_norm,   &onnx_ops_resize, &onnx_ops_select,
};

const onnx_op_entry *onnx_op_find(const char *op_type)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int i = 0; i < families[f]->count; i++)
            if (strcmp(families[f]->entries[i].op_type, op_type) == 0)
                return &families[f]->entries[i];
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

bool cv_onnx_op_supported(const char *op_type)
{
    const onnx_op_entry *e = onnx_op_find(op_type);
    return e && onnx_op_available(e);
}
