/* Padding for batching (config: pad_dynamic_axes, pad_value): requests
 * whose inputs differ only on symbolic axes past the batch dimension (a
 * sequence length) run as one batch at the longest length, the shorter
 * ones filled with pad_value; each request's outputs are cut back to its
 * own lengths.  This is only right for a model whose outputs at the real
 * positions do not depend on the padded ones (position-wise along that
 * axis, or masked by the pad value); a softmax, a mean or unmasked
 * attention over the axis would mix the padding in.  The server cannot
 * tell, so it is off unless the model's config says so (docs/serve.md). */
#include "serve/serve_internal.h"

#include <string.h>

static bool is_expr(const cv_native *n, int64_t dim)
{
    return dim == -1 - cv_native_num_symbols(n);
}

int sv_pad_setup(sv_model *m, const cv_native *n, cv_diag *d)
{
    int ni = cv_native_num_inputs(n), no = cv_native_num_outputs(n);
    for (int i = 0; i < ni + no; i++) {
        cv_native_io io = i < ni ? cv_native_input(n, i) : cv_native_output(n, i - ni);
        int *sym = i < ni ? m->in_sym[i] : m->out_sym[i - ni];
        for (int k = 0; k < io.rank; k++) {
            sym[k] = io.dims[k] >= 0 || is_expr(n, io.dims[k]) ? -1 : (int)(-1 - io.dims[k]);
            if (k > 0 && i < ni && sym[k] >= 0 && sym[k] != m->in_sym[0][0])
                m->pads = m->cfg.pad && m->batchable;
            if (k > 0 && i >= ni && m->cfg.pad && is_expr(n, io.dims[k]))
                return cv_diag_fail(d, CV_E_SERVE_BAD_CONFIG, (cv_span){.file = m->dir},
                                    "model %s: pad_dynamic_axes needs every output dim to be "
                                    "a number or a symbol; output %s dim %d is an expression",
                                    m->name, io.name, k);
        }
    }
    return 0;
}

/* The value of symbol k in request r (from the first input that has it), -1 if none. */
static int64_t sym_value(const sv_model *m, const sv_req *r, int k)
{
    for (int i = 0; i < r->n_in; i++)
        for (int j = 1; j < r->in[i].rank; j++)
            if (m->in_sym[i][j] == k)
                return r->in[i].dims[j];
    return -1;
}

/* Whether each symbol has one value over r's inputs (the run would refuse it). */
static bool consistent(const sv_model *m, const sv_req *r)
{
    for (int i = 0; i < r->n_in; i++)
        for (int j = 1; j < r->in[i].rank; j++)
            if (m->in_sym[i][j] >= 0 && sym_value(m, r, m->in_sym[i][j]) != r->in[i].dims[j])
                return false;
    return true;
}

bool sv_pad_compatible(const sv_model *m, const sv_req *a, const sv_req *b)
{
    bool differ = false;
    for (int i = 0; i < a->n_in; i++) {
        if (a->in[i].rank != b->in[i].rank)
            return false;
        for (int k = 1; k < a->in[i].rank; k++)
            if (a->in[i].dims[k] != b->in[i].dims[k]) {
                if (!m->pads || m->in_sym[i][k] < 0)
                    return false;
                differ = true;
            }
    }
    return !differ || (consistent(m, a) && consistent(m, b));
}

bool sv_pad_shape(const sv_model *m, const sv_req *b, int i, int64_t rows, cv_tensor *t)
{
    *t = b->in[i];
    t->dims[0] = rows;
    bool padded = false;
    for (int k = 1; k < t->rank; k++)
        for (const sv_req *r = b; r; r = r->next) {
            if (r->in[i].dims[k] != t->dims[k])
                padded = true;
            if (r->in[i].dims[k] > t->dims[k])
                t->dims[k] = r->in[i].dims[k];
        }
    t->numel = 1;
    for (int k = 0; k < t->rank; k++)
        t->numel *= t->dims[k];
    (void)m;
    return padded;
}

void sv_pad_fill(const sv_model *m, cv_tensor *t)
{
    size_t es = cv_dtype_size(t->dtype);
    if (m->cfg.pad_value == 0) {
        memset(t->data, 0, (size_t)t->numel * es);
        return;
    }
    cv_dtype_store(t->dtype, t->data, 0, m->cfg.pad_value);
    for (int64_t i = 1; i < t->numel; i++)
        memcpy((char *)t->data + (size_t)i * es, t->data, es);
}

/* Copies between the block `small` (dims sd) and the tensor `big` (dims
 * bd) at [row0, 0, ...]: one contiguous run of the last dim at a time. */
static void block_copy(char *big, const int64_t *bd, char *small, const int64_t *sd, int rank,
                       size_t es, int64_t row0, bool to_big)
{
    int64_t idx[CV_MAX_RANK] = {0};
    size_t run = (size_t)(rank > 0 ? sd[rank - 1] : 1) * es;
    int64_t runs = 1;
    for (int k = 0; k + 1 < rank; k++)
        runs *= sd[k];
    for (int64_t n = 0; n < runs; n++) {
        int64_t off = 0;
        for (int k = 0; k + 1 < rank; k++)
            off = off * bd[k] + idx[k] + (k == 0 ? row0 : 0);
        if (rank > 1)
            off *= bd[rank - 1];
        else
            off = row0;
        char *b = big + (size_t)off * es, *s = small + (size_t)n * run;
        memcpy(to_big ? b : s, to_big ? s : b, run);
        for (int k = rank - 2; k >= 0 && ++idx[k] == sd[k]; k--)
            idx[k] = 0;
    }
}

void sv_pad_put(const sv_req *r, int i, cv_tensor *t, int64_t row0)
{
    block_copy(t->data, t->dims, r->in[i].data, r->in[i].dims, t->rank,
               cv_dtype_size(t->dtype), row0, true);
}

int sv_pad_cut(const sv_model *m, sv_pool *pool, sv_req *r, int o, const cv_tensor *t,
               int64_t row0)
{
    cv_tensor *dst = &r->out[o];
    *dst = *t;
    dst->dims[0] = r->rows;
    dst->numel = r->rows;
    for (int k = 1; k < t->rank; k++) {
        int64_t v = m->out_sym[o][k] >= 0 ? sym_value(m, r, m->out_sym[o][k]) : -1;
        dst->dims[k] = v >= 0 ? v : t->dims[k];
        if (dst->dims[k] > t->dims[k])
            return -1;
        dst->numel *= dst->dims[k];
    }
    size_t es = cv_dtype_size(t->dtype);
    if (!(dst->data = sv_pool_get(pool, (size_t)dst->numel * es)))
        return -1;
    block_copy(t->data, t->dims, dst->data, dst->dims, t->rank, es, row0, false);
    return 0;
}
