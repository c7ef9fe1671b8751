/* Shared by the C99 backend tests (test_c99.c, test_c99_cross.c): emitting
 * a model as C, building it with a C compiler into a shared object and
 * running it like a native artifact, and the elementwise sweep whose
 * wrap-around, saturation, NaN and f16/bf16 cases both run. */
#ifndef CV_TEST_C99_UTIL_H
#define CV_TEST_C99_UTIL_H

#include <unistd.h>

#include "compiler-core/backend/c99/c99.h"
#include "tests/support/backend_testlib.h"

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

BK_FN bool have_program(const char *name)
{
    const char *path = getenv("PATH");
    char buf[4096], file[4200];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
    char *save = NULL;
    for (char *dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        snprintf(file, sizeof file, "%s/%s", dir, name);
        if (access(file, X_OK) == 0)
            return true;
    }
    return false;
}

/* Emits m as C into a new temp dir (returned, malloc'd); *name gets the
 * artifact's C name. */
BK_FN char *emit_c(cv_module *m, unsigned emit, char *name, size_t name_size, char *msg,
                    size_t size)
{
    char *dir = cv_tmpdir_make("c99");
    cv_compile_opts o = {.target = "native", .opt_level = 2, .emit = emit, .out_dir = dir};
    cv_compile_info info;
    cv_diag d;
    cv_diag_init(&d);
    if (!dir || cv_compile_native(m, &o, &info, &d)) {
        snprintf(msg, size, "emit c failed:");
        bk_diag_msg(&d, msg, size);
        cv_tmpdir_remove(dir);
        dir = NULL;
    } else {
        snprintf(name, name_size, "%s", info.name);
    }
    cv_diag_free(&d);
    return dir;
}

/* Emits m as C, builds it with cc (at -O1: the tests are about semantics;
 * plus -fopenmp when threads > 1, kept loaded after dlclose because libgomp's
 * idle threads outlive an unloaded libgomp), runs it on ins (outputs into got[]). */
BK_FN int run_c(cv_module *m, const char *cc, const cv_tensor *ins, int n_ins, int threads,
                 cv_tensor *got, char *msg, size_t size)
{
    static const char *const flags[] = {"-O1", "-fopenmp", "-Wl,-z,nodelete"};
    char name[128];
    char *dir = emit_c(m, CV_EMIT_C, name, sizeof name, msg, size);
    if (!dir)
        return -1;
    cv_native *nat = NULL;
    cv_diag d;
    cv_diag_init(&d);
    bool missing = false;
    int rc = 0;
    if (cv_c99_build_shared(cc, dir, name, flags, threads > 1 ? 3 : 1, &missing, &d) || missing) {
        rc = bk_fail(msg, size, "%s: %s", cc, missing ? "not installed" : "build failed:");
        bk_diag_msg(&d, msg, size);
    } else if (cv_native_open(dir, threads, &nat, &d) || cv_native_run(nat, ins, n_ins, got, &d)) {
        rc = bk_fail(msg, size, "%s: the C artifact failed:", cc);
        bk_diag_msg(&d, msg, size);
    }
    cv_native_close(nat);
    cv_tmpdir_remove(dir);
    cv_diag_free(&d);
    return rc;
}

static const bk_case sweep_ew[] __attribute__((unused)) = {
    BK("add", NULL, "f32[N:3,4,5]", "f32[5]"),
    BK("add", NULL, "i32[3,4]", "i32[4] =2147483647"),
    BK("add", NULL, "i64[3] =9223372036854775807,-9223372036854775808,5", "i64[3] =1,-1,2"),
    BK("add", NULL, "f16[2,5]", "f16[2,5]"),
    BK("add", NULL, "bf16[3,4]", "bf16[1]"),
    BK("sub", NULL, "u8[6]", "u8[6] @0:255"),
    BK("sub", NULL, "i8[5] =-128,127,0,-1,100", "i8[5] =1,-1,-128,127,-100"),
    BK("mul", NULL, "i64[3] =4611686018427387904,3,-7", "i64[3] =4,-5,9"),
    BK("mul", NULL, "f32[3,1]", "f32[1,4]"),
    BK("div", NULL, "f32[4,4]", "f32[4,4] @0.5:3"),
    BK("div", NULL, "i32[8] =7,-7,1,0,5,-9,2147483647,-2147483648",
       "i32[8] =0,2,-1,3,-3,7,-1,-1"),
    BK("div", NULL, "i64[2] =-9223372036854775808,5", "i64[2] =-1,-2"),
    BK("pow", NULL, "f32[6] @0.1:3", "f32[6]"),
    BK("pow", NULL, "i64[6] =2,-3,0,1,-1,5", "i64[6] =10,3,0,-2,-3,2"),
    BK("min", NULL, "f32[6] =1,nan,3,-0,0,-inf", "f32[6] =2,0,nan,0,-0,1"),
    BK("max", NULL, "f32[6] =1,nan,3,-0,0,-inf", "f32[6] =2,0,nan,0,-0,1"),
    BK("max", NULL, "i8[7]", "i8[7]"),
    BK("min", NULL, "f16[4] =1,nan,-2,0.5", "f16[4] =0,1,-3,nan"),
    BK("equal", NULL, "f32[4] =1,nan,2,3", "f32[4] =1,nan,2.5,3"),
    BK("equal", NULL, "bool[6]", "bool[6]"),
    BK("less", NULL, "f32[N:2,5]", "f32[5]"),
    BK("greater", NULL, "i64[5]", "i64[1]"),
    BK("where", NULL, "bool[3,4]", "f32[3,4]", "f32[4]"),
    BK("where", NULL, "bool[2,1]", "bool[2,3]", "bool[3]"),
    BK("cast", "to=i32", "f32[8] =1.5,-1.5,2.9,-2.9,nan,inf,-inf,3e10"),
    BK("cast", "to=i8", "f32[6] =300,-300,127.9,-128.9,0.5,nan"),
    BK("cast", "to=u8", "f32[5] =-1,256,255.5,3.7,nan"),
    BK("cast", "to=i64", "f32[5] =1e19,-1e19,nan,-3.5,2e9"),
    BK("cast", "to=i8", "i64[5] =300,-129,127,255,-1"),
    BK("cast", "to=u8", "i32[4] =-1,256,511,7"),
    BK("cast", "to=i32", "i64[3] =4294967297,-2147483649,2147483648"),
    BK("cast", "to=f16", "f32[7] =1,0.1,65504,70000,-3.14159,1e-6,nan"),
    BK("cast", "to=bf16", "f32[6] =1,0.1,3.14159,-2.71828,1e30,nan"),
    BK("cast", "to=f32", "f16[4]"),
    BK("cast", "to=bool", "f32[4] =0,-0,nan,2"),
    BK("cast", "to=f32", "bool[3] =1,0,1"),
    BK("cast", "to=f32", "i64[3] =16777217,-5,0"),
};

#endif
