/* Large and hostile bodies, both ways (issue 25): the remote client
 * spools a response to disk with a cap and hashes it on the way (against
 * a real `cuvil cache serve` and a hostile server written here), and the
 * server checks every entry it sends (bits rotted in place under an
 * unchanged file identity) and streams compressed entries instead of
 * decoding them whole per GET (its peak memory with 10 concurrent GETs).
 * Peak memory is the kernel's VmHWM of the process concerned. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/remote.h"
#include "tests/support/cache_testlib.h"

static const char *bin(void)
{
    const char *b = getenv("CUVIL_BIN");
    return b && *b && access(b, X_OK) == 0 ? b : NULL;
}

/* Peak resident memory of pid ("self" when 0), in KiB. */
static long hwm_kb(pid_t pid)
{
    char path[64], line[256];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/status");
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* Resets pid's peak to its current resident size. */
static void hwm_reset(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)(pid ? pid : getpid()));
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

/* Text-like bytes zstd shrinks about threefold, not to nothing. */
static void fill_words(char *buf, size_t n, unsigned seed)
{
    static const char *const words[] = {"tensor ", "matmul ", "relu ", "kernel ", "weights ",
                                        "bias ", "layer ", "conv2d ", "softmax ", "gelu "};
    unsigned x = seed * 2654435761u + 7;
    size_t i = 0;
    while (i < n) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        const char *w = (x & 3) == 0 ? NULL : words[x % 10];
        if (!w) { /* a little noise */
            buf[i++] = (char)('a' + (x >> 8) % 26);
            continue;
        }
        for (; *w && i < n; w++)
            buf[i++] = *w;
    }
}

/* ---------------------------------------------------- a real cache serve */

typedef struct served {
    pid_t pid;
    char url[64];
    char *dir, *store, *log;
} served;

/* What a failed test leaves for its teardown to stop and unmount. */
static served *g_running;
static char *g_mounted;

/* Starts `cuvil cache serve` on store (NULL: one in a fresh directory). */
static void serve_start(served *s, const char *store, const char *zstd)
{
    g_running = s;
    s->dir = cv_tmpdir_make("cache-stream");
    s->store = store ? strdup(store) : cv_tmpdir_path(s->dir, "store");
    s->log = cv_tmpdir_path(s->dir, "serve.log");
    const char *argv[] = {bin(), "cache", "serve", "--listen", "127.0.0.1:0", "--dir", s->store,
                          "--threads", "4", "--max-request", "1G", "--zstd-level", zstd, NULL};
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 300 && !port; i++) {
        size_t len;
        char *text = cv_tmpdir_read_file(s->log, &len);
        const char *p = text ? strstr(text, "port ") : NULL;
        port = p ? atoi(p + 5) : 0;
        free(text);
        if (!port)
            usleep(20000);
    }
    assert_true(port > 0);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", port);
}

static void serve_stop(served *s)
{
    g_running = NULL;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    free(s->store);
    free(s->log);
    cv_tmpdir_remove(s->dir); /* frees it */
}

static cv_remote *client_max(const char *url, uint64_t max_get)
{
    cv_remote_options o = {.url = url, .timeout_ms = 20000, .max_get = max_get};
    cv_remote *r = NULL;
    assert_int_equal(cv_cache_remote_open(&o, &r, NULL), 0);
    return r;
}

/* PUTs blob through the client; *dg receives its name. */
static void put_blob(const served *s, const char *blob, size_t n, cv_digest *dg)
{
    cv_cache_sha256(blob, n, dg);
    cv_remote *r = client_max(s->url, 0);
    assert_int_equal(cv_cache_remote_put(r, CV_CAS_BLOB, dg, blob, n, NULL), 0);
    cv_cache_remote_close(r);
}

static void blob_path(const served *s, const cv_digest *dg, char *out, size_t cap)
{
    char hex[65];
    cv_cache_digest_hex(dg, hex);
    snprintf(out, cap, "%s/cas/%.2s/%s", s->store, hex, hex);
}

/* ------------------------------------------------- the client's memory */

