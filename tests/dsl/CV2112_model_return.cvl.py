# Error corpus: CV2112_model_return. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2112 8:5 FunctionDef[m]>Return
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    y = cvl.relu(x)
    return y.shape
