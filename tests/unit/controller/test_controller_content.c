/* A revision's content cannot stop the farm (issue 25): a model path that
 * is not UTF-8, a name over 255 bytes, a crafted ".." tree entry, a tree
 * over the entry limit and a file over the size limit each fail their
 * revision (the code and the path stored with it), the controller goes on
 * to plan the next commit, and a controller restarted at the bad head does
 * not stop either.  The limits are lowered through the controller's
 * options so that no test writes a million files or 2 GiB; a blob whose
 * object header claims 3 GiB (a hand-made loose object) shows that sizes
 * come from the header, before anything is inflated. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "controller/controller.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

static const char PIPELINE[] =
    "apiVersion: cuvil.dev/v1\n"
    "kind: CuvilPipeline\n"
    "metadata: {name: p}\n"
    "spec: {models: [\"models/*.cuir\"], targets: [x86_64], precisions: [fp32]}\n";
static const char MODEL[] = "# a model\n";

typedef struct fx {
    char *dir, *repo_dir, *state_dir;
    git_repository *repo;
    cv_controller *ctl;
    cv_controller_opts o;
    cv_diag d;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("ctlcontent");
    f->repo_dir = cv_tmpdir_path(f->dir, "repo");
    f->state_dir = cv_tmpdir_path(f->dir, "state");
    f->repo = trepo_init(f->repo_dir);
    f->o = (cv_controller_opts){.repo = f->repo_dir, .state_dir = f->state_dir,
                                .interval_ms = 3600 * 1000};
    cv_diag_init(&f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cv_controller_close(f->ctl);
    trepo_free(f->repo);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->repo_dir);
    free(f->state_dir);
    free(f);
    return 0;
}

/* (Re)starts the controller, as `farm up` does after a restart. */
static void restart(fx *f)
{
    cv_controller_close(f->ctl);
    f->ctl = NULL;
    assert_int_equal(cv_controller_open(&f->o, &f->ctl, &f->d), 0);
}

/* One step that must not stop the farm; the head's revision summary. */
static cv_step_report step(fx *f, cv_rev_summary *s)
{
    cv_step_report r;
    int rc = cv_controller_step(f->ctl, true, &r, &f->d);
    if (rc != 0) {
        cv_diag_print(&f->d, stderr, false);
        fail_msg("the step stopped the farm");
    }
    assert_int_equal(cv_builddb_revision_summary(cv_controller_db(f->ctl), r.revision, s, &f->d),
                     1);
    return r;
}

/* The controller (re)started on a new head made of hex's commit (or of
 * files, committed here): it is planned, and its summary is in *s. */
static cv_step_report plan_new_head(fx *f, const trepo_file *files, int n, char hex[41],
                                    cv_rev_summary *s)
{
    if (files)
        trepo_commit(f->repo, "content", files, n, hex);
    restart(f);
    cv_step_report r = step(f, s);
    assert_true(r.planned);
    assert_non_null(strstr(s->revision, hex));
    return r;
}

/* The revision's own diagnostic with this code at path (any place when
 * NULL) must be there, with this severity. */
static void assert_rev_diag(fx *f, int64_t rev_id, int code, cv_severity sev, const char *path)
{
    cv_diag dg;
    cv_diag_init(&dg);
    assert_int_equal(cv_builddb_diags_load(cv_controller_db(f->ctl), rev_id, 0, &dg, &f->d), 0);
    const cv_diag_entry *found = NULL;
    for (int i = 1; i <= dg.n && !found; i++) {
        const cv_diag_entry *e = cv_diag_get(&dg, i);
        if (e->code == code && e->sev == sev &&
            (!path || (e->span.file && strcmp(e->span.file, path) == 0)))
            found = e;
    }
    if (!found) {
        cv_diag_print(&dg, stderr, false);
        fail_msg("no CV%d (severity %d) at %s among the revision's diagnostics", code, (int)sev,
                 path ? path : "-");
    }
    cv_diag_free(&dg);
}

/* After the bad head (in state bad_state: failed, or building while the
 * models it could plan run): a restart does not stop, and the next good
 * commit is planned (one model queued). */
