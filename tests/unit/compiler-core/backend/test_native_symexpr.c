/* Dimension expressions in the native backend (issue 26): models whose
 * shapes carry expressions of their symbols (a stride-2 conv over H, W; a
 * KV cache of P + 1 keys; a flatten to N*L; an encoder over L + 1 tokens)
 * are compiled ONCE and run at several symbol values, each compared with
 * the reference interpreter; the arena is a formula of the symbols that
 * grows once and allocates nothing at a shape already seen; one model runs
 * on AArch64 under qemu; the C99 backend compiles them too. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "compiler-core/backend/codegen.h"
#include "compiler-core/passes/passes.h"
#include "compiler-core/runtime/cvrt_internal.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/c99_testlib.h"
#include "tests/support/cross_testlib.h"

/* ---- building models ------------------------------------------------------ */

static cv_dim D(cv_module *m, const char *s)
{
    cv_dim d;
    const char *err;
    size_t at;
    assert_int_equal(cv_dim_parse(m, s, strlen(s), &d, &err, &at), 0);
    return d;
}

/* "N,3,H,W" as an f32 type. */
static cv_type T(cv_module *m, const char *dims)
{
    cv_type t = {CV_F32, {0, {{0}}}};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", dims);
    for (char *save = NULL, *d = strtok_r(buf, ",", &save); d; d = strtok_r(NULL, ",", &save))
        t.shape.d[t.shape.rank++] = D(m, d);
    return t;
}

static cv_value *weight(cv_func *f, const char *name, const char *dims, int seed)
{
    cv_type t = T(f->module, dims);
    int64_t n = cv_shape_numel(&t.shape);
    float *w = malloc(sizeof *w * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)((i * 7 + seed * 3) % 13 - 6) / (float)(8 + seed);
    cv_value *v = cv_func_add_dense(f, name, &t, w, sizeof *w * (size_t)n)->value;
    free(w);
    return v;
}

