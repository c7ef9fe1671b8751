/* cuvil artifacts get REVISION MODEL TARGET [PRECISION] -o DIR
 * cuvil artifacts list [REVISION]
 * The artifacts a farm built, fetched from the cache by what the build DB
 * recorded (the file list's digest, or the L2 key for a planner hit). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fs.h"
#include "controller/builddb.h"
#include "compile/build.h"

extern const cv_cli_command cv_cmd_artifacts;

typedef struct artifacts_args {
    const char *state, *cache, *remote, *verify_key, *out;
    const char *pos[4];     /* REVISION MODEL TARGET PRECISION */
    int n_pos;
    bool force;
} artifacts_args;

static int pos_arg(const char *arg, void *args)
{
    artifacts_args *a = args;
    if (a->n_pos == 4)
        return cv_cli_usage_error(&cv_cmd_artifacts, "unexpected argument '%s'", arg);
    a->pos[a->n_pos++] = arg;
    return 0;
}

static const char *remote_of(const artifacts_args *a)
{
    const char *r = a->remote ? a->remote : getenv("CUVIL_REMOTE_CACHE");
    return r && *r ? r : NULL;
}

/* The key that checks the farm's signed action entries: the flag, the
 * environment's, else the farm's own pair in its state directory. */
static char *verify_key_of(const artifacts_args *a)
{
    const char *k = a->verify_key ? a->verify_key : getenv("CUVIL_REMOTE_CACHE_VERIFY_KEY");
    if (k && *k)
        return strdup(k);
    char *path = cv_fs_join(a->state, "keys/ac-verify.pem");
    if (path && access(path, R_OK) == 0)
        return path;
    free(path);
    return NULL;
}

static int get_artifact(const artifacts_args *a, cv_builddb *db, cv_diag *d)
{
    char revision[CV_REVISION_MAX + 1], l2[CV_DIGEST_HEX + 1], manifest[CV_DIGEST_HEX + 1];
    const char *precision = a->n_pos == 4 ? a->pos[3] : "fp32";
    int found = cv_builddb_revision_resolve(db, a->pos[0], revision, d);
    if (found == 1)
        found = cv_builddb_artifact_find(db, revision, a->pos[1], a->pos[2], precision, l2,
                                         manifest, d);
    if (found == 0)
        cv_diag_error(d, CV_E_ARTIFACT_NOT_FOUND, (cv_span){0}, "no artifact of %s for %s %s in revision %s",
                      a->pos[1], a->pos[2], precision, a->pos[0]);
    if (found != 1)
        return CV_EXIT_INPUT;
    char *verify = NULL;
    const char *remote = remote_of(a);
    if (remote && !(verify = verify_key_of(a))) {
        cv_diag_error(d, CV_E_ARTIFACT_UNVERIFIED_REMOTE, (cv_span){0},
                      "cannot verify action entries from the remote cache %.200s: give the "
                      "farm's verify key (--verify-key, $CUVIL_REMOTE_CACHE_VERIFY_KEY, or "
                      "%s/keys/ac-verify.pem)", remote, a->state);
        return CV_EXIT_INPUT;
    }
    cv_cache *cache = NULL;
    cv_cache_options co = {.dir = a->cache, .remote = remote ? remote : "", .sign_key = "",
                           .verify_key = verify ? verify : ""};
    int opened = cv_cache_open(&co, &cache, d);
    free(verify);
    if (opened != 0)
        return CV_EXIT_INTERNAL;
    int rc = cv_build_fetch_artifact(cache, l2, manifest, a->out, a->force, d);
    cv_cache_close(cache);
    if (rc == 0)
        cv_diag_error(d, CV_E_ARTIFACT_NOT_FOUND, (cv_span){0}, "the cache no longer holds the artifact of %s for "
                      "%s %s (L2 key %.16s...): rebuild it with `cuvil submit`",
                      a->pos[1], a->pos[2], precision, l2);
    if (rc != 1)
        return rc == -1 ? CV_EXIT_INTERNAL : CV_EXIT_INPUT;
    printf("%s\n", a->out);
    return CV_EXIT_OK;
}

static int print_row(void *ctx, const cv_job_row *row)
{
    (void)ctx;
    printf("%-40s %-20s %-5s %-8s %s\n", row->model_path, row->target, row->precision,
           row->state, row->pipeline);
    return 0;
}

