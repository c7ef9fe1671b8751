# Error corpus: CV1209_duplicate_parameter. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1209 5:17 FunctionDef[block]
import cuvil as cvl

def block(x, w, x):
    return x

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return cvl.relu(x)
