/* The kernel IR (KIR): how an op's codegen hook describes its computation,
 * independently of any backend.
 *
 * A hook builds one or more kernels.  A kernel is a statement tree (loop
 * nests over tensor elements, stores, locals, ifs, calls to a few runtime
 * routines such as the packed GEMM) over scalar expressions (index math,
 * loads, float and integer arithmetic, math functions, conversions).  A
 * kernel may declare a parallel extent: its body then runs once per item p in
 * [0, extent), spread over the artifact's thread pool.  The program (the
 * artifact's run function) is a list of kernel launches whose buffers are
 * bound to storage: model inputs and outputs, embedded weights, or offsets
 * in the one activation arena that memory planning lays out.
 *
 * Backends lower KIR: the LLVM backend to LLVM IR (backend/llvm/), the C99
 * backend to C, a CUDA backend later to NVPTX.  Hooks never see a backend.
 *
 * Types: every expression has a compute type (cv_kty).  Tensors of f32, f16
 * and bf16 load as F32, integer tensors as I64 (sign- or zero-extended), bool
 * tensors as BOOL; stores convert back with the interpreter's store rules
 * (cv_dtype_store: float to int saturates, int to int wraps). */
#ifndef CV_BACKEND_KERNEL_H
#define CV_BACKEND_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/fs.h"
#include "compiler-core/ir/ir.h"

typedef enum cv_kty {
    CV_KTY_VOID, CV_KTY_BOOL, CV_KTY_I64, CV_KTY_F32, CV_KTY_F64, CV_KTY_PTR
} cv_kty;

typedef enum cv_kop {
    /* unary */
    CV_KOP_NEG, CV_KOP_ABS, CV_KOP_NOT, CV_KOP_SQRT, CV_KOP_EXP, CV_KOP_LOG, CV_KOP_TANH,
    CV_KOP_ERF, CV_KOP_FLOOR, CV_KOP_CEIL, CV_KOP_ROUND_EVEN,
    CV_KOP_SIN, CV_KOP_COS, CV_KOP_TAN, CV_KOP_ASIN, CV_KOP_ACOS, CV_KOP_ATAN,
    CV_KOP_SINH, CV_KOP_COSH, CV_KOP_ASINH, CV_KOP_ACOSH, CV_KOP_ATANH,
    CV_KOP_ISNAN,
    /* binary, operands and result of one type; integer DIV/REM truncate and
     * must not see a zero divisor or INT64_MIN / -1 (see cv_k_idiv) */
    CV_KOP_ADD, CV_KOP_SUB, CV_KOP_MUL, CV_KOP_DIV, CV_KOP_REM,
    CV_KOP_MIN, CV_KOP_MAX,     /* floats: NaN if either operand is NaN */
    CV_KOP_FMIN, CV_KOP_FMAX,   /* floats only, C's fmin/fmax: NaN loses */
    CV_KOP_POW, CV_KOP_AND, CV_KOP_OR,
    /* comparisons -> BOOL; on floats false when either is NaN, except NE */
    CV_KOP_EQ, CV_KOP_NE, CV_KOP_LT, CV_KOP_LE, CV_KOP_GT, CV_KOP_GE,
    CV_KOP__COUNT
} cv_kop;

typedef enum cv_kexpr_kind {
    CV_KE_CONST_I, CV_KE_CONST_F, CV_KE_SYM, CV_KE_VAR, CV_KE_LOAD, CV_KE_ADDR,
    CV_KE_UN, CV_KE_BIN, CV_KE_CMP, CV_KE_SELECT, CV_KE_CAST, CV_KE_CONVERT,
    CV_KE_STOREPTR,
} cv_kexpr_kind;

/* Immutable; lives in the program's arena; may be shared (a DAG). */
typedef struct cv_kexpr {
    uint8_t kind;               /* cv_kexpr_kind */
    uint8_t ty;                 /* cv_kty of the value */
    uint8_t op;                 /* UN/BIN/CMP: cv_kop; LOAD, CONVERT: cv_dtype */
    int32_t id;                 /* SYM: symbol; VAR: variable; LOAD/ADDR: buffer slot;
                                   STOREPTR: storage id */
    int64_t i;                  /* CONST_I (BOOL constants are 0/1) */
    double f;                   /* CONST_F */
    const struct cv_kexpr *a, *b, *c;
} cv_kexpr;

