# Error corpus: CV1206_unbalanced_bracket. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1206 8:17 Module>Bracket
# expect: CV1002 8:32 FunctionDef[m]>Assign caused-by=1
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    y = cvl.relu(cvl.sigmoid(x)
    return y
