/* librdkafka, loaded when a Kafka queue is first opened (common/lazylib.h):
 * it pulls in OpenSSL's libssl, SASL and Kerberos, whose load time every
 * cuvil process paid although only farms on Kafka use them.  The table
 * holds the functions the Kafka queue calls. */
#ifndef CV_COMMON_KAFKALIB_H
#define CV_COMMON_KAFKALIB_H

#include <librdkafka/rdkafka.h>

#include "common/diag.h"

typedef struct cv_rdkafka_fns {
    __typeof__(rd_kafka_assign) *assign;
    __typeof__(rd_kafka_commit) *commit;
    __typeof__(rd_kafka_committed) *committed;
    __typeof__(rd_kafka_conf_destroy) *conf_destroy;
    __typeof__(rd_kafka_conf_new) *conf_new;
    __typeof__(rd_kafka_conf_set) *conf_set;
    __typeof__(rd_kafka_conf_set_dr_msg_cb) *conf_set_dr_msg_cb;
    __typeof__(rd_kafka_conf_set_log_cb) *conf_set_log_cb;
    __typeof__(rd_kafka_conf_set_opaque) *conf_set_opaque;
    __typeof__(rd_kafka_conf_set_rebalance_cb) *conf_set_rebalance_cb;
    __typeof__(rd_kafka_consumer_close) *consumer_close;
    __typeof__(rd_kafka_consumer_poll) *consumer_poll;
    __typeof__(rd_kafka_destroy) *destroy;
    __typeof__(rd_kafka_err2name) *err2name;
    __typeof__(rd_kafka_err2str) *err2str;
    __typeof__(rd_kafka_error_destroy) *error_destroy;
    __typeof__(rd_kafka_error_string) *error_string;
    __typeof__(rd_kafka_fatal_error) *fatal_error;
    __typeof__(rd_kafka_flush) *flush;
    __typeof__(rd_kafka_header_add) *header_add;
    __typeof__(rd_kafka_header_get_last) *header_get_last;
    __typeof__(rd_kafka_header_remove) *header_remove;
    __typeof__(rd_kafka_headers_destroy) *headers_destroy;
    __typeof__(rd_kafka_headers_new) *headers_new;
    __typeof__(rd_kafka_incremental_assign) *incremental_assign;
    __typeof__(rd_kafka_incremental_unassign) *incremental_unassign;
    __typeof__(rd_kafka_last_error) *last_error;
    __typeof__(rd_kafka_message_destroy) *message_destroy;
    __typeof__(rd_kafka_message_headers) *message_headers;
    __typeof__(rd_kafka_message_timestamp) *message_timestamp;
    __typeof__(rd_kafka_metadata) *metadata;
    __typeof__(rd_kafka_metadata_destroy) *metadata_destroy;
    __typeof__(rd_kafka_name) *name;
    __typeof__(rd_kafka_new) *new;
    __typeof__(rd_kafka_offsets_store) *offsets_store;
    __typeof__(rd_kafka_pause_partitions) *pause_partitions;
    __typeof__(rd_kafka_poll) *poll;
    __typeof__(rd_kafka_poll_set_consumer) *poll_set_consumer;
    __typeof__(rd_kafka_producev) *producev;
    __typeof__(rd_kafka_query_watermark_offsets) *query_watermark_offsets;
    __typeof__(rd_kafka_rebalance_protocol) *rebalance_protocol;
    __typeof__(rd_kafka_resume_partitions) *resume_partitions;
    __typeof__(rd_kafka_seek_partitions) *seek_partitions;
    __typeof__(rd_kafka_subscribe) *subscribe;
    __typeof__(rd_kafka_topic_destroy) *topic_destroy;
    __typeof__(rd_kafka_topic_new) *topic_new;
    __typeof__(rd_kafka_topic_partition_list_add) *topic_partition_list_add;
    __typeof__(rd_kafka_topic_partition_list_destroy) *topic_partition_list_destroy;
    __typeof__(rd_kafka_topic_partition_list_new) *topic_partition_list_new;
} cv_rdkafka_fns;

/* Loads librdkafka (once per process); NULL with an error in d when it
 * cannot be loaded.  cv_rdkafka() is the table once that succeeded. */
const cv_rdkafka_fns *cv_rdkafka_load(cv_diag *d);
const cv_rdkafka_fns *cv_rdkafka(void);

/* rdkafka.h's inline rd_kafka_message_errstr, through the table. */
const char *cv_rdkafka_message_errstr(const rd_kafka_message_t *m);

#endif
