/* Cache keys, key manifests and explain. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include "cache/cache.h"
#include "tests/support/cache_testlib.h"
#include "tests/support/keyshape_testlib.h"

static tks_l2_fields base_l2(void)
{
    tks_l2_fields f = {
        .target_triple = "x86_64-unknown-linux-gnu",
        .cpu_features = "+avx2,+fma",
        .precision = "fp32",
        .opt_level = "O2",
        .debug = false,
        .compiler_build_id = "cuvil-0.1.0+abc",
        .llvm_version = "19.1.7",
    };
    cv_cache_sha256("ir", 2, &f.ir);
    return f;
}

static cv_cache_key key_l2(const tks_l2_fields *f)
{
    cv_cache_key k;
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(tks_key_l2(f, &k, &d), 0);
    assert_int_equal(d.n, 0);
    cv_diag_free(&d);
    return k;
}

static void test_l2_deterministic_and_manifest(void **state)
{
    (void)state;
    tks_l2_fields f = base_l2();
    cv_cache_key a = key_l2(&f), b = key_l2(&f);
    assert_true(cv_cache_digest_eq(&a.digest, &b.digest));
    assert_string_equal(a.manifest, b.manifest);
    json_t *m = json_loads(a.manifest, 0, NULL);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "domain")), "cuvil-l2");
    json_t *fields = json_object_get(m, "fields");
    assert_int_equal(json_array_size(fields), 8); /* every field recorded */
    assert_string_equal(json_string_value(json_object_get(json_array_get(fields, 0), "name")),
                        "ir_digest");
    char hex[65];
    cv_cache_digest_hex(&a.digest, hex);
    assert_string_equal(json_string_value(json_object_get(m, "key")), hex);
    json_decref(m);
    /* the manifest alone reproduces the key */
    cv_cache_key r;
    assert_int_equal(cv_cache_key_from_manifest(a.manifest, &r, NULL), 0);
    assert_true(cv_cache_digest_eq(&a.digest, &r.digest));
    cv_cache_key_free(&r);
    cv_cache_key_free(&a);
    cv_cache_key_free(&b);
}

/* Flip test: changing any one field that enters the L2 key changes the key
 * and explain names exactly that field. */
static void test_l2_flip_every_field(void **state)
{
    (void)state;
    tks_l2_fields base = base_l2();
    cv_cache_key k0 = key_l2(&base);
    const char *names[] = {"ir_digest", "target_triple", "target_features", "precision",
                           "opt_level", "debug", "compiler_build_id", "llvm_version"};
    for (int i = 0; i < 8; i++) {
        tks_l2_fields f = base;
        switch (i) {
        case 0: cv_cache_sha256("ir2", 3, &f.ir); break;
        case 1: f.target_triple = "aarch64-linux-gnu"; break;
        case 2: f.cpu_features = "+avx2,+fma,+avx512f"; break;
        case 3: f.precision = "int8"; break;
        case 4: f.opt_level = "O3"; break;
        case 5: f.debug = true; break;
        case 6: f.compiler_build_id = "cuvil-0.1.0+def"; break;
        case 7: f.llvm_version = "19.1.8"; break;
        }
        cv_cache_key k = key_l2(&f);
        assert_false(cv_cache_digest_eq(&k.digest, &k0.digest));
        cv_cache_diffs ds;
        assert_int_equal(cv_cache_explain(k0.manifest, k.manifest, &ds, NULL), 0);
        assert_int_equal(ds.n, 1);
        assert_string_equal(ds.v[0].field, names[i]);
        cv_cache_diffs_free(&ds);
        cv_cache_key_free(&k);
    }
    cv_cache_key_free(&k0);
}

static void test_explain_texts(void **state)
{
    (void)state;
    tks_l2_fields a = base_l2(), b = a;
    b.cpu_features = "+avx2,+fma,+avx512f";
    b.opt_level = "O3";
    cv_cache_sha256("other ir", 8, &b.ir);
    cv_cache_key ka = key_l2(&a), kb = key_l2(&b);
    cv_cache_diffs ds;
    assert_int_equal(cv_cache_explain(ka.manifest, kb.manifest, &ds, NULL), 0);
    assert_int_equal(ds.n, 3);
    char ha[65], hb[65], want[300];
    cv_cache_digest_hex(&a.ir, ha);
    cv_cache_digest_hex(&b.ir, hb);
    snprintf(want, sizeof want, "ir digest changed (%s -> %s)", ha, hb);
    assert_string_equal(ds.v[0].text, want);
    assert_string_equal(ds.v[1].text, "target features: +avx512f");
    assert_string_equal(ds.v[2].text, "opt level: O2 -> O3");
    cv_cache_diffs_free(&ds);
    /* and the other way round: a feature removed */
    assert_int_equal(cv_cache_explain(kb.manifest, ka.manifest, &ds, NULL), 0);
    assert_string_equal(ds.v[1].text, "target features: removed +avx512f");
    cv_cache_diffs_free(&ds);
    /* identical manifests: nothing to explain */
    assert_int_equal(cv_cache_explain(ka.manifest, ka.manifest, &ds, NULL), 0);
    assert_int_equal(ds.n, 0);
    cv_cache_key_free(&ka);
    cv_cache_key_free(&kb);
}

