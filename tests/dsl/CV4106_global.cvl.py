# Error corpus: CV4106_global. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4106 9:5 FunctionDef[m]>Global
import cuvil as cvl

COUNT = 0

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    global COUNT
    return cvl.relu(x)