enum { CV_K_MAX_DEPTH = 32, CV_K_MAX_SLOTS = 64, CV_K_MAX_VARS = 1024 };

typedef enum cv_kstmt_kind {
    CV_KS_FOR, CV_KS_IF, CV_KS_STORE, CV_KS_SET, CV_KS_CALL, CV_KS_LAUNCH,
} cv_kstmt_kind;

enum { CV_KFOR_INNER = 1u << 0 };   /* a hint: the innermost, contiguous loop */

typedef struct cv_kstmt {
    uint8_t kind;               /* cv_kstmt_kind */
    uint8_t flags;
    int32_t id;                 /* FOR, SET: variable; STORE: buffer slot; CALL: cv_krt;
                                   LAUNCH: kernel index */
    const cv_kexpr *a, *b;      /* FOR: lo, hi; IF: cond; STORE: index, value; SET: value;
                                   LAUNCH: extent (NULL: serial), grain */
    const cv_kexpr **args;      /* CALL arguments; LAUNCH: one STOREPTR per buffer slot */
    int n_args;
    struct cv_kstmt *body;      /* FOR body, IF then-branch */
    struct cv_kstmt *orelse;    /* IF else-branch */
    struct cv_kstmt *next;
} cv_kstmt;

/* Runtime routines kernels may call (compiler-core/runtime/cvrt.h); the
 * runtime context is passed implicitly as the first argument. */
typedef enum cv_krt {
    CV_KRT_SGEMM, CV_KRT_CONV2D,
    CV_KRT_CONV2D_P8,           /* cvrt_conv2d with weights packed at compile time */
    CV_KRT_DWCONV2D,            /* depthwise convolution, one filter per channel */
    CV_KRT_QCONV2D,             /* int8 convolution (cvrt_qconv2d) */
    CV_KRT_NCHWC_CONV2D,        /* blocked-layout convolution (cvrt_nchwc_conv2d) */
    CV_KRT_NCHWC_DWCONV2D,      /* blocked-layout depthwise convolution */
    CV_KRT_NCHWC_POOL2D,        /* blocked-layout pooling */
    CV_KRT_QDWCONV2D,           /* int8 depthwise convolution (cvrt_qdwconv2d) */
    CV_KRT_CONV2D_P8H,          /* cvrt_conv2d_p8 with f16/bf16 packed weights */
    CV_KRT_SGEMM_H,             /* cvrt_sgemm with f16/bf16 B (its brs slot: the kind) */
    CV_KRT_NCHWC_CONV2D_H,      /* cvrt_nchwc_conv2d with f16 weights (-p fp16) */
    CV_KRT_SGEMM_PB,            /* cvrt_sgemm with B packed at compile time (CPU LLVM targets) */
    CV_KRT_RNN,                 /* an RNN, LSTM or GRU over a run-time length (cvrt_rnn) */
    CV_KRT_ATTENTION,           /* fused attention (cvrt_attention; CPU LLVM targets) */
    CV_KRT_SGEMM_BF,            /* cvrt_sgemm with B in the bf16 pair form made at compile
                                   time (cvrt_sgemm_bf16; CPU LLVM targets) */
    CV_KRT__COUNT
} cv_krt;

typedef struct cv_krt_info {
    const char *name;           /* the C function */
    int n_args;                 /* after the context */
    const uint8_t *args;        /* cv_kty of each */
} cv_krt_info;

const cv_krt_info *cv_krt_get(cv_krt fn);
const char *cv_kop_name(cv_kop op);
const char *cv_kty_name(cv_kty t);
/* The compute type a tensor of dtype loads as. */
cv_kty cv_kty_of(cv_dtype dt);

/* ---- kernels and the program -------------------------------------------- */

typedef struct cv_kernel {
    const char *name;           /* "k3_conv2d": unique in the program */
    int n_slots;                /* buffer slots: kernel parameter i binds a storage */
    int *slot_store;            /* storage id of each slot */
    cv_dtype *slot_dtype;
    bool *slot_written;
    const cv_kexpr *extent;     /* NULL: serial, run once with p = 0 */
    const cv_kexpr *grain;      /* minimum items per chunk */
    int pvar;                   /* the variable holding p */
    int n_vars;
    cv_kty *var_ty;             /* by variable id */
    cv_kstmt *body;
    bool calls_runtime;
    /* What it implements (symbol maps, debug info): the index in f->ops of
     * the op whose hook made it (-1: a copy into an output), and the ops
     * fused into it as its epilogue, in order (indices; in the arena). */
    int op;
    const int *fused;
    int n_fused;
} cv_kernel;

