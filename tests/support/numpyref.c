/* numpyref, layers 1 and 2: batches of NumPy expressions evaluated by one
 * /usr/bin/python3 process, tensor comparison and test data.  See numpyref.h. */
#include "tests/support/numpyref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "tests/support/pyrun.h"
#include "tests/support/tmpdir.h"

/* The Python side.  Reads DIR/manifest ("N", then per case its input count
 * and one "dtype dim..." line per input), the inputs iK_J.bin and the
 * expressions eK.py; writes oK.bin + oK.meta ("dtype dim...") or oK.err. */
static const char prologue[] =
    "import sys, os, math, traceback\n"
    "import numpy as np\n"
    "D = sys.argv[1]\n"
    "def erf(x):\n"
    "    x = np.asarray(x)\n"
    "    r = np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else np.zeros(x.shape)\n"
    "    return r.astype(x.dtype) if x.dtype.kind == 'f' else r\n"
    "DT = {'f32': np.float32, 'f16': np.float16, 'f64': np.float64, 'i8': np.int8,\n"
    "      'u8': np.uint8, 'i32': np.int32, 'i64': np.int64, 'bool': np.bool_}\n"
    "BACK = {'float32': 'f32', 'float16': 'f16', 'float64': 'f64', 'int8': 'i8',\n"
    "        'uint8': 'u8', 'int32': 'i32', 'int64': 'i64', 'bool': 'bool'}\n"
    "WIDEN = {'int16': np.int32, 'uint16': np.int32, 'uint32': np.int64, 'uint64': np.int64}\n"
    "def p(name): return os.path.join(D, name)\n"
    "G = {'np': np, 'math': math, 'erf': erf}\n"
    "if os.path.exists(p('prelude.py')):\n"
    "    exec(compile(open(p('prelude.py')).read(), 'prelude', 'exec'), G)\n"
    "lines = open(p('manifest')).read().split('\\n')\n"
    "pos = 1\n"
    "for i in range(int(lines[0])):\n"
    "    k = int(lines[pos]); pos += 1\n"
    "    ins = []\n"
    "    for j in range(k):\n"
    "        f = lines[pos].split(); pos += 1\n"
    "        dims = tuple(int(v) for v in f[1:])\n"
    "        ins.append(np.fromfile(p('i%d_%d.bin' % (i, j)), dtype=DT[f[0]]).reshape(dims))\n"
    "    env = dict(G); env['ins'] = ins\n"
    "    for j, a in enumerate(ins): env[chr(97 + j)] = a\n"
    "    try:\n"
    "        with np.errstate(all='ignore'):\n"
    "            r = np.asarray(eval(open(p('e%d.py' % i)).read().strip(), env))\n"
    "        if r.dtype.name in WIDEN: r = r.astype(WIDEN[r.dtype.name])\n"
    "        if r.dtype.name not in BACK: raise TypeError('result dtype %s' % r.dtype)\n"
    "        r = r.astype(r.dtype.newbyteorder('<'))\n"
    "        open(p('o%d.bin' % i), 'wb').write(r.tobytes(order='C'))\n"
    "        open(p('o%d.meta' % i), 'w').write(' '.join([BACK[r.dtype.name]] + [str(d) for d in r.shape]))\n"
    "    except Exception:\n"
    "        open(p('o%d.err' % i), 'w').write(traceback.format_exc(limit=2))\n";

typedef struct npcase {
    char *expr;         /* owned */
    cv_tensor *in;      /* owned, with owned data */
    int n_in;
    cv_tensor out;      /* owned data once have_out */
    int have_out;
    char *err;          /* owned; NULL if none */
} npcase;

struct cv_npref {
    npcase *cases;      /* owned */
    int n, cap;
    cv_sb prelude;
    char *run_err;      /* owned; NULL if none */
};

cv_npref *cv_npref_new(void) { return calloc(1, sizeof(cv_npref)); }

void cv_npref_free(cv_npref *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        npcase *c = &r->cases[i];
        for (int k = 0; k < c->n_in; k++)
            cv_tensor_free(&c->in[k]);
        free(c->in);
        free(c->expr);
        free(c->err);
        if (c->have_out)
            cv_tensor_free(&c->out);
    }
    free(r->cases);
    cv_sb_free(&r->prelude);
    free(r->run_err);
    free(r);
}

void cv_npref_prelude(cv_npref *r, const char *python)
{
    cv_sb_puts(&r->prelude, python);
    cv_sb_putc(&r->prelude, '\n');
}

/* NumPy has no bfloat16: such inputs travel as float32. */
static int copy_input(cv_tensor *dst, const cv_tensor *src)
{
    cv_dtype dt = src->dtype == CV_BF16 ? CV_F32 : src->dtype;
    if (cv_tensor_alloc(dst, dt, src->rank, src->dims))
        return -1;
    if (dt == src->dtype)
        memcpy(dst->data, src->data, cv_tensor_nbytes(src));
    else
        for (int64_t i = 0; i < src->numel; i++)
            cv_tensor_set(dst, i, cv_tensor_get(src, i));
    return 0;
}

