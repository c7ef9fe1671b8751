/* cuvil symbols ARTIFACT [--json] [--addr 0xADDR ...]
 * Prints an artifact's symbol map (<name>.cvsym): its kernels, the ops and
 * model lines each implements, their code ranges, the intermediate tensors;
 * --addr names the kernel and model line a library address belongs to. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "symbols/symbols.h"

extern const cv_cli_command cv_cmd_symbols;

enum { MAX_ADDRS = 64 };

typedef struct sym_args {
    const char *artifact;
    bool json;
    uint64_t addr[MAX_ADDRS];
    int n_addr;
} sym_args;

static int parse_addr(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_args(sym_args *a, int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_symbols;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--json") == 0) {
            a->json = true;
        } else if (strcmp(s, "--addr") == 0 && i + 1 < argc) {
            if (a->n_addr == MAX_ADDRS || parse_addr(argv[++i], &a->addr[a->n_addr]))
                return cv_cli_usage_error(cmd, "--addr takes an address such as 0x1a2b, got '%s'",
                                          argv[i]);
            a->n_addr++;
        } else if (s[0] == '-') {
            return cv_cli_usage_error(cmd, "unknown or incomplete option '%s'", s);
        } else if (!a->artifact) {
            a->artifact = s;
        } else {
            return cv_cli_usage_error(cmd, "more than one artifact given ('%s')", s);
        }
    }
    return a->artifact ? 0 : cv_cli_usage_error(cmd, "no artifact directory given");
}

/* Exit 1 when an address lies in no kernel. */
static int print_addrs(const sym_args *a, const cv_symmap *m)
{
    int rc = CV_EXIT_OK;
    for (int i = 0; i < a->n_addr; i++) {
        int k = cv_symmap_find_addr(m, a->addr[i]);
        char line[1024] = "not in any kernel";
        if (k >= 0)
            cv_symmap_describe_kernel(m, k, line, sizeof line);
        else
            rc = CV_EXIT_INPUT;
        if (a->json)
            printf("{\"addr\": %" PRIu64 ", \"kernel\": %d, \"text\": \"%s\"}\n", a->addr[i], k,
                   k >= 0 ? m->kernels[k].name : "");
        else
            printf("0x%" PRIx64 "  %s\n", a->addr[i], line);
    }
    return rc;
}

static int run_symbols(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_symbols, argc, argv))
        return CV_EXIT_OK;
    sym_args a = {0};
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc;
    cv_diag d;
    cv_diag_init(&d);
    cv_symmap m;
    if (cv_symmap_load(a.artifact, &m, &d)) {
        cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
        cv_diag_free(&d);
        return CV_EXIT_INPUT;
    }
    if (a.n_addr) {
        rc = print_addrs(&a, &m);
    } else if (a.json) {
        char *s = cv_symmap_to_json(&m);
        rc = s ? (puts(s), CV_EXIT_OK) : CV_EXIT_INTERNAL;
        free(s);
    } else {
        cv_symmap_print(&m, stdout);
    }
    cv_symmap_free(&m);
    cv_diag_free(&d);
    return rc;
}

const cv_cli_command cv_cmd_symbols = {
    "symbols", "show an artifact's symbol map: kernels, model lines, tensors",
    "cuvil symbols ARTIFACT_DIR|FILE.cvsym [--json] [--addr 0xADDR ...]\n"
    "  (default)     kernels with their code ranges in the library, the ops fused\n"
    "                into each and their model lines; intermediate tensors with\n"
    "                their arena offsets and shapes\n"
    "  --json        the symbol map as JSON\n"
    "  --addr ADDR   the kernel and model line a library-relative code address\n"
    "                belongs to (exit 1 when it lies in no kernel)\n"
    "Model lines are recorded by debug builds (cuvil compile -g).\n",
    run_symbols,
};
