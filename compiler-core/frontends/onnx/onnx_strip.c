/* Checking a model without touching its weights (cuvil validate).
 *
 * protobuf-c copies every bytes field when it unpacks, so a 47 MB model
 * costs 47 MB of copying and page faults before a single shape is checked.
 * Here the ModelProto's bytes are rewritten without the payloads of large
 * initializer raw_data fields (each becomes an empty raw_data; the lengths
 * of the enclosing messages are re-encoded), the small remainder is
 * unpacked, and the emptied fields are then pointed back into the file's
 * bytes: whoever decodes them sees the same raw_data as before, read from
 * the mapping only if touched.  The input has passed onnx_wire_check. */
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/frontends/onnx/onnx_internal.h"

typedef struct strip_walk {
    const uint8_t *p;
    size_t min_bytes;
    uint32_t ids[3];        /* ModelProto.graph, GraphProto.initializer, TensorProto.raw_data */
    onnx_stripped *out;
    size_t cur;             /* ordinal of the initializer being copied */
} strip_walk;

static int rd_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
        uint8_t b = p[(*pos)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

static void put_varint(cv_sb *sb, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    cv_sb_add(sb, b, n);
}

/* Records (or, for a small repeat of the field, forgets) the hole of the
 * current initializer: protobuf keeps the last raw_data it reads. */
static int set_hole(strip_walk *w, size_t off, size_t len, bool stripped)
{
    onnx_stripped *s = w->out;
    if (s->n_holes && s->holes[s->n_holes - 1].init == w->cur)
        s->n_holes--;
    if (!stripped)
        return 0;
    if (s->n_holes == s->cap_holes) {
        size_t cap = s->cap_holes ? 2 * s->cap_holes : 64;
        onnx_hole *h = realloc(s->holes, cap * sizeof *h);
        if (!h)
            return -1;
        s->holes = h;
        s->cap_holes = cap;
    }
    s->holes[s->n_holes++] = (onnx_hole){w->cur, off, len};
    return 0;
}

/* Copies the fields of the message at p[pos, end), at level lvl of the
 * path graph > initializer > raw_data, into out. */
static int rewrite(strip_walk *w, int lvl, size_t pos, size_t end, cv_sb *out)
{
    while (pos < end) {
        size_t start = pos;
        uint64_t tag, v = 0;
        if (rd_varint(w->p, end, &pos, &tag) < 0)
            return -1;
        size_t tag_end = pos;
        int wt = (int)(tag & 7);
        if (wt == 0 || wt == 2) {
            if (rd_varint(w->p, end, &pos, &v) < 0)
                return -1;
        } else if (wt == 1 || wt == 5) {
            v = wt == 1 ? 8 : 4;
        } else {
            return -1;
        }
        size_t body = pos;
        if (wt != 0) {
            if (v > end - pos)
                return -1;
            pos += (size_t)v;
        }
        bool ours = wt == 2 && (tag >> 3) == w->ids[lvl];
        bool strip = ours && lvl == 2 && v >= w->min_bytes;
        if (ours && lvl < 2) {
            if (lvl == 1)
                w->cur = w->out->n_init++;
            cv_sb child = CV_SB_INIT;   /* owned */
            int rc = rewrite(w, lvl + 1, body, pos, &child);
            cv_sb_add(out, w->p + start, tag_end - start);
            put_varint(out, child.len);
            cv_sb_add(out, child.buf, child.len);
            cv_sb_free(&child);
            if (rc < 0)
                return -1;
            continue;
        }
        if (ours && set_hole(w, body, (size_t)v, strip) < 0)
            return -1;
        if (strip) {
            cv_sb_add(out, w->p + start, tag_end - start);
            put_varint(out, 0);
        } else {
            cv_sb_add(out, w->p + start, pos - start);
        }
    }
    return out->oom ? -1 : 0;
}

static uint32_t field_id(const ProtobufCMessageDescriptor *desc, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(desc, name);
    return f ? f->id : 0;
}

int onnx_strip_model(const void *buf, size_t len, size_t min_bytes, onnx_stripped *out)
{
    memset(out, 0, sizeof *out);
    strip_walk w = {.p = buf, .min_bytes = min_bytes ? min_bytes : 1, .out = out};
    w.ids[0] = field_id(&onnx__model_proto__descriptor, "graph");
    w.ids[1] = field_id(&onnx__graph_proto__descriptor, "initializer");
    w.ids[2] = field_id(&onnx__tensor_proto__descriptor, "raw_data");
    cv_sb sb = CV_SB_INIT;   /* handed to out */
    int rc = rewrite(&w, 0, 0, len, &sb);
    out->len = sb.len;
    out->buf = (uint8_t *)cv_sb_steal(&sb);
    if (rc < 0 || !out->buf) {
        onnx_strip_free(out);
        return -1;
    }
    return 0;
}

int onnx_strip_attach(Onnx__ModelProto *mp, const onnx_stripped *s, const void *file)
{
    const Onnx__GraphProto *g = mp->graph;
    size_t n_init = g ? g->n_initializer : 0;
    for (size_t i = 0; i < s->n_holes; i++) {
        const onnx_hole *h = &s->holes[i];
        Onnx__TensorProto *t = h->init < n_init ? g->initializer[h->init] : NULL;
        /* protobuf-c read the emptied field as present and empty. */
        if (!t || !t->has_raw_data || t->raw_data.len || t->raw_data.data) {
            onnx_strip_detach(mp, s, file);
            return -1;
        }
        t->raw_data.data = (uint8_t *)file + h->off;
        t->raw_data.len = h->len;
    }
    return 0;
}

void onnx_strip_detach(Onnx__ModelProto *mp, const onnx_stripped *s, const void *file)
{
    const Onnx__GraphProto *g = mp->graph;
    for (size_t i = 0; g && i < s->n_holes; i++) {
        if (s->holes[i].init >= g->n_initializer)
            continue;
        Onnx__TensorProto *t = g->initializer[s->holes[i].init];
        if (t->raw_data.data == (const uint8_t *)file + s->holes[i].off) {
            t->raw_data.data = NULL;
            t->raw_data.len = 0;
        }
    }
}

void onnx_strip_free(onnx_stripped *s)
{
    free(s->buf);
    free(s->holes);
    memset(s, 0, sizeof *s);
}
