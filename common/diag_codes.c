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
    {1105, "npy-trailing-data", "a .npy file holds more bytes than its header describes"},
    {1111, "safetensors-bad-header", "a safetensors header is malformed or out of bounds"},
    {1112, "safetensors-unsupported-dtype", "a safetensors tensor has an unsupported dtype"},
    {1113, "safetensors-bad-offsets", "a safetensors tensor's offsets do not match its shape or the file"},
    {1121, "yaml-syntax", "the YAML text is not well-formed"},
    {1122, "yaml-too-deep", "YAML mappings and sequences are nested deeper than 64 levels"},
    {1123, "yaml-alias-limit", "YAML aliases expand to too many nodes (an alias bomb?)"},
    {1124, "yaml-duplicate-key", "a YAML mapping has the same key twice"},
    {1125, "yaml-unsupported", "a YAML feature specs do not use: custom tags, non-scalar keys, merge keys"},
    {1126, "yaml-undefined-alias", "a YAML alias names no earlier, complete anchor"},
    {1127, "yaml-tag-mismatch", "a YAML scalar does not match its explicit tag (e.g. `!!int abc`)"},
    {1131, "message-too-large", "a job or result message is larger than 1 MiB"},
    {1132, "message-malformed", "a job or result message is not a well-formed JSON object"},
    {1133, "message-missing-field", "a job or result message lacks a required field"},
    {1134, "message-unknown-field", "a job or result message has a field the schema does not list"},
    {1135, "message-field-type", "a message field has the wrong JSON type"},
    {1136, "message-field-range", "a message field is empty, too long, out of range or has forbidden characters"},
    {1137, "message-bad-digest", "a message digest field is not 64 lowercase hex digits"},
    {1138, "message-bad-enum", "a message field is not one of its allowed values"},
    {1139, "message-bad-diagnostic", "a result's diagnostic entry is malformed (code, id or root id)"},
    {1141, "json-syntax", "the JSON text is not well-formed (or repeats a key)"},
    {1201, "dsl-tab-error", "model language: indentation mixes tabs and spaces inconsistently"},
    {1202, "dsl-unindent-mismatch", "model language: a dedent does not return to any outer indentation level"},
    {1203, "dsl-unexpected-indent", "model language: a line is indented where no block starts"},
    {1204, "dsl-expected-indent", "model language: a block (after ':') has no indented body"},
    {1205, "dsl-invalid-target", "model language: the left side of an assignment or loop cannot be assigned"},
    {1206, "dsl-unbalanced-bracket", "model language: a bracket is never closed, unmatched, or closed by the wrong kind"},
    {1207, "dsl-bad-continuation", "model language: a backslash is not the last character of its line"},
    {1208, "dsl-argument-order", "model language: a positional argument follows a keyword argument, or a parameter without default follows one with"},
    {1209, "dsl-duplicate-parameter", "model language: a function lists the same parameter twice"},
    {1301, "onnx-truncated", "ONNX: the protobuf ends in the middle of a field (truncated file?)"},
    {1302, "onnx-wire-type", "ONNX: a protobuf field has a wire type its onnx.proto schema does not allow"},
    {1303, "onnx-bad-protobuf", "ONNX: the input is not a valid protobuf ModelProto / TensorProto"},
    {1304, "onnx-nesting", "ONNX: protobuf messages are nested deeper than the importer allows (64)"},
    {1305, "onnx-too-large", "ONNX: the model exceeds protobuf's 2 GB limit (store weights as external data)"},
    {1306, "onnx-bad-model", "ONNX: a required ModelProto part is missing (graph, opset_import)"},
    {1307, "onnx-tensor-data", "ONNX: a tensor's data does not match its element type and dims"},
    {1308, "onnx-external-data", "ONNX: external tensor data is missing, malformed, or outside the model's directory"},

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
    {2101, "dsl-undefined-name", "model language: a name is used but never defined (did you mean ...?)"},
    {2102, "dsl-unknown-op", "model language: cvl.<name> is not an op of the CU-IR op table"},
    {2103, "dsl-argument-count", "model language: a call passes more or fewer arguments than the callee takes"},
    {2104, "dsl-unknown-keyword", "model language: a call passes a keyword argument the callee does not have"},
    {2105, "dsl-duplicate-argument", "model language: an argument is given twice (by position and by keyword)"},
    {2106, "dsl-dtype-mismatch", "model language: a constant or weight has an element type that does not fit its use"},
    {2107, "dsl-type-error", "model language: a value of the wrong kind (a tensor where a constant is needed, calling a non-function...)"},
    {2108, "dsl-attribute-value", "model language: an op attribute is given a value of the wrong kind"},
    {2109, "dsl-unknown-member", "model language: a tensor, tuple or module has no member of that name"},
    {2110, "dsl-missing-argument", "model language: a call lacks a required argument or op attribute"},
    {2111, "dsl-model-spec", "model language: the @cvl.model(...) arguments are malformed"},
    {2112, "dsl-model-return", "model language: a model must return a tensor or a tuple of tensors"},
    {2113, "dsl-unknown-dtype", "model language: a dtype name is not one Cuvil knows"},
    {2114, "dsl-no-model", "model language: the file defines no @cvl.model function"},
    {2115, "dsl-unpack-mismatch", "model language: tuple unpacking with the wrong number of targets"},
    {2116, "dsl-constant-error", "model language: a compile-time computation failed (overflow, division by zero, assert)"},
    {2117, "dsl-model-signature", "model language: a model's parameters do not match its input_shapes and weights"},
    {2301, "onnx-undefined-value", "ONNX: a node input is produced by no node, graph input or initializer"},
    {2302, "onnx-duplicate-name", "ONNX: a value name is produced twice (inputs, initializers, node outputs)"},
    {2303, "onnx-graph-cycle", "ONNX: nodes form a cycle"},
    {2304, "onnx-output-missing", "ONNX: a graph output is never produced (or the graph has none)"},
    {2305, "onnx-attribute-type", "ONNX: a node attribute is missing or has the wrong type"},
    {2306, "onnx-declared-dtype", "ONNX: a declared element type (output, value_info) differs from the computed one"},
    {2307, "onnx-missing-type", "ONNX: a graph input has no tensor type or shape"},
    {2308, "onnx-arity", "ONNX: a node has the wrong number of inputs or outputs"},
    {2309, "onnx-attribute-value", "ONNX: a node attribute or constant input is outside its allowed range"},

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
    {3012, "index-out-of-range", "a gather index is outside its axis at run time"},
    {3020, "rank-too-large", "a tensor type has more dimensions than CU-IR allows (8)"},
    {3101, "channel-mismatch", "a convolution's input channels differ from what its weight expects"},
    {3102, "inner-dimension-mismatch", "a matrix product's inner dimensions differ"},
    {3201, "dsl-weight-missing", "model language: a weight named through p.<name> is not in the weights file"},
    {3202, "dsl-weights-file", "model language: the weights file cannot be used (missing, unreadable, outside the model's directory, or not given)"},
    {3203, "dsl-weight-shape", "model language: a weight tensor's shape does not fit the op that uses it"},
    {3204, "dsl-symbolic-dim", "model language: a symbolic dimension is used where a number is required"},
    {3205, "dsl-index-error", "model language: a constant index or slice is out of range or malformed"},
    {3301, "onnx-invalid-dim", "ONNX: a dimension is negative or an element count overflows"},
    {3302, "onnx-declared-shape", "ONNX: a declared shape (output, value_info) differs from the computed one"},
    {3303, "onnx-shape-value", "ONNX: a shape computed at import time is invalid (bad reshape target, range...)"},

    /* 4xxx: unsupported constructs and ops */
    {4001, "unknown-op", "an op name is not in the CU-IR op table"},
    {4002, "unsupported-dtype", "an op does not support this element type"},
    {4003, "unsupported-attribute-value", "an attribute value is valid but not supported"},
    {4004, "unknown-model-format", "a file is not in any model format Cuvil reads"},
    {4101, "dsl-while", "model language: while loops are not supported (use for i in range(CONST))"},
    {4102, "dsl-data-dependent-if", "model language: an if or conditional expression depends on tensor data or a symbolic dimension"},
    {4103, "dsl-comprehension-over-tensor", "model language: a comprehension iterates over a tensor"},
    {4104, "dsl-try", "model language: try/except is not supported"},
    {4105, "dsl-lambda", "model language: lambda is not supported (use a def)"},
    {4106, "dsl-global", "model language: global and nonlocal are not supported"},
    {4107, "dsl-recursion", "model language: a helper calls itself (helpers are inlined)"},
    {4108, "dsl-print", "model language: print is not supported in a model"},
    {4109, "dsl-import", "model language: only `import cuvil` (as any name) can be imported"},
    {4110, "dsl-unsupported-statement", "model language: a statement a model cannot contain (class, with, del, raise, yield...)"},
    {4111, "dsl-unsupported-expression", "model language: an expression a model cannot contain (dict, set, f-string, star, operator on tensors...)"},
    {4112, "dsl-data-dependent-loop", "model language: a for loop iterates over a tensor"},
    {4113, "dsl-too-large", "model language: unrolling or inlining exceeds the compile-time budget"},
    {4114, "dsl-unsupported-builtin", "model language: a Python builtin the model language does not provide"},
    {4115, "dsl-unsupported-parameter", "model language: *args, **kwargs or keyword-only markers in a helper def"},
    {4301, "onnx-unsupported-ops", "ONNX: the model uses ops Cuvil cannot import (every one is listed)"},
    {4302, "onnx-unsupported-opset", "ONNX: the model's IR version or opset is outside what Cuvil supports (opsets 7-18)"},
    {4303, "onnx-unsupported-dtype", "ONNX: an element type CU-IR lacks (double, int16, uint16/32/64, string, complex)"},
    {4304, "onnx-sparse-tensor", "ONNX: sparse tensors are not supported"},
    {4305, "onnx-data-dependent-shape", "ONNX: a shape-like operand is computed at run time; CU-IR needs it at import time"},
    {4306, "onnx-unsupported-feature", "ONNX: an attribute value or mode Cuvil does not support (training mode, cubic resize, 3-D pooling...)"},
    {4307, "onnx-non-tensor", "ONNX: a sequence, map or optional value (only tensors are supported)"},
    {4308, "onnx-rank-limit", "ONNX: a tensor has more than 8 dimensions"},
    {4309, "onnx-zero-size", "ONNX: a zero-size tensor where CU-IR needs elements"},

    /* 9xxx: internal, resources, infrastructure */
    {9001, "internal-error", "an internal compiler error (please report it)"},
    {9002, "out-of-memory", "memory ran out"},
    {9003, "timeout", "the operation ran past its time limit"},
    {9004, "io-error", "a file or device could not be read or written"},
    {9005, "resource-limit", "an input exceeds a configured resource limit"},
    {9101, "cache-corrupt-entry", "a cache entry failed verification against its digest; it was removed and treated as a miss"},
    {9102, "cache-remote-unreachable", "the remote cache could not be reached; the build continues without it"},
    {9103, "cache-remote-timeout", "the remote cache did not answer in time; the build continues without it"},
    {9104, "cache-remote-status", "the remote cache answered with an unexpected HTTP status"},
    {9105, "cache-disk-full", "the cache directory has no space left (or a file-size limit was hit)"},
    {9106, "cache-bad-digest", "a digest is malformed or content does not hash to its name"},
    {9107, "cache-io-error", "a cache file or directory could not be read or written"},
    {9108, "cache-index-error", "the cache index (index.sqlite) could not be read or updated"},
    {9109, "cache-bad-manifest", "a cache key manifest is malformed"},
    {9110, "cache-bad-size", "a cache size is malformed (expected e.g. 20Gi, 500M, 1.5G)"},
    {9111, "cache-bad-url", "a remote cache URL or listen address is malformed"},
    {9112, "cache-server-error", "the cache server could not start or failed"},
    {9113, "cache-tokens-file", "the cache server's tokens file is malformed"},
    {9114, "cache-entry-too-large", "a cache entry is larger than the configured limit"},
    {9115, "cache-bad-key", "a cache key field is invalid (bad name, duplicate, not UTF-8)"},
    {9116, "cache-remote-bad-blob", "the remote cache returned content that does not hash to its name"},
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
