/* Per-kernel wall time for cuvil bench --profile (cvrt.h). */
#include "compiler-core/runtime/cvrt.h"
#include "compiler-core/runtime/cvrt_internal.h"
#include "compiler-core/runtime/cvrt_sys.h"

static int64_t now_ns(void)
{
    struct cvrt_timespec ts;
    clock_gettime(CVRT_CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.sec * 1000000000 + ts.nsec;
}

void cvrt_profile(cvrt_ctx *rt, uint64_t *ns, int64_t n)
{
    rt->prof = n > 0 ? ns : 0;
    rt->n_prof = n > 0 ? n : 0;
}

int64_t cvrt_prof_begin(cvrt_ctx *rt)
{
    return rt->prof ? now_ns() : 0;
}

void cvrt_prof_end(cvrt_ctx *rt, int64_t k, int64_t t0)
{
    if (rt->prof && k >= 0 && k < rt->n_prof)
        rt->prof[k] += (uint64_t)(now_ns() - t0);
}
