/* ONNX conformance on the cross targets: 75 of the ONNX project's backend
 * node tests (every op family the native backend serves) are imported as
 * the conformance runner does (shape inputs folded from the test data),
 * merged into ONE model, compiled for aarch64-linux-gnu and for
 * riscv64-linux-gnu (rv64gcv) at -O1, linked by Debian's cross gcc and run
 * under qemu-user in one process per target; every output must match the
 * ONNX reference output with the conformance tolerances (rtol 1e-3,
 * atol 1e-5; integers exactly).  The node tests are generated once by
 * tests/tools/gen_node_tests.py into $CUVIL_BUILD/cross-node-tests.
 * Skipped, with the reason, where qemu, the cross gcc or python3-onnx is
 * missing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sys/stat.h>

#include "compiler-core/frontends/onnx/onnx_import.h"
#include "tests/support/pyrun.h"
#include "tests/support/cross_testlib.h"

#define RTOL 1e-3
#define ATOL 1e-5
#define MAX_IO 8

/* The op modules of onnx/backend/test/case/node/ the tests below come from. */
static const char *const modules[] = {
    "abs", "add", "and", "argmax", "averagepool", "batchnorm", "cast", "clip", "concat", "conv",
    "div", "elu", "equal", "erf", "exp", "flatten", "gather", "gemm", "globalaveragepool",
    "greater", "hardsigmoid", "leakyrelu", "less", "log", "logsoftmax", "matmul", "max",
    "maxpool", "min", "mul", "neg", "pad", "pow", "reciprocal", "reducemax", "reducemean",
    "reducesum", "relu", "reshape", "selu", "sigmoid", "sign", "slice", "softmax", "softplus",
    "split", "sqrt", "sub", "sum", "tanh", "transpose", "where",
};

static const char *const node_tests[] = {
    "test_abs", "test_add_bcast", "test_add_uint8", "test_and_bcast4v3d",
    "test_argmax_keepdims_random", "test_argmax_no_keepdims_example_select_last_index",
    "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_same_upper",
    "test_averagepool_2d_strides", "test_basic_conv_with_padding",
    "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_autopad_same",
    "test_batchnorm_epsilon", "test_cast_FLOAT_to_FLOAT16", "test_cast_FLOAT16_to_FLOAT",
    "test_clip_default_int8_min", "test_clip_splitbounds", "test_concat_3d_axis_negative_2",
    "test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_div_bcast", "test_div_uint8",
    "test_elu", "test_equal_bcast", "test_erf", "test_exp", "test_flatten_negative_axis2",
    "test_gather_2d_indices", "test_gather_negative_indices", "test_gemm_all_attributes",
    "test_gemm_transposeA", "test_gemm_default_single_elem_vector_bias", "test_globalaveragepool",
    "test_greater_bcast", "test_hardsigmoid", "test_leakyrelu", "test_less_bcast", "test_log",
    "test_logsoftmax_axis_1", "test_logsoftmax_large_number_expanded", "test_matmul_3d",
    "test_matmul_4d", "test_max_float16", "test_max_int64", "test_min_uint8",
    "test_maxpool_2d_ceil", "test_maxpool_2d_dilations", "test_maxpool_2d_same_lower",
    "test_maxpool_2d_uint8", "test_mul_bcast", "test_neg", "test_pow_bcast_array",
    "test_pow_types_int32_int32", "test_reciprocal",
    "test_reduce_max_negative_axes_keepdims_random", "test_reduce_mean_do_not_keepdims_random",
    "test_reduce_sum_keepdims_random", "test_reduce_sum_empty_axes_input_noop_example",
    "test_relu", "test_reshape_negative_extended_dims", "test_selu", "test_sigmoid", "test_sign",
    "test_slice_neg_steps", "test_slice_default_axes", "test_softmax_axis_0",
    "test_softmax_large_number", "test_softplus", "test_split_variable_parts_2d", "test_sqrt",
    "test_sub_uint8", "test_sum_example", "test_tanh", "test_transpose_all_permutations_4",
    "test_where_long_example",
};
#define N_TESTS ((int)(sizeof node_tests / sizeof node_tests[0]))

