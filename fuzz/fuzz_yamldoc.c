/* libFuzzer target: YAML -> JSON with positions on arbitrary bytes.  Every
 * member and item of an accepted document must have a position inside the
 * input, and every error must carry a line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/yamldoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_span(cv_span s)
{
    if (s.line < 1 || s.col < 1 || s.end_line < s.line)
        abort();
}

static void check_node(const cv_yaml_doc *doc, const json_t *node)
{
    cv_span s;
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(node)) {
        json_object_foreach((json_t *)node, key, child) {
            cv_span k;
            if (cv_yaml_member_span(doc, node, key, &k, &s) != 0)
                abort();
            check_span(k);
            check_span(s);
            check_node(doc, child);
        }
    } else if (json_is_array(node)) {
        json_array_foreach(node, i, child) {
            if (cv_yaml_item_span(doc, node, i, &s) != 0)
                abort();
            check_span(s);
            check_node(doc, child);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cv_diag d;
    cv_diag_init(&d);
    cv_yaml_doc *docs;
    int n;
    if (cv_yaml_load((const char *)data, size, "fuzz.yaml", &docs, &n, &d) == 0) {
        for (int k = 0; k < n; k++) {
            if (!docs[k].root)
                abort();
            check_node(&docs[k], docs[k].root);
        }
        cv_yaml_free(docs, n);
    } else if (d.n == 0 || docs || (d.v[0].code != 1011 && d.v[0].span.line < 1)) {
        abort();
    }
    cv_diag_free(&d);
    return 0;
}