static void test_l1_weights_and_flip(void **state)
{
    (void)state;
    cv_cache_named_digest w[2] = {{"conv1.weight", {{0}}}, {"conv1.bias", {{0}}}};
    cv_cache_sha256("w1", 2, &w[0].digest);
    cv_cache_sha256("b1", 2, &w[1].digest);
    tks_l1_fields f = {.frontend = "dsl", .frontend_version = "1", .options = "",
                            .weights = w, .n_weights = 2};
    cv_cache_sha256("source", 6, &f.source);
    cv_cache_key k0, k1;
    assert_int_equal(tks_key_l1(&f, &k0, NULL), 0);
    cv_cache_sha256("w1'", 3, &w[0].digest);
    assert_int_equal(tks_key_l1(&f, &k1, NULL), 0);
    assert_false(cv_cache_digest_eq(&k0.digest, &k1.digest));
    cv_cache_diffs ds;
    assert_int_equal(cv_cache_explain(k0.manifest, k1.manifest, &ds, NULL), 0);
    assert_int_equal(ds.n, 1);
    assert_string_equal(ds.v[0].field, "weight:conv1.weight");
    assert_non_null(strstr(ds.v[0].text, "weight conv1.weight changed"));
    cv_cache_diffs_free(&ds);
    cv_cache_key_free(&k1);
    /* each of the other fields */
    const char *fields[] = {"frontend", "frontend_version", "options", "source"};
    for (int i = 0; i < 4; i++) {
        tks_l1_fields g = f;
        cv_cache_sha256("w1", 2, &w[0].digest);
        if (i == 0) g.frontend = "onnx";
        if (i == 1) g.frontend_version = "2";
        if (i == 2) g.options = "strict";
        if (i == 3) cv_cache_sha256("source2", 7, &g.source);
        assert_int_equal(tks_key_l1(&g, &k1, NULL), 0);
        assert_false(cv_cache_digest_eq(&k0.digest, &k1.digest));
        assert_int_equal(cv_cache_explain(k0.manifest, k1.manifest, &ds, NULL), 0);
        assert_int_equal(ds.n, 1);
        assert_string_equal(ds.v[0].field, fields[i]);
        cv_cache_diffs_free(&ds);
        cv_cache_key_free(&k1);
    }
    cv_cache_key_free(&k0);
}

