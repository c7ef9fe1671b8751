/* Symbols and debugging (issue 13) on the lenet example:
 *   - the symbol map: JSON round trip, malformed maps refused, addresses;
 *   - `-g` changes no code: .text of a -g and a plain build are identical,
 *     and the -g map records model lines and code ranges;
 *   - gdb stops at `break lenet.cvl.py:<line of the second conv>` in a C
 *     driver linked against the -g library, and `bt` shows that line;
 *   - cuvil diff names the op whose kernel a test-only fault corrupts;
 *   - cuvil run --trace names the model line of a kernel that crashes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/npy.h"
#include "compiler-core/cuvil.h"
#include "symbols/symbols.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

static char *g_dir;             /* owned: lenet.cvl.py, its weights, builds */
static int g_conv2_line;        /* the line of the second conv2d in lenet.cvl.py */

static int find_conv2_line(const char *text)
{
    int line = 1, seen = 0;
    for (const char *p = text; *p; p++) {
        if (strncmp(p, "cvl.conv2d(", 11) == 0 && ++seen == 2)
            return line;
        if (*p == '\n')
            line++;
    }
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("symbols");
    char script[1024], src[1024];
    snprintf(script, sizeof script, "%s/examples/models/gen_weights.py", cv_tmpdir_src_root());
    const char *args[] = {script, g_dir, "lenet", NULL};
    if (!g_dir || cv_pyrun("import runpy, sys\npath = sys.argv[1]\nsys.argv = [path] + "
                           "sys.argv[2:]\nrunpy.run_path(path, run_name='__main__')\n",
                           args, NULL) != 0)
        return -1;
    snprintf(src, sizeof src, "%s/examples/models/lenet.cvl.py", cv_tmpdir_src_root());
    size_t len;
    char *text = cv_tmpdir_read_file(src, &len);
    int rc = text && cv_tmpdir_write(g_dir, "lenet.cvl.py", text, len) == 0 ? 0 : -1;
    g_conv2_line = text ? find_conv2_line(text) : 0;
    free(text);
    /* One input batch of 2 for diff and run. */
    static float x[2 * 28 * 28];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)((i * 7919) % 255) / 127.0f - 1.0f;
    int64_t dims[4] = {2, 1, 28, 28};
    char *xp = cv_tmpdir_path(g_dir, "x.npy");
    cv_diag d;
    cv_diag_init(&d);
    if (rc == 0 && g_conv2_line > 0)
        rc = cv_npy_write(xp, CV_F32, 4, dims, x, &d);
    cv_diag_free(&d);
    free(xp);
    return g_conv2_line > 0 ? rc : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return cv_tmpdir_remove(g_dir);
}

/* Compiles lenet into g_dir/<sub> (debug or not); returns the dir (owned). */
static char *compile_lenet(const char *sub, bool debug)
{
    char *model = cv_tmpdir_path(g_dir, "lenet.cvl.py"), *out = cv_tmpdir_path(g_dir, sub);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(model, 0, &d);
    cv_compile_opts o = {.opt_level = 2, .emit = CV_EMIT_SO | CV_EMIT_H, .out_dir = out,
                         .debug = debug};
    cv_compile_info info;
    int rc = m ? cv_compile_native(m, &o, &info, &d) : -1;
    if (rc)
        cv_diag_print(&d, stderr, false);
    assert_int_equal(rc, 0);
    cv_module_free(m);
    cv_diag_free(&d);
    free(model);
    return out;
}

static char *read_lib(const char *dir, size_t *len)
{
    char *path = cv_tmpdir_path(dir, "liblenet.so");
    char *data = cv_tmpdir_read_file(path, len);
    assert_non_null(data);
    free(path);
    return data;
}

static void load_map(const char *dir, cv_symmap *m)
{
    cv_diag d;
    cv_diag_init(&d);
    if (cv_symmap_load(dir, m, &d))
        cv_diag_print(&d, stderr, false);
    assert_int_equal(d.n_errors, 0);
    cv_diag_free(&d);
}

