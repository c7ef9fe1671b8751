/* CU-IR parser, the leaves of the grammar: types, attribute dictionaries,
 * dense(...) constants and loc(...) locations.  See docs/cuir.md. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "compiler-core/ir/parse.h"

static bool is_special_float(const cv_token *t, double *v)
{
    if (cv_tok_is(t, "inf")) {
        *v = __builtin_inf();
        return true;
    }
    if (cv_tok_is(t, "nan")) {
        *v = __builtin_nan("");
        return true;
    }
    return false;
}

static bool fail_expected(cv_parser *P, const char *what)
{
    char got[64];
    cv_p_describe(&P->cur, got, sizeof got);
    return cv_p_fail(P, &P->cur, CV_E_UNEXPECTED_TOKEN, "expected %s, got %s", what, got);
}

/* Where a dimension written as an expression ends: the ',' or ']' at
 * bracket depth 0 (quoted symbols skipped), or NULL at the line's end. */
static const char *dim_expr_end(const char *q, const char *e)
{
    int depth = 0;
    for (; q < e && *q != '\n'; q++) {
        if (*q == '"') {
            for (q++; q < e && *q != '"' && *q != '\n'; q++)
                if (*q == '\\' && q + 1 < e)
                    q++;
            if (q >= e || *q != '"')
                return NULL;
        } else if (*q == '(') {
            depth++;
        } else if (*q == ')') {
            depth--;
        } else if (depth == 0 && (*q == ',' || *q == ']')) {
            return q;
        }
    }
    return NULL;
}

/* A dimension other than one integer or symbol: "(L + 1) floordiv 2". */
static bool parse_dim_expr(cv_parser *P, cv_dim *dim)
{
    const cv_token *t = &P->cur;
    const char *end = dim_expr_end(t->p, P->L.end);
    if (!end)
        return cv_p_fail(P, t, CV_E_UNEXPECTED_TOKEN, "expected ',' or ']' after a dimension");
    const char *err = NULL;
    size_t at = 0;
    if (cv_dim_parse(P->m, t->p, (size_t)(end - t->p), dim, &err, &at)) {
        int code = err && strstr(err, "expected") ? CV_E_UNEXPECTED_TOKEN : CV_E_SYMBOLIC_ARITHMETIC;
        return cv_p_fail(P, t, code, "dimension %.*s: %s (at byte %zu)", (int)(end - t->p),
                         t->p, err ? err : "not expressible", at);
    }
    cv_lex_seek(&P->L, end);
    cv_p_next(P);
    return true;
}

/* True when the token after t (in the raw text) does not end the dim. */
static bool dim_continues(const cv_parser *P, const cv_token *t)
{
    const char *q = t->p + t->n;
    while (q < P->L.end && (*q == ' ' || *q == '\t'))
        q++;
    return q < P->L.end && *q != ',' && *q != ']' && *q != '\n' && *q != '\r' && *q != '#';
}

static bool parse_dim(cv_parser *P, cv_dim *dim)
{
    const cv_token *t = &P->cur;
    if (t->kind == TK_LPAREN || ((t->kind == TK_INT || t->kind == TK_IDENT ||
                                  t->kind == TK_STRING) && dim_continues(P, t)))
        return parse_dim_expr(P, dim);
    if (t->kind == TK_INT) {
        if (t->overflow)
            return cv_p_fail(P, t, CV_E_DIMENSION_OVERFLOW, "dimension %.*s does not fit in 64 bits", (int)t->n, t->p);
        dim->n = t->i;
    } else if (t->kind == TK_IDENT) {
        dim->sym = cv_module_intern(P->m, t->p, t->n);
    } else if (t->kind == TK_STRING && t->slen > 0) {
        dim->sym = cv_module_intern(P->m, t->s, t->slen);
    } else {
        return fail_expected(P, "a dimension (an integer, a symbol such as N, or an expression)");
    }
    cv_p_next(P);
    return true;
}

/* ---- fast paths -----------------------------------------------------------
 * Types and locations make up most tokens of a large module, and are nearly
 * always written compactly ("f32[N,3,224,224]", loc("m.py":12:9)).  These
 * read such text directly; any other spelling (blanks, comments, escapes,
 * signs, long numbers) returns false having consumed nothing, and the token
 * path reads it and reports what is wrong.  On success the lexer resumes at
 * the closing bracket, which is then consumed as a token, so spans and the
 * parser state are what the token path leaves. */

