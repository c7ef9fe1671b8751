/* Makes the GPU test bundle (make gpu-bundle): everything a GPU machine
 * without compilers needs to check CUDA artifacts against the reference
 * interpreter.
 *
 *   gpu_bundle OUT_DIR [TARGET] [--no-core] [--torchvision DIR [--models mobilenet_v2,resnet18]]
 *
 * For the CU-IR examples (batch 1 and 32) and every group of
 * tests/gpu/cuda_cases.h: random inputs, the interpreter's outputs, and
 * the model compiled for TARGET (default cuda-sm90) go into OUT_DIR/<case>/
 * (in<i>.bin, want<i>.bin raw, lib<name>.so, case.txt); OUT_DIR/cases.txt
 * lists the cases.  --no-core leaves the examples and groups out.  With --torchvision, the exports of
 * tests/tools/export_torchvision.py in DIR too, against PyTorch's output.
 * tests/gpu/gpu_runner.c (libc only) runs them there.
 *
 * case.txt:  lib FILE NAME / syms N V... / in BYTES FILE / out DTYPE NUMEL RTOL ATOL FILE */
#include <errno.h>
#include <jansson.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "common/npy.h"
#include "tests/gpu/cuda_cases.h"

#define MAX_IO BK_MAX_CASES

static const char *g_out, *g_target;
static FILE *g_list;
static char g_last_name[128];   /* the artifact name of the last case added */

static int write_bin(const char *dir, const char *name, const void *data, size_t len)
{
    char *path = cv_tmpdir_path(dir, name);
    FILE *f = fopen(path, "wb");
    int rc = f && fwrite(data, 1, len, f) == len ? 0 : -1;
    if (f && fclose(f))
        rc = -1;
    free(path);
    return rc;
}

/* The symbol values the inputs bind, in the artifact's order. */
static int bind_syms(const char *dir, const cv_tensor *ins, int n_in, int64_t *syms, int *n_syms)
{
    json_t *m = NULL;
    cv_diag d;
    cv_diag_init(&d);
    char *path = cv_tmpdir_path(dir, "manifest.json");
    int rc = cv_json_read_file(path, 1 << 26, &m, &d);
    free(path);
    cv_diag_free(&d);
    if (rc)
        return -1;
    json_t *names = json_object_get(m, "symbols"), *inputs = json_object_get(m, "inputs");
    *n_syms = (int)json_array_size(names);
    for (int i = 0; i < n_in; i++) {
        json_t *shape = json_object_get(json_array_get(inputs, (size_t)i), "shape");
        for (size_t k = 0; k < json_array_size(shape); k++)
            for (size_t s = 0; s < json_array_size(names); s++)
                if (json_equal(json_array_get(shape, k), json_array_get(names, s)))
                    syms[s] = ins[i].dims[k];
    }
    json_decref(m);
    return 0;
}

/* Interprets f on ins (unless ref gives its output 0 and abs tolerance),
 * compiles it into OUT/<tag>, writes the case. */
typedef struct ref_out {
    const cv_tensor *want;
    double atol;
} ref_out;

