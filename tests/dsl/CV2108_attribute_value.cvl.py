# Error corpus: CV2108_attribute_value. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2108 7:27 FunctionDef[m]>Return>Call[cvl.softmax]>kw[axis]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 10)])
def m(x):
    return cvl.softmax(x, axis="last")