enum { FAST_MAX_DIGITS = 9, FAST_MAX_NAME = 1024 };

static bool cc_is(const char *q, const char *e, unsigned cls)
{
    return q < e && (cv_lex_cc[(unsigned char)*q] & cls);
}

/* Up to FAST_MAX_DIGITS decimal digits at *q. */
static bool fast_uint(const char **q, const char *e, int64_t *v)
{
    const char *p = *q;
    *v = 0;
    while (cc_is(p, e, CV_CC_DIGIT) && p - *q < FAST_MAX_DIGITS)
        *v = *v * 10 + (*p++ - '0');
    if (p == *q || cc_is(p, e, CV_CC_NAME))
        return false;  /* none, more digits, or "8a" / "8.5" */
    *q = p;
    return true;
}

/* Resumes tokenizing at the closer q, then consumes it. */
static void fast_done(cv_parser *P, const char *q)
{
    cv_lex_seek(&P->L, q);
    cv_p_next(P);
    cv_p_next(P);
}

/* "[d,...]" right after the element type. */
static bool fast_dims(cv_parser *P, cv_shape *sh)
{
    const char *q = P->L.p, *e = P->L.end;
    if (q >= e || *q != '[')
        return false;
    q++;
    sh->rank = 0;
    while (q < e && *q != ']') {
        if (sh->rank == CV_MAX_RANK)
            goto slow;
        cv_dim *dim = &sh->d[sh->rank];
        if (cc_is(q, e, CV_CC_DIGIT)) {
            if (!fast_uint(&q, e, &dim->n))
                goto slow;
        } else if (cc_is(q, e, CV_CC_IDENT)) {
            const char *n = q;
            while (cc_is(q, e, CV_CC_NAME) && q - n < FAST_MAX_NAME)
                q++;
            if (cc_is(q, e, CV_CC_NAME))
                goto slow;
            dim->sym = cv_module_intern(P->m, n, (size_t)(q - n));
        } else {
            goto slow;
        }
        sh->rank++;
        if (q < e && *q == ',' && q + 1 < e && q[1] != ']')
            q++;
        else if (q >= e || *q != ']')
            goto slow;
    }
    if (q >= e)
        goto slow;
    fast_done(P, q);
    return true;
slow:
    memset(sh, 0, sizeof *sh);
    return false;
}

/* ("file":line:col) right after loc. */
static bool fast_loc(cv_parser *P)
{
    const char *q = P->L.p, *e = P->L.end;
    if (e - q < 2 || q[0] != '(' || q[1] != '"')
        return false;
    const char *f = q + 2, *fe = f;
    while (fe < e && !(cv_lex_cc[(unsigned char)*fe] & CV_CC_STOP) && fe - f <= FAST_MAX_NAME)
        fe++;
    q = fe + 1;
    int64_t line, col;
    if (fe >= e || *fe != '"' || q >= e || *q++ != ':' || !fast_uint(&q, e, &line) || q >= e ||
        *q++ != ':' || !fast_uint(&q, e, &col) || q >= e || *q != ')')
        return false;
    /* Out of memory, the token path fails again and reports it. */
    char *file = cv_arena_strndup(P->L.scratch, f, (size_t)(fe - f));
    cv_ploc *slot = file ? cv_vec_push(&P->locs, sizeof *slot) : NULL;
    if (!slot)
        return false;
    *slot = (cv_ploc){file, (int)line, (int)col};
    fast_done(P, q);
    return true;
}

bool cv_p_type(cv_parser *P, cv_type *out)
{
    memset(out, 0, sizeof *out);
    const cv_token *t = &P->cur;
    if (t->kind != TK_IDENT)
        return fail_expected(P, "a type such as f32[N,3]");
    cv_dtype dt = cv_dtype_parse(t->p, t->n);
    if (dt == CV_DT_INVALID)
        return cv_p_fail(P, t, CV_E_UNKNOWN_DTYPE, "unknown element type '%.*s' (CU-IR has f32 f16 bf16 i8 "
                         "u8 i32 i64 bool)", (int)(t->n > 64 ? 64 : t->n), t->p);
    out->dtype = dt;
    if (fast_dims(P, &out->shape))
        return true;
    cv_p_next(P);
    if (!cv_p_expect(P, TK_LBRACK, "'[' and the dimensions after the element type"))
        return false;
    if (P->cur.kind == TK_RBRACK) {
        cv_p_next(P);
        return true;
    }
    for (bool done = false; !done;) {
        if (out->shape.rank == CV_MAX_RANK)
            return cv_p_fail(P, &P->cur, CV_E_RANK_TOO_LARGE, "a tensor has at most %d dimensions", CV_MAX_RANK);
        if (!parse_dim(P, &out->shape.d[out->shape.rank]))
            return false;
        out->shape.rank++;
        if (!cv_p_list_sep(P, TK_RBRACK, "',' or ']' in the dimensions", &done))
            return false;
    }
    return true;
}

