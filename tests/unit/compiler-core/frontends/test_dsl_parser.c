/* The model language parser: tree shapes and spans, AST paths, every
 * statement form, and recovery that reports each independent error once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/parser.h"

typedef struct parsed {
    cv_arena arena;
    cv_diag diag;
    dsl_node *mod;
    bool errors;
} parsed;

static parsed *parse(const char *src)
{
    parsed *p = calloc(1, sizeof *p);
    cv_arena_init(&p->arena);
    cv_diag_init(&p->diag);
    p->mod = dsl_parse_source(src, strlen(src), "t.cvl.py", &p->arena, &p->diag, &p->errors);
    assert_non_null(p->mod);
    return p;
}

static void done(parsed *p)
{
    cv_diag_free(&p->diag);
    cv_arena_free(&p->arena);
    free(p);
}

static void assert_dump(const dsl_node *n, const char *want)
{
    cv_sb sb = CV_SB_INIT;
    dsl_ast_dump(n, &sb);
    if (strcmp(cv_sb_str(&sb), want) != 0)
        fprintf(stderr, "got:  %s\nwant: %s\n", cv_sb_str(&sb), want);
    assert_string_equal(cv_sb_str(&sb), want);
    cv_sb_free(&sb);
}

static void assert_diag(const parsed *p, int i, int code, int line, int col, const char *path)
{
    assert_true(i < p->diag.n);
    const cv_diag_entry *e = &p->diag.v[i];
    if (e->code != code || e->span.line != line || e->span.col != col ||
        strcmp(e->path ? e->path : "", path) != 0)
        fprintf(stderr, "diag %d: CV%d %d:%d %s: %s\n", i, e->code, e->span.line, e->span.col,
                e->path, e->msg);
    assert_int_equal(e->code, code);
    assert_int_equal(e->span.line, line);
    assert_int_equal(e->span.col, col);
    assert_string_equal(e->path ? e->path : "", path);
}

static void test_expression_tree(void **state)
{
    (void)state;
    parsed *p = parse("y = -a.b[1:, ::2] @ w.T + f(x, k=2) ** 2\n");
    assert_false(p->errors);
    assert_dump(p->mod->body.v[0],
                "(Assign @1:1-1:41 a:(BinOp[+] @1:5-1:41 "
                "a:(BinOp[@] @1:5-1:24 a:(UnaryOp[-] @1:5-1:18 a:(Subscript @1:6-1:18 "
                "a:(Attribute[b] @1:6-1:9 a:(Name[a] @1:6-1:7)) b:(Tuple @1:10-1:17 items:["
                "(Slice @1:10-1:12 a:(Constant @1:10-1:11 1)) (Slice @1:14-1:17 a:_ b:_ "
                "c:(Constant @1:16-1:17 2))]))) b:(Attribute[T] @1:21-1:24 a:(Name[w] @1:21-1:22))) "
                "b:(BinOp[**] @1:27-1:41 a:(Call[f] @1:27-1:36 a:(Name[f] @1:27-1:28) "
                "items:[(Name[x] @1:29-1:30)] items2:[(kw[k] @1:32-1:35 a:(Constant @1:34-1:35 2))]) "
                "b:(Constant @1:40-1:41 2))) items:[(Name[y] @1:1-1:2)])");
    done(p);
}

static void test_precedence(void **state)
{
    (void)state;
    parsed *p = parse("a or b and not c < d | e ^ f & g << h + i * j ** -k\n");
    assert_false(p->errors);
    cv_sb sb = CV_SB_INIT;
    dsl_ast_dump(p->mod->body.v[0], &sb);
    /* Spot checks of nesting: ** binds tighter than unary minus on its right. */
    assert_non_null(strstr(cv_sb_str(&sb), "(BinOp[**] @1:45-1:52 a:(Name[j]"));
    assert_non_null(strstr(cv_sb_str(&sb), "(BoolOp[or] @1:1-1:52 items:[(Name[a]"));
    assert_non_null(strstr(cv_sb_str(&sb), "(Compare[<] @1:16-1:52"));
    cv_sb_free(&sb);
    done(p);
}

