/* CUDA artifacts' runs replayed as CUDA graphs (host/cuhost_graph.c) on
 * the stand-in driver (tests/gpu/fake_libcuda.c captures launches and
 * replays them through the same checks): the replay's launches are the
 * direct run's, new buffers or CUVIL_CUDA_GRAPH=0 or a driver that cannot
 * capture run directly, a failed replay reports a coded error, and a
 * caller's own capture receives the launches. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "tests/support/cuda_testlib.h"

/* The stand-in driver's inspection and driver functions the graph tests use. */
typedef struct fake_api {
    void *dl;
    const char *(*log)(void);
    uint64_t (*param)(const char *, int, int);
    int (*live_graphs)(void);
    int (*mem_alloc)(uint64_t *, size_t);
    int (*mem_free)(uint64_t);
    int (*stream_create)(void **, unsigned);
    int (*stream_destroy)(void *);
    int (*begin_capture)(void *, int);
    int (*end_capture)(void *, void **);
    int (*instantiate)(void **, void *, unsigned long long);
    int (*graph_launch)(void *, void *);
    int (*exec_destroy)(void *);
    int (*graph_destroy)(void *);
} fake_api;

static void fake_api_open(const char *fake, fake_api *f)
{
    static const char *const names[] = {
        "cvfake_log", "cvfake_param", "cvfake_live_graphs", "cuMemAlloc_v2", "cuMemFree_v2",
        "cuStreamCreate", "cuStreamDestroy_v2", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
        "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy"};
    void **fns[] = {(void **)&f->log, (void **)&f->param, (void **)&f->live_graphs,
                    (void **)&f->mem_alloc, (void **)&f->mem_free, (void **)&f->stream_create,
                    (void **)&f->stream_destroy, (void **)&f->begin_capture, (void **)&f->end_capture,
                    (void **)&f->instantiate, (void **)&f->graph_launch,
                    (void **)&f->exec_destroy, (void **)&f->graph_destroy};
    f->dl = fake_open(fake, names[0], fns[0]);
    for (size_t i = 1; i < sizeof names / sizeof names[0]; i++) {
        *fns[i] = dlsym(f->dl, names[i]);
        assert_non_null(*fns[i]);
    }
}

/* The stand-in driver's path, its functions in *f (dlclose f->dl); the
 * test skips where the driver was not built. */
static const char *fake_test_open(fake_api *f)
{
    const char *fake = fake_driver();
    if (!fake)
        skip();
    fake_api_open(fake, f);
    return fake;
}

enum { RUN_MAX_LAUNCHES = 256, RUN_PARAMS = 32 };

/* One run as the stand-in driver saw it: its launch lines (malloc'd) and
 * every launch's first RUN_PARAMS parameters, in order. */
typedef struct fake_run {
    char *launches;
    int n, graphs, graph_n;     /* launches; "graph N launches" lines, the last N */
    uint64_t params[RUN_MAX_LAUNCHES][RUN_PARAMS];
} fake_run;

/* The log since `at`, read right after the run (the driver keeps the last
 * 512 launches' parameters). */
static void fake_run_read(const fake_api *f, size_t at, fake_run *r)
{
    const char *seg = f->log() + at;
    size_t len = 0;
    char names[RUN_MAX_LAUNCHES][128];
    r->launches = calloc(1, strlen(seg) + 1);
    assert_non_null(r->launches);
    r->n = r->graphs = r->graph_n = 0;
    for (const char *p = seg; *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
        if (strncmp(p, "graph ", 6) == 0 && ++r->graphs)
            r->graph_n = atoi(p + 6);
        if (strncmp(p, "launch ", 7) == 0) {
            assert_true(r->n < RUN_MAX_LAUNCHES);
            memcpy(r->launches + len, p, l);
            len += l;
            sscanf(p + 7, "%127s", names[r->n++]);
        }
        p += l;
    }
    /* Launch k is the nth newest of its kernel, n counting later ones. */
    for (int k = 0; k < r->n; k++) {
        int nth = 0;
        for (int j = k + 1; j < r->n; j++)
            nth += strcmp(names[j], names[k]) == 0;
        for (int i = 0; i < RUN_PARAMS; i++)
            r->params[k][i] = f->param(names[k], nth, i);
    }
}

