/* cv_build: compile-with-cache.
 *
 *   source digest (file-hash memo) -> deps entry -> L1 key -> L1 entry
 *   -> IR digest -> L2 key -> L2 entry -> materialise the artifact
 *
 * Each level falls back to doing the work and storing it.  On an L1 hit no
 * front end runs unless L2 misses; then the front end runs again (rather
 * than parsing the stored text) so that the module compiled is the one a
 * cold compile sees, and an artifact never depends on which level hit.
 * That run also checks the L1 entry: a front end that disagrees with its
 * cache entry is reported (CV9311) and the entry replaced. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fs.h"
#include "common/jsonutil.h"
#include "compile/internal.h"

typedef struct bctx {
    cv_cache *c;                /* NULL when the cache is off */
    const cv_build_opts *o;
    cv_build_result *r;
    cv_diag *d;
    const char *target;
    unsigned emit;
    cv_compile_source src;           /* src.dir owned */
    cv_compile_deps deps;            /* owned */
    bool deps_stored;           /* the deps entry matched what the front end read */
    cv_cache_key deps_key, l1_key, l2_key, code_key;   /* owned */
    cv_compile_l1_value l1v;
    bool have_l1v;
    json_t *weights;            /* owned: the weights list of l1v (canonical.c) */
    cv_module *m;               /* owned */
    cv_compile_code_value code_val; /* the code entry found or stored */
    bool have_code_val;
} bctx;