static int list_artifacts(const artifacts_args *a, cv_builddb *db, cv_diag *d)
{
    char revision[CV_REVISION_MAX + 1];
    int found = cv_builddb_revision_resolve(db, a->n_pos ? a->pos[0] : "latest", revision, d);
    cv_rev_summary s;
    if (found == 1)
        found = cv_builddb_revision_summary(db, revision, &s, d);
    if (found == 0)
        cv_diag_error(d, CV_E_BUILDDB_UNKNOWN_REVISION, (cv_span){0}, "no revision '%s'", a->n_pos ? a->pos[0] : "latest");
    if (found != 1)
        return CV_EXIT_INPUT;
    printf("# %s (%s)\n", s.revision, cv_rev_state_name(s.state));
    return cv_builddb_jobs_visit(db, s.id, false, print_row, NULL, d) ? CV_EXIT_INTERNAL
                                                                      : CV_EXIT_OK;
}

static int run_artifacts(int argc, char **argv)
{
    if (cv_cli_wants_help(&cv_cmd_artifacts, argc, argv))
        return CV_EXIT_OK;
    bool get = argc >= 2 && strcmp(argv[1], "get") == 0;
    bool list = argc >= 2 && strcmp(argv[1], "list") == 0;
    if (!get && !list)
        return cv_cli_usage_error(&cv_cmd_artifacts, "expected 'get' or 'list'");
    artifacts_args a = {.state = cv_cli_default_state()};
    int rc = cv_cli_parse(&cv_cmd_artifacts, argv[1], argc, argv, 2, &a);
    if (rc)
        return rc;
    if (get && (a.n_pos < 3 || !a.out))
        return cv_cli_usage_error(&cv_cmd_artifacts, "get needs REVISION MODEL TARGET and -o DIR");
    if (list && a.n_pos > 1)
        return cv_cli_usage_error(&cv_cmd_artifacts, "list takes at most a REVISION");
    cv_diag d;
    cv_diag_init(&d);
    cv_builddb *db = NULL;
    rc = cv_cli_open_builddb(a.state, &db, &d) != 0 ? CV_EXIT_INPUT
         : get                                       ? get_artifact(&a, db, &d)
                                                     : list_artifacts(&a, db, &d);
    cv_builddb_close(db);
    cv_diag_print(&d, stderr, cv_cli_use_color(stderr));
    cv_diag_free(&d);
    return rc;
}

static const cv_cli_opt options[] = {
    {.short_name = 'o', .value = "DIR", .kind = CV_OPT_STR, .subs = "get",
     .at = offsetof(artifacts_args, out), .help = "where the artifact's files are written"},
    {.name = "force", .kind = CV_OPT_FLAG, .subs = "get", .at = offsetof(artifacts_args, force),
     .help = "replace an artifact of the same name made from another model in DIR (CV5035 "
             "otherwise)"},
    CV_CLI_STR(0, "state", "DIR", artifacts_args, state,
               "the farm's state directory (default $CUVIL_FARM_STATE or .cuvil-farm)"),
    {.name = "cache", .value = "DIR", .kind = CV_OPT_STR, .subs = "get",
     .at = offsetof(artifacts_args, cache),
     .help = "the cache (default $CUVIL_CACHE_DIR or ~/.cache/cuvil)"},
    {.name = "remote-cache", .value = "URL", .kind = CV_OPT_STR, .subs = "get",
     .at = offsetof(artifacts_args, remote),
     .help = "also look in a shared cache (default $CUVIL_REMOTE_CACHE)"},
    {.name = "verify-key", .value = "PEM", .kind = CV_OPT_STR, .subs = "get",
     .at = offsetof(artifacts_args, verify_key),
     .help = "the farm's action-cache verify key, required with a remote (default "
             "$CUVIL_REMOTE_CACHE_VERIFY_KEY, else STATE/keys/ac-verify.pem): unsigned or "
             "foreign entries are refused (CV9314)"},
    CV_CLI_END,
};

const cv_cli_command cv_cmd_artifacts = {
    "artifacts", "list or fetch the artifacts a farm built",
    "cuvil artifacts get REVISION MODEL TARGET [PRECISION] -o DIR [options]\n"
    "cuvil artifacts list [REVISION] [--state DIR]\n"
    "  REVISION   ref@sha1:COMMIT, a commit id or prefix, or latest\n"
    "  MODEL      the model's path in the repository\n"
    "  PRECISION  fp32 (default), fp16, bf16, int8\n",
    run_artifacts, options, NULL, pos_arg, sizeof(artifacts_args), "get list", NULL, 0,
};
