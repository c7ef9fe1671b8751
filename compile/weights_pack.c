/* The weights image stored once (issue 29).
 *
 * A compiled CPU model holds its split weights image verbatim in up to
 * three files: <name>_weights.o, lib<name>.a and lib<name>.so (the
 * compiler says where: cv_compile_info.weights_in).  The cache stores the
 * image as one content-addressed blob (the weights pack: its digest is the
 * image's, a function of the weights and the packing recipe), and each of
 * those files as a list of parts, [head blob, image blob, tail blob], so a
 * retrain stores its new weights once instead of three times, and its
 * code's parts (the heads and tails) are the blobs already stored.
 *
 * The file list entry of such a file keeps its size, mode and SHA-256 (the
 * artifact's manifest's, computed when it was written) and adds
 *   "parts": [{"blob": hex, "size": n}, ...]
 * A materialised file is checked against that SHA-256 before it is written
 * (its parts may come from a remote). */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "compile/internal.h"

enum { MAX_PARTS = 8 };

static void hex_of(const cv_digest *dg, char hex[CV_DIGEST_HEX + 1])
{
    cv_compile_hex(dg, hex);
}

/* The file's digest as the artifact's manifest records it. */
static int manifest_digest(json_t *files, const char *name, cv_digest *dg)
{
    const char *s = json_string_value(json_object_get(json_object_get(files, name), "sha256"));
    return s ? cv_cache_digest_parse(s, dg) : -1;
}

static json_t *part_json(const cv_digest *dg, size_t len)
{
    char hex[CV_DIGEST_HEX + 1];
    hex_of(dg, hex);
    return json_pack("{s:s, s:I}", "blob", hex, "size", (json_int_t)len);
}

/* One file around the image at v[at, at + len): stores its head and tail,
 * and the image itself unless *image is already set; the file's entry into
 * listed.  0, or -1 when the file is not stored this way (it is then stored
 * whole). */
static int store_split(cv_cache *c, const char *dir, const char *name, json_t *files,
                       uint64_t at, uint64_t len, bool remember, cv_fs_view *first,
                       uint64_t *first_at, cv_digest *image, json_t *listed, cv_diag *d)
{
    char *path = cv_fs_join(dir, name);
    cv_fs_view v = {0};
    cv_digest fdg, head, tail;
    struct stat st;
    int rc = path && manifest_digest(files, name, &fdg) == 0 && stat(path, &st) == 0 &&
                     cv_fs_view_file(path, (size_t)1 << 34, &v, d) == 0 &&
                     at <= v.len && len <= v.len - at
                 ? 0 : -1;
    /* Every copy is the same image: compared, not hashed again. */
    if (rc == 0 && first->data && memcmp(v.data + at, first->data + *first_at, len) != 0)
        rc = -1;
    if (rc == 0 && !first->data) {
        rc = cv_cache_put_blob(c, v.data + at, len, image, d);
        if (rc == 0) {
            *first = v;
            *first_at = at;
            v = (cv_fs_view){0};
        }
    }
    const char *data = first->data && !v.data ? first->data : v.data;
    size_t flen = first->data && !v.data ? first->len : v.len;
    if (rc == 0)
        rc = cv_cache_put_blob(c, data, at, &head, d) == 0 &&
                     cv_cache_put_blob(c, data + at + len, flen - at - len, &tail, d) == 0
                 ? 0 : -1;
    if (rc == 0) {
        json_t *e = json_pack("{s:I, s:i, s:[o,o,o]}", "size", (json_int_t)flen, "mode",
                              (st.st_mode & 0111) ? 0755 : 0644, "parts",
                              part_json(&head, at), part_json(image, len),
                              part_json(&tail, flen - at - len));
        char hex[CV_DIGEST_HEX + 1];
        hex_of(&fdg, hex);
        rc = e && json_object_set_new(e, "sha256", json_string(hex)) == 0 ? 0 : -1;
        if (rc == 0 && remember)
            cv_cache_remember_file(c, path, data, flen, &fdg);
        json_object_set_new(listed, name, e);
    }
    cv_fs_view_free(&v);
    free(path);
    return rc;
}

