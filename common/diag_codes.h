/* The diagnostic codes: the one list.  CV_DIAG_CODES(X) expands
 * X(name, number, slug, summary) once per code, in number order; it makes the
 * enum in common/diag.h (the names code uses: never a bare number) and the
 * registry in common/diag_codes.c that `cuvil help CVnnnn` prints.
 * Codes are stable: never renumber or reuse one; add a new one in its range.
 * Ranges: 1xxx syntax and file formats, 2xxx names and types, 3xxx shapes,
 * 4xxx unsupported constructs, 5xxx codegen and artifacts, 6xxx specs, git,
 * build DB, planner and farm, 7xxx the Kubernetes operator, 9xxx internal,
 * resources and infrastructure.  The name is CV_E_ and the slug in capitals. */
#ifndef CV_DIAG_CODES_H
#define CV_DIAG_CODES_H

/* clang-format off */
#define CV_DIAG_CODES(X) \
    /* 1xxx: syntax and file formats */ \
    X(CV_E_INVALID_CHARACTER, 1001, "invalid-character", "a character that cannot start any token") \
    X(CV_E_UNEXPECTED_TOKEN, 1002, "unexpected-token", "the parser expected a different token here") \
    X(CV_E_UNTERMINATED_STRING, 1003, "unterminated-string", "a string literal is not closed before the end of the line") \
    X(CV_E_INVALID_NUMBER, 1004, "invalid-number", "a numeric literal is malformed or does not fit its type") \
    X(CV_E_INVALID_UTF8, 1005, "invalid-utf8", "the input is not valid UTF-8") \
    X(CV_E_NUL_BYTE, 1006, "nul-byte", "the input contains a NUL byte") \
    X(CV_E_NESTING_TOO_DEEP, 1007, "nesting-too-deep", "brackets or expressions are nested deeper than the parser allows") \
    X(CV_E_BAD_HEADER, 1008, "bad-header", "the file does not start with a supported header (e.g. `cuir 1`)") \
    X(CV_E_TOKEN_TOO_LONG, 1009, "token-too-long", "a single token is longer than the parser allows") \
    X(CV_E_UNEXPECTED_EOF, 1010, "unexpected-eof", "the input ends in the middle of a construct (truncated file?)") \
    X(CV_E_INPUT_TOO_LARGE, 1011, "input-too-large", "the input is larger than the configured limit") \
    X(CV_E_INVALID_ESCAPE, 1012, "invalid-escape", "a string literal contains an unknown escape sequence") \
    X(CV_E_BAD_SIZE, 1013, "bad-size", "a size on the command line or in the environment is malformed or too large (expected e.g. 20Gi, 500M, 1.5GB)") \
    X(CV_E_BAD_DURATION, 1014, "bad-duration", "a duration on the command line is malformed or too long (expected e.g. 60s, 10m, 1h30m)") \
    X(CV_E_GIT_LFS_POINTER, 1020, "git-lfs-pointer", "the model file is a Git LFS pointer, not the model: fetch the LFS object (git lfs pull)") \
    X(CV_E_NPY_BAD_MAGIC, 1101, "npy-bad-magic", "a .npy file does not start with the NumPy magic string") \
    X(CV_E_NPY_BAD_HEADER, 1102, "npy-bad-header", "a .npy header is malformed") \
    X(CV_E_NPY_UNSUPPORTED_DTYPE, 1103, "npy-unsupported-dtype", "a .npy file has a dtype or layout Cuvil does not read") \
    X(CV_E_NPY_TRUNCATED, 1104, "npy-truncated", "a .npy file holds fewer bytes than its header promises") \
    X(CV_E_NPY_TRAILING_DATA, 1105, "npy-trailing-data", "a .npy file holds more bytes than its header describes") \
    X(CV_E_SAFETENSORS_BAD_HEADER, 1111, "safetensors-bad-header", "a safetensors header is malformed or out of bounds") \
    X(CV_E_SAFETENSORS_UNSUPPORTED_DTYPE, 1112, "safetensors-unsupported-dtype", "a safetensors tensor has an unsupported dtype") \
    X(CV_E_SAFETENSORS_BAD_OFFSETS, 1113, "safetensors-bad-offsets", "a safetensors tensor's offsets do not match its shape or the file") \
    X(CV_E_YAML_SYNTAX, 1121, "yaml-syntax", "the YAML text is not well-formed") \
    X(CV_E_YAML_TOO_DEEP, 1122, "yaml-too-deep", "YAML mappings and sequences are nested deeper than 64 levels") \
    X(CV_E_YAML_ALIAS_LIMIT, 1123, "yaml-alias-limit", "YAML aliases expand to too many nodes (an alias bomb?)") \
    X(CV_E_YAML_DUPLICATE_KEY, 1124, "yaml-duplicate-key", "a YAML mapping has the same key twice") \
    X(CV_E_YAML_UNSUPPORTED, 1125, "yaml-unsupported", "a YAML feature specs do not use: custom tags, non-scalar keys, merge keys") \
    X(CV_E_YAML_UNDEFINED_ALIAS, 1126, "yaml-undefined-alias", "a YAML alias names no earlier, complete anchor") \
    X(CV_E_YAML_TAG_MISMATCH, 1127, "yaml-tag-mismatch", "a YAML scalar does not match its explicit tag (e.g. `!!int abc`)") \
    X(CV_E_YAML_TOO_MANY_NODES, 1128, "yaml-too-many-nodes", "a YAML stream has more nodes than the limit (memory is bounded per document)") \
    X(CV_E_MESSAGE_TOO_LARGE, 1131, "message-too-large", "a job or result message is larger than 1 MiB") \
    X(CV_E_MESSAGE_MALFORMED, 1132, "message-malformed", "a job or result message is not a well-formed JSON object") \
    X(CV_E_MESSAGE_MISSING_FIELD, 1133, "message-missing-field", "a job or result message lacks a required field") \
    X(CV_E_MESSAGE_UNKNOWN_FIELD, 1134, "message-unknown-field", "a job or result message has a field the schema does not list") \
    X(CV_E_MESSAGE_FIELD_TYPE, 1135, "message-field-type", "a message field has the wrong JSON type") \
    X(CV_E_MESSAGE_FIELD_RANGE, 1136, "message-field-range", "a message field is empty, too long, out of range or has forbidden characters") \
    X(CV_E_MESSAGE_BAD_DIGEST, 1137, "message-bad-digest", "a message digest field is not 64 lowercase hex digits") \
    X(CV_E_MESSAGE_BAD_ENUM, 1138, "message-bad-enum", "a message field is not one of its allowed values") \
    X(CV_E_MESSAGE_BAD_DIAGNOSTIC, 1139, "message-bad-diagnostic", "a result's diagnostic entry is malformed (code, id or root id)") \
    X(CV_E_JSON_SYNTAX, 1141, "json-syntax", "the JSON text is not well-formed (or repeats a key)") \
    X(CV_E_DSL_TAB_ERROR, 1201, "dsl-tab-error", "model language: indentation mixes tabs and spaces inconsistently") \
    X(CV_E_DSL_UNINDENT_MISMATCH, 1202, "dsl-unindent-mismatch", "model language: a dedent does not return to any outer indentation level") \
    X(CV_E_DSL_UNEXPECTED_INDENT, 1203, "dsl-unexpected-indent", "model language: a line is indented where no block starts") \
    X(CV_E_DSL_EXPECTED_INDENT, 1204, "dsl-expected-indent", "model language: a block (after ':') has no indented body") \
    X(CV_E_DSL_INVALID_TARGET, 1205, "dsl-invalid-target", "model language: the left side of an assignment or loop cannot be assigned") \
    X(CV_E_DSL_UNBALANCED_BRACKET, 1206, "dsl-unbalanced-bracket", "model language: a bracket is never closed, unmatched, or closed by the wrong kind") \
    X(CV_E_DSL_BAD_CONTINUATION, 1207, "dsl-bad-continuation", "model language: a backslash is not the last character of its line") \
    X(CV_E_DSL_ARGUMENT_ORDER, 1208, "dsl-argument-order", "model language: a positional argument follows a keyword argument, or a parameter without default follows one with") \
    X(CV_E_DSL_DUPLICATE_PARAMETER, 1209, "dsl-duplicate-parameter", "model language: a function lists the same parameter twice") \
    X(CV_E_ONNX_TRUNCATED, 1301, "onnx-truncated", "ONNX: the protobuf ends in the middle of a field (truncated file?)") \
    X(CV_E_ONNX_WIRE_TYPE, 1302, "onnx-wire-type", "ONNX: a protobuf field has a wire type its onnx.proto schema does not allow") \
    X(CV_E_ONNX_BAD_PROTOBUF, 1303, "onnx-bad-protobuf", "ONNX: the input is not a valid protobuf ModelProto / TensorProto") \
    X(CV_E_ONNX_NESTING, 1304, "onnx-nesting", "ONNX: protobuf messages are nested deeper than the importer allows (64)") \
    X(CV_E_ONNX_TOO_LARGE, 1305, "onnx-too-large", "ONNX: the model exceeds protobuf's 2 GB limit (store weights as external data)") \
    X(CV_E_ONNX_BAD_MODEL, 1306, "onnx-bad-model", "ONNX: a required ModelProto part is missing (graph, opset_import)") \
    X(CV_E_ONNX_TENSOR_DATA, 1307, "onnx-tensor-data", "ONNX: a tensor's data does not match its element type and dims") \
    X(CV_E_ONNX_EXTERNAL_DATA, 1308, "onnx-external-data", "ONNX: external tensor data is missing, malformed, or outside the model's directory") \
    /* 2xxx: names and types */ \
    X(CV_E_UNDEFINED_NAME, 2001, "undefined-name", "a name is used but never defined") \
    X(CV_E_REDEFINITION, 2002, "redefinition", "a name is defined twice") \
    X(CV_E_USE_BEFORE_DEFINITION, 2003, "use-before-definition", "a value is used before the op that defines it") \
    X(CV_E_UNKNOWN_ATTRIBUTE, 2004, "unknown-attribute", "an op has an attribute its schema does not list") \
    X(CV_E_ATTRIBUTE_TYPE, 2005, "attribute-type", "an attribute has the wrong kind of value") \
    X(CV_E_MISSING_ATTRIBUTE, 2006, "missing-attribute", "an op lacks a required attribute") \
    X(CV_E_OPERAND_COUNT, 2007, "operand-count", "an op has the wrong number of operands") \
    X(CV_E_RESULT_COUNT, 2008, "result-count", "an op has the wrong number of results") \
    X(CV_E_DTYPE_MISMATCH, 2009, "dtype-mismatch", "an operand's element type is not allowed or does not match") \
    X(CV_E_UNKNOWN_DTYPE, 2010, "unknown-dtype", "an element type name is not one of f32 f16 bf16 i8 u8 i32 i64 bool") \
    X(CV_E_DECLARED_DTYPE, 2011, "declared-dtype", "the declared result type differs from the inferred one") \
    X(CV_E_RETURN_MISMATCH, 2012, "return-mismatch", "the returned values do not match the model signature") \
    X(CV_E_GRAPH_CYCLE, 2013, "graph-cycle", "the graph contains a cycle") \
    X(CV_E_WEIGHTS_MISSING, 2014, "weights-missing", "a weights file or tensor named by a param cannot be found") \
    X(CV_E_WEIGHTS_MISMATCH, 2015, "weights-mismatch", "a weight tensor's dtype or shape differs from its param") \
    X(CV_E_PATH_ESCAPE, 2016, "path-escape", "a referenced file would leave the model's directory") \
    X(CV_E_INVALID_ATTRIBUTE_VALUE, 2017, "invalid-attribute-value", "an attribute value is outside its allowed range") \
    X(CV_E_UNUSED_VALUE, 2020, "unused-value", "a value is defined but never used (strict mode)") \
    X(CV_E_DEAD_PARAM, 2021, "dead-param", "a param is never used (strict mode)") \
    X(CV_E_DUPLICATE_NAME, 2022, "duplicate-name", "two models, inputs or params share a name (strict mode)") \
    X(CV_E_CONSTANT_OUTPUT, 2023, "constant-output", "an output does not depend on any model input (strict mode)") \
    X(CV_E_INPUT_MISMATCH, 2024, "input-mismatch", "a run-time input is missing, unknown, or of the wrong dtype") \
    X(CV_E_DSL_UNDEFINED_NAME, 2101, "dsl-undefined-name", "model language: a name is used but never defined (did you mean ...?)") \
    X(CV_E_DSL_UNKNOWN_OP, 2102, "dsl-unknown-op", "model language: cvl.<name> is not an op of the CU-IR op table") \
    X(CV_E_DSL_ARGUMENT_COUNT, 2103, "dsl-argument-count", "model language: a call passes more or fewer arguments than the callee takes") \
    X(CV_E_DSL_UNKNOWN_KEYWORD, 2104, "dsl-unknown-keyword", "model language: a call passes a keyword argument the callee does not have") \
    X(CV_E_DSL_DUPLICATE_ARGUMENT, 2105, "dsl-duplicate-argument", "model language: an argument is given twice (by position and by keyword)") \
    X(CV_E_DSL_DTYPE_MISMATCH, 2106, "dsl-dtype-mismatch", "model language: a constant or weight has an element type that does not fit its use") \
    X(CV_E_DSL_TYPE_ERROR, 2107, "dsl-type-error", "model language: a value of the wrong kind (a tensor where a constant is needed, calling a non-function...)") \
    X(CV_E_DSL_ATTRIBUTE_VALUE, 2108, "dsl-attribute-value", "model language: an op attribute is given a value of the wrong kind") \
    X(CV_E_DSL_UNKNOWN_MEMBER, 2109, "dsl-unknown-member", "model language: a tensor, tuple or module has no member of that name") \
    X(CV_E_DSL_MISSING_ARGUMENT, 2110, "dsl-missing-argument", "model language: a call lacks a required argument or op attribute") \
    X(CV_E_DSL_MODEL_SPEC, 2111, "dsl-model-spec", "model language: the @cvl.model(...) arguments are malformed") \
    X(CV_E_DSL_MODEL_RETURN, 2112, "dsl-model-return", "model language: a model must return a tensor or a tuple of tensors") \
    X(CV_E_DSL_UNKNOWN_DTYPE, 2113, "dsl-unknown-dtype", "model language: a dtype name is not one Cuvil knows") \
    X(CV_E_DSL_NO_MODEL, 2114, "dsl-no-model", "model language: the file defines no @cvl.model function") \
    X(CV_E_DSL_UNPACK_MISMATCH, 2115, "dsl-unpack-mismatch", "model language: tuple unpacking with the wrong number of targets") \
    X(CV_E_DSL_CONSTANT_ERROR, 2116, "dsl-constant-error", "model language: a compile-time computation failed (overflow, division by zero, assert)") \
    X(CV_E_DSL_MODEL_SIGNATURE, 2117, "dsl-model-signature", "model language: a model's parameters do not match its input_shapes and weights") \
    X(CV_E_ONNX_UNDEFINED_VALUE, 2301, "onnx-undefined-value", "ONNX: a node input is produced by no node, graph input or initializer") \
    X(CV_E_ONNX_DUPLICATE_NAME, 2302, "onnx-duplicate-name", "ONNX: a value name is produced twice (inputs, initializers, node outputs)") \
    X(CV_E_ONNX_GRAPH_CYCLE, 2303, "onnx-graph-cycle", "ONNX: nodes form a cycle") \
    X(CV_E_ONNX_OUTPUT_MISSING, 2304, "onnx-output-missing", "ONNX: a graph output is never produced (or the graph has none)") \
    X(CV_E_ONNX_ATTRIBUTE_TYPE, 2305, "onnx-attribute-type", "ONNX: a node attribute is missing or has the wrong type") \
    X(CV_E_ONNX_DECLARED_DTYPE, 2306, "onnx-declared-dtype", "ONNX: a declared element type (output, value_info) differs from the computed one") \
    X(CV_E_ONNX_MISSING_TYPE, 2307, "onnx-missing-type", "ONNX: a graph input has no tensor type or shape") \
    X(CV_E_ONNX_ARITY, 2308, "onnx-arity", "ONNX: a node has the wrong number of inputs or outputs") \
    X(CV_E_ONNX_ATTRIBUTE_VALUE, 2309, "onnx-attribute-value", "ONNX: a node attribute or constant input is outside its allowed range") \
    /* 3xxx: shapes */ \
    X(CV_E_RANK_MISMATCH, 3001, "rank-mismatch", "a tensor has a different rank than the op requires") \
    X(CV_E_BROADCAST_MISMATCH, 3002, "broadcast-mismatch", "two shapes cannot be broadcast together") \
    X(CV_E_DECLARED_SHAPE, 3003, "declared-shape", "the declared result shape differs from the inferred one") \
    X(CV_E_DIMENSION_OVERFLOW, 3004, "dimension-overflow", "a dimension or an element count does not fit in 64 bits") \
    X(CV_E_INVALID_DIMENSION, 3005, "invalid-dimension", "a dimension is negative or otherwise invalid") \
    X(CV_E_AXIS_OUT_OF_RANGE, 3006, "axis-out-of-range", "an axis attribute is outside the tensor's rank") \
    X(CV_E_INVALID_SHAPE_ATTRIBUTE, 3007, "invalid-shape-attribute", "a shape-related attribute (stride, pad, size...) is invalid") \
    X(CV_E_ELEMENT_COUNT_MISMATCH, 3008, "element-count-mismatch", "a reshape changes the number of elements") \
    X(CV_E_SYMBOLIC_ARITHMETIC, 3009, "symbolic-arithmetic", "a symbolic dimension would need arithmetic that CU-IR does not express") \
    X(CV_E_RUNTIME_SHAPE, 3010, "runtime-shape", "a run-time input's shape does not match the declared shape") \
    X(CV_E_UNKNOWN_SHAPE, 3011, "unknown-shape", "a shape cannot be computed because an operand's shape is unknown") \
    X(CV_E_INDEX_OUT_OF_RANGE, 3012, "index-out-of-range", "a gather index is outside its axis at run time") \
    X(CV_E_SYMBOL_BOUND, 3013, "symbol-bound", "an input binds a symbol beyond a bound the model implies (a positional table indexed by arange(L) holds only L <= its rows)") \
    X(CV_E_RANK_TOO_LARGE, 3020, "rank-too-large", "a tensor type has more dimensions than CU-IR allows (8)") \
    X(CV_E_CHANNEL_MISMATCH, 3101, "channel-mismatch", "a convolution's input channels differ from what its weight expects") \
    X(CV_E_INNER_DIMENSION_MISMATCH, 3102, "inner-dimension-mismatch", "a matrix product's inner dimensions differ") \
    X(CV_E_DSL_WEIGHT_MISSING, 3201, "dsl-weight-missing", "model language: a weight named through p.<name> is not in the weights file") \
    X(CV_E_DSL_WEIGHTS_FILE, 3202, "dsl-weights-file", "model language: the weights file cannot be used (missing, unreadable, outside the model's directory, or not given)") \
    X(CV_E_DSL_WEIGHT_SHAPE, 3203, "dsl-weight-shape", "model language: a weight tensor's shape does not fit the op that uses it") \
    X(CV_E_DSL_SYMBOLIC_DIM, 3204, "dsl-symbolic-dim", "model language: a symbolic dimension is used where a number is required") \
    X(CV_E_DSL_INDEX_ERROR, 3205, "dsl-index-error", "model language: a constant index or slice is out of range or malformed") \
    X(CV_E_ONNX_INVALID_DIM, 3301, "onnx-invalid-dim", "ONNX: a dimension is negative or an element count overflows") \
    X(CV_E_ONNX_DECLARED_SHAPE, 3302, "onnx-declared-shape", "ONNX: a declared shape (output, value_info) differs from the computed one") \
    X(CV_E_ONNX_SHAPE_VALUE, 3303, "onnx-shape-value", "ONNX: a shape computed at import time is invalid (bad reshape target, range...)") \
    /* 4xxx: unsupported constructs and ops */ \
    X(CV_E_UNKNOWN_OP, 4001, "unknown-op", "an op name is not in the CU-IR op table") \
    X(CV_E_UNSUPPORTED_DTYPE, 4002, "unsupported-dtype", "an op does not support this element type") \
    X(CV_E_UNSUPPORTED_ATTRIBUTE_VALUE, 4003, "unsupported-attribute-value", "an attribute value is valid but not supported") \
    X(CV_E_UNKNOWN_MODEL_FORMAT, 4004, "unknown-model-format", "a file is not in any model format Cuvil reads") \
    X(CV_E_BACKEND_DIM_EXPRESSION, 4005, "backend-dim-expression", "a backend cannot yet compile a shape that holds a dimension expression (the interpreter runs it)") \
    X(CV_E_DSL_WHILE, 4101, "dsl-while", "model language: while loops are not supported (use for i in range(CONST))") \
    X(CV_E_DSL_DATA_DEPENDENT_IF, 4102, "dsl-data-dependent-if", "model language: an if or conditional expression depends on tensor data or a symbolic dimension") \
    X(CV_E_DSL_COMPREHENSION_OVER_TENSOR, 4103, "dsl-comprehension-over-tensor", "model language: a comprehension iterates over a tensor") \
    X(CV_E_DSL_TRY, 4104, "dsl-try", "model language: try/except is not supported") \
    X(CV_E_DSL_LAMBDA, 4105, "dsl-lambda", "model language: lambda is not supported (use a def)") \
    X(CV_E_DSL_GLOBAL, 4106, "dsl-global", "model language: global and nonlocal are not supported") \
    X(CV_E_DSL_RECURSION, 4107, "dsl-recursion", "model language: a helper calls itself (helpers are inlined)") \
    X(CV_E_DSL_PRINT, 4108, "dsl-print", "model language: print is not supported in a model") \
    X(CV_E_DSL_IMPORT, 4109, "dsl-import", "model language: only `import cuvil` (as any name) can be imported") \
    X(CV_E_DSL_UNSUPPORTED_STATEMENT, 4110, "dsl-unsupported-statement", "model language: a statement a model cannot contain (class, with, del, raise, yield...)") \
    X(CV_E_DSL_UNSUPPORTED_EXPRESSION, 4111, "dsl-unsupported-expression", "model language: an expression a model cannot contain (dict, set, f-string, star, operator on tensors...)") \
    X(CV_E_DSL_DATA_DEPENDENT_LOOP, 4112, "dsl-data-dependent-loop", "model language: a for loop iterates over a tensor") \
    X(CV_E_DSL_TOO_LARGE, 4113, "dsl-too-large", "model language: unrolling or inlining exceeds the compile-time budget") \
    X(CV_E_DSL_UNSUPPORTED_BUILTIN, 4114, "dsl-unsupported-builtin", "model language: a Python builtin the model language does not provide") \
    X(CV_E_DSL_UNSUPPORTED_PARAMETER, 4115, "dsl-unsupported-parameter", "model language: *args, **kwargs or keyword-only markers in a helper def") \
    X(CV_E_ONNX_UNSUPPORTED_OPS, 4301, "onnx-unsupported-ops", "ONNX: the model uses ops Cuvil cannot import (every one is listed)") \
    X(CV_E_ONNX_UNSUPPORTED_OPSET, 4302, "onnx-unsupported-opset", "ONNX: the model's IR version or opset is outside what Cuvil supports (opsets 7-18)") \
    X(CV_E_ONNX_UNSUPPORTED_DTYPE, 4303, "onnx-unsupported-dtype", "ONNX: an element type CU-IR lacks (double, int16, uint16/32/64, string, complex)") \
    X(CV_E_ONNX_SPARSE_TENSOR, 4304, "onnx-sparse-tensor", "ONNX: sparse tensors are not supported") \
    X(CV_E_ONNX_DATA_DEPENDENT_SHAPE, 4305, "onnx-data-dependent-shape", "ONNX: a shape-like operand is computed at run time; CU-IR needs it at import time") \
    X(CV_E_ONNX_UNSUPPORTED_FEATURE, 4306, "onnx-unsupported-feature", "ONNX: an attribute value or mode Cuvil does not support (training mode, cubic resize, 3-D pooling...)") \
    X(CV_E_ONNX_NON_TENSOR, 4307, "onnx-non-tensor", "ONNX: a sequence, map or optional value (only tensors are supported)") \
    X(CV_E_ONNX_RANK_LIMIT, 4308, "onnx-rank-limit", "ONNX: a tensor has more than 8 dimensions") \
    X(CV_E_UNSUPPORTED_PRECISION, 4401, "unsupported-precision", "the compiler cannot produce this precision yet (fp32 only)") \
    /* 5xxx: code generation and artifacts */ \
    X(CV_E_CODEGEN_UNSUPPORTED_OP, 5001, "codegen-unsupported-op", "an op has no native code generation yet (the interpreter runs it)") \
    X(CV_E_CODEGEN_FAILED, 5002, "codegen-failed", "an op's code generation failed, or the module holds no model to compile") \
    X(CV_E_CODEGEN_FOLD_FAILED, 5003, "codegen-fold-failed", "an op without operands could not be evaluated at compile time") \
    X(CV_E_CODEGEN_SIZE_OVERFLOW, 5004, "codegen-size-overflow", "a tensor's byte size overflows 64 bits") \
    X(CV_E_CODEGEN_TOO_MANY_OPERANDS, 5005, "codegen-too-many-operands", "more operands than one elementwise kernel takes") \
    X(CV_E_CODEGEN_SYMBOLIC_RESIZE, 5007, "codegen-symbolic-resize", "resize along a symbolic axis is not compiled yet") \
    X(CV_E_UNKNOWN_TARGET, 5010, "unknown-target", "the -t target is unknown, or LLVM cannot make a machine for it") \
    X(CV_E_LLVM_CODEGEN_FAILED, 5011, "llvm-codegen-failed", "LLVM could not emit an object file for the module") \
    X(CV_E_MODEL_TOO_LARGE, 5012, "model-too-large", "the model has more ops than a compile takes (cuvil compile --max-ops)") \
    X(CV_E_COMPILE_TIMEOUT, 5013, "compile-timeout", "the compile ran past cuvil compile --timeout and was stopped") \
    X(CV_E_LINK_FAILED, 5021, "link-failed", "the system linker failed to make lib<name>.so") \
    X(CV_E_NCHWC_WEIGHTS_NOT_CONSTANT, 5022, "nchwc-weights-not-constant", "a convolution planned in the blocked layout has weights that are not embedded constants") \
    X(CV_E_NCHWC_NO_KERNEL, 5023, "nchwc-no-kernel", "an op planned in the blocked layout has no blocked kernel (an internal planning error)") \
    X(CV_E_BAD_ARTIFACT_MANIFEST, 5030, "bad-artifact-manifest", "an artifact's manifest.json is missing or malformed") \
    X(CV_E_ARTIFACT_LOAD_FAILED, 5031, "artifact-load-failed", "an artifact's shared library cannot be loaded or lacks its API") \
    X(CV_E_ARTIFACT_NAME_TAKEN, 5035, "artifact-name-taken", "the output directory holds an artifact of that name made from another model (use --name, another -o, or --force)") \
    X(CV_E_CPU_FEATURES_MISSING, 5036, "cpu-features-missing", "this CPU lacks instruction-set features the artifact was compiled for (AVX-512...): compile for native or the target named") \
    X(CV_E_BAD_ARTIFACT_NAME, 5037, "bad-artifact-name", "--name is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)") \
    X(CV_E_ARTIFACT_NO_PROFILE, 5038, "artifact-no-profile", "the artifact exports no per-kernel profile (built before cuvil bench --profile existed, or for CUDA): recompile it") \
    X(CV_E_BACKEND_UNAVAILABLE, 5040, "backend-unavailable", "the LLVM backend plugin (lib/cuvil/libcv_llvm.so) could not be loaded") \
    X(CV_E_C99_NO_RUNTIME_ROUTINE, 5041, "c99-no-runtime-routine", "a kernel calls a runtime routine the C99 backend has no version of") \
    X(CV_E_C99_BUILD_FAILED, 5042, "c99-build-failed", "the C compiler rejected or could not build the C99 backend's output") \
    X(CV_E_WEIGHTS_FILE_UNSUPPORTED, 5043, "weights-file-unsupported", "--weights-file was asked for a target that keeps its weights in the library (CUDA)") \
    X(CV_E_WEIGHTS_FILE_BAD, 5044, "weights-file-bad", "an artifact's weights file (<name>.weights.bin) is missing, unreadable or not the size its manifest records") \
    X(CV_E_CUDA_NO_DRIVER, 5060, "cuda-no-driver", "a CUDA artifact found no NVIDIA driver (libcuda.so.1) on this machine") \
    X(CV_E_CUDA_NO_DEVICE, 5061, "cuda-no-device", "the NVIDIA driver reports no usable CUDA device (or not the one asked for)") \
    X(CV_E_CUDA_DEVICE_TOO_OLD, 5062, "cuda-device-too-old", "the GPU's compute capability is below the SM the CUDA artifact was built for") \
    X(CV_E_CUDA_DRIVER_ERROR, 5063, "cuda-driver-error", "a CUDA driver call failed (PTX JIT, launch, copy...) in a CUDA artifact") \
    X(CV_E_CUDA_DEVICE_OOM, 5064, "cuda-device-oom", "a CUDA artifact could not allocate device memory") \
    X(CV_E_CUDA_HOST_KERNEL, 5065, "cuda-host-kernel", "a kernel both calls runtime routines and touches tensor elements; the CUDA backend cannot place it") \
    X(CV_E_CUDA_NO_DEVICE_ROUTINE, 5066, "cuda-no-device-routine", "a kernel calls a runtime routine that has no CUDA device kernel yet") \
    X(CV_E_CUDA_CODEGEN_FAILED, 5067, "cuda-codegen-failed", "NVPTX code generation failed, or the PTX would call an undefined function") \
    X(CV_E_CUDA_RUNTIME_BITCODE, 5068, "cuda-runtime-bitcode", "the CUDA device or host runtime bitcode embedded in the LLVM plugin is missing or broken") \
    X(CV_E_INT8_CONV_UNSUPPORTED, 5100, "int8-conv-unsupported", "qconv2d: only static, ungrouped or depthwise convolutions run in int8") \
    X(CV_E_INT8_CONV_TOO_DEEP, 5101, "int8-conv-too-deep", "qconv2d: more products per output than the int8 kernel's packing buffer holds") \
    X(CV_E_INT8_WEIGHTS_NOT_CONSTANT, 5102, "int8-weights-not-constant", "qconv2d: the int8 weights and their scales must be constants") \
    X(CV_E_CALIBRATION_MODEL, 5103, "calibration-model", "int8 calibration feeds f32 model inputs only (1 to 64 of them)") \
    X(CV_E_CALIBRATION_FILE, 5104, "calibration-file", "a calibration .npy file is not an f32/f64 array of the model input's rank") \
    X(CV_E_CALIBRATION_MISSING, 5105, "calibration-missing", "-p int8 needs calibration data: --calibration \"GLOB\" matched no file") \
    X(CV_E_MIN_SQNR, 5110, "min-sqnr", "an int8 output's SQNR against fp32 is below --min-sqnr") \
    X(CV_E_INT8_DWCONV_TOO_LARGE, 5111, "int8-dwconv-too-large", "qconv2d: a depthwise int8 conv with more than 512 taps or planes beyond its scratch") \
    X(CV_E_CALIBRATION_UNKNOWN_INPUT, 5131, "calibration-unknown-input", "--calibration INPUT=GLOB names no input of the model (or several specs do not all name one)") \
    X(CV_E_CALIBRATION_INPUT_MISSING, 5132, "calibration-input-missing", "--calibration: a multi-input model has no data for one of its inputs") \
    X(CV_E_CALIBRATION_COUNT_MISMATCH, 5133, "calibration-count-mismatch", "--calibration: the inputs' globs match different numbers of files (file i of each makes sample i)") \
    X(CV_E_CALIBRATION_INPUT_TWICE, 5134, "calibration-input-twice", "--calibration: the same input is given twice") \
    X(CV_E_CALIBRATION_NEEDS_NAMES, 5135, "calibration-needs-names", "--calibration GLOB without a name for a model with several inputs") \
    X(CV_E_CALIBRATION_TOO_MANY_SPECS, 5136, "calibration-too-many-specs", "--calibration: more than 64 INPUT=GLOB specs") \
    X(CV_E_SYMBOLS_BAD_MAP, 5200, "symbols-bad-map", "a symbol map (.cvsym) is malformed") \
    X(CV_E_SYMBOLS_NO_MAP, 5201, "symbols-no-map", "an artifact has no symbol map (made before they existed, or not an artifact)") \
    X(CV_E_TEST_FAULT_BAD, 5205, "test-fault-bad", "CUVIL_TEST_FAULT_OP is malformed or names no compiled op (tests only)") \
    X(CV_E_DIFF_NO_REFERENCE, 5210, "diff-no-reference", "cuvil diff cannot run its reference (interpreter, ONNX Runtime or artifact)") \
    X(CV_E_DIFF_MISMATCH, 5211, "diff-mismatch", "cuvil diff: the reference and the build disagree on a tensor's shape") \
    /* 6xxx: specs (CuvilBuildCluster, CuvilPipeline), git source, build DB, planner, farm */ \
    X(CV_E_SPEC_UNKNOWN_FIELD, 6001, "spec-unknown-field", "a spec has a field its kind does not define (did you mean ...?)") \
    X(CV_E_SPEC_FIELD_TYPE, 6002, "spec-field-type", "a spec field has the wrong type (a list where a string is expected, ...)") \
    X(CV_E_SPEC_MISSING_FIELD, 6003, "spec-missing-field", "a spec lacks a required field (for a pipeline: also after merging its bases)") \
    X(CV_E_SPEC_API_VERSION, 6004, "spec-api-version", "a spec document's apiVersion is not cuvil.dev/v1") \
    X(CV_E_SPEC_UNKNOWN_KIND, 6005, "spec-unknown-kind", "a spec document's kind is not CuvilBuildCluster or CuvilPipeline") \
    X(CV_E_SPEC_BAD_NAME, 6006, "spec-bad-name", "a name is not a DNS-1123 label (lowercase letters, digits, '-', at most 63)") \
    X(CV_E_SPEC_DUPLICATE_NAME, 6007, "spec-duplicate-name", "two specs of the same kind share a name") \
    X(CV_E_SPEC_BAD_GLOB, 6008, "spec-bad-glob", "a glob is malformed (absolute, '..', unclosed '[', misplaced '**', ...)") \
    X(CV_E_SPEC_UNKNOWN_TARGET, 6009, "spec-unknown-target", "a target is not one Cuvil compiles for (did you mean ...?)") \
    X(CV_E_SPEC_UNKNOWN_PRECISION, 6010, "spec-unknown-precision", "a precision is not one of fp32 fp16 bf16 int8") \
    X(CV_E_SPEC_BAD_OPT_LEVEL, 6011, "spec-bad-opt-level", "an optLevel is not one of O0 O1 O2 O3") \
    X(CV_E_SPEC_BAD_DURATION, 6012, "spec-bad-duration", "a duration is malformed (expected e.g. 60s, 10m, 1h30m)") \
    X(CV_E_SPEC_BAD_SIZE, 6013, "spec-bad-size", "a size is malformed (expected e.g. 20Gi, 500M)") \
    X(CV_E_SPEC_EXTENDS_MISSING, 6014, "spec-extends-missing", "a pipeline extends a pipeline that does not exist") \
    X(CV_E_SPEC_EXTENDS_CYCLE, 6015, "spec-extends-cycle", "pipelines extend each other in a cycle") \
    X(CV_E_SPEC_BAD_URL, 6016, "spec-bad-url", "a URL or repository location is malformed or uses an unsupported scheme") \
    X(CV_E_SPEC_BAD_ENUM, 6017, "spec-bad-enum", "a field is not one of its allowed values") \
    X(CV_E_SPEC_DUPLICATE_ITEM, 6018, "spec-duplicate-item", "a list names the same item twice") \
    X(CV_E_SPEC_EMPTY_LIST, 6019, "spec-empty-list", "a list that needs at least one item is empty") \
    X(CV_E_SPEC_MULTIPLE_CLUSTERS, 6020, "spec-multiple-clusters", "a repository defines more than one CuvilBuildCluster") \
    X(CV_E_SPEC_BAD_REF, 6021, "spec-bad-ref", "a git ref name is malformed") \
    X(CV_E_SPEC_BAD_STRING, 6022, "spec-bad-string", "a string is empty, too long, or holds control characters; or a list is too long") \
    X(CV_E_SPEC_OUT_OF_RANGE, 6023, "spec-out-of-range", "a number or duration is outside its allowed range") \
    X(CV_E_SPEC_BAD_ADDRESS, 6024, "spec-bad-address", "a host:port list or image registry is malformed") \
    X(CV_E_GIT_OPEN_FAILED, 6050, "git-open-failed", "the git mirror under the state directory cannot be created or opened") \
    X(CV_E_GIT_FETCH_FAILED, 6051, "git-fetch-failed", "listing or fetching the remote failed; the source retries with back-off") \
    X(CV_E_GIT_REF_NOT_FOUND, 6052, "git-ref-not-found", "the remote has no branch, tag or ref of that name") \
    X(CV_E_GIT_BAD_COMMIT, 6053, "git-bad-commit", "a commit is not in the mirror, or is not a commit") \
    X(CV_E_GIT_READ_FAILED, 6054, "git-read-failed", "a tree or blob could not be read from the mirror") \
    X(CV_E_GIT_BLOB_TOO_LARGE, 6055, "git-blob-too-large", "a file in the repository is larger than the limit for its use") \
    X(CV_E_GIT_TREE_TOO_LARGE, 6056, "git-tree-too-large", "a tree has too many entries or too many bytes of paths") \
    X(CV_E_GIT_BAD_URL, 6057, "git-bad-url", "a git source location is empty or malformed") \
    X(CV_E_GIT_BAD_REVISION, 6058, "git-bad-revision", "a revision is not of the form ref@sha1:<40 hex digits>") \
    X(CV_E_GIT_PATH_NOT_UTF8, 6059, "git-path-not-utf8", "a file's path in the repository is not valid UTF-8; the file is left out") \
    X(CV_E_GIT_PATH_TOO_LONG, 6060, "git-path-too-long", "a file's name or path in the repository is over the limit; the file is left out") \
    X(CV_E_GIT_PATH_UNSAFE, 6061, "git-path-unsafe", "a tree entry is empty, '.', '..', holds a '/', repeats a path or is both a file and a directory; left out") \
    X(CV_E_SPEC_FILES_TOO_LARGE, 6062, "spec-files-too-large", "a revision's spec files are larger in total than the limit") \
    X(CV_E_BUILDDB_OPEN_FAILED, 6070, "builddb-open-failed", "the build DB cannot be opened") \
    X(CV_E_BUILDDB_SCHEMA, 6071, "builddb-schema", "the build DB has a newer schema version than this cuvil understands") \
    X(CV_E_BUILDDB_STORAGE, 6072, "builddb-storage", "the build DB reported an error") \
    X(CV_E_BUILDDB_BUSY, 6073, "builddb-busy", "the build DB stayed locked past the busy timeout") \
    X(CV_E_BUILDDB_UNKNOWN_JOB, 6074, "builddb-unknown-job", "a result names a job the build DB does not know or has finished") \
    X(CV_E_BUILDDB_UNKNOWN_REVISION, 6075, "builddb-unknown-revision", "no revision of that name is in the build DB") \
    X(CV_E_BUILDDB_AMBIGUOUS_REVISION, 6076, "builddb-ambiguous-revision", "a commit prefix names more than one revision") \
    X(CV_E_PLAN_NO_PIPELINES, 6090, "plan-no-pipelines", "a revision has no CuvilPipeline specs, so nothing is built") \
    X(CV_E_PLAN_GLOB_NO_MATCH, 6091, "plan-glob-no-match", "a model glob matches no file of the revision") \
    X(CV_E_PLAN_NOT_A_MODEL, 6092, "plan-not-a-model", "a file matched by a model glob is not a model (.onnx, .cvl.py, .cuir)") \
    X(CV_E_PLAN_TOO_MANY_JOBS, 6093, "plan-too-many-jobs", "a revision expands into more jobs than the limit") \
    X(CV_E_PLAN_MODEL_UNREADABLE, 6094, "plan-model-unreadable", "a model file cannot be read from the revision") \
    X(CV_E_PLAN_LOOKUP_FAILED, 6095, "plan-lookup-failed", "the cache look-up for a job failed; the job is queued anyway") \
    X(CV_E_PLAN_NO_SPECS, 6099, "plan-no-specs", "a revision has no spec file under cuvil/ (every spec deleted): it fails, nothing is built") \
    X(CV_E_FARM_WORKERS_FAILED, 6100, "farm-workers-failed", "the farm's workers could not be started or stopped with jobs left") \
    X(CV_E_FARM_TREE_WRITE_FAILED, 6101, "farm-tree-write-failed", "the farm could not write a revision's files into its state directory") \
    X(CV_E_SUBMIT_NOT_HANDLED, 6102, "submit-not-handled", "no controller handled the build request in time") \
    X(CV_E_ARTIFACT_NOT_FOUND, 6103, "artifact-not-found", "the artifact is not recorded for that revision, or the cache no longer holds it") \
    X(CV_E_FAILURES_HISTORY_NOT_STORED, 6110, "failures-history-not-stored", "the failure classifier could not store a revision's patterns; first-seen revisions may show later than they were") \
    X(CV_E_FAILURES_BAD_RANGE, 6111, "failures-bad-range", "--since names a revision newer than the one reported") \
    X(CV_E_FAILURES_RANGE_CUT, 6112, "failures-range-cut", "a trend covers more revisions than shown; the oldest are left out") \
    X(CV_E_HTTP_START_FAILED, 6130, "http-start-failed", "the farm's HTTP server could not start (listen address, port in use, token file, build DB)") \
    X(CV_E_HTTP_BAD_REQUEST, 6131, "http-bad-request", "a request's path, query parameter or body is malformed") \
    X(CV_E_HTTP_UNAUTHORIZED, 6132, "http-unauthorized", "the request carries no token, or one the server does not know") \
    X(CV_E_HTTP_FORBIDDEN, 6133, "http-forbidden", "a read-only token was used for a write (POST /api/v1/revisions)") \
    X(CV_E_HTTP_NOT_FOUND, 6134, "http-not-found", "no page or API resource of that name") \
    X(CV_E_HTTP_METHOD_NOT_ALLOWED, 6135, "http-method-not-allowed", "the resource does not take that HTTP method") \
    X(CV_E_HTTP_TOO_LARGE, 6136, "http-too-large", "the request body is larger than 1 MB") \
    X(CV_E_HTTP_INTERNAL, 6137, "http-internal", "the build DB, queue or cache failed while answering") \
    X(CV_E_WEBHOOK_BAD_SIGNATURE, 6138, "webhook-bad-signature", "a webhook's X-Hub-Signature-256 or X-Gitlab-Token does not match the configured secret") \
    X(CV_E_WEBHOOK_NOT_CONFIGURED, 6139, "webhook-not-configured", "webhooks are refused: the farm has no webhook secret") \
    X(CV_E_WEBHOOK_BAD_PAYLOAD, 6140, "webhook-bad-payload", "a webhook payload is not a JSON object with a ref") \
    X(CV_E_WEBHOOK_IGNORED, 6141, "webhook-ignored", "a webhook event is not a push of the tracked ref; nothing is built") \
    X(CV_E_HTTP_BUSY, 6142, "http-busy", "too many connections without a token (from this address, or in all): a request without one is refused; retry, or send a token") \
    X(CV_E_HTTP_BAD_FRAMING, 6143, "http-bad-framing", "a request head is ambiguous (two Content-Length headers, Content-Length with Transfer-Encoding, a folded or bare-CR header line)") \
    X(CV_E_HTTP_UNSUPPORTED_MEDIA_TYPE, 6144, "http-unsupported-media-type", "POST /api/v1/revisions takes Content-Type: application/json (a browser form cannot send it)") \
    X(CV_E_WEBHOOK_REPLAYED, 6145, "webhook-replayed", "a webhook delivery (its delivery id, or the same signed payload) was already accepted") \
    X(CV_E_WEBHOOK_STALE, 6146, "webhook-stale", "a webhook payload's push time is too far from now; it is refused as a replay") \
    X(CV_E_CLUSTER_REMOTE_NOT_ALLOWED, 6160, "cluster-remote-not-allowed", "a repository's cluster spec names a remote cache the operator does not allow (only NAMEs from --remote-cache NAME=URL); the farm's own remote is used") \
    X(CV_E_CLUSTER_OPERATOR_ONLY, 6161, "cluster-operator-only", "a repository's cluster spec sets what only the operator chooses (the queue, the signing key secret); ignored") \
    X(CV_E_CLUSTER_LIMIT_CAPPED, 6162, "cluster-limit-capped", "a repository's cluster spec asks for a job timeout or memory limit above the operator's ceiling; the ceiling applies") \
    X(CV_E_FARM_BAD_REMOTE, 6163, "farm-bad-remote", "a --remote-cache value is not URL or NAME=URL (unique DNS-1123 NAME, http(s) URL), or there are too many") \
    X(CV_E_FARM_SIGNING_KEYS, 6164, "farm-signing-keys", "the farm's action-cache key pair cannot be read or made, or a verify key came without a signing key") \
    X(CV_E_ARTIFACT_UNVERIFIED_REMOTE, 6165, "artifact-unverified-remote", "`cuvil artifacts get` would read a remote cache without the farm's verify key; refused") \
    /* 7xxx: the Kubernetes operator */ \
    X(CV_E_K8S_NO_CONFIG, 7001, "k8s-no-config", "no Kubernetes configuration: not in a pod, no --kubeconfig, $KUBECONFIG or ~/.kube/config") \
    X(CV_E_K8S_BAD_KUBECONFIG, 7002, "k8s-bad-kubeconfig", "the kubeconfig cannot be used (malformed, a missing context, cluster or user, an exec plugin)") \
    X(CV_E_K8S_UNREACHABLE, 7003, "k8s-unreachable", "the Kubernetes API server could not be reached (connection, TLS, certificate)") \
    X(CV_E_K8S_API_ERROR, 7004, "k8s-api-error", "the Kubernetes API server answered with an unexpected status") \
    X(CV_E_K8S_UNAUTHORIZED, 7005, "k8s-unauthorized", "the Kubernetes API server refused the credentials or the operation (401, 403)") \
    X(CV_E_K8S_CONFLICT, 7006, "k8s-conflict", "an object kept changing under the operator (409 on every attempt); retried later") \
    X(CV_E_K8S_WATCH_EXPIRED, 7007, "k8s-watch-expired", "the watch's resourceVersion was compacted away (410 Gone); the operator lists again") \
    X(CV_E_K8S_BAD_RESPONSE, 7008, "k8s-bad-response", "an API answer or watch event is not the JSON expected, or too large") \
    X(CV_E_K8S_SPEC_INVALID, 7010, "k8s-spec-invalid", "a CuvilBuildCluster's spec does not validate: the cluster is Stalled until it changes") \
    X(CV_E_K8S_UNKNOWN_PROFILE, 7011, "k8s-unknown-profile", "spec.workers.resourceProfile names no resource profile the operator knows") \
    X(CV_E_K8S_CHILD_NOT_OWNED, 7012, "k8s-child-not-owned", "an object with a child's name exists and is not owned by the cluster; it is left alone") \
    X(CV_E_K8S_NAME_TOO_LONG, 7013, "k8s-name-too-long", "a CuvilBuildCluster's name is too long for its children's names") \
    X(CV_E_K8S_VOLUME_SHRINK, 7014, "k8s-volume-shrink", "a volume claim asks for less storage than it has; claims cannot shrink, it is kept") \
    X(CV_E_CRD_NOT_STRUCTURAL, 7020, "crd-not-structural", "a JSON Schema cannot become a CRD's structural schema") \
    /* 9xxx: internal, resources, infrastructure */ \
    X(CV_E_INTERNAL_ERROR, 9001, "internal-error", "an internal compiler error (please report it)") \
    X(CV_E_OUT_OF_MEMORY, 9002, "out-of-memory", "memory ran out") \
    X(CV_E_TIMEOUT, 9003, "timeout", "the operation ran past its time limit") \
    X(CV_E_IO_ERROR, 9004, "io-error", "a file or device could not be read or written") \
    X(CV_E_RESOURCE_LIMIT, 9005, "resource-limit", "an input exceeds a configured resource limit") \
    X(CV_E_DB_SCHEMA_TOO_NEW, 9006, "db-schema-too-new", "a database file (build DB, queue, cache index) was written by a newer cuvil: its schema version is higher than this build knows") \
    X(CV_E_CACHE_CORRUPT_ENTRY, 9101, "cache-corrupt-entry", "a cache entry failed verification against its digest; it was removed and treated as a miss") \
    X(CV_E_CACHE_REMOTE_UNREACHABLE, 9102, "cache-remote-unreachable", "the remote cache could not be reached; the build continues without it") \
    X(CV_E_CACHE_REMOTE_TIMEOUT, 9103, "cache-remote-timeout", "the remote cache did not answer in time; the build continues without it") \
    X(CV_E_CACHE_REMOTE_STATUS, 9104, "cache-remote-status", "the remote cache answered with an unexpected HTTP status") \
    X(CV_E_CACHE_DISK_FULL, 9105, "cache-disk-full", "the cache directory has no space left (or a file-size limit was hit)") \
    X(CV_E_CACHE_BAD_DIGEST, 9106, "cache-bad-digest", "a digest is malformed or content does not hash to its name") \
    X(CV_E_CACHE_IO_ERROR, 9107, "cache-io-error", "a cache file or directory could not be read or written") \
    X(CV_E_CACHE_INDEX_ERROR, 9108, "cache-index-error", "the cache index (index.sqlite) could not be read or updated") \
    X(CV_E_CACHE_BAD_MANIFEST, 9109, "cache-bad-manifest", "a cache key manifest is malformed") \
    X(CV_E_CACHE_BAD_SIZE, 9110, "cache-bad-size", "a cache size is malformed (expected e.g. 20Gi, 500M, 1.5G)") \
    X(CV_E_CACHE_BAD_URL, 9111, "cache-bad-url", "a remote cache URL or listen address is malformed") \
    X(CV_E_CACHE_SERVER_ERROR, 9112, "cache-server-error", "the cache server could not start or failed") \
    X(CV_E_TOKENS_FILE, 9113, "tokens-file", "a tokens file (cache serve --tokens, --http-token-file) is malformed") \
    X(CV_E_CACHE_ENTRY_TOO_LARGE, 9114, "cache-entry-too-large", "a cache entry is larger than the configured limit") \
    X(CV_E_CACHE_BAD_KEY, 9115, "cache-bad-key", "a cache key field is invalid (bad name, duplicate, not UTF-8)") \
    X(CV_E_CACHE_REMOTE_BAD_BLOB, 9116, "cache-remote-bad-blob", "the remote cache returned content that does not hash to its name") \
    X(CV_E_SERVER_OPEN_LISTEN, 9140, "server-open-listen", "a server (cache serve, the farm's HTTP server) listens beyond loopback without tokens: anyone who reaches it may use it") \
    X(CV_E_QUEUE_BAD_URL, 9201, "queue-bad-url", "a queue URL is malformed or names an unknown backend") \
    X(CV_E_QUEUE_OPEN_FAILED, 9202, "queue-open-failed", "the queue storage could not be opened") \
    X(CV_E_QUEUE_SCHEMA, 9203, "queue-schema", "the queue storage has an unknown or newer schema version") \
    X(CV_E_QUEUE_STORAGE, 9204, "queue-storage", "the queue storage reported an error") \
    X(CV_E_QUEUE_BUSY, 9205, "queue-busy", "the queue storage stayed locked past the busy timeout") \
    X(CV_E_QUEUE_LEASE_LOST, 9206, "queue-lease-lost", "the lease expired and the job was given to another worker, or it is finished") \
    X(CV_E_QUEUE_RESULT_MISMATCH, 9207, "queue-result-mismatch", "a result names a different job than the lease it completes") \
    X(CV_E_QUEUE_DEAD_LETTER, 9208, "queue-dead-letter", "a job failed for infrastructure reasons too often and was dead-lettered") \
    X(CV_E_QUEUE_BACKEND_UNAVAILABLE, 9209, "queue-backend-unavailable", "the queue backend named by the URL is not built into this binary") \
    X(CV_E_QUEUE_INVALID_ARGUMENT, 9210, "queue-invalid-argument", "a queue call got an argument outside its allowed range") \
    X(CV_E_QUEUE_DUPLICATE_JOB, 9211, "queue-duplicate-job", "a job id is already queued or leased under a different key") \
    X(CV_E_QUEUE_POISON_MESSAGE, 9212, "queue-poison-message", "a stored job message cannot be decoded and was dead-lettered") \
    X(CV_E_KAFKA_BAD_URL, 9220, "kafka-bad-url", "a kafka:// queue URL is malformed (brokers, topic prefix, parameters)") \
    X(CV_E_KAFKA_BAD_CONFIG, 9221, "kafka-bad-config", "a librdkafka setting was rejected or is one that cuvil sets itself") \
    X(CV_E_KAFKA_CLIENT, 9222, "kafka-client", "a Kafka client (producer or consumer) could not be created") \
    X(CV_E_KAFKA_UNREACHABLE, 9223, "kafka-unreachable", "no Kafka broker answered within the queue's timeout") \
    X(CV_E_KAFKA_TOPIC, 9224, "kafka-topic", "a queue topic is missing or has the wrong number of partitions") \
    X(CV_E_KAFKA_DELIVERY_FAILED, 9225, "kafka-delivery-failed", "Kafka did not acknowledge a produced message (delivery report error)") \
    X(CV_E_KAFKA_FATAL, 9226, "kafka-fatal", "a Kafka client failed for good (e.g. idempotence broken); restart the process") \
    X(CV_E_KAFKA_CONSUME, 9227, "kafka-consume", "the Kafka consumer could not join its group or hold a message") \
    X(CV_E_KAFKA_OFFSET, 9228, "kafka-offset", "a consumer offset could not be committed") \
    X(CV_E_KAFKA_QUERY, 9229, "kafka-query", "Kafka offsets or watermarks for the queue figures could not be read") \
    X(CV_E_KAFKA_BAD_MESSAGE, 9230, "kafka-bad-message", "a message on a queue topic is malformed and was skipped or dead-lettered") \
    X(CV_E_WORKER_COMPILER_CRASH, 9301, "worker-compiler-crash", "the compiler crashed (died of a signal) while compiling the job") \
    X(CV_E_WORKER_COMPILER_EXIT, 9302, "worker-compiler-exit", "the compiler process exited without reporting a result") \
    X(CV_E_WORKER_JOB_TIMEOUT, 9303, "worker-job-timeout", "the compile ran past the job's wall-clock limit and was killed") \
    X(CV_E_WORKER_CPU_LIMIT, 9304, "worker-cpu-limit", "the compile ran past its CPU-time limit and was killed") \
    X(CV_E_WORKER_OUT_OF_MEMORY, 9305, "worker-out-of-memory", "the compile ran out of memory (its memory limit, or the machine's)") \
    X(CV_E_WORKER_MODEL_MISSING, 9306, "worker-model-missing", "the job's model file cannot be found where the worker looks for models") \
    X(CV_E_WORKER_MODEL_DIGEST, 9307, "worker-model-digest", "the model file found differs from the one the job was planned for") \
    X(CV_E_WORKER_SPAWN_FAILED, 9308, "worker-spawn-failed", "the worker could not start the compile (fork, pipe, scratch directory)") \
    X(CV_E_WORKER_BAD_RESULT, 9309, "worker-bad-result", "the compile process reported a malformed result") \
    X(CV_E_WORKER_BAD_OPTIONS, 9310, "worker-bad-options", "a worker option is invalid (queue URL, limits), or the cache is off") \
    X(CV_E_BUILD_CACHE_INCONSISTENT, 9311, "build-cache-inconsistent", "an L1 cache entry disagrees with what the front end produces now; it was replaced") \
    X(CV_E_BUILD_BAD_ARTIFACT, 9312, "build-bad-artifact", "the artifact directory the backend wrote cannot be stored in the cache") \
    X(CV_E_GLOB_ESCAPES, 9313, "glob-escapes", "a file pattern from a repository is absolute or climbs with `..` out of its directory") \
    X(CV_E_CACHE_AC_SIGNATURE, 9314, "cache-ac-signature", "an action entry from the remote cache is unsigned or its signature is not good; refused") \
    X(CV_E_CACHE_AC_KEY, 9315, "cache-ac-key", "an action-cache signing or verify key cannot be read or is not an Ed25519 key in PEM") \
    X(CV_E_WORKER_COMPILER_KILLED, 9316, "worker-compiler-killed", "the compile was killed (SIGKILL) from outside with no sign of running out of memory; retried") \
    X(CV_E_SERVE_START_FAILED, 9401, "serve-start-failed", "cuvil serve could not start (listen address, port in use, model repository)") \
    X(CV_E_SERVE_BAD_CONFIG, 9402, "serve-bad-config", "a model's config.yaml in the model repository is malformed or holds a value out of range") \
    X(CV_E_SERVE_MODEL_LOAD, 9403, "serve-model-load", "a model version in the model repository cannot be loaded (no artifact, a bad manifest, a CPU it cannot run on)") \
    X(CV_E_SERVE_BAD_REQUEST, 9410, "serve-bad-request", "an inference request is malformed: not JSON, a field of the wrong type, an unknown output") \
    X(CV_E_SERVE_BAD_TENSOR, 9411, "serve-bad-tensor", "an input tensor does not match the model: unknown or missing name, wrong datatype, shape or element count") \
    X(CV_E_SERVE_UNKNOWN_MODEL, 9412, "serve-unknown-model", "the model (or the version) named in the path is not served") \
    X(CV_E_SERVE_NOT_FOUND, 9413, "serve-not-found", "no endpoint at this path, or not for this method") \
    X(CV_E_SERVE_TOO_LARGE, 9414, "serve-too-large", "the request body or a tensor is larger than the server's limit (--max-body, --max-tensor)") \
    X(CV_E_SERVE_QUEUE_FULL, 9415, "serve-queue-full", "the model's request queue is full (max_queue_size): retry after the time in Retry-After") \
    X(CV_E_SERVE_RUN_FAILED, 9416, "serve-run-failed", "the model failed to run on the request's inputs") \
    X(CV_E_SERVE_UNAVAILABLE, 9417, "serve-unavailable", "the server is shutting down or has too many connections") \
    X(CV_E_SERVE_TRUNCATED, 9418, "serve-truncated", "the binary tensor data after the JSON header is shorter or longer than the inputs' binary_data_size say") \
    X(CV_E_SERVE_BAD_NAME, 9419, "serve-bad-name", "a model name in a repository request or folder is not 1 to 64 of [A-Za-z0-9_.-] not starting with '.' (no '/', '..', non-ASCII or control bytes)")

/* clang-format on */

#endif
