/* CU-IR: the tensor-graph IR every front end produces and every pass and
 * backend consumes.  A module owns one arena; every IR object (values, ops,
 * attributes, names, shapes, inline constant data) lives in it and dies with
 * cv_module_free.  See docs/cuir.md for the text form. */
#ifndef CV_IR_H
#define CV_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/diag.h"
#include "common/dtype.h"

/* Element types (cv_dtype) live in common/dtype.h. */

/* ---- shapes ------------------------------------------------------------- */

#define CV_MAX_RANK 8

typedef struct cv_module cv_module;

/* A dimension is an integer (sym == NULL, the value in n), a symbol such as
 * N (sym its name, n 0) or an expression over symbols (sym its canonical
 * text, n CV_DIM_EXPR), interned in the module arena.  Canonical texts make
 * equal expressions equal strings: two symbolic dims are equal iff their n
 * and strcmp(sym) agree.  See ir/dimexpr.c and docs/cuir.md. */
typedef struct cv_dim {
    int64_t n;
    const char *sym;
} cv_dim;

#define CV_DIM_EXPR 1

typedef struct cv_shape {
    int rank;
    cv_dim d[CV_MAX_RANK];
} cv_shape;

typedef struct cv_type {
    cv_dtype dtype;     /* CV_DT_INVALID when unknown (after an error) */
    cv_shape shape;
} cv_type;

bool cv_dim_equal(cv_dim a, cv_dim b);
bool cv_shape_equal(const cv_shape *a, const cv_shape *b);
bool cv_type_equal(const cv_type *a, const cv_type *b);
bool cv_type_known(const cv_type *t);
bool cv_shape_is_static(const cv_shape *s);
/* Element count of a static shape; -1 if symbolic, negative or overflowing. */
int64_t cv_shape_numel(const cv_shape *s);
/* Multiplies with overflow check; returns false on overflow. */
bool cv_mul_i64(int64_t a, int64_t b, int64_t *out);
/* ---- dimension arithmetic (ir/dimexpr.c) ---- */
typedef enum cv_dim_op {
    CV_DIM_ADD, CV_DIM_SUB, CV_DIM_MUL, CV_DIM_FLOORDIV, CV_DIM_CEILDIV, CV_DIM_MOD,
    CV_DIM_MIN, CV_DIM_MAX
} cv_dim_op;
bool cv_dim_is_expr(cv_dim d);      /* an expression, not an integer or a bare symbol */
bool cv_dim_is_symbol(cv_dim d);    /* a bare symbol */
/* a op b in canonical form, interned in m (which may be NULL when the result
 * is an integer).  Returns 0, or -1 when the result is not expressible:
 * division by zero, a symbolic divisor that does not divide, overflow, or an
 * expression beyond the size limits.  floordiv rounds down, mod takes the
 * divisor's sign (Python's // and %). */
int cv_dim_arith(cv_module *m, cv_dim_op op, cv_dim a, cv_dim b, cv_dim *out);
int cv_dim_add(cv_module *m, cv_dim a, cv_dim b, cv_dim *out);
int cv_dim_sub(cv_module *m, cv_dim a, cv_dim b, cv_dim *out);
int cv_dim_mul(cv_module *m, cv_dim a, cv_dim b, cv_dim *out);
/* Parses a dimension written in the CU-IR syntax ("(L + 1) floordiv 2").
 * On error returns -1 with *err (static text) and *err_at (byte offset). */
int cv_dim_parse(cv_module *m, const char *s, size_t n, cv_dim *out, const char **err,
                 size_t *err_at);
/* What can be proven about a and b, every symbol being >= 0. */
enum { CV_DIM_EQ, CV_DIM_LT, CV_DIM_GT, CV_DIM_LE, CV_DIM_GE, CV_DIM_UNKNOWN };
int cv_dim_compare(cv_dim a, cv_dim b);
/* Evaluates d with the symbols' values from look (false: unknown symbol).
 * Returns -1 on an unknown symbol, division by zero or overflow. */
