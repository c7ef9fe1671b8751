/* A wire-format walk over a protobuf buffer before protobuf-c unpacks it.
 * protobuf-c only says "failed"; this names what is wrong (truncated field,
 * wrong wire type, nesting) and where, and bounds nesting so that a hostile
 * file cannot exhaust the stack of the recursive unpacker.  It decodes no
 * values: the schema comes from protobuf-c's generated descriptors. */
#include <stdio.h>
#include <string.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct wire_frame {
    const ProtobufCMessageDescriptor *desc;
    size_t end;
    const char *field;      /* the field of the parent that holds this message */
} wire_frame;

typedef struct wire_walk {
    const uint8_t *p;
    size_t pos;
    wire_frame stack[ONNX_MAX_NESTING];
    int depth;
    const char *file;
    cv_diag *d;
} wire_walk;

/* "ModelProto>graph>node>attribute" for diagnostics. */
static void walk_path(const wire_walk *w, const char *leaf, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "%s", w->stack[0].desc->short_name);
    for (int i = 1; i <= w->depth && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, ">%s", w->stack[i].field);
    if (leaf && n < size)
        snprintf(buf + n, size - n, ">%s", leaf);
}

static int wire_err(wire_walk *w, int code, const char *leaf, const char *fmt, size_t off)
{
    char path[256];
    walk_path(w, leaf, path, sizeof path);
    cv_span sp = {.file = w->file};
    cv_diag_add(w->d, CV_SEV_ERROR, code, sp, path, fmt, path, off);
    return -1;
}

static int read_varint(wire_walk *w, size_t end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (w->pos >= end)
            return wire_err(w, CV_E_ONNX_TRUNCATED, NULL,
                            "%s: protobuf varint truncated at byte %zu (truncated file?)", w->pos);
        uint8_t b = w->p[w->pos++];
        if (shift == 63 && b > 1)
            break;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return wire_err(w, CV_E_ONNX_BAD_PROTOBUF, NULL, "%s: malformed protobuf varint at byte %zu",
                    w->pos);
}

/* The wire type a field of this type uses when not packed. */
static int expected_wire_type(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_DOUBLE:
        return 1;
    case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FLOAT:
        return 5;
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE:
        return 2;
    default:
        return 0;
    }
}

static int skip_bytes(wire_walk *w, size_t end, uint64_t n, const char *leaf)
{
    if (n > end - w->pos)
        return wire_err(w, CV_E_ONNX_TRUNCATED, leaf,
                        "%s: protobuf field runs past the end of its message at byte %zu "
                        "(truncated file?)", w->pos);
    w->pos += (size_t)n;
    return 0;
}

/* One field at w->pos inside the top frame; may push a frame. */
static int walk_field(wire_walk *w)
{
    wire_frame *fr = &w->stack[w->depth];
    size_t start = w->pos;
    uint64_t tag;
    if (read_varint(w, fr->end, &tag) < 0)
        return -1;
    uint64_t num = tag >> 3;
    int wt = (int)(tag & 7);
    if (num == 0 || num > 536870911u)
        return wire_err(w, CV_E_ONNX_BAD_PROTOBUF, NULL,
                        "%s: invalid protobuf field number at byte %zu", start);
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(fr->desc, (unsigned)num);
    const char *leaf = f ? f->name : NULL;
    if (f) {
        int want = expected_wire_type(f);
        bool packed_ok = f->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wt == 2;
        if (wt != want && !packed_ok)
            return wire_err(w, CV_E_ONNX_WIRE_TYPE, leaf,
                            "%s: protobuf field has the wrong wire type at byte %zu", start);
    }
    uint64_t v;
    switch (wt) {
    case 0:
        return read_varint(w, fr->end, &v);
    case 1:
        return skip_bytes(w, fr->end, 8, leaf);
    case 5:
        return skip_bytes(w, fr->end, 4, leaf);
    case 2:
        if (read_varint(w, fr->end, &v) < 0)
            return -1;
        if (v > fr->end - w->pos)
            return skip_bytes(w, fr->end, v, leaf);
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (w->depth + 1 >= ONNX_MAX_NESTING)
                return wire_err(w, CV_E_ONNX_NESTING, leaf,
                                "%s: protobuf messages nested too deep at byte %zu", start);
            w->depth++;
            w->stack[w->depth] = (wire_frame){(const ProtobufCMessageDescriptor *)f->descriptor,
                                              w->pos + (size_t)v, f->name};
            return 0;
        }
        return skip_bytes(w, fr->end, v, leaf);
    default:
        /* Groups (3, 4) are not used by onnx.proto; 6 and 7 do not exist. */
        return wire_err(w, CV_E_ONNX_WIRE_TYPE, leaf,
                        "%s: unsupported protobuf wire type (group or invalid) at byte %zu", start);
    }
}

int onnx_wire_check(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                    const char *file, cv_diag *d)
{
    wire_walk w = {.p = buf, .file = file, .d = d};
    w.stack[0] = (wire_frame){desc, len, NULL};
    for (;;) {
        while (w.depth > 0 && w.pos == w.stack[w.depth].end)
            w.depth--;
        if (w.depth == 0 && w.pos == len)
            return 0;
        if (walk_field(&w) < 0)
            return -1;
    }
}
