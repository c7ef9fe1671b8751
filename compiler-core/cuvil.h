/* The Cuvil compiler core: the one public header of compiler-core/.
 *
 *   model file (.cuir, .onnx, .cvl.py) --front end--> CU-IR module
 *   --verify--> --passes--> --backend--> artifact
 *
 * compiler-core knows nothing of git, queues, HTTP or caching. */
#ifndef CUVIL_H
#define CUVIL_H

#include "compiler-core/ir/ir.h"

/* A front end: recognises its files and turns them into CU-IR. */
typedef struct cv_frontend {
    const char *name;       /* "cuir", "onnx", "dsl" */
    const char *version;    /* enters the L1 cache key */
    bool (*matches)(const char *path, const char *head, size_t head_len);
    cv_module *(*load)(const char *path, cv_diag *d);
} cv_frontend;

/* The front end for path (by name and first bytes), or NULL. */
const cv_frontend *cv_frontend_for(const char *path, cv_diag *d);
const cv_frontend *cv_frontend_at(int i);  /* NULL past the end */

/* Loads any supported model file through its front end, then verifies it.
 * Weights referenced by CU-IR params are mapped (not copied).  Returns NULL
 * after reporting errors. */
enum { CV_LOAD_STRICT = 1u << 0, CV_LOAD_NO_WEIGHTS = 1u << 1 };
cv_module *cv_model_load(const char *path, unsigned flags, cv_diag *d);

/* Size limit for model text files read by front ends (bytes). */
#define CV_MAX_MODEL_TEXT (256u << 20)

#endif
