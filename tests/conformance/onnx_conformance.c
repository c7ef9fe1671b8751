/* ONNX backend node-test conformance runner.
 *
 *   onnx_conformance [--json OUT] [--filter SUBSTR] [--backend interp|native|c99] [-v] NODE_DIR
 *
 * NODE_DIR holds the ONNX project's generated node tests (test_X/model.onnx
 * and test_data_set_N/{input,output}_N.pb).  Each test runs in a child
 * process (a crash or a hang fails that test only): the model is imported,
 * verified and run by the reference interpreter (or, with --backend native,
 * compiled at -O1 for the host into a temporary directory, loaded and run;
 * a model the backend cannot compile, CV5xxx, is unsupported; with --backend
 * c99, emitted as C and built with gcc -std=c99 -pedantic -Wall -Wextra
 * -Werror into the shared object instead), and every output is
 * compared with rtol 1e-3, atol 1e-5 (exactly for integer and bool outputs).
 * Prints a per-op table (passed / failed / unsupported) with totals and
 * writes the JSON report.  --backend cuda: onnx_cuda.c (a GPU bundle, run
 * on the GPU machine, then its log read back). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fs.h"
#include "compiler-core/backend/c99/c99.h"
#include "compiler-core/cuvil.h"
#include "compiler-core/frontends/onnx/onnx_import.h"
#include "onnx/onnx.pb-c.h"
#include "tests/conformance/conformance.h"
#include "tests/conformance/onnx_cuda.h"

#define RTOL 1e-3
#define ATOL 1e-5
#define TEST_TIMEOUT_S 120
#define MAX_IO 16
/* Tensors of all sequence and optional inputs of a data set together, and
 * of its outputs once flattened (the importer flattens them the same way). */
#define MAX_LIST 64
/* Test directories fit DIR_BUF; files inside them get some room more. */
#define DIR_BUF 4096
#define FILE_BUF (DIR_BUF + 256)

/* Set once by main before any test is forked. */
static bool g_native;
static bool g_c99;      /* the native path through the C99 backend and gcc */
static bool g_cuda;     /* compiled for the GPU into a bundle (onnx_cuda.c) */

static int fail(result *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(result *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->status = status;
    return -1;
}

/* The first error of d as "CVnnnn: message"; unsupported when its code is
 * in [unsup_lo, unsup_hi). */
static int fail_diag_range(result *r, const cv_diag *d, const char *stage, int unsup_lo,
                           int unsup_hi)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].sev == CV_SEV_ERROR) {
            int unsup = d->v[i].code >= unsup_lo && d->v[i].code < unsup_hi;
            return fail(r, unsup ? ST_UNSUP : ST_FAIL, "%s: CV%04d: %s", stage, d->v[i].code,
                        d->v[i].msg);
        }
    return fail(r, ST_FAIL, "%s failed without a diagnostic", stage);
}

/* Unsupported when the front end cannot express the model (4xxx). */
static int fail_diag(result *r, const cv_diag *d, const char *stage)
{
    return fail_diag_range(r, d, stage, 4000, 5000);
}

static int read_pb(const char *path, cv_tensor *t, result *r)
{
    cv_diag d;
    cv_diag_init(&d);
    char *buf = NULL;   /* owned */
    size_t len = 0;
    int rc = cv_fs_read_file(path, 1u << 30, &buf, &len, &d);
    if (rc == 0)
        rc = cv_onnx_read_tensor_pb(buf, len, path, t, &d);
    if (rc < 0)
        fail_diag(r, &d, "reading test data");
    free(buf);
    cv_diag_free(&d);
    return rc;
}

static bool is_float(cv_dtype t)
{
    return t == CV_F32 || t == CV_F16 || t == CV_BF16 || t == CV_F64;
}

