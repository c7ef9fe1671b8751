# Error corpus: CV4111_unsupported_expression. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4111 5:8 Assign>Dict
import cuvil as cvl

ACTS = {"relu": cvl.relu}

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return cvl.relu(x)