static void then_next_commit_builds(fx *f, const char *bad_hex, cv_rev_state bad_state)
{
    restart(f);
    cv_rev_summary s;
    cv_step_report r = step(f, &s);
    assert_false(r.planned);                    /* recorded once, not again */
    assert_non_null(strstr(s.revision, bad_hex));
    assert_int_equal(s.state, bad_state);

    const trepo_file good[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL, 0}};
    git_repository_free(f->repo);   /* a fresh index: the bad entries are gone */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/.git/index", f->repo_dir);
    unlink(dir);
    assert_int_equal(git_repository_open(&f->repo, f->repo_dir), 0);
    char hex[41];
    trepo_commit(f->repo, "good", good, 2, hex);
    r = step(f, &s);
    assert_true(r.planned);
    assert_non_null(strstr(s.revision, hex));
    assert_int_equal(r.plan.queued, 1);
    assert_int_equal(s.state, CV_REV_BUILDING);
}

static void test_model_path_not_utf8(void **state)
{
    fx *f = *state;
    /* a plain `git add` of modèle.cuir in Latin-1, and a data file too */
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL, 0},
                                {"models/mod\xe8le.cuir", MODEL, 0},
                                {"data/\xe9t\xe9.txt", "x\n", 0}};
    char hex[41];
    cv_rev_summary s;
    cv_step_report r = plan_new_head(f, files, 4, hex, &s);
    assert_int_equal(r.plan.queued, 1);         /* a.cuir still builds */
    assert_rev_diag(f, s.id, 6059, CV_SEV_ERROR, "models/mod\\xe8le.cuir");
    assert_rev_diag(f, s.id, 6059, CV_SEV_WARNING, "data/\\xe9t\\xe9.txt");
    /* what `cuvil status --json` and the API show: valid JSON, the path escaped */
    json_t *j = cv_status_revision_json(cv_controller_db(f->ctl), &s, &f->d);
    char *text = json_dumps(j, JSON_COMPACT);
    assert_non_null(text);
    assert_non_null(strstr(text, "6059"));
    assert_non_null(strstr(text, "models/mod\\\\xe8le.cuir"));
    free(text);
    json_decref(j);
    then_next_commit_builds(f, hex, CV_REV_BUILDING);
}

static void test_name_too_long(void **state)
{
    fx *f = *state;
    char name[400];
    snprintf(name, sizeof name, "models/%0300d.cuir", 7);
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {name, MODEL, 0}};
    char hex[41];
    cv_rev_summary s;
    plan_new_head(f, files, 2, hex, &s);
    assert_int_equal(s.state, CV_REV_FAILED);   /* its only model cannot be built */
    assert_rev_diag(f, s.id, 6060, CV_SEV_ERROR, name);
    then_next_commit_builds(f, hex, CV_REV_FAILED);
}

/* A raw tree object: entries "mode name\0<20-byte id>" in the order given. */
static void raw_tree(git_repository *r, const char *const *modes, const char *const *names,
                     const git_oid *ids, int n, git_oid *out)
{
    char buf[4096];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        len += (size_t)sprintf(buf + len, "%s %s", modes[i], names[i]) + 1;
        memcpy(buf + len, ids[i].id, 20);
        len += 20;
    }
    git_odb *odb;
    trepo_check(git_repository_odb(&odb, r), "odb");
    trepo_check(git_odb_write(out, odb, buf, len, GIT_OBJECT_TREE), "write tree");
    git_odb_free(odb);
}

static void commit_tree(git_repository *r, const char *ref, const git_oid *tree_id, char hex[41])
{
    git_tree *tree;
    trepo_check(git_tree_lookup(&tree, r, tree_id), "tree");
    git_signature *sig;
    trepo_check(git_signature_new(&sig, "Test", "test@cuvil.dev", 1700000000, 0), "sig");
    git_oid id;
    trepo_check(git_commit_create(&id, r, ref, sig, sig, NULL, "crafted", tree, 0, NULL),
                "commit");
    git_oid_tostr(hex, 41, &id);
    git_signature_free(sig);
    git_tree_free(tree);
}