int cv_npref_add(cv_npref *r, const char *expr, const cv_tensor *inputs, int n_inputs)
{
    if (n_inputs < 0 || n_inputs > 26)
        return -1;
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        npcase *v = realloc(r->cases, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        r->cases = v;
        r->cap = cap;
    }
    npcase *c = &r->cases[r->n];
    memset(c, 0, sizeof *c);
    c->expr = strdup(expr);
    c->in = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *c->in);
    int ok = c->expr && c->in;
    for (int k = 0; ok && k < n_inputs; k++, c->n_in++)
        ok = copy_input(&c->in[k], &inputs[k]) == 0;
    r->n++;  /* even when failed, so cv_npref_free releases it */
    return ok ? r->n - 1 : -1;
}

/* Reads a whole small file (NUL-terminated); NULL if absent. */
static char *read_file(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    cv_sb sb = CV_SB_INIT;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        cv_sb_add(&sb, buf, n);
    fclose(f);
    if (len)
        *len = sb.len;
    if (!sb.buf)
        return calloc(1, 1);
    return cv_sb_steal(&sb);
}

static int write_inputs(const cv_npref *r, const char *dir)
{
    cv_sb man = CV_SB_INIT;
    cv_sb_printf(&man, "%d\n", r->n);
    int rc = 0;
    for (int i = 0; i < r->n && !rc; i++) {
        const npcase *c = &r->cases[i];
        char name[64];
        cv_sb_printf(&man, "%d\n", c->n_in);
        for (int k = 0; k < c->n_in && !rc; k++) {
            const cv_tensor *t = &c->in[k];
            cv_sb_puts(&man, cv_dtype_name(t->dtype));
            for (int d = 0; d < t->rank; d++)
                cv_sb_printf(&man, " %lld", (long long)t->dims[d]);
            cv_sb_putc(&man, '\n');
            snprintf(name, sizeof name, "i%d_%d.bin", i, k);
            rc = cv_tmpdir_write(dir, name, t->data, cv_tensor_nbytes(t));
        }
        snprintf(name, sizeof name, "e%d.py", i);
        if (!rc)
            rc = cv_tmpdir_write(dir, name, c->expr, strlen(c->expr));
    }
    if (!rc)
        rc = cv_tmpdir_write(dir, "manifest", cv_sb_str(&man), man.len);
    if (!rc && r->prelude.len)
        rc = cv_tmpdir_write(dir, "prelude.py", r->prelude.buf, r->prelude.len);
    cv_sb_free(&man);
    return rc;
}

static int spawn_python(const char *dir, char **err)
{
    const char *args[] = {dir, NULL};
    int st = cv_pyrun(prologue, args, NULL);
    if (st == 0)
        return 0;
    if (asprintf(err, "%s exited with status %d (is python3-numpy installed?)", CV_PYTHON, st) < 0)
        *err = NULL;
    return -1;
}

static int parse_meta(const char *meta, cv_dtype *dt, int *rank, int64_t *dims)
{
    const char *s = meta;
    size_t n = strcspn(s, " \n");
    *dt = n == 3 && memcmp(s, "f64", 3) == 0 ? CV_F64 : cv_dtype_parse(s, n);
    if (*dt == CV_DT_INVALID)
        return -1;
    s += n;
    *rank = 0;
    while (*s == ' ') {
        if (*rank == CV_MAX_RANK)
            return -1;
        char *end;
        dims[(*rank)++] = strtoll(s + 1, &end, 10);
        s = end;
    }
    return 0;
}

static void read_result(npcase *c, const char *dir, int i)
{
    char name[64];
    snprintf(name, sizeof name, "o%d.err", i);
    if ((c->err = read_file(dir, name, NULL)))
        return;
    snprintf(name, sizeof name, "o%d.meta", i);
    char *meta = read_file(dir, name, NULL);
    size_t len = 0;
    snprintf(name, sizeof name, "o%d.bin", i);
    char *bin = read_file(dir, name, &len);
    cv_dtype dt;
    int rank;
    int64_t dims[CV_MAX_RANK];
    if (!meta || !bin || parse_meta(meta, &dt, &rank, dims) ||
        cv_tensor_alloc(&c->out, dt, rank, dims) || cv_tensor_nbytes(&c->out) != len) {
        c->err = strdup("malformed result from python");
        cv_tensor_free(&c->out);
    } else {
        memcpy(c->out.data, bin, len);
        c->have_out = 1;
    }
    free(meta);
    free(bin);
}