/* ---- attributes ---------------------------------------------------------- */

typedef struct num {
    int64_t i;
    double f;
    bool is_float;
} num;

/* An int, a float, inf or nan; the current token is consumed. */
static bool parse_num(cv_parser *P, num *out, const char *what)
{
    const cv_token *t = &P->cur;
    out->is_float = true;
    if (t->kind == TK_INT) {
        if (t->overflow)
            return cv_p_fail(P, t, CV_E_INVALID_NUMBER, "integer %.*s does not fit in 64 bits",
                             (int)(t->n > 64 ? 64 : t->n), t->p);
        out->i = t->i;
        out->f = (double)t->i;
        out->is_float = false;
    } else if (t->kind == TK_FLOAT) {
        if (t->overflow)
            return cv_p_fail(P, t, CV_E_INVALID_NUMBER, "number %.*s is out of range",
                             (int)(t->n > 64 ? 64 : t->n), t->p);
        out->f = t->f;
    } else if (!is_special_float(t, &out->f)) {
        if (t->kind == TK_LBRACK)
            return cv_p_fail(P, t, CV_E_UNEXPECTED_TOKEN, "lists do not nest in CU-IR");
        return fail_expected(P, what);
    }
    cv_p_next(P);
    return true;
}

/* A DIMS list ([N, -1, (L + 1) floordiv 2]): INTS when every entry is an
 * integer, as cv_op_set_dims stores it. */
static bool parse_dim_list(cv_parser *P, cv_attr *a)
{
    cv_vec *items = &P->list;
    items->n = 0;
    cv_p_next(P);  /* '[' */
    bool done = P->cur.kind == TK_RBRACK, sym = false;
    if (done)
        cv_p_next(P);
    while (!done) {
        cv_dim *d = cv_vec_push(items, sizeof *d);
        if (!d)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        *d = (cv_dim){0, NULL};
        if (!parse_dim(P, d))
            return false;
        sym |= d->sym != NULL;
        if (!cv_p_list_sep(P, TK_RBRACK, "',' or ']' in the list", &done))
            return false;
    }
    a->n = items->n;
    a->kind = sym ? CV_ATTR_DIMS : CV_ATTR_INTS;
    cv_arena *ar = &P->m->arena;
    if (sym)
        a->dims = cv_arena_alloc_array(ar, (size_t)a->n + 1, sizeof *a->dims);
    else
        a->ints = cv_arena_alloc_array(ar, (size_t)a->n + 1, sizeof *a->ints);
    if (!a->dims && !a->ints)
        return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < a->n; k++) {
        const cv_dim *d = &CV_VEC_AT(*items, cv_dim, k);
        if (sym)
            a->dims[k] = *d;
        else
            a->ints[k] = d->n;
    }
    return true;
}

static bool parse_list(cv_parser *P, cv_attr_kind want, cv_attr *a)
{
    if (want == CV_ATTR_DIMS)
        return parse_dim_list(P, a);
    cv_arena *ar = &P->m->arena;
    cv_vec *items = &P->list;
    items->n = 0;
    cv_p_next(P);  /* '[' */
    bool any_float = want == CV_ATTR_FLOATS, done = P->cur.kind == TK_RBRACK;
    if (done)
        cv_p_next(P);
    while (!done) {
        num *x = cv_vec_push(items, sizeof *x);
        if (!x)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        if (!parse_num(P, x, "a number in the list"))
            return false;
        any_float |= x->is_float;
        if (!cv_p_list_sep(P, TK_RBRACK, "',' or ']' in the list", &done))
            return false;
    }
    a->n = items->n;
    a->kind = any_float ? CV_ATTR_FLOATS : CV_ATTR_INTS;
    if (any_float)
        a->floats = cv_arena_alloc_array(ar, (size_t)a->n + 1, sizeof *a->floats);
    else
        a->ints = cv_arena_alloc_array(ar, (size_t)a->n + 1, sizeof *a->ints);
    if (!a->floats && !a->ints)
        return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < a->n; k++) {
        const num *x = &CV_VEC_AT(*items, num, k);
        if (any_float)
            a->floats[k] = x->f;
        else
            a->ints[k] = x->i;
    }
    return true;
}

