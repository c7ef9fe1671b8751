/* ONNX RNN, LSTM and GRU over a dynamic number of steps (tests/tools/
 * export_rnn.py, made into $CUVIL_BUILD/models/rnn by make test; skipped
 * when PyTorch is missing), each imported once and run at every exported
 * shape in the interpreter and natively, against references that are not
 * Cuvil's: torch's nn.RNN exported (Relu bidirectional, Tanh); hand-built
 * nodes with sequence_lens (LSTM, GRU, Relu RNN, bidirectional) against
 * torch's packed sequences; an LSTM with peepholes against onnx's own
 * LSTM_Helper.  Max abs error <= 1e-4, or 1e-4 of the output's range.  A
 * Sigmoid plain RNN over a dynamic T is refused (CV4306 naming the node). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "compiler-core/frontends/onnx/onnx_import.h"
#include "tests/support/backend_testlib.h"
#include "tests/support/model_refs_testlib.h"

enum { MAX_IO = 4, MAX_SHAPES = 4 };

static char *path(const char *model, int k, const char *kind, int i)
{
    const char *build = getenv("CUVIL_BUILD");
    char *p = malloc(4096);
    if (k >= 0)
        snprintf(p, 4096, "%s/models/rnn/%s.%d.%s%d.npy", build ? build : "build", model, k,
                 kind, i);
    else
        snprintf(p, 4096, "%s/models/rnn/%s.onnx", build ? build : "build", model);
    return p;
}

static int read_io(const char *model, int k, const char *kind, cv_tensor *t)
{
    int n = 0;
    for (bool have = true; have && n < MAX_IO; n += have) {
        char *p = path(model, k, kind, n);
        have = tm_read_npy(p, &t[n]);
        free(p);
    }
    return n;
}

static void compare_all(const char *name, const char *how, int k, cv_tensor *got,
                        const cv_tensor *want, int n)
{
    char what[128];
    snprintf(what, sizeof what, "%s %s, shape %d", name, how, k);
    for (int i = 0; i < n; i++) {
        assert_int_equal(got[i].rank, want[i].rank);
        for (int a = 0; a < want[i].rank; a++)
            assert_int_equal(got[i].dims[a], want[i].dims[a]);
        tm_compare(what, i, &got[i], &want[i]);
        cv_tensor_free(&got[i]);
    }
}

static void check(const char *name)
{
    char *onnx = path(name, -1, NULL, 0);
    if (access(onnx, R_OK) != 0) {
        free(onnx);
        skip();
    }
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_onnx_load(onnx, &d);
    free(onnx);
    if (!m)
        cv_diag_print(&d, stderr, false);
    assert_non_null(m);
    /* One rnn op over the symbolic steps, not an unrolling. */
    int rnn_ops = 0;
    for (int i = 0; i < m->funcs[0]->n_ops; i++)
        rnn_ops += !strcmp(m->funcs[0]->ops[i]->name, "rnn");
    assert_int_equal(rnn_ops, 1);
    static cv_tensor in[MAX_SHAPES][MAX_IO], want[MAX_SHAPES][MAX_IO];
    int n_in[MAX_SHAPES], n_out[MAX_SHAPES], n = 0;
    while (n < MAX_SHAPES && (n_in[n] = read_io(name, n, "in", in[n])) > 0) {
        n_out[n] = read_io(name, n, "out", want[n]);
        n++;
    }
    assert_true(n >= 3);
    cv_tensor got[MAX_IO] = {{0}};
    for (int k = 0; k < n; k++) {
        if (cv_interp_run(m->funcs[0], in[k], n_in[k], got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: interpreter failed at %d", name, k);
        }
        compare_all(name, "interpreter", k, got, want[k], n_out[k]);
    }
    char msg[4096] = "";
    char *dir = bk_compile(m, "native", 1, CV_EMIT_SO, msg, sizeof msg);
    if (!dir)
        fail_msg("%s: %s", name, msg);
    cv_native *nat = NULL;
    assert_int_equal(cv_native_open(dir, 2, &nat, &d), 0);
    for (int k = 0; k < n; k++) {
        if (cv_native_run(nat, in[k], n_in[k], got, &d)) {
            cv_diag_print(&d, stderr, false);
            fail_msg("%s: native run failed at %d", name, k);
        }
        compare_all(name, "native", k, got, want[k], n_out[k]);
    }
    cv_native_close(nat);
    cv_tmpdir_remove(dir);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < n_in[k]; i++)
            cv_tensor_free(&in[k][i]);
        for (int i = 0; i < n_out[k]; i++)
            cv_tensor_free(&want[k][i]);
    }
    cv_module_free(m);
    cv_diag_free(&d);
}

/* What the rnn op does not take stays a coded refusal naming the node. */
static void test_refused(void **state)
{
    (void)state;
    char *onnx = path("rnn_sigmoid", -1, NULL, 0);
    if (access(onnx, R_OK) != 0) {
        free(onnx);
        skip();
    }
    cv_diag d;
    cv_diag_init(&d);
    assert_null(cv_onnx_load(onnx, &d));
    free(onnx);
    char msg[2048] = "";
    bk_diag_msg(&d, msg, sizeof msg);
    if (!strstr(msg, "CV4306") || !strstr(msg, "sigmoid_rnn"))
        fail_msg("expected CV4306 naming node sigmoid_rnn, got: %s", msg);
    cv_diag_free(&d);
}

static void test_rnn_relu(void **state) { (void)state; check("rnn_relu"); }
static void test_rnn_tanh(void **state) { (void)state; check("rnn_tanh"); }
static void test_lstm_lens(void **state) { (void)state; check("lstm_lens"); }
static void test_gru_lens(void **state) { (void)state; check("gru_lens"); }
static void test_rnn_lens(void **state) { (void)state; check("rnn_lens"); }
static void test_lstm_peep(void **state) { (void)state; check("lstm_peep"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rnn_relu),
        cmocka_unit_test(test_rnn_tanh),
        cmocka_unit_test(test_lstm_lens),
        cmocka_unit_test(test_gru_lens),
        cmocka_unit_test(test_rnn_lens),
        cmocka_unit_test(test_lstm_peep),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
