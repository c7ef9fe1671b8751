/* The index writes a process owes (see pending.h). */
#include "cache/pending.h"
#include "cache/internal.h"
#include "common/invariant.h"

#include <stdlib.h>
#include <string.h>

enum {
    DUE_ITEMS = 256,        /* rows queued before they are written anyway */
    DUE_AGE_US = 1000000,   /* a long-lived process writes at least every second */
};

/* Room for `need` elements in *v (cap doubles); 0, or -1 on OOM. */
static int reserve(void **v, int need, int *cap, size_t size)
{
    if (need <= *cap)
        return 0;
    int c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *nv = realloc(*v, (size_t)c * size);
    if (!nv)
        return -1;
    *v = nv;
    *cap = c;
    return 0;
}

static void touch(cv_pending *p)
{
    if (!p->since_us)
        p->since_us = cv_cache_mono_us();
}

/* Hits on one entry merge into one row; anything else keeps its place. */
static void add_event(cv_pending *p, const cv_index_event *e)
{
    CV_ASSERT_RET(NULL, p->n_ev < p->cap_ev, ); /* the caller reserved the room */
    for (int i = 0; e->op == CV_IDX_HIT && i < p->n_ev; i++) {
        cv_index_event *q = &p->ev[i];
        if (q->op == CV_IDX_HIT && q->kind == e->kind && cv_cache_digest_eq(&q->name, &e->name)) {
            q->hits += e->hits ? e->hits : 1;
            q->stored = e->stored;
            if (e->at_us > q->at_us)
                q->at_us = e->at_us;
            return;
        }
    }
    p->ev[p->n_ev] = *e;
    if (e->op == CV_IDX_HIT && !e->hits)
        p->ev[p->n_ev].hits = 1;
    if (e->op != CV_IDX_HIT)
        p->urgent = true;
    p->n_ev++;
}

static int add_count(cv_pending *p, const cv_index_count *c)
{
    if (!c->delta)
        return 0;
    for (int i = 0; i < p->n_cnt; i++)
        if (strcmp(p->cnt[i].name, c->name) == 0) {
            p->cnt[i].delta += c->delta;
            return 0;
        }
    char *name = NULL;
    if (reserve((void **)&p->cnt, p->n_cnt + 1, &p->cap_cnt, sizeof *p->cnt) != 0 ||
        !(name = strdup(c->name)))
        return -1;
    p->cnt[p->n_cnt++] = (cv_index_count){name, c->delta};
    return 0;
}

int cv_pending_add(cv_pending *p, const cv_index_event *ev, int n_ev, const cv_index_count *cnt,
                   int n_cnt)
{
    /* All or nothing: a half-queued access would be counted twice when
     * the caller falls back to writing it directly. */
    if (reserve((void **)&p->ev, p->n_ev + n_ev, &p->cap_ev, sizeof *p->ev) != 0 ||
        reserve((void **)&p->cnt, p->n_cnt + n_cnt, &p->cap_cnt, sizeof *p->cnt) != 0)
        return -1;
    for (int i = 0; i < n_ev; i++)
        add_event(p, &ev[i]);
    for (int i = 0; i < n_cnt; i++)
        add_count(p, &cnt[i]); /* OOM here loses one counter delta at most */
    touch(p);
    return 0;
}

int cv_pending_add_memo(cv_pending *p, const char *path, const cv_index_memo *m)
{
    for (int i = 0; i < p->n_memo; i++)
        if (strcmp(p->memo[i].path, path) == 0) {
            p->memo[i].m = *m;
            return 0;
        }
    char *copy = NULL;
    if (reserve((void **)&p->memo, p->n_memo + 1, &p->cap_memo, sizeof *p->memo) != 0 ||
        !(copy = strdup(path)))
        return -1;
    p->memo[p->n_memo++] = (cv_index_memo_row){copy, *m};
    touch(p);
    return 0;
}

const cv_index_memo *cv_pending_memo(const cv_pending *p, const char *path)
{
    for (int i = p->n_memo - 1; i >= 0; i--)
        if (strcmp(p->memo[i].path, path) == 0)
            return &p->memo[i].m;
    return NULL;
}

bool cv_pending_empty(const cv_pending *p)
{
    return p->n_ev == 0 && p->n_cnt == 0 && p->n_memo == 0;
}

bool cv_pending_due(const cv_pending *p)
{
    return p->urgent || p->n_ev + p->n_cnt + p->n_memo >= DUE_ITEMS ||
           (p->since_us && cv_cache_mono_us() - p->since_us >= DUE_AGE_US);
}

static void clear(cv_pending *p)
{
    for (int i = 0; i < p->n_cnt; i++)
        free((char *)p->cnt[i].name);
    for (int i = 0; i < p->n_memo; i++)
        free((char *)p->memo[i].path);
    p->n_ev = p->n_cnt = p->n_memo = 0;
    p->since_us = 0;
    p->urgent = false;
}

int cv_pending_flush(cv_pending *p, cv_index *ix, cv_diag *d)
{
    if (cv_pending_empty(p))
        return 0;
    cv_index_batch b = {.ev = p->ev, .n_ev = p->n_ev, .cnt = p->cnt, .n_cnt = p->n_cnt,
                        .memo = p->memo, .n_memo = p->n_memo};
    int rc = cv_cache_index_apply_batch(ix, &b, d);
    clear(p);
    return rc;
}

void cv_pending_free(cv_pending *p)
{
    clear(p);
    free(p->ev);
    free(p->cnt);
    free(p->memo);
    *p = (cv_pending){0};
}