int cv_compile_weights_store(cv_cache *c, const char *dir, json_t *files,
                             const cv_compile_info *info, bool remember, json_t *listed,
                             cv_diag *d)
{
    cv_fs_view first = {0};
    uint64_t first_at = 0;
    cv_digest image;
    for (int i = 0; c && info && i < info->n_weights_in; i++) {
        const char *name = info->weights_in[i].file;
        if (!json_object_get(files, name))
            continue;   /* written, then removed (the objects without --emit obj) */
        cv_diag scratch;
        cv_diag_init(&scratch);
        if (store_split(c, dir, name, files, info->weights_in[i].at, info->weights_len, remember,
                        &first, &first_at, &image, listed, &scratch) != 0)
            json_object_del(listed, name);  /* stored whole by the caller */
        for (int k = 0; k < scratch.n; k++)
            cv_diag_add(d, CV_SEV_WARNING, scratch.v[k].code, (cv_span){0}, NULL, "%s",
                        scratch.v[k].msg);
        cv_diag_free(&scratch);
    }
    cv_fs_view_free(&first);
    return 0;
}

/* ----------------------------------------------------------- fetching */

/* The parts of entry e: 1 with their blobs (malloc'd) in data[]/len[],
 * 0 when one is missing, -1 malformed.  check_only: only that each is
 * stored (or fetched from the remote). */
static int get_parts(cv_cache *c, json_t *parts, uint64_t size, bool check_only,
                     void **data, size_t *len, int *n, cv_diag *d)
{
    *n = 0;
    size_t np = json_array_size(parts);
    if (!json_is_array(parts) || np == 0 || np > MAX_PARTS)
        return -1;
    uint64_t total = 0;
    for (size_t i = 0; i < np; i++) {
        json_t *p = json_array_get(parts, i), *sz = json_object_get(p, "size");
        const char *hex = json_string_value(json_object_get(p, "blob"));
        cv_digest dg;
        if (!hex || cv_cache_digest_parse(hex, &dg) != 0 || !json_is_integer(sz) ||
            json_integer_value(sz) < 0 || (uint64_t)json_integer_value(sz) > size - total)
            return -1;
        total += (uint64_t)json_integer_value(sz);
        data[i] = NULL;
        len[i] = 0;
        *n = (int)i + 1;
        if (check_only && cv_cache_has_blob(c, &dg))
            continue;
        if (cv_cache_get_blob(c, &dg, &data[i], &len[i], NULL, d) != 1 ||
            len[i] != (size_t)json_integer_value(sz))
            return 0;
        if (check_only) {
            free(data[i]);
            data[i] = NULL;
        }
    }
    return total == size ? 1 : -1;
}

static bool parts_digest_is(void *const *data, const size_t *len, int n, const cv_digest *want)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    int ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL);
    for (int i = 0; ok && i < n; i++)
        ok = EVP_DigestUpdate(x, data[i], len[i]);
    ok = ok && EVP_DigestFinal_ex(x, md, &mdlen) && mdlen == sizeof want->b &&
         memcmp(md, want->b, sizeof md) == 0;
    EVP_MD_CTX_free(x);
    return ok;
}

int cv_compile_weights_fetch(cv_cache *c, const char *dir, const char *fname, json_t *e,
                             const cv_digest *dg, uint64_t size, unsigned mode, char *reason,
                             size_t rsize, cv_diag *d)
{
    char *path = dir ? cv_fs_join(dir, fname) : NULL;
    uint64_t have = 0;
    if (path && cv_cache_file_in_place(c, path, dg, mode, &have) == 1 && have == size) {
        free(path);
        return 1;
    }
    void *data[MAX_PARTS] = {0};
    size_t len[MAX_PARTS] = {0};
    cv_fs_part parts[MAX_PARTS];
    int n = 0;
    int rc = get_parts(c, json_object_get(e, "parts"), size, !dir, data, len, &n, d);
    if (rc == 0)
        snprintf(reason, rsize, "the artifact's %s is no longer stored", fname);
    else if (rc < 0)
        snprintf(reason, rsize, "the stored artifact list is malformed (%s)", fname);
    else if (dir && !parts_digest_is(data, len, n, dg)) {
        snprintf(reason, rsize, "the artifact's %s does not match its stored parts", fname);
        rc = -1;
    }
    for (int i = 0; i < n; i++)
        parts[i] = (cv_fs_part){data[i], len[i]};
    if (rc == 1 && dir)
        rc = path && cv_cache_write_file_parts(c, path, mode, dg, parts, n, d) == 0 ? 1 : -1;
    for (int i = 0; i < n; i++)
        free(data[i]);
    free(path);
    return rc < 0 && !cv_diag_has_errors(d) ? 0 : rc;
}