typedef enum cv_kstore_kind {
    CV_KST_INPUT, CV_KST_OUTPUT, CV_KST_CONST, CV_KST_ARENA, CV_KST_VIEW
} cv_kstore_kind;

/* Where a tensor lives at run time. */
typedef struct cv_kstore {
    cv_kstore_kind kind;
    int index;                  /* INPUT/OUTPUT: position in the signature */
    int base;                   /* VIEW: the storage viewed (never itself a VIEW) */
    const cv_kexpr *byte_offset;    /* VIEW: offset into base, or NULL */
    cv_dtype dtype;
    cv_shape shape;             /* size = numel * dtype size */
    const void *data;           /* CONST: the bytes (program arena or module-owned) */
    size_t nbytes;              /* CONST */
    int first, last;            /* ARENA: steps (launch indices) it is live, -1 if unused */
    int cls;                    /* ARENA, after planning: size class */
    int64_t offset;             /* ARENA, after planning: offset in units of the class */
} cv_kstore;

/* A size class of the arena: storages whose byte size is a constant times
 * one monomial of the symbolic dims (1, N, N*N, N*H...) and of the derived
 * dims (expressions such as P + 1 or (H + 1) floordiv 2, each one factor).
 * Each class is planned on its own at compile time; the classes are laid end
 * to end. */
typedef struct cv_kclass {
    int degree;
    int syms[CV_MAX_RANK * 2];  /* the monomial: extended symbol indices, sorted
                                   (< n_syms: a symbol; else a derived dim) */
    int64_t units;              /* planned size, in bytes per unit of the monomial */
    int64_t peak_units;         /* the largest sum of simultaneously live sizes */
} cv_kclass;

typedef struct cv_kprog {
    cv_arena arena;             /* every expression, statement, kernel and name */
    const cv_func *f;
    const char *name;           /* C identifier for the artifact's symbols */
    int n_syms;
    const char **sym_names;     /* symbols in order of first use in the inputs */
    cv_kernel **kernels;
    int n_kernels, cap_kernels;
    cv_kstore *stores;
    int n_stores, cap_stores;
    int *value_store;           /* by value id: its storage, -1 if none */
    cv_kstmt *run;              /* the launches, in order */
    cv_kstmt **run_tail;
    int n_launches;
    int n_fused;                /* ops whose work ran inside their producer's kernel */
    int n_blocked_convs;        /* convolutions run in the blocked layout (codegen_nchwc*.c) */
    int n_reorders;             /* layout conversions between plain and blocked tensors */
    cv_kclass *classes;
    int n_classes;
    /* Derived dims: the expression dims of storages, computed once per run
     * from the symbols; extended symbol index n_syms + j (dimlower.c). */
    cv_dim *dsyms;
    const cv_kexpr **dsym_expr; /* each as a kernel expression over the symbols */
    int n_dsyms, cap_dsyms;
    /* The bounds the module's facts put on the symbols (ir/facts.c): symbol
     * bound_sym[i] may be at most bound_max[i]; run returns -4 beyond. */
    int n_bounds;
    int *bound_sym;
    int64_t *bound_max;
    bool debug;                 /* backends attach debug info (cuvil compile -g) */
    bool weights_file;          /* constants live in <name>.weights.bin (weights_file.c) */
    bool split_weights;         /* constants over CV_INLINE_CONST_MAX bytes live in the
                                   data object <name>_weights.o, not in the code's */
    bool half_weights;          /* -p fp16/bf16 weights may be read 16-bit by the runtime
                                   (codegen_half.c); false for backends without its routines */
    int n_half_ops;             /* ops that read them so (no widened copy) */
    bool bf16_dot;              /* bf16 convolutions may compute in bf16 (AVX512_BF16) */
    bool packed_b;              /* matmuls may read constant B packed at compile time
                                   (cvrt_sgemm_pb: CPU targets through LLVM only) */
    int n_bf16_ops;             /* convolutions that do */
    int n_bf16_gemms;           /* matmuls and gemms reading bf16 B's pair form */
    bool oom;                   /* an allocation failed while building */
    const char *bug;            /* the first misuse of this API (an internal error) */
} cv_kprog;

