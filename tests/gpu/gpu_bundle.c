/* Makes the GPU test bundle (make gpu-bundle): everything a GPU machine
 * without compilers needs to check CUDA artifacts against the reference
 * interpreter.
 *
 *   gpu_bundle OUT_DIR [TARGET] [--no-core] [--torchvision DIR [--models mobilenet_v2,resnet18] [--fp16]]
 *
 * For the CU-IR examples (batch 1 and 32) and every group of
 * tests/gpu/cuda_cases.h (cuda_half with constant weights, compiled in
 * f32, -p fp16 and -p bf16):
 * random inputs, the interpreter's outputs, and
 * the model compiled for TARGET (default cuda-sm90) go into OUT_DIR/<case>/
 * (in<i>.bin, want<i>.bin raw, lib<name>.so, case.txt); OUT_DIR/cases.txt
 * lists the cases.  --no-core leaves the examples and groups out.  With
 * --torchvision, the exports of tests/tools/export_torchvision.py in DIR
 * too, against PyTorch's output; --fp16 adds each compiled with fp16
 * weights (-p fp16) as NAME_fp16.
 * tests/gpu/gpu_runner.c (libc only) runs them there.
 *
 * case.txt: tests/gpu/gpu_case.h. */
#include <errno.h>
#include <jansson.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "common/npy.h"
#include "tests/gpu/cuda_cases.h"
#include "tests/gpu/gpu_case.h"

#define MAX_IO BK_MAX_CASES

static const char *g_out, *g_target;
static const cv_quant_opts *g_quant;   /* the torchvision cases' precision (NULL: fp32) */
static FILE *g_list;
static char g_last_name[128];   /* the artifact name of the last case added */

/* Interprets f on ins (unless ref gives its output 0 and abs tolerance),
 * compiles it into OUT/<tag>, writes the case. */
typedef struct ref_out {
    const cv_tensor *want;
    double atol;
} ref_out;

/* quant: compiled in that precision (the 16-bit groups: within 1e-2 of
 * the f32 interpreter, 5e-2 for bf16). */
static int add_case_q(const char *tag, cv_module *m, const cv_tensor *ins, int n_in,
                      const ref_out *ref, const cv_quant_opts *quant)
{
    const cv_func *f = m->funcs[0];
    cv_tensor want[MAX_IO] = {{0}};
    cv_diag d;
    cv_diag_init(&d);
    int rc = ref ? 0 : cv_interp_run(f, ins, n_in, want, &d);
    if (ref)
        want[0] = *ref->want;   /* borrowed */
    if (rc)
        fprintf(stderr, "gpu_bundle: %s: the interpreter failed: %s\n", tag, d.n ? d.v[0].msg : "?");
    char *dir = cv_tmpdir_path(g_out, tag);
    cv_compile_opts o = {.target = g_target, .opt_level = 2, .emit = CV_EMIT_SO, .out_dir = dir,
                         .quant = quant};
    cv_compile_info info;
    int n_out = f->n_returns;
    if (rc == 0 && cv_compile_native(m, &o, &info, &d)) {
        fprintf(stderr, "gpu_bundle: %s: compile failed: CV%04d %s\n", tag,
                d.n ? d.v[0].code : 0, d.n ? d.v[0].msg : "?");
        rc = -1;
    }
    double rtol[MAX_IO], atol[MAX_IO];
    for (int i = 0; rc == 0 && i < n_out; i++) {
        rtol[i] = 1e-4, atol[i] = 1e-5;
        if (want[i].dtype == CV_F16 || want[i].dtype == CV_BF16)
            cv_npref_default_tol(want[i].dtype, &rtol[i], &atol[i]);
        if (ref)
            rtol[i] = 0, atol[i] = ref->atol;
        else if (quant)
            rtol[i] = atol[i] = quant->precision == CV_PRECISION_BF16 ? 5e-2 : 1e-2;
    }
    if (rc == 0 && (rc = gpu_case_write(dir, info.name, ins, n_in, want, n_out, rtol, atol)) == 0)
        fprintf(g_list, "%s\n", tag);
    if (rc == 0)
        snprintf(g_last_name, sizeof g_last_name, "%s", info.name);
    for (int i = ref ? 1 : 0; i < n_out; i++)
        cv_tensor_free(&want[i]);
    free(dir);
    cv_diag_free(&d);
    return rc;
}

