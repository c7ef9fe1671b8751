/* The graph rewrites in order: constants first (so that later passes see
 * folded weights), batch norms into their producers, then merging of equal
 * ops and params, attention chains, LayerNorms, GELUs and swishes into one
 * op each,
 * and finally removal of whatever none of it uses. */
#include "compiler-core/passes/passes.h"

int cv_passes_run(cv_func *f, cv_pass_stats *st, cv_diag *d)
{
    *st = (cv_pass_stats){.ops_before = f->n_ops};
    int qdq;
    int rc = cv_pass_qdq(f, &qdq, d);   /* before folding turns QDQ weights into f32 */
    if (rc == 0)
        rc = cv_pass_const_fold(f, st, d);
    if (rc == 0)
        rc = cv_pass_bn_fold(f, st, d);
    if (rc == 0)
        rc = cv_pass_cse(f, st, d);
    if (rc == 0)
        rc = cv_pass_attention_fuse(f, &st->attention_fused, d);
    if (rc == 0)
        rc = cv_pass_norm_fuse(f, &st->layer_norms_fused, &st->gelus_fused, &st->swishes_fused,
                               d);
    /* dce also tidies after a failed pass: every pass leaves f valid. */
    if (cv_pass_dce(f, st) && rc == 0) {
        cv_diag_error(d, CV_E_OUT_OF_MEMORY, f->span, "out of memory removing dead code");
        rc = -1;
    }
    st->ops_after = f->n_ops;
    return rc;
}
