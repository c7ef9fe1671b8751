/* Kernel IR expressions to C99 text.  Integer arithmetic wraps (through
 * unsigned helpers: signed overflow is undefined in C), float min/max
 * propagate NaN, conversions follow the interpreter's store rules.  A
 * subexpression a statement uses more than once becomes a const temporary
 * written just before the statement, so a DAG stays a DAG; evaluating it
 * unconditionally is what the LLVM backend's select does as well, so hooks
 * never guard a load or a division with a select alone. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/c99/c99_internal.h"

/* Deeper inline nesting is cut into temporaries (compilers' parser limits). */
enum { MAX_INLINE_DEPTH = 24 };

const char *cv_c99_kty(cv_kty t)
{
    switch (t) {
    case CV_KTY_BOOL: return "int";
    case CV_KTY_I64: return "int64_t";
    case CV_KTY_F32: return "float";
    case CV_KTY_F64: return "double";
    case CV_KTY_PTR: return "void *";
    default: return "void";
    }
}

const char *cv_c99_elem(cv_dtype dt)
{
    switch (dt) {
    case CV_F32: return "float";
    case CV_F64: return "double";
    case CV_F16:
    case CV_BF16: return "uint16_t";
    case CV_I8: return "int8_t";
    case CV_I16: return "int16_t";
    case CV_U16: return "uint16_t";
    case CV_I32: return "int32_t";
    case CV_U32: return "uint32_t";
    case CV_I64: return "int64_t";
    case CV_U64: return "uint64_t";
    default: return "uint8_t";     /* u8 bool */
    }
}

void cv_c99_float_lit(cv_sb *sb, double v, bool single)
{
    if (isnan(v))
        cv_sb_puts(sb, single ? "NAN" : "((double)NAN)");
    else if (isinf(v))
        cv_sb_puts(sb, v < 0 ? (single ? "(-HUGE_VALF)" : "(-HUGE_VAL)")
                             : (single ? "HUGE_VALF" : "HUGE_VAL"));
    else
        cv_sb_printf(sb, signbit(v) ? "(%a%s)" : "%a%s", v, single ? "f" : "");
}

void cv_c99_int_lit(cv_sb *sb, int64_t v)
{
    if (v == INT64_MIN)
        cv_sb_puts(sb, "(-INT64_C(9223372036854775807) - 1)");
    else if (v >= -2147483647 && v <= 2147483647)
        cv_sb_printf(sb, v < 0 ? "(%lld)" : "%lld", (long long)v);
    else
        cv_sb_printf(sb, v < 0 ? "(-INT64_C(%lld))" : "INT64_C(%lld)", (long long)(v < 0 ? -v : v));
}

void cv_c99_indent(cv_c99_fn *f)
{
    for (int i = 0; i < f->indent; i++)
        cv_sb_puts(f->out, "    ");
}

/* ---- the per-statement memo -------------------------------------------------- */

static bool trivial(const cv_kexpr *e)
{
    return e->kind == CV_KE_CONST_I || e->kind == CV_KE_CONST_F || e->kind == CV_KE_SYM ||
           e->kind == CV_KE_VAR || e->kind == CV_KE_STOREPTR;
}

static size_t slot_of(const cv_kexpr *e, int cap)
{
    return (size_t)(((uintptr_t)e >> 4) * 0x9E3779B97F4A7C15ull % (uint64_t)cap);
}

static cv_c99_memo_ent *find(cv_c99_fn *f, const cv_kexpr *e)
{
    if (!f->memo_cap)
        return NULL;
    for (size_t i = slot_of(e, f->memo_cap);; i = (i + 1) % (size_t)f->memo_cap) {
        if (f->memo[i].key == e)
            return &f->memo[i];
        if (!f->memo[i].key)
            return NULL;
    }
}

static bool grow(cv_c99_fn *f)
{
    int cap = f->memo_cap ? f->memo_cap * 2 : 256;
    cv_c99_memo_ent *n = calloc((size_t)cap, sizeof *n);
    if (!n)
        return false;
    for (int i = 0; i < f->memo_cap; i++) {
        if (!f->memo[i].key)
            continue;
        size_t j = slot_of(f->memo[i].key, cap);
        while (n[j].key)
            j = (j + 1) % (size_t)cap;
        n[j] = f->memo[i];
    }
    free(f->memo);
    f->memo = n;
    f->memo_cap = cap;
    return true;
}

