/* bench/serve's load generator: C clients on keep-alive connections, each
 * sending one Open Inference Protocol request (a body file made by run.sh)
 * back to back for a fixed time; prints one JSON line: requests, errors,
 * requests/s and latency percentiles in milliseconds.
 *   loadgen PORT PATH BODY_FILE HEADER_LEN CLIENTS SECONDS */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;
static const char *path;
static char *body, head[512];
static size_t body_len, head_len;
static double stop_at;

typedef struct worker {
    pthread_t t;
    double *lat;
    size_t n, cap, errors;
} worker;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One answer: its status, -1 when the connection broke. */
static int read_answer(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    char *end = NULL;
    while (!end) {
        ssize_t k = recv(fd, buf + len, cap - len - 1, 0);
        if (k <= 0)
            return -1;
        len += (size_t)k;
        buf[len] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    int status = 0;
    sscanf(buf, "HTTP/1.%*d %d", &status);
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0;
    size_t have = len - (size_t)(end + 4 - buf);
    while (have < want) {
        ssize_t k = recv(fd, buf, cap - 1 < want - have ? cap - 1 : want - have, 0);
        if (k <= 0)
            return -1;
        have += (size_t)k;
    }
    return status;
}

static void *run(void *arg)
{
    worker *w = arg;
    size_t cap = 1 << 22;
    char *buf = malloc(cap);
    int fd = dial();
    while (now() < stop_at) {
        if (fd < 0 && (fd = dial()) < 0) {
            w->errors++;
            usleep(1000);
            continue;
        }
        double t0 = now();
        int st = send_all(fd, head, head_len) || send_all(fd, body, body_len)
                     ? -1 : read_answer(fd, buf, cap);
        double t1 = now();
        if (st != 200) {
            w->errors++;
            if (st < 0)
                close(fd), fd = -1;
            continue;
        }
        if (w->n == w->cap)
            w->lat = realloc(w->lat, (w->cap = w->cap ? 2 * w->cap : 4096) * sizeof *w->lat);
        w->lat[w->n++] = (t1 - t0) * 1e3;
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: loadgen PORT PATH BODY_FILE HEADER_LEN CLIENTS SECONDS\n");
        return 2;
    }
    port = atoi(argv[1]);
    path = argv[2];
    FILE *f = fopen(argv[3], "rb");
    if (!f)
        return perror(argv[3]), 1;
    fseek(f, 0, SEEK_END);
    body_len = (size_t)ftell(f);
    rewind(f);
    body = malloc(body_len);
    if (fread(body, 1, body_len, f) != body_len)
        return 1;
    fclose(f);
    head_len = (size_t)snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Length: %zu\r\nInference-Header-Content-Length: %s\r\n"
                                "\r\n", path, body_len, argv[4]);
    int clients = atoi(argv[5]);
    double secs = atof(argv[6]);
    worker *w = calloc((size_t)clients, sizeof *w);
    double t0 = now();
    stop_at = t0 + secs;
    for (int i = 0; i < clients; i++)
        pthread_create(&w[i].t, NULL, run, &w[i]);
    size_t n = 0, errors = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(w[i].t, NULL);
        n += w[i].n;
        errors += w[i].errors;
    }
    double elapsed = now() - t0;
    double *all = malloc((n ? n : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
    }
    qsort(all, n, sizeof *all, cmp);
#define PCT(p) (n ? all[(size_t)((double)(n - 1) * (p))] : 0.0)
    printf("{\"clients\": %d, \"requests\": %zu, \"errors\": %zu, \"rps\": %.1f, "
           "\"p50_ms\": %.3f, \"p95_ms\": %.3f, \"p99_ms\": %.3f}\n",
           clients, n, errors, (double)n / elapsed, PCT(0.50), PCT(0.95), PCT(0.99));
    free(all);
    free(w);
    free(body);
    return 0;
}
