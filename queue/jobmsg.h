/* Job and result messages: the only things the controller and the workers
 * exchange (through the queue).  JSON bodies, described for other tools by
 * schemas/job.schema.json and schemas/result.schema.json.
 *
 * Decoding is the trust boundary: every field is checked (type, bounds,
 * enum, digest form), unknown and missing fields are errors, and errors are
 * reported with codes CV1131-CV1139 and the JSON path of the bad field.
 * Encoding runs the same checks, so a message that encodes always decodes. */
#ifndef CV_JOBMSG_H
#define CV_JOBMSG_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/precision.h"

#define CV_MSG_MAX_BYTES   (1u << 20)  /* a whole encoded message */
#define CV_MSG_STR_MAX     4096        /* any string field outside diagnostics */
#define CV_MSG_ID_MAX      256         /* job ids: visible ASCII only */
#define CV_MSG_TOKEN_MAX   256         /* targets: [A-Za-z0-9._+,=:-] */
#define CV_MSG_DIAG_STR_MAX 65536      /* one diagnostic's message, path, file or note */
#define CV_MSG_DIAG_MAX    1000        /* diagnostics in one result */
#define CV_MSG_NOTES_MAX   64          /* notes in one diagnostic */
#define CV_MSG_ATTEMPT_MAX 100
#define CV_MSG_TIMING_MAX  INT64_C(1000000000000)  /* ms; ~31 years */
#define CV_DIGEST_HEX      64          /* lowercase hex sha256 */

typedef enum { CV_OPT_O0, CV_OPT_O1, CV_OPT_O2, CV_OPT_O3, CV_OPT_OS, CV_OPT__COUNT } cv_opt_level;

typedef enum {
    CV_RESULT_OK,       /* artifact built (or found) and stored */
    CV_RESULT_FAILED,   /* the model has errors: diagnostics say which */
    CV_RESULT_ICE,      /* the compiler crashed or reported an internal error */
    CV_RESULT_TIMEOUT,
    CV_RESULT_OOM,
    CV_RESULT_INFRA,    /* the farm failed (cache, fetch, queue dead letter) */
    CV_RESULT__COUNT
} cv_result_status;

typedef enum {
    CV_CACHE_NONE,        /* not looked up */
    CV_CACHE_MISS,
    CV_CACHE_HIT,         /* local cache */
    CV_CACHE_REMOTE_HIT,  /* remote cache */
    CV_CACHE__COUNT
} cv_cache_outcome;

typedef enum {
    CV_TIMING_QUEUED, CV_TIMING_FETCH, CV_TIMING_FRONTEND, CV_TIMING_PASSES,
    CV_TIMING_CODEGEN, CV_TIMING_UPLOAD, CV_TIMING__COUNT
} cv_timing;

/* Every string is owned by the message; cv_job_msg_free releases them. */
typedef struct cv_job_msg {
    char *job_id;       /* 1..CV_MSG_ID_MAX visible ASCII */
    char *revision;     /* e.g. "main@sha1:<commit>"; text, no control chars */
    char *pipeline;
    char *model_path;   /* relative to the repo root, no ".." component */
    char model_digest[CV_DIGEST_HEX + 1];
    char *target;       /* token, e.g. "x86_64-avx2" */
    cv_precision precision;
    cv_opt_level opt_level;
    char l2_key[CV_DIGEST_HEX + 1];
    int attempt;        /* 1-based */
    /* int8 calibration (optional field "calibration": {"data", "method"}):
     * a glob of .npy files relative to the repo root (no ".." component) and
     * "minmax", "percentile" or "entropy"; both NULL when absent. */
    char *calibration;
    char *calibration_method;
} cv_job_msg;

typedef struct cv_result_msg {
    char *job_id;                               /* owned */
    cv_result_status status;
    char artifact_manifest[CV_DIGEST_HEX + 1];  /* "" = none (JSON null); required when ok */
    cv_cache_outcome l1, l2;
    /* On an L2 miss, when the worker knows: why, as one word for counting
     * (compile's cv_build_miss_cause: a token) and in words.  Owned; NULL
     * when absent (results of older workers). */
    char *miss, *miss_reason;
    int64_t timings_ms[CV_TIMING__COUNT];
    cv_diag diags;                              /* owned; ids 1..n in order */
} cv_result_msg;

/* Encoders return 0 and a malloc'd NUL-terminated compact JSON text (the
 * caller frees it) of at most CV_MSG_MAX_BYTES.  A result whose diagnostics
 * would not fit is cut to the first diagnostics that do. */
int  cv_job_msg_encode(const cv_job_msg *m, char **out, size_t *len, cv_diag *d);
int  cv_result_msg_encode(const cv_result_msg *m, char **out, size_t *len, cv_diag *d);
/* Decoders fill *m (released with the matching _free even on failure).
 * `name` labels the message in diagnostics (span.file), may be NULL. */
int  cv_job_msg_decode(const void *buf, size_t len, const char *name, cv_job_msg *m, cv_diag *d);
int  cv_result_msg_decode(const void *buf, size_t len, const char *name, cv_result_msg *m,
                          cv_diag *d);
void cv_job_msg_free(cv_job_msg *m);
void cv_result_msg_init(cv_result_msg *m);
void cv_result_msg_free(cv_result_msg *m);
/* Deep copy of a job (dst is overwritten, not freed first). */
int  cv_job_msg_copy(cv_job_msg *dst, const cv_job_msg *src);

/* Names as they appear in messages; parse returns -1 for an unknown name
 * (precisions: common/precision.h). */
const char *cv_opt_level_name(cv_opt_level o);
const char *cv_result_status_name(cv_result_status s);
const char *cv_cache_outcome_name(cv_cache_outcome c);
const char *cv_timing_name(cv_timing t);
int cv_opt_level_parse(const char *s);
int cv_result_status_parse(const char *s);
int cv_cache_outcome_parse(const char *s);

/* The codec's key and enum lists, so that the JSON Schemas can be checked
 * against them (tests/unit/queue/test_queue_jobmsg.c). */
typedef enum {
    CV_MSGLIST_JOB_KEYS, CV_MSGLIST_RESULT_KEYS, CV_MSGLIST_CACHE_KEYS,
    CV_MSGLIST_TIMING_KEYS, CV_MSGLIST_DIAG_KEYS, CV_MSGLIST_PRECISIONS,
    CV_MSGLIST_OPT_LEVELS, CV_MSGLIST_STATUSES, CV_MSGLIST_CACHE_OUTCOMES,
    CV_MSGLIST_SEVERITIES, CV_MSGLIST_JOB_OPTIONAL_KEYS, CV_MSGLIST_CALIBRATION_KEYS,
    CV_MSGLIST_CALIBRATION_METHODS, CV_MSGLIST_CACHE_OPTIONAL_KEYS, CV_MSGLIST__COUNT
} cv_msg_list;
const char *const *cv_msg_list_get(cv_msg_list which, size_t *count);

#endif
