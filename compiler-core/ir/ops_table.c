/* The op table: joins the family fragments and answers look-ups by name. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compiler-core/ir/ops_internal.h"

static const cv_op_family *const families[] = {
    &cv_ops_elementwise, &cv_ops_reduce, &cv_ops_nn, &cv_ops_matmul, &cv_ops_pool,
    &cv_ops_resize, &cv_ops_shape, &cv_ops_layout,
    &cv_ops_activation, &cv_ops_norm, &cv_ops_quant, &cv_ops_math, &cv_ops_attention,
    &cv_ops_rnn,
};

static const cv_op_def *all_defs[256];
static int n_all;
static const cv_op_def *by_id[CV_OP_ID__COUNT];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static const cv_op_def *find(const char *name)
{
    int lo = 0, hi = n_all;
    while (lo < hi) {
        int mid = (lo + hi) / 2, c = strcmp(all_defs[mid]->name, name);
        if (c == 0)
            return all_defs[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const cv_op_def *const *)a)->name, (*(const cv_op_def *const *)b)->name);
}

/* Sorted by name: cv_op_new looks every op up, so 10,000-op modules pay
 * a binary search per op rather than a scan of the table. */
static void build_index(void)
{
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int i = 0; i < families[f]->count && n < 256; i++)
            all_defs[n++] = &families[f]->defs[i];
    qsort(all_defs, (size_t)n, sizeof all_defs[0], by_name);
    n_all = n;
#define CV_OP_ID_FIND_(id, name) by_id[id] = find(name);
    CV_OP_IDS(CV_OP_ID_FIND_)
#undef CV_OP_ID_FIND_
}

const cv_op_def *cv_op_def_of(cv_op_id id)
{
    pthread_once(&index_once, build_index);
    return (unsigned)id < CV_OP_ID__COUNT ? by_id[id] : NULL;
}

bool cv_op_is(const cv_op *op, cv_op_id id)
{
    return op && op->def && op->def == cv_op_def_of(id);
}

bool cv_value_is(const cv_value *v, cv_op_id id)
{
    return v && v->kind == CV_VAL_RESULT && cv_op_is(v->def, id);
}

int cv_op_def_count(void)
{
    pthread_once(&index_once, build_index);
    return n_all;
}

const cv_op_def *cv_op_def_at(int i)
{
    pthread_once(&index_once, build_index);
    return (i >= 0 && i < n_all) ? all_defs[i] : NULL;
}

const cv_op_def *cv_op_def_lookup(const char *name)
{
    pthread_once(&index_once, build_index);
    return find(name);
}

const cv_attr_schema *cv_op_def_attr(const cv_op_def *def, const char *name, int *index)
{
    if (!def || !def->attrs)
        return NULL;
    for (int i = 0; def->attrs[i].name; i++)
        if (strcmp(def->attrs[i].name, name) == 0) {
            if (index)
                *index = i;
            return &def->attrs[i];
        }
    return NULL;
}