/* Counts a reference to e; returns true on its first one. */
static bool count(cv_c99_fn *f, const cv_kexpr *e)
{
    cv_c99_memo_ent *m = find(f, e);
    if (m) {
        m->uses++;
        return false;
    }
    if (2 * (f->memo_n + 1) > f->memo_cap && !grow(f)) {
        f->oom = true;
        return false;
    }
    size_t i = slot_of(e, f->memo_cap);
    while (f->memo[i].key)
        i = (i + 1) % (size_t)f->memo_cap;
    f->memo[i] = (cv_c99_memo_ent){.key = e, .uses = 1, .tmp = -1};
    f->memo_n++;
    return true;
}

static void count_tree(cv_c99_fn *f, const cv_kexpr *e)
{
    if (!e || trivial(e) || !count(f, e))
        return;
    count_tree(f, e->a);
    count_tree(f, e->b);
    count_tree(f, e->c);
}

void cv_c99_begin_stmt(cv_c99_fn *f, const cv_kexpr *const *roots, int n)
{
    if (f->memo_n) {
        memset(f->memo, 0, sizeof *f->memo * (size_t)f->memo_cap);
        f->memo_n = 0;
    }
    for (int i = 0; i < n; i++)
        count_tree(f, roots[i]);
}

bool cv_c99_first_visit(cv_c99_fn *f, const cv_kexpr *e)
{
    return count(f, e);
}

void cv_c99_memo_free(cv_c99_fn *f)
{
    free(f->memo);
    f->memo = NULL;
    f->memo_cap = f->memo_n = 0;
}

/* ---- lowering ------------------------------------------------------------------ */

static void emit(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth);

static bool is_float(cv_kty t) { return t == CV_KTY_F32 || t == CV_KTY_F64; }

static const char *use(cv_c99_fn *f, cv_c99_helper h, const char *name)
{
    f->need[h] = true;
    return name;
}

/* name(a) or name(a, b) */
static void call(cv_c99_fn *f, const char *name, const cv_kexpr *a, const cv_kexpr *b,
                 cv_sb *dst, int depth)
{
    cv_sb_printf(dst, "%s(", name);
    emit(f, a, dst, depth + 1);
    if (b) {
        cv_sb_puts(dst, ", ");
        emit(f, b, dst, depth + 1);
    }
    cv_sb_putc(dst, ')');
}

/* (a OP b) */
static void infix(cv_c99_fn *f, const char *op, const cv_kexpr *a, const cv_kexpr *b, cv_sb *dst,
                  int depth)
{
    cv_sb_putc(dst, '(');
    emit(f, a, dst, depth + 1);
    cv_sb_printf(dst, " %s ", op);
    emit(f, b, dst, depth + 1);
    cv_sb_putc(dst, ')');
}

/* The libm function for a float op: base name plus "f" for single precision. */
static void libm(cv_c99_fn *f, const char *base, const cv_kexpr *a, const cv_kexpr *b, cv_sb *dst,
                 int depth)
{
    char name[32];
    snprintf(name, sizeof name, "%s%s", base, a->ty == CV_KTY_F32 ? "f" : "");
    call(f, name, a, b, dst, depth);
}

static void lower_un(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth)
{
    static const char *const fn[] = {
        [CV_KOP_SQRT] = "sqrt", [CV_KOP_EXP] = "exp", [CV_KOP_LOG] = "log",
        [CV_KOP_TANH] = "tanh", [CV_KOP_ERF] = "erf", [CV_KOP_FLOOR] = "floor",
        [CV_KOP_CEIL] = "ceil", [CV_KOP_ROUND_EVEN] = "nearbyint",
        [CV_KOP_SIN] = "sin", [CV_KOP_COS] = "cos", [CV_KOP_TAN] = "tan", [CV_KOP_ASIN] = "asin",
        [CV_KOP_ACOS] = "acos", [CV_KOP_ATAN] = "atan", [CV_KOP_SINH] = "sinh",
        [CV_KOP_COSH] = "cosh", [CV_KOP_ASINH] = "asinh", [CV_KOP_ACOSH] = "acosh",
        [CV_KOP_ATANH] = "atanh",
    };
    const cv_kexpr *a = e->a;
    switch ((cv_kop)e->op) {
    case CV_KOP_NEG:
        if (is_float((cv_kty)a->ty)) {
            cv_sb_puts(dst, "(-");
            emit(f, a, dst, depth + 1);
            cv_sb_putc(dst, ')');
        } else {
            call(f, use(f, CV_C99_H_NEG, "cv_neg"), a, NULL, dst, depth);
        }
        return;
    case CV_KOP_ABS:
        if (is_float((cv_kty)a->ty))
            libm(f, "fabs", a, NULL, dst, depth);
        else
            call(f, use(f, CV_C99_H_IABS, "cv_iabs"), a, NULL, dst, depth);
        return;
    case CV_KOP_NOT:
        cv_sb_puts(dst, "(!");
        emit(f, a, dst, depth + 1);
        cv_sb_putc(dst, ')');
        return;
    case CV_KOP_ISNAN:
        cv_sb_puts(dst, "(isnan(");
        emit(f, a, dst, depth + 1);
        cv_sb_puts(dst, ") != 0)");
        return;
    default:
        libm(f, fn[e->op], a, NULL, dst, depth);
        return;
    }
}