/* ---- the map on its own ---------------------------------------------------- */

static void test_map_round_trip(void **state)
{
    (void)state;
    cv_symmap m;
    cv_symmap_init(&m);
    assert_int_equal(cv_symmap_alloc(&m, 2, 1, 1), 0);
    m.model = "tiny";
    m.locs = true;
    static cv_sym_loc l0 = {"tiny.cvl.py", 4, 9}, l1 = {"Relu_7", 0, 0};
    m.ops[0] = (cv_sym_op){.index = 0, .op = "conv2d", .value = "a", .path = "@tiny>%a=conv2d",
                           .locs = &l0, .n_locs = 1};
    m.ops[1] = (cv_sym_op){.index = 1, .op = "relu", .value = "b", .locs = &l1, .n_locs = 1};
    static int ops[2] = {0, 1};
    m.kernels[0] = (cv_sym_kernel){.name = "k0_conv2d", .ops = ops, .n_ops = 2, .lo = 0x100,
                                   .hi = 0x180};
    m.tensors[0] = (cv_sym_tensor){.value = "b", .op = 1, .dtype = "f32", .shape = "[N,4]",
                                   .storage = "arena", .offset = 64, .offset_expr = "64*d[0]",
                                   .bytes = 16};
    char *json = cv_symmap_to_json(&m);
    assert_non_null(json);
    cv_symmap back;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_symmap_parse(json, strlen(json), "t.cvsym", &back, &d), 0);
    assert_string_equal(back.kernels[0].name, "k0_conv2d");
    assert_int_equal(back.kernels[0].n_ops, 2);
    assert_int_equal(cv_symmap_find_addr(&back, 0x17f), 0);
    assert_int_equal(cv_symmap_find_addr(&back, 0x180), -1);
    assert_int_equal(back.tensors[0].offset, 64);
    assert_string_equal(back.ops[0].path, "@tiny>%a=conv2d");
    assert_null(back.ops[1].path);
    char buf[256];
    cv_symmap_describe_kernel(&back, 0, buf, sizeof buf);
    assert_string_equal(buf, "k0_conv2d: conv2d + relu at tiny.cvl.py:4:9 (%a, %b)");
    cv_symmap_describe_op(&back, 1, buf, sizeof buf);
    assert_string_equal(buf, "node Relu_7");
    cv_symmap_free(&back);
    /* A kernel naming an op that does not exist is refused. */
    static const char ops_at[] = "\"ops\": [\n    0,";
    char *bad = strstr(json, ops_at);
    assert_non_null(bad);
    bad[sizeof ops_at - 3] = '7';
    assert_int_equal(cv_symmap_parse(json, strlen(json), "bad.cvsym", &back, &d), -1);
    assert_int_equal(d.v[d.n - 1].code, 5200);
    free(json);
    cv_diag_free(&d);
    cv_symmap_free(&m);     /* the arrays were the map's; the strings static */
}

/* ---- -g: same code, debug info, a map with lines ---------------------------- */

static void test_debug_build_same_text(void **state)
{
    (void)state;
    char *plain = compile_lenet("plain", false), *dbg = compile_lenet("dbg", true);
    size_t n1, n2, t1, t2;
    char *a = read_lib(plain, &n1), *b = read_lib(dbg, &n2);
    const void *ta, *tb, *info;
    size_t ninfo;
    assert_int_equal(cv_sym_elf_section(a, n1, ".text", &ta, &t1), 0);
    assert_int_equal(cv_sym_elf_section(b, n2, ".text", &tb, &t2), 0);
    assert_int_equal(t1, t2);
    assert_memory_equal(ta, tb, t1);
    assert_int_equal(cv_sym_elf_section(a, n1, ".debug_info", &info, &ninfo), -1);
    assert_int_equal(cv_sym_elf_section(b, n2, ".debug_info", &info, &ninfo), 0);
    /* The -g map holds lines and code ranges; the plain one no lines. */
    cv_symmap m;
    load_map(dbg, &m);
    assert_true(m.locs);
    int k = -1;
    for (int i = 0; i < m.n_ops && k < 0; i++)
        if (strcmp(m.ops[i].op, "conv2d") == 0 && m.ops[i].locs[0].line == g_conv2_line)
            k = cv_symmap_kernel_of_op(&m, i);
    assert_true(k >= 0);
    assert_true(m.kernels[k].hi > m.kernels[k].lo);
    assert_int_equal(cv_symmap_find_addr(&m, m.kernels[k].lo + 1), k);
    cv_symmap_free(&m);
    load_map(plain, &m);
    assert_false(m.locs);
    assert_int_equal(m.ops[0].n_locs, 0);
    cv_symmap_free(&m);
    free(a);
    free(b);
    free(plain);
    free(dbg);
}

