/* The three keys of a compile (deps, L1, L2), the IR digest and the facts
 * about the compiler and the target that enter them.  Every field is
 * content, a name relative to the model, or a property of the compiler:
 * never an absolute path, a time or a host name. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "cv_version.h"
#include "compile/internal.h"

void cv_compile_hex(const cv_digest *dg, char out[CV_DIGEST_HEX + 1])
{
    cv_cache_digest_hex(dg, out);
}

/* ---------------------------------------------------------- compiler id */

static pthread_mutex_t id_mu = PTHREAD_MUTEX_INITIALIZER;
static char compiler_id[200];

/* Through the cache's stat memo when it answers; a memo that fails (a busy
 * index) must not change the compiler id, so then the file is hashed. */
static int digest_file(cv_cache *c, const char *path, cv_digest *dg)
{
    cv_diag scratch;
    cv_diag_init(&scratch);
    int rc = c ? cv_cache_file_digest(c, path, dg, &scratch) : -1;
    if (rc != 0)
        rc = cv_cache_hash_file(path, dg, NULL, NULL, &scratch);
    cv_diag_free(&scratch);
    return rc;
}

/* The image's own path (the executable, or the Python extension that links
 * compiler-core): the stat memo knows files by path, and /proc/self/exe
 * would have it hash the whole binary at every start. */
static char *image_path(void)
{
    char path[PATH_MAX];
    return cv_self_image(path, sizeof path) == 0 ? strdup(path) : NULL;
}

/* The LLVM backend plugin, where compiler-core's loader finds it; NULL when
 * none is found. */
static char *plugin_path(void)
{
    char path[PATH_MAX + 64];
    return cv_backend_plugin_path(path, sizeof path) == 0 ? strdup(path) : NULL;
}

const char *cv_build_compiler_id(cv_cache *c)
{
    pthread_mutex_lock(&id_mu);
    if (!compiler_id[0]) {
        const char *commit = CV_GIT_COMMIT;
        size_t n = strlen(commit);
        bool dirty = n >= 6 && strcmp(commit + n - 6, "+dirty") == 0;
        int at = snprintf(compiler_id, sizeof compiler_id, "cuvil-%s+%s", CV_VERSION, commit);
        /* A modified tree: which code this is, only the binaries say (the
         * image holding the compiler and the LLVM backend plugin it loads). */
        char *files[2] = {dirty ? image_path() : NULL, dirty ? plugin_path() : NULL};
        for (int i = 0; dirty && at > 0 && (size_t)at < sizeof compiler_id && i < 2; i++) {
            cv_digest dg;
            char hex[CV_DIGEST_HEX + 1];
            if (!files[i] || digest_file(c, files[i], &dg) != 0)
                continue;
            cv_compile_hex(&dg, hex);
            at += snprintf(compiler_id + at, sizeof compiler_id - (size_t)at, ":%.16s", hex);
        }
        free(files[0]);
        free(files[1]);
    }
    pthread_mutex_unlock(&id_mu);
    return compiler_id;
}

/* ----------------------------------------------------------------- deps */

void cv_compile_deps_free(cv_compile_deps *x)
{
    json_decref(x->files);
    free(x->dg);
    *x = (cv_compile_deps){0};
}

int cv_compile_deps_digest(cv_cache *c, const char *model_dir, cv_compile_deps *x, char *reason,
                      size_t rsize)
{
    size_t n = json_array_size(x->files);
    free(x->dg);
    x->n = 0;
    x->dg = calloc(n ? n : 1, sizeof *x->dg);
    if (!x->dg)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *rel = json_string_value(json_array_get(x->files, i));
        char *path = NULL;
        cv_diag scratch;
        cv_diag_init(&scratch);
        int rc = rel ? cv_fs_resolve_inside(model_dir, rel, &path, &scratch) : -1;
        if (rc == 0)
            rc = cv_cache_file_digest(c, path, &x->dg[i].digest, &scratch);
        free(path);
        cv_diag_free(&scratch);
        if (rc) {
            snprintf(reason, rsize, "a file the model reads is missing or unreadable: %s",
                     rel ? rel : "?");
            return 0;
        }
        x->dg[i].name = rel;
        x->n++;
    }
    return 1;
}

