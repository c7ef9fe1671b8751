/* The git source against real repositories made by the test: mirror,
 * cheap polls that fetch only when the ref moved, trees and blobs read
 * without a checkout, tags, force pushes, file:// URLs, reopening, and
 * failures with exponential back-off (an injected clock, no sleeping). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "controller/controller.h"
#include "tests/support/tmpdir.h"
#include "tests/support/gitrepo_testlib.h"

typedef struct fx {
    char *dir;              /* owned: temp dir */
    char *upstream;         /* owned: dir/upstream */
    char *state;            /* owned: dir/state */
    git_repository *repo;   /* owned: the upstream */
    int64_t now;
    cv_diag d;
} fx;

static int64_t fake_now(void *ctx) { return *(const int64_t *)ctx; }

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = cv_tmpdir_make("gitsrc");
    f->upstream = cv_tmpdir_path(f->dir, "upstream");
    f->state = cv_tmpdir_path(f->dir, "state");
    f->repo = trepo_init(f->upstream);
    f->now = 1700000000000;
    cv_diag_init(&f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    trepo_free(f->repo);
    cv_diag_free(&f->d);
    cv_tmpdir_remove(f->dir);
    free(f->upstream);
    free(f->state);
    free(f);
    return 0;
}

static cv_gitsource *open_src(fx *f, const char *url, const char *ref)
{
    cv_gitsource_opts o = {.url = url, .ref = ref, .state_dir = f->state,
                           .backoff_base_ms = 1000, .backoff_max_ms = 8000,
                           .now_ms = fake_now, .clock_ctx = &f->now};
    cv_gitsource *g = NULL;
    assert_int_equal(cv_gitsource_open(&o, &g, &f->d), 0);
    return g;
}

static const trepo_file first[] = {
    {"cuvil/farm.yaml", "kind: CuvilBuildCluster\n", 0},
    {"models/vision/lenet.onnx", "onnx-bytes-1", 0},
    {"models/kws/tiny.cvl.py", "import cuvil as cvl\n", 0},
    {"scripts/gen.sh", "#!/bin/sh\n", GIT_FILEMODE_BLOB_EXECUTABLE},
    {"models/latest", "vision/lenet.onnx", GIT_FILEMODE_LINK},
};

static void test_poll_fetch_and_tree(void **state)
{
    fx *f = *state;
    char c1[41], c2[41];
    trepo_commit(f->repo, "first", first, 5, c1);
    cv_gitsource *g = open_src(f, f->upstream, NULL);
    cv_gitsource_status st;
    cv_gitsource_status_get(g, &st);
    assert_string_equal(st.revision, "");
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status_get(g, &st);
    assert_string_equal(st.commit, c1);
    char rev[CV_REVISION_MAX + 1];
    snprintf(rev, sizeof rev, "main@sha1:%s", c1);
    assert_string_equal(st.revision, rev);
    assert_int_equal(st.fetches, 1);
    /* nothing moved: one listing, no fetch */
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_UNCHANGED);
    cv_gitsource_status_get(g, &st);
    assert_int_equal(st.polls, 2);
    assert_int_equal(st.fetches, 1);

    cv_gitsource_tree *t = NULL;
    assert_int_equal(cv_gitsource_tree_open(g, NULL, &t, &f->d), 0);
    assert_string_equal(cv_gitsource_tree_commit(t), c1);
    assert_int_equal(cv_gitsource_tree_count(t), 4);   /* the symlink is left out */
    assert_string_equal(cv_gitsource_tree_at(t, 0)->path, "cuvil/farm.yaml");
    assert_string_equal(cv_gitsource_tree_at(t, 1)->path, "models/kws/tiny.cvl.py");
    assert_string_equal(cv_gitsource_tree_at(t, 3)->path, "scripts/gen.sh");
    assert_null(cv_gitsource_tree_find(t, "models/latest"));
    const cv_gitsource_tree_entry *e = cv_gitsource_tree_find(t, "models/vision/lenet.onnx");
    assert_non_null(e);
    char blob[41];
    trepo_blob_id("onnx-bytes-1", blob);
    assert_string_equal(e->blob_id, blob);
    char *data;
    size_t len;
    assert_int_equal(cv_gitsource_tree_read(t, e, 100, &data, &len, &f->d), 0);
    assert_int_equal(len, 12);
    assert_string_equal(data, "onnx-bytes-1");
    free(data);
    assert_int_equal(cv_gitsource_tree_read(t, e, 5, &data, &len, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6055);
    assert_null(data);

    /* a second commit: one model changed, one added, one deleted */
    const trepo_file second[] = {
        {"models/vision/lenet.onnx", "onnx-bytes-2", 0},
        {"models/vision/resnet.onnx", "onnx-resnet", 0},
        {"models/kws/tiny.cvl.py", NULL, 0},
    };
    trepo_commit(f->repo, "second", second, 3, c2);
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status_get(g, &st);
    assert_string_equal(st.commit, c2);
    assert_int_equal(st.fetches, 2);
    cv_gitsource_tree *t2 = NULL;
    assert_int_equal(cv_gitsource_tree_open(g, c2, &t2, &f->d), 0);
    assert_int_equal(cv_gitsource_tree_count(t2), 4);
    assert_null(cv_gitsource_tree_find(t2, "models/kws/tiny.cvl.py"));
    assert_string_not_equal(cv_gitsource_tree_find(t2, "models/vision/lenet.onnx")->blob_id, blob);
    /* unchanged files keep their blob id across commits */
    assert_string_equal(cv_gitsource_tree_find(t2, "cuvil/farm.yaml")->blob_id,
                        cv_gitsource_tree_find(t, "cuvil/farm.yaml")->blob_id);
    /* the old commit is still readable from the mirror */
    cv_gitsource_tree *t1 = NULL;
    assert_int_equal(cv_gitsource_tree_open(g, c1, &t1, &f->d), 0);
    assert_non_null(cv_gitsource_tree_find(t1, "models/kws/tiny.cvl.py"));
    cv_gitsource_tree_free(t1);
    cv_gitsource_tree_free(t2);
    cv_gitsource_tree_free(t);

    /* no checkout: the mirror is bare */
    char *git_dir_file = cv_tmpdir_path(cv_gitsource_mirror(g), "HEAD");
    struct stat sb;
    assert_int_equal(stat(git_dir_file, &sb), 0);
    free(git_dir_file);
    assert_int_equal(cv_gitsource_tree_open(g, "0123456789012345678901234567890123456789", &t, &f->d),
                     -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6053);
    assert_int_equal(cv_gitsource_tree_open(g, "nothex", &t, &f->d), -1);
    cv_gitsource_close(g);
}

