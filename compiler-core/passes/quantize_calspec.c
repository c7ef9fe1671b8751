/* The calibration data of the int8 pass: --calibration specs, their files
 * and their digest (an L2 cache key field).
 *
 * The text is one spec or several separated by ';' (the command line joins
 * repeated --calibration flags so): "GLOB" for a model with one input, or
 * "INPUT=GLOB", one per input of a model with several (a spec is named when
 * the text before its first '=' holds no '/', '*', '?' or '['). Each glob's
 * matches, sorted, are that input's samples: the i-th file of every input
 * makes sample i, so the counts must agree. */
#include <glob.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/npy.h"
#include "compiler-core/passes/quantize.h"

enum { MAX_SPECS = 64 };

typedef struct qspec {
    char name[256];             /* "" for a plain glob */
    const char *glob;           /* into the copy of the text */
} qspec;

/* Splits text (copied into *buf, owned by the caller) into specs. */
static int split(const char *text, char **buf, qspec *sp, int *n, cv_diag *d)
{
    *n = 0;
    *buf = text ? strdup(text) : NULL;
    if (!*buf)
        return text ? (cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory"), -1) : 0;
    for (char *save = NULL, *t = strtok_r(*buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        if (*n == MAX_SPECS)
            return cv_diag_fail(d, CV_E_CALIBRATION_TOO_MANY_SPECS, (cv_span){.file = text}, "--calibration: more than "
                                "%d specs", MAX_SPECS);
        qspec *s = &sp[(*n)++];
        char *eq = strchr(t, '=');
        size_t len = eq ? (size_t)(eq - t) : 0;
        s->name[0] = 0;
        s->glob = t;
        if (len && strcspn(t, "/*?[") > len) {
            if (len >= sizeof s->name)
                return cv_diag_fail(d, CV_E_CALIBRATION_UNKNOWN_INPUT, (cv_span){.file = text}, "--calibration: input "
                                    "name too long");
            memcpy(s->name, t, len);
            s->name[len] = 0;
            s->glob = eq + 1;
        }
    }
    return 0;
}

void cv_qcal_free(cv_qsamples *s)
{
    for (int i = 0; i < s->n * s->n_in; i++)
        cv_tensor_free(&s->in[i]);
    free(s->in);
    s->in = NULL;
    s->n = 0;
}

/* The .npy data as a tensor of the input's rank and dtype (dims checked by
 * the interpreter when it binds the input): f32 from f32 or f64; any other
 * dtype (token ids of a transformer, a mask) as stored, which must be the
 * input's own. */
static int to_input(const cv_value *in, cv_npy *n, const char *path, cv_tensor *t, cv_diag *d)
{
    cv_dtype want = in->type.dtype;
    bool f32 = want == CV_F32 && (n->dtype == CV_F32 || n->dtype == CV_F64);
    if (n->rank != in->type.shape.rank || !(f32 || n->dtype == want))
        return cv_diag_fail(d, CV_E_CALIBRATION_FILE, (cv_span){.file = path}, "calibration file %s: expected "
                            "an %s array of rank %d for input %%%s", path,
                            want == CV_F32 ? "f32 or f64" : cv_dtype_name(want),
                            in->type.shape.rank, in->name);
    if (cv_tensor_alloc(t, want, n->rank, n->dims))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = path}, "out of memory");
    int64_t cnt = cv_npy_numel(n);
    if (n->dtype != CV_F64 || want != CV_F32) {
        memcpy(t->data, n->data, (size_t)cnt * cv_dtype_size(want));
        return 0;
    }
    for (int64_t i = 0; i < cnt; i++)
        ((float *)t->data)[i] = (float)((const double *)n->data)[i];
    return 0;
}

static int no_files(const char *glob, cv_diag *d)
{
    return cv_diag_fail(d, CV_E_CALIBRATION_MISSING, (cv_span){.file = glob}, "-p int8 needs calibration data: "
                        "--calibration \"GLOB\" matched no file (%s)",
                        glob ? glob : "none given");
}

/* The names of f's inputs, for messages. */
static void input_names(const cv_func *f, char *out, size_t size)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < f->n_inputs && at + 1 < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? ", " : "", f->inputs[i]->name);
}

