/* The artifact's C header: the API, the symbols, input/output shapes as
 * macros (a symbolic dim k appears as CV_<NAME>_SYM(k)) and the arena size
 * as a macro over the symbolic dims. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/backend/artifact_internal.h"
#include "compiler-core/backend/kernel_internal.h"
#include "compiler-core/backend/targets.h"

static const char *const verbs[] = {"create", "reserve", "run", "destroy", "arena_bytes"};

int cv_artifact_symbols(const cv_kprog *p, char names[][160], int max)
{
    int n = 0;
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0] && n < max; i++)
        snprintf(names[n++], 160, "cv_%s_%s", p->name, verbs[i]);
    if (p->weights_file && n < max)
        snprintf(names[n++], 160, "cv_%s_create_weights", p->name);
    return n;
}

void cv_artifact_arena_expr(const cv_kprog *p, const char *arr, cv_sb *out)
{
    if (p->n_classes == 0)
        cv_sb_puts(out, "(int64_t)0");
    for (int c = 0; c < p->n_classes; c++) {
        const cv_kclass *k = &p->classes[c];
        cv_sb_printf(out, "%s(int64_t)%lld", c ? " + " : "", (long long)k->units);
        for (int i = 0; i < k->degree; i++) {
            cv_sb_puts(out, " * ");
            cv_kp_sym_c(p, k->syms[i], arr, out);
        }
    }
}

void cv_artifact_arena_formula(const cv_kprog *p, cv_sb *out)
{
    if (p->n_classes == 0)
        cv_sb_putc(out, '0');
    for (int c = 0; c < p->n_classes; c++) {
        const cv_kclass *k = &p->classes[c];
        cv_sb_printf(out, "%s%lld", c ? " + " : "", (long long)k->units);
        for (int i = 0; i < k->degree; i++) {
            int s = k->syms[i];
            if (s < p->n_syms)
                cv_sb_printf(out, "*%s", p->sym_names[s]);
            else
                cv_sb_printf(out, "*(%s)", p->dsyms[s - p->n_syms].sym);
        }
    }
}

static void upper(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s[i] && i + 1 < size; i++)
        out[i] = (char)toupper((unsigned char)s[i]);
    out[i] = 0;
}

static int sym_index(const cv_kprog *p, const char *s)
{
    for (int i = 0; i < p->n_syms; i++)
        if (strcmp(p->sym_names[i], s) == 0)
            return i;
    return -1;
}

/* The C rule for a model's input and output names (docs/artifact-c.md):
 * upper-cased, every character but [A-Z0-9] becomes '_', and a leading
 * digit gets a '_' before it ("input.1" -> INPUT_1, "48" -> _48). */
static void c_macro_name(const char *s, char *out, size_t size)
{
    size_t o = 0;
    if (isdigit((unsigned char)s[0]) && o + 1 < size)
        out[o++] = '_';
    for (; *s && o + 1 < size; s++)
        out[o++] = isalnum((unsigned char)*s) ? (char)toupper((unsigned char)*s) : '_';
    out[o] = 0;
}

/* #define CV_<N>_INPUT_<NAME> i, for each input or output whose C name no
 * earlier one of the same kind took. */
static void index_macros(const char *N, const char *kind, cv_value *const *vals, int n,
                         cv_sb *o)
{
    for (int i = 0; i < n; i++) {
        char cn[160], other[160];
        c_macro_name(vals[i]->name, cn, sizeof cn);
        bool taken = !cn[0];
        for (int k = 0; k < i && !taken; k++) {
            c_macro_name(vals[k]->name, other, sizeof other);
            taken = strcmp(cn, other) == 0;
        }
        if (!taken)
            cv_sb_printf(o, "#define CV_%s_%s_%s %d\n", N, kind, cn, i);
    }
}

static void io_macros(const cv_kprog *p, const char *N, const char *kind, int i,
                      const cv_value *v, cv_sb *o)
{
    const cv_type *t = &v->type;
    cv_sb_printf(o, "#define CV_%s_%s_%d_NAME \"", N, kind, i);
    cv_sb_put_escaped(o, v->name, strlen(v->name));
    cv_sb_puts(o, "\"\n");
    cv_sb_printf(o, "#define CV_%s_%s_%d_DTYPE \"%s\"\n", N, kind, i, cv_dtype_name(t->dtype));
    cv_sb_printf(o, "#define CV_%s_%s_%d_RANK %d\n", N, kind, i, t->shape.rank);
    cv_sb_printf(o, "#define CV_%s_%s_%d_SHAPE {", N, kind, i);
    for (int k = 0; k < t->shape.rank; k++) {
        const cv_dim *d = &t->shape.d[k];
        if (cv_dim_is_expr(*d))
            cv_sb_printf(o, "%sCV_%s_SYM(%d)", k ? ", " : "", N, cv_kp_dsym_find(p, *d));
        else if (d->sym)
            cv_sb_printf(o, "%sCV_%s_SYM(%d)", k ? ", " : "", N, sym_index(p, d->sym));
        else
            cv_sb_printf(o, "%s%lld", k ? ", " : "", (long long)d->n);
    }
    cv_sb_puts(o, t->shape.rank ? "}\n" : "0}\n");
}