static void lower_int_bin(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth)
{
    switch ((cv_kop)e->op) {
    case CV_KOP_ADD: call(f, use(f, CV_C99_H_ADD, "cv_add"), e->a, e->b, dst, depth); return;
    case CV_KOP_SUB: call(f, use(f, CV_C99_H_SUB, "cv_sub"), e->a, e->b, dst, depth); return;
    case CV_KOP_MUL: call(f, use(f, CV_C99_H_MUL, "cv_mul"), e->a, e->b, dst, depth); return;
    case CV_KOP_DIV:
    case CV_KOP_REM:
        /* A constant zero divisor only sits in code that never runs (an
         * empty tensor's loop); compilers reject it as written. */
        if (e->b->kind == CV_KE_CONST_I && e->b->i == 0)
            cv_sb_puts(dst, "0");
        else
            infix(f, e->op == CV_KOP_DIV ? "/" : "%", e->a, e->b, dst, depth);
        return;
    case CV_KOP_MIN: call(f, use(f, CV_C99_H_IMIN, "cv_imin"), e->a, e->b, dst, depth); return;
    case CV_KOP_MAX: call(f, use(f, CV_C99_H_IMAX, "cv_imax"), e->a, e->b, dst, depth); return;
    case CV_KOP_AND: infix(f, "&&", e->a, e->b, dst, depth); return;  /* pure operands */
    case CV_KOP_OR: infix(f, "||", e->a, e->b, dst, depth); return;
    default: cv_sb_puts(dst, "0"); f->malformed = true; return;  /* cv_k_bin rejects it */
    }
}

static void lower_float_bin(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth)
{
    bool s = e->ty == CV_KTY_F32;
    static const char *const arith[] = {[CV_KOP_ADD] = "+", [CV_KOP_SUB] = "-",
                                        [CV_KOP_MUL] = "*", [CV_KOP_DIV] = "/"};
    switch ((cv_kop)e->op) {
    case CV_KOP_ADD:
    case CV_KOP_SUB:
    case CV_KOP_MUL:
    case CV_KOP_DIV: infix(f, arith[e->op], e->a, e->b, dst, depth); return;
    case CV_KOP_REM: libm(f, "fmod", e->a, e->b, dst, depth); return;
    case CV_KOP_POW: libm(f, "pow", e->a, e->b, dst, depth); return;
    case CV_KOP_FMIN: libm(f, "fmin", e->a, e->b, dst, depth); return;
    case CV_KOP_FMAX: libm(f, "fmax", e->a, e->b, dst, depth); return;
    case CV_KOP_MIN:
        call(f, s ? use(f, CV_C99_H_MINF, "cv_minf") : use(f, CV_C99_H_MIND, "cv_mind"), e->a,
             e->b, dst, depth);
        return;
    case CV_KOP_MAX:
        call(f, s ? use(f, CV_C99_H_MAXF, "cv_maxf") : use(f, CV_C99_H_MAXD, "cv_maxd"), e->a,
             e->b, dst, depth);
        return;
    default: cv_sb_puts(dst, "0"); f->malformed = true; return;
    }
}

/* Numeric conversion between compute types (cv_k_cast). */
static void cast(cv_c99_fn *f, const cv_kexpr *a, cv_kty to, cv_sb *dst, int depth)
{
    cv_kty from = (cv_kty)a->ty;
    if (from == to) {
        emit(f, a, dst, depth);
    } else if (to == CV_KTY_BOOL) {
        cv_sb_putc(dst, '(');
        emit(f, a, dst, depth + 1);
        cv_sb_puts(dst, " != 0)");
    } else if (to == CV_KTY_I64 && is_float(from)) {
        call(f, use(f, CV_C99_H_F2I64, "cv_f2i64"), a, NULL, dst, depth);
    } else {
        cv_sb_printf(dst, "((%s)", cv_c99_kty(to));
        emit(f, a, dst, depth + 1);
        cv_sb_putc(dst, ')');
    }
}

