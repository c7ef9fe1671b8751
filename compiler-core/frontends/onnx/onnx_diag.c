/* Diagnostics of the ONNX front end: errors name the node (its name or
 * op#<index>) in the message and carry the path
 * "Graph>Node[<OpType>](<producers>)" so that the failure classifier groups
 * them by op type and by what feeds the op: each input's producing op type,
 * `input` (a graph input), `init` (an initializer), `-` (left out) or
 * `undefined`. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

#define PRODUCERS_SHOWN 8

static void producers(onnx_ctx *c, char *buf, size_t size)
{
    const Onnx__NodeProto *n = c->node;
    const Onnx__GraphProto *g = c->model ? c->model->graph : NULL;
    size_t at = 0;
    for (size_t i = 0; i < n->n_input && i < PRODUCERS_SHOWN && at < size; i++) {
        const char *in = n->input[i];
        const onnx_val *v = in && in[0] ? onnx_val_get(c, in) : NULL;
        const char *what = !in || !in[0]   ? "-"
                           : !v              ? "undefined"
                           : v->graph_input  ? "input"
                                             : "init";
        if (v && v->producer >= 0 && g && (size_t)v->producer < g->n_node &&
            g->node[v->producer]->op_type)
            what = g->node[v->producer]->op_type;
        at += (size_t)snprintf(buf + at, size - at, "%s%.40s", i ? "," : "(", what);
    }
    if (at < size && n->n_input)
        snprintf(buf + at, size - at, "%s)", n->n_input > PRODUCERS_SHOWN ? ",..." : "");
}

static void node_path(onnx_ctx *c, char *path, size_t size)
{
    int at = snprintf(path, size, "Graph>Node[%.100s]", c->node->op_type ? c->node->op_type : "");
    producers(c, path + at, size - (size_t)at);
}

void onnx_node_paths(onnx_ctx *c, int first)
{
    char path[512];
    bool made = false;
    for (int i = first; c->node && i < c->d->n; i++) {
        const cv_diag_entry *e = &c->d->v[i];
        if (!e->path || e->path[0] != '@')
            continue;
        if (!made)
            node_path(c, path, sizeof path);
        made = true;
        cv_diag_set_path(c->d, e->id, path);
        cv_diag_note(c->d, e->id, "in node '%s' (%s)", c->label,
                     c->node->op_type ? c->node->op_type : "?");
    }
}

int onnx_err(onnx_ctx *c, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cv_span sp = {.file = c->path};
    if (!c->node) {
        cv_diag_add(c->d, CV_SEV_ERROR, code, sp, "Graph", "%s", msg);
        return -1;
    }
    char path[512];
    node_path(c, path, sizeof path);
    cv_diag_add(c->d, CV_SEV_ERROR, code, sp, path, "node '%s' (%s): %s", c->label,
                c->node->op_type ? c->node->op_type : "?", msg);
    return -1;
}

int onnx_err_at(cv_diag *d, const char *file, const char *path, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_span sp = {.file = file};
    cv_diag_vadd(d, CV_SEV_ERROR, code, sp, path, fmt, ap);
    va_end(ap);
    return -1;
}