/* Crafted trees (git itself refuses them; libgit2 and a raw object write
 * do not): a ".." directory and a name given twice. */
static void test_dotdot_entry(void **state)
{
    fx *f = *state;
    git_oid pipe, model, cuvil, models, evil, root;
    trepo_check(git_blob_create_from_buffer(&pipe, f->repo, PIPELINE, strlen(PIPELINE)), "b");
    trepo_check(git_blob_create_from_buffer(&model, f->repo, MODEL, strlen(MODEL)), "b");
    const char *blob[] = {"100644", "100644", "100644"}, *dir3[] = {"40000", "40000", "40000"};
    const char *n_p[] = {"p.yaml"}, *n_e[] = {"evil.cuir"};
    raw_tree(f->repo, blob, n_p, &pipe, 1, &cuvil);
    raw_tree(f->repo, blob, n_e, &model, 1, &evil);
    /* and one name twice: which of the two would be built? */
    const char *n_m[] = {"a.cuir", "b.cuir", "b.cuir"};
    git_oid three[] = {model, model, pipe};
    raw_tree(f->repo, blob, n_m, three, 3, &models);
    /* "..": a directory whose files would land beside the revision's copy */
    const char *n_root[] = {"..", "cuvil", "models"};
    git_oid ids[] = {evil, cuvil, models};
    raw_tree(f->repo, dir3, n_root, ids, 3, &root);
    char hex[41];
    commit_tree(f->repo, "HEAD", &root, hex);
    cv_rev_summary s;
    cv_step_report r = plan_new_head(f, NULL, 0, hex, &s);
    assert_int_equal(r.plan.queued, 1);          /* models/a.cuir */
    assert_rev_diag(f, s.id, 6061, CV_SEV_ERROR, "../");
    assert_rev_diag(f, s.id, 6061, CV_SEV_ERROR, "models/b.cuir");
    char *outside = cv_tmpdir_path(f->state_dir, "trees/evil.cuir");
    assert_int_not_equal(access(outside, F_OK), 0);
    free(outside);
    then_next_commit_builds(f, hex, CV_REV_BUILDING);
}

static void test_tree_over_entry_limit(void **state)
{
    fx *f = *state;
    f->o.max_tree_entries = 8;
    trepo_file files[12] = {{"cuvil/p.yaml", PIPELINE, 0}};
    char names[11][32];
    for (int i = 0; i < 11; i++) {
        snprintf(names[i], sizeof names[i], "models/m%d.cuir", i);
        files[i + 1] = (trepo_file){names[i], MODEL, 0};
    }
    char hex[41];
    cv_rev_summary s;
    plan_new_head(f, files, 12, hex, &s);
    assert_int_equal(s.state, CV_REV_FAILED);
    assert_int_equal(s.jobs, 0);
    assert_rev_diag(f, s.id, 6056, CV_SEV_ERROR, NULL);
    then_next_commit_builds(f, hex, CV_REV_FAILED);
}

static void test_file_over_size_limit(void **state)
{
    fx *f = *state;
    f->o.max_blob_bytes = 64;
    char big[200];
    memset(big, '#', sizeof big - 2);
    big[sizeof big - 2] = '\n';
    big[sizeof big - 1] = 0;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}, {"models/a.cuir", MODEL, 0},
                                {"models/big.cuir", big, 0}, {"weights/w.bin", big, 0}};
    char hex[41];
    cv_rev_summary s;
    cv_step_report r = plan_new_head(f, files, 4, hex, &s);
    assert_int_equal(r.plan.queued, 1);         /* a.cuir */
    assert_rev_diag(f, s.id, 6055, CV_SEV_ERROR, "models/big.cuir");
    assert_rev_diag(f, s.id, 6055, CV_SEV_WARNING, "weights/w.bin");
    /* the data file is left out of the copy with a warning */
    char rel[128];
    snprintf(rel, sizeof rel, "trees/%s/weights/w.bin", hex);
    char *p = cv_tmpdir_path(f->state_dir, rel);
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);
    then_next_commit_builds(f, hex, CV_REV_BUILDING);
}

