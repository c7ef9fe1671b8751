/* The Kafka queue URL and the client configuration made from it:
 *
 *   kafka://HOST[:PORT][,HOST[:PORT]...][?PARAM=VALUE&...]
 *
 * Cuvil's own parameters: topic_prefix (default "cuvil"; topics
 * <prefix>.jobs, <prefix>.results, <prefix>.dlq), group (the workers'
 * consumer group, default <prefix>.workers), results_group (the
 * controller's, default <prefix>.controller), timeout_ms (how long any call
 * waits for the cluster, default 30000), static_membership (true: each
 * worker joins the group as a static member named by its worker id, so a
 * worker restarted under the same id within session.timeout.ms gets its
 * partitions back without a rebalance; for stable ids only, e.g.
 * StatefulSet pod names).  Every other parameter is a
 * librdkafka setting passed through unchanged (`--kafka-config key=value`:
 * security.protocol, ssl.*, sasl.*, session.timeout.ms, ...), except the
 * few that the queue's delivery guarantees rest on.  Values are
 * percent-decoded; they never appear in diagnostics, since they may be
 * secrets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "queue/queue_kafka_internal.h"

#define VALUE_MAX 4096

/* Settings the at-least-once design depends on: set here, never passed
 * through.  The delivery timeout comes from timeout_ms, so that no wait for
 * a delivery report is unbounded. */
static const char *const owned[] = {
    "bootstrap.servers", "metadata.broker.list", "group.id", "group.instance.id",
    "enable.idempotence",
    "enable.auto.offset.store", "enable.auto.commit", "enable.partition.eof",
    "message.timeout.ms", "delivery.timeout.ms",
};

static int url_error(cv_diag *d, const char *what)
{
    cv_diag_error(d, CV_E_KAFKA_BAD_URL, (cv_span){0}, "kafka queue URL: %s", what);
    return -1;
}

static bool all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return false;
    return n > 0;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decodes s[0..n) into a malloc'd string; NULL if malformed. */
static char *decode(const char *s, size_t n)
{
    char *out = n < VALUE_MAX ? malloc(n + 1) : NULL;
    size_t k = 0;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
            if (lo < 0 || (hi == 0 && lo == 0)) {   /* no NUL inside a value */
                free(out);
                return NULL;
            }
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[k++] = s[i];
        }
    }
    if (out)
        out[k] = 0;
    return out;
}

static int set_own(char **field, const char *val, const char *name, cv_diag *d)
{
    if (*field) {
        char msg[64];
        snprintf(msg, sizeof msg, "'%s' is given twice", name);
        return url_error(d, msg);
    }
    *field = strdup(val);
    return *field ? 0 : url_error(d, "out of memory");
}

