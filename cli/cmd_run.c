/* cuvil run MODEL|ARTIFACT_DIR [--interp] --input NAME=FILE.npy ... --output DIR
 * Runs a model on .npy inputs (natively, or with the reference interpreter)
 * and writes one .npy per output. */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run_io.h"
#include "common/fs.h"
#include "common/npy.h"
#include "compiler-core/cuvil.h"
#include "symbols/symbols.h"

extern const cv_cli_command cv_cmd_run;

typedef struct run_opts {
    const char *model, *out_dir;
    cv_cli_inputs in;
    int threads;
    bool interp, json, trace;
} run_opts;

/* The model's inputs and outputs, from its IR or its artifact manifest. */
typedef struct run_sig {
    int n_in, n_out;
    const char **in_name, **out_name;   /* owned arrays (borrowed names) */
    char **in_sig;                      /* owned: "f32[batch,4]" per input */
    cv_dtype *in_dt;                    /* owned */
} run_sig;

static int sig_alloc(run_sig *sg, int n_in, int n_out)
{
    *sg = (run_sig){.n_in = n_in, .n_out = n_out};
    sg->in_name = calloc((size_t)n_in + 1, sizeof *sg->in_name);
    sg->in_sig = calloc((size_t)n_in + 1, sizeof *sg->in_sig);
    sg->in_dt = calloc((size_t)n_in + 1, sizeof *sg->in_dt);
    sg->out_name = calloc((size_t)n_out + 1, sizeof *sg->out_name);
    return sg->in_name && sg->in_sig && sg->in_dt && sg->out_name ? 0 : -1;
}

static void sig_free(run_sig *sg)
{
    for (int i = 0; sg->in_sig && i < sg->n_in; i++)
        free(sg->in_sig[i]);
    free(sg->in_sig);
    free(sg->in_name);
    free(sg->in_dt);
    free(sg->out_name);
}

static int parse_args(run_opts *o, int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_run;
    int rc = cv_cli_parse(cmd, NULL, argc, argv, 1, o);
    if (rc)
        return rc;
    if (!o->model)
        return cv_cli_usage_error(cmd, "no model given");
    if (!o->threads)
        o->threads = 1;
    return 0;
}

/* "f32[2,5]": what was given or computed. */
static void shape_text(cv_dtype dt, int rank, const int64_t *dims, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "%s[", cv_dtype_name(dt));
    for (int k = 0; k < rank && at < size; k++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? "," : "", (long long)dims[k]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
}

/* float64 .npy files are what numpy writes by default: accept them for any
 * float input by rounding; everything else must match exactly. */
static int npy_to_input(const cv_npy *n, const char *name, cv_dtype want, const char *sig,
                        cv_tensor *t, cv_diag *d, const char *file)
{
    if (n->dtype != want && !(n->dtype == CV_F64 && cv_dtype_is_float(want))) {
        char have[512];
        shape_text(n->dtype, n->rank, n->dims, have, sizeof have);
        return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){.file = file}, "input %%%s must be %s, but %s "
                            "holds %s", name, sig ? sig : cv_dtype_name(want), file, have);
    }
    if (cv_tensor_alloc(t, want, n->rank, n->dims))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = file}, "cannot allocate input %%%s", name);
    if (n->dtype == want) {
        memcpy(t->data, n->data, cv_tensor_nbytes(t));
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            cv_tensor_set(t, i, ((const double *)n->data)[i]);
    }
    return 0;
}

int cv_cli_read_input(const char *file, const char *name, cv_dtype want, const char *sig,
                      cv_tensor *t, cv_diag *d)
{
    cv_npy n;
    if (cv_npy_read(file, &n, d))
        return -1;
    int rc = npy_to_input(&n, name, want, sig, t, d, file);
    cv_npy_free(&n);
    return rc;
}

/* "%x (f32[batch,4]), %mask (i64[batch])": the inputs, for errors. */
static void list_inputs(const run_sig *sg, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < sg->n_in && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%%%s (%s)", i ? ", " : "",
                               sg->in_name[i], sg->in_sig[i]);
}