/* ---- the codegen context: what a hook gets ------------------------------- */

/* A tensor as a hook sees it: its storage and its dims as expressions
 * (constants, or symbols read at run time). */
typedef struct cv_kten {
    int store;
    cv_dtype dtype;
    int rank;
    const cv_kexpr *dim[CV_MAX_RANK];
    int64_t sdim[CV_MAX_RANK];  /* the static extent, or -1 when symbolic */
} cv_kten;

typedef struct cv_codegen_ctx {
    cv_kprog *prog;
    const cv_op *op;
    cv_diag *diag;
    int op_index;
    cv_kernel *k;               /* the kernel being built, or NULL */
    cv_kstmt **tails[CV_K_MAX_DEPTH];  /* open statement lists, innermost last */
    cv_kstmt *open[CV_K_MAX_DEPTH];    /* the for/if owning each list */
    int depth;
    int n_kernels_op;           /* kernels this op made so far */
    /* Fusion: elementwise ops to apply to result 0 inside this op's kernel
     * (see cv_cg_elementwise and cv_cg_rt_epilogue); set epi_taken when
     * the hook does, else they are lowered on their own afterwards. */
    const cv_op *epi[8];
    int epi_link[8];            /* the operand of epi[k] that takes the running value */
    int n_epi;
    bool epi_taken;
    bool epi_pointwise;         /* taken by cv_cg_take_pointwise_chain */
    /* Scalar mode: an elementwise hook computes one element from scalar_in. */
    bool scalar_mode;
    const cv_kexpr *const *scalar_in;
    int scalar_n;
    const cv_kexpr *scalar_out;
} cv_codegen_ctx;

/* Operand i, result i, or a scratch tensor that lives while this op runs. */
cv_kten cv_cg_in(cv_codegen_ctx *c, int i);
cv_kten cv_cg_out(cv_codegen_ctx *c, int i);
/* Any value of the function (storage made on first use). */
cv_kten cv_cg_value(cv_codegen_ctx *c, const cv_value *v);
cv_kten cv_cg_scratch(cv_codegen_ctx *c, cv_dtype dt, const cv_shape *shape);
/* A table computed at compile time, embedded as read-only data (copied). */
cv_kten cv_cg_const(cv_codegen_ctx *c, cv_dtype dt, const cv_shape *shape, const void *data);
/* The same over data already in the program's arena (cv_kp_alloc, which
 * zeroes it), kept where it is: packers write their result there directly
 * instead of into a buffer copied again (a model's weights are large). */
cv_kten cv_cg_const_own(cv_codegen_ctx *c, cv_dtype dt, const cv_shape *shape, void *data);
/* Makes result `res` a view of operand `opnd` starting at element
 * elem_offset (NULL: 0) with no code, where storage allows; otherwise emits
 * a copy.  Returns 0 or -1. */