static int add_param(kq_url *u, char *key, char *val, cv_diag *d)
{
    char msg[160];
    if (strcmp(key, "topic_prefix") == 0) {
        if (u->prefix[0] || !all_of(val, strlen(val), ALNUM "._-") || strlen(val) > KQ_PREFIX_MAX)
            return url_error(d, "topic_prefix is 1..200 of [A-Za-z0-9._-], given once");
        snprintf(u->prefix, sizeof u->prefix, "%s", val);
        return 0;
    }
    if (strcmp(key, "group") == 0 || strcmp(key, "results_group") == 0) {
        if (!all_of(val, strlen(val), ALNUM "._-") || strlen(val) > 255)
            return url_error(d, "a group name is 1..255 of [A-Za-z0-9._-]");
        return set_own(key[0] == 'g' ? &u->group : &u->results_group, val, key, d);
    }
    if (strcmp(key, "timeout_ms") == 0) {
        char *end;
        long v = strtol(val, &end, 10);
        if (u->timeout_ms || !*val || *end || v < 100 || v > 600000)
            return url_error(d, "timeout_ms is 100..600000, given once");
        u->timeout_ms = (int)v;
        return 0;
    }
    if (strcmp(key, "static_membership") == 0) {
        bool on = strcmp(val, "true") == 0 || strcmp(val, "1") == 0;
        if (!on && strcmp(val, "false") != 0 && strcmp(val, "0") != 0)
            return url_error(d, "static_membership is true or false");
        u->static_membership = on;
        return 0;
    }
    if (!all_of(key, strlen(key), "abcdefghijklmnopqrstuvwxyz0123456789._")) {
        snprintf(msg, sizeof msg, "'%.64s' is neither a cuvil parameter nor a librdkafka setting",
                 key);
        return url_error(d, msg);
    }
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        if (strcmp(key, owned[i]) == 0) {
            cv_diag_error(d, CV_E_KAFKA_BAD_CONFIG, (cv_span){0},
                          "the Kafka setting '%s' is set by cuvil and cannot be passed through",
                          key);
            return -1;
        }
    for (int i = 0; i < u->n_props; i++)
        if (strcmp(u->keys[i], key) == 0) {
            snprintf(msg, sizeof msg, "the Kafka setting '%.64s' is given twice", key);
            return url_error(d, msg);
        }
    if (u->n_props == KQ_PROPS_MAX)
        return url_error(d, "more than 64 Kafka settings");
    u->keys[u->n_props] = strdup(key);
    u->vals[u->n_props] = strdup(val);
    if (!u->keys[u->n_props] || !u->vals[u->n_props]) {
        free(u->keys[u->n_props]);
        free(u->vals[u->n_props]);
        return url_error(d, "out of memory");
    }
    u->n_props++;
    return 0;
}

static int parse_query(kq_url *u, const char *q, cv_diag *d)
{
    while (*q) {
        size_t n = strcspn(q, "&"), k = strcspn(q, "=");
        if (k >= n)
            return url_error(d, "every parameter is KEY=VALUE");
        char *key = decode(q, k), *val = decode(q + k + 1, n - k - 1);
        int rc = key && val ? add_param(u, key, val, d)
                            : url_error(d, "a parameter is badly percent-encoded or too long");
        free(key);
        free(val);
        if (rc)
            return -1;
        q += n;
        if (*q == '&')
            q++;
    }
    return 0;
}

static char *printf_dup(const char *fmt, const char *arg)
{
    size_t n = strlen(fmt) + strlen(arg);
    char *s = malloc(n);
    if (s)
        snprintf(s, n, fmt, arg);
    return s;
}

int cv_kq_url_parse(const char *target, kq_url *u, cv_diag *d)
{
    memset(u, 0, sizeof *u);
    if (strncmp(target, "//", 2) != 0)
        return url_error(d, "expected kafka://HOST:PORT[,HOST:PORT...][?topic_prefix=NAME&...]");
    target += 2;
    size_t n = strcspn(target, "?");
    if (!all_of(target, n, ALNUM ".-_:[],") || strstr(target, ",,") || target[0] == ',' ||
        target[n - 1] == ',') {
        return url_error(d, "the broker list is HOST[:PORT] entries separated by commas");
    }
    u->brokers = strndup(target, n);
    if (!u->brokers)
        return url_error(d, "out of memory");
    if (target[n] == '?' && parse_query(u, target + n + 1, d)) {
        cv_kq_url_free(u);
        return -1;
    }
    if (!u->prefix[0])
        snprintf(u->prefix, sizeof u->prefix, "cuvil");
    if (!u->timeout_ms)
        u->timeout_ms = 30000;
    if (!u->group)
        u->group = printf_dup("%s.workers", u->prefix);
    if (!u->results_group)
        u->results_group = printf_dup("%s.controller", u->prefix);
    if (!u->group || !u->results_group) {
        cv_kq_url_free(u);
        return url_error(d, "out of memory");
    }
    return 0;
}

