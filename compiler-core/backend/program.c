/* From a verified CU-IR function to a kernel program: binds every value to
 * storage, runs each op's codegen hook, and turns the kernels into a list of
 * launches whose storage memory planning then lays out. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/kernel_internal.h"
#include "compiler-core/passes/passes.h"

/* ---- storage ---------------------------------------------------------------- */

int cv_kp_add_store(cv_kprog *p, const cv_kstore *s)
{
    if (p->n_stores == p->cap_stores) {
        int cap = p->cap_stores ? p->cap_stores * 2 : 64;
        cv_kstore *n = cv_kp_alloc(p, sizeof *n * (size_t)cap);
        if (!n)
            return -1;
        if (p->n_stores)
            memcpy(n, p->stores, sizeof *n * (size_t)p->n_stores);
        p->stores = n;
        p->cap_stores = cap;
    }
    p->stores[p->n_stores] = *s;
    p->stores[p->n_stores].first = p->stores[p->n_stores].last = -1;
    return p->n_stores++;
}

int cv_kp_root(const cv_kprog *p, int store)
{
    return p->stores[store].kind == CV_KST_VIEW ? p->stores[store].base : store;
}

cv_kten cv_cg_tensor(cv_codegen_ctx *c, int store, const cv_type *t)
{
    cv_kten k = {.store = store, .dtype = t->dtype, .rank = t->shape.rank};
    for (int i = 0; i < k.rank; i++) {
        cv_dim d = t->shape.d[i];
        k.sdim[i] = d.sym ? -1 : d.n;
        /* Symbols are read at run time; expressions computed from them. */
        k.dim[i] = cv_kp_dim(c, d);
        if (!k.dim[i]) {
            char txt[256];
            cv_dim_format(d, txt, sizeof txt);
            cv_cg_error(c, CV_E_BACKEND_DIM_EXPRESSION, "dimension %s cannot be computed at run time (it names a "
                        "symbol no input binds, or divides by a symbol)", txt);
            k.dim[i] = cv_k_i64(c, 0);
        }
    }
    return k;
}

static int arena_store(cv_kprog *p, const cv_type *t)
{
    cv_kstore s = {.kind = CV_KST_ARENA, .dtype = t->dtype, .shape = t->shape};
    return cv_kp_add_store(p, &s);
}

cv_kten cv_cg_in(cv_codegen_ctx *c, int i)
{
    const cv_value *v = c->op->operands[i];
    int s = c->prog->value_store[v->id];
    if (s < 0) {
        cv_kp_bug(c, "operand without storage");
        s = 0;
    }
    return cv_cg_tensor(c, s, &v->type);
}

cv_kten cv_cg_out(cv_codegen_ctx *c, int i)
{
    return cv_cg_value(c, c->op->results[i]);
}

cv_kten cv_cg_value(cv_codegen_ctx *c, const cv_value *v)
{
    int *s = &c->prog->value_store[v->id];
    if (*s < 0)
        *s = arena_store(c->prog, &v->type);
    if (*s < 0) {
        cv_kp_bug(c, "out of memory");
        *s = 0;
    }
    return cv_cg_tensor(c, *s, &v->type);
}

cv_kten cv_cg_scratch(cv_codegen_ctx *c, cv_dtype dt, const cv_shape *shape)
{
    cv_type t = {dt, *shape};
    int s = arena_store(c->prog, &t);
    if (s < 0) {
        cv_kp_bug(c, "out of memory");
        s = 0;
    }
    return cv_cg_tensor(c, s, &t);
}

cv_kten cv_cg_const_own(cv_codegen_ctx *c, cv_dtype dt, const cv_shape *shape, void *data)
{
    cv_type t = {dt, *shape};
    int64_t n = cv_shape_numel(shape);
    size_t nb = n > 0 ? (size_t)n * cv_dtype_size(dt) : 0;
    cv_kstore s = {.kind = CV_KST_CONST, .dtype = dt, .shape = *shape, .data = data, .nbytes = nb};
    int id = data ? cv_kp_add_store(c->prog, &s) : -1;
    if (id < 0) {
        cv_kp_bug(c, "out of memory");
        id = 0;
    }
    return cv_cg_tensor(c, id, &t);
}