static int add_case(const char *tag, cv_module *m, const cv_tensor *ins, int n_in,
                    const ref_out *ref)
{
    return add_case_q(tag, m, ins, n_in, ref, ref ? g_quant : NULL);
}

static int example(const char *file, int64_t batch)
{
    char path[512], tag[128];
    snprintf(path, sizeof path, "%s/examples/cuir/%s", cv_tmpdir_src_root(), file);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(path, 0, &d);
    cv_diag_free(&d);
    if (!m)
        return fprintf(stderr, "gpu_bundle: cannot load %s\n", path), -1;
    const cv_func *f = m->funcs[0];
    cv_tensor ins[MAX_IO] = {{0}};
    for (int i = 0; i < f->n_inputs; i++) {
        const cv_type *t = &f->inputs[i]->type;
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < t->shape.rank; k++)
            dims[k] = t->shape.d[k].sym ? batch : t->shape.d[k].n;
        cv_tensor_alloc(&ins[i], t->dtype, t->shape.rank, dims);
        cv_npref_fill(&ins[i], (uint64_t)(i + 11), -1, 1);
    }
    snprintf(tag, sizeof tag, "%.*s_b%lld", (int)(strcspn(file, ".")), file, (long long)batch);
    int rc = add_case(tag, m, ins, f->n_inputs, NULL);
    for (int i = 0; i < f->n_inputs; i++)
        cv_tensor_free(&ins[i]);
    cv_module_free(m);
    return rc;
}

/* quant: the group compiled in that precision, named cuda_<name><suffix>;
 * bake: its weights constants (cuda_bake_params), as a model's are. */
static int group(const cuda_group *g, const cv_quant_opts *quant, bool bake, const char *suffix)
{
    char name[64], msg[1024];
    bk_model b;
    snprintf(name, sizeof name, "cuda_%s%s", g->name, suffix);
    if (bk_build(&b, name, g->cases, g->n, msg, sizeof msg) || (bake && cuda_bake_params(&b)))
        return fprintf(stderr, "gpu_bundle: %s: %s\n", name, msg), -1;
    int rc = add_case_q(name, b.m, b.ins, b.n_ins, NULL, quant);
    bk_model_free(&b);
    return rc;
}

/* <name>_b32: the batch-1 case's artifact at batch 32.  Its input and
 * PyTorch's output (in0.bin, want0.bin) are made on the GPU machine by
 * bench/gpu/torch_ref.py, which runs the same torchvision model there. */
static int torchvision_b32(const char *tag1, const char *data, const cv_npy *x, const cv_npy *y,
                           double atol)
{
    char tag[128];
    snprintf(tag, sizeof tag, "%.96s_b32", tag1);
    char *dir = cv_tmpdir_path(g_out, tag), *txt = NULL;
    int rc = cv_fs_mkdirs(dir, 0755);
    FILE *c = rc == 0 ? fopen((txt = cv_tmpdir_path(dir, "case.txt")), "w") : NULL;
    if (c) {
        fprintf(c, "lib ../%s/lib%s.so %s\nsyms 1 32\nin %zu %sin0.bin\nout f32 %lld 0 %g %swant0.bin\n",
                tag1, g_last_name, g_last_name, x->nbytes * 32, data,
                (long long)(y->nbytes / 4 * 32), atol, data);
        rc = fclose(c) ? -1 : 0;
        fprintf(g_list, "%s\n", tag);
    } else {
        rc = -1;
    }
    free(txt);
    free(dir);
    return rc;
}

static double range(const cv_tensor *t)
{
    const float *v = t->data;
    float lo = v[0], hi = v[0];
    for (int64_t i = 1; i < t->numel; i++)
        lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
    return (double)hi - lo;
}

/* A torchvision export (tests/tools/export_torchvision.py) against PyTorch's
 * own output, max abs error 1e-4 as on the CPU (with --fp16: NAME_fp16,
 * compiled with fp16 weights, -p fp16). */