/* What a GET through a fresh client did, measured in a child process. */
typedef struct probe {
    int rc;
    int code;          /* the first diagnostic's, or 0 */
    long grew_kb;      /* peak resident growth during the GET */
    uint64_t len;
    bool same;         /* the body equals `expect` */
} probe;

static probe get_in_child(const char *url, uint64_t max_get, const cv_digest *dg,
                          const char *expect, size_t expect_len, bool to_file)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        cv_remote *r = client_max(url, max_get);
        cv_diag d;
        cv_diag_init(&d);
        probe out = {0};
        hwm_reset(0);
        long before = hwm_kb(0);
        if (to_file) {
            int fd = -1;
            out.rc = cv_cache_remote_get_blob_file(r, dg, &fd, &out.len, &d);
            out.grew_kb = hwm_kb(0) - before;
            if (fd >= 0) {
                char *back = malloc(out.len ? out.len : 1);
                out.same = pread(fd, back, out.len, 0) == (ssize_t)out.len &&
                           out.len == expect_len && memcmp(back, expect, expect_len) == 0;
                free(back);
                close(fd);
            }
        } else {
            void *data = NULL;
            size_t len = 0;
            out.rc = cv_cache_remote_get(r, CV_CAS_BLOB, dg, &data, &len, &d);
            out.grew_kb = hwm_kb(0) - before;
            out.len = len;
            out.same = data && len == expect_len && memcmp(data, expect, len) == 0;
            free(data);
        }
        out.code = d.n ? d.v[0].code : 0;
        (void)!write(p[1], &out, sizeof out);
        _exit(0);
    }
    close(p[1]);
    probe out = {.rc = 99};
    assert_int_equal(read(p[0], &out, sizeof out), (ssize_t)sizeof out);
    close(p[0]);
    waitpid(pid, NULL, 0);
    return out;
}

/* A real server: a large blob comes to a file with the client's memory
 * flat, and to memory with exactly its size. */
static void test_remote_spools_real_server(void **state)
{
    (void)state;
    if (!bin())
        skip();
    static served s; /* static: the teardown may stop it after a failed assert */
    serve_start(&s, NULL, "0");
    size_t n = (size_t)32 << 20;
    char *blob = malloc(n);
    tcu_fill(blob, n, 25);
    cv_digest dg;
    put_blob(&s, blob, n, &dg);
    probe f = get_in_child(s.url, 0, &dg, blob, n, true);
    assert_int_equal(f.rc, CV_REMOTE_FOUND);
    assert_true(f.same);
    fprintf(stderr, "  32 MiB blob to a file: client peak grew %ld KiB\n", f.grew_kb);
    assert_true(f.grew_kb < 16 * 1024);
    probe m = get_in_child(s.url, 0, &dg, blob, n, false);
    assert_int_equal(m.rc, CV_REMOTE_FOUND);
    assert_true(m.same);
    fprintf(stderr, "  32 MiB blob to memory: client peak grew %ld KiB\n", m.grew_kb);
    assert_true(m.grew_kb < 32 * 1024 + 16 * 1024);   /* the body once, no doubling */
    /* a cap below the body: refused, nothing handed over */
    probe c = get_in_child(s.url, (uint64_t)1 << 20, &dg, blob, n, true);
    assert_int_equal(c.rc, CV_REMOTE_ERROR);
    assert_int_equal(c.code, 9114);
    free(blob);
    serve_stop(&s);
}

/* ------------------------------------------------------ a hostile server */

typedef enum { H_MORE, H_WRONG, H_ENDLESS, H_HUGE } hmode;

typedef struct hostile {
    int sock;
    pthread_t t;
    atomic_int mode;
    atomic_bool stop;
    const char *blob;
    size_t len;
    char url[64];
} hostile;

