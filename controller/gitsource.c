/* The git source: a bare mirror of one ref of the models repository under
 * the state directory.
 *
 * A poll connects once, lists the remote's refs (the cheap ls-remote) and
 * downloads over the same connection only when the ref moved, so a quiet
 * repository costs one round trip per interval.  The fetch refspec is
 * forced ("+ref:ref"): a force-pushed branch is followed, not refused.
 * Local paths and file:// URLs go through libgit2's local transport, so
 * they behave exactly like remote ones.
 *
 * A failure never stops the controller: it is recorded in the status and
 * the next attempt waits base * 2^(failures-1), capped. */
#include "controller/controller.h"

#include <git2.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "controller/gitsource_internal.h"
#include "controller/internal.h"

#define DEFAULT_BACKOFF_BASE_MS 5000
#define DEFAULT_BACKOFF_MAX_MS 300000

static const char *git_msg(void)
{
    const git_error *e = cv_git()->error_last();
    return e && e->message ? e->message : "unknown libgit2 error";
}

/* Absolute form of a local path (realpath when it exists), or the URL. */
static char *normalize_url(const char *url)
{
    if (strstr(url, "://"))
        return strdup(url);
    const char *colon = strchr(url, ':'), *slash = strchr(url, '/');
    if (url[0] != '/' && colon && (!slash || colon < slash))
        return strdup(url);   /* scp-like user@host:path */
    char buf[PATH_MAX];
    if (realpath(url, buf))
        return strdup(buf);
    if (url[0] == '/' || !getcwd(buf, sizeof buf))
        return strdup(url);
    return cv_fs_join(buf, url);
}

/* state_dir/git/<name>-<12 hex of sha256(url)>.git: readable, and two URLs
 * never share a mirror. */