static void test_statements(void **state)
{
    (void)state;
    const char *src =
        "\"\"\"doc\"\"\"\n"
        "import cuvil as cvl, os.path\n"
        "from .a import (b as c, d,)\n"
        "K: int = 3\n"
        "@cvl.model(input_shapes=[(\"N\", 4)])\n"
        "def f(x, p, *, k=1, **kw) -> int:\n"
        "    global g\n"
        "    a, *b = x; a += 1\n"
        "    for i, j in zip(u, v):\n"
        "        if i: continue\n"
        "        elif j:\n"
        "            break\n"
        "        else:\n"
        "            pass\n"
        "    else:\n"
        "        del a\n"
        "    while x:\n"
        "        x = [i for i in y if i] + {k: v for k, v in z} + {1, 2}\n"
        "    try:\n"
        "        raise E from F\n"
        "    except (A, B) as e:\n"
        "        assert e, 'msg'\n"
        "    finally:\n"
        "        pass\n"
        "    with open(a) as h, b:\n"
        "        yield h\n"
        "    return lambda q, r=2: q if r else (yield)\n"
        "class C(Base, metaclass=M):\n"
        "    async def m(self): await self.x\n";
    parsed *p = parse(src);
    for (int i = 0; i < p->diag.n; i++)
        fprintf(stderr, "%d:%d %s\n", p->diag.v[i].span.line, p->diag.v[i].span.col, p->diag.v[i].msg);
    assert_false(p->errors);
    assert_int_equal(p->mod->body.n, 6);
    const dsl_node *f = p->mod->body.v[4];
    assert_int_equal(f->kind, DSL_N_FUNCTIONDEF);
    assert_string_equal(f->name, "f");
    assert_int_equal(f->items.n, 5);       /* x p * k **kw */
    assert_int_equal(f->items2.n, 1);      /* the decorator */
    assert_int_equal(f->line, 6);
    assert_int_equal(f->end_line, 27);
    assert_int_equal(f->body.n, 8);
    const dsl_node *loop = f->body.v[3];
    assert_int_equal(loop->kind, DSL_N_FOR);
    assert_int_equal(loop->orelse.n, 1);
    const dsl_node *iff = loop->body.v[0];
    assert_int_equal(iff->kind, DSL_N_IF);
    assert_int_equal(iff->orelse.v[0]->kind, DSL_N_IF);   /* elif */
    assert_int_equal(iff->orelse.v[0]->orelse.v[0]->kind, DSL_N_PASS);
    assert_int_equal(f->body.v[5]->kind, DSL_N_TRY);
    assert_int_equal(f->body.v[5]->items.n, 1);
    assert_int_equal(f->body.v[5]->final.n, 1);
    assert_int_equal(p->mod->body.v[5]->body.v[0]->kind, DSL_N_ASYNC);
    done(p);
}

/* Finds the first node of a kind, depth first. */
static const dsl_node *find(const dsl_node *n, dsl_node_kind k, const char *name);
typedef struct find_ctx { dsl_node_kind k; const char *name; const dsl_node *hit; } find_ctx;
static void find_child(dsl_node *c, void *vctx)
{
    find_ctx *f = vctx;
    if (!f->hit)
        f->hit = find(c, f->k, f->name);
}
static const dsl_node *find(const dsl_node *n, dsl_node_kind k, const char *name)
{
    if (n->kind == k && (!name || (n->name && strcmp(n->name, name) == 0)))
        return n;
    find_ctx f = {k, name, NULL};
    dsl_ast_children(n, find_child, &f);
    return f.hit;
}

static void assert_path(const dsl_node *n, const char *want)
{
    cv_sb sb = CV_SB_INIT;
    dsl_ast_path(n, &sb);
    assert_string_equal(cv_sb_str(&sb), want);
    cv_sb_free(&sb);
}

static void test_paths(void **state)
{
    (void)state;
    parsed *p = parse("def lenet(x, p):\n"
                      "    for i in range(2):\n"
                      "        x = cvl.relu(cvl.conv2d(x, p.conv1.weight, padding=K))\n"
                      "    return x\n");
    assert_false(p->errors);
    assert_path(find(p->mod, DSL_N_ATTRIBUTE, "weight"),
                "FunctionDef[lenet]>For>Assign>Call[cvl.relu]>arg[0]>Call[cvl.conv2d]>arg[1]");
    assert_path(find(p->mod, DSL_N_NAME, "K"),
                "FunctionDef[lenet]>For>Assign>Call[cvl.relu]>arg[0]>Call[cvl.conv2d]>kw[padding]");
    assert_path(find(p->mod, DSL_N_CALL, NULL), "FunctionDef[lenet]>For>Call[range]");
    assert_path(find(p->mod, DSL_N_RETURN, NULL), "FunctionDef[lenet]>Return");
    assert_path(p->mod, "Module");
    done(p);
}

