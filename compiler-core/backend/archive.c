/* Static archives written directly (GNU ar format with a symbol index,
 * zero timestamps and ids, so two archives of the same object are equal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fs.h"
#include "common/strbuf.h"
#include "compiler-core/backend/artifact_internal.h"

static void ar_header(cv_sb *sb, const char *name, size_t size)
{
    char h[128];
    snprintf(h, sizeof h, "%-16.16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", size);
    cv_sb_add(sb, h, 60);
}

static void put_be32(cv_sb *sb, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    cv_sb_add(sb, b, 4);
}

int cv_archive_write(const char *path, const char *member, const void *obj, size_t len,
                     const char *const *syms, int n_syms, cv_diag *d)
{
    /* The symbol index comes first, so its size fixes the member's offset. */
    size_t names = 0;
    for (int i = 0; i < n_syms; i++)
        names += strlen(syms[i]) + 1;
    size_t index_size = 4 + 4 * (size_t)n_syms + names;
    index_size += index_size & 1;
    size_t mlen = strlen(member);
    bool long_name = mlen > 15;
    size_t table_size = long_name ? mlen + 2 : 0;   /* "name/\n" */
    table_size += table_size & 1;
    size_t member_off = 8 + 60 + index_size + (long_name ? 60 + table_size : 0);
    cv_sb sb = CV_SB_INIT;
    cv_sb_add(&sb, "!<arch>\n", 8);
    ar_header(&sb, "/", index_size);
    put_be32(&sb, (uint32_t)n_syms);
    for (int i = 0; i < n_syms; i++)
        put_be32(&sb, (uint32_t)member_off);
    for (int i = 0; i < n_syms; i++)
        cv_sb_add(&sb, syms[i], strlen(syms[i]) + 1);
    if ((4 + 4 * (size_t)n_syms + names) & 1)
        cv_sb_putc(&sb, 0);
    char field[32];
    if (long_name) {
        ar_header(&sb, "//", table_size);
        cv_sb_add(&sb, member, mlen);
        cv_sb_add(&sb, "/\n", 2);
        if ((mlen + 2) & 1)
            cv_sb_putc(&sb, '\n');
        snprintf(field, sizeof field, "/0");
    } else {
        snprintf(field, sizeof field, "%s/", member);
    }
    ar_header(&sb, field, len);
    cv_sb_add(&sb, obj, len);
    if (len & 1)
        cv_sb_putc(&sb, '\n');
    int rc = sb.oom ? cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = path}, "out of memory"), -1
                    : cv_fs_write_replace(path, sb.buf, sb.len, d);
    cv_sb_free(&sb);
    return rc;
}
