/* Failure patterns: a diagnostic's code and its path with everything that
 * differs between two occurrences of the same mistake taken out.
 *
 * Paths come in three dialects (common/diag.h):
 *   DSL    FunctionDef[lenet]>For>Assign>Call[cvl.max_pool2d]>arg[0]>Call[cvl.conv2d]>arg[1]
 *   CU-IR  @lenet>%3=conv2d[node_7] (@F>%v=conv2d), @lenet>%x, @lenet>return
 *   ONNX   Graph>Node[Conv](Relu,init,init), ModelProto>graph>node
 * What goes:
 *   - user names: functions, variables, attributes, helper calls, keyword
 *     arguments that are not attributes of the op, IR values and models
 *   - numbers: list indices, a helper's argument positions
 *   - positions in the program: the blocks around the statement (loops,
 *     ifs, nested defs), the calls around the innermost operation, and
 *     repeats (p.a.b.c is Attribute, as is p.a)
 * What stays: the kind of definition and statement, the innermost operation
 * (an op call with its operand slot or attribute name, an operator), the IR
 * op, the ONNX op type and what feeds it.  An op call is normalised to
 * cvl.<op> however the module was imported. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "compiler-core/cuvil.h"
#include "controller/controller.h"

#define MAX_ELEMS 64
#define KEEP_HEAD 16

typedef struct elem {
    const char *s;       /* into the path */
    size_t n;
    size_t kind_n;       /* length of the kind before '[' (n if none) */
    const char *arg;     /* inside the brackets, or NULL */
    size_t arg_n;
} elem;

typedef struct out_buf {
    char *p;
    size_t cap, len;
    size_t last;         /* where the last element starts */
} out_buf;

