/* The debugging builds behind `cuvil diff`: every tensor a kernel writes
 * becomes an output, and (tests only) a planted fault in one op's kernel
 * that the deviation finder must name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/debug_internal.h"
#include "compiler-core/backend/kernel_internal.h"

static bool listed(cv_value *const *vals, int n, const cv_value *v)
{
    for (int i = 0; i < n; i++)
        if (vals[i] == v)
            return true;
    return false;
}

/* The op whose result kernel k leaves in memory: the last of its chain. */
static int kernel_end(const cv_kernel *k)
{
    return k->n_fused ? k->fused[k->n_fused - 1] : k->op;
}

int cv_debug_expose_values(cv_func *f)
{
    /* A trial build (no LLVM: well under a millisecond) says which results
     * reach memory: an op whose result runs on into the next op's kernel
     * never does, nor a view, nor a constant folded at compile time. */
    cv_diag quiet;
    cv_diag_init(&quiet);
    cv_kprog *p = NULL;
    /* When it fails, the real build reports why. */
    if (cv_kprog_build(f, &p, &quiet)) {
        cv_diag_free(&quiet);
        return 0;
    }
    cv_diag_free(&quiet);
    cv_value **vals = calloc((size_t)(f->n_returns + p->n_kernels) + 1, sizeof *vals); /* owned */
    int rc = vals ? 0 : -1, n = 0;
    for (int i = 0; rc == 0 && i < f->n_returns; i++)
        vals[n++] = f->returns[i];
    for (int i = 0; rc == 0 && i < p->n_kernels; i++) {
        int end = kernel_end(p->kernels[i]);
        const cv_op *op = end >= 0 ? f->ops[end] : NULL;
        if (op && op->n_results && !listed(vals, n, op->results[0]))
            vals[n++] = op->results[0];
    }
    if (rc == 0) {
        cv_func_set_returns(f, vals, n);
        cv_func_count_uses(f);
    }
    cv_kprog_free(p);
    free(vals);
    return rc;
}

/* "<op>[:crash]" -> op index and mode; -1 when malformed. */
static int parse_fault(const char *s, int *op, bool *crash)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || v < 0 || v > 1 << 24)
        return -1;
    *op = (int)v;
    *crash = strcmp(end, ":crash") == 0;
    return *end == 0 || *crash ? 0 : -1;
}

static cv_kernel *kernel_of_op(const cv_kprog *p, int op)
{
    for (int i = 0; i < p->n_kernels; i++) {
        cv_kernel *k = p->kernels[i];
        if (k->op == op)
            return k;
        for (int j = 0; j < k->n_fused; j++)
            if (k->fused[j] == op)
                return k;
    }
    return NULL;
}

/* The slot a kernel writes its result through: the last op's result when
 * bound, else the first slot written. */
static int result_slot(const cv_kprog *p, const cv_kernel *k)
{
    const cv_op *op = p->f->ops[kernel_end(k)];
    int want = op->n_results ? p->value_store[op->results[0]->id] : -1;
    int first = -1;
    for (int s = 0; s < k->n_slots; s++) {
        if (!k->slot_written[s])
            continue;
        if (first < 0)
            first = s;
        if (want >= 0 && cv_kp_root(p, k->slot_store[s]) == cv_kp_root(p, want))
            return s;
    }
    return first;
}

static cv_kexpr *expr(cv_kprog *p, cv_kexpr e)
{
    cv_kexpr *x = cv_kp_alloc(p, sizeof *x);
    if (x)
        *x = e;
    return x;
}

/* Appends `if (p == 0) slot[index] = 1000` to the kernel's body. */
static int append_store(cv_kprog *p, cv_kernel *k, int slot, int64_t index)
{
    cv_kty ty = cv_kty_of(k->slot_dtype[slot]);
    cv_kexpr *pv = expr(p, (cv_kexpr){.kind = CV_KE_VAR, .ty = CV_KTY_I64, .id = k->pvar});
    cv_kexpr *zero = expr(p, (cv_kexpr){.kind = CV_KE_CONST_I, .ty = CV_KTY_I64});
    cv_kexpr *cond = expr(p, (cv_kexpr){.kind = CV_KE_CMP, .ty = CV_KTY_BOOL, .op = CV_KOP_EQ,
                                        .a = pv, .b = zero});
    cv_kexpr *at = expr(p, (cv_kexpr){.kind = CV_KE_CONST_I, .ty = CV_KTY_I64, .i = index});
    cv_kexpr *val = expr(p, ty == CV_KTY_BOOL
                                ? (cv_kexpr){.kind = CV_KE_CONST_I, .ty = CV_KTY_BOOL, .i = 1}
                            : ty == CV_KTY_I64
                                ? (cv_kexpr){.kind = CV_KE_CONST_I, .ty = CV_KTY_I64, .i = 1000}
                                : (cv_kexpr){.kind = CV_KE_CONST_F, .ty = (uint8_t)ty, .f = 1000});
    cv_kstmt *st = cv_kp_alloc(p, sizeof *st), *iff = cv_kp_alloc(p, sizeof *iff);
    if (!pv || !zero || !cond || !at || !val || !st || !iff)
        return -1;
    *st = (cv_kstmt){.kind = CV_KS_STORE, .id = slot, .a = at, .b = val};
    *iff = (cv_kstmt){.kind = CV_KS_IF, .a = cond, .body = st};
    cv_kstmt **tail = &k->body;
    while (*tail)
        tail = &(*tail)->next;
    *tail = iff;
    return 0;
}

int cv_debug_plant_fault(cv_kprog *p, cv_diag *d)
{
    const char *env = getenv("CUVIL_TEST_FAULT_OP");
    if (!env || !*env)
        return 0;
    int op;
    bool crash;
    cv_kernel *k = parse_fault(env, &op, &crash) == 0 ? kernel_of_op(p, op) : NULL;
    int slot = k ? result_slot(p, k) : -1;
    if (slot < 0)
        return cv_diag_fail(d, CV_E_TEST_FAULT_BAD, (cv_span){0}, "CUVIL_TEST_FAULT_OP='%.40s' names no "
                            "compiled op with a kernel writing its result", env);
    return append_store(p, k, slot, crash ? (int64_t)1 << 40 : 0);
}
