/* The registry of diagnostic codes, made from the one list in
 * common/diag_codes.h.  `cuvil help CVnnnn` prints the summary; the failure
 * classifier groups failures by code. */
#include "common/diag.h"

#include <stdlib.h>
#include <string.h>

#define CV_DIAG_CODE_ROW(name, num, slug, summary) {name, slug, summary},
static const cv_diag_code_info codes[] = {CV_DIAG_CODES(CV_DIAG_CODE_ROW)};
#undef CV_DIAG_CODE_ROW

const cv_diag_code_info *cv_diag_codes(size_t *count)
{
    *count = sizeof codes / sizeof codes[0];
    return codes;
}

const cv_diag_code_info *cv_diag_code_lookup(int code)
{
    size_t lo = 0, hi = sizeof codes / sizeof codes[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (codes[mid].code == code)
            return &codes[mid];
        if (codes[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int cv_diag_parse_code(const char *s)
{
    if ((s[0] == 'C' || s[0] == 'c') && (s[1] == 'V' || s[1] == 'v'))
        s += 2;
    if (strlen(s) != 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}
