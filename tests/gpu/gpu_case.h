/* One case of a GPU test bundle, as tests/gpu/gpu_runner.c reads it: a
 * directory holding the artifact (lib<name>.so), its raw inputs and
 * expected outputs, and case.txt
 *   lib FILE NAME / syms N V... / in BYTES FILE / out DTYPE NUMEL RTOL ATOL FILE
 * Written by tests/gpu/gpu_bundle.c and by the conformance runner's
 * --backend cuda (tests/conformance/onnx_cuda.c); header-only because the
 * two are linked differently. */
#ifndef CV_TESTS_GPU_CASE_H
#define CV_TESTS_GPU_CASE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/jsonutil.h"
#include "compiler-core/cuvil.h"

/* dir fits GPU_CASE_DIR bytes; the files in it are named in a few more. */
enum { GPU_CASE_MAX_SYMS = 64, GPU_CASE_DIR = 4096 };

static inline int gpu_case_write_bin(const char *dir, const char *name, const void *data,
                                     size_t len)
{
    char path[GPU_CASE_DIR + 64];
    snprintf(path, sizeof path, "%.*s/%.40s", GPU_CASE_DIR, dir, name);
    FILE *f = fopen(path, "wb");
    int rc = f && fwrite(data, 1, len, f) == len ? 0 : -1;
    if (f && fclose(f))
        rc = -1;
    return rc;
}

/* The symbol values the inputs bind, in the order of the artifact's
 * manifest.json (in dir). */
static inline int gpu_case_syms(const char *dir, const cv_tensor *ins, int n_in, int64_t *syms,
                                int *n_syms)
{
    char path[GPU_CASE_DIR + 64];
    snprintf(path, sizeof path, "%.*s/manifest.json", GPU_CASE_DIR, dir);
    json_t *m = NULL;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_json_read_file(path, 1 << 26, &m, &d);
    cv_diag_free(&d);
    if (rc)
        return -1;
    json_t *names = json_object_get(m, "symbols"), *inputs = json_object_get(m, "inputs");
    *n_syms = (int)json_array_size(names);
    if (*n_syms > GPU_CASE_MAX_SYMS) {
        json_decref(m);
        return -1;
    }
    for (int s = 0; s < *n_syms; s++)
        syms[s] = 0;
    for (int i = 0; i < n_in; i++) {
        json_t *shape = json_object_get(json_array_get(inputs, (size_t)i), "shape");
        for (size_t k = 0; k < json_array_size(shape) && (int)k < ins[i].rank; k++)
            for (size_t s = 0; s < json_array_size(names); s++)
                if (json_equal(json_array_get(shape, k), json_array_get(names, s)))
                    syms[s] = ins[i].dims[k];
    }
    json_decref(m);
    return 0;
}

/* Writes dir/case.txt, in<i>.bin and want<i>.bin for the artifact `name`
 * compiled into dir; output i is compared with rtol[i], atol[i]. */
static inline int gpu_case_write(const char *dir, const char *name, const cv_tensor *ins,
                                 int n_in, const cv_tensor *want, int n_out, const double *rtol,
                                 const double *atol)
{
    int64_t syms[GPU_CASE_MAX_SYMS];
    int n_syms = 0;
    if (gpu_case_syms(dir, ins, n_in, syms, &n_syms))
        return -1;
    char path[GPU_CASE_DIR + 64];
    snprintf(path, sizeof path, "%.*s/case.txt", GPU_CASE_DIR, dir);
    FILE *c = fopen(path, "w");
    if (!c)
        return -1;
    int rc = 0;
    fprintf(c, "lib lib%s.so %s\nsyms %d", name, name, n_syms);
    for (int i = 0; i < n_syms; i++)
        fprintf(c, " %lld", (long long)syms[i]);
    fputc('\n', c);
    for (int i = 0; rc == 0 && i < n_in; i++) {
        char file[32];
        snprintf(file, sizeof file, "in%d.bin", i);
        fprintf(c, "in %zu %s\n", cv_tensor_nbytes(&ins[i]), file);
        rc = gpu_case_write_bin(dir, file, ins[i].data, cv_tensor_nbytes(&ins[i]));
    }
    for (int i = 0; rc == 0 && i < n_out; i++) {
        char file[32];
        snprintf(file, sizeof file, "want%d.bin", i);
        fprintf(c, "out %s %lld %g %g %s\n", cv_dtype_name(want[i].dtype),
                (long long)want[i].numel, rtol[i], atol[i], file);
        rc = gpu_case_write_bin(dir, file, want[i].data, cv_tensor_nbytes(&want[i]));
    }
    if (fclose(c))
        rc = -1;
    return rc;
}

#endif