int cv_npref_run(cv_npref *r)
{
    free(r->run_err);
    r->run_err = NULL;
    char *dir = cv_tmpdir_make("npref");  /* owned; freed by cv_tmpdir_remove */
    if (!dir) {
        r->run_err = strdup("cannot create a temp dir");
        return -1;
    }
    int rc = write_inputs(r, dir);
    if (rc)
        r->run_err = strdup("cannot write inputs for python");
    else
        rc = spawn_python(dir, &r->run_err);
    for (int i = 0; i < r->n && !rc; i++)
        read_result(&r->cases[i], dir, i);
    cv_tmpdir_remove(dir);
    if (rc && !r->run_err)
        r->run_err = strdup("python failed");
    return rc;
}

const cv_tensor *cv_npref_result(const cv_npref *r, int i)
{
    return (i >= 0 && i < r->n && r->cases[i].have_out) ? &r->cases[i].out : NULL;
}

const char *cv_npref_error(const cv_npref *r, int i)
{
    const char *e = i < 0 ? r->run_err : (i < r->n ? r->cases[i].err : "no such case");
    return e ? e : "";
}

int cv_npref_eval(const char *expr, const cv_tensor *inputs, int n_inputs, cv_tensor *out,
                  char *msg, size_t msg_size)
{
    cv_npref *r = cv_npref_new();
    int rc = -1;
    if (!r) {
        snprintf(msg, msg_size, "out of memory");
        return -1;
    }
    int k = cv_npref_add(r, expr, inputs, n_inputs);
    if (k < 0)
        snprintf(msg, msg_size, "cannot queue the case");
    else if (cv_npref_run(r))
        snprintf(msg, msg_size, "%s", cv_npref_error(r, -1));
    else if (!cv_npref_result(r, k))
        snprintf(msg, msg_size, "%s", cv_npref_error(r, k));
    else {
        *out = r->cases[k].out;   /* hand the data over */
        r->cases[k].have_out = 0;
        rc = 0;
    }
    cv_npref_free(r);
    return rc;
}

/* ---- comparison and data ------------------------------------------------ */

static void format_dims(const cv_tensor *t, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->rank && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "," : "",
                                (long long)t->dims[i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

static bool close_enough(double g, double w, double rtol, double atol)
{
    if (isnan(w) || isnan(g))
        return isnan(w) && isnan(g);
    if (isinf(w) || isinf(g))
        return g == w;
    return fabs(g - w) <= atol + rtol * fabs(w);
}

int cv_npref_compare(const cv_tensor *got, const cv_tensor *want, double rtol, double atol,
                     char *msg, size_t msg_size)
{
    bool same = got->rank == want->rank;
    for (int i = 0; same && i < got->rank; i++)
        same = got->dims[i] == want->dims[i];
    if (!same) {
        char g[128], w[128];
        format_dims(got, g, sizeof g);
        format_dims(want, w, sizeof w);
        snprintf(msg, msg_size, "shape %s, expected %s", g, w);
        return -1;
    }
    bool exact = !cv_dtype_is_float(want->dtype);
    for (int64_t i = 0; i < want->numel; i++) {
        if (exact) {
            int64_t g = cv_tensor_get_i64(got, i), w = cv_tensor_get_i64(want, i);
            if (g != w) {
                snprintf(msg, msg_size, "element %lld: got %lld, expected %lld",
                         (long long)i, (long long)g, (long long)w);
                return -1;
            }
        } else {
            double g = cv_tensor_get(got, i), w = cv_tensor_get(want, i);
            if (!close_enough(g, w, rtol, atol)) {
                snprintf(msg, msg_size, "element %lld: got %.9g, expected %.9g (rtol %g, atol %g)",
                         (long long)i, g, w, rtol, atol);
                return -1;
            }
        }
    }
    return 0;
}

void cv_npref_default_tol(cv_dtype dt, double *rtol, double *atol)
{
    switch (dt) {
    case CV_F32: *rtol = 1e-5, *atol = 1e-6; break;
    case CV_F16: *rtol = 1e-3, *atol = 1e-3; break;
    case CV_BF16: *rtol = 1e-2, *atol = 1e-2; break;
    case CV_F64: *rtol = 1e-12, *atol = 1e-12; break;
    default: *rtol = 0, *atol = 0; break;
    }
}

/* splitmix64: tiny, deterministic, good enough for test data. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void cv_npref_fill(cv_tensor *t, uint64_t seed, double lo, double hi)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < t->numel; i++) {
        double u = (double)(next_u64(&s) >> 11) * 0x1.0p-53;  /* [0, 1) */
        if (t->dtype == CV_BOOL)
            cv_tensor_set_i64(t, i, u < 0.5);
        else if (cv_dtype_is_int(t->dtype))
            cv_tensor_set(t, i, fmin(floor(lo + u * (hi - lo + 1)), hi));
        else
            cv_tensor_set(t, i, lo + u * (hi - lo));
    }
}
