# Error corpus: CV2113_unknown_dtype. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2113 5:37 FunctionDef[m]>Call[cvl.model]>kw[dtype]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)], dtype="float33")
def m(x):
    return cvl.relu(x)
