/* cv_compile_native: a verified module to an artifact directory
 *   <name>.o  [<name>_weights.o]  lib<name>.a  lib<name>.so  <name>.h  [<name>.ll  <name>.cuir]
 *   manifest.json
 * Every file is a function of the inputs only (no timestamps, no paths), so
 * two compiles of one model give byte-identical artifacts. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "compiler-core/backend/kernel_internal.h"
#include "common/fs.h"
#include "common/jsonutil.h"
#include "compiler-core/backend/artifact_internal.h"
#include "compiler-core/backend/c99/c99.h"
#include "compiler-core/backend/codegen.h"
#include "compiler-core/backend/codegen_half.h"
#include "compiler-core/backend/debug_internal.h"
#include "compiler-core/backend/llvm/llvm_backend.h"
#include "compiler-core/backend/targets.h"
#include "compiler-core/cuvil.h"
#include "compiler-core/passes/passes.h"
#include "cv_version.h"

static const struct { const char *name; unsigned bit; } emit_names[] = {
    {"obj", CV_EMIT_OBJ}, {"a", CV_EMIT_A}, {"so", CV_EMIT_SO}, {"h", CV_EMIT_H},
    {"llvm", CV_EMIT_LLVM}, {"cuir", CV_EMIT_CUIR}, {"c", CV_EMIT_C},
    {"weights", CV_EMIT_WEIGHTS},
};

int cv_emit_parse(const char *list, unsigned *out)
{
    *out = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        bool found = false;
        for (size_t i = 0; i < sizeof emit_names / sizeof emit_names[0]; i++)
            if (strlen(emit_names[i].name) == n && strncmp(p, emit_names[i].name, n) == 0) {
                *out |= emit_names[i].bit;
                found = true;
            }
        if (!found)
            return -1;
        p += n + (p[n] == ',');
    }
    return *out ? 0 : -1;
}

static void hex_of(const unsigned char md[32], char hex[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* SHA-256 of pieces in order, as of their concatenation. */
static int sha256_parts(const cv_fs_part *parts, int n, char hex[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    int ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL);
    for (int i = 0; ok && i < n; i++)
        ok = EVP_DigestUpdate(x, parts[i].data, parts[i].len);
    ok = ok && EVP_DigestFinal_ex(x, md, &len);
    EVP_MD_CTX_free(x);
    if (ok)
        hex_of(md, hex);
    return ok ? 0 : -1;
}

typedef struct writer {
    const char *dir;
    json_t *files;      /* {name: {sha256, size}} */
    cv_diag *d;
    cv_fs_view so;      /* owned: the linked library's bytes, read once (record_so) */
} writer;

static void record(writer *w, const char *name, const char *hex, size_t len)
{
    json_object_set_new(w->files, name, json_pack("{s:s, s:I}", "sha256", hex, "size", (json_int_t)len));
}

static void digest_seen(void *ctx, const void *data, size_t len)
{
    EVP_DigestUpdate(ctx, data, len);
}

/* A file written from pieces and digested in the same pass over them (each
 * chunk hashed just after it is written, still in cache; no read-back). */
static int put_parts(writer *w, const char *name, const cv_fs_part *parts, int n)
{
    char *path = cv_fs_join(w->dir, name), hex[65];
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    int rc = path && x && EVP_DigestInit_ex(x, EVP_sha256(), NULL)
                 ? cv_fs_write_replace_parts_seen(path, parts, n, digest_seen, x, w->d)
                 : cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    free(path);
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (rc == 0 && !EVP_DigestFinal_ex(x, md, &mdlen))
        rc = cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    EVP_MD_CTX_free(x);
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += parts[i].len;
    if (rc == 0) {
        hex_of(md, hex);
        record(w, name, hex, len);
    }
    return rc;
}

static int put_file(writer *w, const char *name, const void *data, size_t len)
{
    cv_fs_part part = {data, len};
    return put_parts(w, name, &part, 1);
}

/* Records the linked .so, which the linker wrote; its bytes stay in w for
 * the symbol map's code ranges (write_symbols), so it is read once. */
