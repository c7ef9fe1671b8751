/* --weights-file: the constant storages of a program laid end to end in
 * <name>.weights.bin, each at a 64-byte aligned offset (zero padding), in
 * storage order, so that the file is the same bytes for the same model and
 * the generated code finds each tensor at a constant offset from the base
 * the caller hands to cv_<name>_create_weights. */
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/kernel.h"

#define WEIGHTS_ALIGN 64

static bool in_file(const cv_kstore *s)
{
    return s->kind == CV_KST_CONST && s->first >= 0;
}

int64_t cv_weights_layout(const cv_kprog *p, int64_t *offsets)
{
    int64_t at = 0;
    for (int i = 0; i < p->n_stores; i++) {
        const cv_kstore *s = &p->stores[i];
        if (offsets)
            offsets[i] = -1;
        if (!in_file(s))
            continue;
        at = (at + WEIGHTS_ALIGN - 1) / WEIGHTS_ALIGN * WEIGHTS_ALIGN;
        if (offsets)
            offsets[i] = at;
        at += (int64_t)s->nbytes;
    }
    return at;
}

int cv_weights_image(const cv_kprog *p, char **data, size_t *len)
{
    int64_t *off = malloc(sizeof *off * ((size_t)p->n_stores + 1));   /* owned here */
    int64_t total = off ? cv_weights_layout(p, off) : 0;
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
