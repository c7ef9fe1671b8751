/* Internal to the ONNX front end: the import context, constants known at
 * import time, and the helpers the op lowerings share. */
#ifndef CV_ONNX_INTERNAL_H
#define CV_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler-core/frontends/onnx/onnx_import.h"
#include "onnx/onnx.pb-c.h"

/* ONNX TensorProto.DataType values this front end names. */
enum {
    ONNX_DT_UNDEFINED = 0, ONNX_DT_FLOAT = 1, ONNX_DT_UINT8 = 2, ONNX_DT_INT8 = 3,
    ONNX_DT_UINT16 = 4, ONNX_DT_INT16 = 5, ONNX_DT_INT32 = 6, ONNX_DT_INT64 = 7,
    ONNX_DT_STRING = 8, ONNX_DT_BOOL = 9, ONNX_DT_FLOAT16 = 10, ONNX_DT_DOUBLE = 11,
    ONNX_DT_UINT32 = 12, ONNX_DT_UINT64 = 13, ONNX_DT_BFLOAT16 = 16,
};

#define ONNX_MAX_NESTING 64
/* Graphs a body (If, Loop, Scan) may be nested in. */
#define ONNX_MAX_SCOPES 8
/* Largest tensor the importer computes itself (masks, folded values). */
#define ONNX_CONST_MAX_NUMEL (1 << 25)

/* A tensor known at import time (initializer, Constant, folded shape
 * arithmetic).  Shape values may hold symbolic elements: syms[i] names the
 * symbol of element i (NULL: data[i] is known). */
typedef struct onnx_const {
    cv_dtype dt;
    int rank;
    int64_t dims[CV_MAX_RANK];
    int64_t numel;
    void *data;             /* little-endian elements: in the module arena, or borrowed
                               from the unpacked ModelProto (raw_data), which
                               outlives the import; never written after creation */
    const char **syms;      /* arena-owned, numel entries, or NULL */
    bool mapped;            /* data is a read-only view of the model file (check-only
                               import), maybe unaligned: only ever made a param */
    uint8_t **own;          /* the raw_data slot of the unpacked initializer data
                               borrows (malloc'd by protobuf-c), or NULL: made a param,
                               the module takes the buffer over instead of copying it */
} onnx_const;

/* What an ONNX value name stands for during import. */
typedef struct onnx_val {
    const char *name;       /* ONNX name (arena) */
    cv_value *v;            /* the CU-IR value once materialized */
    onnx_const *c;          /* known at import time, or NULL */
    cv_type type;           /* dtype CV_DT_INVALID while unknown */
    bool poisoned;          /* its producer failed: consumers stay quiet */
    bool not_const;         /* the interpreter found it depends on an input */
    bool graph_input;
    int producer;           /* node index, -1 for graph inputs/initializers */
    /* Sequences and optionals exist only at import time (onnx_lower_seq.c):
     * a sequence is its list of tensor values, an optional holds 0 or 1
     * value (a tensor or a sequence). */
    int kind;               /* ONNX_VAL_TENSOR, ONNX_VAL_SEQ or ONNX_VAL_OPT */
    struct onnx_val **elems;  /* arena; the elements, shared (never written) */
    int n_elems;
} onnx_val;

enum { ONNX_VAL_TENSOR = 0, ONNX_VAL_SEQ = 1, ONNX_VAL_OPT = 2 };
/* Most elements a sequence may have. */
#define ONNX_MAX_SEQ 1024

/* String-keyed hash map (open addressing); the table is malloc'd by the
 * map, keys and values are owned by the caller. */
typedef struct onnx_map {
    const char **keys;
    void **vals;
    size_t cap, count;
} onnx_map;

void *onnx_map_get(const onnx_map *m, const char *key);
/* Returns 1 if inserted, 0 if the key exists (kept), -1 on OOM. */
int onnx_map_put(onnx_map *m, const char *key, void *val);
void onnx_map_free(onnx_map *m);

