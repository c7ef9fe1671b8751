/* cuvil diff MODEL --input NAME=x.npy ... [--against interp|artifact:DIR]
 *                  [-t TARGET] [--atol A] [--rtol R] [--threads N] [--json]
 * The per-layer deviation finder: compiles a debug build of the model in
 * which every tensor a kernel writes is also an output, runs it and the
 * reference on the same inputs, and prints one row per kernel in program
 * order (ops, model line, max abs and relative error), marking the first
 * whose error exceeds the tolerance: where the compiled code starts to
 * deviate.  Exit status 0 when nothing deviates, 1 when something does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "compiler-core/diff/diff.h"
#include "cli/run_io.h"
#include "compiler-core/cuvil.h"
#include "symbols/symbols.h"

extern const cv_cli_command cv_cmd_diff;

typedef struct diff_args {
    const char *model, *against, *target;
    cv_cli_inputs in;
    int threads;
    double atol, rtol;
    bool json;
} diff_args;

/* --atol, --rtol: a finite number >= 0 at the row's offset. */
static int tol_arg(const cv_cli_command *cmd, const cv_cli_opt *o, const char *v, void *args)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0) || !isfinite(x))
        return cv_cli_usage_error(cmd, "--%s takes a number >= 0, got '%s'", o->name, v);
    *(double *)((char *)args + o->at) = x;
    return 0;
}

static int parse_args(diff_args *a, int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_diff;
    a->against = "interp";
    a->atol = 1e-4;
    a->rtol = 1e-3;
    a->threads = 1;
    int rc = cv_cli_parse(cmd, NULL, argc, argv, 1, a);
    if (rc)
        return rc;
    if (!a->model)
        return cv_cli_usage_error(cmd, "no model given");
    if (strcmp(a->against, "interp") != 0 && strncmp(a->against, "artifact:", 9) != 0 &&
        strcmp(a->against, "onnxruntime") != 0)
        return cv_cli_usage_error(cmd, "--against takes interp, onnxruntime or artifact:DIR");
    return 0;
}

static int find_input(const diff_args *a, const char *name)
{
    for (int k = 0; k < a->in.n; k++)
        if (strcmp(a->in.names[k], name) == 0)
            return k;
    return -1;
}

static int read_inputs(const diff_args *a, const cv_native *n, cv_tensor *ins, cv_diag *d)
{
    char sig[512];
    for (int i = 0; i < cv_native_num_inputs(n); i++) {
        cv_native_io io = cv_native_input(n, i);
        int k = find_input(a, io.name);
        cv_native_io_format(n, io, sig, sizeof sig);
        if (k < 0)
            return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){.file = a->model}, "no --input given for "
                                "%%%s (%s)", io.name, sig);
        if (cv_cli_read_input(a->in.files[k], io.name, io.dtype, sig, &ins[i], d))
            return -1;
    }
    return cv_cli_check_input_names(a->model, a->in.names, a->in.n, n, d);
}

/* Runs an artifact directory on ins; its outputs by name into s. */
static int run_artifact(const char *dir, int threads, const cv_tensor *ins, int n_in, cv_diff_side *s,
                        cv_native **keep, cv_diag *d)
{
    if (cv_native_open(dir, threads, keep, d))
        return -1;
    return cv_diff_native(*keep, ins, n_in, s, d);
}

static void kernel_ops(const cv_symmap *m, int k, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; k >= 0 && i < m->kernels[k].n_ops && at < size; i++) {
        const cv_sym_op *o = &m->ops[m->kernels[k].ops[i]];
        at += (size_t)snprintf(buf + at, size - at, "%s#%d %s", i ? ", " : "", o->index, o->op);
    }
}

static void print_first(const cv_symmap *m, int first, const diff_args *a, int rows)
{
    if (first < 0) {
        printf("\nno deviation beyond atol %g + rtol %g x |reference| in %d %s\n", a->atol,
               a->rtol, rows, cv_cli_plural(rows, "tensor", "tensors"));
        return;
    }
    int k = cv_symmap_kernel_of_op(m, first);
    char what[1024], ops[256];
    cv_symmap_describe_kernel(m, k, what, sizeof what);
    kernel_ops(m, k, ops, sizeof ops);
    printf("\nfirst deviation: kernel %s\n  ops: %s\n", what, ops);
}