/* ----------------------------------------------------------------- keys */

static void source_fields(cv_cache_keyb *kb, const cv_compile_source *s)
{
    cv_cache_keyb_str(kb, "frontend", s->fe->name);
    cv_cache_keyb_str(kb, "frontend_version", s->fe->version);
    cv_cache_keyb_str(kb, "options", s->options);
    cv_cache_keyb_str(kb, "source_name", s->name);
    cv_cache_keyb_digest(kb, "source", &s->digest);
}

int cv_compile_deps_key(const cv_compile_source *s, cv_cache_key *out, cv_diag *d)
{
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-l1-deps");
    if (kb)
        source_fields(kb, s);
    return cv_cache_keyb_finish(kb, out, d);
}

/* DESIGN.md's L1 key plus the model's base name (DSL locations carry it). */
int cv_compile_l1_key(const cv_compile_source *s, const cv_compile_deps *x, cv_cache_key *out, cv_diag *d)
{
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-l1");
    if (kb) {
        source_fields(kb, s);
        for (int i = 0; i < x->n; i++) {
            char name[CV_CACHE_HEX_LEN + 200];
            snprintf(name, sizeof name, "weights:%.120s", x->dg[i].name);
            cv_cache_keyb_digest(kb, name, &x->dg[i].digest);
        }
    }
    return cv_cache_keyb_finish(kb, out, d);
}

static const char *emit_text(unsigned emit, char *buf, size_t size)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        {CV_EMIT_A, "a"}, {CV_EMIT_C, "c"}, {CV_EMIT_CUIR, "cuir"}, {CV_EMIT_H, "h"},
        {CV_EMIT_LLVM, "llvm"}, {CV_EMIT_OBJ, "obj"}, {CV_EMIT_SO, "so"},
        {CV_EMIT_WEIGHTS, "weights"},
    };
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (emit & names[i].bit)
            at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "," : "", names[i].name);
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts a JSON array of strings in place. */
int cv_compile_sort_strings(json_t *arr)
{
    size_t n = json_array_size(arr);
    const char **v = calloc(n ? n : 1, sizeof *v);
    json_t *sorted = json_array();
    int rc = v && sorted ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i));
    if (rc == 0)
        qsort(v, n, sizeof *v, cmp_str);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = json_array_append_new(sorted, json_string(v[i]));
    if (rc == 0)
        rc = json_array_clear(arr) || json_array_extend(arr, sorted) ? -1 : 0;
    free(v);
    json_decref(sorted);
    return rc;
}

/* One "weight:<param>" field per entry of the weights list, by name (a
 * list read back from the cache and one just made iterate alike). */
static void weight_fields(cv_cache_keyb *kb, json_t *weights)
{
    size_t n = json_object_size(weights), k = 0;
    const char **names = calloc(n ? n : 1, sizeof *names);
    const char *name;
    json_t *v;
    json_object_foreach(names ? weights : NULL, name, v)
        names[k++] = name;
    if (names)
        qsort(names, k, sizeof *names, cmp_str);
    for (size_t i = 0; i < k; i++) {
        char field[300];
        cv_digest dg;
        snprintf(field, sizeof field, "weight:%.200s", names[i]);
        for (char *c = field; *c; c++)     /* a name from the model file: any bytes */
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        if (cv_cache_digest_parse(json_string_value(json_object_get(weights, names[i])), &dg) == 0)
            cv_cache_keyb_digest(kb, field, &dg);
    }
    free(names);
}

/* DESIGN.md's L2 key plus the target's -t name (the artifact's manifest
 * records it) and the emitted file set. */
