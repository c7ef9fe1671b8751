/* Entry points of the model language front end: read, parse, analyse, lower. */
#include "compiler-core/frontends/dsl/dsl.h"

#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "compiler-core/frontends/dsl/parser.h"
#include "compiler-core/frontends/dsl/sema.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

cv_module *cv_dsl_parse_text(const char *text, size_t len, const char *path, cv_diag *d)
{
    const char *file = path ? path : "<input>";
    int errors_before = d->n_errors;
    if (len <= DSL_MAX_FILE_BYTES)
        cv_diag_add_source(d, file, text, len);
    cv_arena arena;   /* owned here: the tree and every compile-time value */
    cv_arena_init(&arena);
    bool syntax_errors;
    dsl_node *mod = dsl_parse_source(text, len, file, &arena, d, &syntax_errors);
    cv_module *m = mod ? cv_module_new(file) : NULL;
    char *dir = path ? cv_fs_dirname(path) : NULL;   /* owned here */
    if (!mod || !m || (path && !dir)) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){file, 1, 1, 1, 1}, "out of memory reading %s", file);
    } else if (!syntax_errors) {
        dsl_sema s = {.a = &arena, .d = d, .file = m->path, .loc_file = base_name(m->path),
                      .base_dir = dir ? dir : ".", .m = m};
        dsl_run_module(&s, mod);
    }
    free(dir);
    cv_arena_free(&arena);
    if (d->n_errors > errors_before) {
        cv_module_free(m);
        return NULL;
    }
    return m;
}

bool cv_dsl_matches(const char *path, const char *head, size_t head_len)
{
    (void)head;
    (void)head_len;
    size_t n = strlen(path);
    return n >= 7 && strcmp(path + n - 7, ".cvl.py") == 0;
}

cv_module *cv_dsl_load(const char *path, cv_diag *d)
{
    char *text = NULL;   /* owned here */
    size_t len = 0;
    if (cv_fs_read_file(path, DSL_MAX_FILE_BYTES, &text, &len, d) != 0)
        return NULL;
    cv_module *m = cv_dsl_parse_text(text, len, path, d);
    free(text);
    return m;
}

char *cv_dsl_ast_text(const char *text, size_t len, const char *path, cv_diag *d)
{
    cv_arena arena;   /* owned here */
    cv_arena_init(&arena);
    bool errors;
    dsl_node *mod = dsl_parse_source(text, len, path ? path : "<input>", &arena, d, &errors);
    char *out = NULL;
    if (mod && !errors) {
        cv_sb sb = CV_SB_INIT;
        dsl_ast_dump(mod, &sb);
        out = cv_sb_steal(&sb);
    }
    cv_arena_free(&arena);
    return out;
}