static int record_so(writer *w, const char *name)
{
    char *path = cv_fs_join(w->dir, name);
    cv_fs_view_free(&w->so);
    int rc = path ? cv_fs_view_file(path, (size_t)1 << 34, &w->so, w->d) : -1;
    cv_fs_part part = {w->so.data, w->so.len};
    char hex[65];
    if (rc == 0 && sha256_parts(&part, 1, hex) != 0)
        rc = cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    if (rc == 0)
        record(w, name, hex, w->so.len);
    free(path);
    return rc;
}

static json_t *io_json(const cv_value *v)
{
    json_t *dims = json_array();
    for (int k = 0; k < v->type.shape.rank; k++) {
        const cv_dim *dm = &v->type.shape.d[k];
        json_array_append_new(dims, dm->sym ? json_string(dm->sym) : json_integer(dm->n));
    }
    return json_pack("{s:s, s:s, s:o}", "name", v->name, "dtype", cv_dtype_name(v->type.dtype),
                     "shape", dims);
}

bool cv_artifact_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 64 || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
            return false;
    return true;
}

void cv_artifact_c_name(const char *func_name, char *out, size_t size)
{
    size_t o = 0;
    if (size == 0)
        return;
    if (!isalpha((unsigned char)func_name[0]) && func_name[0] != '_' && o + 1 < size)
        out[o++] = 'm';
    for (const char *s = func_name; *s && o + 1 < size; s++)
        out[o++] = isalnum((unsigned char)*s) ? *s : '_';
    out[o] = 0;
}

/* The x86 features the code needs (cpu_check.c), for the manifest's
 * target.requires; empty for other architectures and CUDA. */
static json_t *requires_json(const char *target)
{
    json_t *arr = json_array();
    char triple[64], desc[4096];
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_target_is_cuda(target) ? -1
             : cv_target_describe(target, triple, desc, sizeof desc, &quiet);
    cv_diag_free(&quiet);
    if (rc || strncmp(triple, "x86_64", 6) != 0 || strncmp(desc, "cpu=", 4) != 0)
        return arr;
    char cpu[64];
    size_t len = strcspn(desc + 4, ",");
    snprintf(cpu, sizeof cpu, "%.*s", (int)(len < 63 ? len : 63), desc + 4);
    const char *req[64];
    int n = cv_cpu_required(cpu, desc + 4 + len, req, 64);
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, json_string(req[i]));
    return arr;
}

/* --stats: the arena's formula and its value at sample sizes. */
static void arena_samples(const cv_kprog *p, cv_compile_info *info)
{
    static const int64_t at[3] = {1, 16, 128};
    cv_sb f = CV_SB_INIT;
    if (p->n_syms)
        cv_artifact_arena_formula(p, &f);
    snprintf(info->arena_formula, sizeof info->arena_formula, "%s", cv_sb_str(&f));
    cv_sb_free(&f);
    int64_t *syms = calloc((size_t)p->n_syms + 1, sizeof *syms), peak;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; syms && i < p->n_syms; i++)
            syms[i] = at[k];
        info->arena_at[k] = -1;
        if (syms)
            cv_memplan_stats(p, syms, &info->arena_at[k], &peak);
    }
    free(syms);
}

/* {"L": {"max": 64, "why": ...}}: what the run checks (-4), for the loader's
 * message (cv_native_run: CV3013). */
static json_t *bounds_json(const cv_kprog *p)
{
    int sym[CV_MAX_RANK * 4];
    int64_t max[CV_MAX_RANK * 4];
    const char *why[CV_MAX_RANK * 4];
    int nb = cv_kp_sym_bounds(p, sym, max, why, CV_MAX_RANK * 4);
    json_t *o = json_object();
    for (int i = 0; o && i < nb; i++)
        json_object_set_new(o, p->sym_names[sym[i]],
                            json_pack("{s:I, s:s}", "max", (json_int_t)max[i], "why", why[i]));
    return o;
}

