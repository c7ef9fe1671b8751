/* The set of models served, kept in step with the model repository: every
 * folder at the start; later, a rescan (SIGHUP, POST /v2/repository/index,
 * --poll-interval) loads the folders that appeared, unloads the models
 * whose folder went and reloads those with a newer version; POST
 * .../models/NAME/load and .../unload do it for one name.  A model taken
 * out of the set is freed after the last request holding it has its
 * answer (sv_release).  Every change holds reload_mu; models[] changes
 * under models_mu too, so readers (requests, /metrics) take only that. */
#include "serve/serve_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/fs.h"
#include "common/log.h"

/* The slot of a model by name (models_mu or reload_mu held). */
static int find_slot(cv_serve *s, const char *name, size_t n)
{
    for (int i = 0; i < s->n_models; i++)
        if (strlen(s->models[i]->name) == n && memcmp(s->models[i]->name, name, n) == 0)
            return i;
    return -1;
}

sv_model *sv_acquire(cv_serve *s, const char *name, size_t n)
{
    pthread_mutex_lock(&s->models_mu);
    int i = find_slot(s, name, n);
    sv_model *m = i >= 0 ? s->models[i] : NULL;
    if (m)
        m->refs++;
    pthread_mutex_unlock(&s->models_mu);
    return m;
}

void sv_release(cv_serve *s, sv_model *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&s->models_mu);
    bool gone = --m->refs == 0 && m->retired;
    pthread_mutex_unlock(&s->models_mu);
    if (gone)
        sv_model_free(m);   /* its queue is empty: every holder has its answer */
}

/* Takes m out of service (models_mu held): freed now or by its last holder.
 * Returns whether the caller frees it (after unlocking). */
static bool retire(sv_model *m)
{
    m->retired = true;
    return m->refs == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The repository's model folders, sorted (hidden ones skipped); a name
 * that is no model name is refused with CV9419 and left out. */
static int scan(cv_serve *s, char ***out, int *n_out, cv_diag *d)
{
    *out = NULL;
    *n_out = 0;
    DIR *dh = opendir(s->repo);
    if (!dh)
        return cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){.file = s->repo},
                            "cannot read the model repository: %s", strerror(errno));
    char **names = calloc(SV_MAX_MODELS, sizeof *names);
    int n = 0, rc = names ? 0 : -1, bad = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(dh)) && n < SV_MAX_MODELS) {
        if (e->d_name[0] == '.')
            continue;
        char *path = cv_fs_join(s->repo, e->d_name);
        struct stat st;
        bool dir = path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        free(path);
        if (!dir)
            continue;
        if (!sv_name_ok(e->d_name, strlen(e->d_name))) {
            bad = cv_diag_fail(d, CV_E_SERVE_BAD_NAME, (cv_span){.file = s->repo},
                               "model folder '%.64s...': a model name is 1 to 64 of "
                               "[A-Za-z0-9_.-], not starting with '.'", e->d_name);
            continue;   /* the others are still listed: none is taken for gone */
        }
        if (!(names[n++] = strdup(e->d_name)))
            rc = -1;
    }
    closedir(dh);
    if (names)
        qsort(names, (size_t)n, sizeof names[0], cmp_names);
    if (rc != 0) {
        free_names(names, n);   /* a partial list would unload models that are there */
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    *out = names;
    *n_out = n;
    return bad;
}

/* A model not served yet: loaded, started, then added (reload_mu held). */
static int add_model(cv_serve *s, const char *name, cv_diag *d)
{
    if (s->n_models == SV_MAX_MODELS)
        return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){.file = s->repo},
                            "model %s: already %d models served", name, SV_MAX_MODELS);
    sv_model *m;
    if (sv_model_load(s->repo, name, s->threads, s->no_batching, &m, d) != 0)
        return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){0}, "model %s refused", name);
    if (sv_model_start(m, d) != 0) {
        sv_model_free(m);
        return -1;
    }
    pthread_mutex_lock(&s->models_mu);
    int rc = 0;
    if (s->n_models == s->cap_models) {
        int cap = s->cap_models ? s->cap_models * 2 : 16;
        sv_model **p = realloc(s->models, (size_t)cap * sizeof *p);
        if (p)
            s->models = p, s->cap_models = cap;
        else
            rc = -1;
    }
    if (rc == 0)
        s->models[s->n_models++] = m;
    pthread_mutex_unlock(&s->models_mu);
    if (rc != 0) {
        sv_model_free(m);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    cv_log_info("cuvil serve: model %s version %s loaded", name, m->version);
    return 0;
}

