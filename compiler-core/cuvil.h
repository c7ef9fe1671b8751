/* The Cuvil compiler core: the one public header of compiler-core/.
 *
 *   model file (.cuir, .onnx, .cvl.py) --front end--> CU-IR module
 *   --verify--> --passes--> --backend--> artifact
 *
 * compiler-core knows nothing of git, queues, HTTP or caching. */
#ifndef CUVIL_H
#define CUVIL_H

#include "common/precision.h"
#include "common/targets.h"   /* cv_target_known, cv_target_names */
#include "compiler-core/ir/ir.h"

/* A front end: recognises its files and turns them into CU-IR. */
typedef struct cv_frontend {
    const char *name;       /* "cuir", "onnx", "dsl" */
    const char *version;    /* enters the L1 cache key */
    bool (*matches)(const char *path, const char *head, size_t head_len);
    cv_module *(*load)(const char *path, cv_diag *d);
    /* CV_LOAD_CHECK_ONLY: the same diagnostics as load, but param data may
     * be borrowed, read-only and unaligned (never run it).  NULL: load. */
    cv_module *(*load_check)(const char *path, cv_diag *d);
} cv_frontend;

/* The front end for path (by name and first bytes), or NULL. */
const cv_frontend *cv_frontend_for(const char *path, cv_diag *d);
const cv_frontend *cv_frontend_at(int i);  /* NULL past the end */

/* Loads any supported model file through its front end, then verifies it.
 * Weights referenced by CU-IR params are mapped (not copied).  Returns NULL
 * after reporting errors. */
enum { CV_LOAD_STRICT = 1u << 0, CV_LOAD_NO_WEIGHTS = 1u << 1, CV_LOAD_CHECK_ONLY = 1u << 2 };
cv_module *cv_model_load(const char *path, unsigned flags, cv_diag *d);

/* What the front ends accept (`cuvil help ops`, docs/ops.md).  The ONNX
 * registry's i-th op (default domain) and the first opset whose semantics
 * it implements ("" when its CU-IR ops are missing, NULL past the end); the
 * model language's i-th Python builtin; whether an op has native code
 * (else only the interpreter runs it). */
const char *cv_onnx_op_at(int i, int *since);
const char *cv_dsl_builtin_at(int i);
bool cv_op_native(const cv_op_def *def);

/* Size limit for model text files read by front ends (bytes). */
#define CV_MAX_MODEL_TEXT (256u << 20)

/* ---- native artifacts (compiler-core/backend/, LLVM 19) ------------------- */

enum {
    CV_EMIT_OBJ = 1u << 0, CV_EMIT_A = 1u << 1, CV_EMIT_SO = 1u << 2, CV_EMIT_H = 1u << 3,
    CV_EMIT_LLVM = 1u << 4, CV_EMIT_CUIR = 1u << 5,
    CV_EMIT_C = 1u << 6,    /* portable C99: <name>.c, <name>_weights.c (and <name>.h) */
    /* --weights-file: the weights go to <name>.weights.bin beside the library
     * instead of its read-only data; cv_<name>_create_weights takes them. */
    CV_EMIT_WEIGHTS = 1u << 7,
    CV_EMIT_DEFAULT = CV_EMIT_OBJ | CV_EMIT_A | CV_EMIT_SO | CV_EMIT_H,
};

/* Reduced precision (compiler-core/passes/quantize*.c): cv_precision, the
 * enum job messages and specs use too (common/precision.h). */
typedef enum cv_calib_method { CV_CALIB_MINMAX, CV_CALIB_PERCENTILE, CV_CALIB_ENTROPY } cv_calib_method;

typedef struct cv_quant_opts {
    cv_precision precision;
    const char *calibration;    /* int8: a glob of .npy files, one model input each */
    /* Set (farm jobs: the revision's tree): calibration is relative to it and
     * may not leave it (CV9313, CV2016); NULL: as given (the command line). */
    const char *calibration_root;
    cv_calib_method method;
    double percentile;          /* CV_CALIB_PERCENTILE; 0 = 99.99 */
    double min_sqnr;            /* dB: an output below it fails the compile (CV5110); 0 = off */
} cv_quant_opts;

/* "minmax", "percentile", "entropy" -> cv_calib_method; -1 otherwise. */
int cv_calib_method_parse(const char *s);
/* SHA-256 (hex) of the calibration files' bytes and the method: what the
 * int8 artifact depends on beyond the model (an L2 cache key field). */
int cv_calib_digest(const cv_quant_opts *q, char hex[65], cv_diag *d);


