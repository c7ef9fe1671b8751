/* Internal to the backend: what the symbol map, the DWARF emitter (in the
 * LLVM plugin) and the debugging builds of `cuvil diff` share. */
#ifndef CV_BACKEND_DEBUG_INTERNAL_H
#define CV_BACKEND_DEBUG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler-core/backend/kernel.h"

/* Where debug info places op `op` of p's function: its DSL file and line,
 * or, for an op located by an ONNX node name (or not at all), its line in
 * the generated listing <name>.cuir (the module as compiled, printed with
 * cv_module_print: one op per line after the header and the params).
 * *file is the module's string or `listing`. */
void cv_debug_op_line(const cv_kprog *p, int op, const char *listing, const char **file,
                      int *line, int *col);
/* Whether debug info for p needs the generated listing (some op has no
 * source line). */
bool cv_debug_needs_listing(const cv_kprog *p);

/* The artifact's symbol map (symbols/symbols.h) as JSON, malloc'd.  so: the
 * linked library's bytes (code ranges), or NULL; listing: the listing's
 * file name, or NULL. */
char *cv_debug_symmap_json(const cv_kprog *p, bool locs, const char *fingerprint,
                           const char *library, const void *so, size_t so_len,
                           const char *listing);

/* cuvil diff: makes every tensor a kernel writes (each fusion chain's last
 * result) an extra output of f, after its own.  Returns 0 or -1. */
int cv_debug_expose_values(cv_func *f);
/* Tests only: CUVIL_TEST_FAULT_OP=<op>[:crash] makes the kernel running op
 * <op> write a wrong value (or store far out of bounds).  Returns 0, or -1
 * when the variable is malformed or names no compiled op (CV5205). */
int cv_debug_plant_fault(cv_kprog *p, cv_diag *d);

#endif