/* Takes slot out of the set (reload_mu held). */
static void remove_slot(cv_serve *s, int slot)
{
    pthread_mutex_lock(&s->models_mu);
    sv_model *m = s->models[slot];
    memmove(&s->models[slot], &s->models[slot + 1],
            (size_t)(s->n_models - slot - 1) * sizeof *s->models);
    s->n_models--;
    bool now = retire(m);
    pthread_mutex_unlock(&s->models_mu);
    cv_log_info("cuvil serve: model %s unloaded", m->name);
    if (now)
        sv_model_free(m);
}

/* One model: the newer version loaded, started, then swapped in. */
static int reload_one(cv_serve *s, int slot, cv_diag *d)
{
    char name[SV_NAME_MAX + 1], version[24], was[24];
    snprintf(name, sizeof name, "%s", s->models[slot]->name);
    if (sv_model_newest(s->repo, name, version, sizeof version, d) != 0)
        return -1;
    if (strcmp(version, s->models[slot]->version) == 0)
        return 0;   /* the version only changes under reload_mu, held */
    sv_model *nm;
    if (sv_model_load(s->repo, name, s->threads, s->no_batching, &nm, d) != 0)
        return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){0}, "model %s: version %s "
                            "refused; the version served stays", name, version);
    if (sv_model_start(nm, d) != 0) {
        sv_model_free(nm);
        return -1;
    }
    pthread_mutex_lock(&s->models_mu);
    sv_model *old = s->models[slot];
    s->models[slot] = nm;
    snprintf(was, sizeof was, "%s", old->version);
    bool now = retire(old);
    pthread_mutex_unlock(&s->models_mu);
    cv_log_info("cuvil serve: model %s now serves version %s (was %s)", name, version, was);
    if (now)
        sv_model_free(old);
    return 0;
}

int sv_repo_load_all(cv_serve *s, cv_diag *d)
{
    char **names;
    int n;
    int rc = scan(s, &names, &n, d);
    for (int i = 0; rc == 0 && i < n; i++)
        rc = add_model(s, names[i], d);
    free_names(names, n);
    if (rc == 0 && s->n_models == 0)
        rc = cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){.file = s->repo},
                          "the model repository holds no model folder");
    return rc;
}

static bool was_unloaded(const cv_serve *s, const char *name, int *at)
{
    for (int i = 0; i < s->n_unloaded; i++)
        if (strcmp(s->unloaded[i], name) == 0) {
            if (at)
                *at = i;
            return true;
        }
    return false;
}

int cv_serve_rescan(cv_serve *s, cv_diag *d)
{
    pthread_mutex_lock(&s->reload_mu);
    char **names;
    int n;
    int rc = scan(s, &names, &n, d);
    /* Gone from the repository: unloaded (a folder unreadable just now is
     * not taken for gone: the scan failed as a whole then). */
    for (int i = s->n_models - 1; names && i >= 0; i--) {
        bool there = false;
        for (int k = 0; k < n && !there; k++)
            there = strcmp(names[k], s->models[i]->name) == 0;
        if (!there)
            remove_slot(s, i);
    }
    for (int k = 0; k < n; k++) {
        int slot = find_slot(s, names[k], strlen(names[k]));
        if (slot >= 0)
            rc |= reload_one(s, slot, d);
        else if (!was_unloaded(s, names[k], NULL))
            rc |= add_model(s, names[k], d);
    }
    free_names(names, n);
    pthread_mutex_unlock(&s->reload_mu);
    return rc ? -1 : 0;
}

