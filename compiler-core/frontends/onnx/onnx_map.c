/* A string-keyed hash map for ONNX value names and dim_params. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void *onnx_map_get(const onnx_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash_str(key) & mask; m->keys[i]; i = (i + 1) & mask)
        if (strcmp(m->keys[i], key) == 0)
            return m->vals[i];
    return NULL;
}

static int map_grow(onnx_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const char **keys = calloc(ncap, sizeof *keys);
    void **vals = calloc(ncap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash_str(m->keys[i]) & (ncap - 1);
        while (keys[j])
            j = (j + 1) & (ncap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return 0;
}

int onnx_map_put(onnx_map *m, const char *key, void *val)
{
    if ((m->count + 1) * 2 > m->cap && map_grow(m) < 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = hash_str(key) & mask;
    for (; m->keys[i]; i = (i + 1) & mask)
        if (strcmp(m->keys[i], key) == 0)
            return 0;
    m->keys[i] = key;
    m->vals[i] = val;
    m->count++;
    return 1;
}

void onnx_map_free(onnx_map *m)
{
    free(m->keys);
    free(m->vals);
    *m = (onnx_map){0};
}
