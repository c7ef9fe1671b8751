/* What the cache holds for a compile, as bytes: the deps list, the L1
 * value and the artifact's file list, and moving an artifact directory
 * into the store and back out.  Everything read back from the cache is
 * checked like any outside input (it may come from a remote). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "common/jsonutil.h"
#include "compile/internal.h"

enum { MAX_FILES = 64, MAX_LIST = 1 << 20 };
#define MAX_FILE_BYTES ((size_t)1 << 34)

static json_t *parse(const void *buf, size_t len)
{
    if (len > MAX_LIST)
        return NULL;
    return json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
}

static int get_digest(json_t *obj, const char *key, cv_digest *out)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? cv_cache_digest_parse(s, out) : -1;
}

static void set_digest(json_t *obj, const char *key, const cv_digest *dg)
{
    char hex[CV_DIGEST_HEX + 1];
    cv_compile_hex(dg, hex);
    json_object_set_new(obj, key, json_string(hex));
}

static char *canonical(json_t *v)
{
    char *s = v ? cv_json_canonical(v) : NULL;
    json_decref(v);
    return s;
}

/* ------------------------------------------------------------- L1 value */

char *cv_compile_l1_encode(const cv_compile_l1_value *v)
{
    json_t *o = json_pack("{s:s, s:s}", "format", "cuvil-l1/2", "name", v->name);
    if (!o)
        return NULL;
    set_digest(o, "structure", &v->structure);
    set_digest(o, "weights", &v->weights);
    set_digest(o, "ir_text", &v->ir_blob);
    set_digest(o, "ir_digest", &v->ir);
    set_digest(o, "ir_loc_digest", &v->ir_loc);
    set_digest(o, "fingerprint", &v->fingerprint);
    return canonical(o);
}

int cv_compile_l1_decode(const void *buf, size_t len, cv_compile_l1_value *v)
{
    json_t *o = parse(buf, len);
    const char *fmt = json_string_value(json_object_get(o, "format"));
    const char *name = json_string_value(json_object_get(o, "name"));
    int rc = -1;
    if (fmt && strcmp(fmt, "cuvil-l1/2") == 0 && name && strlen(name) < sizeof v->name &&
        get_digest(o, "structure", &v->structure) == 0 && get_digest(o, "weights", &v->weights) == 0 &&
        get_digest(o, "ir_text", &v->ir_blob) == 0 && get_digest(o, "ir_digest", &v->ir) == 0 &&
        get_digest(o, "ir_loc_digest", &v->ir_loc) == 0 &&
        get_digest(o, "fingerprint", &v->fingerprint) == 0) {
        snprintf(v->name, sizeof v->name, "%s", name);
        rc = 0;
    }
    json_decref(o);
    return rc;
}

/* ----------------------------------------------------------- code value */

char *cv_compile_code_encode(const cv_compile_code_value *v)
{
    json_t *o = json_pack("{s:s, s:I, s:s, s:s}", "format", "cuvil-code/2", "size",
                          (json_int_t)v->size, "triple", v->triple, "cpu", v->cpu);
    if (o)
        set_digest(o, "object", &v->object);
    json_t *so = v->has_so && o ? json_pack("{s:I, s:I, s:I, s:I}", "head_size",
                                            (json_int_t)v->head_size, "tail_size",
                                            (json_int_t)v->tail_size, "image_size",
                                            (json_int_t)v->image_size, "build_id_at",
                                            (json_int_t)v->build_id_at)
                                : NULL;
    if (so) {
        set_digest(so, "head", &v->so_head);
        set_digest(so, "tail", &v->so_tail);
        json_object_set_new(o, "so", so);
    }
    return canonical(o);
}

/* A size field: 0..MAX_FILE_BYTES. */
static int get_size(json_t *obj, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > MAX_FILE_BYTES)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int cv_compile_code_decode(const void *buf, size_t len, cv_compile_code_value *v)
{
    memset(v, 0, sizeof *v);
    json_t *o = parse(buf, len);
    const char *fmt = json_string_value(json_object_get(o, "format"));
    const char *triple = json_string_value(json_object_get(o, "triple"));
    const char *cpu = json_string_value(json_object_get(o, "cpu"));
    int rc = fmt && strcmp(fmt, "cuvil-code/2") == 0 && get_size(o, "size", &v->size) == 0 &&
                     get_digest(o, "object", &v->object) == 0 && triple &&
                     strlen(triple) < sizeof v->triple && cpu && strlen(cpu) < sizeof v->cpu
                 ? 0 : -1;
    if (rc == 0) {
        snprintf(v->triple, sizeof v->triple, "%s", triple);
        snprintf(v->cpu, sizeof v->cpu, "%s", cpu);
    }
    /* The template is optional: an entry without one (or a malformed one)
     * still gives its object, and the library is linked. */
    json_t *so = json_object_get(o, "so");
    v->has_so = rc == 0 && so && get_digest(so, "head", &v->so_head) == 0 &&
                get_digest(so, "tail", &v->so_tail) == 0 &&
                get_size(so, "head_size", &v->head_size) == 0 &&
                get_size(so, "tail_size", &v->tail_size) == 0 &&
                get_size(so, "image_size", &v->image_size) == 0 &&
                get_size(so, "build_id_at", &v->build_id_at) == 0;
    json_decref(o);
    return rc;
}

