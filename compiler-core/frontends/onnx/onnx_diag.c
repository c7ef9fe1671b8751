/* Diagnostics of the ONNX front end: errors name the node (its name or
 * op#<index>) in the message and carry an IR path "Graph>Node[<OpType>]"
 * so that the failure classifier groups them by op type. */
#include <stdarg.h>
#include <stdio.h>

#include "compiler-core/frontends/onnx/onnx_internal.h"

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
    char path[160];
    snprintf(path, sizeof path, "Graph>Node[%.100s]", c->node->op_type ? c->node->op_type : "");
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