/* Unknown --input names first: a misspelt name would otherwise be
 * reported as the missing input it was meant for. */
static int load_inputs(const run_opts *o, const run_sig *sg, cv_tensor *ins, cv_diag *d)
{
    char list[2048];
    list_inputs(sg, list, sizeof list);
    for (int k = 0; k < o->in.n; k++) {
        bool known = false;
        for (int i = 0; i < sg->n_in && !known; i++)
            known = strcmp(sg->in_name[i], o->in.names[k]) == 0;
        if (!known)
            return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){.file = o->model}, "the model has no input "
                                "%%%s; its inputs are %s", o->in.names[k],
                                sg->n_in ? list : "none");
    }
    for (int i = 0; i < sg->n_in; i++) {
        int k = 0;
        while (k < o->in.n && strcmp(o->in.names[k], sg->in_name[i]) != 0)
            k++;
        if (k == o->in.n)
            return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){.file = o->model}, "no --input given for "
                                "%%%s (%s): pass --input %s=FILE.npy", sg->in_name[i],
                                sg->in_sig[i], sg->in_name[i]);
        if (cv_cli_read_input(o->in.files[k], sg->in_name[i], sg->in_dt[i], sg->in_sig[i],
                              &ins[i], d))
            return -1;
    }
    return 0;
}

int cv_cli_check_input_names(const char *model, const char *const *names, int n,
                             const cv_native *nat, cv_diag *d)
{
    char list[2048], sig[512];
    size_t at = 0;
    list[0] = 0;
    for (int i = 0; i < cv_native_num_inputs(nat) && at < sizeof list; i++) {
        cv_native_io_format(nat, cv_native_input(nat, i), sig, sizeof sig);
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%%%s (%s)", i ? ", " : "",
                               cv_native_input(nat, i).name, sig);
    }
    for (int k = 0; k < n; k++) {
        bool known = false;
        for (int i = 0; i < cv_native_num_inputs(nat) && !known; i++)
            known = strcmp(cv_native_input(nat, i).name, names[k]) == 0;
        if (!known)
            return cv_diag_fail(d, CV_E_INPUT_MISMATCH, (cv_span){.file = model}, "the model has no input "
                                "%%%s; its inputs are %s", names[k], list);
    }
    return 0;
}

/* The file output i is written to (docs/artifact-c.md): its name with every
 * character but [A-Za-z0-9_.-] as '_' and ".npy" after it; output<i>.npy
 * for an empty name, one starting with '.', or one an earlier output took. */
static void output_file(const run_sig *sg, int i, char *buf, size_t size)
{
    const char *n = sg->out_name[i];
    bool ok = n[0] && n[0] != '.' && strlen(n) + 5 < size;
    for (int k = 0; ok && k < i; k++)
        ok = strcmp(sg->out_name[k], n) != 0;
    if (!ok) {
        snprintf(buf, size, "output%d.npy", i);
        return;
    }
    size_t o = 0;
    for (; *n; n++)
        buf[o++] = isalnum((unsigned char)*n) || *n == '_' || *n == '.' || *n == '-' ? *n : '_';
    snprintf(buf + o, size - o, ".npy");
}

/* "[0.1, -2, 3.5, ... ]": the first few values, when no --output is given. */
static void print_values(const cv_tensor *t)
{
    int64_t shown = t->numel < 6 ? t->numel : 6;
    fputs("[", stdout);
    for (int64_t e = 0; e < shown; e++)
        printf("%s%.6g", e ? ", " : "", cv_tensor_get(t, e));
    printf("%s]", t->numel > shown ? ", ..." : "");
}