static void put(out_buf *o, const char *s, size_t n)
{
    if (o->len >= o->cap)
        return;
    size_t room = o->cap - o->len;
    if (n > room)
        n = room;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void puts_(out_buf *o, const char *s) { put(o, s, strlen(s)); }

/* Splits at '>' outside brackets and parentheses (Compare[>] holds one). */
static int split(const char *path, elem *v, int max)
{
    int n = 0, depth = 0;
    const char *start = path;
    for (const char *p = path;; p++) {
        if (*p == '[' || *p == '(')
            depth++;
        else if ((*p == ']' || *p == ')') && depth > 0)
            depth--;
        if (*p && (*p != '>' || depth > 0))
            continue;
        if (p > start) {
            /* keep the outermost elements (where the statement is) and
             * the innermost ones (the operation) */
            if (n == max) {
                memmove(v + KEEP_HEAD, v + KEEP_HEAD + 1,
                        (size_t)(max - KEEP_HEAD - 1) * sizeof *v);
                n--;
            }
            elem *e = &v[n++];
            *e = (elem){.s = start, .n = (size_t)(p - start), .kind_n = (size_t)(p - start)};
            const char *br = memchr(start, '[', e->n);
            if (br && start[e->n - 1] == ']') {
                e->kind_n = (size_t)(br - start);
                e->arg = br + 1;
                e->arg_n = e->n - e->kind_n - 2;
            }
        }
        if (!*p)
            break;
        start = p + 1;
    }
    return n;
}

static bool kind_is(const elem *e, const char *k)
{
    return e->kind_n == strlen(k) && strncmp(e->s, k, e->kind_n) == 0;
}

static bool kind_in(const elem *e, const char *const *kinds)
{
    for (int i = 0; kinds[i]; i++)
        if (kind_is(e, kinds[i]))
            return true;
    return false;
}

static const char *const STATEMENTS[] = {
    "FunctionDef", "ClassDef", "Assign", "AugAssign", "AnnAssign", "Return", "For", "If",
    "While", "Expr", "Import", "ImportFrom", "Pass", "Break", "Continue", "Global",
    "Nonlocal", "Delete", "Assert", "Raise", "Try", "ExceptHandler", "With", "Async", NULL};
/* Expressions that compute something: the innermost one is the mistake's place. */
static const char *const OPERATIONS[] = {"Call", "BinOp", "UnaryOp", "BoolOp", "Compare",
                                         "IfExp", NULL};
/* Kinds whose bracket holds a user's name. */
static const char *const NAMED[] = {"FunctionDef", "ClassDef", "Name", "Attribute", "alias",
                                    "param", NULL};
static const char *const BUILTINS[] = {"range", "len", "min", "max", "sum", "abs", "int",
                                       "float", "bool", "tuple", "list", "zip", "enumerate",
                                       "print", NULL};

/* The op a DSL call names ("cvl.conv2d", "cv.conv2d", "conv2d" after
 * `from cuvil import conv2d`), or NULL for a helper or anything else. */
static const char *call_op(const elem *e, char *buf, size_t size)
{
    if (!kind_is(e, "Call") || !e->arg || e->arg_n == 0 || e->arg_n >= size)
        return NULL;
    memcpy(buf, e->arg, e->arg_n);
    buf[e->arg_n] = '\0';
    const char *dot = strrchr(buf, '.');
    const char *last = dot ? dot + 1 : buf;
    if (cv_op_def_lookup(last) || (dot && strcmp(last, "model") == 0))
        return last;
    return NULL;
}

static bool is_builtin_call(const elem *e)
{
    for (int i = 0; e->arg && BUILTINS[i]; i++)
        if (e->arg_n == strlen(BUILTINS[i]) && strncmp(e->arg, BUILTINS[i], e->arg_n) == 0)
            return true;
    return false;
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A CU-IR element: @name -> @F, %name -> %v, %name=op[node] -> %v=op. */
static bool put_ir(out_buf *o, const elem *e)
{
    if (e->s[0] == '@') {
        puts_(o, "@F");
        return true;
    }
    if (e->s[0] != '%')
        return false;
    const char *eq = memchr(e->s, '=', e->n);
    puts_(o, "%v");
    if (eq) {
        /* an op name not in the op table is the user's (a typo) */
        const char *end = e->s + e->n, *br = memchr(eq, '[', (size_t)(end - eq));
        char op[64];
        size_t n = (size_t)((br ? br : end) - eq - 1);
        snprintf(op, sizeof op, "%.*s", (int)n, eq + 1);
        puts_(o, "=");
        puts_(o, n < sizeof op && cv_op_def_lookup(op) ? op : "op");
    }
    return true;
}

/* One element, abstracted; outer is the element it hangs below (or NULL). */
static void put_elem(out_buf *o, const elem *e, const elem *outer)
{
    char buf[256];
    const char *op = outer ? call_op(outer, buf, sizeof buf) : NULL;
    if (put_ir(o, e))
        return;
    if (kind_in(e, NAMED) || !e->arg) {
        put(o, e->s, e->kind_n);
    } else if (kind_is(e, "Call")) {
        char own[256];
        const char *callee = call_op(e, own, sizeof own);
        if (callee) {
            puts_(o, "Call[cvl.");
            puts_(o, callee);
            puts_(o, "]");
        } else {
            put(o, e->s, is_builtin_call(e) ? e->n : e->kind_n);
        }
    } else if (kind_is(e, "arg")) {
        /* an op's operand slot is part of the op; a helper's position is not */
        put(o, e->s, op ? e->n : e->kind_n);
    } else if (kind_is(e, "kw")) {
        const cv_op_def *def = op ? cv_op_def_lookup(op) : NULL;
        char name[128];
        bool attr = false;
        if (def && e->arg_n < sizeof name) {
            memcpy(name, e->arg, e->arg_n);
            name[e->arg_n] = '\0';
            attr = cv_op_def_attr(def, name, NULL) != NULL;
        }
        put(o, e->s, attr ? e->n : e->kind_n);
    } else if (all_digits(e->arg, e->arg_n)) {
        put(o, e->s, e->kind_n);
        puts_(o, "[#]");
    } else {
        put(o, e->s, e->n);   /* operators, ONNX op types: the same in every model */
    }
}

/* Appends element e after a '>' unless it repeats the element before it. */
static void append(out_buf *o, const elem *e, const elem *outer)
{
    size_t mark = o->len, prev = o->last;
    if (o->len)
        puts_(o, ">");
    size_t start = o->len;
    put_elem(o, e, outer);
    size_t n = o->len - start;
    if (mark && mark - prev == n && memcmp(o->p + prev, o->p + start, n) == 0) {
        o->len = mark;
        o->p[mark] = '\0';
        return;
    }
    o->last = start;
}

static void abstract_path(const char *path, out_buf *o)
{
    elem v[MAX_ELEMS];
    int n = split(path, v, MAX_ELEMS);
    if (n == 0)
        return;
    /* the statement: the last statement element; blocks before it go */
    int stmt = -1;
    for (int i = 0; i < n; i++)
        if (kind_in(&v[i], STATEMENTS))
            stmt = i;
    int first_tail = stmt + 1;
    if (stmt >= 0) {
        append(o, &v[0], NULL);
        if (stmt > 0 && !kind_is(&v[stmt], "FunctionDef"))
            append(o, &v[stmt], NULL);
        /* the tail starts at the innermost operation */
        for (int i = first_tail; i < n; i++)
            if (kind_in(&v[i], OPERATIONS))
                first_tail = i;
    } else {
        first_tail = 0;
    }
    for (int i = first_tail; i < n; i++)
        append(o, &v[i], i > 0 ? &v[i - 1] : NULL);
}

static const char *const CLASS_NAMES[CV_FAIL__COUNT] = {"model", "ice", "timeout", "oom",
                                                        "infra", "flaky"};

const char *cv_fail_class_name(cv_fail_class c)
{
    return c >= 0 && c < CV_FAIL__COUNT ? CLASS_NAMES[c] : "?";
}

void cv_failure_pattern(cv_fail_class cls, int code, const char *path,
                        char out[CV_PATTERN_MAX + 1])
{
    out_buf o = {.p = out, .cap = CV_PATTERN_MAX};
    out[0] = '\0';
    char head[32];
    /* a class with no diagnostic is named by the class alone */
    if (cls != CV_FAIL_MODEL || code <= 0)
        puts_(&o, cv_fail_class_name(cls));
    if (code <= 0)
        return;
    if (cls != CV_FAIL_MODEL)
        puts_(&o, " ");
    snprintf(head, sizeof head, "CV%04d", code < 10000 ? code : 0);
    puts_(&o, head);
    if (!path || !*path)
        return;
    puts_(&o, " ");
    out_buf rest = {.p = out + o.len, .cap = o.cap - o.len};
    abstract_path(path, &rest);
    if (rest.len == 0)
        out[--o.len] = '\0';   /* the blank before an empty path */
}