static int bad_name(const char *name, cv_diag *d)
{
    char shown[80];
    size_t i = 0;
    for (; name[i] && i < 64; i++)
        shown[i] = (unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e ? '?' : name[i];
    shown[i] = 0;
    return cv_diag_fail(d, CV_E_SERVE_BAD_NAME, (cv_span){0}, "'%s%s' is no model name (1 to "
                        "64 of [A-Za-z0-9_.-], not starting with '.')", shown,
                        name[i] ? "..." : "");
}

int cv_serve_reload(cv_serve *s, const char *name, cv_diag *d)
{
    if (!name)
        return cv_serve_rescan(s, d);
    if (!sv_name_ok(name, strlen(name)))
        return bad_name(name, d);
    pthread_mutex_lock(&s->reload_mu);
    int at, rc;
    if (was_unloaded(s, name, &at))
        memmove(&s->unloaded[at], &s->unloaded[at + 1],
                (size_t)(--s->n_unloaded - at) * sizeof *s->unloaded);
    int slot = find_slot(s, name, strlen(name));
    char *mdir = cv_fs_join(s->repo, name);
    struct stat st;
    if (slot >= 0)
        rc = reload_one(s, slot, d);
    else if (mdir && stat(mdir, &st) == 0 && S_ISDIR(st.st_mode))
        rc = add_model(s, name, d);   /* added to the repository since the start */
    else
        rc = cv_diag_fail(d, CV_E_SERVE_UNKNOWN_MODEL, (cv_span){0},
                          "no model '%s' is served or in the repository", name);
    free(mdir);
    pthread_mutex_unlock(&s->reload_mu);
    return rc;
}

int cv_serve_unload(cv_serve *s, const char *name, cv_diag *d)
{
    if (!sv_name_ok(name, strlen(name)))
        return bad_name(name, d);
    pthread_mutex_lock(&s->reload_mu);
    int slot = find_slot(s, name, strlen(name)), rc = 0;
    if (slot < 0) {
        rc = cv_diag_fail(d, CV_E_SERVE_UNKNOWN_MODEL, (cv_span){0}, "no model '%s' is served",
                          name);
    } else {
        void *p = was_unloaded(s, name, NULL) ? s->unloaded
                  : realloc(s->unloaded, (size_t)(s->n_unloaded + 1) * sizeof *s->unloaded);
        if (p && !was_unloaded(s, name, NULL)) {
            s->unloaded = p;
            snprintf(s->unloaded[s->n_unloaded++], SV_NAME_MAX + 1, "%s", name);
        }
        remove_slot(s, slot);
    }
    pthread_mutex_unlock(&s->reload_mu);
    return rc;
}

json_t *sv_repo_index(cv_serve *s)
{
    json_t *a = json_array();
    pthread_mutex_lock(&s->reload_mu);
    pthread_mutex_lock(&s->models_mu);
    for (int i = 0; a && i < s->n_models; i++)
        json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "name", s->models[i]->name,
                                           "version", s->models[i]->version, "state", "READY"));
    pthread_mutex_unlock(&s->models_mu);
    for (int i = 0; a && i < s->n_unloaded; i++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "name", s->unloaded[i], "state",
                                           "UNAVAILABLE"));
    pthread_mutex_unlock(&s->reload_mu);
    return a;
}

/* ---------------------------------------------------------------- polling */

static void *poll_main(void *arg)
{
    cv_serve *s = arg;
    char last[512] = "";
    pthread_mutex_lock(&s->mu);
    while (!s->poll_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (s->poll_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(s->poll_ms / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        while (!s->poll_stop && pthread_cond_timedwait(&s->poll_cv, &s->mu, &ts) == 0)
            ;
        if (s->poll_stop)
            break;
        pthread_mutex_unlock(&s->mu);
        cv_diag d;
        cv_diag_init(&d);
        /* A folder being written fails every poll until it is whole: said
         * once, not every interval. */
        char now[sizeof last] = "";
        if (cv_serve_rescan(s, &d) != 0 && d.n)
            snprintf(now, sizeof now, "CV%04d %s", d.v[0].code, d.v[0].msg);
        if (now[0] && strcmp(now, last) != 0)
            for (int i = 0; i < d.n; i++)
                cv_log_warn("cuvil serve: rescan: CV%04d %s", d.v[i].code, d.v[i].msg);
        memcpy(last, now, sizeof last);
        cv_diag_free(&d);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int sv_repo_poll_start(cv_serve *s, cv_diag *d)
{
    if (s->poll_ms <= 0)
        return 0;
    if (pthread_create(&s->poll_thread, NULL, poll_main, s) != 0)
        return cv_diag_fail(d, CV_E_SERVE_START_FAILED, (cv_span){0},
                            "cannot start the repository poll thread");
    s->polling = true;
    return 0;
}

void sv_repo_poll_stop(cv_serve *s)
{
    if (!s->polling)
        return;
    pthread_mutex_lock(&s->mu);
    s->poll_stop = true;
    pthread_cond_broadcast(&s->poll_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->poll_thread, NULL);
    s->polling = false;
}
