/* libFuzzer target: the safetensors reader on arbitrary bytes.  Every
 * tensor it accepts must lie inside the input (or in its own aligned copy),
 * match its dtype x shape, and be found again by name.  The fast header
 * scanner must never accept a header that the general JSON reader refuses,
 * nor read one differently.  An input starting with '{' is a header alone:
 * the file is built around it, so that mutations spend their time in the
 * JSON rather than in matching the length prefix. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/nbytes.h"
#include "common/safetensors.h"
#include "common/safetensors_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { DATA_BYTES = 64 };

static void check_tensor(const cv_safetensors *st, const cv_st_tensor *t, const uint8_t *data,
                         size_t size)
{
    int64_t numel;
    size_t nbytes;
    if (cv_shape_nbytes(t->dtype, t->rank, t->dims, &numel, &nbytes) != 0 || nbytes != t->nbytes)
        abort();
    const uint8_t *p = t->data;
    bool inside = p >= data && p + t->nbytes <= data + size;
    if (t->nbytes && !inside && (uintptr_t)p % cv_dtype_size(t->dtype) != 0)
        abort();
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < t->nbytes; i++)   /* ASan checks every byte is readable */
        sum ^= p[i];
    if (cv_safetensors_find(st, t->name) != t)
        abort();
}

static cv_safetensors *empty_table(size_t hlen)
{
    cv_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->names = malloc(hlen + 1)))
        abort();
    st->names_cap = hlen + 1;
    return st;
}

static bool same_tensor(const cv_st_tensor *a, const cv_st_tensor *b)
{
    return strcmp(a->name, b->name) == 0 && a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0 &&
           a->data == b->data && a->nbytes == b->nbytes;
}

/* The fast scanner against the general reader on the same header. */
static void compare_readers(const uint8_t *b, size_t len)
{
    uint64_t h = 0;
    for (int i = 7; len >= 8 && i >= 0; i--)
        h = h << 8 | b[i];
    if (len < 8 || h > len - 8 || h > CV_ST_MAX_HEADER)
        return;
    cv_diag d;
    cv_diag_init(&d);
    cv_st_ctx quiet = {"fuzz.safetensors", b + 8 + h, len - 8 - h, NULL}, loud = quiet;
    loud.d = &d;
    cv_safetensors *fast = empty_table(h), *json = empty_table(h);
    int rf = cv_st_scan((const char *)b + 8, h, &quiet, fast);
    int rj = cv_st_read_json(&loud, (const char *)b + 8, h, json);
    if (rf == 0) {
        if (rj != 0 || fast->n != json->n)
            abort();
        for (int i = 0; i < fast->n; i++)
            if (!same_tensor(&fast->t[i], &json->t[i]))
                abort();
    }
    cv_safetensors_close(fast);
    cv_safetensors_close(json);
    cv_diag_free(&d);
}

static void read_file(const uint8_t *data, size_t size)
{
    compare_readers(data, size);
    cv_diag d;
    cv_diag_init(&d);
    cv_safetensors *st;
    if (cv_safetensors_open_mem(data, size, "fuzz.safetensors", &st, &d) == 0) {
        for (int i = 0; i < cv_safetensors_count(st); i++)
            check_tensor(st, cv_safetensors_at(st, i), data, size);
        cv_safetensors_close(st);
    } else {
        int code = d.n ? d.v[0].code : 0;
        if (st || !((code >= 1111 && code <= 1113) || code == 9002))
            abort();
    }
    cv_diag_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size || data[0] != '{') {
        read_file(data, size);
        return 0;
    }
    uint8_t *file = malloc(8 + size + DATA_BYTES);   /* owned here */
    if (!file)
        return 0;
    for (int i = 0; i < 8; i++)
        file[i] = (uint8_t)((uint64_t)size >> (8 * i));
    memcpy(file + 8, data, size);
    for (int i = 0; i < DATA_BYTES; i++)
        file[8 + size + i] = (uint8_t)i;
    read_file(file, 8 + size + DATA_BYTES);
    free(file);
    return 0;
}
