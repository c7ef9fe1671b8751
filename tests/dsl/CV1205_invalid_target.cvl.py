# Error corpus: CV1205_invalid_target. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1205 7:5 FunctionDef[m]>Assign
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    cvl.relu(x) = x
    return x
