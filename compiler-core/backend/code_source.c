/* What the generated code of a program is made of, as bytes a code cache
 * can key (cv_code_cache.lookup), known before LLVM runs.
 *
 * The LLVM module is a function of the kernel program (kernel.h) and the
 * target; the kernel program is a function of the module after the passes
 * (whatever a pass decided from a weight's value is in its ops, attributes
 * and small params), the layout block and the half-precision mode.  The
 * weights' values reach the module only as the bytes of the constants kept
 * in code (those of at most CV_INLINE_CONST_MAX bytes, and packed ones as
 * small): every other constant is an offset into the weights image, whose
 * layout depends on the stores' sizes.  So the source is:
 *
 *   a header   format, artifact name, layout block, half mode, debug
 *   the module after the passes, printed with CV_PRINT_NO_WEIGHTS
 *              (locations too when debug info is generated from them)
 *   per constant store kept in code: its index, size and bytes;
 *   per constant store in the image: its index and size.
 *
 * Target, opt level, compiler and LLVM build are the cache's to add. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "compiler-core/backend/artifact_internal.h"

static void put_store(cv_sb *sb, const cv_kprog *p, int i)
{
    const cv_kstore *s = &p->stores[i];
    if (s->kind != CV_KST_CONST || s->first < 0)
        return;
    if (cv_weights_split_store(p, i)) {
        cv_sb_printf(sb, "image %d %zu\n", i, s->nbytes);
        return;
    }
    static const char hex[] = "0123456789abcdef";
    cv_sb_printf(sb, "code %d %zu ", i, s->nbytes);
    const unsigned char *b = s->data;
    for (size_t k = 0; b && k < s->nbytes; k++) {
        cv_sb_putc(sb, hex[b[k] >> 4]);
        cv_sb_putc(sb, hex[b[k] & 15]);
    }
    cv_sb_putc(sb, '\n');
}

char *cv_code_source(const cv_module *m, const cv_kprog *p, int blk, unsigned half, size_t *len)
{
    char *text = cv_module_print(m, CV_PRINT_NO_WEIGHTS | (p->debug ? 0 : CV_PRINT_NO_LOC));
    if (!text)
        return NULL;
    cv_sb sb = CV_SB_INIT;
    const cv_span *fs = &p->f->span;
    cv_sb_printf(&sb, "cuvil-code-source/1\nname %s\nblock %d\nhalf %u\nsplit %d\n", p->name,
                 blk, half, (int)p->split_weights);
    if (p->debug)
        cv_sb_printf(&sb, "debug %s:%d:%d\n", fs->file ? fs->file : "", fs->line, fs->col);
    cv_sb_puts(&sb, text);
    free(text);
    for (int i = 0; i < p->n_stores; i++)
        put_store(&sb, p, i);
    if (sb.oom) {
        cv_sb_free(&sb);
        return NULL;
    }
    *len = sb.len;
    return cv_sb_steal(&sb);
}