static json_t *manifest(const cv_kprog *p, const cv_llvm_out *lo, const cv_compile_opts *o,
                        json_t *files)
{
    const cv_func *f = p->f;
    json_t *ins = json_array(), *outs = json_array(), *syms = json_array();
    for (int i = 0; i < f->n_inputs; i++)
        json_array_append_new(ins, io_json(f->inputs[i]));
    for (int i = 0; i < f->n_returns; i++)
        json_array_append_new(outs, io_json(f->returns[i]));
    for (int i = 0; i < p->n_syms; i++)
        json_array_append_new(syms, json_string(p->sym_names[i]));
    int64_t arena, peak;
    cv_memplan_stats(p, NULL, &arena, &peak);
    cv_sb expr = CV_SB_INIT;
    cv_artifact_arena_expr(p, "d", &expr);
    json_t *m = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:o}, s:i, s:{s:s, s:s}, s:s, s:o, s:o, s:o,"
                          " s:{s:s, s:I, s:I}, s:i, s:o}",
                          "format", "cuvil-artifact/1", "name", p->name,
                          "target", "name", o->target, "triple", lo->triple, "cpu", lo->cpu,
                          "requires", requires_json(o->target),
                          "opt_level", o->opt_level,
                          "compiler", "version", CV_VERSION, "build_id", CV_GIT_COMMIT,
                          "llvm_version", cv_llvm_version(), "symbols", syms, "inputs", ins,
                          "outputs", outs, "arena", "bytes", cv_sb_str(&expr),
                          "bytes_at_ones", (json_int_t)arena,
                          "peak_live_bytes_at_ones", (json_int_t)peak,
                          "kernels", p->n_kernels, "files", files);
    json_t *bounds = bounds_json(p);
    if (m && json_object_size(bounds))
        json_object_set(m, "symbol_bounds", bounds);
    json_decref(bounds);
    cv_sb_free(&expr);
    return m;
}

/* The weights object of a split program (weights_obj.c); none (len 0)
 * when no constant is large enough to leave the code. */
static int weights_object(const cv_kprog *p, const cv_llvm_out *lo, cv_weights_obj *wo,
                          cv_diag *d)
{
    memset(wo, 0, sizeof *wo);
    if (!p->split_weights || cv_weights_split_layout(p, NULL) == 0)
        return 0;
    char sym[200];
    snprintf(sym, sizeof sym, "cv_%s_weights", p->name);
    return cv_weights_split_object(p, lo->obj, lo->obj_len, sym, wo, d);
}

/* The image's length and where file holds it (cv_compile_info.weights_in). */
static void note_weights(cv_compile_info *info, const cv_weights_obj *wo, const char *file,
                         uint64_t at)
{
    if (!wo->len || info->n_weights_in >= 3)
        return;
    info->weights_len = wo->len - sizeof wo->head - wo->tail_len;
    snprintf(info->weights_in[info->n_weights_in].file, sizeof info->weights_in[0].file, "%s",
             file);
    info->weights_in[info->n_weights_in++].at = at;
}

/* The build id of the library linked from objs (their digests as
 * recorded), 40 hex digits into id. */
static int objects_build_id(writer *w, const char *const *objs, int n, char id[41])
{
    const char *hex[2];
    for (int i = 0; i < n; i++)
        if (!(hex[i] = json_string_value(json_object_get(json_object_get(w->files, objs[i]),
                                                         "sha256"))))
            return -1;
    return cv_so_build_id(hex, n, id);
}

/* lib<name>.so as a cached library's bytes around this image (so_splice.c):
 * 1 written, 0 no template fits (then the linker runs), -1 error. */