static const char *dims_str(const cv_tensor *t, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* numpy has no bfloat16: ONNX's generator writes bfloat16 test tensors as
 * uint16 tensors of the same bits, so a uint16 tensor stands for a bfloat16
 * one where the model says bfloat16. */
static cv_dtype data_dtype(cv_dtype have, cv_dtype model)
{
    return have == CV_U16 && model == CV_BF16 ? CV_BF16 : have;
}

static int compare(const cv_tensor *got, const cv_tensor *want_in, int k, result *r)
{
    cv_tensor want_bits = *want_in;
    want_bits.dtype = data_dtype(want_in->dtype, got->dtype);
    const cv_tensor *want = &want_bits;
    if (got->dtype != want->dtype)
        return fail(r, ST_FAIL, "output %d is %s, expected %s", k, cv_dtype_name(got->dtype),
                    cv_dtype_name(want->dtype));
    bool same = got->rank == want->rank;
    for (int i = 0; same && i < got->rank; i++)
        same = got->dims[i] == want->dims[i];
    if (!same) {
        char a[160], b[160];
        return fail(r, ST_FAIL, "output %d has shape %s, expected %s", k,
                    dims_str(got, a, sizeof a), dims_str(want, b, sizeof b));
    }
    for (int64_t i = 0; i < want->numel; i++) {
        double a = cv_tensor_get(got, i), b = cv_tensor_get(want, i);
        if (!is_float(want->dtype)) {
            if (cv_tensor_get_i64(got, i) != cv_tensor_get_i64(want, i))
                return fail(r, ST_FAIL, "output %d element %lld is %lld, expected %lld", k,
                            (long long)i, (long long)cv_tensor_get_i64(got, i),
                            (long long)cv_tensor_get_i64(want, i));
            continue;
        }
        if ((isnan(a) && isnan(b)) || a == b)
            continue;
        double err = fabs(a - b);
        if (isnan(err))
            err = INFINITY;
        if (err > r->max_abs_err)
            r->max_abs_err = err;
        if (!(err <= ATOL + RTOL * fabs(b)))
            return fail(r, ST_FAIL, "output %d element %lld is %.9g, expected %.9g", k,
                        (long long)i, a, b);
    }
    return 0;
}

static void free_tensors(cv_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        cv_tensor_free(&t[i]);
}

/* A test data set being run: its inputs, and which of them the importer
 * folded into constants (shape specialisation). */
typedef struct data_set {
    cv_tensor in[MAX_IO];
    int n_in;
    bool bound[MAX_IO];
    char kind[MAX_IO];      /* cv_onnx_type_kind of each input */
    cv_tensor items[MAX_LIST];   /* sequence/optional inputs' tensors */
    int n_items, first[MAX_IO], count[MAX_IO];
    bool absent[MAX_IO];
} data_set;

static int bind_from_data(void *user, int index, const char *name, cv_tensor *t)
{
    data_set *ds = user;
    if (index < 0 || index >= ds->n_in ||
        cv_tensor_alloc(t, ds->in[index].dtype, ds->in[index].rank, ds->in[index].dims) < 0)
        return -1;
    memcpy(t->data, ds->in[index].data, cv_tensor_nbytes(t));
    ds->bound[index] = true;
    return 0;
}

/* Sequence and optional inputs become constants (cv_onnx_options.bind_list). */
static int bind_list_from_data(void *user, int index, const char *name, cv_tensor *elems,
                               int max, bool *absent)
{
    data_set *ds = user;
    (void)name;
    if (index < 0 || index >= ds->n_in || ds->kind[index] == 't' || ds->count[index] > max)
        return -1;
    for (int i = 0; i < ds->count[index]; i++) {
        const cv_tensor *t = &ds->items[ds->first[index] + i];
        if (cv_tensor_alloc(&elems[i], t->dtype, t->rank, t->dims) < 0) {
            for (int k = 0; k < i; k++)
                cv_tensor_free(&elems[k]);
            return -1;
        }
        memcpy(elems[i].data, t->data, cv_tensor_nbytes(t));
    }
    *absent = ds->absent[index];
    ds->bound[index] = true;
    return ds->count[index];
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Compiles f's module natively into a temporary directory, loads and runs
 * it.  A compile error the backend reports as 5000..5039 (no codegen for an
 * op, a link failure, ...) makes the test unsupported; a missing plugin
 * (5040), a load or a run error fails it. */
static int native_run(cv_module *m, const cv_tensor *in, int n, cv_tensor *out, result *r,
                      cv_diag *d)
{
    const char *base = getenv("TMPDIR");
    char dir[DIR_BUF];
    snprintf(dir, sizeof dir, "%s/cv-conf-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        return fail(r, ST_FAIL, "mkdtemp: %s", strerror(errno));
    cv_compile_opts o = {.target = "native", .opt_level = 1, .emit = g_c99 ? CV_EMIT_C : CV_EMIT_SO,
                         .out_dir = dir};
    cv_compile_info info;
    cv_native *nat = NULL;
    bool missing = false;
    static const char *const o1[] = {"-O1"};   /* as the native path's -O1 */
    int rc = 0;
    if (cv_compile_native(m, &o, &info, d) < 0)
        rc = fail_diag_range(r, d, "native compile", 5000, 5040);
    else if (g_c99 && (cv_c99_build_shared("gcc", dir, info.name, o1, 1, &missing, d) < 0 ||
                       missing))
        rc = missing ? fail(r, ST_FAIL, "gcc is not installed")
                     : fail_diag_range(r, d, "gcc build of the C99 output", 0, 0);
    else if (cv_native_open(dir, 1, &nat, d) < 0)
        rc = fail_diag_range(r, d, "native load", 0, 0);
    else if (cv_native_run(nat, in, n, out, d) < 0)
        rc = fail_diag_range(r, d, "native run", 0, 0);
    cv_native_close(nat);
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}

/* Imports the model specialised to ds, verifies and runs it. */
static int import_and_run(const char *model, size_t len, const char *path, data_set *ds,
                          cv_tensor *out, int n_want, result *r)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_onnx_options opts = {bind_from_data, ds, bind_list_from_data};
    cv_module *m = cv_onnx_load_opts(model, len, path, &opts, &d);
    int rc = 0;
    if (!m || cv_verify(m, 0, &d) != 0 || m->n_funcs < 1) {
        rc = fail_diag(r, &d, m ? "verifier" : "import");
        goto done;
    }
    cv_tensor run_in[MAX_IO];
    int n = 0;
    for (int i = 0; i < ds->n_in; i++) {
        r->specialized |= ds->bound[i];
        if (!ds->bound[i])
            run_in[n++] = ds->in[i];
    }
    const cv_func *f = m->funcs[0];
    for (int i = 0; i < n && i < f->n_inputs; i++)
        run_in[i].dtype = data_dtype(run_in[i].dtype, f->inputs[i]->type.dtype);
    if (n != f->n_inputs || n_want != f->n_returns)
        rc = fail(r, ST_FAIL, "test data has %d inputs / %d outputs, model %d / %d", n, n_want,
                  f->n_inputs, f->n_returns);
    else if (g_native)
        rc = native_run(m, run_in, n, out, r, &d);
    else if (g_cuda)
        rc = conf_cuda_compile(m, run_in, n, r, &d);
    else if (cv_interp_run(f, run_in, n, out, &d) < 0)
        rc = fail_diag(r, &d, "interpreter");
done:
    cv_module_free(m);
    cv_diag_free(&d);
    return rc;
}

/* Reads a SequenceProto or OptionalProto of tensors into out[0..max):
 * the count, or -1 after failing r. */
static int read_list_pb(const char *path, char kind, cv_tensor *out, int max, bool *absent,
                        result *r)
{
    cv_diag d;
    cv_diag_init(&d);
    char *buf = NULL;   /* owned */
    size_t len = 0;
    int n = cv_fs_read_file(path, 1u << 30, &buf, &len, &d);
    if (n == 0)
        n = cv_onnx_read_list_pb(buf, len, path, kind, out, max, absent, &d);
    if (n < 0)
        fail_diag(r, &d, "reading test data");
    free(buf);
    cv_diag_free(&d);
    return n;
}

/* Runs one test_data_set directory. */
static int run_data_set(const char *model, size_t len, const char *path, const char *dir,
                        result *r)
{
    data_set ds = {0};
    cv_tensor out[MAX_LIST] = {0}, want[MAX_LIST] = {0};
    char out_kind[MAX_IO];
    int n_want = 0, n_files = 0, rc = 0;
    char file[FILE_BUF + 64];
    if (cv_onnx_io_kinds(model, len, ds.kind, MAX_IO, out_kind, MAX_IO) < 0) {
        memset(ds.kind, 't', sizeof ds.kind);
        memset(out_kind, 't', sizeof out_kind);
    }
    for (; ds.n_in < MAX_IO && rc == 0; ds.n_in++) {
        snprintf(file, sizeof file, "%s/input_%d.pb", dir, ds.n_in);
        if (access(file, R_OK) != 0)
            break;
        int i = ds.n_in, n = 0;
        ds.first[i] = ds.n_items;
        if (ds.kind[i] == 't' || !ds.kind[i])
            rc = read_pb(file, &ds.in[i], r);
        else if ((n = read_list_pb(file, ds.kind[i], &ds.items[ds.n_items],
                                   MAX_LIST - ds.n_items, &ds.absent[i], r)) < 0)
            rc = -1;
        ds.count[i] = n;
        ds.n_items += n;
    }
    for (; n_files < MAX_IO && rc == 0; n_files++) {
        snprintf(file, sizeof file, "%s/output_%d.pb", dir, n_files);
        if (access(file, R_OK) != 0)
            break;
        bool absent;
        int n = 1;
        if (out_kind[n_files] == 't' || !out_kind[n_files])
            rc = n_want < MAX_LIST ? read_pb(file, &want[n_want], r) : -1;
        else if ((n = read_list_pb(file, out_kind[n_files], &want[n_want], MAX_LIST - n_want,
                                   &absent, r)) < 0)
            rc = -1;
        n_want += rc == 0 ? n : 0;
    }
    if (g_cuda)
        conf_cuda_set(dir);
    if (rc == 0 && import_and_run(model, len, path, &ds, out, n_want, r) == 0) {
        if (g_cuda)
            rc = conf_cuda_outputs(want, n_want, r);
        for (int k = 0; !g_cuda && rc == 0 && k < n_want; k++)
            rc = compare(&out[k], &want[k], k, r);
        free_tensors(out, n_want);
    } else {
        rc = -1;
    }
    free_tensors(ds.in, ds.n_in);
    free_tensors(ds.items, ds.n_items);
    free_tensors(want, n_want);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir that start with prefix (malloc'd array of malloc'd names). */
static char **list_dir(const char *dir, const char *prefix, int *n)
{
    DIR *dp = opendir(dir);
    char **v = NULL;
    int cap = 0;
    *n = 0;
    for (struct dirent *e; dp && (e = readdir(dp));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[(*n)++] = strdup(e->d_name);
    }
    if (dp)
        closedir(dp);
    if (*n)
        qsort(v, (size_t)*n, sizeof *v, name_cmp);
    return v;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The child's work: import, verify and run every data set. */
static void run_test(const char *dir, result *r)
{
    char path[FILE_BUF], set_dir[FILE_BUF];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    r->status = ST_PASS;
    r->max_abs_err = 0;
    cv_diag d;
    cv_diag_init(&d);
    char *model = NULL;   /* owned */
    size_t len = 0;
    if (cv_fs_read_file(path, CV_ONNX_MAX_FILE, &model, &len, &d) < 0) {
        fail_diag(r, &d, "reading the model");
        cv_diag_free(&d);
        return;
    }
    /* A probe import without test data: a model CU-IR cannot express is
     * unsupported before its data is even read (map inputs, say).  Shape
     * inputs (4305) and sequence or optional inputs (4307) need the data. */
    cv_module *probe = cv_onnx_load_mem(model, len, path, &d);
    bool shape_inputs = false;
    for (int i = 0; !probe && i < d.n; i++)
        shape_inputs |= d.v[i].code == 4305 || d.v[i].code == 4307;
    if (!probe && !shape_inputs) {
        fail_diag(r, &d, "import");
        r->max_abs_err = -1;
        free(model);
        cv_diag_free(&d);
        return;
    }
    cv_module_free(probe);
    cv_diag_free(&d);
    int n_sets;
    char **sets = list_dir(dir, "test_data_set_", &n_sets);
    for (int i = 0; i < n_sets; i++) {
        snprintf(set_dir, sizeof set_dir, "%s/%s", dir, sets[i]);
        if (run_data_set(model, len, path, set_dir, r) < 0)
            break;
    }
    if (n_sets == 0)
        fail(r, ST_FAIL, "no test_data_set directories");
    if (r->status != ST_PASS && r->max_abs_err == 0)
        r->max_abs_err = -1;
    free_list(sets, n_sets);
    free(model);
}

/* Runs run_test in a child so that a crash or hang fails only this test. */
static void run_isolated(const char *dir, result *r)
{
    int fds[2];
    if (pipe(fds) < 0) {
        fail(r, ST_FAIL, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(TEST_TIMEOUT_S);
        result cr = {0};
        run_test(dir, &cr);
        ssize_t w = write(fds[1], &cr, sizeof cr);
        _exit(w == (ssize_t)sizeof cr ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = pid > 0 ? read(fds[0], r, sizeof *r) : -1;
    close(fds[0]);
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    if (got != (ssize_t)sizeof *r) {
        r->max_abs_err = -1;
        if (pid > 0 && WIFSIGNALED(st))
            fail(r, ST_FAIL, WTERMSIG(st) == SIGALRM ? "timeout after %d s" : "crashed (signal %d)",
                 WTERMSIG(st) == SIGALRM ? TEST_TIMEOUT_S : WTERMSIG(st));
        else
            fail(r, ST_FAIL, "the test process failed (exit status %d)", WEXITSTATUS(st));
    }
}

/* The op a test exercises: its node's type; for several distinct types,
 * the op of the test it expands (test_X_expanded -> test_X) or the last. */
static void test_op(const char *dir, char *op, size_t size)
{
    char path[FILE_BUF];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    snprintf(op, size, "?");
    cv_diag d;
    cv_diag_init(&d);
    char *buf = NULL;   /* owned */
    size_t len = 0;
    Onnx__ModelProto *mp = NULL;  /* owned */
    if (cv_fs_read_file(path, 1u << 30, &buf, &len, &d) == 0)
        mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
    if (mp && mp->graph && mp->graph->n_node) {
        const Onnx__GraphProto *g = mp->graph;
        snprintf(op, size, "%s", g->node[g->n_node - 1]->op_type);
        for (size_t i = 0; i < g->n_node; i++)
            if (strcmp(g->node[i]->op_type, g->node[0]->op_type) != 0)
                snprintf(op, size, "*");   /* resolved from the base test later */
        if (strcmp(op, "*") == 0 && !strstr(dir, "_expanded"))
            snprintf(op, size, "%s", g->node[g->n_node - 1]->op_type);
    }
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    cv_diag_free(&d);
}

static void resolve_expanded(test *t, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].op, "*") != 0)
            continue;
        char base[256];
        snprintf(base, sizeof base, "%s", t[i].name);
        char *x = strstr(base, "_expanded");
        if (x)
            *x = 0;
        snprintf(t[i].op, sizeof t[i].op, "?");
        for (int j = 0; j < n; j++)
            if (strcmp(t[j].name, base) == 0)
                snprintf(t[i].op, sizeof t[i].op, "%s", t[j].op);
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: onnx_conformance [--json OUT] [--filter SUBSTR] "
                    "[--backend interp|native|c99|cuda [--bundle DIR] [--gpu-log LOG]] [-v] "
                    "NODE_DIR\n");
}

int main(int argc, char **argv)
{
    const char *json_out = NULL, *filter = NULL, *dir = NULL, *bundle = "cuda-bundle",
               *gpu_log = NULL;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json_out = argv[++i];
        else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            const char *b = argv[++i];
            g_c99 = strcmp(b, "c99") == 0;
            g_native = g_c99 || strcmp(b, "native") == 0;
            g_cuda = strcmp(b, "cuda") == 0;
            if (!g_native && !g_cuda && strcmp(b, "interp") != 0) {
                fprintf(stderr, "onnx_conformance: --backend is interp, native, c99 or cuda\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--bundle") == 0 && i + 1 < argc)
            bundle = argv[++i];
        else if (strcmp(argv[i], "--gpu-log") == 0 && i + 1 < argc)
            gpu_log = argv[++i];
        else if (strcmp(argv[i], "-v") == 0)
            verbose = true;
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!dir) {
        usage();
        return 2;
    }
    int n_names;
    char **names = list_dir(dir, "test_", &n_names);
    test *tests = calloc((size_t)n_names + 1, sizeof *tests);   /* owned */
    int n = 0;
    for (int i = 0; i < n_names; i++) {
        if (filter && !strstr(names[i], filter))
            continue;
        char path[DIR_BUF];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        tests[n].name = names[i];
        names[i] = NULL;
        test_op(path, tests[n].op, sizeof tests[n].op);
        n++;
    }
    resolve_expanded(tests, n);
    if (g_cuda && !gpu_log && conf_cuda_begin(bundle))
        return 1;
    if (g_cuda && gpu_log && conf_cuda_merge(bundle, gpu_log, tests, n))
        return 1;
    for (int i = 0; !(g_cuda && gpu_log) && i < n; i++) {
        char path[DIR_BUF];
        snprintf(path, sizeof path, "%s/%s", dir, tests[i].name);
        run_isolated(path, &tests[i].r);
        if (verbose)
            printf("%-60s %-12s %s\n", tests[i].name, conf_status_name(tests[i].r.status),
                   tests[i].r.msg);
    }
    int rc = 0;
    if (g_cuda && !gpu_log) {
        rc = conf_cuda_save(bundle, tests, n);
    } else {
        conf_print_table(tests, n);
        rc = json_out ? conf_write_json(json_out, tests, n) : 0;
    }
    for (int i = 0; i < n; i++)
        free(tests[i].name);
    free(tests);
    free_list(names, n_names);
    return rc < 0 ? 1 : 0;
}