cv_kten cv_cg_const(cv_codegen_ctx *c, cv_dtype dt, const cv_shape *shape, const void *data)
{
    int64_t n = cv_shape_numel(shape);
    size_t nb = n > 0 ? (size_t)n * cv_dtype_size(dt) : 0;
    void *copy = cv_kp_alloc(c->prog, nb ? nb : 1);
    if (copy && nb)
        memcpy(copy, data, nb);
    return cv_cg_const_own(c, dt, shape, copy);
}

int cv_cg_error(cv_codegen_ctx *c, int code, const char *fmt, ...)
{
    char path[256], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cv_op_path(c->op, path, sizeof path);
    cv_diag_add(c->diag, CV_SEV_ERROR, code, cv_op_span(c->op), path, "%s: %s", c->op->name, msg);
    return -1;
}

/* ---- kernels ------------------------------------------------------------- */

static bool add_kernel(cv_kprog *p, cv_kernel *k)
{
    if (p->n_kernels == p->cap_kernels) {
        int cap = p->cap_kernels ? p->cap_kernels * 2 : 32;
        cv_kernel **n = cv_kp_alloc(p, sizeof *n * (size_t)cap);
        if (!n)
            return false;
        if (p->n_kernels)
            memcpy(n, p->kernels, sizeof *n * (size_t)p->n_kernels);
        p->kernels = n;
        p->cap_kernels = cap;
    }
    p->kernels[p->n_kernels++] = k;
    return true;
}

static const char *kernel_name(cv_codegen_ctx *c, const char *what)
{
    char buf[96];
    int n = snprintf(buf, sizeof buf, "k%d_%s", c->prog->n_kernels, what ? what : c->op->name);
    for (int i = 0; i < n && buf[i]; i++)
        if (!isalnum((unsigned char)buf[i]))
            buf[i] = '_';
    return cv_arena_strdup(&c->prog->arena, buf);
}

const cv_kexpr *cv_k_begin(cv_codegen_ctx *c, const char *what, const cv_kexpr *extent,
                           const cv_kexpr *grain)
{
    cv_kprog *p = c->prog;
    if (c->k)
        cv_kp_bug(c, "a kernel begun inside another");
    cv_kernel *k = cv_kp_alloc(p, sizeof *k);
    cv_kexpr *pv = cv_kp_alloc(p, sizeof *pv);
    if (k) {
        k->slot_store = cv_kp_alloc(p, sizeof *k->slot_store * CV_K_MAX_SLOTS);
        k->slot_dtype = cv_kp_alloc(p, sizeof *k->slot_dtype * CV_K_MAX_SLOTS);
        k->slot_written = cv_kp_alloc(p, sizeof *k->slot_written * CV_K_MAX_SLOTS);
        k->var_ty = cv_kp_alloc(p, sizeof *k->var_ty * CV_K_MAX_VARS);
        k->name = kernel_name(c, what);
    }
    if (!k || !pv || !k->slot_store || !k->slot_dtype || !k->slot_written || !k->var_ty ||
        !k->name) {
        static cv_kexpr zero = {.kind = CV_KE_CONST_I, .ty = CV_KTY_I64};
        return &zero;
    }
    k->op = c->op_index < p->f->n_ops ? c->op_index : -1;
    k->extent = extent;
    k->grain = grain ? grain : cv_k_i64(c, 1);
    k->pvar = 0;
    k->n_vars = 1;
    k->var_ty[0] = CV_KTY_I64;
    c->k = k;
    c->depth = 0;
    c->tails[c->depth++] = &k->body;
    *pv = (cv_kexpr){.kind = CV_KE_VAR, .ty = CV_KTY_I64, .id = 0};
    return pv;
}