/* ---- gdb ------------------------------------------------------------------------ */

static const char driver_c[] =
    "#include <stdio.h>\n#include \"lenet.h\"\n"
    "static float x[28 * 28], y[10];\n"
    "int main(void)\n{\n"
    "    int64_t n = 1;\n"
    "    cv_lenet_ctx *c = cv_lenet_create(1);\n"
    "    const void *in[1] = {x};\n    void *out[1] = {y};\n"
    "    int rc = c ? cv_lenet_run(c, in, out, &n) : -1;\n"
    "    cv_lenet_destroy(c);\n    return rc != 0;\n}\n";

static void test_gdb_breaks_at_model_line(void **state)
{
    (void)state;
    if (access("/usr/bin/gdb", X_OK) != 0 || access("/usr/bin/cc", X_OK) != 0)
        skip();   /* make deps installs gdb (scripts/packages.txt) */
    char *dbg = cv_tmpdir_path(g_dir, "dbg");
    char *lib = cv_tmpdir_path(dbg, "liblenet.so");
    if (access(lib, R_OK) != 0) {
        free(dbg);
        dbg = compile_lenet("dbg", true);
    }
    assert_int_equal(cv_tmpdir_write(g_dir, "driver.c", driver_c, strlen(driver_c)), 0);
    char *src = cv_tmpdir_path(g_dir, "driver.c"), *exe = cv_tmpdir_path(g_dir, "driver");
    char inc[4200], rpath[4200], brk[64];
    snprintf(inc, sizeof inc, "-I%s", dbg);
    snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", dbg);
    const char *cc[] = {"/usr/bin/cc", "-g", inc, src, "-o", exe, lib, rpath, NULL};
    assert_int_equal(cv_run_argv(cc, NULL, NULL), 0);
    snprintf(brk, sizeof brk, "break lenet.cvl.py:%d", g_conv2_line);
    const char *gdb[] = {"/usr/bin/gdb", "-batch", "-nx", "-ex", "set breakpoint pending on",
                         "-ex", brk, "-ex", "run", "-ex", "bt", exe, NULL};
    char *out = NULL;
    cv_run_argv(gdb, "/dev/null", &out);
    assert_non_null(out);
    char want[64];
    snprintf(want, sizeof want, "at lenet.cvl.py:%d", g_conv2_line);
    if (!strstr(out, "Breakpoint 1") || !strstr(out, "#0 ") || !strstr(strstr(out, "#0 "), want))
        fail_msg("gdb did not stop at %s with it in bt:\n%s", want, out);
    free(out);
    free(src);
    free(exe);
    free(lib);
    free(dbg);
}

/* ---- cuvil diff and run --trace (the sanitized binary) ------------------------- */

static const char *cuvil_bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b && access(b, X_OK) == 0 ? b : NULL;
}

/* Runs cuvil with CUVIL_TEST_FAULT_OP=fault in g_dir; stdout into *out,
 * stderr into *err; returns the exit status (128 + signal). */
