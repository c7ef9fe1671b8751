/* The attention op (issue 26): its reference kernel against the unfused
 * matmul/softmax/matmul chain in the interpreter, the fusion pass on the
 * chains exporters emit (BERT's additive mask, GPT-2's causal where, the
 * multi-head transposes), and the fused native kernel against the
 * interpreter with masks, causal, several head counts and lengths (one
 * length longer than a key tile, so the online softmax rescales). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "compiler-core/passes/passes.h"
#include "tests/support/backend_testlib.h"

static const bk_case native_cases[] = {
    BK("attention", "", "f32[1,2,5,8]", "f32[1,2,5,8]", "f32[1,2,5,8]"),
    /* Sq != Sk, a [B,1,1,Sk] padding mask, 3 heads, Dv != D */
    BK("attention", "", "f32[2,3,5,8]", "f32[2,3,7,8]", "f32[2,3,7,4]", "f32[2,1,1,7] @-20:0"),
    /* a full [B,H,Sq,Sk] mask and an explicit scale */
    BK("attention", "scale=0.3", "f32[1,4,6,16]", "f32[1,4,6,16]", "f32[1,4,6,16]",
       "f32[1,4,6,6] @-5:5"),
    BK("attention", "causal=1", "f32[1,4,9,8]", "f32[1,4,9,8]", "f32[1,4,9,8]"),
    /* a decode step: one query sees every key */
    BK("attention", "causal=1", "f32[1,2,1,8]", "f32[1,2,9,8]", "f32[1,2,9,8]"),
    /* the merged-head order, read and written in place */
    BK("attention", "bshd=[1,1,1,1]", "f32[2,6,3,8]", "f32[2,6,3,8]", "f32[2,6,3,8]"),
    /* GPT-2 with a cache: q and y [B,S,H,D], k and v [B,H,S,D] */
    BK("attention", "bshd=[1,0,0,1] causal=1", "f32[1,3,2,8]", "f32[1,2,11,8]", "f32[1,2,11,8]"),
    /* longer than two key tiles: the online softmax rescales across tiles */
    BK("attention", "", "f32[1,1,20,4]", "f32[1,1,600,4]", "f32[1,1,600,4]",
       "f32[1,1,20,600] @-8:8"),
    BK("attention", "causal=1 bshd=[0,1,1,0]", "f32[1,1,530,4]", "f32[1,530,1,4]",
       "f32[1,530,1,4]"),
    /* symbolic batch and length */
    BK("attention", "", "f32[N:2,2,L:5,8]", "f32[N:2,2,L:5,8]", "f32[N:2,2,L:5,8]"),
    BK("attention", "causal=1", "f32[1,2,L:7,8]", "f32[1,2,L:7,8]", "f32[1,2,L:7,8]",
       "f32[1,1,1,L:7] @-3:0"),
};

static void test_native(void **state)
{
    (void)state;
    char msg[4096] = "";
    int n = (int)(sizeof native_cases / sizeof native_cases[0]);
    for (int threads = 1; threads <= 2; threads++)
        if (bk_check("attention", native_cases, n, threads, msg, sizeof msg))
            fail_msg("%s", msg);
}

/* ---- the chains exporters emit ------------------------------------------- */

/* BERT: per-head transposes of [B,S,H,D] projections, k transposed for the
 * product, div by sqrt(D), an additive mask, the result transposed back. */
static const char bert_chain[] =
    "cuir 1\nmodel @bert(%q: f32[2,5,3,8], %k: f32[2,5,3,8], %v: f32[2,5,3,8], %m: f32[2,1,1,5])"
    " -> (f32[2,5,3,8]) {\n"
    "  param %c: f32[] = dense(2.8284271)\n"
    "  %0 = transpose(%q) {perm=[0,2,1,3]} : f32[2,3,5,8]\n"
    "  %1 = transpose(%k) {perm=[0,2,3,1]} : f32[2,3,8,5]\n"
    "  %2 = transpose(%v) {perm=[0,2,1,3]} : f32[2,3,5,8]\n"
    "  %3 = matmul(%0, %1) : f32[2,3,5,5]\n"
    "  %4 = div(%3, %c) : f32[2,3,5,5]\n"
    "  %5 = add(%4, %m) : f32[2,3,5,5]\n"
    "  %6 = softmax(%5) {axis=-1} : f32[2,3,5,5]\n"
    "  %7 = matmul(%6, %2) : f32[2,3,5,8]\n"
    "  %8 = transpose(%7) {perm=[0,2,1,3]} : f32[2,5,3,8]\n"
    "  return %8\n}\n";