static cv_value *op(cv_func *f, const char *name, const char *attrs, int n, ...)
{
    cv_value *ops[6];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        ops[i] = va_arg(ap, cv_value *);
    va_end(ap);
    cv_op *o = cv_op_new(f, name, ops, n);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(bk_set_attrs(o, attrs), 0);
    if (cv_op_finish(o, 1, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
    return o->results[0];
}

static void finish(cv_func *f, cv_value **ret, int n)
{
    cv_func_set_returns(f, ret, n);
    for (int i = 0; i < n; i++)
        cv_func_add_output_type(f, &ret[i]->type);
    cv_diag d;
    cv_diag_init(&d);
    if (cv_verify(f->module, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
}

/* conv 3x3 stride 2 pad 1 over [N,3,H,W] (H' = (H + 1) floordiv 2), relu,
 * avg pool 2x2 stride 2 in ceil mode, flatten to [N, 4*H''*W'']. */
static cv_module *conv_model(void)
{
    cv_module *m = cv_module_new("convx");
    cv_func *f = cv_func_new(m, "convx");
    cv_type tx = T(m, "N,3,H,W");
    cv_value *x = cv_func_add_input(f, "x", &tx);
    cv_value *y = op(f, "conv2d", "stride=[2,2] pad=[1,1]", 3, x, weight(f, "w", "4,3,3,3", 1),
                     weight(f, "b", "4", 2));
    y = op(f, "relu", "", 1, y);
    cv_value *p = op(f, "avg_pool2d", "kernel=[2,2] stride=[2,2] ceil_mode=1", 1, y);
    cv_value *fl = op(f, "flatten", "axis=1", 1, p);
    cv_value *ret[2] = {y, fl};
    finish(f, ret, 2);
    return m;
}

/* A decode step with a KV cache: the new key and value are appended to the
 * past ([1,2,P,8] + [1,2,1,8] -> P + 1), one query attends to all of them
 * (causal: the last position sees everything); the present key returns. */
static cv_module *decode_model(void)
{
    cv_module *m = cv_module_new("decode");
    cv_func *f = cv_func_new(m, "decode");
    cv_type tp = T(m, "1,2,P,8"), tn = T(m, "1,2,1,8");
    cv_value *pk = cv_func_add_input(f, "past_k", &tp), *pv = cv_func_add_input(f, "past_v", &tp);
    cv_value *q = cv_func_add_input(f, "q", &tn), *k = cv_func_add_input(f, "k", &tn);
    cv_value *v = cv_func_add_input(f, "v", &tn);
    cv_value *kk = op(f, "concat", "axis=2", 2, pk, k), *vv = op(f, "concat", "axis=2", 2, pv, v);
    cv_value *y = op(f, "attention", "causal=1", 3, q, kk, vv);
    /* the newest keys' softmax over the cache axis: a slice with a
     * symbolic extent and a softmax over a symbolic axis */
    cv_value *sl = op(f, "slice", "starts=[1] ends=[1000000] axes=[2]", 1, kk);
    cv_value *ret[3] = {y, kk, op(f, "softmax", "axis=2", 1, sl)};
    finish(f, ret, 3);
    return m;
}

/* The decode step as exporters write it: q . k^T over the P + 1 keys of
 * the cache (N = P + 1), a softmax over them, . v (K = P + 1). */
static cv_module *scores_model(void)
{
    cv_module *m = cv_module_new("scores");
    cv_func *f = cv_func_new(m, "scores");
    cv_type tp = T(m, "1,2,P,8"), tn = T(m, "1,2,1,8");
    cv_value *pk = cv_func_add_input(f, "past_k", &tp), *k = cv_func_add_input(f, "k", &tn);
    cv_value *q = cv_func_add_input(f, "q", &tn);
    cv_value *kk = op(f, "concat", "axis=2", 2, pk, k);
    cv_value *sc = op(f, "matmul", "", 2, q, op(f, "transpose", "perm=[0,1,3,2]", 1, kk));
    cv_value *pr = op(f, "softmax", "axis=-1", 1, sc);
    cv_value *ret[2] = {sc, op(f, "matmul", "", 2, pr, kk)};
    finish(f, ret, 2);
    return m;
}

/* [N,L,32] flattened to [N*L, 32], a matmul and bias, a softmax over the
 * rows, and back to [N, L, 16]. */
static cv_module *flat_model(void)
{
    cv_module *m = cv_module_new("flat");
    cv_func *f = cv_func_new(m, "flat");
    cv_type tx = T(m, "N,L,32");
    cv_value *x = cv_func_add_input(f, "x", &tx);
    cv_value *r = op(f, "reshape", "shape=[-1,32]", 1, x);
    r = op(f, "matmul", "", 2, r, weight(f, "w", "32,16", 3));
    r = op(f, "add", "", 2, r, weight(f, "b", "16", 4));
    r = op(f, "softmax", "axis=1", 1, r);
    cv_value *back = op(f, "reshape", "shape=[0,-1,16]", 1, op(f, "reshape", "shape=[1,-1,16]", 1, r));
    /* a batched matmul with symbolic batch, M and N: [N,L,16] x [N,16,L] */
    cv_value *g = op(f, "matmul", "", 2, back, op(f, "transpose", "perm=[0,2,1]", 1, back));
    cv_value *ret[3] = {r, op(f, "softmax", "axis=1", 1, back), g};
    finish(f, ret, 3);
    return m;
}

/* An encoder block over L + 1 tokens (a class token is prepended): q, k, v
 * projections, two heads, attention, residual, layer norm, a GELU MLP. */
static cv_module *encoder_model(void)
{
    cv_module *m = cv_module_new("enc");
    cv_func *f = cv_func_new(m, "enc");
    cv_type tx = T(m, "1,L,16");
    cv_value *x = cv_func_add_input(f, "x", &tx);
    x = op(f, "concat", "axis=1", 2, weight(f, "cls", "1,1,16", 5), x);
    cv_value *h[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        cv_value *t = op(f, "matmul", "", 2, x, weight(f, name, "16,16", 6 + i));
        t = op(f, "reshape", "shape=[0,0,2,8]", 1, t);
        h[i] = op(f, "transpose", "perm=[0,2,1,3]", 1, t);
    }
    cv_value *a = op(f, "attention", "", 3, h[0], h[1], h[2]);
    a = op(f, "reshape", "shape=[0,0,16]", 1, op(f, "transpose", "perm=[0,2,1,3]", 1, a));
    a = op(f, "add", "", 2, a, x);
    a = op(f, "layer_norm", "axis=-1", 3, a, weight(f, "g", "16", 9), weight(f, "be", "16", 10));
    cv_value *u = op(f, "gelu", "", 1, op(f, "matmul", "", 2, a, weight(f, "mlp1", "16,32", 11)));
    u = op(f, "add", "", 2, op(f, "matmul", "", 2, u, weight(f, "mlp2", "32,16", 12)), a);
    cv_value *ret[1] = {u};
    finish(f, ret, 1);
    return m;
}

/* ---- running ------------------------------------------------------------------ */

static void fill(cv_tensor *t, int seed)
{
    for (int64_t i = 0; i < t->numel; i++)
        ((float *)t->data)[i] = (float)((i * 37 + seed * 11) % 29 - 14) / 9.0f;
}

typedef struct binding {
    const char *const *names;
    const int64_t *vals;
    int n;
} binding;

static bool look(void *ctx, const char *sym, int64_t *v)
{
    const binding *b = ctx;
    for (int j = 0; j < b->n; j++)
        if (strcmp(sym, b->names[j]) == 0) {
            *v = b->vals[j];
            return true;
        }
    return false;
}

/* Inputs for the symbol values vals (names[i] = vals[i]). */
static void make_inputs(const cv_func *f, const char *const *names, const int64_t *vals, int ns,
                        cv_tensor *in)
{
    binding b = {names, vals, ns};
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_shape *s = &f->inputs[i]->type.shape;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < s->rank; k++)
            assert_int_equal(cv_dim_eval(s->d[k], look, &b, &dims[k]), 0);
        assert_int_equal(cv_tensor_alloc(&in[i], CV_F32, s->rank, dims), 0);
        fill(&in[i], i + (int)vals[0]);
    }
}

static void compare(const cv_tensor *got, const cv_tensor *want, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(got[i].rank, want[i].rank);
        for (int k = 0; k < got[i].rank; k++)
            assert_int_equal(got[i].dims[k], want[i].dims[k]);
        for (int64_t e = 0; e < want[i].numel; e++) {
            float a = ((float *)got[i].data)[e], b = ((float *)want[i].data)[e];
            if (fabsf(a - b) > 1e-4f + 1e-4f * fabsf(b))
                fail_msg("%s output %d element %lld: native %g, interpreter %g", what, i,
                         (long long)e, a, b);
        }
    }
}

/* Compiles m once and runs it natively at each row of vals (ns symbols). */
static void check_sizes(cv_module *m, const char *const *names, const int64_t *vals, int ns,
                        int rows)
{
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("%s", msg);
    const cv_func *f = m->funcs[0];
    cv_native *nat = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_native_open(dir, 2, &nat, &d), 0);
    for (int r = 0; r < rows; r++) {
        cv_tensor in[8], want[4] = {{0}}, got[4] = {{0}};
        make_inputs(f, names, vals + r * ns, ns, in);
        if (cv_interp_run(f, in, f->n_inputs, want, &d))
            cv_diag_print(&d, stderr, false);
        assert_int_equal(d.n_errors, 0);
        if (cv_native_run(nat, in, f->n_inputs, got, &d))
            cv_diag_print(&d, stderr, false);
        assert_int_equal(d.n_errors, 0);
        char what[64];
        snprintf(what, sizeof what, "%s at %s=%lld", f->name, names[0], (long long)vals[r * ns]);
        compare(got, want, f->n_returns, what);
        for (int i = 0; i < f->n_inputs; i++)
            cv_tensor_free(&in[i]);
        for (int i = 0; i < f->n_returns; i++) {
            cv_tensor_free(&want[i]);
            cv_tensor_free(&got[i]);
        }
    }
    cv_native_close(nat);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
}