/* One row per build tensor the reference also has, in program order. */
static int report(const diff_args *a, const cv_symmap *m, const cv_diff_rows *rows)
{
    json_t *jrows = json_array();
    if (!a->json)
        printf("%-4s %-26s %-24s %-14s %-12s %s\n", "op", "kernel ops", "loc", "max abs err",
               "rel err", "");
    for (int i = 0; i < rows->n; i++) {
        const cv_diff_row *r = &rows->row[i];
        int k = cv_symmap_kernel_of_op(m, r->op);
        char ops[256], loc[512];
        kernel_ops(m, k, ops, sizeof ops);
        cv_symmap_describe_op(m, k >= 0 ? m->kernels[k].ops[0] : r->op, loc, sizeof loc);
        if (a->json)
            json_array_append_new(jrows, json_pack("{s:i, s:s, s:s, s:s, s:s, s:f, s:f, s:b, s:b}",
                                                   "op", r->op, "value", r->value, "kernel",
                                                   k >= 0 ? m->kernels[k].name : "", "ops", ops,
                                                   "loc", loc, "max_abs", r->max_abs, "rel",
                                                   r->rel, "deviates", r->deviates, "compared",
                                                   !r->shape_differs));
        else if (r->shape_differs)
            printf("%-4d %-26s %-24s %s\n", r->op, ops, loc, "(shapes differ: not compared)");
        else
            printf("%-4d %-26s %-24s %-14.3e %-12.3e %s\n", r->op, ops, loc, r->max_abs, r->rel,
                   r->op == rows->first ? "<-- first deviation" : r->deviates ? "x" : "");
    }
    if (a->json) {
        json_t *j = json_pack("{s:o, s:i}", "rows", jrows, "first_deviation", rows->first);
        json_dumpf(j, stdout, JSON_INDENT(1));
        putchar('\n');
        json_decref(j);
    } else {
        json_decref(jrows);
        print_first(m, rows->first, a, rows->n);
    }
    return rows->first >= 0 ? CV_EXIT_INPUT : CV_EXIT_OK;
}

typedef struct diff_state {
    cv_module *build_m, *ref_m;
    cv_native *build_n, *ref_n;
    char *dir;
    cv_symmap map;
    cv_tensor *ins;             /* owned: n_in */
    int n_in;
    cv_diff_side build, ref;
} diff_state;

static int build_and_run(const diff_args *a, diff_state *st, cv_diag *d)
{
    if (!(st->build_m = cv_model_load(a->model, 0, d)))
        return -1;
    if (!(st->dir = cv_cli_make_tmpdir()))
        return cv_diag_fail(d, CV_E_IO_ERROR, (cv_span){0}, "cannot create a temporary directory");
    cv_compile_opts o = {.target = a->target, .opt_level = 2, .emit = CV_EMIT_SO | CV_EMIT_H,
                         .out_dir = st->dir, .sym_locs = true, .dump_values = true,
                         .test_faults = true};
    cv_compile_info info;
    if (cv_compile_native(st->build_m, &o, &info, d) || cv_symmap_load(st->dir, &st->map, d) ||
        cv_native_open(st->dir, a->threads, &st->build_n, d))
        return -1;
    st->n_in = cv_native_num_inputs(st->build_n);
    if (!(st->ins = calloc((size_t)st->n_in + 1, sizeof *st->ins)))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (read_inputs(a, st->build_n, st->ins, d))
        return -1;
    return cv_diff_native(st->build_n, st->ins, st->n_in, &st->build, d);
}