/* ------------------------------------------------------------ deps list */

char *cv_compile_deps_encode(const cv_compile_deps *x)
{
    return canonical(json_pack("{s:s, s:O}", "format", "cuvil-deps/1", "files", x->files));
}

static bool plain_relative(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 1024 || s[0] == '/')
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20)
            return false;
    return true;
}

int cv_compile_deps_decode(const void *buf, size_t len, cv_compile_deps *x)
{
    *x = (cv_compile_deps){0};
    json_t *o = parse(buf, len);
    json_t *files = json_object_get(o, "files");
    const char *fmt = json_string_value(json_object_get(o, "format"));
    bool ok = fmt && strcmp(fmt, "cuvil-deps/1") == 0 && json_is_array(files) &&
              json_array_size(files) <= 4096;
    size_t i;
    json_t *v;
    json_array_foreach(ok ? files : NULL, i, v)
        ok = ok && json_is_string(v) && plain_relative(json_string_value(v));
    if (ok)
        x->files = json_incref(files);
    json_decref(o);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------ artifacts */

/* A name the artifact may use for one of its files: one plain component. */
static bool plain_file_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '/' || *p == '\\')
            return false;
    return true;
}

/* The artifact's files, stored through the cache at once (or only hashed
 * when c is NULL) and listed with size, mode and digest into files.  A
 * file stored through the cache is remembered as holding these bytes: a
 * hit into the same directory then leaves it alone. */
static int add_files(cv_cache *c, const char *dir, const char *const *names, int n,
                     bool remember, json_t *files, cv_diag *d)
{
    char *paths[MAX_FILES + 1] = {0}; /* owned here */
    cv_digest dg[MAX_FILES + 1];
    uint64_t len[MAX_FILES + 1] = {0};
    unsigned mode[MAX_FILES + 1] = {0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        struct stat st;
        if (!plain_file_name(names[i]))
            rc = cv_diag_error(d, CV_E_BUILD_BAD_ARTIFACT, (cv_span){.file = dir},
                               "the artifact names a file '%s'", names[i]);
        else if (!(paths[i] = cv_fs_join(dir, names[i])))
            rc = cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        else if (stat(paths[i], &st) != 0)
            rc = cv_diag_error(d, CV_E_IO_ERROR, (cv_span){.file = paths[i]}, "cannot read %s: %s",
                               paths[i], strerror(errno));
        else
            mode[i] = (st.st_mode & 0111) ? 0755 : 0644;
    }
    if (rc == 0 && c)
        rc = cv_cache_put_blob_files(c, (const char *const *)paths, n, MAX_FILE_BYTES, remember,
                                     dg, len, d);
    for (int i = 0; rc == 0 && !c && i < n; i++)
        rc = cv_cache_hash_file(paths[i], &dg[i], NULL, &len[i], d);
    for (int i = 0; rc == 0 && i < n; i++) {
        json_t *e = json_pack("{s:I, s:i}", "size", (json_int_t)len[i], "mode", (int)mode[i]);
        set_digest(e, "sha256", &dg[i]);
        json_object_set_new(files, names[i], e);
    }
    for (int i = 0; i < n; i++)
        free(paths[i]);
    return rc ? -1 : 0;
}

static int collect(cv_cache *c, const char *dir, bool remember, const cv_compile_info *info,
                   char **list, size_t *len, char name[128], cv_diag *d)
{
    *list = NULL;
    json_t *m = NULL;
    char *mpath = cv_fs_join(dir, "manifest.json");
    int rc = mpath ? cv_json_read_file(mpath, MAX_LIST, &m, d) : -1;
    free(mpath);
    if (rc)
        return -1;
    const char *nm = json_string_value(json_object_get(m, "name"));
    json_t *files = json_object_get(m, "files");
    json_t *listed = json_object();
    if (!nm || strlen(nm) >= 128 || !json_is_object(files) || json_object_size(files) > MAX_FILES)
        rc = cv_diag_error(d, CV_E_BUILD_BAD_ARTIFACT, (cv_span){.file = dir},
                           "%s/manifest.json is not an artifact manifest", dir);
    const char *names[MAX_FILES + 1];
    int n = 0;
    const char *key;
    json_t *v;
    /* The files holding the weights image first, as parts around it
     * (weights_pack.c); the others whole. */
    if (rc == 0 && c && info)
        cv_compile_weights_store(c, dir, files, info, remember, listed, d);
    json_object_foreach(rc == 0 ? files : NULL, key, v)
        if (!json_object_get(listed, key))
            names[n++] = key;
    names[n++] = "manifest.json";
    if (rc == 0)
        rc = add_files(c, dir, names, n, remember, listed, d);
    if (rc == 0) {
        snprintf(name, 128, "%s", nm);
        *list = canonical(json_pack("{s:s, s:s, s:O}", "format", "cuvil-artifact-files/1",
                                    "name", nm, "files", listed));
        rc = *list ? 0 : cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        *len = *list ? strlen(*list) : 0;
    }
    json_decref(listed);
    json_decref(m);
    return rc;
}

