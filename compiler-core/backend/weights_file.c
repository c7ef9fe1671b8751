/* The weights image: constant storages laid end to end, each at a 64-byte
 * aligned offset (zero padding), in storage order, so that the image is the
 * same bytes for the same model and the generated code finds each tensor at
 * a constant offset from one base.  Two uses:
 *   --weights-file  every constant, in <name>.weights.bin, the base handed
 *                   to cv_<name>_create_weights
 *   split weights   the constants over CV_INLINE_CONST_MAX bytes, in the
 *                   data object <name>_weights.o (weights_obj.c), the base
 *                   its symbol; the code never sees their values, so its
 *                   cache key does not either (docs/design/compile-and-worker.md) */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/kernel.h"
#include "compiler-core/cuvil.h"

#define WEIGHTS_ALIGN 64

static bool in_file(const cv_kstore *s, size_t over)
{
    return s->kind == CV_KST_CONST && s->first >= 0 && (s->nbytes > over || over == 0);
}

/* over: only storages of more bytes (0: all). */
static int64_t layout(const cv_kprog *p, size_t over, int64_t *offsets)
{
    int64_t at = 0;
    for (int i = 0; i < p->n_stores; i++) {
        const cv_kstore *s = &p->stores[i];
        if (offsets)
            offsets[i] = -1;
        if (!in_file(s, over))
            continue;
        at = (at + WEIGHTS_ALIGN - 1) / WEIGHTS_ALIGN * WEIGHTS_ALIGN;
        if (offsets)
            offsets[i] = at;
        at += (int64_t)s->nbytes;
    }
    return at;
}

static int image(const cv_kprog *p, size_t over, char **data, size_t *len)
{
    int64_t *off = malloc(sizeof *off * ((size_t)p->n_stores + 1));   /* owned here */
    int64_t total = off ? layout(p, over, off) : 0;
    char *buf = off ? calloc(1, (size_t)total + 1) : NULL;           /* handed to *data */
    if (buf)
        for (int i = 0; i < p->n_stores; i++)
            if (off[i] >= 0 && p->stores[i].nbytes && p->stores[i].data)
                memcpy(buf + off[i], p->stores[i].data, p->stores[i].nbytes);
    free(off);
    *data = buf;
    *len = buf ? (size_t)total : 0;
    return buf ? 0 : -1;
}

int64_t cv_weights_layout(const cv_kprog *p, int64_t *offsets)
{
    return layout(p, 0, offsets);
}

int cv_weights_image(const cv_kprog *p, char **data, size_t *len)
{
    return image(p, 0, data, len);
}

bool cv_weights_split_store(const cv_kprog *p, int id)
{
    return p->split_weights && in_file(&p->stores[id], CV_INLINE_CONST_MAX);
}

int64_t cv_weights_split_layout(const cv_kprog *p, int64_t *offsets)
{
    return layout(p, CV_INLINE_CONST_MAX, offsets);
}