static int splice_shared(writer *w, const char *so, const cv_weights_obj *wo,
                         const cv_code_cache *cc, const char *id, uint64_t *at)
{
    cv_so_template t;
    uint64_t image = wo->len - sizeof wo->head - wo->tail_len;
    if (!cc || !cc->so_lookup || !wo->len || cc->so_lookup(cc->ctx, &t) != 1)
        return 0;
    int rc = 0;
    cv_fs_part *parts = cv_so_template_fits(&t, image) && cv_so_template_patch(&t, id) == 0
                            ? malloc(sizeof *parts * ((size_t)wo->n_parts + 1))
                            : NULL;
    if (parts) {    /* the weights object's pieces less its own head and tail */
        int np = 0;
        parts[np++] = (cv_fs_part){t.head, t.head_len};
        for (int i = 1; i + 1 < wo->n_parts; i++)
            parts[np++] = wo->parts[i];
        parts[np++] = (cv_fs_part){t.tail, t.tail_len};
        char *path = cv_fs_join(w->dir, so);
        mode_t mask = umask(0);
        umask(mask);
        rc = path && put_parts(w, so, parts, np) == 0 && chmod(path, 0777 & ~mask) == 0 &&
                     cv_fs_view_file(path, (size_t)1 << 34, &w->so, w->d) == 0
                 ? 1 : -1;
        *at = t.head_len;
        free(path);
        free(parts);
    }
    cv_so_template_free(&t);
    return rc;
}

/* The template of a library just linked, for the next compile of this
 * code; *at: where the library holds the image (0: not found). */
static void store_template(writer *w, const cv_kprog *p, const cv_weights_obj *wo,
                           const cv_code_cache *cc, uint64_t *at)
{
    cv_so_template t;
    char sym[200];
    snprintf(sym, sizeof sym, "cv_%s_weights", p->name);
    if (!wo->len || !w->so.data ||
        cv_so_template_cut(w->so.data, w->so.len, sym, wo->len - sizeof wo->head - wo->tail_len,
                           &t) != 0)
        return;
    *at = t.head_len;
    if (cc && cc->so_store)
        cc->so_store(cc->ctx, &t);
    cv_so_template_free(&t);
}

/* lib<name>.so from the objects written as files (removed again unless
 * --emit obj asked for them): spliced around the weights where the code
 * cache holds this code's library, else linked. */
static int write_shared(writer *w, const cv_kprog *p, const cv_llvm_out *lo, unsigned emit,
                        const cv_weights_obj *wo, const char *const *objs, int n,
                        const cv_code_cache *cc, cv_compile_info *info)
{
    double t0 = cv_clock_mono_ms_f();
    char so[200], id[41];
    snprintf(so, sizeof so, "lib%s.so", p->name);
    char *paths[2] = {NULL, NULL}, *sop = cv_fs_join(w->dir, so);
    for (int i = 0; i < n; i++)
        paths[i] = cv_fs_join(w->dir, objs[i]);
    bool missing = false;
    uint64_t at = 0;
    int rc = objects_build_id(w, objs, n, id) == 0 ? splice_shared(w, so, wo, cc, id, &at) : -1;
    info->so_spliced = rc == 1;
    if (rc == 0) {
        rc = sop && paths[0] && (n < 2 || paths[1])
                 ? cv_link_shared(lo->linker, (const char *const *)paths, n, sop, so, id, w->d,
                                  &missing)
                 : cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
        if (rc == 0 && (rc = record_so(w, so)) == 0)
            store_template(w, p, wo, cc, &at);
        else if (missing)
            rc = 0;     /* a cross target without its toolchain: .o and .a only */
    } else if (rc < 0 && !w->d->n) {
        rc = cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    }
    rc = rc > 0 ? 0 : rc;
    if (rc == 0 && at)
        note_weights(info, wo, so, at);
    info->ms_link = cv_clock_mono_ms_f() - t0;
    info->linked_so = rc == 0 && !missing;
    for (int i = 0; i < n && !(emit & CV_EMIT_OBJ); i++) {
        if (paths[i])
            unlink(paths[i]);
        json_object_del(w->files, objs[i]);
    }
    free(paths[0]);
    free(paths[1]);
    free(sop);
    return rc;
}

/* lib<name>.a: the code object and the weights object, written from where
 * their bytes are. */