/* GPT-2 decode with a cache in [B,H,S,D]: k transposed on its last axes, a
 * mul by 1/sqrt(D), the causal where over a constant lower triangle. */
static const char gpt_chain[] =
    "cuir 1\nmodel @gpt(%q: f32[1,4,2,8], %k: f32[1,2,4,8], %v: f32[1,2,4,8]) -> (f32[1,2,4,8]) {\n"
    "  param %c: f32[] = dense(0.35355339)\n"
    "  param %t: bool[1,1,4,4] = dense(true, false, false, false, true, true, false, false, "
    "true, true, true, false, true, true, true, true)\n"
    "  param %f: f32[] = dense(-10000)\n"
    "  %0 = transpose(%q) {perm=[0,2,1,3]} : f32[1,2,4,8]\n"
    "  %1 = transpose(%k) {perm=[0,1,3,2]} : f32[1,2,8,4]\n"
    "  %2 = matmul(%0, %1) : f32[1,2,4,4]\n"
    "  %3 = mul(%2, %c) : f32[1,2,4,4]\n"
    "  %4 = where(%t, %3, %f) : f32[1,2,4,4]\n"
    "  %5 = softmax(%4) {axis=-1} : f32[1,2,4,4]\n"
    "  %6 = matmul(%5, %v) : f32[1,2,4,8]\n"
    "  return %6\n}\n";

/* torch's masked_fill: where(masked, fill, s) with the strict upper
 * triangle (static nanoGPT), a key past the query hidden. */
static const char masked_fill_chain[] =
    "cuir 1\nmodel @mf(%q: f32[1,2,3,8], %k: f32[1,2,3,8], %v: f32[1,2,3,8]) -> (f32[1,2,3,8]) {\n"
    "  param %t: bool[1,1,3,3] = dense(false, true, true, false, false, true, false, false, "
    "false)\n"
    "  param %f: f32[] = dense(-inf)\n"
    "  %1 = transpose(%k) {perm=[0,1,3,2]} : f32[1,2,8,3]\n"
    "  %2 = matmul(%q, %1) : f32[1,2,3,3]\n"
    "  %4 = where(%t, %f, %2) : f32[1,2,3,3]\n"
    "  %5 = softmax(%4) {axis=-1} : f32[1,2,3,3]\n"
    "  %6 = matmul(%5, %v) : f32[1,2,3,8]\n"
    "  return %6\n}\n";

/* Not a causal triangle (the last row hides a key): the where stays. */
static const char not_causal[] =
    "cuir 1\nmodel @gpt(%q: f32[1,2,3,8], %k: f32[1,2,3,8], %v: f32[1,2,3,8]) -> (f32[1,2,3,8]) {\n"
    "  param %t: bool[1,1,3,3] = dense(true, false, false, true, true, false, true, false, "
    "true)\n"
    "  param %f: f32[] = dense(-10000)\n"
    "  %1 = transpose(%k) {perm=[0,1,3,2]} : f32[1,2,8,3]\n"
    "  %2 = matmul(%q, %1) : f32[1,2,3,3]\n"
    "  %4 = where(%t, %2, %f) : f32[1,2,3,3]\n"
    "  %5 = softmax(%4) {axis=-1} : f32[1,2,3,3]\n"
    "  %6 = matmul(%5, %v) : f32[1,2,3,8]\n"
    "  return %6\n}\n";

/* No scaling at all: the fused op's scale must be 1, not its default
 * 1/sqrt(D); k is read through its [B,H,S,D] -> [B,H,D,S] transpose. */
static const char unscaled[] =
    "cuir 1\nmodel @un(%q: f32[1,2,3,8], %k: f32[1,2,5,8], %v: f32[1,2,5,8]) -> (f32[1,2,3,8]) {\n"
    "  %1 = transpose(%k) {perm=[0,1,3,2]} : f32[1,2,8,5]\n"
    "  %2 = matmul(%q, %1) : f32[1,2,3,5]\n"
    "  %5 = softmax(%2) {axis=-1} : f32[1,2,3,5]\n"
    "  %6 = matmul(%5, %v) : f32[1,2,3,8]\n"
    "  return %6\n}\n";

/* The scores are returned too: fusing would have to keep them. */
static const char scores_used[] =
    "cuir 1\nmodel @two(%q: f32[1,2,3,8], %k: f32[1,2,3,8], %v: f32[1,2,3,8]) ->"
    " (f32[1,2,3,8], f32[1,2,3,3]) {\n"
    "  %1 = transpose(%k) {perm=[0,1,3,2]} : f32[1,2,8,3]\n"
    "  %2 = matmul(%q, %1) : f32[1,2,3,3]\n"
    "  %5 = softmax(%2) {axis=-1} : f32[1,2,3,3]\n"
    "  %6 = matmul(%5, %v) : f32[1,2,3,8]\n"
    "  return %6, %2\n}\n";