typedef struct onnx_ctx {
    cv_module *m;
    cv_func *f;
    cv_diag *d;
    const Onnx__ModelProto *model;
    const cv_onnx_options *opts;
    cv_arena *a;            /* the module's arena */
    const char *path;       /* model path for diagnostics ("<memory>") */
    const char *base_dir;   /* external data root, NULL when refused */
    const uint8_t *map;     /* check-only import: the mapped file (the module owns it) */
    size_t map_len;
    int64_t opset;          /* default-domain opset */
    onnx_map vals;          /* ONNX name -> onnx_val (of the graph being lowered) */
    const onnx_map *outer[ONNX_MAX_SCOPES];  /* the enclosing graphs' vals, outermost first */
    int n_outer;
    onnx_map syms;          /* dim_param -> interned CU-IR symbol */
    onnx_map sym_values;    /* dim_param -> int64_t (arena) fixed by a bound sequence input */
    onnx_map scalars;       /* "f32:0.5" -> cv_value of a scalar param */
    int next_sym;
    /* the node being lowered */
    const Onnx__NodeProto *node;
    int node_index;
    const char *label;      /* node name or "op#<index>" */
    const struct onnx_op_entry *entry;  /* its registry entry */
} onnx_ctx;

/* ---- diagnostics (onnx_diag.c) ---- */
/* Reports an error tied to the current node (if any); returns -1. */
int onnx_err(onnx_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Errors the IR builder raised for the current node (entries from index
 * first on) get the node's path instead of an IR one, and a note naming it. */
void onnx_node_paths(onnx_ctx *c, int first);
/* An error at the file level with an explicit IR path. */
int onnx_err_at(cv_diag *d, const char *file, const char *path, int code,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- protobuf (onnx_wire.c) ---- */
/* Checks the wire format of buf against desc before protobuf-c unpacks it:
 * complete fields, expected wire types, bounded nesting. */
int onnx_wire_check(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                    const char *file, cv_diag *d);

/* ---- checking without copying the weights (onnx_strip.c) ---- */
/* Initializer #init (in file order) has its raw_data at file[off, off + len). */
typedef struct onnx_hole {
    size_t init, off, len;
} onnx_hole;

typedef struct onnx_stripped {
    uint8_t *buf;           /* the ModelProto without large raw_data payloads (malloc'd) */
    size_t len;
    onnx_hole *holes;       /* malloc'd */
    size_t n_holes, cap_holes;
    size_t n_init;
} onnx_stripped;

/* Smaller raw_data is unpacked as usual (folding may read it). */
#define ONNX_STRIP_MIN_BYTES ((size_t)64 << 10)

/* Rewrites a wire-checked ModelProto without the payloads of initializer
 * raw_data fields of min_bytes or more.  -1 on a malformed buffer or OOM. */
int onnx_strip_model(const void *buf, size_t len, size_t min_bytes, onnx_stripped *out);
/* Points the emptied raw_data of mp (unpacked from s->buf) into file; must
 * be undone by onnx_strip_detach before mp is freed.  -1 if mp does not
 * match s (nothing is left attached). */
int onnx_strip_attach(Onnx__ModelProto *mp, const onnx_stripped *s, const void *file);
void onnx_strip_detach(Onnx__ModelProto *mp, const onnx_stripped *s, const void *file);
void onnx_strip_free(onnx_stripped *s);

/* ---- tensors and types (onnx_tensor.c) ---- */
/* Maps an ONNX element type; CV_DT_INVALID when CU-IR has no equivalent. */
cv_dtype onnx_dtype(int32_t onnx_type);
const char *onnx_dtype_name(int32_t onnx_type);
/* Decodes t into out (data in arena a, or borrowed from t's raw_data: t
 * must outlive out).  base_dir anchors external data (NULL refuses it).
 * what names the tensor in diagnostics. */
int onnx_tensor_decode(const Onnx__TensorProto *t, cv_arena *a, const char *base_dir,
                       const char *file, const char *what, onnx_const *out, cv_diag *d);

/* ---- constants (onnx_const.c) ---- */
onnx_const *onnx_const_new(onnx_ctx *c, cv_dtype dt, int rank, const int64_t *dims);
int64_t onnx_const_i64(const onnx_const *k, int64_t i);
double onnx_const_f64(const onnx_const *k, int64_t i);
void onnx_const_set_i64(onnx_const *k, int64_t i, int64_t v);
void onnx_const_set_f64(onnx_const *k, int64_t i, double v);
/* Reads a 0/1-D integer constant into out (at most max); -1 if symbolic. */
int onnx_const_ints(const onnx_const *k, int64_t *out, int max);
bool onnx_const_is_int(const onnx_const *k);
void onnx_type_of_const(const onnx_const *k, cv_type *t);

/* ---- import-time evaluation (onnx_fold.c) ---- */
/* Small enough to evaluate at import time. */
bool onnx_foldable(const onnx_const *k);
/* A strided view of src copied into a new constant (symbols kept). */
onnx_const *onnx_fold_view(onnx_ctx *c, const onnx_const *src, int rank, const int64_t *dims,
                           const int64_t *strides, int64_t offset);
/* Same data, new dims (element counts must agree). */
onnx_const *onnx_fold_reshape(onnx_ctx *c, const onnx_const *src, int rank, const int64_t *dims);
onnx_const *onnx_fold_expand(onnx_ctx *c, const onnx_const *src, int rank, const int64_t *dims);
/* Add Sub Mul Div Max Min Equal Less Greater; NULL when not foldable. */
onnx_const *onnx_fold_binary(onnx_ctx *c, const char *op_type, const onnx_const *a,
                             const onnx_const *b);
onnx_const *onnx_fold_concat(onnx_ctx *c, const onnx_const *const *in, int n, int axis);
onnx_const *onnx_fold_gather(onnx_ctx *c, const onnx_const *src, const onnx_const *idx, int axis);
/* ONNX Shape of a value of type t (symbolic dims become symbolic elements). */
onnx_const *onnx_fold_shape(onnx_ctx *c, const cv_type *t, int64_t start, int64_t end);
/* Element i of an integer shape value as a dim: its integer, or the symbol
 * or expression it holds. */
cv_dim onnx_const_dim(const onnx_const *k, int64_t i);
/* numpy broadcast of two static shapes; -1 when incompatible. */
int onnx_broadcast_dims(int ra, const int64_t *da, int rb, const int64_t *db, int *rank,
                        int64_t *out);

/* ---- values (onnx_values.c) ---- */
onnx_val *onnx_val_get(onnx_ctx *c, const char *name);
onnx_val *onnx_val_new(onnx_ctx *c, const char *name, int producer);
/* Node input i, or NULL when absent or named "". */
onnx_val *onnx_in(onnx_ctx *c, int i);
int onnx_n_in(const onnx_ctx *c);
/* Node input i as a CU-IR value, materializing a constant as a param. */
cv_value *onnx_in_value(onnx_ctx *c, int i);
cv_value *onnx_materialize(onnx_ctx *c, onnx_val *v);
/* Node input i's constant, or NULL (after a CV4305 report unless optional). */
const onnx_const *onnx_in_const(onnx_ctx *c, int i, const char *role);
/* An int list given as attribute `attr` before opset `input_since` and as
 * constant input `input` from then on.  Returns the count, -1 when absent,
 * -2 after an error (run-time or symbolic values are CV4305). */
int onnx_ints_arg(onnx_ctx *c, int input, const char *attr, int input_since, int64_t *out,
                  int max);
/* Binds node output i to a CU-IR value or a constant. */
int onnx_bind_value(onnx_ctx *c, int i, cv_value *v);
int onnx_bind_const(onnx_ctx *c, int i, onnx_const *k);
/* A legal CU-IR identifier derived from an ONNX name, unique in the func. */
const char *onnx_ident(onnx_ctx *c, const char *name);
/* The CU-IR symbol for a dim_param (sanitized, interned), or a fresh one. */
const char *onnx_symbol(onnx_ctx *c, const char *dim_param);
/* Converts a ValueInfoProto's tensor type; reports and returns -1. */
int onnx_type_from_proto(onnx_ctx *c, const Onnx__TypeProto *tp, const char *what, cv_type *out);

/* ---- building ops (onnx_emit.c) ---- */
/* Starts a CU-IR op with loc("<node label>").  NULL operands refused. */
cv_op *onnx_op(onnx_ctx *c, const char *opname, cv_value *const *operands, int n);
/* Finishes op with n results; NULL after an error. */
cv_value *onnx_finish(onnx_ctx *c, cv_op *op);
int onnx_finish_n(onnx_ctx *c, cv_op *op, int n, cv_value **out);
/* One-shot helpers: op(a) / op(a, b) with no attributes. */
cv_value *onnx_unary(onnx_ctx *c, const char *opname, cv_value *a);
cv_value *onnx_binary(onnx_ctx *c, const char *opname, cv_value *a, cv_value *b);
/* A scalar constant param of dtype dt. */
cv_value *onnx_scalar(onnx_ctx *c, cv_dtype dt, double v);
cv_value *onnx_where(onnx_ctx *c, cv_value *cond, cv_value *a, cv_value *b);
/* op(x) with one int-list attribute. */
/* x sliced on n axes: [starts, ends) with steps (NULL = 1). */
cv_value *onnx_slice(onnx_ctx *c, cv_value *x, int n, const int64_t *axes, const int64_t *starts,
                     const int64_t *ends, const int64_t *steps);
/* x[start:end] along one axis. */
cv_value *onnx_slice1(onnx_ctx *c, cv_value *x, int64_t axis, int64_t start, int64_t end);
cv_value *onnx_op_ints(onnx_ctx *c, const char *op, cv_value *x, const char *attr,
                       const int64_t *v, int n);
cv_value *onnx_sum_axis(onnx_ctx *c, cv_value *x, int64_t axis, int keepdims);
cv_value *onnx_sum_all(onnx_ctx *c, cv_value *x);
/* 0, 1, ..., n-1 of dtype dt laid along `axis` of a rank-`rank` tensor. */
cv_value *onnx_iota(onnx_ctx *c, cv_dtype dt, int rank, int axis, int64_t n);
/* k as a param named after the node and `what` (NULL when k is NULL). */
cv_value *onnx_const_value(onnx_ctx *c, onnx_const *k, const char *what);
/* The static extent of x's dim `axis`, or a CV4305 report. */
int onnx_static_extent(onnx_ctx *c, const cv_value *x, int axis, int64_t *out);
/* Maps a possibly negative axis into [0, rank), or reports. */
int onnx_norm_axis(onnx_ctx *c, int64_t axis, int rank, int *out);

/* ---- node attributes (onnx_attr.c) ---- */
const Onnx__AttributeProto *onnx_attr(const onnx_ctx *c, const char *name);
int onnx_attr_int(onnx_ctx *c, const char *name, int64_t dflt, int64_t *out);
int onnx_attr_float(onnx_ctx *c, const char *name, double dflt, double *out);
/* String attribute (NUL-terminated in the arena) or dflt. */
int onnx_attr_string(onnx_ctx *c, const char *name, const char *dflt, const char **out);
/* Int list: count, -1 absent; reports and returns -2 on a bad type or > max. */
int onnx_attr_ints(onnx_ctx *c, const char *name, int64_t *out, int max);
int onnx_attr_floats(onnx_ctx *c, const char *name, double *out, int max);
/* Exactly n ints (window geometry: each in [dflt ? 1 : 0, 4096]); dflt each
 * when absent.  -1 after a report. */
int onnx_attr_ints_n(onnx_ctx *c, const char *name, int n, int64_t dflt, int64_t *out);

/* ---- sequences and optionals (onnx_lower_seq.c) ---- */
/* Binds node output i to a copy of src (tensor, sequence or optional). */
int onnx_bind_val(onnx_ctx *c, int i, const onnx_val *src);
/* A new sequence or optional value not entered in the name map. */
onnx_val *onnx_val_list(onnx_ctx *c, int kind, onnx_val *const *elems, int n);
/* A graph input of sequence or optional type, bound through the options'
 * bind_list to constants; returns 1 when not bound (then refused). */
int onnx_bind_list_input(onnx_ctx *c, int index, onnx_val *v, const Onnx__TypeProto *tp);
/* The tensors v stands for, in order (sequences and optionals flattened):
 * count, or -1 when more than max. */
int onnx_flatten(onnx_val *v, onnx_val **out, int max);

/* 3-D MaxPool/AveragePool as two 2-D pools (onnx_lower_pool3d.c). */
int onnx_lower_pool3d(onnx_ctx *c);
/* 3-D ConvTranspose as 2-D ones (onnx_lower_convt3d.c). */
int onnx_lower_conv_transpose3d(onnx_ctx *c);
/* MaxPool with its Indices output, 2-D windows (onnx_lower_pool_index.c). */
int onnx_lower_pool_indices(onnx_ctx *c);

/* ---- the op registry (onnx_ops.c) ---- */
typedef int (*onnx_lower_fn)(onnx_ctx *c);

typedef struct onnx_op_entry {
    const char *op_type;
    int since;              /* earliest opset whose semantics are implemented */
    onnx_lower_fn lower;
    const char *needs;      /* CU-IR ops required, space separated (NULL: none) */
    unsigned const_in;      /* bit i: input i must be known at import time */
} onnx_op_entry;

typedef struct onnx_op_family {
    const onnx_op_entry *entries;
    int count;
} onnx_op_family;

extern const onnx_op_family onnx_ops_elementwise;  /* onnx_lower_elementwise.c */
extern const onnx_op_family onnx_ops_nn;           /* onnx_lower_nn.c */
extern const onnx_op_family onnx_ops_shape;        /* onnx_lower_shape.c */
extern const onnx_op_family onnx_ops_const;        /* onnx_lower_const.c */
extern const onnx_op_family onnx_ops_norm;         /* onnx_lower_norm.c */
extern const onnx_op_family onnx_ops_resize;       /* onnx_lower_resize.c */
extern const onnx_op_family onnx_ops_select;       /* onnx_lower_select.c */
extern const onnx_op_family onnx_ops_reduce;       /* onnx_lower_reduce.c */
extern const onnx_op_family onnx_ops_quant;        /* onnx_lower_quant.c */
extern const onnx_op_family onnx_ops_signal;       /* onnx_lower_signal.c */
extern const onnx_op_family onnx_ops_rnn;          /* onnx_lower_rnn.c */
extern const onnx_op_family onnx_ops_scatter;      /* onnx_lower_scatter.c */
extern const onnx_op_family onnx_ops_linalg;       /* onnx_lower_linalg.c */
extern const onnx_op_family onnx_ops_gridsample;   /* onnx_lower_gridsample.c */
extern const onnx_op_family onnx_ops_einsum;       /* onnx_lower_einsum.c: Einsum, CumSum */
extern const onnx_op_family onnx_ops_control;      /* onnx_lower_control.c: If, Loop, Scan */
extern const onnx_op_family onnx_ops_tfidf;        /* onnx_lower_tfidf.c: TfIdfVectorizer */
extern const onnx_op_family onnx_ops_seq;          /* onnx_lower_seq.c: sequences, optionals */
extern const onnx_op_family onnx_ops_train;        /* onnx_lower_train.c (training domain) */

/* The entry for a default-domain op type, or NULL. */
const onnx_op_entry *onnx_op_find(const char *op_type);
/* "", "ai.onnx" (or NULL). */
bool onnx_domain_is_default(const char *domain);
/* The entry for node n in its domain (default or the preview training
 * domain, whose ops live in onnx_ops_train), or NULL. */
#define ONNX_TRAINING_DOMAIN "ai.onnx.preview.training"
const onnx_op_entry *onnx_node_entry(const Onnx__NodeProto *n);
/* True when every CU-IR op the entry needs is in the op table. */
bool onnx_op_available(const onnx_op_entry *e);

/* ---- graph (onnx_graph.c, onnx_lower.c) ---- */
/* Registers every value, sorts the nodes into order[n_node] and reports
 * structural errors and every unsupported op. */
int onnx_check_graph(onnx_ctx *c, const Onnx__GraphProto *g, int *order);
/* Lowers one node whose outputs are registered (a body's node, by
 * onnx_lower_control.c); -1 after reporting. */
int onnx_lower_node(onnx_ctx *c, const Onnx__NodeProto *n, int index);
/* Lowers the nodes in order, then binds and checks the graph outputs. */
int onnx_lower_graph(onnx_ctx *c, const Onnx__GraphProto *g, const int *order);
/* The node's name, or "op#<index>" when it has none. */
const char *onnx_node_label(onnx_ctx *c, const Onnx__NodeProto *n, int index);
/* The opset version imported for a domain ("" = ai.onnx), -1 if none. */
int64_t onnx_domain_opset(const onnx_ctx *c, const char *domain);

#endif