static bool send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static void hostile_answer(hostile *h, int fd)
{
    char req[8192];
    size_t got = 0;
    while (got < sizeof req - 1) {  /* the request's headers */
        ssize_t n = recv(fd, req + got, sizeof req - 1 - got, 0);
        if (n <= 0)
            return;
        got += (size_t)n;
        req[got] = 0;
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    char head[256];
    int mode = atomic_load(&h->mode);
    if (mode == H_ENDLESS) {        /* no length, no end */
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
        send_all(fd, head, strlen(head));
        char junk[65536];
        memset(junk, 'x', sizeof junk);
        while (!atomic_load(&h->stop) && send_all(fd, junk, sizeof junk))
            ;
        return;
    }
    if (mode == H_HUGE) {           /* promises a terabyte, sends a little */
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n\r\n",
                 1ULL << 40);
        send_all(fd, head, strlen(head));
        send_all(fd, h->blob, h->len);
        usleep(500000);
        return;
    }
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", h->len);
    send_all(fd, head, strlen(head));
    if (mode == H_WRONG) {          /* the promised length, other bytes */
        char *other = malloc(h->len);
        memcpy(other, h->blob, h->len);
        other[h->len / 2] ^= 1;
        send_all(fd, other, h->len);
        free(other);
        return;
    }
    send_all(fd, h->blob, h->len);  /* H_MORE: the blob, then more than promised */
    char extra[4096];
    memset(extra, 'E', sizeof extra);
    for (int i = 0; i < 256; i++)
        send_all(fd, extra, sizeof extra);
}

static void *hostile_main(void *arg)
{
    hostile *h = arg;
    while (!atomic_load(&h->stop)) {
        int fd = accept(h->sock, NULL, NULL);
        if (fd < 0)
            continue;
        struct timeval tv = {5, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (!atomic_load(&h->stop))
            hostile_answer(h, fd);
        close(fd);
    }
    return NULL;
}

static void hostile_start(hostile *h, const char *blob, size_t len)
{
    h->blob = blob;
    h->len = len;
    h->sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(h->sock, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(h->sock, 16), 0);
    socklen_t al = sizeof a;
    getsockname(h->sock, (struct sockaddr *)&a, &al);
    snprintf(h->url, sizeof h->url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    assert_int_equal(pthread_create(&h->t, NULL, hostile_main, h), 0);
}

static void hostile_stop(hostile *h)
{
    atomic_store(&h->stop, true);
    shutdown(h->sock, SHUT_RDWR);   /* wakes accept */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)atoi(strrchr(h->url, ':') + 1))};
    connect(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    pthread_join(h->t, NULL);
    close(h->sock);
}

static void test_remote_hostile(void **state)
{
    (void)state;
    size_t n = 100000;
    char *blob = malloc(n);
    tcu_fill(blob, n, 7);
    cv_digest dg;
    cv_cache_sha256(blob, n, &dg);
    hostile h = {0};
    hostile_start(&h, blob, n);

    /* more than promised: the promised bytes are the blob, the rest ignored */
    atomic_store(&h.mode, H_MORE);
    probe p = get_in_child(h.url, 0, &dg, blob, n, false);
    assert_int_equal(p.rc, CV_REMOTE_FOUND);
    assert_true(p.same);
    /* the promised length with other bytes: refused by its digest */
    atomic_store(&h.mode, H_WRONG);
    p = get_in_child(h.url, 0, &dg, blob, n, false);
    assert_int_equal(p.rc, CV_REMOTE_ERROR);
    assert_int_equal(p.code, 9116);
    p = get_in_child(h.url, 0, &dg, blob, n, true);
    assert_int_equal(p.rc, CV_REMOTE_ERROR);
    assert_int_equal(p.code, 9116);
    /* announced far over the cap: refused before the body is read */
    atomic_store(&h.mode, H_HUGE);
    p = get_in_child(h.url, (uint64_t)64 << 20, &dg, blob, n, false);
    assert_int_equal(p.rc, CV_REMOTE_ERROR);
    assert_int_equal(p.code, 9114);
    /* an endless body: cut at the cap, the client's memory flat */
    atomic_store(&h.mode, H_ENDLESS);
    p = get_in_child(h.url, (uint64_t)96 << 20, &dg, blob, n, false);
    fprintf(stderr, "  endless body, cap 96 MiB: client peak grew %ld KiB\n", p.grew_kb);
    assert_int_equal(p.rc, CV_REMOTE_ERROR);
    assert_int_equal(p.code, 9114);
    assert_true(p.grew_kb < 16 * 1024);
    hostile_stop(&h);
    free(blob);
}

/* ------------------------------------------- bits rotted on the server */

