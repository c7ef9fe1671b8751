/* Static archives written directly (GNU ar format with a symbol index,
 * zero timestamps and ids, so two archives of the same objects are equal):
 * the code object and, with split weights, the weights object. */
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

int cv_archive_write(const char *path, const cv_ar_member *m, int n, cv_diag *d)
{
    /* The symbol index comes first, so its size fixes the members' offsets;
     * names over 15 characters go to the "//" table. */
    size_t names = 0, n_syms = 0, table = 0;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < m[i].n_syms; k++)
            names += strlen(m[i].syms[k]) + 1;
        n_syms += (size_t)m[i].n_syms;
        if (strlen(m[i].name) > 15)
            table += strlen(m[i].name) + 2;         /* "name/\n" */
    }
    size_t index_size = 4 + 4 * n_syms + names;
    index_size += index_size & 1;
    size_t table_size = table + (table & 1);
    size_t off[16], at = 8 + 60 + index_size + (table ? 60 + table_size : 0);
    if (n > 16)
        return cv_diag_fail(d, CV_E_INTERNAL_ERROR, (cv_span){.file = path}, "too many members");
    for (int i = 0; i < n; i++) {
        off[i] = at;
        at += 60 + m[i].len + (m[i].len & 1);
    }
    cv_sb sb = CV_SB_INIT;
    cv_sb_add(&sb, "!<arch>\n", 8);
    ar_header(&sb, "/", index_size);
    put_be32(&sb, (uint32_t)n_syms);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m[i].n_syms; k++)
            put_be32(&sb, (uint32_t)off[i]);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m[i].n_syms; k++)
            cv_sb_add(&sb, m[i].syms[k], strlen(m[i].syms[k]) + 1);
    if ((4 + 4 * n_syms + names) & 1)
        cv_sb_putc(&sb, 0);
    if (table) {
        ar_header(&sb, "//", table_size);
        for (int i = 0; i < n; i++)
            if (strlen(m[i].name) > 15) {
                cv_sb_add(&sb, m[i].name, strlen(m[i].name));
                cv_sb_add(&sb, "/\n", 2);
            }
        if (table & 1)
            cv_sb_putc(&sb, '\n');
    }
    size_t at_table = 0;
    for (int i = 0; i < n; i++) {
        char field[32];
        size_t mlen = strlen(m[i].name);
        if (mlen > 15) {
            snprintf(field, sizeof field, "/%zu", at_table);
            at_table += mlen + 2;
        } else {
            snprintf(field, sizeof field, "%s/", m[i].name);
        }
        ar_header(&sb, field, m[i].len);
        cv_sb_add(&sb, m[i].data, m[i].len);
        if (m[i].len & 1)
            cv_sb_putc(&sb, '\n');
    }
    int rc = sb.oom ? cv_diag_error(d, CV_E_OUT_OF_MEMORY, (cv_span){.file = path}, "out of memory"), -1
                    : cv_fs_write_replace(path, sb.buf, sb.len, d);
    cv_sb_free(&sb);
    return rc;
}