/* The largest value each symbol may take (-1: any), from the model's facts. */
static void symbol_max_macro(const cv_kprog *p, const char *N, cv_sb *o)
{
    cv_sb_printf(o, "#define CV_%s_SYMBOL_MAX {", N);
    for (int k = 0; k < p->n_syms; k++) {
        long long m = -1;
        for (int i = 0; i < p->n_bounds; i++)
            if (p->bound_sym[i] == k)
                m = (long long)p->bound_max[i];
        cv_sb_printf(o, "%s%lld", k ? ", " : "", m);
    }
    cv_sb_puts(o, p->n_syms ? "}\n" : "0}\n");
}

/* Dims computed from the symbols (an output's P + 1, a derived factor of
 * the arena formula): CV_<N>_SYM(NUM_SYMBOLS + j) in a SHAPE stands for
 * CV_<N>_DERIVED_<j>(symbolic_dims). */
static void derived_macros(const cv_kprog *p, const char *N, cv_sb *o)
{
    if (p->n_dsyms)
        cv_sb_printf(o, "/* Dims computed from the symbols: CV_%s_SYM(CV_%s_NUM_SYMBOLS + j) in a\n"
                        " * SHAPE is CV_%s_DERIVED_j(symbolic_dims); the arena formula uses them. */\n",
                     N, N, N);
    cv_sb_printf(o, "#define CV_%s_NUM_DERIVED %d\n", N, p->n_dsyms);
    for (int j = 0; j < p->n_dsyms; j++) {
        cv_sb_printf(o, "/* %s */\n#define CV_%s_DERIVED_%d(d) ", p->dsyms[j].sym, N, j);
        cv_kp_sym_c(p, p->n_syms + j, "d", o);
        cv_sb_putc(o, '\n');
    }
}

