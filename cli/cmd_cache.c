/* cuvil cache {stats,evict,clear,verify,serve}: looking after the
 * compilation cache and serving it to other machines (and to Bazel and
 * ccache, which speak the same HTTP layout). */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cli/cli.h"

extern const cv_cli_command cv_cmd_cache;

typedef struct cache_args {
    const char *sub;            /* the subcommand */
    const char *dir, *listen, *tokens;
    uint64_t max_size, max_request;
    bool json, zero;
    int threads, zstd_level;
    const char *model, *target, *precision;   /* explain */
    int opt_level;
} cache_args;

static int model_arg(const char *arg, void *args)
{
    cache_args *a = args;
    if (a->sub && strcmp(a->sub, "explain") == 0 && !a->model) {
        a->model = arg;
        return 0;
    }
    return cv_cli_usage_error(&cv_cmd_cache, "%s: unexpected argument '%s'",
                              a->sub ? a->sub : "cache", arg);
}

static int open_local(const cache_args *a, cv_cache **c)
{
    cv_cache_options o = {.dir = a->dir, .max_size = a->max_size, .remote = ""};
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_open(&o, c, &d);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    if (rc != 0)
        return CV_EXIT_INTERNAL;
    if (!cv_cache_enabled(*c))
        fprintf(stderr, "cuvil cache: the cache is off (CUVIL_CACHE=off)\n");
    return CV_EXIT_OK;
}

/* ---------------------------------------------------------------- stats */

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static uint64_t field(json_t *o, const char *name)
{
    return (uint64_t)json_integer_value(json_object_get(o, name));
}

/* The text form prints the JSON form's fields, by the same names, one group
 * a line: "l2  hits_local 1, hits_remote 0, misses 3 (25.0% hit rate)". */
static void print_group(const char *key, const char *label, json_t *o)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s%s", key, label ? " " : "", label ? label : "");
    printf("%-22s", name);
    const char *k;
    json_t *v;
    int i = 0;
    json_object_foreach(o, k, v) {
        char sz[32];
        printf("%s %s ", i++ ? "," : "", k);
        if (json_is_real(v))
            printf("%.3f", json_real_value(v));
        else if (strstr(k, "bytes") || strcmp(k, "max_size") == 0)
            printf("%s", cv_cache_format_size((uint64_t)json_integer_value(v), sz));
        else
            printf("%lld", (long long)json_integer_value(v));
    }
    if (!json_is_object(o))
        printf(" %lld", (long long)json_integer_value(o));
}

static void print_stats(json_t *j)
{
    printf("%-22s %s\n", "dir", json_string_value(json_object_get(j, "dir")));
    static const struct { const char *key, *label; } groups[] = {
        {"l1", "(front end)"}, {"l2", "(artifact)"}, {"code", "(generated code)"},
        {"miss_reasons", NULL}, {"blobs", NULL},
        {"store", NULL}, {"eviction", NULL}, {"corrupt", NULL}, {"remote", NULL},
        {"lookup_time_ms", NULL}, {"file_memo", NULL},
    };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        json_t *o = json_object_get(j, groups[i].key);
        print_group(groups[i].key, groups[i].label, o);
        if ((groups[i].key[0] == 'l' && groups[i].key[1] != 'o') ||
            strcmp(groups[i].key, "code") == 0) {
            uint64_t hits = field(o, "hits_local") + field(o, "hits_remote");
            printf(" (%.1f%% hit rate)", pct(hits, hits + field(o, "misses")));
        } else if (strcmp(groups[i].key, "store") == 0) {
            printf(" (%.1f%% of max_size)", pct(field(o, "bytes"), field(o, "max_size")));
        } else if (strcmp(groups[i].key, "lookup_time_ms") == 0) {
            printf(" (time spent looking entries up, not the compile time they saved)");
        }
        putchar('\n');
    }
}