typedef bool (*cv_dim_lookup)(void *ctx, const char *sym, int64_t *v);
int cv_dim_eval(cv_dim d, cv_dim_lookup look, void *ctx, int64_t *out);
/* Calls fn for each symbol occurrence in d (name not NUL-terminated). */
int cv_dim_symbols(cv_dim d, void (*fn)(void *ctx, const char *name, size_t n), void *ctx);
/* Folds d's expression tree bottom-up through the callbacks (a symbol's
 * name is not NUL-terminated); returns the root's value, or NULL when d does
 * not parse or a callback returns NULL.  Backends lower dims with it. */
typedef struct cv_dim_folder {
    void *ctx;
    void *(*num)(void *ctx, int64_t v);
    void *(*sym)(void *ctx, const char *name, size_t n);
    void *(*bin)(void *ctx, cv_dim_op op, void *a, void *b);
} cv_dim_folder;
void *cv_dim_fold(cv_dim d, const cv_dim_folder *f);
/* The dim for messages: its integer, symbol name or expression text. */
void cv_dim_format(cv_dim d, char *buf, size_t size);

/* Writes "f32[N,1,28,28]" into buf (always terminated). */
void cv_type_format(const cv_type *t, char *buf, size_t size);

/* ---- locations ---------------------------------------------------------- */

/* Where an op came from: a source position ("lenet.cvl.py":5:9) or, with
 * line == 0, a name (an ONNX node name).  Locations never change meaning. */
typedef struct cv_loc {
    const char *file;
    int line, col;
} cv_loc;

/* ---- attributes --------------------------------------------------------- */

typedef enum cv_attr_kind {
    CV_ATTR_NONE = 0,
    CV_ATTR_INT, CV_ATTR_FLOAT, CV_ATTR_STRING, CV_ATTR_INTS, CV_ATTR_FLOATS, CV_ATTR_DTYPE,
    /* A list of dimensions, some symbolic ([N, L, (L + 1) floordiv 2, -1]): a
     * target shape known only as a formula of the symbols.  An attribute
     * whose entries are all integers is stored as INTS; a DIMS schema
     * accepts both (read it with cv_op_dims). */
    CV_ATTR_DIMS
} cv_attr_kind;

typedef struct cv_attr {
    const char *name;
    cv_attr_kind kind;
    int64_t i;          /* INT */
    double f;           /* FLOAT */
    const char *s;      /* STRING */
    int64_t *ints;      /* INTS, n entries */
    double *floats;     /* FLOATS, n entries */
    cv_dim *dims;       /* DIMS, n entries */
    int n;
    cv_dtype dt;        /* DTYPE */
    cv_span span;       /* position in text, if parsed */
} cv_attr;

const char *cv_attr_kind_name(cv_attr_kind k);

/* ---- values, params, ops, functions, modules ---------------------------- */

typedef enum cv_value_kind { CV_VAL_INPUT, CV_VAL_PARAM, CV_VAL_RESULT } cv_value_kind;

struct cv_op;
struct cv_param;

typedef struct cv_value {
    int id;                 /* index in the function's values[] */
    cv_value_kind kind;
    const char *name;       /* without the '%' */
    cv_type type;
    struct cv_op *def;      /* RESULT: the defining op */
    int def_index;          /* RESULT: which result; INPUT: input index */
    struct cv_param *param; /* PARAM */
    int n_uses;             /* filled by cv_func_count_uses */
    cv_span span;           /* where defined, if parsed */
} cv_value;

typedef enum cv_param_kind { CV_PARAM_WEIGHTS, CV_PARAM_DENSE } cv_param_kind;

typedef struct cv_param {
    cv_value *value;
    cv_param_kind kind;
    const char *file, *key; /* WEIGHTS: safetensors file (relative) and tensor name */
    void *data;             /* DENSE, or WEIGHTS once loaded: little-endian bytes of value->type */
    size_t nbytes;
    cv_span span;
} cv_param;

struct cv_op_def;

typedef struct cv_op {
    struct cv_func *func;   /* the function it belongs to */
    int id;                 /* index in the function's ops[] */
    const struct cv_op_def *def;  /* NULL for an unknown op (verifier reports it) */
    const char *name;       /* op name as written */
    cv_value **operands;
    int n_operands;
    cv_value **results;
    int n_results;
    cv_attr *attrs;         /* in schema order; unknown attributes last */
    int n_attrs;
    cv_loc *locs;           /* several after fusion */
    int n_locs;
    cv_span span;
} cv_op;