static void test_conv_stride2(void **state)
{
    (void)state;
    cv_module *m = conv_model();
    /* The conv's result is an expression of H and W. */
    assert_true(cv_dim_is_expr(m->funcs[0]->returns[0]->type.shape.d[2]));
    static const char *const names[] = {"N", "H", "W"};
    static const int64_t vals[] = {1, 8, 8, 2, 7, 9, 1, 16, 5, 1, 3, 4, 1, 8, 8};
    check_sizes(m, names, vals, 3, 5);
    cv_module_free(m);
}

static void test_decode_kv_cache(void **state)
{
    (void)state;
    cv_module *m = decode_model();
    assert_string_equal(m->funcs[0]->returns[1]->type.shape.d[2].sym, "P + 1");
    static const char *const names[] = {"P"};
    static const int64_t vals[] = {0, 1, 7, 31, 200, 7};
    check_sizes(m, names, vals, 1, 6);
    cv_module_free(m);
}

static void test_matmul_scores(void **state)
{
    (void)state;
    cv_module *m = scores_model();
    assert_string_equal(m->funcs[0]->returns[0]->type.shape.d[3].sym, "P + 1");
    static const char *const names[] = {"P"};
    static const int64_t vals[] = {0, 5, 64, 300};
    check_sizes(m, names, vals, 1, 4);
    cv_module_free(m);
}

static void test_flatten(void **state)
{
    (void)state;
    cv_module *m = flat_model();
    assert_true(cv_dim_is_expr(m->funcs[0]->returns[0]->type.shape.d[0]));
    static const char *const names[] = {"N", "L"};
    static const int64_t vals[] = {1, 1, 2, 5, 3, 17, 1, 64};
    check_sizes(m, names, vals, 2, 4);
    cv_module_free(m);
}