static int run_reference(const diff_args *a, diff_state *st, cv_diag *d)
{
    if (strcmp(a->against, "interp") == 0)
        return cv_diff_interp(a->model, st->ins, st->n_in, &st->ref, &st->ref_m, d);
    if (strncmp(a->against, "artifact:", 9) == 0)
        return run_artifact(a->against + 9, a->threads, st->ins, st->n_in, &st->ref, &st->ref_n, d);
    return cv_diff_onnxruntime(a->model, st->ins, st->n_in, &st->ref, d);
}

static void state_free(diff_state *st)
{
    cv_diff_side_free(&st->build);
    cv_diff_side_free(&st->ref);
    for (int i = 0; st->ins && i < st->n_in; i++)
        cv_tensor_free(&st->ins[i]);
    free(st->ins);
    if (st->build_n)
        cv_native_close(st->build_n);
    if (st->ref_n)
        cv_native_close(st->ref_n);
    cv_module_free(st->build_m);
    cv_module_free(st->ref_m);
    cv_symmap_free(&st->map);
    cv_cli_remove_tmpdir(st->dir);
}

static int run_diff(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_diff, argc, argv))
        return CV_EXIT_OK;
    diff_args a = {0};
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    diff_state *st = calloc(1, sizeof *st);     /* owned: large (two sides) */
    if (!st)
        return CV_EXIT_INTERNAL;
    cv_symmap_init(&st->map);
    cv_diff_rows rows = {0};
    rc = build_and_run(&a, st, &d) || run_reference(&a, st, &d) ||
                 cv_diff_compare(&st->map, &st->build, &st->ref, a.atol, a.rtol, &rows, &d)
             ? CV_EXIT_INTERNAL
             : report(&a, &st->map, &rows);
    free(rows.row);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    state_free(st);
    free(st);
    cv_diag_free(&d);
    return rc;
}

static const cv_cli_opt options[] = {
    {.short_name = 'i', .name = "input", .value = "NAME=F", .kind = CV_OPT_CALL,
     .call = cv_cli_input_arg, .at = offsetof(diff_args, in), .example = "x=x.npy",
     .help = "bind model input %NAME to the .npy file F"},
    CV_CLI_STR(0, "against", "REF", diff_args, against,
               "interp: the reference interpreter (fp64 accumulation; default); onnxruntime: "
               "ONNX Runtime (ONNX models; libonnxruntime.so.1 from the npm package "
               "onnxruntime-node, or $CUVIL_ONNXRUNTIME), every node's output compared with "
               "the last op lowered from it; artifact:DIR: another compiled artifact (tensors "
               "both have, by name)"),
    CV_CLI_STR('t', "target", "TARGET", diff_args, target, "the target to compile for"),
    {.name = "atol", .value = "A", .kind = CV_OPT_CALL, .call = tol_arg,
     .at = offsetof(diff_args, atol), .example = "1e-5", .help = "tolerance (default 1e-4)"},
    {.name = "rtol", .value = "R", .kind = CV_OPT_CALL, .call = tol_arg,
     .at = offsetof(diff_args, rtol), .example = "1e-2", .help = "tolerance (default 1e-3)"},
    CV_CLI_INT(0, "threads", "N", diff_args, threads, 1, 256,
               "native thread pool size (default 1)"),
    CV_CLI_FLAG(0, "json", diff_args, json, "the rows as JSON"),
    CV_CLI_END,
};

const cv_cli_command cv_cmd_diff = {
    "diff", "find the first layer where the compiled model deviates from a reference",
    "cuvil diff MODEL --input NAME=FILE.npy ...\n"
    "           [--against interp|onnxruntime|artifact:DIR] [-t TARGET] [--atol A]\n"
    "           [--rtol R] [--threads N] [--json]\n"
    "  Compiles a debug build of MODEL whose kernels each also write their result\n"
    "  to an output, runs it and the reference on the inputs, and prints one row\n"
    "  per kernel in program order: its ops, model line, max abs and relative error.\n"
    "  The first row whose error exceeds atol + rtol x |reference| is marked: the\n"
    "  op where the compiled code starts to deviate (exit status 1).\n",
    run_diff, options, NULL, NULL, sizeof(diff_args), NULL, "model", offsetof(diff_args, model),
};