static void test_reopen_reuses_mirror(void **state)
{
    fx *f = *state;
    char c1[41];
    trepo_commit(f->repo, "first", first, 2, c1);
    cv_gitsource *g = open_src(f, f->upstream, "main");
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    char mirror[4096];
    snprintf(mirror, sizeof mirror, "%s", cv_gitsource_mirror(g));
    cv_gitsource_close(g);
    g = open_src(f, f->upstream, "main");
    assert_string_equal(cv_gitsource_mirror(g), mirror);
    /* first poll after reopening reports the head, without fetching */
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status st;
    cv_gitsource_status_get(g, &st);
    assert_int_equal(st.fetches, 0);
    assert_string_equal(st.commit, c1);
    cv_gitsource_close(g);
    /* another URL gets another mirror, under the same state dir */
    char url[4200];
    snprintf(url, sizeof url, "file://%s", f->upstream);
    g = open_src(f, url, "main");
    assert_string_not_equal(cv_gitsource_mirror(g), mirror);
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status_get(g, &st);
    assert_string_equal(st.commit, c1);
    assert_int_equal(st.fetches, 1);
    cv_gitsource_close(g);
}

static void test_tags_and_force_push(void **state)
{
    fx *f = *state;
    char c1[41], c2[41];
    trepo_commit(f->repo, "first", first, 2, c1);
    git_oid oid;
    git_object *target;
    git_signature *sig;
    trepo_check(git_revparse_single(&target, f->repo, c1), "rev");
    trepo_check(git_signature_new(&sig, "T", "t@t", 1700000000, 0), "sig");
    trepo_check(git_tag_create(&oid, f->repo, "v1", target, sig, "release 1", 0), "tag");
    git_signature_free(sig);
    git_object_free(target);
    trepo_commit(f->repo, "second", first + 2, 1, c2);

    cv_gitsource *tag = open_src(f, f->upstream, "v1");
    assert_int_equal(cv_gitsource_poll(tag, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status st;
    cv_gitsource_status_get(tag, &st);
    assert_string_equal(st.commit, c1);   /* the annotated tag, peeled */
    cv_gitsource_close(tag);

    cv_gitsource *g = open_src(f, f->upstream, "refs/heads/main");
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status_get(g, &st);
    assert_string_equal(st.commit, c2);
    assert_non_null(strstr(st.revision, "refs/heads/main@sha1:"));
    /* rewrite history: main goes back to c1 */
    git_reference *ref;
    trepo_check(git_oid_fromstr(&oid, c1), "oid");
    trepo_check(git_reference_create(&ref, f->repo, "refs/heads/main", &oid, 1, "reset"), "reset");
    git_reference_free(ref);
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status_get(g, &st);
    assert_string_equal(st.commit, c1);
    assert_int_equal(f->d.n_errors, 0);
    cv_gitsource_close(g);
}

static void test_failures_back_off(void **state)
{
    fx *f = *state;
    char *later = cv_tmpdir_path(f->dir, "later");
    cv_gitsource *g = open_src(f, later, "main");
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6051);
    cv_gitsource_status st;
    cv_gitsource_status_get(g, &st);
    assert_int_equal(st.failures, 1);
    assert_int_equal(st.next_attempt_ms, f->now + 1000);
    assert_non_null(strstr(st.last_error, "later"));
    /* before the delay: skipped, not attempted */
    f->now += 999;
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_BACKOFF);
    cv_gitsource_status_get(g, &st);
    assert_int_equal(st.polls, 1);
    /* delays double up to the cap: 1 s, 2 s, 4 s, 8 s, 8 s */
    int64_t expect[] = {2000, 4000, 8000, 8000};
    for (int i = 0; i < 4; i++) {
        f->now = st.next_attempt_ms;
        assert_int_equal(cv_gitsource_poll(g, false, &f->d), -1);
        cv_gitsource_status_get(g, &st);
        assert_int_equal(st.next_attempt_ms - f->now, expect[i]);
    }
    assert_int_equal(st.failures, 5);
    assert_int_equal(st.errors, 5);
    /* force (a webhook) ignores the back-off */
    assert_int_equal(cv_gitsource_poll(g, true, &f->d), -1);
    /* the repository appears: the next attempt recovers */
    git_repository *r = trepo_init(later);
    char c1[41];
    trepo_commit(r, "first", first, 1, c1);
    f->now += 8000;
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), CV_GIT_POLL_CHANGED);
    cv_gitsource_status_get(g, &st);
    assert_int_equal(st.failures, 0);
    assert_int_equal(st.next_attempt_ms, 0);
    assert_int_equal(st.last_success_ms, f->now);
    assert_string_equal(st.commit, c1);
    assert_true(st.last_error[0] != 0);   /* kept for the status page */
    cv_gitsource_close(g);
    trepo_free(r);
    free(later);
}