static void test_recovery(void **state)
{
    (void)state;
    parsed *p = parse("import cuvil as cvl\n"
                      "def f(x):\n"
                      "    y = (x +\n"           /* never closed: the next line is a statement */
                      "    return 1 2\n"         /* expected end of line */
                      "def g(a, a):\n"           /* duplicate parameter */
                      "    for 1 in x:\n"        /* invalid target, block still checked */
                      "        z = = 3\n"        /* expected an expression */
                      "    if q\n"               /* missing ':' */
                      "        pass\n"
                      "h(k=1, 2)\n");            /* positional after keyword */
    assert_true(p->errors);
    assert_int_equal(p->diag.n, 8);
    assert_diag(p, 0, 1206, 3, 9, "Module>Bracket");
    assert_diag(p, 1, 1002, 3, 13, "FunctionDef[f]>Assign");
    assert_int_equal(p->diag.v[1].root_id, 1);  /* a consequence of the open bracket */
    assert_diag(p, 2, 1002, 4, 14, "FunctionDef[f]>Return");
    assert_int_equal(p->diag.v[2].root_id, 0);
    assert_diag(p, 3, 1209, 5, 10, "FunctionDef[g]");
    assert_diag(p, 4, 1205, 6, 9, "FunctionDef[g]>For");
    assert_diag(p, 5, 1002, 7, 13, "FunctionDef[g]>For>Assign");
    assert_diag(p, 6, 1002, 8, 9, "FunctionDef[g]>If");
    assert_diag(p, 7, 1208, 10, 8, "Expr");
    done(p);
}

static void test_block_errors(void **state)
{
    (void)state;
    parsed *p = parse("def f():\nreturn 1\n  x = 2\n");
    assert_int_equal(p->diag.n, 2);
    assert_diag(p, 0, 1204, 2, 1, "FunctionDef[f]");
    assert_diag(p, 1, 1203, 3, 3, "Assign");
    done(p);

    p = parse("x = (1 +\n");
    assert_int_equal(p->diag.n, 2);
    assert_diag(p, 0, 1206, 1, 5, "Module>Bracket");
    assert_diag(p, 1, 1002, 2, 1, "Assign");
    assert_int_equal(p->diag.v[1].root_id, 1);
    done(p);

    p = parse("1 = x\nf() = 2\nx += 1, 2\n(a, b) += 1\n");
    assert_int_equal(p->diag.n, 3);
    assert_diag(p, 0, 1205, 1, 1, "Assign");
    assert_diag(p, 1, 1205, 2, 1, "Assign");
    assert_diag(p, 2, 1205, 4, 1, "AugAssign");
    done(p);

    p = parse("def f(a=1, b):\n    pass\nx = $\n");
    assert_int_equal(p->diag.n, 3);
    assert_diag(p, 0, 1001, 3, 5, "Module>Token");
    assert_diag(p, 1, 1208, 1, 12, "FunctionDef[f]");
    assert_diag(p, 2, 1002, 3, 6, "Assign");
    assert_int_equal(p->diag.v[2].root_id, 1);
    done(p);
}

static void test_depth_limit(void **state)
{
    (void)state;
    /* Unary chains and a**b**c nest without brackets: bounded. */
    size_t n = 3 * DSL_MAX_EXPR_DEPTH + 8;
    char *src = malloc(n + 8);
    memcpy(src, "x = ", 4);
    memset(src + 4, '-', n);
    memcpy(src + 4 + n, "1\n", 3);
    parsed *p = parse(src);
    assert_int_equal(p->diag.n, 1);
    assert_int_equal(p->diag.v[0].code, 1007);
    done(p);
    free(src);
}

static void test_strings_concat(void **state)
{
    (void)state;
    parsed *p = parse("s = 'ab' \"cd\" '''ef'''\nt = b'x' 'y'\n");
    assert_string_equal(p->mod->body.v[0]->a->sval, "abcdef");
    assert_int_equal(p->diag.n, 1);
    assert_diag(p, 0, 1002, 2, 5, "Assign");
    done(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expression_tree),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_statements),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_recovery),
        cmocka_unit_test(test_block_errors),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_strings_concat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