static int write_archive(writer *w, const cv_kprog *p, const cv_llvm_out *lo,
                         const cv_weights_obj *wo, const char *const *objs, int n,
                         cv_compile_info *info)
{
    char syms[8][160], lib[200], wsym[200];
    int ns = cv_artifact_symbols(p, syms, 8);
    const char *sp[8], *wsp[1] = {wsym};
    for (int i = 0; i < ns; i++)
        sp[i] = syms[i];
    snprintf(lib, sizeof lib, "lib%s.a", p->name);
    snprintf(wsym, sizeof wsym, "cv_%s_weights", p->name);
    cv_fs_part code = {lo->obj, lo->obj_len}, *parts = NULL;
    cv_ar_member m[2] = {{objs[0], &code, 1, lo->obj_len, sp, ns},
                         {objs[1], wo->parts, wo->n_parts, wo->len, wsp, 1}};
    cv_sb glue = CV_SB_INIT;
    int np = 0;
    int rc = cv_archive_parts(m, n, &glue, &parts, &np) == 0
                 ? put_parts(w, lib, parts, np)
                 : cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    uint64_t at = 0;    /* the weights object's own head is one piece: the image follows it */
    int i = 0;
    for (; rc == 0 && i < np && parts[i].data != wo->head; i++)
        at += parts[i].len;
    if (rc == 0 && n == 2 && i < np)
        note_weights(info, wo, lib, at + sizeof wo->head);
    free(parts);
    cv_sb_free(&glue);
    return rc;
}

/* <name>.o (the code), <name>_weights.o (split weights), lib<name>.a with
 * both, lib<name>.so linked from both. */
static int write_library(writer *w, const cv_kprog *p, const cv_llvm_out *lo, unsigned emit,
                         const cv_code_cache *cc, cv_compile_info *info)
{
    if (!(emit & (CV_EMIT_OBJ | CV_EMIT_A | CV_EMIT_SO)))
        return 0;   /* --emit c, llvm, h: no object */
    char obj[200], wobj[200];
    snprintf(obj, sizeof obj, "%s.o", p->name);
    snprintf(wobj, sizeof wobj, "%s_weights.o", p->name);
    cv_weights_obj wo;
    if (weights_object(p, lo, &wo, w->d))
        return -1;
    int n = wo.len ? 2 : 1;
    const char *objs[2] = {obj, wobj};
    int rc = 0;
    if (emit & (CV_EMIT_OBJ | CV_EMIT_SO)) {
        rc = put_file(w, obj, lo->obj, lo->obj_len);
        if (rc == 0 && wo.len && (rc = put_parts(w, wobj, wo.parts, wo.n_parts)) == 0)
            note_weights(info, &wo, wobj, sizeof wo.head);
    }
    if (rc == 0 && (emit & CV_EMIT_A))
        rc = write_archive(w, p, lo, &wo, objs, n, info);
    if (rc == 0 && (emit & CV_EMIT_SO))
        rc = write_shared(w, p, lo, emit, &wo, objs, n, p->split_weights ? cc : NULL, info);
    cv_weights_obj_free(&wo);
    return rc;
}

/* The C99 backend's files (c99/c99.h). */
static int write_c(writer *w, const cv_kprog *p)
{
    cv_c99_out c;
    char name[200];
    if (cv_c99_generate(p, &c, w->d))
        return -1;
    snprintf(name, sizeof name, "%s.c", p->name);
    int rc = put_file(w, name, c.source, c.source_len);
    snprintf(name, sizeof name, "%s_weights.c", p->name);
    if (rc == 0)
        rc = put_file(w, name, c.weights, c.weights_len);
    cv_c99_out_free(&c);
    return rc;
}

