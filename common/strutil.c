#include "common/strutil.h"

#include <string.h>

#define EDIT_MAX_LEN 64

int cv_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int cv_edit_distance(const char *a, const char *b, int limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > EDIT_MAX_LEN || lb > EDIT_MAX_LEN)
        return limit + 1;
    int row[EDIT_MAX_LEN + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0], best = row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        /* Each row's minimum never decreases, so the cap is already exceeded. */
        if (best > limit)
            return limit + 1;
    }
    return row[lb];
}

const char *cv_closest_match(const char *word, const char *const *cands, size_t n, int limit)
{
    const char *best = NULL;
    int best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], word) == 0)
            continue;
        int dist = cv_edit_distance(word, cands[i], limit);
        if (dist < best_d) {
            best_d = dist;
            best = cands[i];
        }
    }
    return best;
}