static void test_encoder(void **state)
{
    (void)state;
    cv_module *m = encoder_model();
    assert_string_equal(m->funcs[0]->returns[0]->type.shape.d[1].sym, "L + 1");
    static const char *const names[] = {"L"};
    static const int64_t vals[] = {1, 8, 33, 100};
    check_sizes(m, names, vals, 1, 4);
    cv_module_free(m);
}

/* An input whose dim is an expression of another input's symbol: the
 * native run binds N from x and checks y's 2*N + 1 rows. */
static void test_expr_input(void **state)
{
    (void)state;
    cv_module *m = cv_module_new("exin");
    cv_func *f = cv_func_new(m, "exin");
    cv_type tx = T(m, "N,4"), ty = T(m, "2*N + 1,4");
    cv_value *x = cv_func_add_input(f, "x", &tx), *y = cv_func_add_input(f, "y", &ty);
    cv_value *ret[1] = {op(f, "relu", "", 1, op(f, "concat", "axis=0", 2, x, y))};
    finish(f, ret, 1);
    static const char *const names[] = {"N"};
    static const int64_t vals[] = {3, 1, 0};
    check_sizes(m, names, vals, 1, 3);
    /* y with 6 rows at N = 3 is refused, naming the expression */
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("%s", msg);
    cv_native *nat = NULL;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_native_open(dir, 1, &nat, &d), 0);
    cv_tensor in[2], out[1] = {{0}};
    assert_int_equal(cv_tensor_alloc(&in[0], CV_F32, 2, (int64_t[]){3, 4}), 0);
    assert_int_equal(cv_tensor_alloc(&in[1], CV_F32, 2, (int64_t[]){6, 4}), 0);
    assert_int_equal(cv_native_run(nat, in, 2, out, &d), -1);
    assert_int_equal(d.v[d.n - 1].code, 2024);
    if (!strstr(d.v[d.n - 1].msg, "2*N + 1 is 7"))
        fail_msg("%s", d.v[d.n - 1].msg);
    cv_tensor_free(&in[0]);
    cv_tensor_free(&in[1]);
    cv_native_close(nat);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
}

/* ---- the arena -------------------------------------------------------------------- */

typedef struct api {
    void *dl;
    void *(*create)(int);
    int (*run)(void *, const void *const *, void *const *, const int64_t *);
    void (*destroy)(void *);
    int64_t (*arena_bytes)(const int64_t *);
} api;

static void *sym(void *dl, const char *name, const char *verb)
{
    char fn[128];
    snprintf(fn, sizeof fn, "cv_%s_%s", name, verb);
    void *p = dlsym(dl, fn);
    assert_non_null(p);
    return p;
}

static void run_decode(api *a, void *ctx, int64_t P)
{
    int64_t dp[4] = {1, 2, P, 8}, dn[4] = {1, 2, 1, 8}, dk[4] = {1, 2, P + 1, 8};
    cv_tensor t[8];
    for (int i = 0; i < 5; i++)
        assert_int_equal(cv_tensor_alloc(&t[i], CV_F32, 4, i < 2 ? dp : dn), 0);
    assert_int_equal(cv_tensor_alloc(&t[5], CV_F32, 4, dn), 0);
    assert_int_equal(cv_tensor_alloc(&t[6], CV_F32, 4, dk), 0);
    assert_int_equal(cv_tensor_alloc(&t[7], CV_F32, 4, dp), 0);
    const void *in[5] = {t[0].data, t[1].data, t[2].data, t[3].data, t[4].data};
    void *out[3] = {t[5].data, t[6].data, t[7].data};
    for (int i = 0; i < 5; i++)
        fill(&t[i], i);
    assert_int_equal(a->run(ctx, in, out, &P), 0);
    for (int i = 0; i < 8; i++)
        cv_tensor_free(&t[i]);
}

