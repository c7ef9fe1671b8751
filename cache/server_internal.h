/* The cache server's parts: tokens (server_auth.c), metrics
 * (server_metrics.c) and the HTTP handling (server.c). */
#ifndef CV_CACHE_SERVER_INTERNAL_H
#define CV_CACHE_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "cache/cas.h"
#include "common/strbuf.h"
#include "common/tokens.h"

/* ---- metrics */

enum { SRV_KINDS = 4, SRV_METHODS = 4, SRV_STATUSES = 11, SRV_BUCKETS = 15 };

typedef enum cv_srv_kind { SRV_CAS, SRV_AC, SRV_ADMIN, SRV_OTHER } cv_srv_kind;
typedef enum cv_srv_method { SRV_GET, SRV_HEAD, SRV_PUT, SRV_METHOD_OTHER } cv_srv_method;

typedef struct cv_srv_metrics {
    atomic_uint_fast64_t requests[SRV_KINDS][SRV_METHODS][SRV_STATUSES];
    atomic_uint_fast64_t bytes_in[SRV_KINDS], bytes_out[SRV_KINDS];
    atomic_uint_fast64_t hits[SRV_KINDS], misses[SRV_KINDS];
    atomic_uint_fast64_t latency[SRV_METHODS][SRV_BUCKETS]; /* non-cumulative */
    atomic_uint_fast64_t latency_sum_us[SRV_METHODS];
    atomic_uint_fast64_t corrupt, bad_digest, evictions;
} cv_srv_metrics;

/* What /metrics and /status add from the store. */
typedef struct cv_srv_gauges {
    uint64_t bytes, entries, ac_entries, max_size;
    double uptime_s;
} cv_srv_gauges;

/* The server's daemon, so that a harness (fuzz/fuzz_cache_server.c) can
 * hand it a connection of raw bytes (MHD_add_connection) without a
 * listening socket in the way. */
struct MHD_Daemon *cv_cache_srv_daemon(const cv_cache_server *s);

void cv_cache_srv_metrics_record(cv_srv_metrics *m, cv_srv_kind kind, cv_srv_method method,
                                 int status, int64_t latency_us);
void cv_cache_srv_metrics_text(const cv_srv_metrics *m, const cv_srv_gauges *g, cv_sb *out);
void cv_cache_srv_status_json(const cv_srv_metrics *m, const cv_srv_gauges *g, const char *dir,
                              cv_sb *out);

#endif
