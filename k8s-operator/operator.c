/* The operator's loop: an informer over CuvilBuildClusters (list, then
 * watch from the list's resourceVersion; 410 Gone -> list again; failures
 * -> backoff) and a reconcile of every cluster that changed or fell due.
 *
 * One thread.  A watch is read until an event changes what a cluster asks
 * for; the stream is then closed, the cluster reconciled and the next
 * watch resumes from the last resourceVersion seen, so nothing between is
 * missed.  Events that change only the status or the resourceVersion (the
 * operator's own status writes among them) reconcile nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "k8s-operator/internal.h"

#define DEFAULT_RESYNC_MS (5 * 60 * 1000)
#define DEFAULT_REQUEUE_MS (15 * 1000)
#define DEFAULT_BACKOFF_MS 500
#define MAX_BACKOFF_MS (60 * 1000)
#define DEFAULT_WATCH_MS (5 * 60 * 1000)

typedef struct entry {
    char key[160];              /* namespace/name */
    json_t *obj;                /* owned: the object as last seen */
    bool dirty;                 /* changed since its last reconcile */
    int64_t due_ms;             /* requeue or resync */
    int64_t backoff_ms;         /* after failed reconciles */
} entry;

struct cv_k8s_operator {
    cv_k8s_client *cl;          /* not owned */
    cv_k8s_operator_opts o;     /* strings borrowed from the caller */
    char list_path[512];
    char rv[64];                /* the watch's cursor; "" = list first */
    bool expired;               /* the last watch got 410 */
    entry *v;                   /* owned */
    int n, cap;
    int64_t retry_at_ms;        /* after a list or watch failed */
    cv_k8s_operator_stats st;
};

static int64_t next_backoff(int64_t cur, int64_t base)
{
    return cur ? (cur * 2 > MAX_BACKOFF_MS ? MAX_BACKOFF_MS : cur * 2) : base;
}

int cv_k8s_operator_open(cv_k8s_client *cl, const cv_k8s_operator_opts *o,
                         cv_k8s_operator **out, cv_diag *d)
{
    cv_k8s_operator *op = calloc(1, sizeof *op);
    if (!op)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    op->cl = cl;
    op->o = *o;
    if (!op->o.resync_ms)
        op->o.resync_ms = DEFAULT_RESYNC_MS;
    if (!op->o.requeue_ms)
        op->o.requeue_ms = DEFAULT_REQUEUE_MS;
    if (!op->o.backoff_ms)
        op->o.backoff_ms = DEFAULT_BACKOFF_MS;
    if (!op->o.watch_timeout_ms)
        op->o.watch_timeout_ms = DEFAULT_WATCH_MS;
    k8s_path(op->list_path, sizeof op->list_path, &k8s_clusters, o->ns, NULL, false);
    *out = op;
    return 0;
}

void cv_k8s_operator_close(cv_k8s_operator *op)
{
    if (!op)
        return;
    for (int i = 0; i < op->n; i++)
        json_decref(op->v[i].obj);
    free(op->v);
    free(op);
}

const cv_k8s_operator_stats *cv_k8s_operator_get_stats(const cv_k8s_operator *op)
{
    return &op->st;
}

void cv_k8s_operator_resync(cv_k8s_operator *op)
{
    for (int i = 0; i < op->n; i++)
        op->v[i].dirty = true;
}

/* ------------------------------------------------------------- the cache */

static void key_of(const json_t *obj, char out[160])
{
    snprintf(out, 160, "%s/%s", k8s_str(obj, "metadata.namespace"),
             k8s_str(obj, "metadata.name"));
}

static entry *find(cv_k8s_operator *op, const char *key)
{
    for (int i = 0; i < op->n; i++)
        if (strcmp(op->v[i].key, key) == 0)
            return &op->v[i];
    return NULL;
}

static void forget(cv_k8s_operator *op, entry *e)
{
    json_decref(e->obj);
    *e = op->v[--op->n];
}

/* Stores obj; marks it for a reconcile when what it asks for changed.
 * Returns whether it did. */