static int run_cuvil(const char *fault, const char *const *args, char **out, char **err)
{
    char *errp = cv_tmpdir_path(g_dir, "stderr.txt");
    const char *argv[16] = {cuvil_bin()};
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    const char *old = getenv("ASAN_OPTIONS");
    char *saved = old ? strdup(old) : NULL;
    setenv("CUVIL_TEST_FAULT_OP", fault, 1);
    /* ASan would report the planted crash itself; let the handler run. */
    setenv("ASAN_OPTIONS", "handle_segv=0:detect_leaks=0", 1);
    int rc = cv_run_argv(argv, errp, out);
    unsetenv("CUVIL_TEST_FAULT_OP");
    if (saved)
        setenv("ASAN_OPTIONS", saved, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(saved);
    assert_int_equal(chdir(cwd), 0);
    size_t len;
    *err = cv_tmpdir_read_file(errp, &len);
    free(errp);
    return rc;
}

static void test_diff_names_faulty_op(void **state)
{
    (void)state;
    if (!cuvil_bin())
        skip();
    /* Op 3 of the compiled lenet is the second conv2d (relu fused into it). */
    const char *args[] = {"diff", "lenet.cvl.py", "--input", "x=x.npy", NULL};
    char *out = NULL, *err = NULL;
    int rc = run_cuvil("3", args, &out, &err);
    if (rc != 1 || !strstr(out, "first deviation: kernel k2_conv2d") ||
        !strstr(out, "ops: #3 conv2d"))
        fail_msg("exit %d\n%s\n%s", rc, out, err);
    char want[64];
    snprintf(want, sizeof want, "lenet.cvl.py:%d", g_conv2_line);
    assert_non_null(strstr(strstr(out, "first deviation"), want));
    /* Rows before it agree with the interpreter. */
    const char *mark = strstr(out, "<-- first deviation");
    assert_non_null(mark);
    for (const char *p = out; p < mark; p++)
        assert_false(*p == 'x' && p[1] == '\n');
    free(out);
    free(err);
}

static void test_trace_names_crashing_line(void **state)
{
    (void)state;
    if (!cuvil_bin())
        skip();
    const char *args[] = {"run", "lenet.cvl.py", "--input", "x=x.npy", "--trace", NULL};
    char *out = NULL, *err = NULL;
    int rc = run_cuvil("3:crash", args, &out, &err);
    char want[128];
    snprintf(want, sizeof want, "in kernel k2_conv2d: conv2d + relu at lenet.cvl.py:%d:",
             g_conv2_line);
    if (rc != 128 + 11 || !err || !strstr(err, "SIGSEGV") || !strstr(err, want))
        fail_msg("exit %d, want '%s' in:\n%s", rc, want, err ? err : "");
    free(out);
    free(err);
}

/* ONNX Runtime as the reference, through its C library from npm. */
static void test_diff_against_onnxruntime(void **state)
{
    (void)state;
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/node_modules/onnxruntime-node/bin/napi-v3/linux/x64/"
             "libonnxruntime.so.1", cv_tmpdir_src_root());
    if (!cuvil_bin() || access(lib, R_OK) != 0 || !cv_pyrun_has_module("onnx"))
        skip();
    char *model = cv_tmpdir_path(g_dir, "tiny.onnx");
    const char *pargs[] = {model, NULL};
    assert_int_equal(cv_pyrun(
        "import sys, numpy as np, onnx\n"
        "from onnx import helper as h, TensorProto as T, numpy_helper as nh\n"
        "w = nh.from_array(np.linspace(-1, 1, 32).reshape(4, 8).astype(np.float32), 'W')\n"
        "nodes = [h.make_node('MatMul', ['x', 'W'], ['m'], name='fc/MatMul'),\n"
        "         h.make_node('Relu', ['m'], ['r'], name='fc/Relu'),\n"
        "         h.make_node('Exp', ['r'], ['y'], name='head/Exp')]\n"
        "g = h.make_graph(nodes, 'tiny', [h.make_tensor_value_info('x', T.FLOAT, ['N', 4])],\n"
        "                 [h.make_tensor_value_info('y', T.FLOAT, ['N', 8])], [w])\n"
        "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]), sys.argv[1])\n",
        pargs, NULL), 0);
    static const float x[3 * 4] = {0.5f, -1, 0.25f, 2, -0.5f, 1, 0, -2, 1, 1, -1, 0.75f};
    int64_t dims[2] = {3, 4};
    char *xp = cv_tmpdir_path(g_dir, "xt.npy");
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_npy_write(xp, CV_F32, 2, dims, x, &d), 0);
    cv_diag_free(&d);
    /* Op 1 (relu, with exp fused into its kernel) goes wrong; matmul agrees. */
    const char *args[] = {"diff", "tiny.onnx", "--input", "x=xt.npy", "--against", "onnxruntime",
                          NULL};
    char *out = NULL, *err = NULL;
    int rc = run_cuvil("1", args, &out, &err);
    if (rc != 1 || !strstr(out, "node fc/MatMul") || !strstr(out, "first deviation: kernel k1_relu") ||
        !strstr(out, "ops: #1 relu, #2 exp"))
        fail_msg("exit %d\n%s\n%s", rc, out, err);
    const char *row0 = strstr(out, "#0 matmul"), *eol = row0 ? strchr(row0, '\n') : NULL;
    assert_non_null(eol);
    assert_false(eol[-1] == 'x' || memmem(row0, (size_t)(eol - row0), "<--", 3));
    free(out);
    free(err);
    free(model);
    free(xp);
}

