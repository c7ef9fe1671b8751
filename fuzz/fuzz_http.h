/* Shared by the HTTP fuzz targets: raw request bytes go to a running
 * libmicrohttpd daemon through one end of a socketpair (MHD_add_connection),
 * so the bytes meet MHD's parser and then the server's own handlers, with
 * no TCP port and no TIME_WAIT pile-up; and a scratch directory on tmpfs
 * that is removed at exit.  Header-only: each fuzz target is one .c. */
#ifndef CV_FUZZ_HTTP_H
#define CV_FUZZ_HTTP_H

#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

typedef __typeof__(MHD_add_connection) fuzz_add_connection_fn;

/* MHD_add_connection from the libmicrohttpd common/netlib.c loaded. */
static fuzz_add_connection_fn *fuzz_http_add_fn(void)
{
    static fuzz_add_connection_fn *fn;
    if (!fn) {
        void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            h = dlopen("libmicrohttpd.so.12", RTLD_NOW);
        fn = h ? (fuzz_add_connection_fn *)dlsym(h, "MHD_add_connection") : NULL;
        if (!fn) {
            fprintf(stderr, "fuzz: no MHD_add_connection\n");
            abort();
        }
    }
    return fn;
}

/* How long the daemon may keep a connection open after the client's end of
 * input.  It must close at once; the bound only allows for a loaded
 * machine.  libmicrohttpd's epoll mode used to miss an end of input that
 * arrived with the request (both servers use poll since), which is what
 * this catches: such a connection would be held for the server's timeout. */
#define FUZZ_HTTP_CLOSE_MS 5000

/* Sends the bytes, closes the sending side, and reads the answer until the
 * daemon closes the connection; aborts when it does not within
 * FUZZ_HTTP_CLOSE_MS.  Returns the answer's length, of which at most cap
 * bytes are kept in out (NUL-terminated). */
static size_t fuzz_http_exchange(struct MHD_Daemon *daemon, const void *data, size_t size,
                                 char *out, size_t cap)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    int big = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(40000),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    /* The whole request and its end are queued before the daemon sees the
     * connection, as a client's bytes and FIN arrive together over TCP
     * (an input larger than the socket buffer, far above the -max_len the
     * scripts use, is cut where the buffer is full). */
    size_t sent = 0, got = 0;
    while (sent < size) {
        ssize_t n = send(sv[0], (const char *)data + sent, size - sent, MSG_DONTWAIT);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    shutdown(sv[0], SHUT_WR);
    if (fuzz_http_add_fn()(daemon, sv[1], (const struct sockaddr *)&peer, sizeof peer) != MHD_YES) {
        close(sv[0]); /* MHD closed sv[1] */
        if (cap)
            out[0] = '\0';
        return 0;
    }
    for (;;) {
        struct pollfd p = {.fd = sv[0], .events = POLLIN};
        int ready = poll(&p, 1, FUZZ_HTTP_CLOSE_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            fprintf(stderr, "fuzz: the server kept the connection open %d ms after the end of "
                    "its input\n", FUZZ_HTTP_CLOSE_MS);
            abort();
        }
        char buf[16384];
        ssize_t n = read(sv[0], buf, sizeof buf);
        if (n <= 0)
            break;
        if (got < cap) {
            size_t k = (size_t)n < cap - got ? (size_t)n : cap - got;
            memcpy(out + got, buf, k);
        }
        got += (size_t)n;
    }
    if (cap)
        out[got < cap ? got : cap - 1] = '\0';
    close(sv[0]);
    return got;
}

/* ---- a scratch directory on tmpfs, removed at exit */

static char fuzz_scratch[256];

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void fuzz_scratch_remove(void)
{
    if (fuzz_scratch[0])
        nftw(fuzz_scratch, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *fuzz_scratch_dir(const char *tag)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_scratch, sizeof fuzz_scratch, "%s/cuvil-%s-XXXXXX", base, tag);
    if (!mkdtemp(fuzz_scratch))
        abort();
    atexit(fuzz_scratch_remove);
    return fuzz_scratch;
}

/* The status code of an HTTP/1.x answer, 0 when there is none. */
static int fuzz_http_status(const char *answer)
{
    if (strncmp(answer, "HTTP/1.", 7) != 0 || strlen(answer) < 12)
        return 0;
    return atoi(answer + 9);
}

#endif
