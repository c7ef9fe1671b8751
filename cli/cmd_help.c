/* cuvil help [COMMAND | CVnnnn] */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/diag.h"

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

static int run_help(int argc, char **argv)
{
    if (argc >= 2) {
        const cv_cli_command *cmd = cv_cli_find(argv[1]);
        if (cmd) {
            printf("usage: %s", cmd->usage);
            return CV_EXIT_OK;
        }
        if (cv_diag_parse_code(argv[1]) >= 0)
            return help_code(argv[1]);
        fprintf(stderr, "cuvil help: '%s' is neither a command nor a diagnostic code\n", argv[1]);
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
    "cuvil help [COMMAND | CVnnnn]\n", run_help,
};
