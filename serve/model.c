/* A served model: its newest version's artifact, loaded once per instance
 * and checked by a smoke run before the server takes requests for it. */
#include "serve/serve_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/fs.h"

int64_t sv_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

sv_req *sv_req_new(sv_pool *p)
{
    sv_req *r = sv_pool_get(p, sizeof *r);
    if (r)
        memset(r, 0, sizeof *r);
    return r;
}

void sv_req_free(sv_pool *p, sv_req *r)
{
    if (!r)
        return;
    for (int i = 0; i < SV_MAX_IO; i++) {
        sv_pool_put(p, r->in[i].data);
        sv_pool_put(p, r->out[i].data);
    }
    free(r->id);
    sv_pool_put(p, r);
}

/* A version folder's name: decimal digits, no leading zero, at most 18. */
static long long version_number(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18 || (s[0] == '0' && n > 1) || strspn(s, "0123456789") != n)
        return -1;
    return atoll(s);
}

/* The newest version under dir whose folder holds a manifest.json. */
static int newest_version(const char *dir, char *out, size_t size, cv_diag *d);

int sv_model_newest(const char *repo, const char *name, char *out, size_t size, cv_diag *d)
{
    char *mdir = cv_fs_join(repo, name);
    if (!mdir)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    int rc = newest_version(mdir, out, size, d);
    free(mdir);
    return rc;
}

static int newest_version(const char *dir, char *out, size_t size, cv_diag *d)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){.file = dir},
                            "cannot read the model folder: %s", strerror(errno));
    long long best = -1;
    struct dirent *e;
    while ((e = readdir(dh))) {
        long long v = version_number(e->d_name);
        if (v < 0 || v <= best)
            continue;
        char *sub = cv_fs_join(dir, e->d_name);
        char *man = sub ? cv_fs_join(sub, "manifest.json") : NULL;
        struct stat st;
        if (man && stat(man, &st) == 0 && S_ISREG(st.st_mode))
            best = v;
        free(man);
        free(sub);
    }
    closedir(dh);
    if (best < 0)
        return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){.file = dir},
                            "no version folder (1/, 2/ ...) with a compiled artifact "
                            "(manifest.json) in it");
    snprintf(out, size, "%lld", best);
    return 0;
}

/* Whether every input and output has the same symbol as its first dim. */
static bool batch_dim_shared(const cv_native *n)
{
    int64_t sym = 0;
    int ni = cv_native_num_inputs(n), no = cv_native_num_outputs(n);
    for (int i = 0; i < ni + no; i++) {
        cv_native_io io = i < ni ? cv_native_input(n, i) : cv_native_output(n, i - ni);
        if (io.rank < 1 || io.dims[0] >= 0 || io.dims[0] == -1 - cv_native_num_symbols(n))
            return false;
        if (i == 0)
            sym = io.dims[0];
        else if (io.dims[0] != sym)
            return false;
    }
    return ni > 0;
}

/* One run on zeros, every symbol 1: an artifact that loads but cannot run
 * is refused before it is served.  Inputs whose dims are expressions of
 * symbols are not guessed: such a model is not smoke-run. */
static int smoke_run(sv_model *m, cv_native *n, cv_diag *d)
{
    int ni = cv_native_num_inputs(n), no = cv_native_num_outputs(n);
    cv_tensor in[SV_MAX_IO] = {{0}}, out[SV_MAX_IO] = {{0}};
    int rc = 0;
    bool runnable = true;
    for (int i = 0; i < ni && rc == 0; i++) {
        cv_native_io io = cv_native_input(n, i);
        int64_t dims[CV_MAX_RANK];
        for (int k = 0; k < io.rank; k++) {
            runnable = runnable && io.dims[k] != -1 - cv_native_num_symbols(n);
            dims[k] = io.dims[k] >= 0 ? io.dims[k] : 1;
        }
        if (cv_tensor_alloc(&in[i], io.dtype, io.rank, dims) != 0)
            rc = cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        else
            memset(in[i].data, 0, cv_tensor_nbytes(&in[i]));
    }
    if (rc == 0 && runnable && cv_native_run(n, in, ni, out, d) != 0)
        rc = cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){.file = m->dir},
                          "model %s version %s failed its smoke run", m->name, m->version);
    for (int i = 0; i < SV_MAX_IO; i++) {
        cv_tensor_free(&in[i]);
        if (i < no)
            cv_tensor_free(&out[i]);
    }
    return rc;
}

static int check_signature(sv_model *m, cv_native *n, cv_diag *d)
{
    if (cv_native_num_inputs(n) > SV_MAX_IO || cv_native_num_outputs(n) > SV_MAX_IO)
        return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){.file = m->dir},
                            "model %s has more than %d inputs or outputs", m->name, SV_MAX_IO);
    m->batchable = batch_dim_shared(n);
    if (m->cfg.max_batch_size > 0 && !m->batchable)
        return cv_diag_fail(d, CV_E_SERVE_BAD_CONFIG, (cv_span){.file = m->dir},
                            "model %s: max_batch_size needs the same symbolic first dimension "
                            "on every input and output (f32[N,...])", m->name);
    return 0;
}

bool sv_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > SV_NAME_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
                             s[i]))
            return false;
    return true;
}

static int open_instances(sv_model *m, int threads, cv_diag *d)
{
    for (int i = 0; i < m->cfg.instances; i++) {
        m->inst[i].m = m;
        if (cv_native_open(m->dir, threads, &m->inst[i].nat, d) != 0)
            return cv_diag_fail(d, CV_E_SERVE_MODEL_LOAD, (cv_span){.file = m->dir},
                                "model %s version %s cannot be loaded", m->name, m->version);
        m->n_inst = i + 1;
    }
    m->meta = m->inst[0].nat;
    if (check_signature(m, m->meta, d) != 0 || sv_pad_setup(m, m->meta, d) != 0)
        return -1;
    return smoke_run(m, m->meta, d);
}

int sv_model_load(const char *repo, const char *name, int threads, bool batching_off,
                  sv_model **out, cv_diag *d)
{
    *out = NULL;
    if (!sv_name_ok(name, strlen(name)))
        return cv_diag_fail(d, CV_E_SERVE_BAD_NAME, (cv_span){.file = repo},
                            "model folder '%.80s': a name is 1 to 64 of [A-Za-z0-9_.-], not "
                            "starting with '.'", name);
    sv_model *m = calloc(1, sizeof *m);
    char *mdir = cv_fs_join(repo, name);
    sv_pool *pool = malloc(sizeof *pool);
    if (!m || !mdir || !pool) {
        free(m);
        free(mdir);
        free(pool);
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    sv_pool_init(m->pool = pool);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv_work, NULL);
    pthread_cond_init(&m->cv_done, NULL);
    pthread_mutex_init(&m->st.mu, NULL);
    int rc = sv_config_load(mdir, &m->cfg, d);
    if (rc == 0)
        rc = newest_version(mdir, m->version, sizeof m->version, d);
    if (rc == 0 && !(m->dir = cv_fs_join(mdir, m->version)))
        rc = cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (rc == 0)
        rc = open_instances(m, threads > 0 ? threads : 1, d);
    free(mdir);
    m->no_merge = batching_off || m->cfg.max_batch_size == 0;
    if (rc != 0) {
        sv_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}