static void test_missing_ref_and_bad_input(void **state)
{
    fx *f = *state;
    trepo_commit(f->repo, "first", first, 1, NULL);
    cv_gitsource *g = open_src(f, f->upstream, "release");
    assert_int_equal(cv_gitsource_poll(g, false, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6052);
    cv_gitsource_tree *t;
    assert_int_equal(cv_gitsource_tree_open(g, NULL, &t, &f->d), -1);   /* no head yet */
    cv_gitsource_close(g);
    cv_gitsource_opts o = {.url = "", .state_dir = f->state};
    assert_int_equal(cv_gitsource_open(&o, &g, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6057);
    o.url = f->upstream;
    o.ref = "bad..ref";
    assert_int_equal(cv_gitsource_open(&o, &g, &f->d), -1);
    assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6021);
}

static void test_revisions(void **state)
{
    fx *f = *state;
    char out[CV_REVISION_MAX + 1], ref[CV_REVISION_MAX + 1], commit[41];
    const char *hex = "0123456789abcdef0123456789abcdef01234567";
    assert_int_equal(cv_revision_format("main", hex, out), 0);
    assert_string_equal(out, "main@sha1:0123456789abcdef0123456789abcdef01234567");
    assert_int_equal(cv_revision_parse(out, ref, commit, &f->d), 0);
    assert_string_equal(ref, "main");
    assert_string_equal(commit, hex);
    assert_int_equal(cv_revision_parse("release@2@sha1:0123456789abcdef0123456789abcdef01234567",
                                       ref, commit, &f->d),
                     0);
    assert_string_equal(ref, "release@2");
    static const char *const bad[] = {
        "main", "main@sha1:0123", "@sha1:0123456789abcdef0123456789abcdef01234567",
        "main@sha256:0123456789abcdef0123456789abcdef01234567",
        "main@sha1:0123456789ABCDEF0123456789abcdef01234567",
        "ma..in@sha1:0123456789abcdef0123456789abcdef01234567",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cv_revision_parse(bad[i], ref, commit, &f->d), -1);
        assert_int_equal(cv_diag_get(&f->d, f->d.n)->code, 6058);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_poll_fetch_and_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_reuses_mirror, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tags_and_force_push, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_back_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_ref_and_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revisions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
