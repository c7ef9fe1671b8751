/* The files an ONNX model reads besides itself: the `location` of every
 * tensor stored as external data.  They enter the L1 key, so they must be
 * known before the front end runs; a walk over the protobuf wire format
 * finds them without decoding (or copying) any tensor data.
 *
 * Messages visited (field numbers from onnx.proto):
 *   ModelProto      graph=7 training_info=20 functions=25
 *   TrainingInfo    initialization=1 algorithm=2
 *   FunctionProto   node=7
 *   GraphProto      node=1 initializer=5 sparse_initializer=15
 *   NodeProto       attribute=5
 *   AttributeProto  t=5 g=6 tensors=10 graphs=11 sparse_tensor=22 sparse_tensors=23
 *   SparseTensor    values=1 indices=2
 *   TensorProto     external_data=13 -> StringStringEntry key=1 value=2 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile/internal.h"

enum { MAX_DEPTH = 64, MAX_LOCATION = 4096 };

typedef enum { M_MODEL, M_TRAINING, M_FUNCTION, M_GRAPH, M_NODE, M_ATTR, M_SPARSE, M_TENSOR,
               M_ENTRY } msg_kind;

typedef struct span {
    const uint8_t *p, *end;
} span;

static int varint(span *s, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (s->p >= s->end)
            return -1;
        uint8_t b = *s->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* The next field: its number, and for length-delimited ones the body. */
static int next_field(span *s, uint32_t *field, span *body)
{
    uint64_t tag, n;
    if (varint(s, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
        return -1;
    *field = (uint32_t)(tag >> 3);
    body->p = body->end = NULL;
    switch (tag & 7) {
    case 0: return varint(s, &n);
    case 1: if (s->end - s->p < 8) return -1; s->p += 8; return 0;
    case 5: if (s->end - s->p < 4) return -1; s->p += 4; return 0;
    case 2:
        if (varint(s, &n) || n > (uint64_t)(s->end - s->p))
            return -1;
        body->p = s->p;
        body->end = s->p + n;
        s->p += n;
        return 1;
    default: return -1;      /* groups are not used by ONNX */
    }
}

/* The sub-message kind of field f inside a message of kind k, or -1. */
static int child_kind(msg_kind k, uint32_t f)
{
    switch (k) {
    case M_MODEL: return f == 7 ? M_GRAPH : f == 20 ? M_TRAINING : f == 25 ? M_FUNCTION : -1;
    case M_TRAINING: return f == 1 || f == 2 ? M_GRAPH : -1;
    case M_FUNCTION: return f == 7 ? M_NODE : -1;
    case M_GRAPH: return f == 1 ? M_NODE : f == 5 ? M_TENSOR : f == 15 ? M_SPARSE : -1;
    case M_NODE: return f == 5 ? M_ATTR : -1;
    case M_ATTR:
        return f == 5 || f == 10 ? M_TENSOR : f == 6 || f == 11 ? M_GRAPH
             : f == 22 || f == 23 ? M_SPARSE : -1;
    case M_SPARSE: return f == 1 || f == 2 ? M_TENSOR : -1;
    case M_TENSOR: return f == 13 ? M_ENTRY : -1;
    default: return -1;
    }
}

static bool listed(json_t *files, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v)
        if (strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
}

static int entry(span s, json_t *files)
{
    span key = {0}, value = {0}, body;
    uint32_t f;
    while (s.p < s.end) {
        int rc = next_field(&s, &f, &body);
        if (rc < 0)
            return -1;
        if (rc == 1 && f == 1)
            key = body;
        else if (rc == 1 && f == 2)
            value = body;
    }
    size_t kn = (size_t)(key.end - key.p), vn = (size_t)(value.end - value.p);
    if (kn != 8 || memcmp(key.p, "location", 8) != 0 || vn == 0 || vn > MAX_LOCATION ||
        memchr(value.p, 0, vn))
        return 0;
    char loc[MAX_LOCATION + 1];
    memcpy(loc, value.p, vn);
    loc[vn] = 0;
    if (listed(files, loc))
        return 0;
    return json_array_append_new(files, json_string(loc)) == 0 ? 0 : -1;
}

static int walk(span s, msg_kind k, int depth, json_t *files)
{
    if (depth > MAX_DEPTH)
        return -1;
    if (k == M_ENTRY)
        return entry(s, files);
    while (s.p < s.end) {
        uint32_t f;
        span body;
        int rc = next_field(&s, &f, &body);
        if (rc < 0)
            return -1;
        int ck = rc == 1 ? child_kind(k, f) : -1;
        if (ck >= 0 && walk(body, (msg_kind)ck, depth + 1, files) != 0)
            return -1;
    }
    return 0;
}

int cv_compile_onnx_external_files(const void *buf, size_t len, json_t *files)
{
    span s = {buf, (const uint8_t *)buf + len};
    return walk(s, M_MODEL, 0, files);
}

/* External data named by an ONNX file (mapped, not read). */
int cv_compile_onnx_file_deps(const char *path, json_t *files)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    int rc = cv_compile_onnx_external_files(p, (size_t)st.st_size, files);
    munmap(p, (size_t)st.st_size);
    return rc;
}
