/* Internal to compile/: the pieces of cv_build. */
#ifndef CV_COMPILE_INTERNAL_H
#define CV_COMPILE_INTERNAL_H

#include <jansson.h>

#include "common/strbuf.h"
#include "compile/build.h"

/* ---- fingerprint.c */

/* sha256 over inputs, outputs, params (name, dtype, shape) and op
 * signatures (name, operand and result types) in order. */
void cv_compile_fingerprint(const cv_module *m, cv_digest *out);

/* ---- onnx_deps.c */

/* The external-data locations an ONNX model names (every TensorProto in
 * its graphs, subgraphs and functions), appended to files (strings,
 * deduplicated).  Returns 0, or -1 when the file is not protobuf. */
int cv_compile_onnx_external_files(const void *buf, size_t len, json_t *files);
/* The same for an ONNX file, mapped (not read); -1 when it cannot be. */
int cv_compile_onnx_file_deps(const char *path, json_t *files);
/* Sorts a JSON array of strings in place, bytewise (build_keys.c). */
int cv_compile_sort_strings(json_t *arr);

/* ---- build_keys.c */

/* A model file's dependencies, with their digests. */
typedef struct cv_compile_deps {
    json_t *files;              /* array of relative names, sorted (owned) */
    cv_cache_named_digest *dg;  /* one per file (owned; names point into files) */
    int n;
} cv_compile_deps;

void cv_compile_deps_free(cv_compile_deps *x);
/* Digests every file of x->files inside model_dir.  1 ok, 0 when one is
 * missing (why in reason), -1 on out-of-memory. */
int cv_compile_deps_digest(cv_cache *c, const char *model_dir, cv_compile_deps *x, char *reason,
                      size_t rsize);

typedef struct cv_compile_source {
    const cv_frontend *fe;
    const char *name;           /* the model file's base name (in DSL locations) */
    char *dir;                  /* owned: the model's directory */
    char options[64];           /* canonical front-end options */
    cv_digest digest;
} cv_compile_source;

int  cv_compile_deps_key(const cv_compile_source *s, cv_cache_key *out, cv_diag *d);
int  cv_compile_l1_key(const cv_compile_source *s, const cv_compile_deps *x, cv_cache_key *out, cv_diag *d);

typedef struct cv_compile_target {
    char triple[64];
    char features[4096];        /* "cpu=<cpu>,<+feature,...>" */
} cv_compile_target;
int  cv_compile_target_describe(const char *name, cv_compile_target *t, cv_diag *d);
const char *cv_compile_llvm_version(void);

typedef struct cv_compile_l2_in {
    cv_digest ir;
    const char *target;
    const cv_compile_target *desc;
    const cv_build_opts *o;
    unsigned emit;
    cv_digest structure;        /* the L1 value's */
    json_t *weights;            /* the weights list: one "weight:<name>" field each */
} cv_compile_l2_in;
int  cv_compile_l2_key(cv_cache *c, const cv_compile_l2_in *in, cv_cache_key *out, cv_diag *d);

/* The code level's key (generated code apart from weights): the digest of
 * the code's source (cv_code_cache), target, opt level, compiler, LLVM. */
int  cv_compile_code_key(cv_cache *c, const cv_digest *source, const char *target,
                    const cv_compile_target *desc, cv_opt_level opt, cv_cache_key *out, cv_diag *d);

/* sha256("cuvil-ir/1" || text || (dep name, dep digest)*): what the L2
 * key knows of the program, weights included. */
void cv_compile_ir_digest(const char *text, size_t len, const cv_compile_deps *x, cv_digest *out);

void cv_compile_hex(const cv_digest *dg, char out[CV_DIGEST_HEX + 1]);

/* ---- miss_cause.c */
/* On a miss (out->reason and out->cause set from the cache's answer): the
 * key fields that differ from the closest stored entry appended to the
 * reason, and the cause refined from them ("new" when nothing is stored).
 * Scans the level's stored key manifests. */
void cv_compile_explain_miss(cv_cache *c, cv_cache_level lv, const cv_cache_key *key,
                             cv_build_level *out);