/* A model with 70 inputs (more than diff's old fixed 64 for ONNX Runtime)
 * diffs cleanly against it. */
static void test_diff_many_inputs(void **state)
{
    (void)state;
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/node_modules/onnxruntime-node/bin/napi-v3/linux/x64/"
             "libonnxruntime.so.1", cv_tmpdir_src_root());
    if (!cuvil_bin() || access(lib, R_OK) != 0 || !cv_pyrun_has_module("onnx"))
        skip();
    enum { N_IN = 70 };
    const char *pargs[] = {g_dir, NULL};
    assert_int_equal(cv_pyrun(
        "import sys, os, numpy as np, onnx\n"
        "from onnx import helper as h, TensorProto as T\n"
        "names = ['x%d' % i for i in range(70)]\n"
        "g = h.make_graph([h.make_node('Sum', names, ['y'], name='sum')], 'wide',\n"
        "                 [h.make_tensor_value_info(n, T.FLOAT, [2, 3]) for n in names],\n"
        "                 [h.make_tensor_value_info('y', T.FLOAT, [2, 3])])\n"
        "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]),\n"
        "          os.path.join(sys.argv[1], 'wide.onnx'))\n"
        "for i, n in enumerate(names):\n"
        "    np.save(os.path.join(sys.argv[1], n + '.npy'),\n"
        "            np.full((2, 3), i * 0.25 - 8, np.float32))\n",
        pargs, NULL), 0);
    const char *argv[2 * N_IN + 8] = {cuvil_bin(), "diff", "wide.onnx", "--against",
                                      "onnxruntime"};
    char specs[N_IN][64];
    int n = 5;
    for (int i = 0; i < N_IN; i++) {
        snprintf(specs[i], sizeof specs[i], "x%d=x%d.npy", i, i);
        argv[n++] = "--input";
        argv[n++] = specs[i];
    }
    argv[n] = NULL;
    char cwd[4096], *errp = cv_tmpdir_path(g_dir, "stderr.txt"), *out = NULL;
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    int rc = cv_run_argv(argv, errp, &out);
    assert_int_equal(chdir(cwd), 0);
    size_t len;
    char *err = cv_tmpdir_read_file(errp, &len);
    if (rc != 0 || !strstr(out, "node sum"))
        fail_msg("exit %d\n%s\n%s", rc, out ? out : "", err ? err : "");
    free(err);
    free(out);
    free(errp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_round_trip),
        cmocka_unit_test(test_debug_build_same_text),
        cmocka_unit_test(test_gdb_breaks_at_model_line),
        cmocka_unit_test(test_diff_names_faulty_op),
        cmocka_unit_test(test_trace_names_crashing_line),
        cmocka_unit_test(test_diff_against_onnxruntime),
        cmocka_unit_test(test_diff_many_inputs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
