/* cuvil run --trace: a crash inside a kernel prints the kernel's model line.
 *
 * The map's kernels are copied, with their descriptions already formatted
 * and their ranges already relocated to where the library is loaded, into
 * static storage; the handler then only compares addresses and calls
 * write(2) (async-signal-safe), and dies of the signal as it would have. */
#include <execinfo.h>
#include <stdio.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "symbols/symbols.h"

enum { MAX_KERNELS = 2048, TEXT = 240, ALT_STACK = 1 << 16, MAX_FRAMES = 32 };

static struct {
    uintptr_t lo, hi;
    char text[TEXT];
} g_kernels[MAX_KERNELS];
static int g_n;
static char g_library[256];
static uintptr_t g_base;
static unsigned char g_stack[ALT_STACK];

typedef struct find_base {
    const char *suffix;
    uintptr_t base;
    bool found;
} find_base;

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    find_base *f = arg;
    size_t n = info->dlpi_name ? strlen(info->dlpi_name) : 0, k = strlen(f->suffix);
    if (n >= k && strcmp(info->dlpi_name + n - k, f->suffix) == 0) {
        f->base = info->dlpi_addr;
        f->found = true;
        return 1;
    }
    return 0;
}

static void put(const char *s)
{
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

static void put_hex(uintptr_t v)
{
    char buf[2 + 16 + 1];
    int i = (int)sizeof buf - 1;
    buf[i] = 0;
    do {
        buf[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v && i > 2);
    buf[--i] = 'x';
    buf[--i] = '0';
    put(buf + i);
}

static int find(uintptr_t pc)
{
    for (int k = 0; k < g_n; k++)
        if (pc >= g_kernels[k].lo && pc < g_kernels[k].hi)
            return k;
    return -1;
}

static uintptr_t fault_pc(const void *uctx)
{
    const ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#elif defined(__riscv)
    return (uintptr_t)uc->uc_mcontext.__gregs[REG_PC];
#else
    (void)uc;
    return 0;
#endif
}

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    case SIGILL: return "SIGILL (illegal instruction)";
    }
    return "signal";
}

static void on_crash(int sig, siginfo_t *si, void *uctx)
{
    (void)si;
    uintptr_t pc = fault_pc(uctx);
    int k = find(pc);
    bool caller = false;
    if (k < 0) {    /* in a runtime routine: a kernel may be further up the stack */
        void *frames[MAX_FRAMES];
        int n = backtrace(frames, MAX_FRAMES);
        for (int i = 0; i < n && k < 0; i++)
            k = find((uintptr_t)frames[i] - 1);
        caller = k >= 0;
    }
    put("\ncuvil run --trace: ");
    put(sig_name(sig));
    put(" at ");
    put_hex(pc);
    if (k >= 0) {
        put(caller ? ", called from kernel " : " in kernel ");
        put(g_kernels[k].text);
    } else {
        put(", not inside a kernel");
    }
    put("\n  address ");
    put(g_library);
    put("+");
    put_hex(pc - g_base);
    put(" (cuvil symbols --addr)\n");
    /* SA_RESETHAND restored the default action: returning re-runs the
     * faulting instruction, which now kills the process as usual. */
}

int cv_symbols_trace_install(const cv_symmap *m, const char *library_suffix)
{
    find_base f = {.suffix = library_suffix};
    dl_iterate_phdr(on_object, &f);
    if (!f.found)
        return -1;
    snprintf(g_library, sizeof g_library, "%s", library_suffix[0] == '/' ? library_suffix + 1
                                                                         : library_suffix);
    g_base = f.base;
    g_n = 0;
    for (int k = 0; k < m->n_kernels && g_n < MAX_KERNELS; k++) {
        if (m->kernels[k].hi <= m->kernels[k].lo)
            continue;
        g_kernels[g_n].lo = f.base + (uintptr_t)m->kernels[k].lo;
        g_kernels[g_n].hi = f.base + (uintptr_t)m->kernels[k].hi;
        cv_symmap_describe_kernel(m, k, g_kernels[g_n].text, TEXT);
        g_n++;
    }
    void *warm[1];
    backtrace(warm, 1);     /* loads libgcc's unwinder now, not in the handler */
    stack_t ss = {.ss_sp = g_stack, .ss_size = sizeof g_stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    return 0;
}
