/* kafka-mock: a Kafka cluster for tests, from librdkafka's mock cluster.
 *
 *   kafka-mock [--brokers N] [--partitions N] [--exit-on-stdin-eof] PREFIX...
 *
 * Starts N brokers (default 3) on 127.0.0.1, creates for every PREFIX the
 * topics the Kafka queue backend uses (PREFIX.jobs with --partitions
 * partitions, default 6; PREFIX.results and PREFIX.dlq with one), prints the
 * bootstrap address on one line of stdout and serves other processes until
 * SIGTERM or SIGINT.  With --exit-on-stdin-eof it also stops when its stdin
 * closes, so a test that dies never leaves a cluster behind.
 *
 * The mock speaks the real protocol (consumer groups, idempotent producers)
 * but does not honour read-committed isolation for aborted transactions.
 * Built only for tests: $(BUILD)/tools/kafka-mock. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PREFIX_MAX 200

static int usage(void)
{
    fprintf(stderr, "usage: kafka-mock [--brokers N] [--partitions N] [--exit-on-stdin-eof] "
                    "PREFIX...\n");
    return 2;
}

static int parse_count(const char *s, int max)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v >= 1 && v <= max ? (int)v : -1;
}

static int create_topics(rd_kafka_mock_cluster_t *mc, const char *prefix, int partitions,
                         int replicas)
{
    static const char *const suffix[] = {"jobs", "results", "dlq"};
    for (int i = 0; i < 3; i++) {
        char topic[PREFIX_MAX + 16];
        snprintf(topic, sizeof topic, "%s.%s", prefix, suffix[i]);
        rd_kafka_resp_err_t err =
            rd_kafka_mock_topic_create(mc, topic, i == 0 ? partitions : 1, replicas);
        if (err) {
            fprintf(stderr, "kafka-mock: cannot create %s: %s\n", topic, rd_kafka_err2str(err));
            return -1;
        }
    }
    return 0;
}

static int stdin_closed(void)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    char buf[256];
    return read(0, buf, sizeof buf) <= 0;
}

int main(int argc, char **argv)
{
    int brokers = 3, partitions = 6, watch_stdin = 0, first = 1;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
        if (strcmp(argv[first], "--exit-on-stdin-eof") == 0)
            watch_stdin = 1;
        else if (first + 1 < argc && strcmp(argv[first], "--brokers") == 0)
            brokers = parse_count(argv[++first], 16);
        else if (first + 1 < argc && strcmp(argv[first], "--partitions") == 0)
            partitions = parse_count(argv[++first], 1000);
        else
            return usage();
    }
    if (brokers < 0 || partitions < 0)
        return usage();
    for (int i = first; i < argc; i++)
        if (!argv[i][0] || strlen(argv[i]) > PREFIX_MAX)
            return usage();

    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);   /* before librdkafka starts threads */

    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "kafka-mock: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
    int rc = mc ? 0 : 1;
    if (!mc)
        fprintf(stderr, "kafka-mock: cannot start the mock cluster\n");
    for (int i = first; rc == 0 && i < argc; i++)
        rc = create_topics(mc, argv[i], partitions, brokers < 3 ? brokers : 3);
    if (rc == 0) {
        printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
        fflush(stdout);
        const struct timespec tick = {0, 200 * 1000000L};
        while (sigtimedwait(&stop, NULL, &tick) < 0 && !(watch_stdin && stdin_closed()))
            ;
    }
    if (mc)
        rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return rc;
}