static char *g_dir;         /* owned: the generated node tests */
static bool g_temp;         /* g_dir is a temporary directory (no $CUVIL_BUILD) */

/* ---- generating and reading the node tests ---------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    const char *build = getenv("CUVIL_BUILD");
    char stamp_text[1024] = "";
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
        strncat(stamp_text, modules[i], sizeof stamp_text - strlen(stamp_text) - 2);
        strcat(stamp_text, " ");
    }
    g_temp = !build;
    g_dir = build ? cv_fs_join(build, "cross-node-tests") : cv_tmpdir_make("cross-node");
    char *stamp = cv_fs_join(g_dir, ".modules");
    size_t len = 0;
    char *have = cv_tmpdir_read_file(stamp, &len);
    bool fresh = have && strcmp(have, stamp_text) == 0;
    free(have);
    if (!fresh && cv_pyrun_has_module("onnx")) {
        mkdir(g_dir, 0755);
        char script[1024];
        snprintf(script, sizeof script, "%s/tests/tools/gen_node_tests.py", cv_tmpdir_src_root());
        const char *args[64] = {script, g_dir};
        int n = 2;
        for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
            args[n++] = modules[i];
        args[n] = NULL;
        if (cv_pyrun("import runpy, sys\npath = sys.argv[1]\nsys.argv = [path] + sys.argv[2:]\n"
                     "runpy.run_path(path, run_name='__main__')\n", args, NULL) == 0)
            cv_tmpdir_write(g_dir, ".modules", stamp_text, strlen(stamp_text));
    }
    free(stamp);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (g_temp)
        cv_tmpdir_remove(g_dir);
    else
        free(g_dir);
    return 0;
}

static int read_pb(const char *path, cv_tensor *t)
{
    size_t len;
    char *buf = cv_tmpdir_read_file(path, &len);
    cv_diag d;
    cv_diag_init(&d);
    int rc = buf ? cv_onnx_read_tensor_pb(buf, len, path, t, &d) : -1;
    free(buf);
    cv_diag_free(&d);
    return rc;
}

/* One node test: its data set 0 and its model imported against it. */
typedef struct node_test {
    cv_tensor in[MAX_IO], want[MAX_IO];
    int n_in, n_want;
    bool bound[MAX_IO];     /* folded into a constant by the importer */
    cv_module *m;
} node_test;

static int bind_from_data(void *user, int index, const char *name, cv_tensor *t)
{
    node_test *nt = user;
    if (index < 0 || index >= nt->n_in ||
        cv_tensor_alloc(t, nt->in[index].dtype, nt->in[index].rank, nt->in[index].dims) < 0)
        return -1;
    memcpy(t->data, nt->in[index].data, cv_tensor_nbytes(t));
    nt->bound[index] = true;
    return 0;
}

static int load_test(const char *name, node_test *nt, char *msg, size_t size)
{
    char path[4096];
    memset(nt, 0, sizeof *nt);
    for (int k = 0; k < 2; k++) {
        cv_tensor *v = k ? nt->want : nt->in;
        int *n = k ? &nt->n_want : &nt->n_in;
        for (; *n < MAX_IO; ++*n) {
            snprintf(path, sizeof path, "%s/%s/test_data_set_0/%s_%d.pb", g_dir, name,
                     k ? "output" : "input", *n);
            if (access(path, R_OK) != 0)
                break;
            if (read_pb(path, &v[*n]))
                return xc_fail(msg, size, "%s: cannot read %s", name, path);
        }
    }
    snprintf(path, sizeof path, "%s/%s/model.onnx", g_dir, name);
    size_t len;
    char *model = cv_tmpdir_read_file(path, &len);
    if (!model)
        return xc_fail(msg, size, "%s: no model.onnx (node tests not generated?)", name);
    cv_diag d;
    cv_diag_init(&d);
    cv_onnx_options opts = {bind_from_data, nt, NULL};
    nt->m = cv_onnx_load_opts(model, len, path, &opts, &d);
    int rc = nt->m && cv_verify(nt->m, 0, &d) == 0 ? 0 : -1;
    if (rc)
        xc_fail(msg, size, "%s: import failed: %s", name, d.n ? d.v[0].msg : "?");
    free(model);
    cv_diag_free(&d);
    return rc;
}

