/* A linked library around new weights, without the linker (issue 29).
 *
 * lib<name>.so is linked from the code object and the weights object, whose
 * one section is the weights image.  The linker copies that image verbatim
 * into the library's .rodata and resolves every reference to it through
 * the hidden symbol cv_<name>_weights, so two links of the same code object
 * with images of the same length give libraries that differ only inside
 * that symbol's bytes and in the build id.  The build id is given to the
 * linker (--build-id=0x...) as a digest of the two objects it links, not
 * left to it (gold hashes its own output), so it can be written here too:
 * a library spliced from a template is byte for byte the one the linker
 * would have written (bench/cache/retrain.sh and test_retrain_splice cmp
 * them).
 *
 * A template is cut from a library just linked: its bytes before the image
 * (head, holding the build id note) and after it (tail). */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/backend/artifact_internal.h"
#include "symbols/symbols.h"

enum { BUILD_ID = 20, NOTE_HDR = 16 };

int cv_so_build_id(const char *const *hex, int n, char out[41])
{
    static const char tag[] = "cuvil-build-id/1";
    unsigned char md[32];
    unsigned int len = 0;
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    int ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(x, tag, sizeof tag);
    for (int i = 0; ok && i < n; i++)
        ok = EVP_DigestUpdate(x, hex[i], strlen(hex[i]) + 1);
    ok = ok && EVP_DigestFinal_ex(x, md, &len);
    EVP_MD_CTX_free(x);
    for (int i = 0; ok && i < BUILD_ID; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return ok ? 0 : -1;
}

/* The file offset of the build id's bytes: the descriptor of the GNU
 * build-id note (namesz 4, descsz 20, type NT_GNU_BUILD_ID, "GNU"). */
static int build_id_at(const unsigned char *so, size_t len, uint64_t *at)
{
    const void *data;
    size_t size;
    if (cv_sym_elf_section(so, len, ".note.gnu.build-id", &data, &size) != 0 ||
        size < NOTE_HDR + BUILD_ID)
        return -1;
    const unsigned char *n = data;
    static const unsigned char want[NOTE_HDR] = {4, 0, 0, 0, BUILD_ID, 0, 0, 0, 3, 0, 0, 0,
                                                 'G', 'N', 'U', 0};
    if (memcmp(n, want, NOTE_HDR) != 0)
        return -1;
    *at = (uint64_t)(n - so) + NOTE_HDR;
    return 0;
}

int cv_so_template_cut(const void *so, size_t len, const char *wsym, uint64_t image_len,
                       cv_so_template *t)
{
    memset(t, 0, sizeof *t);
    uint64_t off, size, id;
    if (cv_sym_elf_symbol(so, len, wsym, &off, &size) != 0 || size != image_len ||
        build_id_at(so, len, &id) != 0 || id + BUILD_ID > off)
        return -1;
    t->head_len = (size_t)off;
    t->tail_len = len - (size_t)(off + size);
    t->head = malloc(t->head_len ? t->head_len : 1);
    t->tail = malloc(t->tail_len ? t->tail_len : 1);
    if (!t->head || !t->tail) {
        cv_so_template_free(t);
        return -1;
    }
    memcpy(t->head, so, t->head_len);
    memcpy(t->tail, (const char *)so + off + size, t->tail_len);
    t->image_len = image_len;
    t->build_id_at = id;
    return 0;
}

bool cv_so_template_fits(const cv_so_template *t, uint64_t image_len)
{
    const unsigned char *h = t->head;
    return t->head && t->tail && t->image_len == image_len && t->head_len >= 64 &&
           t->build_id_at >= NOTE_HDR && t->build_id_at + BUILD_ID <= t->head_len &&
           memcmp(h, "\177ELF", 4) == 0 &&
           memcmp(h + t->build_id_at - 4, "GNU", 4) == 0;
}

int cv_so_template_patch(cv_so_template *t, const char *build_id)
{
    unsigned char *at = (unsigned char *)t->head + t->build_id_at;
    if (strlen(build_id) != 2 * BUILD_ID)
        return -1;
    for (int i = 0; i < BUILD_ID; i++) {
        unsigned v;
        if (sscanf(build_id + 2 * i, "%2x", &v) != 1)
            return -1;
        at[i] = (unsigned char)v;
    }
    return 0;
}

void cv_so_template_free(cv_so_template *t)
{
    free(t->head);
    free(t->tail);
    memset(t, 0, sizeof *t);
}
