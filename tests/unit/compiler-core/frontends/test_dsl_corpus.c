/* The model language error corpus (the .cvl.py files of tests/dsl): one test per file.
 * Each file's header lists the diagnostics the front end must report, in
 * order, with code, line:col, AST path and (for consequences of an earlier
 * error) which one caused it:
 *     # expect: CV3201 8:26 FunctionDef[m]>Return>Call[cvl.conv2d]>arg[1]
 *     # expect: CV1002 8:26 FunctionDef[m]>Return caused-by=1
 *     # message: did you mean 'conv1.weight'?     (some message contains it)
 *     # roots: 3                                  (number of root causes)
 * The files run next to weights written by examples/models/gen_weights.py.
 * Inputs that cannot live in a text file (NUL bytes, bad UTF-8, huge
 * tokens or files) are made here.  A last test checks that every dsl-*
 * code of the registry has a corpus file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/frontends/dsl/dsl.h"
#include "compiler-core/frontends/dsl/lexer.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

enum { MAX_EXPECT = 16, MAX_CASES = 256 };

typedef struct expect {
    int code, line, col, caused_by;
    char path[256];
} expect;

typedef struct corpus_case {
    char name[128];
    char *text;          /* owned; NULL for synthetic cases */
    size_t len;
    const char *bytes;   /* synthetic input */
    size_t bytes_len;
    expect ex[MAX_EXPECT];
    int n_ex;
    int roots;           /* -1: not checked */
    char message[4][160];
    int n_message;
} corpus_case;

static char *g_dir;      /* owned: the temp dir with the weights */
static corpus_case g_cases[MAX_CASES];
static int g_n;

static void parse_header(corpus_case *c)
{
    c->roots = -1;
    for (const char *p = c->text; p && *p == '#';) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        expect *e = &c->ex[c->n_ex];
        if (strncmp(line, "# expect: ", 10) == 0 && c->n_ex < MAX_EXPECT) {
            char cb[32] = "";
            if (sscanf(line + 10, "CV%d %d:%d %255s %31s", &e->code, &e->line, &e->col, e->path, cb) >= 4) {
                sscanf(cb, "caused-by=%d", &e->caused_by);
                c->n_ex++;
            }
        } else if (strncmp(line, "# message: ", 11) == 0 && c->n_message < 4) {
            snprintf(c->message[c->n_message++], sizeof c->message[0], "%s", line + 11);
        } else if (strncmp(line, "# roots: ", 9) == 0) {
            c->roots = atoi(line + 9);
        }
        p = eol ? eol + 1 : NULL;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const corpus_case *)a)->name, ((const corpus_case *)b)->name);
}

static void load_corpus(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/dsl", cv_tmpdir_src_root());
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *ent; (ent = readdir(d)) && g_n < MAX_CASES;) {
        size_t n = strlen(ent->d_name);
        if (n < 8 || strcmp(ent->d_name + n - 7, ".cvl.py") != 0 || n >= sizeof g_cases[0].name)
            continue;
        corpus_case *c = &g_cases[g_n];
        snprintf(c->name, sizeof c->name, "%s", ent->d_name);
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        c->text = cv_tmpdir_read_file(path, &c->len);
        parse_header(c);
        g_n++;
    }
    closedir(d);
    qsort(g_cases, (size_t)g_n, sizeof g_cases[0], by_name);
}

/* ---- synthetic inputs ----------------------------------------------------- */

static char *g_long_token, *g_huge_file;   /* owned */