/* ---- explain_code.c */

/* The key of the link from a structure (an L2 key manifest without its IR
 * digest and weight fields) to the code key its compile used. */
int cv_compile_code_link_key(const char *l2_manifest, cv_cache_key *out, cv_diag *d);

/* ---- build_store.c */

/* What L1 stores for a program. */
typedef struct cv_compile_l1_value {
    cv_digest ir_blob;          /* canonical text without locations */
    cv_digest ir, ir_loc;       /* IR digests without / with locations */
    cv_digest structure;        /* the IR with the weights blank (canonical.c) */
    cv_digest weights;          /* the weights list ({param: digest}): its blob digest */
    cv_digest fingerprint;
    char name[128];
} cv_compile_l1_value;

char *cv_compile_l1_encode(const cv_compile_l1_value *v);         /* malloc'd JSON */
int   cv_compile_l1_decode(const void *buf, size_t len, cv_compile_l1_value *v);
char *cv_compile_deps_encode(const cv_compile_deps *x);           /* malloc'd JSON */
/* The code level's value: the object's blob digest and size, and once the
 * library of that code has been linked, its template (cv_so_template):
 * the blobs of its bytes before and after the weights image. */
typedef struct cv_compile_code_value {
    cv_digest object;
    uint64_t size;
    char triple[64], cpu[64];   /* what the object was made for */
    bool has_so;
    cv_digest so_head, so_tail;
    uint64_t head_size, tail_size, image_size, build_id_at;
} cv_compile_code_value;
char *cv_compile_code_encode(const cv_compile_code_value *v);   /* malloc'd JSON */
int   cv_compile_code_decode(const void *buf, size_t len, cv_compile_code_value *v);
int   cv_compile_deps_decode(const void *buf, size_t len, cv_compile_deps *x);

/* Stores every file the artifact in dir lists (its manifest.json too) as
 * blobs and returns the file list (canonical JSON, malloc'd) in *list;
 * remember: see cv_cache_put_blob_files. */
int  cv_compile_artifact_store(cv_cache *c, const char *dir, bool remember,
                               const cv_compile_info *info, char **list, size_t *len,
                               char name[128], cv_diag *d);
/* The weights image stored once (weights_pack.c).  store: the files of
 * files (the manifest's list) that info says hold the image, as parts
 * around it, into listed (a file not stored so is left out of it: the
 * caller stores it whole; trouble is a warning).  fetch: one file of a
 * stored list whose entry e has parts: 1 written (or already in place),
 * 0 a part is missing (why in reason), -1 error. */
int  cv_compile_weights_store(cv_cache *c, const char *dir, json_t *files,
                              const cv_compile_info *info, bool remember, json_t *listed,
                              cv_diag *d);
int  cv_compile_weights_fetch(cv_cache *c, const char *dir, const char *fname, json_t *e,
                              const cv_digest *dg, uint64_t size, unsigned mode, char *reason,
                              size_t rsize, cv_diag *d);
/* The file list of an artifact directory without storing anything. */
int  cv_compile_artifact_list(const char *dir, char **list, size_t *len, char name[128],
                         cv_diag *d);
/* Writes the files of a stored list into dir.  1 done, 0 when a blob is
 * missing (why in reason), -1 on a write error (in d). */
int  cv_compile_artifact_materialise(cv_cache *c, const void *list, size_t len, const char *dir,
                                char name[128], char *reason, size_t rsize, cv_diag *d);
/* Same, checking only that every blob is stored (dir NULL is allowed). */
int  cv_compile_artifact_check(cv_cache *c, const void *list, size_t len, char name[128],
                          char *reason, size_t rsize, cv_diag *d);

/* ---- canonical.c */

/* v (all but ir_blob) and the canonical text (malloc'd) of a loaded
 * module, and *weights, {param name: digest} of its constants over
 * CV_INLINE_CONST_MAX bytes (owned by the caller).  x: its files, or NULL. */
int cv_compile_describe(cv_module *m, const cv_compile_deps *x, cv_compile_l1_value *v, char **text,
                   json_t **weights);

#endif
