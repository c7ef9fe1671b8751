/* The queue and the cache the server's figures come from, opened on first
 * use (the controller may start after the server, and names its queue in
 * its heartbeat).  Only an SQLite queue is opened: a Kafka handle would
 * join the consumer group, so the depth of a Kafka queue comes from the
 * build DB (executions still queued) and its leases are unknown. */
#include "controller/http/http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The controller's queue URL from its heartbeat, else the default. */
static void queue_url(cv_http *h, char *out, size_t size)
{
    if (h->queue_url) {
        snprintf(out, size, "%s", h->queue_url);
        return;
    }
    cv_diag d;
    cv_diag_init(&d);
    json_t *ctl = cv_status_value_json(h->db, CV_STATUS_CONTROLLER, &d);
    const char *url = json_string_value(json_object_get(ctl, "queue"));
    if (url && *url)
        snprintf(out, size, "%s", url);
    else
        snprintf(out, size, "sqlite:%s/queue.db", h->state_dir);
    json_decref(ctl);
    cv_diag_free(&d);
}

/* (Re)opens the queue when its URL is new: the controller may name
 * another queue in its heartbeat than the default assumed before it ran. */
static void open_queue(cv_http *h, const char *url)
{
    if (strcmp(url, h->queue_opened) == 0)
        return;
    snprintf(h->queue_opened, sizeof h->queue_opened, "%s", url);
    cv_queue_close(h->q);
    h->q = NULL;
    if (strncmp(url, "sqlite:", 7) != 0)
        return;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_queue_open(url, NULL, &h->q, &d) != 0)
        h->q = NULL;
    cv_diag_free(&d);
}

void http_queue_view_get(cv_http *h, http_queue_view *v)
{
    memset(v, 0, sizeof *v);
    queue_url(h, v->url, sizeof v->url);
    open_queue(h, v->url);
    cv_diag d;
    cv_diag_init(&d);
    if (h->q && cv_queue_stats_get(h->q, &v->st, &d) == 0) {
        v->known = true;
        v->leases = calloc(HTTP_LEASES_MAX, sizeof *v->leases);
        v->leases_known =
            v->leases &&
            cv_queue_leases_list(h->q, v->leases, HTTP_LEASES_MAX, &v->n_leases, &d) == 1;
        v->workers = calloc(HTTP_WORKERS_MAX, sizeof *v->workers);
        v->workers_known =
            v->workers &&
            cv_queue_workers_list(h->q, v->workers, HTTP_WORKERS_MAX, &v->n_workers, &d) == 1;
    } else {
        v->from_builddb = true;
        v->known = http_db_queued(h->db, &v->st.queued, &d) == 0;
    }
    cv_diag_free(&d);
}

void http_queue_view_free(http_queue_view *v)
{
    free(v->leases);
    v->leases = NULL;
    free(v->workers);
    v->workers = NULL;
}

http_worker_state http_worker_state_of(const cv_queue_worker_info *w, int64_t now_ms)
{
    if (now_ms - w->beat_ms > HTTP_WORKER_LOST_MS)
        return HTTP_WORKER_LOST;
    return w->job_id[0] ? HTTP_WORKER_BUSY : HTTP_WORKER_IDLE;
}

const char *http_worker_state_name(http_worker_state s)
{
    static const char *const names[] = {"idle", "busy", "lost"};
    return names[s];
}

static cv_cache *cache(cv_http *h)
{
    if (h->no_cache)
        return NULL;
    if (!h->cache_tried) {
        h->cache_tried = true;
        cv_diag d;
        cv_diag_init(&d);
        cv_cache_options co = {.dir = h->cache_dir, .remote = ""};   /* local figures only */
        if (cv_cache_open(&co, &h->cache, &d) != 0)
            h->cache = NULL;
        cv_diag_free(&d);
    }
    return h->cache && cv_cache_enabled(h->cache) ? h->cache : NULL;
}

int http_cache_stats(cv_http *h, cv_cache_stats *st)
{
    memset(st, 0, sizeof *st);
    cv_cache *c = cache(h);
    if (!c)
        return 0;
    cv_diag d;
    cv_diag_init(&d);
    int rc = cv_cache_stats_get(c, st, &d);
    cv_diag_free(&d);
    return rc == 0;
}

int http_cache_has(cv_http *h, const char *hex)
{
    cv_cache *c = cache(h);
    cv_digest dg;
    if (!c || cv_cache_digest_parse(hex, &dg) != 0)
        return -1;
    return cv_cache_has_blob(c, &dg) ? 1 : 0;
}
