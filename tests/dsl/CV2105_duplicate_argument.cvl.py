# Error corpus: CV2105_duplicate_argument. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2105 10:26 FunctionDef[m]>Return>Call[scale]>kw[factor]
import cuvil as cvl

def scale(x, factor=2.0):
    return x * factor

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return scale(x, 3.0, factor=4.0)