static void test_builder_generic_and_errors(void **state)
{
    (void)state;
    cv_cache_keyb *kb = cv_cache_keyb_new("test");
    cv_cache_keyb_str(kb, "a", "x");
    cv_cache_keyb_int(kb, "n", -42);
    cv_cache_keyb_bool(kb, "flag", true);
    cv_cache_keyb_bytes(kb, "blob", "hello", 5);
    cv_cache_key k;
    assert_int_equal(cv_cache_keyb_finish(kb, &k, NULL), 0);
    cv_cache_key r;
    assert_int_equal(cv_cache_key_from_manifest(k.manifest, &r, NULL), 0);
    assert_true(cv_cache_digest_eq(&k.digest, &r.digest));
    cv_cache_key_free(&r);

    /* length prefixes: moving bytes between fields changes the key */
    cv_cache_keyb *x = cv_cache_keyb_new("t"), *y = cv_cache_keyb_new("t");
    cv_cache_keyb_str(x, "a", "bc");
    cv_cache_keyb_str(x, "d", "");
    cv_cache_keyb_str(y, "a", "b");
    cv_cache_keyb_str(y, "d", "c");
    cv_cache_key kx, ky;
    assert_int_equal(cv_cache_keyb_finish(x, &kx, NULL), 0);
    assert_int_equal(cv_cache_keyb_finish(y, &ky, NULL), 0);
    assert_false(cv_cache_digest_eq(&kx.digest, &ky.digest));
    /* field order matters; the domain separates key spaces */
    x = cv_cache_keyb_new("u");
    cv_cache_keyb_str(x, "a", "bc");
    cv_cache_keyb_str(x, "d", "");
    cv_cache_key kz;
    assert_int_equal(cv_cache_keyb_finish(x, &kz, NULL), 0);
    assert_false(cv_cache_digest_eq(&kx.digest, &kz.digest));
    cv_cache_diffs ds;
    assert_int_equal(cv_cache_explain(kx.manifest, kz.manifest, &ds, NULL), 0);
    assert_int_equal(ds.n, 1);
    assert_string_equal(ds.v[0].field, "domain");
    cv_cache_diffs_free(&ds);
    cv_cache_key_free(&kx);
    cv_cache_key_free(&ky);
    cv_cache_key_free(&kz);

    /* duplicate field, bad name, invalid UTF-8: reported by finish */
    cv_diag d;
    cv_diag_init(&d);
    kb = cv_cache_keyb_new("t");
    cv_cache_keyb_str(kb, "a", "1");
    cv_cache_keyb_str(kb, "a", "2");
    assert_int_equal(cv_cache_keyb_finish(kb, &r, &d), -1);
    assert_int_equal(d.v[0].code, 9115);
    kb = cv_cache_keyb_new("t");
    cv_cache_keyb_str(kb, "bad\nname", "1");
    assert_int_equal(cv_cache_keyb_finish(kb, &r, &d), -1);
    kb = cv_cache_keyb_new("t");
    cv_cache_keyb_str(kb, "s", "\xff\xfe");
    assert_int_equal(cv_cache_keyb_finish(kb, &r, &d), -1);
    assert_int_equal(d.n_errors, 3);
    cv_diag_free(&d);

    /* an added and a removed field */
    cv_cache_keyb *p = cv_cache_keyb_new("t"), *q = cv_cache_keyb_new("t");
    cv_cache_keyb_str(p, "old", "1");
    cv_cache_keyb_str(q, "new", "2");
    cv_cache_key kp, kq;
    assert_int_equal(cv_cache_keyb_finish(p, &kp, NULL), 0);
    assert_int_equal(cv_cache_keyb_finish(q, &kq, NULL), 0);
    assert_int_equal(cv_cache_explain(kp.manifest, kq.manifest, &ds, NULL), 0);
    assert_int_equal(ds.n, 2);
    assert_string_equal(ds.v[0].text, "new: added (2)");
    assert_string_equal(ds.v[1].text, "old: removed");
    cv_cache_diffs_free(&ds);
    cv_cache_key_free(&kp);
    cv_cache_key_free(&kq);
    cv_cache_key_free(&k);
}

static void test_manifest_rejects(void **state)
{
    (void)state;
    cv_diag d;
    cv_diag_init(&d);
    cv_cache_key k;
    assert_int_equal(cv_cache_key_from_manifest("not json", &k, &d), -1);
    assert_int_equal(cv_cache_key_from_manifest("{\"domain\":\"x\"}", &k, &d), -1);
    assert_int_equal(cv_cache_key_from_manifest(
                         "{\"domain\":\"x\",\"fields\":[{\"name\":\"a\",\"kind\":\"digest\","
                         "\"value\":\"zz\"}]}", &k, &d), -1);
    assert_int_equal(cv_cache_key_from_manifest(
                         "{\"domain\":\"x\",\"fields\":[{\"name\":\"a\",\"kind\":\"int\","
                         "\"value\":\"1\"}]}", &k, &d), -1);
    /* a recorded key that does not match the fields */
    assert_int_equal(cv_cache_key_from_manifest(
                         "{\"domain\":\"x\",\"key\":\"0000000000000000000000000000000000000000000000"
                         "000000000000000000\",\"fields\":[]}", &k, &d), -1);
    assert_int_equal(d.n_errors, 5);
    for (int i = 0; i < d.n; i++)
        assert_int_equal(d.v[i].code, 9109);
    cv_diag_free(&d);
    cv_cache_diffs ds;
    assert_int_equal(cv_cache_explain("{}", "{}", &ds, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_l2_deterministic_and_manifest),
        cmocka_unit_test(test_l2_flip_every_field),
        cmocka_unit_test(test_explain_texts),
        cmocka_unit_test(test_l1_weights_and_flip),
        cmocka_unit_test(test_builder_generic_and_errors),
        cmocka_unit_test(test_manifest_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
