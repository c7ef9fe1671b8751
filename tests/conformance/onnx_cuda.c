/* --backend cuda of the conformance runner.  The build machine has no GPU,
 * so it runs in two steps:
 *
 *   1. onnx_conformance --backend cuda --bundle DIR NODE_DIR
 *      compiles every test data set for cuda-sm90 (CUVIL_CUDA_TARGET
 *      for another SM) into a GPU test bundle (tests/gpu/gpu_case.h; case
 *      <test>__<set>) and records each test's compile outcome in
 *      DIR/tests.tsv.  A model the backend cannot compile (CV5000-5039,
 *      and CV5065/5066: what the CUDA backend has no device code for) is
 *      unsupported.
 *   2. tests/gpu/run.sh DIR --iters 0 > LOG on the GPU machine, then
 *      onnx_conformance --backend cuda --bundle DIR --gpu-log LOG NODE_DIR
 *      makes the usual per-op table and JSON report from both.
 *
 * Outputs are compared as the CPU backends' are (rtol 1e-3, atol 1e-5),
 * f16 and bf16 outputs with rtol 1e-2, atol 1e-3; integers exactly. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "tests/conformance/onnx_cuda.h"
#include "tests/gpu/gpu_case.h"

enum { TAG_MAX = 300, MAX_OUT = 16 };

/* The child's current case (set by conf_cuda_set, one data set at a time). */
static const char *g_bundle;
static char g_tag[TAG_MAX], g_dir[GPU_CASE_DIR], g_name[128];

const char *conf_cuda_target(void)
{
    const char *t = getenv("CUVIL_CUDA_TARGET");
    return t && *t ? t : "cuda-sm90";
}

int conf_cuda_begin(const char *bundle)
{
    g_bundle = bundle;
    if (cv_fs_mkdirs(bundle, 0755)) {
        fprintf(stderr, "onnx_conformance: cannot create %s: %s\n", bundle, strerror(errno));
        return -1;
    }
    char path[GPU_CASE_DIR + 64];
    snprintf(path, sizeof path, "%s/cases.txt", bundle);
    FILE *f = fopen(path, "w");
    return f && fclose(f) == 0 ? 0 : -1;
}

/* set_dir is NODE_DIR/test_X/test_data_set_N: the case is test_X__N. */
void conf_cuda_set(const char *set_dir)
{
    const char *set = strrchr(set_dir, '/');
    const char *name = set;
    while (name && name > set_dir && name[-1] != '/')
        name--;
    const char *n = set ? strrchr(set, '_') : NULL;
    snprintf(g_tag, sizeof g_tag, "%.*s__%s", name ? (int)(set - name) : 0, name ? name : "",
             n ? n + 1 : "0");
    snprintf(g_dir, sizeof g_dir, "%s/%s", g_bundle, g_tag);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Keeps what the GPU runner reads: the library, case.txt, the data. */
static int prune_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    const char *base = path + ftw->base;
    size_t n = strlen(base);
    bool keep = flag != FTW_F || strcmp(base, "case.txt") == 0 ||
                (n > 4 && strcmp(base + n - 4, ".bin") == 0) ||
                (strncmp(base, "lib", 3) == 0 && n > 3 && strcmp(base + n - 3, ".so") == 0);
    return keep ? 0 : remove(path);
}

static int fail_msg(result *r, int status, const char *stage, const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].sev == CV_SEV_ERROR) {
            snprintf(r->msg, sizeof r->msg, "%s: CV%04d: %s", stage, d->v[i].code, d->v[i].msg);
            r->status = status;
            return -1;
        }
    snprintf(r->msg, sizeof r->msg, "%s failed without a diagnostic", stage);
    r->status = ST_FAIL;
    return -1;
}

static bool unsupported(const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].sev == CV_SEV_ERROR)
            return (d->v[i].code >= 5000 && d->v[i].code < 5040) || d->v[i].code == 5065 ||
                   d->v[i].code == 5066;
    return false;
}

/* Compiles m for the GPU into the current case's directory; the inputs
 * are kept for conf_cuda_outputs. */
static cv_tensor g_in[16];
static int g_n_in;