static void free_test(node_test *nt)
{
    for (int i = 0; i < nt->n_in; i++)
        cv_tensor_free(&nt->in[i]);
    for (int i = 0; i < nt->n_want; i++)
        cv_tensor_free(&nt->want[i]);
    cv_module_free(nt->m);
}

/* ---- merging the tests into one model ------------------------------------------ */

/* A copy of type t with its symbols renamed <sym>_t<tag> in dst. */
static cv_type retype(cv_module *dst, const cv_type *t, int tag)
{
    cv_type r = *t;
    for (int k = 0; k < r.shape.rank; k++)
        if (r.shape.d[k].sym) {
            char name[96];
            snprintf(name, sizeof name, "%s_t%d", r.shape.d[k].sym, tag);
            r.shape.d[k].sym = cv_module_intern(dst, name, strlen(name));
        }
    return r;
}

/* Appends src (test number tag) to dst: its inputs, params and ops; its
 * returns land in rets.  Attributes and locations stay in src's arena, so
 * src outlives dst. */
static int merge(cv_func *dst, const cv_func *src, int tag, cv_value **rets, cv_diag *d)
{
    cv_value **map = calloc((size_t)src->n_values + 1, sizeof *map);
    char name[160];
    int rc = map ? 0 : -1;
    for (int i = 0; rc == 0 && i < src->n_inputs; i++) {
        const cv_value *v = src->inputs[i];
        cv_type t = retype(dst->module, &v->type, tag);
        snprintf(name, sizeof name, "t%d_%s", tag, v->name);
        map[v->id] = cv_func_add_input(dst, name, &t);
    }
    for (int i = 0; rc == 0 && i < src->n_params; i++) {
        const cv_param *p = src->params[i];
        snprintf(name, sizeof name, "t%d_%s", tag, p->value->name);
        cv_param *q = p->data ? cv_func_add_dense(dst, name, &p->value->type, p->data, p->nbytes)
                              : NULL;
        rc = q ? 0 : -1;
        if (q)
            map[p->value->id] = q->value;
    }
    for (int i = 0; rc == 0 && i < src->n_ops; i++) {
        const cv_op *o = src->ops[i];
        cv_value *operands[16];
        for (int k = 0; k < o->n_operands && k < 16; k++)
            operands[k] = map[o->operands[k]->id];
        cv_op *op = cv_op_new(dst, o->name, operands, o->n_operands < 16 ? o->n_operands : 16);
        for (int k = 0; k < o->n_attrs; k++)
            cv_op_put_attr(op, &o->attrs[k]);
        for (int k = 0; k < o->n_locs; k++)
            cv_op_add_loc(op, o->locs[k].file, o->locs[k].line, o->locs[k].col);
        rc = o->n_operands <= 16 ? cv_op_finish(op, o->n_results, d) : -1;
        for (int k = 0; rc == 0 && k < o->n_results; k++)
            map[o->results[k]->id] = op->results[k];
    }
    for (int i = 0; rc == 0 && i < src->n_returns; i++)
        rets[i] = map[src->returns[i]->id];
    free(map);
    return rc;
}

/* ---- running and comparing ------------------------------------------------------ */

static bool is_float(cv_dtype t)
{
    return t == CV_F32 || t == CV_F16 || t == CV_BF16 || t == CV_F64;
}