static void to_int_dtype(cv_c99_fn *f, const cv_kexpr *a, cv_dtype to, cv_sb *dst, int depth)
{
    cv_kty from = (cv_kty)a->ty;
    if (from == CV_KTY_BOOL || (from == CV_KTY_I64 && cv_dtype_size(to) == 8) ||
        (is_float(from) && to == CV_I64)) {
        cast(f, a, CV_KTY_I64, dst, depth);
        return;
    }
    if (from == CV_KTY_I64) {
        const char *w = to == CV_I8 ? use(f, CV_C99_H_WRAP8, "cv_wrap8")
                      : to == CV_U8 ? use(f, CV_C99_H_WRAPU8, "cv_wrapu8")
                      : to == CV_I16 ? use(f, CV_C99_H_WRAP16, "cv_wrap16")
                      : to == CV_U16 ? use(f, CV_C99_H_WRAPU16, "cv_wrapu16")
                      : to == CV_U32 ? use(f, CV_C99_H_WRAPU32, "cv_wrapu32")
                                     : use(f, CV_C99_H_WRAP32, "cv_wrap32");
        call(f, w, a, NULL, dst, depth);
        return;
    }
    int64_t lo = 0, hi = 0;
    cv_dtype_int_range(to, &lo, &hi);
    /* u64: the largest double below 2^63, so that the conversion stays defined. */
    double dhi = to == CV_U64 ? 9223372036854774784.0 : (double)hi;
    cv_sb_printf(dst, "%s(", use(f, CV_C99_H_FSAT, "cv_fsat"));
    emit(f, a, dst, depth + 1);
    cv_sb_printf(dst, ", %.1f, %.1f)", (double)lo, dhi);
}

/* The value a would read back as after a store into a `to` tensor. */
static void convert(cv_c99_fn *f, const cv_kexpr *a, cv_dtype to, cv_sb *dst, int depth)
{
    if (to == CV_BOOL) {
        cast(f, a, CV_KTY_BOOL, dst, depth);
    } else if (cv_dtype_is_int(to)) {
        to_int_dtype(f, a, to, dst, depth);
    } else if (to == CV_F64 || to == CV_F32) {
        cast(f, a, to == CV_F64 ? CV_KTY_F64 : CV_KTY_F32, dst, depth);
    } else if (to == CV_F16) {
        cv_sb_printf(dst, "%s(%s(", use(f, CV_C99_H_H2F, "cv_h2f"), use(f, CV_C99_H_F2H, "cv_f2h"));
        cast(f, a, CV_KTY_F32, dst, depth + 2);
        cv_sb_puts(dst, "))");
    } else {
        cv_sb_printf(dst, "%s(", use(f, CV_C99_H_BFROUND, "cv_bfround"));
        cast(f, a, CV_KTY_F32, dst, depth + 1);
        cv_sb_putc(dst, ')');
    }
}

/* Slot `slot` seen as an array of dt (a cast only when the slot is typed otherwise). */
static void slot_array(cv_c99_fn *f, int slot, cv_dtype dt, cv_sb *dst)
{
    const char *have = f->k ? cv_c99_elem(f->k->slot_dtype[slot]) : "";
    if (strcmp(have, cv_c99_elem(dt)) == 0)
        cv_sb_printf(dst, "b%d", slot);
    else
        cv_sb_printf(dst, "((%s *)b%d)", cv_c99_elem(dt), slot);
}

static void lower_load(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth)
{
    cv_dtype dt = (cv_dtype)e->op;
    switch (dt) {
    case CV_F16: cv_sb_printf(dst, "%s(", use(f, CV_C99_H_H2F, "cv_h2f")); break;
    case CV_BF16: cv_sb_printf(dst, "%s(", use(f, CV_C99_H_BF2F, "cv_bf2f")); break;
    case CV_I8:
    case CV_U8:
    case CV_I16:
    case CV_U16:
    case CV_I32:
    case CV_U32:
    case CV_U64: cv_sb_puts(dst, "((int64_t)"); break;
    case CV_BOOL: cv_sb_puts(dst, "("); break;
    default: break;
    }
    slot_array(f, e->id, dt, dst);
    cv_sb_putc(dst, '[');
    emit(f, e->a, dst, depth + 1);
    cv_sb_putc(dst, ']');
    if (dt == CV_BOOL)
        cv_sb_puts(dst, " != 0)");
    else if (dt != CV_F32 && dt != CV_F64 && dt != CV_I64)
        cv_sb_putc(dst, ')');
}

