/* cuvil help [COMMAND | CVnnnn] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/diag.h"
#include "compiler-core/cuvil.h"

extern const cv_cli_command cv_cmd_help;

static int help_code(const char *arg)
{
    int code = cv_diag_parse_code(arg);
    const cv_diag_code_info *info = code >= 0 ? cv_diag_code_lookup(code) : NULL;
    if (!info) {
        fprintf(stderr, "cuvil help: no diagnostic code %s\n", arg);
        return CV_EXIT_USAGE;
    }
    printf("CV%04d %s: %s\n", info->code, info->name, info->summary);
    return CV_EXIT_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void onnx_ops(void)
{
    const char *names[1024];
    int n = 0;
    for (int i = 0, s; n < 1024 && cv_onnx_op_at(i, &s); i++) {
        const char *op = cv_onnx_op_at(i, &s);
        if (!op[0])
            continue;
        char *entry = malloc(strlen(op) + 16);
        if (!entry)
            continue;
        sprintf(entry, "%s\t%d", op, s);
        names[n++] = entry;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    printf("## ONNX ops (default domain)\n\n%d ops.  *since*: the first opset whose semantics the "
           "importer implements (models of opsets 7-18 are read).\n\n| op | since |\n|---|---|\n", n);
    for (int i = 0; i < n; i++) {
        char *tab = strchr(names[i], '\t');
        *tab = 0;
        printf("| %s | %s |\n", names[i], tab + 1);
        free((char *)names[i]);
    }
}

static void dsl_functions(void)
{
    int n = 0;
    while (cv_op_def_at(n))
        n++;
    printf("\n## Model language (`.cvl.py`)\n\n### `cvl.<op>`: the CU-IR op table\n\n"
           "%d functions.  *native*: compiled to native code (otherwise only `cuvil run "
           "--interp` runs it).  *epilogue*: on f32, fused into the store of the "
           "convolution or GEMM producing its operand.\n\n"
           "| function | operands | attributes | native | epilogue |\n"
           "|---|---|---|---|---|\n", n);
    for (int i = 0; i < n; i++) {
        const cv_op_def *def = cv_op_def_at(i);
        printf("| cvl.%s | ", def->name);
        if (def->max_operands < 0)
            printf("%d or more", def->min_operands);
        else if (def->max_operands == def->min_operands)
            printf("%d", def->min_operands);
        else
            printf("%d-%d", def->min_operands, def->max_operands);
        printf(" | ");
        for (const cv_attr_schema *a = def->attrs; a && a->name; a++)
            printf("%s%s", a == def->attrs ? "" : ", ", a->name);
        printf(" | %s | %s |\n", cv_op_native(def) ? "yes" : "no", CV_OP_EPI_ACT(def) ? "yes" : "");
    }
    printf("\n### Python builtins (evaluated at compile time)\n\n");
    for (int i = 0; cv_dsl_builtin_at(i); i++)
        printf("%s`%s`", i ? ", " : "", cv_dsl_builtin_at(i));
    printf("\n");
}

/* docs/ops.md (make docs): what the front ends accept, from their tables. */
static int help_ops(void)
{
    printf("# Supported ONNX ops and model-language functions\n\n"
           "Generated from the op tables by `make docs` (`cuvil help ops`); do not edit: "
           "`make test` checks that this file matches.\n\n");
    onnx_ops();
    dsl_functions();
    return CV_EXIT_OK;
}

typedef struct help_args {
    const char *topic;
} help_args;

static int run_help(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_help, argc, argv))
        return CV_EXIT_OK;
    help_args a = {0};
    int rc = cv_cli_parse(&cv_cmd_help, NULL, argc, argv, 1, &a);
    if (rc)
        return rc;
    if (a.topic && strcmp(a.topic, "ops") == 0)
        return help_ops();
    if (a.topic) {
        const cv_cli_command *cmd = cv_cli_find(a.topic);
        if (cmd) {
            cv_cli_print_usage(cmd, stdout);
            return CV_EXIT_OK;
        }
        if (cv_diag_parse_code(a.topic) >= 0)
            return help_code(a.topic);
        fprintf(stderr, "cuvil help: '%s' is neither a command nor a diagnostic code\n", a.topic);
        return CV_EXIT_USAGE;
    }
    printf("usage: cuvil <command> [options]\n\n"
           "Cuvil compiles AI-inference models (ONNX, the Cuvil model language, CU-IR)\n"
           "into native libraries, with a content-addressed cache and a build farm.\n\n"
           "commands:\n");
    int n;
    const cv_cli_command *const *cmds = cv_cli_commands(&n);
    for (int i = 0; i < n; i++)
        printf("  %-10s %s\n", cmds[i]->name, cmds[i]->summary);
    printf("\n'cuvil help <command>' shows a command's options; 'cuvil help CV3101' explains a code.\n"
           "exit codes: 0 ok, 1 errors in the input, 2 usage, 3 internal error.\n");
    return CV_EXIT_OK;
}

const cv_cli_command cv_cmd_help = {
    "help", "show help for a command or a diagnostic code",
    "cuvil help [COMMAND | CVnnnn | ops]\n"
    "  ops   the ONNX ops and model-language functions this build accepts (Markdown,\n"
    "        the text of docs/ops.md)\n",
    run_help, NULL, NULL, NULL, sizeof(help_args), NULL, "topic", offsetof(help_args, topic),
};
