/* The registry of diagnostic codes: one line per code.  `cuvil help CVnnnn`
 * prints the summary; the failure classifier groups failures by code.
 * Codes are stable: never renumber or reuse one. Keep the table sorted. */
#include "common/diag.h"

#include <stdlib.h>
#include <string.h>

static const cv_diag_code_info codes[] = {
    /* 1xxx: syntax and file formats */
    {1001, "invalid-character", "a character that cannot start any token"},
    {1002, "unexpected-token", "the parser expected a different token here"},
    {1003, "unterminated-string", "a string literal is not closed before the end of the line"},
    {1004, "invalid-number", "a numeric literal is malformed or does not fit its type"},
    {1005, "invalid-utf8", "the input is not valid UTF-8"},
    {1006, "nul-byte", "the input contains a NUL byte"},
    {1007, "nesting-too-deep", "brackets are nested deeper than the parser allows"},
    {1008, "bad-header", "the file does not start with a supported header (e.g. `cuir 1`)"},
    {1009, "token-too-long", "a single token is longer than the parser allows"},
    {1010, "unexpected-eof", "the input ends in the middle of a construct (truncated file?)"},
    {1011, "input-too-large", "the input is larger than the configured limit"},
    {1012, "invalid-escape", "a string literal contains an unknown escape sequence"},
    {1101, "npy-bad-magic", "a .npy file does not start with the NumPy magic string"},
    {1102, "npy-bad-header", "a .npy header is malformed"},
    {1103, "npy-unsupported-dtype", "a .npy file has a dtype or layout Cuvil does not read"},
    {1104, "npy-truncated", "a .npy file holds fewer bytes than its header promises"},
    {1111, "safetensors-bad-header", "a safetensors header is malformed or out of bounds"},
    {1112, "safetensors-unsupported-dtype", "a safetensors tensor has an unsupported dtype"},
    {1113, "safetensors-bad-offsets", "a safetensors tensor's offsets do not match its shape or the file"},
    {1131, "message-too-large", "a job or result message is larger than 1 MiB"},
    {1132, "message-malformed", "a job or result message is not a well-formed JSON object"},
    {1133, "message-missing-field", "a job or result message lacks a required field"},
    {1134, "message-unknown-field", "a job or result message has a field the schema does not list"},
    {1135, "message-field-type", "a message field has the wrong JSON type"},
    {1136, "message-field-range", "a message field is empty, too long, out of range or has forbidden characters"},
    {1137, "message-bad-digest", "a message digest field is not 64 lowercase hex digits"},
    {1138, "message-bad-enum", "a message field is not one of its allowed values"},
    {1139, "message-bad-diagnostic", "a result's diagnostic entry is malformed (code, id or root id)"},

    /* 2xxx: names and types */
    {2001, "undefined-name", "a name is used but never defined"},
    {2002, "redefinition", "a name is defined twice"},
    {2003, "use-before-definition", "a value is used before the op that defines it"},
    {2004, "unknown-attribute", "an op has an attribute its schema does not list"},
    {2005, "attribute-type", "an attribute has the wrong kind of value"},
    {2006, "missing-attribute", "an op lacks a required attribute"},
    {2007, "operand-count", "an op has the wrong number of operands"},
    {2008, "result-count", "an op has the wrong number of results"},
    {2009, "dtype-mismatch", "an operand's element type is not allowed or does not match"},
    {2010, "unknown-dtype", "an element type name is not one of f32 f16 bf16 i8 u8 i32 i64 bool"},
    {2011, "declared-dtype", "the declared result type differs from the inferred one"},
    {2012, "return-mismatch", "the returned values do not match the model signature"},
    {2013, "graph-cycle", "the graph contains a cycle"},
    {2014, "weights-missing", "a weights file or tensor named by a param cannot be found"},
    {2015, "weights-mismatch", "a weight tensor's dtype or shape differs from its param"},
    {2016, "path-escape", "a referenced file would leave the model's directory"},
    {2017, "invalid-attribute-value", "an attribute value is outside its allowed range"},
    {2020, "unused-value", "a value is defined but never used (strict mode)"},
    {2021, "dead-param", "a param is never used (strict mode)"},
    {2022, "duplicate-name", "two models, inputs or params share a name (strict mode)"},
    {2023, "constant-output", "an output does not depend on any model input (strict mode)"},
    {2024, "input-mismatch", "a run-time input is missing, unknown, or of the wrong dtype"},

    /* 3xxx: shapes */
    {3001, "rank-mismatch", "a tensor has a different rank than the op requires"},
    {3002, "broadcast-mismatch", "two shapes cannot be broadcast together"},
    {3003, "declared-shape", "the declared result shape differs from the inferred one"},
    {3004, "dimension-overflow", "a dimension or an element count does not fit in 64 bits"},
    {3005, "invalid-dimension", "a dimension is negative or otherwise invalid"},
    {3006, "axis-out-of-range", "an axis attribute is outside the tensor's rank"},
    {3007, "invalid-shape-attribute", "a shape-related attribute (stride, pad, size...) is invalid"},
    {3008, "element-count-mismatch", "a reshape changes the number of elements"},
    {3009, "symbolic-arithmetic", "a symbolic dimension would need arithmetic that CU-IR does not express"},
    {3010, "runtime-shape", "a run-time input's shape does not match the declared shape"},
    {3011, "unknown-shape", "a shape cannot be computed because an operand's shape is unknown"},
    {3101, "channel-mismatch", "a convolution's input channels differ from what its weight expects"},
    {3102, "inner-dimension-mismatch", "a matrix product's inner dimensions differ"},

    /* 4xxx: unsupported constructs and ops */
    {4001, "unknown-op", "an op name is not in the CU-IR op table"},
    {4002, "unsupported-dtype", "an op does not support this element type"},
    {4003, "unsupported-attribute-value", "an attribute value is valid but not supported"},
    {4004, "unknown-model-format", "a file is not in any model format Cuvil reads"},

    /* 9xxx: internal, resources, infrastructure */
    {9001, "internal-error", "an internal compiler error (please report it)"},
    {9002, "out-of-memory", "memory ran out"},
    {9003, "timeout", "the operation ran past its time limit"},
    {9004, "io-error", "a file or device could not be read or written"},
    {9005, "resource-limit", "an input exceeds a configured resource limit"},
    {9201, "queue-bad-url", "a queue URL is malformed or names an unknown backend"},
    {9202, "queue-open-failed", "the queue storage could not be opened"},
    {9203, "queue-schema", "the queue storage has an unknown or newer schema version"},
    {9204, "queue-storage", "the queue storage reported an error"},
    {9205, "queue-busy", "the queue storage stayed locked past the busy timeout"},
    {9206, "queue-lease-lost", "the lease expired and the job was given to another worker, or it is finished"},
    {9207, "queue-result-mismatch", "a result names a different job than the lease it completes"},
    {9208, "queue-dead-letter", "a job failed for infrastructure reasons too often and was dead-lettered"},
    {9209, "queue-backend-unavailable", "the queue backend named by the URL is not built into this binary"},
    {9210, "queue-invalid-argument", "a queue call got an argument outside its allowed range"},
    {9211, "queue-duplicate-job", "a job id is already queued or leased under a different key"},
    {9212, "queue-poison-message", "a stored job message cannot be decoded and was dead-lettered"},
};

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
