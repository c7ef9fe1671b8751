/* Loading librdkafka on first use (see kafkalib.h). */
#include "queue/kafkalib.h"

#include <assert.h>
#include <stddef.h>

#include "common/lazylib.h"

static cv_rdkafka_fns rdkafka_fns;
static const char *const rdkafka_names[] = {
    "rd_kafka_assign",
    "rd_kafka_commit",
    "rd_kafka_committed",
    "rd_kafka_conf_destroy",
    "rd_kafka_conf_new",
    "rd_kafka_conf_set",
    "rd_kafka_conf_set_dr_msg_cb",
    "rd_kafka_conf_set_log_cb",
    "rd_kafka_conf_set_opaque",
    "rd_kafka_conf_set_rebalance_cb",
    "rd_kafka_consumer_close",
    "rd_kafka_consumer_poll",
    "rd_kafka_destroy",
    "rd_kafka_err2name",
    "rd_kafka_err2str",
    "rd_kafka_error_destroy",
    "rd_kafka_error_string",
    "rd_kafka_fatal_error",
    "rd_kafka_flush",
    "rd_kafka_header_add",
    "rd_kafka_header_get_last",
    "rd_kafka_header_remove",
    "rd_kafka_headers_destroy",
    "rd_kafka_headers_new",
    "rd_kafka_incremental_assign",
    "rd_kafka_incremental_unassign",
    "rd_kafka_last_error",
    "rd_kafka_message_destroy",
    "rd_kafka_message_headers",
    "rd_kafka_message_timestamp",
    "rd_kafka_metadata",
    "rd_kafka_metadata_destroy",
    "rd_kafka_name",
    "rd_kafka_new",
    "rd_kafka_offsets_store",
    "rd_kafka_pause_partitions",
    "rd_kafka_poll",
    "rd_kafka_poll_set_consumer",
    "rd_kafka_producev",
    "rd_kafka_query_watermark_offsets",
    "rd_kafka_rebalance_protocol",
    "rd_kafka_resume_partitions",
    "rd_kafka_seek_partitions",
    "rd_kafka_subscribe",
    "rd_kafka_topic_destroy",
    "rd_kafka_topic_new",
    "rd_kafka_topic_partition_list_add",
    "rd_kafka_topic_partition_list_destroy",
    "rd_kafka_topic_partition_list_new",
};
CV_LAZYLIB_CHECK(rdkafka_fns, rdkafka_names);
static cv_lazylib rdkafka_lib = CV_LAZYLIB("librdkafka.so.1", rdkafka_fns, rdkafka_names, NULL);
static void load_rdkafka(void) { cv_lazylib_load(&rdkafka_lib); }

const cv_rdkafka_fns *cv_rdkafka_load(cv_diag *d)
{
    return cv_lazylib_get(&rdkafka_lib, load_rdkafka, d) ? &rdkafka_fns : NULL;
}

const cv_rdkafka_fns *cv_rdkafka(void)
{
    assert(rdkafka_lib.ok); /* every path in starts by opening a queue or client */
    return &rdkafka_fns;
}

const char *cv_rdkafka_message_errstr(const rd_kafka_message_t *m)
{
    if (!m->err)
        return NULL;
    if (m->payload)
        return (const char *)m->payload;
    return cv_rdkafka()->err2str(m->err);
}
