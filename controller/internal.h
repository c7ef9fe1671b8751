/* Helpers shared by the controller's files (not part of its public face). */
#ifndef CV_CONTROLLER_INTERNAL_H
#define CV_CONTROLLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strutil.h"
#include "queue/queue.h"

int64_t cv_ctl_now_ms(cv_queue_clock_fn fn, void *ctx);
/* Lowercase hex SHA-256 of data. */
void cv_ctl_sha256_hex(const void *data, size_t len, char out[65]);

#endif