static bool upsert(cv_k8s_operator *op, json_t *obj)
{
    char key[160];
    key_of(obj, key);
    entry *e = find(op, key);
    if (!e) {
        if (op->n == op->cap) {
            int cap = op->cap ? op->cap * 2 : 8;
            entry *v = realloc(op->v, (size_t)cap * sizeof *v);
            if (!v)
                return false;
            op->v = v;
            op->cap = cap;
        }
        e = &op->v[op->n++];
        *e = (entry){.obj = NULL};
        snprintf(e->key, sizeof e->key, "%s", key);
    }
    bool changed = !e->obj || !k8s_same_intent(e->obj, obj);
    json_decref(e->obj);
    e->obj = json_incref(obj);
    if (changed) {
        e->dirty = true;
        e->backoff_ms = 0;
    }
    return changed;
}

/* ------------------------------------------------------------ list, watch */

static int list(cv_k8s_operator *op, cv_diag *d)
{
    json_t *resp = NULL;
    long status = 0;
    if (cv_k8s_request(op->cl, "GET", op->list_path, NULL, NULL, &status, &resp, d) != 0)
        return -1;
    const char *rv = k8s_str(resp, "metadata.resourceVersion");
    if (status != 200 || !*rv || !json_is_array(json_object_get(resp, "items"))) {
        int rc = status == 200 ? (cv_diag_error(d, CV_E_K8S_BAD_RESPONSE, (cv_span){0},
                                                "GET %s: not a list", op->list_path), -1)
                               : k8s_api_error(d, status, resp, "GET", op->list_path);
        json_decref(resp);
        return rc;
    }
    op->st.lists++;
    op->st.relists += op->expired;
    op->expired = false;
    /* Whatever the list lacks was deleted while nobody watched. */
    for (int i = op->n - 1; i >= 0; i--) {
        bool present = false;
        size_t j;
        json_t *it;
        json_array_foreach(json_object_get(resp, "items"), j, it) {
            char key[160];
            key_of(it, key);
            present = present || strcmp(key, op->v[i].key) == 0;
        }
        if (!present)
            forget(op, &op->v[i]);
    }
    size_t j;
    json_t *it;
    json_array_foreach(json_object_get(resp, "items"), j, it)
        upsert(op, it);
    snprintf(op->rv, sizeof op->rv, "%s", rv);
    json_decref(resp);
    return 0;
}

typedef struct watch_state {
    cv_k8s_operator *op;
    long error_code;            /* an ERROR event other than 410 */
    json_t *error;              /* owned: its Status */
} watch_state;

static bool on_event(void *ctx, const char *type, json_t *obj)
{
    watch_state *w = ctx;
    cv_k8s_operator *op = w->op;
    op->st.events++;
    if (strcmp(type, "ERROR") == 0) {
        long code = (long)json_integer_value(json_object_get(obj, "code"));
        if (code == 410) {
            op->expired = true;
            op->rv[0] = '\0';
        } else {
            w->error_code = code ? code : 500;
            json_decref(w->error);
            w->error = json_incref(obj);
        }
        return true;
    }
    const char *rv = k8s_str(obj, "metadata.resourceVersion");
    if (*rv)
        snprintf(op->rv, sizeof op->rv, "%s", rv);
    if (strcmp(type, "DELETED") == 0) {
        char key[160];
        key_of(obj, key);
        entry *e = find(op, key);
        if (e)   /* its children go with it: they are owned by it */
            forget(op, e);
        return false;
    }
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
        return upsert(op, obj);
    return false;   /* BOOKMARK: only the cursor moves */
}