/* Two runs made the same launches (params: with the same parameters). */
static void expect_same_run(const fake_run *a, const fake_run *b, bool params, const char *what)
{
    if (strcmp(a->launches, b->launches) != 0)
        fail_msg("%s: other launches:\n%s---\n%s", what, a->launches, b->launches);
    assert_int_equal(count(a->launches, "bad=0"), a->n);
    if (params && memcmp(a->params, b->params, sizeof a->params[0] * (size_t)a->n) != 0)
        fail_msg("%s: the launches' parameters differ", what);
}

/* Whether some launch of the run has parameter value v. */
static bool run_uses(const fake_run *r, uint64_t v)
{
    for (int k = 0; k < r->n; k++)
        for (int i = 0; i < RUN_PARAMS; i++)
            if (r->params[k][i] == v)
                return true;
    return false;
}

/* A compiled model with its inputs: group g's, or another. */
typedef struct art {
    const char *dir;
    char name[64];              /* the artifact's: cv_<name>_run */
    const bk_model *b;
    int n_out;
} art;

static art group_art(int g)
{
    art a = {g_dirs[g], "", &g_models[g], cuda_groups[g].n};
    snprintf(a.name, sizeof a.name, "cuda_%s", cuda_groups[g].name);
    return a;
}

/* The artifact's library (dlclose it). */
static void *artifact_lib(const art *a, int flags)
{
    char file[128];
    snprintf(file, sizeof file, "lib%s.so", a->name);
    char *path = cv_tmpdir_path(a->dir, file);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
    free(path);
    assert_non_null(lib);
    return lib;
}

static void *lib_sym(void *lib, const art *a, const char *verb)
{
    char name[128];
    snprintf(name, sizeof name, "cv_%s_%s", a->name, verb);
    void *fn = dlsym(lib, name);
    assert_non_null(fn);
    return fn;
}

/* cv_native_run three times: the first runs directly, the second is
 * captured (nothing launched while capturing) and its graph launched, the
 * third launches the graph only; the graph's launches are the first run's,
 * in order, with the same parameters (cv_native_run stages through one
 * device buffer) unless the first run grew a buffer after using it
 * (grown); the replays' parameters are the same.  !graph: every run runs
 * directly.  Closing frees the graph. */
static void three_runs(const fake_api *f, const char *fake, const art *a, bool graph, bool grown)
{
    cv_native *n = NULL;
    char msg[1024];
    int code = open_code(a->dir, fake, &n, msg, sizeof msg);
    if (code)
        fail_msg("%s: CV%04d %s", a->name, code, msg);
    int live = f->live_graphs();
    cv_tensor got[BK_MAX_CASES] = {{0}};
    static fake_run runs[3];
    for (int i = 0; i < 3; i++) {
        cv_diag d;
        cv_diag_init(&d);
        size_t at = strlen(f->log());
        if (cv_native_run(n, a->b->ins, a->b->n_ins, got, &d))
            fail_msg("%s run %d: %s\nlog:\n%s", a->name, i + 1,
                     d.n ? d.v[0].msg : "?", f->log() + at);
        cv_diag_free(&d);
        fake_run_read(f, at, &runs[i]);
        assert_true(runs[i].n >= 1);
        assert_int_equal(runs[i].graphs, graph && i > 0);
        assert_int_equal(runs[i].graph_n, graph && i > 0 ? runs[0].n : 0);
        if (i > 0)
            expect_same_run(&runs[i - 1], &runs[i], !grown || i == 2, a->name);
    }
    assert_int_equal(f->live_graphs(), live + graph);
    /* A capture that failed left no error behind. */
    const char *err;
    int (*last_error)(const char **) = NULL;
    void *lib = artifact_lib(a, RTLD_NOLOAD);
    *(void **)&last_error = lib_sym(lib, a, "last_error");
    assert_int_equal(last_error(&err), 0);
    dlclose(lib);
    for (int i = 0; i < 3; i++)
        free(runs[i].launches);
    for (int i = 0; i < a->n_out; i++)
        cv_tensor_free(&got[i]);
    cv_native_close(n);
    assert_int_equal(f->live_graphs(), live);
}

