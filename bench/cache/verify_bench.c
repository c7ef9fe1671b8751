/* What checking an entry on every GET costs `cuvil cache serve` (issue 25):
 * per entry size, the time to send a file that is in the page cache with
 * sendfile alone (the old path for an entry verified once before: nothing
 * is checked), after reading it once through XXH3-64 (the path now: the
 * header's checksum, cache/cas_stream.c), and after reading it once
 * through SHA-256 (the alternative: the entry's name).  Side by side, with
 * each one's cost per GET and as a ratio to sendfile alone.  The sink is a
 * TCP connection over 127.0.0.1 drained by a thread, as a client would.
 *
 *   verify_bench [DIR] [MAX_MIB]        (bench/cache/verify.sh builds it) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

enum { STEP = 256 * 1024 };

static int pipe_w;

static void *drain(void *arg)
{
    int fd = *(int *)arg;
    static char buf[1 << 20];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void send_file(int fd, size_t n)
{
    off_t off = 0;
    while ((size_t)off < n)
        if (sendfile(pipe_w, fd, &off, n - (size_t)off) <= 0)
            exit(1);
}

typedef enum { NONE, XXH, SHA } check;

static uint64_t one_get(int fd, size_t n, check c, uint8_t *buf)
{
    uint64_t h = 0;
    if (c == XXH) {
        XXH3_state_t *s = XXH3_createState();
        XXH3_64bits_reset(s);
        for (size_t off = 0; off < n; off += STEP) {
            size_t k = n - off < STEP ? n - off : STEP;
            if (pread(fd, buf, k, (off_t)off) != (ssize_t)k)
                exit(1);
            XXH3_64bits_update(s, buf, k);
        }
        h = XXH3_64bits_digest(s);
        XXH3_freeState(s);
    } else if (c == SHA) {
        SHA256_CTX s;
        uint8_t md[32];
        SHA256_Init(&s);
        for (size_t off = 0; off < n; off += STEP) {
            size_t k = n - off < STEP ? n - off : STEP;
            if (pread(fd, buf, k, (off_t)off) != (ssize_t)k)
                exit(1);
            SHA256_Update(&s, buf, k);
        }
        SHA256_Final(md, &s);
        memcpy(&h, md, sizeof h);
    }
    send_file(fd, n);
    return h;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    size_t max_mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    int ls = socket(AF_INET, SOCK_STREAM, 0), p[2];
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) != 0)
        return 1;
    p[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(p[1], (struct sockaddr *)&a, sizeof a) != 0 || (p[0] = accept(ls, NULL, NULL)) < 0)
        return 1;
    pipe_w = p[1];
    pthread_t t;
    pthread_create(&t, NULL, drain, &p[0]);
    uint8_t *buf = malloc(STEP);
    static const size_t sizes[] = {4096, 100 * 1024, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
    printf("%10s %10s | %12s %12s %12s | %8s %8s\n", "entry", "GETs", "sendfile us",
           "+XXH3 us", "+SHA-256 us", "XXH3 x", "SHA x");
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        if (n > max_mib << 20)
            break;
        char path[4096];
        snprintf(path, sizeof path, "%s/verify-bench-%zu", dir, n);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        uint8_t *data = malloc(n);
        for (size_t k = 0; k < n; k++)
            data[k] = (uint8_t)(k * 2654435761u >> 13);
        if (fd < 0 || write(fd, data, n) != (ssize_t)n)
            return 1;
        free(data);
        unlink(path);
        int reps = (int)(((size_t)512 << 20) / n);
        reps = reps < 3 ? 3 : reps > 20000 ? 20000 : reps;
        double best[3] = {1e9, 1e9, 1e9};
        for (int round = 0; round < 5; round++)   /* interleaved, best of 5 */
            for (int c = NONE; c <= SHA; c++) {
                double t0 = now_s();
                for (int r = 0; r < reps; r++)
                    sink += one_get(fd, n, (check)c, buf);
                double us = (now_s() - t0) / reps * 1e6;
                if (us < best[c])
                    best[c] = us;
            }
        char size[32];
        if (n >= 1 << 20)
            snprintf(size, sizeof size, "%zu MiB", n >> 20);
        else
            snprintf(size, sizeof size, "%zu KiB", n >> 10);
        printf("%10s %10d | %12.1f %12.1f %12.1f | %7.2fx %7.2fx\n", size, reps, best[NONE],
               best[XXH], best[SHA], best[XXH] / best[NONE], best[SHA] / best[NONE]);
        close(fd);
    }
    close(p[1]);
    pthread_join(t, NULL);
    (void)sink;
    free(buf);
    return 0;
}