static void add_synthetic(const char *name, const char *bytes, size_t len, int code, int line,
                          int col, const char *path)
{
    corpus_case *c = &g_cases[g_n++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->bytes = bytes;
    c->bytes_len = len;
    c->roots = -1;
    c->n_ex = 1;
    c->ex[0] = (expect){.code = code, .line = line, .col = col};
    snprintf(c->ex[0].path, sizeof c->ex[0].path, "%s", path);
}

static void make_synthetic(void)
{
    static const char nul[] = "import cuvil as cvl\nX = 'a\0b'\n";
    static const char utf8[] = "import cuvil as cvl\n# caf\xe9\n";
    add_synthetic("CV1006_nul_byte (synthetic)", nul, sizeof nul - 1, 1006, 2, 7, "Module>Source");
    add_synthetic("CV1005_invalid_utf8 (synthetic)", utf8, sizeof utf8 - 1, 1005, 2, 6, "Module>Source");
    size_t n = DSL_MAX_TOKEN_BYTES + 10;
    g_long_token = malloc(n + 8);
    memcpy(g_long_token, "X = ", 4);
    memset(g_long_token + 4, 'a', n);
    memcpy(g_long_token + 4 + n, "\n", 2);
    add_synthetic("CV1009_token_too_long (synthetic)", g_long_token, n + 5, 1009, 1, 5,
                  "Module>Token[name]");
    size_t big = (size_t)DSL_MAX_FILE_BYTES + 1;
    g_huge_file = malloc(big);
    memset(g_huge_file, '\n', big);
    add_synthetic("CV1011_input_too_large (synthetic)", g_huge_file, big, 1011, 1, 1, "Module>Source");
}

/* ---- running one case ----------------------------------------------------- */

static void dump(const cv_diag *d)
{
    for (int i = 0; i < d->n; i++)
        fprintf(stderr, "  got: CV%04d %d:%d %s root=%d: %s\n", d->v[i].code, d->v[i].span.line,
                d->v[i].span.col, d->v[i].path ? d->v[i].path : "", d->v[i].root_id, d->v[i].msg);
}

static void check(const corpus_case *c, const cv_diag *d)
{
    if (d->n != c->n_ex)
        dump(d);
    assert_int_equal(d->n, c->n_ex);
    int roots = 0;
    for (int i = 0; i < c->n_ex; i++) {
        const cv_diag_entry *e = &d->v[i];
        const expect *x = &c->ex[i];
        if (e->code != x->code || e->span.line != x->line || e->span.col != x->col ||
            strcmp(e->path ? e->path : "", x->path) != 0)
            dump(d);
        assert_int_equal(e->code, x->code);
        assert_int_equal(e->span.line, x->line);
        assert_int_equal(e->span.col, x->col);
        assert_string_equal(e->path ? e->path : "", x->path);
        assert_int_equal(e->root_id, x->caused_by ? d->v[x->caused_by - 1].id : 0);
        roots += e->root_id == 0;
    }
    if (c->roots >= 0)
        assert_int_equal(roots, c->roots);
    for (int m = 0; m < c->n_message; m++) {
        bool found = false;
        for (int i = 0; i < d->n; i++) {
            found |= strstr(d->v[i].msg, c->message[m]) != NULL;
            for (int k = 0; k < d->v[i].n_notes; k++)
                found |= strstr(d->v[i].notes[k], c->message[m]) != NULL;
        }
        if (!found)
            dump(d);
        assert_true(found);
    }
}

static void run_case(void **state)
{
    const corpus_case *c = *state;
    cv_diag d;
    cv_diag_init(&d);
    cv_module *m;
    if (c->bytes) {
        m = cv_dsl_parse_text(c->bytes, c->bytes_len, "synthetic.cvl.py", &d);
    } else {
        assert_true(c->n_ex > 0);  /* every corpus file lists what it expects */
        assert_int_equal(cv_tmpdir_write(g_dir, c->name, c->text, c->len), 0);
        char *path = cv_tmpdir_path(g_dir, c->name);
        m = cv_dsl_load(path, &d);
        free(path);
    }
    assert_null(m);
    check(c, &d);
    cv_diag_free(&d);
}

/* Every dsl-* code of the registry has a corpus file named after it. */
static void test_every_code_covered(void **state)
{
    (void)state;
    size_t n;
    const cv_diag_code_info *codes = cv_diag_codes(&n);
    int missing = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(codes[i].name, "dsl-", 4) != 0)
            continue;
        char prefix[16];
        snprintf(prefix, sizeof prefix, "CV%04d_", codes[i].code);
        bool found = false;
        for (int k = 0; k < g_n; k++)
            found |= strncmp(g_cases[k].name, prefix, strlen(prefix)) == 0 && g_cases[k].n_ex > 0 &&
                     g_cases[k].ex[0].code == codes[i].code;
        if (!found) {
            fprintf(stderr, "no corpus file for CV%04d %s\n", codes[i].code, codes[i].name);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

static int group_setup(void **state)
{
    (void)state;
    g_dir = cv_tmpdir_make("dsl-corpus");
    if (!g_dir)
        return -1;
    char script[1024];
    snprintf(script, sizeof script, "%s/examples/models/gen_weights.py", cv_tmpdir_src_root());
    const char *args[] = {script, g_dir, NULL};
    int rc = cv_pyrun("import runpy, sys\n"
                      "path = sys.argv[1]\n"
                      "sys.argv = [path] + sys.argv[2:]\n"
                      "runpy.run_path(path, run_name='__main__')\n", args, NULL);
    return rc == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return cv_tmpdir_remove(g_dir);
}

int main(void)
{
    load_corpus();
    make_synthetic();
    static struct CMUnitTest tests[MAX_CASES + 1];
    for (int i = 0; i < g_n; i++)
        tests[i] = (struct CMUnitTest){g_cases[i].name, run_case, NULL, NULL, &g_cases[i]};
    tests[g_n] = (struct CMUnitTest){"every dsl code has a corpus file", test_every_code_covered,
                                     NULL, NULL, NULL};
    int rc = _cmocka_run_group_tests("test_dsl_corpus", tests, (size_t)g_n + 1, group_setup,
                                     group_teardown);
    for (int i = 0; i < g_n; i++)
        free(g_cases[i].text);
    free(g_long_token);
    free(g_huge_file);
    return rc;
}
