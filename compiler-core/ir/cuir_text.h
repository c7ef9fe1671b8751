/* Internal to compiler-core/ir: lexical rules and number spelling shared by
 * the CU-IR parser (parse.c) and printer (print.c), so that what one writes
 * the other reads back bit for bit. */
#ifndef CV_IR_CUIR_TEXT_H
#define CV_IR_CUIR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/dtype.h"

/* Nesting deeper than this in one line is CV1007 (valid CU-IR needs 3). */
#define CV_CUIR_MAX_DEPTH 64
/* Inputs larger than this are CV1011. */
#define CV_CUIR_MAX_INPUT ((size_t)1 << 30)
/* Syntax errors reported before the parser gives up. */
#define CV_CUIR_MAX_ERRORS 50

/* A %value or @model name written without quotes: [A-Za-z0-9_.]+ */
bool cv_cuir_is_bare_name(const char *s);
/* An identifier (symbolic dimension, op or attribute name): [A-Za-z_][A-Za-z0-9_.]* */
bool cv_cuir_is_ident(const char *s);

/* The shortest spelling of element v of type t (f32, f16, bf16; CV_F64 for
 * attribute floats) that reads back through strtod and cv_dtype_store to the
 * same bits; always has a '.' or an exponent, or is inf, -inf or nan. */
void cv_cuir_format_float(cv_dtype t, double v, char *buf, size_t size);

#endif
