#include "common/precision.h"

#include <string.h>

const char *const cv_precision_names[CV_PRECISION__COUNT + 1] = {"fp32", "fp16", "bf16", "int8",
                                                                 NULL};

const char *cv_precision_name(cv_precision p)
{
    return (unsigned)p < CV_PRECISION__COUNT ? cv_precision_names[p] : NULL;
}

int cv_precision_parse(const char *s)
{
    for (int i = 0; s && i < CV_PRECISION__COUNT; i++)
        if (strcmp(cv_precision_names[i], s) == 0)
            return i;
    return -1;
}
