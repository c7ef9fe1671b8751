/* Helpers shared by the controller's files (not part of its public face). */
#ifndef CV_CONTROLLER_INTERNAL_H
#define CV_CONTROLLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue/queue.h"

/* Codes used across files. */
enum {
    CV_E_SPEC_UNKNOWN_FIELD = 6001, CV_E_SPEC_TYPE = 6002, CV_E_SPEC_MISSING = 6003,
    CV_E_SPEC_API_VERSION = 6004, CV_E_SPEC_KIND = 6005, CV_E_SPEC_NAME = 6006,
    CV_E_SPEC_DUP_NAME = 6007, CV_E_SPEC_GLOB = 6008, CV_E_SPEC_TARGET = 6009,
    CV_E_SPEC_PRECISION = 6010, CV_E_SPEC_OPT = 6011, CV_E_SPEC_DURATION = 6012,
    CV_E_SPEC_SIZE = 6013, CV_E_SPEC_EXTENDS_MISSING = 6014, CV_E_SPEC_EXTENDS_CYCLE = 6015,
    CV_E_SPEC_URL = 6016, CV_E_SPEC_ENUM = 6017, CV_E_SPEC_DUP_ITEM = 6018,
    CV_E_SPEC_EMPTY_LIST = 6019, CV_E_SPEC_CLUSTERS = 6020, CV_E_SPEC_REF = 6021,
    CV_E_SPEC_STRING = 6022, CV_E_SPEC_RANGE = 6023, CV_E_SPEC_ADDRESS = 6024,
    CV_E_GIT_OPEN = 6050, CV_E_GIT_FETCH = 6051, CV_E_GIT_REF = 6052, CV_E_GIT_COMMIT = 6053,
    CV_E_GIT_READ = 6054, CV_E_GIT_BLOB_SIZE = 6055, CV_E_GIT_TREE_SIZE = 6056,
    CV_E_GIT_URL = 6057, CV_E_GIT_REVISION = 6058, CV_E_GIT_NOT_UTF8 = 6059,
    CV_E_GIT_PATH_LONG = 6060, CV_E_GIT_PATH_UNSAFE = 6061, CV_E_SPEC_TOTAL = 6062,
    CV_E_DB_OPEN = 6070, CV_E_DB_SCHEMA = 6071, CV_E_DB_STORAGE = 6072, CV_E_DB_BUSY = 6073,
    CV_E_DB_UNKNOWN_JOB = 6074, CV_E_DB_UNKNOWN_REV = 6075, CV_E_DB_AMBIGUOUS = 6076,
    CV_E_PLAN_NO_PIPELINES = 6090, CV_E_PLAN_NO_MATCH = 6091, CV_E_PLAN_NOT_MODEL = 6092,
    CV_E_PLAN_TOO_MANY = 6093, CV_E_PLAN_READ = 6094, CV_E_PLAN_LOOKUP = 6095,
    CV_E_PLAN_NO_SPECS = 6099,
    CV_W_CLUSTER_REMOTE = 6160, CV_W_CLUSTER_OPERATOR_ONLY = 6161, CV_W_CLUSTER_LIMIT = 6162,
    CV_E_FARM_REMOTE_ARG = 6163, CV_E_FARM_KEYS = 6164,
    CV_E_OOM = 9002,
};

/* The candidate closest to word by edit distance, if close enough to be a
 * plausible typo (at most a third of the word's length, at least 1); NULL
 * otherwise.  candidates is NULL-terminated. */
const char *cv_ctl_suggest(const char *word, const char *const *candidates);

int64_t cv_ctl_now_ms(cv_queue_clock_fn fn, void *ctx);
/* Lowercase hex SHA-256 of data. */
void cv_ctl_sha256_hex(const void *data, size_t len, char out[65]);
/* A DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
bool cv_ctl_is_dns_label(const char *s);
/* A git ref name as git check-ref-format --allow-onelevel accepts it
 * (without the @{ and multi-byte rules, which it refuses outright). */
bool cv_ctl_is_ref_name(const char *s);
/* Whether s holds only printable ASCII or UTF-8 without control characters. */
bool cv_ctl_is_clean_text(const char *s);
/* Whether the n bytes at s are well-formed UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF). */
bool cv_ctl_is_utf8(const char *s, size_t n);
/* s for a message: bytes that are not printable UTF-8 as \xNN, at most
 * max bytes of s (then "..."); out holds at least 4 * max + 4 bytes. */
void cv_ctl_printable(const char *s, size_t max, char *out);

#endif
