/* cuvil: one binary, subcommands like git. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        const cv_cli_command *help = cv_cli_find("help");
        help->run(1, argv);
        return CV_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        name = "version";
    else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    const cv_cli_command *cmd = cv_cli_find(name);
    if (!cmd) {
        fprintf(stderr, "cuvil: '%s' is not a cuvil command; see 'cuvil help'\n", argv[1]);
        return CV_EXIT_USAGE;
    }
    return cmd->run(argc - 1, argv + 1);
}