static int add_case(const char *tag, cv_module *m, const cv_tensor *ins, int n_in,
                    const ref_out *ref)
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
    cv_compile_opts o = {.target = g_target, .opt_level = 2, .emit = CV_EMIT_SO, .out_dir = dir};
    cv_compile_info info;
    int n_out = f->n_returns;
    if (rc == 0 && cv_compile_native(m, &o, &info, &d)) {
        fprintf(stderr, "gpu_bundle: %s: compile failed: CV%04d %s\n", tag,
                d.n ? d.v[0].code : 0, d.n ? d.v[0].msg : "?");
        rc = -1;
    }
    int64_t syms[64] = {0};
    int n_syms = 0;
    if (rc == 0)
        rc = bind_syms(dir, ins, n_in, syms, &n_syms);
    char *txt = rc == 0 ? cv_tmpdir_path(dir, "case.txt") : NULL;
    FILE *c = txt ? fopen(txt, "w") : NULL;
    if (c) {
        fprintf(c, "lib lib%s.so %s\nsyms %d", info.name, info.name, n_syms);
        for (int i = 0; i < n_syms; i++)
            fprintf(c, " %lld", (long long)syms[i]);
        fputc('\n', c);
        for (int i = 0; rc == 0 && i < n_in; i++) {
            char name[32];
            snprintf(name, sizeof name, "in%d.bin", i);
            fprintf(c, "in %zu %s\n", cv_tensor_nbytes(&ins[i]), name);
            rc = write_bin(dir, name, ins[i].data, cv_tensor_nbytes(&ins[i]));
        }
        for (int i = 0; rc == 0 && i < n_out; i++) {
            char name[32];
            double rtol = 1e-4, atol = 1e-5;
            if (want[i].dtype == CV_F16 || want[i].dtype == CV_BF16)
                cv_npref_default_tol(want[i].dtype, &rtol, &atol);
            if (ref)
                rtol = 0, atol = ref->atol;
            snprintf(name, sizeof name, "want%d.bin", i);
            fprintf(c, "out %s %lld %g %g %s\n", cv_dtype_name(want[i].dtype),
                    (long long)want[i].numel, rtol, atol, name);
            rc = write_bin(dir, name, want[i].data, cv_tensor_nbytes(&want[i]));
        }
        if (fclose(c))
            rc = -1;
        if (rc == 0)
            fprintf(g_list, "%s\n", tag);
        snprintf(g_last_name, sizeof g_last_name, "%s", info.name);
    } else if (rc == 0) {
        rc = -1;
    }
    for (int i = ref ? 1 : 0; i < n_out; i++)
        cv_tensor_free(&want[i]);
    free(txt);
    free(dir);
    cv_diag_free(&d);
    return rc;
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

static int group(const cuda_group *g)
{
    char name[64], msg[1024];
    bk_model b;
    snprintf(name, sizeof name, "cuda_%s", g->name);
    if (bk_build(&b, name, g->cases, g->n, msg, sizeof msg))
        return fprintf(stderr, "gpu_bundle: %s: %s\n", name, msg), -1;
    int rc = add_case(name, b.m, b.ins, b.n_ins, NULL);
    bk_model_free(&b);
    return rc;
}

/* <name>_b32: the batch-1 case's artifact at batch 32.  Its input and
 * PyTorch's output (in0.bin, want0.bin) are made on the GPU machine by
 * bench/gpu/torch_ref.py, which runs the same torchvision model there. */
static int torchvision_b32(const char *name, const cv_npy *x, const cv_npy *y)
{
    char tag[96];
    snprintf(tag, sizeof tag, "%s_b32", name);
    char *dir = cv_tmpdir_path(g_out, tag), *txt = NULL;
    int rc = cv_fs_mkdirs(dir, 0755);
    FILE *c = rc == 0 ? fopen((txt = cv_tmpdir_path(dir, "case.txt")), "w") : NULL;
    if (c) {
        fprintf(c, "lib ../%s/lib%s.so %s\nsyms 1 32\nin %zu in0.bin\nout f32 %lld 0 0.0001 want0.bin\n",
                name, g_last_name, g_last_name, x->nbytes * 32, (long long)(y->nbytes / 4 * 32));
        rc = fclose(c) ? -1 : 0;
        fprintf(g_list, "%s\n", tag);
    } else {
        rc = -1;
    }
    free(txt);
    free(dir);
    return rc;
}

/* A torchvision export (tests/tools/export_torchvision.py) against PyTorch's
 * own output, max abs error 1e-4 as on the CPU. */
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
        ref_out ref = {&want, 1e-4};
        rc = add_case(name, m, &in, 1, &ref);
        if (rc == 0)
            rc = torchvision_b32(name, &x, &y);
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
    bool core = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-core"))
            core = false;
        else if (!strcmp(argv[i], "--torchvision") && i + 1 < argc)
            tv_dir = argv[++i];
        else if (!strcmp(argv[i], "--models") && i + 1 < argc)
            tv_models = argv[++i];
        else if (n_pos < 2)
            pos[n_pos++] = argv[i];
    }
    if (!pos[0]) {
        fprintf(stderr, "usage: gpu_bundle OUT_DIR [TARGET] [--no-core] [--torchvision DIR [--models a,b]]\n");
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
        bad += group(&cuda_groups[g]) != 0;
    for (const char *p = tv_dir ? tv_models : ""; *p;) {
        char name[64];
        size_t n = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        bad += torchvision(tv_dir, name) != 0;
        p += n + (p[n] == ',');
    }
    fclose(g_list);
    printf("gpu_bundle: %s written for %s%s\n", g_out, g_target, bad ? " (some cases failed)" : "");
    return bad ? 1 : 0;
}
