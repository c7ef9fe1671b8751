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

static int addr_arg(const cv_cli_command *cmd, const cv_cli_opt *opt, const char *v, void *args)
{
    (void)opt;
    sym_args *a = args;
    if (a->n_addr == MAX_ADDRS || parse_addr(v, &a->addr[a->n_addr]))
        return cv_cli_usage_error(cmd, "--addr takes an address such as 0x1a2b, got '%s'", v);
    a->n_addr++;
    return 0;
}

static int parse_args(sym_args *a, int argc, char **argv)
{
    int rc = cv_cli_parse(&cv_cmd_symbols, NULL, argc, argv, 1, a);
    if (rc == 0 && !a->artifact)
        return cv_cli_usage_error(&cv_cmd_symbols, "no artifact directory given");
    return rc;
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

static const cv_cli_opt options[] = {
    CV_CLI_FLAG(0, "json", sym_args, json, "the symbol map as JSON"),
    {.name = "addr", .value = "ADDR", .kind = CV_OPT_CALL, .call = addr_arg, .example = "0x1a2b",
     .help = "the kernel and model line a library-relative code address belongs to (exit 1 "
             "when it lies in no kernel; repeatable)"},
    CV_CLI_END,
};

const cv_cli_command cv_cmd_symbols = {
    "symbols", "show an artifact's symbol map: kernels, model lines, tensors",
    "cuvil symbols ARTIFACT_DIR|FILE.cvsym [--json] [--addr 0xADDR ...]\n"
    "  without options: kernels with their code ranges in the library, the ops fused\n"
    "  into each and their model lines; intermediate tensors with their arena offsets\n"
    "  and shapes\n",
    run_symbols, options,
    "Model lines are recorded by debug builds (cuvil compile -g).\n",
    NULL, sizeof(sym_args), NULL, "artifact", offsetof(sym_args, artifact),
};
