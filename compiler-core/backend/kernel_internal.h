/* Internal to the backend: program construction shared by kernel.c,
 * program.c and the backends. */
#ifndef CV_BACKEND_KERNEL_INTERNAL_H
#define CV_BACKEND_KERNEL_INTERNAL_H

#include "compiler-core/backend/kernel.h"

/* Zeroed memory in the program's arena; sets p->oom and returns NULL when
 * allocation fails. */
void *cv_kp_alloc(cv_kprog *p, size_t size);
/* Records a misuse of the kernel API (reported as an internal error). */
void cv_kp_bug(cv_codegen_ctx *c, const char *what);
/* The kernel slot bound to t's storage (added on first use). */
int cv_k_slot(cv_codegen_ctx *c, const cv_kten *t, bool write);
/* The storage a view ultimately reads (itself when not a view). */
int cv_kp_root(const cv_kprog *p, int store);
/* Adds a storage; returns its id or -1. */
int cv_kp_add_store(cv_kprog *p, const cv_kstore *s);

#endif
