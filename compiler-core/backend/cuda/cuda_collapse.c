/* Which loops of a GPU kernel join its parallel items.  The CPU code
 * generators size a kernel's extent for a few CPU threads (a pooling kernel
 * runs one item per channel and loops over the output pixels), which on a
 * GPU leaves all but a few dozen threads idle.  When the kernel body is one
 * loop with uniform bounds whose iterations are independent, and so on
 * inward, those loops are collapsed into the item index: the kernel then
 * runs extent * trip(L1) * ... items, each one iteration of the innermost
 * collapsed loop (cuda_device.c lowers it, cuda_host.c launches it). */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/cuda/cuda_internal.h"

enum { MAX_DEPTH = 64 };

/* No variable and no load: the same value for every item. */
static bool uniform(const cv_kexpr *e, int depth)
{
    if (!e)
        return true;
    if (depth > MAX_DEPTH || e->kind == CV_KE_VAR || e->kind == CV_KE_LOAD)
        return false;
    return uniform(e->a, depth + 1) && uniform(e->b, depth + 1) && uniform(e->c, depth + 1);
}

static bool depends(const cv_kexpr *e, const bool *dep, int depth)
{
    if (!e || depth > MAX_DEPTH)
        return false;
    if (e->kind == CV_KE_VAR && dep[e->id])
        return true;
    return depends(e->a, dep, depth + 1) || depends(e->b, dep, depth + 1) ||
           depends(e->c, dep, depth + 1);
}

static void loads(const cv_kexpr *e, uint64_t *slots, int depth)
{
    if (!e || depth > MAX_DEPTH)
        return;
    if (e->kind == CV_KE_LOAD || e->kind == CV_KE_ADDR)
        *slots |= 1ull << (e->id & 63);
    loads(e->a, slots, depth + 1);
    loads(e->b, slots, depth + 1);
    loads(e->c, slots, depth + 1);
}

typedef struct scan {
    bool *dep;          /* by variable: depends on the loop's variable */
    bool grew;
    uint64_t stored, loaded;
    bool bad;           /* a call, or a store whose index ignores the loop */
} scan;

/* One pass over a statement tree: what it loads and stores, and which
 * variables it derives from dep (callers repeat until nothing grows). */
static void walk(scan *sc, const cv_kstmt *s, bool check_stores, int depth)
{
    if (depth > MAX_DEPTH) {
        sc->bad = true;
        return;
    }
    for (; s; s = s->next) {
        loads(s->a, &sc->loaded, 0);
        loads(s->b, &sc->loaded, 0);
        switch ((cv_kstmt_kind)s->kind) {
        case CV_KS_SET:
        case CV_KS_FOR:
            if (!sc->dep[s->id] && (depends(s->a, sc->dep, 0) || depends(s->b, sc->dep, 0)))
                sc->dep[s->id] = sc->grew = true;
            break;
        case CV_KS_STORE:
            sc->stored |= 1ull << (s->id & 63);
            if (check_stores && !depends(s->a, sc->dep, 0))
                sc->bad = true;
            break;
        case CV_KS_CALL:
        case CV_KS_LAUNCH:
            sc->bad = true;
            break;
        case CV_KS_IF:
            break;
        }
        walk(sc, s->body, check_stores, depth + 1);
        walk(sc, s->orelse, check_stores, depth + 1);
    }
}

/* Whether the iterations of loop s can run as separate items: each store's
 * index follows the loop variable (through the locals derived from it), and
 * nothing stored is also read. */
static bool independent(const cv_kernel *k, const cv_kstmt *s)
{
    bool *dep = calloc((size_t)k->n_vars + 1, sizeof *dep);
    if (!dep)
        return false;
    dep[s->id] = true;
    scan sc = {.dep = dep, .grew = true};
    for (int round = 0; sc.grew && round < 64; round++) {
        sc.grew = false;
        sc.stored = sc.loaded = 0;
        walk(&sc, s->body, false, 0);
    }
    walk(&sc, s->body, true, 0);
    free(dep);
    return !sc.bad && !sc.grew && (sc.stored & sc.loaded) == 0;
}

int cv_cuda_collapse(const cv_kernel *k, const cv_kstmt **loops, int max)
{
    int n = 0;
    for (const cv_kstmt *s = k->body; n < max && s && !s->next && s->kind == CV_KS_FOR;
         s = s->body) {
        if (!uniform(s->a, 0) || !uniform(s->b, 0) || !independent(k, s))
            break;
        loops[n++] = s;
    }
    return n;
}