static void test_arena(void **state)
{
    (void)state;
    cv_module *m = decode_model();
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 2, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("%s", msg);
    char *so = cv_fs_join(dir, "libdecode.so");
    api a = {.dl = dlopen(so, RTLD_NOW | RTLD_LOCAL)};
    assert_non_null(a.dl);
    *(void **)&a.create = sym(a.dl, "decode", "create");
    *(void **)&a.run = sym(a.dl, "decode", "run");
    *(void **)&a.destroy = sym(a.dl, "decode", "destroy");
    *(void **)&a.arena_bytes = sym(a.dl, "decode", "arena_bytes");
    /* The artifact's formula is the planner's at every size, and grows with P
     * (the concatenated K and V of P + 1 rows live in it). */
    cv_kprog *p = NULL;
    cv_diag d;
    cv_diag_init(&d);
    /* Built as the native backend builds it (constant operands packed, the
     * runtime's attention kernel, whose scratch is not in the arena). */
    assert_int_equal(cv_kprog_build_half(m->funcs[0], 0, CV_HALF_WEIGHTS | CV_HALF_PACKED_B, &p, &d), 0);
    assert_true(p->n_dsyms >= 1);
    for (int64_t P = 0; P <= 1000; P = P * 3 + 1) {
        int64_t arena, peak;
        cv_memplan_stats(p, &P, &arena, &peak);
        assert_int_equal(a.arena_bytes(&P), arena);
        assert_true(arena >= peak);
        assert_true(arena >= 4 * (P + 1) * 2 * 8);
    }
    cv_kprog_free(p);
    cvrt_ctx *ctx = a.create(1);
    assert_non_null(ctx);
    int64_t P = 20, small = 7, big = 500;
    run_decode(&a, ctx, P);
    char *arena = ctx->arena;
    int64_t cap = ctx->arena_cap;
    assert_int_equal(cap, a.arena_bytes(&P));
    /* The same shape, then a smaller one: no allocation. */
    run_decode(&a, ctx, P);
    run_decode(&a, ctx, small);
    assert_ptr_equal(ctx->arena, arena);
    assert_int_equal(ctx->arena_cap, cap);
    /* A larger shape grows it once, to the formula's value. */
    run_decode(&a, ctx, big);
    assert_int_equal(ctx->arena_cap, a.arena_bytes(&big));
    assert_true(ctx->arena_cap > cap);
    arena = ctx->arena;
    run_decode(&a, ctx, big);
    run_decode(&a, ctx, P);
    assert_ptr_equal(ctx->arena, arena);
    a.destroy(ctx);
    dlclose(a.dl);
    free(so);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    cv_module_free(m);
}

/* ---- AArch64 -------------------------------------------------------------------------- */

static void test_aarch64(void **state)
{
    (void)state;
    if (!xc_available(&xc_aarch64))
        skip();
    cv_module *m = decode_model();
    const cv_func *f = m->funcs[0];
    static const char *const names[] = {"P"};
    static const int64_t vals[] = {13};
    cv_tensor in[5], want[3] = {{0}}, got[3] = {{0}};
    make_inputs(f, names, vals, 1, in);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(f, in, 5, want, &d), 0);
    char msg[8192] = "";
    if (xc_run(&xc_aarch64, m, 2, in, 5, want, 3, got, msg, sizeof msg))
        fail_msg("%s", msg);
    compare(got, want, 3, "decode on aarch64");
    for (int i = 0; i < 5; i++)
        cv_tensor_free(&in[i]);
    for (int i = 0; i < 3; i++) {
        cv_tensor_free(&want[i]);
        cv_tensor_free(&got[i]);
    }
    cv_diag_free(&d);
    cv_module_free(m);
}

/* ---- the C99 backend ---------------------------------------------------------------- */

static void check_c99(cv_module *m, const char *const *names, const int64_t *vals, int ns)
{
    const cv_func *f = m->funcs[0];
    cv_tensor in[8], want[4] = {{0}}, got[4] = {{0}};
    make_inputs(f, names, vals, ns, in);
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(f, in, f->n_inputs, want, &d), 0);
    char msg[8192] = "";
    if (run_c(m, "cc", in, f->n_inputs, 1, got, msg, sizeof msg))
        fail_msg("%s", msg);
    compare(got, want, f->n_returns, f->name);
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&in[i]);
    for (int i = 0; i < f->n_returns; i++) {
        cv_tensor_free(&want[i]);
        cv_tensor_free(&got[i]);
    }
    cv_diag_free(&d);
    cv_module_free(m);
}

static void test_c99(void **state)
{
    (void)state;
    static const char *const p[] = {"P"}, *const nhw[] = {"N", "H", "W"};
    check_c99(decode_model(), p, (const int64_t[]){9}, 1);
    check_c99(conv_model(), nhw, (const int64_t[]){2, 7, 9}, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_stride2),
        cmocka_unit_test(test_decode_kv_cache),
        cmocka_unit_test(test_matmul_scores),
        cmocka_unit_test(test_flatten),
        cmocka_unit_test(test_encoder),
        cmocka_unit_test(test_expr_input),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_aarch64),
        cmocka_unit_test(test_c99),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