/* One attribute value; `want` is the schema's kind (NONE when unknown). */
static bool parse_attr_value(cv_parser *P, cv_attr_kind want, cv_attr *a)
{
    const cv_token *t = &P->cur;
    if (t->kind == TK_LBRACK)
        return parse_list(P, want, a);
    if (t->kind == TK_STRING) {
        a->kind = CV_ATTR_STRING;
        a->s = cv_arena_strndup(&P->m->arena, t->s, t->slen);
        cv_p_next(P);
        return true;
    }
    if (cv_tok_is(t, "true") || cv_tok_is(t, "false"))
        return cv_p_fail(P, t, CV_E_UNEXPECTED_TOKEN, "attributes have no booleans: write 1 or 0");
    if (t->kind == TK_IDENT && !cv_tok_is(t, "inf") && !cv_tok_is(t, "nan")) {
        a->kind = CV_ATTR_DTYPE;
        a->dt = cv_dtype_parse(t->p, t->n);
        if (a->dt == CV_DT_INVALID)
            return cv_p_fail(P, t, CV_E_UNKNOWN_DTYPE, "unknown element type '%.*s' (string attribute values "
                             "are written in quotes)", (int)(t->n > 64 ? 64 : t->n), t->p);
        cv_p_next(P);
        return true;
    }
    num x;
    if (!parse_num(P, &x, "an attribute value"))
        return false;
    /* An integer written for a float attribute is stored as the float it
     * means, so the canonical text spells it 1.0. */
    a->kind = (x.is_float || want == CV_ATTR_FLOAT) ? CV_ATTR_FLOAT : CV_ATTR_INT;
    a->i = x.i;
    a->f = x.f;
    return true;
}

static bool attr_given(const cv_parser *P, const char *name, size_t n)
{
    for (int k = 0; k < P->attrs.n; k++) {
        const char *have = CV_VEC_AT(P->attrs, cv_attr, k).name;
        if (strlen(have) == n && memcmp(have, name, n) == 0)
            return true;
    }
    return false;
}

bool cv_p_attrs(cv_parser *P, const cv_op_def *def)
{
    cv_p_next(P);  /* '{' */
    bool done = P->cur.kind == TK_RBRACE;
    if (done)
        cv_p_next(P);
    while (!done) {
        const cv_token *t = &P->cur;
        if (t->kind != TK_IDENT)
            return fail_expected(P, "an attribute name");
        if (attr_given(P, t->p, t->n))
            return cv_p_fail(P, t, CV_E_REDEFINITION, "attribute '%.*s' is given twice", (int)t->n, t->p);
        cv_attr a = {0};
        a.span = cv_p_span(P, t);
        const char *name = cv_lex_cstr(&P->L, t);
        const cv_attr_schema *s = name ? cv_op_def_attr(def, name, NULL) : NULL;
        /* A known attribute is named by the op table's static string. */
        a.name = s ? s->name : name ? cv_arena_strdup(&P->m->arena, name) : NULL;
        if (!a.name)
            return cv_p_fail(P, t, CV_E_OUT_OF_MEMORY, "out of memory");
        cv_p_next(P);
        if (!cv_p_expect(P, TK_EQ, "'=' after the attribute name") ||
            !parse_attr_value(P, s ? s->kind : CV_ATTR_NONE, &a))
            return false;
        cv_p_close(P, &a.span);
        cv_attr *slot = cv_vec_push(&P->attrs, sizeof *slot);
        if (!slot)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        *slot = a;
        if (!cv_p_list_sep(P, TK_RBRACE, "',' or '}' in the attributes", &done))
            return false;
    }
    return true;
}

/* ---- dense(...) ---------------------------------------------------------- */

/* u64 takes any i64 literal: the printer writes its two's-complement bits. */
static bool int_fits(cv_dtype dt, int64_t v)
{
    int64_t lo, hi;
    if (dt == CV_U64 || !cv_dtype_int_range(dt, &lo, &hi))
        return true;
    return v >= lo && v <= hi;
}