/* spec_of[i]: the spec that feeds input i. */
static int match(const cv_func *f, const char *text, const qspec *sp, int n, int *spec_of,
                 cv_diag *d)
{
    char names[512];
    input_names(f, names, sizeof names);
    for (int i = 0; i < f->n_inputs; i++)
        spec_of[i] = -1;
    if (n == 1 && !sp[0].name[0]) {
        if (f->n_inputs != 1)
            return cv_diag_fail(d, CV_E_CALIBRATION_NEEDS_NAMES, (cv_span){.file = text}, "--calibration \"%s\": the "
                                "model has %d inputs (%s): give one --calibration INPUT=GLOB "
                                "per input", text, f->n_inputs, names);
        spec_of[0] = 0;
        return 0;
    }
    for (int k = 0; k < n; k++) {
        int in = -1;
        for (int i = 0; i < f->n_inputs && in < 0 && sp[k].name[0]; i++)
            in = strcmp(f->inputs[i]->name, sp[k].name) == 0 ? i : -1;
        if (!sp[k].name[0] || in < 0)
            return cv_diag_fail(d, CV_E_CALIBRATION_UNKNOWN_INPUT, (cv_span){.file = text}, "--calibration \"%s\": "
                                "%s%s%s; the model's inputs are %s", sp[k].glob,
                                sp[k].name[0] ? "the model has no input named '" :
                                "several specs must each name their input (INPUT=GLOB)",
                                sp[k].name, sp[k].name[0] ? "'" : "", names);
        if (spec_of[in] >= 0)
            return cv_diag_fail(d, CV_E_CALIBRATION_INPUT_TWICE, (cv_span){.file = text}, "--calibration: input '%s' "
                                "is given twice", sp[k].name);
        spec_of[in] = k;
    }
    for (int i = 0; i < f->n_inputs; i++)
        if (spec_of[i] < 0)
            return cv_diag_fail(d, CV_E_CALIBRATION_INPUT_MISSING, (cv_span){.file = text}, "--calibration: no data "
                                "for input '%s' (add --calibration %s=GLOB)",
                                f->inputs[i]->name, f->inputs[i]->name);
    return 0;
}

/* Loads input `in`'s files g into column `in` of s. */
static int load_column(const cv_func *f, int in, const glob_t *g, cv_qsamples *s, cv_diag *d)
{
    for (int k = 0; k < s->n; k++) {
        cv_npy np;
        if (cv_npy_read(g->gl_pathv[k], &np, d))
            return -1;
        int rc = to_input(f->inputs[in], &np, g->gl_pathv[k], &s->in[k * s->n_in + in], d);
        cv_npy_free(&np);
        if (rc)
            return -1;
    }
    return 0;
}