static int cmd_stats(cv_cache *c, const cache_args *a)
{
    cv_cache_stats st;
    cv_diag d;
    cv_diag_init(&d);
    int rc = a->zero ? cv_cache_stats_zero(c, &d) : 0;
    if (rc == 0)
        rc = cv_cache_stats_get(c, &st, &d);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    if (rc != 0)
        return CV_EXIT_INTERNAL;
    json_t *j = cv_cache_stats_json(&st);
    json_object_set_new(j, "dir", json_string(cv_cache_dir(c)));
    json_object_set_new(j, "enabled", json_boolean(cv_cache_enabled(c)));
    if (a->json) {
        json_dumpf(j, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        if (a->zero)
            printf("statistics zeroed (the entries stay)\n");
        print_stats(j);
    }
    json_decref(j);
    return CV_EXIT_OK;
}

/* ------------------------------------------------- evict, clear, verify */

static int finish(cv_diag *d, int rc)
{
    cv_diag_print(d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(d);
    return rc != 0 ? CV_EXIT_INTERNAL : CV_EXIT_OK;
}

static int cmd_evict(cv_cache *c, const cache_args *a)
{
    cv_diag d;
    cv_diag_init(&d);
    uint64_t n = 0, freed = 0;
    int rc = cv_cache_evict(c, a->max_size, &n, &freed, &d);
    char buf[32];
    if (rc == 0)
        printf("evicted %llu %s (%s)\n", (unsigned long long)n,
               cv_cli_plural((long long)n, "entry", "entries"), cv_cache_format_size(freed, buf));
    return finish(&d, rc);
}

static int cmd_clear(cv_cache *c)
{
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_clear(c, &d);
    if (rc == 0)
        printf("cleared %s\n", cv_cache_dir(c));
    return finish(&d, rc);
}

static int cmd_verify(cv_cache *c)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_cache_verify_report r;
    int rc = cv_cache_verify(c, &r, &d);
    char buf[32];
    if (rc == 0)
        printf("checked %llu %s (%s): %llu corrupt (removed), %llu re-indexed, %llu stale "
               "index rows dropped\n", (unsigned long long)r.checked,
               cv_cli_plural((long long)r.checked, "entry", "entries"),
               cv_cache_format_size(r.bytes, buf),
               (unsigned long long)r.corrupt, (unsigned long long)r.indexed_added,
               (unsigned long long)r.index_dropped);
    rc = finish(&d, rc);
    return rc == CV_EXIT_OK && r.corrupt ? CV_EXIT_INPUT : rc;
}

/* ---------------------------------------------------------------- serve */

static int cmd_serve(const cache_args *a)
{
    if (!a->listen || !a->dir)
        return cv_cli_usage_error(&cv_cmd_cache, "serve needs --listen HOST:PORT and --dir DIR");
    /* SIGTERM/SIGINT are taken by sigwait below; the server's threads,
     * started after this, inherit the blocked mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    cv_cache_server_options o = {.listen = a->listen, .dir = a->dir, .max_size = a->max_size,
                                 .tokens_file = a->tokens, .max_request = a->max_request,
                                 .threads = a->threads, .zstd_level = a->zstd_level};
    cv_cache_server *s;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_server_start(&o, &s, &d);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    if (rc != 0)
        return CV_EXIT_INTERNAL;
    fprintf(stderr, "cuvil cache serve: listening on port %d, store %s\n", cv_cache_server_port(s),
            a->dir);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "cuvil cache serve: %s, finishing requests\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    cv_cache_server_stop(s, 10000);
    return CV_EXIT_OK;
}

static const char subcommands[] = "stats evict explain clear verify serve";

static int run_cache(int argc, char **argv)
{
    const cv_cli_command *cmd = &cv_cmd_cache;
    if (cv_cli_wants_help(cmd, argc, argv))
        return CV_EXIT_OK;
    if (argc < 2)
        return cv_cli_usage_error(cmd, "which cache command?");
    const char *sub = argv[1];
    size_t n = strlen(sub);
    const char *at = strstr(subcommands, sub);
    if (!n || !at || (at > subcommands && at[-1] != ' ') || (at[n] && at[n] != ' '))
        return cv_cli_usage_error(cmd, "unknown cache command '%s'", sub);
    cache_args a = {.sub = sub, .opt_level = 2};
    int rc = cv_cli_parse(cmd, sub, argc, argv, 2, &a);
    if (rc != CV_EXIT_OK)
        return rc;
    if (strcmp(sub, "explain") == 0)
        return a.model ? cv_cli_cache_explain(a.model, a.target, a.precision, a.opt_level)
                       : cv_cli_usage_error(cmd, "explain: no model given");
    if (strcmp(sub, "serve") == 0)
        return cmd_serve(&a);
    cv_cache *c;
    if ((rc = open_local(&a, &c)) != CV_EXIT_OK)
        return rc;
    if (strcmp(sub, "stats") == 0)
        rc = cmd_stats(c, &a);
    else if (strcmp(sub, "evict") == 0)
        rc = cmd_evict(c, &a);
    else if (strcmp(sub, "clear") == 0)
        rc = cmd_clear(c);
    else
        rc = cmd_verify(c);
    cv_cache_close(c);
    return rc;
}

#define LOCAL "stats evict clear verify"
static const cv_cli_opt options[] = {
    {.name = "json", .kind = CV_OPT_FLAG, .subs = "stats", .at = offsetof(cache_args, json),
     .help = "the statistics as one JSON object"},
    {.short_name = 'z', .name = "zero", .kind = CV_OPT_FLAG, .subs = "stats",
     .at = offsetof(cache_args, zero),
     .help = "reset the statistics first (like ccache -z); the entries stay"},
    {.name = "dir", .value = "DIR", .kind = CV_OPT_STR, .at = offsetof(cache_args, dir),
     .subs = LOCAL " serve",
     .help = "the cache (default $CUVIL_CACHE_DIR or ~/.cache/cuvil); serve needs it"},
    {.name = "max-size", .value = "N", .kind = CV_OPT_SIZE, .subs = "evict serve",
     .at = offsetof(cache_args, max_size),
     .help = "evict least-recently-used entries down to N (default: the limit, "
             "$CUVIL_CACHE_SIZE or 10Gi); sizes: 20Gi, 500M, 1.5G"},
    {.short_name = 't', .name = "target", .value = "TARGET", .kind = CV_OPT_STR,
     .subs = "explain", .at = offsetof(cache_args, target), .help = "the compile's target"},
    {.short_name = 'O', .value = "N", .kind = CV_OPT_INT, .flags = CV_OPT_ATTACHED, .lo = 0,
     .hi = 3, .subs = "explain", .at = offsetof(cache_args, opt_level),
     .help = "the compile's optimisation level (default -O2)"},
    {.short_name = 'p', .name = "precision", .value = "PRECISION", .kind = CV_OPT_CHOICE,
     .choices = "fp32|fp16|bf16|int8", .subs = "explain", .at = offsetof(cache_args, precision),
     .help = "the compile's precision (default fp32)"},
    {.name = "listen", .value = "HOST:PORT", .kind = CV_OPT_STR, .subs = "serve",
     .at = offsetof(cache_args, listen), .help = "where to serve (required)"},
    {.name = "tokens", .value = "FILE", .kind = CV_OPT_STR, .subs = "serve",
     .at = offsetof(cache_args, tokens), .help = "one 'TOKEN rw' or 'TOKEN ro' a line"},
    {.name = "max-request", .value = "N", .kind = CV_OPT_SIZE, .subs = "serve",
     .at = offsetof(cache_args, max_request), .help = "the largest request body taken"},
    {.name = "threads", .value = "N", .kind = CV_OPT_INT, .lo = 0, .hi = 256, .subs = "serve",
     .at = offsetof(cache_args, threads), .help = "request threads (0: the default)"},
    {.name = "zstd-level", .value = "N", .kind = CV_OPT_INT, .lo = 0, .hi = 256, .subs = "serve",
     .at = offsetof(cache_args, zstd_level), .help = "compression level (0: the default)"},
    CV_CLI_END,
};
#undef LOCAL

const cv_cli_command cv_cmd_cache = {
    "cache", "inspect and maintain the compilation cache; serve it over HTTP",
    "cuvil cache COMMAND [options]\n"
    "\n"
    "  stats [--json] [-z|--zero]\n"
    "           hits and misses per level (local, remote), miss reasons, size vs\n"
    "           limit, evictions, remote errors, the average look-up time (not\n"
    "           compile time saved); the text and --json use the same field names\n"
    "  evict [--max-size N]\n"
    "           evict least-recently-used entries down to N\n"
    "  explain MODEL [-t TARGET] [-O0..-O3] [-p PRECISION]\n"
    "           name the key fields in which this compile differs from the closest\n"
    "           stored entry, per level\n"
    "  clear    remove every entry (statistics stay)\n"
    "  verify   re-hash every entry, drop corrupt ones (exit 1 if any), re-index\n"
    "           files the index lacks\n"
    "  serve --listen HOST:PORT --dir DIR [--max-size N] [--tokens FILE]\n"
    "        [--max-request N] [--threads N] [--zstd-level N]\n"
    "           serve DIR in the bazel-remote HTTP layout (GET/HEAD/PUT\n"
    "           /cas/<sha256>, /ac/<sha256>; /metrics, /status) until SIGTERM\n"
    "\n",
    run_cache, options, NULL, model_arg, sizeof(cache_args), subcommands, NULL, 0,
};