/* ---- sizes from the object header */

/* A loose object whose header claims `claimed` bytes, holding only a few:
 * zlib with one stored block, written by hand.  Its id is made up (the
 * name of the file is the id). */
static void write_fake_loose(const char *objects_dir, uint64_t claimed, git_oid *id)
{
    char body[64];
    int hn = snprintf(body, sizeof body, "blob %llu", (unsigned long long)claimed) + 1;
    memcpy(body + hn, "tiny", 4);
    size_t n = (size_t)hn + 4;
    unsigned char z[128];
    size_t zl = 0;
    z[zl++] = 0x78;
    z[zl++] = 0x01;
    z[zl++] = 0x01;                                   /* final stored block */
    z[zl++] = (unsigned char)(n & 0xff);
    z[zl++] = (unsigned char)(n >> 8);
    z[zl++] = (unsigned char)(~n & 0xff);
    z[zl++] = (unsigned char)((~n >> 8) & 0xff);
    memcpy(z + zl, body, n);
    zl += n;
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + (unsigned char)body[i]) % 65521;
        b = (b + a) % 65521;
    }
    uint32_t adler = b << 16 | a;
    for (int i = 3; i >= 0; i--)
        z[zl++] = (unsigned char)(adler >> (8 * i));
    trepo_check(git_odb_hash(id, "fake", 4, GIT_OBJECT_TREE), "hash");   /* any unused id */
    char hex[41], rel[48];
    git_oid_tostr(hex, sizeof hex, id);
    snprintf(rel, sizeof rel, "%.2s", hex);
    char *sub = cv_tmpdir_path(objects_dir, rel);
    mkdir(sub, 0755);
    free(sub);
    snprintf(rel, sizeof rel, "%.2s/%s", hex, hex + 2);
    assert_int_equal(cv_tmpdir_write(objects_dir, rel, z, zl), 0);
}

static void test_blob_size_from_header(void **state)
{
    fx *f = *state;
    const trepo_file files[] = {{"cuvil/p.yaml", PIPELINE, 0}};
    trepo_commit(f->repo, "one", files, 1, NULL);
    cv_gitsource_opts go = {.url = f->repo_dir, .state_dir = f->state_dir};
    cv_gitsource *g;
    assert_int_equal(cv_gitsource_open(&go, &g, &f->d), 0);
    assert_true(cv_gitsource_poll(g, true, &f->d) >= 0);
    /* in the mirror: a blob claiming 3 GiB, a tree and a commit naming it */
    git_repository *m;
    trepo_check(git_repository_open_bare(&m, cv_gitsource_mirror(g)), "mirror");
    char objects[4096];
    snprintf(objects, sizeof objects, "%s/objects", cv_gitsource_mirror(g));
    git_oid big, root;
    write_fake_loose(objects, (uint64_t)3 << 30, &big);
    const char *mode[] = {"100644"}, *name[] = {"big.bin"};
    raw_tree(m, mode, name, &big, 1, &root);
    char hex[41];
    commit_tree(m, NULL, &root, hex);
    git_repository_free(m);

    cv_gitsource_tree *t;
    assert_int_equal(cv_gitsource_tree_open(g, hex, &t, &f->d), 0);
    const cv_gitsource_tree_entry *e = cv_gitsource_tree_find(t, "big.bin");
    assert_non_null(e);
    size_t size = 0;
    assert_int_equal(cv_gitsource_tree_size(t, e, &size, &f->d), 0);
    assert_true(size == (size_t)3 << 30);
    char *data = NULL;
    size_t len;
    assert_int_equal(cv_gitsource_tree_read(t, e, CV_GIT_BLOB_MAX, &data, &len, &f->d), -1);
    assert_null(data);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6055);
    cv_gitsource_tree_free(t);
    cv_gitsource_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_model_path_not_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_too_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dotdot_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_over_entry_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_over_size_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blob_size_from_header, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