typedef struct cv_func {
    struct cv_module *module;
    const char *name;
    cv_value **inputs;
    int n_inputs;
    cv_type *out_types;     /* declared signature */
    int n_outputs;
    cv_param **params;
    int n_params;
    cv_op **ops;            /* in program order */
    int n_ops, cap_ops;
    cv_value **returns;
    int n_returns;
    cv_value **values;      /* every value, by id */
    int n_values, cap_values;
    int cap_params;
    int next_auto_name;
    struct cv_name_index *names;  /* name -> value, for look-ups and uniqueness */
    cv_span span, ret_span;
} cv_func;

/* A fact a model implies about one of its symbols: it holds only for
 * sym <= max (a 64-row positional table indexed by range(L): L <= 64).
 * Checked before a run (the interpreter: CV3013), printed in the text
 * form as `bound L 64 "why"`.  See ir/facts.c. */
typedef struct cv_sym_fact {
    const char *sym;        /* interned */
    int64_t max;
    const char *why;        /* what implies it (a param, the op, its node) */
} cv_sym_fact;

typedef struct cv_module {
    cv_arena arena;
    int version;            /* text format version (1) */
    cv_func **funcs;
    int n_funcs, cap_funcs;
    const char *path;       /* source file, for weights resolution and diagnostics */
    const char **interned;  /* hash set (cap_interned slots, n_interned used) of
                             * symbol and location names; see cv_module_intern */
    int n_interned, cap_interned;
    struct cv_module_resource *resources;  /* released by cv_module_free (mapped weights) */
    cv_sym_fact *facts;     /* arena; see cv_module_facts */
    int n_facts;
} cv_module;

/* ---- builder (used by every front end) ---------------------------------- */

cv_module *cv_module_new(const char *path);
void cv_module_free(cv_module *m);
const char *cv_module_intern(cv_module *m, const char *s, size_t n);
/* Hands p to the module: release(p) runs in cv_module_free. */
int cv_module_own(cv_module *m, void (*release)(void *), void *p);

cv_func *cv_func_new(cv_module *m, const char *name);
cv_value *cv_func_add_input(cv_func *f, const char *name, const cv_type *t);
void cv_func_add_output_type(cv_func *f, const cv_type *t);
cv_param *cv_func_add_weights(cv_func *f, const char *name, const cv_type *t,
                              const char *file, const char *key);
/* Copies nbytes of data (the little-endian bytes of t). */
cv_param *cv_func_add_dense(cv_func *f, const char *name, const cv_type *t,
                            const void *data, size_t nbytes);
void cv_func_set_returns(cv_func *f, cv_value *const *vals, int n);
/* A name unused in f, for a value that has none ("0", "1", ...). */
const char *cv_func_auto_name(cv_func *f);
cv_value *cv_func_find_value(const cv_func *f, const char *name);
/* Renames v (front ends: a graph output keeps its model's name).  -1 when
 * another value already has the name. */
int cv_func_rename_value(cv_func *f, cv_value *v, const char *name);
/* How many distinct names f's values have: fewer than n_values iff some name
 * is defined twice (the verifier then looks for the repeats). */
int cv_func_name_count(const cv_func *f);

/* Starts an op: looks up its definition (def stays NULL for an unknown name). */
cv_op *cv_op_new(cv_func *f, const char *opname, cv_value *const *operands, int n);
void cv_op_set_int(cv_op *op, const char *name, int64_t v);
void cv_op_set_float(cv_op *op, const char *name, double v);
void cv_op_set_string(cv_op *op, const char *name, const char *v);
void cv_op_set_ints(cv_op *op, const char *name, const int64_t *v, int n);
void cv_op_set_floats(cv_op *op, const char *name, const double *v, int n);
void cv_op_set_dtype(cv_op *op, const char *name, cv_dtype v);
/* Stores INTS when every entry is an integer, else DIMS (symbols interned
 * in the op's module). */
void cv_op_set_dims(cv_op *op, const char *name, const cv_dim *v, int n);
/* Adds (or replaces) an attribute; keeps schema order. */
cv_attr *cv_op_put_attr(cv_op *op, const cv_attr *a);
void cv_op_add_loc(cv_op *op, const char *file, int line, int col);
/* Creates n_results results (auto-named) and infers their types with the op's
 * shape function.  Returns 0, or -1 after reporting through d (the results
 * then have unknown types). */
