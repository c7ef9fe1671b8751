/* Which loops of a GPU kernel join its parallel items.  The CPU code
 * generators size a kernel's extent for a few CPU threads (a pooling kernel
 * runs one item per channel and loops over the output pixels), which on a
 * GPU leaves all but a few dozen threads idle.  When the kernel body is one
 * loop with uniform bounds whose iterations are independent, and so on
 * inward, those loops are collapsed into the item index: the kernel then
 * runs extent * trip(L1) * ... items, each one iteration of the innermost
 * collapsed loop (cuda_device.c lowers it, cuda_host.c launches it).
 * Elementwise kernels run blocks of consecutive elements per item
 * (for i in [p*C, min(n, p*C + C))): that loop becomes C items per p, the
 * ones past the end idle, so that neighbouring threads touch neighbouring
 * elements. */
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

/* Uniform but for the kernel's item variable p. */
static bool p_only(const cv_kernel *k, const cv_kexpr *e, int depth)
{
    if (!e)
        return true;
    if (depth > MAX_DEPTH || e->kind == CV_KE_LOAD || (e->kind == CV_KE_VAR && e->id != k->pvar))
        return false;
    return p_only(k, e->a, depth + 1) && p_only(k, e->b, depth + 1) &&
           p_only(k, e->c, depth + 1);
}

static bool is_bin(const cv_kexpr *e, cv_kop op)
{
    return e && e->kind == CV_KE_BIN && e->op == op;
}

/* lo + C or C + lo with a positive constant C; 0 otherwise. */
static int64_t plus_const(const cv_kexpr *e, const cv_kexpr *lo)
{
    if (!is_bin(e, CV_KOP_ADD))
        return 0;
    const cv_kexpr *c = e->a == lo ? e->b : e->b == lo ? e->a : NULL;
    return c && c->kind == CV_KE_CONST_I && c->i > 0 ? c->i : 0;
}

int64_t cv_cuda_chunk(const cv_kernel *k, const cv_kstmt *s)
{
    enum { MAX_CHUNK = 1 << 16 };
    if (!s || s->kind != CV_KS_FOR || s != k->body || s->next || uniform(s->a, 0) ||
        !p_only(k, s->a, 0) || !p_only(k, s->b, 0) || !is_bin(s->b, CV_KOP_MIN))
        return 0;
    int64_t c = plus_const(s->b->a, s->a);
    if (!c)
        c = plus_const(s->b->b, s->a);
    return c <= MAX_CHUNK && independent(k, s) ? c : 0;
}

int cv_cuda_collapse(const cv_kernel *k, const cv_kstmt **loops, int max)
{
    if (max > 0 && cv_cuda_chunk(k, k->body)) {
        loops[0] = k->body;
        return 1;
    }
    int n = 0;
    for (const cv_kstmt *s = k->body; n < max && s && !s->next && s->kind == CV_KS_FOR;
         s = s->body) {
        if (!uniform(s->a, 0) || !uniform(s->b, 0) || !independent(k, s))
            break;
        loops[n++] = s;
    }
    return n;
}
