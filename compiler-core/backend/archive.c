/* Static archives made directly (GNU ar format with a symbol index,
 * zero timestamps and ids, so two archives of the same objects are equal):
 * the code object and, with split weights, the weights object, as a list
 * of pieces that the caller writes and hashes in one pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The parts list grows by 16. */
static int add_part(cv_fs_part **v, int *n, const void *data, size_t len)
{
    if (*n % 16 == 0) {
        cv_fs_part *nv = realloc(*v, sizeof *nv * ((size_t)*n + 16));
        if (!nv)
            return -1;
        *v = nv;
    }
    (*v)[(*n)++] = (cv_fs_part){data, len};
    return 0;
}

int cv_archive_parts(const cv_ar_member *m, int n, cv_sb *glue, cv_fs_part **parts, int *n_parts)
{
    /* The symbol index comes first, so its size fixes the members' offsets;
     * names over 15 characters go to the "//" table. */
    size_t names = 0, n_syms = 0, table = 0;
    *parts = NULL;
    *n_parts = 0;
    if (n > 16)
        return -1;
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
    for (int i = 0; i < n; i++) {
        off[i] = at;
        at += 60 + m[i].len + (m[i].len & 1);
    }
    cv_sb *sb = glue;
    cv_sb_add(sb, "!<arch>\n", 8);
    ar_header(sb, "/", index_size);
    put_be32(sb, (uint32_t)n_syms);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m[i].n_syms; k++)
            put_be32(sb, (uint32_t)off[i]);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m[i].n_syms; k++)
            cv_sb_add(sb, m[i].syms[k], strlen(m[i].syms[k]) + 1);
    if ((4 + 4 * n_syms + names) & 1)
        cv_sb_putc(sb, 0);
    if (table) {
        ar_header(sb, "//", table_size);
        for (int i = 0; i < n; i++)
            if (strlen(m[i].name) > 15) {
                cv_sb_add(sb, m[i].name, strlen(m[i].name));
                cv_sb_add(sb, "/\n", 2);
            }
        if (table & 1)
            cv_sb_putc(sb, '\n');
    }
    /* The glue before member i ends at ends[i]; the members' bytes stay
     * where they are (a weights object is tens of MB). */
    size_t ends[17], at_table = 0;
    for (int i = 0; i < n; i++) {
        char field[32];
        size_t mlen = strlen(m[i].name);
        if (i > 0 && (m[i - 1].len & 1))
            cv_sb_putc(sb, '\n');
        if (mlen > 15) {
            snprintf(field, sizeof field, "/%zu", at_table);
            at_table += mlen + 2;
        } else {
            snprintf(field, sizeof field, "%s/", m[i].name);
        }
        ar_header(sb, field, m[i].len);
        ends[i] = sb->len;
    }
    if (n > 0 && (m[n - 1].len & 1))
        cv_sb_putc(sb, '\n');
    ends[n] = sb->len;
    if (sb->oom)
        return -1;
    size_t from = 0;
    for (int i = 0; i <= n; i++) {
        if (add_part(parts, n_parts, sb->buf + from, ends[i] - from))
            return -1;
        from = ends[i];
        for (int k = 0; i < n && k < m[i].n_parts; k++)
            if (add_part(parts, n_parts, m[i].parts[k].data, m[i].parts[k].len))
                return -1;
    }
    return 0;
}
