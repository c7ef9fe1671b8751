/* numpyref: expected values for tests, computed by NumPy at test time.
 *
 * Three layers, each usable on its own:
 *
 * 1. Batches of NumPy expressions (cv_npref_new / _add / _run).  Each case is
 *    a Python expression over input tensors bound to `a`, `b`, `c`, ... (also
 *    the list `ins`), with `np`, `math` and `erf` (math.erf applied
 *    elementwise, keeping a float input's dtype) in scope, plus whatever the
 *    batch's prelude defines.  cv_npref_run writes every input as raw
 *    little-endian bytes into a temp dir (tests/support/tmpdir.h) and starts
 *    /usr/bin/python3 ONCE for the whole batch (tests/support/pyrun.h: no
 *    shell, killed after a timeout); each result comes back as a cv_tensor.
 *    bf16 inputs reach NumPy as float32 (NumPy has no bfloat16).  Results of
 *    dtypes CU-IR lacks are converted (int16 -> i32, uint32 -> i64, ...);
 *    float64 results stay f64.  Example:
 *
 *        cv_npref *r = cv_npref_new();
 *        int k = cv_npref_add(r, "np.maximum(a, 0)", &x, 1);
 *        if (cv_npref_run(r) == 0)
 *            cv_npref_compare(&got, cv_npref_result(r, k), 1e-5, 1e-6, msg, sizeof msg);
 *        cv_npref_free(r);
 *
 * 2. Comparison and test data: cv_npref_compare (ints/bool exact, floats with
 *    rtol/atol, NaN equals NaN), cv_npref_default_tol, cv_npref_fill.
 *
 * 3. Op cases (numpyref_ops.c): declarative single-op tests.  A case names an
 *    op, its attributes as text, its inputs as type specs, and the NumPy
 *    expression for the expected result; cv_npref_suite_run builds every case
 *    with the IR builder, runs it with the interpreter, evaluates all the
 *    expressions in one Python run, and cv_npref_suite_check compares.
 *    Cases run through cv_interp_run, the reference interpreter itself.
 *
 *    Input spec:   DTYPE[DIMS] [@LO:HI | =V,V,...]
 *      DIMS        comma-separated; each an integer, or SYM:N (declared as the
 *                  symbol SYM, N at run time), e.g. "f32[N:2,3]"; "f32[]" is a scalar
 *      @LO:HI      random values in [LO,HI] (integers rounded); default [-3,3]
 *                  for floats, [-20,20] for signed ints, [0,40] for u8
 *      =V,V,...    explicit values, row-major: strtod for floats (nan, inf, -inf
 *                  accepted), strtoll for integers and bool (exact for i64)
 *    Attribute text: space-separated NAME=VALUE, parsed by the op schema's
 *      kind: 1, 0.5, -inf, tanh, i32, [0,-1], [0.5,1]; names the schema does
 *      not know are guessed from the text (for error tests).
 *
 * Everything here is for tests: failures are reported as messages, not cv_diag.
 */
#ifndef CV_TEST_NUMPYREF_H
#define CV_TEST_NUMPYREF_H

#include <stddef.h>
#include <stdint.h>

#include "compiler-core/ir/ir.h"

/* ---- 1. NumPy expression batches ---------------------------------------- */

typedef struct cv_npref cv_npref;   /* opaque; owns copies of inputs and the results */

cv_npref *cv_npref_new(void);
void cv_npref_free(cv_npref *r);
/* Python source run once before any case (helper definitions).  Copied;
 * a second call appends. */
void cv_npref_prelude(cv_npref *r, const char *python);
/* Queues a case; inputs are copied.  Returns its index (>= 0) or -1. */
int cv_npref_add(cv_npref *r, const char *expr, const cv_tensor *inputs, int n_inputs);
/* Runs every queued case in one Python process.  Returns 0 when Python ran
 * (a case whose expression raised has no result: see cv_npref_error), -1
 * when Python could not run (message in cv_npref_error(r, -1)). */