static void bctx_free(bctx *b)
{
    free(b->src.dir);
    cv_compile_deps_free(&b->deps);
    cv_cache_key_free(&b->deps_key);
    cv_cache_key_free(&b->l1_key);
    cv_cache_key_free(&b->l2_key);
    cv_cache_key_free(&b->code_key);
    json_decref(b->weights);
    cv_module_free(b->m);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int source_init(bctx *b)
{
    const cv_build_opts *o = b->o;
    b->src.fe = cv_frontend_for(o->model, b->d);
    if (!b->src.fe)
        return -1;
    b->src.name = base_name(o->model);
    b->src.dir = cv_fs_dirname(o->model);
    snprintf(b->src.options, sizeof b->src.options, "verify=%s", o->strict ? "strict" : "default");
    if (!b->src.dir)
        return cv_diag_fail(b->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    return b->c ? cv_cache_file_digest(b->c, o->model, &b->src.digest, b->d)
                : cv_cache_hash_file(o->model, &b->src.digest, NULL, NULL, b->d);
}

static cv_cache_outcome outcome_of(const cv_cache_lookup *info)
{
    return info->source == CV_CACHE_SRC_REMOTE ? CV_CACHE_REMOTE_HIT : CV_CACHE_HIT;
}

static const char *reason_text(cv_cache_miss_reason r, const char *not_found)
{
    switch (r) {
    case CV_MISS_EVICTED: return "evicted";
    case CV_MISS_CORRUPT: return "corrupt entry removed";
    case CV_MISS_REMOTE_ERROR: return "remote cache failed";
    case CV_MISS_DISABLED: return "cache off";
    default: return not_found;
    }
}

/* ------------------------------------------------------------------ L1 */

/* The weights list an L1 entry names (a blob of its own). */
static int load_weights_list(bctx *b)
{
    void *list = NULL;
    size_t len = 0;
    json_decref(b->weights);
    b->weights = NULL;
    if (cv_cache_get_blob(b->c, &b->l1v.weights, &list, &len, NULL, b->d) == 1 && len < (64u << 20))
        b->weights = json_loadb(list, len, JSON_REJECT_DUPLICATES, NULL);
    free(list);
    return json_is_object(b->weights) ? 0 : -1;
}

/* The counted L1 look-up, once the key is known. */
static int l1_lookup(bctx *b, const char *not_found)
{
    void *val = NULL;
    size_t len = 0;
    cv_cache_lookup info = {0};
    if (cv_compile_l1_key(&b->src, &b->deps, &b->l1_key, b->d))
        return -1;
    cv_compile_hex(&b->l1_key.digest, b->r->l1.key);
    int hit = cv_cache_get_action(b->c, CV_CACHE_L1, &b->l1_key, &val, &len, &info, b->d);
    b->r->l1.ms += info.ms;
    if (hit == 1 && cv_compile_l1_decode(val, len, &b->l1v) == 0 && load_weights_list(b) == 0) {
        b->have_l1v = true;
        b->r->l1.outcome = outcome_of(&info);
        b->r->l1.reason[0] = 0;
    } else {
        b->r->l1.outcome = CV_CACHE_MISS;
        if (!b->r->l1.reason[0])
            snprintf(b->r->l1.reason, sizeof b->r->l1.reason, "%s",
                     hit == 1 ? "malformed entry" : reason_text(info.reason, not_found));
        b->r->l1.cause = hit == 1 ? "corrupt" : cv_build_miss_cause_of(info.reason);
        if (b->o->explain)
            cv_compile_explain_miss(b->c, CV_CACHE_L1, &b->l1_key, &b->r->l1);
    }
    free(val);
    return 0;
}

/* Deps entry, then the L1 entry: no front end runs when both hit. */
static int l1_probe(bctx *b)
{
    void *val = NULL;
    size_t len = 0;
    cv_cache_lookup info = {0};
    if (cv_compile_deps_key(&b->src, &b->deps_key, b->d))
        return -1;
    int hit = cv_cache_get_aux(b->c, &b->deps_key, &val, &len, &info, b->d);
    b->r->l1.ms = info.ms;
    b->r->l1.outcome = CV_CACHE_MISS;
    if (hit != 1 || cv_compile_deps_decode(val, len, &b->deps) != 0) {
        snprintf(b->r->l1.reason, sizeof b->r->l1.reason, "%s",
                 reason_text(info.reason, "new source"));
        b->r->l1.cause = cv_build_miss_cause_of(info.reason);
        free(val);
        return 0;
    }
    free(val);
    int ok = cv_compile_deps_digest(b->c, b->src.dir, &b->deps, b->r->l1.reason,
                               sizeof b->r->l1.reason);
    if (ok < 0)
        return cv_diag_fail(b->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (ok == 0) {
        cv_compile_deps_free(&b->deps);
        return 0;
    }
    b->deps_stored = true;
    return l1_lookup(b, "weights changed");
}

/* The files the module read: weights(...) params and ONNX external data.
 * 1 known, 0 unknown (the model is then compiled without L1). */
static int deps_of_module(bctx *b, cv_compile_deps *x)
{
    *x = (cv_compile_deps){.files = json_array()};
    if (!x->files)
        return -1;
    for (int f = 0; f < b->m->n_funcs; f++) {
        const cv_func *fn = b->m->funcs[f];
        for (int i = 0; i < fn->n_params; i++) {
            const cv_param *p = fn->params[i];
            bool seen = false;
            size_t k;
            json_t *v;
            if (p->kind != CV_PARAM_WEIGHTS || !p->file)
                continue;
            json_array_foreach(x->files, k, v)
                seen = seen || strcmp(json_string_value(v), p->file) == 0;
            if (!seen && json_array_append_new(x->files, json_string(p->file)) != 0)
                return 0;
        }
    }
    if (strcmp(b->src.fe->name, "onnx") == 0 && cv_compile_onnx_file_deps(b->o->model, x->files) != 0)
        return 0;
    if (cv_compile_sort_strings(x->files) != 0)
        return -1;
    char why[256];
    return cv_compile_deps_digest(b->c, b->src.dir, x, why, sizeof why);
}

/* Runs the front end (load, verify, map weights). */
static int frontend(bctx *b)
{
    double t0 = cv_clock_mono_ms_f();
    b->m = cv_model_load(b->o->model, b->o->strict ? CV_LOAD_STRICT : 0, b->d);
    b->r->ms_frontend += cv_clock_mono_ms_f() - t0;
    b->r->frontend_ran = true;
    return b->m ? 0 : -1;
}

/* What L1 stores for the module just loaded (canonical.c).  text: the
 * canonical text (malloc'd) for the blob; b->weights: the weights list. */
static int describe_module(bctx *b, const cv_compile_deps *x, cv_compile_l1_value *v, char **text)
{
    json_decref(b->weights);
    b->weights = NULL;
    if (cv_compile_describe(b->m, x, v, text, &b->weights) == 0)
        return 0;
    return cv_diag_fail(b->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory printing the IR");
}

static void store_l1(bctx *b, const cv_compile_l1_value *v, const char *text)
{
    double t0 = cv_clock_mono_ms_f();
    cv_compile_l1_value sv = *v;
    char *deps = cv_compile_deps_encode(&b->deps);
    char *val = NULL, *list = cv_json_canonical(b->weights);
    cv_digest ldg;
    if (list && cv_cache_put_blob(b->c, list, strlen(list), &ldg, b->d) == 0 &&
        cv_cache_digest_eq(&ldg, &sv.weights) &&
        cv_cache_put_blob(b->c, text, strlen(text), &sv.ir_blob, b->d) == 0 &&
        (val = cv_compile_l1_encode(&sv)) != NULL && deps) {
        if (!b->deps_stored)
            cv_cache_put_aux(b->c, &b->deps_key, deps, strlen(deps), b->d);
        cv_cache_put_action(b->c, CV_CACHE_L1, &b->l1_key, val, strlen(val), b->d);
    }
    free(deps);
    free(val);
    free(list);
    b->r->ms_upload += cv_clock_mono_ms_f() - t0;
}

/* An L1 miss: run the front end, then look up (and store) under the key
 * its dependencies give. */
static int l1_fill(bctx *b)
{
    if (frontend(b))
        return -1;
    cv_compile_deps x;
    int known = deps_of_module(b, &x);
    if (known < 0) {
        cv_compile_deps_free(&x);
        return cv_diag_fail(b->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    char *text = NULL;
    cv_compile_l1_value v;
    int rc = describe_module(b, known ? &x : NULL, &v, &text);
    if (rc == 0 && !known) {
        snprintf(b->r->l1.reason, sizeof b->r->l1.reason,
                 "the files this model reads cannot be determined: not cached");
        b->r->l1.outcome = CV_CACHE_NONE;
    } else if (rc == 0) {
        bool same = b->deps_stored && json_equal(x.files, b->deps.files);
        cv_compile_deps_free(&b->deps);
        b->deps = x;
        x = (cv_compile_deps){0};
        b->deps_stored = same;
        if (!b->l1_key.manifest) {
            rc = l1_lookup(b, "new source");
        } else if (!same) {     /* the stored deps list was wrong: key it afresh */
            cv_cache_key_free(&b->l1_key);
            rc = cv_compile_l1_key(&b->src, &b->deps, &b->l1_key, b->d);
            cv_compile_hex(&b->l1_key.digest, b->r->l1.key);
        }
        b->l1v = v;             /* the fresh value, whatever a late hit held */
        if (rc == 0)
            store_l1(b, &v, text);
    }
    free(text);
    cv_compile_deps_free(&x);
    b->have_l1v = rc == 0 && known;
    return rc;
}

/* An L1 hit whose L2 missed: the front end runs for the backend; its
 * result must match the entry. */
static int l1_recheck(bctx *b)
{
    if (frontend(b))
        return -1;
    cv_compile_l1_value v;
    char *text = NULL;
    if (describe_module(b, &b->deps, &v, &text))
        return -1;
    if (!cv_cache_digest_eq(&v.ir, &b->l1v.ir) || !cv_cache_digest_eq(&v.ir_loc, &b->l1v.ir_loc)) {
        cv_diag_add(b->d, CV_SEV_WARNING, CV_E_BUILD_CACHE_INCONSISTENT, (cv_span){.file = b->o->model},
                    NULL, "the L1 cache entry for %s does not match what the %s front end "
                    "produces now; the entry is replaced", b->o->model, b->src.fe->name);
        b->l1v = v;
        store_l1(b, &v, text);
    }
    free(text);
    return 0;
}

/* ------------------------------------------------------------------ L2 */

static int l2_key(bctx *b)
{
    cv_compile_target desc;
    if (cv_compile_target_describe(b->target, &desc, b->d))
        return -1;
    bool locs = b->o->debug || (b->emit & CV_EMIT_CUIR);
    cv_compile_l2_in in = {.ir = locs ? b->l1v.ir_loc : b->l1v.ir, .target = b->target,
                      .desc = &desc, .o = b->o, .emit = b->emit,
                      .structure = b->l1v.structure, .weights = b->weights};
    cv_compile_hex(&in.ir, b->r->ir_digest);
    cv_compile_hex(&b->l1v.fingerprint, b->r->fingerprint);
    cv_cache_key_free(&b->l2_key);
    if (cv_compile_l2_key(b->c, &in, &b->l2_key, b->d))
        return -1;
    cv_compile_hex(&b->l2_key.digest, b->r->l2.key);
    return 0;
}

/* An artifact of the same name in out_dir made from another model (its
 * symbol map's fingerprint differs) would be overwritten, and a program
 * linking the old one would silently get the new: refused unless forced.
 * A directory holding artifacts of other names is fine. */
static int check_out_dir(bctx *b, const char *func_name)
{
    if (b->o->force || b->o->no_output_on_hit || b->o->scratch_out || !b->r->fingerprint[0])
        return 0;
    char name[128], file[160];
    if (b->o->name)
        snprintf(name, sizeof name, "%s", b->o->name);
    else
        cv_artifact_c_name(func_name, name, sizeof name);
    snprintf(file, sizeof file, "%s.cvsym", name);
    char *path = cv_fs_join(b->o->out_dir, file);
    json_t *sym = NULL;
    cv_diag quiet;      /* no readable symbol map: nothing is known to be lost */
    cv_diag_init(&quiet);
    if (path && access(path, F_OK) == 0)
        cv_json_read_file(path, 64u << 20, &sym, &quiet);
    cv_diag_free(&quiet);
    const char *fp = json_string_value(json_object_get(sym, "fingerprint"));
    int rc = 0;
    if (fp && strcmp(fp, b->r->fingerprint) != 0) {
        cv_diag_error(b->d, CV_E_ARTIFACT_NAME_TAKEN, (cv_span){.file = b->o->model},
                           "%s already holds an artifact named '%s' made from another model "
                           "(its %s differs): give this one another --name, another -o, or "
                           "--force to replace it", b->o->out_dir, name, file);
        rc = -1;
    }
    json_decref(sym);
    free(path);
    return rc;
}

/* 1 materialised, 0 miss, -1 error. */
static int l2_lookup(bctx *b)
{
    void *val = NULL;
    size_t len = 0;
    cv_cache_lookup info = {0};
    int hit = cv_cache_get_action(b->c, CV_CACHE_L2, &b->l2_key, &val, &len, &info, b->d);
    b->r->l2.ms = info.ms;
    b->r->l2.outcome = CV_CACHE_MISS;
    int rc = 0;
    if (hit == 1 && check_out_dir(b, b->l1v.name)) {
        rc = -1;
    } else if (hit == 1) {
        double t0 = cv_clock_mono_ms_f();
        rc = b->o->no_output_on_hit
                 ? cv_compile_artifact_check(b->c, val, len, b->r->name, b->r->l2.reason,
                                        sizeof b->r->l2.reason, b->d)
                 : cv_compile_artifact_materialise(b->c, val, len, b->o->out_dir, b->r->name,
                                              b->r->l2.reason, sizeof b->r->l2.reason, b->d);
        b->r->ms_fetch = cv_clock_mono_ms_f() - t0;
        if (rc == 1) {
            cv_digest dg;
            cv_cache_sha256(val, len, &dg);
            cv_compile_hex(&dg, b->r->artifact_manifest);
            b->r->l2.outcome = outcome_of(&info);
        } else {
            b->r->l2.cause = "corrupt";  /* stored, but its files are not */
        }
    } else {
        snprintf(b->r->l2.reason, sizeof b->r->l2.reason, "%s",
                 reason_text(info.reason, "not found"));
        b->r->l2.cause = cv_build_miss_cause_of(info.reason);
        if (b->o->explain)
            cv_compile_explain_miss(b->c, CV_CACHE_L2, &b->l2_key, &b->r->l2);
    }
    free(val);
    return rc;
}

/* ---------------------------------------------------------------- code */

/* Cache trouble on the code level is a warning, as on the others. */
static void warn_from(bctx *b, cv_diag *scratch)
{
    for (int i = 0; i < scratch->n; i++)
        cv_diag_add(b->d, CV_SEV_WARNING, scratch->v[i].code, (cv_span){0}, NULL, "%s",
                    scratch->v[i].msg);
    cv_diag_free(scratch);
}

/* cv_code_cache.lookup: the code level, keyed by the code's source. */
static int code_lookup(void *ctx, const void *source, size_t len, cv_code_object *out)
{
    bctx *b = ctx;
    cv_build_level *lv = &b->r->code;
    cv_diag scratch;
    cv_diag_init(&scratch);
    cv_digest md;
    cv_compile_target desc;
    cv_cache_sha256(source, len, &md);
    cv_cache_key_free(&b->code_key);
    lv->outcome = CV_CACHE_MISS;
    int rc = 0;
    if (cv_compile_target_describe(b->target, &desc, &scratch) == 0 &&
        cv_compile_code_key(b->c, &md, b->target, &desc, b->o->opt_level, &b->code_key, &scratch) == 0) {
        void *val = NULL;
        size_t vlen = 0;
        cv_compile_code_value *cv = &b->code_val;
        cv_cache_lookup info = {0};
        cv_compile_hex(&b->code_key.digest, lv->key);
        int hit = cv_cache_get_action(b->c, CV_CACHE_CODE, &b->code_key, &val, &vlen, &info,
                                      &scratch);
        lv->ms = info.ms;
        out->obj = NULL;
        if (hit == 1 && cv_compile_code_decode(val, vlen, cv) == 0 &&
            cv_cache_get_blob(b->c, &cv->object, &out->obj, &out->len, NULL, &scratch) == 1 &&
            out->len == cv->size) {
            snprintf(out->triple, sizeof out->triple, "%s", cv->triple);
            snprintf(out->cpu, sizeof out->cpu, "%s", cv->cpu);
            lv->outcome = outcome_of(&info);
            b->have_code_val = true;
            rc = 1;
        } else {
            free(out->obj);
            out->obj = NULL;
            snprintf(lv->reason, sizeof lv->reason, "%s",
                     hit == 1 ? "its object is no longer stored"
                              : reason_text(info.reason, "structure or a constant in code changed"));
        }
        free(val);
    }
    warn_from(b, &scratch);
    return rc;
}

/* cv_code_cache.store: the object made after a code miss. */
static void code_store(void *ctx, const cv_code_object *o)
{
    bctx *b = ctx;
    if (!b->code_key.manifest)
        return;
    double t0 = cv_clock_mono_ms_f();
    cv_diag scratch;
    cv_diag_init(&scratch);
    char *val = NULL;
    b->code_val = (cv_compile_code_value){.size = o->len};
    snprintf(b->code_val.triple, sizeof b->code_val.triple, "%s", o->triple);
    snprintf(b->code_val.cpu, sizeof b->code_val.cpu, "%s", o->cpu);
    if (cv_cache_put_blob(b->c, o->obj, o->len, &b->code_val.object, &scratch) == 0 &&
        (val = cv_compile_code_encode(&b->code_val)) != NULL &&
        cv_cache_put_action(b->c, CV_CACHE_CODE, &b->code_key, val, strlen(val), &scratch) == 0)
        b->have_code_val = true;
    free(val);
    warn_from(b, &scratch);
    b->r->ms_upload += cv_clock_mono_ms_f() - t0;
}

/* cv_code_cache.so_lookup: the template of the code entry just found. */
static int so_lookup(void *ctx, cv_so_template *t)
{
    bctx *b = ctx;
    const cv_compile_code_value *v = &b->code_val;
    memset(t, 0, sizeof *t);
    if (!b->have_code_val || !v->has_so)
        return 0;
    cv_diag scratch;
    cv_diag_init(&scratch);
    size_t hl = 0, tl = 0;
    int rc = cv_cache_get_blob(b->c, &v->so_head, &t->head, &hl, NULL, &scratch) == 1 &&
             cv_cache_get_blob(b->c, &v->so_tail, &t->tail, &tl, NULL, &scratch) == 1 &&
             hl == v->head_size && tl == v->tail_size;
    t->head_len = hl;
    t->tail_len = tl;
    t->image_len = v->image_size;
    t->build_id_at = v->build_id_at;
    if (!rc) {
        free(t->head);
        free(t->tail);
        memset(t, 0, sizeof *t);
    }
    warn_from(b, &scratch);
    return rc;
}

/* cv_code_cache.so_store: the library linked from this code, cut around
 * its weights, joins the code entry. */
static void so_store(void *ctx, const cv_so_template *t)
{
    bctx *b = ctx;
    if (!b->have_code_val || !b->code_key.manifest)
        return;
    double t0 = cv_clock_mono_ms_f();
    cv_diag scratch;
    cv_diag_init(&scratch);
    cv_compile_code_value v = b->code_val;
    v.has_so = true;
    v.head_size = t->head_len;
    v.tail_size = t->tail_len;
    v.image_size = t->image_len;
    v.build_id_at = t->build_id_at;
    char *val = NULL;
    if (cv_cache_put_blob(b->c, t->head, t->head_len, &v.so_head, &scratch) == 0 &&
        cv_cache_put_blob(b->c, t->tail, t->tail_len, &v.so_tail, &scratch) == 0 &&
        (val = cv_compile_code_encode(&v)) != NULL &&
        cv_cache_put_action(b->c, CV_CACHE_CODE, &b->code_key, val, strlen(val), &scratch) == 0)
        b->code_val = v;
    free(val);
    warn_from(b, &scratch);
    b->r->ms_upload += cv_clock_mono_ms_f() - t0;
}

static int backend(bctx *b)
{
    if (check_out_dir(b, b->m->n_funcs ? b->m->funcs[0]->name : ""))
        return -1;
    cv_quant_opts qo = b->o->quant;
    qo.precision = b->o->precision;
    cv_compile_opts co = {.target = b->target, .emit = b->emit, .out_dir = b->o->out_dir,
                          .quant = &qo,
                          .opt_level = b->o->opt_level == CV_OPT_OS ? 2 : (int)b->o->opt_level};
    /* The symbol map holds locations only where the L2 key covers them. */
    co.debug = b->o->debug;
    co.no_blocked_layout = b->o->no_blocked_layout;
    co.max_ops = b->o->max_ops;
    co.sym_locs = !b->c || (b->emit & CV_EMIT_CUIR);
    co.fingerprint = b->r->fingerprint[0] ? b->r->fingerprint : NULL;
    co.name = b->o->name;
    cv_code_cache cc = {.ctx = b, .lookup = code_lookup, .store = code_store,
                        .so_lookup = so_lookup, .so_store = so_store};
    if (b->c)
        co.code_cache = &cc;
    if (cv_compile_native(b->m, &co, &b->r->info, b->d))
        return -1;
    b->r->compiled = true;
    b->r->ms_passes = b->r->info.ms_codegen;
    b->r->ms_codegen = b->r->info.ms_llvm + b->r->info.ms_link;
    snprintf(b->r->name, sizeof b->r->name, "%s", b->r->info.name);
    return 0;
}

static int store_l2(bctx *b)
{
    double t0 = cv_clock_mono_ms_f();
    char *list = NULL, name[128];
    size_t len = 0;
    cv_digest dg;
    int rc = cv_compile_artifact_store(b->c, b->o->out_dir, !b->o->scratch_out,
                                       b->r->compiled ? &b->r->info : NULL, &list, &len, name,
                                       b->d);
    if (rc == 0)
        rc = cv_cache_put_blob(b->c, list, len, &dg, b->d) == 0 ? 0 : 1;
    if (rc == 0) {
        cv_compile_hex(&dg, b->r->artifact_manifest);
        cv_cache_put_action(b->c, CV_CACHE_L2, &b->l2_key, list, len, b->d);
    }
    free(list);
    b->r->ms_upload += cv_clock_mono_ms_f() - t0;
    return rc < 0 ? -1 : 0;
}

/* The link from this structure to the code it compiled to, for `cache
 * explain` (explain_code.c); trouble is a warning. */
static void link_code(bctx *b)
{
    if (!b->r->code.key[0] || !b->l2_key.manifest)
        return;
    cv_diag scratch;
    cv_diag_init(&scratch);
    cv_cache_key link = {0};
    if (cv_compile_code_link_key(b->l2_key.manifest, &link, &scratch) == 0)
        cv_cache_put_aux(b->c, &link, b->r->code.key, CV_DIGEST_HEX, &scratch);
    cv_cache_key_free(&link);
    warn_from(b, &scratch);
}

/* ------------------------------------------------------------ the build */

static int uncached(bctx *b)
{
    snprintf(b->r->l1.reason, sizeof b->r->l1.reason, "cache off");
    snprintf(b->r->l2.reason, sizeof b->r->l2.reason, "cache off");
    if (frontend(b))
        return -1;
    cv_digest fp;
    cv_compile_fingerprint(b->m, &fp);
    cv_compile_hex(&fp, b->r->fingerprint);
    return backend(b);
}

static int cached(bctx *b)
{
    double t0 = cv_clock_mono_ms_f();
    if (l1_probe(b) || (!b->have_l1v && l1_fill(b)))
        return -1;
    if (!b->have_l1v) {             /* the model's inputs are unknown: compile uncached */
        snprintf(b->r->l2.reason, sizeof b->r->l2.reason, "no L1 entry");
        return backend(b);
    }
    if (l2_key(b))
        return -1;
    int rc = l2_lookup(b);
    b->r->ms_keys = cv_clock_mono_ms_f() - t0 - b->r->ms_frontend - b->r->ms_upload - b->r->ms_fetch;
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    if (!b->m) {
        cv_digest before = b->l2_key.digest;
        if (l1_recheck(b) || l2_key(b))
            return -1;
        if (!cv_cache_digest_eq(&before, &b->l2_key.digest) && (rc = l2_lookup(b)) != 0)
            return rc < 0 ? -1 : 0;
    }
    if (backend(b) || store_l2(b))
        return -1;
    link_code(b);
    return 0;
}

/* One compile's stores go to the disk together (cv_cache_batch_begin); an
 * artifact digest is reported only once its files are synced.  A cache
 * that cannot sync is a warning, as any cache trouble. */
static int cached_batch(bctx *b)
{
    cv_diag sd;
    cv_diag_init(&sd);
    bool batched = cv_cache_batch_begin(b->c, &sd) == 0;
    int rc = cached(b);
    double t0 = cv_clock_mono_ms_f();
    if (batched && cv_cache_batch_end(b->c, &sd) != 0)
        b->r->artifact_manifest[0] = '\0';
    b->r->ms_upload += cv_clock_mono_ms_f() - t0; /* the syncs are the upload's last step */
    for (int i = 0; i < sd.n; i++)
        cv_diag_add(b->d, CV_SEV_WARNING, sd.v[i].code, (cv_span){0}, NULL, "%s", sd.v[i].msg);
    cv_diag_free(&sd);
    return rc;
}

/* <name>.manifest.json beside manifest.json: manifest.json describes the
 * last artifact written to the directory, this one stays when artifacts of
 * other models are compiled into it (cuvil run DIR/<name>.manifest.json). */
static int name_manifest(bctx *b)
{
    char file[160];
    snprintf(file, sizeof file, "%s.manifest.json", b->r->name);
    char *from = cv_fs_join(b->o->out_dir, "manifest.json"), *to = cv_fs_join(b->o->out_dir, file);
    char *data = NULL;
    size_t len = 0;
    int rc = from && to ? cv_fs_read_file(from, 64u << 20, &data, &len, b->d) : -1;
    if (rc == 0)
        rc = cv_fs_write_replace(to, data, len, b->d);
    free(data);
    free(from);
    free(to);
    return rc;
}

/* A compile moves a model's weights through buffers of tens of MB (the
 * file, the packed weights, the objects, the library, the cache's copies).
 * glibc maps each allocation over its mmap threshold (at most 32 MB)
 * afresh and unmaps it on free, so every such buffer faults in its pages
 * again: in a VM, a third of a retrain's time (resnet18, bench/cache/NOTES.md).
 * From the heap instead, a freed buffer's pages serve the next one.  The
 * processes that compile are short-lived (cuvil compile, a worker's job
 * child), so keeping the heap at its peak costs nothing afterwards. */
static void tune_malloc(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

int cv_build(cv_cache *c, const cv_build_opts *o, cv_build_result *r, cv_diag *d)
{
    tune_malloc();
    double t0 = cv_clock_mono_ms_f();
    memset(r, 0, sizeof *r);
    bctx b = {.c = cv_cache_enabled(c) ? c : NULL, .o = o, .r = r, .d = d,
              .target = o->target ? o->target : "native",
              .emit = o->emit ? o->emit : CV_EMIT_DEFAULT};
    int rc = -1;
    if (o->precision >= CV_PRECISION__COUNT)
        cv_diag_error(d, CV_E_UNSUPPORTED_PRECISION, (cv_span){.file = o->model},
                      "precision %d is not supported by this compiler", (int)o->precision);
    else if (source_init(&b) == 0)
        rc = b.c ? cached_batch(&b) : uncached(&b);
    if (rc == 0 && !o->no_output_on_hit && !o->scratch_out)
        rc = name_manifest(&b);
    r->ms_total = cv_clock_mono_ms_f() - t0;
    bctx_free(&b);
    return rc;
}

void cv_build_cache_line(const cv_build_result *r, char *buf, size_t size)
{
    const cv_build_level *lv[3] = {&r->l1, &r->l2, &r->code};
    static const char *const names[3] = {"l1", "l2", "code"};
    size_t at = (size_t)snprintf(buf, size, "cache:");
    /* The code level is looked up only when the artifact is compiled. */
    for (int i = 0; i < (r->code.outcome != CV_CACHE_NONE ? 3 : 2) && at < size; i++) {
        const cv_build_level *l = lv[i];
        const char *what = l->outcome == CV_CACHE_HIT ? "hit"
                         : l->outcome == CV_CACHE_REMOTE_HIT ? "hit (remote)"
                         : l->outcome == CV_CACHE_MISS ? "miss" : "not used";
        at += (size_t)snprintf(buf + at, size - at, "%s %s %s", i ? "," : "", names[i], what);
        if (at < size && l->outcome != CV_CACHE_HIT && l->outcome != CV_CACHE_REMOTE_HIT &&
            l->reason[0])
            at += (size_t)snprintf(buf + at, size - at, " (%s)", l->reason);
    }
}

int cv_build_materialise(cv_cache *c, const char *manifest_hex, const char *out_dir,
                         cv_diag *d)
{
    cv_digest dg;
    if (cv_cache_digest_parse(manifest_hex, &dg) != 0)
        return cv_diag_fail(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0},
                            "'%.80s' is not an artifact manifest digest", manifest_hex);
    void *list = NULL;
    size_t len = 0;
    char name[128], why[256];
    int rc = cv_cache_get_blob(c, &dg, &list, &len, NULL, d);
    if (rc == 1)
        rc = cv_compile_artifact_materialise(c, list, len, out_dir, name, why, sizeof why, d);
    free(list);
    return rc;
}

/* ------------------------------------------------------------- probing */

void cv_build_keys_free(cv_build_keys *k)
{
    cv_cache_key_free(&k->l1);
    cv_cache_key_free(&k->l2);
}

int cv_build_probe(cv_cache *c, const cv_build_opts *o, bool run_frontend, cv_build_keys *k,
                   cv_diag *d)
{
    memset(k, 0, sizeof *k);
    cv_build_result r;
    memset(&r, 0, sizeof r);
    bctx b = {.c = cv_cache_enabled(c) ? c : NULL, .o = o, .r = &r, .d = d,
              .target = o->target ? o->target : "native",
              .emit = o->emit ? o->emit : CV_EMIT_DEFAULT};
    int rc = -1;
    if (!b.c)
        cv_diag_error(d, CV_E_WORKER_BAD_OPTIONS, (cv_span){0}, "the cache is off: there are no keys");
    else if (source_init(&b) == 0 && l1_probe(&b) == 0 &&
             (b.have_l1v || !run_frontend || l1_fill(&b) == 0))
        rc = 0;
    k->l1_hit = r.l1.outcome == CV_CACHE_HIT || r.l1.outcome == CV_CACHE_REMOTE_HIT;
    if (rc == 0 && b.have_l1v && (rc = l2_key(&b)) == 0) {
        void *val = NULL;
        size_t len = 0;
        k->have_l2 = true;
        k->l2_hit = cv_cache_get_action(b.c, CV_CACHE_L2, &b.l2_key, &val, &len, NULL, d) == 1;
        free(val);
        k->l2 = b.l2_key;
        b.l2_key = (cv_cache_key){0};
    }
    k->l1 = b.l1_key;
    b.l1_key = (cv_cache_key){0};
    bctx_free(&b);
    return rc;
}
