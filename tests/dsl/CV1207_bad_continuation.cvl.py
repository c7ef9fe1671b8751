# Error corpus: CV1207_bad_continuation. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1207 7:23 Module>Token
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    y = cvl.relu(x) + \ cvl.sigmoid(x)
    return y