static int write_outputs(const run_opts *o, const run_sig *sg, cv_tensor *outs, cv_diag *d,
                         json_t *report)
{
    if (o->out_dir && cv_fs_mkdirs(o->out_dir, 0755))
        return cv_diag_fail(d, CV_E_IO_ERROR, (cv_span){.file = o->out_dir}, "cannot create %s", o->out_dir);
    for (int i = 0; i < sg->n_out; i++) {
        char name[256];
        output_file(sg, i, name, sizeof name);
        char *path = o->out_dir ? cv_fs_join(o->out_dir, name) : NULL;
        if (path && cv_npy_write(path, outs[i].dtype, outs[i].rank, outs[i].dims, outs[i].data, d)) {
            free(path);
            return -1;
        }
        json_t *dims = json_array();
        for (int k = 0; k < outs[i].rank; k++)
            json_array_append_new(dims, json_integer(outs[i].dims[k]));
        json_array_append_new(report, json_pack("{s:s, s:s?, s:s, s:o}", "name", sg->out_name[i],
                                                "path", path, "dtype",
                                                cv_dtype_name(outs[i].dtype), "shape", dims));
        if (!o->out_dir && !o->json) {
            char sig[512];
            shape_text(outs[i].dtype, outs[i].rank, outs[i].dims, sig, sizeof sig);
            printf("%%%s %s = ", sg->out_name[i], sig);
            print_values(&outs[i]);
            putchar('\n');
        }
        free(path);
    }
    return 0;
}

static void free_tensors(cv_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        cv_tensor_free(&t[i]);
}

static int run_interp(const run_opts *o, cv_diag *d, json_t *report)
{
    cv_module *m = cv_model_load(o->model, 0, d);
    if (!m)
        return CV_EXIT_INPUT;
    const cv_func *f = m->funcs[0];
    run_sig sg;
    cv_tensor *ins = calloc((size_t)f->n_inputs + 1, sizeof *ins);
    cv_tensor *outs = calloc((size_t)f->n_returns + 1, sizeof *outs);
    int rc = CV_EXIT_INPUT;
    if (sig_alloc(&sg, f->n_inputs, f->n_returns) || !ins || !outs) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory");
    } else {
        for (int i = 0; i < sg.n_in; i++) {
            char buf[512];
            cv_type_format(&f->inputs[i]->type, buf, sizeof buf);
            sg.in_name[i] = f->inputs[i]->name;
            sg.in_sig[i] = strdup(buf);
            sg.in_dt[i] = f->inputs[i]->type.dtype;
        }
        for (int i = 0; i < sg.n_out; i++)
            sg.out_name[i] = f->returns[i]->name;
        if (load_inputs(o, &sg, ins, d) == 0 && cv_interp_run(f, ins, f->n_inputs, outs, d) == 0)
            rc = write_outputs(o, &sg, outs, d, report) ? CV_EXIT_INTERNAL : CV_EXIT_OK;
    }
    if (ins)
        free_tensors(ins, sg.n_in);
    if (outs && rc != CV_EXIT_INPUT)
        free_tensors(outs, sg.n_out);
    free(ins);
    free(outs);
    sig_free(&sg);
    cv_module_free(m);
    return rc;
}

/* --trace: a crash inside a kernel names its model line (symbols.h). */
static void install_trace(const char *dir, cv_diag *d)
{
    cv_symmap m;
    if (cv_symmap_load(dir, &m, d))
        return;     /* the run goes on without it; the warning says why */
    char suffix[300];
    snprintf(suffix, sizeof suffix, "/%s", m.library ? m.library : "");
    if (!m.library || cv_symbols_trace_install(&m, suffix))
        fprintf(stderr, "cuvil run: --trace: the artifact's library is not loaded\n");
    cv_symmap_free(&m);
}