/* A cache for generated code, handed in by compile-with-cache (compile/);
 * the compiler core itself knows no caching.  The key is the code's source
 * (backend/code_source.c), known before LLVM runs: the program after the
 * passes with its large constants blank, the constants small enough to be
 * folded into code, and how the kernels were laid out.  With split weights
 * (the CPU targets) it never holds the large weights, so a retrained model
 * finds its code again and runs no LLVM at all.
 *   lookup  source: those bytes.  1 with the object file (malloc'd into
 *           out->obj) and the triple and CPU it was made for, 0 on a miss.
 *   store   the object made after that miss.
 *   so_lookup  after a hit: the linked library of that code around its
 *           weights (cv_so_template, head and tail malloc'd), 1, or 0 when
 *           none is stored; the library is then that head, the new weights
 *           image and that tail, with the build id of the new objects, and
 *           no linker runs (artifact.c).
 *   so_store   the template of a library just linked after a look-up.
 * Any may be NULL. */
typedef struct cv_so_template {
    void *head, *tail;          /* the library's bytes before and after the image */
    size_t head_len, tail_len;  /* head_len: the image's file offset */
    uint64_t image_len;         /* the weights image it was cut around */
    uint64_t build_id_at;       /* the build id's 20 bytes, inside head */
} cv_so_template;

typedef struct cv_code_object {
    void *obj;
    size_t len;
    char triple[64], cpu[64];   /* what LLVM made it for (the manifest's target) */
} cv_code_object;

typedef struct cv_code_cache {
    void *ctx;
    int (*lookup)(void *ctx, const void *source, size_t len, cv_code_object *out);
    void (*store)(void *ctx, const cv_code_object *o);
    int (*so_lookup)(void *ctx, cv_so_template *t);
    void (*so_store)(void *ctx, const cv_so_template *t);
} cv_code_cache;

typedef struct cv_compile_opts {
    const char *target;     /* x86_64, x86_64-avx2, x86_64-avx512, aarch64-linux-gnu,
                               riscv64-linux-gnu, native (NULL) */
    int opt_level;          /* 0..3 */
    unsigned emit;          /* CV_EMIT_* bits; 0 = CV_EMIT_DEFAULT */
    const char *out_dir;    /* created when missing */
    /* Debugging (symbols/symbols.h).  debug: DWARF that maps code to the
     * model's lines (cuvil compile -g) and locations in <name>.cvsym;
     * sym_locs: the locations without DWARF (a compile the cache never
     * sees); fingerprint: the symbol-table fingerprint (hex) for the map;
     * dump_values: every tensor a kernel writes is also an output (cuvil
     * diff); test_faults: honour CUVIL_TEST_FAULT_OP (tests only). */
    bool debug, sym_locs, dump_values, test_faults;
    const char *fingerprint;
    const cv_quant_opts *quant; /* reduced precision; NULL: fp32 */
    bool no_blocked_layout;     /* keep every convolution in the plain NCHW layout */
    int max_ops;                /* a model with more ops is CV5012; 0: CV_MAX_COMPILE_OPS */
    /* The artifact's C name (lib<name>.so, cv_<name>_run); NULL: the model's
     * own (cv_artifact_name_ok must hold). */
    const char *name;
    const cv_code_cache *code_cache;    /* NULL: none (used without -emit llvm, CPU targets) */
} cv_compile_opts;

/* Ops a compiled model may have (cuvil compile --max-ops raises or lowers it,
 * up to the ceiling): compile time and memory grow with the graph, and a
 * model file under the size limits can hold millions of ops. */
enum { CV_MAX_COMPILE_OPS = 200000, CV_MAX_COMPILE_OPS_CEILING = 100000000 };

/* An artifact name: a C identifier ([A-Za-z_][A-Za-z0-9_]*) of at most 64
 * characters, so that lib<name>.so and cv_<name>_run are valid. */
bool cv_artifact_name_ok(const char *name);
/* The artifact name a model function gets without --name: its name with
 * every character but [A-Za-z0-9_] as '_', 'm' before a leading digit. */
void cv_artifact_c_name(const char *func_name, char *out, size_t size);

/* ---- CPU features (compiler-core/backend/cpu_check.c, x86-64) ---------- */

/* Whether this CPU (and its OS) offers an x86 feature: "avx2", "avx512f"... */
bool cv_cpu_host_has(const char *feature);
/* The checkable features a target's code needs: its CPU's x86-64 level
 * ("x86-64-v3") and the "+feature" entries of its LLVM feature list, into
 * out (static strings).  Returns how many. */
int cv_cpu_required(const char *cpu, const char *features, const char **out, int max);
/* The best named target this CPU runs: x86_64-avx512, x86_64-avx2 or x86_64. */
const char *cv_cpu_host_target(void);
/* 0 when this CPU has every required feature; else -1 with CV5036 naming
 * the missing ones and the target to compile for instead. */
int cv_cpu_check(const char *target, const char *const *required, int n, const char *where,
                 cv_diag *d);

