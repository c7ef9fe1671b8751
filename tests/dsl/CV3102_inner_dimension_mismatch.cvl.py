# Error corpus: CV3102_inner_dimension_mismatch. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3102 7:12 FunctionDef[m]>Return>BinOp[@]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4), (5, 2)])
def m(x, w):
    return x @ w