int cv_cg_view(cv_codegen_ctx *c, int res, int opnd, const cv_kexpr *elem_offset);
/* Reports an op a hook cannot lower (CV5001..) and returns -1. */
int cv_cg_error(cv_codegen_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Kernels: between begin and end, statements go into the kernel.  begin
 * returns p (an I64 expression; 0 in a serial kernel). */
const cv_kexpr *cv_k_begin(cv_codegen_ctx *c, const char *what, const cv_kexpr *extent,
                           const cv_kexpr *grain);
void cv_k_end(cv_codegen_ctx *c);

/* ---- expressions ---------------------------------------------------------- */

const cv_kexpr *cv_k_i64(cv_codegen_ctx *c, int64_t v);
const cv_kexpr *cv_k_f32(cv_codegen_ctx *c, double v);
const cv_kexpr *cv_k_f64(cv_codegen_ctx *c, double v);
const cv_kexpr *cv_k_bool(cv_codegen_ctx *c, bool v);
/* The null pointer (an absent optional operand of a runtime call). */
const cv_kexpr *cv_k_null(cv_codegen_ctx *c);
/* A constant of compute type t (ints, floats, bool). */
const cv_kexpr *cv_k_const(cv_codegen_ctx *c, cv_kty t, double v);
const cv_kexpr *cv_k_un(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a);
const cv_kexpr *cv_k_bin(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_cmp(cv_codegen_ctx *c, cv_kop op, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_select(cv_codegen_ctx *c, const cv_kexpr *cond, const cv_kexpr *a,
                            const cv_kexpr *b);
/* Numeric conversion between compute types (float to int saturates and
 * maps NaN to 0; anything to BOOL is != 0). */
const cv_kexpr *cv_k_cast(cv_codegen_ctx *c, const cv_kexpr *a, cv_kty to);
/* The value a would read back as after a store into a `to` tensor. */
const cv_kexpr *cv_k_convert(cv_codegen_ctx *c, const cv_kexpr *a, cv_dtype to);
const cv_kexpr *cv_k_load(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr *index);
/* The address of element `index` (for runtime calls). */
const cv_kexpr *cv_k_addr(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr *index);

/* Shorthands. */
const cv_kexpr *cv_k_add(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_sub(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_mul(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
/* Integer division and remainder of non-negative index values. */
const cv_kexpr *cv_k_div(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_rem(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_min(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
const cv_kexpr *cv_k_max(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
/* Integer division with the interpreter's rules: x / 0 = 0, INT64_MIN / -1 wraps. */
const cv_kexpr *cv_k_idiv(cv_codegen_ctx *c, const cv_kexpr *a, const cv_kexpr *b);
/* The product of dims [from, to) of t. */
const cv_kexpr *cv_k_numel(cv_codegen_ctx *c, const cv_kten *t, int from, int to);
bool cv_k_is_const(const cv_kexpr *e, int64_t *v);

/* ---- statements ----------------------------------------------------------- */

/* Opens `for (var = lo; var < hi; var++)`; returns the variable. */
const cv_kexpr *cv_k_for(cv_codegen_ctx *c, const cv_kexpr *lo, const cv_kexpr *hi,
                         unsigned flags);
void cv_k_if(cv_codegen_ctx *c, const cv_kexpr *cond);
void cv_k_else(cv_codegen_ctx *c);
/* Closes the innermost for or if. */
void cv_k_close(cv_codegen_ctx *c);
void cv_k_store(cv_codegen_ctx *c, const cv_kten *t, const cv_kexpr *index,
                const cv_kexpr *value);
/* A mutable local initialised to init; read it with the returned VAR. */
const cv_kexpr *cv_k_local(cv_codegen_ctx *c, const cv_kexpr *init);
void cv_k_set(cv_codegen_ctx *c, const cv_kexpr *var, const cv_kexpr *value);
void cv_k_call(cv_codegen_ctx *c, cv_krt fn, const cv_kexpr *const *args, int n);

/* --weights-file (weights_file.c): the offset of every constant storage in
 * <name>.weights.bin (-1 for the others; offsets may be NULL) and the
 * file's size; and the file's bytes (malloc'd into *data). */
int64_t cv_weights_layout(const cv_kprog *p, int64_t *offsets);
int cv_weights_image(const cv_kprog *p, char **data, size_t *len);

/* Split weights (p->split_weights): constants of at most
 * CV_INLINE_CONST_MAX bytes (ir/ir.h) stay in the code object. */
/* Whether storage id lives in the weights image of a split program. */
bool cv_weights_split_store(const cv_kprog *p, int id);
/* Offsets (-1 for the others) and size of the split weights image. */
int64_t cv_weights_split_layout(const cv_kprog *p, int64_t *offsets);
/* weights_obj.c: the relocatable ELF object holding the split image as one
 * hidden read-only symbol sym, for the machine (class, data, e_machine,
 * e_flags) of the code object code_obj, so the two link together.  As
 * pieces in order (parts: its headers, zero padding and the storages'
 * bytes, which stay where p holds them: p must outlive o), len bytes. */
typedef struct cv_weights_obj {
    cv_fs_part *parts;          /* owned array */
    int n_parts;
    size_t len;
    unsigned char head[64];
    unsigned char *tail;        /* owned */
    size_t tail_len;
} cv_weights_obj;
int cv_weights_split_object(const cv_kprog *p, const void *code_obj, size_t code_len,
                            const char *sym, cv_weights_obj *o, cv_diag *d);
void cv_weights_obj_free(cv_weights_obj *o);

#endif
