/* Issue 25: long chains and deep nesting in model files end in a coded
 * error or success, never a crash.  Each shape goes through the real
 * `cuvil validate` and `cuvil compile` (a crash there is a signal, exit
 * status 128+N), and the accepted extremes run on a 1 MiB thread stack (a
 * worker may compile in threads) with the stack they use measured. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/diag.h"
#include "common/strbuf.h"
#include "compiler-core/frontends/dsl/dsl.h"
#include "compiler-core/frontends/dsl/parser.h"
#include "compiler-core/frontends/dsl/sema.h"
#include "compiler-core/ir/ir.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

#define HEAD "import cuvil as cvl\n\n@cvl.model(input_shapes=[(4, 4)])\ndef m(x):\n    return "
#define TERMS 200000
#define SMALL_STACK (1u << 20)

static char *tmp;

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b ? b : "build/asan/cuvil";
}

/* HEAD, then first, then `link` n times, then last and a newline. */
static char *chain(const char *first, const char *link, int n, const char *last)
{
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, HEAD);
    cv_sb_puts(&sb, first);
    for (int i = 0; i < n; i++)
        cv_sb_puts(&sb, link);
    cv_sb_puts(&sb, last);
    cv_sb_putc(&sb, '\n');
    return cv_sb_steal(&sb);
}

/* Runs `cuvil ARGS...`; its standard error in *err (caller frees). */
static int run_cuvil(char **err, const char *a1, const char *a2, const char *a3, const char *a4,
                     const char *a5)
{
    const char *argv[] = {cuvil_bin(), a1, a2, a3, a4, a5, NULL};
    char *errpath = cv_tmpdir_path(tmp, "stderr");
    int rc = cv_run_argv(argv, errpath, NULL);
    size_t len;
    *err = cv_tmpdir_read_file(errpath, &len);
    free(errpath);
    if (!*err)
        *err = strdup("");
    return rc;
}

/* validate and compile both end with exit status want (0 or 1, never a
 * signal), and a failure carries `code`. */
static void expect_cli(const char *name, const char *src, int want, const char *code)
{
    assert_int_equal(cv_tmpdir_write(tmp, name, src, strlen(src)), 0);
    char *path = cv_tmpdir_path(tmp, name), *out = cv_tmpdir_path(tmp, "out");
    char *err;
    int rc = run_cuvil(&err, "validate", path, NULL, NULL, NULL);
    if (rc != want || (code && !strstr(err, code)))
        fail_msg("cuvil validate %s: exit %d (want %d, %s)\n%.2000s", name, rc, want,
                 code ? code : "no code", err);
    free(err);
    rc = run_cuvil(&err, "compile", path, "--no-cache", "-o", out);
    if (rc != want || (code && !strstr(err, code)))
        fail_msg("cuvil compile %s: exit %d (want %d, %s)\n%.2000s", name, rc, want,
                 code ? code : "no code", err);
    free(err);
    free(path);
    free(out);
}

static void test_plus_chain(void **state)
{
    (void)state;
    char *src = chain("x", " + x", TERMS - 1, "");
    expect_cli("plus.cvl.py", src, 1, "CV1007");
    free(src);
}

static void test_transpose_chain(void **state)
{
    (void)state;
    char *src = chain("x", ".T", TERMS, "");
    expect_cli("transpose.cvl.py", src, 1, "CV1007");
    free(src);
}

static void test_pow_chain(void **state)
{
    (void)state;
    char *src = chain("x", " ** x", TERMS - 1, "");
    expect_cli("pow.cvl.py", src, 1, "CV1007");
    free(src);
}

static void test_call_and_subscript_chains(void **state)
{
    (void)state;
    char *src = chain("cvl.relu", "(x)", TERMS, "");
    expect_cli("calls.cvl.py", src, 1, "CV1007");
    free(src);
    src = chain("x", "[0]", TERMS, "");
    expect_cli("subscripts.cvl.py", src, 1, "CV1007");
    free(src);
}

/* Brackets nest by recursion in the parser: the tokenizer bounds them. */
static void test_deep_brackets(void **state)
{
    (void)state;
    static const char *const opens[] = {"(", "[", "cvl.relu(", "(x, "};
    static const char *const closes[] = {")", "]", ")", ")"};
    for (int k = 0; k < 4; k++) {
        cv_sb sb = CV_SB_INIT;
        cv_sb_puts(&sb, HEAD);
        for (int i = 0; i < TERMS / 4; i++)
            cv_sb_puts(&sb, opens[k]);
        cv_sb_putc(&sb, 'x');
        for (int i = 0; i < TERMS / 4; i++)
            cv_sb_puts(&sb, closes[k]);
        cv_sb_putc(&sb, '\n');
        char name[32];
        snprintf(name, sizeof name, "brackets%d.cvl.py", k);
        expect_cli(name, cv_sb_str(&sb), 1, "CV1007");
        cv_sb_free(&sb);
    }
}

/* The longest chain the limit lets through is a working model. */
static void test_chain_below_limit_compiles(void **state)
{
    (void)state;
    char *src = chain("x * (1", " + 1", DSL_MAX_AST_DEPTH - 16, ")");
    expect_cli("const.cvl.py", src, 0, NULL);
    free(src);
}