/* --weights-file: <name>.weights.bin (weights_file.c). */
static int write_weights(writer *w, const cv_kprog *p)
{
    char name[200], *data;
    size_t len;
    snprintf(name, sizeof name, "%s.weights.bin", p->name);
    if (cv_weights_image(p, &data, &len))
        return cv_diag_fail(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory");
    int rc = put_file(w, name, data, len);
    free(data);
    return rc;
}

/* <name>.cvsym, with the code ranges from the linked library (its bytes
 * kept by record_so). */
static int write_symbols(writer *w, const cv_kprog *p, const cv_compile_opts *o, unsigned emit,
                         const cv_compile_info *info)
{
    char so[200], name[200], listing[200];
    snprintf(so, sizeof so, "lib%s.so", p->name);
    snprintf(listing, sizeof listing, "%s.cuir", p->name);
    bool linked = info->linked_so && w->so.data;
    bool in_listing = o->debug && (emit & CV_EMIT_CUIR) && cv_debug_needs_listing(p);
    char *json = cv_debug_symmap_json(p, o->debug || o->sym_locs, o->fingerprint,
                                      linked ? so : NULL, linked ? w->so.data : NULL,
                                      linked ? w->so.len : 0, in_listing ? listing : NULL);
    snprintf(name, sizeof name, "%s.cvsym", p->name);
    int rc = json ? put_file(w, name, json, strlen(json))
                  : (cv_diag_error(w->d, CV_E_OUT_OF_MEMORY, (cv_span){0}, "out of memory"), -1);
    free(json);
    return rc;
}

static int write_artifact(const cv_module *m, const cv_kprog *p, const cv_llvm_out *lo,
                          const cv_compile_opts *o, unsigned emit, cv_compile_info *info,
                          cv_diag *d)
{
    writer w = {.dir = o->out_dir, .files = json_object(), .d = d};
    char name[200];
    int rc = write_library(&w, p, lo, emit, o->code_cache, info);
    if (rc == 0 && lo->ptx) {   /* CUDA: the PTX the library embeds, for inspection */
        snprintf(name, sizeof name, "%s.ptx", p->name);
        rc = put_file(&w, name, lo->ptx, lo->ptx_len);
    }
    if (rc == 0 && (emit & CV_EMIT_C))
        rc = write_c(&w, p);
    if (rc == 0 && p->weights_file)
        rc = write_weights(&w, p);
    if (rc == 0 && (emit & (CV_EMIT_H | CV_EMIT_C))) {
        cv_sb h = CV_SB_INIT;
        cv_artifact_header(p, o->target, o->opt_level, &h);
        snprintf(name, sizeof name, "%s.h", p->name);
        rc = put_file(&w, name, cv_sb_str(&h), h.len);
        cv_sb_free(&h);
    }
    /* Reduced precision: the calibration's scales and SQNR go with the artifact. */
    if (rc == 0 && info->quant_report[0])
        rc = put_file(&w, "quant_report.txt", info->quant_report, strlen(info->quant_report));
    if (rc == 0 && (emit & CV_EMIT_LLVM) && lo->ir) {
        snprintf(name, sizeof name, "%s.ll", p->name);
        rc = put_file(&w, name, lo->ir, strlen(lo->ir));
    }
    if (rc == 0 && (emit & CV_EMIT_CUIR)) {
        char *text = cv_module_print(m, 0);
        snprintf(name, sizeof name, "%s.cuir", p->name);
        rc = text ? put_file(&w, name, text, strlen(text)) : -1;
        free(text);
    }
    if (rc == 0)
        rc = write_symbols(&w, p, o, emit, info);
    if (rc == 0) {
        json_t *man = manifest(p, lo, o, json_incref(w.files));
        snprintf(name, sizeof name, "%s.weights.bin", p->name);
        if (man && p->weights_file)
            json_object_set_new(man, "weights", json_pack("{s:s, s:I}", "file", name, "bytes",
                                (json_int_t)cv_weights_layout(p, NULL)));
        char *path = cv_fs_join(o->out_dir, "manifest.json");
        rc = man && path ? cv_json_write_file(path, man, true, d) : -1;
        free(path);
        json_decref(man);
    }
    json_decref(w.files);
    cv_fs_view_free(&w.so);
    return rc;
}

/* Channels per block of the blocked layout: the vector width (16) of the
 * AVX-512 targets, where the blocked kernels measured faster (bench/models);
 * 0 (off) for the others (AVX2: its 16 registers cannot hold the kernels'
 * tiles, measured slower) and when it cannot be told. */
static int nchwc_block(const char *target)
{
    char triple[64], features[4096];
    const cv_target_desc *t = cv_target_find(target);
    if (t)
        return strcmp(t->rt_variant, "x86_64_avx512") == 0 ? 16 : 0;
    cv_diag quiet;
    cv_diag_init(&quiet);
    int rc = cv_target_describe(target, triple, features, sizeof features, &quiet);
    cv_diag_free(&quiet);
    if (rc || strncmp(triple, "x86_64", 6) != 0)
        return 0;
    return strstr(features, "+avx512f") ? 16 : 0;
}

/* The linker of a target, known without LLVM ("native": this machine's cc). */
static const char *target_linker(const char *target)
{
    const cv_target_desc *t = cv_target_find(target);
    return t ? t->linker : "cc";
}

/* The object of p: from the code cache when it holds p's source (no LLVM
 * runs; *cached set), else from LLVM, then stored in the cache. */
static int code_object(const cv_module *m, const cv_kprog *p, const cv_compile_opts *o,
                       bool want_ir, int blk, unsigned half, const cv_code_cache *cc,
                       cv_llvm_out *lo, bool *cached, cv_diag *d)
{
    size_t len = 0;
    char *src = cc && cc->lookup ? cv_code_source(m, p, blk, half, &len) : NULL;
    cv_code_object got = {0};
    if (src && cc->lookup(cc->ctx, src, len, &got) == 1) {
        free(src);
        memset(lo, 0, sizeof *lo);
        lo->obj = got.obj;
        lo->obj_len = got.len;
        snprintf(lo->triple, sizeof lo->triple, "%s", got.triple);
        snprintf(lo->cpu, sizeof lo->cpu, "%s", got.cpu);
        lo->linker = target_linker(o->target);
        *cached = true;
        return 0;
    }
    free(src);
    if (cv_llvm_compile(p, o->target, o->opt_level, want_ir, lo, d))
        return -1;
    if (cc && cc->store) {
        cv_code_object made = {.obj = lo->obj, .len = lo->obj_len};
        snprintf(made.triple, sizeof made.triple, "%s", lo->triple);
        snprintf(made.cpu, sizeof made.cpu, "%s", lo->cpu);
        cc->store(cc->ctx, &made);
    }
    return 0;
}

int cv_compile_native(cv_module *m, const cv_compile_opts *opts, cv_compile_info *info,
                      cv_diag *d)
{
    cv_compile_opts o = *opts;
    if (!o.target)
        o.target = "native";
    unsigned emit = o.emit & ~CV_EMIT_WEIGHTS ? o.emit : o.emit | CV_EMIT_DEFAULT;
    if ((emit & CV_EMIT_WEIGHTS) && cv_target_is_cuda(o.target))
        return cv_diag_fail(d, CV_E_WEIGHTS_FILE_UNSUPPORTED, (cv_span){.file = m->path}, "--weights-file: the CUDA "
                            "targets keep their weights in the library");
    memset(info, 0, sizeof *info);
    if (o.name && !cv_artifact_name_ok(o.name))
        return cv_diag_fail(d, CV_E_BAD_ARTIFACT_NAME, (cv_span){.file = m->path}, "--name '%.80s' "
                            "is not a C identifier of at most 64 characters ([A-Za-z_]"
                            "[A-Za-z0-9_]*)", o.name);
    if (m->n_funcs < 1)
        return cv_diag_fail(d, CV_E_CODEGEN_FAILED, (cv_span){.file = m->path}, "the module has no model");
    int max_ops = o.max_ops > 0 ? o.max_ops : CV_MAX_COMPILE_OPS;
    if (m->funcs[0]->n_ops > max_ops)
        return cv_diag_fail(d, CV_E_MODEL_TOO_LARGE, m->funcs[0]->span, "the model has %d ops, more than the %d "
                            "a compile takes (cuvil compile --max-ops N to change it)",
                            m->funcs[0]->n_ops, max_ops);
    if (cv_fs_mkdirs(o.out_dir, 0755))
        return cv_diag_fail(d, CV_E_IO_ERROR, (cv_span){.file = o.out_dir}, "cannot create %s: %s",
                            o.out_dir, strerror(errno));
    double tp = cv_clock_mono_ms_f();
    cv_pass_stats ps;
    if (cv_passes_run(m->funcs[0], &ps, d) ||
        cv_passes_quantize(m->funcs[0], o.quant, info->quant_report, sizeof info->quant_report, d))
        return -1;
    if (o.dump_values && cv_debug_expose_values(m->funcs[0]))
        return cv_diag_fail(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = m->path}, "out of memory");
    double t0 = cv_clock_mono_ms_f();
    cv_kprog *p;
    int blk = o.no_blocked_layout || (emit & CV_EMIT_C) ? 0 : nchwc_block(o.target);
    unsigned half = cv_cg_half_mode(o.target, (emit & CV_EMIT_C) != 0);
    if (cv_kprog_build_half(m->funcs[0], blk, half, &p, d))
        return -1;
    cv_cg_half_report(p, o.target, info->quant_report, sizeof info->quant_report);
    if (o.name)
        p->name = o.name;
    p->debug = o.debug;
    p->weights_file = (emit & CV_EMIT_WEIGHTS) != 0;
    /* CPU targets keep the large weights out of the code object, so the
     * code is a function of the program's structure (cv_code_cache); the
     * CUDA targets keep theirs in the library. */
    p->split_weights = !p->weights_file && !cv_target_is_cuda(o.target) &&
                       (emit & (CV_EMIT_OBJ | CV_EMIT_A | CV_EMIT_SO | CV_EMIT_LLVM));
    /* Debug info of a model without source lines points into its listing. */
    if (o.debug && cv_debug_needs_listing(p))
        emit |= CV_EMIT_CUIR;
    if (o.test_faults && cv_debug_plant_fault(p, d)) {
        cv_kprog_free(p);
        return -1;
    }
    double t1 = cv_clock_mono_ms_f();
    cv_llvm_out lo = {.triple = "c99", .cpu = "generic"};
    /* --emit c alone needs no LLVM (nor its plugin).  The code cache knows
     * only code apart from its weights, and none from a planted fault. */
    bool llvm = (emit & (CV_EMIT_OBJ | CV_EMIT_A | CV_EMIT_SO | CV_EMIT_LLVM)) != 0;
    const cv_code_cache *cc = p->split_weights && !(emit & CV_EMIT_LLVM) && !o.test_faults
                                  ? o.code_cache : NULL;
    bool cached = false;
    int rc = llvm ? code_object(m, p, &o, (emit & CV_EMIT_LLVM) != 0, blk, half, cc, &lo,
                                &cached, d)
                  : 0;
    bool made = llvm && rc == 0 && !cached;
    info->llvm_modules = made;
    double t2 = cv_clock_mono_ms_f();
    if (rc == 0) {
        snprintf(info->name, sizeof info->name, "%s", p->name);
        info->n_ops = p->f->n_ops;
        info->n_kernels = p->n_kernels;
        info->n_ops_in = ps.ops_before;
        info->n_fused = p->n_fused;
        info->n_blocked_convs = p->n_blocked_convs;
        info->n_reorders = p->n_reorders;
        info->nchwc_block = blk;
        info->pass_folded = ps.folded;
        info->pass_bn_folded = ps.bn_folded;
        info->pass_cse_ops = ps.cse_ops;
        info->pass_cse_params = ps.cse_params;
        info->pass_dead_ops = ps.dead_ops;
        info->pass_dead_params = ps.dead_params;
        info->pass_attention = ps.attention_fused;
        info->pass_layer_norms = ps.layer_norms_fused;
        info->pass_gelus = ps.gelus_fused;
        cv_memplan_stats(p, NULL, &info->arena_bytes, &info->peak_bytes);
        arena_samples(p, info);
        info->ms_passes = t0 - tp;
        info->ms_codegen = t1 - t0;
        info->ms_llvm = t2 - t1;
        rc = write_artifact(m, p, &lo, &o, emit, info, d);
    }
    if (cached)
        free(lo.obj);   /* the cache's, not the plugin's */
    else if (made)
        cv_llvm_out_free(&lo);
    cv_kprog_free(p);
    return rc;
}
