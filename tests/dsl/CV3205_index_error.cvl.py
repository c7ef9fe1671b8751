# Error corpus: CV3205_index_error. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3205 7:17 FunctionDef[m]>Return>Subscript>Tuple>Constant
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 8, 8)])
def m(x):
    return x[:, 3]