static void test_graph_replay(void **state)
{
    fake_api f;
    const char *fake = fake_test_open(&f);
    for (int g = 0; g < CUDA_N_GROUPS; g++) {
        art a = group_art(g);
        three_runs(&f, fake, &a, true, false);
    }
    dlclose(f.dl);
}

/* Channels-last convolutions (CUVIL_CUDA_NHWC=1 on the cuda_half group's
 * P8 weights): the first run grows the packed-input buffers as it goes
 * (its early launches use buffers freed since); the captured run finds
 * them large enough (a capture that regrew one would turn graphs off) and
 * every pack launch is replayed. */
static void test_graph_packs(void **state)
{
    fake_api f;
    const char *fake = fake_test_open(&f);
    static const cuda_group g = CUDA_GROUP("half", cuda_half);
    char msg[1024];
    bk_model b;
    if (bk_build(&b, "cuda_half", g.cases, g.n, msg, sizeof msg) || cuda_bake_params(&b))
        fail_msg("%s", msg);
    char *dir = cv_tmpdir_make("cuda-graph");
    art a = {dir, "cuda_half", &b, g.n};
    cv_compile_opts o = {.target = "cuda-sm90", .opt_level = 2, .emit = CV_EMIT_SO,
                         .out_dir = dir};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    if (cv_compile_native(b.m, &o, &info, &d))
        fail_msg("compile: %s", d.n ? d.v[0].msg : "?");
    size_t at = strlen(f.log());
    setenv("CUVIL_CUDA_NHWC", "1", 1);
    three_runs(&f, fake, &a, true, true);
    unsetenv("CUVIL_CUDA_NHWC");
    assert_int_equal(count(f.log() + at, "launch cvdk_nhwc_pack "), 3 * 10);
    cv_diag_free(&d);
    cv_tmpdir_remove(dir);
    bk_model_free(&b);
    dlclose(f.dl);
}

/* CUVIL_CUDA_GRAPH=0, and drivers whose graph calls fail: at the capture's
 * start, at instantiation, at the first launch captured (then the
 * capture is dropped, graphs are off for the context, nothing is recorded
 * as an error): every run launches directly, the same launches each time. */
static void test_graph_off(void **state)
{
    fake_api f;
    const char *fake = fake_test_open(&f);
    art a = group_art(3);
    setenv("CUVIL_CUDA_GRAPH", "0", 1);
    three_runs(&f, fake, &a, false, false);
    unsetenv("CUVIL_CUDA_GRAPH");
    static const char *const modes[] = {"nograph", "noinstantiate", "badcapture"};
    for (int i = 0; i < 3; i++) {
        setenv("CVFAKE_MODE", modes[i], 1);
        three_runs(&f, fake, &a, false, false);
        unsetenv("CVFAKE_MODE");
    }
    dlclose(f.dl);
}

/* The conv group's artifact through its own API, for run_stream: device
 * inputs and outputs in two sets (A, B) allocated in the stand-in driver. */
typedef struct stream_fix {
    void *lib, *ctx;
    int (*run_stream)(void *, const void *const *, void *const *, const int64_t *, void *);
    int (*last_error)(const char **);
    void (*destroy)(void *);
    int n_in, n_out;
    int64_t syms[16];           /* bound from the inputs' shapes */
    uint64_t bufs[2][BK_MAX_CASES * BK_MAX_IN + BK_MAX_CASES];  /* inputs, then outputs */
} stream_fix;