int cv_qcal_load(const cv_func *f, const char *root, const char *text, cv_qsamples *s,
                 cv_diag *d)
{
    memset(s, 0, sizeof *s);
    if (f->n_inputs < 1 || f->n_inputs > MAX_SPECS)
        return cv_diag_fail(d, CV_E_CALIBRATION_MODEL, f->span, "int8 calibration needs a model with 1 to %d "
                            "inputs; @%s has %d", MAX_SPECS, f->name, f->n_inputs);
    qspec sp[MAX_SPECS];
    int nsp, spec_of[MAX_SPECS];
    char *buf = NULL;
    glob_t g[MAX_SPECS];
    int n_glob = 0, rc = split(text, &buf, sp, &nsp, d);
    if (rc == 0 && nsp == 0)
        rc = no_files(text, d);
    if (rc == 0)
        rc = match(f, text, sp, nsp, spec_of, d);
    s->n_in = f->n_inputs;
    for (int i = 0; rc == 0 && i < f->n_inputs; i++) {
        const char *pat = sp[spec_of[i]].glob;
        int found = cv_fs_glob(root, pat, &g[i], d);
        n_glob += found >= 0;
        if (found == 0)
            rc = no_files(pat, d);
        else if (found < 0)
            rc = -1;
        int cnt = found < CV_QCAL_MAX_FILES ? found : CV_QCAL_MAX_FILES;
        if (rc == 0 && i > 0 && cnt != s->n)
            rc = (cv_diag_error(d, CV_E_CALIBRATION_COUNT_MISMATCH, (cv_span){.file = text}, "--calibration: input '%s' "
                                "has %d files but '%s' has %d; the i-th file of every input "
                                "makes sample i", f->inputs[0]->name, s->n,
                                f->inputs[i]->name, cnt), -1);
        s->n = cnt;
    }
    if (rc == 0 && !(s->in = calloc((size_t)(s->n * s->n_in), sizeof *s->in)))
        rc = (cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory"), -1);
    for (int i = 0; rc == 0 && i < f->n_inputs; i++)
        rc = load_column(f, i, &g[i], s, d);
    for (int i = 0; i < n_glob; i++)
        globfree(&g[i]);
    free(buf);
    if (rc && s->in)
        cv_qcal_free(s);
    return rc;
}

/* ---- the calibration digest (an L2 cache key field) -------------------------- */

static int spec_cmp(const void *a, const void *b)
{
    return strcmp(((const qspec *)a)->name, ((const qspec *)b)->name);
}

/* One glob's files into h: their count (head_fmt, when given), then each
 * file's length and bytes in glob order (their names do not matter). */
static int hash_files(EVP_MD_CTX *h, const cv_quant_opts *q, const char *glob, const char *head,
                      cv_diag *d)
{
    glob_t g;
    int found = cv_fs_glob(q->calibration_root, glob, &g, d);
    if (found <= 0)
        return found == 0 ? no_files(glob, d) : -1;
    size_t n = g.gl_pathc < CV_QCAL_MAX_FILES ? g.gl_pathc : (size_t)CV_QCAL_MAX_FILES;
    char line[512];
    snprintf(line, sizeof line, "%s %zu", head, n);
    EVP_DigestUpdate(h, line, strlen(line) + 1);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *data = NULL;
        size_t len = 0;
        rc = cv_fs_read_file(g.gl_pathv[i], (size_t)1 << 32, &data, &len, d);
        if (rc == 0) {
            uint64_t sz = len;
            EVP_DigestUpdate(h, &sz, sizeof sz);
            EVP_DigestUpdate(h, data, len);
        }
        free(data);
    }
    globfree(&g);
    return rc;
}

int cv_calib_digest(const cv_quant_opts *q, char hex[65], cv_diag *d)
{
    qspec sp[MAX_SPECS];
    int nsp;
    char *buf = NULL;
    int rc = split(q->calibration, &buf, sp, &nsp, d);
    if (rc == 0 && nsp == 0)
        rc = no_files(q->calibration, d);
    EVP_MD_CTX *h = rc == 0 ? EVP_MD_CTX_new() : NULL;
    if (rc == 0 && !(h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1))
        rc = (cv_diag_error(d, CV_E_RESOURCE_LIMIT, (cv_span){0}, "cannot hash the calibration data"), -1);
    char head[160];
    if (rc == 0 && nsp == 1 && !sp[0].name[0]) {
        /* One plain glob: the digest of the first version, unchanged. */
        snprintf(head, sizeof head, "cuvil-calib 1 %d %.17g", (int)q->method, q->percentile);
        rc = hash_files(h, q, sp[0].glob, head, d);
    } else if (rc == 0) {
        /* Named specs in name order (the order of the flags does not matter). */
        qsort(sp, (size_t)nsp, sizeof *sp, spec_cmp);
        snprintf(head, sizeof head, "cuvil-calib 2 %d %.17g %d", (int)q->method, q->percentile,
                 nsp);
        EVP_DigestUpdate(h, head, strlen(head) + 1);
        for (int k = 0; rc == 0 && k < nsp; k++)
            rc = hash_files(h, q, sp[k].glob, sp[k].name, d);
    }
    unsigned char md[32];
    unsigned mdlen = 0;
    if (rc == 0 && EVP_DigestFinal_ex(h, md, &mdlen) == 1 && mdlen == 32)
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
    else if (rc == 0)
        rc = (cv_diag_error(d, CV_E_RESOURCE_LIMIT, (cv_span){0}, "cannot hash the calibration data"), -1);
    EVP_MD_CTX_free(h);
    free(buf);
    return rc;
}
