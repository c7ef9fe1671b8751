/* The operator's farm policy against a repository's CuvilBuildCluster.
 *
 * A repository writer is trusted for nothing (docs/security.md), so what
 * its cluster spec asks of the infrastructure is a request: it may name one
 * of the remote caches the operator allowed (by name; the operator's own
 * URLs are accepted too), lower the job timeout and memory limit, and make
 * the remote read-only.  A remote URL of its own, a queue, a key secret or
 * a limit above the operator's ceiling is refused with a warning, and the
 * operator's value applies: one commit cannot send the farm's artifacts to
 * a server of its choosing or take its workers' limits off. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "controller/controller.h"
#include "controller/internal.h"

static cv_span at_spec(const cv_spec_cluster *cl)
{
    return (cv_span){.file = cl->origin.file, .line = cl->origin.line, .col = cl->origin.col};
}

__attribute__((format(printf, 5, 6))) static void
warn(cv_diag *w, const cv_spec_cluster *cl, int code, const char *path, const char *fmt, ...)
{
    if (!w)
        return;
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(w, CV_SEV_WARNING, code, at_spec(cl), path, fmt, ap);
    va_end(ap);
}

int cv_farm_policy_add_remote(cv_farm_policy *p, const char *arg, cv_diag *d)
{
    const char *eq = strchr(arg, '='), *scheme = strstr(arg, "://");
    if (!eq || (scheme && scheme < eq)) {   /* a bare URL: the farm's own remote */
        p->remote = arg;
        return 0;
    }
    char name[64];
    size_t n = (size_t)(eq - arg);
    bool ok = n < sizeof name;
    if (ok) {
        memcpy(name, arg, n);
        name[n] = '\0';
        ok = cv_str_is_dns_label(name) && (strncmp(eq + 1, "http://", 7) == 0 ||
                                           strncmp(eq + 1, "https://", 8) == 0);
    }
    for (int i = 0; ok && i < p->n_remotes; i++)
        ok = strcmp(p->remotes[i].name, name) != 0;
    if (!ok)
        return cv_diag_fail(d, CV_E_FARM_BAD_REMOTE, (cv_span){0},
                            "--remote-cache '%.200s': expected URL or NAME=URL with a unique "
                            "DNS-1123 NAME and an http:// or https:// URL", arg);
    if (p->n_remotes == CV_FARM_REMOTES_MAX)
        return cv_diag_fail(d, CV_E_FARM_BAD_REMOTE, (cv_span){0},
                            "more than %d named remote caches", CV_FARM_REMOTES_MAX);
    cv_farm_remote *r = &p->remotes[p->n_remotes++];
    memcpy(r->name, name, n + 1);
    r->url = eq + 1;
    return 0;
}

/* The allow-listed URL a spec's cache.remote names (by name or by one of
 * the operator's URLs); NULL when it names none. */
static const char *allowed(const cv_farm_policy *p, const char *want, char name[64])
{
    name[0] = '\0';
    if (p->remote && *p->remote && strcmp(want, p->remote) == 0)
        return p->remote;
    for (int i = 0; i < p->n_remotes; i++) {
        const cv_farm_remote *r = &p->remotes[i];
        if (strcmp(want, r->name) == 0 || strcmp(want, r->url) == 0) {
            snprintf(name, 64, "%s", r->name);
            return r->url;
        }
    }
    return NULL;
}

static void apply_remote(const cv_spec_cluster *cl, const cv_farm_policy *p,
                         cv_cluster_settings *out, cv_diag *w)
{
    const char *url = p->remote && *p->remote ? p->remote : "";
    if (cl && cl->cache.remote) {
        const char *chosen = allowed(p, cl->cache.remote, out->remote_name);
        if (chosen) {
            url = chosen;
        } else {
            cv_sb names = CV_SB_INIT;
            for (int i = 0; i < p->n_remotes; i++)
                cv_sb_printf(&names, "%s%s", i ? ", " : "", p->remotes[i].name);
            char why[1400];
            snprintf(why, sizeof why, "%s; the farm uses %s", names.len ? cv_sb_str(&names)
                     : "the operator named none", *url ? "its own remote" : "no remote");
            cv_sb_free(&names);
            warn(w, cl, CV_E_CLUSTER_REMOTE_NOT_ALLOWED, "spec.cache.remote",
                 "spec.cache.remote '%.200s' is not a remote cache the operator allows "
                 "(--remote-cache NAME=URL; allowed: %s)", cl->cache.remote, why);
        }
    }
    snprintf(out->remote, sizeof out->remote, "%s", url);
    out->remote_read_only = cl && cl->cache.read_only;
}

/* A limit: the spec may lower the ceiling (0 = none), never raise it. */
static uint64_t lower(const cv_spec_cluster *cl, bool set, uint64_t want, uint64_t ceiling,
                      const char *path, const char *shown_want, const char *shown_ceiling,
                      cv_diag *w)
{
    if (!set || !want)
        return ceiling;
    if (ceiling && want > ceiling) {
        warn(w, cl, CV_E_CLUSTER_LIMIT_CAPPED, path,
             "%s %s is above the operator's ceiling %s; the ceiling applies", path, shown_want,
             shown_ceiling);
        return ceiling;
    }
    return want;
}

static void ms_text(int64_t ms, char out[32])
{
    if (ms % 1000)
        snprintf(out, 32, "%lldms", (long long)ms);
    else
        snprintf(out, 32, "%llds", (long long)(ms / 1000));
}

void cv_cluster_apply(const cv_spec_cluster *cl, const cv_farm_policy *p,
                      cv_cluster_settings *out, cv_diag *w)
{
    static const cv_farm_policy none = {0};
    if (!p)
        p = &none;
    *out = (cv_cluster_settings){.found = cl != NULL};
    int64_t timeout_ceiling = p->job_timeout_ms > 0 ? p->job_timeout_ms : CV_FARM_JOB_TIMEOUT_MS;
    char a[32], b[32];
    if (cl) {
        out->interval_ms = cl->source.interval_ms;
        ms_text(cl->workers.job_timeout_ms, a);
        ms_text(timeout_ceiling, b);
    }
    out->job_timeout_ms = (int64_t)lower(cl, cl && cl->workers.job_timeout_set,
                                         cl ? (uint64_t)cl->workers.job_timeout_ms : 0,
                                         (uint64_t)timeout_ceiling, "spec.workers.jobTimeout",
                                         a, b, w);
    if (cl) {
        snprintf(a, sizeof a, "%llu bytes", (unsigned long long)cl->workers.memory_limit);
        snprintf(b, sizeof b, "%llu bytes", (unsigned long long)p->memory_limit);
    }
    out->memory_limit = lower(cl, cl != NULL, cl ? cl->workers.memory_limit : 0,
                              p->memory_limit, "spec.workers.memoryLimit", a, b, w);
    apply_remote(cl, p, out, w);
    if (!cl)
        return;
    if (cl->queue.kind != CV_SPEC_QUEUE_EMBEDDED)
        warn(w, cl, CV_E_CLUSTER_OPERATOR_ONLY, "spec.queue",
             "spec.queue (brokers '%.200s') is ignored: the queue is the operator's to "
             "choose (--queue)", cl->queue.brokers ? cl->queue.brokers : "");
    if (cl->cache.signing_key_secret)
        warn(w, cl, CV_E_CLUSTER_OPERATOR_ONLY, "spec.cache.signingKeySecret",
             "spec.cache.signingKeySecret '%.100s' is ignored: the action-cache keys are "
             "the operator's (--signing-key, or the Kubernetes object)",
             cl->cache.signing_key_secret);
}
