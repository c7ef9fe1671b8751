# Error corpus: CV1003_unterminated_string. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1003 7:43 Module>Token[string]
# expect: CV1206 7:11 Module>Bracket caused-by=1
# expect: CV1002 7:52 FunctionDef[m] caused-by=1
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)], dtype="float32)
def m(x):
    return cvl.relu(x)