int cv_compile_artifact_store(cv_cache *c, const char *dir, bool remember,
                              const cv_compile_info *info, char **list, size_t *len,
                              char name[128], cv_diag *d)
{
    return collect(c, dir, remember, info, list, len, name, d);
}

int cv_compile_artifact_list(const char *dir, char **list, size_t *len, char name[128], cv_diag *d)
{
    return collect(NULL, dir, false, NULL, list, len, name, d);
}

static int write_one(cv_cache *c, const char *dir, const char *fname, json_t *e, char *reason,
                     size_t rsize, cv_diag *d)
{
    cv_digest dg;
    json_t *size = json_object_get(e, "size"), *mode = json_object_get(e, "mode");
    if (!plain_file_name(fname) || get_digest(e, "sha256", &dg) || !json_is_integer(size) ||
        !json_is_integer(mode) || (json_integer_value(mode) != 0644 &&
                                   json_integer_value(mode) != 0755)) {
        snprintf(reason, rsize, "the stored artifact list is malformed");
        return 0;
    }
    if (json_object_get(e, "parts"))
        return cv_compile_weights_fetch(c, dir, fname, e, &dg, (uint64_t)json_integer_value(size),
                                        (unsigned)json_integer_value(mode), reason, rsize, d);
    if (!dir && cv_cache_has_blob(c, &dg))
        return 1;
    uint64_t got = 0;
    int rc;
    if (dir) {
        char *path = cv_fs_join(dir, fname);
        rc = path ? cv_cache_get_blob_file(c, &dg, path, (unsigned)json_integer_value(mode), &got,
                                           NULL, d)
                  : -1;
        free(path);
    } else { /* not stored here: the remote may have it (and it is written back) */
        void *data = NULL;
        size_t len = 0;
        rc = cv_cache_get_blob(c, &dg, &data, &len, NULL, d);
        got = len;
        free(data);
    }
    if (rc == 0 || (rc == 1 && (json_int_t)got != json_integer_value(size))) {
        snprintf(reason, rsize, "the artifact's %s is no longer stored", fname);
        return 0;
    }
    return rc;
}

/* dir NULL: check that the blobs are stored, write nothing. */
static int fetch_all(cv_cache *c, const void *list, size_t len, const char *dir, char name[128],
                     char *reason, size_t rsize, cv_diag *d)
{
    json_t *o = parse(list, len);
    json_t *files = json_object_get(o, "files");
    const char *fmt = json_string_value(json_object_get(o, "format"));
    const char *nm = json_string_value(json_object_get(o, "name"));
    int rc = 1;
    if (!fmt || strcmp(fmt, "cuvil-artifact-files/1") != 0 || !nm || strlen(nm) >= 128 ||
        !json_is_object(files) || json_object_size(files) > MAX_FILES ||
        !json_object_get(files, "manifest.json")) {
        snprintf(reason, rsize, "the stored artifact list is malformed");
        rc = 0;
    } else if (dir && cv_fs_mkdirs(dir, 0755) != 0) {
        rc = cv_diag_error(d, CV_E_IO_ERROR, (cv_span){.file = dir}, "cannot create %s: %s", dir,
                           strerror(errno));
    }
    const char *key;
    json_t *v;
    json_object_foreach(rc == 1 ? files : NULL, key, v)
        if (rc == 1 && strcmp(key, "manifest.json") != 0)
            rc = write_one(c, dir, key, v, reason, rsize, d);
    /* The manifest last: a directory with one is complete. */
    if (rc == 1)
        rc = write_one(c, dir, "manifest.json", json_object_get(files, "manifest.json"), reason,
                       rsize, d);
    if (rc == 1)
        snprintf(name, 128, "%s", nm);
    json_decref(o);
    return rc;
}

int cv_compile_artifact_materialise(cv_cache *c, const void *list, size_t len, const char *dir,
                               char name[128], char *reason, size_t rsize, cv_diag *d)
{
    return fetch_all(c, list, len, dir, name, reason, rsize, d);
}

int cv_compile_artifact_check(cv_cache *c, const void *list, size_t len, char name[128],
                         char *reason, size_t rsize, cv_diag *d)
{
    return fetch_all(c, list, len, NULL, name, reason, rsize, d);
}
