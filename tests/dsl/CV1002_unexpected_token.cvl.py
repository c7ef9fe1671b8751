# Error corpus: CV1002_unexpected_token. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1002 7:21 FunctionDef[m]>Assign
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    y = cvl.relu(x) cvl.sigmoid(x)
    return y