static void touch(cv_kprog *p, int store, int step)
{
    cv_kstore *s = &p->stores[cv_kp_root(p, store)];
    if (s->first < 0)
        s->first = step;
    s->last = step;
}

void cv_k_end(cv_codegen_ctx *c)
{
    cv_kprog *p = c->prog;
    cv_kernel *k = c->k;
    if (!k)
        return;
    if (c->depth != 1)
        cv_kp_bug(c, "a kernel ended with an open for or if");
    c->k = NULL;
    c->depth = 0;
    cv_kstmt *s = cv_kp_alloc(p, sizeof *s);
    const cv_kexpr **args = cv_kp_alloc(p, sizeof *args * (size_t)(k->n_slots + 1));
    if (!s || !args || !add_kernel(p, k))
        return;
    for (int i = 0; i < k->n_slots; i++) {
        cv_kexpr *e = cv_kp_alloc(p, sizeof *e);
        if (!e)
            return;
        *e = (cv_kexpr){.kind = CV_KE_STOREPTR, .ty = CV_KTY_PTR, .id = k->slot_store[i]};
        args[i] = e;
        touch(p, k->slot_store[i], p->n_launches);
    }
    *s = (cv_kstmt){.kind = CV_KS_LAUNCH, .id = p->n_kernels - 1, .a = k->extent,
                    .b = k->grain, .args = args, .n_args = k->n_slots};
    *p->run_tail = s;
    p->run_tail = &s->next;
    p->n_launches++;
    c->n_kernels_op++;
}

/* ---- copies and views ------------------------------------------------------- */

/* dst[i] = src[off + i] for every element of dst, in blocks across threads. */
void cv_cg_copy(cv_codegen_ctx *c, const cv_kten *dst, const cv_kten *src,
                const cv_kexpr *elem_offset)
{
    enum { BLOCK = 16384 };
    const cv_kexpr *n = cv_k_numel(c, dst, 0, dst->rank), *b = cv_k_i64(c, BLOCK);
    const cv_kexpr *blocks = cv_k_div(c, cv_k_add(c, n, cv_k_i64(c, BLOCK - 1)), b);
    const cv_kexpr *p = cv_k_begin(c, "copy", blocks, cv_k_i64(c, 1));
    const cv_kexpr *lo = cv_k_mul(c, p, b);
    const cv_kexpr *i = cv_k_for(c, lo, cv_k_min(c, n, cv_k_add(c, lo, b)), CV_KFOR_INNER);
    cv_k_store(c, dst, i, cv_k_load(c, src, elem_offset ? cv_k_add(c, i, elem_offset) : i));
    cv_k_close(c);
    cv_k_end(c);
}

int cv_cg_view(cv_codegen_ctx *c, int res, int opnd, const cv_kexpr *elem_offset)
{
    cv_kprog *p = c->prog;
    const cv_value *v = c->op->results[res];
    cv_kten src = cv_cg_in(c, opnd);
    if (p->value_store[v->id] >= 0 || src.dtype != v->type.dtype) {
        cv_kten dst = cv_cg_out(c, res);
        cv_cg_copy(c, &dst, &src, elem_offset);
        return 0;
    }
    const cv_kstore *s = &p->stores[src.store];
    const cv_kexpr *bytes = cv_k_i64(c, 0);
    if (elem_offset)
        bytes = cv_k_mul(c, elem_offset, cv_k_i64(c, (int64_t)cv_dtype_size(src.dtype)));
    if (s->kind == CV_KST_VIEW && s->byte_offset)
        bytes = cv_k_add(c, s->byte_offset, bytes);
    cv_kstore view = {.kind = CV_KST_VIEW, .base = cv_kp_root(p, src.store),
                      .byte_offset = bytes, .dtype = v->type.dtype, .shape = v->type.shape};
    int id = cv_kp_add_store(p, &view);
    if (id < 0)
        return cv_cg_error(c, CV_E_OUT_OF_MEMORY, "out of memory");
    p->value_store[v->id] = id;
    return 0;
}
