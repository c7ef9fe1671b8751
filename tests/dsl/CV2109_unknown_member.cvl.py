# Error corpus: CV2109_unknown_member. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2109 8:9 FunctionDef[m]>Assign>Subscript>Attribute[shpe]
# message: did you mean 'shape'?
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    n = x.shpe[0]
    return cvl.relu(x)
