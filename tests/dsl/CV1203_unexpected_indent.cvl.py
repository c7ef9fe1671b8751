# Error corpus: CV1203_unexpected_indent. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1203 8:9 FunctionDef[m]>Assign
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    y = cvl.relu(x)
        z = cvl.sigmoid(y)
    return y
