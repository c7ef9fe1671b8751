/* Semantic analysis and lowering of the model language.  A model is a
 * program that runs at compile time: module constants, helper calls
 * (inlined), loops over ranges (unrolled) and constant ifs are evaluated
 * here, and every tensor operation they perform becomes a CU-IR op built
 * through the builder (ir.h).  Values are therefore compile-time Python
 * values (ints, floats, strings, tuples, functions...) or tensors (a CU-IR
 * value).  A value that could not be computed is an error value carrying
 * the id of the diagnostic that explains it; using it reports nothing new,
 * so one mistake is one root cause. */
#ifndef CV_DSL_SEMA_H
#define CV_DSL_SEMA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/diag.h"
#include "common/safetensors.h"
#include "compiler-core/frontends/dsl/ast.h"
#include "compiler-core/ir/ir.h"

enum {
    DSL_MAX_INLINE_DEPTH = 64,      /* helper calls inside helper calls */
    DSL_MAX_UNROLL = 4096,          /* iterations of one loop, elements of one range */
    DSL_MAX_STEPS = 1000000,        /* statements and expressions evaluated per file */
    DSL_MAX_OPS = 100000,           /* CU-IR ops per file */
    DSL_MAX_SEQ = 65536,            /* elements of a tuple or list */
    DSL_MAX_NEST = 1500,            /* nested evaluations and blocks, across inlined helpers */
};

/* On the evaluator's helpers: inlined into the recursive dispatcher, their
 * locals would widen every level of a deep expression's recursion (under
 * ASan, from about 200 bytes a level to over 1 KiB). */
#define DSL_NOINLINE __attribute__((noinline))

typedef enum dsl_vkind {
    DSL_V_ERROR,    /* root: the diagnostic that explains it */
    DSL_V_NONE, DSL_V_BOOL, DSL_V_INT, DSL_V_FLOAT, DSL_V_STR,
    DSL_V_TUPLE, DSL_V_LIST,
    DSL_V_DIM,      /* a symbolic dimension: s */
    DSL_V_TENSOR,   /* t */
    DSL_V_FUNC,     /* a helper def: fn, scope */
    DSL_V_MODULE,   /* the cuvil module */
    DSL_V_OP,       /* cvl.<op>: op */
    DSL_V_MODEL,    /* cvl.model, the decorator */
    DSL_V_PARAMS,   /* the weights namespace p, or p.<prefix>: s = prefix ("" for p), at = origin */
    DSL_V_BUILTIN,  /* i = dsl_builtin */
    DSL_V_DTYPE,    /* dt */
} dsl_vkind;

typedef enum dsl_builtin {
    DSL_B_RANGE, DSL_B_LEN, DSL_B_MIN, DSL_B_MAX, DSL_B_ABS, DSL_B_INT, DSL_B_FLOAT, DSL_B_BOOL,
    DSL_B_TUPLE, DSL_B_LIST, DSL_B_ZIP, DSL_B_ENUMERATE, DSL_B_SUM, DSL_B_COUNT
} dsl_builtin;

struct dsl_scope;

typedef struct dsl_val {
    dsl_vkind kind;
    int root;                   /* ERROR */
    int64_t i;                  /* BOOL, INT, BUILTIN */
    double f;                   /* FLOAT */
    const char *s;              /* STR (slen bytes), DIM symbol, PARAMS prefix */
    size_t slen;
    struct dsl_val **items;     /* TUPLE, LIST */
    int n;
    cv_value *t;                /* TENSOR */
    const dsl_node *fn;         /* FUNC */
    struct dsl_scope *scope;    /* FUNC: where it was defined */
    const cv_op_def *op;        /* OP */
    cv_dtype dt;                /* DTYPE */
    const dsl_node *at;         /* PARAMS: the expression that named it */
} dsl_val;

typedef struct dsl_binding {
    const char *name;
    dsl_val *val;
} dsl_binding;

typedef struct dsl_scope {
    dsl_binding *v;             /* sema-arena-owned */
    int n, cap;
    struct dsl_scope *parent;
} dsl_scope;

typedef enum dsl_flow { DSL_FLOW_NEXT, DSL_FLOW_RETURN, DSL_FLOW_BREAK, DSL_FLOW_CONTINUE } dsl_flow;

typedef struct dsl_frame {
    dsl_scope *scope;
    dsl_val *ret;
    const dsl_node *ret_node;   /* the return statement that set ret */
    int ret_root;               /* a skipped (erroneous) branch may have returned */
    int loops;                  /* enclosing loops in this function */
} dsl_frame;

typedef struct dsl_inline {
    const dsl_node *fn, *call;
} dsl_inline;

typedef struct dsl_weight_use {
    const char *key;
    cv_value *v;
} dsl_weight_use;

typedef struct dsl_reported {
    int code, line, col, id;
    uint64_t msg_hash;
} dsl_reported;

