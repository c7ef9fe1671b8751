# Error corpus: CV1208_argument_order. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1208 7:33 FunctionDef[m]>Return
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return cvl.softmax(axis=-1, x)
