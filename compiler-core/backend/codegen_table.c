/* Finding an op's codegen hook: the `codegen` field of its op-table entry
 * (compiler-core/ir/ops_<family>.c), the one place that ties an op to its
 * lowering.  Ops without a hook are reported by program construction. */
#include "compiler-core/backend/codegen.h"
#include "compiler-core/cuvil.h"

cv_codegen_fn cv_cg_hook_for(const cv_op_def *def)
{
    return def->codegen;
}

bool cv_op_native(const cv_op_def *def)
{
    return cv_cg_hook_for(def) != NULL;
}