int cv_op_finish(cv_op *op, int n_results, cv_diag *d);
/* For readers of a text form: creates n results named names[i] (NULL or a
 * NULL entry: auto-named) with the declared types, without running the shape
 * function; cv_verify compares declared and inferred types. */
void cv_op_finish_declared(cv_op *op, int n, const char *const *names, const cv_type *declared);
/* Replaces operand i (used to bind a forward reference once its definition is seen). */
void cv_op_set_operand(cv_op *op, int i, cv_value *v);
/* A value that stands for a name never defined (kind RESULT, def NULL, type
 * unknown), so that a reader can keep going; cv_verify reports it (CV2001). */
cv_value *cv_func_add_undefined(cv_func *f, const char *name);
/* Checks operand/result counts and attributes against the op's schema
 * (CV4001 unknown op, CV2007, CV2008, CV2004, CV2005, CV2006). */
int cv_op_check_schema(const cv_op *op, int n_results, const char *path, cv_diag *d);
/* The span diagnostics about op use: its text span, else its first loc. */
cv_span cv_op_span(const cv_op *op);
/* "@model>%name=opname" into buf. */
void cv_op_path(const cv_op *op, char *buf, size_t size);
/* Convenience: the single result of a finished op. */
cv_value *cv_op_result(const cv_op *op);

/* Attribute look-up with defaults. */
const cv_attr *cv_op_attr(const cv_op *op, const char *name);
int64_t cv_op_int(const cv_op *op, const char *name, int64_t dflt);
double cv_op_float(const cv_op *op, const char *name, double dflt);
const char *cv_op_string(const cv_op *op, const char *name, const char *dflt);
/* Copies up to max ints; returns the count, or -1 when absent. */
int cv_op_ints(const cv_op *op, const char *name, int64_t *out, int max);
/* An INTS or DIMS attribute as dims (up to max); the count, or -1 when absent. */
int cv_op_dims(const cv_op *op, const char *name, cv_dim *out, int max);

void cv_func_count_uses(cv_func *f);

/* ---- the op table ------------------------------------------------------- */

typedef struct cv_attr_schema {
    const char *name;
    cv_attr_kind kind;
    bool required;
} cv_attr_schema;

typedef struct cv_infer_ctx {
    const cv_op *op;
    const cv_type *in;      /* operand types, all known */
    int n_in;
    cv_type *out;           /* results to fill */
    int n_out;
    cv_module *module;      /* for interning symbols; may be NULL at run time */
    cv_diag *diag;
    int first_diag;         /* id of the first diagnostic raised, 0 if none */
    /* At run time (the interpreter): the symbols' values, so that a shape
     * written with symbols in an attribute (reshape's shape=[N, L, 4, 8],
     * range's length) becomes integers.  NULL at compile time. */
    cv_dim_lookup look;
    void *look_ctx;
} cv_infer_ctx;