static void test_cuir_deep_nesting(void **state)
{
    (void)state;
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "cuir 1\nmodel @m(%x: f32[4]) -> (f32[4]) {\n  %0 = relu(%x) {a=");
    for (int i = 0; i < TERMS; i++)
        cv_sb_putc(&sb, '[');
    for (int i = 0; i < TERMS; i++)
        cv_sb_putc(&sb, ']');
    cv_sb_puts(&sb, "} : f32[4]\n  return %0\n}\n");
    expect_cli("deep.cuir", cv_sb_str(&sb), 1, "CV1007");
    cv_sb_free(&sb);
}

/* ---- a 1 MiB thread stack --------------------------------------------- */

typedef struct job {
    const char *src;
    cv_module *m;
    cv_diag d;
} job;

static void *parse_job(void *arg)
{
    job *j = arg;
    j->m = cv_dsl_parse_text(j->src, strlen(j->src), NULL, &j->d);
    return NULL;
}

/* Runs the front end on src in a thread with a SMALL_STACK stack painted
 * with a pattern; returns the bytes it used (the deepest unpainted byte). */
static size_t run_on_small_stack(job *j)
{
    size_t guard = 1u << 16;
    unsigned char *mem = mmap(NULL, SMALL_STACK + guard, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    assert_int_equal(mprotect(mem, guard, PROT_NONE), 0);  /* overflow: SIGSEGV, not corruption */
    unsigned char *stack = mem + guard;
    memset(stack, 0xA5, SMALL_STACK);
    pthread_attr_t at;
    pthread_attr_init(&at);
    assert_int_equal(pthread_attr_setstack(&at, stack, SMALL_STACK), 0);
    pthread_t th;
    cv_diag_init(&j->d);
    assert_int_equal(pthread_create(&th, &at, parse_job, j), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&at);
    size_t low = 0;
    while (low < SMALL_STACK && stack[low] == 0xA5)
        low++;
    munmap(mem, SMALL_STACK + guard);
    return SMALL_STACK - low;
}

static void check_small_stack(const char *what, char *src, int levels, int want_code)
{
    job j = {.src = src};
    size_t used = run_on_small_stack(&j);
    if (want_code) {
        assert_null(j.m);
        assert_true(j.d.n > 0);
        assert_int_equal(j.d.v[0].code, want_code);
    } else {
        if (!j.m)
            cv_diag_print(&j.d, stderr, false);
        assert_non_null(j.m);
    }
    print_message("%-34s %7zu bytes of stack, %zu per level over %d levels\n", what, used,
                  used / (size_t)levels, levels);
    cv_module_free(j.m);
    cv_diag_free(&j.d);
    free(src);
}

/* Helpers f0..f{n-1}, each returning f{i+1}(x) + 1 + ... (k ones): the
 * evaluation nests about n * (k + 3) deep, through every inlined call. */
static char *helper_chain(int n, int k)
{
    cv_sb sb = CV_SB_INIT;
    cv_sb_puts(&sb, "import cuvil as cvl\n\n");
    for (int i = 0; i < n; i++) {
        cv_sb_printf(&sb, "def f%d(x):\n    return f%d(x)", i, i + 1);
        for (int j = 0; j < k; j++)
            cv_sb_puts(&sb, " + 1");
        cv_sb_putc(&sb, '\n');
    }
    cv_sb_printf(&sb, "def f%d(x):\n    return x\n\n", n);
    cv_sb_puts(&sb, "@cvl.model(input_shapes=[(4, 4)])\ndef m(x):\n    return f0(x)\n");
    return cv_sb_steal(&sb);
}

static void test_small_thread_stack(void **state)
{
    (void)state;
    int n = DSL_MAX_AST_DEPTH - 16;
    check_small_stack("accepted: 1 + 1 + ... (AST limit)", chain("x * (1", " + 1", n, ")"), n, 0);
    check_small_stack("accepted: x.T.T... (AST limit)", chain("x", ".T", n, ""), n, 0);
    n = DSL_MAX_EXPR_DEPTH - 16;
    check_small_stack("accepted: 1 ** 1 ** ... (expr limit)", chain("x * (1", " ** 1", n, ")"), n, 0);
    check_small_stack("accepted: - - ... (expr limit)", chain("", "-", n, "x"), n, 0);
    check_small_stack("accepted: 60 helpers x 18-term chains", helper_chain(60, 18), 60 * 21, 0);
    check_small_stack("refused: 63 helpers x 30-term chains", helper_chain(63, 30), DSL_MAX_NEST,
                      4113);
    check_small_stack("refused: 200000-term + chain", chain("x", " + x", TERMS - 1, ""), TERMS,
                      1007);
    check_small_stack("refused: 200000-term ** chain", chain("x", " ** x", TERMS - 1, ""), TERMS,
                      1007);
}

static int setup(void **state)
{
    (void)state;
    tmp = cv_tmpdir_make("depth");
    return tmp ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return cv_tmpdir_remove(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plus_chain),
        cmocka_unit_test(test_transpose_chain),
        cmocka_unit_test(test_pow_chain),
        cmocka_unit_test(test_call_and_subscript_chains),
        cmocka_unit_test(test_deep_brackets),
        cmocka_unit_test(test_chain_below_limit_compiles),
        cmocka_unit_test(test_cuir_deep_nesting),
        cmocka_unit_test(test_small_thread_stack),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