static void stream_fix_open(const fake_api *f, const char *fake, stream_fix *s)
{
    int g = 3;
    /* Sizes from a host run of the same model (first: the stand-in driver
     * holds one module at a time). */
    cv_native *n = NULL;
    char msg[1024];
    assert_int_equal(open_code(g_dirs[g], fake, &n, msg, sizeof msg), 0);
    cv_tensor got[BK_MAX_CASES] = {{0}};
    cv_diag d;
    cv_diag_init(&d);
    assert_int_equal(cv_native_run(n, g_models[g].ins, g_models[g].n_ins, got, &d), 0);
    s->n_in = g_models[g].n_ins;
    s->n_out = cuda_groups[g].n;
    for (int i = 0; i < s->n_in; i++) {
        cv_native_io io = cv_native_input(n, i);
        for (int k = 0; k < io.rank; k++)
            if (io.dims[k] < 0 && -1 - io.dims[k] < 16)
                s->syms[-1 - io.dims[k]] = g_models[g].ins[i].dims[k];
    }
    for (int set = 0; set < 2; set++)
        for (int i = 0; i < s->n_in + s->n_out; i++) {
            const cv_tensor *t = i < s->n_in ? &g_models[g].ins[i] : &got[i - s->n_in];
            assert_int_equal(f->mem_alloc(&s->bufs[set][i],
                                          (size_t)t->numel * cv_dtype_size(t->dtype) + 1), 0);
        }
    for (int i = 0; i < s->n_out; i++)
        cv_tensor_free(&got[i]);
    cv_diag_free(&d);
    cv_native_close(n);
    art a = group_art(g);
    s->lib = artifact_lib(&a, 0);
    void *(*create)(int) = NULL;
    *(void **)&create = lib_sym(s->lib, &a, "create");
    *(void **)&s->run_stream = lib_sym(s->lib, &a, "run_stream");
    *(void **)&s->last_error = lib_sym(s->lib, &a, "last_error");
    *(void **)&s->destroy = lib_sym(s->lib, &a, "destroy");
    setenv("CUVIL_CUDA_DRIVER", fake, 1);
    s->ctx = create(1);
    unsetenv("CUVIL_CUDA_DRIVER");
    assert_non_null(s->ctx);
}

static void stream_fix_close(const fake_api *f, stream_fix *s)
{
    s->destroy(s->ctx);
    for (int set = 0; set < 2; set++)
        for (int i = 0; i < s->n_in + s->n_out; i++)
            f->mem_free(s->bufs[set][i]);
    dlclose(s->lib);
}

/* The stand-in driver and the stream fixture; stream_test_close releases
 * both. */
static void stream_test_open(fake_api *f, stream_fix *s)
{
    stream_fix_open(f, fake_test_open(f), s);
}

static void stream_test_close(fake_api *f, stream_fix *s)
{
    stream_fix_close(f, s);
    dlclose(f->dl);
}

/* run_stream with buffer set `set` on stream: its result; what the driver
 * saw in *r. */
static int stream_run(const fake_api *f, stream_fix *s, int set, void *stream, fake_run *r)
{
    const void *ins[BK_MAX_CASES * BK_MAX_IN];
    void *outs[BK_MAX_CASES];
    for (int i = 0; i < s->n_in; i++)
        ins[i] = (const void *)(uintptr_t)s->bufs[set][i];
    for (int i = 0; i < s->n_out; i++)
        outs[i] = (void *)(uintptr_t)s->bufs[set][s->n_in + i];
    size_t at = strlen(f->log());
    int rc = s->run_stream(s->ctx, ins, outs, s->syms, stream);
    fake_run_read(f, at, r);
    return rc;
}

/* Other device buffers make another key: run_stream with set B after A's
 * graph launches directly (B's pointers, not the stale graph's), B's next
 * run gets a graph of its own, and A again runs directly.  Each set's
 * replays equal its direct run. */
static void test_graph_new_buffers(void **state)
{
    fake_api f;
    stream_fix s;
    stream_test_open(&f, &s);
    static fake_run a[3], b[3], a2;
    for (int i = 0; i < 3; i++)
        assert_int_equal(stream_run(&f, &s, 0, NULL, &a[i]), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(stream_run(&f, &s, 1, NULL, &b[i]), 0);
    assert_int_equal(stream_run(&f, &s, 0, NULL, &a2), 0);
    static const int graphs[3] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].graphs, graphs[i]);
        assert_int_equal(b[i].graphs, graphs[i]);
        expect_same_run(&a[0], &a[i], true, "set A");
        expect_same_run(&b[0], &b[i], true, "set B");
    }
    assert_int_equal(a2.graphs, 0);
    expect_same_run(&a[0], &a2, true, "set A again");
    /* B's runs read B's input and write B's output, never A's. */
    uint64_t a_out = s.bufs[0][s.n_in], b_out = s.bufs[1][s.n_in];
    assert_true(run_uses(&a[0], a_out) && !run_uses(&a[0], b_out));
    assert_true(run_uses(&b[0], b_out) && !run_uses(&b[0], a_out));
    assert_true(run_uses(&b[2], b_out) && !run_uses(&b[2], a_out));
    for (int i = 0; i < 3; i++)
        free(a[i].launches), free(b[i].launches);
    free(a2.launches);
    stream_test_close(&f, &s);
}