/* The physical byte offset of file offset `off` of path on its device. */
static long long physical_offset(const char *path, long long off)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    char buf[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
    struct fiemap *fm = (struct fiemap *)buf;
    memset(buf, 0, sizeof buf);
    fm->fm_start = (uint64_t)off;
    fm->fm_length = 1;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = 1;
    long long phys = -1;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) == 0 && fm->fm_mapped_extents == 1)
        phys = (long long)(fm->fm_extents[0].fe_physical + (uint64_t)off -
                           fm->fm_extents[0].fe_logical);
    close(fd);
    return phys;
}

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd);
}

typedef struct sink {
    cv_cache_hasher *h;
    size_t len;
} sink;

static size_t hash_body(char *p, size_t sz, size_t n, void *ctx)
{
    sink *k = ctx;
    cv_cache_hasher_update(k->h, p, sz * n);
    k->len += sz * n;
    return sz * n;
}

/* GET url: the status (or minus the curl error), the body's digest and length. */
static long http_get(const char *url, cv_digest *body_digest, size_t *len)
{
    sink k = {cv_cache_hasher_new(), 0};
    CURL *c = curl_easy_init();
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hash_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &k);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    else
        status = -(long)rc;
    cv_cache_hasher_final(k.h, body_digest);
    *len = k.len;
    curl_easy_cleanup(c);
    cv_cache_hasher_free(k.h);
    return status;
}

/* A stored blob whose bytes change on the disk itself (the file's inode,
 * size, mtime and ctime all unchanged: what bit rot looks like) is never
 * served with 200 again, though it was served and checked before.  The
 * store is on an ext4 image mounted through a loop device so that the
 * test can write under the file system; root only. */
static void test_bitrot_never_served(void **state)
{
    (void)state;
    if (!bin() || geteuid() != 0 || access("/dev/loop-control", F_OK) != 0 ||
        system("command -v mkfs.ext4 >/dev/null 2>&1") != 0)
        skip();
    char *dir = cv_tmpdir_make("cache-bitrot");
    char *img = cv_tmpdir_path(dir, "disk.img"), *mnt = cv_tmpdir_path(dir, "mnt");
    mkdir(mnt, 0755);
    int fd = open(img, O_RDWR | O_CREAT, 0644);
    assert_int_equal(ftruncate(fd, 32 << 20), 0);
    close(fd);
    g_mounted = mnt;
    if (sh("mkfs.ext4 -q -F %s >/dev/null 2>&1%s", img, "") != 0 ||
        sh("mount -o loop %s %s 2>/dev/null", img, mnt) != 0) {
        g_mounted = NULL;
        free(img);
        free(mnt);
        cv_tmpdir_remove(dir);
        skip();
    }
    char *store = cv_tmpdir_path(mnt, "store");
    static served s; /* static: the teardown may stop it after a failed assert */
    serve_start(&s, store, "0");
    free(store);

    size_t n = 256 * 1024;
    char *blob = malloc(n);
    tcu_fill(blob, n, 3);
    cv_digest dg, got;
    put_blob(&s, blob, n, &dg);
    char hex[65], url[256], path[4096];
    cv_cache_digest_hex(&dg, hex);
    snprintf(url, sizeof url, "%s/cas/%s", s.url, hex);
    blob_path(&s, &dg, path, sizeof path);
    size_t len = 0;
    assert_int_equal(http_get(url, &got, &len), 200); /* served, checked */
    assert_true(cv_cache_digest_eq(&got, &dg));

    /* flip a payload byte under the file system, then drop the file's
     * cached pages so that the next read comes from the "disk" */
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    long long phys = physical_offset(path, before.st_size - 1000);
    assert_true(phys > 0);
    int ifd = open(img, O_RDWR);
    unsigned char c;
    assert_int_equal(pread(ifd, &c, 1, phys), 1);
    c ^= 0x40;
    assert_int_equal(pwrite(ifd, &c, 1, phys), 1);
    fsync(ifd);
    close(ifd);
    int bfd = open(path, O_RDONLY);
    posix_fadvise(bfd, 0, 0, POSIX_FADV_DONTNEED);
    unsigned char now;
    assert_int_equal(pread(bfd, &now, 1, before.st_size - 1000), 1);
    close(bfd);
    assert_int_equal(now, c);                     /* the file reads the rotted byte */
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino); /* and looks the same */
    assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    assert_int_equal(after.st_ctim.tv_sec, before.st_ctim.tv_sec);
    assert_int_equal(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);

    for (int i = 0; i < 2; i++) {
        long st = http_get(url, &got, &len);
        if (st == 200)
            assert_true(cv_cache_digest_eq(&got, &dg)); /* never 200 with bad bytes */
        assert_int_not_equal(st, 200);                  /* here: removed, 404 */
    }
    serve_stop(&s);
    sh("umount %s%s", mnt, "");
    g_mounted = NULL;
    free(blob);
    free(img);
    free(mnt);
    cv_tmpdir_remove(dir);
}