/* Stores the current token as one element of type dt at slot. */
static bool dense_elem(cv_parser *P, cv_dtype dt, void *slot)
{
    const cv_token *t = &P->cur;
    if (dt == CV_BOOL) {
        if (!cv_tok_is(t, "true") && !cv_tok_is(t, "false"))
            return cv_p_fail(P, t, CV_E_INVALID_NUMBER, "expected true or false for a bool constant");
        *(unsigned char *)slot = cv_tok_is(t, "true");
        cv_p_next(P);
        return true;
    }
    if (cv_dtype_is_int(dt)) {
        if (t->kind != TK_INT)
            return cv_p_fail(P, t, CV_E_INVALID_NUMBER, "expected an integer for a %s constant", cv_dtype_name(dt));
        if (t->overflow || !int_fits(dt, t->i))
            return cv_p_fail(P, t, CV_E_INVALID_NUMBER, "%.*s does not fit in %s", (int)(t->n > 64 ? 64 : t->n),
                             t->p, cv_dtype_name(dt));
        cv_dtype_store_i64(dt, slot, 0, t->i);
        cv_p_next(P);
        return true;
    }
    num x;
    const cv_token at = *t;
    if (!parse_num(P, &x, "a number"))
        return false;
    cv_dtype_store(dt, slot, 0, x.f);
    if (isfinite(x.f) && isinf(cv_dtype_load(dt, slot, 0)))
        return cv_p_fail(P, &at, CV_E_INVALID_NUMBER, "%.*s is out of range for %s", (int)(at.n > 64 ? 64 : at.n),
                         at.p, cv_dtype_name(dt));
    return true;
}

bool cv_p_dense(cv_parser *P, const cv_type *t)
{
    size_t size = cv_dtype_size(t->dtype);
    P->bytes.n = 0;
    cv_p_next(P);  /* 'dense' */
    bool done;
    if (!cv_p_list_open(P, TK_LPAREN, TK_RPAREN, "'(' after dense", &done))
        return false;
    while (!done) {
        void *slot = cv_vec_push(&P->bytes, size);
        if (!slot)
            return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
        if (!dense_elem(P, t->dtype, slot))
            return false;
        if (!cv_p_list_sep(P, TK_RPAREN, "',' or ')' in the constant", &done))
            return false;
    }
    return true;
}

/* ---- loc(...) ------------------------------------------------------------ */

static bool parse_pos(cv_parser *P, int *out)
{
    const cv_token *t = &P->cur;
    if (t->kind != TK_INT)
        return fail_expected(P, "a line or column number");
    if (t->overflow || t->i < 0 || t->i > INT_MAX)
        return cv_p_fail(P, t, CV_E_INVALID_NUMBER, "line or column %.*s is out of range",
                         (int)(t->n > 64 ? 64 : t->n), t->p);
    *out = (int)t->i;
    cv_p_next(P);
    return true;
}

static bool parse_loc_item(cv_parser *P)
{
    const cv_token *t = &P->cur;
    if (t->kind != TK_STRING)
        return fail_expected(P, "a quoted file or node name");
    cv_ploc l = {.file = cv_lex_cstr(&P->L, t)};
    cv_p_next(P);
    if (P->cur.kind == TK_COLON) {
        cv_p_next(P);
        if (!parse_pos(P, &l.line) || !cv_p_expect(P, TK_COLON, "':' and a column") ||
            !parse_pos(P, &l.col))
            return false;
    }
    cv_ploc *slot = cv_vec_push(&P->locs, sizeof *slot);
    if (!slot)
        return cv_p_fail(P, &P->cur, CV_E_OUT_OF_MEMORY, "out of memory");
    *slot = l;
    return true;
}

bool cv_p_loc(cv_parser *P)
{
    if (fast_loc(P))
        return true;
    cv_p_next(P);  /* 'loc' */
    if (!cv_p_expect(P, TK_LPAREN, "'(' after loc"))
        return false;
    if (cv_tok_is(&P->cur, "fused")) {
        cv_p_next(P);
        if (!cv_p_expect(P, TK_LBRACK, "'[' after fused"))
            return false;
        for (bool done = false; !done;)
            if (!parse_loc_item(P) || !cv_p_list_sep(P, TK_RBRACK, "',' or ']' in fused[...]", &done))
                return false;
    } else if (!parse_loc_item(P)) {
        return false;
    }
    return cv_p_expect(P, TK_RPAREN, "')' to close loc(");
}