typedef struct dsl_sema {
    cv_arena *a;                /* values, scopes, strings: freed by the caller */
    cv_diag *d;
    const char *file;           /* spans */
    const char *loc_file;       /* loc(...) on ops: the file's base name */
    const char *base_dir;       /* weights are resolved inside it */
    cv_module *m;
    cv_func *f;                 /* the model being lowered; NULL at module level */
    dsl_scope *globals;
    dsl_inline stack[DSL_MAX_INLINE_DEPTH];
    int depth;
    /* The current model's weights. */
    cv_safetensors *st;         /* owned; closed when the model is done */
    const char *weights_name;   /* as written in weights= */
    int weights_root;           /* diagnostic explaining why p.* is unusable, or 0 */
    dsl_weight_use *uses;       /* sema-arena-owned */
    int n_uses, cap_uses;
    dsl_reported *reported;     /* sema-arena-owned */
    int n_reported, cap_reported;
    /* Models found at module level: the def and its @cvl.model(...) call. */
    const dsl_node **models, **model_decos;   /* sema-arena-owned */
    int n_models, cap_models;
    long steps;
    int nest;                   /* current evaluation depth (bounds the C stack) */
    int n_ops;
    int budget_id;              /* the too-large diagnostic, once reported */
} dsl_sema;

/* ---- diagnostics (sema_diag.c) ------------------------------------------ */

/* Reports an error at node `at` with its AST path, notes the helper calls it
 * was inlined through, and returns its id.  The same error at the same place
 * (a loop body, a helper called twice) is reported once; a different error
 * at the same place is marked as caused by the first. */