typedef struct cv_compile_info {
    char name[128];         /* the artifact's C name: cv_<name>_run ... */
    int n_ops, n_kernels;   /* ops after the graph passes; kernels after fusion */
    int n_ops_in;           /* ops before the graph passes */
    int n_fused;            /* ops run inside their producer's kernel */
    int n_blocked_convs;    /* convolutions in the blocked NCHWc layout */
    int n_reorders;         /* conversions between the plain and blocked layouts */
    int nchwc_block;        /* channels per block (0: the blocked layout is off) */
    int pass_folded, pass_bn_folded, pass_cse_ops, pass_cse_params;
    int pass_dead_ops, pass_dead_params;
    int pass_attention, pass_layer_norms, pass_gelus;  /* chains made one op (issue 26) */
    int64_t arena_bytes, peak_bytes;  /* with every symbolic dim = 1 */
    /* The arena as a formula of the symbols ("4096*L + 64*(P + 1)"; empty
     * when static) and its size at every symbol = 1, 16 and 128. */
    char arena_formula[512];
    int64_t arena_at[3];
    double ms_passes, ms_codegen, ms_llvm, ms_link;
    bool linked_so;         /* false for a cross target whose linker is missing */
    bool so_spliced;        /* the library was cut from the code cache's template, not linked */
    int llvm_modules;       /* LLVM modules built (0: the code came from the code cache) */
    /* Where the split weights image lies in the artifact's files, each a
     * verbatim copy of it (so a cache can store the image once): its length
     * and, per file, its offset.  n_weights_in 0: none. */
    uint64_t weights_len;
    int n_weights_in;
    struct { char file[200]; uint64_t at; } weights_in[3];
    /* Reduced precision: which ops ran in which type, SQNR per output and
     * per layer (text, empty for fp32). */
    char quant_report[8192];
} cv_compile_info;


/* "so,a,obj,h,llvm,cuir,c" -> CV_EMIT_* bits; -1 on an unknown name. */
int cv_emit_parse(const char *list, unsigned *out);
/* The file that holds compiler-core: the cuvil executable, or the shared
 * library it is linked into (the Python extension).  0, or -1. */
int cv_self_image(char *buf, size_t size);
/* Where the LLVM backend plugin is ($CUVIL_LLVM_PLUGIN, else next to
 * cv_self_image's directory: lib/cuvil/ or ../lib/cuvil/): 0 found, -1 not
 * (buf then names the first place looked). */
int cv_backend_plugin_path(char *buf, size_t size);
/* Loads the LLVM backend plugin and initialises its targets now rather than
 * on the first compile, so that forked compile children (the worker's
 * sandbox) inherit it instead of each loading it again. */
int cv_backend_preload(cv_diag *d);
/* Compiles the module's model into out_dir: <name>.o, lib<name>.a,
 * lib<name>.so, <name>.h, manifest.json (see docs). */
int cv_compile_native(cv_module *m, const cv_compile_opts *o, cv_compile_info *info, cv_diag *d);

/* A compiled artifact loaded into this process (dlopen of lib<name>.so). */
typedef struct cv_native cv_native;
/* Loads the artifact in dir (its manifest.json and .so) with a pool of
 * `threads` threads, after checking that this CPU has the features the
 * manifest's target.requires lists (CV5036).  One run at a time. */
int cv_native_open(const char *dir, int threads, cv_native **out, cv_diag *d);
/* The same for the artifact a manifest file describes (DIR/<name>.manifest.json:
 * one of several artifacts sharing DIR). */
int cv_native_open_manifest(const char *path, int threads, cv_native **out, cv_diag *d);
/* Runs it like cv_interp_run: inputs in signature order (symbolic dims are
 * bound from their shapes); outputs[i] are allocated unless they already
 * hold a buffer of the right shape, which is then reused. */
int cv_native_run(cv_native *n, const cv_tensor *inputs, int n_inputs, cv_tensor *outputs,
                  cv_diag *d);
typedef struct cv_native_io {
    const char *name;       /* owned by the cv_native */
    cv_dtype dtype;
    int rank;
    const int64_t *dims;    /* rank entries: >= 0, or -1 - k for symbolic dim k, or
                               -1 - (number of symbols) for an expression of them
                               (cv_native_io_format prints its text) */
} cv_native_io;
int cv_native_num_inputs(const cv_native *n);
int cv_native_num_outputs(const cv_native *n);
cv_native_io cv_native_input(const cv_native *n, int i);
cv_native_io cv_native_output(const cv_native *n, int i);
/* The model's symbols (dim -1 - k of an input is symbol k), by name. */
int cv_native_num_symbols(const cv_native *n);
const char *cv_native_symbol_name(const cv_native *n, int k);
/* "f32[batch,4]": an input's or output's type with its symbols' names. */
void cv_native_io_format(const cv_native *n, cv_native_io io, char *buf, size_t size);
void cv_native_close(cv_native *n);
/* cuvil bench --profile: while ns is not NULL, each run adds every kernel's
 * wall time in nanoseconds to ns[k] (k < n_kernels, the kernel index of the
 * artifact's <name>.cvsym); NULL stops.  -1 when the artifact cannot
 * profile (built before profiling existed, or CUDA). */
int cv_native_profile(cv_native *n, uint64_t *ns, int64_t n_kernels);

#endif