/* The conformance runner's comparison. */
static int compare(const cv_tensor *got, const cv_tensor *want, char *msg, size_t size)
{
    if (got->dtype != want->dtype || got->numel != want->numel)
        return xc_fail(msg, size, "dtype or size differs");
    for (int64_t i = 0; i < want->numel; i++) {
        if (!is_float(want->dtype)) {
            if (cv_tensor_get_i64(got, i) != cv_tensor_get_i64(want, i))
                return xc_fail(msg, size, "element %lld is %lld, expected %lld", (long long)i,
                               (long long)cv_tensor_get_i64(got, i),
                               (long long)cv_tensor_get_i64(want, i));
            continue;
        }
        double a = cv_tensor_get(got, i), b = cv_tensor_get(want, i);
        if ((isnan(a) && isnan(b)) || a == b)
            continue;
        if (!(fabs(a - b) <= ATOL + RTOL * fabs(b)))
            return xc_fail(msg, size, "element %lld is %.9g, expected %.9g", (long long)i, a, b);
    }
    return 0;
}

static node_test g_tests[N_TESTS];

static void check_target(const xc_target *t)
{
    if (!xc_available(t))
        skip();
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/.modules", g_dir);
    if (access(probe, R_OK) != 0) {
        printf("skipping %s: the ONNX node tests could not be generated (python3-onnx "
               "missing?)\n", t->name);
        skip();
    }
    char msg[4096] = "";
    cv_module *m = cv_module_new("cross-conformance.onnx");
    cv_func *f = cv_func_new(m, "conformance");
    cv_tensor ins[N_TESTS * MAX_IO], want[N_TESTS * MAX_IO], got[N_TESTS * MAX_IO];
    int first_out[N_TESTS + 1], n_ins = 0, n_out = 0;
    cv_value *rets[N_TESTS * MAX_IO];
    cv_diag d;
    cv_diag_init(&d);
    for (int i = 0; i < N_TESTS; i++) {
        node_test *nt = &g_tests[i];
        if (load_test(node_tests[i], nt, msg, sizeof msg))
            fail_msg("%s", msg);
        if (merge(f, nt->m->funcs[0], i, rets + n_out, &d))
            fail_msg("%s: merging failed: %s", node_tests[i], d.n ? d.v[0].msg : "?");
        for (int k = 0; k < nt->n_in; k++)
            if (!nt->bound[k])
                ins[n_ins++] = nt->in[k];
        first_out[i] = n_out;
        for (int k = 0; k < nt->n_want; k++)
            want[n_out++] = nt->want[k];
    }
    first_out[N_TESTS] = n_out;
    cv_func_set_returns(f, rets, n_out);
    for (int i = 0; i < n_out; i++)
        cv_func_add_output_type(f, &rets[i]->type);
    if (cv_verify(m, 0, &d))
        fail_msg("the merged model does not verify: %s", d.n ? d.v[0].msg : "?");
    if (xc_run(t, m, 1, ins, n_ins, want, n_out, got, msg, sizeof msg))
        fail_msg("%s", msg);
    int failed = 0;
    for (int i = 0; i < N_TESTS; i++) {
        bool ok = true;
        for (int k = first_out[i]; k < first_out[i + 1]; k++)
            if (compare(&got[k], &want[k], msg, sizeof msg)) {
                printf("FAIL %s on %s: output %d: %s\n", node_tests[i], t->name,
                       k - first_out[i], msg);
                ok = false;
            }
        failed += !ok;
    }
    printf("%s: %d of %d ONNX node tests match the reference under %s\n", t->name,
           N_TESTS - failed, N_TESTS, t->qemu);
    for (int i = 0; i < n_out; i++)
        cv_tensor_free(&got[i]);
    for (int i = 0; i < N_TESTS; i++)
        free_test(&g_tests[i]);
    cv_module_free(m);
    cv_diag_free(&d);
    assert_int_equal(failed, 0);
}

static void test_aarch64(void **state) { check_target(&xc_aarch64); }
static void test_riscv64(void **state) { check_target(&xc_riscv64); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aarch64),
        cmocka_unit_test(test_riscv64),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
