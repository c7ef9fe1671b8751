# Error corpus: CV2111_model_spec. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2111 5:12 FunctionDef[m]>Call[cvl.model]>kw[input_shapes]
import cuvil as cvl

@cvl.model(input_shapes=[("N", -4)])
def m(x):
    return cvl.relu(x)