int cv_compile_l2_key(cv_cache *c, const cv_compile_l2_in *in, cv_cache_key *out, cv_diag *d)
{
    char emit[64];
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-l2");
    if (kb) {
        cv_cache_keyb_digest(kb, "ir_digest", &in->ir);
        /* Implied by the IR digest; there for explain: a retrain differs in
         * weight fields only (cv_build_explain_weights). */
        cv_cache_keyb_digest(kb, "structure", &in->structure);
        weight_fields(kb, in->weights);
        cv_cache_keyb_str(kb, "target", in->target);
        cv_cache_keyb_str(kb, "target_triple", in->desc->triple);
        cv_cache_keyb_str(kb, "target_features", in->desc->features);
        cv_cache_keyb_str(kb, "precision", cv_precision_name(in->o->precision));
        char calib[65] = "none";    /* without data the compile fails (CV5105) */
        if (in->o->precision == CV_PRECISION_INT8) {
            if (in->o->quant.calibration && cv_calib_digest(&in->o->quant, calib, d)) {
                cv_cache_keyb_free(kb);
                return -1;
            }
            cv_cache_keyb_str(kb, "calibration", calib);
        }
        cv_cache_keyb_str(kb, "opt_level", cv_opt_level_name(in->o->opt_level));
        cv_cache_keyb_bool(kb, "debug", in->o->debug);
        if (in->o->no_blocked_layout)   /* absent by default: older keys stay valid */
            cv_cache_keyb_bool(kb, "no_blocked_layout", true);
        if (in->o->name)                /* --name: the files and symbols it names */
            cv_cache_keyb_str(kb, "artifact_name", in->o->name);
        cv_cache_keyb_str(kb, "emit", emit_text(in->emit, emit, sizeof emit));
        cv_cache_keyb_str(kb, "compiler_build_id", cv_build_compiler_id(c));
        cv_cache_keyb_str(kb, "llvm_version", cv_compile_llvm_version());
    }
    return cv_cache_keyb_finish(kb, out, d);
}

/* The generated code's key: its source (compiler-core's code_source.c: the
 * program after the passes with the large constants blank, the small ones
 * that reach code, the kernels' layout) and what turns it into an object.
 * Precision, calibration and layout options need no field: whatever of
 * them reaches the code is in the source. */
int cv_compile_code_key(cv_cache *c, const cv_digest *source, const char *target,
                   const cv_compile_target *desc, cv_opt_level opt, cv_cache_key *out, cv_diag *d)
{
    cv_cache_keyb *kb = cv_cache_keyb_new("cuvil-code");
    if (kb) {
        cv_cache_keyb_digest(kb, "source", source);
        cv_cache_keyb_str(kb, "target", target);
        cv_cache_keyb_str(kb, "target_triple", desc->triple);
        cv_cache_keyb_str(kb, "target_features", desc->features);
        cv_cache_keyb_str(kb, "opt_level", cv_opt_level_name(opt));
        cv_cache_keyb_str(kb, "compiler_build_id", cv_build_compiler_id(c));
        cv_cache_keyb_str(kb, "llvm_version", cv_compile_llvm_version());
    }
    return cv_cache_keyb_finish(kb, out, d);
}

void cv_compile_ir_digest(const char *text, size_t len, const cv_compile_deps *x, cv_digest *out)
{
    cv_cache_hasher *h = cv_cache_hasher_new();
    if (!h) {
        memset(out, 0, sizeof *out);
        return;
    }
    static const char tag[] = "cuvil-ir/1";
    uint8_t n[8];
    for (int i = 0; i < 8; i++)
        n[i] = (uint8_t)((uint64_t)len >> (8 * i));
    cv_cache_hasher_update(h, tag, sizeof tag);
    cv_cache_hasher_update(h, n, sizeof n);
    cv_cache_hasher_update(h, text, len);
    for (int i = 0; x && i < x->n; i++) {
        cv_cache_hasher_update(h, x->dg[i].name, strlen(x->dg[i].name) + 1);
        cv_cache_hasher_update(h, x->dg[i].digest.b, sizeof x->dg[i].digest.b);
    }
    cv_cache_hasher_final(h, out);
    cv_cache_hasher_free(h);
}
