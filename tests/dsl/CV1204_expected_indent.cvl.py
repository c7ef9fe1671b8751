# Error corpus: CV1204_expected_indent. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1204 8:5 FunctionDef[m]>For
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    for i in range(2):
    x = cvl.relu(x)
    return x
