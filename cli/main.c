/* cuvil: one binary, subcommands like git. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#ifdef __SANITIZE_ADDRESS__
/* The sanitized cuvil every test runs: LeakSanitizer (GCC 12) records a
 * bogus dynamic-TLS range for artifacts and LLVM libraries dlopened and
 * dlclosed in one process, and its tracer then crashes at exit reading it
 * ("Tracer caught signal 11", exit 1 after a successful compile --force in
 * test_artifact_names).  Leaks are still checked; only thread-local storage
 * is not scanned for pointers, which could report a leak too many, never
 * hide one (as tests/unit/test_cuda_util.h does for the test binaries). */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "use_tls=0";
}
#endif

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
