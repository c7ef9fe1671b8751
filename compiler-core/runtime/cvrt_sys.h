/* The few libc and pthread functions the runtime calls, declared here
 * rather than included, so that the runtime's bitcode builds for every
 * target without that target's sysroot.  pthread objects are kept in
 * storage at least as large and aligned as glibc's on x86-64, AArch64 and
 * RISC-V (40-48 bytes, 8-byte aligned) and only ever touched through
 * pthread_*_init'ed pointers. */
#ifndef CVRT_SYS_H
#define CVRT_SYS_H

#include <stddef.h>

typedef unsigned long cvrt_thread_t;    /* pthread_t on glibc */
typedef union cvrt_mutex { char b[64]; long long align; } cvrt_mutex;
typedef union cvrt_cond { char b[64]; long long align; } cvrt_cond;

int pthread_create(cvrt_thread_t *t, const void *attr, void *(*start)(void *), void *arg);
int pthread_join(cvrt_thread_t t, void **ret);
int pthread_mutex_init(cvrt_mutex *m, const void *attr);
int pthread_mutex_destroy(cvrt_mutex *m);
int pthread_mutex_lock(cvrt_mutex *m);
int pthread_mutex_unlock(cvrt_mutex *m);
int pthread_cond_init(cvrt_cond *c, const void *attr);
int pthread_cond_destroy(cvrt_cond *c);
int pthread_cond_wait(cvrt_cond *c, cvrt_mutex *m);
int pthread_cond_broadcast(cvrt_cond *c);
int sched_yield(void);

void *calloc(size_t n, size_t size);
void free(void *p);
int posix_memalign(void **p, size_t align, size_t size);

/* struct timespec of every LP64 Linux target. */
struct cvrt_timespec { long sec, nsec; };
int clock_gettime(int clock, struct cvrt_timespec *ts);
#define CVRT_CLOCK_MONOTONIC 1

#endif