static int run_native(const run_opts *o, cv_diag *d, json_t *report)
{
    cv_native *n;
    char *tmp;
    double ms;
    if (cv_cli_open_native(o->model, o->threads, &n, &tmp, &ms, d))
        return CV_EXIT_INPUT;
    if (o->trace)
        install_trace(tmp ? tmp : o->model, d);
    run_sig sg;
    int rc = sig_alloc(&sg, cv_native_num_inputs(n), cv_native_num_outputs(n));
    cv_tensor *ins = calloc((size_t)sg.n_in + 1, sizeof *ins);
    cv_tensor *outs = calloc((size_t)sg.n_out + 1, sizeof *outs);
    for (int i = 0; rc == 0 && i < sg.n_in; i++) {
        char buf[512];
        cv_native_io_format(n, cv_native_input(n, i), buf, sizeof buf);
        sg.in_name[i] = cv_native_input(n, i).name;
        sg.in_sig[i] = strdup(buf);
        sg.in_dt[i] = cv_native_input(n, i).dtype;
    }
    for (int i = 0; rc == 0 && i < sg.n_out; i++)
        sg.out_name[i] = cv_native_output(n, i).name;
    if (rc || !ins || !outs)
        rc = (cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory"), CV_EXIT_INTERNAL);
    else if (load_inputs(o, &sg, ins, d) == 0 && cv_native_run(n, ins, sg.n_in, outs, d) == 0)
        rc = write_outputs(o, &sg, outs, d, report) ? CV_EXIT_INTERNAL : CV_EXIT_OK;
    else
        rc = CV_EXIT_INPUT;
    if (ins)
        free_tensors(ins, sg.n_in);
    if (outs)
        free_tensors(outs, sg.n_out);
    free(ins);
    free(outs);
    sig_free(&sg);
    cv_native_close(n);
    cv_cli_remove_tmpdir(tmp);
    return rc;
}

static int run_run(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_run, argc, argv))
        return CV_EXIT_OK;
    run_opts o = {0};
    int rc = parse_args(&o, argc, argv);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    json_t *report = json_array();
    rc = o.interp ? run_interp(&o, &d, report) : run_native(&o, &d, report);
    if (o.json) {
        json_t *out = json_pack("{s:b, s:o, s:o}", "ok", rc == 0, "outputs", report,
                                "diagnostics", cv_diag_to_json(&d));
        json_dumpf(out, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(out);
    } else {
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        for (size_t i = 0; o.out_dir && i < json_array_size(report); i++) {
            json_t *r = json_array_get(report, i);
            printf("%s: %%%s %s\n", json_string_value(json_object_get(r, "path")),
                   json_string_value(json_object_get(r, "name")),
                   json_string_value(json_object_get(r, "dtype")));
        }
        json_decref(report);
    }
    cv_diag_free(&d);
    return rc;
}

static const cv_cli_opt options[] = {
    CV_CLI_FLAG(0, "interp", run_opts, interp,
                "run with the reference interpreter (fp64 accumulation); default: compile the "
                "model for this machine (or load a compiled artifact directory) and run it "
                "natively"),
    CV_CLI_INT(0, "threads", "N", run_opts, threads, 1, 256,
               "native thread pool size (default 1)"),
    {.short_name = 'i', .name = "input", .value = "NAME=F", .kind = CV_OPT_CALL,
     .call = cv_cli_input_arg, .at = offsetof(run_opts, in), .example = "x=x.npy",
     .help = "bind model input %NAME to the .npy file F (float64 files are rounded to the "
             "input's float type)"},
    CV_CLI_STR('o', "output", "DIR", run_opts, out_dir,
               "write one .npy per output into DIR, named after the output (characters other "
               "than [A-Za-z0-9_.-] as '_'); without it, print each output's name, type and "
               "first values"),
    CV_CLI_FLAG(0, "json", run_opts, json, "report outputs and diagnostics as JSON"),
    CV_CLI_FLAG(0, "trace", run_opts, trace,
                "a crash inside a kernel prints the kernel's ops and model line (from the "
                "artifact's symbol map) before dying"),
    CV_CLI_END,
};

const cv_cli_command cv_cmd_run = {
    "run", "run a model on .npy inputs",
    "cuvil run MODEL|ARTIFACT_DIR [--interp] --input NAME=FILE.npy ...\n"
    "          [--output DIR] [--threads N] [--json] [--trace]\n",
    run_run, options, NULL, NULL, sizeof(run_opts), NULL, "model", offsetof(run_opts, model),
};