void cv_c99_to_storage(cv_c99_fn *f, const cv_kexpr *v, cv_dtype dt, cv_sb *dst)
{
    switch (dt) {
    case CV_F32:
    case CV_F64:
    case CV_I64: emit(f, v, dst, 0); return;
    case CV_F16: call(f, use(f, CV_C99_H_F2H, "cv_f2h"), v, NULL, dst, 0); return;
    case CV_BF16: call(f, use(f, CV_C99_H_BFBITS, "cv_bfbits"), v, NULL, dst, 0); return;
    default:
        cv_sb_printf(dst, "(%s)", cv_c99_elem(dt));
        emit(f, v, dst, 1);
        return;
    }
}

static void lower(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth)
{
    static const char *const cmp[] = {"==", "!=", "<", "<=", ">", ">="};
    switch ((cv_kexpr_kind)e->kind) {
    case CV_KE_CONST_I:
        if (e->ty == CV_KTY_PTR)
            cv_sb_puts(dst, "((void *)0)");
        else
            cv_c99_int_lit(dst, e->i);
        return;
    case CV_KE_CONST_F: cv_c99_float_lit(dst, e->f, e->ty == CV_KTY_F32); return;
    case CV_KE_SYM: cv_sb_printf(dst, "syms[%d]", e->id); return;
    case CV_KE_VAR: cv_sb_printf(dst, "v%d", e->id); return;
    case CV_KE_STOREPTR: cv_sb_printf(dst, "s%d", e->id); return;
    case CV_KE_LOAD: lower_load(f, e, dst, depth); return;
    case CV_KE_ADDR:
        cv_sb_putc(dst, '(');
        slot_array(f, e->id, (cv_dtype)e->op, dst);
        cv_sb_puts(dst, " + ");
        emit(f, e->a, dst, depth + 1);
        cv_sb_putc(dst, ')');
        return;
    case CV_KE_UN: lower_un(f, e, dst, depth); return;
    case CV_KE_BIN:
        if (is_float((cv_kty)e->ty))
            lower_float_bin(f, e, dst, depth);
        else
            lower_int_bin(f, e, dst, depth);
        return;
    case CV_KE_CMP: infix(f, cmp[e->op - CV_KOP_EQ], e->a, e->b, dst, depth); return;
    case CV_KE_SELECT:
        cv_sb_putc(dst, '(');
        emit(f, e->a, dst, depth + 1);
        cv_sb_puts(dst, " ? ");
        emit(f, e->b, dst, depth + 1);
        cv_sb_puts(dst, " : ");
        emit(f, e->c, dst, depth + 1);
        cv_sb_putc(dst, ')');
        return;
    case CV_KE_CAST: cast(f, e->a, (cv_kty)e->ty, dst, depth); return;
    case CV_KE_CONVERT: convert(f, e->a, (cv_dtype)e->op, dst, depth); return;
    }
}

static void emit(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst, int depth)
{
    cv_c99_memo_ent *m = trivial(e) ? NULL : find(f, e);
    if (m && m->tmp >= 0) {
        cv_sb_printf(dst, "t%d", m->tmp);
        return;
    }
    if (trivial(e) || ((!m || m->uses < 2) && depth < MAX_INLINE_DEPTH)) {
        lower(f, e, dst, depth);
        return;
    }
    cv_sb def = CV_SB_INIT;
    lower(f, e, &def, 0);
    int t = f->n_tmp++;
    cv_c99_indent(f);
    cv_sb_printf(f->out, "%s%s t%d = %s;\n", e->ty == CV_KTY_PTR ? "void *const" : "const ",
                 e->ty == CV_KTY_PTR ? "" : cv_c99_kty((cv_kty)e->ty), t, cv_sb_str(&def));
    f->oom |= def.oom != 0;
    cv_sb_free(&def);
    if (m)
        m->tmp = t;
    cv_sb_printf(dst, "t%d", t);
}

void cv_c99_expr(cv_c99_fn *f, const cv_kexpr *e, cv_sb *dst)
{
    emit(f, e, dst, 0);
}