static cv_module *parse(const char *text)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(text, strlen(text), "chain.cuir", &d);
    if (!m || cv_verify(m, 0, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
    return m;
}

static int count_ops(const cv_func *f, const char *name)
{
    int n = 0;
    for (int i = 0; i < f->n_ops; i++)
        n += f->ops[i]->def && strcmp(f->ops[i]->def->name, name) == 0;
    return n;
}

/* Runs the passes on the chain and checks the fused function (and its
 * native code) against the unfused one in the interpreter. */
static void check_chain(const char *text, int want_fused, int want_transposes)
{
    cv_module *m = parse(text), *ref = parse(text);
    cv_func *f = m->funcs[0];
    cv_tensor ins[4] = {{0}}, want[2] = {{0}}, got[2] = {{0}};
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].n;
        assert_int_equal(cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims), 0);
        cv_npref_fill(&ins[i], (uint64_t)(i + 3), i == 3 ? -20 : -2, i == 3 ? 0 : 2);
    }
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_interp_run(ref->funcs[0], ins, f->n_inputs, want, &d), 0);
    cv_pass_stats st;
    assert_int_equal(cv_passes_run(f, &st, &d), 0);
    assert_int_equal(st.attention_fused, want_fused);
    assert_int_equal(count_ops(f, "attention"), want_fused);
    assert_int_equal(count_ops(f, "softmax"), 1 - want_fused);
    assert_int_equal(count_ops(f, "transpose"), want_transposes);
    assert_int_equal(cv_verify(m, 0, &d), 0);
    assert_int_equal(cv_interp_run(f, ins, f->n_inputs, got, &d), 0);
    char msg[1024];
    for (int i = 0; i < f->n_returns; i++) {
        if (cv_npref_compare(&got[i], &want[i], 1e-5, 1e-6, msg, sizeof msg))
            fail_msg("interpreter, output %d: %s", i, msg);
        cv_tensor_free(&got[i]);
    }
    if (bk_run_native(m, ins, f->n_inputs, 2, got, msg, sizeof msg))
        fail_msg("%s", msg);
    for (int i = 0; i < f->n_returns; i++) {
        if (cv_npref_compare(&got[i], &want[i], 1e-4, 1e-5, msg, sizeof msg))
            fail_msg("native, output %d: %s", i, msg);
        cv_tensor_free(&got[i]);
        cv_tensor_free(&want[i]);
    }
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_diag_free(&d);
    cv_module_free(m);
    cv_module_free(ref);
}

static void test_bert_chain(void **state) { (void)state; check_chain(bert_chain, 1, 0); }
static void test_gpt_chain(void **state) { (void)state; check_chain(gpt_chain, 1, 0); }
static void test_unscaled(void **state) { (void)state; check_chain(unscaled, 1, 0); }
static void test_masked_fill(void **state) { (void)state; check_chain(masked_fill_chain, 1, 0); }
static void test_not_causal(void **state) { (void)state; check_chain(not_causal, 0, 1); }
static void test_scores_used(void **state) { (void)state; check_chain(scores_used, 0, 1); }

/* The reference kernel's rules: shapes checked, the result's layout. */
static void test_infer(void **state)
{
    (void)state;
    static const char bad[] =
        "cuir 1\nmodel @bad(%q: f32[1,2,3,8], %k: f32[1,2,4,6], %v: f32[1,2,4,8]) -> (f32[1,2,3,8]) {\n"
        "  %0 = attention(%q, %k, %v) : f32[1,2,3,8]\n  return %0\n}\n";
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_cuir_parse(bad, strlen(bad), "bad.cuir", &d);
    assert_true(!m || cv_verify(m, 0, &d) != 0);
    assert_true(d.n_errors > 0);
    bool found = false;
    for (int i = 0; i < d.n; i++)
        found = found || (d.v[i].code == 3002 && strstr(d.v[i].msg, "depths"));
    assert_true(found);
    cv_module_free(m);
    cv_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infer),
        cmocka_unit_test(test_bert_chain),
        cmocka_unit_test(test_gpt_chain),
        cmocka_unit_test(test_unscaled),
        cmocka_unit_test(test_masked_fill),
        cmocka_unit_test(test_not_causal),
        cmocka_unit_test(test_scores_used),
        cmocka_unit_test(test_native),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