/* Reports a shape/type error for the op being inferred and returns -1. */
int cv_infer_error(cv_infer_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A run-time tensor: concrete dims, data in its dtype's layout. */
typedef struct cv_tensor {
    cv_dtype dtype;
    int rank;
    int64_t dims[CV_MAX_RANK];
    int64_t numel;
    void *data;             /* owner depends on who made it; see cv_tensor_alloc */
} cv_tensor;

typedef struct cv_eval_ctx {
    const cv_op *op;
    const cv_tensor *const *in;
    int n_in;
    cv_tensor *out;         /* shapes set and data allocated before eval */
    int n_out;
    cv_arena *scratch;      /* freed after the op */
    cv_diag *diag;
    cv_dim_lookup look;     /* the symbols' values (range's symbolic start), or NULL */
    void *look_ctx;
} cv_eval_ctx;

struct cv_codegen_ctx;

typedef struct cv_op_def {
    const char *name;
    int min_operands, max_operands;   /* max -1: variadic */
    int min_results, max_results;     /* max -1: variadic (split) */
    const cv_attr_schema *attrs;      /* terminated by {NULL} */
    int (*infer)(cv_infer_ctx *c);    /* shape-and-dtype function */
    int (*eval)(cv_eval_ctx *c);      /* reference kernel (fp64 accumulation) */
    int (*codegen)(struct cv_codegen_ctx *c);  /* backend hook (issue 5) */
    unsigned flags;
} cv_op_def;

enum {
    CV_OPF_ELEMENTWISE = 1u << 0,   /* result[i] depends only on operands[i] (broadcast) */
    CV_OPF_COMMUTATIVE = 1u << 1,
    CV_OPF_SHAPE_ONLY  = 1u << 2,   /* only moves or reinterprets data */
};
/* Flag bits 8..11: the runtime epilogue activation that computes the op on
 * f32 in a convolution's or GEMM's store (cvrt.h's CVRT_ACT_*; 0 none), so
 * that a chain conv -> [add] -> op fuses into the product's kernel. */
#define CV_OPF_EPI(act) ((unsigned)(act) << 8)
#define CV_OP_EPI_ACT(def) ((int)(((def)->flags >> 8) & 15u))

const cv_op_def *cv_op_def_lookup(const char *name);

/* Op identity for passes and backends: the op-table entry, compared by
 * pointer (cv_op_is), never the name string.  The ops that code tests for
 * are listed here; each row's name must be in the table (test_ops_math). */
#define CV_OP_IDS(X) \
    X(CV_OP_ADD, "add") X(CV_OP_ARANGE, "arange") X(CV_OP_BATCH_NORM, "batch_norm") \
    X(CV_OP_CAST, "cast") X(CV_OP_EQUAL, "equal") X(CV_OP_EXPAND, "expand") \
    X(CV_OP_FLATTEN, "flatten") X(CV_OP_GATHER, "gather") X(CV_OP_RESHAPE, "reshape") \
    X(CV_OP_SQUEEZE, "squeeze") X(CV_OP_UNSQUEEZE, "unsqueeze") \
    X(CV_OP_CLIP, "clip") X(CV_OP_CONCAT, "concat") X(CV_OP_CONV2D, "conv2d") X(CV_OP_CONV_TRANSPOSE2D, "conv_transpose2d") \
    X(CV_OP_DIV, "div") X(CV_OP_ERF, "erf") X(CV_OP_GEMM, "gemm") \
    X(CV_OP_GLOBAL_AVG_POOL, "global_avg_pool") X(CV_OP_MATMUL, "matmul") \
    X(CV_OP_MAX_POOL2D, "max_pool2d") X(CV_OP_MUL, "mul") X(CV_OP_POW, "pow") \
    X(CV_OP_QCONV2D, "qconv2d") X(CV_OP_REDUCE_MEAN, "reduce_mean") X(CV_OP_RELU, "relu") \
    X(CV_OP_SOFTMAX, "softmax") X(CV_OP_TANH, "tanh") X(CV_OP_TRANSPOSE, "transpose") \
    X(CV_OP_SIGMOID, "sigmoid") X(CV_OP_HARD_SIGMOID, "hard_sigmoid") \
    X(CV_OP_WHERE, "where")
#define CV_OP_ID_ENUM_(id, name) id,
typedef enum cv_op_id { CV_OP_IDS(CV_OP_ID_ENUM_) CV_OP_ID__COUNT } cv_op_id;
#undef CV_OP_ID_ENUM_
/* The table's entry for id (NULL only if the list above names a missing op). */
const cv_op_def *cv_op_def_of(cv_op_id id);
/* Whether op is a `id` op (false for NULL and for unknown ops). */
bool cv_op_is(const cv_op *op, cv_op_id id);
/* Whether v is a result of a `id` op. */
bool cv_value_is(const cv_value *v, cv_op_id id);

int cv_op_def_count(void);
const cv_op_def *cv_op_def_at(int i);
const cv_attr_schema *cv_op_def_attr(const cv_op_def *def, const char *name, int *index);

/* Runs the shape function of op with operand types `in` into `out`. */
int cv_infer_op(const cv_op *op, const cv_type *in, cv_type *out, cv_module *m, cv_diag *d);
/* The same with the symbols' run-time values (see cv_infer_ctx.look). */
int cv_infer_op_bound(const cv_op *op, const cv_type *in, cv_type *out, cv_module *m,
                      cv_dim_lookup look, void *look_ctx, cv_diag *d);

/* ---- tensors ------------------------------------------------------------ */

/* Sets dtype/shape and mallocs zeroed data (owned by the caller: free with
 * cv_tensor_free).  Returns -1 on overflow or allocation failure. */
int cv_tensor_alloc(cv_tensor *t, cv_dtype dt, int rank, const int64_t *dims);
void cv_tensor_free(cv_tensor *t);
size_t cv_tensor_nbytes(const cv_tensor *t);
double cv_tensor_get(const cv_tensor *t, int64_t i);
void cv_tensor_set(cv_tensor *t, int64_t i, double v);     /* rounds/casts to dtype */
int64_t cv_tensor_get_i64(const cv_tensor *t, int64_t i);
void cv_tensor_set_i64(cv_tensor *t, int64_t i, int64_t v);
/* All elements as doubles in a scratch arena. */
double *cv_tensor_to_f64(const cv_tensor *t, cv_arena *a);
void cv_tensor_from_f64(cv_tensor *t, const double *v);

/* ---- facts about symbols (ir/facts.c) ----------------------------------- */

/* Records sym <= max (keeping the tightest bound per symbol).  -1 on OOM. */
int cv_module_add_fact(cv_module *m, const char *sym, int64_t max, const char *why);
/* The module's facts (*out valid until the module is freed); the count. */
int cv_module_facts(const cv_module *m, const cv_sym_fact **out);
/* Derives the facts f's ops imply: a gather from a param of static extent E
 * whose indices are range(S) (through reshape/unsqueeze/expand) implies
 * start + (S-1)*delta < E.  Returns the number added, -1 on OOM. */
int cv_func_derive_facts(cv_func *f);
/* Checks the facts against the symbols' values (look); the first one
 * broken is CV3013 naming the input that binds the symbol (found in f's
 * signature), the symbol and the bound. */
int cv_func_check_facts(const cv_func *f, cv_dim_lookup look, void *ctx, cv_diag *d);

/* ---- text form, verifier, interpreter ----------------------------------- */

/* Constants of at most this many bytes (one scalar: an epsilon, a scale, a
 * clip bound) stay in the generated code of the CPU targets, where the
 * optimiser folds them into instructions, so their values are part of the
 * code's cache key; every larger constant (a bias of a few channels too: a
 * retrain changes those) goes to the weights object <name>_weights.o, whose
 * bytes the code never sees.  compile/ draws the same line between a
 * model's structure and its weights. */
enum { CV_INLINE_CONST_MAX = 8 };

/* CV_PRINT_NO_WEIGHTS: every param over CV_INLINE_CONST_MAX bytes written
 * as weights("cuvil-weight", "") (its type kept): the program's structure
 * and the constants that reach code, never the weights' values. */
enum { CV_PRINT_NO_LOC = 1u << 0, CV_PRINT_NO_WEIGHTS = 1u << 1 };
/* Returns a malloc'd string (caller frees). */
char *cv_module_print(const cv_module *m, unsigned flags);
/* Parses CU-IR text.  Returns NULL after reporting syntax errors to d. */
cv_module *cv_cuir_parse(const char *text, size_t len, const char *filename, cv_diag *d);

enum { CV_VERIFY_STRICT = 1u << 0 };
/* Checks SSA, operand counts, attributes, dtypes and shapes; reports every
 * independent error.  Returns 0 when no error was found. */
int cv_verify(cv_module *m, unsigned flags, cv_diag *d);

/* Reads weights(...) params from safetensors files found relative to
 * base_dir, refusing paths that leave it. */
int cv_module_load_weights(cv_module *m, const char *base_dir, cv_diag *d);

/* Runs f on inputs (in signature order).  outputs[i] are allocated by the
 * interpreter (caller frees with cv_tensor_free). */
int cv_interp_run(const cv_func *f, const cv_tensor *inputs, int n_inputs,
                  cv_tensor *outputs, cv_diag *d);

/* Evaluates a value that depends on no function input (a constant
 * subgraph: shape arithmetic over params) with the reference kernels, for
 * import-time folding.  Returns 0 with *out allocated (caller frees), 1 when
 * v is not such a constant (it reaches an input, a symbolic shape, an op
 * without a kernel, more than 4096 ops, or a result over max_numel
 * elements), -1 when a kernel fails. */
int cv_interp_eval_value(const cv_func *f, const cv_value *v, int64_t max_numel, cv_tensor *out);

#endif
