# Error corpus: CV1001_invalid_character. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1001 8:24 Module>Token
# expect: CV1002 8:26 FunctionDef[m]>Return caused-by=1
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return cvl.relu(x) $ 2