void cv_artifact_header(const cv_kprog *p, const char *target, int opt, cv_sb *o)
{
    char N[160];
    const char *n = p->name;
    const cv_func *f = p->f;
    upper(n, N, sizeof N);
    cv_sb_printf(o, "/* Generated by cuvil: model @%s for %s (-O%d).\n", n, target, opt);
    cv_sb_puts(o, " * inputs[i] and outputs[i] point to dense row-major tensors that do not\n"
                  " * overlap; symbolic_dims[k] gives the symbol CV_<NAME>_SYM(k) (may be NULL\n"
                  " * when there are none).  run returns 0, -1 for a negative dim (or a\n"
                  " * negative dim computed from them), -2 when the arena cannot grow, -4\n"
                  " * when a symbol exceeds a bound the model implies (CV_<NAME>_SYMBOL_MAX:\n"
                  " * a positional table of 64 rows indexed by arange(L) holds only for\n"
                  " * L <= 64; -1 there: no bound).\n"
                  " * The arena: CV_<NAME>_ARENA_BYTES(d) bytes, a formula of the symbols\n"
                  " * (classes of tensors laid end to end, each a constant times a product\n"
                  " * of symbols and derived dims).  A run grows the arena when the formula\n"
                  " * exceeds what it holds, once, and never shrinks it: a run at a shape\n"
                  " * already seen, or after reserve at those dims, allocates nothing\n"
                  " * (create reserves for static models). */\n");
    cv_sb_printf(o, "#ifndef CV_%s_H\n#define CV_%s_H\n\n#include <stdint.h>\n\n", N, N);
    cv_sb_puts(o, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    cv_sb_printf(o, "typedef struct cv_%s_ctx cv_%s_ctx;\n\n", n, n);
    cv_sb_printf(o, "#define CV_%s_NUM_INPUTS %d\n#define CV_%s_NUM_OUTPUTS %d\n", N,
                 f->n_inputs, N, f->n_returns);
    cv_sb_printf(o, "#define CV_%s_NUM_SYMBOLS %d\n#define CV_%s_SYM(k) (-1 - (k))\n", N,
                 p->n_syms, N);
    cv_sb_printf(o, "#define CV_%s_SYMBOL_NAMES {", N);
    for (int i = 0; i < p->n_syms; i++) {
        cv_sb_puts(o, i ? ", \"" : "\"");
        cv_sb_put_escaped(o, p->sym_names[i], strlen(p->sym_names[i]));
        cv_sb_puts(o, "\"");
    }
    cv_sb_puts(o, p->n_syms ? "}\n" : "0}\n");
    symbol_max_macro(p, N, o);
    derived_macros(p, N, o);
    for (int i = 0; i < f->n_inputs; i++)
        io_macros(p, N, "INPUT", i, f->inputs[i], o);
    for (int i = 0; i < f->n_returns; i++)
        io_macros(p, N, "OUTPUT", i, f->returns[i], o);
    cv_sb_puts(o, "/* Inputs and outputs by name: the model's name upper-cased, other\n"
                  " * characters than [A-Z0-9] as '_', '_' before a leading digit. */\n");
    index_macros(N, "INPUT", f->inputs, f->n_inputs, o);
    index_macros(N, "OUTPUT", f->returns, f->n_returns, o);
    cv_sb_printf(o, "/* Bytes of the activation arena for the symbolic dims d. */\n"
                    "#define CV_%s_ARENA_BYTES(d) (", N);
    cv_artifact_arena_expr(p, "d", o);
    cv_sb_puts(o, ")\n\n");
    cv_sb_printf(o, "cv_%s_ctx *cv_%s_create(int threads);\n", n, n);
    cv_sb_printf(o, "int cv_%s_reserve(cv_%s_ctx *ctx, const int64_t *symbolic_dims);\n", n, n);
    cv_sb_printf(o, "int cv_%s_run(cv_%s_ctx *ctx, const void *const *inputs, "
                    "void *const *outputs,\n    const int64_t *symbolic_dims);\n", n, n);
    cv_sb_printf(o, "void cv_%s_destroy(cv_%s_ctx *ctx);\n", n, n);
    cv_sb_printf(o, "int64_t cv_%s_arena_bytes(const int64_t *symbolic_dims);\n\n", n);
    if (p->weights_file) {
        cv_sb_puts(o, "/* --weights-file: the weights are in the file below, not in the library;\n"
                      " * create returns NULL.  create_weights takes the file's bytes (len must\n"
                      " * be its size, w 64-byte aligned: mmap it), which must stay mapped and\n"
                      " * unchanged until destroy; it returns NULL when they do not fit. */\n");
        cv_sb_printf(o, "#define CV_%s_WEIGHTS_FILE \"%s.weights.bin\"\n", N, n);
        cv_sb_printf(o, "#define CV_%s_WEIGHTS_BYTES ((int64_t)%lld)\n", N,
                     (long long)cv_weights_layout(p, NULL));
        cv_sb_printf(o, "cv_%s_ctx *cv_%s_create_weights(int threads, const void *w, int64_t len);\n\n",
                     n, n);
    }
    if (!cv_target_is_cuda(target)) {
        cv_sb_puts(o, "/* create returns NULL, and last_error gives 5036 (CV5036) and a message\n"
                      " * naming them, on a CPU without the instruction-set features the\n"
                      " * artifact was compiled for; last_error is 0 otherwise. */\n");
        cv_sb_printf(o, "int cv_%s_last_error(const char **message);\n\n", n);
        cv_sb_puts(o, "/* Profiling (cuvil bench --profile): while ns is not NULL, every run adds\n"
                      " * each kernel's wall time in nanoseconds to ns[k] (k < n, the kernel\n"
                      " * index of <name>.cvsym); profile(ctx, NULL, 0) stops. */\n");
        cv_sb_printf(o, "void cv_%s_profile(cv_%s_ctx *ctx, uint64_t *ns, int64_t n);\n\n", n, n);
    }
    if (cv_target_is_cuda(target)) {
        cv_sb_puts(o, "/* CUDA: run copies the inputs to the GPU and the outputs back, and returns\n"
                      " * -3 when a driver call fails.  run_stream takes device addresses\n"
                      " * (CUdeviceptr) and queues the work on stream (a CUstream; NULL: the\n"
                      " * context's own) without waiting for it.  last_error gives the CVnnnn\n"
                      " * code (0: none) and message of this thread's last failure, create's\n"
                      " * included (no driver, no device, device too old). */\n");
        cv_sb_printf(o, "int cv_%s_run_stream(cv_%s_ctx *ctx, const void *const *inputs, "
                        "void *const *outputs,\n    const int64_t *symbolic_dims, void *stream);\n", n, n);
        cv_sb_printf(o, "int cv_%s_last_error(const char **message);\n\n", n);
    }
    cv_sb_printf(o, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}