static int torchvision(const char *dir, const char *name)
{
    char onnx[1024], xin[1024], xout[1024];
    snprintf(onnx, sizeof onnx, "%s/%s.onnx", dir, name);
    snprintf(xin, sizeof xin, "%s/%s.input.npy", dir, name);
    snprintf(xout, sizeof xout, "%s/%s.output.npy", dir, name);
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m = cv_model_load(onnx, 0, &d);
    cv_npy x, y;
    int rc = m && cv_npy_read(xin, &x, &d) == 0 ? 0 : -1;
    if (rc == 0 && cv_npy_read(xout, &y, &d)) {
        cv_npy_free(&x);
        rc = -1;
    }
    if (rc == 0) {
        cv_tensor in, want;
        cv_tensor_alloc(&in, CV_F32, x.rank, x.dims);
        cv_tensor_alloc(&want, CV_F32, y.rank, y.dims);
        memcpy(in.data, x.data, x.nbytes);
        memcpy(want.data, y.data, y.nbytes);
        char tag[96], data[96];
        snprintf(tag, sizeof tag, g_quant ? "%s_fp16" : "%s", name);
        /* fp16 weights: within 1e-2 of the output's range (as on the CPU,
         * tests/conformance/quant_models.sh); the batch-32 data is fp32's. */
        snprintf(data, sizeof data, g_quant ? "../%s_b32/" : "", name);
        ref_out ref = {&want, g_quant ? 1e-2 * range(&want) : 1e-4};
        rc = add_case(tag, m, &in, 1, &ref);
        if (rc == 0)
            rc = torchvision_b32(tag, data, &x, &y, ref.atol);
        cv_tensor_free(&in);
        cv_tensor_free(&want);
        cv_npy_free(&x);
        cv_npy_free(&y);
    } else {
        fprintf(stderr, "gpu_bundle: %s: %s\n", name, d.n ? d.v[0].msg : "cannot load");
    }
    cv_module_free(m);
    cv_diag_free(&d);
    return rc;
}

int main(int argc, char **argv)
{
    const char *tv_dir = NULL, *tv_models = "mobilenet_v2", *pos[2] = {NULL, "cuda-sm90"};
    int n_pos = 0;
    bool core = true, fp16 = false;
    static const cv_quant_opts half = {.precision = CV_PRECISION_FP16};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-core"))
            core = false;
        else if (!strcmp(argv[i], "--torchvision") && i + 1 < argc)
            tv_dir = argv[++i];
        else if (!strcmp(argv[i], "--models") && i + 1 < argc)
            tv_models = argv[++i];
        else if (!strcmp(argv[i], "--fp16"))
            fp16 = true;
        else if (n_pos < 2)
            pos[n_pos++] = argv[i];
    }
    if (!pos[0]) {
        fprintf(stderr, "usage: gpu_bundle OUT_DIR [TARGET] [--no-core] [--torchvision DIR "
                        "[--models a,b] [--fp16]]\n");
        return 2;
    }
    g_out = pos[0];
    g_target = pos[1];
    if (cv_fs_mkdirs(g_out, 0755))
        return fprintf(stderr, "gpu_bundle: cannot create %s: %s\n", g_out, strerror(errno)), 1;
    char *list = cv_tmpdir_path(g_out, "cases.txt");
    g_list = fopen(list, "w");
    free(list);
    if (!g_list)
        return 1;
    int bad = 0;
    static const char *const examples[] = {"mlp.cuir", "residual.cuir", "tinycnn.cuir"};
    for (size_t i = 0; core && i < sizeof examples / sizeof examples[0]; i++) {
        bad += example(examples[i], 1) != 0;
        bad += example(examples[i], 32) != 0;
    }
    for (int g = 0; core && g < CUDA_N_GROUPS; g++)
        bad += group(&cuda_groups[g], NULL, false, "") != 0;
    static const cv_quant_opts bf16 = {.precision = CV_PRECISION_BF16};
    static const cuda_group halfg = CUDA_GROUP("half", cuda_half);
    if (core) {
        bad += group(&halfg, NULL, true, "_f32") != 0;
        bad += group(&halfg, &half, true, "_fp16") != 0;
        bad += group(&halfg, &bf16, true, "_bf16") != 0;
    }
    for (const char *p = tv_dir ? tv_models : ""; *p;) {
        char name[64];
        size_t n = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        g_quant = NULL;
        bad += torchvision(tv_dir, name) != 0;
        g_quant = fp16 ? &half : NULL;
        if (fp16)
            bad += torchvision(tv_dir, name) != 0;
        p += n + (p[n] == ',');
    }
    fclose(g_list);
    printf("gpu_bundle: %s written for %s%s\n", g_out, g_target, bad ? " (some cases failed)" : "");
    return bad ? 1 : 0;
}
