# Error corpus: CV4113_too_large. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4113 7:14 FunctionDef[m]>For>Call[range]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    for i in range(100000):
        x = cvl.relu(x)
    return x
