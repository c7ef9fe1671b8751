/* libFuzzer target: the model language tokenizer and parser on arbitrary
 * bytes, checking invariants on the way (every token and node position is
 * in range, the token array ends with EOF, AST paths and dumps terminate),
 * then the whole front end (analysis and lowering through the builder) on
 * inputs that parse.  The model path is in a directory that does not
 * exist, so a fuzzed weights= never opens a file. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/strbuf.h"
#include "compiler-core/frontends/dsl/dsl.h"
#include "compiler-core/frontends/dsl/parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_node(dsl_node *n, void *ctx)
{
    cv_sb *sb = ctx;
    if (n->line < 1 || n->col < 1 || n->end_line < n->line)
        abort();
    cv_sb_reset(sb);
    dsl_ast_path(n, sb);
    dsl_ast_children(n, check_node, ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cv_arena arena;
    cv_arena_init(&arena);
    cv_diag d;
    cv_diag_init(&d);
    dsl_tokens toks;
    dsl_lex((const char *)data, size, "fuzz.cvl.py", &arena, &d, &toks);
    if (toks.n < 1 || toks.v[toks.n - 1].kind != DSL_T_EOF)
        abort();
    for (int i = 0; i < toks.n; i++)
        if (toks.v[i].line < 1 || toks.v[i].col < 1)
            abort();
    int first = d.n ? 1 : 0;
    dsl_node *m = dsl_parse(&toks, "fuzz.cvl.py", &arena, &d, first);
    if (m) {
        cv_sb sb = CV_SB_INIT;
        check_node(m, &sb);
        cv_sb_reset(&sb);
        dsl_ast_dump(m, &sb);
        cv_sb_free(&sb);
    }
    for (int i = 0; i < d.n; i++)
        if (!d.v[i].path || d.v[i].span.line < 1 || d.v[i].root_id >= d.v[i].id)
            abort();
    bool parsed = m && !cv_diag_has_errors(&d);
    cv_diag_free(&d);
    cv_arena_free(&arena);
    if (parsed) {
        cv_diag_init(&d);
        cv_module *mod = cv_dsl_parse_text((const char *)data, size,
                                           "/nonexistent-cuvil-fuzz/fuzz.cvl.py", &d);
        for (int i = 0; i < d.n; i++)
            if (!d.v[i].path || d.v[i].span.line < 1 || d.v[i].root_id >= d.v[i].id)
                abort();
        if (mod && cv_diag_has_errors(&d))
            abort();
        cv_module_free(mod);
        cv_diag_free(&d);
    }
    return 0;
}
