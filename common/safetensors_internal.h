/* Internal to common/: what the safetensors reader (safetensors.c) shares
 * with its fast header scanner (safetensors_scan.c). */
#ifndef CV_SAFETENSORS_INTERNAL_H
#define CV_SAFETENSORS_INTERNAL_H

#include <stdbool.h>

#include "common/safetensors.h"

struct cv_safetensors {
    void *map;              /* owned mapping, or NULL (empty file, or bytes owned by the caller) */
    size_t map_len;
    cv_st_tensor *t;        /* owned array of n (cap allocated) */
    int n, cap;
    char *names;            /* owned: every t[i].name, NUL-terminated, back to back */
    size_t names_len, names_cap;
    void **copies;          /* owned: aligned copies of misaligned tensors (NULL where none) */
};

typedef struct cv_st_ctx {
    const char *file;
    const unsigned char *data;  /* start of the byte buffer after the header */
    size_t data_len;
    cv_diag *d;                 /* NULL: report nothing (the fast scanner's checks) */
} cv_st_ctx;

cv_dtype cv_st_dtype_of(const char *s, size_t n);
/* A new tensor slot named s[0..n), the name copied into st->names (sized
 * for every name of the header up front, so names never move); NULL when
 * out of memory. */
cv_st_tensor *cv_st_push(cv_safetensors *st, const char *s, size_t n);
/* Orders the tensors by name (bytewise); false if two share a name. */
bool cv_st_sort(cv_safetensors *st);
/* Checks data_offsets [begin, end) of a tensor whose dtype and shape are set
 * against the data and its dtype x shape, then points t->data at its bytes.
 * Errors: CV1113 (reported unless c->d is NULL). */
int cv_st_place(const cv_st_ctx *c, const char *name, int64_t begin, int64_t end, cv_st_tensor *t);

/* Reads any header through the general JSON reader (jansson), reporting
 * CV1111-CV1113; st->names must have room for hlen + 1 bytes. */
int cv_st_read_json(const cv_st_ctx *c, const char *h, size_t hlen, cv_safetensors *st);
/* Reads a header in the common form, {"name": {"dtype", "shape",
 * "data_offsets"}, ...} with at most a flat "__metadata__" of strings,
 * plain ASCII strings and non-negative integers, into st.  Returns 0, or 1
 * (st left for the caller to empty) for anything else, valid or not, so that
 * the general JSON reader decides and reports: the scanner never accepts a
 * header the general reader would refuse, nor reads one differently. */
int cv_st_scan(const char *h, size_t len, const cv_st_ctx *c, cv_safetensors *st);

#endif