static int watch(cv_k8s_operator *op, int64_t wait_ms, cv_diag *d)
{
    char path[700];
    int64_t secs = (wait_ms + 999) / 1000;
    snprintf(path, sizeof path, "%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true"
             "&timeoutSeconds=%lld", op->list_path, op->rv, (long long)(secs ? secs : 1));
    watch_state w = {.op = op};
    long status = 0;   /* errors, 410 included, come as ERROR events */
    op->st.watches++;
    int rc = cv_k8s_watch(op->cl, path, wait_ms, op->o.stop, on_event, &w, &status, d);
    if (rc == 0 && w.error_code)
        rc = k8s_api_error(d, w.error_code, w.error, "watch", op->list_path);
    json_decref(w.error);
    if (rc)
        return -1;
    if (op->expired)
        cv_log_info("CV7007: the watch of %s expired (410 Gone): listing again",
                    op->list_path);
    return 0;
}

/* ------------------------------------------------------------- the loop */

static bool due(const entry *e, int64_t now) { return e->dirty || e->due_ms <= now; }

static int reconcile_due(cv_k8s_operator *op, cv_diag *d)
{
    int rc = 0;
    for (int i = 0; i < op->n; i++) {
        entry *e = &op->v[i];
        int64_t now = k8s_mono_ms();
        if (!due(e, now))
            continue;
        bool settled = false;
        json_t *updated = NULL;
        e->dirty = false;
        if (k8s_reconcile(op->cl, &op->o, e->obj, &op->st, &settled, &updated, d) != 0) {
            e->backoff_ms = next_backoff(e->backoff_ms, op->o.backoff_ms);
            e->due_ms = now + e->backoff_ms;
            op->st.failures++;
            rc = -1;
        } else {
            e->backoff_ms = 0;
            e->due_ms = now + (settled ? op->o.resync_ms : op->o.requeue_ms);
        }
        if (updated) {
            json_decref(e->obj);
            e->obj = updated;
        }
    }
    return rc;
}

static void sleep_ms(int64_t ms, volatile int *stop)
{
    while (ms > 0 && !(stop && *stop)) {
        int64_t slice = ms < 100 ? ms : 100;
        struct timespec ts = {slice / 1000, (long)(slice % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

static int failed(cv_k8s_operator *op)
{
    op->st.failures++;
    op->st.backoff_ms = next_backoff(op->st.backoff_ms, op->o.backoff_ms);
    op->retry_at_ms = k8s_mono_ms() + op->st.backoff_ms;
    return -1;
}

int cv_k8s_operator_step(cv_k8s_operator *op, int64_t wait_ms, cv_diag *d)
{
    int64_t now = k8s_mono_ms();
    if (op->retry_at_ms > now) {
        sleep_ms(op->retry_at_ms - now < wait_ms ? op->retry_at_ms - now : wait_ms, op->o.stop);
        if (op->retry_at_ms > k8s_mono_ms())
            return 0;
    }
    if (!op->rv[0] && list(op, d) != 0)
        return failed(op);
    int64_t wait = wait_ms < op->o.watch_timeout_ms ? wait_ms : op->o.watch_timeout_ms;
    now = k8s_mono_ms();
    for (int i = 0; i < op->n; i++)
        wait = due(&op->v[i], now) ? 0 : op->v[i].due_ms - now < wait ? op->v[i].due_ms - now
                                                                      : wait;
    if (wait > 0 && watch(op, wait, d) != 0)
        return failed(op);
    op->st.backoff_ms = 0;
    if (!op->rv[0])   /* expired: list before reconciling, so no change is missed */
        return list(op, d) != 0 ? failed(op) : reconcile_due(op, d);
    return reconcile_due(op, d);
}

int cv_k8s_operator_run(cv_k8s_operator *op, cv_diag *d)
{
    while (!(op->o.stop && *op->o.stop)) {
        cv_diag step_d;
        cv_diag_init(&step_d);
        cv_k8s_operator_step(op, op->o.watch_timeout_ms, &step_d);
        for (int i = 0; i < step_d.n; i++) {
            const cv_diag_entry *e = &step_d.v[i];
            cv_log_write(e->sev == CV_SEV_ERROR ? CV_LOG_ERROR : CV_LOG_WARN, __FILE__,
                         "CV%04d: %s", e->code, e->msg);
        }
        cv_diag_free(&step_d);
    }
    return 0;
}