void cv_kq_instance_id(const char *worker_id, char out[KQ_INSTANCE_MAX + 1])
{
    size_t n = strlen(worker_id);
    if (n <= KQ_INSTANCE_MAX && all_of(worker_id, n, ALNUM "._-")) {
        memcpy(out, worker_id, n + 1);
        return;
    }
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)worker_id[i]) * 0x100000001b3ull;
    size_t keep = n < KQ_INSTANCE_MAX - 17 ? n : KQ_INSTANCE_MAX - 17;
    for (size_t i = 0; i < keep; i++)
        out[i] = strchr(ALNUM "._-", worker_id[i]) ? worker_id[i] : '_';
    snprintf(out + keep, KQ_INSTANCE_MAX + 1 - keep, "-%016llx", (unsigned long long)h);
}

void cv_kq_url_free(kq_url *u)
{
    free(u->brokers);
    free(u->group);
    free(u->results_group);
    for (int i = 0; i < u->n_props; i++) {
        free(u->keys[i]);
        free(u->vals[i]);
    }
    memset(u, 0, sizeof *u);
}

int cv_queue_kafka_config_add(const char *url, const char *kv, char **out, cv_diag *d)
{
    *out = NULL;
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!url || strncmp(url, "kafka://", 8) != 0 || !eq ||
        !all_of(kv, (size_t)(eq - kv), "abcdefghijklmnopqrstuvwxyz0123456789._") ||
        strlen(eq + 1) >= VALUE_MAX)
        return url_error(d, "--kafka-config takes KEY=VALUE (a librdkafka setting) and a "
                            "kafka:// queue URL");
    size_t n = strlen(url) + strlen(kv) * 3 + 2;
    char *s = malloc(n);
    if (!s)
        return url_error(d, "out of memory");
    int k = snprintf(s, n, "%s%c%.*s=", url, strchr(url, '?') ? '&' : '?', (int)(eq - kv), kv);
    for (const unsigned char *v = (const unsigned char *)eq + 1; *v; v++)
        k += strchr(ALNUM "-._~", *v) ? snprintf(s + k, n - (size_t)k, "%c", *v)
                                       : snprintf(s + k, n - (size_t)k, "%%%02X", *v);
    *out = s;
    return 0;
}

/* librdkafka's syslog levels onto ours.  Its warnings are mostly transient
 * (a request timed out, a broker reconnects), so they log as info. */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    cv_log_level l = level <= 2 ? CV_LOG_ERROR : level == 3 ? CV_LOG_WARN
                   : level <= 4 ? CV_LOG_INFO : level <= 6 ? CV_LOG_DEBUG : CV_LOG_TRACE;
    if (cv_log_enabled(l))
        cv_log_write(l, __FILE__, "kafka %s %s: %s", cv_rdkafka()->name(rk), fac, buf);
}

static int conf_set(rd_kafka_conf_t *c, const char *key, const char *val, cv_diag *d)
{
    char err[256];
    if (cv_rdkafka()->conf_set(c, key, val, err, sizeof err) == RD_KAFKA_CONF_OK)
        return 0;
    cv_diag_error(d, CV_E_KAFKA_BAD_CONFIG, (cv_span){0}, "Kafka setting '%.100s' rejected: %s", key, err);
    return -1;
}

rd_kafka_conf_t *cv_kq_conf_new(const kq_url *u, const char *const *defaults,
                                const char *const *fixed, cv_diag *d)
{
    if (!cv_rdkafka_load(d)) /* every Kafka client starts here */
        return NULL;
    rd_kafka_conf_t *c = cv_rdkafka()->conf_new();
    int rc = conf_set(c, "bootstrap.servers", u->brokers, d);
    if (rc == 0)
        rc = conf_set(c, "client.id", "cuvil", d);
    cv_rdkafka()->conf_set_log_cb(c, on_log);
    for (int i = 0; rc == 0 && defaults && defaults[i]; i += 2)
        rc = conf_set(c, defaults[i], defaults[i + 1], d);
    for (int i = 0; rc == 0 && i < u->n_props; i++)
        rc = conf_set(c, u->keys[i], u->vals[i], d);
    for (int i = 0; rc == 0 && fixed && fixed[i]; i += 2)
        rc = conf_set(c, fixed[i], fixed[i + 1], d);
    if (rc) {
        cv_rdkafka()->conf_destroy(c);
        return NULL;
    }
    return c;
}