int cv_npref_run(cv_npref *r);
/* The result of case i after cv_npref_run, or NULL if it failed.  Owned by r. */
const cv_tensor *cv_npref_result(const cv_npref *r, int i);
/* Why case i (or, for i = -1, the whole run) failed; "" if it did not. */
const char *cv_npref_error(const cv_npref *r, int i);
/* One expression, one run: *out is allocated (free with cv_tensor_free). */
int cv_npref_eval(const char *expr, const cv_tensor *inputs, int n_inputs, cv_tensor *out,
                  char *msg, size_t msg_size);

/* ---- 2. comparison and test data ---------------------------------------- */

/* Compares element by element after checking the shapes (dtypes may differ:
 * the caller checks them if it cares).  When `want` is integer or bool the
 * comparison is exact on int64 values; otherwise |got - want| <= atol +
 * rtol * |want|, with NaN == NaN and infinities equal only to themselves.
 * Returns 0 when equal, else -1 with the first difference in msg. */
int cv_npref_compare(const cv_tensor *got, const cv_tensor *want, double rtol, double atol,
                     char *msg, size_t msg_size);
/* Tolerances for results of dtype dt: f32 1e-5/1e-6, f16 1e-3/1e-3,
 * bf16 1e-2/1e-2, f64 1e-12/1e-12, exact (0/0) for integers and bool. */
void cv_npref_default_tol(cv_dtype dt, double *rtol, double *atol);
/* Fills t with deterministic pseudo-random values in [lo, hi] (rounded for
 * integer dtypes; 0/1 for bool). */
void cv_npref_fill(cv_tensor *t, uint64_t seed, double lo, double hi);

/* ---- 3. op cases --------------------------------------------------------- */

#define CV_NPREF_MAX_IN 6

typedef struct cv_npref_opcase {
    const char *tag;                  /* the test that checks it (usually the op name) */
    const char *op;
    const char *attrs;                /* "alpha=0.1 axes=[0,-1]" or NULL */
    const char *in[CV_NPREF_MAX_IN];  /* input specs, NULL after the last */
    const char *expr;                 /* NumPy expression for the expected result */
    double rtol, atol;                /* both 0: cv_npref_default_tol of the result */
    int n_results;                    /* 0 means 1 */
    int result;                       /* which result is compared */
} cv_npref_opcase;

typedef struct cv_npref_suite cv_npref_suite;  /* opaque; owns everything it ran */

/* Builds and runs every case, then runs all NumPy expressions at once (with
 * `prelude`, may be NULL).  Cases that fail to build or run are recorded and
 * reported by cv_npref_suite_check.  Returns NULL only when Python itself
 * cannot run (msg says why). */
cv_npref_suite *cv_npref_suite_run(const cv_npref_opcase *cases, int n, const char *prelude,
                                   char *msg, size_t msg_size);
/* Checks every case with this tag: the result dtype must equal the op's
 * inferred dtype and the values must match NumPy's.  Returns the number of
 * cases checked (> 0), 0 if no case has the tag, -1 at the first failure
 * (described in msg). */
int cv_npref_suite_check(const cv_npref_suite *s, const char *tag, char *msg, size_t msg_size);
void cv_npref_suite_free(cv_npref_suite *s);

/* Builds one op in a fresh function of m: inputs from specs (values ignored),
 * attributes from text; finishes it with n_results results.  Returns the
 * op (its result types are the inferred ones) or NULL if the specs or
 * attributes do not parse; cv_op_finish's diagnostics go to d and its
 * return value to *rc. */
cv_op *cv_npref_build_op(cv_module *m, const char *op, const char *attrs,
                         const char *const *specs, int n_specs, int n_results,
                         cv_diag *d, int *rc);
/* The code of the first error in d, or 0. */
int cv_npref_first_code(const cv_diag *d);
/* Builds op (one result) over specs in a scratch module and returns the code
 * of the first error (0 if none; -1 if the specs or attributes do not
 * parse).  With no error, the inferred result type ("f32[N,3]") goes to type. */
int cv_npref_infer(const char *op, const char *attrs, const char *const *specs, int n_specs,
                   char *type, size_t type_size);

#endif
