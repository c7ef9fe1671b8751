# Error corpus: CV3006_axis_out_of_range. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3006 7:12 FunctionDef[m]>Return>Call[cvl.softmax]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 10)])
def m(x):
    return cvl.softmax(x, axis=2)