int conf_cuda_compile(cv_module *m, const cv_tensor *in, int n, result *r, cv_diag *d)
{
    nftw(g_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    cv_compile_opts o = {.target = conf_cuda_target(), .opt_level = 2, .emit = CV_EMIT_SO,
                         .out_dir = g_dir};
    cv_compile_info info;
    if (n > (int)(sizeof g_in / sizeof g_in[0]))
        return snprintf(r->msg, sizeof r->msg, "too many inputs"), r->status = ST_FAIL, -1;
    if (cv_compile_native(m, &o, &info, d) < 0)
        return fail_msg(r, unsupported(d) ? ST_UNSUP : ST_FAIL, "cuda compile", d);
    snprintf(g_name, sizeof g_name, "%s", info.name);
    for (int i = 0; i < n; i++)
        g_in[i] = in[i];   /* borrowed until conf_cuda_outputs */
    g_n_in = n;
    return 0;
}

/* The expected outputs: writes the case and lists it in cases.txt. */
int conf_cuda_outputs(const cv_tensor *want, int n, result *r)
{
    double rtol[MAX_OUT], atol[MAX_OUT];
    for (int i = 0; i < n && i < MAX_OUT; i++) {
        bool half = want[i].dtype == CV_F16 || want[i].dtype == CV_BF16;
        rtol[i] = half ? 1e-2 : 1e-3;
        atol[i] = half ? 1e-3 : 1e-5;
    }
    char path[GPU_CASE_DIR + 64];
    snprintf(path, sizeof path, "%s/cases.txt", g_bundle);
    FILE *list = NULL;
    if (n > MAX_OUT || gpu_case_write(g_dir, g_name, g_in, g_n_in, want, n, rtol, atol) ||
        !(list = fopen(path, "a"))) {
        snprintf(r->msg, sizeof r->msg, "cannot write the case %.300s", g_dir);
        r->status = ST_FAIL;
        return -1;
    }
    fprintf(list, "%s\n", g_tag);
    fclose(list);
    nftw(g_dir, prune_one, 16, FTW_PHYS);
    r->max_abs_err = -1;   /* compared on the GPU */
    return 0;
}

/* tests.tsv: name, status, message of every test after step 1. */
int conf_cuda_save(const char *bundle, const test *t, int n)
{
    char path[GPU_CASE_DIR + 64];
    snprintf(path, sizeof path, "%s/tests.tsv", bundle);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (int i = 0; i < n; i++) {
        char msg[sizeof t[i].r.msg];
        snprintf(msg, sizeof msg, "%s", t[i].r.msg);
        for (char *p = msg; *p; p++)
            if (*p == '\t' || *p == '\n')
                *p = ' ';
        fprintf(f, "%s\t%d\t%s\n", t[i].name, t[i].r.status, msg);
    }
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += t[i].r.status == ST_FAIL;
    int unsup = 0;
    for (int i = 0; i < n; i++)
        unsup += t[i].r.status == ST_UNSUP;
    printf("conformance (cuda): %d tests compiled for %s into %s, %d unsupported, %d failed "
           "before the GPU\n", n - bad - unsup, conf_cuda_target(), bundle, unsup, bad);
    return fclose(f) ? -1 : 0;
}

static test *find(test *t, int n, const char *name, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(t[i].name) == len && strncmp(t[i].name, name, len) == 0)
            return &t[i];
    return NULL;
}

/* Step 2: the outcomes of step 1, then each case's PASS/FAIL line of the
 * GPU log (a test passes when all its data sets did). */
int conf_cuda_merge(const char *bundle, const char *log, test *t, int n)
{
    char path[GPU_CASE_DIR + 64], line[2048];
    snprintf(path, sizeof path, "%s/tests.tsv", bundle);
    FILE *f = fopen(path, "r");
    if (!f)
        return fprintf(stderr, "onnx_conformance: no %s (run step 1)\n", path), -1;
    for (int i = 0; i < n; i++) {
        t[i].r.status = ST_FAIL;
        t[i].r.max_abs_err = -1;
        snprintf(t[i].r.msg, sizeof t[i].r.msg, "not compiled (not in tests.tsv)");
    }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *tab = strchr(line, '\t');
        test *x = tab ? find(t, n, line, (size_t)(tab - line)) : NULL;
        if (!x)
            continue;
        char *msg = strchr(tab + 1, '\t');
        x->r.status = atoi(tab + 1);
        snprintf(x->r.msg, sizeof x->r.msg, "%s",
                 x->r.status == ST_PASS ? "not run on the GPU" : msg ? msg + 1 : "");
        if (x->r.status == ST_PASS)
            x->r.status = ST_FAIL;   /* until the log says it passed */
    }
    fclose(f);
    FILE *g = fopen(log, "r");
    if (!g)
        return fprintf(stderr, "onnx_conformance: cannot read %s\n", log), -1;
    /* A test's line says PASS only while none of its data sets failed. */
    while (fgets(line, sizeof line, g)) {
        bool pass = strncmp(line, "PASS ", 5) == 0;
        if (!pass && strncmp(line, "FAIL ", 5) != 0)
            continue;
        char *tag = line + 5, *sep = strstr(tag, "__");
        test *x = sep ? find(t, n, tag, (size_t)(sep - tag)) : NULL;
        if (!x || (x->r.status == ST_FAIL && strncmp(x->r.msg, "gpu: ", 5) == 0))
            continue;
        line[strcspn(line, "\n")] = 0;
        x->r.status = pass ? ST_PASS : ST_FAIL;
        if (pass)
            x->r.msg[0] = 0;
        else
            snprintf(x->r.msg, sizeof x->r.msg, "gpu: %s", tag + strcspn(tag, " "));
    }
    fclose(g);
    return 0;
}
