/* cuvil validate [--strict] [--json] FILE...
 * The pre-commit IR validator: prints every diagnostic of every file and
 * exits 1 if any has an error. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "compiler-core/cuvil.h"
#include "spec/spec.h"

extern const cv_cli_command cv_cmd_validate;

typedef struct validate_opts {
    bool strict, json, quiet;
    const char **files;   /* owned array */
    int n_files;
} validate_opts;

static int add_file(const char *arg, void *args)
{
    validate_opts *o = args;
    const char **more = realloc(o->files, ((size_t)o->n_files + 1) * sizeof *more);
    if (!more)
        return CV_EXIT_INTERNAL;
    o->files = more;
    o->files[o->n_files++] = arg;
    return 0;
}

/* Specs are YAML; everything else is a model for one of the front ends. */
static bool check_file(const char *path, const validate_opts *o, cv_diag *d)
{
    if (cv_spec_is_yaml_file(path))
        return cv_spec_validate_file(path, d) == 0 && !cv_diag_has_errors(d);
    cv_module *m = cv_model_load(path, CV_LOAD_CHECK_ONLY | (o->strict ? CV_LOAD_STRICT : 0), d);
    bool ok = m && !cv_diag_has_errors(d);
    cv_module_free(m);
    return ok;
}

static int validate_one(const char *path, const validate_opts *o, json_t *files)
{
    cv_diag d;
    cv_diag_init(&d);
    bool ok = check_file(path, o, &d);
    if (o->json) {
        json_t *f = json_object();
        json_object_set_new(f, "file", json_string(path));
        json_object_set_new(f, "ok", json_boolean(ok));
        json_object_set_new(f, "diagnostics", cv_diag_to_json(&d));
        json_array_append_new(files, f);
    } else {
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        if (ok && !o->quiet)
            printf("%s: ok\n", path);
    }
    int errors = ok ? 0 : (d.n_errors ? d.n_errors : 1);
    cv_diag_free(&d);
    return errors;
}

static int run_validate(int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_validate;
    if (cv_cli_wants_help(cmd, argc, argv))
        return CV_EXIT_OK;
    validate_opts o = {0};
    int rc = cv_cli_parse(cmd, NULL, argc, argv, 1, &o);
    if (rc == 0 && !o.n_files)
        rc = cv_cli_usage_error(cmd, "no files given");
    if (rc) {
        free(o.files);
        return rc;
    }
    json_t *files = json_array();
    int errors = 0;
    for (int i = 0; i < o.n_files; i++)
        errors += validate_one(o.files[i], &o, files);
    free(o.files);
    if (o.json) {
        json_t *out = json_pack("{s:o, s:i, s:b}", "files", files, "errors", errors, "ok", errors == 0);
        json_dumpf(out, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(out);
    } else {
        json_decref(files);
    }
    return errors ? CV_EXIT_INPUT : CV_EXIT_OK;
}

static const cv_cli_opt options[] = {
    CV_CLI_FLAG(0, "strict", validate_opts, strict,
                "also report unused values, dead params, duplicate names, constant outputs"),
    CV_CLI_FLAG(0, "json", validate_opts, json, "print the diagnostics as JSON on stdout"),
    CV_CLI_FLAG('q', "quiet", validate_opts, quiet, "print nothing for files without diagnostics"),
    CV_CLI_END,
};

const cv_cli_command cv_cmd_validate = {
    "validate", "check model files (CU-IR, ONNX, model language) and specs, print every diagnostic",
    "cuvil validate [--strict] [--json] [-q] FILE...\n"
    "  FILE       a model (.cuir, .onnx, .cvl.py) or a spec (.yaml, .yml)\n",
    run_validate, options,
    "exit: 0 no errors, 1 errors found, 2 usage\n",
    add_file, sizeof(validate_opts), NULL, NULL, 0,
};