/* A failed graph launch is the run's failure, as a coded driver error: a
 * replay whose output buffer the caller freed (the stand-in driver checks
 * the replayed launches' pointers).  The graph is dropped: the next run
 * runs directly. */
static void test_graph_launch_error(void **state)
{
    fake_api f;
    stream_fix s;
    stream_test_open(&f, &s);
    static fake_run r[4];
    for (int i = 0; i < 2; i++)
        assert_int_equal(stream_run(&f, &s, 0, NULL, &r[i]), 0);
    assert_int_equal(f.mem_free(s.bufs[0][s.n_in]), 0);
    assert_int_equal(stream_run(&f, &s, 0, NULL, &r[2]), -3);
    assert_int_equal(r[2].graphs, 1);
    assert_true(count(r[2].launches, "bad=0") < r[2].n);
    const char *msg;
    assert_int_equal(s.last_error(&msg), 5063);
    assert_non_null(strstr(msg, "cuGraphLaunch failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_int_equal(f.mem_alloc(&s.bufs[0][s.n_in], 1 << 20), 0);
    assert_int_equal(stream_run(&f, &s, 0, NULL, &r[3]), 0);
    assert_int_equal(r[3].graphs, 0);
    for (int i = 0; i < 4; i++)
        free(r[i].launches);
    stream_test_close(&f, &s);
}

/* A run on a stream the caller is capturing goes into the caller's graph
 * (the context captures nothing of its own: one graph alive) and leaves no
 * error; launching the caller's graph makes both runs' launches. */
static void test_graph_caller_capture(void **state)
{
    fake_api f;
    stream_fix s;
    stream_test_open(&f, &s);
    void *stream = NULL, *graph = NULL, *exec = NULL;
    assert_int_equal(f.stream_create(&stream, 1), 0);
    static fake_run direct, inside, replay;
    assert_int_equal(stream_run(&f, &s, 0, stream, &direct), 0);
    int live = f.live_graphs();
    assert_int_equal(f.begin_capture(stream, 1), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(stream_run(&f, &s, 0, stream, &inside), 0);
        assert_int_equal(inside.n + inside.graphs, 0);
        free(inside.launches);
    }
    assert_int_equal(f.live_graphs(), live + 1);
    assert_int_equal(f.end_capture(stream, &graph), 0);
    assert_int_equal(f.instantiate(&exec, graph, 0), 0);
    size_t at = strlen(f.log());
    assert_int_equal(f.graph_launch(exec, stream), 0);
    fake_run_read(&f, at, &replay);
    assert_int_equal(replay.n, 2 * direct.n);
    assert_int_equal(count(replay.launches, "bad=0"), replay.n);
    char *twice = malloc(2 * strlen(direct.launches) + 1);
    assert_non_null(twice);
    sprintf(twice, "%s%s", direct.launches, direct.launches);
    assert_string_equal(replay.launches, twice);
    const char *msg;
    assert_int_equal(s.last_error(&msg), 0);
    free(twice), free(direct.launches), free(replay.launches);
    f.exec_destroy(exec);
    f.graph_destroy(graph);
    assert_int_equal(f.stream_destroy(stream), 0);
    stream_test_close(&f, &s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_graph_packs),
        cmocka_unit_test(test_graph_off),
        cmocka_unit_test(test_graph_new_buffers),
        cmocka_unit_test(test_graph_launch_error),
        cmocka_unit_test(test_graph_caller_capture),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
