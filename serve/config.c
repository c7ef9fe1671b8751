/* A model's config.yaml: the batching and pool settings, every value
 * checked (the repository may be written by anyone who can push). */
#include "serve/serve_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "common/yamldoc.h"

static const sv_config defaults = {.max_batch_size = 0, .max_queue_delay_us = 0,
                                   .instances = 1, .max_queue_size = 128};

static int bad(cv_diag *d, const cv_yaml_doc *doc, const json_t *obj, const char *key,
               const char *fmt, const char *what)
{
    cv_span sp = {.file = doc->file};
    if (key)
        cv_yaml_member_span(doc, obj, key, NULL, &sp);
    else
        cv_yaml_span(doc, obj, &sp);
    return cv_diag_fail(d, CV_E_SERVE_BAD_CONFIG, sp, fmt, what);
}

/* An integer member in [lo, hi]. */
static int int_in(cv_diag *d, const cv_yaml_doc *doc, const json_t *obj, const char *key,
                  int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char what[160];
        snprintf(what, sizeof what, "%s takes an integer from %lld to %lld", key, (long long)lo,
                 (long long)hi);
        return bad(d, doc, obj, key, "%s", what);
    }
    *out = json_integer_value(v);
    return 0;
}

static int read_preferred(cv_diag *d, const cv_yaml_doc *doc, const json_t *root, sv_config *c)
{
    const json_t *arr = json_object_get(root, "preferred_batch_sizes");
    if (!json_is_array(arr) || json_array_size(arr) > SV_MAX_PREFERRED)
        return bad(d, doc, root, "preferred_batch_sizes", "%s",
                   "preferred_batch_sizes takes a list of at most 16 batch sizes");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > c->max_batch_size) {
            cv_span sp = {.file = doc->file};
            cv_yaml_item_span(doc, arr, i, &sp);
            return cv_diag_fail(d, CV_E_SERVE_BAD_CONFIG, sp, "a preferred batch size is an "
                                "integer from 1 to max_batch_size (%d)", c->max_batch_size);
        }
        c->preferred[c->n_preferred++] = (int)json_integer_value(v);
    }
    return 0;
}

static int read_doc(const cv_yaml_doc *doc, sv_config *c, cv_diag *d)
{
    const json_t *root = doc->root;
    if (json_is_null(root))
        return 0;
    if (!json_is_object(root))
        return bad(d, doc, root, NULL, "%s", "config.yaml holds a mapping (max_batch_size: 8 ...)");
    const char *key;
    const json_t *v;
    int64_t x;
    json_object_foreach((json_t *)root, key, v) {
        if (strcmp(key, "max_batch_size") == 0) {
            if (int_in(d, doc, root, key, 0, SV_MAX_BATCH, &x))
                return -1;
            c->max_batch_size = (int)x;
        } else if (strcmp(key, "max_queue_delay_us") == 0) {
            if (int_in(d, doc, root, key, 0, 10000000, &x))
                return -1;
            c->max_queue_delay_us = x;
        } else if (strcmp(key, "instances") == 0) {
            if (int_in(d, doc, root, key, 1, SV_MAX_INSTANCES, &x))
                return -1;
            c->instances = (int)x;
        } else if (strcmp(key, "max_queue_size") == 0) {
            if (int_in(d, doc, root, key, 1, 65536, &x))
                return -1;
            c->max_queue_size = (int)x;
        } else if (strcmp(key, "pad_dynamic_axes") == 0) {
            if (!json_is_boolean(v))
                return bad(d, doc, root, key, "%s", "pad_dynamic_axes takes true or false");
            c->pad = json_is_true(v);
        } else if (strcmp(key, "pad_value") == 0) {
            if (!json_is_number(v) || !(json_number_value(v) >= -3.4e38 &&
                                        json_number_value(v) <= 3.4e38))
                return bad(d, doc, root, key, "%s", "pad_value takes a number");
            c->pad_value = json_number_value(v);
        } else if (strcmp(key, "preferred_batch_sizes") != 0) {
            return bad(d, doc, root, key, "unknown setting '%s' (max_batch_size, "
                       "max_queue_delay_us, instances, max_queue_size, preferred_batch_sizes, "
                       "pad_dynamic_axes, pad_value)", key);
        }
    }
    /* After max_batch_size, whatever the key order. */
    if (json_object_get(root, "preferred_batch_sizes"))
        return read_preferred(d, doc, root, c);
    return 0;
}

int sv_config_load(const char *model_dir, sv_config *c, cv_diag *d)
{
    *c = defaults;
    char *path = cv_fs_join(model_dir, "config.yaml");
    if (!path)
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        free(path);
        return 0;
    }
    cv_yaml_doc *docs = NULL;
    int n = 0;
    int rc = cv_yaml_load_file(path, &docs, &n, d);
    if (rc == 0 && n > 1)
        rc = cv_diag_fail(d, CV_E_SERVE_BAD_CONFIG, (cv_span){.file = path, .line = docs[1].line},
                          "config.yaml holds one document");
    if (rc == 0 && n == 1)
        rc = read_doc(&docs[0], c, d);
    if (rc != 0)
        cv_diag_error(d, CV_E_SERVE_BAD_CONFIG, (cv_span){.file = path},
                      "the model's config is not valid");
    cv_yaml_free(docs, n);
    free(path);
    return rc;
}