int dsl_error(dsl_sema *s, int code, const dsl_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds a note to diagnostic id. */
void dsl_note(dsl_sema *s, int id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The closest of n candidates to `name` (edit distance), or NULL. */
const char *dsl_suggest(const char *name, const char *const *cands, int n);
/* Counts a step; false (after reporting once) when the budget is spent. */
bool dsl_step(dsl_sema *s, const dsl_node *at);

/* ---- values (sema_value.c) ---------------------------------------------- */

dsl_val *dsl_v_new(dsl_sema *s, dsl_vkind k);
dsl_val *dsl_v_error(dsl_sema *s, int root);
dsl_val *dsl_v_none(dsl_sema *s);
dsl_val *dsl_v_bool(dsl_sema *s, bool b);
dsl_val *dsl_v_int(dsl_sema *s, int64_t i);
dsl_val *dsl_v_float(dsl_sema *s, double f);
dsl_val *dsl_v_str(dsl_sema *s, const char *p, size_t n);
dsl_val *dsl_v_seq(dsl_sema *s, dsl_vkind k, dsl_val **items, int n);
dsl_val *dsl_v_tensor(dsl_sema *s, cv_value *t);
dsl_val *dsl_v_dim(dsl_sema *s, cv_dim d);
/* "int", "tensor f32[N,4]", "tuple of 3", ... for messages. */
void dsl_v_describe(const dsl_val *v, char *buf, size_t size);
bool dsl_v_is_number(const dsl_val *v);        /* bool, int, float */
double dsl_v_num(const dsl_val *v);
/* Python truthiness of a compile-time value; false for tensors and dims. */
bool dsl_v_truth(const dsl_val *v, bool *known);
/* The first error value among vals (or NULL): its root. */
int dsl_v_first_error(dsl_val *const *vals, int n);
/* Python ==, for compile-time values; *known false when it cannot tell. */
bool dsl_v_equal(const dsl_val *a, const dsl_val *b, bool *known);

/* Scopes. */
dsl_scope *dsl_scope_new(dsl_sema *s, dsl_scope *parent);
void dsl_scope_set(dsl_sema *s, dsl_scope *sc, const char *name, dsl_val *v);
dsl_val *dsl_scope_get(const dsl_scope *sc, const char *name);
/* Every name visible from sc (plus builtins), for suggestions. */
int dsl_scope_names(dsl_sema *s, const dsl_scope *sc, const char ***out);

/* ---- evaluation (sema_expr.c, sema_ops.c, sema_call.c) ------------------ */

dsl_val *dsl_eval(dsl_sema *s, dsl_frame *fr, const dsl_node *e);
/* Compile-time operators (ints, floats, strings, tuples); tensors go to
 * dsl_tensor_binop. */
dsl_val *dsl_binop(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *l, dsl_val *r);
dsl_val *dsl_call(dsl_sema *s, dsl_frame *fr, const dsl_node *call);
dsl_val *dsl_call_builtin(dsl_sema *s, const dsl_node *call, dsl_builtin b, dsl_val **args, int n);
/* A scope holding the builtins and __name__, the parent of the globals. */
dsl_scope *dsl_builtins_scope(dsl_sema *s);
/* Indexing and slicing of tuples, lists, strings and tensors. */
dsl_val *dsl_subscript(dsl_sema *s, dsl_frame *fr, const dsl_node *e, dsl_val *base);
/* Iterates a compile-time iterable (range, tuple, list): *items, *n.
 * Tensors and dims report `tensor_code` naming `what`. */
bool dsl_iterate(dsl_sema *s, const dsl_node *at, dsl_val *it, int tensor_code, const char *what,
                 dsl_val ***items, int *n, int *root);

/* "float32" or "f32" (numpy/torch or CU-IR spelling); CV_DT_INVALID if unknown. */
cv_dtype dsl_dtype_named(const char *name);

/* ---- statements (sema_stmt.c) -------------------------------------------- */

dsl_flow dsl_exec_block(dsl_sema *s, dsl_frame *fr, const dsl_list *body);
/* Binds value to an assignment target (Name, Tuple/List unpacking). */
void dsl_assign(dsl_sema *s, dsl_frame *fr, const dsl_node *target, dsl_val *v);
/* Runs a helper def with bound arguments (sema_call.c). */
dsl_val *dsl_inline_call(dsl_sema *s, const dsl_node *call, dsl_val *fn, dsl_val **args, int n,
                         const dsl_node *const *kw_nodes, dsl_val **kw_vals, int n_kw);

/* ---- tensors (sema_tensor.c, sema_lower.c, sema_weights.c) --------------- */

/* An attribute value for dsl_emit: the builder's kinds. */
typedef struct dsl_attr {
    const char *name;
    cv_attr_kind kind;
    int64_t i;
    double f;
    const char *str;
    int64_t *ints;              /* sema-arena-owned, n entries */
    double *floats;
    int n;
    cv_dtype dt;
} dsl_attr;

/* Builds op `opname` on tensor operands (which must not be errors), with
 * loc at `at`.  Shape errors of the op are reported at `at` with its path
 * (weights among the operands are named).  Returns a tensor, a tuple of
 * tensors when n_results > 1, or an error value. */
dsl_val *dsl_emit(dsl_sema *s, const dsl_node *at, const char *opname, dsl_val **operands,
                  int n_operands, const dsl_attr *attrs, int n_attrs, int n_results);
/* A tensor from a Python number, of the given dtype (rank 0). */
dsl_val *dsl_scalar_tensor(dsl_sema *s, const dsl_node *at, const dsl_val *num, cv_dtype dt);
/* Operators with at least one tensor operand. */
dsl_val *dsl_tensor_binop(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *l, dsl_val *r);
dsl_val *dsl_tensor_unop(dsl_sema *s, const dsl_node *at, dsl_exop op, dsl_val *v);
/* x.T, x.shape, x.ndim, x.dtype. */
dsl_val *dsl_tensor_member(dsl_sema *s, const dsl_node *at, dsl_val *t, const char *name);
/* One item of a subscript: x[1], x[1:3:2], x[...], x[None]. */
typedef enum { DSL_IX_INT, DSL_IX_SLICE, DSL_IX_ELLIPSIS, DSL_IX_NEWAXIS } dsl_ix_kind;
typedef struct dsl_index {
    dsl_ix_kind kind;
    int64_t i;                  /* INT */
    bool has_lo, has_hi;        /* SLICE */
    int64_t lo, hi, step;
    const dsl_node *node;
} dsl_index;

/* x[...] with constant indices and slices. */
dsl_val *dsl_tensor_index(dsl_sema *s, const dsl_node *at, dsl_val *t, const dsl_index *ix, int n);
/* cvl.<op>(...): operands, positional and keyword attributes by the schema. */
dsl_val *dsl_call_op(dsl_sema *s, const dsl_node *call, const cv_op_def *def, dsl_val **args,
                     int n, const dsl_node *const *kw_nodes, dsl_val **kw_vals, int n_kw);
/* Weights: p.<name> and p[...] extend the prefix; a prefix naming a tensor
 * of the weights file becomes that tensor. */
dsl_val *dsl_params_child(dsl_sema *s, const dsl_node *at, const dsl_val *p, const char *name);
/* Whether a params prefix names a tensor of the weights file. */
bool dsl_params_is_tensor(dsl_sema *s, const dsl_val *p);
/* Makes v a tensor if it is a params prefix naming a weight (reports
 * CV3201 otherwise); other values are returned unchanged. */
dsl_val *dsl_resolve(dsl_sema *s, dsl_val *v);
/* Opens weights_file (relative to the model file) for the current model. */
void dsl_weights_open(dsl_sema *s, const dsl_node *at, const char *weights_file);
void dsl_weights_close(dsl_sema *s);

/* ---- models (sema_model.c) ----------------------------------------------- */

/* Runs a module: top-level statements, then lowers every @cvl.model. */
void dsl_run_module(dsl_sema *s, const dsl_node *mod);

#endif
