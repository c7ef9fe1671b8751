/* cuvil bench --profile: where a run's time goes, kernel by kernel, named
 * by the ops each kernel implements and their places in the model (the
 * artifact's symbol map). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "compiler-core/cuvil.h"
#include "symbols/symbols.h"

typedef struct kernel_time {
    int k;
    uint64_t ns;
} kernel_time;

static int slowest_first(const void *a, const void *b)
{
    uint64_t x = ((const kernel_time *)a)->ns, y = ((const kernel_time *)b)->ns;
    return x < y ? 1 : x > y ? -1 : ((const kernel_time *)a)->k - ((const kernel_time *)b)->k;
}

/* Runs with profiling on; *wall_ms gets the whole runs' time. */
static int profiled_runs(cv_native *n, int runs, const cv_tensor *ins, uint64_t *ns, int nk,
                         double *wall_ms, cv_diag *d)
{
    cv_tensor *outs = calloc((size_t)cv_native_num_outputs(n) + 1, sizeof *outs);
    if (!outs)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    int rc = cv_native_run(n, ins, cv_native_num_inputs(n), outs, d);   /* outputs allocated */
    if (rc == 0 && cv_native_profile(n, ns, nk))
        rc = cv_diag_fail(d, CV_E_ARTIFACT_NO_PROFILE, (cv_span){0},
                          "the artifact exports no per-kernel profile: recompile it");
    double t0 = cv_clock_mono_ms_f();
    for (int i = 0; i < runs && rc == 0; i++)
        rc = cv_native_run(n, ins, cv_native_num_inputs(n), outs, d);
    *wall_ms = cv_clock_mono_ms_f() - t0;
    cv_native_profile(n, NULL, 0);
    for (int i = 0; i < cv_native_num_outputs(n); i++)
        cv_tensor_free(&outs[i]);
    free(outs);
    return rc;
}

static json_t *kernel_json(const cv_symmap *m, int k, double ms, double total_ms)
{
    const cv_sym_kernel *kn = &m->kernels[k];
    json_t *at = json_array();
    char ops[512] = "", buf[512];
    size_t len = 0;
    for (int i = 0; i < kn->n_ops && len < sizeof ops; i++) {
        len += (size_t)snprintf(ops + len, sizeof ops - len, "%s%s", i ? " + " : "",
                                m->ops[kn->ops[i]].op);
        cv_symmap_describe_op(m, kn->ops[i], buf, sizeof buf);
        json_array_append_new(at, json_string(buf));
    }
    return json_pack("{s:s, s:s, s:o, s:f, s:f}", "kernel", kn->name, "ops", ops, "at", at,
                     "ms", ms, "share", total_ms > 0 ? ms / total_ms : 0.0);
}

int cv_cli_bench_profile(cv_native *n, const char *dir, int runs, const cv_tensor *ins,
                         json_t **out, cv_diag *d)
{
    cv_symmap m;
    *out = NULL;
    if (cv_symmap_load(dir, &m, d))
        return -1;
    int nk = m.n_kernels;
    uint64_t *ns = calloc((size_t)nk + 1, sizeof *ns);
    kernel_time *order = calloc((size_t)nk + 1, sizeof *order);
    double wall = 0;
    int rc = ns && order ? profiled_runs(n, runs, ins, ns, nk, &wall, d)
                         : cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (rc == 0) {
        double total = 0;
        for (int k = 0; k < nk; k++) {
            order[k] = (kernel_time){k, ns[k]};
            total += (double)ns[k] / 1e6 / runs;
        }
        qsort(order, (size_t)nk, sizeof *order, slowest_first);
        json_t *ks = json_array();
        for (int i = 0; i < nk && order[i].ns; i++)
            json_array_append_new(ks, kernel_json(&m, order[i].k, (double)order[i].ns / 1e6 / runs,
                                                  total));
        *out = json_pack("{s:i, s:f, s:f, s:o}", "runs", runs, "run_ms", wall / runs,
                         "kernel_ms", total, "kernels", ks);
    }
    free(ns);
    free(order);
    cv_symmap_free(&m);
    return rc;
}

void cv_cli_bench_profile_print(const json_t *p, FILE *out)
{
    fprintf(out, "profile  %.3f ms a run, %.3f ms of it in kernels (%lld runs)\n",
            json_real_value(json_object_get(p, "run_ms")),
            json_real_value(json_object_get(p, "kernel_ms")),
            (long long)json_integer_value(json_object_get(p, "runs")));
    fprintf(out, "%10s %7s  %-24s %s\n", "ms/run", "share", "kernel", "ops  (model locations)");
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(p, "kernels"), i, k) {
        fprintf(out, "%10.4f %6.1f%%  %-24s %s ", json_real_value(json_object_get(k, "ms")),
                100 * json_real_value(json_object_get(k, "share")),
                json_string_value(json_object_get(k, "kernel")),
                json_string_value(json_object_get(k, "ops")));
        size_t j;
        json_t *at;
        json_array_foreach(json_object_get(k, "at"), j, at)
            fprintf(out, "%s%s", j ? ", " : " (", json_string_value(at));
        fputs(json_array_size(json_object_get(k, "at")) ? ")\n" : "\n", out);
    }
}