static char *mirror_path(const char *state_dir, const char *url)
{
    char hex[65], name[48];
    size_t n = 0;
    cv_ctl_sha256_hex(url, strlen(url), hex);
    const char *base = url + strlen(url);
    while (base > url && base[-1] == '/')
        base--;
    const char *end = base;
    while (base > url && base[-1] != '/' && base[-1] != ':')
        base--;
    if (end - base > 4 && strncmp(end - 4, ".git", 4) == 0)
        end -= 4;
    for (const char *p = base; p < end && n < 40; p++)
        name[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                            (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'
                        ? *p
                        : '_';
    name[n] = 0;
    char leaf[96];
    snprintf(leaf, sizeof leaf, "git/%s%s%.12s.git", name, n ? "-" : "", hex);
    return cv_fs_join(state_dir, leaf);
}

static int open_mirror(cv_gitsource *g, cv_diag *d)
{
    if (cv_git()->repository_open_bare(&g->repo, g->mirror) == 0)
        return 0;
    char *parent = cv_fs_dirname(g->mirror);
    int rc = parent ? cv_fs_mkdirs(parent, 0755) : -1;
    free(parent);
    if (rc == 0)
        rc = cv_git()->repository_init(&g->repo, g->mirror, 1);
    if (rc == 0)
        return 0;
    cv_diag_error(d, CV_E_GIT_OPEN_FAILED, (cv_span){.file = g->mirror},
                  "cannot create the git mirror: %s", rc == -1 ? git_msg() : "mkdir failed");
    return -1;
}

int cv_gitsource_open(const cv_gitsource_opts *o, cv_gitsource **out, cv_diag *d)
{
    *out = NULL;
    const char *ref = o->ref ? o->ref : "main";
    if (!o->url || !o->url[0] || !cv_str_is_clean_text(o->url) || strlen(o->url) > 4096) {
        cv_diag_error(d, CV_E_GIT_BAD_URL, (cv_span){0}, "git source URL is empty or malformed");
        return -1;
    }
    if (!cv_str_is_ref_name(ref)) {
        cv_diag_error(d, CV_E_SPEC_BAD_REF, (cv_span){0}, "'%s' is not a valid git ref name", ref);
        return -1;
    }
    if (!o->state_dir || !o->state_dir[0]) {
        cv_diag_error(d, CV_E_GIT_OPEN_FAILED, (cv_span){0}, "git source needs a state directory");
        return -1;
    }
    if (!cv_git_load(d))
        return -1;
    cv_gitsource *g = calloc(1, sizeof *g);
    if (!g) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        return -1;
    }
    cv_git()->libgit2_init();
    g->opts = *o;
    g->opts.backoff_base_ms = o->backoff_base_ms > 0 ? o->backoff_base_ms : DEFAULT_BACKOFF_BASE_MS;
    g->opts.backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : DEFAULT_BACKOFF_MAX_MS;
    g->opts.max_tree_entries = o->max_tree_entries ? o->max_tree_entries : CV_GIT_TREE_MAX_ENTRIES;
    g->url = normalize_url(o->url);
    g->ref = strdup(ref);
    g->mirror = g->url ? mirror_path(o->state_dir, g->url) : NULL;
    g->opts.url = g->url;
    g->opts.ref = g->ref;
    g->opts.state_dir = NULL;   /* not kept: the caller owns it */
    if (!g->url || !g->ref || !g->mirror) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        cv_gitsource_close(g);
        return -1;
    }
    if (open_mirror(g, d)) {
        cv_gitsource_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

void cv_gitsource_close(cv_gitsource *g)
{
    if (!g)
        return;
    cv_git()->repository_free(g->repo);
    free(g->url);
    free(g->ref);
    free(g->mirror);
    free(g);
    cv_git()->libgit2_shutdown();
}

const char *cv_gitsource_mirror(const cv_gitsource *g) { return g->mirror; }

void cv_gitsource_status_get(const cv_gitsource *g, cv_gitsource_status *out) { *out = g->st; }

/* Records a failure, schedules the next attempt and reports it. */
static int poll_failed(cv_gitsource *g, int code, int64_t now, cv_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int poll_failed(cv_gitsource *g, int code, int64_t now, cv_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->st.last_error, sizeof g->st.last_error, fmt, ap);
    va_end(ap);
    /* plain ASCII: it travels in JSON status and may have been cut mid-character */
    for (char *c = g->st.last_error; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    g->st.errors++;
    int shift = g->st.failures < 30 ? g->st.failures : 30;
    g->st.failures++;
    int64_t delay = g->opts.backoff_base_ms;
    for (int i = 0; i < shift && delay < g->opts.backoff_max_ms; i++)
        delay *= 2;
    if (delay > g->opts.backoff_max_ms)
        delay = g->opts.backoff_max_ms;
    g->st.next_attempt_ms = now + delay;
    int id = cv_diag_error(d, code, (cv_span){.file = g->url}, "git source: %s", g->st.last_error);
    cv_diag_note(d, id, "attempt %d failed; retrying in %lld ms", g->st.failures,
                 (long long)delay);
    return -1;
}

/* The remote's head for the configured ref: the ref itself when it is a
 * full name, else refs/heads/REF, else refs/tags/REF. */
static const git_remote_head *find_head(const git_remote_head **heads, size_t n, const char *ref)
{
    static const char *const prefixes[] = {"", "refs/heads/", "refs/tags/"};
    /* "HEAD": whatever the source has checked out (a CI runner's detached
     * checkout); other names are branches first, then tags */
    bool exact = strncmp(ref, "refs/", 5) == 0 || strcmp(ref, "HEAD") == 0;
    for (int p = exact ? 0 : 1; p < 3; p++) {
        char full[512];
        snprintf(full, sizeof full, "%s%s", prefixes[p], ref);
        for (size_t i = 0; i < n; i++)
            if (strcmp(heads[i]->name, full) == 0)
                return heads[i];
        if (p == 0)
            break;
    }
    return NULL;
}

/* The mirror's name for the source's ref: the same, except that the
 * source's HEAD is kept under refs/cuvil/ (a bare mirror's own HEAD is a
 * symbolic ref). */
static const char *mirror_ref(const char *full)
{
    return strcmp(full, "HEAD") == 0 ? "refs/cuvil/source-HEAD" : full;
}

/* Downloads ref over the connected remote and updates the mirror's ref. */
static int fetch_ref(cv_gitsource *g, git_remote *remote, const char *full)
{
    char spec[1100];
    snprintf(spec, sizeof spec, "+%s:%s", full, mirror_ref(full));
    char *specs[] = {spec};
    git_strarray refspecs = {specs, 1};
    git_fetch_options fo;
    cv_git()->fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    fo.update_fetchhead = 0;
    if (cv_git()->remote_download(remote, &refspecs, &fo))
        return -1;
    return cv_git()->remote_update_tips(remote, &fo.callbacks, 0, GIT_REMOTE_DOWNLOAD_TAGS_NONE,
                                  "cuvil: fetch");
}

/* The commit the mirror's copy of full points at (tags peeled). */
static int local_commit(cv_gitsource *g, const char *full, char hex[CV_GIT_HEX + 1])
{
    git_object *obj = NULL, *commit = NULL;
    int rc = cv_git()->revparse_single(&obj, g->repo, mirror_ref(full));
    if (rc == 0)
        rc = cv_git()->object_peel(&commit, obj, GIT_OBJECT_COMMIT);
    if (rc == 0)
        cv_git()->oid_tostr(hex, CV_GIT_HEX + 1, cv_git()->object_id(commit));
    cv_git()->object_free(commit);
    cv_git()->object_free(obj);
    return rc;
}

static int poll_remote(cv_gitsource *g, int64_t now, cv_diag *d)
{
    git_remote *remote = NULL;
    git_remote_callbacks cb;
    cv_git()->remote_init_callbacks(&cb, GIT_REMOTE_CALLBACKS_VERSION);
    const git_remote_head **heads = NULL;
    size_t n = 0;
    /* Skipping url.*.insteadOf also avoids a leak in libgit2 1.5's pcre2
     * matching (each non-matching regexec leaks its match data). */
    git_remote_create_options co;
    cv_git()->remote_create_options_init(&co, GIT_REMOTE_CREATE_OPTIONS_VERSION);
    co.repository = g->repo;
    co.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
    if (cv_git()->remote_create_with_opts(&remote, g->url, &co) ||
        cv_git()->remote_connect(remote, GIT_DIRECTION_FETCH, &cb, NULL, NULL) ||
        cv_git()->remote_ls(&heads, &n, remote)) {
        int rc = poll_failed(g, CV_E_GIT_FETCH_FAILED, now, d, "cannot list %s: %s", g->url, git_msg());
        cv_git()->remote_free(remote);
        return rc;
    }
    const git_remote_head *h = find_head(heads, n, g->ref);
    if (!h) {
        cv_git()->remote_free(remote);
        return poll_failed(g, CV_E_GIT_REF_NOT_FOUND, now, d, "%s has no branch, tag or ref '%s'", g->url,
                           g->ref);
    }
    char full[512];
    snprintf(full, sizeof full, "%s", h->name);
    git_oid local;
    bool moved = cv_git()->reference_name_to_id(&local, g->repo, mirror_ref(full)) != 0 ||
                 !cv_git()->oid_equal(&local, &h->oid);
    if (moved && fetch_ref(g, remote, full)) {
        int rc = poll_failed(g, CV_E_GIT_FETCH_FAILED, now, d, "cannot fetch %s from %s: %s", full,
                             g->url, git_msg());
        cv_git()->remote_free(remote);
        return rc;
    }
    cv_git()->remote_disconnect(remote);
    cv_git()->remote_free(remote);
    g->st.fetches += moved;
    char hex[CV_GIT_HEX + 1];
    if (local_commit(g, full, hex))
        return poll_failed(g, CV_E_GIT_BAD_COMMIT, now, d, "%s does not name a commit: %s", full,
                           git_msg());
    bool changed = strcmp(hex, g->st.commit) != 0;
    memcpy(g->st.commit, hex, sizeof hex);
    cv_revision_format(g->ref, hex, g->st.revision);
    g->st.failures = 0;
    g->st.next_attempt_ms = 0;
    g->st.last_success_ms = now;
    if (changed)
        g->st.last_change_ms = now;
    return changed ? CV_GIT_POLL_CHANGED : CV_GIT_POLL_UNCHANGED;
}

int cv_gitsource_poll(cv_gitsource *g, bool force, cv_diag *d)
{
    int64_t now = cv_ctl_now_ms(g->opts.now_ms, g->opts.clock_ctx);
    if (!force && g->st.failures && now < g->st.next_attempt_ms)
        return CV_GIT_POLL_BACKOFF;
    g->st.polls++;
    g->st.last_poll_ms = now;
    return poll_remote(g, now, d);
}

/* ---- revisions */

int cv_revision_format(const char *ref, const char *commit_hex, char out[CV_REVISION_MAX + 1])
{
    int n = snprintf(out, CV_REVISION_MAX + 1, "%s@sha1:%s", ref, commit_hex);
    return n > 0 && n <= CV_REVISION_MAX ? 0 : -1;
}

static bool is_hex40(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == CV_GIT_HEX;
}

int cv_revision_parse(const char *rev, char ref[CV_REVISION_MAX + 1], char commit[CV_GIT_HEX + 1],
                      cv_diag *d)
{
    const char *at = strrchr(rev, '@');
    size_t rn = at ? (size_t)(at - rev) : 0;
    if (!at || rn == 0 || rn > CV_REVISION_MAX || strncmp(at, "@sha1:", 6) != 0 ||
        !is_hex40(at + 6)) {
        cv_diag_error(d, CV_E_GIT_BAD_REVISION, (cv_span){0},
                      "'%.80s' is not a revision (expected ref@sha1:<40 hex digits>)", rev);
        return -1;
    }
    memcpy(ref, rev, rn);
    ref[rn] = 0;
    if (!cv_str_is_ref_name(ref)) {
        cv_diag_error(d, CV_E_GIT_BAD_REVISION, (cv_span){0}, "'%s' is not a valid git ref name", ref);
        return -1;
    }
    memcpy(commit, at + 6, CV_GIT_HEX + 1);
    return 0;
}