/* ---------------------------------- a compressed store's GETs in parallel */

typedef struct getter {
    pthread_t t;
    const char *url;
    cv_digest got;
    size_t len;
    long status;
} getter;

static void *getter_main(void *arg)
{
    getter *g = arg;
    g->status = http_get(g->url, &g->got, &g->len);
    return NULL;
}

/* 10 concurrent GETs of a large compressed blob: the server's peak memory
 * grows by far less than ten decoded copies; every body is whole.  Then
 * the entry's compressed bytes are damaged: a GET never gets a whole 200
 * body, and the one after is a 404. */
static void test_zstd_gets_stream(void **state)
{
    (void)state;
    if (!bin())
        skip();
    static served s; /* static: the teardown may stop it after a failed assert */
    serve_start(&s, NULL, "3");
    size_t n = (size_t)32 << 20;
    char *blob = malloc(n);
    fill_words(blob, n, 11);
    cv_digest dg;
    put_blob(&s, blob, n, &dg);
    char path[4096], hex[65], url[256];
    blob_path(&s, &dg, path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((size_t)st.st_size < n / 2);     /* stored compressed */
    cv_cache_digest_hex(&dg, hex);
    snprintf(url, sizeof url, "%s/cas/%s", s.url, hex);

    usleep(300000);
    hwm_reset(s.pid);
    long before = hwm_kb(s.pid);
    getter g[10];
    for (int i = 0; i < 10; i++) {
        g[i] = (getter){.url = url};
        assert_int_equal(pthread_create(&g[i].t, NULL, getter_main, &g[i]), 0);
    }
    for (int i = 0; i < 10; i++) {
        pthread_join(g[i].t, NULL);
        assert_int_equal(g[i].status, 200);
        assert_int_equal(g[i].len, n);
        assert_true(cv_cache_digest_eq(&g[i].got, &dg));
    }
    long grew = hwm_kb(s.pid) - before;
    fprintf(stderr, "  10 concurrent GETs of a 32 MiB zstd entry: server peak grew %ld MiB\n",
            grew / 1024);
    assert_true(grew < 120 * 1024);             /* ten decoded copies: 320 MiB */

    int fd = open(path, O_RDWR);                /* damage near the end */
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, st.st_size - 100), 1);
    c ^= 0xff;
    assert_int_equal(pwrite(fd, &c, 1, st.st_size - 100), 1);
    close(fd);
    cv_digest got;
    size_t len = 0;
    long status = http_get(url, &got, &len);
    assert_false(status == 200 && len == n);     /* cut short or refused */
    if (status == 200)
        assert_false(cv_cache_digest_eq(&got, &dg) && len == n);
    usleep(300000);
    assert_int_equal(http_get(url, &got, &len), 404);
    free(blob);
    serve_stop(&s);
}

/* After a test that failed half-way: no server left running, no mount. */
static int cleanup(void **state)
{
    (void)state;
    if (g_running)
        serve_stop(g_running);
    if (g_mounted)
        sh("umount %s%s", g_mounted, "");
    g_mounted = NULL;
    return 0;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_remote_spools_real_server, cleanup),
        cmocka_unit_test_teardown(test_remote_hostile, cleanup),
        cmocka_unit_test_teardown(test_bitrot_never_served, cleanup),
        cmocka_unit_test_teardown(test_zstd_gets_stream, cleanup),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
